/* Checksums and cell-by-cell comparison of tables and databases; see testdb.h. */
#include <inttypes.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmhost/sdk.h"
#include "testdb.h"
#include "testdb_internal.h"

/* ---- table layout ---- */

typedef struct testdb_table {
  size_t ncols;
  char **names;
  char **types; /* information_schema DATA_TYPE */
  size_t npk;
  size_t *pk; /* indexes into names, in key order */
} testdb_table;

static void testdb_table_free(testdb_table *t) {
  for (size_t i = 0; i < t->ncols; i++) {
    free(t->names[i]);
    free(t->types[i]);
  }
  free(t->names);
  free(t->types);
  free(t->pk);
  memset(t, 0, sizeof *t);
}

/* Runs a buffered query whose rows fill a list; each row goes to add(). */
static int testdb_rows(MYSQL *conn, const char *sql, int (*add)(void *ctx, MYSQL_ROW row),
                       void *ctx) {
  if (mysql_real_query(conn, sql, strlen(sql))) {
    testdb_fail_query(conn, sql);
    return -1;
  }
  MYSQL_RES *res = mysql_store_result(conn);
  if (!res) {
    testdb_fail_query(conn, sql);
    return -1;
  }
  int rc = 0;
  MYSQL_ROW row;
  while (rc == 0 && (row = mysql_fetch_row(res)))
    rc = add(ctx, row);
  mysql_free_result(res);
  testdb_drain(conn);
  return rc;
}

static int testdb_add_column(void *ctx, MYSQL_ROW row) {
  testdb_table *t = ctx;
  char **names = realloc(t->names, (t->ncols + 1) * sizeof *names);
  if (names)
    t->names = names;
  char **types = realloc(t->types, (t->ncols + 1) * sizeof *types);
  if (types)
    t->types = types;
  char *name = strdup(row[0]), *type = strdup(row[1]);
  if (!names || !types || !name || !type) {
    free(name);
    free(type);
    testdb_fail(DM_ERR_NO_MEMORY, NULL, "out of memory reading a table's columns");
    return -1;
  }
  t->names[t->ncols] = name;
  t->types[t->ncols] = type;
  t->ncols++;
  return 0;
}

static int testdb_add_pk(void *ctx, MYSQL_ROW row) {
  testdb_table *t = ctx;
  size_t *pk = realloc(t->pk, (t->npk + 1) * sizeof *pk);
  if (!pk) {
    testdb_fail(DM_ERR_NO_MEMORY, NULL, "out of memory reading a primary key");
    return -1;
  }
  t->pk = pk;
  for (size_t i = 0; i < t->ncols; i++)
    if (strcmp(t->names[i], row[0]) == 0) {
      t->pk[t->npk++] = i;
      return 0;
    }
  testdb_fail(DM_ERR_INTERNAL, row[0], "primary key column not among the table's columns");
  return -1;
}

/* 0, or 1 when the table is not there, or -1; the error recorded for both. */
static int testdb_table_load(MYSQL *conn, const char *db, const char *table, testdb_table *t) {
  memset(t, 0, sizeof *t);
  testdb_buf where = {0}, cols = {0}, pk = {0};
  /* BINARY: information_schema compares names case-insensitively, and `T` and `t` may both be. */
  testdb_buf_str(&where, " WHERE BINARY TABLE_SCHEMA = ");
  testdb_buf_literal(&where, conn, db);
  testdb_buf_str(&where, " AND BINARY TABLE_NAME = ");
  testdb_buf_literal(&where, conn, table);
  int rc = -1;
  if (!testdb_buf_ok(&where))
    goto out;
  testdb_buf_printf(&cols,
                    "SELECT COLUMN_NAME, DATA_TYPE FROM information_schema.COLUMNS%s "
                    "ORDER BY ORDINAL_POSITION",
                    where.p);
  testdb_buf_printf(&pk,
                    "SELECT COLUMN_NAME FROM information_schema.STATISTICS%s "
                    "AND INDEX_NAME = 'PRIMARY' ORDER BY SEQ_IN_INDEX",
                    where.p);
  if (!testdb_buf_ok(&cols) || !testdb_buf_ok(&pk))
    goto out;
  if (testdb_rows(conn, cols.p, testdb_add_column, t) != 0)
    goto out;
  if (t->ncols == 0) {
    testdb_fail(DM_ERR_DB_QUERY, NULL, "table `%s`.`%s` not found on %s:%u", db, table, conn->host,
                conn->port);
    rc = 1;
    goto out;
  }
  if (testdb_rows(conn, pk.p, testdb_add_pk, t) != 0)
    goto out;
  rc = 0;
out:
  if (rc != 0)
    testdb_table_free(t);
  free(where.p);
  free(cols.p);
  free(pk.p);
  return rc;
}

