/* What testdb.c shares with testdb_compare.c; not for tests. */
#ifndef DMH_TESTDB_INTERNAL_H
#define DMH_TESTDB_INTERNAL_H

#include <mysql.h>
#include <stddef.h>
#include <stdint.h>

/* Records the error for testdb_last_error() and prints it: a failing test shows why at once. */
void testdb_fail(int32_t code, const char *raw, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The server's error for sql, as DM_ERR_DB_QUERY. */
void testdb_fail_query(MYSQL *conn, const char *sql);

/* A growable string for SQL and messages; on allocation failure it stops growing and oom is set. */
typedef struct testdb_buf {
  char *p;
  size_t len, cap;
  int oom;
} testdb_buf;

void testdb_buf_add(testdb_buf *b, const char *s, size_t n);
void testdb_buf_str(testdb_buf *b, const char *s);
void testdb_buf_printf(testdb_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* `name`, backticks doubled. */
void testdb_buf_ident(testdb_buf *b, const char *name);
/* 'text', escaped for conn's character set. */
void testdb_buf_literal(testdb_buf *b, MYSQL *conn, const char *s);
/* 1 when b holds a string (records DM_ERR_NO_MEMORY and returns 0 otherwise). */
int testdb_buf_ok(testdb_buf *b);

/* A second connection to conn's server: one connection cannot stream two results at once. */
MYSQL *testdb_clone(MYSQL *conn);
/* Reads the rest of a multi-statement call, so the connection can take the next statement. */
void testdb_drain(MYSQL *conn);

#endif /* DMH_TESTDB_INTERNAL_H */
