/*
 * The control plane over TCP (`dmhost serve --listen`, `dmctl --master-addr`): the same answers
 * as the socket for the same commands, mutual TLS (a client without a certificate or with one of
 * another CA is refused, and dmctl refuses a daemon of another CA), the transport's bounds (body
 * size, method, path), the refusal to listen beyond loopback without TLS, and the socket's peer
 * rule for loopback clients without TLS. The daemon picks a free port (--listen 127.0.0.1:0) and
 * the test reads it from its log. The CAs and certificates are made here with openssl.
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
#include "metrics.h"
#include "promtool_check.h"
#include "test_http_client.h"

#define NOBODY 65534

static char http_addr[64]; /* 127.0.0.1:PORT of the daemon started last */
static char tls_dir[320];  /* <dir>/tls: the files of http_make_certs */
static char tls_ca[400], tls_cert[400], tls_key[400];

static bool http_find_port(void) {
  return e2e_http_addr(http_addr, sizeof http_addr);
}

/* Start the daemon with --listen and the `extra` flags; dmctl then goes through --master-addr
 * (with the TLS files when `tls`). */
static void http_start(const char *listen, bool tls) {
  const char *extra[12] = {"--listen", listen};
  int n = 2;
  if (tls) {
    const char *t[] = {"--tls-ca", tls_ca, "--tls-cert", tls_cert, "--tls-key", tls_key};
    for (size_t i = 0; i < 6; i++)
      extra[n++] = t[i];
  }
  extra[n] = NULL;
  CU_ASSERT_FATAL(e2e_start_with(extra, false));
  CU_ASSERT_FATAL(http_find_port());
  memset(e2e_dmctl_target, 0, sizeof e2e_dmctl_target);
  e2e_dmctl_target[0] = "--master-addr";
  e2e_dmctl_target[1] = http_addr;
  if (tls) {
    const char *t[] = {"--tls-ca", tls_ca, "--tls-cert", tls_cert, "--tls-key", tls_key};
    for (size_t i = 0; i < 6; i++)
      e2e_dmctl_target[2 + i] = t[i];
  }
}

static void http_use_socket(void) {
  memset(e2e_dmctl_target, 0, sizeof e2e_dmctl_target);
}

/* Two CAs; a server certificate for 127.0.0.1 and a client certificate from the first ("ca"), a
 * client certificate ("stranger") from the second ("other-ca"); in <dir>/tls. */
static void http_make_certs(void) {
  snprintf(tls_dir, sizeof tls_dir, "%s/tls", e2e_dir);
  CU_ASSERT_EQUAL_FATAL(mkdir(tls_dir, 0700), 0);
  char cmd[2048];
  snprintf(
      cmd, sizeof cmd,
      "cd '%s' && ("
      "for ca in ca other-ca; do openssl req -x509 -newkey rsa:2048 -nodes -days 2 "
      "-subj \"/CN=dmhost test $ca\" -keyout $ca-key.pem -out $ca.pem || exit 1; done; "
      "openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout server-key.pem "
      "-out server.csr && printf 'subjectAltName = IP:127.0.0.1, DNS:localhost\\n' >server.ext && "
      "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 2 "
      "-extfile server.ext -out server-cert.pem || exit 1; "
      "for c in client:ca stranger:other-ca; do n=${c%%%%:*}; a=${c##*:}; "
      "openssl req -newkey rsa:2048 -nodes -subj /CN=$n -keyout $n-key.pem -out $n.csr && "
      "openssl x509 -req -in $n.csr -CA $a.pem -CAkey $a-key.pem -CAcreateserial -days 2 "
      "-out $n-cert.pem || exit 1; done) >openssl.log 2>&1",
      tls_dir);
  int rc = system(cmd);
  if (rc != 0) {
    char log[400];
    snprintf(log, sizeof log, "%s/openssl.log", tls_dir);
    char *text = e2e_read_file(log);
    fprintf(stderr, "\n  openssl failed:\n%s\n", text ? text : "(no log)");
    free(text);
  }
  CU_ASSERT_EQUAL_FATAL(rc, 0);
  snprintf(tls_ca, sizeof tls_ca, "%s/ca.pem", tls_dir);
  snprintf(tls_cert, sizeof tls_cert, "%s/server-cert.pem", tls_dir);
  snprintf(tls_key, sizeof tls_key, "%s/server-key.pem", tls_dir);
}

static char *tls_file(char *buf, size_t size, const char *name) {
  snprintf(buf, size, "%s/%s", tls_dir, name);
  return buf;
}

/* When nonzero, raw_http's connections are made from this local port (SO_REUSEADDR). */
static int raw_local_port;
/* When set, raw_http sends its body chunked (no Content-Length). */
static bool raw_chunked;
/* The Allow header of raw_http's last answer ("" when none). */
static char raw_allow[128];

static size_t raw_header(char *line, size_t size, size_t n, void *ud) {
  (void)ud;
  size_t len = size * n;
  if (len > 6 && strncasecmp(line, "Allow:", 6) == 0) {
    size_t v = len - 6;
    while (v > 0 && strchr(" \r\n", line[6 + v - 1]))
      v--;
    const char *at = line + 6;
    while (v > 0 && *at == ' ')
      at++, v--;
    snprintf(raw_allow, sizeof raw_allow, "%.*s", (int)v, at);
  }
  return len;
}

static int raw_reuse_addr(void *ud, curl_socket_t fd, curlsocktype purpose) {
  (void)ud;
  (void)purpose;
  int one = 1;
  return setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0 ? CURL_SOCKOPT_OK
                                                                         : CURL_SOCKOPT_ERROR;
}

/* A request with libcurl, below dmctl: `method` on `path` of the daemon (https with `ca`: the
 * client certificate cert/key may be NULL). Returns the parsed body (NULL if none or not JSON);
 * *status the HTTP status (0: no answer), *rc curl's code. */
