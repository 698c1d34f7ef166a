/*
 * Table maps and row images: the table map's column metadata (and its optional metadata, written
 * with binlog_row_metadata=FULL) decoded into an owned copy; rows decoded in place into caller
 * arrays, one dm_binlog_value per column, with every length checked against the event.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "binlog_internal.h"

typedef struct rows_owned {
  uint8_t *body;         /* copy of the table map event's body */
  dm_binlog_str *values; /* ENUM/SET values of all columns */
  /* dm_binlog_table_map_fill: the names and values it copied, and whether the names are its */
  char *filled;
  dm_binlog_str *filled_values;
  size_t n_filled_values;
  bool names_filled;
} rows_owned;

/* ---- table map ---- */

/* Which columns the SIGNEDNESS bits and the charset lists cover: MariaDB counts YEAR (a TINYINT
 * inside) as numeric and GEOMETRY (a BLOB inside) as character; MySQL does not. */
static bool rows_is_numeric(uint8_t t, bool mariadb) {
  if (mariadb && t == DM_COL_YEAR)
    return true;
  switch (t) {
  case DM_COL_TINY:
  case DM_COL_SHORT:
  case DM_COL_INT24:
  case DM_COL_LONG:
  case DM_COL_LONGLONG:
  case DM_COL_NEWDECIMAL:
  case DM_COL_FLOAT:
  case DM_COL_DOUBLE:
    return true;
  default:
    return false;
  }
}

static bool rows_is_character(uint8_t t, bool mariadb) {
  if (mariadb && t == DM_COL_GEOMETRY)
    return true;
  switch (t) {
  case DM_COL_STRING:
  case DM_COL_VAR_STRING:
  case DM_COL_VARCHAR:
  case DM_COL_BLOB:
  case DM_COL_TINY_BLOB:
  case DM_COL_MEDIUM_BLOB:
  case DM_COL_LONG_BLOB:
  case DM_COL_BLOB_COMPRESSED:
  case DM_COL_VARCHAR_COMPRESSED:
    return true;
  default:
    return false;
  }
}

static int rows_tm_corrupt(const dm_binlog_event *ev, dm_error *err, const char *what) {
  return bl_corrupt(err, ev, what);
}

