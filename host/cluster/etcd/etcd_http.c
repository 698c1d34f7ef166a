/* The etcd client's transport: the endpoint list, one POST with failover, etcd's errors mapped. */
#define DMH_ETCD_INTERNAL
#include "etcd.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmhost/sdk.h"

/* Answers bigger than this are refused (a range of everything in a big store: page it). */
#define ETCD_REPLY_MAX (64u << 20)

struct dmh_etcd {
  char **endpoints; /* "http://127.0.0.1:22379", no trailing '/' */
  const char **api; /* per endpoint: "/v3", or "/v3beta" once /v3 answered 404 */
  size_t n;
  size_t cur; /* the endpoint that answered last */
  CURL *curl; /* this client's handle, with its keep-alive connection */
  long connect_ms;
  long request_ms;
};

static pthread_once_t etcd_curl_once = PTHREAD_ONCE_INIT;
static CURLcode etcd_curl_rc = CURLE_FAILED_INIT;

static void etcd_curl_global(void) {
  etcd_curl_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static char *etcd_endpoint_dup(const char *s, size_t n) {
  while (n && (*s == ' ' || *s == '\t')) {
    s++;
    n--;
  }
  while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '/'))
    n--;
  if (!n)
    return NULL;
  int scheme = (n > 7 && !strncmp(s, "http://", 7)) || (n > 8 && !strncmp(s, "https://", 8));
  char *out = malloc(n + 8);
  if (out)
    snprintf(out, n + 8, "%s%.*s", scheme ? "" : "http://", (int)n, s);
  return out;
}

dmh_etcd *dmh_etcd_open(const char *endpoints, const dmh_etcd_opts *opts, dm_error *err) {
  pthread_once(&etcd_curl_once, etcd_curl_global);
  if (etcd_curl_rc != CURLE_OK) {
    dm_error_set(err, DM_ERR_INTERNAL, curl_easy_strerror(etcd_curl_rc),
                 "etcd client: libcurl could not be initialised");
    return NULL;
  }
  dmh_etcd *c = calloc(1, sizeof *c);
  size_t max = 1;
  for (const char *p = endpoints ? endpoints : ""; *p; p++)
    max += *p == ',';
  if (c) {
    c->endpoints = calloc(max, sizeof *c->endpoints);
    c->api = calloc(max, sizeof *c->api);
    c->curl = curl_easy_init();
  }
  if (!c || !c->endpoints || !c->api || !c->curl) {
    dmh_etcd_close(c);
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "etcd client: out of memory");
    return NULL;
  }
  for (const char *p = endpoints ? endpoints : ""; *p;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    char *e = etcd_endpoint_dup(p, len);
    if (e) {
      c->api[c->n] = "/v3";
      c->endpoints[c->n++] = e;
    }
    p += len + (comma != NULL);
  }
  if (!c->n) {
    dmh_etcd_close(c);
    dm_error_set(err, DM_ERR_CONFIG_INVALID, NULL,
                 "etcd client: no endpoint in '%s'; give the members' client URLs, e.g. "
                 "http://127.0.0.1:22379,http://127.0.0.1:22479",
                 endpoints ? endpoints : "");
    return NULL;
  }
  c->connect_ms = opts && opts->connect_timeout_ms > 0 ? opts->connect_timeout_ms : 1000;
  c->request_ms = opts && opts->request_timeout_ms > 0 ? opts->request_timeout_ms : 10000;
  return c;
}

void dmh_etcd_close(dmh_etcd *c) {
  if (!c)
    return;
  for (size_t i = 0; i < c->n; i++)
    free(c->endpoints[i]);
  free(c->endpoints);
  free(c->api);
  if (c->curl)
    curl_easy_cleanup(c->curl);
  free(c);
}

const char *dmh_etcd_endpoint(const dmh_etcd *c) {
  return c->endpoints[c->cur];
}

size_t etcd_endpoint_count(const dmh_etcd *c) {
  return c->n;
}

const char *etcd_endpoint_at(const dmh_etcd *c, size_t i) {
  return c->endpoints[i];
}

