/*
 * Pessimistic shard DDL, a ready group's operation and the re-sync's checkpoint rows (the rest of
 * sync_shard.c; docs/shard.md "Pessimistic mode", steps 4, 6 and 7).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sync.h"
#include "sync_ddl.h"
#include "sync_shard_internal.h"

/* ---- a ready group: put, wait, exec or skip, done ---- */

/* the same statements in the same order, each compared in its canonical text (dm_db_ddl_same:
 * one DDL whichever tool or person wrote it, as the coordinator compares sources) */
static bool shard_same_ddls(const shard_member *a, const shard_member *b) {
  if (a->n_ddls != b->n_ddls)
    return false;
  const char *x = a->ddls.p, *y = b->ddls.p;
  for (uint32_t i = 0; i < a->n_ddls; i++, x += strlen(x) + 1, y += strlen(y) + 1)
    if (!dm_db_ddl_same(x, y))
      return false;
  return true;
}

int sync_shard_ready(sync_shard *s, dm_error *err) {
  if (!s || s->n_held == 0 || s->optimistic) /* optimistic: no barrier (sync_shard_opt.c) */
    return -1;
  for (int g = 0; g < s->ng; g++) {
    const shard_member *first = NULL;
    bool ready = true;
    int n = 0;
    for (int i = 0; i < s->n && ready; i++) {
      const shard_member *m = &s->m[i];
      if (m->gone || m->group != g)
        continue;
      n++;
      if (m->state != SHARD_HELD) {
        ready = false;
        continue;
      }
      if (!first) {
        first = m;
      } else if (!shard_same_ddls(first, m)) {
        s->u->host->error_make(
            s->u->ctx, err, DM_ERR_SHARD_DDL_DIFF, NULL,
            "sync: shard lock %s: `%s`.`%s` (DDL at %s) and `%s`.`%s` (DDL at %s) of this "
            "source hold different statements; every shard of a group must run the same DDL",
            s->g[g].lock, first->db, first->name, first->ddl_at, m->db, m->name, m->ddl_at);
        return -2;
      }
    }
    if (ready && n > 0)
      return g;
  }
  return -1;
}

/* Runs the operation's statements on the target, under the DDL mark. */
int sync_shard_exec(sync_shard *s, MYSQL *tc, const dm_shard_op *op, bool replay,
                    const shard_group *g, dm_error *err) {
  sync_unit *u = s->u;
  char mark[DM_POSITION_NAME_MAX + 24];
  snprintf(mark, sizeof mark, "shard:%" PRIu64, op->op_id);
  if (sync_cp_mark_ddl(u, tc, mark, err) < 0)
    return -1;
  MYSQL *c = sync_db_connect_ddl(u, err);
  if (!c)
    return -1;
  int rc = 0;
  uint32_t already = 0;
  for (uint32_t i = 0; i < op->n_ddls && rc == 0; i++) {
    const char *sql = op->ddls[i];
    if (mysql_real_query(c, sql, (unsigned long)strlen(sql)) == 0) {
      MYSQL_RES *res = mysql_store_result(c);
      if (res)
        mysql_free_result(res);
      continue;
    }
    /* "already there" answers count as done: after a restart between the DDL and the rows'
     * transaction, and as DM's ignoreDDLError does for a lock that opened again after a forced
     * unlock (its DDL ran for the sources that had arrived) */
    unsigned code = mysql_errno(c);
    if (sync_ddl_already_done(code)) {
      u->host->logf(u->ctx, DM_LOG_WARN,
                    "sync: shard lock %s: the target has its DDL already (%s; %s): counted as "
                    "done",
                    op->lock_id, mysql_error(c),
                    replay ? "it ran before the restart" : "an earlier lock ran it");
      already++;
      continue;
    }
    dm_buf what = {0};
    dm_buf_printf(&what, "sync: shard lock %s: the DDL failed on `%s`.`%s`: ", op->lock_id, g->tdb,
                  g->tname);
    sync_ddl_redact(sql, strlen(sql), 0, 300, &what);
    sync_db_error(u, c, what.p ? what.p : "sync: a shard DDL failed", err);
    if (!err->resumable && err->code == DM_ERR_DB_QUERY)
      err->code = DM_ERR_SYNC_DDL;
    dm_buf_free(&what);
    rc = -1;
  }
  sync_db_close(u, c);
  if (rc == 0 && already < op->n_ddls)
    u->host->logf(u->ctx, DM_LOG_INFO,
                  "sync: shard lock %s: executed %" PRIu32 " DDL(s) on `%s`.`%s` (the owner's "
                  "exec)",
                  op->lock_id, op->n_ddls - already, g->tdb, g->tname);
  return rc;
}

