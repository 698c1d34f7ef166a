/*
 * json-sink: a custom unit that turns the relay log of a source into JSON lines, one per row
 * change, in Debezium's envelope (README.md). The instance and what its files share.
 *
 *   json_sink.c      the descriptor, the slots, the event loop
 *   sink_out.c       output files and the checkpoint: exactly once across a kill -9
 *   sink_columns.c   column names from the source's information_schema, cached per table
 *   sink_row.c       one row change as one JSON line (json-c)
 */
#ifndef JSON_SINK_H
#define JSON_SINK_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <dmhost/binlog_rows.h>
#include <dmhost/binlog_trx.h>
#include <dmhost/dmhost.h>
#include <dmhost/relay_log.h>

#ifndef JSON_SINK_VERSION
#define JSON_SINK_VERSION 1
#endif

#define SINK_STR2(x) #x
#define SINK_STR(x) SINK_STR2(x)
#define SINK_VERSION_TEXT SINK_STR(JSON_SINK_VERSION) ".0.0"

#define SINK_WHO "json-sink"
#define SINK_CHECKPOINT "json-sink.checkpoint"
#define SINK_STREAM_FILE "changes.jsonl"
#define SINK_BUF_SIZE (256 * 1024)

/* One output file: `<db>.<table>.jsonl` (layout per-table) or changes.jsonl (stream). */
typedef struct sink_file {
  char name[DM_FS_NAME_MAX + 1];
  char db[256], table[256]; /* per-table: whose rows (for the lookup); "" for the stream file */
  int fd;                   /* -1 until opened */
  uint64_t written;         /* bytes handed to write(2) or the buffer */
  uint64_t boundary;        /* `written` at the end of the last whole transaction */
  uint64_t synced;          /* bytes known durable (fdatasync) */
  uint64_t checkpointed;    /* the length the checkpoint on disk holds */
  char *buf;                /* SINK_BUF_SIZE bytes not yet written */
  size_t buf_len;
} sink_file;

/* Column names of one table, as the source's information_schema gives them now. */
typedef struct sink_table_cols {
  char *db, *table;
  uint32_t n;
  dm_binlog_column_def *defs; /* n, names and ENUM/SET values owned below */
  char **owned;               /* every string the defs point to */
  uint32_t n_owned;
  bool warned; /* said once that the column count differs */
} sink_table_cols;

typedef struct sink {
  const dm_host_services *host;
  dm_ctx *ctx;

  /* settings */
  char out_dir[PATH_MAX];
  bool per_table;
  int64_t flush_ms;    /* commit at least this often while there is something to commit */
  int64_t flush_batch; /* ... or after this many transactions */

  char work_dir[PATH_MAX];
  char checkpoint_path[PATH_MAX];
  char reader[DM_FS_NAME_MAX + 1]; /* our reader file in <relay-dir>/readers */
  const char *relay_dir;
  mode_t file_mode;

  int dir_fd; /* out_dir, while process runs */
  /* output files, in the order they were first written */
  sink_file *files;
  size_t n_files, cap_files;
  size_t last_file; /* the file of the last row (a lookup cache) */
  bool dir_dirty;   /* a file was created since the folder was last fsynced */

  /* where the stream is: boundary = after the last whole transaction (its lengths in the files'
   * `boundary`), checkpointed = what the checkpoint file on disk says */
  dm_position boundary, checkpointed;
  dm_mariadb_gtid_set gtids; /* executed up to the event being read */
  uint64_t pending_txns;     /* transactions past the checkpoint */
  int64_t last_commit_ms;

  /* the transaction being read */
  dm_binlog_trx trx; /* where its group begins and ends: the SDK's tracker */
  bool in_txn; /* a group is open (or rows came outside one): the boundary stays at the last end */
  char gtid[64]; /* "D-S-N" of the group, "" before the first GTID */
  /* table maps of the statement, by table id */
  dm_binlog_table_map **maps;
  size_t n_maps, cap_maps;

  /* column names */
  sink_table_cols *cols;
  size_t n_cols, cap_cols;
  struct st_mysql *src; /* opened when a table map carries no names */

  /* compressed events (MariaDB log_bin_compress) are inflated here */
  uint8_t *zbuf;
  size_t zcap;

  /* scratch values of one row */
  dm_binlog_value *before, *after;
  uint32_t n_values;

  dm_relay_log *relay;    /* while process/resume runs */
  pthread_mutex_t lock;   /* relay (for kill), status_pos */
  dm_position status_pos; /* the checkpoint, for status */
  dm_error wait_err;      /* a commit from the wait callback that failed */
  bool wait_failed;
  bool reader_pending; /* the checkpoint moved: tell the relay reader (dm_relay_log_checkpoint) */

  atomic_bool killed;
  atomic_uint_least64_t lines;   /* lines written in this instance */
  atomic_uint_least64_t commits; /* checkpoints written in this instance */
  atomic_int_least64_t started_ms;
} sink;

int64_t sink_now_ms(void);

/* ---- sink_out.c ---- */
/* Read the checkpoint: 1 with s->checkpointed/boundary/gtids and the files' lengths, 0 when there
 * is none, -1 with *err. */
int sink_checkpoint_load(sink *s, dm_error *err);
/* Cut every output file to its checkpointed length and remove the *.jsonl files the checkpoint does
 * not know (written after it by a run that died). */
int sink_out_restore(sink *s, dm_error *err);
/* Write the checkpoint for s->boundary and the files' boundaries: data written and fsynced first.
 * Nothing to do when neither moved, unless force. */
int sink_commit(sink *s, bool force, dm_error *err);
/* The output file for a row of db.table (the one stream file in layout stream). */
sink_file *sink_file_for(sink *s, const char *db, const char *table, dm_error *err);
/* Append text and a newline: one line. */
int sink_file_append_line(sink *s, sink_file *f, const char *text, size_t len, dm_error *err);
/* A transaction ended: its lines are written (write(2): readers of the files see them; durable at
 * the next commit) and part of the next checkpoint. */
int sink_txn_boundary(sink *s, dm_error *err);
void sink_out_close(sink *s);
void sink_out_free(sink *s);

/* ---- sink_columns.c ---- */
/* Give tm the column names (and signedness, collations, ENUM/SET values) it lacks from the
 * source's information_schema, cached per table. */
int sink_columns_fill(sink *s, dm_binlog_table_map *tm, dm_error *err);
/* A DDL statement: forget the cached columns of every table it may touch. */
void sink_columns_ddl(sink *s, const char *sql, size_t sql_len);
void sink_columns_free(sink *s);

/* ---- sink_row.c ---- */
/* Write the row changes of one rows event (table allowed, event not ignored). */
int sink_rows_event(sink *s, const dm_binlog_format *fmt, const dm_binlog_event *ev, dm_error *err);

#endif /* JSON_SINK_H */
