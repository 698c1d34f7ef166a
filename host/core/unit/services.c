/*
 * The host services table and dm_ctx. Every entry point takes the unit's ctx, so nothing here
 * needs a global but the const table itself.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "binlog_ops.h"
#include "dmhost/fs.h"
#include "dmhost/sdk.h"
#include "log.h"
#include "rules.h"
#include "unit_ctx.h"

/* ---- identity ---- */
static const char *svc_task_name(dm_ctx *c) {
  return c->task_name ? c->task_name : "";
}
static const char *svc_source_id(dm_ctx *c) {
  return c->source_id ? c->source_id : "";
}
static const char *svc_task_mode(dm_ctx *c) {
  return c->task_mode ? c->task_mode : "";
}
static const char *svc_meta_schema(dm_ctx *c) {
  return c->meta_schema ? c->meta_schema : "";
}
static const char *svc_work_dir(dm_ctx *c) {
  return c->work_dir;
}
static const char *svc_relay_dir(dm_ctx *c) {
  return c->relay_dir;
}
static const dm_db_endpoint *svc_source_db(dm_ctx *c) {
  return c->source_db;
}
static const dm_db_endpoint *svc_target_db(dm_ctx *c) {
  return c->target_db;
}
static uint32_t svc_db_endpoint_size(dm_ctx *c) {
  (void)c;
  return (uint32_t)sizeof(dm_db_endpoint);
}
static bool svc_gtid_enabled(dm_ctx *c) {
  return c->gtid_enabled;
}
static uint32_t svc_file_mode(dm_ctx *c) {
  return c->file_mode;
}
static uint64_t svc_fencing_token(dm_ctx *c) {
  return c->fencing_token;
}
static uint32_t svc_source_server_id(dm_ctx *c) {
  return c->server_id;
}
static bool svc_unit_follows(dm_ctx *c, uint32_t kind) {
  for (int i = 0; i < c->n_later; i++)
    if (c->later[i] == kind)
      return true;
  return false;
}

/* ---- logging ---- */
static void svc_log(dm_ctx *c, dm_log_level level, const char *msg, const dm_log_field *fields,
                    size_t n) {
  dmh_log_fields(level, c->scope, msg, fields, n);
}

static void svc_logf(dm_ctx *c, dm_log_level level, const char *fmt, ...) {
  char buf[1536];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  dmh_log_fields(level, c->scope, buf, NULL, 0);
}

/* ---- stop token ---- */
static bool svc_stop_requested(dm_ctx *c) {
  return dmh_stop_token_fired(c->token);
}
static bool svc_wait_stop(dm_ctx *c, uint32_t ms) {
  return dmh_stop_token_wait(c->token, ms);
}
static int svc_stop_fd(dm_ctx *c) {
  return c->token->fd;
}

/* ---- errors ---- */
static void svc_error_make(dm_ctx *c, dm_error *out, int32_t code, const char *raw_cause,
                           const char *fmt, ...) {
  (void)c;
  va_list ap;
  va_start(ap, fmt);
  dm_error_vset(out, code, raw_cause, fmt, ap);
  va_end(ap);
}

/* ---- config ---- */

/* Remember `path` and its group prefixes ("a.b.[2].c" -> "a", "a.b"), stopping at a list index:
 * reading any element of a list counts as reading the list. */
static void ctx_mark_seen(dm_ctx *c, const char *path) {
  char buf[512];
  dm_strlcpy(buf, path, sizeof buf);
  char *idx = strstr(buf, ".[");
  if (idx)
    *idx = '\0';
  pthread_mutex_lock(&c->lock);
  for (char *p = buf;; p++) {
    if (*p == '.' || *p == '\0') {
      char save = *p;
      *p = '\0';
      bool found = false;
      for (int i = 0; i < c->n_seen && !found; i++)
        found = strcmp(c->seen[i], buf) == 0;
      if (!found) {
        if (c->n_seen == c->cap_seen) {
          int cap = c->cap_seen ? c->cap_seen * 2 : 16;
          char **n = realloc(c->seen, sizeof *n * (size_t)cap);
          if (!n)
            break; /* without memory the unread check only gets stricter */
          c->seen = n;
          c->cap_seen = cap;
        }
        c->seen[c->n_seen] = strdup(buf);
        if (c->seen[c->n_seen])
          c->n_seen++;
      }
      *p = save;
      if (save == '\0')
        break;
    }
  }
  pthread_mutex_unlock(&c->lock);
}

