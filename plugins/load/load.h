/*
 * The load unit (dmhost-load): reads a dump folder (docs/dump-format.md) into the target.
 *
 * Shared declarations of its files: load_unit.c (slots, settings, the run), load_dir.c (the dump
 * folder), load_db.c (connections, errors, privileges), load_checkpoint.c (the checkpoint table),
 * load_schema.c (databases and tables) and load_worker.c (the data files, in parallel).
 */
#ifndef DMHOST_LOAD_H
#define DMHOST_LOAD_H

#include <limits.h>
#include <mysql.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <dmhost/dmhost.h>

#define LOAD_NAME_MAX 256 /* schema and table names, decoded (MariaDB allows 64 characters) */
#define LOAD_MAX_CONNS 64 /* pool-size limit, plus the control connection */

typedef enum load_on_dup {
  LOAD_DUP_REPLACE = 0, /* REPLACE INTO (DM's default) */
  LOAD_DUP_IGNORE = 1,  /* INSERT IGNORE INTO */
  LOAD_DUP_ERROR = 2,   /* INSERT INTO: a duplicate key stops the load */
} load_on_dup;

/* A table of the dump: from its `<db>.<table>-schema.sql` file. */
typedef struct load_table {
  char db[LOAD_NAME_MAX]; /* the source's names */
  char table[LOAD_NAME_MAX];
  char tdb[LOAD_NAME_MAX]; /* routed: where it goes on the target */
  char ttable[LOAD_NAME_MAX];
  char *schema_file; /* base name of the schema file */
  size_t stem;       /* bytes of its `<db>.<table>` part (what its data files start with) */
  bool allowed;      /* by the task's block-allow-list */
  int group;         /* the first allowed table routed to the same target table (maybe itself) */
  /* The dump's columns "(`a`,`b`)" as its CREATE TABLE makes them (generated ones left out), set
   * by load_schema_apply: every INSERT names them, so a target table with more columns, or in
   * another order, takes the rows by name. */
  char *cols;
  /* The route's extract columns (docs/shard.md, "Merged keys"): ",`c_table`,..." added to every
   * INSERT's column list, and ",_utf8mb4'v',..." to each of its rows; NULL when none. */
  char *ext_cols;
  char *ext_vals;
  int ext_n; /* how many */
  /* On a group's first table: the secondary keys still to add once the group's data is loaded,
   * one `KEY ...` definition a line (load_keys.c); NULL when none are pending. */
  char *keys;
  atomic_int files_left; /* on a group's first table: its files the workers have not finished */
} load_table;

/* A data file `<db>.<table>.<NNNNNN>.sql` and where the load stands in it. */
typedef struct load_file {
  char *name;      /* base name, the checkpoint's `filename` */
  int table;       /* index into load_dump.tables, -1 if the dump has no schema file for it */
  size_t stem;     /* bytes of its `<db>.<table>` part */
  uint64_t size;   /* bytes on disk (the checkpoint's end_pos) */
  uint64_t offset; /* bytes loaded and committed (the checkpoint's offset) */
  bool present;    /* found in the folder */
  bool registered; /* has a checkpoint row */
} load_file;

/* A dump folder as read from disk. */
typedef struct load_dump {
  char dir[PATH_MAX];
  int dirfd;       /* the folder, open: every file is opened beneath it (load_dir_open) */
  dm_position pos; /* from `metadata` */
  bool has_pos;    /* false: the dump was made without a position (mode full, no sync follows) */
  dm_position safe_exit; /* the section DM_DUMP_METADATA_AFTER (consistency none) */
  bool has_safe_exit;
  char dump_id[17]; /* dm_dump_fnv1a64 of `metadata`, in hex: the checkpoint's `dump_id` */
  char (*dbs)[LOAD_NAME_MAX]; /* from `<db>-schema-create.sql` files */
  char **db_files;
  int n_dbs;
  load_table *tables;
  int n_tables;
  load_file *files;
  int n_files;
} load_dump;

/* The settings (init, update). */
typedef struct load_cfg {
  char dir[PATH_MAX];
  int pool_size;
  load_on_dup on_dup;
  uint64_t batch_bytes;
  bool cleanup_dump;
  bool defer_keys; /* defer-secondary-keys */
} load_cfg;

