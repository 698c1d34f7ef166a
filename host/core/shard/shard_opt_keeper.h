/*
 * The optimistic locks of a coordinator (docs/shard.md "Optimistic mode"), pure: DM's optimism
 * keeper (dm/pkg/shardddl/optimism/keeper.go) with the records DM keeps in etcd (infos per member
 * table, operations per member table, the tables each source reported) and the locks
 * (shard_optimistic.h) derived from them. The coordinator (the registry's in process, the leader
 * master's) holds its own lock around every call and persists dmh_opt_keeper_to_json after each
 * change (shard.json's "otables", "oinfos", "oops"); loading them replays the infos in their order
 * (DM rebuilds its locks the same way, from the infos).
 *
 * Operations: one current per member table. An info gets its answer as an operation for its own
 * table (exec, skip, or a conflict: skip with `conflict` and the message, the table held); a
 * resolution also replaces the operations of the tables it releases by redirects (skip without a
 * conflict: the sync re-syncs the table). A unit waits for the first operation not done of its
 * source for a target (dmh_opt_keeper_pending) and reports it done.
 */
#ifndef DMH_SHARD_OPT_KEEPER_H
#define DMH_SHARD_OPT_KEEPER_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "dmhost/shard.h"
#include "shard_optimistic.h"

typedef struct dmh_opt_keeper dmh_opt_keeper;

/* An operation (DM's optimism.Operation). Strings owned by the keeper, valid until the next call
 * that changes it. */
typedef struct dmh_opt_oprec {
  char *lock_id, *task, *source, *schema, *table, *tschema, *ttable;
  uint64_t id;
  dm_shard_action action;
  bool conflict;       /* the table stays held */
  dmh_opt_stage stage; /* DM's ConflictStage of the table by this operation */
  char *message;
  char **ddls;
  uint32_t n_ddls;
  bool done;
} dmh_opt_oprec;

/* Failures besides -1 (bad input, memory): the caller maps them to its error codes. */
#define DMH_OPT_ERR_NOT_FOUND (-2) /* no such lock, or no such table in it */
#define DMH_OPT_ERR_NOT_HELD (-3)  /* unlock of a table that is not held */

dmh_opt_keeper *dmh_opt_keeper_new(void);
void dmh_opt_keeper_free(dmh_opt_keeper *k);

/* The source's tables routed to the target whose lock is lock_id (n == 0: it has none). 0 or
 * -1 with msg. */
int dmh_opt_keeper_report_tables(dmh_opt_keeper *k, const char *lock_id, const char *task,
                                 const char *source, const char *tschema, const char *ttable,
                                 const dm_shard_table *tables, uint32_t n, char *msg,
                                 size_t msg_len);

/* A member table's info (info->schema/table, ddls, before, after). The same info again (after a
 * restart) keeps its operation (DM's PutInfoIfOpNotDone), handed out again if it was done: the
 * unit read the DDL again, so its checkpoint is before it. 0 or -1 with msg (a structure that
 * does not parse, memory). */
int dmh_opt_keeper_put(dmh_opt_keeper *k, const char *lock_id, const char *task, const char *source,
                       const dm_shard_info *info, char *msg, size_t msg_len);

/* The source's first operation not done for a table routed to the target, or NULL. */
const dmh_opt_oprec *dmh_opt_keeper_pending(const dmh_opt_keeper *k, const char *task,
                                            const char *source, const char *tschema,
                                            const char *ttable);

/* The source applied operation op_id (an unknown one is accepted: a repeat after a restart). */
void dmh_opt_keeper_done(dmh_opt_keeper *k, const char *task, const char *source, uint64_t op_id);

/* unlock -s SOURCE -d DB -t TABLE -a exec|skip of a held table: its operation becomes exec of its
 * held DDLs or skip, stage unlocked. 0, DMH_OPT_ERR_NOT_FOUND, DMH_OPT_ERR_NOT_HELD, -1; msg. */
int dmh_opt_keeper_unlock(dmh_opt_keeper *k, const char *lock_id, const char *source,
                          const char *schema, const char *table, dm_shard_action action, char *msg,
                          size_t msg_len);

/* Every record of the task (stop-task). */
void dmh_opt_keeper_remove_task(dmh_opt_keeper *k, const char *task);
bool dmh_opt_keeper_has_task(const dmh_opt_keeper *k, const char *task);

/* The locks of the task (NULL: all), sorted by ID, each as dmh_opt_lock_json with "task". A new
 * array, NULL without memory. */
json_object *dmh_opt_keeper_locks_json(const dmh_opt_keeper *k, const char *task);

/* The records of the task (NULL: all) as the members of shard.json:
 *   {"nextOOpID": N, "otables": [{lockID, task, source, targetSchema, targetTable,
 *    tables: [{schema, table}]}], "oinfos": [{lockID, task, source, schema, table, targetSchema,
 *    targetTable, ddls, before, after, unlocked}], "oops": [{lockID, task, source, schema, table,
 *    targetSchema, targetTable, id, action, conflict, stage, message, ddls, done}]}
 * New reference, or NULL without memory. */
json_object *dmh_opt_keeper_to_json(const dmh_opt_keeper *k, const char *task);
/* Adds the records of such an object and rebuilds the locks by replaying the infos in order
 * (operations as they were stored). -1 with msg naming the field that does not parse. */
int dmh_opt_keeper_load_json(dmh_opt_keeper *k, json_object *root, char *msg, size_t msg_len);

#endif /* DMH_SHARD_OPT_KEEPER_H */
