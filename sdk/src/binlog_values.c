/*
 * Column values of a row image: one column's bytes decoded into a dm_binlog_value by its real type
 * and metadata (integers, DECIMAL, temporal types, BIT, strings, BLOB/JSON payloads), plus the
 * DECIMAL binary format that JSON documents share.
 */
#include <inttypes.h>
#include <string.h>

#include "binlog_internal.h"

/* ---- decimal ---- */

static const uint8_t values_dig2bytes[10] = {0, 1, 1, 2, 2, 3, 3, 4, 4, 4};
static const uint32_t values_pow10[10] = {1,      10,      100,      1000,      10000,
                                          100000, 1000000, 10000000, 100000000, 1000000000};

size_t bl_decimal_size(unsigned precision, unsigned scale) {
  if (scale > precision)
    return 0;
  unsigned intg = precision - scale;
  return (intg / 9) * 4 + values_dig2bytes[intg % 9] + (scale / 9) * 4 +
         values_dig2bytes[scale % 9];
}

int bl_decimal_to_text(const uint8_t *src, unsigned precision, unsigned scale, char *out) {
  if (precision == 0 || precision > 65 || scale > 38 || scale > precision)
    return -1;
  size_t size = bl_decimal_size(precision, scale);
  uint8_t b[40] = {0};
  memcpy(b, src, size);
  bool negative = (b[0] & 0x80) == 0;
  b[0] ^= 0x80;
  if (negative)
    for (size_t i = 0; i < size; i++)
      b[i] = (uint8_t)~b[i];
  unsigned intg = precision - scale;
  char digits[80];
  size_t nd = 0, at = 0;
  /* one group: `n` digits from `bytes` bytes, big-endian */
#define VALUES_GROUP(ndig)                                                                         \
  do {                                                                                             \
    unsigned nb_ = values_dig2bytes[(ndig)];                                                       \
    if ((ndig) == 9)                                                                               \
      nb_ = 4;                                                                                     \
    uint32_t v_ = (uint32_t)bl_be(b + at, nb_);                                                    \
    at += nb_;                                                                                     \
    if (v_ >= values_pow10[(ndig)] && (ndig) < 10)                                                 \
      return -1;                                                                                   \
    for (int k_ = (int)(ndig)-1; k_ >= 0; k_--) {                                                  \
      digits[nd + (size_t)k_] = (char)('0' + v_ % 10);                                             \
      v_ /= 10;                                                                                    \
    }                                                                                              \
    nd += (ndig);                                                                                  \
  } while (0)
  if (intg % 9)
    VALUES_GROUP(intg % 9);
  for (unsigned g = 0; g < intg / 9; g++)
    VALUES_GROUP(9);
  size_t int_digits = nd;
  for (unsigned g = 0; g < scale / 9; g++)
    VALUES_GROUP(9);
  if (scale % 9)
    VALUES_GROUP(scale % 9);
#undef VALUES_GROUP
  size_t first = 0;
  while (first + 1 < int_digits && digits[first] == '0')
    first++;
  bool zero = true;
  for (size_t i = 0; i < nd; i++)
    if (digits[i] != '0')
      zero = false;
  char *o = out;
  if (negative && !zero)
    *o++ = '-';
  if (int_digits == 0)
    *o++ = '0';
  else
    for (size_t i = first; i < int_digits; i++)
      *o++ = digits[i];
  if (scale) {
    *o++ = '.';
    for (size_t i = int_digits; i < nd; i++)
      *o++ = digits[i];
  }
  *o = '\0';
  return 0;
}

