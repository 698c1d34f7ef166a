/*
 * What the sync does with each part of a RENAME TABLE (and of ALTER TABLE ... RENAME TO), judged
 * on both sides: where the table a part moves comes from, and where it ends when the whole
 * statement is done. docs/sync.md, "RENAME TABLE".
 *
 * DM splits `RENAME TABLE a TO b, c TO d` into one statement per pair and skips a pair when either
 * name is left out by the block-allow list (dm/syncer/filter.go, skipQueryEvent: every table of
 * the statement, old and new, through the list). That keeps gh-ost's cut-over `RENAME TABLE t TO
 * _t_del, _t_gho TO t` under a list narrowed to `t` from renaming `t` away on the target, but it
 * also skips, without a word, a rename that makes a table the target never had one the task
 * replicates (the target then silently lacks its rows), and a pair of a swap through a left-out
 * name (`a TO tmp, b TO a, tmp TO b`) would break the swap. Here the pairs are followed through
 * the statement as chains (a table's name before the statement, its names after each pair, its
 * name after the statement), and each chain is judged by its two ends:
 *
 *   replicated -> replicated   every pair of the chain runs (routed), intermediate names too
 *   left out   -> left out     skipped
 *   replicated -> left out     skipped: the target keeps the table (DM does the same)
 *   left out   -> replicated   refused, the whole statement, before any of it runs: the target
 *                              has none of the table's rows (DM_ERR_SYNC_RENAME_INTO) — except
 *                              the cut-over of an online schema change tool: the table that
 *                              comes in is the tool's copy of one that leaves in the same
 *                              statement (gh-ost `_t_gho`, pt-online-schema-change `_t_new`, in
 *                              the same schema), which holds the same rows: both chains are
 *                              skipped and the target keeps `t`, to which the rows of the new
 *                              `t` are then applied.
 *
 * That guess by the names is what happens with online-ddl off. With it on (the task's default), DM's
 * online-DDL rules judge first every part whose either name is a ghost or trash table of the
 * task's rules (sync_rename_online: the cut-over runs the ghost's recorded DDL, renames to ghosts
 * and cut-overs only one rule list matches are refused), those parts stay out of the chains, and
 * the guess is off: the rules say which tables are a tool's.
 *
 * Pure: the block-allow list and the kinds come as callbacks; the caller (sync_ddl_apply.c) logs
 * and errors.
 */
#include <stdio.h>
#include <string.h>

#include <dmhost/error.h>
#include <dmhost/shard.h>

#include "sync_ddl.h"

bool sync_rename_part_of(const sync_ddl_stmt *s) {
  return s->has_other &&
         (s->kind == SYNC_DDL_RENAME_TABLE || (s->kind == SYNC_DDL_ALTER_TABLE && !s->temporary));
}

static bool sync_rename_same(const sync_ddl_name *a, const sync_ddl_name *b) {
  return strcmp(a->schema, b->schema) == 0 && strcmp(a->table, b->table) == 0;
}

/* Is `in` the online schema change tool's copy of `of`: `_of_gho` (gh-ost) or `_of_new`
 * (pt-online-schema-change), in the same schema? */
static bool sync_rename_is_ghost(const sync_ddl_name *in, const sync_ddl_name *of) {
  static const char *const suffixes[] = {"_gho", "_new"};
  if (strcmp(in->schema, of->schema) != 0 || in->table[0] != '_')
    return false;
  size_t n = strlen(of->table);
  if (strncmp(in->table + 1, of->table, n) != 0)
    return false;
  for (size_t i = 0; i < sizeof suffixes / sizeof *suffixes; i++)
    if (strcmp(in->table + 1 + n, suffixes[i]) == 0)
      return true;
  return false;
}

static bool sync_rename_online_verdict(sync_rename_verdict v) {
  return v == SYNC_RENAME_CUTOVER || v == SYNC_RENAME_TOOL || v == SYNC_RENAME_TRASHED;
}

