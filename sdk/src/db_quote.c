/* Identifier quoting (see dmhost/db.h): the one copy every unit uses. */
#include <stdlib.h>
#include <string.h>

#include "dmhost/db.h"

size_t dm_db_quote_ident(char *out, size_t size, const char *name, size_t len) {
  size_t need = len + 2;
  for (size_t i = 0; i < len; i++)
    need += name[i] == '`';
  if (need >= size) {
    /* never a truncated name: it would name another object */
    if (size)
      out[0] = '\0';
    return need;
  }
  char *o = out;
  *o++ = '`';
  for (size_t i = 0; i < len; i++) {
    if (name[i] == '`')
      *o++ = '`';
    *o++ = name[i];
  }
  *o++ = '`';
  *o = '\0';
  return need;
}

const char *dm_db_quoted(const char *name, char *out, size_t size) {
  dm_db_quote_ident(out, size, name, strlen(name));
  return out;
}

char *dm_db_quote_ident_dup(const char *name) {
  size_t len = strlen(name), need = dm_db_quote_ident(NULL, 0, name, len);
  char *out = malloc(need + 1);
  if (out)
    dm_db_quote_ident(out, need + 1, name, len);
  return out;
}
