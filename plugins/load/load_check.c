/*
 * What the load runs from a dump folder is checked first: only statements of the shapes the dump
 * writes (docs/dump-format.md) reach the target. A data line must be one INSERT into the file's
 * own table whose values are literals exactly as dump_write.c writes them (NULL, numbers, quoted
 * strings with mysql_real_escape_string's escapes, `_latin1'...'`, `0x...`), and nothing after
 * its `;`. A schema file must be one `CREATE TABLE` (or `CREATE DATABASE IF NOT EXISTS`) of the
 * expected name, with no second statement, no SELECT, no comment but the dump's executable ones,
 * no DATA/INDEX DIRECTORY or CONNECTION and only the engines of load_check_engines. Whatever fails
 * is refused before it runs, and the refusal says where and what was expected, never what the file
 * holds: a file that is not a dump (a link to a secret, say) must not come back in an error.
 */
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "load.h"

/* One quoted identifier at *pp (`...`, `` for a backtick), compared with `want` (NULL: copied
 * to out, at most out_len - 1 bytes). Returns 0 and moves *pp past it. */
static int load_check_ident(const char **pp, const char *end, const char *want, char *out,
                            size_t out_len) {
  const char *p = *pp;
  if (p >= end || *p != '`')
    return -1;
  size_t n = 0, wl = want ? strlen(want) : 0;
  for (p++; p < end; p++) {
    char c = *p;
    if (c == '`') {
      if (p + 1 < end && p[1] == '`')
        p++;
      else
        break;
    }
    if (want ? (n >= wl || want[n] != c) : n + 1 >= out_len)
      return -1;
    if (!want)
      out[n] = c;
    n++;
  }
  if (p >= end || n == 0 || (want && n != wl))
    return -1;
  if (!want)
    out[n] = '\0';
  *pp = p + 1;
  return 0;
}

static bool load_check_lit(const char **pp, const char *end, const char *lit) {
  size_t n = strlen(lit);
  if ((size_t)(end - *pp) < n || memcmp(*pp, lit, n) != 0)
    return false;
  *pp += n;
  return true;
}

static bool load_check_digits(const char **pp, const char *end) {
  const char *p = *pp;
  while (p < end && *p >= '0' && *p <= '9')
    p++;
  if (p == *pp)
    return false;
  *pp = p;
  return true;
}

/* '...' with the escapes mysql_real_escape_string writes (\0 \n \r \Z \\ \' \"). */
static bool load_check_string(const char **pp, const char *end) {
  const char *p = *pp;
  if (p >= end || *p != '\'')
    return false;
  for (p++;;) {
    while (p < end && *p != '\'' && *p != '\\')
      p++;
    if (p >= end)
      return false;
    if (*p == '\'') {
      *pp = p + 1;
      return true;
    }
    if (p + 1 >= end || !strchr("0nrZ\\'\"", p[1]) || p[1] == '\0')
      return false;
    p += 2;
  }
}

/* One value as dump_write_format writes it. */
static bool load_check_value(const char **pp, const char *end) {
  const char *p = *pp;
  if (p >= end)
    return false;
  switch (*p) {
  case '\'':
    return load_check_string(pp, end);
  case '_':
    return load_check_lit(pp, end, "_latin1") && load_check_string(pp, end);
  case 'N':
    return load_check_lit(pp, end, "NULL");
  case '0':
    if (p + 1 < end && p[1] == 'x') {
      p += 2;
      const char *h = p;
      while (p < end && isxdigit((unsigned char)*p))
        p++;
      if (p == h)
        return false;
      *pp = p;
      return true;
    }
    break;
  default:
    break;
  }
  /* A number as the server prints it: -12, 12.50, 1.5e-07, 1e300. */
  if (*p == '-')
    p++;
  if (!load_check_digits(&p, end))
    return false;
  if (p < end && *p == '.') {
    p++;
    if (!load_check_digits(&p, end))
      return false;
  }
  if (p < end && (*p == 'e' || *p == 'E')) {
    p++;
    if (p < end && (*p == '-' || *p == '+'))
      p++;
    if (!load_check_digits(&p, end))
      return false;
  }
  *pp = p;
  return true;
}

