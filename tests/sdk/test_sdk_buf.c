/*
 * The SDK's text buffer (dm_buf in dmhost/buf.h), the one of the sync unit and the host's verify
 * (each had its own copy before SDK 1.8): growth past the first allocation, always NUL-terminated,
 * printf longer than its stack buffer, reset keeping the memory, and a failure that stays said
 * (oom) until the reset, the buffer left as it was.
 */
#include <CUnit/Basic.h>
#include <stdint.h>
#include <string.h>

#include "cunit_run.h"
#include "dmhost/buf.h"

static void test_buf_grow(void) {
  dm_buf b = {0};
  CU_ASSERT_EQUAL(dm_buf_puts(&b, ""), 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(b.p);
  CU_ASSERT_STRING_EQUAL(b.p, "");
  /* 10,000 bytes through every append, past the first 4096 of the allocation */
  for (int i = 0; i < 1000; i++) {
    CU_ASSERT_EQUAL(dm_buf_putc(&b, 'a' + i % 26), 0);
    CU_ASSERT_EQUAL(dm_buf_put(&b, "0123", 4), 0);
    CU_ASSERT_EQUAL(dm_buf_puts(&b, "xy"), 0);
    CU_ASSERT_EQUAL(dm_buf_printf(&b, "%03d", i % 1000), 0);
  }
  CU_ASSERT_EQUAL(b.len, 10000);
  CU_ASSERT(b.cap > b.len);
  CU_ASSERT_EQUAL(b.p[b.len], '\0');
  CU_ASSERT_EQUAL(memcmp(b.p, "a0123xy000b0123xy001", 20), 0);
  CU_ASSERT_EQUAL(memcmp(b.p + 9990, "l0123xy999", 10), 0);
  CU_ASSERT_FALSE(b.oom);
  dm_buf_free(&b);
  CU_ASSERT_PTR_NULL(b.p);
  CU_ASSERT_EQUAL(b.len + b.cap, 0);
}

static void test_buf_printf_long(void) {
  char big[1000];
  memset(big, 'q', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  dm_buf b = {0};
  CU_ASSERT_EQUAL(dm_buf_puts(&b, "<"), 0);
  CU_ASSERT_EQUAL(dm_buf_printf(&b, "%s|%d", big, 42), 0); /* 1002 bytes: not the stack path */
  CU_ASSERT_EQUAL(b.len, 1 + 999 + 3);
  CU_ASSERT_EQUAL(strlen(b.p), b.len);
  CU_ASSERT_STRING_EQUAL(b.p + 1000, "|42");
  dm_buf_free(&b);
}

static void test_buf_reset_keeps_memory(void) {
  dm_buf b = {0};
  CU_ASSERT_EQUAL(dm_buf_printf(&b, "%s", "SELECT 1"), 0);
  char *p = b.p;
  size_t cap = b.cap;
  dm_buf_reset(&b);
  CU_ASSERT_EQUAL(b.len, 0);
  CU_ASSERT_PTR_EQUAL(b.p, p);
  CU_ASSERT_EQUAL(b.cap, cap);
  CU_ASSERT_STRING_EQUAL(b.p, "");
  CU_ASSERT_EQUAL(dm_buf_puts(&b, "SELECT 2"), 0);
  CU_ASSERT_STRING_EQUAL(b.p, "SELECT 2");
  dm_buf_free(&b);
}

/* A size no memory holds fails without an allocation (none is tried), leaves the text as it was,
 * and every later append fails too until the reset: a statement built piece by piece is checked
 * once, never sent with a piece missing. */
static void test_buf_failure_sticks(void) {
  dm_buf b = {0};
  CU_ASSERT_EQUAL(dm_buf_puts(&b, "UPDATE t SET a = "), 0);
  size_t len = b.len;
  CU_ASSERT_EQUAL(dm_buf_reserve(&b, SIZE_MAX), -1);
  CU_ASSERT_TRUE(b.oom);
  CU_ASSERT_EQUAL(b.len, len);
  CU_ASSERT_STRING_EQUAL(b.p, "UPDATE t SET a = ");
  CU_ASSERT_EQUAL(dm_buf_puts(&b, "1"), -1);
  CU_ASSERT_EQUAL(dm_buf_printf(&b, "%d", 1), -1);
  CU_ASSERT_EQUAL(dm_buf_putc(&b, ';'), -1);
  CU_ASSERT_EQUAL(b.len, len);
  dm_buf_reset(&b);
  CU_ASSERT_FALSE(b.oom);
  CU_ASSERT_EQUAL(dm_buf_puts(&b, "ok"), 0);
  CU_ASSERT_STRING_EQUAL(b.p, "ok");
  dm_buf_free(&b);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"growth, NUL-terminated, every append", test_buf_grow},
      {"printf longer than its stack buffer", test_buf_printf_long},
      {"reset keeps the memory", test_buf_reset_keeps_memory},
      {"a failure stays said until the reset", test_buf_failure_sticks},
  };
  return dmh_cunit_run("sdk_buf", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
