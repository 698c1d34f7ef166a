/*
 * update-task TASK.cfg (or DM's TASK.yaml) through a cluster's master (docs/cluster.md, "update-task"), DM's rules
 * (its scheduler's UpdateSubTasks): the task must be in the cluster with every expected stage
 * Paused (a Running one refuses), the file is loaded, checked and prechecked as start-task does,
 * and may change only what the daemon's update-task lets change (config_update.h). Then, on the
 * leader (a follower forwards it there):
 *
 *   1. check: every source's worker must be online and reachable, and is sent the update with
 *      dry-run (its registry runs every check: identity, each subtask Paused, each unit able to
 *      take its section, the precheck); any refusal or unreachable worker and nothing is changed
 *      anywhere: the answer names the worker, the source and the reason;
 *   2. apply: the new text (its password sealed, as start-task stores it) replaces the task's key
 *      in etcd, in a txn compared on that key's and the stage keys' mod revisions (a stop, resume
 *      or other update meanwhile: refused, nothing written), so a worker that takes the source
 *      anew runs the new file; then every worker is sent the real update. A worker failing here
 *      is reported per worker with DM_ERR_UPDATE_CLUSTER: its subtask keeps the old settings
 *      until update-task is sent again (the same file: the workers that took it take it again).
 */
#include "master_internal.h"

#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_update.h"
#include "dmhost/sdk.h"
#include "log.h"
#include "secret.h"

#define UPD_MAX_SOURCES 64

typedef struct upd_source {
  char name[DMH_CLUSTER_NAME_MAX];
  char key[DMH_CLUSTER_KEY_MAX]; /* its stage key */
  int64_t mod;                   /* the stage key's mod_revision when read */
  int worker;                    /* index in the snapshot */
} upd_source;

typedef struct upd_req {
  master_ctl *x;
  const dmh_control_cmd *cmd;
  const char *path;
  const char *name; /* the task's */
  upd_source src[UPD_MAX_SOURCES];
  int n;
  master_snapshot s;
} upd_req;

/* The task's text in etcd at `key`, loaded as the master reads its stored files (the cluster key
 * decrypts its password); *mod its mod_revision. DM_ERR_NOT_FOUND when the task is not there. */
static int upd_stored(upd_req *q, const char *key, dmh_task_config **old, int64_t *mod,
                      dm_error *err) {
  dmh_etcd_result r = {0};
  if (dmh_etcd_range(q->x->c, DMH_ETCD_S(key), 0, 1, 0, &r, err) < 0)
    return -1;
  int rc = -1;
  char *text = NULL, file[DMH_CLUSTER_NAME_MAX + 8];
  if (r.n_kvs == 0) {
    dm_error_set(err, DM_ERR_NOT_FOUND, NULL,
                 "update-task: no task %s in the cluster (query-status lists the tasks): "
                 "start-task it first",
                 q->name);
  } else if (dmh_cluster_config_parse(r.kvs[0].value, r.kvs[0].value_len, &text, err) == 0) {
    *mod = r.kvs[0].mod_revision;
    snprintf(file, sizeof file, "%s.cfg", q->name);
    dmh_cfg_trust trust = master_ctl_trust(q->x, DMH_CFG_SUBMITTED);
    dmh_control_file f;
    dmh_secret_cluster_scope(1);
    rc = dmh_control_file_from_text(file, text, false, &f, err);
    if (rc == 0)
      rc = dmh_task_config_load_as(f.path, &trust, old, err) < 0 ? -1 : 0;
    dmh_secret_cluster_scope(0);
    dmh_control_file_free(&f);
  }
  free(text);
  dmh_etcd_result_free(&r);
  return rc;
}

/* The task's stage keys: each Paused (DM refuses an update of a subtask expected Running), and
 * each source's online worker. */
