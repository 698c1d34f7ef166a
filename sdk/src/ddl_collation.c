/* DM's collation_compatible: strict (dmhost/ddl_collation.h): the source's collations, and the
 * statement adjustment on the SDK's lexer (dmhost/sql_lex.h). The reading of the set from a
 * server is db_collations.c (it needs libmariadb; this file does not). */
#include "dmhost/ddl_collation.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmhost/sql_lex.h"

typedef struct coll_row {
  uint32_t id;
  char *name;
  char *charset; /* NULL: not one charset's */
} coll_row;

typedef struct coll_default {
  char *charset, *collation;
} coll_def;

struct dm_collations {
  coll_row *rows;
  size_t n_rows, cap_rows;
  coll_def *defs; /* the default of each charset; a later entry of a charset wins */
  size_t n_defs, cap_defs;
  char *utf8;   /* what `utf8` names */
  char *server; /* @@global.collation_server */
};

/* ---- the set ---- */

static char *coll_lower_dup(const char *s) {
  size_t n = strlen(s);
  char *d = malloc(n + 1);
  if (!d)
    return NULL;
  for (size_t i = 0; i <= n; i++)
    d[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] - 'A' + 'a' : s[i]);
  return d;
}

static bool coll_eq_nocase(const char *a, const char *b) {
  for (; *a && *b; a++, b++) {
    char x = (char)(*a >= 'A' && *a <= 'Z' ? *a - 'A' + 'a' : *a);
    char y = (char)(*b >= 'A' && *b <= 'Z' ? *b - 'A' + 'a' : *b);
    if (x != y)
      return false;
  }
  return *a == *b;
}

static int coll_grow(void **v, size_t *cap, size_t n, size_t size) {
  if (n < *cap)
    return 0;
  size_t c = *cap ? 2 * *cap : 64;
  void *p = realloc(*v, c * size);
  if (!p)
    return -1;
  *v = p;
  *cap = c;
  return 0;
}

dm_collations *dm_collations_new(void) {
  return calloc(1, sizeof(dm_collations));
}

void dm_collations_free(dm_collations *c) {
  if (!c)
    return;
  for (size_t i = 0; i < c->n_rows; i++) {
    free(c->rows[i].name);
    free(c->rows[i].charset);
  }
  for (size_t i = 0; i < c->n_defs; i++) {
    free(c->defs[i].charset);
    free(c->defs[i].collation);
  }
  free(c->rows);
  free(c->defs);
  free(c->utf8);
  free(c->server);
  free(c);
}

int dm_collations_set_default(dm_collations *c, const char *charset, const char *collation) {
  if (coll_grow((void **)&c->defs, &c->cap_defs, c->n_defs, sizeof *c->defs) < 0)
    return -1;
  coll_def d = {coll_lower_dup(charset), coll_lower_dup(collation)};
  if (!d.charset || !d.collation) {
    free(d.charset);
    free(d.collation);
    return -1;
  }
  c->defs[c->n_defs++] = d;
  return 0;
}

int dm_collations_add(dm_collations *c, uint32_t id, const char *collation, const char *charset,
                      bool is_default) {
  if (coll_grow((void **)&c->rows, &c->cap_rows, c->n_rows, sizeof *c->rows) < 0)
    return -1;
  coll_row r = {id, coll_lower_dup(collation), charset ? coll_lower_dup(charset) : NULL};
  if (!r.name || (charset && !r.charset)) {
    free(r.name);
    free(r.charset);
    return -1;
  }
  c->rows[c->n_rows++] = r;
  return is_default && charset ? dm_collations_set_default(c, charset, collation) : 0;
}

