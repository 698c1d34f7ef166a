/*
 * The metrics registry and its exposition (host/base/metrics.c, docs/metrics.md), without a daemon:
 * every type in Prometheus' text format 0.0.4 (HELP and label escaping, histogram buckets, _sum,
 * _count, +Inf), the refusals (names, labels, buckets, a type clash), updates from many threads
 * that must sum exactly, the series of an owner (a subtask) dropped with it, and the unit-facing
 * services (metric_register/add/set/observe) that add task and source_id. Every exposition also
 * goes through `promtool check metrics` (tests/promtool_check.h).
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cunit_run.h"
#include "dmhost/sdk.h"
#include "metrics.h"
#include "promtool_check.h"
#include "unit_ctx.h"

static void assert_promtool(const char *text) {
  char why[9000];
  int rc = promtool_check(text, why, sizeof why);
  if (rc != 0)
    fprintf(stderr, "\n%s\n--- exposition:\n%s\n", why, text);
  CU_ASSERT_EQUAL(rc, 0);
}

static dmh_metric_family *fam(dmh_metrics *r, const char *name, dm_metric_type type,
                              const char *help, const char *const *labels, int n,
                              const double *buckets, int nb) {
  dmh_metric_family *f = NULL;
  dm_error err;
  int rc = dmh_metrics_family(r, name, type, help, labels, n, buckets, nb, &f, &err);
  if (rc != 0)
    fprintf(stderr, "\n%s\n", err.message);
  CU_ASSERT_EQUAL_FATAL(rc, 0);
  return f;
}

/* Every type, exactly as Prometheus reads it. */
static void test_format(void) {
  dmh_metrics *r = dmh_metrics_new();
  static const char *const lab[] = {"task", "table"};
  dmh_metric_family *c =
      fam(r, "rows_total", DM_METRIC_COUNTER, "rows \\ applied\nper table", lab, 2, NULL, 0);
  dmh_metric_family *g = fam(r, "lag_seconds", DM_METRIC_GAUGE, "lag", NULL, 0, NULL, 0);
  static const double b[] = {0.5, 1, 2.5};
  dmh_metric_family *h = fam(r, "txn_seconds", DM_METRIC_HISTOGRAM, "txn", lab, 1, b, 3);
  const char *v1[] = {"t1", "a\"b\\c\nd"}, *v2[] = {"t1", NULL};
  dmh_metric_add(c, 1, v1, 3);
  dmh_metric_add(c, 1, v2, 1.5);
  dmh_metric_add(c, 1, v1, 2);
  dmh_metric_add(c, 1, v1, -1);      /* refused: a counter only goes up */
  dmh_metric_set(c, 1, v1, 100);     /* refused: not a gauge */
  dmh_metric_set(g, 1, NULL, 0.1);   /* a float that %.15g renders exactly */
  dmh_metric_add(g, 1, NULL, -0.2);  /* a gauge goes down */
  dmh_metric_observe(h, 1, v1, 0.5); /* le="0.5" holds 0.5 itself */
  dmh_metric_observe(h, 1, v1, 2);
  dmh_metric_observe(h, 1, v1, 1e9); /* only +Inf */
  dmh_metric_observe(h, 1, v1, NAN); /* refused */
  dmh_metrics_family(r, "empty", DM_METRIC_GAUGE, "no series", NULL, 0, NULL, 0, &g,
                     &(dm_error){0});
  size_t len = 0;
  char *text = dmh_metrics_render(r, &len);
  CU_ASSERT_PTR_NOT_NULL_FATAL(text);
  const char *want = "# HELP rows_total rows \\\\ applied\\nper table\n"
                     "# TYPE rows_total counter\n"
                     "rows_total{task=\"t1\",table=\"a\\\"b\\\\c\\nd\"} 5\n"
                     "rows_total{task=\"t1\",table=\"\"} 1.5\n"
                     "# HELP lag_seconds lag\n"
                     "# TYPE lag_seconds gauge\n"
                     "lag_seconds -0.1\n"
                     "# HELP txn_seconds txn\n"
                     "# TYPE txn_seconds histogram\n"
                     "txn_seconds_bucket{task=\"t1\",le=\"0.5\"} 1\n"
                     "txn_seconds_bucket{task=\"t1\",le=\"1\"} 1\n"
                     "txn_seconds_bucket{task=\"t1\",le=\"2.5\"} 2\n"
                     "txn_seconds_bucket{task=\"t1\",le=\"+Inf\"} 3\n"
                     "txn_seconds_sum{task=\"t1\"} 1000000002.5\n"
                     "txn_seconds_count{task=\"t1\"} 3\n";
  if (strcmp(text, want) != 0)
    fprintf(stderr, "\n--- got:\n%s--- want:\n%s", text, want);
  CU_ASSERT_STRING_EQUAL(text, want);
  CU_ASSERT_EQUAL(len, strlen(want));
  assert_promtool(text);
  free(text);
  dmh_metrics_free(r);
}

