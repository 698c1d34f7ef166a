/* The run of `dmhost verify` (verify.h): one connection per side, each in one consistent snapshot
 * for the whole run, then every table in turn, chunk by chunk. */
#include <mysqld_error.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verify_internal.h"

static MYSQL *vf_connect(const dmh_db_config *db, const char *group, dm_db_side side,
                         dm_error *err) {
  dm_db_connect_opts o = {.who = "verify",
                          .side = side,
                          .connect_timeout_s = 10,
                          .read_timeout_s = 3600, /* a table without key is one long statement */
                          .write_timeout_s = 600,
                          .endpoint_size = (uint32_t)sizeof(dm_db_endpoint)};
  MYSQL *m = dm_db_connect(&db->ep, &o, err);
  if (!m) {
    dmh_db_config_hint(db, group, err);
    return NULL;
  }
  /* one character set on both sides: the same bytes are compared and escaped */
  if (mysql_set_character_set(m, "utf8mb4") != 0) {
    dm_db_error(m, side, err, DM_ERR_DB_CONNECT, "verify: SET NAMES utf8mb4 on the %s",
                side == DM_DB_SOURCE ? "source" : "target");
    mysql_close(m);
    return NULL;
  }
  return m;
}

/* The session and its snapshot: TIMESTAMPs read in UTC on both sides, every statement after it
 * reads the data as it was at START TRANSACTION (InnoDB's consistent read). */
int vf_snapshot(MYSQL *c, dm_db_side side, dm_error *err) {
  static const char *const steps[] = {
      "SET SESSION time_zone = '+00:00'",
      "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ",
      "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY",
  };
  for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
    if (mysql_query(c, steps[i]) != 0) {
      dm_db_error(c, side, err, DM_ERR_VERIFY_SNAPSHOT, "verify: %s on the %s", steps[i],
                  side == DM_DB_SOURCE ? "source" : "target");
      return -1;
    }
  return 0;
}

/* The source's snapshot in its binlog (MariaDB's binlog_snapshot_file/position; "" elsewhere). */
void vf_snapshot_position(MYSQL *c, char *file, size_t len, unsigned long long *pos) {
  file[0] = '\0';
  if (mysql_query(c, "SHOW STATUS LIKE 'binlog_snapshot_%'") != 0)
    return;
  MYSQL_RES *res = mysql_store_result(c);
  MYSQL_ROW row;
  while (res && (row = mysql_fetch_row(res))) {
    if (!row[0] || !row[1])
      continue;
    if (!strcmp(row[0], "Binlog_snapshot_file"))
      dm_strlcpy(file, row[1], len);
    else if (!strcmp(row[0], "Binlog_snapshot_position"))
      *pos = strtoull(row[1], NULL, 10);
  }
  mysql_free_result(res);
}

static bool vf_sum_differs(const vf_sum *a, const vf_sum *b) {
  return a->count != b->count || a->sum != b->sum;
}

/* Both checksums of `where`: 1 they differ, 0 equal, -1 with *err. */
static int vf_chunk_sums(vf_run *r, vf_table *t, const char *where, vf_sum *s, dm_error *err) {
  vf_sum d;
  /* the target computes while the source does */
  int sent = vf_chunk_sum_send(r, t, where, err), rc = sent;
  if (rc == 0)
    rc = vf_chunk_sum_source(r, t, where, s, err);
  if (sent == 0) {
    dm_error later;
    int got = vf_chunk_sum_read(r, t, &d, rc == 0 ? err : &later);
    rc = rc ? rc : got;
  }
  return rc < 0 ? -1 : vf_sum_differs(s, &d);
}

static int vf_oom(dm_error *err) {
  dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "verify: out of memory");
  return -1;
}

/* --at-checkpoint: the rows of a chunk that differed at every check. Each pass diffs the rows of
 * `where` without reporting them, keeping only their keys; the next pass (fresh snapshots, the
 * wait) diffs only those keys; the last pass reports what still differs. A row the sync had
 * simply not applied yet, or that changed again meanwhile, drops out on the way. */
