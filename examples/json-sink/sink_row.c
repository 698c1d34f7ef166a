/*
 * json-sink: one row change as one line of JSON in Debezium's envelope, built and escaped by
 * json-c (libjson-c-dev, which dmhost already uses for its control protocol):
 *
 *   {"before":{...}|null,"after":{...}|null,
 *    "source":{"connector":"dmhost-json-sink","version":..,"sink_version":N,"name":<source-id>,
 *              "file":..,"pos":..,"row":..,"gtid":..|null,"db":..,"table":..,"server_id":..,
 *              "ts_ms":..},
 *    "op":"c"|"u"|"d","ts_ms":..}
 *
 * Values: integers (also BIT, YEAR) as numbers, FLOAT/DOUBLE as numbers, DECIMAL as its exact
 * text, DATE/TIME/DATETIME as their SQL text, TIMESTAMP as ISO 8601 in UTC ("...T...Z"), text as
 * a UTF-8 string, ENUM/SET by their names, binary strings, BLOB, GEOMETRY and anything this SDK
 * does not decode as base64, NULL as null. A column missing from a minimal row image is left out.
 */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "sink.h"

/* ---- text ---- */

static bool sink_utf8_valid(const uint8_t *p, size_t n) {
  size_t i = 0;
  while (i < n) {
    uint8_t c = p[i];
    size_t k;
    uint32_t cp;
    if (c < 0x80) {
      i++;
      continue;
    } else if ((c & 0xe0) == 0xc0) {
      k = 1;
      cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      k = 2;
      cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      k = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (n - i <= k)
      return false;
    for (size_t j = 1; j <= k; j++) {
      if ((p[i + j] & 0xc0) != 0x80)
        return false;
      cp = (cp << 6) | (p[i + j] & 0x3f);
    }
    if ((k == 1 && cp < 0x80) || (k == 2 && cp < 0x800) || (k == 3 && cp < 0x10000) ||
        cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
      return false;
    i += k + 1;
  }
  return true;
}

/* latin1 collations (MariaDB's ids): their text is converted byte for byte */
static bool sink_latin1(uint32_t collation) {
  switch (collation) {
  case 5:
  case 8:
  case 15:
  case 31:
  case 47:
  case 48:
  case 49:
  case 94:
    return true;
  default:
    return false;
  }
}

static json_object *sink_json_text(const uint8_t *p, size_t n, uint32_t collation) {
  if (!sink_latin1(collation) && sink_utf8_valid(p, n))
    return json_object_new_string_len((const char *)p, (int)n);
  /* latin1, or bytes that are not UTF-8 in a column of unknown charset: read as latin1 */
  char *u = malloc(2 * n + 1);
  if (!u)
    return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (p[i] < 0x80) {
      u[k++] = (char)p[i];
    } else {
      u[k++] = (char)(0xc0 | (p[i] >> 6));
      u[k++] = (char)(0x80 | (p[i] & 0x3f));
    }
  }
  json_object *o = json_object_new_string_len(u, (int)k);
  free(u);
  return o;
}

static json_object *sink_json_base64(const uint8_t *p, size_t n, uint32_t pad_zeros) {
  static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t total = n + pad_zeros;
  char *out = malloc(4 * ((total + 2) / 3) + 1);
  if (!out)
    return NULL;
  size_t k = 0;
  for (size_t i = 0; i < total; i += 3) {
    uint32_t v = 0;
    size_t m = total - i < 3 ? total - i : 3;
    for (size_t j = 0; j < 3; j++)
      v = (v << 8) | (i + j < n ? p[i + j] : 0); /* the pad bytes are zeros */
    out[k++] = tab[(v >> 18) & 63];
    out[k++] = tab[(v >> 12) & 63];
    out[k++] = m > 1 ? tab[(v >> 6) & 63] : '=';
    out[k++] = m > 2 ? tab[v & 63] : '=';
  }
  json_object *o = json_object_new_string_len(out, (int)k);
  free(out);
  return o;
}

/* ---- values ---- */

static json_object *sink_json_formatted(const dm_binlog_value *v, const dm_binlog_column *col,
                                        bool iso_utc) {
  char buf[128];
  long n = dm_binlog_value_format(v, col, buf, sizeof buf);
  if (n < 0 || (size_t)n >= sizeof buf)
    return NULL;
  if (iso_utc && n >= 19 && buf[10] == ' ' && strncmp(buf, "0000", 4) != 0) {
    buf[10] = 'T';
    buf[n++] = 'Z';
    buf[n] = '\0';
  }
  return json_object_new_string_len(buf, (int)n);
}

static int sink_json_value(sink *s, const dm_binlog_value *v, const dm_binlog_column *col,
                           json_object **out, dm_error *err) {
  json_object *o = NULL;
  switch (v->kind) {
  case DM_VAL_NULL:
    *out = NULL;
    return 0;
  case DM_VAL_INT:
    o = json_object_new_int64(v->v.i);
    break;
  case DM_VAL_UINT:
  case DM_VAL_BIT:
  case DM_VAL_YEAR:
    o = json_object_new_uint64(v->v.u);
    break;
  case DM_VAL_FLOAT:
  case DM_VAL_DOUBLE:
    o = json_object_new_double(v->v.f);
    break;
  case DM_VAL_DECIMAL:
    o = json_object_new_string(v->v.dec);
    break;
  case DM_VAL_DATE:
  case DM_VAL_TIME:
  case DM_VAL_DATETIME:
    o = sink_json_formatted(v, col, false);
    break;
  case DM_VAL_TIMESTAMP:
    o = sink_json_formatted(v, col, true);
    break;
  case DM_VAL_ENUM:
  case DM_VAL_SET: {
    if (!col->n_values) { /* no names known: the index / bitmask */
      o = json_object_new_uint64(v->v.u);
      break;
    }
    size_t need = 64;
    for (uint32_t i = 0; i < col->n_values; i++)
      need += col->values[i].len + 1;
    char *buf = malloc(need);
    if (!buf)
      break;
    long n = dm_binlog_value_format(v, col, buf, need);
    if (n >= 0 && (size_t)n < need)
      o = sink_json_text((const uint8_t *)buf, (size_t)n, col->collation);
    free(buf);
    break;
  }
  case DM_VAL_STRING: /* binary when the collation came from information_schema */
    o = col->collation == DM_BINLOG_COLLATION_BINARY
            ? sink_json_base64(v->v.s.ptr, v->v.s.len, v->pad_zeros)
            : sink_json_text(v->v.s.ptr, v->v.s.len, col->collation);
    break;
  case DM_VAL_JSON: {
    long n = dm_binlog_json_to_text(v->v.s.ptr, v->v.s.len, NULL, 0, err);
    if (n < 0)
      return -1;
    char *buf = malloc((size_t)n + 1);
    if (!buf)
      break;
    dm_binlog_json_to_text(v->v.s.ptr, v->v.s.len, buf, (size_t)n + 1, err);
    o = json_object_new_string_len(buf, (int)n);
    free(buf);
    break;
  }
  case DM_VAL_JSON_DIFF:
    s->host->error_make(s->ctx, err, DM_ERR_BINLOG_UNSUPPORTED, NULL,
                        SINK_WHO ": a MySQL partial JSON update (binlog_row_value_options = "
                                 "PARTIAL_JSON): turn it off on the source; the sink needs whole "
                                 "after-images");
    return -1;
  default: /* BLOB, GEOMETRY, RAW */
    o = sink_json_base64(v->v.s.ptr, v->v.s.len, v->pad_zeros);
    break;
  }
  if (!o) {
    s->host->error_make(s->ctx, err, DM_ERR_NO_MEMORY, NULL,
                        SINK_WHO ": no memory for a value (or one that cannot be formatted) of "
                                 "column %.*s",
                        (int)col->name.len, col->name.ptr);
    return -1;
  }
  *out = o;
  return 0;
}

/* An image as an object {"name": value, ...}; columns outside it are left out. */
static int sink_json_image(sink *s, const dm_binlog_table_map *tm, const dm_binlog_value *vals,
                           json_object **out, dm_error *err) {
  json_object *img = json_object_new_object();
  if (!img)
    goto nomem;
  for (uint32_t i = 0; i < tm->column_count; i++) {
    if (vals[i].kind == DM_VAL_ABSENT)
      continue;
    const dm_binlog_column *col = &tm->columns[i];
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)col->name.len, col->name.ptr);
    json_object *v;
    if (sink_json_value(s, &vals[i], col, &v, err) != 0) {
      json_object_put(img);
      return -1;
    }
    if (json_object_object_add(img, name, v) != 0) {
      json_object_put(v);
      json_object_put(img);
      goto nomem;
    }
  }
  *out = img;
  return 0;
