/*
 * Private to the binlog library (sdk/src/binlog_*.c): the reader object shared by the file and
 * stream readers, and a bounds-checked byte cursor every decoder reads through, so that no bytes
 * from a file or a server can make a decoder read past an event.
 */
#ifndef DMHOST_BINLOG_INTERNAL_H
#define DMHOST_BINLOG_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "dmhost/binlog.h"
#include "dmhost/binlog_rows.h"
#include "dmhost/sdk.h"

/* ---- little/big-endian loads ---- */
static inline uint64_t bl_le(const uint8_t *p, unsigned n) {
  uint64_t v = 0;
  for (unsigned i = 0; i < n; i++)
    v |= (uint64_t)p[i] << (8 * i);
  return v;
}
static inline uint64_t bl_be(const uint8_t *p, unsigned n) {
  uint64_t v = 0;
  for (unsigned i = 0; i < n; i++)
    v = (v << 8) | p[i];
  return v;
}
static inline uint32_t bl_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint16_t bl_le16(const uint8_t *p) {
  return (uint16_t)(p[0] | p[1] << 8);
}

/* ---- a cursor that never reads past end; `bad` records the first overrun ---- */
typedef struct bl_cur {
  const uint8_t *p, *end;
  bool bad;
} bl_cur;

static inline bl_cur bl_cur_make(const uint8_t *p, size_t len) {
  bl_cur c = {p, p + len, false};
  return c;
}
static inline size_t bl_left(const bl_cur *c) {
  return c->bad ? 0 : (size_t)(c->end - c->p);
}
static inline bool bl_need(bl_cur *c, size_t n) {
  if (c->bad || (size_t)(c->end - c->p) < n) {
    c->bad = true;
    return false;
  }
  return true;
}
static inline uint64_t bl_uint(bl_cur *c, unsigned n) {
  if (!bl_need(c, n))
    return 0;
  uint64_t v = bl_le(c->p, n);
  c->p += n;
  return v;
}
static inline const uint8_t *bl_bytes(bl_cur *c, size_t n) {
  if (!bl_need(c, n))
    return NULL;
  const uint8_t *p = c->p;
  c->p += n;
  return p;
}
/* MySQL's length-encoded ("packed") integer; 251 (NULL) counts as an overrun. */
static inline uint64_t bl_packed(bl_cur *c) {
  if (!bl_need(c, 1))
    return 0;
  uint8_t b = *c->p++;
  if (b < 251)
    return b;
  if (b == 252)
    return bl_uint(c, 2);
  if (b == 253)
    return bl_uint(c, 3);
  if (b == 254)
    return bl_uint(c, 8);
  c->bad = true;
  return 0;
}

/* Where an event's fields start: body past the post-header. */
size_t bl_post_header_len(const dm_binlog_format *fmt, uint8_t type, size_t fallback);

/* Sets DM_ERR_BINLOG_CORRUPT for an event whose body is too short or inconsistent. */
int bl_corrupt(dm_error *err, const dm_binlog_event *ev, const char *what);

/* ---- column values (binlog_values.c), read by the row iterator in binlog_rows.c ---- */

/* Decimal binary format (NEWDECIMAL): bytes taken by precision/scale, and decoding to text. */
size_t bl_decimal_size(unsigned precision, unsigned scale);
/* Returns 0, or -1 for bytes that are not a decimal of that precision (a digit group > 999999999,
 * or a scale above precision). out must hold 84 bytes. */
int bl_decimal_to_text(const uint8_t *p, unsigned precision, unsigned scale, char *out);

/* Sets DM_ERR_BINLOG_CORRUPT naming the file, event, table, row and column `col` of rows event `r`,
 * and the byte `at` where the value went wrong; returns -1. */
int bl_value_corrupt(dm_binlog_rows *r, const dm_binlog_table_map *tm, uint32_t col,
                     const uint8_t *at, const char *what, dm_error *err);
/* One non-NULL value of column `ci` at the cursor; partial_json marks a JSON partial update
 * (binlog_row_value_options=PARTIAL_JSON). Returns 0, or -1 with err set. */
int bl_value_decode(dm_binlog_rows *r, const dm_binlog_table_map *tm, uint32_t ci, bl_cur *c,
                    bool partial_json, dm_binlog_value *v, dm_error *err);

/* ---- CRC32 (binlog_crc32.c): dm_binlog_crc32 picks one; both exposed for the tests ---- */
uint32_t bl_crc32_zlib(uint32_t crc, const uint8_t *p, size_t len);
/* PCLMULQDQ folding where the CPU has it (bl_crc32_has_clmul), else zlib's */
uint32_t bl_crc32_clmul(uint32_t crc, const uint8_t *p, size_t len);
bool bl_crc32_has_clmul(void);

/* ---- the reader ---- */
typedef struct bl_reader_ops {
  int (*next)(dm_binlog_reader *r, dm_binlog_event *ev, dm_error *err);
  void (*interrupt)(dm_binlog_reader *r);
  void (*close)(dm_binlog_reader *r);
  bool (*pending)(dm_binlog_reader *r); /* NULL: always true */
  int (*fd)(const dm_binlog_reader *r); /* NULL: none */
} bl_reader_ops;

struct dm_binlog_reader {
  const bl_reader_ops *ops;
  dm_binlog_format fmt;
  char file[DM_POSITION_NAME_MAX]; /* base name of the current file */
  uint64_t pos;                    /* offset past the last event returned */
  atomic_bool interrupted;
  bool verify;
  size_t max_buffer; /* largest buffer held */
};

/* Current name and the kind-specific state live after this struct in each reader. */

#endif /* DMHOST_BINLOG_INTERNAL_H */
