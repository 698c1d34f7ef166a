/* Internal to host/cluster/master/master*.c: the master's state and the pieces its files share. */
#ifndef DMH_MASTER_INTERNAL_H
#define DMH_MASTER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "cluster_keys.h"
#include "config.h"
#include "control.h"
#include "etcd.h"
#include "master.h"
#include "scheduler.h"

/* A leader stops acting once its last renewal is older than TTL minus this (before etcd can
 * expire the lease and elect another). */
#define MASTER_LEASE_MARGIN_MS 2500

struct dmh_master {
  char name[DMH_CLUSTER_NAME_MAX];
  char addr[DMH_CLUSTER_NAME_MAX];
  char prefix[DMH_CLUSTER_KEY_MAX / 2];
  char *endpoints;
  dmh_etcd_opts etcd_opts; /* every client's: TLS, user */
  bool has_cluster_key;
  unsigned char cluster_key[32];
  int64_t ttl_s;
  dmh_master_forward_fn forward;
  void *forward_ud;
  char *secrets_dir; /* dmh_master_opts' */
  char *settings;    /* dmh_master_opts' (config master NAME) */
  bool allow_submitted_unit_paths;

  pthread_mutex_t lock; /* guards lease_id and keeper (replaced when the lease is lost) */
  int64_t lease_id;
  dmh_etcd_keeper *keeper;
  bool resigned; /* the lease was revoked (dmh_master_resign) */

  /* the leader's scheduler writes, serialized: the loop and transfer-source never interleave */
  pthread_mutex_t sched_lock;
  /* the leader's shard DDL rounds and shard-ddl-lock unlock, serialized (master_shard.c) */
  pthread_mutex_t shard_lock;

  uint64_t metrics_owner; /* dm_master_worker_state's series while it leads (master_sched.c) */
  char **metrics_workers; /* [sched_lock] the workers it has shown while leading */
  size_t n_metrics_workers;

  /* operate-leader (master_evict.c). evict_cond is on CLOCK_MONOTONIC; signalled when leading
   * or held change, when evicted is cleared and at shutdown. */
  pthread_mutex_t evict_lock;
  pthread_cond_t evict_cond;
  atomic_int evicted; /* [written under evict_lock; read by the election loop] never campaign */
  bool leading;       /* [evict_lock] the election thread is in a leadership: from storing token
                         until master_lead and the shard coordinator returned */
  int64_t held;       /* [evict_lock] the token of a leader key this master may still hold in
                         etcd (0: none); given back, fenced by it, while evicted */

  atomic_llong token;    /* leadership token while leading and allowed to act; 0 otherwise */
  atomic_int stopping;   /* shutdown began */
  atomic_int watch_stop; /* ends the watch the election thread runs (follower or scheduler) */
  pthread_t elect_thread, guard_thread;
  bool threads_started;
};

/* A key of the cluster (cluster_keys.h) into buf, or -1 with *err (DM_ERR_CONTROL_REQUEST naming
 * the name that cannot be used). */
int master_key(char *buf, size_t size, const dmh_master *m, dmh_cluster_key_kind kind,
               const char *a, const char *b, const char *c, dm_error *err);

/* Every key of a kind (the prefix range) at revision rev (0: now). */
int master_range_kind(dmh_etcd *c, const dmh_master *m, dmh_cluster_key_kind kind, int64_t rev,
                      dmh_etcd_result *out, dm_error *err);

/* What the scheduler sees: the workers (registered, or named by a binding: those offline), sorted
 * by name, with their registrations (addr; "" when offline), and the sources with their last
 * worker, all read at one revision. */
typedef struct master_snapshot {
  int64_t revision;
  dmh_sched_worker *workers;
  dmh_cluster_worker_info *info; /* parallel to workers */
  size_t n_workers;
  dmh_sched_source *sources;
  size_t n_sources;
  char (*unbound)[DMH_SCHED_NAME_MAX]; /* per worker: the source master_repair took from it */
} master_snapshot;

int master_snapshot_read(dmh_etcd *c, const dmh_master *m, master_snapshot *s, dm_error *err);

/* The control handlers' user data: the master and the etcd client they use. */
typedef struct master_ctl {
  dmh_master *m;
  dmh_etcd *c;
} master_ctl;
/* master_forward.c: purge-relay and binlog, and swap-unit, forwarded to the worker(s) of the
 * source(s) (dmh_control_fn, ud a master_ctl). */
