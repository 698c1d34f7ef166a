/*
 * The dump unit's shared types. One dump_unit per instance; everything a process call builds
 * (connections, tables, the chunk queue) lives in it until that call returns, so a paused or
 * stopped unit holds nothing but its settings.
 *
 *   dump_unit.c      the slots, the orchestration of one process call, status
 *   dump_conn.c      connections: session settings, queries, errors, sockets for kill
 *   dump_snapshot.c  privileges, FTWRL + one snapshot per worker, the binlog position
 *   dump_schema.c    which tables, their columns and chunk key, the schema files
 *   dump_chunks.c    splitting a table into chunk jobs, the job queue
 *   dump_worker.c    worker threads: stream a chunk with mysql_use_result into the writer
 *   dump_write.c     INSERT statements and data files (temp name, rename when complete)
 *   dump_flush.c     the background flush of the files being written
 *   dump_metadata.c  the metadata file, file names, cleaning an incomplete dump
 */
#ifndef DMHOST_DUMP_INTERNAL_H
#define DMHOST_DUMP_INTERNAL_H

#include <limits.h>
#include <mysql.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <dmhost/dmhost.h>

#define DUMP_UNIT_NAME "dmhost-dump"
#define DUMP_METADATA "metadata"
#define DUMP_MAX_THREADS 64

/* How one column's values are written (docs/dump-format.md). */
typedef enum dump_form {
  DUMP_FORM_AUTO = 0,   /* chosen from the MYSQL_FIELD type of the result */
  DUMP_FORM_NUMBER = 1, /* as the server prints it */
  DUMP_FORM_QUOTED = 2, /* '...': dates and times */
  DUMP_FORM_HEX = 3,    /* 0x... of the raw bytes, '' when empty: BIT */
  DUMP_FORM_TEXT = 4,   /* _latin1'...': INET4, INET6, UUID as text */
  DUMP_FORM_STRING = 5, /* '...' of the raw bytes, escaped: strings, BLOBs, JSON, GEOMETRY */
} dump_form;

/* The `consistency` setting (docs/dump.md): how the workers get one snapshot and its position. */
typedef enum dump_consistency {
  DUMP_CONS_FLUSH,    /* FLUSH TABLES WITH READ LOCK while every worker starts its snapshot */
  DUMP_CONS_SNAPSHOT, /* one connection, START TRANSACTION WITH CONSISTENT SNAPSHOT, no lock */
  DUMP_CONS_NONE,     /* no lock: each worker's own snapshot; a sync replays the window between
                         them in safe mode (u->safe_exit) */
  DUMP_CONS_AUTO,     /* flush when the user has RELOAD, else snapshot */
  DUMP_CONS_LOCK,     /* LOCK TABLES ... READ of the dumped tables while the workers start */
  DUMP_CONS_COUNT
} dump_consistency;

typedef struct dump_table {
  char *db, *name;
  char *qname;       /* `db`.`name`, for queries */
  char *file_base;   /* <db>.<name> escaped for file names */
  char *select_list; /* what the chunk SELECT reads, generated columns left out */
  char *insert_head; /* "INSERT INTO `name` (`a`,`b`) VALUES " */
  size_t insert_head_len;
  uint8_t *forms; /* dump_form per selected column */
  int n_cols;
  char *key;                 /* quoted chunk key column, or NULL: the table is one chunk */
  bool key_unsigned;         /* the key column is UNSIGNED */
  int64_t est_rows;          /* information_schema TABLE_ROWS */
  int chunks;                /* chunk jobs queued for it (set by the planner) */
  atomic_int_least64_t rows; /* rows written */
  atomic_int files;          /* data files started: the next file number */
  atomic_int pending;        /* chunks not done, +1 while the planner still adds chunks */
} dump_table;

typedef struct dump_chunk {
  struct dump_chunk *next;
  dump_table *table;
  char *where; /* " WHERE ..." or "" */
} dump_chunk;

typedef struct dump_queue {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  dump_chunk *head, *tail;
  bool closed; /* the planner has queued everything */
} dump_queue;

/* One connection to the source. sock (-1: none) is registered in dump_unit.conns for kill. */
typedef struct dump_conn {
  MYSQL *m;
  int sock;
} dump_conn;

/* dump_flush.c's state, one per process call. */
typedef struct dump_flusher {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  bool stop;                 /* under lock */
  int fds[DUMP_MAX_THREADS]; /* under lock: each worker's open data file, -1: none */
  pthread_t thread;
  bool running; /* the thread was started (the process call's thread only) */
} dump_flusher;