static void expect_refused(dmh_metrics *r, int code, const char *name, dm_metric_type type,
                           const char *const *labels, int n, const double *b, int nb,
                           const char *in_message) {
  dmh_metric_family *f = (dmh_metric_family *)1;
  dm_error err = {0};
  CU_ASSERT_EQUAL(dmh_metrics_family(r, name, type, "h", labels, n, b, nb, &f, &err), -1);
  CU_ASSERT_PTR_NULL(f);
  CU_ASSERT_EQUAL(err.code, code);
  if (!strstr(err.message, in_message))
    fprintf(stderr, "\nmessage \"%s\" lacks \"%s\"\n", err.message, in_message);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, in_message));
}

static void test_refusals(void) {
  dmh_metrics *r = dmh_metrics_new();
  static const char *const ok[] = {"a", "b"}, *const dunder[] = {"__x"}, *const le[] = {"le"},
                           *const dash[] = {"a-b"}, *const twice[] = {"a", "a"};
  static const double down[] = {1, 0.5}, inf_mid[] = {1, INFINITY, 2}, one[] = {1};
  expect_refused(r, DM_ERR_METRIC_INVALID, "1abc", DM_METRIC_GAUGE, NULL, 0, NULL, 0,
                 "not a Prometheus name");
  expect_refused(r, DM_ERR_METRIC_INVALID, "a-b", DM_METRIC_GAUGE, NULL, 0, NULL, 0,
                 "not a Prometheus name");
  expect_refused(r, DM_ERR_METRIC_INVALID, "x", DM_METRIC_GAUGE, dunder, 1, NULL, 0, "\"__x\"");
  expect_refused(r, DM_ERR_METRIC_INVALID, "x", DM_METRIC_GAUGE, dash, 1, NULL, 0, "\"a-b\"");
  expect_refused(r, DM_ERR_METRIC_INVALID, "x", DM_METRIC_HISTOGRAM, le, 1, NULL, 0, "\"le\"");
  expect_refused(r, DM_ERR_METRIC_INVALID, "x", DM_METRIC_GAUGE, twice, 2, NULL, 0, "twice");
  expect_refused(r, DM_ERR_METRIC_INVALID, "x", DM_METRIC_HISTOGRAM, NULL, 0, down, 2, "bucket 1");
  expect_refused(r, DM_ERR_METRIC_INVALID, "x", DM_METRIC_HISTOGRAM, NULL, 0, inf_mid, 3,
                 "bucket 1");
  expect_refused(r, DM_ERR_METRIC_INVALID, "x", DM_METRIC_COUNTER, NULL, 0, one, 1,
                 "buckets are for a histogram");
  expect_refused(r, DM_ERR_METRIC_INVALID, "x", (dm_metric_type)7, NULL, 0, NULL, 0, "type 7");
  /* the same name, type and labels: the same family; another type or labels: a clash */
  dmh_metric_family *a = fam(r, "dup_total", DM_METRIC_COUNTER, "first", ok, 2, NULL, 0);
  CU_ASSERT_PTR_EQUAL(fam(r, "dup_total", DM_METRIC_COUNTER, "second", ok, 2, NULL, 0), a);
  expect_refused(r, DM_ERR_METRIC_CLASH, "dup_total", DM_METRIC_GAUGE, ok, 2, NULL, 0,
                 "registered as a counter with labels {a,b}; it cannot also be a gauge");
  expect_refused(r, DM_ERR_METRIC_CLASH, "dup_total", DM_METRIC_COUNTER, ok, 1, NULL, 0,
                 "with labels {a}");
  /* colons are Prometheus' recording rules' (promtool's linter refuses them in a target's) */
  expect_refused(r, DM_ERR_METRIC_INVALID, "ns:lat", DM_METRIC_GAUGE, NULL, 0, NULL, 0,
                 "not a Prometheus name");
  /* the last bucket +Inf: dropped, it is always there */
  static const double with_inf[] = {1, INFINITY};
  dmh_metric_family *h = fam(r, "ns_lat", DM_METRIC_HISTOGRAM, "h", NULL, 0, with_inf, 2);
  dmh_metric_observe(h, 0, NULL, 3);
  char *text = dmh_metrics_render(r, NULL);
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "ns_lat_bucket{le=\"1\"} 0\nns_lat_bucket{le=\"+Inf\"} 1\n"));
  CU_ASSERT_PTR_NULL(strstr(text, "dup_total")); /* no series: nothing said */
  assert_promtool(text);
  free(text);
  dmh_metrics_free(r);
}

