/*
 * dmhost SDK: table maps and row events (row-based replication).
 *
 * A TABLE_MAP event describes a table (column types and their metadata, and with
 * binlog_row_metadata=FULL also names, signedness, charsets, ENUM/SET values, primary key) and
 * gives it a numeric id; the row events that follow refer to that id. A table map is decoded
 * into an owned copy (it must outlive its event: the rows come in later events), rows are
 * iterated in place with no allocation: each row is decoded into caller-provided arrays of
 * dm_binlog_value, one per column of the table.
 *
 * Values point into the row event's bytes (strings, blobs, JSON) or hold the value itself
 * (numbers, temporal values, DECIMAL as text): copy what must outlive the event.
 */
#ifndef DMHOST_BINLOG_ROWS_H
#define DMHOST_BINLOG_ROWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "binlog.h"
#include "error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Column types as the binlog writes them (MySQL's enum_field_types). */
typedef enum dm_binlog_column_type {
  DM_COL_DECIMAL = 0, /* old pre-5.0 DECIMAL: not decoded (raw) */
  DM_COL_TINY = 1,
  DM_COL_SHORT = 2,
  DM_COL_LONG = 3,
  DM_COL_FLOAT = 4,
  DM_COL_DOUBLE = 5,
  DM_COL_NULL = 6,
  DM_COL_TIMESTAMP = 7,
  DM_COL_LONGLONG = 8,
  DM_COL_INT24 = 9,
  DM_COL_DATE = 10,
  DM_COL_TIME = 11,
  DM_COL_DATETIME = 12,
  DM_COL_YEAR = 13,
  DM_COL_NEWDATE = 14,
  DM_COL_VARCHAR = 15,
  DM_COL_BIT = 16,
  DM_COL_TIMESTAMP2 = 17,
  DM_COL_DATETIME2 = 18,
  DM_COL_TIME2 = 19,
  DM_COL_TYPED_ARRAY = 20,
  DM_COL_BLOB_COMPRESSED = 140, /* MariaDB: compressed columns (not decoded: raw) */
  DM_COL_VARCHAR_COMPRESSED = 141,
  DM_COL_JSON = 245, /* MySQL binary JSON (MariaDB's JSON is a LONGTEXT) */
  DM_COL_NEWDECIMAL = 246,
  DM_COL_ENUM = 247,
  DM_COL_SET = 248,
  DM_COL_TINY_BLOB = 249,
  DM_COL_MEDIUM_BLOB = 250,
  DM_COL_LONG_BLOB = 251,
  DM_COL_BLOB = 252,
  DM_COL_VAR_STRING = 253,
  DM_COL_STRING = 254,
  DM_COL_GEOMETRY = 255,
} dm_binlog_column_type;

#define DM_BINLOG_COLLATION_BINARY 63 /* the "binary" charset: BINARY/VARBINARY/BLOB */

/* One column of a table map. Strings point into the table map's own copy. */
typedef struct dm_binlog_column {
  uint8_t type; /* as in the binlog (DM_COL_STRING for CHAR, ENUM and SET) */
  uint8_t
      real_type; /* CHAR/ENUM/SET told apart: DM_COL_STRING, DM_COL_ENUM, DM_COL_SET; else type */
  uint16_t meta; /* type-specific metadata as the server wrote it (see docs/binlog.md) */
  uint32_t max_len;         /* CHAR/VARCHAR: maximum length in bytes; BLOB: length bytes (1-4) */
  uint8_t precision, scale; /* NEWDECIMAL */
  uint8_t fsp;              /* TIME2/DATETIME2/TIMESTAMP2: fractional digits 0-6 */
  uint8_t pack_len;         /* ENUM (1-2) / SET (1-8) / FLOAT (4) / DOUBLE (8) */
  uint16_t bits;            /* BIT: number of bits */
  bool nullable;
  /* From the optional metadata (binlog_row_metadata=FULL, or MINIMAL for some) */
  bool has_signedness;
  bool is_unsigned;      /* numeric columns */
  uint32_t collation;    /* string, ENUM and SET columns: collation id (63 = binary); 0 unknown */
  dm_binlog_str name;    /* "" without metadata */
  uint32_t n_values;     /* ENUM/SET: number of permitted values */
  dm_binlog_str *values; /* ENUM/SET permitted values (index 0 = first value) */
  uint32_t geometry_type;
  bool in_primary_key;
  uint32_t pk_prefix; /* prefix length of the key part; 0 = whole column */
} dm_binlog_column;

