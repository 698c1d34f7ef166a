/*
 * The control protocol: one JSON request in, one JSON response out.
 *
 *   request:  {"cmd": "start-task", "args": {"path": "/abs/task.cfg"}}
 *   response: {"result": true, "msg": "", ...payload}
 *   error:    {"result": false, "msg": "<message>", "error": {"ErrCode": 12004, "ErrClass":
 *              "unit-loader", "ErrScope": "internal", "ErrLevel": "high", "Message": "...",
 *              "RawCause": "...", "Workaround": "...", "Resumable": false}, ...payload}
 *
 * The commands, their arguments (paths absolute; dmctl makes them so) and usage are the rows of
 * commands.def; their payloads follow DM's (see docs/control.md).
 * An unknown command, a missing or mistyped argument, or an argument the command does not take is
 * DM_ERR_CONTROL_REQUEST.
 */
#ifndef DMH_CONTROL_H
#define DMH_CONTROL_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "commands.h"
#include "config.h"
#include "dmhost/error.h"
#include "dmhost/unit.h"
#include "error_json.h"
#include "registry.h"

/* A command of a dispatch table: its name, the function answering it (`ud` is the table's
 * context: the registry here, the master in master_control.c), the argument names it takes (any
 * other is refused), and dmctl's syntax for help. Made from commands.def by dmh_control_table. */
#define DMH_CONTROL_MAX_ARGS DMH_CMD_MAX_ARGS
typedef struct dmh_control_cmd dmh_control_cmd;
typedef int (*dmh_control_fn)(void *ud, const dmh_control_cmd *cmd, json_object *args,
                              json_object *resp, dm_error *err);
struct dmh_control_cmd {
  const char *name;
  dmh_control_fn fn;
  const char *args[DMH_CONTROL_MAX_ARGS];
  const char *usage;
};

/* Who answers the protocol: `dmhost serve` (and a cluster worker), or a master. */
typedef enum dmh_control_role { DMH_ROLE_DAEMON, DMH_ROLE_MASTER } dmh_control_role;

/* The dispatch table of `role` from commands.def, into out[DMH_CMD_COUNT]: every row (both roles
 * serve each one; a role's refusal is a handler too) in the table's order, bound to fns[its id],
 * with the arguments the role takes (DMH_ARG_MASTER: a master's only) and the role's usage. A row
 * without a handler aborts, naming it: a new row needs its handler. Returns the count. */
size_t dmh_control_table(dmh_control_role role, const dmh_control_fn fns[DMH_CMD_COUNT],
                         dmh_control_cmd *out);

/* Checks the request's shape ({"cmd", "args"}, a known command, only its arguments) and calls
 * the command's function. Returns a new response object. */
json_object *dmh_control_dispatch(const dmh_control_cmd *cmds, size_t n_cmds, void *ud,
                                  json_object *request);
/* help's payload: "commands": [{"cmd", "usage", "args"}] of the table. */
void dmh_control_help(const dmh_control_cmd *cmds, size_t n_cmds, json_object *resp);

/* Arguments: args[key] as a non-empty string (*out NULL when absent and not required); an
 * absolute path; -1 with DM_ERR_CONTROL_REQUEST naming the command, the argument and the usage. */
int dmh_control_arg_string(const dmh_control_cmd *cmd, json_object *args, const char *key,
                           bool required, const char **out, dm_error *err);
int dmh_control_arg_path(const dmh_control_cmd *cmd, json_object *args, const char *key,
                         const char **out, dm_error *err);

/* args[key] as a list of non-empty strings (a string: one), e.g. dmctl's repeatable -s SOURCE,
 * borrowed into out[max]; *n 0 when absent. -1 with DM_ERR_CONTROL_REQUEST. */
#define DMH_CONTROL_MAX_LIST 64
int dmh_control_arg_list(const dmh_control_cmd *cmd, json_object *args, const char *key,
                         const char **out, size_t max, size_t *n, dm_error *err);

/* DM's pause-relay/resume-relay -s SOURCE ...: `relay` (the role's start-relay/stop-relay
 * handler) on each source as stop-relay (pause) or start-relay (resume); DM's "sources"
 * [{"result", "msg", "source"}], the first failure's error. */
int dmh_control_relay_each(void *ud, const dmh_control_cmd *cmd, dmh_control_fn relay,
                           json_object *args, json_object *resp, dm_error *err);

/* start-task's -s SOURCE, refused (DM starts the subtasks of those sources only): 0 without it. */
int dmh_control_no_sources(const dmh_control_cmd *cmd, json_object *args, dm_error *err);