/* ---- threads ---- */

#define T_THREADS 8
#define T_ROUNDS 20000

typedef struct t_arg {
  dmh_metric_family *c, *g, *h;
  int id;
} t_arg;

static void *t_main(void *p) {
  t_arg *a = p;
  char own[16];
  snprintf(own, sizeof own, "w%d", a->id);
  for (int i = 0; i < T_ROUNDS; i++) {
    const char *shared[] = {i % 2 ? "odd" : "even"}, *mine[] = {own};
    dmh_metric_add(a->c, 1, shared, 1);
    dmh_metric_add(a->c, 1, mine, 0.5);
    dmh_metric_add(a->g, 1, NULL, i % 2 ? 1 : -1);
    dmh_metric_observe(a->h, 1, shared, (double)(i % 4));
  }
  return NULL;
}

/* Many threads on shared and own label sets, a render now and then: the sums are exact. */
static void test_threads(void) {
  dmh_metrics *r = dmh_metrics_new();
  static const char *const lab[] = {"k"};
  static const double b[] = {0, 1, 2};
  t_arg args[T_THREADS];
  pthread_t t[T_THREADS];
  dmh_metric_family *c = fam(r, "ops_total", DM_METRIC_COUNTER, "ops", lab, 1, NULL, 0);
  dmh_metric_family *g = fam(r, "level", DM_METRIC_GAUGE, "level", NULL, 0, NULL, 0);
  dmh_metric_family *h = fam(r, "val", DM_METRIC_HISTOGRAM, "val", lab, 1, b, 3);
  for (int i = 0; i < T_THREADS; i++) {
    args[i] = (t_arg){c, g, h, i};
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t[i], NULL, t_main, &args[i]), 0);
  }
  for (int i = 0; i < 5; i++) /* scrapes while they run */
    free(dmh_metrics_render(r, NULL));
  for (int i = 0; i < T_THREADS; i++)
    pthread_join(t[i], NULL);
  char *text = dmh_metrics_render(r, NULL);
  char want[512];
  snprintf(want, sizeof want, "ops_total{k=\"even\"} %d\n", T_THREADS * T_ROUNDS / 2);
  CU_ASSERT_PTR_NOT_NULL(strstr(text, want));
  snprintf(want, sizeof want, "ops_total{k=\"odd\"} %d\n", T_THREADS * T_ROUNDS / 2);
  CU_ASSERT_PTR_NOT_NULL(strstr(text, want));
  for (int i = 0; i < T_THREADS; i++) {
    snprintf(want, sizeof want, "ops_total{k=\"w%d\"} %d\n", i, T_ROUNDS / 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, want));
  }
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "\nlevel 0\n"));
  /* even rounds observe 0 and 2, odd ones 1 and 3: per label set a quarter of all in each */
  int quarter = T_THREADS * T_ROUNDS / 4;
  snprintf(want, sizeof want,
           "val_bucket{k=\"even\",le=\"0\"} %d\nval_bucket{k=\"even\",le=\"1\"} %d\n"
           "val_bucket{k=\"even\",le=\"2\"} %d\nval_bucket{k=\"even\",le=\"+Inf\"} %d\n",
           quarter, quarter, 2 * quarter, 2 * quarter);
  CU_ASSERT_PTR_NOT_NULL(strstr(text, want));
  snprintf(want, sizeof want, "val_sum{k=\"odd\"} %d\nval_count{k=\"odd\"} %d\n", 4 * quarter,
           2 * quarter);
  CU_ASSERT_PTR_NOT_NULL(strstr(text, want));
  if (!strstr(text, want))
    fprintf(stderr, "\n%s\n", text);
  assert_promtool(text);
  free(text);
  dmh_metrics_free(r);
}

