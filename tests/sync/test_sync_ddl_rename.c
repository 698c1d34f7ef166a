/* RENAME TABLE judged on both sides of the block-allow list (plugins/sync/sync_ddl_rename.c):
 * gh-ost's cut-over, swaps, chains, a table moved into or out of the replicated set; with
 * online-ddl on, DM's rules for ghost and trash tables first (issue 22): the cut-overs, a RENAME
 * swapping in an unrelated table, a cut-over only one rule list matches, renames to ghosts. */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_run.h"
#include "dmhost/error.h"
#include "dmhost/shard.h"
#include "sync_ddl.h"
#include "sync_ddl_test_util.h"

/* The block-allow list of the rename cases: the tables of schema shop listed in arg ("t,u,"). */
static bool rename_allowed(void *arg, const char *schema, const char *table) {
  char list[128], want[SYNC_DDL_NAME_MAX + 2];
  snprintf(list, sizeof list, ",%s", (const char *)arg);
  snprintf(want, sizeof want, ",%s,", table);
  return strcmp(schema, "shop") == 0 && strstr(list, want) != NULL;
}

/* RENAME judged on both sides (sync_ddl_rename.c): per part, the verdict of the table it moves,
 * followed through the statement; the first part of a chain that enters the set. */
static void test_rename_plan(void) {
  static const struct {
    const char *sql, *allowed;
    int into;
    sync_rename_verdict v[4];
  } cases[] = {
      /* both ends replicated, routed or not */
      {"RENAME TABLE t TO u", "t,u,", -1, {SYNC_RENAME_APPLY}},
      /* a swap through a name the list leaves out: every part runs (DM would skip two of three) */
      {"RENAME TABLE t TO tmp, u TO t, tmp TO u",
       "t,u,",
       -1,
       {SYNC_RENAME_APPLY, SYNC_RENAME_APPLY, SYNC_RENAME_APPLY}},
      /* DM's own example: a TO b, c TO a, with c left out: a leaves as b (in), c enters as a */
      {"RENAME TABLE a TO b, c TO a", "a,b,", 1, {SYNC_RENAME_APPLY, SYNC_RENAME_INTO}},
      {"RENAME TABLE x TO y", "t,", -1, {SYNC_RENAME_NEITHER}},
      {"RENAME TABLE t TO gone", "t,", -1, {SYNC_RENAME_OUT}},
      {"RENAME TABLE u TO u2, x TO t", "t,u,u2,", 1, {SYNC_RENAME_APPLY, SYNC_RENAME_INTO}},
      /* gh-ost and pt-online-schema-change cut-overs under a list narrowed to t */
      {"RENAME TABLE t TO _t_del, _t_gho TO t", "t,", -1, {SYNC_RENAME_GHOST, SYNC_RENAME_GHOST}},
      {"RENAME TABLE t TO _t_old, _t_new TO t", "t,", -1, {SYNC_RENAME_GHOST, SYNC_RENAME_GHOST}},
      /* the same shape with a table that is no copy of t: refused */
      {"RENAME TABLE t TO _t_del, other TO t", "t,", 1, {SYNC_RENAME_OUT, SYNC_RENAME_INTO}},
      /* a copy in another schema is no cut-over */
      {"RENAME TABLE t TO _t_del, elsewhere._t_gho TO t",
       "t,",
       1,
       {SYNC_RENAME_OUT, SYNC_RENAME_INTO}},
      /* ALTER TABLE ... RENAME TO moves a table too; CREATE TABLE ... LIKE does not */
      {"ALTER TABLE x RENAME TO t, ADD COLUMN c INT", "t,", 0, {SYNC_RENAME_INTO}},
      {"CREATE TABLE t LIKE x", "t,", -1, {SYNC_RENAME_NONE}},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    sync_ddl d = {0};
    char msg[256];
    CU_ASSERT_EQUAL_FATAL(
        sync_ddl_parse(cases[k].sql, strlen(cases[k].sql), "shop", &d, msg, sizeof msg), 0);
    sync_rename_part parts[4] = {0};
    CU_ASSERT_FATAL(d.n <= 4);
    int into = sync_rename_plan(&d, rename_allowed, (void *)cases[k].allowed, true, parts);
    if (into != cases[k].into)
      fprintf(stderr, "%s: into %d, expected %d\n", cases[k].sql, into, cases[k].into);
    CU_ASSERT_EQUAL(into, cases[k].into);
    for (int i = 0; i < d.n; i++) {
      if (parts[i].verdict != cases[k].v[i])
        fprintf(stderr, "%s: part %d verdict %d, expected %d\n", cases[k].sql, i,
                (int)parts[i].verdict, (int)cases[k].v[i]);
      CU_ASSERT_EQUAL(parts[i].verdict, cases[k].v[i]);
    }
    sync_ddl_free(&d);
  }
}

/* The online-DDL kinds of the cases: DM's default rules (^_(.+)_(?:new|gho)$ a ghost,
 * ^_(.+)_(?:ghc|del|old)$ trash) when arg is "dm", every table real when arg is "none" (rules
 * that match nothing). */
static bool ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a > b && strcmp(s + a - b, suffix) == 0;
}
static int online_kind(void *arg, const char *schema, const char *table) {
  (void)schema;
  if (strcmp((const char *)arg, "none") == 0 || table[0] != '_' || strlen(table) < 6)
    return DM_ONLINE_REAL;
  if (ends_with(table, "_new") || ends_with(table, "_gho"))
    return DM_ONLINE_GHOST;
  if (ends_with(table, "_ghc") || ends_with(table, "_del") || ends_with(table, "_old"))
    return DM_ONLINE_TRASH;
  return DM_ONLINE_REAL;
}

