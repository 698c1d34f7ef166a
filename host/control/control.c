/* The request dispatcher: checks each request's shape, then calls the registry. See control.h. */
#include "control.h"

#include "error_json.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "binlog_cmd.h"
#include "config.h"
#include "dmhost/sdk.h"
#include "dmhost/settings.h"
#include "log.h"
#include "state.h"
#include "validation_cmd.h"

/* ---- arguments ---- */

typedef dmh_control_cmd control_cmd;
#define CONTROL_MAX_ARGS DMH_CONTROL_MAX_ARGS

static void control_arg_list(const control_cmd *cmd, char *buf, size_t len) {
  buf[0] = '\0';
  size_t n = 0;
  for (int i = 0; i < CONTROL_MAX_ARGS && cmd->args[i] && n < len; i++)
    n += (size_t)snprintf(buf + n, len - n, "%s\"%s\"", i ? ", " : "", cmd->args[i]);
  if (!cmd->args[0])
    snprintf(buf, len, "no arguments");
}

/* Refuse argument names the command does not take (a misspelt one would be silently ignored). */
static int control_check_args(const control_cmd *cmd, json_object *args, dm_error *err) {
  json_object_object_foreach(args, key, val) {
    (void)val;
    bool known = false;
    for (int i = 0; i < CONTROL_MAX_ARGS && cmd->args[i] && !known; i++)
      known = strcmp(cmd->args[i], key) == 0;
    if (!known) {
      char list[128];
      control_arg_list(cmd, list, sizeof list);
      return dmh_control_bad(err, "%s: unknown argument \"%s\"; it takes %s (usage: %s)", cmd->name,
                             key, list, cmd->usage);
    }
  }
  return 0;
}

int dmh_control_relay_each(void *ud, const control_cmd *cmd, dmh_control_fn relay,
                           json_object *args, json_object *resp, dm_error *err) {
  const char *only[DMH_CONTROL_MAX_LIST];
  size_t n;
  if (dmh_control_arg_list(cmd, args, "source", only, DMH_CONTROL_MAX_LIST, &n, err) < 0)
    return -1;
  if (n == 0)
    return dmh_control_bad(err, "%s: argument \"source\" is missing (usage: %s)", cmd->name,
                           cmd->usage);
  control_cmd as = *cmd; /* the relay handler reads its name: which of the two */
  as.name = strcmp(cmd->name, "pause-relay") == 0 ? "stop-relay" : "start-relay";
  json_object *list = json_object_new_array();
  json_object_object_add(resp, "sources", list);
  int failed = 0;
  for (size_t i = 0; i < n; i++) {
    json_object *one = json_object_new_object(), *sub = dmh_control_response_new();
    json_object_object_add(one, "source", json_object_new_string(only[i]));
    dm_error e;
    int rc = relay(ud, &as, one, sub, &e);
    json_object_put(sub);
    json_object *entry = dmh_control_response_new();
    if (rc < 0) {
      dmh_control_set_error(entry, &e);
      if (failed++ == 0)
        *err = e;
    }
    json_object_object_add(entry, "source", json_object_new_string(only[i]));
    json_object_array_add(list, entry);
    json_object_put(one);
  }
  return failed ? -1 : 0;
}

int dmh_control_no_sources(const control_cmd *cmd, json_object *args, dm_error *err) {
  if (!json_object_object_get_ex(args, "source", NULL))
    return 0;
  return dmh_control_bad(err,
                         "%s -s SOURCE: dmhost starts a task on all of its sources (the file's "
                         "mysql-instances); drop -s, or list only the wanted sources in the file",
                         cmd->name);
}

/* ---- the file a command names ---- */

void dmh_control_file_free(dmh_control_file *f) {
  if (f->dir[0]) {
    unlink(f->copy);
    rmdir(f->dir);
  }
  free(f->text);
  memset(f, 0, sizeof *f);
}

int dmh_control_file_blame(const dmh_control_file *f, const char *path, dm_error *err) {
  if (f->dir[0])
    dmh_error_rename_file(err, f->copy, path);
  return -1;
}

int dmh_control_file_get(const dmh_control_cmd *cmd, json_object *args, const char *path,
                         bool want_text, dmh_control_file *f, dm_error *err) {
  memset(f, 0, sizeof *f);
  f->path = path;
  const char *content = NULL;
  if (dmh_control_arg_string(cmd, args, "content", false, &content, err) < 0)
    return -1;
  if (!content) {
    if (want_text && !(f->text = dmh_state_read_all(path, NULL))) {
      dm_error_set(err, DM_ERR_CONFIG_IO, strerror(errno), "cannot read %s", path);
      return -1;
    }
    return 0;
  }
  return dmh_control_file_from_text(path, content, want_text, f, err);
}

