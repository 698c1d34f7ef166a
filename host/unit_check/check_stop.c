/*
 * The checks of a running process: it returns soon after the stop token fires, it runs again after
 * pause (resume, or process when there is no resume slot), its threads are gone when it returns,
 * and kill makes it return when the token does not reach it.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "meter.h"

/* Fire the token at the unit's first look after this long, or by the clock this much later. */
#define STOP_FALLBACK_MS 300
/* How long the checks built on a pause (pause-resume, sequential, update) wait for process to
 * return before kill. Their subject is what comes after the return; how fast it comes is the stop
 * check's (UC_RETURN_MS). On a loaded machine a dump in a large write took over UC_RETURN_MS once
 * (CI): update then had no paused instance and was skipped, which fails a conformance run. */
#define PAUSE_PATIENCE_MS 5000

typedef struct stop_seen {
  bool returned;        /* within the patience given after the token (or before it) */
  bool before;          /* returned before the token fired */
  bool recovered;       /* it did not return in time, but kill (or more time) got it back */
  double latency_ms;    /* from the token to the return */
  double fired_into_ms; /* when the token fired, from the start of the run */
  uint32_t outcome;
  char said[700];
} stop_seen;

/* Starts process/resume, fires the token at the unit's first look `after_ms` into the run (by the
 * clock STOP_FALLBACK_MS later if it never looks), and watches it return for patience_ms after
 * the token (then kill). false only when the run had to be abandoned. */
static bool stop_watch(uc_state *s, uc_inst *in, bool resume, int after_ms, int patience_ms,
                       stop_seen *o) {
  memset(o, 0, sizeof *o);
  uc_host_reset(s->host);
  uc_host_fire_at_look(s->host, after_ms);
  uc_run *r = uc_run_start(s, in, resume);
  if (!r) {
    snprintf(o->said, sizeof o->said, "no thread could be started");
    return true;
  }
  double fired_at = 0;
  for (;;) {
    if (uc_run_wait(r, uc_now_ms() + 2)) {
      o->returned = true;
      break;
    }
    double now = uc_now_ms();
    if (uc_host_fired(s->host, &fired_at)) {
      if (now - fired_at > patience_ms)
        break;
    } else if (now >= r->start_ms + after_ms + STOP_FALLBACK_MS) {
      uc_host_fire(s->host);
    }
  }
  bool fired = uc_host_fired(s->host, &fired_at);
  if (!o->returned) {
    if (!uc_run_stop(s, in, r))
      return false;
    o->recovered = true;
  }
  o->before = !fired || r->end_ms < fired_at;
  o->latency_ms = fired && !o->before ? r->end_ms - fired_at : 0;
  o->fired_into_ms = fired ? fired_at - r->start_ms : 0;
  o->outcome = r->result.outcome;
  uc_run_said(r, o->said, sizeof o->said);
  uc_run_free(r);
  return true;
}

/* stop: the token fires at the unit's first look at it; process must return within
 * UC_RETURN_MS. */
void uc_check_stop(uc_state *s) {
  const char *name = "stop";
  uc_inst in;
  if (!uc_inst_begin(s, name, &in, NULL))
    return;
  stop_seen o;
  if (!stop_watch(s, &in, false, 0, UC_RETURN_MS, &o)) {
    uc_report(s, name, UC_FAIL,
              "process returned neither within %d ms of the stop token nor after kill",
              UC_RETURN_MS);
    return;
  }
  uc_inst_close(s, &in);
  if (o.recovered)
    uc_report(s, name, UC_FAIL,
              "process still ran %d ms after the stop token fired (%.0f ms into it); it returned "
              "only after kill (%s)",
              UC_RETURN_MS, o.fired_into_ms, o.said);
  else if (o.outcome == DM_OUTCOME_ERROR)
    uc_report(s, name, UC_FAIL, "process failed: %s", o.said);
  else if (o.before)
    uc_report(s, name, UC_PASS, "process returned %s before the token fired (never looked at it)",
              o.said);
  else
    uc_report(s, name, UC_PASS, "returned %s %.1f ms after the token fired (%.0f ms into process)",
              o.said, o.latency_ms, o.fired_into_ms);
}

