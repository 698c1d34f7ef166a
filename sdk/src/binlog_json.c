/*
 * MySQL binary JSON to text, partial JSON diffs, and values formatted as text. Output goes into
 * a caller buffer and the needed length is always counted, so callers can size a retry; nothing
 * allocates. Every offset in binary JSON is checked against its container, and nesting is capped,
 * so bad bytes give an error and never a read out of bounds or a deep recursion.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "binlog_internal.h"

#define JSON_MAX_DEPTH 100

typedef struct json_out {
  char *buf;
  size_t cap, len; /* len counts everything, also what did not fit */
} json_out;

static void json_put(json_out *o, const char *s, size_t n) {
  if (o->len < o->cap) {
    size_t room = o->cap - o->len;
    memcpy(o->buf + o->len, s, n < room ? n : room);
  }
  o->len += n;
}
static void json_puts(json_out *o, const char *s) {
  json_put(o, s, strlen(s));
}
static void json_printf(json_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void json_printf(json_out *o, const char *fmt, ...) {
  char tmp[128];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n > 0)
    json_put(o, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* Shortest text that reads back as the same double (as MySQL prints). */
static void json_double(json_out *o, double d) {
  char tmp[40];
  if (!isfinite(d)) {
    json_puts(o, isnan(d) ? "NaN" : (d < 0 ? "-inf" : "inf"));
    return;
  }
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(tmp, sizeof tmp, "%.*g", prec, d);
    if (strtod(tmp, NULL) == d)
      break;
  }
  json_puts(o, tmp);
}

static void json_float(json_out *o, float f) {
  char tmp[40];
  for (int prec = 1; prec <= 9; prec++) {
    snprintf(tmp, sizeof tmp, "%.*g", prec, (double)f);
    if (strtof(tmp, NULL) == f)
      break;
  }
  json_puts(o, tmp);
}

static void json_string(json_out *o, const uint8_t *s, size_t n) {
  json_put(o, "\"", 1);
  size_t run = 0;
  for (size_t i = 0; i < n; i++) {
    uint8_t ch = s[i];
    const char *esc = NULL;
    char u[8];
    switch (ch) {
    case '"':
      esc = "\\\"";
      break;
    case '\\':
      esc = "\\\\";
      break;
    case '\n':
      esc = "\\n";
      break;
    case '\r':
      esc = "\\r";
      break;
    case '\t':
      esc = "\\t";
      break;
    case '\b':
      esc = "\\b";
      break;
    case '\f':
      esc = "\\f";
      break;
    default:
      if (ch < 0x20) {
        snprintf(u, sizeof u, "\\u%04x", ch);
        esc = u;
      }
    }
    if (esc) {
      json_put(o, (const char *)s + run, i - run);
      json_puts(o, esc);
      run = i + 1;
    }
  }
  json_put(o, (const char *)s + run, n - run);
  json_put(o, "\"", 1);
}

/* Variable-length integer of binary JSON: 7 bits a byte, at most 5 bytes. */
static bool json_varlen(const uint8_t *p, size_t n, uint32_t *out, size_t *used) {
  uint64_t v = 0;
  for (size_t i = 0; i < n && i < 5; i++) {
    v |= (uint64_t)(p[i] & 0x7f) << (7 * i);
    if (!(p[i] & 0x80)) {
      if (v > UINT32_MAX)
        return false;
      *out = (uint32_t)v;
      *used = i + 1;
      return true;
    }
  }
  return false;
}

static const char json_b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void json_base64(json_out *o, const uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = (uint32_t)p[i] << 16;
    if (i + 1 < n)
      v |= (uint32_t)p[i + 1] << 8;
    if (i + 2 < n)
      v |= p[i + 2];
    char q[4] = {json_b64[(v >> 18) & 63], json_b64[(v >> 12) & 63],
                 i + 1 < n ? json_b64[(v >> 6) & 63] : '=', i + 2 < n ? json_b64[v & 63] : '='};
    json_put(o, q, 4);
  }
}

/* MySQL's packed temporal (8 bytes LE) of DATE/DATETIME/TIMESTAMP or TIME in an opaque value. */
static void json_packed_temporal(json_out *o, uint8_t field_type, int64_t packed) {
  if (field_type == DM_COL_TIME) {
    bool neg = packed < 0;
    if (neg)
      packed = -packed;
    int64_t hms = packed >> 24;
    uint32_t usec = (uint32_t)(packed % (1 << 24));
    json_printf(o, "\"%s%02u:%02u:%02u", neg ? "-" : "", (unsigned)((hms >> 12) % (1 << 10)),
                (unsigned)((hms >> 6) % 64), (unsigned)(hms % 64));
    if (usec)
      json_printf(o, ".%06u", usec);
    json_puts(o, "\"");
    return;
  }
  if (packed < 0)
    packed = -packed;
  int64_t intpart = packed >> 24;
  uint32_t usec = (uint32_t)(packed % (1 << 24));
  int64_t ymd = intpart >> 17, hms = intpart % (1 << 17), ym = ymd >> 5;
  json_printf(o, "\"%04u-%02u-%02u", (unsigned)(ym / 13 % 10000), (unsigned)(ym % 13),
              (unsigned)(ymd % 32));
  if (field_type != DM_COL_DATE) {
    json_printf(o, " %02u:%02u:%02u", (unsigned)(hms >> 12), (unsigned)((hms >> 6) % 64),
                (unsigned)(hms % 64));
    if (usec)
      json_printf(o, ".%06u", usec);
  }
  json_puts(o, "\"");
}

