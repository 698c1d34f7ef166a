/*
 * The statement text of a worker's part of a batch (sync_batch.c made the records):
 *
 *   - records of tables kept in binlog order, in order: a run of inserts into one table is one
 *     multi-row INSERT, a run of keyed deletes one DELETE .. WHERE key IN (..), every UPDATE (and
 *     every keyless DELETE, LIMIT 1) a statement of its own;
 *   - records of compacted tables, grouped by table, then deletes, inserts and updates: one
 *     DELETE .. IN (..), one multi-row INSERT, one multi-row INSERT .. ON DUPLICATE KEY UPDATE.
 *
 * Safe mode writes REPLACE (compacted tables: ON DUPLICATE KEY UPDATE) for inserts and DELETE +
 * REPLACE for in-order updates. Text is handed to the worker whenever about chunk-bytes are ready,
 * at a statement boundary, and one statement never grows past it by more than one row.
 */
#include <stdlib.h>
#include <string.h>

#include "sync.h"

typedef struct sync_emit {
  dm_buf *out;
  size_t chunk;
  int (*emit)(void *arg, dm_buf *chunk);
  void *arg;
} sync_emit;

/* After a statement: hand the text over once it is big enough. */
static int sync_emit_check(sync_emit *e) {
  if (e->out->len >= e->chunk)
    return e->emit(e->arg, e->out);
  return 0;
}

static const char *sync_arena(const sync_batch *b, uint32_t off) {
  return b->arena.p + off;
}

/* The key columns as an IN operand: `a` or (`a`,`b`). */
static int sync_key_cols(dm_buf *o, const sync_table *t) {
  if (t->key.n > 1 && dm_buf_putc(o, '(') < 0)
    return -1;
  for (int j = 0; j < t->key.n; j++)
    if ((j && dm_buf_putc(o, ',') < 0) || dm_buf_puts(o, t->col_names[t->key.cols[j]]) < 0)
      return -1;
  if (t->key.n > 1 && dm_buf_putc(o, ')') < 0)
    return -1;
  return 0;
}

/* A run of records [from, to) of one table and kind, written as one statement per chunk-sized
 * part: INSERT/REPLACE .. VALUES r1,r2 [ODKU] or DELETE .. WHERE key IN (k1,k2). */
static int sync_emit_run(sync_unit *u, const sync_batch *b, const uint32_t *idx, uint32_t n,
                         sync_emit *e) {
  dm_buf *o = e->out;
  const sync_rec *r0 = &b->recs[idx[0]];
  const sync_table *t = r0->t;
  uint8_t kind = r0->kind;
  bool safe = u->cfg.safe_mode || b->safe;
  uint32_t j = 0;
  while (j < n) {
    int rc;
    if (kind == SYNC_REC_DELETE)
      rc = dm_buf_puts(o, "DELETE FROM ") < 0 || dm_buf_put(o, t->qname.p, t->qname.len) < 0 ||
           dm_buf_puts(o, " WHERE ") < 0 || sync_key_cols(o, t) < 0 || dm_buf_puts(o, " IN (") < 0;
    else
      rc =
          dm_buf_puts(o, kind == SYNC_REC_INSERT && safe && !t->compactable ? "REPLACE INTO "
                                                                            : "INSERT INTO ") < 0 ||
          dm_buf_put(o, t->qname.p, t->qname.len) < 0 ||
          dm_buf_put(o, t->cols.p, t->cols.len) < 0 || dm_buf_puts(o, " VALUES ") < 0;
    if (rc)
      return -1;
    size_t start = o->len;
    uint32_t count = 0;
    for (bool first = true; j < n; j++) {
      const sync_rec *r = &b->recs[idx[j]];
      if (!first && o->len - start >= e->chunk)
        break;
      if (!first && dm_buf_putc(o, ',') < 0)
        return -1;
      if (kind == SYNC_REC_DELETE
              ? dm_buf_put(o, sync_arena(b, r->key_off) + (t->compactable ? 5 : 0),
                           r->key_len - (t->compactable ? 5u : 0u))
              : dm_buf_put(o, sync_arena(b, r->row_off), r->row_len))
        return -1;
      first = false;
      count++;
    }
    if (kind == SYNC_REC_DELETE && t->key.n > 1 && count == 1) {
      /* MariaDB 10.11 plans `(a, b) IN ((x, y))` with one tuple as a full scan (two or more use
       * the key): the tuple is given twice, which changes nothing else */
      const sync_rec *r = &b->recs[idx[j - 1]];
      if (dm_buf_putc(o, ',') < 0 ||
          dm_buf_put(o, sync_arena(b, r->key_off) + (t->compactable ? 5 : 0),
                     r->key_len - (t->compactable ? 5u : 0u)) < 0)
        return -1;
    }
    if (kind == SYNC_REC_DELETE)
      rc = dm_buf_puts(o, ");");
    else if (kind == SYNC_REC_UPSERT || (kind == SYNC_REC_INSERT && safe && t->compactable))
      rc = dm_buf_put(o, t->odku.p, t->odku.len) < 0 || dm_buf_putc(o, ';') < 0;
    else
      rc = dm_buf_putc(o, ';');
    if (rc || sync_emit_check(e) < 0)
      return -1;
  }
  return 0;
}

