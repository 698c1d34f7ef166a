/*
 * MySQL 8 TRANSACTION_PAYLOAD (binlog_transaction_compression = ON): one event holding a whole
 * transaction's events (BEGIN, table maps, rows, XID/COMMIT; its GTID event stays outside, before
 * it), compressed with zstd. Handed out one inner event at a time.
 *
 * Layout (MySQL's Transaction_payload_event; the format description declares a post-header of 40
 * bytes for type 40, but the event has none: MySQL's own decoder reads the fields from the start of
 * the body, and so does this one). Fields, each: type, length, value, all three MySQL packed
 * integers; type 0 ends the list, then the payload:
 *   1 payload size (compressed bytes that follow), 2 compression type (0 zstd, 255 none),
 *   3 uncompressed size. Unknown field types are skipped by their length.
 * The inner events are plain v4 events without checksums and with next position 0.
 *
 * Streamed: zstd inflates into a window that grows only to the largest inner event, so memory is
 * bounded by that, not by the transaction. The uncompressed size is the event's word: at most
 * DM_BINLOG_UNCOMPRESSED_MAX and at most what zstd can make of the compressed bytes (an RLE block
 * of 4 bytes makes 128 KiB: 32768:1), and the stream must end exactly there (a bomb stops at the
 * claim). libzstd is linked only by units that call these functions (own object file).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "binlog_internal.h"

#define PAYLOAD_FIELD_END 0
#define PAYLOAD_FIELD_SIZE 1
#define PAYLOAD_FIELD_COMPRESSION 2
#define PAYLOAD_FIELD_UNCOMPRESSED_SIZE 3
#define PAYLOAD_ZSTD_MAX_RATIO 32768u
#define PAYLOAD_WINDOW_MIN (64u * 1024u)

struct dm_binlog_payload {
  ZSTD_DCtx *zd;
  dm_binlog_event outer; /* the payload event (its raw bytes are the caller's) */
  dm_binlog_payload_info info;
  const uint8_t *in; /* compressed bytes */
  size_t in_len, in_pos;
  bool zstd_done; /* the frame ended */
  uint8_t *buf;   /* inflated bytes [start, end) not handed out yet */
  size_t cap, start, end;
  uint64_t produced; /* inflated so far */
  uint32_t last;     /* size of the event handed out last (dropped at the next call) */
  uint64_t n_events;
};

int dm_binlog_payload_new(dm_binlog_payload **out, dm_error *err) {
  dm_binlog_payload *p = calloc(1, sizeof *p);
  if (p)
    p->zd = ZSTD_createDCtx();
  if (!p || !p->zd) {
    free(p);
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "no memory for a transaction payload reader");
    return -1;
  }
  *out = p;
  return 0;
}

void dm_binlog_payload_free(dm_binlog_payload *p) {
  if (!p)
    return;
  ZSTD_freeDCtx(p->zd);
  free(p->buf);
  free(p);
}

/* A corrupt payload: names the outer event and what is wrong. */
static int payload_corrupt(const dm_binlog_payload *p, dm_error *err, const char *what) {
  return bl_corrupt(err, &p->outer, what);
}

