/* The daemon's sources and tasks: opening (restoring the persisted state), shutdown, the list of
 * tasks, the references and the writes of state.json. The commands live in registry_sources.c,
 * registry_relay.c and registry_tasks.c; the locking is described in registry.h. */
#include "registry_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dmhost/sdk.h"
#include "error_json.h"
#include "log.h"

char *reg_printf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = NULL;
  int n = vasprintf(&s, fmt, ap);
  va_end(ap);
  return n < 0 ? NULL : s;
}

int reg_oom(dm_error *err, const char *what) {
  dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory %s", what);
  return -1;
}

/* ---- persistence ---- */

int reg_persist_locked(dmh_registry *r, dm_error *err) {
  dmh_state st;
  dmh_state_init(&st);
  st.worker = r->worker;
  int rc = 0;
  if (r->src && r->src->linked &&
      (rc = dmh_state_add_source(&st, r->src->id, r->src->file_rel, r->src->relay_expect, err)) ==
          0)
    st.sources[0].disabled = r->src->disabled;
  for (reg_task *t = r->tasks; t && rc == 0; t = t->next) {
    rc = dmh_state_add_task(&st, t->name, t->file_rel, t->expect, err);
    if (rc == 0)
      st.tasks[st.n_tasks - 1].source_paused = t->source_paused;
    if (rc == 0)
      st.tasks[st.n_tasks - 1].start_pos = t->start_pos;
    for (int k = 0; k < t->unit_paths.n && rc == 0; k++)
      rc = dmh_unit_paths_set(&st.tasks[st.n_tasks - 1].unit_paths, t->unit_paths.unit[k],
                              t->unit_paths.path[k], err);
  }
  if (rc == 0)
    rc = dmh_state_save(r->state_dir, &st, err);
  dmh_state_clear(&st);
  if (rc < 0)
    dmh_log(DM_LOG_ERROR, "registry", "persisting the state failed: %s", err->message);
  return rc;
}

/* ---- references ---- */

static void reg_source_free(reg_source *s) {
  dmh_subtask_destroy(s->relay);
  dmh_source_config_free(s->cfg);
  free(s->id);
  free(s->file_rel);
  free(s);
}

void reg_source_unref(dmh_registry *r, reg_source *s) {
  if (!s)
    return;
  pthread_mutex_lock(&r->lock);
  bool last = --s->refs == 0 && !s->linked;
  pthread_mutex_unlock(&r->lock);
  if (last)
    reg_source_free(s);
}

/* Destroy the subtasks (blocking, bounded), then what they borrowed. Outside `lock`. */
static void reg_task_free(dmh_registry *r, reg_task *t) {
  for (int i = 0; i < t->n_subs; i++)
    dmh_subtask_destroy(t->subs[i].st);
  for (int i = 0; i < t->n_subs; i++) {
    reg_source_unref(r, t->subs[i].src);
    free(t->subs[i].source_id);
    free(t->subs[i].work_root);
  }
  dmh_task_config_free(t->cfg);
  reg_task_free_retired(t);
  dmh_unit_paths_clear(&t->unit_paths);
  pthread_mutex_destroy(&t->cmd_lock);
  free(t->subs);
  free(t->name);
  free(t->file_rel);
  free(t);
}

void reg_task_unref(dmh_registry *r, reg_task *t) {
  pthread_mutex_lock(&r->lock);
  bool last = --t->refs == 0 && !t->linked;
  pthread_mutex_unlock(&r->lock);
  if (last)
    reg_task_free(r, t);
}

reg_task *reg_find_task_locked(dmh_registry *r, const char *name) {
  for (reg_task *t = r->tasks; t; t = t->next)
    if (strcmp(t->name, name) == 0)
      return t;
  return NULL;
}

/* At the end: the list (and state.json) keeps the order in which tasks were started. */
void reg_link_task_locked(dmh_registry *r, reg_task *t) {
  reg_task **pp = &r->tasks;
  while (*pp)
    pp = &(*pp)->next;
  t->next = NULL;
  *pp = t;
  t->linked = true;
}

