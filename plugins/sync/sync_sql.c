/*
 * SQL literals for binlog row values (sync_sql.h). This runs for every cell the sync unit
 * replays, so each literal is written straight into the statement buffer after one reserve: no
 * allocation besides the buffer's growth, no printf on the hot paths (integers, strings, blobs).
 */
#include "sync_sql.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmhost/db.h"
#include "dmhost/sdk.h"

/*
 * SET NAMES binary: the binlog carries each column's bytes in the column's own charset. With a
 * binary client charset the parser takes every byte of a literal as-is (no multi-byte scanning,
 * so a gbk/sjis character whose second byte is 0x5c cannot swallow a quote: we escape that byte
 * like any backslash), the introducer alone says which charset the bytes are in, and nothing is
 * converted on the way in or out.
 * time_zone '+00:00': TIMESTAMP values are epoch seconds; we print them as UTC text, and the
 * session must read that text as UTC (also: no DST gap or overlap can shift a value).
 * sql_mode: nothing that refuses a value the source could have stored. No STRICT_*: strict mode
 * refuses the ENUM error value (index 0) in every spelling, which a non-strict source can hold.
 * ALLOW_INVALID_DATES and no NO_ZERO_DATE / NO_ZERO_IN_DATE: zero dates, '2024-00-00' and
 * '2023-02-31' go in as they are. NO_AUTO_VALUE_ON_ZERO: an AUTO_INCREMENT column logged as 0
 * stays 0 instead of taking the next value. NO_ENGINE_SUBSTITUTION: replayed DDL naming an
 * engine the target lacks fails instead of silently using another one. Not set on purpose:
 * NO_BACKSLASH_ESCAPES and ANSI_QUOTES (our literals use backslash escapes, identifiers
 * backticks), PAD_CHAR_TO_FULL_LENGTH (would change CHAR values read back). The price of no
 * strict mode: a target column narrower than the source's truncates with a warning instead of
 * failing (the caller may check warnings).
 * foreign_key_checks=0: the source has checked every row already, rows may be replayed in
 * batches whose order differs from the checks' needs, and a safe-mode REPLACE of a parent row
 * would otherwise run the child's ON DELETE CASCADE. Caveat: the source's cascades are not in
 * the binlog (measured on 10.11: deleting a parent logs only the parent row), so child rows a
 * cascade removed or changed on the source stay on the target.
 * unique_checks=1 (the default, set so a reused connection cannot carry 0): the sync unit relies
 * on duplicate-key errors being raised, and with 0 InnoDB may skip checks of secondary unique
 * keys and let duplicates in (the change buffer is off by default in 10.11, so 0 gains nothing).
 * Everything here exists in MySQL too; MariaDB-only switches (check_constraint_checks) are left
 * out.
 */
const char SYNC_SQL_SESSION[] = "SET NAMES binary;"
                                "SET time_zone='+00:00';"
                                "SET sql_mode='" SYNC_SQL_MODE "';"
                                "SET foreign_key_checks=0;"
                                "SET unique_checks=1";

/* ---- charsets by collation id ---- */

#define SQL_CHARSET_NAME_MAX 32 /* MY_CS_NAME_SIZE */
#define SQL_COLLATION_ID_MAX 65535

typedef struct sql_charset {
  char name[SQL_CHARSET_NAME_MAX + 1];
  /* ucs2, utf16, utf16le, utf32: every character is at least 2 bytes. Written as hex so no
   * escape sequence ever splits a code unit (the parser would left-pad an odd byte count). */
  bool wide;
} sql_charset;

struct sync_charsets {
  uint32_t n_ids;  /* ids 0 .. n_ids - 1 */
  uint16_t *by_id; /* 0: unknown, else 1 + index into charsets */
  sql_charset *charsets;
  uint32_t n_charsets;
  char **coll_by_id; /* n_ids collation names (NULL: unknown), for COLLATE (sync_expr.c) */
};

void sync_charsets_free(sync_charsets *cs) {
  if (!cs)
    return;
  for (uint32_t i = 0; cs->coll_by_id && i < cs->n_ids; i++)
    free(cs->coll_by_id[i]);
  free(cs->coll_by_id);
  free(cs->by_id);
  free(cs->charsets);
  free(cs);
}

