/*
 * The SDK's timed waits (dmhost/clock.h, SDK 1.10; nine copies of the condition variable's set-up
 * and eleven of the deadline's arithmetic in the host and the units before): a millisecond sum
 * that carries into seconds, a deadline on the monotonic clock, and a condition variable whose
 * timed wait ends at that deadline (not at once, as it would if the two clocks disagreed and the
 * deadline lay in the wait clock's past).
 */
#include <CUnit/Basic.h>
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "cunit_run.h"
#include "dmhost/clock.h"

static void test_clock_add(void) {
  struct timespec t = {10, 999000000L};
  dm_timespec_add_ms(&t, 1);
  CU_ASSERT_EQUAL(t.tv_sec, 11);
  CU_ASSERT_EQUAL(t.tv_nsec, 0);
  t = (struct timespec){10, 600000000L};
  dm_timespec_add_ms(&t, 1500);
  CU_ASSERT_EQUAL(t.tv_sec, 12);
  CU_ASSERT_EQUAL(t.tv_nsec, 100000000L);
  dm_timespec_add_ms(&t, 0);
  CU_ASSERT_EQUAL(t.tv_sec, 12);
  CU_ASSERT_EQUAL(t.tv_nsec, 100000000L);
  t = (struct timespec){0, 0};
  dm_timespec_add_ms(&t, 86400000LL * 400); /* a long one: no int overflow */
  CU_ASSERT_EQUAL(t.tv_sec, 86400LL * 400);
  CU_ASSERT_EQUAL(t.tv_nsec, 0);
}

static void test_clock_deadline(void) {
  struct timespec before;
  clock_gettime(CLOCK_MONOTONIC, &before);
  struct timespec d = dm_clock_deadline(250);
  int64_t ahead_ms =
      (int64_t)(d.tv_sec - before.tv_sec) * 1000 + (d.tv_nsec - before.tv_nsec) / 1000000;
  CU_ASSERT(ahead_ms >= 250);
  CU_ASSERT(ahead_ms < 250 + 60000); /* the calls between: generous on a loaded machine */
  CU_ASSERT(d.tv_nsec >= 0 && d.tv_nsec < 1000000000L);
}

static void test_clock_cond_wait(void) {
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t c;
  CU_ASSERT_EQUAL_FATAL(dm_cond_init_monotonic(&c), 0);
  int64_t t0 = dm_clock_ms();
  struct timespec d = dm_clock_deadline(30);
  pthread_mutex_lock(&m);
  int rc;
  while ((rc = pthread_cond_timedwait(&c, &m, &d)) == 0) /* spurious wake-ups: wait on */
    ;
  pthread_mutex_unlock(&m);
  CU_ASSERT_EQUAL(rc, ETIMEDOUT);
  CU_ASSERT(dm_clock_ms() - t0 >= 30); /* it waited to the deadline, on the same clock */
  pthread_cond_destroy(&c);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"milliseconds carry into seconds", test_clock_add},
      {"a deadline on the monotonic clock", test_clock_deadline},
      {"a monotonic condition variable waits to it", test_clock_cond_wait},
  };
  return dmh_cunit_run("sdk_clock", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