int master_ctl_worker_cmd(void *ud, const dmh_control_cmd *cmd, json_object *args,
                          json_object *resp, dm_error *err);
int master_ctl_swap_unit(void *ud, const dmh_control_cmd *cmd, json_object *args, json_object *resp,
                         dm_error *err);
/* The sources whose expected stage names task `task` (at most `max` into out); their count. */
int master_ctl_sources_of(master_ctl *x, const char *task, char (*out)[DMH_CLUSTER_NAME_MAX],
                          int max, dm_error *err);
/* The online worker serving `source` in the snapshot: bound to it, or, when `relay`, keeping its
 * relay. -1 with DM_ERR_NOT_FOUND when none. */
int master_ctl_worker_index(const master_snapshot *s, const char *source, bool relay,
                            dm_error *err);
/* Command `cmd` with `args` sent to worker i's control listener: its answer, or NULL with *err. */
/* The request {"cmd": cmd->name, "args": args} sent to the master or worker at addr through m's
 * forwarder (set: the caller checks): its answer, or NULL with *err. master_forward_answer: the
 * answer's members copied into resp (and the answer freed), -1 for a NULL answer. */
json_object *master_forward_to(dmh_master *m, const char *addr, const dmh_control_cmd *cmd,
                               json_object *args, dm_error *err);
int master_forward_answer(json_object *answer, json_object *resp);
json_object *master_ctl_forward_worker(master_ctl *x, const master_snapshot *s, size_t i,
                                       const dmh_control_cmd *cmd, json_object *args,
                                       dm_error *err);
/* master_control.c's steps of start-task that update-task runs too: the trust of a file given to
 * the master, what a cluster does not do yet, the precheck on the sources' files
 * in etcd, the value stored in etcd (the password sealed with the cluster key; *sealed the text). */
dmh_cfg_trust master_ctl_trust(const master_ctl *x, dmh_cfg_origin origin);
int master_ctl_cluster_supports(const dmh_task_config *tc, const char *file, dm_error *err);
int master_ctl_precheck(master_ctl *x, const dmh_task_config *tc, const char *what,
                        json_object *resp, dm_error *err);
char *master_ctl_sealed_value(master_ctl *x, const dmh_control_file *f, const char *path,
                              const char *group, const char *password, char **sealed,
                              dm_error *err);
/* master_objects.c: the text stored at kv (a {"config"} value) loaded as `name`: a task (*task,
 * is_task) or a source (*source), as the workers load it (its password decrypted with the
 * cluster key). -1 with *err. */
int master_ctl_stored_load(master_ctl *x, const dmh_etcd_kv *kv, const char *name, bool is_task,
                           dmh_task_config **task, dmh_source_config **source, dm_error *err);
/* master_start.c: the file of `source` kept in etcd, loaded as the workers load it (its password
 * decrypted with the cluster key); DM_ERR_NOT_FOUND naming task `task` when etcd has none. */
int master_ctl_source_load(master_ctl *x, const char *task, const char *source,
                           dmh_source_config **sc, dm_error *err);
/* master_start.c: start-task's one-shot options (--remove-meta, --start-time), handed to each
 * source's worker at <p>/start/<task>/<source> in the txn that creates the task. */
typedef struct master_start_opts {
  bool remove_meta;
  const char *start_time; /* NULL: none */
} master_start_opts;
int master_start_opts_parse(const dmh_control_cmd *cmd, json_object *args, master_start_opts *o,
                            dm_error *err);
/* Sources of one start with options: the txn holds a stage and an options key of each, the task
 * key, compares on each binding, the sources and the leader key. */
#define MASTER_START_MAX 60
typedef struct master_start_keys {
  char leader_key[DMH_CLUSTER_KEY_MAX];
  char keys[MASTER_START_MAX][DMH_CLUSTER_KEY_MAX];
  char bound_keys[MASTER_START_MAX][DMH_CLUSTER_KEY_MAX];
  char *values[MASTER_START_MAX];
  dmh_etcd_cmp cmps[2 * MASTER_START_MAX + 1]; /* the leader, each binding (and stage key) */
  size_t n_cmps;
  dmh_etcd_op ops[MASTER_START_MAX];
  size_t n_ops;
} master_start_keys;
/* With options o (none: nothing, 0): each source of tc must be bound to a worker (in s); the
 * position of o->start_time found on each source (refused as `dmhost serve` refuses: task-mode
 * incremental only, a time after the last transaction; resp's msg names it); the options keys
 * put (k->ops) under compares (k->cmps) of the leader key's create_revision == token and each
 * binding's create_revision as read. -1 with *err. */