size_t etcd_endpoint_current(const dmh_etcd *c) {
  return c->cur;
}

const char *etcd_api_at(const dmh_etcd *c, size_t i) {
  return c->api[i];
}

int etcd_api_fallback(dmh_etcd *c, size_t i) {
  if (strcmp(c->api[i], "/v3") != 0)
    return 0;
  c->api[i] = "/v3beta";
  return 1;
}

long etcd_connect_timeout_ms(const dmh_etcd *c) {
  return c->connect_ms;
}

int etcd_buf_add(etcd_buf *b, const char *data, size_t len, size_t max) {
  if (b->n + len + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->n + len + 1)
      cap *= 2;
    char *p = cap <= max ? realloc(b->p, cap) : NULL;
    if (!p) {
      b->too_big = 1;
      return -1;
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->n, data, len);
  b->n += len;
  b->p[b->n] = '\0';
  return 0;
}

static size_t etcd_buf_write(char *data, size_t size, size_t nmemb, void *arg) {
  return etcd_buf_add(arg, data, size * nmemb, ETCD_REPLY_MAX) == 0 ? size * nmemb : 0;
}

/* Errors that mean the request never left this process: safe to send anywhere else. */
static int etcd_unsent(CURLcode rc) {
  return rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST ||
         rc == CURLE_COULDNT_RESOLVE_PROXY || rc == CURLE_UNSUPPORTED_PROTOCOL ||
         rc == CURLE_URL_MALFORMAT;
}

static CURLcode etcd_post(dmh_etcd *c, size_t i, const char *path, const char *json, etcd_buf *buf,
                          long *status) {
  char url[1024];
  snprintf(url, sizeof url, "%s%s/%s", c->endpoints[i], c->api[i], path);
  struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
  CURL *h = c->curl;
  curl_easy_reset(h);
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, json);
  curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(json));
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, etcd_buf_write);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, buf);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->connect_ms);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->request_ms);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
  CURLcode rc = curl_easy_perform(h);
  *status = 0;
  if (rc == CURLE_OK)
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
  curl_slist_free_all(hdr);
  return rc;
}

static const char *etcd_reply_message(json_object *reply) {
  json_object *m = NULL;
  if (reply &&
      (json_object_object_get_ex(reply, "message", &m) ||
       json_object_object_get_ex(reply, "error", &m)) &&
      json_object_is_type(m, json_type_string))
    return json_object_get_string(m);
  return NULL;
}

void etcd_error_from_reply(json_object *reply, long http_status, const char *endpoint,
                           const char *what, dm_error *err) {
  const char *msg = etcd_reply_message(reply);
  json_object *co = NULL;
  int code = reply && json_object_object_get_ex(reply, "code", &co) ? json_object_get_int(co) : -1;
  int32_t ec = DM_ERR_ETCD_REQUEST;
  if (!msg)
    ec = DM_ERR_ETCD_REPLY;
  else if (strstr(msg, "too many operations") || strstr(msg, "too large") ||
           strstr(msg, "larger than max"))
    ec = DM_ERR_ETCD_LIMIT;
  else if (strstr(msg, "lease not found"))
    ec = DM_ERR_ETCD_LEASE_NOT_FOUND;
  else if (strstr(msg, "lease already exists"))
    ec = DM_ERR_ETCD_LEASE_EXISTS;
  else if (strstr(msg, "compacted"))
    ec = DM_ERR_ETCD_COMPACTED;
  else if (code == 14 || http_status == 503)
    ec = DM_ERR_ETCD_UNAVAILABLE;
  dm_error_set(err, ec, msg, "%s at etcd %s: %s (HTTP %ld, gRPC code %d)", what, endpoint,
               msg ? msg : "an answer that is not etcd's JSON", http_status, code);
}

static int etcd_call_json(dmh_etcd *c, const char *path, const char *json, etcd_retry retry,
                          const char *what, json_object **reply, dm_error *err);

