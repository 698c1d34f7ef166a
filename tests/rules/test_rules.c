/* Block-allow-list, routes and binlog event filters as DM applies them (host/rules.c,
 * host/filters.c). */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

#include "rules.h"

static dmh_rules *rules_with(dmh_bal_rule *bal, const dmh_route_rule **routes, int n_routes) {
  static dmh_task_instance inst;
  memset(&inst, 0, sizeof inst);
  inst.bal = bal;
  inst.routes = routes;
  inst.n_routes = n_routes;
  dm_error err;
  dmh_rules *r = dmh_rules_new(&inst, &err);
  CU_ASSERT_PTR_NOT_NULL(r);
  return r;
}

static void test_system_schemas_never(void) {
  dmh_rules *r = rules_with(NULL, NULL, 0);
  CU_ASSERT_FALSE(dmh_rules_table_allowed(r, "mysql", "user"));
  CU_ASSERT_FALSE(dmh_rules_table_allowed(r, "INFORMATION_SCHEMA", NULL));
  CU_ASSERT_FALSE(dmh_rules_table_allowed(r, "performance_schema", "x"));
  CU_ASSERT_FALSE(dmh_rules_table_allowed(r, "sys", "x"));
  CU_ASSERT_TRUE(dmh_rules_table_allowed(r, "shop", "orders"));
  CU_ASSERT_TRUE(dmh_rules_table_allowed(NULL, "shop", NULL));
  dmh_rules_free(r);
}

static void test_do_dbs_and_regex(void) {
  char *do_dbs[] = {"shop", "~^log_[0-9]+$"};
  dmh_bal_rule bal = {.do_dbs = do_dbs, .n_do_dbs = 2};
  dmh_rules *r = rules_with(&bal, NULL, 0);
  CU_ASSERT_TRUE(dmh_rules_table_allowed(r, "shop", "orders"));
  CU_ASSERT_TRUE(dmh_rules_table_allowed(r, "log_2024", "t"));
  CU_ASSERT_FALSE(dmh_rules_table_allowed(r, "log_x", "t"));
  CU_ASSERT_FALSE(dmh_rules_table_allowed(r, "shopping", "t"));
  CU_ASSERT_FALSE(dmh_rules_table_allowed(r, "other", NULL));
  dmh_rules_free(r);
}

static void test_ignore_dbs_and_tables(void) {
  char *ignore_dbs[] = {"tmp"};
  dmh_table_ref ignore_tables[] = {{"shop", "~^audit_"}, {"shop", "cache"}};
  dmh_bal_rule bal = {.ignore_dbs = ignore_dbs,
                      .n_ignore_dbs = 1,
                      .ignore_tables = ignore_tables,
                      .n_ignore_tables = 2};
  dmh_rules *r = rules_with(&bal, NULL, 0);
  CU_ASSERT_FALSE(dmh_rules_table_allowed(r, "tmp", "x"));
  CU_ASSERT_TRUE(dmh_rules_table_allowed(r, "shop", "orders"));
  CU_ASSERT_FALSE(dmh_rules_table_allowed(r, "shop", "audit_2024"));
  CU_ASSERT_FALSE(dmh_rules_table_allowed(r, "shop", "cache"));
  CU_ASSERT_TRUE(dmh_rules_table_allowed(r, "other", "cache"));
  CU_ASSERT_TRUE(dmh_rules_table_allowed(r, "shop", NULL));
  dmh_rules_free(r);
}

static void test_do_tables(void) {
  char *do_dbs[] = {"all_of_me"};
  dmh_table_ref do_tables[] = {{"shop", "orders"}, {"shop", "~^items_"}};
  dmh_bal_rule bal = {.do_dbs = do_dbs, .n_do_dbs = 1, .do_tables = do_tables, .n_do_tables = 2};
  dmh_rules *r = rules_with(&bal, NULL, 0);
  CU_ASSERT_TRUE(dmh_rules_table_allowed(r, "shop", "orders"));
  CU_ASSERT_TRUE(dmh_rules_table_allowed(r, "shop", "items_1"));
  CU_ASSERT_FALSE(dmh_rules_table_allowed(r, "shop", "users"));
  CU_ASSERT_TRUE(dmh_rules_table_allowed(r, "shop", NULL)); /* something of it is in */
  CU_ASSERT_TRUE(dmh_rules_table_allowed(r, "all_of_me", "anything"));
  CU_ASSERT_FALSE(dmh_rules_table_allowed(r, "other", "orders"));
  dmh_rules_free(r);
  /* do-tables alone: only those tables, only their schemas */
  dmh_bal_rule only = {.do_tables = do_tables, .n_do_tables = 1};
  r = rules_with(&only, NULL, 0);
  CU_ASSERT_TRUE(dmh_rules_table_allowed(r, "shop", "orders"));
  CU_ASSERT_FALSE(dmh_rules_table_allowed(r, "shop", "users"));
  CU_ASSERT_FALSE(dmh_rules_table_allowed(r, "other", NULL));
  dmh_rules_free(r);
}