int load_check_insert(const char *s, size_t len, const char *table, size_t *head, size_t *at,
                      const char **why) {
  const char *p = s, *end = s + len;
  *why = "expected `INSERT INTO `<table>``";
  if (!load_check_lit(&p, end, "INSERT INTO "))
    goto bad;
  *why = "expected the file's own table after `INSERT INTO`";
  if (load_check_ident(&p, end, table, NULL, 0) != 0)
    goto bad;
  *head = (size_t)(p - s);
  *why = "expected ` (`<column>`,...)` or ` VALUES `";
  if (load_check_lit(&p, end, " (")) {
    do {
      char col[LOAD_NAME_MAX];
      if (load_check_ident(&p, end, NULL, col, sizeof col) != 0)
        goto bad;
    } while (load_check_lit(&p, end, ","));
    if (!load_check_lit(&p, end, ")"))
      goto bad;
  }
  if (!load_check_lit(&p, end, " VALUES "))
    goto bad;
  do {
    *why = "expected a row `(<value>,...)`";
    if (!load_check_lit(&p, end, "("))
      goto bad;
    if (!load_check_lit(&p, end, ")")) {
      do {
        *why = "expected a value as the dump writes it (NULL, a number, '...', _latin1'...', "
               "0x...)";
        if (!load_check_value(&p, end))
          goto bad;
      } while (load_check_lit(&p, end, ","));
      *why = "expected `,` or `)` after a value";
      if (!load_check_lit(&p, end, ")"))
        goto bad;
    }
  } while (load_check_lit(&p, end, ","));
  *why = "expected `;` at the end of the line, after the last row";
  if (!load_check_lit(&p, end, ";") || p != end)
    goto bad;
  return 0;
bad:
  *at = (size_t)(p - s);
  return -1;
}

size_t load_check_extend(const char *s, size_t len, size_t values, const char *tail, size_t n,
                         char *out) {
  const char *p = s + values, *end = s + len, *from = p;
  size_t w = 0;
  /* the line was checked: each row is "(" values ")" and nothing else holds a ')' outside a
   * literal, so walking the values finds each row's end */
  while (p < end) {
    if (*p != '(') {
      p++;
      continue;
    }
    p++;
    bool empty = load_check_lit(&p, end, ")");
    if (!empty) {
      do
        load_check_value(&p, end);
      while (load_check_lit(&p, end, ","));
      p++; /* the row's ')' */
    }
    size_t k = (size_t)(p - 1 - from);            /* up to the ')' */
    const char *t = empty && n ? tail + 1 : tail; /* "()": no ',' before the first */
    size_t tn = empty && n ? n - 1 : n;
    if (out) {
      memcpy(out + w, from, k);
      memcpy(out + w + k, t, tn);
      out[w + k + tn] = ')';
    }
    w += k + tn + 1;
    from = p;
  }
  if (out)
    memcpy(out + w, from, (size_t)(end - from));
  return w + (size_t)(end - from);
}

/* Is the word at p (len n) `w`, case-insensitively? */
static bool load_check_word(const char *p, size_t n, const char *w) {
  return strlen(w) == n && strncasecmp(p, w, n) == 0;
}

/* Skips a quoted string or identifier at p (opening quote q); NULL when it does not end. */
static const char *load_check_skip_quoted(const char *p, char q) {
  for (p++; *p; p++) {
    if (*p == '\\' && q != '`' && p[1]) {
      p++;
    } else if (*p == q) {
      if (p[1] != q)
        return p + 1;
      p++;
    }
  }
  return NULL;
}

/* The engines a schema file may name (ENGINE=, also per partition): the ones that keep their rows
 * in the target's own files. FEDERATED, CONNECT, SPIDER, CSV, MERGE and the like read or write
 * elsewhere (another server, a file, other tables), so a copied dump folder must not choose them
 * (docs/load.md, "What the load trusts"). */
static const char *const load_check_engines[] = {"InnoDB", "Aria", "MyISAM", "MEMORY"};

/* `ENGINE [=] <name>` at p (just past the word ENGINE): the name is a bare word of the allowlist.
 * Returns the position after it, or NULL. */
static const char *load_check_engine(const char *p) {
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
    p++;
  if (*p == '=')
    p++;
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
    p++;
  const char *w = p;
  while (isalnum((unsigned char)*p) || *p == '_')
    p++;
  for (size_t i = 0; i < sizeof load_check_engines / sizeof *load_check_engines; i++)
    if (load_check_word(w, (size_t)(p - w), load_check_engines[i]))
      return p;
  return NULL;
}

/* The executable comment openers SHOW CREATE writes, at p: `/ *!` and 5 or 6 digits and a space
 * (MySQL's and MariaDB's versioned code: `/ *!40100 DEFAULT CHARACTER SET ...* /`, `/ *!50100
 * PARTITION BY ...* /`), whose content is read as code; and MariaDB's `/ *M!NNNNNN COMPRESSED* /`
 * (a compressed column), taken whole. (Written with spaces here only to keep them out of this
 * comment.) Returns the position after the opener (or after the whole compressed comment), or
 * NULL for any other comment. */
