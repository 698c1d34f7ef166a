/*
 * A batch: the row changes of many consecutive source transactions, applied by the workers as one
 * target transaction each, together with each worker's checkpoint row (docs/sync.md, "Exactly
 * once").
 *
 * Every change becomes a record holding the SQL text it needs (literals are made once, here, in
 * the coordinator); the text lives in the batch's arena, so the event it came from can go.
 *
 * Compaction (tables whose primary key is their only unique key, `compact` on): changes of one row
 * merge into one record (insert+update = insert, update+update = update, insert+delete = nothing,
 * delete+insert = update, ...). With no other unique key, net changes of different rows commute,
 * so such a table's records are written grouped by kind: one DELETE .. IN (..), one multi-row
 * INSERT, one multi-row INSERT .. ON DUPLICATE KEY UPDATE per table and worker.
 *
 * Other tables keep their changes in binlog order (runs of inserts or of deletes on one table are
 * still merged into one statement each).
 *
 * Causality: each record joins the nodes of its key values (every unique key, before and after the
 * change; one node per table for a table without one) in a union-find; a group (all records linked
 * by a shared key value) goes to one worker, chosen by the hash of its root, so changes that could
 * observe each other's order are applied in order by one connection. The assignment depends only
 * on the batch's content and the worker count: replaying the same binlog range after a crash
 * gives every worker the same part again (sync_checkpoint.c relies on it).
 */
#include <stdlib.h>
#include <string.h>

#include "sync.h"

void sync_batch_init(sync_batch *b) {
  memset(b, 0, sizeof *b);
}

void sync_batch_free(sync_batch *b) {
  dm_buf_free(&b->arena);
  free(b->recs);
  sync_keymap_free(&b->rows);
  sync_keymap_free(&b->nodes);
  free(b->parent);
  free(b->node_hash);
  free(b->node_worker);
  for (int w = 0; w < SYNC_MAX_WORKERS; w++)
    free(b->part[w]);
  memset(b, 0, sizeof *b);
}

void sync_batch_reset(sync_batch *b) {
  dm_buf_reset(&b->arena);
  b->n_recs = 0;
  sync_keymap_clear(&b->rows);
  sync_keymap_clear(&b->nodes);
  b->n_rows = b->n_txns = 0;
  b->moved = false;
  b->solo = false;
  b->first_ns = 0;
  b->last_ts = 0;
  b->first_ts = 0;
  for (int w = 0; w < SYNC_MAX_WORKERS; w++)
    b->n_part[w] = 0;
}

/* ---- text of a row ---- */

/* v1,v2,... of the columns `cols` (n of them) */
static int sync_lits(sync_unit *u, dm_buf *a, const sync_table *t, const dm_binlog_table_map *tm,
                     const dm_binlog_value *vals, const int *cols, int n, dm_error *err) {
  for (int j = 0; j < n; j++) {
    if (j && dm_buf_putc(a, ',') < 0)
      goto nomem;
    int i = cols[j];
    if (i >= (int)t->n_cols) { /* an extract column: the route's value */
      const dm_buf *lit = &t->ext_lit[i - (int)t->n_cols];
      if (dm_buf_put(a, lit->p, lit->len) < 0)
        goto nomem;
      continue;
    }
    if (vals[i].kind == DM_VAL_ABSENT) {
      u->host->error_make(u->ctx, err, DM_ERR_SYNC_PRECHECK, NULL,
                          "sync: a row of `%s`.`%s` lacks column %s (the source must write "
                          "binlog_row_image=FULL)",
                          t->db, t->name, t->col_names[i]);
      return -1;
    }
    if (sync_sql_value(a, &vals[i], &tm->columns[i], u->charsets, err) < 0)
      return -1;
  }
  return 0;
nomem:
  return sync_nomem(u, err);
}

/* The key's literal: "v" for one column, "(v1,v2)" for several. */
static int sync_key_text(sync_unit *u, dm_buf *a, const sync_table *t, const sync_ukey *k,
                         const dm_binlog_table_map *tm, const dm_binlog_value *vals,
                         dm_error *err) {
  if (k->n > 1 && dm_buf_putc(a, '(') < 0)
    goto nomem;
  if (sync_lits(u, a, t, tm, vals, k->cols, k->n, err) < 0)
    return -1;
  if (k->n > 1 && dm_buf_putc(a, ')') < 0)
    goto nomem;
  return 0;
nomem:
  return sync_nomem(u, err);
}