int master_start_prepare(master_ctl *x, const dmh_task_config *tc, const master_snapshot *s,
                         const master_start_opts *o, int64_t token, master_start_keys *k,
                         json_object *resp, dm_error *err);
/* stop-task's remove-meta (DM's delete with keep_meta=false): the options {remove_meta, stop} of
 * each of `sources` put (k->ops) for its worker, which drops the meta after the stop, under the
 * same compares (the leader's token, each binding). Each source must be bound to a worker. */
int master_stop_prepare(master_ctl *x, const char *task, const char *const *sources, size_t n,
                        const master_snapshot *s, int64_t token, master_start_keys *k,
                        dm_error *err);
/* resume-task's options (DM's OpenAPI POST /api/v1/tasks/{name}/start of a task created
 * stopped): remove-meta, start-time and safe-mode-duration (a duration, checked here). */
typedef struct master_resume_opts {
  bool remove_meta;
  const char *start_time;         /* NULL: none */
  const char *safe_mode_duration; /* NULL: none */
} master_resume_opts;
int master_resume_opts_parse(const dmh_control_cmd *cmd, json_object *args, master_resume_opts *o,
                             dm_error *err);
bool master_resume_opts_any(const master_resume_opts *o);
/* With options o (some): each of task's stage keys `stages` (those of the sources `only`; none:
 * all) must still be the Paused of the task's creation (version 1: it never ran), else
 * DM_ERR_STAGE naming what to do; start-time's position found on each source and safe-mode-
 * duration refused for a task without a sync, as `dmhost serve` does; each source's options
 * {"resume": true, ...} put (k->ops) for its worker, in the txn that flips the stage keys, fenced
 * by the leader's token, each binding and each stage key's mod_revision (k->cmps). */
int master_resume_prepare(master_ctl *x, const char *task, const dmh_etcd_result *stages,
                          const char *const *only, size_t n_only, const master_snapshot *s,
                          const master_resume_opts *o, int64_t token, master_start_keys *k,
                          json_object *resp, dm_error *err);
void master_start_keys_free(master_start_keys *k);
/* master_update.c: update-task TASK.cfg on every subtask of the task, checked by each worker
 * first (a dry run), then stored in etcd and applied by each worker (docs/cluster.md). */
int master_ctl_update_task(void *ud, const dmh_control_cmd *cmd, json_object *args,
                           json_object *resp, dm_error *err);
/* master_control.c: the trust a config the master was given gets (config.h); the value a source
 * or task file `f` (sent as `path`) is stored under in etcd, the password of `group` sealed with
 * the cluster key, DM's YAML translated to libconfig (*sealed: the sealed text, the caller frees
 * it). */
dmh_cfg_trust master_ctl_trust(const master_ctl *x, dmh_cfg_origin origin);
char *master_ctl_sealed_value(master_ctl *x, const dmh_control_file *f, const char *path,
                              const char *group, const char *password, char **sealed,
                              dm_error *err);
/* master_source_ops.c: operate-source update|enable|disable, decided by the leader (a follower
 * forwards); master_source_enabled: DM_ERR_SOURCE_DISABLED (-1) for `cmd` of `task` when `source`
 * is disabled, 0 when not. */
int master_ctl_source_op(master_ctl *x, const dmh_control_cmd *cmd, json_object *args,
                         const dmh_source_op *so, json_object *resp, dm_error *err);
int master_source_enabled(master_ctl *x, const char *cmd, const char *task, const char *source,
                          dm_error *err);
/* master_config.c: config|get-config task|source NAME from etcd, passwords masked. */
int master_ctl_get_config(void *ud, const dmh_control_cmd *cmd, json_object *args,
                          json_object *resp, dm_error *err);
/* query-lag: refused with DM_ERR_LAG_CLUSTER (the lag history is `dmhost serve`'s, docs/api.md). */
int master_ctl_query_lag(void *ud, const dmh_control_cmd *cmd, json_object *args, json_object *resp,
                         dm_error *err);
