/*
 * The subtask supervisor: one subtask is one task running against one source, a chain of units
 * (by task mode) driven through DM's stage machine.
 *
 *   New --start--> Running --pause--> Pausing --(unit returned)--> Paused
 *   Paused/Stopped --resume--> Resuming --> Running
 *   any live stage --stop/kill--> Stopping --> Stopped
 *   Running --(last unit finished)--> Finished
 *   Running --(unit returned errors)--> Paused (with result.errors; auto-resume if all resumable)
 *
 * Rules that hold under any interleaving of commands (tests/supervisor checks each):
 *  - one unit instance never runs two process/resume calls at once: a single runner thread per
 *    subtask makes them, and a command that needs the unit idle joins that thread first;
 *  - pause returns only after the unit's process/resume has returned; resume is accepted only from
 *    Paused or Stopped (never from Pausing);
 *  - commands are serialized per subtask (cmd_lock); the stage is read and written under
 *    state_lock, which no unit call is ever made under;
 *  - stop and kill are bounded: after stop-timeout the unit's kill slot is called, after another
 *    stop-timeout the runner thread is abandoned (its library pinned, never unloaded) and the
 *    subtask is Stopped with DM_ERR_UNIT_ABANDONED.
 *
 * A relay is a subtask too, of the single unit kind relay, owned per source (see
 * dmh_subtask_create_relay); the subtasks of that source wait on it between load and sync.
 */
#ifndef DMH_SUPERVISOR_H
#define DMH_SUPERVISOR_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "dmhost/error.h"
#include "dmhost/unit.h"
#include "shard_coord.h"
#include "status.h"

typedef enum dmh_stage {
  DMH_STAGE_NEW = 0,
  DMH_STAGE_RUNNING,
  DMH_STAGE_PAUSED,
  DMH_STAGE_STOPPED,
  DMH_STAGE_FINISHED,
  DMH_STAGE_PAUSING,
  DMH_STAGE_RESUMING,
  DMH_STAGE_STOPPING,
} dmh_stage;

/* DM's stage names: "New", "Running", "Paused", ... */
const char *dmh_stage_name(dmh_stage stage);
/* The stage dmh_stage_name calls `name`, or -1. */
int dmh_stage_parse(const char *name);
/* DM's OpenAPI TaskStage (Stopped, Running, Finished, Paused) of a stage: created and not started
 * is Stopped, a move between stages shows where it goes (Pausing Paused, Resuming Running, Stopping
 * Stopped). The one mapping: the HTTP API's answers and the task list's stage filter use it. */
const char *dmh_stage_dm_task_stage(dmh_stage stage);

typedef struct dmh_subtask dmh_subtask;

typedef struct dmh_subtask_opts {
  const dmh_task_config *task;     /* borrowed; must outlive the subtask; NULL for a relay */
  const dmh_source_config *source; /* borrowed; must outlive the subtask */
  const char *work_root;  /* folder for the units' work dirs (created): <work_root>/<kind> */
  const char *plugin_dir; /* where default unit builds are; NULL: the installed folder */
  dmh_subtask *relay;     /* the source's relay subtask when enable-relay, else NULL; borrowed */
  /* Overrides for tests (NULL/0: from the config files). */
  const char *unit_paths[DMH_UNIT_SLOTS]; /* by the task's slots (config.h) */
  const dmh_supervisor_config *sup;
  /* Load every unit build from a private copy after the loader's trust check
   * (dmh_load_opts.unique_copy + trusted_only): the daemon sets it, `dmhost run` (a user running
   * their own files) does not. */
  bool trusted_only;
  /* With trusted_only: where builds may come from (loader.h, dmh_unit_folders), for the units
   * created here and every later swap-unit; borrowed, must outlive the subtask (the registry's).
   * NULL: any folder. */
  const struct dmh_unit_folders *unit_folders;
  /* The fencing token handed to the units (dm_host_services.fencing_token): 0 = no fencing, the
   * single-machine default. A cluster worker passes its binding's token (the create_revision of
   * the binding key), which grows each time the subtask moves to another worker; the units refuse
   * to commit once a higher token has reached the target (docs/sdk.md "Fencing"). */
  uint64_t fencing_token;
  /* The worker running the subtask, DM's `worker` label on its metrics (copied; NULL: ""): the
   * daemon's name (serve: "dmhost@<hostname>"; a cluster worker: its --name). */
  const char *worker_name;
  /* The process's coordinator of shard DDL locks (shard_coord.h), handed to every unit's context;
   * borrowed, must outlive the subtask. NULL: none (the shard services answer errors). */
  const dmh_shard_coord *shard;
} dmh_subtask_opts;

