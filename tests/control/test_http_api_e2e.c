/*
 * The HTTP API (http_api.h, docs/api.md) against `dmhost serve --listen`: every route with the
 * answers the socket's commands give, and its refusals (status, code, Allow).
 */
#include <CUnit/Basic.h>
#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <grp.h>
#include <json-c/json.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "control.h"
#include "control_http.h"
#include "cunit_run.h"
#include "dmhost/sdk.h"
#include "http_api.h"

#include "e2e_util.h"
#include "http_util.h"
#include "metrics.h"
#include "promtool_check.h"
#include "test_http_client.h"

/* ---- the HTTP API (http_api.h, docs/api.md) ---- */

/* `method` on the API's `path` with `body` (NULL: none): the answer, *status. */
static json_object *api(const char *method, const char *path, const char *body, long *status) {
  CURLcode rc;
  json_object *o =
      raw_http(method, path, body, body ? strlen(body) : 0, NULL, NULL, NULL, status, &rc);
  CU_ASSERT_EQUAL(rc, CURLE_OK);
  return o;
}

/* `method` on `path` answers 200 with result `want`; the answer is returned. */
static json_object *api_ok(bool want, const char *method, const char *path, const char *body) {
  long status = 0;
  json_object *o = api(method, path, body, &status);
  CU_ASSERT_EQUAL(status, 200);
  CU_ASSERT_PTR_NOT_NULL(o);
  if (e2e_bool(o, "result") != want)
    fprintf(stderr, "\n  %s %s: %s\n", method, path, json_object_to_json_string(o));
  CU_ASSERT(e2e_bool(o, "result") == want);
  return o;
}

/* {"content": the text of e2e_dir/file} (malloc'd). */
static char *api_content(const char *file) {
  char path[400];
  snprintf(path, sizeof path, "%s/%s", e2e_dir, file);
  char *text = e2e_read_file(path);
  CU_ASSERT_PTR_NOT_NULL_FATAL(text);
  json_object *o = json_object_new_object();
  json_object_object_add(o, "content", json_object_new_string(text));
  char *body = strdup(json_object_to_json_string(o));
  json_object_put(o);
  free(text);
  return body;
}

/* `h` (an answer over HTTP) names no path by the state dir's absolute path; `s` (the socket's)
 * made relative as the HTTP server makes its answers (issue 20: the state dir's path is the
 * socket's only), so that the two compare. */
static void api_relative(json_object *h, json_object *s) {
  CU_ASSERT_FALSE(
      e2e_contains(json_object_to_json_string_ext(h, JSON_C_TO_STRING_NOSLASHESCAPE), e2e_state));
  if (s)
    dmh_control_relative_paths(s, e2e_state);
}

/* The API's answer to a read is the socket's answer to its request (but for the moment's rate
 * and eta, and the state dir's path: api_relative). */
static void api_same(const char *path, const char *request) {
  json_object *h = api_ok(true, "GET", path, NULL), *s = e2e_raw(request);
  strip_moment(h);
  strip_moment(s);
  api_relative(h, s);
  bool same = h && s && json_object_equal(h, s);
  if (!same)
    fprintf(stderr, "\n  GET %s answered\n%s\n  the socket\n%s\n", path,
            json_object_to_json_string(h), json_object_to_json_string(s));
  CU_ASSERT(same);
  json_object_put(h);
  json_object_put(s);
}

/* Every route once through `dmhost serve --http`: sources created, shown, their relay enabled and
 * disabled and purged, stopped; a task started from its text, seen in status (the socket's JSON),
 * paused, updated while paused, its binlog operators listed and added, a unit swapped, resumed,
 * stopped; the OpenAPI document served as the build embedded it. */