/* master_verify.c: verify TASK [-s SOURCE ...]: forwarded to the worker of each of the task's
 * sources (-s: those), their reports in one answer. */
/* validation OP [TASK|--all-task] ... (master_validation.c): at the worker of each subtask named,
 * DM's answer merged of theirs. */
int master_ctl_validation(void *ud, const dmh_control_cmd *cmd, json_object *args,
                          json_object *resp, dm_error *err);
int master_ctl_verify(void *ud, const dmh_control_cmd *cmd, json_object *args, json_object *resp,
                      dm_error *err);
/* master_objects.c: api-objects task|source [NAME], DM's Task and Source objects of the texts in
 * etcd with DM's filters (the daemon's answer's shape, control.h dmh_control_api_objects). */
int master_ctl_api_objects(void *ud, const dmh_control_cmd *cmd, json_object *args,
                           json_object *resp, dm_error *err);
/* master_objects.c: task-template OP [NAME], DM's task templates at <p>/template/<name>. */
int master_ctl_task_template(void *ud, const dmh_control_cmd *cmd, json_object *args,
                             json_object *resp, dm_error *err);
/* master_objects.c: cluster-info [update], DM's cluster info at <p>/cluster-info. */
int master_ctl_cluster_info(void *ud, const dmh_control_cmd *cmd, json_object *args,
                            json_object *resp, dm_error *err);
/* operate-source show [-s SOURCE]'s answer: each source with its worker and the worker's stage. */
int master_ctl_source_show(master_ctl *x, const char *source, json_object *resp, dm_error *err);
void master_snapshot_free(master_snapshot *s);
/* The worker bound to `source` in the snapshot, or "" (master_control.c). */
const char *master_ctl_worker_of(const master_snapshot *s, const char *source);
/* Whether `source` is one of only[n] (n == 0: every source is): dmctl's -s (master_control.c). */
bool master_ctl_in(const char *const *only, size_t n, const char *source);
/* master_status.c: query-status, every task or one task's DM status (dmh_control_fn). */
int master_ctl_query_status(void *ud, const dmh_control_cmd *cmd, json_object *args,
                            json_object *resp, dm_error *err);

/* UNBIND actions for bindings that break the scheduler's invariants (a source no longer listed,
 * a worker keeping another source's relay, a source bound twice), applied to s->workers so that
 * dmh_sched_plan/transfer accept the rest. `actions` needs room for n_workers. */
size_t master_repair(master_snapshot *s, dmh_sched_action *actions);

/* Writes the actions as txns fenced by token (the leader key's create_revision must equal it),
 * each under DMH_ETCD_TXN_MAX_OPS operations, an action never split. A BIND also requires the
 * worker's binding key to be absent. DM_ERR_CLUSTER_FENCED when the token is not the leader's any
 * more (nothing of that txn written), DM_ERR_EXISTS when a binding changed meanwhile. */
int master_apply(dmh_etcd *c, const dmh_master *m, int64_t token, const dmh_sched_action *actions,
                 size_t n, dm_error *err);

/* One round of the leader: snapshot, repair, plan, apply (under sched_lock). *revision: the
 * snapshot's. */
int master_schedule_once(dmh_master *m, dmh_etcd *c, int64_t token, int64_t *revision,
                         dm_error *err);

/* DM's dm_master_worker_state{worker} (-1 unrecognized, 0 offline, 1 free, 1.5 relay, 2 bound)
 * of every worker of the snapshot, as a round leaves them; retire: the series go with the
 * leadership (DM resets them when its leader retires). master_sched.c. */
void master_metrics_workers(dmh_master *m, const master_snapshot *s);
void master_metrics_retire(dmh_master *m);
/* DM's dm_master_start_leader_counter (no labels, the process's own series): at 0 from the start
 * (won false), one more each time this master starts leading. */
void master_metrics_leader(bool won);
/* DM's dm_master_worker_event_error{type}: `type` "handle" (a round after a change of a worker's
 * registration failed) or "watch" (the watch of the cluster's keys broke or gave up), `by` more;
 * the leader's series (m->metrics_owner), gone with the leadership as DM resets it. */
void master_metrics_worker_event(dmh_master *m, const char *type, double by);

/* The leader's loop, on the election thread: a round, then a watch of <p>/ until a change of a
 * worker, source or binding key, again, until the token is no longer this master's. */
void master_lead(dmh_master *m, dmh_etcd *c, int64_t token);