static json_object *raw_http(const char *method, const char *path, const char *body, size_t len,
                             const char *ca, const char *cert, const char *key, long *status,
                             CURLcode *rc) {
  char url[256];
  snprintf(url, sizeof url, "http%s://%s%s", ca ? "s" : "", http_addr, path);
  CURL *c = curl_easy_init();
  char *text = NULL;
  size_t text_len = 0;
  FILE *out = open_memstream(&text, &text_len); /* curl's default writer fwrites into it */
  struct curl_slist *h = curl_slist_append(NULL, "Expect:");
  if (raw_chunked)
    h = curl_slist_append(h, "Transfer-Encoding: chunked");
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  if (body) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
  }
  curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
  raw_allow[0] = '\0';
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, raw_header);
  if (raw_local_port) {
    curl_easy_setopt(c, CURLOPT_LOCALPORT, (long)raw_local_port);
    curl_easy_setopt(c, CURLOPT_SOCKOPTFUNCTION, raw_reuse_addr);
  }
  if (ca) {
    curl_easy_setopt(c, CURLOPT_CAINFO, ca);
    if (cert) {
      curl_easy_setopt(c, CURLOPT_SSLCERT, cert);
      curl_easy_setopt(c, CURLOPT_SSLKEY, key);
    }
  }
  *rc = curl_easy_perform(c);
  *status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
  curl_slist_free_all(h);
  curl_easy_cleanup(c);
  fclose(out);
  json_object *o = text_len ? json_tokener_parse(text) : NULL;
  free(text);
  return o;
}

/* GET `path` as text (the daemon's /metrics): the body (malloc'd; NULL when none), *status, and
 * the Content-Type in ctype. */
static char *raw_get_text(const char *path, long *status, char *ctype, size_t ctype_len) {
  char url[256];
  snprintf(url, sizeof url, "http://%s%s", http_addr, path);
  return dmh_test_http(url, "GET", NULL, status, ctype, ctype_len);
}

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

