/*
 * dmhost SDK: the services the host hands a unit.
 *
 * A unit never calls a global symbol of the host (units are linked with -z defs against the SDK
 * library only). Everything it needs from the host comes through this struct, passed to init
 * together with an opaque context (dm_ctx) naming the unit instance. Keep both pointers in your
 * instance state; they stay valid until close returns (kill is always followed by close).
 *
 * The struct opens with its version and size so a unit built against a newer SDK can probe for a
 * service before using it:  if (DM_HOST_HAS(host, new_service)) ...
 * Fields are only ever appended; the end of each version is marked.
 *
 * Thread-safety: every service may be called from any thread the unit runs, concurrently.
 */
#ifndef DMHOST_HOST_H
#define DMHOST_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "position.h"
#include "shard.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DM_HOST_SERVICES_VERSION 13

/* DM's expression-filter rule for one source table, as expr_filters below hands it: SQL
 * expressions on the row's columns (by the source's column names), NULL where the rule has none.
 * insert_expr: an inserted row for which it is true is not replayed; delete_expr likewise; an
 * update is not replayed when update_old_expr holds for the row before it and update_new_expr for
 * the row after it (an absent one of the two holds). A rule has one kind: insert, update or
 * delete. */
typedef struct dm_expr_filter {
  const char *name;
  const char *insert_expr;
  const char *update_old_expr;
  const char *update_new_expr;
  const char *delete_expr;
} dm_expr_filter;

/* What the task's binlog event filters make of an event (event_verdict below). */
typedef enum dm_event_verdict {
  DM_EVENT_APPLY = 0,
  DM_EVENT_SKIP = 1,
  DM_EVENT_ERROR = 2,
} dm_event_verdict;

/* Opaque: one per unit instance, owned by the host. */
typedef struct dm_ctx dm_ctx;

typedef enum dm_log_level {
  DM_LOG_DEBUG = 0,
  DM_LOG_INFO = 1,
  DM_LOG_WARN = 2,
  DM_LOG_ERROR = 3,
} dm_log_level;

/* A structured log field: key = value. */
typedef struct dm_log_field {
  const char *key;
  const char *value;
} dm_log_field;

/* A database endpoint from the source file (`from`) or the task file (`target-database`). */
typedef struct dm_db_endpoint {
  const char *host;
  int port;
  const char *user;
  const char *password;
  const char *socket; /* NULL unless set */
  /* fields above: endpoint of services versions 1-4 */
  /* TLS, the `security` group of `from` / `target-database` (docs/config.md): absolute paths of
   * PEM files, NULL when not set. With ssl_ca set the connection is TLS and the server's
   * certificate is verified against that CA, its name against `host`. ssl_cert/ssl_key (both or
   * neither) are the client certificate. A host older than services version 5 hands out an
   * endpoint without these fields: never read them directly; let dm_db_connect read them, given
   * dm_host_db_endpoint_size (below) in dm_db_connect_opts.endpoint_size. */
  const char *ssl_ca;
  const char *ssl_cert;
  const char *ssl_key;
  /* fields above: endpoint of services version 5 */
  /* DM's `session` of `from` / `target-database`: variables the server's connections take after
   * the unit's own session set-up, in the file's order (docs/config.md). A host older than
   * services version 11 hands out an endpoint without them: let dm_db_session_apply (dmhost/db.h)
   * read them, given dm_host_db_endpoint_size. */
  const struct dm_db_session_var *session;
  int n_session;
  /* fields above: endpoint of services version 11 */
} dm_db_endpoint;

/* One session variable: `name` (letters, digits, `_`; the host checked it) and its value, sent as
 * a quoted string when is_string, else as written (an integer, a decimal, ON or OFF). */
typedef struct dm_db_session_var {
  const char *name;
  const char *value;
  bool is_string;
} dm_db_session_var;

/* Results of the config lookups. */
typedef enum dm_cfg_result {
  DM_CFG_OK = 0,
  DM_CFG_MISSING = 1,    /* no such setting: use your default */
  DM_CFG_WRONG_TYPE = 2, /* present with another type: the host has already logged where */
} dm_cfg_result;

