/*
 * dmhost SDK: SQL statement text as tokens (libdmhost-sdk.a), the one lexer of every reader of
 * statements: the sync unit's DDL parser and rewriter, and the collation adjustment of
 * dmhost/ddl_collation.h that the load and the sync share.
 *
 * Words, quoted names, strings and single punctuation bytes, with every byte offset into the text;
 * comments are dropped, except versioned ones (slash-star-bang NNNNN, or MariaDB's slash-star-M-bang
 * NNNNNN), whose content counts as statement text because the server runs it. So nothing inside a
 * string or a comment is ever taken for a keyword or a name. It reads the text as the server that
 * runs it does: the flags below say how (sql_mode and the client charset of the statement).
 *
 * Not a parser: callers read the few positions they care about from the tokens.
 */
#ifndef DMHOST_SQL_LEX_H
#define DMHOST_SQL_LEX_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* How the server reads the text: from the statement's sql_mode and client charset. */
#define DM_SQL_NO_BACKSLASH_ESCAPES 1u /* a backslash in '...' or "..." is a plain byte */
#define DM_SQL_ANSI_QUOTES 2u          /* "..." is a quoted name, like `...` */
/* The client charset's multi-byte characters whose second byte can be an ASCII byte (a backslash,
 * a backtick): such a character is one character, its second byte never an escape or a quote.
 * Other charsets (utf8, latin1, the EUC ones) are read byte by byte: their multi-byte characters
 * hold no byte below 0x80. */
#define DM_SQL_MB_MASK 0x70u
#define DM_SQL_MB_GBK 0x10u     /* gbk: 0x81-0xFE then 0x40-0x7E|0x80-0xFE */
#define DM_SQL_MB_BIG5 0x20u    /* big5: 0xA1-0xF9 then 0x40-0x7E|0xA1-0xFE */
#define DM_SQL_MB_SJIS 0x30u    /* sjis, cp932: 0x81-0x9F|0xE0-0xFC then 0x40-0x7E|0x80-0xFC */
#define DM_SQL_MB_GB18030 0x40u /* gb18030: gbk's pairs, and 4 bytes 0x81-0xFE 0x30-0x39 x2 */

typedef enum dm_sql_tok_type {
  DM_SQL_TK_WORD, /* unquoted identifier, keyword or number */
  DM_SQL_TK_BQ,   /* `identifier` */
  DM_SQL_TK_DQ,   /* "...": a string, or an identifier under ANSI_QUOTES; a name where one is due */
  DM_SQL_TK_STR,  /* '...' */
  DM_SQL_TK_PUNCT, /* any other single byte */
} dm_sql_tok_type;

typedef struct dm_sql_tok {
  dm_sql_tok_type type;
  bool vc;         /* inside a versioned comment */
  size_t off, len; /* the token's bytes in the text, quotes included */
} dm_sql_tok;

typedef struct dm_sql_tokens {
  dm_sql_tok *t;
  int n, cap;
  /* An unterminated quote or comment: the tokens stop there. It matters only to a caller that
   * needed what follows (a statement of a kind it reads). */
  bool failed;
  size_t err_off;  /* where the unterminated quote or comment opens */
  const char *err; /* what it is ("unterminated string"), a static text */
} dm_sql_tokens;

/* Splits sql[0..len) into out (which must start zeroed; free it with dm_sql_tokens_free, also
 * after a failure). Returns 0 (a lexing error is out->failed, not a failure), or -1 when memory
 * ran out. */
int dm_sql_lex(const char *sql, size_t len, unsigned flags, dm_sql_tokens *out);
void dm_sql_tokens_free(dm_sql_tokens *t);

/* Can the byte be part of an unquoted identifier? (MariaDB's: ASCII letters, digits, `_`, `$`
 * and any byte >= 0x80.) */
bool dm_sql_word_byte(unsigned char c);
/* Length of the multi-byte character of the client charset (flags) at s[i], or 0 when the byte
 * there is a character of its own (also: an invalid or cut sequence, as the server reads it). */
size_t dm_sql_mb_len(unsigned flags, const char *s, size_t i, size_t len);
/* Is the token the word kw (upper case ASCII), compared without case? */
bool dm_sql_tok_is(const char *sql, const dm_sql_tok *t, const char *kw);

#ifdef __cplusplus
}
#endif
#endif /* DMHOST_SQL_LEX_H */
