/*
 * Inside `dmhost verify` (verify.h): the run's state and one file per concern. verify.c (the run:
 * connections, snapshots, the tables in turn), verify_tables.c (the tables the rules take, their
 * routes, columns and keys), verify_sql.c (identifiers, literals, the row checksum expression),
 * verify_chunk.c (key ranges walked on the source, a chunk's checksum on each side),
 * verify_diff.c (the rows of a differing chunk), verify_fix.c (the fix file), verify_output.c
 * (progress, the text report, the JSON document).
 */
#ifndef DMH_VERIFY_INTERNAL_H
#define DMH_VERIFY_INTERNAL_H

#include <mysql.h>
#include <pthread.h>
#include <stdint.h>

#include "dmhost/buf.h"
#include "dmhost/db.h"
#include "dmhost/fs.h"
#include "dmhost/sdk.h"
#include "rules.h"
#include "verify.h"

typedef struct vf_col {
  char name[256];
  bool binary;    /* bytes, not text: a hex literal (BINARY, VARBINARY, BLOBs, BIT) */
  bool generated; /* a generated column: compared, never written by the fix */
  bool nullable;  /* may hold NULL on some side: its ISNULL goes into the row's checksum */
} vf_col;

/* One target table and the source tables routed to it (more than one: a merge). */
typedef struct vf_table {
  char to_schema[256], to_table[256];
  char (*shards)[2][256]; /* schema, table of each source table */
  int n_shards;
  vf_col *cols; /* the source's columns (of the first shard) the target has too */
  int n_cols;
  char missing[512]; /* the source's columns the target lacks, "`a`, `b`" ("" none) */
  int key[16];       /* indexes into cols of the key's columns (n_key 0: no usable key) */
  int n_key;
  char key_name[256]; /* the index, for FORCE INDEX */
  /* results */
  long long rows, chunks, diff_chunks, rows_missing, rows_extra, rows_changed;
  long long rechecks; /* --at-checkpoint: chunk or row checks done again after a difference */
  double seconds;
  bool failed; /* err holds why */
  dm_error err;
  json_object *listed; /* the rows listed (at most DMH_VERIFY_LIST_MAX) */
  int n_listed;
  dm_buf text; /* the listed rows as the text report prints them, printed with the table */
} vf_table;

typedef struct vf_fix vf_fix;

/* The run, and each thread's copy of it (its own pair of connections, the rest shared). */
typedef struct vf_run {
  const dmh_verify_opts *opts;
  const dmh_task_config *task;
  const dmh_source_config *src;
  dmh_rules *rules;
  MYSQL *source, *target; /* each in its one snapshot transaction */
  char snap_file[256];    /* the source's snapshot position (binlog_snapshot_file/position) */
  unsigned long long snap_pos;
  vf_table *tables;
  int n_tables;
  vf_fix *fix;           /* NULL without --fix-sql; written under lock */
  pthread_mutex_t *lock; /* the threads' output and fix file */
  int *next;             /* the next table a thread takes */
  double progress_at;    /* the last progress line */
  long long progress_rows;
  /* --at-checkpoint (verify_checkpoint.c) */
  char cp_table[2 * DM_DB_QUOTED_IDENT_MAX + 2]; /* `meta`.`<task>_syncer_checkpoint` */
  int *lagged;     /* shared: a wait ran out, the later chunks are not compared either */
  dm_buf *collect; /* a row re-check: the keys of differing rows, not reported (NULL: report) */
  long collected;  /* their number */
  bool has_cp;     /* show_checkpoint: the sync's checkpoint as the target's snapshot saw it */
  dm_position sync_cp;
} vf_run;

/* verify.c: a connection's session and a new consistent snapshot (after the current one ended);
 * the source's snapshot position into file and pos. 0, or -1 with *err. */
int vf_snapshot(MYSQL *c, dm_db_side side, dm_error *err);
/* verify.c: opts->cancel is set (the daemon is shutting down): true with *err
 * DM_ERR_VERIFY_CANCELLED. */
bool vf_cancelled(const vf_run *r, dm_error *err);
void vf_snapshot_position(MYSQL *c, char *file, size_t len, unsigned long long *pos);

/* verify_checkpoint.c: a running task compared at its sync's checkpoint. vf_cp_prepare: the
 * checkpoint table's name (0, or -1 with *err). vf_cp_align: a fresh snapshot of the source, a
 * wait (bounded by checkpoint-wait) until the sync's checkpoint on the target is at or past its
 * position, then a fresh snapshot of the target: 0, or -1 with *err (DM_ERR_VERIFY_LAG: the sync
 * did not get there). vf_cp_key_cond: the key of a differing row as a condition, appended to
 * r->collect (OR-joined). */
int vf_cp_prepare(vf_run *r, dm_error *err);
int vf_cp_align(vf_run *r, dm_error *err);
void vf_cp_key_cond(vf_run *r, const vf_table *t, char **vals, unsigned long *lens);
/* show_checkpoint: r->sync_cp and has_cp from the target's current snapshot (nothing on error). */
void vf_cp_note(vf_run *r);

