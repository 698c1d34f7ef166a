/* list-member (master.h): DM's answer of masters (the leader marked) and workers (their stage
 * offline/free/bound/relay and source), read from etcd by any master; offline-member: DM's removal
 * of a worker that is gone, written by the leader. */
#include "master_internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "control.h"
#include "dmhost/sdk.h"
#include "log.h"

/* Whether `name` is one of names[n] (n == 0: every name is). */
static bool members_named(const char *const *names, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(names[i], name) == 0)
      return true;
  return n == 0;
}

static json_object *members_masters(dmh_master *m, dmh_etcd *c, const char *leader,
                                    const char *const *names, size_t n_names, dm_error *err) {
  dmh_etcd_result r = {0};
  if (master_range_kind(c, m, DMH_KEY_MASTER, 0, &r, err) < 0)
    return NULL;
  json_object *list = json_object_new_array();
  for (size_t i = 0; i < r.n_kvs; i++) {
    dmh_cluster_worker_info info;
    dm_error perr;
    char name[DMH_CLUSTER_NAME_MAX];
    if (dmh_cluster_key_parse(r.kvs[i].key, r.kvs[i].key_len, m->prefix, DMH_KEY_MASTER, name, NULL,
                              NULL) < 0 ||
        !members_named(names, n_names, name))
      continue;
    if (dmh_cluster_master_parse(r.kvs[i].value, r.kvs[i].value_len, &info, &perr) < 0)
      memset(&info, 0, sizeof info);
    json_object *e = json_object_new_object();
    json_object_object_add(e, "name", json_object_new_string(name));
    json_object_object_add(e, "addr", json_object_new_string(info.addr));
    json_object_object_add(e, "alive", json_object_new_boolean(1)); /* its lease lives */
    json_object_object_add(e, "leader", json_object_new_boolean(strcmp(name, leader) == 0));
    json_object_array_add(list, e);
  }
  dmh_etcd_result_free(&r);
  return list;
}

int master_list_member(dmh_master *m, dmh_etcd *c, bool masters, bool workers, bool leader_only,
                       const char *const *names, size_t n_names, json_object *resp, dm_error *err) {
  json_object *members = json_object_new_array();
  json_object_object_add(resp, "members", members);
  char leader[DMH_CLUSTER_NAME_MAX], addr[DMH_CLUSTER_NAME_MAX];
  int64_t token;
  if (master_leader(c, m, leader, addr, &token, err) < 0)
    return -1;
  if (masters || leader_only) {
    json_object *l = json_object_new_object(), *g = json_object_new_object();
    json_object_object_add(l, "msg", json_object_new_string(leader[0] ? "" : "no leader elected"));
    json_object_object_add(l, "name", json_object_new_string(leader));
    json_object_object_add(l, "addr", json_object_new_string(addr));
    json_object_object_add(l, "token", json_object_new_int64(token));
    json_object_object_add(g, "leader", l);
    json_object_array_add(members, g);
  }
  if (masters && !leader_only) {
    json_object *list = members_masters(m, c, leader, names, n_names, err);
    if (!list)
      return -1;
    json_object *ms = json_object_new_object(), *gm = json_object_new_object();
    json_object_object_add(ms, "msg", json_object_new_string(""));
    json_object_object_add(ms, "masters", list);
    json_object_object_add(gm, "master", ms);
    json_object_array_add(members, gm);
  }
  if (workers && !leader_only) {
    master_snapshot s;
    if (master_snapshot_read(c, m, &s, err) < 0)
      return -1;
    json_object *list = json_object_new_array();
    for (size_t i = 0; i < s.n_workers; i++) {
      const dmh_sched_worker *w = &s.workers[i];
      if (!members_named(names, n_names, w->name))
        continue;
      json_object *e = json_object_new_object();
      json_object_object_add(e, "name", json_object_new_string(w->name));
      json_object_object_add(e, "addr", json_object_new_string(s.info[i].addr));
      json_object_object_add(e, "stage",
                             json_object_new_string(dmh_worker_stage_name(dmh_sched_stage(w))));
      json_object_object_add(e, "source",
                             json_object_new_string(w->bound[0] ? w->bound : w->relay));
      json_object_array_add(list, e);
    }
    master_snapshot_free(&s);
    json_object *ws = json_object_new_object(), *gw = json_object_new_object();
    json_object_object_add(ws, "msg", json_object_new_string(""));
    json_object_object_add(ws, "workers", list);
    json_object_object_add(gw, "worker", ws);
    json_object_array_add(members, gw);
  }
  return 0;
}

/* ---- offline-member ---- */

/* Whether the leader shows `name` in dm_master_worker_state (an offline worker stays there at 0
 * until it is removed); with `drop`, it no longer does. Under sched_lock. */
static bool members_shown(dmh_master *m, const char *name, bool drop) {
  for (size_t i = 0; i < m->n_metrics_workers; i++) {
    if (strcmp(m->metrics_workers[i], name) != 0)
      continue;
    if (drop) {
      free(m->metrics_workers[i]);
      m->metrics_workers[i] = m->metrics_workers[--m->n_metrics_workers];
    }
    return true;
  }
  return false;
}