nomem:
  s->host->error_make(s->ctx, err, DM_ERR_NO_MEMORY, NULL, SINK_WHO ": no memory");
  return -1;
}

static json_object *sink_json_source(sink *s, const dm_binlog_event *ev, uint32_t row,
                                     const dm_binlog_table_map *tm) {
  json_object *src = json_object_new_object();
  if (!src)
    return NULL;
  bool ok =
      json_object_object_add(src, "connector", json_object_new_string("dmhost-json-sink")) == 0 &&
      json_object_object_add(src, "version", json_object_new_string(SINK_VERSION_TEXT)) == 0 &&
      json_object_object_add(src, "sink_version", json_object_new_int(JSON_SINK_VERSION)) == 0 &&
      json_object_object_add(src, "name", json_object_new_string(s->host->source_id(s->ctx))) ==
          0 &&
      json_object_object_add(src, "file", json_object_new_string(ev->file)) == 0 &&
      json_object_object_add(src, "pos", json_object_new_uint64(ev->offset)) == 0 &&
      json_object_object_add(src, "row", json_object_new_int64(row)) == 0 &&
      json_object_object_add(src, "gtid", s->gtid[0] ? json_object_new_string(s->gtid) : NULL) ==
          0 &&
      json_object_object_add(src, "db", json_object_new_string(tm->db.ptr)) == 0 &&
      json_object_object_add(src, "table", json_object_new_string(tm->table.ptr)) == 0 &&
      json_object_object_add(src, "server_id", json_object_new_int64(ev->header.server_id)) == 0 &&
      json_object_object_add(src, "ts_ms",
                             json_object_new_int64((int64_t)ev->header.timestamp * 1000)) == 0;
  if (!ok) {
    json_object_put(src);
    return NULL;
  }
  return src;
}

