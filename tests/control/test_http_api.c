/*
 * The HTTP API's route table (host/http/http_api.c) against its OpenAPI document
 * (docs/openapi.json, embedded at build time): the document parses, its paths and methods are
 * exactly the table's routes (a route missing from either side fails, naming it), each operation's
 * x-dmhost-command is the route's command, and every route's command is one of the command tables
 * (control.c's and a master's, through help). No server: the matcher is checked on its own too.
 */
#include <CUnit/Basic.h>
#include <ctype.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "control.h"
#include "cunit_run.h"
#include "dmhost/sdk.h"
#include "http_api.h"
#include "http_dm.h"

static json_object *load_doc(void) {
  size_t len;
  const char *text = dmh_api_openapi(&len);
  CU_ASSERT_FATAL(len > 100);
  json_object *doc = json_tokener_parse(text);
  CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
  return doc;
}

static void lower(const char *in, char *out, size_t size) {
  size_t i = 0;
  for (; in[i] && i + 1 < size; i++)
    out[i] = (char)tolower((unsigned char)in[i]);
  out[i] = '\0';
}

static void test_same_set(void) {
  json_object *doc = load_doc(), *paths, *v;
  CU_ASSERT_FATAL(json_object_object_get_ex(doc, "openapi", &v));
  CU_ASSERT_EQUAL(strncmp(json_object_get_string(v), "3.0", 3), 0);
  CU_ASSERT_FATAL(json_object_object_get_ex(doc, "paths", &paths));
  size_t n;
  const dmh_api_route *r = dmh_api_routes(&n);
  CU_ASSERT_FATAL(n > 10);
  int missing = 0, extra = 0;
  /* every route is in the document, with its command */
  for (size_t i = 0; i < n; i++) {
    char m[16];
    lower(r[i].method, m, sizeof m);
    json_object *p = NULL, *op = NULL, *c = NULL;
    if (!json_object_object_get_ex(paths, r[i].path, &p) || !json_object_object_get_ex(p, m, &op)) {
      fprintf(stderr, "\n  route %s %s is not in docs/openapi.json", r[i].method, r[i].path);
      missing++;
      continue;
    }
    if (r[i].cmd) {
      CU_ASSERT_FATAL(json_object_object_get_ex(op, "x-dmhost-command", &c));
      if (strcmp(json_object_get_string(c), r[i].cmd) != 0) {
        fprintf(stderr, "\n  %s %s: the document says command %s, the table %s", r[i].method,
                r[i].path, json_object_get_string(c), r[i].cmd);
        missing++;
      }
    }
  }
  /* every operation of the document is a route */
  json_object_object_foreach(paths, path, methods) {
    json_object_object_foreach(methods, method, op) {
      (void)op;
      bool found = false;
      for (size_t i = 0; i < n && !found; i++) {
        char m[16];
        lower(r[i].method, m, sizeof m);
        found = strcmp(r[i].path, path) == 0 && strcmp(m, method) == 0;
      }
      if (!found) {
        fprintf(stderr, "\n  docs/openapi.json has %s %s, the route table does not", method, path);
        extra++;
      }
    }
  }
  CU_ASSERT_EQUAL(missing, 0);
  CU_ASSERT_EQUAL(extra, 0);
  json_object_put(doc);
}

/* Each route's command is one of control.c's table and takes every argument the route gives it
 * (help lists both). */
static void test_commands_exist(void) {
  json_object *req = json_tokener_parse("{\"cmd\": \"help\"}");
  json_object *resp = dmh_control_handle(NULL, req), *cmds;
  CU_ASSERT_FATAL(json_object_object_get_ex(resp, "commands", &cmds));
  size_t n;
  const dmh_api_route *r = dmh_api_routes(&n);
  for (size_t i = 0; i < n; i++) {
    if (!r[i].cmd)
      continue;
    json_object *found = NULL;
    for (size_t k = 0; k < json_object_array_length(cmds); k++) {
      json_object *c = json_object_array_get_idx(cmds, k), *name;
      json_object_object_get_ex(c, "cmd", &name);
      if (strcmp(json_object_get_string(name), r[i].cmd) == 0)
        json_object_object_get_ex(c, "args", &found);
    }
    const dmh_command *def = dmh_command_find(r[i].cmd);
    if (!found) {
      fprintf(stderr, "\n  %s %s: no command %s", r[i].method, r[i].path, r[i].cmd);
      CU_FAIL("a route's command is not in the table");
      continue;
    }
    for (size_t a = 0; a < DMH_API_MAX_ARGS && r[i].args[a].arg; a++) {
      if (r[i].args[a].from == DMH_API_REFUSED || r[i].args[a].from == DMH_API_IGNORED)
        continue; /* no argument: a member of DM's request refused or taken as nothing */
      bool takes = false;
      for (int k = 0; def && k < DMH_CMD_MAX_ARGS && def->args[k].name; k++)
        takes |= strcmp(def->args[k].name, r[i].args[a].arg) == 0 &&
                 (def->args[k].flags & DMH_ARG_MASTER); /* a master's argument (worker) */
      for (size_t k = 0; k < json_object_array_length(found); k++)
        takes |= strcmp(json_object_get_string(json_object_array_get_idx(found, k)),
                        r[i].args[a].arg) == 0;
      if (!takes)
        fprintf(stderr, "\n  %s %s: %s takes no argument %s", r[i].method, r[i].path, r[i].cmd,
                r[i].args[a].arg);
      CU_ASSERT(takes);
    }
  }
  json_object_put(resp);
  json_object_put(req);
}

static void test_match(void) {
  const dmh_api_route *route = NULL;
  char allow[64];
  dm_error err;
  CU_ASSERT_EQUAL(
      dmh_api_match("GET", "/api/v1/dmhost/tasks/t1/status", &route, allow, sizeof allow, &err), 0);
  CU_ASSERT_STRING_EQUAL(route->cmd, "query-status");
  CU_ASSERT_EQUAL(
      dmh_api_match("POST", "/api/v1/dmhost/tasks/check", &route, allow, sizeof allow, &err), 0);
  CU_ASSERT_STRING_EQUAL(route->cmd, "check-task");
  CU_ASSERT_EQUAL(dmh_api_match("GET", "/api/v1/dmhost/nope", &route, allow, sizeof allow, &err),
                  404);
  CU_ASSERT_EQUAL(err.code, DM_ERR_CONTROL_REQUEST);
  CU_ASSERT_EQUAL(dmh_api_match("PATCH", "/api/v1/dmhost/tasks", &route, allow, sizeof allow, &err),
                  405);
  CU_ASSERT_STRING_EQUAL(allow, "GET, POST, PUT");
  CU_ASSERT_EQUAL(
      dmh_api_match("POST", "/api/v1/dmhost/tasks//pause", &route, allow, sizeof allow, &err), 400);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "{task-name} is empty"));
  CU_ASSERT_EQUAL(
      dmh_api_match("POST", "/api/v1/dmhost/tasks/t1/pause/x", &route, allow, sizeof allow, &err),
      404);
}

