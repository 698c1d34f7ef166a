/*
 * cunit_run.h, the main() of every CUnit test program: its exit status says 1 for a failed
 * assertion, a suite whose set-up or clean-up failed (with no assertion failed: the old mains of
 * test_load_merge and others counted only assertions and passed), runs several suites in order,
 * and its name filter adds only the tests asked for. Each case runs in a child, since the CUnit
 * registry is one per process; this main checks the children's exit statuses.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cunit_run.h"

static unsigned ran; /* a bit per test function that ran */

static void t_pass_a(void) {
  ran |= 1;
  CU_PASS("a");
}
static void t_pass_b(void) {
  ran |= 2;
  CU_PASS("b");
}
static void t_fail(void) {
  ran |= 4;
  CU_FAIL("fails on purpose");
}
static int init_fails(void) {
  return 1;
}
static int clean_fails(void) {
  return 1;
}

static const dmh_cunit_test passing[] = {{"alpha", t_pass_a}, {"beta", t_pass_b}};
static const dmh_cunit_test failing[] = {{"alpha", t_pass_a}, {"gamma fails", t_fail}};

/* Runs `fn` in a child: its exit status, and in *bits the tests that ran. */
static int in_child(int (*fn)(void), unsigned *bits) {
  int p[2];
  if (pipe(p) != 0)
    return -1;
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    if (!freopen("/dev/null", "w", stdout))
      _exit(99);
    int rc = fn();
    if (write(p[1], &ran, sizeof ran) != (ssize_t)sizeof ran)
      _exit(98);
    _exit(rc);
  }
  close(p[1]);
  *bits = 0;
  if (read(p[0], bits, sizeof *bits) != (ssize_t)sizeof *bits)
    *bits = 0xff;
  close(p[0]);
  int st;
  if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
    return -1;
  return WEXITSTATUS(st);
}

static int all_pass(void) {
  return dmh_cunit_run("pass", NULL, NULL, passing, 2);
}
static int one_fails(void) {
  return dmh_cunit_run("fail", NULL, NULL, failing, 2);
}
static int set_up_fails(void) {
  return dmh_cunit_run("init", init_fails, NULL, passing, 2);
}
static int clean_up_fails(void) {
  return dmh_cunit_run("clean", NULL, clean_fails, passing, 2);
}
static int two_suites(void) {
  const dmh_cunit_suite s[] = {{"first", init_fails, NULL, failing, 2},
                               {"second", NULL, NULL, passing, 2}};
  return dmh_cunit_run_suites(s, 2, NULL);
}
static int filtered(void) {
  const dmh_cunit_suite s[] = {{"a", NULL, NULL, passing, 2}, {"b", NULL, NULL, failing, 2}};
  return dmh_cunit_run_suites(s, 2, "DMH_CUNIT_RUN_TEST_ONLY");
}

static int failures;

static void expect(const char *what, int (*fn)(void), int want_rc, unsigned want_bits) {
  unsigned bits;
  int rc = in_child(fn, &bits);
  int ok = rc == want_rc && bits == want_bits;
  printf("%s: %s (exit %d, tests ran 0x%x; want exit %d, 0x%x)\n", ok ? "ok" : "FAILED", what, rc,
         bits, want_rc, want_bits);
  failures += !ok;
}

int main(void) {
  unsetenv("DMH_CUNIT_RUN_TEST_ONLY");
  expect("all tests pass", all_pass, 0, 3);
  expect("a failed assertion", one_fails, 1, 5);
  expect("suite set-up failed, nothing ran", set_up_fails, 1, 0);
  expect("suite clean-up failed after passing tests", clean_up_fails, 1, 3);
  expect("second suite runs after the first's set-up failed", two_suites, 1, 3);
  expect("no filter: every test of both suites", filtered, 1, 7);
  setenv("DMH_CUNIT_RUN_TEST_ONLY", "beta", 1);
  expect("filter 'beta': only beta", filtered, 0, 2);
  setenv("DMH_CUNIT_RUN_TEST_ONLY", "gamma", 1);
  expect("filter 'gamma': only the failing test", filtered, 1, 4);
  setenv("DMH_CUNIT_RUN_TEST_ONLY", "nothing-matches", 1);
  expect("filter matching nothing runs nothing", filtered, 0, 0);
  return failures ? 1 : 0;
}
