/* start-task, pause-task, resume-task, stop-task, swap-unit and query-status; the locking is
 * described in registry.h. */
#include "registry_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "binlog_ops.h"
#include "dmhost/relay_reader.h"
#include "dmhost/sdk.h"
#include "error_json.h"
#include "log.h"
#include "metrics.h"

/* ---- tasks ---- */

int reg_no_source_error(dmh_registry *r, const dmh_task_config *cfg, const char *path,
                        dm_error *err) {
  char names[512] = "";
  size_t n = 0;
  for (int i = 0; i < cfg->n_instances && n < sizeof names; i++)
    n += (size_t)snprintf(names + n, sizeof names - n, "%s\"%s\"", i ? ", " : "",
                          cfg->instances[i].source_id);
  dm_error_set(
      err, DM_ERR_NOT_FOUND, NULL,
      "start-task %s: task %s reads source%s %s, not bound to this worker (worker %s%s%s); "
      "create the source first with `dmctl operate-source create SOURCE.cfg`",
      path, cfg->name, cfg->n_instances > 1 ? "s" : "", names,
      dmh_worker_stage_name(r->worker.stage), r->worker.source[0] ? " bound to " : "",
      r->worker.source);
  return -1;
}

/* Undo a start-task that failed before any subtask ran. cmd_lock held; drops our reference. */
static void reg_task_abandon(dmh_registry *r, reg_task *t, const char *copy_path) {
  pthread_mutex_lock(&r->lock);
  reg_unlink_task_locked(r, t);
  pthread_mutex_unlock(&r->lock);
  pthread_mutex_unlock(&t->cmd_lock);
  if (copy_path) {
    dm_error ignored;
    dmh_state_remove_file(copy_path, &ignored);
  }
  reg_task_unref(r, t);
}

int dmh_registry_task_start(dmh_registry *r, const char *path, json_object *resp, dm_error *err) {
  return dmh_registry_task_start_as(r, path, DMH_CFG_OPERATOR, resp, err);
}

int dmh_registry_task_start_as(dmh_registry *r, const char *path, dmh_cfg_origin origin,
                               json_object *resp, dm_error *err) {
  return dmh_registry_task_start_opts(r, path, origin, NULL, resp, err);
}

