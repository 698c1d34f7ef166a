/* convert-task through the daemon's control handler (host/control/convert_cmd.c; DM's POST
 * /api/v1/tasks/converters): DM's fixture Task into DM's YAML and back as the loaded Task, that
 * YAML sent as "content" back into the same Task, a libconfig task file's text as a Task, and the
 * refusals (neither or both of task/content, JSON that is no Task, a loader's refusal naming a line
 * of the task_config_file it answers). Before convert_cmd.c the command did not exist. */
#include <CUnit/Basic.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control.h"
#include "cunit_run.h"

static json_object *fixture(const char *name) {
  char p[4096];
  snprintf(p, sizeof p, "%s/%s", DMH_OPENAPI_FIXTURES, name);
  json_object *o = json_object_from_file(p);
  CU_ASSERT_PTR_NOT_NULL_FATAL(o);
  return o;
}

/* {"cmd": "convert-task", "args": args} answered by the daemon's table (no registry needed). */
static json_object *convert(json_object *args) {
  json_object *req = json_object_new_object();
  json_object_object_add(req, "cmd", json_object_new_string("convert-task"));
  json_object_object_add(req, "args", args);
  json_object *resp = dmh_control_handle(NULL, req);
  json_object_put(req);
  CU_ASSERT_PTR_NOT_NULL_FATAL(resp);
  return resp;
}

static bool result(json_object *resp) {
  json_object *r = NULL;
  return json_object_object_get_ex(resp, "result", &r) && json_object_get_boolean(r);
}

static const char *member(json_object *o, const char *key) {
  json_object *v = NULL;
  return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : NULL;
}

static void test_task_and_back(void) {
  json_object *args = json_object_new_object();
  json_object_object_add(args, "task", fixture("shardAndFilterTask.json"));
  json_object *resp = convert(args);
  if (!result(resp))
    fprintf(stderr, "%s\n", json_object_to_json_string(resp));
  CU_ASSERT_TRUE_FATAL(result(resp));
  json_object *task = NULL, *want = fixture("shardAndFilterTask-back.json");
  CU_ASSERT_FATAL(json_object_object_get_ex(resp, "task", &task));
  CU_ASSERT_TRUE(json_object_equal(task, want));
  const char *yaml = member(resp, "task_config_file");
  CU_ASSERT_PTR_NOT_NULL_FATAL(yaml);
  CU_ASSERT_PTR_NOT_NULL(strstr(yaml, "shard-mode: optimistic"));
  CU_ASSERT_PTR_NOT_NULL(strstr(yaml, "mysql-instances:"));

  /* that YAML as a task file's text: the same Task */
  args = json_object_new_object();
  json_object_object_add(args, "content", json_object_new_string(yaml));
  json_object *resp2 = convert(args);
  CU_ASSERT_TRUE_FATAL(result(resp2));
  json_object *task2 = NULL;
  CU_ASSERT_FATAL(json_object_object_get_ex(resp2, "task", &task2));
  CU_ASSERT_TRUE(json_object_equal(task2, want));
  CU_ASSERT_PTR_NOT_NULL(member(resp2, "task_config_file"));
  json_object_put(resp2);

  /* the Task as JSON text, as a client may send it */
  args = json_object_new_object();
  json_object_object_add(args, "task", json_object_new_string(json_object_to_json_string(want)));
  resp2 = convert(args);
  CU_ASSERT_TRUE(result(resp2));
  json_object_put(resp2);
  json_object_put(want);
  json_object_put(resp);
}

static void test_libconfig_content(void) {
  static const char text[] =
      "name = \"lc\";\ntask-mode = \"incremental\";\n"
      "target-database = { host = \"127.0.0.1\"; port = 3307; user = \"u\"; password = \"p\"; };\n"
      "mysql-instances = ( { source-id = \"s1\"; block-allow-list = \"b\";\n"
      "  meta = { binlog-name = \"mysql-bin.000003\"; binlog-pos = 120; }; } );\n"
      "block-allow-list = { b = { do-dbs = [\"d1\", \"d2\"]; }; };\n"
      "sync = { worker-count = 2; };\n";
  json_object *args = json_object_new_object();
  json_object_object_add(args, "content", json_object_new_string(text));
  json_object_object_add(args, "path", json_object_new_string("lc.cfg"));
  json_object *resp = convert(args), *task = NULL;
  if (!result(resp))
    fprintf(stderr, "%s\n", json_object_to_json_string(resp));
  CU_ASSERT_TRUE_FATAL(result(resp));
  CU_ASSERT_FATAL(json_object_object_get_ex(resp, "task", &task));
  CU_ASSERT_STRING_EQUAL(member(task, "task_mode"), "incremental");
  json_object *rules = json_object_object_get(task, "table_migrate_rule");
  CU_ASSERT_EQUAL_FATAL(json_object_array_length(rules), 2);
  json_object *src = json_object_object_get(json_object_array_get_idx(rules, 1), "source");
  CU_ASSERT_STRING_EQUAL(member(src, "schema"), "d2");
  CU_ASSERT_STRING_EQUAL(member(src, "table"), "");
  json_object *conf = json_object_array_get_idx(
      json_object_object_get(json_object_object_get(task, "source_config"), "source_conf"), 0);
  CU_ASSERT_EQUAL(json_object_get_int(json_object_object_get(conf, "binlog_pos")), 120);
  const char *yaml = member(resp, "task_config_file");
  CU_ASSERT_PTR_NOT_NULL_FATAL(yaml);
  CU_ASSERT_PTR_NOT_NULL(strstr(yaml, "worker-count: 2"));
  json_object_put(resp);
}

