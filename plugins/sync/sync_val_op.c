/*
 * The continuous validator's status part and validation_op (dmctl validation) (sync_val.h,
 * docs/validation.md): what the command asks, answered in DM's shapes (dm/proto/dmworker.proto)
 * from the validator's state (its lock) and its tables (sync_val_meta.c).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sync.h"
#include "sync_val.h"

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
  /* DM's validator stage: Running from a start (the task's mode or `validation start`) to a
   * stop, the task's pause included (the thread goes on checking then) */
  sink->put_str(sink, "validationStage", on || wish ? "Running" : "Stopped");
  sink->put_str(sink, "validationMode", sync_val_modes[mode]);
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
                sync_val_modes[v->cfg.mode], v->thread_on || v->wish ? "Running" : "Stopped");
  json_str(&b, pos);
  dm_buf_puts(&b, ",\"validatorBinlogGtid\":");
  json_str(&b, v->has_pos ? v->pos.gtid : "");
  char cut[DM_POSITION_NAME_MAX + 48] = "";
  if (v->has_cutover && v->cutover.name[0])
    dm_position_format(&v->cutover, cut, sizeof cut);
  dm_buf_puts(&b, ",\"cutoverBinlogPos\":");
  json_str(&b, cut);
  dm_buf_puts(&b, ",\"cutoverBinlogGtid\":");
  json_str(&b, v->has_cutover ? v->cutover.gtid : "");
  /* DM's ProcessResult: null while the validator runs normally, else its errors */
  if (v->last_error[0]) {
    dm_buf_puts(&b, ",\"result\":{\"isCanceled\":false,\"errors\":[{\"ErrCode\":0,"
                    "\"ErrClass\":\"\",\"ErrScope\":\"\",\"ErrLevel\":\"\",\"Message\":");
    json_str(&b, v->last_error);
    dm_buf_puts(&b, ",\"RawCause\":\"\",\"Workaround\":\"\"}],\"detail\":null}");
  } else {
    dm_buf_puts(&b, ",\"result\":null");
  }
  dm_buf_printf(&b,
                ",\"processedRowsStatus\":\"insert/update/delete: %" PRIu64 "/%" PRIu64 "/%" PRIu64
                "\",\"pendingRowsStatus\":\"insert/update/delete: %" PRIu64 "/%" PRIu64 "/%" PRIu64
                "\",\"errorRowsStatus\":\"new/ignored/resolved: %" PRIu64 "/%" PRIu64 "/%" PRIu64
                "\"}",
                v->processed[0], v->processed[1], v->processed[2], v->pending[0], v->pending[1],
                v->pending[2], errs[1], errs[2], errs[3]);
  if (!b.oom)
    a->put(a, b.p);
  for (uint32_t i = 0; i < v->n_tables; i++) {
    const sync_val_table *t = v->tables[i];
    /* DM's pb.Stage names; the filter is dmctl's lower-case word */
    const char *stage = t->supported ? "Running" : "Stopped";
    if (req->table_stage && req->table_stage[0] && strcasecmp(req->table_stage, stage) != 0)
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
                  t->supported ? "" : SYNC_VAL_NO_KEY);
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
                  sync_val_types[type >= 0 && type < 3 ? type : 1],
                  states[s >= 0 && s < 4 ? s : 0]);
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

/* "(mysql-bin.000001, 5989)" (DM's form; "file:pos" too) and/or a GTID set. 0, or -1. */
static int val_parse_cutover(const dm_validation_req *req, dm_position *p) {
  const char *s = req->cutover_pos;
  if (s && s[0]) {
    while (*s == ' ' || *s == '(')
      s++;
    size_t n = strcspn(s, ",: ");
    if (n == 0 || n >= sizeof p->name)
      return -1;
    memcpy(p->name, s, n);
    p->name[n] = '\0';
    s += n;
    while (*s == ',' || *s == ':' || *s == ' ')
      s++;
    char *end;
    unsigned long long pos = strtoull(s, &end, 10);
    while (*end == ' ' || *end == ')')
      end++;
    if (end == s || *end)
      return -1;
    p->pos = pos;
  }
  if (req->cutover_gtid && req->cutover_gtid[0]) {
    if (strlen(req->cutover_gtid) >= sizeof p->gtid ||
        dm_gtid_set_contains(req->cutover_gtid, req->cutover_gtid) < 0)
      return -1;
    dm_strlcpy(p->gtid, req->cutover_gtid, sizeof p->gtid);
  }
  return p->name[0] || p->gtid[0] ? 0 : -1;
}