int dmh_registry_task_start_opts(dmh_registry *r, const char *path, dmh_cfg_origin origin,
                                 const dmh_task_opts *o, json_object *resp, dm_error *err) {
  static const dmh_task_opts none = {0};
  o = o ? o : &none;
  json_object *arr = json_object_new_array();
  json_object_object_add(resp, "sources", arr);
  dmh_task_config *orig = NULL;
  dmh_cfg_trust trust = reg_trust(r, origin);
  if (dmh_task_config_load_as(path, &trust, &orig, err) < 0)
    return -1;
  if (dmh_state_check_name("task name", orig->name, err) < 0) {
    dmh_task_config_free(orig);
    return -1;
  }
  char *rel = dmh_state_task_file_rel(orig->name, path);
  reg_task *t = rel ? reg_task_new(orig->name, rel) : NULL;
  free(rel);
  if (!t) {
    dmh_task_config_free(orig);
    return reg_oom(err, "starting the task");
  }
  /* created stopped: what a restore of a paused task makes (registry.c) */
  t->expect = o->stopped ? DMH_EXPECT_PAUSED : DMH_EXPECT_RUNNING;
  t->never_run = o->stopped;
  t->refs = 1;
  pthread_mutex_lock(&t->cmd_lock); /* not visible to anyone yet: cannot wait */

  pthread_mutex_lock(&r->lock);
  reg_task *other = reg_find_task_locked(r, orig->name);
  int rc = 0;
  if (other) {
    dm_error_set(err, DM_ERR_EXISTS, NULL,
                 "start-task %s: task \"%s\" already exists on this worker; `dmctl stop-task %s` "
                 "first, or give the task another name",
                 path, orig->name, orig->name);
    rc = -1;
  } else if ((rc = reg_make_subs_locked(r, t, orig, false)) == 0) {
    reg_no_source_error(r, orig, path, err);
    rc = -1;
  } else if (rc < 0) {
    reg_oom(err, "starting the task");
  } else {
    rc = 0;
    t->linked = true; /* the name is taken from here on */
    reg_link_task_locked(r, t);
  }
  /* Sources of the task bound elsewhere: their subtasks belong to another worker. */
  char skipped[512] = "";
  size_t ns = 0;
  for (int i = 0; rc == 0 && i < orig->n_instances && ns < sizeof skipped; i++) {
    bool here = false;
    for (int j = 0; j < t->n_subs && !here; j++)
      here = strcmp(t->subs[j].source_id, orig->instances[i].source_id) == 0;
    if (!here)
      ns += (size_t)snprintf(skipped + ns, sizeof skipped - ns, "%s%s", ns ? ", " : "",
                             orig->instances[i].source_id);
  }
  pthread_mutex_unlock(&r->lock);
  if (skipped[0]) {
    char msg[700];
    snprintf(msg, sizeof msg,
             "source(s) %s of the task are not bound to this worker: their subtasks are not "
             "created here",
             skipped);
    json_object_object_add(resp, "msg", json_object_new_string(msg));
  }
  if (rc < 0) {
    pthread_mutex_unlock(&t->cmd_lock);
    reg_task_unref(r, t);
    dmh_task_config_free(orig);
    return -1;
  }

  /* A disabled source runs no task (DM's start refusal): before the precheck connects. */
  for (int i = 0; i < t->n_subs; i++) {
    if (reg_source_enabled(r, t->subs[i].src, "start-task", orig->name, err) < 0) {
      dmh_task_config_free(orig);
      reg_task_abandon(r, t, NULL);
      return -1;
    }
  }

  /* The precheck (docs/precheck.md): a failed item refuses the task before anything is kept. */
  char what[512];
  snprintf(what, sizeof what, "start-task %s", orig->name);
  if (reg_precheck(r, orig, what, resp, err) < 0) {
    dmh_task_config_free(orig);
    reg_task_abandon(r, t, NULL);
    return -1;
  }

  /* --start-time: the position on the bound source, before anything is written; the old
   * checkpoints go with remove-meta, or the sync would go on from them (DM deletes them too) */
  dm_position start_pos = {0};
  if (o->start_pos)
    start_pos = *o->start_pos; /* found before, by a cluster's master */
  for (int i = 0; o->start_time && !o->start_pos && i < t->n_subs; i++) {
    if (dmh_registry_start_time_find(orig, t->subs[i].source_id, &t->subs[i].src->cfg->from.ep,
                                     "start-task", o->start_time, &start_pos, resp, err) < 0) {
      dmh_task_config_free(orig);
      reg_task_abandon(r, t, NULL);
      return -1;
    }
  }

  /* --remove-meta: the name is ours (linked) and nothing of it runs, so what a task of this name
   * left behind goes before anything is written (DM: before its subtasks are added); then the
   * caller's mark (a cluster worker's record of the start it applied), before anything runs */
  if (((o->remove_meta || o->start_time) && reg_remove_meta(r, orig, resp, err) < 0) ||
      (o->prepared && o->prepared(o->prepared_ud, err) < 0)) {
    dmh_task_config_free(orig);
    reg_task_abandon(r, t, NULL);
    return -1;
  }

  /* Copy the file into the state dir and run what the copy says. */
  char *abs = dmh_state_path(r->state_dir, t->file_rel);
  char *dir = reg_printf("%s/tasks/%s", r->state_dir, t->name);
  dmh_task_config *copy = NULL;
  bool copied = false;
  if (!abs || !dir)
    rc = reg_oom(err, "starting the task");
  else if (dmh_state_mkdirs(dir, err) < 0 || dmh_state_copy_file(path, abs, err) < 0)
    rc = -1;
  else if ((copied = true, dmh_task_config_load_as(abs, &trust, &copy, err) < 0) ||
           reg_check_paths(path, orig->unit_paths, copy->unit_paths, DMH_UNIT_SLOTS, copy, err) < 0)
    rc = -1;
  free(dir);
  dmh_task_config_free(orig);
  if (rc < 0) {
    dmh_task_config_free(copy);
    reg_task_abandon(r, t, copied ? abs : NULL);
    free(abs);
    return -1;
  }
  for (int i = 0; (o->start_time || o->start_pos) && i < t->n_subs && rc == 0; i++)
    rc = reg_start_time_apply(copy, t->subs[i].source_id, &start_pos, err);
  if (rc < 0) {
    dmh_task_config_free(copy);
    reg_task_abandon(r, t, abs);
    free(abs);
    return -1;
  }
  pthread_mutex_lock(&r->lock);
  t->cfg = copy;
  t->start_pos = start_pos;
  pthread_mutex_unlock(&r->lock);

  /* Every subtask is created (its units loaded and checked) before any starts: a unit that
   * cannot load refuses the whole task. */
  for (int i = 0; i < t->n_subs && rc == 0; i++)
    rc = reg_sub_create(r, t, &t->subs[i], err);
  if (rc < 0) {
    reg_task_abandon(r, t, abs);
    free(abs);
    return -1;
  }
  free(abs);
  int failed = 0;
  dm_error first;
  for (int i = 0; i < t->n_subs; i++) {
    dm_error e;
    int src = o->stopped ? 0 : dmh_subtask_start(t->subs[i].st, &e);
    if (src < 0 && failed++ == 0)
      first = e;
    json_object_array_add(arr, reg_source_result(r, t->subs[i].source_id, src < 0 ? &e : NULL));
  }
  pthread_mutex_lock(&r->lock);
  int prc = reg_persist_locked(r, err);
  pthread_mutex_unlock(&r->lock);
  dmh_log(DM_LOG_INFO, "registry", "task %s %s from %s on %d source(s), %d failed", t->name,
          o->stopped ? "created (stopped)" : "started", path, t->n_subs, failed);
  if (t->cfg && t->cfg->shard_mode != DM_SHARD_MODE_NONE && t->cfg->n_instances > t->n_subs)
    dmh_log(DM_LOG_WARN, "registry",
            "task %s has shard-mode and %d sources, %d of them here: this daemon coordinates the "
            "shard DDL locks of its own sources alone, the others' shards are not waited for; run "
            "the task in a cluster for that (docs/shard.md)",
            t->name, t->cfg->n_instances, t->n_subs);
  pthread_mutex_unlock(&t->cmd_lock);
  reg_task_unref(r, t);
  if (failed) {
    /* The task stays (stage Stopped with its errors in query-status): resume-task retries. */
    *err = first;
    return -1;
  }
  return prc;
}