/* Load the units' libraries (checked; nothing of them runs yet). Returns NULL with *err filled. */
dmh_subtask *dmh_subtask_create(const dmh_subtask_opts *opts, dm_error *err);
/* The relay of a source: a subtask whose chain is the relay unit alone. */
dmh_subtask *dmh_subtask_create_relay(const dmh_subtask_opts *opts, dm_error *err);

/* New -> Running: init every unit (with init-timeout; a failure closes those before it), ask
 * is_fresh_task from the last unit backwards, close the units before the first non-fresh one, and
 * start the runner. Returns 0 or -1 with *err (the subtask is then Stopped). */
int dmh_subtask_start(dmh_subtask *st, dm_error *err);
/* Running -> Paused; Paused-by-error -> manually Paused (no auto-resume). Blocks until the unit
 * has returned. DM_ERR_STAGE from other stages. */
int dmh_subtask_pause(dmh_subtask *st, dm_error *err);
/* Paused/Stopped -> Running. From Stopped the units are initialised again from their checkpoints.
 * DM_ERR_STAGE from other stages. */
int dmh_subtask_resume(dmh_subtask *st, dm_error *err);
/* Any stage but Stopped -> Stopped, closing the units (their checkpoints saved). Bounded. */
int dmh_subtask_stop(dmh_subtask *st, dm_error *err);
/* Like stop, but the units are killed (no graceful flush). Bounded. */
int dmh_subtask_kill(dmh_subtask *st, dm_error *err);

/* Replace the unit of kind `name` ("sync", a custom kind) by the build at `path` at a safe point:
 * load and check it (a refusal leaves the old build running, DM_ERR_SWAP with the loader's
 * reason), pause, close the old instance, init the new one, and resume it from the checkpoint if
 * the subtask was running. */
int dmh_subtask_swap_unit(dmh_subtask *st, const char *name, const char *path, dm_error *err);

/* update-task (update.c): the subtask takes the settings of `next`, a file of the same task
 * (config_update.h says what may differ), with its commands held (dmh_subtask_hold_commands).
 * check: is it truly Paused (or New when `new_ok`: created, never started, no instance open), and
 * has every open unit whose section differs an update slot? 0, or -1 with DM_ERR_UPDATE_STAGE or
 * DM_ERR_UPDATE_UNSUPPORTED; nothing changes. apply: the host's answers (rules, sections) switch
 * to `next`, then update is called on each open instance in chain order; when one refuses (-1, or
 * a setting it did not read), the subtask is switched back and update is called again on the
 * instances already updated: -1 with DM_ERR_UPDATE_FAILED carrying the unit's error (or the
 * host's DM_ERR_CONFIG_UNKNOWN for a setting it never read) in message and raw cause. `next`
 * becomes the subtask's task (as dmh_subtask_opts.task, it must outlive the subtask), and so must
 * the one it replaces: a unit may still hold strings read from it. */
int dmh_subtask_update_check(dmh_subtask *st, const dmh_task_config *next, bool new_ok,
                             dm_error *err);
int dmh_subtask_update_apply(dmh_subtask *st, const dmh_task_config *next, dm_error *err);

/* binlog-schema (schema_op.c): the schema_op slot (unit.h, ABI 1.2) of the subtask's sync unit,
 * with its commands held. DM's rules: the subtask must be Paused (DM_ERR_SCHEMA_STAGE) and its
 * current unit the sync (DM_ERR_SCHEMA_UNIT); a build without the slot: DM_ERR_SCHEMA_UNSUPPORTED.
 * 0 with the answer's items in *items (a JSON array of strings, the caller's), or -1 with *err. */
int dmh_subtask_schema_op(dmh_subtask *st, const dm_schema_req *req, json_object **items,
                          dm_error *err);
