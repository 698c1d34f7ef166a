/*
 * Block-allow-list, as DM applies it:
 *   schema level: do-dbs non-empty -> the schema must match one of them (the schemas of do-tables
 *   count as listed); else ignore-dbs -> a matching schema is filtered out;
 *   table level: do-tables non-empty -> the table must match one of them; else ignore-tables ->
 *   a matching table is filtered out.
 * A name starting with '~' is a POSIX extended regular expression, anything else an exact name.
 * Routes: a rule with a table-pattern beats a schema-only rule; patterns are DM wildcards.
 * Binlog event filters are compiled here too (filters.c), so one object holds all of a subtask's
 * rules.
 */
#include "rules.h"

#include <ctype.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dmhost/sdk.h"
#include "filters.h"

typedef struct rules_name {
  const char *exact; /* NULL when it is a regex */
  regex_t re;
} rules_name;

typedef struct rules_table {
  rules_name db, table;
} rules_table;

struct dmh_rules {
  rules_name *do_dbs, *ignore_dbs;
  int n_do_dbs, n_ignore_dbs;
  rules_table *do_tables, *ignore_tables;
  int n_do_tables, n_ignore_tables;
  const dmh_route_rule **routes;
  int n_routes;
  dmh_filters *filters; /* NULL: no filter rules */
};

static int rules_compile(rules_name *n, const char *s, dm_error *err) {
  if (s[0] != '~') {
    n->exact = s;
    return 0;
  }
  n->exact = NULL;
  int rc = regcomp(&n->re, s + 1, REG_EXTENDED | REG_NOSUB);
  if (rc != 0) {
    char msg[256];
    regerror(rc, &n->re, msg, sizeof msg);
    n->exact = ""; /* nothing compiled: free must not regfree it */
    dm_error_set(err, DM_ERR_CONFIG_INVALID, msg, "block-allow-list: bad regular expression %s", s);
    return -1;
  }
  return 0;
}

static bool rules_name_match(const rules_name *n, const char *s) {
  if (n->exact)
    return strcmp(n->exact, s) == 0;
  return regexec(&n->re, s, 0, NULL, 0) == 0;
}

static void rules_names_free(rules_name *n, int count) {
  for (int i = 0; i < count; i++)
    if (!n[i].exact)
      regfree(&n[i].re);
  free(n);
}

bool dmh_rules_is_system_schema(const char *schema) {
  static const char *const sys[] = {"mysql", "information_schema", "performance_schema", "sys"};
  for (size_t i = 0; i < sizeof sys / sizeof sys[0]; i++)
    if (strcasecmp(schema, sys[i]) == 0)
      return true;
  return false;
}

