/*
 * Every call into a unit goes through here: the slot is checked for NULL, the instance's life lock
 * is taken as the call needs it, the call is timed where the contract bounds it, and errors are
 * stamped with unit, version, slot, task and source.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dmhost/clock.h"
#include "dmhost/sdk.h"
#include "log.h"
#include "metrics_host.h"
#include "supervisor_internal.h"

const char *sup_unit_label(sup_unit *u, char *buf, size_t len) {
  snprintf(buf, len, "%s unit %s %s", u->section, u->desc ? u->desc->name : "?",
           u->desc ? u->desc->version : "?");
  return buf;
}

/* A unit's refused account: the hint of a password of DM's form (config.h), by the error's side. */
static void sup_db_hint(dmh_subtask *st, dm_error *e) {
  if (e->scope == DM_SCOPE_UPSTREAM && st->source)
    dmh_db_config_hint(&st->source->from, "from", e);
  else if (e->scope == DM_SCOPE_DOWNSTREAM && st->task)
    dmh_db_config_hint(&st->task->target, "target-database", e);
}

bool sup_errors_resumable(const dm_error *errs, int n) {
  for (int i = 0; i < n; i++)
    if (!errs[i].resumable)
      return false;
  return true;
}

void sup_error_context(dmh_subtask *st, sup_unit *u, const char *slot, char *buf, size_t len) {
  snprintf(buf, len, "task=%s source=%s unit=%s(%s %s) slot=%s", st->name,
           st->source ? st->source->source_id : "?", u->section, u->desc ? u->desc->name : "?",
           u->desc ? u->desc->version : "?", slot);
}

/* ---- init, bounded by init-timeout ----
 * init runs on its own thread so a unit stuck connecting cannot hang start. The job is shared by
 * the waiter and the thread; whoever leaves last frees it. A late init that succeeds after the
 * waiter gave up kills and closes its instance itself. */
typedef struct init_job {
  pthread_mutex_t lock;
  pthread_cond_t done_cv;
  bool done, abandoned;
  int rc;
  void *self;
  dm_error err;
  const dm_unit_descriptor *desc;
  dm_ctx *ctx;
  dmh_unit_lib *lib; /* a reference of its own: the code must stay mapped until init returns */
} init_job;

static void init_job_free(init_job *j) {
  dmh_unit_lib_unref(j->lib);
  pthread_mutex_destroy(&j->lock);
  pthread_cond_destroy(&j->done_cv);
  free(j);
}

static void *init_thread(void *arg) {
  init_job *j = arg;
  void *self = NULL;
  dm_error err;
  memset(&err, 0, sizeof err);
  int rc = j->desc->ops.init(dmh_host_services(), j->ctx, &self, &err);
  pthread_mutex_lock(&j->lock);
  j->done = true;
  j->rc = rc;
  j->self = self;
  j->err = err;
  bool abandoned = j->abandoned;
  pthread_cond_signal(&j->done_cv);
  pthread_mutex_unlock(&j->lock);
  if (abandoned) {
    if (rc == 0 && self) {
      if (j->desc->ops.kill)
        j->desc->ops.kill(self);
      j->desc->ops.close(self);
    }
    init_job_free(j);
  }
  return NULL;
}

int sup_unit_init(dmh_subtask *st, sup_unit *u, dm_error *err) {
  char label[200], ctxs[192];
  sup_unit_label(u, label, sizeof label);
  dmh_ctx_reset_seen(u->ctx);
  init_job *j = calloc(1, sizeof *j);
  if (!j) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory initialising the %s", label);
    return -1;
  }
  pthread_mutex_init(&j->lock, NULL);
  pthread_cond_init(&j->done_cv, NULL);
  j->desc = u->desc;
  j->ctx = u->ctx;
  j->lib = u->lib;
  dmh_unit_lib_ref(u->lib);
  pthread_t t;
  if (pthread_create(&t, NULL, init_thread, j) != 0) {
    init_job_free(j);
    dm_error_set(err, DM_ERR_INTERNAL, strerror(errno), "cannot start a thread to init the %s",
                 label);
    return -1;
  }
  pthread_detach(t);
  double t0 = dmh_now_seconds();
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline); /* done_cv's clock */
  dm_timespec_add_ms(&deadline, st->sup.init_timeout_ms);
  pthread_mutex_lock(&j->lock);
  while (!j->done && pthread_cond_timedwait(&j->done_cv, &j->lock, &deadline) != ETIMEDOUT)
    ;
  if (!j->done) {
    j->abandoned = true; /* the thread frees the job and cleans up a late instance */
    pthread_mutex_unlock(&j->lock);
    dm_error_set(err, DM_ERR_UNIT_TIMEOUT, NULL, "the %s did not finish init within %u ms", label,
                 st->sup.init_timeout_ms);
    return -1;
  }
  pthread_mutex_unlock(&j->lock);
  dmh_metrics_unit_duration(u->ctx, u->section, true, dmh_now_seconds() - t0);
  int rc = j->rc;
  void *self = j->self;
  if (rc != 0) {
    sup_error_context(st, u, "init", ctxs, sizeof ctxs);
    if (j->err.code == 0)
      dm_error_set(&j->err, DM_ERR_UNIT_INIT, NULL, "init failed without saying why");
    sup_db_hint(st, &j->err);
    *err = j->err;
    dmh_log(DM_LOG_ERROR, ctxs, "init failed: %s", err->message);
    if (self && u->desc->ops.close)
      u->desc->ops.close(self); /* contract breach, but do not leak what it returned */
    init_job_free(j);
    return -1;
  }
  init_job_free(j);
  if (!self) {
    dm_error_set(err, DM_ERR_UNIT_INIT, NULL, "the %s returned success from init but no instance",
                 label);
    return -1;
  }
  pthread_rwlock_wrlock(&u->life);
  u->self = self;
  u->started = false;
  pthread_rwlock_unlock(&u->life);
  /* settings in the unit's section it never looked up are misspellings: refuse them now */
  if (dmh_ctx_check_unread(u->ctx, u->section, label, err) < 0) {
    sup_unit_close(st, u);
    return -1;
  }
  return 0;
}