int dm_collations_set_defaults(dm_collations *c, const char *list) {
  char cs[128], co[128];
  const char *v = list;
  while (*v) {
    size_t n = strcspn(v, ",");
    const char *eq = memchr(v, '=', n);
    if (eq) {
      const char *a = v, *ae = eq, *b = eq + 1, *be = v + n;
      while (a < ae && (*a == ' ' || *a == '\t'))
        a++;
      while (ae > a && (ae[-1] == ' ' || ae[-1] == '\t'))
        ae--;
      while (b < be && (*b == ' ' || *b == '\t'))
        b++;
      while (be > b && (be[-1] == ' ' || be[-1] == '\t'))
        be--;
      if (ae > a && be > b && (size_t)(ae - a) < sizeof cs && (size_t)(be - b) < sizeof co) {
        memcpy(cs, a, (size_t)(ae - a));
        cs[ae - a] = '\0';
        memcpy(co, b, (size_t)(be - b));
        co[be - b] = '\0';
        if (dm_collations_set_default(c, cs, co) < 0)
          return -1;
      }
    }
    v += n;
    if (*v == ',')
      v++;
  }
  return 0;
}

static int coll_set(char **field, const char *v) {
  char *d = coll_lower_dup(v);
  if (!d)
    return -1;
  free(*field);
  *field = d;
  return 0;
}

int dm_collations_set_utf8(dm_collations *c, const char *charset) {
  return coll_set(&c->utf8, charset);
}

int dm_collations_set_server(dm_collations *c, const char *collation) {
  return coll_set(&c->server, collation);
}

static const char *coll_default_of(const dm_collations *c, const char *charset) {
  for (size_t i = c->n_defs; i-- > 0;)
    if (coll_eq_nocase(c->defs[i].charset, charset))
      return c->defs[i].collation;
  return NULL;
}

const char *dm_collations_default(const dm_collations *c, const char *charset) {
  const char *d = coll_default_of(c, charset);
  if (!d && c->utf8 && coll_eq_nocase(charset, "utf8"))
    d = coll_default_of(c, c->utf8);
  return d;
}

const char *dm_collations_name(const dm_collations *c, uint32_t id) {
  for (size_t i = 0; i < c->n_rows; i++)
    if (c->rows[i].id == id)
      return c->rows[i].name;
  return NULL;
}

const char *dm_collations_server(const dm_collations *c) {
  return c->server;
}

/* ---- the statement ---- */

typedef struct coll_ins {
  size_t at;
  const char *collation;
} coll_ins;

typedef struct coll_job {
  const char *sql;
  size_t len;
  const dm_sql_tokens *tk;
  const dm_collations *set;
  const dm_ddl_collation_opts *o;
  coll_ins ins[64]; /* in byte order */
  int n_ins;
  bool too_many;
  char *note;
  size_t note_len, note_used;
} coll_job;

