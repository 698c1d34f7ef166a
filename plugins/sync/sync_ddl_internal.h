/*
 * The DDL parser's tokens and state, shared by the parser and rewriter (sync_ddl.c), the clause
 * reader (sync_ddl_event.c) and the redaction (sync_ddl_redact.c); the lexer is the SDK's
 * (dmhost/sql_lex.h). Private to those files.
 */
#ifndef DMHOST_SYNC_DDL_INTERNAL_H
#define DMHOST_SYNC_DDL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "dmhost/sql_lex.h"
#include "sync_ddl.h"

/* The tokens are the SDK lexer's (dmhost/sql_lex.h), under the parser's names. */
typedef dm_sql_tok_type sync_tok_type;
#define SYNC_TK_WORD DM_SQL_TK_WORD
#define SYNC_TK_BQ DM_SQL_TK_BQ
#define SYNC_TK_DQ DM_SQL_TK_DQ
#define SYNC_TK_STR DM_SQL_TK_STR
#define SYNC_TK_PUNCT DM_SQL_TK_PUNCT
typedef dm_sql_tok sync_tok;

typedef struct sync_parser {
  const char *sql;
  size_t len;
  unsigned flags;
  const char *default_db;
  sync_tok *t;
  int n, cap;
  int i; /* next token */
  bool lex_failed;
  size_t lex_err_off;
  const char *lex_err;
  sync_ddl_ref *refs; /* every name of the whole statement, in byte order */
  int n_refs, cap_refs;
  const char *what; /* the kind being parsed, to open error messages */
  bool failed;      /* msg holds the first error */
  char *msg;
  size_t msg_len;
} sync_parser;

static inline bool sync_word_byte(unsigned char c) {
  return dm_sql_word_byte(c);
}
static inline size_t sync_mb_len(unsigned flags, const char *s, size_t i, size_t len) {
  return dm_sql_mb_len(flags, s, i, len);
}
/* Splits p->sql into p->t; -1 when memory ran out (an unterminated quote/comment is
 * p->lex_failed). p->t is freed with free(). */
static inline int sync_lex(sync_parser *p) {
  dm_sql_tokens t = {0};
  int rc = dm_sql_lex(p->sql, p->len, p->flags, &t);
  p->t = t.t;
  p->n = t.n;
  p->cap = t.cap;
  p->lex_failed = t.failed;
  p->lex_err_off = t.err_off;
  p->lex_err = t.err;
  return rc;
}

#endif /* DMHOST_SYNC_DDL_INTERNAL_H */
