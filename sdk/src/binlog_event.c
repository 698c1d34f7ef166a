/*
 * Binlog events: the common header, checksums, the format description, and the decoders of the
 * events that are not row events. Every decoder reads through a bl_cur bounded by the event body,
 * so damaged or hostile bytes give DM_ERR_BINLOG_CORRUPT, never a read past the event.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "binlog_internal.h"

const char *dm_binlog_event_type_name(int type) {
  switch (type) {
#define DM_BINLOG_EVENT_TYPE_CASE(name, code, who, what)                                           \
  case DM_BINLOG_##name:                                                                           \
    return #name;
    DM_BINLOG_EVENT_TYPES(DM_BINLOG_EVENT_TYPE_CASE)
#undef DM_BINLOG_EVENT_TYPE_CASE
  default:
    return "UNKNOWN";
  }
}

/* Post-header lengths of binlog v4 as MariaDB 10.x and MySQL 8.0 write them. */
static const struct {
  uint8_t type, len;
} event_default_post_header[] = {
    {DM_BINLOG_START_V3, 56},
    {DM_BINLOG_QUERY, 13},
    {DM_BINLOG_ROTATE, 8},
    {8, 4},
    {9, 4},
    {10, 4},
    {11, 4},
    {12, 18},
    {DM_BINLOG_FORMAT_DESCRIPTION, 84},
    {DM_BINLOG_BEGIN_LOAD_QUERY, 4},
    {DM_BINLOG_EXECUTE_LOAD_QUERY, 26},
    {DM_BINLOG_TABLE_MAP, 8},
    {DM_BINLOG_WRITE_ROWS_V1, 8},
    {DM_BINLOG_UPDATE_ROWS_V1, 8},
    {DM_BINLOG_DELETE_ROWS_V1, 8},
    {DM_BINLOG_INCIDENT, 2},
    {DM_BINLOG_WRITE_ROWS_V2, 10},
    {DM_BINLOG_UPDATE_ROWS_V2, 10},
    {DM_BINLOG_DELETE_ROWS_V2, 10},
    {DM_BINLOG_MYSQL_GTID, 42},
    {DM_BINLOG_MYSQL_ANONYMOUS_GTID, 42},
    {DM_BINLOG_TRANSACTION_CONTEXT, 18},
    {DM_BINLOG_VIEW_CHANGE, 52},
    {DM_BINLOG_PARTIAL_UPDATE_ROWS, 10},
    {DM_BINLOG_TRANSACTION_PAYLOAD, 40},
    {DM_BINLOG_BINLOG_CHECKPOINT, 4},
    {DM_BINLOG_GTID, 19},
    {DM_BINLOG_GTID_LIST, 4},
    {DM_BINLOG_QUERY_COMPRESSED, 13},
    {DM_BINLOG_WRITE_ROWS_COMPRESSED_V1, 8},
    {DM_BINLOG_UPDATE_ROWS_COMPRESSED_V1, 8},
    {DM_BINLOG_DELETE_ROWS_COMPRESSED_V1, 8},
    {DM_BINLOG_WRITE_ROWS_COMPRESSED_V2, 10},
    {DM_BINLOG_UPDATE_ROWS_COMPRESSED_V2, 10},
    {DM_BINLOG_DELETE_ROWS_COMPRESSED_V2, 10},
};

void dm_binlog_format_default(dm_binlog_format *fmt, uint8_t checksum_alg) {
  memset(fmt, 0, sizeof *fmt);
  fmt->binlog_version = 4;
  dm_strlcpy(fmt->server_version, "10.11.0-MariaDB", sizeof fmt->server_version);
  fmt->header_len = DM_BINLOG_HEADER_LEN;
  fmt->checksum_alg = checksum_alg;
  fmt->mariadb = true;
  fmt->version_major = 10;
  fmt->version_minor = 11;
  fmt->n_post_header = DM_BINLOG_DELETE_ROWS_COMPRESSED_V2;
  for (size_t i = 0; i < sizeof event_default_post_header / sizeof event_default_post_header[0];
       i++)
    fmt->post_header_len[event_default_post_header[i].type - 1] = event_default_post_header[i].len;
}

uint8_t dm_binlog_post_header_len(const dm_binlog_format *fmt, uint8_t type) {
  if (type == 0 || type > fmt->n_post_header)
    return 0;
  return fmt->post_header_len[type - 1];
}

size_t bl_post_header_len(const dm_binlog_format *fmt, uint8_t type, size_t fallback) {
  uint8_t n = dm_binlog_post_header_len(fmt, type);
  return n ? n : fallback;
}