/* What resume (or process again) did on a paused instance, run as the supervisor does after a
 * pause: on a new thread, given 300 ms, then the token. */
typedef struct resume_seen {
  bool ran_on; /* still ran after 300 ms (then stopped) */
  uint32_t outcome;
  double ran_ms;
  char said[700];
} resume_seen;

/* false after reporting the check failed (no thread, or no return after the token and kill); the
 * instance is closed either way, unless abandoned. */
static bool resume_watch(uc_state *s, const char *name, uc_inst *in, resume_seen *a) {
  const char *again = s->d->ops.resume ? "resume" : "process";
  uc_host_reset(s->host);
  uc_run *r = uc_run_start(s, in, true);
  if (!r) {
    uc_inst_close(s, in);
    uc_report(s, name, UC_FAIL, "cannot start a thread");
    return false;
  }
  a->ran_on = !uc_run_wait(r, r->start_ms + 300);
  bool returned = a->ran_on ? uc_run_stop(s, in, r) : true;
  uc_run_said(r, a->said, sizeof a->said);
  a->outcome = r->result.outcome;
  a->ran_ms = r->end_ms - r->start_ms;
  uc_run_free(r);
  if (!returned) {
    uc_report(s, name, UC_FAIL, "%s returned neither after the token nor after kill", again);
    return false;
  }
  uc_inst_close(s, in);
  return true;
}

/* An instance opened and its process paused 200 ms into the run (the token, as a pause command
 * fires it). false when the check already reported (skip, or a run that had to be abandoned). */
static bool pause_begin(uc_state *s, const char *name, uc_inst *in, stop_seen *o) {
  if (!uc_inst_begin(s, name, in, NULL))
    return false;
  if (!stop_watch(s, in, false, 200, PAUSE_PATIENCE_MS, o)) {
    uc_report(s, name, UC_FAIL, "process did not return for the pause");
    return false;
  }
  return true;
}

/* pause-resume: the supervisor's pause (token, process returns, pause) 200 ms into the run, then
 * resume (or process again) on a new thread must run: finish, or still run after 300 ms; then the
 * token again. */
void uc_check_pause_resume(uc_state *s) {
  const char *name = "pause-resume";
  uc_inst in;
  stop_seen o;
  if (!pause_begin(s, name, &in, &o))
    return;
  if (o.outcome == DM_OUTCOME_ERROR) {
    uc_inst_close(s, &in);
    uc_report(s, name, UC_FAIL, "process failed: %s", o.said);
    return;
  }
  if (o.recovered) {
    uc_inst_close(s, &in);
    uc_report(s, name, UC_SKIP,
              "process returned only after kill (see stop): a killed instance is closed, never "
              "resumed");
    return;
  }
  if (s->d->ops.pause)
    s->d->ops.pause(in.self);
  const char *again = s->d->ops.resume ? "resume" : "process";
  resume_seen a;
  if (!resume_watch(s, name, &in, &a))
    return;
  bool ran_on = a.ran_on;
  uint32_t outcome = a.outcome;
  double ran = a.ran_ms;
  const char *said = a.said;
  const char *paused = o.before ? "before the pause" : "after the token";
  if (ran_on)
    uc_report(s, name, UC_PASS, "process returned %s %s; %s ran on for 300 ms", o.said, paused,
              again);
  else if (outcome == DM_OUTCOME_FINISHED)
    uc_report(s, name, UC_PASS, "process returned %s %s; %s finished in %.0f ms", o.said, paused,
              again, ran);
  else
    uc_report(s, name, UC_FAIL,
              "after pause, %s returned %s after %.0f ms without the token firing: it does not run "
              "again",
              again, said, ran);
}

/* sequential: the host never runs two process calls of an instance at once, and calls the next
 * only after the last returned, from a new thread. The unit's side of that: process/resume returns
 * only after every thread it started has ended (none is left to overlap the next call), three
 * rounds of run, token, pause. */