static void test_request(void) {
  const dmh_api_route *route = NULL;
  char allow[64];
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_api_match("POST", "/api/v1/dmhost/tasks/t1/binlog/replace", &route,
                                      allow, sizeof allow, &err),
                        0);
  const char *body = "{\"binlog_pos\": \"mysql-bin.000001:4\", \"sqls\": [\"SELECT 1\"]}";
  char *line = dmh_api_request(route, "/api/v1/dmhost/tasks/t1/binlog/replace", NULL, NULL, body,
                               strlen(body), &err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(line);
  CU_ASSERT_STRING_EQUAL(line, "{\"cmd\":\"binlog\",\"args\":{\"op\":\"replace\",\"name\":\"t1\","
                               "\"binlogPos\":\"mysql-bin.000001:4\",\"sqls\":[\"SELECT 1\"]}}");
  free(line);
  const char *bad[] = {"{", "[1]", "{\"sqls\": \"SELECT 1\"}", "{\"sqls\": [], \"x\": 1}", "{}"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    line = dmh_api_request(route, "/api/v1/dmhost/tasks/t1/binlog/replace", NULL, NULL, bad[i],
                           strlen(bad[i]), &err);
    CU_ASSERT_PTR_NULL(line);
    CU_ASSERT_EQUAL(err.code, DM_ERR_CONTROL_REQUEST);
    free(line);
  }
}

/* shard-ddl-lock unlock over HTTP: the lock ID in the body (it holds backticks and dots), the
 * task from the path, force_remove a JSON boolean (a DMH_ARG_BOOL argument), a string refused */
static void test_request_bool_member(void) {
  const dmh_api_route *route = NULL;
  char allow[64];
  dm_error err;
  const char *url = "/api/v1/dmhost/tasks/t1/shard-ddl-locks/unlock";
  CU_ASSERT_EQUAL_FATAL(dmh_api_match("POST", url, &route, allow, sizeof allow, &err), 0);
  const char *body = "{\"lock_id\": \"t1-`s`.`t`\", \"owner\": \"eu\", \"force_remove\": true}";
  char *line = dmh_api_request(route, url, NULL, NULL, body, strlen(body), &err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(line);
  CU_ASSERT_STRING_EQUAL(line, "{\"cmd\":\"shard-ddl-lock\",\"args\":{\"op\":\"unlock\","
                               "\"task\":\"t1\",\"name\":\"t1-`s`.`t`\",\"owner\":\"eu\","
                               "\"force-remove\":true}}");
  free(line);
  body = "{\"lock_id\": \"t1-`s`.`t`\", \"force_remove\": \"yes\"}";
  line = dmh_api_request(route, url, NULL, NULL, body, strlen(body), &err);
  CU_ASSERT_PTR_NULL(line);
  CU_ASSERT_EQUAL(err.code, DM_ERR_CONTROL_REQUEST);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "true or false"));
  free(line);
}

/* ---- DM's answers (http_dm.h) from canned socket answers ---- */

static const dmh_api_route *route_of(const char *method, const char *url) {
  const dmh_api_route *route = NULL;
  char allow[64];
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_api_match(method, url, &route, allow, sizeof allow, &err), 0);
  return route;
}

/* dmh_dm_answer of `answer` on `route`: the parsed body (NULL when empty), *status. */
static json_object *dm_answer_to(const dmh_api_route *route, const char *answer,
                                 const char *request, unsigned *status, bool *empty) {
  char *body = dmh_dm_answer(route, strdup(answer), request, status, empty);
  json_object *o = body ? json_tokener_parse(body) : NULL;
  CU_ASSERT(*empty || o);
  free(body);
  return o;
}

static json_object *dm_answer(const dmh_api_route *route, const char *answer, unsigned *status,
                              bool *empty) {
  return dm_answer_to(route, answer, NULL, status, empty);
}

static const char *get_str(json_object *o, const char *key) {
  json_object *v = NULL;
  return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : NULL;
}

static int64_t get_int(json_object *o, const char *key) {
  json_object *v = NULL;
  return json_object_object_get_ex(o, key, &v) ? json_object_get_int64(v) : -1;
}

static json_object *get(json_object *o, const char *key) {
  json_object *v = NULL;
  return json_object_object_get_ex(o, key, &v) ? v : NULL;
}

#define NOT_FOUND_ANSWER                                                                           \
  "{\"result\": false, \"msg\": \"query-status: task \\\"t9\\\" not found\", \"error\": "          \
  "{\"ErrCode\": 14003, \"ErrClass\": \"control\", \"ErrScope\": \"internal\", \"ErrLevel\": "     \
  "\"low\", \"Message\": \"task \\\"t9\\\" not found\", \"RawCause\": \"\", \"Workaround\": "      \
  "\"Use query-status to list the tasks.\", \"Resumable\": false}}"

/* A failure: 400 with DM's ErrorWithMessage in terror's format (RawCause left out when empty, as
 * terror does); DMH_DM_ONE's routes answer DM_ERR_NOT_FOUND with 404; others stay 400. */
