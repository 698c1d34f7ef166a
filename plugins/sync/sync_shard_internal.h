/*
 * What sync_shard.c (groups, holds, the checkpoint rows) and sync_shard_op.c (a ready group's
 * operation, the re-sync's rows) share. One thread: the sync's coordinator owns all of it.
 */
#ifndef DMHOST_SYNC_SHARD_INTERNAL_H
#define DMHOST_SYNC_SHARD_INTERNAL_H

#include "sync_shard.h"

enum { SHARD_RUN = 0, SHARD_HELD = 1, SHARD_RESYNC = 2 };

typedef struct shard_member {
  char db[SYNC_NAME_MAX], name[SYNC_NAME_MAX];
  int group; /* index in groups */
  int state;
  dm_position pos;                        /* held/resync: the row's position */
  char ddl_at[DM_POSITION_NAME_MAX + 24]; /* held: "FILE:POS" of its DDL */
  dm_buf ddls;                            /* held: routed statements, each NUL-terminated */
  uint32_t n_ddls;
  uint64_t op_id; /* resync: the operation applied (reported done again after a restart) */
  bool gone;      /* left the group (dropped): kept for its slot only */
} shard_member;

typedef struct shard_group {
  char tdb[SYNC_NAME_MAX], tname[SYNC_NAME_MAX];
  char lock[DM_SHARD_LOCK_ID_MAX];
} shard_group;

struct sync_shard {
  sync_unit *u;
  bool optimistic; /* shard-mode optimistic (sync_shard_opt.c) */
  shard_member *m;
  int n, cap;
  shard_group *g;
  int ng, gcap;
  int n_held; /* members held or at resync: the main stream's quick test */
};

int sync_shard_nomem(sync_shard *s, dm_error *err);
/* A string literal of v for connection c appended to q. -1: no memory. */
int sync_shard_lit(MYSQL *c, dm_buf *q, const char *v);
/* " WHERE" + the member's checkpoint row appended to q. -1: no memory. */
int sync_shard_where(sync_shard *s, MYSQL *c, dm_buf *q, const shard_member *m);

/* The member db.table (not gone), or NULL. */
shard_member *sync_shard_find(sync_shard *s, const char *db, const char *table);
/* Runs the operation's statements on the target, under the DDL mark (sync_shard_op.c). */
int sync_shard_exec(sync_shard *s, MYSQL *tc, const dm_shard_op *op, bool replay,
                    const shard_group *g, dm_error *err);

#endif /* DMHOST_SYNC_SHARD_INTERNAL_H */
