/* DM's OpenAPI Task and Source <-> dmhost's configs (host/config/config_openapi.c, issue 23): DM's
 * own fixtures (tests/config/dm-openapi/, see its README) are translated into DM's YAML and loaded
 * by the real loader (dmh_task_config_load on the text written to a file), with the settings they
 * give; the way back gives the Task DM's converter gives (an expectation written by hand); members
 * DM's schema does not have, wrong types and enums, an undefined filter rule name and TLS contents
 * are refused naming their JSON path; hostile strings stay one YAML scalar and load back equal;
 * a mydumper's `extra-args` (DM's converter writes "--consistency X") is read as dumpling's options
 * (config_yaml_extra.c): those of the dump into its settings, the others refused by name.
 * Before config_openapi.c there was no way from DM's JSON into a config. */
#include <CUnit/Basic.h>
#include <json-c/json.h>
#include <libconfig.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "config_openapi.h"
#include "config_test_util.h"
#include "cunit_run.h"

static char tmp_dir[] = "/tmp/dmh-openapi-XXXXXX";

static json_object *fixture(const char *name) {
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s/dm-openapi/%s", DMH_TEST_DIR, name);
  json_object *o = json_object_from_file(p);
  CU_ASSERT_PTR_NOT_NULL_FATAL(o);
  return o;
}

/* A member by a path of names and [i] indexes ("source_config.source_conf[1]"). */
static json_object *at(json_object *o, const char *path) {
  char buf[256], *save = NULL;
  snprintf(buf, sizeof buf, "%s", path);
  for (char *tok = strtok_r(buf, ".", &save); tok && o; tok = strtok_r(NULL, ".", &save)) {
    char *br = strchr(tok, '[');
    if (br)
      *br = '\0';
    if (*tok && !json_object_object_get_ex(o, tok, &o))
      return NULL;
    if (br)
      o = json_object_array_get_idx(o, (size_t)atoi(br + 1));
  }
  return o;
}

/* Set member `key` of the object at `path` ("" the top). */
static void set(json_object *o, const char *path, const char *key, json_object *v) {
  json_object *parent = *path ? at(o, path) : o;
  CU_ASSERT_PTR_NOT_NULL_FATAL(parent);
  json_object_object_add(parent, key, v);
}

static char *task_yaml(json_object *task) {
  char *yaml = NULL;
  dm_error err = {0};
  int rc = dmh_openapi_task_to_yaml(task, &yaml, &err);
  if (rc != 0)
    fprintf(stderr, "task_to_yaml: %s\n", err.message);
  CU_ASSERT_EQUAL_FATAL(rc, 0);
  return yaml;
}

/* The YAML text loaded by the loader, as a task file named task.yaml. */
static dmh_task_config *load_yaml_task(const char *yaml, dm_error *err) {
  const char *p = test_write(tmp_dir, "task.yaml", yaml, 0600);
  dmh_task_config *t = NULL;
  if (dmh_task_config_load(p, &t, err) != 0)
    return NULL;
  return t;
}

static dmh_task_config *convert_load(json_object *task) {
  char *yaml = task_yaml(task);
  dm_error err = {0};
  dmh_task_config *t = load_yaml_task(yaml, &err);
  if (!t)
    fprintf(stderr, "load: %s\n--- yaml:\n%s\n", err.message, yaml);
  free(yaml);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  return t;
}

static config_setting_t *sec(const dmh_task_config *t, dm_unit_kind k, const char *key) {
  config_setting_t *s = dmh_task_unit_section(t, k);
  return s ? config_setting_get_member(s, key) : NULL;
}

static long long unit_int(const dmh_task_config *t, dm_unit_kind k, const char *key) {
  config_setting_t *s = sec(t, k, key);
  return s ? config_setting_get_int64(s) : -1;
}

static const char *unit_str(const dmh_task_config *t, dm_unit_kind k, const char *key) {
  config_setting_t *s = sec(t, k, key);
  return s ? config_setting_get_string(s) : NULL;
}

/* The translation must fail with `code` and a message holding `want`. */
static void expect_refused(json_object *task, bool source, int32_t code, const char *want) {
  char *yaml = NULL;
  dm_error err = {0};
  int rc = source ? dmh_openapi_source_to_yaml(task, &yaml, &err)
                  : dmh_openapi_task_to_yaml(task, &yaml, &err);
  CU_ASSERT_EQUAL(rc, -1);
  CU_ASSERT_PTR_NULL(yaml);
  CU_ASSERT_EQUAL(err.code, code);
  if (!strstr(err.message, want))
    fprintf(stderr, "want \"%s\" in: %s\n", want, err.message);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, want));
  free(yaml);
}