/* What `dmctl binlog` asked for one statement event (binlog_operator below). */
typedef enum dm_binlog_op_kind {
  DM_BINLOG_OP_SKIP = 1,    /* do not apply the event */
  DM_BINLOG_OP_REPLACE = 2, /* apply `sqls` instead of the event */
  DM_BINLOG_OP_INJECT = 3,  /* apply `sqls`, then the event */
} dm_binlog_op_kind;

typedef struct dm_binlog_operator {
  int32_t kind;      /* dm_binlog_op_kind */
  uint32_t n_sqls;   /* statements of replace/inject */
  const char **sqls; /* n_sqls statements, each one complete without a trailing ';' */
  char at[DM_POSITION_NAME_MAX + 24]; /* "mysql-bin.000001:1234", or "" (the failing event) */
} dm_binlog_operator;

/* Metrics (metric_register below): Prometheus' three kinds. */
typedef enum dm_metric_type {
  DM_METRIC_COUNTER = 1,   /* only goes up (metric_add of amounts >= 0) */
  DM_METRIC_GAUGE = 2,     /* goes up and down (metric_set, metric_add) */
  DM_METRIC_HISTOGRAM = 3, /* observations counted in buckets, with their sum (metric_observe) */
} dm_metric_type;

/* Opaque: a metric family as registered by one unit instance, valid until close returns. */
typedef struct dm_metric dm_metric;