/* Types whose ORDER BY follows a collation (or none) or sorts only a prefix of the value. */
static int testdb_sorts_by_hash(const char *type) {
  static const char *const types[] = {
      "char",       "varchar",    "tinytext",        "text",         "mediumtext",
      "longtext",   "binary",     "varbinary",       "tinyblob",     "blob",
      "mediumblob", "longblob",   "geometry",        "point",        "linestring",
      "polygon",    "multipoint", "multilinestring", "multipolygon", "geometrycollection"};
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
    if (strcmp(type, types[i]) == 0)
      return 1;
  return 0;
}

/*
 * SELECT of every column in the checksum's order. FLOAT is read as DOUBLE: the text protocol prints
 * FLOAT with 6 significant digits, which would hide a changed value. Without a primary key, rows
 * are ordered by every column, string, binary and spatial ones by the MD5 of their bytes: under a
 * case-insensitive collation 'a' and 'A' tie and could come in either order on the two servers,
 * and a sort compares only max_sort_length bytes (raising it runs out of sort memory).
 */
static int testdb_table_select(const testdb_table *t, const char *db, const char *table,
                               testdb_buf *sql) {
  testdb_buf_str(sql, "SELECT ");
  for (size_t i = 0; i < t->ncols; i++) {
    if (i)
      testdb_buf_str(sql, ", ");
    int is_float = strcmp(t->types[i], "float") == 0;
    if (is_float)
      testdb_buf_str(sql, "CAST(");
    testdb_buf_ident(sql, t->names[i]);
    if (is_float)
      testdb_buf_str(sql, " AS DOUBLE)");
  }
  testdb_buf_str(sql, " FROM ");
  testdb_buf_ident(sql, db);
  testdb_buf_str(sql, ".");
  testdb_buf_ident(sql, table);
  testdb_buf_str(sql, " ORDER BY ");
  if (t->npk) {
    for (size_t k = 0; k < t->npk; k++) {
      if (k)
        testdb_buf_str(sql, ", ");
      testdb_buf_ident(sql, t->names[t->pk[k]]);
    }
  } else {
    for (size_t i = 0; i < t->ncols; i++) {
      if (i)
        testdb_buf_str(sql, ", ");
      int hash = testdb_sorts_by_hash(t->types[i]);
      if (hash)
        testdb_buf_str(sql, "MD5(");
      testdb_buf_ident(sql, t->names[i]);
      if (hash)
        testdb_buf_str(sql, ")");
    }
  }
  return testdb_buf_ok(sql) ? 0 : -1;
}

/* ---- session settings for reading values as bytes ---- */

typedef struct testdb_session {
  char client[64], connection[64], collation[64], results[64], time_zone[64];
  int results_null;
} testdb_session;

static int testdb_save_value(void *ctx, MYSQL_ROW row) {
  testdb_session *s = ctx;
  dm_strlcpy(s->client, row[0] ? row[0] : "utf8mb4", sizeof s->client);
  dm_strlcpy(s->connection, row[1] ? row[1] : "utf8mb4", sizeof s->connection);
  dm_strlcpy(s->collation, row[2] ? row[2] : "utf8mb4_general_ci", sizeof s->collation);
  s->results_null = row[3] == NULL;
  dm_strlcpy(s->results, row[3] ? row[3] : "", sizeof s->results);
  dm_strlcpy(s->time_zone, row[4] ? row[4] : "SYSTEM", sizeof s->time_zone);
  return 0;
}

/* Values as stored (no charset conversion), TIMESTAMP in UTC. */
static int testdb_session_enter(MYSQL *conn, testdb_session *s) {
  memset(s, 0, sizeof *s);
  if (testdb_rows(conn,
                  "SELECT @@character_set_client, @@character_set_connection, "
                  "@@collation_connection, @@character_set_results, @@time_zone",
                  testdb_save_value, s) != 0)
    return -1;
  return testdb_exec(conn, "SET NAMES binary, time_zone = '+00:00'");
}

