/*
 * The sync unit's continuous validator (DM's validator; docs/validation.md).
 *
 *   sync_val.c      settings, the hand-off from the coordinator, the checking thread
 *   sync_val_op.c   validation_op (dmctl validation), the status part
 *   sync_val_meta.c its tables on the target: checkpoint, pending rows, error rows
 *   sync_val_replay.c at the start, the rows a kill -9 took from it read again (fed, not applied)
 *
 * The coordinator feeds it every row change of a batch once the batch is committed on the
 * target (sync_val_feed); worker-count threads of its own (a row always to the one its key hashes
 * to) check the rows against the target in batches of
 * point probes (one statement each), keeps those that differ as pending and re-checks them; a row
 * still different after row-error-delay becomes an error row in the meta-schema. Everything it
 * shares with the coordinator and the command thread is under its own lock (one owner: v->lock).
 */
#ifndef DMHOST_SYNC_VAL_H
#define DMHOST_SYNC_VAL_H

#include <mysql.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <dmhost/buf.h>
#include <dmhost/dmhost.h>

typedef struct sync_unit sync_unit;
typedef struct sync_batch sync_batch;

enum { SYNC_VAL_NONE = 0, SYNC_VAL_FAST = 1, SYNC_VAL_FULL = 2 };

/* DM's ValidatorConfig (dm/config/task.go), the `validator` group of the `sync` section. */
typedef struct sync_val_cfg {
  int mode;               /* SYNC_VAL_*; DM's default "none" */
  int workers;            /* worker-count (4): the checking threads */
  int64_t validate_ms;    /* validate-interval (10s): a failed row is checked again after it */
  int64_t check_ms;       /* check-interval (5s): DM's retry of a failed connection */
  int64_t error_delay_ms; /* row-error-delay (30m): a row still failing then is an error */
  int64_t flush_ms;       /* meta-flush-interval (5m): the checkpoint row's flush */
  int batch;              /* batch-query-size (100): rows per probe statement */
  int64_t max_bytes;      /* max-pending-row-size ("500m"): the pending set's bytes */
  int64_t max_rows;       /* max-pending-row-count (2^31-1): the pending set's rows */
  char start_time[32];    /* start-time: "" or "YYYY-MM-DD HH:MM:SS" */
} sync_val_cfg;

typedef struct sync_val sync_val;

#define SYNC_VAL_WORKERS_MAX 64 /* worker-count at most */

/* One checking thread: worker w checks the pending rows whose (table, key) hashes to it, so the
 * changes of one row are always checked by one thread; worker 0 also flushes. */
typedef struct sync_val_thr {
  sync_val *v;
  int w;
  pthread_t th;
} sync_val_thr;

/* The settings (init and update). 0, or -1 with *err DM_ERR_CONFIG_INVALID. */
int sync_val_settings(sync_unit *u, sync_val_cfg *cfg, dm_error *err);
/* The validator of an instance; NULL: no memory. */
sync_val *sync_val_new(sync_unit *u, const sync_val_cfg *cfg);
void sync_val_free(sync_val *v);
/* update-task: new settings (mode keeps the wish a validation command gave). */
void sync_val_update(sync_val *v, const sync_val_cfg *cfg);
/* process started (tc: its target connection; the first start of the instance reads the
 * validator's checkpoint and pending rows over it) / ends (a pause: the thread flushes, then goes
 * on checking the pending rows, as DM's validator runs through a pause). The thread runs from the
 * first start of process on while the validator is wished to run, until the instance is freed. */
void sync_val_run_start(sync_val *v, MYSQL *tc);
void sync_val_run_stop(sync_val *v);
/* The batch builder (sync_batch.c), without the lock: does the validator run, so an in-order row
 * change of a keyed table needs the key of its row after the change (sync_rec.vkey_*)? */
bool sync_val_wants_keys(sync_val *v);
/* The coordinator, without the lock, between events: a `validation start --start-time` waits
 * for its replay (sync_val_replay at a transaction boundary, the main stream closed). */
bool sync_val_catch_up_wanted(sync_val *v);
/* The coordinator, after the workers committed batch b (ending at b->end): its row changes. */
void sync_val_feed(sync_val *v, const sync_batch *b);
/* A DDL the sync applies (after the rows before it were fed): a TRUNCATE, DROP, ALTER or RENAME
 * of a table (DROP DATABASE: of its every table) drops the table's pending rows (skipped). */
void sync_val_ddl(sync_val *v, const struct sync_ddl_stmt *s);
/* The status part (query-status): validation* keys. */
void sync_val_status(sync_val *v, dm_status_sink *sink);
/* ABI 1.3 validation_op. */
int sync_validation_op(void *self, const dm_validation_req *req, dm_validation_answer *answer,
                       dm_error *err);

