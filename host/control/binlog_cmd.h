/*
 * The `binlog` command (DM's, formerly handle-error), shared by the daemon (`dmctl binlog`, see
 * registry_binlog.c) and the foreground run (`dmhost binlog`):
 *
 *   binlog skip    TASK [-s SOURCE] [-b FILE:POS]           skip the event
 *   binlog replace TASK [-s SOURCE] [-b FILE:POS] SQL...    apply SQL instead of the event
 *   binlog inject  TASK [-s SOURCE] [-b FILE:POS] SQL...    apply SQL, then the event
 *   binlog list    TASK [-s SOURCE]                         the registered operators
 *   binlog revert  TASK [-s SOURCE] [-b FILE:POS]           remove one
 *
 * Without -b an operator is for the event the subtask is failing on (binlogPos ""). SQL comes as
 * separate arguments, each also split on ';' at top level (binlog_ops.h). The request on the
 * control socket: {"cmd": "binlog", "args": {"op": "skip", "name": "t1", "source": "mysql-01",
 * "binlogPos": "mysql-bin.000001:1234", "sqls": ["..."]}} (source, binlogPos, sqls optional).
 */
#ifndef DMH_BINLOG_CMD_H
#define DMH_BINLOG_CMD_H

#include <json-c/json.h>
#include <stdbool.h>

#include "binlog_ops.h"
#include "commands.h" /* DMH_BINLOG_USAGE, dmh_binlog_args_from_argv: the command line */
#include "dmhost/error.h"

/* Check the args object (see above) and fill *req, which borrows strings from `args`. Errors are
 * DM_ERR_CONTROL_REQUEST: an unknown op, a bad binlogPos (saying the expected form), replace or
 * inject without SQL, skip, list or revert with SQL, list with binlogPos. Returns 0 or -1. */
int dmh_binlog_req_parse(json_object *args, dmh_binlog_req *req, dm_error *err);

/* `dmhost binlog ...`: the same command on the stores of `dmhost run --work-dir DIR`. */
int dmh_binlog_main(int argc, char **argv);

#endif /* DMH_BINLOG_CMD_H */
