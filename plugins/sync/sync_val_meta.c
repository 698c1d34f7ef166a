/*
 * The continuous validator's tables on the target (sync_val.h, docs/validation.md). DM's
 * (dm/syncer/validator_checkpoint.go), named by the SDK's task_meta.h (one owner: remove-meta
 * drops them):
 *   <meta>.<task>_validator_checkpoint      position, processed counts, and (dmhost's columns
 *                                           mode, stage) the wish a validation command left
 *   <meta>.<task>_validator_pending_change  the rows not checked yet (or failing, before
 *                                           row-error-delay), as they were at that position
 *   <meta>.<task>_validator_error_change    the error rows (status 1 new, 2 ignored, 3 resolved)
 * The checkpoint row and the pending rows are written in one transaction, from one copy taken
 * under the validator's lock: a restart finds the pending set that belongs to the position.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sync.h"
#include "sync_val.h"

const char *const sync_val_types[3] = {"Deleted rows exist", "Expected rows not exist",
                                       "Column data not matched"};
const char *const sync_val_modes[3] = {"none", "fast", "full"};

/* The pending rows one flush writes at most (one packet: under max_allowed_packet's 16 MiB
 * default); the rest stay in memory and are not persisted by that flush (logged). */
#define VAL_FLUSH_MAX (8u << 20)

int sync_val_names(sync_val *v) {
  sync_unit *u = v->u;
  if (v->err_table[0])
    return 0;
  static const dm_task_meta_table which[3] = {DM_META_VALIDATOR_CHECKPOINT,
                                              DM_META_VALIDATOR_PENDING_CHANGE,
                                              DM_META_VALIDATOR_ERROR_CHANGE};
  char *out[3] = {v->cp_table, v->pend_table, v->err_table};
  const char *task = u->host->task_name(u->ctx);
  for (int i = 0; i < 3; i++) {
    char n[DM_META_NAME_MAX + 1];
    dm_buf b = {0};
    int bad = dm_task_meta_table_name(task, which[i], n, sizeof n) < 0 ||
              sync_sql_qualified(&b, u->meta, n) < 0 || b.len >= sizeof v->cp_table;
    if (!bad)
      memcpy(out[i], b.p, b.len + 1);
    dm_buf_free(&b);
    if (bad) {
      v->cp_table[0] = v->pend_table[0] = v->err_table[0] = '\0';
      return -1;
    }
  }
  return 0;
}

int sync_val_prepare(sync_val *v, MYSQL *c, dm_error *err) {
  sync_unit *u = v->u;
  if (sync_val_names(v) < 0) {
    u->host->error_make(u->ctx, err, DM_ERR_CONFIG_INVALID, NULL,
                        "validator: the task's name is too long for its meta tables "
                        "(`<task>_validator_pending_change` must fit 64 characters)");
    return -1;
  }
  dm_buf q = {0};
  dm_buf_printf(&q, "CREATE DATABASE IF NOT EXISTS ");
  sync_sql_ident(&q, u->meta, strlen(u->meta));
  dm_buf_printf(&q,
                ";CREATE TABLE IF NOT EXISTS %s (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, "
                "source VARCHAR(32) NOT NULL, binlog_name VARCHAR(128), binlog_pos INT UNSIGNED, "
                "binlog_gtid TEXT, procd_ins BIGINT UNSIGNED NOT NULL, procd_upd BIGINT UNSIGNED "
                "NOT NULL, procd_del BIGINT UNSIGNED NOT NULL, revision BIGINT NOT NULL, mode "
                "VARCHAR(8) NOT NULL DEFAULT '', stage VARCHAR(16) NOT NULL DEFAULT '', "
                "create_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, update_time TIMESTAMP "
                "NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP, UNIQUE KEY "
                "uk_source (source));"
                "CREATE TABLE IF NOT EXISTS %s (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, "
                "source VARCHAR(32) NOT NULL, schema_name VARCHAR(128) NOT NULL, table_name "
                "VARCHAR(128) NOT NULL, row_pk VARBINARY(512) NOT NULL, data JSON NOT NULL, "
                "revision BIGINT NOT NULL, create_time TIMESTAMP NOT NULL DEFAULT "
                "CURRENT_TIMESTAMP, update_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON "
                "UPDATE CURRENT_TIMESTAMP, INDEX idx_source_schema_table_key(source, schema_name, "
                "table_name, row_pk), INDEX idx_revision(revision));"
                "CREATE TABLE IF NOT EXISTS %s (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, "
                "source VARCHAR(32) NOT NULL, src_schema_name VARCHAR(128) NOT NULL, "
                "src_table_name VARCHAR(128) NOT NULL, row_pk VARBINARY(512) NOT NULL, "
                "dst_schema_name VARCHAR(128) NOT NULL, dst_table_name VARCHAR(128) NOT NULL, "
                "data JSON NOT NULL, dst_data JSON NOT NULL, error_type INT NOT NULL, status INT "
                "NOT NULL, create_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, update_time "
                "TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP, UNIQUE "
                "KEY uk_source_schema_table_key(source, src_schema_name, src_table_name, row_pk), "
                "INDEX idx_status(status))",
                v->cp_table, v->pend_table, v->err_table);
  int rc = q.oom ? sync_nomem(u, err)
                 : sync_db_exec(u, c, q.p, q.len, "validator: cannot create its tables", err);
  dm_buf_free(&q);
  return rc;
}