void reg_unlink_task_locked(dmh_registry *r, reg_task *t) {
  for (reg_task **pp = &r->tasks; *pp; pp = &(*pp)->next) {
    if (*pp == t) {
      *pp = t->next;
      break;
    }
  }
  t->next = NULL;
  t->linked = false;
}

/* Find a task and pin it; DM_ERR_NOT_FOUND naming it otherwise. */
reg_task *reg_get_task(dmh_registry *r, const char *cmd, const char *name, dm_error *err) {
  pthread_mutex_lock(&r->lock);
  reg_task *t = reg_find_task_locked(r, name);
  if (t)
    t->refs++;
  pthread_mutex_unlock(&r->lock);
  if (!t)
    dm_error_set(err, DM_ERR_NOT_FOUND, NULL,
                 "%s: task \"%s\" does not exist on this worker; list the tasks with `dmctl "
                 "query-status`",
                 cmd, name);
  return t;
}

/* Take the task's command lock; false (DM_ERR_NOT_FOUND) if stop-task removed it meanwhile. */
bool reg_lock_task(dmh_registry *r, reg_task *t, const char *cmd, dm_error *err) {
  pthread_mutex_lock(&t->cmd_lock);
  pthread_mutex_lock(&r->lock);
  bool linked = t->linked;
  pthread_mutex_unlock(&r->lock);
  if (!linked) {
    pthread_mutex_unlock(&t->cmd_lock);
    dm_error_set(err, DM_ERR_NOT_FOUND, NULL, "%s: task \"%s\" was stopped and removed meanwhile",
                 cmd, t->name);
  }
  return linked;
}

/* Pin the bound source if it is `id` (or any, with id NULL). */
reg_source *reg_get_source(dmh_registry *r, const char *id) {
  pthread_mutex_lock(&r->lock);
  reg_source *s = r->src;
  if (s && id && strcmp(s->id, id) != 0)
    s = NULL;
  if (s)
    s->refs++;
  pthread_mutex_unlock(&r->lock);
  return s;
}

/* ---- JSON pieces ---- */

static json_object *reg_worker_json(dmh_registry *r, const dmh_worker *w) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "name", json_object_new_string(r->worker_name));
  json_object_object_add(o, "stage", json_object_new_string(dmh_worker_stage_name(w->stage)));
  json_object_object_add(o, "source", json_object_new_string(w->source));
  return o;
}

void reg_add_worker(dmh_registry *r, json_object *resp) {
  dmh_worker w = dmh_registry_worker(r);
  json_object_object_add(resp, "worker", reg_worker_json(r, &w));
}

/* One element of DM's "sources" array: {"result", "msg", "source", "worker"[, "error"]}. */
json_object *reg_source_result(dmh_registry *r, const char *source, const dm_error *e) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "result", json_object_new_boolean(e == NULL));
  json_object_object_add(o, "msg", json_object_new_string(e ? e->message : ""));
  json_object_object_add(o, "source", json_object_new_string(source));
  json_object_object_add(o, "worker", json_object_new_string(r->worker_name));
  if (e)
    json_object_object_add(o, "error", dmh_error_to_json(e, NULL));
  return o;
}

int reg_reply_source(dmh_registry *r, const char *source, int rc, const dm_error *err,
                     json_object *resp) {
  json_object *arr = json_object_new_array();
  json_object_array_add(arr, reg_source_result(r, source, rc < 0 ? err : NULL));
  json_object_object_add(resp, "sources", arr);
  reg_add_worker(r, resp);
  return rc;
}

/* ---- the supervisor's side of a subtask ---- */

