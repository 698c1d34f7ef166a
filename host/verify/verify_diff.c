/* The rows of a differing chunk. Keyed: the source's rows of the range (at most chunk-rows per
 * shard) held by key, the target's streamed past them: a target row without a source row is extra,
 * one whose values differ is changed, a source row no target row met is missing. Without a key:
 * the two multisets of row checksums, each side grouped and ordered by the server and merged as
 * streams; the rows of a checksum one side has more of are then read by that checksum. */
#include <stdlib.h>
#include <string.h>

#include "verify_internal.h"

typedef struct vf_entry {
  MYSQL_ROW row;
  unsigned long *len;
  bool seen;
} vf_entry;

typedef struct vf_map {
  vf_entry *e; /* NULL row: empty */
  size_t cap;
} vf_map;

static uint64_t vf_key_hash(const vf_table *t, MYSQL_ROW row, const unsigned long *len) {
  uint64_t h = 1469598103934665603ULL;
  for (int i = 0; i < t->n_key; i++) {
    int c = t->key[i];
    for (unsigned long j = 0; j < len[c]; j++)
      h = (h ^ (unsigned char)row[c][j]) * 1099511628211ULL;
    h = (h ^ 0xff) * 1099511628211ULL; /* between columns */
  }
  return h;
}

static bool vf_key_same(const vf_table *t, MYSQL_ROW a, const unsigned long *al, MYSQL_ROW b,
                        const unsigned long *bl) {
  for (int i = 0; i < t->n_key; i++) {
    int c = t->key[i];
    if (al[c] != bl[c] || memcmp(a[c], b[c], al[c]) != 0)
      return false;
  }
  return true;
}

static vf_entry *vf_map_find(vf_map *m, const vf_table *t, MYSQL_ROW row,
                             const unsigned long *len) {
  size_t i = (size_t)vf_key_hash(t, row, len) & (m->cap - 1);
  while (m->e[i].row && !vf_key_same(t, m->e[i].row, m->e[i].len, row, len))
    i = (i + 1) & (m->cap - 1);
  return &m->e[i];
}

static bool vf_values_same(const vf_table *t, MYSQL_ROW a, const unsigned long *al, MYSQL_ROW b,
                           const unsigned long *bl) {
  for (int i = 0; i < t->n_cols; i++) {
    if (!a[i] != !b[i] || al[i] != bl[i] || (a[i] && memcmp(a[i], b[i], al[i]) != 0))
      return false;
  }
  return true;
}

/* SELECT cols FROM schema.table WHERE where [extra] */
static void vf_select(dm_buf *q, const vf_table *t, const char *schema, const char *table,
                      const char *where) {
  dm_buf_puts(q, "SELECT ");
  vf_sql_cols(q, t);
  dm_buf_puts(q, " FROM ");
  vf_sql_name(q, schema, table);
  dm_buf_printf(q, " WHERE %s", where);
}

static int vf_oom(dm_error *err) {
  dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "verify: out of memory");
  return -1;
}

