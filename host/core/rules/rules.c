/*
 * Block-allow-list, as DM applies it (tidb-tools pkg/filter):
 *   schema level: do-dbs non-empty -> the schema must match one of them (a do-tables entry does
 *   not let its schema in); else ignore-dbs -> a matching schema is filtered out;
 *   table level: a table matching do-tables is in; else one matching ignore-tables is out; else
 *   it is in only when do-tables is empty (do-tables naming no table of a do-dbs schema keeps
 *   that schema's tables out).
 * Names are matched by match.h: wildcards, '~' regular expressions, case folded unless the task
 * says case-sensitive = true.
 * Routes (DM's table-router): a rule with a table-pattern beats a schema-only rule; among rules
 * of one kind the first that matches wins (DM refuses a table that two of them match).
 * Binlog event filters are compiled here too (filters.c), so one object holds all of a subtask's
 * rules.
 */
#include "rules.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dmhost/sdk.h"
#include "filters.h"
#include "match.h"

typedef struct rules_table {
  dmh_match db, table;
} rules_table;

struct dmh_rules {
  dmh_match *do_dbs, *ignore_dbs;
  int n_do_dbs, n_ignore_dbs;
  rules_table *do_tables, *ignore_tables;
  int n_do_tables, n_ignore_tables;
  const dmh_route_rule **routes;
  dmh_regex (*extract)[DMH_EXTRACT_KINDS]; /* by route: its compiled extract regexps */
  int n_routes;
  const char *source_id; /* the subtask's, what extract-source reads */
  bool case_sensitive;
  dmh_filters *filters; /* NULL: no filter rules */
  /* online-ddl: the shadow and trash rules compiled with their groups (match.h) */
  bool online;
  dmh_regex *shadow, *trash;
  int n_shadow, n_trash;
};

/* One online-DDL rule list (the task's, or DM's default when it gives none) into *out. */
static int rules_online_compile(const char *key, char *const *list, int n, const char *dflt,
                                dmh_regex **out, int *done, dm_error *err) {
  const char *one[1] = {dflt};
  const char *const *exprs = n > 0 ? (const char *const *)list : one;
  int count = n > 0 ? n : 1;
  if (!(*out = calloc((size_t)count, sizeof **out))) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory compiling the task's rules");
    return -1;
  }
  for (int i = 0; i < count; i++, (*done)++) {
    char why[400];
    if (dmh_regex_compile_groups(&(*out)[i], exprs[i], false, why, sizeof why) < 0) {
      dm_error_set(err, DM_ERR_CONFIG_INVALID, why, "%s: bad regular expression %s: %s", key,
                   exprs[i], why);
      return -1;
    }
  }
  return 0;
}

static void rules_online_free(dmh_regex *rx, int n) {
  for (int i = 0; i < n; i++)
    dmh_regex_free(&rx[i]);
  free(rx);
}

static int rules_compile(dmh_match *m, const char *s, bool case_sensitive, dm_error *err) {
  char why[400];
  if (dmh_match_init(m, s, true, case_sensitive, why, sizeof why) == 0)
    return 0;
  dm_error_set(err, DM_ERR_CONFIG_INVALID, why, "block-allow-list: bad regular expression %s: %s",
               s, why);
  return -1;
}

static void rules_names_free(dmh_match *n, int count) {
  for (int i = 0; i < count; i++)
    dmh_match_free(&n[i]);
  free(n);
}

static void rules_tables_free(rules_table *t, int count) {
  for (int i = 0; i < count; i++) {
    dmh_match_free(&t[i].db);
    dmh_match_free(&t[i].table);
  }
  free(t);
}

/* Compiles n table refs into t, counting each whole entry in *done (free sees only those). */
static int rules_compile_tables(rules_table *t, int *done, const dmh_table_ref *refs, int n,
                                bool cs, dm_error *err) {
  for (int i = 0; i < n; i++, (*done)++) {
    if (rules_compile(&t[i].db, refs[i].db, cs, err) < 0)
      return -1;
    if (rules_compile(&t[i].table, refs[i].table, cs, err) < 0) {
      dmh_match_free(&t[i].db);
      return -1;
    }
  }
  return 0;
}

