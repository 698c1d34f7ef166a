/* The SDK's binlog position helpers (sdk/src/position.c). */
#include <CUnit/Basic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cunit_run.h"
#include "dmhost/position.h"
#include "dmhost/sdk.h"

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

/* Issue 13, item 5: the MariaDB set as one SDK type (the relay and the sync each kept a copy of
 * its update, parse and format). */
static void test_mariadb_set(void) {
  dm_mariadb_gtid_set s;
  char out[256];
  CU_ASSERT_EQUAL(dm_mariadb_gtid_set_parse(&s, " 2-1-9, 0-1-100,\n1-2-7 "), 0);
  CU_ASSERT_EQUAL(s.n, 3);
  dm_mariadb_gtid_set_format(&s, out, sizeof out);
  CU_ASSERT_STRING_EQUAL(out, "0-1-100,1-2-7,2-1-9"); /* sorted by domain */
  /* a domain's last GTID replaces its entry, whatever the server */
  CU_ASSERT_EQUAL(dm_mariadb_gtid_set_update(&s, 1, 3, 8), 0);
  CU_ASSERT_EQUAL(dm_mariadb_gtid_set_update(&s, 5, 1, 1), 0);
  dm_mariadb_gtid_set_format(&s, out, sizeof out);
  CU_ASSERT_STRING_EQUAL(out, "0-1-100,1-3-8,2-1-9,5-1-1");
  /* an item that does not fit is left out whole */
  dm_mariadb_gtid_set_format(&s, out, 14);
  CU_ASSERT_STRING_EQUAL(out, "0-1-100,1-3-8");
  dm_mariadb_gtid_set_format(&s, out, 13);
  CU_ASSERT_STRING_EQUAL(out, "0-1-100");
  CU_ASSERT_EQUAL(dm_mariadb_gtid_set_parse(&s, ""), 0);
  CU_ASSERT_EQUAL(s.n, 0);
  static const char *const bad[] = {"0-1",
                                    "0-1-x",
                                    "0-1-1;",
                                    "4294967296-1-1",
                                    "0-4294967296-1",
                                    "a-1-1",
                                    "0-1-99999999999999999999999"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CU_ASSERT_EQUAL(dm_mariadb_gtid_set_parse(&s, bad[i]), -1);
    CU_ASSERT_EQUAL(s.n, 0);
  }
  /* more domains than the set holds: refused, not cut */
  memset(&s, 0, sizeof s);
  for (uint32_t d = 0; d < DM_MARIADB_GTID_DOMAINS; d++)
    CU_ASSERT_EQUAL(dm_mariadb_gtid_set_update(&s, d, 1, 1), 0);
  CU_ASSERT_EQUAL(dm_mariadb_gtid_set_update(&s, 999, 1, 1), -1);
  CU_ASSERT_EQUAL(s.n, DM_MARIADB_GTID_DOMAINS);
  CU_ASSERT_EQUAL(dm_mariadb_gtid_set_update(&s, 3, 2, 2), 0); /* a known domain still moves */
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

/* ---- the MySQL GTID set type (issue 12: parse, canonical text, add, union, contains) ---- */

static const uint8_t SID1[16] = {0x3e, 0x11, 0xfa, 0x47, 0x71, 0xca, 0x11, 0xe1,
                                 0x9e, 0x33, 0xc8, 0x0a, 0xa9, 0x42, 0x95, 0x62};
static const uint8_t SID2[16] = {0x8f, 0x2b, 0x1c, 0x4d, 0x0a, 0x9e, 0x11, 0xee,
                                 0xb3, 0xf1, 0x02, 0x42, 0xac, 0x12, 0x00, 0x02};

/* Parses text and formats it back: the canonical form. */
static void test_set_canon(const char *text, const char *want) {
  dm_mysql_gtid_set s = DM_MYSQL_GTID_SET_INIT;
  dm_error err = {0};
  char buf[512];
  int rc = dm_mysql_gtid_set_parse(&s, text, &err);
  CU_ASSERT_EQUAL_FATAL(rc, 0);
  CU_ASSERT_TRUE(dm_mysql_gtid_set_format(&s, buf, sizeof buf) >= 0);
  if (strcmp(buf, want) != 0)
    fprintf(stderr, "\n  `%s` formatted `%s`, expected `%s`\n", text, buf, want);
  CU_ASSERT_STRING_EQUAL(buf, want);
  dm_mysql_gtid_set_free(&s);
}

static void test_mysql_set_parse_format(void) {
  test_set_canon("", "");
  test_set_canon(" \n", "");
  test_set_canon(U1 ":1-5", U1 ":1-5");
  test_set_canon(U1 ":7", U1 ":7");
  test_set_canon(U1 ":1-3:4-5", U1 ":1-5");         /* adjacent intervals merge */
  test_set_canon(U1 ":7-9:1-5:3-4", U1 ":1-5:7-9"); /* sorted, overlaps merged */
  test_set_canon(U1 ":1-5:6", U1 ":1-6");
  test_set_canon(U1 ":1-2:4:6-8:3", U1 ":1-4:6-8");
  test_set_canon(U1 ":1-2:4-5:1-10", U1 ":1-10");               /* one swallowing several */
  test_set_canon(U2 ":1-3," U1 ":1-5", U1 ":1-5," U2 ":1-3");   /* uuids sorted */
  test_set_canon(U1 ":1-5,\n" U2 ":1-3", U1 ":1-5," U2 ":1-3"); /* SHOW MASTER STATUS form */
  test_set_canon(U1 ":1-5," U1 ":6-9", U1 ":1-9");              /* a uuid repeated */
  test_set_canon("3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5", U1 ":1-5"); /* upper case */
  test_set_canon("3e11fa4771ca11e19e33c80aa9429562:1-5", U1 ":1-5");     /* no dashes */
  test_set_canon(U1 ":1-18446744073709551615", U1 ":1-18446744073709551615");

  static const char *const bad[] = {"0-1-5",
                                    U1,
                                    U1 ":",
                                    U1 ":0",
                                    U1 ":0-3",
                                    U1 ":5-3",
                                    U1 ":x",
                                    U1 ":1-",
                                    U1 ":1;",
                                    "3e11fa47-71ca-11e1-9e33-c80aa942956:1", /* a digit short */
                                    "3e11fa47_71ca-11e1-9e33-c80aa9429562:1",
                                    U1 ":1-5,,",
                                    U1 ":1," U1,
                                    U1 ":99999999999999999999999"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    dm_mysql_gtid_set s = DM_MYSQL_GTID_SET_INIT;
    dm_error err = {0};
    CU_ASSERT_EQUAL(dm_mysql_gtid_set_add(&s, SID1, 9), 0); /* replaced, then empty */
    int rc = dm_mysql_gtid_set_parse(&s, bad[i], &err);
    if (rc != -1)
      fprintf(stderr, "\n  `%s` parsed\n", bad[i]);
    CU_ASSERT_EQUAL(rc, -1);
    CU_ASSERT_EQUAL(err.code, DM_ERR_BINLOG_GTID_SET);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "at character"));
    CU_ASSERT_EQUAL(s.n, 0);
    dm_mysql_gtid_set_free(&s);
  }
  /* too small a buffer: -1 and "" */
  dm_mysql_gtid_set s = DM_MYSQL_GTID_SET_INIT;
  CU_ASSERT_EQUAL(dm_mysql_gtid_set_parse(&s, U1 ":1-5", NULL), 0);
  char small[20] = "x";
  CU_ASSERT_EQUAL(dm_mysql_gtid_set_format(&s, small, sizeof small), -1);
  CU_ASSERT_STRING_EQUAL(small, "");
  char fit[sizeof U1 ":1-5"];
  CU_ASSERT_EQUAL(dm_mysql_gtid_set_format(&s, fit, sizeof fit), (int)strlen(U1 ":1-5"));
  dm_mysql_gtid_set_free(&s);
}

