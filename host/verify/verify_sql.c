/* The SQL verify writes: names (the SDK's quoting), literals, the row checksum expression. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "verify_internal.h"

void vf_buf_add(vf_buf *b, const char *s, size_t n) {
  if (b->oom)
    return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1)
      cap *= 2;
    char *p = realloc(b->s, cap);
    if (!p) {
      b->oom = true;
      return;
    }
    b->s = p;
    b->cap = cap;
  }
  memcpy(b->s + b->len, s, n);
  b->len += n;
  b->s[b->len] = '\0';
}

void vf_buf_puts(vf_buf *b, const char *s) {
  vf_buf_add(b, s, strlen(s));
}

void vf_buf_printf(vf_buf *b, const char *fmt, ...) {
  char small[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0)
    return;
  if ((size_t)n < sizeof small) {
    vf_buf_add(b, small, (size_t)n);
    return;
  }
  char *big = malloc((size_t)n + 1);
  if (!big) {
    b->oom = true;
    return;
  }
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  vf_buf_add(b, big, (size_t)n);
  free(big);
}

void vf_buf_free(vf_buf *b) {
  free(b->s);
  *b = (vf_buf){0};
}

static void vf_sql_ident(vf_buf *b, const char *name) {
  char q[DM_DB_QUOTED_IDENT_MAX + 1];
  vf_buf_puts(b, dm_db_quoted(name, q, sizeof q));
}

void vf_sql_name(vf_buf *b, const char *schema, const char *table) {
  vf_sql_ident(b, schema);
  vf_buf_puts(b, ".");
  vf_sql_ident(b, table);
}

void vf_sql_literal(vf_buf *b, MYSQL *c, const char *v, unsigned long len, bool binary) {
  if (!v) {
    vf_buf_puts(b, "NULL");
    return;
  }
  if (binary) {
    static const char hex[] = "0123456789abcdef";
    vf_buf_puts(b, len ? "X'" : "''");
    for (unsigned long i = 0; i < len; i++) {
      char two[2] = {hex[(unsigned char)v[i] >> 4], hex[(unsigned char)v[i] & 15]};
      vf_buf_add(b, two, 2);
    }
    if (len)
      vf_buf_puts(b, "'");
    return;
  }
  char *e = malloc(2 * (size_t)len + 1);
  if (!e) {
    b->oom = true;
    return;
  }
  unsigned long n = mysql_real_escape_string(c, e, v, len);
  vf_buf_puts(b, "'");
  vf_buf_add(b, e, n);
  vf_buf_puts(b, "'");
  free(e);
}

void vf_sql_cols(vf_buf *b, const vf_table *t) {
  for (int i = 0; i < t->n_cols; i++) {
    if (i)
      vf_buf_puts(b, ", ");
    vf_sql_ident(b, t->cols[i].name);
  }
}

void vf_sql_key_cols(vf_buf *b, const vf_table *t) {
  for (int i = 0; i < t->n_key; i++) {
    if (i)
      vf_buf_puts(b, ", ");
    vf_sql_ident(b, t->cols[t->key[i]].name);
  }
}

void vf_sql_row_crc(vf_buf *b, const vf_table *t) {
  /* pt-table-checksum's row: the values joined by '#', then which of them are NULL (CONCAT_WS
   * skips NULLs, so NULL and '' would otherwise hash alike) */
  vf_buf_puts(b, "CRC32(CONCAT_WS('#', ");
  vf_sql_cols(b, t);
  vf_buf_puts(b, ", CONCAT(");
  for (int i = 0; i < t->n_cols; i++) {
    vf_buf_puts(b, i ? ", ISNULL(" : "ISNULL(");
    vf_sql_ident(b, t->cols[i].name);
    vf_buf_puts(b, ")");
  }
  vf_buf_puts(b, ")))");
}

int vf_sql_query(MYSQL *c, dm_db_side side, const char *sql, const char *what, dm_error *err) {
  if (mysql_query(c, sql) == 0)
    return 0;
  dm_db_error(c, side, err, DM_ERR_DB_QUERY, "verify: %s on the %s", what,
              side == DM_DB_SOURCE ? "source" : "target");
  return -1;
}
