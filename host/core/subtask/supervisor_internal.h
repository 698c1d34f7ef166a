/*
 * Inside the supervisor: shared by supervisor.c (stage machine and commands), unit_call.c (the
 * wrappers around every call into a unit), catchup.c (the relay catch-up wait) and swap.c.
 *
 * Locking, in the order they may be taken:
 *   cmd_lock   serializes commands (start, pause, resume, stop, kill, swap, auto-resume);
 *   u->life    (rwlock per unit) write-held while an instance is created or destroyed, read-held by
 *              status readers, so status never runs on a closed instance;
 *   state_lock guards the stage and every field marked [state] below; no unit call is made while
 *              holding it.
 * Fields marked [cmd] are only touched with cmd_lock held; [runner] only by the runner thread
 * while it lives, and by commands after they joined it.
 */
#ifndef DMH_SUPERVISOR_INTERNAL_H
#define DMH_SUPERVISOR_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>

#include "loader.h"
#include "rules.h"
#include "status.h"
#include "stop_token.h"
#include "supervisor.h"
#include "unit_ctx.h"

#define SUP_MAX_UNITS DMH_CHAIN_MAX
#define SUP_MAX_ERRORS DM_RESULT_MAX_ERRORS

typedef struct sup_unit {
  dm_unit_kind kind;
  dmh_unit_lib *lib;              /* [cmd] one reference */
  const dm_unit_descriptor *desc; /* [cmd] of lib */
  dm_ctx *ctx;                    /* created with the subtask, kept across re-inits and swaps */
  pthread_rwlock_t life;
  void *self;        /* [life] NULL unless initialised */
  bool started;      /* [cmd/runner] process ran on this instance: the next call is resume */
  bool abandoned;    /* [state] its thread was abandoned: never call it again */
  dmh_rate rate;     /* [state] progress samples for rate and ETA */
  uint32_t handover; /* [cmd] dmh_unit_handover of desc */
  char section[DMH_KIND_NAME_MAX]; /* the kind's name: its section, work folder, <name>Status */
} sup_unit;

struct dmh_subtask {
  char name[128];   /* task name, or "relay" */
  char worker[128]; /* the worker running it (dmh_subtask_opts.worker_name), or "" */
  const struct dmh_unit_folders *unit_folders; /* dmh_subtask_opts.unit_folders, for swap-unit */
  const dmh_task_config *task;
  const dmh_source_config *source;
  dmh_supervisor_config sup;
  dmh_subtask *relay;
  bool is_relay;
  dmh_rules *rules; /* compiled from the task's entry for this source */

  pthread_mutex_t cmd_lock;
  pthread_mutex_t state_lock;
  pthread_cond_t state_cv;

  dmh_stage stage; /* [state] */
  sup_unit units[SUP_MAX_UNITS];
  int n_units;
  int cur;            /* [state] index of the current unit */
  bool finished;      /* [state] the last unit finished */
  bool waiting_relay; /* [state] between load and sync, waiting for the relay */

  /* the runner: at most one thread calls process/resume; joined before the next one starts */
  pthread_t runner;     /* [cmd] */
  bool runner_joinable; /* [cmd] */
  dmh_stop_token token;
  double run_started; /* [state] when the current run began (auto-resume backoff reset) */

  /* the result of the last run (DM's result) */
  int n_errors;                        /* [state] */
  dm_error errors[SUP_MAX_ERRORS];     /* [state] */
  char error_ctx[SUP_MAX_ERRORS][192]; /* [state] */
  bool canceled;                       /* [state] result.isCanceled */

  bool manual_pause;     /* [state] paused by a user: auto-resume leaves it alone */
  bool paused_by_error;  /* [state] */
  bool errors_resumable; /* [state] */
  uint32_t backoff_ms;   /* [state] the next auto-resume delay */
  double auto_resume_at; /* [state] monotonic seconds; 0 = none scheduled */
  bool shutting_down;    /* [state] */
  bool pause_detached;   /* [state] a pause timed out: the runner finishes it on return */
  pthread_t auto_thread;
  bool auto_thread_started;