int bl_corrupt(dm_error *err, const dm_binlog_event *ev, const char *what) {
  dm_error_set(err, DM_ERR_BINLOG_CORRUPT, NULL,
               "binlog %s: %s event at offset %" PRIu64 " (%u bytes): %s",
               ev->file && ev->file[0] ? ev->file : "(memory)",
               dm_binlog_event_type_name(ev->header.type), ev->offset, ev->raw_len, what);
  return -1;
}

int dm_binlog_parse_header(const uint8_t *raw, size_t len, dm_binlog_event_header *out,
                           dm_error *err) {
  if (len < DM_BINLOG_HEADER_LEN) {
    dm_error_set(err, DM_ERR_BINLOG_CORRUPT, NULL,
                 "binlog event header: %zu bytes, a header needs %d", len, DM_BINLOG_HEADER_LEN);
    return -1;
  }
  out->timestamp = bl_le32(raw);
  out->type = raw[4];
  out->server_id = bl_le32(raw + 5);
  out->event_size = bl_le32(raw + 9);
  out->next_pos = bl_le32(raw + 13);
  out->flags = bl_le16(raw + 17);
  if (out->event_size < DM_BINLOG_HEADER_LEN) {
    dm_error_set(err, DM_ERR_BINLOG_CORRUPT, NULL,
                 "binlog event header: event size %" PRIu32 " is below the header's %d bytes",
                 out->event_size, DM_BINLOG_HEADER_LEN);
    return -1;
  }
  return 0;
}

/* "10.11.6-MariaDB-log" -> 10, 11, 6 */
static void event_parse_version(const char *v, uint16_t out[3]) {
  out[0] = out[1] = out[2] = 0;
  for (int i = 0; i < 3 && *v; i++) {
    unsigned long n = 0;
    while (*v >= '0' && *v <= '9') {
      n = n * 10 + (unsigned long)(*v - '0');
      if (n > 65535)
        n = 65535;
      v++;
    }
    out[i] = (uint16_t)n;
    if (*v != '.')
      break;
    v++;
  }
}

/* Do format descriptions from this server carry a checksum algorithm byte? MySQL 5.6.1+ and
 * MariaDB 5.3+ do. */
static bool event_fde_has_alg(const char *version, const uint16_t v[3]) {
  if (strstr(version, "MariaDB") || strstr(version, "mariadb"))
    return v[0] > 5 || (v[0] == 5 && v[1] >= 3);
  return v[0] > 5 || (v[0] == 5 && (v[1] > 6 || (v[1] == 6 && v[2] >= 1)));
}

/* The checksum algorithm a format description names for itself, from its raw bytes. */
static uint8_t event_fde_alg(const uint8_t *raw, size_t len) {
  if (len < DM_BINLOG_HEADER_LEN + 57 + 5)
    return DM_BINLOG_CHECKSUM_UNDEF;
  char ver[51];
  memcpy(ver, raw + DM_BINLOG_HEADER_LEN + 2, 50);
  ver[50] = '\0';
  uint16_t v[3];
  event_parse_version(ver, v);
  if (!event_fde_has_alg(ver, v))
    return DM_BINLOG_CHECKSUM_UNDEF;
  return raw[len - 5];
}