int etcd_call_int64(dmh_etcd *c, const char *path, const char *field, int64_t v, etcd_retry retry,
                    const char *what, json_object **reply, dm_error *err) {
  json_object *body = json_object_new_object(), *dropped = NULL;
  if (body)
    etcd_json_add_int64(body, field, v);
  int rc = etcd_call(c, path, body, retry, what, reply ? reply : &dropped, err);
  json_object_put(dropped);
  return rc;
}

int etcd_call(dmh_etcd *c, const char *path, json_object *body, etcd_retry retry, const char *what,
              json_object **reply, dm_error *err) {
  *reply = NULL;
  const char *json = body ? json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN) : NULL;
  if (!json) {
    json_object_put(body);
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "%s: out of memory", what);
    return -1;
  }
  int rc = etcd_call_json(c, path, json, retry, what, reply, err);
  json_object_put(body);
  return rc;
}

static int etcd_call_json(dmh_etcd *c, const char *path, const char *json, etcd_retry retry,
                          const char *what, json_object **reply, dm_error *err) {
  char last[DM_ERROR_RAW_MAX] = "";
  for (size_t tries = 0, fallbacks = 0; tries < c->n; tries++) {
    size_t i = (c->cur + tries) % c->n;
    const char *ep = c->endpoints[i];
    etcd_buf buf = {0};
    long status = 0;
    CURLcode rc = etcd_post(c, i, path, json, &buf, &status);
    if (rc != CURLE_OK) {
      snprintf(last, sizeof last, "%s: %s", ep,
               buf.too_big ? "answer too big or out of memory" : curl_easy_strerror(rc));
      free(buf.p);
      if (etcd_unsent(rc) || retry == ETCD_READ)
        continue;
      c->cur = (i + 1) % c->n; /* the next request starts elsewhere */
      dm_error_set(err, DM_ERR_ETCD_OUTCOME_UNKNOWN, last,
                   "%s at etcd %s: the connection broke after the request was sent, so it may "
                   "or may not have been applied",
                   what, ep);
      return -1;
    }
    if (status == 404 && fallbacks++ < c->n && etcd_api_fallback(c, i)) {
      free(buf.p);
      tries--; /* the same member again, at /v3beta/ (etcd 3.3) */
      continue;
    }
    json_object *o = buf.p ? json_tokener_parse(buf.p) : NULL;
    if (status == 200 && o && json_object_is_type(o, json_type_object)) {
      free(buf.p);
      c->cur = i;
      *reply = o;
      return 0;
    }
    if (status == 503) {
      /* etcd's Unavailable: no leader (not applied), or a timeout waiting for raft (perhaps
       * applied later), the two told apart by the message as etcd's own client does. */
      const char *msg = etcd_reply_message(o);
      snprintf(last, sizeof last, "%s: %s", ep, msg ? msg : "HTTP 503");
      int not_applied = msg && strstr(msg, "no leader");
      json_object_put(o);
      free(buf.p);
      if (retry == ETCD_READ || not_applied)
        continue;
      c->cur = (i + 1) % c->n;
      dm_error_set(err, DM_ERR_ETCD_OUTCOME_UNKNOWN, last,
                   "%s at etcd %s: etcd answered 503 (unavailable) after taking the request, so "
                   "it may or may not be applied",
                   what, ep);
      return -1;
    }
    c->cur = i;
    if (o && !json_object_is_type(o, json_type_object)) {
      json_object_put(o);
      o = NULL;
    }
    etcd_error_from_reply(o, status, ep, what, err);
    if (!o) {
      char raw[DM_ERROR_RAW_MAX];
      snprintf(raw, sizeof raw, "HTTP %ld: %.200s", status, buf.p ? buf.p : "(empty)");
      dm_error_set(err, DM_ERR_ETCD_REPLY, raw,
                   "%s at %s: the answer is not etcd v3's JSON gateway (HTTP %ld)", what, ep,
                   status);
    }
    json_object_put(o);
    free(buf.p);
    return -1;
  }
  dm_error_set(err, DM_ERR_ETCD_UNAVAILABLE, last,
               "%s: no etcd endpoint took the request (%zu tried, from %s)", what, c->n,
               c->endpoints[c->cur]);
  return -1;
}
