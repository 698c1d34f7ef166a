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
 *    "all ddl" any row change / any DDL, "none" nothing, else the event's own name; the list is
 *    read in order and "none" stops it. An Ignore rule whose events match skips the event; a Do
 *    rule whose events do not match skips it too.
 *  - Then, with a statement (sql not NULL) and a rule that has sql-patterns: an Ignore rule whose
 *    patterns find a match in the statement skips it, a Do rule whose patterns find none skips it.
 *    The patterns are DM's (RE2) regular expressions (translated by match.h), searched
 *    case-insensitively (DM adds "(?i)" whatever case-sensitive says), unanchored.
 *  - An event with a NULL name (a statement DM has no event for) is judged by sql-pattern only.
 *  - An event no rule skips is applied. Because every verdict a rule can give is "skip", the order
 *    of the rules does not change the outcome.
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

/* Must the event be skipped? f NULL: nothing is. See above for the arguments' meaning. */
bool dmh_filters_ignored(const dmh_filters *f, const char *schema, const char *table,
                         const char *event, const char *sql);

#endif /* DMH_FILTERS_H */
