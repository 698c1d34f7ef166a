/*
 * The sync unit (dmhost-sync): replays the source's binlog on the target (docs/sync.md).
 *
 * Shared declarations of its files:
 *   sync_unit.c        slots, settings, status
 *   sync_run.c         process: the coordinator loop (events -> batches -> workers)
 *   sync_source.c      where events come from: the relay folder or the source itself
 *   sync_schema.c      tables: names, routes, keys (from the table map and the target)
 *   sync_batch.c       a batch: row changes, compaction, causality groups
 *   sync_emit.c        the statement text of a worker's part of a batch
 *   sync_worker.c      worker connections applying their part of a batch with their checkpoint
 *   sync_checkpoint.c  DM's `<task>_syncer_checkpoint` table
 *   sync_xa.c          XA transactions: stored at the prepare, applied at the commit
 *   sync_shard.c       pessimistic shard DDL: held tables, the lock's operation (sync_shard.h)
 *   sync_ddl_apply.c   DDL: filters, routes, operators, replay after a crash
 *   sync_filter.c      the task's binlog event filters: Do, Ignore, Error (DM's three actions)
 *   sync_expr.c        DM's expression filters: row changes skipped by SQL expressions on values
 *   sync_db.c          connections, session, errors, the source precheck
 *   sync_tracker*.c    the schema tracker: shadow tables on the target (sync_tracker.h)
 *   sync_online.c      online schema changes (gh-ost, pt-osc): ghost tables' DDL records
 *   sync_gtid.c        the GTID set (MariaDB's or MySQL's) moved on by GTID events
 *   sync_keymap.c      the open-addressing hash map the batch uses
 */
#ifndef DMHOST_SYNC_H
#define DMHOST_SYNC_H

#include <mysql.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <dmhost/binlog.h>
#include <dmhost/binlog_rows.h>
#include <dmhost/dmhost.h>

#include "sync_ddl.h"
#include "sync_sql.h"
#include "sync_val.h"
#include <dmhost/buf.h>

#define SYNC_NAME_MAX 256
#define SYNC_MAX_WORKERS 64
#define SYNC_KEY_COLS_MAX 32 /* MariaDB allows 32 key parts */
#define SYNC_UKS_MAX 16      /* unique keys tracked per table for causality */

typedef struct sync_unit sync_unit;
typedef struct sync_expr sync_expr;

/* ---- settings (section `sync` of the task file) ---- */
#define SYNC_TZ_MAX 64 /* a time zone's name */

typedef struct sync_cfg {
  int workers;          /* worker-count */
  uint32_t batch_rows;  /* row changes per batch (all workers) */
  uint64_t batch_bytes; /* statement text per batch */
  uint32_t batch_ms;    /* a batch is closed at the next transaction end after this */
  bool safe_mode;       /* INSERT -> REPLACE, UPDATE -> DELETE + REPLACE */
  int64_t
      safe_mode_duration_ms; /* automatic safe mode after a start without a clean stop; -1 unset */
  bool compact;              /* merge changes of one row inside a batch */
  uint32_t server_id;        /* replica server_id when reading the source directly */
  uint32_t status_ms;        /* how often the source's position is read for status */
  uint32_t chunk_bytes;      /* statement text per round trip */
  char timezone[SYNC_TZ_MAX + 1]; /* DM's task `timezone` ("": none); sync_tz.c */
  sync_val_cfg val;               /* the `validator` group: the continuous validator */
} sync_cfg;

/* ---- sync_gtid.c: the source's GTID set, moved on per GTID event ----
 * MariaDB ("D-S-N,...": one GTID per domain, the last one) or MySQL (a dm_mysql_gtid_set,
 * "uuid:1-9": every GTID executed), whichever the text or the first GTID event says. A GTID event
 * is held pending (sync_gtid_pend_*) and added when its transaction ends (sync_gtid_commit). */
typedef struct sync_gtid_set {
  dm_mariadb_gtid_set ma; /* a MariaDB set (the SDK's type) */
  bool mysql;             /* a MySQL set: `my` holds it */
  dm_mysql_gtid_set my;   /* freed by sync_gtid_free */
  /* the pending GTID: MariaDB's (domain, server, seq) or MySQL's (sid, gno; anonymous: gno 0) */
  bool pending;
  uint32_t p_domain, p_server;
  uint64_t p_seq;
  uint8_t p_sid[16];
} sync_gtid_set;
/* "" is the empty set. -1 with err on bad text (DM_ERR_BINLOG_GTID_SET). */
int sync_gtid_parse(sync_gtid_set *s, const char *text, dm_error *err);
void sync_gtid_update(sync_gtid_set *s, uint32_t domain, uint32_t server, uint64_t seq);
void sync_gtid_format(const sync_gtid_set *s, char *out, size_t len);
void sync_gtid_free(sync_gtid_set *s);
void sync_gtid_pend_mariadb(sync_gtid_set *s, uint32_t domain, uint32_t server, uint64_t seq);
/* A MySQL GTID or ANONYMOUS_GTID event: decoded, held pending. 0, or -1 with err. */
int sync_gtid_pend_mysql(sync_gtid_set *s, const dm_binlog_format *fmt, const dm_binlog_event *ev,
                         dm_error *err);
