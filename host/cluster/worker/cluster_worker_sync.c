/* `dmhost worker`: the reconcile, the fence, the watch and the status publication (see
 * cluster_worker.h). */
#include "cluster_worker.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dmhost/sdk.h"
#include "error_json.h"
#include "log.h"
#include "metrics_host.h"
#include "state.h"

long cw_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

long cw_lease_age(cw *w, int *lost) {
  pthread_mutex_lock(&w->keeper_lock);
  long age = w->keeper ? dmh_etcd_keeper_age_ms(w->keeper, lost, NULL) : 0;
  if (!w->keeper)
    *lost = 1;
  pthread_mutex_unlock(&w->keeper_lock);
  return age;
}

bool cw_lease_fresh(cw *w) {
  int lost = 0;
  long age = cw_lease_age(w, &lost);
  return !lost && age <= w->ttl_s * 1000 - CW_FENCE_MARGIN_MS;
}

void cw_log_error(dm_log_level level, const char *what, const dm_error *err) {
  char buf[2048];
  dmh_error_format(err, buf, sizeof buf);
  dmh_log(level, "worker", "%s: %s", what, buf);
}

/* ---- the registry's tasks ---- */

typedef struct cw_task {
  char name[DMH_CLUSTER_NAME_MAX];
  char source[DMH_CLUSTER_NAME_MAX];
  char stage[32];  /* the subtask's stage here ("" when it has none) */
  char expect[32]; /* the registry's expected stage */
} cw_task;

static const char *cw_jstr(json_object *o, const char *field) {
  json_object *f = NULL;
  return o && json_object_object_get_ex(o, field, &f) && json_object_is_type(f, json_type_string)
             ? json_object_get_string(f)
             : "";
}

/* The registry's tasks (query-status without a name); *n_out of them, malloc'd. */
static cw_task *cw_tasks(cw *w, int *n_out) {
  *n_out = 0;
  json_object *resp = json_object_new_object();
  dm_error err;
  json_object *arr = NULL;
  cw_task *out = NULL;
  if (resp && dmh_registry_query_status(w->reg, NULL, resp, &err) == 0 &&
      json_object_object_get_ex(resp, "tasks", &arr)) {
    size_t n = json_object_array_length(arr);
    out = calloc(n ? n : 1, sizeof *out);
    for (size_t i = 0; out && i < n; i++) {
      json_object *t = json_object_array_get_idx(arr, i), *srcs = NULL;
      cw_task *ct = &out[*n_out];
      dm_strlcpy(ct->name, cw_jstr(t, "taskName"), sizeof ct->name);
      dm_strlcpy(ct->expect, cw_jstr(t, "expectedStage"), sizeof ct->expect);
      if (json_object_object_get_ex(t, "sources", &srcs) && json_object_array_length(srcs) > 0) {
        json_object *s = json_object_array_get_idx(srcs, 0);
        dm_strlcpy(ct->source, cw_jstr(s, "source"), sizeof ct->source);
        dm_strlcpy(ct->stage, cw_jstr(s, "stage"), sizeof ct->stage);
      }
      (*n_out)++;
    }
  }
  json_object_put(resp);
  return out;
}

static const cw_task *cw_find_task(const cw_task *ts, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (strcmp(ts[i].name, name) == 0)
      return &ts[i];
  return NULL;
}

typedef int (*cw_task_cmd)(dmh_registry *, const char *, json_object *, dm_error *);

/* One registry command on a task or source (`noun`), logged. ops_lock held. */
static int cw_reg_do(cw *w, cw_task_cmd cmd, const char *noun, const char *verb, const char *name) {
  json_object *resp = json_object_new_object();
  dm_error err;
  int rc = cmd(w->reg, name, resp, &err);
  json_object_put(resp);
  if (rc < 0) {
    char what[256];
    snprintf(what, sizeof what, "%s %s %s", verb, noun, name);
    cw_log_error(DM_LOG_WARN, what, &err);
  } else {
    dmh_log(DM_LOG_INFO, "worker", "%s %s: %s", noun, name, verb);
  }
  atomic_store(&w->dirty, 1); /* publish the new stage soon */
  return rc;
}

static int cw_task_do(cw *w, cw_task_cmd cmd, const char *verb, const char *task) {
  return cw_reg_do(w, cmd, "task", verb, task);
}

/* Pause every running subtask. ops_lock held. */
static void cw_pause_all(cw *w) {
  int n;
  cw_task *ts = cw_tasks(w, &n);
  for (int i = 0; ts && i < n; i++)
    if (strcmp(ts[i].stage, "Running") == 0 || strcmp(ts[i].stage, "Resuming") == 0)
      cw_task_do(w, dmh_registry_task_pause, "pause (fenced)", ts[i].name);
  free(ts);
}

/* ---- the fence ---- */