static const char *load_check_dump_comment(const char *p, bool *whole) {
  size_t d = 0;
  *whole = false;
  if (p[2] == '!') {
    for (p += 3; isdigit((unsigned char)p[d]);)
      d++;
    return (d == 5 || d == 6) && p[d] == ' ' ? p + d + 1 : NULL;
  }
  if (p[2] == 'M' && p[3] == '!') {
    for (p += 4; isdigit((unsigned char)p[d]);)
      d++;
    static const char tail[] = " COMPRESSED*/";
    if (d != 6 || strncmp(p + d, tail, sizeof tail - 1) != 0)
      return NULL;
    *whole = true;
    return p + d + sizeof tail - 1;
  }
  return NULL;
}

/* The text after a CREATE statement's name: one statement (no `;` outside quotes), no SELECT
 * (CREATE TABLE ... SELECT would copy other tables' rows into the target) and no LOAD_FILE. The
 * server runs the content of executable comments, so it is read as code, and every other comment
 * is refused: MariaDB also runs `/ *M! ...* /` (issue 20: a check that skipped it as a comment let
 * `/ *M! SELECT ... * /` copy another schema's rows), and no dump writes plain ones. No DATA or
 * INDEX DIRECTORY (files outside the target's datadir; the session also has NO_DIR_IN_CREATE), no
 * CONNECTION (a remote table), ENGINE only from load_check_engines. */
static int load_check_rest(const char *rest, size_t *at, const char **why) {
  const char *p = rest;
  while (*p) {
    char c = *p;
    if (c == '\'' || c == '"' || c == '`') {
      const char *e = load_check_skip_quoted(p, c);
      if (!e) {
        *why = "a quoted string or name that does not end";
        goto bad;
      }
      p = e;
    } else if (c == '/' && p[1] == '*') {
      bool whole;
      const char *e = load_check_dump_comment(p, &whole);
      if (!e) {
        *why = "a comment the dump never writes (only /*!NNNNN ...*/ and MariaDB's "
               "/*M!NNNNNN COMPRESSED*/; the server runs /*M! ...*/ as code)";
        goto bad;
      }
      p = e;
    } else if (c == '#' || (c == '-' && p[1] == '-' && (unsigned char)p[2] <= ' ')) {
      *why = "a comment the dump never writes (# or --)";
      goto bad;
    } else if (c == ';' && p[strspn(p, "; \t\r\n")] == '\0') {
      return 0; /* the statement's end */
    } else if (c == ';') {
      *why = "a second statement after `;` (a schema file holds one statement)";
      goto bad;
    } else if (isalpha((unsigned char)c) || c == '_') {
      const char *w = p;
      while (isalnum((unsigned char)*p) || *p == '_' || *p == '$')
        p++;
      size_t n = (size_t)(p - w);
      if (load_check_word(w, n, "SELECT") || load_check_word(w, n, "LOAD_FILE")) {
        p = w;
        *why = "SELECT or LOAD_FILE, which no dump's CREATE statement holds";
        goto bad;
      }
      if (load_check_word(w, n, "DIRECTORY")) {
        p = w;
        *why = "DATA DIRECTORY or INDEX DIRECTORY (table files outside the target's data folder)";
        goto bad;
      }
      if (load_check_word(w, n, "CONNECTION")) {
        p = w;
        *why = "CONNECTION (a table of another server)";
        goto bad;
      }
      if (load_check_word(w, n, "ENGINE")) {
        const char *e = load_check_engine(p);
        if (!e) {
          p = w;
          *why = "an ENGINE other than InnoDB, Aria, MyISAM or MEMORY";
          goto bad;
        }
        p = e;
      }
    } else {
      p++;
    }
  }
  return 0;
bad:
  *at = (size_t)(p - rest);
  return -1;
}

const char *load_check_create(const char *sql, const char *kw, char *name, size_t name_len,
                              size_t *at, const char **why) {
  const char *p = sql, *end = sql + strlen(sql);
  while (isspace((unsigned char)*p))
    p++;
  *why = strcmp(kw, "CREATE TABLE ") == 0 ? "expected `CREATE TABLE `<table>` (`"
                                          : "expected `CREATE DATABASE IF NOT EXISTS `<db>``";
  if (!load_check_lit(&p, end, kw) || load_check_ident(&p, end, NULL, name, name_len) != 0) {
    *at = (size_t)(p - sql);
    return NULL;
  }
  const char *rest = p;
  if (strcmp(kw, "CREATE TABLE ") == 0) {
    while (isspace((unsigned char)*p))
      p++;
    if (*p != '(') {
      *at = (size_t)(p - sql);
      return NULL;
    }
  }
  if (load_check_rest(rest, at, why) != 0) {
    *at += (size_t)(rest - sql);
    return NULL;
  }
  return rest;
}
