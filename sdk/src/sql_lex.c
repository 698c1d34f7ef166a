/*
 * The SQL lexer (dmhost/sql_lex.h): a statement as tokens (words, quoted names, strings,
 * punctuation), comments dropped except versioned ones, whose content counts as statement text.
 * Moved here from the sync unit's DDL parser, so that the load and the sync read statements alike.
 */
#include "dmhost/sql_lex.h"

#include <stdlib.h>
#include <string.h>

bool dm_sql_word_byte(unsigned char c) {
  /* MariaDB's unquoted identifiers: ASCII letters, digits, '_', '$' and any non-ASCII byte
   * (U+0080 and above in UTF-8 are all bytes >= 0x80). */
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '$' || c >= 0x80;
}

size_t dm_sql_mb_len(unsigned flags, const char *s, size_t i, size_t len) {
  unsigned mb = flags & DM_SQL_MB_MASK;
  if (!mb || i + 1 >= len)
    return 0;
  unsigned char a = (unsigned char)s[i], b = (unsigned char)s[i + 1];
  switch (mb) {
  case DM_SQL_MB_GBK:
    return a >= 0x81 && a <= 0xfe && ((b >= 0x40 && b <= 0x7e) || (b >= 0x80 && b <= 0xfe)) ? 2 : 0;
  case DM_SQL_MB_BIG5:
    return a >= 0xa1 && a <= 0xf9 && ((b >= 0x40 && b <= 0x7e) || (b >= 0xa1 && b <= 0xfe)) ? 2 : 0;
  case DM_SQL_MB_SJIS:
    return ((a >= 0x81 && a <= 0x9f) || (a >= 0xe0 && a <= 0xfc)) &&
                   ((b >= 0x40 && b <= 0x7e) || (b >= 0x80 && b <= 0xfc))
               ? 2
               : 0;
  case DM_SQL_MB_GB18030:
    if (a < 0x81 || a > 0xfe)
      return 0;
    if ((b >= 0x40 && b <= 0x7e) || (b >= 0x80 && b <= 0xfe))
      return 2;
    if (b >= 0x30 && b <= 0x39 && i + 3 < len) {
      unsigned char c = (unsigned char)s[i + 2], d = (unsigned char)s[i + 3];
      return c >= 0x81 && c <= 0xfe && d >= 0x30 && d <= 0x39 ? 4 : 0;
    }
    return 0;
  default:
    return 0;
  }
}