static void *cw_fence_thread(void *arg) {
  cw *w = arg;
  long limit = w->ttl_s * 1000 - CW_FENCE_MARGIN_MS;
  while (!atomic_load(&w->stop)) {
    usleep(100 * 1000);
    int lost = 0;
    long age = cw_lease_age(w, &lost);
    if (!lost && age <= limit)
      continue;
    pthread_mutex_lock(&w->ops_lock);
    if (!w->fenced && !atomic_load(&w->stop)) {
      w->fenced = true;
      atomic_store(&w->fenced_at_ms, cw_now_ms());
      dm_error e;
      dm_error_set(&e, DM_ERR_CLUSTER_WORKER_FENCED, NULL,
                   "worker %s: lease %lld %s (last renewal %ld ms ago, TTL %lld s, limit %ld ms): "
                   "pausing its subtasks before etcd can expire the lease",
                   w->name, (long long)w->lease, lost ? "is gone" : "not renewed in time", age,
                   (long long)w->ttl_s, limit);
      cw_log_error(DM_LOG_WARN, "fence", &e);
      cw_pause_all(w);
    }
    pthread_mutex_unlock(&w->ops_lock);
  }
  return NULL;
}

/* ---- reads ---- */

/* The value of key (NUL-terminated, malloc'd) or NULL when absent; *create_rev its
 * create_revision, *revision the store's. 0, or -1 with err. */
static int cw_get(cw *w, const char *key, char **value, int64_t *create_rev, int64_t *mod_rev,
                  int64_t *revision, dm_error *err) {
  dmh_etcd_result res;
  *value = NULL;
  if (dmh_etcd_range(w->etcd, DMH_ETCD_S(key), 0, 0, 0, &res, err) < 0)
    return -1;
  if (res.n_kvs > 0) {
    *value = res.kvs[0].value;
    res.kvs[0].value = NULL;
    if (create_rev)
      *create_rev = res.kvs[0].create_revision;
    if (mod_rev)
      *mod_rev = res.kvs[0].mod_revision;
  }
  if (revision)
    *revision = res.revision;
  dmh_etcd_result_free(&res);
  return 0;
}

/* The file text stored at the key of kind (source or task) `name`, or NULL (absent or not a
 * file: logged with DM_ERR_CLUSTER_CONFIG_MISSING); *mod_rev (may be NULL) the key's
 * mod_revision. -1 when the read failed. */
static int cw_get_config(cw *w, dmh_cluster_key_kind kind, const char *name, char **text,
                         int64_t *mod_rev, dm_error *err) {
  char key[DMH_CLUSTER_KEY_MAX];
  char *value = NULL;
  *text = NULL;
  if (dmh_cluster_key(key, sizeof key, w->prefix, kind, name, NULL, NULL) < 0 ||
      cw_get(w, key, &value, NULL, mod_rev, NULL, err) < 0)
    return -1;
  dm_error e;
  if (!value)
    dm_error_set(&e, DM_ERR_CLUSTER_CONFIG_MISSING, NULL, "etcd has no %s at %s",
                 kind == DMH_KEY_SOURCE ? "source file" : "task file", key);
  else if (dmh_cluster_config_parse(value, strlen(value), text, &e) < 0)
    dm_error_set(&e, DM_ERR_CLUSTER_CONFIG_MISSING, e.message, "%s holds no file text", key);
  if (!*text) {
    cw_log_error(DM_LOG_WARN, "worker", &e);
    w->config_missing = true; /* read again soon: texts are not watched */
  }
  free(value);
  return 0;
}

/* The text of `source` (bound here) when its key's mod_revision is not the one the registry
 * holds (cw_source_changed), else NULL; absent (the source being stopped): NULL, quietly. */
static int cw_changed_source(cw *w, const char *source, char **text, int64_t *mod_rev,
                             dm_error *err) {
  char key[DMH_CLUSTER_KEY_MAX];
  char *value = NULL;
  *text = NULL;
  if (dmh_cluster_key(key, sizeof key, w->prefix, DMH_KEY_SOURCE, source, NULL, NULL) < 0 ||
      cw_get(w, key, &value, NULL, mod_rev, NULL, err) < 0)
    return -1;
  dm_error e;
  if (value && cw_source_changed(w, source, *mod_rev) &&
      dmh_cluster_config_parse(value, strlen(value), text, &e) < 0)
    cw_log_error(DM_LOG_WARN, key, &e);
  free(value);
  return 0;
}

char *cw_write_config(cw *w, const char *dir, const char *name, const char *text, dm_error *err) {
  char folder[4096], *path = NULL;
  if (snprintf(folder, sizeof folder, "%s/%s/%s", w->state_dir, dir, name) >= (int)sizeof folder) {
    dm_error_set(err, DM_ERR_STATE, NULL, "state dir path too long");
    return NULL;
  }
  if (dmh_state_mkdirs(folder, err) < 0 || !(path = dmh_state_path(folder, "cluster.cfg")))
    return NULL;
  if (dmh_state_write_file(path, text, strlen(text), err) < 0) {
    free(path);
    return NULL;
  }
  return path;
}