static int testdb_session_leave(MYSQL *conn, const testdb_session *s) {
  testdb_buf b = {0};
  testdb_buf_str(&b, "SET character_set_client = ");
  testdb_buf_literal(&b, conn, s->client);
  testdb_buf_str(&b, ", character_set_connection = ");
  testdb_buf_literal(&b, conn, s->connection);
  testdb_buf_str(&b, ", collation_connection = ");
  testdb_buf_literal(&b, conn, s->collation);
  testdb_buf_str(&b, ", character_set_results = ");
  if (s->results_null)
    testdb_buf_str(&b, "NULL");
  else
    testdb_buf_literal(&b, conn, s->results);
  testdb_buf_str(&b, ", time_zone = ");
  testdb_buf_literal(&b, conn, s->time_zone);
  int rc = testdb_buf_ok(&b) ? testdb_exec(conn, b.p) : -1;
  free(b.p);
  return rc;
}

/* ---- checksum ---- */

static void testdb_hash_u64(EVP_MD_CTX *ctx, uint64_t v) {
  unsigned char le[8];
  for (int i = 0; i < 8; i++)
    le[i] = (unsigned char)(v >> (8 * i));
  EVP_DigestUpdate(ctx, le, sizeof le);
}

/* Streams the SELECT on conn (already in the byte session) into the hash. */
static int testdb_hash_rows(MYSQL *conn, const char *sql, const testdb_table *t, EVP_MD_CTX *ctx,
                            uint64_t *rows) {
  if (mysql_real_query(conn, sql, strlen(sql))) {
    testdb_fail_query(conn, sql);
    return -1;
  }
  MYSQL_RES *res = mysql_use_result(conn);
  if (!res) {
    testdb_fail_query(conn, sql);
    return -1;
  }
  uint64_t n = 0;
  MYSQL_ROW row;
  while ((row = mysql_fetch_row(res))) {
    unsigned long *lengths = mysql_fetch_lengths(res);
    for (size_t i = 0; i < t->ncols; i++) {
      /* A marker and a length per cell: NULL differs from '', ('ab','c') from ('a','bc'). */
      if (!row[i]) {
        EVP_DigestUpdate(ctx, "\0", 1);
        continue;
      }
      EVP_DigestUpdate(ctx, "\1", 1);
      testdb_hash_u64(ctx, lengths[i]);
      EVP_DigestUpdate(ctx, row[i], lengths[i]);
    }
    n++;
  }
  int rc = 0;
  if (mysql_errno(conn)) {
    testdb_fail_query(conn, sql);
    rc = -1;
  }
  mysql_free_result(res);
  *rows = n;
  return rc;
}

int testdb_table_checksum(MYSQL *conn, const char *db, const char *table, uint64_t *rows,
                          char out_sha[65]) {
  out_sha[0] = '\0';
  *rows = 0;
  testdb_table t;
  if (testdb_table_load(conn, db, table, &t) != 0)
    return -1;
  testdb_buf sql = {0};
  int rc = -1;
  EVP_MD_CTX *ctx = EVP_MD_CTX_new();
  if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
    testdb_fail(DM_ERR_INTERNAL, NULL, "cannot set up SHA-256 (OpenSSL)");
    goto out;
  }
  if (testdb_table_select(&t, db, table, &sql) != 0)
    goto out;
  /* The column names count: a renamed column is a different table. */
  EVP_DigestUpdate(ctx, "dmh-testdb-checksum-1", 21);
  testdb_hash_u64(ctx, t.ncols);
  for (size_t i = 0; i < t.ncols; i++) {
    testdb_hash_u64(ctx, strlen(t.names[i]));
    EVP_DigestUpdate(ctx, t.names[i], strlen(t.names[i]));
  }
  testdb_session s;
  if (testdb_session_enter(conn, &s) != 0)
    goto out;
  rc = testdb_hash_rows(conn, sql.p, &t, ctx, rows);
  if (testdb_session_leave(conn, &s) != 0)
    rc = -1;
  if (rc == 0) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned mdlen = 0;
    EVP_DigestFinal_ex(ctx, md, &mdlen);
    for (unsigned i = 0; i < mdlen && i < 32; i++)
      snprintf(out_sha + 2 * i, 3, "%02x", md[i]);
  }
out:
  EVP_MD_CTX_free(ctx);
  free(sql.p);
  testdb_table_free(&t);
  return rc;
}