typedef struct dump_unit {
  const dm_host_services *host;
  dm_ctx *ctx;

  /* settings */
  int threads_cfg;              /* `threads` */
  dump_consistency consistency; /* `consistency` */
  char *where;                  /* DM's `where` (checked: db.h), NULL: none; read by process */
  int threads;                  /* of one process call: 1 when the snapshot is one connection's */
  int64_t chunk_rows;
  int64_t stmt_rows;      /* `rows`: rows per INSERT */
  int64_t stmt_size;      /* `statement-size` */
  int64_t chunk_filesize; /* `chunk-filesize` */
  int64_t lock_wait_ms;   /* `lock-wait`: how long FTWRL or LOCK TABLES may wait */
  mode_t file_mode;       /* of the files written (the task's file-mode) */
  bool sync_follows;      /* a sync continues from the position: it is required */
  char work_dir[PATH_MAX];

  /* one process call */
  dump_conn main;                      /* FTWRL, SHOW MASTER STATUS; closed after UNLOCK TABLES */
  dump_conn workers[DUMP_MAX_THREADS]; /* one snapshot each; worker 0 also plans */
  dm_conn_kill *conns;                 /* sockets of open connections, for kill */
  dump_table **tables;
  size_t n_tables, cap_tables;
  bool listed; /* the tables were listed before the snapshot (consistency = lock) */
  dump_queue queue;
  atomic_bool killed;
  atomic_bool abort; /* an error or the stop token: every worker winds down */
  pthread_mutex_t err_lock;
  bool has_err;
  dm_error err;
  time_t started;
  /* Why the run has no binlog position ("" when it has one, or none was looked for yet): the
   * metadata's Warning line. Only when no sync follows. */
  char no_pos[1024];

  /* status: read by the status slot from any thread */
  pthread_mutex_t pos_lock; /* status only ever trylocks it */
  bool have_pos;
  dm_position pos;
  /* consistency none: the snapshots lie between pos and this; a sync runs in safe mode until it
   * passes it (the metadata's second section, DM_DUMP_METADATA_AFTER) */
  bool have_safe_exit;
  dm_position safe_exit;
  atomic_int total_tables, completed_tables;
  atomic_int_least64_t total_rows, finished_rows, finished_bytes;
  atomic_int_least64_t start_ms, end_ms;
  dump_flusher flush;
  /* metrics (docs/metrics.md); NULL from a host without them */
  dm_metric *m_rows, *m_bytes, *m_progress, *m_estimate;
} dump_unit;

/* ---- dump_unit.c ---- */
/* The setting's values, by dump_consistency. */
extern const char *const dump_consistency_names[DUMP_CONS_COUNT];
/* Registers the dump's metrics (dumpling's names) in init; a refusal is logged, never fatal. */
void dump_metrics_init(dump_unit *u);
/* The tables' estimated rows (TABLE_ROWS) summed once the schema is read: dumpling's estimate
 * counter, added to as dumpling adds each table's. */
void dump_metrics_estimated(dump_unit *u, int64_t rows);
/* A block of `rows` rows, `bytes` bytes reached its file: the counters and the progress. */
void dump_metrics_written(dump_unit *u, int64_t rows, size_t bytes);
/* Records the first error of the run (later ones are logged only) and makes every worker stop. */
void dump_fail(dump_unit *u, const dm_error *e);
/* Has the run to wind down (error, stop token, kill)? Cheap. */
bool dump_should_stop(dump_unit *u);
void dump_table_chunk_done(dump_unit *u, dump_table *t);

/* ---- dump_conn.c ---- */
/* Connects to the source with the dump's session settings; the socket is registered for kill. */
int dump_conn_open(dump_unit *u, dump_conn *c, dm_error *err);
void dump_conn_close(dump_unit *u, dump_conn *c);
/* Gives up a connection in the middle of a use_result: frees res without reading the rest and
 * closes the connection with a reset, so the server stops sending at once. */
void dump_conn_abort(dump_unit *u, dump_conn *c, MYSQL_RES *res);
/* Runs a statement and discards any result. */
int dump_conn_exec(dump_unit *u, dump_conn *c, const char *sql, dm_error *err);
/* Runs a query and stores its (small) result; *res may hold no rows. */
int dump_conn_query(dump_unit *u, dump_conn *c, const char *sql, MYSQL_RES **res, dm_error *err);
/* Fills err for a failed statement on c: DM_ERR_DUMP_TABLE_CHANGED or DM_ERR_DB_QUERY. */
void dump_conn_error(dump_unit *u, dump_conn *c, const char *what, dm_error *err);
/* 'value' escaped for a string literal; malloc'd. */
char *dump_quote_string(dump_conn *c, const char *value);
char *dump_strfmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- dump_snapshot.c ---- */
/* Checks the privileges, then gives every worker connection one snapshot and reads its binlog
 * position into u->pos (when no sync follows and it cannot be read: none, u->no_pos says why). */
int dump_snapshot_take(dump_unit *u, dm_error *err);

/* ---- dump_schema.c ---- */
/* Lists the allowed schemas and base tables and writes <db>-schema-create.sql files. */
int dump_schema_list(dump_unit *u, dump_conn *c, dm_error *err);
/* Reads a table's columns and chunk key and writes its <db>.<table>-schema.sql. */
int dump_schema_table(dump_unit *u, dump_conn *c, dump_table *t, dm_error *err);
void dump_table_free(dump_table *t);
/* Frees the table list (u->tables). */
void dump_tables_free(dump_unit *u);

