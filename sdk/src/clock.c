/* The monotonic clock of units (clock.h). */
#include <time.h>

#include "dmhost/clock.h"

int64_t dm_clock_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t dm_clock_ms(void) {
  return dm_clock_ns() / 1000000;
}

int dm_cond_init_monotonic(pthread_cond_t *cond) {
  pthread_condattr_t a;
  int rc = pthread_condattr_init(&a);
  if (rc == 0 && (rc = pthread_condattr_setclock(&a, CLOCK_MONOTONIC)) == 0)
    rc = pthread_cond_init(cond, &a);
  pthread_condattr_destroy(&a);
  return rc;
}

void dm_timespec_add_ms(struct timespec *ts, int64_t ms) {
  ts->tv_sec += (time_t)(ms / 1000);
  ts->tv_nsec += (long)(ms % 1000) * 1000000L;
  if (ts->tv_nsec >= 1000000000L) {
    ts->tv_sec++;
    ts->tv_nsec -= 1000000000L;
  }
}

struct timespec dm_clock_deadline(int64_t ms) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  dm_timespec_add_ms(&ts, ms);
  return ts;
}

double dm_clock_coarse_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}
