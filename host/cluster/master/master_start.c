/*
 * start-task's one-shot options on a cluster's master (DM's StartTask with RemoveMeta and
 * StartTime): --remove-meta, and --start-time's position found here on each source. The workers'
 * target meta, tracker schemas and work folders are theirs to drop (the registry's remove-meta),
 * so the leader hands each source's worker the options at <p>/start/<task>/<source>
 * (cluster_keys.h) in the txn that creates the task: the key's mod_revision is the task key's
 * create_revision (the start it belongs to), and it names the binding it is for. The txn is fenced
 * by the leader's token and by each binding's create_revision, so a worker bound anew meanwhile
 * never gets options meant for another (docs/cluster.md, "start-task's options"). stop-task's
 * remove-meta (DM's delete with keep_meta=false) puts {remove_meta, stop} there in the stop's txn:
 * each worker drops the meta after it stopped the subtask. resume-task's options (DM's OpenAPI
 * start of a task created stopped: remove-meta, start-time, safe-mode-duration) go there too, in
 * the txn that flips the stage keys from the Paused of the creation to Running, each record
 * marked "resume" (its mod_revision is then the stage key's: the start it belongs to).
 */
#include "master_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmhost/sdk.h"
#include "dmhost/settings.h"
#include "registry.h"
#include "secret.h"

int master_ctl_source_load(master_ctl *x, const char *task, const char *source,
                           dmh_source_config **sc, dm_error *err) {
  char key[DMH_CLUSTER_KEY_MAX], name[DMH_CLUSTER_NAME_MAX + 8];
  dmh_etcd_result r = {0};
  char *text = NULL;
  int rc = -1;
  *sc = NULL;
  if (master_key(key, sizeof key, x->m, DMH_KEY_SOURCE, source, NULL, NULL, err) < 0 ||
      dmh_etcd_range(x->c, DMH_ETCD_S(key), 0, 1, 0, &r, err) < 0)
    goto out;
  if (r.n_kvs == 0) {
    dm_error_set(err, DM_ERR_NOT_FOUND, NULL,
                 "task %s reads source %s, which is not in the cluster: operate-source create "
                 "it first",
                 task, source);
    goto out;
  }
  if (dmh_cluster_config_parse(r.kvs[0].value, r.kvs[0].value_len, &text, err) < 0)
    goto out;
  dmh_control_file f;
  snprintf(name, sizeof name, "%s.cfg", source);
  dmh_cfg_trust trust = master_ctl_trust(x, DMH_CFG_SUBMITTED); /* the text kept in etcd */
  /* a text from etcd: its password decrypts with the cluster key, never a key path in it */
  dmh_secret_cluster_scope(1);
  rc = dmh_control_file_from_text(name, text, false, &f, err) < 0 ||
               dmh_source_config_load_as(f.path, &trust, sc, err) < 0
           ? -1
           : 0;
  dmh_secret_cluster_scope(0);
  dmh_control_file_free(&f);
out:
  free(text);
  dmh_etcd_result_free(&r);
  return rc;
}

int master_start_opts_parse(const dmh_control_cmd *cmd, json_object *args, master_start_opts *o,
                            dm_error *err) {
  memset(o, 0, sizeof *o);
  if (dmh_control_arg_bool(cmd, args, "remove-meta", &o->remove_meta, err) < 0 ||
      dmh_control_arg_string(cmd, args, "start-time", false, &o->start_time, err) < 0)
    return -1;
  return 0;
}

/* The create_revision of worker `worker`'s binding key (0: none). */
static int ms_binding_rev(master_ctl *x, const char *worker, char *key, int64_t *rev,
                          dm_error *err) {
  dmh_etcd_result r = {0};
  *rev = 0;
  if (master_key(key, DMH_CLUSTER_KEY_MAX, x->m, DMH_KEY_BOUND, worker, NULL, NULL, err) < 0 ||
      dmh_etcd_range(x->c, DMH_ETCD_S(key), 0, 1, 0, &r, err) < 0)
    return -1;
  if (r.n_kvs > 0)
    *rev = r.kvs[0].create_revision;
  dmh_etcd_result_free(&r);
  return 0;
}

/* DM's refusal of remove-meta while the task's subtasks exist: a worker still reporting a subtask
 * of `task` (its status key: the stop of a task of that name has not reached it yet) would keep
 * running it and never take this start's options. */
