/*
 * Statement text fit for messages and logs (sync_ddl.h): the literals that carry a password
 * written as '***', and a statement's verb alone for INFO lines. The binlog carries CREATE USER
 * ... IDENTIFIED BY 'clear text' and SET PASSWORD = PASSWORD('clear text') as the source's users
 * typed them; none of it may reach a log file or query-status.
 *
 * The text is read with the lexer the parser uses (same sql_mode and charset flags), so a quote
 * inside a gbk character or a backslash under NO_BACKSLASH_ESCAPES cannot shift what counts as
 * the literal.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sync_ddl.h"
#include "sync_ddl_internal.h"

static bool redact_word_is(const sync_parser *p, int k, const char *kw) {
  return dm_sql_tok_is(p->sql, &p->t[k], kw);
}

/* PASSWORD, OLD_PASSWORD, MASTER_PASSWORD, ED25519_PASSWORD, ...: a word ending in PASSWORD. */
static bool redact_password_word(const sync_parser *p, int k) {
  const sync_tok *t = &p->t[k];
  static const char pw[] = "PASSWORD";
  size_t n = sizeof pw - 1;
  if (t->type != SYNC_TK_WORD || t->len < n)
    return false;
  /* dmhost never calls setlocale: strncasecmp folds ASCII only */
  return strncasecmp(p->sql + t->off + t->len - n, pw, n) == 0;
}

static bool redact_punct(const sync_parser *p, int k, char c) {
  return p->t[k].type == SYNC_TK_PUNCT && p->sql[p->t[k].off] == c;
}

/* A charset introducer or literal prefix before a string: _utf8mb4'..', X'..', N'..', B'..'. */
static bool redact_introducer(const sync_parser *p, int k) {
  const sync_tok *t = &p->t[k];
  if (t->type != SYNC_TK_WORD)
    return false;
  char c = p->sql[t->off];
  return c == '_' || (t->len == 1 && strchr("xXnNbB", c));
}

/* Marks secret[k] for every literal that holds a password: the one after IDENTIFIED BY, after USING
 * or AS once IDENTIFIED was seen (IDENTIFIED VIA plugin USING '...'), after the '=' of SET
 * PASSWORD, after a word ending in PASSWORD (PASSWORD = '...', MASTER_PASSWORD '...', OPTIONS
 * (PASSWORD '...')), every one inside the parentheses of such a word (PASSWORD('...'),
 * PASSWORD(CONCAT('a','b'))), and the one after CONNECTION (a FederatedX URL with its password). */
static void redact_mark(const sync_parser *p, bool *secret) {
  bool identified = false;
  /* SET PASSWORD [FOR user] = '...': every literal after the '=' (a hash, or clear text). */
  bool set_password = p->n > 1 && redact_word_is(p, 0, "SET") && redact_word_is(p, 1, "PASSWORD");
  bool after_eq = false;
  int depth = 0; /* > 0: inside PASSWORD( ... ), counting parentheses */
  for (int k = 0; k < p->n; k++) {
    const sync_tok *t = &p->t[k];
    if (set_password && redact_punct(p, k, '='))
      after_eq = true;
    if (after_eq && (t->type == SYNC_TK_STR || t->type == SYNC_TK_DQ)) {
      secret[k] = true;
      continue;
    }
    if (depth > 0) {
      if (redact_punct(p, k, '('))
        depth++;
      else if (redact_punct(p, k, ')'))
        depth--;
      else if (t->type == SYNC_TK_STR || t->type == SYNC_TK_DQ)
        secret[k] = true;
      continue;
    }
    if (redact_word_is(p, k, "IDENTIFIED"))
      identified = true;
    if (redact_password_word(p, k) && k + 1 < p->n && redact_punct(p, k + 1, '(')) {
      depth = 1;
      k++;
      continue;
    }
    if (t->type != SYNC_TK_STR && t->type != SYNC_TK_DQ)
      continue;
    int j = k - 1;
    while (j >= 0 && (redact_punct(p, j, '=') || redact_introducer(p, j)))
      j--;
    if (j < 0)
      continue;
    if (redact_password_word(p, j) || redact_word_is(p, j, "CONNECTION") ||
        (redact_word_is(p, j, "BY") && j > 0 && redact_word_is(p, j - 1, "IDENTIFIED")) ||
        (identified && (redact_word_is(p, j, "USING") || redact_word_is(p, j, "AS"))))
      secret[k] = true;
  }
}

/* Lexes sql into p and marks its secrets; *secret is NULL when there are no tokens. -1: no
 * memory. */
