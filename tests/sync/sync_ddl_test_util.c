/* Helpers of the DDL reader's tests (sync_ddl_test_util.h). */
#include "sync_ddl_test_util.h"

#include <stdio.h>
#include <string.h>

void test_route(void *arg, const char *schema, const char *table, char *out_schema,
                size_t schema_len, char *out_table, size_t table_len) {
  const route_set *rs = arg;
  for (int k = 0; k < rs->n; k++) {
    const route_rule *r = &rs->rules[k];
    if (strcmp(r->schema, schema) != 0)
      continue;
    if (r->table && (!table || strcmp(r->table, table) != 0))
      continue;
    if (r->to_schema)
      snprintf(out_schema, schema_len, "%s", r->to_schema);
    if (table && r->to_table)
      snprintf(out_table, table_len, "%s", r->to_table);
    return;
  }
}

static const route_rule schema_rules[] = {{"shop", NULL, "shop_tgt", NULL}};
static const route_rule table_rules[] = {{"shop", "orders", NULL, "orders_all"}};
static const route_rule both_rules[] = {{"shop", "orders", "merged", "orders_all"},
                                        {"shop", NULL, "merged", NULL}};
static const route_rule odd_rules[] = {{"shop", "orders", "a`b", "ünï $x"}};
const route_set R_SCHEMA = {schema_rules, 1};
const route_set R_TABLE = {table_rules, 1};
const route_set R_BOTH = {both_rules, 2};
const route_set R_ODD = {odd_rules, 1};