static int ms_no_subtask(master_ctl *x, const char *task, dm_error *err) {
  dmh_etcd_result r = {0};
  if (master_range_kind(x->c, x->m, DMH_KEY_STATUS, 0, &r, err) < 0)
    return -1;
  int rc = 0;
  for (size_t i = 0; i < r.n_kvs && rc == 0; i++) {
    char w[DMH_CLUSTER_NAME_MAX], t[DMH_CLUSTER_NAME_MAX], src[DMH_CLUSTER_NAME_MAX];
    if (dmh_cluster_key_parse(r.kvs[i].key, r.kvs[i].key_len, x->m->prefix, DMH_KEY_STATUS, w, t,
                              src) == 0 &&
        strcmp(t, task) == 0) {
      dm_error_set(err, DM_ERR_STAGE, NULL,
                   "start-task %s with --remove-meta or --start-time: worker %s still has a "
                   "subtask of task %s on source %s (the task runs, or its stop has not reached "
                   "the worker yet), and the meta of a task that runs is never dropped: stop-task "
                   "it, wait until query-status no longer shows it, then start it again",
                   task, w, task, src);
      rc = -1;
    }
  }
  dmh_etcd_result_free(&r);
  return rc;
}

/* The leader key's compare (token) as the first of k->cmps. */
static int ms_fence(master_ctl *x, int64_t token, master_start_keys *k, dm_error *err) {
  if (master_key(k->leader_key, sizeof k->leader_key, x->m, DMH_KEY_LEADER, NULL, NULL, NULL, err) <
      0)
    return -1;
  k->cmps[k->n_cmps++] = (dmh_etcd_cmp){.key = DMH_ETCD_S(k->leader_key),
                                        .target = DMH_ETCD_CMP_CREATE,
                                        .result = DMH_ETCD_EQUAL,
                                        .number = token};
  return 0;
}

/* The options `st` (its binding filled here) of `task` for `source`'s worker: a put into k->ops
 * and a compare of the binding into k->cmps. `what` names the command for the refusals. */
static int ms_source_opts(master_ctl *x, const char *what, const char *task, const char *src,
                          const master_snapshot *s, dmh_cluster_start *st, master_start_keys *k,
                          dm_error *err) {
  size_t i = k->n_ops;
  const char *worker = master_ctl_worker_of(s, src);
  if (i >= MASTER_START_MAX) {
    dm_error_set(err, DM_ERR_ETCD_LIMIT, NULL,
                 "%s %s: remove-meta and --start-time are handed to at most %d sources' workers in "
                 "one txn",
                 what, task, MASTER_START_MAX);
    return -1;
  }
  if (!worker[0]) {
    dm_error_set(err, DM_ERR_NOT_FOUND, NULL,
                 "%s %s: source %s is bound to no worker, and remove-meta or --start-time is "
                 "handed to the worker of the source; try again when a worker serves it "
                 "(list-member --worker)",
                 what, task, src);
    return -1;
  }
  if (ms_binding_rev(x, worker, k->bound_keys[i], &st->binding, err) < 0)
    return -1;
  if (st->binding == 0) {
    dm_error_set(err, DM_ERR_EXISTS, NULL,
                 "%s %s: the binding of source %s to worker %s changed meanwhile; try again", what,
                 task, src, worker);
    return -1;
  }
  if (master_key(k->keys[i], DMH_CLUSTER_KEY_MAX, x->m, DMH_KEY_START, task, src, NULL, err) < 0)
    return -1;
  if (!(k->values[i] = dmh_cluster_start_json(st))) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory writing %s's options", what);
    return -1;
  }
  k->cmps[k->n_cmps++] = (dmh_etcd_cmp){.key = DMH_ETCD_S(k->bound_keys[i]),
                                        .target = DMH_ETCD_CMP_CREATE,
                                        .result = DMH_ETCD_EQUAL,
                                        .number = st->binding};
  k->ops[k->n_ops++] = (dmh_etcd_op){
      .kind = DMH_ETCD_PUT, .key = DMH_ETCD_S(k->keys[i]), .value = DMH_ETCD_S(k->values[i])};
  return 0;
}