/* Create the subtask of task t on sub (cmd_lock held; not `lock`). */
int reg_sub_create(dmh_registry *r, reg_task *t, reg_sub *sub, dm_error *err) {
  if (!sub->src) {
    dm_error_set(err, DM_ERR_NOT_FOUND, NULL,
                 "task %s: source \"%s\" is not bound to this worker; create it with `dmctl "
                 "operate-source create SOURCE.cfg`, then resume the task",
                 t->name, sub->source_id);
    return -1;
  }
  if (dmh_state_mkdirs(sub->work_root, err) < 0)
    return -1;
  pthread_mutex_lock(&r->lock);
  /* Tasks read through the relay only when the source file enables it (the supervisor gives the
   * units the relay dir on the same condition). */
  dmh_subtask *relay = sub->src->cfg->enable_relay ? sub->src->relay : NULL;
  dmh_subtask_opts o = {
      .task = t->cfg,
      .source = sub->src->cfg,
      .work_root = sub->work_root,
      .plugin_dir = r->plugin_dir,
      .relay = relay,
      .trusted_only = true, /* the daemon runs only builds no other user can change */
      .unit_folders = &r->folders,
      .fencing_token = r->fencing_token,
      .worker_name = r->worker_name,
      .shard = r->shard_coord ? r->shard_coord : dmh_shard_local_coord(r->shard),
  };
  for (int k = 0; k < t->unit_paths.n; k++) {
    int slot = dmh_task_slot_of(t->cfg, t->unit_paths.unit[k]);
    if (slot >= 0) /* a kind the task file no longer names is left out */
      o.unit_paths[slot] = t->unit_paths.path[k];
  }
  pthread_mutex_unlock(&r->lock);
  /* unit_paths strings are only changed under cmd_lock, which the caller holds. */
  dmh_subtask *st = dmh_subtask_create(&o, err);
  if (!st)
    return -1;
  pthread_mutex_lock(&r->lock);
  sub->st = st;
  sub->has_err = false;
  pthread_mutex_unlock(&r->lock);
  return 0;
}

void reg_sub_set_error(dmh_registry *r, reg_sub *sub, const dm_error *e) {
  pthread_mutex_lock(&r->lock);
  sub->has_err = true;
  sub->err = *e;
  pthread_mutex_unlock(&r->lock);
}

/* The copy of a file in the state dir must mean what the original meant: a relative path resolves
 * next to the file, which is now another folder. */
int reg_check_paths(const char *orig_path, char *const *a, char *const *b, int n,
                    const dmh_task_config *t, dm_error *err) {
  for (int k = 0; k < n; k++) {
    if (!a[k] && !b[k])
      continue;
    if (a[k] && b[k] && strcmp(a[k], b[k]) == 0)
      continue;
    dm_error_set(err, DM_ERR_CONFIG_INVALID, NULL,
                 "%s: unit-paths.%s is a relative path (resolving to %s); the file is copied into "
                 "the state dir, where it would resolve to %s: give an absolute path",
                 orig_path, t ? dmh_task_slot_name(t, k) : "relay", a[k] ? a[k] : "(none)",
                 b[k] ? b[k] : "(none)");
    return -1;
  }
  return 0;
}

/* ---- restore ---- */

reg_task *reg_task_new(const char *name, const char *file_rel) {
  reg_task *t = calloc(1, sizeof *t);
  if (!t)
    return NULL;
  t->name = strdup(name);
  t->file_rel = strdup(file_rel);
  pthread_mutex_init(&t->cmd_lock, NULL);
  if (!t->name || !t->file_rel) {
    free(t->name);
    free(t->file_rel);
    pthread_mutex_destroy(&t->cmd_lock);
    free(t);
    return NULL;
  }
  return t;
}

/* Subs for the instances of t->cfg whose source is bound (all of them with `all`, so that a
 * missing source shows as an error). Under `lock`. Returns the count, -1 when out of
 * memory. */
