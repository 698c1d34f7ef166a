/* verify TASK on a master: at the worker bound to each of the task's sources, which runs it as
 * `dmhost serve` does (registry_verify.c); the answers merged into one (master_internal.h). */
#include "master_internal.h"

#include <string.h>

#include "control.h"
#include "dmhost/sdk.h"

/* args with "source" the one source `source`: what worker of that source is asked. */
static json_object *master_verify_args(json_object *args, const char *source) {
  json_object *a = json_object_new_object(), *list = json_object_new_array();
  json_object_object_foreach(args, k, v) {
    if (strcmp(k, "source") != 0)
      json_object_object_add(a, k, json_object_get(v));
  }
  json_object_array_add(list, json_object_new_string(source));
  json_object_object_add(a, "source", list);
  return a;
}

/* The first failure is the answer's: its result, msg and error (a worker's as it gave them). */
static void master_verify_fail(json_object *resp, bool *failed, json_object *answer,
                               const dm_error *e) {
  if (*failed)
    return;
  *failed = true;
  if (!answer) {
    dmh_control_set_error(resp, e);
    return;
  }
  static const char *const keys[] = {"result", "msg", "error"};
  for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
    json_object *v = NULL;
    if (json_object_object_get_ex(answer, keys[k], &v))
      json_object_object_add(resp, keys[k], json_object_get(v));
  }
}

int master_ctl_verify(void *ud, const dmh_control_cmd *cmd, json_object *args, json_object *resp,
                      dm_error *err) {
  static const char *const result[] = {"equal", "different", "error"};
  master_ctl *x = ud;
  const char *task, *only[DMH_CONTROL_MAX_LIST];
  size_t n_only;
  if (dmh_control_arg_string(cmd, args, "name", true, &task, err) < 0 ||
      dmh_control_arg_list(cmd, args, "source", only, DMH_CONTROL_MAX_LIST, &n_only, err) < 0)
    return -1;
  char sources[DMH_CONTROL_MAX_LIST][DMH_CLUSTER_NAME_MAX];
  int n = master_ctl_sources_of(x, task, sources, DMH_CONTROL_MAX_LIST, err);
  if (n < 0)
    return -1;
  if (n == 0) {
    dm_error_set(err, DM_ERR_NOT_FOUND, NULL, "verify: no task %s in the cluster", task);
    return -1;
  }
  for (size_t i = 0; i < n_only; i++) {
    bool found = false;
    for (int k = 0; k < n && !found; k++)
      found = strcmp(sources[k], only[i]) == 0;
    if (!found) {
      dm_error_set(err, DM_ERR_NOT_FOUND, NULL,
                   "verify: task %s does not read source %s (its mysql-instances)", task, only[i]);
      return -1;
    }
  }
  master_snapshot s;
  if (master_snapshot_read(x->c, x->m, &s, err) < 0)
    return -1;
  json_object *reports = json_object_new_array();
  int worst = 0;
  bool quiet = true, failed = false;
  for (int k = 0; k < n; k++) {
    if (!master_ctl_in(only, n_only, sources[k]))
      continue;
    dm_error e = {0};
    int i = master_ctl_worker_index(&s, sources[k], false, &e);
    json_object *wargs = master_verify_args(args, sources[k]);
    /* one worker after the other: each holds its own connections to the databases */
    json_object *answer =
        i < 0 ? NULL : master_ctl_forward_worker(x, &s, (size_t)i, cmd, wargs, &e);
    json_object_put(wargs);
    json_object *v = NULL, *list = NULL;
    int rc = 2;
    if (answer && json_object_object_get_ex(answer, "verify", &v))
      for (int r = 0; r < 3; r++)
        if (strcmp(json_object_get_string(v), result[r]) == 0)
          rc = r;
    if (answer && json_object_object_get_ex(answer, "quiet", &v) && !json_object_get_boolean(v))
      quiet = false;
    if (answer && json_object_object_get_ex(answer, "reports", &list))
      for (size_t r = 0; r < json_object_array_length(list); r++)
        json_object_array_add(reports, json_object_get(json_object_array_get_idx(list, r)));
    if (!answer || (json_object_object_get_ex(answer, "result", &v) && !json_object_get_boolean(v)))
      master_verify_fail(resp, &failed, answer, &e);
    if (!answer || rc > worst)
      worst = answer ? rc : 2;
    json_object_put(answer);
  }
  master_snapshot_free(&s);
  json_object_object_add(resp, "task", json_object_new_string(task));
  json_object_object_add(resp, "verify", json_object_new_string(result[worst]));
  json_object_object_add(resp, "quiet", json_object_new_boolean(quiet));
  json_object_object_add(resp, "reports", reports);
  return 0; /* a failure is in resp as its worker gave it (master_forward_answer's way) */
}
