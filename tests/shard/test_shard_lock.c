/* The pessimistic shard DDL lock's pure logic (host/core/shard/shard_lock.c, shard_json.c): the
 * order of arrivals and the owner, the DDL-set compare, sources joining and leaving mid-lock,
 * the next DDL of a source queued behind the lock (DM's sequence sharding), unlock and its errors,
 * and the rebuild from the persisted records at each step of DM's
 * dm/pkg/shardddl/pessimism/doc.go (a reload between every two steps). */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

#include "cunit_run.h"
#include "dmhost/db.h"
#include "shard.h"

#define TASK "shop"
#define ID "shop-`shop`.`orders`"

static const char *ADD[] = {"ALTER TABLE `shop`.`orders` ADD COLUMN `note` VARCHAR(32) DEFAULT ''"};
static const char *ADD2[] = {"ALTER TABLE `shop`.`orders` ADD COLUMN `n2` INT"};
static const char *OTHER[] = {"ALTER TABLE `shop`.`orders` ADD COLUMN `other` INT"};

static const dm_shard_table EU[] = {{"shop_1", "orders_01"}, {"shop_1", "orders_02"}};
static const dm_shard_table US[] = {{"shop_3", "orders_01"}, {"shop_3", "orders_02"}};
static const dm_shard_table AS[] = {{"shop_5", "orders_01"}};

static void report(dmh_shard_keeper *k, const char *src, const dm_shard_table *t, uint32_t n) {
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_shard_report_tables(k, TASK, src, "shop", "orders", t, n, &err), 0);
}

static int put_at(dmh_shard_keeper *k, const char *src, const char **ddls, const dm_shard_table *t,
                  uint32_t n, uint64_t pos, dm_error *err) {
  dm_shard_info info = {.target_schema = "shop",
                        .target_table = "orders",
                        .ddls = ddls,
                        .n_ddls = 1,
                        .tables = t,
                        .n_tables = n};
  snprintf(info.pos.name, sizeof info.pos.name, "mysql-bin.000001");
  info.pos.pos = pos;
  return dmh_shard_put(k, TASK, src, &info, err);
}

static void put(dmh_shard_keeper *k, const char *src, const dm_shard_table *t, uint32_t n) {
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(put_at(k, src, ADD, t, n, 100, &err), 0);
}

static int state(dmh_shard_keeper *k, char *owner) {
  return dmh_shard_lock_state(k, ID, owner, owner ? 64 : 0);
}

static const dmh_shard_oprec *op_of(dmh_shard_keeper *k, const char *src) {
  return dmh_shard_pending_op(k, TASK, src, "shop", "orders");
}

static void done(dmh_shard_keeper *k, const char *src) {
  const dmh_shard_oprec *o = op_of(k, src);
  CU_ASSERT_PTR_NOT_NULL_FATAL(o);
  dm_error err;
  CU_ASSERT_EQUAL(dmh_shard_done(k, TASK, src, o->id, &err), 0);
}

/* a restart: the records through JSON text into a fresh keeper */
static dmh_shard_keeper *reload(dmh_shard_keeper *k) {
  json_object *j = dmh_shard_to_json(k, TASK);
  char *text = strdup(json_object_to_json_string(j));
  json_object_put(j);
  dmh_shard_keeper_free(k);
  dmh_shard_keeper *n = dmh_shard_keeper_new();
  json_object *p = json_tokener_parse(text);
  dm_error err;
  CU_ASSERT_EQUAL(dmh_shard_load_json(n, p, &err), 0);
  json_object_put(p);
  free(text);
  return n;
}

