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

typedef enum dmh_binlog_verb {
  DMH_BINLOG_REGISTER = 0, /* skip, replace, inject: `op` says which */
  DMH_BINLOG_LIST = 1,
  DMH_BINLOG_REVERT = 2,
} dmh_binlog_verb;

typedef struct dmh_binlog_req {
  dmh_binlog_verb verb;
  const char *op_name; /* "skip", ..., "revert" (borrowed from the args) */
  const char *name;    /* the task */
  const char *source;  /* NULL: every source of the task here */
  bool has_pos;        /* -b given (op.at set); else the failing event's */
  dmh_binlog_op op;    /* kind, at and the split statements (owned) */
} dmh_binlog_req;

/* Check the args object (see above) and fill *req, which borrows strings from `args`. Errors are
 * DM_ERR_CONTROL_REQUEST: an unknown op, a bad binlogPos (saying the expected form), replace or
 * inject without SQL, skip, list or revert with SQL, list with binlogPos. Returns 0 or -1. */
int dmh_binlog_req_parse(json_object *args, dmh_binlog_req *req, dm_error *err);
void dmh_binlog_req_free(dmh_binlog_req *req);

/* Carry out the request on one subtask's store (its work root). Adds to `result` (one element of
 * DM's "sources" array): "operator" (register; "msg" says when it replaced one), "operators"
 * (list), "removed" (revert). A revert that finds nothing is DM_ERR_NOT_FOUND. Returns 0 or -1. */
int dmh_binlog_req_apply(const dmh_binlog_req *req, const char *work_root, json_object *result,
                         dm_error *err);

/* `dmhost binlog ...`: the same command on the stores of `dmhost run --work-dir DIR`. */
int dmh_binlog_main(int argc, char **argv);

#endif /* DMH_BINLOG_CMD_H */