/* The pending GTID (if any) joins the set. 0, or -1 (no memory) with err. */
int sync_gtid_commit(sync_gtid_set *s, dm_error *err);
/* PREVIOUS_GTIDS (MySQL, the first events of a file): what the source executed before the file
 * joins the set (a set taken from a checkpoint already holds it). 0, or -1 with err. */
int sync_gtid_previous(sync_gtid_set *s, const dm_binlog_format *fmt, const dm_binlog_event *ev,
                       dm_error *err);

/* ---- sync_keymap.c: bytes -> int32, keys live in a caller's arena ---- */
typedef struct sync_keymap {
  uint32_t *slots; /* 0 empty, else entry index + 1 */
  uint32_t cap;    /* power of two */
  struct sync_keymap_entry {
    uint64_t hash;
    uint32_t off, len; /* the key's bytes in the arena */
    int32_t value;
  } * entries;
  uint32_t n, entries_cap;
} sync_keymap;
/* the SDK's dm_hash64 (task_meta.h): FNV-1a over 8-byte words, fast on short keys */
#define sync_hash dm_hash64
/* Finds key (bytes at arena+off, len); returns its entry or NULL. */
struct sync_keymap_entry *sync_keymap_find(const sync_keymap *m, const char *arena, uint32_t off,
                                           uint32_t len, uint64_t hash);
/* Adds a new entry (the key must not be present). -1: no memory. */
int sync_keymap_add(sync_keymap *m, const char *arena, uint32_t off, uint32_t len, uint64_t hash,
                    int32_t value);
void sync_keymap_clear(sync_keymap *m);
void sync_keymap_free(sync_keymap *m);

/* ---- sync_schema.c: the tables the binlog names ---- */
typedef enum sync_key_kind {
  SYNC_KEY_NONE = 0, /* no primary or not-null unique key: whole-row matching */
  SYNC_KEY_PK = 1,
  SYNC_KEY_UK = 2, /* the first unique key whose columns are all NOT NULL */
} sync_key_kind;

typedef struct sync_ukey {
  int n;
  int cols[SYNC_KEY_COLS_MAX]; /* column indexes (table map order; n_cols + e: extract column e) */
  /* Is the column's text its identity under the key's comparison? Not for text under a
   * collation ('n44' = 'N44' under a _ci collation, 'a' = 'a ' with PAD SPACE, 'e' = 'é' under
   * accent-insensitive ones) nor for floating point (-0 = 0): such parts do not go into the
   * causality key (it must put rows the target sees as one row into one group). */
  bool col_exact[SYNC_KEY_COLS_MAX];
  bool exact; /* every part is */
} sync_ukey;

typedef struct sync_table {
  uint32_t id;        /* dense number of the source table */
  uint32_t target_id; /* dense number of the routed table (tables merged by routes share it):
                         part of every key string */
  uint64_t name_hash; /* of `tdb`.`tname`: what the worker assignment hashes (stable across
                         restarts, unlike target_id) */
  char db[SYNC_NAME_MAX], name[SYNC_NAME_MAX];   /* the source's names */
  char tdb[SYNC_NAME_MAX], tname[SYNC_NAME_MAX]; /* routed */
  bool allowed;                                  /* block-allow list */
  bool resolved;   /* columns and keys read from the target for the current table map */
  uint32_t n_cols; /* of the table map the keys were resolved for */
  /* The route's extract columns (docs/shard.md, "Merged keys"): not in the source's rows, they
   * come after its n_cols columns (index n_cols + e in col_names, generated and the keys), every
   * row of the table carrying the same values, ext_lit[e] as literals. */
  dm_route_extract ext;
  dm_buf ext_lit[DM_ROUTE_EXTRACT_MAX];
  uint32_t n_all;   /* n_cols + ext.n */
  uint64_t map_sig; /* hash of that table map's column names and types */
  dm_buf qname;     /* `tdb`.`tname` */
  dm_buf cols;      /* (`a`,`b`,...) */
  dm_buf odku;      /* ON DUPLICATE KEY UPDATE `a`=VALUES(`a`),... */
  char **col_names; /* n_all names, quoted `a` */
  bool *generated;  /* n_all: computed by the target (left out of INSERT and SET) */
  sync_key_kind key_kind;
  sync_ukey key; /* the key rows are matched by (PK or UK) */
  int n_uks;     /* every unique key incl. the primary (causality) */
  sync_ukey uks[SYNC_UKS_MAX];
  bool compactable;  /* the primary key is the only unique key: row changes commute */
  int8_t ignored[3]; /* insert/update/delete: the filters' dm_event_verdict; -1: not asked yet */
  sync_expr *expr;   /* the table's expression-filter rules (sync_expr.c); NULL: none */
} sync_table;

