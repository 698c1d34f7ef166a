/*
 * The size text of dm_setting_size (dmhost/settings.h, issue 13 item 4): digits with an optional
 * K, M or G (powers of 1024); anything else, and what does not fit in int64_t, refused. The
 * settings themselves are read end to end through the host in tests/dump (bad setting).
 */
#include <CUnit/Basic.h>
#include <stdint.h>
#include <stdio.h>

#include "cunit_run.h"
#include "dmhost/settings.h"

static void test_size_parse(void) {
  static const struct {
    const char *s;
    int64_t v;
  } good[] = {{"0", 0},
              {"1024", 1024},
              {"4k", 4096},
              {"4K", 4096},
              {"64M", 64LL << 20},
              {"2g", 2LL << 30},
              {"9223372036854775807", INT64_MAX},
              {"8589934591G", 8589934591LL << 30},
              {"3t", 3LL << 40},
              {"8388607T", 8388607LL << 40}};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    int64_t v = -1;
    CU_ASSERT_EQUAL(dm_size_parse(good[i].s, &v), 0);
    CU_ASSERT_EQUAL(v, good[i].v);
  }
  static const char *const bad[] = {"",
                                    "K",
                                    "-1",
                                    " 1",
                                    "1 ",
                                    "1KB",
                                    "1P",
                                    "1.5M",
                                    "9223372036854775808",
                                    "8589934592G",
                                    "8388608T",
                                    "0x10"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int64_t v = 7;
    CU_ASSERT_EQUAL(dm_size_parse(bad[i], &v), -1);
    CU_ASSERT_EQUAL(v, 7);
  }
  int64_t v;
  CU_ASSERT_EQUAL(dm_size_parse(NULL, &v), -1);
}

/* Go's time.ParseDuration text (DM's safe-mode-duration), in ms: what DM takes, what it refuses
 * ("1": a number without a unit), and a negative one (DM takes it as "no safe mode"; refused). */
static void test_duration_parse(void) {
  static const struct {
    const char *s;
    int64_t ms;
  } good[] = {{"0", 0},         {"0s", 0},         {"+0", 0},         {"60s", 60000},
              {"1m30s", 90000}, {"1.5h", 5400000}, {"500ms", 500},    {"1h2m3s4ms", 3723004},
              {"1ns", 1},       {"1500us", 1},     {"2\xc2\xb5s", 1}, {".5s", 500},
              {"1.s", 1000},    {"10m", 600000},   {"0.001s", 1},     {"3s0ms", 3000}};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    int64_t v = -1;
    CU_ASSERT_EQUAL(dm_duration_parse(good[i].s, &v), 0);
    if (v != good[i].ms)
      fprintf(stderr, "%s: %lld, want %lld\n", good[i].s, (long long)v, (long long)good[i].ms);
    CU_ASSERT_EQUAL(v, good[i].ms);
  }
  static const char *const bad[] = {"",    "1",  "60",     "s",  "-1s",  "1x",         "1 s", " 1s",
                                    "1s ", ".s", "1.2.3s", "1S", "1sec", "300000000h", "1d"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int64_t v = 7;
    CU_ASSERT_EQUAL(dm_duration_parse(bad[i], &v), -1);
    CU_ASSERT_EQUAL(v, 7);
  }
  int64_t v;
  CU_ASSERT_EQUAL(dm_duration_parse(NULL, &v), -1);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"size text: suffixes, overflow, junk", test_size_parse},
      {"duration text: Go's units, refusals", test_duration_parse}};
  return dmh_cunit_run("sdk_settings", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