int reg_make_subs_locked(dmh_registry *r, reg_task *t, const dmh_task_config *cfg, bool all) {
  t->subs = calloc((size_t)(cfg->n_instances > 0 ? cfg->n_instances : 1), sizeof *t->subs);
  if (!t->subs)
    return -1;
  for (int i = 0; i < cfg->n_instances; i++) {
    const char *sid = cfg->instances[i].source_id;
    reg_source *src = r->src && r->src->linked && strcmp(r->src->id, sid) == 0 ? r->src : NULL;
    if (!src && !all)
      continue;
    reg_sub *sub = &t->subs[t->n_subs];
    sub->source_id = strdup(sid);
    sub->work_root = dmh_state_task_work_root(r->state_dir, t->name, sid);
    if (!sub->source_id || !sub->work_root) {
      free(sub->source_id);
      free(sub->work_root);
      return -1;
    }
    if (src) {
      src->refs++;
      sub->src = src;
    }
    t->n_subs++;
  }
  return t->n_subs;
}

static void reg_restore_relay(dmh_registry *r, reg_source *s) {
  char *root = dmh_state_relay_work_root(r->state_dir, s->id);
  dm_error err;
  dmh_subtask_opts o = {.source = s->cfg,
                        .work_root = root,
                        .plugin_dir = r->plugin_dir,
                        .trusted_only = true,
                        .unit_folders = &r->folders,
                        .worker_name = r->worker_name};
  dmh_subtask *relay = NULL;
  if (!root)
    reg_oom(&err, "restoring the relay");
  else if (dmh_state_mkdirs(root, &err) == 0)
    relay = dmh_subtask_create_relay(&o, &err);
  free(root);
  if (!relay) {
    dmh_log(DM_LOG_ERROR, "registry", "relay of source %s not restored: %s", s->id, err.message);
    s->has_relay_err = true;
    s->relay_err = err;
    return;
  }
  s->relay = relay;
  if (dmh_subtask_start(relay, &err) < 0)
    dmh_log(DM_LOG_ERROR, "registry", "relay of source %s did not start: %s", s->id, err.message);
  else
    dmh_log(DM_LOG_INFO, "registry", "relay of source %s restored, Running", s->id);
}

static int reg_restore_source(dmh_registry *r, const dmh_state_source *ss, dm_error *err) {
  char *path = dmh_state_path(r->state_dir, ss->file);
  if (!path)
    return reg_oom(err, "restoring a source");
  dmh_source_config *cfg = NULL;
  dm_error cerr;
  dmh_cfg_trust trust = reg_trust(r, DMH_CFG_OPERATOR);
  if (dmh_source_config_load_as(path, &trust, &cfg, &cerr) < 0) {
    dm_error_set(err, DM_ERR_STATE, cerr.message,
                 "state: the copy of source %s at %s cannot be loaded; restore the file, or "
                 "remove the source (and the worker binding) from %s/%s",
                 ss->source_id, path, r->state_dir, DMH_STATE_FILE);
    free(path);
    return -1;
  }
  free(path);
  reg_source *s = calloc(1, sizeof *s);
  if (!s || !(s->id = strdup(ss->source_id)) || !(s->file_rel = strdup(ss->file))) {
    if (s)
      free(s->id);
    free(s);
    dmh_source_config_free(cfg);
    return reg_oom(err, "restoring a source");
  }
  s->cfg = cfg;
  s->relay_expect = ss->relay;
  s->disabled = ss->disabled;
  s->linked = true;
  r->src = s;
  if (ss->relay == DMH_EXPECT_RUNNING)
    reg_restore_relay(r, s);
  return 0;
}