int64_t cw_rev_load(cw *w, const char *rel, bool *present) {
  char *path = dmh_state_path(w->state_dir, rel);
  char *text = path ? dmh_state_read_all(path, NULL) : NULL;
  free(path);
  if (present)
    *present = text != NULL;
  int64_t rev = text ? strtoll(text, NULL, 10) : 0;
  free(text);
  return rev;
}

int cw_rev_save(cw *w, const char *rel, int64_t rev, dm_error *err) {
  char *path = dmh_state_path(w->state_dir, rel), text[32];
  int n = snprintf(text, sizeof text, "%" PRId64 "\n", rev);
  if (!path) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory keeping a revision in %s", rel);
    return -1;
  }
  int rc = dmh_state_write_file(path, text, (size_t)n, err);
  free(path);
  return rc;
}

static void cw_wants_free(cw_want *ws, int n) {
  for (int i = 0; ws && i < n; i++)
    free(ws[i].text);
  free(ws);
}

/* The expected stages of `source`'s subtasks (<p>/stage/<task>/<source>). */
static int cw_read_wants(cw *w, const char *source, cw_want **out, int *n_out, dm_error *err) {
  char key[DMH_CLUSTER_KEY_MAX];
  *out = NULL;
  *n_out = 0;
  dmh_etcd_result res;
  if (dmh_cluster_key(key, sizeof key, w->prefix, DMH_KEY_STAGE, NULL, NULL, NULL) < 0 ||
      dmh_etcd_range(w->etcd, DMH_ETCD_S(key), 1, 0, 0, &res, err) < 0)
    return -1;
  cw_want *ws = calloc(res.n_kvs ? res.n_kvs : 1, sizeof *ws);
  for (size_t i = 0; ws && i < res.n_kvs; i++) {
    char task[DMH_CLUSTER_NAME_MAX], src[DMH_CLUSTER_NAME_MAX];
    dmh_cluster_stage stage;
    const dmh_etcd_kv *kv = &res.kvs[i];
    if (dmh_cluster_key_parse(kv->key, kv->key_len, w->prefix, DMH_KEY_STAGE, task, src, NULL) <
            0 ||
        strcmp(src, source) != 0)
      continue;
    if (dmh_cluster_stage_parse(kv->value, kv->value_len, &stage) < 0) {
      dmh_log(DM_LOG_WARN, "worker", "%s holds \"%s\", not Running, Paused or Stopped: ignored",
              kv->key, kv->value);
      continue;
    }
    dm_strlcpy(ws[*n_out].task, task, sizeof ws[*n_out].task);
    ws[*n_out].stage = stage;
    ws[*n_out].stage_rev = kv->mod_revision;
    (*n_out)++;
  }
  dmh_etcd_result_free(&res);
  if (!ws) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory reading the expected stages");
    return -1;
  }
  *out = ws;
  return 0;
}

/* ---- apply ---- */

/* Stops every task here (the source is no longer ours); the relay stays (its files are local),
 * a source without relay is released. ops_lock held. */
static void cw_stop_tasks(cw *w, const char *why) {
  int n;
  cw_task *ts = cw_tasks(w, &n);
  for (int i = 0; ts && i < n; i++)
    cw_task_do(w, dmh_registry_task_stop, why, ts[i].name);
  free(ts);
}

static void cw_release(cw *w, const dmh_worker *wk, const char *why) {
  cw_stop_tasks(w, why);
  if (wk->stage == DMH_WORKER_BOUND) {
    json_object *resp = json_object_new_object();
    dm_error err;
    if (dmh_registry_source_stop(w->reg, wk->source, resp, &err) < 0)
      cw_log_error(DM_LOG_WARN, "releasing the source", &err);
    else
      dmh_log(DM_LOG_INFO, "worker", "source %s released (%s): worker free", wk->source, why);
    json_object_put(resp);
  }
}

/* Brings the bound source's tasks to the wanted stages; binding: the binding's create_revision.
 * ops_lock held. */
