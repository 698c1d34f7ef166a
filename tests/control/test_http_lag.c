/*
 * The replication lag kept by the daemon (issue 14): GET /api/v1/dmhost/tasks/{task-name}/lag answers
 * the lag history that `dmhost serve` samples from the sync's dm_syncer_replication_lag_gauge
 * (metrics.h, dmh_metrics_history_*), so a page opened late still draws the minutes before it.
 *
 * Before this, the page kept the samples itself (from its own /metrics polls) and the route did
 * not exist (404): a page opened after the task had run drew nothing of the time before.
 *
 * The daemon runs the fake sync of tests/fixtures with `lag = 100`: its gauge and its
 * secondsBehindMaster say 100 s plus the seconds since its init, as a sync falling behind does.
 * The ring itself (bounded, oldest dropped, read after a time) and the cost of one tick are
 * checked on a registry of the test's own.
 */
#include <CUnit/Basic.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cunit_run.h"
#include "dmhost/sdk.h"
#include "e2e_util.h"
#include "metrics.h"
#include "test_http_client.h"

static char addr[64];

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* GET `path` of the daemon: the parsed answer, *status. */
static json_object *get(const char *path, long *status) {
  char url[256];
  snprintf(url, sizeof url, "http://%s%s", addr, path);
  char *text = dmh_test_http(url, "GET", NULL, status, NULL, 0);
  json_object *o = text ? json_tokener_parse(text) : NULL;
  free(text);
  return o;
}

static void start_lagging(const char *file) {
  json_object *o = NULL;
  CU_ASSERT_EQUAL_FATAL(e2e_dmctl(&o, "start-task", file, NULL), 0);
  json_object_put(o);
  CU_ASSERT_FATAL(e2e_wait_stage("lagging", "Running", 10));
}

