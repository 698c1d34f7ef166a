/*
 * DM's binlog-filter events of an ALTER TABLE's clauses (sync_ddl.h, sync_ddl_alter_events).
 *
 * DM splits an ALTER TABLE into one statement per clause (pkg/parser SplitDDL) and names each by
 * dm/syncer/ddl.go AstToDDLEvent: DROP COLUMN "drop column", DROP INDEX/KEY "drop index", DROP
 * PRIMARY KEY "drop primary key", DROP PARTITION "drop table partition", TRUNCATE PARTITION
 * "truncate table partition", RENAME COLUMN "rename column", RENAME INDEX/KEY "rename index",
 * RENAME TO "rename table", ALTER COLUMN ... SET/DROP DEFAULT "modify default value", ADD
 * INDEX/KEY/UNIQUE/PRIMARY KEY/FOREIGN KEY/CHECK (a constraint to TiDB's parser) "modify
 * constraint", a table option CHARSET/COLLATE/ENGINE "modify charset"/"modify collation"/"modify
 * storage engine", REORGANIZE/REBUILD/COALESCE/EXCHANGE PARTITION their "... table partition",
 * MODIFY/CHANGE COLUMN by comparing the old column with the new; everything else "alter table".
 * ALGORITHM= and LOCK= are no clause (TiDB's ResolveAlterTableSpec drops them).
 *
 * Where DM names a clause only "alter table" (or "modify constraint") although its list has a
 * finer name, dmhost gives the finer one (ADD COLUMN "add column", ADD PRIMARY KEY "add primary
 * key", ADD/DROP FOREIGN KEY, COMMENT= "modify table comment", ADD PARTITION, PARTITION BY,
 * REMOVE PARTITIONING, ALTER INDEX ... VISIBLE/IGNORED); the host's list (config/filter_events.h)
 * knows what DM reports for each, so a rule naming "alter table" still matches them as in DM.
 *
 * MODIFY and CHANGE: DM compares the new definition with the old column (value range or precision
 * decrease, removed AUTO_INCREMENT, dropped key flags, default, charset, collation, position,
 * name). This reader has no old column: MODIFY is "modify column", CHANGE a b with a new name
 * "rename column", CHANGE a a "modify column" (docs/sync.md says so).
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sync_ddl.h"
#include "sync_ddl_internal.h"

typedef struct ev_clause {
  const sync_parser *p;
  int a, b; /* tokens [a, b) */
} ev_clause;

static bool ev_kw(const ev_clause *c, int i, const char *kw) {
  if (i < c->a || i >= c->b || c->p->t[i].type != SYNC_TK_WORD)
    return false;
  size_t n = strlen(kw);
  return c->p->t[i].len == n && strncasecmp(c->p->sql + c->p->t[i].off, kw, n) == 0;
}

/* The index of the first token after the optional words (IF [NOT] EXISTS), from i. */
static int ev_skip_if(const ev_clause *c, int i) {
  if (ev_kw(c, i, "IF")) {
    i++;
    if (ev_kw(c, i, "NOT"))
      i++;
    if (ev_kw(c, i, "EXISTS"))
      i++;
  }
  return i;
}

/* Two column names the same (names fold case; the quotes are not part of the name). */
static bool ev_same_name(const sync_parser *p, int x, int y) {
  const sync_tok *s = &p->t[x], *t = &p->t[y];
  size_t sq = s->type == SYNC_TK_WORD ? 0 : 1, tq = t->type == SYNC_TK_WORD ? 0 : 1;
  size_t sn = s->len - 2 * sq, tn = t->len - 2 * tq;
  return sn == tn && strncasecmp(p->sql + s->off + sq, p->sql + t->off + tq, sn) == 0;
}

/* A clause of table options (ENGINE=x DEFAULT CHARSET=y COMMENT='z' ...): DM takes the first of
 * charset, collation and engine; dmhost names a comment alone "modify table comment". */