/* The key's causality text: its literal, with "?" for each part whose text is not its identity
 * (sync_ukey.col_exact): rows that differ only there share a node. */
static int sync_node_text(sync_unit *u, dm_buf *a, const sync_table *t, const sync_ukey *k,
                          const dm_binlog_table_map *tm, const dm_binlog_value *vals,
                          dm_error *err) {
  if (k->exact)
    return sync_key_text(u, a, t, k, tm, vals, err);
  for (int j = 0; j < k->n; j++) {
    if (j && dm_buf_putc(a, ',') < 0)
      goto nomem;
    int i = k->cols[j];
    if (k->col_exact[j] ? sync_lits(u, a, t, tm, vals, &i, 1, err) < 0 : dm_buf_putc(a, '?') < 0)
      return -1;
  }
  return 0;
nomem:
  return sync_nomem(u, err);
}

/* (v1,...,vn) over the columns the target takes */
static int sync_row_text(sync_unit *u, dm_buf *a, const sync_table *t,
                         const dm_binlog_table_map *tm, const dm_binlog_value *vals,
                         dm_error *err) {
  if (dm_buf_putc(a, '(') < 0)
    goto nomem;
  bool first = true;
  for (uint32_t i = 0; i < t->n_all; i++) {
    if (t->generated[i])
      continue;
    if (!first && dm_buf_putc(a, ',') < 0)
      goto nomem;
    int c = (int)i;
    if (sync_lits(u, a, t, tm, vals, &c, 1, err) < 0)
      return -1;
    first = false;
  }
  if (dm_buf_putc(a, ')') < 0)
    goto nomem;
  return 0;
nomem:
  return sync_nomem(u, err);
}

/* `a`=v1,`b`=v2 (UPDATE's SET) */
static int sync_set_text(sync_unit *u, dm_buf *a, const sync_table *t,
                         const dm_binlog_table_map *tm, const dm_binlog_value *vals,
                         dm_error *err) {
  bool first = true;
  for (uint32_t i = 0; i < t->n_all; i++) {
    if (t->generated[i])
      continue;
    if ((!first && dm_buf_putc(a, ',') < 0) || dm_buf_puts(a, t->col_names[i]) < 0 ||
        dm_buf_putc(a, '=') < 0)
      goto nomem;
    int c = (int)i;
    if (sync_lits(u, a, t, tm, vals, &c, 1, err) < 0)
      return -1;
    first = false;
  }
  return 0;
nomem:
  return sync_nomem(u, err);
}

/* WHERE text: `a`=v1 AND `b`=v2 by the key; a table without one matches the whole row with <=>
 * (NULL-safe) on every stored column. */
static int sync_where_text(sync_unit *u, dm_buf *a, const sync_table *t,
                           const dm_binlog_table_map *tm, const dm_binlog_value *vals,
                           dm_error *err) {
  bool whole = t->key_kind == SYNC_KEY_NONE;
  int n = whole ? (int)t->n_all : t->key.n;
  bool first = true;
  for (int j = 0; j < n; j++) {
    int i = whole ? j : t->key.cols[j];
    if (whole && t->generated[i])
      continue;
    /* Whole-row matching compares text byte for byte: under a case- or accent-insensitive
     * collation 'abc' and 'ABC' are equal, and LIMIT 1 could change the wrong one of two rows
     * that differ only so. (A key is unique under its collation: `=` finds the one row.) */
    bool bin = whole && i < (int)t->n_cols && vals[i].kind == DM_VAL_STRING;
    if ((!first && dm_buf_puts(a, " AND ") < 0) || (bin && dm_buf_puts(a, "BINARY ") < 0) ||
        dm_buf_puts(a, t->col_names[i]) < 0 || dm_buf_puts(a, whole ? "<=>" : "=") < 0)
      goto nomem;
    if (sync_lits(u, a, t, tm, vals, &i, 1, err) < 0)
      return -1;
    first = false;
  }
  return 0;
nomem:
  return sync_nomem(u, err);
}