typedef enum reg_op { REG_PAUSE, REG_RESUME, REG_STOP } reg_op;

static const char *reg_op_cmd(reg_op op) {
  return op == REG_PAUSE ? "pause-task" : op == REG_RESUME ? "resume-task" : "stop-task";
}

/* One sub under a pause/resume/stop. cmd_lock held. */
static int reg_sub_op(dmh_registry *r, reg_task *t, reg_sub *sub, reg_op op, dm_error *err) {
  pthread_mutex_lock(&r->lock);
  dmh_subtask *st = sub->st;
  bool has_err = sub->has_err;
  dm_error serr = sub->err;
  pthread_mutex_unlock(&r->lock);
  if (op == REG_RESUME && reg_source_enabled(r, sub->src, "resume-task", t->name, err) < 0)
    return -1;
  if (!st) {
    if (op == REG_STOP)
      return 0; /* nothing runs */
    if (op == REG_PAUSE || !t->cfg) {
      if (has_err)
        *err = serr;
      else
        dm_error_set(err, DM_ERR_STAGE, NULL, "%s: task %s has no subtask on source %s",
                     reg_op_cmd(op), t->name, sub->source_id);
      return -1;
    }
    /* resume of a subtask that could not be restored: try again from the start */
    if (reg_sub_create(r, t, sub, err) < 0) {
      reg_sub_set_error(r, sub, err);
      return -1;
    }
    pthread_mutex_lock(&r->lock);
    st = sub->st;
    pthread_mutex_unlock(&r->lock);
  }
  switch (op) {
  case REG_PAUSE:
    return dmh_subtask_pause(st, err);
  case REG_RESUME:
    /* New: restored with expected Paused, never started in this process. */
    return dmh_subtask_stage(st) == DMH_STAGE_NEW ? dmh_subtask_start(st, err)
                                                  : dmh_subtask_resume(st, err);
  case REG_STOP:
    return dmh_subtask_stage(st) == DMH_STAGE_STOPPED ? 0 : dmh_subtask_stop(st, err);
  }
  return 0;
}

bool reg_source_in(const char *const *only, size_t n, const char *source) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(only[i], source) == 0)
      return true;
  return n == 0;
}

/* Every one of only[n] must be a source of the task; -1 with DM_ERR_NOT_FOUND naming the first
 * that is not, and the task's. *all: they cover every subtask. */