/* online-ddl on (issue 22): DM's rules for parts that move ghost or trash tables first
 * (sync_rename_online), then the chains of the rest without the cut-over guess. */
static void test_rename_online(void) {
  static const struct {
    const char *sql, *rules, *allowed;
    int code; /* of sync_rename_online: 0, DM_ERR_SYNC_GHOST_RENAME, DM_ERR_CONFIG_ONLINE_... */
    int bad;  /* the part the refusal names */
    const char *which; /* the rule list DM_ERR_CONFIG_ONLINE_DDL_RULES names */
    int into;
    sync_rename_verdict v[2];
  } cases[] = {
      /* the cut-overs: the real table's side is nothing, the ghost's runs its record */
      {"RENAME TABLE t TO _t_old, _t_new TO t",
       "dm",
       "t,",
       0,
       -1,
       NULL,
       -1,
       {SYNC_RENAME_TOOL, SYNC_RENAME_CUTOVER}},
      {"RENAME TABLE t TO _t_del, _t_gho TO t",
       "dm",
       "t,",
       0,
       -1,
       NULL,
       -1,
       {SYNC_RENAME_TOOL, SYNC_RENAME_CUTOVER}},
      {"ALTER TABLE _t_new RENAME TO t", "dm", "t,", 0, -1, NULL, -1, {SYNC_RENAME_CUTOVER}},
      /* a ghost put away as trash: its record goes */
      {"RENAME TABLE _t_gho TO _t_del", "dm", "t,", 0, -1, NULL, -1, {SYNC_RENAME_TRASHED}},
      {"RENAME TABLE _t_ghc TO t2", "dm", "t,t2,", 0, -1, NULL, -1, {SYNC_RENAME_TOOL}},
      /* a RENAME swapping in an unrelated table: x matches no rule, the list leaves it out */
      {"RENAME TABLE t TO t_bak, x TO t",
       "dm",
       "t,t_bak,",
       0,
       -1,
       NULL,
       1,
       {SYNC_RENAME_APPLY, SYNC_RENAME_INTO}},
      /* rules that match nothing: no guess by the names, today's judgement of the ends */
      {"RENAME TABLE t TO _t_del, _t_gho TO t",
       "none",
       "t,",
       0,
       -1,
       NULL,
       1,
       {SYNC_RENAME_OUT, SYNC_RENAME_INTO}},
      /* a cut-over whose trash side matches no rule, and one whose ghost side does not: 11012 */
      {"RENAME TABLE t TO _t_bak, _t_new TO t",
       "dm",
       "t,",
       DM_ERR_CONFIG_ONLINE_DDL_RULES,
       0,
       "trash-table-rules",
       -1,
       {0}},
      {"RENAME TABLE t TO _t_old, _t_copy TO t",
       "dm",
       "t,",
       DM_ERR_CONFIG_ONLINE_DDL_RULES,
       1,
       "shadow-table-rules",
       -1,
       {0}},
      /* renames to or between ghosts: no tool does them (DM's 36044, 36045) */
      {"RENAME TABLE t TO _t_gho", "dm", "t,", DM_ERR_SYNC_GHOST_RENAME, 0, NULL, -1, {0}},
      {"RENAME TABLE _t_gho TO _t_new", "dm", "t,", DM_ERR_SYNC_GHOST_RENAME, 0, NULL, -1, {0}},
      {"RENAME TABLE _t_ghc TO _t_gho", "dm", "t,", DM_ERR_SYNC_GHOST_RENAME, 0, NULL, -1, {0}},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    sync_ddl d = {0};
    char msg[256];
    CU_ASSERT_EQUAL_FATAL(
        sync_ddl_parse(cases[k].sql, strlen(cases[k].sql), "shop", &d, msg, sizeof msg), 0);
    CU_ASSERT_FATAL(d.n <= 2);
    sync_rename_part parts[2] = {0};
    int bad = -1;
    const char *which = NULL;
    int code = sync_rename_online(&d, online_kind, (void *)cases[k].rules, parts, &bad, &which);
    if (code != cases[k].code)
      fprintf(stderr, "%s: code %d, expected %d\n", cases[k].sql, code, cases[k].code);
    CU_ASSERT_EQUAL(code, cases[k].code);
    if (code) {
      CU_ASSERT_EQUAL(bad, cases[k].bad);
      if (cases[k].which)
        CU_ASSERT(which && strcmp(which, cases[k].which) == 0);
      sync_ddl_free(&d);
      continue;
    }
    int into = sync_rename_plan(&d, rename_allowed, (void *)cases[k].allowed, false, parts);
    if (into != cases[k].into)
      fprintf(stderr, "%s: into %d, expected %d\n", cases[k].sql, into, cases[k].into);
    CU_ASSERT_EQUAL(into, cases[k].into);
    for (int i = 0; i < d.n; i++) {
      if (parts[i].verdict != cases[k].v[i])
        fprintf(stderr, "%s: part %d verdict %d, expected %d\n", cases[k].sql, i,
                (int)parts[i].verdict, (int)cases[k].v[i]);
      CU_ASSERT_EQUAL(parts[i].verdict, cases[k].v[i]);
    }
    sync_ddl_free(&d);
  }
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"RENAME judged on both sides", test_rename_plan},
      {"RENAME with online-ddl on", test_rename_online},
  };
  return dmh_cunit_run("sync_ddl_rename", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