int vf_diff_keyed(vf_run *r, vf_table *t, const char *where, dm_error *err) {
  MYSQL_RES **res = calloc((size_t)t->n_shards, sizeof *res);
  vf_map m = {0};
  int rc = res ? 0 : vf_oom(err);
  size_t n = 0;
  for (int s = 0; rc == 0 && s < t->n_shards; s++) {
    dm_buf q = {0};
    vf_select(&q, t, t->shards[s][0], t->shards[s][1], where);
    if (q.oom)
      rc = vf_oom(err);
    else if ((rc = vf_sql_query(r->source, DM_DB_SOURCE, q.p, "reading a chunk's rows", err)) ==
                 0 &&
             !(res[s] = mysql_store_result(r->source))) {
      dm_db_error(r->source, DM_DB_SOURCE, err, DM_ERR_DB_QUERY, "verify: reading a chunk's rows");
      rc = -1;
    }
    dm_buf_free(&q);
    if (rc == 0)
      n += mysql_num_rows(res[s]);
  }
  if (rc == 0) {
    m.cap = 16;
    while (m.cap < 2 * n + 2)
      m.cap *= 2;
    if (!(m.e = calloc(m.cap, sizeof *m.e)))
      rc = vf_oom(err);
  }
  for (int s = 0; rc == 0 && s < t->n_shards; s++) {
    MYSQL_ROW row;
    while (rc == 0 && (row = mysql_fetch_row(res[s]))) {
      unsigned long *len = mysql_fetch_lengths(res[s]);
      vf_entry *e = vf_map_find(&m, t, row, len);
      if (e->row)
        continue; /* the same key in two shards: the target can hold one (said by the count) */
      if (!(e->len = malloc((size_t)t->n_cols * sizeof *e->len))) {
        rc = vf_oom(err);
        break;
      }
      memcpy(e->len, len, (size_t)t->n_cols * sizeof *len);
      e->row = row;
    }
  }
  /* the target's rows of the range, streamed */
  dm_buf q = {0};
  vf_select(&q, t, t->to_schema, t->to_table, where);
  if (rc == 0 && q.oom)
    rc = vf_oom(err);
  if (rc == 0 &&
      (rc = vf_sql_query(r->target, DM_DB_TARGET, q.p, "reading a chunk's rows", err)) == 0) {
    MYSQL_RES *dst = mysql_use_result(r->target);
    MYSQL_ROW row;
    while (dst && (row = mysql_fetch_row(dst))) {
      unsigned long *len = mysql_fetch_lengths(dst);
      vf_entry *e = vf_map_find(&m, t, row, len);
      if (!e->row) {
        vf_out_row(r, t, VF_EXTRA, NULL, NULL, row, len);
        vf_fix_delete(r, t, row, len);
        continue;
      }
      e->seen = true;
      if (!vf_values_same(t, e->row, e->len, row, len)) {
        vf_out_row(r, t, VF_CHANGED, e->row, e->len, row, len);
        vf_fix_replace(r, t, e->row, e->len);
      }
    }
    if (!dst || mysql_errno(r->target)) {
      dm_db_error(r->target, DM_DB_TARGET, err, DM_ERR_DB_QUERY, "verify: reading a chunk's rows");
      rc = -1;
    }
    mysql_free_result(dst);
  }
  dm_buf_free(&q);
  for (size_t i = 0; i < m.cap; i++) {
    if (rc == 0 && m.e[i].row && !m.e[i].seen) {
      vf_out_row(r, t, VF_MISSING, m.e[i].row, m.e[i].len, NULL, NULL);
      vf_fix_replace(r, t, m.e[i].row, m.e[i].len);
    }
    free(m.e[i].len);
  }
  free(m.e);
  for (int s = 0; res && s < t->n_shards; s++)
    mysql_free_result(res[s]);
  free(res);
  return rc;
}

/* ---- without a key ---- */

typedef struct vf_delta {
  unsigned long long crc;
  long long delta; /* source's rows of this checksum less the target's */
} vf_delta;

#define VF_DELTAS_MAX 1000000 /* 16 MB of differing checksums; past them the table is an error */

/* "SELECT crc, COUNT(*) ... GROUP BY crc ORDER BY crc" over the source's shards or the target. */
static void vf_crc_groups(dm_buf *q, const vf_table *t, bool target) {
  dm_buf_puts(q, "SELECT crc, COUNT(*) FROM (");
  for (int s = 0; s < (target ? 1 : t->n_shards); s++) {
    dm_buf_puts(q, s ? " UNION ALL SELECT " : "SELECT ");
    vf_sql_row_crc(q, t);
    dm_buf_puts(q, " AS crc FROM ");
    if (target)
      vf_sql_name(q, t->to_schema, t->to_table);
    else
      vf_sql_name(q, t->shards[s][0], t->shards[s][1]);
  }
  dm_buf_puts(q, ") AS c GROUP BY crc ORDER BY crc");
}

/* Up to `want` rows of checksum crc of the source (each shard in turn) or the target: listed and
 * given their fix. */
