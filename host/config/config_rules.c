/* The task file's rule sets, in DM's names: block-allow-list, routes, filters and
 * expression-filter. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config_util.h"
#include "dmhost/db.h"
#include "filter_events.h"
#include "match.h"

#define RULES_PATH_MAX 256

/* A regular expression in DM's (RE2) dialect, as match.h compiles it: refused here, with its
 * line, when it has no POSIX translation or does not compile. */
static int rules_check_regex(dmh_cfg_ctx *c, const config_setting_t *at, const char *re) {
  regex_t rx;
  char why[400], path[RULES_PATH_MAX];
  if (dmh_regex_compile(&rx, re, false, why, sizeof why) == 0) {
    regfree(&rx);
    return 0;
  }
  return dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID, at,
                      "`%s` in the %s: regular expression \"%s\": %s (see docs/config.md, "
                      "\"Matching names\")",
                      dmh_cfg_path_of(at, path, sizeof path), c->what, re, why);
}

/* A name starting with '~' is a regular expression in DM's block-allow-list. */
static int rules_check_name(dmh_cfg_ctx *c, const config_setting_t *at, const char *name) {
  return name[0] == '~' ? rules_check_regex(c, at, name + 1) : 0;
}

static int rules_check_names(dmh_cfg_ctx *c, const config_setting_t *group, const char *key,
                             char **names, int n) {
  const config_setting_t *list = config_setting_get_member(group, key);
  for (int i = 0; i < n; i++)
    if (rules_check_name(c, config_setting_get_elem(list, (unsigned)i), names[i]) < 0)
      return -1;
  return 0;
}

static int rules_parse_tables(dmh_cfg_ctx *c, const config_setting_t *rule, const char *key,
                              dmh_table_ref **out, int *n_out) {
  const config_setting_t *list = config_setting_get_member(rule, key);
  if (!list)
    return 0;
  char path[RULES_PATH_MAX];
  bool empty_array = config_setting_type(list) == CONFIG_TYPE_ARRAY && !config_setting_length(list);
  if (config_setting_type(list) != CONFIG_TYPE_LIST && !empty_array)
    return dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID, list,
                        "`%s` in the %s must be a list of tables, like ( { db-name = \"db1\"; "
                        "tbl-name = \"t1\"; } ); not %s",
                        dmh_cfg_path_of(list, path, sizeof path), c->what,
                        dmh_cfg_type_name(config_setting_type(list)));
  int n = config_setting_length(list);
  if (n == 0)
    return 0;
  dmh_table_ref *refs = calloc((size_t)n, sizeof *refs);
  if (!refs)
    return dmh_cfg_no_memory(c);
  *out = refs;
  *n_out = n;
  for (int i = 0; i < n; i++) {
    const config_setting_t *e = config_setting_get_elem(list, (unsigned)i);
    if (config_setting_type(e) != CONFIG_TYPE_GROUP)
      return dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID, e,
                          "`%s` in the %s must be a group { db-name = \"...\"; tbl-name = "
                          "\"...\"; }, not %s",
                          dmh_cfg_path_of(e, path, sizeof path), c->what,
                          dmh_cfg_type_name(config_setting_type(e)));
    if (dmh_cfg_check_scope(c, e, DMH_SCOPE_TABLE, NULL, NULL) < 0 ||
        dmh_cfg_get_string(c, e, "db-name", DMH_CFG_REQUIRED | DMH_CFG_NONEMPTY, &refs[i].db) < 0 ||
        dmh_cfg_get_string(c, e, "tbl-name", DMH_CFG_REQUIRED | DMH_CFG_NONEMPTY, &refs[i].table) <
            0 ||
        rules_check_name(c, config_setting_get_member(e, "db-name"), refs[i].db) < 0 ||
        rules_check_name(c, config_setting_get_member(e, "tbl-name"), refs[i].table) < 0)
      return -1;
  }
  return 0;
}

