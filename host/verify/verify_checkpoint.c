/* A running task compared at its sync's checkpoint (--at-checkpoint; dmctl verify of a running
 * task). Per chunk: the source's checksum in a fresh consistent snapshot whose binlog position P
 * MariaDB gives (binlog_snapshot_file/position, no lock), then a wait until the global row of the
 * task's `<meta>`.`<task>_syncer_checkpoint` for this source is at or past P (every change before
 * it is applied on the target, docs/sync.md), then the target's checksum in a snapshot taken after
 * that. The target then holds at least everything the source's snapshot holds; a row written
 * again after P may still differ, so a differing chunk, and then its differing rows, are checked
 * again with fresh snapshots (verify.c) before anything is reported. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dmhost/task_meta.h"
#include "verify_internal.h"

static int vf_cp_read(vf_run *r, dm_position *p, dm_error *err);

int vf_cp_prepare(vf_run *r, dm_error *err) {
  char table[DM_META_NAME_MAX + 1], qs[DM_DB_QUOTED_IDENT_MAX + 1], qt[DM_DB_QUOTED_IDENT_MAX + 1];
  const char *meta =
      r->task->meta_schema && r->task->meta_schema[0] ? r->task->meta_schema : "dm_meta";
  if (dm_task_meta_table_name(r->task->name, DM_META_SYNCER_CHECKPOINT, table, sizeof table) < 0) {
    dm_error_set(err, DM_ERR_CONFIG_INVALID, NULL,
                 "verify: task name %s is too long for its checkpoint table", r->task->name);
    return -1;
  }
  snprintf(r->cp_table, sizeof r->cp_table, "%s.%s", dm_db_quoted(meta, qs, sizeof qs),
           dm_db_quoted(table, qt, sizeof qt));
  /* no checkpoint table: the task's sync never ran against this target, nothing to wait for */
  dm_position cp;
  if (vf_cp_read(r, &cp, err) < 0) {
    if (mysql_errno(r->target) == 1146 /* ER_NO_SUCH_TABLE */)
      dm_error_set(err, DM_ERR_VERIFY_LAG, NULL,
                   "verify: --at-checkpoint: the target has no sync checkpoint %s of task %s (its "
                   "sync never ran there); verify a stopped task without --at-checkpoint",
                   r->cp_table, r->task->name);
    return -1;
  }
  return 0;
}

/* The global checkpoint row of this source: 1 read into *p, 0 none yet, -1 with *err. Read on
 * the target outside any snapshot (autocommit: the latest committed row). */
static int vf_cp_read(vf_run *r, dm_position *p, dm_error *err) {
  dm_buf q = {0};
  dm_buf_printf(
      &q, "SELECT `binlog_name`, `binlog_pos`, `binlog_gtid` FROM %s WHERE `id` = ", r->cp_table);
  vf_sql_literal(&q, r->target, r->src->source_id, strlen(r->src->source_id), false);
  dm_buf_puts(&q, " AND `cp_schema` = '' AND `cp_table` = ''");
  int rc = q.oom ? -1 : vf_sql_query(r->target, DM_DB_TARGET, q.p, "reading the checkpoint", err);
  dm_buf_free(&q);
  if (rc < 0) {
    if (!err->code)
      dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "verify: out of memory");
    return -1;
  }
  MYSQL_RES *res = mysql_store_result(r->target);
  MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
  memset(p, 0, sizeof *p);
  if (row) {
    dm_strlcpy(p->name, row[0] ? row[0] : "", sizeof p->name);
    p->pos = row[1] ? strtoull(row[1], NULL, 10) : 0;
    dm_strlcpy(p->gtid, row[2] ? row[2] : "", sizeof p->gtid);
  }
  mysql_free_result(res);
  return row ? 1 : 0;
}

/* The GTID set of the source's snapshot (BINLOG_GTID_POS of its position), for a checkpoint row
 * that carries a GTID set and no file name. 0, or -1 (then file and position are compared). */
static int vf_cp_snapshot_gtid(vf_run *r, dm_position *at) {
  dm_buf q = {0};
  dm_buf_puts(&q, "SELECT BINLOG_GTID_POS(");
  vf_sql_literal(&q, r->source, at->name, strlen(at->name), false);
  dm_buf_printf(&q, ", %llu)", (unsigned long long)at->pos);
  int rc = q.oom ? -1 : mysql_query(r->source, q.p);
  dm_buf_free(&q);
  MYSQL_RES *res = rc == 0 ? mysql_store_result(r->source) : NULL;
  MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
  rc = row && row[0] ? 0 : -1;
  if (rc == 0)
    dm_strlcpy(at->gtid, row[0], sizeof at->gtid);
  mysql_free_result(res);
  return rc;
}

