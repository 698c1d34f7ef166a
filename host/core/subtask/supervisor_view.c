/*
 * The subtask seen from outside (supervisor.h): its stage settling, the current unit's positions
 * and progress, query-status's view and JSON. Readers only: they take state_lock for a copy and
 * read a unit's status under its life lock (sup_unit_status), never a command's cmd_lock.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "dmhost/clock.h"
#include "dmhost/sdk.h"
#include "error_json.h"
#include "supervisor_internal.h"

static const char *sup_unit_display(dm_unit_kind k) {
  switch (k) {
  case DM_UNIT_DUMP:
    return "Dump";
  case DM_UNIT_LOAD:
    return "Load";
  case DM_UNIT_SYNC:
    return "Sync";
  case DM_UNIT_RELAY:
    return "Relay";
  default:
    return "Custom";
  }
}

static bool sup_settled(dmh_stage s) {
  return s == DMH_STAGE_PAUSED || s == DMH_STAGE_STOPPED || s == DMH_STAGE_FINISHED;
}

dmh_stage dmh_subtask_wait_settled(dmh_subtask *st, int timeout_ms) {
  struct timespec deadline = dm_clock_deadline(timeout_ms >= 0 ? timeout_ms : 0);
  pthread_mutex_lock(&st->state_lock);
  while (!sup_settled(st->stage)) {
    if (timeout_ms < 0)
      pthread_cond_wait(&st->state_cv, &st->state_lock);
    else if (pthread_cond_timedwait(&st->state_cv, &st->state_lock, &deadline) == ETIMEDOUT)
      break;
  }
  dmh_stage s = st->stage;
  pthread_mutex_unlock(&st->state_lock);
  return s;
}

static sup_unit *sup_find(dmh_subtask *st, dm_unit_kind kind) {
  for (int i = 0; i < st->n_units; i++)
    if (st->units[i].kind == kind)
      return &st->units[i];
  return NULL;
}

bool dmh_subtask_unit_position(dmh_subtask *st, dm_unit_kind kind, const char *key,
                               dm_position *out) {
  sup_unit *u = sup_find(st, kind);
  if (!u)
    return false;
  dmh_status s;
  dmh_status_init(&s);
  bool ok = sup_unit_status(u, &s) && dmh_status_position(&s, key, out);
  dmh_status_free(&s);
  return ok;
}

bool dmh_subtask_relay_progress(dmh_subtask *relay, dmh_relay_progress *rp) {
  memset(rp, 0, sizeof *rp);
  sup_unit *u = sup_find(relay, DM_UNIT_RELAY);
  if (!u)
    return false;
  dmh_status s;
  dmh_status_init(&s);
  bool live = sup_unit_status(u, &s);
  if (live) {
    rp->has_written = dmh_status_position(&s, DM_STATUS_RELAY_BINLOG, &rp->written);
    rp->has_master = dmh_status_position(&s, DM_STATUS_MASTER_BINLOG, &rp->master);
    if (!dmh_status_bool(&s, DM_STATUS_RELAY_CATCH_UP, &rp->caught_up))
      rp->caught_up = false;
  }
  dmh_status_free(&s);
  return live;
}

/* The progress in u's status s, its rate sampled now (the rate is kept per unit, under state). */
static void sup_progress_of(dmh_subtask *st, sup_unit *u, const dmh_status *s, dmh_progress *p) {
  pthread_mutex_lock(&st->state_lock);
  double rate = dmh_rate_sample(&u->rate, s->done);
  pthread_mutex_unlock(&st->state_lock);
  dmh_progress_of(s, rate, p);
}