int dm_binlog_event_from_bytes(const uint8_t *raw, size_t raw_len, const dm_binlog_format *fmt,
                               bool verify, const char *file, uint64_t offset, dm_binlog_event *ev,
                               dm_error *err) {
  memset(ev, 0, sizeof *ev);
  ev->file = file ? file : "";
  ev->offset = offset;
  if (dm_binlog_parse_header(raw, raw_len, &ev->header, err) < 0) {
    dm_error_set(err, DM_ERR_BINLOG_CORRUPT, NULL,
                 "binlog %s: bad event header at offset %" PRIu64 ": %s",
                 ev->file[0] ? ev->file : "(memory)", offset, err->message);
    return -1;
  }
  if (ev->header.event_size != raw_len) {
    dm_error_set(err, DM_ERR_BINLOG_CORRUPT, NULL,
                 "binlog %s: event at offset %" PRIu64 " says %" PRIu32 " bytes, %zu given",
                 ev->file[0] ? ev->file : "(memory)", offset, ev->header.event_size, raw_len);
    return -1;
  }
  ev->raw = raw;
  ev->raw_len = (uint32_t)raw_len;
  ev->body = raw + DM_BINLOG_HEADER_LEN;
  ev->body_len = (uint32_t)raw_len - DM_BINLOG_HEADER_LEN;
  uint8_t alg = ev->header.type == DM_BINLOG_FORMAT_DESCRIPTION ? event_fde_alg(raw, raw_len)
                                                                : fmt->checksum_alg;
  if (alg != DM_BINLOG_CHECKSUM_CRC32)
    return 0;
  if (ev->body_len < DM_BINLOG_CHECKSUM_LEN) {
    dm_error_set(err, DM_ERR_BINLOG_CORRUPT, NULL,
                 "binlog %s: %s event at offset %" PRIu64 " has %" PRIu32
                 " bytes, too few for its checksum",
                 ev->file[0] ? ev->file : "(memory)", dm_binlog_event_type_name(ev->header.type),
                 offset, ev->header.event_size);
    return -1;
  }
  ev->has_checksum = true;
  ev->body_len -= DM_BINLOG_CHECKSUM_LEN;
  if (!verify)
    return 0;
  uint32_t want = bl_le32(raw + raw_len - DM_BINLOG_CHECKSUM_LEN);
  uint32_t got;
  if (ev->header.type == DM_BINLOG_FORMAT_DESCRIPTION && (ev->header.flags & DM_BINLOG_F_IN_USE)) {
    /* The server checksums a format description without its in-use flag, which it clears in
     * place when it closes the file. */
    uint8_t hdr[DM_BINLOG_HEADER_LEN];
    memcpy(hdr, raw, sizeof hdr);
    hdr[17] &= (uint8_t)~DM_BINLOG_F_IN_USE;
    got = dm_binlog_crc32(0, hdr, sizeof hdr);
    got = dm_binlog_crc32(got, raw + DM_BINLOG_HEADER_LEN,
                          raw_len - DM_BINLOG_HEADER_LEN - DM_BINLOG_CHECKSUM_LEN);
  } else {
    got = dm_binlog_crc32(0, raw, raw_len - DM_BINLOG_CHECKSUM_LEN);
  }
  if (got != want) {
    dm_error_set(err, DM_ERR_BINLOG_CORRUPT, NULL,
                 "binlog %s: checksum mismatch in the %s event at offset %" PRIu64 " (%" PRIu32
                 " bytes): expected CRC32 0x%08" PRIx32 " (stored), computed 0x%08" PRIx32,
                 ev->file[0] ? ev->file : "(memory)", dm_binlog_event_type_name(ev->header.type),
                 offset, ev->header.event_size, want, got);
    return -1;
  }
  return 0;
}

int dm_binlog_decode_format(const dm_binlog_event *ev, dm_binlog_format *out, dm_error *err) {
  if (ev->header.type != DM_BINLOG_FORMAT_DESCRIPTION)
    return bl_corrupt(err, ev, "not a format description");
  const uint8_t *raw = ev->raw;
  size_t len = ev->raw_len;
  if (len < DM_BINLOG_HEADER_LEN + 57)
    return bl_corrupt(err, ev, "format description shorter than its fixed part (57 bytes)");
  memset(out, 0, sizeof *out);
  const uint8_t *b = raw + DM_BINLOG_HEADER_LEN;
  out->binlog_version = bl_le16(b);
  memcpy(out->server_version, b + 2, 50);
  out->server_version[50] = '\0';
  out->create_timestamp = bl_le32(b + 52);
  out->header_len = b[56];
  uint16_t v[3];
  event_parse_version(out->server_version, v);
  out->version_major = v[0];
  out->version_minor = v[1];
  out->version_patch = v[2];
  out->mariadb = strstr(out->server_version, "MariaDB") != NULL;
  size_t end = len;
  out->checksum_alg = DM_BINLOG_CHECKSUM_UNDEF;
  if (event_fde_has_alg(out->server_version, v)) {
    if (len < DM_BINLOG_HEADER_LEN + 57 + 5)
      return bl_corrupt(err, ev, "format description too short for its checksum algorithm");
    out->checksum_alg = raw[len - 5];
    end = len - 5;
  }
  if (out->binlog_version != 4) {
    dm_error_set(err, DM_ERR_BINLOG_UNSUPPORTED, NULL,
                 "binlog %s: format description at offset %" PRIu64
                 " says binlog version %u; only version 4 (MySQL 5.0+, MariaDB) is read",
                 ev->file && ev->file[0] ? ev->file : "(memory)", ev->offset, out->binlog_version);
    return -1;
  }
  if (out->header_len != DM_BINLOG_HEADER_LEN)
    return bl_corrupt(err, ev, "format description names a common header length other than 19");
  if (out->checksum_alg != DM_BINLOG_CHECKSUM_OFF &&
      out->checksum_alg != DM_BINLOG_CHECKSUM_CRC32 &&
      out->checksum_alg != DM_BINLOG_CHECKSUM_UNDEF)
    return bl_corrupt(err, ev, "format description names an unknown checksum algorithm");
  size_t n = end - (DM_BINLOG_HEADER_LEN + 57);
  if (n > sizeof out->post_header_len)
    n = sizeof out->post_header_len;
  out->n_post_header = (uint16_t)n;
  memcpy(out->post_header_len, b + 57, n);
  return 0;
}