static bool sql_charset_is_wide(const char *name) {
  return strcmp(name, "ucs2") == 0 || strncmp(name, "utf16", 5) == 0 || strcmp(name, "utf32") == 0;
}

/* Index + 1 of name in cs->charsets, adding it if new; 0 when memory ran out. */
static uint16_t sql_charset_intern(sync_charsets *cs, const char *name, uint32_t *cap) {
  for (uint32_t i = 0; i < cs->n_charsets; i++)
    if (strcmp(cs->charsets[i].name, name) == 0)
      return (uint16_t)(i + 1);
  if (cs->n_charsets == *cap) {
    uint32_t ncap = *cap ? *cap * 2 : 32;
    sql_charset *p = realloc(cs->charsets, ncap * sizeof *p);
    if (!p)
      return 0;
    cs->charsets = p;
    *cap = ncap;
  }
  sql_charset *c = &cs->charsets[cs->n_charsets++];
  dm_strlcpy(c->name, name, sizeof c->name);
  c->wide = sql_charset_is_wide(c->name);
  return (uint16_t)cs->n_charsets;
}

int sync_charsets_load(MYSQL *conn, sync_charsets **out, dm_error *err) {
  static const char q[] =
      "SELECT ID, CHARACTER_SET_NAME, COLLATION_NAME FROM information_schema.COLLATIONS";
  *out = NULL;
  if (mysql_real_query(conn, q, sizeof q - 1) != 0) {
    dm_db_error(conn, DM_DB_TARGET, err, DM_ERR_DB_QUERY,
                "reading the target's collations (information_schema.COLLATIONS) failed");
    return -1;
  }
  MYSQL_RES *res = mysql_store_result(conn);
  if (!res) {
    dm_db_error(conn, DM_DB_TARGET, err, DM_ERR_DB_QUERY,
                "reading the target's collations (information_schema.COLLATIONS) failed");
    return -1;
  }
  sync_charsets *cs = calloc(1, sizeof *cs);
  uint32_t max_id = 0, cap = 0;
  MYSQL_ROW row;
  while (cs && (row = mysql_fetch_row(res)) != NULL)
    if (row[0] && row[1]) {
      unsigned long id = strtoul(row[0], NULL, 10);
      if (id <= SQL_COLLATION_ID_MAX && id > max_id)
        max_id = (uint32_t)id;
    }
  if (cs) {
    cs->n_ids = max_id + 1;
    cs->by_id = calloc(cs->n_ids, sizeof *cs->by_id);
    cs->coll_by_id = calloc(cs->n_ids, sizeof *cs->coll_by_id);
  }
  bool ok = cs && cs->by_id && cs->coll_by_id;
  mysql_data_seek(res, 0);
  while (ok && (row = mysql_fetch_row(res)) != NULL) {
    if (!row[0] || !row[1]) /* collations without an id (none in 10.11) cannot be in a binlog */
      continue;
    unsigned long id = strtoul(row[0], NULL, 10);
    if (id > SQL_COLLATION_ID_MAX)
      continue;
    uint16_t k = sql_charset_intern(cs, row[1], &cap);
    if (!k)
      ok = false;
    cs->by_id[id] = k;
    if (row[2] && !(cs->coll_by_id[id] = strdup(row[2])))
      ok = false;
  }
  mysql_free_result(res);
  if (!ok) {
    sync_charsets_free(cs);
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "no memory for the target's collation table");
    return -1;
  }
  *out = cs;
  return 0;
}

static const sql_charset *sql_charset_get(const sync_charsets *cs, uint32_t id) {
  if (!cs || id >= cs->n_ids || cs->by_id[id] == 0)
    return NULL;
  return &cs->charsets[cs->by_id[id] - 1];
}

const char *sync_charsets_collation(const sync_charsets *cs, uint32_t collation_id) {
  return cs && collation_id < cs->n_ids ? cs->coll_by_id[collation_id] : NULL;
}

const char *sync_charsets_name(const sync_charsets *cs, uint32_t collation_id) {
  const sql_charset *c = sql_charset_get(cs, collation_id);
  return c ? c->name : NULL;
}