static void cw_apply_tasks(cw *w, const cw_want *ws, int n_ws, int64_t binding,
                           const char (*stop_rm)[DMH_CLUSTER_NAME_MAX], int n_rm) {
  int n;
  cw_task *ts = cw_tasks(w, &n);
  for (int i = 0; ts && i < n; i++) {
    const cw_want *want = NULL;
    for (int j = 0; j < n_ws && !want; j++)
      if (strcmp(ws[j].task, ts[i].name) == 0)
        want = &ws[j];
    bool rm = false;
    for (int k = 0; !want && k < n_rm && !rm; k++)
      rm = strcmp(stop_rm[k], ts[i].name) == 0;
    dm_error err;
    if (rm && cw_stop_task(w, ts[i].name, &err) < 0)
      cw_log_error(DM_LOG_WARN, "stop (remove-meta) task", &err);
    else if (rm)
      dmh_log(DM_LOG_INFO, "worker", "task %s: stop (remove-meta)", ts[i].name);
    else if (!want || want->stage == DMH_CLUSTER_STOPPED)
      cw_task_do(w, dmh_registry_task_stop, "stop", ts[i].name);
    if (rm)
      atomic_store(&w->dirty, 1); /* publish the stop soon */
  }
  for (int j = 0; j < n_ws; j++) {
    const cw_task *t = ts ? cw_find_task(ts, n, ws[j].task) : NULL;
    if (ws[j].stage == DMH_CLUSTER_PAUSED && t &&
        (strcmp(t->stage, "Running") == 0 || strcmp(t->stage, "Resuming") == 0))
      cw_task_do(w, dmh_registry_task_pause, "pause", t->name);
    if (ws[j].stage == DMH_CLUSTER_STOPPED || w->fenced)
      continue;
    bool run = ws[j].stage == DMH_CLUSTER_RUNNING;
    if (!t && ws[j].text) {
      dm_error err;
      char *path = cw_write_config(w, "tasks", ws[j].task, ws[j].text, &err);
      if (!path)
        cw_log_error(DM_LOG_WARN, "writing the task file", &err);
      else if (cw_start_task(w, &ws[j], path, run, binding, &err) < 0)
        cw_log_error(DM_LOG_WARN, run ? "start task" : "create (stopped) task", &err);
      else
        dmh_log(DM_LOG_INFO, "worker", "task %s: %s", ws[j].task,
                run ? "start" : "create (stopped)");
      atomic_store(&w->dirty, 1); /* publish the new stage soon */
      free(path);
    } else if (run && t &&
               (strcmp(t->stage, "New") == 0 ||
                (strcmp(t->stage, "Paused") == 0 && strcmp(t->expect, "Paused") == 0))) {
      /* New: held at restore; Paused by a pause (ours or the fence's), not by an error: an error
       * is the supervisor's to retry (auto-resume) or the user's. A task created stopped is
       * started with resume-task's options when its stage flip brought some. */
      dm_error err;
      if (!(ws[j].has_start && ws[j].start.at_resume && strcmp(t->stage, "New") == 0))
        cw_task_do(w, dmh_registry_task_resume, "resume", t->name);
      else if (cw_start_resume(w, &ws[j], binding, &err) < 0)
        cw_log_error(DM_LOG_WARN, "resume task (with resume-task's options)", &err);
      else
        dmh_log(DM_LOG_INFO, "worker", "task %s: resume (with resume-task's options)", t->name);
      atomic_store(&w->dirty, 1); /* publish the new stage soon */
    }
  }
  free(ts);
}

int cw_read_binding(cw *w, dmh_cluster_binding *b, int64_t *create_rev, int64_t *revision,
                    dm_error *err) {
  char key[DMH_CLUSTER_KEY_MAX];
  char *value = NULL;
  memset(b, 0, sizeof *b);
  *create_rev = 0;
  if (dmh_cluster_key(key, sizeof key, w->prefix, DMH_KEY_BOUND, w->name, NULL, NULL) < 0 ||
      cw_get(w, key, &value, create_rev, NULL, revision, err) < 0)
    return -1;
  bool bound = false;
  if (value) {
    dm_error e;
    if (dmh_cluster_binding_parse(value, strlen(value), b, &e) < 0)
      cw_log_error(DM_LOG_WARN, key, &e);
    else
      bound = true;
    free(value);
  }
  return bound ? 1 : 0;
}

/* <p>/relay/<name> at `revision` (the binding's: a new binding deletes the request in the same
 * txn, so the two are read as one): 1 and *r when the user asked for a relay on this worker, 0
 * when not (or the value is unusable: logged), -1 with err when the read failed. */
static int cw_read_relay(cw *w, int64_t revision, dmh_cluster_relay *r, dm_error *err) {
  char key[DMH_CLUSTER_KEY_MAX];
  dmh_etcd_result res;
  memset(r, 0, sizeof *r);
  if (dmh_cluster_key(key, sizeof key, w->prefix, DMH_KEY_RELAY, w->name, NULL, NULL) < 0 ||
      dmh_etcd_range(w->etcd, DMH_ETCD_S(key), 0, 0, revision, &res, err) < 0)
    return -1;
  int have = 0;
  if (res.n_kvs > 0) {
    dm_error e;
    if (dmh_cluster_relay_parse(res.kvs[0].value, res.kvs[0].value_len, r, &e) < 0)
      cw_log_error(DM_LOG_WARN, key, &e);
    else
      have = 1;
  }
  dmh_etcd_result_free(&res);
  return have;
}