dmh_rules *dmh_rules_new(const dmh_task_instance *inst, dm_error *err) {
  dmh_rules *r = calloc(1, sizeof *r);
  if (!r) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory compiling the task's rules");
    return NULL;
  }
  if (!inst)
    return r;
  r->routes = inst->routes;
  r->n_routes = inst->n_routes;
  if (inst->n_filters > 0 && !(r->filters = dmh_filters_new(inst->filters, inst->n_filters, err))) {
    dmh_rules_free(r);
    return NULL;
  }
  const dmh_bal_rule *b = inst->bal;
  if (!b)
    return r;
  int rc = 0;
  r->do_dbs = calloc((size_t)b->n_do_dbs + 1, sizeof *r->do_dbs);
  r->ignore_dbs = calloc((size_t)b->n_ignore_dbs + 1, sizeof *r->ignore_dbs);
  r->do_tables = calloc((size_t)b->n_do_tables + 1, sizeof *r->do_tables);
  r->ignore_tables = calloc((size_t)b->n_ignore_tables + 1, sizeof *r->ignore_tables);
  if (!r->do_dbs || !r->ignore_dbs || !r->do_tables || !r->ignore_tables) {
    dmh_rules_free(r);
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory compiling the task's rules");
    return NULL;
  }
  for (int i = 0; i < b->n_do_dbs && rc == 0; i++, r->n_do_dbs++)
    rc = rules_compile(&r->do_dbs[i], b->do_dbs[i], err);
  for (int i = 0; i < b->n_ignore_dbs && rc == 0; i++, r->n_ignore_dbs++)
    rc = rules_compile(&r->ignore_dbs[i], b->ignore_dbs[i], err);
  for (int i = 0; i < b->n_do_tables && rc == 0; i++, r->n_do_tables++) {
    /* compile both halves before counting the entry, so free sees whole entries only */
    rc = rules_compile(&r->do_tables[i].db, b->do_tables[i].db, err);
    if (rc == 0 && rules_compile(&r->do_tables[i].table, b->do_tables[i].table, err) < 0) {
      if (!r->do_tables[i].db.exact)
        regfree(&r->do_tables[i].db.re);
      r->do_tables[i].db.exact = "";
      rc = -1;
    }
  }
  for (int i = 0; i < b->n_ignore_tables && rc == 0; i++, r->n_ignore_tables++) {
    rc = rules_compile(&r->ignore_tables[i].db, b->ignore_tables[i].db, err);
    if (rc == 0 && rules_compile(&r->ignore_tables[i].table, b->ignore_tables[i].table, err) < 0) {
      if (!r->ignore_tables[i].db.exact)
        regfree(&r->ignore_tables[i].db.re);
      r->ignore_tables[i].db.exact = "";
      rc = -1;
    }
  }
  if (rc < 0) {
    /* the loop's increment counted the failed entry; its names were marked exact above */
    dmh_rules_free(r);
    return NULL;
  }
  return r;
}

void dmh_rules_free(dmh_rules *r) {
  if (!r)
    return;
  rules_names_free(r->do_dbs, r->n_do_dbs);
  rules_names_free(r->ignore_dbs, r->n_ignore_dbs);
  for (int i = 0; i < r->n_do_tables; i++) {
    if (!r->do_tables[i].db.exact)
      regfree(&r->do_tables[i].db.re);
    if (!r->do_tables[i].table.exact)
      regfree(&r->do_tables[i].table.re);
  }
  for (int i = 0; i < r->n_ignore_tables; i++) {
    if (!r->ignore_tables[i].db.exact)
      regfree(&r->ignore_tables[i].db.re);
    if (!r->ignore_tables[i].table.exact)
      regfree(&r->ignore_tables[i].table.re);
  }
  free(r->do_tables);
  free(r->ignore_tables);
  dmh_filters_free(r->filters);
  free(r);
}

bool dmh_rules_event_ignored(const dmh_rules *r, const char *schema, const char *table,
                             const char *event, const char *sql) {
  return r && dmh_filters_ignored(r->filters, schema, table, event, sql);
}

static bool rules_any_db(const rules_name *n, int count, const char *s) {
  for (int i = 0; i < count; i++)
    if (rules_name_match(&n[i], s))
      return true;
  return false;
}

static bool rules_any_table(const rules_table *t, int count, const char *db, const char *table) {
  for (int i = 0; i < count; i++)
    if (rules_name_match(&t[i].db, db) && (!table || rules_name_match(&t[i].table, table)))
      return true;
  return false;
}

bool dmh_rules_table_allowed(const dmh_rules *r, const char *schema, const char *table) {
  if (dmh_rules_is_system_schema(schema))
    return false;
  if (!r)
    return true;
  bool in_do_tables = rules_any_table(r->do_tables, r->n_do_tables, schema, NULL);
  /* schema level */
  if (r->n_do_dbs > 0 && !rules_any_db(r->do_dbs, r->n_do_dbs, schema) && !in_do_tables)
    return false;
  if (r->n_do_dbs == 0 && r->n_ignore_dbs > 0 &&
      rules_any_db(r->ignore_dbs, r->n_ignore_dbs, schema))
    return false;
  /* table level; do-tables restrict the schemas they name, do-dbs let the rest of theirs in */
  if (r->n_do_tables > 0) {
    if (in_do_tables)
      return !table || rules_any_table(r->do_tables, r->n_do_tables, schema, table);
    if (r->n_do_dbs == 0)
      return false;
  }
  if (table && r->n_ignore_tables > 0)
    return !rules_any_table(r->ignore_tables, r->n_ignore_tables, schema, table);
  return true;
}