static int rules_parse_bal(dmh_cfg_ctx *c, const config_setting_t *g, dmh_bal_rule *r) {
  if (dmh_cfg_check_scope(c, g, DMH_SCOPE_BAL, NULL, NULL) < 0)
    return -1;
  if (dmh_cfg_get_string_list(c, g, "do-dbs", &r->do_dbs, &r->n_do_dbs) < 0 ||
      rules_check_names(c, g, "do-dbs", r->do_dbs, r->n_do_dbs) < 0 ||
      dmh_cfg_get_string_list(c, g, "ignore-dbs", &r->ignore_dbs, &r->n_ignore_dbs) < 0 ||
      rules_check_names(c, g, "ignore-dbs", r->ignore_dbs, r->n_ignore_dbs) < 0 ||
      rules_parse_tables(c, g, "do-tables", &r->do_tables, &r->n_do_tables) < 0 ||
      rules_parse_tables(c, g, "ignore-tables", &r->ignore_tables, &r->n_ignore_tables) < 0)
    return -1;
  return 0;
}

/* A route's extract groups (extract-table, -schema, -source), by dmh_extract_kind: the group, its
 * scope and its regexp's key. */
static const struct {
  const char *group, *regexp;
  dmh_cfg_scope scope;
} rules_extracts[DMH_EXTRACT_KINDS] = {
    [DMH_EXTRACT_TABLE] = {"extract-table", "table-regexp", DMH_SCOPE_EXTRACT_TABLE},
    [DMH_EXTRACT_SCHEMA] = {"extract-schema", "schema-regexp", DMH_SCOPE_EXTRACT_SCHEMA},
    [DMH_EXTRACT_SOURCE] = {"extract-source", "source-regexp", DMH_SCOPE_EXTRACT_SOURCE},
};

/* One extract group of a route: both keys required, the regexp compiled as the extraction will
 * (its groups kept), two groups may not fill one column. */
static int rules_parse_extract(dmh_cfg_ctx *c, const config_setting_t *g, dmh_route_rule *r,
                               int k) {
  config_setting_t *e = NULL;
  char ex[160], path[RULES_PATH_MAX];
  snprintf(ex, sizeof ex, "`%s = { %s = \"t_(.*)\"; target-column = \"c_%s\"; };`",
           rules_extracts[k].group, rules_extracts[k].regexp, rules_extracts[k].group + 8);
  int rc = dmh_cfg_get_group(c, g, rules_extracts[k].group, 0, ex, &e);
  if (rc <= 0)
    return rc;
  if (dmh_cfg_check_scope(c, e, rules_extracts[k].scope, NULL, NULL) < 0 ||
      dmh_cfg_get_string(c, e, rules_extracts[k].regexp, DMH_CFG_REQUIRED | DMH_CFG_NONEMPTY,
                         &r->extract_regexp[k]) < 0 ||
      dmh_cfg_get_string(c, e, "target-column", DMH_CFG_REQUIRED | DMH_CFG_NONEMPTY,
                         &r->extract_column[k]) < 0)
    return -1;
  const config_setting_t *at = config_setting_get_member(e, rules_extracts[k].regexp);
  dmh_regex rx;
  char why[400];
  if (dmh_regex_compile_groups(&rx, r->extract_regexp[k], false, why, sizeof why) < 0)
    return dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID, at,
                        "`%s` in the %s: regular expression \"%s\": %s (see docs/config.md, "
                        "\"Matching names\")",
                        dmh_cfg_path_of(at, path, sizeof path), c->what, r->extract_regexp[k], why);
  dmh_regex_free(&rx);
  for (int j = 0; j < k; j++)
    if (r->extract_column[j] && strcasecmp(r->extract_column[j], r->extract_column[k]) == 0) {
      at = config_setting_get_member(e, "target-column");
      return dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID, at,
                          "`%s` in the %s: column `%s` is already filled by `%s`; each extract "
                          "group needs its own column",
                          dmh_cfg_path_of(at, path, sizeof path), c->what, r->extract_column[k],
                          rules_extracts[j].group);
    }
  return 0;
}