static int vf_recheck_rows(vf_run *r, vf_table *t, const char *chunk, int checks, dm_error *err) {
  dm_buf keys[2] = {{0}, {0}};
  const char *where = chunk;
  int rc = 0;
  for (int pass = 1; rc == 0; pass++) {
    bool last = pass >= checks;
    dm_buf *k = &keys[pass % 2];
    k->len = 0;
    if (k->p)
      k->p[0] = '\0';
    r->collect = last ? NULL : k;
    r->collected = 0;
    rc = vf_diff_keyed(r, t, where, err);
    r->collect = NULL;
    if (rc < 0 || last || r->collected == 0)
      break;
    if (k->oom) {
      rc = vf_oom(err);
      break;
    }
    /* past a few thousand keys the list is longer than the chunk's range: the range again */
    where = r->collected <= 4096 ? k->p : chunk;
    t->rechecks++;
    rc = vf_cp_align(r, err);
  }
  dm_buf_free(&keys[0]);
  dm_buf_free(&keys[1]);
  return rc;
}

/* One chunk (lo, hi]: both checksums, and the rows when they differ. --at-checkpoint: each check
 * at the sync's checkpoint (vf_cp_align), a differing chunk checked again, up to `rechecks` times,
 * before its rows are compared (and they again before they are reported). */
static int vf_one_chunk(vf_run *r, vf_table *t, const vf_bound *lo, const vf_bound *hi,
                        dm_error *err) {
  dm_buf where = {0};
  vf_chunk_where(&where, r->source, t, lo, hi);
  if (where.oom) {
    dm_buf_free(&where);
    return vf_oom(err);
  }
  bool cp = r->opts->at_checkpoint;
  int checks = !cp ? 1 : r->opts->rechecks > 0 ? r->opts->rechecks : DMH_VERIFY_RECHECKS_DEFAULT;
  vf_sum s;
  int rc = 0, differs = 0;
  for (int i = 0; rc == 0 && i < checks; i++) {
    if (i > 0)
      t->rechecks++;
    if (cp && (rc = vf_cp_align(r, err)) < 0)
      break;
    if ((differs = vf_chunk_sums(r, t, where.p, &s, err)) <= 0)
      break;
  }
  if (differs < 0)
    rc = -1;
  if (rc == 0) {
    t->chunks++;
    t->rows += (long long)s.count;
    if (differs) {
      long long before = t->rows_missing + t->rows_extra + t->rows_changed;
      t->diff_chunks++;
      if (cp && t->n_key)
        rc = vf_recheck_rows(r, t, where.p, checks, err);
      else
        rc = t->n_key ? vf_diff_keyed(r, t, where.p, err) : vf_diff_whole(r, t, err);
      /* every row that differed came right on a re-check: the chunk is equal after all */
      if (rc == 0 && cp && t->n_key && t->rows_missing + t->rows_extra + t->rows_changed == before)
        t->diff_chunks--;
    }
  }
  dm_buf_free(&where);
  vf_out_progress(r, t, false);
  return rc;
}

bool vf_cancelled(const vf_run *r, dm_error *err) {
  if (!r->opts->cancel || !__atomic_load_n(r->opts->cancel, __ATOMIC_RELAXED))
    return false;
  dm_error_set(err, DM_ERR_VERIFY_CANCELLED, NULL,
               "verify: cancelled before this table was compared to its end: the daemon is "
               "shutting down");
  return true;
}