/* One transaction: the group's held rows to `resync` (with the operation's id), the mark off. */
static int shard_to_resync(sync_shard *s, MYSQL *tc, int g, const dm_shard_op *op,
                           const dm_position *block, dm_error *err) {
  sync_unit *u = s->u;
  dm_buf q = {0};
  /* worker 0's row is at the block point already: setting it again fences the transaction */
  if (dm_buf_puts(&q, "START TRANSACTION;") < 0 || sync_cp_worker_sql(u, tc, 0, block, 0, &q) < 0)
    goto nomem;
  for (int i = 0; i < s->n; i++) {
    const shard_member *m = &s->m[i];
    if (m->gone || m->group != g || m->state != SHARD_HELD)
      continue;
    if (dm_buf_printf(&q,
                      "UPDATE %s SET `table_info` = JSON_SET(`table_info`, '$.shard.state', "
                      "'resync', '$.shard.op', %" PRIu64 ")",
                      u->cp_table, op->op_id) < 0 ||
        sync_shard_where(s, tc, &q, m) < 0 || dm_buf_putc(&q, ';') < 0)
      goto nomem;
  }
  if (dm_buf_printf(&q, "UPDATE %s SET `table_info` = '{}' WHERE `id` = ", u->cp_table) < 0 ||
      sync_shard_lit(tc, &q, u->source_id) < 0 ||
      dm_buf_puts(&q, " AND `cp_schema` = '' AND `cp_table` = '';COMMIT") < 0)
    goto nomem;
  int rc = sync_db_exec(u, tc, q.p, q.len, "sync: cannot write the checkpoint", &*err);
  if (rc < 0) {
    mysql_query(tc, "ROLLBACK");
    if (err->code != DM_ERR_DB_CONNECT)
      err->code = DM_ERR_CHECKPOINT;
  }
  dm_buf_free(&q);
  if (rc < 0)
    return -1;
  for (int i = 0; i < s->n; i++) {
    shard_member *m = &s->m[i];
    if (!m->gone && m->group == g && m->state == SHARD_HELD) {
      m->state = SHARD_RESYNC;
      m->op_id = op->op_id;
    }
  }
  return 0;
nomem:
  dm_buf_free(&q);
  return sync_shard_nomem(s, err);
}

int sync_shard_resolve(sync_shard *s, MYSQL *tc, int g, const dm_position *block,
                       const char *replay_mark, dm_error *err) {
  sync_unit *u = s->u;
  shard_group *grp = &s->g[g];
  int n = 0;
  const shard_member *first = NULL;
  for (int i = 0; i < s->n; i++)
    if (!s->m[i].gone && s->m[i].group == g) {
      n++;
      if (!first)
        first = &s->m[i];
    }
  dm_shard_table *tables = calloc((size_t)n + 1, sizeof *tables);
  const char **ddls = calloc((size_t)first->n_ddls + 1, sizeof *ddls);
  if (!tables || !ddls) {
    free(tables);
    free(ddls);
    return sync_shard_nomem(s, err);
  }
  n = 0;
  for (int i = 0; i < s->n; i++)
    if (!s->m[i].gone && s->m[i].group == g)
      tables[n++] = (dm_shard_table){.schema = s->m[i].db, .table = s->m[i].name};
  const char *d = first->ddls.p;
  for (uint32_t k = 0; k < first->n_ddls; k++, d += strlen(d) + 1)
    ddls[k] = d;
  dm_shard_info info = {.target_schema = grp->tdb,
                        .target_table = grp->tname,
                        .ddls = ddls,
                        .n_ddls = first->n_ddls,
                        .tables = tables,
                        .n_tables = (uint32_t)n,
                        .pos = *block};
  int rc = u->host->shard_put(u->ctx, &info, err);
  free(tables);
  free(ddls);
  if (rc < 0)
    return -1;
  char buf[DM_POSITION_NAME_MAX + 32];
  u->host->logf(u->ctx, DM_LOG_INFO,
                "sync: shard lock %s: all %d table(s) of this source arrived; the source waits "
                "at %s for the lock's operation",
                grp->lock, n, dm_position_format(block, buf, sizeof buf));
  dm_shard_op op;
  memset(&op, 0, sizeof op);
  sync_metrics_resolving(u, true); /* as DM: from the info put until the operation (or a stop) */
  rc = u->host->shard_wait(u->ctx, grp->tdb, grp->tname, &op, err);
  sync_metrics_resolving(u, false);
  if (rc <= 0)
    return rc;
  if (op.action == DM_SHARD_EXEC) {
    char mark[DM_POSITION_NAME_MAX + 24];
    snprintf(mark, sizeof mark, "shard:%" PRIu64, op.op_id);
    bool replay = replay_mark && strcmp(replay_mark, mark) == 0;
    if (sync_shard_exec(s, tc, &op, replay, grp, err) < 0)
      return -1;
  } else {
    u->host->logf(u->ctx, DM_LOG_INFO,
                  "sync: shard lock %s: skip (another source runs the DDL, or the user skipped "
                  "it)",
                  op.lock_id);
  }
  if (shard_to_resync(s, tc, g, &op, block, err) < 0)
    return -1;
  if (u->host->shard_done(u->ctx, &op, err) < 0)
    return -1;
  return 1;
}