static int sink_grow_values(sink *s, uint32_t n, dm_error *err) {
  if (n <= s->n_values)
    return 0;
  dm_binlog_value *b = realloc(s->before, n * sizeof *b);
  if (b)
    s->before = b;
  dm_binlog_value *a = b ? realloc(s->after, n * sizeof *a) : NULL;
  if (a)
    s->after = a;
  if (!a) {
    s->host->error_make(s->ctx, err, DM_ERR_NO_MEMORY, NULL, SINK_WHO ": no memory");
    return -1;
  }
  s->n_values = n;
  return 0;
}

static const dm_binlog_table_map *sink_map(sink *s, uint64_t table_id) {
  for (size_t i = s->n_maps; i-- > 0;)
    if (s->maps[i]->table_id == table_id)
      return s->maps[i];
  return NULL;
}

int sink_rows_event(sink *s, const dm_binlog_format *fmt, const dm_binlog_event *ev,
                    dm_error *err) {
  dm_binlog_rows rows;
  if (dm_binlog_rows_begin(fmt, ev, &rows, err) != 0)
    return -1;
  const dm_binlog_table_map *tm = sink_map(s, rows.table_id);
  if (!tm) {
    s->host->error_make(s->ctx, err, DM_ERR_BINLOG_CORRUPT, NULL,
                        SINK_WHO ": rows event at %s:%" PRIu64 " names table id %" PRIu64
                                 " that no table map before it in its statement describes",
                        ev->file, ev->offset, rows.table_id);
    return -1;
  }
  const char *db = tm->db.ptr, *table = tm->table.ptr;
  static const char *const ops[] = {
      [DM_ROWS_WRITE] = "c", [DM_ROWS_UPDATE] = "u", [DM_ROWS_DELETE] = "d"};
  static const char *const events[] = {
      [DM_ROWS_WRITE] = "insert", [DM_ROWS_UPDATE] = "update", [DM_ROWS_DELETE] = "delete"};
  if (rows.kind < DM_ROWS_WRITE || rows.kind > DM_ROWS_DELETE)
    return 0;
  if (!s->host->table_allowed(s->ctx, db, table) ||
      (DM_HOST_HAS(s->host, event_ignored) &&
       s->host->event_ignored(s->ctx, db, table, events[rows.kind], NULL)))
    return 0;
  if (sink_grow_values(s, tm->column_count, err) != 0)
    return -1;
  sink_file *f = sink_file_for(s, db, table, err);
  if (!f)
    return -1;
  int rc;
  for (uint32_t row = 0; (rc = dm_binlog_rows_next(&rows, tm, s->before, s->after, err)) == 1;
       row++) {
    json_object *line = json_object_new_object(), *before = NULL, *after = NULL, *src = NULL;
    if (!line)
      goto nomem;
    if (rows.kind != DM_ROWS_WRITE && sink_json_image(s, tm, s->before, &before, err) != 0) {
      json_object_put(line);
      return -1;
    }
    if (rows.kind != DM_ROWS_DELETE && sink_json_image(s, tm, s->after, &after, err) != 0) {
      json_object_put(before);
      json_object_put(line);
      return -1;
    }
    json_object_object_add(line, "before", before);
    json_object_object_add(line, "after", after);
    if (!(src = sink_json_source(s, ev, row, tm))) {
      json_object_put(line);
      goto nomem;
    }
    json_object_object_add(line, "source", src);
    json_object_object_add(line, "op", json_object_new_string(ops[rows.kind]));
    json_object_object_add(line, "ts_ms", json_object_new_int64(sink_now_ms()));
    size_t len;
    const char *text = json_object_to_json_string_length(
        line, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
    if (!text) {
      json_object_put(line);
      goto nomem;
    }
    rc = sink_file_append_line(s, f, text, len, err); /* text lives in `line` */
    json_object_put(line);
    if (rc != 0)
      return -1;
  }
  return rc < 0 ? -1 : 0;
nomem:
  s->host->error_make(s->ctx, err, DM_ERR_NO_MEMORY, NULL, SINK_WHO ": no memory");
  return -1;
}
