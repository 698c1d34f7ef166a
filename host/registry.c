/* The daemon's sources and tasks; the locking is described in registry.h. */
#include "registry.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "control.h"
#include "dmhost/sdk.h"
#include "error_json.h"
#include "log.h"
#include "relay_purge.h"
#include "state.h"
#include "supervisor.h"

/* The bound source. Freed by the last reference after it was unlinked. */
typedef struct reg_source {
  char *id;
  char *file_rel;
  dmh_source_config *cfg;
  dmh_subtask *relay; /* [lock] created by start-relay (or enable-relay); lives as long as this */
  dmh_expect_stage relay_expect; /* [lock] */
  bool has_relay_err;            /* [lock] the relay could not be created: relay_err says why */
  dm_error relay_err;
  int refs;    /* [lock] */
  bool linked; /* [lock] */
} reg_source;

typedef struct reg_sub {
  char *source_id;
  reg_source *src; /* one reference, NULL if the source is not bound (restore only) */
  dmh_subtask *st; /* [lock] NULL until created, or when creating it failed (err says why) */
  bool has_err;    /* [lock] */
  dm_error err;    /* [lock] */
  char *work_root;
} reg_sub;

typedef struct reg_task {
  struct reg_task *next; /* [lock] */
  char *name;
  char *file_rel;
  dmh_task_config *cfg;    /* [cmd_lock + lock to set] NULL if its copy could not be loaded */
  bool has_load_err;       /* [lock] */
  dm_error load_err;       /* [lock] */
  dmh_expect_stage expect; /* [lock] */
  char *unit_paths[DMH_KIND_COUNT]; /* [lock] swapped builds */
  reg_sub *subs;
  int n_subs;
  pthread_mutex_t cmd_lock;
  int refs;    /* [lock] */
  bool linked; /* [lock] */
} reg_task;

struct dmh_registry {
  char *state_dir;
  char *plugin_dir;
  char *worker_name;
  pthread_mutex_t source_lock;
  pthread_mutex_t lock;
  dmh_worker worker; /* [lock] */
  reg_source *src;   /* [lock] the bound source, or NULL */
  reg_task *tasks;   /* [lock] */
};

static char *reg_strdup(const char *s) {
  return s ? strdup(s) : NULL;
}

static char *reg_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *reg_printf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = NULL;
  int n = vasprintf(&s, fmt, ap);
  va_end(ap);
  return n < 0 ? NULL : s;
}

static int reg_oom(dm_error *err, const char *what) {
  dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory %s", what);
  return -1;
}

/* ---- persistence ---- */