static unsigned char rules_fold(unsigned char c, bool fold) {
  return fold ? (unsigned char)tolower(c) : c;
}

/*
 * One token of a DM wildcard at p against the character c: '?' (any), a range "[a-z0-9_]" or
 * "[!0-9]" (negated; "[!]" is a literal '!'; a '[' without a closing ']' is a literal '['), or a
 * literal character. Returns how many pattern bytes the token spans and sets *match.
 */
static size_t rules_wildcard_token(const char *p, unsigned char c, bool fold, bool *match) {
  c = rules_fold(c, fold);
  if (*p == '?') {
    *match = true;
    return 1;
  }
  const char *close = *p == '[' ? strchr(p + 1, ']') : NULL;
  if (!close) {
    *match = rules_fold((unsigned char)*p, fold) == c;
    return 1;
  }
  const char *q = p + 1;
  bool neg = *q == '!';
  if (neg)
    q++;
  if (neg && q == close) {
    *match = c == '!';
    return (size_t)(close - p) + 1;
  }
  bool in = false;
  for (; q < close; q++) {
    unsigned char lo = rules_fold((unsigned char)*q, fold), hi = lo;
    if (q[1] == '-' && q + 2 < close) {
      hi = rules_fold((unsigned char)q[2], fold);
      q += 2;
    }
    if (lo <= c && c <= hi)
      in = true;
  }
  *match = in != neg;
  return (size_t)(close - p) + 1;
}

/* '*' any run (DM allows it only last; anywhere is a superset), with backtracking to the last
 * star. */
static bool rules_wildcard(const char *p, const char *s, bool fold) {
  const char *star = NULL, *retry = NULL;
  while (*s) {
    if (*p == '*') {
      star = ++p;
      retry = s;
      continue;
    }
    bool match = false;
    size_t n = *p ? rules_wildcard_token(p, (unsigned char)*s, fold, &match) : 0;
    if (match) {
      p += n;
      s++;
    } else if (star) {
      p = star;
      s = ++retry;
    } else {
      return false;
    }
  }
  while (*p == '*')
    p++;
  return *p == '\0';
}

bool dmh_wildcard_match(const char *p, const char *s) {
  return rules_wildcard(p, s, false);
}

bool dmh_wildcard_match_ci(const char *p, const char *s) {
  return rules_wildcard(p, s, true);
}

void dmh_rules_route(const dmh_rules *r, const char *schema, const char *table, char *out_schema,
                     size_t schema_len, char *out_table, size_t table_len) {
  dm_strlcpy(out_schema, schema, schema_len);
  if (out_table)
    dm_strlcpy(out_table, table ? table : "", table_len);
  if (!r)
    return;
  const dmh_route_rule *schema_rule = NULL;
  for (int i = 0; i < r->n_routes; i++) {
    const dmh_route_rule *rr = r->routes[i];
    if (!dmh_wildcard_match(rr->schema_pattern, schema))
      continue;
    if (rr->table_pattern && rr->table_pattern[0]) {
      if (table && dmh_wildcard_match(rr->table_pattern, table)) {
        dm_strlcpy(out_schema, rr->target_schema, schema_len);
        if (out_table && rr->target_table && rr->target_table[0])
          dm_strlcpy(out_table, rr->target_table, table_len);
        return; /* a table rule wins over any schema rule */
      }
    } else if (!schema_rule) {
      schema_rule = rr;
    }
  }
  if (schema_rule)
    dm_strlcpy(out_schema, schema_rule->target_schema, schema_len);
}