typedef struct dm_host_services {
  uint32_t version; /* DM_HOST_SERVICES_VERSION of the host */
  uint32_t size;    /* sizeof(dm_host_services) in the host */

  /* --- identity of the subtask and unit --- */
  const char *(*task_name)(dm_ctx *ctx);   /* `name` of the task file ("" for a relay) */
  const char *(*source_id)(dm_ctx *ctx);   /* `source-id` of the source file */
  const char *(*task_mode)(dm_ctx *ctx);   /* "all", "full", "incremental", "dump", "load", ... */
  const char *(*meta_schema)(dm_ctx *ctx); /* `meta-schema` for checkpoints in the target */
  /* A folder that belongs to this unit of this subtask, created by the host, kept across restarts
   * (dump files, relay files, local checkpoints). */
  const char *(*work_dir)(dm_ctx *ctx);
  /* The relay folder of the source (`relay-dir`), or NULL when relay is off. */
  const char *(*relay_dir)(dm_ctx *ctx);
  const dm_db_endpoint *(*source_db)(dm_ctx *ctx);
  const dm_db_endpoint *(*target_db)(dm_ctx *ctx); /* NULL for a relay unit */
  bool (*gtid_enabled)(dm_ctx *ctx);               /* `enable-gtid` of the source */

  /* --- logging --- */
  void (*log)(dm_ctx *ctx, dm_log_level level, const char *msg, const dm_log_field *fields,
              size_t n_fields);
  void (*logf)(dm_ctx *ctx, dm_log_level level, const char *fmt, ...)
      __attribute__((format(printf, 3, 4)));

  /* --- the stop token ---
   * Fires when the host wants the running process/resume to return (pause, stop, kill, swap,
   * shutdown). Poll it at safe points: between chunks, between transactions. It is cheap (one
   * atomic load). wait_stop sleeps up to `ms` and returns true as soon as the token fires, so use
   * it for every back-off or poll sleep. stop_fd is a descriptor that becomes readable when the
   * token fires: add it to poll() next to your sockets to wake from a blocking wait. */
  bool (*stop_requested)(dm_ctx *ctx);
  bool (*wait_stop)(dm_ctx *ctx, uint32_t ms);
  int (*stop_fd)(dm_ctx *ctx);

  /* --- errors ---
   * Fill `out` for `code` from the host's code table (class, scope, level, resumable, workaround)
   * with a printf-style message; raw_cause may be NULL. The host stamps unit, task and slot when
   * the error reaches it. */
  void (*error_make)(dm_ctx *ctx, dm_error *out, int32_t code, const char *raw_cause,
                     const char *fmt, ...) __attribute__((format(printf, 5, 6)));

  /* --- the unit's own config section ---
   * `path` is relative to the unit's section of the task file (`dump = { threads = 4; }` is
   * "threads" for the dump unit; "a.b" reaches into groups). A unit reads its settings in init and
   * update. Every setting in the section must be read by the unit: after init the host rejects the
   * task, naming file and line, if one was never looked up (that is how misspelt settings are
   * caught). Strings stay valid until close. */
  dm_cfg_result (*cfg_int)(dm_ctx *ctx, const char *path, int64_t *out);
  dm_cfg_result (*cfg_bool)(dm_ctx *ctx, const char *path, bool *out);
  dm_cfg_result (*cfg_float)(dm_ctx *ctx, const char *path, double *out);
  dm_cfg_result (*cfg_string)(dm_ctx *ctx, const char *path, const char **out);
  /* Number of elements of a list or array setting (0 if missing); element i of a list is reached
   * with the path "name.[i]" (e.g. "tables.[2]"). */
  int (*cfg_count)(dm_ctx *ctx, const char *path);

  /* --- hand-over between units ---
   * The position the unit before this one in the chain reported when it finished (the dump's end
   * position for sync in mode all). Returns false when there is none (first unit, mode
   * incremental). */
  bool (*handoff_position)(dm_ctx *ctx, dm_position *out);

  /* --- the task's rules for this source (mysql-instances entry) ---
   * block-allow-list: may a table (or, with table NULL, anything of a schema) be migrated? DM's
   * rules and matching (docs/config.md). System schemas (mysql, information_schema,
   * performance_schema, sys) never are. */
  bool (*table_allowed)(dm_ctx *ctx, const char *schema, const char *table);
  /* routes: where a source table goes on the target. Writes the target schema and table (the
   * names unchanged when no rule matches); a NULL table routes a schema. */
  void (*route_table)(dm_ctx *ctx, const char *schema, const char *table, char *out_schema,
                      size_t schema_len, char *out_table, size_t table_len);
  /* The task's `meta` of this source (where mode incremental starts); false if not set. */
  bool (*meta_position)(dm_ctx *ctx, dm_position *out);

  /* fields above: services version 1 */

  /* --- binlog event filters (the task's `filters`, named by `filter-rules` of this source) ---
   * Must this binlog event be skipped? DM's binlog-filter semantics: for each rule whose
   * schema-pattern/table-pattern match (DM wildcards, docs/config.md "Matching names"), an
   * Ignore rule whose events or sql-pattern match the event skips it, and a Do rule whose events
   * (or, for a statement, sql-pattern when it has one) do not match skips it too. `event` is DM's
   * name of the event: "insert", "update", "delete" for a row change; "create database", "drop
   * database", "create table", "create index", "drop table", "truncate table", "rename table",
   * "drop index", "alter table" for those statements; NULL for any other statement, which DM then
   * judges by sql-pattern alone (events, even "all", are not consulted). `sql` is the statement
   * (NULL for a row change). schema/table are the source's names; table is NULL for a
   * schema-level statement. No allocation; cheap enough to call per row event. */
  bool (*event_ignored)(dm_ctx *ctx, const char *schema, const char *table, const char *event,
                        const char *sql);

  /* --- binlog operators (`dmctl binlog skip|replace|inject TASK [-b FILE:POS] [SQL...]`) ---
   * What the operator wants done with the statement event that starts at file:offset. With
   * `failing` set, an operator registered without -b (meant for the event the unit failed on) is
   * returned too when none names the position. Returns true and fills *out (its strings belong to
   * the host and stay valid until the next call of binlog_operator or binlog_operator_done, or
   * close), false when there is none. Operators are persisted by the host, so they survive a
   * restart. */
  bool (*binlog_operator)(dm_ctx *ctx, const char *file, uint64_t offset, bool failing,
                          dm_binlog_operator *out);
  /* The unit applied the operator and committed a checkpoint past its event: the host forgets
   * it (an operator is used once). */
  void (*binlog_operator_done)(dm_ctx *ctx, const dm_binlog_operator *op);

  /* fields above: services version 2 */

  /* --- files ---
   * The mode for files the unit creates (dump files, relay files, local checkpoints): `file-mode`
   * of the task file (of the source file for a relay), 0600 by default. Folders get
   * dm_fs_dir_mode of it (dmhost/fs.h). Read it with dm_host_file_mode below, which gives 0600
   * on an older host. */
  uint32_t (*file_mode)(dm_ctx *ctx);

  /* fields above: services version 3 */

  /* --- the chain of the subtask ---
   * Does a unit of `kind` (dm_unit_kind of unit.h) run after this unit in this subtask? The chain
   * is fixed by the task mode (`all` = dump, load, sync; `full` = dump, load; `load&sync` = load,
   * sync; ...) and does not change while the subtask lives. A dump asks it to know whether the
   * binlog position it records will be used (a sync follows) or is only for the record: read it
   * with dm_host_sync_follows (unit.h). Always false for a relay. */
  bool (*unit_follows)(dm_ctx *ctx, uint32_t kind);

  /* fields above: services version 4 */

  /* --- the size of the endpoints source_db/target_db return ---
   * sizeof(dm_db_endpoint) in the host: the endpoint struct only grows at its end, so a unit
   * reads the fields that lie within this size and no further. Read it with
   * dm_host_db_endpoint_size below, which gives the size of the version 1 endpoint (no TLS
   * fields) on an older host. */
  uint32_t (*db_endpoint_size)(dm_ctx *ctx);

  /* fields above: services version 5 */

  /* --- hand-over: safe mode until a position ---
   * DM's safe-mode exit point: the position up to which the unit before this one says changes may
   * be in the data already (a dump with consistency = "none": its threads' snapshots were taken
   * at different moments, the sync starts at the earliest and must apply what lies between in
   * safe mode, as it may find a row there already or find it gone). Returns false when there is
   * none (a dump whose snapshots match one position, mode incremental). Like handoff_position,
   * set when the unit before this one finished in this run of the subtask. */
  bool (*handoff_safe_mode_exit)(dm_ctx *ctx, dm_position *out);
  /* fields above: services version 6 */

  /* --- fencing ---
   * The fencing token of this subtask on this worker: 0 = no fencing (a single machine, the
   * default); else a number that grows each time the subtask is handed to another worker (a
   * cluster worker passes the create_revision of its binding). A unit that commits to the target
   * keeps the token in its checkpoint rows there and refuses, in the same transaction, to move a
   * row that carries a higher one, so a stale worker (paused VM, partition) can never commit
   * after its successor took over (docs/sdk.md "Fencing", dmhost/db.h). Fixed for the life of
   * the instance. Read it with dm_host_fencing_token below, which gives 0 on an older host. */
  uint64_t (*fencing_token)(dm_ctx *ctx);

  /* fields above: services version 7 */

  /* --- the source's replica identity ---
   * The source file's `server-id` (docs/config.md): the server_id a unit that streams the
   * source's binlog as a replica presents unless its own section sets one, so the relay and the
   * source file agree without the unit deriving the host's default itself. Read it with
   * dm_host_source_server_id below, which gives 0 from an older host. */
  uint32_t (*source_server_id)(dm_ctx *ctx);

  /* fields above: services version 8 */

  /* --- metrics (docs/sdk.md "Metrics", docs/metrics.md) ---
   * What the unit publishes at the daemon's GET /metrics, in Prometheus' text format. The host adds
   * the labels `task`, `source_id` and `worker` of the subtask to every series itself: a unit
   * never names them (they are refused as label names), nor `le` for a histogram.
   *
   * metric_register, in init (or later, once per name): the family `name` of `type`, with `help`,
   * `n_labels` label names, and for a histogram `n_buckets` increasing upper bounds (+Inf is
   * added; 0 buckets: Prometheus' defaults, 0.005 to 10 seconds). Names follow Prometheus
   * ([a-zA-Z_][a-zA-Z0-9_]*, no colons: those are for recording rules; labels the same, not
   * starting with __); name a unit's own metrics after it (`mysink_rows_total`). Registering the
   * same name, type and labels again is the same family, from this or another instance of any unit
   * (families are shared by name; one instance gets its same handle back); the strings are copied.
   * Returns a handle valid until close, or NULL with *err: DM_ERR_METRIC_INVALID (a name, label or
   * bucket list that is not valid), DM_ERR_METRIC_CLASH (the name exists with another type or other
   * labels). A refusal is not fatal: a unit may log it and run on.
   *
   * metric_add (counter, gauge; a counter ignores an amount below 0), metric_set (gauge),
   * metric_observe (histogram): update the series of `label_values` (n_labels strings in the order
   * registered; NULL counts as ""; copied on first use). Cheap enough to call per transaction
   * from any number of threads: a short lock per family, no allocation after a label set's first
   * use. A call of the wrong kind is ignored (logged once). Keep label values bounded (a table
   * name, an operation), never a row key or a time. The series of a subtask go away with it.
   * Use the dm_host_metric_* helpers below: on a host older than version 9 they do nothing. */
  dm_metric *(*metric_register)(dm_ctx *ctx, const char *name, dm_metric_type type,
                                const char *help, const char *const *label_names, uint32_t n_labels,
                                const double *buckets, uint32_t n_buckets, dm_error *err);
  void (*metric_add)(dm_ctx *ctx, dm_metric *m, const char *const *label_values, double value);
  void (*metric_set)(dm_ctx *ctx, dm_metric *m, const char *const *label_values, double value);
  void (*metric_observe)(dm_ctx *ctx, dm_metric *m, const char *const *label_values, double value);

  /* fields above: services version 9 */

  /* Merged tables and online schema changes (shard.h, docs/shard.md). A host without them (or
   * that leaves one NULL) does no coordination: use the dm_host_shard_* / dm_host_route_extract /
   * dm_host_online_table_kind helpers below, which answer "none" then. */
  dm_shard_mode (*shard_mode)(dm_ctx *ctx); /* the task's shard-mode */
  /* The source's tables routed to the target table (every allowed source table of the group, at
   * start and again after a CREATE/DROP changes it). Returns 0 or -1 with *err. */
  int (*shard_report_tables)(dm_ctx *ctx, const char *target_schema, const char *target_table,
                             const dm_shard_table *tables, uint32_t n_tables, dm_error *err);
  /* The source arrived at a lock (shard.h dm_shard_info). Idempotent: putting the same info
   * again after a restart is how a source re-joins a half-arrived lock. Returns 0 or -1. */
  int (*shard_put)(dm_ctx *ctx, const dm_shard_info *info, dm_error *err);
  /* Blocks until the coordinator sends this source its operation for the target table's lock.
   * Returns 1 with *op, 0 when the subtask's stop was requested, -1 with *err. */
  int (*shard_wait)(dm_ctx *ctx, const char *target_schema, const char *target_table,
                    dm_shard_op *op, dm_error *err);
  /* The operation is applied and its checkpoint committed. Returns 0 or -1 with *err
   * (DM_ERR_FENCED in a cluster when this worker no longer holds the source). */
  int (*shard_done)(dm_ctx *ctx, const dm_shard_op *op, dm_error *err);
  /* The extract columns of the route that sends schema.table somewhere (none: out->n = 0). */
  void (*route_extract)(dm_ctx *ctx, const char *schema, const char *table, dm_route_extract *out);
  /* The table's kind by the task's online-DDL rules; for a ghost, the real table's name in
   * real[len] (docs/shard.md "Online DDL"). DM_ONLINE_REAL when online-ddl is off. table NULL
   * asks whether online-ddl is on: DM_ONLINE_GHOST when it is, DM_ONLINE_REAL when not. */
  dm_online_kind (*online_table_kind)(dm_ctx *ctx, const char *schema, const char *table,
                                      char *real, size_t len);
  /* As shard_wait, without blocking: 1 with *op when the source has one for the target, 0 when
   * not. Optimistic mode: the sync asks at quiet points whether a held table was released. */
  int (*shard_poll)(dm_ctx *ctx, const char *target_schema, const char *target_table,
                    dm_shard_op *op, dm_error *err);

  /* fields above: services version 10 */

  /* --- binlog event filters with DM's three actions ---
   * What the task's filters make of this binlog event (event_ignored's arguments and semantics):
   * DM_EVENT_APPLY; DM_EVENT_SKIP (an Ignore rule matched, or a Do rule did not); DM_EVENT_ERROR
   * (a rule with action Error matched: the unit stops before the event, its checkpoint not past
   * it, and fails with DM_ERR_SYNC_FILTER_ERROR; the rule's name is copied to rule[rule_len],
   * which may be NULL). Skip wins over error when rules disagree. event_ignored, which a unit
   * built against an older SDK calls, answers true only for DM_EVENT_SKIP (the host logs a
   * warning when it had to answer "apply" to an Error rule). `event` may also be one of DM's
   * finer names of an ALTER TABLE clause ("drop column", "add column", "rename index", ...: the
   * list is docs/config.md's, "filters"). Read it with dm_host_event_verdict below. */
  dm_event_verdict (*event_verdict)(dm_ctx *ctx, const char *schema, const char *table,
                                    const char *event, const char *sql, char *rule,
                                    size_t rule_len);

  /* fields above: services version 11 */

  /* --- expression filters (DM's expression-filter; docs/sync.md "Expression filters") ---
   * The rules of the subtask's instance for the source table schema.table (exact names, compared
   * as the task's case-sensitive says): up to max of them into out[]; returns how many there are
   * in all. The strings stay valid until the unit's next update or its close: a unit keeps a copy.
   * Each text was checked when the task file was read (a condition on a row: dm_db_condition_check
   * in db.h), and the unit evaluates it on rows as the server would (the sync: on the target). */
  size_t (*expr_filters)(dm_ctx *ctx, const char *schema, const char *table, dm_expr_filter *out,
                         size_t max);

  /* fields above: services version 12 */

  /* --- DM's collation_compatible (docs/config.md) ---
   * true when the task's collation_compatible is "strict": a unit that runs the source's CREATE
   * DATABASE / CREATE TABLE statements on the target writes the source's collation into them
   * (dmhost/ddl_collation.h) before it does. update-task may change it: ask again at each use.
   * Read it with dm_host_collation_strict below, which answers false (DM's "loose") from an older
   * host. */
  bool (*collation_strict)(dm_ctx *ctx);

  /* fields above: services version 13 */
} dm_host_services;

