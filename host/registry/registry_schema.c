/* `dmctl binlog-schema` (registry.h): the schema tracker of one subtask's sync unit (DM's
 * OperateSchema, one source per request as DM's API and dmctl ask it). */
#include "registry_internal.h"

#include <stdio.h>
#include <string.h>

#include "dmhost/sdk.h"
#include "log.h"

static const char *const schema_op_names[] = {
    [DM_SCHEMA_LIST_SCHEMAS] = "list", [DM_SCHEMA_LIST_TABLES] = "list", [DM_SCHEMA_GET] = "list",
    [DM_SCHEMA_SET] = "update",        [DM_SCHEMA_REMOVE] = "delete",
};

int dmh_registry_binlog_schema(dmh_registry *r, const char *name, const char *source,
                               const dm_schema_req *req, json_object *resp, dm_error *err) {
  char cmd[32];
  snprintf(cmd, sizeof cmd, "binlog-schema %s",
           req->op <= DM_SCHEMA_REMOVE && schema_op_names[req->op] ? schema_op_names[req->op]
                                                                   : "?");
  json_object *arr = json_object_new_array();
  json_object_object_add(resp, "task", json_object_new_string(name));
  json_object_object_add(resp, "sources", arr);
  /* the names asked for, as given (DM's table structure answer carries them) */
  if (req->db && *req->db)
    json_object_object_add(resp, "database", json_object_new_string(req->db));
  if (req->table && *req->table)
    json_object_object_add(resp, "table", json_object_new_string(req->table));
  reg_add_worker(r, resp);
  reg_task *t = reg_get_task(r, cmd, name, err);
  if (!t)
    return -1;
  if (!reg_lock_task(r, t, cmd, err)) {
    reg_task_unref(r, t);
    return -1;
  }
  reg_sub *sub = NULL;
  for (int i = 0; i < t->n_subs && !sub; i++)
    if (strcmp(t->subs[i].source_id, source) == 0)
      sub = &t->subs[i];
  pthread_mutex_lock(&r->lock);
  dmh_subtask *st = sub ? sub->st : NULL;
  pthread_mutex_unlock(&r->lock);
  int rc = -1;
  json_object *items = NULL;
  if (!sub)
    dm_error_set(err, DM_ERR_NOT_FOUND, NULL,
                 "%s %s: the task has no subtask on source \"%s\" on this worker", cmd, name,
                 source);
  else if (!st)
    dm_error_set(err, DM_ERR_SCHEMA_STAGE, NULL,
                 "%s %s: the subtask on source %s is not running here (see query-status %s): "
                 "current stage is Stopped but not paused, invalid",
                 cmd, name, source, name);
  else
    rc = dmh_subtask_schema_op(st, req, &items, err);
  if (sub) {
    json_object *res = reg_source_result(r, source, rc < 0 ? err : NULL);
    if (rc == 0) {
      /* DM's msg: the list as JSON text, the CREATE TABLE as it is, "" for update and delete */
      const char *msg = "";
      if (req->op == DM_SCHEMA_GET)
        msg = json_object_array_length(items)
                  ? json_object_get_string(json_object_array_get_idx(items, 0))
                  : "";
      else if (req->op == DM_SCHEMA_LIST_SCHEMAS || req->op == DM_SCHEMA_LIST_TABLES)
        msg = json_object_to_json_string_ext(items, JSON_C_TO_STRING_PLAIN);
      json_object_object_add(res, "msg", json_object_new_string(msg));
      json_object_object_add(res, "items", items);
    }
    json_object_array_add(arr, res);
  }
  dmh_log(rc < 0 ? DM_LOG_WARN : DM_LOG_INFO, "registry", "%s %s -s %s `%s`.`%s`: %s", cmd, name,
          source, req->db ? req->db : "", req->table ? req->table : "",
          rc < 0 ? err->message : "done");
  pthread_mutex_unlock(&t->cmd_lock);
  reg_task_unref(r, t);
  return rc;
}
