/*
 * Helpers of the DDL reader's tests without a server (test_sync_ddl_*.c): a route callback for
 * sync_ddl_rewrite (plugins/sync/sync_ddl.h) driven by a table of rules, and the route sets the
 * cases share.
 */
#ifndef DMH_SYNC_DDL_TEST_UTIL_H
#define DMH_SYNC_DDL_TEST_UTIL_H

#include <stddef.h>

/* A rule with table NULL routes the schema and every table in it (a DM schema route: the tables
 * keep their names); to_* NULL keeps that part. The first matching rule wins. */
typedef struct route_rule {
  const char *schema, *table, *to_schema, *to_table;
} route_rule;

typedef struct route_set {
  const route_rule *rules;
  int n;
} route_set;

/* The route callback of sync_ddl_rewrite; arg: a route_set. */
void test_route(void *arg, const char *schema, const char *table, char *out_schema,
                size_t schema_len, char *out_table, size_t table_len);

/* shop -> shop_tgt (schema route) */
extern const route_set R_SCHEMA;
/* shop.orders -> shop.orders_all (table route) */
extern const route_set R_TABLE;
/* shop.orders -> merged.orders_all, the rest of shop -> merged */
extern const route_set R_BOTH;
/* shop.orders -> `a``b`.`ünï $x` (names that need quoting) */
extern const route_set R_ODD;

#endif /* DMH_SYNC_DDL_TEST_UTIL_H */