static int vf_rows_of_crc(vf_run *r, vf_table *t, bool target, unsigned long long crc,
                          long long want, dm_error *err) {
  for (int s = 0; want > 0 && s < (target ? 1 : t->n_shards); s++) {
    dm_buf q = {0}, w = {0};
    vf_sql_row_crc(&w, t);
    dm_buf_printf(&w, " = %llu", crc);
    vf_select(&q, t, target ? t->to_schema : t->shards[s][0],
              target ? t->to_table : t->shards[s][1], w.p ? w.p : "0");
    dm_buf_printf(&q, " LIMIT %lld", want);
    MYSQL *c = target ? r->target : r->source;
    dm_db_side side = target ? DM_DB_TARGET : DM_DB_SOURCE;
    int rc = q.oom || w.oom ? vf_oom(err) : vf_sql_query(c, side, q.p, "reading rows", err);
    dm_buf_free(&q);
    dm_buf_free(&w);
    MYSQL_RES *res = rc < 0 ? NULL : mysql_store_result(c);
    if (rc == 0 && !res) {
      dm_db_error(c, side, err, DM_ERR_DB_QUERY, "verify: reading rows");
      rc = -1;
    }
    if (rc < 0)
      return -1;
    MYSQL_ROW row;
    while (want > 0 && (row = mysql_fetch_row(res))) {
      unsigned long *len = mysql_fetch_lengths(res);
      if (target) {
        vf_out_row(r, t, VF_EXTRA, NULL, NULL, row, len);
        vf_fix_delete(r, t, row, len);
      } else {
        vf_out_row(r, t, VF_MISSING, row, len, NULL, NULL);
        vf_fix_replace(r, t, row, len);
      }
      want--;
    }
    mysql_free_result(res);
  }
  return 0;
}

/* The next (crc, count) of a stream; false at its end. */
static bool vf_next_group(MYSQL_RES *res, unsigned long long *crc, long long *n) {
  MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
  if (!row || !row[0] || !row[1])
    return false;
  *crc = strtoull(row[0], NULL, 10);
  *n = strtoll(row[1], NULL, 10);
  return true;
}

int vf_diff_whole(vf_run *r, vf_table *t, dm_error *err) {
  dm_buf qs = {0}, qt = {0};
  vf_crc_groups(&qs, t, false);
  vf_crc_groups(&qt, t, true);
  int rc = qs.oom || qt.oom ? vf_oom(err) : 0;
  MYSQL_RES *src = NULL, *dst = NULL;
  if (rc == 0 &&
      (rc = vf_sql_query(r->source, DM_DB_SOURCE, qs.p, "grouping row checksums", err)) == 0)
    src = mysql_use_result(r->source);
  if (rc == 0 &&
      (rc = vf_sql_query(r->target, DM_DB_TARGET, qt.p, "grouping row checksums", err)) == 0)
    dst = mysql_use_result(r->target);
  dm_buf_free(&qs);
  dm_buf_free(&qt);
  vf_delta *d = NULL;
  size_t n = 0, cap = 0;
  bool too_many = false;
  if (rc == 0) {
    unsigned long long cs = 0, ct = 0;
    long long ns = 0, nt = 0;
    bool hs = vf_next_group(src, &cs, &ns), ht = vf_next_group(dst, &ct, &nt);
    while (hs || ht) {
      vf_delta x;
      if (hs && (!ht || cs < ct)) {
        x = (vf_delta){cs, ns};
        hs = vf_next_group(src, &cs, &ns);
      } else if (!hs || ct < cs) {
        x = (vf_delta){ct, -nt};
        ht = vf_next_group(dst, &ct, &nt);
      } else {
        x = (vf_delta){cs, ns - nt};
        hs = vf_next_group(src, &cs, &ns);
        ht = vf_next_group(dst, &ct, &nt);
      }
      if (!x.delta)
        continue;
      if (n == cap && !too_many) {
        size_t want = cap ? cap * 2 : 64;
        vf_delta *p = want <= VF_DELTAS_MAX ? realloc(d, want * sizeof *d) : NULL;
        if (p) {
          d = p;
          cap = want;
        } else {
          too_many = true;
        }
      }
      if (n < cap)
        d[n++] = x;
    }
    if (mysql_errno(r->source) || !src) {
      dm_db_error(r->source, DM_DB_SOURCE, err, DM_ERR_DB_QUERY, "verify: grouping row checksums");
      rc = -1;
    } else if (mysql_errno(r->target) || !dst) {
      dm_db_error(r->target, DM_DB_TARGET, err, DM_ERR_DB_QUERY, "verify: grouping row checksums");
      rc = -1;
    }
  }
  mysql_free_result(src);
  mysql_free_result(dst);
  for (size_t i = 0; rc == 0 && i < n; i++)
    rc = vf_rows_of_crc(r, t, d[i].delta < 0, d[i].crc, d[i].delta < 0 ? -d[i].delta : d[i].delta,
                        err);
  free(d);
  if (rc == 0 && too_many) {
    dm_error_set(err, DM_ERR_VERIFY_TABLE, NULL,
                 "verify: `%s`.`%s` (no key) differs in more than %d row checksums: only those "
                 "were listed and fixed",
                 t->to_schema, t->to_table, VF_DELTAS_MAX);
    rc = -1;
  }
  return rc;
}
