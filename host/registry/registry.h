/*
 * The daemon's sources and tasks: the configs (loaded from their copies in the state dir), the
 * subtasks made of them (one per task and source, plus the source's relay), the worker's stage, and
 * what is persisted after every change (state.h). The control dispatcher (control.c) calls one
 * function per command; each fills the response object it is given with DM's payload fields and
 * returns 0, or -1 with *err (and possibly per-source results already in the response).
 *
 * Locking. Supervisor commands block (a pause waits for the unit to reach a safe point, a stop is
 * bounded only by stop-timeout twice), so no registry lock is ever held across one in a way that
 * could hold up an unrelated request:
 *
 *   source_lock  (one per registry) serializes the commands that change the worker's binding or the
 *                relay: operate-source create/stop, start-relay, stop-relay. Held across their
 *                supervisor calls; only those commands wait for it.
 *   task cmd_lock (one per task) serializes pause/resume/stop/swap of that task, so the expected
 *                stage persisted is the one of the last command that took effect. Held across the
 *                supervisor calls on that task's subtasks; only commands on the same task wait.
 *   lock         (one per registry) guards the lists, the worker value, every entry's bookkeeping
 *                and the writes of state.json. Held only for short non-blocking work: never across
 *                dmh_subtask_create/start/pause/resume/stop/swap/destroy or status_json (status can
 *                wait for a unit's init). Under it only dmh_subtask_stage is called.
 *
 *   Order: source_lock -> task cmd_lock -> lock. Never wait for an outer lock holding an inner one.
 *
 * An entry found under `lock` is pinned with a reference (refs) before `lock` is released; the
 * subtasks and config of a task removed by stop-task are destroyed by whoever drops the last
 * reference, outside `lock`. A task's subtasks borrow their source's config and relay: a source
 * cannot be removed while any task lists it (operate-source stop refuses, naming the tasks), and a
 * relay subtask, once created, lives as long as its source (stop-relay only stops it).
 */
#ifndef DMH_REGISTRY_H
#define DMH_REGISTRY_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "dmhost/error.h"
#include "dmhost/unit.h"
#include "worker.h"

typedef struct dmh_registry dmh_registry;

typedef struct dmh_registry_opts {
  const char *state_dir;   /* absolute; created if missing */
  const char *plugin_dir;  /* default unit builds; NULL: the installed folder */
  const char *worker_name; /* shown as "worker" in responses; NULL: "dmhost@<hostname>" */
  /* Restore every task as an expected Paused one (created, left New) whatever its persisted
   * stage, which stays as it is: `dmhost worker` starts nothing before etcd says the source is
   * still its own (docs/cluster.md, "Roles: worker"); resume-task starts them. */
  bool hold_tasks;
  /* The fencing token of the subtasks created (supervisor.h, dmh_subtask_opts.fencing_token): 0,
   * the single-machine default, is no fencing; `dmhost worker` gives its binding's token. */
  uint64_t fencing_token;
  /* The subtasks' shard DDL coordinator (shard_coord.h; borrowed, outlives the registry): `dmhost
   * worker` gives its etcd one (cluster_worker_shard.c). NULL: the registry's own, in process. */
  const struct dmh_shard_coord *shard;
  /* What the daemon trusts (docs/security.md, "Unit builds the daemon loads" and "Configs sent
   * over the network"). unit_dirs: the --unit-dir folders (absolute) builds may come from besides
   * the plugin folder. secrets_dir: --secrets-dir, where a submitted config may name secret files
   * (NULL: nowhere). allow_submitted_unit_paths: --allow-submitted-unit-paths. configs_submitted:
   * every config and swap-unit path this registry is given came over the network (`dmhost
   * worker`: from etcd and the masters), whatever the caller says. */
  const char *const *unit_dirs;
  int n_unit_dirs;
  const char *secrets_dir;
  bool allow_submitted_unit_paths;
  bool configs_submitted;
} dmh_registry_opts;

