/* `dmctl validation` (registry.h): the continuous validator of the sync unit of each subtask of a
 * task (or of every task, DM's --all-task) on this worker, one validation_op call a subtask. */
#include "registry_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmhost/sdk.h"
#include "log.h"

static const char *const validation_op_names[] = {
    [DM_VALIDATION_START] = "start",           [DM_VALIDATION_STOP] = "stop",
    [DM_VALIDATION_STATUS] = "status",         [DM_VALIDATION_SHOW_ERROR] = "show-error",
    [DM_VALIDATION_OPERATE] = "operate-error", [DM_VALIDATION_UPDATE] = "update",
};

static bool val_source_in(const char *const *sources, size_t n, const char *id) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(sources[i], id) == 0)
      return true;
  return n == 0;
}

/* The subtasks of t on the asked sources, each asked in turn with the task's commands held. */
static void val_task(dmh_registry *r, reg_task *t, const char *cmd, const char *const *sources,
                     size_t n_sources, const dm_validation_req *req, json_object *arr) {
  for (int i = 0; i < t->n_subs; i++) {
    reg_sub *sub = &t->subs[i];
    if (!val_source_in(sources, n_sources, sub->source_id))
      continue;
    pthread_mutex_lock(&r->lock);
    dmh_subtask *st = sub->st;
    pthread_mutex_unlock(&r->lock);
    dm_error e = {0};
    json_object *items = NULL;
    int rc = -1;
    if (!st)
      dm_error_set(&e, DM_ERR_VALIDATION_UNIT, NULL,
                   "%s %s: the subtask on source %s is not running here (see query-status %s): "
                   "validator not found for task %s with source %s",
                   cmd, t->name, sub->source_id, t->name, t->name, sub->source_id);
    else
      rc = dmh_subtask_validation_op(st, req, &items, &e);
    json_object *res = reg_source_result(r, sub->source_id, rc < 0 ? &e : NULL);
    json_object_object_add(res, "task", json_object_new_string(t->name));
    if (rc == 0)
      json_object_object_add(res, "items", items);
    json_object_array_add(arr, res);
    dmh_log(rc < 0 ? DM_LOG_WARN : DM_LOG_INFO, "registry", "%s %s -s %s: %s", cmd, t->name,
            sub->source_id, rc < 0 ? e.message : "done");
  }
}

int dmh_registry_validation(dmh_registry *r, const char *name, const char *const *sources,
                            size_t n_sources, const dm_validation_req *req, json_object *resp,
                            dm_error *err) {
  char cmd[48];
  snprintf(cmd, sizeof cmd, "validation %s",
           req->op <= DM_VALIDATION_UPDATE && validation_op_names[req->op]
               ? validation_op_names[req->op]
               : "?");
  json_object *arr = json_object_new_array();
  json_object_object_add(resp, "sources", arr);
  reg_add_worker(r, resp);
  (void)err; /* none matched: an empty "sources", in DM's words by the caller */
  int n = 0;
  reg_task **all = NULL, *one = NULL;
  if (name) {
    pthread_mutex_lock(&r->lock);
    if ((one = reg_find_task_locked(r, name)))
      one->refs++;
    pthread_mutex_unlock(&r->lock);
    all = &one;
    n = one ? 1 : 0;
  } else {
    all = reg_all_tasks(r, &n);
  }
  for (int i = 0; i < n; i++) {
    dm_error e;
    if (reg_lock_task(r, all[i], cmd, &e)) {
      val_task(r, all[i], cmd, sources, n_sources, req, arr);
      pthread_mutex_unlock(&all[i]->cmd_lock);
    }
    reg_task_unref(r, all[i]);
  }
  if (!name)
    free(all);
  return 0;
}
