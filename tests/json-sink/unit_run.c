/*
 * unit_run <unit.so> <config> <root> <work>
 *
 * Runs one unit (any kind) through the fake host of dmhost-unit-check (host/unit_check/
 * fake_host.h: the config as `dmhost-unit-check --config` reads it, work dir <root>/<work>) the
 * way the supervisor would: init, is_fresh_task, process, until SIGTERM fires the stop token
 * (then pause and close, exit 0). process returning an error exits 1 with the error's message on
 * stderr; a unit that never finishes returning canceled is expected, so it is run again (as
 * auto-resume would). kill.sh kills this process with SIGKILL: a crash of the whole host.
 * Prints "fresh=<0|1>" once is_fresh_task answered.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dmhost/sdk.h"
#include "fake_host.h"
#include "loader.h"

static uc_host *run_host;

static void *run_signals(void *arg) {
  sigset_t *set = arg;
  int sig;
  sigwait(set, &sig);
  uc_host_fire(run_host);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: unit_run <unit.so> <config> <root> <work>\n");
    return 2;
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, NULL);

  dmh_load_opts opts = {.kind = 0};
  dmh_unit_lib *lib = NULL;
  dm_error err;
  memset(&err, 0, sizeof err);
  if (dmh_unit_lib_open(argv[1], &opts, &lib, &err) != 0) {
    fprintf(stderr, "unit_run: %s\n", err.message);
    return 1;
  }
  const dm_unit_descriptor *d = dmh_unit_lib_descriptor(lib);
  if (uc_host_open(argv[2], d->kind, d->kind_name, argv[3], &run_host, &err) != 0) {
    fprintf(stderr, "unit_run: fake host: %s\n", err.message);
    return 1;
  }
  pthread_t sig_thread;
  pthread_create(&sig_thread, NULL, run_signals, &set);
  int rc = 1;
  dm_ctx *ctx = uc_host_ctx(run_host, argv[4], &err);
  void *self = NULL;
  if (!ctx || d->ops.init(uc_host_services(), ctx, &self, &err) != 0) {
    fprintf(stderr, "unit_run: init: %s\n", err.message);
    goto out;
  }
  bool fresh = false;
  if (d->ops.is_fresh_task(self, &fresh, &err) != 0) {
    fprintf(stderr, "unit_run: is_fresh_task: %s\n", err.message);
    d->ops.close(self);
    goto out;
  }
  printf("fresh=%d\n", fresh);
  fflush(stdout);
  for (;;) {
    dm_result result;
    memset(&result, 0, sizeof result);
    d->ops.process(self, &result);
    if (result.outcome == DM_OUTCOME_ERROR) {
      fprintf(stderr, "unit_run: process: [code %d] %s\n", result.errors[0].code,
              result.errors[0].message);
      break;
    }
    if (uc_host_fired(run_host, NULL) || result.outcome == DM_OUTCOME_FINISHED) {
      if (result.outcome == DM_OUTCOME_CANCELED && d->ops.pause)
        d->ops.pause(self);
      rc = 0;
      break;
    }
  }
  d->ops.close(self);
out:
  uc_host_ctx_free(ctx);
  pthread_cancel(sig_thread);
  pthread_join(sig_thread, NULL);
  uc_host_close(run_host, true);
  dmh_unit_lib_unref(lib);
  return rc;
}