static config_setting_t *ctx_lookup(dm_ctx *c, const char *path) {
  ctx_mark_seen(c, path);
  return c->section ? config_setting_lookup(c->section, path) : NULL;
}

static dm_cfg_result ctx_wrong_type(dm_ctx *c, config_setting_t *s, const char *path,
                                    const char *want) {
  dmh_log(DM_LOG_ERROR, c->scope, "%s:%d: setting `%s` should be %s",
          c->cfg_file ? c->cfg_file : "?", config_setting_source_line(s), path, want);
  return DM_CFG_WRONG_TYPE;
}

static dm_cfg_result svc_cfg_int(dm_ctx *c, const char *path, int64_t *out) {
  config_setting_t *s = ctx_lookup(c, path);
  if (!s)
    return DM_CFG_MISSING;
  int t = config_setting_type(s);
  if (t != CONFIG_TYPE_INT && t != CONFIG_TYPE_INT64)
    return ctx_wrong_type(c, s, path, "an integer");
  *out = config_setting_get_int64(s);
  return DM_CFG_OK;
}

static dm_cfg_result svc_cfg_bool(dm_ctx *c, const char *path, bool *out) {
  config_setting_t *s = ctx_lookup(c, path);
  if (!s)
    return DM_CFG_MISSING;
  if (config_setting_type(s) != CONFIG_TYPE_BOOL)
    return ctx_wrong_type(c, s, path, "true or false");
  *out = config_setting_get_bool(s) != 0;
  return DM_CFG_OK;
}

static dm_cfg_result svc_cfg_float(dm_ctx *c, const char *path, double *out) {
  config_setting_t *s = ctx_lookup(c, path);
  if (!s)
    return DM_CFG_MISSING;
  switch (config_setting_type(s)) {
  case CONFIG_TYPE_FLOAT:
    *out = config_setting_get_float(s);
    return DM_CFG_OK;
  case CONFIG_TYPE_INT:
  case CONFIG_TYPE_INT64:
    *out = (double)config_setting_get_int64(s);
    return DM_CFG_OK;
  default:
    return ctx_wrong_type(c, s, path, "a number");
  }
}

static dm_cfg_result svc_cfg_string(dm_ctx *c, const char *path, const char **out) {
  config_setting_t *s = ctx_lookup(c, path);
  if (!s)
    return DM_CFG_MISSING;
  if (config_setting_type(s) != CONFIG_TYPE_STRING)
    return ctx_wrong_type(c, s, path, "a string");
  *out = config_setting_get_string(s);
  return DM_CFG_OK;
}

static int svc_cfg_count(dm_ctx *c, const char *path) {
  config_setting_t *s = ctx_lookup(c, path);
  if (!s || !(config_setting_is_list(s) || config_setting_is_array(s)))
    return 0;
  return config_setting_length(s);
}

/* ---- hand-over ---- */
static bool svc_handoff_position(dm_ctx *c, dm_position *out) {
  pthread_mutex_lock(&c->lock);
  bool has = c->has_handoff;
  if (has)
    *out = c->handoff;
  pthread_mutex_unlock(&c->lock);
  return has;
}

static bool svc_handoff_safe_mode_exit(dm_ctx *c, dm_position *out) {
  pthread_mutex_lock(&c->lock);
  bool has = c->has_safe_exit;
  if (has)
    *out = c->safe_exit;
  pthread_mutex_unlock(&c->lock);
  return has;
}

/* ---- rules ---- */
static bool svc_table_allowed(dm_ctx *c, const char *schema, const char *table) {
  return dmh_rules_table_allowed(c->rules, schema, table);
}

static void svc_route_table(dm_ctx *c, const char *schema, const char *table, char *out_schema,
                            size_t schema_len, char *out_table, size_t table_len) {
  dmh_rules_route(c->rules, schema, table, out_schema, schema_len, out_table, table_len);
}

/* online_table_kind (host.h); the rules are compiled once per subtask (rules.c). */
static dm_online_kind svc_online_table_kind(dm_ctx *c, const char *schema, const char *table,
                                            char *real, size_t len) {
  (void)schema; /* DM's rules name tables only */
  if (len)
    real[0] = '\0';
  if (!table)
    return dmh_rules_online(c->rules) ? DM_ONLINE_GHOST : DM_ONLINE_REAL;
  return dmh_rules_online_kind(c->rules, table, real, len);
}

