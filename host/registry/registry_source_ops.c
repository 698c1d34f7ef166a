/* operate-source update, enable and disable (DM's PUT /sources/{name} and its enable/disable):
 * the bound source's file replaced while nothing runs on it, and its `enable` flag; the locking is
 * described in registry.h. */
#include "registry_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmhost/sdk.h"
#include "log.h"

int reg_source_enabled(dmh_registry *r, const reg_source *s, const char *cmd, const char *task,
                       dm_error *err) {
  if (!s)
    return 0;
  pthread_mutex_lock(&r->lock);
  bool disabled = s->disabled;
  pthread_mutex_unlock(&r->lock);
  if (!disabled)
    return 0;
  /* DM's ErrMasterStartTask with its reason "source: X is not enabled" (openapi_controller.go) */
  dm_error_set(err, DM_ERR_SOURCE_DISABLED, NULL,
               "%s: can not start task: %s reason: source: %s is not enabled", cmd, task, s->id);
  return -1;
}

static bool reg_task_reads(const reg_task *t, const reg_source *s) {
  for (int i = 0; i < t->n_subs; i++)
    if (t->subs[i].src == s)
      return true;
  return false;
}

/* The tasks on s expected Running, and whether its relay runs: DM's refusal of an update
 * (ErrSchedulerSourceCfgUpdate) or 0. Under `lock`. */
static int reg_update_busy_locked(dmh_registry *r, const reg_source *s, dm_error *err) {
  char names[512] = "";
  size_t nn = 0;
  int n = 0;
  for (reg_task *t = r->tasks; t; t = t->next) {
    if (t->expect != DMH_EXPECT_RUNNING || !reg_task_reads(t, s))
      continue;
    if (nn < sizeof names)
      nn += (size_t)snprintf(names + nn, sizeof names - nn, "%s%s", n ? ", " : "", t->name);
    n++;
  }
  bool relay = s->relay_expect == DMH_EXPECT_RUNNING || r->worker.stage == DMH_WORKER_RELAY;
  if (n == 0 && !relay)
    return 0;
  dm_error_set(err, DM_ERR_SOURCE_UPDATE_BUSY, NULL,
               "operate-source update: source %s can only be updated when relay is disabled and "
               "no tasks are running for now (%s%s%s%s)",
               s->id, n ? "Running: " : "", names, n && relay ? "; " : "",
               relay ? "its relay runs" : "");
  return -1;
}

/* The new file written at `staged` (the user's, or with keep the stored password settings carried
 * over), loaded from there into *out and checked as create checks a copy. */
static int reg_stage_file(const char *path, const reg_source *s, bool keep, const char *staged,
                          const dmh_cfg_trust *trust, const dmh_source_config *orig,
                          dmh_source_config **out, dm_error *err) {
  char *text = NULL;
  if (keep) {
    if (dmh_config_carry_password(path, s->cfg, &text, err) < 0)
      return -1;
    int rc = dmh_state_write_file(staged, text, strlen(text), err);
    free(text);
    if (rc < 0)
      return -1;
  } else if (dmh_state_copy_file(path, staged, err) < 0) {
    return -1;
  }
  dmh_source_config *copy = NULL;
  int rc = dmh_source_config_load_as(staged, trust, &copy, err);
  if (rc == 0)
    rc = reg_check_paths(path, orig->unit_paths, copy->unit_paths, DMH_KIND_COUNT, NULL, err);
  /* The kept password goes to the server it was given for only: an update that points the source
   * elsewhere would hand the stored password's proof to a server of the sender's choice. */
  const dm_db_endpoint *a = &s->cfg->from.ep, *b = copy ? &copy->from.ep : NULL;
  if (rc == 0 && keep &&
      (strcmp(a->host ? a->host : "", b->host ? b->host : "") != 0 || a->port != b->port)) {
    dm_error_set(err, DM_ERR_CONFIG_INVALID, NULL,
                 "%s: --keep-password keeps the password for the server it was given for (%s:%d), "
                 "not %s:%d: give the new server's password in the file",
                 path, a->host ? a->host : "", a->port, b->host ? b->host : "", b->port);
    rc = -1;
  }
  if (rc == 0 && config_lookup(&orig->cfg, "relay-dir") &&
      strcmp(orig->relay_dir, copy->relay_dir) != 0) {
    dm_error_set(err, DM_ERR_CONFIG_INVALID, NULL,
                 "%s: relay-dir is a relative path (resolving to %s); the file is copied into the "
                 "state dir, where it would resolve to %s: give an absolute path",
                 path, orig->relay_dir, copy->relay_dir);
    rc = -1;
  }
  if (rc == 0)
    *out = copy;
  else
    dmh_source_config_free(copy);
  return rc;
}