static int reg_check_only(const reg_task *t, const char *cmd, const char *const *only, size_t n,
                          bool *all, dm_error *err) {
  size_t covered = 0;
  for (int i = 0; i < t->n_subs; i++)
    covered += reg_source_in(only, n, t->subs[i].source_id) ? 1 : 0;
  *all = n == 0 || covered == (size_t)t->n_subs;
  for (size_t k = 0; k < n; k++) {
    bool found = false;
    for (int i = 0; i < t->n_subs && !found; i++)
      found = strcmp(t->subs[i].source_id, only[k]) == 0;
    if (found)
      continue;
    char list[256] = "";
    size_t len = 0;
    for (int i = 0; i < t->n_subs && len < sizeof list; i++)
      len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "",
                              t->subs[i].source_id);
    dm_error_set(err, DM_ERR_NOT_FOUND, NULL,
                 "%s -s %s: task %s has no subtask on that source here (its sources: %s)", cmd,
                 only[k], t->name, list);
    return -1;
  }
  return 0;
}

static int reg_task_op(dmh_registry *r, const char *name, reg_op op, const char *const *only,
                       size_t n_only, const dmh_task_opts *o, json_object *resp, dm_error *err) {
  json_object *arr = json_object_new_array();
  json_object_object_add(resp, "op",
                         json_object_new_string(op == REG_PAUSE    ? "Pause"
                                                : op == REG_RESUME ? "Resume"
                                                                   : "Stop"));
  json_object_object_add(resp, "sources", arr);
  const char *cmd = reg_op_cmd(op);
  reg_task *t = reg_get_task(r, cmd, name, err);
  if (!t)
    return -1;
  bool all;
  if (reg_check_only(t, cmd, only, n_only, &all, err) < 0) {
    reg_task_unref(r, t);
    return -1;
  }
  if (op == REG_STOP && !all) {
    dm_error_set(err, DM_ERR_CONTROL_REQUEST, NULL,
                 "stop-task %s -s: dmhost stops a task as a whole, not some of its sources; "
                 "pause-task -s those sources, or stop the task without -s",
                 name);
    reg_task_unref(r, t);
    return -1;
  }
  if (op == REG_STOP) {
    /* Gone from the list (and from state.json) at once; the stop itself waits for any command in
     * flight on the task. */
    pthread_mutex_lock(&r->lock);
    if (o->check_force && !o->force && t->linked && t->expect == DMH_EXPECT_RUNNING) {
      pthread_mutex_unlock(&r->lock);
      /* DM's DELETE rule (openapi_controller.go deleteTask): an expected stage Running */
      dm_error_set(err, DM_ERR_STAGE, NULL,
                   "task %s have running subtasks, please stop them or delete task with force.",
                   name);
      reg_task_unref(r, t);
      return -1;
    }
    bool was_linked = t->linked;
    if (was_linked)
      reg_unlink_task_locked(r, t);
    dm_error perr;
    if (was_linked)
      reg_persist_locked(r, &perr);
    pthread_mutex_unlock(&r->lock);
    if (!was_linked) {
      dm_error_set(err, DM_ERR_NOT_FOUND, NULL, "stop-task: task \"%s\" is being stopped already",
                   name);
      reg_task_unref(r, t);
      return -1;
    }
    pthread_mutex_lock(&t->cmd_lock);
  } else if (!reg_lock_task(r, t, cmd, err)) {
    reg_task_unref(r, t);
    return -1;
  }
  if (!t->cfg && op != REG_STOP) {
    pthread_mutex_lock(&r->lock);
    *err = t->load_err;
    pthread_mutex_unlock(&r->lock);
    pthread_mutex_unlock(&t->cmd_lock);
    reg_task_unref(r, t);
    return -1;
  }
  int ok = 0, failed = 0;
  dm_error first;
  if (op == REG_RESUME && reg_start_opts(r, t, only, n_only, o, resp, err) < 0) {
    pthread_mutex_unlock(&t->cmd_lock);
    reg_task_unref(r, t);
    return -1;
  }
  if (op == REG_RESUME)
    t->never_run = false;
  for (int i = 0; i < t->n_subs; i++) {
    dm_error e;
    if (!reg_source_in(only, n_only, t->subs[i].source_id))
      continue;
    int rc = reg_sub_op(r, t, &t->subs[i], op, &e);
    if (rc < 0 && failed++ == 0)
      first = e;
    if (rc == 0)
      ok++;
    json_object_array_add(arr, reg_source_result(r, t->subs[i].source_id, rc < 0 ? &e : NULL));
  }
  int rc = 0;
  if (op == REG_STOP) {
    char *abs = dmh_state_path(r->state_dir, t->file_rel);
    dm_error ignored;
    if (abs)
      dmh_state_remove_file(abs, &ignored);
    free(abs);
    /* Its shard DDL locks go with it (DM's RemoveMetaData); its subtasks are stopped. */
    if (r->shard && dmh_shard_local_forget(r->shard, name, &ignored) < 0)
      dmh_log(DM_LOG_WARN, "registry", "stop-task %s: %s", name, ignored.message);
    /* Binlog operators belong to the task's run (as in DM, where the syncer holds them): a task
     * started again under this name must not inherit a skip meant for its predecessor. */
    for (int i = 0; i < t->n_subs; i++) {
      int removed;
      char *ops = dmh_binlog_ops_path(t->subs[i].work_root);
      if (ops && dmh_binlog_ops_remove(ops, NULL, &removed, &ignored) < 0)
        dmh_log(DM_LOG_WARN, "registry", "stop-task %s: %s", name, ignored.message);
      free(ops);
      /* The sync unit registers what it still reads of the source's relay log in
       * <relay-dir>/readers/<task> (docs/relay.md): a removed task must not keep relay files
       * from being purged for ever. */
      const reg_source *src = t->subs[i].src;
      dm_error rerr;
      if (src && src->cfg && src->cfg->relay_dir &&
          dm_relay_reader_remove(src->cfg->relay_dir, name, &rerr) < 0)
        dmh_log(DM_LOG_WARN, "registry", "stop-task %s: %s", name, rerr.message);
    }
    /* DM's keep_meta=false: after the stop, so no unit writes a checkpoint back */
    dm_error merr;
    if (o->remove_meta && !failed) {
      if (!t->cfg)
        dm_error_set(&merr, DM_ERR_STATE, NULL,
                     "stop-task %s remove-meta: the task is stopped and removed, but its config "
                     "could not be loaded, so its target is unknown: drop its meta-schema tables "
                     "(<task>_loader_checkpoint, <task>_syncer_checkpoint, ...) by hand",
                     name);
      if (!t->cfg || reg_remove_meta(r, t->cfg, resp, &merr) < 0) {
        failed++;
        first = merr;
      }
    }
  } else if (ok > 0 && all) {
    /* The stage a restart restores is the task's: only an operation on all its subtasks moves it
     * (a restart after pause-task -s SOME runs every subtask). */
    pthread_mutex_lock(&r->lock);
    t->expect = op == REG_PAUSE ? DMH_EXPECT_PAUSED : DMH_EXPECT_RUNNING;
    if (t->linked)
      rc = reg_persist_locked(r, err);
    pthread_mutex_unlock(&r->lock);
  }
  dmh_log(DM_LOG_INFO, "registry", "%s %s: %d source(s) ok, %d failed", cmd, name, ok, failed);
  pthread_mutex_unlock(&t->cmd_lock);
  reg_task_unref(r, t); /* for stop-task: the last reference, destroying the subtasks */
  if (failed) {
    *err = first;
    return -1;
  }
  return rc;
}