static void test_dm_error(void) {
  unsigned status = 0;
  bool empty = true;
  json_object *o =
      dm_answer(route_of("DELETE", "/api/v1/tasks/t9"), NOT_FOUND_ANSWER, &status, &empty);
  CU_ASSERT_EQUAL(status, 400);
  CU_ASSERT_FALSE(empty);
  CU_ASSERT_EQUAL(get_int(o, "error_code"), 14003);
  CU_ASSERT_STRING_EQUAL(get_str(o, "error_msg"),
                         "[code=14003:class=control:scope=internal:level=low], Message: task "
                         "\"t9\" not found, Workaround: Use query-status to list the tasks.");
  CU_ASSERT_EQUAL(json_object_object_length(o), 2);
  json_object_put(o);
  dmh_api_route one = *route_of("DELETE", "/api/v1/tasks/t9");
  one.not_found_404 = true;
  o = dm_answer(&one, NOT_FOUND_ANSWER, &status, &empty);
  CU_ASSERT_EQUAL(status, 404);
  json_object_put(o);
  /* a RawCause is said */
  char *body = dmh_dm_refusal(strdup(
      "{\"result\": false, \"msg\": \"m\", \"error\": {\"ErrCode\": 14002, \"ErrClass\": "
      "\"control\", \"ErrScope\": \"internal\", \"ErrLevel\": \"medium\", \"Message\": \"m\", "
      "\"RawCause\": \"why\", \"Workaround\": \"\"}}"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(body);
  o = json_tokener_parse(body);
  CU_ASSERT_STRING_EQUAL(get_str(o, "error_msg"),
                         "[code=14002:class=control:scope=internal:level=medium], Message: m, "
                         "RawCause: why");
  CU_ASSERT_EQUAL(get_int(o, "error_code"), 14002);
  json_object_put(o);
  free(body);
}

/* EMPTY: DM's status and no body, 204 for the deletes, 200 for the relay and task operations. */
static void test_dm_empty(void) {
  unsigned status = 0;
  bool empty = false;
  const char *ok = "{\"result\": true, \"msg\": \"\", \"sources\": []}";
  CU_ASSERT_PTR_NULL(dm_answer(route_of("DELETE", "/api/v1/tasks/t1"), ok, &status, &empty));
  CU_ASSERT(empty);
  CU_ASSERT_EQUAL(status, 204);
  CU_ASSERT_PTR_NULL(dm_answer(route_of("DELETE", "/api/v1/sources/s1"), ok, &status, &empty));
  CU_ASSERT_EQUAL(status, 204);
  const char *twohundred[][2] = {
      {"POST", "/api/v1/sources/s1/relay/enable"}, {"POST", "/api/v1/sources/s1/relay/disable"},
      {"POST", "/api/v1/sources/s1/relay/purge"},  {"POST", "/api/v1/sources/s1/transfer"},
      {"POST", "/api/v1/tasks/t1/start"},          {"POST", "/api/v1/tasks/t1/stop"}};
  for (size_t i = 0; i < sizeof twohundred / sizeof twohundred[0]; i++) {
    empty = false;
    CU_ASSERT_PTR_NULL(
        dm_answer(route_of(twohundred[i][0], twohundred[i][1]), ok, &status, &empty));
    CU_ASSERT(empty);
    CU_ASSERT_EQUAL(status, 200);
  }
}

/* GetTaskStatusResponse from query-status NAME: DM's names, the stage map (New, Pausing,
 * Resuming, Stopping into DM's enum), each unit's status, the errors as terror lines. */
static void test_dm_task_status(void) {
  const char *answer =
      "{\"result\": true, \"msg\": \"\", \"sources\": ["
      "{\"result\": true, \"sourceStatus\": {\"source\": \"s1\", \"worker\": \"w1\", "
      "\"relayStatus\": null}, \"subTaskStatus\": [{\"name\": \"t1\", \"source\": \"s1\", "
      "\"stage\": \"New\", \"unit\": \"Dump\", \"result\": null, \"unresolvedDDLLockID\": \"\", "
      "\"dumpStatus\": {\"totalTables\": 4, \"completedTables\": 1, \"finishedBytes\": 100, "
      "\"finishedRows\": 25, \"totalRows\": 100, \"bps\": 7}}]},"
      "{\"result\": true, \"sourceStatus\": {\"source\": \"s2\", \"worker\": \"w1\", "
      "\"relayStatus\": {\"stage\": \"Running\"}}, \"subTaskStatus\": [{\"name\": \"t1\", "
      "\"source\": \"s2\", \"stage\": \"Pausing\", \"unit\": \"Sync\", \"result\": "
      "{\"isCanceled\": "
      "false, \"errors\": [{\"ErrCode\": 36001, \"ErrClass\": \"sync-unit\", \"ErrScope\": "
      "\"downstream\", \"ErrLevel\": \"high\", \"Message\": \"boom\", \"RawCause\": \"\", "
      "\"Workaround\": \"\"}]}, \"syncStatus\": {\"totalRows\": 9, \"totalRps\": 3, \"recentRps\": "
      "2, \"masterBinlog\": \"(mysql-bin.000002, 400)\", \"masterBinlogGtid\": \"0-1-9\", "
      "\"syncerBinlog\": \"(mysql-bin.000002, 300)\", \"syncerBinlogGtid\": \"0-1-8\", "
      "\"synced\": false, \"secondsBehindMaster\": 5}}]}]}";
  unsigned status = 0;
  bool empty = true;
  json_object *o = dm_answer(route_of("GET", "/api/v1/tasks/t1/status"), answer, &status, &empty);
  CU_ASSERT_EQUAL(status, 200);
  CU_ASSERT_EQUAL(get_int(o, "total"), 2);
  json_object *data = get(o, "data");
  CU_ASSERT_FATAL(data && json_object_array_length(data) == 2);
  json_object *a = json_object_array_get_idx(data, 0), *b = json_object_array_get_idx(data, 1);
  CU_ASSERT_STRING_EQUAL(get_str(a, "name"), "t1");
  CU_ASSERT_STRING_EQUAL(get_str(a, "source_name"), "s1");
  CU_ASSERT_STRING_EQUAL(get_str(a, "worker_name"), "w1");
  CU_ASSERT_STRING_EQUAL(get_str(a, "stage"), "Stopped"); /* New */
  CU_ASSERT_STRING_EQUAL(get_str(a, "unit"), "Dump");
  json_object *d = get(a, "dump_status");
  CU_ASSERT_EQUAL(get_int(d, "total_tables"), 4);
  CU_ASSERT_EQUAL(get_int(d, "estimate_total_rows"), 100);
  CU_ASSERT_STRING_EQUAL(get_str(d, "progress"), "25.00 %");
  CU_ASSERT_PTR_NULL(get(a, "error_msg"));
  CU_ASSERT_STRING_EQUAL(get_str(b, "stage"), "Paused"); /* Pausing */
  json_object *s = get(b, "sync_status");
  CU_ASSERT_EQUAL(get_int(s, "total_events"), 9);
  CU_ASSERT_STRING_EQUAL(get_str(s, "syncer_binlog"), "(mysql-bin.000002, 300)");
  CU_ASSERT_STRING_EQUAL(get_str(s, "master_binlog_gtid"), "0-1-9");
  CU_ASSERT_STRING_EQUAL(get_str(s, "binlog_type"), "local"); /* its source's relay runs */
  CU_ASSERT_EQUAL(json_object_array_length(get(s, "blocking_ddls")), 0);
  CU_ASSERT_EQUAL(get_int(s, "seconds_behind_master"), 5);
  CU_ASSERT_STRING_EQUAL(get_str(b, "error_msg"),
                         "[code=36001:class=sync-unit:scope=downstream:level=high], Message: "
                         "boom\n");
  json_object_put(o);
}

/* GetSourceStatusResponse from operate-source show -s, and the cluster's lists from list-member. */
static void test_dm_source_and_members(void) {
  const char *answer =
      "{\"result\": true, \"msg\": \"\", \"sources\": [{\"result\": true, \"source\": \"s1\", "
      "\"worker\": \"w1\", \"relayStatus\": {\"masterBinlog\": \"(mysql-bin.000001, 4)\", "
      "\"masterBinlogGtid\": \"\", \"relayBinlogGtid\": \"0-1-2\", \"relaySubDir\": "
      "\"mysql-bin.000001\", \"relayCatchUpMaster\": true, \"stage\": \"Running\"}}]}";
  unsigned status = 0;
  bool empty = true;
  json_object *o = dm_answer(route_of("GET", "/api/v1/sources/s1/status"), answer, &status, &empty);
  CU_ASSERT_EQUAL(status, 200);
  CU_ASSERT_EQUAL(get_int(o, "total"), 1);
  json_object *s = json_object_array_get_idx(get(o, "data"), 0), *r = get(s, "relay_status");
  CU_ASSERT_STRING_EQUAL(get_str(s, "source_name"), "s1");
  CU_ASSERT_STRING_EQUAL(get_str(s, "worker_name"), "w1");
  CU_ASSERT_STRING_EQUAL(get_str(r, "relay_binlog_gtid"), "0-1-2");
  CU_ASSERT_STRING_EQUAL(get_str(r, "relay_dir"), "mysql-bin.000001");
  CU_ASSERT(json_object_get_boolean(get(r, "relay_catch_up_master")));
  json_object_put(o);
  const char *members =
      "{\"result\": true, \"msg\": \"\", \"members\": [{\"leader\": {\"name\": \"m1\"}}, "
      "{\"master\": {\"msg\": \"\", \"masters\": [{\"name\": \"m1\", \"addr\": \"a:1\", "
      "\"alive\": true, \"leader\": true}]}}, {\"worker\": {\"msg\": \"\", \"workers\": "
      "[{\"name\": \"w1\", \"addr\": \"b:2\", \"stage\": \"bound\", \"source\": \"s1\"}]}}]}";
  o = dm_answer(route_of("GET", "/api/v1/cluster/masters"), members, &status, &empty);
  CU_ASSERT_EQUAL(get_int(o, "total"), 1);
  json_object *m = json_object_array_get_idx(get(o, "data"), 0);
  CU_ASSERT_STRING_EQUAL(get_str(m, "addr"), "a:1");
  CU_ASSERT(json_object_get_boolean(get(m, "leader")) && json_object_get_boolean(get(m, "alive")));
  json_object_put(o);
  o = dm_answer(route_of("GET", "/api/v1/cluster/workers"), members, &status, &empty);
  json_object *w = json_object_array_get_idx(get(o, "data"), 0);
  CU_ASSERT_STRING_EQUAL(get_str(w, "bound_stage"), "bound");
  CU_ASSERT_STRING_EQUAL(get_str(w, "bound_source_name"), "s1");
  json_object_put(o);
}

/* The canned query of dm_request: "source_name_list" twice, "more" once. */
static size_t fake_query(void *ud, const char *name, const char **values, size_t max) {
  const char *more = ud;
  size_t n = 0;
  if (strcmp(name, "source_name_list") == 0) {
    const char *v[] = {"s1", "s2"};
    for (; n < 2 && n < max; n++)
      values[n] = v[n];
  } else if (strcmp(name, "more") == 0 && max > 0) {
    values[n++] = more;
  }
  return n;
}

static char *dm_request(const char *method, const char *url, const char *body, void *ud,
                        dm_error *err) {
  const dmh_api_route *route = route_of(method, url);
  return dmh_api_request(route, url, fake_query, ud, body, body ? strlen(body) : 0, err);
}

/* DM's request bodies and queries: a body array (DMH_BL) and a repeated query (DMH_QL) into a
 * list argument, a folder joined (DMH_BD), members refused by name (DMH_X) unless they say
 * nothing, one taken with no effect (DMH_I), a query boolean (DMH_QB), DM's optional members
 * (DMH_BO) left out when they say nothing. */
static void test_dm_request(void) {
  dm_error err;
  char *line = dm_request("POST", "/api/v1/tasks/t1/start",
                          "{\"source_name_list\": [\"s1\"], \"remove_meta\": false, "
                          "\"start_time\": \"\"}",
                          NULL, &err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(line);
  CU_ASSERT_STRING_EQUAL(line, "{\"cmd\":\"resume-task\",\"args\":{\"name\":\"t1\",\"source\":"
                               "[\"s1\"]}}");
  free(line);
  /* DM's start options (issue 23): into resume-task's arguments, as given (the daemon judges) */
  line = dm_request("POST", "/api/v1/tasks/t1/start",
                    "{\"start_time\": \"2024-01-01 00:00:00\", \"remove_meta\": true, "
                    "\"safe_mode_time_duration\": \"90s\"}",
                    NULL, &err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(line);
  CU_ASSERT_STRING_EQUAL(line, "{\"cmd\":\"resume-task\",\"args\":{\"name\":\"t1\","
                               "\"remove-meta\":true,\"start-time\":\"2024-01-01 00:00:00\","
                               "\"safe-mode-duration\":\"90s\"}}");
  free(line);
  line =
      dm_request("POST", "/api/v1/tasks/t1/start", "{\"safe_mode_time_duration\": 60}", NULL, &err);
  CU_ASSERT_PTR_NULL(line);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "\"safe_mode_time_duration\" must be a string"));
  line = dm_request("POST", "/api/v1/tasks/t1/start", "{\"source_name_list\": \"s1\"}", NULL, &err);
  CU_ASSERT_PTR_NULL(line);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "an array of strings"));
  line = dm_request("POST", "/api/v1/tasks/t1/stop", "{\"timeout_duration\": \"15s\"}", NULL, &err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(line);
  CU_ASSERT_STRING_EQUAL(line, "{\"cmd\":\"pause-task\",\"args\":{\"name\":\"t1\"}}");
  free(line);
  line = dm_request("GET", "/api/v1/tasks/t1/status", NULL, NULL, &err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(line);
  CU_ASSERT_STRING_EQUAL(line, "{\"cmd\":\"query-status\",\"args\":{\"name\":\"t1\",\"source\":"
                               "[\"s1\",\"s2\"]}}");
  free(line);
  line = dm_request("POST", "/api/v1/sources/s1/relay/purge",
                    "{\"relay_binlog_name\": \"mysql-bin.000003\", \"relay_dir\": \"sub.000001/\"}",
                    NULL, &err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(line);
  CU_ASSERT_STRING_EQUAL(line, "{\"cmd\":\"purge-relay\",\"args\":{\"source\":\"s1\",\"file\":"
                               "\"sub.000001\\/mysql-bin.000003\"}}"); /* json-c escapes '/' */
  free(line);
  line = dm_request("POST", "/api/v1/sources/s1/relay/enable",
                    "{\"relay_binlog_name\": null, \"relay_dir\": \"./relay_log\"}", NULL, &err);
  CU_ASSERT_PTR_NULL(line);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "\"relay_dir\" is not done"));
  line = dm_request("GET", "/api/v1/cluster/masters", NULL, NULL, &err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(line);
  CU_ASSERT_STRING_EQUAL(line, "{\"cmd\":\"list-member\",\"args\":{\"master\":true}}");
  free(line);
  /* DMH_QB on a hand-made route: query-status's "more" (a DMH_ARG_BOOL) */
  const dmh_api_route qb = {"GET",
                            "/x",
                            "query-status",
                            DMH_API_OWN,
                            200,
                            false,
                            {{"more", DMH_API_QUERY_BOOL, "more", false, NULL}}};
  line = dmh_api_request(&qb, "/x", fake_query, "true", NULL, 0, &err);
  CU_ASSERT_STRING_EQUAL(line, "{\"cmd\":\"query-status\",\"args\":{\"more\":true}}");
  free(line);
  line = dmh_api_request(&qb, "/x", fake_query, "yes", NULL, 0, &err);
  CU_ASSERT_PTR_NULL(line);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "must be true or false"));
}

