/* Shared by the master suites (test_master.c, test_master_leader.c; test_master_util.c): master
 * processes and in-process masters on the fixture's etcd, their answers, dmctl --master-addr. The
 * suite's target defines DMHOST_BIN and DMCTL_BIN. */
#ifndef TEST_MASTER_UTIL_H
#define TEST_MASTER_UTIL_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "master.h"
#include "test_etcd.h"

#define TTL_S 10
/* Control ports of the master processes: next to the fixture's etcd ports (DMH_ETCD_PORT_BASE), so
 * runs with clusters of their own never collide. */
#define TM_PORT(i) (te_port(0) + 11 + (i))

/* The suite's folder (tm_init) and the fixture's endpoints. */
extern char tm_dir[128];
extern char tm_eps[256];

/* The suite's init and clean (dmh_cunit_run): the folder made and removed. */
int tm_init(void);
int tm_clean(void);
void tm_sleep_ms(long ms);
/* A cluster prefix of this run and test. */
void tm_prefix(char *buf, size_t size, const char *test);
/* The leader key's value (name) and create_revision; "" and 0 when absent. */
int64_t tm_leader(dmh_etcd *c, const char *prefix, char *name, size_t size);
/* Waits (up to ms) for a leader other than `not` (NULL: any); its token, 0 on timeout. */
int64_t tm_wait_leader(dmh_etcd *c, const char *prefix, const char * not, char *name, size_t size,
                       long ms);
/* `dmhost master --name NAME` as a child process, its output in <dir>/NAME.log. */
pid_t tm_spawn(const char *name, const char *prefix, int port);
/* An in-process master (asserted started). */
dmh_master *tm_start(const char *name, const char *prefix);
/* Waits (up to ms) for m to lead; its token, 0 on timeout. */
int64_t tm_wait_token(dmh_master *m, long ms);
/* dmh_master_handle of {"cmd", "args": <args JSON>}; the answer (caller frees). */
json_object *tm_cmd(dmh_master *m, const char *cmd, const char *args_fmt, ...)
    __attribute__((format(printf, 3, 4)));
const char *tm_text(json_object *r);
/* The answer's result (printed when false). */
bool tm_ok(json_object *r);
/* The answer's error code, 0 without one. */
int64_t tm_code(json_object *r);
/* dmctl --master-addr 127.0.0.1:PORT ARGS; its parsed answer in *out (caller frees). Its exit
 * status. */
int tm_dmctl(json_object **out, int port, const char *args);

#endif
