/*
 * dmhost SDK: binlog reading and event decoding.
 *
 * Two readers give the same thing, one event at a time: its common header, its raw bytes (exactly
 * as they are in the binlog file, header to checksum, so a relay can write them byte for byte) and
 * where it is (file name, offset).
 *
 *   - dm_binlog_reader_open_file: a local binlog or relay file, from its start or from an event
 *     boundary inside it, optionally following it as it grows (an event is returned only once all
 *     its bytes are in the file: a reader never sees a half-written event).
 *   - dm_binlog_reader_open_stream: a server, through libmariadb's replication API, from a file and
 *     position or from a MariaDB GTID position. Lives in its own object file (binlog_stream.c):
 *     only a unit that calls it needs libmariadb at link time.
 *
 * Both check the CRC32 of every event whose format description says it carries one and report a
 * mismatch as DM_ERR_BINLOG_CORRUPT naming file, offset, expected and computed checksum.
 *
 * Decoders (dm_binlog_decode_*) turn the body of an event into a plain struct. They never allocate:
 * strings in the structs point into the event's raw bytes (not NUL-terminated unless said), so
 * they live as long as the event does. Row events and table maps are in binlog_rows.h.
 *
 * Memory stays bounded: a reader holds one read buffer (default 1 MiB) that grows only to fit the
 * largest event seen; files are never read whole.
 *
 * Thread-safety: a reader is used by one thread at a time, except dm_binlog_reader_interrupt,
 * which may be called from any thread. The decoders are pure functions.
 */
#ifndef DMHOST_BINLOG_H
#define DMHOST_BINLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "host.h"
#include "position.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- event types ----
 * The one table of the event types this SDK knows: X(name, code, who writes it, what it is).
 * `name` gives DM_BINLOG_<name> and the name dm_binlog_event_type_name returns; `code` is the type
 * byte of the event header (MySQL's below 160, MariaDB's from 160); `who` is MariaDB, MySQL or
 * both. Add a type here and nowhere else. */
#define DM_BINLOG_EVENT_TYPES(X)                                                                   \
  X(UNKNOWN_EVENT, 0, both, "never written: type 0 is no event")                                   \
  X(START_V3, 1, both, "the format description of binlog v1 to v3 (old servers)")                  \
  X(QUERY, 2, both, "a statement: BEGIN, COMMIT, ROLLBACK, a DDL, XA COMMIT/ROLLBACK, ...")        \
  X(STOP, 3, both, "the server stopped; the last event of a file")                                 \
  X(ROTATE, 4, both, "the next binlog file's name and start")                                      \
  X(INTVAR, 5, both, "LAST_INSERT_ID or INSERT_ID for the next statement")                         \
  X(RAND, 13, both, "RAND() seeds for the next statement")                                         \
  X(USER_VAR, 14, both, "a user variable the next statement reads")                                \
  X(FORMAT_DESCRIPTION, 15, both,                                                                  \
    "the first event of a file: server version, header lengths, checksum")                         \
  X(XID, 16, both, "the commit of a transaction on a transactional engine")                        \
  X(BEGIN_LOAD_QUERY, 17, both, "the first block of a LOAD DATA file")                             \
  X(EXECUTE_LOAD_QUERY, 18, both, "the LOAD DATA statement that uses the file")                    \
  X(TABLE_MAP, 19, both, "a table id, its name and its column types, before its row events")       \
  X(WRITE_ROWS_V1, 23, both, "inserted rows (v1 header)")                                          \
  X(UPDATE_ROWS_V1, 24, both, "updated rows, before and after images (v1 header)")                 \
  X(DELETE_ROWS_V1, 25, both, "deleted rows (v1 header)")                                          \
  X(INCIDENT, 26, both, "something happened the binlog cannot show: replicas should stop")         \
  X(HEARTBEAT, 27, both, "sent by the server on an idle stream; never in a file")                  \
  X(IGNORABLE, 28, both, "an event every reader may skip (the relay's filler)")                    \
  X(ROWS_QUERY, 29, MySQL,                                                                         \
    "the statement of the next row events (MySQL's counterpart of ANNOTATE_ROWS)")                 \
  X(WRITE_ROWS_V2, 30, MySQL, "inserted rows (v2 header)")                                         \
  X(UPDATE_ROWS_V2, 31, MySQL, "updated rows (v2 header)")                                         \
  X(DELETE_ROWS_V2, 32, MySQL, "deleted rows (v2 header)")                                         \
  X(MYSQL_GTID, 33, MySQL, "a MySQL GTID: starts a transaction")                                   \
  X(MYSQL_ANONYMOUS_GTID, 34, MySQL, "starts a transaction without a GTID (gtid_mode OFF)")        \
  X(MYSQL_PREVIOUS_GTIDS, 35, MySQL, "the GTID set of the files before this one")                  \
  X(TRANSACTION_CONTEXT, 36, MySQL, "group replication certification data")                        \
  X(VIEW_CHANGE, 37, MySQL, "group replication membership change")                                 \
  X(XA_PREPARE, 38, both, "XA PREPARE: ends the prepared part of an XA transaction")               \
  X(PARTIAL_UPDATE_ROWS, 39, MySQL, "MySQL 8: update with partial JSON after-images")              \
  X(TRANSACTION_PAYLOAD, 40, MySQL, "MySQL 8: a compressed transaction (dm_binlog_payload_*)")     \
  X(HEARTBEAT_V2, 41, MySQL, "MySQL 8's heartbeat with a 64-bit position")                         \
  X(ANNOTATE_ROWS, 160, MariaDB, "the statement of the next row events")                           \
  X(BINLOG_CHECKPOINT, 161, MariaDB, "the oldest binlog file crash recovery still needs")          \
  X(GTID, 162, MariaDB, "a MariaDB GTID: starts an event group (flags: standalone, XA, ...)")      \
  X(GTID_LIST, 163, MariaDB,                                                                       \
    "the binlog state (last GTID per domain and server) at a file's start")                        \
  X(START_ENCRYPTION, 164, MariaDB, "the rest of the file is encrypted")                           \
  X(QUERY_COMPRESSED, 165, MariaDB, "a QUERY with its statement compressed (log_bin_compress)")    \
  X(WRITE_ROWS_COMPRESSED_V1, 166, MariaDB, "WRITE_ROWS_V1, compressed")                           \
  X(UPDATE_ROWS_COMPRESSED_V1, 167, MariaDB, "UPDATE_ROWS_V1, compressed")                         \
  X(DELETE_ROWS_COMPRESSED_V1, 168, MariaDB, "DELETE_ROWS_V1, compressed")                         \
  X(WRITE_ROWS_COMPRESSED_V2, 169, MariaDB, "WRITE_ROWS_V2, compressed")                           \
  X(UPDATE_ROWS_COMPRESSED_V2, 170, MariaDB, "UPDATE_ROWS_V2, compressed")                         \
  X(DELETE_ROWS_COMPRESSED_V2, 171, MariaDB, "DELETE_ROWS_V2, compressed")

