/* update-task TASK.cfg (registry.h): a paused task takes a new file's settings, all or nothing over
 * its subtasks; the locking is described in registry.h. */
#include "registry_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_update.h"
#include "dmhost/sdk.h"
#include "error_json.h"
#include "log.h"

void reg_task_free_retired(reg_task *t) {
  for (int i = 0; i < t->n_retired; i++)
    dmh_task_config_free(t->retired[i]);
  free(t->retired);
  t->retired = NULL;
  t->n_retired = 0;
}

/* The subtask of sub, or -1 with the reason it has none. cmd_lock held. */
static dmh_subtask *upd_sub(dmh_registry *r, reg_task *t, reg_sub *sub, dm_error *err) {
  pthread_mutex_lock(&r->lock);
  dmh_subtask *st = sub->st;
  bool has_err = sub->has_err;
  dm_error serr = sub->err;
  pthread_mutex_unlock(&r->lock);
  if (!st)
    dm_error_set(err, DM_ERR_UPDATE_STAGE, has_err ? serr.message : NULL,
                 "update-task: task %s has no subtask on source %s (see query-status %s): resume "
                 "or restart the task before updating it",
                 t->name, sub->source_id, t->name);
  return st;
}

/* Every subtask can take `next` (their commands held or not). One result per source into arr
 * when a subtask refuses; -1 with the first refusal. */
static int upd_check_all(dmh_registry *r, reg_task *t, const dmh_task_config *next, bool new_ok,
                         json_object *arr, dm_error *err) {
  int failed = 0;
  for (int i = 0; i < t->n_subs; i++) {
    dm_error e;
    dmh_subtask *st = upd_sub(r, t, &t->subs[i], &e);
    if (!st || dmh_subtask_update_check(st, next, new_ok, &e) < 0) {
      if (failed++ == 0)
        *err = e;
      json_object_array_add(arr, reg_source_result(r, t->subs[i].source_id, &e));
    }
  }
  return failed ? -1 : 0;
}

/* The subtasks switch to `copy` (loaded from the state dir's `abs`, given as `path`), all or
 * nothing. Their commands are held throughout. */
static int upd_apply_all(dmh_registry *r, reg_task *t, const dmh_task_config *copy, const char *abs,
                         const char *path, bool new_ok, json_object *arr, dm_error *err) {
  for (int i = 0; i < t->n_subs; i++)
    dmh_subtask_hold_commands(t->subs[i].st);
  /* again, now that nothing can move them (an auto-resume may have run since the first look) */
  int rc = upd_check_all(r, t, copy, new_ok, arr, err);
  int done = 0;
  for (; rc == 0 && done < t->n_subs; done++)
    if (dmh_subtask_update_apply(t->subs[done].st, copy, err) < 0)
      rc = -1;
  if (rc < 0 && done > 0) {
    dmh_error_rename_file(err, abs, path); /* a unit's error names the copy: same lines */
    /* the one that failed switched itself back; the ones before it take the old file again */
    for (int i = 0; i < done - 1; i++) {
      dm_error e;
      if (dmh_subtask_update_apply(t->subs[i].st, t->cfg, &e) < 0)
        dmh_log(DM_LOG_ERROR, "registry", "update-task %s: source %s refused its old settings: %s",
                t->name, t->subs[i].source_id, e.message);
    }
    for (int i = 0; i < t->n_subs; i++)
      json_object_array_add(arr,
                            reg_source_result(r, t->subs[i].source_id, i == done - 1 ? err : NULL));
  }
  for (int i = 0; i < t->n_subs; i++)
    dmh_subtask_release_commands(t->subs[i].st);
  return rc;
}