static bool json_value(json_out *o, uint8_t type, const uint8_t *p, size_t n, int depth);

/* An object or array at p (n bytes available); large: 4-byte counts and offsets. */
static bool json_container(json_out *o, bool object, bool large, const uint8_t *p, size_t n,
                           int depth) {
  if (depth > JSON_MAX_DEPTH)
    return false;
  size_t w = large ? 4 : 2;
  if (n < 2 * w)
    return false;
  uint64_t count = bl_le(p, (unsigned)w), size = bl_le(p + w, (unsigned)w);
  if (size > n)
    return false;
  size_t key_entry = w + 2, value_entry = 1 + w;
  uint64_t header = 2 * w + (object ? count * key_entry : 0) + count * value_entry;
  if (header > size)
    return false;
  json_puts(o, object ? "{" : "[");
  for (uint64_t i = 0; i < count; i++) {
    if (i)
      json_puts(o, ", ");
    if (object) {
      const uint8_t *ke = p + 2 * w + i * key_entry;
      uint64_t koff = bl_le(ke, (unsigned)w), klen = bl_le(ke + w, 2);
      if (koff > size || klen > size - koff)
        return false;
      json_string(o, p + koff, klen);
      json_puts(o, ": ");
    }
    const uint8_t *ve = p + 2 * w + (object ? count * key_entry : 0) + i * value_entry;
    uint8_t t = ve[0];
    bool inlined = t == 0x04 || t == 0x05 || t == 0x06 || (large && (t == 0x07 || t == 0x08));
    if (inlined) {
      if (!json_value(o, t, ve + 1, w, depth + 1))
        return false;
    } else {
      uint64_t voff = bl_le(ve + 1, (unsigned)w);
      if (voff >= size)
        return false;
      if (!json_value(o, t, p + voff, size - voff, depth + 1))
        return false;
    }
  }
  json_puts(o, object ? "}" : "]");
  return true;
}

static bool json_value(json_out *o, uint8_t type, const uint8_t *p, size_t n, int depth) {
  switch (type) {
  case 0x00:
  case 0x01:
    return json_container(o, true, type == 0x01, p, n, depth);
  case 0x02:
  case 0x03:
    return json_container(o, false, type == 0x03, p, n, depth);
  case 0x04:
    if (n < 1)
      return false;
    if (p[0] > 2)
      return false;
    json_puts(o, p[0] == 0 ? "null" : p[0] == 1 ? "true" : "false");
    return true;
  case 0x05:
    if (n < 2)
      return false;
    json_printf(o, "%d", (int16_t)bl_le(p, 2));
    return true;
  case 0x06:
    if (n < 2)
      return false;
    json_printf(o, "%u", (unsigned)bl_le(p, 2));
    return true;
  case 0x07:
    if (n < 4)
      return false;
    json_printf(o, "%" PRId32, (int32_t)bl_le(p, 4));
    return true;
  case 0x08:
    if (n < 4)
      return false;
    json_printf(o, "%" PRIu32, (uint32_t)bl_le(p, 4));
    return true;
  case 0x09:
    if (n < 8)
      return false;
    json_printf(o, "%" PRId64, (int64_t)bl_le(p, 8));
    return true;
  case 0x0a:
    if (n < 8)
      return false;
    json_printf(o, "%" PRIu64, bl_le(p, 8));
    return true;
  case 0x0b: {
    if (n < 8)
      return false;
    uint64_t bits = bl_le(p, 8);
    double d;
    memcpy(&d, &bits, 8);
    json_double(o, d);
    return true;
  }
  case 0x0c: {
    uint32_t len;
    size_t used;
    if (!json_varlen(p, n, &len, &used) || len > n - used)
      return false;
    json_string(o, p + used, len);
    return true;
  }
  case 0x0f: {
    if (n < 1)
      return false;
    uint8_t ft = p[0];
    uint32_t len;
    size_t used;
    if (!json_varlen(p + 1, n - 1, &len, &used) || len > n - 1 - used)
      return false;
    const uint8_t *d = p + 1 + used;
    if (ft == DM_COL_NEWDECIMAL && len >= 2) {
      char dec[84];
      if (bl_decimal_size(d[0], d[1]) != 0 && bl_decimal_size(d[0], d[1]) <= len - 2 &&
          bl_decimal_to_text(d + 2, d[0], d[1], dec) == 0) {
        json_puts(o, dec);
        return true;
      }
      return false;
    }
    if ((ft == DM_COL_DATE || ft == DM_COL_TIME || ft == DM_COL_DATETIME ||
         ft == DM_COL_TIMESTAMP) &&
        len >= 8) {
      json_packed_temporal(o, ft, (int64_t)bl_le(d, 8));
      return true;
    }
    json_printf(o, "\"base64:type%u:", ft);
    json_base64(o, d, len);
    json_puts(o, "\"");
    return true;
  }
  default:
    return false;
  }
}

