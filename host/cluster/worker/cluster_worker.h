/*
 * `dmhost worker`: one worker of the cluster (docs/cluster.md, "Roles: worker"). The registry of
 * `dmhost serve` (registry.h) runs the source, its relay and the subtasks; this room keeps it in
 * line with what the leader wrote in etcd (cluster_keys.h):
 *
 *   cmd/cmd_worker.c       the command: options, the lease (reused after a restart within its TTL),
 *                          the registration, the main loop, SIGTERM
 *   cluster_worker_sync.c  the reconcile (binding, source, expected stages), the fence thread
 *                          (pause everything once the lease's last renewal is TTL - margin old),
 *                          the watch thread and the status publication
 *   cluster_worker_start.c start-task's one-shot options (remove-meta, start-time's position)
 *
 * Threads: main (signals, reconcile, status, lease replacement), two watches (mark `dirty` when
 * the worker's binding or an expected stage changes), fence (polls the keeper's age every 100 ms),
 * and the keeper's own. `ops_lock` serializes every registry command that changes a task's stage
 * between the reconcile and the fence thread, so a resume can never slip in after the fence paused:
 * the reconcile does its etcd reads first, then takes ops_lock, checks `fenced`, and only then
 * calls the registry.
 */
#ifndef DMH_CLUSTER_WORKER_H
#define DMH_CLUSTER_WORKER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "cluster_keys.h"
#include "cluster_security.h"
#include "dmhost/host.h"
#include "etcd.h"
#include "registry.h"
#include "shard_coord.h"
#include "trust_flags.h"

int dmh_cluster_worker_main(int argc, char **argv);

/* ---- Internal to host/cluster/worker/cluster_worker*.c and host/cmd/cmd_worker.c ---- */

/* Pause the subtasks once the last renewal is this old: TTL minus this margin. */
#define CW_FENCE_MARGIN_MS 3000
#define CW_TTL_DEFAULT 10
/* Statuses are put when a stage changes, and every CW_STATUS_EVERY_MS when their text changed;
 * the reconcile runs at each change the watch sees, and every CW_RECONCILE_EVERY_MS anyway (every
 * second while fenced). At rest a worker asks etcd about 0.5 times a second (docs/cluster.md). */
#define CW_STATUS_EVERY_MS 5000
#define CW_RECONCILE_EVERY_MS 30000

/* What the worker published at <p>/status/<name>/<task>/<source>. */
typedef struct cw_published {
  char task[DMH_CLUSTER_NAME_MAX];
  char source[DMH_CLUSTER_NAME_MAX];
  char stage[32]; /* the stage last put ("" none yet) */
  char *text;     /* the value last put (NULL: none, or put again at the next turn) */
} cw_published;

/* One watch thread: a key (or prefix) whose changes make the main thread reconcile. */
struct cw;
typedef struct cw_watch {
  struct cw *w;
  char key[DMH_CLUSTER_KEY_MAX];
  int prefix;
  pthread_t thr;
  bool started;
} cw_watch;
#define CW_N_WATCHES 4 /* <p>/bound/<name>, <p>/stage/, <p>/relay/<name>, <p>/source/ */

