/*
 * api-objects task|source [NAME] (commands.def; DM's GET /api/v1/tasks[/{task-name}] and
 * /api/v1/sources[/{source-name}]): the request's arguments, DM's filters checked, into the
 * registry's dmh_registry_api_objects. A daemon's command: a master's tasks and sources are etcd's
 * (its JSON routes are not built).
 */
#include <string.h>

#include "control.h"
#include "registry.h"

int dmh_control_api_objects(void *ud, const dmh_control_cmd *cmd, json_object *args,
                            json_object *resp, dm_error *err) {
  const char *what, *only[DMH_CONTROL_MAX_LIST];
  dmh_api_objects_req q = {0};
  if (dmh_control_arg_string(cmd, args, "op", true, &what, err) < 0 ||
      dmh_control_arg_string(cmd, args, "name", false, &q.name, err) < 0 ||
      dmh_control_arg_bool(cmd, args, "with-status", &q.with_status, err) < 0 ||
      dmh_control_arg_string(cmd, args, "stage", false, &q.stage, err) < 0 ||
      dmh_control_arg_list(cmd, args, "source", only, DMH_CONTROL_MAX_LIST, &q.n_sources, err) <
          0 ||
      dmh_control_arg_bool(cmd, args, "enable-relay", &q.enable_relay, err) < 0)
    return -1;
  q.sources = only;
  q.has_enable_relay = json_object_object_get_ex(args, "enable-relay", NULL);
  q.tasks = strcmp(what, "task") == 0;
  if (!q.tasks && strcmp(what, "source") != 0)
    return dmh_control_bad(err, "api-objects: \"%s\" is not task or source (usage: %s)", what,
                           cmd->usage);
  if (q.tasks && q.has_enable_relay)
    return dmh_control_bad(err, "api-objects task: enable-relay filters sources (usage: %s)",
                           cmd->usage);
  if (!q.tasks && (q.stage || q.n_sources))
    return dmh_control_bad(err, "api-objects source: stage and source filter tasks (usage: %s)",
                           cmd->usage);
  static const char *const stages[] = {"Stopped", "Running", "Finished", "Paused"};
  bool known = !q.stage;
  for (size_t i = 0; i < sizeof stages / sizeof stages[0] && !known; i++)
    known = strcmp(q.stage, stages[i]) == 0;
  if (!known)
    return dmh_control_bad(err,
                           "api-objects task: stage \"%s\" is not one of DM's task stages "
                           "Stopped, Running, Finished, Paused",
                           q.stage);
  return dmh_registry_api_objects(ud, &q, resp, err);
}