static void expect_refused(json_object *args, const char *want) {
  json_object *resp = convert(args);
  CU_ASSERT_FALSE(result(resp));
  const char *msg = member(resp, "msg");
  if (!msg || !strstr(msg, want))
    fprintf(stderr, "want \"%s\" in %s\n", want, json_object_to_json_string(resp));
  CU_ASSERT_PTR_NOT_NULL(msg && strstr(msg, want));
  json_object_put(resp);
}

static void test_refusals(void) {
  expect_refused(json_object_new_object(), "one of `task` or `task_config_file` must be entered");
  json_object *args = json_object_new_object();
  json_object_object_add(args, "task", json_object_new_object());
  json_object_object_add(args, "content", json_object_new_string("name: x"));
  expect_refused(args, "one of `task` or `task_config_file` must be entered");
  args = json_object_new_object();
  json_object_object_add(args, "task", json_object_new_string("{\"name\": "));
  expect_refused(args, "convert-task: \"task\" is not JSON");
  /* the schema's refusal, by JSON path */
  json_object *task = fixture("shardAndFilterTask.json");
  json_object_object_add(task, "task_mode", json_object_new_string("fast"));
  args = json_object_new_object();
  json_object_object_add(args, "task", task);
  expect_refused(args, "`task.task_mode` is \"fast\"");
  json_object *resp;
  /* sent text: a password-file is refused (the trust of sent text), and a path names no file */
  static const char lc[] =
      "name = \"lc\"; task-mode = \"incremental\";\n"
      "target-database = { host = \"h\"; user = \"u\"; password-file = \"/etc/shadow\"; };\n"
      "mysql-instances = ( { source-id = \"s1\"; } );\n";
  args = json_object_new_object();
  json_object_object_add(args, "content", json_object_new_string(lc));
  json_object_object_add(args, "path", json_object_new_string("/etc/x.cfg"));
  resp = convert(args);
  CU_ASSERT_FALSE(result(resp));
  json_object *e = json_object_object_get(resp, "error");
  CU_ASSERT_EQUAL(json_object_get_int(json_object_object_get(e, "ErrCode")),
                  DM_ERR_CONFIG_SUBMITTED_SECRET);
  CU_ASSERT_PTR_NOT_NULL(strstr(member(resp, "msg"), "x.cfg:2"));
  json_object_put(resp);
  args = json_object_new_object();
  json_object_object_add(args, "content", json_object_new_string("name: t\n"));
  json_object_object_add(args, "path", json_object_new_string("/etc/passwd"));
  resp = convert(args);
  CU_ASSERT_FALSE(result(resp)); /* the text sent, read as libconfig: not /etc/passwd */
  CU_ASSERT_PTR_NULL(strstr(member(resp, "msg"), "root:"));
  CU_ASSERT_PTR_NOT_NULL(strstr(member(resp, "msg"), "passwd:1"));
  json_object_put(resp);

  /* a mode DM's Task has no name for */
  args = json_object_new_object();
  json_object_object_add(
      args, "content",
      json_object_new_string("name: ls\ntask-mode: load&sync\ntarget-database: {host: h, user: "
                             "u}\nmysql-instances: [{source-id: s}]\n"));
  expect_refused(args, "`task.task_mode` is \"load&sync\"; DM's Task takes");

  /* the loader's refusal: a line of the task_config_file answered beside it */
  task = fixture("shardAndFilterTask.json");
  json_object_object_add(json_object_object_get(task, "source_config"), "full_migrate_conf",
                         json_object_new_object());
  json_object_object_add(
      json_object_object_get(json_object_object_get(task, "source_config"), "full_migrate_conf"),
      "import_mode", json_object_new_string("physical"));
  args = json_object_new_object();
  json_object_object_add(args, "task", task);
  resp = convert(args);
  CU_ASSERT_FALSE(result(resp));
  const char *msg = member(resp, "msg");
  CU_ASSERT_PTR_NOT_NULL_FATAL(msg);
  CU_ASSERT_PTR_NOT_NULL(strstr(msg, "task.yaml:"));
  CU_ASSERT_PTR_NOT_NULL(strstr(msg, "loaders.load-01.import-mode"));
  CU_ASSERT_PTR_NOT_NULL(strstr(msg, "task_config_file shows it"));
  CU_ASSERT_PTR_NULL(strstr(msg, "/tmp/dmh-sent-")); /* the private copy is not named */
  CU_ASSERT_PTR_NOT_NULL(member(resp, "task_config_file"));
  json_object_put(resp);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"a Task into DM's YAML and back, that YAML back", test_task_and_back},
      {"a libconfig task file's text as a Task", test_libconfig_content},
      {"refusals", test_refusals},
  };
  return dmh_cunit_run("control_convert_task", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