static void test_bad_regex(void) {
  char *do_dbs[] = {"~([a-"};
  dmh_bal_rule bal = {.do_dbs = do_dbs, .n_do_dbs = 1};
  dmh_task_instance inst = {.bal = &bal};
  dm_error err;
  CU_ASSERT_PTR_NULL(dmh_rules_new(&inst, &err));
  CU_ASSERT_EQUAL(err.code, DM_ERR_CONFIG_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "~([a-"));
}

static void test_wildcards(void) {
  CU_ASSERT_TRUE(dmh_wildcard_match("shop_*", "shop_eu"));
  CU_ASSERT_TRUE(dmh_wildcard_match("shop_*", "shop_"));
  CU_ASSERT_FALSE(dmh_wildcard_match("shop_*", "shop"));
  CU_ASSERT_TRUE(dmh_wildcard_match("t?", "t1"));
  CU_ASSERT_FALSE(dmh_wildcard_match("t?", "t12"));
  CU_ASSERT_TRUE(dmh_wildcard_match("*_*_x", "a_b_c_x"));
  CU_ASSERT_TRUE(dmh_wildcard_match("*", ""));
}

static void test_routes(void) {
  dmh_route_rule schema_rule = {.name = "s", .schema_pattern = "shop_*", .target_schema = "shop"};
  dmh_route_rule table_rule = {.name = "t",
                               .schema_pattern = "shop_*",
                               .table_pattern = "orders_*",
                               .target_schema = "shop",
                               .target_table = "orders"};
  const dmh_route_rule *routes[] = {&schema_rule, &table_rule};
  dmh_rules *r = rules_with(NULL, routes, 2);
  char db[64], tb[64];
  dmh_rules_route(r, "shop_eu", "orders_2024", db, sizeof db, tb, sizeof tb);
  CU_ASSERT_STRING_EQUAL(db, "shop"); /* the table rule wins though listed second */
  CU_ASSERT_STRING_EQUAL(tb, "orders");
  dmh_rules_route(r, "shop_eu", "users", db, sizeof db, tb, sizeof tb);
  CU_ASSERT_STRING_EQUAL(db, "shop");
  CU_ASSERT_STRING_EQUAL(tb, "users");
  dmh_rules_route(r, "blog", "posts", db, sizeof db, tb, sizeof tb);
  CU_ASSERT_STRING_EQUAL(db, "blog");
  CU_ASSERT_STRING_EQUAL(tb, "posts");
  dmh_rules_route(r, "shop_us", NULL, db, sizeof db, NULL, 0);
  CU_ASSERT_STRING_EQUAL(db, "shop");
  dmh_rules_free(r);
}

static void test_wildcard_ranges_and_case(void) {
  CU_ASSERT_TRUE(dmh_wildcard_match("t_[0-9]", "t_7"));
  CU_ASSERT_FALSE(dmh_wildcard_match("t_[0-9]", "t_x"));
  CU_ASSERT_TRUE(dmh_wildcard_match("t_[!0-9]", "t_x"));
  CU_ASSERT_FALSE(dmh_wildcard_match("t_[!0-9]", "t_7"));
  CU_ASSERT_TRUE(dmh_wildcard_match("t_[ab]*", "t_b_2024"));
  CU_ASSERT_TRUE(dmh_wildcard_match("a[!]", "a!")); /* "[!]" is a literal '!' */
  CU_ASSERT_TRUE(dmh_wildcard_match("a[b", "a[b")); /* no ']': a literal '[' */
  CU_ASSERT_FALSE(dmh_wildcard_match("Shop_*", "shop_eu"));
  CU_ASSERT_TRUE(dmh_wildcard_match_ci("Shop_*", "SHOP_eu"));
  CU_ASSERT_TRUE(dmh_wildcard_match_ci("t_[A-C]", "T_b"));
  CU_ASSERT_FALSE(dmh_wildcard_match_ci("t_[A-C]", "t_d"));
}

/* ---- binlog event filters ---- */

typedef struct filter_case {
  const char *what;
  const char *schema, *table, *event, *sql;
  bool ignored;
} filter_case;

static dmh_rules *rules_with_filters(const dmh_filter_rule **filters, int n) {
  static dmh_task_instance inst;
  memset(&inst, 0, sizeof inst);
  inst.filters = filters;
  inst.n_filters = n;
  dm_error err;
  dmh_rules *r = dmh_rules_new(&inst, &err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(r);
  return r;
}

static void filter_check(const dmh_rules *r, const filter_case *cases, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const filter_case *c = &cases[i];
    bool got = dmh_rules_event_ignored(r, c->schema, c->table, c->event, c->sql);
    if (got != c->ignored)
      fprintf(stderr, "\n  filter case \"%s\": expected %s, got %s\n", c->what,
              c->ignored ? "ignored" : "applied", got ? "ignored" : "applied");
    CU_ASSERT_EQUAL(got, c->ignored);
  }
}

