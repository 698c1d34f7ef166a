/*
 * Helpers for the relay tests: a temp folder with a source file whose relay writes into it, a
 * write workload on the source, waiting for the relay to reach the source's position, and the
 * byte-for-byte comparison of relay files with the source's binlog files.
 */
#ifndef RELAY_TEST_UTIL_H
#define RELAY_TEST_UTIL_H

#include <mysql.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "dmhost/position.h"
#include "supervisor.h"

typedef struct rt_env {
  char dir[256];       /* temp folder */
  char relay_dir[300]; /* <dir>/relay */
  char work[300];      /* <dir>/work */
  char source_cfg[300];
  char name[64]; /* source-id and database name */
  dmh_source_config *source;
  pid_t driver; /* relay_driver child, 0 if none */
} rt_env;

/* Temp folder and source file: source-id `name`, relay = { <relay_section> }. */
int rt_setup(rt_env *e, const char *name, const char *relay_section);
/* The same, the source reached at 127.0.0.1:`port` (0: the test source's own port, e.g. a proxy
 * in front of it) and `top` (may be NULL) added at the top level of the source file. */
int rt_setup_ex(rt_env *e, const char *name, const char *relay_section, unsigned port,
                const char *top);
void rt_teardown(rt_env *e);

/* A relay subtask in this process (started). */
dmh_subtask *rt_relay_start(rt_env *e);

/* The relay_driver process: start / kill -9 / SIGTERM and wait. */
int rt_driver_start(rt_env *e);
void rt_driver_kill9(rt_env *e);
int rt_driver_stop(rt_env *e);

/* Writes `n` transactions into database e->name (table t, created if missing): inserts of
 * various sizes, updates, deletes, and a DDL now and then. */
int rt_workload(MYSQL *c, const char *db, int n, int seed);

/* The source's current position (SHOW MASTER STATUS). */
int rt_master_pos(MYSQL *c, dm_position *out);

/* relay.meta of the newest sub-folder; 0 when read. */
int rt_relay_meta(rt_env *e, char *subdir, size_t sublen, dm_position *out);

/* Wait until relay.meta reaches target (file and offset), up to timeout_ms. */
int rt_wait_relay(rt_env *e, const dm_position *target, int timeout_ms);

/*
 * Compare every relay file of the newest sub-folder with the source's file of the same name:
 * whole files for all but the one relay.meta names, that one up to relay.meta's position (its
 * in-use flag byte excluded). Returns the number of files compared, -1 on a difference (printed).
 * *bytes gets the bytes compared.
 */
int rt_compare(rt_env *e, uint64_t *bytes);

/*
 * The same for sub-folder `subdir` (NULL: the newest) against its own relay.meta. A file started
 * mid-file (after an upstream switch or a GTID start: magic, format description, then an
 * ignorable filler as long as the hole) is compared from the filler's end, where the source's
 * bytes begin at the same offsets; *mid_file (if not NULL) counts such files.
 */
int rt_compare_sub(rt_env *e, const char *subdir, uint64_t *bytes, int *mid_file);

/* The sub-folders listed in server-uuid.index, oldest first (up to max); -1 without an index. */
int rt_relay_index(rt_env *e, char subs[][256], int max);

/* Source datadir (binlog files). */
const char *rt_source_binlog_dir(void);

#endif /* RELAY_TEST_UTIL_H */
