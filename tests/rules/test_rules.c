/* Block-allow-list and routes as DM applies them (host/rules.c). */
#include <CUnit/Basic.h>
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
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  int failed = (int)CU_get_number_of_failures();
  CU_cleanup_registry();
  return failed ? 1 : 0;
}