/* The subtasks of the locked tasks on `old` made again on `s2` (left New). */
static void reg_move_subs(dmh_registry *r, reg_task **tasks, int n, reg_source *old,
                          reg_source *s2) {
  for (int k = 0; k < n; k++) {
    reg_task *t = tasks[k];
    for (int i = 0; i < t->n_subs; i++) {
      reg_sub *sub = &t->subs[i];
      if (sub->src != old)
        continue;
      pthread_mutex_lock(&r->lock);
      dmh_subtask *st = sub->st;
      sub->st = NULL;
      pthread_mutex_unlock(&r->lock);
      dmh_subtask_destroy(st); /* Paused or New: its checkpoints are saved */
      pthread_mutex_lock(&r->lock);
      sub->src = s2;
      s2->refs++;
      pthread_mutex_unlock(&r->lock);
      reg_source_unref(r, old);
      dm_error e;
      if (!t->cfg)
        continue;
      if (reg_sub_create(r, t, sub, &e) < 0) {
        reg_sub_set_error(r, sub, &e);
        dmh_log(DM_LOG_ERROR, "registry", "task %s source %s not made again: %s", t->name,
                sub->source_id, e.message);
      }
    }
  }
}

/* *enable_given: the new file says `enable` (*enable its value), for the caller to apply. */
static int reg_source_update_locked(dmh_registry *r, const char *path, dmh_cfg_origin origin,
                                    const char *expect, bool keep, char *id_out, size_t id_len,
                                    bool *enable_given, bool *enable, dm_error *err) {
  dmh_cfg_trust trust = reg_trust(r, origin);
  dmh_source_config *orig = NULL, *copy = NULL;
  if (dmh_source_config_load_as(path, &trust, &orig, err) < 0)
    return -1;
  dm_strlcpy(id_out, orig->source_id, id_len);
  /* DM's PUT of source A with a body naming B would update B: refused, naming both */
  reg_source *s = NULL;
  if (expect && strcmp(expect, orig->source_id) != 0)
    dm_error_set(err, DM_ERR_CONFIG_INVALID, NULL,
                 "operate-source update: the request is for source %s, the file's source-id "
                 "(source_name) is %s: send the source's own name",
                 expect, orig->source_id);
  else
    s = reg_bound_source(r, "operate-source update", orig->source_id,
                         "; create it with `dmctl operate-source create SOURCE.cfg`", err);
  reg_task **all = NULL, **mine = NULL;
  int n_all = 0, n_mine = 0, rc = -1;
  char *rel = NULL, *abs = NULL, *staged = NULL, *old_abs = NULL;
  if (!s)
    goto out;
  rel = dmh_state_source_file_rel(s->id, keep ? "source.cfg" : path);
  abs = rel ? dmh_state_path(r->state_dir, rel) : NULL;
  staged = abs ? reg_printf("%s/sources/%s/update-%s", r->state_dir, s->id, strrchr(abs, '/') + 1)
               : NULL;
  old_abs = dmh_state_path(r->state_dir, s->file_rel);
  all = reg_all_tasks(r, &n_all);
  mine = calloc((size_t)(n_all ? n_all : 1), sizeof *mine);
  if (!rel || !abs || !staged || !old_abs || !all || !mine) {
    reg_oom(err, "updating the source");
    goto out;
  }
  pthread_mutex_lock(&r->lock);
  int busy = reg_update_busy_locked(r, s, err);
  pthread_mutex_unlock(&r->lock);
  if (busy < 0 || reg_stage_file(path, s, keep, staged, &trust, orig, &copy, err) < 0)
    goto out_rm;
  *enable_given = config_lookup(&copy->cfg, "enable") != NULL;
  *enable = copy->enable;
  /* The tasks on it stay still while their subtasks move: each one's command lock, then the rule
   * again with the swap under one hold of `lock` (a resume or a start-task may have come in
   * between). Nothing else holds two command locks. */
  for (int k = 0; k < n_all; k++) {
    if (!reg_task_reads(all[k], s))
      continue;
    dm_error ignored;
    if (reg_lock_task(r, all[k], "operate-source update", &ignored))
      mine[n_mine++] = all[k];
  }
  reg_source *s2 = calloc(1, sizeof *s2);
  char *final_path = strdup(abs);
  if (!s2 || !final_path || !(s2->id = strdup(s->id))) {
    free(s2);
    free(final_path);
    reg_oom(err, "updating the source");
    goto out_unlock;
  }
  free(copy->path); /* it is read from there once the staged file is moved */
  copy->path = final_path;
  s2->file_rel = rel;
  rel = NULL;
  s2->cfg = copy;
  copy = NULL;
  s2->linked = true;
  pthread_mutex_lock(&r->lock);
  busy = reg_update_busy_locked(r, s, err);
  if (busy == 0) {
    s2->relay_expect = s->relay_expect;
    s2->disabled = s->disabled;
    r->src = s2;
    s->linked = false;
  }
  pthread_mutex_unlock(&r->lock);
  if (busy == 0 && rename(staged, abs) < 0) {
    dm_error_set(err, DM_ERR_STATE, strerror(errno), "state: cannot move %s to %s", staged, abs);
    pthread_mutex_lock(&r->lock); /* nothing borrowed s2 yet: the old entry comes back */
    r->src = s;
    s->linked = true;
    pthread_mutex_unlock(&r->lock);
    busy = -1;
  }
  if (busy < 0) {
    s2->linked = false;
    s2->refs = 1;
    reg_source_unref(r, s2);
    goto out_unlock;
  }
  pthread_mutex_lock(&r->lock);
  rc = reg_persist_locked(r, err);
  pthread_mutex_unlock(&r->lock);
  if (strcmp(old_abs, abs) != 0) { /* the format changed: the old copy goes */
    dm_error ignored;
    dmh_state_remove_file(old_abs, &ignored);
  }
  /* The old relay subtask (stopped) goes with the old entry; start-relay makes one of the new
   * file. The tasks' subtasks borrowed the old config: made again from the new one. */
  reg_move_subs(r, mine, n_mine, s, s2);
  dmh_log(DM_LOG_INFO, "registry", "source %s updated from %s (%d task(s) made again)", s2->id,
          path, n_mine);
out_unlock:
  for (int k = 0; k < n_mine; k++)
    pthread_mutex_unlock(&mine[k]->cmd_lock);
out_rm:
  if (staged) {
    dm_error ignored;
    dmh_state_remove_file(staged, &ignored);
  }
out:
  for (int k = 0; k < n_all; k++)
    reg_task_unref(r, all[k]);
  free(all);
  free(mine);
  reg_source_unref(r, s); /* our pin; the last reference of the old entry frees it */
  dmh_source_config_free(orig);
  dmh_source_config_free(copy);
  free(rel);
  free(abs);
  free(staged);
  free(old_abs);
  return rc;
}

