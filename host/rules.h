/*
 * The task's rules for one source, compiled once per subtask and evaluated for the units through
 * the host services: block-allow-list (DM's semantics), table routes (DM's table-router
 * wildcards) and binlog event filters (filters.h). Evaluation is read-only and thread-safe.
 */
#ifndef DMH_RULES_H
#define DMH_RULES_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "dmhost/error.h"

typedef struct dmh_rules dmh_rules;

/* inst may be NULL (no rules: everything but system schemas, no routes). */
dmh_rules *dmh_rules_new(const dmh_task_instance *inst, dm_error *err);
void dmh_rules_free(dmh_rules *r);

/* table NULL: is anything of the schema allowed? */
bool dmh_rules_table_allowed(const dmh_rules *r, const char *schema, const char *table);
void dmh_rules_route(const dmh_rules *r, const char *schema, const char *table, char *out_schema,
                     size_t schema_len, char *out_table, size_t table_len);
/* The task's binlog event filters (see filters.h): must this event be skipped? */
bool dmh_rules_event_ignored(const dmh_rules *r, const char *schema, const char *table,
                             const char *event, const char *sql);
bool dmh_rules_is_system_schema(const char *schema);
/* DM's wildcard match: '*' any run, '?' one character, '[a-z]' / '[!a-z]' one of / none of a set.
 * _ci compares case-insensitively, as DM's filters do by default. */
bool dmh_wildcard_match(const char *pattern, const char *s);
bool dmh_wildcard_match_ci(const char *pattern, const char *s);

#endif /* DMH_RULES_H */