static void svc_route_extract(dm_ctx *c, const char *schema, const char *table,
                              dm_route_extract *out) {
  dmh_rules_extract(c->rules, schema, table, out);
}

static bool svc_meta_position(dm_ctx *c, dm_position *out) {
  const dmh_task_instance *i = c->instance;
  if (!i || (!i->meta_binlog_name && !i->meta_binlog_gtid))
    return false;
  memset(out, 0, sizeof *out);
  dm_strlcpy(out->name, i->meta_binlog_name ? i->meta_binlog_name : "", sizeof out->name);
  out->pos = i->meta_binlog_pos;
  dm_strlcpy(out->gtid, i->meta_binlog_gtid ? i->meta_binlog_gtid : "", sizeof out->gtid);
  return true;
}

/* ---- binlog event filters ---- */
/* A unit built before services version 11 asks only "skip?": an Error rule cannot stop it, so the
 * event is applied and the operator is told (DM would have stopped). */
static bool svc_event_ignored(dm_ctx *c, const char *schema, const char *table, const char *event,
                              const char *sql) {
  const char *rule;
  dmh_filter_verdict v = dmh_rules_event_judge(c->rules, schema, table, event, sql, &rule);
  if (v == DMH_VERDICT_ERROR)
    svc_logf(c, DM_LOG_WARN,
             "filter rule \"%s\" (action Error) matches %s on `%s`.`%s`, but the unit asks only "
             "whether to skip (services version < 11): applied; rebuild the unit against this SDK",
             rule ? rule : "?", event ? event : "a statement", schema ? schema : "",
             table ? table : "");
  return v == DMH_VERDICT_SKIP;
}

static dm_event_verdict svc_event_verdict(dm_ctx *c, const char *schema, const char *table,
                                          const char *event, const char *sql, char *rule,
                                          size_t rule_len) {
  const char *name;
  dmh_filter_verdict v = dmh_rules_event_judge(c->rules, schema, table, event, sql, &name);
  if (rule && rule_len)
    dm_strlcpy(rule, name ? name : "", rule_len);
  return v == DMH_VERDICT_ERROR  ? DM_EVENT_ERROR
         : v == DMH_VERDICT_SKIP ? DM_EVENT_SKIP
                                 : DM_EVENT_APPLY;
}

/* ---- expression filters ---- */
static bool svc_name_eq(const char *a, const char *b, bool case_sensitive) {
  return case_sensitive ? strcmp(a, b) == 0 : strcasecmp(a, b) == 0;
}

static size_t svc_expr_filters(dm_ctx *c, const char *schema, const char *table,
                               dm_expr_filter *out, size_t max) {
  const dmh_task_instance *in = c->instance;
  size_t n = 0;
  for (int i = 0; in && schema && table && i < in->n_exprs; i++) {
    const dmh_expr_rule *r = in->exprs[i];
    if (!svc_name_eq(r->schema, schema, in->case_sensitive) ||
        !svc_name_eq(r->table, table, in->case_sensitive))
      continue;
    if (out && n < max)
      out[n] = (dm_expr_filter){.name = r->name,
                                .insert_expr = r->insert_expr,
                                .update_old_expr = r->update_old_expr,
                                .update_new_expr = r->update_new_expr,
                                .delete_expr = r->delete_expr};
    n++;
  }
  return n;
}

/* ---- binlog operators ---- */

/* Read from the store on every call: calls are rare (a DDL, or a failing one), and the store is
 * changed by dmctl from another thread or by `dmhost binlog` from another process. */
static bool svc_binlog_operator(dm_ctx *c, const char *file, uint64_t offset, bool failing,
                                dm_binlog_operator *out) {
  if (!c->binlog_ops_path || !out)
    return false;
  dmh_binlog_op op;
  dm_error err;
  int rc = dmh_binlog_ops_find(c->binlog_ops_path, file, offset, failing, &op, &err);
  if (rc < 0) {
    /* The event is then applied as if no operator existed; the log says why. */
    dmh_log(DM_LOG_ERROR, c->scope, "binlog operators: %s", err.message);
    return false;
  }
  pthread_mutex_lock(&c->lock);
  dmh_binlog_op_clear(&c->held_op);
  if (rc == 1) {
    c->held_op = op; /* moved: the unit borrows its statements */
    memset(out, 0, sizeof *out);
    out->kind = (int32_t)op.kind;
    out->n_sqls = (uint32_t)op.n_sqls;
    out->sqls = (const char **)c->held_op.sqls;
    dm_strlcpy(out->at, op.at, sizeof out->at);
  }
  pthread_mutex_unlock(&c->lock);
  return rc == 1;
}

