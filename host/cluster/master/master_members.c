/* list-member (master.h): DM's answer of masters (the leader marked) and workers (their stage
 * offline/free/bound/relay and source), read from etcd by any master. */
#include "master_internal.h"

#include <string.h>

#include "control.h"

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