/* ---- records and causality ---- */

static int sync_rec_new(sync_batch *b, sync_table *t, uint8_t kind) {
  if (b->n_recs == b->cap_recs) {
    uint32_t cap = b->cap_recs ? b->cap_recs * 2 : 4096;
    void *p = realloc(b->recs, cap * sizeof *b->recs);
    if (!p)
      return -1;
    b->recs = p;
    b->cap_recs = cap;
  }
  sync_rec *r = &b->recs[b->n_recs];
  memset(r, 0, sizeof *r);
  r->kind = kind;
  r->t = t;
  r->node = -1;
  return (int)b->n_recs++;
}

static int32_t sync_find(sync_batch *b, int32_t x) {
  while (b->parent[x] != x) {
    b->parent[x] = b->parent[b->parent[x]];
    x = b->parent[x];
  }
  return x;
}

/* The node of a key string (the arena bytes [off, off+len)), joined with `with` (or -1). The
 * smaller index becomes the root, so the result does not depend on anything but the order of
 * the changes. `scratch`: the bytes were appended for this lookup only and are dropped again
 * when the key is known. */
static int32_t sync_node(sync_batch *b, const sync_table *t, uint32_t off, uint32_t len,
                         int32_t with, bool scratch) {
  uint64_t h = sync_hash(b->arena.p + off, len);
  struct sync_keymap_entry *e = sync_keymap_find(&b->nodes, b->arena.p, off, len, h);
  int32_t x;
  if (e) {
    x = e->value;
    if (scratch) {
      b->arena.len = off;
      b->arena.p[off] = '\0';
    }
  } else {
    x = (int32_t)b->nodes.n;
    if (b->nodes.n == b->cap_nodes) {
      uint32_t cap = b->cap_nodes ? b->cap_nodes * 2 : 4096;
      void *p1 = realloc(b->parent, cap * sizeof *b->parent);
      if (p1)
        b->parent = p1;
      void *p2 = realloc(b->node_hash, cap * sizeof *b->node_hash);
      if (p2)
        b->node_hash = p2;
      void *p3 = realloc(b->node_worker, cap * sizeof *b->node_worker);
      if (p3)
        b->node_worker = p3;
      if (!p1 || !p2 || !p3)
        return -2;
      b->cap_nodes = cap;
    }
    if (sync_keymap_add(&b->nodes, b->arena.p, off, len, h, x) < 0)
      return -2;
    b->parent[x] = x;
    /* The worker a group goes to must not depend on anything a restart could change: not on the
     * table's id (the order this process met the tables in), only on the routed table's name,
     * the key's number and its value's text (after the 5-byte id/key prefix). */
    b->node_hash[x] =
        sync_hash(b->arena.p + off + 5, len - 5) ^ (t->name_hash + (uint8_t)b->arena.p[off + 4]);
  }
  if (with < 0)
    return x;
  int32_t ra = sync_find(b, x), rb = sync_find(b, with);
  if (ra != rb) {
    if (ra < rb)
      b->parent[rb] = ra;
    else
      b->parent[ra] = rb;
  }
  return ra < rb ? ra : rb;
}

/* Joins the record's causality nodes: each unique key's value in this image. A table without a
 * unique key has one node for all its rows: its changes match rows by scanning the table, and two
 * workers scanning one table would wait for (and deadlock with) each other's row locks. Key
 * strings: target table id, key number, the key's literal text. */
static int sync_rec_keys(sync_unit *u, sync_batch *b, sync_rec *r, const sync_table *t,
                         const dm_binlog_table_map *tm, const dm_binlog_value *vals,
                         dm_error *err) {
  int nk = t->n_uks ? t->n_uks : 1;
  for (int k = 0; k < nk; k++) {
    uint32_t off = (uint32_t)b->arena.len;
    unsigned char head[5] = {
        (unsigned char)(t->target_id >> 24), (unsigned char)(t->target_id >> 16),
        (unsigned char)(t->target_id >> 8), (unsigned char)t->target_id, (unsigned char)k};
    if (dm_buf_put(&b->arena, head, sizeof head) < 0)
      goto nomem;
    if (t->n_uks && sync_node_text(u, &b->arena, t, &t->uks[k], tm, vals, err) < 0)
      return -1;
    int32_t x = sync_node(b, t, off, (uint32_t)(b->arena.len - off), r->node, true);
    if (x == -2)
      goto nomem;
    r->node = x;
  }
  return 0;
nomem:
  return sync_nomem(u, err);
}

