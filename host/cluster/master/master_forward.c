/*
 * The master's commands that act on a worker's subtasks (purge-relay, binlog, swap-unit;
 * update-task's own steps are master_update.c's), as DM's master forwards them to its workers: each goes to the
 * worker of the source, at the address it registered (its --listen), through the master's forwarder
 * (master_main.c's door_forward, with the master's TLS files when it has them). The command table
 * is master_control.c's. And what only the leader does (transfer-source, shard-ddl-lock unlock),
 * forwarded by a follower to the leader's address as dmctl sent it.
 */
#include "master_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control.h"
#include "dmhost/sdk.h"

/* ---- the commands of a source's worker: forwarded to it ---- */

/* The sources whose expected stage names task `task` (at most `max` into out); their count. */
int master_ctl_sources_of(master_ctl *x, const char *task, char (*out)[DMH_CLUSTER_NAME_MAX],
                          int max, dm_error *err) {
  dmh_etcd_result r = {0};
  if (master_range_kind(x->c, x->m, DMH_KEY_STAGE, 0, &r, err) < 0)
    return -1;
  int n = 0;
  for (size_t i = 0; i < r.n_kvs; i++) {
    char t[DMH_CLUSTER_NAME_MAX], src[DMH_CLUSTER_NAME_MAX];
    if (dmh_cluster_key_parse(r.kvs[i].key, r.kvs[i].key_len, x->m->prefix, DMH_KEY_STAGE, t, src,
                              NULL) == 0 &&
        strcmp(t, task) == 0 && n < max)
      memcpy(out[n++], src, sizeof out[0]);
  }
  dmh_etcd_result_free(&r);
  return n;
}

/* The online worker serving `source` in the snapshot: bound to it, or, when `relay`, keeping its
 * relay (a relay left behind by a transfer). -1 with DM_ERR_NOT_FOUND when none. */
int master_ctl_worker_index(const master_snapshot *s, const char *source, bool relay,
                            dm_error *err) {
  for (size_t i = 0; i < s->n_workers; i++)
    if (s->workers[i].online && strcmp(s->workers[i].bound, source) == 0)
      return (int)i;
  for (size_t i = 0; relay && i < s->n_workers; i++)
    if (s->workers[i].online && strcmp(s->info[i].relay, source) == 0)
      return (int)i;
  dm_error_set(err, DM_ERR_NOT_FOUND, NULL, "no online worker %s source %s now",
               relay ? "serves or keeps the relay of" : "is bound to", source);
  return -1;
}

json_object *master_forward_to(dmh_master *m, const char *addr, const dmh_control_cmd *cmd,
                               json_object *args, dm_error *err) {
  json_object *req = json_object_new_object();
  json_object_object_add(req, "cmd", json_object_new_string(cmd->name));
  json_object_object_add(req, "args", json_object_get(args));
  /* a minute, as the commands a worker answers at once or after a pause; verify runs as long as
   * its tables take (its connections' own timeouts bound it) */
  int timeout_ms = strcmp(cmd->name, "verify") == 0 ? 0 : 60000;
  json_object *answer = m->forward(m->forward_ud, addr, req, timeout_ms, err);
  json_object_put(req);
  return answer;
}

int master_forward_answer(json_object *answer, json_object *resp) {
  if (!answer)
    return -1;
  json_object_object_foreach(answer, k, v) json_object_object_add(resp, k, json_object_get(v));
  json_object_put(answer);
  return 0;
}

/* The request as it came, sent to worker i's control listener (its --listen): its answer, or NULL
 * with *err. */