/* ---- dump_chunks.c ---- */
void dump_queue_init(dump_queue *q);
void dump_queue_destroy(dump_queue *q);
void dump_queue_push(dump_queue *q, dump_chunk *c);
/* Blocks until a chunk is there (returned), or the queue is closed and empty or the run aborts
 * (NULL). */
dump_chunk *dump_queue_pop(dump_unit *u);
void dump_queue_close(dump_queue *q);
/* Wakes every waiting worker (abort). */
void dump_queue_wake(dump_queue *q);
void dump_chunk_free(dump_chunk *c);
/* Splits a table into chunk jobs by its key (in the snapshot of c) and queues them. */
int dump_chunks_plan(dump_unit *u, dump_conn *c, dump_table *t, dm_error *err);

/* ---- dump_write.c ---- */
/* One worker's output. buf holds complete statements not yet written, then the statement being
 * built (from stmt_start); it is written out in blocks of about DUMP_WRITE_BLOCK bytes. */
typedef struct dump_writer {
  dump_unit *u;
  int slot; /* the worker's index: its dump_flush_track slot */
  dump_table *t;
  int fd; /* -1: no file open */
  char path[PATH_MAX], tmp[PATH_MAX];
  uint64_t file_bytes; /* bytes of complete statements of the file, written or in buf */
  uint64_t file_off;   /* bytes written to the file */
  char *buf;
  size_t len, cap;
  size_t stmt_start;  /* where the statement being built starts in buf */
  int64_t stmt_rows;  /* rows of the statement being built */
  int64_t block_rows; /* rows of the complete statements in buf */
} dump_writer;

void dump_writer_init(dump_writer *w, dump_unit *u, int slot);
void dump_writer_free(dump_writer *w);
void dump_writer_begin(dump_writer *w, dump_table *t);
/* Adds one row; ends a statement when it is full and starts the next file when the current one
 * reached chunk-filesize. */
int dump_writer_row(dump_writer *w, MYSQL_ROW row, const unsigned long *lengths,
                    const uint8_t *forms, dm_error *err);
/* Writes the last statement and completes the file (rename; no sync: dump_dir_sync_files). */
int dump_writer_end(dump_writer *w, dm_error *err);
/* Drops the file being written (stop, error). */
void dump_writer_abort(dump_writer *w);
/* Literal form for a result column, from its MYSQL_FIELD. */
dump_form dump_form_of_field(const MYSQL_FIELD *f);

/* ---- dump_flush.c ---- */
/* Starts the background flush; stopped (and joined) after the workers, before the final sync. */
void dump_flush_start(dump_unit *u);
/* The data file worker `slot` has open (fd), or -1 before it closes it. */
void dump_flush_track(dump_unit *u, int slot, int fd);
void dump_flush_stop(dump_unit *u);

/* ---- dump_worker.c ---- */
/* Takes chunk jobs until none is left; worker `index` uses u->workers[index]. */
void dump_worker_run(dump_unit *u, int index);
int dump_workers_start(dump_unit *u, pthread_t *tids, int from, int to, dm_error *err);

/* ---- dump_metadata.c ---- */
/* The escaped file name part of a db or table name (docs/dump-format.md). malloc'd. */
char *dump_file_name_part(const char *name);
/* Fills *err for a failed file operation: DM_ERR_DUMP_IO_PERMANENT (not resumable) when the errno
 * is permanent (dm_errno_permanent), else DM_ERR_IO. Returns -1. */
int dump_io_error(dump_unit *u, const char *what, const char *path, int e, dm_error *err);
int dump_path(dump_unit *u, char *out, const char *file, dm_error *err);
/* Writes a whole small file atomically: temp name, rename; flags as dm_fs_write_atomic's
 * (DM_FS_SYNC for the metadata, 0 for a file dump_dir_sync_files makes durable). */
int dump_file_write_atomic(dump_unit *u, const char *file, const char *data, size_t len,
                           unsigned flags, dm_error *err);
int dump_metadata_write(dump_unit *u, dm_error *err);
/* Reads the position, table count and rows of a complete dump's metadata; false when there is
 * none. *has_pos is false for a dump made without a position (its Warning line in *no_pos);
 * *has_safe_exit says whether it has the section of consistency none's second position. */
bool dump_metadata_read(dump_unit *u, dm_position *pos, bool *has_pos, dm_position *safe_exit,
                        bool *has_safe_exit, char *no_pos, size_t no_pos_len, int *tables,
                        int64_t *rows);
/* Removes what an earlier, incomplete run left (data, schema, temp files). */
int dump_dir_clean(dump_unit *u, dm_error *err);
int dump_dir_sync(dump_unit *u, dm_error *err);
/* fdatasync of every *.sql of the folder, then of the folder: what the metadata names is on disk
 * before it is written. */
int dump_dir_sync_files(dump_unit *u, dm_error *err);

#endif /* DMHOST_DUMP_INTERNAL_H */
