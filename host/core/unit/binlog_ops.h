/*
 * Binlog operators (`dmctl binlog skip|replace|inject`, DM's former handle-error): what the sync
 * unit must do with one statement event instead of applying it. They are kept per subtask (task
 * and source) in a small JSON file in the subtask's work root, which is the same folder for the
 * daemon (<state-dir>/tasks/<task>/<source>/) and for `dmhost run` (<work-dir>/tasks/<task>/
 * <source>/), so operators survive restarts and both front doors share one format:
 *
 *   <work_root>/binlog-operators.json
 *   {"version": 1, "operators": [{"op": "skip", "binlogPos": "mysql-bin.000001:1234", "sqls": []},
 *                                {"op": "replace", "binlogPos": "", "sqls": ["ALTER ..."]}]}
 *
 * binlogPos "" is the operator for the event the subtask is failing on (registered without -b).
 * There is at most one operator per binlogPos: registering another one replaces it.
 *
 * Every read-modify-write of a file happens under one process-wide mutex and an flock on
 * <file>.lock (so `dmhost binlog` in another process and a running `dmhost run` do not lose each
 * other's changes); writes are atomic (temp file + rename, see state.h). Calls are rare (a
 * command, or the sync unit at a DDL), so nothing is cached.
 */
#ifndef DMH_BINLOG_OPS_H
#define DMH_BINLOG_OPS_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "dmhost/error.h"
#include "dmhost/host.h"

#define DMH_BINLOG_OPS_FILE "binlog-operators.json"
#define DMH_BINLOG_OPS_VERSION 1
#define DMH_BINLOG_AT_MAX (DM_POSITION_NAME_MAX + 24) /* sizeof dm_binlog_operator.at */

typedef struct dmh_binlog_op {
  dm_binlog_op_kind kind;
  char at[DMH_BINLOG_AT_MAX]; /* "mysql-bin.000001:1234" (normalized), or "" */
  char **sqls;                /* owned; statements without a trailing ';' */
  int n_sqls;
} dmh_binlog_op;

typedef struct dmh_binlog_ops {
  dmh_binlog_op *ops;
  int n;
} dmh_binlog_ops;

/* "skip", "replace", "inject" <-> the kind. parse returns 0 or -1. */
const char *dmh_binlog_op_name(dm_binlog_op_kind kind);
int dmh_binlog_op_parse(const char *s, dm_binlog_op_kind *out);

/* "FILE:POS" (the event's start position, as query-status shows it) into the normalized form
 * "FILE:POS" in `at` (DMH_BINLOG_AT_MAX bytes). FILE is everything before the last ':' (non-empty,
 * shorter than DM_POSITION_NAME_MAX), POS a decimal offset >= 4. Returns 0, or -1 with
 * DM_ERR_CONTROL_REQUEST saying the expected form. */
int dmh_binlog_pos_parse(const char *text, char *at, dm_error *err);

/*
 * Split `text` into statements on ';' at top level: a ';' inside '...', "..." or `...` quotes
 * (with backslash escapes and doubled quotes), or inside a / * ... * / or -- / # comment, does not
 * split. Statements are trimmed of white space; empty ones are dropped. Appends to *sqls / *n
 * (a growable array the caller frees with dmh_binlog_sqls_free). Returns 0, or -1 with
 * DM_ERR_CONTROL_REQUEST for an unterminated quote or comment, DM_ERR_NO_MEMORY.
 */
int dmh_binlog_sql_split(const char *text, char ***sqls, int *n, dm_error *err);
void dmh_binlog_sqls_free(char **sqls, int n);

void dmh_binlog_op_clear(dmh_binlog_op *op);
/* Deep copy; 0 or -1 (out of memory, *dst left empty). */
int dmh_binlog_op_copy(dmh_binlog_op *dst, const dmh_binlog_op *src);
void dmh_binlog_ops_clear(dmh_binlog_ops *ops);

/* {"op": "skip", "binlogPos": "...", "sqls": [...]} */
json_object *dmh_binlog_op_to_json(const dmh_binlog_op *op);

/* <work_root>/binlog-operators.json (malloc'd; NULL when out of memory). */
char *dmh_binlog_ops_path(const char *work_root);

/* Read the whole file (a missing one is empty). A file that does not parse or has wrong types is
 * DM_ERR_STATE naming it and what is wrong. Returns 0 or -1. Takes the locks. */
int dmh_binlog_ops_load(const char *path, dmh_binlog_ops *out, dm_error *err);

/* Register `op`, replacing one at the same binlogPos (*replaced tells). Returns 0 or -1. */
int dmh_binlog_ops_put(const char *path, const dmh_binlog_op *op, bool *replaced, dm_error *err);

/* Remove the operator at `at` ("" the failing event's; NULL every one). *removed counts them (0
 * is not an error here). Removing the last one removes the file. Returns 0 or -1. */
int dmh_binlog_ops_remove(const char *path, const char *at, int *removed, dm_error *err);

/* The operator for the event at file:offset; with `failing`, the one registered without -b when
 * none names the position. Returns 1 (found, *out filled and owned by the caller), 0 (none), or
 * -1 with *err. */
int dmh_binlog_ops_find(const char *path, const char *file, uint64_t offset, bool failing,
                        dmh_binlog_op *out, dm_error *err);

/* ---- the `binlog` command's request (parsed by operator_cmd.c), carried out on a store ---- */

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

void dmh_binlog_req_free(dmh_binlog_req *req);

/* Carry out the request on one subtask's store (its work root). Adds to `result` (one element of
 * DM's "sources" array): "operator" (register; "msg" says when it replaced one), "operators"
 * (list), "removed" (revert). A revert that finds nothing is DM_ERR_NOT_FOUND. Returns 0 or -1. */
int dmh_binlog_req_apply(const dmh_binlog_req *req, const char *work_root, json_object *result,
                         dm_error *err);

#endif /* DMH_BINLOG_OPS_H */