int dmh_registry_task_pause(dmh_registry *r, const char *name, json_object *resp, dm_error *err) {
  return dmh_registry_task_op_opts(r, "pause-task", name, NULL, 0, NULL, resp, err);
}

int dmh_registry_task_resume(dmh_registry *r, const char *name, json_object *resp, dm_error *err) {
  return dmh_registry_task_op_opts(r, "resume-task", name, NULL, 0, NULL, resp, err);
}

int dmh_registry_task_stop(dmh_registry *r, const char *name, json_object *resp, dm_error *err) {
  return dmh_registry_task_op_opts(r, "stop-task", name, NULL, 0, NULL, resp, err);
}

int dmh_registry_task_op_on(dmh_registry *r, const char *cmd, const char *name,
                            const char *const *only, size_t n_only, json_object *resp,
                            dm_error *err) {
  return dmh_registry_task_op_opts(r, cmd, name, only, n_only, NULL, resp, err);
}

int dmh_registry_task_op_opts(dmh_registry *r, const char *cmd, const char *name,
                              const char *const *only, size_t n_only, const dmh_task_opts *o,
                              json_object *resp, dm_error *err) {
  static const dmh_task_opts none = {0};
  reg_op op = strcmp(cmd, "pause-task") == 0    ? REG_PAUSE
              : strcmp(cmd, "resume-task") == 0 ? REG_RESUME
                                                : REG_STOP;
  return reg_task_op(r, name, op, only, n_only, o ? o : &none, resp, err);
}