/* start-relay / stop-relay through the master (<p>/relay/<name>): a relay asked Stopped is
 * stopped, and the source released when it is not bound here any more (the worker is free
 * again); a relay asked Running is started on the source bound here. Before the binding is
 * applied, so a worker freed here may take another source in the same turn. ops_lock held. */
static void cw_apply_relay(cw *w, const dmh_cluster_relay *r, bool bound,
                           const dmh_cluster_binding *b) {
  dmh_worker wk = dmh_registry_worker(w->reg);
  bool ours = bound && strcmp(b->source, r->source) == 0;
  if (r->stage == DMH_CLUSTER_STOPPED && wk.stage == DMH_WORKER_RELAY &&
      strcmp(wk.source, r->source) == 0) {
    if (cw_reg_do(w, dmh_registry_relay_stop, "source", "relay stopped (stop-relay)", r->source) ==
            0 &&
        !ours) {
      cw_stop_tasks(w, "stop (relay stopped, source not bound here)");
      cw_reg_do(w, dmh_registry_source_stop, "source", "released (stop-relay): worker free",
                r->source);
    }
  } else if (r->stage == DMH_CLUSTER_RUNNING && ours && wk.stage == DMH_WORKER_BOUND &&
             strcmp(wk.source, r->source) == 0) {
    cw_reg_do(w, dmh_registry_relay_start, "source", "relay started (start-relay)", r->source);
  }
}

/* The binding of create_rev could not be taken up (no source file in etcd yet, the file refused,
 * a relay kept for another source): DM's dm_worker_operate_error{type="SourceBound"}, once for
 * the binding however often the reconcile tries again. */
static void cw_bound_failed(cw *w, int64_t create_rev) {
  if (w->bound_err_rev == create_rev)
    return;
  w->bound_err_rev = create_rev;
  dmh_metrics_operate_error(w->name, DMH_OP_ERR_SOURCE_BOUND);
}