static int upd_sources(upd_req *q, dm_error *err) {
  char prefix[DMH_CLUSTER_KEY_MAX];
  dmh_etcd_result r = {0};
  if (master_key(prefix, sizeof prefix, q->x->m, DMH_KEY_STAGE, q->name, NULL, NULL, err) < 0 ||
      dmh_etcd_range(q->x->c, DMH_ETCD_S(prefix), 1, 0, 0, &r, err) < 0)
    return -1;
  int rc = 0;
  for (size_t i = 0; i < r.n_kvs && rc == 0; i++) {
    const dmh_etcd_kv *kv = &r.kvs[i];
    char t[DMH_CLUSTER_NAME_MAX], src[DMH_CLUSTER_NAME_MAX];
    dmh_cluster_stage stage;
    if (dmh_cluster_key_parse(kv->key, kv->key_len, q->x->m->prefix, DMH_KEY_STAGE, t, src, NULL) <
            0 ||
        strcmp(t, q->name) != 0)
      continue;
    if (q->n == UPD_MAX_SOURCES) {
      dm_error_set(err, DM_ERR_CONTROL_REQUEST, NULL,
                   "update-task: task %s reads more than %d sources: not served by a master",
                   q->name, UPD_MAX_SOURCES);
      rc = -1;
    } else if (dmh_cluster_stage_parse(kv->value, kv->value_len, &stage) < 0 ||
               stage != DMH_CLUSTER_PAUSED) {
      dm_error_set(err, DM_ERR_UPDATE_STAGE, NULL,
                   "update-task: task %s on source %s is expected %s; update-task takes a task "
                   "whose every subtask is paused (DM's rule): `dmctl pause-task %s`, wait for "
                   "stage Paused in query-status, then update-task again; nothing was changed",
                   q->name, src, kv->value, q->name);
      rc = -1;
    } else {
      upd_source *u = &q->src[q->n++];
      dm_strlcpy(u->name, src, sizeof u->name);
      dm_strlcpy(u->key, kv->key, sizeof u->key);
      u->mod = kv->mod_revision;
    }
  }
  dmh_etcd_result_free(&r);
  if (rc == 0 && q->n == 0) {
    dm_error_set(err, DM_ERR_NOT_FOUND, NULL, "update-task: task %s has no subtask in the cluster",
                 q->name);
    rc = -1;
  }
  if (rc < 0 || master_snapshot_read(q->x->c, q->x->m, &q->s, err) < 0)
    return -1;
  for (int k = 0; k < q->n; k++) {
    dm_error e;
    if ((q->src[k].worker = master_ctl_worker_index(&q->s, q->src[k].name, false, &e)) < 0) {
      dm_error_set(err, DM_ERR_UPDATE_STAGE, e.message,
                   "update-task: task %s: source %s has no online worker now, so its subtask "
                   "cannot be checked or updated; nothing was changed: update-task again once "
                   "list-member shows a worker bound to it",
                   q->name, q->src[k].name);
      return -1;
    }
  }
  return 0;
}

/* The worker's answer refused (result false): its error into *err, prefixed with who. */
static bool upd_refused(const upd_req *q, const upd_source *u, json_object *answer,
                        const char *when, dm_error *err) {
  json_object *ok = NULL, *e = NULL, *code = NULL, *msg = NULL;
  if (json_object_object_get_ex(answer, "result", &ok) && json_object_get_boolean(ok))
    return false;
  int32_t c = json_object_object_get_ex(answer, "error", &e) &&
                      json_object_object_get_ex(e, "ErrCode", &code)
                  ? (int32_t)json_object_get_int(code)
                  : DM_ERR_CONTROL;
  json_object_object_get_ex(answer, "msg", &msg);
  dm_error_set(err, c, NULL, "update-task %s: worker %s (source %s) %s: %s", q->name,
               q->s.workers[u->worker].name, u->name, when,
               msg ? json_object_get_string(msg) : "refused, no message");
  return true;
}

/* One entry of the answer's "sources" (DM's CommonWorkerResponse): result, msg, source, worker. */
static json_object *upd_entry(const upd_req *q, const upd_source *u, const dm_error *e) {
  json_object *o = dmh_control_response_new();
  if (e)
    dmh_control_set_error(o, e);
  json_object_object_add(o, "source", json_object_new_string(u->name));
  json_object_object_add(o, "worker", json_object_new_string(q->s.workers[u->worker].name));
  return o;
}