static int redact_scan(sync_parser *p, const char *sql, size_t len, unsigned flags, bool **secret) {
  memset(p, 0, sizeof *p);
  p->sql = sql;
  p->len = len;
  p->flags = flags;
  p->default_db = "";
  *secret = NULL;
  if (sync_lex(p) < 0)
    return -1;
  if (p->n == 0)
    return 0;
  *secret = calloc((size_t)p->n, sizeof **secret);
  if (!*secret)
    return -1;
  redact_mark(p, *secret);
  return 0;
}

int sync_ddl_redact(const char *sql, size_t len, unsigned flags, size_t max, dm_buf *out) {
  sync_parser p;
  bool *secret;
  int rc = -1;
  if (redact_scan(&p, sql, len, flags, &secret) < 0)
    goto done;
  size_t start = out->len, pos = 0;
  /* Text the lexer could not read (an unterminated quote) may hold anything: left out. */
  size_t end = p.lex_failed ? p.lex_err_off : len;
  for (int k = 0; k < p.n && p.t[k].off < end; k++) {
    if (!secret[k])
      continue;
    if (dm_buf_put(out, sql + pos, p.t[k].off - pos) < 0 || dm_buf_puts(out, "'***'") < 0)
      goto done;
    pos = p.t[k].off + p.t[k].len;
  }
  if (pos < end && dm_buf_put(out, sql + pos, end - pos) < 0)
    goto done;
  /* one line: a newline of the source's text must not forge a log line */
  for (size_t i = start; i < out->len; i++)
    if ((unsigned char)out->p[i] < 0x20 || out->p[i] == 0x7f)
      out->p[i] = ' ';
  if (end < len && dm_buf_puts(out, " [unreadable rest left out]") < 0)
    goto done;
  if (max >= 3 && out->len - start > max) {
    /* cut at a byte that starts a character of a UTF-8 or single-byte text */
    size_t cut = start + max - 3;
    while (cut > start && ((unsigned char)out->p[cut] & 0xc0) == 0x80)
      cut--;
    out->len = cut;
    if (dm_buf_puts(out, "...") < 0)
      goto done;
  }
  rc = 0;
done:
  free(secret);
  free(p.t);
  return rc;
}

void sync_ddl_verb(const char *sql, size_t len, unsigned flags, char *out, size_t out_len) {
  sync_parser p = {.sql = sql, .len = len, .flags = flags, .default_db = ""};
  size_t o = 0;
  if (out_len == 0)
    return;
  out[0] = '\0';
  if (sync_lex(&p) == 0) {
    for (int k = 0; k < p.n && k < 3 && p.t[k].type == SYNC_TK_WORD; k++) {
      const char *w = sql + p.t[k].off;
      bool letters = true;
      for (size_t i = 0; i < p.t[k].len; i++)
        if (!((w[i] >= 'A' && w[i] <= 'Z') || (w[i] >= 'a' && w[i] <= 'z') || w[i] == '_'))
          letters = false;
      if (!letters || redact_word_is(&p, k, "IDENTIFIED") || o + p.t[k].len + 2 > out_len)
        break;
      if (o)
        out[o++] = ' ';
      for (size_t i = 0; i < p.t[k].len; i++)
        out[o++] = (char)(w[i] >= 'a' && w[i] <= 'z' ? w[i] - 'a' + 'A' : w[i]);
      out[o] = '\0';
    }
  }
  free(p.t);
  if (!o)
    snprintf(out, out_len, "(a statement)");
}

void sync_ddl_scrub(const char *sql, size_t len, unsigned flags, char *msg, size_t msg_cap) {
  sync_parser p;
  bool *secret;
  if (!msg || msg_cap == 0)
    return;
  if (redact_scan(&p, sql, len, flags, &secret) < 0 || !secret) {
    free(secret);
    free(p.t);
    return;
  }
  for (int k = 0; k < p.n; k++) {
    if (!secret[k] || p.t[k].len < 3)
      continue;
    /* the literal's bytes between its quotes, as a server message quotes them back */
    const char *v = sql + p.t[k].off + 1;
    size_t vn = p.t[k].len - 2;
    dm_buf b = {0};
    const char *m = msg, *hit;
    bool ok = true;
    while ((hit = memmem(m, strlen(m), v, vn)) != NULL) {
      ok = ok && dm_buf_put(&b, m, (size_t)(hit - m)) == 0 && dm_buf_puts(&b, "***") == 0;
      m = hit + vn;
    }
    if (m == msg) {
      dm_buf_free(&b);
      continue;
    }
    ok = ok && dm_buf_puts(&b, m) == 0;
    if (ok)
      snprintf(msg, msg_cap, "%s", b.p);
    else
      snprintf(msg, msg_cap, "(message left out: it quoted a password)");
    dm_buf_free(&b);
  }
  free(secret);
  free(p.t);
}