int cw_reconcile(cw *w, int64_t *revision, dm_error *err) {
  char *source_text = NULL;
  int64_t create_rev = 0, rev = 0;
  cw_want *ws = NULL;
  int n_ws = 0;
  dmh_cluster_binding b;
  int brc = cw_read_binding(w, &b, &create_rev, &rev, err);
  if (brc < 0)
    return -1;
  if (revision)
    *revision = rev;
  bool bound = brc == 1;
  dmh_cluster_relay relay;
  int rrc = cw_read_relay(w, rev, &relay, err);
  if (rrc < 0)
    return -1;
  dmh_worker wk = dmh_registry_worker(w->reg);
  int rc = 0;
  /* Reads first (they may block for etcd's 7 s without quorum), then the registry under
   * ops_lock. */
  /* the source's text: to create it when bound anew, or (operate-source update through a
   * master) to take a text changed since the one applied here (its key's mod_revision) */
  int64_t src_rev = 0;
  bool here = bound && dmh_worker_bound_to(&wk, b.source), update = false;
  if (here && cw_changed_source(w, b.source, &source_text, &src_rev, err) < 0)
    return -1;
  if (bound && !here && cw_get_config(w, DMH_KEY_SOURCE, b.source, &source_text, &src_rev, err) < 0)
    return -1;
  update = here && source_text;
  if (bound && cw_read_wants(w, b.source, &ws, &n_ws, err) < 0) {
    free(source_text);
    return -1;
  }
  /* a source bound anew: every task's file, for the relay's start (cw_relay_start_text) */
  bool fresh = bound && source_text;
  int n_ts;
  cw_task *ts = cw_tasks(w, &n_ts);
  for (int j = 0; rc == 0 && j < n_ws; j++)
    if (fresh ||
        (ws[j].stage != DMH_CLUSTER_STOPPED && !(ts && cw_find_task(ts, n_ts, ws[j].task))))
      rc = cw_get_config(w, DMH_KEY_TASK, ws[j].task, &ws[j].text, NULL, err);
  /* the options of a start: of a task to create here, or (resume-task's) of one here not
   * started yet (New: created stopped, or restored) */
  for (int j = 0; rc == 0 && j < n_ws; j++) {
    const cw_task *t = ts ? cw_find_task(ts, n_ts, ws[j].task) : NULL;
    if ((ws[j].text && ws[j].stage != DMH_CLUSTER_STOPPED) ||
        (ws[j].stage == DMH_CLUSTER_RUNNING && t && strcmp(t->stage, "New") == 0))
      rc = cw_start_read(w, b.source, &ws[j], err);
  }
  /* the tasks here whose stage key is gone (stop-task): with remove-meta or not */
  char(*stop_rm)[DMH_CLUSTER_NAME_MAX] = calloc(ts && n_ts ? (size_t)n_ts : 1, sizeof *stop_rm);
  int n_rm = 0;
  for (int i = 0; rc == 0 && bound && ts && stop_rm && i < n_ts; i++) {
    bool wanted = false;
    for (int j = 0; j < n_ws && !wanted; j++)
      wanted = strcmp(ws[j].task, ts[i].name) == 0;
    int k = wanted ? 0 : cw_stop_read(w, ts[i].name, b.source, create_rev, err);
    if (k < 0)
      rc = -1;
    else if (k == 1)
      dm_strlcpy(stop_rm[n_rm++], ts[i].name, DMH_CLUSTER_NAME_MAX);
  }
  free(ts);
  if (rc < 0) {
    free(stop_rm);
    cw_wants_free(ws, n_ws);
    free(source_text);
    return -1;
  }
  if (fresh) {
    char *with_start = cw_relay_start_text(w, b.source, source_text, ws, n_ws);
    if (with_start) {
      free(source_text);
      source_text = with_start;
    }
  }

  pthread_mutex_lock(&w->ops_lock);
  if (w->fenced && bound && cw_lease_fresh(w)) {
    w->fenced = false;
    dmh_log(DM_LOG_INFO, "worker",
            "lease %lld renewed and source %s still bound here (binding revision %lld): "
            "resuming the subtasks paused %ld ms ago",
            (long long)w->lease, b.source, (long long)create_rev,
            cw_now_ms() - atomic_load(&w->fenced_at_ms));
  }
  if (rrc == 1)
    cw_apply_relay(w, &relay, bound, &b);
  wk = dmh_registry_worker(w->reg);
  if (!bound) {
    if (wk.stage == DMH_WORKER_BOUND || wk.stage == DMH_WORKER_RELAY)
      cw_release(w, &wk, "unbound");
  } else if (!dmh_worker_bound_to(&wk, b.source)) {
    if (wk.stage == DMH_WORKER_RELAY) {
      /* The scheduler never gives a relay worker another source (scheduler.h); refuse it. */
      cw_release(w, &wk, "bound to another source");
      dmh_log(DM_LOG_ERROR, "worker",
              "bound to source %s while keeping the relay of %s: refused (a worker with a relay "
              "serves only its source; stop the relay first with stop-relay)",
              b.source, wk.source);
      cw_bound_failed(w, create_rev);
    } else {
      if (wk.stage == DMH_WORKER_BOUND)
        cw_release(w, &wk, "bound to another source");
      char *path = source_text ? cw_write_config(w, "sources", b.source, source_text, err) : NULL;
      json_object *resp = json_object_new_object();
      dm_error e;
      if (!source_text)
        cw_bound_failed(w, create_rev); /* logged by cw_get_config */
      else if (!path) {
        cw_log_error(DM_LOG_WARN, "writing the source file", err);
        cw_bound_failed(w, create_rev);
      } else if (dmh_registry_source_create(w->reg, path, resp, &e) < 0) {
        cw_log_error(DM_LOG_WARN, "creating the source", &e);
        cw_bound_failed(w, create_rev);
      } else {
        cw_source_applied(w, b.source, src_rev);
        dmh_log(DM_LOG_INFO, "worker", "bound to source %s (fencing token %lld)", b.source,
                (long long)create_rev);
      }
      json_object_put(resp);
      free(path);
      wk = dmh_registry_worker(w->reg);
    }
  }
  if (bound && dmh_worker_bound_to(&wk, b.source)) {
    /* The binding's create_revision is the subtasks' fencing token: it grows each time the
     * source is bound anew, so the target refuses a stale worker's late commits. Subtasks of an
     * older binding are stopped and started again with it (from their checkpoints). */
    uint64_t token = (uint64_t)create_rev;
    uint64_t had = dmh_registry_fencing_token(w->reg);
    if (had != token) {
      cw_stop_tasks(w, "stop (new binding)");
      dmh_registry_set_fencing_token(w->reg, token);
      cw_shard_set_token(w->shard, token);
      dmh_log(DM_LOG_INFO, "worker", "source %s: fencing token %llu (was %llu)", b.source,
              (unsigned long long)token, (unsigned long long)had);
    }
    cw_apply_tasks(w, ws, n_ws, create_rev, (const char(*)[DMH_CLUSTER_NAME_MAX])stop_rm, n_rm);
    if (update && source_text) /* after the stages: the tasks on it are paused by now */
      cw_source_update(w, b.source, source_text, src_rev);
    if (rrc == 1) /* a start-relay of a source bound in this very turn */
      cw_apply_relay(w, &relay, bound, &b);
  }
  pthread_mutex_unlock(&w->ops_lock);
  free(stop_rm);
  cw_wants_free(ws, n_ws);
  free(source_text);
  return 0;
}

/* ---- registration and status ---- */