long dm_binlog_json_to_text(const uint8_t *bin, size_t bin_len, char *buf, size_t len,
                            dm_error *err) {
  json_out o = {buf, len ? len - 1 : 0, 0};
  bool ok;
  if (bin_len == 0) /* MySQL writes an empty value for a JSON NULL-less empty document */
    ok = (json_puts(&o, "null"), true);
  else
    ok = json_value(&o, bin[0], bin + 1, bin_len - 1, 0);
  if (len)
    buf[o.len < len ? o.len : len - 1] = '\0';
  if (!ok) {
    dm_error_set(err, DM_ERR_BINLOG_CORRUPT, NULL,
                 "binary JSON value of %zu bytes is damaged (bad type, offset past its container, "
                 "or nesting deeper than %d)",
                 bin_len, JSON_MAX_DEPTH);
    return -1;
  }
  return (long)o.len;
}

int dm_binlog_json_diff_next(const dm_binlog_value *v, size_t *cursor, dm_binlog_json_diff *out,
                             dm_error *err) {
  if (v->kind != DM_VAL_JSON_DIFF) {
    dm_error_set(err, DM_ERR_INTERNAL, NULL, "dm_binlog_json_diff_next: not a JSON diff value");
    return -1;
  }
  if (*cursor >= v->v.s.len)
    return 0;
  bl_cur c = bl_cur_make(v->v.s.ptr + *cursor, v->v.s.len - *cursor);
  memset(out, 0, sizeof *out);
  out->op = (uint8_t)bl_uint(&c, 1);
  uint64_t plen = bl_packed(&c);
  out->path.ptr = plen <= bl_left(&c) ? (const char *)bl_bytes(&c, plen) : NULL;
  out->path.len = (uint32_t)plen;
  if (out->op > DM_JSON_DIFF_REMOVE || !out->path.ptr)
    goto bad;
  if (out->op != DM_JSON_DIFF_REMOVE) {
    uint64_t vlen = bl_packed(&c);
    out->value = vlen <= bl_left(&c) ? bl_bytes(&c, vlen) : NULL;
    out->value_len = (uint32_t)vlen;
    if (!out->value)
      goto bad;
  }
  if (c.bad)
    goto bad;
  *cursor = (size_t)(c.p - v->v.s.ptr);
  return 1;
bad:
  dm_error_set(err, DM_ERR_BINLOG_CORRUPT, NULL,
               "partial JSON update: the diff at byte %zu of %" PRIu32 " is damaged", *cursor,
               v->v.s.len);
  *cursor = v->v.s.len;
  return -1;
}

const char *dm_binlog_value_kind_name(int kind) {
  static const char *const names[] = {"ABSENT",    "NULL",     "INT",  "UINT", "FLOAT", "DOUBLE",
                                      "DECIMAL",   "BIT",      "YEAR", "DATE", "TIME",  "DATETIME",
                                      "TIMESTAMP", "STRING",   "BLOB", "ENUM", "SET",   "JSON",
                                      "JSON_DIFF", "GEOMETRY", "RAW"};
  if (kind < 0 || (size_t)kind >= sizeof names / sizeof names[0])
    return "?";
  return names[kind];
}

static void json_time_of_day(json_out *o, const dm_binlog_temporal *t, int fsp) {
  json_printf(o, "%02u:%02u:%02u", t->hour, t->minute, t->second);
  if (fsp > 0) {
    char f[8];
    snprintf(f, sizeof f, "%06u", t->usec % 1000000);
    json_put(o, ".", 1);
    json_put(o, f, (size_t)fsp);
  }
}

