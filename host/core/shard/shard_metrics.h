/*
 * DM's master metrics of shard DDL locks (docs/metrics.md "Master"), for both coordinators: the
 * cluster's leader master (master_shard.c) and the in-process one of `dmhost serve` and
 * `dmhost run` (registry_shard.c). Process series (no worker or source_id labels), as DM's.
 */
#ifndef DMH_SHARD_METRICS_H
#define DMH_SHARD_METRICS_H

#include <stdint.h>

#include "shard.h"

/* DM's type labels of dm_master_shard_ddl_error (dm/master/metrics): a source's info refused by
 * its lock (DDLs that differ from the lock's). */
#define DMH_SHARD_ERR_SYNC_LOCK "InfoPut - SyncLockError"

/* dm_master_ddl_state_number{task,type}: the keeper's pessimistic locks per task, "Un-synced"
 * (waiting for a member) and "Synced" (all arrived: exec or skips out), recounted from the keeper
 * and replacing `owner`'s series at once. A task whose locks are all resolved keeps its series at
 * 0 (DM decrements to 0) while the keeper holds records of it; after stop-task they are gone.
 * `tasks_seen` is the caller's list of those task names, kept here (*n_seen entries, malloc'd;
 * dmh_shard_metrics_forget frees it and removes the series). */
void dmh_shard_metrics_pending(const dmh_shard_keeper *k, uint64_t owner, char ***tasks_seen,
                               size_t *n_seen);

void dmh_shard_metrics_forget(uint64_t owner, char ***tasks_seen, size_t *n_seen);

/* dm_master_shard_ddl_error{task,type} += 1. */
void dmh_shard_metrics_error(const char *task, const char *type);

#endif /* DMH_SHARD_METRICS_H */