static int vf_one_table(vf_run *r, vf_table *t) {
  if (vf_cancelled(r, &t->err) || vf_table_describe(r, t) < 0)
    return -1;
  if (!t->n_key) /* no usable key: the whole table is one chunk */
    return vf_one_chunk(r, t, NULL, NULL, &t->err);
  vf_bound lo = {0}, hi = {0};
  int rc;
  for (;;) {
    if (vf_cancelled(r, &t->err)) { /* a chunk is short: the check between two is soon enough */
      rc = -1;
      break;
    }
    int more = vf_chunk_next(r, t, &lo, &hi, &t->err);
    if (more < 0 || (rc = vf_one_chunk(r, t, &lo, more ? &hi : NULL, &t->err)) < 0) {
      rc = -1;
      break;
    }
    if (!more)
      break;
    vf_bound_free(&lo, t->n_key);
    lo = hi; /* the next chunk starts after this one's last key */
    hi = (vf_bound){0};
  }
  vf_bound_free(&lo, t->n_key);
  vf_bound_free(&hi, t->n_key);
  return rc;
}

/* Each of the n connections of a side in a snapshot of its own; with more than one, all of the
 * same moment: opened while another connection holds FLUSH TABLES WITH READ LOCK (no write
 * commits meanwhile), as mydumper does, then the lock released.
 *
 * An FTWRL queued behind a session's LOCK TABLES or a long statement holds every write of the
 * server behind it (the sync's included) for as long as it waits, by default a day (MariaDB's
 * lock_wait_timeout, 86400 s): verify gives up after VF_FTWRL_WAIT_S instead, as mydumper's
 * --long-query-guard does, and the server's writes go on. */
#define VF_FTWRL_WAIT_S 10
static int vf_snapshots(MYSQL **c, int n, const dmh_db_config *db, const char *group,
                        dm_db_side side, dm_error *err) {
  MYSQL *lock = NULL;
  const char *where = side == DM_DB_SOURCE ? "source" : "target";
  if (n > 1) {
    if (!(lock = vf_connect(db, group, side, err)))
      return -1;
    char set[64];
    snprintf(set, sizeof set, "SET SESSION lock_wait_timeout = %d", VF_FTWRL_WAIT_S);
    if (mysql_query(lock, set) != 0 || mysql_query(lock, "FLUSH TABLES WITH READ LOCK") != 0) {
      if (mysql_errno(lock) == ER_LOCK_WAIT_TIMEOUT)
        dm_db_error(lock, side, err, DM_ERR_VERIFY_SNAPSHOT,
                    "verify: --threads %d needs one snapshot on %d connections of the %s: FLUSH "
                    "TABLES WITH READ LOCK waited %d s for a session's table lock or a long "
                    "statement there (the %s's writes waited with it) and was given up; run "
                    "verify again once it ends, or use --threads 1 (no lock)",
                    n, n, where, VF_FTWRL_WAIT_S, where);
      else
        dm_db_error(lock, side, err, DM_ERR_VERIFY_SNAPSHOT,
                    "verify: --threads %d needs one snapshot on %d connections of the %s: FLUSH "
                    "TABLES WITH READ LOCK (RELOAD) was refused; use --threads 1",
                    n, n, where);
      mysql_close(lock);
      return -1;
    }
  }
  int rc = 0;
  for (int i = 0; rc == 0 && i < n; i++)
    rc = vf_snapshot(c[i], side, err);
  if (lock) {
    mysql_query(lock, "UNLOCK TABLES");
    mysql_close(lock);
  }
  return rc;
}

/* A thread: the next table not taken, until none is left. */
static void *vf_worker(void *arg) {
  vf_run *r = arg;
  for (;;) {
    int i = __atomic_fetch_add(r->next, 1, __ATOMIC_RELAXED);
    if (i >= r->n_tables)
      break;
    vf_table *t = &r->tables[i];
    double t0 = vf_now();
    t->failed = vf_one_table(r, t) < 0;
    t->seconds = vf_now() - t0;
    vf_out_table(r, t);
  }
  return NULL;
}

