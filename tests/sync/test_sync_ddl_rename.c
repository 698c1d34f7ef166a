/* RENAME TABLE judged on both sides of the block-allow list (plugins/sync/sync_ddl_rename.c):
 * gh-ost's cut-over, swaps, chains, a table moved into or out of the replicated set. */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_run.h"
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

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"RENAME judged on both sides", test_rename_plan},
  };
  return dmh_cunit_run("sync_ddl_rename", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