int bl_value_corrupt(dm_binlog_rows *r, const dm_binlog_table_map *tm, uint32_t col,
                     const uint8_t *at, const char *what, dm_error *err) {
  const dm_binlog_column *c = &tm->columns[col];
  dm_error_set(err, DM_ERR_BINLOG_CORRUPT, NULL,
               "binlog %s: %s event at offset %" PRIu64 ", table `%s`.`%s`, row %" PRIu32
               ", column %" PRIu32 "%s%.*s%s (type %u): %s at byte %" PRIu64 " of the event",
               r->file_ && r->file_[0] ? r->file_ : "(memory)", dm_binlog_event_type_name(r->type_),
               r->offset_, tm->db.ptr, tm->table.ptr, r->row_ + 1, col + 1, c->name.len ? " `" : "",
               (int)c->name.len, c->name.ptr, c->name.len ? "`" : "", c->real_type, what,
               (uint64_t)(at - r->raw_));
  return -1;
}

static void values_time2(const uint8_t *p, unsigned fsp, dm_binlog_temporal *t) {
  int64_t packed;
  int64_t intpart = (int64_t)bl_be(p, 3) - 0x800000;
  switch (fsp) {
  case 1:
  case 2: {
    int64_t frac = p[3];
    if (intpart < 0 && frac) {
      intpart++;
      frac -= 0x100;
    }
    packed = intpart * (1 << 24) + frac * 10000;
    break;
  }
  case 3:
  case 4: {
    int64_t frac = (int64_t)bl_be(p + 3, 2);
    if (intpart < 0 && frac) {
      intpart++;
      frac -= 0x10000;
    }
    packed = intpart * (1 << 24) + frac * 100;
    break;
  }
  case 5:
  case 6:
    packed = (int64_t)bl_be(p, 6) - 0x800000000000LL;
    break;
  default:
    packed = intpart * (1 << 24);
    break;
  }
  memset(t, 0, sizeof *t);
  if (packed < 0) {
    t->negative = true;
    packed = -packed;
  }
  int64_t hms = packed >> 24;
  t->usec = (uint32_t)(packed % (1 << 24));
  t->hour = (uint16_t)((hms >> 12) % (1 << 10));
  t->minute = (uint8_t)((hms >> 6) % (1 << 6));
  t->second = (uint8_t)(hms % (1 << 6));
}

static uint32_t values_frac(const uint8_t *p, unsigned fsp) {
  switch (fsp) {
  case 1:
  case 2:
    return (uint32_t)p[0] * 10000;
  case 3:
  case 4:
    return (uint32_t)bl_be(p, 2) * 100;
  case 5:
  case 6:
    return (uint32_t)bl_be(p, 3);
  default:
    return 0;
  }
}

static void values_datetime2(const uint8_t *p, unsigned fsp, dm_binlog_temporal *t) {
  int64_t intpart = (int64_t)bl_be(p, 5) - 0x8000000000LL;
  memset(t, 0, sizeof *t);
  if (intpart < 0)
    intpart = -intpart; /* DATETIME is never negative; keep garbage in range */
  int64_t ymd = intpart >> 17, hms = intpart % (1 << 17);
  int64_t ym = ymd >> 5;
  t->day = (uint8_t)(ymd % 32);
  t->month = (uint8_t)(ym % 13);
  t->year = (uint16_t)(ym / 13);
  t->second = (uint8_t)(hms % 64);
  t->minute = (uint8_t)((hms >> 6) % 64);
  t->hour = (uint16_t)(hms >> 12);
  t->usec = values_frac(p + 5, fsp);
}

/* Bytes of a length prefix, then the payload. */
static int values_lenval(bl_cur *c, unsigned nbytes, dm_binlog_value *v) {
  uint64_t n = bl_uint(c, nbytes);
  const uint8_t *p = n <= bl_left(c) ? bl_bytes(c, n) : NULL;
  if (!p) {
    c->bad = true;
    return -1;
  }
  v->v.s.ptr = p;
  v->v.s.len = (uint32_t)n;
  return 0;
}

