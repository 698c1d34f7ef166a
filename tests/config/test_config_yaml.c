/* DM's YAML task and source files read as they are (host/config/config_yaml.c, issue 23): DM's own
 * example and test files (tests/config/dm/, see its README) are each read with the values they
 * give, or refused naming exactly the key and line dmhost does not do; YAML's features (anchors,
 * merge keys, quoted and plain scalars, block strings) and its errors, each at its YAML line.
 * Before config_yaml.c every one of these files was a libconfig syntax error at line 1 or 2. */
#include <CUnit/Basic.h>
#include <libconfig.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "config_test_util.h"
#include "cunit_run.h"

/* A file of DM's under tests/config/dm/. */
static const char *dm(const char *name) {
  char *b = test_buf[test_next++ % 4];
  snprintf(b, PATH_MAX, "%s/dm/%s", DMH_TEST_DIR, name);
  return b;
}

/* The group a key "g.k" of a unit section is in (its section for a plain key); key moves to k. */
static config_setting_t *unit_group(const dmh_task_config *t, dm_unit_kind kind, const char **key) {
  config_setting_t *s = dmh_task_unit_section(t, kind);
  const char *dot = strchr(*key, '.');
  if (!s || !dot)
    return s;
  char g[64];
  snprintf(g, sizeof g, "%.*s", (int)(dot - *key), *key);
  *key = dot + 1;
  return config_setting_get_member(s, g);
}

/* An integer or string of a unit section ("sync", "worker-count", "validator.mode"); -1 / NULL
 * when absent. */
static long long unit_int(const dmh_task_config *t, dm_unit_kind kind, const char *key) {
  config_setting_t *s = unit_group(t, kind, &key);
  long long v;
  if (!s || !config_setting_lookup_int64(s, key, &v)) {
    int i;
    if (!s || !config_setting_lookup_int(s, key, &i))
      return -1;
    v = i;
  }
  return v;
}

static const char *unit_str(const dmh_task_config *t, dm_unit_kind kind, const char *key) {
  config_setting_t *s = unit_group(t, kind, &key);
  const char *v = NULL;
  return s && config_setting_lookup_string(s, key, &v) ? v : NULL;
}

static int unit_bool(const dmh_task_config *t, dm_unit_kind kind, const char *key) {
  config_setting_t *s = dmh_task_unit_section(t, kind);
  int v;
  return s && config_setting_lookup_bool(s, key, &v) ? v : -1;
}

/* ---- DM's files that are read ---- */

