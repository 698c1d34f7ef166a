/*
 * What the dump covers and the schema files. Runs on worker connection 0, inside its snapshot, so
 * the schema files describe the tables the data was read from. Only base tables are dumped; views,
 * sequences and system-versioned tables are skipped with a log line (docs/dump.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmhost/db.h"
#include "dump_internal.h"

static bool dump_schema_is_system(const char *db) {
  return strcmp(db, "mysql") == 0 || strcmp(db, "information_schema") == 0 ||
         strcmp(db, "performance_schema") == 0 || strcmp(db, "sys") == 0;
}

static int dump_schema_no_memory(dump_unit *u, dm_error *err) {
  u->host->error_make(u->ctx, err, DM_ERR_NO_MEMORY, NULL, "dump: no memory for the table list");
  return -1;
}

/* "<statement>;\n" into a file of the dump folder, atomically. */
static int dump_schema_write(dump_unit *u, const char *file, const char *stmt, size_t len,
                             dm_error *err) {
  char *data = malloc(len + 3);
  if (!data)
    return dump_schema_no_memory(u, err);
  memcpy(data, stmt, len);
  memcpy(data + len, ";\n", 3);
  /* no sync: dump_dir_sync_files makes it durable before the metadata names it */
  int rc = dump_file_write_atomic(u, file, data, len + 2, 0, err);
  free(data);
  return rc;
}

/*
 * The answer to SHOW CREATE goes into a file of the dump folder as it is, and the load (or a
 * person) runs it: it must be the statement asked for. No NUL byte (the server escapes NUL in
 * string literals as \0, so only binary data holds one), starting with `head` (`CREATE TABLE ` or
 * `CREATE DATABASE `), the quoted name asked (the session quotes with backticks: no ANSI_QUOTES,
 * SQL_QUOTE_SHOW_CREATE on) and then `tail`. Not a character set check: under NAMES binary the
 * answer is the server's bytes, and a binary column's default is its raw bytes (0xFF00 is
 * DEFAULT '<0xFF>\0', measured), which no text encoding need accept. A source that answered the
 * bytes of a library had them written as a schema file (issue 20, item 3). Returns 0, or -1 with
 * DM_ERR_DUMP_BAD_ANSWER naming the object and what was wrong, never the bytes.
 */
static int dump_schema_answer_ok(dump_unit *u, const char *sql, const char *what, const char *row,
                                 size_t len, const char *head, const char *name, const char *tail,
                                 dm_error *err) {
  char quoted[DM_DB_QUOTED_IDENT_MAX];
  size_t hl = strlen(head), tl = strlen(tail);
  size_t ql = dm_db_quote_ident(quoted, sizeof quoted, name, strlen(name));
  const char *why = NULL;
  if (!row)
    why = "no statement";
  else if (memchr(row, '\0', len))
    why = "a NUL byte (binary data, not a statement)";
  else if (len < hl + ql + tl || memcmp(row, head, hl) != 0 || memcmp(row + hl, quoted, ql) != 0 ||
           memcmp(row + hl + ql, tail, tl) != 0)
    why = "text that does not start with the statement asked for";
  if (!why)
    return 0;
  u->host->error_make(u->ctx, err, DM_ERR_DUMP_BAD_ANSWER, NULL,
                      "dump: the source answered %s for %s with %s (%zu bytes), not `%s%s%s...`; "
                      "refused, nothing of it was written",
                      sql, what, why, len, head, quoted, tail);
  return -1;
}

static int dump_schema_database(dump_unit *u, dump_conn *c, const char *db, dm_error *err) {
  char *q = dm_db_quote_ident_dup(db), *sql = q ? dump_strfmt("SHOW CREATE DATABASE %s", q) : NULL;
  char *part = dump_file_name_part(db);
  char *file = part ? dump_strfmt("%s-schema-create.sql", part) : NULL;
  free(q);
  free(part);
  MYSQL_RES *res = NULL;
  int rc = -1;
  if (!sql || !file)
    rc = dump_schema_no_memory(u, err);
  else if (dump_conn_query(u, c, sql, &res, err) == 0) {
    MYSQL_ROW row = mysql_fetch_row(res);
    unsigned long *len = mysql_fetch_lengths(res);
    const char *create = "CREATE DATABASE ";
    if (!row || mysql_num_fields(res) < 2 || !row[1]) {
      u->host->error_make(u->ctx, err, DM_ERR_DB_QUERY, NULL,
                          "dump: %s returned no CREATE DATABASE statement", sql);
    } else if (dump_schema_answer_ok(u, sql, "a database", row[1], len[1], create, db, "", err) ==
               0) {
      /* The loader may run against a target that already has the schema. */
      char *stmt = dump_strfmt("CREATE DATABASE IF NOT EXISTS %.*s", (int)(len[1] - strlen(create)),
                               row[1] + strlen(create));
      rc = stmt ? dump_schema_write(u, file, stmt, strlen(stmt), err)
                : dump_schema_no_memory(u, err);
      free(stmt);
    }
  }
  if (res)
    mysql_free_result(res);
  free(sql);
  free(file);
  return rc;
}