typedef struct sync_schema sync_schema;
int sync_schema_new(sync_unit *u, sync_schema **out);
void sync_schema_free(sync_schema *s);
/* The table of a table map: created on first sight; resolved (keys read from the target over
 * `conn`) when new or when the map's columns changed. NULL with *err on failure. Tables the
 * block-allow list refuses come back with allowed = false and are never resolved. */
sync_table *sync_schema_table(sync_schema *s, MYSQL *conn, const dm_binlog_table_map *tm,
                              uint64_t sig, dm_error *err);
/* A table map's column names and types as one number (sync_schema_table's `sig`): computed once
 * per table map event, compared at every row event. */
uint64_t sync_schema_map_sig(const dm_binlog_table_map *tm);
/* Forget what was read of a table (a DDL changed it): it is resolved again on next use. */
void sync_schema_invalidate(sync_schema *s, const char *db, const char *table);

/* ---- sync_batch.c ---- */
typedef enum sync_rec_kind {
  SYNC_REC_INSERT = 1,
  SYNC_REC_UPSERT = 2, /* compacted update (row exists): INSERT .. ON DUPLICATE KEY UPDATE */
  SYNC_REC_DELETE = 3,
  SYNC_REC_UPDATE = 4, /* in-order UPDATE .. SET .. WHERE */
} sync_rec_kind;

typedef struct sync_rec {
  uint8_t kind;
  bool dead; /* merged away by compaction */
  sync_table *t;
  int32_t node;                  /* causality node (union-find) */
  uint32_t key_off, key_len;     /* key literal "v1" / "(v1,v2)" (compactable: after a 5-byte
                                    table/key prefix) */
  uint32_t row_off, row_len;     /* "(v1,...,vn)" of the row after the change */
  uint32_t where_off, where_len; /* in-order UPDATE/DELETE: "`a`=v1 AND ..." (whole row: <=>) */
  uint32_t set_off, set_len;     /* in-order UPDATE: "`a`=v1,..." */
  uint32_t vkey_off, vkey_len;   /* in-order INSERT/UPDATE of a keyed table, the validator on: the
                                    key literal of the row after the change (its probe key) */
} sync_rec;

typedef struct sync_batch {
  dm_buf arena; /* every text of the batch */
  sync_rec *recs;
  uint32_t n_recs, cap_recs;
  sync_keymap rows;  /* compaction: (table, key) -> record */
  sync_keymap nodes; /* causality: key string -> node */
  int32_t *parent;   /* union-find over nodes */
  uint64_t *node_hash;
  int32_t *node_worker; /* assignment of roots */
  uint32_t cap_nodes;
  uint32_t n_rows;  /* row changes read (before compaction) */
  uint32_t n_txns;  /* transactions closed into it */
  bool moved;       /* events between transactions moved `end` (rotation, ...) */
  bool safe;        /* applied in safe mode: it starts before the safe-mode exit point */
  bool solo;        /* small: worker 0 applies it all and moves every worker's row with it
                       (sync_run_batch.c, SYNC_SOLO_ROWS) */
  int64_t first_ns; /* when its first change arrived */
  dm_position end;  /* where it ends: a transaction boundary, or with end_rows > 0 the start
                       of a transaction of which end_rows row changes are in */
  uint64_t end_rows;
  uint32_t last_ts;      /* timestamp of its last event */
  uint32_t first_ts;     /* of its first transaction with rows of the task (0: none): val_defer */
  uint32_t txn_mark_rec; /* n_recs when the open transaction began */
  uint32_t txn_mark_arena;
  /* per worker: records to apply, in order */
  uint32_t *part[SYNC_MAX_WORKERS];
  uint32_t n_part[SYNC_MAX_WORKERS], cap_part[SYNC_MAX_WORKERS];
} sync_batch;

void sync_batch_init(sync_batch *b);
void sync_batch_free(sync_batch *b);
void sync_batch_reset(sync_batch *b);
/* Adds the changes of one row (before/after images per the event kind). Returns 0, 1 when the
 * batch must be closed before this row can go in (a compaction case that cannot merge: call again
 * after the close), or -1 with *err. */
