/* The run of `dmhost verify` (verify.h): one connection per side, each in one consistent snapshot
 * for the whole run, then every table in turn, chunk by chunk. */
#include <pthread.h>
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
static int vf_snapshot(MYSQL *c, dm_db_side side, dm_error *err) {
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
static void vf_snapshot_position(vf_run *r) {
  if (mysql_query(r->source, "SHOW STATUS LIKE 'binlog_snapshot_%'") != 0)
    return;
  MYSQL_RES *res = mysql_store_result(r->source);
  MYSQL_ROW row;
  while (res && (row = mysql_fetch_row(res))) {
    if (!row[0] || !row[1])
      continue;
    if (!strcmp(row[0], "Binlog_snapshot_file"))
      dm_strlcpy(r->snap_file, row[1], sizeof r->snap_file);
    else if (!strcmp(row[0], "Binlog_snapshot_position"))
      r->snap_pos = strtoull(row[1], NULL, 10);
  }
  mysql_free_result(res);
}

static bool vf_sum_differs(const vf_sum *a, const vf_sum *b) {
  return a->count != b->count || a->bxor != b->bxor || a->sum != b->sum;
}

/* One chunk (lo, hi]: both checksums, and the rows when they differ. */
static int vf_one_chunk(vf_run *r, vf_table *t, const vf_bound *lo, const vf_bound *hi,
                        dm_error *err) {
  dm_buf where = {0};
  vf_chunk_where(&where, r->source, t, lo, hi);
  if (where.oom) {
    dm_buf_free(&where);
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "verify: out of memory");
    return -1;
  }
  vf_sum s, d;
  /* the target computes while the source does */
  int sent = vf_chunk_sum_send(r, t, where.p, err), rc = sent;
  if (rc == 0)
    rc = vf_chunk_sum_source(r, t, where.p, &s, err);
  if (sent == 0) {
    dm_error later;
    int got = vf_chunk_sum_read(r, t, &d, rc == 0 ? err : &later);
    rc = rc ? rc : got;
  }
  if (rc == 0) {
    t->chunks++;
    t->rows += (long long)s.count;
    if (vf_sum_differs(&s, &d)) {
      t->diff_chunks++;
      rc = t->n_key ? vf_diff_keyed(r, t, where.p, err) : vf_diff_whole(r, t, err);
    }
  }
  dm_buf_free(&where);
  vf_out_progress(r, t, false);
  return rc;
}

static int vf_one_table(vf_run *r, vf_table *t) {
  if (vf_table_describe(r, t) < 0)
    return -1;
  if (!t->n_key) /* no usable key: the whole table is one chunk */
    return vf_one_chunk(r, t, NULL, NULL, &t->err);
  vf_bound lo = {0}, hi = {0};
  int rc;
  for (;;) {
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
 * commits meanwhile), as mydumper does, then the lock released. */
static int vf_snapshots(MYSQL **c, int n, const dmh_db_config *db, const char *group,
                        dm_db_side side, dm_error *err) {
  MYSQL *lock = NULL;
  const char *where = side == DM_DB_SOURCE ? "source" : "target";
  if (n > 1) {
    if (!(lock = vf_connect(db, group, side, err)))
      return -1;
    if (mysql_query(lock, "FLUSH TABLES WITH READ LOCK") != 0) {
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
  int next = 0, n = opts->threads > 1 ? (int)opts->threads : 1;
  vf_run r = {.opts = opts, .task = task, .src = s, .lock = &lock, .next = &next};
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
  if (opts->fix_path && vf_fix_open(&r, opts->fix_path, err) < 0)
    goto out;
  /* the source's snapshot, then the target's: on a quiet pair (a stopped task) they see the same
   * data; on a moving source a difference can be lag (docs/verify.md) */
  if (vf_snapshots(src, n, &s->from, "from", DM_DB_SOURCE, err) < 0 ||
      vf_snapshots(dst, n, &task->target, "target-database", DM_DB_TARGET, err) < 0)
    goto out;
  vf_snapshot_position(&r);
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