/* config|get-config's {"op": "task"|"source"|"master"|"worker", "name"}, borrowed; another op:
 * -1 with DM_ERR_CONTROL_REQUEST. */
int dmh_control_config_args(const dmh_control_cmd *cmd, json_object *args, const char **what,
                            const char **name, dm_error *err);
/* config master|worker NAME answered by the member itself (members_cmd.c): when NAME is `self`,
 * DM's "cfg" (`settings`, its command line one flag a line: cli_flag.h), "format" "flags"; else
 * dmh_control_member_unknown. */
int dmh_control_member_settings(const dmh_control_cmd *cmd, const char *what, const char *name,
                                const char *self, const char *settings, json_object *resp,
                                dm_error *err);
/* DM's "master not found" / "worker not found" for config master|worker NAME: -1 with
 * DM_ERR_NOT_FOUND. */
int dmh_control_member_unknown(const dmh_control_cmd *cmd, const char *what, const char *name,
                               dm_error *err);

/* args[key] as true or false, or the strings "true"/"false" (a query parameter; absent: false);
 * -1 with DM_ERR_CONTROL_REQUEST otherwise. */
int dmh_control_arg_bool(const dmh_control_cmd *cmd, json_object *args, const char *key, bool *out,
                         dm_error *err);
/* args[key] as a duration of dm_duration_parse's text (DM's Go form: "1m30s"), NULL when absent,
 * shorter than max_len when max_len is not 0 (the field it is kept in); dm_name is DM's name of
 * the setting, for the refusal. -1 with DM_ERR_CONTROL_REQUEST. */
int dmh_control_arg_duration(const dmh_control_cmd *cmd, json_object *args, const char *key,
                             const char *dm_name, size_t max_len, const char **out, dm_error *err);

/* shard-ddl-lock's request, for the daemon's handler and the master's (docs/shard.md):
 *   {}, {"op": "show"[, "name": TASK]}, or dmctl's {"op": TASK}: the locks (of TASK)
 *   {"op": "unlock", "name": LOCK_ID, "owner"?, "force-remove"?, "action"?: "skip"|"exec",
 *    "source"?, "database"?, "table"?, "task"?}: with "task" (the HTTP route's path), LOCK_ID
 *   must be one of that task's. -a needs -s, -d and -t. Strings borrowed from args. */
typedef struct dmh_shard_cmd {
  bool unlock;
  const char *name; /* show: the task or NULL; unlock: the lock ID */
  const char *owner, *action, *source, *database, *table;
  bool force_remove;
} dmh_shard_cmd;
int dmh_shard_cmd_parse(const dmh_control_cmd *cmd, json_object *args, dmh_shard_cmd *out,
                        dm_error *err);

/* The file a command names (operate-source create, start-task, check-task), as a config loader
 * reads it. dmctl --master-addr sends the file's text as "content" next to its "path" (DM's dmctl
 * sends the content too), so the daemon needs no access to the user's files: the text goes to a
 * file of the same name in a private temp folder (0700), and `path` is that copy. Relative paths
 * inside a sent file mean nothing on the daemon's machine; where the registry keeps a copy it
 * refuses them (reg_check_paths). Without "content" `path` is the file itself (a client on the
 * same machine). `text` (want_text) holds the file's text. dmh_control_file_free removes the copy
 * (also after a failed get); dmh_control_file_blame makes an error naming the copy name `path`
 * instead and returns -1. */
typedef struct dmh_control_file {
  const char *path;
  char *text;
  char dir[64], copy[128];
  /* DMH_CFG_SUBMITTED when the text came in the request ("content", or from etcd): config.h */
  dmh_cfg_origin origin;
} dmh_control_file;
int dmh_control_file_get(const dmh_control_cmd *cmd, json_object *args, const char *path,
                         bool want_text, dmh_control_file *f, dm_error *err);
/* The same from a text in hand (the master's copy of a source file kept in etcd): a copy named
 * like `path`'s last part. */
int dmh_control_file_from_text(const char *path, const char *text, bool want_text,
                               dmh_control_file *f, dm_error *err);
int dmh_control_file_blame(const dmh_control_file *f, const char *path, dm_error *err);
void dmh_control_file_free(dmh_control_file *f);