int sync_batch_add_row(sync_unit *u, sync_batch *b, sync_table *t, uint8_t rows_kind,
                       const dm_binlog_table_map *tm, const dm_binlog_value *before,
                       const dm_binlog_value *after, dm_error *err);
/* Assign causality groups to `workers` workers (deterministic for equal content). */
int sync_batch_assign(sync_batch *b, int workers);
/* Statement text of worker w's part into out (without transaction control); sync_emit.c. */
int sync_batch_sql(sync_unit *u, const sync_batch *b, int w, dm_buf *out, size_t chunk_bytes,
                   int (*emit)(void *arg, dm_buf *chunk), void *arg);

/* ---- sync_db.c ---- */
MYSQL *sync_db_connect_target(sync_unit *u, dm_error *err);
/* A target connection for the binlog's DDL: the same session, but no CLIENT_MULTI_STATEMENTS. */
MYSQL *sync_db_connect_ddl(sync_unit *u, dm_error *err);
MYSQL *sync_db_connect_source(sync_unit *u, dm_error *err);
void sync_db_close(sync_unit *u, MYSQL *c);
/* Runs statements (several, ';'-separated), draining every result. 0, or -1 with *err. */
int sync_db_exec(sync_unit *u, MYSQL *c, const char *sql, size_t len, const char *what,
                 dm_error *err);
void sync_db_error(sync_unit *u, MYSQL *c, const char *what, dm_error *err);
/* The source may be replicated: ROW format, FULL image and metadata, privileges. */
int sync_db_precheck(sync_unit *u, MYSQL *src, dm_error *err);

/* ---- sync_checkpoint.c ---- */
typedef struct sync_cp_state {
  bool exists;   /* rows for this task and source */
  int n_workers; /* worker rows */
  dm_position worker_pos[SYNC_MAX_WORKERS];
  uint64_t worker_rows[SYNC_MAX_WORKERS]; /* row changes of the transaction at worker_pos done */
  dm_position min, max;                   /* over the worker rows */
  uint64_t min_rows, max_rows;
  dm_position global;                     /* the is_global row */
  char ddl_at[DM_POSITION_NAME_MAX + 24]; /* a DDL that was being applied, "file:pos", or "" */
  dm_position safe_exit; /* the global row's exit_safe_binlog_* (name "" when none) */
} sync_cp_state;
int sync_cp_prepare(sync_unit *u, MYSQL *c, dm_error *err);
/* Reads the rows with a locking read. `own` (the unit starts on them): with a fencing token, the
 * rows are raised to it first, in the same transaction (DM_ERR_FENCED when one carries more). */
int sync_cp_load(sync_unit *u, MYSQL *c, sync_cp_state *st, bool own, dm_error *err);
/* Sets the global row and `n` worker rows (removing others) to pos (+ rows of the transaction
 * starting there), in one transaction. The global row keeps u->safe_exit (DM's
 * exit_safe_binlog_*). */
int sync_cp_reset(sync_unit *u, MYSQL *c, const dm_position *pos, uint64_t rows, int n,
                  dm_error *err);
/* The same, with `also` (statements, each ending in ';'; may be NULL) run in the transaction
 * after the rows moved: the online DDL records of the event (sync_online_sql). */
int sync_cp_reset_with(sync_unit *u, MYSQL *c, const dm_position *pos, uint64_t rows, int n,
                       const dm_buf *also, dm_error *err);
/* The same statements without transaction control, appended to q (-1: no memory): for a target
 * transaction that moves every row together with changes of its own (XA, sync_xa.c). */
int sync_cp_reset_sql(sync_unit *u, MYSQL *c, const dm_position *pos, uint64_t rows, int n,
                      dm_buf *q);
/* The statement that moves worker w's row (run first in the worker's transaction). */
int sync_cp_worker_sql(sync_unit *u, MYSQL *c, int w, const dm_position *pos, uint64_t rows,
                       dm_buf *out);
/* The statements of a solo batch's transaction (worker 0 alone): every one of the n worker rows
 * and the global row move to pos, so no other commit moves them for that batch. */
int sync_cp_solo_sql(sync_unit *u, MYSQL *c, int n, const dm_position *pos, uint64_t rows,
                     dm_buf *out);