static int reg_persist_locked(dmh_registry *r, dm_error *err) {
  dmh_state st;
  dmh_state_init(&st);
  st.worker = r->worker;
  int rc = 0;
  if (r->src && r->src->linked)
    rc = dmh_state_add_source(&st, r->src->id, r->src->file_rel, r->src->relay_expect, err);
  for (reg_task *t = r->tasks; t && rc == 0; t = t->next) {
    rc = dmh_state_add_task(&st, t->name, t->file_rel, t->expect, err);
    for (int k = 0; k < DMH_KIND_COUNT && rc == 0; k++)
      if (t->unit_paths[k])
        rc = dmh_state_task_set_unit_path(&st.tasks[st.n_tasks - 1], k, t->unit_paths[k], err);
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

static void reg_source_unref(dmh_registry *r, reg_source *s) {
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
  for (int k = 0; k < DMH_KIND_COUNT; k++)
    free(t->unit_paths[k]);
  pthread_mutex_destroy(&t->cmd_lock);
  free(t->subs);
  free(t->name);
  free(t->file_rel);
  free(t);
}

static void reg_task_unref(dmh_registry *r, reg_task *t) {
  pthread_mutex_lock(&r->lock);
  bool last = --t->refs == 0 && !t->linked;
  pthread_mutex_unlock(&r->lock);
  if (last)
    reg_task_free(r, t);
}

static reg_task *reg_find_task_locked(dmh_registry *r, const char *name) {
  for (reg_task *t = r->tasks; t; t = t->next)
    if (strcmp(t->name, name) == 0)
      return t;
  return NULL;
}

/* At the end: the list (and state.json) keeps the order in which tasks were started. */
static void reg_link_task_locked(dmh_registry *r, reg_task *t) {
  reg_task **pp = &r->tasks;
  while (*pp)
    pp = &(*pp)->next;
  t->next = NULL;
  *pp = t;
  t->linked = true;
}

static void reg_unlink_task_locked(dmh_registry *r, reg_task *t) {
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
static reg_task *reg_get_task(dmh_registry *r, const char *cmd, const char *name, dm_error *err) {
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
static bool reg_lock_task(dmh_registry *r, reg_task *t, const char *cmd, dm_error *err) {
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

/* ---- JSON pieces ---- */

static json_object *reg_worker_json(dmh_registry *r, const dmh_worker *w) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "name", json_object_new_string(r->worker_name));
  json_object_object_add(o, "stage", json_object_new_string(dmh_worker_stage_name(w->stage)));
  json_object_object_add(o, "source", json_object_new_string(w->source));
  return o;
}

static void reg_add_worker(dmh_registry *r, json_object *resp) {
  dmh_worker w = dmh_registry_worker(r);
  json_object_object_add(resp, "worker", reg_worker_json(r, &w));
}

/* One element of DM's "sources" array: {"result", "msg", "source", "worker"[, "error"]}. */
static json_object *reg_source_result(dmh_registry *r, const char *source, const dm_error *e) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "result", json_object_new_boolean(e == NULL));
  json_object_object_add(o, "msg", json_object_new_string(e ? e->message : ""));
  json_object_object_add(o, "source", json_object_new_string(source));
  json_object_object_add(o, "worker", json_object_new_string(r->worker_name));
  if (e)
    json_object_object_add(o, "error", dmh_control_error_json(e));
  return o;
}

/* ---- the supervisor's side of a subtask ---- */

/* Create the subtask of task t on sub (cmd_lock held; not `lock`). */
static int reg_sub_create(dmh_registry *r, reg_task *t, reg_sub *sub, dm_error *err) {
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
  };
  for (int k = 0; k < DMH_KIND_COUNT; k++)
    o.unit_paths[k] = t->unit_paths[k];
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

static void reg_sub_set_error(dmh_registry *r, reg_sub *sub, const dm_error *e) {
  pthread_mutex_lock(&r->lock);
  sub->has_err = true;
  sub->err = *e;
  pthread_mutex_unlock(&r->lock);
}

/* The copy of a file in the state dir must mean what the original meant: a relative path resolves
 * next to the file, which is now another folder. */
static int reg_check_paths(const char *orig_path, char *const a[DMH_KIND_COUNT],
                           char *const b[DMH_KIND_COUNT], dm_error *err) {
  for (int k = 0; k < DMH_KIND_COUNT; k++) {
    if (!a[k] && !b[k])
      continue;
    if (a[k] && b[k] && strcmp(a[k], b[k]) == 0)
      continue;
    dm_error_set(err, DM_ERR_CONFIG_INVALID, NULL,
                 "%s: unit-paths.%s is a relative path (resolving to %s); the file is copied into "
                 "the state dir, where it would resolve to %s: give an absolute path",
                 orig_path, dmh_kind_name(dmh_kind_of_index(k)), a[k] ? a[k] : "(none)",
                 b[k] ? b[k] : "(none)");
    return -1;
  }
  return 0;
}

/* ---- restore ---- */

static reg_task *reg_task_new(const char *name, const char *file_rel) {
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
static int reg_make_subs_locked(dmh_registry *r, reg_task *t, const dmh_task_config *cfg,
                                bool all) {
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
  dmh_subtask_opts o = {.source = s->cfg, .work_root = root, .plugin_dir = r->plugin_dir};
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
  if (dmh_source_config_load(path, &cfg, &cerr) < 0) {
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
  s->linked = true;
  r->src = s;
  if (ss->relay == DMH_EXPECT_RUNNING)
    reg_restore_relay(r, s);
  return 0;
}

static void reg_restore_task(dmh_registry *r, const dmh_state_task *ts) {
  reg_task *t = reg_task_new(ts->name, ts->file);
  if (!t) {
    dmh_log(DM_LOG_ERROR, "registry", "out of memory restoring task %s", ts->name);
    return;
  }
  t->expect = ts->stage;
  for (int k = 0; k < DMH_KIND_COUNT; k++)
    t->unit_paths[k] = reg_strdup(ts->unit_paths[k]);
  t->linked = true;
  reg_link_task_locked(r, t);

  char *path = dmh_state_path(r->state_dir, ts->file);
  dm_error err;
  if (!path || dmh_task_config_load(path, &t->cfg, &err) < 0) {
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
    } else if (t->expect == DMH_EXPECT_RUNNING) {
      if (dmh_subtask_start(sub->st, &err) < 0)
        dmh_log(DM_LOG_ERROR, "registry", "task %s source %s did not start: %s", t->name,
                sub->source_id, err.message);
      else
        dmh_log(DM_LOG_INFO, "registry", "task %s source %s restored, Running", t->name,
                sub->source_id);
    } else {
      dmh_log(DM_LOG_INFO, "registry", "task %s source %s restored, left New (expected Paused)",
              t->name, sub->source_id);
    }
    pthread_mutex_lock(&r->lock);
  }
}

static char *reg_default_worker_name(void) {
  char host[256];
  if (gethostname(host, sizeof host) < 0)
    strcpy(host, "localhost");
  host[sizeof host - 1] = '\0';
  return reg_printf("dmhost@%s", host);
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
            opts->worker_name ? strdup(opts->worker_name) : reg_default_worker_name())) {
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
  dmh_worker_init(&r->worker);

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
    reg_restore_task(r, &st.tasks[i]);
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
static reg_task **reg_all_tasks(dmh_registry *r, int *n_out) {
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
  reg_source_unref(r, src); /* destroys the relay */
  pthread_mutex_destroy(&r->lock);
  pthread_mutex_destroy(&r->source_lock);
  free(r->state_dir);
  free(r->plugin_dir);
  free(r->worker_name);
  free(r);
}

dmh_worker dmh_registry_worker(dmh_registry *r) {
  pthread_mutex_lock(&r->lock);
  dmh_worker w = r->worker;
  pthread_mutex_unlock(&r->lock);
  return w;
}

/* ---- relay ---- */

/* Create (first time) or restart the relay of s and move the worker to relay. source_lock held.
 * `next` is the worker after START_RELAY, checked by the caller. */
static int reg_relay_run(dmh_registry *r, reg_source *s, const dmh_worker *next, dm_error *err) {
  pthread_mutex_lock(&r->lock);
  dmh_subtask *relay = s->relay;
  pthread_mutex_unlock(&r->lock);
  int rc;
  if (!relay) {
    char *root = dmh_state_relay_work_root(r->state_dir, s->id);
    if (!root)
      return reg_oom(err, "starting the relay");
    dmh_subtask_opts o = {.source = s->cfg, .work_root = root, .plugin_dir = r->plugin_dir};
    if (dmh_state_mkdirs(root, err) == 0)
      relay = dmh_subtask_create_relay(&o, err);
    free(root);
    if (!relay) {
      pthread_mutex_lock(&r->lock);
      s->has_relay_err = true;
      s->relay_err = *err;
      pthread_mutex_unlock(&r->lock);
      return -1;
    }
    pthread_mutex_lock(&r->lock);
    s->relay = relay;
    s->has_relay_err = false;
    pthread_mutex_unlock(&r->lock);
    rc = dmh_subtask_start(relay, err);
  } else {
    rc = dmh_subtask_stage(relay) == DMH_STAGE_NEW ? dmh_subtask_start(relay, err)
                                                   : dmh_subtask_resume(relay, err);
  }
  if (rc < 0)
    return -1;
  pthread_mutex_lock(&r->lock);
  r->worker = *next;
  s->relay_expect = DMH_EXPECT_RUNNING;
  rc = reg_persist_locked(r, err);
  pthread_mutex_unlock(&r->lock);
  dmh_log(DM_LOG_INFO, "registry", "relay of source %s started; worker stage relay", s->id);
  return rc;
}

/* Look up the bound source by id under `lock` and apply `kind` to a copy of the worker. */
static reg_source *reg_source_event(dmh_registry *r, dmh_worker_event_kind kind, const char *source,
                                    dmh_worker *next, dm_error *err) {
  pthread_mutex_lock(&r->lock);
  dmh_worker_event ev = {kind, source, false};
  reg_source *s = NULL;
  if (dmh_worker_apply(&r->worker, &ev, next, err) == 0)
    s = r->src;
  pthread_mutex_unlock(&r->lock);
  return s;
}

int dmh_registry_relay_start(dmh_registry *r, const char *source, json_object *resp,
                             dm_error *err) {
  pthread_mutex_lock(&r->source_lock);
  dmh_worker next;
  reg_source *s = reg_source_event(r, DMH_WORKER_EV_START_RELAY, source, &next, err);
  int rc = s ? reg_relay_run(r, s, &next, err) : -1;
  pthread_mutex_unlock(&r->source_lock);
  json_object *arr = json_object_new_array();
  json_object_array_add(arr, reg_source_result(r, source, rc < 0 ? err : NULL));
  json_object_object_add(resp, "sources", arr);
  reg_add_worker(r, resp);
  return rc;
}

/* Stop the relay of s (it stays allocated: tasks may borrow it) and move the worker to `next`.
 * source_lock held. */
static int reg_relay_halt(dmh_registry *r, reg_source *s, const dmh_worker *next, dm_error *err) {
  pthread_mutex_lock(&r->lock);
  dmh_subtask *relay = s->relay;
  pthread_mutex_unlock(&r->lock);
  int rc = 0;
  if (relay && dmh_subtask_stage(relay) != DMH_STAGE_STOPPED)
    rc = dmh_subtask_stop(relay, err);
  /* A stop that had to abandon the unit still leaves the relay Stopped: record it. */
  pthread_mutex_lock(&r->lock);
  r->worker = *next;
  s->relay_expect = DMH_EXPECT_STOPPED;
  dm_error perr;
  int prc = reg_persist_locked(r, &perr);
  pthread_mutex_unlock(&r->lock);
  if (rc == 0 && prc < 0) {
    *err = perr;
    rc = -1;
  }
  dmh_log(DM_LOG_INFO, "registry", "relay of source %s stopped; worker stage %s", s->id,
          dmh_worker_stage_name(next->stage));
  return rc;
}

int dmh_registry_relay_stop(dmh_registry *r, const char *source, json_object *resp, dm_error *err) {
  pthread_mutex_lock(&r->source_lock);
  dmh_worker next;
  reg_source *s = reg_source_event(r, DMH_WORKER_EV_STOP_RELAY, source, &next, err);
  int rc = s ? reg_relay_halt(r, s, &next, err) : -1;
  pthread_mutex_unlock(&r->source_lock);
  json_object *arr = json_object_new_array();
  json_object_array_add(arr, reg_source_result(r, source, rc < 0 ? err : NULL));
  json_object_object_add(resp, "sources", arr);
  reg_add_worker(r, resp);
  return rc;
}

/* ---- sources ---- */

static int reg_source_create_locked_out(dmh_registry *r, const char *path, char *id_out,
                                        size_t id_len, dm_error *err) {
  dmh_source_config *orig = NULL;
  if (dmh_source_config_load(path, &orig, err) < 0)
    return -1;
  const char *id = orig->source_id;
  dm_strlcpy(id_out, id, id_len);
  dmh_worker next;
  dmh_source_config *copy = NULL;
  char *rel = NULL, *abs = NULL, *dir = NULL;
  int rc = -1;
  if (dmh_state_check_name("source-id", id, err) < 0)
    goto out;
  pthread_mutex_lock(&r->lock);
  dmh_worker_event ev = {DMH_WORKER_EV_BIND, id, false};
  int wrc = dmh_worker_apply(&r->worker, &ev, &next, err);
  pthread_mutex_unlock(&r->lock);
  if (wrc < 0)
    goto out;
  rel = dmh_state_source_file_rel(id);
  abs = rel ? dmh_state_path(r->state_dir, rel) : NULL;
  dir = reg_printf("%s/sources/%s", r->state_dir, id);
  if (!rel || !abs || !dir) {
    reg_oom(err, "creating the source");
    goto out;
  }
  if (dmh_state_mkdirs(dir, err) < 0 || dmh_state_copy_file(path, abs, err) < 0)
    goto out;
  if (dmh_source_config_load(abs, &copy, err) < 0 ||
      reg_check_paths(path, orig->unit_paths, copy->unit_paths, err) < 0)
    goto out_rm;
  if (config_lookup(&orig->cfg, "relay-dir") && strcmp(orig->relay_dir, copy->relay_dir) != 0) {
    dm_error_set(err, DM_ERR_CONFIG_INVALID, NULL,
                 "%s: relay-dir is a relative path (resolving to %s); the file is copied into the "
                 "state dir, where it would resolve to %s: give an absolute path",
                 path, orig->relay_dir, copy->relay_dir);
    goto out_rm;
  }
  reg_source *s = calloc(1, sizeof *s);
  if (!s || !(s->id = strdup(id))) {
    free(s);
    reg_oom(err, "creating the source");
    goto out_rm;
  }
  s->file_rel = rel;
  rel = NULL;
  s->cfg = copy;
  copy = NULL;
  s->relay_expect = DMH_EXPECT_STOPPED;
  s->linked = true;
  pthread_mutex_lock(&r->lock);
  r->src = s;
  r->worker = next;
  rc = reg_persist_locked(r, err);
  pthread_mutex_unlock(&r->lock);
  dmh_log(DM_LOG_INFO, "registry", "source %s created from %s; worker stage bound", id, path);
  if (rc == 0 && s->cfg->enable_relay) {
    dmh_worker_event rev = {DMH_WORKER_EV_START_RELAY, id, false};
    pthread_mutex_lock(&r->lock);
    int erc = dmh_worker_apply(&r->worker, &rev, &next, err);
    pthread_mutex_unlock(&r->lock);
    if (erc == 0 && reg_relay_run(r, s, &next, err) < 0) {
      char why[DM_ERROR_MESSAGE_MAX];
      dm_strlcpy(why, err->message, sizeof why);
      dm_error_set(err, err->code, why,
                   "source %s is created (worker bound) but its relay (enable-relay) did not "
                   "start; fix the cause, then `dmctl start-relay -s %s`",
                   id, id);
      rc = -1;
    }
  }
  goto out;
out_rm:;
  dm_error ignored;
  dmh_state_remove_file(abs, &ignored);
out:
  dmh_source_config_free(orig);
  dmh_source_config_free(copy);
  free(rel);
  free(abs);
  free(dir);
  return rc;
}

int dmh_registry_source_create(dmh_registry *r, const char *path, json_object *resp,
                               dm_error *err) {
  char id[DMH_WORKER_SOURCE_MAX] = "";
  pthread_mutex_lock(&r->source_lock);
  int rc = reg_source_create_locked_out(r, path, id, sizeof id, err);
  pthread_mutex_unlock(&r->source_lock);
  json_object *arr = json_object_new_array();
  json_object_array_add(arr, reg_source_result(r, id, rc < 0 ? err : NULL));
  json_object_object_add(resp, "sources", arr);
  reg_add_worker(r, resp);
  return rc;
}

/* The relay's part of query-status and operate-source show: the relay unit's status with DM's
 * field names, plus the relay's stage and result. NULL (JSON null) without a relay. */
static json_object *reg_relay_status(dmh_subtask *relay) {
  if (!relay)
    return NULL;
  json_object *full = dmh_subtask_status_json(relay);
  json_object *rs = json_object_new_object();
  json_object *unit = NULL;
  if (json_object_object_get_ex(full, "relayStatus", &unit) &&
      json_object_is_type(unit, json_type_object)) {
    json_object_object_foreach(unit, k, v) json_object_object_add(rs, k, json_object_get(v));
  }
  static const char *const keys[] = {"stage", "result", "unitBuild", "unitVersion", "progress"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    json_object *v = NULL;
    if (json_object_object_get_ex(full, keys[i], &v))
      json_object_object_add(rs, keys[i], json_object_get(v));
  }
  json_object_put(full);
  return rs;
}

/* Pin the bound source if it is `id` (or any, with id NULL). */
static reg_source *reg_get_source(dmh_registry *r, const char *id) {
  pthread_mutex_lock(&r->lock);
  reg_source *s = r->src;
  if (s && id && strcmp(s->id, id) != 0)
    s = NULL;
  if (s)
    s->refs++;
  pthread_mutex_unlock(&r->lock);
  return s;
}

/* purge-relay: the relay is paused around the removal (then resumed) so nothing is written while
 * files go; relay_purge.c keeps what the relay or a registered reader still needs. */
int dmh_registry_relay_purge(dmh_registry *r, const char *source, const char *file,
                             json_object *resp, dm_error *err) {
  pthread_mutex_lock(&r->source_lock);
  reg_source *s = reg_get_source(r, source);
  int rc = -1, removed = 0;
  if (!s) {
    dmh_worker w = dmh_registry_worker(r);
    dm_error_set(err, DM_ERR_NOT_FOUND, NULL,
                 "purge-relay: source \"%s\" is not bound to this worker (worker %s%s%s)", source,
                 dmh_worker_stage_name(w.stage), w.source[0] ? " to " : "", w.source);
  } else {
    pthread_mutex_lock(&r->lock);
    dmh_subtask *relay = s->relay;
    pthread_mutex_unlock(&r->lock);
    bool paused = false;
    rc = 0;
    if (relay && dmh_subtask_stage(relay) == DMH_STAGE_RUNNING) {
      rc = dmh_subtask_pause(relay, err);
      paused = rc == 0;
    }
    if (rc == 0) {
      dmh_relay_purge_opts o = {.relay_dir = s->cfg->relay_dir, .before = file};
      rc = dmh_relay_purge(&o, &removed, err);
    }
    if (paused) {
      dm_error rerr;
      if (dmh_subtask_resume(relay, &rerr) < 0 && rc == 0) {
        *err = rerr;
        rc = -1;
      }
    }
    dmh_log(rc == 0 ? DM_LOG_INFO : DM_LOG_WARN, "registry",
            "purge-relay of source %s before %s: %d file(s) removed%s%s", s->id, file, removed,
            rc == 0 ? "" : "; ", rc == 0 ? "" : err->message);
    reg_source_unref(r, s);
  }
  pthread_mutex_unlock(&r->source_lock);
  json_object *arr = json_object_new_array();
  json_object_array_add(arr, reg_source_result(r, source, rc < 0 ? err : NULL));
  json_object_object_add(resp, "sources", arr);
  json_object_object_add(resp, "removed", json_object_new_int(removed));
  reg_add_worker(r, resp);
  return rc;
}

int dmh_registry_source_show(dmh_registry *r, const char *source, json_object *resp,
                             dm_error *err) {
  reg_source *s = reg_get_source(r, source);
  json_object *arr = json_object_new_array();
  json_object_object_add(resp, "sources", arr);
  reg_add_worker(r, resp);
  if (!s) {
    if (!source)
      return 0;
    dmh_worker w = dmh_registry_worker(r);
    dm_error_set(err, DM_ERR_NOT_FOUND, NULL,
                 "operate-source show: source \"%s\" is not bound to this worker (worker %s%s%s)",
                 source, dmh_worker_stage_name(w.stage), w.source[0] ? " to " : "", w.source);
    return -1;
  }
  json_object *o = reg_source_result(r, s->id, NULL);
  char *file = dmh_state_path(r->state_dir, s->file_rel);
  json_object_object_add(o, "file", json_object_new_string(file ? file : ""));
  free(file);
  json_object_object_add(o, "enableRelay", json_object_new_boolean(s->cfg->enable_relay));
  json_object_object_add(o, "enableGTID", json_object_new_boolean(s->cfg->enable_gtid));
  pthread_mutex_lock(&r->lock);
  dmh_subtask *relay = s->relay;
  dmh_expect_stage expect = s->relay_expect;
  bool has_err = s->has_relay_err;
  dm_error rerr = s->relay_err;
  pthread_mutex_unlock(&r->lock);
  json_object_object_add(o, "relayExpected", json_object_new_string(dmh_expect_stage_name(expect)));
  json_object_object_add(o, "relayStatus", reg_relay_status(relay));
  if (has_err && !relay)
    json_object_object_add(o, "relayError", dmh_control_error_json(&rerr));
  json_object_array_add(arr, o);
  reg_source_unref(r, s);
  return 0;
}

int dmh_registry_source_stop(dmh_registry *r, const char *source, json_object *resp,
                             dm_error *err) {
  pthread_mutex_lock(&r->source_lock);
  int rc = -1;
  pthread_mutex_lock(&r->lock);
  dmh_worker_event ev = {DMH_WORKER_EV_UNBIND, source, false};
  dmh_worker mid = r->worker, next;
  reg_source *s = r->src;
  /* The tasks reading the source borrow its config and relay: refuse while any exists. */
  char names[512] = "";
  size_t nn = 0;
  int n_tasks = 0;
  for (reg_task *t = r->tasks; t && s; t = t->next) {
    for (int i = 0; i < t->n_subs; i++) {
      if (t->subs[i].src == s || strcmp(t->subs[i].source_id, source) == 0) {
        if (nn < sizeof names)
          nn +=
              (size_t)snprintf(names + nn, sizeof names - nn, "%s%s", n_tasks ? ", " : "", t->name);
        n_tasks++;
        break;
      }
    }
  }
  if (n_tasks > 0) {
    dm_error_set(err, DM_ERR_EXISTS, NULL,
                 "operate-source stop: source \"%s\" is used by task%s %s; stop %s first with "
                 "`dmctl stop-task NAME`",
                 source, n_tasks > 1 ? "s" : "", names, n_tasks > 1 ? "them" : "it");
    pthread_mutex_unlock(&r->lock);
    goto out;
  }
  /* relay -> bound -> free: the relay is stopped as its own transition (see worker.h). */
  if (r->worker.stage == DMH_WORKER_RELAY && dmh_worker_bound_to(&r->worker, source)) {
    dmh_worker_event sr = {DMH_WORKER_EV_STOP_RELAY, source, false};
    if (dmh_worker_apply(&r->worker, &sr, &mid, err) < 0) {
      pthread_mutex_unlock(&r->lock);
      goto out;
    }
  }
  if (dmh_worker_apply(&mid, &ev, &next, err) < 0) {
    pthread_mutex_unlock(&r->lock);
    goto out;
  }
  pthread_mutex_unlock(&r->lock);
  if (mid.stage != r->worker.stage && reg_relay_halt(r, s, &mid, err) < 0)
    dmh_log(DM_LOG_WARN, "registry", "source %s: stopping its relay: %s", source, err->message);
  pthread_mutex_lock(&r->lock);
  r->src = NULL;
  s->linked = false;
  s->refs++; /* ours, dropped below outside the lock */
  r->worker = next;
  rc = reg_persist_locked(r, err);
  pthread_mutex_unlock(&r->lock);
  char *abs = dmh_state_path(r->state_dir, s->file_rel);
  dm_error ignored;
  if (abs)
    dmh_state_remove_file(abs, &ignored);
  free(abs);
  dmh_log(DM_LOG_INFO, "registry", "source %s stopped; worker stage free", source);
  reg_source_unref(r, s); /* destroys the relay subtask */
out:
  pthread_mutex_unlock(&r->source_lock);
  json_object *arr = json_object_new_array();
  json_object_array_add(arr, reg_source_result(r, source, rc < 0 ? err : NULL));
  json_object_object_add(resp, "sources", arr);
  reg_add_worker(r, resp);
  return rc;
}

/* ---- tasks ---- */

/* DM_ERR_NOT_FOUND naming the task's sources when none is bound here. Under `lock`. */
static void reg_no_source_error(dmh_registry *r, const dmh_task_config *cfg, const char *path,
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
  json_object *arr = json_object_new_array();
  json_object_object_add(resp, "sources", arr);
  dmh_task_config *orig = NULL;
  if (dmh_task_config_load(path, &orig, err) < 0)
    return -1;
  if (dmh_state_check_name("task name", orig->name, err) < 0) {
    dmh_task_config_free(orig);
    return -1;
  }
  char *rel = dmh_state_task_file_rel(orig->name);
  reg_task *t = rel ? reg_task_new(orig->name, rel) : NULL;
  free(rel);
  if (!t) {
    dmh_task_config_free(orig);
    return reg_oom(err, "starting the task");
  }
  t->expect = DMH_EXPECT_RUNNING;
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

  /* Copy the file into the state dir and run what the copy says. */
  char *abs = dmh_state_path(r->state_dir, t->file_rel);
  char *dir = reg_printf("%s/tasks/%s", r->state_dir, t->name);
  dmh_task_config *copy = NULL;
  bool copied = false;
  if (!abs || !dir)
    rc = reg_oom(err, "starting the task");
  else if (dmh_state_mkdirs(dir, err) < 0 || dmh_state_copy_file(path, abs, err) < 0)
    rc = -1;
  else if ((copied = true, dmh_task_config_load(abs, &copy, err) < 0) ||
           reg_check_paths(path, orig->unit_paths, copy->unit_paths, err) < 0)
    rc = -1;
  free(dir);
  dmh_task_config_free(orig);
  if (rc < 0) {
    dmh_task_config_free(copy);
    reg_task_abandon(r, t, copied ? abs : NULL);
    free(abs);
    return -1;
  }
  pthread_mutex_lock(&r->lock);
  t->cfg = copy;
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
    int src = dmh_subtask_start(t->subs[i].st, &e);
    if (src < 0 && failed++ == 0)
      first = e;
    json_object_array_add(arr, reg_source_result(r, t->subs[i].source_id, src < 0 ? &e : NULL));
  }
  pthread_mutex_lock(&r->lock);
  int prc = reg_persist_locked(r, err);
  pthread_mutex_unlock(&r->lock);
  dmh_log(DM_LOG_INFO, "registry", "task %s started from %s on %d source(s), %d failed", t->name,
          path, t->n_subs, failed);
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

static int reg_task_op(dmh_registry *r, const char *name, reg_op op, json_object *resp,
                       dm_error *err) {
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
  if (op == REG_STOP) {
    /* Gone from the list (and from state.json) at once; the stop itself waits for any command in
     * flight on the task. */
    pthread_mutex_lock(&r->lock);
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
  for (int i = 0; i < t->n_subs; i++) {
    dm_error e;
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
  } else if (ok > 0) {
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
  return reg_task_op(r, name, REG_PAUSE, resp, err);
}

int dmh_registry_task_resume(dmh_registry *r, const char *name, json_object *resp, dm_error *err) {
  return reg_task_op(r, name, REG_RESUME, resp, err);
}

int dmh_registry_task_stop(dmh_registry *r, const char *name, json_object *resp, dm_error *err) {
  return reg_task_op(r, name, REG_STOP, resp, err);
}

int dmh_registry_task_swap(dmh_registry *r, const char *name, dm_unit_kind kind, const char *path,
                           json_object *resp, dm_error *err) {
  json_object *arr = json_object_new_array();
  json_object_object_add(resp, "sources", arr);
  int k = dmh_kind_index_of(kind);
  if (k < 0 || kind == DM_UNIT_RELAY) {
    dm_error_set(err, DM_ERR_CONTROL_REQUEST, NULL, "swap-unit: only dump, load or sync units");
    return -1;
  }
  reg_task *t = reg_get_task(r, "swap-unit", name, err);
  if (!t)
    return -1;
  if (!reg_lock_task(r, t, "swap-unit", err)) {
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
      rc = dmh_subtask_swap_unit(st, kind, path, &e);
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
    char *copy = strdup(path);
    if (copy) {
      free(t->unit_paths[k]);
      t->unit_paths[k] = copy;
    }
    if (t->linked)
      rc = reg_persist_locked(r, err);
    pthread_mutex_unlock(&r->lock);
  }
  dmh_log(DM_LOG_INFO, "registry", "swap-unit %s %s -> %s: %d ok, %d failed", name,
          dmh_kind_name(kind), path, ok, failed);
  pthread_mutex_unlock(&t->cmd_lock);
  reg_task_unref(r, t);
  if (failed) {
    *err = first;
    return -1;
  }
  return rc;
}

/* ---- query-status ---- */

/* A subtask that does not exist (never created, or its creation failed), in the shape of
 * dmh_subtask_status_json. */
static json_object *reg_missing_status(const char *task, const char *source, const dm_error *e) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "name", json_object_new_string(task));
  json_object_object_add(o, "source", json_object_new_string(source));
  json_object_object_add(o, "stage", json_object_new_string(e ? "Stopped" : "New"));
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

static bool reg_status_has_errors(json_object *status) {
  json_object *res = NULL, *errs = NULL;
  return json_object_object_get_ex(status, "result", &res) && res &&
         json_object_object_get_ex(res, "errors", &errs) &&
         json_object_is_type(errs, json_type_array) && json_object_array_length(errs) > 0;
}

/* DM's summary of a task over its subtasks. */
static const char *reg_task_status(json_object **subs, int n, const char *name, char *buf,
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
    if (reg_status_has_errors(subs[i])) {
      snprintf(buf, len,
               "Error - Some error occurred in subtask. Please run `query-status %s` to get more "
               "details.",
               name);
      return buf;
    }
    json_object *s = NULL;
    json_object_object_get_ex(subs[i], "stage", &s);
    const char *st = s ? json_object_get_string(s) : "?";
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

static int reg_status_list(dmh_registry *r, json_object *resp, dm_error *err) {
  int n;
  reg_task **all = reg_all_tasks(r, &n);
  if (!all)
    return reg_oom(err, "listing the tasks");
  json_object *tasks = json_object_new_array();
  for (int i = 0; i < n; i++) {
    reg_task *t = all[i];
    json_object *o = json_object_new_object();
    json_object_object_add(o, "taskName", json_object_new_string(t->name));
    json_object **subs = calloc((size_t)(t->n_subs ? t->n_subs : 1), sizeof *subs);
    json_object *srcs = json_object_new_array();
    for (int j = 0; subs && j < t->n_subs; j++) {
      subs[j] = reg_sub_status(r, t, &t->subs[j]);
      json_object *s = json_object_new_object();
      json_object *stage = NULL;
      json_object_object_get_ex(subs[j], "stage", &stage);
      json_object_object_add(s, "source", json_object_new_string(t->subs[j].source_id));
      json_object_object_add(s, "stage", json_object_get(stage));
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
    for (int j = 0; subs && j < t->n_subs; j++)
      json_object_put(subs[j]);
    free(subs);
    json_object_array_add(tasks, o);
    reg_task_unref(r, t);
  }
  free(all);
  json_object_object_add(resp, "tasks", tasks);
  return 0;
}

int dmh_registry_query_status(dmh_registry *r, const char *name, json_object *resp, dm_error *err) {
  reg_add_worker(r, resp);
  if (!name)
    return reg_status_list(r, resp, err);
  json_object *arr = json_object_new_array();
  json_object_object_add(resp, "sources", arr);
  reg_task *t = reg_get_task(r, "query-status", name, err);
  if (!t)
    return -1;
  pthread_mutex_lock(&r->lock);
  bool load_failed = !t->cfg && t->has_load_err;
  dm_error lerr = t->load_err;
  pthread_mutex_unlock(&r->lock);
  for (int i = 0; i < t->n_subs; i++) {
    reg_sub *sub = &t->subs[i];
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
