/* The SDK's binlog position helpers (sdk/src/position.c). */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

#include "cunit_run.h"
#include "dmhost/position.h"

#define U1 "3e11fa47-71ca-11e1-9e33-c80aa9429562"
#define U2 "8f2b1c4d-0a9e-11ee-b3f1-0242ac120002"

static dm_position test_pos(const char *name, uint64_t pos, const char *gtid) {
  dm_position p;
  memset(&p, 0, sizeof p);
  snprintf(p.name, sizeof p.name, "%s", name);
  p.pos = pos;
  snprintf(p.gtid, sizeof p.gtid, "%s", gtid);
  return p;
}

static int test_sign(int v) {
  return (v > 0) - (v < 0);
}

static void test_compare_file(void) {
  static const struct {
    const char *a;
    uint64_t pa;
    const char *b;
    uint64_t pb;
    int want;
  } cases[] = {
      {"mysql-bin.000010", 4, "mysql-bin.000009", 9999, 1},
      {"mysql-bin.000009", 9999, "mysql-bin.000010", 4, -1},
      {"mysql-bin.999999", 4, "mysql-bin.1000000", 4, -1}, /* by number, not by text */
      {"mysql-bin.000003", 120, "mysql-bin.000003", 120, 0},
      {"mysql-bin.000003", 121, "mysql-bin.000003", 120, 1},
      {"mysql-bin.000003", 4, "mysql-bin.000003", 120, -1},
      {"", 500, "", 4, 0}, /* no file on either side: equal, offsets ignored */
      {"", 500, "mysql-bin.000001", 4, -1},
      {"mysql-bin.000001", 4, "", 500, 1},
      {"binlog.abc", 4, "binlog.abd", 4, -1}, /* no numeric suffix: by name */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    dm_position a = test_pos(cases[i].a, cases[i].pa, "");
    dm_position b = test_pos(cases[i].b, cases[i].pb, "");
    int got = test_sign(dm_position_compare_file(&a, &b));
    if (got != cases[i].want)
      fprintf(stderr, "\n  case %zu: (%s, %llu) vs (%s, %llu) gave %d\n", i, cases[i].a,
              (unsigned long long)cases[i].pa, cases[i].b, (unsigned long long)cases[i].pb, got);
    CU_ASSERT_EQUAL(got, cases[i].want);
  }
}

typedef struct {
  const char *have;
  const char *want;
  int result;
} test_gtid_case;

static void test_gtid_cases(const test_gtid_case *cases, size_t n) {
  for (size_t i = 0; i < n; i++) {
    int got = dm_gtid_set_contains(cases[i].have, cases[i].want);
    if (got != cases[i].result)
      fprintf(stderr, "\n  contains(\"%s\", \"%s\") = %d, expected %d\n", cases[i].have,
              cases[i].want, got, cases[i].result);
    CU_ASSERT_EQUAL(got, cases[i].result);
  }
}

static void test_gtid_mariadb(void) {
  static const test_gtid_case cases[] = {
      {"0-1-100", "0-1-100", 1},             /* equal */
      {"0-1-101", "0-1-100", 1},             /* bigger */
      {"0-1-99", "0-1-100", 0},              /* smaller */
      {"0-2-100", "0-1-100", 1},             /* the server id does not order events */
      {"0-1-100,1-2-7", "1-2-7,0-1-50", 1},  /* multi-domain, any order */
      {"0-1-100,1-2-6", "0-1-100,1-2-7", 0}, /* one domain behind */
      {"0-1-100", "0-1-100,1-2-7", 0},       /* missing domain */
      {"0-1-100,1-2-7,2-3-1", "0-1-100", 1}, /* extra domains in have */
      {"0-1-100", "", 1},                    /* empty want */
      {"", "", 1},
      {"", "0-1-1", 0},                  /* empty have */
      {" 0-1-100 , 1-2-7 ", "1-2-7", 1}, /* blanks around items */
      {"10-1-5", "1-1-5", 0},            /* domain 10 is not domain 1 */
  };
  test_gtid_cases(cases, sizeof cases / sizeof cases[0]);
}

static void test_gtid_mysql(void) {
  static const test_gtid_case cases[] = {
      {U1 ":1-10", U1 ":1-10", 1},
      {U1 ":1-10", U1 ":3-7", 1},
      {U1 ":1-10", U1 ":5", 1},
      {U1 ":1-10", U1 ":1-11", 0},
      {U1 ":2-10", U1 ":1-5", 0},
      {U1 ":1-5:6-10", U1 ":3-8", 1},        /* a union of adjacent intervals covers */
      {U1 ":6-10:1-5", U1 ":1-10", 1},       /* in any order */
      {U1 ":1-5," U1 ":6-10", U1 ":2-9", 1}, /* the uuid repeated */
      {U1 ":1-5:7-10", U1 ":1-10", 0},       /* a gap at 6 */
      {U1 ":1-5:7-10", U1 ":1-5:7-8", 1},    /* the gap not wanted */
      {U1 ":1-5:7-10", U1 ":6", 0},
      {U1 ":1-10," U2 ":1-3", U2 ":1-3," U1 ":4-9", 1}, /* several servers */
      {U1 ":1-10," U2 ":1-2", U2 ":1-3", 0},
      {U1 ":1-10", U2 ":1", 0}, /* a server missing from have */
      {U1 ":1-10", "", 1},      /* empty want */
      {"", U1 ":1", 0},
      {U1 ":1-10,\n" U2 ":1-3", U2 ":2", 1}, /* as SHOW MASTER STATUS prints it */
      {"3E11FA47-71CA-11E1-9E33-C80AA9429562:1-10", U1 ":4", 1}, /* case of the uuid */
  };
  test_gtid_cases(cases, sizeof cases / sizeof cases[0]);
}