/* One instance of the unit. */
typedef struct load_unit {
  const dm_host_services *host;
  dm_ctx *ctx;
  load_cfg cfg;

  /* names on the target */
  char meta[LOAD_NAME_MAX];
  char cp_table[2 * LOAD_NAME_MAX + 8];   /* `meta`.`<task>_loader_checkpoint`, quoted */
  char keys_table[2 * LOAD_NAME_MAX + 8]; /* `meta`.`<task>_loader_keys`, quoted */
  char scratch[LOAD_NAME_MAX + 16];       /* <meta>_scratch */
  char scratch_prefix[32];                /* scratch table names of this task and source */
  uint64_t fence; /* the host's fencing token (dm_host_fencing_token); 0: no fencing */
  unsigned scratch_seq;
  /* The source's collations while load_schema_apply runs under collation_compatible: strict
   * (read once per run, load_db_source_collations); NULL otherwise. */
  dm_collations *coll;

  /* Shared with status and kill (other threads): atomics, or `lock` held only for a copy. */
  pthread_mutex_t lock;
  dm_position pos;
  bool has_pos;
  dm_position safe_exit; /* handed on to the sync (DM_STATUS_META_SAFE_EXIT) */
  bool has_safe_exit;
  dm_conn_kill *conns; /* sockets of open connections, for kill */
  atomic_uint_least64_t finished_bytes;
  atomic_uint_least64_t total_bytes;
  atomic_uint_least64_t run_start_bytes;
  atomic_int_least64_t run_start_ns; /* 0: not running */
  atomic_bool killed;
  atomic_bool finished;
  /* metrics (docs/metrics.md); NULL from a host without them */
  dm_metric *m_progress, *m_bytes, *m_rows;
} load_unit;

/* ---- load_unit.c: metrics ---- */
/* Registers the load's metrics (DM's dm_loader_progress) in init; a refusal is logged only. */
void load_metrics_init(load_unit *u);
/* A worker committed `bytes` of a data file holding `rows` rows: the counters, the progress. */
void load_metrics_committed(load_unit *u, uint64_t bytes, uint64_t rows);

/* ---- load_dir.c ---- */
/* Reads the folder: metadata (required), schema and data files (*.tmp ignored). */
int load_dir_scan(load_unit *u, const char *dir, load_dump *d, dm_error *err);
void load_dir_free(load_dump *d);
/* Reads a small file whole (a schema file). Caller frees *out. */
int load_dir_read_file(load_unit *u, const load_dump *d, const char *name, char **out, size_t *len,
                       dm_error *err);
/* Opens a file of the folder for reading: refused (DM_ERR_LOAD_UNSAFE_FILE) when it is a symlink
 * or not a regular file. The fd, or -1 (*err). */
int load_dir_open(load_unit *u, const load_dump *d, const char *name, dm_error *err);

/* ---- load_db.c ---- */
/* Connects to the target with the load session settings and registers the socket for kill. */
MYSQL *load_db_connect(load_unit *u, dm_error *err);
/* Unregisters the socket (kill never shuts down a closed one), then closes. */
void load_db_close(load_unit *u, MYSQL *c);
/* collation_compatible: strict: the source's collations, read once on a connection of its own
 * (dmhost/ddl_collation.h). 0, or -1 with *err. */
int load_db_source_collations(load_unit *u, dm_collations **out, dm_error *err);
/* Runs a statement that returns no rows; on failure fills *err (DM_ERR_DB_QUERY, the server's
 * error as raw cause, resumable when the connection was lost) with the message `what`. */
int load_db_exec(load_unit *u, MYSQL *c, const char *sql, size_t len, const char *what,
                 dm_error *err);
/* Fills *err for the connection's current error. */
void load_db_error(load_unit *u, MYSQL *c, const char *what, dm_error *err);
/* Was this server/client error a lost connection (retrying can help)? */
/* The longest statement the target takes (its max_allowed_packet less the command byte). */
int load_db_max_packet(load_unit *u, MYSQL *c, uint64_t *max_stmt, dm_error *err);
/* `s` as a SQL string literal ('...' escaped) appended at *p, bounded by end. */
int load_db_literal(MYSQL *c, const char *s, char *out, size_t out_len);
/* Does the user have what the load needs on these schemas? Fills *err naming what is missing. */
int load_db_check_privileges(load_unit *u, MYSQL *c, const char *const *schemas, int n,
                             dm_error *err);

/* ---- load_check.c ---- */
/* Is s[0..len) one INSERT of the dump's form (docs/dump-format.md, "Data lines") into `table`?
 * 0 and *head = the length of its `INSERT INTO `t``; -1 with *at = the offset in the line where
 * it stops fitting and *why = what was expected there (a constant, never the line's text). */
int load_check_insert(const char *s, size_t len, const char *table, size_t *head, size_t *at,
                      const char **why);
