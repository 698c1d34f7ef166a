/*
 * The optimistic locks of a coordinator (host/core/shard/shard_opt_keeper.c), pure: operations
 * per member table (exec, skip, conflict, redirect), a repeated info, the end of a lock, unlock,
 * and the records as shard.json rebuilt by replaying the infos (a held table stays held after a
 * restart and is resolved by the next DDL; an unlocked one stays unlocked).
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_run.h"
#include "shard_opt_keeper.h"

#define LOCK "task-`db`.`t`"
#define WITH                                                                                       \
  "{\"columns\":[{\"name\":\"id\",\"type\":\"int\"},{\"name\":\"c\",\"type\":\"int\","             \
  "\"nullable\":true}]}"
#define WITHOUT "{\"columns\":[{\"name\":\"id\",\"type\":\"int\"}]}"
#define WITH_NN                                                                                    \
  "{\"columns\":[{\"name\":\"id\",\"type\":\"int\"},{\"name\":\"c\",\"type\":\"int\","             \
  "\"nullable\":false}]}"
#define WITH_NULLABLE                                                                              \
  "{\"columns\":[{\"name\":\"id\",\"type\":\"int\"},{\"name\":\"c\",\"type\":\"int\","             \
  "\"nullable\":true}]}"

static dmh_opt_keeper *two_sources(void) {
  dmh_opt_keeper *k = dmh_opt_keeper_new();
  CU_ASSERT_PTR_NOT_NULL_FATAL(k);
  dm_shard_table t1 = {"db", "t1"}, t2 = {"db", "t2"};
  char msg[256];
  CU_ASSERT_EQUAL_FATAL(
      dmh_opt_keeper_report_tables(k, LOCK, "task", "s1", "db", "t", &t1, 1, msg, sizeof msg), 0);
  CU_ASSERT_EQUAL_FATAL(
      dmh_opt_keeper_report_tables(k, LOCK, "task", "s2", "db", "t", &t2, 1, msg, sizeof msg), 0);
  return k;
}

static void put(dmh_opt_keeper *k, const char *source, const char *table, const char *ddl,
                const char *before, const char *after) {
  const char *ddls[] = {ddl};
  dm_shard_info info = {.target_schema = "db",
                        .target_table = "t",
                        .ddls = ddls,
                        .n_ddls = 1,
                        .schema = "db",
                        .table = table,
                        .before = before,
                        .after = after};
  char msg[512] = "";
  int rc = dmh_opt_keeper_put(k, LOCK, "task", source, &info, msg, sizeof msg);
  if (rc != 0)
    fprintf(stderr, "put: %s\n", msg);
  CU_ASSERT_EQUAL_FATAL(rc, 0);
}

static const dmh_opt_oprec *pending(dmh_opt_keeper *k, const char *source) {
  return dmh_opt_keeper_pending(k, "task", source, "db", "t");
}

static size_t n_locks(dmh_opt_keeper *k) {
  json_object *a = dmh_opt_keeper_locks_json(k, "task");
  size_t n = json_object_array_length(a);
  json_object_put(a);
  return n;
}

static void test_add_column_ops(void) {
  dmh_opt_keeper *k = two_sources();
  put(k, "s1", "t1", "ALTER TABLE t ADD c INT", WITHOUT, WITH);
  const dmh_opt_oprec *o = pending(k, "s1");
  CU_ASSERT_PTR_NOT_NULL_FATAL(o);
  CU_ASSERT_EQUAL(o->action, DM_SHARD_EXEC);
  CU_ASSERT_FALSE(o->conflict);
  CU_ASSERT_STRING_EQUAL(o->table, "t1");
  CU_ASSERT_STRING_EQUAL(o->lock_id, LOCK);
  CU_ASSERT_EQUAL_FATAL(o->n_ddls, 1);
  CU_ASSERT_STRING_EQUAL(o->ddls[0], "ALTER TABLE t ADD c INT");
  uint64_t id = o->id;
  CU_ASSERT_PTR_NULL(pending(k, "s2"));
  /* the same info again (a restart): the same operation */
  put(k, "s1", "t1", "ALTER TABLE t ADD c INT", WITHOUT, WITH);
  CU_ASSERT_EQUAL(pending(k, "s1")->id, id);
  dmh_opt_keeper_done(k, "task", "s1", id);
  CU_ASSERT_PTR_NULL(pending(k, "s1"));
  /* put again after done (a crash before the checkpoint moved past the DDL): handed out again */
  put(k, "s1", "t1", "ALTER TABLE t ADD c INT", WITHOUT, WITH);
  CU_ASSERT_PTR_NOT_NULL_FATAL(pending(k, "s1"));
  CU_ASSERT_EQUAL(pending(k, "s1")->id, id);
  dmh_opt_keeper_done(k, "task", "s1", id);
  CU_ASSERT_EQUAL(n_locks(k), 1);
  put(k, "s2", "t2", "ALTER TABLE t ADD c INT", WITHOUT, WITH);
  o = pending(k, "s2");
  CU_ASSERT_PTR_NOT_NULL_FATAL(o);
  CU_ASSERT_EQUAL(o->action, DM_SHARD_SKIP);
  dmh_opt_keeper_done(k, "task", "s2", o->id);
  /* every member agrees and every operation is done: the lock ends */
  CU_ASSERT_EQUAL(n_locks(k), 0);
  dmh_opt_keeper_done(k, "task", "s2", 999); /* unknown: accepted */
  CU_ASSERT_TRUE(dmh_opt_keeper_has_task(k, "task"));
  dmh_opt_keeper_remove_task(k, "task");
  CU_ASSERT_FALSE(dmh_opt_keeper_has_task(k, "task"));
  dmh_opt_keeper_free(k);
}