/* Phase 1: every worker checks the update (dry run). -1 with the first refusal. */
static int upd_check(upd_req *q, json_object *wargs, dm_error *err) {
  json_object_object_add(wargs, "dry-run", json_object_new_boolean(1));
  for (int k = 0; k < q->n; k++) {
    upd_source *u = &q->src[k];
    dm_error e;
    json_object *answer =
        master_ctl_forward_worker(q->x, &q->s, (size_t)u->worker, q->cmd, wargs, &e);
    bool refused = !answer || upd_refused(q, u, answer, "refused the update", &e);
    json_object_put(answer);
    if (refused) {
      if (!answer) /* unreachable: nothing was asked of it */
        dm_error_set(err, e.code, e.message,
                     "update-task %s: worker %s (source %s) could not be asked to check the "
                     "update: %s; nothing was changed",
                     q->name, q->s.workers[u->worker].name, u->name, e.message);
      else
        *err = e;
      return -1;
    }
  }
  return 0;
}

/* The new text at the task's key, if neither it nor any stage key moved since they were read. */
static int upd_store(upd_req *q, const char *key, int64_t mod, const char *val, dm_error *err) {
  dmh_etcd_cmp cmps[UPD_MAX_SOURCES + 1];
  cmps[0] = (dmh_etcd_cmp){
      .key = DMH_ETCD_S(key), .target = DMH_ETCD_CMP_MOD, .result = DMH_ETCD_EQUAL, .number = mod};
  for (int k = 0; k < q->n; k++)
    cmps[k + 1] = (dmh_etcd_cmp){.key = DMH_ETCD_S(q->src[k].key),
                                 .target = DMH_ETCD_CMP_MOD,
                                 .result = DMH_ETCD_EQUAL,
                                 .number = q->src[k].mod};
  dmh_etcd_op put = {.kind = DMH_ETCD_PUT, .key = DMH_ETCD_S(key), .value = DMH_ETCD_S(val)};
  dmh_etcd_txn_result tr = {0};
  if (dmh_etcd_txn(q->x->c, cmps, (size_t)q->n + 1, &put, 1, NULL, 0, &tr, err) < 0)
    return -1;
  int ok = tr.succeeded;
  dmh_etcd_txn_result_free(&tr);
  if (ok)
    return 0;
  dm_error_set(err, DM_ERR_UPDATE_STAGE, NULL,
               "update-task %s: the task or one of its expected stages changed while the workers "
               "checked the update (a resume, stop or another update-task meanwhile); nothing was "
               "changed: see query-status %s and update-task again",
               q->name, q->name);
  return -1;
}

/* Phase 2: every worker takes the update; per worker its entry in arr. -1 with
 * DM_ERR_UPDATE_CLUSTER when any did not. */
static int upd_apply(upd_req *q, json_object *wargs, json_object *arr, dm_error *err) {
  json_object_object_add(wargs, "dry-run", json_object_new_boolean(0));
  char failed[1024] = "";
  size_t used = 0;
  int n_failed = 0;
  for (int k = 0; k < q->n; k++) {
    upd_source *u = &q->src[k];
    dm_error e;
    json_object *answer =
        master_ctl_forward_worker(q->x, &q->s, (size_t)u->worker, q->cmd, wargs, &e);
    bool bad = !answer || upd_refused(q, u, answer, "did not take the update", &e);
    json_object_put(answer);
    json_object_array_add(arr, upd_entry(q, u, bad ? &e : NULL));
    if (bad && used < sizeof failed) {
      int w = snprintf(failed + used, sizeof failed - used, "%s%s on %s (%s)", n_failed ? "; " : "",
                       u->name, q->s.workers[u->worker].name, e.message);
      used += w > 0 ? (size_t)w : 0;
    }
    n_failed += bad;
  }
  if (n_failed == 0)
    return 0;
  dm_error_set(err, DM_ERR_UPDATE_CLUSTER, NULL,
               "update-task %s: the new file is stored in etcd (a worker that takes a source anew "
               "runs it), but %d of %d source(s) still run the old settings: %s. Fix what the "
               "worker says (a subtask must stay Paused; a worker must be online), then "
               "update-task again with the same file: the sources that took it take it again",
               q->name, n_failed, q->n, failed);
  return -1;
}

