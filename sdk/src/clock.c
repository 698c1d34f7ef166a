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

double dm_clock_coarse_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}