static void test_api_routes(void) {
  CU_ASSERT_FATAL(e2e_setup() == 0);
  e2e_source("source.cfg", "mysql-01", false);
  /* DM's name for --listen; the fake units come by unit-paths in the sent content */
  const char *extra[] = {"--http", "127.0.0.1:0", "--allow-submitted-unit-paths", NULL};
  CU_ASSERT_FATAL(e2e_start_with(extra, false));
  CU_ASSERT_FATAL(http_find_port());
  long status = 0;

  char ctype[128];
  char *doc = raw_get_text("/api/v1/dmhost/openapi.json", &status, ctype, sizeof ctype);
  size_t doc_len;
  const char *embedded = dmh_api_openapi(&doc_len);
  CU_ASSERT_EQUAL(status, 200);
  CU_ASSERT_STRING_EQUAL(ctype, "application/json");
  CU_ASSERT(doc && strlen(doc) == doc_len && memcmp(doc, embedded, doc_len) == 0);
  free(doc);
  /* DM's name for the document: the same bytes */
  doc = raw_get_text("/api/v1/dm.json", &status, ctype, sizeof ctype);
  CU_ASSERT_EQUAL(status, 200);
  CU_ASSERT_STRING_EQUAL(ctype, "application/json");
  CU_ASSERT(doc && strlen(doc) == doc_len && memcmp(doc, embedded, doc_len) == 0);
  free(doc);
  /* DM's page of it: HTML listing the operations, loading nothing from anywhere */
  doc = raw_get_text("/api/v1/docs", &status, ctype, sizeof ctype);
  CU_ASSERT_EQUAL(status, 200);
  CU_ASSERT_STRING_EQUAL(ctype, "text/html; charset=utf-8");
  CU_ASSERT(doc && e2e_contains(doc, "<code>/api/v1/dmhost/tasks/{task-name}/status</code>"));
  CU_ASSERT(doc && e2e_contains(doc, "GetDocJSON") && e2e_contains(doc, "DMAPIStopTask"));
  CU_ASSERT(doc && !e2e_contains(doc, "<script") && !e2e_contains(doc, "src="));
  free(doc);
  CURLcode crc;
  json_object_put(raw_http("GET", "/api/v1/docs", NULL, 0, NULL, NULL, NULL, &status, &crc));
  CU_ASSERT(e2e_contains(raw_answer_headers, "Content-Security-Policy: default-src 'none'"));

  json_object *o = api_ok(true, "GET", "/api/v1/dmhost/sources", NULL);
  CU_ASSERT_EQUAL(json_object_array_length(e2e_get(o, "sources")), 0);
  json_object_put(o);
  char *src = api_content("source.cfg");
  json_object_put(api_ok(true, "POST", "/api/v1/dmhost/sources", src));
  json_object_put(api_ok(false, "POST", "/api/v1/dmhost/sources", src)); /* already bound */
  free(src);
  api_same("/api/v1/dmhost/sources", "{\"cmd\": \"operate-source\", \"args\": {\"op\": \"show\"}}");
  api_same("/api/v1/dmhost/sources/mysql-01/status",
           "{\"cmd\": \"operate-source\", \"args\": "
           "{\"op\": \"show\", \"source\": \"mysql-01\"}}");
  api_same("/api/v1/dmhost/sources/mysql-01", "{\"cmd\": \"operate-source\", \"args\": "
                                              "{\"op\": \"show\", \"source\": \"mysql-01\"}}");
  o = api_ok(false, "GET", "/api/v1/dmhost/sources/mysql-02/status", NULL);
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), "mysql-02"));
  json_object_put(o);

  json_object_put(api_ok(true, "POST", "/api/v1/dmhost/sources/mysql-01/relay/enable", NULL));
  json_object_put(api_ok(false, "POST", "/api/v1/dmhost/sources/mysql-01/relay/enable", NULL));
  /* purge-relay: the answer is the socket's for the same request */
  o = api("POST", "/api/v1/dmhost/sources/mysql-01/relay/purge",
          "{\"relay_binlog_name\": \"mysql-bin.000001\"}", &status);
  json_object *s = e2e_raw("{\"cmd\": \"purge-relay\", \"args\": {\"source\": \"mysql-01\", "
                           "\"file\": \"mysql-bin.000001\"}}");
  CU_ASSERT_EQUAL(status, 200);
  api_relative(o, s);
  CU_ASSERT(o && s && json_object_equal(o, s));
  json_object_put(o);
  json_object_put(s);
  json_object_put(api_ok(true, "POST", "/api/v1/dmhost/sources/mysql-01/relay/disable", NULL));
  json_object_put(api_ok(false, "POST", "/api/v1/dmhost/sources/mysql-01/relay/disable", NULL));

  e2e_task("inc.cfg", "inc", "incremental", "mysql-01", "sync = { items = 0; item-ms = 50; };");
  e2e_task("bad.cfg", "inc", "incremental", "mysql-01", "sync = { items = 0; item-ms = 10; };");
  e2e_task("same.cfg", "inc", "incremental", "mysql-01",
           "# the same settings\nsync = { item-ms = 50; items = 0; };");
  char *task = api_content("inc.cfg");
  o = api_ok(true, "POST", "/api/v1/dmhost/tasks/check", task);
  CU_ASSERT_PTR_NOT_NULL(e2e_get(o, "checkResult"));
  json_object_put(o);
  json_object_put(api_ok(true, "POST", "/api/v1/dmhost/tasks", task));
  json_object_put(api_ok(false, "POST", "/api/v1/dmhost/tasks", task)); /* exists */
  CU_ASSERT(e2e_wait_stage("inc", "Running", 10));
  o = api_ok(true, "GET", "/api/v1/dmhost/tasks/inc/status", NULL);
  CU_ASSERT(e2e_str_is(o, "sources.0.subTaskStatus.0.stage", "Running"));
  json_object_put(o);
  json_object_put(api_ok(false, "GET", "/api/v1/dmhost/tasks/nope/status", NULL));

  json_object_put(api_ok(true, "POST", "/api/v1/dmhost/tasks/inc/pause", NULL));
  CU_ASSERT(e2e_wait_stage("inc", "Paused", 10));
  json_object_put(api_ok(false, "POST", "/api/v1/dmhost/tasks/inc/pause", NULL)); /* already */
  /* paused, the task's counts hold still: the socket's answer, member for member */
  api_same("/api/v1/dmhost/tasks/inc/status",
           "{\"cmd\": \"query-status\", \"args\": {\"name\": \"inc\"}}");
  api_same("/api/v1/dmhost/tasks", "{\"cmd\": \"query-status\"}");
  char *bad = api_content("bad.cfg"), *same = api_content("same.cfg");
  o = api_ok(false, "PUT", "/api/v1/dmhost/tasks", bad); /* the fake sync has no update slot */
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_UPDATE_UNSUPPORTED);
  json_object_put(o);
  json_object_put(api_ok(true, "PUT", "/api/v1/dmhost/tasks", same));
  char copy[400];
  snprintf(copy, sizeof copy, "%s/tasks/inc/task.cfg", e2e_state);
  char *kept = e2e_read_file(copy);
  CU_ASSERT(kept && e2e_contains(kept, "# the same settings"));
  free(kept);
  free(bad);
  free(same);

  o = api_ok(true, "GET", "/api/v1/dmhost/tasks/inc/binlog", NULL);
  json_object_put(o);
  api_same("/api/v1/dmhost/tasks/inc/binlog?source_name=mysql-01",
           "{\"cmd\": \"binlog\", \"args\": {\"op\": \"list\", \"name\": \"inc\", "
           "\"source\": \"mysql-01\"}}");
  json_object_put(api_ok(true, "POST", "/api/v1/dmhost/tasks/inc/binlog/inject",
                         "{\"binlog_pos\": \"mysql-bin.000009:4\", \"sqls\": [\"SELECT 1\"]}"));
  o = api_ok(true, "GET", "/api/v1/dmhost/tasks/inc/binlog", NULL);
  CU_ASSERT(e2e_contains(json_object_to_json_string(o), "mysql-bin.000009:4"));
  json_object_put(o);
  json_object_put(api_ok(true, "POST", "/api/v1/dmhost/tasks/inc/binlog/revert",
                         "{\"binlog_pos\": \"mysql-bin.000009:4\"}"));

  json_object_put(api_ok(true, "POST", "/api/v1/dmhost/tasks/inc/resume", NULL));
  CU_ASSERT(e2e_wait_stage("inc", "Running", 10));
  json_object_put(api_ok(true, "POST", "/api/v1/dmhost/tasks/inc/units/sync/swap",
                         "{\"path\": \"" FAKE_SYNC_V2 "\"}"));
  o = e2e_raw("{\"cmd\": \"query-status\", \"args\": {\"name\": \"inc\"}}");
  CU_ASSERT(e2e_str_is(o, "sources.0.subTaskStatus.0.unitVersion", "2")); /* swapped */
  json_object_put(o);
  json_object_put(api_ok(true, "DELETE", "/api/v1/dmhost/tasks/inc", NULL));
  json_object_put(api_ok(false, "DELETE", "/api/v1/dmhost/tasks/inc", NULL));
  json_object_put(api_ok(true, "DELETE", "/api/v1/dmhost/sources/mysql-01", NULL));
  o = api_ok(true, "GET", "/api/v1/dmhost/sources", NULL);
  CU_ASSERT_EQUAL(json_object_array_length(e2e_get(o, "sources")), 0);
  json_object_put(o);
  free(task);
  CU_ASSERT_EQUAL(e2e_stop(), 0);
  e2e_teardown();
}