/* binlog-schema's request (schema_cmd.c), DM's rules, for the daemon's handler:
 *   {"op": "list", "name", "source", "database"?, "table"?}: no database: the tracker's schemas;
 *   a database: its tables; both: the table's CREATE TABLE (DM's list)
 *   {"op": "update", ..., "database", "table", one of "path" (+ "content": the file's text, as
 *   dmctl --master-addr sends it), "from-source", "from-target"; "flush"?, "sync"?}
 *   {"op": "delete", ..., "database", "table"}
 * The request into out->req (strings borrowed from args, the SQL from out->file); -1 with
 * DM_ERR_CONTROL_REQUEST quoting the usage. dmh_schema_cmd_free releases the file. */
typedef struct dmh_schema_cmd {
  const char *name, *source;
  dm_schema_req req;
  bool has_file;
  dmh_control_file file;
} dmh_schema_cmd;
int dmh_schema_cmd_parse(const dmh_control_cmd *cmd, json_object *args, dmh_schema_cmd *out,
                         dm_error *err);
void dmh_schema_cmd_free(dmh_schema_cmd *c);
/* operate-source's arguments: create and update with an absolute path, show with an optional
 * source, stop, enable and disable with a source; anything else DM_ERR_CONTROL_REQUEST. */
typedef struct dmh_source_op {
  enum {
    DMH_SOURCE_CREATE = 1,
    DMH_SOURCE_SHOW,
    DMH_SOURCE_STOP,
    DMH_SOURCE_UPDATE,
    DMH_SOURCE_ENABLE,
    DMH_SOURCE_DISABLE
  } op;
  const char *source; /* NULL when not given */
  const char *path;   /* create, update */
  bool keep_password; /* update: the stored file's `from` password settings carry over */
} dmh_source_op;
int dmh_control_source_args(const dmh_control_cmd *cmd, json_object *args, dmh_source_op *out,
                            dm_error *err);

/* convert-task (convert_cmd.c), the same handler on a daemon and a master (`ud` unused): a Task
 * ("task": an object or its JSON text) or a task file's text ("content", "path" naming its format)
 * into resp's "task" (DM's Task) and "task_config_file" (DM's YAML text). */
int dmh_control_convert_task(void *ud, const dmh_control_cmd *cmd, json_object *args,
                             json_object *resp, dm_error *err);
/* verify TASK [-s SOURCE ...] [chunk-rows N] [threads N] [fix-sql] (verify_cmd.c): the arguments
 * checked, then the registry's run (registry.h, dmh_registry_task_verify). The daemon's. */
int dmh_control_verify(void *ud, const dmh_control_cmd *cmd, json_object *args, json_object *resp,
                       dm_error *err);
/* api-objects task|source [NAME] (objects_cmd.c): the stored tasks or sources as DM's Task or
 * Source objects, with DM's list filters (registry.h, dmh_registry_api_objects). `ud` is the
 * daemon's registry. */
int dmh_control_api_objects(void *ud, const dmh_control_cmd *cmd, json_object *args,
                            json_object *resp, dm_error *err);
/* api-objects' arguments into *q (strings borrowed from args; q->sources points at `only`),
 * checked as DM's list filters combine: 0, or -1 with DM_ERR_CONTROL_REQUEST quoting the usage.
 * The daemon's handler and the master's (master_objects.c) both read them here. */
int dmh_control_api_objects_args(const dmh_control_cmd *cmd, json_object *args,
                                 dmh_api_objects_req *q, const char *only[DMH_CONTROL_MAX_LIST],
                                 dm_error *err);
/* task-template OP [NAME] (objects_cmd.c): DM's task templates (registry.h,
 * dmh_registry_task_template); "task" a Task object or its JSON text (the route's). */
int dmh_control_task_template(void *ud, const dmh_control_cmd *cmd, json_object *args,
                              json_object *resp, dm_error *err);
/* cluster-info [update topology] (objects_cmd.c): DM's cluster info (registry.h,
 * dmh_registry_cluster_info); "topology" a ClusterTopology object or its JSON text. Its arguments,
 * the daemon's and the master's (master_objects.c): *topology the update's, checked against DM's
 * schema (a new reference: put it), NULL to read; -1 with DM_ERR_CONTROL_REQUEST or the check's
 * error. */
/* A Task (DM's OpenAPI JSON) written as DM's YAML task file into a private copy and loaded with
 * `trust` (convert_cmd.c): 0, or -1 with the loader's refusal naming the YAML's line. A master's
 * template check (master_objects.c); the converter does the same. */
int dmh_control_task_json_check(json_object *task, const dmh_cfg_trust *trust, dm_error *err);
/* task-template's arguments (objects_cmd.c), the daemon's and the master's: *op one of create,
 * update, get, list, delete, import (checked); *name, *overwrite; *task the Task (a new reference:
 * put it) for create and update, else NULL. -1 with DM_ERR_CONTROL_REQUEST quoting the usage. */
