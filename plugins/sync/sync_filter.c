/*
 * The task's binlog event filters as the sync applies them (sync.h, "filters"): the host's
 * verdict (event_verdict, DM's Do/Ignore/Error) for a row change and for a DDL statement, an
 * ALTER TABLE judged clause by clause (sync_ddl_event.c), and the stop DM makes at an event an
 * Error rule matches (DM's skipByFilter: terror.ErrSyncerUnitBinlogEventFilter).
 */
#include <inttypes.h>
#include <stdio.h>

#include "sync.h"

#define FILTER_RULE_MAX 128

/* DM_ERR_SYNC_FILTER_ERROR: the rule, where, the event and the statement (cut to a line). */
static void filter_stop(sync_unit *u, dm_error *err, const char *at, const char *rule,
                        const char *schema, const char *table, const char *event, const char *sql) {
  u->host->error_make(u->ctx, err, DM_ERR_SYNC_FILTER_ERROR, NULL,
                      "sync: filter rule \"%s\" (action Error) matches the %s at %s on `%s`%s%s%s"
                      "%s%.200s%s: stopped before it, nothing of it ran",
                      rule[0] ? rule : "?", event ? event : "statement", at, schema,
                      table ? ".`" : "", table ? table : "", table ? "`" : "", sql ? " (\"" : "",
                      sql ? sql : "", sql ? "\")" : "");
}

int sync_filter_rows(sync_unit *u, sync_table *t, int k, const dm_binlog_event *ev, dm_error *err) {
  static const char *const names[] = {"insert", "update", "delete"};
  char rule[FILTER_RULE_MAX];
  if (t->ignored[k] < 0)
    t->ignored[k] = (int8_t)dm_host_event_verdict(u->host, u->ctx, t->db, t->name, names[k], NULL,
                                                  rule, sizeof rule);
  if (t->ignored[k] != DM_EVENT_ERROR)
    return t->ignored[k] == DM_EVENT_SKIP;
  /* asked again for the rule's name: the answer is cached, the name is not */
  dm_host_event_verdict(u->host, u->ctx, t->db, t->name, names[k], NULL, rule, sizeof rule);
  char at[DM_POSITION_NAME_MAX + 24];
  snprintf(at, sizeof at, "%s:%" PRIu64, ev->file, ev->offset);
  filter_stop(u, err, at, rule, t->db, t->name, names[k], NULL);
  return -1;
}

int sync_filter_ddl(sync_unit *u, const char *at, const sync_ddl_stmt *s, const char *schema,
                    const char *table, dm_error *err) {
  const char *events[SYNC_DDL_EVENTS_MAX];
  int n = sync_ddl_alter_events(s, events, SYNC_DDL_EVENTS_MAX);
  if (n == 0) {
    events[0] = sync_ddl_event_name(s->kind);
    n = 1;
  }
  char rule[FILTER_RULE_MAX], skipped_by[FILTER_RULE_MAX] = "";
  int skipped = -1, kept = -1;
  for (int i = 0; i < n; i++) {
    dm_event_verdict v =
        dm_host_event_verdict(u->host, u->ctx, schema, table, events[i], s->sql, rule, sizeof rule);
    if (v == DM_EVENT_ERROR) {
      filter_stop(u, err, at, rule, schema, table, events[i], s->sql);
      return -1;
    }
    if (v == DM_EVENT_SKIP && skipped < 0) {
      skipped = i;
      snprintf(skipped_by, sizeof skipped_by, "%s", rule);
    }
    if (v == DM_EVENT_APPLY && kept < 0)
      kept = i;
  }
  if (skipped < 0)
    return 0;
  if (kept < 0)
    return 1;
  /* DM runs the clauses of an ALTER one by one and would apply the others; dmhost applies an
   * ALTER whole or not at all, and neither is what the rules say */
  u->host->error_make(u->ctx, err, DM_ERR_SYNC_FILTER_ERROR, NULL,
                      "sync: filter rule \"%s\" skips the %s clause of the ALTER TABLE at %s on "
                      "`%s`.`%s` but not its %s clause (\"%.200s\"): dmhost applies an ALTER whole "
                      "or not at all; stopped before it. Replace it with `dmctl binlog replace` "
                      "(the clauses to keep), or skip it",
                      skipped_by[0] ? skipped_by : "?", events[skipped], at, schema,
                      table ? table : "", events[kept], s->sql);
  return -1;
}