static void svc_binlog_operator_done(dm_ctx *c, const dm_binlog_operator *op) {
  if (!c->binlog_ops_path || !op)
    return;
  int removed = 0;
  dm_error err;
  if (dmh_binlog_ops_remove(c->binlog_ops_path, op->at, &removed, &err) < 0)
    dmh_log(DM_LOG_ERROR, c->scope, "binlog operators: %s", err.message);
  else
    dmh_log(DM_LOG_INFO, c->scope, "binlog operator %s at %s applied%s",
            dmh_binlog_op_name((dm_binlog_op_kind)op->kind),
            op->at[0] ? op->at : "the failing event",
            removed ? "" : " (it was reverted meanwhile)");
  pthread_mutex_lock(&c->lock);
  dmh_binlog_op_clear(&c->held_op);
  pthread_mutex_unlock(&c->lock);
}

/* ---- metrics ---- */

/* One family as a unit instance sees it: the host's labels (task, source_id, worker) come first. */
struct dm_metric {
  struct dm_metric *next;
  dmh_metric_family *family;
  uint32_t n_labels; /* the unit's own */
};

#define CTX_HOST_LABELS 3

static dm_metric *svc_metric_register(dm_ctx *c, const char *name, dm_metric_type type,
                                      const char *help, const char *const *label_names,
                                      uint32_t n_labels, const double *buckets, uint32_t n_buckets,
                                      dm_error *err) {
  if (n_labels > DMH_METRICS_MAX_LABELS - CTX_HOST_LABELS || (n_labels && !label_names)) {
    dm_error_set(err, DM_ERR_METRIC_INVALID, NULL, "metric %s: %u labels (a unit has at most %d)",
                 name ? name : "(null)", n_labels, DMH_METRICS_MAX_LABELS - CTX_HOST_LABELS);
    return NULL;
  }
  const char *labels[DMH_METRICS_MAX_LABELS] = {"task", "source_id", "worker"};
  for (uint32_t i = 0; i < n_labels; i++) {
    const char *l = label_names[i];
    if (l && (strcmp(l, "task") == 0 || strcmp(l, "source_id") == 0 || strcmp(l, "worker") == 0)) {
      dm_error_set(err, DM_ERR_METRIC_INVALID, NULL,
                   "metric %s: label \"%s\" is the host's (it adds task, source_id and worker to "
                   "every series itself); drop it from the unit's labels",
                   name ? name : "(null)", l);
      return NULL;
    }
    labels[CTX_HOST_LABELS + i] = l;
  }
  dmh_metric_family *f;
  if (dmh_metrics_family(c->metrics, name, type, help, labels, (int)n_labels + CTX_HOST_LABELS,
                         buckets, (int)n_buckets, &f, err) < 0)
    return NULL;
  pthread_mutex_lock(&c->lock);
  dm_metric *m = c->metric_handles;
  while (m && m->family != f)
    m = m->next;
  if (!m && (m = calloc(1, sizeof *m))) {
    m->family = f;
    m->n_labels = n_labels;
    m->next = c->metric_handles;
    c->metric_handles = m;
  }
  pthread_mutex_unlock(&c->lock);
  if (!m)
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory registering metric %s", name);
  return m;
}

/* The series' label values: the subtask's, then the unit's. */
static void ctx_metric_values(dm_ctx *c, const dm_metric *m, const char *const *unit_values,
                              const char **out) {
  out[0] = c->task_name ? c->task_name : "";
  out[1] = c->source_id ? c->source_id : "";
  out[2] = c->worker_name ? c->worker_name : "";
  for (uint32_t i = 0; i < m->n_labels; i++)
    out[CTX_HOST_LABELS + i] = unit_values ? unit_values[i] : NULL;
}