void uc_check_sequential(uc_state *s) {
  const char *name = "sequential";
  uc_inst in;
  if (!uc_inst_begin(s, name, &in, NULL))
    return;
  char rounds[256] = "";
  size_t off = 0;
  for (int i = 0; i < 3; i++) {
    uc_usage before, after;
    uc_usage_now(&before);
    stop_seen o;
    if (!stop_watch(s, &in, i > 0, 50, PAUSE_PATIENCE_MS, &o)) {
      uc_report(s, name, UC_FAIL, "round %d: the run returned neither after the token nor kill",
                i + 1);
      return;
    }
    uc_usage_now(&after);
    /* a short settle: tests/unit_check/thread_linger.c's breach lives 300 ms from its start */
    if (after.threads > before.threads)
      after.threads = uc_threads_settle(before.threads, 50);
    if (after.threads > before.threads) {
      uc_inst_close(s, &in);
      uc_report(s, name, UC_FAIL,
                "round %d: %s returned (%s) while %d thread(s) it started still ran", i + 1,
                i > 0 && s->d->ops.resume ? "resume" : "process", o.said,
                after.threads - before.threads);
      return;
    }
    off += (size_t)snprintf(rounds + off, sizeof rounds - off, "%s%s", i ? ", " : "", o.said);
    if (s->d->ops.pause)
      s->d->ops.pause(in.self);
  }
  uc_inst_close(s, &in);
  uc_report(s, name, UC_PASS,
            "3 rounds (%s), no thread of the unit left when a call returned; the host itself never "
            "overlaps process calls",
            rounds);
}

/* kill: the token never fires; 300 ms into process kill is called (itself must not block), and
 * process must return within UC_RETURN_MS. */
void uc_check_kill(uc_state *s) {
  const char *name = "kill";
  uc_inst in;
  if (!uc_inst_begin(s, name, &in, NULL))
    return;
  if (!s->d->ops.kill) {
    uc_inst_close(s, &in);
    uc_report(s, name, UC_PASS, "no kill slot (optional): the host relies on the stop token alone");
    return;
  }
  uc_run *r = uc_run_begin(s, name, &in);
  if (!r)
    return;
  if (uc_run_wait(r, r->start_ms + 300)) {
    char said[700];
    uc_run_said(r, said, sizeof said);
    double ran = r->end_ms - r->start_ms;
    uint32_t outcome = r->result.outcome;
    uc_run_free(r);
    uc_inst_close(s, &in);
    uc_report(s, name, outcome == DM_OUTCOME_ERROR ? UC_FAIL : UC_PASS,
              "not reached: process returned %s after %.0f ms, before kill (give it a config "
              "that makes it block)",
              said, ran);
    return;
  }
  double k0 = uc_now_ms();
  s->d->ops.kill(in.self);
  double k1 = uc_now_ms();
  bool returned = uc_run_wait(r, k0 + UC_RETURN_MS);
  if (!returned) {
    /* get it back with the token, as the supervisor's kill also fires it */
    uc_host_fire(s->host);
    if (!uc_run_wait(r, uc_now_ms() + 2 * UC_RETURN_MS)) {
      pthread_detach(r->thread);
      r->abandoned = in.abandoned = s->broken = true;
    }
  }
  char said[700];
  uc_run_said(r, said, sizeof said);
  double after = r->end_ms - k0;
  uc_run_free(r);
  uc_inst_close(s, &in);
  if (!returned)
    uc_report(s, name, UC_FAIL, "process still ran %d ms after kill (the token not fired)",
              UC_RETURN_MS);
  else if (k1 - k0 > 100)
    uc_report(s, name, UC_FAIL, "kill itself blocked for %.0f ms", k1 - k0);
  else
    uc_report(s, name, UC_PASS, "process returned %s %.1f ms after kill (the token not fired)",
              said, after);
}