/* A cursor over the event's payload past its post-header. */
static int event_payload(const dm_binlog_format *fmt, const dm_binlog_event *ev, uint8_t type,
                         size_t fallback, bl_cur *c, dm_error *err) {
  if (ev->header.type != type)
    return bl_corrupt(err, ev, "wrong event type for this decoder");
  size_t ph = bl_post_header_len(fmt, type, fallback);
  *c = bl_cur_make(ev->body, ev->body_len);
  if (bl_left(c) < ph)
    return bl_corrupt(err, ev, "body shorter than its post-header");
  return 0;
}

int dm_binlog_decode_rotate(const dm_binlog_format *fmt, const dm_binlog_event *ev,
                            dm_binlog_rotate *out, dm_error *err) {
  bl_cur c = {0};
  if (event_payload(fmt, ev, DM_BINLOG_ROTATE, 8, &c, err) < 0)
    return -1;
  out->position = bl_uint(&c, 8);
  size_t ph = bl_post_header_len(fmt, DM_BINLOG_ROTATE, 8);
  c.p = ev->body + ph;
  size_t n = bl_left(&c);
  if (n == 0 || n >= DM_POSITION_NAME_MAX)
    return bl_corrupt(err, ev, "rotate names no file, or one longer than 255 bytes");
  out->next_file.ptr = (const char *)c.p;
  out->next_file.len = (uint32_t)n;
  return 0;
}

/* The XID's parts: gtrid_len and bqual_len bytes at the cursor, each at most 64. */
static void bl_xid_data(bl_cur *c, dm_binlog_xid *x, uint64_t glen, uint64_t blen) {
  if (glen > DM_BINLOG_XID_PART_MAX || blen > DM_BINLOG_XID_PART_MAX) {
    c->bad = true;
    return;
  }
  x->gtrid_len = (uint8_t)glen;
  x->bqual_len = (uint8_t)blen;
  x->data = bl_bytes(c, (size_t)(glen + blen));
}

int dm_binlog_decode_gtid(const dm_binlog_format *fmt, const dm_binlog_event *ev,
                          dm_binlog_gtid *out, dm_error *err) {
  bl_cur c = {0};
  if (event_payload(fmt, ev, DM_BINLOG_GTID, 19, &c, err) < 0)
    return -1;
  memset(out, 0, sizeof *out);
  out->seq_no = bl_uint(&c, 8);
  out->domain_id = (uint32_t)bl_uint(&c, 4);
  out->flags = (uint8_t)bl_uint(&c, 1);
  out->server_id = ev->header.server_id;
  /* The writer puts the commit id, then the XID, right after the flags; zeros pad the body to 19
   * bytes only when it is shorter (MariaDB's Gtid_log_event::write). */
  if (out->flags & DM_BINLOG_GTID_GROUP_COMMIT)
    out->commit_id = bl_uint(&c, 8);
  if (out->flags & (DM_BINLOG_GTID_PREPARED_XA | DM_BINLOG_GTID_COMPLETED_XA)) {
    out->xa.format_id = (uint32_t)bl_uint(&c, 4);
    uint64_t glen = bl_uint(&c, 1), blen = bl_uint(&c, 1);
    bl_xid_data(&c, &out->xa, glen, blen);
  }
  if (c.bad)
    return bl_corrupt(err, ev,
                      "GTID event shorter than its flags say, or an XID part longer "
                      "than 64 bytes");
  return 0;
}

int dm_binlog_decode_xa_prepare(const dm_binlog_format *fmt, const dm_binlog_event *ev,
                                dm_binlog_xa_prepare *out, dm_error *err) {
  bl_cur c = {0};
  if (event_payload(fmt, ev, DM_BINLOG_XA_PREPARE, 0, &c, err) < 0)
    return -1;
  memset(out, 0, sizeof *out);
  c.p = ev->body + bl_post_header_len(fmt, DM_BINLOG_XA_PREPARE, 0);
  out->one_phase = bl_uint(&c, 1) != 0;
  out->xid.format_id = (uint32_t)bl_uint(&c, 4);
  uint64_t glen = bl_uint(&c, 4), blen = bl_uint(&c, 4);
  if (!c.bad)
    bl_xid_data(&c, &out->xid, glen, blen);
  if (c.bad)
    return bl_corrupt(err, ev,
                      "XA_PREPARE event shorter than its XID, or an XID part longer "
                      "than 64 bytes");
  return 0;
}

