/*
 * The stream reader: a binlog dump from a server through libmariadb's replication API, used for
 * transport only. Events are handed out in place (the library's packet copy, valid until the next
 * fetch); their headers, ROTATE and checksums are handled here from the raw bytes, because the
 * library mis-parses ROTATE after the first format description and its end-of-stream and error
 * both come back as NULL (measured with libmariadb 3.3).
 */
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* mysql.h first: the others use its types */
#include <mysql.h>

#include <errmsg.h>
#include <ma_pvio.h>
#include <mariadb_rpl.h>
#include <mysqld_error.h>

#include "binlog_internal.h"
#include "dmhost/db.h"

/* Blocks an event's memroot may have allocated before the event is replaced (libmariadb 3.3.20
 * stays at 5: it starts again from one block at each fetch). */
#define STREAM_EVENT_MAX_BLOCKS 64

typedef struct stream_reader {
  struct dm_binlog_reader base;
  MYSQL *mysql;
  MARIADB_RPL *rpl;
  MARIADB_RPL_EVENT *ev;
  char where[300];                    /* "host:port" for messages */
  char ev_file[DM_POSITION_NAME_MAX]; /* a ROTATE's own file, while base.file names the next */
  uint8_t server_alg;                 /* @@global.binlog_checksum */
  bool seen_fde;
  bool failed;
  bool ended;
  /* A duplicate of the connection's socket, ours until close: interrupt shuts it down from
   * another thread without touching the MYSQL handle, and the descriptor cannot be reused under
   * it even if the library closes its own after an error. -1 until connected. */
  int wake_fd;
} stream_reader;

/* Maps a server or client error to our codes: purged binlogs are not resumable, a broken
 * connection is. */
static int stream_error(stream_reader *r, unsigned no, const char *msg, const char *doing,
                        dm_error *err) {
  char raw[DM_ERROR_RAW_MAX];
  snprintf(raw, sizeof raw, "error %u: %s", no, msg && msg[0] ? msg : "(no message)");
  if (no == ER_MASTER_FATAL_ERROR_READING_BINLOG) { /* 1236 */
    dm_error_set(err, DM_ERR_BINLOG_PURGED, raw,
                 "source %s cannot send the binlog from %s:%" PRIu64 " (%s): %s", r->where,
                 r->base.file[0] ? r->base.file : "(GTID start)", r->base.pos, doing,
                 msg ? msg : "");
  } else if (no >= CR_MIN_ERROR && no <= CR_MAX_ERROR) {
    dm_error_set(err, DM_ERR_DB_CONNECT, raw,
                 "source %s: connection lost or silent while %s at %s:%" PRIu64
                 "; reconnect and resume from there",
                 r->where, doing, r->base.file, r->base.pos);
  } else {
    dm_error_set(err, DM_ERR_DB_QUERY, raw, "source %s refused %s: %s", r->where, doing,
                 msg ? msg : "");
  }
  return -1;
}

static void stream_close(dm_binlog_reader *base) {
  stream_reader *r = (stream_reader *)base;
  if (r->wake_fd >= 0)
    close(r->wake_fd);
  if (r->ev)
    mariadb_free_rpl_event(r->ev);
  if (r->rpl)
    mariadb_rpl_close(r->rpl);
  if (r->mysql)
    mysql_close(r->mysql);
  free(r);
}

static void stream_interrupt(dm_binlog_reader *base) {
  stream_reader *r = (stream_reader *)base;
  /* shutdown acts on the socket both descriptors name: a fetch blocked in recv() returns */
  if (r->wake_fd >= 0)
    shutdown(r->wake_fd, SHUT_RDWR);
}

/* Bytes of the stream already here: in libmariadb's read-ahead cache (ma_pvio.h, an installed
 * header: a fetch reads the socket 16 KiB at a time and keeps the rest there), or on the socket.
 * A TLS library's decrypted bytes are not seen: then the answer is a false "no", which costs the
 * caller a wait it did not need, never an event. */
