/*
 * The names of a task's meta on the target (dmhost/task_meta.h): the units create the tables and
 * tracker schemas by them, the host drops exactly those on remove-meta. The tracker's prefix is
 * pinned to the values the sync unit gave before the SDK owned the name (its hash moved here
 * unchanged; the values checked against main's sync_hash): another value would orphan every shadow
 * schema of a running deployment, and a remove-meta would then miss them.
 */
#include <CUnit/Basic.h>
#include <string.h>

#include "cunit_run.h"
#include "dmhost/task_meta.h"

static void test_table_names(void) {
  static const struct {
    dm_task_meta_table which;
    const char *name;
  } cases[] = {
      {DM_META_LOADER_CHECKPOINT, "t1_loader_checkpoint"},
      {DM_META_LOADER_KEYS, "t1_loader_keys"},
      {DM_META_SYNCER_CHECKPOINT, "t1_syncer_checkpoint"},
      {DM_META_ONLINEDDL, "t1_onlineddl"},
      {DM_META_SYNCER_XA, "t1_syncer_xa"},
      {DM_META_VALIDATOR_CHECKPOINT, "t1_validator_checkpoint"},
      {DM_META_VALIDATOR_PENDING_CHANGE, "t1_validator_pending_change"},
      {DM_META_VALIDATOR_ERROR_CHANGE, "t1_validator_error_change"},
  };
  CU_ASSERT_EQUAL(sizeof cases / sizeof cases[0], DM_META_TABLE_COUNT);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char out[DM_META_NAME_MAX + 1];
    CU_ASSERT_EQUAL(dm_task_meta_table_name("t1", cases[i].which, out, sizeof out), 0);
    CU_ASSERT_STRING_EQUAL(out, cases[i].name);
  }
  char out[DM_META_NAME_MAX + 1];
  CU_ASSERT_EQUAL(dm_task_meta_table_name("t1", DM_META_TABLE_COUNT, out, sizeof out), -1);
  CU_ASSERT_EQUAL(dm_task_meta_table_name(NULL, DM_META_ONLINEDDL, out, sizeof out), -1);
  /* 46 + 18 = 64 fits a table name; 47 does not */
  char task[48];
  memset(task, 'a', 47);
  task[47] = '\0';
  CU_ASSERT_EQUAL(dm_task_meta_table_name(task, DM_META_SYNCER_CHECKPOINT, out, sizeof out), -1);
  task[46] = '\0';
  CU_ASSERT_EQUAL(dm_task_meta_table_name(task, DM_META_SYNCER_CHECKPOINT, out, sizeof out), 0);
  CU_ASSERT_EQUAL(strlen(out), 64);
  char small[8];
  CU_ASSERT_EQUAL(dm_task_meta_table_name("t1", DM_META_ONLINEDDL, small, sizeof small), -1);
}

static void test_tracker_prefix(void) {
  char p[DM_TRACKER_PREFIX_LEN + 1];
  CU_ASSERT_EQUAL(dm_tracker_schema_prefix("tl", "tl-src", p, sizeof p), 0);
  CU_ASSERT_STRING_EQUAL(p, "_dmt_2f135204e75d_");
  CU_ASSERT_EQUAL(dm_tracker_schema_prefix("task1", "source1", p, sizeof p), 0);
  CU_ASSERT_STRING_EQUAL(p, "_dmt_47aad8458cfc_");
  CU_ASSERT_EQUAL(strlen(p), DM_TRACKER_PREFIX_LEN);
  /* the pair, not the concatenation: ("ab", "c") and ("a", "bc") differ */
  char q[DM_TRACKER_PREFIX_LEN + 1];
  CU_ASSERT_EQUAL(dm_tracker_schema_prefix("ab", "c", p, sizeof p), 0);
  CU_ASSERT_EQUAL(dm_tracker_schema_prefix("a", "bc", q, sizeof q), 0);
  CU_ASSERT_STRING_NOT_EQUAL(p, q);
  CU_ASSERT_EQUAL(dm_tracker_schema_prefix("tl", "tl-src", q, DM_TRACKER_PREFIX_LEN), -1);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"meta-schema table names and their bounds", test_table_names},
      {"tracker schema prefix: pinned values, the pair", test_tracker_prefix},
  };
  return dmh_cunit_run("sdk_task_meta", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