int dmh_control_file_from_text(const char *path, const char *text, bool want_text,
                               dmh_control_file *f, dm_error *err) {
  memset(f, 0, sizeof *f);
  f->origin = DMH_CFG_SUBMITTED; /* the text came with the request, not from a placed file */
  snprintf(f->dir, sizeof f->dir, "/tmp/dmh-sent-XXXXXX");
  if (!mkdtemp(f->dir)) { /* 0700 */
    dm_error_set(err, DM_ERR_STATE, strerror(errno), "cannot make a temp folder for %s", path);
    f->dir[0] = '\0';
    return -1;
  }
  /* the copy keeps the file's name: a loader's message that names it reads as the user's file */
  const char *base = strrchr(path, '/');
  snprintf(f->copy, sizeof f->copy, "%s/%.60s", f->dir, base ? base + 1 : path);
  f->path = f->copy;
  if (want_text && !(f->text = strdup(text))) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory reading %s", path);
    return -1;
  }
  return dmh_state_write_file(f->copy, text, strlen(text), err);
}

/* ---- commands ---- */

int dmh_control_source_args(const dmh_control_cmd *cmd, json_object *args, dmh_source_op *out,
                            dm_error *err) {
  const char *op;
  memset(out, 0, sizeof *out);
  if (dmh_control_arg_string(cmd, args, "op", true, &op, err) < 0 ||
      dmh_control_arg_string(cmd, args, "source", false, &out->source, err) < 0)
    return -1;
  bool update = strcmp(op, "update") == 0;
  if (dmh_control_arg_bool(cmd, args, "keep-password", &out->keep_password, err) < 0)
    return -1;
  if (out->keep_password && !update)
    return dmh_control_bad(err, "operate-source %s: takes no \"keep-password\" (usage: %s)", op,
                           cmd->usage);
  if (strcmp(op, "create") == 0 || update) {
    out->op = update ? DMH_SOURCE_UPDATE : DMH_SOURCE_CREATE;
    /* update may name the source it updates (DM's PUT /api/v1/sources/{source-name}): the file's
     * source-id must be that one */
    if (out->source && !update)
      return dmh_control_bad(err,
                             "operate-source %s: the source-id comes from the file; drop "
                             "\"source\"",
                             op);
    return dmh_control_arg_path(cmd, args, "path", &out->path, err);
  }
  if (json_object_object_get_ex(args, "path", NULL))
    return dmh_control_bad(err, "operate-source %s: takes no \"path\" (usage: %s)", op, cmd->usage);
  if (strcmp(op, "show") == 0) {
    out->op = DMH_SOURCE_SHOW;
    return 0;
  }
  static const struct {
    const char *name;
    int op;
  } by_source[] = {
      {"stop", DMH_SOURCE_STOP}, {"enable", DMH_SOURCE_ENABLE}, {"disable", DMH_SOURCE_DISABLE}};
  for (size_t i = 0; i < sizeof by_source / sizeof by_source[0]; i++) {
    if (strcmp(op, by_source[i].name) != 0)
      continue;
    out->op = by_source[i].op;
    if (!out->source)
      return dmh_control_bad(err, "operate-source %s: argument \"source\" is missing (usage: %s)",
                             op, cmd->usage);
    return 0;
  }
  return dmh_control_bad(err,
                         "operate-source: op \"%s\" is not one of create, update, show, stop, "
                         "enable, disable (usage: %s)",
                         op, cmd->usage);
}

static int control_operate_source(void *ud, const control_cmd *cmd, json_object *args,
                                  json_object *resp, dm_error *err) {
  dmh_registry *r = ud;
  dmh_source_op so;
  if (dmh_control_source_args(cmd, args, &so, err) < 0)
    return -1;
  if (so.op == DMH_SOURCE_CREATE || so.op == DMH_SOURCE_UPDATE) {
    dmh_control_file f;
    int rc = dmh_control_file_get(cmd, args, so.path, false, &f, err);
    if (rc == 0)
      rc = so.op == DMH_SOURCE_CREATE
               ? dmh_registry_source_create_as(r, f.path, f.origin, resp, err)
               : dmh_registry_source_update_as(r, f.path, f.origin, so.source, so.keep_password,
                                               resp, err);
    if (rc < 0)
      dmh_control_file_blame(&f, so.path, err);
    dmh_control_file_free(&f);
    return rc;
  }
  if (so.op == DMH_SOURCE_SHOW)
    return dmh_registry_source_show(r, so.source, resp, err);
  if (so.op == DMH_SOURCE_ENABLE || so.op == DMH_SOURCE_DISABLE)
    return dmh_registry_source_enable(r, so.source, so.op == DMH_SOURCE_ENABLE, resp, err);
  return dmh_registry_source_stop(r, so.source, resp, err);
}