/* Orders checkpoint positions: file/offset, then the row count inside a transaction. */
int sync_cp_compare(const dm_position *a, uint64_t a_rows, const dm_position *b, uint64_t b_rows);
int sync_cp_global(sync_unit *u, MYSQL *c, const dm_position *pos, dm_error *err);
/* The global row's safe-mode exit point := u->safe_exit (name "": none). */
int sync_cp_safe_exit(sync_unit *u, MYSQL *c, dm_error *err);
int sync_cp_mark_ddl(sync_unit *u, MYSQL *c, const char *at, dm_error *err);
/* A fenced statement moving `what` (a row, "worker 3's row") failed with DM_DB_FENCE_ERRNO and
 * was rolled back: *err becomes DM_ERR_FENCED naming the newer token, or DM_ERR_CHECKPOINT when
 * the row is gone. Returns -1. */
int sync_cp_fence_failed(sync_unit *u, MYSQL *c, const char *what, dm_error *err);

/* ---- sync_source.c ---- */
typedef struct sync_source sync_source;
/* Opens the relay folder (relay on) or the source's stream at `from` (a transaction boundary). */
int sync_source_open(sync_unit *u, const dm_position *from, sync_source **out, dm_error *err);
/* 1 event, 0 idle (nothing to read right now: the caller may flush and call again), -1 error. */
int sync_source_next(sync_source *s, dm_binlog_event *ev, dm_error *err);
/* Whether sync_source_next can go on without waiting for the source (dm_binlog_reader_pending);
 * always true from the relay, whose waits are short looks that come back as "idle". */
bool sync_source_pending(const sync_source *s);
/* The descriptor to poll for the source's next bytes when sync_source_pending says no; -1 when
 * there is none (the relay). */
int sync_source_fd(const sync_source *s);
const dm_binlog_format *sync_source_format(const sync_source *s);
void sync_source_interrupt(sync_source *s);
/* The checkpoint moved to `file`: tell the relay's purge what is still needed. */
void sync_source_checkpoint(sync_source *s, const dm_position *pos);
void sync_source_close(sync_source *s);

/* ---- sync_worker.c ---- */
typedef struct sync_workers sync_workers;
int sync_workers_start(sync_unit *u, int n, sync_workers **out, dm_error *err);
/* Hands each worker its part of batch b; worker w's checkpoint row moves to b->end in the same
 * transaction, unless skip[w] (recovery: it committed this batch before a crash). */
void sync_workers_dispatch(sync_workers *ws, const sync_batch *b, const bool *skip);
/* Waits until the dispatched batch is applied by all. 0, or -1 with the first worker's error. */
int sync_workers_wait(sync_workers *ws, dm_error *err);
bool sync_workers_busy(sync_workers *ws);
/* Readable (poll) from the end of the dispatched batch until the next dispatch. */
int sync_workers_done_fd(const sync_workers *ws);
void sync_workers_stop(sync_workers *ws);

/* ---- sync_ddl_apply.c ---- */
/* A DDL statement (QUERY event outside a transaction) at ev: everything before it is applied and
 * the workers are idle. Applies it (filters, block-allow list, routes, operators) on a DDL
 * connection of its own, under the event's sql_mode and client charset (fmt says whether the
 * source is MariaDB or MySQL), and moves every checkpoint row past it over `conn`. 0, or -1 with
 * *err (the event's position in the message). */
int sync_ddl_apply(sync_unit *u, MYSQL *conn, const dm_binlog_format *fmt,
                   const dm_binlog_event *ev, const dm_binlog_query *q, const dm_position *after,
                   int n_workers, dm_error *err);

/* Errors of a DDL that already ran (table exists, unknown table, duplicate column, ...): what a
 * replayed DDL may answer after a stop between running it and moving the checkpoint past it. */
bool sync_ddl_already_done(unsigned code);

/* ---- sync_online.c: online schema changes (gh-ost, pt-online-schema-change) ----
 * docs/shard.md, "Online DDL". One per run, made at its start. */
typedef struct sync_online sync_online;
/* online-ddl on (the host's online_table_kind answers so for no table): DM's table
 * `<meta>`.`<task>_onlineddl` made if missing and this source's records read. 0, or -1 with err. */
int sync_online_start(sync_unit *u, MYSQL *c, sync_online **out, dm_error *err);
void sync_online_free(sync_online *o);
bool sync_online_on(const sync_online *o);
/* The kind of db.table (REAL when o is NULL or online-ddl is off); a ghost's real table name in
 * real[len] (group 1 of its rule; with c, a name the schema tracker does not know but knows
 * without its leading '_'s is taken without them: pt-osc's `__t_new`). */
dm_online_kind sync_online_kind(sync_online *o, MYSQL *c, const char *db, const char *table,
                                char *real, size_t len);
/* Are the row events of db.table replicated: the block-allow list lets it in, and it is no ghost
 * or trash table (u->online's rules). */
bool sync_online_rows_replicated(sync_unit *u, const char *db, const char *table);
/* A ghost's own DDL (not a RENAME), already judged by its real table's name: CREATE or DROP TABLE
 * deletes its record, TRUNCATE is nothing, any other is appended to the record. 0, or -1 (no
 * memory). `at` names the event for the log. */