static bool stream_pending(dm_binlog_reader *base) {
  stream_reader *r = (stream_reader *)base;
  if (r->ended || r->failed || r->wake_fd < 0 || atomic_load(&r->base.interrupted))
    return true; /* next returns at once */
  const MARIADB_PVIO *p = r->mysql->net.pvio;
  if (p && p->cache && p->cache_pos < p->cache + p->cache_size)
    return true;
  struct pollfd pfd = {.fd = r->wake_fd, .events = POLLIN};
  return poll(&pfd, 1, 0) > 0;
}

static int stream_fd(const dm_binlog_reader *base) {
  return ((const stream_reader *)base)->wake_fd;
}

static int stream_next(dm_binlog_reader *base, dm_binlog_event *ev, dm_error *err) {
  stream_reader *r = (stream_reader *)base;
  if (r->failed) {
    dm_error_set(err, DM_ERR_INTERNAL, NULL,
                 "source %s: the stream reader failed earlier; close it and open a new one",
                 r->where);
    return -1;
  }
  if (r->ended || atomic_load(&r->base.interrupted))
    return 0;
  /* The previous event is handed back for reuse (no allocation of an event per fetch). When a
   * fetch fails, libmariadb 3.3 has already freed the event it was given (freeing it again was
   * the crash seen before): from then on it is not ours, whatever the library version does. */
  if (r->ev && r->ev->memroot.block_num > STREAM_EVENT_MAX_BLOCKS) {
    /* A library whose memroot keeps counting blocks across fetches would make each new block
     * larger than the last (block_size x block_num / 4): start a fresh event now and then. */
    mariadb_free_rpl_event(r->ev);
    r->ev = NULL;
  }
  MARIADB_RPL_EVENT *e = mariadb_rpl_fetch(r->rpl, r->ev);
  if (!e)
    r->ev = NULL;
  if (!e) {
    if (atomic_load(&r->base.interrupted))
      return 0;
    unsigned no = mysql_errno(r->mysql);
    if (no == 0 && mariadb_rpl_errno(r->rpl) != 0) {
      r->failed = true;
      return stream_error(r, mariadb_rpl_errno(r->rpl), mariadb_rpl_error(r->rpl), "reading events",
                          err);
    }
    if (no == 0) {
      r->ended = true; /* a non-blocking dump reached the end of the source's binlog */
      return 0;
    }
    r->failed = true;
    return stream_error(r, no, mysql_error(r->mysql), "reading events", err);
  }
  r->ev = e;
  const uint8_t *raw = e->raw_data + e->raw_data_ofs;
  size_t len = e->raw_data_size > e->raw_data_ofs ? e->raw_data_size - e->raw_data_ofs : 0;
  dm_binlog_format *fmt = &r->base.fmt;
  if (!r->seen_fde)
    fmt->checksum_alg = r->server_alg;
  if (len >= DM_BINLOG_HEADER_LEN && bl_le32(raw + 9) < len)
    len = bl_le32(raw + 9); /* trailing bytes past the event (none expected) are not ours */
  uint64_t off = r->base.pos;
  if (len >= DM_BINLOG_HEADER_LEN) {
    uint32_t next = bl_le32(raw + 13), size = bl_le32(raw + 9);
    if (next >= size && !(bl_le16(raw + 17) & DM_BINLOG_F_ARTIFICIAL) &&
        raw[4] != DM_BINLOG_HEARTBEAT)
      off = next - size;
  }
  if (dm_binlog_event_from_bytes(raw, len, fmt, r->base.verify, r->base.file, off, ev, err) < 0) {
    char msg[sizeof err->message];
    dm_strlcpy(msg, err->message, sizeof msg);
    dm_error_set(err, DM_ERR_BINLOG_CORRUPT, NULL, "%s (stream from %s)", msg, r->where);
    r->failed = true;
    return -1;
  }
  const dm_binlog_event_header *h = &ev->header;
  ev->artificial = (h->flags & DM_BINLOG_F_ARTIFICIAL) || h->type == DM_BINLOG_HEARTBEAT ||
                   h->type == DM_BINLOG_HEARTBEAT_V2 || h->next_pos == 0;
  switch (h->type) {
  case DM_BINLOG_FORMAT_DESCRIPTION:
    if (dm_binlog_decode_format(ev, fmt, err) < 0) {
      r->failed = true;
      return -1;
    }
    r->seen_fde = true;
    break;
  case DM_BINLOG_ROTATE: {
    dm_binlog_rotate rot;
    if (dm_binlog_decode_rotate(fmt, ev, &rot, err) < 0) {
      r->failed = true;
      return -1;
    }
    if (!ev->artificial)
      r->base.pos = h->next_pos; /* a real ROTATE ends its file: returned at its own place */
    ev->offset = off;
    dm_strlcpy(r->ev_file, r->base.file, sizeof r->ev_file);
    ev->file = r->ev_file;
    /* name and position of the next file take effect after this event */
    char name[DM_POSITION_NAME_MAX];
    memcpy(name, rot.next_file.ptr, rot.next_file.len);
    name[rot.next_file.len] = '\0';
    dm_strlcpy(r->base.file, name, sizeof r->base.file);
    r->base.pos = rot.position;
    return 1;
  }
  case DM_BINLOG_START_ENCRYPTION:
    dm_error_set(err, DM_ERR_BINLOG_UNSUPPORTED, NULL,
                 "source %s: binlog %s is encrypted from offset %" PRIu64
                 " (START_ENCRYPTION): encrypted binlogs cannot be read",
                 r->where, r->base.file, off);
    r->failed = true;
    return -1;
  default:
    break;
  }
  if (!ev->artificial)
    r->base.pos = h->next_pos;
  else if (h->type == DM_BINLOG_HEARTBEAT && h->next_pos)
    r->base.pos = h->next_pos; /* the source says where it is: nothing was missed */
  return 1;
}

