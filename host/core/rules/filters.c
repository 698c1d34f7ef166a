/* Binlog event filters with DM's semantics; the rules are spelled out in filters.h. */
#include "filters.h"

#include <regex.h>
#include <stdlib.h>
#include <strings.h>

#include "dmhost/sdk.h"
#include "match.h"

typedef enum filters_class {
  FILTERS_NONE = 0, /* no event name: only sql-pattern can judge it */
  FILTERS_DML = 1,
  FILTERS_DDL = 2,
} filters_class;

typedef struct filters_rule {
  const dmh_filter_rule *rule;
  regex_t *sql; /* compiled sql-patterns */
  int n_sql;
} filters_rule;

struct dmh_filters {
  filters_rule *rules;
  int n_rules;
  bool case_sensitive;
};

/* DM's events and their class; an alias names the event DM folds it into. */
static const struct {
  const char *name;
  const char *canonical; /* NULL: the name itself */
  filters_class cls;
} filters_events[] = {
    {"insert", NULL, FILTERS_DML},
    {"update", NULL, FILTERS_DML},
    {"delete", NULL, FILTERS_DML},
    {"create database", NULL, FILTERS_DDL},
    {"drop database", NULL, FILTERS_DDL},
    {"create table", NULL, FILTERS_DDL},
    {"drop table", NULL, FILTERS_DDL},
    {"truncate table", NULL, FILTERS_DDL},
    {"rename table", NULL, FILTERS_DDL},
    {"create index", NULL, FILTERS_DDL},
    {"drop index", NULL, FILTERS_DDL},
    {"create view", NULL, FILTERS_DDL},
    {"drop view", NULL, FILTERS_DDL},
    {"alter table", NULL, FILTERS_DDL},
    {"create schema", "create database", FILTERS_DDL},
    {"drop schema", "drop database", FILTERS_DDL},
    {"add index", "create index", FILTERS_DDL},
};

/* The class of the event a unit names, and its canonical name. A name DM does not know is treated
 * like no name (judged by sql-pattern only): DM would fail the task on it, but a unit's event
 * names come from its code, and skipping a statement nobody asked to skip is the worse error. */
static filters_class filters_classify(const char *event, const char **canonical) {
  *canonical = NULL;
  if (!event)
    return FILTERS_NONE;
  for (size_t i = 0; i < sizeof filters_events / sizeof filters_events[0]; i++)
    if (strcasecmp(event, filters_events[i].name) == 0) {
      *canonical =
          filters_events[i].canonical ? filters_events[i].canonical : filters_events[i].name;
      return filters_events[i].cls;
    }
  return FILTERS_NONE;
}

/* DM's matchEvent: the list is read in order, and the first entry that decides, decides. */
static bool filters_events_match(const dmh_filter_rule *r, filters_class cls, const char *event) {
  for (int i = 0; i < r->n_events; i++) {
    const char *e = r->events[i];
    if (strcasecmp(e, "all") == 0)
      return true;
    if (strcasecmp(e, "none") == 0)
      return false;
    if (cls == FILTERS_DDL && strcasecmp(e, "all ddl") == 0)
      return true;
    if (cls == FILTERS_DDL && strcasecmp(e, "none ddl") == 0)
      return false;
    if (cls == FILTERS_DML && strcasecmp(e, "all dml") == 0)
      return true;
    if (cls == FILTERS_DML && strcasecmp(e, "none dml") == 0)
      return false;
    if (strcasecmp(e, event) == 0)
      return true;
  }
  return false;
}

static bool filters_sql_match(const filters_rule *fr, const char *sql) {
  for (int i = 0; i < fr->n_sql; i++)
    if (regexec(&fr->sql[i], sql, 0, NULL, 0) == 0)
      return true;
  return false;
}

static bool filters_rule_applies(const dmh_filters *f, const dmh_filter_rule *r, const char *schema,
                                 const char *table) {
  if (!dmh_wildcard_match(r->schema_pattern, schema, f->case_sensitive))
    return false;
  if (!r->table_pattern || !r->table_pattern[0])
    return true; /* schema-level rule */
  return dmh_wildcard_match(r->table_pattern, table ? table : "", f->case_sensitive);
}

bool dmh_filters_ignored(const dmh_filters *f, const char *schema, const char *table,
                         const char *event, const char *sql) {
  if (!f || !schema)
    return false;
  const char *canonical;
  filters_class cls = filters_classify(event, &canonical);
  for (int i = 0; i < f->n_rules; i++) {
    const filters_rule *fr = &f->rules[i];
    const dmh_filter_rule *r = fr->rule;
    if (!filters_rule_applies(f, r, schema, table))
      continue;
    if (cls != FILTERS_NONE && filters_events_match(r, cls, canonical) == r->action_ignore)
      return true; /* Ignore and matched, or Do and not matched */
    if (sql && sql[0] && fr->n_sql > 0 && filters_sql_match(fr, sql) == r->action_ignore)
      return true;
  }
  return false;
}

void dmh_filters_free(dmh_filters *f) {
  if (!f)
    return;
  for (int i = 0; i < f->n_rules; i++) {
    for (int k = 0; k < f->rules[i].n_sql; k++)
      regfree(&f->rules[i].sql[k]);
    free(f->rules[i].sql);
  }
  free(f->rules);
  free(f);
}

dmh_filters *dmh_filters_new(const dmh_filter_rule *const *rules, int n, bool case_sensitive,
                             dm_error *err) {
  dmh_filters *f = calloc(1, sizeof *f);
  if (!f || (n > 0 && !(f->rules = calloc((size_t)n, sizeof *f->rules)))) {
    free(f);
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory compiling the task's filters");
    return NULL;
  }
  f->case_sensitive = case_sensitive;
  for (int i = 0; i < n; i++, f->n_rules++) {
    filters_rule *fr = &f->rules[i];
    fr->rule = rules[i];
    if (rules[i]->n_sql_patterns == 0)
      continue;
    fr->sql = calloc((size_t)rules[i]->n_sql_patterns, sizeof *fr->sql);
    if (!fr->sql) {
      f->n_rules++;
      dmh_filters_free(f);
      dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory compiling the task's filters");
      return NULL;
    }
    for (int k = 0; k < rules[i]->n_sql_patterns; k++, fr->n_sql++) {
      /* DM compiles "(?i)" + the patterns: case-insensitive, searched anywhere in the statement */
      char why[400];
      if (dmh_regex_compile(&fr->sql[k], rules[i]->sql_patterns[k], true, why, sizeof why) < 0) {
        dm_error_set(err, DM_ERR_CONFIG_INVALID, why,
                     "filter rule \"%s\": sql-pattern \"%s\": %s; fix it in the task file's "
                     "`filters`",
                     rules[i]->name ? rules[i]->name : "?", rules[i]->sql_patterns[k], why);
        f->n_rules++; /* this rule's compiled patterns (n_sql of them) are freed too */
        dmh_filters_free(f);
        return NULL;
      }
    }
  }
  return f;
}
