/* verify TASK (dmctl verify, POST /api/v1/dmhost/tasks/{task-name}/verify): `dmhost verify` run by
 * the daemon on the task's sources bound here (registry.h, dmh_registry_task_verify). */
#include "registry_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dmhost/sdk.h"
#include "error_json.h"
#include "log.h"
#include "verify.h"

/* The statements of one source's run are answered, not written where a client says: past this
 * size the answer says to run `dmhost verify --fix-sql` on the daemon's machine instead. */
#define REG_VERIFY_FIX_MAX (64u * 1024 * 1024)

/* One source of the task: its subtask's stage when the task's command lock was held. */
typedef struct reg_verify_src {
  const char *id; /* the task copy's instance's */
  bool has_sub;
  dmh_stage stage;
  bool in_sync; /* its current unit is the sync: the one whose checkpoint verify can wait for */
} reg_verify_src;

/* The task's file as the daemon keeps it, loaded afresh: a verify runs for minutes and must not
 * hold the task's cmd_lock (pause-task, update-task) nor borrow t->cfg, which update-task
 * replaces. The stages of its subtasks are read meanwhile. NULL with *err. */
static dmh_task_config *reg_verify_task_copy(dmh_registry *r, reg_task *t, reg_verify_src **srcs,
                                             dm_error *err) {
  if (!reg_lock_task(r, t, "verify", err))
    return NULL;
  dmh_task_config *cfg = NULL;
  char *path = NULL;
  if (!t->cfg) {
    pthread_mutex_lock(&r->lock);
    *err = t->load_err;
    pthread_mutex_unlock(&r->lock);
  } else if (!(path = dmh_state_path(r->state_dir, t->file_rel))) {
    reg_oom(err, "loading the task's copy");
  } else {
    dmh_cfg_trust trust = reg_trust(r, DMH_CFG_OPERATOR);
    if (dmh_task_config_load_as(path, &trust, &cfg, err) < 0)
      cfg = NULL;
  }
  free(path);
  if (cfg && !(*srcs = calloc((size_t)cfg->n_instances + 1, sizeof **srcs))) {
    reg_oom(err, "verifying");
    dmh_task_config_free(cfg);
    cfg = NULL;
  }
  dmh_subtask_view *view = cfg ? malloc(sizeof *view) : NULL; /* large: errors and progress */
  pthread_mutex_lock(&r->lock);
  for (int i = 0; cfg && i < cfg->n_instances; i++) {
    reg_verify_src *v = &(*srcs)[i];
    v->id = cfg->instances[i].source_id;
    for (int k = 0; k < t->n_subs; k++)
      if (strcmp(t->subs[k].source_id, v->id) == 0 && t->subs[k].st) {
        v->has_sub = true;
        v->stage = dmh_subtask_stage(t->subs[k].st);
        if (view) {
          dmh_subtask_summary(t->subs[k].st, view);
          v->in_sync = view->unit && strcmp(view->unit, "Sync") == 0;
        }
      }
  }
  pthread_mutex_unlock(&r->lock);
  free(view);
  pthread_mutex_unlock(&t->cmd_lock);
  return cfg;
}

/* A source's subtask applies the binlog now (or is about to): its target may lag its source. */
static bool reg_verify_moving(const reg_verify_src *v) {
  return v->has_sub && (v->stage == DMH_STAGE_RUNNING || v->stage == DMH_STAGE_RESUMING ||
                        v->stage == DMH_STAGE_PAUSING);
}

/* The fix file of a run, read back into report["fix_sql"]. 0, or -1 with *err. */
static int reg_verify_fix_text(const char *path, json_object *report, dm_error *err) {
  struct stat st;
  if (stat(path, &st) != 0) {
    if (errno == ENOENT)
      return 0; /* the run stopped before it had statements to keep */
    dm_error_set(err, DM_ERR_VERIFY_FIX_FILE, strerror(errno), "verify: reading back %s", path);
    return -1;
  }
  /* the size first: a file past the bound is never read into memory */
  if (st.st_size > (off_t)REG_VERIFY_FIX_MAX) {
    dm_error_set(err, DM_ERR_VERIFY_FIX_FILE, NULL,
                 "verify: the fix statements are %lld bytes, more than an answer carries (%u); "
                 "run `dmhost verify --fix-sql FILE` on the daemon's machine",
                 (long long)st.st_size, REG_VERIFY_FIX_MAX);
    return -1;
  }
  size_t len = 0;
  char *text = dmh_state_read_all(path, &len);
  if (!text) {
    dm_error_set(err, DM_ERR_VERIFY_FIX_FILE, strerror(errno), "verify: reading back %s", path);
    return -1;
  }
  int rc = 0;
  if (len > REG_VERIFY_FIX_MAX) { /* it grew after the stat: nothing else writes it, but bound */
    dm_error_set(err, DM_ERR_VERIFY_FIX_FILE, NULL,
                 "verify: the fix statements are more than an answer carries (%u); run `dmhost "
                 "verify --fix-sql FILE` on the daemon's machine",
                 REG_VERIFY_FIX_MAX);
    rc = -1;
  } else {
    json_object_object_add(report, "fix_sql", json_object_new_string_len(text, (int)len));
  }
  free(text);
  return rc;
}