/* A refusal of the API: `status`, result false, DM_ERR_CONTROL_REQUEST with its class and
 * workaround, and `says` in the message. */
static void api_refused(const char *method, const char *path, const char *body, long want,
                        const char *says) {
  long status = 0;
  json_object *o = api(method, path, body, &status);
  CU_ASSERT_EQUAL(status, want);
  CU_ASSERT_FALSE(e2e_bool(o, "result"));
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_CONTROL_REQUEST);
  CU_ASSERT(e2e_str_is(o, "error.ErrClass", "control"));
  CU_ASSERT(e2e_str(o, "error.Workaround") && *e2e_str(o, "error.Workaround"));
  if (!e2e_contains(e2e_str(o, "msg"), says))
    fprintf(stderr, "\n  %s %s: %s\n", method, path, json_object_to_json_string(o));
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), says));
  json_object_put(o);
}

/* The API's refusals, each a JSON error of the control plane's shape, and the daemon answers on:
 * a body that is not JSON or not an object, a member a route does not take, a missing one, a body
 * over the limit (413), an unknown path (404), a wrong method (405 with Allow), an empty path
 * parameter (400). */
static void test_api_errors(void) {
  CU_ASSERT_FATAL(e2e_setup() == 0);
  http_start("127.0.0.1:0", false);
  api_refused("POST", "/api/v1/dmhost/tasks", "{\"content\": ", 400, "not a JSON object");
  api_refused("POST", "/api/v1/dmhost/tasks", "[\"task\"]", 400, "not a JSON object");
  api_refused("POST", "/api/v1/dmhost/tasks", "{\"path\": \"/etc/passwd\"}", 400,
              "member \"path\" this route does not take");
  api_refused("POST", "/api/v1/dmhost/tasks", "{}", 400, "the body has no \"content\"");
  api_refused("POST", "/api/v1/dmhost/tasks/inc/binlog/inject", "{\"sqls\": \"SELECT 1\"}", 400,
              "an array of SQL strings");
  api_refused("GET", "/api/v1/dmhost/nope", NULL, 404, "no such path /api/v1/dmhost/nope");
  api_refused("GET", "/api/v2/tasks", NULL, 404, "no such path");
  api_refused("PATCH", "/api/v1/dmhost/tasks", NULL, 405, "this path takes GET, POST, PUT");
  CU_ASSERT_STRING_EQUAL(raw_allow, "GET, POST, PUT");
  api_refused("GET", "/api/v1/dmhost/tasks/inc/pause", NULL, 405, "takes POST");
  CU_ASSERT_STRING_EQUAL(raw_allow, "POST");
  api_refused("POST", "/api/v1/dmhost/tasks//pause", NULL, 400, "{task-name} is empty");
  api_refused("GET", "/api/v1/dmhost/sources//status", NULL, 400, "{source-name} is empty");
  size_t big = DMH_CONTROL_LINE_MAX + 1;
  char *body = malloc(big + 1);
  CU_ASSERT_FATAL(body != NULL);
  memset(body, ' ', big);
  body[big] = '\0';
  body[0] = '{';
  body[big - 1] = '}';
  long status = 0;
  CURLcode rc;
  json_object *o =
      raw_http("POST", "/api/v1/dmhost/tasks", body, big, NULL, NULL, NULL, &status, &rc);
  CU_ASSERT_EQUAL(status, 413);
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_CONTROL_REQUEST);
  json_object_put(o);
  free(body);
  /* unharmed */
  json_object_put(api_ok(true, "GET", "/api/v1/dmhost/tasks", NULL));
  over_http(0, "query-status", NULL, NULL, NULL);
  http_use_socket();
  CU_ASSERT_EQUAL(e2e_stop(), 0);
  e2e_teardown();
}