/* ---- DM's fixtures, loaded ---- */

static void test_no_shard(void) {
  json_object *task = fixture("noShardTask.json");
  /* as DM sends it: TLS by contents (refused first, by its path), then physical import */
  expect_refused(task, false, DM_ERR_CONFIG_UNKNOWN, "`task.target_config.security`: TLS given");
  set(task, "target_config", "security", NULL);
  expect_refused(task, false, DM_ERR_CONFIG_UNKNOWN,
                 "`task.source_config.full_migrate_conf.security`: TLS given");
  set(task, "source_config.full_migrate_conf", "security", NULL);
  char *yaml = task_yaml(task);
  dm_error err = {0};
  CU_ASSERT_PTR_NULL(load_yaml_task(yaml, &err));
  CU_ASSERT_EQUAL(err.code, DM_ERR_CONFIG_UNKNOWN);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "DM key `loaders.load-01.import-mode`"));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "physical import is not built"));
  free(yaml);

  set(task, "source_config.full_migrate_conf", "import_mode", json_object_new_string("logical"));
  dmh_task_config *t = convert_load(task);
  CU_ASSERT_STRING_EQUAL(t->name, "test");
  CU_ASSERT_EQUAL(t->mode, DMH_MODE_ALL);
  CU_ASSERT_EQUAL(t->shard_mode, DM_SHARD_MODE_NONE);
  CU_ASSERT_STRING_EQUAL(t->meta_schema, "dm_meta");
  CU_ASSERT_TRUE(t->online_ddl);
  CU_ASSERT_STRING_EQUAL(t->target.ep.host, "root");
  CU_ASSERT_EQUAL(t->target.ep.port, 4000);
  CU_ASSERT_STRING_EQUAL(t->target.ep.user, "root");
  CU_ASSERT_STRING_EQUAL(t->target.ep.password, "123456");
  CU_ASSERT_EQUAL_FATAL(t->n_instances, 1);
  const dmh_task_instance *in = &t->instances[0];
  CU_ASSERT_STRING_EQUAL(in->source_id, "mysql-replica-01");
  CU_ASSERT_PTR_NULL(in->meta_binlog_name);
  CU_ASSERT_PTR_NOT_NULL_FATAL(in->bal);
  CU_ASSERT_EQUAL(in->bal->n_do_dbs, 0);
  CU_ASSERT_EQUAL_FATAL(in->bal->n_do_tables, 1);
  CU_ASSERT_STRING_EQUAL(in->bal->do_tables[0].db, "some_db");
  CU_ASSERT_STRING_EQUAL(in->bal->do_tables[0].table, "*");
  CU_ASSERT_EQUAL_FATAL(in->n_routes, 1);
  CU_ASSERT_STRING_EQUAL(in->routes[0]->schema_pattern, "some_db");
  CU_ASSERT_STRING_EQUAL(in->routes[0]->table_pattern, "*");
  CU_ASSERT_STRING_EQUAL(in->routes[0]->target_schema, "new_name_db");
  CU_ASSERT_STRING_EQUAL(in->routes[0]->target_table, "*");
  CU_ASSERT_EQUAL(in->n_filters, 0);
  CU_ASSERT_EQUAL(unit_int(t, DM_UNIT_DUMP, "threads"), 4);
  CU_ASSERT_EQUAL(unit_int(t, DM_UNIT_LOAD, "pool-size"), 16);
  CU_ASSERT_STRING_EQUAL(unit_str(t, DM_UNIT_LOAD, "on-duplicate"), "replace");
  CU_ASSERT_EQUAL(unit_int(t, DM_UNIT_SYNC, "worker-count"), 32);
  CU_ASSERT_EQUAL(unit_int(t, DM_UNIT_SYNC, "batch"), 200);
  CU_ASSERT_TRUE(config_setting_get_bool(sec(t, DM_UNIT_SYNC, "safe-mode")));
  CU_ASSERT_STRING_EQUAL(unit_str(t, DM_UNIT_SYNC, "timezone"), "Asia/Shanghai");
  CU_ASSERT_PTR_NULL(unit_str(t, DM_UNIT_DUMP, "consistency"));
  dmh_task_config_free(t);

  /* consistency: DM's `--consistency X` extra-args, the dump's consistency */
  set(task, "source_config.full_migrate_conf", "consistency", json_object_new_string("flush"));
  /* on_duplicate_logical wins over on_duplicate (DM reads only the former) */
  set(task, "source_config.full_migrate_conf", "on_duplicate_logical",
      json_object_new_string("ignore"));
  json_object *session = json_object_new_object();
  json_object_object_add(session, "foreign_key_checks", json_object_new_string("1"));
  set(task, "target_config", "session", session);
  t = convert_load(task);
  CU_ASSERT_EQUAL_FATAL(t->target.ep.n_session, 1);
  CU_ASSERT_STRING_EQUAL(t->target.ep.session[0].name, "foreign_key_checks");
  CU_ASSERT_STRING_EQUAL(t->target.ep.session[0].value, "1");
  CU_ASSERT_STRING_EQUAL(unit_str(t, DM_UNIT_DUMP, "consistency"), "flush");
  CU_ASSERT_STRING_EQUAL(unit_str(t, DM_UNIT_LOAD, "on-duplicate"), "ignore");
  /* and back: DM's converter strips "--consistency " again */
  dm_error e2 = {0};
  json_object *back = dmh_openapi_task_from_config(t, &e2);
  CU_ASSERT_PTR_NOT_NULL_FATAL(back);
  CU_ASSERT_STRING_EQUAL(
      json_object_get_string(at(back, "source_config.full_migrate_conf.consistency")), "flush");
  CU_ASSERT_STRING_EQUAL(json_object_get_string(at(back, "on_duplicate")), "ignore");
  CU_ASSERT_STRING_EQUAL(json_object_get_string(at(back, "timezone")), "Asia/Shanghai");
  CU_ASSERT_STRING_EQUAL(
      json_object_get_string(at(back, "target_config.session.foreign_key_checks")), "1");
  CU_ASSERT_STRING_EQUAL(json_object_get_string(at(back, "table_migrate_rule[0].target.table")),
                         "*");
  json_object_put(back);
  dmh_task_config_free(t);
  json_object_put(task);
}

