/* The precheck's items on the replicated tables: keys (table_schema) and collations the target
 * lacks (target_charset). */
#include <stdlib.h>
#include <string.h>

#include "dmhost/sdk.h"
#include "precheck_internal.h"

static int pc_table_cmp(const void *a, const void *b) {
  const pc_table *x = a, *y = b;
  int d = strcmp(x->schema, y->schema);
  return d ? d : strcmp(x->table, y->table);
}

int pc_tables(pc_ctx *c) {
  if (c->listed)
    return 0;
  static const char q[] =
      "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_TYPE = 'BASE "
      "TABLE' AND TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', "
      "'sys') ORDER BY TABLE_SCHEMA, TABLE_NAME";
  MYSQL_RES *res = NULL;
  if (mysql_query(c->source, q) != 0 || !(res = mysql_store_result(c->source))) {
    pc_fail(c, "listing the source's tables failed: %s", mysql_error(c->source));
    return -1;
  }
  pc_table *v = calloc(mysql_num_rows(res) + 1, sizeof *v);
  if (!v) {
    mysql_free_result(res);
    c->oom = true;
    return -1;
  }
  int n = 0;
  MYSQL_ROW row;
  while ((row = mysql_fetch_row(res))) {
    if (!row[0] || !row[1] || dmh_rules_is_system_schema(row[0]) ||
        !dmh_rules_table_allowed(c->rules, row[0], row[1]))
      continue;
    pc_table *t = &v[n++];
    dm_strlcpy(t->schema, row[0], sizeof t->schema);
    dm_strlcpy(t->table, row[1], sizeof t->table);
    char to_table[256];
    dmh_rules_route(c->rules, row[0], row[1], t->to_schema, sizeof t->to_schema, to_table,
                    sizeof to_table);
  }
  mysql_free_result(res);
  qsort(v, (size_t)n, sizeof *v, pc_table_cmp); /* by bytes, for pc_find */
  c->tables = v;
  c->n_tables = n;
  c->listed = true;
  return 0;
}

/* The index of schema.table among the replicated tables, or -1. */
static int pc_find(pc_ctx *c, const char *schema, const char *table) {
  pc_table key;
  dm_strlcpy(key.schema, schema, sizeof key.schema);
  dm_strlcpy(key.table, table, sizeof key.table);
  pc_table *t = bsearch(&key, c->tables, (size_t)c->n_tables, sizeof key, pc_table_cmp);
  return t ? (int)(t - c->tables) : -1;
}

/* Appends "`s`.`t`" to a list of at most 5 names, then "and N more"; a name that does not fit is
 * cut (the list is for a message). */
static void pc_list_add(char *buf, size_t len, int *count, const char *schema, const char *table) {
  size_t at = strlen(buf);
  if (*count < 5 && at < len &&
      snprintf(buf + at, len - at, "%s`%s`.`%s`", *count ? ", " : "", schema, table) < 0)
    buf[at] = '\0';
  (*count)++;
}

static void pc_list_end(char *buf, size_t len, int count) {
  size_t at = strlen(buf);
  if (count > 5)
    snprintf(buf + at, len - at, " and %d more", count - 5);
}

