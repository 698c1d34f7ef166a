/* DDL statements of the binlog: kind, names, split, route rewrite (sync_ddl.h). */
#include "sync_ddl.h"
#include "sync_ddl_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- errors and token tests ------------------------------------------------------------------ */

static void sync_fail_at(sync_parser *p, size_t off, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void sync_fail_at(sync_parser *p, size_t off, const char *fmt, ...) {
  if (p->failed)
    return;
  p->failed = true;
  if (!p->msg || !p->msg_len)
    return;
  char what[320];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  if (off >= p->len) {
    snprintf(p->msg, p->msg_len, "%s: %s at byte %zu (end of statement)", p->what, what, off);
    return;
  }
  /* A short excerpt from the byte on, one line at most, so the message stays one line. */
  size_t n = 0;
  while (n < 24 && off + n < p->len && p->sql[off + n] != '\n' && p->sql[off + n] != '\r')
    n++;
  snprintf(p->msg, p->msg_len, "%s: %s at byte %zu, near \"%.*s\"", p->what, what, off, (int)n,
           p->sql + off);
}

/* Memory ran out: no byte is to blame. */
static void sync_fail_oom(sync_parser *p) {
  if (p->failed)
    return;
  p->failed = true;
  if (p->msg && p->msg_len)
    snprintf(p->msg, p->msg_len, "%s: out of memory", p->what);
}

/* The byte the next token starts at (the statement's length at its end), for messages. */
static size_t sync_here(const sync_parser *p) {
  return p->i < p->n ? p->t[p->i].off : p->len;
}

/* the SDK's keyword test (dmhost/sql_lex.h), the one every reader of statements uses */
static bool sync_kw_at(const sync_parser *p, int i, const char *kw) {
  return i < p->n && dm_sql_tok_is(p->sql, &p->t[i], kw);
}

static bool sync_kw(const sync_parser *p, const char *kw) {
  return sync_kw_at(p, p->i, kw);
}

static bool sync_accept(sync_parser *p, const char *kw) {
  if (!sync_kw(p, kw))
    return false;
  p->i++;
  return true;
}

static bool sync_punct_at(const sync_parser *p, int i, char c) {
  return i < p->n && p->t[i].type == SYNC_TK_PUNCT && p->sql[p->t[i].off] == c;
}

static bool sync_accept_punct(sync_parser *p, char c) {
  if (!sync_punct_at(p, p->i, c))
    return false;
  p->i++;
  return true;
}

static bool sync_expect(sync_parser *p, const char *kw, const char *display) {
  if (sync_accept(p, kw))
    return true;
  sync_fail_at(p, sync_here(p), "expected %s", display);
  return false;
}

/* IF EXISTS / IF NOT EXISTS: optional, but once IF is there the rest must follow. */
static bool sync_if_exists(sync_parser *p, bool with_not) {
  if (!sync_accept(p, "IF"))
    return true;
  if (with_not && !sync_expect(p, "NOT", "NOT after IF"))
    return false;
  return sync_expect(p, "EXISTS", "EXISTS after IF");
}

/* The same for a statement DM makes idempotent on the target (docs/sync.md, "Idempotent DDL"):
 * when the clause is missing, the place right after the keyword before it is where the rewrite
 * puts it (s->if_at, s->if_clause), so the text is built around the parsed tokens only. */
static bool sync_if_exists_idem(sync_parser *p, sync_ddl_stmt *s, bool with_not) {
  if (!sync_kw(p, "IF") && p->i > 0) {
    s->if_at = p->t[p->i - 1].off + p->t[p->i - 1].len;
    s->if_clause = with_not ? " IF NOT EXISTS" : " IF EXISTS";
  }
  return sync_if_exists(p, with_not);
}

/* MariaDB's lock-wait clause: WAIT n | NOWAIT. */
static void sync_wait_clause(sync_parser *p) {
  if (sync_accept(p, "NOWAIT"))
    return;
  if (sync_kw(p, "WAIT") && p->i + 1 < p->n && p->t[p->i + 1].type == SYNC_TK_WORD)
    p->i += 2;
}

/* The statement ends here (a trailing ';' allowed). */
static bool sync_expect_end(sync_parser *p) {
  if (p->i >= p->n || (sync_punct_at(p, p->i, ';') && p->i + 1 == p->n))
    return true;
  sync_fail_at(p, sync_here(p), "unexpected text after the statement");
  return false;
}

/* ---- names ------------------------------------------------------------------------------------
 */

static bool sync_ident_tok(const sync_tok *t) {
  return t->type == SYNC_TK_WORD || t->type == SYNC_TK_BQ || t->type == SYNC_TK_DQ;
}

/* The name an identifier token stands for: quotes dropped, doubled quotes undone. */
static bool sync_ident_value(sync_parser *p, const sync_tok *t, char *out) {
  const char *s = p->sql + t->off;
  size_t n = t->len, o = 0;
  if (t->type != SYNC_TK_WORD) {
    char q = s[0];
    s++;
    n -= 2;
    for (size_t k = 0; k < n; k++) {
      size_t m = sync_mb_len(p->flags, s, k, n);
      if (o + (m ? m : 1) >= SYNC_DDL_NAME_MAX) {
        sync_fail_at(p, t->off, "name longer than %d bytes", SYNC_DDL_NAME_MAX - 1);
        return false;
      }
      if (m) { /* one character, whose second byte may look like a quote */
        memcpy(out + o, s + k, m);
        o += m;
        k += m - 1;
        continue;
      }
      out[o++] = s[k];
      if (s[k] == q && k + 1 < n && s[k + 1] == q)
        k++; /* a doubled quote is one quote of the name */
    }
  } else {
    if (n >= SYNC_DDL_NAME_MAX) {
      sync_fail_at(p, t->off, "name longer than %d bytes", SYNC_DDL_NAME_MAX - 1);
      return false;
    }
    memcpy(out, s, n);
    o = n;
  }
  out[o] = '\0';
  if (o == 0) {
    sync_fail_at(p, t->off, "empty name");
    return false;
  }
  if (strlen(out) != o) {
    sync_fail_at(p, t->off, "name holds a NUL byte");
    return false;
  }
  return true;
}

static int sync_add_ref(sync_parser *p, const sync_ddl_ref *r) {
  if (p->n_refs == p->cap_refs) {
    int cap = p->cap_refs ? p->cap_refs * 2 : 8;
    sync_ddl_ref *refs = realloc(p->refs, (size_t)cap * sizeof *refs);
    if (!refs) {
      sync_fail_oom(p);
      return -1;
    }
    p->refs = refs;
    p->cap_refs = cap;
  }
  p->refs[p->n_refs++] = *r;
  return 0;
}

/* A table name, [schema.]table, at the next token; an unqualified one takes unqualified_schema.
 * Records it as a ref and copies it to *name (when not NULL); *last (when not NULL) receives
 * its last token, where a split list ends. */
static bool sync_table_name(sync_parser *p, const char *unqualified_schema, sync_ddl_name *name,
                            const char *display, int *last) {
  if (p->i >= p->n || !sync_ident_tok(&p->t[p->i])) {
    sync_fail_at(p, sync_here(p), "expected %s", display);
    return false;
  }
  sync_ddl_ref r = {.schema_only = false};
  const sync_tok *a = &p->t[p->i], *b = a;
  if (sync_punct_at(p, p->i + 1, '.') && p->i + 2 < p->n && sync_ident_tok(&p->t[p->i + 2])) {
    b = &p->t[p->i + 2];
    if (!sync_ident_value(p, a, r.name.schema) || !sync_ident_value(p, b, r.name.table))
      return false;
    p->i += 3;
  } else {
    if (!sync_ident_value(p, a, r.name.table))
      return false;
    if (!unqualified_schema || !unqualified_schema[0]) {
      sync_fail_at(p, a->off, "table name without a schema, and the event has no default database");
      return false;
    }
    snprintf(r.name.schema, sizeof r.name.schema, "%s", unqualified_schema);
    p->i += 1;
  }
  r.off = a->off;
  r.len = b->off + b->len - a->off;
  if (sync_add_ref(p, &r) < 0)
    return false;
  if (name)
    *name = r.name;
  if (last)
    *last = p->i - 1;
  return true;
}

/* A database name at the next token (schema-only ref). */
static bool sync_schema_name(sync_parser *p, sync_ddl_name *name) {
  if (p->i >= p->n || !sync_ident_tok(&p->t[p->i])) {
    sync_fail_at(p, sync_here(p), "expected a database name");
    return false;
  }
  sync_ddl_ref r = {.schema_only = true};
  const sync_tok *a = &p->t[p->i];
  if (!sync_ident_value(p, a, r.name.schema))
    return false;
  r.off = a->off;
  r.len = a->len;
  p->i++;
  if (sync_add_ref(p, &r) < 0)
    return false;
  *name = r.name;
  return true;
}

/* Refuses to split a list whose tokens do not all sit on the same side of a versioned comment's
 * edge: the parts would carry a comment opened and never closed (or the reverse). */
static bool sync_splittable(sync_parser *p, int first, int last) {
  for (int k = first + 1; k <= last; k++) {
    if (p->t[k].vc != p->t[first].vc) {
      sync_fail_at(p, p->t[k].off, "cannot split a list that crosses a versioned comment");
      return false;
    }
  }
  return true;
}

/* ---- statements -------------------------------------------------------------------------------
 */

typedef struct sync_range {
  size_t from, to;
} sync_range;

/* Appends one statement made of the given byte ranges of the original text, carrying along the
 * refs that lie inside them. A space goes between two ranges that would otherwise glue two words
 * together (DROP TABLE IF EXISTS`a`,b must give "... EXISTS b", not "EXISTSb"). */
static int sync_emit(sync_parser *p, sync_ddl *out, const sync_ddl_stmt *tmpl, const sync_range *r,
                     int nr) {
  size_t total = 0;
  int nrefs = 0;
  for (int k = 0; k < nr; k++) {
    total += r[k].to - r[k].from + 1;
    for (int j = 0; j < p->n_refs; j++)
      if (p->refs[j].off >= r[k].from && p->refs[j].off + p->refs[j].len <= r[k].to)
        nrefs++;
  }
  sync_ddl_stmt s = *tmpl;
  s.sql = malloc(total + 1);
  s.refs = nrefs ? calloc((size_t)nrefs, sizeof *s.refs) : NULL;
  sync_ddl_stmt *grown = realloc(out->stmts, (size_t)(out->n + 1) * sizeof *grown);
  if (grown)
    out->stmts = grown;
  if (!s.sql || (nrefs && !s.refs) || !grown) {
    free(s.sql);
    free(s.refs);
    sync_fail_oom(p);
    return -1;
  }
  size_t o = 0;
  s.n_refs = 0;
  for (int k = 0; k < nr; k++) {
    if (r[k].to == r[k].from)
      continue;
    if (o > 0 && sync_word_byte((unsigned char)s.sql[o - 1]) &&
        sync_word_byte((unsigned char)p->sql[r[k].from]))
      s.sql[o++] = ' ';
    for (int j = 0; j < p->n_refs; j++) {
      if (p->refs[j].off >= r[k].from && p->refs[j].off + p->refs[j].len <= r[k].to) {
        s.refs[s.n_refs] = p->refs[j];
        s.refs[s.n_refs].off = o + (p->refs[j].off - r[k].from);
        s.n_refs++;
      }
    }
    memcpy(s.sql + o, p->sql + r[k].from, r[k].to - r[k].from);
    o += r[k].to - r[k].from;
  }
  s.sql[o] = '\0';
  s.sql_len = o;
  out->stmts[out->n++] = s;
  return 0;
}

static int sync_emit_whole(sync_parser *p, sync_ddl *out, const sync_ddl_stmt *tmpl) {
  sync_range r = {0, p->len};
  return sync_emit(p, out, tmpl, &r, 1);
}

/* CREATE [OR REPLACE] {DATABASE|SCHEMA} [IF NOT EXISTS] db [options] */
static int sync_create_database(sync_parser *p, sync_ddl *out, sync_ddl_stmt *s) {
  if (!sync_if_exists_idem(p, s, true) || !sync_schema_name(p, &s->subject))
    return -1;
  if (sync_kw_at(p, 1, "OR")) /* OR REPLACE is idempotent already, and refuses IF NOT EXISTS */
    s->if_clause = NULL;
  return sync_emit_whole(p, out, s);
}

/* DROP {DATABASE|SCHEMA} [IF EXISTS] db */
static int sync_drop_database(sync_parser *p, sync_ddl *out, sync_ddl_stmt *s) {
  if (!sync_if_exists_idem(p, s, false) || !sync_schema_name(p, &s->subject) || !sync_expect_end(p))
    return -1;
  return sync_emit_whole(p, out, s);
}

/* ALTER {DATABASE|SCHEMA} [db] options: without a name it is the default database's, and the
 * rewrite inserts the routed name right after DATABASE. A word that opens an option is taken
 * for the option (a database named like one must be quoted, as SHOW CREATE prints it). */
static int sync_alter_database(sync_parser *p, sync_ddl *out, sync_ddl_stmt *s) {
  static const char *const options[] = {"DEFAULT", "CHARACTER", "CHARSET", "COLLATE", "COMMENT"};
  bool named = p->i < p->n && sync_ident_tok(&p->t[p->i]);
  for (size_t k = 0; named && k < sizeof options / sizeof options[0]; k++)
    if (sync_kw(p, options[k]))
      named = false;
  if (named) {
    if (!sync_schema_name(p, &s->subject))
      return -1;
  } else {
    if (!p->default_db[0]) {
      sync_fail_at(p, sync_here(p), "no database named, and the event has no default database");
      return -1;
    }
    sync_ddl_ref r = {.schema_only = true, .off = p->t[p->i - 1].off + p->t[p->i - 1].len};
    snprintf(r.name.schema, sizeof r.name.schema, "%s", p->default_db);
    if (sync_add_ref(p, &r) < 0)
      return -1;
    s->subject = r.name;
  }
  return sync_emit_whole(p, out, s);
}

/* Scans the rest of a CREATE/ALTER TABLE for the other places that name a table. REFERENCES
 * targets without a schema live in the schema of the table being defined (InnoDB resolves them
 * so), the others in the default database. In CREATE TABLE the scan stops at SELECT: the tables a
 * SELECT reads are not parsed (as_select tells the unit). */
static bool sync_scan_table_body(sync_parser *p, sync_ddl_stmt *s, bool alter) {
  int depth = 0;
  while (p->i < p->n && !p->failed) {
    if (sync_accept_punct(p, '(')) {
      depth++;
    } else if (sync_accept_punct(p, ')')) {
      depth--;
    } else if (sync_accept(p, "REFERENCES")) {
      if (!sync_table_name(p, s->subject.schema, NULL, "a table name after REFERENCES", NULL))
        return false;
    } else if (!alter && sync_kw(p, "SELECT")) {
      s->as_select = true;
      return true;
    } else if (alter && depth == 0 && sync_kw(p, "RENAME")) {
      p->i++;
      /* RENAME COLUMN/INDEX/KEY renames a part of the table; RENAME [TO|AS] x the table. */
      if (sync_kw(p, "COLUMN") || sync_kw(p, "INDEX") || sync_kw(p, "KEY"))
        continue;
      if (!sync_accept(p, "TO"))
        sync_accept(p, "AS");
      /* MariaDB resolves an unqualified new name in the default database, not the table's. */
      if (!sync_table_name(p, p->default_db, &s->other, "a table name after RENAME", NULL))
        return false;
      s->has_other = true;
    } else if (alter && depth == 0 &&
               (sync_kw(p, "WITH") || sync_kw(p, "TO") || sync_kw(p, "CONVERT")) &&
               sync_kw_at(p, p->i + 1, "TABLE")) {
      /* EXCHANGE PARTITION p WITH TABLE t, CONVERT PARTITION p TO TABLE t, CONVERT TABLE t TO
       * PARTITION p: a second table that must be routed like the first. */
      p->i += 2;
      if (!sync_table_name(p, p->default_db, NULL, "a table name after TABLE", NULL))
        return false;
    } else {
      p->i++;
    }
  }
  return !p->failed;
}

/* CREATE [OR REPLACE] [TEMPORARY] TABLE [IF NOT EXISTS] t {(...) | LIKE t2 | (LIKE t2) | ...} */
static int sync_create_table(sync_parser *p, sync_ddl *out, sync_ddl_stmt *s) {
  if (!sync_if_exists_idem(p, s, true) ||
      !sync_table_name(p, p->default_db, &s->subject, "a table name", NULL))
    return -1;
  int save = p->i;
  bool paren = sync_accept_punct(p, '(');
  if (sync_accept(p, "LIKE")) {
    if (!sync_table_name(p, p->default_db, &s->other, "a table name after LIKE", NULL))
      return -1;
    s->has_other = true;
    if (paren && !sync_accept_punct(p, ')')) {
      sync_fail_at(p, sync_here(p), "expected ) after LIKE's table");
      return -1;
    }
  } else {
    p->i = save;
  }
  if (!sync_scan_table_body(p, s, false))
    return -1;
  /* OR REPLACE: idempotent already, and refuses IF NOT EXISTS. ... SELECT: whether the rows go
   * into a table that exists differs between servers and versions; left as it came. */
  if (sync_kw_at(p, 1, "OR") || s->as_select)
    s->if_clause = NULL;
  return sync_emit_whole(p, out, s);
}

/* DROP [TEMPORARY] {TABLE|TABLES} [IF EXISTS] a [, b ...] [WAIT n|NOWAIT] [RESTRICT|CASCADE]:
 * one statement per table, each the shared head + that name + the shared tail. */
static int sync_drop_table(sync_parser *p, sync_ddl *out, sync_ddl_stmt *s) {
  if (!sync_if_exists_idem(p, s, false))
    return -1;
  int ref0 = p->n_refs, first_tok = p->i, last_tok = p->i;
  do {
    if (!sync_table_name(p, p->default_db, NULL, "a table name", &last_tok))
      return -1;
  } while (sync_accept_punct(p, ','));
  sync_wait_clause(p);
  if (!sync_accept(p, "RESTRICT"))
    sync_accept(p, "CASCADE");
  if (!sync_expect_end(p))
    return -1;
  int nnames = p->n_refs - ref0;
  if (nnames == 1) {
    s->subject = p->refs[ref0].name;
    return sync_emit_whole(p, out, s);
  }
  if (!sync_splittable(p, first_tok, last_tok))
    return -1;
  size_t head = p->refs[ref0].off;
  size_t tail = p->refs[p->n_refs - 1].off + p->refs[p->n_refs - 1].len;
  for (int k = ref0; k < p->n_refs; k++) {
    const sync_ddl_ref *r = &p->refs[k];
    sync_range rg[3] = {{0, head}, {r->off, r->off + r->len}, {tail, p->len}};
    s->subject = r->name;
    if (sync_emit(p, out, s, rg, 3) < 0)
      return -1;
  }
  return 0;
}

/* RENAME {TABLE|TABLES} [IF EXISTS] a [WAIT n|NOWAIT] TO b [, c TO d ...]: one statement per
 * pair, in order, so a swap through a temporary name still works when applied one by one. */
static int sync_rename_table(sync_parser *p, sync_ddl *out, sync_ddl_stmt *s) {
  if (!sync_if_exists(p, false))
    return -1;
  int ref0 = p->n_refs, first_tok = p->i, last_tok = p->i;
  bool first = true;
  do {
    if (!sync_table_name(p, p->default_db, NULL, "a table name", NULL))
      return -1;
    if (first)
      sync_wait_clause(p);
    first = false;
    if (!sync_expect(p, "TO", "TO") ||
        !sync_table_name(p, p->default_db, NULL, "a table name after TO", &last_tok))
      return -1;
  } while (sync_accept_punct(p, ','));
  if (!sync_expect_end(p))
    return -1;
  int npairs = (p->n_refs - ref0) / 2;
  if (npairs > 1 && !sync_splittable(p, first_tok, last_tok))
    return -1;
  size_t head = p->refs[ref0].off;
  size_t tail = p->refs[p->n_refs - 1].off + p->refs[p->n_refs - 1].len;
  for (int k = 0; k < npairs; k++) {
    const sync_ddl_ref *from = &p->refs[ref0 + 2 * k], *to = &p->refs[ref0 + 2 * k + 1];
    s->subject = from->name;
    s->other = to->name;
    s->has_other = true;
    if (npairs == 1) {
      if (sync_emit_whole(p, out, s) < 0)
        return -1;
      break;
    }
    sync_range rg[3] = {{0, head}, {from->off, to->off + to->len}, {tail, p->len}};
    if (sync_emit(p, out, s, rg, 3) < 0)
      return -1;
  }
  return 0;
}

/* ALTER [ONLINE|OFFLINE] [IGNORE] TABLE [IF EXISTS] t specs... */
static int sync_alter_table(sync_parser *p, sync_ddl *out, sync_ddl_stmt *s) {
  if (!sync_if_exists(p, false) ||
      !sync_table_name(p, p->default_db, &s->subject, "a table name", NULL) ||
      !sync_scan_table_body(p, s, true))
    return -1;
  return sync_emit_whole(p, out, s);
}

/* TRUNCATE [TABLE] t [WAIT n|NOWAIT] */
static int sync_truncate_table(sync_parser *p, sync_ddl *out, sync_ddl_stmt *s) {
  if (!sync_table_name(p, p->default_db, &s->subject, "a table name", NULL))
    return -1;
  sync_wait_clause(p);
  if (!sync_expect_end(p))
    return -1;
  return sync_emit_whole(p, out, s);
}

/* CREATE ... INDEX [IF NOT EXISTS] i [USING type] ON t (...) and DROP INDEX [IF EXISTS] i ON t:
 * the index name is the table's own business; only the table is a name to route. */
static int sync_index(sync_parser *p, sync_ddl *out, sync_ddl_stmt *s, bool create) {
  /* DM makes DROP INDEX idempotent, and leaves CREATE INDEX as it came */
  if (!(create ? sync_if_exists(p, true) : sync_if_exists_idem(p, s, false)))
    return -1;
  if (p->i >= p->n || !sync_ident_tok(&p->t[p->i])) {
    sync_fail_at(p, sync_here(p), "expected an index name");
    return -1;
  }
  p->i++;
  if (create && sync_accept(p, "USING") && p->i < p->n)
    p->i++;
  if (!sync_expect(p, "ON", "ON") ||
      !sync_table_name(p, p->default_db, &s->subject, "a table name after ON", NULL))
    return -1;
  return sync_emit_whole(p, out, s);
}

/* Tells the kind from the leading keywords and leaves p->i on what follows them. */
static sync_ddl_kind sync_classify(sync_parser *p, bool *temporary) {
  *temporary = false;
  if (sync_accept(p, "CREATE")) {
    if (sync_accept(p, "OR") && !sync_accept(p, "REPLACE"))
      return SYNC_DDL_OTHER;
    if (sync_accept(p, "DATABASE") || sync_accept(p, "SCHEMA"))
      return SYNC_DDL_CREATE_DATABASE;
    if (sync_accept(p, "TEMPORARY")) {
      *temporary = true;
      return sync_accept(p, "TABLE") ? SYNC_DDL_CREATE_TABLE : SYNC_DDL_OTHER;
    }
    if (sync_accept(p, "TABLE"))
      return SYNC_DDL_CREATE_TABLE;
    if (!sync_accept(p, "ONLINE"))
      sync_accept(p, "OFFLINE");
    if (!sync_accept(p, "UNIQUE") && !sync_accept(p, "FULLTEXT"))
      sync_accept(p, "SPATIAL");
    return sync_accept(p, "INDEX") ? SYNC_DDL_CREATE_INDEX : SYNC_DDL_OTHER;
  }
  if (sync_accept(p, "DROP")) {
    if (sync_accept(p, "DATABASE") || sync_accept(p, "SCHEMA"))
      return SYNC_DDL_DROP_DATABASE;
    if (sync_accept(p, "TEMPORARY")) {
      *temporary = true;
      return sync_accept(p, "TABLE") || sync_accept(p, "TABLES") ? SYNC_DDL_DROP_TABLE
                                                                 : SYNC_DDL_OTHER;
    }
    if (sync_accept(p, "TABLE") || sync_accept(p, "TABLES"))
      return SYNC_DDL_DROP_TABLE;
    if (!sync_accept(p, "ONLINE"))
      sync_accept(p, "OFFLINE");
    return sync_accept(p, "INDEX") ? SYNC_DDL_DROP_INDEX : SYNC_DDL_OTHER;
  }
  if (sync_accept(p, "ALTER")) {
    if (sync_accept(p, "DATABASE") || sync_accept(p, "SCHEMA"))
      return SYNC_DDL_ALTER_DATABASE;
    if (!sync_accept(p, "ONLINE"))
      sync_accept(p, "OFFLINE");
    sync_accept(p, "IGNORE");
    return sync_accept(p, "TABLE") ? SYNC_DDL_ALTER_TABLE : SYNC_DDL_OTHER;
  }
  if (sync_accept(p, "RENAME"))
    return sync_accept(p, "TABLE") || sync_accept(p, "TABLES") ? SYNC_DDL_RENAME_TABLE
                                                               : SYNC_DDL_OTHER;
  if (sync_accept(p, "TRUNCATE")) {
    sync_accept(p, "TABLE");
    return SYNC_DDL_TRUNCATE_TABLE;
  }
  return SYNC_DDL_OTHER;
}

const char *sync_ddl_event_name(sync_ddl_kind k) {
  switch (k) {
  case SYNC_DDL_CREATE_DATABASE:
    return "create database";
  case SYNC_DDL_DROP_DATABASE:
    return "drop database";
  case SYNC_DDL_CREATE_TABLE:
    return "create table";
  case SYNC_DDL_DROP_TABLE:
    return "drop table";
  case SYNC_DDL_RENAME_TABLE:
    return "rename table";
  case SYNC_DDL_ALTER_TABLE:
    return "alter table";
  case SYNC_DDL_TRUNCATE_TABLE:
    return "truncate table";
  case SYNC_DDL_CREATE_INDEX:
    return "create index";
  case SYNC_DDL_DROP_INDEX:
    return "drop index";
  case SYNC_DDL_OTHER:
  case SYNC_DDL_ALTER_DATABASE:
    break;
  }
  return NULL;
}

static const char *sync_kind_label(sync_ddl_kind k) {
  return k == SYNC_DDL_ALTER_DATABASE ? "alter database" : sync_ddl_event_name(k);
}

int sync_ddl_parse_mode(const char *sql, size_t len, const char *default_db, unsigned flags,
                        sync_ddl *out, char *msg, size_t msg_len) {
  out->stmts = NULL;
  out->n = 0;
  out->multi_at = 0;
  if (msg && msg_len)
    msg[0] = '\0';
  sync_parser p = {.sql = sql,
                   .len = len,
                   .flags = flags,
                   .default_db = default_db ? default_db : "",
                   .what = "ddl",
                   .msg = msg,
                   .msg_len = msg_len};
  int rc = -1;
  sync_ddl_stmt s = {.kind = SYNC_DDL_OTHER, .flags = flags};
  if (sync_lex(&p) < 0) {
    sync_fail_oom(&p);
    goto done;
  }
  s.kind = sync_classify(&p, &s.temporary);
  if (s.kind == SYNC_DDL_OTHER) {
    /* Not ours to understand: handed over whole, even if it would not lex. */
    p.n_refs = 0;
    s.temporary = false;
    rc = sync_emit_whole(&p, out, &s);
    goto done;
  }
  p.what = sync_kind_label(s.kind);
  /* A ';' between tokens ends a statement: anything after it (but nothing) is a second one,
   * which no part of the task may ever run, whatever the target would make of it. */
  for (int k = 0; k < p.n; k++) {
    if (p.t[k].type == SYNC_TK_PUNCT && sql[p.t[k].off] == ';' && k + 1 < p.n) {
      sync_fail_at(&p, p.t[k].off, "a ';' ends the statement and more text follows");
      out->multi_at = p.t[k].off;
      rc = SYNC_DDL_MULTI;
      goto done;
    }
  }
  if (p.lex_failed) {
    /* The tokens stop at the bad byte; report it rather than "expected a name" further on. */
    sync_fail_at(&p, p.lex_err_off, "%s", p.lex_err);
    goto done;
  }
  switch (s.kind) {
  case SYNC_DDL_CREATE_DATABASE:
    rc = sync_create_database(&p, out, &s);
    break;
  case SYNC_DDL_DROP_DATABASE:
    rc = sync_drop_database(&p, out, &s);
    break;
  case SYNC_DDL_ALTER_DATABASE:
    rc = sync_alter_database(&p, out, &s);
    break;
  case SYNC_DDL_CREATE_TABLE:
    rc = sync_create_table(&p, out, &s);
    break;
  case SYNC_DDL_DROP_TABLE:
    rc = sync_drop_table(&p, out, &s);
    break;
  case SYNC_DDL_RENAME_TABLE:
    rc = sync_rename_table(&p, out, &s);
    break;
  case SYNC_DDL_ALTER_TABLE:
    rc = sync_alter_table(&p, out, &s);
    break;
  case SYNC_DDL_TRUNCATE_TABLE:
    rc = sync_truncate_table(&p, out, &s);
    break;
  case SYNC_DDL_CREATE_INDEX:
    rc = sync_index(&p, out, &s, true);
    break;
  case SYNC_DDL_DROP_INDEX:
    rc = sync_index(&p, out, &s, false);
    break;
  case SYNC_DDL_OTHER:
    break;
  }
done:
  if (rc < 0 || p.failed) {
    sync_ddl_free(out);
    if (rc != SYNC_DDL_MULTI)
      rc = -1;
  }
  free(p.t);
  free(p.refs);
  return rc;
}

unsigned sync_ddl_flags(uint64_t sql_mode, const char *charset) {
  static const struct {
    const char *name;
    unsigned mb;
  } mbs[] = {{"gbk", SYNC_DDL_MB_GBK},
             {"big5", SYNC_DDL_MB_BIG5},
             {"sjis", SYNC_DDL_MB_SJIS},
             {"cp932", SYNC_DDL_MB_SJIS},
             {"gb18030", SYNC_DDL_MB_GB18030}};
  unsigned f = 0;
  if (sql_mode & SYNC_SQL_MODE_NO_BACKSLASH_ESCAPES)
    f |= SYNC_DDL_NO_BACKSLASH_ESCAPES;
  if (sql_mode & SYNC_SQL_MODE_ANSI_QUOTES)
    f |= SYNC_DDL_ANSI_QUOTES;
  for (size_t k = 0; charset && k < sizeof mbs / sizeof mbs[0]; k++)
    if (strcmp(charset, mbs[k].name) == 0)
      f |= mbs[k].mb;
  return f;
}

int sync_ddl_parse(const char *sql, size_t len, const char *default_db, sync_ddl *out, char *msg,
                   size_t msg_len) {
  return sync_ddl_parse_mode(sql, len, default_db, 0, out, msg, msg_len);
}

void sync_ddl_free(sync_ddl *d) {
  for (int k = 0; k < d->n; k++) {
    free(d->stmts[k].sql);
    free(d->stmts[k].refs);
  }
  free(d->stmts);
  d->stmts = NULL;
  d->n = 0;
}

/* ---- rewrite ----------------------------------------------------------------------------------
 */

/* `name`, read back by the server under flags as exactly name: a backtick doubled unless it is
 * the second byte of a multi-byte character, and -1 for a byte that is no character of its own
 * but would be one with the backtick after it (the closing quote would vanish into it). */
static int sync_put_quoted(dm_buf *out, const char *name, unsigned flags) {
  if (dm_buf_putc(out, '`') < 0)
    return -1;
  size_t n = strlen(name);
  for (size_t k = 0; k < n; k++) {
    size_t m = sync_mb_len(flags, name, k, n);
    if (m) {
      if (dm_buf_put(out, name + k, m) < 0)
        return -1;
      k += m - 1;
      continue;
    }
    char probe[2] = {name[k], '`'};
    if (sync_mb_len(flags, probe, 0, 2))
      return -1;
    if (name[k] == '`' && dm_buf_putc(out, '`') < 0)
      return -1;
    if (dm_buf_putc(out, name[k]) < 0)
      return -1;
  }
  return dm_buf_putc(out, '`');
}

/* Copies s->sql from *pos up to `to`, with the IF [NOT] EXISTS of an idempotent rewrite where it
 * goes (s->if_at lies before the first name, on the boundary of a keyword token). */
static int sync_put_sql(const sync_ddl_stmt *s, bool idempotent, size_t *pos, size_t to,
                        dm_buf *out) {
  if (idempotent && s->if_clause && s->if_at >= *pos && s->if_at <= to) {
    if (dm_buf_put(out, s->sql + *pos, s->if_at - *pos) < 0 ||
        dm_buf_put(out, s->if_clause, strlen(s->if_clause)) < 0)
      return -1;
    *pos = s->if_at;
  }
  if (dm_buf_put(out, s->sql + *pos, to - *pos) < 0)
    return -1;
  *pos = to;
  return 0;
}

int sync_ddl_rewrite(const sync_ddl_stmt *s, sync_ddl_route_fn route, void *arg, bool idempotent,
                     dm_buf *out) {
  size_t pos = 0;
  for (int k = 0; k < s->n_refs; k++) {
    const sync_ddl_ref *r = &s->refs[k];
    char schema[SYNC_DDL_NAME_MAX], table[SYNC_DDL_NAME_MAX];
    memcpy(schema, r->name.schema, sizeof schema);
    memcpy(table, r->name.table, sizeof table);
    if (route) {
      if (r->schema_only)
        route(arg, r->name.schema, NULL, schema, sizeof schema, NULL, 0);
      else
        route(arg, r->name.schema, r->name.table, schema, sizeof schema, table, sizeof table);
      schema[sizeof schema - 1] = '\0';
      table[sizeof table - 1] = '\0';
    }
    if (!schema[0] || (!r->schema_only && !table[0]))
      return -1;
    if (sync_put_sql(s, idempotent, &pos, r->off, out) < 0)
      return -1;
    /* An implicit name (ALTER DATABASE without one) is inserted after the keyword before it; a
     * byte >= 0x80 right before the opening backtick could join it into one character. */
    if ((r->len == 0 || (out->len && (unsigned char)out->p[out->len - 1] >= 0x80)) &&
        dm_buf_putc(out, ' ') < 0)
      return -1;
    if (sync_put_quoted(out, schema, s->flags) < 0)
      return -1;
    if (!r->schema_only && (dm_buf_putc(out, '.') < 0 || sync_put_quoted(out, table, s->flags) < 0))
      return -1;
    pos = r->off + r->len;
  }
  return sync_put_sql(s, idempotent, &pos, s->sql_len, out);
}