int dmh_control_template_args(const dmh_control_cmd *cmd, json_object *args, const char **op,
                              const char **name, json_object **task, bool *overwrite,
                              dm_error *err);
int dmh_control_cluster_info_args(const dmh_control_cmd *cmd, json_object *args,
                                  json_object **topology, dm_error *err);
int dmh_control_cluster_info(void *ud, const dmh_control_cmd *cmd, json_object *args,
                             json_object *resp, dm_error *err);

/* operate-leader's "op" (leader_cmd.c): *evict true for evict, false for cancel-evict; anything
 * else refused with DM's words and the usage. */
int dmh_control_leader_op(const dmh_control_cmd *cmd, json_object *args, bool *evict,
                          dm_error *err);
/* operate-leader on `dmhost serve` (leader_cmd.c): refused with DM_ERR_LEADER_ONE_MASTER, the op
 * checked first. */
int dmh_control_operate_leader(void *ud, const dmh_control_cmd *cmd, json_object *args,
                               json_object *resp, dm_error *err);
/* DM's cluster commands (members_cmd.c). The arguments, by DM's rules, for the daemon's and the
 * master's handlers: list-member's flags (neither --master nor --worker: both) and -n names (into
 * `names`, the request's strings); offline-member's --master|--worker (exactly one, else DM's
 * "should specify either --master or --worker") and -n NAME. */
typedef struct dmh_member_args {
  bool masters, workers, leader;
  const char *names[DMH_CONTROL_MAX_LIST];
  size_t n_names;
} dmh_member_args;
int dmh_control_member_args(const dmh_control_cmd *cmd, json_object *args, dmh_member_args *out,
                            dm_error *err);
int dmh_control_offline_args(const dmh_control_cmd *cmd, json_object *args, bool *master,
                             const char **name, dm_error *err);
/* The daemon's handlers, `ud` its registry: `dmhost serve` as DM's cluster of one, the leader
 * master and the only worker (dmh_registry_worker_name, at dmh_registry_addr). list-member lists
 * it; transfer-source of its bound source to itself succeeds changing nothing (another worker or
 * source: DM_ERR_NOT_FOUND); offline-member of its own name DM_ERR_CLUSTER_MEMBER_ONLINE, of any
 * other DM_ERR_NOT_FOUND. */
int dmh_control_list_member(void *ud, const dmh_control_cmd *cmd, json_object *args,
                            json_object *resp, dm_error *err);
int dmh_control_transfer_source(void *ud, const dmh_control_cmd *cmd, json_object *args,
                                json_object *resp, dm_error *err);
int dmh_control_offline_member(void *ud, const dmh_control_cmd *cmd, json_object *args,
                               json_object *resp, dm_error *err);

/* Sets DM_ERR_CONTROL_REQUEST with the message; returns -1. */
int dmh_control_bad(dm_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Answer one request object. Returns a new response object (never NULL but when out of memory). */
json_object *dmh_control_handle(dmh_registry *r, json_object *request);

/* A dmh_control_handler (control_socket.h) over dmh_control_handle: `ud` is the dmh_registry.
 * Text that is not a JSON object gets DM_ERR_CONTROL_REQUEST. Returns the compact response. */
char *dmh_control_handle_line(void *ud, const char *line, size_t len);

/* dmh_control_handle_line for a client over TCP (the HTTP server's handler, control_http.h): the
 * same answer, but every path below the state dir relative to it (dmh_control_relative_paths). */
char *dmh_control_handle_line_tcp(void *ud, const char *line, size_t len);

/* In every string of `o`, at any depth: the absolute state dir `dir` followed by '/' is removed
 * (the path is then relative to the state dir), and `dir` alone becomes ".". The state dir's
 * absolute path tells a client of the TCP listener (any certificate of the CA, a page that got a
 * request through) where the daemon keeps its secrets and sockets: it is given over the Unix
 * socket only (docs/control.md, operate-source show). */
void dmh_control_relative_paths(json_object *o, const char *dir);

/* The same over any handler of request objects (the master's: master.h): the text parsed, the
 * answer made compact. */
char *dmh_control_line_with(json_object *(*handle)(void *ud, json_object *request), void *ud,
                            const char *line, size_t len);

/* A dmh_control_refusal (control_socket.h): the answer line {"result": false, "msg", "error"} of a
 * request refused before it reached dmh_control_handle_line. malloc'd; NULL when out of memory. */
char *dmh_control_error_line(const dm_error *err);

#endif /* DMH_CONTROL_H */