static void test_shard_and_filter(void) {
  json_object *task = fixture("shardAndFilterTask.json");
  dmh_task_config *t = convert_load(task);
  CU_ASSERT_EQUAL(t->shard_mode, DM_SHARD_MODE_OPTIMISTIC);
  CU_ASSERT_TRUE(t->strict_optimistic);
  CU_ASSERT_EQUAL_FATAL(t->n_instances, 2);
  const dmh_task_instance *a = &t->instances[0], *b = &t->instances[1];
  CU_ASSERT_STRING_EQUAL(a->source_id, "mysql-replica-01");
  /* binlog_pos 0 and binlog_gtid "" are not said: a file alone starts at 4 */
  CU_ASSERT_STRING_EQUAL(a->meta_binlog_name, "mysql-bin.001");
  CU_ASSERT_EQUAL(a->meta_binlog_pos, 4);
  CU_ASSERT_PTR_NULL(a->meta_binlog_gtid);
  CU_ASSERT_STRING_EQUAL(b->meta_binlog_name, "mysql-bin.002");
  CU_ASSERT_EQUAL(b->meta_binlog_pos, 1232);
  CU_ASSERT_STRING_EQUAL(b->meta_binlog_gtid, "12e57f06-f360-11eb-8235-585cc2bc66c9:1-24");
  for (int i = 0; i < 2; i++) {
    const dmh_task_instance *in = &t->instances[i];
    CU_ASSERT_PTR_NOT_NULL_FATAL(in->bal);
    CU_ASSERT_EQUAL_FATAL(in->bal->n_do_tables, 1);
    CU_ASSERT_STRING_EQUAL(in->bal->do_tables[0].db, "db_*");
    CU_ASSERT_STRING_EQUAL(in->bal->do_tables[0].table, "tbl_1");
    CU_ASSERT_EQUAL_FATAL(in->n_routes, 1);
    CU_ASSERT_STRING_EQUAL(in->routes[0]->target_schema, "db1");
    CU_ASSERT_STRING_EQUAL(in->routes[0]->target_table, "tbl");
  }
  /* the filter template filterA, for the one rule naming it */
  CU_ASSERT_EQUAL(b->n_filters, 0);
  CU_ASSERT_EQUAL_FATAL(a->n_filters, 1);
  const dmh_filter_rule *f = a->filters[0];
  CU_ASSERT_STRING_EQUAL(f->schema_pattern, "db_*");
  CU_ASSERT_STRING_EQUAL(f->table_pattern, "tbl_1");
  CU_ASSERT_EQUAL(f->action, DMH_FILTER_IGNORE);
  CU_ASSERT_EQUAL_FATAL(f->n_events, 1);
  CU_ASSERT_STRING_EQUAL(f->events[0], "drop database");
  CU_ASSERT_EQUAL_FATAL(f->n_sql_patterns, 1);
  CU_ASSERT_STRING_EQUAL(f->sql_patterns[0], "^Drop");
  CU_ASSERT_EQUAL(unit_int(t, DM_UNIT_LOAD, "pool-size"), 16);
  CU_ASSERT_EQUAL(unit_int(t, DM_UNIT_SYNC, "worker-count"), 32);

  /* the way back: the Task DM's converter gives (hand-written expectation) */
  dm_error err = {0};
  json_object *back = dmh_openapi_task_from_config(t, &err),
              *want = fixture("shardAndFilterTask-back.json");
  CU_ASSERT_PTR_NOT_NULL_FATAL(back);
  if (!json_object_equal(back, want))
    fprintf(stderr, "back:\n%s\nwant:\n%s\n",
            json_object_to_json_string_ext(back, JSON_C_TO_STRING_PRETTY),
            json_object_to_json_string_ext(want, JSON_C_TO_STRING_PRETTY));
  CU_ASSERT_TRUE(json_object_equal(back, want));
  /* and that Task goes in again to the same config */
  dmh_task_config *t2 = convert_load(back);
  CU_ASSERT_EQUAL(t2->n_instances, 2);
  CU_ASSERT_EQUAL(t2->instances[0].n_filters, 1);
  CU_ASSERT_EQUAL(t2->instances[1].meta_binlog_pos, 1232);
  json_object *back2 = dmh_openapi_task_from_config(t2, &err);
  CU_ASSERT_TRUE(json_object_equal(back2, want));
  json_object_put(back2);
  dmh_task_config_free(t2);
  json_object_put(back);
  json_object_put(want);
  dmh_task_config_free(t);
  json_object_put(task);
}

