/*
 * The task's rules for one source, compiled once per subtask and evaluated for the units through
 * the host services: block-allow-list (DM's semantics), table routes (DM's table-router
 * wildcards) and binlog event filters (filters.h), names matched as match.h says (wildcards,
 * '~' regular expressions, case folded unless the task says case-sensitive = true). Evaluation is
 * read-only and thread-safe.
 */
#ifndef DMH_RULES_H
#define DMH_RULES_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "dmhost/error.h"
#include "dmhost/shard.h"
#include "filters.h"

typedef struct dmh_rules dmh_rules;

/* inst may be NULL (no rules: everything but system schemas, no routes). Returns NULL with
 * DM_ERR_CONFIG_INVALID when a regular expression does not compile (the task file's check refuses
 * it first, naming the line), or DM_ERR_NO_MEMORY. */
dmh_rules *dmh_rules_new(const dmh_task_instance *inst, dm_error *err);
void dmh_rules_free(dmh_rules *r);

/* table NULL or "": is anything of the schema allowed (it passes the schema level, and do-tables
 * is empty or has an entry for it)? */
bool dmh_rules_table_allowed(const dmh_rules *r, const char *schema, const char *table);
void dmh_rules_route(const dmh_rules *r, const char *schema, const char *table, char *out_schema,
                     size_t schema_len, char *out_table, size_t table_len);
/* The extract columns of the route that sends schema.table (DM's table-router FetchExtendColumn:
 * the route routing decides on, a table rule before a schema rule): its extract-table,
 * extract-schema and extract-source groups in that order, each value DM's extractVal of the table
 * name, the schema name and the subtask's source-id (dmh_regex_extract: its capture groups, ""
 * when the regexp does not match). out->n = 0 when the route has none (or no route matches). */
void dmh_rules_extract(const dmh_rules *r, const char *schema, const char *table,
                       dm_route_extract *out);
/* The task's binlog event filters (see filters.h): must this event be skipped? */
bool dmh_rules_event_ignored(const dmh_rules *r, const char *schema, const char *table,
                             const char *event, const char *sql);
/* The same, with the third verdict (filters.h dmh_filters_judge; *rule the deciding rule). */
dmh_filter_verdict dmh_rules_event_judge(const dmh_rules *r, const char *schema, const char *table,
                                         const char *event, const char *sql, const char **rule);
bool dmh_rules_is_system_schema(const char *schema);

/* DM's defaults of shadow-table-rules and trash-table-rules (dm/config/subtask.go). */
#define DMH_RULES_SHADOW_DEFAULT "^_(.+)_(?:new|gho)$"
#define DMH_RULES_TRASH_DEFAULT "^_(.+)_(?:ghc|del|old)$"
/* What the task's online-DDL rules make of a table name (DM's RealOnlinePlugin TableType and
 * RealName): GHOST when a shadow rule matches (shadow rules first), TRASH when a trash rule does,
 * else REAL (always REAL when online-ddl is off or r is NULL). For a ghost, real[len] gets the
 * first capturing group of the first matching shadow rule that has one (the name itself when none
 * has); "" otherwise. Names are matched as they are (DM's regexps know no case folding). */
dm_online_kind dmh_rules_online_kind(const dmh_rules *r, const char *table, char *real, size_t len);
/* Is online-ddl on? */
bool dmh_rules_online(const dmh_rules *r);

#endif /* DMH_RULES_H */
