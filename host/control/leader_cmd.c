/* operate-leader evict|cancel-evict (DM's OperateLeader): the argument's parsing, shared by the
 * daemon and the master, and the daemon's refusal. A master's work is master_evict.c's. */
#include <string.h>

#include "control.h"
#include "dmhost/sdk.h"

int dmh_control_leader_op(const dmh_control_cmd *cmd, json_object *args, bool *evict,
                          dm_error *err) {
  const char *op = NULL;
  if (dmh_control_arg_string(cmd, args, "op", true, &op, err) < 0)
    return -1;
  if (strcmp(op, "evict") != 0 && strcmp(op, "cancel-evict") != 0)
    /* DM's dmctl: "invalid operate '%s' on leader" */
    return dmh_control_bad(err,
                           "%s: invalid operate '%s' on leader: give evict or cancel-evict "
                           "(usage: %s)",
                           cmd->name, op, cmd->usage);
  *evict = strcmp(op, "evict") == 0;
  return 0;
}

int dmh_control_operate_leader(void *ud, const dmh_control_cmd *cmd, json_object *args,
                               json_object *resp, dm_error *err) {
  (void)ud, (void)resp;
  bool evict;
  if (dmh_control_leader_op(cmd, args, &evict, err) < 0)
    return -1;
  /* refused rather than answered true: DM's evict promises that another master leads, and a
   * daemon that stopped scheduling itself would leave its sources with nobody */
  dm_error_set(err, DM_ERR_LEADER_ONE_MASTER, NULL,
               "%s %s: `dmhost serve` is a cluster of one, its own and only master: there is no "
               "other master to take the leadership over",
               cmd->name, evict ? "evict" : "cancel-evict");
  return -1;
}