/* the listing's lock as JSON text, for strstr checks */
static char *listing(dmh_shard_keeper *k) {
  json_object *a = dmh_shard_locks_json(k, TASK);
  char *s = strdup(json_object_to_json_string_ext(a, JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put(a);
  return s;
}

static void test_lock_id_and_compare(void) {
  char id[DM_SHARD_LOCK_ID_MAX];
  CU_ASSERT_EQUAL(dmh_shard_lock_id(id, sizeof id, "shop", "shop", "orders"), 0);
  CU_ASSERT_STRING_EQUAL(id, ID);
  CU_ASSERT_EQUAL(dmh_shard_lock_id(id, sizeof id, "t", "a`b", "c"), 0);
  CU_ASSERT_STRING_EQUAL(id, "t-`a``b`.`c`");
  CU_ASSERT_EQUAL(dmh_shard_lock_id(id, 8, "shop", "shop", "orders"), -1);
  const char *a[] = {"X", "Y"}, *b[] = {"Y", "X"}, *c[] = {"X", "X"}, *d[] = {"X"};
  CU_ASSERT_TRUE(dmh_shard_ddls_equal(a, 2, b, 2));
  CU_ASSERT_FALSE(dmh_shard_ddls_equal(a, 2, c, 2));
  CU_ASSERT_FALSE(dmh_shard_ddls_equal(c, 2, a, 2));
  CU_ASSERT_FALSE(dmh_shard_ddls_equal(a, 2, d, 1));
}

/* gh-ost's and pt-osc's forms of one ALTER are one DDL (as DM compares restored statements);
 * what changes the statement's meaning is not folded away */
static void test_compare_canonical(void) {
  const char *ghost[] = {"alter /* gh-ost */ table `shop`.`orders` add column note varchar(20) "
                         "default 'A'"},
             *ptosc[] = {"ALTER TABLE `shop`.`orders`\n  ADD COLUMN `note` VARCHAR (20) "
                         "DEFAULT 'A';"},
             *lower[] = {"ALTER TABLE shop.orders ADD COLUMN note VARCHAR(20) DEFAULT 'a'"},
             *other[] = {"ALTER TABLE shop.orders ADD COLUMN notes VARCHAR(20) DEFAULT 'A'"},
             *exec[] = {"ALTER TABLE shop.orders /*!50100 ADD COLUMN note VARCHAR(20) */"},
             *plain[] = {"ALTER TABLE shop.orders"},
             *odd[] = {"ALTER TABLE `shop`.`or``ders` ADD COLUMN `a b` INT -- why\n"},
             *odd2[] = {"alter table shop.`or``ders` add column `a b` int"};
  CU_ASSERT_TRUE(dmh_shard_ddls_equal(ghost, 1, ptosc, 1));
  CU_ASSERT_FALSE(dmh_shard_ddls_equal(ghost, 1, lower, 1));
  CU_ASSERT_FALSE(dmh_shard_ddls_equal(ghost, 1, other, 1));
  CU_ASSERT_FALSE(dmh_shard_ddls_equal(exec, 1, plain, 1));
  CU_ASSERT_TRUE(dmh_shard_ddls_equal(odd, 1, odd2, 1));
  char *c = dm_db_ddl_canon("  ALTER  /* x */ TABLE `t` ADD `c` INT ,ADD `d``e` CHAR(1) ;; ");
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  CU_ASSERT_STRING_EQUAL(c, "alter table t add c int,add `d``e` char(1)");
  free(c);
}

/* DM's TrySync: the first arrival owns the lock; synced when the last member arrives; exec to the
 * owner, skips after its done; all done: the lock is gone. */
static void test_arrivals_owner_states(void) {
  dmh_shard_keeper *k = dmh_shard_keeper_new();
  char owner[64];
  report(k, "eu", EU, 2);
  report(k, "us", US, 2);
  CU_ASSERT_EQUAL(state(k, NULL), -1);
  put(k, "us", US, 1); /* one of its two tables held: the sync puts only when all are */
  CU_ASSERT_EQUAL(state(k, owner), DMH_SHARD_WAITING);
  CU_ASSERT_STRING_EQUAL(owner, "us");
  CU_ASSERT_PTR_NULL(op_of(k, "us"));
  char *l = listing(k);
  CU_ASSERT_PTR_NOT_NULL(strstr(l, "\"synced\":[\"us\"],\"unsynced\":[\"eu\"]"));
  CU_ASSERT_PTR_NOT_NULL(strstr(
      l, "\"us\":{\"synced\":[\"`shop_3`.`orders_01`\"],\"unsynced\":[\"`shop_3`.`orders_02`\"]}"));
  CU_ASSERT_PTR_NOT_NULL(strstr(l, "\"state\":\"waiting\""));
  CU_ASSERT_PTR_NOT_NULL(strstr(l, "\"owner\":\"us\""));
  free(l);
  put(k, "eu", EU, 2);
  CU_ASSERT_EQUAL(state(k, owner), DMH_SHARD_SYNCED);
  CU_ASSERT_STRING_EQUAL(owner, "us");
  const dmh_shard_oprec *o = op_of(k, "us");
  CU_ASSERT_PTR_NOT_NULL_FATAL(o);
  CU_ASSERT_TRUE(o->exec);
  CU_ASSERT_STRING_EQUAL(o->lock_id, ID);
  CU_ASSERT_STRING_EQUAL(o->ddls[0], ADD[0]);
  CU_ASSERT_PTR_NULL(op_of(k, "eu")); /* skips only after the owner's done */
  done(k, "us");
  CU_ASSERT_EQUAL(state(k, NULL), DMH_SHARD_EXECUTED);
  o = op_of(k, "eu");
  CU_ASSERT_PTR_NOT_NULL_FATAL(o);
  CU_ASSERT_FALSE(o->exec);
  uint64_t skip_id = o->id;
  done(k, "eu");
  CU_ASSERT_EQUAL(state(k, NULL), -1); /* resolved: infos and operations deleted */
  json_object *j = dmh_shard_to_json(k, TASK);
  json_object *infos = NULL, *ops = NULL;
  CU_ASSERT_TRUE(json_object_object_get_ex(j, "infos", &infos));
  CU_ASSERT_TRUE(json_object_object_get_ex(j, "ops", &ops));
  CU_ASSERT_EQUAL(json_object_array_length(infos), 0);
  CU_ASSERT_EQUAL(json_object_array_length(ops), 0);
  json_object_put(j);
  dm_error err;
  CU_ASSERT_EQUAL(dmh_shard_done(k, TASK, "eu", skip_id, &err), 0); /* a repeated done: no-op */
  dmh_shard_keeper_free(k);
}

/* DM's CompareShardingDDLs across sources: DM_ERR_SHARD_DDL_DIFF names both DDLs and both
 * sources and tables; the later source is not added. */
static void test_ddl_diff(void) {
  dmh_shard_keeper *k = dmh_shard_keeper_new();
  report(k, "eu", EU, 2);
  report(k, "us", US, 2);
  put(k, "eu", EU, 2);
  dm_error err;
  CU_ASSERT_EQUAL(put_at(k, "us", OTHER, US, 2, 200, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_SHARD_DDL_DIFF);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, ID));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "`other`"));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "`note`"));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "source us (`shop_3`.`orders_01`"));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "source eu (`shop_1`.`orders_01`"));
  CU_ASSERT_EQUAL(state(k, NULL), DMH_SHARD_WAITING);
  /* the same set in another order is the same DDLs */
  const char *two[] = {ADD[0], ADD2[0]}, *rev[] = {ADD2[0], ADD[0]};
  dmh_shard_keeper *k2 = dmh_shard_keeper_new();
  report(k2, "eu", EU, 2);
  report(k2, "us", US, 2);
  dm_shard_info a = {.target_schema = "shop",
                     .target_table = "orders",
                     .ddls = two,
                     .n_ddls = 2,
                     .tables = EU,
                     .n_tables = 2};
  dm_shard_info b = a;
  b.ddls = rev;
  b.tables = US;
  CU_ASSERT_EQUAL(dmh_shard_put(k2, TASK, "eu", &a, &err), 0);
  CU_ASSERT_EQUAL(dmh_shard_put(k2, TASK, "us", &b, &err), 0);
  CU_ASSERT_EQUAL(dmh_shard_lock_state(k2, ID, NULL, 0), DMH_SHARD_SYNCED);
  dmh_shard_keeper_free(k2);
  dmh_shard_keeper_free(k);
}