/* `dmctl validation` (validation_op.c): the validation_op slot (unit.h, ABI 1.3) of the subtask's
 * sync unit, with its commands held, on a Running or Paused subtask (the unit's process may run
 * beside it). Its current unit not the sync, or its stage neither: DM_ERR_VALIDATION_UNIT; a build
 * without the slot: DM_ERR_VALIDATION_UNSUPPORTED. 0 with the items (JSON texts) in *items (a JSON
 * array of strings, the caller's), or -1 with *err. */
int dmh_subtask_validation_op(dmh_subtask *st, const dm_validation_req *req, json_object **items,
                              dm_error *err);

dmh_stage dmh_subtask_stage(dmh_subtask *st);
/* Wait until the stage is one of Paused/Stopped/Finished (or `timeout_ms` passes; <0: forever).
 * Returns the stage seen. */
dmh_stage dmh_subtask_wait_settled(dmh_subtask *st, int timeout_ms);
/* Has the subtask been paused by a user (as opposed to by an error)? */
bool dmh_subtask_manually_paused(dmh_subtask *st);

/* query-status of the subtask with DM's field names: name, stage, unit, result{isCanceled,
 * errors[]}, unresolvedDDLLockID, and the unit's own status under "<kind>Status" ("dumpStatus",
 * "loadStatus", "syncStatus", "relayStatus", "my-sinkStatus"), plus "progress" {percent, rate,
 * unit, eta}. Caller owns it. */
json_object *dmh_subtask_status_json(dmh_subtask *st);

/* The last status the unit of `kind` reported for the well-known position key (DM_STATUS_*), read
 * now. Returns false if the unit is not in the chain or reported no such position. */
bool dmh_subtask_unit_position(dmh_subtask *st, dm_unit_kind kind, const char *key,
                               dm_position *out);

/* What the relay catch-up wait asks a relay subtask, read from ONE call of its unit's status slot.
 * Returns false (nothing read) when the relay unit is not live. */
typedef struct dmh_relay_progress {
  bool has_written;
  dm_position written; /* DM_STATUS_RELAY_BINLOG: how far it has written the relay log */
  bool caught_up;      /* DM_STATUS_RELAY_CATCH_UP: it has caught up with the source */
  bool has_master;
  dm_position master; /* DM_STATUS_MASTER_BINLOG: the source's position it last saw */
} dmh_relay_progress;
bool dmh_subtask_relay_progress(dmh_subtask *relay, dmh_relay_progress *rp);

/* A subtask at a glance: the values of dmh_subtask_status_json, typed (which renders them).
 * dmh_subtask_summary reads the subtask alone (no unit call): for `dmhost run`'s exit and
 * query-status's list of tasks. dmh_subtask_progress adds the current unit's progress from ONE
 * call of its status slot (which samples its rate, as query-status does): run's progress line. */
typedef struct dmh_subtask_view {
  dmh_stage stage;
  const char *unit;         /* DM's name of the current unit: "Dump", "Load", ... "Custom" */
  bool manual_pause;        /* pausedManually */
  bool waiting_relay;       /* waitingRelayCatchUp */
  bool auto_resume_pending; /* autoResumeIn is there: paused by an error auto-resume will retry */
  double auto_resume_in;    /* seconds to it */
  bool canceled;            /* result.isCanceled */
  int n_errors;             /* result.errors */
  dm_error errors[DM_RESULT_MAX_ERRORS];
  char error_ctx[DM_RESULT_MAX_ERRORS][192];
  bool has_progress; /* dmh_subtask_progress: the current unit is live and reported progress */
  dmh_progress progress;
} dmh_subtask_view;
void dmh_subtask_summary(dmh_subtask *st, dmh_subtask_view *v);
void dmh_subtask_progress(dmh_subtask *st, dmh_subtask_view *v);

/* Hold off every command until released: a consistent view for tests and the control surface
 * (no command is half-done while held; only the runner itself may still move Running on). */
void dmh_subtask_hold_commands(dmh_subtask *st);
void dmh_subtask_release_commands(dmh_subtask *st);

/* Stop (bounded) and free. */
void dmh_subtask_destroy(dmh_subtask *st);

#endif /* DMH_SUPERVISOR_H */