  uint64_t metrics_owner; /* the subtask's series (metrics.h), dropped when it is freed */

  dm_position handoff;   /* [state] what the last finished unit reported */
  bool has_handoff;      /* [state] */
  dm_position safe_exit; /* [state] the safe-mode exit the last finished unit reported */
  bool has_safe_exit;    /* [state] */
};

/* unit_call.c */
int sup_unit_init(dmh_subtask *st, sup_unit *u, dm_error *err);
/* Close a live instance (not abandoned) and forget it. */
void sup_unit_close(dmh_subtask *st, sup_unit *u);
void sup_unit_kill(dmh_subtask *st, sup_unit *u);
int sup_unit_is_fresh(dmh_subtask *st, sup_unit *u, bool *fresh, dm_error *err);
/* Where a unit that finished says its work ends (end_position of ABI 1.1, metaBinlog and
 * metaSafeModeExit from the status of an ABI 1.0 unit): true with *end (and *exit, *has_exit),
 * false when it gives none. On the runner thread, right after process/resume finished. */
bool sup_unit_end_position(dmh_subtask *st, sup_unit *u, dm_position *end, dm_position *exit,
                           bool *has_exit);
void sup_unit_pause(dmh_subtask *st, sup_unit *u);
/* process or resume (by u->started), result validated. */
void sup_unit_run(dmh_subtask *st, sup_unit *u, dm_result *r);
/* schema_op (ABI 1.2) on a live instance that has the slot: its items as a JSON array in *items,
 * or -1 with *err stamped and logged. */
int sup_unit_schema_op(dmh_subtask *st, sup_unit *u, const dm_schema_req *req, json_object **items,
                       dm_error *err);
/* validation_op (ABI 1.3) on an instance that has the slot, running or not: the life lock
 * read-held (no close beside it); the same answer as sup_unit_schema_op. -1 with DM_ERR_VALIDATION_UNIT
 * when the instance is gone. */
int sup_unit_validation_op(dmh_subtask *st, sup_unit *u, const dm_validation_req *req,
                           json_object **items, dm_error *err);
/* Status into s (initialised by the caller); false if the instance is not live. */
bool sup_unit_status(sup_unit *u, dmh_status *s);
const char *sup_unit_label(sup_unit *u, char *buf, size_t len);
void sup_error_context(dmh_subtask *st, sup_unit *u, const char *slot, char *buf, size_t len);
/* Whether retrying can help the n errors a unit returned: all of them resumable (what auto-resume
 * and DM's resumable_err label go by). */
bool sup_errors_resumable(const dm_error *errs, int n);

/* catchup.c: between load and sync. 0 caught up; 1 canceled; -1 error in *err. */
int sup_wait_relay_catchup(dmh_subtask *st, const dm_position *target, dm_error *err);
/* relay_hold.c: with the relay on, the task's reader file while dump and load run. Before the
 * dump runs: the relay's current file, unless the task holds a file already. When the dump's
 * position is known: its file. 0, or -1 with *err (the file could not be written). */
int sup_relay_hold_begin(dmh_subtask *st, dm_error *err);
int sup_relay_hold_at(dmh_subtask *st, const dm_position *p, dm_error *err);

/* supervisor.c: an operation on the subtask was refused or failed: DM's dm_worker_operate_error
 * of the subtask's worker, type task_op (a task's subtask) or relay_op (a relay). */
void sup_op_failed(dmh_subtask *st, const char *task_op, const char *relay_op);

/* supervisor.c, for swap.c: with cmd_lock held. */
int sup_pause_locked(dmh_subtask *st, bool manual, dm_error *err);
int sup_resume_locked(dmh_subtask *st, bool only_if_auto, dm_error *err);

#endif /* DMH_SUPERVISOR_INTERNAL_H */
