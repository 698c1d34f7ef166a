/* DM's answers on DM's paths, see http_dm.h. Each shaper reads the socket's answer of one
 * command (its members as control.md shows them) and builds DM's schema of dm.yaml (pingcap/tiflow
 * dm/openapi/spec/dm.yaml) from it: the mapping of each field is the plan's table (docs/api.md,
 * "DM's operations"). */
#include "http_dm.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_openapi.h"
#include "dmhost/sdk.h"
#include "supervisor.h"

bool dmh_dm_path(const char *url) {
  static const char v1[] = "/api/v1/";
  return strncmp(url, v1, sizeof v1 - 1) == 0 &&
         strncmp(url, DMH_API_OWN_PREFIX, strlen(DMH_API_OWN_PREFIX)) != 0 &&
         strcmp(url, "/api/v1/dmhost") != 0;
}

/* ---- reading the socket's answer ---- */

static json_object *dm_get(json_object *o, const char *key) {
  json_object *v = NULL;
  return o && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

static const char *dm_str(json_object *o, const char *key) {
  json_object *v = dm_get(o, key);
  return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
}

static int64_t dm_int(json_object *o, const char *key) {
  json_object *v = dm_get(o, key);
  return v ? json_object_get_int64(v) : 0;
}

static void dm_put_str(json_object *o, const char *key, const char *v) {
  json_object_object_add(o, key, json_object_new_string(v ? v : ""));
}

static void dm_put_int(json_object *o, const char *key, int64_t v) {
  json_object_object_add(o, key, json_object_new_int64(v));
}

void dmh_dm_error_text(json_object *error, char *buf, size_t size) {
  int n = snprintf(buf, size, "[code=%d:class=%s:scope=%s:level=%s]", (int)dm_int(error, "ErrCode"),
                   dm_str(error, "ErrClass"), dm_str(error, "ErrScope"), dm_str(error, "ErrLevel"));
  const char *parts[][2] = {{", Message: ", dm_str(error, "Message")},
                            {", RawCause: ", dm_str(error, "RawCause")},
                            {", Workaround: ", dm_str(error, "Workaround")}};
  for (size_t i = 0; i < 3; i++)
    if (*parts[i][1] && n >= 0 && (size_t)n < size)
      n += snprintf(buf + n, size - (size_t)n, "%s%s", parts[i][0], parts[i][1]);
}

/* ErrorWithMessage of the socket's answer `a` (result false): its "error", else its "msg". */
static json_object *dm_error_body(json_object *a) {
  json_object *e = dm_get(a, "error"), *o = json_object_new_object();
  char text[DM_ERROR_MESSAGE_MAX + DM_ERROR_RAW_MAX + DM_ERROR_WORKAROUND_MAX + 128];
  if (e && json_object_is_type(e, json_type_object))
    dmh_dm_error_text(e, text, sizeof text);
  else
    snprintf(text, sizeof text, "%s", dm_str(a, "msg"));
  dm_put_str(o, "error_msg", text);
  dm_put_int(o, "error_code", dm_int(e, "ErrCode"));
  return o;
}

/* Each error of `errors` (an array of the socket's error objects) as DM's lines, "" when none. */
static void dm_errors_text(json_object *errors, char *buf, size_t size) {
  size_t n = 0;
  buf[0] = '\0';
  for (size_t i = 0; errors && i < json_object_array_length(errors) && n + 1 < size; i++) {
    dmh_dm_error_text(json_object_array_get_idx(errors, i), buf + n, size - n);
    n += strlen(buf + n);
    if (n + 1 < size) {
      buf[n++] = '\n';
      buf[n] = '\0';
    }
  }
}

/* ---- the shapes ---- */

/* DM's TaskStage of the socket's stage name (supervisor.h's one mapping). */
static const char *dm_stage(const char *stage) {
  int s = dmh_stage_parse(stage);
  return dmh_stage_dm_task_stage(s < 0 ? DMH_STAGE_STOPPED : (dmh_stage)s);
}

/* "12.34 %" of done/total, as DM prints a unit's progress. */
static json_object *dm_percent(int64_t done, int64_t total) {
  char buf[32];
  snprintf(buf, sizeof buf, "%.2f %%", total > 0 ? 100.0 * (double)done / (double)total : 0.0);
  return json_object_new_string(buf);
}

/* A member of DM's answer and the member of the socket's it is read from: a string or an integer
 * (0 when absent, as DM's zero values). */
typedef struct dm_rename {
  const char *dm, *own;
  bool str;
} dm_rename;

#define DM_N(map) (sizeof map / sizeof map[0])

static void dm_renamed(json_object *to, json_object *from, const dm_rename *map, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (map[i].str)
      dm_put_str(to, map[i].dm, dm_str(from, map[i].own));
    else
      dm_put_int(to, map[i].dm, dm_int(from, map[i].own));
}

static json_object *dm_dump_status(json_object *d) {
  static const dm_rename map[] = {
      {"total_tables", "totalTables", false},      {"completed_tables", "completedTables", false},
      {"finished_bytes", "finishedBytes", false},  {"finished_rows", "finishedRows", false},
      {"estimate_total_rows", "totalRows", false}, {"bps", "bps", false}};
  json_object *o = json_object_new_object();
  dm_renamed(o, d, map, DM_N(map));
  json_object_object_add(o, "progress",
                         dm_percent(dm_int(d, "finishedRows"), dm_int(d, "totalRows")));
  return o;
}

static json_object *dm_load_status(json_object *l) {
  static const dm_rename map[] = {{"finished_bytes", "finishedBytes", false},
                                  {"total_bytes", "totalBytes", false},
                                  {"meta_binlog", "metaBinlog", true},
                                  {"meta_binlog_gtid", "metaBinlogGtid", true},
                                  {"bps", "bps", false}};
  json_object *o = json_object_new_object();
  dm_renamed(o, l, map, DM_N(map));
  json_object_object_add(o, "progress",
                         dm_percent(dm_int(l, "finishedBytes"), dm_int(l, "totalBytes")));
  return o;
}

/* `local`: the sync reads the relay (its source's relay is on), else the source itself. */
static json_object *dm_sync_status(json_object *s, bool local) {
  static const dm_rename map[] = {{"total_events", "totalRows", false},
                                  {"total_tps", "totalRps", false},
                                  {"recent_tps", "recentRps", false},
                                  {"master_binlog", "masterBinlog", true},
                                  {"master_binlog_gtid", "masterBinlogGtid", true},
                                  {"syncer_binlog", "syncerBinlog", true},
                                  {"syncer_binlog_gtid", "syncerBinlogGtid", true},
                                  {"seconds_behind_master", "secondsBehindMaster", false},
                                  /* not counted yet: absent, so 0 */
                                  {"io_total_bytes", "ioTotalBytes", false},
                                  {"dump_io_total_bytes", "dumpIOTotalBytes", false}};
  json_object *o = json_object_new_object();
  dm_renamed(o, s, map, DM_N(map));
  json_object_object_add(o, "blocking_ddls", json_object_new_array());
  json_object_object_add(o, "unresolved_groups", json_object_new_array());
  json_object *synced = dm_get(s, "synced");
  json_object_object_add(o, "synced",
                         json_object_new_boolean(synced && json_object_get_boolean(synced)));
  dm_put_str(o, "binlog_type", local ? "local" : "remote");
  return o;
}

/* One SubTaskStatus of the socket's subTaskStatus entry `st`, on the worker `worker`. */
static json_object *dm_subtask(json_object *st, const char *worker, bool relay) {
  json_object *o = json_object_new_object(), *v;
  dm_put_str(o, "name", dm_str(st, "name"));
  dm_put_str(o, "source_name", dm_str(st, "source"));
  dm_put_str(o, "worker_name", *dm_str(st, "worker") ? dm_str(st, "worker") : worker);
  dm_put_str(o, "stage", dm_stage(dm_str(st, "stage")));
  dm_put_str(o, "unit", dm_str(st, "unit"));
  dm_put_str(o, "unresolved_ddl_lock_id", dm_str(st, "unresolvedDDLLockID"));
  if ((v = dm_get(st, "dumpStatus")) && json_object_is_type(v, json_type_object))
    json_object_object_add(o, "dump_status", dm_dump_status(v));
  if ((v = dm_get(st, "loadStatus")) && json_object_is_type(v, json_type_object))
    json_object_object_add(o, "load_status", dm_load_status(v));
  if ((v = dm_get(st, "syncStatus")) && json_object_is_type(v, json_type_object))
    json_object_object_add(o, "sync_status", dm_sync_status(v, relay));
  char text[8192];
  dm_errors_text(dm_get(dm_get(st, "result"), "errors"), text, sizeof text);
  if (text[0])
    dm_put_str(o, "error_msg", text);
  return o;
}

/* {"total", "data"} of the array `data`. */
static json_object *dm_list(json_object *data) {
  json_object *o = json_object_new_object();
  dm_put_int(o, "total", (int64_t)json_object_array_length(data));
  json_object_object_add(o, "data", data);
  return o;
}

/* The SubTaskStatus list of query-status NAME's answer: sources[] {sourceStatus, subTaskStatus[]}. */
static json_object *dm_subtasks(json_object *a) {
  json_object *data = json_object_new_array(), *srcs = dm_get(a, "sources");
  for (size_t i = 0; srcs && i < json_object_array_length(srcs); i++) {
    json_object *s = json_object_array_get_idx(srcs, i), *ss = dm_get(s, "sourceStatus");
    json_object *relay = dm_get(ss, "relayStatus"), *subs = dm_get(s, "subTaskStatus");
    const char *rstage = dm_str(relay, "stage"); /* a relay stopped is not read */
    bool local = strcmp(rstage, "Running") == 0 || strcmp(rstage, "Paused") == 0;
    for (size_t k = 0; subs && k < json_object_array_length(subs); k++)
      json_object_array_add(
          data, dm_subtask(json_object_array_get_idx(subs, k), dm_str(ss, "worker"), local));
  }
  return data;
}

/* GetTaskStatusResponse from query-status NAME. */
static json_object *dm_shape_task_status(json_object *a, json_object *req) {
  (void)req;
  return dm_list(dm_subtasks(a));
}

/* One SourceStatus of an operate-source show entry {source, worker, relayStatus, relayError}. */
static json_object *dm_source_status(json_object *s) {
  json_object *o = json_object_new_object();
  dm_put_str(o, "source_name", dm_str(s, "source"));
  dm_put_str(o, "worker_name", dm_str(s, "worker"));
  json_object *rs = dm_get(s, "relayStatus"), *re = dm_get(s, "relayError");
  if (rs && json_object_is_type(rs, json_type_object)) {
    static const dm_rename map[] = {{"master_binlog", "masterBinlog", true},
                                    {"master_binlog_gtid", "masterBinlogGtid", true},
                                    {"relay_dir", "relaySubDir", true},
                                    {"relay_binlog_gtid", "relayBinlogGtid", true},
                                    {"stage", "stage", true}};
    json_object *r = json_object_new_object(), *c = dm_get(rs, "relayCatchUpMaster");
    dm_renamed(r, rs, map, DM_N(map));
    json_object_object_add(r, "relay_catch_up_master",
                           json_object_new_boolean(c && json_object_get_boolean(c)));
    json_object_object_add(o, "relay_status", r);
  }
  if (re && json_object_is_type(re, json_type_object)) {
    char text[4096];
    dmh_dm_error_text(re, text, sizeof text);
    dm_put_str(o, "error_msg", text);
  }
  return o;
}

/* GetSourceStatusResponse from operate-source show -s. */
static json_object *dm_shape_source_status(json_object *a, json_object *req) {
  (void)req;
  json_object *data = json_object_new_array(), *srcs = dm_get(a, "sources");
  for (size_t i = 0; srcs && i < json_object_array_length(srcs); i++)
    json_object_array_add(data, dm_source_status(json_object_array_get_idx(srcs, i)));
  return dm_list(data);
}

/* api-objects' entries (registry_api_objects.c) as DM's objects: a Source with its status_list
 * and task_name_list when the entry has its status, a Task with its status_list. */
static json_object *dm_object(json_object *entry, bool task) {
  json_object *o = dm_get(entry, task ? "task" : "source"), *st = dm_get(entry, "status");
  o = o ? json_object_get(o) : json_object_new_object();
  if (task && st) {
    json_object_object_add(o, "status_list", dm_subtasks(st));
  } else if (st) {
    json_object *l = json_object_new_array(), *names = dm_get(entry, "tasks");
    json_object_array_add(l, dm_source_status(st));
    json_object_object_add(o, "status_list", l);
    json_object_object_add(o, "task_name_list",
                           names ? json_object_get(names) : json_object_new_array());
  }
  return o;
}

static json_object *dm_objects(json_object *a, bool task) {
  json_object *data = json_object_new_array(), *l = dm_get(a, task ? "tasks" : "sources");
  for (size_t i = 0; l && i < json_object_array_length(l); i++)
    json_object_array_add(data, dm_object(json_object_array_get_idx(l, i), task));
  return data;
}

/* GetSourceListResponse / GetTaskListResponse, and the one Source or Task of a GET by name. */
static json_object *dm_shape_source_list(json_object *a, json_object *req) {
  (void)req;
  return dm_list(dm_objects(a, false));
}

static json_object *dm_shape_task_list(json_object *a, json_object *req) {
  (void)req;
  return dm_list(dm_objects(a, true));
}

static json_object *dm_one(json_object *a, bool task) {
  json_object *l = dm_get(a, task ? "tasks" : "sources");
  return l && json_object_array_length(l) > 0 ? dm_object(json_object_array_get_idx(l, 0), task)
                                              : json_object_new_object();
}

static json_object *dm_shape_source_one(json_object *a, json_object *req) {
  (void)req;
  return dm_one(a, false);
}

static json_object *dm_shape_task_one(json_object *a, json_object *req) {
  (void)req;
  return dm_one(a, true);
}

/* The list of list-member's group `group` ("master" or "worker"): members[] {group: {group+"s"}}. */
static json_object *dm_members(json_object *a, const char *group, const char *list) {
  json_object *m = dm_get(a, "members");
  for (size_t i = 0; m && i < json_object_array_length(m); i++) {
    json_object *l = dm_get(dm_get(json_object_array_get_idx(m, i), group), list);
    if (l && json_object_is_type(l, json_type_array))
      return l;
  }
  return NULL;
}

/* GetClusterMasterListResponse from list-member --master. */
static json_object *dm_shape_masters(json_object *a, json_object *req) {
  (void)req;
  json_object *data = json_object_new_array(), *l = dm_members(a, "master", "masters");
  for (size_t i = 0; l && i < json_object_array_length(l); i++) {
    json_object *e = json_object_array_get_idx(l, i), *o = json_object_new_object();
    dm_put_str(o, "name", dm_str(e, "name"));
    json_object_object_add(o, "alive", json_object_get(dm_get(e, "alive")));
    json_object_object_add(o, "leader", json_object_get(dm_get(e, "leader")));
    dm_put_str(o, "addr", dm_str(e, "addr"));
    json_object_array_add(data, o);
  }
  return dm_list(data);
}

/* GetClusterWorkerListResponse from list-member --worker. */
static json_object *dm_shape_workers(json_object *a, json_object *req) {
  (void)req;
  json_object *data = json_object_new_array(), *l = dm_members(a, "worker", "workers");
  for (size_t i = 0; l && i < json_object_array_length(l); i++) {
    json_object *e = json_object_array_get_idx(l, i), *o = json_object_new_object();
    dm_put_str(o, "name", dm_str(e, "name"));
    dm_put_str(o, "addr", dm_str(e, "addr"));
    dm_put_str(o, "bound_stage", dm_str(e, "stage"));
    dm_put_str(o, "bound_source_name", dm_str(e, "source"));
    json_object_array_add(data, o);
  }
  return dm_list(data);
}

/* The request's member `name` (an object), a new reference, or an empty object. */
static json_object *dm_request_object(json_object *req, const char *name) {
  json_object *v = dm_get(req, name);
  return v && json_object_is_type(v, json_type_object) ? json_object_get(v)
                                                       : json_object_new_object();
}

/* OperateTaskResponse of start-task / update-task: the request's Task, as DM answers it
 * (openapi_controller.go answers the task it was given), and DM's CheckSyncConfig text
 * (dm/checker/cmd.go): passed, or passed with warnings, the checker's JSON (the answer's
 * checkResult) after it. A failed check is the command's failure: 400. */
static json_object *dm_shape_operate_task(json_object *a, json_object *req) {
  json_object *o = json_object_new_object(), *check = dm_get(a, "checkResult");
  json_object_object_add(o, "task", dm_request_object(req, "task"));
  if (!check) {
    dm_put_str(o, "check_result", "pre-check is passed. ");
    return o;
  }
  const char *detail = json_object_to_json_string_ext(check, JSON_C_TO_STRING_PLAIN);
  char *text = NULL;
  if (asprintf(&text,
               "fail to check synchronization configuration with type: no errors but some "
               "warnings\n detail: %s",
               detail) < 0)
    text = NULL;
  dm_put_str(o, "check_result", text ? text : "");
  free(text);
  return o;
}

/* ConverterTaskResponse of convert-task: its "task" and "task_config_file". */
static json_object *dm_shape_converter(json_object *a, json_object *req) {
  (void)req;
  json_object *o = json_object_new_object(), *t = dm_get(a, "task");
  json_object_object_add(o, "task", t ? json_object_get(t) : json_object_new_object());
  dm_put_str(o, "task_config_file", dm_str(a, "task_config_file"));
  return o;
}

/* Source of operate-source create: the request's Source with DM's hidden password
 * (ObfuscatedPasswordForFeedback) and DM's `enable` default (a source created is enabled). */
static json_object *dm_shape_source(json_object *a, json_object *req) {
  (void)a;
  json_object *o = dm_request_object(req, "source");
  dm_put_str(o, "password", "******");
  if (!dm_get(o, "enable"))
    json_object_object_add(o, "enable", json_object_new_boolean(true));
  return o;
}

/* The items of the answer's one source (binlog-schema's sources[0].items), or NULL. */
static json_object *dm_source_items(json_object *a) {
  json_object *srcs = dm_get(a, "sources");
  if (!srcs || !json_object_is_type(srcs, json_type_array) || json_object_array_length(srcs) == 0)
    return NULL;
  json_object *items = dm_get(json_object_array_get_idx(srcs, 0), "items");
  return items && json_object_is_type(items, json_type_array) ? items : NULL;
}

/* SchemaNameList / TableNameList: source-schemas' "schemas" or "tables", or binlog-schema list's
 * items, as the bare array DM answers. */
static json_object *dm_shape_names(json_object *a, json_object *req) {
  (void)req;
  json_object *l = dm_get(a, "schemas");
  if (!l)
    l = dm_get(a, "tables");
  if (!l)
    l = dm_source_items(a);
  json_object *o = json_object_new_array();
  for (size_t i = 0;
       l && json_object_is_type(l, json_type_array) && i < json_object_array_length(l); i++) {
    json_object *v = json_object_array_get_idx(l, i);
    if (json_object_is_type(v, json_type_string))
      json_object_array_add(o, json_object_get(v));
  }
  return o;
}

/* GetTaskTableStructureResponse of binlog-schema list DB TABLE: the names asked for and the
 * tracker's CREATE TABLE (DM's answer; its spec's `required` names a member it never sends). */
static json_object *dm_shape_table_structure(json_object *a, json_object *req) {
  (void)req;
  json_object *o = json_object_new_object(), *items = dm_source_items(a);
  dm_put_str(o, "schema_name", dm_str(a, "database"));
  dm_put_str(o, "table_name", dm_str(a, "table"));
  json_object *sql =
      items && json_object_array_length(items) > 0 ? json_object_array_get_idx(items, 0) : NULL;
  dm_put_str(o, "schema_create_sql",
             json_object_is_type(sql, json_type_string) ? json_object_get_string(sql) : "");
  return o;
}

/* GetTaskMigrateTargetsResponse of task-tables: its "targets" (already in DM's member names),
 * each of them only. */
static json_object *dm_shape_migrate_targets(json_object *a, json_object *req) {
  (void)req;
  static const dm_rename map[] = {{"source_schema", "source_schema", true},
                                  {"source_table", "source_table", true},
                                  {"target_schema", "target_schema", true},
                                  {"target_table", "target_table", true}};
  json_object *data = json_object_new_array(), *l = dm_get(a, "targets");
  for (size_t i = 0;
       l && json_object_is_type(l, json_type_array) && i < json_object_array_length(l); i++) {
    json_object *o = json_object_new_object();
    dm_renamed(o, json_object_array_get_idx(l, i), map, DM_N(map));
    json_object_array_add(data, o);
  }
  return dm_list(data);
}

/* task-template's Task, list and import (TaskTemplateResponse: success_task_list,
 * failed_task_list [{task_name, error_msg}]). */
static json_object *dm_shape_template(json_object *a, json_object *req) {
  (void)req;
  json_object *t = dm_get(a, "template");
  return t ? json_object_get(t) : json_object_new_object();
}

static json_object *dm_shape_template_list(json_object *a, json_object *req) {
  (void)req;
  json_object *l = dm_get(a, "templates");
  return dm_list(l ? json_object_get(l) : json_object_new_array());
}

static json_object *dm_shape_template_import(json_object *a, json_object *req) {
  (void)req;
  json_object *o = json_object_new_object(), *ok = dm_get(a, "success"),
              *failed = dm_get(a, "failed"), *fl = json_object_new_array();
  json_object_object_add(o, "success_task_list",
                         ok ? json_object_get(ok) : json_object_new_array());
  for (size_t i = 0; failed && i < json_object_array_length(failed); i++) {
    json_object *f = json_object_array_get_idx(failed, i), *e = json_object_new_object();
    dm_put_str(e, "task_name", dm_str(f, "task"));
    dm_put_str(e, "error_msg", dm_str(f, "msg"));
    json_object_array_add(fl, e);
  }
  json_object_object_add(o, "failed_task_list", fl);
  return o;
}

/* GetClusterInfoResponse of cluster-info: its cluster_id and topology. */
static json_object *dm_shape_cluster_info(json_object *a, json_object *req) {
  (void)req;
  json_object *o = json_object_new_object(), *t = dm_get(a, "topology");
  dm_put_int(o, "cluster_id", dm_int(a, "cluster_id"));
  if (t)
    json_object_object_add(o, "topology", json_object_get(t));
  return o;
}

/* The shapers, by shape: NULL for a shape without a body (EMPTY). Each reads the command's answer
 * `a` and, for the shapes DM answers with what it was sent, the request's body `req` (may be
 * NULL). */
static json_object *(*const dm_shapers[DMH_API_SHAPES])(json_object *, json_object *) = {
    [DMH_API_TASK_STATUS] = dm_shape_task_status,
    [DMH_API_SOURCE_STATUS] = dm_shape_source_status,
    [DMH_API_MASTERS] = dm_shape_masters,
    [DMH_API_WORKERS] = dm_shape_workers,
    [DMH_API_OPERATE_TASK] = dm_shape_operate_task,
    [DMH_API_CONVERTER] = dm_shape_converter,
    [DMH_API_SOURCE] = dm_shape_source,
    [DMH_API_NAMES] = dm_shape_names,
    [DMH_API_TABLE_STRUCTURE] = dm_shape_table_structure,
    [DMH_API_MIGRATE_TARGETS] = dm_shape_migrate_targets,
    [DMH_API_SOURCE_LIST] = dm_shape_source_list,
    [DMH_API_SOURCE_ONE] = dm_shape_source_one,
    [DMH_API_TASK_LIST] = dm_shape_task_list,
    [DMH_API_TASK_ONE] = dm_shape_task_one,
    [DMH_API_TEMPLATE] = dm_shape_template,
    [DMH_API_TEMPLATE_LIST] = dm_shape_template_list,
    [DMH_API_TEMPLATE_IMPORT] = dm_shape_template_import,
    [DMH_API_CLUSTER_INFO] = dm_shape_cluster_info,
};

static char *dm_text(json_object *o) {
  char *t = o ? strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                             JSON_C_TO_STRING_NOSLASHESCAPE))
              : NULL;
  json_object_put(o);
  return t;
}