static int bl_hex_part(char *buf, size_t len, size_t *at, const uint8_t *p, size_t n) {
  static const char hex[] = "0123456789ABCDEF";
  if (*at + 2 * n + 4 > len)
    return -1;
  buf[(*at)++] = 'X';
  buf[(*at)++] = '\'';
  for (size_t i = 0; i < n; i++) {
    buf[(*at)++] = hex[p[i] >> 4];
    buf[(*at)++] = hex[p[i] & 15];
  }
  buf[(*at)++] = '\'';
  buf[*at] = '\0';
  return 0;
}

int dm_binlog_xid_format(const dm_binlog_xid *x, char *buf, size_t len) {
  size_t at = 0;
  if (len == 0 || bl_hex_part(buf, len, &at, x->data, x->gtrid_len) < 0 || at + 1 >= len)
    return -1;
  buf[at++] = ',';
  /* data is NULL in a GTID that is no XA: no arithmetic on it (undefined, UBSan's pointer check) */
  const uint8_t *bqual = x->bqual_len ? x->data + x->gtrid_len : NULL;
  if (bl_hex_part(buf, len, &at, bqual, x->bqual_len) < 0)
    return -1;
  int w = snprintf(buf + at, len - at, ",%" PRId32, (int32_t)x->format_id); /* signed, as printed */
  return w < 0 || (size_t)w >= len - at ? -1 : 0;
}

bool dm_binlog_xid_equal(const dm_binlog_xid *a, const dm_binlog_xid *b) {
  return a->format_id == b->format_id && a->gtrid_len == b->gtrid_len &&
         a->bqual_len == b->bqual_len &&
         (a->gtrid_len + b->bqual_len == 0 ||
          memcmp(a->data, b->data, (size_t)a->gtrid_len + a->bqual_len) == 0);
}

int dm_binlog_decode_gtid_list(const dm_binlog_format *fmt, const dm_binlog_event *ev,
                               dm_binlog_gtid_list *out, dm_error *err) {
  bl_cur c = {0};
  if (event_payload(fmt, ev, DM_BINLOG_GTID_LIST, 4, &c, err) < 0)
    return -1;
  uint32_t v = (uint32_t)bl_uint(&c, 4);
  out->count = v & 0x0fffffff;
  out->flags = (uint8_t)(v >> 28);
  if ((uint64_t)out->count * 16 > bl_left(&c))
    return bl_corrupt(err, ev, "GTID list holds fewer GTIDs than its count");
  out->items = c.p;
  return 0;
}

void dm_binlog_gtid_list_get(const dm_binlog_gtid_list *l, uint32_t i, uint32_t *domain_id,
                             uint32_t *server_id, uint64_t *seq_no) {
  const uint8_t *p = l->items + (size_t)i * 16;
  *domain_id = bl_le32(p);
  *server_id = bl_le32(p + 4);
  *seq_no = bl_le(p + 8, 8);
}

int dm_binlog_gtid_list_format(const dm_binlog_gtid_list *l, char *buf, size_t len) {
  size_t at = 0;
  if (len == 0)
    return -1;
  buf[0] = '\0';
  for (uint32_t i = 0; i < l->count; i++) {
    uint32_t d, s;
    uint64_t n;
    dm_binlog_gtid_list_get(l, i, &d, &s, &n);
    int w =
        snprintf(buf + at, len - at, "%s%" PRIu32 "-%" PRIu32 "-%" PRIu64, i ? "," : "", d, s, n);
    if (w < 0 || (size_t)w >= len - at)
      return -1;
    at += (size_t)w;
  }
  return 0;
}

int dm_binlog_decode_checkpoint(const dm_binlog_format *fmt, const dm_binlog_event *ev,
                                dm_binlog_checkpoint *out, dm_error *err) {
  bl_cur c = {0};
  if (event_payload(fmt, ev, DM_BINLOG_BINLOG_CHECKPOINT, 4, &c, err) < 0)
    return -1;
  uint32_t n = (uint32_t)bl_uint(&c, 4);
  out->file.ptr = (const char *)bl_bytes(&c, n);
  out->file.len = n;
  if (c.bad)
    return bl_corrupt(err, ev, "checkpoint file name runs past the event");
  return 0;
}

