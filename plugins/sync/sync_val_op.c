/*
 * The continuous validator's meta tables, its status part and validation_op (dmctl validation)
 * (sync_val.h, docs/validation.md). The tables are DM's (dm/syncer/validator_checkpoint.go):
 *   <meta>.<task>_validator_checkpoint     the validator's position and counts, and its wish
 *   <meta>.<task>_validator_error_change   the error rows (status 1 new, 2 ignored, 3 resolved)
 * Their names come from the SDK's task_meta.h (one owner: remove-meta drops them).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sync.h"
#include "sync_val.h"

static const char *const val_types[3] = {"Deleted rows exist", "Expected rows not exist",
                                         "Column data not matched"};
static const char *const val_modes[3] = {"none", "fast", "full"};


static int val_names(sync_val *v) {
  sync_unit *u = v->u;
  if (v->err_table[0])
    return 0;
  char n1[DM_META_NAME_MAX + 1], n2[DM_META_NAME_MAX + 1];
  const char *task = u->host->task_name(u->ctx);
  if (dm_task_meta_table_name(task, DM_META_VALIDATOR_ERROR_CHANGE, n1, sizeof n1) < 0 ||
      dm_task_meta_table_name(task, DM_META_VALIDATOR_CHECKPOINT, n2, sizeof n2) < 0)
    return -1;
  dm_buf a = {0}, b = {0};
  int rc = sync_sql_qualified(&a, u->meta, n1) < 0 || sync_sql_qualified(&b, u->meta, n2) < 0 ||
                   a.len >= sizeof v->err_table || b.len >= sizeof v->cp_table
               ? -1
               : 0;
  if (rc == 0) {
    memcpy(v->cp_table, b.p, b.len + 1);
    memcpy(v->err_table, a.p, a.len + 1);
  }
  dm_buf_free(&a);
  dm_buf_free(&b);
  return rc;
}

int sync_val_prepare(sync_val *v, MYSQL *c, dm_error *err) {
  sync_unit *u = v->u;
  if (val_names(v) < 0) {
    u->host->error_make(u->ctx, err, DM_ERR_CONFIG_INVALID, NULL,
                        "validator: the task's name is too long for its meta tables");
    return -1;
  }
  dm_buf q = {0};
  dm_buf_printf(&q,
                "CREATE TABLE IF NOT EXISTS %s (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, "
                "source VARCHAR(32) NOT NULL, binlog_name VARCHAR(128), binlog_pos INT UNSIGNED, "
                "binlog_gtid TEXT, procd_ins BIGINT UNSIGNED NOT NULL, procd_upd BIGINT UNSIGNED "
                "NOT NULL, procd_del BIGINT UNSIGNED NOT NULL, revision BIGINT NOT NULL, mode "
                "VARCHAR(8) NOT NULL DEFAULT '', stage VARCHAR(16) NOT NULL DEFAULT '', "
                "create_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, update_time TIMESTAMP "
                "NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP, UNIQUE KEY "
                "uk_source (source));"
                "CREATE TABLE IF NOT EXISTS %s (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, "
                "source VARCHAR(32) NOT NULL, src_schema_name VARCHAR(128) NOT NULL, "
                "src_table_name VARCHAR(128) NOT NULL, row_pk VARBINARY(512) NOT NULL, "
                "dst_schema_name VARCHAR(128) NOT NULL, dst_table_name VARCHAR(128) NOT NULL, "
                "data JSON NOT NULL, dst_data JSON NOT NULL, error_type INT NOT NULL, status INT "
                "NOT NULL, create_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, update_time "
                "TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP, UNIQUE "
                "KEY uk_source_schema_table_key(source, src_schema_name, src_table_name, row_pk), "
                "INDEX idx_status(status))",
                v->cp_table, v->err_table);
  int rc = q.oom ? sync_nomem(u, err)
                 : sync_db_exec(u, c, q.p, q.len, "validator: cannot create its tables", err);
  dm_buf_free(&q);
  return rc;
}

/* The checkpoint row: position, counts, wish (a restart keeps START/STOP and the mode). */
int sync_val_flush(sync_val *v, MYSQL *c, dm_error *err) {
  sync_unit *u = v->u;
  dm_buf q = {0};
  pthread_mutex_lock(&v->lock);
  dm_buf_printf(&q, "INSERT INTO %s (source, binlog_name, binlog_pos, binlog_gtid, procd_ins, "
                "procd_upd, procd_del, revision, mode, stage) VALUES (", v->cp_table);
  sync_sql_lit(c, &q, u->source_id, strlen(u->source_id));
  dm_buf_putc(&q, ',');
  sync_sql_lit(c, &q, v->pos.name, strlen(v->pos.name));
  dm_buf_printf(&q, ",%" PRIu64 ",", v->pos.pos);
  sync_sql_lit(c, &q, v->pos.gtid, strlen(v->pos.gtid));
  dm_buf_printf(&q, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",1,'%s','%s')", v->processed[0],
                v->processed[1], v->processed[2], val_modes[v->cfg.mode],
                v->wish ? "running" : "stopped");
  pthread_mutex_unlock(&v->lock);
  dm_buf_puts(&q, " ON DUPLICATE KEY UPDATE binlog_name=VALUES(binlog_name), "
                  "binlog_pos=VALUES(binlog_pos), binlog_gtid=VALUES(binlog_gtid), "
                  "procd_ins=VALUES(procd_ins), procd_upd=VALUES(procd_upd), "
                  "procd_del=VALUES(procd_del), revision=revision+1, mode=VALUES(mode), "
                  "stage=VALUES(stage)");
  int rc = q.oom ? sync_nomem(u, err)
                 : sync_db_exec(u, c, q.p, q.len, "validator: cannot flush its checkpoint", err);
  dm_buf_free(&q);
  return rc;
}