int sync_rename_online(const sync_ddl *d, sync_online_kind_fn kind, void *arg,
                       sync_rename_part *parts, int *bad, const char **rules) {
  int pairs = 0, first = -1, second = -1;
  for (int i = 0; i < d->n; i++) {
    memset(&parts[i], 0, sizeof parts[i]);
    parts[i].chain = -1;
    parts[i].swapped = -1;
    if (!sync_rename_part_of(&d->stmts[i]))
      continue;
    if (pairs == 0)
      first = i;
    else if (pairs == 1)
      second = i;
    pairs++;
  }
  /* DM's CheckRegex: `RENAME TABLE t TO _t_old, _t_new TO t` with one rule list missing a name */
  if (pairs == 2 && d->stmts[first].kind == SYNC_DDL_RENAME_TABLE) {
    const sync_ddl_stmt *a = &d->stmts[first], *b = &d->stmts[second];
    bool trash = kind(arg, a->subject.schema, a->subject.table) == DM_ONLINE_REAL &&
                 kind(arg, a->other.schema, a->other.table) == DM_ONLINE_TRASH;
    bool shadow = kind(arg, b->subject.schema, b->subject.table) == DM_ONLINE_GHOST &&
                  kind(arg, b->other.schema, b->other.table) == DM_ONLINE_REAL;
    if (trash != shadow) {
      *bad = trash ? second : first;
      *rules = trash ? "shadow-table-rules" : "trash-table-rules";
      return DM_ERR_CONFIG_ONLINE_DDL_RULES;
    }
  }
  for (int i = 0; i < d->n; i++) {
    const sync_ddl_stmt *s = &d->stmts[i];
    if (!sync_rename_part_of(s))
      continue;
    int from = kind(arg, s->subject.schema, s->subject.table);
    int to = kind(arg, s->other.schema, s->other.table);
    if (from == DM_ONLINE_REAL && to == DM_ONLINE_REAL)
      continue;                  /* sync_rename_plan's */
    if (to == DM_ONLINE_GHOST) { /* DM's 36044 (to a ghost) and 36045 (a ghost to another) */
      *bad = i;
      return DM_ERR_SYNC_GHOST_RENAME;
    }
    parts[i].verdict = from == DM_ONLINE_GHOST && to == DM_ONLINE_REAL    ? SYNC_RENAME_CUTOVER
                       : from == DM_ONLINE_GHOST && to == DM_ONLINE_TRASH ? SYNC_RENAME_TRASHED
                                                                          : SYNC_RENAME_TOOL;
    parts[i].origin = &s->subject;
    parts[i].final = &s->other;
  }
  return 0;
}

int sync_rename_plan(const sync_ddl *d, sync_rename_allowed_fn allowed, void *arg,
                     bool guess_cutover, sync_rename_part *parts) {
  /* chains: parts[i].chain is the index of the chain's first part, whose origin/final hold the
   * chain's ends */
  for (int i = 0; i < d->n; i++) {
    const sync_ddl_stmt *s = &d->stmts[i];
    if (sync_rename_online_verdict(parts[i].verdict)) {
      parts[i].chain = -1;
      continue;
    }
    memset(&parts[i], 0, sizeof parts[i]);
    parts[i].chain = -1;
    parts[i].swapped = -1;
    if (!sync_rename_part_of(s))
      continue;
    int c = -1;
    for (int j = i - 1; j >= 0 && c < 0; j--) /* the chain whose table now has this name */
      if (parts[j].chain >= 0 && parts[parts[j].chain].final == &d->stmts[j].other &&
          sync_rename_same(&d->stmts[j].other, &s->subject))
        c = parts[j].chain;
    if (c < 0) {
      c = i;
      parts[i].origin = &s->subject;
    }
    parts[i].chain = c;
    parts[c].final = &s->other;
  }
  /* each chain's verdict, at its first part */
  for (int i = 0; i < d->n; i++) {
    if (parts[i].chain != i)
      continue;
    bool in_o = allowed(arg, parts[i].origin->schema, parts[i].origin->table);
    bool in_f = allowed(arg, parts[i].final->schema, parts[i].final->table);
    parts[i].verdict = in_o && in_f ? SYNC_RENAME_APPLY
                       : in_o       ? SYNC_RENAME_OUT
                       : !in_f      ? SYNC_RENAME_NEITHER
                                    : SYNC_RENAME_INTO;
  }
  /* a table coming in that is the tool's copy of one leaving under the same name: a cut-over */
  for (int i = 0; i < d->n && guess_cutover; i++) {
    if (parts[i].chain != i || parts[i].verdict != SYNC_RENAME_INTO)
      continue;
    for (int j = 0; j < d->n; j++) {
      if (parts[j].chain != j || parts[j].verdict != SYNC_RENAME_OUT ||
          !sync_rename_same(parts[j].origin, parts[i].final) ||
          !sync_rename_is_ghost(parts[i].origin, parts[i].final))
        continue;
      parts[i].verdict = SYNC_RENAME_GHOST;
      parts[j].verdict = SYNC_RENAME_GHOST;
      parts[i].swapped = j;
      break;
    }
  }
  int into = -1;
  for (int i = 0; i < d->n; i++) {
    if (parts[i].chain < 0)
      continue;
    const sync_rename_part *c = &parts[parts[i].chain];
    parts[i].verdict = c->verdict;
    if (parts[i].chain != i) {
      parts[i].origin = c->origin;
      parts[i].final = c->final;
    }
    if (parts[i].verdict == SYNC_RENAME_INTO && into < 0)
      into = i;
  }
  return into;
}