int dmh_registry_source_update_as(dmh_registry *r, const char *path, dmh_cfg_origin origin,
                                  const char *expect, bool keep_password, json_object *resp,
                                  dm_error *err) {
  char id[DMH_WORKER_SOURCE_MAX] = "";
  bool given = false, enable = true;
  pthread_mutex_lock(&r->source_lock);
  int rc = reg_source_update_locked(r, path, origin, expect, keep_password, id, sizeof id, &given,
                                    &enable, err);
  pthread_mutex_unlock(&r->source_lock);
  if (rc == 0 && given) { /* DM's update with `enable` changed: the tasks paused or resumed */
    json_object *sub = json_object_new_object(), *tasks = NULL;
    rc = dmh_registry_source_enable(r, id, enable, sub, err);
    if (json_object_object_get_ex(sub, "tasks", &tasks))
      json_object_object_add(resp, "tasks", json_object_get(tasks));
    json_object_put(sub);
  }
  return reg_reply_source(r, id, rc, err, resp);
}

/* pause-task (disable) of each task on s expected Running, or resume-task (enable) of each the
 * disable paused; each one's answer in "tasks". Returns the failures. */
static int reg_enable_tasks(dmh_registry *r, reg_source *s, bool enable, json_object *list,
                            dm_error *first) {
  int n, failed = 0;
  reg_task **all = reg_all_tasks(r, &n);
  for (int k = 0; all && k < n; k++) {
    reg_task *t = all[k];
    pthread_mutex_lock(&r->lock);
    bool pick = reg_task_reads(t, s) &&
                (enable ? t->source_paused : t->expect == DMH_EXPECT_RUNNING && t->linked);
    pthread_mutex_unlock(&r->lock);
    if (!pick)
      continue;
    json_object *one = json_object_new_object();
    dm_error e;
    int rc = dmh_registry_task_op_on(r, enable ? "resume-task" : "pause-task", t->name, NULL, 0,
                                     one, &e);
    json_object_put(one);
    json_object *entry = json_object_new_object();
    json_object_object_add(entry, "task", json_object_new_string(t->name));
    json_object_object_add(entry, "result", json_object_new_boolean(rc == 0));
    json_object_object_add(entry, "msg", json_object_new_string(rc < 0 ? e.message : ""));
    json_object_array_add(list, entry);
    if (rc < 0 && failed++ == 0)
      *first = e;
    pthread_mutex_lock(&r->lock);
    /* enable: the flag goes whether or not the resume took (the user resumes by hand then) */
    t->source_paused = !enable && rc == 0;
    pthread_mutex_unlock(&r->lock);
  }
  for (int k = 0; all && k < n; k++)
    reg_task_unref(r, all[k]);
  free(all);
  return failed;
}