static void test_lag_route(void) {
  CU_ASSERT_FATAL(e2e_setup() == 0);
  e2e_source("source.cfg", "mysql-01", false);
  const char *extra[] = {"--listen", "127.0.0.1:0", NULL};
  CU_ASSERT_FATAL(e2e_start_with(extra, false));
  CU_ASSERT_FATAL(e2e_http_addr(addr, sizeof addr));
  e2e_create_source();
  e2e_task("lag.cfg", "lagging", "incremental", "mysql-01",
           "sync = { items = 0; item-ms = 50; lag = 100; };");
  int64_t t_start = now_ms();
  start_lagging("lag.cfg");
  /* the fake's init, where its lag starts counting, was between t_start and this (on a loaded
   * machine the start-task before it can take seconds) */
  int64_t t_running = now_ms();

  /* N = 6 s after the start, the client looks for the first time: the history it gets begins
   * before that (the daemon sampled while nobody asked), at the first tick after the sync's
   * first gauge (within a period of the start, a second allowed for the start itself) */
  e2e_sleep_ms(6000);
  int64_t t_look = now_ms();
  long status = 0;
  json_object *a = get("/api/v1/dmhost/tasks/lagging/lag", &status);
  CU_ASSERT_EQUAL_FATAL(status, 200);
  if (!e2e_bool(a, "result"))
    fprintf(stderr, "\n  lag: %s\n", json_object_to_json_string(a));
  CU_ASSERT_FATAL(e2e_bool(a, "result"));
  CU_ASSERT(e2e_str_is(a, "task", "lagging"));
  CU_ASSERT(e2e_str_is(a, "sources.0.source", "mysql-01"));
  CU_ASSERT_EQUAL(e2e_int(a, "periodMs"), DMH_METRICS_LAG_PERIOD_MS);
  json_object *samples = e2e_get(a, "sources.0.samples");
  CU_ASSERT_FATAL(samples && json_object_is_type(samples, json_type_array));
  size_t n = json_object_array_length(samples);
  CU_ASSERT_FATAL(n >= 2); /* 2 s apart over 6 s */
  int64_t first = json_object_get_int64(
              json_object_array_get_idx(json_object_array_get_idx(samples, 0), 0)),
          prev = 0, last = 0;
  printf("\n  %zu samples, the first %.1f s before the first look\n", n,
         (double)(t_look - first) / 1000);
  CU_ASSERT(first < t_look - 3000); /* older than N - 1 s - a period */
  CU_ASSERT(first >= t_start - 100 && first <= t_running + DMH_METRICS_LAG_PERIOD_MS + 1000);
  double last_v = 0;
  for (size_t i = 0; i < n; i++) {
    json_object *p = json_object_array_get_idx(samples, i);
    int64_t t = json_object_get_int64(json_object_array_get_idx(p, 0));
    double v = json_object_get_double(json_object_array_get_idx(p, 1));
    /* one every period: a loaded machine may delay a tick (the next one is on time again, so
     * that gap is shorter), never run two at once or skip one */
    if (i > 0 && (t <= prev || t - prev > 2 * DMH_METRICS_LAG_PERIOD_MS)) {
      fprintf(stderr, "\n  samples %lld then %lld ms\n", (long long)prev, (long long)t);
      CU_FAIL("the samples are not a period apart");
    }
    /* the fake's lag is 100 s + the whole seconds since its init (after t_start, before
     * t_running): each sample is the gauge of its moment */
    double lo = 100 + (double)(t - t_running) / 1000 - 1.6,
           hi = 100 + (double)(t - t_start) / 1000 + 0.6;
    if (v < lo || v > hi) {
      fprintf(stderr, "\n  sample at +%lld ms: %g s, expected %g to %g (Running seen +%lld ms)\n",
              (long long)(t - t_start), v, lo, hi, (long long)(t_running - t_start));
      CU_FAIL("a sample is not the gauge of its moment");
    }
    prev = t;
    last = t;
    last_v = v;
  }
  json_object_put(a);
  /* what query-status says (the fake's secondsBehindMaster, computed as its gauge) */
  json_object *q = NULL;
  CU_ASSERT_EQUAL(e2e_dmctl(&q, "query-status", "lagging", NULL), 0);
  int64_t behind = e2e_int(q, "sources.0.subTaskStatus.0.syncStatus.secondsBehindMaster");
  int64_t t_q = now_ms();
  json_object_put(q);
  double at_q = last_v + (double)(t_q - last) / 1000; /* the newest sample, aged to the query */
  if (behind < at_q - 2 || behind > at_q + 2)
    fprintf(stderr, "\n  query-status %lld s, the newest sample %g s (%lld ms before)\n",
            (long long)behind, last_v, (long long)(t_q - last));
  CU_ASSERT(behind >= at_q - 2 && behind <= at_q + 2);

  /* ?since=: only what came after (what the page appends at each poll) */
  char path[128];
  snprintf(path, sizeof path, "/api/v1/dmhost/tasks/lagging/lag?since=%lld", (long long)last);
  e2e_sleep_ms(2500);
  a = get(path, &status);
  CU_ASSERT(e2e_bool(a, "result"));
  samples = e2e_get(a, "sources.0.samples");
  CU_ASSERT(samples && json_object_array_length(samples) >= 1 &&
            json_object_array_length(samples) <= 3);
  for (size_t i = 0; samples && i < json_object_array_length(samples); i++)
    CU_ASSERT(json_object_get_int64(
                  json_object_array_get_idx(json_object_array_get_idx(samples, i), 0)) > last);
  json_object_put(a);
  a = get("/api/v1/dmhost/tasks/lagging/lag?since=soon", &status);
  CU_ASSERT_EQUAL(e2e_int(a, "error.ErrCode"), DM_ERR_CONTROL_REQUEST);
  json_object_put(a);

  /* stop-task: the task and its history are gone, the route says so with a code */
  CU_ASSERT_EQUAL(e2e_dmctl(&q, "stop-task", "lagging", NULL), 0);
  json_object_put(q);
  a = get("/api/v1/dmhost/tasks/lagging/lag", &status);
  CU_ASSERT(!e2e_bool(a, "result"));
  CU_ASSERT_EQUAL(e2e_int(a, "error.ErrCode"), DM_ERR_NOT_FOUND);
  CU_ASSERT(a && strstr(json_object_to_json_string(a), "does not exist on this worker"));
  json_object_put(a);
  /* started again under the same name: a new history, nothing of the old task's */
  int64_t t_again = now_ms();
  start_lagging("lag.cfg");
  a = get("/api/v1/dmhost/tasks/lagging/lag", &status);
  CU_ASSERT(e2e_bool(a, "result"));
  samples = e2e_get(a, "sources.0.samples");
  CU_ASSERT_PTR_NOT_NULL(samples);
  for (size_t i = 0; samples && i < json_object_array_length(samples); i++)
    CU_ASSERT(json_object_get_int64(json_object_array_get_idx(json_object_array_get_idx(samples, i),
                                                              0)) >= t_again - 100);
  json_object_put(a);
  CU_ASSERT_EQUAL(e2e_stop(), 0);
  e2e_teardown();
}