static int dump_schema_add_table(dump_unit *u, const char *db, const char *name, int64_t est,
                                 dm_error *err) {
  if (u->n_tables == u->cap_tables) {
    size_t cap = u->cap_tables ? 2 * u->cap_tables : 32;
    dump_table **t = realloc(u->tables, cap * sizeof *t);
    if (!t)
      return dump_schema_no_memory(u, err);
    u->tables = t;
    u->cap_tables = cap;
  }
  dump_table *t = calloc(1, sizeof *t);
  if (!t)
    return dump_schema_no_memory(u, err);
  t->db = strdup(db);
  t->name = strdup(name);
  char *qd = dm_db_quote_ident_dup(db), *qt = dm_db_quote_ident_dup(name);
  char *pd = dump_file_name_part(db), *pt = dump_file_name_part(name);
  t->qname = qd && qt ? dump_strfmt("%s.%s", qd, qt) : NULL;
  t->file_base = pd && pt ? dump_strfmt("%s.%s", pd, pt) : NULL;
  free(qd);
  free(qt);
  free(pd);
  free(pt);
  t->est_rows = est;
  u->tables[u->n_tables++] = t;
  if (!t->db || !t->name || !t->qname || !t->file_base)
    return dump_schema_no_memory(u, err);
  return 0;
}

void dump_tables_free(dump_unit *u) {
  for (size_t i = 0; i < u->n_tables; i++)
    dump_table_free(u->tables[i]);
  free(u->tables);
  u->tables = NULL;
  u->n_tables = u->cap_tables = 0;
}

int dump_schema_list(dump_unit *u, dump_conn *c, dm_error *err) {
  MYSQL_RES *res;
  MYSQL_ROW row;
  if (dump_conn_query(u, c,
                      "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA ORDER BY SCHEMA_NAME",
                      &res, err) != 0)
    return -1;
  int rc = 0;
  while (rc == 0 && (row = mysql_fetch_row(res)))
    if (row[0] && !dump_schema_is_system(row[0]) && u->host->table_allowed(u->ctx, row[0], NULL))
      rc = dump_schema_database(u, c, row[0], err);
  mysql_free_result(res);
  if (rc != 0)
    return -1;

  if (dump_conn_query(u, c,
                      "SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE, IFNULL(TABLE_ROWS, 0) "
                      "FROM information_schema.TABLES WHERE TABLE_SCHEMA NOT IN ('mysql', "
                      "'information_schema', 'performance_schema', 'sys') ORDER BY 1, 2",
                      &res, err) != 0)
    return -1;
  int64_t total = 0;
  while (rc == 0 && (row = mysql_fetch_row(res))) {
    if (!row[0] || !row[1] || !row[2] || !u->host->table_allowed(u->ctx, row[0], NULL) ||
        !u->host->table_allowed(u->ctx, row[0], row[1]))
      continue;
    if (strcmp(row[2], "BASE TABLE") != 0) {
      u->host->logf(u->ctx, DM_LOG_INFO, "dump: skipping `%s`.`%s`: a %s, not a base table", row[0],
                    row[1], row[2]);
      continue;
    }
    int64_t est = row[3] ? strtoll(row[3], NULL, 10) : 0;
    rc = dump_schema_add_table(u, row[0], row[1], est, err);
    total += est;
  }
  mysql_free_result(res);
  atomic_store(&u->total_tables, (int)u->n_tables);
  atomic_store(&u->total_rows, total);
  dump_metrics_estimated(u, total);
  return rc;
}

typedef struct dump_schema_col {
  char *name;
  bool integer, not_null, is_unsigned;
} dump_schema_col;

