/* shard-ddl-lock's request, shared by the daemon's handler (control.c) and the master's: see
 * control.h dmh_shard_cmd. */
#include <string.h>

#include "control.h"

int dmh_shard_cmd_parse(const dmh_control_cmd *cmd, json_object *args, dmh_shard_cmd *out,
                        dm_error *err) {
  memset(out, 0, sizeof *out);
  const char *op = NULL, *name = NULL, *task = NULL;
  if (dmh_control_arg_string(cmd, args, "op", false, &op, err) < 0 ||
      dmh_control_arg_string(cmd, args, "name", false, &name, err) < 0 ||
      dmh_control_arg_string(cmd, args, "task", false, &task, err) < 0 ||
      dmh_control_arg_string(cmd, args, "owner", false, &out->owner, err) < 0 ||
      dmh_control_arg_bool(cmd, args, "force-remove", &out->force_remove, err) < 0 ||
      dmh_control_arg_string(cmd, args, "action", false, &out->action, err) < 0 ||
      dmh_control_arg_string(cmd, args, "source", false, &out->source, err) < 0 ||
      dmh_control_arg_string(cmd, args, "database", false, &out->database, err) < 0 ||
      dmh_control_arg_string(cmd, args, "table", false, &out->table, err) < 0)
    return -1;
  out->unlock = op && strcmp(op, "unlock") == 0;
  bool unlock_only = out->owner || out->force_remove || out->action || out->source ||
                     out->database || out->table || task;
  if (!out->unlock) {
    /* dmctl's `shard-ddl-lock TASK` puts TASK in the first word, "op" */
    if (op && strcmp(op, "show") != 0) {
      if (name)
        return dmh_control_bad(err, "%s: \"%s\" is neither unlock nor a task alone (usage: %s)",
                               cmd->name, op, cmd->usage);
      name = op;
    }
    if (unlock_only)
      return dmh_control_bad(err,
                             "%s: -o, --force-remove, -a, -s, -d and -t go with unlock (usage: %s)",
                             cmd->name, cmd->usage);
    out->name = name;
    return 0;
  }
  if (!name)
    return dmh_control_bad(err, "%s unlock: LOCK_ID is missing (usage: %s)", cmd->name, cmd->usage);
  out->name = name;
  if (out->action && strcmp(out->action, "skip") != 0 && strcmp(out->action, "exec") != 0)
    return dmh_control_bad(err, "%s unlock: -a must be skip or exec, not \"%s\" (usage: %s)",
                           cmd->name, out->action, cmd->usage);
  if ((out->action || out->source || out->database || out->table) &&
      !(out->action && out->source && out->database && out->table))
    return dmh_control_bad(err, "%s unlock: -a, -s, -d and -t go together (usage: %s)", cmd->name,
                           cmd->usage);
  size_t tl = task ? strlen(task) : 0;
  if (task && (strncmp(name, task, tl) != 0 || strncmp(name + tl, "-`", 2) != 0))
    return dmh_control_bad(err, "%s unlock: lock %s is not one of task %s's (usage: %s)", cmd->name,
                           name, task, cmd->usage);
  return 0;
}