typedef struct cw {
  char name[DMH_CLUSTER_NAME_MAX];
  char prefix[DMH_CLUSTER_KEY_MAX / 2];
  char addr[DMH_CLUSTER_NAME_MAX];
  const char *endpoints;
  dmh_cluster_security sec; /* every etcd client's TLS and user (sec.opts); the cluster key */
  char *state_dir;          /* absolute */
  char *settings;           /* its command line, config worker NAME's answer (cli_flag.h) */
  char *plugin_dir;
  /* --unit-dir, --secrets-dir, --allow-submitted-unit-paths: every config the worker reads from
   * etcd is submitted text (config.h) */
  dmh_trust_flags trust;
  int64_t ttl_s;

  dmh_etcd *etcd; /* the main thread's client */
  int64_t lease;
  pthread_mutex_t keeper_lock; /* guards keeper: the main thread replaces it when lost */
  dmh_etcd_keeper *keeper;
  char registered_relay[DMH_CLUSTER_NAME_MAX + 1]; /* the relay last registered; "\1": none yet */

  dmh_registry *reg;
  struct cw_shard *shard;   /* the subtasks' shard DDL coordinator (cluster_worker_shard.c) */
  pthread_mutex_t ops_lock; /* see above */
  bool fenced;              /* under ops_lock */
  atomic_long fenced_at_ms; /* when the fence last paused (monotonic ms), for the log */

  atomic_int stop;
  atomic_int dirty; /* something the worker follows changed: reconcile */
  int64_t watch_from;
  cw_watch watches[CW_N_WATCHES];
  pthread_t fence_thr;
  bool fence_started;
  bool config_missing; /* the last reconcile lacked a file text: again in a second (main only) */
  /* the binding (its create_revision) this worker could not take up and counted as DM's
   * dm_worker_operate_error{type="SourceBound"}: once per binding, not per retry (main only) */
  int64_t bound_err_rev;
  /* a mod_revision of <p>/source/<bound> whose text the registry refused: not tried again
   * (cluster_worker_source.c; main only) */
  int64_t source_rev_refused;

  cw_published *pub;
  int n_pub;
  long last_publish_ms;
} cw;

long cw_now_ms(void);
/* A warning or error of the worker in the log: "what: [code N, class] message ...". */
void cw_log_error(dm_log_level level, const char *what, const dm_error *err);
/* The keeper's view: ms since the last renewal, and whether etcd said the lease is gone. */
long cw_lease_age(cw *w, int *lost);
/* Is the lease fresh enough to run subtasks? */
bool cw_lease_fresh(cw *w);

/* <p>/bound/<name>: 1 and *b, *create_rev (the fencing token) when this worker is bound, 0 when
 * not, -1 with err when the read failed. *revision (may be NULL): the store's revision. */
int cw_read_binding(cw *w, dmh_cluster_binding *b, int64_t *create_rev, int64_t *revision,
                    dm_error *err);
/* Reads what etcd says and brings the registry in line. 0, or -1 with err (an etcd read failed:
 * try again later; nothing changed). *revision (may be NULL): the revision of the first read. */
int cw_reconcile(cw *w, int64_t *revision, dm_error *err);
/* Puts <p>/worker/<name> under the lease when the relay it names changed (or force). */
int cw_register(cw *w, bool force, dm_error *err);
/* Publishes the status of the subtasks (all: every one whose text changed; else those whose stage
 * changed), deletes the keys of subtasks gone. */
void cw_publish(cw *w, bool all);
/* Forgets what was published (a new lease: every status is put again). */
void cw_publish_reset(cw *w);

/* What etcd expects of the bound source's subtasks. */
typedef struct cw_want {
  char task[DMH_CLUSTER_NAME_MAX];
  dmh_cluster_stage stage;
  int64_t stage_rev; /* the stage key's mod_revision */
  char *text; /* the task file, when the task must be started here (or the source is new here) */
  /* start-task's options of the task's current start (read with `text`, or for a task here not
   * started yet: cw_start_read) */
  bool has_start;
  dmh_cluster_start start;
  /* the start's revision: the task key's create_revision, or for resume-task's options (at_resume)
   * the stage key's mod_revision */
  int64_t start_rev;
} cw_want;

/* start-task's one-shot options (cluster_worker_start.c). read: those of want's task on `source`
 * written with its task key, or resume-task's written with its stage key (else none), into want;
 * -1 with err when a read failed. task: the registry's start of want's task from the file at
 * `path` (run: started, else created stopped) with them, when they are for `binding` (the current
 * binding's create_revision) and were not applied here before; the start's revision kept in
 * <state>/tasks/<task>/cluster.start once the meta is dropped, before anything of the task runs.
 * resume: the registry's resume-task of want's task (here, not started yet) with resume-task's
 * options under the same rules. 0, or -1 with err (the registry's). */
