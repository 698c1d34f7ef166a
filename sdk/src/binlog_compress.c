/*
 * MariaDB compressed events (log_bin_compress): QUERY_COMPRESSED (165) and the compressed rows
 * events (166-171) made back into the plain event they stand for.
 *
 * Only the tail of such an event is compressed: the statement text of a query (after post-header,
 * status variables and database name), the row images of a rows event (after post-header, the
 * v2 extra header, the column count and the column bitmaps). The tail starts with a 1-byte header
 * (high bit set, bits 4-6: algorithm, 0 = zlib; low 3 bits: how many bytes hold the uncompressed
 * length, 1-4) and that length big-endian, then a zlib stream.
 *
 * The uncompressed length is the event's word, not a fact: it is bounded before anything is
 * allocated (DM_BINLOG_UNCOMPRESSED_MAX, and what zlib can make of the compressed bytes at all)
 * and the zlib output must fill exactly that length, no more (a bomb stops at the bound).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "binlog_internal.h"

/* deflate's best ratio is 1032:1 (zlib's tech notes); a stream claiming more is lying. */
#define BL_ZLIB_MAX_RATIO 1032u

bool dm_binlog_is_compressed_event(uint8_t type) {
  return type >= DM_BINLOG_QUERY_COMPRESSED && type <= DM_BINLOG_DELETE_ROWS_COMPRESSED_V2;
}

/* Offset in the body where the compressed tail starts, and the plain type; -1 if the event is
 * too short to say. */
static int compress_tail(const dm_binlog_format *fmt, const dm_binlog_event *ev, size_t *tail,
                         uint8_t *plain) {
  uint8_t t = ev->header.type;
  bl_cur c = bl_cur_make(ev->body, ev->body_len);
  if (t == DM_BINLOG_QUERY_COMPRESSED) {
    size_t ph = bl_post_header_len(fmt, t, 13);
    if (ph < 13 || bl_left(&c) < ph)
      return -1;
    uint8_t db_len = ev->body[8];
    uint16_t status_len = bl_le16(ev->body + 11);
    bl_bytes(&c, ph);
    bl_bytes(&c, (size_t)status_len + db_len + 1);
    *plain = DM_BINLOG_QUERY;
  } else {
    /* table id and flags (8 bytes); a 10-byte post-header ends with the length of the v2 extra
     * header, which counts its own 2 bytes */
    size_t ph = bl_post_header_len(fmt, t, t >= DM_BINLOG_WRITE_ROWS_COMPRESSED_V2 ? 10 : 8);
    if (ph != 8 && ph != 10)
      return -1;
    bl_bytes(&c, 8);
    if (ph == 10) {
      uint64_t extra = bl_uint(&c, 2);
      if (extra < 2)
        return -1;
      bl_bytes(&c, (size_t)extra - 2);
    }
    if (t >= DM_BINLOG_WRITE_ROWS_COMPRESSED_V2)
      *plain = (uint8_t)(t - DM_BINLOG_WRITE_ROWS_COMPRESSED_V2 + DM_BINLOG_WRITE_ROWS_V2);
    else
      *plain = (uint8_t)(t - DM_BINLOG_WRITE_ROWS_COMPRESSED_V1 + DM_BINLOG_WRITE_ROWS_V1);
    uint64_t width = bl_packed(&c);
    if (width > UINT32_MAX)
      return -1;
    size_t bitmap = (size_t)((width + 7) / 8);
    bl_bytes(&c, bitmap);
    if (*plain == DM_BINLOG_UPDATE_ROWS_V1 || *plain == DM_BINLOG_UPDATE_ROWS_V2)
      bl_bytes(&c, bitmap);
  }
  if (c.bad)
    return -1;
  *tail = (size_t)(c.p - ev->body);
  return 0;
}

