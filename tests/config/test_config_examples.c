/* The examples/ files parse, each with the values it documents (and the defaults it leaves). */
#include <CUnit/Basic.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "config_test_util.h"
#include "cunit_run.h"

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
  CU_ASSERT_EQUAL(f->action, DMH_FILTER_IGNORE);

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
  };
  return dmh_cunit_run("config_examples", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