int master_start_prepare(master_ctl *x, const dmh_task_config *tc, const master_snapshot *s,
                         const master_start_opts *o, int64_t token, master_start_keys *k,
                         json_object *resp, dm_error *err) {
  memset(k, 0, sizeof *k);
  if (!o->remove_meta && !o->start_time)
    return 0;
  if (ms_no_subtask(x, tc->name, err) < 0 || ms_fence(x, token, k, err) < 0)
    return -1;
  for (int i = 0; i < tc->n_instances; i++) {
    const char *src = tc->instances[i].source_id;
    dmh_cluster_start st = {.remove_meta = true};
    if (o->start_time) {
      dmh_source_config *sc = NULL;
      int frc = master_ctl_source_load(x, tc->name, src, &sc, err) < 0 ||
                        dmh_registry_start_time_find(tc, src, &sc->from.ep, "start-task",
                                                     o->start_time, &st.start, resp, err) < 0
                    ? -1
                    : 0;
      dmh_source_config_free(sc);
      if (frc < 0)
        return -1;
      st.has_start = true;
    }
    if (ms_source_opts(x, "start-task", tc->name, src, s, &st, k, err) < 0)
      return -1;
  }
  return 0;
}

int master_stop_prepare(master_ctl *x, const char *task, const char *const *sources, size_t n,
                        const master_snapshot *s, int64_t token, master_start_keys *k,
                        dm_error *err) {
  memset(k, 0, sizeof *k);
  if (ms_fence(x, token, k, err) < 0)
    return -1;
  for (size_t i = 0; i < n; i++) {
    dmh_cluster_start st = {.remove_meta = true, .at_stop = true};
    if (ms_source_opts(x, "stop-task", task, sources[i], s, &st, k, err) < 0)
      return -1;
  }
  return 0;
}

/* ---- resume-task's options: DM's OpenAPI start of a task created stopped ---- */

int master_resume_opts_parse(const dmh_control_cmd *cmd, json_object *args, master_resume_opts *o,
                             dm_error *err) {
  memset(o, 0, sizeof *o);
  return dmh_control_arg_bool(cmd, args, "remove-meta", &o->remove_meta, err) < 0 ||
                 dmh_control_arg_string(cmd, args, "start-time", false, &o->start_time, err) < 0 ||
                 dmh_control_arg_duration(cmd, args, "safe-mode-duration",
                                          "start's safe_mode_time_duration",
                                          sizeof((dmh_cluster_start *)0)->safe_mode_duration,
                                          &o->safe_mode_duration, err) < 0
             ? -1
             : 0;
}

bool master_resume_opts_any(const master_resume_opts *o) {
  return o->remove_meta || o->start_time || o->safe_mode_duration;
}

/* The refusal of the options on a subtask that is no longer the stopped one of its creation. */
static int ms_has_run(const char *task, const char *src, const dmh_etcd_kv *kv,
                      const master_resume_opts *o, dm_error *err) {
  const char *todo =
      o->remove_meta || o->start_time
          ? "its checkpoints are what it resumes from: stop-task it with its meta (DELETE "
            "/api/v1/tasks/NAME?force=true, keep_meta false; `dmctl stop-task NAME` then "
            "start-task --remove-meta), create it again stopped (start-task with stage Stopped; "
            "DM's POST /api/v1/tasks) and start it with the options"
          : "a resume goes on from the checkpoint committed with its last batch (docs/sync.md); "
            "to apply changes in safe mode, pause it, set the sync's safe-mode (PUT "
            "/api/v1/tasks/NAME; update-task) and start it";
  dm_error_set(err, DM_ERR_STAGE, NULL,
               "resume-task %s with %s (DM's start's remove_meta, start_time, "
               "safe_mode_time_duration): its subtask on source %s is expected %.*s and has been "
               "started or paused since the task was created, and the options are taken on the "
               "first start of a task created stopped only; %s",
               task,
               o->remove_meta  ? "remove-meta"
               : o->start_time ? "start-time"
                               : "safe-mode-duration",
               src, (int)kv->value_len, kv->value, todo);
  return -1;
}

/* The task's stored file (its key's text), for the options' checks. */
static int ms_task_load(master_ctl *x, const char *task, dmh_task_config **tc, dm_error *err) {
  char key[DMH_CLUSTER_KEY_MAX];
  dmh_etcd_result r = {0};
  *tc = NULL;
  if (master_key(key, sizeof key, x->m, DMH_KEY_TASK, task, NULL, NULL, err) < 0 ||
      dmh_etcd_range(x->c, DMH_ETCD_S(key), 0, 1, 0, &r, err) < 0)
    return -1;
  int rc = -1;
  if (r.n_kvs == 0)
    dm_error_set(err, DM_ERR_NOT_FOUND, NULL, "no task %s in the cluster", task);
  else
    rc = master_ctl_stored_load(x, &r.kvs[0], task, true, tc, NULL, err);
  dmh_etcd_result_free(&r);
  return rc;
}

