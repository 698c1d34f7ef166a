/* A master's config|get-config task|source NAME: the text the cluster keeps in etcd ({"config"},
 * libconfig, its password sealed with the cluster key), every password value masked as the
 * daemon's answer is (config_mask.h). config master|worker NAME (DM's GetCfg): the member's own
 * settings, its command line (cli_flag.h), asked of the member itself: this master's own; another
 * master's forwarded to the address it registered; a worker's forwarded to its --listen, as DM's
 * master asks its workers (master_forward.c). */
#include "master_internal.h"

#include <stdlib.h>
#include <string.h>

#include "config_mask.h"
#include "control.h"
#include "dmhost/sdk.h"

/* config master NAME: this master's settings, or those of master NAME, which answers itself at
 * the address it registered. */
static int config_master(master_ctl *x, const dmh_control_cmd *cmd, json_object *args,
                         const char *name, json_object *resp, dm_error *err) {
  dmh_master *m = x->m;
  if (strcmp(name, m->name) == 0)
    return dmh_control_member_settings(cmd, "master", name, m->name, m->settings, resp, err);
  char key[DMH_CLUSTER_KEY_MAX];
  dmh_etcd_result r = {0};
  if (master_key(key, sizeof key, m, DMH_KEY_MASTER, name, NULL, NULL, err) < 0 ||
      dmh_etcd_range(x->c, DMH_ETCD_S(key), 0, 1, 0, &r, err) < 0)
    return -1;
  dmh_cluster_worker_info info;
  dm_error perr;
  bool found = r.n_kvs == 1 &&
               dmh_cluster_master_parse(r.kvs[0].value, r.kvs[0].value_len, &info, &perr) == 0;
  dmh_etcd_result_free(&r);
  /* its address is this master's: a registration left by a master of that name before (never
   * forwarded to itself) */
  if (!found || strcmp(info.addr, m->addr) == 0)
    return dmh_control_member_unknown(cmd, "master", name, err);
  if (!m->forward) {
    dm_error_set(err, DM_ERR_CLUSTER_NOT_LEADER, NULL,
                 "%s master %s: this master forwards no request (in-process use): send it to "
                 "master %s at %s",
                 cmd->name, name, name, info.addr);
    return -1;
  }
  return master_forward_answer(master_forward_to(m, info.addr, cmd, args, err), resp);
}

/* config worker NAME: asked of worker NAME at its --listen (it answers itself). */
static int config_worker(master_ctl *x, const dmh_control_cmd *cmd, json_object *args,
                         const char *name, json_object *resp, dm_error *err) {
  master_snapshot s;
  if (master_snapshot_read(x->c, x->m, &s, err) < 0)
    return -1;
  int i = -1;
  for (size_t k = 0; k < s.n_workers && i < 0; k++)
    if (strcmp(s.workers[k].name, name) == 0)
      i = (int)k;
  int rc;
  if (i < 0)
    rc = dmh_control_member_unknown(cmd, "worker", name, err);
  else if (!s.workers[i].online) {
    dm_error_set(err, DM_ERR_NOT_FOUND, NULL,
                 "%s worker %s: the worker is offline (its lease is gone): its settings are its "
                 "own, asked of it while it runs",
                 cmd->name, name);
    rc = -1;
  } else
    rc = master_forward_answer(master_ctl_forward_worker(x, &s, (size_t)i, cmd, args, err), resp);
  master_snapshot_free(&s);
  return rc;
}

int master_ctl_get_config(void *ud, const dmh_control_cmd *cmd, json_object *args,
                          json_object *resp, dm_error *err) {
  master_ctl *x = ud;
  const char *what, *name;
  char key[DMH_CLUSTER_KEY_MAX];
  if (dmh_control_config_args(cmd, args, &what, &name, err) < 0)
    return -1;
  if (strcmp(what, "master") == 0)
    return config_master(x, cmd, args, name, resp, err);
  if (strcmp(what, "worker") == 0)
    return config_worker(x, cmd, args, name, resp, err);
  if (master_key(key, sizeof key, x->m, strcmp(what, "task") == 0 ? DMH_KEY_TASK : DMH_KEY_SOURCE,
                 name, NULL, NULL, err) < 0)
    return -1;
  dmh_etcd_result r = {0};
  if (dmh_etcd_range(x->c, DMH_ETCD_S(key), 0, 1, 0, &r, err) < 0)
    return -1;
  char *text = NULL, *masked = NULL;
  int rc = -1;
  if (r.n_kvs == 0)
    dm_error_set(err, DM_ERR_NOT_FOUND, NULL,
                 "%s %s %s: no %s %s in the cluster; list them with `dmctl %s`", cmd->name, what,
                 name, what, name,
                 strcmp(what, "task") == 0 ? "query-status" : "operate-source show");
  else if (dmh_cluster_config_parse(r.kvs[0].value, r.kvs[0].value_len, &text, err) == 0) {
    if (!(masked = dmh_config_masked(text, false))) /* the cluster keeps libconfig only */
      dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "%s %s %s: out of memory", cmd->name, what, name);
    else {
      json_object_object_add(resp, "cfg", json_object_new_string(masked));
      json_object_object_add(resp, "format", json_object_new_string("libconfig"));
      rc = 0;
    }
  }
  free(text);
  free(masked);
  dmh_etcd_result_free(&r);
  return rc;
}
