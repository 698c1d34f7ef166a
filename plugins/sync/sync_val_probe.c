/*
 * The validator's batched probe (sync_val.h, docs/validation.md "Checking"): DM's way, one
 * `SELECT ... WHERE (key) IN (...)` per table for a batch of rows, instead of one point SELECT per
 * row. The point probes (`UNION ALL` of one arm per row) were the target's largest cost: each arm is
 * parsed, optimized and run on its own, and on a small machine the target's CPU is the sync's
 * bottleneck (bench/README.md, "validator").
 *
 * The server still compares, never C: each table's arm answers, for each target row it finds, the
 * batch indexes whose key equals the row's (`IF(key=lit, i, NULL)`) and, in full mode, those whose
 * whole row also matches (`key=lit AND (cols)<=>(row)`, the point probe's very comparison), so
 * types, collations, binary columns and NULLs are judged exactly as before. Only a row the batch
 * says is settled is settled by it; every other one (absent, different, a deleted row still there)
 * is probed again at once by the point probe, which decides its fate and reads the target's row
 * for an error row: the answers are the same as before, and a failing row costs one more probe.
 */
#include <stdlib.h>
#include <string.h>

#include "sync.h"
#include "sync_val.h"

/* keys per table arm: under MariaDB's in_predicate_conversion_threshold (1000), so the IN list
 * stays a list of ranges on the key, never a derived table joined with its own type rules */
#define VAL_ARM_MAX 999

/* One probe of row r (index i of the statement) into q: (SELECT i, same, dst FROM .. WHERE key). */
void sync_val_point_sql(const sync_val *v, const sync_val_row *r, int i, dm_buf *q) {
  const sync_val_table *t = v->tables[r->table];
  const char *row = r->data + r->key_len + 1;
  if (q->len)
    dm_buf_puts(q, " UNION ALL ");
  dm_buf_printf(q, "(SELECT %d,", i);
  if (r->kind == 2 || v->cfg.mode == SYNC_VAL_FAST)
    dm_buf_puts(q, r->kind == 2 ? "0,JSON_ARRAY" : "1,NULL");
  else {
    /* <=>: the server compares with the columns' own types and collations. The row literal is
     * sent once (IF's NULL says equal): it is most of the statement's bytes, and parsing and
     * comparing it twice made full mode's probes the target's largest cost (bench/README.md) */
    dm_buf_printf(q, "1,IF(%s<=>%s,NULL,JSON_ARRAY", t->cols.p, row);
  }
  if (r->kind == 2 || v->cfg.mode != SYNC_VAL_FAST)
    dm_buf_puts(q, t->cols.p);
  if (r->kind != 2 && v->cfg.mode != SYNC_VAL_FAST)
    dm_buf_putc(q, ')');
  dm_buf_printf(q, " FROM %s WHERE %s=%s LIMIT 1)", t->qname.p, t->keycols.p, r->data);
}

/* A key literal FIELD() compares exactly as `=` does, one batch key per target row: a plain
 * integer of at most 15 characters. Every numeric column type compares it by value, and such a
 * value is exact even as a DOUBLE, so distinct literals (the pending set holds one per key's
 * bytes) are distinct values. Strings (collations, PAD SPACE) and longer numbers are not. */
static bool field_exact(const char *k) {
  size_t n = 0;
  if (*k == '-')
    k++, n++;
  if (*k < '0' || *k > '9')
    return false;
  for (; *k >= '0' && *k <= '9'; k++)
    n++;
  return !*k && n <= 15;
}

/* One table's arm of integer keys: `ELT(FIELD(key, k1..km), e1..em)` evaluates, for each target
 * row, the one batch row of its key (FIELD stops at its key; ELT evaluates only the argument it
 * returns), where the general arm below evaluates every batch row's IF for each: m comparisons a
 * row (m up to batch-query-size, 100 by default) instead of 2m IFs, the target's largest cost of
 * full mode (bench/README.md, "validator"). e_j is "i" (found), in full mode "i=" when the whole row
 * is equal too (`<=>`, as the point probe compares). */
static void batch_arm_int(const sync_val *v, sync_val_row *const *rows, const int *idx, int m,
                          dm_buf *q) {
  const sync_val_table *t = v->tables[rows[idx[0]]->table];
  if (q->len)
    dm_buf_puts(q, " UNION ALL ");
  dm_buf_printf(q, "(SELECT ELT(FIELD(%s", t->keycols.p);
  for (int j = 0; j < m; j++)
    dm_buf_printf(q, ",%s", rows[idx[j]]->data);
  dm_buf_putc(q, ')');
  for (int j = 0; j < m; j++) {
    const sync_val_row *r = rows[idx[j]];
    if (r->kind == 2 || v->cfg.mode == SYNC_VAL_FAST)
      dm_buf_printf(q, ",%d", idx[j]);
    else
      dm_buf_printf(q, ",IF(%s<=>%s,'%d=',%d)", t->cols.p, r->data + r->key_len + 1, idx[j],
                    idx[j]);
  }
  dm_buf_printf(q, "),NULL FROM %s WHERE %s IN (", t->qname.p, t->keycols.p);
  for (int j = 0; j < m; j++)
    dm_buf_printf(q, "%s%s", j ? "," : "", rows[idx[j]]->data);
  dm_buf_puts(q, "))");
}