static int rules_parse_route(dmh_cfg_ctx *c, const config_setting_t *g, dmh_route_rule *r) {
  if (dmh_cfg_check_scope(c, g, DMH_SCOPE_ROUTE, NULL, NULL) < 0 ||
      dmh_cfg_get_string(c, g, "schema-pattern", DMH_CFG_REQUIRED | DMH_CFG_NONEMPTY,
                         &r->schema_pattern) < 0 ||
      dmh_cfg_get_string(c, g, "table-pattern", DMH_CFG_NONEMPTY, &r->table_pattern) < 0 ||
      dmh_cfg_get_string(c, g, "target-schema", DMH_CFG_REQUIRED | DMH_CFG_NONEMPTY,
                         &r->target_schema) < 0 ||
      dmh_cfg_get_string(c, g, "target-table", DMH_CFG_NONEMPTY, &r->target_table) < 0)
    return -1;
  for (int k = 0; k < DMH_EXTRACT_KINDS; k++)
    if (rules_parse_extract(c, g, r, k) < 0)
      return -1;
  return 0;
}

static int rules_parse_filter(dmh_cfg_ctx *c, const config_setting_t *g, dmh_filter_rule *r) {
  char path[RULES_PATH_MAX];
  if (dmh_cfg_check_scope(c, g, DMH_SCOPE_FILTER, NULL, NULL) < 0 ||
      dmh_cfg_get_string(c, g, "schema-pattern", DMH_CFG_REQUIRED | DMH_CFG_NONEMPTY,
                         &r->schema_pattern) < 0 ||
      dmh_cfg_get_string(c, g, "table-pattern", DMH_CFG_NONEMPTY, &r->table_pattern) < 0 ||
      dmh_cfg_get_string_list(c, g, "events", &r->events, &r->n_events) < 0 ||
      dmh_cfg_get_string_list(c, g, "sql-pattern", &r->sql_patterns, &r->n_sql_patterns) < 0)
    return -1;
  const config_setting_t *events = config_setting_get_member(g, "events");
  for (int i = 0; i < r->n_events; i++) {
    const dmh_filter_event *ev = dmh_filter_event_find(r->events[i]);
    const config_setting_t *e = config_setting_get_elem(events, (unsigned)i);
    if (!ev) {
      const char *near = dmh_cfg_closest(r->events[i], dmh_filter_event_names, -1);
      return dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID, e,
                          "`%s` in the %s: unknown event \"%s\"%s%s%s (docs/config.md, "
                          "\"filters\", lists DM's events)",
                          dmh_cfg_path_of(e, path, sizeof path), c->what, r->events[i],
                          near ? "; did you mean \"" : "", near ? near : "", near ? "\"?" : "");
    }
    /* Stored in DM's spelling (an alias as the name it stands for, as DM's toEventType does) so
     * the filters compare with strcmp. */
    char *dm = strdup(ev->name);
    if (!dm)
      return dmh_cfg_no_memory(c);
    free(r->events[i]);
    r->events[i] = dm;
  }
  const config_setting_t *sql = config_setting_get_member(g, "sql-pattern");
  for (int i = 0; i < r->n_sql_patterns; i++)
    if (rules_check_regex(c, config_setting_get_elem(sql, (unsigned)i), r->sql_patterns[i]) < 0)
      return -1;
  char *action = NULL;
  if (dmh_cfg_get_string(c, g, "action", DMH_CFG_REQUIRED, &action) < 0)
    return -1;
  /* DM compares the action as written (Valid: b.Action != Do && ...); dmhost forgives the case */
  bool ok = true;
  if (strcasecmp(action, "Ignore") == 0)
    r->action = DMH_FILTER_IGNORE;
  else if (strcasecmp(action, "Error") == 0)
    r->action = DMH_FILTER_ERROR;
  else if (strcasecmp(action, "Do") == 0)
    r->action = DMH_FILTER_DO;
  else
    ok = false;
  free(action);
  if (!ok) {
    const config_setting_t *a = config_setting_get_member(g, "action");
    return dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID, a,
                        "`%s` in the %s must be \"Ignore\", \"Do\" or \"Error\", not \"%s\"",
                        dmh_cfg_path_of(a, path, sizeof path), c->what,
                        config_setting_get_string(a));
  }
  return 0;
}

/* DM's expression-filter rule: exactly one kind of expression (DM's ErrConfigExprFilterManyExpr),
 * each a condition on a row (dm_db_condition_check: the sync puts it into a SELECT of its own on
 * the target). */