typedef enum dm_binlog_event_type {
#define DM_BINLOG_EVENT_TYPE_ENUM(name, code, who, what) DM_BINLOG_##name = code,
  DM_BINLOG_EVENT_TYPES(DM_BINLOG_EVENT_TYPE_ENUM)
#undef DM_BINLOG_EVENT_TYPE_ENUM
} dm_binlog_event_type;

/* Name of an event type ("QUERY", "GTID", ...), from DM_BINLOG_EVENT_TYPES; "UNKNOWN" for a type
 * this SDK does not know. Static storage. */
const char *dm_binlog_event_type_name(int type);

#define DM_BINLOG_MAGIC                                                                            \
  "\xfe"                                                                                           \
  "bin"
#define DM_BINLOG_MAGIC_LEN 4
#define DM_BINLOG_HEADER_LEN 19 /* common event header (binlog format v4) */
#define DM_BINLOG_CHECKSUM_LEN 4

/* Common header flags worth knowing. */
#define DM_BINLOG_F_IN_USE 0x0001     /* FDE: the file was not closed cleanly (or still open) */
#define DM_BINLOG_F_ARTIFICIAL 0x0020 /* made up by the server for a replica, not in any file */
#define DM_BINLOG_F_IGNORABLE 0x0080  /* a reader that does not know the type may skip it */

/* Checksum algorithms (format description, @@binlog_checksum). */
typedef enum dm_binlog_checksum_alg {
  DM_BINLOG_CHECKSUM_OFF = 0,
  DM_BINLOG_CHECKSUM_CRC32 = 1,
  DM_BINLOG_CHECKSUM_UNDEF = 255, /* from servers too old to say: no checksum */
} dm_binlog_checksum_alg;

/* The common event header. */
typedef struct dm_binlog_event_header {
  uint32_t timestamp;  /* seconds since the epoch when the statement began */
  uint8_t type;        /* dm_binlog_event_type */
  uint32_t server_id;  /* the server that first wrote the event */
  uint32_t event_size; /* whole event: header, body, checksum */
  uint32_t next_pos;   /* "log_pos": offset of the next event in the file; 0 if artificial */
  uint16_t flags;      /* DM_BINLOG_F_* */
} dm_binlog_event_header;