int cw_register(cw *w, bool force, dm_error *err) {
  dmh_worker wk = dmh_registry_worker(w->reg);
  const char *relay = wk.stage == DMH_WORKER_RELAY ? wk.source : "";
  if (!force && strcmp(relay, w->registered_relay) == 0)
    return 0;
  dmh_cluster_worker_info info = {0};
  dm_strlcpy(info.name, w->name, sizeof info.name);
  dm_strlcpy(info.addr, w->addr, sizeof info.addr);
  dm_strlcpy(info.relay, relay, sizeof info.relay);
  char key[DMH_CLUSTER_KEY_MAX];
  char *json = dmh_cluster_worker_json(&info);
  int rc = -1;
  if (!json)
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory registering the worker");
  else if (dmh_cluster_key(key, sizeof key, w->prefix, DMH_KEY_WORKER, w->name, NULL, NULL) >= 0 &&
           (rc = dmh_etcd_put(w->etcd, DMH_ETCD_S(key), DMH_ETCD_S(json), w->lease, 0, NULL,
                              err)) == 0) {
    dm_strlcpy(w->registered_relay, relay, sizeof w->registered_relay);
    dmh_log(DM_LOG_INFO, "worker", "registered %s = %s (lease %lld)", key, json,
            (long long)w->lease);
  }
  free(json);
  return rc;
}

/* The status of task `t` (query-status NAME's entry of its source) as JSON text, malloc'd. */
static char *cw_status_text(cw *w, const cw_task *t) {
  json_object *resp = json_object_new_object(), *srcs = NULL;
  dm_error qerr;
  if (!resp)
    return NULL;
  if (dmh_registry_query_status(w->reg, t->name, resp, &qerr) < 0)
    json_object_object_add(resp, "error", dmh_error_to_json(&qerr, NULL));
  json_object *one =
      json_object_object_get_ex(resp, "sources", &srcs) && json_object_array_length(srcs) > 0
          ? json_object_array_get_idx(srcs, 0)
          : resp;
  const char *text = json_object_to_json_string_ext(one, JSON_C_TO_STRING_PLAIN);
  char *copy = text ? strdup(text) : NULL;
  json_object_put(resp);
  return copy;
}

void cw_publish_reset(cw *w) {
  for (int j = 0; j < w->n_pub; j++) {
    free(w->pub[j].text);
    w->pub[j].text = NULL;
  }
}

void cw_publish(cw *w, bool all) {
  int n;
  cw_task *ts = cw_tasks(w, &n);
  if (!ts)
    return;
  cw_published *next = calloc(n ? (size_t)n : 1, sizeof *next);
  if (!next) {
    free(ts);
    return;
  }
  int n_next = 0;
  for (int i = 0; i < n; i++) {
    char key[DMH_CLUSTER_KEY_MAX];
    if (!ts[i].source[0] || dmh_cluster_key(key, sizeof key, w->prefix, DMH_KEY_STATUS, w->name,
                                            ts[i].name, ts[i].source) < 0)
      continue; /* no subtask here: nothing to publish */
    cw_published *before = NULL;
    for (int j = 0; j < w->n_pub && !before; j++)
      if (strcmp(w->pub[j].task, ts[i].name) == 0 && strcmp(w->pub[j].source, ts[i].source) == 0)
        before = &w->pub[j];
    cw_published *p = &next[n_next++];
    dm_strlcpy(p->task, ts[i].name, sizeof p->task);
    dm_strlcpy(p->source, ts[i].source, sizeof p->source);
    if (before) {
      dm_strlcpy(p->stage, before->stage, sizeof p->stage);
      p->text = before->text;
      before->text = NULL;
    }
    bool changed = !before || strcmp(before->stage, ts[i].stage) != 0;
    if (!all && !changed)
      continue;
    char *text = cw_status_text(w, &ts[i]);
    dm_error err;
    if (!text || (!changed && p->text && strcmp(p->text, text) == 0)) {
      free(text); /* the same as the key holds: no request */
      continue;
    }
    if (dmh_etcd_put(w->etcd, DMH_ETCD_S(key), DMH_ETCD_S(text), w->lease, 0, NULL, &err) < 0) {
      cw_log_error(DM_LOG_WARN, "publishing a status", &err);
      free(text); /* p keeps what was published: tried again at the next turn */
      continue;
    }
    free(p->text);
    p->text = text;
    dm_strlcpy(p->stage, ts[i].stage, sizeof p->stage);
  }
  /* Subtasks gone: their keys go too (they would with the lease, but not before). */
  for (int j = 0; j < w->n_pub; j++) {
    bool kept = false;
    for (int i = 0; i < n_next && !kept; i++)
      kept = strcmp(next[i].task, w->pub[j].task) == 0 &&
             strcmp(next[i].source, w->pub[j].source) == 0;
    char key[DMH_CLUSTER_KEY_MAX];
    dm_error err;
    if (!kept &&
        dmh_cluster_key(key, sizeof key, w->prefix, DMH_KEY_STATUS, w->name, w->pub[j].task,
                        w->pub[j].source) >= 0 &&
        dmh_etcd_delete(w->etcd, DMH_ETCD_S(key), 0, NULL, &err) < 0)
      cw_log_error(DM_LOG_WARN, "deleting a status", &err);
  }
  cw_publish_reset(w);
  free(w->pub);
  w->pub = next;
  w->n_pub = n_next;
  if (all)
    w->last_publish_ms = cw_now_ms();
  free(ts);
}