int sync_val_error_row(sync_val *v, MYSQL *c, const sync_val_table *t, const char *key,
                       const char *row, int type, const char *dst, dm_error *err) {
  sync_unit *u = v->u;
  dm_buf q = {0};
  dm_buf_printf(&q, "INSERT INTO %s (source, src_schema_name, src_table_name, row_pk, "
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
  dm_buf_printf(&q, ",%d,1) ON DUPLICATE KEY UPDATE data=VALUES(data), dst_data=VALUES(dst_data), "
                "error_type=VALUES(error_type), status=1", type);
  int rc = q.oom ? sync_nomem(u, err)
                 : sync_db_exec(u, c, q.p, q.len, "validator: cannot write an error row", err);
  dm_buf_free(&q);
  return rc;
}

/* ---- status ---- */

void sync_val_status(sync_val *v, dm_status_sink *sink) {
  if (!v)
    return;
  pthread_mutex_lock(&v->lock);
  bool on = v->thread_on, wish = v->wish;
  int mode = v->cfg.mode;
  uint64_t pend = v->n_rows, checked = v->checked, errs = v->errors_found, skipped = v->skipped;
  pthread_mutex_unlock(&v->lock);
  if (mode == SYNC_VAL_NONE && !on)
    return; /* mode none: no validator, no keys */
  sink->put_str(sink, "validationStage", on ? "Running" : wish ? "Paused" : "Stopped");
  sink->put_str(sink, "validationMode", val_modes[mode]);
  sink->put_int(sink, "validationChecked", (int64_t)checked);
  sink->put_int(sink, "validationPending", (int64_t)pend);
  sink->put_int(sink, "validationErrors", (int64_t)errs);
  sink->put_int(sink, "validationSkipped", (int64_t)skipped);
}

/* ---- validation_op ---- */

static void json_str(dm_buf *b, const char *s) {
  dm_buf_putc(b, '"');
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\')
      dm_buf_printf(b, "\\%c", ch);
    else if (ch < 0x20)
      dm_buf_printf(b, "\\u%04x", ch);
    else
      dm_buf_putc(b, (char)ch);
  }
  dm_buf_putc(b, '"');
}

