/* The etcd client's transport: the endpoint list, one POST with failover, etcd's errors mapped;
 * TLS (libcurl verifying the members against the CA) and etcd users (a token from
 * /v3/auth/authenticate, shared by the process's clients of one user, renewed when refused). */
#define DMH_ETCD_INTERNAL
#include "etcd.h"

#include <curl/curl.h>
#include <openssl/crypto.h>
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
  dmh_etcd_security sec; /* the caller's strings; all NULL: none */
  char *token_key;       /* the token cache's key: user and endpoints (NULL: no user) */
  char errbuf[CURL_ERROR_SIZE];
};

/* The tokens of the process, one per user and endpoint list: every client of a master or worker
 * uses the same, so etcd checks a password (bcrypt) once per token, not once per client. */
#define ETCD_TOKENS_MAX 16
static pthread_mutex_t etcd_tokens_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
  char *key;
  char *token;
} etcd_tokens[ETCD_TOKENS_MAX];

/* A copy of the token cached for key, or NULL. */
static char *etcd_token_get(const char *key) {
  char *t = NULL;
  pthread_mutex_lock(&etcd_tokens_mu);
  for (int i = 0; i < ETCD_TOKENS_MAX && !t; i++)
    if (etcd_tokens[i].key && !strcmp(etcd_tokens[i].key, key) && etcd_tokens[i].token)
      t = strdup(etcd_tokens[i].token);
  pthread_mutex_unlock(&etcd_tokens_mu);
  return t;
}

static void etcd_token_put(const char *key, const char *token) {
  pthread_mutex_lock(&etcd_tokens_mu);
  int slot = -1;
  for (int i = 0; i < ETCD_TOKENS_MAX && slot < 0; i++)
    if (etcd_tokens[i].key && !strcmp(etcd_tokens[i].key, key))
      slot = i;
  for (int i = 0; i < ETCD_TOKENS_MAX && slot < 0; i++)
    if (!etcd_tokens[i].key)
      slot = i;
  if (slot < 0)
    slot = 0; /* more users than slots (tests): the oldest is authenticated again when needed */
  if (!etcd_tokens[slot].key || strcmp(etcd_tokens[slot].key, key) != 0) {
    free(etcd_tokens[slot].key);
    etcd_tokens[slot].key = strdup(key);
  }
  free(etcd_tokens[slot].token);
  etcd_tokens[slot].token = etcd_tokens[slot].key ? strdup(token) : NULL;
  pthread_mutex_unlock(&etcd_tokens_mu);
}

static pthread_once_t etcd_curl_once = PTHREAD_ONCE_INIT;
static CURLcode etcd_curl_rc = CURLE_FAILED_INIT;

