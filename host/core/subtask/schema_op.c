/*
 * binlog-schema on one subtask (supervisor.h, dmh_subtask_schema_op): DM's OperateSchema. DM's
 * worker allows it only on a Paused subtask whose current unit is the syncer (its SubTask's
 * OperateSchema), because the tracker must not move under the command; here the subtask's commands
 * are held meanwhile, so no resume, pause, stop or swap can start until the slot returned.
 */
#include <stdio.h>
#include <string.h>

#include "dmhost/sdk.h"
#include "supervisor_internal.h"

int dmh_subtask_schema_op(dmh_subtask *st, const dm_schema_req *req, json_object **items,
                          dm_error *err) {
  *items = NULL;
  pthread_mutex_lock(&st->cmd_lock);
  pthread_mutex_lock(&st->state_lock);
  dmh_stage stage = st->stage;
  sup_unit *u = st->n_units > 0 ? &st->units[st->cur] : NULL;
  pthread_mutex_unlock(&st->state_lock);
  const char *source = st->source ? st->source->source_id : "?";
  int rc = -1;
  if (stage != DMH_STAGE_PAUSED) {
    /* DM's ErrWorkerNotPausedStage, with the task and source it was asked of */
    dm_error_set(err, DM_ERR_SCHEMA_STAGE, NULL,
                 "binlog-schema: task %s on source %s: current stage is %s but not paused, "
                 "invalid",
                 st->name, source, dmh_stage_name(stage));
  } else if (!u || u->kind != DM_UNIT_SYNC) {
    /* DM's ErrWorkerOperSyncUnitOnly */
    dm_error_set(err, DM_ERR_SCHEMA_UNIT, NULL,
                 "binlog-schema: task %s on source %s: such operation is only available for "
                 "syncer, but now syncer is not running. current unit is %s",
                 st->name, source, u ? u->section : "none");
  } else if (!u->self) {
    dm_error_set(err, DM_ERR_SCHEMA_UNIT, NULL,
                 "binlog-schema: task %s on source %s: its sync unit has no open instance (it "
                 "failed to start): resume the task, and pause it once its unit is Sync",
                 st->name, source);
  } else if (!dmh_unit_schema_op(u->desc)) {
    char label[200];
    dm_error_set(err, DM_ERR_SCHEMA_UNSUPPORTED, NULL,
                 "binlog-schema: task %s on source %s: the %s has no schema_op slot (its ABI "
                 "%u.%u; the slot came with ABI 1.2)",
                 st->name, source, sup_unit_label(u, label, sizeof label),
                 (unsigned)u->desc->abi_major, (unsigned)u->desc->abi_minor);
  } else {
    rc = sup_unit_schema_op(st, u, req, items, err);
  }
  pthread_mutex_unlock(&st->cmd_lock);
  return rc;
}