static int val_status_items(sync_val *v, const dm_validation_req *req, MYSQL *c,
                            dm_validation_answer *a) {
  sync_unit *u = v->u;
  uint64_t errs[4] = {0};
  char q[512];
  snprintf(q, sizeof q, "SELECT status, COUNT(*) FROM %s WHERE source = '%s' GROUP BY status",
           v->err_table, u->source_id); /* source-id: letters, digits, _ and - */
  if (c && mysql_query(c, q) == 0) {
    MYSQL_RES *res = mysql_store_result(c);
    MYSQL_ROW row;
    while (res && (row = mysql_fetch_row(res)) != NULL) {
      int s = row[0] ? atoi(row[0]) : 0;
      if (s >= 1 && s <= 3)
        errs[s] = strtoull(row[1] ? row[1] : "0", NULL, 10);
    }
    if (res)
      mysql_free_result(res);
  }
  dm_buf b = {0};
  char pos[DM_POSITION_NAME_MAX + 48] = "";
  pthread_mutex_lock(&v->lock);
  if (v->has_pos)
    dm_position_format(&v->pos, pos, sizeof pos);
  dm_buf_puts(&b, "{\"task\":");
  json_str(&b, u->host->task_name(u->ctx));
  dm_buf_puts(&b, ",\"source\":");
  json_str(&b, u->source_id);
  dm_buf_printf(&b, ",\"mode\":\"%s\",\"stage\":\"%s\",\"validatorBinlog\":",
                val_modes[v->cfg.mode], v->thread_on || v->wish ? "Running" : "Stopped");
  json_str(&b, pos);
  dm_buf_puts(&b, ",\"validatorBinlogGtid\":");
  json_str(&b, v->has_pos ? v->pos.gtid : "");
  dm_buf_puts(&b, ",\"cutoverBinlogPos\":");
  json_str(&b, v->cutover_pos);
  dm_buf_puts(&b, ",\"cutoverBinlogGtid\":");
  json_str(&b, v->cutover_gtid);
  dm_buf_puts(&b, ",\"result\":");
  json_str(&b, v->last_error);
  dm_buf_printf(&b,
                ",\"processedRowsStatus\":\"insert/update/delete: %" PRIu64 "/%" PRIu64
                "/%" PRIu64 "\",\"pendingRowsStatus\":\"insert/update/delete: %" PRIu64
                "/%" PRIu64 "/%" PRIu64 "\",\"errorRowsStatus\":\"new/ignored/resolved: %" PRIu64
                "/%" PRIu64 "/%" PRIu64 "\"}",
                v->processed[0], v->processed[1], v->processed[2], v->pending[0], v->pending[1],
                v->pending[2], errs[1], errs[2], errs[3]);
  if (!b.oom)
    a->put(a, b.p);
  for (uint32_t i = 0; i < v->n_tables; i++) {
    const sync_val_table *t = v->tables[i];
    const char *stage = t->supported ? "running" : "stopped";
    if (req->table_stage && req->table_stage[0] && strcmp(req->table_stage, stage) != 0)
      continue;
    bool dup = false; /* one item per source table (a DDL makes a second entry) */
    for (uint32_t j = i + 1; j < v->n_tables && !dup; j++)
      dup = !strcmp(v->tables[j]->sdb, t->sdb) && !strcmp(v->tables[j]->sname, t->sname);
    if (dup)
      continue;
    dm_buf_reset(&b);
    char st[520], dt[520];
    snprintf(st, sizeof st, "`%s`.`%s`", t->sdb, t->sname);
    snprintf(dt, sizeof dt, "`%s`.`%s`", t->tdb, t->tname);
    dm_buf_puts(&b, "{\"source\":");
    json_str(&b, u->source_id);
    dm_buf_puts(&b, ",\"srcTable\":");
    json_str(&b, st);
    dm_buf_puts(&b, ",\"dstTable\":");
    json_str(&b, dt);
    dm_buf_printf(&b, ",\"stage\":\"%s\",\"message\":\"%s\"}", stage,
                  t->supported ? "" : "no primary key that is the table's only unique key: not "
                                      "validated");
    if (!b.oom)
      a->put(a, b.p);
  }
  pthread_mutex_unlock(&v->lock);
  dm_buf_free(&b);
  return 0;
}

static int val_show_errors(sync_val *v, const dm_validation_req *req, MYSQL *c,
                           dm_validation_answer *a, dm_error *err) {
  sync_unit *u = v->u;
  const char *st = req->error_state ? req->error_state : "all";
  const char *cond = !strcmp(st, "unprocessed") ? " AND status = 1"
                     : !strcmp(st, "ignored")   ? " AND status = 2"
                     : !strcmp(st, "resolved")  ? " AND status = 3"
                                                : "";
  char q[768];
  snprintf(q, sizeof q,
           "SELECT id, src_schema_name, src_table_name, data, dst_schema_name, dst_table_name, "
           "dst_data, error_type, status, update_time, row_pk FROM %s WHERE source = '%s'%s "
           "ORDER BY id LIMIT 10000",
           v->err_table, u->source_id, cond);
  if (mysql_query(c, q) != 0) {
    sync_db_error(u, c, "validator: cannot read the error rows", err);
    return -1;
  }
  MYSQL_RES *res = mysql_store_result(c);
  MYSQL_ROW row;
  static const char *const states[4] = {"", "NewErr", "IgnoredErr", "ResolvedErr"};
  dm_buf b = {0};
  while (res && (row = mysql_fetch_row(res)) != NULL) {
    dm_buf_reset(&b);
    char tb[520];
    int type = row[7] ? atoi(row[7]) : 0, s = row[8] ? atoi(row[8]) : 0;
    dm_buf_printf(&b, "{\"id\":\"%s\",\"source\":", row[0] ? row[0] : "0");
    json_str(&b, u->source_id);
    snprintf(tb, sizeof tb, "`%s`.`%s`", row[1] ? row[1] : "", row[2] ? row[2] : "");
    dm_buf_puts(&b, ",\"srcTable\":");
    json_str(&b, tb);
    dm_buf_puts(&b, ",\"srcData\":");
    json_str(&b, row[3] ? row[3] : "");
    snprintf(tb, sizeof tb, "`%s`.`%s`", row[4] ? row[4] : "", row[5] ? row[5] : "");
    dm_buf_puts(&b, ",\"dstTable\":");
    json_str(&b, tb);
    dm_buf_puts(&b, ",\"dstData\":");
    json_str(&b, row[6] ? row[6] : "");
    dm_buf_printf(&b, ",\"errorType\":\"%s\",\"status\":\"%s\",\"time\":",
                  val_types[type >= 0 && type < 3 ? type : 1], states[s >= 0 && s < 4 ? s : 0]);
    json_str(&b, row[9] ? row[9] : "");
    dm_buf_puts(&b, ",\"message\":");
    json_str(&b, row[10] ? row[10] : "");
    dm_buf_putc(&b, '}');
    if (!b.oom)
      a->put(a, b.p);
  }
  if (res)
    mysql_free_result(res);
  dm_buf_free(&b);
  return 0;
}