/*
 * What a format description event says; needed to read every event after it (checksum and
 * post-header lengths). A reader keeps the current one (dm_binlog_reader_format).
 */
typedef struct dm_binlog_format {
  uint16_t binlog_version; /* 4 */
  char server_version[51]; /* NUL-terminated: "10.11.6-MariaDB-log", "8.0.36" */
  uint32_t create_timestamp;
  uint8_t header_len;   /* 19 */
  uint8_t checksum_alg; /* dm_binlog_checksum_alg */
  bool mariadb;         /* server_version names MariaDB */
  uint16_t version_major, version_minor, version_patch;
  uint16_t n_post_header;       /* entries in post_header_len */
  uint8_t post_header_len[256]; /* [type - 1]: post-header length of event type `type` */
} dm_binlog_format;

/* A format for decoding events without having read a format description: v4 with the lengths of
 * MariaDB 10.x / MySQL 8.0, checksum as given. */
void dm_binlog_format_default(dm_binlog_format *fmt, uint8_t checksum_alg);

/* Post-header length of an event type under fmt (0 if fmt does not know it). */
uint8_t dm_binlog_post_header_len(const dm_binlog_format *fmt, uint8_t type);

/*
 * One event, as a reader returns it. raw/body point into the reader's buffer and stay valid until
 * the next call on the reader (copy what you keep).
 */
typedef struct dm_binlog_event {
  dm_binlog_event_header header;
  const uint8_t *raw;  /* header.event_size bytes: header, body, checksum */
  uint32_t raw_len;    /* == header.event_size */
  const uint8_t *body; /* raw + 19: post-header and payload */
  uint32_t body_len;   /* without the checksum, when the event carries one */
  bool has_checksum;   /* the last 4 raw bytes are a CRC32 (verified unless turned off) */
  /* Not in any binlog file: flagged artificial by the server (the stream's first ROTATE, a
   * GTID_LIST made up for a GTID start), a format description resent with next_pos 0 when a stream
   * starts mid-file, or a heartbeat. A relay skips these; everything else it writes as raw. */
  bool artificial;
  const char *file; /* binlog file the event belongs to (NUL-terminated, base name) */
  uint64_t offset;  /* where the event starts in that file (artificial: the current position) */
} dm_binlog_event;

/* CRC32 (zlib's polynomial, as the binlog uses) of buf, continuing from crc (start with 0). */
uint32_t dm_binlog_crc32(uint32_t crc, const void *buf, size_t len);

/*
 * Parse the common header of `raw` (at least 19 bytes). Returns 0, or -1 with err set
 * (DM_ERR_BINLOG_CORRUPT: event_size below the header length).
 */
int dm_binlog_parse_header(const uint8_t *raw, size_t len, dm_binlog_event_header *out,
                           dm_error *err);

/*
 * Fill *ev for one complete event in memory (raw of raw_len bytes, as in a file) under fmt:
 * header, body, checksum presence. Verifies the checksum when `verify` is set. `file` and
 * `offset` only name the place in error messages and in *ev. Returns 0, or -1 with
 * DM_ERR_BINLOG_CORRUPT (size mismatch, checksum mismatch naming expected and computed values).
 */
int dm_binlog_event_from_bytes(const uint8_t *raw, size_t raw_len, const dm_binlog_format *fmt,
                               bool verify, const char *file, uint64_t offset, dm_binlog_event *ev,
                               dm_error *err);

/* ---- readers ---- */

typedef struct dm_binlog_reader dm_binlog_reader;

/*
 * Called by a following file reader when no complete event is in the file yet. Wait a little (up
 * to what suits you: a stop token's wait_stop(ctx, 100) is the usual body) and return true to look
 * again, or false to give up: dm_binlog_reader_next then returns 0 (end) with nothing consumed, so
 * a later call continues at the same place. `offset` is where the awaited event starts.
 */
typedef bool (*dm_binlog_wait_fn)(void *arg, const char *path, uint64_t offset);