char *dmh_dm_answer(const dmh_api_route *route, char *answer, const char *request, unsigned *status,
                    bool *empty) {
  json_object *a = answer ? json_tokener_parse(answer) : NULL, *r = dm_get(a, "result");
  free(answer);
  *empty = false;
  if (!a) {
    json_object_put(a);
    return NULL;
  }
  json_object *body = NULL;
  if (!r || !json_object_get_boolean(r)) {
    json_object *e = dm_get(a, "error");
    *status = route->not_found_404 && dm_int(e, "ErrCode") == DM_ERR_NOT_FOUND ? 404 : 400;
    body = dm_error_body(a);
  } else {
    *status = route->status;
    if (dm_shapers[route->shape]) {
      json_object *req = request && *request ? json_tokener_parse(request) : NULL;
      body = dm_shapers[route->shape](a, req);
      json_object_put(req);
    } else
      *empty = true;
  }
  json_object_put(a);
  return *empty ? NULL : dm_text(body);
}

char *dmh_dm_refusal(char *refusal) {
  json_object *a = refusal ? json_tokener_parse(refusal) : NULL;
  free(refusal);
  if (!a)
    return NULL;
  char *t = dm_text(dm_error_body(a));
  json_object_put(a);
  return t;
}

/* ---- DMH_T: a DM object in a body into a command's text ---- */

