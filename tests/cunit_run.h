/*
 * The main() of a CUnit test program: suites given as tables of tests, verbose output, exit
 * status 1 when anything failed (an assertion, a test, a suite's set-up or clean-up). Header-only;
 * every test program gets tests/ on its include path. The one owner of that main: a program
 * whose main does more (a temp folder made before, removed after; a check of its own) keeps those
 * lines around the call and folds its result into the exit status.
 *
 *   static const dmh_cunit_test tests[] = {{"name", test_fn}, ...};
 *   return dmh_cunit_run("suite", init, clean, tests, sizeof tests / sizeof tests[0]);
 */
#ifndef DMH_CUNIT_RUN_H
#define DMH_CUNIT_RUN_H

#include <CUnit/Basic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef struct dmh_cunit_test {
  const char *name;
  CU_TestFunc fn;
} dmh_cunit_test;

typedef struct dmh_cunit_suite {
  const char *name;
  CU_InitializeFunc init; /* may be NULL */
  CU_CleanupFunc clean;   /* may be NULL */
  const dmh_cunit_test *tests;
  size_t n;
} dmh_cunit_suite;

/*
 * Runs the suites (n of them) in order; the exit status. only_env: NULL, or the name of an
 * environment variable (e.g. "RELAY_TEST_ONLY"); when that variable is set, only the tests whose
 * name holds its value are added (a suite left with none still runs its set-up and clean-up).
 */
static inline int dmh_cunit_run_suites(const dmh_cunit_suite *suites, size_t n,
                                       const char *only_env) {
  const char *only = only_env ? getenv(only_env) : NULL;
  if (CU_initialize_registry() != CUE_SUCCESS)
    return 1;
  int ok = 1;
  for (size_t i = 0; ok && i < n; i++) {
    CU_pSuite s = CU_add_suite(suites[i].name, suites[i].init, suites[i].clean);
    ok = s != NULL;
    for (size_t j = 0; ok && j < suites[i].n; j++)
      if (!only || strstr(suites[i].tests[j].name, only))
        ok = CU_add_test(s, suites[i].tests[j].name, suites[i].tests[j].fn) != NULL;
  }
  if (!ok) {
    CU_cleanup_registry();
    return 1;
  }
  CU_basic_set_mode(CU_BRM_VERBOSE);
  /* a suite whose set-up or clean-up failed is a failure too, even when no assertion failed */
  unsigned failed = CU_basic_run_tests() != CUE_SUCCESS;
  failed += CU_get_number_of_failures() + CU_get_number_of_tests_failed() +
            CU_get_number_of_suites_failed();
  CU_cleanup_registry();
  return failed ? 1 : 0;
}

/* Runs `tests` (n of them) as the suite `suite` with init/clean (may be NULL); the exit status.
 * DMH_TEST_ONLY=<part of a name> in the environment runs the matching tests alone. */
static inline int dmh_cunit_run(const char *suite, CU_InitializeFunc init, CU_CleanupFunc clean,
                                const dmh_cunit_test *tests, size_t n) {
  const dmh_cunit_suite s = {suite, init, clean, tests, n};
  return dmh_cunit_run_suites(&s, 1, "DMH_TEST_ONLY");
}

#endif /* DMH_CUNIT_RUN_H */