typedef struct dm_binlog_file_options {
  /* Offset of the first event to return: 0 or 4 for the first event of the file (the format
   * description), else the offset of an event boundary (e.g. a relay.meta position). The format
   * description at offset 4 is read first in any case, so checksums and lengths are known. */
  uint64_t start_pos;
  /* Follow the file as it grows: at the end, call wait (or sleep poll_ms if wait is NULL) and
   * look again, until a complete event is there. After a ROTATE or STOP event (the file's last)
   * the reader returns 0 (end) instead of waiting. */
  bool follow;
  dm_binlog_wait_fn wait;
  void *wait_arg;
  uint32_t poll_ms;        /* follow without wait: sleep between looks (default 50) */
  bool no_verify_checksum; /* skip CRC32 checks (~0.1 ns/byte with PCLMUL, more on older CPUs) */
  size_t buffer_size;      /* read buffer (default 1 MiB, min 64 KiB); grows for larger events */
} dm_binlog_file_options;

/*
 * Open a binlog or relay file. Checks the magic, reads the format description at offset 4, then
 * positions at opts->start_pos (NULL opts: from the start, no follow). Returns 0 and *out, or -1
 * with err: DM_ERR_IO (cannot open/read), DM_ERR_BINLOG_CORRUPT (bad magic, no format description,
 * bad checksum), DM_ERR_BINLOG_INCOMPLETE (the file ends inside its format description and follow
 * is off), DM_ERR_BINLOG_UNSUPPORTED (binlog format before v4).
 */
int dm_binlog_reader_open_file(dm_binlog_reader **out, const char *path,
                               const dm_binlog_file_options *opts, dm_error *err);

typedef struct dm_binlog_stream_options {
  const dm_db_endpoint *source; /* host, port, user, password (socket if set) */
  /* This replica's server_id: distinct from the source's and from every other replica of it (a
   * second stream with the same id gets the first disconnected, error 4052). */
  uint32_t server_id;
  /* Where to start: a file name and offset (pos < 4 means 4), or, when `gtid` is non-empty, a
   * MariaDB GTID position "D-S-N[,D-S-N...]": the stream starts after it (file is then ignored). */
  const char *file;
  uint64_t pos;
  const char *gtid;
  uint32_t heartbeat_ms;      /* ask the source for a heartbeat this often when idle; 0: none */
  uint32_t connect_timeout_s; /* default 10 */
  /* Socket read timeout: a silent connection errors out (DM_ERR_DB_CONNECT) after it. Default
   * 3 x heartbeat (at least 10 s), or 0 (none) when there are no heartbeats. */
  uint32_t read_timeout_s;
  bool omit_annotate_rows; /* don't ask for ANNOTATE_ROWS: fewer bytes, not byte-identical */
  bool non_blocking;       /* the source ends the stream (next returns 0) at the end of its last
                              binlog instead of waiting for more */
  bool no_verify_checksum;
  /* the size of the struct `source` points to: dm_host_db_endpoint_size for the host's endpoint
   * (its TLS fields are used only then, see dm_db_connect_opts.endpoint_size); 0: plain. */
  uint32_t source_size;
} dm_binlog_stream_options;

/*
 * Connect to the source and start a binlog dump. Sets @master_binlog_checksum to the source's
 * @@global.binlog_checksum, @mariadb_slave_capability=4, @master_heartbeat_period, and for a GTID
 * start @slave_connect_state and @slave_gtid_strict_mode. Returns 0 and *out, or -1 with err:
 * DM_ERR_DB_CONNECT (cannot connect: resumable), DM_ERR_DB_QUERY, DM_ERR_BINLOG_PURGED (the
 * source no longer has what the start position needs: not resumable).
 * Errors the server sends only once events are asked for (e.g. purged) come from the first next.
 */
int dm_binlog_reader_open_stream(dm_binlog_reader **out, const dm_binlog_stream_options *opts,
                                 dm_error *err);

/*
 * The next event. Returns 1 with *ev filled; 0 at the end (file reader without follow: clean end
 * of file; following: the wait callback gave up, or the file ended with ROTATE/STOP; stream:
 * the source ended a non-blocking stream); -1 on error with err set:
 *   DM_ERR_BINLOG_INCOMPLETE  the file ends inside an event (not following): the message says
 *                             "incomplete event at offset N" and dm_binlog_reader_offset gives N,
 *                             so recovery can truncate the file there.
 *   DM_ERR_BINLOG_CORRUPT     checksum mismatch or impossible header: file, offset, expected vs
 * got. DM_ERR_BINLOG_PURGED      (stream) the source has purged the binlog the position needs.
 *   DM_ERR_DB_CONNECT         (stream) the connection broke or went silent: reconnect, resumable.
 *   DM_ERR_DB_QUERY           (stream) any other error the source sent.
 *   DM_ERR_BINLOG_UNSUPPORTED an encrypted binlog (START_ENCRYPTION).
 *   DM_ERR_IO                 a read failed.
 * After -1 the reader is unusable except for close (and offset/position).
 * Events of every type come through, also ones this SDK does not know (raw). Heartbeats and
 * artificial events come through too, flagged (ev->artificial), so a caller sees the stream is
 * alive; a relay skips them.
 */
