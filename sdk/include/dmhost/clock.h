/*
 * dmhost SDK: the monotonic clock a unit measures durations and intervals with (batch ages, rates,
 * elapsed times for logs and status, reconnect back-off). Never the wall clock: a clock step
 * (NTP, a user) must not make a batch close early or an elapsed time negative.
 */
#ifndef DMHOST_CLOCK_H
#define DMHOST_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* CLOCK_MONOTONIC in nanoseconds (and in milliseconds). */
int64_t dm_clock_ns(void);
int64_t dm_clock_ms(void);

/* CLOCK_MONOTONIC_COARSE in seconds: a few ms of resolution for the price of a memory read. For a
 * clock read once per event (the relay's intervals of 50 ms..1 s: the precise clock took 10 % of
 * its CPU on an OLTP stream). */
double dm_clock_coarse_s(void);

/* Timed waits. A condition variable made by dm_cond_init_monotonic times its waits on
 * CLOCK_MONOTONIC, so a clock step neither ends a wait early nor stretches it; dm_clock_deadline
 * gives such a wait's deadline, ms from now. dm_timespec_add_ms moves any time by ms (>= 0), for a
 * deadline on another clock (pthread_timedjoin_np's is CLOCK_REALTIME) or a tick at fixed times. */
int dm_cond_init_monotonic(pthread_cond_t *cond);
struct timespec dm_clock_deadline(int64_t ms);
void dm_timespec_add_ms(struct timespec *ts, int64_t ms);

#ifdef __cplusplus
}
#endif
#endif /* DMHOST_CLOCK_H */