static int ring_count;
static double ring_first, ring_last;
static int64_t ring_first_t;
static void ring_read(void *ud, const char *const *values, int n_labels,
                      const dmh_metrics_sample *s, size_t n) {
  (void)ud, (void)values, (void)n_labels;
  ring_count = (int)n;
  ring_first = n ? s[0].value : -1;
  ring_first_t = n ? s[0].unix_ms : -1;
  ring_last = n ? s[n - 1].value : -1;
}

/* The ring: bounded (the oldest go), read in order after `since`, freed with its owner's series;
 * and the cost of a tick over many series. */
static void test_ring(void) {
  dmh_metrics *r = dmh_metrics_new();
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_metrics_history_start(r, DMH_METRICS_LAG, 1000000, 300, &err), 0);
  CU_ASSERT_EQUAL(dmh_metrics_history_start(r, DMH_METRICS_LAG, 1000, 300, &err), -1);
  /* The sampler's first tick is at once, at the real time: were its thread scheduled late (the
   * fresh-clone CI's ASan run), that tick landed among the samples given below, one more in the
   * ring (the first 101 gone, 3 after t0 + 397 * 2000). Stopped before there is a series; the
   * ring's size and family stay, and the samples are the test's own. */
  dmh_metrics_history_stop(r);
  static const char *const labels[] = {"task", "source_id", "worker"};
  dmh_metric_family *f;
  CU_ASSERT_EQUAL_FATAL(
      dmh_metrics_family(r, DMH_METRICS_LAG, DM_METRIC_GAUGE, "lag", labels, 3, NULL, 0, &f, &err),
      0);
  const char *v[] = {"t", "s", "w"};
  uint64_t owner = dmh_metrics_owner_new();
  int64_t t0 = 1700000000000;
  for (int i = 0; i < 400; i++) {
    dmh_metric_set(f, owner, v, i);
    dmh_metrics_history_sample(r, t0 + i * 2000);
  }
  static const char *const match[] = {"task", "source_id"};
  const char *mv[] = {"t", "s"};
  CU_ASSERT_EQUAL(dmh_metrics_history_read(r, match, mv, 2, 0, ring_read, NULL), 1);
  CU_ASSERT_EQUAL(ring_count, 300);
  CU_ASSERT_EQUAL(ring_first, 100); /* the first 100 are gone */
  CU_ASSERT_EQUAL(ring_first_t, t0 + 100 * 2000);
  CU_ASSERT_EQUAL(ring_last, 399);
  CU_ASSERT_EQUAL(dmh_metrics_history_read(r, match, mv, 2, t0 + 397 * 2000, ring_read, NULL), 1);
  CU_ASSERT_EQUAL(ring_count, 2);
  const char *other[] = {"t", "x"};
  CU_ASSERT_EQUAL(dmh_metrics_history_read(r, match, other, 2, 0, ring_read, NULL), 0);
  dmh_metrics_drop_owner(r, owner); /* the subtask destroyed: its history with it */
  CU_ASSERT_EQUAL(dmh_metrics_history_read(r, match, mv, 2, 0, ring_read, NULL), 0);

  /* one tick over 1000 subtasks' series (rings full) */
  char names[1000][16];
  for (int i = 0; i < 1000; i++) {
    snprintf(names[i], sizeof names[i], "task%d", i);
    const char *vi[] = {names[i], "s", "w"};
    dmh_metric_set(f, owner, vi, i);
  }
  for (int i = 0; i < 300; i++)
    dmh_metrics_history_sample(r, t0 + i * 2000);
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (int i = 0; i < 100; i++)
    dmh_metrics_history_sample(r, t0 + (300 + i) * 2000);
  clock_gettime(CLOCK_MONOTONIC, &b);
  double us = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / 1e3 / 100;
  printf("\n  one tick over 1000 series: %.1f us (%.3f us a series)\n", us, us / 1000);
  CU_ASSERT(us < 100000); /* far below the 2 s period, whatever the build */
  dmh_metrics_free(r);
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  curl_global_init(CURL_GLOBAL_DEFAULT);
  static const dmh_cunit_test tests[] = {
      {"the lag history's ring", test_ring},
      {"GET /api/v1/dmhost/tasks/{task-name}/lag", test_lag_route},
  };
  int rc = dmh_cunit_run("control http lag", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
  curl_global_cleanup();
  return rc;
}
