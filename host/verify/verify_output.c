/* What verify says: a progress line on a terminal, each table's summary and its differing rows
 * (text), or one JSON document (--json, json-c as everywhere). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "error_json.h"
#include "verify_internal.h"

#define VF_TEXT_VALUE_MAX 64   /* bytes of a value shown in the text report */
#define VF_JSON_VALUE_MAX 1024 /* and in the JSON document */

double vf_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A value for JSON: null, "0x<hex>" for a binary column, else the text; cut at max bytes. */
static json_object *vf_json_value(const char *v, unsigned long len, bool binary) {
  if (!v)
    return NULL;
  unsigned long n = len > VF_JSON_VALUE_MAX ? VF_JSON_VALUE_MAX : len;
  if (!binary)
    return json_object_new_string_len(v, (int)n);
  char *h = malloc(2 * (size_t)n + 3);
  if (!h)
    return NULL;
  static const char hex[] = "0123456789abcdef";
  h[0] = '0';
  h[1] = 'x';
  for (unsigned long i = 0; i < n; i++) {
    h[2 + 2 * i] = hex[(unsigned char)v[i] >> 4];
    h[3 + 2 * i] = hex[(unsigned char)v[i] & 15];
  }
  json_object *o = json_object_new_string_len(h, (int)(2 * n + 2));
  free(h);
  return o;
}

static json_object *vf_json_row(const vf_table *t, char **v, unsigned long *len, bool key_only) {
  if (!v)
    return NULL;
  json_object *o = json_object_new_object();
  int n = key_only ? t->n_key : t->n_cols;
  for (int j = 0; j < n; j++) {
    int i = key_only ? t->key[j] : j;
    json_object_object_add(o, t->cols[i].name, vf_json_value(v[i], len[i], t->cols[i].binary));
  }
  return o;
}

/* "(v1, v2, ...)" as SQL literals, each cut at VF_TEXT_VALUE_MAX bytes; key_only: "`k`=v, ..." */
static void vf_text_row(vf_run *r, dm_buf *b, const vf_table *t, char **v, unsigned long *len,
                        bool key_only) {
  char q[DM_DB_QUOTED_IDENT_MAX + 1];
  int n = key_only ? t->n_key : t->n_cols;
  if (!key_only)
    dm_buf_puts(b, "(");
  for (int j = 0; j < n; j++) {
    int i = key_only ? t->key[j] : j;
    if (j)
      dm_buf_puts(b, ", ");
    if (key_only)
      dm_buf_printf(b, "%s=", dm_db_quoted(t->cols[i].name, q, sizeof q));
    unsigned long l = len[i] > VF_TEXT_VALUE_MAX ? VF_TEXT_VALUE_MAX : len[i];
    vf_sql_literal(b, r->target, v[i], l, t->cols[i].binary);
    if (l < len[i])
      dm_buf_puts(b, "...");
  }
  if (!key_only)
    dm_buf_puts(b, ")");
}

static const char *const vf_kind_name[] = {"missing", "extra", "changed"};

void vf_out_row(vf_run *r, vf_table *t, vf_kind kind, char **src, unsigned long *src_len,
                char **dst, unsigned long *dst_len) {
  if (r->collect) { /* a re-check's pass (--at-checkpoint): only its key, checked again */
    vf_cp_key_cond(r, t, src ? src : dst, src ? src_len : dst_len);
    return;
  }
  if (kind == VF_MISSING)
    t->rows_missing++;
  else if (kind == VF_EXTRA)
    t->rows_extra++;
  else
    t->rows_changed++;
  if (t->n_listed >= DMH_VERIFY_LIST_MAX)
    return;
  t->n_listed++;
  char **any = src ? src : dst;
  unsigned long *any_len = src ? src_len : dst_len;
  if (!t->listed)
    t->listed = json_object_new_array();
  json_object *o = json_object_new_object();
  json_object_object_add(o, "kind", json_object_new_string(vf_kind_name[kind]));
  json_object_object_add(o, "key", t->n_key ? vf_json_row(t, any, any_len, true) : NULL);
  json_object_object_add(o, "source", vf_json_row(t, src, src_len, false));
  json_object_object_add(o, "target", vf_json_row(t, dst, dst_len, false));
  json_object_array_add(t->listed, o);
  if (r->opts->json)
    return;
  static const char *const what[] = {"missing on target", "extra on target", "changed"};
  dm_buf *b = &t->text;
  dm_buf_printf(b, "  %s: ", what[kind]);
  if (t->n_key)
    vf_text_row(r, b, t, any, any_len, true);
  else
    dm_buf_puts(b, "(no key)");
  if (src) {
    dm_buf_puts(b, "\n    source ");
    vf_text_row(r, b, t, src, src_len, false);
  }
  if (dst) {
    dm_buf_puts(b, "\n    target ");
    vf_text_row(r, b, t, dst, dst_len, false);
  }
  dm_buf_puts(b, "\n");
}