int dmh_verify_run(const dmh_task_config *task, const dmh_source_config *s,
                   const dmh_verify_opts *opts, dm_error *err) {
  pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  int next = 0, lagged = 0, n = opts->threads > 1 ? (int)opts->threads : 1;
  vf_run r = {
      .opts = opts, .task = task, .src = s, .lock = &lock, .next = &next, .lagged = &lagged};
  MYSQL **conns = calloc(2 * (size_t)n, sizeof *conns), **src = conns, **dst = conns + n;
  vf_run *runs = calloc((size_t)n, sizeof *runs);
  pthread_t *tid = calloc((size_t)n, sizeof *tid);
  memset(err, 0, sizeof *err);
  int rc = DMH_VERIFY_ERROR;
  if (!conns || !runs || !tid) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "verify: out of memory");
    goto out;
  }
  if (!(r.rules = dmh_rules_new(dmh_task_instance_for(task, s->source_id), err)))
    goto out;
  for (int i = 0; i < n; i++)
    if (!(src[i] = vf_connect(&s->from, "from", DM_DB_SOURCE, err)) ||
        !(dst[i] = vf_connect(&task->target, "target-database", DM_DB_TARGET, err)))
      goto out;
  r.source = src[0];
  r.target = dst[0];
  if ((opts->fix_path && vf_fix_open(&r, opts->fix_path, err) < 0) ||
      (opts->at_checkpoint && vf_cp_prepare(&r, err) < 0))
    goto out;
  /* the source's snapshot, then the target's: on a quiet pair (a stopped task) they see the same
   * data. --at-checkpoint: these only list the tables; each chunk takes its own pair, aligned with
   * the sync's checkpoint, so the threads need no common moment (no FLUSH TABLES) */
  int one = opts->at_checkpoint ? 1 : n;
  for (int i = 0; i < n; i += one)
    if (vf_snapshots(src + i, one, &s->from, "from", DM_DB_SOURCE, err) < 0 ||
        vf_snapshots(dst + i, one, &task->target, "target-database", DM_DB_TARGET, err) < 0)
      goto out;
  vf_snapshot_position(r.source, r.snap_file, sizeof r.snap_file, &r.snap_pos);
  if (opts->show_checkpoint && !opts->at_checkpoint)
    vf_cp_note(&r);
  if (vf_tables_list(&r, err) < 0)
    goto out;
  if (r.n_tables == 0) {
    dm_error_set(err, DM_ERR_VERIFY_NO_TABLE, NULL,
                 "verify: the rules of task %s take no table of source %s (%s:%u)", task->name,
                 s->source_id, s->from.ep.host ? s->from.ep.host : "127.0.0.1", s->from.ep.port);
    goto out;
  }
  int started = 0;
  for (int i = 0; i < n; i++) {
    runs[i] = r;
    runs[i].source = src[i];
    runs[i].target = dst[i];
    if (i > 0 && pthread_create(&tid[i], NULL, vf_worker, &runs[i]) != 0)
      break;
    started = i + 1;
  }
  vf_worker(&runs[0]);
  for (int i = 1; i < started; i++)
    pthread_join(tid[i], NULL);
  rc = DMH_VERIFY_EQUAL;
  for (int i = 0; i < r.n_tables; i++) {
    const vf_table *t = &r.tables[i];
    if (t->failed)
      rc = DMH_VERIFY_ERROR;
    else if (rc == DMH_VERIFY_EQUAL && (t->diff_chunks || t->missing[0]))
      rc = DMH_VERIFY_DIFFER;
  }
  if (rc == DMH_VERIFY_ERROR)
    vf_cancelled(&r, err); /* the whole run was cut short: said once for it too */
out:;
  dm_error fix_err = {0};
  if (r.fix && vf_fix_close(&r, err->code != 0, &fix_err) < 0 && !err->code) {
    *err = fix_err; /* the report stands; its fix file could not be written */
    rc = DMH_VERIFY_ERROR;
  }
  if (rc == DMH_VERIFY_ERROR && err->code == 0 && !r.n_tables)
    dm_error_set(err, DM_ERR_INTERNAL, NULL, "verify: failed");
  vf_out_end(&r, err, rc);
  for (int i = 0; conns && i < 2 * n; i++)
    if (conns[i])
      mysql_close(conns[i]);
  free(conns);
  free(runs);
  free(tid);
  vf_tables_free(&r);
  dmh_rules_free(r.rules);
  return rc;
}