int dm_binlog_reader_next(dm_binlog_reader *r, dm_binlog_event *ev, dm_error *err);

/* The format description in force (after the one most recently read). Never NULL. */
const dm_binlog_format *dm_binlog_reader_format(const dm_binlog_reader *r);

/*
 * Where the reader is: the current file name and the offset just past the last complete event
 * returned (the next event's start); after DM_ERR_BINLOG_INCOMPLETE, the offset of the incomplete
 * event. `gtid` is left "" (the caller tracks GTID sets from GTID / GTID_LIST events).
 */
void dm_binlog_reader_position(const dm_binlog_reader *r, dm_position *out);
uint64_t dm_binlog_reader_offset(const dm_binlog_reader *r);

/* Largest buffer the reader holds (bytes): for memory checks in tests and benchmarks. */
size_t dm_binlog_reader_buffer_size(const dm_binlog_reader *r);

/*
 * Whether dm_binlog_reader_next can go on without waiting for the source: a stream has bytes of
 * the next event in the client library's buffer or on its socket (or has ended, failed or been
 * interrupted); a file reader: always true. A hint for a caller that has something better to do
 * than wait (the sync unit closes the batch it holds when it is caught up): true may still wait
 * for the rest of an event, and a TLS stream can say false when the TLS library holds the bytes.
 */
bool dm_binlog_reader_pending(dm_binlog_reader *r);
/* A descriptor to poll (POLLIN) for the stream's next bytes once dm_binlog_reader_pending said
 * false, to wait for the source and something else at once; -1 for a file reader. The reader's:
 * never read from it, nor close it. */
int dm_binlog_reader_fd(const dm_binlog_reader *r);

/*
 * From any thread: make a blocked or later dm_binlog_reader_next return 0 soon (stream: shuts the
 * socket down; file: the next wait returns at once). For a unit's stop token.
 */
void dm_binlog_reader_interrupt(dm_binlog_reader *r);

/* Close and free (NULL is fine). */
void dm_binlog_reader_close(dm_binlog_reader *r);

/* ---- event decoders: pure, no allocation; strings point into the event ---- */

/* A length-delimited string inside an event (not NUL-terminated). */
typedef struct dm_binlog_str {
  const char *ptr;
  uint32_t len;
} dm_binlog_str;

/* FORMAT_DESCRIPTION: fill *out from the event (its checksum is checked by the reader). */
int dm_binlog_decode_format(const dm_binlog_event *ev, dm_binlog_format *out, dm_error *err);

/* ROTATE: the next file's name and the position to read it from (4). Parsed from the raw bytes,
 * not by libmariadb (which mis-parses it after the first format description). */
typedef struct dm_binlog_rotate {
  uint64_t position;
  dm_binlog_str next_file;
} dm_binlog_rotate;
int dm_binlog_decode_rotate(const dm_binlog_format *fmt, const dm_binlog_event *ev,
                            dm_binlog_rotate *out, dm_error *err);

/* MariaDB GTID (162): starts an event group. GTID = domain_id-server_id(header)-seq_no. */
#define DM_BINLOG_GTID_STANDALONE 0x01 /* no terminating XID/COMMIT: the group is one statement */
#define DM_BINLOG_GTID_GROUP_COMMIT 0x02
#define DM_BINLOG_GTID_TRANSACTIONAL 0x04
#define DM_BINLOG_GTID_ALLOW_PARALLEL 0x08
#define DM_BINLOG_GTID_WAITED 0x10
#define DM_BINLOG_GTID_DDL 0x20
#define DM_BINLOG_GTID_PREPARED_XA 0x40 /* the group is an XA PREPARE (ends with XA_PREPARE) */
#define DM_BINLOG_GTID_COMPLETED_XA                                                                \
  0x80 /* the group is XA COMMIT or XA ROLLBACK of a prepared one */

/* An XA transaction's identifier: format id, gtrid (1..64 bytes), bqual (0..64 bytes). */
#define DM_BINLOG_XID_PART_MAX 64
typedef struct dm_binlog_xid {
  uint32_t format_id; /* the server's signed long, 4 bytes: print it as int32_t */
  uint8_t gtrid_len, bqual_len;
  const uint8_t *data; /* gtrid then bqual, inside the event */
} dm_binlog_xid;
/* As the server writes it in `XA COMMIT X'..',X'..',N`: "X'6331',X'',1". DM_BINLOG_XID_TEXT_MAX
 * bytes always suffice. Returns 0, or -1 when buf is too small. */