/* ---- shared between sync_val.c and sync_val_op.c ---- */
typedef struct sync_val_table {
  char sdb[256], sname[256], tdb[256], tname[256];
  dm_buf qname;   /* `tdb`.`tname` */
  dm_buf cols;    /* (`a`,`b`): the columns the row literal holds */
  dm_buf keycols; /* `a` or (`a`,`b`) */
  uint64_t sig;
  bool supported; /* a primary key or a not-null unique key (DM's UniqueNotNullIdx) */
} sync_val_table;

/* DM's words for a table it does not validate (tableWithoutPrimaryKeyMsg): no primary key and no
 * unique key whose columns are all NOT NULL */
#define SYNC_VAL_NO_KEY "no primary key"

typedef struct sync_val_row sync_val_row;
struct sync_val_row {
  sync_val_row *chain;       /* hash bucket */
  sync_val_row *prev, *next; /* fresh or retry list */
  uint64_t hash;
  uint32_t table;
  uint8_t kind; /* 0 insert, 1 update, 2 delete */
  bool failed, checking, superseded, retry;
  uint8_t fail_type; /* DM's validateFailedType: 0 deleted row exists, 1 not exist, 2 differ */
  int64_t first_fail_ns, due_ns;
  uint32_t key_len, row_len;
  char data[]; /* the key literal, NUL, the row literal, NUL */
};

struct sync_val {
  sync_unit *u;
  /* One flush at a time (taken before lock, never while holding it): a flush copies the position
   * under lock and writes it after; two at once (the thread's periodic one and sync_val_mark's
   * after a DDL) could commit the older position last. Serialized, the later copy is the newer. */
  pthread_mutex_t flush_lock;
  pthread_mutex_t lock; /* everything below */
  pthread_cond_t cond;
  sync_val_cfg cfg;
  bool wish;    /* the validator should run (START / the task's mode) */
  bool wish_op; /* a validation command set it in this instance (sync_val_load keeps it) */
  bool ran;     /* process started once in this instance (DM's waitSyncerRunning) */
  bool thread_on, stop, joining; /* joining: the threads are being joined (the lock let go) */
  /* worker-count threads (DM's validate workers); n_threads fixed while they run; live: the
   * workers 1.. not ended yet (worker 0's last flush waits for them) */
  sync_val_thr thr[SYNC_VAL_WORKERS_MAX];
  int n_threads, live;
  atomic_bool keys; /* thread_on, written under the lock, read without it (sync_val_wants_keys) */
  char err_table[160], cp_table[160], pend_table[160]; /* `meta`.`<task>_validator_*` */
  bool loaded;                                         /* sync_val_load ran (once per instance) */
  sync_val_table **tables;
  uint32_t n_tables, cap_tables;
  const void *last_t; /* the coordinator's cache: the sync_table fed last, and its sig */
  uint64_t last_sig;
  uint32_t last_idx;
  /* pending rows: by (table, key) in a chained hash; due order in two lists */
  sync_val_row **buckets;
  uint32_t n_buckets, n_rows;
  sync_val_row *fresh_head, *fresh_tail, *retry_head, *retry_tail;
  uint32_t n_fresh; /* the rows in the fresh list (val_take: how many wait for their first probe) */
  bool deferring;   /* val_take: fresh rows wait, the sync has a backlog (logged when it changes) */
  uint64_t bytes;
  uint64_t processed[3], pending[3], skipped, checked, errors_found;
  dm_position pos; /* the last batch end fed: validatorBinlog */
  bool has_pos;
  dm_position flushed; /* the position of its checkpoint row (sync_val_meta.c) */
  bool has_flushed;
  /* DM's cutover point (validation update): when the validator's position reaches it, its
   * checkpoint is flushed at once and the point cleared (DM's checkAndPersistCheckpointAndData) */
  dm_position cutover;
  bool has_cutover, flush_now;
  /* DM's start-time: the validator's position lies ahead of the sync's (the first transaction
   * that began at or after the time): the batches that end at or before `from` are not fed */
  dm_position from;
  bool has_from;
  /* `validation start --start-time` while the sync runs: the rows from the time's position on
   * are fed by a replay on the coordinator's thread at its next transaction boundary
   * (sync_val_catch_up_wanted); nothing is fed meanwhile. Written under the lock, read without. */
  atomic_bool catch_up;
  char last_error[512];
  /* DM's dm_validator_validator_* (published at the first start: mode none costs nothing), and
   * dmhost's dmhost_validator_{checked,pending,skipped}_rows: how far the checking is behind */
  dm_metric *m_errors, *m_pos, *m_file, *m_pos_lat, *m_file_lat;
  dm_metric *m_checked, *m_pending, *m_skipped;
};