static const char *ev_options(const ev_clause *c) {
  bool comment = false;
  for (int i = c->a; i < c->b; i++) {
    if (ev_kw(c, i, "CHARSET") || ev_kw(c, i, "CHARACTER"))
      return "modify charset";
    if (ev_kw(c, i, "COLLATE"))
      return "modify collation";
    if (ev_kw(c, i, "ENGINE"))
      return "modify storage engine";
    comment = comment || ev_kw(c, i, "COMMENT");
  }
  return comment ? "modify table comment" : "alter table";
}

static const char *ev_add(const ev_clause *c) {
  int i = c->a + 1;
  if (ev_kw(c, i, "COLUMN"))
    return "add column";
  if (ev_kw(c, i, "PARTITION"))
    return "add table partition";
  if (ev_kw(c, i, "CONSTRAINT")) {
    i++;
    /* CONSTRAINT [symbol] {PRIMARY KEY | UNIQUE | FOREIGN KEY | CHECK} */
    if (!ev_kw(c, i, "PRIMARY") && !ev_kw(c, i, "UNIQUE") && !ev_kw(c, i, "FOREIGN") &&
        !ev_kw(c, i, "CHECK"))
      i++;
  }
  if (ev_kw(c, i, "PRIMARY"))
    return "add primary key";
  if (ev_kw(c, i, "FOREIGN"))
    return "add foreign key";
  if (ev_kw(c, i, "INDEX") || ev_kw(c, i, "KEY") || ev_kw(c, i, "UNIQUE") ||
      ev_kw(c, i, "FULLTEXT") || ev_kw(c, i, "SPATIAL") || ev_kw(c, i, "CHECK") ||
      ev_kw(c, i, "CONSTRAINT") || ev_kw(c, i - 1, "CONSTRAINT"))
    return "modify constraint";
  return "add column"; /* ADD [IF NOT EXISTS] col ..., ADD (col, ...) */
}

static const char *ev_drop(const ev_clause *c) {
  int i = c->a + 1;
  if (ev_kw(c, i, "COLUMN"))
    return "drop column";
  if (ev_kw(c, i, "INDEX") || ev_kw(c, i, "KEY"))
    return "drop index";
  if (ev_kw(c, i, "PRIMARY"))
    return "drop primary key";
  if (ev_kw(c, i, "FOREIGN"))
    return "drop foreign key";
  if (ev_kw(c, i, "PARTITION"))
    return "drop table partition";
  if (ev_kw(c, i, "CONSTRAINT") || ev_kw(c, i, "CHECK") || ev_kw(c, i, "SYSTEM"))
    return "alter table";
  return "drop column"; /* DROP [IF EXISTS] col */
}

/* CHANGE [COLUMN] [IF EXISTS] old new type ... */
static const char *ev_change(const ev_clause *c) {
  int i = c->a + 1;
  if (ev_kw(c, i, "COLUMN"))
    i++;
  i = ev_skip_if(c, i);
  if (i + 1 < c->b && !ev_same_name(c->p, i, i + 1))
    return "rename column";
  return "modify column";
}

static const char *ev_alter(const ev_clause *c) {
  int i = c->a + 1;
  if (ev_kw(c, i, "INDEX") || ev_kw(c, i, "KEY"))
    return "alter index visibility";
  if (ev_kw(c, i, "CHECK") || ev_kw(c, i, "CONSTRAINT"))
    return "alter table";
  return "modify default value"; /* ALTER [COLUMN] c {SET DEFAULT x | DROP DEFAULT} */
}

