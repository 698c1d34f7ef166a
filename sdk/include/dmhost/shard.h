/*
 * dmhost SDK: what a sync unit and its host say to each other about merged (sharded) tables and
 * online schema changes. The services that take these types are in host.h (version 10); the
 * behaviour they serve is docs/shard.md.
 *
 * Shard DDL coordination, as DM's (dm/syncer/shardddl, dm/master/shardddl): a "group" is every
 * source table the task routes to one target table; a "lock" is one DDL of that group, identified
 * by DM's ID "<task>-`schema`.`table`" of the target. A sync unit that reaches a DDL of a member
 * table holds that table (see docs/shard.md "Pessimistic mode"), and when every table of its
 * source's group is held at the same DDL it puts its info (shard_put) and waits (shard_wait) for
 * the operation the coordinator sends it: exec (run the DDLs on the target) or skip (run nothing).
 * It then reports the operation done (shard_done) in step with its checkpoint. The coordinator is
 * the host's: in process for `dmhost run`/`serve`, the leader master in a cluster.
 *
 * Online DDL (gh-ost, pt-online-schema-change): the host classifies a table name by the task's
 * shadow-table-rules and trash-table-rules (online_table_kind).
 */
#ifndef DMHOST_SHARD_H
#define DMHOST_SHARD_H

#include <stdbool.h>
#include <stdint.h>

#include "position.h"

#ifdef __cplusplus
extern "C" {
#endif

/* `shard-mode` of the task. NONE: DDLs of merged tables run as any DDL (no coordination). */
typedef enum dm_shard_mode {
  DM_SHARD_MODE_NONE = 0,
  DM_SHARD_MODE_PESSIMISTIC = 1,
  DM_SHARD_MODE_OPTIMISTIC = 2,
} dm_shard_mode;

/* A source table, by its upstream names. */
typedef struct dm_shard_table {
  const char *schema;
  const char *table;
} dm_shard_table;

/* A source's arrival at a lock. Everything is borrowed for the call only.
 * Pessimistic: `tables` are all the source's tables of the group, each held at this DDL; `ddls`
 * are the routed statements (as they would run on the target table), compared as a set with the
 * other sources' (different sets: DM_ERR_SHARD_DDL_DIFF). `schema`/`table`, `before`/`after` are
 * NULL.
 * Optimistic: one table (`schema`/`table`, also tables[0]) and its structure before and after the
 * DDL as JSON (the format of docs/shard.md "Optimistic mode"), which the coordinator joins. */
typedef struct dm_shard_info {
  const char *target_schema; /* the routed target table */
  const char *target_table;
  const char *const *ddls;
  uint32_t n_ddls;
  const dm_shard_table *tables;
  uint32_t n_tables;
  const char *schema; /* optimistic: the table of this info */
  const char *table;
  const char *before; /* optimistic: JSON structures */
  const char *after;
  dm_position pos; /* where the DDL ends in the source's binlog: shown by shard-ddl-lock */
} dm_shard_info;

typedef enum dm_shard_action {
  DM_SHARD_EXEC = 1, /* run op.ddls on the target (once), then shard_done */
  DM_SHARD_SKIP = 2, /* run nothing (another source ran it, or the user skipped), then shard_done */
} dm_shard_action;

#define DM_SHARD_LOCK_ID_MAX 512
/* The operation shard_wait hands out. `ddls` are lent by the host until shard_done or the next
 * shard_wait of the same unit. In optimistic mode `ddls` may differ from the info's (what the
 * join needs on the target); `conflict` then says the table stays held with `message`. */
typedef struct dm_shard_op {
  char lock_id[DM_SHARD_LOCK_ID_MAX];
  uint64_t op_id; /* echoed to shard_done */
  dm_shard_action action;
  const char *const *ddls;
  uint32_t n_ddls;
  bool conflict;       /* optimistic: the table stays held (see message) */
  const char *message; /* why (conflict), or "" */
  /* optimistic: the member table the operation is for (an info's own, or a held table that
   * another member's DDL released: a SKIP without conflict, "redirect", after which the sync
   * re-syncs it); NULL in pessimistic mode */
  const char *schema;
  const char *table;
} dm_shard_op;

/* Route extraction (DM's extract-table/-schema/-source): the target columns that receive parts of
 * the source table's name, in DM's order (table, schema, source). */
#define DM_ROUTE_EXTRACT_MAX 3
#define DM_ROUTE_EXTRACT_VALUE_MAX 256
typedef struct dm_route_extract {
  uint32_t n;
  struct {
    char column[65];
    char value[DM_ROUTE_EXTRACT_VALUE_MAX];
  } cols[DM_ROUTE_EXTRACT_MAX];
} dm_route_extract;

/* What the task's online-DDL rules make of a table name. */
typedef enum dm_online_kind {
  DM_ONLINE_REAL = 0,  /* an ordinary table (also every table when online-ddl is off) */
  DM_ONLINE_GHOST = 1, /* a tool's shadow copy: _t_gho, _t_new (shadow-table-rules) */
  DM_ONLINE_TRASH = 2, /* a tool's leftover: _t_ghc, _t_del, _t_old (trash-table-rules) */
} dm_online_kind;

#ifdef __cplusplus
}
#endif
#endif /* DMHOST_SHARD_H */