/* ---- compare ---- */

/* A value for a message: 0x + hex of the first 48 bytes, then its length. */
static void testdb_describe(testdb_buf *b, const char *v, unsigned long len) {
  if (!v) {
    testdb_buf_str(b, "NULL");
    return;
  }
  testdb_buf_str(b, "0x");
  unsigned long shown = len < 48 ? len : 48;
  for (unsigned long i = 0; i < shown; i++)
    testdb_buf_printf(b, "%02x", (unsigned char)v[i]);
  testdb_buf_printf(b, "%s (%lu byte%s)", shown < len ? "..." : "", len, len == 1 ? "" : "s");
}

/* "row 3 (`id`=3, `k`=0x00ff)": the key as text when printable, else in hex. */
static void testdb_row_label(testdb_buf *b, const testdb_table *t, uint64_t rowno, MYSQL_ROW row,
                             const unsigned long *lengths) {
  testdb_buf_printf(b, "row %" PRIu64, rowno);
  if (!t->npk) {
    testdb_buf_str(b, " (in the order of all columns: the table has no primary key)");
    return;
  }
  testdb_buf_str(b, " (");
  for (size_t k = 0; k < t->npk; k++) {
    size_t i = t->pk[k];
    if (k)
      testdb_buf_str(b, ", ");
    testdb_buf_ident(b, t->names[i]);
    testdb_buf_str(b, "=");
    int printable = row[i] && lengths[i] <= 64;
    for (unsigned long j = 0; printable && j < lengths[i]; j++)
      printable = row[i][j] >= 0x20 && row[i][j] < 0x7f;
    if (printable)
      testdb_buf_add(b, row[i], lengths[i]);
    else
      testdb_describe(b, row[i], row[i] ? lengths[i] : 0);
  }
  testdb_buf_str(b, ")");
}

static int testdb_same_columns(const testdb_table *a, const testdb_table *b, testdb_buf *msg) {
  size_t n = a->ncols < b->ncols ? a->ncols : b->ncols;
  for (size_t i = 0; i < n; i++)
    if (strcmp(a->names[i], b->names[i]) != 0) {
      testdb_buf_printf(msg, "column %zu is ", i + 1);
      testdb_buf_ident(msg, a->names[i]);
      testdb_buf_str(msg, " on the source but ");
      testdb_buf_ident(msg, b->names[i]);
      testdb_buf_str(msg, " on the target");
      return 0;
    }
  if (a->ncols != b->ncols) {
    testdb_buf_printf(msg, "the source has %zu columns, the target %zu", a->ncols, b->ncols);
    return 0;
  }
  return 1;
}

/* Streams both SELECTs side by side; stops at the first difference. */
static int testdb_compare_rows(MYSQL *src, MYSQL *dst, const char *sql_src, const char *sql_dst,
                               const testdb_table *t, testdb_buf *msg) {
  MYSQL_RES *ra = NULL, *rb = NULL;
  int rc = -1;
  if (mysql_real_query(src, sql_src, strlen(sql_src)) || !(ra = mysql_use_result(src))) {
    testdb_fail_query(src, sql_src);
    goto out;
  }
  if (mysql_real_query(dst, sql_dst, strlen(sql_dst)) || !(rb = mysql_use_result(dst))) {
    testdb_fail_query(dst, sql_dst);
    goto out;
  }
  for (uint64_t rowno = 1;; rowno++) {
    MYSQL_ROW a = mysql_fetch_row(ra), b = mysql_fetch_row(rb);
    if ((!a && mysql_errno(src)) || (!b && mysql_errno(dst))) {
      testdb_fail_query(!a && mysql_errno(src) ? src : dst, !a ? sql_src : sql_dst);
      goto out;
    }
    if (!a && !b) {
      rc = 0;
      goto out;
    }
    unsigned long *la = a ? mysql_fetch_lengths(ra) : NULL;
    unsigned long *lb = b ? mysql_fetch_lengths(rb) : NULL;
    if (!b) {
      testdb_row_label(msg, t, rowno, a, la);
      testdb_buf_printf(msg, ": missing on the target (it has %" PRIu64 " rows, the source more)",
                        rowno - 1);
      rc = 1;
      goto out;
    }
    if (!a) {
      testdb_row_label(msg, t, rowno, b, lb);
      testdb_buf_printf(msg, ": only on the target (the source has %" PRIu64 " rows)", rowno - 1);
      rc = 1;
      goto out;
    }
    for (size_t i = 0; i < t->ncols; i++) {
      int same =
          (!a[i] && !b[i]) || (a[i] && b[i] && la[i] == lb[i] && memcmp(a[i], b[i], la[i]) == 0);
      if (same)
        continue;
      testdb_row_label(msg, t, rowno, a, la);
      testdb_buf_str(msg, ", column ");
      testdb_buf_ident(msg, t->names[i]);
      testdb_buf_str(msg, ": source ");
      testdb_describe(msg, a[i], la[i]);
      testdb_buf_str(msg, ", target ");
      testdb_describe(msg, b[i], lb[i]);
      if (a[i] && b[i]) {
        unsigned long k = 0;
        while (k < la[i] && k < lb[i] && a[i][k] == b[i][k])
          k++;
        testdb_buf_printf(msg, ", first difference at byte %lu", k);
      }
      rc = 1;
      goto out;
    }
  }
out:
  /* Freeing reads what is left of each stream: the connections stay usable. */
  if (ra)
    mysql_free_result(ra);
  if (rb)
    mysql_free_result(rb);
  return rc;
}