static void test_mysql_set_add(void) {
  dm_mysql_gtid_set s = DM_MYSQL_GTID_SET_INIT;
  char buf[256];
  /* one gno after another, as a sync unit adds the GTID of each transaction it applies */
  for (uint64_t g = 1; g <= 1000; g++)
    CU_ASSERT_EQUAL(dm_mysql_gtid_set_add(&s, SID1, g), 0);
  CU_ASSERT_EQUAL(s.n, 1);
  CU_ASSERT_EQUAL(s.sids[0].n, 1); /* stays one interval */
  dm_mysql_gtid_set_format(&s, buf, sizeof buf);
  CU_ASSERT_STRING_EQUAL(buf, U1 ":1-1000");
  /* a hole, then filled */
  CU_ASSERT_EQUAL(dm_mysql_gtid_set_add(&s, SID1, 1002), 0);
  dm_mysql_gtid_set_format(&s, buf, sizeof buf);
  CU_ASSERT_STRING_EQUAL(buf, U1 ":1-1000:1002");
  CU_ASSERT_FALSE(dm_mysql_gtid_set_has(&s, SID1, 1001));
  CU_ASSERT_TRUE(dm_mysql_gtid_set_has(&s, SID1, 1002));
  CU_ASSERT_EQUAL(dm_mysql_gtid_set_add(&s, SID1, 1001), 0);
  dm_mysql_gtid_set_format(&s, buf, sizeof buf);
  CU_ASSERT_STRING_EQUAL(buf, U1 ":1-1002");
  /* adding what is there changes nothing */
  CU_ASSERT_EQUAL(dm_mysql_gtid_set_add(&s, SID1, 500), 0);
  CU_ASSERT_EQUAL(s.sids[0].n, 1);
  /* a second server, sorted before or after by its bytes */
  CU_ASSERT_EQUAL(dm_mysql_gtid_set_add(&s, SID2, 3), 0);
  dm_mysql_gtid_set_format(&s, buf, sizeof buf);
  CU_ASSERT_STRING_EQUAL(buf, U1 ":1-1002," U2 ":3");
  CU_ASSERT_TRUE(dm_mysql_gtid_set_has(&s, SID2, 3));
  CU_ASSERT_FALSE(dm_mysql_gtid_set_has(&s, SID2, 2));
  /* gno 0 and reversed ranges are refused, nothing changes */
  CU_ASSERT_EQUAL(dm_mysql_gtid_set_add(&s, SID2, 0), -1);
  CU_ASSERT_EQUAL(dm_mysql_gtid_set_add_range(&s, SID2, 9, 8), -1);
  CU_ASSERT_EQUAL(dm_mysql_gtid_set_add_range(&s, SID2, 5, 7), 0);
  CU_ASSERT_EQUAL(dm_mysql_gtid_set_add_range(&s, SID2, 1, 4), 0);
  dm_mysql_gtid_set_format(&s, buf, sizeof buf);
  CU_ASSERT_STRING_EQUAL(buf, U1 ":1-1002," U2 ":1-7");
  /* the top of the range does not wrap */
  CU_ASSERT_EQUAL(dm_mysql_gtid_set_add_range(&s, SID2, 100, UINT64_MAX), 0);
  CU_ASSERT_EQUAL(dm_mysql_gtid_set_add(&s, SID2, 50), 0);
  dm_mysql_gtid_set_format(&s, buf, sizeof buf);
  CU_ASSERT_STRING_EQUAL(buf, U1 ":1-1002," U2 ":1-7:50:100-18446744073709551615");
  dm_mysql_gtid_set_free(&s);
  CU_ASSERT_EQUAL(s.n, 0);
  CU_ASSERT_PTR_NULL(s.sids);
  dm_mysql_gtid_set_free(&s); /* twice is fine */
}

