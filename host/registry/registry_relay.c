/* start-relay, stop-relay and purge-relay, and the relay's part of a status; the locking is
 * described in registry.h. */
#include "registry_internal.h"

#include <pthread.h>
#include <stdlib.h>

#include "dmhost/relay_purge.h"
#include "dmhost/sdk.h"
#include "log.h"

/* ---- relay ---- */

/* Create (first time) or restart the relay of s and move the worker to relay. source_lock held.
 * `next` is the worker after START_RELAY, checked by the caller. */
int reg_relay_run(dmh_registry *r, reg_source *s, const dmh_worker *next, dm_error *err) {
  pthread_mutex_lock(&r->lock);
  dmh_subtask *relay = s->relay;
  pthread_mutex_unlock(&r->lock);
  int rc;
  if (!relay) {
    char *root = dmh_state_relay_work_root(r->state_dir, s->id);
    if (!root)
      return reg_oom(err, "starting the relay");
    dmh_subtask_opts o = {.source = s->cfg,
                          .work_root = root,
                          .plugin_dir = r->plugin_dir,
                          .trusted_only = true,
                          .unit_folders = &r->folders,
                          .worker_name = r->worker_name};
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
  return reg_reply_source(r, source, rc, err, resp);
}

/* Stop the relay of s (it stays allocated: tasks may borrow it) and move the worker to `next`.
 * source_lock held. */
int reg_relay_halt(dmh_registry *r, reg_source *s, const dmh_worker *next, dm_error *err) {
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
  return reg_reply_source(r, source, rc, err, resp);
}

/* The relay's part of query-status and operate-source show: the relay unit's status with DM's
 * field names, plus the relay's stage and result. NULL (JSON null) without a relay. */
json_object *reg_relay_status(dmh_subtask *relay) {
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
      dm_relay_purge_opts o = {.relay_dir = s->cfg->relay_dir, .before = file};
      rc = dm_relay_purge(&o, &removed, err);
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
  json_object_object_add(resp, "removed", json_object_new_int(removed));
  return reg_reply_source(r, source, rc, err, resp);
}
