/*
 * DM's start of a task with options (its OpenAPI POST /api/v1/tasks/{task-name}/start, body
 * StartTaskRequest; DM v6 creates a task stopped, POST /api/v1/tasks, then starts it): resume-task
 * with remove_meta, start_time and safe_mode_duration (registry.h, dmh_task_opts), done by what
 * start-task does with them:
 *
 *   remove_meta         the task's meta dropped first (registry_meta.c, DM's removeMetaData);
 *   start_time          the position of the time on the source (registry_start_time.c), made the
 *                       sync's meta and kept with the task (state.json), the old meta dropped
 *                       first (a sync with a checkpoint would go on from it);
 *   safe_mode_duration  the sync's setting safe-mode-duration for this start, over the file's: the
 *                       sync's timed safe mode after a start without a clean stop (sync_safe.c),
 *                       which a first start is. It lives in the task's loaded config, so the
 *                       automatic resumes of this daemon's life take it too; a restart of the
 *                       daemon reads the file again (DM keeps it in etcd until its window passes).
 *
 * A cluster's worker hands the position its master found (start_pos, dropped first with
 * remove_meta as start-task does) and `prepared`, and vouches with first_start that the task
 * never ran (its leader checked the stage keys), for a task it restored after a restart.
 *
 * Only on the first start of a task created stopped (never_run: it has not run in this daemon's
 * life). DM applies them to any start; here a task that has run is refused naming the option and
 * what to do instead: its units hold positions and checkpoints the options would contradict (a
 * paused sync resumes from its committed checkpoint and its open instance; dropping the meta or
 * moving the start under it would apply changes twice or skip some), and a resume after a clean
 * pause needs no safe mode (the checkpoint is committed with every batch, docs/sync.md).
 */
#include "registry_internal.h"

#include <string.h>

#include "dmhost/sdk.h"
#include "log.h"

/* The refusal of option `opt` (DM's member `member`) on a task that has run. */
static int so_has_run(const reg_task *t, const char *opt, const char *member, const char *todo,
                      dm_error *err) {
  dm_error_set(err, DM_ERR_STAGE, NULL,
               "resume-task %s %s (DM's start's %s): the task has run (or was started before "
               "this daemon's restart), and the option is taken on the first start of a task "
               "created stopped only; %s",
               t->name, opt, member, todo);
  return -1;
}

static int so_refuse_run(const reg_task *t, const dmh_task_opts *o, dm_error *err) {
  if (o->remove_meta)
    return so_has_run(t, "remove-meta", "remove_meta",
                      "its checkpoints are what it resumes from: delete it with its meta "
                      "(DELETE /api/v1/tasks/NAME?force=true, keep_meta false; `dmctl stop-task "
                      "NAME` then start-task --remove-meta), then create and start it again",
                      err);
  if (o->start_time || o->start_pos)
    return so_has_run(t, "start-time", "start_time",
                      "its sync goes on from its checkpoint: delete it with its meta (DELETE "
                      "/api/v1/tasks/NAME?force=true, keep_meta false), create it again (POST "
                      "/api/v1/tasks) and start it with start_time (`dmctl start-task "
                      "--start-time`)",
                      err);
  return so_has_run(t, "safe-mode-duration", "safe_mode_time_duration",
                    "a resume goes on from the checkpoint committed with its last batch, and after "
                    "a clean pause no change is applied twice (docs/sync.md); to apply changes in "
                    "safe mode, pause it, set the sync's safe-mode (PUT /api/v1/tasks/NAME, "
                    "incr_migrate_conf.safe_mode; update-task) and start it",
                    err);
}

/* The New subtasks of `only` made again on the changed config (a section the file had not is
 * one their contexts were made without) or after the drop of the meta (their work folders, made
 * with them, went with it). `why` says which. */