int dmh_registry_task_swap(dmh_registry *r, const char *name, const char *unit, const char *path,
                           json_object *resp, dm_error *err) {
  json_object *arr = json_object_new_array();
  json_object_object_add(resp, "sources", arr);
  if (r->configs_submitted && !r->allow_submitted_unit_paths) {
    dm_error_set(err, DM_ERR_CONTROL_SUBMITTED_SWAP, NULL,
                 "swap-unit %s --path %s: this worker takes its commands over the network (a "
                 "master forwards them), and a path sent so may not choose the code it loads; run "
                 "swap-unit over the worker's own control socket, or start it with "
                 "--allow-submitted-unit-paths",
                 name, path);
    return -1;
  }
  reg_task *t = reg_get_task(r, "swap-unit", name, err);
  if (!t)
    return -1;
  if (!reg_lock_task(r, t, "swap-unit", err)) {
    reg_task_unref(r, t);
    return -1;
  }
  if (!t->cfg || dmh_task_slot_of(t->cfg, unit) < 0) {
    dm_error_set(err, DM_ERR_NO_SUCH_UNIT, NULL,
                 "swap-unit: task %s has no %s unit (its units are the task file's `units` or "
                 "task-mode; the relay is swapped with its source)",
                 name, unit);
    pthread_mutex_unlock(&t->cmd_lock);
    reg_task_unref(r, t);
    return -1;
  }
  int ok = 0, failed = 0;
  dm_error first;
  for (int i = 0; i < t->n_subs; i++) {
    pthread_mutex_lock(&r->lock);
    dmh_subtask *st = t->subs[i].st;
    pthread_mutex_unlock(&r->lock);
    dm_error e;
    int rc = -1;
    if (st)
      rc = dmh_subtask_swap_unit(st, unit, path, &e);
    else
      dm_error_set(&e, DM_ERR_STAGE, NULL,
                   "swap-unit: task %s has no subtask on source %s (see query-status %s)", name,
                   t->subs[i].source_id, name);
    if (rc < 0 && failed++ == 0)
      first = e;
    if (rc == 0)
      ok++;
    json_object_array_add(arr, reg_source_result(r, t->subs[i].source_id, rc < 0 ? &e : NULL));
  }
  if (t->n_subs == 0) {
    failed = 1;
    first = t->load_err;
  }
  int rc = 0;
  if (ok > 0) {
    /* Persist the new build so a restart keeps it. */
    pthread_mutex_lock(&r->lock);
    rc = dmh_unit_paths_set(&t->unit_paths, unit, path, err);
    if (rc == 0 && t->linked)
      rc = reg_persist_locked(r, err);
    pthread_mutex_unlock(&r->lock);
  }
  dmh_log(DM_LOG_INFO, "registry", "swap-unit %s %s -> %s: %d ok, %d failed", name, unit, path, ok,
          failed);
  pthread_mutex_unlock(&t->cmd_lock);
  reg_task_unref(r, t);
  if (failed) {
    *err = first;
    return -1;
  }
  return rc;
}

/* ---- query-status ---- */

/* The stage shown for a subtask that does not exist: Stopped when its creation failed. */
static const char *reg_missing_stage(bool has_err) {
  return has_err ? "Stopped" : "New";
}

/* A subtask that does not exist (never created, or its creation failed), in the shape of
 * dmh_subtask_status_json. */
static json_object *reg_missing_status(const char *task, const char *source, const dm_error *e) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "name", json_object_new_string(task));
  json_object_object_add(o, "source", json_object_new_string(source));
  json_object_object_add(o, "stage", json_object_new_string(reg_missing_stage(e != NULL)));
  json_object_object_add(o, "unit", json_object_new_string(""));
  if (e) {
    json_object *res = json_object_new_object();
    json_object_object_add(res, "isCanceled", json_object_new_boolean(0));
    json_object *errs = json_object_new_array();
    json_object_array_add(errs, dmh_error_to_json(e, NULL));
    json_object_object_add(res, "errors", errs);
    json_object_object_add(o, "result", res);
  } else {
    json_object_object_add(o, "result", NULL);
  }
  return o;
}