/* Is the checkpoint cp at or past the snapshot at? By file index and offset when the row names a
 * file (the sync keeps the source's names and offsets, relay or not), else by GTID set. */
static bool vf_cp_reached(vf_run *r, const dm_position *cp, dm_position *at) {
  if (cp->name[0])
    return dm_position_compare_file(cp, at) >= 0;
  if (!cp->gtid[0])
    return false;
  if (!at->gtid[0] && vf_cp_snapshot_gtid(r, at) < 0)
    return false;
  return dm_gtid_set_contains(cp->gtid, at->gtid) == 1;
}

static void vf_sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static int vf_cp_lag(vf_run *r, const dm_position *at, const dm_position *cp, bool row, double wait,
                     dm_error *err) {
  dm_error_set(err, DM_ERR_VERIFY_LAG, NULL,
               "verify: not compared: the sync of task %s did not reach the source's position "
               "%s:%llu within %.0f s (its checkpoint: %s%s%llu)",
               r->task->name, at->name, (unsigned long long)at->pos, wait,
               row ? cp->name : "no row in ", row ? ":" : r->cp_table,
               row ? (unsigned long long)cp->pos : 0ULL);
  return -1;
}

int vf_cp_align(vf_run *r, dm_error *err) {
  double wait = r->opts->checkpoint_wait_s > 0 ? r->opts->checkpoint_wait_s
                                               : DMH_VERIFY_CHECKPOINT_WAIT_DEFAULT;
  dm_position at = {0}, cp = {0};
  unsigned long long pos = 0;
  /* the source first: its snapshot and where it sits in the binlog */
  if (mysql_query(r->source, "COMMIT") != 0 || vf_snapshot(r->source, DM_DB_SOURCE, err) < 0) {
    if (!err->code)
      dm_db_error(r->source, DM_DB_SOURCE, err, DM_ERR_VERIFY_SNAPSHOT, "verify: COMMIT");
    return -1;
  }
  vf_snapshot_position(r->source, at.name, sizeof at.name, &pos);
  at.pos = pos;
  if (!at.name[0]) {
    dm_error_set(err, DM_ERR_VERIFY_SNAPSHOT, NULL,
                 "verify: the source gives no binlog_snapshot_file (not MariaDB, or no binlog): "
                 "a running task cannot be compared at its checkpoint");
    return -1;
  }
  /* the target ends its snapshot: the polls below read the latest committed row */
  if (mysql_query(r->target, "COMMIT") != 0) {
    dm_db_error(r->target, DM_DB_TARGET, err, DM_ERR_VERIFY_SNAPSHOT, "verify: COMMIT");
    return -1;
  }
  double until = vf_now() + wait;
  long nap = 2;
  int row = 0;
  for (;;) {
    if (vf_cancelled(r, err))
      return -1;
    if (__atomic_load_n(r->lagged, __ATOMIC_RELAXED))
      return vf_cp_lag(r, &at, &cp, row > 0, wait, err);
    if ((row = vf_cp_read(r, &cp, err)) < 0)
      return -1;
    if (row && vf_cp_reached(r, &cp, &at))
      break;
    if (vf_now() >= until) {
      /* the other tables would wait as long for nothing: they fail at once */
      __atomic_store_n(r->lagged, 1, __ATOMIC_RELAXED);
      return vf_cp_lag(r, &at, &cp, row > 0, wait, err);
    }
    vf_sleep_ms(nap); /* the sync commits a batch every batch-ms: poll fast, then less often */
    nap = nap < 50 ? nap * 2 : 50;
  }
  /* every change before P is committed on the target: a snapshot now holds them */
  return vf_snapshot(r->target, DM_DB_TARGET, err);
}

void vf_cp_note(vf_run *r) {
  dm_error e;
  r->has_cp = vf_cp_prepare(r, &e) == 0 && vf_cp_read(r, &r->sync_cp, &e) == 1;
}

/* `k1` = v1 AND `k2` = v2 of the row's key. */
void vf_cp_key_cond(vf_run *r, const vf_table *t, char **vals, unsigned long *lens) {
  dm_buf *b = r->collect;
  char q[DM_DB_QUOTED_IDENT_MAX + 1];
  dm_buf_puts(b, r->collected ? " OR (" : "(");
  for (int i = 0; i < t->n_key; i++) {
    int c = t->key[i];
    dm_buf_printf(b, "%s%s = ", i ? " AND " : "", dm_db_quoted(t->cols[c].name, q, sizeof q));
    vf_sql_literal(b, r->source, vals[c], lens[c], t->cols[c].binary);
  }
  dm_buf_puts(b, ")");
  r->collected++;
}
