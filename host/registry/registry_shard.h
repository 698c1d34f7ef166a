/*
 * The in-process coordinator of shard DDL locks (shard_coord.h's first implementation): one per
 * process (`dmhost serve`'s registry, `dmhost run`), over the pure keeper of core/shard/shard.h,
 * persisted per task in <dir>/tasks/<task>/shard.json (state.h's atomic write) after every change,
 * before the call that made it returns. docs/shard.md "The lock".
 *
 * Threads: the sync units of the process's subtasks call put/wait/done/report_tables through
 * their contexts (services.c); the control plane calls show/unlock/forget. One mutex guards the
 * keeper, the lent operations and the loaded-task list; one condition variable is broadcast on
 * every change, and a wait wakes at least every 100 ms to check its stop.
 */
#ifndef DMH_REGISTRY_SHARD_H
#define DMH_REGISTRY_SHARD_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "dmhost/error.h"
#include "shard_coord.h"

typedef struct dmh_shard_local dmh_shard_local;

/* dir: the state dir (serve) or the work dir (run); shard.json files go in dir/tasks/<task>/. */
dmh_shard_local *dmh_shard_local_new(const char *dir, dm_error *err);
/* After every subtask using it is gone. */
void dmh_shard_local_free(dmh_shard_local *c);

/* The coordinator the subtasks get (dmh_subtask_opts.shard); lives as long as c. */
const dmh_shard_coord *dmh_shard_local_coord(dmh_shard_local *c);

/* Read the task's shard.json (a missing file: no locks) and rebuild its locks, finishing a step a
 * kill cut short (DM's recoverLocks). Done once per task; later calls do nothing. -1 with
 * DM_ERR_STATE when the file does not parse. Every other call loads the task first too. */
int dmh_shard_local_load(dmh_shard_local *c, const char *task, dm_error *err);

/* shard-ddl-lock [TASK]: resp["locks"] (shard.h dmh_shard_locks_json). task NULL: every task. */
int dmh_shard_local_show(dmh_shard_local *c, const char *task, json_object *resp, dm_error *err);

/* shard-ddl-lock unlock, DM's UnlockLock: force the lock synced with owner (NULL: the lock's),
 * wait up to wait_ms for the owner's done (none: the exec is withdrawn and DM_ERR_SHARD_OWNER_EXEC,
 * unless force_remove, which sends the skips anyway), then up to wait_ms for the others' done;
 * with force_remove the lock is deleted at the end whatever is left. The errors of
 * dmh_shard_unlock otherwise. resp gets "lock" (the ID) and "state" (what it ended as). */
int dmh_shard_local_unlock(dmh_shard_local *c, const char *lock_id, const char *owner,
                           bool force_remove, uint32_t wait_ms, json_object *resp, dm_error *err);

/* shard-ddl-lock unlock LOCK_ID -s SOURCE -d DB -t TABLE -a exec|skip: one held table of an
 * optimistic lock is released (shard_opt_keeper.h dmh_opt_keeper_unlock): its operation becomes
 * exec of its held DDLs, or skip. DM_ERR_SHARD_LOCK_NOT_FOUND (no such lock or table),
 * DM_ERR_SHARD_NOT_WAITING (the table is not held). resp gets "lock" and "state". */
int dmh_shard_local_unlock_table(dmh_shard_local *c, const char *lock_id, const char *source,
                                 const char *schema, const char *table, bool exec,
                                 json_object *resp, dm_error *err);

/* stop-task: the task's locks and its shard.json go (DM's RemoveMetaData). */
int dmh_shard_local_forget(dmh_shard_local *c, const char *task, dm_error *err);

#endif /* DMH_REGISTRY_SHARD_H */