/* Reads each column's metadata from the table map's metadata block. */
static int rows_column_meta(const dm_binlog_event *ev, dm_binlog_column *col, bl_cur *m,
                            dm_error *err) {
  col->real_type = col->type;
  switch (col->type) {
  case DM_COL_FLOAT:
  case DM_COL_DOUBLE:
    col->pack_len = (uint8_t)bl_uint(m, 1);
    col->meta = col->pack_len;
    break;
  case DM_COL_BLOB:
  case DM_COL_TINY_BLOB:
  case DM_COL_MEDIUM_BLOB:
  case DM_COL_LONG_BLOB:
  case DM_COL_GEOMETRY:
  case DM_COL_JSON:
  case DM_COL_BLOB_COMPRESSED:
    col->meta = (uint16_t)bl_uint(m, 1);
    col->max_len = col->meta;
    if (!m->bad && (col->meta < 1 || col->meta > 4))
      return rows_tm_corrupt(ev, err, "a BLOB column with a length size outside 1-4");
    break;
  case DM_COL_VARCHAR:
  case DM_COL_VAR_STRING:
  case DM_COL_VARCHAR_COMPRESSED:
    col->meta = (uint16_t)bl_uint(m, 2);
    col->max_len = col->meta;
    break;
  case DM_COL_BIT: {
    uint8_t bits = (uint8_t)bl_uint(m, 1), bytes = (uint8_t)bl_uint(m, 1);
    col->meta = (uint16_t)(bytes << 8 | bits);
    col->bits = (uint16_t)(bytes * 8 + bits);
    if (!m->bad && (col->bits == 0 || col->bits > 64))
      return rows_tm_corrupt(ev, err, "a BIT column wider than 64 bits");
    break;
  }
  case DM_COL_NEWDECIMAL:
    col->precision = (uint8_t)bl_uint(m, 1);
    col->scale = (uint8_t)bl_uint(m, 1);
    col->meta = (uint16_t)(col->precision << 8 | col->scale);
    if (!m->bad && (col->precision == 0 || col->precision > 65 || col->scale > 38 ||
                    col->scale > col->precision))
      return rows_tm_corrupt(ev, err, "a DECIMAL column with impossible precision/scale");
    break;
  case DM_COL_STRING:
  case DM_COL_ENUM:
  case DM_COL_SET: {
    uint8_t b0 = (uint8_t)bl_uint(m, 1), b1 = (uint8_t)bl_uint(m, 1);
    col->meta = (uint16_t)(b0 << 8 | b1);
    if (b0 != 0 && (b0 & 0x30) != 0x30) {
      /* CHAR longer than 255 bytes: two length bits folded into the type byte */
      col->max_len = (uint32_t)((((b0 & 0x30) ^ 0x30) << 4) | b1);
      col->real_type = (uint8_t)(b0 | 0x30);
    } else {
      col->real_type = b0 ? b0 : col->type;
      col->max_len = b1;
    }
    if (col->real_type == DM_COL_ENUM || col->real_type == DM_COL_SET) {
      col->pack_len = b1;
      if (!m->bad && ((col->real_type == DM_COL_ENUM && (b1 < 1 || b1 > 2)) ||
                      (col->real_type == DM_COL_SET && (b1 < 1 || b1 > 8))))
        return rows_tm_corrupt(ev, err, "an ENUM/SET column with an impossible size");
    } else if (col->real_type != DM_COL_STRING) {
      return rows_tm_corrupt(ev, err, "a CHAR column with an unknown real type");
    }
    break;
  }
  case DM_COL_TIME2:
  case DM_COL_DATETIME2:
  case DM_COL_TIMESTAMP2:
    col->fsp = (uint8_t)bl_uint(m, 1);
    col->meta = col->fsp;
    if (!m->bad && col->fsp > 6)
      return rows_tm_corrupt(ev, err, "a temporal column with more than 6 fractional digits");
    break;
  case DM_COL_TYPED_ARRAY:
    dm_error_set(err, DM_ERR_BINLOG_UNSUPPORTED, NULL,
                 "binlog %s: table map at offset %" PRIu64 " has a typed-array column", ev->file,
                 ev->offset);
    return -1;
  default:
    break;
  }
  if (m->bad)
    return rows_tm_corrupt(ev, err, "the column metadata block is shorter than the types need");
  return 0;
}

/* Collations from DEFAULT_CHARSET (default + exceptions) or COLUMN_CHARSET (one each), over the
 * columns `pick` selects. */
static void rows_apply_charsets(dm_binlog_table_map *tm, bl_cur *v, bool per_column,
                                bool (*pick)(const dm_binlog_column *, bool), bool mariadb) {
  if (per_column) {
    for (uint32_t i = 0; i < tm->column_count && bl_left(v); i++)
      if (pick(&tm->columns[i], mariadb))
        tm->columns[i].collation = (uint32_t)bl_packed(v);
    return;
  }
  uint32_t def = (uint32_t)bl_packed(v);
  for (uint32_t i = 0; i < tm->column_count; i++)
    if (pick(&tm->columns[i], mariadb))
      tm->columns[i].collation = def;
  while (bl_left(v) && !v->bad) {
    uint64_t idx = bl_packed(v), coll = bl_packed(v);
    uint64_t n = 0;
    for (uint32_t i = 0; i < tm->column_count; i++)
      if (pick(&tm->columns[i], mariadb) && n++ == idx)
        tm->columns[i].collation = (uint32_t)coll;
  }
}

static bool rows_pick_char(const dm_binlog_column *c, bool mariadb) {
  return rows_is_character(c->real_type, mariadb);
}
static bool rows_pick_enumset(const dm_binlog_column *c, bool mariadb) {
  (void)mariadb;
  return c->real_type == DM_COL_ENUM || c->real_type == DM_COL_SET;
}