static void test_dm_sources(void) {
  dmh_source_config *s = load_source(dm("master-source.yaml"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  CU_ASSERT_STRING_EQUAL(s->source_id, "mysql-replica-01");
  CU_ASSERT_EQUAL(s->server_id, 101);
  CU_ASSERT_FALSE(s->enable_gtid);
  CU_ASSERT_FALSE(s->enable_relay);
  CU_ASSERT_STRING_EQUAL(s->from.ep.host, "127.0.0.1");
  CU_ASSERT_EQUAL(s->from.ep.port, 3306);
  CU_ASSERT_STRING_EQUAL(s->from.ep.user, "root");
  dmh_source_config_free(s);

  /* flavor '', relay-binlog-name '', checker with DM's defaults: accepted */
  s = load_source(dm("all_mode-source1.yaml"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  CU_ASSERT_TRUE(s->enable_gtid);
  CU_ASSERT_TRUE(s->enable_relay);
  CU_ASSERT_STRING_EQUAL(s->from.ep.password, "123456");
  dmh_source_config_free(s);

  /* charset (deprecated in DM: the relay connection's SET NAMES) is accepted whatever it is */
  char dir[] = "/tmp/dmh-yaml-XXXXXX";
  CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
  const char *p = test_write(dir, "source.yaml",
                             "source-id: s\ncharset: gbk\nfrom:\n  host: 127.0.0.1\n  port: 3306\n"
                             "  user: root\n",
                             0600);
  s = load_source(p);
  CU_ASSERT_PTR_NOT_NULL(s);
  dmh_source_config_free(s);
  unlink(p);
  rmdir(dir);
}

static void test_dm_tasks(void) {
  dmh_task_config *t = load_task(dm("dmctl_basic-dm-task.yaml"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_STRING_EQUAL(t->name, "test");
  CU_ASSERT_EQUAL(t->mode, DMH_MODE_ALL);
  CU_ASSERT_EQUAL(t->shard_mode, DM_SHARD_MODE_PESSIMISTIC); /* is-sharding: true */
  CU_ASSERT_EQUAL(t->target.ep.port, 4000);
  CU_ASSERT_EQUAL_FATAL(t->n_instances, 2);
  CU_ASSERT_STRING_EQUAL(t->instances[1].source_id, "mysql-replica-02");
  CU_ASSERT_PTR_NOT_NULL_FATAL(t->instances[0].bal);
  CU_ASSERT_STRING_EQUAL(t->instances[0].bal->name, "instance");
  CU_ASSERT_EQUAL_FATAL(t->instances[0].n_routes, 2);
  CU_ASSERT_STRING_EQUAL(t->instances[0].routes[0]->target_table, "t_target");
  CU_ASSERT_EQUAL(t->n_filters, 2);
  /* syncers.global, named by both instances */
  CU_ASSERT_EQUAL(unit_int(t, DM_UNIT_SYNC, "worker-count"), 16);
  CU_ASSERT_EQUAL(unit_int(t, DM_UNIT_SYNC, "batch"), 100);
  CU_ASSERT_EQUAL(unit_int(t, DM_UNIT_LOAD, "pool-size"), 16);
  CU_ASSERT_EQUAL(unit_int(t, DM_UNIT_DUMP, "threads"), 4);
  CU_ASSERT_EQUAL(unit_int(t, DM_UNIT_DUMP, "chunk-filesize"), 64 << 20); /* DM's MiB */
  CU_ASSERT_EQUAL(unit_bool(t, DM_UNIT_LOAD, "cleanup-dump"), 1); /* clean-dump-file: DM's true */
  dmh_task_config_free(t);

  t = load_task(dm("sharding-dm-task.yaml"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_EQUAL(t->n_routes, 2);
  dmh_task_config_free(t);

  /* DM's validators entry named by the instance: the sync's `validator` group */
  t = load_task(dm("validator_basic-dm-task-standalone.yaml"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_EQUAL(unit_int(t, DM_UNIT_SYNC, "worker-count"), 16);
  CU_ASSERT_STRING_EQUAL(unit_str(t, DM_UNIT_SYNC, "validator.mode"), "full");
  CU_ASSERT_EQUAL(unit_int(t, DM_UNIT_SYNC, "validator.worker-count"), 4);
  CU_ASSERT_STRING_EQUAL(unit_str(t, DM_UNIT_SYNC, "validator.row-error-delay"), "1s");
  CU_ASSERT_STRING_EQUAL(unit_str(t, DM_UNIT_SYNC, "validator.max-pending-row-size"), "500m");
  CU_ASSERT_EQUAL(unit_int(t, DM_UNIT_SYNC, "validator.max-pending-row-count"), 1000);
  dmh_task_config_free(t);

  /* mode full: no sync section; loader's on-duplicate-logical is the load's on-duplicate */
  t = load_task(dm("full_mode-dm-task.yaml"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_EQUAL(t->mode, DMH_MODE_FULL);
  CU_ASSERT_PTR_NULL(dmh_task_unit_section(t, DM_UNIT_SYNC));
  CU_ASSERT_STRING_EQUAL(unit_str(t, DM_UNIT_LOAD, "on-duplicate"), "ignore");
  dmh_task_config_free(t);

  /* per-instance mydumper-thread, loader-thread, syncer-thread; black-white-list, DM's old name */
  t = load_task(dm("upstream_switch-task-pessimistic.yaml"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_EQUAL(t->shard_mode, DM_SHARD_MODE_PESSIMISTIC);
  CU_ASSERT_EQUAL(unit_int(t, DM_UNIT_DUMP, "threads"), 4);
  CU_ASSERT_EQUAL(unit_int(t, DM_UNIT_LOAD, "pool-size"), 16);
  CU_ASSERT_EQUAL(unit_int(t, DM_UNIT_SYNC, "worker-count"), 16);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t->instances[1].bal);
  CU_ASSERT_STRING_EQUAL(t->instances[1].bal->do_dbs[0], "db_pessimistic");
  dmh_task_config_free(t);

  /* DM's expression_filter test files: every rule read, resolved on the instance, one kind each */
  t = load_task(dm("expression_filter-dm-task2.yaml"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_EQUAL(t->n_exprs, 9);
  CU_ASSERT_EQUAL_FATAL(t->instances[0].n_exprs, 9);
  const dmh_expr_rule *and = t->instances[0].exprs[6];
  CU_ASSERT_STRING_EQUAL(and->name, "update_old_and_new");
  CU_ASSERT_STRING_EQUAL(and->update_old_expr, "c = 1");
  CU_ASSERT_STRING_EQUAL(and->update_new_expr, "c = 2");
  CU_ASSERT_PTR_NULL(and->insert_expr);
  CU_ASSERT_STRING_EQUAL(t->instances[0].exprs[7]->insert_expr, "name != 'Müller…'");
  dmh_task_config_free(t);
  t = load_task(dm("expression_filter-dm-task.yaml"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_EQUAL(t->n_exprs, 30);
  CU_ASSERT_EQUAL_FATAL(t->instances[0].n_exprs, 30);
  CU_ASSERT_STRING_EQUAL(t->instances[0].exprs[29]->insert_expr, "c_json->\"$.id\" = 2");
  dmh_task_config_free(t);

  /* DM's sync_collation test: collation_compatible: "strict" (refused before: not built) */
  t = load_task(dm("sync_collation-dm-task.yaml"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_TRUE(t->collation_strict);
  dmh_task_config_free(t);
  t = load_task(dm("dmctl_basic-dm-task.yaml"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_FALSE(t->collation_strict); /* DM's default, loose */
  dmh_task_config_free(t);

  /* chunk-filesize 0 (dumpling: no split) keeps dmhost's files; statement-size is the dump's */
  t = load_task(dm("many_tables-dm-task.yaml"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_EQUAL(unit_int(t, DM_UNIT_DUMP, "chunk-filesize"), -1);
  CU_ASSERT_EQUAL(unit_int(t, DM_UNIT_DUMP, "statement-size"), 100);
  dmh_task_config_free(t);
}

/* ---- DM's files that are refused: the key and its line ---- */

static const char dm_doc[] = "remove it from the task file (docs/config.md, \"DM's YAML files\")";

static void test_dm_refused(void) {
  char want[1024];
  /* its extra-args "--statement-size=100" is read now (test_config_openapi's test_extra_args);
   * DM's test keeps its certificates in a folder its harness fills in */
  snprintf(want, sizeof want,
           "%s:13: `target-database.security.ssl-ca` in the task file: cannot read \"%s\": No "
           "such file or directory (give a PEM file this process can read)",
           dm("tls-dm-task.yaml"), dm("dir-placeholer/task-ca.pem"));
  expect_failure(dm("tls-dm-task.yaml"), false, DM_ERR_CONFIG_INVALID, want);

  /* extra-args "-B test -T t1,t2 --consistency none": dumpling's -B is named */
  snprintf(want, sizeof want,
           "%s:122: `mydumpers.global.extra-args` in the task file: dumpling's option -B is not "
           "supported by dmhost: it replaces the task's block-allow-list for the dump only; give "
           "the schemas in block-allow-list; remove it (docs/config.md, \"DM's YAML files\")",
           dm("task_advanced.yaml"));
  expect_failure(dm("task_advanced.yaml"), false, DM_ERR_CONFIG_UNKNOWN, want);

  /* DM's own binlog-filter refuses "truncate" too (pkg/binlog-filter: not an event type) */
  snprintf(want, sizeof want,
           "%s:45: `filters.user-filter-1.events.[2]` in the task file: unknown event "
           "\"truncate\" (docs/config.md, \"filters\", lists DM's events)",
           dm("all_mode-dm-task.yaml"));
  expect_failure(dm("all_mode-dm-task.yaml"), false, DM_ERR_CONFIG_INVALID, want);

  snprintf(want, sizeof want,
           "%s:17: DM key `relay-binlog-gtid` is not supported by dmhost yet (only \"\"): the "
           "relay starts where the tasks need it; remove it from the source file (docs/config.md, "
           "\"DM's YAML files\")",
           dm("worker-source.yaml"));
  expect_failure(dm("worker-source.yaml"), true, DM_ERR_CONFIG_UNKNOWN, want);

  /* DM's test script fills the placeholder in: here it is the string it is, at its line */
  snprintf(want, sizeof want,
           "%s:30: `mysql-instances.[1].meta.binlog-pos` in the task file must be an integer in "
           "4..9223372036854775807 (a binlog file starts with 4 bytes of magic), not a string",
           dm("incremental_mode-dm-task.yaml"));
  expect_failure(dm("incremental_mode-dm-task.yaml"), false, DM_ERR_CONFIG_INVALID, want);
}

/* ---- YAML's own features ---- */

static void test_yaml_features(void) {
  dmh_task_config *t = load_task(fx("yaml-features.yaml"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_FALSE(t->case_sensitive);                        /* plain off */
  CU_ASSERT_EQUAL(t->target.ep.port, 3307);                  /* plain integer */
  CU_ASSERT_STRING_EQUAL(t->target.ep.password, "123456");   /* a string setting */
  CU_ASSERT_STRING_EQUAL(t->instances[1].source_id, "0123"); /* quoted */
  CU_ASSERT_STRING_EQUAL(t->bal_rules[0].do_dbs[1], "2024"); /* a name, though plain */
  CU_ASSERT_STRING_EQUAL(t->filters[0].sql_patterns[0], "^DROP\\s+PROCEDURE"); /* >- block */
  /* DM's Error action and events, stored in DM's spelling (an alias as what it stands for) */
  CU_ASSERT_EQUAL_FATAL(t->n_filters, 2);
  CU_ASSERT_EQUAL(t->filters[1].action, DMH_FILTER_ERROR);
  CU_ASSERT_EQUAL_FATAL(t->filters[1].n_events, 4);
  CU_ASSERT_STRING_EQUAL(t->filters[1].events[0], "drop column");
  CU_ASSERT_STRING_EQUAL(t->filters[1].events[1], "rename index");
  CU_ASSERT_STRING_EQUAL(t->filters[1].events[2], "create database");
  CU_ASSERT_STRING_EQUAL(t->filters[1].events[3], "incompatible ddl changes");
  /* syncers.common merges syncers.base (<<: *base); the instance's syncer-thread agrees */
  CU_ASSERT_EQUAL(unit_int(t, DM_UNIT_SYNC, "worker-count"), 4);
  CU_ASSERT_EQUAL(unit_int(t, DM_UNIT_SYNC, "batch"), 100);
  CU_ASSERT_EQUAL(unit_bool(t, DM_UNIT_SYNC, "safe-mode"), 1);
  /* DM's safe-mode-duration, a string as DM's (the sync reads it: plugins/sync/sync_safe.c) */
  CU_ASSERT_STRING_EQUAL(unit_str(t, DM_UNIT_SYNC, "safe-mode-duration") ?: "", "1m30s");
  /* the task's timezone is the sync's (plugins/sync/sync_tz.c), a string whatever YAML reads */
  CU_ASSERT_STRING_EQUAL(unit_str(t, DM_UNIT_SYNC, "timezone"), "+08:00");
  dmh_task_config_free(t);
}

static void test_yaml_errors(void) {
  char want[1024];
  /* libyaml's problem, at its line and column, and where the unclosed string began */
  snprintf(want, sizeof want,
           "%s:6:1: YAML syntax error in the task file: found unexpected end of stream while "
           "scanning a quoted scalar that started at line 4, column 9",
           fx("yaml-syntax.yaml"));
  expect_failure(fx("yaml-syntax.yaml"), false, DM_ERR_CONFIG_PARSE, want);

  /* the loader's own message, at the YAML key's line */
  snprintf(want, sizeof want,
           "%s:4: unknown setting `target-databse` in the task file; did you mean "
           "`target-database`?",
           fx("yaml-unknown.yaml"));
  expect_failure(fx("yaml-unknown.yaml"), false, DM_ERR_CONFIG_UNKNOWN, want);

  snprintf(want, sizeof want,
           "%s:8: DM key `mysql-instances.[0].column-mapping-rules` is not supported by dmhost yet "
           "(only empty): column mapping is deprecated in DM and not built; %s",
           fx("yaml-dm-unsupported.yaml"), dm_doc);
  expect_failure(fx("yaml-dm-unsupported.yaml"), false, DM_ERR_CONFIG_UNKNOWN, want);

  snprintf(want, sizeof want,
           "%s:15: mysql-instances.[1] (source `mysql-02`) and mysql-instances.[0] (source "
           "`mysql-01`, line 7) give the sync unit different `worker-count`: 4 here, 32 there; "
           "dmhost runs one `sync` section per task: give every instance the same syncer settings",
           fx("yaml-instances-differ.yaml"));
  expect_failure(fx("yaml-instances-differ.yaml"), false, DM_ERR_CONFIG_INVALID, want);

  /* mode load: the loader's dir names an earlier dump, not a folder to ignore */
  snprintf(want, sizeof want,
           "%s:12: DM key `loaders.g.dir` is not supported by dmhost yet: in task-mode load it "
           "names an earlier dump (DM appends .<task> to it), which is not mapped yet; give "
           "dmhost's load.dir in a libconfig task file; %s",
           fx("yaml-load-dir.yaml"), dm_doc);
  expect_failure(fx("yaml-load-dir.yaml"), false, DM_ERR_CONFIG_UNKNOWN, want);

  /* DM's ParseDuration refuses a number without a unit ("60"): so does the reader, at its line */
  snprintf(want, sizeof want,
           "%s:12: `syncers.global.safe-mode-duration` in the task file must be a duration as DM's "
           "(Go's): \"60s\", \"1m30s\", \"500ms\" or \"0s\", 0 or more, not \"60\"",
           fx("yaml-bad-duration.yaml"));
  expect_failure(fx("yaml-bad-duration.yaml"), false, DM_ERR_CONFIG_INVALID, want);

  /* DM's validator keys only (start-time is no YAML key in DM), at the key's line */
  snprintf(want, sizeof want,
           "%s:13: `validators.global.start-time` in the task file is no validator setting (DM's "
           "are mode, worker-count, validate-interval, check-interval, row-error-delay, "
           "meta-flush-interval, batch-query-size, max-pending-row-size, max-pending-row-count)",
           fx("yaml-validator-bad.yaml"));
  expect_failure(fx("yaml-validator-bad.yaml"), false, DM_ERR_CONFIG_INVALID, want);
  snprintf(want, sizeof want,
           "%s:8: `mysql-instances.[0].validator-config-name` in the task file names `nope`, which "
           "`validators` does not define",
           fx("yaml-validator-missing.yaml"));
  expect_failure(fx("yaml-validator-missing.yaml"), false, DM_ERR_CONFIG_INVALID, want);

  /* DM's two values only, at the key's line */
  snprintf(want, sizeof want,
           "%s:6: `collation_compatible` in the task file must be \"loose\" or \"strict\" (DM's "
           "values), not \"tight\"",
           fx("yaml-collation-bad.yaml"));
  expect_failure(fx("yaml-collation-bad.yaml"), false, DM_ERR_CONFIG_INVALID, want);

  /* a quoted "3307" is a string, as DM's YAML reads it */
  snprintf(want, sizeof want,
           "%s:5: `target-database.port` in the task file must be an integer in 1..65535, not a "
           "string",
           fx("yaml-wrong-type.yaml"));
  expect_failure(fx("yaml-wrong-type.yaml"), false, DM_ERR_CONFIG_INVALID, want);
}

/* Aliases that expand into more than 4 MiB of text are refused early, not written out. */
static void test_alias_bomb(void) {
  dm_error err = {0};
  dmh_task_config *t = NULL;
  CU_ASSERT_EQUAL(dmh_task_config_load(fx("yaml-alias-bomb.yaml"), &t, &err), -1);
  CU_ASSERT_PTR_NULL(t);
  CU_ASSERT_EQUAL(err.code, DM_ERR_CONFIG_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "grows beyond 4194304 bytes with its aliases"));
}

/* dmhost convert's form: what libconfig's writer makes of the translation. */
static void test_convert(void) {
  dm_error err = {0};
  char *text = dmh_config_convert(dm("master-source.yaml"), &err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(text);
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "source-id = \"mysql-replica-01\";"));
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "server-id = 101;"));
  free(text);
  /* DM's key keeps its name and value in the libconfig form */
  text = dmh_config_convert(dm("sync_collation-dm-task.yaml"), &err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(text);
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "collation_compatible = \"strict\";"));
  free(text);
  text = dmh_config_convert(fx("yaml-syntax.yaml"), &err);
  CU_ASSERT_PTR_NULL(text);
  CU_ASSERT_EQUAL(err.code, DM_ERR_CONFIG_PARSE);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"DM's source files are read", test_dm_sources},
      {"DM's task files are read", test_dm_tasks},
      {"DM's files with keys dmhost does not do are refused at the key", test_dm_refused},
      {"YAML's features", test_yaml_features},
      {"YAML errors at their line", test_yaml_errors},
      {"an alias bomb is refused", test_alias_bomb},
      {"dmhost convert", test_convert},
  };
  return dmh_cunit_run("config_yaml", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