int dm_binlog_payload_begin(dm_binlog_payload *p, const dm_binlog_format *fmt,
                            const dm_binlog_event *ev, dm_error *err) {
  (void)fmt;
  p->outer = *ev;
  p->in = NULL;
  p->in_len = p->in_pos = 0;
  p->start = p->end = 0;
  p->produced = 0;
  p->last = 0;
  p->n_events = 0;
  p->zstd_done = false;
  memset(&p->info, 0, sizeof p->info);
  if (ev->header.type != DM_BINLOG_TRANSACTION_PAYLOAD)
    return payload_corrupt(p, err, "not a transaction payload event");
  bl_cur c = bl_cur_make(ev->body, ev->body_len);
  bool has_size = false, has_usize = false;
  for (;;) {
    uint64_t type = bl_packed(&c);
    if (c.bad)
      return payload_corrupt(p, err, "the field list runs past the event");
    if (type == PAYLOAD_FIELD_END)
      break;
    uint64_t len = bl_packed(&c);
    if (c.bad || len > bl_left(&c))
      return payload_corrupt(p, err, "a field runs past the event");
    bl_cur v = bl_cur_make(c.p, (size_t)len);
    bl_bytes(&c, (size_t)len);
    uint64_t val = 0;
    if (type <= PAYLOAD_FIELD_UNCOMPRESSED_SIZE) {
      val = bl_packed(&v);
      if (v.bad)
        return payload_corrupt(p, err, "a field's value runs past its length");
    }
    if (type == PAYLOAD_FIELD_SIZE) {
      p->info.payload_size = val;
      has_size = true;
    } else if (type == PAYLOAD_FIELD_COMPRESSION) {
      p->info.compression = val;
    } else if (type == PAYLOAD_FIELD_UNCOMPRESSED_SIZE) {
      p->info.uncompressed_size = val;
      has_usize = true;
    }
  }
  size_t left = bl_left(&c);
  if (!has_size || p->info.payload_size != left) {
    char what[128];
    snprintf(what, sizeof what, "payload size %" PRIu64 "%s, %zu bytes follow the fields",
             p->info.payload_size, has_size ? "" : " (missing)", left);
    return payload_corrupt(p, err, what);
  }
  if (p->info.compression != DM_BINLOG_PAYLOAD_ZSTD &&
      p->info.compression != DM_BINLOG_PAYLOAD_NONE) {
    dm_error_set(err, DM_ERR_BINLOG_UNSUPPORTED, NULL,
                 "binlog %s: TRANSACTION_PAYLOAD event at offset %" PRIu64
                 ": compression type %" PRIu64 " (only zstd, 0, and none, 255, are known)",
                 ev->file && ev->file[0] ? ev->file : "(memory)", ev->offset, p->info.compression);
    return -1;
  }
  if (!has_usize)
    p->info.uncompressed_size = p->info.compression == DM_BINLOG_PAYLOAD_NONE ? left : 0;
  uint64_t usize = p->info.uncompressed_size;
  uint64_t most = p->info.compression == DM_BINLOG_PAYLOAD_NONE
                      ? left
                      : (uint64_t)left * PAYLOAD_ZSTD_MAX_RATIO + 64;
  if (usize < DM_BINLOG_HEADER_LEN || usize > DM_BINLOG_UNCOMPRESSED_MAX || usize > most ||
      (p->info.compression == DM_BINLOG_PAYLOAD_NONE && usize != left)) {
    char what[200];
    snprintf(what, sizeof what,
             "claims %" PRIu64 " uncompressed bytes from %zu (at least one event header, at most "
             "%" PRIu64 " and %u bytes are possible)",
             usize, left, most, (unsigned)DM_BINLOG_UNCOMPRESSED_MAX);
    return payload_corrupt(p, err, what);
  }
  p->in = c.p;
  p->in_len = left;
  ZSTD_DCtx_reset(p->zd, ZSTD_reset_session_only);
  return 0;
}

/* Makes room for `need` bytes from p->start in the window (moving what is there to the front). */
static int payload_room(dm_binlog_payload *p, size_t need, dm_error *err) {
  if (p->start > 0) {
    memmove(p->buf, p->buf + p->start, p->end - p->start);
    p->end -= p->start;
    p->start = 0;
  }
  if (p->cap >= need && p->cap >= PAYLOAD_WINDOW_MIN)
    return 0;
  size_t cap = need > PAYLOAD_WINDOW_MIN ? need : PAYLOAD_WINDOW_MIN;
  uint8_t *nb = realloc(p->buf, cap);
  if (!nb) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL,
                 "binlog %s: no memory for a %zu-byte event inside the transaction payload at "
                 "offset %" PRIu64,
                 p->outer.file && p->outer.file[0] ? p->outer.file : "(memory)", cap,
                 p->outer.offset);
    return -1;
  }
  p->buf = nb;
  p->cap = cap;
  return 0;
}