/* With the task's cmd_lock. `next` is the file as the user gave it (messages name it). */
static int upd_task_locked(dmh_registry *r, reg_task *t, const char *path,
                           const dmh_cfg_trust *trust, const dmh_task_config *next, bool dry_run,
                           json_object *resp, json_object *arr, dm_error *err) {
  pthread_mutex_lock(&r->lock);
  bool loaded = t->cfg != NULL;
  bool new_ok = t->expect == DMH_EXPECT_PAUSED;
  if (!loaded)
    *err = t->load_err;
  pthread_mutex_unlock(&r->lock);
  if (!loaded)
    return -1;
  if (dmh_task_config_same_identity(t->cfg, next, err) < 0 ||
      upd_check_all(r, t, next, new_ok, arr, err) < 0)
    return -1;
  /* The precheck (docs/precheck.md), as start-task runs it: a failed item refuses. */
  char what[300];
  snprintf(what, sizeof what, "update-task %s", t->name);
  if (reg_precheck(r, next, what, resp, err) < 0)
    return -1;

  /* The copy in the state dir is what runs (as start-task does); the old text comes back if the
   * units refuse the new one. */
  if (dmh_config_is_yaml(path) != dmh_config_is_yaml(t->file_rel)) {
    dm_error_set(err, DM_ERR_CONFIG_INVALID, NULL,
                 "update-task %s: %s is a %s file, the task was started from a %s one; give the "
                 "update in the same format (the task's copy in the state dir keeps it)",
                 t->name, path, dmh_config_is_yaml(path) ? "YAML" : "libconfig",
                 dmh_config_is_yaml(path) ? "libconfig" : "YAML");
    return -1;
  }
  if (dry_run) {
    /* what a cluster's master asks each worker before it stores the file (master_update.c):
     * every check above passed, nothing changed */
    for (int i = 0; i < t->n_subs; i++)
      json_object_array_add(arr, reg_source_result(r, t->subs[i].source_id, NULL));
    json_object_object_add(resp, "msg",
                           json_object_new_string("update-task dry run: the task's subtasks "
                                                  "here can take the file; nothing was changed"));
    return 0;
  }
  char *abs = dmh_state_path(r->state_dir, t->file_rel);
  size_t old_len = 0;
  char *old_text = abs ? dmh_state_read_all(abs, &old_len) : NULL;
  dmh_task_config *copy = NULL;
  int rc = 0;
  if (!abs)
    rc = reg_oom(err, "updating the task");
  else if (!old_text)
    rc = (dm_error_set(err, DM_ERR_STATE, strerror(errno),
                       "update-task %s: cannot read the task's copy %s", t->name, abs),
          -1);
  else if (dmh_state_copy_file(path, abs, err) < 0)
    rc = -1;
  else if (dmh_task_config_load_as(abs, trust, &copy, err) < 0 ||
           reg_check_paths(path, next->unit_paths, copy->unit_paths, DMH_UNIT_SLOTS, copy, err) <
               0 ||
           dmh_task_config_same_identity(t->cfg, copy, err) < 0)
    rc = -1;
  if (rc == 0)
    rc = upd_apply_all(r, t, copy, abs, path, new_ok, arr, err);
  dmh_task_config **grown = NULL;
  if (rc == 0 && !(grown = realloc(t->retired, sizeof *grown * (size_t)(t->n_retired + 1)))) {
    /* cannot keep the old one alive for the units: take the old settings back */
    rc = reg_oom(err, "updating the task");
    dm_error e;
    for (int i = 0; i < t->n_subs; i++)
      if (dmh_subtask_update_apply(t->subs[i].st, t->cfg, &e) < 0)
        dmh_log(DM_LOG_ERROR, "registry", "update-task %s: %s", t->name, e.message);
  }
  if (rc == 0) {
    t->retired = grown;
    t->retired[t->n_retired++] = t->cfg;
    pthread_mutex_lock(&r->lock);
    t->cfg = copy;
    pthread_mutex_unlock(&r->lock);
    for (int i = 0; i < t->n_subs; i++)
      json_object_array_add(arr, reg_source_result(r, t->subs[i].source_id, NULL));
    dmh_log(DM_LOG_INFO, "registry", "task %s updated from %s on %d source(s)", t->name, path,
            t->n_subs);
  } else {
    dm_error ignored;
    if (abs)
      dmh_error_rename_file(err, abs, path); /* the copy's load, too */
    dmh_task_config_free(copy);
    if (old_text && dmh_state_write_file(abs, old_text, old_len, &ignored) < 0)
      dmh_log(DM_LOG_ERROR, "registry",
              "update-task %s: the task's copy %s could not be put back: %s (a restart would run "
              "the refused file)",
              t->name, abs, ignored.message);
  }
  free(old_text);
  free(abs);
  return rc;
}

int dmh_registry_task_update(dmh_registry *r, const char *path, json_object *resp, dm_error *err) {
  return dmh_registry_task_update_as(r, path, DMH_CFG_OPERATOR, resp, err);
}

int dmh_registry_task_update_as(dmh_registry *r, const char *path, dmh_cfg_origin origin,
                                json_object *resp, dm_error *err) {
  return dmh_registry_task_update_opts(r, path, origin, false, resp, err);
}

int dmh_registry_task_update_opts(dmh_registry *r, const char *path, dmh_cfg_origin origin,
                                  bool dry_run, json_object *resp, dm_error *err) {
  json_object *arr = json_object_new_array();
  json_object_object_add(resp, "sources", arr);
  dmh_task_config *next = NULL;
  dmh_cfg_trust trust = reg_trust(r, origin);
  if (dmh_task_config_load_as(path, &trust, &next, err) < 0)
    return -1;
  reg_task *t = reg_get_task(r, "update-task", next->name, err);
  int rc = -1;
  if (t && reg_lock_task(r, t, "update-task", err)) {
    rc = upd_task_locked(r, t, path, &trust, next, dry_run, resp, arr, err);
    pthread_mutex_unlock(&t->cmd_lock);
  }
  if (t)
    reg_task_unref(r, t);
  dmh_task_config_free(next);
  return rc;
}