/* ---- compaction ---- */

/* The compaction slot of a primary key value (text at [off, off+len) of the arena, prefixed with
 * the target table's id): the record holding that row's net change, or -1. */
static struct sync_keymap_entry *sync_slot(sync_batch *b, uint32_t off, uint32_t len,
                                           uint64_t *hash) {
  *hash = sync_hash(b->arena.p + off, len);
  return sync_keymap_find(&b->rows, b->arena.p, off, len, *hash);
}

/* One change of a compactable table's row with primary key text at [koff, koff+klen). `kind` is
 * what happened: INSERT (the row is new), UPSERT (updated in place), DELETE. `row` is the new row's
 * values for INSERT/UPSERT. */
static int sync_compact(sync_unit *u, sync_batch *b, sync_table *t, uint8_t kind,
                        const dm_binlog_table_map *tm, const dm_binlog_value *row,
                        const dm_binlog_value *keyvals, uint32_t koff, uint32_t klen,
                        dm_error *err) {
  uint64_t h;
  struct sync_keymap_entry *e = sync_slot(b, koff, klen, &h);
  sync_rec *r = NULL;
  if (e && e->value >= 0) {
    r = &b->recs[e->value];
    /* the key text is already in the arena: drop this copy */
    b->arena.len = koff;
    b->arena.p[koff] = '\0';
    switch (kind) {
    case SYNC_REC_INSERT:
      /* after a delete: the row comes back, i.e. it is updated in place. After an insert or an
       * update (which cannot happen on a consistent source) the new row wins, as REPLACE would. */
      if (r->kind == SYNC_REC_DELETE)
        r->kind = SYNC_REC_UPSERT;
      break;
    case SYNC_REC_UPSERT:
      if (r->kind == SYNC_REC_DELETE)
        r->kind = SYNC_REC_UPSERT; /* update of a deleted row: the new row wins */
      /* insert + update stays an insert, update + update an update */
      break;
    case SYNC_REC_DELETE:
      if (r->kind == SYNC_REC_INSERT) {
        r->dead = true; /* inserted and deleted inside the batch */
        e->value = -1;
        return 0;
      }
      r->kind = SYNC_REC_DELETE;
      return 0;
    }
  } else {
    int i = sync_rec_new(b, t, kind);
    if (i < 0)
      goto nomem;
    r = &b->recs[i];
    r->key_off = koff;
    r->key_len = klen;
    if (e)
      e->value = i;
    else if (sync_keymap_add(&b->rows, b->arena.p, koff, klen, h, i) < 0)
      goto nomem;
    /* causality: the primary key is the table's only unique key, so its text is the node (made
     * coarser when a part's text is not its identity) */
    int32_t x;
    if (t->key.exact) {
      x = sync_node(b, t, koff, klen, -1, false);
    } else {
      uint32_t off = (uint32_t)b->arena.len;
      if (dm_buf_put(&b->arena, b->arena.p + koff, 5) < 0)
        goto nomem;
      if (sync_node_text(u, &b->arena, t, &t->key, tm, keyvals, err) < 0)
        return -1;
      x = sync_node(b, t, off, (uint32_t)(b->arena.len - off), -1, true);
    }
    if (x == -2)
      goto nomem;
    r = &b->recs[i];
    r->node = x;
    if (kind == SYNC_REC_DELETE)
      return 0;
  }
  /* the row's values (a fresh copy: the old one stays in the arena unused until the reset) */
  r->row_off = (uint32_t)b->arena.len;
  if (sync_row_text(u, &b->arena, t, tm, row, err) < 0)
    return -1;
  r->row_len = (uint32_t)(b->arena.len - r->row_off);
  return 0;
nomem:
  return sync_nomem(u, err);
}