#define DM_BINLOG_XID_TEXT_MAX (2 * 2 * DM_BINLOG_XID_PART_MAX + 24)
int dm_binlog_xid_format(const dm_binlog_xid *x, char *buf, size_t len);
bool dm_binlog_xid_equal(const dm_binlog_xid *a, const dm_binlog_xid *b);

typedef struct dm_binlog_gtid {
  uint64_t seq_no;
  uint32_t domain_id;
  uint32_t server_id; /* from the event header */
  uint8_t flags;      /* DM_BINLOG_GTID_* */
  uint64_t commit_id; /* with GROUP_COMMIT, else 0 */
  dm_binlog_xid xa;   /* with PREPARED_XA or COMPLETED_XA, else zero */
} dm_binlog_gtid;
/* Layout (MariaDB 10.5+): seq_no 8, domain_id 4, flags 1, then commit_id 8 with GROUP_COMMIT,
 * then the XID (format id 4, gtrid length 1, bqual length 1, data) with an XA flag, then extra
 * flags the decoder leaves alone; zeros pad the body to 19 bytes. DM_ERR_BINLOG_CORRUPT when the
 * body is shorter than its flags say or an XID part is longer than 64 bytes. */
int dm_binlog_decode_gtid(const dm_binlog_format *fmt, const dm_binlog_event *ev,
                          dm_binlog_gtid *out, dm_error *err);

/* XA_PREPARE (38): the end of an XA transaction's group at its XA PREPARE (MariaDB, MySQL), or
 * MySQL's XA COMMIT .. ONE PHASE (one_phase). Layout: one_phase 1, format id 4, gtrid length 4,
 * bqual length 4, data. DM_ERR_BINLOG_CORRUPT when cut short or a part is longer than 64 bytes. */
typedef struct dm_binlog_xa_prepare {
  bool one_phase;
  dm_binlog_xid xid;
} dm_binlog_xa_prepare;
int dm_binlog_decode_xa_prepare(const dm_binlog_format *fmt, const dm_binlog_event *ev,
                                dm_binlog_xa_prepare *out, dm_error *err);

/* MariaDB GTID_LIST (163): the binlog state when the file was started (one GTID per domain and
 * server). Iterate with dm_binlog_gtid_list_get. */
typedef struct dm_binlog_gtid_list {
  uint32_t count;
  uint8_t flags;        /* top 4 bits of the count field */
  const uint8_t *items; /* count x (domain 4, server 4, seq 8) */
} dm_binlog_gtid_list;
int dm_binlog_decode_gtid_list(const dm_binlog_format *fmt, const dm_binlog_event *ev,
                               dm_binlog_gtid_list *out, dm_error *err);
void dm_binlog_gtid_list_get(const dm_binlog_gtid_list *l, uint32_t i, uint32_t *domain_id,
                             uint32_t *server_id, uint64_t *seq_no);
/* As "D-S-N,D-S-N" (MariaDB's gtid_binlog_pos form). Returns 0, or -1 if buf is too small. */
int dm_binlog_gtid_list_format(const dm_binlog_gtid_list *l, char *buf, size_t len);

/* BINLOG_CHECKPOINT (161): the oldest file still needed for crash recovery. */
typedef struct dm_binlog_checkpoint {
  dm_binlog_str file;
} dm_binlog_checkpoint;
int dm_binlog_decode_checkpoint(const dm_binlog_format *fmt, const dm_binlog_event *ev,
                                dm_binlog_checkpoint *out, dm_error *err);

/* XID (16): commit of a transactional group. */
int dm_binlog_decode_xid(const dm_binlog_format *fmt, const dm_binlog_event *ev, uint64_t *xid,
                         dm_error *err);

/* ANNOTATE_ROWS (160) / ROWS_QUERY (29): the statement that made the following row events. */
int dm_binlog_decode_annotate(const dm_binlog_format *fmt, const dm_binlog_event *ev,
                              dm_binlog_str *statement, dm_error *err);

/* HEARTBEAT (27): the source's current binlog file (position: header.next_pos). */
int dm_binlog_decode_heartbeat(const dm_binlog_format *fmt, const dm_binlog_event *ev,
                               dm_binlog_str *file, dm_error *err);

/* INCIDENT (26): something happened on the source that a replica cannot see (e.g. lost events). */
typedef struct dm_binlog_incident {
  uint16_t type; /* 1: LOST_EVENTS */
  dm_binlog_str message;
} dm_binlog_incident;
int dm_binlog_decode_incident(const dm_binlog_format *fmt, const dm_binlog_event *ev,
                              dm_binlog_incident *out, dm_error *err);