/* The real paths of --unit-dir folders and --secrets-dir, checked at daemon start: each must exist
 * and be a folder, and a unit folder must not hold, nor lie in, the state dir. *out malloc'd
 * (free each and the array). 0, or -1 with the message in `why`. Shared by serve and worker. */
int dmh_registry_real_dirs(const char *const *dirs, int n, const char *state_dir, bool units,
                           char ***out, char *why, size_t why_size);

/*
 * Load the persisted state and restore it: the worker straight to its persisted binding (see
 * worker.h), the source (and its relay if it was expected Running), then the tasks (expected
 * Running: created and started, the units resuming from their checkpoints; expected Paused:
 * created and left New). A subtask that cannot be created or started is kept with its error, for
 * query-status and resume-task. A state that cannot be read is DM_ERR_STATE and nothing runs.
 */
int dmh_registry_open(const dmh_registry_opts *opts, dmh_registry **out, dm_error *err);

/* "dmhost@<hostname>" (malloc'd, NULL when out of memory): the name of a worker not given one,
 * the daemon's and `dmhost run`'s, shown in responses and as DM's `worker` metric label. */
char *dmh_registry_default_worker_name(void);

/* Daemon exit: pause the running subtasks at a safe point (their checkpoints saved; the expected
 * stages persisted stay as they are, so a restart brings them back), stop the relay, free all. */
void dmh_registry_shutdown(dmh_registry *r);
/* The first step of a shutdown, before the control server waits for the requests in progress:
 * every verify running (dmctl verify, its route, a master's forward) stops at its next chunk and
 * answers what it compared, the rest failed with DM_ERR_VERIFY_CANCELLED; a verify asked later
 * answers so at once. A large verify would hold the shutdown up for as long as it runs. */
void dmh_registry_cancel_verifies(dmh_registry *r);

/* The fencing token of the subtasks created from now on (those that exist keep theirs: stop and
 * start a task to give it the new one), and the current one. */
void dmh_registry_set_fencing_token(dmh_registry *r, uint64_t token);
uint64_t dmh_registry_fencing_token(dmh_registry *r);

/* The worker as it is now (a copy). */
dmh_worker dmh_registry_worker(dmh_registry *r);
/* Its name ("worker" in answers); the registry's until it is closed. */
const char *dmh_registry_worker_name(const dmh_registry *r);

/* The "HOST:PORT" the daemon's control listens on, as bound (--listen's port 0 made the real
 * one), shown as its address in DM's list-member answers; set by `dmhost serve` once listening.
 * dmh_registry_addr copies it into buf ("" when none was set). */
#define DMH_REGISTRY_ADDR_MAX 128
void dmh_registry_set_addr(dmh_registry *r, const char *addr);
void dmh_registry_addr(dmh_registry *r, char *buf, size_t len);
/* The daemon's settings as `dmctl config master|worker NAME` answers them (its command line, one
 * flag a line: cli_flag.h's dmh_cli_settings_text), set by `dmhost serve` and `dmhost worker`
 * once listening (copied); dmh_registry_settings: a malloc'd copy, NULL when none was set or out of
 * memory. */
int dmh_registry_set_settings(dmh_registry *r, const char *text);
char *dmh_registry_settings(dmh_registry *r);

/* The state dir (absolute), as opened; the registry's until it is closed. */
const char *dmh_registry_state_dir(const dmh_registry *r);

/* operate-source create|show|stop. `path` is the source file (absolute); show with source NULL
 * lists every source. */
int dmh_registry_source_create(dmh_registry *r, const char *path, json_object *resp, dm_error *err);
int dmh_registry_source_show(dmh_registry *r, const char *source, json_object *resp, dm_error *err);
int dmh_registry_source_stop(dmh_registry *r, const char *source, json_object *resp, dm_error *err);