/* The primary key text of an image, prefixed with the target table's id (the compaction key). The
 * causality node of a compactable row uses the same bytes. */
static int sync_pk_key(sync_unit *u, sync_batch *b, const sync_table *t,
                       const dm_binlog_table_map *tm, const dm_binlog_value *vals, uint32_t *off,
                       uint32_t *len, dm_error *err) {
  *off = (uint32_t)b->arena.len;
  unsigned char head[5] = {(unsigned char)(t->target_id >> 24), (unsigned char)(t->target_id >> 16),
                           (unsigned char)(t->target_id >> 8), (unsigned char)t->target_id, 0};
  if (dm_buf_put(&b->arena, head, sizeof head) < 0) {
    sync_nomem(u, err);
    return -1;
  }
  if (sync_key_text(u, &b->arena, t, &t->key, tm, vals, err) < 0)
    return -1;
  *len = (uint32_t)(b->arena.len - *off);
  return 0;
}

static bool sync_same_key(const sync_table *t, const dm_binlog_value *a, const dm_binlog_value *b) {
  for (int j = 0; j < t->key.n; j++) {
    if (t->key.cols[j] >= (int)t->n_cols)
      continue; /* an extract column: the same in every image */
    const dm_binlog_value *x = &a[t->key.cols[j]], *y = &b[t->key.cols[j]];
    if (x->kind != y->kind)
      return false;
    switch (x->kind) {
    case DM_VAL_NULL:
      break;
    case DM_VAL_STRING:
    case DM_VAL_BLOB:
    case DM_VAL_JSON:
    case DM_VAL_GEOMETRY:
    case DM_VAL_RAW:
      if (x->v.s.len != y->v.s.len || x->pad_zeros != y->pad_zeros ||
          memcmp(x->v.s.ptr, y->v.s.ptr, x->v.s.len) != 0)
        return false;
      break;
    case DM_VAL_DECIMAL:
      if (strcmp(x->v.dec, y->v.dec) != 0)
        return false;
      break;
    case DM_VAL_FLOAT:
    case DM_VAL_DOUBLE:
      if (memcmp(&x->v.f, &y->v.f, sizeof x->v.f) != 0)
        return false;
      break;
    case DM_VAL_DATE:
    case DM_VAL_TIME:
    case DM_VAL_DATETIME:
      if (memcmp(&x->v.t, &y->v.t, sizeof x->v.t) != 0)
        return false;
      break;
    case DM_VAL_TIMESTAMP:
      if (x->v.ts.sec != y->v.ts.sec || x->v.ts.usec != y->v.ts.usec)
        return false;
      break;
    default:
      if (x->v.u != y->v.u)
        return false;
    }
  }
  return true;
}