void pc_check_table_schema(pc_ctx *c) {
  if (pc_tables(c) < 0)
    return;
  /* tables with a unique index none of whose columns may be NULL (a primary key is one) */
  static const char q[] =
      "SELECT DISTINCT TABLE_SCHEMA, TABLE_NAME FROM (SELECT TABLE_SCHEMA, TABLE_NAME, INDEX_NAME "
      "FROM information_schema.STATISTICS WHERE NON_UNIQUE = 0 AND TABLE_SCHEMA NOT IN ('mysql', "
      "'information_schema', 'performance_schema', 'sys') GROUP BY TABLE_SCHEMA, TABLE_NAME, "
      "INDEX_NAME HAVING SUM(NULLABLE = 'YES') = 0) k";
  MYSQL_RES *res = NULL;
  if (mysql_query(c->source, q) != 0 || !(res = mysql_store_result(c->source))) {
    pc_fail(c, "reading the source's keys failed: %s", mysql_error(c->source));
    return;
  }
  bool *keyed = calloc((size_t)c->n_tables + 1, sizeof *keyed);
  if (!keyed) {
    mysql_free_result(res);
    c->oom = true;
    return;
  }
  MYSQL_ROW row;
  while ((row = mysql_fetch_row(res))) {
    int i = row[0] && row[1] ? pc_find(c, row[0], row[1]) : -1;
    if (i >= 0)
      keyed[i] = true;
  }
  mysql_free_result(res);
  char list[512] = "";
  int count = 0;
  for (int i = 0; i < c->n_tables; i++)
    if (!keyed[i])
      pc_list_add(list, sizeof list, &count, c->tables[i].schema, c->tables[i].table);
  free(keyed);
  pc_list_end(list, sizeof list, count);
  if (count)
    pc_warn(c, "%d replicated table(s) have neither a primary key nor a NOT NULL unique key: %s",
            count, list);
}

/* The collations of the target, as one string "\ncoll1\ncoll2\n...\n" for lookup. */
static char *pc_target_collations(pc_ctx *c) {
  MYSQL_RES *res = NULL;
  if (mysql_query(c->target, "SELECT COLLATION_NAME FROM information_schema.COLLATIONS") != 0 ||
      !(res = mysql_store_result(c->target))) {
    pc_fail(c, "reading the target's collations failed: %s", mysql_error(c->target));
    return NULL;
  }
  size_t len = 2, at = 0;
  MYSQL_ROW row;
  while ((row = mysql_fetch_row(res)))
    len += row[0] ? strlen(row[0]) + 1 : 0;
  char *all = malloc(len);
  if (!all) {
    mysql_free_result(res);
    c->oom = true;
    return NULL;
  }
  all[at++] = '\n';
  mysql_data_seek(res, 0);
  while ((row = mysql_fetch_row(res)))
    if (row[0])
      at += (size_t)snprintf(all + at, len - at, "%s\n", row[0]);
  all[at] = '\0';
  mysql_free_result(res);
  return all;
}

void pc_check_target_charset(pc_ctx *c) {
  if (pc_tables(c) < 0)
    return;
  char *have = pc_target_collations(c);
  if (!have)
    return;
  static const char q[] =
      "SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_COLLATION FROM information_schema.TABLES WHERE "
      "TABLE_TYPE = 'BASE TABLE' AND TABLE_COLLATION IS NOT NULL UNION SELECT TABLE_SCHEMA, "
      "TABLE_NAME, COLLATION_NAME FROM information_schema.COLUMNS WHERE COLLATION_NAME IS NOT "
      "NULL ORDER BY 3, 1, 2";
  MYSQL_RES *res = NULL;
  if (mysql_query(c->source, q) != 0 || !(res = mysql_store_result(c->source))) {
    pc_fail(c, "reading the source tables' collations failed: %s", mysql_error(c->source));
    free(have);
    return;
  }
  char last[256] = "", list[400] = "";
  int count = 0;
  MYSQL_ROW row;
  for (bool more = true; more;) {
    row = mysql_fetch_row(res);
    more = row != NULL;
    if (!row || strcmp(row[2], last) != 0) { /* a new collation: report the previous one */
      if (count) {
        pc_list_end(list, sizeof list, count);
        pc_fail(c, "the target has no collation %s, used by %s", last, list);
      }
      list[0] = '\0';
      count = 0;
      if (row)
        dm_strlcpy(last, row[2], sizeof last);
    }
    if (!row || !row[0] || !row[1] || pc_find(c, row[0], row[1]) < 0)
      continue;
    char key[260];
    snprintf(key, sizeof key, "\n%s\n", row[2]);
    if (!strstr(have, key))
      pc_list_add(list, sizeof list, &count, row[0], row[1]);
  }
  mysql_free_result(res);
  free(have);
}