/* ENUM_STR_VALUE / SET_STR_VALUE: for each such column, a count and the values. */
static int rows_apply_values(dm_binlog_table_map *tm, rows_owned *o, size_t *n_used, size_t cap,
                             bl_cur *v, uint8_t want) {
  for (uint32_t i = 0; i < tm->column_count && bl_left(v); i++) {
    dm_binlog_column *c = &tm->columns[i];
    if (c->real_type != want)
      continue;
    uint64_t n = bl_packed(v);
    if (v->bad || n > bl_left(v) || *n_used + n > cap)
      return -1;
    c->n_values = (uint32_t)n;
    c->values = o->values + *n_used;
    for (uint64_t k = 0; k < n; k++) {
      uint64_t len = bl_packed(v);
      const uint8_t *p = len <= bl_left(v) ? bl_bytes(v, len) : NULL;
      if (!p)
        return -1;
      o->values[*n_used].ptr = (const char *)p;
      o->values[*n_used].len = (uint32_t)len;
      (*n_used)++;
    }
  }
  return v->bad ? -1 : 0;
}

static int rows_optional_metadata(dm_binlog_table_map *tm, rows_owned *o, bl_cur *c,
                                  const dm_binlog_event *ev, bool mariadb, dm_error *err) {
  /* Values can be no more than the bytes left: size the pool by that. */
  size_t cap = bl_left(c), used = 0;
  o->values = calloc(cap ? cap : 1, sizeof *o->values);
  if (!o->values) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "binlog %s: no memory for a table map", ev->file);
    return -1;
  }
  while (bl_left(c) && !c->bad) {
    uint8_t type = (uint8_t)bl_uint(c, 1);
    uint64_t len = bl_packed(c);
    if (c->bad || len > bl_left(c))
      return rows_tm_corrupt(ev, err, "an optional metadata field runs past the event");
    bl_cur v = bl_cur_make(c->p, len);
    c->p += len;
    tm->has_optional_metadata = true;
    switch (type) {
    case 1: { /* SIGNEDNESS: one bit per numeric column, most significant first */
      uint32_t k = 0;
      for (uint32_t i = 0; i < tm->column_count; i++) {
        dm_binlog_column *col = &tm->columns[i];
        if (!rows_is_numeric(col->real_type, mariadb))
          continue;
        if (k / 8 >= len)
          break;
        col->has_signedness = true;
        col->is_unsigned = (v.p[k / 8] >> (7 - k % 8)) & 1;
        k++;
      }
      break;
    }
    case 2:
    case 3:
      rows_apply_charsets(tm, &v, type == 3, rows_pick_char, mariadb);
      break;
    case 10:
    case 11:
      rows_apply_charsets(tm, &v, type == 11, rows_pick_enumset, mariadb);
      break;
    case 4: /* COLUMN_NAME */
      for (uint32_t i = 0; i < tm->column_count && bl_left(&v); i++) {
        uint64_t n = bl_packed(&v);
        const uint8_t *p = n <= bl_left(&v) ? bl_bytes(&v, n) : NULL;
        if (!p)
          return rows_tm_corrupt(ev, err, "a column name runs past its metadata field");
        tm->columns[i].name.ptr = (const char *)p;
        tm->columns[i].name.len = (uint32_t)n;
      }
      tm->has_column_names = true;
      break;
    case 5:
    case 6:
      if (rows_apply_values(tm, o, &used, cap, &v, type == 5 ? DM_COL_SET : DM_COL_ENUM) < 0)
        return rows_tm_corrupt(ev, err, "ENUM/SET values run past their metadata field");
      break;
    case 7: /* GEOMETRY_TYPE */
      for (uint32_t i = 0; i < tm->column_count && bl_left(&v); i++)
        if (tm->columns[i].real_type == DM_COL_GEOMETRY)
          tm->columns[i].geometry_type = (uint32_t)bl_packed(&v);
      break;
    case 8: /* SIMPLE_PRIMARY_KEY */
    case 9: /* PRIMARY_KEY_WITH_PREFIX */
      while (bl_left(&v) && !v.bad) {
        uint64_t idx = bl_packed(&v);
        uint64_t prefix = type == 9 ? bl_packed(&v) : 0;
        if (!v.bad && idx < tm->column_count) {
          tm->columns[idx].in_primary_key = true;
          tm->columns[idx].pk_prefix = (uint32_t)prefix;
        }
      }
      break;
    default: /* COLUMN_VISIBILITY and later: not needed to decode rows */
      break;
    }
    if (v.bad)
      return rows_tm_corrupt(ev, err, "an optional metadata field is shorter than it says");
  }
  return 0;
}