/* DMH_T: a DM object of the body through its kind's translator (JSON: its own text; the whole
 * body with a NULL member, every member then the translator's), a kind whose translator is not
 * built refused naming it, a member that is not an object refused. */
static void test_dm_translated(void) {
  dm_error err;
  const dmh_api_route whole = {"PUT",
                               "/x",
                               "check-task",
                               DMH_API_EMPTY,
                               200,
                               false,
                               {{"content", DMH_API_TRANSLATED, NULL, true, "JSON"}}};
  const char *body = "{\"cluster_id\": 7, \"topology\": {\"a\": [1, \"/x\"]}}";
  char *line = dmh_api_request(&whole, "/x", NULL, NULL, body, strlen(body), &err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(line);
  json_object *req = json_tokener_parse(line), *args = get(req, "args");
  json_object *sent = json_tokener_parse(get_str(args, "content")),
              *want = json_tokener_parse(body);
  CU_ASSERT(sent && json_object_equal(sent, want));
  json_object_put(sent);
  json_object_put(want);
  json_object_put(req);
  free(line);
  const dmh_api_route task = {"POST",
                              "/y",
                              "start-task",
                              DMH_API_EMPTY,
                              201,
                              false,
                              {{"content", DMH_API_TRANSLATED, "task", true, "NOPE"}}};
  body = "{\"task\": {\"name\": \"t1\"}}";
  line = dmh_api_request(&task, "/y", NULL, NULL, body, strlen(body), &err);
  CU_ASSERT_PTR_NULL(line);
  CU_ASSERT_EQUAL(err.code, DM_ERR_CONTROL_REQUEST);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "no NOPE translator"));
  body = "{\"task\": \"t1\"}";
  line = dmh_api_request(&task, "/y", NULL, NULL, body, strlen(body), &err);
  CU_ASSERT_PTR_NULL(line);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "the body's \"task\" must be a JSON object"));
  body = "{\"task\": {}, \"other\": 1}";
  line = dmh_api_request(&task, "/y", NULL, NULL, body, strlen(body), &err);
  CU_ASSERT_PTR_NULL(line);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "\"other\" this route does not take"));
}

