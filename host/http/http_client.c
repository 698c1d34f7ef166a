/* The client side of the control plane over HTTP (control_http.h, dmh_control_http_call): what
 * dmctl --master-addr and the cluster's nodes use to reach a daemon's POST /control, on libcurl.
 * The server is http_server.c. */
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control_http.h"
#include "dmhost/sdk.h"

typedef struct http_buf {
  char *data;
  size_t len;
} http_buf;

static size_t http_collect(char *ptr, size_t size, size_t nmemb, void *ud) {
  http_buf *b = ud;
  size_t n = size * nmemb;
  char *nb = realloc(b->data, b->len + n + 1);
  if (!nb)
    return 0;
  memcpy(nb + b->len, ptr, n);
  b->data = nb;
  b->len += n;
  b->data[b->len] = '\0';
  return n;
}

static pthread_once_t http_curl_once = PTHREAD_ONCE_INIT;
static void http_curl_init(void) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
}

int dmh_control_http_call(const char *addr, const dmh_control_tls *tls, const char *request,
                          int timeout_ms, char **response, dm_error *err) {
  *response = NULL;
  pthread_once(&http_curl_once, http_curl_init);
  char url[512];
  if ((size_t)snprintf(url, sizeof url, "http%s://%s" DMH_CONTROL_HTTP_PATH, tls ? "s" : "",
                       addr) >= sizeof url) {
    dm_error_set(err, DM_ERR_CONTROL_HTTP, NULL, "--master-addr %s is too long", addr);
    return -1;
  }
  CURL *c = curl_easy_init();
  if (!c) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "cannot start libcurl");
    return -1;
  }
  char curl_err[CURL_ERROR_SIZE] = "";
  http_buf body = {NULL, 0};
  /* "Expect:" off: curl would wait for a 100 Continue before a large body. */
  struct curl_slist *headers = curl_slist_append(NULL, "Content-Type: application/json");
  headers = curl_slist_append(headers, "Expect:");
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, tls ? "https" : "http");
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, request);
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(request));
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, http_collect);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, curl_err);
  curl_easy_setopt(c, CURLOPT_NOPROXY, "*"); /* the control plane is never reached by a proxy */
  if (timeout_ms > 0)
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
  if (tls) {
    curl_easy_setopt(c, CURLOPT_CAINFO, tls->ca);
    curl_easy_setopt(c, CURLOPT_CAPATH, NULL); /* only this CA, not the system's */
    curl_easy_setopt(c, CURLOPT_SSLCERT, tls->cert);
    curl_easy_setopt(c, CURLOPT_SSLKEY, tls->key);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
  }
  CURLcode rc = curl_easy_perform(c);
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(c);
  if (rc != CURLE_OK) {
    free(body.data);
    dm_error_set(err, DM_ERR_CONTROL_HTTP, curl_err[0] ? curl_err : curl_easy_strerror(rc),
                 rc == CURLE_OPERATION_TIMEDOUT
                     ? "no answer from %s within %d ms; the daemon may be busy (see its log), "
                       "retry or raise --timeout"
                 : tls ? "cannot reach the control plane at %s (%d ms limit); check "
                         "--master-addr and the --tls-* flags (the daemon fails the TLS "
                         "handshake of a client certificate its --tls-ca did not sign: its "
                         "log says so)"
                       : "cannot reach the control plane at %s (%d ms limit); check "
                         "--master-addr (the daemon closes at accept a client of a user it "
                         "does not admit: its log says so)",
                 url, timeout_ms);
    return -1;
  }
  /* The protocol's answers (200) and the transport's refusals (403, 404, 405, 413, 415) are JSON
   * objects of one shape; anything else is not a dmhost control plane. */
  if (!body.data || body.data[0] != '{' ||
      (status != 200 && status != 403 && status != 404 && status != 405 && status != 413 &&
       status != 415)) {
    dm_error_set(err, DM_ERR_CONTROL_HTTP, body.data,
                 "%s answered HTTP %ld without the protocol's JSON; is --master-addr a dmhost "
                 "control plane?",
                 url, status);
    free(body.data);
    return -1;
  }
  size_t n = body.len;
  while (n > 0 && (body.data[n - 1] == '\n' || body.data[n - 1] == '\r'))
    body.data[--n] = '\0';
  *response = body.data;
  return 0;
}