void dm_binlog_table_map_free(dm_binlog_table_map *tm) {
  if (!tm)
    return;
  rows_owned *o = tm->owned_;
  if (o) {
    free(o->body);
    free(o->values);
    free(o->filled);
    free(o->filled_values);
    free(o);
  }
  free(tm->columns);
  free(tm);
}

/* ---- what a schema tracker knows ---- */

static bool rows_is_text_like(uint8_t t) {
  switch (t) {
  case DM_COL_VARCHAR:
  case DM_COL_STRING:
  case DM_COL_VAR_STRING:
  case DM_COL_BLOB:
  case DM_COL_TINY_BLOB:
  case DM_COL_MEDIUM_BLOB:
  case DM_COL_LONG_BLOB:
  case DM_COL_ENUM:
  case DM_COL_SET:
    return true;
  default:
    return false;
  }
}

static bool rows_same_name(const dm_binlog_str *a, const char *b) {
  size_t n = strlen(b);
  if (a->len != n)
    return false;
  for (size_t i = 0; i < n; i++) {
    unsigned char x = (unsigned char)a->ptr[i], y = (unsigned char)b[i];
    if (x != y && !(x < 0x80 && y < 0x80 && (x | 0x20) == (y | 0x20) && (x | 0x20) >= 'a' &&
                    (x | 0x20) <= 'z'))
      return false;
  }
  return true;
}

int dm_binlog_table_map_fill(dm_binlog_table_map *tm, const dm_binlog_column_def *defs, uint32_t n,
                             uint32_t *mismatch, dm_error *err) {
  rows_owned *o = tm->owned_;
  if (n != tm->column_count) {
    dm_error_set(err, DM_ERR_BINLOG_UNSUPPORTED, NULL,
                 "table map of `%s`.`%s`: %" PRIu32
                 " columns, the structure given for it has %" PRIu32,
                 tm->db.ptr, tm->table.ptr, tm->column_count, n);
    return -1;
  }
  bool own_names = tm->has_column_names && !(o && o->names_filled);
  if (own_names)
    for (uint32_t i = 0; i < n; i++)
      if (defs[i].name && !rows_same_name(&tm->columns[i].name, defs[i].name)) {
        *mismatch = i;
        return 1;
      }
  size_t bytes = 0, n_values = 0;
  for (uint32_t i = 0; i < n; i++) {
    bytes += (defs[i].name ? strlen(defs[i].name) : 0) + 1;
    for (uint32_t k = 0; k < defs[i].n_values; k++)
      bytes += strlen(defs[i].values[k]) + 1;
    n_values += defs[i].n_values;
  }
  char *text = malloc(bytes ? bytes : 1);
  dm_binlog_str *vals = calloc(n_values ? n_values : 1, sizeof *vals);
  if (!o || !text || !vals) {
    free(text);
    free(vals);
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "no memory for the structure of `%s`.`%s`",
                 tm->db.ptr, tm->table.ptr);
    return -1;
  }
  /* the primary key comes with the names (FULL); a map without names has none of its own
   * unless an earlier fill gave it */
  bool set_pk = !own_names;
  size_t at = 0, vi = 0;
  for (uint32_t i = 0; i < n; i++) {
    dm_binlog_column *c = &tm->columns[i];
    const dm_binlog_column_def *d = &defs[i];
    if (!own_names) {
      size_t l = d->name ? strlen(d->name) : 0;
      memcpy(text + at, d->name ? d->name : "", l + 1);
      c->name.ptr = text + at;
      c->name.len = (uint32_t)l;
      at += l + 1;
    }
    if (set_pk)
      c->in_primary_key = d->in_primary_key;
    if (!c->has_signedness)
      c->is_unsigned = d->is_unsigned;
    if (rows_is_text_like(c->real_type) && (c->collation == 0 || o->names_filled))
      c->collation = d->collation;
    bool values_filled = o->filled_values && c->values >= o->filled_values &&
                         c->values < o->filled_values + o->n_filled_values;
    if ((c->real_type == DM_COL_ENUM || c->real_type == DM_COL_SET) &&
        (c->n_values == 0 || values_filled)) {
      c->values = vals + vi;
      c->n_values = d->n_values;
      for (uint32_t k = 0; k < d->n_values; k++) {
        size_t l = strlen(d->values[k]);
        memcpy(text + at, d->values[k], l + 1);
        vals[vi].ptr = text + at;
        vals[vi].len = (uint32_t)l;
        vi++;
        at += l + 1;
      }
    }
  }
  free(o->filled);
  free(o->filled_values);
  o->filled = text;
  o->filled_values = vals;
  o->n_filled_values = vi;
  if (!own_names) {
    o->names_filled = true;
    tm->has_column_names = true;
  }
  return 0;
}