/* master_evict.c. The election thread's side of operate-leader. lead_begin: under evict_lock,
 * store token and mark the leadership begun, or (evicted meanwhile) keep it only to give it back:
 * false. lead_end: the leadership is over (master_lead and the shard coordinator returned). */
bool master_lead_begin(dmh_master *m, int64_t token);
void master_lead_end(dmh_master *m);
/* While evicted: give back the leader key this master may hold, then wait (up to a second: the
 * loop's lease checks go on) for cancel-evict or shutdown. */
void master_evicted_wait(dmh_master *m, dmh_etcd *c);
/* Delete <p>/leader if its create_revision is `token` (a stale token deletes no newer leader's
 * key): 0 (*deleted whether it was), or -1 with *err. */
int master_give_back(dmh_etcd *c, const dmh_master *m, int64_t token, bool *deleted, dm_error *err);
/* operate-leader evict|cancel-evict on this master (dmh_control_fn, ud a master_ctl). */
int master_ctl_operate_leader(void *ud, const dmh_control_cmd *cmd, json_object *args,
                              json_object *resp, dm_error *err);

/* The current leader's name and address (from its master key); 0 and "" when none. */
int master_leader(dmh_etcd *c, const dmh_master *m, char *name, char *addr, int64_t *token,
                  dm_error *err);

/* The leader's shard DDL coordinator (master_shard.c): a thread of its own while the master leads
 * under `token`; stop ends it (within about a second) and joins it. */
typedef struct master_shard_run {
  dmh_master *m;
  int64_t token;
  atomic_int stop;
  pthread_t thr;
  bool started;
  uint64_t metrics_owner; /* dm_master_ddl_state_number's series while it leads */
  char **metrics_tasks;   /* [the thread's] shard_metrics.h's list */
  size_t n_metrics_tasks;
} master_shard_run;
int master_shard_start(dmh_master *m, int64_t token, master_shard_run *run);
void master_shard_stop(master_shard_run *run);
/* shard-ddl-lock: show (any master, from etcd) and unlock (the leader; forwarded by a follower),
 * waiting up to MASTER_SHARD_UNLOCK_WAIT_MS for each side as the daemon does (DM's 10 s). */
#define MASTER_SHARD_UNLOCK_WAIT_MS 10000
int master_ctl_shard_ddl_lock(void *ud, const dmh_control_cmd *cmd, json_object *args,
                              json_object *resp, dm_error *err);
/* master_forward.c. On a follower: the request forwarded to the leader and its answer copied into
 * resp (1), or DM_ERR_CLUSTER_NOT_LEADER naming the leader (-1). On the leader: 0, nothing done. */
int master_ctl_to_leader(master_ctl *x, const dmh_control_cmd *cmd, json_object *args,
                         json_object *resp, dm_error *err);
/* master_ctl_to_leader, and on the leader its token (*token, read before: a write fenced by it
 * fails once the leadership ends), or DM_ERR_CLUSTER_NOT_LEADER (-1) when it ended already. */
int master_ctl_leader_token(master_ctl *x, const dmh_control_cmd *cmd, json_object *args,
                            json_object *resp, int64_t *token, dm_error *err);

/* The list-member answer's members (master_members.c). */
int master_list_member(dmh_master *m, dmh_etcd *c, bool masters, bool workers, bool leader_only,
                       const char *const *names, size_t n_names, json_object *resp, dm_error *err);

/* offline-member --master|--worker -n NAME (master_members.c; dmh_control_fn, ud a master_ctl): a
 * follower forwards --worker to the leader. */
int master_ctl_offline_member(void *ud, const dmh_control_cmd *cmd, json_object *args,
                              json_object *resp, dm_error *err);
/* The leader's removal of worker `name` under `token`: in one txn compared on the leader key's
 * create_revision (== token) and the worker's registration (absent), its binding and relay
 * request deleted; then its dm_master_worker_state series dropped. DM_ERR_CLUSTER_MEMBER_ONLINE
 * (registered, also when it registered after any read), DM_ERR_CLUSTER_FENCED (not the leader's
 * token: nothing written), DM_ERR_NOT_FOUND (nothing of it known). */
int master_offline_worker(dmh_master *m, dmh_etcd *c, int64_t token, const char *name,
                          dm_error *err);

#endif /* DMH_MASTER_INTERNAL_H */