static void coll_note(coll_job *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void coll_note(coll_job *j, const char *fmt, ...) {
  if (!j->note || j->note_used + 1 >= j->note_len)
    return;
  if (j->note_used) {
    int k = snprintf(j->note + j->note_used, j->note_len - j->note_used, "; ");
    if (k > 0)
      j->note_used += (size_t)k;
    if (j->note_used >= j->note_len) {
      j->note_used = j->note_len - 1;
      return;
    }
  }
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(j->note + j->note_used, j->note_len - j->note_used, fmt, ap);
  va_end(ap);
  if (k > 0)
    j->note_used += (size_t)k;
  if (j->note_used >= j->note_len)
    j->note_used = j->note_len - 1;
}

static bool coll_kw(const coll_job *j, int i, const char *kw) {
  return i < j->tk->n && dm_sql_tok_is(j->sql, &j->tk->t[i], kw);
}

static bool coll_punct(const coll_job *j, int i, char c) {
  return i < j->tk->n && j->tk->t[i].type == DM_SQL_TK_PUNCT && j->sql[j->tk->t[i].off] == c;
}

static bool coll_ident(const coll_job *j, int i) {
  if (i >= j->tk->n)
    return false;
  dm_sql_tok_type t = j->tk->t[i].type;
  return t == DM_SQL_TK_WORD || t == DM_SQL_TK_BQ || t == DM_SQL_TK_DQ;
}

/* A charset or collation value token (a word, or a quoted one) as a plain name in out; false for
 * anything else, or a name of other bytes than letters, digits and `_` (no charset has one). */
static bool coll_value(const coll_job *j, int i, char *out, size_t out_len) {
  if (i >= j->tk->n || j->tk->t[i].type == DM_SQL_TK_PUNCT)
    return false;
  const dm_sql_tok *t = &j->tk->t[i];
  const char *s = j->sql + t->off;
  size_t n = t->len;
  if (t->type != DM_SQL_TK_WORD) {
    s++;
    n -= 2;
  }
  if (n == 0 || n >= out_len)
    return false;
  for (size_t k = 0; k < n; k++) {
    char c = s[k];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
      return false;
    out[k] = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  }
  out[n] = '\0';
  return true;
}

/* At token i: CHARACTER SET, CHARSET or CHAR SET (allow_char: CHAR is not a column's type there)?
 * Returns how many tokens the keyword takes (0: none). */
static int coll_charset_kw(const coll_job *j, int i, bool allow_char) {
  if (coll_kw(j, i, "CHARSET"))
    return 1;
  if ((coll_kw(j, i, "CHARACTER") || (allow_char && coll_kw(j, i, "CHAR"))) &&
      coll_kw(j, i + 1, "SET"))
    return 2;
  return 0;
}

static bool coll_name_ok(const char *name) {
  if (!name || !*name)
    return false;
  for (const char *p = name; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
      return false;
  return true;
}

static const char *coll_default(const coll_job *j, const char *charset) {
  if (j->o && j->o->utf8mb4_default && strcmp(charset, "utf8mb4") == 0)
    return j->o->utf8mb4_default;
  return dm_collations_default(j->set, charset);
}

/* Records " COLLATE <collation of charset>" to go at byte `at`; what names the place in the note
 * ("table", "database", "column `a`"). */
static void coll_add(coll_job *j, size_t at, const char *charset, const char *what) {
  const char *coll = coll_default(j, charset);
  if (!coll_name_ok(coll)) {
    coll_note(j, "%s: charset %s is unknown on the source, left as written", what, charset);
    return;
  }
  if (j->n_ins == (int)(sizeof j->ins / sizeof j->ins[0])) {
    if (!j->too_many)
      coll_note(j, "more than %d charsets without a collation: the rest left as written", j->n_ins);
    j->too_many = true;
    return;
  }
  j->ins[j->n_ins++] = (coll_ins){at, coll};
  coll_note(j, "%s: COLLATE %s", what, coll);
}

/* Reads the value after a charset keyword at token i (an optional `=` first). Returns the token
 * index of the value, or -1 (then *charset is ""). DEFAULT (the database's) is no charset. */
static int coll_charset_value(const coll_job *j, int i, char *charset, size_t len) {
  charset[0] = '\0';
  if (coll_punct(j, i, '='))
    i++;
  if (coll_kw(j, i, "DEFAULT") || !coll_value(j, i, charset, len)) {
    charset[0] = '\0';
    return -1;
  }
  return i;
}

static size_t coll_end(const coll_job *j, int i) {
  return j->tk->t[i].off + j->tk->t[i].len;
}

/* The one scan step of a database's, a column's and a table's options: at token *i, a charset
 * keyword (allow_char: CHAR SET too) with a value? Then charset takes the value, *i moves onto
 * it, and its token index is returned (the place a COLLATE goes after); else -1, nothing moved. */
static int coll_charset_at(const coll_job *j, int *i, bool allow_char, char *charset, size_t len) {
  char v[64];
  int k = coll_charset_kw(j, *i, allow_char);
  int vi = k ? coll_charset_value(j, *i + k, v, sizeof v) : -1;
  if (vi < 0)
    return -1;
  snprintf(charset, len, "%s", v);
  *i = vi;
  return vi;
}

/* CREATE DATABASE, from the token after DATABASE|SCHEMA. */
static void coll_database(coll_job *j, int i) {
  if (coll_kw(j, i, "IF") && coll_kw(j, i + 1, "NOT") && coll_kw(j, i + 2, "EXISTS"))
    i += 3;
  if (!coll_ident(j, i))
    return;
  int name = i++;
  char charset[64] = "";
  int at = -1;
  for (; i < j->tk->n; i++) {
    if (coll_kw(j, i, "COLLATE"))
      return; /* a collation of its own */
    int vi = coll_charset_at(j, &i, true, charset, sizeof charset);
    if (vi >= 0)
      at = vi;
  }
  if (at >= 0) {
    coll_add(j, coll_end(j, at), charset, "database");
    return;
  }
  const char *dc = j->o ? j->o->database_collation : NULL;
  if (!coll_name_ok(dc)) {
    if (dc)
      coll_note(j, "database: the collation for it (%s) is no plain name, left as written", dc);
    return;
  }
  j->ins[j->n_ins++] = (coll_ins){coll_end(j, name), dc};
  coll_note(j, "database names no charset: COLLATE %s", dc);
}

/* Words that open a part of a table definition that is not a column. */
static bool coll_not_column(const coll_job *j, int i) {
  static const char *const kws[] = {"PRIMARY", "KEY",   "INDEX",      "UNIQUE",  "FULLTEXT",
                                    "SPATIAL", "CHECK", "CONSTRAINT", "FOREIGN", "LIKE"};
  for (size_t k = 0; k < sizeof kws / sizeof kws[0]; k++)
    if (coll_kw(j, i, kws[k]))
      return true;
  return coll_kw(j, i, "PERIOD") && coll_kw(j, i + 1, "FOR");
}

/* One column definition, tokens [from, to) at the list's depth (parenthesised parts skipped:
 * lengths, ENUM values, defaults, generated expressions, whose CONVERT ... USING or CAST ... AS
 * CHAR CHARACTER SET are not the column's). */
static void coll_column(coll_job *j, int from, int to) {
  if (from >= to || !coll_ident(j, from) || coll_not_column(j, from))
    return;
  char charset[64] = "", what[128];
  int at = -1, depth = 0;
  for (int i = from + 1; i < to; i++) {
    if (coll_punct(j, i, '(')) {
      depth++;
      continue;
    }
    if (coll_punct(j, i, ')')) {
      depth--;
      continue;
    }
    if (depth)
      continue;
    /* COLLATE, or BINARY after the type (CHAR(10) BINARY: the charset's _bin): its own */
    if (coll_kw(j, i, "COLLATE") || (i > from + 1 && coll_kw(j, i, "BINARY")))
      return;
    int vi = coll_charset_at(j, &i, i > from + 1, charset, sizeof charset);
    if (vi >= 0)
      at = vi;
  }
  if (at < 0)
    return;
  const dm_sql_tok *n = &j->tk->t[from];
  size_t nl = n->type == DM_SQL_TK_WORD ? n->len : n->len - 2;
  const char *ns = j->sql + n->off + (n->type == DM_SQL_TK_WORD ? 0 : 1);
  snprintf(what, sizeof what, "column `%.*s`", (int)(nl > 64 ? 64 : nl), ns);
  coll_add(j, coll_end(j, at), charset, what);
}

/* CREATE TABLE, from the token after TABLE. */
static void coll_table(coll_job *j, int i) {
  if (coll_kw(j, i, "IF") && coll_kw(j, i + 1, "NOT") && coll_kw(j, i + 2, "EXISTS"))
    i += 3;
  if (!coll_ident(j, i))
    return;
  i++;
  if (coll_punct(j, i, '.') && coll_ident(j, i + 1))
    i += 2;
  if (coll_kw(j, i, "LIKE") || (coll_punct(j, i, '(') && coll_kw(j, i + 1, "LIKE")))
    return; /* a copy of another table's definition */
  if (coll_punct(j, i, '(') && !coll_kw(j, i + 1, "SELECT")) {
    /* the definitions, split at the commas of the list's own depth */
    int depth = 1, start = ++i;
    for (; i < j->tk->n && depth > 0; i++) {
      if (coll_punct(j, i, '('))
        depth++;
      else if (coll_punct(j, i, ')') && --depth == 0)
        coll_column(j, start, i);
      else if (depth == 1 && coll_punct(j, i, ',')) {
        coll_column(j, start, i);
        start = i + 1;
      }
    }
  }
  /* the table options, up to what follows them (a SELECT, its IGNORE/REPLACE, the partitions) */
  char charset[64] = "";
  int at = -1;
  for (; i < j->tk->n; i++) {
    if (coll_kw(j, i, "SELECT") || coll_kw(j, i, "AS") || coll_kw(j, i, "IGNORE") ||
        coll_kw(j, i, "REPLACE") || coll_kw(j, i, "PARTITION") || coll_kw(j, i, "VALUES") ||
        coll_kw(j, i, "TABLE") || (coll_kw(j, i, "WITH") && !coll_kw(j, i + 1, "SYSTEM")))
      break;
    if (coll_punct(j, i, '(')) {
      /* UNION = (t1, t2) of a MERGE table is an option; any other ( opens a query */
      if (!(i > 0 && (coll_punct(j, i - 1, '=') || coll_kw(j, i - 1, "UNION"))))
        break;
      for (int depth = 0; i < j->tk->n; i++) {
        if (coll_punct(j, i, '('))
          depth++;
        else if (coll_punct(j, i, ')') && --depth == 0)
          break;
      }
      continue;
    }
    if (coll_kw(j, i, "COLLATE")) {
      at = -2; /* a collation of its own */
      continue;
    }
    int vi = coll_charset_at(j, &i, true, charset, sizeof charset);
    if (vi >= 0 && at != -2)
      at = vi;
  }
  if (at >= 0)
    coll_add(j, coll_end(j, at), charset, "table");
  else if (at == -1)
    coll_note(j, "table names no charset: it takes its database's default collation");
}

static int coll_cmp(const void *a, const void *b) {
  size_t x = ((const coll_ins *)a)->at, y = ((const coll_ins *)b)->at;
  return x < y ? -1 : x > y;
}

int dm_ddl_add_collations(const char *sql, size_t len, const dm_collations *c,
                          const dm_ddl_collation_opts *o, char **out, size_t *out_len, char *note,
                          size_t note_len) {
  *out = NULL;
  if (out_len)
    *out_len = 0;
  if (note && note_len)
    note[0] = '\0';
  dm_sql_tokens tk = {0};
  if (dm_sql_lex(sql, len, o ? o->lex_flags : 0, &tk) < 0) {
    dm_sql_tokens_free(&tk);
    return -1;
  }
  coll_job j = {
      .sql = sql, .len = len, .tk = &tk, .set = c, .o = o, .note = note, .note_len = note_len};
  int i = 0;
  if (coll_kw(&j, i, "CREATE")) {
    i++;
    if (coll_kw(&j, i, "OR") && coll_kw(&j, i + 1, "REPLACE"))
      i += 2;
    if (tk.failed) {
      coll_note(&j, "the statement cannot be read (%s at byte %zu), left as written", tk.err,
                tk.err_off);
    } else if (coll_kw(&j, i, "DATABASE") || coll_kw(&j, i, "SCHEMA")) {
      coll_database(&j, i + 1);
    } else {
      if (coll_kw(&j, i, "TEMPORARY"))
        i++;
      if (coll_kw(&j, i, "TABLE"))
        coll_table(&j, i + 1);
    }
  }
  dm_sql_tokens_free(&tk);
  /* a place glued to a following word ("`db`0100", text the server refuses anyway) is left as
   * written: the collation's name would run into that word and change it */
  int kept = 0;
  for (int k = 0; k < j.n_ins; k++) {
    unsigned char next = j.ins[k].at < len ? (unsigned char)sql[j.ins[k].at] : ' ';
    if (isalnum(next) || next == '_' || next == '$' || next >= 0x80)
      coll_note(&j, "no separator after byte %zu, left as written", j.ins[k].at);
    else
      j.ins[kept++] = j.ins[k];
  }
  j.n_ins = kept;
  if (j.n_ins == 0)
    return 0;
  qsort(j.ins, (size_t)j.n_ins, sizeof j.ins[0], coll_cmp);
  size_t total = len + 1;
  for (int k = 0; k < j.n_ins; k++)
    total += strlen(" COLLATE ") + strlen(j.ins[k].collation);
  char *p = malloc(total);
  if (!p)
    return -1;
  size_t o_at = 0, from = 0;
  for (int k = 0; k < j.n_ins; k++) {
    memcpy(p + o_at, sql + from, j.ins[k].at - from);
    o_at += j.ins[k].at - from;
    from = j.ins[k].at;
    o_at += (size_t)sprintf(p + o_at, " COLLATE %s", j.ins[k].collation);
  }
  memcpy(p + o_at, sql + from, len - from);
  o_at += len - from;
  p[o_at] = '\0';
  *out = p;
  if (out_len)
    *out_len = o_at;
  return 1;
}
