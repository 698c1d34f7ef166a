/* The SQL verify writes: names (the SDK's quoting), literals, the row checksum expression. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "verify_internal.h"

static void vf_sql_ident(dm_buf *b, const char *name) {
  char q[DM_DB_QUOTED_IDENT_MAX + 1];
  dm_buf_puts(b, dm_db_quoted(name, q, sizeof q));
}

void vf_sql_name(dm_buf *b, const char *schema, const char *table) {
  vf_sql_ident(b, schema);
  dm_buf_puts(b, ".");
  vf_sql_ident(b, table);
}

void vf_sql_literal(dm_buf *b, MYSQL *c, const char *v, unsigned long len, bool binary) {
  if (!v) {
    dm_buf_puts(b, "NULL");
    return;
  }
  if (binary) {
    static const char hex[] = "0123456789abcdef";
    dm_buf_puts(b, len ? "X'" : "''");
    for (unsigned long i = 0; i < len; i++) {
      char two[2] = {hex[(unsigned char)v[i] >> 4], hex[(unsigned char)v[i] & 15]};
      dm_buf_put(b, two, 2);
    }
    if (len)
      dm_buf_puts(b, "'");
    return;
  }
  char *e = malloc(2 * (size_t)len + 1);
  if (!e) {
    b->oom = true;
    return;
  }
  unsigned long n = mysql_real_escape_string(c, e, v, len);
  dm_buf_puts(b, "'");
  dm_buf_put(b, e, n);
  dm_buf_puts(b, "'");
  free(e);
}

void vf_sql_cols(dm_buf *b, const vf_table *t) {
  for (int i = 0; i < t->n_cols; i++) {
    if (i)
      dm_buf_puts(b, ", ");
    vf_sql_ident(b, t->cols[i].name);
  }
}

void vf_sql_key_cols(dm_buf *b, const vf_table *t) {
  for (int i = 0; i < t->n_key; i++) {
    if (i)
      dm_buf_puts(b, ", ");
    vf_sql_ident(b, t->cols[t->key[i]].name);
  }
}

void vf_sql_row_crc(dm_buf *b, const vf_table *t) {
  /* pt-table-checksum's row: the values joined by '#', then which of them are NULL (CONCAT_WS
   * skips NULLs, so a NULL in one column and in the next would otherwise hash alike). A column
   * that is NOT NULL on both sides never adds a character there: it is left out, as pt leaves it
   * (a chunk's time falls by ~15% on four columns). */
  dm_buf_puts(b, "CRC32(CONCAT_WS('#', ");
  vf_sql_cols(b, t);
  bool any = false;
  for (int i = 0; i < t->n_cols; i++) {
    if (!t->cols[i].nullable)
      continue;
    dm_buf_puts(b, any ? ", ISNULL(" : ", CONCAT(ISNULL(");
    vf_sql_ident(b, t->cols[i].name);
    dm_buf_puts(b, ")");
    any = true;
  }
  dm_buf_puts(b, any ? ")))" : "))");
}

int vf_sql_query(MYSQL *c, dm_db_side side, const char *sql, const char *what, dm_error *err) {
  if (mysql_query(c, sql) == 0)
    return 0;
  dm_db_error(c, side, err, DM_ERR_DB_QUERY, "verify: %s on the %s", what,
              side == DM_DB_SOURCE ? "source" : "target");
  return -1;
}