/* ---- DM's operations (http_dm.h) ---- */

/* `method` on DM's `path` with `body`: the status is `want`, and the answer either has no body
 * and no Content-Type (want_empty) or is DM's ErrorWithMessage with `code` (returned), or, for a
 * success with a body, the body (returned). */
static json_object *dm_call(const char *method, const char *path, const char *body, long want,
                            bool want_empty) {
  long status = 0;
  CURLcode rc;
  json_object *o =
      raw_http(method, path, body, body ? strlen(body) : 0, NULL, NULL, NULL, &status, &rc);
  CU_ASSERT_EQUAL(rc, CURLE_OK);
  if (status != want)
    fprintf(stderr, "\n  %s %s: %ld, want %ld: %s\n", method, path, status, want,
            o ? json_object_to_json_string(o) : "(no JSON)");
  CU_ASSERT_EQUAL(status, want);
  bool typed = e2e_contains(raw_answer_headers, "Content-Type");
  if (want_empty) {
    CU_ASSERT_PTR_NULL(o);
    CU_ASSERT_FALSE(typed);
  } else {
    CU_ASSERT_PTR_NOT_NULL(o);
    CU_ASSERT(typed);
  }
  return o;
}

/* DM's ErrorWithMessage of `code`: exactly its two members, error_msg in terror's format. */
static void dm_refused(const char *method, const char *path, const char *body, long want, int code,
                       const char *says) {
  json_object *o = dm_call(method, path, body, want, false);
  char head[64];
  snprintf(head, sizeof head, "[code=%d:class=", code);
  const char *msg = e2e_str(o, "error_msg");
  if (!msg || strncmp(msg, head, strlen(head)) != 0 || !e2e_contains(msg, says))
    fprintf(stderr, "\n  %s %s: %s\n", method, path, o ? json_object_to_json_string(o) : "-");
  CU_ASSERT(msg && strncmp(msg, head, strlen(head)) == 0 && e2e_contains(msg, says));
  CU_ASSERT(msg && e2e_contains(msg, ", Message: "));
  CU_ASSERT_EQUAL(e2e_int(o, "error_code"), code);
  CU_ASSERT_EQUAL(o ? json_object_object_length(o) : 0, 2);
  json_object_put(o);
}

