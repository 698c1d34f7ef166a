/* `dmctl binlog`: the task's binlog operators on each of its subtasks here (the request:
 * binlog_ops.h; its parsing: binlog_cmd.h). */
#include "registry_internal.h"

#include <stdio.h>
#include <string.h>

#include "binlog_ops.h"
#include "dmhost/sdk.h"
#include "log.h"

/* DM resumes a subtask paused by an error once an operator is registered for it (the operator is
 * what the error waited for). A subtask the user paused stays paused. cmd_lock held. */
static void reg_binlog_resume(dmh_registry *r, reg_sub *sub, json_object *result) {
  pthread_mutex_lock(&r->lock);
  dmh_subtask *st = sub->st;
  pthread_mutex_unlock(&r->lock);
  if (!st || dmh_subtask_stage(st) != DMH_STAGE_PAUSED || dmh_subtask_manually_paused(st))
    return;
  dm_error e;
  bool ok = dmh_subtask_resume(st, &e) == 0;
  json_object_object_add(result, "resumed", json_object_new_boolean(ok));
  if (!ok)
    dmh_log(DM_LOG_WARN, "registry",
            "binlog: cannot resume the subtask on %s after the operator: %s", sub->source_id,
            e.message);
}

int dmh_registry_binlog(dmh_registry *r, const dmh_binlog_req *req, json_object *resp,
                        dm_error *err) {
  json_object *arr = json_object_new_array();
  json_object_object_add(resp, "op", json_object_new_string(req->op_name));
  json_object_object_add(resp, "task", json_object_new_string(req->name));
  json_object_object_add(resp, "sources", arr);
  reg_add_worker(r, resp);
  char cmd[32];
  snprintf(cmd, sizeof cmd, "binlog %s", req->op_name);
  reg_task *t = reg_get_task(r, cmd, req->name, err);
  if (!t)
    return -1;
  if (!reg_lock_task(r, t, cmd, err)) {
    reg_task_unref(r, t);
    return -1;
  }
  int matched = 0, failed = 0;
  dm_error first;
  for (int i = 0; i < t->n_subs; i++) {
    reg_sub *sub = &t->subs[i];
    if (req->source && strcmp(req->source, sub->source_id) != 0)
      continue;
    matched++;
    json_object *res = reg_source_result(r, sub->source_id, NULL);
    dm_error e;
    if (dmh_binlog_req_apply(req, sub->work_root, res, &e) < 0) {
      json_object_put(res);
      res = reg_source_result(r, sub->source_id, &e);
      if (failed++ == 0)
        first = e;
    } else if (req->verb == DMH_BINLOG_REGISTER) {
      reg_binlog_resume(r, sub, res);
    }
    json_object_array_add(arr, res);
  }
  if (matched == 0) {
    char names[512] = "";
    size_t n = 0;
    for (int i = 0; i < t->n_subs && n < sizeof names; i++)
      n += (size_t)snprintf(names + n, sizeof names - n, "%s%s", i ? ", " : "",
                            t->subs[i].source_id);
    dm_error_set(&first, DM_ERR_NOT_FOUND, NULL,
                 "%s %s: the task has no subtask on source \"%s\" on this worker (its sources "
                 "here: %s)",
                 cmd, req->name, req->source ? req->source : "", names[0] ? names : "none");
    failed = 1;
  }
  dmh_log(DM_LOG_INFO, "registry", "%s %s%s%s: %d source(s), %d failed", cmd, req->name,
          req->has_pos ? " at " : "", req->has_pos ? req->op.at : "", matched, failed);
  pthread_mutex_unlock(&t->cmd_lock);
  reg_task_unref(r, t);
  if (failed) {
    *err = first;
    return -1;
  }
  return 0;
}
