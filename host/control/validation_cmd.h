/*
 * `dmctl validation`'s request and answer (validation_cmd.c), the one place of DM's rules
 * (dm/ctl/master/'s validation files) and answer shapes (dm/proto/dmmaster.proto) for both the daemon's
 * handler (control.c) and the master's forward (master_validation.c).
 */
#ifndef DMH_VALIDATION_CMD_H
#define DMH_VALIDATION_CMD_H

#include <json-c/json.h>
#include <stddef.h>

#include "control.h"
#include "dmhost/error.h"
#include "dmhost/unit.h"

/* The request: {"op", "name"?, "error-id"?, "all-task"?, "all"?, "source"?, "mode"?,
 * "start-time"?, "table-stage"?, "error"?, "cutover-binlog-pos"?, "cutover-binlog-gtid"?}, each
 * option only with the op taking it. Strings borrowed from args. */
typedef struct dmh_validation_cmd {
  const char *name; /* NULL: --all-task (start and stop only) */
  const char *sources[DMH_CONTROL_MAX_LIST];
  size_t n_sources; /* 0: all of the task's */
  dm_validation_req req;
} dmh_validation_cmd;
/* -1 with DM_ERR_CONTROL_REQUEST in DM's dmctl's words and the usage. */
int dmh_validation_cmd_parse(const dmh_control_cmd *cmd, json_object *args, dmh_validation_cmd *out,
                             dm_error *err);

/* DM_ERR_NOT_FOUND in DM's master's words: no subtask of the task (of any task) on the sources. */
int dmh_validation_not_found(const dmh_validation_cmd *c, dm_error *err);

/* The daemon's answer made DM's: each resp["sources"] entry's "items" (the unit's JSON texts,
 * registry.h dmh_registry_validation) moved into DM's members (status: "validators" and
 * "tableStatuses"; show-error: "error"), then dmh_validation_result. */
void dmh_validation_shape(const dm_validation_req *req, json_object *resp);
/* A worker's answer (shaped) appended to resp's (the master's, one per subtask): its "sources"
 * and DM's arrays; an answer without sources (a refusal as a whole) as a failed entry of
 * `source` (worker `worker`); NULL with *e for a worker not reached. */
void dmh_validation_merge(json_object *resp, json_object *answer, const char *task,
                          const char *source, const char *worker, const dm_error *e);
/* "result": every entry of resp["sources"] succeeded; "msg": DM's "success" (start, stop,
 * update) or "", else the failed entries' msg, each "; " ended (DM's master joins them so). */
void dmh_validation_result(const dm_validation_req *req, json_object *resp);

/* The daemon's handler (control.c's table; ud the registry): the request parsed, each subtask
 * asked (dmh_registry_validation), the answer shaped; none matched: DM_ERR_NOT_FOUND. */
int dmh_control_validation(void *ud, const dmh_control_cmd *cmd, json_object *args,
                           json_object *resp, dm_error *err);

#endif /* DMH_VALIDATION_CMD_H */