static void etcd_curl_global(void) {
  etcd_curl_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* Whether the endpoint URL's host is this machine's loopback (127.0.0.0/8, ::1, localhost). */
static int etcd_loopback(const char *url) {
  const char *h = strstr(url, "://");
  h = h ? h + 3 : url;
  size_t n = strcspn(h, "/");
  if (n >= 5 && !strncmp(h, "[::1]", 5))
    return n == 5 || h[5] == ':';
  size_t host = strcspn(h, ":/");
  if (host == 9 && !strncmp(h, "localhost", 9))
    return 1;
  if (strncmp(h, "127.", 4) != 0)
    return 0;
  for (size_t k = 4; k < host; k++)
    if (!(h[k] == '.' || (h[k] >= '0' && h[k] <= '9')))
      return 0;
  return 1;
}

static char *etcd_endpoint_dup(const char *s, size_t n, const char *scheme_default) {
  while (n && (*s == ' ' || *s == '\t')) {
    s++;
    n--;
  }
  while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '/'))
    n--;
  if (!n)
    return NULL;
  int scheme = (n > 7 && !strncmp(s, "http://", 7)) || (n > 8 && !strncmp(s, "https://", 8));
  char *out = malloc(n + 9);
  if (out)
    snprintf(out, n + 9, "%s%.*s", scheme ? "" : scheme_default, (int)n, s);
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
  const dmh_etcd_security *sec = opts ? opts->sec : NULL;
  const char *scheme = sec && sec->cacert ? "https://" : "http://";
  for (const char *p = endpoints ? endpoints : ""; *p;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    char *e = etcd_endpoint_dup(p, len, scheme);
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
  for (size_t i = 0; i < c->n; i++) {
    if (strncmp(c->endpoints[i], "http://", 7) != 0 || etcd_loopback(c->endpoints[i]) ||
        (opts && opts->insecure_transport))
      continue;
    dm_error_set(err, DM_ERR_CLUSTER_INSECURE_ETCD, NULL,
                 "etcd endpoint %s is plain http to another host: whoever is on the network "
                 "between reads every key (the sources' files), the etcd user's password and "
                 "token, and can write tasks; use https:// with --etcd-cacert, or pass "
                 "--etcd-insecure-transport to accept it (dangerous)",
                 c->endpoints[i]);
    dmh_etcd_close(c);
    return NULL;
  }
  if (sec) {
    c->sec = *sec;
    if (sec->user) {
      size_t len = strlen(sec->user) + strlen(endpoints) + 2;
      if (!(c->token_key = malloc(len))) {
        dmh_etcd_close(c);
        dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "etcd client: out of memory");
        return NULL;
      }
      snprintf(c->token_key, len, "%s\n%s", sec->user, endpoints);
    }
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
  free(c->token_key);
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

static const char *etcd_reply_message(json_object *reply) {
  json_object *m = NULL;
  if (reply &&
      (json_object_object_get_ex(reply, "message", &m) ||
       json_object_object_get_ex(reply, "error", &m)) &&
      json_object_is_type(m, json_type_string))
    return json_object_get_string(m);
  return NULL;
}

void etcd_tls_setopt(const dmh_etcd *c, CURL *h) {
  /* verification is curl's default; set anyway, so that no default of a build can turn it off */
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
  if (c->sec.cacert)
    curl_easy_setopt(h, CURLOPT_CAINFO, c->sec.cacert);
  if (c->sec.cert) {
    curl_easy_setopt(h, CURLOPT_SSLCERT, c->sec.cert);
    curl_easy_setopt(h, CURLOPT_SSLKEY, c->sec.key);
  }
}

int etcd_tls_failure(int curl_rc, const char *errbuf) {
  switch ((CURLcode)curl_rc) {
  case CURLE_SSL_CONNECT_ERROR:
  case CURLE_PEER_FAILED_VERIFICATION:
  case CURLE_SSL_CERTPROBLEM:
  case CURLE_SSL_CIPHER:
  case CURLE_SSL_CACERT_BADFILE:
  case CURLE_SSL_ISSUER_ERROR:
  case CURLE_SSL_CRL_BADFILE:
  case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
  case CURLE_SSL_INVALIDCERTSTATUS:
    return 1;
  case CURLE_RECV_ERROR:
  case CURLE_SEND_ERROR:
  case CURLE_GOT_NOTHING:
    /* TLS 1.3: the server refuses a missing client certificate after the client's handshake
     * ended, with an alert the client reads as a receive error */
    return errbuf && (strstr(errbuf, "alert") || strstr(errbuf, "certificate"));
  default:
    return 0;
  }
}

int etcd_token_refused(const char *msg) {
  return msg && (strstr(msg, "invalid auth token") || strstr(msg, "user name is empty") ||
                 strstr(msg, "auth: revision in header is old"));
}

/* Whether an etcd message refuses this client for who it is. */
static int etcd_auth_refusal(const char *msg) {
  return etcd_token_refused(msg) || strstr(msg, "permission denied") ||
         strstr(msg, "authentication failed") || strstr(msg, "user name not found") ||
         strstr(msg, "authentication is not enabled") || strstr(msg, "auth: invalid");
}

/* Errors that mean the request never left this process: safe to send anywhere else. */
static int etcd_unsent(CURLcode rc) {
  return rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST ||
         rc == CURLE_COULDNT_RESOLVE_PROXY || rc == CURLE_UNSUPPORTED_PROTOCOL ||
         rc == CURLE_URL_MALFORMAT;
}

/* hdr: the request's own headers (the token), consumed. */
static CURLcode etcd_post(dmh_etcd *c, size_t i, const char *path, const char *json, etcd_buf *buf,
                          long *status, struct curl_slist *hdr) {
  char url[1024];
  snprintf(url, sizeof url, "%s%s/%s", c->endpoints[i], c->api[i], path);
  hdr = curl_slist_append(hdr, "Content-Type: application/json");
  CURL *h = c->curl;
  curl_easy_reset(h);
  c->errbuf[0] = '\0';
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, c->errbuf);
  etcd_tls_setopt(c, h);
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
  /* the token's header: gone from memory with the list */
  for (struct curl_slist *l = hdr; l; l = l->next)
    OPENSSL_cleanse(l->data, strlen(l->data));
  curl_slist_free_all(hdr);
  return rc;
}