/* operate-source update SOURCE.cfg (registry_source_ops.c): the bound source takes the file (same
 * source-id), refused with DM_ERR_SOURCE_UPDATE_BUSY while a task on it is expected Running or
 * its relay runs (DM's rule); the copy in the state dir is replaced and the tasks' subtasks are
 * made again from it (left New, as a restart leaves a paused task: resume-task starts them with
 * the new file). keep_password: the stored file's `from` password settings replace the new
 * file's (DM's update with a null password). A file that says `enable` disables or enables the
 * source after (dmh_registry_source_enable; its "tasks" in resp). `expect` (may be NULL): the
 * source the caller means (DM's PUT path), which the file's source-id must be. */
int dmh_registry_source_update_as(dmh_registry *r, const char *path, dmh_cfg_origin origin,
                                  const char *expect, bool keep_password, json_object *resp,
                                  dm_error *err);
/* operate-source enable|disable -s SOURCE (DM's source `enable`): disable pauses every task on the
 * source and refuses resume-task and start-task there (DM_ERR_SOURCE_DISABLED) until enable,
 * which resumes the tasks the disable paused. The flag and the tasks it paused are persisted. */
int dmh_registry_source_enable(dmh_registry *r, const char *source, bool enable, json_object *resp,
                               dm_error *err);
/* source-schemas -s SOURCE [DB] (registry_source_db.c): the bound source's schemas but the system
 * ones in resp["schemas"], or with db its tables that are not views in resp["tables"], sorted. */
int dmh_registry_source_schemas(dmh_registry *r, const char *source, const char *db,
                                json_object *resp, dm_error *err);
/* task-tables NAME -s SOURCE [schema_re [table_re]]: the source's tables (not views) the task's
 * block-allow-list for that source keeps, each routed (DM's TaskMigrateTarget: source_schema,
 * source_table, target_schema, target_table) in resp["targets"]; the optional patterns are DM's
 * regular expressions searched in the names. */
int dmh_registry_task_tables(dmh_registry *r, const char *name, const char *source,
                             const char *schema_re, const char *table_re, json_object *resp,
                             dm_error *err);

/* start-relay / stop-relay -s SOURCE. */
int dmh_registry_relay_start(dmh_registry *r, const char *source, json_object *resp, dm_error *err);
int dmh_registry_relay_stop(dmh_registry *r, const char *source, json_object *resp, dm_error *err);
/* purge-relay -s SOURCE -f FILE: remove the relay files before FILE ("mysql-bin.000005" or
 * "<sub-folder>/mysql-bin.000005") that neither the relay nor a registered reader needs (see
 * relay_purge.h); the relay is paused meanwhile. The response's "removed" counts the files. */
int dmh_registry_relay_purge(dmh_registry *r, const char *source, const char *file,
                             json_object *resp, dm_error *err);

/* The same with the provenance of the file's text (config.h, dmh_cfg_origin): a copy of content
 * sent in a request is DMH_CFG_SUBMITTED; the functions without _as take the operator's file (or
 * submitted text when the registry has configs_submitted). */
int dmh_registry_source_create_as(dmh_registry *r, const char *path, dmh_cfg_origin origin,
                                  json_object *resp, dm_error *err);
int dmh_registry_task_start_as(dmh_registry *r, const char *path, dmh_cfg_origin origin,
                               json_object *resp, dm_error *err);
int dmh_registry_task_check_as(dmh_registry *r, const char *path, dmh_cfg_origin origin,
                               json_object *resp, dm_error *err);
int dmh_registry_task_update_as(dmh_registry *r, const char *path, dmh_cfg_origin origin,
                                json_object *resp, dm_error *err);

