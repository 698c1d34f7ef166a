/*
 * status never blocks: another thread calls it in a tight loop for a second while process runs,
 * each call timed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "check.h"

#define STATUS_LOOP_MS 1000
/* A call that slept (a voluntary context switch: waiting for a lock, for I/O) this long waited
 * for something held across work, as a lock process keeps during a query. A call may take a lock
 * of the unit's own for a moment (the contract allows it), and on a loaded machine the holder can
 * be preempted for a time slice or two while the status thread waits (measured under ASan on 2
 * busy cores: 16 ms), hence the margin over "a few ms"; calls over STATUS_SLOW_MS are counted and
 * printed. A call that was only preempted switched involuntarily and is not judged, unless it took
 * STATUS_SPIN_MS (spinning on something). */
#define STATUS_MAX_MS 50.0
#define STATUS_SLOW_MS 5.0
#define STATUS_SPIN_MS 200.0

/* The sink takes everything and keeps nothing: status must not depend on what the host does. */
static void sink_str(dm_status_sink *s, const char *k, const char *v) {
  (void)s, (void)k, (void)v;
}
static void sink_int(dm_status_sink *s, const char *k, int64_t v) {
  (void)s, (void)k, (void)v;
}
static void sink_double(dm_status_sink *s, const char *k, double v) {
  (void)s, (void)k, (void)v;
}
static void sink_bool(dm_status_sink *s, const char *k, bool v) {
  (void)s, (void)k, (void)v;
}
static void sink_position(dm_status_sink *s, const char *k, const dm_position *p) {
  (void)s, (void)k, (void)p;
}
static void sink_progress(dm_status_sink *s, uint64_t d, uint64_t t, const char *w) {
  (void)s, (void)d, (void)t, (void)w;
}

typedef struct status_loop {
  const dm_unit_descriptor *d;
  void *self;
  uc_run *run;
  long calls;
  double max_ms;       /* the longest call */
  double max_slept_ms; /* the longest call that slept */
  long slow;           /* calls that slept over STATUS_SLOW_MS */
  double end_ms;
} status_loop;

static long status_voluntary_switches(void) {
  struct rusage ru;
  return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_nvcsw : 0;
}

static void *status_thread(void *arg) {
  status_loop *l = arg;
  dm_status_sink sink = {.put_str = sink_str,
                         .put_int = sink_int,
                         .put_double = sink_double,
                         .put_bool = sink_bool,
                         .put_position = sink_position,
                         .put_progress = sink_progress};
  while (uc_now_ms() < l->end_ms && !atomic_load(&l->run->done)) {
    long v0 = status_voluntary_switches();
    double t0 = uc_now_ms();
    l->d->ops.status(l->self, &sink);
    double t = uc_now_ms() - t0;
    if (t > l->max_ms)
      l->max_ms = t;
    if (status_voluntary_switches() != v0) {
      if (t > l->max_slept_ms)
        l->max_slept_ms = t;
      if (t > STATUS_SLOW_MS)
        l->slow++;
    }
    l->calls++;
  }
  return NULL;
}

void uc_check_status(uc_state *s) {
  const char *name = "status";
  if (!s->d->ops.status) {
    if (!uc_skip_if_broken(s, name))
      uc_report(s, name, UC_PASS, "no status slot (optional)");
    return;
  }
  uc_inst in;
  uc_run *r;
  if (!uc_inst_begin(s, name, &in, NULL) || !(r = uc_run_begin(s, name, &in)))
    return;
  /* on the heap: left to a status call that never returns when process had to be abandoned */
  status_loop *lp = calloc(1, sizeof *lp);
  if (!lp) {
    uc_report(s, name, UC_FAIL, "no memory");
    return;
  }
  *lp = (status_loop){.d = s->d, .self = in.self, .run = r, .end_ms = uc_now_ms() + STATUS_LOOP_MS};
  pthread_t t;
  bool looped = pthread_create(&t, NULL, status_thread, lp) == 0;
  /* the loop ends by the clock or when process returns; a call blocked on process's lock returns
   * when process does */
  bool returned = uc_run_wait(r, lp->end_ms) || uc_run_stop(s, &in, r);
  status_loop l = {0};
  if (looped && returned) {
    pthread_join(t, NULL);
    l = *lp;
    free(lp);
  } else if (looped) {
    pthread_detach(t);
  } else {
    free(lp);
  }
  char said[700];
  uc_run_said(r, said, sizeof said);
  double ran = r->end_ms - r->start_ms;
  uc_run_free(r);
  if (returned)
    uc_inst_close(s, &in);
  if (!looped)
    uc_report(s, name, UC_FAIL, "cannot start a thread");
  else if (!returned)
    uc_report(s, name, UC_FAIL,
              "process returned neither after the token nor after kill (status calls may be "
              "blocked on it)");
  else if (l.max_slept_ms > STATUS_MAX_MS || l.max_ms > STATUS_SPIN_MS)
    uc_report(s, name, UC_FAIL,
              "a status call took %.1f ms while process ran (limit %.0f ms for a call that "
              "sleeps): it waits for something process holds; %ld calls",
              l.max_slept_ms > l.max_ms ? l.max_slept_ms : l.max_ms, STATUS_MAX_MS, l.calls);
  else
    uc_report(s, name, UC_PASS,
              "%ld calls while process ran %.0f ms (%s): the longest %.3f ms, the longest that "
              "slept %.3f ms, %ld slept over %.0f ms",
              l.calls, ran < STATUS_LOOP_MS ? ran : STATUS_LOOP_MS, said, l.max_ms, l.max_slept_ms,
              l.slow, STATUS_SLOW_MS);
}