/* GET /metrics, 200 with Prometheus' content type, passing promtool. */
static char *scrape(void) {
  long status = 0;
  char ctype[128], why[9000];
  char *text = raw_get_text(DMH_METRICS_HTTP_PATH, &status, ctype, sizeof ctype);
  CU_ASSERT_EQUAL(status, 200);
  CU_ASSERT_STRING_EQUAL(ctype, DMH_METRICS_CONTENT_TYPE);
  CU_ASSERT_PTR_NOT_NULL_FATAL(text);
  int rc = promtool_check(text, why, sizeof why);
  if (rc != 0)
    fprintf(stderr, "\n%s\n", why);
  CU_ASSERT_EQUAL(rc, 0);
  return text;
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

static json_object *raw_post(const char *body, long *status) {
  CURLcode rc;
  return raw_http("POST", DMH_CONTROL_HTTP_PATH, body, strlen(body), NULL, NULL, NULL, status, &rc);
}

/* Remove the members that depend on the moment of asking (a progress's rate and eta), at any
 * depth. */
static void strip_moment(json_object *o) {
  if (json_object_is_type(o, json_type_array)) {
    for (size_t i = 0; i < json_object_array_length(o); i++)
      strip_moment(json_object_array_get_idx(o, i));
    return;
  }
  if (!json_object_is_type(o, json_type_object))
    return;
  json_object_object_del(o, "rate");
  json_object_object_del(o, "eta");
  json_object_object_foreach(o, key, val) {
    (void)key;
    strip_moment(val);
  }
}

/* dmctl with the arguments (up to 7, NULL-terminated) over the socket and over --master-addr: the
 * same exit status `want` and the same JSON (but for the moment's rate and eta). */
static void both(int want, const char *a0, const char *a1, const char *a2, const char *a3) {
  const char *saved[9];
  memcpy(saved, e2e_dmctl_target, sizeof saved);
  http_use_socket();
  json_object *via_socket = NULL, *via_http = NULL;
  int rs = e2e_dmctl(&via_socket, a0, a1, a2, a3, NULL);
  memcpy(e2e_dmctl_target, saved, sizeof saved);
  int rh = e2e_dmctl(&via_http, a0, a1, a2, a3, NULL);
  CU_ASSERT_EQUAL(rs, want);
  CU_ASSERT_EQUAL(rh, want);
  CU_ASSERT_PTR_NOT_NULL(via_socket);
  strip_moment(via_socket);
  strip_moment(via_http);
  bool same = via_socket && via_http && json_object_equal(via_socket, via_http);
  if (!same)
    fprintf(stderr, "\n  %s %s: socket answered\n%s\n  http answered\n%s\n", a0, a1 ? a1 : "",
            json_object_to_json_string(via_socket), json_object_to_json_string(via_http));
  CU_ASSERT(same);
  json_object_put(via_socket);
  json_object_put(via_http);
}

/* dmctl over --master-addr: exit status `want`. */
static void over_http(int want, const char *a0, const char *a1, const char *a2, const char *a3) {
  json_object *o = NULL;
  int rc = e2e_dmctl(&o, a0, a1, a2, a3, NULL);
  if (rc != want)
    fprintf(stderr, "\n  %s %s: exit %d, answer %s\n", a0, a1 ? a1 : "", rc,
            json_object_to_json_string(o));
  CU_ASSERT_EQUAL(rc, want);
  json_object_put(o);
}

/* Stop the daemon while a client is connected and silent (no request, no TLS handshake): it is
 * served around, and holds up neither the next request nor the exit. */
static void http_stop_with_silent_client(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET,
                           .sin_port = htons((uint16_t)atoi(strchr(http_addr, ':') + 1))};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  CU_ASSERT_EQUAL_FATAL(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
  over_http(0, "query-status", NULL, NULL, NULL);
  http_use_socket();
  double t0 = e2e_now();
  CU_ASSERT_EQUAL(e2e_stop(), 0);
  CU_ASSERT(e2e_now() - t0 < 5);
  close(fd);
}

/* ---- tests ---- */

/* test_e2e's flows with every change made over HTTP, and every read made both ways: the answers
 * are the same JSON. */
static void test_same_answers(void) {
  CU_ASSERT_FATAL(e2e_setup() == 0);
  e2e_source("source.cfg", "mysql-01", false);
  http_start("127.0.0.1:0", false);

  both(0, "operate-source", "show", NULL, NULL);
  over_http(0, "operate-source", "create", "source.cfg", NULL);
  both(0, "operate-source", "show", "-s", "mysql-01");
  both(1, "operate-source", "create", "source.cfg", NULL); /* already bound */
  both(1, "operate-source", "show", "-s", "mysql-02");

  e2e_task("task.cfg", "t1", "full", "mysql-01",
           "dump = { items = 5; item-ms = 5; };\nload = { items = 5; item-ms = 5; };");
  over_http(0, "start-task", "task.cfg", NULL, NULL);
  CU_ASSERT(e2e_wait_stage("t1", "Finished", 30)); /* polled over HTTP */
  both(0, "query-status", NULL, NULL, NULL);
  both(0, "query-status", "t1", NULL, NULL);
  both(1, "start-task", "task.cfg", NULL, NULL); /* exists */
  both(1, "query-status", "nope", NULL, NULL);
  both(1, "pause-task", "nope", NULL, NULL);
  both(0, "binlog", "list", "t1", NULL);

  e2e_task("inc.cfg", "inc", "incremental", "mysql-01", "sync = { items = 0; item-ms = 50; };");
  over_http(0, "start-task", "inc.cfg", NULL, NULL);
  CU_ASSERT(e2e_wait_stage("inc", "Running", 10));
  over_http(0, "pause-task", "inc", NULL, NULL);
  CU_ASSERT(e2e_wait_stage("inc", "Paused", 10));
  both(1, "pause-task", "inc", NULL, NULL);            /* already paused */
  both(1, "operate-source", "stop", "-s", "mysql-01"); /* tasks still use it */
  over_http(0, "resume-task", "inc", NULL, NULL);
  CU_ASSERT(e2e_wait_stage("inc", "Running", 10));
  over_http(0, "stop-task", "inc", NULL, NULL);
  over_http(0, "stop-task", "t1", NULL, NULL);

  over_http(0, "start-relay", "-s", "mysql-01", NULL);
  both(1, "start-relay", "-s", "mysql-01", NULL);     /* already running */
  over_http(0, "operate-source", "show", NULL, NULL); /* the running relay's counters move */
  over_http(0, "stop-relay", "-s", "mysql-01", NULL);
  both(1, "stop-relay", "-s", "mysql-01", NULL);
  over_http(0, "operate-source", "stop", "-s", "mysql-01");
  both(0, "operate-source", "show", NULL, NULL);

  /* Requests dmctl would not send reach the one handler the same way. */
  const char *raw[] = {"not json", "{\"cmd\": 1}", "{\"cmd\": \"frobnicate\"}",
                       "{\"cmd\": \"pause-task\", \"args\": {\"name\": 7}}", "{\"cmd\": \"help\"}"};
  for (size_t i = 0; i < sizeof raw / sizeof raw[0]; i++) {
    long status = 0;
    json_object *h = raw_post(raw[i], &status);
    json_object *s = e2e_raw(raw[i]);
    CU_ASSERT_EQUAL(status, 200);
    CU_ASSERT_PTR_NOT_NULL(s);
    CU_ASSERT(h && s && json_object_equal(h, s));
    json_object_put(h);
    json_object_put(s);
  }
  http_use_socket();
  CU_ASSERT_EQUAL(e2e_stop(), 0);
  e2e_teardown();
}

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
  free(t);
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
  CU_ASSERT_EQUAL(
      metric_value(
          t, with_worker("dm_syncer_exit_with_error_count{task=\"m2\",source_id=\"mysql-01\"}")),
      1);
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

/* Mutual TLS: a client with a certificate of the CA is served; one without a certificate, or
 * with one of another CA, is refused with 403 and DM_ERR_CONTROL_CLIENT_CERT; dmctl refuses a
 * daemon whose certificate its --tls-ca did not sign, and plain http to the TLS port fails. */
static void test_mutual_tls(void) {
  CU_ASSERT_FATAL(e2e_setup() == 0);
  http_make_certs();
  e2e_source("source.cfg", "mysql-01", false);
  http_start("127.0.0.1:0", true);
  char ccert[400], ckey[400], scert[400], skey[400], other_ca[400];
  tls_file(ccert, sizeof ccert, "client-cert.pem");
  tls_file(ckey, sizeof ckey, "client-key.pem");
  tls_file(scert, sizeof scert, "stranger-cert.pem");
  tls_file(skey, sizeof skey, "stranger-key.pem");
  tls_file(other_ca, sizeof other_ca, "other-ca.pem");
  e2e_dmctl_target[5] = ccert; /* the client's own certificate, not the server's */
  e2e_dmctl_target[7] = ckey;

  over_http(0, "operate-source", "create", "source.cfg", NULL);
  both(0, "operate-source", "show", NULL, NULL);
  both(0, "query-status", NULL, NULL, NULL);

  /* No client certificate: the TLS session is set up, the request is refused. */
  long status = 0;
  CURLcode rc;
  const char *help = "{\"cmd\": \"help\"}";
  json_object *o =
      raw_http("POST", DMH_CONTROL_HTTP_PATH, help, strlen(help), tls_ca, NULL, NULL, &status, &rc);
  CU_ASSERT_EQUAL(rc, CURLE_OK);
  CU_ASSERT_EQUAL(status, 403);
  CU_ASSERT_FALSE(e2e_bool(o, "result"));
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_CONTROL_CLIENT_CERT);
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), "the client sent no certificate"));
  json_object_put(o);
  /* /metrics and the status page are admitted as /control is: no certificate, nothing */
  const char *admitted[] = {DMH_METRICS_HTTP_PATH, "/", "/app.js"};
  for (size_t i = 0; i < sizeof admitted / sizeof *admitted; i++) {
    o = raw_http("GET", admitted[i], NULL, 0, tls_ca, NULL, NULL, &status, &rc);
    CU_ASSERT_EQUAL(status, 403);
    CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_CONTROL_CLIENT_CERT);
    json_object_put(o);
  }
  /* so is the API */
  o = raw_http("GET", "/api/v1/tasks", NULL, 0, tls_ca, NULL, NULL, &status, &rc);
  CU_ASSERT_EQUAL(status, 403);
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_CONTROL_CLIENT_CERT);
  json_object_put(o);
  o = raw_http("GET", "/api/v1/tasks", NULL, 0, tls_ca, ccert, ckey, &status, &rc);
  CU_ASSERT_EQUAL(status, 200);
  CU_ASSERT(e2e_bool(o, "result"));
  json_object_put(o);
  /* The same certificate-less client, with a valid one, is served: the refusal was the cert's. */
  o = raw_http("POST", DMH_CONTROL_HTTP_PATH, help, strlen(help), tls_ca, ccert, ckey, &status,
               &rc);
  CU_ASSERT_EQUAL(status, 200);
  CU_ASSERT(e2e_bool(o, "result"));
  json_object_put(o);

  /* A certificate of another CA, through dmctl. */
  const char *saved7 = e2e_dmctl_target[7], *saved5 = e2e_dmctl_target[5];
  e2e_dmctl_target[5] = scert;
  e2e_dmctl_target[7] = skey;
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "query-status", NULL), 1);
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_CONTROL_CLIENT_CERT);
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), "refused a client without a valid certificate"));
  json_object_put(o);
  /* ... nor may it change anything */
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "operate-source", "stop", "-s", "mysql-01", NULL), 1);
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_CONTROL_CLIENT_CERT);
  json_object_put(o);
  e2e_dmctl_target[5] = saved5;
  e2e_dmctl_target[7] = saved7;
  both(0, "operate-source", "show", "-s", "mysql-01"); /* still bound */

  /* dmctl trusting another CA does not talk to this daemon. */
  e2e_dmctl_target[3] = other_ca;
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "query-status", NULL), 1);
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_CONTROL_HTTP);
  json_object_put(o);
  e2e_dmctl_target[3] = tls_ca;
  /* Plain http to the TLS port, and half of the TLS flags. */
  const char *plain[] = {"--master-addr", http_addr, NULL};
  const char *saved[9];
  memcpy(saved, e2e_dmctl_target, sizeof saved);
  memset(e2e_dmctl_target, 0, sizeof e2e_dmctl_target);
  memcpy(e2e_dmctl_target, plain, sizeof plain);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "query-status", NULL), 1);
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_CONTROL_HTTP);
  json_object_put(o);
  e2e_dmctl_target[2] = "--tls-ca";
  e2e_dmctl_target[3] = tls_ca;
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "query-status", NULL), 1);
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_CONTROL_REQUEST);
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), "--tls-cert --tls-key missing"));
  json_object_put(o);
  memcpy(e2e_dmctl_target, saved, sizeof saved);

  char *log = e2e_serve_log();
  CU_ASSERT(e2e_contains(log, "mutual TLS"));
  CU_ASSERT(e2e_contains(log, "the client sent no certificate"));
  free(log);
  http_use_socket();
  CU_ASSERT_EQUAL(e2e_stop(), 0);
  e2e_teardown();
}

