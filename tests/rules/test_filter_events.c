/*
 * DM's event list (config/filter_events.h) and the filters' three verdicts (issue 23). Before:
 * two lists of event names, the config's without DM's finer DDL events, aliases or "none ddl",
 * and no Error action: a rule `action: Error` or `events: ["drop column"]` was refused at load.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

#include "cunit_run.h"
#include "filter_events.h"
#include "filters.h"

/* Every name DM's pkg/binlog-filter accepts (toEventType), the rule words and aliases included. */
static const char *const dm_names[] = {"all",
                                       "all dml",
                                       "all ddl",
                                       "none",
                                       "none dml",
                                       "none ddl",
                                       "incompatible ddl changes",
                                       "insert",
                                       "update",
                                       "delete",
                                       "create database",
                                       "drop database",
                                       "alter database",
                                       "create table",
                                       "drop table",
                                       "truncate table",
                                       "rename table",
                                       "create index",
                                       "drop index",
                                       "create view",
                                       "drop view",
                                       "alter table",
                                       "create schema",
                                       "drop schema",
                                       "alter schema",
                                       "add table partition",
                                       "drop table partition",
                                       "truncate table partition",
                                       "add foreign key",
                                       "drop foreign key",
                                       "value range decrease",
                                       "precision decrease",
                                       "modify column",
                                       "rename column",
                                       "rename index",
                                       "drop column",
                                       "drop primary key",
                                       "drop unique key",
                                       "modify default value",
                                       "modify constraint",
                                       "modify columns order",
                                       "modify charset",
                                       "modify collation",
                                       "remove auto increment",
                                       "modify storage engine",
                                       "reorganize table partition",
                                       "rebuild table partition",
                                       "coalesce table partition",
                                       "split table partition",
                                       "exchange table partition",
                                       "modify schema charset and collate",
                                       "modify table charset and collate",
                                       "modify table comment",
                                       "recover table",
                                       "alter table partitioning",
                                       "remove table partitioning",
                                       "add column",
                                       "set default value",
                                       "rebase auto id",
                                       "add primary key",
                                       "alter index visibility",
                                       "alter ttl info",
                                       "alter ttl remove",
                                       "multi schema change"};

static void test_list(void) {
  size_t n = sizeof dm_names / sizeof dm_names[0];
  CU_ASSERT_EQUAL(dmh_filter_events_n, (int)n);
  for (size_t i = 0; i < n; i++) {
    const dmh_filter_event *e = dmh_filter_event_find(dm_names[i]);
    if (!e)
      fprintf(stderr, "\n  \"%s\" is not in the list\n", dm_names[i]);
    CU_ASSERT_PTR_NOT_NULL(e);
  }
  CU_ASSERT_STRING_EQUAL(dmh_filter_event_find("CREATE Schema")->name, "create database");
  CU_ASSERT_STRING_EQUAL(dmh_filter_event_find("drop schema")->name, "drop database");
  CU_ASSERT_STRING_EQUAL(dmh_filter_event_find("alter schema")->name, "alter database");
  CU_ASSERT_PTR_NULL(dmh_filter_event_find("drop tables"));
  CU_ASSERT_PTR_NULL(dmh_filter_event_find("add index")); /* not DM's: ALTER ... ADD INDEX is
                                                             "modify constraint" */
  /* every reported_as names an entry of the list, every name is lower case */
  for (int i = 0; i < dmh_filter_events_n; i++) {
    const dmh_filter_event *e = &dmh_filter_events[i];
    if (e->reported_as) {
      CU_ASSERT_PTR_NOT_NULL(dmh_filter_event_find(e->reported_as));
    }
    for (const char *c = e->name; *c; c++)
      CU_ASSERT(!(*c >= 'A' && *c <= 'Z'));
    CU_ASSERT_STRING_EQUAL(dmh_filter_event_names[i], e->name);
  }
  CU_ASSERT_PTR_NULL(dmh_filter_event_names[dmh_filter_events_n]);
}

typedef struct verdict_case {
  const char *what, *schema, *table, *event, *sql;
  dmh_filter_verdict want;
  const char *rule; /* the deciding rule, NULL for apply */
} verdict_case;

