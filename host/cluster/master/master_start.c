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
 * each worker drops the meta after it stopped the subtask.
 */
#include "master_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmhost/sdk.h"
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

void master_start_keys_free(master_start_keys *k) {
  for (size_t i = 0; i < MASTER_START_MAX; i++)
    free(k->values[i]);
  memset(k, 0, sizeof *k);
}