static void svc_metric_add(dm_ctx *c, dm_metric *m, const char *const *values, double v) {
  const char *all[DMH_METRICS_MAX_LABELS];
  ctx_metric_values(c, m, values, all);
  dmh_metric_add(m->family, c->metrics_owner, all, v);
}

static void svc_metric_set(dm_ctx *c, dm_metric *m, const char *const *values, double v) {
  const char *all[DMH_METRICS_MAX_LABELS];
  ctx_metric_values(c, m, values, all);
  dmh_metric_set(m->family, c->metrics_owner, all, v);
}

static void svc_metric_observe(dm_ctx *c, dm_metric *m, const char *const *values, double v) {
  const char *all[DMH_METRICS_MAX_LABELS];
  ctx_metric_values(c, m, values, all);
  dmh_metric_observe(m->family, c->metrics_owner, all, v);
}

/* ---- shard DDL locks: the unit's own task and source, never one it names ---- */

static dm_shard_mode svc_shard_mode(dm_ctx *c) {
  return c->shard ? c->shard_mode : DM_SHARD_MODE_NONE;
}
static int shard_none(dm_ctx *c, dm_error *err) {
  dm_error_set(err, DM_ERR_INTERNAL, NULL,
               "task %s source %s: shard-mode is %s but this process has no shard DDL "
               "coordinator for the subtask",
               c->task_name, c->source_id,
               c->shard_mode == DM_SHARD_MODE_OPTIMISTIC ? "optimistic" : "pessimistic or none");
  return -1;
}
static int svc_shard_report_tables(dm_ctx *c, const char *tschema, const char *ttable,
                                   const dm_shard_table *tables, uint32_t n, dm_error *err) {
  if (!c->shard)
    return shard_none(c, err);
  return c->shard->ops->report_tables(c->shard->self, c->task_name, c->source_id, tschema, ttable,
                                      tables, n, err);
}
static int svc_shard_put(dm_ctx *c, const dm_shard_info *info, dm_error *err) {
  if (!c->shard)
    return shard_none(c, err);
  return c->shard->ops->put(c->shard->self, c->task_name, c->source_id, info, err);
}
static bool shard_stopped(void *arg) {
  return arg && dmh_stop_token_fired(arg);
}
/* strict-optimistic-shard-mode: a conflict is the subtask's error (DM's ErrSyncerShardDDLConflict)
 * instead of a held table; the lock keeps the table's info, so a resume meets it again until the
 * shards agree or a user unlocks the table. */
static int shard_strict(dm_ctx *c, int rc, const dm_shard_op *op, dm_error *err) {
  if (rc != 1 || !op->conflict || !c->strict_optimistic)
    return rc;
  dm_error_set(err, DM_ERR_SYNC_SHARD_CONFLICT, NULL, "task %s source %s: %s", c->task_name,
               c->source_id, op->message ? op->message : "");
  return -1;
}
static int svc_shard_wait(dm_ctx *c, const char *tschema, const char *ttable, dm_shard_op *op,
                          dm_error *err) {
  if (!c->shard)
    return shard_none(c, err);
  int rc = c->shard->ops->wait(c->shard->self, c->task_name, c->source_id, tschema, ttable,
                               shard_stopped, c->token, op, err);
  return shard_strict(c, rc, op, err);
}
static bool shard_now(void *arg) {
  (void)arg;
  return true; /* poll: the coordinator looks once and does not wait */
}
static int svc_shard_poll(dm_ctx *c, const char *tschema, const char *ttable, dm_shard_op *op,
                          dm_error *err) {
  if (!c->shard)
    return shard_none(c, err);
  int rc = c->shard->ops->wait(c->shard->self, c->task_name, c->source_id, tschema, ttable,
                               shard_now, NULL, op, err);
  return shard_strict(c, rc, op, err);
}
static int svc_shard_done(dm_ctx *c, const dm_shard_op *op, dm_error *err) {
  if (!c->shard)
    return shard_none(c, err);
  return c->shard->ops->done(c->shard->self, c->task_name, c->source_id, c->fencing_token, op, err);
}

/* collation_strict (host.h): the task's collation_compatible, as update-task last set it */
static bool svc_collation_strict(dm_ctx *c) {
  return c->collation_strict;
}