/* ---- writers into reserved space ---- */

/*
 * Escape character after a backslash, by byte; 0 = the byte goes as-is. Only ' \ and NUL must
 * be escaped (NUL so nothing on the way takes it for the end of the statement); CR and LF are
 * escaped so a statement stays on one line in logs and error messages.
 */
static const char sql_escape_table[256] = {
    ['\0'] = '0', ['\n'] = 'n', ['\r'] = 'r', ['\''] = '\'', ['\\'] = '\\'};

/*
 * Escape n bytes from src to dst (room for 2n bytes); returns bytes written. One table lookup
 * per byte, no branch on the charset: the session's binary client charset makes every byte count
 * alone.
 */
static size_t sql_escape(char *dst, const uint8_t *src, size_t n) {
  char *o = dst;
  for (size_t i = 0; i < n; i++) {
    uint8_t c = src[i];
    char e = sql_escape_table[c];
    if (!e) {
      *o++ = (char)c;
    } else {
      o[0] = '\\';
      o[1] = e;
      o += 2;
    }
  }
  return (size_t)(o - dst);
}

static size_t sql_hex(char *dst, const uint8_t *src, size_t n) {
  static const char digits[] = "0123456789ABCDEF";
  for (size_t i = 0; i < n; i++) {
    dst[2 * i] = digits[src[i] >> 4];
    dst[2 * i + 1] = digits[src[i] & 15];
  }
  return 2 * n;
}

/* Unsigned decimal, most significant digit first; returns digits written (at most 20). */
static size_t sql_u64(char *dst, uint64_t u) {
  char tmp[20];
  size_t n = 0;
  do {
    tmp[n++] = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  for (size_t i = 0; i < n; i++)
    dst[i] = tmp[n - 1 - i];
  return n;
}

static int sql_put_u64(dm_buf *b, uint64_t u) {
  if (dm_buf_reserve(b, 20) < 0)
    return -1;
  b->len += sql_u64(b->p + b->len, u);
  b->p[b->len] = '\0';
  return 0;
}

static int sql_put_i64(dm_buf *b, int64_t i) {
  if (dm_buf_reserve(b, 21) < 0)
    return -1;
  char *o = b->p + b->len;
  uint64_t u = (uint64_t)i;
  if (i < 0) {
    *o++ = '-';
    u = 0 - u; /* also right for INT64_MIN */
  }
  o += sql_u64(o, u);
  b->len = (size_t)(o - b->p);
  b->p[b->len] = '\0';
  return 0;
}

/*
 * A quoted literal: prefix (an introducer, or ""), then the bytes escaped, then `zeros` escaped
 * NUL bytes (BINARY(n)'s trailing zeros the binlog leaves out), then the closing quote. Wide
 * charsets take the hex form instead: prefix X'..' (with a space: "_utf16X" would be a name).
 * Reserves once; s must not point into b unless it lies past the literal's worst-case end
 * (sql_quoted_max), so that the reserve cannot move it and the output cannot reach it.
 */
static size_t sql_quoted_max(size_t plen, size_t n, size_t zeros) {
  return plen + 4 + 2 * n + 2 * zeros;
}

static int sql_put_quoted(dm_buf *b, const char *prefix, const uint8_t *s, size_t n, size_t zeros,
                          bool hex) {
  size_t plen = strlen(prefix);
  if (dm_buf_reserve(b, sql_quoted_max(plen, n, zeros)) < 0)
    return -1;
  char *o = b->p + b->len;
  memcpy(o, prefix, plen);
  o += plen;
  if (hex) {
    if (plen)
      *o++ = ' ';
    *o++ = 'X';
    *o++ = '\'';
    o += sql_hex(o, s, n);
    for (size_t i = 0; i < zeros; i++, o += 2)
      o[0] = o[1] = '0';
  } else {
    *o++ = '\'';
    o += sql_escape(o, s, n);
    for (size_t i = 0; i < zeros; i++, o += 2) {
      o[0] = '\\';
      o[1] = '0';
    }
  }
  *o++ = '\'';
  b->len = (size_t)(o - b->p);
  b->p[b->len] = '\0';
  return 0;
}

/* "_<charset>" for a column's collation into intro (at least SQL_CHARSET_NAME_MAX + 2 bytes);
 * "" when the collation is unknown: a bare literal is a binary string under SET NAMES binary,
 * which the column takes byte for byte (an index on the column is then not usable for it). */
static const sql_charset *sql_introducer(const sync_charsets *cs, const dm_binlog_column *col,
                                         char *intro) {
  const sql_charset *c = sql_charset_get(cs, col->collation);
  intro[0] = '\0';
  if (c) {
    intro[0] = '_';
    memcpy(intro + 1, c->name, strlen(c->name) + 1);
  }
  return c;
}

/* ---- value kinds ---- */

static int sql_no_memory(const dm_binlog_column *col, dm_error *err) {
  dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "no memory for the SQL text of column `%.*s`",
               (int)col->name.len, col->name.ptr);
  return -1;
}