static json_object *reg_sub_status(dmh_registry *r, reg_task *t, reg_sub *sub) {
  pthread_mutex_lock(&r->lock);
  dmh_subtask *st = sub->st;
  bool has_err = sub->has_err;
  dm_error e = sub->err;
  pthread_mutex_unlock(&r->lock);
  return st ? dmh_subtask_status_json(st)
            : reg_missing_status(t->name, sub->source_id, has_err ? &e : NULL);
}

/* What the list of tasks shows of a subtask: its stage and whether it has errors, read from the
 * subtask alone (no unit's status is asked). */
typedef struct reg_sub_glance {
  const char *stage;
  bool has_errors;
} reg_sub_glance;

static reg_sub_glance reg_sub_summary(dmh_registry *r, reg_sub *sub) {
  pthread_mutex_lock(&r->lock);
  dmh_subtask *st = sub->st;
  bool has_err = sub->has_err;
  pthread_mutex_unlock(&r->lock);
  if (!st)
    return (reg_sub_glance){reg_missing_stage(has_err), has_err};
  dmh_subtask_view v;
  dmh_subtask_summary(st, &v);
  return (reg_sub_glance){dmh_stage_name(v.stage), v.n_errors > 0};
}

/* DM's summary of a task over its subtasks. */
static const char *reg_task_status(const reg_sub_glance *subs, int n, const char *name, char *buf,
                                   size_t len) {
  if (n == 0) {
    snprintf(buf, len,
             "Error - the task could not be restored. Please run `query-status %s` to "
             "get more details.",
             name);
    return buf;
  }
  const char *stage = NULL;
  bool mixed = false;
  for (int i = 0; i < n; i++) {
    if (subs[i].has_errors) {
      snprintf(buf, len,
               "Error - Some error occurred in subtask. Please run `query-status %s` to get more "
               "details.",
               name);
      return buf;
    }
    const char *st = subs[i].stage;
    if (stage && strcmp(stage, st) != 0)
      mixed = true;
    if (!stage || strcmp(st, "Paused") == 0 || strcmp(st, "Stopped") == 0)
      stage = st;
  }
  if (mixed && strcmp(stage, "Paused") != 0 && strcmp(stage, "Stopped") != 0)
    stage = "Running"; /* some finished, others still run */
  snprintf(buf, len, "%s", stage);
  return buf;
}

/* The list of query-status; with only[n_only] (-s) the tasks having a subtask on one of those
 * sources, with those subtasks. */
static int reg_status_list(dmh_registry *r, const char *const *only, size_t n_only,
                           json_object *resp, dm_error *err) {
  int n;
  reg_task **all = reg_all_tasks(r, &n);
  if (!all)
    return reg_oom(err, "listing the tasks");
  json_object *tasks = json_object_new_array();
  for (int i = 0; i < n; i++) {
    reg_task *t = all[i];
    bool any = false;
    for (int j = 0; j < t->n_subs; j++)
      any = any || reg_source_in(only, n_only, t->subs[j].source_id);
    if (!any && n_only > 0) {
      reg_task_unref(r, t);
      continue;
    }
    json_object *o = json_object_new_object();
    json_object_object_add(o, "taskName", json_object_new_string(t->name));
    reg_sub_glance *subs = calloc((size_t)(t->n_subs ? t->n_subs : 1), sizeof *subs);
    json_object *srcs = json_object_new_array();
    for (int j = 0; subs && j < t->n_subs; j++) {
      subs[j] = reg_sub_summary(r, &t->subs[j]);
      if (!reg_source_in(only, n_only, t->subs[j].source_id))
        continue;
      json_object *s = json_object_new_object();
      json_object_object_add(s, "source", json_object_new_string(t->subs[j].source_id));
      json_object_object_add(s, "stage", json_object_new_string(subs[j].stage));
      json_object_array_add(srcs, s);
    }
    char buf[160];
    json_object_object_add(o, "taskStatus",
                           json_object_new_string(reg_task_status(subs, subs ? t->n_subs : 0,
                                                                  t->name, buf, sizeof buf)));
    pthread_mutex_lock(&r->lock);
    dmh_expect_stage expect = t->expect;
    pthread_mutex_unlock(&r->lock);
    json_object_object_add(o, "expectedStage",
                           json_object_new_string(dmh_expect_stage_name(expect)));
    json_object_object_add(o, "sources", srcs);
    free(subs);
    json_object_array_add(tasks, o);
    reg_task_unref(r, t);
  }
  free(all);
  json_object_object_add(resp, "tasks", tasks);
  return 0;
}

