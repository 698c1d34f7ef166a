/*
 * binlog-schema's request (control.h, dmh_schema_cmd_parse): DM's dmctl rules for its three
 * subcommands (dm/ctl/master/source_table_schema.go), into the unit's dm_schema_req. DM's `list
 * TASK DB TABLE` shows a table's structure; without TABLE (dmhost's, DM's API rows for a task's
 * schemas and tables) it lists the tables of DB, without DB the schemas.
 */
#include <string.h>

#include "control.h"

void dmh_schema_cmd_free(dmh_schema_cmd *c) {
  if (c->has_file)
    dmh_control_file_free(&c->file);
  c->has_file = false;
}

int dmh_schema_cmd_parse(const dmh_control_cmd *cmd, json_object *args, dmh_schema_cmd *out,
                         dm_error *err) {
  memset(out, 0, sizeof *out);
  const char *op, *db = NULL, *table = NULL, *path = NULL, *schema_source = NULL;
  bool from_source, from_target;
  dm_schema_req *q = &out->req;
  if (dmh_control_arg_string(cmd, args, "op", true, &op, err) < 0 ||
      dmh_control_arg_string(cmd, args, "name", true, &out->name, err) < 0 ||
      dmh_control_arg_string(cmd, args, "source", true, &out->source, err) < 0 ||
      dmh_control_arg_string(cmd, args, "database", false, &db, err) < 0 ||
      dmh_control_arg_string(cmd, args, "table", false, &table, err) < 0 ||
      dmh_control_arg_string(cmd, args, "path", false, &path, err) < 0 ||
      dmh_control_arg_bool(cmd, args, "from-source", &from_source, err) < 0 ||
      dmh_control_arg_bool(cmd, args, "from-target", &from_target, err) < 0 ||
      dmh_control_arg_bool(cmd, args, "flush", &q->flush, err) < 0 ||
      dmh_control_arg_bool(cmd, args, "sync", &q->sync, err) < 0 ||
      dmh_control_arg_string(cmd, args, "schema-source", false, &schema_source, err) < 0)
    return -1;
  /* DM's API's schema_source (PUT .../schemas/{db}/{table}): sql (its default) takes the text in
   * "content", upstream and downstream are --from-source and --from-target, with DM's words */
  json_object *cv = NULL;
  bool has_content = json_object_object_get_ex(args, "content", &cv);
  /* DM's "provided and non-empty": blank text is none */
  bool blank = !json_object_is_type(cv, json_type_string) ||
               !json_object_get_string(cv)[strspn(json_object_get_string(cv), " \t\r\n")];
  if (schema_source) {
    if (strcmp(op, "update") != 0 || path || from_source || from_target)
      return dmh_control_bad(err,
                             "binlog-schema %s: \"schema-source\" is DM's API's, for update "
                             "alone and instead of a file, --from-source or --from-target",
                             op);
    bool sql = strcmp(schema_source, "sql") == 0;
    from_source = strcmp(schema_source, "upstream") == 0;
    from_target = strcmp(schema_source, "downstream") == 0;
    if (!sql && !from_source && !from_target)
      return dmh_control_bad(err,
                             "binlog-schema update: schema_source \"%s\" is not sql, upstream or "
                             "downstream",
                             schema_source);
    if (sql && (!has_content || blank))
      return dmh_control_bad(err, "`sql_content` must be provided and non-empty when "
                                  "`schema_source` is `sql`");
    if (!sql && has_content)
      return dmh_control_bad(err, "`sql_content` must be omitted when `schema_source` is `%s`",
                             schema_source);
  }
  /* the API's text comes without a file name: the private copy's is this one */
  if (!path && has_content && strcmp(op, "update") == 0 && !from_source && !from_target)
    path = "schema.sql";
  bool list = strcmp(op, "list") == 0, update = strcmp(op, "update") == 0,
       del = strcmp(op, "delete") == 0;
  if (!list && !update && !del)
    return dmh_control_bad(err, "binlog-schema: \"%s\" is not list, update or delete (usage: %s)",
                           op, cmd->usage);
  if (table && !db)
    return dmh_control_bad(err, "binlog-schema %s: a table without its database (usage: %s)", op,
                           cmd->usage);
  if (!list && (!db || !table))
    return dmh_control_bad(err, "binlog-schema %s: DB and TABLE are required (usage: %s)", op,
                           cmd->usage);
  if (!update && (path || from_source || from_target || q->flush || q->sync))
    return dmh_control_bad(err,
                           "binlog-schema %s: a schema file, --from-source, --from-target, "
                           "--flush and --sync are update's (usage: %s)",
                           op, cmd->usage);
  if (update && from_source && from_target) /* DM's dmctl's own words */
    return dmh_control_bad(err, "binlog-schema update: from-source and from-target can not be "
                                "used together");
  if (update && path && (from_source || from_target))
    return dmh_control_bad(err, "binlog-schema update: can not set schema-file when use "
                                "from-source or from-target");
  if (update && !path && !from_source && !from_target)
    return dmh_control_bad(err,
                           "binlog-schema update: give SCHEMA.sql (a CREATE TABLE), "
                           "--from-source or --from-target (usage: %s)",
                           cmd->usage);
  q->db = db ? db : "";
  q->table = table ? table : "";
  q->op = del      ? DM_SCHEMA_REMOVE
          : update ? DM_SCHEMA_SET
          : table  ? DM_SCHEMA_GET
          : db     ? DM_SCHEMA_LIST_TABLES
                   : DM_SCHEMA_LIST_SCHEMAS;
  if (update)
    q->from = from_source   ? DM_SCHEMA_FROM_UPSTREAM
              : from_target ? DM_SCHEMA_FROM_DOWNSTREAM
                            : DM_SCHEMA_FROM_SQL;
  if (!path)
    return 0;
  /* The file's text comes in the request (dmctl always sends it for this command): the daemon
   * never opens a path a client names for a SQL file, so no file of its own can be read out
   * through the target's error messages. */
  json_object *content = NULL;
  if (!json_object_object_get_ex(args, "content", &content))
    return dmh_control_bad(err,
                           "binlog-schema update: the text of %s must come in the request's "
                           "\"content\" (dmctl sends it): the daemon does not read a client's "
                           "files",
                           path);
  if (dmh_control_file_get(cmd, args, path, true, &out->file, err) < 0)
    return -1;
  out->has_file = true;
  q->sql = out->file.text;
  return 0;
}