/* A source reporting tables while the lock waits becomes a member it waits for; a source whose
 * tables all left (DROP TABLE) is not waited for any more. */
static void test_join_and_leave(void) {
  dmh_shard_keeper *k = dmh_shard_keeper_new();
  report(k, "eu", EU, 2);
  report(k, "us", US, 2);
  put(k, "eu", EU, 2);
  report(k, "as", AS, 1); /* joins mid-lock */
  put(k, "us", US, 2);
  CU_ASSERT_EQUAL(state(k, NULL), DMH_SHARD_WAITING);
  char *l = listing(k);
  CU_ASSERT_PTR_NOT_NULL(strstr(l, "\"unsynced\":[\"as\"]"));
  free(l);
  report(k, "as", NULL, 0); /* its table was dropped: it leaves, the lock is complete */
  CU_ASSERT_EQUAL(state(k, NULL), DMH_SHARD_SYNCED);
  CU_ASSERT_PTR_NOT_NULL(op_of(k, "eu"));
  dmh_shard_keeper_free(k);
}

/* The same info put again (a restart of the sync) changes nothing; the source's next DDL put
 * while its lock is resolving waits and opens the next lock (DM's sequence sharding). */
static void test_reput_and_next_ddl(void) {
  dmh_shard_keeper *k = dmh_shard_keeper_new();
  dm_error err;
  report(k, "eu", EU, 2);
  report(k, "us", US, 2);
  put(k, "eu", EU, 2);
  put(k, "eu", EU, 2);
  put(k, "us", US, 2);
  uint64_t id = op_of(k, "eu")->id;
  put(k, "eu", EU, 2); /* re-put while its operation is out: the same operation */
  CU_ASSERT_EQUAL(op_of(k, "eu")->id, id);
  done(k, "eu");
  /* eu runs on and reaches its next DDL before us is done with the first */
  CU_ASSERT_EQUAL(put_at(k, "eu", ADD2, EU, 2, 300, &err), 0);
  CU_ASSERT_EQUAL(state(k, NULL), DMH_SHARD_EXECUTED);
  CU_ASSERT_PTR_NULL(op_of(k, "eu"));
  done(k, "us");
  char owner[64];
  CU_ASSERT_EQUAL(state(k, owner), DMH_SHARD_WAITING); /* the next lock */
  CU_ASSERT_STRING_EQUAL(owner, "eu");
  char *l = listing(k);
  CU_ASSERT_PTR_NOT_NULL(strstr(l, "`n2`"));
  free(l);
  put_at(k, "us", ADD2, US, 2, 400, &err);
  const dmh_shard_oprec *o = op_of(k, "eu");
  CU_ASSERT_PTR_NOT_NULL_FATAL(o);
  CU_ASSERT_STRING_EQUAL(o->ddls[0], ADD2[0]);
  CU_ASSERT_TRUE(o->id > id);
  dmh_shard_keeper_free(k);
}