static void reg_restore_task(dmh_registry *r, const dmh_state_task *ts, bool hold) {
  reg_task *t = reg_task_new(ts->name, ts->file);
  if (!t) {
    dmh_log(DM_LOG_ERROR, "registry", "out of memory restoring task %s", ts->name);
    return;
  }
  t->expect = ts->stage;
  t->source_paused = ts->source_paused;
  t->start_pos = ts->start_pos;
  for (int k = 0; k < ts->unit_paths.n; k++) {
    dm_error e;
    if (dmh_unit_paths_set(&t->unit_paths, ts->unit_paths.unit[k], ts->unit_paths.path[k], &e) < 0)
      dmh_log(DM_LOG_ERROR, "registry", "restoring task %s: %s", ts->name, e.message);
  }
  t->linked = true;
  reg_link_task_locked(r, t);

  char *path = dmh_state_path(r->state_dir, ts->file);
  dm_error err;
  dmh_cfg_trust trust = reg_trust(r, DMH_CFG_OPERATOR);
  if (!path || dmh_task_config_load_as(path, &trust, &t->cfg, &err) < 0) {
    dm_error e;
    dm_error_set(&e, DM_ERR_STATE, path ? err.message : "out of memory",
                 "state: the copy of task %s at %s cannot be loaded; restore the file, or "
                 "`dmctl stop-task %s` and start it again",
                 ts->name, path ? path : "?", ts->name);
    t->has_load_err = true;
    t->load_err = e;
    dmh_log(DM_LOG_ERROR, "registry", "%s", e.message);
    free(path);
    return;
  }
  free(path);
  /* --start-time's position is the meta of a fresh sync, after a restart too */
  if (r->src && reg_start_time_apply(t->cfg, r->src->id, &t->start_pos, &err) < 0)
    dmh_log(DM_LOG_ERROR, "registry", "task %s: %s", t->name, err.message);
  /* the locks are back before any unit or command asks (DM's recoverLocks) */
  if (dmh_shard_local_load(r->shard, t->name, &err) < 0)
    dmh_log(DM_LOG_ERROR, "registry", "task %s: %s", t->name, err.message);
  int n = reg_make_subs_locked(r, t, t->cfg, false);
  if (n == 0) {
    /* None of its sources is bound (a state edited by hand): keep them all, each with its
     * error, so that query-status says why nothing runs. */
    free(t->subs);
    t->subs = NULL;
    n = reg_make_subs_locked(r, t, t->cfg, true);
  }
  if (n < 0) {
    dmh_log(DM_LOG_ERROR, "registry", "out of memory restoring task %s", ts->name);
    return;
  }
  for (int i = 0; i < t->n_subs; i++) {
    reg_sub *sub = &t->subs[i];
    /* restore runs before the socket listens: nothing else takes `lock` yet, and the helpers
     * below take it themselves. */
    pthread_mutex_unlock(&r->lock);
    if (reg_sub_create(r, t, sub, &err) < 0) {
      reg_sub_set_error(r, sub, &err);
      dmh_log(DM_LOG_ERROR, "registry", "task %s source %s not restored: %s", t->name,
              sub->source_id, err.message);
    } else if (t->expect == DMH_EXPECT_RUNNING && !hold) {
      if (dmh_subtask_start(sub->st, &err) < 0)
        dmh_log(DM_LOG_ERROR, "registry", "task %s source %s did not start: %s", t->name,
                sub->source_id, err.message);
      else
        dmh_log(DM_LOG_INFO, "registry", "task %s source %s restored, Running", t->name,
                sub->source_id);
    } else {
      dmh_log(DM_LOG_INFO, "registry", "task %s source %s restored, left New (%s)", t->name,
              sub->source_id, hold ? "held until the cluster says Running" : "expected Paused");
    }
    pthread_mutex_lock(&r->lock);
  }
}

void dmh_registry_set_fencing_token(dmh_registry *r, uint64_t token) {
  pthread_mutex_lock(&r->lock);
  r->fencing_token = token;
  pthread_mutex_unlock(&r->lock);
}

uint64_t dmh_registry_fencing_token(dmh_registry *r) {
  pthread_mutex_lock(&r->lock);
  uint64_t token = r->fencing_token;
  pthread_mutex_unlock(&r->lock);
  return token;
}

char *dmh_registry_default_worker_name(void) {
  char host[256];
  if (gethostname(host, sizeof host) < 0)
    strcpy(host, "localhost");
  host[sizeof host - 1] = '\0';
  return reg_printf("dmhost@%s", host);
}

