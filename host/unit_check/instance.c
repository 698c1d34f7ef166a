/*
 * Instances and runs for the checks: init, is_fresh_task and close on the checking thread, process
 * and resume on a thread of their own, stopped the way the supervisor stops them.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"

void uc_report(uc_state *s, const char *name, uc_verdict v, const char *fmt, ...) {
  static const char *const word[] = {"fail", "pass", "skip"};
  char why[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  printf("%s %s: %s\n", word[v], name, why);
  fflush(stdout);
  if (v == UC_PASS)
    s->passed++;
  else if (v == UC_FAIL)
    s->failed++;
  else
    s->skipped++;
}

bool uc_skip_if_broken(uc_state *s, const char *name) {
  if (!s->broken)
    return false;
  uc_report(s, name, UC_SKIP, "an earlier check left a process running that nothing stopped");
  return true;
}

int uc_inst_open(uc_state *s, const char *work, uc_inst *in, char *why, size_t len) {
  memset(in, 0, sizeof *in);
  dm_error err;
  memset(&err, 0, sizeof err);
  if (!(in->ctx = uc_host_ctx(s->host, work, &err))) {
    snprintf(why, len, "%s", err.message);
    return -1;
  }
  if (s->d->ops.init(uc_host_services(), in->ctx, &in->self, &err) != 0) {
    snprintf(why, len, "init failed: %s", err.message[0] ? err.message : "(no message)");
    uc_host_ctx_free(in->ctx);
    in->ctx = NULL;
    return -1;
  }
  return 0;
}

int uc_inst_fresh(uc_state *s, uc_inst *in, bool *fresh, char *why, size_t len) {
  dm_error err;
  memset(&err, 0, sizeof err);
  if (s->d->ops.is_fresh_task(in->self, fresh, &err) != 0) {
    snprintf(why, len, "is_fresh_task failed: %s", err.message);
    return -1;
  }
  return 0;
}

bool uc_inst_begin(uc_state *s, const char *name, uc_inst *in, bool *fresh) {
  char why[1200];
  bool f;
  if (uc_skip_if_broken(s, name))
    return false;
  if (uc_inst_open(s, name, in, why, sizeof why) < 0 ||
      uc_inst_fresh(s, in, fresh ? fresh : &f, why, sizeof why) < 0) {
    uc_inst_close(s, in);
    uc_report(s, name, UC_FAIL, "%s", why);
    return false;
  }
  return true;
}

void uc_inst_close(uc_state *s, uc_inst *in) {
  if (in->abandoned || !in->ctx)
    return;
  if (in->self)
    s->d->ops.close(in->self);
  uc_host_ctx_free(in->ctx);
  in->ctx = NULL;
  in->self = NULL;
}

static void *run_thread(void *arg) {
  uc_run *r = arg;
  if (r->resume && r->d->ops.resume)
    r->d->ops.resume(r->self, &r->result);
  else
    r->d->ops.process(r->self, &r->result);
  r->end_ms = uc_now_ms();
  atomic_store(&r->done, true);
  return NULL;
}

uc_run *uc_run_start(uc_state *s, uc_inst *in, bool resume) {
  uc_run *r = calloc(1, sizeof *r);
  if (!r)
    return NULL;
  r->d = s->d;
  r->self = in->self;
  r->resume = resume;
  atomic_init(&r->done, false);
  r->start_ms = uc_now_ms();
  if (pthread_create(&r->thread, NULL, run_thread, r) != 0) {
    free(r);
    return NULL;
  }
  return r;
}

uc_run *uc_run_begin(uc_state *s, const char *name, uc_inst *in) {
  uc_host_reset(s->host);
  uc_run *r = uc_run_start(s, in, false);
  if (!r) {
    uc_inst_close(s, in);
    uc_report(s, name, UC_FAIL, "cannot start a thread for process");
  }
  return r;
}

void uc_run_free(uc_run *r) {
  if (r && !r->abandoned)
    free(r);
}

bool uc_run_wait(uc_run *r, double until_ms) {
  while (!atomic_load(&r->done)) {
    if (uc_now_ms() >= until_ms)
      return false;
    struct timespec ts = {0, 2 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  pthread_join(r->thread, NULL);
  return true;
}

bool uc_run_stop(uc_state *s, uc_inst *in, uc_run *r) {
  uc_host_fire(s->host);
  if (uc_run_wait(r, uc_now_ms() + UC_RETURN_MS))
    return true;
  if (s->d->ops.kill)
    s->d->ops.kill(in->self);
  if (uc_run_wait(r, uc_now_ms() + 2 * UC_RETURN_MS))
    return true;
  pthread_detach(r->thread);
  r->abandoned = true;
  in->abandoned = true;
  s->broken = true;
  return false;
}

const char *uc_outcome_name(uint32_t outcome) {
  switch (outcome) {
  case DM_OUTCOME_FINISHED:
    return "finished";
  case DM_OUTCOME_CANCELED:
    return "canceled";
  case DM_OUTCOME_ERROR:
    return "error";
  default:
    return "no outcome";
  }
}

const char *uc_run_said(const uc_run *r, char *buf, size_t len) {
  if (r->result.outcome == DM_OUTCOME_ERROR && r->result.n_errors > 0)
    snprintf(buf, len, "error: %s", r->result.errors[0].message);
  else
    snprintf(buf, len, "%s", uc_outcome_name(r->result.outcome));
  return buf;
}