json_object *master_ctl_forward_worker(master_ctl *x, const master_snapshot *s, size_t i,
                                       const dmh_control_cmd *cmd, json_object *args,
                                       dm_error *err) {
  const char *w = s->workers[i].name, *addr = s->info[i].addr;
  if (!strchr(addr, ':')) {
    dm_error_set(err, DM_ERR_NOT_FOUND, NULL,
                 "%s: worker %s registered no control address (\"%s\"): start it with --listen "
                 "HOST:PORT for the masters to forward %s to it",
                 cmd->name, w, addr, cmd->name);
    return NULL;
  }
  if (!x->m->forward) {
    dm_error_set(err, DM_ERR_CLUSTER_NOT_LEADER, NULL,
                 "%s: this master forwards no request (in-process use): send it to worker %s at %s",
                 cmd->name, w, addr);
    return NULL;
  }
  return master_forward_to(x->m, addr, cmd, args, err);
}

/* purge-relay -s SOURCE -f FILE: at the worker keeping the source's relay files; binlog TASK
 * [-s SOURCE] ..., binlog-schema ... -s SOURCE TASK ... and task-tables TASK -s SOURCE: at the
 * worker bound to the source (the task's only one when not named); source-schemas -s SOURCE: at
 * the source's worker. The worker's answer is the answer. */
int master_ctl_worker_cmd(void *ud, const dmh_control_cmd *cmd, json_object *args,
                          json_object *resp, dm_error *err) {
  master_ctl *x = ud;
  bool purge = strcmp(cmd->name, "purge-relay") == 0;
  /* source-schemas -s SOURCE: the source's worker; task-tables TASK -s SOURCE as binlog */
  bool by_source = purge || strcmp(cmd->name, "source-schemas") == 0;
  const char *source = NULL, *task = NULL;
  char sources[2][DMH_CLUSTER_NAME_MAX];
  if (dmh_control_arg_string(cmd, args, "source", by_source, &source, err) < 0)
    return -1;
  if (!by_source) {
    if (dmh_control_arg_string(cmd, args, "name", true, &task, err) < 0)
      return -1;
    int n = master_ctl_sources_of(x, task, sources, 2, err);
    if (n < 0)
      return -1;
    if (n == 0) {
      dm_error_set(err, DM_ERR_NOT_FOUND, NULL, "%s: no task %s in the cluster", cmd->name, task);
      return -1;
    }
    if (!source && n > 1) {
      dm_error_set(err, DM_ERR_CONTROL_REQUEST, NULL,
                   "%s: task %s reads several sources: name one with -s SOURCE", cmd->name, task);
      return -1;
    }
    if (!source)
      source = sources[0];
  }
  master_snapshot s;
  if (master_snapshot_read(x->c, x->m, &s, err) < 0)
    return -1;
  int i = master_ctl_worker_index(&s, source, purge, err);
  json_object *answer = i < 0 ? NULL : master_ctl_forward_worker(x, &s, (size_t)i, cmd, args, err);
  master_snapshot_free(&s);
  return master_forward_answer(answer, resp);
}

/* swap-unit TASK --unit KIND --path NEW.so: at every worker running a subtask of the task (the
 * path names the file on the workers' machines). Per worker its answer in "workers"; the first
 * refusal is the answer's error. */