/* The curl failure's text: curl's detail when it has one. */
static const char *etcd_curl_text(const dmh_etcd *c, CURLcode rc) {
  return c->errbuf[0] ? c->errbuf : curl_easy_strerror(rc);
}

/* POST /v3/auth/authenticate at endpoint i: *token (malloc'd). 0; -1 with err: DM_ERR_ETCD_AUTH
 * when etcd refused the user, else DM_ERR_ETCD_UNAVAILABLE (the member did not answer: try
 * another). */
static int etcd_authenticate(dmh_etcd *c, size_t i, char **token, dm_error *err) {
  *token = NULL;
  json_object *body = json_object_new_object();
  if (!body) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "etcd authentication: out of memory");
    return -1;
  }
  json_object_object_add(body, "name", json_object_new_string(c->sec.user));
  json_object_object_add(body, "password",
                         json_object_new_string(c->sec.password ? c->sec.password : ""));
  const char *json = json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN);
  etcd_buf buf = {0};
  long status = 0;
  CURLcode rc =
      json ? etcd_post(c, i, "auth/authenticate", json, &buf, &status, NULL) : CURLE_OUT_OF_MEMORY;
  if (json)
    OPENSSL_cleanse((char *)json, strlen(json));
  json_object_put(body);
  json_object *o = rc == CURLE_OK && buf.p ? json_tokener_parse(buf.p) : NULL, *t = NULL;
  int ret = -1;
  if (rc != CURLE_OK) {
    dm_error_set(err, etcd_tls_failure(rc, c->errbuf) ? DM_ERR_ETCD_AUTH : DM_ERR_ETCD_UNAVAILABLE,
                 etcd_curl_text(c, rc), "authentication of etcd user '%s' at %s: %s", c->sec.user,
                 c->endpoints[i], etcd_curl_text(c, rc));
  } else if (status == 200 && o && json_object_object_get_ex(o, "token", &t) &&
             json_object_is_type(t, json_type_string) && json_object_get_string_len(t) > 0) {
    *token = strdup(json_object_get_string(t));
    ret = *token ? 0 : -1;
    if (!*token)
      dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "etcd authentication: out of memory");
  } else if (status == 200 && o) {
    /* etcd without auth enabled answers authenticate with no token */
    dm_error_set(err, DM_ERR_ETCD_AUTH, NULL,
                 "authentication of etcd user '%s' at %s gave no token: is authentication "
                 "enabled on etcd (`etcdctl auth enable`)? A client given a user refuses an "
                 "etcd that anyone may use",
                 c->sec.user, c->endpoints[i]);
  } else {
    const char *msg = etcd_reply_message(o);
    if (msg && etcd_auth_refusal(msg))
      dm_error_set(err, DM_ERR_ETCD_AUTH, msg, "etcd refused user '%s' at %s: %s", c->sec.user,
                   c->endpoints[i], msg);
    else
      dm_error_set(err, status == 503 ? DM_ERR_ETCD_UNAVAILABLE : DM_ERR_ETCD_REPLY, msg,
                   "authentication of etcd user '%s' at %s: HTTP %ld, %s", c->sec.user,
                   c->endpoints[i], status, msg ? msg : "not etcd's JSON");
  }
  json_object_put(o);
  if (buf.p)
    OPENSSL_cleanse(buf.p, buf.n);
  free(buf.p);
  return ret;
}

int etcd_auth_header(dmh_etcd *c, size_t i, int renew, const char *stale, struct curl_slist **hdr,
                     char **used, dm_error *err) {
  if (used)
    *used = NULL;
  if (!c->token_key)
    return 0;
  char *tok = etcd_token_get(c->token_key);
  if (!tok || (renew && (!stale || !strcmp(tok, stale)))) {
    free(tok);
    if (etcd_authenticate(c, i, &tok, err) < 0)
      return -1;
    etcd_token_put(c->token_key, tok);
  }
  size_t len = strlen(tok) + 32;
  char *line = malloc(len);
  struct curl_slist *l = NULL;
  if (line) {
    snprintf(line, len, "Authorization: %s", tok);
    l = curl_slist_append(*hdr, line);
    OPENSSL_cleanse(line, len);
    free(line);
  }
  if (!l) {
    free(tok);
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "etcd client: out of memory");
    return -1;
  }
  *hdr = l;
  if (used)
    *used = tok;
  else
    free(tok);
  return 0;
}