typedef struct dm_binlog_table_map {
  uint64_t table_id;
  uint16_t flags;
  dm_binlog_str db;    /* NUL-terminated as well */
  dm_binlog_str table; /* NUL-terminated as well */
  uint32_t column_count;
  dm_binlog_column *columns;
  bool has_optional_metadata; /* any optional metadata field at all */
  bool has_column_names;
  uint32_t n_json_columns; /* for MySQL partial JSON updates */
  void *owned_;            /* private: the copy everything points into */
} dm_binlog_table_map;

/*
 * Decode a TABLE_MAP event into a new table map (one allocation set, freed by
 * dm_binlog_table_map_free). Returns 0, or -1 with DM_ERR_BINLOG_CORRUPT naming the field and
 * offset, or DM_ERR_NO_MEMORY.
 */
int dm_binlog_table_map_decode(const dm_binlog_format *fmt, const dm_binlog_event *ev,
                               dm_binlog_table_map **out, dm_error *err);
void dm_binlog_table_map_free(dm_binlog_table_map *tm);
/* Table id of a rows or table map event without decoding the rest; 0 and err on bad bytes. */
int dm_binlog_event_table_id(const dm_binlog_format *fmt, const dm_binlog_event *ev,
                             uint64_t *table_id, dm_error *err);

/*
 * What a schema tracker knows of a column that a table map may lack: binlog_row_metadata = NO_LOG
 * (MariaDB's and MySQL 5.7's default) writes no names, signedness, charsets or ENUM/SET values;
 * MINIMAL (MySQL 8's default) writes signedness and charsets but no names. The sync unit keeps
 * each table's structure as of its binlog position (docs/sync.md, "The schema tracker") and fills
 * them in with dm_binlog_table_map_fill before it decodes a row.
 */
typedef struct dm_binlog_column_def {
  const char *name;
  bool is_unsigned;          /* numeric columns */
  uint32_t collation;        /* string, ENUM and SET columns: collation id (63 binary) */
  uint32_t n_values;         /* ENUM/SET: number of permitted values */
  const char *const *values; /* ENUM/SET: the permitted values, NUL-terminated */
  bool in_primary_key;
} dm_binlog_column_def;

/*
 * Fills what `tm` lacks from `defs` (n = column_count, in table order): names when the map has
 * none, signedness when it has none, the collation of a string, ENUM or SET column it gives none
 * for, ENUM/SET values, the primary key when no column is marked. What the map carries itself is
 * kept: when it has names and one differs from its def (compared without regard to case), nothing
 * is changed and 1 is returned with *mismatch = that column's index. Returns 0 when filled; -1
 * with err (DM_ERR_BINLOG_UNSUPPORTED when n is not the map's column count, DM_ERR_NO_MEMORY). The
 * copies belong to tm (freed by dm_binlog_table_map_free); a second fill replaces the first.
 */
int dm_binlog_table_map_fill(dm_binlog_table_map *tm, const dm_binlog_column_def *defs, uint32_t n,
                             uint32_t *mismatch, dm_error *err);

/* ---- values ---- */