/* Is `field` present in the host's services struct (for services added after version 1)? */
#define DM_HOST_HAS(host, field)                                                                   \
  ((host)->size >= offsetof(dm_host_services, field) + sizeof((host)->field) &&                    \
   (host)->field != NULL)

/* event_verdict above; from a host older than services version 11, event_ignored's answer (skip
 * or apply: such a host has no Error action). */
static inline dm_event_verdict dm_host_event_verdict(const dm_host_services *host, dm_ctx *ctx,
                                                     const char *schema, const char *table,
                                                     const char *event, const char *sql, char *rule,
                                                     size_t rule_len) {
  if (rule && rule_len)
    rule[0] = '\0';
  if (DM_HOST_HAS(host, event_verdict))
    return host->event_verdict(ctx, schema, table, event, sql, rule, rule_len);
  if (DM_HOST_HAS(host, event_ignored) && host->event_ignored(ctx, schema, table, event, sql))
    return DM_EVENT_SKIP;
  return DM_EVENT_APPLY;
}

/* The file mode the host asks for (file_mode above), or 0600 from a host without the service. */
static inline uint32_t dm_host_file_mode(const dm_host_services *host, dm_ctx *ctx) {
  return DM_HOST_HAS(host, file_mode) ? host->file_mode(ctx) : 0600;
}