static void test_mysql_set_union_contains(void) {
  static const struct {
    const char *a, *b, *uni;
  } cases[] = {
      {"", "", ""},
      {U1 ":1-5", "", U1 ":1-5"},
      {"", U2 ":1-3", U2 ":1-3"},
      {U1 ":1-5", U1 ":6-9", U1 ":1-9"},
      {U1 ":1-5:20-30", U1 ":3-25", U1 ":1-30"},
      {U1 ":1-5:10", U1 ":7", U1 ":1-5:7:10"},
      {U2 ":1-3", U1 ":1-5", U1 ":1-5," U2 ":1-3"},
      {U1 ":1-5," U2 ":4-6", U2 ":1-3:8," U1 ":2", U1 ":1-5," U2 ":1-6:8"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    dm_mysql_gtid_set a = DM_MYSQL_GTID_SET_INIT, b = DM_MYSQL_GTID_SET_INIT;
    CU_ASSERT_EQUAL_FATAL(dm_mysql_gtid_set_parse(&a, cases[i].a, NULL), 0);
    CU_ASSERT_EQUAL_FATAL(dm_mysql_gtid_set_parse(&b, cases[i].b, NULL), 0);
    dm_mysql_gtid_set a0 = DM_MYSQL_GTID_SET_INIT;
    CU_ASSERT_EQUAL(dm_mysql_gtid_set_union(&a0, &a), 0); /* a copy */
    CU_ASSERT_EQUAL(dm_mysql_gtid_set_union(&a, &b), 0);
    char buf[256];
    dm_mysql_gtid_set_format(&a, buf, sizeof buf);
    if (strcmp(buf, cases[i].uni) != 0)
      fprintf(stderr, "\n  `%s` + `%s` = `%s`, expected `%s`\n", cases[i].a, cases[i].b, buf,
              cases[i].uni);
    CU_ASSERT_STRING_EQUAL(buf, cases[i].uni);
    /* the union holds both; each holds itself; contains agrees with the text comparison */
    CU_ASSERT_TRUE(dm_mysql_gtid_set_contains(&a, &b));
    CU_ASSERT_TRUE(dm_mysql_gtid_set_contains(&a, &a0));
    CU_ASSERT_TRUE(dm_mysql_gtid_set_contains(&b, &b));
    bool b_has_a = dm_mysql_gtid_set_contains(&b, &a0);
    CU_ASSERT_EQUAL(b_has_a ? 1 : 0, dm_gtid_set_contains(cases[i].b, cases[i].a));
    dm_mysql_gtid_set_free(&a);
    dm_mysql_gtid_set_free(&a0);
    dm_mysql_gtid_set_free(&b);
  }
  /* many servers, many intervals: against a plain bitmap of every gno */
  enum { NSID = 7, NGNO = 300 };
  static bool bits[NSID][NGNO + 1];
  memset(bits, 0, sizeof bits);
  dm_mysql_gtid_set s = DM_MYSQL_GTID_SET_INIT;
  unsigned seed = 12345;
  for (int k = 0; k < 2000; k++) {
    seed = seed * 1103515245u + 12345u;
    int sid_i = (int)(seed >> 16) % NSID;
    seed = seed * 1103515245u + 12345u;
    uint64_t lo = 1 + (seed >> 16) % NGNO;
    seed = seed * 1103515245u + 12345u;
    uint64_t hi = lo + (seed >> 16) % 4;
    if (hi > NGNO)
      hi = NGNO;
    uint8_t sid[16] = {0};
    sid[0] = (uint8_t)(0xf0 - 16 * sid_i); /* inserted in descending order */
    CU_ASSERT_EQUAL(dm_mysql_gtid_set_add_range(&s, sid, lo, hi), 0);
    for (uint64_t g = lo; g <= hi; g++)
      bits[sid_i][g] = true;
  }
  int bad = 0;
  for (int i = 0; i < NSID; i++) {
    uint8_t sid[16] = {0};
    sid[0] = (uint8_t)(0xf0 - 16 * i);
    for (uint64_t g = 1; g <= NGNO; g++)
      bad += dm_mysql_gtid_set_has(&s, sid, g) != bits[i][g];
  }
  CU_ASSERT_EQUAL(bad, 0);
  for (uint32_t i = 0; i < s.n; i++) {
    if (i)
      CU_ASSERT_TRUE(memcmp(s.sids[i - 1].sid, s.sids[i].sid, 16) < 0);
    for (uint32_t k = 1; k < s.sids[i].n; k++) /* sorted, disjoint, not adjacent */
      CU_ASSERT_TRUE(s.sids[i].iv[k - 1].hi + 1 < s.sids[i].iv[k].lo);
  }
  /* formatted and parsed back: the same set */
  static char text[65536];
  CU_ASSERT_TRUE(dm_mysql_gtid_set_format(&s, text, sizeof text) > 0);
  dm_mysql_gtid_set t = DM_MYSQL_GTID_SET_INIT;
  CU_ASSERT_EQUAL(dm_mysql_gtid_set_parse(&t, text, NULL), 0);
  CU_ASSERT_TRUE(dm_mysql_gtid_set_contains(&s, &t) && dm_mysql_gtid_set_contains(&t, &s));
  dm_mysql_gtid_set_free(&s);
  dm_mysql_gtid_set_free(&t);
}

/* What DM's binlog_file metrics publish: the numeric suffix, -1 without one. */
static void test_file_index(void) {
  CU_ASSERT_EQUAL(dm_binlog_file_index("mysql-bin.000123"), 123);
  CU_ASSERT_EQUAL(dm_binlog_file_index("a.b.1000000"), 1000000); /* after the last dot */
  CU_ASSERT_EQUAL(dm_binlog_file_index("binlog.abc"), -1);
  CU_ASSERT_EQUAL(dm_binlog_file_index("binlog.12x"), -1);
  CU_ASSERT_EQUAL(dm_binlog_file_index("binlog."), -1);
  CU_ASSERT_EQUAL(dm_binlog_file_index("binlog"), -1);
  CU_ASSERT_EQUAL(dm_binlog_file_index(""), -1);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"compare by file and offset", test_compare_file},
      {"binlog file index", test_file_index},
      {"MariaDB GTID sets", test_gtid_mariadb},
      {"MySQL GTID sets", test_gtid_mysql},
      {"unparsable and mixed sets", test_gtid_unparsable},
      {"MariaDB set: update, parse, format", test_mariadb_set},
      {"position reached", test_position_reached},
      {"is_set and format", test_is_set_and_format},
      {"MySQL GTID set: parse and canonical text", test_mysql_set_parse_format},
      {"MySQL GTID set: add", test_mysql_set_add},
      {"MySQL GTID set: union and contains", test_mysql_set_union_contains},
  };
  return dmh_cunit_run("sdk position", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
