/* operate-source create, show and stop: the worker's binding to its source; the locking is
 * described in registry.h. */
#include "registry_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmhost/sdk.h"
#include "error_json.h"
#include "log.h"

/* ---- sources ---- */

static int reg_source_create_locked_out(dmh_registry *r, const char *path, dmh_cfg_origin origin,
                                        char *id_out, size_t id_len, dm_error *err) {
  dmh_source_config *orig = NULL;
  dmh_cfg_trust trust = reg_trust(r, origin);
  if (dmh_source_config_load_as(path, &trust, &orig, err) < 0)
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
  rel = dmh_state_source_file_rel(id, path);
  abs = rel ? dmh_state_path(r->state_dir, rel) : NULL;
  dir = reg_printf("%s/sources/%s", r->state_dir, id);
  if (!rel || !abs || !dir) {
    reg_oom(err, "creating the source");
    goto out;
  }
  if (dmh_state_mkdirs(dir, err) < 0 || dmh_state_copy_file(path, abs, err) < 0)
    goto out;
  if (dmh_source_config_load_as(abs, &trust, &copy, err) < 0 ||
      reg_check_paths(path, orig->unit_paths, copy->unit_paths, DMH_KIND_COUNT, NULL, err) < 0)
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
  s->disabled = !s->cfg->enable; /* DM's `enable: false`: created disabled */
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
  return dmh_registry_source_create_as(r, path, DMH_CFG_OPERATOR, resp, err);
}

int dmh_registry_source_create_as(dmh_registry *r, const char *path, dmh_cfg_origin origin,
                                  json_object *resp, dm_error *err) {
  char id[DMH_WORKER_SOURCE_MAX] = "";
  pthread_mutex_lock(&r->source_lock);
  int rc = reg_source_create_locked_out(r, path, origin, id, sizeof id, err);
  pthread_mutex_unlock(&r->source_lock);
  return reg_reply_source(r, id, rc, err, resp);
}

reg_source *reg_bound_source(dmh_registry *r, const char *cmd, const char *id, const char *hint,
                             dm_error *err) {
  reg_source *s = reg_get_source(r, id);
  if (!s) {
    dmh_worker w = dmh_registry_worker(r);
    dm_error_set(err, DM_ERR_NOT_FOUND, NULL,
                 "%s: source \"%s\" is not bound to this worker (worker %s%s%s)%s", cmd, id,
                 dmh_worker_stage_name(w.stage), w.source[0] ? " to " : "", w.source, hint);
  }
  return s;
}

int dmh_registry_source_show(dmh_registry *r, const char *source, json_object *resp,
                             dm_error *err) {
  json_object *arr = json_object_new_array();
  json_object_object_add(resp, "sources", arr);
  reg_add_worker(r, resp);
  reg_source *s = source ? reg_bound_source(r, "operate-source show", source, "", err)
                         : reg_get_source(r, NULL);
  if (!s)
    return source ? -1 : 0;
  json_object *o = reg_source_result(r, s->id, NULL);
  char *file = dmh_state_path(r->state_dir, s->file_rel);
  json_object_object_add(o, "file", json_object_new_string(file ? file : ""));
  free(file);
  json_object_object_add(o, "enableRelay", json_object_new_boolean(s->cfg->enable_relay));
  json_object_object_add(o, "enableGTID", json_object_new_boolean(s->cfg->enable_gtid));
  /* what DM's Source shows of the file (its password never) */
  const dm_db_endpoint *ep = &s->cfg->from.ep;
  json_object_object_add(o, "host", json_object_new_string(ep->host ? ep->host : "127.0.0.1"));
  json_object_object_add(o, "port", json_object_new_int(ep->port));
  json_object_object_add(o, "user", json_object_new_string(ep->user ? ep->user : ""));
  json_object_object_add(o, "serverID", json_object_new_int64(s->cfg->server_id));
  pthread_mutex_lock(&r->lock);
  json_object_object_add(o, "enable", json_object_new_boolean(!s->disabled));
  dmh_subtask *relay = s->relay;
  dmh_expect_stage expect = s->relay_expect;
  bool has_err = s->has_relay_err;
  dm_error rerr = s->relay_err;
  pthread_mutex_unlock(&r->lock);
  json_object_object_add(o, "relayExpected", json_object_new_string(dmh_expect_stage_name(expect)));
  json_object_object_add(o, "relayStatus", reg_relay_status(relay));
  if (has_err && !relay)
    json_object_object_add(o, "relayError", dmh_error_to_json(&rerr, NULL));
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
  return reg_reply_source(r, source, rc, err, resp);
}
