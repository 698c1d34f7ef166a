/*
 * The checks of an instance's life without a run: init then close leaves nothing behind, a failed
 * init releases everything, and is_fresh_task tells a fresh task from one that did work.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "meter.h"

#define LIFE_ROUNDS 6

/* The context of a check without a run; NULL after reporting skip or fail. */
static dm_ctx *life_ctx(uc_state *s, const char *name) {
  if (uc_skip_if_broken(s, name))
    return NULL;
  dm_error err;
  dm_ctx *ctx = uc_host_ctx(s->host, name, &err);
  if (!ctx)
    uc_report(s, name, UC_FAIL, "%s", err.message);
  return ctx;
}

/* init-close: LIFE_ROUNDS pairs after a warm-up pair (lazy one-time set-up, e.g. of a client
 * library, is not a leak); the heap, descriptors and threads must come back each time. */
void uc_check_init_close(uc_state *s) {
  const char *name = "init-close";
  dm_ctx *ctx = life_ctx(s, name);
  if (!ctx)
    return;
  uc_leak leak;
  dm_error err;
  for (int i = 0; i <= LIFE_ROUNDS; i++) {
    void *self = NULL;
    memset(&err, 0, sizeof err);
    uc_host_ctx_reset(ctx);
    if (s->d->ops.init(uc_host_services(), ctx, &self, &err) != 0) {
      uc_report(s, name, UC_FAIL, "init failed (round %d): %s", i + 1, err.message);
      uc_host_ctx_free(ctx);
      return;
    }
    s->d->ops.close(self);
    uc_host_ctx_reset(ctx);
    if (i == 0)
      uc_leak_start(&leak);
    else
      uc_leak_round(&leak);
  }
  uc_host_ctx_free(ctx);
  char what[256];
  if (uc_leak_verdict(&leak, what, sizeof what))
    uc_report(s, name, UC_FAIL, "init then close leaks: %s (%s)", what, uc_meter_heap_source());
  else
    uc_report(s, name, UC_PASS, "%s (%s)", what, uc_meter_heap_source());
}

/* One init with the n-th setting looked up refused as of the wrong type: 1 when init failed, 0
 * when it went on (the instance is closed), -1 when init returned success without an instance. */
static int life_init_refused(uc_state *s, dm_ctx *ctx, int n, int *lookups, char *msg, size_t len) {
  void *self = NULL;
  dm_error err;
  memset(&err, 0, sizeof err);
  uc_host_ctx_reset(ctx);
  uc_host_fail_lookup(s->host, n);
  int rc = s->d->ops.init(uc_host_services(), ctx, &self, &err);
  if (lookups)
    *lookups = uc_host_lookups(s->host);
  uc_host_fail_lookup(s->host, 0);
  uc_host_ctx_reset(ctx);
  if (rc != 0) {
    snprintf(msg, len, "%s", err.message);
    return 1;
  }
  if (!self)
    return -1;
  s->d->ops.close(self);
  return 0;
}

/* init-fail: init is made to fail by answering one setting after the other as of the wrong type
 * (a config the unit must refuse); each failing init must have released everything itself (the
 * host never calls close after a failed init). Swept once as warm-up, then LIFE_ROUNDS times. */
