/* `dmctl validation` on a master (DM's master's StartValidation and the others): at the worker
 * bound to each source of the task (of every task: --all-task), one request a subtask, which the
 * worker answers as `dmhost serve` does (validation_cmd.c); the answers merged into DM's one. */
#include "master_internal.h"

#include <stdlib.h>
#include <string.h>

#include "control.h"
#include "dmhost/sdk.h"
#include "validation_cmd.h"

/* args for the subtask (task, source): the task named, --all-task dropped, -s that source. */
static json_object *master_validation_args(json_object *args, const char *task,
                                           const char *source) {
  json_object *a = json_object_new_object(), *list = json_object_new_array();
  json_object_object_foreach(args, k, v) {
    if (strcmp(k, "source") != 0 && strcmp(k, "all-task") != 0 && strcmp(k, "name") != 0)
      json_object_object_add(a, k, json_object_get(v));
  }
  json_object_object_add(a, "name", json_object_new_string(task));
  json_object_array_add(list, json_object_new_string(source));
  json_object_object_add(a, "source", list);
  return a;
}

int master_ctl_validation(void *ud, const dmh_control_cmd *cmd, json_object *args,
                          json_object *resp, dm_error *err) {
  master_ctl *x = ud;
  dmh_validation_cmd c;
  if (dmh_validation_cmd_parse(cmd, args, &c, err) < 0)
    return -1;
  /* the subtasks: the expected stage keys (task, source) the request names */
  dmh_etcd_result r = {0};
  if (master_range_kind(x->c, x->m, DMH_KEY_STAGE, 0, &r, err) < 0)
    return -1;
  size_t n = 0;
  char(*subs)[2][DMH_CLUSTER_NAME_MAX] = calloc(r.n_kvs ? r.n_kvs : 1, sizeof *subs);
  for (size_t i = 0; subs && i < r.n_kvs; i++) {
    char t[DMH_CLUSTER_NAME_MAX], src[DMH_CLUSTER_NAME_MAX];
    if (dmh_cluster_key_parse(r.kvs[i].key, r.kvs[i].key_len, x->m->prefix, DMH_KEY_STAGE, t, src,
                              NULL) == 0 &&
        (!c.name || strcmp(t, c.name) == 0) && master_ctl_in(c.sources, c.n_sources, src)) {
      memcpy(subs[n][0], t, sizeof t);
      memcpy(subs[n][1], src, sizeof src);
      n++;
    }
  }
  dmh_etcd_result_free(&r);
  if (!subs) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "validation: out of memory");
    return -1;
  }
  if (n == 0) {
    free(subs);
    return dmh_validation_not_found(&c, err);
  }
  master_snapshot s;
  if (master_snapshot_read(x->c, x->m, &s, err) < 0) {
    free(subs);
    return -1;
  }
  json_object_object_add(resp, "sources", json_object_new_array());
  if (c.req.op == DM_VALIDATION_STATUS) {
    json_object_object_add(resp, "validators", json_object_new_array());
    json_object_object_add(resp, "tableStatuses", json_object_new_array());
  } else if (c.req.op == DM_VALIDATION_SHOW_ERROR) {
    json_object_object_add(resp, "error", json_object_new_array());
  }
  for (size_t k = 0; k < n; k++) {
    dm_error e = {0};
    int i = master_ctl_worker_index(&s, subs[k][1], false, &e);
    json_object *wargs = master_validation_args(args, subs[k][0], subs[k][1]);
    json_object *answer =
        i < 0 ? NULL : master_ctl_forward_worker(x, &s, (size_t)i, cmd, wargs, &e);
    json_object_put(wargs);
    dmh_validation_merge(resp, answer, subs[k][0], subs[k][1], i < 0 ? NULL : s.workers[i].name,
                         &e);
    json_object_put(answer);
  }
  master_snapshot_free(&s);
  free(subs);
  dmh_validation_result(&c.req, resp);
  return 0; /* a failure is in resp, per subtask */
}