int dm_binlog_decode_xid(const dm_binlog_format *fmt, const dm_binlog_event *ev, uint64_t *xid,
                         dm_error *err) {
  bl_cur c = {0};
  if (event_payload(fmt, ev, DM_BINLOG_XID, 0, &c, err) < 0)
    return -1;
  *xid = bl_uint(&c, 8);
  if (c.bad)
    return bl_corrupt(err, ev, "XID event shorter than 8 bytes");
  return 0;
}

int dm_binlog_decode_annotate(const dm_binlog_format *fmt, const dm_binlog_event *ev,
                              dm_binlog_str *statement, dm_error *err) {
  bl_cur c = {0};
  uint8_t t =
      ev->header.type == DM_BINLOG_ROWS_QUERY ? DM_BINLOG_ROWS_QUERY : DM_BINLOG_ANNOTATE_ROWS;
  if (event_payload(fmt, ev, t, 0, &c, err) < 0)
    return -1;
  c.p = ev->body + bl_post_header_len(fmt, t, 0);
  if (t == DM_BINLOG_ROWS_QUERY)
    bl_bytes(&c, 1); /* a length byte MySQL no longer trusts: the text is the rest */
  if (c.bad)
    return bl_corrupt(err, ev, "ROWS_QUERY event without its length byte");
  statement->ptr = (const char *)c.p;
  statement->len = (uint32_t)bl_left(&c);
  return 0;
}

int dm_binlog_decode_heartbeat(const dm_binlog_format *fmt, const dm_binlog_event *ev,
                               dm_binlog_str *file, dm_error *err) {
  bl_cur c = {0};
  if (event_payload(fmt, ev, DM_BINLOG_HEARTBEAT, 0, &c, err) < 0)
    return -1;
  c.p = ev->body + bl_post_header_len(fmt, DM_BINLOG_HEARTBEAT, 0);
  file->ptr = (const char *)c.p;
  file->len = (uint32_t)bl_left(&c);
  return 0;
}

int dm_binlog_decode_incident(const dm_binlog_format *fmt, const dm_binlog_event *ev,
                              dm_binlog_incident *out, dm_error *err) {
  bl_cur c = {0};
  if (event_payload(fmt, ev, DM_BINLOG_INCIDENT, 2, &c, err) < 0)
    return -1;
  out->type = (uint16_t)bl_uint(&c, 2);
  c.p = ev->body + bl_post_header_len(fmt, DM_BINLOG_INCIDENT, 2);
  out->message.ptr = "";
  out->message.len = 0;
  if (bl_left(&c) > 0) {
    uint8_t n = (uint8_t)bl_uint(&c, 1);
    out->message.ptr = (const char *)bl_bytes(&c, n);
    out->message.len = n;
  }
  if (c.bad)
    return bl_corrupt(err, ev, "incident message runs past the event");
  return 0;
}

/* One length-prefixed (1 byte) string. */
static dm_binlog_str event_str8(bl_cur *c) {
  dm_binlog_str s = {"", 0};
  uint8_t n = (uint8_t)bl_uint(c, 1);
  const uint8_t *p = bl_bytes(c, n);
  if (p) {
    s.ptr = (const char *)p;
    s.len = n;
  }
  return s;
}

