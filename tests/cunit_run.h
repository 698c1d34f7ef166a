/*
 * The main() of a CUnit test program: one suite, a table of tests, verbose output, exit status 1
 * when anything failed. Header-only; every test program gets tests/ on its include path.
 */
#ifndef DMH_CUNIT_RUN_H
#define DMH_CUNIT_RUN_H

#include <CUnit/Basic.h>
#include <stddef.h>

typedef struct dmh_cunit_test {
  const char *name;
  CU_TestFunc fn;
} dmh_cunit_test;

/* Runs `tests` (n of them) as the suite `suite` with init/clean (may be NULL); the exit status. */
static inline int dmh_cunit_run(const char *suite, CU_InitializeFunc init, CU_CleanupFunc clean,
                                const dmh_cunit_test *tests, size_t n) {
  if (CU_initialize_registry() != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite(suite, init, clean);
  for (size_t i = 0; s && i < n; i++)
    if (!CU_add_test(s, tests[i].name, tests[i].fn))
      s = NULL;
  if (!s) {
    CU_cleanup_registry();
    return 1;
  }
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned failed = CU_get_number_of_failures() + CU_get_number_of_suites_failed();
  CU_cleanup_registry();
  return failed ? 1 : 0;
}

#endif /* DMH_CUNIT_RUN_H */