int dm_binlog_event_uncompress(const dm_binlog_format *fmt, const dm_binlog_event *ev,
                               uint8_t **buf, size_t *cap, dm_binlog_event *out, dm_error *err) {
  if (!dm_binlog_is_compressed_event(ev->header.type))
    return bl_corrupt(err, ev, "not a compressed event");
  size_t tail;
  uint8_t plain;
  if (compress_tail(fmt, ev, &tail, &plain) < 0)
    return bl_corrupt(err, ev, "body ends before its compressed part");
  const uint8_t *z = ev->body + tail;
  size_t zlen = ev->body_len - tail;
  if (zlen < 1 || (z[0] & 0x80) == 0)
    return bl_corrupt(err, ev, "compressed part without its header byte");
  if ((z[0] & 0x70) != 0) {
    dm_error_set(err, DM_ERR_BINLOG_UNSUPPORTED, NULL,
                 "binlog %s: %s event at offset %" PRIu64
                 ": compression algorithm %u (only zlib, 0, is known)",
                 ev->file && ev->file[0] ? ev->file : "(memory)",
                 dm_binlog_event_type_name(ev->header.type), ev->offset, (z[0] >> 4) & 7u);
    return -1;
  }
  unsigned lenlen = z[0] & 0x07;
  if (lenlen < 1 || lenlen > 4 || zlen < 1 + (size_t)lenlen + 1)
    return bl_corrupt(err, ev, "compressed part with a bad length header");
  uint64_t want = bl_be(z + 1, lenlen);
  const uint8_t *zdata = z + 1 + lenlen;
  size_t zdata_len = zlen - 1 - lenlen;
  if (want == 0 || want > DM_BINLOG_UNCOMPRESSED_MAX ||
      want > (uint64_t)zdata_len * BL_ZLIB_MAX_RATIO + 64) {
    char what[160];
    snprintf(what, sizeof what,
             "claims %" PRIu64 " uncompressed bytes from %zu compressed (at most %u:1 and %u "
             "bytes are possible)",
             want, zdata_len, BL_ZLIB_MAX_RATIO, (unsigned)DM_BINLOG_UNCOMPRESSED_MAX);
    return bl_corrupt(err, ev, what);
  }
  size_t head = DM_BINLOG_HEADER_LEN + tail;
  size_t csum = ev->has_checksum ? DM_BINLOG_CHECKSUM_LEN : 0;
  size_t total = head + (size_t)want + csum;
  if (*cap < total) {
    uint8_t *nb = realloc(*buf, total);
    if (!nb) {
      dm_error_set(err, DM_ERR_NO_MEMORY, NULL,
                   "binlog %s: no memory for a %zu-byte uncompressed event at offset %" PRIu64,
                   ev->file && ev->file[0] ? ev->file : "(memory)", total, ev->offset);
      return -1;
    }
    *buf = nb;
    *cap = total;
  }
  uint8_t *d = *buf;
  memcpy(d, ev->raw, head);
  uLongf got = (uLongf)want;
  int zr = uncompress(d + head, &got, zdata, (uLong)zdata_len);
  if (zr != Z_OK || got != want) {
    char what[160];
    snprintf(what, sizeof what,
             zr == Z_BUF_ERROR ? "zlib data inflates past the %" PRIu64 " bytes it claims"
             : zr == Z_OK      ? "zlib data inflates short of the %" PRIu64 " bytes it claims"
                               : "zlib data is damaged (%" PRIu64 " bytes claimed)",
             want);
    return bl_corrupt(err, ev, what);
  }
  d[4] = plain;
  uint32_t size = (uint32_t)total;
  d[9] = (uint8_t)size;
  d[10] = (uint8_t)(size >> 8);
  d[11] = (uint8_t)(size >> 16);
  d[12] = (uint8_t)(size >> 24);
  if (csum) {
    uint32_t crc = dm_binlog_crc32(0, d, total - csum);
    for (unsigned i = 0; i < 4; i++)
      d[total - csum + i] = (uint8_t)(crc >> (8 * i));
  }
  *out = *ev;
  out->header.type = plain;
  out->header.event_size = size;
  out->raw = d;
  out->raw_len = size;
  out->body = d + DM_BINLOG_HEADER_LEN;
  out->body_len = (uint32_t)(total - csum - DM_BINLOG_HEADER_LEN);
  return 0;
}