/* One update while paused with the n-th setting looked up answered as of the wrong type (0: none).
 * Returns update's result; *lookups (may be NULL) how many settings it looked up. */
static int update_refused(uc_state *s, uc_inst *in, int n, int *lookups, char *msg, size_t len) {
  dm_error err;
  memset(&err, 0, sizeof err);
  uc_host_ctx_reset(in->ctx);
  uc_host_fail_lookup(s->host, n);
  int rc = s->d->ops.update(in->self, &err);
  if (lookups)
    *lookups = uc_host_lookups(s->host);
  uc_host_fail_lookup(s->host, 0);
  if (rc != 0)
    snprintf(msg, len, "%s", err.message);
  return rc;
}

#define UPDATE_ROUNDS 6

/* update (units that set the slot): the host calls it on a paused instance (process returned to
 * the token, pause called) after the task's file changed. With the same section it returns 0;
 * with each setting in turn answered as of the wrong type it may refuse (-1), and a refusal leaks
 * nothing (UPDATE_ROUNDS rounds after a warm-up, as init-fail); then resume (or process) runs:
 * the old settings, or the same ones, are in force. */
void uc_check_update(uc_state *s) {
  const char *name = "update";
  if (!s->d->ops.update) {
    uc_report(s, name, UC_PASS,
              "no update slot: nothing to check (update-task refuses a changed section of this "
              "unit; stop and start the task instead)");
    return;
  }
  uc_inst in;
  stop_seen o;
  if (!pause_begin(s, name, &in, &o))
    return;
  if (o.outcome == DM_OUTCOME_ERROR || o.recovered) {
    uc_inst_close(s, &in);
    uc_report(s, name, UC_SKIP, "process %s%s: no paused instance to update",
              o.recovered ? "returned only after kill" : "failed: ", o.recovered ? "" : o.said);
    return;
  }
  if (s->d->ops.pause)
    s->d->ops.pause(in.self);
  char msg[DM_ERROR_MESSAGE_MAX] = "";
  int lookups = 0;
  if (update_refused(s, &in, 0, &lookups, msg, sizeof msg) != 0) {
    uc_inst_close(s, &in);
    uc_report(s, name, UC_FAIL, "update with the section unchanged returned -1: %s", msg);
    return;
  }
  int failing[64], n_failing = 0;
  char first[DM_ERROR_MESSAGE_MAX] = "";
  for (int n = 1; n <= lookups && n_failing < 64; n++)
    if (update_refused(s, &in, n, NULL, msg, sizeof msg) != 0) {
      if (!n_failing)
        snprintf(first, sizeof first, "%s", msg);
      failing[n_failing++] = n;
    }
  uc_leak leak;
  uc_leak_start(&leak);
  for (int i = 0; i < UPDATE_ROUNDS && n_failing; i++) {
    for (int k = 0; k < n_failing; k++)
      (void)update_refused(s, &in, failing[k], NULL, msg, sizeof msg);
    uc_leak_round(&leak);
  }
  char what[256] = "";
  bool leaked = n_failing && uc_leak_verdict(&leak, what, sizeof what);
  uc_host_ctx_reset(in.ctx);
  resume_seen a;
  if (!resume_watch(s, name, &in, &a))
    return;
  bool ran_on = a.ran_on;
  if (leaked)
    uc_report(s, name, UC_FAIL, "a refused update leaks: %s; %d of %d settings make it refuse (%s)",
              what, n_failing, lookups, uc_meter_heap_source());
  else if (!ran_on && a.outcome != DM_OUTCOME_FINISHED)
    uc_report(s, name, UC_FAIL, "after update, resume returned %s without the token firing",
              a.said);
  else
    uc_report(s, name, UC_PASS,
              "same section: 0; %d of %d settings of the wrong type refused%s%s%s%s; then resume "
              "%s",
              n_failing, lookups, n_failing ? " (\"" : "", first, n_failing ? "\"), " : "",
              n_failing ? what : "", ran_on ? "ran on for 300 ms" : "finished");
}
