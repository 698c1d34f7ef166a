/*
 * Pessimistic shard DDL, the sync unit's side (sync_shard.c; docs/shard.md "Pessimistic mode").
 * u->shard is NULL when the task's shard-mode is none: every function then does nothing.
 */
#ifndef DMHOST_SYNC_SHARD_H
#define DMHOST_SYNC_SHARD_H

#include <mysql.h>
#include <stdbool.h>
#include <stdint.h>

#include "sync.h"
#include "sync_ddl.h"

typedef struct sync_shard sync_shard;

/* *out NULL when the task's shard-mode is none. -1 with *err: a mode this unit cannot do, or a
 * host without the coordinator's services. */
int sync_shard_new(sync_unit *u, sync_shard **out, dm_error *err);
void sync_shard_free(sync_shard *s);
/* At the start: the held tables from their checkpoint rows (over tc; `first`: the sync's first
 * start, such rows of an earlier run are deleted), the members from the source's tables (over
 * sc), each group reported to the host. */
int sync_shard_start(sync_shard *s, MYSQL *sc, MYSQL *tc, bool first, dm_error *err);
/* The lowest position a held table still needs read again (held or resync rows); false: none.
 * The relay must keep its files from there. */
bool sync_shard_lowest(const sync_shard *s, dm_position *low);
/* Is db.table a member of a shard group (an allowed table)? */
bool sync_shard_member(sync_shard *s, const char *db, const char *table);
/* Does the main stream drop db.table's row events (held at a DDL, or waiting for its re-sync)? */
bool sync_shard_skips(const sync_shard *s, const char *db, const char *table);

/* A statement of a DDL event kept after filters and routes (sync_ddl_apply.c). */
typedef struct sync_ddl_kept {
  sync_ddl_kind kind;
  bool moves; /* RENAME TABLE, ALTER TABLE ... RENAME TO */
  sync_ddl_name subject;
} sync_ddl_kept;

#define SYNC_SHARD_PLAN_MAX 64
/* What a DDL event does to the groups. */
typedef struct sync_shard_plan_t {
  int hold; /* the member held at this DDL (its statements are all of offs), or -1 */
  uint32_t n_hold_stmts;
  int n_leave, n_join; /* DROP TABLE (not run), CREATE TABLE (run) of members */
  sync_ddl_name leave[SYNC_SHARD_PLAN_MAX], join[SYNC_SHARD_PLAN_MAX];
  bool leave_schema; /* DROP DATABASE leave_db: not run, its members leave */
  char leave_db[SYNC_NAME_MAX];
} sync_shard_plan_t;

/* Judges the event's kept statements (kept[i] for text + offs[i]); removes from offs the ones
 * that must not run on the target (DROP and TRUNCATE of members, DROP DATABASE). -1 with *err:
 * DM_ERR_SYNC_SHARD_MULTI (two members), DM_ERR_SYNC_UNSUPPORTED_STMT (a member renamed, or a
 * held table's second DDL). */
int sync_shard_plan(sync_shard *s, const char *at, const sync_ddl_kept *kept, uint32_t *offs,
                    uint32_t *n, sync_shard_plan_t *plan, dm_error *err);
/* The statements for the checkpoint transaction that moves past the event: the held table's row,
 * rows of tables that left deleted. -1: no memory. */
int sync_shard_plan_sql(sync_shard *s, MYSQL *c, const sync_shard_plan_t *plan, const char *at,
                        const char *text, const uint32_t *offs, uint32_t n,
                        const dm_position *after, dm_buf *q);
/* After that transaction committed: the state follows, changed groups are reported. */
int sync_shard_plan_done(sync_shard *s, const sync_shard_plan_t *plan, const char *at,
                         const char *text, const uint32_t *offs, uint32_t n,
                         const dm_position *after, dm_error *err);

/* A group whose every member is held at the same statements: its index, -1 none, -2 with *err
 * (two members hold different statements). */
int sync_shard_ready(sync_shard *s, dm_error *err);
/* The source is ready for group g at `block` (everything before it applied): puts its info, waits
 * for the operation, runs it (exec, under the DDL mark; `replay_mark` is the mark the checkpoint
 * held at the start), moves the rows to `resync` and reports done. 1 done, 0 stopped, -1 error. */
int sync_shard_resolve(sync_shard *s, MYSQL *tc, int g, const dm_position *block,
                       const char *replay_mark, dm_error *err);
/* At the start: groups whose rows are at `resync` report their operation done again. */
int sync_shard_redone(sync_shard *s, dm_error *err);

/* Re-sync: where it starts (the lowest row at `resync`); false when nothing is to re-sync. */
bool sync_shard_resync_from(const sync_shard *s, dm_position *from);
/* Is a row event of db.table at file:offset one the re-sync applies? */
bool sync_shard_resync_wants(const sync_shard *s, const char *db, const char *table,
                             const char *file, uint64_t offset);
/* Statements moving the `resync` rows behind `to` there (for the batch's transaction); then
 * sync_shard_resync_moved once it committed. */
int sync_shard_resync_move_sql(sync_shard *s, MYSQL *c, const dm_position *to, dm_buf *q);
void sync_shard_resync_moved(sync_shard *s, const dm_position *to);
/* The block point is reached: the `resync` rows are deleted. */
int sync_shard_resync_end(sync_shard *s, MYSQL *c, dm_error *err);

/* sync_resync.c: the re-sync up to `block` on a stream of its own (the caller's main stream is
 * closed). 1 done (rows deleted), 0 stopped (the rows say how far), -1 with *err. */
int sync_resync(sync_unit *u, MYSQL *tc, const dm_position *block, dm_error *err);

/* ---- optimistic mode (sync_shard_opt.c) ---- */
bool sync_shard_optimistic(const sync_shard *s);
/* Does a table wait for its release (held in optimistic mode)? The sync then settles at quiet
 * points to ask for it. */
bool sync_shard_opt_waiting(const sync_shard *s);
/* The member DDL of plan->hold (its routed statements text + offs[0..*n)), before the DDL mark:
 * puts the table's info (before/after from the tracker on conn, with the scratch check) and waits
 * for its operation. Exec: plan->hold becomes -1 (the statements run as any DDL). Skip: also
 * *n = 0 (nothing runs). Conflict: the table stays held (plan unchanged). The caller reports *op
 * done once the checkpoint moved past the event. Operations for other tables met meanwhile are
 * handled (opt_other). 1, or -1 with *err (stopped: resumable). */
int sync_shard_opt_ddl(sync_shard *s, MYSQL *conn, MYSQL *tc, const sync_ddl *d,
                       sync_shard_plan_t *plan, const char *text, const uint32_t *offs, uint32_t *n,
                       const dm_position *after, dm_shard_op *op, dm_error *err);
/* At the start: every member gets a shadow in the tracker (seeded from the target where it has
 * none), and operations left from before are settled. 0 or -1. */
int sync_shard_opt_start(sync_shard *s, MYSQL *tc, dm_error *err);
/* At a quiet point: every operation waiting for this source (a held table released: its row
 * moves to `resync`; one the checkpoint covers already: reported done). 0 or -1. */
int sync_shard_opt_settle(sync_shard *s, MYSQL *tc, dm_error *err);

#endif /* DMHOST_SYNC_SHARD_H */
