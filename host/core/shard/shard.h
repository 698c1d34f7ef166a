/*
 * Pessimistic shard DDL locks, the pure logic (no I/O, no threads): DM's keeper and lock
 * (dm/pkg/shardddl/pessimism/keeper.go, lock.go) and the master's rules around them
 * (dm/master/shardddl/pessimist.go: TrySync, recoverLocks, UnlockLock). docs/shard.md "The lock".
 *
 * A keeper holds only what is persisted, DM's split: per (task, source, target table) the tables
 * the source reported ("sources"), the source's arrival ("infos", in arrival order) and the
 * operation sent to it ("ops"). Locks are derived from those records, so rebuilding them after a
 * restart (DM's recoverLocks) is loading the records: dmh_shard_load_json then finishes any step a
 * kill cut short (all arrived but no exec; exec done but no skips; all done but not deleted).
 *
 * A lock (ID "<task>-`schema`.`table`" of the target) exists while some source's info for that
 * target is current. Its members are the sources that reported tables for the target plus those
 * that arrived; once its exec operation is out, only the arrived ones. Its owner is the first
 * arrival, or the source its exec operation names (unlock -o). States:
 *   waiting   some member has not arrived (no operation yet)
 *   synced    all arrived (or unlock forced it): exec sent to the owner
 *   executed  the owner is done: skip sent to the others
 *   resolved  all done: the lock's infos and operations are deleted (never listed)
 * A source that arrives at a target whose lock already has operations out (its own done: its next
 * DDL; or not a member any more after a forced unlock) is queued: its info becomes current when
 * that lock is resolved, opening the next lock (DM's sequence sharding; DM's PutInfoIfOpNotDone
 * makes the worker wait for that instead).
 *
 * Not thread-safe: the owner (the registry's coordinator, the cluster's leader master) holds its
 * own lock around every call.
 */
#ifndef DMH_SHARD_H
#define DMH_SHARD_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dmhost/error.h"
#include "dmhost/shard.h"

typedef enum dmh_shard_state {
  DMH_SHARD_WAITING = 0,
  DMH_SHARD_SYNCED = 1,
  DMH_SHARD_EXECUTED = 2,
  DMH_SHARD_RESOLVED = 3,
} dmh_shard_state;

const char *dmh_shard_state_name(dmh_shard_state s);

/* An operation sent to a source (DM's pessimism.Operation). Strings owned by the keeper: valid
 * until the next call that changes it. */
typedef struct dmh_shard_oprec {
  char *lock_id, *task, *source, *tschema, *ttable;
  uint64_t id; /* unique in the keeper, never reused (persisted next id) */
  bool exec;   /* exec: run the DDLs; else skip */
  char **ddls;
  uint32_t n_ddls;
  bool done;
} dmh_shard_oprec;

typedef struct dmh_shard_keeper dmh_shard_keeper;

dmh_shard_keeper *dmh_shard_keeper_new(void);
void dmh_shard_keeper_free(dmh_shard_keeper *k);

/* DM's GenDDLLockID: "<task>-`schema`.`table`" (backticks in names doubled). Returns 0, or -1
 * when it does not fit in len bytes. */
int dmh_shard_lock_id(char *out, size_t len, const char *task, const char *tschema,
                      const char *ttable);

/* DM's CompareShardingDDLs: the same statements as a set (same count, each in the other),
 * compared in their canonical text (dm_db_ddl_canon), as DM compares restored statements. */
bool dmh_shard_ddls_equal(const char *const *a, uint32_t na, const char *const *b, uint32_t nb);

/* The source's tables routed to the target (n == 0: it has none any more and leaves). A source
 * joining a waiting lock becomes a member the lock waits for; one leaving may complete it. */
int dmh_shard_report_tables(dmh_shard_keeper *k, const char *task, const char *source,
                            const char *tschema, const char *ttable, const dm_shard_table *tables,
                            uint32_t n, dm_error *err);

/* The source arrived (DM's TrySync). Idempotent for the same info (same position and DDLs);
 * DM_ERR_SHARD_DDL_DIFF when its DDLs differ from the lock's (nothing is stored then). When the
 * last member arrives the exec operation goes to the owner. */
int dmh_shard_put(dmh_shard_keeper *k, const char *task, const char *source,
                  const dm_shard_info *info, dm_error *err);

/* The source's operation not yet done for the target's lock, or NULL. */
const dmh_shard_oprec *dmh_shard_pending_op(const dmh_shard_keeper *k, const char *task,
                                            const char *source, const char *tschema,
                                            const char *ttable);

/* The source applied operation op_id. An unknown id (its lock is gone) is accepted: a done can
 * be repeated after a restart. The owner's done sends the skips; the last done resolves. */
int dmh_shard_done(dmh_shard_keeper *k, const char *task, const char *source, uint64_t op_id,
                   dm_error *err);

/* The lock's state and owner (owner may be NULL). Returns -1 when there is no such lock. */
int dmh_shard_lock_state(const dmh_shard_keeper *k, const char *lock_id, char *owner,
                         size_t owner_len);

/* unlock, DM's UnlockLock in three steps for the caller who waits between them:
 *  - unlock: the owner (owner_override, or the lock's) must have arrived; the lock is forced
 *    synced with the arrived sources only and exec goes to that owner. Errors:
 *    DM_ERR_SHARD_LOCK_NOT_FOUND, _LOCK_RESOLVING (operations already out), _NOT_WAITING.
 *  - unlock_revert: the owner did not do it in time (and no --force-remove): the exec
 *    operation is withdrawn, the lock waits for all its members again (DM's RevertSynced).
 *  - unlock_skip_rest: --force-remove after a failed owner: skips go to the other arrived
 *    sources at once.
 *  - remove_lock: the lock's infos and operations are deleted (the end of a forced unlock). */
int dmh_shard_unlock(dmh_shard_keeper *k, const char *lock_id, const char *owner_override,
                     dm_error *err);
void dmh_shard_unlock_revert(dmh_shard_keeper *k, const char *lock_id);
void dmh_shard_unlock_skip_rest(dmh_shard_keeper *k, const char *lock_id);
void dmh_shard_remove_lock(dmh_shard_keeper *k, const char *lock_id);

/* Every record of the task (stop-task: DM's RemoveMetaData). */
void dmh_shard_remove_task(dmh_shard_keeper *k, const char *task);

/* Does the keeper hold any record of the task? */
bool dmh_shard_has_task(const dmh_shard_keeper *k, const char *task);

/* The persisted records of one task (task NULL: all), the shard.json object:
 *   {"version": 1, "nextOpID": N, "sources": [{task, source, targetSchema, targetTable,
 *    tables: [{schema, table}]}], "infos": [{task, source, targetSchema, targetTable, ddls,
 *    tables, pos: {name, pos, gtid}, queued}], "ops": [{lockID, task, source, targetSchema,
 *    targetTable, id, exec, ddls, done}]}
 * New reference, or NULL without memory. */
json_object *dmh_shard_to_json(const dmh_shard_keeper *k, const char *task);

/* Adds the records of such an object (from one task's shard.json) and finishes what a kill cut
 * short. -1 with DM_ERR_STATE naming the field when it does not parse (nothing is added). */
int dmh_shard_load_json(dmh_shard_keeper *k, json_object *root, dm_error *err);

/* The locks of the task (NULL: all), sorted by ID, DM's ShowDDLLocks shape plus "state" and
 * "tables" (docs/shard.md "What the user writes"). A new array, NULL without memory. */
json_object *dmh_shard_locks_json(const dmh_shard_keeper *k, const char *task);

#endif /* DMH_SHARD_H */
