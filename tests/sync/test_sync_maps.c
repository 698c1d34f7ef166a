/*
 * The sync's table maps by id (plugins/sync/sync_maps.c), without a server: lookups after many
 * puts, removals and regrowth of the hash, and the eviction rule (a map lives while the
 * transactions use it).
 */
#include <CUnit/Basic.h>
#include <stdlib.h>

#include "cunit_run.h"
#include "sync_maps.h"

static dm_binlog_table_map *test_map(uint64_t id) {
  dm_binlog_table_map *tm = calloc(1, sizeof *tm);
  CU_ASSERT_PTR_NOT_NULL_FATAL(tm);
  tm->table_id = id;
  return tm;
}

/* Every id is found with its own map and signature; none of the others is. */
static void test_maps_lookup(void) {
  sync_maps m = {0};
  for (uint64_t id = 1; id <= 5000; id++)
    CU_ASSERT_FATAL(sync_maps_put(&m, test_map(id * 64), id) == 0);
  CU_ASSERT_EQUAL(m.n, 5000);
  CU_ASSERT(2 * m.n <= m.cap);
  for (uint64_t id = 1; id <= 5000; id++) {
    const sync_map_slot *s = sync_maps_get(&m, id * 64);
    CU_ASSERT_FATAL(s != NULL);
    CU_ASSERT_EQUAL(s->tm->table_id, id * 64);
    CU_ASSERT_EQUAL(s->sig, id);
    CU_ASSERT_PTR_NULL(sync_maps_get(&m, id * 64 + 1));
  }
  /* the same id again replaces the map (the old one is freed: ASan checks) */
  CU_ASSERT(sync_maps_put(&m, test_map(64), 77) == 0);
  CU_ASSERT_EQUAL(m.n, 5000);
  CU_ASSERT_EQUAL(sync_maps_get(&m, 64)->sig, 77);
  sync_maps_free(&m);
  CU_ASSERT_EQUAL(m.n, 0);
  CU_ASSERT_PTR_NULL(sync_maps_get(&m, 64));
}

/* A map survives the boundary of a transaction that used it, and goes at the next boundary
 * whose transaction did not; the others stay findable after the removals moved them. */
static void test_maps_evict(void) {
  sync_maps m = {0};
  /* transaction 1: ids 1..300 */
  for (uint64_t id = 1; id <= 300; id++)
    CU_ASSERT_FATAL(sync_maps_put(&m, test_map(id), 0) == 0);
  sync_maps_txn_end(&m);
  CU_ASSERT_EQUAL(m.n, 300);
  /* transaction 2: uses the even ids again, and maps 1001..1010 */
  for (uint64_t id = 2; id <= 300; id += 2)
    CU_ASSERT(sync_maps_get(&m, id) != NULL);
  for (uint64_t id = 1001; id <= 1010; id++)
    CU_ASSERT_FATAL(sync_maps_put(&m, test_map(id), 0) == 0);
  CU_ASSERT_EQUAL(m.peak, 310);
  sync_maps_txn_end(&m);
  CU_ASSERT_EQUAL(m.n, 160);
  for (uint64_t id = 1; id <= 300; id++)
    CU_ASSERT_EQUAL(sync_maps_get(&m, id) != NULL, id % 2 == 0);
  /* transaction 3 used the 150 even ids (the loop above), not 1001..1010; transaction 4 uses
   * none: all go, and the hash gives its room back, halving at each boundary */
  sync_maps_txn_end(&m);
  CU_ASSERT_EQUAL(m.n, 150);
  CU_ASSERT_PTR_NULL(sync_maps_get(&m, 1001));
  sync_maps_txn_end(&m);
  CU_ASSERT_EQUAL(m.n, 0);
  for (int i = 0; i < 8; i++)
    sync_maps_txn_end(&m);
  CU_ASSERT_EQUAL(m.cap, 64);
  sync_maps_free(&m);
}

/* Many rounds of new ids for the same 50 tables (FLUSH TABLES): the live maps stay at most the
 * tables of two transactions, and every live map is found. */
static void test_maps_churn(void) {
  sync_maps m = {0};
  uint64_t next = 1;
  for (int round = 0; round < 200; round++) {
    for (int t = 0; t < 50; t++) {
      uint64_t id = next++;
      CU_ASSERT_FATAL(sync_maps_put(&m, test_map(id), 0) == 0);
      CU_ASSERT(sync_maps_get(&m, id) != NULL);
    }
    sync_maps_txn_end(&m);
    CU_ASSERT(m.n <= 100);
  }
  CU_ASSERT(m.peak <= 100);
  sync_maps_free(&m);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"lookup by id", test_maps_lookup},
      {"eviction at transaction boundaries", test_maps_evict},
      {"churn of new ids stays bounded", test_maps_churn},
  };
  return dmh_cunit_run("sync table maps", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