/* DM's options of start-task, resume-task and stop-task (docs/control.md; DM's OpenAPI create,
 * start and delete of a task).
 *   stopped      start-task stage "Stopped" (DM v6's create): prechecked, copied and kept with
 *                expected stage Paused, its subtasks created and left New (as a restore of a paused
 *                task); resume-task starts them. query-status shows them New.
 *   check_force  stop-task: apply DM's DELETE rule, refusing a task whose expected stage is
 *                Running unless `force` (DM_ERR_STAGE, DM's message); without check_force the stop
 *                is today's (dmctl's stop-task stops a running task, as DM's dmctl does)
 *   remove_meta  DM's keep_meta=false / --remove-meta (registry_meta.c): start-task drops the
 *                task's meta first, so it starts from scratch; stop-task drops it after the stop;
 *                resume-task only on a task created stopped that never ran since (else refused:
 *                its checkpoints are what it resumes from).
 * resume-task takes remove_meta, start_time and safe_mode_duration (DM's OpenAPI start) on the
 * first start of a task created stopped only (registry_start_opts.c says why). */
typedef struct dmh_task_opts {
  bool stopped;
  bool check_force;
  bool force;
  bool remove_meta;
  /* start-task --start-time (DM's): an incremental task's sync starts at the first transaction
   * that began at or after it on the source (registry_start_time.c); implies remove_meta */
  const char *start_time;
  /* resume-task safe-mode-duration (DM's OpenAPI start's safe_mode_time_duration, Go's duration
   * text, checked by the caller): the sync's setting safe-mode-duration for this start */
  const char *safe_mode_duration;
  /* start-task: the sync's start found before (a cluster's master found it with
   * dmh_registry_start_time_find), given to each subtask as --start-time's position is; not
   * found again, nothing dropped unless remove_meta */
  const dm_position *start_pos;
  /* start-task: called once the meta is dropped (remove_meta, start_time) and before anything of
   * the task is created or runs; a failure refuses the start (a cluster worker keeps there which
   * start's options it applied: cluster_worker_start.c) */
  int (*prepared)(void *ud, dm_error *err);
  void *prepared_ud;
  /* resume-task with options (start_pos, prepared and remove_meta taken as start-task takes
   * them): the caller vouches that the task has never run anywhere though this daemon restored
   * it (a cluster's leader saw its stage keys never leave the Paused of its creation), so a
   * restored task (never_run false after a restart) takes them too */
  bool first_start;
} dmh_task_opts;
/* --start-time's position on source `source_id` (its endpoint `ep`) for task `cfg`, asked by
 * command `cmd` (start-task, or resume-task for DM's OpenAPI start; its messages name it): the first
 * transaction that began at or after `start_time` (registry_start_time.c). Refused for a task
 * other than task-mode incremental and for a time after the last transaction
 * (DM_ERR_CONFIG_START_TIME); the answer's `msg` names the position. */
int dmh_registry_start_time_find(const dmh_task_config *cfg, const char *source_id,
                                 const dm_db_endpoint *ep, const char *cmd, const char *start_time,
                                 dm_position *out, json_object *resp, dm_error *err);
int dmh_registry_task_start_opts(dmh_registry *r, const char *path, dmh_cfg_origin origin,
                                 const dmh_task_opts *o, json_object *resp, dm_error *err);
/* dmh_registry_task_op_on with the options (o NULL: none). */
int dmh_registry_task_op_opts(dmh_registry *r, const char *cmd, const char *name,
                              const char *const *only, size_t n_only, const dmh_task_opts *o,
                              json_object *resp, dm_error *err);

/* start-task TASK.cfg (absolute path); pause-task, resume-task, stop-task NAME. */
int dmh_registry_task_start(dmh_registry *r, const char *path, json_object *resp, dm_error *err);
int dmh_registry_task_pause(dmh_registry *r, const char *name, json_object *resp, dm_error *err);
int dmh_registry_task_resume(dmh_registry *r, const char *name, json_object *resp, dm_error *err);
int dmh_registry_task_stop(dmh_registry *r, const char *name, json_object *resp, dm_error *err);
/* The same by the command's name ("pause-task", "resume-task", "stop-task") on the subtasks of the
 * sources only[n_only] (dmctl's -s; none: all). A source not the task's: DM_ERR_NOT_FOUND; stop-task
 * of only some: DM_ERR_CONTROL_REQUEST (a task stops as a whole). The expected stage a restart
 * restores moves only with an operation on every subtask. */