static int val_operate(sync_val *v, const dm_validation_req *req, MYSQL *c, dm_error *err) {
  sync_unit *u = v->u;
  char q[512], id[48] = "";
  if (req->error_id)
    snprintf(id, sizeof id, " AND id = %" PRIu64, req->error_id);
  if (req->error_op == DM_VALIDATION_ERR_CLEAR)
    snprintf(q, sizeof q, "DELETE FROM %s WHERE source = '%s'%s", v->err_table, u->source_id, id);
  else
    snprintf(q, sizeof q, "UPDATE %s SET status = %d WHERE source = '%s'%s", v->err_table,
             req->error_op == DM_VALIDATION_ERR_IGNORE ? 2 : 3, u->source_id, id);
  return sync_db_exec(u, c, q, strlen(q), "validator: cannot change the error rows", err);
}

int sync_validation_op(void *self, const dm_validation_req *req, dm_validation_answer *answer,
                       dm_error *err) {
  sync_unit *u = self;
  sync_val *v = u->val;
  if (val_names(v) < 0)
    return sync_nomem(u, err);
  if (req->op == DM_VALIDATION_START || req->op == DM_VALIDATION_STOP) {
    pthread_mutex_lock(&v->lock);
    int rc = 0;
    bool start = req->op == DM_VALIDATION_START;
    if (start == v->wish) {
      rc = -1;
      u->host->error_make(u->ctx, err, DM_ERR_STATE, NULL, "validator: it is %s already",
                          start ? "running" : "stopped");
    } else if (start) {
      if (req->mode && (strcmp(req->mode, "full") == 0 || strcmp(req->mode, "fast") == 0))
        v->cfg.mode = strcmp(req->mode, "full") == 0 ? SYNC_VAL_FULL : SYNC_VAL_FAST;
      else if (v->cfg.mode == SYNC_VAL_NONE)
        v->cfg.mode = SYNC_VAL_FULL; /* DM's default mode of `validation start` */
      v->wish = true;
      sync_val_spawn_locked(v); /* now, when process runs; else at its next start */
    } else {
      v->wish = false;
      sync_val_join_locked(v);
    }
    pthread_mutex_unlock(&v->lock);
    return rc;
  }
  if (req->op == DM_VALIDATION_UPDATE) {
    pthread_mutex_lock(&v->lock);
    dm_strlcpy(v->cutover_pos, req->cutover_pos ? req->cutover_pos : "", sizeof v->cutover_pos);
    dm_strlcpy(v->cutover_gtid, req->cutover_gtid ? req->cutover_gtid : "",
               sizeof v->cutover_gtid);
    pthread_mutex_unlock(&v->lock);
    return 0;
  }
  MYSQL *c = sync_db_connect_target(u, err);
  if (!c && req->op != DM_VALIDATION_STATUS)
    return -1;
  if (c && req->op != DM_VALIDATION_STATUS && sync_val_prepare(v, c, err) < 0) {
    sync_db_close(u, c);
    return -1;
  }
  int rc = 0;
  if (req->op == DM_VALIDATION_STATUS)
    rc = val_status_items(v, req, c, answer);
  else if (req->op == DM_VALIDATION_SHOW_ERROR)
    rc = val_show_errors(v, req, c, answer, err);
  else if (req->op == DM_VALIDATION_OPERATE)
    rc = val_operate(v, req, c, err);
  else {
    u->host->error_make(u->ctx, err, DM_ERR_CONFIG_INVALID, NULL,
                        "validator: unknown validation operation %u", req->op);
    rc = -1;
  }
  sync_db_close(u, c);
  return rc;
}