static const dm_host_services services = {
    .version = DM_HOST_SERVICES_VERSION,
    .size = sizeof(dm_host_services),
    .task_name = svc_task_name,
    .source_id = svc_source_id,
    .task_mode = svc_task_mode,
    .meta_schema = svc_meta_schema,
    .work_dir = svc_work_dir,
    .relay_dir = svc_relay_dir,
    .source_db = svc_source_db,
    .target_db = svc_target_db,
    .db_endpoint_size = svc_db_endpoint_size,
    .gtid_enabled = svc_gtid_enabled,
    .log = svc_log,
    .logf = svc_logf,
    .stop_requested = svc_stop_requested,
    .wait_stop = svc_wait_stop,
    .stop_fd = svc_stop_fd,
    .error_make = svc_error_make,
    .cfg_int = svc_cfg_int,
    .cfg_bool = svc_cfg_bool,
    .cfg_float = svc_cfg_float,
    .cfg_string = svc_cfg_string,
    .cfg_count = svc_cfg_count,
    .handoff_position = svc_handoff_position,
    .table_allowed = svc_table_allowed,
    .route_table = svc_route_table,
    .meta_position = svc_meta_position,
    .event_ignored = svc_event_ignored,
    .event_verdict = svc_event_verdict,
    .expr_filters = svc_expr_filters,
    .binlog_operator = svc_binlog_operator,
    .binlog_operator_done = svc_binlog_operator_done,
    .file_mode = svc_file_mode,
    .unit_follows = svc_unit_follows,
    .handoff_safe_mode_exit = svc_handoff_safe_mode_exit,
    .fencing_token = svc_fencing_token,
    .source_server_id = svc_source_server_id,
    .metric_register = svc_metric_register,
    .metric_add = svc_metric_add,
    .metric_set = svc_metric_set,
    .metric_observe = svc_metric_observe,
    .online_table_kind = svc_online_table_kind,
    .shard_mode = svc_shard_mode,
    .shard_report_tables = svc_shard_report_tables,
    .shard_put = svc_shard_put,
    .shard_wait = svc_shard_wait,
    .shard_done = svc_shard_done,
    .route_extract = svc_route_extract,
    .shard_poll = svc_shard_poll,
    .collation_strict = svc_collation_strict,
};

const dm_host_services *dmh_host_services(void) {
  return &services;
}

dm_ctx *dmh_ctx_new(const char *work_dir, uint32_t file_mode, dm_error *err) {
  if (dm_fs_mkdir_p(work_dir, dm_fs_dir_mode(file_mode)) < 0) {
    dm_error_set(err, DM_ERR_IO, strerror(errno), "cannot create the unit's work dir %s", work_dir);
    return NULL;
  }
  dm_ctx *c = calloc(1, sizeof *c);
  if (!c || !(c->work_dir = strdup(work_dir))) {
    free(c);
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory creating a unit context");
    return NULL;
  }
  c->file_mode = file_mode;
  c->metrics = dmh_metrics_process();
  pthread_mutex_init(&c->lock, NULL);
  return c;
}

dm_ctx *dmh_ctx_new_from_spec(const dmh_chain_spec *cs, int i, const dmh_ctx_run *run,
                              dm_error *err) {
  const dmh_unit_spec *u = &cs->units[i];
  char wd[4096];
  snprintf(wd, sizeof wd, "%s/%s", run->work_root, u->name);
  dm_ctx *c = dmh_ctx_new(wd, cs->file_mode, err);
  if (!c)
    return NULL;
  c->source_id = cs->source_id;
  c->worker_name = run->worker_name;
  c->task_mode = cs->task_mode;
  c->relay_dir = cs->relay_dir;
  c->source_db = cs->source_db;
  c->gtid_enabled = cs->gtid_enabled;
  c->fencing_token = run->fencing_token;
  c->shard = run->shard;
  c->server_id = cs->server_id;
  /* The chain is fixed: known before any unit starts. A later unit that takes a position counts
   * as a sync (unit_follows, host.h): the position a dump records is then used. */
  for (int j = i + 1; j < cs->n_units; j++) {
    c->later[c->n_later++] = (uint32_t)cs->units[j].kind;
    if (cs->units[j].handover & DM_UNIT_TAKES_POSITION)
      c->later[c->n_later++] = DM_UNIT_SYNC;
  }
  c->token = run->token;
  c->metrics_owner = run->metrics_owner;
  /* Operators live in the subtask's work root, which `dmctl binlog` (daemon) and `dmhost
   * binlog` (foreground run) find from the task and source names alone. */
  if (cs->binlog_ops && dmh_ctx_set_binlog_ops(c, run->work_root, err) < 0) {
    dmh_ctx_free(c);
    return NULL;
  }
  dmh_ctx_set_task_part(c, cs, i, run->rules);
  snprintf(c->scope, sizeof c->scope, "task=%s source=%s unit=%s", cs->name, cs->source_id,
           u->name);
  return c;
}