static bool dump_schema_is_int(const char *type) {
  static const char *const ints[] = {"tinyint", "smallint", "mediumint", "int", "bigint"};
  for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
    if (strcmp(type, ints[i]) == 0)
      return true;
  return false;
}

/* Appends s to a growing buffer; returns -1 when out of memory. */
static int dump_schema_cat(char **buf, size_t *len, size_t *cap, const char *s) {
  size_t n = strlen(s);
  if (*len + n + 1 > *cap) {
    size_t c = (*cap ? *cap * 2 : 256) + n;
    char *b = realloc(*buf, c);
    if (!b)
      return -1;
    *buf = b;
    *cap = c;
  }
  memcpy(*buf + *len, s, n + 1);
  *len += n;
  return 0;
}

/* The columns to dump (generated ones left out), the SELECT list, the INSERT head and the forms. */
static int dump_schema_columns(dump_unit *u, dump_conn *c, dump_table *t, const char *wdb,
                               const char *wt, dump_schema_col **cols_out, int *n_out,
                               dm_error *err) {
  char *sql = dump_strfmt(
      "SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE FROM information_schema.COLUMNS "
      "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s AND (GENERATION_EXPRESSION IS NULL OR "
      "GENERATION_EXPRESSION = '') ORDER BY ORDINAL_POSITION",
      wdb, wt);
  MYSQL_RES *res;
  if (!sql)
    return dump_schema_no_memory(u, err);
  int rc = dump_conn_query(u, c, sql, &res, err);
  free(sql);
  if (rc != 0)
    return -1;
  int n = (int)mysql_num_rows(res);
  dump_schema_col *cols = calloc((size_t)n + 1, sizeof *cols);
  t->forms = calloc((size_t)n + 1, 1);
  char *sel = NULL, *head = NULL;
  size_t sl = 0, sc = 0, hl = 0, hc = 0;
  char *tq = dm_db_quote_ident_dup(t->name);
  bool oom = !cols || !t->forms || !tq;
  if (!oom) {
    char *h = dump_strfmt("INSERT INTO %s (", tq);
    oom = !h || dump_schema_cat(&head, &hl, &hc, h) != 0;
    free(h);
  }
  MYSQL_ROW row;
  for (int i = 0; !oom && i < n && (row = mysql_fetch_row(res)); i++) {
    const char *type = row[1] ? row[1] : "";
    cols[i].name = strdup(row[0] ? row[0] : "");
    cols[i].integer = dump_schema_is_int(type);
    cols[i].is_unsigned = row[2] && strstr(row[2], "unsigned");
    cols[i].not_null = row[3] && strcmp(row[3], "NO") == 0;
    char *q = dm_db_quote_ident_dup(row[0] ? row[0] : "");
    /* MariaDB prints a FLOAT with 6 digits, which does not round-trip (123456.7 reads back as
     * 123457): read it as the DOUBLE it converts to exactly. INET4/INET6/UUID print as text, but
     * a binary string (a hex literal, or any quoted string under NAMES binary) is taken as their
     * native binary form ('1111:2222::33:44' has 16 bytes, the size of an INET6): write the text
     * with a character set introducer. */
    char *expr = NULL;
    if (strcmp(type, "float") == 0) {
      expr = q ? dump_strfmt("CAST(%s AS DOUBLE)", q) : NULL;
      t->forms[i] = DUMP_FORM_NUMBER;
    } else {
      expr = q ? strdup(q) : NULL;
      if (strcmp(type, "inet4") == 0 || strcmp(type, "inet6") == 0 || strcmp(type, "uuid") == 0)
        t->forms[i] = DUMP_FORM_TEXT;
    }
    oom = !cols[i].name || !q || !expr || (i > 0 && dump_schema_cat(&sel, &sl, &sc, ",") != 0) ||
          dump_schema_cat(&sel, &sl, &sc, expr) != 0 ||
          (i > 0 && dump_schema_cat(&head, &hl, &hc, ",") != 0) ||
          dump_schema_cat(&head, &hl, &hc, q) != 0;
    free(q);
    free(expr);
  }
  mysql_free_result(res);
  free(tq);
  if (oom || dump_schema_cat(&head, &hl, &hc, ") VALUES ") != 0) {
    free(sel);
    free(head);
    for (int i = 0; cols && i < n; i++)
      free(cols[i].name);
    free(cols);
    return dump_schema_no_memory(u, err);
  }
  t->select_list = sel;
  t->insert_head = head;
  t->insert_head_len = hl;
  t->n_cols = n;
  *cols_out = cols;
  *n_out = n;
  return 0;
}