static void testdb_put(char *diff, size_t len, const char *text) {
  if (len)
    dm_strlcpy(diff, text, len);
}

int testdb_compare_tables(MYSQL *src, MYSQL *dst, const char *db_src, const char *db_dst,
                          const char *table, char *diff, size_t len) {
  testdb_put(diff, len, "");
  MYSQL *own = NULL;
  if (src == dst) {
    if (!(own = testdb_clone(src))) {
      testdb_put(diff, len, testdb_last_error()->message);
      return -1;
    }
    dst = own;
  }
  testdb_table ts = {0}, td = {0};
  testdb_buf sql_src = {0}, sql_dst = {0}, msg = {0};
  testdb_session ss, sd;
  int rc = -1, entered_src = 0, entered_dst = 0;
  if (testdb_table_load(src, db_src, table, &ts) != 0)
    goto out;
  int loaded = testdb_table_load(dst, db_dst, table, &td);
  if (loaded == 1) {
    testdb_buf_str(&msg, "missing on the target");
    rc = 1;
  }
  if (loaded != 0)
    goto out;
  if (!testdb_same_columns(&ts, &td, &msg)) {
    rc = 1;
    goto out;
  }
  /* Both sides read with the source's layout: one order, one set of expressions. */
  if (testdb_table_select(&ts, db_src, table, &sql_src) != 0 ||
      testdb_table_select(&ts, db_dst, table, &sql_dst) != 0)
    goto out;
  if (testdb_session_enter(src, &ss) != 0)
    goto out;
  entered_src = 1;
  if (testdb_session_enter(dst, &sd) != 0)
    goto out;
  entered_dst = 1;
  rc = testdb_compare_rows(src, dst, sql_src.p, sql_dst.p, &ts, &msg);
out:
  if (entered_src && testdb_session_leave(src, &ss) != 0)
    rc = -1;
  if (entered_dst && testdb_session_leave(dst, &sd) != 0)
    rc = -1;
  if (rc == 1) {
    testdb_buf full = {0};
    testdb_buf_ident(&full, db_src);
    testdb_buf_str(&full, ".");
    testdb_buf_ident(&full, table);
    testdb_buf_str(&full, ": ");
    if (testdb_buf_ok(&msg) && msg.p)
      testdb_buf_str(&full, msg.p);
    testdb_put(diff, len, testdb_buf_ok(&full) ? full.p : "tables differ (out of memory)");
    free(full.p);
  } else if (rc < 0) {
    testdb_put(diff, len, testdb_last_error()->message);
  }
  free(msg.p);
  free(sql_src.p);
  free(sql_dst.p);
  testdb_table_free(&ts);
  testdb_table_free(&td);
  testdb_close(own);
  return rc;
}

/* ---- whole databases ---- */

typedef struct testdb_names {
  char **v;
  size_t n;
} testdb_names;

static int testdb_add_name(void *ctx, MYSQL_ROW row) {
  testdb_names *l = ctx;
  char **v = realloc(l->v, (l->n + 1) * sizeof *v);
  if (!v || !(v[l->n] = strdup(row[0]))) {
    if (v)
      l->v = v;
    testdb_fail(DM_ERR_NO_MEMORY, NULL, "out of memory listing tables");
    return -1;
  }
  l->v = v;
  l->n++;
  return 0;
}