/* The size of the host's dm_db_endpoint (db_endpoint_size above), or of the version 1 endpoint
 * (host, port, user, password, socket) from a host without the service. */
static inline uint32_t dm_host_db_endpoint_size(const dm_host_services *host, dm_ctx *ctx) {
  return DM_HOST_HAS(host, db_endpoint_size) ? host->db_endpoint_size(ctx)
                                             : (uint32_t)offsetof(dm_db_endpoint, ssl_ca);
}

/* The source file's server-id (source_server_id above), or 0 from a host without it. */
static inline uint32_t dm_host_source_server_id(const dm_host_services *host, dm_ctx *ctx) {
  return DM_HOST_HAS(host, source_server_id) ? host->source_server_id(ctx) : 0;
}

/* The task's collation_compatible is strict (collation_strict above); false from a host without
 * it. */
static inline bool dm_host_collation_strict(const dm_host_services *host, dm_ctx *ctx) {
  return DM_HOST_HAS(host, collation_strict) && host->collation_strict(ctx);
}

/* The task's shard-mode (shard_mode above), or NONE from a host without it. */
static inline dm_shard_mode dm_host_shard_mode(const dm_host_services *host, dm_ctx *ctx) {
  return DM_HOST_HAS(host, shard_mode) ? host->shard_mode(ctx) : DM_SHARD_MODE_NONE;
}