/* One table's arm: rows[i] for i in idx[0..m) (all of table t). */
static void batch_arm(const sync_val *v, sync_val_row *const *rows, const int *idx, int m,
                      dm_buf *q) {
  const sync_val_table *t = v->tables[rows[idx[0]]->table];
  if (q->len)
    dm_buf_puts(q, " UNION ALL ");
  dm_buf_puts(q, "(SELECT CONCAT_WS(','");
  for (int j = 0; j < m; j++)
    dm_buf_printf(q, ",IF(%s=%s,%d,NULL)", t->keycols.p, rows[idx[j]]->data, idx[j]);
  dm_buf_putc(q, ')');
  /* full mode: the indexes whose row equals too (AND stops at a key that differs, so each target
   * row runs the one comparison of its own key); fast mode needs the key only */
  int full = 0;
  for (int j = 0; v->cfg.mode != SYNC_VAL_FAST && j < m; j++) {
    const sync_val_row *r = rows[idx[j]];
    if (r->kind == 2)
      continue;
    dm_buf_printf(q, "%s,IF(%s=%s AND %s<=>%s,%d,NULL)", full++ ? "" : ",CONCAT_WS(','",
                  t->keycols.p, r->data, t->cols.p, r->data + r->key_len + 1, idx[j]);
  }
  dm_buf_puts(q, full ? ")" : ",NULL");
  dm_buf_printf(q, " FROM %s WHERE %s IN (", t->qname.p, t->keycols.p);
  for (int j = 0; j < m; j++)
    dm_buf_printf(q, "%s%s", j ? "," : "", rows[idx[j]]->data);
  dm_buf_puts(q, "))");
}

int sync_val_batch_sql(const sync_val *v, sync_val_row *const *rows, int n, dm_buf *q) {
  int *idx = malloc((size_t)n * sizeof *idx);
  bool *done = calloc((size_t)n, sizeof *done);
  if (!idx || !done) {
    free(idx);
    free(done);
    return -1;
  }
  dm_buf_reset(q);
  /* grouped by table: a batch holds few tables, so the scan per group is short */
  for (int i = 0; i < n; i++) {
    if (done[i])
      continue;
    int m = 0;
    for (int j = i; j < n && m < VAL_ARM_MAX; j++)
      if (!done[j] && rows[j]->table == rows[i]->table) {
        done[j] = true;
        idx[m++] = j;
      }
    bool exact = true;
    for (int j = 0; exact && j < m; j++)
      exact = field_exact(rows[idx[j]]->data);
    (exact ? batch_arm_int : batch_arm)(v, rows, idx, m, q);
  }
  free(idx);
  free(done);
  return q->oom ? -1 : 0;
}

/* "3,17,42" -> st[i] |= bit for each index in [0, n); "17=" (batch_arm_int's): SAME too */
static void batch_mark(const char *s, int n, uint8_t *st, uint8_t bit) {
  while (s && *s) {
    char *end;
    long i = strtol(s, &end, 10);
    if (end == s)
      return;
    uint8_t b = bit;
    if (*end == '=')
      b |= SYNC_VAL_SAME, end++;
    if (i >= 0 && i < n)
      st[i] |= b;
    s = *end == ',' ? end + 1 : end;
  }
}

int sync_val_batch_query(MYSQL *c, const dm_buf *q, int n, uint8_t *st, unsigned *code) {
  *code = 0;
  if (mysql_real_query(c, q->p, q->len) != 0) {
    *code = mysql_errno(c);
    return *code < 2000 ? 1 : -1; /* 2000 and up: the client's (the connection) */
  }
  MYSQL_RES *res = mysql_store_result(c);
  if (!res) {
    *code = mysql_errno(c);
    return *code && *code < 2000 ? 1 : -1;
  }
  MYSQL_ROW row;
  while ((row = mysql_fetch_row(res)) != NULL) {
    batch_mark(row[0], n, st, SYNC_VAL_FOUND);
    batch_mark(row[1], n, st, SYNC_VAL_SAME);
  }
  mysql_free_result(res);
  return 0;
}