/* start-task's and the task commands' DM options (registry.h, dmh_task_opts): "stage" ("Stopped":
 * created, not started; "Running": the default), "remove-meta", and "force", whose presence
 * alone asks for DM's DELETE rule (dmctl never sends it: its stop-task stops a running task). */
static int control_task_opts(const control_cmd *cmd, json_object *args, dmh_task_opts *o,
                             dm_error *err) {
  memset(o, 0, sizeof *o);
  const char *stage = NULL;
  if (strcmp(cmd->name, "start-task") == 0 &&
      dmh_control_arg_string(cmd, args, "stage", false, &stage, err) < 0)
    return -1;
  if (stage && strcmp(stage, "Stopped") != 0 && strcmp(stage, "Running") != 0)
    return dmh_control_bad(err,
                           "start-task: argument \"stage\" is \"%s\"; it is \"Stopped\" (create "
                           "the task without starting it) or \"Running\" (the default)",
                           stage);
  o->stopped = stage && strcmp(stage, "Stopped") == 0;
  o->check_force = json_object_object_get_ex(args, "force", NULL);
  bool start = strcmp(cmd->name, "start-task") == 0, resume = strcmp(cmd->name, "resume-task") == 0;
  if (dmh_control_arg_bool(cmd, args, "remove-meta", &o->remove_meta, err) < 0 ||
      dmh_control_arg_bool(cmd, args, "force", &o->force, err) < 0 ||
      ((start || resume) &&
       dmh_control_arg_string(cmd, args, "start-time", false, &o->start_time, err) < 0) ||
      (resume &&
       dmh_control_arg_duration(cmd, args, "safe-mode-duration", "start's safe_mode_time_duration",
                                0, &o->safe_mode_duration, err) < 0))
    return -1;
  return 0;
}

/* source-schemas -s SOURCE [DB] */
static int control_source_schemas(void *ud, const control_cmd *cmd, json_object *args,
                                  json_object *resp, dm_error *err) {
  const char *source, *db;
  if (dmh_control_arg_string(cmd, args, "source", true, &source, err) < 0 ||
      dmh_control_arg_string(cmd, args, "database", false, &db, err) < 0)
    return -1;
  return dmh_registry_source_schemas(ud, source, db, resp, err);
}

/* task-tables NAME -s SOURCE [SCHEMA_PATTERN [TABLE_PATTERN]] */
static int control_task_tables(void *ud, const control_cmd *cmd, json_object *args,
                               json_object *resp, dm_error *err) {
  const char *name, *source, *schema, *table;
  if (dmh_control_arg_string(cmd, args, "name", true, &name, err) < 0 ||
      dmh_control_arg_string(cmd, args, "source", true, &source, err) < 0 ||
      dmh_control_arg_string(cmd, args, "schema", false, &schema, err) < 0 ||
      dmh_control_arg_string(cmd, args, "table", false, &table, err) < 0)
    return -1;
  return dmh_registry_task_tables(ud, name, source, schema, table, resp, err);
}

/* update-task's "name" (DM's PUT /api/v1/tasks/{task-name}): the file `f` names that task. */
static int control_task_named(const dmh_control_file *f, const char *want, dm_error *err) {
  const dmh_cfg_trust trust = {.origin = f->origin};
  dmh_task_config *t = NULL;
  if (dmh_task_config_load_as(f->path, &trust, &t, err) < 0)
    return -1;
  int rc = 0;
  if (strcmp(t->name, want) != 0)
    rc = dmh_control_bad(err,
                         "update-task: the path names task \"%s\" but the task's name is \"%s\"; "
                         "send the task to PUT /api/v1/tasks/%s (a task's name cannot change)",
                         want, t->name, t->name);
  dmh_task_config_free(t);
  return rc;
}

