/*
 * update-task on one subtask (supervisor.h, dmh_subtask_update_*): a truly paused subtask takes the
 * settings of a new file of the same task. The host's answers to the units (the rules behind
 * table_allowed, route_table and event_ignored, the section behind the cfg_* lookups) switch to
 * the new file, then each open instance's update slot re-reads its section, on the command's
 * thread, with the subtask's commands held: no process/resume runs and none can start meanwhile.
 * All or nothing: a unit that cannot take a changed section (no update slot) is refused before
 * anything changes; a unit whose update fails (or leaves a setting unread) switches the subtask
 * back, and the instances updated before it are updated again with the old section.
 */
#include <stdio.h>
#include <string.h>

#include "config_update.h"
#include "dmhost/sdk.h"
#include "log.h"
#include "metrics_host.h"
#include "supervisor_internal.h"

static bool upd_open(sup_unit *u) {
  pthread_rwlock_rdlock(&u->life);
  bool open = u->self != NULL;
  pthread_rwlock_unlock(&u->life);
  return open;
}

static int upd_check(dmh_subtask *st, const dmh_task_config *next, bool new_ok, dm_error *err) {
  pthread_mutex_lock(&st->state_lock);
  dmh_stage stage = st->stage;
  pthread_mutex_unlock(&st->state_lock);
  /* Paused is set only once the runner has returned (a pause that timed out stays Pausing), and
   * the commands held keep it so: the same rule as resume's. New: created, never started (a task
   * restored as paused): no instance is open yet. */
  if (stage != DMH_STAGE_PAUSED && !(stage == DMH_STAGE_NEW && new_ok)) {
    dm_error_set(err, DM_ERR_UPDATE_STAGE, NULL,
                 "update-task: task %s on source %s is %s; update-task is accepted only when every "
                 "subtask is Paused: `dmctl pause-task %s` first",
                 st->name, st->source->source_id, dmh_stage_name(stage), st->name);
    return -1;
  }
  for (int i = 0; i < st->n_units; i++) {
    sup_unit *u = &st->units[i];
    config_setting_t *now = u->ctx->section, *then = dmh_task_section_named(next, u->section);
    if (!upd_open(u) || u->desc->ops.update || dmh_cfg_setting_equal(now, then))
      continue;
    char label[200];
    const config_setting_t *at = then ? then : now;
    dm_error_set(err, DM_ERR_UPDATE_UNSUPPORTED, NULL,
                 "update-task: the %s of task %s (source %s) has no update slot and its section "
                 "`%s` changed (%s:%d): stop and start the task to apply it, or leave the "
                 "section as it is; nothing was changed",
                 sup_unit_label(u, label, sizeof label), st->name, st->source->source_id,
                 u->section, then ? next->path : u->ctx->cfg_file,
                 at ? config_setting_source_line(at) : 1);
    return -1;
  }
  return 0;
}

/* Point the host's answers to the settings of `task` (its chain spec cs, the same chain as the
 * subtask's: update-task changes no unit) and `rules`. No unit runs (commands held). */
static void upd_switch(dmh_subtask *st, const dmh_task_config *task, const dmh_chain_spec *cs,
                       dmh_rules *rules) {
  for (int i = 0; i < st->n_units; i++) {
    sup_unit *u = &st->units[i];
    /* status may read the context beside us: not while it changes */
    pthread_rwlock_wrlock(&u->life);
    dmh_ctx_set_task_part(u->ctx, cs, i, rules);
    pthread_rwlock_unlock(&u->life);
  }
  pthread_mutex_lock(&st->state_lock);
  st->task = task;
  st->rules = rules;
  st->sup = task->sup;
  pthread_mutex_unlock(&st->state_lock);
}

