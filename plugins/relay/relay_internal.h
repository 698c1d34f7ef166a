/*
 * The relay unit: pulls one source's binlog into the relay folder in DM's layout.
 *
 *   <relay-dir>/server-uuid.index          one sub-folder name per line, oldest first
 *   <relay-dir>/<uuid>.NNNNNN/             one per upstream server (or diverged history)
 *   <relay-dir>/<uuid>.NNNNNN/mysql-bin.N  the source's files, byte for byte from the start pos
 *   <relay-dir>/<uuid>.NNNNNN/relay.meta   file, position and GTID set written (atomic)
 *   <relay-dir>/readers/<name>             what each reader still needs (see docs/relay.md)
 *
 * The layout (index, sub-folders, relay.meta) is the SDK's (dmhost/relay_folder.h), as is the purge
 * (dmhost/relay_purge.h). Files: relay_file.c (the writer, its fsync policy and crash recovery),
 * relay_event.c (the few event fields the relay needs, GTID sets), relay_stream.c (the binlog
 * stream: sub-folder choice, poll, reconnect), relay_upstream.c (the source on a plain connection:
 * uuid, position, diverged history), relay_unit.c (the ops table, settings, status).
 */
#ifndef DMH_RELAY_INTERNAL_H
#define DMH_RELAY_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dmhost/binlog.h"
#include "dmhost/binlog_trx.h"
#include "dmhost/clock.h"
#include "dmhost/relay_folder.h"
#include "dmhost/result.h"
#include "dmhost/unit.h"

#define RELAY_PATH_MAX 4096
#define RELAY_UUID_MAX 128
#define RELAY_SUBDIR_MAX (RELAY_UUID_MAX + 16)
#define RELAY_DIR_MAX (RELAY_PATH_MAX + RELAY_SUBDIR_MAX + 2) /* relay-dir/sub-folder */

/* ---- events (relay_event.c) ---- */

/* An ignorable event of exactly `len` bytes (>= header + CRC) filling a hole at `start`. */
#define RELAY_FILLER_MIN (DM_BINLOG_HEADER_LEN + DM_BINLOG_CHECKSUM_LEN)
void relay_ev_filler(unsigned char *buf, uint32_t len, uint32_t start, uint32_t server_id,
                     bool checksum);

/* Feed one event to the SDK's transaction tracker (dmhost/binlog_trx.h); returns true when the
 * event ends a group (committed or rolled back) or stands outside any (the position after it is a
 * boundary). The set gets the group's MariaDB GTID at its end; a GTID_LIST event replaces it when
 * `take_list` (the start of a file read from position 4). */
bool relay_trx_feed(dm_binlog_trx *t, const dm_binlog_format *fmt, const dm_binlog_event *ev,
                    dm_mariadb_gtid_set *set, bool take_list);

/* ---- layout: the SDK's (dmhost/relay_folder.h) ---- */

typedef dm_relay_meta relay_meta;

/* ---- the source on a plain connection (relay_upstream.c) ---- */

struct st_mysql;
struct relay_unit;
/* A connection to the source with timeouts of timeout_s (the connect made of attempts of a second
 * that the stop token and kill end: relay_connect_again); NULL with err (DM_ERR_DB_CONNECT). */
struct st_mysql *relay_up_connect(struct relay_unit *u, unsigned timeout_s, dm_error *err);
/* One row of a query into up to n strings; 1 row, 0 none, -1 error. */
int relay_up_query_row(struct st_mysql *c, const char *sql, char out[][256], int n, dm_error *err);
/* DM's server uuid: @@server_uuid on MySQL; on MariaDB (which has none) "<domain>-<server_id>". */
int relay_up_uuid(struct st_mysql *c, char *uuid, size_t len, dm_error *err);
/* SHOW MASTER STATUS and the GTID position. */
int relay_up_master_status(struct st_mysql *c, dm_position *pos, dm_error *err);
/* The oldest binlog file the source has. */
int relay_up_first_binlog(struct st_mysql *c, char *name, size_t len, dm_error *err);
/* 1 when the source's history no longer holds the relay log up to m (why says how), 0 when it
 * does (or cannot tell: MySQL, no GTID set), -1 when a query failed. */
int relay_up_diverged(struct st_mysql *c, const relay_meta *m, char *why, size_t why_len,
                      dm_error *err);

/* ---- the writer (relay_file.c) ---- */

typedef enum relay_fsync {
  RELAY_FSYNC_NEVER = 0,  /* leave it to the kernel (a crash of the host loses nothing) */
  RELAY_FSYNC_FLUSH = 1,  /* fsync before each relay.meta write (default) */
  RELAY_FSYNC_ROTATE = 2, /* fsync a file when it is closed */
} relay_fsync;

typedef struct relay_file {
  char dir[RELAY_DIR_MAX]; /* the sub-folder */
  char name[256];          /* upstream file name */
  int fd;
  uint64_t size;      /* bytes in the file, buffered ones included */
  uint64_t flushed;   /* bytes handed to the kernel */
  unsigned char *buf; /* whole events only */
  size_t buf_len, buf_cap;
  relay_fsync fsync_policy;
  mode_t mode; /* of a file created (DM_FS_FILE_MODE unless set after relay_file_init) */
  bool dirty_since_sync;
} relay_file;