typedef enum dm_binlog_value_kind {
  DM_VAL_ABSENT = 0, /* the column is not in this image (minimal row image) */
  DM_VAL_NULL,
  DM_VAL_INT,       /* v.i: signed integers (TINY..LONGLONG, INT24) */
  DM_VAL_UINT,      /* v.u: unsigned integers */
  DM_VAL_FLOAT,     /* v.f (FLOAT widened exactly) */
  DM_VAL_DOUBLE,    /* v.f */
  DM_VAL_DECIMAL,   /* v.dec: exact text, "-123.4500" with exactly `scale` fraction digits */
  DM_VAL_BIT,       /* v.u, the bits as an unsigned number (column bits in the table map) */
  DM_VAL_YEAR,      /* v.u: 0 (zero year) or 1901..2155 */
  DM_VAL_DATE,      /* v.t: year, month, day (zero dates: all 0) */
  DM_VAL_TIME,      /* v.t: negative, hour (0..838), minute, second, usec */
  DM_VAL_DATETIME,  /* v.t: date and time of day, usec */
  DM_VAL_TIMESTAMP, /* v.ts: seconds since the epoch (UTC) and usec; 0/0 is the zero value */
  DM_VAL_STRING,    /* v.s: text (collation in the column; unknown without metadata) */
  DM_VAL_BLOB,      /* v.s: bytes (binary collation, BLOB, BINARY/VARBINARY, GEOMETRY w/o type) */
  DM_VAL_ENUM,      /* v.u: index, 1-based (0 = the '' error value); name via the column */
  DM_VAL_SET,       /* v.u: bitmask, bit i = the column's value i */
  DM_VAL_JSON,      /* v.s: MySQL binary JSON: dm_binlog_json_to_text makes text of it */
  DM_VAL_JSON_DIFF, /* v.s: MySQL partial JSON update: iterate with dm_binlog_json_diff_next */
  DM_VAL_GEOMETRY,  /* v.s: SRID (4 bytes LE) + WKB */
  DM_VAL_RAW,       /* v.s: a type this SDK does not decode (compressed columns, old DECIMAL) */
} dm_binlog_value_kind;

typedef struct dm_binlog_temporal {
  uint16_t year;
  uint8_t month, day;
  uint16_t hour; /* TIME: up to 838 */
  uint8_t minute, second;
  uint32_t usec;
  bool negative; /* TIME only */
} dm_binlog_temporal;

typedef struct dm_binlog_value {
  uint8_t kind;        /* dm_binlog_value_kind */
  uint8_t column_type; /* the column's real_type */
  /* BINARY(n) (and fixed binary types such as INET6): the server logs the value without its
   * trailing 0x00 bytes; the value is v.s followed by this many zero bytes (known only with the
   * column's collation from the optional metadata). dm_binlog_value_format appends them. */
  uint32_t pad_zeros;
  union {
    int64_t i;
    uint64_t u;
    double f;
    struct {
      const uint8_t *ptr;
      uint32_t len;
    } s;
    dm_binlog_temporal t;
    struct {
      int64_t sec;
      uint32_t usec;
    } ts;
    char dec[84]; /* 65 digits, sign, point, NUL */
  } v;
} dm_binlog_value;

/* Name of a value kind ("INT", "STRING", ...). */
const char *dm_binlog_value_kind_name(int kind);

/*
 * Format a value as SQL would print it (numbers, DECIMAL, '2024-01-02 03:04:05.000001',
 * '-838:59:59', BIT as a number, ENUM/SET as their names when the column has them, strings and
 * blobs as their bytes as-is, MySQL JSON as JSON text). `col` may be NULL (then ENUM/SET print as
 * numbers, temporal fractions with 6 digits). Returns the length it needs (excluding the NUL), as
 * snprintf; the text is truncated to len - 1 bytes. -1 for a value that cannot be formatted.
 */
long dm_binlog_value_format(const dm_binlog_value *v, const dm_binlog_column *col, char *buf,
                            size_t len);

/* ---- row events ---- */

typedef enum dm_binlog_rows_kind {
  DM_ROWS_WRITE = 1,
  DM_ROWS_UPDATE = 2,
  DM_ROWS_DELETE = 3,
} dm_binlog_rows_kind;

#define DM_BINLOG_ROWS_F_STMT_END 0x0001 /* last row event of the statement */
#define DM_BINLOG_ROWS_F_NO_FK_CHECKS 0x0002
#define DM_BINLOG_ROWS_F_NO_UNIQUE_CHECKS 0x0004
#define DM_BINLOG_ROWS_F_COMPLETE_ROWS 0x0008