/* DM's UnlockLock: unknown ID, owner not arrived, forced synced with the arrived sources only,
 * a second unlock while resolving, revert, and a late source opening a new lock. */
static void test_unlock(void) {
  dmh_shard_keeper *k = dmh_shard_keeper_new();
  dm_error err;
  report(k, "eu", EU, 2);
  report(k, "us", US, 2);
  report(k, "as", AS, 1);
  put(k, "eu", EU, 2);
  put(k, "as", AS, 1);
  CU_ASSERT_EQUAL(dmh_shard_unlock(k, "shop-`x`.`y`", NULL, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_SHARD_LOCK_NOT_FOUND);
  CU_ASSERT_EQUAL(dmh_shard_unlock(k, ID, "us", &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_SHARD_NOT_WAITING);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "eu, as"));
  /* unlock with -o as, then revert (the owner did not do it in time) */
  CU_ASSERT_EQUAL(dmh_shard_unlock(k, ID, "as", &err), 0);
  char owner[64];
  CU_ASSERT_EQUAL(state(k, owner), DMH_SHARD_SYNCED);
  CU_ASSERT_STRING_EQUAL(owner, "as");
  CU_ASSERT_TRUE(op_of(k, "as")->exec);
  CU_ASSERT_EQUAL(dmh_shard_unlock(k, ID, NULL, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_SHARD_LOCK_RESOLVING);
  dmh_shard_unlock_revert(k, ID);
  CU_ASSERT_EQUAL(state(k, owner), DMH_SHARD_WAITING);
  CU_ASSERT_STRING_EQUAL(owner, "eu");
  CU_ASSERT_PTR_NULL(op_of(k, "as"));
  /* unlock for real: eu executes, as skips, us is left out */
  CU_ASSERT_EQUAL(dmh_shard_unlock(k, ID, NULL, &err), 0);
  char *l = listing(k);
  CU_ASSERT_PTR_NOT_NULL(strstr(l, "\"unsynced\":[]"));
  free(l);
  done(k, "eu");
  CU_ASSERT_PTR_NULL(op_of(k, "us"));
  done(k, "as");
  CU_ASSERT_EQUAL(state(k, NULL), -1);
  /* us arrives later at the same DDL: a new lock, waiting for the others (DM's behaviour) */
  put(k, "us", US, 2);
  CU_ASSERT_EQUAL(state(k, owner), DMH_SHARD_WAITING);
  CU_ASSERT_STRING_EQUAL(owner, "us");
  dmh_shard_keeper_free(k);
}

/* --force-remove after a failed owner: skips to the others at once, then the lock is removed. */
static void test_force_remove(void) {
  dmh_shard_keeper *k = dmh_shard_keeper_new();
  dm_error err;
  report(k, "eu", EU, 2);
  report(k, "us", US, 2);
  report(k, "as", AS, 1);
  put(k, "eu", EU, 2);
  put(k, "as", AS, 1);
  CU_ASSERT_EQUAL(dmh_shard_unlock(k, ID, NULL, &err), 0);
  dmh_shard_unlock_skip_rest(k, ID);
  const dmh_shard_oprec *o = op_of(k, "as");
  CU_ASSERT_PTR_NOT_NULL_FATAL(o);
  CU_ASSERT_FALSE(o->exec);
  dmh_shard_remove_lock(k, ID);
  CU_ASSERT_EQUAL(state(k, NULL), -1);
  CU_ASSERT_PTR_NULL(op_of(k, "eu"));
  CU_ASSERT_TRUE(dmh_shard_has_task(k, TASK)); /* the reported tables stay */
  dmh_shard_remove_task(k, TASK);
  CU_ASSERT_FALSE(dmh_shard_has_task(k, TASK));
  dmh_shard_keeper_free(k);
}

/* DM's doc.go order with a restart (records through JSON into a new keeper) between every two
 * steps: 1 infos put, 2 the lock built, 3 exec to the owner, 4-5 the owner done, 6 skips, 7 the
 * others done, 8 deleted. The operation ids never change across a reload and a done operation is
 * never handed out again. */
static void test_recover_each_step(void) {
  dmh_shard_keeper *k = dmh_shard_keeper_new();
  report(k, "eu", EU, 2);
  report(k, "us", US, 2);
  report(k, "as", AS, 1);
  k = reload(k);
  put(k, "eu", EU, 2);
  k = reload(k);
  char owner[64];
  CU_ASSERT_EQUAL(state(k, owner), DMH_SHARD_WAITING);
  CU_ASSERT_STRING_EQUAL(owner, "eu");
  put(k, "us", US, 2);
  put(k, "eu", EU, 2); /* eu restarted and put its info again */
  k = reload(k);
  CU_ASSERT_EQUAL(state(k, owner), DMH_SHARD_WAITING);
  CU_ASSERT_STRING_EQUAL(owner, "eu"); /* arrival order survives */
  put(k, "as", AS, 1);
  CU_ASSERT_EQUAL(state(k, NULL), DMH_SHARD_SYNCED);
  uint64_t exec_id = op_of(k, "eu")->id;
  k = reload(k);
  CU_ASSERT_EQUAL(state(k, NULL), DMH_SHARD_SYNCED);
  CU_ASSERT_EQUAL(op_of(k, "eu")->id, exec_id);
  CU_ASSERT_PTR_NULL(op_of(k, "us"));
  done(k, "eu");
  k = reload(k);
  CU_ASSERT_EQUAL(state(k, NULL), DMH_SHARD_EXECUTED);
  CU_ASSERT_PTR_NULL(op_of(k, "eu")); /* done: never sent again */
  const dmh_shard_oprec *s1 = op_of(k, "us");
  CU_ASSERT_PTR_NOT_NULL_FATAL(s1);
  CU_ASSERT_TRUE(s1->id > exec_id);
  uint64_t s1_id = s1->id;
  done(k, "us");
  k = reload(k);
  CU_ASSERT_PTR_NULL(op_of(k, "us"));
  CU_ASSERT_PTR_NOT_NULL(op_of(k, "as"));
  done(k, "as");
  k = reload(k);
  CU_ASSERT_EQUAL(state(k, NULL), -1);
  /* the next lock's operation ids stay above the ones handed out before the reloads */
  dm_error err;
  CU_ASSERT_EQUAL(put_at(k, "eu", ADD2, EU, 2, 900, &err), 0);
  CU_ASSERT_EQUAL(put_at(k, "us", ADD2, US, 2, 900, &err), 0);
  CU_ASSERT_EQUAL(put_at(k, "as", ADD2, AS, 1, 900, &err), 0);
  CU_ASSERT_TRUE(op_of(k, "eu")->id > s1_id);
  dmh_shard_keeper_free(k);
}

/* A kill between two writes of the coordinator leaves records a step short: loading finishes
 * the step (all arrived but no exec; exec done but no skips; all done but not deleted). */
static void test_recover_cut_short(void) {
  const char *text =
      "{\"version\":1,\"nextOpID\":7,\"sources\":[],\"infos\":["
      "{\"task\":\"shop\",\"source\":\"eu\",\"targetSchema\":\"shop\",\"targetTable\":\"orders\","
      "\"ddls\":[\"A\"],\"tables\":[{\"schema\":\"s\",\"table\":\"t\"}],"
      "\"pos\":{\"name\":\"b.1\",\"pos\":4,\"gtid\":\"\"},\"queued\":false},"
      "{\"task\":\"shop\",\"source\":\"us\",\"targetSchema\":\"shop\",\"targetTable\":\"orders\","
      "\"ddls\":[\"A\"],\"tables\":[{\"schema\":\"s\",\"table\":\"u\"}],"
      "\"pos\":{\"name\":\"b.1\",\"pos\":4,\"gtid\":\"\"},\"queued\":false}],"
      "\"ops\":[{\"lockID\":\"shop-`shop`.`orders`\",\"task\":\"shop\",\"source\":\"eu\","
      "\"targetSchema\":\"shop\",\"targetTable\":\"orders\",\"id\":6,\"exec\":true,"
      "\"ddls\":[\"A\"],\"done\":true}]}";
  json_object *j = json_tokener_parse(text);
  CU_ASSERT_PTR_NOT_NULL_FATAL(j);
  dmh_shard_keeper *k = dmh_shard_keeper_new();
  dm_error err;
  CU_ASSERT_EQUAL(dmh_shard_load_json(k, j, &err), 0);
  const dmh_shard_oprec *o = op_of(k, "us");
  CU_ASSERT_PTR_NOT_NULL_FATAL(o); /* the skip the kill cut off */
  CU_ASSERT_FALSE(o->exec);
  CU_ASSERT_EQUAL(o->id, 7);
  CU_ASSERT_EQUAL(state(k, NULL), DMH_SHARD_EXECUTED);
  json_object_put(j);
  dmh_shard_keeper_free(k);
}

static void test_load_refuses_bad_file(void) {
  const char *bad[] = {
      "{\"version\":2,\"nextOpID\":1,\"sources\":[],\"infos\":[],\"ops\":[]}",
      "{\"version\":1,\"nextOpID\":1,\"sources\":[],\"infos\":[{\"task\":\"shop\"}],\"ops\":[]}",
      "{\"version\":1,\"nextOpID\":1,\"sources\":[{\"task\":\"shop\",\"source\":\"eu\","
      "\"targetSchema\":\"s\",\"targetTable\":\"t\",\"tables\":[{\"schema\":1}]}],\"infos\":[],"
      "\"ops\":[]}",
  };
  const char *why[] = {"version 2", "infos[0].source", "sources[0].schema"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    json_object *j = json_tokener_parse(bad[i]);
    dmh_shard_keeper *k = dmh_shard_keeper_new();
    dm_error err;
    CU_ASSERT_EQUAL(dmh_shard_load_json(k, j, &err), -1);
    CU_ASSERT_EQUAL(err.code, DM_ERR_STATE);
    if (!strstr(err.message, why[i]))
      printf("\n%zu: %s\n", i, err.message);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, why[i]));
    CU_ASSERT_FALSE(dmh_shard_has_task(k, "shop"));
    json_object_put(j);
    dmh_shard_keeper_free(k);
  }
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"lock_id_and_compare", test_lock_id_and_compare},
      {"compare_canonical", test_compare_canonical},
      {"arrivals_owner_states", test_arrivals_owner_states},
      {"ddl_diff", test_ddl_diff},
      {"join_and_leave", test_join_and_leave},
      {"reput_and_next_ddl", test_reput_and_next_ddl},
      {"unlock", test_unlock},
      {"force_remove", test_force_remove},
      {"recover_each_step", test_recover_each_step},
      {"recover_cut_short", test_recover_cut_short},
      {"load_refuses_bad_file", test_load_refuses_bad_file},
  };
  return dmh_cunit_run("shard_lock", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