int cw_start_read(cw *w, const char *source, cw_want *want, dm_error *err);
int cw_start_task(cw *w, const cw_want *want, const char *path, bool run, int64_t binding,
                  dm_error *err);
int cw_start_resume(cw *w, const cw_want *want, int64_t binding, dm_error *err);
/* stop-task's remove-meta (cluster_worker_start.c): read: 1 when <p>/start/<task>/<source> holds
 * it for `binding` (the subtask goes, its stage key is gone), 0 when not, -1 with err when the
 * read failed. task: the registry's stop of `task` with remove-meta (the meta dropped after the
 * stop; the task is gone from the registry then, so never dropped twice by a restart). */
int cw_stop_read(cw *w, const char *task, const char *source, int64_t binding, dm_error *err);
int cw_stop_task(cw *w, const char *task, dm_error *err);

/* Writes a file text under the state dir, next to the registry's copy (so relative paths in it
 * resolve the same): <state>/<dir>/<name>/cluster.cfg. malloc'd path, or NULL with err. */
char *cw_write_config(cw *w, const char *dir, const char *name, const char *text, dm_error *err);

/* A revision kept in the state dir at <state>/<rel> ("<rev>\n", written atomically): a source's
 * text applied (sources/<id>/cluster.rev), a task's start options applied
 * (tasks/<task>/cluster.start). load: the revision, 0 when the file is absent (*present false;
 * present may be NULL). save: 0, or -1 with err. */
int64_t cw_rev_load(cw *w, const char *rel, bool *present);
int cw_rev_save(cw *w, const char *rel, int64_t rev, dm_error *err);

/* operate-source update through a master (cluster_worker_source.c). changed: whether the text of
 * `source` at mod_revision `rev` is not the one the registry holds (the revision applied is kept
 * in <state>/sources/<source>/cluster.rev; a worker without that file takes the text it holds as
 * `rev`'s) and was not refused before. applied: `rev`'s text is the registry's now. update: the
 * registry's operate-source update with `text` (ops_lock held, after the stages were applied);
 * refused because a task on it still runs: tried again at the next reconcile (a second later);
 * refused otherwise: logged, not tried again for `rev`. */
bool cw_source_changed(cw *w, const char *source, int64_t rev);
void cw_source_applied(cw *w, const char *source, int64_t rev);
void cw_source_update(cw *w, const char *source, const char *text, int64_t rev);

/* The text of `source`'s file to create it with when it is bound here anew
 * (cluster_worker_relay.c): `text` with `relay.binlog-name` set to the earliest binlog file of the
 * global sync checkpoints of the tasks on the source (the target's
 * `<meta>`.`<task>_syncer_checkpoint` rows with id = source, is_global = 1), so the relay starts
 * no later than what the sync still needs. malloc'd; NULL to create it with `text` as it is (no
 * checkpoint yet, the file sets relay.binlog-name or binlog-gtid itself, or a read failed:
 * logged). */
char *cw_relay_start_text(cw *w, const char *source, const char *text, const cw_want *ws, int n_ws);

/* The subtasks' shard DDL coordinator over etcd (cluster_worker_shard.c, shard_coord.h): infos
 * and tables put, operations watched and marked done, every write fenced by the worker's binding
 * (<p>/bound/<name>: its create_revision is the token, its value names the source). opts outlives
 * it. NULL without memory. */
typedef struct cw_shard cw_shard;
cw_shard *cw_shard_new(const char *endpoints, const dmh_etcd_opts *opts, const char *prefix,
                       const char *worker);
/* The token of the current binding (the registry's fencing token): put and report_tables are
 * fenced with it, done with the subtask's own. */
void cw_shard_set_token(cw_shard *s, uint64_t token);
const dmh_shard_coord *cw_shard_coord(cw_shard *s);
void cw_shard_free(cw_shard *s);

int cw_threads_start(cw *w, dm_error *err);
void cw_threads_stop(cw *w);

#endif /* DMH_CLUSTER_WORKER_H */