static void test_verdicts(void) {
  char *ev_drop_col[] = {"drop column"};
  char *ev_alter[] = {"alter table"};
  char *ev_incompat[] = {"incompatible ddl changes"};
  char *ev_trunc[] = {"truncate table"};
  char *ev_delete[] = {"delete"};
  char *sql_drop[] = {"drop\\s+table"};
  dmh_filter_rule stop_drop_col = {.name = "stop-drop-col",
                                   .schema_pattern = "s1",
                                   .events = ev_drop_col,
                                   .n_events = 1,
                                   .action = DMH_FILTER_ERROR};
  dmh_filter_rule skip_alter = {.name = "skip-alter",
                                .schema_pattern = "s2",
                                .events = ev_alter,
                                .n_events = 1,
                                .action = DMH_FILTER_IGNORE};
  dmh_filter_rule stop_incompat = {.name = "stop-incompat",
                                   .schema_pattern = "s3",
                                   .events = ev_incompat,
                                   .n_events = 1,
                                   .action = DMH_FILTER_ERROR};
  dmh_filter_rule stop_trunc = {.name = "stop-trunc",
                                .schema_pattern = "s4",
                                .table_pattern = "*",
                                .events = ev_trunc,
                                .n_events = 1,
                                .action = DMH_FILTER_ERROR};
  dmh_filter_rule skip_trunc_t = {.name = "skip-trunc-t",
                                  .schema_pattern = "s4",
                                  .table_pattern = "t",
                                  .events = ev_trunc,
                                  .n_events = 1,
                                  .action = DMH_FILTER_IGNORE};
  dmh_filter_rule stop_delete = {.name = "stop-delete",
                                 .schema_pattern = "s5",
                                 .events = ev_delete,
                                 .n_events = 1,
                                 .action = DMH_FILTER_ERROR};
  dmh_filter_rule stop_sql = {.name = "stop-sql",
                              .schema_pattern = "s6",
                              .sql_patterns = sql_drop,
                              .n_sql_patterns = 1,
                              .action = DMH_FILTER_ERROR};
  const dmh_filter_rule *rules[] = {&stop_drop_col, &skip_alter,  &stop_incompat, &stop_trunc,
                                    &skip_trunc_t,  &stop_delete, &stop_sql};
  dm_error err;
  dmh_filters *f = dmh_filters_new(rules, 7, false, &err);
  CU_ASSERT_FATAL(f != NULL);
  static const verdict_case cases[] = {
      {"Error on drop column", "s1", "t", "drop column", "ALTER TABLE t DROP c", DMH_VERDICT_ERROR,
       "stop-drop-col"},
      {"not on add column", "s1", "t", "add column", "ALTER TABLE t ADD c INT", DMH_VERDICT_APPLY,
       NULL},
      {"not on a row", "s1", "t", "insert", NULL, DMH_VERDICT_APPLY, NULL},
      /* "alter table" matches what DM reports as alter table, not DM's finer events */
      {"alter table: add column (DM reports alter table)", "s2", "t", "add column", "ALTER",
       DMH_VERDICT_SKIP, "skip-alter"},
      {"alter table: table comment", "s2", "t", "modify table comment", "ALTER", DMH_VERDICT_SKIP,
       "skip-alter"},
      {"alter table: not drop column (DM's own event)", "s2", "t", "drop column", "ALTER",
       DMH_VERDICT_APPLY, NULL},
      {"alter table: not add primary key (DM: modify constraint)", "s2", "t", "add primary key",
       "ALTER", DMH_VERDICT_APPLY, NULL},
      /* "incompatible ddl changes": DM's incompatible class, judged as DM reports the clause */
      {"incompatible: drop column", "s3", "t", "drop column", "ALTER", DMH_VERDICT_ERROR,
       "stop-incompat"},
      {"incompatible: truncate table", "s3", "t", "truncate table", "TRUNCATE t", DMH_VERDICT_ERROR,
       "stop-incompat"},
      {"incompatible: drop database", "s3", NULL, "drop database", "DROP DATABASE s3",
       DMH_VERDICT_ERROR, "stop-incompat"},
      {"incompatible: not add column (DM: alter table)", "s3", "t", "add column", "ALTER",
       DMH_VERDICT_APPLY, NULL},
      {"incompatible: not create table", "s3", "t", "create table", "CREATE", DMH_VERDICT_APPLY,
       NULL},
      {"incompatible: not a row", "s3", "t", "delete", NULL, DMH_VERDICT_APPLY, NULL},
      /* Ignore and Error both match: skip wins, whatever the order */
      {"skip wins over error", "s4", "t", "truncate table", "TRUNCATE t", DMH_VERDICT_SKIP,
       "skip-trunc-t"},
      {"error on another table", "s4", "u", "truncate table", "TRUNCATE u", DMH_VERDICT_ERROR,
       "stop-trunc"},
      {"Error on a row change", "s5", "t", "delete", NULL, DMH_VERDICT_ERROR, "stop-delete"},
      {"not on another", "s5", "t", "update", NULL, DMH_VERDICT_APPLY, NULL},
      {"Error by sql-pattern", "s6", "t", "drop table", "DROP  TABLE t", DMH_VERDICT_ERROR,
       "stop-sql"},
      {"sql-pattern misses", "s6", "t", "create table", "CREATE TABLE t (a INT)", DMH_VERDICT_APPLY,
       NULL},
      {"no rule", "other", "t", "drop column", "ALTER", DMH_VERDICT_APPLY, NULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const verdict_case *c = &cases[i];
    const char *rule = "unset";
    dmh_filter_verdict v = dmh_filters_judge(f, c->schema, c->table, c->event, c->sql, &rule);
    if (v != c->want)
      fprintf(stderr, "\n  case \"%s\": expected %d, got %d\n", c->what, (int)c->want, (int)v);
    CU_ASSERT_EQUAL(v, c->want);
    if (c->rule) {
      CU_ASSERT(rule && strcmp(rule, c->rule) == 0);
    } else {
      CU_ASSERT_PTR_NULL(rule);
    }
    CU_ASSERT_EQUAL(dmh_filters_ignored(f, c->schema, c->table, c->event, c->sql),
                    c->want == DMH_VERDICT_SKIP);
  }
  dmh_filters_free(f);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"DM's event names, one list", test_list},
      {"filters: Error, finer events, incompatible ddl changes", test_verdicts},
  };
  return dmh_cunit_run("filter_events", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
