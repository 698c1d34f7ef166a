/* Binlog event filters with DM's semantics; the rules are spelled out in filters.h. */
#include "filters.h"

#include <regex.h>
#include <stdlib.h>
#include <strings.h>

#include "dmhost/sdk.h"
#include "filter_events.h"
#include "match.h"

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

/* DM's matchEvent: the list is read in order, and the first entry that decides, decides. `ev` is
 * the event's entry (NULL: not an event DM knows), judged by the class of the event DM reports. */
static bool filters_events_match(const dmh_filter_rule *r, const dmh_filter_event *ev) {
  const dmh_filter_event *as = ev->reported_as ? dmh_filter_event_find(ev->reported_as) : ev;
  dmh_event_class cls = as ? as->cls : ev->cls;
  bool ddl = cls == DMH_EVENT_DDL || cls == DMH_EVENT_INCOMPATIBLE_DDL;
  for (int i = 0; i < r->n_events; i++) {
    const char *e = r->events[i];
    if (strcasecmp(e, "all") == 0)
      return true;
    if (strcasecmp(e, "none") == 0)
      return false;
    if (ddl && strcasecmp(e, "all ddl") == 0)
      return true;
    if (ddl && strcasecmp(e, "none ddl") == 0)
      return false;
    if (cls == DMH_EVENT_DML && strcasecmp(e, "all dml") == 0)
      return true;
    if (cls == DMH_EVENT_DML && strcasecmp(e, "none dml") == 0)
      return false;
    if (cls == DMH_EVENT_INCOMPATIBLE_DDL && strcasecmp(e, "incompatible ddl changes") == 0)
      return true;
    if (strcasecmp(e, ev->name) == 0 || (ev->reported_as && strcasecmp(e, ev->reported_as) == 0))
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

/* One rule's verdict on a matched (or unmatched) part: Ignore and Error act on a match, Do on
 * none. */
static dmh_filter_verdict filters_verdict(const dmh_filter_rule *r, bool matched) {
  if (r->action == DMH_FILTER_DO)
    return matched ? DMH_VERDICT_APPLY : DMH_VERDICT_SKIP;
  if (!matched)
    return DMH_VERDICT_APPLY;
  return r->action == DMH_FILTER_IGNORE ? DMH_VERDICT_SKIP : DMH_VERDICT_ERROR;
}

dmh_filter_verdict dmh_filters_judge(const dmh_filters *f, const char *schema, const char *table,
                                     const char *event, const char *sql, const char **rule) {
  if (rule)
    *rule = NULL;
  if (!f || !schema)
    return DMH_VERDICT_APPLY;
  /* A name DM does not know is treated like no name (judged by sql-pattern only): DM would fail
   * the task on it, but a unit's event names come from its code, and skipping (or stopping at) a
   * statement nobody named is the worse error. */
  const dmh_filter_event *ev = dmh_filter_event_find(event);
  if (ev && ev->cls == DMH_EVENT_RULE_WORD)
    ev = NULL;
  dmh_filter_verdict out = DMH_VERDICT_APPLY;
  for (int i = 0; i < f->n_rules; i++) {
    const filters_rule *fr = &f->rules[i];
    const dmh_filter_rule *r = fr->rule;
    if (!filters_rule_applies(f, r, schema, table))
      continue;
    dmh_filter_verdict v = ev ? filters_verdict(r, filters_events_match(r, ev)) : DMH_VERDICT_APPLY;
    if (v == DMH_VERDICT_APPLY && sql && sql[0] && fr->n_sql > 0)
      v = filters_verdict(r, filters_sql_match(fr, sql));
    if (v == DMH_VERDICT_SKIP) {
      if (rule)
        *rule = r->name;
      return v; /* skip wins: nothing is stopped at that is not applied */
    }
    if (v == DMH_VERDICT_ERROR && out == DMH_VERDICT_APPLY) {
      out = v;
      if (rule)
        *rule = r->name;
    }
  }
  return out;
}

bool dmh_filters_ignored(const dmh_filters *f, const char *schema, const char *table,
                         const char *event, const char *sql) {
  return dmh_filters_judge(f, schema, table, event, sql, NULL) == DMH_VERDICT_SKIP;
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