/* Inflates until `need` bytes are in the window from p->start, or the stream ends. */
static int payload_fill(dm_binlog_payload *p, size_t need, dm_error *err) {
  while (p->end - p->start < need) {
    if ((p->end == p->cap || p->cap - p->start < need) && payload_room(p, need, err) < 0)
      return -1;
    /* never more than the claim: a stream inflating past it is caught, not followed */
    uint64_t claim_left = p->info.uncompressed_size - p->produced;
    size_t room = p->cap - p->end;
    if (room > claim_left)
      room = (size_t)claim_left;
    if (p->info.compression == DM_BINLOG_PAYLOAD_NONE) {
      size_t n = p->in_len - p->in_pos < room ? p->in_len - p->in_pos : room;
      if (n == 0)
        return 0;
      memcpy(p->buf + p->end, p->in + p->in_pos, n);
      p->in_pos += n;
      p->end += n;
      p->produced += n;
      continue;
    }
    if (p->zstd_done)
      return 0;
    if (room == 0) {
      /* the claim is used up: one byte more tells a stream that goes on from one that ends */
      uint8_t probe;
      ZSTD_outBuffer o = {&probe, 1, 0};
      ZSTD_inBuffer i = {p->in, p->in_len, p->in_pos};
      size_t r = ZSTD_decompressStream(p->zd, &o, &i);
      p->in_pos = i.pos;
      if (ZSTD_isError(r))
        return payload_corrupt(p, err, ZSTD_getErrorName(r));
      if (o.pos > 0)
        return payload_corrupt(p, err, "zstd data inflates past the size it claims");
      if (r == 0)
        p->zstd_done = true;
      else if (i.pos == i.size)
        return payload_corrupt(p, err, "zstd data is cut short");
      if (!p->zstd_done)
        continue;
      return 0;
    }
    ZSTD_outBuffer o = {p->buf + p->end, room, 0};
    ZSTD_inBuffer i = {p->in, p->in_len, p->in_pos};
    size_t r = ZSTD_decompressStream(p->zd, &o, &i);
    p->in_pos = i.pos;
    p->end += o.pos;
    p->produced += o.pos;
    if (ZSTD_isError(r))
      return payload_corrupt(p, err, ZSTD_getErrorName(r));
    if (r == 0)
      p->zstd_done = true;
    else if (o.pos == 0 && i.pos == i.size)
      return payload_corrupt(p, err, "zstd data is cut short");
  }
  return 0;
}

int dm_binlog_payload_next(dm_binlog_payload *p, dm_binlog_event *inner, dm_error *err) {
  if (!p->in)
    return payload_corrupt(p, err, "no payload begun");
  p->start += p->last;
  p->last = 0;
  if (payload_fill(p, DM_BINLOG_HEADER_LEN, err) < 0)
    return -1;
  size_t have = p->end - p->start;
  if (have == 0) {
    /* the end: all of the claim, the whole frame, every compressed byte */
    if (p->produced != p->info.uncompressed_size) {
      char what[160];
      snprintf(what, sizeof what,
               "the payload inflates to %" PRIu64 " bytes, short of the %" PRIu64 " it claims",
               p->produced, p->info.uncompressed_size);
      return payload_corrupt(p, err, what);
    }
    if (payload_fill(p, 1, err) < 0) /* consumes the frame's end (and checksum) */
      return -1;
    if ((p->info.compression == DM_BINLOG_PAYLOAD_ZSTD && !p->zstd_done) || p->in_pos != p->in_len)
      return payload_corrupt(p, err, "bytes after the end of the payload's zstd frame");
    p->in = NULL;
    return 0;
  }
  if (have < DM_BINLOG_HEADER_LEN)
    return payload_corrupt(p, err, "the payload ends inside an event header");
  dm_binlog_event_header h;
  if (dm_binlog_parse_header(p->buf + p->start, have, &h, err) < 0)
    return payload_corrupt(p, err, "an event inside the payload has a size below its header");
  uint64_t in_window = p->end - p->start;
  uint64_t rest = p->info.uncompressed_size - p->produced + in_window;
  if (h.event_size > rest) {
    char what[200];
    snprintf(what, sizeof what,
             "event %" PRIu64 " inside the payload (%s) claims %" PRIu32 " bytes, %" PRIu64
             " are left of the payload",
             p->n_events + 1, dm_binlog_event_type_name(h.type), h.event_size, rest);
    return payload_corrupt(p, err, what);
  }
  if (payload_fill(p, h.event_size, err) < 0)
    return -1;
  if (p->end - p->start < h.event_size)
    return payload_corrupt(p, err, "the payload ends inside an event");
  const uint8_t *raw = p->buf + p->start;
  memset(inner, 0, sizeof *inner);
  inner->header = h;
  /* Inner events say next position 0: they take the payload's, so a position taken at any of
   * them resumes after the whole payload (as MySQL's applier does). */
  inner->header.next_pos = p->outer.header.next_pos;
  inner->raw = raw;
  inner->raw_len = h.event_size;
  inner->body = raw + DM_BINLOG_HEADER_LEN;
  inner->body_len = h.event_size - DM_BINLOG_HEADER_LEN;
  inner->has_checksum = false;
  inner->artificial = p->outer.artificial;
  inner->file = p->outer.file;
  inner->offset = p->outer.offset;
  p->last = h.event_size;
  p->n_events++;
  return 1;
}

const dm_binlog_payload_info *dm_binlog_payload_get_info(const dm_binlog_payload *p) {
  return &p->info;
}

size_t dm_binlog_payload_buffer_size(const dm_binlog_payload *p) {
  return p->cap;
}
