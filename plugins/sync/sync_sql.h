/*
 * The sync unit's SQL text for binlog row values: one decoded value (binlog_rows.h) becomes a
 * literal that a MariaDB target, on a connection that ran SYNC_SQL_SESSION, reads back into the
 * column as exactly the same value, and that compares equal to it (`col <=> literal` is true, and
 * an index on the column can serve `col = literal`). Identifiers are quoted here too.
 *
 * Literal forms, by value kind (the why of each is in sync_sql.c):
 *   NULL                      NULL
 *   INT / UINT / BIT / YEAR   decimal digits (BIT and YEAR as numbers: YEAR 0 is the zero year)
 *   FLOAT / DOUBLE            17 significant digits with an exponent ("1.1000000238418579e0"):
 *                             the exact double, so a FLOAT column compares equal too
 *   DECIMAL                   the exact decimal text, unquoted (a DECIMAL literal)
 *   DATE/TIME/DATETIME/TS     quoted text with the column's fraction digits; TIMESTAMP in UTC
 *   STRING                    _<charset>'...' with ' \ NUL CR LF escaped (UCS-2/UTF-16/UTF-32:
 *                             _<charset> X'...'); unknown collation: '...' without introducer
 *   BLOB / GEOMETRY           _binary'...' (BINARY(n): with its trailing zero bytes); this covers
 *                             INET4, INET6 and UUID, which the binlog carries as BINARY(n) in
 *                             their native byte order
 *   ENUM / SET                their names in the column's charset; numbers without metadata
 *   JSON (MySQL binary)       its text as _utf8mb4'...' (MariaDB's JSON is a STRING already)
 * Not writable (DM_ERR_BINLOG_UNSUPPORTED): RAW (compressed columns, pre-5.0 DECIMAL),
 * JSON_DIFF (MySQL partial JSON updates), non-finite floating point.
 *
 * Every function appends to a dm_buf; on error the buffer may hold a partial literal (the
 * caller drops the statement).
 */
#ifndef DMHOST_SYNC_SQL_H
#define DMHOST_SYNC_SQL_H

#include <mysql.h>
#include <stddef.h>
#include <stdint.h>

#include "dmhost/binlog_rows.h"
#include "dmhost/error.h"
#include <dmhost/buf.h>

/*
 * Session settings every sync connection runs once after connecting (';'-separated statements,
 * so the connection needs CLIENT_MULTI_STATEMENTS, or split it at ';': no ';' is inside a
 * literal). See sync_sql.c for why each one is there. SYNC_SQL_MODE is its sql_mode, which the
 * DDL connection returns to after running a statement of the binlog under the source's.
 */
#define SYNC_SQL_MODE "NO_AUTO_VALUE_ON_ZERO,ALLOW_INVALID_DATES,NO_ENGINE_SUBSTITUTION"
extern const char SYNC_SQL_SESSION[];

/* Charset names by collation id, read once from the target (information_schema.COLLATIONS), for
 * string introducers. Immutable after load: share it between threads freely. */
typedef struct sync_charsets sync_charsets;
/* Returns 0 and *out, or -1 with DM_ERR_DB_QUERY (the server's message in raw_cause) or
 * DM_ERR_NO_MEMORY. */
int sync_charsets_load(MYSQL *conn, sync_charsets **out, dm_error *err);
void sync_charsets_free(sync_charsets *cs); /* NULL is fine */
/* "utf8mb4", "latin1", "binary", ...; NULL if the id is unknown (e.g. a MySQL 8 collation). */
const char *sync_charsets_name(const sync_charsets *cs, uint32_t collation_id);
/* "utf8mb4_general_ci", ...; NULL if the id is unknown. */
const char *sync_charsets_collation(const sync_charsets *cs, uint32_t collation_id);

/*
 * Append v (a value of column col, from the same table map) as a SQL literal. cs may be NULL
 * (strings then go without introducer, as binary strings the column converts). Returns 0, or -1
 * with *err: DM_ERR_BINLOG_UNSUPPORTED naming the column for a value that cannot be written,
 * DM_ERR_INTERNAL for DM_VAL_ABSENT (a column outside the row image: the caller must leave it
 * out), DM_ERR_BINLOG_CORRUPT for bad MySQL binary JSON, DM_ERR_NO_MEMORY.
 */
int sync_sql_value(dm_buf *b, const dm_binlog_value *v, const dm_binlog_column *col,
                   const sync_charsets *cs, dm_error *err);

/* `name` (len bytes) as a backtick-quoted identifier (backticks doubled). 0, or -1: no memory. */
int sync_sql_ident(dm_buf *b, const char *name, size_t len);
/* 'text' (n bytes) as a string literal escaped for connection c (the sessions are SET NAMES
 * binary, so bytes stay bytes). 0, or -1: no memory. */
int sync_sql_lit(MYSQL *c, dm_buf *b, const void *p, size_t n);
/* _utf8mb4'text' (n bytes of UTF-8, such as a name), escaped as a value's literal. 0, or -1: no
 * memory. */
int sync_sql_utf8(dm_buf *b, const char *s, size_t n);
/* `db`.`table` (NUL-terminated names). 0, or -1: no memory. */
int sync_sql_qualified(dm_buf *b, const char *db, const char *table);

#endif /* DMHOST_SYNC_SQL_H */