/* ---- the watch ---- */

/* Each event on a followed key or prefix: reconcile. */
static int cw_watch_fn(void *arg, const dmh_etcd_event *evs, size_t n) {
  cw_watch *wt = arg;
  (void)evs;
  if (n > 0)
    atomic_store(&wt->w->dirty, 1);
  return atomic_load(&wt->w->stop) ? 1 : 0;
}

static void *cw_watch_thread(void *arg) {
  cw_watch *wt = arg;
  cw *w = wt->w;
  dmh_etcd *c = NULL;
  int64_t from = w->watch_from;
  while (!atomic_load(&w->stop)) {
    dm_error err;
    if (!c && !(c = dmh_etcd_open(w->endpoints, &w->sec.opts, &err))) {
      cw_log_error(DM_LOG_ERROR, "watch", &err);
      break;
    }
    dmh_etcd_watch_opts o = {.prefix = wt->prefix, .start_revision = from, .stop = &w->stop};
    if (dmh_etcd_watch(c, DMH_ETCD_S(wt->key), &o, cw_watch_fn, wt, &err) < 0) {
      cw_log_error(DM_LOG_WARN, "watch (reconciling and watching again)", &err);
      /* compacted or given up: read everything again, watch from now */
      from = err.code == DM_ERR_ETCD_COMPACTED ? 0 : o.next_revision;
      atomic_store(&w->dirty, 1);
      for (int i = 0; i < 10 && !atomic_load(&w->stop); i++)
        usleep(100 * 1000);
    } else {
      from = o.next_revision;
    }
  }
  dmh_etcd_close(c);
  return NULL;
}

int cw_threads_start(cw *w, dm_error *err) {
  if (pthread_create(&w->fence_thr, NULL, cw_fence_thread, w) != 0) {
    dm_error_set(err, DM_ERR_INTERNAL, NULL, "cannot start the fence thread");
    return -1;
  }
  w->fence_started = true;
  /* What this worker follows: its binding, the expected stages (of every source: a range has
   * no "of this source" shape), its relay request and the source texts (operate-source update;
   * rare: every source's, as with the stages). Not the whole prefix: every worker's status puts would reach every
   * worker. The file texts are read when needed (a missing one: reconciled again a second later).
   */
  cw_watch *bound = &w->watches[0], *stages = &w->watches[1], *relay = &w->watches[2],
           *sources = &w->watches[3];
  *bound = (cw_watch){.w = w, .prefix = 0};
  *stages = (cw_watch){.w = w, .prefix = 1};
  *relay = (cw_watch){.w = w, .prefix = 0};
  *sources = (cw_watch){.w = w, .prefix = 1};
  if (dmh_cluster_key(bound->key, sizeof bound->key, w->prefix, DMH_KEY_BOUND, w->name, NULL,
                      NULL) < 0 ||
      dmh_cluster_key(relay->key, sizeof relay->key, w->prefix, DMH_KEY_RELAY, w->name, NULL,
                      NULL) < 0 ||
      dmh_cluster_key(stages->key, sizeof stages->key, w->prefix, DMH_KEY_STAGE, NULL, NULL, NULL) <
          0 ||
      dmh_cluster_key(sources->key, sizeof sources->key, w->prefix, DMH_KEY_SOURCE, NULL, NULL,
                      NULL) < 0) {
    dm_error_set(err, DM_ERR_INTERNAL, NULL, "the keys to watch do not fit");
    return -1;
  }
  for (int i = 0; i < CW_N_WATCHES; i++) {
    if (pthread_create(&w->watches[i].thr, NULL, cw_watch_thread, &w->watches[i]) != 0) {
      dm_error_set(err, DM_ERR_INTERNAL, NULL, "cannot start the watch thread");
      return -1;
    }
    w->watches[i].started = true;
  }
  return 0;
}

void cw_threads_stop(cw *w) {
  atomic_store(&w->stop, 1);
  if (w->fence_started)
    pthread_join(w->fence_thr, NULL);
  for (int i = 0; i < CW_N_WATCHES; i++)
    if (w->watches[i].started) {
      pthread_join(w->watches[i].thr, NULL);
      w->watches[i].started = false;
    }
  w->fence_started = false;
}