/* ---- owners ---- */

static int collected;
static void t_collect(void *ud) {
  collected++;
  dmh_metric_set(ud, 7, NULL, collected);
}

/* A subtask's series and collector go with it; another owner's stay. */
static void test_drop_owner(void) {
  dmh_metrics *r = dmh_metrics_new();
  static const char *const lab[] = {"task"};
  dmh_metric_family *c = fam(r, "items_total", DM_METRIC_COUNTER, "items", lab, 1, NULL, 0);
  dmh_metric_family *h = fam(r, "dur", DM_METRIC_HISTOGRAM, "dur", lab, 1, NULL, 0);
  dmh_metric_family *st = fam(r, "stage", DM_METRIC_GAUGE, "stage", NULL, 0, NULL, 0);
  uint64_t o1 = dmh_metrics_owner_new(), o2 = dmh_metrics_owner_new();
  CU_ASSERT(o1 != 0 && o2 != o1);
  for (int i = 0; i < 100; i++) { /* enough series to use many hash chains */
    char t[16];
    snprintf(t, sizeof t, "a%d", i);
    const char *v[] = {t};
    dmh_metric_add(c, o1, v, 1);
    dmh_metric_observe(h, o1, v, 0.01);
  }
  const char *vb[] = {"b"};
  dmh_metric_add(c, o2, vb, 2);
  CU_ASSERT_EQUAL(dmh_metrics_collector_add(r, 7, t_collect, st), 0);
  collected = 0;
  char *text = dmh_metrics_render(r, NULL);
  CU_ASSERT_EQUAL(collected, 1);
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "items_total{task=\"a99\"} 1\n"));
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "\nstage 1\n"));
  free(text);
  dmh_metrics_drop_owner(r, o1);
  dmh_metrics_drop_owner(r, 7);
  text = dmh_metrics_render(r, NULL);
  CU_ASSERT_EQUAL(collected, 1); /* its collector is gone */
  CU_ASSERT_PTR_NULL(strstr(text, "task=\"a"));
  CU_ASSERT_PTR_NULL(strstr(text, "dur")); /* the family lost every series: nothing said */
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "items_total{task=\"b\"} 2\n"));
  CU_ASSERT_PTR_NULL(strstr(text, "stage")); /* the collector's series was owner 7's too */
  free(text);
  /* a dropped label set comes back from zero, in a chain that must still be sound */
  const char *va[] = {"a5"};
  dmh_metric_add(c, o1, va, 1);
  text = dmh_metrics_render(r, NULL);
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "items_total{task=\"a5\"} 1\n"));
  assert_promtool(text);
  free(text);
  dmh_metrics_free(r);
}

/* ---- the unit's services ---- */

/* What a unit sees (host.h, services version 9): task, source_id and worker added by the host, its
 * own labels after them, the same handle for the same registration, the host's labels refused. */
/* dmh_metric_set_all: the owner's series of a gauge become exactly the given ones (one gone, one
 * new, one changed), another owner's stay; a counter refuses it. */