/* start-task, check-task and update-task: the file named (or sent) goes to the registry. */
static int control_task_file(void *ud, const control_cmd *cmd, json_object *args, json_object *resp,
                             dm_error *err) {
  dmh_registry *r = ud;
  const char *path;
  if (dmh_control_arg_path(cmd, args, "path", &path, err) < 0 ||
      dmh_control_no_sources(cmd, args, err) < 0)
    return -1;
  int (*fn)(dmh_registry *, const char *, dmh_cfg_origin, json_object *, dm_error *) =
      strcmp(cmd->name, "start-task") == 0   ? dmh_registry_task_start_as
      : strcmp(cmd->name, "check-task") == 0 ? dmh_registry_task_check_as
                                             : dmh_registry_task_update_as;
  dmh_task_opts o;
  if (control_task_opts(cmd, args, &o, err) < 0)
    return -1;
  const char *want = NULL;
  bool dry = false;
  if (fn == dmh_registry_task_update_as &&
      (dmh_control_arg_string(cmd, args, "name", false, &want, err) < 0 ||
       dmh_control_arg_bool(cmd, args, "dry-run", &dry, err) < 0))
    return -1;
  dmh_control_file f;
  int rc = dmh_control_file_get(cmd, args, path, false, &f, err);
  if (rc == 0 && want && (rc = control_task_named(&f, want, err)) < 0)
    dmh_control_file_blame(&f, path, err);
  else if (rc == 0 && (rc = fn == dmh_registry_task_start_as
                                ? dmh_registry_task_start_opts(r, f.path, f.origin, &o, resp, err)
                            : fn == dmh_registry_task_update_as
                                ? dmh_registry_task_update_opts(r, f.path, f.origin, dry, resp, err)
                                : fn(r, f.path, f.origin, resp, err)) < 0)
    dmh_control_file_blame(&f, path, err);
  dmh_control_file_free(&f);
  return rc;
}

/* pause-task, resume-task, stop-task NAME [-s SOURCE ...] */
static int control_task_op(void *ud, const control_cmd *cmd, json_object *args, json_object *resp,
                           dm_error *err) {
  dmh_registry *r = ud;
  const char *name, *only[DMH_CONTROL_MAX_LIST];
  size_t n_only;
  if (dmh_control_arg_string(cmd, args, "name", true, &name, err) < 0 ||
      dmh_control_arg_list(cmd, args, "source", only, DMH_CONTROL_MAX_LIST, &n_only, err) < 0)
    return -1;
  dmh_task_opts o;
  if (control_task_opts(cmd, args, &o, err) < 0)
    return -1;
  return dmh_registry_task_op_opts(r, cmd->name, name, only, n_only, &o, resp, err);
}

static int control_query_status(void *ud, const control_cmd *cmd, json_object *args,
                                json_object *resp, dm_error *err) {
  dmh_registry *r = ud;
  const char *name, *only[DMH_CONTROL_MAX_LIST];
  size_t n_only;
  if (dmh_control_arg_string(cmd, args, "name", false, &name, err) < 0 ||
      dmh_control_arg_list(cmd, args, "source", only, DMH_CONTROL_MAX_LIST, &n_only, err) < 0)
    return -1;
  return dmh_registry_query_status_on(r, name, only, n_only, resp, err);
}

/* query-lag's "since": unix time in ms, a string (the API's query parameter) or a number. */
static int control_arg_since(const control_cmd *cmd, json_object *args, int64_t *out,
                             dm_error *err) {
  *out = 0;
  json_object *v = NULL;
  if (!json_object_object_get_ex(args, "since", &v) || !v)
    return 0;
  const char *text = json_object_get_string(v);
  char *end = NULL;
  errno = 0;
  long long ms = text ? strtoll(text, &end, 10) : -1;
  if (!(json_object_is_type(v, json_type_string) || json_object_is_type(v, json_type_int)) ||
      !text || end == text || *end || errno || ms < 0)
    return dmh_control_bad(err,
                           "%s: argument \"since\" must be a unix time in milliseconds (0 or "
                           "more), got %s (usage: %s)",
                           cmd->name, json_object_to_json_string(v), cmd->usage);
  *out = ms;
  return 0;
}

static int control_query_lag(void *ud, const control_cmd *cmd, json_object *args, json_object *resp,
                             dm_error *err) {
  dmh_registry *r = ud;
  const char *name;
  int64_t since;
  if (dmh_control_arg_string(cmd, args, "name", true, &name, err) < 0 ||
      control_arg_since(cmd, args, &since, err) < 0)
    return -1;
  return dmh_registry_task_lag(r, name, since, resp, err);
}