int dmh_registry_task_op_on(dmh_registry *r, const char *cmd, const char *name,
                            const char *const *only, size_t n_only, json_object *resp,
                            dm_error *err);

/* check-task TASK.cfg (absolute path): the precheck (precheck.h) on the task's sources bound here,
 * DM's result in resp's "checkResult"; -1 with DM_ERR_PRECHECK_FAILED when an item failed. */
int dmh_registry_task_check(dmh_registry *r, const char *path, json_object *resp, dm_error *err);

/* update-task TASK.cfg (absolute path): the task the file names takes the file's settings
 * (registry_update.c; what may change: config_update.h). Every subtask must be Paused (or, for a
 * task restored as paused, not started yet); the file is parsed and prechecked as start-task does;
 * then each subtask switches to it and its open units re-read their sections (update slot), all or
 * nothing over the task. The file replaces the task's copy in the state dir, so a restart runs it.
 * Per-source results in "sources". */
int dmh_registry_task_update(dmh_registry *r, const char *path, json_object *resp, dm_error *err);
/* The same from `origin`; dry_run: every check (identity, each subtask's stage and units, the
 * precheck, the format) and nothing changed (a cluster's master asks each worker so before it
 * stores the file: master_update.c). */
int dmh_registry_task_update_opts(dmh_registry *r, const char *path, dmh_cfg_origin origin,
                                  bool dry_run, json_object *resp, dm_error *err);

/* swap-unit NAME --unit KIND --path NEW.so (absolute): on each subtask of the task. The new path
 * is persisted with the task, so a restart keeps the swapped build. */
int dmh_registry_task_swap(dmh_registry *r, const char *name, const char *unit, const char *path,
                           json_object *resp, dm_error *err);

/* binlog skip|replace|inject|list|revert (the request: binlog_ops.h) on the task's subtasks here
 * (all, or the one of req->source). An operator registered for a subtask paused by an error
 * resumes it, as DM does. Unknown task or source: DM_ERR_NOT_FOUND. */
struct dmh_binlog_req;
int dmh_registry_binlog(dmh_registry *r, const struct dmh_binlog_req *req, json_object *resp,
                        dm_error *err);

/* binlog-schema (DM's): the schema_op of the sync unit of the task's subtask on `source` (the
 * request: dm_schema_req, unit.h), refused unless it is Paused in its sync unit (supervisor.h,
 * dmh_subtask_schema_op). The answer, DM's: "sources": [{result, msg, source, worker}] with msg
 * the list as JSON text (["db1"]) or the CREATE TABLE, and dmhost's "items" (the list as an
 * array). Unknown task or source: DM_ERR_NOT_FOUND. */
int dmh_registry_binlog_schema(dmh_registry *r, const char *name, const char *source,
                               const dm_schema_req *req, json_object *resp, dm_error *err);
/* `dmctl validation` (DM's Start/StopValidation, GetValidationStatus/Error, OperateValidationError,
 * UpdateValidation; registry_validation.c): the validation_op of the sync unit of each subtask of
 * task `name` (NULL: of every task, DM's --all-task) whose source is one of `sources` (none: all),
 * Running or Paused (supervisor.h, dmh_subtask_validation_op). resp["sources"]: per subtask asked
 * {result, msg, source, worker, task, error?, items?}, items the unit's JSON texts (the control
 * layer shapes DM's answer of them); none matched: an empty "sources" (the caller answers it in DM's
 * words). 0. */
int dmh_registry_validation(dmh_registry *r, const char *name, const char *const *sources,
                            size_t n_sources, const dm_validation_req *req, json_object *resp,
                            dm_error *err);

/* query-status [NAME]. */
int dmh_registry_query_status(dmh_registry *r, const char *name, json_object *resp, dm_error *err);
/* The same limited to the subtasks of only[n_only] (-s): with NAME a source not the task's is
 * DM_ERR_NOT_FOUND; without, the tasks having a subtask on one of them. */