static int rows_table_id(const dm_binlog_format *fmt, const dm_binlog_event *ev, bl_cur *c,
                         uint64_t *id, size_t fallback) {
  size_t ph = bl_post_header_len(fmt, ev->header.type, fallback);
  if (bl_left(c) < ph || ph < 6)
    return -1;
  *id = ph == 6 ? bl_uint(c, 4) : bl_uint(c, 6);
  return 0;
}

int dm_binlog_event_table_id(const dm_binlog_format *fmt, const dm_binlog_event *ev,
                             uint64_t *table_id, dm_error *err) {
  bl_cur c = bl_cur_make(ev->body, ev->body_len);
  if (ev->header.type != DM_BINLOG_TABLE_MAP && !dm_binlog_is_rows_event(ev->header.type) &&
      !(ev->header.type >= DM_BINLOG_WRITE_ROWS_COMPRESSED_V1 &&
        ev->header.type <= DM_BINLOG_DELETE_ROWS_COMPRESSED_V2))
    return bl_corrupt(err, ev, "not a table map or rows event");
  size_t fallback = ev->header.type == DM_BINLOG_TABLE_MAP ? 8 : 10;
  if (rows_table_id(fmt, ev, &c, table_id, fallback) < 0) {
    *table_id = 0;
    return bl_corrupt(err, ev, "body shorter than its post-header");
  }
  return 0;
}

int dm_binlog_table_map_decode(const dm_binlog_format *fmt, const dm_binlog_event *ev,
                               dm_binlog_table_map **out, dm_error *err) {
  *out = NULL;
  if (ev->header.type != DM_BINLOG_TABLE_MAP)
    return bl_corrupt(err, ev, "not a table map");
  dm_binlog_table_map *tm = calloc(1, sizeof *tm);
  rows_owned *o = calloc(1, sizeof *o);
  if (tm)
    tm->owned_ = o;
  if (o)
    o->body = malloc(ev->body_len ? ev->body_len : 1);
  if (!tm || !o || !o->body) {
    free(o);
    if (tm)
      tm->owned_ = NULL;
    dm_binlog_table_map_free(tm);
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "binlog %s: no memory for a table map", ev->file);
    return -1;
  }
  memcpy(o->body, ev->body, ev->body_len);
  bl_cur c = bl_cur_make(o->body, ev->body_len);
  if (rows_table_id(fmt, ev, &c, &tm->table_id, 8) < 0) {
    rows_tm_corrupt(ev, err, "body shorter than its post-header");
    goto fail;
  }
  tm->flags = (uint16_t)bl_uint(&c, 2);
  c.p = o->body + bl_post_header_len(fmt, DM_BINLOG_TABLE_MAP, 8);
  tm->db.len = (uint32_t)bl_uint(&c, 1);
  tm->db.ptr = (const char *)bl_bytes(&c, tm->db.len + 1);
  tm->table.len = (uint32_t)bl_uint(&c, 1);
  tm->table.ptr = (const char *)bl_bytes(&c, tm->table.len + 1);
  if (c.bad || tm->db.ptr[tm->db.len] != '\0' || tm->table.ptr[tm->table.len] != '\0') {
    rows_tm_corrupt(ev, err, "database or table name runs past the event or lacks its NUL");
    goto fail;
  }
  uint64_t cc = bl_packed(&c);
  if (c.bad || cc == 0 || cc > 4096 || cc > bl_left(&c)) {
    rows_tm_corrupt(ev, err, "impossible column count");
    goto fail;
  }
  tm->column_count = (uint32_t)cc;
  tm->columns = calloc(cc, sizeof *tm->columns);
  if (!tm->columns) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "binlog %s: no memory for a table map", ev->file);
    goto fail;
  }
  const uint8_t *types = bl_bytes(&c, cc);
  uint64_t meta_len = bl_packed(&c);
  const uint8_t *meta = meta_len <= bl_left(&c) ? bl_bytes(&c, meta_len) : NULL;
  const uint8_t *nulls = bl_bytes(&c, (cc + 7) / 8);
  if (c.bad || !meta || !nulls) {
    rows_tm_corrupt(ev, err, "column types, metadata or NULL bitmap run past the event");
    goto fail;
  }
  bl_cur m = bl_cur_make(meta, meta_len);
  for (uint32_t i = 0; i < cc; i++) {
    dm_binlog_column *col = &tm->columns[i];
    col->type = types[i];
    col->name.ptr = "";
    if (rows_column_meta(ev, col, &m, err) < 0)
      goto fail;
    col->nullable = (nulls[i / 8] >> (i % 8)) & 1;
    if (col->real_type == DM_COL_JSON)
      tm->n_json_columns++;
  }
  if (rows_optional_metadata(tm, o, &c, ev, fmt->mariadb, err) < 0)
    goto fail;
  *out = tm;
  return 0;