int sync_validation_op(void *self, const dm_validation_req *req, dm_validation_answer *answer,
                       dm_error *err) {
  sync_unit *u = self;
  sync_val *v = u->val;
  if (sync_val_names(v) < 0)
    return sync_nomem(u, err);
  if (req->op == DM_VALIDATION_START || req->op == DM_VALIDATION_STOP) {
    pthread_mutex_lock(&v->lock);
    int rc = 0;
    bool start = req->op == DM_VALIDATION_START, same = false;
    if (start && (req->mode || req->start_time) && v->cfg.mode != SYNC_VAL_NONE) {
      /* DM's master (checkStartValidationParams): an explicit mode or start-time enables a
       * validator, and one enabled before (its mode not none, running or stopped) is refused */
      rc = -1;
      u->host->error_make(u->ctx, err, DM_ERR_STAGE, NULL,
                          "all target validator has enabled, cannot do 'validation start' with "
                          "explicit mode or start-time");
    } else if (!start && v->cfg.mode == SYNC_VAL_NONE) {
      /* DM's master (StopValidation): only a validator enabled (by the task's mode or a start)
       * can be stopped */
      rc = -1;
      u->host->error_make(u->ctx, err, DM_ERR_STAGE, NULL,
                          "some target validator(%s with source %s) is not enabled",
                          u->host->task_name(u->ctx), u->source_id);
    } else if (start == v->wish) {
      same = true; /* DM: the stage it asks for is the stage it has; "success", no change */
    } else if (start && req->start_time && strlen(req->start_time) >= sizeof v->cfg.start_time) {
      rc = -1;
      u->host->error_make(u->ctx, err, DM_ERR_CONFIG_START_TIME, NULL,
                          "validation start --start-time: \"%.40s...\" is not a time (DM's forms: "
                          "'2006-01-02 15:04:05', '2006-01-02T15:04:05', with an offset or not)",
                          req->start_time);
    } else if (start) {
      if (req->start_time && req->start_time[0] && !v->has_pos) {
        /* DM's getInitialBinlogPosition: a validator without a checkpoint starts at the time
         * (parsed and found at the replay: a bad time is its error, in the status) */
        dm_strlcpy(v->cfg.start_time, req->start_time, sizeof v->cfg.start_time);
        atomic_store(&v->catch_up, true); /* running: at the coordinator's next boundary */
      } else if (v->has_pos) {
        /* a validator stopped by a command goes on from its checkpoint, as DM's reads its binlog
         * from there: the row changes the sync applied meanwhile are fed by the same replay
         * (now, not at some later restart that would find the span behind the sync) */
        atomic_store(&v->catch_up, true);
      }
      if (req->mode && (strcmp(req->mode, "full") == 0 || strcmp(req->mode, "fast") == 0))
        v->cfg.mode = strcmp(req->mode, "full") == 0 ? SYNC_VAL_FULL : SYNC_VAL_FAST;
      else if (v->cfg.mode == SYNC_VAL_NONE)
        v->cfg.mode = SYNC_VAL_FULL; /* DM's default mode of `validation start` */
      v->wish = true;
      sync_val_spawn_locked(v); /* now (paused too) once process ran; else at its start */
    } else {
      v->wish = false;
      sync_val_join_locked(v); /* its last flush writes the wish */
    }
    if (rc == 0 && !same)
      v->wish_op = true; /* the checkpoint's older wish is not read over it */
    bool flush_here = rc == 0 && !same && !v->thread_on;
    if (rc == 0 && !same && v->thread_on)
      v->flush_now = true; /* the running thread writes the wish at once */
    pthread_mutex_unlock(&v->lock);
    if (flush_here) {
      /* no thread (process never ran in this instance, or stopped now): the wish is written
       * from here, so a restart keeps it */
      dm_error e = {0};
      MYSQL *c = sync_db_connect_target(u, &e);
      /* read what the checkpoint holds first (a first command before any run), so the flush
       * writes it back with the new wish instead of an empty set */
      if (!c || sync_val_prepare(v, c, &e) < 0 || sync_val_load(v, c, &e) < 0 ||
          sync_val_flush(v, c, &e) < 0)
        u->host->logf(u->ctx, DM_LOG_WARN,
                      "validator: the %s is not kept for a restart yet (it is at the next "
                      "flush): %s",
                      start ? "start" : "stop", e.message);
      sync_db_close(u, c);
    }
    return rc;
  }
  if (req->op == DM_VALIDATION_UPDATE) {
    dm_position p = {0};
    if (val_parse_cutover(req, &p) < 0) {
      u->host->error_make(u->ctx, err, DM_ERR_CONFIG_INVALID, NULL,
                          "validator: the cutover point must be a binlog position \"(file, "
                          "pos)\" or a GTID set, as DM's `validation update` takes");
      return -1;
    }
    pthread_mutex_lock(&v->lock);
    v->cutover = p;
    v->has_cutover = true;
    pthread_cond_broadcast(&v->cond);
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