/* route_extract above, or no columns from a host without it. */
static inline void dm_host_route_extract(const dm_host_services *host, dm_ctx *ctx,
                                         const char *schema, const char *table,
                                         dm_route_extract *out) {
  out->n = 0;
  if (DM_HOST_HAS(host, route_extract))
    host->route_extract(ctx, schema, table, out);
}

/* online_table_kind above, or DM_ONLINE_REAL from a host without it. */
static inline dm_online_kind dm_host_online_table_kind(const dm_host_services *host, dm_ctx *ctx,
                                                       const char *schema, const char *table,
                                                       char *real, size_t len) {
  return DM_HOST_HAS(host, online_table_kind)
             ? host->online_table_kind(ctx, schema, table, real, len)
             : DM_ONLINE_REAL;
}

/* The subtask's fencing token (fencing_token above), or 0 (no fencing) from a host without it. */
static inline uint64_t dm_host_fencing_token(const dm_host_services *host, dm_ctx *ctx) {
  return DM_HOST_HAS(host, fencing_token) ? host->fencing_token(ctx) : 0;
}

/* metric_register above, or NULL from a host without metrics (err->code is then DM_ERR_OK: not
 * an error, the unit simply publishes nothing). */
static inline dm_metric *dm_host_metric_register(const dm_host_services *host, dm_ctx *ctx,
                                                 const char *name, dm_metric_type type,
                                                 const char *help, const char *const *label_names,
                                                 uint32_t n_labels, const double *buckets,
                                                 uint32_t n_buckets, dm_error *err) {
  if (!DM_HOST_HAS(host, metric_register)) {
    err->code = DM_ERR_OK;
    return NULL;
  }
  return host->metric_register(ctx, name, type, help, label_names, n_labels, buckets, n_buckets,
                               err);
}