int sync_batch_add_row(sync_unit *u, sync_batch *b, sync_table *t, uint8_t rows_kind,
                       const dm_binlog_table_map *tm, const dm_binlog_value *before,
                       const dm_binlog_value *after, dm_error *err) {
  if (!b->first_ns)
    b->first_ns = dm_clock_ns();
  b->n_rows++;
  if (t->compactable) {
    uint32_t koff, klen;
    if (rows_kind == DM_ROWS_WRITE) {
      if (sync_pk_key(u, b, t, tm, after, &koff, &klen, err) < 0)
        return -1;
      return sync_compact(u, b, t, SYNC_REC_INSERT, tm, after, after, koff, klen, err);
    }
    if (rows_kind == DM_ROWS_DELETE) {
      if (sync_pk_key(u, b, t, tm, before, &koff, &klen, err) < 0)
        return -1;
      return sync_compact(u, b, t, SYNC_REC_DELETE, tm, NULL, before, koff, klen, err);
    }
    if (sync_same_key(t, before, after)) {
      if (sync_pk_key(u, b, t, tm, after, &koff, &klen, err) < 0)
        return -1;
      return sync_compact(u, b, t, SYNC_REC_UPSERT, tm, after, after, koff, klen, err);
    }
    /* the primary key changed: the old row goes, a new one comes */
    if (sync_pk_key(u, b, t, tm, before, &koff, &klen, err) < 0 ||
        sync_compact(u, b, t, SYNC_REC_DELETE, tm, NULL, before, koff, klen, err) < 0 ||
        sync_pk_key(u, b, t, tm, after, &koff, &klen, err) < 0)
      return -1;
    return sync_compact(u, b, t, SYNC_REC_INSERT, tm, after, after, koff, klen, err);
  }

  /* in binlog order */
  uint8_t kind = rows_kind == DM_ROWS_WRITE    ? SYNC_REC_INSERT
                 : rows_kind == DM_ROWS_DELETE ? SYNC_REC_DELETE
                                               : SYNC_REC_UPDATE;
  int i = sync_rec_new(b, t, kind);
  if (i < 0)
    goto nomem;
  sync_rec *r = &b->recs[i];
  if (kind != SYNC_REC_INSERT) {
    /* the key text for DELETE .. IN (..) runs, and the WHERE */
    if (t->key_kind != SYNC_KEY_NONE) {
      r->key_off = (uint32_t)b->arena.len;
      if (sync_key_text(u, &b->arena, t, &t->key, tm, before, err) < 0)
        return -1;
      r->key_len = (uint32_t)(b->arena.len - r->key_off);
    }
    r->where_off = (uint32_t)b->arena.len;
    if (sync_where_text(u, &b->arena, t, tm, before, err) < 0)
      return -1;
    r->where_len = (uint32_t)(b->arena.len - r->where_off);
  }
  if (kind != SYNC_REC_DELETE && t->key_kind != SYNC_KEY_NONE && sync_val_wants_keys(u->val)) {
    /* the validator probes the row by its key after the change (a primary or not-null unique key,
     * as DM's validator); only made while it runs */
    r->vkey_off = (uint32_t)b->arena.len;
    if (sync_key_text(u, &b->arena, t, &t->key, tm, after, err) < 0)
      return -1;
    r->vkey_len = (uint32_t)(b->arena.len - r->vkey_off);
  }
  if (kind != SYNC_REC_DELETE) {
    r->row_off = (uint32_t)b->arena.len;
    if (sync_row_text(u, &b->arena, t, tm, after, err) < 0)
      return -1;
    r->row_len = (uint32_t)(b->arena.len - r->row_off);
  }
  if (kind == SYNC_REC_UPDATE) {
    r->set_off = (uint32_t)b->arena.len;
    if (sync_set_text(u, &b->arena, t, tm, after, err) < 0)
      return -1;
    r->set_len = (uint32_t)(b->arena.len - r->set_off);
  }
  r = &b->recs[i];
  if ((kind != SYNC_REC_INSERT && sync_rec_keys(u, b, r, t, tm, before, err) < 0) ||
      (kind != SYNC_REC_DELETE && sync_rec_keys(u, b, &b->recs[i], t, tm, after, err) < 0))
    return -1;
  return 0;
nomem:
  return sync_nomem(u, err);
}

/* ---- assignment ---- */

static int sync_part_add(sync_batch *b, int w, uint32_t i) {
  if (b->n_part[w] == b->cap_part[w]) {
    uint32_t cap = b->cap_part[w] ? b->cap_part[w] * 2 : 1024;
    void *p = realloc(b->part[w], cap * sizeof *b->part[w]);
    if (!p)
      return -1;
    b->part[w] = p;
    b->cap_part[w] = cap;
  }
  b->part[w][b->n_part[w]++] = i;
  return 0;
}

int sync_batch_assign(sync_batch *b, int workers) {
  for (uint32_t x = 0; x < b->nodes.n; x++)
    b->node_worker[x] = -1;
  for (int w = 0; w < workers; w++)
    b->n_part[w] = 0;
  for (uint32_t i = 0; i < b->n_recs; i++) {
    sync_rec *r = &b->recs[i];
    if (r->dead)
      continue;
    int32_t root = sync_find(b, r->node);
    if (b->node_worker[root] < 0)
      b->node_worker[root] = (int32_t)(b->node_hash[root] % (uint64_t)workers);
    if (sync_part_add(b, b->node_worker[root], i) < 0)
      return -1;
  }
  return 0;
}
