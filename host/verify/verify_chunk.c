/* Chunks: key ranges walked on the source (pt-table-checksum's nibbling), and a chunk's checksum
 * computed by each server. A range over a composite key is written as (a > ?) OR (a = ? AND
 * b > ?) so that the range optimizer uses the index; the boundary after `lo` is the key of the row
 * chunk-rows further in key order (LIMIT 1 OFFSET N-1; of a merge, the nearest of its shards'), so
 * a chunk holds at most chunk-rows rows of each source table. */
#include <stdlib.h>
#include <string.h>

#include "verify_internal.h"

void vf_bound_free(vf_bound *b, int n) {
  if (b->v)
    for (int i = 0; i < n; i++)
      free(b->v[i]);
  free(b->v);
  free(b->len);
  *b = (vf_bound){0};
}

static void vf_key_ident(dm_buf *b, const vf_table *t, int i) {
  char q[DM_DB_QUOTED_IDENT_MAX + 1];
  dm_buf_puts(b, dm_db_quoted(t->cols[t->key[i]].name, q, sizeof q));
}

/* (k1 OP1 v1) OR (k1 = v1 AND k2 OP1 v2) ... with the last column's OP last_op. */
static void vf_range_side(dm_buf *b, MYSQL *c, const vf_table *t, const vf_bound *v, const char *op,
                          const char *last_op) {
  dm_buf_puts(b, "(");
  for (int i = 0; i < t->n_key; i++) {
    dm_buf_puts(b, i ? " OR (" : "(");
    for (int j = 0; j < i; j++) {
      vf_key_ident(b, t, j);
      dm_buf_puts(b, " = ");
      vf_sql_literal(b, c, v->v[j], v->len[j], t->cols[t->key[j]].binary);
      dm_buf_puts(b, " AND ");
    }
    vf_key_ident(b, t, i);
    dm_buf_printf(b, " %s ", i == t->n_key - 1 ? last_op : op);
    vf_sql_literal(b, c, v->v[i], v->len[i], t->cols[t->key[i]].binary);
    dm_buf_puts(b, ")");
  }
  dm_buf_puts(b, ")");
}

void vf_chunk_where(dm_buf *b, MYSQL *c, const vf_table *t, const vf_bound *lo,
                    const vf_bound *hi) {
  bool l = lo && lo->set && t->n_key, h = hi && hi->set && t->n_key;
  if (!l && !h) {
    dm_buf_puts(b, "1");
    return;
  }
  if (l)
    vf_range_side(b, c, t, lo, ">", ">");
  if (l && h)
    dm_buf_puts(b, " AND ");
  if (h)
    vf_range_side(b, c, t, hi, "<", "<=");
}

/* " FORCE INDEX (`key`)" on the source's first shard, where the key was read */
static void vf_force(dm_buf *b, const vf_table *t) {
  char q[DM_DB_QUOTED_IDENT_MAX + 1];
  dm_buf_printf(b, " FORCE INDEX (%s)", dm_db_quoted(t->key_name, q, sizeof q));
}

/* SELECT of shard i's key chunk-rows further than lo (FORCE INDEX on the first shard only: the
 * key was read there, another shard may name its index otherwise). */
static void vf_chunk_next_of(dm_buf *q, vf_run *r, const vf_table *t, int i, const vf_bound *lo) {
  dm_buf_puts(q, "SELECT ");
  vf_sql_key_cols(q, t);
  dm_buf_puts(q, " FROM ");
  vf_sql_name(q, t->shards[i][0], t->shards[i][1]);
  if (i == 0)
    vf_force(q, t);
  dm_buf_puts(q, " WHERE ");
  vf_chunk_where(q, r->source, t, lo, NULL);
  dm_buf_puts(q, " ORDER BY ");
  vf_sql_key_cols(q, t);
  dm_buf_printf(q, " LIMIT 1 OFFSET %ld", r->opts->chunk_rows - 1);
}