/* QUERY (2): a statement, with the status variables a replica needs to run it as the source did.
 * has_* say which status variables were present. */
typedef struct dm_binlog_query {
  uint32_t thread_id;
  uint32_t exec_time;
  uint16_t error_code;
  dm_binlog_str db;    /* default database ("" if none) */
  dm_binlog_str query; /* the statement (BEGIN, COMMIT, DDL, ...) */
  bool has_flags2, has_sql_mode, has_auto_increment, has_charset, has_time_zone, has_lc_time_names,
      has_charset_database, has_table_map_for_update, has_microseconds, has_xid,
      has_explicit_defaults_ts, has_default_collation_utf8;
  uint32_t flags2;
  uint64_t sql_mode;
  uint16_t auto_increment_increment, auto_increment_offset;
  uint16_t charset_client, collation_connection, collation_server;
  dm_binlog_str time_zone;
  dm_binlog_str catalog;
  uint16_t lc_time_names;
  uint16_t charset_database;
  uint64_t table_map_for_update;
  uint32_t microseconds; /* Q_MICROSECONDS / Q_HRNOW: fraction of the timestamp */
  uint64_t xid;          /* Q_XID / Q_DDL_LOGGED_WITH_XID */
  uint8_t explicit_defaults_ts;
  uint16_t default_collation_utf8;
  dm_binlog_str user, host; /* Q_INVOKERS (definer of a stored routine call) */
  uint32_t n_updated_dbs;   /* Q_UPDATED_DB_NAMES: count; 254 means "too many to list" */
  /* Status variables after the first code this SDK does not know cannot be parsed (their length
   * is unknown): unknown_status_code is then that code (else -1); everything before it is set. */
  int unknown_status_code;
} dm_binlog_query;
int dm_binlog_decode_query(const dm_binlog_format *fmt, const dm_binlog_event *ev,
                           dm_binlog_query *out, dm_error *err);

/* MySQL GTID (33) / ANONYMOUS_GTID (34). */
typedef struct dm_binlog_mysql_gtid {
  uint8_t flags; /* 1: may have committed in parallel with others (commit flag) */
  uint8_t sid[16];
  int64_t gno;
  bool has_logical_clock;
  int64_t last_committed, sequence_number;
  bool has_commit_ts;
  uint64_t immediate_commit_ts, original_commit_ts; /* microseconds since the epoch */
  bool has_transaction_length;
  uint64_t transaction_length;
  bool has_server_version;
  uint32_t immediate_server_version, original_server_version;
} dm_binlog_mysql_gtid;
int dm_binlog_decode_mysql_gtid(const dm_binlog_format *fmt, const dm_binlog_event *ev,
                                dm_binlog_mysql_gtid *out, dm_error *err);
/* "3e11fa47-71ca-11e1-9e33-c80aa9429562:23" */
int dm_binlog_mysql_gtid_format(const dm_binlog_mysql_gtid *g, char *buf, size_t len);

/* MySQL PREVIOUS_GTIDS (35): the GTID set executed before this file, as text
 * ("uuid:1-5:7-9,uuid2:1-3"). Returns 0, or -1 (corrupt, or buf too small). */
int dm_binlog_decode_previous_gtids(const dm_binlog_format *fmt, const dm_binlog_event *ev,
                                    char *buf, size_t len, dm_error *err);
/* The same into a MySQL GTID set (replaced; dm_mysql_gtid_set_free it). 0, or -1 with err
 * (DM_ERR_BINLOG_CORRUPT, DM_ERR_NO_MEMORY). */
int dm_binlog_decode_previous_gtids_set(const dm_binlog_format *fmt, const dm_binlog_event *ev,
                                        dm_mysql_gtid_set *out, dm_error *err);

/* ---- MariaDB compressed events (log_bin_compress) ---- */

/* Largest uncompressed part an event may claim: the server's max_allowed_packet ceiling (1 GiB). */
#define DM_BINLOG_UNCOMPRESSED_MAX (1024u * 1024u * 1024u)

/* QUERY_COMPRESSED (165) or a compressed rows event (166-171). */
bool dm_binlog_is_compressed_event(uint8_t type);

