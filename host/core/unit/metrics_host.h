/*
 * The host's own metrics (docs/metrics.md): DM's task stage and exit-with-error counters, and
 * dmhost's auto-resume, hot-swap and unit call durations. Each takes the ctx of a unit of the
 * subtask: its registry, its series owner and its task and source_id labels.
 */
#ifndef DMH_METRICS_HOST_H
#define DMH_METRICS_HOST_H

#include <stdbool.h>

#include "unit_ctx.h"

/* dm_worker_task_state{task,source_id}: DM's stage number (New 1 ... Stopping 8). */
void dmh_metrics_task_stage(dm_ctx *c, int dm_stage);
/* The unit returned errors from process/resume: DM's dm_<unit>_exit_with_error_count for a
 * built-in kind, with DM's label resumable_err "true" when every error is resumable (the class
 * the supervisor's auto-resume goes by) and "false" otherwise, and
 * dmhost_unit_exit_with_error_total{unit} for every unit. */
void dmh_metrics_unit_exit_error(dm_ctx *c, dm_unit_kind kind, const char *unit, bool resumable);
/* A process/resume call begins: DM's exit counters of a built-in kind exist from here at 0 (both
 * resumable_err values, as DM adds 0 to them when its unit's Process starts), so the first error
 * is a change that DM's alert rules (`changes(...[1m]) > 0`) see. */
void dmh_metrics_unit_exit_start(dm_ctx *c, dm_unit_kind kind, const char *unit);
/* dmhost_auto_resume_total: the supervisor tried an auto-resume. */
void dmh_metrics_auto_resume(dm_ctx *c);
/* dmhost_unit_swaps_total{unit,result}: a swap-unit ended, ok or refused. */
void dmh_metrics_unit_swap(dm_ctx *c, const char *unit, bool ok);
/* dmhost_unit_init_duration_seconds / dmhost_unit_process_duration_seconds{unit}. */
void dmh_metrics_unit_duration(dm_ctx *c, const char *unit, bool init, double seconds);

/*
 * DM's dm_worker_operate_error{worker,type}: an operation on a subtask or relay was refused or
 * failed on the worker `worker` (NULL: ""), `type` one of DM's names below. A process series
 * (DM keeps it for the worker's life: no task label, it outlives the subtask). Counted by the
 * supervisor (each command's failure) and the cluster worker (a source it could not take up).
 */
#define DMH_OP_ERR_BEFORE_ANY "BeforeAnyOp"   /* the subtask could not be created (its units) */
#define DMH_OP_ERR_START "Start"              /* a subtask's first start */
#define DMH_OP_ERR_PAUSE "Pause"              /* pause-task */
#define DMH_OP_ERR_RESUME "Resume"            /* resume-task */
#define DMH_OP_ERR_AUTO_RESUME "AutoResume"   /* the supervisor's auto-resume */
#define DMH_OP_ERR_UPDATE "Update"            /* update-task */
#define DMH_OP_ERR_STOP "Stop"                /* stop-task */
#define DMH_OP_ERR_SOURCE_BOUND "SourceBound" /* a cluster worker's new binding */
#define DMH_OP_ERR_RELAY_SOURCE "RelaySource" /* a relay could not be created or started */
#define DMH_OP_ERR_PAUSE_RELAY "PauseRelay"   /* pause-relay */
#define DMH_OP_ERR_RESUME_RELAY "ResumeRelay" /* resume-relay */
#define DMH_OP_ERR_STOP_RELAY "StopRelay"     /* stop-relay */
void dmh_metrics_operate_error(const char *worker, const char *type);

#endif /* DMH_METRICS_HOST_H */
