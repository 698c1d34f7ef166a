/*
 * DM's objects kept or shown by a daemon (commands.def), the request's arguments checked into the
 * registry's calls. api-objects' arguments are a master's too (master_objects.c: its tasks and
 * sources are etcd's); templates and cluster info are a daemon's only.
 *   api-objects task|source [NAME]  DM's GET /api/v1/tasks[/{task-name}], /api/v1/sources[/...],
 *                                   with DM's list filters (dmh_registry_api_objects)
 *   task-template OP [NAME]         DM's /api/v1/tasks/templates (dmh_registry_task_template)
 *   cluster-info [update]           DM's /api/v1/cluster/info (dmh_registry_cluster_info)
 */
#include <string.h>

#include "config_openapi.h"
#include "control.h"
#include "registry.h"

int dmh_control_api_objects_args(const dmh_control_cmd *cmd, json_object *args,
                                 dmh_api_objects_req *q, const char *only[DMH_CONTROL_MAX_LIST],
                                 dm_error *err) {
  const char *what;
  *q = (dmh_api_objects_req){0};
  if (dmh_control_arg_string(cmd, args, "op", true, &what, err) < 0 ||
      dmh_control_arg_string(cmd, args, "name", false, &q->name, err) < 0 ||
      dmh_control_arg_bool(cmd, args, "with-status", &q->with_status, err) < 0 ||
      dmh_control_arg_string(cmd, args, "stage", false, &q->stage, err) < 0 ||
      dmh_control_arg_list(cmd, args, "source", only, DMH_CONTROL_MAX_LIST, &q->n_sources, err) <
          0 ||
      dmh_control_arg_bool(cmd, args, "enable-relay", &q->enable_relay, err) < 0)
    return -1;
  q->sources = only;
  q->has_enable_relay = json_object_object_get_ex(args, "enable-relay", NULL);
  q->tasks = strcmp(what, "task") == 0;
  if (!q->tasks && strcmp(what, "source") != 0)
    return dmh_control_bad(err, "api-objects: \"%s\" is not task or source (usage: %s)", what,
                           cmd->usage);
  if (q->tasks && q->has_enable_relay)
    return dmh_control_bad(err, "api-objects task: enable-relay filters sources (usage: %s)",
                           cmd->usage);
  if (!q->tasks && (q->stage || q->n_sources))
    return dmh_control_bad(err, "api-objects source: stage and source filter tasks (usage: %s)",
                           cmd->usage);
  static const char *const stages[] = {"Stopped", "Running", "Finished", "Paused"};
  bool known = !q->stage;
  for (size_t i = 0; i < sizeof stages / sizeof stages[0] && !known; i++)
    known = strcmp(q->stage, stages[i]) == 0;
  if (!known)
    return dmh_control_bad(err,
                           "api-objects task: stage \"%s\" is not one of DM's task stages "
                           "Stopped, Running, Finished, Paused",
                           q->stage);
  return 0;
}

int dmh_control_api_objects(void *ud, const dmh_control_cmd *cmd, json_object *args,
                            json_object *resp, dm_error *err) {
  const char *only[DMH_CONTROL_MAX_LIST];
  dmh_api_objects_req q;
  if (dmh_control_api_objects_args(cmd, args, &q, only, err) < 0)
    return -1;
  return dmh_registry_api_objects(ud, &q, resp, err);
}

int dmh_control_template_args(const dmh_control_cmd *cmd, json_object *args, const char **op,
                              const char **name, json_object **task, bool *overwrite,
                              dm_error *err) {
  *task = NULL;
  if (dmh_control_arg_string(cmd, args, "op", true, op, err) < 0 ||
      dmh_control_arg_string(cmd, args, "name", false, name, err) < 0 ||
      dmh_control_arg_bool(cmd, args, "overwrite", overwrite, err) < 0)
    return -1;
  static const char *const ops[] = {"create", "update", "get", "list", "delete", "import"};
  size_t i = 0;
  while (i < sizeof ops / sizeof ops[0] && strcmp(*op, ops[i]) != 0)
    i++;
  if (i == sizeof ops / sizeof ops[0])
    return dmh_control_bad(err,
                           "task-template: \"%s\" is not one of create, update, get, list, "
                           "delete, import (usage: %s)",
                           *op, cmd->usage);
  bool takes_task = i <= 1, takes_name = i >= 1 && i <= 4 && i != 3;
  json_object *in = NULL;
  bool has_task = json_object_object_get_ex(args, "task", &in) && in;
  if (takes_task != has_task || (takes_name && !*name) || (!takes_name && *name) ||
      (*overwrite && i != 5))
    return dmh_control_bad(err, "task-template %s: wrong arguments (usage: %s)", *op, cmd->usage);
  if (has_task && json_object_is_type(in, json_type_string)) { /* the route's JSON text */
    enum json_tokener_error jerr;
    if (!(*task = json_tokener_parse_verbose(json_object_get_string(in), &jerr)))
      return dmh_control_bad(err, "task-template %s: \"task\" is not JSON: %s", *op,
                             json_tokener_error_desc(jerr));
  } else if (has_task) {
    *task = json_object_get(in);
  }
  if (*task && !json_object_is_type(*task, json_type_object)) {
    json_object_put(*task);
    *task = NULL;
    return dmh_control_bad(err, "task-template %s: \"task\" is not a Task object", *op);
  }
  return 0;
}

int dmh_control_task_template(void *ud, const dmh_control_cmd *cmd, json_object *args,
                              json_object *resp, dm_error *err) {
  const char *op, *name;
  bool overwrite;
  json_object *task;
  if (dmh_control_template_args(cmd, args, &op, &name, &task, &overwrite, err) < 0)
    return -1;
  int rc = dmh_registry_task_template(ud, op, name, task, overwrite, resp, err);
  json_object_put(task);
  return rc;
}

int dmh_control_cluster_info_args(const dmh_control_cmd *cmd, json_object *args,
                                  json_object **topology, dm_error *err) {
  const char *op;
  *topology = NULL;
  if (dmh_control_arg_string(cmd, args, "op", false, &op, err) < 0)
    return -1;
  json_object *in = NULL;
  bool has = json_object_object_get_ex(args, "topology", &in) && in;
  bool update = op && strcmp(op, "update") == 0;
  if ((op && !update) || update != has)
    return dmh_control_bad(err, "cluster-info: wrong arguments (usage: %s)", cmd->usage);
  if (has && json_object_is_type(in, json_type_string)) { /* the route's JSON text */
    enum json_tokener_error jerr;
    if (!(*topology = json_tokener_parse_verbose(json_object_get_string(in), &jerr)))
      return dmh_control_bad(err, "cluster-info update: \"topology\" is not JSON: %s",
                             json_tokener_error_desc(jerr));
  } else if (has) {
    *topology = json_object_get(in);
  }
  if (*topology && dmh_openapi_topology_check(*topology, err) < 0) {
    json_object_put(*topology);
    *topology = NULL;
    return -1;
  }
  return 0;
}

int dmh_control_cluster_info(void *ud, const dmh_control_cmd *cmd, json_object *args,
                             json_object *resp, dm_error *err) {
  json_object *topology;
  if (dmh_control_cluster_info_args(cmd, args, &topology, err) < 0)
    return -1;
  int rc = dmh_registry_cluster_info(ud, topology, resp, err);
  json_object_put(topology);
  return rc;
}