/* The transport's bounds: a body over DMH_CONTROL_LINE_MAX is refused with 413 before it is read
 * (one of exactly the limit is served), another method or path is refused, and the daemon goes on
 * answering. */
static void test_limits(void) {
  CU_ASSERT_FATAL(e2e_setup() == 0);
  http_start("127.0.0.1:0", false);
  const char *help = "{\"cmd\": \"help\"}";
  size_t n = DMH_CONTROL_LINE_MAX;
  char *body = malloc(n + 2);
  CU_ASSERT_PTR_NOT_NULL_FATAL(body);
  memset(body, ' ', n + 1);
  memcpy(body, help, strlen(help));
  body[n + 1] = '\0';
  long status = 0;
  CURLcode rc;
  json_object *o = raw_http("POST", DMH_CONTROL_HTTP_PATH, body, n, NULL, NULL, NULL, &status, &rc);
  CU_ASSERT_EQUAL(status, 200); /* exactly the limit */
  CU_ASSERT(e2e_bool(o, "result"));
  json_object_put(o);
  o = raw_http("POST", DMH_CONTROL_HTTP_PATH, body, n + 1, NULL, NULL, NULL, &status, &rc);
  CU_ASSERT_EQUAL(status, 413);
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_CONTROL_REQUEST);
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), "longer than 1048576 bytes"));
  json_object_put(o);
  /* Chunked, without a Content-Length: refused as it grows past the limit (the connection is
   * closed, as no answer can be sent in the middle of a body). */
  raw_chunked = true;
  o = raw_http("POST", DMH_CONTROL_HTTP_PATH, body, n + 1, NULL, NULL, NULL, &status, &rc);
  raw_chunked = false;
  CU_ASSERT_NOT_EQUAL(status, 200);
  CU_ASSERT_PTR_NULL(o);
  json_object_put(o);
  char *log = e2e_serve_log();
  CU_ASSERT(e2e_contains(log, "its request body grew past 1048576 bytes"));
  free(log);
  free(body);

  o = raw_http("GET", DMH_CONTROL_HTTP_PATH, NULL, 0, NULL, NULL, NULL, &status, &rc);
  CU_ASSERT_EQUAL(status, 405);
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_CONTROL_REQUEST);
  json_object_put(o);
  o = raw_http("POST", "/other", help, strlen(help), NULL, NULL, NULL, &status, &rc);
  CU_ASSERT_EQUAL(status, 404);
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_CONTROL_REQUEST);
  json_object_put(o);
  /* The status page (docs/status-page.md): its files, embedded at build time, for GET only. */
  char ctype[128];
  char *page = raw_get_text("/", &status, ctype, sizeof ctype);
  CU_ASSERT_EQUAL(status, 200);
  CU_ASSERT_STRING_EQUAL(ctype, "text/html; charset=utf-8");
  CU_ASSERT(page && e2e_contains(page, "<canvas id=\"lag\"") &&
            e2e_contains(page, "<script src=\"/app.js\">"));
  free(page);
  page = raw_get_text("/app.js", &status, ctype, sizeof ctype);
  CU_ASSERT_EQUAL(status, 200);
  CU_ASSERT_STRING_EQUAL(ctype, "text/javascript; charset=utf-8");
  CU_ASSERT(page && e2e_contains(page, "pause-task") && e2e_contains(page, "/metrics"));
  free(page);
  o = raw_http("POST", "/index.html", help, strlen(help), NULL, NULL, NULL, &status, &rc);
  CU_ASSERT_EQUAL(status, 405);
  json_object_put(o);
  /* A posted file's last newline is framing, not "something after the object". */
  o = raw_post("{\"cmd\": \"help\"}\r\n\n", &status);
  CU_ASSERT_EQUAL(status, 200);
  CU_ASSERT(e2e_bool(o, "result"));
  json_object_put(o);
  over_http(0, "query-status", NULL, NULL, NULL);

  http_stop_with_silent_client();
  e2e_teardown();
}