int dmh_registry_query_status_on(dmh_registry *r, const char *name, const char *const *only,
                                 size_t n_only, json_object *resp, dm_error *err);

/* api-objects task|source [NAME] (registry_api_objects.c; DM's GET /api/v1/tasks[/{name}] and
 * /api/v1/sources[/{name}]): "tasks" [{"task": DM's Task, "status": query-status NAME's answer}]
 * or "sources" [{"source": DM's Source, "status": operate-source show's entry, "tasks": [the
 * tasks reading it]}], the status parts with with_status (a task's also with stage). DM's
 * filters: stage (DM's TaskStage every subtask must be in), sources (the task reads exactly
 * those), enable_relay (the source's relay started or not). NAME unknown: DM_ERR_NOT_FOUND. */
typedef struct dmh_api_objects_req {
  bool tasks; /* else sources */
  const char *name;
  bool with_status;
  const char *stage;
  const char *const *sources;
  size_t n_sources;
  bool has_enable_relay, enable_relay;
} dmh_api_objects_req;
int dmh_registry_api_objects(dmh_registry *r, const dmh_api_objects_req *q, json_object *resp,
                             dm_error *err);
/* The pieces a master's api-objects shares (master_objects.c), its tasks read from etcd: a loaded
 * task as DM's Task, its target password "******" (NULL with *err); and whether DM's filters of q
 * keep it (sources: it reads exactly those; stage: every subtask of `status`, query-status NAME's
 * detailed answer, is in it; a stage filter without a status keeps nothing). */
json_object *dmh_api_objects_task(const dmh_task_config *cfg, dm_error *err);
bool dmh_api_objects_task_kept(const dmh_task_config *cfg, const dmh_api_objects_req *q,
                               json_object *status);

/* task-template create|update|get|list|delete|import (registry_templates.c; DM's task templates,
 * /api/v1/tasks/templates): DM's Task objects kept as <state>/templates/<name>.json (0600, written
 * atomically, the name through dmh_state_check_name), under files_lock. create and update take
 * `task` (a Task object, its name the file's), checked as the converters check one (written as DM's
 * YAML and loaded as sent text) and kept as given, meta_schema defaulted to "dm_meta" (DM's
 * Adjust); create refuses an existing name (DM_ERR_EXISTS), update and get a missing one
 * (DM_ERR_NOT_FOUND); delete of a missing one is no change (DM's). Answers: "template" (a Task),
 * "templates" [Task], import's "success" [names] and "failed" [{"task", "msg"}] (every task's
 * config as a Task; `overwrite` replaces one of its name). A Task answered has its target
 * password "******". */
/* A copy of the Task as a template answer gives it (and a master keeps it): the target's password
 * "******" (registry_api_objects.c's rule). */
json_object *dmh_task_template_masked(json_object *task);
/* The checks of a Task sent to be kept as a template that do not depend on where it is kept, the
 * daemon's (registry_templates.c) and a master's (master_objects.c): its "name" a string, equal to
 * `name` when one is given (update: a template is updated under its own name); a Task without
 * meta_schema gets DM's Adjust's default "dm_meta". The Task's name (owned by task), or NULL with
 * DM_ERR_CONTROL_REQUEST. The keeper then checks the name as it names a file or a key, and the
 * Task itself. */
const char *dmh_task_template_name(const char *name, json_object *task, dm_error *err);
int dmh_registry_task_template(dmh_registry *r, const char *op, const char *name, json_object *task,
                               bool overwrite, json_object *resp, dm_error *err);

/* cluster-info [update] (registry_cluster_info.c; DM's GET and PUT /api/v1/cluster/info):
 * "cluster_id" (a random 63-bit id made at the first call, kept) and "topology" (DM's
 * ClusterTopology as the last update gave it, checked against DM's schema by the caller:
 * dmh_control_cluster_info_args), in <state>/cluster-info.json under files_lock. `topology` NULL:
 * read only. */
