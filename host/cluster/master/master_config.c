/* A master's config|get-config task|source NAME: the text the cluster keeps in etcd ({"config"},
 * libconfig, its password sealed with the cluster key), every password value masked as the
 * daemon's answer is (config_mask.h). */
#include "master_internal.h"

#include <stdlib.h>
#include <string.h>

#include "config_mask.h"
#include "control.h"
#include "dmhost/sdk.h"

int master_ctl_get_config(void *ud, const dmh_control_cmd *cmd, json_object *args,
                          json_object *resp, dm_error *err) {
  master_ctl *x = ud;
  const char *what, *name;
  char key[DMH_CLUSTER_KEY_MAX];
  if (dmh_control_config_args(cmd, args, "a `dmhost master`", &what, &name, err) < 0 ||
      master_key(key, sizeof key, x->m, strcmp(what, "task") == 0 ? DMH_KEY_TASK : DMH_KEY_SOURCE,
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