/* dmh_verify_run on one source, its JSON report parsed; its exit code, *report set (NULL only out
 * of memory, then *err). The fix file is written in a private folder and read back. */
static int reg_verify_one(dmh_registry *r, const dmh_task_config *cfg, const dmh_source_config *src,
                          const dmh_registry_verify_opts *o, const reg_verify_src *v,
                          json_object **report, dm_error *err) {
  bool moving = reg_verify_moving(v);
  char dir[] = "/tmp/dmh-verify-XXXXXX", fix[sizeof dir + 16];
  *report = NULL;
  if (o->fix_sql && !mkdtemp(dir)) { /* 0700 */
    dm_error_set(err, DM_ERR_STATE, strerror(errno), "verify: cannot make a temp folder");
    return DMH_VERIFY_ERROR;
  }
  snprintf(fix, sizeof fix, "%s/fix.sql", dir);
  char *text = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&text, &len);
  if (!out) {
    reg_oom(err, "verifying");
    if (o->fix_sql)
      rmdir(dir);
    return DMH_VERIFY_ERROR;
  }
  dmh_verify_opts vo = {.chunk_rows = o->chunk_rows,
                        .threads = o->threads,
                        .checkpoint_wait_s = (double)o->checkpoint_wait_s,
                        .rechecks = (int)o->rechecks,
                        .fix_path = o->fix_sql ? fix : NULL,
                        .json = true,
                        .out = out,
                        /* a running sync: each chunk compared at its checkpoint, so lag is not a
                         * difference (docs/verify.md, "Consistency") */
                        .at_checkpoint = moving && v->in_sync,
                        /* a paused sync: is the target behind the source's snapshot? */
                        .show_checkpoint = v->has_sub && v->in_sync && !moving,
                        .cancel = &r->verify_cancel};
  /* said: a long verify is work an operator may wonder about (and a shutdown cuts short) */
  dmh_log(DM_LOG_INFO, "verify", "task %s source %s: comparing %s", cfg->name, src->source_id,
          vo.at_checkpoint ? "each chunk at the sync's checkpoint" : "in one snapshot per side");
  int rc = dmh_verify_run(cfg, src, &vo, err);
  static const char *const said[] = {"equal", "different", "not proven (error)"};
  dmh_log(rc == DMH_VERIFY_EQUAL ? DM_LOG_INFO : DM_LOG_WARN, "verify", "task %s source %s: %s%s%s",
          cfg->name, src->source_id, said[rc], err->code ? ": " : "",
          err->code ? err->message : "");
  fclose(out);
  *report = text ? json_tokener_parse(text) : NULL;
  free(text);
  if (!*report) {
    if (!err->code)
      dm_error_set(err, DM_ERR_INTERNAL, NULL, "verify: the report of source %s is not JSON",
                   src->source_id);
    rc = DMH_VERIFY_ERROR;
  } else if (o->fix_sql && reg_verify_fix_text(fix, *report, err) < 0) {
    rc = DMH_VERIFY_ERROR;
  }
  if (o->fix_sql) {
    unlink(fix);
    rmdir(dir);
  }
  return rc;
}

/* -s names a source the task does not read: refused before anything runs. */
static int reg_verify_check_only(const dmh_task_config *cfg, const dmh_registry_verify_opts *o,
                                 dm_error *err) {
  for (size_t i = 0; i < o->n_only; i++)
    if (!dmh_task_instance_for(cfg, o->only[i])) {
      dm_error_set(err, DM_ERR_NOT_FOUND, NULL,
                   "verify: task %s does not read source %s (its mysql-instances)", cfg->name,
                   o->only[i]);
      return -1;
    }
  return 0;
}