/* A small DM Task (DM's fixture's shape, one source, no TLS) */
#define WIRE_TASK                                                                                  \
  "{\"name\": \"wire_t\", \"task_mode\": \"all\", \"enhance_online_schema_change\": true, "        \
  "\"on_duplicate\": \"replace\", \"target_config\": {\"host\": \"127.0.0.1\", \"port\": 3307, "   \
  "\"user\": \"root\", \"password\": \"pw\"}, \"source_config\": {\"source_conf\": "               \
  "[{\"source_name\": \"s1\"}]}, \"table_migrate_rule\": [{\"source\": {\"source_name\": \"s1\", " \
  "\"schema\": \"wire_db\", \"table\": \"\"}}]}"

/* args of the request line `line` (freed). */
static json_object *line_args(char *line) {
  CU_ASSERT_PTR_NOT_NULL_FATAL(line);
  json_object *req = json_tokener_parse(line), *args = json_object_get(get(req, "args"));
  json_object_put(req);
  free(line);
  return args;
}

/* The routes taking DM's Task or Source: the object through its translator into DM's YAML text
 * (a route without the wiring refuses, naming the missing translator), the fixed arguments
 * (start-task created Stopped, the YAML copy's name), DELETE's force and keep_meta defaults. */
static void test_dm_wired_requests(void) {
  dm_error err;
  json_object *args =
      line_args(dm_request("POST", "/api/v1/tasks", "{\"task\": " WIRE_TASK "}", NULL, &err));
  CU_ASSERT_STRING_EQUAL(get_str(args, "stage"), "Stopped");
  CU_ASSERT_STRING_EQUAL(get_str(args, "path"), "/api/v1/task.yaml");
  const char *yaml = get_str(args, "content");
  CU_ASSERT_PTR_NOT_NULL_FATAL(yaml);
  CU_ASSERT_PTR_NOT_NULL(strstr(yaml, "name: wire_t"));
  CU_ASSERT_PTR_NOT_NULL(strstr(yaml, "task-mode: all"));
  CU_ASSERT_PTR_NOT_NULL(strstr(yaml, "mysql-instances"));
  json_object_put(args);
  /* a string of the Task cannot add a key to the YAML text: the emitter quotes it (the attack of
   * a name carrying "\nunit-paths: ...", which the submitted trust refuses when it is a key) */
  args =
      line_args(dm_request("POST", "/api/v1/tasks",
                           "{\"task\": {\"name\": \"x\\nunit-paths:\\n  dump: /tmp/evil.so\", "
                           "\"task_mode\": \"all\", \"enhance_online_schema_change\": true, "
                           "\"on_duplicate\": \"replace\", \"target_config\": {\"host\": \"h\", "
                           "\"port\": 1, \"user\": \"u\", \"password\": \"\"}, \"source_config\": "
                           "{\"source_conf\": [{\"source_name\": \"s1\"}]}, "
                           "\"table_migrate_rule\": []}}",
                           NULL, &err));
  yaml = get_str(args, "content");
  CU_ASSERT_PTR_NOT_NULL_FATAL(yaml);
  CU_ASSERT_PTR_NULL(strstr(yaml, "\nunit-paths:"));
  CU_ASSERT_PTR_NOT_NULL(strstr(yaml, "name: "));
  json_object_put(args);
  /* the Task's own refusal, by JSON path */
  char *line = dm_request("POST", "/api/v1/tasks", "{\"task\": {\"name\": 7}}", NULL, &err);
  CU_ASSERT_PTR_NULL(line);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "name"));
  args =
      line_args(dm_request("PUT", "/api/v1/tasks/wire_t", "{\"task\": " WIRE_TASK "}", NULL, &err));
  CU_ASSERT_STRING_EQUAL(get_str(args, "name"), "wire_t");
  CU_ASSERT_PTR_NOT_NULL(strstr(get_str(args, "content"), "name: wire_t"));
  json_object_put(args);
  /* converters: a Task as its JSON text (convert-task parses it), or a file's text */
  args = line_args(
      dm_request("POST", "/api/v1/tasks/converters", "{\"task\": " WIRE_TASK "}", NULL, &err));
  json_object *sent = json_tokener_parse(get_str(args, "task")),
              *want = json_tokener_parse(WIRE_TASK);
  CU_ASSERT(sent && json_object_equal(sent, want));
  CU_ASSERT_PTR_NULL(get(args, "content"));
  json_object_put(sent);
  json_object_put(want);
  json_object_put(args);
  args = line_args(dm_request("POST", "/api/v1/tasks/converters",
                              "{\"task_config_file\": \"name: t\\n\"}", NULL, &err));
  CU_ASSERT_STRING_EQUAL(get_str(args, "content"), "name: t\n");
  CU_ASSERT_PTR_NULL(get(args, "task"));
  json_object_put(args);
  /* a Source */
  const char *src = "{\"source\": {\"source_name\": \"s1\", \"host\": \"127.0.0.1\", \"port\": "
                    "3306, \"user\": \"root\", \"password\": \"pw\", \"enable_gtid\": false, "
                    "\"enable\": true}, \"worker_name\": \"\"}";
  args = line_args(dm_request("POST", "/api/v1/sources", src, NULL, &err));
  CU_ASSERT_STRING_EQUAL(get_str(args, "op"), "create");
  CU_ASSERT_STRING_EQUAL(get_str(args, "path"), "/api/v1/source.yaml");
  CU_ASSERT_PTR_NOT_NULL(strstr(get_str(args, "content"), "source-id: s1"));
  json_object_put(args);
  line = dm_request("POST", "/api/v1/sources",
                    "{\"source\": {\"source_name\": \"s1\"}, \"worker_name\": \"w9\"}", NULL, &err);
  CU_ASSERT_PTR_NULL(line);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "\"worker_name\" is not done"));
  /* DELETE: DM's defaults (force false, keep_meta false: remove-meta true), then the query's */
  args = line_args(dm_request("DELETE", "/api/v1/tasks/wire_t", NULL, NULL, &err));
  CU_ASSERT_STRING_EQUAL(json_object_to_json_string_ext(args, JSON_C_TO_STRING_PLAIN),
                         "{\"name\":\"wire_t\",\"force\":\"false\",\"remove-meta\":\"true\"}");
  json_object_put(args);
}