static const bl_reader_ops stream_ops = {
    .next = stream_next,
    .interrupt = stream_interrupt,
    .close = stream_close,
    .pending = stream_pending,
    .fd = stream_fd,
};

static int stream_query(stream_reader *r, const char *sql, dm_error *err) {
  if (mysql_query(r->mysql, sql) != 0)
    return stream_error(r, mysql_errno(r->mysql), mysql_error(r->mysql), sql, err);
  MYSQL_RES *res = mysql_store_result(r->mysql);
  if (res)
    mysql_free_result(res);
  return 0;
}

/* A MariaDB GTID position is digits, '-' and ','; anything else is refused before it reaches SQL.
 */
static bool stream_gtid_ok(const char *g) {
  for (const char *p = g; *p; p++)
    if (!((*p >= '0' && *p <= '9') || *p == '-' || *p == ',' || *p == ' '))
      return false;
  return true;
}

int dm_binlog_reader_open_stream(dm_binlog_reader **out, const dm_binlog_stream_options *opts,
                                 dm_error *err) {
  *out = NULL;
  if (!opts || !opts->source || !opts->source->host) {
    dm_error_set(err, DM_ERR_INTERNAL, NULL, "dm_binlog_reader_open_stream: no source endpoint");
    return -1;
  }
  bool gtid_start = opts->gtid && opts->gtid[0];
  if (!gtid_start && (!opts->file || !opts->file[0])) {
    dm_error_set(err, DM_ERR_INTERNAL, NULL,
                 "dm_binlog_reader_open_stream: give a start file or a GTID position");
    return -1;
  }
  if (gtid_start && !stream_gtid_ok(opts->gtid)) {
    dm_error_set(err, DM_ERR_CONFIG_INVALID, NULL,
                 "binlog stream: GTID position '%s' is not a MariaDB GTID list (D-S-N,...)",
                 opts->gtid);
    return -1;
  }
  if (opts->server_id == 0) {
    dm_error_set(err, DM_ERR_CONFIG_INVALID, NULL,
                 "binlog stream: server_id 0 is refused by the source; give the relay its own id");
    return -1;
  }
  stream_reader *r = calloc(1, sizeof *r);
  if (!r) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "binlog stream: no memory for a reader");
    return -1;
  }
  r->base.ops = &stream_ops;
  r->base.verify = !opts->no_verify_checksum;
  dm_binlog_format_default(&r->base.fmt, DM_BINLOG_CHECKSUM_OFF);
  const dm_db_endpoint *ep = opts->source;
  snprintf(r->where, sizeof r->where, "%s:%d", ep->host, ep->port);
  dm_strlcpy(r->base.file, gtid_start ? "" : opts->file, sizeof r->base.file);
  r->base.pos = gtid_start ? 4 : (opts->pos < 4 ? 4 : opts->pos);

  r->wake_fd = -1;
  unsigned read_to = opts->read_timeout_s;
  if (!read_to && opts->heartbeat_ms) {
    read_to = (unsigned)(3ull * opts->heartbeat_ms / 1000);
    if (read_to < 10)
      read_to = 10;
  }
  dm_db_connect_opts co = {.who = "binlog stream",
                           .side = DM_DB_SOURCE,
                           .connect_timeout_s = opts->connect_timeout_s,
                           .read_timeout_s = read_to,
                           .write_timeout_s = 30,
                           .endpoint_size = opts->source_size};
  r->mysql = dm_db_connect(ep, &co, err);
  if (!r->mysql) {
    stream_close(&r->base);
    return -1;
  }
  my_socket sock = mysql_get_socket(r->mysql);
  r->wake_fd = sock == MARIADB_INVALID_SOCKET ? -1 : fcntl(sock, F_DUPFD_CLOEXEC, 0);
  char sql[2300];
  if (mysql_query(r->mysql, "SELECT @@global.binlog_checksum") != 0) {
    stream_error(r, mysql_errno(r->mysql), mysql_error(r->mysql), "SELECT @@binlog_checksum", err);
    goto fail;
  }
  MYSQL_RES *res = mysql_store_result(r->mysql);
  MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
  r->server_alg = row && row[0] && strcmp(row[0], "CRC32") == 0 ? DM_BINLOG_CHECKSUM_CRC32
                                                                : DM_BINLOG_CHECKSUM_OFF;
  if (res)
    mysql_free_result(res);
  /* Without it the source refuses to send checksummed events; capability 4: GTID-aware. */
  if (stream_query(r,
                   "SET @master_binlog_checksum = @@global.binlog_checksum, "
                   "@mariadb_slave_capability = 4",
                   err) < 0)
    goto fail;
  if (opts->heartbeat_ms) {
    snprintf(sql, sizeof sql, "SET @master_heartbeat_period = %" PRIu64,
             (uint64_t)opts->heartbeat_ms * UINT64_C(1000000));
    if (stream_query(r, sql, err) < 0)
      goto fail;
  }
  if (gtid_start) {
    snprintf(sql, sizeof sql,
             "SET @slave_connect_state = '%s', @slave_gtid_strict_mode = 1, "
             "@slave_gtid_ignore_duplicates = 0",
             opts->gtid);
    if (stream_query(r, sql, err) < 0)
      goto fail;
  }
  r->rpl = mariadb_rpl_init(r->mysql);
  if (!r->rpl) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "binlog stream: mariadb_rpl_init failed");
    goto fail;
  }
  const char *fname = gtid_start ? "" : opts->file;
  unsigned int flags = 0;
  if (!opts->omit_annotate_rows)
    flags |= MARIADB_RPL_BINLOG_SEND_ANNOTATE_ROWS;
  if (opts->non_blocking)
    flags |= MARIADB_RPL_BINLOG_DUMP_NON_BLOCK;
  mariadb_rpl_optionsv(r->rpl, MARIADB_RPL_FILENAME, fname, strlen(fname));
  mariadb_rpl_optionsv(r->rpl, MARIADB_RPL_START, (unsigned long)r->base.pos);
  mariadb_rpl_optionsv(r->rpl, MARIADB_RPL_SERVER_ID, (unsigned int)opts->server_id);
  mariadb_rpl_optionsv(r->rpl, MARIADB_RPL_FLAGS, flags);
  /* checksums are verified here, from the raw bytes */
  mariadb_rpl_optionsv(r->rpl, MARIADB_RPL_VERIFY_CHECKSUM, 0);
  if (mariadb_rpl_open(r->rpl) != 0) {
    unsigned no = mysql_errno(r->mysql) ? mysql_errno(r->mysql) : mariadb_rpl_errno(r->rpl);
    const char *msg = mysql_errno(r->mysql) ? mysql_error(r->mysql) : mariadb_rpl_error(r->rpl);
    stream_error(r, no, msg, "COM_BINLOG_DUMP", err);
    goto fail;
  }
  *out = &r->base;
  return 0;
fail:
  stream_close(&r->base);
  return -1;
}