static int control_relay(void *ud, const control_cmd *cmd, json_object *args, json_object *resp,
                         dm_error *err) {
  dmh_registry *r = ud;
  const char *source;
  if (dmh_control_arg_string(cmd, args, "source", true, &source, err) < 0)
    return -1;
  if (strcmp(cmd->name, "start-relay") == 0)
    return dmh_registry_relay_start(r, source, resp, err);
  return dmh_registry_relay_stop(r, source, resp, err);
}

static int control_relay_each(void *ud, const control_cmd *cmd, json_object *args,
                              json_object *resp, dm_error *err) {
  return dmh_control_relay_each(ud, cmd, control_relay, args, resp, err);
}

static int control_purge_relay(void *ud, const control_cmd *cmd, json_object *args,
                               json_object *resp, dm_error *err) {
  dmh_registry *r = ud;
  const char *source, *file;
  if (dmh_control_arg_string(cmd, args, "source", true, &source, err) < 0 ||
      dmh_control_arg_string(cmd, args, "file", true, &file, err) < 0)
    return -1;
  return dmh_registry_relay_purge(r, source, file, resp, err);
}

static int control_swap_unit(void *ud, const control_cmd *cmd, json_object *args, json_object *resp,
                             dm_error *err) {
  dmh_registry *r = ud;
  const char *name, *unit, *path;
  if (dmh_control_arg_string(cmd, args, "name", true, &name, err) < 0 ||
      dmh_control_arg_string(cmd, args, "unit", true, &unit, err) < 0 ||
      dmh_control_arg_path(cmd, args, "path", &path, err) < 0)
    return -1;
  if (strcmp(unit, "relay") == 0)
    return dmh_control_bad(err,
                           "swap-unit: unit \"relay\" is not one of a task's kinds (dump, load, "
                           "sync or a custom kind its units name): the relay runs per source "
                           "(usage: %s)",
                           cmd->usage);
  return dmh_registry_task_swap(r, name, unit, path, resp, err);
}

static int control_binlog(void *ud, const control_cmd *cmd, json_object *args, json_object *resp,
                          dm_error *err) {
  dmh_registry *r = ud;
  (void)cmd;
  dmh_binlog_req req;
  if (dmh_binlog_req_parse(args, &req, err) < 0)
    return -1;
  int rc = dmh_registry_binlog(r, &req, resp, err);
  dmh_binlog_req_free(&req);
  return rc;
}

/* binlog-schema list|update|delete -s SOURCE TASK ...: dmh_schema_cmd_parse */
static int control_binlog_schema(void *ud, const control_cmd *cmd, json_object *args,
                                 json_object *resp, dm_error *err) {
  dmh_registry *r = ud;
  dmh_schema_cmd c;
  if (dmh_schema_cmd_parse(cmd, args, &c, err) < 0) {
    dmh_schema_cmd_free(&c);
    return -1;
  }
  int rc = dmh_registry_binlog_schema(r, c.name, c.source, &c.req, resp, err);
  dmh_schema_cmd_free(&c);
  return rc;
}

/* shard-ddl-lock [TASK] | unlock LOCK_ID ...: dmh_shard_cmd_parse says which */
static int control_shard_ddl_lock(void *ud, const control_cmd *cmd, json_object *args,
                                  json_object *resp, dm_error *err) {
  dmh_registry *r = ud;
  dmh_shard_cmd req;
  if (dmh_shard_cmd_parse(cmd, args, &req, err) < 0)
    return -1;
  if (!req.unlock)
    return dmh_registry_shard_locks(r, req.name, resp, err);
  if (req.action) /* -a/-s/-d/-t: one held table of an optimistic lock */
    return dmh_registry_shard_unlock_table(r, req.name, req.source, req.database, req.table,
                                           strcmp(req.action, "exec") == 0, resp, err);
  return dmh_registry_shard_unlock(r, req.name, req.owner, req.force_remove, resp, err);
}

/* config|get-config task|source NAME: the state dir's copy (registry_config.c); master|worker
 * NAME: the daemon's own settings, itself the cluster's one master and worker (members_cmd.c). */
