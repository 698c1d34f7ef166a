/*
 * dmh_testdb: helpers for integration tests that talk to the local source and target servers
 * started by scripts/mariadb.sh (see docs/servers.md).
 *
 * Every function that can fail returns -1 (or NULL), prints the error to stderr so that a failing
 * test shows the server's message in `ctest --output-on-failure`, and records it for
 * testdb_last_error() (per thread). Codes come from DM_ERROR_MAP: DM_ERR_DB_CONNECT when a server
 * cannot be reached or refuses the account, DM_ERR_DB_QUERY for a statement the server refused (its
 * message in raw_cause) or a table that is not there, DM_ERR_IO when a file or a client program
 * (mariadb, mariadb-dump) failed (its error output in raw_cause), DM_ERR_CONFIG_INVALID for a bad
 * DMH_*_PORT.
 */
#ifndef DMH_TESTDB_H
#define DMH_TESTDB_H

#include <mysql.h>
#include <stddef.h>
#include <stdint.h>

#include "dmhost/error.h"

typedef enum testdb_side {
  TESTDB_SOURCE = 0,
  TESTDB_TARGET = 1,
  TESTDB_SOURCE2 =
      2, /* the second source (shard merges): DMH_SOURCE2_*, port DMH_SOURCE_PORT + 2 */
} testdb_side;

/* Where a side's server is: DMH_SOURCE_HOST/PORT/USER/PASSWORD (DMH_TARGET_... for the target),
 * defaults 127.0.0.1, 13306 / 13307, root, empty password, as `scripts/mariadb.sh env` prints. */
typedef struct testdb_params {
  char host[256];
  unsigned port;
  char user[128];
  char password[128];
} testdb_params;

int testdb_params_get(testdb_side side, testdb_params *out); /* -1: a variable is invalid */
const char *testdb_side_name(testdb_side side);              /* "source", "target" */

/* A connection over TCP with the side's settings (utf8mb4, several statements per call allowed).
 * On failure the message names the server and says to run scripts/mariadb.sh start. */
MYSQL *testdb_connect(testdb_side side);
/* The same with another account (privilege tests: dmh_limited / limited) and a default db (NULL:
 * none). */
MYSQL *testdb_connect_as(testdb_side side, const char *user, const char *password, const char *db);
void testdb_close(MYSQL *conn);

/* The last error of this thread (code DM_ERR_OK when none yet). */
const dm_error *testdb_last_error(void);

/* Runs SQL (several statements separated by ';' allowed), discarding result sets; stops at the
 * first statement the server refuses. */
int testdb_exec(MYSQL *conn, const char *sql);
int testdb_execf(MYSQL *conn, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The first column of the first row as text. Returns 0 with a value, 1 when the value is NULL or
 * there is no row (out is then ""), -1 on error. The value is truncated to len - 1 bytes. */
int testdb_query_value(MYSQL *conn, char *out, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The same, parsed as an integer; 1 (NULL or no row) leaves *out at 0; not a number is an error. */
int testdb_query_int(MYSQL *conn, long long *out, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* DROP DATABASE IF EXISTS + CREATE DATABASE: a clean database named after the test. */
int testdb_recreate_db(MYSQL *conn, const char *db);

/* Runs the `mariadb` client on a SQL file against conn's server (same host, port, account), in db
 * (NULL: the file chooses). The client's error output becomes the error's raw cause. */
int testdb_exec_file(MYSQL *conn, const char *path, const char *db);
/* The same with every occurrence of `from` in the file replaced by `to`: gives a shared SQL file a
 * database named after the test, so tests sharing the servers can run in parallel. */
int testdb_exec_file_renaming(MYSQL *conn, const char *path, const char *from, const char *to);
/* Loads tests/sql/all-types.sql (every column type, edge values) as database db (dropped first)
 * instead of types_db. DMH_TESTDB_SQL_DIR names the folder for tests that want its files. */
int testdb_load_all_types(MYSQL *conn, const char *db);

/* Copies database db from src's server to dst's with `mariadb-dump --databases db | mariadb`
 * (replacing the tables of the same names on dst). Note: mariadb-dump prints FLOAT columns with 6
 * significant digits, so such values change on the way (see tests/sql/all-types.sql). */
int testdb_copy_db(MYSQL *src, MYSQL *dst, const char *db);

/*
 * A checksum of a table's content that does not depend on the order rows were written in or on how
 * the server stores them: SHA-256 over the column names, then every row in primary key order
 * (without a primary key: by every column, text, binary and spatial ones by their MD5), each cell
 * with a NULL marker and its length. Values are read as the server prints them with SET NAMES
 * binary and time_zone '+00:00', except FLOAT read as DOUBLE (exact; the text protocol rounds
 * FLOAT to 6 digits). Rows are streamed, never held. Returns 0 and fills *rows and out_sha (64 hex
 * + NUL). The session's character set and time zone are put back afterwards.
 */
int testdb_table_checksum(MYSQL *conn, const char *db, const char *table, uint64_t *rows,
                          char out_sha[65]);

/*
 * Compares db_src.table on src with db_dst.table on dst cell by cell, streaming both in primary key
 * order (the checksum's order). src and dst may be the same connection. Returns 0 when equal, 1
 * when they differ with the first difference in diff ("row 3 (`id`=3), column `c`: source 0x61
 * (1 byte), target 0x62 (1 byte)", or a missing row, or different columns), -1 on error with the
 * error's message in diff.
 */
int testdb_compare_tables(MYSQL *src, MYSQL *dst, const char *db_src, const char *db_dst,
                          const char *table, char *diff, size_t len);

/* Compares every base table of db_src with db_dst: same table names, then same checksums; for the
 * first table that differs, diff holds compare_tables' detail. Returns 0, 1 or -1 as above. */
int testdb_compare_schemas(MYSQL *src, MYSQL *dst, const char *db_src, const char *db_dst,
                           char *diff, size_t len);

#endif /* DMH_TESTDB_H */