void etcd_error_from_reply(json_object *reply, long http_status, const char *endpoint,
                           const char *what, dm_error *err) {
  const char *msg = etcd_reply_message(reply);
  json_object *co = NULL;
  int code = reply && json_object_object_get_ex(reply, "code", &co) ? json_object_get_int(co) : -1;
  int32_t ec = DM_ERR_ETCD_REQUEST;
  if (!msg)
    ec = DM_ERR_ETCD_REPLY;
  else if (etcd_auth_refusal(msg))
    ec = DM_ERR_ETCD_AUTH;
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
  int tls_refused = 0, renew = 0;
  char *used = NULL; /* the token sent with the last request */
  for (size_t tries = 0, fallbacks = 0; tries < c->n; tries++) {
    size_t i = (c->cur + tries) % c->n;
    const char *ep = c->endpoints[i];
    etcd_buf buf = {0};
    long status = 0;
    struct curl_slist *auth = NULL;
    char *stale = used;
    dm_error aerr;
    int arc = etcd_auth_header(c, i, renew, stale, &auth, &used, &aerr);
    free(stale);
    if (arc < 0) {
      if (aerr.code != DM_ERR_ETCD_UNAVAILABLE) {
        *err = aerr;
        return -1;
      }
      snprintf(last, sizeof last, "%s", aerr.message);
      continue;
    }
    CURLcode rc = etcd_post(c, i, path, json, &buf, &status, auth);
    if (rc != CURLE_OK) {
      snprintf(last, sizeof last, "%s: %s", ep,
               buf.too_big ? "answer too big or out of memory" : etcd_curl_text(c, rc));
      free(buf.p);
      /* TLS refused the connection before etcd read a byte of the request */
      tls_refused = etcd_tls_failure(rc, c->errbuf);
      if (tls_refused || etcd_unsent(rc) || retry == ETCD_READ)
        continue;
      free(used);
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
    tls_refused = 0;
    json_object *o = buf.p ? json_tokener_parse(buf.p) : NULL, *se = NULL;
    /* a stream method (lease keepalive) answers 200 with {"error": {...}} */
    const char *refusal = status != 200 ? etcd_reply_message(o)
                          : o && json_object_is_type(o, json_type_object) &&
                                  json_object_object_get_ex(o, "error", &se) &&
                                  json_object_is_type(se, json_type_object)
                              ? etcd_reply_message(se)
                              : NULL;
    if (used && !renew && etcd_token_refused(refusal)) {
      /* the token expired (etcd's --auth-token-ttl) or the member restarted: etcd applied
       * nothing, so the request goes again with a new token, to the same member */
      json_object_put(o);
      free(buf.p);
      renew = 1;
      tries--;
      continue;
    }
    if (status == 200 && o && json_object_is_type(o, json_type_object)) {
      free(buf.p);
      free(used);
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
      free(used);
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
      if (buf.p && strstr(buf.p, "CommonName of client"))
        dm_error_set(err, DM_ERR_ETCD_AUTH, raw,
                     "%s at %s: etcd 3.4's gateway refuses a client certificate with a "
                     "CommonName (HTTP %ld): make --etcd-cert without one (the user is "
                     "--etcd-user's)",
                     what, ep, status);
      else
        dm_error_set(err, DM_ERR_ETCD_REPLY, raw,
                     "%s at %s: the answer is not etcd v3's JSON gateway (HTTP %ld)", what, ep,
                     status);
    }
    json_object_put(o);
    free(buf.p);
    free(used);
    return -1;
  }
  free(used);
  if (tls_refused) {
    dm_error_set(err, DM_ERR_ETCD_AUTH, last,
                 "%s: TLS refused the connection to etcd (%s): the members' certificate is not "
                 "signed by --etcd-cacert or does not name the host, or etcd wants a client "
                 "certificate it signed (--etcd-cert, --etcd-key)",
                 what, last);
    return -1;
  }
  dm_error_set(err, DM_ERR_ETCD_UNAVAILABLE, last,
               "%s: no etcd endpoint took the request (%zu tried, from %s)", what, c->n,
               c->endpoints[c->cur]);
  return -1;
}
