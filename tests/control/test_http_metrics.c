/*
 * GET /metrics of `dmhost serve --listen` (units' and the host's series with the labels the host
 * adds, promtool-checked) and of `dmhost run --listen` (metrics only, no commands).
 */
#include <CUnit/Basic.h>
#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <grp.h>
#include <json-c/json.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "control_http.h"
#include "cunit_run.h"
#include "dmhost/sdk.h"
#include "http_api.h"

#include "e2e_util.h"
#include "http_util.h"
#include "metrics.h"
#include "promtool_check.h"
#include "test_http_client.h"

/* The value of the sample `series` (its name and labels exactly as exposed) in `text`, or -1. */
/* `series` (a literal naming source_id="mysql-01") with the label the host adds after it,
 * worker="dmhost@<hostname>" (the daemon's and `dmhost run`'s worker name): in one of a few
 * rotating buffers, so that several can be in use at once. */
static const char *with_worker(const char *series) {
  static char bufs[16][512];
  static int next;
  char *out = bufs[next++ % 16], host[256];
  if (gethostname(host, sizeof host) < 0)
    strcpy(host, "localhost");
  host[sizeof host - 1] = '\0';
  const char *at = strstr(series, "source_id=\"mysql-01\"");
  CU_ASSERT_PTR_NOT_NULL_FATAL(at);
  at += strlen("source_id=\"mysql-01\"");
  snprintf(out, 512, "%.*s,worker=\"dmhost@%s\"%s", (int)(at - series), series, host, at);
  return out;
}

static double metric_value(const char *text, const char *series) {
  size_t n = strlen(series);
  for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
    if (strncmp(p, series, n) == 0 && p[n] == ' ')
      return strtod(p + n + 1, NULL);
  return -1;
}

/* Scrapes until the sample `series` is above 0 (a unit's first items), up to 2 s: its value. */
static double scrape_until_positive(const char *series) {
  double v = -1;
  for (int i = 0; i < 100 && v <= 0; i++) {
    char *t = scrape();
    v = metric_value(t, series);
    free(t);
    if (v <= 0)
      e2e_sleep_ms(20);
  }
  return v;
}

/* ---- tests ---- */

/* GET /metrics over --listen: a third-party unit's metric (the fake units', tests/fixtures) with
 * the task and source_id labels the host added and a label value that needs escaping, moving
 * between scrapes; the host's stage gauge, unit init and process histograms, swap counter (the
 * unit's counter going on across the swap), DM's exit-with-error counter and the auto-resume
 * counter; the tasks' series gone once they are stopped; only GET. Every scrape passes promtool. */