/* dm_host_metric_register for a unit that runs on without the metric when it is refused: the
 * refusal is logged as a warning naming `name`. NULL then, or from an older host. */
static inline dm_metric *dm_host_metric_publish(const dm_host_services *host, dm_ctx *ctx,
                                                const char *name, dm_metric_type type,
                                                const char *help, const char *const *label_names,
                                                uint32_t n_labels, const double *buckets,
                                                uint32_t n_buckets) {
  dm_error err;
  dm_metric *m = dm_host_metric_register(host, ctx, name, type, help, label_names, n_labels,
                                         buckets, n_buckets, &err);
  if (!m && err.code != DM_ERR_OK)
    host->logf(ctx, DM_LOG_WARN, "metric %s is not published: %s", name, err.message);
  return m;
}

/* The updates above; each does nothing with a NULL handle (an older host, a refused name). */
static inline void dm_host_metric_add(const dm_host_services *host, dm_ctx *ctx, dm_metric *m,
                                      const char *const *label_values, double value) {
  if (m)
    host->metric_add(ctx, m, label_values, value);
}
static inline void dm_host_metric_set(const dm_host_services *host, dm_ctx *ctx, dm_metric *m,
                                      const char *const *label_values, double value) {
  if (m)
    host->metric_set(ctx, m, label_values, value);
}
static inline void dm_host_metric_observe(const dm_host_services *host, dm_ctx *ctx, dm_metric *m,
                                          const char *const *label_values, double value) {
  if (m)
    host->metric_observe(ctx, m, label_values, value);
}

#ifdef __cplusplus
}
#endif
#endif /* DMHOST_HOST_H */