void sup_unit_close(dmh_subtask *st, sup_unit *u) {
  pthread_mutex_lock(&st->state_lock);
  bool abandoned = u->abandoned;
  pthread_mutex_unlock(&st->state_lock);
  if (abandoned)
    return; /* its thread may still use the instance: keep it, with the subtask, for good */
  pthread_rwlock_wrlock(&u->life);
  void *self = u->self;
  u->self = NULL;
  u->started = false;
  pthread_rwlock_unlock(&u->life);
  if (self)
    u->desc->ops.close(self);
}

void sup_unit_kill(dmh_subtask *st, sup_unit *u) {
  (void)st;
  /* read-held: kill may run beside a blocked process, never beside close */
  pthread_rwlock_rdlock(&u->life);
  if (u->self && u->desc->ops.kill)
    u->desc->ops.kill(u->self);
  pthread_rwlock_unlock(&u->life);
}

int sup_unit_is_fresh(dmh_subtask *st, sup_unit *u, bool *fresh, dm_error *err) {
  memset(err, 0, sizeof *err);
  if (u->desc->ops.is_fresh_task(u->self, fresh, err) != 0) {
    char ctxs[192];
    sup_error_context(st, u, "is_fresh_task", ctxs, sizeof ctxs);
    if (err->code == 0)
      dm_error_set(err, DM_ERR_UNIT_INIT, NULL, "is_fresh_task failed without saying why");
    sup_db_hint(st, err);
    dmh_log(DM_LOG_ERROR, ctxs, "%s", err->message);
    return -1;
  }
  return 0;
}

void sup_unit_pause(dmh_subtask *st, sup_unit *u) {
  (void)st;
  if (u->self && u->started && u->desc->ops.pause)
    u->desc->ops.pause(u->self);
}

void sup_unit_run(dmh_subtask *st, sup_unit *u, dm_result *r) {
  memset(r, 0, sizeof *r);
  const char *slot = "process";
  double t0 = dmh_now_seconds();
  dmh_metrics_unit_exit_start(u->ctx, u->kind, u->section);
  if (u->started && u->desc->ops.resume) {
    slot = "resume";
    u->desc->ops.resume(u->self, r);
  } else {
    u->started = true;
    u->desc->ops.process(u->self, r);
  }
  /* A unit that comes back after its thread was abandoned (stop gave up on it) finds its subtask's
   * borrowed configs possibly freed (ctx's task and source names among them): it touches nothing
   * but the subtask itself, which is never freed. Checked under state_lock, which the abandoning
   * stop holds when it sets the flag, so the metric below is never recorded after it. */
  pthread_mutex_lock(&st->state_lock);
  bool abandoned = u->abandoned;
  if (!abandoned)
    dmh_metrics_unit_duration(u->ctx, u->section, false, dmh_now_seconds() - t0);
  pthread_mutex_unlock(&st->state_lock);
  if (abandoned) {
    memset(r, 0, sizeof *r);
    r->outcome = DM_OUTCOME_CANCELED;
    return;
  }
  /* a result outside the contract becomes an internal error rather than being trusted */
  if (r->outcome < DM_OUTCOME_FINISHED || r->outcome > DM_OUTCOME_ERROR ||
      r->n_errors > DM_RESULT_MAX_ERRORS || (r->outcome == DM_OUTCOME_ERROR && r->n_errors == 0)) {
    char label[200];
    uint32_t outcome = r->outcome, n = r->n_errors;
    memset(r, 0, sizeof *r);
    r->outcome = DM_OUTCOME_ERROR;
    r->n_errors = 1;
    dm_error_set(&r->errors[0], DM_ERR_INTERNAL, NULL,
                 "the %s returned an invalid result from %s (outcome %u, %u errors)",
                 sup_unit_label(u, label, sizeof label), slot, outcome, n);
  }
  if (r->outcome == DM_OUTCOME_ERROR) {
    dmh_metrics_unit_exit_error(u->ctx, u->kind, u->section,
                                sup_errors_resumable(r->errors, (int)r->n_errors));
    char ctxs[192];
    sup_error_context(st, u, slot, ctxs, sizeof ctxs);
    for (uint32_t i = 0; i < r->n_errors; i++)
      sup_db_hint(st, &r->errors[i]);
    for (uint32_t i = 0; i < r->n_errors; i++)
      dmh_log(DM_LOG_WARN, ctxs, "[code %d] %s%s%s", r->errors[i].code, r->errors[i].message,
              r->errors[i].raw_cause[0] ? ": " : "", r->errors[i].raw_cause);
  }
}