/*
 * FLOAT and DOUBLE: 17 significant digits always read back as the same double, and a FLOAT is
 * widened exactly, so the double read back narrows to the same float and `float_col <=> lit`
 * (compared as doubles) holds. Shorter forms ("1.1") would insert the same float but not compare
 * equal to it. The exponent makes it a DOUBLE literal: a DECIMAL literal would round through
 * decimal arithmetic first. -0 keeps its sign ("-0e0"), as unary minus on a double does.
 */
static int sql_put_double(dm_buf *b, double d, const dm_binlog_column *col, dm_error *err) {
  if (!isfinite(d)) {
    dm_error_set(err, DM_ERR_BINLOG_UNSUPPORTED, NULL,
                 "column `%.*s`: the value %s cannot be written as SQL (MariaDB stores no NaN or "
                 "infinity)",
                 (int)col->name.len, col->name.ptr, isnan(d) ? "NaN" : "infinity");
    return -1;
  }
  char tmp[40];
  int n = snprintf(tmp, sizeof tmp, "%.17g", d);
  bool has_exp = false;
  for (int i = 0; i < n; i++) {
    if (tmp[i] == ',') /* a host that set LC_NUMERIC: SQL wants a point */
      tmp[i] = '.';
    else if (tmp[i] == 'e')
      has_exp = true;
  }
  if (!has_exp) {
    memcpy(tmp + n, "e0", 3);
    n += 2;
  }
  return dm_buf_put(b, tmp, (size_t)n) < 0 ? sql_no_memory(col, err) : 0;
}

/* DATE, TIME, DATETIME, TIMESTAMP: the SDK's text with the column's fraction digits, quoted.
 * TIMESTAMP prints in UTC, which SYNC_SQL_SESSION's time_zone reads back. */
static int sql_put_temporal(dm_buf *b, const dm_binlog_value *v, const dm_binlog_column *col,
                            dm_error *err) {
  char tmp[48];
  long n = dm_binlog_value_format(v, col, tmp, sizeof tmp);
  if (n < 0 || (size_t)n >= sizeof tmp) {
    dm_error_set(err, DM_ERR_BINLOG_UNSUPPORTED, NULL,
                 "column `%.*s`: a %s value out of the range SQL can write (TIMESTAMP %" PRId64 ")",
                 (int)col->name.len, col->name.ptr, dm_binlog_value_kind_name(v->kind),
                 v->kind == DM_VAL_TIMESTAMP ? v->v.ts.sec : 0);
    return -1;
  }
  if (dm_buf_reserve(b, (size_t)n + 2) < 0)
    return sql_no_memory(col, err);
  char *o = b->p + b->len;
  *o++ = '\'';
  memcpy(o, tmp, (size_t)n);
  o += n;
  *o++ = '\'';
  b->len = (size_t)(o - b->p);
  b->p[b->len] = '\0';
  return 0;
}

/* ENUM by name (so a target ENUM with values added in other places still gets the right one),
 * in the column's charset; by number without names, or for index 0 (the '' error value, which
 * the non-strict session stores from 0). */