fail:
  dm_binlog_table_map_free(tm);
  return -1;
}

/* ---- rows ---- */

bool dm_binlog_is_rows_event(uint8_t type) {
  return (type >= DM_BINLOG_WRITE_ROWS_V1 && type <= DM_BINLOG_DELETE_ROWS_V1) ||
         (type >= DM_BINLOG_WRITE_ROWS_V2 && type <= DM_BINLOG_DELETE_ROWS_V2) ||
         type == DM_BINLOG_PARTIAL_UPDATE_ROWS;
}

int dm_binlog_rows_begin(const dm_binlog_format *fmt, const dm_binlog_event *ev,
                         dm_binlog_rows *rows, dm_error *err) {
  memset(rows, 0, sizeof *rows);
  uint8_t t = ev->header.type;
  if (t >= DM_BINLOG_WRITE_ROWS_COMPRESSED_V1 && t <= DM_BINLOG_DELETE_ROWS_COMPRESSED_V2) {
    dm_error_set(err, DM_ERR_BINLOG_UNSUPPORTED, NULL,
                 "binlog %s: compressed rows event at offset %" PRIu64
                 " (log_bin_compress): uncompress it first (dm_binlog_event_uncompress)",
                 ev->file, ev->offset);
    return -1;
  }
  if (!dm_binlog_is_rows_event(t))
    return bl_corrupt(err, ev, "not a rows event");
  switch (t) {
  case DM_BINLOG_WRITE_ROWS_V1:
  case DM_BINLOG_WRITE_ROWS_V2:
    rows->kind = DM_ROWS_WRITE;
    break;
  case DM_BINLOG_DELETE_ROWS_V1:
  case DM_BINLOG_DELETE_ROWS_V2:
    rows->kind = DM_ROWS_DELETE;
    break;
  default:
    rows->kind = DM_ROWS_UPDATE;
    break;
  }
  rows->version = t <= DM_BINLOG_DELETE_ROWS_V1 ? 1 : 2;
  rows->partial = t == DM_BINLOG_PARTIAL_UPDATE_ROWS;
  bl_cur c = bl_cur_make(ev->body, ev->body_len);
  size_t ph = bl_post_header_len(fmt, t, rows->version == 1 ? 8 : 10);
  if (rows_table_id(fmt, ev, &c, &rows->table_id, rows->version == 1 ? 8 : 10) < 0)
    return bl_corrupt(err, ev, "body shorter than its post-header");
  rows->flags = (uint16_t)bl_uint(&c, 2);
  if (rows->version == 2) {
    uint16_t extra = (uint16_t)bl_uint(&c, 2);
    c.p = ev->body + ph;
    if (extra < 2 || !bl_need(&c, (size_t)extra - 2))
      return bl_corrupt(err, ev, "v2 extra data runs past the event");
    rows->extra_len = extra - 2u;
    rows->extra = rows->extra_len ? bl_bytes(&c, rows->extra_len) : NULL;
  } else {
    c.p = ev->body + ph;
  }
  uint64_t cc = bl_packed(&c);
  if (c.bad || cc == 0 || cc > 4096)
    return bl_corrupt(err, ev, "impossible column count");
  rows->column_count = (uint32_t)cc;
  rows->columns_before = bl_bytes(&c, (cc + 7) / 8);
  if (rows->kind == DM_ROWS_UPDATE)
    rows->columns_after = bl_bytes(&c, (cc + 7) / 8);
  else
    rows->columns_after = rows->columns_before;
  if (c.bad)
    return bl_corrupt(err, ev, "column bitmaps run past the event");
  rows->p_ = c.p;
  rows->end_ = c.end;
  rows->raw_ = ev->raw;
  rows->offset_ = ev->offset;
  rows->file_ = ev->file;
  rows->type_ = t;
  return 0;
}