static void test_gtid_unparsable(void) {
  static const test_gtid_case cases[] = {
      {"0-1-100", U1 ":1-5", -1}, /* mixed flavors */
      {U1 ":1-5", "0-1-100", -1},
      {"hello", "0-1-1", -1},
      {"0-1-1", "hello", -1},
      {"0-1", "0-1-1", -1},
      {"0-1-1;", "0-1-1", -1},
      {U1 ":", U1 ":1", -1},
      {U1 ":5-3", U1 ":4", -1}, /* interval backwards */
      {U1 ":x-3", U1 ":1", -1},
      {":1-5", U1 ":1", -1},                        /* no uuid */
      {"0-1-5," U1 ":1-5", U1 ":1", -1},            /* two flavors in one set */
      {"0-1-99999999999999999999999", "0-1-1", -1}, /* beyond 64 bits */
  };
  test_gtid_cases(cases, sizeof cases / sizeof cases[0]);
  CU_ASSERT_EQUAL(dm_gtid_set_contains(NULL, NULL), 1);
  CU_ASSERT_EQUAL(dm_gtid_set_contains(NULL, "0-1-1"), 0);
}

static void test_position_reached(void) {
  static const struct {
    dm_position reached, target;
    bool want;
    const char *why;
  } cases[] = {
      {{"mysql-bin.000002", 4, "0-1-100"},
       {"mysql-bin.000003", 4, "0-1-100"},
       true,
       "GTID preferred: contained although the file is behind"},
      {{"mysql-bin.000009", 4, "0-1-99"},
       {"mysql-bin.000003", 4, "0-1-100"},
       false,
       "GTID preferred: not contained although the file is ahead"},
      {{"mysql-bin.000010", 4, ""},
       {"mysql-bin.000009", 900, "0-1-100"},
       true,
       "no GTID on one side: by file"},
      {{"mysql-bin.000003", 100, "0-1-100"},
       {"mysql-bin.000003", 120, ""},
       false,
       "no GTID on one side: by offset"},
      {{"mysql-bin.000003", 120, ""}, {"mysql-bin.000003", 120, ""}, true, "same place"},
      {{"mysql-bin.000004", 4, U1 ":1-5"},
       {"mysql-bin.000003", 4, "0-1-100"},
       true,
       "mixed flavors: by file"},
      {{"", 0, ""}, {"", 0, ""}, true, "no target"},
      {{"", 0, ""}, {"mysql-bin.000001", 4, ""}, false, "nothing reached yet"},
      {{"", 0, U1 ":1-10"}, {"", 0, U1 ":1-9"}, true, "GTID only"},
      {{"", 0, U1 ":1-8"}, {"", 0, U1 ":1-9"}, false, "GTID only, behind"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    bool got = dm_position_reached(&cases[i].reached, &cases[i].target);
    if (got != cases[i].want)
      fprintf(stderr, "\n  %s: got %d\n", cases[i].why, got);
    CU_ASSERT_EQUAL(got, cases[i].want);
  }
}

static void test_is_set_and_format(void) {
  dm_position p = test_pos("", 0, "");
  CU_ASSERT_FALSE(dm_position_is_set(&p));
  CU_ASSERT_FALSE(dm_position_is_set(NULL));
  p = test_pos("", 0, "0-1-1");
  CU_ASSERT_TRUE(dm_position_is_set(&p));
  p = test_pos("mysql-bin.000003", 1234, "");
  CU_ASSERT_TRUE(dm_position_is_set(&p));
  char buf[64];
  CU_ASSERT_PTR_EQUAL(dm_position_format(&p, buf, sizeof buf), buf);
  CU_ASSERT_STRING_EQUAL(buf, "(mysql-bin.000003, 1234)");
  dm_position_format(&p, buf, 8);
  CU_ASSERT_STRING_EQUAL(buf, "(mysql-");
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"compare by file and offset", test_compare_file},
      {"MariaDB GTID sets", test_gtid_mariadb},
      {"MySQL GTID sets", test_gtid_mysql},
      {"unparsable and mixed sets", test_gtid_unparsable},
      {"position reached", test_position_reached},
      {"is_set and format", test_is_set_and_format},
  };
  return dmh_cunit_run("sdk position", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