int master_resume_prepare(master_ctl *x, const char *task, const dmh_etcd_result *stages,
                          const char *const *only, size_t n_only, const master_snapshot *s,
                          const master_resume_opts *o, int64_t token, master_start_keys *k,
                          json_object *resp, dm_error *err) {
  memset(k, 0, sizeof *k);
  dmh_task_config *tc = NULL;
  /* every subtask checked before a position is looked for: a refusal costs no source query */
  for (size_t i = 0; i < stages->n_kvs; i++) {
    const dmh_etcd_kv *kv = &stages->kvs[i];
    char t[DMH_CLUSTER_NAME_MAX], src[DMH_CLUSTER_NAME_MAX];
    dmh_cluster_stage st;
    if (dmh_cluster_key_parse(kv->key, kv->key_len, x->m->prefix, DMH_KEY_STAGE, t, src, NULL) <
            0 ||
        !master_ctl_in(only, n_only, src))
      continue;
    /* version 1: written once, by the txn that created the task stopped (start-task's stage
     * Stopped stores Paused); a resume, a pause or a source's disable wrote it again since */
    if (dmh_cluster_stage_parse(kv->value, kv->value_len, &st) < 0 || st != DMH_CLUSTER_PAUSED ||
        kv->version != 1)
      return ms_has_run(task, src, kv, o, err);
  }
  if (ms_task_load(x, task, &tc, err) < 0)
    return -1;
  int rc = -1;
  if (o->safe_mode_duration && dmh_task_slot_of(tc, "sync") < 0) {
    dm_error_set(err, DM_ERR_CONTROL_REQUEST, NULL,
                 "resume-task %s safe-mode-duration (DM's start's safe_mode_time_duration): the "
                 "task is task-mode %s, which has no sync unit; the option sets the sync's safe "
                 "mode: leave it out",
                 task, dmh_task_mode_name(tc->mode));
    goto out;
  }
  if (ms_fence(x, token, k, err) < 0)
    goto out;
  for (size_t i = 0; i < stages->n_kvs; i++) {
    const dmh_etcd_kv *kv = &stages->kvs[i];
    char t[DMH_CLUSTER_NAME_MAX], src[DMH_CLUSTER_NAME_MAX];
    if (dmh_cluster_key_parse(kv->key, kv->key_len, x->m->prefix, DMH_KEY_STAGE, t, src, NULL) <
            0 ||
        !master_ctl_in(only, n_only, src))
      continue;
    dmh_cluster_start st = {.remove_meta = o->remove_meta || o->start_time, .at_resume = true};
    if (o->safe_mode_duration)
      dm_strlcpy(st.safe_mode_duration, o->safe_mode_duration, sizeof st.safe_mode_duration);
    if (o->start_time) {
      dmh_source_config *sc = NULL;
      int frc = master_ctl_source_load(x, task, src, &sc, err) < 0 ||
                        dmh_registry_start_time_find(tc, src, &sc->from.ep, "resume-task",
                                                     o->start_time, &st.start, resp, err) < 0
                    ? -1
                    : 0;
      dmh_source_config_free(sc);
      if (frc < 0)
        goto out;
      st.has_start = true;
    }
    if (ms_source_opts(x, "resume-task", task, src, s, &st, k, err) < 0)
      goto out;
    /* the stage key as it was read: still the Paused of the creation when the txn runs */
    k->cmps[k->n_cmps++] = (dmh_etcd_cmp){.key = {kv->key, kv->key_len},
                                          .target = DMH_ETCD_CMP_MOD,
                                          .result = DMH_ETCD_EQUAL,
                                          .number = kv->mod_revision};
  }
  rc = 0;
out:
  dmh_task_config_free(tc);
  return rc;
}

void master_start_keys_free(master_start_keys *k) {
  for (size_t i = 0; i < MASTER_START_MAX; i++)
    free(k->values[i]);
  memset(k, 0, sizeof *k);
}