/* A listen address beyond loopback without TLS is refused before anything starts (no state dir
 * made); half of the TLS flags is a usage error; with TLS the same address is served. */
static void test_insecure_listen_refused(void) {
  CU_ASSERT_FATAL(e2e_setup() == 0);
  const char *open_listen[] = {"--listen", "0.0.0.0:0", NULL};
  CU_ASSERT_FALSE(e2e_start_with(open_listen, true));
  char *log = e2e_serve_log();
  CU_ASSERT(e2e_contains(log, "code 15010"));
  CU_ASSERT(e2e_contains(log, "--listen 0.0.0.0:0 is not a loopback address"));
  free(log);
  struct stat st;
  CU_ASSERT_EQUAL(stat(e2e_state, &st), -1); /* refused before the state dir was made */

  http_make_certs();
  const char *half[] = {"--listen", "127.0.0.1:0", "--tls-ca", tls_ca, NULL};
  CU_ASSERT_FALSE(e2e_start_with(half, true));
  log = e2e_serve_log();
  CU_ASSERT(e2e_contains(log, "--tls-cert --tls-key missing"));
  free(log);
  const char *wrong_key[] = {"--listen", "127.0.0.1:0", "--tls-ca", tls_ca, "--tls-cert",
                             tls_cert,   "--tls-key",   tls_ca,     NULL};
  CU_ASSERT_FALSE(e2e_start_with(wrong_key, true));
  log = e2e_serve_log();
  CU_ASSERT(e2e_contains(log, "code 15011"));
  free(log);

  /* With TLS, 0.0.0.0 is served (reached here through 127.0.0.1). */
  http_start("0.0.0.0:0", true);
  log = e2e_serve_log();
  CU_ASSERT(e2e_contains(log, "reachable from the network"));
  free(log);
  char ccert[400], ckey[400];
  e2e_dmctl_target[5] = tls_file(ccert, sizeof ccert, "client-cert.pem");
  e2e_dmctl_target[7] = tls_file(ckey, sizeof ckey, "client-key.pem");
  over_http(0, "query-status", NULL, NULL, NULL);

  /* The same with a silent client on the TLS port (a handshake never begun). */
  http_stop_with_silent_client();
  e2e_teardown();
}

/* The answer to help from a client running as uid 65534 (no supplementary groups): the HTTP
 * status and the body. */
static json_object *http_as_nobody(long *status, long *api_status, int local_port) {
  int pfd[2];
  CU_ASSERT_FATAL(pipe(pfd) == 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(pfd[0]);
    if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
      _exit(6);
    raw_local_port = local_port;
    long st = 0;
    json_object *o = raw_post("{\"cmd\": \"help\"}", &st);
    long api_st = 0; /* the API is admitted as /control is */
    CURLcode crc;
    if (!local_port)
      json_object_put(raw_http("GET", "/api/v1/tasks", NULL, 0, NULL, NULL, NULL, &api_st, &crc));
    char line[8192];
    int len = snprintf(line, sizeof line, "%ld %ld %s", st, api_st, json_object_to_json_string(o));
    if (write(pfd[1], line, (size_t)len) < 0)
      _exit(5);
    _exit(0);
  }
  close(pfd[1]);
  char buf[8192];
  CU_ASSERT_EQUAL(e2e_collect_child(pid, pfd[0], buf, sizeof buf), 0);
  char *sp = NULL;
  *status = strtol(buf, &sp, 10);
  *api_status = strtol(sp, &sp, 10);
  json_object *o = sp ? json_tokener_parse(sp + 1) : NULL;
  if (!o)
    fprintf(stderr, "\n  the client as uid 65534 got \"%s\"\n", buf);
  return o;
}

/* Without TLS a loopback client is admitted as the socket admits one: a client running as another
 * uid is refused (403, DM_ERR_CONTROL_PEER) and root is served; with --socket-group, a member of
 * the group (by the account database: TCP carries only the uid) is served. */
static void test_peer_uid(void) {
  if (geteuid() != 0) {
    fprintf(stderr, "\n  skipped: needs root to run a client as another uid\n");
    return;
  }
  struct group *ng = getgrnam("nogroup");
  struct passwd *nobody = getpwuid(NOBODY);
  /* the preconditions of the second half: uid 65534's group is nogroup, not daemon */
  CU_ASSERT_FATAL(ng && nobody && nobody->pw_gid == ng->gr_gid && getgrnam("daemon"));
  CU_ASSERT_FATAL(e2e_setup() == 0);
  const char *groups[] = {"daemon", "nogroup"};
  for (int served = 0; served < 2; served++) {
    const char *extra[] = {"--listen", "127.0.0.1:0", "--socket-group", groups[served], NULL};
    CU_ASSERT_FATAL(e2e_start_with(extra, false));
    CU_ASSERT_FATAL(http_find_port());
    long status = 0, api_status = 0;
    json_object *o = http_as_nobody(&status, &api_status, 0);
    CU_ASSERT_EQUAL(api_status, served ? 200 : 403);
    if (!served) {
      CU_ASSERT_EQUAL(status, 403);
      CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_CONTROL_PEER);
      CU_ASSERT(e2e_contains(e2e_str(o, "msg"), "running as uid 65534"));
      CU_ASSERT(e2e_contains(e2e_str(o, "msg"), "members of group daemon"));
    } else {
      CU_ASSERT_EQUAL(status, 200);
      CU_ASSERT(e2e_bool(o, "result"));
    }
    json_object_put(o);
    o = raw_post("{\"cmd\": \"help\"}", &status); /* root */
    CU_ASSERT_EQUAL(status, 200);
    CU_ASSERT(e2e_bool(o, "result"));
    json_object_put(o);
    CU_ASSERT_EQUAL(e2e_stop(), 0);
    char log[512];
    snprintf(log, sizeof log, "%s/serve.log", e2e_dir);
    unlink(log); /* the next daemon's port is the one logged */
  }
  e2e_teardown();
}