static void test_source(void) {
  json_object *src = fixture("source.json");
  /* DM's fixture leaves out `enable`, which DM's schema requires (its HTTP validator refuses) */
  expect_refused(src, true, DM_ERR_CONFIG_INVALID, "`source.enable` is required (DM's Source)");
  set(src, "", "enable", json_object_new_boolean(true));
  expect_refused(src, true, DM_ERR_CONFIG_UNKNOWN, "`source.security`: TLS given");
  set(src, "", "security", NULL);
  char *yaml = NULL;
  dm_error err = {0};
  CU_ASSERT_EQUAL_FATAL(dmh_openapi_source_to_yaml(src, &yaml, &err), 0);
  /* relay_binlog_name: the YAML reader's judgement, at its key */
  const char *p = test_write(tmp_dir, "source.yaml", yaml, 0600);
  dmh_source_config *s = NULL;
  CU_ASSERT_EQUAL(dmh_source_config_load(p, &s, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_CONFIG_UNKNOWN);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "DM key `relay-binlog-name`"));
  free(yaml);

  set(src, "relay_config", "relay_binlog_name", json_object_new_string(""));
  set(src, "relay_config", "relay_binlog_gtid", json_object_new_string(""));
  CU_ASSERT_EQUAL_FATAL(dmh_openapi_source_to_yaml(src, &yaml, &err), 0);
  p = test_write(tmp_dir, "source.yaml", yaml, 0600);
  if (dmh_source_config_load(p, &s, &err) != 0)
    fprintf(stderr, "%s\n%s\n", err.message, yaml);
  free(yaml);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  CU_ASSERT_STRING_EQUAL(s->source_id, "mysql-01");
  CU_ASSERT_STRING_EQUAL(s->from.ep.host, "127.0.0.1");
  CU_ASSERT_EQUAL(s->from.ep.port, 3306);
  CU_ASSERT_STRING_EQUAL(s->from.ep.user, "root");
  CU_ASSERT_STRING_EQUAL(s->from.ep.password, "123456");
  CU_ASSERT_FALSE(s->enable_gtid);
  CU_ASSERT_TRUE(s->enable_relay);
  /* DM's relative ./relay_log is dmhost's default place, beside the file */
  char want_dir[PATH_MAX];
  real_join(tmp_dir, "relay", want_dir, sizeof want_dir);
  CU_ASSERT_STRING_EQUAL(s->relay_dir, want_dir);

  json_object *back = dmh_openapi_source_from_config(s, &err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(back);
  CU_ASSERT_STRING_EQUAL(json_object_get_string(at(back, "password")), "******");
  CU_ASSERT_STRING_EQUAL(json_object_get_string(at(back, "source_name")), "mysql-01");
  CU_ASSERT_EQUAL(json_object_get_int(at(back, "port")), 3306);
  CU_ASSERT_TRUE(json_object_get_boolean(at(back, "relay_config.enable_relay")));
  CU_ASSERT_STRING_EQUAL(json_object_get_string(at(back, "relay_config.relay_dir")), want_dir);
  CU_ASSERT_EQUAL(json_object_get_int(at(back, "purge.interval")), 3600);
  CU_ASSERT_PTR_NULL(at(back, "security"));
  /* the Source given back goes in again (its obfuscated password is a password like any) */
  CU_ASSERT_EQUAL(dmh_openapi_source_to_yaml(back, &yaml, &err), 0);
  free(yaml);
  json_object_put(back);
  dmh_source_config_free(s);

  /* refusals of the source by path */
  set(src, "purge", "expires", json_object_new_string("1h"));
  expect_refused(src, true, DM_ERR_CONFIG_INVALID, "`source.purge.expires` must be an integer");
  set(src, "purge", "expires", json_object_new_int(0));
  json_object_object_del(src, "enable_gtid");
  expect_refused(src, true, DM_ERR_CONFIG_INVALID, "`source.enable_gtid` is required");
  json_object_put(src);
}