/* A held DROP survives a restart (shard.json) and the other's DROP resolves it there. */
static void test_conflict_redirect_and_reload(void) {
  dmh_opt_keeper *k = two_sources();
  put(k, "s1", "t1", "ALTER TABLE t DROP c", WITH_NN, WITHOUT);
  const dmh_opt_oprec *o = pending(k, "s1");
  CU_ASSERT_PTR_NOT_NULL_FATAL(o);
  CU_ASSERT_EQUAL(o->action, DM_SHARD_SKIP);
  CU_ASSERT_TRUE(o->conflict);
  CU_ASSERT_EQUAL(o->stage, DMH_OPT_STAGE_SKIP_WAIT);
  CU_ASSERT_PTR_NOT_NULL(strstr(o->message, "column `c`"));
  dmh_opt_keeper_done(k, "task", "s1", o->id); /* the sync holds the table and says so */

  json_object *saved = dmh_opt_keeper_to_json(k, "task");
  CU_ASSERT_PTR_NOT_NULL_FATAL(saved);
  dmh_opt_keeper_free(k);
  k = dmh_opt_keeper_new();
  char msg[256] = "";
  CU_ASSERT_EQUAL_FATAL(dmh_opt_keeper_load_json(k, saved, msg, sizeof msg), 0);
  json_object_put(saved);
  json_object *locks = dmh_opt_keeper_locks_json(k, "task");
  const char *s = json_object_to_json_string_ext(locks, JSON_C_TO_STRING_PLAIN);
  CU_ASSERT_PTR_NOT_NULL(strstr(s, "skip and wait for redirect"));
  CU_ASSERT_PTR_NOT_NULL(strstr(s, "\"task\":\"task\""));
  json_object_put(locks);
  CU_ASSERT_PTR_NULL(pending(k, "s1")); /* its operation was done before the restart */

  put(k, "s2", "t2", "ALTER TABLE t DROP c", WITH_NN, WITHOUT);
  o = pending(k, "s2");
  CU_ASSERT_PTR_NOT_NULL_FATAL(o);
  CU_ASSERT_EQUAL(o->action, DM_SHARD_EXEC);
  o = pending(k, "s1");
  CU_ASSERT_PTR_NOT_NULL_FATAL(o);
  CU_ASSERT_EQUAL(o->action, DM_SHARD_SKIP); /* the redirect */
  CU_ASSERT_FALSE(o->conflict);
  CU_ASSERT_EQUAL(o->stage, DMH_OPT_STAGE_RESOLVED);
  CU_ASSERT_STRING_EQUAL(o->table, "t1");
  dmh_opt_keeper_done(k, "task", "s1", o->id);
  dmh_opt_keeper_done(k, "task", "s2", pending(k, "s2")->id);
  CU_ASSERT_EQUAL(n_locks(k), 0);
  dmh_opt_keeper_free(k);
}

