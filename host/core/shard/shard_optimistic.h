/*
 * One optimistic shard DDL lock (docs/shard.md "Optimistic mode"; DM's
 * dm/pkg/shardddl/optimism/lock.go): pure logic, no I/O, no lock of its own (the coordinator that
 * owns it serializes the calls).
 *
 * The lock of a target table keeps every member table's structure (shard_join.h) and answers each
 * info {ddls, before, after} of a member with what that member does:
 *   EXEC      run the info's DDLs on the target: the join of all members changed;
 *   SKIP      run nothing: the join did not change (another member's DDL already made the target
 *             accept it, or a DROP waits for the others: a partially dropped column);
 *   CONFLICT  the table stays held (DM's stage "skip and wait for redirect" when the others can
 *             still catch up, "detected" when only a user can resolve it), with a message.
 * As DM's TrySync: before and after of the info must compare (a RENAME COLUMN or a type change
 * is not comparable: a conflict), the new join must exist, and a conflict waits until the final
 * structures of all members (the held ones as their after) join without conflict: then the info
 * that completes them runs (EXEC) and every held table is released (`released`: the coordinator
 * sends each a redirect, SKIP without a conflict, and the sync re-syncs it).
 *
 * dmhost's scratch check (docs/shard.md step 3): `after` may carry the target table as the info's
 * statements leave it on a scratch copy made in the tracker's shadow schema, under the key
 * "target" (a structure), or the target server's refusal under "target_error" (a string). When
 * the info would EXEC and that result does not accept every row of the new join, or the
 * statements failed there, the info is a conflict ("detected") instead.
 */
#ifndef DMH_SHARD_OPTIMISTIC_H
#define DMH_SHARD_OPTIMISTIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dmhost/shard.h"

typedef struct dmh_opt_lock dmh_opt_lock;

/* DM's ConflictStage of a member table (optimism/operation.go), as shard-ddl-lock shows it. */
typedef enum dmh_opt_stage {
  DMH_OPT_STAGE_NONE = 0,  /* "none" */
  DMH_OPT_STAGE_DETECTED,  /* "detected": held until a user unlocks it */
  DMH_OPT_STAGE_SKIP_WAIT, /* "skip and wait for redirect": held until the others catch up */
  DMH_OPT_STAGE_RESOLVED,  /* "resolved": released by another member's DDL */
  DMH_OPT_STAGE_UNLOCKED,  /* "unlocked": released by a user */
} dmh_opt_stage;
const char *dmh_opt_stage_name(dmh_opt_stage s);

typedef enum dmh_opt_verdict {
  DMH_OPT_EXEC = 1,
  DMH_OPT_SKIP = 2,
  DMH_OPT_CONFLICT = 3,
} dmh_opt_verdict;

#define DMH_OPT_SOURCE_MAX 129
typedef struct dmh_opt_member_ref {
  char source[DMH_OPT_SOURCE_MAX];
  char schema[65];
  char table[65];
} dmh_opt_member_ref;

/* An answer. Everything is owned by it: dmh_opt_result_free. */
typedef struct dmh_opt_result {
  dmh_opt_verdict verdict;
  dmh_opt_stage stage; /* of the caller's table now */
  char message[1024];  /* the conflict (or, for -1, the error) */
  char **ddls;         /* EXEC: what runs on the target */
  uint32_t n_ddls;
  dmh_opt_member_ref *released; /* held tables the answer releases (redirect) */
  size_t n_released;
} dmh_opt_result;
void dmh_opt_result_free(dmh_opt_result *r);

/* A lock with DM's ID ("<task>-`schema`.`table`" of the target). NULL when out of memory. */
dmh_opt_lock *dmh_opt_lock_new(const char *id);
void dmh_opt_lock_free(dmh_opt_lock *l);
const char *dmh_opt_lock_id(const dmh_opt_lock *l);

/* The source's member tables (replaces what it said before): new ones join the lock with the
 * structure the lock started from (the first info's before, DM's initTable) until their own info
 * arrives; gone ones leave it, with their partially dropped columns. 0, or -1 out of memory. */
int dmh_opt_lock_set_tables(dmh_opt_lock *l, const char *source, const dm_shard_table *tables,
                            uint32_t n);

/* A member's info (info->schema/table, ddls, before, after; re-entrant: the same info again
 * gives the same answer). 0 with *res, or -1 with res->message (bad structure JSON, memory). */
int dmh_opt_lock_try_sync(dmh_opt_lock *l, const char *source, const dm_shard_info *info,
                          dmh_opt_result *res);

/* `shard-ddl-lock unlock -a exec|skip` of a held table: exec runs its held DDLs on the target as
 * they are, skip runs nothing (the user fixed the target); either way the table takes its after
 * structure and is released (stage "unlocked"). 0 with *res (EXEC or SKIP), or -1 with
 * res->message: not a member, not held. */
int dmh_opt_lock_unlock(dmh_opt_lock *l, const char *source, const char *schema, const char *table,
                        dm_shard_action action, dmh_opt_result *res);

/* Synced (DM's IsSynced): every member's structure is the join and none is held; *remain (may be
 * NULL) counts the others. */
bool dmh_opt_lock_synced(const dmh_opt_lock *l, size_t *remain);
/* Whether the member is held (stage detected or skip-wait). */
bool dmh_opt_lock_held(const dmh_opt_lock *l, const char *source, const char *schema,
                       const char *table);

/* shard-ddl-lock's view (malloc'd JSON, NULL when out of memory):
 *   {"ID": ..., "mode": "optimistic", "synced": bool, "joined": <structure or null>,
 *    "tables": [{"source", "schema", "table", "stage", "message", "ddls": [...]}, ...]} */
char *dmh_opt_lock_json(const dmh_opt_lock *l);

#endif /* DMH_SHARD_OPTIMISTIC_H */