int dmh_registry_query_status(dmh_registry *r, const char *name, json_object *resp, dm_error *err) {
  return dmh_registry_query_status_on(r, name, NULL, 0, resp, err);
}

int dmh_registry_query_status_on(dmh_registry *r, const char *name, const char *const *only,
                                 size_t n_only, json_object *resp, dm_error *err) {
  reg_add_worker(r, resp);
  if (!name)
    return reg_status_list(r, only, n_only, resp, err);
  json_object *arr = json_object_new_array();
  json_object_object_add(resp, "sources", arr);
  reg_task *t = reg_get_task(r, "query-status", name, err);
  if (!t)
    return -1;
  bool all;
  if (reg_check_only(t, "query-status", only, n_only, &all, err) < 0) {
    reg_task_unref(r, t);
    return -1;
  }
  pthread_mutex_lock(&r->lock);
  bool load_failed = !t->cfg && t->has_load_err;
  dm_error lerr = t->load_err;
  pthread_mutex_unlock(&r->lock);
  for (int i = 0; i < t->n_subs; i++) {
    reg_sub *sub = &t->subs[i];
    if (!reg_source_in(only, n_only, sub->source_id))
      continue;
    json_object *st = reg_sub_status(r, t, sub);
    pthread_mutex_lock(&r->lock);
    dmh_subtask *relay = sub->src ? sub->src->relay : NULL;
    bool has_err = !sub->st && sub->has_err;
    dm_error e = sub->err;
    pthread_mutex_unlock(&r->lock);
    json_object *o = json_object_new_object();
    json_object_object_add(o, "result", json_object_new_boolean(!has_err));
    json_object_object_add(o, "msg", json_object_new_string(has_err ? e.message : ""));
    json_object *ss = json_object_new_object();
    json_object_object_add(ss, "source", json_object_new_string(sub->source_id));
    json_object_object_add(ss, "worker", json_object_new_string(r->worker_name));
    json_object_object_add(ss, "result", NULL);
    json_object_object_add(ss, "relayStatus", reg_relay_status(relay));
    json_object_object_add(o, "sourceStatus", ss);
    json_object *subs = json_object_new_array();
    json_object_array_add(subs, st);
    json_object_object_add(o, "subTaskStatus", subs);
    json_object_array_add(arr, o);
  }
  reg_task_unref(r, t);
  if (load_failed) {
    *err = lerr;
    return -1;
  }
  return 0;
}

/* ---- query-lag ---- */

static void reg_lag_samples(void *ud, const char *const *values, int n_labels,
                            const dmh_metrics_sample *s, size_t n) {
  (void)values, (void)n_labels;
  json_object *arr = ud;
  for (size_t i = 0; i < n; i++) {
    json_object *p = json_object_new_array_ext(2);
    json_object_array_add(p, json_object_new_int64(s[i].unix_ms));
    json_object_array_add(p, json_object_new_double(s[i].value));
    json_object_array_add(arr, p);
  }
}

int dmh_registry_task_lag(dmh_registry *r, const char *name, int64_t since_ms, json_object *resp,
                          dm_error *err) {
  reg_task *t = reg_get_task(r, "query-lag", name, err);
  if (!t)
    return -1;
  json_object *arr = json_object_new_array();
  json_object_object_add(resp, "task", json_object_new_string(name));
  json_object_object_add(resp, "periodMs", json_object_new_int(DMH_METRICS_LAG_PERIOD_MS));
  struct timespec now; /* the daemon's clock: a page on another machine draws against it */
  clock_gettime(CLOCK_REALTIME, &now);
  json_object_object_add(resp, "nowMs",
                         json_object_new_int64((int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000));
  json_object_object_add(resp, "sources", arr);
  /* the host's labels of the unit's series (services.c): the subtask's task and source_id */
  static const char *const labels[] = {"task", "source_id"};
  for (int i = 0; i < t->n_subs; i++) {
    json_object *o = json_object_new_object(), *samples = json_object_new_array();
    json_object_object_add(o, "source", json_object_new_string(t->subs[i].source_id));
    json_object_object_add(o, "samples", samples);
    json_object_array_add(arr, o);
    const char *values[] = {name, t->subs[i].source_id};
    dmh_metrics_history_read(dmh_metrics_process(), labels, values, 2, since_ms, reg_lag_samples,
                             samples);
  }
  reg_task_unref(r, t);
  return 0;
}