/* A row event being iterated. Fill with dm_binlog_rows_begin, then call dm_binlog_rows_next. */
typedef struct dm_binlog_rows {
  uint8_t kind;    /* dm_binlog_rows_kind */
  uint8_t version; /* 1 (MariaDB, MySQL 5.5) or 2 (MySQL 5.6+) */
  bool partial;    /* MySQL PARTIAL_UPDATE_ROWS: JSON after-images may be diffs */
  uint64_t table_id;
  uint16_t flags; /* DM_BINLOG_ROWS_F_* */
  uint32_t column_count;
  const uint8_t *columns_before; /* bitmap: columns in the before image (or the only image) */
  const uint8_t *columns_after;  /* UPDATE: bitmap of columns in the after image */
  const uint8_t *extra;          /* v2 extra data (TLV), or NULL */
  uint32_t extra_len;
  /* private cursor */
  const uint8_t *p_, *end_, *raw_;
  uint64_t offset_;
  const char *file_;
  uint32_t row_;
  uint8_t type_;
} dm_binlog_rows;

/* Is `type` a row event this SDK iterates (v1, v2, partial update; not compressed ones)? */
bool dm_binlog_is_rows_event(uint8_t type);

/*
 * Start iterating a rows event. Returns 0, or -1 with DM_ERR_BINLOG_CORRUPT, or
 * DM_ERR_BINLOG_UNSUPPORTED for a compressed rows event.
 */
int dm_binlog_rows_begin(const dm_binlog_format *fmt, const dm_binlog_event *ev,
                         dm_binlog_rows *rows, dm_error *err);

/*
 * The next row. `tm` must be the table map with rows->table_id (its column_count must equal the
 * event's, else DM_ERR_BINLOG_CORRUPT). Fills column_count values in each array given:
 *   WRITE: after (before untouched, may be NULL); DELETE: before (after may be NULL);
 *   UPDATE: before and after.
 * Columns outside an image's bitmap are DM_VAL_ABSENT. Returns 1 with a row, 0 when there are no
 * more rows, -1 with DM_ERR_BINLOG_CORRUPT (a value running past the event, a type the map
 * cannot describe) naming column, row and file offset.
 */
int dm_binlog_rows_next(dm_binlog_rows *rows, const dm_binlog_table_map *tm,
                        dm_binlog_value *before, dm_binlog_value *after, dm_error *err);

/* ---- JSON ---- */

/*
 * MySQL binary JSON to JSON text (as MySQL prints it: {"a": 1, "b": [true, null]}). Writes into
 * buf (NUL-terminated if len > 0). Returns the text length needed (excluding the NUL), so a caller
 * whose buffer was too small can retry with a bigger one; -1 with DM_ERR_BINLOG_CORRUPT for bad
 * bytes (also nesting deeper than 100).
 */
long dm_binlog_json_to_text(const uint8_t *bin, size_t bin_len, char *buf, size_t len,
                            dm_error *err);

/* One change of a MySQL partial JSON update. */
typedef enum dm_binlog_json_diff_op {
  DM_JSON_DIFF_REPLACE = 0,
  DM_JSON_DIFF_INSERT = 1,
  DM_JSON_DIFF_REMOVE = 2,
} dm_binlog_json_diff_op;
typedef struct dm_binlog_json_diff {
  uint8_t op;
  dm_binlog_str path;   /* a JSON path: "$.a[1]" */
  const uint8_t *value; /* binary JSON (not for REMOVE) */
  uint32_t value_len;
} dm_binlog_json_diff;
/*
 * Iterate the diffs of a DM_VAL_JSON_DIFF value: *cursor starts at 0. Returns 1 with *out, 0 at
 * the end, -1 with DM_ERR_BINLOG_CORRUPT.
 */
int dm_binlog_json_diff_next(const dm_binlog_value *v, size_t *cursor, dm_binlog_json_diff *out,
                             dm_error *err);

#ifdef __cplusplus
}
#endif
#endif /* DMHOST_BINLOG_ROWS_H */