/* One non-NULL value of column `col` at the cursor. */
int bl_value_decode(dm_binlog_rows *r, const dm_binlog_table_map *tm, uint32_t ci, bl_cur *c,
                    bool partial_json, dm_binlog_value *v, dm_error *err) {
  const dm_binlog_column *col = &tm->columns[ci];
  const uint8_t *at = c->p;
  v->column_type = col->real_type;
  bool uns = col->is_unsigned;
  switch (col->real_type) {
  case DM_COL_TINY:
  case DM_COL_SHORT:
  case DM_COL_INT24:
  case DM_COL_LONG:
  case DM_COL_LONGLONG: {
    unsigned n = col->real_type == DM_COL_TINY    ? 1
                 : col->real_type == DM_COL_SHORT ? 2
                 : col->real_type == DM_COL_INT24 ? 3
                 : col->real_type == DM_COL_LONG  ? 4
                                                  : 8;
    uint64_t u = bl_uint(c, n);
    if (uns) {
      v->kind = DM_VAL_UINT;
      v->v.u = u;
    } else {
      v->kind = DM_VAL_INT;
      v->v.i = n == 8 ? (int64_t)u : (int64_t)(u << (64 - 8 * n)) >> (64 - 8 * n);
    }
    break;
  }
  case DM_COL_FLOAT: {
    const uint8_t *p = bl_bytes(c, 4);
    if (p) {
      uint32_t bits = bl_le32(p);
      float f;
      memcpy(&f, &bits, 4);
      v->kind = DM_VAL_FLOAT;
      v->v.f = f;
    }
    break;
  }
  case DM_COL_DOUBLE: {
    const uint8_t *p = bl_bytes(c, 8);
    if (p) {
      uint64_t bits = bl_le(p, 8);
      double d;
      memcpy(&d, &bits, 8);
      v->kind = DM_VAL_DOUBLE;
      v->v.f = d;
    }
    break;
  }
  case DM_COL_NEWDECIMAL: {
    const uint8_t *p = bl_bytes(c, bl_decimal_size(col->precision, col->scale));
    if (p) {
      v->kind = DM_VAL_DECIMAL;
      if (bl_decimal_to_text(p, col->precision, col->scale, v->v.dec) < 0)
        return bl_value_corrupt(r, tm, ci, at, "not a valid DECIMAL", err);
    }
    break;
  }
  case DM_COL_BIT: {
    v->kind = DM_VAL_BIT;
    v->v.u = 0;
    const uint8_t *p = bl_bytes(c, ((size_t)col->bits + 7) / 8);
    if (p)
      v->v.u = bl_be(p, (col->bits + 7u) / 8);
    break;
  }
  case DM_COL_YEAR: {
    uint64_t y = bl_uint(c, 1);
    v->kind = DM_VAL_YEAR;
    v->v.u = y ? 1900 + y : 0;
    break;
  }
  case DM_COL_DATE:
  case DM_COL_NEWDATE: {
    uint32_t d = (uint32_t)bl_uint(c, 3);
    v->kind = DM_VAL_DATE;
    memset(&v->v.t, 0, sizeof v->v.t);
    v->v.t.day = (uint8_t)(d & 31);
    v->v.t.month = (uint8_t)((d >> 5) & 15);
    v->v.t.year = (uint16_t)(d >> 9);
    break;
  }
  case DM_COL_TIME: {
    int32_t t = (int32_t)(bl_uint(c, 3) << 8) >> 8;
    v->kind = DM_VAL_TIME;
    memset(&v->v.t, 0, sizeof v->v.t);
    if (t < 0) {
      v->v.t.negative = true;
      t = -t;
    }
    v->v.t.hour = (uint16_t)(t / 10000);
    v->v.t.minute = (uint8_t)(t / 100 % 100);
    v->v.t.second = (uint8_t)(t % 100);
    break;
  }
  case DM_COL_TIME2: {
    const uint8_t *p = bl_bytes(c, 3 + (col->fsp + 1u) / 2);
    if (p) {
      v->kind = DM_VAL_TIME;
      values_time2(p, col->fsp, &v->v.t);
    }
    break;
  }
  case DM_COL_DATETIME: {
    uint64_t d = bl_uint(c, 8);
    v->kind = DM_VAL_DATETIME;
    memset(&v->v.t, 0, sizeof v->v.t);
    uint64_t date = d / 1000000, time = d % 1000000;
    v->v.t.year = (uint16_t)(date / 10000 % 10000);
    v->v.t.month = (uint8_t)(date / 100 % 100);
    v->v.t.day = (uint8_t)(date % 100);
    v->v.t.hour = (uint16_t)(time / 10000);
    v->v.t.minute = (uint8_t)(time / 100 % 100);
    v->v.t.second = (uint8_t)(time % 100);
    break;
  }
  case DM_COL_DATETIME2: {
    const uint8_t *p = bl_bytes(c, 5 + (col->fsp + 1u) / 2);
    if (p) {
      v->kind = DM_VAL_DATETIME;
      values_datetime2(p, col->fsp, &v->v.t);
    }
    break;
  }
  case DM_COL_TIMESTAMP:
    v->kind = DM_VAL_TIMESTAMP;
    v->v.ts.sec = (int64_t)bl_uint(c, 4);
    v->v.ts.usec = 0;
    break;
  case DM_COL_TIMESTAMP2: {
    const uint8_t *p = bl_bytes(c, 4 + (col->fsp + 1u) / 2);
    if (p) {
      v->kind = DM_VAL_TIMESTAMP;
      v->v.ts.sec = (int64_t)bl_be(p, 4);
      v->v.ts.usec = values_frac(p + 4, col->fsp);
    }
    break;
  }
  case DM_COL_VARCHAR:
  case DM_COL_VAR_STRING:
  case DM_COL_STRING:
  case DM_COL_VARCHAR_COMPRESSED:
    if (values_lenval(c, col->max_len > 255 ? 2 : 1, v) == 0) {
      if (col->real_type == DM_COL_VARCHAR_COMPRESSED)
        v->kind = DM_VAL_RAW;
      else
        v->kind = col->collation == DM_BINLOG_COLLATION_BINARY ? DM_VAL_BLOB : DM_VAL_STRING;
      if (col->real_type == DM_COL_STRING && col->collation == DM_BINLOG_COLLATION_BINARY &&
          v->v.s.len < col->max_len)
        v->pad_zeros = col->max_len - v->v.s.len;
    }
    break;
  case DM_COL_ENUM:
    v->kind = DM_VAL_ENUM;
    v->v.u = bl_uint(c, col->pack_len);
    break;
  case DM_COL_SET:
    v->kind = DM_VAL_SET;
    v->v.u = bl_uint(c, col->pack_len);
    break;
  case DM_COL_BLOB:
  case DM_COL_TINY_BLOB:
  case DM_COL_MEDIUM_BLOB:
  case DM_COL_LONG_BLOB:
  case DM_COL_GEOMETRY:
  case DM_COL_JSON:
  case DM_COL_BLOB_COMPRESSED:
    if (values_lenval(c, col->max_len, v) == 0) {
      if (col->real_type == DM_COL_GEOMETRY)
        v->kind = DM_VAL_GEOMETRY;
      else if (col->real_type == DM_COL_JSON)
        v->kind = partial_json ? DM_VAL_JSON_DIFF : DM_VAL_JSON;
      else if (col->real_type == DM_COL_BLOB_COMPRESSED)
        v->kind = DM_VAL_RAW;
      else
        v->kind = col->collation && col->collation != DM_BINLOG_COLLATION_BINARY ? DM_VAL_STRING
                                                                                 : DM_VAL_BLOB;
    }
    break;
  case DM_COL_NULL:
    v->kind = DM_VAL_NULL;
    break;
  default:
    dm_error_set(err, DM_ERR_BINLOG_UNSUPPORTED, NULL,
                 "binlog %s: rows event at offset %" PRIu64 ", table `%s`.`%s`, column %" PRIu32
                 ": column type %u has no known binary size",
                 r->file_, r->offset_, tm->db.ptr, tm->table.ptr, ci + 1, col->real_type);
    return -1;
  }
  if (c->bad)
    return bl_value_corrupt(r, tm, ci, at, "the value runs past the event", err);
  return 0;
}
