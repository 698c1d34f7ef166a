/* DM's binlog-filter event names (filter_events.h). */
#include "filter_events.h"

#include <stddef.h>
#include <strings.h>

#define W DMH_EVENT_RULE_WORD
#define M DMH_EVENT_DML
#define D DMH_EVENT_DDL
#define I DMH_EVENT_INCOMPATIBLE_DDL
#define AT "alter table"
#define MC "modify constraint"

/* X(name, alias_of, reported_as, class, tidb_only): DM's EventType constants and ClassifyEvent. */
#define FILTER_EVENTS(X)                                                                           \
  X("all", NULL, NULL, W, false)                                                                   \
  X("all dml", NULL, NULL, W, false)                                                               \
  X("all ddl", NULL, NULL, W, false)                                                               \
  X("none", NULL, NULL, W, false)                                                                  \
  X("none dml", NULL, NULL, W, false)                                                              \
  X("none ddl", NULL, NULL, W, false)                                                              \
  X("incompatible ddl changes", NULL, NULL, W, false)                                              \
  X("insert", NULL, NULL, M, false)                                                                \
  X("update", NULL, NULL, M, false)                                                                \
  X("delete", NULL, NULL, M, false)                                                                \
  X("create database", NULL, NULL, D, false)                                                       \
  X("drop database", NULL, NULL, I, false)                                                         \
  X("alter database", NULL, NULL, D, false)                                                        \
  X("create table", NULL, NULL, D, false)                                                          \
  X("drop table", NULL, NULL, I, false)                                                            \
  X("truncate table", NULL, NULL, I, false)                                                        \
  X("rename table", NULL, NULL, I, false)                                                          \
  X("create index", NULL, NULL, D, false)                                                          \
  X("drop index", NULL, NULL, I, false)                                                            \
  X("create view", NULL, NULL, D, false)                                                           \
  X("drop view", NULL, NULL, D, false)                                                             \
  X("alter table", NULL, NULL, D, false)                                                           \
  X("create schema", "create database", NULL, D, false)                                            \
  X("drop schema", "drop database", NULL, I, false)                                                \
  X("alter schema", "alter database", NULL, D, false)                                              \
  X("add table partition", NULL, AT, D, false)                                                     \
  X("drop table partition", NULL, NULL, I, false)                                                  \
  X("truncate table partition", NULL, NULL, I, false)                                              \
  X("add foreign key", NULL, MC, I, false)                                                         \
  X("drop foreign key", NULL, AT, I, false)                                                        \
  X("value range decrease", NULL, NULL, I, false)                                                  \
  X("precision decrease", NULL, NULL, I, false)                                                    \
  X("modify column", NULL, NULL, I, false)                                                         \
  X("rename column", NULL, NULL, I, false)                                                         \
  X("rename index", NULL, NULL, I, false)                                                          \
  X("drop column", NULL, NULL, I, false)                                                           \
  X("drop primary key", NULL, NULL, I, false)                                                      \
  X("drop unique key", NULL, NULL, I, false)                                                       \
  X("modify default value", NULL, NULL, I, false)                                                  \
  X("modify constraint", NULL, NULL, I, false)                                                     \
  X("modify columns order", NULL, NULL, I, false)                                                  \
  X("modify charset", NULL, NULL, I, false)                                                        \
  X("modify collation", NULL, NULL, I, false)                                                      \
  X("remove auto increment", NULL, NULL, I, false)                                                 \
  X("modify storage engine", NULL, NULL, I, false)                                                 \
  X("reorganize table partition", NULL, NULL, I, false)                                            \
  X("rebuild table partition", NULL, NULL, I, false)                                               \
  X("coalesce table partition", NULL, NULL, I, false)                                              \
  X("split table partition", NULL, NULL, I, true)                                                  \
  X("exchange table partition", NULL, NULL, I, false)                                              \
  X("modify schema charset and collate", NULL, NULL, I, true)                                      \
  X("modify table charset and collate", NULL, NULL, I, true)                                       \
  X("modify table comment", NULL, AT, I, false)                                                    \
  X("recover table", NULL, NULL, I, true)                                                          \
  X("alter table partitioning", NULL, AT, I, false)                                                \
  X("remove table partitioning", NULL, AT, I, false)                                               \
  X("add column", NULL, AT, I, false)                                                              \
  X("set default value", NULL, NULL, I, true)                                                      \
  X("rebase auto id", NULL, NULL, I, true)                                                         \
  X("add primary key", NULL, MC, I, false)                                                         \
  X("alter index visibility", NULL, AT, I, false)                                                  \
  X("alter ttl info", NULL, NULL, I, true)                                                         \
  X("alter ttl remove", NULL, NULL, I, true)                                                       \
  X("multi schema change", NULL, NULL, I, true)

#define FILTER_EVENT_ROW(name, alias, reported, cls, tidb) {name, alias, reported, cls, tidb},
const dmh_filter_event dmh_filter_events[] = {FILTER_EVENTS(FILTER_EVENT_ROW)};
#undef FILTER_EVENT_ROW
const int dmh_filter_events_n = (int)(sizeof dmh_filter_events / sizeof dmh_filter_events[0]);

#define FILTER_EVENT_NAME(name, alias, reported, cls, tidb) name,
const char *const dmh_filter_event_names[] = {FILTER_EVENTS(FILTER_EVENT_NAME) NULL};
#undef FILTER_EVENT_NAME

const dmh_filter_event *dmh_filter_event_find(const char *name) {
  if (!name)
    return NULL;
  for (int i = 0; i < dmh_filter_events_n; i++) {
    if (strcasecmp(name, dmh_filter_events[i].name) != 0)
      continue;
    if (!dmh_filter_events[i].alias_of)
      return &dmh_filter_events[i];
    return dmh_filter_event_find(dmh_filter_events[i].alias_of);
  }
  return NULL;
}
