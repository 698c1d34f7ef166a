/*
 * DM's binlog-filter event names (pkg/binlog-filter/filter.go), the one list: the task file's
 * `filters` are checked against it (config_rules.c) and the filters judge events by it
 * (core/rules/filters.c). Config owns it, below the rules, as check_items.h for the precheck.
 *
 * Each name has DM's class: a row change, a DDL, or one of DM's "incompatible DDL" (which the
 * rule entry "incompatible ddl changes" matches as a group); the rule words ("all", "none", ...)
 * are in the list too, with the class DMH_EVENT_RULE_WORD (a rule may name them, no event has
 * them). An alias ("create schema") stands for the name DM folds it into ("create database").
 *
 * `reported_as`: DM defines some names its syncer never reports for a MariaDB statement: it calls
 * ALTER TABLE ... ADD COLUMN "alter table", ADD PRIMARY KEY / ADD FOREIGN KEY "modify
 * constraint" (dm/syncer/ddl.go AstToDDLEvent). dmhost's sync names such a clause by its own name
 * ("add column") and the list says what DM reports for it: a rule naming either matches, and the
 * class is the reported event's, so a DM rule judges the statement as DM would, and a rule naming
 * the finer event (which never matches in DM) does what it says.
 *
 * `tidb_only`: TiDB statements (RECOVER TABLE, ALTER TABLE ... TTL, AUTO_ID_CACHE rebase, ...);
 * accepted in a rule, never the event of a MariaDB statement.
 */
#ifndef DMH_FILTER_EVENTS_H
#define DMH_FILTER_EVENTS_H

#include <stdbool.h>

typedef enum dmh_event_class {
  DMH_EVENT_RULE_WORD = 0, /* all, all dml, all ddl, none, none dml, none ddl, incompatible ... */
  DMH_EVENT_DML,
  DMH_EVENT_DDL,
  DMH_EVENT_INCOMPATIBLE_DDL,
} dmh_event_class;

typedef struct dmh_filter_event {
  const char *name;        /* DM's spelling, lower case */
  const char *alias_of;    /* NULL, or the name this one stands for */
  const char *reported_as; /* NULL, or the event DM's syncer reports for this clause */
  dmh_event_class cls;
  bool tidb_only;
} dmh_filter_event;

/* The list, in DM's order; `dmh_filter_event_names` the same names, NULL-terminated (for
 * dmh_cfg_closest and messages). */
extern const dmh_filter_event dmh_filter_events[];
extern const int dmh_filter_events_n;
extern const char *const dmh_filter_event_names[];

/* The entry named `name` (case-insensitive; an alias gives the entry it stands for), or NULL. */
const dmh_filter_event *dmh_filter_event_find(const char *name);

#endif /* DMH_FILTER_EVENTS_H */