/* The rows of a line load_check_insert accepted, s[values..len) being its " VALUES (..),(..);",
 * with `tail` (n bytes) added before each row's closing ')': written to out (NULL: only counted);
 * returns the bytes it takes. */
size_t load_check_extend(const char *s, size_t len, size_t values, const char *tail, size_t n,
                         char *out);
/* Is sql (NUL-terminated, trailing `;` trimmed) one statement `<kw>`<name>`...` (kw "CREATE TABLE "
 * or "CREATE DATABASE IF NOT EXISTS "), with no second statement and no SELECT? The text after
 * the name, with the name unquoted into name; NULL with *at / *why as load_check_insert. */
const char *load_check_create(const char *sql, const char *kw, char *name, size_t name_len,
                              size_t *at, const char **why);

/* ---- load_checkpoint.c ---- */
int load_cp_prepare(load_unit *u, MYSQL *c, dm_error *err);
/* Reads this source's rows into the dump's files (offset, registered); rows naming files not in
 * the dump are added with present = false. Sets *n_rows. */
int load_cp_read(load_unit *u, MYSQL *c, load_dump *d, int *n_rows, dm_error *err);
/* Registers every file at offset 0, in one transaction. */
int load_cp_register(load_unit *u, MYSQL *c, load_dump *d, dm_error *err);
/* The UPDATE that moves a file's offset (run in the batch's transaction). */
int load_cp_update_sql(load_unit *u, MYSQL *c, const char *file, uint64_t offset, char *out,
                       size_t out_len);
/* Has this task and source checkpoint rows? (A missing meta schema or table: no.) */
/* A fenced checkpoint update of `file` failed with DM_DB_FENCE_ERRNO and was rolled back: *err
 * becomes DM_ERR_FENCED naming the newer token, or DM_ERR_CHECKPOINT when the row is gone. -1. */
int load_cp_fence_failed(load_unit *u, MYSQL *c, const char *file, dm_error *err);
/* After a worker's batch failed and was rolled back: when a newer token owns the rows, *err
 * becomes DM_ERR_FENCED (the cause), else it stays. */
void load_cp_fenced_instead(load_unit *u, MYSQL *c, dm_error *err);
int load_cp_exists(load_unit *u, MYSQL *c, bool *exists, dm_error *err);
/* Before load_cp_read: when this source's rows were registered for another dump than d (the
 * subtask moved from another worker and dumped again, or the folder was made again), empties the
 * target tables that load had written to and removes the rows, so d loads from the start; refused
 * (DM_ERR_LOAD_OTHER_DUMP) when another source loads into one of those tables. Raises the rows to
 * the fencing token first. 0 (nothing to do, or done), -1. */
int load_cp_other_dump(load_unit *u, MYSQL *c, const load_dump *d, dm_error *err);

/* ---- load_schema.c ---- */
/* Creates the routed databases and tables; keeps existing tables of the same definition. */
int load_schema_apply(load_unit *u, MYSQL *c, load_dump *d, dm_error *err);

/* ---- load_keys.c ---- */
/* Splits a CREATE TABLE (the text after the table's name, as SHOW CREATE TABLE writes it) into the
 * definition without its plain secondary keys (*stripped) and those keys, one `KEY ...` a line
 * (*keys). Both NULL when there is nothing to defer (no such key, a foreign key, a layout this
 * parser does not know). 0, or -1 when out of memory. */
int load_keys_split(const char *rest, char **stripped, char **keys);
/* Creates the table of deferred keys in the meta schema. */
int load_keys_prepare(load_unit *u, MYSQL *c, dm_error *err);
/* Reads this source's pending keys onto the groups' first tables. */
int load_keys_read(load_unit *u, MYSQL *c, load_dump *d, dm_error *err);
/* Records the keys of a target table as pending (before the table is created without them). */
int load_keys_record(load_unit *u, MYSQL *c, const load_table *t, const char *keys, dm_error *err);
/* Adds the pending keys of group table t (those the table lacks, in one ALTER TABLE) and marks
 * them done. A stop (stop token, or *abort) interrupts the ALTER: 1. 0 done, -1 error (*err). */
int load_keys_apply(load_unit *u, MYSQL *c, load_table *t, atomic_bool *abort, dm_error *err);

/* ---- load_worker.c ---- */
/* Loads the files with pool-size workers. Returns the outcome; errors in result. */
dm_outcome load_workers_run(load_unit *u, load_dump *d, dm_result *result);

/* ---- load_unit.c ---- */

#endif /* DMHOST_LOAD_H */
