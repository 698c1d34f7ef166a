/* The precheck's items on the replicated tables: keys (table_schema), collations the target
 * lacks (target_charset), merged tables' AUTO_INCREMENT keys (auto_increment_ID). */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dmhost/sdk.h"
#include "match.h"
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
    dmh_rules_route(c->rules, row[0], row[1], t->to_schema, sizeof t->to_schema, t->to_table,
                    sizeof t->to_table);
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

/* ---- auto_increment_ID (docs/shard.md, "Merged keys and the precheck") ---- */

/* Does another mysql-instance of the task route tables to `schema`.`table` (its source's tables
 * are merged there too)? */
static bool pc_other_source_routes(pc_ctx *c, const char *schema, const char *table) {
  bool cs = c->task->case_sensitive;
  for (int i = 0; i < c->task->n_instances; i++) {
    const dmh_task_instance *in = &c->task->instances[i];
    if (in == c->inst || (in->source_id && c->inst && c->inst->source_id &&
                          strcmp(in->source_id, c->inst->source_id) == 0))
      continue;
    for (int k = 0; k < in->n_routes; k++) {
      const dmh_route_rule *r = in->routes[k];
      if (strcmp(r->target_schema, schema) != 0)
        continue;
      bool has_table = r->table_pattern && r->table_pattern[0];
      if (has_table && r->target_table && r->target_table[0]
              ? strcmp(r->target_table, table) == 0
              : !has_table || dmh_wildcard_match(r->table_pattern, table, cs))
        return true;
    }
  }
  return false;
}

/* The unique keys of a table ("name\tcol1,col2\n" each, the columns in key order) into out; the
 * table's column count in *n_cols. 0, or -1 having failed the current item. */
static int pc_unique_keys(pc_ctx *c, MYSQL *m, const char *schema, const char *table, char *out,
                          size_t len, long long *n_cols) {
  char q[1536], ls[520], lt[520];
  mysql_real_escape_string(m, ls, schema, (unsigned long)strlen(schema));
  mysql_real_escape_string(m, lt, table, (unsigned long)strlen(table));
  snprintf(q, sizeof q,
           "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '%s' AND "
           "TABLE_NAME = '%s'",
           ls, lt);
  char v[32];
  if (pc_value(c, m, q, v, sizeof v) < 0)
    return -1;
  *n_cols = atoll(v);
  snprintf(q, sizeof q,
           "SELECT INDEX_NAME, GROUP_CONCAT(COLUMN_NAME ORDER BY SEQ_IN_INDEX SEPARATOR ',') FROM "
           "information_schema.STATISTICS WHERE TABLE_SCHEMA = '%s' AND TABLE_NAME = '%s' AND "
           "NON_UNIQUE = 0 GROUP BY INDEX_NAME ORDER BY INDEX_NAME <> 'PRIMARY', INDEX_NAME",
           ls, lt);
  MYSQL_RES *res = NULL;
  if (mysql_query(m, q) != 0 || !(res = mysql_store_result(m))) {
    pc_fail(c, "reading the keys of `%s`.`%s` failed: %s", schema, table, mysql_error(m));
    return -1;
  }
  out[0] = '\0';
  size_t at = 0;
  MYSQL_ROW row;
  while ((row = mysql_fetch_row(res)) && at < len)
    at += (size_t)snprintf(out + at, len - at, "%s\t%s\n", row[0] ? row[0] : "",
                           row[1] ? row[1] : "");
  mysql_free_result(res);
  return 0;
}

/* Is `col` one of the comma-separated names of list (compared without regard to case, as MariaDB
 * compares column names)? */
static bool pc_in_list(const char *list, size_t n, const char *col) {
  size_t cl = strlen(col);
  for (const char *p = list, *end = list + n; p < end;) {
    const char *comma = memchr(p, ',', (size_t)(end - p));
    const char *stop = comma ? comma : end;
    if ((size_t)(stop - p) == cl && strncasecmp(p, col, cl) == 0)
      return true;
    p = stop + 1;
  }
  return false;
}

/* One source table of a merged target whose unique key `key` (columns `cols`) holds the
 * AUTO_INCREMENT column `ai`: fails when a unique key of the target holding `ai` (or, when the
 * target has no such table yet, the key plus the route's extract columns) has no extract
 * column; else DM's warning. */
