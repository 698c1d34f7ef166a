/*
 * check_unit <unit.so> [--run <empty folder>]
 *
 * Loads a unit built out of tree through the host's loader (kind dump) and prints its identity.
 * With --run it also drives the reference-counter unit through the fake host of dmhost-unit-check
 * (host/unit_check/fake_host.h; work dir: the folder given, settings count = 25, batch = 10): a run
 * stopped by the stop token at its second safe point (after one batch), a simulated crash that
 * leaves lines past the checkpoint, and a second instance that must finish with every number
 * exactly once. Exit 0 only if all of it holds.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmhost/sdk.h"
#include "fake_host.h"
#include "loader.h"

typedef struct {
  uint64_t done, total;
  int64_t count;
} check_status;

static void check_put_progress(dm_status_sink *s, uint64_t done, uint64_t total, const char *w) {
  check_status *st = s->host_data;
  if (strcmp(w, "rows") == 0) {
    st->done = done;
    st->total = total;
  }
}

static void check_put_int(dm_status_sink *s, const char *key, int64_t value) {
  check_status *st = s->host_data;
  if (strcmp(key, "count") == 0)
    st->count = value;
}

static int check_fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("check_unit: FAILED: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return 1;
}

/* numbers.txt must be exactly 1..n, one per line. */
static int check_numbers(const char *dir, int n) {
  char path[4096];
  snprintf(path, sizeof path, "%s/numbers.txt", dir);
  FILE *f = fopen(path, "r");
  if (!f)
    return check_fail("%s is missing", path);
  int want = 1, got;
  while (fscanf(f, "%d", &got) == 1) {
    if (got != want) {
      fclose(f);
      return check_fail("%s: line %d is %d", path, want, got);
    }
    want++;
  }
  fclose(f);
  if (want != n + 1)
    return check_fail("%s has %d numbers, expected %d", path, want - 1, n);
  return 0;
}

static int check_checkpoint(const char *dir, long want) {
  char path[4096];
  snprintf(path, sizeof path, "%s/checkpoint", dir);
  FILE *f = fopen(path, "r");
  long got = -1;
  if (!f || fscanf(f, "%ld", &got) != 1 || got != want) {
    if (f)
      fclose(f);
    return check_fail("%s holds %ld, expected %ld", path, got, want);
  }
  fclose(f);
  return 0;
}

/* One instance from init to close; returns the outcome, or -1. The token fires at the unit's
 * `stop_after`-th look at it (0: never). */
static int check_instance(uc_host *h, const dm_unit_descriptor *d, int stop_after, bool want_fresh,
                          check_status *st) {
  uc_host_reset(h);
  uc_host_fire_at_looks(h, stop_after);
  dm_error err;
  dm_ctx *ctx = uc_host_ctx(h, ".", &err);
  void *self = NULL;
  if (!ctx || d->ops.init(uc_host_services(), ctx, &self, &err) != 0) {
    check_fail("init: %s", err.message);
    uc_host_ctx_free(ctx);
    return -1;
  }
  bool fresh = !want_fresh;
  if (d->ops.is_fresh_task(self, &fresh, &err) != 0 || fresh != want_fresh) {
    d->ops.close(self);
    uc_host_ctx_free(ctx);
    check_fail("is_fresh_task: %d, expected %d", fresh, want_fresh);
    return -1;
  }
  dm_result result;
  memset(&result, 0, sizeof result);
  d->ops.process(self, &result);
  if (result.outcome == DM_OUTCOME_ERROR)
    fprintf(stderr, "check_unit: process: %s\n", result.errors[0].message);
  if (d->ops.status) {
    dm_status_sink sink = {
        .put_progress = check_put_progress, .put_int = check_put_int, .host_data = st};
    d->ops.status(self, &sink);
  }
  if (d->ops.pause && result.outcome == DM_OUTCOME_CANCELED)
    d->ops.pause(self);
  d->ops.close(self);
  uc_host_ctx_free(ctx);
  return (int)result.outcome;
}

static int check_run_on(uc_host *h, const dm_unit_descriptor *d, const char *dir) {
  check_status st = {0};
  /* The token fires at the second safe point: one batch of 10 is committed. */
  if (check_instance(h, d, 2, true, &st) != DM_OUTCOME_CANCELED)
    return check_fail("a stopped run did not return DM_OUTCOME_CANCELED");
  if (check_numbers(dir, 10) || check_checkpoint(dir, 10))
    return 1;
  if (st.done != 10 || st.total != 25 || st.count != 25)
    return check_fail("status after the stop: %llu/%llu rows, count %lld",
                      (unsigned long long)st.done, (unsigned long long)st.total,
                      (long long)st.count);

  /* A crash in the middle of the next batch: lines written, checkpoint not committed. */
  char path[4096];
  snprintf(path, sizeof path, "%s/numbers.txt", dir);
  FILE *f = fopen(path, "a");
  if (!f || fputs("11\n12\n1", f) < 0 || fclose(f) != 0)
    return check_fail("cannot simulate the crash in %s", path);

  if (check_instance(h, d, 0, false, &st) != DM_OUTCOME_FINISHED)
    return check_fail("the second run did not return DM_OUTCOME_FINISHED");
  if (check_numbers(dir, 25) || check_checkpoint(dir, 25))
    return 1;
  if (st.done != 25 || st.total != 25)
    return check_fail("status at the end: %llu/%llu rows", (unsigned long long)st.done,
                      (unsigned long long)st.total);
  printf("run: ok (stopped at 10, crash trimmed, finished at 25)\n");
  return 0;
}

static int check_run(const dm_unit_descriptor *d, const char *dir) {
  char cfg[4096];
  snprintf(cfg, sizeof cfg, "%s/check-unit.cfg", dir);
  FILE *cf = fopen(cfg, "w");
  if (!cf || fputs("dump = { count = 25; batch = 10; };\n", cf) < 0 || fclose(cf) != 0)
    return check_fail("cannot write %s", cfg);
  uc_host *h = NULL;
  dm_error err;
  if (uc_host_open(cfg, d->kind, d->kind_name, dir, &h, &err) != 0)
    return check_fail("fake host: %s", err.message);
  int rc = check_run_on(h, d, dir);
  uc_host_close(h, false);
  return rc;
}

int main(int argc, char **argv) {
  if (argc != 2 && !(argc == 4 && strcmp(argv[2], "--run") == 0)) {
    fprintf(stderr, "usage: check_unit <unit.so> [--run <empty folder>]\n");
    return 2;
  }
  dmh_load_opts opts = {.kind = DM_UNIT_DUMP};
  dmh_unit_lib *lib = NULL;
  dm_error err;
  if (dmh_unit_lib_open(argv[1], &opts, &lib, &err) != 0) {
    fprintf(stderr, "check_unit: %s (%s): %s\n  raw cause: %s\n  workaround: %s\n",
            dm_error_code_name(err.code), dm_error_class_name(err.cls), err.message, err.raw_cause,
            err.workaround);
    return 1;
  }
  const dm_unit_descriptor *d = dmh_unit_lib_descriptor(lib);
  printf("name=%s version=%s abi=%u.%u kind=dump\n", d->name, d->version, (unsigned)d->abi_major,
         (unsigned)d->abi_minor);
  int rc = argc == 4 ? check_run(d, argv[3]) : 0;
  dmh_unit_lib_unref(lib);
  return rc;
}
