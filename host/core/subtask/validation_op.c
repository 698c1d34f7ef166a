/*
 * `dmctl validation` on one subtask (supervisor.h, dmh_subtask_validation_op): the continuous
 * validator of its sync unit (DM's SubTask StartValidator and the validator's queries). Unlike
 * binlog-schema it runs on a Running subtask too: DM starts the validator with the syncer and lets
 * it be started, stopped and asked while the sync runs. The subtask's commands are held meanwhile,
 * so no pause, resume, update, swap or stop starts until the slot returned; the instance's life
 * lock is read-held over the call (sup_unit_validation_op), as status holds it, so a runner that
 * closes its unit waits for it.
 */
#include <stdio.h>
#include <string.h>

#include "dmhost/sdk.h"
#include "supervisor_internal.h"

int dmh_subtask_validation_op(dmh_subtask *st, const dm_validation_req *req, json_object **items,
                              dm_error *err) {
  *items = NULL;
  pthread_mutex_lock(&st->cmd_lock);
  pthread_mutex_lock(&st->state_lock);
  dmh_stage stage = st->stage;
  sup_unit *u = st->n_units > 0 ? &st->units[st->cur] : NULL;
  pthread_mutex_unlock(&st->state_lock);
  const char *source = st->source ? st->source->source_id : "?";
  int rc = -1;
  if (!u || u->kind != DM_UNIT_SYNC) {
    /* DM's worker: "cannot start validator without syncer"; its queries: ErrValidatorNotFound */
    dm_error_set(err, DM_ERR_VALIDATION_UNIT, NULL,
                 "validation: task %s on source %s: the validator runs with the sync unit, but "
                 "current unit is %s (validator not found for task %s with source %s)",
                 st->name, source, u ? u->section : "none", st->name, source);
  } else if (stage != DMH_STAGE_RUNNING && stage != DMH_STAGE_PAUSED) {
    dm_error_set(err, DM_ERR_VALIDATION_UNIT, NULL,
                 "validation: task %s on source %s: current stage is %s, the validator is asked "
                 "on a Running or Paused sync only",
                 st->name, source, dmh_stage_name(stage));
  } else if (!dmh_unit_validation_op(u->desc)) {
    char label[200];
    dm_error_set(err, DM_ERR_VALIDATION_UNSUPPORTED, NULL,
                 "validation: task %s on source %s: the %s has no validation_op slot (its ABI "
                 "%u.%u; the slot came with ABI 1.3)",
                 st->name, source, sup_unit_label(u, label, sizeof label),
                 (unsigned)u->desc->abi_major, (unsigned)u->desc->abi_minor);
  } else {
    rc = sup_unit_validation_op(st, u, req, items, err);
  }
  pthread_mutex_unlock(&st->cmd_lock);
  return rc;
}
