/*
 * The task's binlog event filters for one source (`filters`, named by `filter-rules` of the
 * mysql-instances entry), compiled once per subtask and evaluated for the sync unit through the
 * event_ignored host service. DM's binlog-filter semantics (tidb-tools pkg/binlog-filter with its
 * default case-insensitive matching):
 *
 *  - A rule applies to an event when its schema-pattern matches the schema and, for a rule with a
 *    table-pattern, the table-pattern matches the table (a schema-level statement has the empty
 *    table name, so only a table-pattern of "*" reaches it). A rule without table-pattern is a
 *    schema-level rule and applies to every table of its schemas. Patterns are DM wildcards
 *    ('*', '?', '[a-z]', '[!0-9]', match.h), compared without regard to case unless the task says
 *    case-sensitive = true.
 *  - For each applying rule, with an event name (not NULL): "all" matches any event, "all dml" /
 *    "all ddl" any row change / any DDL, "incompatible ddl changes" any of DM's incompatible DDL
 *    events, "none" (/"none dml"/"none ddl" for its class) nothing, else the event's own name or,
 *    for a finer clause event DM reports otherwise ("add column": "alter table"), the name DM
 *    reports (config/filter_events.h); the list is read in order and the first entry that decides,
 *    decides. An Ignore rule whose events match skips the event, an Error rule whose events match
 *    stops the sync at it; a Do rule whose events do not match skips it.
 *  - Then, with a statement (sql not NULL) and a rule that has sql-patterns: an Ignore rule whose
 *    patterns find a match in the statement skips it, an Error rule whose patterns match stops at
 *    it, a Do rule whose patterns find none skips it.
 *    The patterns are DM's (RE2) regular expressions (translated by match.h), searched
 *    case-insensitively (DM adds "(?i)" whatever case-sensitive says), unanchored.
 *  - An event with a NULL name (a statement DM has no event for) is judged by sql-pattern only.
 *  - An event no rule skips or stops at is applied. DM returns the verdict of the first rule that
 *    gives one, in its rule trie's order; dmhost makes the order not matter: skip wins over stop
 *    (DM's "ignore has highest priority"), stop over apply.
 *
 * Evaluation is read-only and allocation-free, safe from any number of threads.
 */
#ifndef DMH_FILTERS_H
#define DMH_FILTERS_H

#include <stdbool.h>

#include "config.h"
#include "dmhost/error.h"

typedef struct dmh_filters dmh_filters;

/* Compile `n` rules (borrowed: they must outlive the result). Returns NULL with
 * DM_ERR_CONFIG_INVALID naming the rule and the pattern when a sql-pattern does not compile, or
 * DM_ERR_NO_MEMORY. */
dmh_filters *dmh_filters_new(const dmh_filter_rule *const *rules, int n, bool case_sensitive,
                             dm_error *err);
void dmh_filters_free(dmh_filters *f);

/* What the filters make of an event: apply it, skip it, or stop the sync at it (an Error rule;
 * *rule, when not NULL, gets that rule's name). f NULL: apply. See above for the arguments. */
typedef enum dmh_filter_verdict {
  DMH_VERDICT_APPLY = 0,
  DMH_VERDICT_SKIP = 1,
  DMH_VERDICT_ERROR = 2,
} dmh_filter_verdict;
dmh_filter_verdict dmh_filters_judge(const dmh_filters *f, const char *schema, const char *table,
                                     const char *event, const char *sql, const char **rule);

/* Must the event be skipped? (dmh_filters_judge gives DMH_VERDICT_SKIP) */
bool dmh_filters_ignored(const dmh_filters *f, const char *schema, const char *table,
                         const char *event, const char *sql);

#endif /* DMH_FILTERS_H */