/* An in-order UPDATE, or a DELETE of a table without a key: one statement each. */
static int sync_emit_one(sync_unit *u, const sync_batch *b, const sync_rec *r, sync_emit *e) {
  dm_buf *o = e->out;
  const sync_table *t = r->t;
  const char *where = sync_arena(b, r->where_off);
  const char *limit = t->key_kind == SYNC_KEY_NONE ? " LIMIT 1;" : ";";
  int rc;
  if (r->kind == SYNC_REC_DELETE || u->cfg.safe_mode || b->safe) {
    rc = dm_buf_puts(o, "DELETE FROM ") < 0 || dm_buf_put(o, t->qname.p, t->qname.len) < 0 ||
         dm_buf_puts(o, " WHERE ") < 0 || dm_buf_put(o, where, r->where_len) < 0 ||
         dm_buf_puts(o, limit) < 0;
    if (!rc && r->kind == SYNC_REC_UPDATE) /* safe mode: DELETE + REPLACE */
      rc = dm_buf_puts(o, "REPLACE INTO ") < 0 || dm_buf_put(o, t->qname.p, t->qname.len) < 0 ||
           dm_buf_put(o, t->cols.p, t->cols.len) < 0 || dm_buf_puts(o, " VALUES ") < 0 ||
           dm_buf_put(o, sync_arena(b, r->row_off), r->row_len) < 0 || dm_buf_putc(o, ';') < 0;
  } else {
    rc = dm_buf_puts(o, "UPDATE ") < 0 || dm_buf_put(o, t->qname.p, t->qname.len) < 0 ||
         dm_buf_puts(o, " SET ") < 0 || dm_buf_put(o, sync_arena(b, r->set_off), r->set_len) < 0 ||
         dm_buf_puts(o, " WHERE ") < 0 || dm_buf_put(o, where, r->where_len) < 0 ||
         dm_buf_puts(o, limit) < 0;
  }
  if (rc || sync_emit_check(e) < 0)
    return -1;
  return 0;
}

/* Do two tables' rows share one statement's column list? Shards merged into one target table may
 * have different columns while an optimistic shard DDL is under way (docs/shard.md "Optimistic
 * mode" step 7): their rows are then written by statements of their own. */
static bool sync_same_cols(const sync_table *a, const sync_table *b) {
  return a == b || (a->cols.len == b->cols.len && memcmp(a->cols.p, b->cols.p, a->cols.len) == 0);
}

static int sync_cmp_cols(const sync_table *a, const sync_table *b) {
  if (a->cols.len != b->cols.len)
    return a->cols.len < b->cols.len ? -1 : 1;
  return memcmp(a->cols.p, b->cols.p, a->cols.len);
}

/* compactable records of one worker, grouped by table then kind (deletes, inserts, updates), then
 * by column list */
static int sync_cmp_compact(const void *pa, const void *pb, void *batch) {
  const sync_batch *sb = batch;
  const sync_rec *a = &sb->recs[*(const uint32_t *)pa];
  const sync_rec *b = &sb->recs[*(const uint32_t *)pb];
  if (a->t->target_id != b->t->target_id)
    return a->t->target_id < b->t->target_id ? -1 : 1;
  if (a->kind != b->kind) {
    /* deletes first: a key freed by a delete may be taken by an insert of the same batch */
    static const int order[] = {
        [SYNC_REC_DELETE] = 0, [SYNC_REC_INSERT] = 1, [SYNC_REC_UPSERT] = 2, [SYNC_REC_UPDATE] = 3};
    return order[a->kind] - order[b->kind];
  }
  int c = a->t == b->t ? 0 : sync_cmp_cols(a->t, b->t);
  if (c)
    return c;
  return *(const uint32_t *)pa < *(const uint32_t *)pb ? -1 : 1;
}

int sync_batch_sql(sync_unit *u, const sync_batch *b, int w, dm_buf *out, size_t chunk_bytes,
                   int (*emit)(void *arg, dm_buf *chunk), void *arg) {
  sync_emit e = {out, chunk_bytes, emit, arg};
  const uint32_t *part = b->part[w];
  uint32_t n = b->n_part[w];
  uint32_t *compact = malloc((n ? n : 1) * sizeof *compact);
  if (!compact)
    return -1;
  uint32_t n_compact = 0;
  int rc = 0;
  /* in-order records; consecutive inserts (or keyed deletes) of one table share a statement */
  for (uint32_t j = 0; j < n && rc == 0;) {
    const sync_rec *r = &b->recs[part[j]];
    if (r->t->compactable) {
      compact[n_compact++] = part[j++];
      continue;
    }
    if (r->kind == SYNC_REC_UPDATE ||
        (r->kind == SYNC_REC_DELETE && r->t->key_kind == SYNC_KEY_NONE)) {
      rc = sync_emit_one(u, b, r, &e);
      j++;
      continue;
    }
    uint32_t k = j + 1;
    while (k < n && b->recs[part[k]].t == r->t && b->recs[part[k]].kind == r->kind)
      k++;
    rc = sync_emit_run(u, b, part + j, k - j, &e);
    j = k;
  }
  if (rc == 0 && n_compact) {
    qsort_r(compact, n_compact, sizeof *compact, sync_cmp_compact, (void *)b);
    for (uint32_t j = 0; j < n_compact && rc == 0;) {
      const sync_rec *r = &b->recs[compact[j]];
      uint32_t k = j + 1;
      while (k < n_compact && b->recs[compact[k]].t->target_id == r->t->target_id &&
             b->recs[compact[k]].kind == r->kind && sync_same_cols(b->recs[compact[k]].t, r->t))
        k++;
      rc = sync_emit_run(u, b, compact + j, k - j, &e);
      j = k;
    }
  }
  free(compact);
  return rc;
}