/* update on one open instance, then the host's check for settings it never read. */
static int upd_call(dmh_subtask *st, sup_unit *u, dm_error *err) {
  char label[200], ctxs[192];
  sup_unit_label(u, label, sizeof label);
  sup_error_context(st, u, "update", ctxs, sizeof ctxs);
  dmh_ctx_reset_seen(u->ctx);
  memset(err, 0, sizeof *err);
  if (u->desc->ops.update(u->self, err) != 0) {
    if (err->code == 0)
      dm_error_set(err, DM_ERR_UNIT_INIT, NULL, "update failed without saying why");
    dmh_log(DM_LOG_ERROR, ctxs, "update refused: %s", err->message);
    return -1;
  }
  if (dmh_ctx_check_unread(u->ctx, u->section, label, err) < 0) {
    dmh_log(DM_LOG_ERROR, ctxs, "%s", err->message);
    return -1;
  }
  return 0;
}

static int upd_apply(dmh_subtask *st, const dmh_task_config *next, dm_error *err) {
  const dmh_task_instance *inst = dmh_task_instance_for(next, st->source->source_id);
  if (!inst) {
    dm_error_set(err, DM_ERR_UPDATE_IDENTITY, NULL,
                 "%s: no entry of mysql-instances reads source %s", next->path,
                 st->source->source_id);
    return -1;
  }
  pthread_mutex_lock(&st->state_lock);
  const dmh_task_config *old_task = st->task;
  dmh_rules *old_rules = st->rules;
  pthread_mutex_unlock(&st->state_lock);
  /* both read the source's entry of mysql-instances (checked above; the old one at creation) */
  dmh_chain_spec next_cs, old_cs;
  if (dmh_chain_spec_task(&next_cs, next, st->source, err) < 0 ||
      dmh_chain_spec_task(&old_cs, old_task, st->source, err) < 0)
    return -1;
  dmh_rules *rules = dmh_rules_new(inst, err);
  if (!rules)
    return -1;

  upd_switch(st, next, &next_cs, rules);
  bool updated[SUP_MAX_UNITS] = {false};
  int failed = -1;
  dm_error uerr;
  for (int i = 0; i < st->n_units && failed < 0; i++) {
    sup_unit *u = &st->units[i];
    if (!upd_open(u) || !u->desc->ops.update)
      continue; /* its section is unchanged (dmh_subtask_update_check); the rules are the host's */
    if (upd_call(st, u, &uerr) < 0)
      failed = i;
    else
      updated[i] = true;
  }
  if (failed < 0) {
    dmh_rules_free(old_rules);
    dmh_log(DM_LOG_INFO, st->name, "source %s: settings updated from %s", st->source->source_id,
            next->path);
    return 0;
  }
  /* all or nothing: the old settings again, also for the instances that took the new ones */
  upd_switch(st, old_task, &old_cs, old_rules);
  dmh_rules_free(rules);
  for (int i = 0; i < failed; i++) {
    dm_error again;
    if (updated[i] && upd_call(st, &st->units[i], &again) < 0)
      dmh_log(DM_LOG_ERROR, st->name,
              "the %s unit refused its old settings again after a failed update-task: %s",
              st->units[i].section, again.message);
  }
  char label[200], cause[DM_ERROR_MESSAGE_MAX + 16];
  snprintf(cause, sizeof cause, "code %d: %s", uerr.code, uerr.message);
  dm_error_set(err, DM_ERR_UPDATE_FAILED, cause,
               "update-task: the %s of task %s (source %s) refused the new settings: %s; the old "
               "settings stay in force",
               sup_unit_label(&st->units[failed], label, sizeof label), st->name,
               st->source->source_id, uerr.message);
  return -1;
}

/* A refused or failed update-task counts DM's dm_worker_operate_error{type="Update"}. */
int dmh_subtask_update_check(dmh_subtask *st, const dmh_task_config *next, bool new_ok,
                             dm_error *err) {
  int rc = upd_check(st, next, new_ok, err);
  if (rc < 0)
    sup_op_failed(st, DMH_OP_ERR_UPDATE, DMH_OP_ERR_UPDATE);
  return rc;
}

int dmh_subtask_update_apply(dmh_subtask *st, const dmh_task_config *next, dm_error *err) {
  int rc = upd_apply(st, next, err);
  if (rc < 0)
    sup_op_failed(st, DMH_OP_ERR_UPDATE, DMH_OP_ERR_UPDATE);
  return rc;
}