int master_offline_worker(dmh_master *m, dmh_etcd *c, int64_t token, const char *name,
                          dm_error *err) {
  char lkey[DMH_CLUSTER_KEY_MAX], wkey[DMH_CLUSTER_KEY_MAX], bkey[DMH_CLUSTER_KEY_MAX],
      rkey[DMH_CLUSTER_KEY_MAX];
  if (master_key(lkey, sizeof lkey, m, DMH_KEY_LEADER, NULL, NULL, NULL, err) < 0 ||
      master_key(wkey, sizeof wkey, m, DMH_KEY_WORKER, name, NULL, NULL, err) < 0 ||
      master_key(bkey, sizeof bkey, m, DMH_KEY_BOUND, name, NULL, NULL, err) < 0 ||
      master_key(rkey, sizeof rkey, m, DMH_KEY_RELAY, name, NULL, NULL, err) < 0)
    return -1;
  /* One txn: the leadership still this token's (a deposed leader writes nothing) and the worker
   * not registered, checked by etcd at the write: a worker registering after any read of ours
   * keeps its binding and relay request. Serialized with the scheduler's rounds (sched_lock) so
   * that the series list below is never changed under a round. */
  dmh_etcd_cmp cmps[2] = {
      {.key = DMH_ETCD_S(lkey),
       .target = DMH_ETCD_CMP_CREATE,
       .result = DMH_ETCD_EQUAL,
       .number = token},
      {.key = DMH_ETCD_S(wkey),
       .target = DMH_ETCD_CMP_CREATE,
       .result = DMH_ETCD_EQUAL,
       .number = 0},
  };
  dmh_etcd_op ops[2] = {{.kind = DMH_ETCD_DELETE, .key = DMH_ETCD_S(bkey)},
                        {.kind = DMH_ETCD_DELETE, .key = DMH_ETCD_S(rkey)}};
  dmh_etcd_op why[2] = {{.kind = DMH_ETCD_RANGE, .key = DMH_ETCD_S(lkey)},
                        {.kind = DMH_ETCD_RANGE, .key = DMH_ETCD_S(wkey)}};
  dmh_etcd_txn_result tr = {0};
  pthread_mutex_lock(&m->sched_lock);
  int rc = dmh_etcd_txn(c, cmps, 2, ops, 2, why, 2, &tr, err);
  if (rc == 0 && !tr.succeeded) {
    bool online = tr.n_results == 2 && tr.results[1].n_kvs > 0;
    int64_t now =
        tr.n_results == 2 && tr.results[0].n_kvs > 0 ? tr.results[0].kvs[0].create_revision : 0;
    if (online)
      dm_error_set(err, DM_ERR_CLUSTER_MEMBER_ONLINE, NULL,
                   "dm-worker with name %s is still online (its lease lives): stop it first", name);
    else
      dm_error_set(err, DM_ERR_CLUSTER_FENCED, NULL,
                   "master %s: offline-member %s refused: it led with token %lld, the leader "
                   "key's create_revision is now %lld",
                   m->name, name, (long long)token, (long long)now);
    rc = -1;
  }
  int64_t deleted = 0;
  for (size_t i = 0; rc == 0 && i < tr.n_results; i++)
    deleted += tr.results[i].count;
  dmh_etcd_txn_result_free(&tr);
  bool shown = rc == 0 && members_shown(m, name, true);
  if (rc == 0 && !shown && deleted == 0) {
    dm_error_set(err, DM_ERR_NOT_FOUND, NULL,
                 "dm-worker with name %s not exists (no binding, relay request or offline state "
                 "of it in the cluster; list-member --worker shows the workers)",
                 name);
    rc = -1;
  }
  /* its series goes now, not at the next round: the leader's set is recomputed from etcd */
  master_snapshot s;
  dm_error serr;
  if (rc == 0 && atomic_load(&m->token) == token && master_snapshot_read(c, m, &s, &serr) == 0) {
    master_metrics_workers(m, &s);
    master_snapshot_free(&s);
  }
  pthread_mutex_unlock(&m->sched_lock);
  if (rc == 0)
    dmh_log(DM_LOG_INFO, "master", "offline-member: worker %s removed (token %lld)", name,
            (long long)token);
  return rc;
}

/* --master NAME: a dmhost master registers under its lease and keeps nothing after it, so a
 * master is either running (refused: it leaves by stopping) or already gone. */
static int members_offline_master(master_ctl *x, const char *name, dm_error *err) {
  char key[DMH_CLUSTER_KEY_MAX];
  dmh_etcd_result r = {0};
  if (master_key(key, sizeof key, x->m, DMH_KEY_MASTER, name, NULL, NULL, err) < 0 ||
      dmh_etcd_range(x->c, DMH_ETCD_S(key), 0, 1, 0, &r, err) < 0)
    return -1;
  bool online = r.n_kvs > 0;
  dmh_etcd_result_free(&r);
  if (online)
    dm_error_set(err, DM_ERR_CLUSTER_MEMBER_ONLINE, NULL,
                 "dm-master with name %s is still online: stop it (a dmhost master leaves the "
                 "cluster with its lease; nothing of it is kept to remove)",
                 name);
  else
    dm_error_set(err, DM_ERR_NOT_FOUND, NULL,
                 "dm-master with name %s not exists: a dmhost master keeps no key once its lease "
                 "ends, so a stopped one is gone already (list-member --master shows the masters)",
                 name);
  return -1;
}

int master_ctl_offline_member(void *ud, const dmh_control_cmd *cmd, json_object *args,
                              json_object *resp, dm_error *err) {
  master_ctl *x = ud;
  bool masters;
  const char *name;
  char key[DMH_CLUSTER_KEY_MAX];
  if (dmh_control_offline_args(cmd, args, &masters, &name, err) < 0)
    return -1;
  if (master_key(key, sizeof key, x->m, DMH_KEY_WORKER, name, NULL, NULL, err) < 0)
    return -1;
  if (masters)
    return members_offline_master(x, name, err);
  int fwd = master_ctl_to_leader(x, cmd, args, resp, err);
  if (fwd != 0)
    return fwd < 0 ? -1 : 0;
  return master_offline_worker(x->m, x->c, dmh_master_token(x->m), name, err);
}