/* The query of test_dm_delete_query: force=true, keep_meta=true. */
static size_t keep_query(void *ud, const char *name, const char **values, size_t max) {
  (void)ud;
  if (max == 0 || (strcmp(name, "force") != 0 && strcmp(name, "keep_meta") != 0))
    return 0;
  values[0] = "true";
  return 1;
}

static void test_dm_delete_query(void) {
  dm_error err;
  const char *url = "/api/v1/tasks/wire_t";
  json_object *args =
      line_args(dmh_api_request(route_of("DELETE", url), url, keep_query, NULL, NULL, 0, &err));
  CU_ASSERT(json_object_get_boolean(get(args, "force")));
  CU_ASSERT(json_object_is_type(get(args, "remove-meta"), json_type_boolean));
  CU_ASSERT_FALSE(json_object_get_boolean(get(args, "remove-meta")));
  json_object_put(args);
}

/* The answers echoing the request (OperateTaskResponse, Source) and convert-task's. */
static void test_dm_wired_answers(void) {
  unsigned status = 0;
  bool empty = true;
  const char *ok = "{\"result\": true, \"msg\": \"\"}";
  const char *req = "{\"task\": " WIRE_TASK "}";
  json_object *o = dm_answer_to(route_of("POST", "/api/v1/tasks"), ok, req, &status, &empty);
  CU_ASSERT_EQUAL(status, 201);
  CU_ASSERT_STRING_EQUAL(get_str(o, "check_result"), "pre-check is passed. ");
  json_object *want = json_tokener_parse(WIRE_TASK);
  CU_ASSERT(json_object_equal(get(o, "task"), want));
  json_object_put(o);
  /* the precheck's warnings: DM's other text, the checker's JSON after it */
  o = dm_answer_to(route_of("POST", "/api/v1/tasks"),
                   "{\"result\": true, \"msg\": \"\", \"checkResult\": {\"passed\": true}}", req,
                   &status, &empty);
  CU_ASSERT_STRING_EQUAL(get_str(o, "check_result"),
                         "fail to check synchronization configuration with type: no errors but "
                         "some warnings\n detail: {\"passed\":true}");
  json_object_put(o);
  o = dm_answer_to(route_of("PUT", "/api/v1/tasks/wire_t"), ok, req, &status, &empty);
  CU_ASSERT_EQUAL(status, 200);
  CU_ASSERT(json_object_equal(get(o, "task"), want));
  json_object_put(o);
  json_object_put(want);
  o = dm_answer_to(route_of("POST", "/api/v1/tasks"), NOT_FOUND_ANSWER, req, &status, &empty);
  CU_ASSERT_EQUAL(status, 400);
  CU_ASSERT_EQUAL(get_int(o, "error_code"), 14003);
  json_object_put(o);
  o = dm_answer_to(route_of("POST", "/api/v1/sources"), ok,
                   "{\"source\": {\"source_name\": \"s1\", \"password\": \"pw\"}}", &status,
                   &empty);
  CU_ASSERT_EQUAL(status, 201);
  CU_ASSERT_STRING_EQUAL(get_str(o, "source_name"), "s1");
  CU_ASSERT_STRING_EQUAL(get_str(o, "password"), "******");
  CU_ASSERT(json_object_get_boolean(get(o, "enable")));
  json_object_put(o);
  o = dm_answer_to(route_of("POST", "/api/v1/tasks/converters"),
                   "{\"result\": true, \"msg\": \"\", \"task\": {\"name\": \"t\"}, "
                   "\"task_config_file\": \"name: t\\n\"}",
                   NULL, &status, &empty);
  CU_ASSERT_EQUAL(status, 201);
  CU_ASSERT_STRING_EQUAL(get_str(get(o, "task"), "name"), "t");
  CU_ASSERT_STRING_EQUAL(get_str(o, "task_config_file"), "name: t\n");
  CU_ASSERT_EQUAL(json_object_object_length(o), 2);
  json_object_put(o);
}