int sync_online_ghost_ddl(sync_online *o, const sync_ddl_stmt *s, const char *real_schema,
                          const char *real_table, const char *at, dm_error *err);
/* The ghost's record is deleted (renamed to a trash table, or after its cut-over). */
void sync_online_forget(sync_online *o, const char *schema, const char *ghost);
/* The cut-over: `RENAME ghost TO real`. Appends the ghost's recorded statements, read under
 * `flags`, with the ghost's name replaced by `real` and every name routed, to out (each
 * NUL-terminated; *n_out of them), and deletes the record. The caller runs them (or hands them to
 * a shard lock). -1 with DM_ERR_SYNC_GHOST_NO_RECORD when nothing is recorded. */
int sync_online_cutover(sync_online *o, const sync_ddl_name *ghost, const sync_ddl_name *real,
                        unsigned flags, const char *at, dm_buf *out, uint32_t *n_out,
                        dm_error *err);
/* The statements (REPLACE, DELETE) that write the records changed since the last commit,
 * appended to q for the checkpoint transaction; sync_online_committed after it commits. -1: no
 * memory. */
int sync_online_sql(sync_online *o, MYSQL *c, dm_buf *q);
void sync_online_committed(sync_online *o);

/* ---- sync_xa.c: XA transactions, stored on the target at the prepare, applied at the commit ----
 */
typedef struct sync_xa sync_xa;
int sync_xa_new(sync_unit *u, sync_xa **out); /* -1: no memory */
void sync_xa_free(sync_xa *x);
/* Creates `<meta>`.`<task>_syncer_xa` if need be. */
int sync_xa_table(sync_xa *x, MYSQL *c, dm_error *err);
/* Every GTID event: one flagged PREPARED_XA begins a prepared group (its rows up to its
 * XA_PREPARE go to sync_xa_batch); one flagged COMPLETED_XA names the XID its statement ends.
 * DM_ERR_BINLOG_CORRUPT when a prepared group is still open (no XA_PREPARE ended it). */
int sync_xa_gtid(sync_xa *x, const dm_binlog_gtid *g, const dm_binlog_event *ev, dm_error *err);
bool sync_xa_open(const sync_xa *x);
sync_batch *sync_xa_batch(sync_xa *x);
/* After a row went into sync_xa_batch: a batch's worth (`batch`, `batch-bytes`) is stored. */
int sync_xa_spill(sync_xa *x, MYSQL *c, dm_error *err);
/* XA_PREPARE at ev, everything before its group applied: the rest of the group stored and every
 * checkpoint row moved to `after`, in one target transaction over c. */
int sync_xa_prepare(sync_xa *x, MYSQL *c, const dm_binlog_xa_prepare *xp, const dm_binlog_event *ev,
                    const dm_position *after, int n_workers, dm_error *err);
/* The statement, `XA COMMIT` (commit) or `XA ROLLBACK`, at ev, everything before it applied: in
 * one target transaction the stored statements run (commit), are deleted and every checkpoint row
 * moves to `after`. *rows: the row changes applied. */
int sync_xa_end(sync_xa *x, MYSQL *c, bool commit, const dm_binlog_event *ev,
                const dm_position *after, int n_workers, uint64_t *rows, dm_error *err);

/* ---- sync_run.c ---- */
void sync_run(sync_unit *u, dm_result *result);

/* ---- sync_safe.c: the automatic safe mode at a start (DM's safe-mode-duration) ---- */
enum { SYNC_SAFE_NONE, SYNC_SAFE_EXIT, SYNC_SAFE_TIMED };
/* At a start from `start` (u->safe_exit from the checkpoint): *until_exit, safe mode until
 * u->safe_exit; else *until_ns (dm_clock_ns, 0: none), safe mode until then. -1 with *err. */
int sync_safe_start(sync_unit *u, MYSQL *tc, const dm_position *start, bool recovering,
                    bool *until_exit, int64_t *until_ns, dm_error *err);
/* Whether a batch whose first change came at first_ns (0: none yet) is in the timed window;
 * ends the window (*until_ns = 0) once it is over. */
bool sync_safe_timed(sync_unit *u, int64_t *until_ns, int64_t first_ns);
/* The reading passed u->safe_exit: cleared, safe mode off. */
void sync_safe_exit_passed(sync_unit *u);
/* A clean stop with everything up to `done` applied: the global row records it as the exit point
 * (kept when one ahead is there), so the next start has no automatic safe mode. */
void sync_safe_stop(sync_unit *u, MYSQL *tc, const dm_position *done);