/* The view of the subtask's own state (state_lock held); the current unit in *cur. */
static void sup_summary_locked(dmh_subtask *st, dmh_subtask_view *v, sup_unit **cur) {
  memset(v, 0, sizeof *v);
  sup_unit *u = &st->units[st->cur];
  v->stage = st->stage;
  v->unit = sup_unit_display(u->kind);
  v->manual_pause = st->manual_pause;
  v->waiting_relay = st->waiting_relay;
  v->auto_resume_pending = st->auto_resume_at > 0;
  if (v->auto_resume_pending)
    v->auto_resume_in = st->auto_resume_at - dmh_now_seconds();
  v->canceled = st->canceled;
  v->n_errors = st->n_errors;
  for (int i = 0; i < st->n_errors; i++) {
    v->errors[i] = st->errors[i];
    memcpy(v->error_ctx[i], st->error_ctx[i], sizeof v->error_ctx[i]);
  }
  if (cur)
    *cur = u;
}

void dmh_subtask_summary(dmh_subtask *st, dmh_subtask_view *v) {
  pthread_mutex_lock(&st->state_lock);
  sup_summary_locked(st, v, NULL);
  pthread_mutex_unlock(&st->state_lock);
}

void dmh_subtask_progress(dmh_subtask *st, dmh_subtask_view *v) {
  sup_unit *u;
  pthread_mutex_lock(&st->state_lock);
  sup_summary_locked(st, v, &u);
  pthread_mutex_unlock(&st->state_lock);
  dmh_status s;
  dmh_status_init(&s);
  if (sup_unit_status(u, &s) && s.has_progress) {
    v->has_progress = true;
    sup_progress_of(st, u, &s, &v->progress);
  }
  dmh_status_free(&s);
}

json_object *dmh_subtask_status_json(dmh_subtask *st) {
  dmh_subtask_view v;
  sup_unit *u;
  pthread_mutex_lock(&st->state_lock);
  sup_summary_locked(st, &v, &u);
  json_object *o = json_object_new_object();
  json_object_object_add(o, "name", json_object_new_string(st->name));
  json_object_object_add(o, "source",
                         json_object_new_string(st->source ? st->source->source_id : ""));
  json_object_object_add(o, "stage", json_object_new_string(dmh_stage_name(v.stage)));
  json_object_object_add(o, "unit", json_object_new_string(v.unit));
  json_object_object_add(o, "unitBuild", json_object_new_string(u->desc ? u->desc->name : ""));
  json_object_object_add(o, "unitVersion", json_object_new_string(u->desc ? u->desc->version : ""));
  pthread_mutex_unlock(&st->state_lock);
  if (v.n_errors > 0 || v.canceled) {
    json_object *res = json_object_new_object();
    json_object_object_add(res, "isCanceled", json_object_new_boolean(v.canceled));
    json_object *errs = json_object_new_array();
    for (int i = 0; i < v.n_errors; i++)
      json_object_array_add(errs, dmh_error_to_json(&v.errors[i], v.error_ctx[i]));
    json_object_object_add(res, "errors", errs);
    json_object_object_add(o, "result", res);
  } else {
    json_object_object_add(o, "result", NULL);
  }
  json_object_object_add(o, "unresolvedDDLLockID", json_object_new_string(""));
  json_object_object_add(o, "pausedManually", json_object_new_boolean(v.manual_pause));
  json_object_object_add(o, "waitingRelayCatchUp", json_object_new_boolean(v.waiting_relay));
  if (v.auto_resume_pending)
    json_object_object_add(o, "autoResumeIn", json_object_new_double(v.auto_resume_in));
  dmh_status s;
  dmh_status_init(&s);
  bool live = sup_unit_status(u, &s);
  char key[DMH_KIND_NAME_MAX + 8];
  snprintf(key, sizeof key, "%sStatus", u->section);
  json_object_object_add(o, key, live ? json_object_get(s.obj) : NULL);
  if (live && s.has_progress) {
    dmh_progress p;
    sup_progress_of(st, u, &s, &p);
    json_object_object_add(o, "progress", dmh_progress_json(&p));
  }
  dmh_status_free(&s);
  return o;
}
