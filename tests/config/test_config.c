/* Source and task files: the examples parse with the expected values; each bad file in files/ fails
 * with its code and the exact message (file:line, setting path, the fix). */
#include <CUnit/Basic.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "cunit_run.h"
#include "secret.h"

#ifndef DMH_TEST_DIR
#error "DMH_TEST_DIR must name tests/config"
#endif
#ifndef DMH_EXAMPLES_DIR
#error "DMH_EXAMPLES_DIR must name examples/"
#endif

static char test_buf[4][PATH_MAX];
static int test_next;

/* A path under examples/ or tests/config/files/ (a few may be live at once). */
static const char *ex(const char *name) {
  char *b = test_buf[test_next++ % 4];
  snprintf(b, PATH_MAX, "%s/%s", DMH_EXAMPLES_DIR, name);
  return b;
}

static const char *fx(const char *name) {
  char *b = test_buf[test_next++ % 4];
  snprintf(b, PATH_MAX, "%s/files/%s", DMH_TEST_DIR, name);
  return b;
}

/* realpath of a folder joined with a relative name: what relative paths in a file resolve to. */
static void real_join(const char *dir, const char *rel, char *out, size_t size) {
  char real[PATH_MAX];
  CU_ASSERT_PTR_NOT_NULL_FATAL(realpath(dir, real));
  snprintf(out, size, "%s/%s", real, rel);
}

static dmh_task_config *load_task(const char *path) {
  dmh_task_config *t = NULL;
  dm_error err;
  memset(&err, 0, sizeof err);
  int rc = dmh_task_config_load(path, &t, &err);
  if (rc != 0)
    fprintf(stderr, "\nunexpected error: %s\n", err.message);
  CU_ASSERT_EQUAL(rc, 0);
  CU_ASSERT_EQUAL(err.code, 0);
  return t;
}

static dmh_source_config *load_source(const char *path) {
  dmh_source_config *s = NULL;
  dm_error err;
  memset(&err, 0, sizeof err);
  int rc = dmh_source_config_load(path, &s, &err);
  if (rc != 0)
    fprintf(stderr, "\nunexpected error: %s\n", err.message);
  CU_ASSERT_EQUAL(rc, 0);
  CU_ASSERT_EQUAL(err.code, 0);
  return s;
}

static void expect_failure(const char *path, bool source, int32_t code, const char *want);

/* ---- the examples ---- */