/* The TIME_WAIT entries (state 06) of /proc/net/tcp with the local port `port`, and their uid. */
static int time_wait_entries(int port, long *uid) {
  FILE *f = fopen("/proc/net/tcp", "r");
  if (!f)
    return 0;
  char line[512], want[32];
  snprintf(want, sizeof want, "0100007F:%04X", (unsigned)port);
  int n = 0;
  while (fgets(line, sizeof line, f)) {
    char local[64];
    unsigned state;
    long u;
    if (sscanf(line, " %*s %63s %*s %x %*s %*s %*s %ld", local, &state, &u) == 3 && state == 6 &&
        strcmp(local, want) == 0) {
      n++;
      *uid = u;
    }
  }
  fclose(f);
  return n;
}

/* Regression: the peer's uid was read from the first /proc/net/tcp entry whose local end was the
 * client's address and port. A closed connection that used that port stays listed as TIME_WAIT
 * owned by uid 0, so a client of another user connecting from the same port (SO_REUSEADDR) could
 * be taken for root and served (seen under parallel runs: a uid 65534 client answered). Now the
 * whole pair and the ESTABLISHED state are matched. Root leaves 8 TIME_WAIT entries on port X;
 * uid 65534 then connects from X and is refused. */
static void test_peer_time_wait(void) {
  if (geteuid() != 0) {
    fprintf(stderr, "\n  skipped: needs root to run a client as another uid\n");
    return;
  }
  CU_ASSERT_FATAL(e2e_setup() == 0);
  http_start("127.0.0.1:0", false);
  int one = 1, port = 0;
  for (int i = 0; i < 8; i++) {
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in la = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof la;
    CU_ASSERT_FATAL(bind(l, (struct sockaddr *)&la, sizeof la) == 0 && listen(l, 1) == 0 &&
                    getsockname(l, (struct sockaddr *)&la, &len) == 0);
    int c = socket(AF_INET, SOCK_STREAM, 0);
    setsockopt(c, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in ca = {.sin_family = AF_INET,
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
                             .sin_port = htons((uint16_t)port)};
    CU_ASSERT_FATAL(bind(c, (struct sockaddr *)&ca, sizeof ca) == 0);
    len = sizeof ca;
    getsockname(c, (struct sockaddr *)&ca, &len);
    port = ntohs(ca.sin_port);
    CU_ASSERT_FATAL(connect(c, (struct sockaddr *)&la, sizeof la) == 0);
    int a = accept(l, NULL, NULL);
    close(c); /* the client closes first: its end stays in TIME_WAIT */
    e2e_sleep_ms(10);
    close(a);
    close(l);
  }
  /* The precondition: root's entries are listed (other processes may add their own). */
  long tw_uid = -1;
  for (int tries = 0; tries < 100 && time_wait_entries(port, &tw_uid) < 8; tries++)
    e2e_sleep_ms(10);
  CU_ASSERT_FATAL(time_wait_entries(port, &tw_uid) >= 8);
  CU_ASSERT_EQUAL(tw_uid, 0);
  long status = 0, api_status = 0;
  json_object *o = http_as_nobody(&status, &api_status, port);
  CU_ASSERT_EQUAL(status, 403);
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_CONTROL_PEER);
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), "running as uid 65534"));
  json_object_put(o);
  http_use_socket();
  CU_ASSERT_EQUAL(e2e_stop(), 0);
  e2e_teardown();
}

/* ---- the HTTP API (http_api.h, docs/api.md) ---- */

/* `method` on the API's `path` with `body` (NULL: none): the answer, *status. */
static json_object *api(const char *method, const char *path, const char *body, long *status) {
  CURLcode rc;
  json_object *o =
      raw_http(method, path, body, body ? strlen(body) : 0, NULL, NULL, NULL, status, &rc);
  CU_ASSERT_EQUAL(rc, CURLE_OK);
  return o;
}

/* `method` on `path` answers 200 with result `want`; the answer is returned. */
static json_object *api_ok(bool want, const char *method, const char *path, const char *body) {
  long status = 0;
  json_object *o = api(method, path, body, &status);
  CU_ASSERT_EQUAL(status, 200);
  CU_ASSERT_PTR_NOT_NULL(o);
  if (e2e_bool(o, "result") != want)
    fprintf(stderr, "\n  %s %s: %s\n", method, path, json_object_to_json_string(o));
  CU_ASSERT(e2e_bool(o, "result") == want);
  return o;
}

/* {"content": the text of e2e_dir/file} (malloc'd). */
static char *api_content(const char *file) {
  char path[400];
  snprintf(path, sizeof path, "%s/%s", e2e_dir, file);
  char *text = e2e_read_file(path);
  CU_ASSERT_PTR_NOT_NULL_FATAL(text);
  json_object *o = json_object_new_object();
  json_object_object_add(o, "content", json_object_new_string(text));
  char *body = strdup(json_object_to_json_string(o));
  json_object_put(o);
  free(text);
  return body;
}

/* The API's answer to a read is the socket's answer to its request (but for the moment's rate
 * and eta). */
static void api_same(const char *path, const char *request) {
  json_object *h = api_ok(true, "GET", path, NULL), *s = e2e_raw(request);
  strip_moment(h);
  strip_moment(s);
  bool same = h && s && json_object_equal(h, s);
  if (!same)
    fprintf(stderr, "\n  GET %s answered\n%s\n  the socket\n%s\n", path,
            json_object_to_json_string(h), json_object_to_json_string(s));
  CU_ASSERT(same);
  json_object_put(h);
  json_object_put(s);
}

/* Every route once through `dmhost serve --http`: sources created, shown, their relay enabled and
 * disabled and purged, stopped; a task started from its text, seen in status (the socket's JSON),
 * paused, updated while paused, its binlog operators listed and added, a unit swapped, resumed,
 * stopped; the OpenAPI document served as the build embedded it. */