/* One task's filters, as DM's docs use them: ignore drops and truncates of the shop tables,
 * ignore procedures by statement, only the DML of the log schemas, nothing of db_tmp. */
static void test_filters_table(void) {
  char *ev_drop[] = {"truncate table", "drop table"};
  char *sql_proc[] = {"^DROP\\s+PROCEDURE", "^CREATE\\s+PROCEDURE"};
  char *ev_dml[] = {"all dml"};
  char *ev_all[] = {"all"};
  char *ev_none_first[] = {"none", "insert"};
  dmh_filter_rule drop_shop = {.name = "no-drop",
                               .schema_pattern = "shop_*",
                               .table_pattern = "t_*",
                               .events = ev_drop,
                               .n_events = 2,
                               .action_ignore = true};
  dmh_filter_rule procs = {.name = "no-procs",
                           .schema_pattern = "*",
                           .sql_patterns = sql_proc,
                           .n_sql_patterns = 2,
                           .action_ignore = true};
  dmh_filter_rule log_dml = {.name = "log-dml-only",
                             .schema_pattern = "log_?",
                             .events = ev_dml,
                             .n_events = 1,
                             .action_ignore = false};
  dmh_filter_rule tmp_all = {.name = "no-tmp",
                             .schema_pattern = "db_tmp",
                             .events = ev_all,
                             .n_events = 1,
                             .action_ignore = true};
  dmh_filter_rule none_first = {.name = "none-stops",
                                .schema_pattern = "audit",
                                .table_pattern = "*",
                                .events = ev_none_first,
                                .n_events = 2,
                                .action_ignore = true};
  const dmh_filter_rule *filters[] = {&drop_shop, &procs, &log_dml, &tmp_all, &none_first};
  dmh_rules *r = rules_with_filters(filters, 5);
  static const filter_case cases[] = {
      /* Ignore by event, table-level rule, case-insensitive names */
      {"drop of a matching table", "shop_eu", "t_orders", "drop table", "DROP TABLE t_orders",
       true},
      {"names fold case", "SHOP_EU", "T_Orders", "truncate table", "TRUNCATE t_orders", true},
      {"other event on the table", "shop_eu", "t_orders", "insert", NULL, false},
      {"table outside the pattern", "shop_eu", "users", "drop table", "DROP TABLE users", false},
      {"schema outside the pattern", "shop", "t_orders", "drop table", "DROP TABLE t_orders",
       false},
      {"table rule, schema statement", "shop_eu", NULL, "drop database", "DROP DATABASE shop_eu",
       false},
      /* Ignore by sql-pattern (case-insensitive, any schema) */
      {"sql-pattern matches", "blog", NULL, NULL, "drop   procedure p1", true},
      {"sql-pattern is a search, anchored by ^", "blog", NULL, NULL, "CALL x; DROP PROCEDURE p",
       false},
      {"sql-pattern misses", "blog", "posts", "alter table", "ALTER TABLE posts ADD c INT", false},
      {"row change has no statement", "blog", "posts", "delete", NULL, false},
      /* Do rule (schema-level): the events it lists pass, all others are skipped */
      {"Do: dml passes", "log_1", "events", "insert", NULL, false},
      {"Do: ddl skipped", "log_1", "events", "alter table", "ALTER TABLE events ADD c INT", true},
      {"Do: schema statement skipped", "log_1", NULL, "create database", "CREATE DATABASE log_1",
       true},
      {"Do: statement without event name passes", "log_1", NULL, NULL, "CREATE VIEW v AS SELECT 1",
       false},
      {"Do: other schema untouched", "log_12", "events", "alter table", "ALTER TABLE events",
       false},
      /* Schema-level Ignore all */
      {"all: a row change", "db_tmp", "x", "update", NULL, true},
      {"all: a DDL", "db_tmp", "x", "create index", "CREATE INDEX i ON x (a)", true},
      {"all: no event name is judged by sql only", "db_tmp", NULL, NULL,
       "CREATE VIEW v AS SELECT 1", false},
      /* "none" ends the events list before "insert"; "*" reaches schema statements */
      {"none stops the list", "audit", "log", "insert", NULL, false},
      {"table-pattern * and a schema statement", "audit", NULL, "drop database",
       "DROP DATABASE audit", false},
      /* no rule applies */
      {"no rule", "other", "t", "drop table", "DROP TABLE t", false},
  };
  filter_check(r, cases, sizeof cases / sizeof cases[0]);
  dmh_rules_free(r);
}