static void put_hex(dm_buf *q, const char *name, const char *s, size_t n) {
  static const char hx[] = "0123456789abcdef";
  dm_buf_printf(q, ",\"%s\":\"", name);
  for (size_t i = 0; i < n; i++) {
    char two[2] = {hx[(unsigned char)s[i] >> 4], hx[(unsigned char)s[i] & 15]};
    dm_buf_put(q, two, 2);
  }
  dm_buf_putc(q, '"');
}

/* One pending row's VALUES tuple: its literals as hex in a JSON object (any bytes stay JSON). */
static void val_pending_tuple(sync_val *v, MYSQL *c, const sync_val_row *r, dm_buf *q) {
  sync_unit *u = v->u;
  const sync_val_table *t = v->tables[r->table];
  dm_buf_putc(q, '(');
  sync_sql_lit(c, q, u->source_id, strlen(u->source_id));
  dm_buf_putc(q, ',');
  sync_sql_lit(c, q, t->sdb, strlen(t->sdb));
  dm_buf_putc(q, ',');
  sync_sql_lit(c, q, t->sname, strlen(t->sname));
  dm_buf_putc(q, ',');
  sync_sql_lit(c, q, r->data, r->key_len > 512 ? 512 : r->key_len);
  dm_buf_printf(q, ",'{\"k\":%u", r->kind);
  put_hex(q, "tdb", t->tdb, strlen(t->tdb));
  put_hex(q, "tn", t->tname, strlen(t->tname));
  put_hex(q, "c", t->cols.p, t->cols.len);
  put_hex(q, "kc", t->keycols.p, t->keycols.len);
  put_hex(q, "key", r->data, r->key_len);
  put_hex(q, "row", r->data + r->key_len + 1, r->row_len);
  dm_buf_puts(q, "}',1)");
}

/* The checkpoint row and the pending rows, one transaction, one copy under the lock. */
static int val_flush_locked(sync_val *v, MYSQL *c, dm_error *err) {
  sync_unit *u = v->u;
  dm_buf q = {0};
  uint64_t left = 0;
  pthread_mutex_lock(&v->lock);
  dm_position at = v->pos;
  bool has = v->has_pos;
  dm_buf_printf(&q, "START TRANSACTION;DELETE FROM %s WHERE source = ", v->pend_table);
  sync_sql_lit(c, &q, u->source_id, strlen(u->source_id));
  bool first = true;
  for (uint32_t i = 0; i < v->n_buckets; i++)
    for (const sync_val_row *r = v->buckets[i]; r; r = r->chain) {
      if (q.len > VAL_FLUSH_MAX) {
        left++;
        continue;
      }
      dm_buf_puts(&q, first ? ";INSERT INTO " : ",");
      if (first)
        dm_buf_printf(&q, "%s (source, schema_name, table_name, row_pk, data, revision) VALUES ",
                      v->pend_table);
      first = false;
      val_pending_tuple(v, c, r, &q);
    }
  dm_buf_printf(&q,
                ";INSERT INTO %s (source, binlog_name, binlog_pos, binlog_gtid, procd_ins, "
                "procd_upd, procd_del, revision, mode, stage) VALUES (",
                v->cp_table);
  sync_sql_lit(c, &q, u->source_id, strlen(u->source_id));
  dm_buf_putc(&q, ',');
  sync_sql_lit(c, &q, v->pos.name, strlen(v->pos.name));
  dm_buf_printf(&q, ",%" PRIu64 ",", v->pos.pos);
  sync_sql_lit(c, &q, v->pos.gtid, strlen(v->pos.gtid));
  dm_buf_printf(&q, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",1,'%s','%s')", v->processed[0],
                v->processed[1], v->processed[2], sync_val_modes[v->cfg.mode],
                v->wish ? "running" : "stopped");
  pthread_mutex_unlock(&v->lock);
  dm_buf_puts(&q, " ON DUPLICATE KEY UPDATE binlog_name=VALUES(binlog_name), "
                  "binlog_pos=VALUES(binlog_pos), binlog_gtid=VALUES(binlog_gtid), "
                  "procd_ins=VALUES(procd_ins), procd_upd=VALUES(procd_upd), "
                  "procd_del=VALUES(procd_del), revision=revision+1, mode=VALUES(mode), "
                  "stage=VALUES(stage);COMMIT");
  if (left)
    u->host->logf(u->ctx, DM_LOG_WARN,
                  "validator: %" PRIu64 " pending rows did not fit this flush (%u bytes at most); "
                  "they are checked from memory, a restart before the next flush forgets them",
                  left, VAL_FLUSH_MAX);
  int rc = q.oom ? sync_nomem(u, err)
                 : sync_db_exec(u, c, q.p, q.len, "validator: cannot flush its checkpoint", err);
  if (rc < 0)
    mysql_query(c, "ROLLBACK");
  dm_buf_free(&q);
  if (rc == 0) {
    pthread_mutex_lock(&v->lock);
    v->flushed = at;
    v->has_flushed = has;
    pthread_mutex_unlock(&v->lock);
  }
  return rc;
}