long dm_binlog_value_format(const dm_binlog_value *v, const dm_binlog_column *col, char *buf,
                            size_t len) {
  json_out o = {buf, len ? len - 1 : 0, 0};
  int fsp = col ? col->fsp : -1;
  switch (v->kind) {
  case DM_VAL_NULL:
    json_puts(&o, "NULL");
    break;
  case DM_VAL_INT:
    json_printf(&o, "%" PRId64, v->v.i);
    break;
  case DM_VAL_UINT:
  case DM_VAL_BIT:
    json_printf(&o, "%" PRIu64, v->v.u);
    break;
  case DM_VAL_YEAR:
    json_printf(&o, "%04" PRIu64, v->v.u);
    break;
  case DM_VAL_FLOAT:
    json_float(&o, (float)v->v.f);
    break;
  case DM_VAL_DOUBLE:
    json_double(&o, v->v.f);
    break;
  case DM_VAL_DECIMAL:
    json_puts(&o, v->v.dec);
    break;
  case DM_VAL_DATE:
    json_printf(&o, "%04u-%02u-%02u", v->v.t.year, v->v.t.month, v->v.t.day);
    break;
  case DM_VAL_TIME:
    if (v->v.t.negative)
      json_puts(&o, "-");
    json_time_of_day(&o, &v->v.t, fsp < 0 ? (v->v.t.usec ? 6 : 0) : fsp);
    break;
  case DM_VAL_DATETIME:
    json_printf(&o, "%04u-%02u-%02u ", v->v.t.year, v->v.t.month, v->v.t.day);
    json_time_of_day(&o, &v->v.t, fsp < 0 ? (v->v.t.usec ? 6 : 0) : fsp);
    break;
  case DM_VAL_TIMESTAMP: {
    dm_binlog_temporal t = {0};
    if (v->v.ts.sec != 0 || v->v.ts.usec != 0) {
      time_t s = (time_t)v->v.ts.sec;
      struct tm tm;
      if (!gmtime_r(&s, &tm))
        return -1;
      t.year = (uint16_t)(tm.tm_year + 1900);
      t.month = (uint8_t)(tm.tm_mon + 1);
      t.day = (uint8_t)tm.tm_mday;
      t.hour = (uint16_t)tm.tm_hour;
      t.minute = (uint8_t)tm.tm_min;
      t.second = (uint8_t)tm.tm_sec;
    }
    t.usec = v->v.ts.usec;
    json_printf(&o, "%04u-%02u-%02u ", t.year, t.month, t.day);
    json_time_of_day(&o, &t, fsp < 0 ? (t.usec ? 6 : 0) : fsp);
    break;
  }
  case DM_VAL_STRING:
  case DM_VAL_BLOB:
  case DM_VAL_GEOMETRY:
  case DM_VAL_RAW:
    json_put(&o, (const char *)v->v.s.ptr, v->v.s.len);
    for (uint32_t i = 0; i < v->pad_zeros; i++)
      json_put(&o, "", 1);
    break;
  case DM_VAL_ENUM:
    if (col && col->n_values) {
      if (v->v.u >= 1 && v->v.u <= col->n_values)
        json_put(&o, col->values[v->v.u - 1].ptr, col->values[v->v.u - 1].len);
    } else {
      json_printf(&o, "%" PRIu64, v->v.u);
    }
    break;
  case DM_VAL_SET:
    if (col && col->n_values) {
      bool first = true;
      for (uint32_t i = 0; i < col->n_values && i < 64; i++)
        if ((v->v.u >> i) & 1) {
          if (!first)
            json_put(&o, ",", 1);
          json_put(&o, col->values[i].ptr, col->values[i].len);
          first = false;
        }
    } else {
      json_printf(&o, "%" PRIu64, v->v.u);
    }
    break;
  case DM_VAL_JSON: {
    if (v->v.s.len == 0) {
      json_puts(&o, "null");
      break;
    }
    if (!json_value(&o, v->v.s.ptr[0], v->v.s.ptr + 1, v->v.s.len - 1, 0))
      return -1;
    break;
  }
  case DM_VAL_JSON_DIFF: {
    size_t cur = 0;
    dm_binlog_json_diff d;
    dm_error e;
    int rc;
    bool first = true;
    while ((rc = dm_binlog_json_diff_next(v, &cur, &d, &e)) == 1) {
      static const char *const ops[] = {"REPLACE", "INSERT", "REMOVE"};
      if (!first)
        json_puts(&o, "; ");
      first = false;
      json_printf(&o, "%s ", ops[d.op]);
      json_put(&o, d.path.ptr, d.path.len);
      if (d.op != DM_JSON_DIFF_REMOVE) {
        json_puts(&o, " ");
        if (d.value_len == 0 || !json_value(&o, d.value[0], d.value + 1, d.value_len - 1, 0))
          return -1;
      }
    }
    if (rc < 0)
      return -1;
    break;
  }
  default:
    return -1;
  }
  if (len)
    buf[o.len < len ? o.len : len - 1] = '\0';
  return (long)o.len;
}