static void test_api_routes(void) {
  CU_ASSERT_FATAL(e2e_setup() == 0);
  e2e_source("source.cfg", "mysql-01", false);
  const char *extra[] = {"--http", "127.0.0.1:0", NULL}; /* DM's name for --listen */
  CU_ASSERT_FATAL(e2e_start_with(extra, false));
  CU_ASSERT_FATAL(http_find_port());
  long status = 0;

  char ctype[128];
  char *doc = raw_get_text("/api/v1/openapi.json", &status, ctype, sizeof ctype);
  size_t doc_len;
  const char *embedded = dmh_api_openapi(&doc_len);
  CU_ASSERT_EQUAL(status, 200);
  CU_ASSERT_STRING_EQUAL(ctype, "application/json");
  CU_ASSERT(doc && strlen(doc) == doc_len && memcmp(doc, embedded, doc_len) == 0);
  free(doc);

  json_object *o = api_ok(true, "GET", "/api/v1/sources", NULL);
  CU_ASSERT_EQUAL(json_object_array_length(e2e_get(o, "sources")), 0);
  json_object_put(o);
  char *src = api_content("source.cfg");
  json_object_put(api_ok(true, "POST", "/api/v1/sources", src));
  json_object_put(api_ok(false, "POST", "/api/v1/sources", src)); /* already bound */
  free(src);
  api_same("/api/v1/sources", "{\"cmd\": \"operate-source\", \"args\": {\"op\": \"show\"}}");
  api_same("/api/v1/sources/mysql-01/status", "{\"cmd\": \"operate-source\", \"args\": "
                                              "{\"op\": \"show\", \"source\": \"mysql-01\"}}");
  api_same("/api/v1/sources/mysql-01", "{\"cmd\": \"operate-source\", \"args\": "
                                       "{\"op\": \"show\", \"source\": \"mysql-01\"}}");
  o = api_ok(false, "GET", "/api/v1/sources/mysql-02/status", NULL);
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), "mysql-02"));
  json_object_put(o);

  json_object_put(api_ok(true, "POST", "/api/v1/sources/mysql-01/relay/enable", NULL));
  json_object_put(api_ok(false, "POST", "/api/v1/sources/mysql-01/relay/enable", NULL));
  /* purge-relay: the answer is the socket's for the same request */
  o = api("POST", "/api/v1/sources/mysql-01/relay/purge",
          "{\"relay_binlog_name\": \"mysql-bin.000001\"}", &status);
  json_object *s = e2e_raw("{\"cmd\": \"purge-relay\", \"args\": {\"source\": \"mysql-01\", "
                           "\"file\": \"mysql-bin.000001\"}}");
  CU_ASSERT_EQUAL(status, 200);
  CU_ASSERT(o && s && json_object_equal(o, s));
  json_object_put(o);
  json_object_put(s);
  json_object_put(api_ok(true, "POST", "/api/v1/sources/mysql-01/relay/disable", NULL));
  json_object_put(api_ok(false, "POST", "/api/v1/sources/mysql-01/relay/disable", NULL));

  e2e_task("inc.cfg", "inc", "incremental", "mysql-01", "sync = { items = 0; item-ms = 50; };");
  e2e_task("bad.cfg", "inc", "incremental", "mysql-01", "sync = { items = 0; item-ms = 10; };");
  e2e_task("same.cfg", "inc", "incremental", "mysql-01",
           "# the same settings\nsync = { item-ms = 50; items = 0; };");
  char *task = api_content("inc.cfg");
  o = api_ok(true, "POST", "/api/v1/tasks/check", task);
  CU_ASSERT_PTR_NOT_NULL(e2e_get(o, "checkResult"));
  json_object_put(o);
  json_object_put(api_ok(true, "POST", "/api/v1/tasks", task));
  json_object_put(api_ok(false, "POST", "/api/v1/tasks", task)); /* exists */
  CU_ASSERT(e2e_wait_stage("inc", "Running", 10));
  o = api_ok(true, "GET", "/api/v1/tasks/inc/status", NULL);
  CU_ASSERT(e2e_str_is(o, "sources.0.subTaskStatus.0.stage", "Running"));
  json_object_put(o);
  json_object_put(api_ok(false, "GET", "/api/v1/tasks/nope/status", NULL));

  json_object_put(api_ok(true, "POST", "/api/v1/tasks/inc/pause", NULL));
  CU_ASSERT(e2e_wait_stage("inc", "Paused", 10));
  json_object_put(api_ok(false, "POST", "/api/v1/tasks/inc/pause", NULL)); /* already */
  /* paused, the task's counts hold still: the socket's answer, member for member */
  api_same("/api/v1/tasks/inc/status",
           "{\"cmd\": \"query-status\", \"args\": {\"name\": \"inc\"}}");
  api_same("/api/v1/tasks", "{\"cmd\": \"query-status\"}");
  char *bad = api_content("bad.cfg"), *same = api_content("same.cfg");
  o = api_ok(false, "PUT", "/api/v1/tasks", bad); /* the fake sync has no update slot */
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_UPDATE_UNSUPPORTED);
  json_object_put(o);
  json_object_put(api_ok(true, "PUT", "/api/v1/tasks", same));
  char copy[400];
  snprintf(copy, sizeof copy, "%s/tasks/inc/task.cfg", e2e_state);
  char *kept = e2e_read_file(copy);
  CU_ASSERT(kept && e2e_contains(kept, "# the same settings"));
  free(kept);
  free(bad);
  free(same);

  o = api_ok(true, "GET", "/api/v1/tasks/inc/binlog", NULL);
  json_object_put(o);
  api_same("/api/v1/tasks/inc/binlog?source_name=mysql-01",
           "{\"cmd\": \"binlog\", \"args\": {\"op\": \"list\", \"name\": \"inc\", "
           "\"source\": \"mysql-01\"}}");
  json_object_put(api_ok(true, "POST", "/api/v1/tasks/inc/binlog/inject",
                         "{\"binlog_pos\": \"mysql-bin.000009:4\", \"sqls\": [\"SELECT 1\"]}"));
  o = api_ok(true, "GET", "/api/v1/tasks/inc/binlog", NULL);
  CU_ASSERT(e2e_contains(json_object_to_json_string(o), "mysql-bin.000009:4"));
  json_object_put(o);
  json_object_put(api_ok(true, "POST", "/api/v1/tasks/inc/binlog/revert",
                         "{\"binlog_pos\": \"mysql-bin.000009:4\"}"));

  json_object_put(api_ok(true, "POST", "/api/v1/tasks/inc/resume", NULL));
  CU_ASSERT(e2e_wait_stage("inc", "Running", 10));
  json_object_put(api_ok(true, "POST", "/api/v1/tasks/inc/units/sync/swap",
                         "{\"path\": \"" FAKE_SYNC_V2 "\"}"));
  o = e2e_raw("{\"cmd\": \"query-status\", \"args\": {\"name\": \"inc\"}}");
  CU_ASSERT(e2e_str_is(o, "sources.0.subTaskStatus.0.unitVersion", "2")); /* swapped */
  json_object_put(o);
  /* DM v6's stop and start: the task stays (Paused, its checkpoint kept) and goes on */
  json_object_put(api_ok(false, "POST", "/api/v1/tasks/inc/start", NULL)); /* it runs */
  json_object_put(api_ok(true, "POST", "/api/v1/tasks/inc/stop", NULL));
  CU_ASSERT(e2e_wait_stage("inc", "Paused", 10));
  json_object_put(api_ok(false, "POST", "/api/v1/tasks/inc/stop", NULL)); /* already */
  json_object_put(api_ok(true, "POST", "/api/v1/tasks/inc/start", NULL));
  CU_ASSERT(e2e_wait_stage("inc", "Running", 10));
  json_object_put(api_ok(true, "DELETE", "/api/v1/tasks/inc", NULL));
  json_object_put(api_ok(false, "DELETE", "/api/v1/tasks/inc", NULL));
  json_object_put(api_ok(true, "DELETE", "/api/v1/sources/mysql-01", NULL));
  o = api_ok(true, "GET", "/api/v1/sources", NULL);
  CU_ASSERT_EQUAL(json_object_array_length(e2e_get(o, "sources")), 0);
  json_object_put(o);
  free(task);
  CU_ASSERT_EQUAL(e2e_stop(), 0);
  e2e_teardown();
}

