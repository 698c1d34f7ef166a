/*
 * The coordinator of shard DDL locks, as the unit services see it (host.h version 10: shard_put,
 * shard_wait, shard_done, shard_report_tables). Two implementations: the registry's, in process,
 * persisted in DIR/tasks/<task>/shard.json (`dmhost serve`, `dmhost run`), and the cluster
 * worker's, which puts infos into etcd and watches the operations the leader master writes
 * (docs/shard.md "The lock", "Where each piece goes"). The subtask hands its coordinator to
 * each unit's context (dmh_ctx_run.shard); NULL means no coordination: the services then answer
 * DM_ERR_SHARD_... errors naming what is missing, and shard_mode NONE is what a unit sees.
 *
 * Parties: only the sync units of the task's own subtasks call it, through their context, which
 * fixes `task` and `source` (a unit cannot speak for another source); a cluster worker's writes
 * carry its fencing token.
 */
#ifndef DMH_SHARD_COORD_H
#define DMH_SHARD_COORD_H
#include "dmhost/error.h"
#include "dmhost/shard.h"
#include <stdbool.h>
#include <stdint.h>

typedef struct dmh_shard_coord_ops {
  /* The source's tables of the group routed to target tschema.ttable (replaces what it said
   * before). Returns 0 or -1 with *err. */
  int (*report_tables)(void *self, const char *task, const char *source, const char *tschema,
                       const char *ttable, const dm_shard_table *tables, uint32_t n, dm_error *err);
  /* The source arrived (dm_shard_info); idempotent. Returns 0 or -1 with *err. */
  int (*put)(void *self, const char *task, const char *source, const dm_shard_info *info,
             dm_error *err);
  /* Blocks until the source's operation for the target's lock is there, or stopped(stop_arg)
   * turns true (checked at least every 100 ms; a stopped() that is always true makes it a poll:
   * the pending operation or 0 at once). Returns 1 with *op (its strings owned by the
   * coordinator until done or the next wait of this task and source), 0 stopped, -1 with
   * *err. */
  int (*wait)(void *self, const char *task, const char *source, const char *tschema,
              const char *ttable, bool (*stopped)(void *), void *stop_arg, dm_shard_op *op,
              dm_error *err);
  /* The operation is applied and checkpointed by the source. `fencing_token` is the subtask's
   * (0: none). Returns 0 or -1 with *err. */
  int (*done)(void *self, const char *task, const char *source, uint64_t fencing_token,
              const dm_shard_op *op, dm_error *err);
} dmh_shard_coord_ops;

typedef struct dmh_shard_coord {
  const dmh_shard_coord_ops *ops;
  void *self;
} dmh_shard_coord;

#endif /* DMH_SHARD_COORD_H */