/* verify_tables.c: the tables the rules take, grouped by target (0), or -1 with *err. Then each
 * table's columns and key (0), or -1 with t->err (the table is reported failed). */
int vf_tables_list(vf_run *r, dm_error *err);
int vf_table_describe(vf_run *r, vf_table *t);
void vf_tables_free(vf_run *r);

/* verify_sql.c */
/* `schema`.`table` */
void vf_sql_name(dm_buf *b, const char *schema, const char *table);
/* A value as a SQL literal: NULL, X'hex' for a binary column, else a quoted string (escaped for
 * c's character set). */
void vf_sql_literal(dm_buf *b, MYSQL *c, const char *v, unsigned long len, bool binary);
/* The column list "`a`, `b`" of t's columns. */
void vf_sql_cols(dm_buf *b, const vf_table *t);
/* CRC32 of a row: CRC32(CONCAT_WS('#', cols..., CONCAT(ISNULL(c1), ...))), the ISNULLs of the
 * nullable columns only. */
void vf_sql_row_crc(dm_buf *b, const vf_table *t);
/* The key's columns "`a`, `b`" (ORDER BY). */
void vf_sql_key_cols(dm_buf *b, const vf_table *t);
/* Run sql on c: 0, or -1 with *err (DM_ERR_DB_QUERY, the side's scope, naming what). */
int vf_sql_query(MYSQL *c, dm_db_side side, const char *sql, const char *what, dm_error *err);

/* verify_chunk.c: a chunk is the key range (lo, hi]; lo NULL: from the start, hi NULL: to the
 * end; each an array of n_key values (with lengths). */
typedef struct vf_bound {
  char **v;
  unsigned long *len;
  bool set;
} vf_bound;
void vf_bound_free(vf_bound *b, int n);
/* The WHERE condition of a chunk: "(a > ?) OR (a = ? AND b > ?)" and its upper side; "1" for the
 * whole table. */
void vf_chunk_where(dm_buf *b, MYSQL *c, const vf_table *t, const vf_bound *lo, const vf_bound *hi);
/* The next boundary after lo (of a merge: the nearest of its shards'): 1 found (*hi set), 0 none (the last chunk), -1
 * with *err. */
int vf_chunk_next(vf_run *r, vf_table *t, const vf_bound *lo, vf_bound *hi, dm_error *err);
/* A chunk's checksum: the count and the SUM of the row CRCs (one CRC per row: a second aggregate
 * of it, BIT_XOR, made the server compute each row's CRC twice, a third of the chunk's time). */
typedef struct vf_sum {
  unsigned long long count, sum;
} vf_sum;
/* The checksum of `where` on the source (every shard, composed), and on the target in two steps:
 * sent first, its answer read after the source's, so both servers compute at once. */
int vf_chunk_sum_source(vf_run *r, vf_table *t, const char *where, vf_sum *out, dm_error *err);
int vf_chunk_sum_send(vf_run *r, vf_table *t, const char *where, dm_error *err);
int vf_chunk_sum_read(vf_run *r, vf_table *t, vf_sum *out, dm_error *err);

/* verify_diff.c: the rows of a differing chunk (keyed) or table (no key), each difference counted,
 * listed and given its fix. 0, or -1 with *err. */
int vf_diff_keyed(vf_run *r, vf_table *t, const char *where, dm_error *err);
int vf_diff_whole(vf_run *r, vf_table *t, dm_error *err);

/* verify_fix.c: the fix file (NULL path: none). vf_fix_open refuses an existing path (or link)
 * before anything runs. */
int vf_fix_open(vf_run *r, const char *path, dm_error *err);
void vf_fix_text(vf_run *r, const char *s, size_t n);
/* REPLACE of the source row (vals: t's columns), DELETE of the target row by its key (or, no key,
 * by every value, LIMIT 1). */
void vf_fix_replace(vf_run *r, const vf_table *t, char **vals, unsigned long *lens);
void vf_fix_delete(vf_run *r, const vf_table *t, char **vals, unsigned long *lens);
/* Finish: the file renamed into place (never over one); 0, or -1 with *err. abandon: removed. */
int vf_fix_close(vf_run *r, bool abandon, dm_error *err);

/* verify_output.c */
typedef enum vf_kind { VF_MISSING, VF_EXTRA, VF_CHANGED } vf_kind;
/* A differing row: counted, listed (up to DMH_VERIFY_LIST_MAX) and printed (text mode). src or dst
 * NULL when that side has none. */
void vf_out_row(vf_run *r, vf_table *t, vf_kind kind, char **src, unsigned long *src_len,
                char **dst, unsigned long *dst_len);
void vf_out_progress(vf_run *r, const vf_table *t, bool done);
void vf_out_table(vf_run *r, const vf_table *t);
/* The end: the summary line or the JSON document; run_err: an error that stopped the run. */
void vf_out_end(vf_run *r, const dm_error *run_err, int rc);
double vf_now(void);

#endif /* DMH_VERIFY_INTERNAL_H */