void vf_out_progress(vf_run *r, const vf_table *t, bool done) {
  if (!r->opts->progress)
    return;
  if (done) { /* the caller holds the lock */
    fputs("\r\033[K", stderr);
    return;
  }
  double now = vf_now();
  if (now - r->progress_at < 0.25)
    return;
  r->progress_at = now;
  pthread_mutex_lock(r->lock);
  fprintf(stderr, "\r\033[Kverify `%s`.`%s`: %lld chunk(s), %lld row(s)", t->to_schema, t->to_table,
          t->chunks, t->rows);
  pthread_mutex_unlock(r->lock);
}

static void vf_out_table_text(vf_run *r, const vf_table *t);

static bool vf_table_differs(const vf_table *t) {
  return t->diff_chunks || t->rows_missing || t->rows_extra || t->rows_changed || t->missing[0];
}

static const char *vf_table_state(const vf_table *t) {
  return t->failed ? "error" : vf_table_differs(t) ? "different" : "equal";
}

void vf_out_table(vf_run *r, const vf_table *t) {
  pthread_mutex_lock(r->lock); /* a table's lines together, whichever thread ends it */
  vf_out_progress(r, t, true);
  if (!r->opts->json)
    vf_out_table_text(r, t);
  pthread_mutex_unlock(r->lock);
}

static void vf_out_table_text(vf_run *r, const vf_table *t) {
  FILE *out = r->opts->out;
  fprintf(out, "`%s`.`%s`", t->to_schema, t->to_table);
  for (int i = 0; i < t->n_shards; i++)
    fprintf(out, "%s`%s`.`%s`", i ? " + " : " <- ", t->shards[i][0], t->shards[i][1]);
  fprintf(out,
          ": %s: %lld rows, %lld chunks, %lld differing, %lld rows differ (%lld missing, %lld "
          "extra, %lld changed), %.2f s\n",
          vf_table_state(t), t->rows, t->chunks, t->diff_chunks,
          t->rows_missing + t->rows_extra + t->rows_changed, t->rows_missing, t->rows_extra,
          t->rows_changed, t->seconds);
  if (!t->failed && t->n_cols && !t->n_key)
    fprintf(out, "  no key: compared as a whole\n");
  if (t->missing[0])
    fprintf(out, "  columns the target lacks: %s\n", t->missing);
  if (t->text.p)
    fputs(t->text.p, out);
  long long listed = t->rows_missing + t->rows_extra + t->rows_changed;
  if (listed > t->n_listed)
    fprintf(out, "  %lld more rows differ, not listed%s\n", listed - t->n_listed,
            r->opts->fix_path ? " (the fix file has them all)" : "");
  if (t->failed) {
    char buf[2048];
    dmh_error_format(&t->err, buf, sizeof buf);
    fprintf(out, "  %s\n", buf);
  }
}