static void test_set_all(void) {
  dmh_metrics *r = dmh_metrics_new();
  static const char *const lab[] = {"worker"};
  dmh_metric_family *g = fam(r, "state", DM_METRIC_GAUGE, "state", lab, 1, NULL, 0);
  dmh_metric_family *c = fam(r, "n_total", DM_METRIC_COUNTER, "n", lab, 1, NULL, 0);
  uint64_t o1 = dmh_metrics_owner_new(), o2 = dmh_metrics_owner_new();
  const char *first[] = {"w1", "w2"}, *second[] = {"w2", "w3"}, *other[] = {"x"};
  const double v1[] = {1, 2}, v2[] = {0, 1.5};
  dmh_metric_set(g, o2, other, 7);
  dmh_metric_set_all(g, o1, first, v1, 2);
  char *text = dmh_metrics_render(r, NULL);
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "state{worker=\"w1\"} 1\n"));
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "state{worker=\"w2\"} 2\n"));
  free(text);
  dmh_metric_set_all(g, o1, second, v2, 2);
  dmh_metric_set_all(c, o1, second, v2, 2);
  text = dmh_metrics_render(r, NULL);
  CU_ASSERT_PTR_NULL(strstr(text, "w1"));
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "state{worker=\"w2\"} 0\n"));
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "state{worker=\"w3\"} 1.5\n"));
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "state{worker=\"x\"} 7\n"));
  CU_ASSERT_PTR_NULL(strstr(text, "n_total{"));
  assert_promtool(text);
  free(text);
  dmh_metric_set_all(g, o1, NULL, NULL, 0);
  text = dmh_metrics_render(r, NULL);
  CU_ASSERT_PTR_NULL(strstr(text, "w2"));
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "state{worker=\"x\"} 7\n"));
  free(text);
  dmh_metrics_free(r);
}