/*
 * Make a compressed event into the plain one it stands for (QUERY, WRITE/UPDATE/DELETE_ROWS v1 or
 * v2): *out is *ev with the type, size, raw and body of the uncompressed event (checksum
 * recomputed when ev has one), built in *buf (of *cap bytes, grown with realloc as needed; the
 * caller frees it; *out is valid until the next call with the same buffer). File, offset and
 * next_pos stay those of the compressed event in its binlog. Decode *out with the usual decoders.
 *
 * The uncompressed length the event claims is checked before anything is allocated: it must not
 * exceed DM_BINLOG_UNCOMPRESSED_MAX nor what zlib can make of the compressed bytes (1032:1), and
 * the zlib data must inflate to exactly that length. Returns 0, or -1 with err:
 * DM_ERR_BINLOG_CORRUPT (cut event, bad length header, a length beyond the bounds, damaged zlib
 * data, data inflating past or short of its length), DM_ERR_BINLOG_UNSUPPORTED (an algorithm
 * other than zlib), DM_ERR_NO_MEMORY.
 */
int dm_binlog_event_uncompress(const dm_binlog_format *fmt, const dm_binlog_event *ev,
                               uint8_t **buf, size_t *cap, dm_binlog_event *out, dm_error *err);

/* ---- MySQL 8 transaction payloads (binlog_transaction_compression) ---- */

/*
 * A TRANSACTION_PAYLOAD (40) event holds a whole transaction's events (BEGIN, table maps, rows,
 * XID; its GTID event comes before it, outside), zstd-compressed. Readers and the relay pass it on
 * as it is; a unit that applies it reads the events inside one at a time:
 *
 *   dm_binlog_payload *pl;                         (once; reused for every payload event)
 *   dm_binlog_payload_new(&pl, &err);
 *   dm_binlog_payload_begin(pl, fmt, &ev, &err);   (ev: the payload event)
 *   while ((rc = dm_binlog_payload_next(pl, &inner, &err)) == 1)
 *     ... decode `inner` with the usual decoders and `fmt` ...
 *   dm_binlog_payload_free(pl);
 *
 * Streamed: the events are inflated as they are asked for, in a window that grows only to the
 * largest of them (at least 64 KiB), so a 1 GiB transaction does not take 1 GiB. The payload event
 * `ev` must stay valid until the last next (its compressed bytes are read in place: finish a
 * payload before the reader's next event); `inner` is valid until the following next.
 *
 * An inner event is as the server wrote it (no checksum: has_checksum false), except that its
 * header.next_pos, file and offset are the payload event's (the server writes next position 0
 * inside): a position taken at any of them resumes after the whole payload.
 *
 * The uncompressed size the event claims is checked before anything is inflated: at least one
 * event header, at most DM_BINLOG_UNCOMPRESSED_MAX and at most what zstd can make of the
 * compressed bytes (32768:1); the data must inflate to exactly that size and no inner event may
 * run past it. Errors (-1): DM_ERR_BINLOG_CORRUPT (damaged fields, sizes beyond those bounds,
 * damaged or cut zstd data, data inflating past or short of its claim, an inner event cut or
 * longer than what is left), DM_ERR_BINLOG_UNSUPPORTED (a compression type other than zstd or
 * none), DM_ERR_NO_MEMORY. Lives in its own object file (binlog_payload.c): only a unit that calls
 * it links libzstd.
 */
#define DM_BINLOG_PAYLOAD_ZSTD 0
#define DM_BINLOG_PAYLOAD_NONE 255
typedef struct dm_binlog_payload dm_binlog_payload;
typedef struct dm_binlog_payload_info {
  uint64_t compression;       /* DM_BINLOG_PAYLOAD_* */
  uint64_t payload_size;      /* compressed bytes in the event */
  uint64_t uncompressed_size; /* what the inner events take together */
} dm_binlog_payload_info;
int dm_binlog_payload_new(dm_binlog_payload **out, dm_error *err);
/* Starts reading the payload event ev (its fields are checked here). 0, or -1 with err. */
int dm_binlog_payload_begin(dm_binlog_payload *p, const dm_binlog_format *fmt,
                            const dm_binlog_event *ev, dm_error *err);
/* The next inner event: 1 and *inner; 0 at the end (the payload checked whole); -1 with err. */
int dm_binlog_payload_next(dm_binlog_payload *p, dm_binlog_event *inner, dm_error *err);
/* The fields of the payload begun last. */
const dm_binlog_payload_info *dm_binlog_payload_get_info(const dm_binlog_payload *p);
/* The window's size (bytes): for memory checks in tests. */
size_t dm_binlog_payload_buffer_size(const dm_binlog_payload *p);
void dm_binlog_payload_free(dm_binlog_payload *p); /* NULL is fine */

#ifdef __cplusplus
}
#endif
#endif /* DMHOST_BINLOG_H */