int dmh_registry_task_verify(dmh_registry *r, const char *name, const dmh_registry_verify_opts *o,
                             json_object *resp, dm_error *err) {
  static const char *const result[] = {"equal", "different", "error"};
  reg_task *t = reg_get_task(r, "verify", name, err);
  if (!t)
    return -1;
  reg_verify_src *srcs = NULL;
  dmh_task_config *cfg = reg_verify_task_copy(r, t, &srcs, err);
  reg_task_unref(r, t);
  if (!cfg || reg_verify_check_only(cfg, o, err) < 0) {
    dmh_task_config_free(cfg);
    free(srcs);
    return -1;
  }
  json_object *reports = json_object_new_array();
  int worst = DMH_VERIFY_EQUAL, n = 0;
  bool quiet = true;
  dm_error first = {0};
  for (int i = 0; i < cfg->n_instances; i++) {
    const reg_verify_src *v = &srcs[i];
    if (!reg_source_in(o->only, o->n_only, v->id))
      continue;
    /* a source named by -s must be here; the others may be bound to other workers */
    reg_source *s =
        o->n_only ? reg_bound_source(r, "verify", v->id, "", err) : reg_get_source(r, v->id);
    if (!s && o->n_only) {
      worst = DMH_VERIFY_ERROR;
      if (!first.code)
        first = *err;
      continue;
    }
    if (!s)
      continue;
    json_object *report = NULL;
    dm_error e = {0};
    bool moving = reg_verify_moving(v);
    int rc = reg_verify_one(r, cfg, s->cfg, o, v, &report, &e);
    reg_source_unref(r, s);
    n++;
    if (!report) {
      report = json_object_new_object();
      json_object_object_add(report, "source", json_object_new_string(v->id));
      json_object_object_add(report, "result", json_object_new_string(result[DMH_VERIFY_ERROR]));
    }
    quiet = quiet && !moving;
    json_object_object_add(report, "stage",
                           json_object_new_string(v->has_sub ? dmh_stage_name(v->stage) : "New"));
    json_object_object_add(report, "quiet", json_object_new_boolean(!moving));
    /* behind alone says little (any write to the source moves its binlog on): with differences */
    json_object *behind = NULL;
    if (rc == DMH_VERIFY_DIFFER && json_object_object_get_ex(report, "sync_behind", &behind) &&
        json_object_get_boolean(behind))
      json_object_object_add(
          report, "warning",
          json_object_new_string("the sync is not running and its checkpoint is behind the "
                                 "source's snapshot: differences may be changes it has not "
                                 "applied yet; resume the task and verify again (docs/verify.md, "
                                 "\"Consistency\")"));
    else if (moving && !v->in_sync) /* a dump or load running: no sync checkpoint to wait for */
      json_object_object_add(
          report, "warning",
          json_object_new_string("the task has not reached its sync yet: compared as it is, "
                                 "differences may be rows not dumped or loaded yet; verify again "
                                 "once its sync runs (docs/verify.md, \"Consistency\")"));
    if (e.code && !json_object_object_get_ex(report, "error", NULL))
      json_object_object_add(report, "error", dmh_error_to_json(&e, NULL));
    json_object_array_add(reports, report);
    if (rc > worst)
      worst = rc;
    if (rc == DMH_VERIFY_ERROR && !first.code)
      first = e;
  }
  if (n == 0 && worst != DMH_VERIFY_ERROR) {
    pthread_mutex_lock(&r->lock);
    reg_no_source_error(r, cfg, "verify", err);
    pthread_mutex_unlock(&r->lock);
    json_object_put(reports);
    dmh_task_config_free(cfg);
    free(srcs);
    return -1;
  }
  json_object_object_add(resp, "task", json_object_new_string(cfg->name));
  json_object_object_add(resp, "verify", json_object_new_string(result[worst]));
  json_object_object_add(resp, "quiet", json_object_new_boolean(quiet));
  json_object_object_add(resp, "reports", reports);
  dmh_task_config_free(cfg);
  free(srcs);
  if (worst != DMH_VERIFY_ERROR)
    return 0;
  if (first.code)
    *err = first;
  else /* a table that could not be compared: its error is in its report */
    dm_error_set(err, DM_ERR_VERIFY_TABLE, NULL,
                 "verify: task %s: a table could not be compared (its error in reports[].tables)",
                 name);
  return -1;
}

void dmh_registry_cancel_verifies(dmh_registry *r) {
  if (r)
    __atomic_store_n(&r->verify_cancel, 1, __ATOMIC_RELAXED);
}
