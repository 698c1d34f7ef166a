/* check-task, and the precheck start-task runs before it keeps anything (precheck.h). */
#include "registry_internal.h"

#include <stdio.h>
#include <string.h>

#include "dmhost/sdk.h"
#include "precheck.h"

int reg_precheck(dmh_registry *r, const dmh_task_config *cfg, const char *what, json_object *resp,
                 dm_error *err) {
  dmh_precheck pc = {0};
  int checked = 0, rc = 0;
  for (int i = 0; i < cfg->n_instances && rc == 0; i++) {
    reg_source *s = reg_get_source(r, cfg->instances[i].source_id);
    if (!s)
      continue; /* bound to another worker: checked there */
    rc = dmh_precheck_run(&pc, cfg, s->cfg, err);
    reg_source_unref(r, s);
    checked++;
  }
  if (rc == 0 && checked == 0) {
    pthread_mutex_lock(&r->lock);
    rc = reg_no_source_error(r, cfg, what, err);
    pthread_mutex_unlock(&r->lock);
  }
  if (rc == 0)
    rc = dmh_precheck_answer(&pc, what, resp, err);
  dmh_precheck_free(&pc);
  return rc;
}

int dmh_registry_task_check(dmh_registry *r, const char *path, json_object *resp, dm_error *err) {
  return dmh_registry_task_check_as(r, path, DMH_CFG_OPERATOR, resp, err);
}

int dmh_registry_task_check_as(dmh_registry *r, const char *path, dmh_cfg_origin origin,
                               json_object *resp, dm_error *err) {
  dmh_task_config *cfg = NULL;
  dmh_cfg_trust trust = reg_trust(r, origin);
  if (dmh_task_config_load_as(path, &trust, &cfg, err) < 0)
    return -1;
  char what[512];
  snprintf(what, sizeof what, "check-task %s", cfg->name);
  int rc = reg_precheck(r, cfg, what, resp, err);
  if (rc == 0)
    json_object_object_add(resp, "msg", json_object_new_string("pre-check is passed"));
  dmh_task_config_free(cfg);
  return rc;
}
