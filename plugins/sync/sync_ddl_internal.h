/*
 * The DDL parser's tokens and state, shared by the lexer (sync_ddl_lex.c) and the parser and
 * rewriter (sync_ddl.c), and the clause reader (sync_ddl_event.c). Private to those files.
 */
#ifndef DMHOST_SYNC_DDL_INTERNAL_H
#define DMHOST_SYNC_DDL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "sync_ddl.h"

typedef enum sync_tok_type {
  SYNC_TK_WORD,  /* unquoted identifier, keyword or number */
  SYNC_TK_BQ,    /* `identifier` */
  SYNC_TK_DQ,    /* "...": a string, or an identifier under ANSI_QUOTES; a name where one is due */
  SYNC_TK_STR,   /* '...' */
  SYNC_TK_PUNCT, /* any other single byte */
} sync_tok_type;

typedef struct sync_tok {
  sync_tok_type type;
  bool vc; /* inside a versioned comment: splitting must not cut one open */
  size_t off, len;
} sync_tok;

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

/* Can the byte be part of an unquoted identifier? */
bool sync_word_byte(unsigned char c);
/* Length of the multi-byte character of the client charset (flags) at s[i], or 0 when the byte
 * there is a character of its own (also: an invalid or cut sequence, as the server reads it). */
size_t sync_mb_len(unsigned flags, const char *s, size_t i, size_t len);
/* Splits p->sql into p->t; -1 (no memory, or an unterminated quote/comment: p->lex_failed) */
int sync_lex(sync_parser *p);

#endif /* DMHOST_SYNC_DDL_INTERNAL_H */