static int rules_parse_expr(dmh_cfg_ctx *c, const config_setting_t *g, dmh_expr_rule *r) {
  char path[RULES_PATH_MAX];
  static const char *const keys[4] = {"insert-value-expr", "update-old-value-expr",
                                      "update-new-value-expr", "delete-value-expr"};
  char **slots[4] = {&r->insert_expr, &r->update_old_expr, &r->update_new_expr, &r->delete_expr};
  if (dmh_cfg_check_scope(c, g, DMH_SCOPE_EXPR, NULL, NULL) < 0 ||
      dmh_cfg_get_string(c, g, "schema", DMH_CFG_REQUIRED | DMH_CFG_NONEMPTY, &r->schema) < 0 ||
      dmh_cfg_get_string(c, g, "table", DMH_CFG_REQUIRED | DMH_CFG_NONEMPTY, &r->table) < 0)
    return -1;
  for (int k = 0; k < 4; k++) {
    if (dmh_cfg_get_string(c, g, keys[k], 0, slots[k]) < 0)
      return -1;
    if (*slots[k] && !**slots[k]) { /* DM: "" is no expression */
      free(*slots[k]);
      *slots[k] = NULL;
    }
    char why[160];
    if (*slots[k] && dm_db_condition_check(*slots[k], why, sizeof why) < 0) {
      const config_setting_t *e = config_setting_get_member(g, keys[k]);
      return dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID, e,
                          "`%s` in the %s is not an expression on the row's columns: %s",
                          dmh_cfg_path_of(e, path, sizeof path), c->what, why);
    }
  }
  int kinds = (r->insert_expr != NULL) + (r->update_old_expr || r->update_new_expr) +
              (r->delete_expr != NULL);
  if (kinds != 1)
    return dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID, g,
                        "`%s` in the %s must have one kind of expression: insert-value-expr, "
                        "update-old-value-expr and/or update-new-value-expr, or delete-value-expr "
                        "(it has %s; as DM, give each kind its own rule)",
                        dmh_cfg_path_of(g, path, sizeof path), c->what, kinds ? "several" : "none");
  return 0;
}

/* Each rule set is a group of named groups; `rule_size` and `name_of` let one loop fill the three
 * arrays. */
typedef int (*rules_parse_fn)(dmh_cfg_ctx *c, const config_setting_t *g, void *rule);

static int rules_parse_set(dmh_cfg_ctx *c, const config_setting_t *root, const char *key,
                           const char *example, size_t rule_size, size_t name_offset,
                           rules_parse_fn parse, void **out, int *n_out) {
  config_setting_t *set = NULL;
  int rc = dmh_cfg_get_group(c, root, key, 0, example, &set);
  if (rc <= 0)
    return rc;
  int n = config_setting_length(set);
  if (n == 0)
    return 0;
  char *rules = calloc((size_t)n, rule_size);
  if (!rules)
    return dmh_cfg_no_memory(c);
  *out = rules;
  *n_out = n;
  for (int i = 0; i < n; i++) {
    const config_setting_t *g = config_setting_get_elem(set, (unsigned)i);
    void *rule = rules + (size_t)i * rule_size;
    char path[RULES_PATH_MAX];
    if (config_setting_type(g) != CONFIG_TYPE_GROUP)
      return dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID, g,
                          "`%s` in the %s must be a group (a named rule), like %s; not %s",
                          dmh_cfg_path_of(g, path, sizeof path), c->what, example,
                          dmh_cfg_type_name(config_setting_type(g)));
    char *name = strdup(config_setting_name(g));
    if (!name)
      return dmh_cfg_no_memory(c);
    memcpy((char *)rule + name_offset, &name, sizeof name);
    if (parse(c, g, rule) < 0)
      return -1;
  }
  return 0;
}

static int rules_parse_bal_any(dmh_cfg_ctx *c, const config_setting_t *g, void *rule) {
  return rules_parse_bal(c, g, rule);
}

static int rules_parse_route_any(dmh_cfg_ctx *c, const config_setting_t *g, void *rule) {
  return rules_parse_route(c, g, rule);
}

static int rules_parse_filter_any(dmh_cfg_ctx *c, const config_setting_t *g, void *rule) {
  return rules_parse_filter(c, g, rule);
}