static bool sql_space_byte(unsigned char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static int sql_push_tok(dm_sql_tokens *p, dm_sql_tok_type type, bool vc, size_t off, size_t len) {
  if (p->n == p->cap) {
    int cap = p->cap ? p->cap * 2 : 64;
    dm_sql_tok *t = realloc(p->t, (size_t)cap * sizeof *t);
    if (!t)
      return -1;
    p->t = t;
    p->cap = cap;
  }
  p->t[p->n++] = (dm_sql_tok){.type = type, .vc = vc, .off = off, .len = len};
  return 0;
}

static void sql_lex_error(dm_sql_tokens *p, size_t off, const char *what) {
  p->failed = true;
  p->err_off = off;
  p->err = what;
}

/* Splits the whole statement into tokens, dropping comments but keeping what versioned comments
 * (/ *!50100 ... * /, MariaDB's / *M!100100 ... * /) hold, since the server executes that. A lexing
 * error (an unterminated quote or comment) stops the tokens there and is remembered: it matters
 * only if the statement turns out to be of a kind we parse. Returns -1 only when memory ran out. */
int dm_sql_lex(const char *sql, size_t len, unsigned flags, dm_sql_tokens *p) {
  const char *s = sql;
  size_t i = 0, vc_start = 0;
  bool in_vc = false;
  while (i < len) {
    unsigned char c = (unsigned char)s[i];
    if (sql_space_byte(c)) {
      i++;
      continue;
    }
    if (c == '/' && i + 1 < len && s[i + 1] == '*') {
      size_t j = i + 2;
      bool versioned = j < len && (s[j] == '!' || (s[j] == 'M' && j + 1 < len && s[j + 1] == '!'));
      if (versioned && !in_vc) {
        j += s[j] == '!' ? 1 : 2;
        /* The version is exactly 5 digits, or 6; fewer are not a version but statement text. */
        size_t d = 0;
        while (d < 6 && j + d < len && s[j + d] >= '0' && s[j + d] <= '9')
          d++;
        if (d >= 5)
          j += d;
        in_vc = true;
        vc_start = i;
        i = j;
        continue;
      }
      while (j + 1 < len && !(s[j] == '*' && s[j + 1] == '/'))
        j++;
      if (j + 1 >= len) {
        sql_lex_error(p, i, "unterminated comment");
        return 0;
      }
      i = j + 2;
      continue;
    }
    if (in_vc && c == '*' && i + 1 < len && s[i + 1] == '/') {
      in_vc = false;
      i += 2;
      continue;
    }
    /* "--" opens a comment only when a space or control byte follows (MariaDB's rule), so that
     * "a--1" stays an expression. */
    if (c == '#' || (c == '-' && i + 1 < len && s[i + 1] == '-' &&
                     (i + 2 == len || (unsigned char)s[i + 2] <= ' '))) {
      while (i < len && s[i] != '\n')
        i++;
      continue;
    }
    size_t j = i + 1;
    dm_sql_tok_type type;
    size_t mb = dm_sql_mb_len(flags, s, i, len);
    bool name_quote = c == '`' || (c == '"' && (flags & DM_SQL_ANSI_QUOTES));
    if (name_quote) {
      /* A quoted name: no escapes but a doubled quote; a multi-byte character is skipped whole
       * (gbk's 0x81 0x60 holds a backtick that does not end the name). */
      type = c == '`' ? DM_SQL_TK_BQ : DM_SQL_TK_DQ;
      for (;;) {
        size_t m = dm_sql_mb_len(flags, s, j, len);
        if (m) {
          j += m;
          continue;
        }
        if (j >= len) {
          sql_lex_error(p, i,
                        c == '`' ? "unterminated `quoted` name" : "unterminated \"quoted\" name");
          return 0;
        }
        if (s[j] != (char)c) {
          j++;
          continue;
        }
        if (j + 1 < len && s[j + 1] == (char)c) {
          j += 2; /* a doubled quote is one quote of the name */
          continue;
        }
        j++;
        break;
      }
    } else if (c == '\'' || c == '"') {
      type = c == '"' ? DM_SQL_TK_DQ : DM_SQL_TK_STR;
      for (;;) {
        if (j >= len) {
          sql_lex_error(p, i, c == '"' ? "unterminated \"quoted\" text" : "unterminated string");
          return 0;
        }
        size_t m = dm_sql_mb_len(flags, s, j, len);
        if (m) {
          j += m; /* gbk's 0xBF 0x5C is one character, not a backslash */
          continue;
        }
        if (s[j] == '\\' && !(flags & DM_SQL_NO_BACKSLASH_ESCAPES)) {
          j += 2; /* the server skips one byte after a backslash, whatever it starts */
          continue;
        }
        if (s[j] == (char)c) {
          if (j + 1 < len && s[j + 1] == (char)c) {
            j += 2;
            continue;
          }
          j++;
          break;
        }
        j++;
      }
    } else if (mb || dm_sql_word_byte(c)) {
      type = DM_SQL_TK_WORD;
      j = i + (mb ? mb : 1);
      for (;;) {
        size_t m = dm_sql_mb_len(flags, s, j, len);
        if (m)
          j += m;
        else if (j < len && dm_sql_word_byte((unsigned char)s[j]))
          j++;
        else
          break;
      }
    } else {
      type = DM_SQL_TK_PUNCT;
    }
    if (sql_push_tok(p, type, in_vc, i, j - i) < 0)
      return -1;
    i = j;
  }
  if (in_vc)
    sql_lex_error(p, vc_start, "unterminated versioned comment");
  return 0;
}

void dm_sql_tokens_free(dm_sql_tokens *t) {
  free(t->t);
  t->t = NULL;
  t->n = t->cap = 0;
}

bool dm_sql_tok_is(const char *sql, const dm_sql_tok *t, const char *kw) {
  if (t->type != DM_SQL_TK_WORD)
    return false;
  size_t n = strlen(kw);
  if (t->len != n)
    return false;
  const char *w = sql + t->off;
  for (size_t k = 0; k < n; k++) {
    char c = w[k];
    if (c >= 'a' && c <= 'z')
      c = (char)(c - 'a' + 'A');
    if (c != kw[k])
      return false;
  }
  return true;
}