int vf_chunk_next(vf_run *r, vf_table *t, const vf_bound *lo, vf_bound *hi, dm_error *err) {
  dm_buf q = {0};
  if (t->n_shards == 1)
    vf_chunk_next_of(&q, r, t, 0, lo);
  else {
    /* a merge: the smallest of the shards' boundaries, so no shard has more than chunk-rows rows
     * in the chunk and a differing chunk's rows held for the diff stay within shards x
     * chunk-rows (walking the first shard alone left the others' ranges unbounded). The server
     * orders the keys, by their types and collations as the ranges compare them. */
    dm_buf_puts(&q, "SELECT ");
    vf_sql_key_cols(&q, t);
    dm_buf_puts(&q, " FROM (");
    for (int i = 0; i < t->n_shards; i++) {
      dm_buf_puts(&q, i ? " UNION ALL (" : "(");
      vf_chunk_next_of(&q, r, t, i, lo);
      dm_buf_puts(&q, ")");
    }
    dm_buf_puts(&q, ") AS bounds ORDER BY ");
    vf_sql_key_cols(&q, t);
    dm_buf_puts(&q, " LIMIT 1");
  }
  if (q.oom) {
    dm_buf_free(&q);
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "verify: out of memory");
    return -1;
  }
  int rc = vf_sql_query(r->source, DM_DB_SOURCE, q.p, "walking the key", err);
  dm_buf_free(&q);
  MYSQL_RES *res = rc < 0 ? NULL : mysql_store_result(r->source);
  if (rc == 0 && !res) {
    dm_db_error(r->source, DM_DB_SOURCE, err, DM_ERR_DB_QUERY, "verify: walking the key");
    return -1;
  }
  if (rc < 0)
    return -1;
  MYSQL_ROW row = mysql_fetch_row(res);
  unsigned long *len = row ? mysql_fetch_lengths(res) : NULL;
  vf_bound_free(hi, t->n_key);
  if (row) {
    hi->v = calloc((size_t)t->n_key, sizeof *hi->v);
    hi->len = calloc((size_t)t->n_key, sizeof *hi->len);
    for (int i = 0; hi->v && hi->len && i < t->n_key; i++) {
      if (!(hi->v[i] = malloc(len[i] + 1)))
        break;
      memcpy(hi->v[i], row[i] ? row[i] : "", len[i]);
      hi->v[i][len[i]] = '\0';
      hi->len[i] = len[i];
      hi->set = i == t->n_key - 1;
    }
    if (!hi->set) {
      mysql_free_result(res);
      dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "verify: out of memory");
      return -1;
    }
  }
  mysql_free_result(res);
  return row ? 1 : 0;
}

/* The checksum statement of `where` on one table of c, sent without waiting for its answer. */
static int vf_sum_send(MYSQL *c, dm_db_side side, const vf_table *t, const char *schema,
                       const char *table, bool force, const char *where, dm_error *err) {
  dm_buf q = {0};
  /* no derived table: the server would put its column into each aggregate and compute it again */
  dm_buf_puts(&q, "SELECT COUNT(*), COALESCE(SUM(");
  vf_sql_row_crc(&q, t);
  dm_buf_puts(&q, "), 0) FROM ");
  vf_sql_name(&q, schema, table);
  if (force)
    vf_force(&q, t);
  dm_buf_printf(&q, " WHERE %s", where);
  if (q.oom) {
    dm_buf_free(&q);
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "verify: out of memory");
    return -1;
  }
  int rc = mysql_send_query(c, q.p, (unsigned long)q.len);
  dm_buf_free(&q);
  if (rc != 0)
    dm_db_error(c, side, err, DM_ERR_DB_QUERY, "verify: the checksum of `%s`.`%s`", schema, table);
  return rc ? -1 : 0;
}

/* Its answer, added to *out (always read once sent: the connection goes on). */
static int vf_sum_read(MYSQL *c, dm_db_side side, const char *schema, const char *table,
                       vf_sum *out, dm_error *err) {
  MYSQL_RES *res = mysql_read_query_result(c) == 0 ? mysql_store_result(c) : NULL;
  MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
  int rc = 0;
  if (!row || !row[0] || !row[1]) {
    dm_db_error(c, side, err, DM_ERR_DB_QUERY, "verify: the checksum of `%s`.`%s` on the %s",
                schema, table, side == DM_DB_SOURCE ? "source" : "target");
    rc = -1;
  } else {
    out->count += strtoull(row[0], NULL, 10);
    out->sum += strtoull(row[1], NULL, 10);
  }
  mysql_free_result(res);
  return rc;
}

int vf_chunk_sum_send(vf_run *r, vf_table *t, const char *where, dm_error *err) {
  return vf_sum_send(r->target, DM_DB_TARGET, t, t->to_schema, t->to_table, false, where, err);
}

int vf_chunk_sum_read(vf_run *r, vf_table *t, vf_sum *out, dm_error *err) {
  *out = (vf_sum){0};
  return vf_sum_read(r->target, DM_DB_TARGET, t->to_schema, t->to_table, out, err);
}

int vf_chunk_sum_source(vf_run *r, vf_table *t, const char *where, vf_sum *out, dm_error *err) {
  *out = (vf_sum){0};
  /* a merge: the shards' checksums compose (counts and sums add) */
  for (int i = 0; i < t->n_shards; i++)
    if (vf_sum_send(r->source, DM_DB_SOURCE, t, t->shards[i][0], t->shards[i][1],
                    i == 0 && t->n_key > 0, where, err) < 0 ||
        vf_sum_read(r->source, DM_DB_SOURCE, t->shards[i][0], t->shards[i][1], out, err) < 0)
      return -1;
  return 0;
}
