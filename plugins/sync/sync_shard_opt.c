/*
 * Optimistic shard DDL, the sync unit's side (docs/shard.md "Optimistic mode"): no barrier. At a
 * member's DDL the sync puts the table's info {ddls, before, after} (sync_tracker_before_after:
 * the structures and the scratch check) and waits for that table's operation only: exec runs the
 * statements on the target as any DDL, skip runs nothing, a conflict holds the table exactly as a
 * pessimistic hold does (its checkpoint row `held` in the transaction that moves the global row
 * past the DDL; the main stream drops its rows). A held table is released by an operation that
 * names it (a redirect: skip without a conflict, or unlock -a exec|skip); its row then moves to
 * `resync` and the re-sync of sync_resync.c applies its rows, as in pessimistic mode. The sync
 * asks for such operations at quiet points (sync_shard_opt_settle).
 *
 * Restart: an operation is reported done after the checkpoint moved past the DDL. Operations
 * still pending at the start are reported done when they are for tables that are not held (the
 * checkpoint says what ran: a DDL the checkpoint is still before is read again and its same info
 * put again, which hands the same operation out again, shard_opt_keeper.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sync.h"
#include "sync_shard.h"
#include "sync_shard_internal.h"
#include "sync_tracker.h"

bool sync_shard_optimistic(const sync_shard *s) {
  return s && s->optimistic;
}

bool sync_shard_opt_waiting(const sync_shard *s) {
  if (!s || !s->optimistic)
    return false;
  for (int i = 0; i < s->n; i++)
    if (!s->m[i].gone && s->m[i].state == SHARD_HELD)
      return true;
  return false;
}

/* One transaction: the member's held row to `resync` with the operation's id. */
static int opt_to_resync(sync_shard *s, MYSQL *tc, shard_member *m, const dm_shard_op *op,
                         dm_error *err) {
  sync_unit *u = s->u;
  dm_buf q = {0};
  if (dm_buf_printf(&q,
                    "UPDATE %s SET `table_info` = JSON_SET(`table_info`, '$.shard.state', "
                    "'resync', '$.shard.op', %llu)",
                    u->cp_table, (unsigned long long)op->op_id) < 0 ||
      sync_shard_where(s, tc, &q, m) < 0) {
    dm_buf_free(&q);
    return sync_shard_nomem(s, err);
  }
  int rc = sync_db_exec(u, tc, q.p, q.len, "sync: cannot write the checkpoint", err);
  dm_buf_free(&q);
  if (rc < 0) {
    if (err->code != DM_ERR_DB_CONNECT)
      err->code = DM_ERR_CHECKPOINT;
    return -1;
  }
  m->state = SHARD_RESYNC;
  m->op_id = op->op_id;
  return 0;
}

/* An operation for another table than the one a DDL waits for, or found at a quiet point: a
 * released held table moves to `resync` (after running the operation's statements for unlock -a
 * exec); any other is one the checkpoint already covers. Reported done either way. */
static int opt_other(sync_shard *s, MYSQL *tc, const dm_shard_op *op, dm_error *err) {
  sync_unit *u = s->u;
  shard_member *m = op->schema && op->table ? sync_shard_find(s, op->schema, op->table) : NULL;
  if (m && m->state == SHARD_HELD && !op->conflict) {
    if (op->action == DM_SHARD_EXEC && sync_shard_exec(s, tc, op, false, &s->g[m->group], err) < 0)
      return -1;
    if (opt_to_resync(s, tc, m, op, err) < 0)
      return -1;
    u->host->logf(u->ctx, DM_LOG_INFO,
                  "sync: shard lock %s: `%s`.`%s` released (%s): its rows since its DDL at %s "
                  "are re-synced",
                  op->lock_id, m->db, m->name,
                  op->action == DM_SHARD_EXEC ? "its DDL ran by hand" : "redirect", m->ddl_at);
  }
  return u->host->shard_done(u->ctx, op, err);
}