/* Status variables of a query event; stops at the first unknown code (lengths are implicit). */
static void event_query_status(bl_cur *c, dm_binlog_query *q) {
  while (bl_left(c) > 0 && !c->bad) {
    uint8_t code = (uint8_t)bl_uint(c, 1);
    switch (code) {
    case 0: /* Q_FLAGS2 */
      q->flags2 = (uint32_t)bl_uint(c, 4);
      q->has_flags2 = true;
      break;
    case 1: /* Q_SQL_MODE */
      q->sql_mode = bl_uint(c, 8);
      q->has_sql_mode = true;
      break;
    case 2: /* Q_CATALOG (old, NUL-terminated after its length) */
      q->catalog = event_str8(c);
      bl_bytes(c, 1);
      break;
    case 3:
      q->auto_increment_increment = (uint16_t)bl_uint(c, 2);
      q->auto_increment_offset = (uint16_t)bl_uint(c, 2);
      q->has_auto_increment = true;
      break;
    case 4:
      q->charset_client = (uint16_t)bl_uint(c, 2);
      q->collation_connection = (uint16_t)bl_uint(c, 2);
      q->collation_server = (uint16_t)bl_uint(c, 2);
      q->has_charset = true;
      break;
    case 5:
      q->time_zone = event_str8(c);
      q->has_time_zone = true;
      break;
    case 6:
      q->catalog = event_str8(c);
      break;
    case 7:
      q->lc_time_names = (uint16_t)bl_uint(c, 2);
      q->has_lc_time_names = true;
      break;
    case 8:
      q->charset_database = (uint16_t)bl_uint(c, 2);
      q->has_charset_database = true;
      break;
    case 9:
      q->table_map_for_update = bl_uint(c, 8);
      q->has_table_map_for_update = true;
      break;
    case 10: /* Q_MASTER_DATA_WRITTEN */
      bl_uint(c, 4);
      break;
    case 11:
      q->user = event_str8(c);
      q->host = event_str8(c);
      break;
    case 12: { /* Q_UPDATED_DB_NAMES: count, then NUL-terminated names unless "too many" */
      uint8_t n = (uint8_t)bl_uint(c, 1);
      q->n_updated_dbs = n;
      if (n != 254) {
        for (uint8_t i = 0; i < n && !c->bad; i++) {
          const uint8_t *z = bl_left(c) ? memchr(c->p, 0, bl_left(c)) : NULL;
          if (!z) {
            c->bad = true;
            break;
          }
          c->p = z + 1;
        }
      }
      break;
    }
    case 13:  /* Q_MICROSECONDS */
    case 128: /* Q_HRNOW (MariaDB) */
      q->microseconds = (uint32_t)bl_uint(c, 3);
      q->has_microseconds = true;
      break;
    case 16:
      q->explicit_defaults_ts = (uint8_t)bl_uint(c, 1);
      q->has_explicit_defaults_ts = true;
      break;
    case 17:  /* Q_DDL_LOGGED_WITH_XID */
    case 129: /* Q_XID (MariaDB) */
      q->xid = bl_uint(c, 8);
      q->has_xid = true;
      break;
    case 18:
      q->default_collation_utf8 = (uint16_t)bl_uint(c, 2);
      q->has_default_collation_utf8 = true;
      break;
    case 19:  /* Q_SQL_REQUIRE_PRIMARY_KEY */
    case 20:  /* Q_DEFAULT_TABLE_ENCRYPTION */
    case 130: /* Q_GTID_FLAGS3 (MariaDB) */
      bl_uint(c, 1);
      break;
    default:
      q->unknown_status_code = code;
      return;
    }
  }
}

int dm_binlog_decode_query(const dm_binlog_format *fmt, const dm_binlog_event *ev,
                           dm_binlog_query *out, dm_error *err) {
  bl_cur c = {0};
  if (event_payload(fmt, ev, DM_BINLOG_QUERY, 13, &c, err) < 0)
    return -1;
  memset(out, 0, sizeof *out);
  out->unknown_status_code = -1;
  out->thread_id = (uint32_t)bl_uint(&c, 4);
  out->exec_time = (uint32_t)bl_uint(&c, 4);
  uint8_t db_len = (uint8_t)bl_uint(&c, 1);
  out->error_code = (uint16_t)bl_uint(&c, 2);
  uint16_t status_len = (uint16_t)bl_uint(&c, 2);
  c.p = ev->body + bl_post_header_len(fmt, DM_BINLOG_QUERY, 13);
  const uint8_t *status = bl_bytes(&c, status_len);
  out->db.ptr = (const char *)bl_bytes(&c, db_len);
  out->db.len = db_len;
  bl_bytes(&c, 1); /* the db name's NUL */
  if (c.bad)
    return bl_corrupt(err, ev, "query event shorter than its status variables and database name");
  out->query.ptr = (const char *)c.p;
  out->query.len = (uint32_t)bl_left(&c);
  bl_cur s = bl_cur_make(status, status_len);
  event_query_status(&s, out);
  if (s.bad)
    return bl_corrupt(err, ev, "a status variable runs past the status block");
  return 0;
}