/* PUT of a source: operate-source update naming the path's source; a null or absent password is
 * DMH_BN's keep-password true, a given one false. */
static void test_dm_source_update(void) {
  dm_error err;
  const char *url = "/api/v1/sources/s1";
  const char *with_pw = "{\"source\": {\"source_name\": \"s1\", \"host\": \"h\", \"port\": 3306, "
                        "\"user\": \"u\", \"password\": \"pw\", \"enable_gtid\": false, "
                        "\"enable\": true}}";
  json_object *args = line_args(dm_request("PUT", url, with_pw, NULL, &err));
  CU_ASSERT_STRING_EQUAL(get_str(args, "op"), "update");
  CU_ASSERT_STRING_EQUAL(get_str(args, "source"), "s1");
  CU_ASSERT(json_object_is_type(get(args, "keep-password"), json_type_boolean));
  CU_ASSERT_FALSE(json_object_get_boolean(get(args, "keep-password")));
  CU_ASSERT_PTR_NOT_NULL(strstr(get_str(args, "content"), "source-id: s1"));
  json_object_put(args);
  const char *bodies[] = {
      "{\"source\": {\"source_name\": \"s1\", \"host\": \"h\", \"port\": 3306, \"user\": \"u\", "
      "\"password\": null, \"enable_gtid\": false, \"enable\": true}}",
      "{\"source\": {\"source_name\": \"s1\", \"host\": \"h\", \"port\": 3306, \"user\": \"u\", "
      "\"enable_gtid\": false, \"enable\": true}}"};
  for (size_t i = 0; i < 2; i++) {
    args = line_args(dm_request("PUT", url, bodies[i], NULL, &err));
    CU_ASSERT(json_object_get_boolean(get(args, "keep-password")));
    CU_ASSERT_PTR_NULL(strstr(get_str(args, "content"), "password"));
    json_object_put(args);
  }
  /* enable and disable: the path's source, no body */
  args = line_args(dm_request("POST", "/api/v1/sources/s1/disable", NULL, NULL, &err));
  CU_ASSERT_STRING_EQUAL(json_object_to_json_string_ext(args, JSON_C_TO_STRING_PLAIN),
                         "{\"op\":\"disable\",\"source\":\"s1\"}");
  json_object_put(args);
}

/* The tracker's routes: binlog-schema's ops from the paths; PUT's schema_source (sql by default)
 * and sql_content into schema-source and content; flush and sync taken. */
static void test_dm_table_structure_requests(void) {
  dm_error err;
  const char *url = "/api/v1/tasks/t1/sources/s1/schemas/db1/tb1";
  json_object *args =
      line_args(dm_request("GET", "/api/v1/tasks/t1/sources/s1/schemas/db1", NULL, NULL, &err));
  CU_ASSERT_STRING_EQUAL(
      json_object_to_json_string_ext(args, JSON_C_TO_STRING_PLAIN),
      "{\"op\":\"list\",\"name\":\"t1\",\"source\":\"s1\",\"database\":\"db1\"}");
  json_object_put(args);
  args = line_args(dm_request("PUT", url,
                              "{\"sql_content\": \"CREATE TABLE tb1 (a INT)\", \"flush\": true, "
                              "\"sync\": true}",
                              NULL, &err));
  CU_ASSERT_STRING_EQUAL(get_str(args, "op"), "update");
  CU_ASSERT_STRING_EQUAL(get_str(args, "schema-source"), "sql");
  CU_ASSERT_STRING_EQUAL(get_str(args, "content"), "CREATE TABLE tb1 (a INT)");
  CU_ASSERT_STRING_EQUAL(get_str(args, "table"), "tb1");
  CU_ASSERT_PTR_NULL(get(args, "flush"));
  json_object_put(args);
  args = line_args(dm_request("PUT", url, "{\"schema_source\": \"upstream\"}", NULL, &err));
  CU_ASSERT_STRING_EQUAL(get_str(args, "schema-source"), "upstream");
  json_object_put(args);
  args = line_args(dm_request("DELETE", url, NULL, NULL, &err));
  CU_ASSERT_STRING_EQUAL(get_str(args, "op"), "delete");
  json_object_put(args);
  /* a member DM's request does not have */
  CU_ASSERT_PTR_NULL(dm_request("PUT", url, "{\"schema\": \"x\"}", NULL, &err));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "\"schema\""));
}

/* The name lists (bare arrays), a table's structure and the migrate targets, from the answers of
 * source-schemas, binlog-schema and task-tables. */