int relay_file_init(relay_file *f, size_t buf_cap, relay_fsync policy);
void relay_file_free(relay_file *f);
/* Open (create) dir/name for appending at `size` (truncating anything after it). `name` must be
 * a plain file name and is opened beneath the sub-folder without following links
 * (DM_ERR_RELAY_BAD_NAME, DM_ERR_RELAY_LINK). */
int relay_file_open(relay_file *f, const char *dir, const char *name, uint64_t size, dm_error *err);
int relay_file_append(relay_file *f, const void *data, size_t len, dm_error *err);
/* Hand buffered bytes to the kernel; fsync when `sync` and the policy asks for it. */
int relay_file_flush(relay_file *f, bool sync, dm_error *err);
int relay_file_close(relay_file *f, dm_error *err);

/* Recovery of a file after a crash: check dir/name and find the last transaction boundary. `m`
 * gives relay.meta's position and GTID set (a boundary the relay wrote); on return it holds the
 * boundary to resume from (the file is truncated there; 0: fetch the whole file again). From
 * relay.meta's position when the file holds it and the RELAY_RECOVER_WINDOW bytes before it check
 * (every event whole, checksums right, the last ending exactly there); else the whole file from its
 * start. A damaged event (checksum, length) ends the scan; *note says what was found and done. */
#define RELAY_RECOVER_WINDOW (1u << 20)
int relay_file_recover(const char *dir, relay_meta *m, char *note, size_t note_len, dm_error *err);

/* ---- the unit ---- */

typedef struct relay_settings {
  uint32_t server_id;
  int64_t heartbeat_period_s;
  relay_fsync fsync_policy;
  int64_t purge_interval_s;
  int64_t purge_expires_h;
  int64_t purge_remain_space_gb;
  const char *binlog_name;
  const char *binlog_gtid;
  bool send_annotate_rows;
  int64_t master_status_interval_ms;
  int64_t backoff_max_ms;
  int64_t buffer_kb;
} relay_settings;

typedef struct relay_status {
  pthread_mutex_t lock;
  dm_position master;
  dm_position relay;
  char subdir[RELAY_SUBDIR_MAX];
  bool has_master, has_relay;
  bool caught_up;
  const char *stage; /* "connecting", "streaming", "reconnecting", "stopped" */
  uint64_t events, bytes, reconnects;
} relay_status;

typedef struct relay_unit {
  const dm_host_services *host;
  dm_ctx *ctx;
  relay_settings set;
  mode_t file_mode; /* of the files the relay creates (the source's file-mode) */
  char relay_dir[RELAY_PATH_MAX];
  relay_status st;
  pthread_mutex_t reader_lock; /* guards reader and killed */
  dm_binlog_reader *reader;    /* the open stream, for kill and the stop watcher to interrupt */
  bool reader_interrupted;     /* interrupt was called on reader */
  bool killed;
  /* metrics (relay_stream.c, docs/metrics.md); NULL from a host without them */
  dm_metric *m_file, *m_pos, *m_write_size, *m_bytes;
  dm_metric *m_read_err, *m_write_err, *m_corrupt, *m_space, *m_subdir;
  uint64_t m_bytes_published; /* st.bytes at the last publish (stream thread) */
} relay_unit;

/* ---- metrics (relay_metrics.c) ---- */
/* Registers the relay's metrics (DM's dm_relay_* names) in init; a refusal is logged only. */
void relay_metrics_init(relay_unit *u);
/* dm_relay_binlog_file / dm_relay_binlog_pos of `node` ("relay": written; "master": the
 * source's end). */
void relay_metrics_position(relay_unit *u, const char *node, const dm_position *p);
/* A read of the binlog stream failed: dm_relay_data_corruption or dm_relay_read_error_count. */
void relay_metrics_read_error(relay_unit *u, const dm_error *err);
/* The relay's path failed with err: dm_relay_write_error_count when it was a write (DM_ERR_IO). */
void relay_metrics_write_error(relay_unit *u, const dm_error *err);
/* dm_relay_sub_dir_index of the sub-folder the relay writes into now. */
void relay_metrics_subdir(relay_unit *u, const char *subdir);
/* dm_relay_space of the relay folder's file system (the watcher, every 10 s). */
void relay_metrics_space(relay_unit *u);

/* The stream loop (relay_stream.c): returns only on stop (DM_OUTCOME_CANCELED) or a
 * non-resumable error. */
void relay_stream_run(relay_unit *u, dm_result *result);

/* Interrupt the open stream, if any (any thread). */
void relay_interrupt(relay_unit *u);

/* Killed, or the stop token fired (any thread). */
bool relay_stopping(relay_unit *u);

/*
 * dm_db_connect cannot cancel a handshake: a source that accepts TCP but never answers holds a
 * connect for its whole connect timeout, and the stop token and kill with it. So a connect is
 * made of attempts of RELAY_CONNECT_ATTEMPT_S each, until its timeout: after an attempt that
 * failed (DM_ERR_DB_CONNECT) by running out its time (not refused at once), started at
 * attempt_start of a connect started at start, relay_connect_again says whether to try again:
 * the time is not up and the unit is not stopping. So the unit returns within about a second of
 * the stop token or kill (relay_upstream.c).
 */
#define RELAY_CONNECT_ATTEMPT_S 1
bool relay_connect_again(relay_unit *u, double start, unsigned timeout_s, double attempt_start,
                         const dm_error *err);

#endif /* DMH_RELAY_INTERNAL_H */