dmh_cfg_trust reg_trust(const dmh_registry *r, dmh_cfg_origin origin) {
  dmh_cfg_trust t = {
      .origin = r->configs_submitted ? DMH_CFG_SUBMITTED : origin,
      .secrets_dir = r->secrets_dir,
      .allow_unit_paths = r->allow_submitted_unit_paths,
  };
  return t;
}

/* Does `real` lie in a folder this daemon writes into from what servers send (loader.h,
 * dmh_unit_folders.daemon_writes)? The state dir (the work dirs and the copies of relay and dump
 * are in it by default), the bound source's relay-dir, and the `dir` of every task's unit sections
 * (a dump folder the load reads, wherever it is). */
static bool reg_daemon_writes(void *ud, const char *real, char *which, size_t size) {
  dmh_registry *r = ud;
  bool hit = false;
  char *state = realpath(r->state_dir, NULL);
  if (dmh_path_below(real, state ? state : r->state_dir)) {
    snprintf(which, size, "the state dir %s", r->state_dir);
    hit = true;
  }
  free(state);
  pthread_mutex_lock(&r->lock);
  if (!hit && r->src && r->src->cfg && r->src->cfg->relay_dir) {
    char *rd = realpath(r->src->cfg->relay_dir, NULL);
    if (dmh_path_below(real, rd ? rd : r->src->cfg->relay_dir)) {
      snprintf(which, size, "the relay-dir %s of source %s", r->src->cfg->relay_dir, r->src->id);
      hit = true;
    }
    free(rd);
  }
  for (reg_task *t = r->tasks; t && !hit; t = t->next) {
    for (int i = 0; t->cfg && i < t->cfg->n_chain && !hit; i++) {
      config_setting_t *sec = dmh_task_section_named(t->cfg, t->cfg->chain[i].name);
      const char *dir = NULL;
      if (!sec || !config_setting_lookup_string(sec, "dir", &dir) || !dir[0])
        continue;
      char *abs = dir[0] == '/' ? realpath(dir, NULL) : NULL;
      if (dir[0] == '/' && dmh_path_below(real, abs ? abs : dir)) {
        snprintf(which, size, "the %s folder %s of task %s", t->cfg->chain[i].name, dir, t->name);
        hit = true;
      }
      free(abs);
    }
  }
  pthread_mutex_unlock(&r->lock);
  return hit;
}

int dmh_registry_real_dirs(const char *const *dirs, int n, const char *state_dir, bool units,
                           char ***out, char *why, size_t why_size) {
  *out = calloc((size_t)n + 1, sizeof **out);
  if (!*out) {
    snprintf(why, why_size, "out of memory");
    return -1;
  }
  char *state = state_dir ? realpath(state_dir, NULL) : NULL;
  int rc = 0;
  for (int i = 0; i < n && rc == 0; i++) {
    struct stat st;
    char *real = realpath(dirs[i], NULL);
    if (!real || stat(real, &st) != 0 || !S_ISDIR(st.st_mode)) {
      snprintf(why, why_size, "%s: %s", dirs[i], real ? "not a folder" : strerror(errno));
      rc = -1;
    } else if (units && state && (dmh_path_below(real, state) || dmh_path_below(state, real))) {
      /* The daemon writes upstream bytes below its state dir: no unit folder may overlap it. */
      snprintf(why, why_size,
               "%s: a unit folder must not hold or lie in the state dir %s (the daemon writes "
               "what servers send there)",
               dirs[i], state);
      rc = -1;
    }
    (*out)[i] = real;
    if (rc < 0 && !real)
      break;
  }
  free(state);
  if (rc < 0) {
    for (int i = 0; i < n; i++)
      free((*out)[i]);
    free(*out);
    *out = NULL;
  }
  return rc;
}