/* One clause's event; NULL for ALGORITHM= and LOCK= (no clause to DM). */
static const char *ev_clause_event(const ev_clause *c) {
  int i = c->a;
  if (c->a >= c->b || ev_kw(c, i, "ALGORITHM") || ev_kw(c, i, "LOCK"))
    return NULL;
  if (ev_kw(c, i, "ADD"))
    return ev_add(c);
  if (ev_kw(c, i, "DROP"))
    return ev_drop(c);
  if (ev_kw(c, i, "MODIFY"))
    return "modify column";
  if (ev_kw(c, i, "CHANGE"))
    return ev_change(c);
  if (ev_kw(c, i, "ALTER"))
    return ev_alter(c);
  if (ev_kw(c, i, "RENAME"))
    return ev_kw(c, i + 1, "COLUMN")                            ? "rename column"
           : ev_kw(c, i + 1, "INDEX") || ev_kw(c, i + 1, "KEY") ? "rename index"
                                                                : "rename table";
  static const struct {
    const char *kw, *event;
  } partition[] = {
      {"TRUNCATE", "truncate table partition"}, {"REORGANIZE", "reorganize table partition"},
      {"REBUILD", "rebuild table partition"},   {"COALESCE", "coalesce table partition"},
      {"EXCHANGE", "exchange table partition"},
  };
  for (size_t k = 0; k < sizeof partition / sizeof partition[0]; k++)
    if (ev_kw(c, i, partition[k].kw) && ev_kw(c, i + 1, "PARTITION"))
      return partition[k].event;
  if (ev_kw(c, i, "REMOVE") && ev_kw(c, i + 1, "PARTITIONING"))
    return "remove table partitioning";
  if (ev_kw(c, i, "PARTITION") && ev_kw(c, i + 1, "BY"))
    return "alter table partitioning";
  if (ev_kw(c, i, "CONVERT") && ev_kw(c, i + 1, "TO"))
    return "modify charset"; /* CONVERT TO CHARACTER SET: a charset option to TiDB's parser */
  return ev_options(c);
}

/* The first token after the table's name (the statement's first ref), or -1. */
static int ev_first_clause(const sync_parser *p, const sync_ddl_stmt *s) {
  if (s->n_refs < 1)
    return -1;
  size_t end = s->refs[0].off + s->refs[0].len;
  for (int i = 0; i < p->n; i++)
    if (p->t[i].off >= end)
      return i;
  return p->n;
}

int sync_ddl_alter_events(const sync_ddl_stmt *s, const char **out, int max) {
  if (max < 1)
    return 0;
  out[0] = "alter table";
  if (s->kind != SYNC_DDL_ALTER_TABLE)
    return 0;
  sync_parser p = {.sql = s->sql, .len = s->sql_len, .flags = s->flags, .what = "alter table"};
  int n = 0;
  int first = sync_lex(&p) < 0 || p.lex_failed ? -1 : ev_first_clause(&p, s);
  if (first >= 0) {
    int depth = 0, a = first;
    const char *prev = NULL;
    for (int i = first; i <= p.n && n < max; i++) {
      bool end = i == p.n || (p.t[i].type == SYNC_TK_PUNCT && depth == 0 &&
                              (p.sql[p.t[i].off] == ',' || p.sql[p.t[i].off] == ';'));
      if (!end) {
        if (p.t[i].type == SYNC_TK_PUNCT)
          depth += p.sql[p.t[i].off] == '(' ? 1 : p.sql[p.t[i].off] == ')' ? -1 : 0;
        continue;
      }
      ev_clause c = {&p, a, i};
      /* DROP PARTITION p1, p2 (and TRUNCATE, REBUILD, ...): a lone name after a partition
       * clause is one more partition of it, not a clause */
      const char *e = i - a == 1 && prev && strstr(prev, "partition") ? NULL : ev_clause_event(&c);
      if (e)
        prev = e;
      bool seen = false;
      for (int k = 0; k < n && e && !seen; k++)
        seen = strcmp(out[k], e) == 0;
      if (e && !seen)
        out[n++] = e;
      a = i + 1;
    }
  }
  free(p.t);
  free(p.refs);
  if (n == 0) {
    out[0] = "alter table"; /* no clause (ALTER TABLE t, or only ALGORITHM=): DM's default */
    n = 1;
  }
  return n;
}