static int sql_put_enum(dm_buf *b, const dm_binlog_value *v, const dm_binlog_column *col,
                        const sync_charsets *cs) {
  if (v->v.u == 0 || v->v.u > col->n_values || !col->values)
    return sql_put_u64(b, v->v.u);
  char intro[SQL_CHARSET_NAME_MAX + 2];
  const sql_charset *c = sql_introducer(cs, col, intro);
  const dm_binlog_str *name = &col->values[v->v.u - 1];
  return sql_put_quoted(b, intro, (const uint8_t *)name->ptr, name->len, 0, c && c->wide);
}

/* SET by names joined with ',' (names cannot hold a comma); by bitmask without names or when a
 * bit has no name. */
static int sql_put_set(dm_buf *b, const dm_binlog_value *v, const dm_binlog_column *col,
                       const sync_charsets *cs) {
  uint64_t named = col->n_values >= 64 ? UINT64_MAX : ((uint64_t)1 << col->n_values) - 1;
  if (!col->values || (v->v.u & ~named) != 0)
    return sql_put_u64(b, v->v.u);
  char intro[SQL_CHARSET_NAME_MAX + 2];
  const sql_charset *c = sql_introducer(cs, col, intro);
  size_t joined = 0;
  for (uint32_t i = 0; i < col->n_values && i < 64; i++)
    if ((v->v.u >> i) & 1)
      joined += col->values[i].len + (joined ? 1 : 0);
  /* Join the names in the buffer's spare room past the literal's worst-case end, then quote from
   * there: no temporary allocation, and the one reserve covers both. */
  size_t max = sql_quoted_max(strlen(intro), joined, 0);
  if (dm_buf_reserve(b, max + joined) < 0)
    return -1;
  char *src = b->p + b->len + max, *o = src;
  for (uint32_t i = 0; i < col->n_values && i < 64; i++)
    if ((v->v.u >> i) & 1) {
      if (o != src)
        *o++ = ',';
      memcpy(o, col->values[i].ptr, col->values[i].len);
      o += col->values[i].len;
    }
  return sql_put_quoted(b, intro, (const uint8_t *)src, joined, 0, c && c->wide);
}

/* MySQL binary JSON: its text, written into the buffer's spare room and then quoted from there.
 * MySQL logs a JSON column holding SQL NULL as NULL; an empty value is the JSON null literal. */
static int sql_put_mysql_json(dm_buf *b, const dm_binlog_value *v, const dm_binlog_column *col,
                              dm_error *err) {
  static const char prefix[] = "_utf8mb4";
  if (v->v.s.len == 0)
    return dm_buf_puts(b, "_utf8mb4'null'") < 0 ? sql_no_memory(col, err) : 0;
  char probe[1];
  dm_error jerr;
  long n = dm_binlog_json_to_text(v->v.s.ptr, v->v.s.len, probe, sizeof probe, &jerr);
  if (n < 0) {
    dm_error_set(err, DM_ERR_BINLOG_CORRUPT, jerr.message,
                 "column `%.*s`: the MySQL binary JSON value cannot be read", (int)col->name.len,
                 col->name.ptr);
    return -1;
  }
  size_t text = (size_t)n, max = sql_quoted_max(sizeof prefix - 1, text, 0);
  if (dm_buf_reserve(b, max + text + 1) < 0)
    return sql_no_memory(col, err);
  char *src = b->p + b->len + max;
  dm_binlog_json_to_text(v->v.s.ptr, v->v.s.len, src, text + 1, &jerr); /* same bytes again */
  return sql_put_quoted(b, prefix, (const uint8_t *)src, text, 0, false) < 0
             ? sql_no_memory(col, err)
             : 0;
}

static int sql_unsupported(const dm_binlog_value *v, const dm_binlog_column *col, const char *why,
                           dm_error *err) {
  dm_error_set(err, DM_ERR_BINLOG_UNSUPPORTED, NULL,
               "column `%.*s` (binlog type %u): a %s value cannot be written as SQL: %s",
               (int)col->name.len, col->name.ptr, col->real_type,
               dm_binlog_value_kind_name(v->kind), why);
  return -1;
}