static uint32_t rows_popcount(const uint8_t *bm, uint32_t n) {
  uint32_t k = 0;
  for (uint32_t i = 0; i < n; i++)
    k += (bm[i / 8] >> (i % 8)) & 1;
  return k;
}

static int rows_image(dm_binlog_rows *r, const dm_binlog_table_map *tm, bl_cur *c,
                      const uint8_t *present, bool after, dm_binlog_value *out, dm_error *err) {
  const uint8_t *partial_bits = NULL;
  if (r->partial && after) {
    uint64_t opts = bl_packed(c);
    if (!c->bad && (opts & 1) && tm->n_json_columns)
      partial_bits = bl_bytes(c, (tm->n_json_columns + 7) / 8);
  }
  uint32_t n = rows_popcount(present, r->column_count);
  const uint8_t *at = c->p;
  const uint8_t *nulls = bl_bytes(c, (n + 7) / 8);
  if (c->bad)
    return bl_value_corrupt(r, tm, 0, at, "the row's NULL bitmap runs past the event", err);
  uint32_t k = 0, json_i = 0;
  for (uint32_t i = 0; i < r->column_count; i++) {
    const dm_binlog_column *col = &tm->columns[i];
    bool partial = false;
    if (col->real_type == DM_COL_JSON) {
      partial = partial_bits && ((partial_bits[json_i / 8] >> (json_i % 8)) & 1);
      json_i++;
    }
    dm_binlog_value *v = out ? &out[i] : NULL;
    dm_binlog_value scratch;
    if (!v)
      v = &scratch;
    memset(v, 0, offsetof(dm_binlog_value, v) + sizeof v->v.s);
    v->pad_zeros = 0;
    v->column_type = col->real_type;
    if (!((present[i / 8] >> (i % 8)) & 1)) {
      v->kind = DM_VAL_ABSENT;
      continue;
    }
    bool is_null = (nulls[k / 8] >> (k % 8)) & 1;
    k++;
    if (is_null) {
      v->kind = DM_VAL_NULL;
      continue;
    }
    if (bl_value_decode(r, tm, i, c, partial, v, err) < 0)
      return -1;
  }
  return 0;
}

int dm_binlog_rows_next(dm_binlog_rows *r, const dm_binlog_table_map *tm, dm_binlog_value *before,
                        dm_binlog_value *after, dm_error *err) {
  if (r->p_ >= r->end_)
    return 0;
  if (!tm || tm->column_count != r->column_count || tm->table_id != r->table_id) {
    dm_error_set(err, DM_ERR_BINLOG_CORRUPT, NULL,
                 "binlog %s: rows event at offset %" PRIu64 " for table id %" PRIu64
                 " with %" PRIu32 " columns does not match its table map (%s)",
                 r->file_ && r->file_[0] ? r->file_ : "(memory)", r->offset_, r->table_id,
                 r->column_count, tm ? "other id or column count" : "none given");
    return -1;
  }
  bl_cur c = {r->p_, r->end_, false};
  int rc;
  if (r->kind == DM_ROWS_WRITE)
    rc = rows_image(r, tm, &c, r->columns_before, true, after, err);
  else if (r->kind == DM_ROWS_DELETE)
    rc = rows_image(r, tm, &c, r->columns_before, false, before, err);
  else {
    rc = rows_image(r, tm, &c, r->columns_before, false, before, err);
    if (rc == 0)
      rc = rows_image(r, tm, &c, r->columns_after, true, after, err);
  }
  if (rc < 0) {
    r->p_ = r->end_;
    return -1;
  }
  r->p_ = c.p;
  r->row_++;
  return 1;
}