static void test_metrics(void) {
  CU_ASSERT_FATAL(e2e_setup() == 0);
  e2e_source("source.cfg", "mysql-01", false);
  http_start("127.0.0.1:0", false);
  over_http(0, "operate-source", "create", "source.cfg", NULL);
  e2e_task("inc.cfg", "m1", "incremental", "mysql-01", "sync = { items = 0; item-ms = 10; };");
  over_http(0, "start-task", "inc.cfg", NULL, NULL);
  CU_ASSERT_FATAL(e2e_wait_stage("m1", "Running", 10));
  const char *items =
      with_worker("fake_unit_items_total{task=\"m1\",source_id=\"mysql-01\",unit=\"sync\","
                  "note=\"say \\\"hi\\\"\\\\\\n\"}");
  const char *stage = with_worker("dm_worker_task_state{task=\"m1\",source_id=\"mysql-01\"}");
  double n1 = scrape_until_positive(items); /* the first items */
  CU_ASSERT(n1 > 0);
  e2e_sleep_ms(300);
  char *t = scrape();
  double n2 = metric_value(t, items);
  if (!(n2 > n1))
    fprintf(stderr, "\nitems %g then %g in\n%s\n", n1, n2, t);
  CU_ASSERT(n2 > n1);
  CU_ASSERT_EQUAL(metric_value(t, stage), 2); /* Running: DM's 2 */
  /* what serving costs: the requests before this scrape (it counts once it is answered), and
   * their connection threads' CPU time, which grows with them */
  double reqs = metric_value(t, "dmhost_http_requests_total");
  double cpu = metric_value(t, "dmhost_http_cpu_seconds_total");
  CU_ASSERT(reqs >= 3 && cpu > 0 && cpu < 5);
  char *t2 = scrape();
  CU_ASSERT(metric_value(t2, "dmhost_http_requests_total") >= reqs + 1);
  CU_ASSERT(metric_value(t2, "dmhost_http_cpu_seconds_total") > cpu);
  free(t2);
  CU_ASSERT_EQUAL(metric_value(t, with_worker("dmhost_unit_init_duration_seconds_count{task=\"m1\","
                                              "source_id=\"mysql-01\",unit=\"sync\"}")),
                  1);
  free(t);
  over_http(0, "pause-task", "m1", NULL, NULL);
  CU_ASSERT(e2e_wait_stage("m1", "Paused", 10));
  t = scrape();
  CU_ASSERT_EQUAL(metric_value(t, stage), 3); /* Paused */
  CU_ASSERT_EQUAL(
      metric_value(t, with_worker("dmhost_unit_process_duration_seconds_count{task=\"m1\","
                                  "source_id=\"mysql-01\",unit=\"sync\"}")),
      1);
  free(t);
  /* a hot-swap: counted, and the unit's counter goes on from where the old build left it */
  over_http(0, "resume-task", "m1", NULL, NULL);
  CU_ASSERT(e2e_wait_stage("m1", "Running", 10));
  t = scrape();
  double before = metric_value(t, items);
  /* DM's dm_worker_operate_error: a resume of a Running task is refused by the supervisor and
   * counted once, type Resume, on the daemon's worker (a process series: no task label) */
  char host[256], op_resume[400];
  if (gethostname(host, sizeof host) < 0)
    strcpy(host, "localhost");
  host[sizeof host - 1] = '\0';
  snprintf(op_resume, sizeof op_resume,
           "dm_worker_operate_error{worker=\"dmhost@%s\",type=\"Resume\"}", host);
  double refused = metric_value(t, op_resume); /* -1: none yet */
  free(t);
  json_object *rr = NULL;
  CU_ASSERT_NOT_EQUAL(e2e_dmctl(&rr, "resume-task", "m1", NULL), 0);
  json_object_put(rr);
  t = scrape();
  CU_ASSERT_EQUAL(metric_value(t, op_resume), (refused < 0 ? 0 : refused) + 1);
  free(t);
  CU_ASSERT(e2e_wait_stage("m1", "Running", 10)); /* the refusal changed nothing */
  json_object *sw = NULL;
  CU_ASSERT_EQUAL(e2e_dmctl(&sw, "swap-unit", "m1", "--unit", "sync", "--path", FAKE_SYNC_V2, NULL),
                  0);
  json_object_put(sw);
  t = scrape();
  CU_ASSERT_EQUAL(
      metric_value(t, with_worker("dmhost_unit_swaps_total{task=\"m1\",source_id=\"mysql-01\","
                                  "unit=\"sync\",result=\"ok\"}")),
      1);
  CU_ASSERT(metric_value(t, items) >= before);
  free(t);
  /* a unit that fails with a resumable error: DM's exit counter, dmhost's, an auto-resume */
  /* e2e_task's file with auto-resume on (e2e_task turns it off) */
  e2e_write(
      "fail.cfg",
      "name = \"m2\";\ntask-mode = \"incremental\";\n"
      "target-database = { host = \"127.0.0.1\"; port = 2; user = \"root\"; password = \"\"; "
      "};\n"
      "mysql-instances = ( { source-id = \"mysql-01\"; } );\n"
      "unit-paths = { sync = \"%s\"; };\n"
      "supervisor = { stop-timeout = 5; auto-resume = { enable = true; backoff-initial = 0.1; "
      "}; };\n"
      "ignore-checking-items = [\"all\"];\n"
      "sync = { items = 0; item-ms = 10; fail-at = 3; };\n",
      FAKE_SYNC);
  over_http(0, "start-task", "fail.cfg", NULL, NULL);
  const char *resumed = with_worker("dmhost_auto_resume_total{task=\"m2\",source_id=\"mysql-01\"}");
  t = NULL;
  for (int i = 0; i < 100; i++) {
    free(t);
    t = scrape();
    if (metric_value(t, resumed) >= 1)
      break;
    e2e_sleep_ms(50);
  }
  CU_ASSERT_EQUAL(metric_value(t, resumed), 1);
  /* DM's label: the fake unit's error is resumable (auto-resume took it); the other value is
   * there at 0 from the start, as DM's rules need it */
  CU_ASSERT_EQUAL(metric_value(t, with_worker("dm_syncer_exit_with_error_count{task=\"m2\","
                                              "source_id=\"mysql-01\",resumable_err=\"true\"}")),
                  1);
  CU_ASSERT_EQUAL(metric_value(t, with_worker("dm_syncer_exit_with_error_count{task=\"m2\","
                                              "source_id=\"mysql-01\",resumable_err=\"false\"}")),
                  0);
  CU_ASSERT_EQUAL(metric_value(t, with_worker("dmhost_unit_exit_with_error_total{task=\"m2\","
                                              "source_id=\"mysql-01\",unit=\"sync\"}")),
                  1);
  free(t);
  /* a custom kind (a third-party unit's own kind, ABI 1.1): its metric with the same labels */
  e2e_write("sink.cfg",
            "name = \"m3\";\nunits = [\"fake-sink\"];\n"
            "target-database = { host = \"127.0.0.1\"; port = 2; user = \"root\"; password = \"\"; "
            "};\n"
            "mysql-instances = ( { source-id = \"mysql-01\"; } );\n"
            "unit-paths = { fake-sink = \"%s\"; };\n"
            "ignore-checking-items = [\"all\"];\n"
            "fake-sink = { items = 0; item-ms = 10; };\n",
            FAKE_SINK);
  over_http(0, "start-task", "sink.cfg", NULL, NULL);
  CU_ASSERT(e2e_wait_stage("m3", "Running", 10));
  const char *sink =
      with_worker("fake_unit_items_total{task=\"m3\",source_id=\"mysql-01\",unit=\"fake-sink\","
                  "note=\"say \\\"hi\\\"\\\\\\n\"}");
  CU_ASSERT(scrape_until_positive(sink) > 0);
  over_http(0, "stop-task", "m3", NULL, NULL);
  over_http(0, "stop-task", "m2", NULL, NULL);
  over_http(0, "stop-task", "m1", NULL, NULL);
  t = scrape();
  CU_ASSERT(e2e_contains(t, "task=") == false); /* the tasks' series went with them */
  free(t);
  /* only GET (and HEAD) */
  long status = 0;
  CURLcode rc;
  json_object *o = raw_http("POST", DMH_METRICS_HTTP_PATH, "x", 1, NULL, NULL, NULL, &status, &rc);
  CU_ASSERT_EQUAL(status, 405);
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), "only GET"));
  json_object_put(o);
  http_use_socket();
  CU_ASSERT_EQUAL(e2e_stop(), 0);
  e2e_teardown();
}