int sync_val_flush(sync_val *v, MYSQL *c, dm_error *err) {
  pthread_mutex_lock(&v->flush_lock);
  int rc = val_flush_locked(v, c, err);
  pthread_mutex_unlock(&v->flush_lock);
  return rc;
}

void sync_val_mark(sync_val *v, MYSQL *c, const dm_position *pos) {
  pthread_mutex_lock(&v->lock);
  bool on = v->thread_on && v->wish;
  if (on) {
    v->pos = *pos;
    v->has_pos = true;
  }
  pthread_mutex_unlock(&v->lock);
  dm_error e = {0};
  /* twice: the validator's thread may flush at the same moment (a lock wait or deadlock) */
  if (!on || sync_val_flush(v, c, &e) == 0 || sync_val_flush(v, c, &e) == 0)
    return;
  v->u->host->logf(v->u->ctx, DM_LOG_WARN,
                   "validator: cannot flush its checkpoint at %s:%" PRIu64 " (%s): after a kill -9 "
                   "before its next flush, the next start replays only the rows after this point "
                   "(those before it since the last flush are logged as not validated)",
                   pos->name, pos->pos, e.message);
}

bool sync_val_keep_from(sync_val *v, dm_position *out) {
  pthread_mutex_lock(&v->lock);
  bool keep = v->thread_on && v->wish && v->has_flushed;
  if (keep)
    *out = v->flushed;
  pthread_mutex_unlock(&v->lock);
  return keep;
}

/* The hex value of `"name":"..."` in a pending row's JSON into out (bytes; NUL added). */
static int get_hex(const char *json, const char *name, dm_buf *out) {
  char pat[16];
  snprintf(pat, sizeof pat, "\"%s\":\"", name);
  const char *p = strstr(json, pat);
  if (!p)
    return -1;
  p += strlen(pat);
  dm_buf_reset(out);
  for (; p[0] && p[0] != '"' && p[1]; p += 2) {
    unsigned hi, lo;
    if (sscanf(p, "%1x%1x", &hi, &lo) != 2)
      return -1;
    dm_buf_putc(out, (char)(hi << 4 | lo));
  }
  return out->oom || p[0] != '"' ? -1 : 0;
}