/* The plugin folder and the --unit-dir folders (real paths) of a daemon's registry. */
static int reg_set_folders(dmh_registry *r, const dmh_registry_opts *opts) {
  r->unit_dirs = calloc((size_t)opts->n_unit_dirs + 1, sizeof *r->unit_dirs);
  if (!r->unit_dirs)
    return -1;
  const char *plugins = r->plugin_dir ? r->plugin_dir : dmh_plugin_dir_default();
  char *real = realpath(plugins, NULL);
  if (real)
    r->unit_dirs[r->n_unit_dirs++] = real;
  for (int i = 0; i < opts->n_unit_dirs; i++)
    if (!(r->unit_dirs[r->n_unit_dirs++] = strdup(opts->unit_dirs[i])))
      return -1;
  r->folders = (dmh_unit_folders){.allowed = (const char *const *)r->unit_dirs,
                                  .n_allowed = r->n_unit_dirs,
                                  .daemon_writes = reg_daemon_writes,
                                  .ud = r};
  if (opts->secrets_dir && !(r->secrets_dir = strdup(opts->secrets_dir)))
    return -1;
  r->allow_submitted_unit_paths = opts->allow_submitted_unit_paths;
  r->configs_submitted = opts->configs_submitted;
  return 0;
}

int dmh_registry_open(const dmh_registry_opts *opts, dmh_registry **out, dm_error *err) {
  *out = NULL;
  if (dmh_state_mkdirs(opts->state_dir, err) < 0)
    return -1;
  dmh_state st;
  if (dmh_state_load(opts->state_dir, &st, err) < 0)
    return -1;
  dmh_registry *r = calloc(1, sizeof *r);
  if (!r || !(r->state_dir = strdup(opts->state_dir)) ||
      (opts->plugin_dir && !(r->plugin_dir = strdup(opts->plugin_dir))) ||
      !(r->worker_name =
            opts->worker_name ? strdup(opts->worker_name) : dmh_registry_default_worker_name())) {
    if (r) {
      free(r->state_dir);
      free(r->plugin_dir);
    }
    free(r);
    dmh_state_clear(&st);
    return reg_oom(err, "opening the registry");
  }
  pthread_mutex_init(&r->source_lock, NULL);
  pthread_mutex_init(&r->lock, NULL);
  pthread_mutex_init(&r->files_lock, NULL);
  dmh_worker_init(&r->worker);
  if (reg_set_folders(r, opts) < 0) {
    dmh_state_clear(&st);
    dmh_registry_shutdown(r);
    return reg_oom(err, "opening the registry");
  }
  r->fencing_token = opts->fencing_token;
  r->shard_coord = opts->shard;
  if (!(r->shard = dmh_shard_local_new(r->state_dir, err))) {
    dmh_state_clear(&st);
    dmh_registry_shutdown(r);
    return -1;
  }

  dmh_worker_event ev = {DMH_WORKER_EV_RESTORE, st.worker.source,
                         st.worker.stage == DMH_WORKER_RELAY};
  int rc = dmh_worker_apply(&r->worker, &ev, &r->worker, err);
  if (rc == 0)
    dmh_log(DM_LOG_INFO, "registry", "worker %s restored: %s%s%s", r->worker_name,
            dmh_worker_stage_name(r->worker.stage), r->worker.source[0] ? " to " : "",
            r->worker.source);
  pthread_mutex_lock(&r->lock);
  for (int i = 0; rc == 0 && i < st.n_sources; i++) {
    pthread_mutex_unlock(&r->lock);
    rc = reg_restore_source(r, &st.sources[i], err);
    pthread_mutex_lock(&r->lock);
  }
  for (int i = 0; rc == 0 && i < st.n_tasks; i++)
    reg_restore_task(r, &st.tasks[i], opts->hold_tasks);
  pthread_mutex_unlock(&r->lock);
  dmh_state_clear(&st);
  if (rc < 0) {
    dmh_registry_shutdown(r);
    return -1;
  }
  *out = r;
  return 0;
}

/* Pin every task (in list order). */
reg_task **reg_all_tasks(dmh_registry *r, int *n_out) {
  pthread_mutex_lock(&r->lock);
  int n = 0;
  for (reg_task *t = r->tasks; t; t = t->next)
    n++;
  reg_task **all = calloc((size_t)(n ? n : 1), sizeof *all);
  n = 0;
  for (reg_task *t = r->tasks; t && all; t = t->next) {
    t->refs++;
    all[n++] = t;
  }
  pthread_mutex_unlock(&r->lock);
  *n_out = n;
  return all;
}