int sync_shard_opt_ddl(sync_shard *s, MYSQL *conn, MYSQL *tc, const sync_ddl *d,
                       sync_shard_plan_t *plan, const char *text, const uint32_t *offs, uint32_t *n,
                       const dm_position *after, dm_shard_op *op, dm_error *err) {
  sync_unit *u = s->u;
  shard_member *m = &s->m[plan->hold];
  shard_group *g = &s->g[m->group];
  dm_buf before = {0}, aft = {0};
  const char **ddls = calloc(*n + 1, sizeof *ddls);
  int rc = -1;
  if (!ddls) {
    sync_shard_nomem(s, err);
    goto out;
  }
  for (uint32_t i = 0; i < *n; i++)
    ddls[i] = text + offs[i];
  int got = sync_tracker_before_after(u->tracker, conn, d, m->db, m->name, &before, &aft, err);
  if (got < 0)
    goto out;
  if (got == 1) {
    u->host->error_make(u->ctx, err, DM_ERR_SYNC_NO_SCHEMA, NULL,
                        "sync: optimistic shard DDL of `%s`.`%s`: the schema tracker has no "
                        "structure of the table to send to lock %s",
                        m->db, m->name, g->lock);
    goto out;
  }
  dm_shard_table t = {.schema = m->db, .table = m->name};
  dm_shard_info info = {.target_schema = g->tdb,
                        .target_table = g->tname,
                        .ddls = ddls,
                        .n_ddls = *n,
                        .tables = &t,
                        .n_tables = 1,
                        .schema = m->db,
                        .table = m->name,
                        .before = before.p,
                        .after = aft.p,
                        .pos = *after};
  if (u->host->shard_put(u->ctx, &info, err) < 0)
    goto out;
  for (;;) {
    memset(op, 0, sizeof *op);
    int w = u->host->shard_wait(u->ctx, g->tdb, g->tname, op, err);
    if (w < 0)
      goto out;
    if (w == 0) {
      u->host->error_make(u->ctx, err, DM_ERR_SYNC_DDL, NULL,
                          "sync: stopped while waiting for lock %s's answer to the DDL of "
                          "`%s`.`%s`",
                          g->lock, m->db, m->name);
      err->resumable = 1;
      goto out;
    }
    if (op->table && strcmp(op->table, m->name) == 0 && op->schema &&
        strcmp(op->schema, m->db) == 0)
      break;
    if (opt_other(s, tc, op, err) < 0)
      goto out;
  }
  if (op->conflict) {
    u->host->logf(u->ctx, DM_LOG_WARN, "sync: `%s`.`%s` is held: %s", m->db, m->name,
                  op->message ? op->message : "");
  } else {
    plan->hold = -1; /* exec or skip: the table goes on */
    plan->n_hold_stmts = 0;
    if (op->action == DM_SHARD_SKIP) {
      u->host->logf(u->ctx, DM_LOG_INFO,
                    "sync: shard lock %s: the DDL of `%s`.`%s` is skipped (the target accepts "
                    "its rows already, or waits for the other tables)",
                    op->lock_id, m->db, m->name);
      *n = 0;
    }
  }
  rc = 1;
out:
  free(ddls);
  dm_buf_free(&before);
  dm_buf_free(&aft);
  return rc;
}

int sync_shard_opt_start(sync_shard *s, MYSQL *tc, dm_error *err) {
  if (!s || !s->optimistic)
    return 0;
  for (int i = 0; i < s->n; i++)
    if (!s->m[i].gone && sync_tracker_track(s->u->tracker, tc, s->m[i].db, s->m[i].name, err) < 0)
      return -1;
  return sync_shard_opt_settle(s, tc, err);
}

int sync_shard_opt_settle(sync_shard *s, MYSQL *tc, dm_error *err) {
  if (!s || !s->optimistic)
    return 0;
  sync_unit *u = s->u;
  for (int g = 0; g < s->ng; g++) {
    for (;;) {
      dm_shard_op op;
      memset(&op, 0, sizeof op);
      int rc = u->host->shard_poll(u->ctx, s->g[g].tdb, s->g[g].tname, &op, err);
      if (rc < 0)
        return -1;
      if (rc == 0)
        break;
      if (opt_other(s, tc, &op, err) < 0)
        return -1;
    }
  }
  return 0;
}