/* The chunk key: the primary key when it is one integer column, else the first unique key that
 * is one NOT NULL integer column. */
static int dump_schema_key(dump_unit *u, dump_conn *c, dump_table *t, const char *wdb,
                           const char *wt, const dump_schema_col *cols, int n, dm_error *err) {
  char *sql = dump_strfmt(
      "SELECT INDEX_NAME, COLUMN_NAME, SEQ_IN_INDEX FROM information_schema.STATISTICS WHERE "
      "TABLE_SCHEMA = %s AND TABLE_NAME = %s AND NON_UNIQUE = 0 "
      "ORDER BY INDEX_NAME <> 'PRIMARY', INDEX_NAME, SEQ_IN_INDEX",
      wdb, wt);
  MYSQL_RES *res;
  if (!sql)
    return dump_schema_no_memory(u, err);
  int rc = dump_conn_query(u, c, sql, &res, err);
  free(sql);
  if (rc != 0)
    return -1;
  unsigned long nrows = mysql_num_rows(res);
  MYSQL_ROW *rows = calloc(nrows + 1, sizeof *rows);
  if (!rows) {
    mysql_free_result(res);
    return dump_schema_no_memory(u, err);
  }
  for (unsigned long i = 0; i < nrows; i++)
    rows[i] = mysql_fetch_row(res);
  for (unsigned long i = 0; i < nrows && !t->key;) {
    unsigned long j = i + 1;
    while (j < nrows && rows[j][0] && rows[i][0] && strcmp(rows[j][0], rows[i][0]) == 0)
      j++;
    if (j - i == 1 && rows[i][1]) {
      for (int k = 0; k < n; k++)
        if (strcmp(cols[k].name, rows[i][1]) == 0 && cols[k].integer && cols[k].not_null) {
          t->key = dm_db_quote_ident_dup(cols[k].name);
          t->key_unsigned = cols[k].is_unsigned;
          if (!t->key)
            rc = -1;
          break;
        }
    }
    i = j;
  }
  free(rows);
  mysql_free_result(res);
  return rc == 0 ? 0 : dump_schema_no_memory(u, err);
}

static int dump_schema_create_table(dump_unit *u, dump_conn *c, dump_table *t, dm_error *err) {
  char *sql = dump_strfmt("SHOW CREATE TABLE %s", t->qname);
  char *file = dump_strfmt("%s-schema.sql", t->file_base);
  MYSQL_RES *res = NULL;
  int rc = -1;
  if (!sql || !file)
    rc = dump_schema_no_memory(u, err);
  else if (dump_conn_query(u, c, sql, &res, err) == 0) {
    MYSQL_ROW row = mysql_fetch_row(res);
    unsigned long *len = mysql_fetch_lengths(res);
    if (!row || mysql_num_fields(res) < 2 || !row[1])
      u->host->error_make(u->ctx, err, DM_ERR_DB_QUERY, NULL,
                          "dump: %s returned no CREATE TABLE statement", sql);
    else if (dump_schema_answer_ok(u, sql, "a base table", row[1], len[1], "CREATE TABLE ", t->name,
                                   " (", err) == 0)
      rc = dump_schema_write(u, file, row[1], len[1], err);
  }
  if (res)
    mysql_free_result(res);
  free(sql);
  free(file);
  return rc;
}

int dump_schema_table(dump_unit *u, dump_conn *c, dump_table *t, dm_error *err) {
  char *wdb = dump_quote_string(c, t->db), *wt = dump_quote_string(c, t->name);
  dump_schema_col *cols = NULL;
  int n = 0, rc;
  if (!wdb || !wt)
    rc = dump_schema_no_memory(u, err);
  else
    rc = dump_schema_create_table(u, c, t, err) == 0 &&
                 dump_schema_columns(u, c, t, wdb, wt, &cols, &n, err) == 0 &&
                 dump_schema_key(u, c, t, wdb, wt, cols, n, err) == 0
             ? 0
             : -1;
  for (int i = 0; i < n; i++)
    free(cols[i].name);
  free(cols);
  free(wdb);
  free(wt);
  return rc;
}

void dump_table_free(dump_table *t) {
  if (!t)
    return;
  free(t->db);
  free(t->name);
  free(t->qname);
  free(t->file_base);
  free(t->select_list);
  free(t->insert_head);
  free(t->forms);
  free(t->key);
  free(t);
}
