/*
 * Builds binlog bytes by hand for tests and seeds: events of documented layouts (MySQL 8.0's
 * GTID, previous-GTIDs, v2 and partial-update row events, binary JSON) that the local MariaDB
 * cannot write, each with a correct header, next position and CRC32. Header-only helpers.
 */
#ifndef BINLOG_BUILDER_H
#define BINLOG_BUILDER_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "dmhost/binlog.h"

typedef struct bb {
  uint8_t *p;
  size_t len, cap;
} bb;

static inline void bb_put(bb *b, const void *d, size_t n) {
  if (b->len + n > b->cap) {
    b->cap = (b->len + n) * 2 + 64;
    b->p = realloc(b->p, b->cap);
  }
  if (n)
    memcpy(b->p + b->len, d, n);
  b->len += n;
}
static inline void bb_uint(bb *b, uint64_t v, unsigned n) {
  for (unsigned i = 0; i < n; i++) {
    uint8_t c = (uint8_t)(v >> (8 * i));
    bb_put(b, &c, 1);
  }
}
static inline void bb_be(bb *b, uint64_t v, unsigned n) {
  for (unsigned i = 0; i < n; i++) {
    uint8_t c = (uint8_t)(v >> (8 * (n - 1 - i)));
    bb_put(b, &c, 1);
  }
}
static inline void bb_packed(bb *b, uint64_t v) {
  if (v < 251) {
    bb_uint(b, v, 1);
  } else if (v < 65536) {
    bb_uint(b, 252, 1);
    bb_uint(b, v, 2);
  } else {
    bb_uint(b, 254, 1);
    bb_uint(b, v, 8);
  }
}
static inline void bb_str(bb *b, const char *s) {
  bb_put(b, s, strlen(s));
}

/* Appends one event (header, body, CRC32) to a file image; returns its offset. */
static inline size_t bb_event(bb *file, uint8_t type, const bb *body, uint16_t flags) {
  size_t off = file->len;
  uint32_t size = (uint32_t)(19 + body->len + 4);
  bb_uint(file, 1700000000, 4);
  bb_uint(file, type, 1);
  bb_uint(file, 1, 4);
  bb_uint(file, size, 4);
  bb_uint(file, off + size, 4);
  bb_uint(file, flags, 2);
  bb_put(file, body->p, body->len);
  uint32_t crc = dm_binlog_crc32(0, file->p + off, 19 + body->len);
  bb_uint(file, crc, 4);
  return off;
}

/* MariaDB's compressed tail (log_bin_compress): header byte (zlib, `lenlen` length bytes), the
 * length `claim` big-endian, then n bytes of d compressed with zlib. A test that calls it links
 * zlib. */
static inline void bb_zlib(bb *b, const void *d, size_t n, unsigned lenlen, uint64_t claim) {
  bb_uint(b, 0x80 | lenlen, 1);
  bb_be(b, claim, lenlen);
  uLongf zn = compressBound((uLong)n);
  uint8_t *z = malloc(zn);
  if (z && compress(z, &zn, d, (uLong)n) == Z_OK)
    bb_put(b, z, zn);
  free(z);
}

/* Magic and a format description of `version` ("8.0.36", "10.11.6-MariaDB-log"), CRC32 on. */
static inline void bb_start_file(bb *file, const char *version) {
  bb_put(file, DM_BINLOG_MAGIC, 4);
  dm_binlog_format def;
  dm_binlog_format_default(&def, DM_BINLOG_CHECKSUM_CRC32);
  bb body = {0};
  bb_uint(&body, 4, 2);
  char v[50] = {0};
  strncpy(v, version, sizeof v - 1);
  bb_put(&body, v, 50);
  bb_uint(&body, 1700000000, 4);
  bb_uint(&body, 19, 1);
  bb_put(&body, def.post_header_len, def.n_post_header);
  bb_uint(&body, DM_BINLOG_CHECKSUM_CRC32, 1);
  bb_event(file, DM_BINLOG_FORMAT_DESCRIPTION, &body, 0);
  free(body.p);
}

#endif /* BINLOG_BUILDER_H */