static void test_dm_names_answers(void) {
  unsigned status = 0;
  bool empty = true;
  json_object *o = dm_answer(route_of("GET", "/api/v1/sources/s1/schemas"),
                             "{\"result\": true, \"msg\": \"\", \"schemas\": [\"db1\", \"db2\"]}",
                             &status, &empty);
  CU_ASSERT_EQUAL(status, 200);
  CU_ASSERT_STRING_EQUAL(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
                         "[\"db1\",\"db2\"]");
  json_object_put(o);
  o = dm_answer(route_of("GET", "/api/v1/sources/s1/schemas/db1"),
                "{\"result\": true, \"msg\": \"\", \"tables\": [\"t1\"]}", &status, &empty);
  CU_ASSERT_STRING_EQUAL(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN), "[\"t1\"]");
  json_object_put(o);
  const char *tracker = "{\"result\": true, \"msg\": \"\", \"task\": \"t1\", \"database\": "
                        "\"db1\", \"sources\": [{\"result\": true, \"source\": \"s1\", \"msg\": "
                        "\"[\\\"tb1\\\"]\", \"items\": [\"tb1\", \"tb2\"]}]}";
  o = dm_answer(route_of("GET", "/api/v1/tasks/t1/sources/s1/schemas/db1"), tracker, &status,
                &empty);
  CU_ASSERT_STRING_EQUAL(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
                         "[\"tb1\",\"tb2\"]");
  json_object_put(o);
  o = dm_answer(route_of("GET", "/api/v1/tasks/t1/sources/s1/schemas/db1/tb1"),
                "{\"result\": true, \"msg\": \"\", \"task\": \"t1\", \"database\": \"db1\", "
                "\"table\": \"tb1\", \"sources\": [{\"result\": true, \"source\": \"s1\", "
                "\"items\": [\"CREATE TABLE `tb1` (`a` int)\"]}]}",
                &status, &empty);
  CU_ASSERT_STRING_EQUAL(get_str(o, "schema_name"), "db1");
  CU_ASSERT_STRING_EQUAL(get_str(o, "table_name"), "tb1");
  CU_ASSERT_STRING_EQUAL(get_str(o, "schema_create_sql"), "CREATE TABLE `tb1` (`a` int)");
  json_object_put(o);
  o = dm_answer(route_of("GET", "/api/v1/tasks/t1/sources/s1/migrate_targets"),
                "{\"result\": true, \"msg\": \"\", \"targets\": [{\"source_schema\": \"db1\", "
                "\"source_table\": \"t1\", \"target_schema\": \"db9\", \"target_table\": "
                "\"t9\"}]}",
                &status, &empty);
  CU_ASSERT_EQUAL(get_int(o, "total"), 1);
  json_object *t = json_object_array_get_idx(get(o, "data"), 0);
  CU_ASSERT_STRING_EQUAL(get_str(t, "source_table"), "t1");
  CU_ASSERT_STRING_EQUAL(get_str(t, "target_schema"), "db9");
  json_object_put(o);
  o = dm_answer(route_of("DELETE", "/api/v1/tasks/t1/sources/s1/schemas/db1/tb1"),
                "{\"result\": true, \"msg\": \"\"}", &status, &empty);
  CU_ASSERT_EQUAL(status, 204);
  CU_ASSERT(empty);
}

/* api-objects' answers as DM's lists and objects: status_list (and a source's task_name_list)
 * only when the entry has its status; one object by name; an unknown one 404. The request: the
 * list filters from the query into the command's arguments. */
static void test_dm_objects(void) {
  unsigned status = 0;
  bool empty = true;
  const char *sources =
      "{\"result\": true, \"msg\": \"\", \"sources\": [{\"source\": {\"source_name\": \"s1\", "
      "\"password\": \"******\"}, \"status\": {\"source\": \"s1\", \"worker\": \"w1\"}, "
      "\"tasks\": [\"t1\"]}]}";
  json_object *o = dm_answer(route_of("GET", "/api/v1/sources"), sources, &status, &empty);
  CU_ASSERT_EQUAL(status, 200);
  CU_ASSERT_EQUAL(get_int(o, "total"), 1);
  json_object *src = json_object_array_get_idx(get(o, "data"), 0);
  CU_ASSERT_STRING_EQUAL(get_str(src, "source_name"), "s1");
  CU_ASSERT_STRING_EQUAL(
      get_str(json_object_array_get_idx(get(src, "status_list"), 0), "worker_name"), "w1");
  CU_ASSERT_STRING_EQUAL(
      json_object_to_json_string_ext(get(src, "task_name_list"), JSON_C_TO_STRING_PLAIN),
      "[\"t1\"]");
  json_object_put(o);
  o = dm_answer(route_of("GET", "/api/v1/tasks/t1"),
                "{\"result\": true, \"msg\": \"\", \"tasks\": [{\"task\": {\"name\": \"t1\"}}]}",
                &status, &empty);
  CU_ASSERT_STRING_EQUAL(get_str(o, "name"), "t1");
  CU_ASSERT_PTR_NULL(get(o, "status_list"));
  json_object_put(o);
  o = dm_answer(route_of("GET", "/api/v1/tasks"),
                "{\"result\": true, \"msg\": \"\", \"tasks\": [{\"task\": {\"name\": \"t1\"}, "
                "\"status\": {\"sources\": [{\"sourceStatus\": {\"worker\": \"w1\"}, "
                "\"subTaskStatus\": [{\"name\": \"t1\", \"source\": \"s1\", \"stage\": "
                "\"Pausing\"}]}]}}]}",
                &status, &empty);
  json_object *sub = json_object_array_get_idx(
      get(json_object_array_get_idx(get(o, "data"), 0), "status_list"), 0);
  CU_ASSERT_STRING_EQUAL(get_str(sub, "stage"), "Paused");
  CU_ASSERT_STRING_EQUAL(get_str(sub, "worker_name"), "w1");
  json_object_put(o);
  o = dm_answer(route_of("GET", "/api/v1/tasks/t9"), NOT_FOUND_ANSWER, &status, &empty);
  CU_ASSERT_EQUAL(status, 404);
  json_object_put(o);
}

/* The two sets of paths: DM's under /api/v1 but dmhost's own. */
static void test_dm_path(void) {
  CU_ASSERT(dmh_dm_path("/api/v1/tasks/t1/status"));
  CU_ASSERT(dmh_dm_path("/api/v1/nope"));
  CU_ASSERT_FALSE(dmh_dm_path("/api/v1/dmhost/tasks"));
  CU_ASSERT_FALSE(dmh_dm_path("/api/v1/dmhost"));
  CU_ASSERT_FALSE(dmh_dm_path("/control"));
}

int main(void) {
  const dmh_cunit_test tests[] = {
      {"routes and docs/openapi.json are the same set", test_same_set},
      {"DM's PUT of a source: keep-password from a null password", test_dm_source_update},
      {"DM's table structure routes into binlog-schema", test_dm_table_structure_requests},
      {"DM's name lists, table structure and migrate targets", test_dm_names_answers},
      {"DM's Source and Task lists and objects", test_dm_objects},
      {"every route's command exists", test_commands_exist},
      {"matching: 404, 405 with Allow, 400 on an empty parameter", test_match},
      {"a route's request: args from path, body; bad bodies refused", test_request},
      {"a boolean body member for a DMH_ARG_BOOL argument", test_request_bool_member},
      {"DM's ErrorWithMessage, 400 or 404", test_dm_error},
      {"DM's answers without a body", test_dm_empty},
      {"DM's GetTaskStatusResponse: names, stage map, units, errors", test_dm_task_status},
      {"DM's SourceStatus, ClusterMaster and ClusterWorker lists", test_dm_source_and_members},
      {"DM's bodies and queries: lists, folder, refused and ignored members", test_dm_request},
      {"DM's paths and dmhost's own", test_dm_path},
      {"DMH_T: a body's object through its translator", test_dm_translated},
      {"DM's Task and Source routes: translated, fixed args", test_dm_wired_requests},
      {"DM's DELETE task: force and keep_meta from the query", test_dm_delete_query},
      {"DM's OperateTaskResponse, Source and ConverterTaskResponse", test_dm_wired_answers},
  };
  return dmh_cunit_run("http_api", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