/* ---- the instance (sync_unit.c) ---- */
struct sync_unit {
  const dm_host_services *host;
  dm_ctx *ctx;
  sync_cfg cfg;
  char meta[SYNC_NAME_MAX];
  char cp_table[2 * SYNC_NAME_MAX + 32]; /* `meta`.`<task>_syncer_checkpoint` */
  char source_id[64];
  uint64_t fence;            /* the host's fencing token (dm_host_fencing_token); 0: no fencing */
  sync_charsets *charsets;   /* of the target, loaded once */
  MYSQL *expr_conn;          /* expression filters' session (sync_expr.c); the coordinator's */
  char tz_source_system[16]; /* the source's system zone as an offset ("+05:30"), at the start */
  sync_schema *schema;
  struct sync_tracker *tracker; /* table structures as of the binlog position (sync_tracker.h) */
  struct sync_shard *shard;     /* shard groups (sync_shard.h); NULL: shard-mode none */
  struct sync_online *online;   /* online DDL records (sync_online.c); one per run */
  /* collation_compatible: strict: the source's collations, read at the first CREATE of a run
   * that needs them (sync_ddl_apply.c), freed at its end; coordinator thread only */
  dm_collations *coll;
  bool source_full_metadata; /* binlog_row_metadata = FULL on the source at the start */
  struct sync_source *src;   /* while process reads (under lock): kill interrupts it */
  /* a DDL that the checkpoint says was being applied when the unit stopped ("file:pos") */
  char replay_ddl_at[DM_POSITION_NAME_MAX + 24];
  /* DM's safe-mode exit point (a dump with consistency none): batches that start before it are
   * applied in safe mode. From the dump's hand-over at the first start, then from the checkpoint's
   * global row; name "" when none. Coordinator thread only. */
  dm_position safe_exit;
  /* Metrics (sync_metrics.c, docs/metrics.md); NULL from a host without them. */
  dm_metric *m_lag, *m_pos, *m_file, *m_txns, *m_rows, *m_lag_hist, *m_txn_time;
  dm_metric *m_cp_interval, *m_unsynced, *m_resolving;
  /* dm_clock_ns of the global row's last move in this run, 0 before the first (coordinator
   * thread only: every move of the global row is made there) */
  int64_t cp_moved_ns;
  sync_val *val; /* the continuous validator (sync_val.h); its own lock */

  /* Shared with status and kill: atomics, or `lock` held for a copy. */
  pthread_mutex_t lock;
  dm_position synced; /* the last committed batch end */
  dm_position master; /* the source's SHOW MASTER STATUS */
  bool has_synced, has_master;
  int safe_auto;              /* the automatic safe mode (sync_safe.c): SYNC_SAFE_* */
  dm_position safe_auto_exit; /* SYNC_SAFE_EXIT: until there */
  int64_t safe_auto_until_ms; /* SYNC_SAFE_TIMED: until then (wall clock, ms since the epoch) */
  dm_conn_kill *conns;        /* sockets of open connections, for kill */
  atomic_uint_least64_t total_rows;
  atomic_uint_least64_t total_txns;
  atomic_int_least64_t run_start_ns;
  atomic_uint_least64_t run_start_rows;
  atomic_uint_least32_t last_event_ts; /* timestamp of the last applied event */
  /* the in-flight batch's first_ts while one is applied, else 0: how far behind the source the
   * sync's apply is (the validator waits for a sync with a backlog, sync_val.c val_defer) */
  atomic_uint_least32_t apply_ts;
  atomic_bool idle;                      /* nothing left to read at the last look */
  atomic_uint_least32_t table_maps;      /* live table maps (sync_maps.h), status `tableMaps` */
  atomic_uint_least32_t table_maps_peak; /* the most at once since process started */
  atomic_bool killed;
  /* recentRps: rows at the last two status samples */
  atomic_uint_least64_t recent_rows;
  atomic_int_least64_t recent_ns;
  double recent_rps;
};

/* Fills *err with DM_ERR_NO_MEMORY; returns -1. */
int sync_nomem(sync_unit *u, dm_error *err);

/* ---- DM's expression filters (sync_expr.c) ----
 * sync_expr_table: the table's rules from the host (t->expr, NULL: none), when the table is
 * created. sync_expr_has: rules of kind k (0 insert, 1 update, 2 delete)? sync_expr_skip: 1 when
 * the row change (WRITE: after; DELETE: before; UPDATE: both) is not to be replayed, 0 when it
 * is, -1 with *err. Runs on the coordinator's thread, on u->expr_conn (sync_expr_close closes
 * it at the end of the run). */