static void pc_auto_increment_one(pc_ctx *c, const pc_table *t, int n_merged, bool others,
                                  const char *key, const char *cols, const char *ai) {
  dm_route_extract ext;
  dmh_rules_extract(c->rules, t->schema, t->table, &ext);
  char tkeys[4096];
  long long n_cols = 0;
  if (pc_unique_keys(c, c->target, t->to_schema, t->to_table, tkeys, sizeof tkeys, &n_cols) < 0)
    return;
  char merged[96];
  snprintf(merged, sizeof merged, "%d table(s) of this source%s", n_merged,
           others ? " and the task's other sources" : "");
  if (n_cols == 0) { /* not there yet: the key it gets is the source's plus the extract columns */
    if (ext.n == 0)
      pc_fail(c,
              "`%s`.`%s` merges %s into `%s`.`%s`; its key `%s` (%s) holds AUTO_INCREMENT column "
              "`%s`, and its route fills no extract column: rows of different shards with the "
              "same `%s` would be one row on the target",
              t->schema, t->table, merged, t->to_schema, t->to_table, key, cols, ai, ai);
    else
      pc_warn(c,
              "sourceID %s table `%s`.`%s` of sharding `%s`.`%s` have auto-increment key, please "
              "make sure them don't conflict in target table!",
              c->inst && c->inst->source_id ? c->inst->source_id : "", t->schema, t->table,
              t->to_schema, t->to_table);
    return;
  }
  for (char *line = tkeys, *nl; *line && (nl = strchr(line, '\n')) != NULL; line = nl + 1) {
    char *tab = memchr(line, '\t', (size_t)(nl - line));
    if (!tab)
      continue;
    const char *list = tab + 1;
    size_t n = (size_t)(nl - list);
    if (!pc_in_list(list, n, ai))
      continue;
    bool has_ext = false;
    for (uint32_t e = 0; e < ext.n && !has_ext; e++)
      has_ext = pc_in_list(list, n, ext.cols[e].column);
    if (!has_ext) {
      pc_fail(c,
              "`%s`.`%s` merges %s into `%s`.`%s`; its key `%s` (%s) holds AUTO_INCREMENT column "
              "`%s`, and the target's key `%.*s` (%.*s) has no extract column: rows of different "
              "shards with the same `%s` would overwrite each other",
              t->schema, t->table, merged, t->to_schema, t->to_table, key, cols, ai,
              (int)(tab - line), line, (int)n, list, ai);
      return;
    }
  }
  pc_warn(c,
          "sourceID %s table `%s`.`%s` of sharding `%s`.`%s` have auto-increment key, please "
          "make sure them don't conflict in target table!",
          c->inst && c->inst->source_id ? c->inst->source_id : "", t->schema, t->table,
          t->to_schema, t->to_table);
}

void pc_check_auto_increment(pc_ctx *c) {
  if (pc_tables(c) < 0)
    return;
  /* the unique keys of the source holding an AUTO_INCREMENT column */
  static const char q[] =
      "SELECT s.TABLE_SCHEMA, s.TABLE_NAME, s.INDEX_NAME, s.COLUMN_NAME, (SELECT GROUP_CONCAT("
      "k.COLUMN_NAME ORDER BY k.SEQ_IN_INDEX SEPARATOR ',') FROM information_schema.STATISTICS k "
      "WHERE k.TABLE_SCHEMA = s.TABLE_SCHEMA AND k.TABLE_NAME = s.TABLE_NAME AND k.INDEX_NAME = "
      "s.INDEX_NAME) FROM information_schema.STATISTICS s JOIN information_schema.COLUMNS c ON "
      "c.TABLE_SCHEMA = s.TABLE_SCHEMA AND c.TABLE_NAME = s.TABLE_NAME AND c.COLUMN_NAME = "
      "s.COLUMN_NAME WHERE s.NON_UNIQUE = 0 AND c.EXTRA LIKE '%auto_increment%' AND "
      "s.TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys') ORDER "
      "BY s.TABLE_SCHEMA, s.TABLE_NAME, s.INDEX_NAME <> 'PRIMARY', s.INDEX_NAME";
  MYSQL_RES *res = NULL;
  if (mysql_query(c->source, q) != 0 || !(res = mysql_store_result(c->source))) {
    pc_fail(c, "reading the source's AUTO_INCREMENT keys failed: %s", mysql_error(c->source));
    return;
  }
  MYSQL_ROW row;
  int last = -1;
  while ((row = mysql_fetch_row(res))) {
    int i = row[0] && row[1] ? pc_find(c, row[0], row[1]) : -1;
    if (i < 0 || i == last || !row[2] || !row[3])
      continue; /* one finding a table: its first key (the primary) */
    last = i;
    const pc_table *t = &c->tables[i];
    int n_merged = 0;
    for (int k = 0; k < c->n_tables; k++)
      n_merged += strcmp(c->tables[k].to_schema, t->to_schema) == 0 &&
                  strcmp(c->tables[k].to_table, t->to_table) == 0;
    bool others = pc_other_source_routes(c, t->to_schema, t->to_table);
    if (n_merged < 2 && !others)
      continue; /* not a merged table: its own keys stay unique */
    pc_auto_increment_one(c, t, n_merged, others, row[2], row[4] ? row[4] : row[3], row[3]);
  }
  mysql_free_result(res);
}