/* A new cluster info {"cluster_id"}: a random 63-bit id, never 0 (a daemon's and a master's, the
 * one maker). NULL with *err. */
json_object *dmh_cluster_info_new(dm_error *err);
int dmh_registry_cluster_info(dmh_registry *r, json_object *topology, json_object *resp,
                              dm_error *err);

/* query-lag NAME [since]: "task", "periodMs", "nowMs" (the daemon's clock) and "sources"
 * [{"source", "samples": [[unix_ms, seconds], ...]}], one entry per subtask of the task, its
 * replication lag as sampled by the process's metrics registry (metrics.h, DMH_METRICS_LAG; samples
 * after since_ms, oldest first; [] before the sync has published a lag or without a sampler).
 * Unknown task: DM_ERR_NOT_FOUND. */
int dmh_registry_task_lag(dmh_registry *r, const char *name, int64_t since_ms, json_object *resp,
                          dm_error *err);

/* get-config task|source NAME (dmctl config): "cfg", the text of the task's or the bound source's
 * copy in the state dir as stored (YAML or libconfig), every password value "******"
 * (config_mask.h). Unknown task or source: DM_ERR_NOT_FOUND. */
int dmh_registry_get_config(dmh_registry *r, const char *what, const char *name, json_object *resp,
                            dm_error *err);

/* shard-ddl-lock (docs/shard.md): the locks of task `name` (NULL: every task) in resp["locks"]
 * (DM's ShowDDLLocks shape); an unknown task is DM_ERR_NOT_FOUND. */
int dmh_registry_shard_locks(dmh_registry *r, const char *name, json_object *resp, dm_error *err);
/* shard-ddl-lock unlock LOCK_ID [-o owner] [--force-remove] (registry_shard.h
 * dmh_shard_local_unlock, waiting up to DMH_SHARD_UNLOCK_WAIT_MS for each side, DM's 10 s). */
#define DMH_SHARD_UNLOCK_WAIT_MS 10000
int dmh_registry_shard_unlock(dmh_registry *r, const char *lock_id, const char *owner,
                              bool force_remove, json_object *resp, dm_error *err);
/* shard-ddl-lock unlock LOCK_ID -s SOURCE -d DB -t TABLE -a exec|skip: one held table of an
 * optimistic lock (registry_shard.h dmh_shard_local_unlock_table). */
int dmh_registry_shard_unlock_table(dmh_registry *r, const char *lock_id, const char *source,
                                    const char *schema, const char *table, bool exec,
                                    json_object *resp, dm_error *err);

/* verify TASK [-s SOURCE ...] (docs/verify.md, "dmctl verify"): `dmhost verify` of the task on each
 * of its sources bound here (only[n_only] when given: each must be bound here), its fix statements
 * answered when fix_sql. The task's file is loaded afresh and no lock is held while it runs, so
 * query-status and pause-task are served meanwhile. resp: "task", "verify" (equal, different,
 * error: the worst), "quiet" (false when a subtask was running: its source is then compared at
 * the sync's checkpoint, "at_checkpoint") and "reports" (per source the JSON of `dmhost verify
 * --json` with "stage", "quiet", a "warning" when it runs but not its sync yet, "fix_sql" the
 * statements). -1 with *err when the result is error (the reports
 * stay in resp), DM_ERR_NOT_FOUND for an unknown task or source. */
typedef struct dmh_registry_verify_opts {
  const char *const *only;
  size_t n_only;
  long chunk_rows, threads;
  long checkpoint_wait_s, rechecks; /* a running sync's compare at its checkpoint (0: defaults) */
  bool fix_sql;
} dmh_registry_verify_opts;
int dmh_registry_task_verify(dmh_registry *r, const char *name, const dmh_registry_verify_opts *o,
                             json_object *resp, dm_error *err);

#endif /* DMH_REGISTRY_H */