static void test_unlock(void) {
  dmh_opt_keeper *k = two_sources();
  char msg[256];
  CU_ASSERT_EQUAL(
      dmh_opt_keeper_unlock(k, "nope", "s1", "db", "t1", DM_SHARD_EXEC, msg, sizeof msg),
      DMH_OPT_ERR_NOT_FOUND);
  put(k, "s1", "t1", "ALTER TABLE t DROP c", WITH_NN, WITHOUT);
  dmh_opt_keeper_done(k, "task", "s1", pending(k, "s1")->id);
  CU_ASSERT_EQUAL(dmh_opt_keeper_unlock(k, LOCK, "s2", "db", "t2", DM_SHARD_EXEC, msg, sizeof msg),
                  DMH_OPT_ERR_NOT_HELD);
  CU_ASSERT_EQUAL(dmh_opt_keeper_unlock(k, LOCK, "s9", "db", "t2", DM_SHARD_EXEC, msg, sizeof msg),
                  DMH_OPT_ERR_NOT_FOUND);
  CU_ASSERT_EQUAL_FATAL(
      dmh_opt_keeper_unlock(k, LOCK, "s1", "db", "t1", DM_SHARD_EXEC, msg, sizeof msg), 0);
  const dmh_opt_oprec *o = pending(k, "s1");
  CU_ASSERT_PTR_NOT_NULL_FATAL(o);
  CU_ASSERT_EQUAL(o->action, DM_SHARD_EXEC);
  CU_ASSERT_EQUAL(o->stage, DMH_OPT_STAGE_UNLOCKED);
  CU_ASSERT_EQUAL_FATAL(o->n_ddls, 1);
  CU_ASSERT_STRING_EQUAL(o->ddls[0], "ALTER TABLE t DROP c");
  /* after a restart the table is still unlocked, not held again */
  json_object *saved = dmh_opt_keeper_to_json(k, NULL);
  dmh_opt_keeper *k2 = dmh_opt_keeper_new();
  CU_ASSERT_EQUAL_FATAL(dmh_opt_keeper_load_json(k2, saved, msg, sizeof msg), 0);
  json_object *locks = dmh_opt_keeper_locks_json(k2, NULL);
  CU_ASSERT_PTR_NOT_NULL(strstr(json_object_to_json_string_ext(locks, JSON_C_TO_STRING_PLAIN),
                                "\"stage\":\"unlocked\""));
  CU_ASSERT_EQUAL(pending(k2, "s1")->id, o->id);
  json_object_put(locks);
  json_object_put(saved);
  dmh_opt_keeper_free(k2);
  dmh_opt_keeper_free(k);
}

static void test_bad_json(void) {
  dmh_opt_keeper *k = dmh_opt_keeper_new();
  char msg[256] = "";
  json_object *bad = json_tokener_parse("{\"oinfos\":[{\"task\":\"x\"}]}");
  CU_ASSERT_EQUAL(dmh_opt_keeper_load_json(k, bad, msg, sizeof msg), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(msg, "\"oinfos\""));
  json_object_put(bad);
  const char *ddls[] = {"x"};
  dm_shard_info info = {.target_schema = "db",
                        .target_table = "t",
                        .ddls = ddls,
                        .n_ddls = 1,
                        .schema = "db",
                        .table = "t1",
                        .before = "nope",
                        .after = WITH_NULLABLE};
  CU_ASSERT_EQUAL(dmh_opt_keeper_put(k, LOCK, "task", "s1", &info, msg, sizeof msg), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(msg, "before"));
  dmh_opt_keeper_free(k);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"add_column_ops", test_add_column_ops},
      {"conflict_redirect_and_reload", test_conflict_redirect_and_reload},
      {"unlock", test_unlock},
      {"bad_json", test_bad_json},
  };
  return dmh_cunit_run("shard_opt_keeper", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
