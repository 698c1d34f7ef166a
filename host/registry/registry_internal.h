/*
 * Inside the registry (registry.h): shared by registry.c (opening and restore, shutdown, the list
 * of tasks, the references and the persistence), registry_sources.c (operate-source and the
 * worker's binding), registry_relay.c (start-, stop- and purge-relay) and registry_tasks.c (the
 * task commands and query-status). The three locks and their order are described in registry.h;
 * a field marked [lock] is guarded by the registry's `lock`, [cmd_lock] by its task's.
 */
#ifndef DMH_REGISTRY_INTERNAL_H
#define DMH_REGISTRY_INTERNAL_H

#include <json-c/json.h>
#include <pthread.h>
#include <stdbool.h>

#include "config.h"
#include "dmhost/error.h"
#include "loader.h"
#include "registry.h"
#include "registry_shard.h"
#include "state.h"
#include "supervisor.h"
#include "worker.h"

/* The bound source. Freed by the last reference after it was unlinked. */
typedef struct reg_source {
  char *id;
  char *file_rel;
  dmh_source_config *cfg;
  dmh_subtask *relay; /* [lock] created by start-relay (or enable-relay); lives as long as this */
  dmh_expect_stage relay_expect; /* [lock] */
  bool has_relay_err;            /* [lock] the relay could not be created: relay_err says why */
  dm_error relay_err;
  bool disabled; /* [lock] operate-source disable (persisted) */
  int refs;      /* [lock] */
  bool linked;   /* [lock] */
} reg_source;

typedef struct reg_sub {
  char *source_id;
  reg_source *src; /* one reference, NULL if the source is not bound (restore only) */
  dmh_subtask *st; /* [lock] NULL until created, or when creating it failed (err says why) */
  bool has_err;    /* [lock] */
  dm_error err;    /* [lock] */
  char *work_root;
} reg_sub;

typedef struct reg_task {
  struct reg_task *next; /* [lock] */
  char *name;
  char *file_rel;
  dmh_task_config *cfg; /* [cmd_lock + lock to set] NULL if its copy could not be loaded */
  /* [cmd_lock] the configs update-task replaced: a unit may still hold strings it read from them,
   * so they are freed with the subtasks (registry_update.c) */
  dmh_task_config **retired;
  int n_retired;
  bool has_load_err;         /* [lock] */
  dm_error load_err;         /* [lock] */
  dmh_expect_stage expect;   /* [lock] */
  dmh_unit_paths unit_paths; /* [lock] swapped builds */
  bool source_paused;        /* [lock] paused by operate-source disable (persisted) */
  dm_position start_pos; /* [lock] start-task --start-time's position (persisted; name "": none) */
  reg_sub *subs;
  int n_subs;
  pthread_mutex_t cmd_lock;
  int refs;    /* [lock] */
  bool linked; /* [lock] */
  /* [cmd_lock] created stopped (start-task stage Stopped) and not started since in this
   * process: resume-task remove-meta drops nothing a run wrote */
  bool never_run;
} reg_task;

struct dmh_registry {
  char *state_dir;
  char *plugin_dir;
  char *worker_name;
  pthread_mutex_t source_lock;
  pthread_mutex_t lock;
  pthread_mutex_t files_lock; /* the task templates (registry_templates.c), cluster-info.json */
  dmh_worker worker;          /* [lock] */
  reg_source *src;            /* [lock] the bound source, or NULL */
  reg_task *tasks;            /* [lock] */
  uint64_t fencing_token;     /* [lock] given to the task subtasks created */
  char addr[DMH_REGISTRY_ADDR_MAX]; /* [lock] where its control listens ("" none) */
  char *settings;                   /* [lock] its command line (dmh_registry_set_settings) */
  /* Set at open, read-only after. */
  char **unit_dirs; /* the plugin folder and --unit-dir folders, real paths */
  int n_unit_dirs;
  dmh_unit_folders folders; /* over unit_dirs and reg_daemon_writes, for every subtask */
  char *secrets_dir;
  bool allow_submitted_unit_paths;
  bool configs_submitted;
  dmh_shard_local *shard; /* the shard DDL locks of the tasks (its own lock) */
  /* dmh_registry_opts.shard: the coordinator the subtasks get instead (`dmhost worker`'s, over
   * etcd); NULL: shard's */
  const dmh_shard_coord *shard_coord;
  /* dmh_registry_cancel_verifies: the verifies in progress stop at their next chunk (atomic) */
  int verify_cancel;
};

/* registry.c: the trust a load of `origin` gets (config.h): the registry's floor applied. */
dmh_cfg_trust reg_trust(const dmh_registry *r, dmh_cfg_origin origin);

/* registry.c: helpers. reg_oom fills DM_ERR_NO_MEMORY "out of memory <what>" and returns -1. */
char *reg_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int reg_oom(dm_error *err, const char *what);

/* registry.c: state.json from the lists. Under `lock`. */
int reg_persist_locked(dmh_registry *r, dm_error *err);

/* registry.c: the list of tasks and the references. The *_locked functions run under `lock`; the
 * others take it themselves, and an unref frees (outside `lock`) what it released last. */
