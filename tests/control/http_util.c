/* Helpers of the control plane's tests over TCP (http_util.h). */
#include "http_util.h"

#include <CUnit/Basic.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "control_http.h"
#include "e2e_util.h"
#include "metrics.h"
#include "promtool_check.h"
#include "test_http_client.h"

char http_addr[64]; /* 127.0.0.1:PORT of the daemon started last */
char tls_ca[400], tls_cert[400], tls_key[400];

bool http_find_port(void) {
  return e2e_http_addr(http_addr, sizeof http_addr);
}

/* Start the daemon with --listen and the `extra` flags; dmctl then goes through --master-addr
 * (with the TLS files when `tls`). */
void http_start(const char *listen, bool tls) {
  /* The fake units come by unit-paths in the text dmctl --master-addr sends: allowed (the unit
   * folders still apply) */
  const char *extra[12] = {"--listen", listen, "--allow-submitted-unit-paths"};
  int n = 3;
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

void http_use_socket(void) {
  memset(e2e_dmctl_target, 0, sizeof e2e_dmctl_target);
}

/* When nonzero, raw_http's connections are made from this local port (SO_REUSEADDR). */
int raw_local_port;
/* When set, raw_http sends its body chunked (no Content-Length). */
bool raw_chunked;
/* When set, raw_http asks "Expect: 100-continue" (http_util.h). */
bool raw_expect;
/* The Allow header of raw_http's last answer ("" when none). */
char raw_allow[128];

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
json_object *raw_http(const char *method, const char *path, const char *body, size_t len,
                      const char *ca, const char *cert, const char *key, long *status,
                      CURLcode *rc) {
  char url[256];
  snprintf(url, sizeof url, "http%s://%s%s", ca ? "s" : "", http_addr, path);
  CURL *c = curl_easy_init();
  char *text = NULL;
  size_t text_len = 0;
  FILE *out = open_memstream(&text, &text_len); /* curl's default writer fwrites into it */
  struct curl_slist *h = curl_slist_append(NULL, raw_expect ? "Expect: 100-continue" : "Expect:");
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
char *raw_get_text(const char *path, long *status, char *ctype, size_t ctype_len) {
  char url[256];
  snprintf(url, sizeof url, "http://%s%s", http_addr, path);
  return dmh_test_http(url, "GET", NULL, status, ctype, ctype_len);
}

/* GET /metrics, 200 with Prometheus' content type, passing promtool. */
char *scrape(void) {
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

json_object *raw_post(const char *body, long *status) {
  CURLcode rc;
  return raw_http("POST", DMH_CONTROL_HTTP_PATH, body, strlen(body), NULL, NULL, NULL, status, &rc);
}

/* Remove the members that depend on the moment of asking (a progress's rate and eta), at any
 * depth. */
void strip_moment(json_object *o) {
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
void both(int want, const char *a0, const char *a1, const char *a2, const char *a3) {
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
void over_http(int want, const char *a0, const char *a1, const char *a2, const char *a3) {
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
void http_stop_with_silent_client(void) {
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

int http_run_tests(const char *suite, const dmh_cunit_test *tests, size_t n) {
  signal(SIGPIPE, SIG_IGN);
  curl_global_init(CURL_GLOBAL_DEFAULT);
  int rc = dmh_cunit_run(suite, NULL, NULL, tests, n);
  curl_global_cleanup();
  return rc;
}