/* `dmhost run --listen`: the foreground run serves its task's metrics (GET /metrics) and refuses
 * commands over HTTP (it has no control plane); SIGTERM still pauses it and it exits 0. */
static void test_run_metrics(void) {
  CU_ASSERT_FATAL(e2e_setup() == 0);
  e2e_source("source.cfg", "mysql-01", false);
  e2e_task("inc.cfg", "r1", "incremental", "mysql-01", "sync = { items = 0; item-ms = 10; };");
  char src[400], task[400], work[400], log[400];
  snprintf(src, sizeof src, "%s/source.cfg", e2e_dir);
  snprintf(task, sizeof task, "%s/inc.cfg", e2e_dir);
  snprintf(work, sizeof work, "%s/work", e2e_dir);
  snprintf(log, sizeof log, "%s/serve.log", e2e_dir); /* where e2e_serve_log reads */
  pid_t pid = fork();
  if (pid == 0) {
    FILE *f = freopen(log, "w", stderr);
    (void)f;
    execl(DMHOST_BIN, DMHOST_BIN, "run", "--quiet", "--source", src, "--task", task, "--work-dir",
          work, "--listen", "127.0.0.1:0", (char *)NULL);
    _exit(127);
  }
  bool up = false;
  for (int i = 0; i < 200 && !up; i++) {
    e2e_sleep_ms(25);
    up = http_find_port();
  }
  CU_ASSERT_FATAL(up);
  const char *items =
      with_worker("fake_unit_items_total{task=\"r1\",source_id=\"mysql-01\",unit=\"sync\","
                  "note=\"say \\\"hi\\\"\\\\\\n\"}");
  CU_ASSERT(scrape_until_positive(items) > 0);
  long status = 0;
  json_object *o = raw_post("{\"cmd\": \"query-status\"}", &status);
  CU_ASSERT_EQUAL(status, 404);
  CU_ASSERT_FALSE(e2e_bool(o, "result"));
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), "dmhost run serves GET /metrics only"));
  json_object_put(o);
  /* nor the status page, whose commands it could not answer */
  char ctype[128];
  free(raw_get_text("/", &status, ctype, sizeof ctype));
  CU_ASSERT_EQUAL(status, 404);
  CU_ASSERT_EQUAL(kill(pid, SIGTERM), 0);
  int st = -1;
  CU_ASSERT_EQUAL(waitpid(pid, &st, 0), pid);
  CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  e2e_teardown();
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"GET /metrics", test_metrics},
      {"dmhost run --listen: GET /metrics only", test_run_metrics},
  };
  return http_run_tests("control http metrics", tests, sizeof tests / sizeof tests[0]);
}