void dmh_ctx_set_task_part(dm_ctx *c, const dmh_chain_spec *cs, int i,
                           const struct dmh_rules *rules) {
  c->task_name = cs->task_name;
  c->meta_schema = cs->meta_schema;
  c->target_db = cs->target_db;
  c->instance = cs->instance;
  c->rules = rules;
  c->section = cs->units[i].section;
  c->cfg_file = cs->cfg_file;
  c->shard_mode = cs->shard_mode;
  c->strict_optimistic = cs->strict_optimistic;
  c->collation_strict = cs->collation_strict;
}

void dmh_ctx_reset_seen(dm_ctx *c) {
  pthread_mutex_lock(&c->lock);
  for (int i = 0; i < c->n_seen; i++)
    free(c->seen[i]);
  c->n_seen = 0;
  pthread_mutex_unlock(&c->lock);
}

void dmh_ctx_free(dm_ctx *c) {
  if (!c)
    return;
  dmh_ctx_reset_seen(c);
  free(c->seen);
  free(c->work_dir);
  free(c->binlog_ops_path);
  dmh_binlog_op_clear(&c->held_op);
  for (dm_metric *m = c->metric_handles, *n; m; m = n) {
    n = m->next;
    free(m);
  }
  pthread_mutex_destroy(&c->lock);
  free(c);
}

void dmh_ctx_set_handoff(dm_ctx *c, const dm_position *pos, const dm_position *safe_exit) {
  pthread_mutex_lock(&c->lock);
  c->has_handoff = pos != NULL;
  if (pos)
    c->handoff = *pos;
  c->has_safe_exit = safe_exit != NULL;
  if (safe_exit)
    c->safe_exit = *safe_exit;
  pthread_mutex_unlock(&c->lock);
}

int dmh_ctx_set_binlog_ops(dm_ctx *c, const char *work_root, dm_error *err) {
  char *path = dmh_binlog_ops_path(work_root);
  if (!path) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory creating a unit context");
    return -1;
  }
  free(c->binlog_ops_path);
  c->binlog_ops_path = path;
  return 0;
}

static bool ctx_was_seen(dm_ctx *c, const char *path) {
  for (int i = 0; i < c->n_seen; i++)
    if (strcmp(c->seen[i], path) == 0)
      return true;
  return false;
}

/* Depth-first over groups; lists and arrays are leaves (see ctx_mark_seen). */
static config_setting_t *ctx_first_unread(dm_ctx *c, config_setting_t *group, const char *prefix,
                                          char *path, size_t len) {
  int n = config_setting_length(group);
  for (int i = 0; i < n; i++) {
    config_setting_t *s = config_setting_get_elem(group, (unsigned)i);
    const char *name = config_setting_name(s);
    if (!name)
      continue;
    char full[512];
    snprintf(full, sizeof full, "%s%s%s", prefix, *prefix ? "." : "", name);
    if (!ctx_was_seen(c, full)) {
      dm_strlcpy(path, full, len);
      return s;
    }
    if (config_setting_is_group(s)) {
      config_setting_t *u = ctx_first_unread(c, s, full, path, len);
      if (u)
        return u;
    }
  }
  return NULL;
}

int dmh_ctx_check_unread(dm_ctx *c, const char *section_name, const char *unit_label,
                         dm_error *err) {
  if (!c->section)
    return 0;
  char path[512];
  pthread_mutex_lock(&c->lock);
  config_setting_t *u = ctx_first_unread(c, c->section, "", path, sizeof path);
  pthread_mutex_unlock(&c->lock);
  if (!u)
    return 0;
  dm_error_set(err, DM_ERR_CONFIG_UNKNOWN, NULL,
               "%s:%d: unknown setting `%s.%s`: the %s unit does not read it",
               c->cfg_file ? c->cfg_file : "?", config_setting_source_line(u), section_name, path,
               unit_label);
  return -1;
}