static void testdb_names_free(testdb_names *l) {
  for (size_t i = 0; i < l->n; i++)
    free(l->v[i]);
  free(l->v);
  l->v = NULL;
  l->n = 0;
}

static int testdb_cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Base tables of db, sorted by bytes; *exists says whether the database is there at all. */
static int testdb_list_tables(MYSQL *conn, const char *db, testdb_names *out, int *exists) {
  testdb_buf q = {0};
  testdb_names schemas = {0};
  int rc = -1;
  testdb_buf_str(&q,
                 "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE BINARY SCHEMA_NAME = ");
  testdb_buf_literal(&q, conn, db);
  if (!testdb_buf_ok(&q) || testdb_rows(conn, q.p, testdb_add_name, &schemas) != 0)
    goto out;
  *exists = schemas.n > 0;
  q.len = 0;
  testdb_buf_str(&q,
                 "SELECT TABLE_NAME FROM information_schema.TABLES WHERE BINARY TABLE_SCHEMA = ");
  testdb_buf_literal(&q, conn, db);
  testdb_buf_str(&q, " AND TABLE_TYPE = 'BASE TABLE'");
  if (!testdb_buf_ok(&q) || testdb_rows(conn, q.p, testdb_add_name, out) != 0)
    goto out;
  if (out->n)
    qsort(out->v, out->n, sizeof *out->v, testdb_cmp_names);
  rc = 0;
out:
  testdb_names_free(&schemas);
  free(q.p);
  return rc;
}

int testdb_compare_schemas(MYSQL *src, MYSQL *dst, const char *db_src, const char *db_dst,
                           char *diff, size_t len) {
  testdb_put(diff, len, "");
  testdb_names a = {0}, b = {0};
  int rc = -1, exists_a = 0, exists_b = 0;
  char text[2048] = "";
  if (testdb_list_tables(src, db_src, &a, &exists_a) != 0 ||
      testdb_list_tables(dst, db_dst, &b, &exists_b) != 0)
    goto out;
  if (!exists_a) {
    testdb_fail(DM_ERR_DB_QUERY, NULL, "database `%s` not found on the source %s:%u", db_src,
                src->host, src->port);
    goto out;
  }
  rc = 1;
  if (!exists_b) {
    snprintf(text, sizeof text, "database `%s` is missing on the target", db_dst);
    goto out;
  }
  size_t i = 0, j = 0;
  while (i < a.n || j < b.n) {
    int c = i == a.n ? 1 : j == b.n ? -1 : strcmp(a.v[i], b.v[j]);
    if (c < 0) {
      snprintf(text, sizeof text, "table `%s`.`%s` is missing on the target", db_dst, a.v[i]);
      goto out;
    }
    if (c > 0) {
      snprintf(text, sizeof text, "table `%s`.`%s` is only on the target", db_dst, b.v[j]);
      goto out;
    }
    i++, j++;
  }
  for (i = 0; i < a.n; i++) {
    uint64_t rows_a = 0, rows_b = 0;
    char sha_a[65], sha_b[65];
    if (testdb_table_checksum(src, db_src, a.v[i], &rows_a, sha_a) != 0 ||
        testdb_table_checksum(dst, db_dst, a.v[i], &rows_b, sha_b) != 0) {
      rc = -1;
      goto out;
    }
    if (rows_a == rows_b && strcmp(sha_a, sha_b) == 0)
      continue;
    int r = testdb_compare_tables(src, dst, db_src, db_dst, a.v[i], text, sizeof text);
    if (r < 0) {
      rc = -1;
      goto out;
    }
    if (r == 0) /* changed between the checksums and the comparison */
      snprintf(text, sizeof text,
               "`%s`.`%s`: checksums differ (source %" PRIu64 " rows %s, target %" PRIu64
               " rows %s) but a second reading found no difference: is something writing?",
               db_src, a.v[i], rows_a, sha_a, rows_b, sha_b);
    goto out;
  }
  rc = 0;
out:
  if (rc < 0)
    testdb_put(diff, len, testdb_last_error()->message);
  else
    testdb_put(diff, len, text);
  testdb_names_free(&a);
  testdb_names_free(&b);
  return rc;
}