/* JSON: the object as its JSON text, as sent (a cluster topology or a template stored as is) */
static int dm_as_json(json_object *obj, char **text, dm_error *err) {
  const char *s =
      json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
  if (!s || !(*text = strdup(s))) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory writing the body's object");
    return -1;
  }
  return 0;
}

/* The translators by kind. TASK and SOURCE are DM's Task and Source objects into DM's YAML task and
 * source files (config_openapi.h), which the daemon's YAML reader then judges key by key. A kind
 * with a NULL translator is refused, naming it. */
static const struct {
  const char *kind;
  dmh_dm_translator fn;
} dm_translators[] = {
    {"TASK", dmh_openapi_task_to_yaml},
    {"SOURCE", dmh_openapi_source_to_yaml},
    {"JSON", dm_as_json},
};

int dmh_dm_translate(const char *kind, json_object *obj, char **text, dm_error *err) {
  for (size_t i = 0; i < DM_N(dm_translators); i++) {
    if (strcmp(dm_translators[i].kind, kind) != 0)
      continue;
    if (dm_translators[i].fn)
      return dm_translators[i].fn(obj, text, err);
    break;
  }
  dm_error_set(err, DM_ERR_CONTROL_REQUEST, NULL,
               "a DM %s object in a request body is not translated yet (no %s translator in "
               "http_dm.c); send the file's text to the /api/v1/dmhost/ route instead",
               kind, kind);
  return -1;
}
