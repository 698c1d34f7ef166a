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

#include "control.h"
#include "cunit_run.h"
#include "dmhost/sdk.h"
#include "http_api.h"

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
    if (!found) {
      fprintf(stderr, "\n  %s %s: no command %s", r[i].method, r[i].path, r[i].cmd);
      CU_FAIL("a route's command is not in the table");
      continue;
    }
    for (size_t a = 0; a < DMH_API_MAX_ARGS && r[i].args[a].arg; a++) {
      bool takes = false;
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

int main(void) {
  const dmh_cunit_test tests[] = {
      {"routes and docs/openapi.json are the same set", test_same_set},
      {"every route's command exists", test_commands_exist},
      {"matching: 404, 405 with Allow, 400 on an empty parameter", test_match},
      {"a route's request: args from path, body; bad bodies refused", test_request},
      {"a boolean body member for a DMH_ARG_BOOL argument", test_request_bool_member},
  };
  return dmh_cunit_run("http_api", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
