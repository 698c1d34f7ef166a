/*
 * A condition on a row's columns, from a task file, that a unit puts into SQL it runs with its own
 * account: mydumper's `where` (the dump, on the source) and an `expression-filter` (the sync, on
 * the target). A task file can come from whoever may submit one (docs/security.md), and a
 * condition on a row needs none of what would let it read elsewhere or run more: it may not hold
 * `;`, a comment (`--`, `#`, `/ *`), a parenthesis closed that it did not open (which would end
 * the statement's own parenthesis around it), or the words that reach other tables, files or
 * statements (SELECT, UNION, FROM, INTO, LOAD_FILE, OUTFILE, DUMPFILE, TABLE, VALUES, HANDLER).
 * Quoted text ('...', "...", `...`) is skipped as the server reads it (backslash escapes; doubled
 * quotes).
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "dmhost/db.h"

static const char *const cond_words[] = {"select",  "union", "from",     "into",   "load_file",
                                         "outfile", "table", "dumpfile", "values", "handler"};

int dm_db_condition_check(const char *w, char *why, size_t n) {
  int depth = 0;
  for (const char *p = w; *p;) {
    char c = *p;
    if (c == '\'' || c == '"' || c == '`') {
      const char *q = p + 1;
      for (;; q++) {
        if (!*q) {
          snprintf(why, n, "a quote (%c) is not closed", c);
          return -1;
        }
        if (*q == '\\' && c != '`' && q[1]) {
          q++;
          continue;
        }
        if (*q == c) {
          if (q[1] == c) { /* a doubled quote stands for one */
            q++;
            continue;
          }
          break;
        }
      }
      p = q + 1;
      continue;
    }
    if (c == ';' || c == '#' || (c == '-' && p[1] == '-') || (c == '/' && p[1] == '*') ||
        (c == '*' && p[1] == '/')) {
      snprintf(why, n, "`%.2s` (a statement's end or a comment) is not part of a condition",
               c == ';' || c == '#' ? (char[2]){c, 0} : p);
      return -1;
    }
    if (c == '(')
      depth++;
    if (c == ')' && --depth < 0) {
      snprintf(why, n, "a `)` closes a parenthesis the condition did not open");
      return -1;
    }
    if (isalpha((unsigned char)c) || c == '_') {
      const char *s = p;
      while (isalnum((unsigned char)*p) || *p == '_' || *p == '$')
        p++;
      size_t len = (size_t)(p - s);
      for (size_t i = 0; i < sizeof cond_words / sizeof *cond_words; i++)
        if (strlen(cond_words[i]) == len && strncasecmp(s, cond_words[i], len) == 0) {
          snprintf(why, n, "`%.*s` reaches beyond the row: a condition on its columns is expected",
                   (int)len, s);
          return -1;
        }
      continue;
    }
    p++;
  }
  if (depth != 0) {
    snprintf(why, n, "a `(` is not closed");
    return -1;
  }
  return 0;
}
