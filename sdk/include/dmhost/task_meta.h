/*
 * dmhost SDK: the names of what a task keeps on the target (libdmhost-sdk.a). The load and sync
 * units create these tables and schemas; the host drops them when a task is removed with its meta
 * (stop-task remove-meta, start-task remove-meta: DM's removeMetaData). One owner of the names, so
 * that the host drops exactly the task's own, never another task's.
 *
 *   <meta-schema>.<task>_loader_checkpoint   the load's checkpoint (DM's): per source and file
 *   <meta-schema>.<task>_loader_keys         the load's deferred secondary keys
 *   <meta-schema>.<task>_syncer_checkpoint   the sync's checkpoint (DM's): per source and table
 *   <meta-schema>.<task>_onlineddl           the sync's online-DDL records (DM's)
 *   <meta-schema>.<task>_syncer_xa           the sync's prepared XA transactions
 *   <meta-schema>.<task>_validator_checkpoint   the sync's validator: position, counts, wish (DM's)
 *   <meta-schema>.<task>_validator_pending_change the sync's validator: rows not checked yet (DM's)
 *   <meta-schema>.<task>_validator_error_change the sync's validator: its error rows (DM's)
 *   _dmt_<hash(task, source)>_<hash(db)>      the sync's schema tracker: one shadow schema per
 *                                            source database (dm_tracker_schema_prefix)
 */
#ifndef DMHOST_TASK_META_H
#define DMHOST_TASK_META_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum dm_task_meta_table {
  DM_META_LOADER_CHECKPOINT,
  DM_META_LOADER_KEYS,
  DM_META_SYNCER_CHECKPOINT,
  DM_META_ONLINEDDL,
  DM_META_SYNCER_XA,
  DM_META_VALIDATOR_CHECKPOINT,
  DM_META_VALIDATOR_PENDING_CHANGE,
  DM_META_VALIDATOR_ERROR_CHANGE,
  DM_META_TABLE_COUNT
} dm_task_meta_table;

/* The longest table name MariaDB takes (64) and the room a prefix needs with its NUL. */
#define DM_META_NAME_MAX 64
#define DM_TRACKER_PREFIX_LEN 18 /* "_dmt_" + 12 hex digits + "_" */

/* Table `which` of task `task` (its name in the meta-schema, unquoted) into out[len]. 0, or -1
 * when the name would not fit out or pass MariaDB's 64 characters. */
int dm_task_meta_table_name(const char *task, dm_task_meta_table which, char *out, size_t len);

/* The prefix of every shadow schema of the tracker of (task, source) into out[len] (at least
 * DM_TRACKER_PREFIX_LEN + 1): "_dmt_" and 12 hex digits of the hash of the pair, then "_". Names
 * with this prefix are that subtask's and no other's (up to the hash's 48 bits). 0, or -1 when out
 * is too small. */
int dm_tracker_schema_prefix(const char *task, const char *source, char *out, size_t len);

/* The 64-bit hash behind the tracker's names (FNV-1a over 8-byte words, then a final mix): fast on
 * short keys; the sync unit's hash maps use it too. Not for anything an attacker may choose to
 * collide where that matters. */
uint64_t dm_hash64(const void *p, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* DMHOST_TASK_META_H */