int master_ctl_update_task(void *ud, const dmh_control_cmd *cmd, json_object *args,
                           json_object *resp, dm_error *err) {
  master_ctl *x = ud;
  int led = master_ctl_to_leader(x, cmd, args, resp, err);
  if (led != 0)
    return led < 0 ? -1 : 0;
  const char *path, *want = NULL;
  bool dry = false;
  if (dmh_control_arg_path(cmd, args, "path", &path, err) < 0 ||
      dmh_control_arg_string(cmd, args, "name", false, &want, err) < 0 ||
      dmh_control_arg_bool(cmd, args, "dry-run", &dry, err) < 0)
    return -1;
  dmh_control_file f;
  if (dmh_control_file_get(cmd, args, path, true, &f, err) < 0) {
    dmh_control_file_free(&f);
    return -1;
  }
  upd_req *q = calloc(1, sizeof *q);
  dmh_task_config *next = NULL, *old = NULL;
  char key[DMH_CLUSTER_KEY_MAX], what[DMH_CLUSTER_NAME_MAX + 16];
  char *val = NULL, *sealed = NULL;
  json_object *wargs = NULL;
  int64_t mod = 0;
  int rc = -1;
  dmh_cfg_trust trust = master_ctl_trust(x, f.origin);
  if (!q) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory answering update-task");
    goto out;
  }
  q->x = x, q->cmd = cmd, q->path = path;
  if (dmh_task_config_load_as(f.path, &trust, &next, err) < 0) {
    dmh_control_file_blame(&f, path, err);
    goto out;
  }
  q->name = next->name;
  if (want && strcmp(want, next->name) != 0) {
    dm_error_set(err, DM_ERR_CONTROL_REQUEST, NULL,
                 "update-task: the path names task \"%s\" but the task's name is \"%s\"; send "
                 "the task to PUT /api/v1/tasks/%s (a task's name cannot change)",
                 want, next->name, next->name);
    goto out;
  }
  if (master_ctl_cluster_supports(next, path, err) < 0 ||
      master_key(key, sizeof key, x->m, DMH_KEY_TASK, next->name, NULL, NULL, err) < 0 ||
      upd_stored(q, key, &old, &mod, err) < 0)
    goto out;
  if (dmh_task_config_same_identity(old, next, err) < 0) {
    dmh_control_file_blame(&f, path, err);
    goto out;
  }
  if (upd_sources(q, err) < 0)
    goto out;
  snprintf(what, sizeof what, "update-task %s", next->name);
  if (master_ctl_precheck(x, next, what, resp, err) < 0 ||
      !(val = master_ctl_sealed_value(x, &f, path, "target-database", next->target.ep.password,
                                      &sealed, err)))
    goto out;
  /* the workers get the text etcd keeps (its password sealed: they decrypt it with the
   * cluster key, as they do the texts they read from etcd), libconfig also for DM's YAML: named
   * FILE.yaml.cfg, as the worker reads a file by its name's format */
  wargs = json_object_new_object();
  size_t plen = strlen(path);
  char *wpath = malloc(plen + 5);
  if (!wpath) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory answering update-task");
    goto out;
  }
  snprintf(wpath, plen + 5, "%s%s", path, dmh_config_is_yaml(path) ? ".cfg" : "");
  json_object_object_add(wargs, "path", json_object_new_string(wpath));
  free(wpath);
  json_object_object_add(wargs, "content", json_object_new_string(sealed));
  if (upd_check(q, wargs, err) < 0)
    goto out;
  json_object *arr = json_object_new_array();
  json_object_object_add(resp, "sources", arr);
  if (dry) {
    for (int k = 0; k < q->n; k++)
      json_object_array_add(arr, upd_entry(q, &q->src[k], NULL));
    json_object_object_add(resp, "msg",
                           json_object_new_string("update-task dry run: every worker can take "
                                                  "the file; nothing was changed"));
    rc = 0;
    goto out;
  }
  if (upd_store(q, key, mod, val, err) < 0)
    goto out;
  rc = upd_apply(q, wargs, arr, err);
  if (rc == 0)
    dmh_log(DM_LOG_INFO, "master", "task %s updated from %s on %d source(s)", q->name, path, q->n);
out:
  json_object_put(wargs);
  if (sealed)
    OPENSSL_cleanse(sealed, strlen(sealed));
  free(sealed);
  free(val);
  if (q)
    master_snapshot_free(&q->s);
  free(q);
  dmh_task_config_free(old);
  dmh_task_config_free(next);
  dmh_control_file_free(&f);
  return rc;
}