/* A refusal of the API: `status`, result false, DM_ERR_CONTROL_REQUEST with its class and
 * workaround, and `says` in the message. */
static void api_refused(const char *method, const char *path, const char *body, long want,
                        const char *says) {
  long status = 0;
  json_object *o = api(method, path, body, &status);
  CU_ASSERT_EQUAL(status, want);
  CU_ASSERT_FALSE(e2e_bool(o, "result"));
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_CONTROL_REQUEST);
  CU_ASSERT(e2e_str_is(o, "error.ErrClass", "control"));
  CU_ASSERT(e2e_str(o, "error.Workaround") && *e2e_str(o, "error.Workaround"));
  if (!e2e_contains(e2e_str(o, "msg"), says))
    fprintf(stderr, "\n  %s %s: %s\n", method, path, json_object_to_json_string(o));
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), says));
  json_object_put(o);
}

/* The API's refusals, each a JSON error of the control plane's shape, and the daemon answers on:
 * a body that is not JSON or not an object, a member a route does not take, a missing one, a body
 * over the limit (413), an unknown path (404), a wrong method (405 with Allow), an empty path
 * parameter (400). */
static void test_api_errors(void) {
  CU_ASSERT_FATAL(e2e_setup() == 0);
  http_start("127.0.0.1:0", false);
  api_refused("POST", "/api/v1/tasks", "{\"content\": ", 400, "not a JSON object");
  api_refused("POST", "/api/v1/tasks", "[\"task\"]", 400, "not a JSON object");
  api_refused("POST", "/api/v1/tasks", "{\"path\": \"/etc/passwd\"}", 400,
              "member \"path\" this route does not take");
  api_refused("POST", "/api/v1/tasks", "{}", 400, "the body has no \"content\"");
  api_refused("POST", "/api/v1/tasks/inc/binlog/inject", "{\"sqls\": \"SELECT 1\"}", 400,
              "an array of SQL strings");
  api_refused("GET", "/api/v1/nope", NULL, 404, "no such path /api/v1/nope");
  api_refused("GET", "/api/v2/tasks", NULL, 404, "no such path");
  api_refused("PATCH", "/api/v1/tasks", NULL, 405, "this path takes GET, POST, PUT");
  CU_ASSERT_STRING_EQUAL(raw_allow, "GET, POST, PUT");
  api_refused("GET", "/api/v1/tasks/inc/pause", NULL, 405, "takes POST");
  CU_ASSERT_STRING_EQUAL(raw_allow, "POST");
  api_refused("POST", "/api/v1/tasks//pause", NULL, 400, "{task-name} is empty");
  api_refused("GET", "/api/v1/sources//status", NULL, 400, "{source-name} is empty");
  size_t big = DMH_CONTROL_LINE_MAX + 1;
  char *body = malloc(big + 1);
  CU_ASSERT_FATAL(body != NULL);
  memset(body, ' ', big);
  body[big] = '\0';
  body[0] = '{';
  body[big - 1] = '}';
  long status = 0;
  CURLcode rc;
  json_object *o = raw_http("POST", "/api/v1/tasks", body, big, NULL, NULL, NULL, &status, &rc);
  CU_ASSERT_EQUAL(status, 413);
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_CONTROL_REQUEST);
  json_object_put(o);
  free(body);
  /* unharmed */
  json_object_put(api_ok(true, "GET", "/api/v1/tasks", NULL));
  over_http(0, "query-status", NULL, NULL, NULL);
  http_use_socket();
  CU_ASSERT_EQUAL(e2e_stop(), 0);
  e2e_teardown();
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  curl_global_init(CURL_GLOBAL_DEFAULT);
  static const dmh_cunit_test tests[] = {
      {"the same answers over HTTP as over the socket", test_same_answers},
      {"the HTTP API: every route", test_api_routes},
      {"the HTTP API: refusals", test_api_errors},
      {"GET /metrics", test_metrics},
      {"dmhost run --listen: GET /metrics only", test_run_metrics},
      {"mutual TLS", test_mutual_tls},
      {"body size, method and path bounds", test_limits},
      {"no listen beyond loopback without TLS", test_insecure_listen_refused},
      {"loopback without TLS admits the socket's users", test_peer_uid},
      {"a TIME_WAIT entry of root's on the client's port admits nobody", test_peer_time_wait},
  };
  int rc = dmh_cunit_run("control http", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
  curl_global_cleanup();
  return rc;
}
