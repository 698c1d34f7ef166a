/* Helpers of the master's tests (test_master.c, test_master_members.c): masters in process and as
 * processes, fake workers under leases of the test's own, the control handler's and dmctl's
 * answers. Each suite's tm_init/tm_clean make and remove tm_dir and fill tm_eps. */
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

extern char tm_dir[128]; /* the suite's folder */
extern char tm_eps[256]; /* the fixture's endpoints */

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
/* A master in this process (no forwarder: a follower answers DM_ERR_CLUSTER_NOT_LEADER). */
dmh_master *tm_start(const char *name, const char *prefix);
int64_t tm_wait_token(dmh_master *m, long ms);

typedef struct fake_worker {
  const char *name;
  int64_t lease;
} fake_worker;
/* w's registration under a lease of its own (TTL_S), keeping `relay`'s relay ("" none). */
void tm_worker_up(dmh_etcd *c, const char *prefix, fake_worker *w, const char *relay);
/* The source bound to worker w ("" none). */
void tm_bound(dmh_etcd *c, const char *prefix, const char *w, char *src, size_t size);
bool tm_wait_bound(dmh_etcd *c, const char *prefix, const char *w, const char *want, long ms);
/* dmh_master_handle of {"cmd", "args": <args JSON>}; the answer (caller frees). */
json_object *tm_cmd(dmh_master *m, const char *cmd, const char *args_fmt, ...)
    __attribute__((format(printf, 3, 4)));
const char *tm_text(json_object *r);
bool tm_ok(json_object *r);
/* The answer's error code, 0 without one. */
int64_t tm_code(json_object *r);
/* <tm_dir>/ID.cfg: a source file of id ID. */
void tm_source_file(const char *id);
/* Does the process's /metrics show `sample` (name{labels} value) within ms? */
bool tm_wait_metric(const char *sample, int64_t ms);
/* dmctl --master-addr 127.0.0.1:PORT ARGS; its parsed answer in *out (caller frees). Its exit
 * status. */
int tm_dmctl(json_object **out, int port, const char *args);
/* `method` on the HTTP API's `path` of the master on `port` (body NULL: none): the parsed answer
 * (NULL when not JSON), *status. */
json_object *tm_api(int port, const char *method, const char *path, const char *body, long *status);

/* master_dm_api.c: DM's objects on the masters m (leader) and f (follower), in test_scheduling's
 * state: api-objects, cluster-info, task-template. */
void tm_api_objects(dmh_master *m, dmh_master *f);
void tm_cluster_info(dmh_etcd *c, const char *prefix, dmh_master *m, dmh_master *f);
/* master_source_ops.c: operate-source update|disable|enable on m (leader) and f (follower), in
 * test_scheduling's state (t1 Running on src-a and src-b); leaves it as it found it. */
void tm_source_ops(dmh_etcd *c, const char *prefix, dmh_master *m, dmh_master *f);
void tm_templates(dmh_etcd *c, const char *prefix, dmh_master *m, dmh_master *f);

#endif