int dmh_registry_source_enable(dmh_registry *r, const char *source, bool enable, json_object *resp,
                               dm_error *err) {
  const char *cmd = enable ? "operate-source enable" : "operate-source disable";
  pthread_mutex_lock(&r->source_lock);
  reg_source *s = reg_bound_source(r, cmd, source, "", err);
  int rc = -1;
  if (!s)
    goto out;
  pthread_mutex_lock(&r->lock);
  bool same = s->disabled == !enable;
  /* disable: the flag first, so that no resume slips in while the tasks pause */
  if (!same && !enable)
    s->disabled = true;
  rc = same || enable ? 0 : reg_persist_locked(r, err);
  pthread_mutex_unlock(&r->lock);
  if (same || rc < 0)
    goto out; /* DM: enabling an enabled source (or disabling a disabled one) is no change */
  if (enable) {
    pthread_mutex_lock(&r->lock);
    s->disabled = false;
    rc = reg_persist_locked(r, err);
    pthread_mutex_unlock(&r->lock);
    if (rc < 0)
      goto out;
  }
  json_object *list = json_object_new_array();
  json_object_object_add(resp, "tasks", list);
  dm_error first;
  int failed = reg_enable_tasks(r, s, enable, list, &first);
  pthread_mutex_lock(&r->lock);
  rc = reg_persist_locked(r, err);
  pthread_mutex_unlock(&r->lock);
  dmh_log(DM_LOG_INFO, "registry", "source %s %s; %zu task(s) %s, %d failed", source,
          enable ? "enabled" : "disabled", json_object_array_length(list),
          enable ? "resumed" : "paused", failed);
  if (failed) {
    *err = first;
    rc = -1;
  }
out:
  reg_source_unref(r, s);
  pthread_mutex_unlock(&r->source_lock);
  return reg_reply_source(r, source, rc, err, resp);
}