static void test_example_source(void) {
  dmh_source_config *s = load_source(ex("source.cfg"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  CU_ASSERT_STRING_EQUAL(s->path, ex("source.cfg"));
  CU_ASSERT_STRING_EQUAL(s->source_id, "mysql-01");
  CU_ASSERT_FALSE(s->enable_gtid);
  CU_ASSERT_FALSE(s->enable_relay);
  char want[PATH_MAX + 16];
  real_join(DMH_EXAMPLES_DIR, "relay", want, sizeof want);
  CU_ASSERT_STRING_EQUAL(s->relay_dir, want);
  CU_ASSERT_TRUE(s->server_id >= 100000u && s->server_id <= 4000000000u);
  CU_ASSERT_STRING_EQUAL(s->from.ep.host, "127.0.0.1");
  CU_ASSERT_EQUAL(s->from.ep.port, 3306);
  CU_ASSERT_STRING_EQUAL(s->from.ep.user, "root");
  CU_ASSERT_STRING_EQUAL(s->from.ep.password, "");
  CU_ASSERT_PTR_NULL(s->from.ep.socket);
  for (int i = 0; i < DMH_KIND_COUNT; i++)
    CU_ASSERT_PTR_NULL(s->unit_paths[i]);
  CU_ASSERT_PTR_NULL(dmh_source_unit_section(s));
  CU_ASSERT_EQUAL(s->file_mode, 0600); /* files only the owner reads, by default */

  /* The default server-id is a function of source-id only, so it survives restarts. */
  dmh_source_config *again = load_source(ex("source.cfg"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(again);
  CU_ASSERT_EQUAL(again->server_id, s->server_id);
  dmh_source_config *other = load_source(ex("source-relay.cfg"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(other);
  dmh_source_config_free(other);
  dmh_source_config_free(again);
  dmh_source_config_free(s);
}

static void test_example_source_relay(void) {
  dmh_source_config *s = load_source(ex("source-relay.cfg"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  CU_ASSERT_STRING_EQUAL(s->source_id, "mysql-02");
  CU_ASSERT_TRUE(s->enable_gtid);
  CU_ASSERT_TRUE(s->enable_relay);
  /* relay-dir = "./relay" is relative to the file's folder and stored absolute and normalized. */
  char want[PATH_MAX + 16];
  real_join(DMH_EXAMPLES_DIR, "relay", want, sizeof want);
  CU_ASSERT_STRING_EQUAL(s->relay_dir, want);
  CU_ASSERT_EQUAL(s->server_id, 429496u);
  CU_ASSERT_EQUAL(s->from.ep.port, 3306);
  CU_ASSERT_PTR_NULL(s->unit_paths[DMH_KIND_RELAY]);
  dmh_source_config_free(s);
}

static void assert_default_supervisor(const dmh_supervisor_config *sup) {
  CU_ASSERT_EQUAL(sup->init_timeout_ms, 30000u);
  CU_ASSERT_EQUAL(sup->stop_timeout_ms, 10000u);
  CU_ASSERT_EQUAL(sup->relay_catchup_timeout_ms, 30000u);
  CU_ASSERT_EQUAL(sup->relay_catchup_poll_ms, 200u);
  CU_ASSERT_TRUE(sup->auto_resume);
  CU_ASSERT_EQUAL(sup->auto_resume_initial_ms, 1000u);
  CU_ASSERT_EQUAL(sup->auto_resume_max_ms, 300000u);
}

static void test_example_task_all(void) {
  dmh_task_config *t = load_task(ex("task-all.cfg"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_STRING_EQUAL(t->name, "test");
  CU_ASSERT_EQUAL(t->mode, DMH_MODE_ALL);
  CU_ASSERT_STRING_EQUAL(t->meta_schema, "dm_meta");
  CU_ASSERT_STRING_EQUAL(t->target.ep.host, "127.0.0.1");
  CU_ASSERT_EQUAL(t->target.ep.port, 3307);
  CU_ASSERT_STRING_EQUAL(t->target.ep.user, "root");
  CU_ASSERT_STRING_EQUAL(t->target.ep.password, "");

  CU_ASSERT_EQUAL_FATAL(t->n_bal_rules, 1);
  const dmh_bal_rule *bal = &t->bal_rules[0];
  CU_ASSERT_STRING_EQUAL(bal->name, "bal1");
  CU_ASSERT_EQUAL_FATAL(bal->n_do_dbs, 2);
  CU_ASSERT_STRING_EQUAL(bal->do_dbs[0], "db1");
  CU_ASSERT_STRING_EQUAL(bal->do_dbs[1], "~^shop_.*");
  CU_ASSERT_EQUAL_FATAL(bal->n_ignore_dbs, 1);
  CU_ASSERT_STRING_EQUAL(bal->ignore_dbs[0], "db_scratch");
  CU_ASSERT_EQUAL_FATAL(bal->n_do_tables, 2);
  CU_ASSERT_STRING_EQUAL(bal->do_tables[0].db, "db1");
  CU_ASSERT_STRING_EQUAL(bal->do_tables[0].table, "t1");
  CU_ASSERT_STRING_EQUAL(bal->do_tables[1].db, "~^shop_.*");
  CU_ASSERT_STRING_EQUAL(bal->do_tables[1].table, "~^orders_.*");
  CU_ASSERT_EQUAL_FATAL(bal->n_ignore_tables, 1);
  CU_ASSERT_STRING_EQUAL(bal->ignore_tables[0].table, "t1_backup");

  CU_ASSERT_EQUAL_FATAL(t->n_routes, 1);
  CU_ASSERT_STRING_EQUAL(t->routes[0].name, "r1");
  CU_ASSERT_STRING_EQUAL(t->routes[0].schema_pattern, "shop_*");
  CU_ASSERT_STRING_EQUAL(t->routes[0].table_pattern, "orders_*");
  CU_ASSERT_STRING_EQUAL(t->routes[0].target_schema, "shop");
  CU_ASSERT_STRING_EQUAL(t->routes[0].target_table, "orders");

  CU_ASSERT_EQUAL_FATAL(t->n_filters, 1);
  const dmh_filter_rule *f = &t->filters[0];
  CU_ASSERT_STRING_EQUAL(f->name, "f1");
  CU_ASSERT_STRING_EQUAL(f->schema_pattern, "db1");
  CU_ASSERT_STRING_EQUAL(f->table_pattern, "t*");
  CU_ASSERT_EQUAL_FATAL(f->n_events, 2);
  CU_ASSERT_STRING_EQUAL(f->events[0], "truncate table");
  CU_ASSERT_STRING_EQUAL(f->events[1], "drop table");
  CU_ASSERT_EQUAL_FATAL(f->n_sql_patterns, 1);
  CU_ASSERT_STRING_EQUAL(f->sql_patterns[0], "^DROP\\s+PROCEDURE");
  CU_ASSERT_TRUE(f->action_ignore);

  CU_ASSERT_EQUAL_FATAL(t->n_instances, 1);
  const dmh_task_instance *in = &t->instances[0];
  CU_ASSERT_STRING_EQUAL(in->source_id, "mysql-01");
  CU_ASSERT_PTR_EQUAL(in->bal, &t->bal_rules[0]);
  CU_ASSERT_EQUAL_FATAL(in->n_routes, 1);
  CU_ASSERT_PTR_EQUAL(in->routes[0], &t->routes[0]);
  CU_ASSERT_EQUAL_FATAL(in->n_filters, 1);
  CU_ASSERT_PTR_EQUAL(in->filters[0], &t->filters[0]);
  CU_ASSERT_PTR_NULL(in->meta_binlog_name);
  CU_ASSERT_PTR_NULL(in->meta_binlog_gtid);
  CU_ASSERT_PTR_EQUAL(dmh_task_instance_for(t, "mysql-01"), in);
  CU_ASSERT_PTR_NULL(dmh_task_instance_for(t, "mysql-02"));

  for (int i = 0; i < DMH_KIND_COUNT; i++)
    CU_ASSERT_PTR_NULL(t->unit_paths[i]);
  CU_ASSERT_PTR_NULL(dmh_task_unit_section(t, DM_UNIT_DUMP));
  /* the example shows the sync section; the host only checks it is a group */
  CU_ASSERT_PTR_NOT_NULL(dmh_task_unit_section(t, DM_UNIT_SYNC));
  assert_default_supervisor(&t->sup);
  dmh_task_config_free(t);
}

static void test_example_task_full(void) {
  dmh_task_config *t = load_task(ex("task-full.cfg"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_STRING_EQUAL(t->name, "full-copy");
  CU_ASSERT_EQUAL(t->mode, DMH_MODE_FULL);
  CU_ASSERT_EQUAL_FATAL(t->n_instances, 1);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t->instances[0].bal);
  CU_ASSERT_STRING_EQUAL(t->instances[0].bal->name, "only-shop");
  CU_ASSERT_EQUAL(t->instances[0].bal->n_do_dbs, 2);
  CU_ASSERT_EQUAL(t->instances[0].n_routes, 0);
  CU_ASSERT_EQUAL(t->sup.init_timeout_ms, 60000u);
  CU_ASSERT_EQUAL(t->sup.stop_timeout_ms, 10000u);
  dmh_task_config_free(t);
}

static void test_example_task_incremental(void) {
  dmh_task_config *t = load_task(ex("task-incremental.cfg"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_EQUAL(t->mode, DMH_MODE_INCREMENTAL);
  CU_ASSERT_EQUAL_FATAL(t->n_instances, 1);
  const dmh_task_instance *in = &t->instances[0];
  CU_ASSERT_PTR_NULL(in->bal);
  CU_ASSERT_STRING_EQUAL(in->meta_binlog_name, "mysql-bin.000001");
  CU_ASSERT_EQUAL(in->meta_binlog_pos, 4u);
  CU_ASSERT_STRING_EQUAL(in->meta_binlog_gtid, "0-1-10");
  CU_ASSERT_EQUAL_FATAL(in->n_filters, 1);
  CU_ASSERT_EQUAL(in->filters[0]->n_events, 3);
  CU_ASSERT_FALSE(in->filters[0]->n_sql_patterns);
  CU_ASSERT_TRUE(t->sup.auto_resume);
  CU_ASSERT_EQUAL(t->sup.auto_resume_initial_ms, 500u);
  CU_ASSERT_EQUAL(t->sup.auto_resume_max_ms, 60000u);
  CU_ASSERT_EQUAL(t->sup.init_timeout_ms, 30000u);
  dmh_task_config_free(t);
}

static void test_example_task_dump(void) {
  dmh_task_config *t = load_task(ex("task-dump.cfg"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_EQUAL(t->mode, DMH_MODE_DUMP);
  CU_ASSERT_STRING_EQUAL(t->name, "export");
  CU_ASSERT_EQUAL_FATAL(t->n_bal_rules, 1);
  CU_ASSERT_EQUAL_FATAL(t->bal_rules[0].n_ignore_tables, 1);
  CU_ASSERT_STRING_EQUAL(t->bal_rules[0].ignore_tables[0].table, "~_tmp$");
  assert_default_supervisor(&t->sup);
  dmh_task_config_free(t);
}

static void test_example_task_load(void) {
  dmh_task_config *t = load_task(ex("task-load.cfg"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_EQUAL(t->mode, DMH_MODE_LOAD);
  CU_ASSERT_EQUAL_FATAL(t->n_routes, 1);
  /* A route without table-pattern and target-table renames the schema only. */
  CU_ASSERT_PTR_NULL(t->routes[0].table_pattern);
  CU_ASSERT_PTR_NULL(t->routes[0].target_table);
  CU_ASSERT_STRING_EQUAL(t->routes[0].target_schema, "db1_copy");
  CU_ASSERT_PTR_EQUAL(t->instances[0].routes[0], &t->routes[0]);
  dmh_task_config_free(t);
}

static void test_example_task_load_sync(void) {
  dmh_task_config *t = load_task(ex("task-load-sync.cfg"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_EQUAL(t->mode, DMH_MODE_LOAD_SYNC);
  CU_ASSERT_EQUAL(t->sup.init_timeout_ms, 10000u);
  CU_ASSERT_EQUAL(t->sup.stop_timeout_ms, 5000u);
  CU_ASSERT_EQUAL(t->sup.relay_catchup_poll_ms, 100u);
  CU_ASSERT_EQUAL(t->sup.relay_catchup_timeout_ms, 30000u);
  CU_ASSERT_TRUE(t->sup.auto_resume);
  CU_ASSERT_EQUAL(t->sup.auto_resume_max_ms, 300000u);
  dmh_task_config_free(t);
}

/* ---- values beyond the examples ---- */

static void test_relative_paths_and_overrides(void) {
  char want[PATH_MAX + 32];
  dmh_source_config *s = load_source(fx("source-relative.cfg"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  /* "../relay-data/./mysql-03" from tests/config/files/ */
  real_join(DMH_TEST_DIR, "relay-data/mysql-03", want, sizeof want);
  CU_ASSERT_STRING_EQUAL(s->relay_dir, want);
  CU_ASSERT_EQUAL(s->server_id, 4000000000u);
  CU_ASSERT_STRING_EQUAL(s->from.ep.host, "db.example");
  CU_ASSERT_EQUAL(s->from.ep.port, 3310);
  CU_ASSERT_STRING_EQUAL(s->from.ep.password, "secret");
  CU_ASSERT_STRING_EQUAL(s->from.ep.socket, "/tmp/m.sock");
  real_join(DMH_TEST_DIR "/files", "plugins/dmhost-relay.so", want, sizeof want);
  CU_ASSERT_STRING_EQUAL(s->unit_paths[DMH_KIND_RELAY], want);
  CU_ASSERT_PTR_NULL(s->unit_paths[DMH_KIND_SYNC]);
  config_setting_t *relay = dmh_source_unit_section(s);
  CU_ASSERT_PTR_NOT_NULL_FATAL(relay);
  int buffer = 0;
  CU_ASSERT_TRUE(config_setting_lookup_int(relay, "buffer-size", &buffer));
  CU_ASSERT_EQUAL(buffer, 4);
  dmh_source_config_free(s);

  dmh_task_config *t = load_task(fx("task-relative.cfg"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_STRING_EQUAL(t->name, "rel.task");
  real_join(DMH_TEST_DIR, "plugins/dmhost-sync.so", want, sizeof want);
  CU_ASSERT_STRING_EQUAL(t->unit_paths[DMH_KIND_SYNC], want);
  CU_ASSERT_STRING_EQUAL(t->unit_paths[DMH_KIND_DUMP], "/abs/dmhost-dump.so");
  CU_ASSERT_PTR_NULL(t->unit_paths[DMH_KIND_LOAD]);
  CU_ASSERT_PTR_NULL(t->unit_paths[DMH_KIND_RELAY]);
  CU_ASSERT_STRING_EQUAL(t->target.ep.password, "");
  CU_ASSERT_EQUAL(t->target.ep.port, 3306);
  const dmh_task_instance *in = dmh_task_instance_for(t, "mysql-01");
  CU_ASSERT_PTR_NOT_NULL_FATAL(in);
  CU_ASSERT_PTR_NULL(in->meta_binlog_name);
  CU_ASSERT_EQUAL(in->meta_binlog_pos, 0u);
  CU_ASSERT_STRING_EQUAL(in->meta_binlog_gtid, "0-1-10");
  config_setting_t *sync = dmh_task_unit_section(t, DM_UNIT_SYNC);
  CU_ASSERT_PTR_NOT_NULL_FATAL(sync);
  int workers = 0;
  CU_ASSERT_TRUE(config_setting_lookup_int(sync, "worker-count", &workers));
  CU_ASSERT_EQUAL(workers, 4);
  CU_ASSERT_PTR_NULL(dmh_task_unit_section(t, DM_UNIT_LOAD));
  CU_ASSERT_PTR_NULL(dmh_task_unit_section(t, DM_UNIT_RELAY));
  dmh_task_config_free(t);
}

static void test_supervisor_floats(void) {
  dmh_task_config *t = load_task(fx("task-supervisor-floats.cfg"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_EQUAL(t->sup.init_timeout_ms, 500u);
  CU_ASSERT_EQUAL(t->sup.stop_timeout_ms, 2000u);
  CU_ASSERT_EQUAL(t->sup.relay_catchup_timeout_ms, 250u);
  CU_ASSERT_EQUAL(t->sup.relay_catchup_poll_ms, 10u);
  CU_ASSERT_FALSE(t->sup.auto_resume);
  CU_ASSERT_EQUAL(t->sup.auto_resume_initial_ms, 100u);
  CU_ASSERT_EQUAL(t->sup.auto_resume_max_ms, 1500u);
  dmh_task_config_free(t);
}

/* @include resolves next to the including file, and errors in the included file name it. */
static void test_include(void) {
  dmh_task_config *t = load_task(fx("task-include.cfg"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_STRING_EQUAL(t->target.ep.host, "10.0.0.7");
  CU_ASSERT_EQUAL(t->target.ep.port, 4000);
  CU_ASSERT_STRING_EQUAL(t->target.ep.password, "pw");
  dmh_task_config_free(t);

  char inc[PATH_MAX + 32], want[PATH_MAX + 256];
  real_join(DMH_TEST_DIR "/files", "bad-target.inc", inc, sizeof inc);
  snprintf(want, sizeof want,
           "%s:2: unknown setting `target-database.prot` in the task file; did you mean `port`?",
           inc);
  expect_failure(fx("task-include-bad.cfg"), false, DM_ERR_CONFIG_UNKNOWN, want);
}

/* Integer literals keep their value whatever libconfig 1.5 would make of them (issue 9). */
static void test_int_literals(void) {
  dmh_source_config *s = load_source(fx("source-server-id-large.cfg"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  CU_ASSERT_EQUAL(s->server_id, 4000000000u); /* libconfig alone: -294967296, refused */
  dmh_source_config_free(s);
  s = load_source(fx("source-server-id-hex.cfg"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  CU_ASSERT_EQUAL(s->server_id, 4294967295u); /* libconfig alone: -1 */
  dmh_source_config_free(s);

  /* A unit's own section, read by the unit through the host, holds the value written; numbers in
   * strings and comments are left alone. */
  dmh_task_config *t = load_task(fx("task-unit-wrap.cfg"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  config_setting_t *dump = dmh_task_unit_section(t, DM_UNIT_DUMP);
  CU_ASSERT_PTR_NOT_NULL_FATAL(dump);
  config_setting_t *threads = config_setting_get_member(dump, "threads");
  CU_ASSERT_PTR_NOT_NULL_FATAL(threads);
  CU_ASSERT_EQUAL(config_setting_get_int64(threads), 4294967297LL);
  CU_ASSERT_EQUAL(config_setting_source_line(threads), 8);
  const char *comment = NULL;
  CU_ASSERT(config_setting_lookup_string(dump, "comment", &comment));
  CU_ASSERT_STRING_EQUAL(comment, "port = 4294970633 in a string is text");
  dmh_task_config_free(t);

  /* An @include'd file is read by libconfig itself: refused there, with the suffix to write. */
  char inc[PATH_MAX + 32], want[PATH_MAX + 512];
  real_join(DMH_TEST_DIR "/files", "wrap-target.inc", inc, sizeof inc);
  snprintf(want, sizeof want,
           "%s:2: the integer 4294970633 is outside -2147483648..2147483647, all libconfig keeps "
           "of an integer without the L suffix in an @include'd file (it would read 3337); write "
           "4294970633L, and the setting's own range applies",
           inc);
  expect_failure(fx("task-include-wrap.cfg"), false, DM_ERR_CONFIG_INVALID, want);
}

static void test_modes_and_kinds(void) {
  static const struct {
    const char *name;
    dmh_task_mode mode;
    int n;
    dm_unit_kind chain[3];
  } cases[] = {
      {"all", DMH_MODE_ALL, 3, {DM_UNIT_DUMP, DM_UNIT_LOAD, DM_UNIT_SYNC}},
      {"full", DMH_MODE_FULL, 2, {DM_UNIT_DUMP, DM_UNIT_LOAD}},
      {"incremental", DMH_MODE_INCREMENTAL, 1, {DM_UNIT_SYNC}},
      {"dump", DMH_MODE_DUMP, 1, {DM_UNIT_DUMP}},
      {"load", DMH_MODE_LOAD, 1, {DM_UNIT_LOAD}},
      {"load&sync", DMH_MODE_LOAD_SYNC, 2, {DM_UNIT_LOAD, DM_UNIT_SYNC}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    dmh_task_mode m = (dmh_task_mode)-1;
    CU_ASSERT_EQUAL(dmh_task_mode_parse(cases[i].name, &m), 0);
    CU_ASSERT_EQUAL(m, cases[i].mode);
    CU_ASSERT_STRING_EQUAL(dmh_task_mode_name(cases[i].mode), cases[i].name);
    dm_unit_kind chain[3] = {0, 0, 0};
    CU_ASSERT_EQUAL_FATAL(dmh_task_mode_chain(cases[i].mode, chain), cases[i].n);
    for (int k = 0; k < cases[i].n; k++)
      CU_ASSERT_EQUAL(chain[k], cases[i].chain[k]);
  }
  dmh_task_mode m = DMH_MODE_ALL;
  CU_ASSERT_EQUAL(dmh_task_mode_parse("All", &m), -1);
  CU_ASSERT_EQUAL(dmh_task_mode_parse("load-sync", &m), -1);
  CU_ASSERT_EQUAL(m, DMH_MODE_ALL);

  static const char *const names[] = {"dump", "load", "sync", "relay"};
  for (int i = 0; i < DMH_KIND_COUNT; i++) {
    dm_unit_kind k = dmh_kind_of_index(i);
    CU_ASSERT_EQUAL(dmh_kind_index_of(k), i);
    CU_ASSERT_STRING_EQUAL(dmh_kind_name(k), names[i]);
    dm_unit_kind parsed = DM_UNIT_CUSTOM;
    CU_ASSERT_EQUAL(dmh_kind_parse(names[i], &parsed), 0);
    CU_ASSERT_EQUAL(parsed, k);
  }
  CU_ASSERT_EQUAL(dmh_kind_index_of(DM_UNIT_DUMP), DMH_KIND_DUMP);
  CU_ASSERT_EQUAL(dmh_kind_index_of(DM_UNIT_RELAY), DMH_KIND_RELAY);
  CU_ASSERT_EQUAL(dmh_kind_index_of(DM_UNIT_CUSTOM), -1);
  CU_ASSERT_STRING_EQUAL(dmh_kind_name(DM_UNIT_CUSTOM), "custom");
  dm_unit_kind k = DM_UNIT_DUMP;
  CU_ASSERT_EQUAL(dmh_kind_parse("syncer", &k), -1);
  CU_ASSERT_EQUAL(k, DM_UNIT_DUMP);
}

/* ---- errors ---- */

typedef struct {
  const char *file; /* under files/ */
  bool source;      /* a source file (else a task file) */
  int32_t code;
  const char *msg; /* the message after "<path>:" */
} bad_case;

static const bad_case bad_cases[] = {
    {"task-parse-error.cfg", false, DM_ERR_CONFIG_PARSE, "3: syntax error in the task file"},
    {"task-misspelt.cfg", false, DM_ERR_CONFIG_UNKNOWN,
     "7: unknown setting `target-databse` in the task file; did you mean `target-database`?"},
    {"task-unknown-top.cfg", false, DM_ERR_CONFIG_UNKNOWN,
     "5: unknown setting `colour` in the task file; the settings accepted here are: name, "
     "task-mode, units, case-sensitive, meta-schema, target-database, mysql-instances, "
     "block-allow-list, "
     "routes, "
     "filters, unit-paths, supervisor, dump, load, sync, file-mode, secret-key-path, "
     "ignore-checking-items"},
    {"task-bad-ignore.cfg", false, DM_ERR_CONFIG_INVALID,
     "6: `ignore-checking-items` in the task file names \"binlog_fromat\", which is no precheck "
     "item; did you mean \"binlog_format\"? (docs/precheck.md lists them)"},
    {"task-misplaced-from.cfg", false, DM_ERR_CONFIG_UNKNOWN,
     "3: unknown setting `from` in the task file; this setting belongs in the source file (the "
     "task file names its sources with mysql-instances.[n].source-id)"},
    {"source-unknown-from.cfg", true, DM_ERR_CONFIG_UNKNOWN,
     "3: unknown setting `from.hots` in the source file; did you mean `host`?"},
    {"task-unknown-instance.cfg", false, DM_ERR_CONFIG_UNKNOWN,
     "8: unknown setting `mysql-instances.[1].route-rule` in the task file; did you mean "
     "`route-rules`?"},
    {"task-unknown-route.cfg", false, DM_ERR_CONFIG_UNKNOWN,
     "9: unknown setting `routes.r1.target-tabel` in the task file; did you mean `target-table`?"},
    {"task-missing-name.cfg", false, DM_ERR_CONFIG_MISSING,
     "1: missing required setting `name` in the task file"},
    {"task-missing-host.cfg", false, DM_ERR_CONFIG_MISSING,
     "4: missing required setting `target-database.host` in the task file (in the group starting "
     "here)"},
    {"task-missing-instances.cfg", false, DM_ERR_CONFIG_MISSING,
     "1: missing required setting `mysql-instances` in the task file; add e.g. `mysql-instances = "
     "( { source-id = \"mysql-01\"; } );`"},
    {"source-missing-id.cfg", true, DM_ERR_CONFIG_MISSING,
     "1: missing required setting `source-id` in the source file"},
    {"task-wrong-type.cfg", false, DM_ERR_CONFIG_INVALID,
     "5: `target-database.port` in the task file must be an integer in 1..65535, not a string"},
    {"source-wrong-bool.cfg", true, DM_ERR_CONFIG_INVALID,
     "2: `enable-gtid` in the source file must be a boolean (true or false, without quotes), not "
     "a string"},
    {"task-bad-mode.cfg", false, DM_ERR_CONFIG_INVALID,
     "2: `task-mode` in the task file must be one of \"all\", \"full\", \"incremental\", \"dump\", "
     "\"load\", \"load&sync\" (or name the units with `units = [...]`); not \"increment\"; did "
     "you mean \"incremental\"?"},
    {"task-unresolved-route.cfg", false, DM_ERR_CONFIG_INVALID,
     "7: `mysql-instances.[0].route-rules.[1]` in the task file names the rule `to-archive`, which "
     "is not defined under `routes`; defined there: to-shop, other"},
    {"task-unresolved-bal.cfg", false, DM_ERR_CONFIG_INVALID,
     "4: `mysql-instances.[0].block-allow-list` in the task file names the rule `everything`, "
     "which is not defined under `block-allow-list`; defined there: bal1, bal2"},
    {"task-duplicate-source.cfg", false, DM_ERR_CONFIG_INVALID,
     "7: `mysql-instances.[2].source-id` in the task file: source \"mysql-01\" is already listed "
     "in mysql-instances.[0]; list each source once"},
    {"task-bad-sql-pattern.cfg", false, DM_ERR_CONFIG_INVALID,
     "8: `filters.f1.sql-pattern.[1]` in the task file: regular expression \"(unclosed\": invalid "
     "(Unmatched ( or \\() (see docs/config.md, \"Matching names\")"},
    {"task-bad-bal-regex.cfg", false, DM_ERR_CONFIG_INVALID,
     "8: `block-allow-list.bal1.do-tables.[1].tbl-name` in the task file: regular expression "
     "\"t[0-9\": a '[' without its ']' (at character 2 of \"t[0-9\") (see docs/config.md, "
     "\"Matching names\")"},
    /* read as POSIX, \b would be a GNU extension and \d a 'd': refused with its line instead */
    {"task-bad-bal-boundary.cfg", false, DM_ERR_CONFIG_INVALID,
     "8: `block-allow-list.bal1.do-dbs.[1]` in the task file: regular expression "
     "\"\\blog_\\d+$\": \\b (a word boundary) has no POSIX equivalent and is not supported; use "
     "(^|[^[:alnum:]_]) or ([^[:alnum:]_]|$) instead (at character 1 of \"\\blog_\\d+$\") (see "
     "docs/config.md, \"Matching names\")"},
    {"task-bad-event.cfg", false, DM_ERR_CONFIG_INVALID,
     "6: `filters.f1.events.[1]` in the task file: unknown event \"drop tables\"; did you mean "
     "\"drop table\"?"},
    {"task-bad-action.cfg", false, DM_ERR_CONFIG_INVALID,
     "6: `filters.f1.action` in the task file must be \"Ignore\" or \"Do\", not \"Skip\""},
    {"task-relay-unit-path.cfg", false, DM_ERR_CONFIG_UNKNOWN,
     "7: unknown setting `unit-paths.relay` in the task file; the relay unit is chosen in the "
     "source file's unit-paths (relay runs per source, not per task)"},
    {"source-dump-unit-path.cfg", true, DM_ERR_CONFIG_UNKNOWN,
     "4: unknown setting `unit-paths.dump` in the source file; the dump, load and sync units are "
     "chosen in the task file's unit-paths; the source file's unit-paths takes only `relay`"},
    {"source-server-id-overflow.cfg", true, DM_ERR_CONFIG_INVALID,
     "2: `server-id` in the source file must be an integer in 1..4294967295, not 4294967296"},
    /* Integers that libconfig 1.5 alone would wrap to their low 32 bits (issue 9): refused with
     * their own value, and the setting's range. */
    {"source-port-wrap.cfg", true, DM_ERR_CONFIG_INVALID,
     "3: `from.port` in the source file must be an integer in 1..65535, not 4294970633"},
    {"task-port-negative.cfg", false, DM_ERR_CONFIG_INVALID,
     "6: `target-database.port` in the task file must be an integer in 1..65535, not -1"},
    {"task-port-int-max.cfg", false, DM_ERR_CONFIG_INVALID,
     "6: `target-database.port` in the task file must be an integer in 1..65535, not 2147483648"},
    {"task-port-max.cfg", false, DM_ERR_CONFIG_INVALID,
     "6: `target-database.port` in the task file must be an integer in 1..65535, not 65536"},
    {"task-hex-wrap.cfg", false, DM_ERR_CONFIG_INVALID,
     "6: `supervisor.relay-catchup-poll` in the task file must be an integer in 1..4294967295 "
     "milliseconds, not 4294967296"},
    {"task-binlog-pos-huge.cfg", false, DM_ERR_CONFIG_INVALID,
     "5: the integer 99999999999999999999 does not fit in 64 bits: a setting takes an integer in "
     "-9223372036854775808..9223372036854775807 at most, and its own range below that"},
    {"task-supervisor-zero.cfg", false, DM_ERR_CONFIG_INVALID,
     "6: `supervisor.stop-timeout` in the task file must be a number of seconds in "
     "0.001..4294967, not 0"},
    {"task-supervisor-backoff.cfg", false, DM_ERR_CONFIG_INVALID,
     "7: `supervisor.auto-resume.backoff-initial` (10000 ms) in the task file must not exceed "
     "`supervisor.auto-resume.backoff-max` (5000 ms)"},
    {"task-supervisor-poll-float.cfg", false, DM_ERR_CONFIG_INVALID,
     "5: `supervisor.relay-catchup-poll` in the task file must be an integer in 1..4294967295 "
     "milliseconds, not a float"},
    {"task-section-not-group.cfg", false, DM_ERR_CONFIG_INVALID,
     "5: `dump` in the task file must be a group, like `dump = { ... };`; not an integer"},
    {"task-meta-pos-only.cfg", false, DM_ERR_CONFIG_INVALID,
     "4: `mysql-instances.[0].meta.binlog-pos` in the task file needs binlog-name: a position is "
     "an offset in one binlog file"},
    {"task-bad-source-id.cfg", false, DM_ERR_CONFIG_INVALID,
     "4: `mysql-instances.[0].source-id` in the task file must be a non-empty name of letters, "
     "digits, '_' and '-'; not \"mysql 01/x\""},
    /* file-mode may widen the 0600 default to a group or others reading, never to writing */
    {"task-file-mode-writable.cfg", false, DM_ERR_CONFIG_INVALID,
     "5: `file-mode` in the task file must be an octal file mode in a string that gives the owner "
     "read and write and nobody else write or execute: \"0600\" (the default), \"0640\" (the "
     "group may read) or \"0644\"; not \"0666\""},
    {"source-file-mode-bad.cfg", true, DM_ERR_CONFIG_INVALID,
     "3: `file-mode` in the source file must be an octal file mode in a string that gives the "
     "owner read and write and nobody else write or execute: \"0600\" (the default), \"0640\" "
     "(the group may read) or \"0644\"; not \"rw-r-----\""},
};

/* Load `path` as a source or task file; it must fail with `code` and exactly `want`. */
static void expect_failure(const char *path, bool source, int32_t code, const char *want) {
  dm_error err;
  memset(&err, 0, sizeof err);
  int rc;
  if (source) {
    static dmh_source_config sentinel; /* *out must be reset to NULL */
    dmh_source_config *s = &sentinel;
    rc = dmh_source_config_load(path, &s, &err);
    CU_ASSERT_PTR_NULL(s);
  } else {
    static dmh_task_config sentinel;
    dmh_task_config *t = &sentinel;
    rc = dmh_task_config_load(path, &t, &err);
    CU_ASSERT_PTR_NULL(t);
  }
  CU_ASSERT_EQUAL(rc, -1);
  CU_ASSERT_EQUAL(err.code, code);
  CU_ASSERT_EQUAL(err.cls, DM_CLASS_CONFIG);
  CU_ASSERT_NOT_EQUAL(err.workaround[0], '\0');
  CU_ASSERT_STRING_EQUAL(err.message, want);
  if (strcmp(err.message, want) != 0)
    fprintf(stderr, "\n  got:  %s\n  want: %s\n", err.message, want);
}

/* case-sensitive (DM's task setting) reaches every instance's rules; default false. */
static void test_case_sensitive(void) {
  dmh_task_config *t = load_task(fx("task-case-sensitive.cfg"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_TRUE(t->case_sensitive);
  CU_ASSERT_EQUAL_FATAL(t->n_instances, 2);
  CU_ASSERT_TRUE(t->instances[0].case_sensitive);
  CU_ASSERT_TRUE(t->instances[1].case_sensitive);
  dmh_task_config_free(t);
  t = load_task(ex("task-all.cfg"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_FALSE(t->case_sensitive);
  CU_ASSERT_FALSE(t->instances[0].case_sensitive);
  dmh_task_config_free(t);
}

static void test_bad_files(void) {
  for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
    const bad_case *b = &bad_cases[i];
    char path[PATH_MAX], want[PATH_MAX + 512];
    snprintf(path, sizeof path, "%s", fx(b->file));
    snprintf(want, sizeof want, "%s:%s", path, b->msg);
    expect_failure(path, b->source, b->code, want);
  }
}

static void test_io_errors(void) {
  char want[PATH_MAX + 128];
  const char *missing = fx("no-such-file.cfg");
  snprintf(want, sizeof want, "%s:0: cannot read the task file: No such file or directory",
           missing);
  expect_failure(missing, false, DM_ERR_CONFIG_IO, want);
  snprintf(want, sizeof want, "%s:0: cannot read the source file: No such file or directory",
           missing);
  expect_failure(missing, true, DM_ERR_CONFIG_IO, want);
  /* libconfig would read a folder as an empty file and complain about missing settings. */
  snprintf(want, sizeof want, "%s:0: cannot read the task file: it is a directory",
           DMH_TEST_DIR "/files");
  expect_failure(DMH_TEST_DIR "/files", false, DM_ERR_CONFIG_IO, want);
}

/* A source file given where a task file is expected (and the reverse) is named as such. */
static void test_swapped_files(void) {
  char want[PATH_MAX + 256];
  const char *source = ex("source.cfg");
  snprintf(want, sizeof want,
           "%s:8: unknown setting `source-id` in the task file; this setting belongs in the "
           "source file (the task file names its sources with mysql-instances.[n].source-id)",
           source);
  expect_failure(source, false, DM_ERR_CONFIG_UNKNOWN, want);
  const char *task = ex("task-full.cfg");
  snprintf(want, sizeof want,
           "%s:4: unknown setting `name` in the source file; this setting belongs in the task "
           "file (the source file describes one MySQL source)",
           task);
  expect_failure(task, true, DM_ERR_CONFIG_UNKNOWN, want);
}

static void test_free_null(void) {
  /* The host frees whatever a failed load left, which is NULL. */
  dmh_task_config_free(NULL);
  dmh_source_config_free(NULL);
  CU_PASS("free(NULL) is a no-op");
}

/* file-mode = "0640": read as octal, handed to the relay's files (folders 0750). */
static void test_file_mode(void) {
  dmh_source_config *s = load_source(fx("source-file-mode.cfg"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  CU_ASSERT_EQUAL(s->file_mode, 0640);
  dmh_source_config_free(s);
}

/* ---- secrets: password-encrypted, password-file, password-env ---- */

static char sec_dir[64];
static const char sec_plain[] = "Pw-in-the-clear-7391";
static const unsigned char sec_key[DMH_SECRET_KEY_LEN] = {
    0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x10, 0x32, 0x54, 0x76, 0x98, 0xba, 0xdc, 0xfe,
    0x0f, 0x1e, 0x2d, 0x3c, 0x4b, 0x5a, 0x69, 0x78, 0x87, 0x96, 0xa5, 0xb4, 0xc3, 0xd2, 0xe1, 0xf0};

/* sec_dir/name with `text`, mode `mode`; returns the path (one of test_buf). */
static const char *sec_write(const char *name, const char *text, mode_t mode) {
  char *b = test_buf[test_next++ % 4];
  snprintf(b, PATH_MAX, "%s/%s", sec_dir, name);
  unlink(b);
  int fd = open(b, O_WRONLY | O_CREAT | O_TRUNC, mode);
  CU_ASSERT_FATAL(fd >= 0);
  CU_ASSERT_FATAL(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
  CU_ASSERT_FATAL(fchmod(fd, mode) == 0);
  close(fd);
  return b;
}

/* A source file whose `from` group carries `pw` (one or more password settings), after `top`. */
static const char *sec_source(const char *top, const char *pw) {
  char text[1024];
  snprintf(
      text, sizeof text,
      "source-id = \"s1\";\n%s\nfrom = {\n  host = \"127.0.0.1\";\n  user = \"u\";\n  %s\n};\n",
      top, pw);
  return sec_write("source.cfg", text, 0600);
}

static void sec_expect(const char *path, int32_t code, const char *want_tail) {
  char want[PATH_MAX + 512];
  if (snprintf(want, sizeof want, "%s:%s", path, want_tail) >= (int)sizeof want)
    CU_FAIL("sec_expect: path and tail too long");
  expect_failure(path, true, code, want);
}

static void sec_setup(void) {
  snprintf(sec_dir, sizeof sec_dir, "/tmp/dmh-test-secret-XXXXXX");
  CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(sec_dir));
  char hex[2 * DMH_SECRET_KEY_LEN + 2];
  for (int i = 0; i < DMH_SECRET_KEY_LEN; i++)
    snprintf(hex + 2 * i, 3, "%02x", sec_key[i]);
  strcat(hex, "\n");
  sec_write("key", hex, 0600);
  hex[0] = hex[0] == '0' ? '1' : '0'; /* another key */
  sec_write("other.key", hex, 0600);
  sec_write("open.key", hex, 0644);
  sec_write("short.key", "0123abcd\n", 0600);
}

static void sec_cleanup(void) {
  static const char *const names[] = {"key",        "other.key", "open.key", "short.key", "pw.txt",
                                      "source.cfg", "task.cfg",  "dm.key",   NULL};
  char p[PATH_MAX + 16];
  for (int i = 0; names[i]; i++) {
    snprintf(p, sizeof p, "%s/%s", sec_dir, names[i]);
    unlink(p);
  }
  rmdir(sec_dir);
}

/* An encrypted password decrypts to the endpoint's password, in `from` and in target-database;
 * the key file resolves next to the file. */
static void test_secret_encrypted(void) {
  sec_setup();
  char *enc = dmh_secret_encrypt(sec_key, sec_plain);
  CU_ASSERT_PTR_NOT_NULL_FATAL(enc);
  CU_ASSERT_PTR_NULL(strstr(enc, sec_plain));
  char pw[512];
  snprintf(pw, sizeof pw, "password-encrypted = \"%s\";", enc);
  dmh_source_config *s = load_source(sec_source("secret-key-path = \"key\";", pw));
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  CU_ASSERT_STRING_EQUAL(s->from.ep.password, sec_plain);
  dmh_source_config_free(s);

  char text[1024];
  snprintf(text, sizeof text,
           "name = \"t\";\ntask-mode = \"full\";\nsecret-key-path = \"%s/key\";\n"
           "target-database = { host = \"127.0.0.1\"; user = \"u\"; %s };\n"
           "mysql-instances = ( { source-id = \"s1\"; } );\n",
           sec_dir, pw);
  dmh_task_config *t = load_task(sec_write("task.cfg", text, 0600));
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_STRING_EQUAL(t->target.ep.password, sec_plain);
  dmh_task_config_free(t);

  /* Two encryptions of one password differ (a fresh nonce), both decrypt. */
  char *enc2 = dmh_secret_encrypt(sec_key, sec_plain), *back = NULL;
  CU_ASSERT_PTR_NOT_NULL_FATAL(enc2);
  CU_ASSERT_STRING_NOT_EQUAL(enc, enc2);
  CU_ASSERT_EQUAL(dmh_secret_decrypt(sec_key, enc2, &back), 0);
  CU_ASSERT_STRING_EQUAL(back, sec_plain);
  dmh_secret_free(back);
  free(enc2);
  free(enc);
  sec_cleanup();
}

/* A wrong, open, short or missing key, or a damaged value: a coded error naming the setting and
 * file:line, never the password. */
static void test_secret_refused(void) {
  sec_setup();
  char *enc = dmh_secret_encrypt(sec_key, sec_plain);
  CU_ASSERT_PTR_NOT_NULL_FATAL(enc);
  char pw[512], tail[PATH_MAX + 512];
  snprintf(pw, sizeof pw, "password-encrypted = \"%s\";", enc);

  const char *path = sec_source("secret-key-path = \"other.key\";", pw);
  snprintf(tail, sizeof tail,
           "6: `from.password-encrypted` in the source file does not decrypt with the key in "
           "secret-key-path (%s/other.key): it was encrypted with another key or is damaged; "
           "encrypt the password again with `dmhost encrypt --secret-key-path %s/other.key` "
           "(plain text on stdin)",
           sec_dir, sec_dir);
  sec_expect(path, DM_ERR_CONFIG_INVALID, tail);

  /* One character changed: the tag does not match. */
  char damaged[512];
  snprintf(damaged, sizeof damaged, "password-encrypted = \"%s\";", enc);
  char *c = strchr(damaged, '"') + 5;
  *c = *c == 'A' ? 'B' : 'A';
  path = sec_source("secret-key-path = \"key\";", damaged);
  snprintf(tail, sizeof tail,
           "6: `from.password-encrypted` in the source file does not decrypt with the key in "
           "secret-key-path (%s/key): it was encrypted with another key or is damaged; "
           "encrypt the password again with `dmhost encrypt --secret-key-path %s/key` "
           "(plain text on stdin)",
           sec_dir, sec_dir);
  sec_expect(path, DM_ERR_CONFIG_INVALID, tail);

  path = sec_source("", pw);
  sec_expect(path, DM_ERR_CONFIG_MISSING,
             "6: `from.password-encrypted` in the source file needs the key it was encrypted "
             "with: add `secret-key-path = \"/path/to/key\";` at the top of the file");

  path = sec_source("secret-key-path = \"open.key\";", pw);
  snprintf(tail, sizeof tail,
           "2: `secret-key-path` (needed by `from.password-encrypted`): the key file "
           "%s/open.key is readable by others (mode 0644): `chmod 600 %s/open.key` (owner only)",
           sec_dir, sec_dir);
  sec_expect(path, DM_ERR_CONFIG_IO, tail);

  path = sec_source("secret-key-path = \"short.key\";", pw);
  snprintf(tail, sizeof tail,
           "2: `secret-key-path` (needed by `from.password-encrypted`): the key file "
           "%s/short.key must hold one line of 64 hex digits (32 bytes; make one with `openssl "
           "rand -hex 32`)",
           sec_dir);
  sec_expect(path, DM_ERR_CONFIG_IO, tail);

  path = sec_source("", "password = \"x\"; password-env = \"HOME\";");
  sec_expect(path, DM_ERR_CONFIG_INVALID,
             "6: `from.password` and `from.password-env` in the source file both give the "
             "password: keep one");
  free(enc);
  sec_cleanup();
}

/* password-file (its first line, relative to the file) and password-env. */
static void test_secret_file_env(void) {
  sec_setup();
  char pwline[128];
  snprintf(pwline, sizeof pwline, "%s\nsecond line\n", sec_plain);
  sec_write("pw.txt", pwline, 0600);
  dmh_source_config *s = load_source(sec_source("", "password-file = \"pw.txt\";"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  CU_ASSERT_STRING_EQUAL(s->from.ep.password, sec_plain);
  dmh_source_config_free(s);

  char tail[PATH_MAX + 256];
  const char *path = sec_source("", "password-file = \"none.txt\";");
  snprintf(tail, sizeof tail,
           "6: `from.password-file` in the source file: cannot read %s/none.txt: No such file or "
           "directory",
           sec_dir);
  sec_expect(path, DM_ERR_CONFIG_IO, tail);

  CU_ASSERT_EQUAL_FATAL(setenv("DMH_TEST_SECRET_PW", sec_plain, 1), 0);
  s = load_source(sec_source("", "password-env = \"DMH_TEST_SECRET_PW\";"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  CU_ASSERT_STRING_EQUAL(s->from.ep.password, sec_plain);
  dmh_source_config_free(s);
  unsetenv("DMH_TEST_SECRET_PW");
  path = sec_source("", "password-env = \"DMH_TEST_SECRET_PW\";");
  sec_expect(path, DM_ERR_CONFIG_MISSING,
             "6: `from.password-env` in the source file names the environment variable "
             "DMH_TEST_SECRET_PW, which is not set: export it in the environment dmhost starts "
             "in");
  sec_cleanup();
}

/* examples/source-secret.cfg, next to the key of these tests, decrypts to its documented password.
 */
static void test_example_source_secret(void) {
  sec_setup();
  char hex[2 * DMH_SECRET_KEY_LEN + 2];
  for (int i = 0; i < DMH_SECRET_KEY_LEN; i++)
    snprintf(hex + 2 * i, 3, "%02x", sec_key[i]);
  strcat(hex, "\n");
  sec_write("dm.key", hex, 0600);
  FILE *f = fopen(ex("source-secret.cfg"), "r");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  char text[4096];
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  dmh_source_config *s = load_source(sec_write("source.cfg", text, 0600));
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  CU_ASSERT_STRING_EQUAL(s->from.ep.password, "example-password");
  CU_ASSERT_STRING_EQUAL(s->from.ep.user, "dm_user");
  dmh_source_config_free(s);
  sec_cleanup();
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"example source.cfg", test_example_source},
      {"example source-relay.cfg", test_example_source_relay},
      {"example task-all.cfg", test_example_task_all},
      {"example task-full.cfg", test_example_task_full},
      {"example task-incremental.cfg", test_example_task_incremental},
      {"example task-dump.cfg", test_example_task_dump},
      {"example task-load.cfg", test_example_task_load},
      {"example task-load-sync.cfg", test_example_task_load_sync},
      {"relative paths, overrides, unit sections", test_relative_paths_and_overrides},
      {"supervisor floats", test_supervisor_floats},
      {"@include", test_include},
      {"integer literals keep their value", test_int_literals},
      {"modes and kinds", test_modes_and_kinds},
      {"case-sensitive", test_case_sensitive},
      {"bad files: code and exact message", test_bad_files},
      {"io errors", test_io_errors},
      {"source and task files swapped", test_swapped_files},
      {"free NULL", test_free_null},
      {"file-mode", test_file_mode},
      {"secrets: password-encrypted", test_secret_encrypted},
      {"secrets: wrong key, damaged value", test_secret_refused},
      {"secrets: password-file, password-env", test_secret_file_env},
      {"example source-secret.cfg", test_example_source_secret},
  };
  return dmh_cunit_run("config", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
