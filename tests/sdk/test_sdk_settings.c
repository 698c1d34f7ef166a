/*
 * The size text of dm_setting_size (dmhost/settings.h, issue 13 item 4): digits with an optional
 * K, M or G (powers of 1024); anything else, and what does not fit in int64_t, refused. The
 * settings themselves are read end to end through the host in tests/dump (bad setting).
 */
#include <CUnit/Basic.h>
#include <stdint.h>

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
              {"8589934591G", 8589934591LL << 30}};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    int64_t v = -1;
    CU_ASSERT_EQUAL(dm_size_parse(good[i].s, &v), 0);
    CU_ASSERT_EQUAL(v, good[i].v);
  }
  static const char *const bad[] = {
      "", "K", "-1", " 1", "1 ", "1KB", "1T", "1.5M", "9223372036854775808", "8589934592G", "0x10"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int64_t v = 7;
    CU_ASSERT_EQUAL(dm_size_parse(bad[i], &v), -1);
    CU_ASSERT_EQUAL(v, 7);
  }
  int64_t v;
  CU_ASSERT_EQUAL(dm_size_parse(NULL, &v), -1);
}

int main(void) {
  static const dmh_cunit_test tests[] = {{"size text: suffixes, overflow, junk", test_size_parse}};
  return dmh_cunit_run("sdk_settings", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