int dm_binlog_decode_mysql_gtid(const dm_binlog_format *fmt, const dm_binlog_event *ev,
                                dm_binlog_mysql_gtid *out, dm_error *err) {
  bl_cur c = {0};
  uint8_t t = ev->header.type == DM_BINLOG_MYSQL_ANONYMOUS_GTID ? DM_BINLOG_MYSQL_ANONYMOUS_GTID
                                                                : DM_BINLOG_MYSQL_GTID;
  if (event_payload(fmt, ev, t, 25, &c, err) < 0)
    return -1;
  memset(out, 0, sizeof *out);
  out->flags = (uint8_t)bl_uint(&c, 1);
  const uint8_t *sid = bl_bytes(&c, 16);
  if (sid)
    memcpy(out->sid, sid, 16);
  out->gno = (int64_t)bl_uint(&c, 8);
  if (c.bad)
    return bl_corrupt(err, ev, "MySQL GTID event shorter than 25 bytes");
  /* Each later part is there only if the writer was new enough: stop at the end of the body. */
  if (bl_left(&c) >= 17 && c.p[0] == 2) {
    bl_uint(&c, 1);
    out->has_logical_clock = true;
    out->last_committed = (int64_t)bl_uint(&c, 8);
    out->sequence_number = (int64_t)bl_uint(&c, 8);
  }
  if (bl_left(&c) >= 7) {
    uint64_t ts = bl_uint(&c, 7);
    out->has_commit_ts = true;
    if (ts & (1ull << 55)) {
      out->immediate_commit_ts = ts & ~(1ull << 55);
      out->original_commit_ts = bl_uint(&c, 7);
    } else {
      out->immediate_commit_ts = out->original_commit_ts = ts;
    }
  }
  if (bl_left(&c) >= 1 && !c.bad) {
    out->transaction_length = bl_packed(&c);
    out->has_transaction_length = !c.bad;
  }
  if (bl_left(&c) >= 4 && !c.bad) {
    uint32_t v = (uint32_t)bl_uint(&c, 4);
    out->has_server_version = true;
    if (v & 0x80000000u) {
      out->immediate_server_version = v & 0x7fffffffu;
      out->original_server_version = (uint32_t)bl_uint(&c, 4);
    } else {
      out->immediate_server_version = out->original_server_version = v;
    }
  }
  if (c.bad)
    return bl_corrupt(err, ev, "MySQL GTID event: a field runs past the event");
  return 0;
}

int dm_binlog_mysql_gtid_format(const dm_binlog_mysql_gtid *g, char *buf, size_t len) {
  char u[37];
  dm_mysql_sid_format(g->sid, u);
  int w = snprintf(buf, len, "%s:%" PRId64, u, g->gno);
  return w < 0 || (size_t)w >= len ? -1 : 0;
}

int dm_binlog_decode_previous_gtids_set(const dm_binlog_format *fmt, const dm_binlog_event *ev,
                                        dm_mysql_gtid_set *out, dm_error *err) {
  bl_cur c = {0};
  dm_mysql_gtid_set_free(out);
  if (event_payload(fmt, ev, DM_BINLOG_MYSQL_PREVIOUS_GTIDS, 0, &c, err) < 0)
    return -1;
  uint64_t n_sids = bl_uint(&c, 8);
  if (n_sids > bl_left(&c) / 24)
    return bl_corrupt(err, ev, "previous-GTIDs holds fewer sids than its count");
  for (uint64_t i = 0; i < n_sids; i++) {
    const uint8_t *sid = bl_bytes(&c, 16);
    uint64_t n_iv = bl_uint(&c, 8);
    if (c.bad || n_iv > bl_left(&c) / 16) {
      dm_mysql_gtid_set_free(out);
      return bl_corrupt(err, ev, "previous-GTIDs: intervals run past the event");
    }
    for (uint64_t k = 0; k < n_iv; k++) {
      uint64_t start = bl_uint(&c, 8), end = bl_uint(&c, 8); /* [start, end) */
      if (end <= start || start == 0) {
        dm_mysql_gtid_set_free(out);
        return bl_corrupt(err, ev, "previous-GTIDs: an empty, reversed or zero interval");
      }
      if (dm_mysql_gtid_set_add_range(out, sid, start, end - 1) < 0) {
        dm_mysql_gtid_set_free(out);
        dm_error_set(err, DM_ERR_NO_MEMORY, NULL,
                     "previous-GTIDs at offset %" PRIu64 ": no memory for the GTID set",
                     ev->offset);
        return -1;
      }
    }
  }
  return 0;
}

int dm_binlog_decode_previous_gtids(const dm_binlog_format *fmt, const dm_binlog_event *ev,
                                    char *buf, size_t len, dm_error *err) {
  dm_mysql_gtid_set s = DM_MYSQL_GTID_SET_INIT;
  if (dm_binlog_decode_previous_gtids_set(fmt, ev, &s, err) < 0)
    return -1;
  int w = dm_mysql_gtid_set_format(&s, buf, len);
  dm_mysql_gtid_set_free(&s);
  if (w < 0) {
    dm_error_set(err, DM_ERR_INTERNAL, NULL,
                 "previous-GTIDs at offset %" PRIu64 ": the GTID set does not fit in %zu bytes",
                 ev->offset, len);
    return -1;
  }
  return 0;
}