static double test_clock_s(clockid_t clk) {
  struct timespec t;
  clock_gettime(clk, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* dmh_metrics_cpu_usage: the CPU the process burnt between two readings over the wall time, in
 * percent (a window of 0 here; the daemons' is DM's 10 s), against the same ratio measured here
 * (a loaded machine gives the busy loop less than a core). On the process's registry: its state
 * lives as long as the process's series. */
static void test_cpu_usage(void) {
  dm_error err;
  double wall0 = test_clock_s(CLOCK_MONOTONIC), cpu0 = test_clock_s(CLOCK_PROCESS_CPUTIME_ID);
  CU_ASSERT_EQUAL_FATAL(
      dmh_metrics_cpu_usage(dmh_metrics_process(), "test_cpu_usage_percent", 0, &err), 0);
  volatile double x = 0;
  while (test_clock_s(CLOCK_PROCESS_CPUTIME_ID) - cpu0 < 0.2) /* 200 ms of CPU */
    for (int i = 0; i < 100000; i++)
      x += i * 0.5;
  double want = (test_clock_s(CLOCK_PROCESS_CPUTIME_ID) - cpu0) /
                (test_clock_s(CLOCK_MONOTONIC) - wall0) * 100.0;
  char *text = dmh_metrics_render(dmh_metrics_process(), NULL);
  const char *at = strstr(text, "\ntest_cpu_usage_percent ");
  CU_ASSERT_PTR_NOT_NULL_FATAL(at);
  double v = strtod(at + strlen("\ntest_cpu_usage_percent "), NULL);
  CU_ASSERT(v > 0 && fabs(v - want) <= want * 0.25 + 5);
  if (!(v > 0 && fabs(v - want) <= want * 0.25 + 5))
    printf("\n  cpu usage %.1f %%, measured here %.1f %%\n", v, want);
  assert_promtool(text);
  free(text);
}

static void test_unit_services(void) {
  const dm_host_services *host = dmh_host_services();
  CU_ASSERT(host->version >= 9);
  CU_ASSERT(DM_HOST_HAS(host, metric_observe));
  dm_error err;
  dm_ctx *c = dmh_ctx_new("/tmp/dmh-test-metrics-ctx", 0600, &err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  dmh_metrics *r = dmh_metrics_new();
  c->metrics = r;
  c->metrics_owner = dmh_metrics_owner_new();
  c->task_name = "task \"one\"";
  c->source_id = "mysql-01";
  c->worker_name = "w-1";
  static const char *const lab[] = {"table"}, *const bad[] = {"source_id"},
                           *const bad_worker[] = {"worker"};
  dm_metric *m = dm_host_metric_register(host, c, "unit_rows_total", DM_METRIC_COUNTER,
                                         "rows of a unit", lab, 1, NULL, 0, &err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  CU_ASSERT_PTR_EQUAL(host->metric_register(c, "unit_rows_total", DM_METRIC_COUNTER, "again", lab,
                                            1, NULL, 0, &err),
                      m);
  CU_ASSERT_PTR_NULL(
      host->metric_register(c, "unit_bad", DM_METRIC_GAUGE, "h", bad, 1, NULL, 0, &err));
  CU_ASSERT_EQUAL(err.code, DM_ERR_METRIC_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "is the host's"));
  CU_ASSERT_PTR_NULL(
      host->metric_register(c, "unit_bad", DM_METRIC_GAUGE, "h", bad_worker, 1, NULL, 0, &err));
  CU_ASSERT_EQUAL(err.code, DM_ERR_METRIC_INVALID);
  CU_ASSERT_PTR_NULL(
      host->metric_register(c, "unit_rows_total", DM_METRIC_GAUGE, "h", lab, 1, NULL, 0, &err));
  CU_ASSERT_EQUAL(err.code, DM_ERR_METRIC_CLASH);
  dm_metric *lag =
      dm_host_metric_register(host, c, "unit_lag", DM_METRIC_GAUGE, "lag", NULL, 0, NULL, 0, &err);
  dm_metric *dur = dm_host_metric_register(host, c, "unit_seconds", DM_METRIC_HISTOGRAM, "dur",
                                           NULL, 0, NULL, 0, &err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(lag);
  CU_ASSERT_PTR_NOT_NULL_FATAL(dur);
  const char *t1[] = {"t1"};
  dm_host_metric_add(host, c, m, t1, 10);
  dm_host_metric_set(host, c, lag, NULL, 4);
  dm_host_metric_observe(host, c, dur, NULL, 0.2);
  dm_host_metric_add(host, c, NULL, t1, 1); /* a NULL handle (older host): nothing */
  char *text = dmh_metrics_render(r, NULL);
  CU_ASSERT_PTR_NOT_NULL(
      strstr(text, "unit_rows_total{task=\"task "
                   "\\\"one\\\"\",source_id=\"mysql-01\",worker=\"w-1\",table=\"t1\"} 10\n"));
  CU_ASSERT_PTR_NOT_NULL(strstr(
      text, "unit_lag{task=\"task \\\"one\\\"\",source_id=\"mysql-01\",worker=\"w-1\"} 4\n"));
  CU_ASSERT_PTR_NOT_NULL(
      strstr(text, "unit_seconds_bucket{task=\"task "
                   "\\\"one\\\"\",source_id=\"mysql-01\",worker=\"w-1\",le=\"0.25\"} 1\n"));
  assert_promtool(text);
  free(text);
  /* an older host: the helpers do nothing and say it is no error */
  dm_host_services old = *host;
  old.size = (uint32_t)offsetof(dm_host_services, metric_register);
  err.code = 12345;
  CU_ASSERT_PTR_NULL(
      dm_host_metric_register(&old, c, "x", DM_METRIC_GAUGE, "x", NULL, 0, NULL, 0, &err));
  CU_ASSERT_EQUAL(err.code, DM_ERR_OK);
  /* the subtask goes: its series with it */
  dmh_metrics_drop_owner(r, c->metrics_owner);
  text = dmh_metrics_render(r, NULL);
  CU_ASSERT_STRING_EQUAL(text, "");
  free(text);
  dmh_ctx_free(c);
  dmh_metrics_free(r);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"text format of every type", test_format},
      {"refused names, labels, buckets, clashes", test_refusals},
      {"threads sum exactly", test_threads},
      {"series dropped with their owner", test_drop_owner},
      {"an owner's gauge series replaced at once", test_set_all},
      {"the process's CPU usage gauge", test_cpu_usage},
      {"the unit's services", test_unit_services},
  };
  return dmh_cunit_run("metrics", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