int sync_expr_table(sync_unit *u, sync_table *t, dm_error *err);
void sync_expr_free(sync_expr *x);
bool sync_expr_has(const sync_table *t, int k);
int sync_expr_skip(sync_unit *u, sync_table *t, int k, const dm_binlog_table_map *tm,
                   const dm_binlog_value *before, const dm_binlog_value *after, dm_error *err);
uint64_t sync_expr_filtered(const sync_table *t, int k);
void sync_expr_close(sync_unit *u);

/* ---- the task's binlog event filters (sync_filter.c) ----
 * A row change of kind k (0 insert, 1 update, 2 delete) on t, in the event ev: 0 apply, 1 skip,
 * -1 with *err DM_ERR_SYNC_FILTER_ERROR (an Error rule matched: the event must not run and the
 * checkpoint stays before it). The verdict is kept in t->ignored[k]. */
int sync_filter_rows(sync_unit *u, sync_table *t, int k, const dm_binlog_event *ev, dm_error *err);
/* A DDL statement s about schema.table (table NULL for a schema statement) at "FILE:POS" `at`:
 * 0 apply, 1 skip, -1 stop with *err (DM_ERR_SYNC_FILTER_ERROR: an Error rule matched, or an
 * ALTER TABLE whose clauses the rules split: some skipped, some not). An ALTER TABLE is judged
 * by each clause's event (sync_ddl_alter_events), other kinds by sync_ddl_event_name. */
int sync_filter_ddl(sync_unit *u, const char *at, const sync_ddl_stmt *s, const char *schema,
                    const char *table, dm_error *err);
/* The routed table of a source table (NULL table: a schema). */
void sync_route(sync_unit *u, const char *db, const char *table, char *tdb, char *ttable);

/* ---- metrics (sync_metrics.c, docs/metrics.md) ---- */
/* Register the unit's families (DM's dm_syncer_* names); a refusal is logged, never fatal. */
void sync_metrics_init(sync_unit *u);
/* dm_syncer_binlog_file / dm_syncer_binlog_pos of `node` ("syncer": applied; "master": the
 * source's end). */
void sync_metrics_position(sync_unit *u, const char *node, const dm_position *p);
/* sync_metrics.c: at most every status-interval (*last_ns: the last time), the source's binlog end
 * (SHOW MASTER STATUS, gtid_binlog_pos) read on sc into u->master (status) and its metric. */
void sync_master_poll(sync_unit *u, MYSQL *sc, int64_t *last_ns);
/* A batch or group was committed: its transactions and rows, and the replication lag from the
 * binlog timestamp of its last event (0: unknown, left as it was). */
void sync_metrics_applied(sync_unit *u, uint64_t txns, uint64_t rows, uint32_t last_ts);
/* Nothing left to read or apply: the lag is 0. */
void sync_metrics_caught_up(sync_unit *u);
/* A worker's transaction on the target (its part of a batch, START TRANSACTION to COMMIT)
 * succeeded after `seconds`: dm_syncer_txn_duration_time (any worker thread). */
void sync_metrics_txn(sync_unit *u, double seconds);
/* The global checkpoint row moved (its transaction committed; the coordinator thread): the time
 * since its previous move in this run into dm_syncer_flush_checkpoints_time_interval. One clock
 * read. sync_metrics_run_start forgets the previous move, so a pause is no interval. */
void sync_metrics_checkpoint(sync_unit *u);
void sync_metrics_run_start(sync_unit *u);
/* Pessimistic shard DDL, where DM sets them: `remain` tables of the source's group of target
 * `tdb`.`tname` not at the DDL yet, each time a member is held at it
 * (dm_syncer_unsynced_table_number{table}); waiting for the lock's operation after the source's
 * info was put, or not any more (dm_syncer_shard_lock_resolving). */
void sync_metrics_unsynced(sync_unit *u, const char *tdb, const char *tname, int remain);
void sync_metrics_resolving(sync_unit *u, bool waiting);

/* ---- time zones of replayed DDL (sync_tz.c) ---- */
/* Is `tz` a zone name or offset SET can take as it is (no quoting needed)? */
bool sync_tz_valid(const char *tz);
/* At the start of a run: checks the task's `timezone` on the target (tc) and reads the source's
 * system zone (sc) into u->tz_source_system. 0, or -1 with *err. */
int sync_tz_start(sync_unit *u, MYSQL *sc, MYSQL *tc, dm_error *err);
/* The zone the DDL of query event q runs at on the target (in buf, or a string of u), or NULL for
 * the unit's own '+00:00'. buf: at least SYNC_TZ_MAX + 1 bytes. */
const char *sync_tz_of_event(const sync_unit *u, const dm_binlog_query *q, char *buf, size_t n);

#endif /* DMHOST_SYNC_H */
