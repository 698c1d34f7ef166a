/*
 * The master's query-status (master_internal.h, master_ctl_query_status): every task's stage per
 * source, or one task's DM status, from etcd's expected stages and the status each worker puts.
 * Split from master_control.c, whose table binds it.
 */
#include "master_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control.h"
#include "dmhost/sdk.h"

/* The subtask status objects of (task, source) reported by any worker, each with its "worker", into
 * `into`. A worker puts its query-status entry of the source: {sourceStatus {relayStatus},
 * subTaskStatus [subtask...]}; its subtasks of `task` are taken out of it (DM's shape: the master's
 * own entry per source holds them) and its relayStatus, when `relay` is given, goes to *relay (the
 * first one found; the caller owns it). An object without subTaskStatus is taken as the subtask. */
static void ctl_status_of(const dmh_etcd_result *st, const dmh_master *m, const char *task,
                          const char *source, json_object *into, json_object **relay) {
  for (size_t i = 0; i < st->n_kvs; i++) {
    char w[DMH_CLUSTER_NAME_MAX], t[DMH_CLUSTER_NAME_MAX], s[DMH_CLUSTER_NAME_MAX];
    if (dmh_cluster_key_parse(st->kvs[i].key, st->kvs[i].key_len, m->prefix, DMH_KEY_STATUS, w, t,
                              s) < 0 ||
        strcmp(t, task) != 0 || strcmp(s, source) != 0)
      continue;
    json_object *o = json_tokener_parse(st->kvs[i].value), *subs = NULL, *ss = NULL, *rs = NULL;
    if (!o || !json_object_is_type(o, json_type_object)) {
      json_object_put(o);
      o = json_object_new_object();
      json_object_object_add(o, "msg", json_object_new_string("the worker's status is not JSON"));
    }
    if (relay && !*relay && json_object_object_get_ex(o, "sourceStatus", &ss) &&
        json_object_object_get_ex(ss, "relayStatus", &rs))
      *relay = json_object_get(rs);
    if (!json_object_object_get_ex(o, "subTaskStatus", &subs) ||
        !json_object_is_type(subs, json_type_array)) {
      json_object_object_add(o, "worker", json_object_new_string(w));
      json_object_array_add(into, o);
      continue;
    }
    for (size_t k = 0; k < json_object_array_length(subs); k++) {
      json_object *sub = json_object_array_get_idx(subs, k), *v = NULL;
      if (json_object_object_get_ex(sub, "name", &v) &&
          strcmp(json_object_get_string(v), task) != 0)
        continue;
      json_object_object_add(sub, "worker", json_object_new_string(w));
      json_object_array_add(into, json_object_get(sub));
    }
    json_object_put(o);
  }
}

/* DM's summary of a task from its subtasks' reported stages. */
static const char *ctl_task_status(json_object *subs, const char *expected) {
  const char *common = NULL;
  bool mixed = false, paused = false, stopped = false;
  size_t n = json_object_array_length(subs);
  for (size_t i = 0; i < n; i++) {
    json_object *o = json_object_array_get_idx(subs, i), *v = NULL, *errs = NULL;
    if (json_object_object_get_ex(o, "result", &v) &&
        json_object_object_get_ex(v, "errors", &errs) && json_object_array_length(errs) > 0)
      return "Error - Some error occurred in subtask. Please run `query-status NAME` to get more "
             "details.";
    const char *st = json_object_object_get_ex(o, "stage", &v) ? json_object_get_string(v) : "";
    paused |= strcmp(st, "Paused") == 0;
    stopped |= strcmp(st, "Stopped") == 0;
    if (common && strcmp(common, st) != 0)
      mixed = true;
    common = st;
  }
  if (paused)
    return "Paused";
  if (stopped)
    return "Stopped";
  if (!common)
    return expected; /* nothing reported yet */
  return mixed ? "Running" : common;
}