void uc_check_init_fail(uc_state *s) {
  const char *name = "init-fail";
  dm_ctx *ctx = life_ctx(s, name);
  if (!ctx)
    return;
  /* how many settings a normal init looks up */
  char msg[DM_ERROR_MESSAGE_MAX] = "";
  int lookups = 0;
  if (life_init_refused(s, ctx, 0, &lookups, msg, sizeof msg) != 0) {
    uc_report(s, name, UC_FAIL, "init fails without a fault: %s", msg);
    uc_host_ctx_free(ctx);
    return;
  }

  int failing[64], n_failing = 0;
  char first[DM_ERROR_MESSAGE_MAX] = "";
  for (int n = 1; n <= lookups && n_failing < 64; n++) {
    int rc = life_init_refused(s, ctx, n, NULL, msg, sizeof msg);
    if (rc < 0) {
      uc_report(s, name, UC_FAIL, "init returned success without an instance");
      uc_host_ctx_free(ctx);
      return;
    }
    if (rc == 1) {
      if (!n_failing)
        snprintf(first, sizeof first, "%s", msg);
      failing[n_failing++] = n;
    }
  }
  if (!n_failing) {
    uc_host_ctx_free(ctx);
    uc_report(s, name, UC_PASS,
              "init went on with each of its %d settings refused as of the wrong type: no failing "
              "init to check",
              lookups);
    return;
  }
  uc_leak leak;
  uc_leak_start(&leak);
  for (int i = 0; i < LIFE_ROUNDS; i++) {
    for (int k = 0; k < n_failing; k++)
      (void)life_init_refused(s, ctx, failing[k], NULL, msg, sizeof msg);
    uc_leak_round(&leak);
  }
  uc_host_ctx_free(ctx);
  char what[256];
  if (uc_leak_verdict(&leak, what, sizeof what))
    uc_report(s, name, UC_FAIL, "a failed init leaks: %s; %d of %d settings make init fail (%s)",
              what, n_failing, lookups, uc_meter_heap_source());
  else
    uc_report(s, name, UC_PASS, "%d of %d settings refused make init fail (\"%s\"), %s", n_failing,
              lookups, first, what);
}

/* fresh: on a fresh work dir is_fresh_task says true; process runs (until it returns; then the
 * token); a new instance on the same work dir says false. A dump or load is given up to 60 s to
 * finish: what such a unit did before a stop may count for nothing (a dump keeps no partial
 * dump: it starts over, so a dump stopped at 2 s is rightly still fresh), and whether 2 s were
 * enough depended on the machine's load. Other kinds (a sync, a relay, a custom one) run until
 * stopped: 2 s, then the token. */
void uc_check_fresh(uc_state *s) {
  const char *name = "fresh";
  char why[1200];
  uc_inst in;
  bool fresh = false;
  if (!uc_inst_begin(s, name, &in, &fresh))
    return;
  if (!fresh) {
    uc_inst_close(s, &in);
    uc_report(s, name, UC_FAIL,
              "is_fresh_task says false before any work (a fresh work dir; a unit keeping "
              "checkpoints elsewhere needs a task name or meta-schema that has none)");
    return;
  }
  uc_run *r = uc_run_begin(s, name, &in);
  if (!r)
    return;
  bool finite = s->d->kind == DM_UNIT_DUMP || s->d->kind == DM_UNIT_LOAD;
  bool returned = uc_run_wait(r, r->start_ms + (finite ? 60000 : 2000)) || uc_run_stop(s, &in, r);
  char said[700];
  uc_run_said(r, said, sizeof said);
  double ran = r->end_ms - r->start_ms;
  uint32_t outcome = r->result.outcome;
  uc_run_free(r);
  if (!returned) {
    uc_report(s, name, UC_FAIL, "process returned neither after the stop token nor after kill");
    return;
  }
  uc_inst_close(s, &in);
  uc_host_reset(s->host);
  if (outcome == DM_OUTCOME_ERROR) {
    uc_report(s, name, UC_FAIL, "process failed: %s", said);
    return;
  }
  if (uc_inst_open(s, name, &in, why, sizeof why) < 0 ||
      uc_inst_fresh(s, &in, &fresh, why, sizeof why) < 0) {
    uc_inst_close(s, &in);
    uc_report(s, name, UC_FAIL, "second instance: %s", why);
    return;
  }
  uc_inst_close(s, &in);
  if (fresh)
    uc_report(s, name, UC_FAIL, "is_fresh_task still says true after process ran %.0f ms (%s)", ran,
              said);
  else
    uc_report(s, name, UC_PASS, "true before, false after process ran %.0f ms (%s)", ran, said);
}