/* Do with sql-pattern: a statement that does not match is skipped; "all ddl" Ignore rules; an
 * alias from DM ("create schema") and aliases in the filter ("none ddl"). */
static void test_filters_do_sql_and_classes(void) {
  char *sql_alter[] = {"^alter table .* add column"};
  char *ev_ddl[] = {"all ddl"};
  char *ev_none_dml[] = {"none dml", "all"};
  dmh_filter_rule do_alter = {.name = "only-add-column",
                              .schema_pattern = "app",
                              .table_pattern = "users",
                              .sql_patterns = sql_alter,
                              .n_sql_patterns = 1,
                              .action_ignore = false};
  dmh_filter_rule no_ddl = {.name = "no-ddl",
                            .schema_pattern = "ro_*",
                            .events = ev_ddl,
                            .n_events = 1,
                            .action_ignore = true};
  dmh_filter_rule dml_pass = {.name = "dml-pass",
                              .schema_pattern = "mixed",
                              .events = ev_none_dml,
                              .n_events = 2,
                              .action_ignore = true};
  const dmh_filter_rule *filters[] = {&do_alter, &no_ddl, &dml_pass};
  dmh_rules *r = rules_with_filters(filters, 3);
  static const filter_case cases[] = {
      /* the Do rule has no events: any event name fails it (DM's Do with an empty list) */
      {"Do sql: a row change", "app", "users", "insert", NULL, true},
      {"Do sql: statement without name, matching", "app", "users", NULL,
       "ALTER TABLE users ADD COLUMN c INT", false},
      {"Do sql: statement without name, not matching", "app", "users", NULL,
       "ALTER TABLE users DROP COLUMN c", true},
      {"Do sql: other table", "app", "orders", "insert", NULL, false},
      {"all ddl: create schema alias", "ro_1", NULL, "create schema", "CREATE SCHEMA ro_1", true},
      {"all ddl: a row change passes", "ro_1", "t", "delete", NULL, false},
      {"all ddl: NULL event passes", "ro_1", "t", NULL, "FLUSH TABLES", false},
      {"none dml stops the list for dml", "mixed", "t", "insert", NULL, false},
      {"none dml does not stop it for ddl", "mixed", "t", "drop table", "DROP TABLE t", true},
      {"unknown event name is judged by sql only", "ro_1", "t", "frobnicate", "FROB", false},
  };
  filter_check(r, cases, sizeof cases / sizeof cases[0]);
  dmh_rules_free(r);
  /* no filters at all, or no rules object: nothing is skipped */
  r = rules_with_filters(NULL, 0);
  CU_ASSERT_FALSE(dmh_rules_event_ignored(r, "db_tmp", "x", "drop table", "DROP TABLE x"));
  dmh_rules_free(r);
  CU_ASSERT_FALSE(dmh_rules_event_ignored(NULL, "db", "x", "drop table", "DROP TABLE x"));
}

static void test_filters_bad_sql_pattern(void) {
  char *bad[] = {"^ok", "(unclosed"};
  dmh_filter_rule f = {
      .name = "broken", .schema_pattern = "*", .sql_patterns = bad, .n_sql_patterns = 2};
  const dmh_filter_rule *filters[] = {&f};
  dmh_task_instance inst = {.filters = filters, .n_filters = 1};
  dm_error err;
  CU_ASSERT_PTR_NULL(dmh_rules_new(&inst, &err));
  CU_ASSERT_EQUAL(err.code, DM_ERR_CONFIG_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "broken"));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "(unclosed"));
}

int main(void) {
  CU_initialize_registry();
  CU_pSuite s = CU_add_suite("rules", NULL, NULL);
  CU_add_test(s, "system schemas never", test_system_schemas_never);
  CU_add_test(s, "do-dbs and regex", test_do_dbs_and_regex);
  CU_add_test(s, "ignore-dbs and ignore-tables", test_ignore_dbs_and_tables);
  CU_add_test(s, "do-tables", test_do_tables);
  CU_add_test(s, "bad regex", test_bad_regex);
  CU_add_test(s, "wildcards", test_wildcards);
  CU_add_test(s, "routes", test_routes);
  CU_add_test(s, "wildcard ranges and case", test_wildcard_ranges_and_case);
  CU_add_test(s, "filters: a table of cases", test_filters_table);
  CU_add_test(s, "filters: Do with sql-pattern, event classes", test_filters_do_sql_and_classes);
  CU_add_test(s, "filters: bad sql-pattern", test_filters_bad_sql_pattern);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  int failed = (int)CU_get_number_of_failures() + CU_get_number_of_suites_failed();
  CU_cleanup_registry();
  return failed ? 1 : 0;
}