/* DM's routes through `dmhost serve`, in DM's shapes: a relay enabled, purged and disabled with
 * no body (200), again refused (400 ErrorWithMessage); a task's status as GetTaskStatusResponse
 * (its stage Running, then Paused after DM's stop), started again by DM's start; its DELETE
 * refused while Running (force defaults to false), then deleted with force=true (204), then
 * unknown (400); DM's cluster of one (the daemon listed as the leader master at its bound address
 * and as the worker, its source transferred to itself, offline of itself 15047, other names not
 * exists); a source deleted (204); the transport's refusals on DM's paths in DM's
 * body; a write with no body, no Content-Type and no Origin admitted (DM's scripts), one with a
 * body but no type refused (415). */
static void test_dm_routes(void) {
  CU_ASSERT_FATAL(e2e_setup() == 0);
  e2e_source("source.cfg", "mysql-01", false);
  const char *extra[] = {"--listen", "127.0.0.1:0", "--allow-submitted-unit-paths", NULL};
  CU_ASSERT_FATAL(e2e_start_with(extra, false));
  CU_ASSERT_FATAL(http_find_port());
  char *src = api_content("source.cfg");
  json_object_put(api_ok(true, "POST", "/api/v1/dmhost/sources", src));
  free(src);

  /* DM's scripts: curl -X POST with no body and no Content-Type */
  raw_content_type = NULL;
  json_object_put(dm_call("POST", "/api/v1/sources/mysql-01/relay/enable", NULL, 200, true));
  raw_content_type = "application/json";
  dm_refused("POST", "/api/v1/sources/mysql-01/relay/enable", "{}", 400, DM_ERR_EXISTS,
             "already runs");
  dm_refused("POST", "/api/v1/sources/mysql-01/relay/enable", "{\"relay_dir\": \"/x\"}", 400,
             DM_ERR_CONTROL_REQUEST, "\"relay_dir\" is not done");
  /* the fake relay holds no file: the command's refusal in DM's body (success: test_http_api) */
  dm_refused("POST", "/api/v1/sources/mysql-01/relay/purge",
             "{\"relay_binlog_name\": \"mysql-bin.000001\"}", 400, DM_ERR_NOT_FOUND,
             "no relay file mysql-bin.000001");
  json_object *o = dm_call("GET", "/api/v1/sources/mysql-01/status", NULL, 200, false);
  CU_ASSERT_EQUAL(e2e_int(o, "total"), 1);
  CU_ASSERT(e2e_str_is(o, "data.0.source_name", "mysql-01"));
  CU_ASSERT(e2e_str(o, "data.0.worker_name") && *e2e_str(o, "data.0.worker_name"));
  CU_ASSERT(e2e_str_is(o, "data.0.relay_status.stage", "Running"));
  json_object_put(o);
  json_object_put(dm_call("POST", "/api/v1/sources/mysql-01/relay/disable", "{}", 200, true));
  dm_refused("GET", "/api/v1/sources/mysql-02/status", NULL, 400, DM_ERR_NOT_FOUND, "mysql-02");

  e2e_task("inc.cfg", "inc", "incremental", "mysql-01", "sync = { items = 0; item-ms = 50; };");
  char *task = api_content("inc.cfg");
  json_object_put(api_ok(true, "POST", "/api/v1/dmhost/tasks", task));
  free(task);
  CU_ASSERT(e2e_wait_stage("inc", "Running", 60));
  o = dm_call("GET", "/api/v1/tasks/inc/status", NULL, 200, false);
  CU_ASSERT_EQUAL(e2e_int(o, "total"), 1);
  CU_ASSERT(e2e_str_is(o, "data.0.name", "inc"));
  CU_ASSERT(e2e_str_is(o, "data.0.source_name", "mysql-01"));
  CU_ASSERT(e2e_str_is(o, "data.0.stage", "Running"));
  CU_ASSERT(e2e_str_is(o, "data.0.unit", "Sync"));
  CU_ASSERT(e2e_str_is(o, "data.0.sync_status.binlog_type", "remote"));
  CU_ASSERT_PTR_NULL(e2e_get(o, "sources")); /* not the socket's answer */
  json_object_put(o);
  o = dm_call("GET", "/api/v1/tasks/inc/status?source_name_list=mysql-01", NULL, 200, false);
  CU_ASSERT_EQUAL(e2e_int(o, "total"), 1);
  json_object_put(o);
  dm_refused("GET", "/api/v1/tasks/inc/status?source_name_list=nope", NULL, 400, DM_ERR_NOT_FOUND,
             "-s nope");
  /* DM's stop: dmhost's pause, the task kept */
  json_object_put(
      dm_call("POST", "/api/v1/tasks/inc/stop", "{\"timeout_duration\": \"15s\"}", 200, true));
  CU_ASSERT(e2e_wait_stage("inc", "Paused", 60));
  o = dm_call("GET", "/api/v1/tasks/inc/status", NULL, 200, false);
  CU_ASSERT(e2e_str_is(o, "data.0.stage", "Paused"));
  json_object_put(o);
  /* DM's start options on a task that has run: refused naming the member (registry_start_opts.c) */
  dm_refused("POST", "/api/v1/tasks/inc/start", "{\"start_time\": \"2024-01-01 00:00:00\"}", 400,
             DM_ERR_STAGE, "start's start_time): the task has run");
  dm_refused("POST", "/api/v1/tasks/inc/start", "{\"safe_mode_time_duration\": \"1m\"}", 400,
             DM_ERR_STAGE, "safe_mode_time_duration): the task has run");
  raw_content_type = NULL;
  json_object_put(dm_call("POST", "/api/v1/tasks/inc/start", NULL, 200, true));
  CU_ASSERT(e2e_wait_stage("inc", "Running", 60));
  /* a body without its type is still refused: 415 in DM's body */
  dm_refused("POST", "/api/v1/tasks/inc/stop", "{}", 415, DM_ERR_CONTROL_CONTENT_TYPE,
             "Content-Type");
  /* DM's DELETE: force defaults to false, and a Running task is refused without it */
  dm_refused("DELETE", "/api/v1/tasks/inc", NULL, 400, DM_ERR_STAGE, "delete task with force");
  json_object_put(
      dm_call("DELETE", "/api/v1/tasks/inc?force=true&keep_meta=true", NULL, 204, true));
  raw_content_type = "application/json";
  dm_refused("DELETE", "/api/v1/tasks/inc", NULL, 400, DM_ERR_NOT_FOUND, "inc");
  dm_refused("GET", "/api/v1/tasks/inc/status", NULL, 400, DM_ERR_NOT_FOUND, "inc");

  /* DM's cluster of one: the daemon is the leader master, at the address it bound (--listen's
   * port 0 made real), and the only worker, with its stage and source */
  char host[200], self[256], path[400];
  CU_ASSERT_FATAL(gethostname(host, sizeof host) == 0);
  host[sizeof host - 1] = '\0';
  snprintf(self, sizeof self, "dmhost@%s", host);
  o = dm_call("GET", "/api/v1/cluster/masters", NULL, 200, false);
  CU_ASSERT_EQUAL(e2e_int(o, "total"), 1);
  CU_ASSERT(e2e_str_is(o, "data.0.name", self) && e2e_str_is(o, "data.0.addr", http_addr));
  CU_ASSERT(e2e_bool(o, "data.0.alive") && e2e_bool(o, "data.0.leader"));
  json_object_put(o);
  o = dm_call("GET", "/api/v1/cluster/workers", NULL, 200, false);
  CU_ASSERT_EQUAL(e2e_int(o, "total"), 1);
  CU_ASSERT(e2e_str_is(o, "data.0.name", self) && e2e_str_is(o, "data.0.addr", http_addr));
  CU_ASSERT(e2e_str_is(o, "data.0.bound_stage", "bound") &&
            e2e_str_is(o, "data.0.bound_source_name", "mysql-01"));
  json_object_put(o);
  /* its own source to itself: a transfer that changes nothing; another worker: not exists */
  char body[400];
  snprintf(body, sizeof body, "{\"worker_name\": \"%s\"}", self);
  json_object_put(dm_call("POST", "/api/v1/sources/mysql-01/transfer", body, 200, true));
  dm_refused("POST", "/api/v1/sources/mysql-01/transfer", "{\"worker_name\": \"w\"}", 400,
             DM_ERR_NOT_FOUND, "dm-worker with name w not exists");
  dm_refused("POST", "/api/v1/sources/mysql-02/transfer", body, 400, DM_ERR_NOT_FOUND, "mysql-02");
  o = dm_call("GET", "/api/v1/cluster/workers", NULL, 200, false);
  CU_ASSERT(e2e_str_is(o, "data.0.bound_stage", "bound"));
  json_object_put(o);
  /* offline: itself is online, any other name not exists */
  snprintf(path, sizeof path, "/api/v1/cluster/workers/%s", self);
  dm_refused("DELETE", path, NULL, 400, DM_ERR_CLUSTER_MEMBER_ONLINE, "is still online");
  snprintf(path, sizeof path, "/api/v1/cluster/masters/%s", self);
  dm_refused("DELETE", path, NULL, 400, DM_ERR_CLUSTER_MEMBER_ONLINE, "is still online");
  dm_refused("DELETE", "/api/v1/cluster/workers/w2", NULL, 400, DM_ERR_NOT_FOUND,
             "dm-worker with name w2 not exists");
  dm_refused("DELETE", "/api/v1/cluster/masters/m2", NULL, 400, DM_ERR_NOT_FOUND,
             "dm-master with name m2 not exists");
  json_object_put(dm_call("DELETE", "/api/v1/sources/mysql-01", NULL, 204, true));
  o = dm_call("GET", "/api/v1/cluster/workers", NULL, 200, false);
  CU_ASSERT(e2e_str_is(o, "data.0.bound_stage", "free") &&
            e2e_str_is(o, "data.0.bound_source_name", ""));
  json_object_put(o);
  json_object *r = NULL;
  CU_ASSERT_NOT_EQUAL(e2e_dmctl(&r, "offline-member", "-w", "-n", self, NULL), 0);
  CU_ASSERT_EQUAL(e2e_int(r, "error.ErrCode"), DM_ERR_CLUSTER_MEMBER_ONLINE);
  json_object_put(r);
  CU_ASSERT_EQUAL(e2e_dmctl(&r, "list-member", "--leader", NULL), 0);
  CU_ASSERT(e2e_str_is(r, "members.0.leader.name", self));
  json_object_put(r);

  /* the transport's refusals on DM's paths */
  dm_refused("GET", "/api/v1/nope", NULL, 404, DM_ERR_CONTROL_REQUEST, "no such path");
  dm_refused("PATCH", "/api/v1/tasks/inc/stop", NULL, 405, DM_ERR_CONTROL_REQUEST, "takes POST");
  CU_ASSERT_STRING_EQUAL(raw_allow, "POST");
  dm_refused("POST", "/api/v1/tasks/inc/stop", "{\"nope\": 1}", 400, DM_ERR_CONTROL_REQUEST,
             "\"nope\"");
  dm_refused("POST", "/api/v1/tasks/inc/stop", "[", 400, DM_ERR_CONTROL_REQUEST,
             "not a JSON object");
  CU_ASSERT_EQUAL(e2e_stop(), 0);
  e2e_teardown();
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"the HTTP API: every route", test_api_routes},
      {"the HTTP API: refusals", test_api_errors},
      {"the HTTP API: DM's operations in DM's shapes", test_dm_routes},
  };
  return http_run_tests("control http api", tests, sizeof tests / sizeof tests[0]);
}