static int control_get_config(void *ud, const control_cmd *cmd, json_object *args,
                              json_object *resp, dm_error *err) {
  const char *what, *name;
  if (dmh_control_config_args(cmd, args, &what, &name, err) < 0)
    return -1;
  if (strcmp(what, "task") == 0 || strcmp(what, "source") == 0)
    return dmh_registry_get_config(ud, what, name, resp, err);
  char *settings = dmh_registry_settings(ud);
  int rc = dmh_control_member_settings(cmd, what, name, dmh_registry_worker_name(ud), settings,
                                       resp, err);
  free(settings);
  return rc;
}

static int control_help(void *ud, const control_cmd *cmd, json_object *args, json_object *resp,
                        dm_error *err);

/* The daemon's handler of each row of commands.def it serves (dmh_control_table). */
static const dmh_control_fn control_fns[DMH_CMD_COUNT] = {
    [DMH_CMD_OPERATE_SOURCE] = control_operate_source,
    [DMH_CMD_CHECK_TASK] = control_task_file,
    [DMH_CMD_START_TASK] = control_task_file,
    [DMH_CMD_UPDATE_TASK] = control_task_file,
    [DMH_CMD_PAUSE_TASK] = control_task_op,
    [DMH_CMD_RESUME_TASK] = control_task_op,
    [DMH_CMD_STOP_TASK] = control_task_op,
    [DMH_CMD_QUERY_STATUS] = control_query_status,
    [DMH_CMD_QUERY_LAG] = control_query_lag,
    [DMH_CMD_VERIFY] = dmh_control_verify,
    [DMH_CMD_START_RELAY] = control_relay,
    [DMH_CMD_STOP_RELAY] = control_relay,
    [DMH_CMD_PAUSE_RELAY] = control_relay_each,
    [DMH_CMD_RESUME_RELAY] = control_relay_each,
    [DMH_CMD_PURGE_RELAY] = control_purge_relay,
    [DMH_CMD_SWAP_UNIT] = control_swap_unit,
    [DMH_CMD_BINLOG] = control_binlog,
    [DMH_CMD_BINLOG_SCHEMA] = control_binlog_schema,
    [DMH_CMD_VALIDATION] = dmh_control_validation,
    [DMH_CMD_SHARD_DDL_LOCK] = control_shard_ddl_lock,
    [DMH_CMD_OPERATE_LEADER] = dmh_control_operate_leader,
    [DMH_CMD_CONVERT_TASK] = dmh_control_convert_task,
    [DMH_CMD_API_OBJECTS] = dmh_control_api_objects,
    [DMH_CMD_TASK_TEMPLATE] = dmh_control_task_template,
    [DMH_CMD_CLUSTER_INFO] = dmh_control_cluster_info,
    [DMH_CMD_LIST_MEMBER] = dmh_control_list_member,
    [DMH_CMD_TRANSFER_SOURCE] = dmh_control_transfer_source,
    [DMH_CMD_OFFLINE_MEMBER] = dmh_control_offline_member,
    [DMH_CMD_SOURCE_SCHEMAS] = control_source_schemas,
    [DMH_CMD_TASK_TABLES] = control_task_tables,
    [DMH_CMD_CONFIG] = control_get_config,
    [DMH_CMD_GET_CONFIG] = control_get_config,
    [DMH_CMD_HELP] = control_help,
};

static control_cmd control_cmds[DMH_CMD_COUNT];
static size_t control_n_cmds;
static pthread_once_t control_once = PTHREAD_ONCE_INIT;

static void control_init(void) {
  control_n_cmds = dmh_control_table(DMH_ROLE_DAEMON, control_fns, control_cmds);
}

size_t dmh_control_table(dmh_control_role role, const dmh_control_fn fns[DMH_CMD_COUNT],
                         dmh_control_cmd *out) {
  size_t n = 0;
  for (size_t i = 0; i < DMH_CMD_COUNT; i++) {
    const dmh_command *c = &dmh_commands[i];
    if (!fns[i]) {
      fprintf(stderr, "dmhost: command %s of commands.def has no handler in the %s's table\n",
              c->name, role == DMH_ROLE_DAEMON ? "daemon" : "master");
      abort();
    }
    dmh_control_cmd *o = &out[n++];
    memset(o, 0, sizeof *o);
    o->name = c->name;
    o->fn = fns[i];
    const char *usage = role == DMH_ROLE_DAEMON ? c->daemon_usage : c->master_usage;
    o->usage = usage ? usage : c->usage;
    for (int k = 0, a = 0; k < DMH_CMD_MAX_ARGS && c->args[k].name; k++)
      if (role == DMH_ROLE_MASTER || !(c->args[k].flags & DMH_ARG_MASTER))
        o->args[a++] = c->args[k].name;
  }
  return n;
}