int sync_val_load(sync_val *v, MYSQL *c, dm_error *err) {
  sync_unit *u = v->u;
  if (v->loaded)
    return 0;
  char q[512];
  snprintf(q, sizeof q,
           "SELECT binlog_name, binlog_pos, binlog_gtid, procd_ins, procd_upd, procd_del, mode, "
           "stage FROM %s WHERE source = '%s'",
           v->cp_table, u->source_id); /* source-id: letters, digits, _ and - */
  if (mysql_query(c, q) != 0) {
    sync_db_error(u, c, "validator: cannot read its checkpoint", err);
    return -1;
  }
  MYSQL_RES *res = mysql_store_result(c);
  MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
  pthread_mutex_lock(&v->lock);
  if (row) {
    dm_strlcpy(v->pos.name, row[0] ? row[0] : "", sizeof v->pos.name);
    v->pos.pos = row[1] ? strtoull(row[1], NULL, 10) : 0;
    dm_strlcpy(v->pos.gtid, row[2] ? row[2] : "", sizeof v->pos.gtid);
    v->has_pos = v->pos.name[0] != '\0';
    v->flushed = v->pos;
    v->has_flushed = v->has_pos;
    for (int i = 0; i < 3; i++)
      v->processed[i] = row[3 + i] ? strtoull(row[3 + i], NULL, 10) : 0;
    /* the wish a validation command left wins over the task's mode */
    for (int m = 1; m < 3 && row[6] && !v->wish_op; m++)
      if (!strcmp(row[6], sync_val_modes[m]))
        v->cfg.mode = m;
    if (row[7] && row[7][0] && !v->wish_op)
      v->wish = !strcmp(row[7], "running");
  }
  pthread_mutex_unlock(&v->lock);
  if (res)
    mysql_free_result(res);
  snprintf(q, sizeof q,
           "SELECT schema_name, table_name, data FROM %s WHERE source = '%s' ORDER BY id",
           v->pend_table, u->source_id);
  if (mysql_query(c, q) != 0) {
    sync_db_error(u, c, "validator: cannot read its pending rows", err);
    return -1;
  }
  res = mysql_use_result(c); /* row by row: the set is bounded by max-pending-row-size */
  dm_buf tdb = {0}, tn = {0}, cols = {0}, kc = {0}, key = {0}, lit = {0};
  uint64_t n = 0, bad = 0;
  while (res && (row = mysql_fetch_row(res)) != NULL) {
    const char *js = row[2] ? row[2] : "";
    const char *k = strstr(js, "\"k\":");
    uint32_t ti;
    if (!k || get_hex(js, "tdb", &tdb) < 0 || get_hex(js, "tn", &tn) < 0 ||
        get_hex(js, "c", &cols) < 0 || get_hex(js, "kc", &kc) < 0 || get_hex(js, "key", &key) < 0 ||
        get_hex(js, "row", &lit) < 0) {
      bad++;
      continue;
    }
    uint8_t kind = (uint8_t)(k[4] - '0');
    pthread_mutex_lock(&v->lock);
    int rc = kind > 2 ||
                     sync_val_table_add(v, row[0] ? row[0] : "", row[1] ? row[1] : "", tdb.p, tn.p,
                                        cols.p, kc.p, true, &ti) < 0 ||
                     sync_val_add_locked(v, ti, kind, key.p, (uint32_t)key.len,
                                         lit.len ? lit.p : "", (uint32_t)lit.len) < 0
                 ? -1
                 : 0;
    pthread_mutex_unlock(&v->lock);
    if (rc < 0)
      bad++;
    else
      n++;
  }
  if (res)
    mysql_free_result(res);
  dm_buf_free(&tdb);
  dm_buf_free(&tn);
  dm_buf_free(&cols);
  dm_buf_free(&kc);
  dm_buf_free(&key);
  dm_buf_free(&lit);
  v->loaded = true;
  if (n || bad || v->has_pos)
    u->host->logf(u->ctx, DM_LOG_INFO,
                  "validator: from its checkpoint at %s:%" PRIu64 ", %" PRIu64
                  " pending rows (%" PRIu64 " unreadable, dropped)",
                  v->pos.name, v->pos.pos, n, bad);
  return 0;
}

int sync_val_error_row(sync_val *v, MYSQL *c, const sync_val_table *t, const char *key,
                       const char *row, int type, const char *dst, dm_error *err) {
  sync_unit *u = v->u;
  dm_buf q = {0};
  dm_buf_printf(&q,
                "INSERT INTO %s (source, src_schema_name, src_table_name, row_pk, "
                "dst_schema_name, dst_table_name, data, dst_data, error_type, status) VALUES (",
                v->err_table);
  const char *parts[5] = {u->source_id, t->sdb, t->sname, key, t->tdb};
  for (int i = 0; i < 5; i++) {
    size_t n = strlen(parts[i]);
    sync_sql_lit(c, &q, parts[i], i == 3 && n > 512 ? 512 : n); /* row_pk: bounded */
    dm_buf_putc(&q, ',');
  }
  sync_sql_lit(c, &q, t->tname, strlen(t->tname));
  /* the source's row as the server's JSON of the literals ("[]" for a delete) */
  dm_buf_printf(&q, ",%s%s,", row[0] ? "JSON_ARRAY" : "'[]'", row);
  if (dst)
    sync_sql_lit(c, &q, dst, strlen(dst));
  else
    dm_buf_puts(&q, "'[]'");
  dm_buf_printf(&q,
                ",%d,1) ON DUPLICATE KEY UPDATE data=VALUES(data), dst_data=VALUES(dst_data), "
                "error_type=VALUES(error_type), status=1",
                type);
  int rc = q.oom ? sync_nomem(u, err)
                 : sync_db_exec(u, c, q.p, q.len, "validator: cannot write an error row", err);
  dm_buf_free(&q);
  return rc;
}