/* sync_val.c, lock held: start the thread (process ran and the validator is wished to run);
 * stop and join it (the lock is let go while joining). */
void sync_val_spawn_locked(sync_val *v);
void sync_val_join_locked(sync_val *v);
/* sync_val_op.c, on the validator's (or the command's) target connection: its tables made;
 * its checkpoint row written; one error row (DM's error_type 0..2, dst: the target's row as JSON,
 * NULL: none). 0, or -1 with *err. */
int sync_val_prepare(sync_val *v, MYSQL *c, dm_error *err);
int sync_val_flush(sync_val *v, MYSQL *c, dm_error *err);
int sync_val_error_row(sync_val *v, MYSQL *c, const sync_val_table *t, const char *key,
                       const char *row, int type, const char *dst, dm_error *err);

/* sync_val_probe.c, DM's batched probe: one `SELECT ... WHERE (key) IN (...)` per table of rows
 * into q (lock held: 0, or -1: no memory); then q sent on c (lock let go): st[i] gets
 * SYNC_VAL_FOUND when rows[i]'s key is on the target, SYNC_VAL_SAME when (full mode) its whole row
 * equals too. 0; 1: the server refused it (*code its error); -1: the connection failed. */
#define SYNC_VAL_FOUND 1
#define SYNC_VAL_SAME 2
int sync_val_batch_sql(const sync_val *v, sync_val_row *const *rows, int n, dm_buf *q);
int sync_val_batch_query(MYSQL *c, const dm_buf *q, int n, uint8_t *st, unsigned *code);
/* sync_val_probe.c, lock held: the point probe of rows[i] appended to q, one `UNION ALL` arm
 * answering (i, found, NULL or the target's row as JSON when it differs) */
void sync_val_point_sql(const sync_val *v, const sync_val_row *r, int i, dm_buf *q);

/* sync_val.c, lock held: a pending row (replacing the one of the same table and key); kind 0
 * insert, 1 update, 2 delete; row "" for a delete. 0, or -1: no memory. */
int sync_val_add_locked(sync_val *v, uint32_t table, uint8_t kind, const char *key, uint32_t klen,
                        const char *row, uint32_t rlen);
/* sync_val.c, lock held: the table of those names and columns (cols "(`a`,`b`)", keycols "`a`" or
 * "(`a`,`b`)"), made if new. 0, or -1: no memory. */
int sync_val_table_add(sync_val *v, const char *sdb, const char *sname, const char *tdb,
                       const char *tname, const char *cols, const char *keycols, bool supported,
                       uint32_t *out);
/* sync_val_meta.c: DM's texts of error_type 0..2 and of the modes; the tables' quoted names into
 * v->cp_table, v->err_table, v->pend_table (0, or -1: too long). */
extern const char *const sync_val_types[3];
extern const char *const sync_val_modes[3];
int sync_val_names(sync_val *v);
/* sync_val_meta.c: at the first start of an instance, over the sync's target connection c: the
 * checkpoint row (position, counts, the wish and mode a validation command left) and the pending
 * rows flushed with it. 0, or -1 with *err. */
int sync_val_load(sync_val *v, MYSQL *c, dm_error *err);
/* sync_val_meta.c, on the coordinator's thread and target connection c: when the validator runs,
 * its position moves to pos (everything before it was fed) and its checkpoint is flushed at once
 * (after a DDL: so a replay never decodes rows across one; at a validator's first start). A flush
 * that fails twice is logged (a later replay then starts after the span's last DDL). */
void sync_val_mark(sync_val *v, MYSQL *c, const dm_position *pos);
/* sync_val_meta.c: where a replay would start (its checkpoint's position) while the validator
 * runs: the relay keeps its files from there (sync_run.c). false: nothing to keep. */
bool sync_val_keep_from(sync_val *v, dm_position *out);
/* sync_val_replay.c, at the start of process before the coordinator reads, or at a transaction
 * boundary with everything read applied and the main stream closed (to: where the sync stands,
 * to_rows: row changes of the transaction there already applied): the row changes between the
 * validator's checkpoint and `to` fed to it again, nothing applied. A validator without a
 * checkpoint starts at the sync's position, or with start-time at the first transaction that
 * began at or after it (fed from there when that is behind the sync; else the batches before it
 * are not fed). Failures are logged (the validator is an observer: the sync goes on). */
void sync_val_replay(sync_unit *u, MYSQL *tc, const dm_position *to, uint64_t to_rows);

#endif /* DMHOST_SYNC_VAL_H */