void dmh_registry_shutdown(dmh_registry *r) {
  if (!r)
    return;
  /* Pause what runs, so the units save their checkpoints at a safe point; the expected stages in
   * state.json are left as they are. */
  int n;
  reg_task **all = reg_all_tasks(r, &n);
  for (int i = 0; i < n; i++) {
    reg_task *t = all[i];
    pthread_mutex_lock(&t->cmd_lock);
    for (int j = 0; j < t->n_subs; j++) {
      dmh_subtask *st = t->subs[j].st;
      dm_error err;
      if (st && dmh_subtask_stage(st) == DMH_STAGE_RUNNING && dmh_subtask_pause(st, &err) < 0)
        dmh_log(DM_LOG_WARN, "registry", "task %s source %s: pause at shutdown: %s", t->name,
                t->subs[j].source_id, err.message);
    }
    pthread_mutex_unlock(&t->cmd_lock);
  }
  pthread_mutex_lock(&r->lock);
  while (r->tasks)
    reg_unlink_task_locked(r, r->tasks);
  reg_source *src = r->src;
  r->src = NULL;
  if (src) {
    src->linked = false;
    src->refs++; /* ours: the tasks' references go first, with the subtasks borrowing it */
  }
  dmh_worker_event ev = {DMH_WORKER_EV_SHUTDOWN, NULL, false};
  dm_error err;
  dmh_worker_apply(&r->worker, &ev, &r->worker, &err);
  pthread_mutex_unlock(&r->lock);
  for (int i = 0; i < n; i++)
    reg_task_unref(r, all[i]); /* the tasks' subtasks go before the relay they borrow */
  free(all);
  reg_source_unref(r, src);       /* destroys the relay */
  dmh_shard_local_free(r->shard); /* after every subtask using it */
  pthread_mutex_destroy(&r->lock);
  pthread_mutex_destroy(&r->files_lock);
  pthread_mutex_destroy(&r->source_lock);
  free(r->state_dir);
  free(r->plugin_dir);
  free(r->worker_name);
  free(r->settings);
  for (int i = 0; i < r->n_unit_dirs; i++)
    free(r->unit_dirs[i]);
  free(r->unit_dirs);
  free(r->secrets_dir);
  free(r);
}

const char *dmh_registry_state_dir(const dmh_registry *r) {
  return r->state_dir;
}

const char *dmh_registry_worker_name(const dmh_registry *r) {
  return r->worker_name;
}

void dmh_registry_set_addr(dmh_registry *r, const char *addr) {
  pthread_mutex_lock(&r->lock);
  dm_strlcpy(r->addr, addr ? addr : "", sizeof r->addr);
  pthread_mutex_unlock(&r->lock);
}

void dmh_registry_addr(dmh_registry *r, char *buf, size_t len) {
  pthread_mutex_lock(&r->lock);
  dm_strlcpy(buf, r->addr, len);
  pthread_mutex_unlock(&r->lock);
}

int dmh_registry_set_settings(dmh_registry *r, const char *text) {
  char *copy = text ? strdup(text) : NULL;
  if (text && !copy)
    return -1;
  pthread_mutex_lock(&r->lock);
  free(r->settings);
  r->settings = copy;
  pthread_mutex_unlock(&r->lock);
  return 0;
}

char *dmh_registry_settings(dmh_registry *r) {
  pthread_mutex_lock(&r->lock);
  char *copy = r->settings ? strdup(r->settings) : NULL;
  pthread_mutex_unlock(&r->lock);
  return copy;
}

dmh_worker dmh_registry_worker(dmh_registry *r) {
  pthread_mutex_lock(&r->lock);
  dmh_worker w = r->worker;
  pthread_mutex_unlock(&r->lock);
  return w;
}