/* The routes' extract regexps, compiled once (the task file's check refused bad ones first). */
static int rules_compile_extracts(dmh_rules *r, dm_error *err) {
  if (r->n_routes == 0)
    return 0;
  r->extract = calloc((size_t)r->n_routes, sizeof *r->extract);
  if (!r->extract) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory compiling the task's rules");
    return -1;
  }
  for (int i = 0; i < r->n_routes; i++)
    for (int k = 0; k < DMH_EXTRACT_KINDS; k++) {
      const char *re = r->routes[i]->extract_regexp[k];
      char why[400];
      if (re && dmh_regex_compile_groups(&r->extract[i][k], re, false, why, sizeof why) < 0) {
        dm_error_set(err, DM_ERR_CONFIG_INVALID, why,
                     "routes.%s: bad extract regular expression %s: %s", r->routes[i]->name, re,
                     why);
        return -1;
      }
    }
  return 0;
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
  bool cs = inst->case_sensitive;
  r->case_sensitive = cs;
  r->online = inst->online_ddl;
  if (r->online &&
      (rules_online_compile("shadow-table-rules", inst->shadow_rules, inst->n_shadow_rules,
                            DMH_RULES_SHADOW_DEFAULT, &r->shadow, &r->n_shadow, err) < 0 ||
       rules_online_compile("trash-table-rules", inst->trash_rules, inst->n_trash_rules,
                            DMH_RULES_TRASH_DEFAULT, &r->trash, &r->n_trash, err) < 0)) {
    dmh_rules_free(r);
    return NULL;
  }
  r->routes = inst->routes;
  r->n_routes = inst->n_routes;
  r->source_id = inst->source_id ? inst->source_id : "";
  if (rules_compile_extracts(r, err) < 0) {
    dmh_rules_free(r);
    return NULL;
  }
  if (inst->n_filters > 0 &&
      !(r->filters = dmh_filters_new(inst->filters, inst->n_filters, cs, err))) {
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
  for (int i = 0; i < b->n_do_dbs && rc == 0; i++)
    if ((rc = rules_compile(&r->do_dbs[i], b->do_dbs[i], cs, err)) == 0)
      r->n_do_dbs++;
  for (int i = 0; i < b->n_ignore_dbs && rc == 0; i++)
    if ((rc = rules_compile(&r->ignore_dbs[i], b->ignore_dbs[i], cs, err)) == 0)
      r->n_ignore_dbs++;
  if (rc == 0)
    rc = rules_compile_tables(r->do_tables, &r->n_do_tables, b->do_tables, b->n_do_tables, cs, err);
  if (rc == 0)
    rc = rules_compile_tables(r->ignore_tables, &r->n_ignore_tables, b->ignore_tables,
                              b->n_ignore_tables, cs, err);
  if (rc < 0) {
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
  rules_tables_free(r->do_tables, r->n_do_tables);
  rules_tables_free(r->ignore_tables, r->n_ignore_tables);
  dmh_filters_free(r->filters);
  for (int i = 0; r->extract && i < r->n_routes; i++)
    for (int k = 0; k < DMH_EXTRACT_KINDS; k++)
      dmh_regex_free(&r->extract[i][k]);
  free(r->extract);
  rules_online_free(r->shadow, r->n_shadow);
  rules_online_free(r->trash, r->n_trash);
  free(r);
}

bool dmh_rules_event_ignored(const dmh_rules *r, const char *schema, const char *table,
                             const char *event, const char *sql) {
  return r && dmh_filters_ignored(r->filters, schema, table, event, sql);
}

dmh_filter_verdict dmh_rules_event_judge(const dmh_rules *r, const char *schema, const char *table,
                                         const char *event, const char *sql, const char **rule) {
  if (!r) {
    if (rule)
      *rule = NULL;
    return DMH_VERDICT_APPLY;
  }
  return dmh_filters_judge(r->filters, schema, table, event, sql, rule);
}

static bool rules_any_db(const dmh_match *n, int count, const char *s) {
  for (int i = 0; i < count; i++)
    if (dmh_match_name(&n[i], s))
      return true;
  return false;
}

/* table NULL: any entry for the schema */
static bool rules_any_table(const rules_table *t, int count, const char *db, const char *table) {
  for (int i = 0; i < count; i++)
    if (dmh_match_name(&t[i].db, db) && (!table || dmh_match_name(&t[i].table, table)))
      return true;
  return false;
}

bool dmh_rules_table_allowed(const dmh_rules *r, const char *schema, const char *table) {
  if (dmh_rules_is_system_schema(schema))
    return false;
  if (!r)
    return true;
  /* schema level */
  if (r->n_do_dbs > 0) {
    if (!rules_any_db(r->do_dbs, r->n_do_dbs, schema))
      return false;
  } else if (r->n_ignore_dbs > 0 && rules_any_db(r->ignore_dbs, r->n_ignore_dbs, schema)) {
    return false;
  }
  /* the schema as a whole: can any of its tables pass the table level? */
  if (!table || !table[0])
    return r->n_do_tables == 0 || rules_any_table(r->do_tables, r->n_do_tables, schema, NULL);
  /* table level */
  if (r->n_do_tables > 0 && rules_any_table(r->do_tables, r->n_do_tables, schema, table))
    return true;
  if (r->n_ignore_tables > 0 &&
      rules_any_table(r->ignore_tables, r->n_ignore_tables, schema, table))
    return false;
  return r->n_do_tables == 0;
}

/* The route that sends schema.table (NULL: none): a table rule that matches beats any schema rule;
 * among rules of one kind the first. table NULL or "": only schema rules. */
static int rules_route_of(const dmh_rules *r, const char *schema, const char *table) {
  int schema_rule = -1;
  for (int i = 0; r && i < r->n_routes; i++) {
    const dmh_route_rule *rr = r->routes[i];
    if (!dmh_wildcard_match(rr->schema_pattern, schema, r->case_sensitive))
      continue;
    if (rr->table_pattern && rr->table_pattern[0]) {
      if (table && table[0] && dmh_wildcard_match(rr->table_pattern, table, r->case_sensitive))
        return i;
    } else if (schema_rule < 0) {
      schema_rule = i;
    }
  }
  return schema_rule;
}

void dmh_rules_route(const dmh_rules *r, const char *schema, const char *table, char *out_schema,
                     size_t schema_len, char *out_table, size_t table_len) {
  dm_strlcpy(out_schema, schema, schema_len);
  if (out_table)
    dm_strlcpy(out_table, table ? table : "", table_len);
  int i = rules_route_of(r, schema, table);
  if (i < 0)
    return;
  const dmh_route_rule *rr = r->routes[i];
  dm_strlcpy(out_schema, rr->target_schema, schema_len);
  if (out_table && rr->table_pattern && rr->table_pattern[0] && rr->target_table &&
      rr->target_table[0])
    dm_strlcpy(out_table, rr->target_table, table_len);
}

void dmh_rules_extract(const dmh_rules *r, const char *schema, const char *table,
                       dm_route_extract *out) {
  out->n = 0;
  int i = table && table[0] ? rules_route_of(r, schema, table) : -1;
  if (i < 0)
    return;
  const char *subject[DMH_EXTRACT_KINDS] = {[DMH_EXTRACT_TABLE] = table,
                                            [DMH_EXTRACT_SCHEMA] = schema,
                                            [DMH_EXTRACT_SOURCE] = r->source_id};
  for (int k = 0; k < DMH_EXTRACT_KINDS && out->n < DM_ROUTE_EXTRACT_MAX; k++) {
    const char *col = r->routes[i]->extract_column[k];
    if (!col || !r->extract[i][k].compiled)
      continue;
    dm_strlcpy(out->cols[out->n].column, col, sizeof out->cols[out->n].column);
    dmh_regex_extract(&r->extract[i][k], subject[k], out->cols[out->n].value,
                      sizeof out->cols[out->n].value);
    out->n++;
  }
}

bool dmh_rules_online(const dmh_rules *r) {
  return r && r->online;
}

dm_online_kind dmh_rules_online_kind(const dmh_rules *r, const char *table, char *real,
                                     size_t len) {
  if (len)
    real[0] = '\0';
  if (!r || !r->online || !table)
    return DM_ONLINE_REAL;
  bool ghost = false;
  for (int i = 0; i < r->n_shadow && !ghost; i++)
    ghost = dmh_regex_matches(&r->shadow[i], table);
  if (ghost) {
    /* DM's RealName: group 1 of the first shadow rule with a match and a group */
    for (int i = 0; i < r->n_shadow; i++)
      if (dmh_regex_group(&r->shadow[i], table, 1, real, len) >= 0)
        return DM_ONLINE_GHOST;
    if (len)
      dm_strlcpy(real, table, len);
    return DM_ONLINE_GHOST;
  }
  for (int i = 0; i < r->n_trash; i++)
    if (dmh_regex_matches(&r->trash[i], table))
      return DM_ONLINE_TRASH;
  return DM_ONLINE_REAL;
}