static int control_help(void *ud, const control_cmd *cmd, json_object *args, json_object *resp,
                        dm_error *err) {
  (void)ud, (void)cmd, (void)args, (void)err;
  dmh_control_help(control_cmds, control_n_cmds, resp);
  return 0;
}

void dmh_control_help(const dmh_control_cmd *cmds, size_t n_cmds, json_object *resp) {
  json_object *list = json_object_new_array();
  for (size_t i = 0; i < n_cmds; i++) {
    json_object *c = json_object_new_object();
    json_object_object_add(c, "cmd", json_object_new_string(cmds[i].name));
    json_object_object_add(c, "usage", json_object_new_string(cmds[i].usage));
    json_object *a = json_object_new_array();
    for (int k = 0; k < CONTROL_MAX_ARGS && cmds[i].args[k]; k++)
      json_object_array_add(a, json_object_new_string(cmds[i].args[k]));
    json_object_object_add(c, "args", a);
    json_object_array_add(list, c);
  }
  json_object_object_add(resp, "commands", list);
}

json_object *dmh_control_handle(dmh_registry *r, json_object *request) {
  pthread_once(&control_once, control_init);
  return dmh_control_dispatch(control_cmds, control_n_cmds, r, request);
}

json_object *dmh_control_dispatch(const dmh_control_cmd *cmds, size_t n_cmds, void *ud,
                                  json_object *request) {
  json_object *resp = dmh_control_response_new();
  dm_error err;
  json_object *cmdv = NULL, *args = NULL;
  if (!json_object_is_type(request, json_type_object)) {
    dmh_control_bad(&err,
                    "the request is not a JSON object; send {\"cmd\": \"...\", \"args\": {...}}");
    goto fail;
  }
  json_object_object_foreach(request, key, val) {
    (void)val;
    if (strcmp(key, "cmd") != 0 && strcmp(key, "args") != 0) {
      dmh_control_bad(&err, "the request has a member \"%s\"; it takes \"cmd\" and \"args\"", key);
      goto fail;
    }
  }
  if (!json_object_object_get_ex(request, "cmd", &cmdv) ||
      !json_object_is_type(cmdv, json_type_string)) {
    dmh_control_bad(&err,
                    "the request has no \"cmd\" string; send {\"cmd\": \"...\", \"args\": {...}}");
    goto fail;
  }
  const char *name = json_object_get_string(cmdv);
  const control_cmd *cmd = NULL;
  for (size_t i = 0; i < n_cmds && !cmd; i++)
    if (strcmp(cmds[i].name, name) == 0)
      cmd = &cmds[i];
  if (!cmd) {
    char list[512];
    size_t n = 0;
    for (size_t i = 0; i < n_cmds && n < sizeof list; i++)
      n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", cmds[i].name);
    dmh_control_bad(&err, "unknown command \"%s\"; the commands are %s", name, list);
    goto fail;
  }
  bool has_args = json_object_object_get_ex(request, "args", &args) && args;
  if (has_args && !json_object_is_type(args, json_type_object)) {
    dmh_control_bad(&err, "%s: \"args\" must be a JSON object, got %s", cmd->name,
                    json_object_to_json_string(args));
    goto fail;
  }
  json_object *empty = NULL;
  if (!has_args)
    args = empty = json_object_new_object();
  int rc = control_check_args(cmd, args, &err);
  if (rc == 0)
    rc = cmd->fn(ud, cmd, args, resp, &err);
  json_object_put(empty);
  if (rc < 0)
    goto fail;
  return resp;
fail:
  dmh_control_set_error(resp, &err);
  return resp;
}