static void so_remake(dmh_registry *r, reg_task *t, const char *const *only, size_t n_only,
                      const char *why) {
  for (int i = 0; i < t->n_subs; i++) {
    reg_sub *sub = &t->subs[i];
    if (!reg_source_in(only, n_only, sub->source_id))
      continue;
    pthread_mutex_lock(&r->lock);
    dmh_subtask *st = sub->st;
    sub->st = NULL;
    pthread_mutex_unlock(&r->lock);
    if (st)
      dmh_subtask_destroy(st); /* New: no unit was ever initialized */
    dm_error e;
    /* a failure stays on the sub: the resume that follows tries again and says it */
    if (reg_sub_create(r, t, sub, &e) < 0)
      reg_sub_set_error(r, sub, &e);
    else
      dmh_log(DM_LOG_INFO, "registry", "task %s: its subtask on %s made again %s", t->name,
              sub->source_id, why);
  }
}

int reg_start_opts(dmh_registry *r, reg_task *t, const char *const *only, size_t n_only,
                   const dmh_task_opts *o, json_object *resp, dm_error *err) {
  if (!o->remove_meta && !o->start_time && !o->start_pos && !o->safe_mode_duration)
    return 0;
  if (!t->never_run && !o->first_start)
    return so_refuse_run(t, o, err);
  if (o->safe_mode_duration && dmh_task_slot_of(t->cfg, "sync") < 0) {
    dm_error_set(err, DM_ERR_CONTROL_REQUEST, NULL,
                 "resume-task %s safe-mode-duration (DM's start's safe_mode_time_duration): the "
                 "task is task-mode %s, which has no sync unit; the option sets the sync's safe "
                 "mode: leave it out",
                 t->name, dmh_task_mode_name(t->cfg->mode));
    return -1;
  }
  /* a disabled source refuses the start before its meta goes (DM checks it first too) */
  for (int i = 0; i < t->n_subs; i++)
    if (reg_source_in(only, n_only, t->subs[i].source_id) &&
        reg_source_enabled(r, t->subs[i].src, "resume-task", t->name, err) < 0)
      return -1;
  /* found before anything is dropped: a time refused leaves the task as it was */
  dm_position pos = {0};
  bool at_pos = o->start_time || o->start_pos;
  if (o->start_pos)
    pos = *o->start_pos; /* found before, by a cluster's master */
  for (int i = 0; o->start_time && !o->start_pos && i < t->n_subs; i++)
    if (reg_source_in(only, n_only, t->subs[i].source_id) &&
        dmh_registry_start_time_find(t->cfg, t->subs[i].source_id, &t->subs[i].src->cfg->from.ep,
                                     "resume-task", o->start_time, &pos, resp, err) < 0)
      return -1;
  /* nothing of the task has run (never_run, cmd_lock held): what its name left behind goes */
  bool dropped = o->remove_meta || o->start_time;
  if ((dropped && reg_remove_meta(r, t->cfg, resp, err) < 0) ||
      (o->prepared && o->prepared(o->prepared_ud, err) < 0))
    return -1;
  bool made = false;
  int rc = 0;
  pthread_mutex_lock(&r->lock); /* status and api-objects read the config under it */
  for (int i = 0; at_pos && i < t->n_subs && rc == 0; i++)
    if (reg_source_in(only, n_only, t->subs[i].source_id))
      rc = reg_start_time_apply(t->cfg, t->subs[i].source_id, &pos, err);
  if (rc == 0 && at_pos)
    t->start_pos = pos; /* a restart before the sync's first checkpoint starts there too */
  if (rc == 0 && o->safe_mode_duration &&
      (rc = dmh_task_section_set_string(t->cfg, "sync", "safe-mode-duration", o->safe_mode_duration,
                                        &made)) < 0)
    dm_error_set(err, DM_ERR_CONFIG_INVALID, NULL,
                 "resume-task %s safe-mode-duration: the task file's `sync` is not a group (or "
                 "out of memory)",
                 t->name);
  if (rc == 0 && at_pos)
    rc = reg_persist_locked(r, err);
  pthread_mutex_unlock(&r->lock);
  if (rc < 0)
    return -1;
  if (made || dropped)
    so_remake(r, t, only, n_only,
              made ? "for the start's `sync` section (the file has none)"
                   : "after the drop of the meta (its work folder went with it)");
  if (o->safe_mode_duration)
    dmh_log(DM_LOG_INFO, "registry",
            "task %s: the sync's safe-mode-duration is \"%s\" for this start (DM's start's "
            "safe_mode_time_duration)",
            t->name, o->safe_mode_duration);
  return 0;
}
