/*
 * A file of a test's temp folder written from a format (a config file, a dump file): the one
 * writer the CUnit programs share. Header-only; every test program gets tests/ on its include
 * path. A file that cannot be opened fails the test at once (CU_ASSERT_PTR_NOT_NULL_FATAL).
 */
#ifndef DMH_TEST_FILE_H
#define DMH_TEST_FILE_H

#include <CUnit/Basic.h>
#include <stdarg.h>
#include <stdio.h>

static inline void dmh_test_vwritef(const char *dir, const char *name, const char *fmt,
                                    va_list ap) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  vfprintf(f, fmt, ap);
  CU_ASSERT_EQUAL(fclose(f), 0);
}

static inline void dmh_test_writef(const char *dir, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline void dmh_test_writef(const char *dir, const char *name, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  dmh_test_vwritef(dir, name, fmt, ap);
  va_end(ap);
}

#endif /* DMH_TEST_FILE_H */