/* The compact text of a response, which is released. NULL when out of memory. */
static char *control_line(json_object *resp) {
  if (!resp)
    return NULL;
  const char *text =
      json_object_to_json_string_ext(resp, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
  char *out = strdup(text ? text : "");
  json_object_put(resp);
  return out;
}

static json_object *control_handle_registry(void *ud, json_object *request) {
  return dmh_control_handle(ud, request);
}

char *dmh_control_handle_line(void *ud, const char *line, size_t len) {
  return dmh_control_line_with(control_handle_registry, ud, line, len);
}

/* One string with every occurrence of `dir` made relative; NULL when it holds none. */
static char *control_relative_string(const char *s, const char *dir, size_t dlen) {
  const char *at = strstr(s, dir);
  if (!at)
    return NULL;
  size_t len = strlen(s);
  char *out = malloc(len + 1), *o = out; /* "." for the dir: never longer */
  if (!out)
    return NULL;
  bool changed = false;
  for (const char *p = s; *p;) {
    at = strstr(p, dir);
    if (!at) {
      o = stpcpy(o, p);
      break;
    }
    memcpy(o, p, (size_t)(at - p));
    o += at - p;
    char next = at[dlen];
    /* the dir itself, not a longer name that starts like it (".../state2") */
    bool name_goes_on = (next >= 'a' && next <= 'z') || (next >= 'A' && next <= 'Z') ||
                        (next >= '0' && next <= '9') || strchr("._-", next) != NULL;
    if (next == '/') {
      p = at + dlen + 1;
      changed = true;
    } else if (next == '\0' || !name_goes_on) {
      *o++ = '.';
      p = at + dlen;
      changed = true;
    } else {
      memcpy(o, at, dlen);
      o += dlen;
      p = at + dlen;
    }
  }
  *o = '\0';
  if (!changed) {
    free(out);
    return NULL;
  }
  return out;
}

static void control_relative(json_object *o, const char *dir, size_t dlen) {
  switch (json_object_get_type(o)) {
  case json_type_string: {
    char *rel = control_relative_string(json_object_get_string(o), dir, dlen);
    if (rel)
      json_object_set_string(o, rel);
    free(rel);
    break;
  }
  case json_type_array:
    for (size_t i = 0; i < json_object_array_length(o); i++)
      control_relative(json_object_array_get_idx(o, i), dir, dlen);
    break;
  case json_type_object: {
    json_object_object_foreach(o, key, val) {
      (void)key;
      control_relative(val, dir, dlen);
    }
    break;
  }
  default:
    break;
  }
}

void dmh_control_relative_paths(json_object *o, const char *dir) {
  size_t dlen = dir ? strlen(dir) : 0;
  while (dlen > 1 && dir[dlen - 1] == '/')
    dlen--;
  if (dlen <= 1) /* "/" (or nothing): every path would go */
    return;
  char d[4096];
  if (dlen >= sizeof d)
    return;
  memcpy(d, dir, dlen);
  d[dlen] = '\0';
  control_relative(o, d, dlen);
}

static json_object *control_handle_registry_tcp(void *ud, json_object *request) {
  json_object *resp = dmh_control_handle(ud, request);
  dmh_control_relative_paths(resp, dmh_registry_state_dir(ud));
  return resp;
}

char *dmh_control_handle_line_tcp(void *ud, const char *line, size_t len) {
  return dmh_control_line_with(control_handle_registry_tcp, ud, line, len);
}

char *dmh_control_line_with(json_object *(*handle)(void *ud, json_object *request), void *ud,
                            const char *line, size_t len) {
  json_tokener *tok = json_tokener_new();
  if (!tok)
    return NULL; /* out of memory: closing the connection is all that is left */
  json_object *req = json_tokener_parse_ex(tok, line, (int)len);
  enum json_tokener_error jerr = json_tokener_get_error(tok);
  size_t end = json_tokener_get_parse_end(tok);
  if (req && end < len && line[end + strspn(line + end, " \t")])
    jerr = json_tokener_error_parse_unexpected; /* something after the object */
  if (!req && jerr == json_tokener_continue)
    jerr = json_tokener_error_parse_eof; /* the line ended inside the value */
  json_object *resp;
  if (jerr != json_tokener_success) {
    dm_error err;
    dmh_control_bad(
        &err,
        "the request is not valid JSON (%s at offset %zu); send one JSON object per line: "
        "{\"cmd\": \"...\", \"args\": {...}}",
        json_tokener_error_desc(jerr), end);
    resp = dmh_control_response_new();
    dmh_control_set_error(resp, &err);
  } else {
    const char *cmd = NULL;
    json_object *c = NULL;
    if (json_object_is_type(req, json_type_object) && json_object_object_get_ex(req, "cmd", &c))
      cmd = json_object_get_string(c);
    dmh_log(DM_LOG_DEBUG, "control", "request %s", cmd ? cmd : "?");
    resp = handle(ud, req);
  }
  json_object_put(req);
  json_tokener_free(tok);
  return control_line(resp);
}

char *dmh_control_error_line(const dm_error *err) {
  json_object *resp = dmh_control_response_new();
  if (resp)
    dmh_control_set_error(resp, err);
  return control_line(resp);
}