int master_ctl_swap_unit(void *ud, const dmh_control_cmd *cmd, json_object *args, json_object *resp,
                         dm_error *err) {
  master_ctl *x = ud;
  const char *task;
  if (dmh_control_arg_string(cmd, args, "name", true, &task, err) < 0)
    return -1;
  char sources[64][DMH_CLUSTER_NAME_MAX];
  int n = master_ctl_sources_of(x, task, sources, 64, err);
  if (n < 0)
    return -1;
  if (n == 0) {
    dm_error_set(err, DM_ERR_NOT_FOUND, NULL, "swap-unit: no task %s in the cluster", task);
    return -1;
  }
  master_snapshot s;
  if (master_snapshot_read(x->c, x->m, &s, err) < 0)
    return -1;
  json_object *list = json_object_new_array();
  json_object *failed = NULL;
  int rc = 0;
  for (int k = 0; k < n && rc == 0; k++) {
    int i = master_ctl_worker_index(&s, sources[k], false, err);
    json_object *answer =
        i < 0 ? NULL : master_ctl_forward_worker(x, &s, (size_t)i, cmd, args, err);
    if (!answer) {
      rc = -1;
      break;
    }
    json_object *e = json_object_new_object();
    json_object_object_add(e, "worker", json_object_new_string(s.workers[i].name));
    json_object_object_add(e, "source", json_object_new_string(sources[k]));
    json_object_object_add(e, "answer", answer);
    json_object_array_add(list, e);
    json_object *ok = NULL;
    if (!failed && json_object_object_get_ex(answer, "result", &ok) && !json_object_get_boolean(ok))
      failed = answer;
  }
  master_snapshot_free(&s);
  if (rc < 0) {
    json_object_put(list);
    return -1;
  }
  json_object_object_add(resp, "workers", list);
  if (failed) {
    json_object *v = NULL;
    json_object_object_add(resp, "result", json_object_new_boolean(0));
    if (json_object_object_get_ex(failed, "msg", &v))
      json_object_object_add(resp, "msg", json_object_get(v));
    if (json_object_object_get_ex(failed, "error", &v))
      json_object_object_add(resp, "error", json_object_get(v));
  }
  return 0;
}

/* query-lag NAME: not in a cluster. The history is kept by the metrics registry of the process
 * whose sync publishes the lag (metrics.h), a worker's; a worker answers only what a master
 * forwards to it, and merging several workers' rings is not done yet: refused, not half-served. */
int master_ctl_query_lag(void *ud, const dmh_control_cmd *cmd, json_object *args, json_object *resp,
                         dm_error *err) {
  (void)ud, (void)args, (void)resp;
  dm_error_set(err, DM_ERR_LAG_CLUSTER, NULL,
               "%s (GET /api/v1/dmhost/tasks/{task-name}/lag): not served by `dmhost master`: "
               "the lag history lives in the process running the sync (`dmhost serve`), and a "
               "cluster's workers do not keep it; read dm_syncer_replication_lag_gauge from the "
               "workers' GET /metrics (Prometheus) instead",
               cmd->name);
  return -1;
}

/* ---- to the leader ---- */

int master_ctl_to_leader(master_ctl *x, const dmh_control_cmd *cmd, json_object *args,
                         json_object *resp, dm_error *err) {
  dmh_master *m = x->m;
  if (dmh_master_token(m) != 0)
    return 0;
  /* a follower: the leader decides */
  char leader[DMH_CLUSTER_NAME_MAX], addr[DMH_CLUSTER_NAME_MAX];
  int64_t t;
  if (master_leader(x->c, m, leader, addr, &t, err) < 0)
    return -1;
  /* not to itself: a leader just deposed may still be named by the key */
  if (leader[0] && addr[0] && m->forward && strcmp(leader, m->name) != 0)
    return master_forward_answer(master_forward_to(m, addr, cmd, args, err), resp) < 0 ? -1 : 1;
  dm_error_set(err, DM_ERR_CLUSTER_NOT_LEADER, NULL,
               leader[0] ? "%s: master %s is not the leader; the leader is %s at %s: send the "
                           "command there"
                         : "%s: master %s is not the leader and no leader is elected now%s%s: "
                           "retry in a few seconds",
               cmd->name, m->name, leader, addr);
  return -1;
}

int master_ctl_leader_token(master_ctl *x, const dmh_control_cmd *cmd, json_object *args,
                            json_object *resp, int64_t *token, dm_error *err) {
  *token = dmh_master_token(x->m);
  int fwd = master_ctl_to_leader(x, cmd, args, resp, err);
  if (fwd != 0)
    return fwd;
  if (*token == 0) {
    dm_error_set(err, DM_ERR_CLUSTER_NOT_LEADER, NULL,
                 "%s: master %s stopped leading; retry in a few seconds", cmd->name, x->m->name);
    return -1;
  }
  return 0;
}