int master_ctl_query_status(void *ud, const dmh_control_cmd *cmd, json_object *args,
                            json_object *resp, dm_error *err) {
  master_ctl *x = ud;
  const char *name, *only[DMH_CONTROL_MAX_LIST];
  size_t n_only;
  if (dmh_control_arg_string(cmd, args, "name", false, &name, err) < 0 ||
      dmh_control_arg_list(cmd, args, "source", only, DMH_CONTROL_MAX_LIST, &n_only, err) < 0)
    return -1;
  dmh_etcd_result stages = {0}, st = {0};
  master_snapshot s = {0};
  int rc = -1;
  if (master_range_kind(x->c, x->m, DMH_KEY_STAGE, 0, &stages, err) < 0 ||
      master_range_kind(x->c, x->m, DMH_KEY_STATUS, 0, &st, err) < 0 ||
      master_snapshot_read(x->c, x->m, &s, err) < 0)
    goto out;
  json_object *tasks = json_object_new_array(), *sources = json_object_new_array();
  json_object *cur = NULL, *cur_sources = NULL, *cur_subs = NULL;
  char cur_task[DMH_CLUSTER_NAME_MAX] = "";
  const char *cur_expected = "";
  /* stage keys come sorted: a task's sources are together */
  for (size_t i = 0; i <= stages.n_kvs; i++) {
    char t[DMH_CLUSTER_NAME_MAX] = "", src[DMH_CLUSTER_NAME_MAX] = "";
    bool ok =
        i < stages.n_kvs && dmh_cluster_key_parse(stages.kvs[i].key, stages.kvs[i].key_len,
                                                  x->m->prefix, DMH_KEY_STAGE, t, src, NULL) == 0;
    if (cur && (i == stages.n_kvs || (ok && strcmp(t, cur_task) != 0))) {
      json_object_object_add(cur, "taskStatus",
                             json_object_new_string(ctl_task_status(cur_subs, cur_expected)));
      json_object_object_add(cur, "sources", cur_sources);
      json_object_array_add(tasks, cur);
      json_object_put(cur_subs);
      cur = NULL;
    }
    if (!ok || (name && strcmp(t, name) != 0) || !master_ctl_in(only, n_only, src))
      continue;
    const char *expected = stages.kvs[i].value;
    const char *worker = master_ctl_worker_of(&s, src);
    json_object *subs = json_object_new_array(), *relay = NULL;
    ctl_status_of(&st, x->m, t, src, subs, name ? &relay : NULL);
    if (name) { /* DM's detailed status */
      json_object *e = dmh_control_response_new();
      if (json_object_array_length(subs) == 0)
        json_object_object_add(e, "msg",
                               json_object_new_string(worker[0]
                                                          ? "the worker has not reported the "
                                                            "subtask yet"
                                                          : "no worker is bound to the source"));
      json_object *ss = json_object_new_object();
      json_object_object_add(ss, "source", json_object_new_string(src));
      json_object_object_add(ss, "worker", json_object_new_string(worker));
      if (relay)
        json_object_object_add(ss, "relayStatus", relay);
      json_object_object_add(e, "sourceStatus", ss);
      json_object_object_add(e, "expectedStage", json_object_new_string(expected));
      json_object_object_add(e, "subTaskStatus", subs);
      json_object_array_add(sources, e);
      continue;
    }
    if (!cur) {
      cur = json_object_new_object();
      cur_sources = json_object_new_array();
      cur_subs = json_object_new_array();
      dm_strlcpy(cur_task, t, sizeof cur_task);
      cur_expected = expected;
      json_object_object_add(cur, "taskName", json_object_new_string(t));
      json_object_object_add(cur, "expectedStage", json_object_new_string(expected));
    }
    json_object *e = json_object_new_object();
    json_object_object_add(e, "source", json_object_new_string(src));
    json_object_object_add(e, "worker", json_object_new_string(worker));
    json_object *first = json_object_array_length(subs) ? json_object_array_get_idx(subs, 0) : NULL;
    json_object *v = NULL;
    json_object_object_add(
        e, "stage",
        first && json_object_object_get_ex(first, "stage", &v) ? json_object_get(v) : NULL);
    json_object_array_add(cur_sources, e);
    for (size_t k = 0; k < json_object_array_length(subs); k++)
      json_object_array_add(cur_subs, json_object_get(json_object_array_get_idx(subs, k)));
    json_object_put(subs);
  }
  if (name) {
    json_object_put(tasks);
    json_object_object_add(resp, "sources", sources);
    if (json_object_array_length(sources) == 0) {
      dm_error_set(err, DM_ERR_NOT_FOUND, NULL, "no task %s in the cluster", name);
      goto out;
    }
  } else {
    json_object_put(sources);
    json_object_object_add(resp, "tasks", tasks);
  }
  rc = 0;
out:
  master_snapshot_free(&s);
  dmh_etcd_result_free(&stages);
  dmh_etcd_result_free(&st);
  return rc;
}