bool sup_unit_status(sup_unit *u, dmh_status *s) {
  pthread_rwlock_rdlock(&u->life);
  bool live = u->self != NULL;
  if (live && u->desc->ops.status)
    u->desc->ops.status(u->self, &s->sink);
  pthread_rwlock_unlock(&u->life);
  return live;
}

bool sup_unit_end_position(dmh_subtask *st, sup_unit *u, dm_position *end, dm_position *exit,
                           bool *has_exit) {
  (void)st;
  memset(end, 0, sizeof *end);
  memset(exit, 0, sizeof *exit);
  *has_exit = false;
  if (!(u->handover & DM_UNIT_GIVES_POSITION) || !u->self)
    return false;
  dm_unit_end_position_fn fn = dmh_unit_end_position(u->desc);
  if (fn) {
    bool has = fn(u->self, end, exit);
    *has_exit = has && dm_position_is_set(exit);
    return has && dm_position_is_set(end);
  }
  /* ABI 1.0: the unit said it in its status (DM_STATUS_META_BINLOG, _SAFE_EXIT) */
  dmh_status s;
  dmh_status_init(&s);
  sup_unit_status(u, &s);
  bool has = dmh_status_position(&s, DM_STATUS_META_BINLOG, end);
  *has_exit = has && dmh_status_position(&s, DM_STATUS_META_SAFE_EXIT, exit);
  dmh_status_free(&s);
  return has;
}

/* The answer's items into a JSON array (the host copies each one, as the contract says). */
static void sup_schema_put(dm_schema_answer *a, const char *item) {
  json_object_array_add(a->host_data, json_object_new_string(item ? item : ""));
}

int sup_unit_schema_op(dmh_subtask *st, sup_unit *u, const dm_schema_req *req, json_object **items,
                       dm_error *err) {
  dm_unit_schema_op_fn fn = dmh_unit_schema_op(u->desc);
  *items = NULL;
  memset(err, 0, sizeof *err);
  if (!fn || !u->self) { /* the caller checked both: a slip is not a crash */
    dm_error_set(err, DM_ERR_INTERNAL, NULL, "schema_op called on a unit without it");
    return -1;
  }
  json_object *arr = json_object_new_array();
  dm_schema_answer ans = {.put = sup_schema_put, .host_data = arr};
  if (fn(u->self, req, &ans, err) != 0) {
    char ctxs[192];
    sup_error_context(st, u, "schema_op", ctxs, sizeof ctxs);
    if (err->code == 0)
      dm_error_set(err, DM_ERR_INTERNAL, NULL, "schema_op failed without saying why");
    sup_db_hint(st, err);
    dmh_log(DM_LOG_WARN, ctxs, "[code %d] %s", err->code, err->message);
    json_object_put(arr);
    return -1;
  }
  *items = arr;
  return 0;
}

int sup_unit_validation_op(dmh_subtask *st, sup_unit *u, const dm_validation_req *req,
                           json_object **items, dm_error *err) {
  dm_unit_validation_op_fn fn = dmh_unit_validation_op(u->desc);
  *items = NULL;
  memset(err, 0, sizeof *err);
  if (!fn) { /* the caller checked: a slip is not a crash */
    dm_error_set(err, DM_ERR_INTERNAL, NULL, "validation_op called on a unit without it");
    return -1;
  }
  json_object *arr = json_object_new_array();
  dm_validation_answer ans = {.put = sup_schema_put, .host_data = arr};
  /* read-held: beside process (the unit guards what it shares), never beside close */
  pthread_rwlock_rdlock(&u->life);
  bool live = u->self != NULL;
  int rc = live ? fn(u->self, req, &ans, err) : -1;
  pthread_rwlock_unlock(&u->life);
  if (!live) {
    dm_error_set(err, DM_ERR_VALIDATION_UNIT, NULL,
                 "validation: task %s: its sync unit has no open instance (it failed to start or "
                 "has ended): resume the task, and ask again once its unit is Sync",
                 st->name);
    json_object_put(arr);
    return -1;
  }
  if (rc != 0) {
    char ctxs[192];
    sup_error_context(st, u, "validation_op", ctxs, sizeof ctxs);
    if (err->code == 0)
      dm_error_set(err, DM_ERR_INTERNAL, NULL, "validation_op failed without saying why");
    sup_db_hint(st, err);
    dmh_log(DM_LOG_WARN, ctxs, "[code %d] %s", err->code, err->message);
    json_object_put(arr);
    return -1;
  }
  *items = arr;
  return 0;
}