static int rules_parse_expr_any(dmh_cfg_ctx *c, const config_setting_t *g, void *rule) {
  return rules_parse_expr(c, g, rule);
}

int dmh_cfg_parse_rules(dmh_cfg_ctx *c, const config_setting_t *root, dmh_task_config *t) {
  void *bal = NULL, *routes = NULL, *filters = NULL, *exprs = NULL;
  int rc = rules_parse_set(c, root, "block-allow-list",
                           "`block-allow-list = { bal1 = { do-dbs = [\"db1\"]; }; };`",
                           sizeof(dmh_bal_rule), offsetof(dmh_bal_rule, name), rules_parse_bal_any,
                           &bal, &t->n_bal_rules);
  t->bal_rules = bal;
  if (rc < 0)
    return -1;
  rc = rules_parse_set(c, root, "routes",
                       "`routes = { r1 = { schema-pattern = \"shop_*\"; target-schema = "
                       "\"shop\"; }; };`",
                       sizeof(dmh_route_rule), offsetof(dmh_route_rule, name),
                       rules_parse_route_any, &routes, &t->n_routes);
  t->routes = routes;
  if (rc < 0)
    return -1;
  rc = rules_parse_set(c, root, "filters",
                       "`filters = { f1 = { schema-pattern = \"db1\"; events = [\"drop table\"]; "
                       "action = \"Ignore\"; }; };`",
                       sizeof(dmh_filter_rule), offsetof(dmh_filter_rule, name),
                       rules_parse_filter_any, &filters, &t->n_filters);
  t->filters = filters;
  if (rc < 0)
    return -1;
  rc = rules_parse_set(c, root, "expression-filter",
                       "`expression-filter = { e1 = { schema = \"db1\"; table = \"t1\"; "
                       "insert-value-expr = \"c % 2 = 0\"; }; };`",
                       sizeof(dmh_expr_rule), offsetof(dmh_expr_rule, name), rules_parse_expr_any,
                       &exprs, &t->n_exprs);
  t->exprs = exprs;
  return rc < 0 ? -1 : 0;
}

static void rules_tables_free(dmh_table_ref *refs, int n) {
  for (int i = 0; refs && i < n; i++) {
    free(refs[i].db);
    free(refs[i].table);
  }
  free(refs);
}

void dmh_cfg_rules_free(dmh_task_config *t) {
  for (int i = 0; t->bal_rules && i < t->n_bal_rules; i++) {
    dmh_bal_rule *r = &t->bal_rules[i];
    free(r->name);
    dmh_cfg_strv_free(r->do_dbs, r->n_do_dbs);
    dmh_cfg_strv_free(r->ignore_dbs, r->n_ignore_dbs);
    rules_tables_free(r->do_tables, r->n_do_tables);
    rules_tables_free(r->ignore_tables, r->n_ignore_tables);
  }
  free(t->bal_rules);
  for (int i = 0; t->routes && i < t->n_routes; i++) {
    dmh_route_rule *r = &t->routes[i];
    free(r->name);
    free(r->schema_pattern);
    free(r->table_pattern);
    free(r->target_schema);
    free(r->target_table);
    for (int k = 0; k < DMH_EXTRACT_KINDS; k++) {
      free(r->extract_regexp[k]);
      free(r->extract_column[k]);
    }
  }
  free(t->routes);
  for (int i = 0; t->filters && i < t->n_filters; i++) {
    dmh_filter_rule *r = &t->filters[i];
    free(r->name);
    free(r->schema_pattern);
    free(r->table_pattern);
    dmh_cfg_strv_free(r->events, r->n_events);
    dmh_cfg_strv_free(r->sql_patterns, r->n_sql_patterns);
  }
  free(t->filters);
  for (int i = 0; t->exprs && i < t->n_exprs; i++) {
    dmh_expr_rule *r = &t->exprs[i];
    free(r->name);
    free(r->schema);
    free(r->table);
    free(r->insert_expr);
    free(r->update_old_expr);
    free(r->update_new_expr);
    free(r->delete_expr);
  }
  free(t->exprs);
  t->bal_rules = NULL;
  t->routes = NULL;
  t->filters = NULL;
  t->exprs = NULL;
  t->n_bal_rules = t->n_routes = t->n_filters = t->n_exprs = 0;
}