static json_object *vf_table_json(const vf_table *t) {
  json_object *o = json_object_new_object();
  char name[600];
  snprintf(name, sizeof name, "%s.%s", t->to_schema, t->to_table);
  json_object_object_add(o, "target", json_object_new_string(name));
  json_object *src = json_object_new_array();
  for (int i = 0; i < t->n_shards; i++) {
    snprintf(name, sizeof name, "%s.%s", t->shards[i][0], t->shards[i][1]);
    json_object_array_add(src, json_object_new_string(name));
  }
  json_object_object_add(o, "sources", src);
  json_object_object_add(o, "state", json_object_new_string(vf_table_state(t)));
  json_object *key = json_object_new_array();
  for (int i = 0; i < t->n_key; i++)
    json_object_array_add(key, json_object_new_string(t->cols[t->key[i]].name));
  json_object_object_add(o, "key", key);
  json_object_object_add(o, "no_key", json_object_new_boolean(!t->failed && !t->n_key));
  json_object_object_add(o, "missing_columns", json_object_new_string(t->missing));
  json_object_object_add(o, "rows", json_object_new_int64(t->rows));
  json_object_object_add(o, "chunks", json_object_new_int64(t->chunks));
  json_object_object_add(o, "differing_chunks", json_object_new_int64(t->diff_chunks));
  json_object_object_add(o, "rechecks", json_object_new_int64(t->rechecks));
  json_object_object_add(o, "rows_missing", json_object_new_int64(t->rows_missing));
  json_object_object_add(o, "rows_extra", json_object_new_int64(t->rows_extra));
  json_object_object_add(o, "rows_changed", json_object_new_int64(t->rows_changed));
  json_object_object_add(o, "seconds", json_object_new_double(t->seconds));
  json_object_object_add(o, "differences",
                         t->listed ? json_object_get(t->listed) : json_object_new_array());
  if (t->failed)
    json_object_object_add(o, "error", dmh_error_to_json(&t->err, NULL));
  return o;
}

void vf_out_end(vf_run *r, const dm_error *run_err, int rc) {
  static const char *const result[] = {"equal", "different", "error"};
  long long rows = 0;
  int n_diff = 0, n_err = 0;
  for (int i = 0; i < r->n_tables; i++) {
    rows += r->tables[i].rows;
    n_diff += !r->tables[i].failed && vf_table_differs(&r->tables[i]);
    n_err += r->tables[i].failed;
  }
  if (!r->opts->json) {
    fprintf(r->opts->out, "verify: %d table(s), %lld rows%s: %s", r->n_tables, rows,
            r->opts->at_checkpoint ? " (at the sync's checkpoint)" : "", result[rc]);
    if (n_diff)
      fprintf(r->opts->out, ", %d table(s) differ", n_diff);
    if (n_err)
      fprintf(r->opts->out, ", %d table(s) not compared", n_err);
    fprintf(r->opts->out, "\n");
    return;
  }
  json_object *o = json_object_new_object();
  json_object_object_add(o, "task", json_object_new_string(r->task->name));
  json_object_object_add(o, "source", json_object_new_string(r->src->source_id));
  json_object_object_add(o, "result", json_object_new_string(result[rc]));
  json_object *snap = json_object_new_object();
  json_object_object_add(snap, "binlog_file", json_object_new_string(r->snap_file));
  json_object_object_add(snap, "binlog_pos", json_object_new_int64((int64_t)r->snap_pos));
  json_object_object_add(o, "source_snapshot", snap);
  json_object_object_add(o, "at_checkpoint", json_object_new_boolean(r->opts->at_checkpoint));
  if (r->has_cp) { /* a paused sync's checkpoint: behind the source's snapshot, the target lags */
    dm_position at = {0};
    dm_strlcpy(at.name, r->snap_file, sizeof at.name);
    at.pos = r->snap_pos;
    json_object *cp = json_object_new_object();
    json_object_object_add(cp, "binlog_file", json_object_new_string(r->sync_cp.name));
    json_object_object_add(cp, "binlog_pos", json_object_new_int64((int64_t)r->sync_cp.pos));
    json_object_object_add(cp, "binlog_gtid", json_object_new_string(r->sync_cp.gtid));
    json_object_object_add(o, "sync_checkpoint", cp);
    json_object_object_add(o, "sync_behind",
                           json_object_new_boolean(r->sync_cp.name[0] && at.name[0] &&
                                                   dm_position_compare_file(&r->sync_cp, &at) < 0));
  }
  json_object *tables = json_object_new_array();
  for (int i = 0; i < r->n_tables; i++)
    json_object_array_add(tables, vf_table_json(&r->tables[i]));
  json_object_object_add(o, "tables", tables);
  json_object_object_add(o, "tables_differing", json_object_new_int(n_diff));
  json_object_object_add(o, "tables_failed", json_object_new_int(n_err));
  if (run_err && run_err->code)
    json_object_object_add(o, "error", dmh_error_to_json(run_err, NULL));
  fprintf(
      r->opts->out, "%s\n",
      json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put(o);
}