/* DM's own task files (tests/config/dm/) that dmhost loads: as a Task, that Task as DM's YAML,
 * loaded, as a Task again: the same once the first pass wrote it (a filter whose tables are none
 * of the source's rules is named on every rule, DM's way, and the way in then gives each rule its
 * own copy; from there on the Task stays as it is: DM's converter would add filters each time). */
static void test_dm_files_round_trip(void) {
  static const char *const files[] = {
      "dmctl_basic-dm-task.yaml", "sharding-dm-task.yaml", "full_mode-dm-task.yaml",
      "upstream_switch-task-pessimistic.yaml", "many_tables-dm-task.yaml"};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/dm/%s", DMH_TEST_DIR, files[i]);
    dmh_task_config *t = load_task(p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    dm_error err = {0};
    json_object *back[3] = {NULL, NULL, NULL};
    back[0] = dmh_openapi_task_from_config(t, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(back[0]);
    CU_ASSERT_EQUAL(json_object_array_length(at(back[0], "source_config.source_conf")),
                    (size_t)t->n_instances);
    dmh_task_config_free(t);
    for (int k = 1; k < 3; k++) {
      t = convert_load(back[k - 1]);
      back[k] = dmh_openapi_task_from_config(t, &err);
      dmh_task_config_free(t);
      CU_ASSERT_PTR_NOT_NULL_FATAL(back[k]);
    }
    if (!json_object_equal(back[1], back[2]))
      fprintf(stderr, "%s:\n%s\n%s\n", files[i],
              json_object_to_json_string_ext(back[1], JSON_C_TO_STRING_PRETTY),
              json_object_to_json_string_ext(back[2], JSON_C_TO_STRING_PRETTY));
    CU_ASSERT_TRUE(json_object_equal(back[1], back[2]));
    /* the rules themselves never change */
    CU_ASSERT_EQUAL(json_object_array_length(at(back[0], "table_migrate_rule")),
                    json_object_array_length(at(back[1], "table_migrate_rule")));
    for (int k = 0; k < 3; k++)
      json_object_put(back[k]);
  }
  /* a file whose every filter fits one rule is the same Task at once */
  json_object *task = fixture("shardAndFilterTask.json");
  dmh_task_config *t = convert_load(task);
  dm_error err = {0};
  json_object *b1 = dmh_openapi_task_from_config(t, &err);
  dmh_task_config_free(t);
  t = convert_load(b1);
  json_object *b2 = dmh_openapi_task_from_config(t, &err);
  CU_ASSERT_TRUE(json_object_equal(b1, b2));
  dmh_task_config_free(t);
  json_object_put(b1);
  json_object_put(b2);
  json_object_put(task);
}

/* ---- refusals by JSON path ---- */

static void test_refusals(void) {
  json_object *task = fixture("shardAndFilterTask.json");
  set(task, "", "workers", json_object_new_int(3));
  expect_refused(task, false, DM_ERR_CONFIG_UNKNOWN, "`task.workers`: DM's Task has no member");
  json_object_object_del(task, "workers");

  set(task, "source_config.source_conf[1]", "binlog_position", json_object_new_int(4));
  expect_refused(task, false, DM_ERR_CONFIG_UNKNOWN,
                 "`task.source_config.source_conf[1].binlog_position`: DM's TaskSourceConf has "
                 "no member");
  json_object_object_del(at(task, "source_config.source_conf[1]"), "binlog_position");

  set(task, "source_config.source_conf[1]", "binlog_pos", json_object_new_string("1232"));
  expect_refused(task, false, DM_ERR_CONFIG_INVALID,
                 "`task.source_config.source_conf[1].binlog_pos` must be an integer (DM's "
                 "TaskSourceConf), not a string");
  set(task, "source_config.source_conf[1]", "binlog_pos", json_object_new_int(1232));

  json_object *names = json_object_new_array();
  json_object_array_add(names, json_object_new_string("filterB"));
  set(task, "table_migrate_rule[1]", "binlog_filter_rule", names);
  expect_refused(task, false, DM_ERR_CONFIG_INVALID,
                 "filter rule name filterB not found. "
                 "(`task.table_migrate_rule[1].binlog_filter_rule[0]`");
  json_object_object_del(at(task, "table_migrate_rule[1]"), "binlog_filter_rule");

  set(task, "", "task_mode", json_object_new_string("fast"));
  expect_refused(
      task, false, DM_ERR_CONFIG_INVALID,
      "`task.task_mode` is \"fast\"; DM's Task takes \"full\", \"incremental\", \"all\"");
  set(task, "", "task_mode", json_object_new_string("all"));

  set(task, "source_config.incr_migrate_conf", "safe_mode", json_object_new_string("true"));
  expect_refused(task, false, DM_ERR_CONFIG_INVALID,
                 "`task.source_config.incr_migrate_conf.safe_mode` must be true or false");
  set(task, "source_config.incr_migrate_conf", "safe_mode", json_object_new_boolean(true));

  set(task, "table_migrate_rule[0].source", "table", json_object_new_int(1));
  expect_refused(task, false, DM_ERR_CONFIG_INVALID,
                 "`task.table_migrate_rule[0].source.table` must be a string");
  set(task, "table_migrate_rule[0].source", "table", json_object_new_string("tbl_1"));

  set(task, "table_migrate_rule[1].source", "source_name", json_object_new_string("mysql-9"));
  expect_refused(task, false, DM_ERR_CONFIG_INVALID,
                 "`task.table_migrate_rule[1].source.source_name` names source `mysql-9`, which "
                 "task.source_config.source_conf does not list");
  set(task, "table_migrate_rule[1].source", "source_name",
      json_object_new_string("mysql-replica-02"));

  set(task, "target_config", "password", json_object_new_string_len("ab\0cd", 5));
  expect_refused(task, false, DM_ERR_CONFIG_INVALID,
                 "`task.target_config.password` holds a NUL character");
  set(task, "target_config", "password", json_object_new_string("\xff\xfe"));
  expect_refused(task, false, DM_ERR_CONFIG_INVALID, "`task.target_config.password` is not UTF-8");
  set(task, "target_config", "password", json_object_new_string("p\xc3\xa4\xf0\x9f\x98\x80"));
  char *y = task_yaml(task); /* UTF-8 (libyaml escapes what it deems unprintable): back equal */
  dm_error err = {0};
  dmh_task_config *t = load_yaml_task(y, &err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_STRING_EQUAL(t->target.ep.password, "p\xc3\xa4\xf0\x9f\x98\x80");
  dmh_task_config_free(t);
  free(y);
  set(task, "target_config", "password", json_object_new_string("123456"));

  json_object_object_del(task, "target_config");
  expect_refused(task, false, DM_ERR_CONFIG_INVALID, "`task.target_config` is required");
  json_object_put(task);

  json_object *arr = json_object_new_array();
  expect_refused(arr, false, DM_ERR_CONFIG_INVALID,
                 "`task` must be an object (DM's Task), not an array");
  json_object_put(arr);
}

/* ---- hostile strings ---- */

static void test_hostile_strings(void) {
  json_object *task = fixture("shardAndFilterTask.json");
  const char *pw = "pa: ss\nname: evil\n- [x]\t\"'#";
  const char *db = "db: x\n- y #z";
  set(task, "target_config", "password", json_object_new_string(pw));
  set(task, "table_migrate_rule[1].source", "schema", json_object_new_string(db));
  set(task, "table_migrate_rule[1].source", "table", json_object_new_string(""));
  /* strings YAML 1.1 reads as other types stay strings */
  set(task, "", "meta_schema", json_object_new_string("true"));
  set(task, "table_migrate_rule[0].target", "schema", json_object_new_string("0123"));
  char *yaml = task_yaml(task);
  /* one scalar: no second `name:` key appears at the start of a line */
  CU_ASSERT_PTR_NULL(strstr(yaml, "\nname: evil"));
  dm_error err = {0};
  dmh_task_config *t = load_yaml_task(yaml, &err);
  if (!t)
    fprintf(stderr, "%s\n%s\n", err.message, yaml);
  free(yaml);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_STRING_EQUAL(t->name, "test");
  CU_ASSERT_STRING_EQUAL(t->target.ep.password, pw);
  CU_ASSERT_STRING_EQUAL(t->meta_schema, "true");
  CU_ASSERT_STRING_EQUAL(t->instances[0].routes[0]->target_schema, "0123");
  CU_ASSERT_PTR_NOT_NULL_FATAL(t->instances[1].bal);
  CU_ASSERT_EQUAL_FATAL(t->instances[1].bal->n_do_dbs, 1);
  CU_ASSERT_STRING_EQUAL(t->instances[1].bal->do_dbs[0], db);
  dmh_task_config_free(t);
  json_object_put(task);
}

/* ---- the YAML row DM's converter writes ---- */

static void test_extra_args(void) {
  static const char head[] = "name: t\ntask-mode: full\ntarget-database: {host: h, user: u}\n"
                             "mysql-instances:\n  - source-id: s\n    mydumper-config-name: d\n"
                             "    mydumper-thread: 3\n"
                             "mydumpers:\n  d:\n    threads: 5\n    extra-args: ";
  char text[512];
  snprintf(text, sizeof text, "%s\"--consistency snapshot\"\n", head);
  dm_error err = {0};
  dmh_task_config *t = load_yaml_task(text, &err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_STRING_EQUAL(unit_str(t, DM_UNIT_DUMP, "consistency"), "snapshot");
  CU_ASSERT_EQUAL(unit_int(t, DM_UNIT_DUMP, "threads"), 3); /* mydumper-thread over threads */
  dmh_task_config_free(t);

  /* dumpling's options as DM parses them (pflag's forms, one pair of quotes off a word); they
   * override the mydumper's keys and mydumper-thread, the later one wins */
  snprintf(text, sizeof text,
           "%s'--threads 2 -r=1000 -s4000 -F 64MiB --where \"id>10\" --consistency=flush "
           "--filetype sql --transactional-consistency -t 7'\n",
           head);
  t = load_yaml_task(text, &err);
  if (!t)
    fprintf(stderr, "\n  %s\n", err.message);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_EQUAL(unit_int(t, DM_UNIT_DUMP, "threads"), 7);
  CU_ASSERT_EQUAL(unit_int(t, DM_UNIT_DUMP, "chunk-rows"), 1000);
  CU_ASSERT_EQUAL(unit_int(t, DM_UNIT_DUMP, "statement-size"), 4000);
  CU_ASSERT_EQUAL(unit_int(t, DM_UNIT_DUMP, "chunk-filesize"), 64LL << 20);
  CU_ASSERT_STRING_EQUAL(unit_str(t, DM_UNIT_DUMP, "where"), "id>10");
  CU_ASSERT_STRING_EQUAL(unit_str(t, DM_UNIT_DUMP, "consistency"), "flush");
  dmh_task_config_free(t);
  /* dumpling's size forms: B, K/KB/KiB ... T/TB/TiB, any case */
  static const struct {
    const char *f;
    long long v;
  } sizes[] = {{"4096", 4096},    {"4096B", 4096},    {"8k", 8 << 10},
               {"8KB", 8 << 10},  {"8kib", 8 << 10},  {"3MiB", 3 << 20},
               {"2G", 2LL << 30}, {"1tb", 1LL << 40}, {"2TiB", 2LL << 40}};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    snprintf(text, sizeof text, "%s\"-F %s\"\n", head, sizes[i].f);
    t = load_yaml_task(text, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_EQUAL(unit_int(t, DM_UNIT_DUMP, "chunk-filesize"), sizes[i].v);
    dmh_task_config_free(t);
  }
  /* DM's old --no-locks is --consistency none */
  snprintf(text, sizeof text, "%s\"--no-locks\"\n", head);
  t = load_yaml_task(text, &err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_STRING_EQUAL(unit_str(t, DM_UNIT_DUMP, "consistency"), "none");
  dmh_task_config_free(t);

  static const struct {
    const char *args, *want;
    int code;
  } refused[] = {
      {"\"-B test -T t1,t2\"",
       "dumpling's option -B is not supported by dmhost: it replaces the task's block-allow-list",
       DM_ERR_CONFIG_UNKNOWN},
      {"\"--tables-list=a.b\"", "dumpling's option --tables-list is not supported",
       DM_ERR_CONFIG_UNKNOWN},
      {"\"--snapshot 123\"", "dumpling's option --snapshot is not supported",
       DM_ERR_CONFIG_UNKNOWN},
      {"\"--filetype csv\"", "dumpling's --filetype csv is not supported: the dump writes SQL",
       DM_ERR_CONFIG_UNKNOWN},
      {"\"--bogus 1\"", "unknown dumpling option --bogus (dmhost takes --threads",
       DM_ERR_CONFIG_UNKNOWN},
      {"\"--consistency \"", "dumpling's --consistency needs a value", DM_ERR_CONFIG_INVALID},
      {"\"--threads two\"", "dumpling's --threads takes a whole number, not \"two\"",
       DM_ERR_CONFIG_INVALID},
      {"\"-F 64XB\"", "dumpling's -F takes a size (\"64MiB\", \"1048576\"), not \"64XB\"",
       DM_ERR_CONFIG_INVALID},
      {"\"-F 1iB\"", "dumpling's -F takes a size (\"64MiB\", \"1048576\"), not \"1iB\"",
       DM_ERR_CONFIG_INVALID},
      {"\"-F 2PB\"", "dumpling's -F takes a size (\"64MiB\", \"1048576\"), not \"2PB\"",
       DM_ERR_CONFIG_INVALID},
      {"\"--no-locks --consistency flush\"", "gives both --no-locks and --consistency \"flush\"",
       DM_ERR_CONFIG_INVALID},
      {"\"threads 2\"", "\"threads\" is not one of dumpling's options", DM_ERR_CONFIG_INVALID},
  };
  for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
    snprintf(text, sizeof text, "%s%s\n", head, refused[i].args);
    CU_ASSERT_PTR_NULL(load_yaml_task(text, &err));
    CU_ASSERT_EQUAL(err.code, refused[i].code);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "`mydumpers.d.extra-args` in the task file"));
    if (!strstr(err.message, refused[i].want))
      fprintf(stderr, "\n  %s: %s\n", refused[i].args, err.message);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, refused[i].want));
  }
}

static int suite_init(void) {
  return mkdtemp(tmp_dir) ? 0 : -1;
}

static int suite_clean(void) {
  char cmd[64];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmp_dir);
  return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"DM's noShardTask fixture, loaded", test_no_shard},
      {"DM's shardAndFilterTask fixture, loaded and back", test_shard_and_filter},
      {"DM's source fixture, loaded and back", test_source},
      {"DM's task files as a Task and back", test_dm_files_round_trip},
      {"refusals name the JSON path", test_refusals},
      {"hostile strings stay one YAML scalar", test_hostile_strings},
      {"extra-args: dumpling's options", test_extra_args},
  };
  return dmh_cunit_run("config_openapi", suite_init, suite_clean, tests,
                       sizeof tests / sizeof tests[0]);
}