int sync_shard_redone(sync_shard *s, dm_error *err) {
  sync_unit *u = s->u;
  for (int g = 0; g < s->ng; g++) {
    const shard_member *m = NULL;
    for (int i = 0; i < s->n && !m; i++)
      if (!s->m[i].gone && s->m[i].group == g && s->m[i].state == SHARD_RESYNC)
        m = &s->m[i];
    if (!m)
      continue;
    dm_shard_op op = {.op_id = m->op_id, .action = DM_SHARD_SKIP};
    dm_strlcpy(op.lock_id, s->g[g].lock, sizeof op.lock_id);
    if (u->host->shard_done(u->ctx, &op, err) < 0)
      return -1;
  }
  return 0;
}

/* ---- re-sync ---- */

bool sync_shard_lowest(const sync_shard *s, dm_position *low) {
  bool any = false;
  for (int i = 0; s && s->n_held && i < s->n; i++) {
    const shard_member *m = &s->m[i];
    if (m->gone || m->state == SHARD_RUN)
      continue;
    if (!any || dm_position_compare_file(&m->pos, low) < 0)
      *low = m->pos;
    any = true;
  }
  return any;
}

bool sync_shard_resync_from(const sync_shard *s, dm_position *from) {
  bool any = false;
  for (int i = 0; s && i < s->n; i++) {
    const shard_member *m = &s->m[i];
    if (m->gone || m->state != SHARD_RESYNC)
      continue;
    if (!any || dm_position_compare_file(&m->pos, from) < 0)
      *from = m->pos;
    any = true;
  }
  return any;
}

bool sync_shard_resync_wants(const sync_shard *s, const char *db, const char *table,
                             const char *file, uint64_t offset) {
  for (int i = 0; i < s->n; i++) {
    const shard_member *m = &s->m[i];
    if (m->gone || m->state != SHARD_RESYNC || strcmp(m->name, table) != 0 ||
        strcmp(m->db, db) != 0)
      continue;
    dm_position at = {0};
    dm_strlcpy(at.name, file, sizeof at.name);
    at.pos = offset;
    return dm_position_compare_file(&at, &m->pos) >= 0;
  }
  return false;
}

int sync_shard_resync_move_sql(sync_shard *s, MYSQL *c, const dm_position *to, dm_buf *q) {
  for (int i = 0; i < s->n; i++) {
    const shard_member *m = &s->m[i];
    if (m->gone || m->state != SHARD_RESYNC || dm_position_compare_file(&m->pos, to) >= 0)
      continue;
    if (dm_buf_printf(q, "UPDATE %s SET `binlog_name` = ", s->u->cp_table) < 0 ||
        sync_shard_lit(c, q, to->name) < 0 ||
        dm_buf_printf(q, ", `binlog_pos` = %" PRIu64 ", `binlog_gtid` = ", to->pos) < 0 ||
        sync_shard_lit(c, q, to->gtid) < 0 || sync_shard_where(s, c, q, m) < 0 ||
        dm_buf_putc(q, ';') < 0)
      return -1;
  }
  return 0;
}

void sync_shard_resync_moved(sync_shard *s, const dm_position *to) {
  for (int i = 0; i < s->n; i++) {
    shard_member *m = &s->m[i];
    if (!m->gone && m->state == SHARD_RESYNC && dm_position_compare_file(&m->pos, to) < 0)
      m->pos = *to;
  }
}

int sync_shard_resync_end(sync_shard *s, MYSQL *c, dm_error *err) {
  sync_unit *u = s->u;
  dm_buf q = {0};
  int rc;
  if (dm_buf_printf(&q, "DELETE FROM %s WHERE `id` = ", u->cp_table) < 0 ||
      sync_shard_lit(c, &q, u->source_id) < 0 ||
      dm_buf_puts(&q, " AND `cp_schema` <> '' AND JSON_UNQUOTE(JSON_EXTRACT(`table_info`, "
                      "'$.shard.state')) = 'resync'") < 0) {
    dm_buf_free(&q);
    return sync_shard_nomem(s, err);
  }
  rc = sync_db_exec(u, c, q.p, q.len, "sync: cannot write the checkpoint", err);
  dm_buf_free(&q);
  if (rc < 0)
    return -1;
  for (int i = 0; i < s->n; i++) {
    shard_member *m = &s->m[i];
    if (m->state == SHARD_RESYNC) {
      m->state = SHARD_RUN;
      s->n_held--;
      dm_buf_reset(&m->ddls);
      m->n_ddls = 0;
    }
  }
  return 0;
}