void reg_source_unref(dmh_registry *r, reg_source *s);
void reg_task_unref(dmh_registry *r, reg_task *t);
reg_task *reg_find_task_locked(dmh_registry *r, const char *name);
void reg_link_task_locked(dmh_registry *r, reg_task *t);
void reg_unlink_task_locked(dmh_registry *r, reg_task *t);
reg_task *reg_get_task(dmh_registry *r, const char *cmd, const char *name, dm_error *err);
bool reg_lock_task(dmh_registry *r, reg_task *t, const char *cmd, dm_error *err);
reg_source *reg_get_source(dmh_registry *r, const char *id);
reg_task **reg_all_tasks(dmh_registry *r, int *n_out);
reg_task *reg_task_new(const char *name, const char *file_rel);
int reg_make_subs_locked(dmh_registry *r, reg_task *t, const dmh_task_config *cfg, bool all);

/* registry.c: pieces of the responses. */
void reg_add_worker(dmh_registry *r, json_object *resp);
json_object *reg_source_result(dmh_registry *r, const char *source, const dm_error *e);
/* The answer of a command on one source: DM's "sources" array of one result (with *err when
 * rc < 0) and the worker. Returns rc. */
int reg_reply_source(dmh_registry *r, const char *source, int rc, const dm_error *err,
                     json_object *resp);

/* registry.c: the supervisor's side of a subtask, and the check of a copied config file. */
int reg_sub_create(dmh_registry *r, reg_task *t, reg_sub *sub, dm_error *err);
void reg_sub_set_error(dmh_registry *r, reg_sub *sub, const dm_error *e);
int reg_check_paths(const char *orig_path, char *const *a, char *const *b, int n,
                    const dmh_task_config *t, dm_error *err);

/* registry_meta.c: drop the task's meta (registry.h, dmh_task_opts.remove_meta): its tables in
 * the target's meta-schema, its tracker schemas, its work folders; what went in resp's
 * "removedMeta". No lock needed but the task's (nothing of it runs). 0, or -1 with *err. */
int reg_remove_meta(dmh_registry *r, const dmh_task_config *cfg, json_object *resp, dm_error *err);
/* start-task --start-time (registry_start_time.c; the position found by
 * dmh_registry_start_time_find, registry.h): that position made the meta of source_id's instance
 * of cfg (NULL source or an unset position: nothing). */
int reg_start_time_apply(dmh_task_config *cfg, const char *source_id, const dm_position *p,
                         dm_error *err);

/* registry_start_opts.c: resume-task's options (registry.h, dmh_task_opts: remove_meta,
 * start_time, safe_mode_duration) applied before the start of task t's subtasks on only[n_only]
 * (n_only 0: all): taken on the first start of a task created stopped, refused by name on one that
 * has run. Nothing given: nothing done. cmd_lock held, t->cfg loaded. 0, or -1 with *err. */
int reg_start_opts(dmh_registry *r, reg_task *t, const char *const *only, size_t n_only,
                   const dmh_task_opts *o, json_object *resp, dm_error *err);
/* registry_tasks.c: whether `source` is one of only[n] (n == 0: every source is). */
bool reg_source_in(const char *const *only, size_t n, const char *source);

/* registry_update.c: forget the configs update-task replaced (after the subtasks are gone). */
void reg_task_free_retired(reg_task *t);

/* registry_tasks.c: DM_ERR_NOT_FOUND naming cfg's sources when none is bound here (`what` opens
 * the message). Under `lock`. Returns -1. */
int reg_no_source_error(dmh_registry *r, const dmh_task_config *cfg, const char *what,
                        dm_error *err);
/* registry_check.c: the precheck of cfg on its sources bound here, into resp's "checkResult"
 * (DM's shape, precheck.h) when an item warned or failed, or always for check-task; -1 with
 * DM_ERR_PRECHECK_FAILED when an item failed, DM_ERR_NOT_FOUND when no source is bound. No lock
 * held on entry. */
int reg_precheck(dmh_registry *r, const dmh_task_config *cfg, const char *what, json_object *resp,
                 dm_error *err);

/* registry_sources.c: the bound source `id` pinned, or NULL with DM_ERR_NOT_FOUND "`cmd`: source
 * "id" is not bound to this worker (worker STAGE to X)" and `hint` after it (may be ""). */
reg_source *reg_bound_source(dmh_registry *r, const char *cmd, const char *id, const char *hint,
                             dm_error *err);

/* registry_source_ops.c: DM_ERR_SOURCE_DISABLED for `cmd` of task `task` when its source s is
 * disabled (DM's message), else 0. Takes `lock`. */
int reg_source_enabled(dmh_registry *r, const reg_source *s, const char *cmd, const char *task,
                       dm_error *err);

/* registry_relay.c: run and halt with source_lock held; the status for query-status and
 * operate-source show. */
int reg_relay_run(dmh_registry *r, reg_source *s, const dmh_worker *next, dm_error *err);
int reg_relay_halt(dmh_registry *r, reg_source *s, const dmh_worker *next, dm_error *err);
json_object *reg_relay_status(dmh_subtask *relay);

#endif /* DMH_REGISTRY_INTERNAL_H */