int sync_sql_value(dm_buf *b, const dm_binlog_value *v, const dm_binlog_column *col,
                   const sync_charsets *cs, dm_error *err) {
  /* Kinds with a helper taking err return from the switch; the others only fail for memory. */
  int rc;
  switch (v->kind) {
  case DM_VAL_NULL:
    rc = dm_buf_put(b, "NULL", 4);
    break;
  case DM_VAL_INT:
    rc = sql_put_i64(b, v->v.i);
    break;
  case DM_VAL_UINT:
  case DM_VAL_BIT:  /* a number sets BIT(n)'s bits; b'..' would be the same value, longer */
  case DM_VAL_YEAR: /* numeric 0 is the zero year; the string '0' would be 2000 */
    rc = sql_put_u64(b, v->v.u);
    break;
  case DM_VAL_FLOAT:
  case DM_VAL_DOUBLE:
    return sql_put_double(b, v->v.f, col, err);
  case DM_VAL_DECIMAL: /* at most 65 digits: still a DECIMAL literal, exact */
    rc = dm_buf_puts(b, v->v.dec);
    break;
  case DM_VAL_DATE:
  case DM_VAL_TIME:
  case DM_VAL_DATETIME:
  case DM_VAL_TIMESTAMP:
    return sql_put_temporal(b, v, col, err);
  case DM_VAL_STRING: {
    char intro[SQL_CHARSET_NAME_MAX + 2];
    const sql_charset *c = sql_introducer(cs, col, intro);
    rc = sql_put_quoted(b, intro, v->v.s.ptr, v->v.s.len, v->pad_zeros, c && c->wide);
    break;
  }
  case DM_VAL_BLOB:
  case DM_VAL_GEOMETRY: /* SRID + WKB is the column's own storage form: it takes the bytes */
    rc = sql_put_quoted(b, "_binary", v->v.s.ptr, v->v.s.len, v->pad_zeros, false);
    break;
  case DM_VAL_ENUM:
    rc = sql_put_enum(b, v, col, cs);
    break;
  case DM_VAL_SET:
    rc = sql_put_set(b, v, col, cs);
    break;
  case DM_VAL_JSON:
    return sql_put_mysql_json(b, v, col, err);
  case DM_VAL_JSON_DIFF:
    return sql_unsupported(v, col,
                           "a MySQL partial JSON update (binlog_row_value_options="
                           "PARTIAL_JSON) carries only the changes; turn it off on the source",
                           err);
  case DM_VAL_RAW:
    return sql_unsupported(v, col,
                           "the column is compressed (or an old DECIMAL) and its bytes are not "
                           "decoded; drop COMPRESSED from the source column",
                           err);
  case DM_VAL_ABSENT:
    dm_error_set(err, DM_ERR_INTERNAL, NULL,
                 "column `%.*s` is not in the row image: it has no value to write",
                 (int)col->name.len, col->name.ptr);
    return -1;
  default:
    return sql_unsupported(v, col, "unknown value kind", err);
  }
  return rc < 0 ? sql_no_memory(col, err) : 0;
}

/* ---- identifiers ---- */

int sync_sql_lit(MYSQL *c, dm_buf *b, const void *p, size_t n) {
  if (dm_buf_reserve(b, 2 * n + 3) < 0)
    return -1;
  b->p[b->len++] = '\'';
  b->len += mysql_real_escape_string(c, b->p + b->len, p, (unsigned long)n);
  b->p[b->len++] = '\'';
  b->p[b->len] = '\0';
  return 0;
}

int sync_sql_utf8(dm_buf *b, const char *s, size_t n) {
  return sql_put_quoted(b, "_utf8mb4", (const uint8_t *)s, n, 0, false);
}

int sync_sql_ident(dm_buf *b, const char *name, size_t len) {
  size_t need = dm_db_quote_ident(NULL, 0, name, len);
  if (dm_buf_reserve(b, need + 1) < 0)
    return -1;
  b->len += dm_db_quote_ident(b->p + b->len, need + 1, name, len);
  return 0;
}

int sync_sql_qualified(dm_buf *b, const char *db, const char *table) {
  if (sync_sql_ident(b, db, strlen(db)) < 0 || dm_buf_putc(b, '.') < 0 ||
      sync_sql_ident(b, table, strlen(table)) < 0)
    return -1;
  return 0;
}
