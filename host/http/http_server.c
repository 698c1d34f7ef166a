/* The control plane over HTTP: the server (control_http.h), the daemon: start and stop, routing,
 * requests and answers. Who may connect is http_admission.c, the browser's headers http_site.c;
 * the client is http_client.c. */
#include "control_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <json-c/json.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "dmhost/clock.h"
#include "dmhost/sdk.h"
#include "http_api.h"
#include "http_server_internal.h"
#include "log.h"
#include "metrics.h"
#include "status_page.h"

/* One request: its body as it arrives; a command run off the pool leaves its answer here. */
typedef struct http_req {
  char *body;
  size_t len, cap;
  const dmh_api_route *route; /* a route of the HTTP API (http_api.h), or NULL for /control */
  char *url;                  /* its path */
  bool suspended;             /* its command runs off the pool: answer once resumed */
  char *answer;               /* that command's answer (the job writes it before resuming) */
} http_req;

/* The server's event threads: the pool of libmicrohttpd's epoll loops, one a core (3 to 16). Each
 * connection belongs to one; its requests are read, routed and answered (the fast commands run
 * there, http_is_fast) in turn with the thread's other connections, first come first served.
 * Measured with 200 clients in a closed loop on 2 cores (tests/control/test_api_load.c): 24,000
 * requests/s, p99 18 ms, where a thread per connection made 16,000/s, p99 56 ms. */
#define HTTP_POOL_MAX 16
/* libmicrohttpd's epoll loop (0.9.75, and its master of 2026 alike) reads its queue in rounds of
 * MAX_EVENTS (128) and, when a round comes back full, waits again with the whole timeout before it
 * handles any of them: 128 connections ready at once on one pool thread sat unread until another
 * event came or the 30 s idle timeout (test_control_api_load's intermittent "128 requests never
 * read", 200 keep-alive clients). A thread's queue holds its connections, the listen socket and
 * its wake-up pipe, so at most HTTP_THREAD_CONNECTIONS connections a thread keep every round
 * short of 128: the pool holds at least enough threads for the admission's limit and a margin
 * (connections libmicrohttpd still counts while it closes them). poll() has no such round, but
 * it scans every connection on each wake-up: measured 11,900 requests/s, p99 56 ms in the closed
 * loop against epoll's 40,000/s, p99 12 ms. */
#define HTTP_EPOLL_ROUND 128
#define HTTP_THREAD_CONNECTIONS (HTTP_EPOLL_ROUND - 3)
#define HTTP_POOL_MIN                                                                              \
  ((DMH_CONTROL_HTTP_MAX_CONNECTIONS + 64 + HTTP_THREAD_CONNECTIONS - 1) / HTTP_THREAD_CONNECTIONS)

/* ---- address ---- */

/* "HOST:PORT" or "[V6]:PORT" into host and port. 0, or -1 with *err. */
static int http_split_addr(const char *addr, char *host, size_t host_size, char *port,
                           size_t port_size, dm_error *err) {
  const char *h = addr, *p = NULL;
  size_t hlen = 0;
  if (addr[0] == '[') {
    const char *close = strchr(addr, ']');
    if (close && close[1] == ':') {
      h = addr + 1;
      hlen = (size_t)(close - h);
      p = close + 2;
    }
  } else {
    const char *colon = strchr(addr, ':');
    if (colon && !strchr(colon + 1, ':')) {
      hlen = (size_t)(colon - addr);
      p = colon + 1;
    }
  }
  if (!p || hlen == 0 || hlen >= host_size || !*p || strlen(p) >= port_size ||
      strspn(p, "0123456789") != strlen(p)) {
    dm_error_set(err, DM_ERR_CONTROL_LISTEN, NULL,
                 "--listen \"%s\" is not HOST:PORT (an IPv6 address goes in brackets: [::1]:8261)",
                 addr);
    return -1;
  }
  memcpy(host, h, hlen);
  host[hlen] = '\0';
  strcpy(port, p);
  return 0;
}

static bool http_is_loopback(const struct sockaddr *sa) {
  if (sa->sa_family == AF_INET)
    return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
  if (sa->sa_family == AF_INET6) {
    const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(a))
      return true;
    return IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127;
  }
  return false;
}

/* ---- server ---- */

/* The query's values of one name (MHD_lookup_connection_value gives only the first). */
typedef struct http_query_walk {
  const char *name;
  const char **values;
  size_t n, max;
} http_query_walk;

static enum MHD_Result http_query_one(void *ud, enum MHD_ValueKind kind, const char *key,
                                      const char *value) {
  (void)kind;
  http_query_walk *w = ud;
  if (strcmp(key, w->name) == 0 && w->n < w->max)
    w->values[w->n++] = value ? value : "";
  return w->n < w->max ? MHD_YES : MHD_NO;
}

static size_t http_query(void *ud, const char *name, const char **values, size_t max) {
  http_query_walk w = {name, values, 0, max};
  MHD_get_connection_values(ud, MHD_GET_ARGUMENT_KIND, http_query_one, &w);
  return w.n;
}

/* GET /metrics: the process's registry in Prometheus' text format (metrics.h), after the same
 * admission as the control plane. */
static enum MHD_Result http_metrics(dmh_control_http *h, struct MHD_Connection *conn,
                                    const char *method) {
  dm_error err;
  if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
    dm_error_set(&err, DM_ERR_CONTROL_REQUEST, NULL, "%s " DMH_METRICS_HTTP_PATH ": only GET",
                 method);
    return http_refuse(h, conn, NULL, MHD_HTTP_METHOD_NOT_ALLOWED, &err);
  }
  size_t len = 0;
  char *text = dmh_metrics_render(dmh_metrics_process(), &len);
  if (!text)
    return MHD_NO;
  struct MHD_Response *resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
  if (!resp) {
    free(text);
    return MHD_NO;
  }
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, DMH_METRICS_CONTENT_TYPE);
  enum MHD_Result rc = MHD_queue_response(conn, MHD_HTTP_OK, resp);
  MHD_destroy_response(resp);
  return rc;
}

/* CPU seconds the calling thread has used since it started. */
static double http_thread_cpu(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
    return 0;
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A pool thread's CPU seconds counted into h->cpu_seconds so far. A pool thread runs nothing but
 * the server (accepting, TLS, reading, routing, fast commands, sending), so its whole clock is
 * the server's; each request completed adds what the thread used since the last one. */
static _Thread_local double http_pool_cpu_seen;
static _Thread_local bool http_on_pool; /* this thread is one of the pool's */

static void http_count_pool_cpu(dmh_control_http *h) {
  if (!http_on_pool)
    return;
  double now = http_thread_cpu();
  dmh_metric_add(h->cpu_seconds, 0, NULL, now - http_pool_cpu_seen);
  http_pool_cpu_seen = now;
}

static void http_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                        enum MHD_ConnectionNotificationCode code) {
  dmh_control_http *h = cls;
  http_on_pool = true; /* called on the thread that serves the connection */
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    http_started(h, conn, socket_context);
  } else {
    /* before libmicrohttpd closes the socket: from now on nothing shuts it down */
    http_conn *c = *socket_context;
    if (c) {
      pthread_mutex_lock(&h->conns_lock);
      http_unlist(h, c);
      pthread_mutex_unlock(&h->conns_lock);
    }
    atomic_fetch_sub(&h->open, 1);
    free(c);
    *socket_context = NULL;
  }
}

/* Checks made once the headers are in: who, where, how and how much. Returns -1 having queued
 * the refusal (or, for /metrics, the answer) in *rc, or 0. */
static int http_check_headers(dmh_control_http *h, struct MHD_Connection *conn, const char *url,
                              const char *method, const dmh_api_route **route,
                              enum MHD_Result *rc) {
  dm_error err;
  const union MHD_ConnectionInfo *sc =
      MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  http_conn *hc = sc ? sc->socket_context : NULL;
  if (!hc) { /* its record could not be made: it is being closed (http_started) */
    *rc = MHD_NO;
    return -1;
  }
  if (!hc->admitted &&
      (h->tls ? http_admit_cert(h, conn, &err) < 0 : http_admit_local(h, conn, &err) < 0)) {
    *rc = http_refuse(h, conn, url, MHD_HTTP_FORBIDDEN, &err);
    return -1;
  }
  if (!hc->admitted)
    http_admitted(h, hc);
  unsigned status = http_check_site(h, conn, url, method, &err);
  if (status != 0) {
    /* named in the log: the operator learns which page tried (rate-limited: a hostile page may
     * send many) */
    http_ratelog *rl = err.code == DM_ERR_CONTROL_HOST         ? &h->log_host
                       : err.code == DM_ERR_CONTROL_CROSS_SITE ? &h->log_cross
                                                               : &h->log_type;
    http_log_limited(h, rl, DM_LOG_WARN, "refused (%d): %s", (int)err.code, err.message);
    *rc = http_send(conn, status, http_refusal_body(h, url, &err), NULL);
    return -1;
  }
  if (strcmp(url, DMH_METRICS_HTTP_PATH) == 0) {
    *rc = http_metrics(h, conn, method);
    return -1;
  }
  if (h->opts.metrics_only) {
    dm_error_set(&err, DM_ERR_CONTROL_REQUEST, NULL,
                 "%s: dmhost run serves GET " DMH_METRICS_HTTP_PATH
                 " only (no status page, API or commands: run the task under dmhost serve "
                 "--listen for those, docs/status-page.md); stop it with SIGINT or SIGTERM",
                 url);
    *rc = http_refuse(h, conn, url, MHD_HTTP_NOT_FOUND, &err);
    return -1;
  }
  if (dmh_status_page_find(url)) { /* the status page's files (status_page.h) */
    *rc = (enum MHD_Result)dmh_status_page_serve(conn, url, method);
    return -1;
  }
  *route = NULL;
  if (strncmp(url, DMH_API_PREFIX, strlen(DMH_API_PREFIX)) == 0) {
    if (http_api_route(h, conn, url, method, route, rc) < 0)
      return -1;
  } else if (strcmp(url, DMH_CONTROL_HTTP_PATH) != 0) {
    dm_error_set(&err, DM_ERR_CONTROL_REQUEST, NULL,
                 "no such path %s; POST the request object to " DMH_CONTROL_HTTP_PATH
                 " (or GET " DMH_METRICS_HTTP_PATH
                 ", GET / for the status page, or the API: GET " DMH_API_OPENAPI_PATH ")",
                 url);
    *rc = http_refuse(h, conn, url, MHD_HTTP_NOT_FOUND, &err);
    return -1;
  } else if (strcmp(method, MHD_HTTP_METHOD_POST) != 0) {
    dm_error_set(&err, DM_ERR_CONTROL_REQUEST, NULL,
                 "%s " DMH_CONTROL_HTTP_PATH ": only POST, with the request object as the body",
                 method);
    *rc = http_refuse_allow(h, conn, url, MHD_HTTP_METHOD_NOT_ALLOWED, &err, MHD_HTTP_METHOD_POST);
    return -1;
  }
  const char *clen = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
  if (clen && strtoull(clen, NULL, 10) > DMH_CONTROL_LINE_MAX) {
    dm_error_set(&err, DM_ERR_CONTROL_REQUEST, NULL,
                 "request body of %s bytes is longer than %d bytes", clen, DMH_CONTROL_LINE_MAX);
    *rc = http_refuse(h, conn, url, MHD_HTTP_CONTENT_TOO_LARGE, &err);
    return -1;
  }
  return 0;
}

/* ---- commands off the pool ---- */

/* The command of the control request `line` ({"cmd": ...}) is one the daemon answers at once
 * (opts.fast_cmds: serve's query-status): it runs on the pool thread. */
static bool http_is_fast(dmh_control_http *h, const dmh_api_route *route, const char *line) {
  if (!h->opts.fast_cmds)
    return false;
  json_object *req = route ? NULL : json_tokener_parse(line), *cmd = NULL;
  const char *name =
      route ? route->cmd
      : json_object_object_get_ex(req, "cmd", &cmd) && json_object_is_type(cmd, json_type_string)
          ? json_object_get_string(cmd)
          : NULL;
  bool fast = false;
  for (const char *const *f = h->opts.fast_cmds; name && *f && !fast; f++)
    fast = strcmp(*f, name) == 0;
  json_object_put(req);
  return fast;
}

/* A command run on a thread of its own while its connection is suspended, so that a command that
 * waits (start-task's precheck, pause-task waiting for its unit, swap-unit) holds up none of the
 * other connections of its pool thread. */
typedef struct http_job {
  dmh_control_http *h;
  struct MHD_Connection *conn;
  http_req *req;
  char *line;
  size_t len;
} http_job;

static void *http_job_run(void *ud) {
  http_job *j = ud;
  dmh_control_http *h = j->h;
  double cpu = http_thread_cpu();
  j->req->answer = h->opts.handler(h->opts.ud, j->line, j->len);
  free(j->line);
  dmh_metric_add(h->cpu_seconds, 0, NULL, http_thread_cpu() - cpu);
  /* Under the lock: the connection was suspended by http_run_off_pool holding it. Resumed, the
   * connection is its pool thread's again, which sends the answer (http_access). */
  pthread_mutex_lock(&h->jobs_lock);
  MHD_resume_connection(j->conn);
  if (--h->jobs == 0)
    pthread_cond_broadcast(&h->jobs_done);
  pthread_mutex_unlock(&h->jobs_lock);
  free(j);
  return NULL;
}

/* Run the command of `line` off the pool: true when its job is started (the connection is
 * suspended until it answers); false to run it here (the server is closing, or no thread). */
static bool http_run_off_pool(dmh_control_http *h, struct MHD_Connection *conn, http_req *req,
                              const char *line, size_t len) {
  http_job *j = malloc(sizeof *j);
  char *copy = j ? strndup(line, len) : NULL;
  if (!copy) {
    free(j);
    return false;
  }
  *j = (http_job){.h = h, .conn = conn, .req = req, .line = copy, .len = len};
  pthread_mutex_lock(&h->jobs_lock);
  bool started = false;
  if (!h->closing) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t t;
    started = pthread_create(&t, &attr, http_job_run, j) == 0;
    pthread_attr_destroy(&attr);
    if (started) {
      req->suspended = true;
      MHD_suspend_connection(conn);
      h->jobs++;
    }
  }
  pthread_mutex_unlock(&h->jobs_lock);
  if (!started) {
    free(copy);
    free(j);
  }
  return started;
}

static char *http_take_answer(http_req *req) {
  char *a = req->answer;
  req->answer = NULL;
  req->suspended = false;
  return a;
}

static enum MHD_Result http_access(void *cls, struct MHD_Connection *conn, const char *url,
                                   const char *method, const char *version, const char *upload_data,
                                   size_t *upload_data_size, void **con_cls) {
  (void)version;
  dmh_control_http *h = cls;
  http_req *req = *con_cls;
  if (!req) {
    /* First call: the headers only. */
    enum MHD_Result rc;
    const dmh_api_route *route;
    if (http_check_headers(h, conn, url, method, &route, &rc) < 0)
      return rc;
    if (!(req = calloc(1, sizeof *req)))
      return MHD_NO;
    req->route = route;
    if (route && !(req->url = strdup(url))) {
      free(req);
      return MHD_NO;
    }
    *con_cls = req;
    return MHD_YES;
  }
  if (*upload_data_size > 0) {
    size_t n = *upload_data_size;
    *upload_data_size = 0;
    if (req->len + n > DMH_CONTROL_LINE_MAX) {
      /* A chunked body without Content-Length grew past the limit: an answer cannot be queued
       * in the middle of a body, so the connection is closed. */
      dmh_log(DM_LOG_WARN, "control",
              "closed a connection on %s: its request body grew past %d bytes", h->where,
              DMH_CONTROL_LINE_MAX);
      return MHD_NO;
    }
    if (req->len + n + 1 > req->cap) {
      size_t cap = req->cap ? req->cap : 4096;
      while (cap < req->len + n + 1)
        cap *= 2;
      char *nb = realloc(req->body, cap);
      if (!nb)
        return MHD_NO;
      req->body = nb;
      req->cap = cap;
    }
    memcpy(req->body + req->len, upload_data, n);
    req->len += n;
    return MHD_YES;
  }
  if (req->suspended) /* resumed: its command has answered (http_job) */
    return http_reply(conn, req->route, http_take_answer(req), req->body);
  /* The whole body is in. Whitespace after the object is framing (a file posted with its last
   * newline), as the socket's newline is. */
  size_t len = req->len;
  while (len > 0 && strchr(" \t\r\n", req->body[len - 1]))
    len--;
  if (req->body)
    req->body[len] = '\0';
  const char *line = req->body ? req->body : "";
  char *api_line = NULL;
  if (req->route) {
    dm_error err;
    if (!(api_line = dmh_api_request(req->route, req->url, http_query, conn, line, len, &err)))
      return http_refuse(h, conn, req->url, MHD_HTTP_BAD_REQUEST, &err);
    line = api_line;
    len = strlen(api_line);
  }
  if (!http_is_fast(h, req->route, line) && http_run_off_pool(h, conn, req, line, len)) {
    free(api_line);
    return MHD_YES; /* answered once its job resumes the connection */
  }
  char *answer = h->opts.handler(h->opts.ud, line, len);
  free(api_line);
  return http_reply(conn, req->route, answer, req->body);
}

/* A request is done (answered, or dropped). Runs on its connection's pool thread: the thread's
 * CPU since the last request it completed is counted (http_count_pool_cpu). */
static void http_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                           enum MHD_RequestTerminationCode toe) {
  dmh_control_http *h = cls;
  (void)toe;
  (void)conn;
  http_count_pool_cpu(h);
  dmh_metric_add(h->requests, 0, NULL, 1);
  http_req *req = *con_cls;
  if (req) {
    free(req->body);
    free(req->url);
    free(req->answer);
    free(req);
    *con_cls = NULL;
  }
}

/* libmicrohttpd's lines; one repeated (each failed TLS handshake says the same) is said once per
 * HTTP_LOG_EVERY_MS. */
static void http_mhd_log(void *cls, const char *fmt, va_list ap) {
  dmh_control_http *h = cls;
  char buf[256];
  vsnprintf(buf, sizeof buf, fmt, ap);
  size_t n = strlen(buf);
  while (n > 0 && buf[n - 1] == '\n')
    buf[--n] = '\0';
  pthread_mutex_lock(&h->log_lock);
  bool again = strcmp(buf, h->mhd_last) == 0;
  if (!again) {
    memcpy(h->mhd_last, buf, n + 1);
    h->log_mhd.last_ms = 0; /* a new line is said at once */
  }
  pthread_mutex_unlock(&h->log_lock);
  http_log_limited(h, &h->log_mhd, DM_LOG_WARN, "libmicrohttpd: %s", buf);
}

static int http_load_tls(dmh_control_http *h, const dmh_control_tls *tls, dm_error *err) {
  const char *names[3] = {tls->ca, tls->cert, tls->key};
  const char *flags[3] = {"--tls-ca", "--tls-cert", "--tls-key"};
  gnutls_datum_t *into[3] = {&h->ca, &h->cert, &h->key};
  for (int i = 0; i < 3; i++) {
    int rc = gnutls_load_file(names[i], into[i]);
    if (rc < 0) {
      dm_error_set(err, DM_ERR_CONTROL_TLS, gnutls_strerror(rc), "cannot read %s %s", flags[i],
                   names[i]);
      return -1;
    }
  }
  /* Checked here so that a wrong file is named; libmicrohttpd would only say it cannot start. */
  gnutls_certificate_credentials_t cred;
  if (gnutls_certificate_allocate_credentials(&cred) < 0) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory loading the TLS files");
    return -1;
  }
  int rc = gnutls_certificate_set_x509_key_mem(cred, &h->cert, &h->key, GNUTLS_X509_FMT_PEM);
  const char *what = "--tls-cert and --tls-key (not PEM, or the key is not the certificate's)";
  if (rc >= 0) {
    rc = gnutls_certificate_set_x509_trust_mem(cred, &h->ca, GNUTLS_X509_FMT_PEM);
    what = "--tls-ca (no PEM certificate in it)";
    if (rc == 0)
      rc = GNUTLS_E_BASE64_DECODING_ERROR;
  }
  gnutls_certificate_free_credentials(cred);
  if (rc < 0) {
    dm_error_set(err, DM_ERR_CONTROL_TLS, gnutls_strerror(rc), "cannot use %s", what);
    return -1;
  }
  return 0;
}

static void http_free(dmh_control_http *h) {
  free(h->allowed_buf);
  free(h->allowed);
  free(h->allowed_text);
  pthread_mutex_destroy(&h->conns_lock);
  pthread_cond_destroy(&h->reaper_wake);
  pthread_mutex_destroy(&h->log_lock);
  pthread_mutex_destroy(&h->jobs_lock);
  pthread_cond_destroy(&h->jobs_done);
  gnutls_free(h->ca.data);
  gnutls_free(h->cert.data);
  if (h->key.data) {
    explicit_bzero(h->key.data, h->key.size);
    gnutls_free(h->key.data);
  }
  free(h);
}

/* `addr` resolved into *ai (freeaddrinfo), refused when it is not loopback and `tls` is false. */
static int http_resolve(const char *addr, bool tls, struct addrinfo **ai, dm_error *err) {
  char host[256], port[16];
  if (http_split_addr(addr, host, sizeof host, port, sizeof port, err) < 0)
    return -1;
  struct addrinfo hints = {
      .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
  *ai = NULL;
  int gai = getaddrinfo(host, port, &hints, ai);
  if (gai != 0 || !*ai) {
    dm_error_set(err, DM_ERR_CONTROL_LISTEN, gai_strerror(gai),
                 "--listen %s: cannot resolve the host %s", addr, host);
    return -1;
  }
  if (!tls && !http_is_loopback((*ai)->ai_addr)) {
    dm_error_set(err, DM_ERR_CONTROL_INSECURE_LISTEN, NULL,
                 "--listen %s is not a loopback address and no --tls-* flags are given: anyone "
                 "who reaches the port could run any command (start tasks, swap units); refusing "
                 "to start",
                 addr);
    freeaddrinfo(*ai);
    *ai = NULL;
    return -1;
  }
  return 0;
}

/* The listening socket of `ai` (SOCK_NONBLOCK, close-on-exec, SO_REUSEADDR as libmicrohttpd sets
 * it, IPv6 only for an IPv6 address), its bound address in *me: the fd, or -1 with
 * DM_ERR_CONTROL_LISTEN. */
static int http_listen_socket(const struct addrinfo *ai, const char *addr,
                              struct sockaddr_storage *me, dm_error *err) {
  int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  socklen_t len = sizeof *me;
  if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
      (ai->ai_family == AF_INET6 &&
       setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) < 0) ||
      bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, SOMAXCONN) < 0 ||
      getsockname(fd, (struct sockaddr *)me, &len) < 0) {
    dm_error_set(err, DM_ERR_CONTROL_LISTEN, strerror(errno),
                 "cannot listen on --listen %s (the port may be taken)", addr);
    if (fd >= 0)
      close(fd);
    return -1;
  }
  return fd;
}

int dmh_control_http_check(const char *addr, bool tls, dm_error *err) {
  struct addrinfo *ai = NULL;
  int rc = http_resolve(addr, tls, &ai, err);
  if (ai)
    freeaddrinfo(ai);
  return rc;
}

int dmh_control_http_open(const char *addr, const dmh_control_tls *tls,
                          const dmh_control_opts *opts, dmh_control_http **out, dm_error *err) {
  *out = NULL;
  struct addrinfo *ai = NULL;
  if (http_resolve(addr, tls != NULL, &ai, err) < 0)
    return -1;
  dmh_control_http *h = calloc(1, sizeof *h);
  if (!h) {
    freeaddrinfo(ai);
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory opening --listen %s", addr);
    return -1;
  }
  h->opts = *opts;
  h->tls = tls != NULL;
  pthread_mutex_init(&h->jobs_lock, NULL);
  pthread_cond_init(&h->jobs_done, NULL);
  pthread_mutex_init(&h->conns_lock, NULL);
  pthread_mutex_init(&h->log_lock, NULL);
  dm_cond_init_monotonic(&h->reaper_wake);
  if (tls && http_allowed_split(h, tls->allowed_cn, err) < 0) {
    freeaddrinfo(ai);
    http_free(h);
    return -1;
  }
  if (dmh_metrics_family(dmh_metrics_process(), "dmhost_http_cpu_seconds_total", DM_METRIC_COUNTER,
                         "CPU seconds the HTTP server used: its event threads and the threads its "
                         "commands run on (every route, /metrics included)",
                         NULL, 0, NULL, 0, &h->cpu_seconds, err) < 0 ||
      dmh_metrics_family(dmh_metrics_process(), "dmhost_http_requests_total", DM_METRIC_COUNTER,
                         "HTTP requests the server completed (answered or dropped)", NULL, 0, NULL,
                         0, &h->requests, err) < 0) {
    freeaddrinfo(ai);
    http_free(h);
    return -1;
  }
  if (tls && http_load_tls(h, tls, err) < 0) {
    freeaddrinfo(ai);
    http_free(h);
    return -1;
  }
  int idle_ms = opts->idle_timeout_ms > 0 ? opts->idle_timeout_ms : DMH_CONTROL_IDLE_TIMEOUT_MS;
  unsigned idle_s = (unsigned)((idle_ms + 999) / 1000);
  unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG |
                   (ai->ai_family == AF_INET6 ? MHD_USE_IPv6 : 0) | (tls ? MHD_USE_TLS : 0);
  /* The key and certificate are C strings to libmicrohttpd: gnutls_load_file ends them with a
   * NUL. */
  struct MHD_OptionItem tls_opts[] = {
      {MHD_OPTION_HTTPS_MEM_KEY, 0, h->key.data},
      {MHD_OPTION_HTTPS_MEM_CERT, 0, h->cert.data},
      {MHD_OPTION_HTTPS_MEM_TRUST, 0, h->ca.data},
      {MHD_OPTION_END, 0, NULL},
  };
  static struct MHD_OptionItem no_opts[] = {{MHD_OPTION_END, 0, NULL}};
  /* libmicrohttpd's own limit, divided among the pool's threads, is HTTP_THREAD_CONNECTIONS a
   * thread; over the pool it is beyond http_accept's, which is the one a client meets */
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  unsigned pool = cores < HTTP_POOL_MIN   ? HTTP_POOL_MIN
                  : cores > HTTP_POOL_MAX ? HTTP_POOL_MAX
                                          : (unsigned)cores;
  /* Bound here, not by libmicrohttpd, so that its address is known before the first connection
   * (http_accept needs it); libmicrohttpd closes it when it stops. */
  int lfd = http_listen_socket(ai, addr, &h->me, err);
  if (lfd < 0) {
    freeaddrinfo(ai);
    http_free(h);
    return -1;
  }
  if (pthread_create(&h->reaper, NULL, http_reaper, h) != 0) {
    close(lfd);
    freeaddrinfo(ai);
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "cannot start a thread for --listen %s", addr);
    http_free(h);
    return -1;
  }
  h->reaper_on = true;
  /* where, for messages, known before the first connection (http_accept logs it) */
  char shown[INET6_ADDRSTRLEN] = "?", port[16] = "0";
  getnameinfo((struct sockaddr *)&h->me, sizeof h->me, shown, sizeof shown, port, sizeof port,
              NI_NUMERICHOST | NI_NUMERICSERV);
  h->port = atoi(port);
  snprintf(h->where, sizeof h->where, strchr(shown, ':') ? "[%s]:%d" : "%s:%d", shown, h->port);
  /* The names a request may give the daemon (http_check_site): the --listen host as written and
   * as resolved, on loopback the loopback names, with TLS the certificate's names. Set before
   * the first connection can arrive. */
  bool loopback = http_is_loopback(ai->ai_addr);
  char lhost[256], lport[16];
  dm_error ignored;
  if (http_split_addr(addr, lhost, sizeof lhost, lport, sizeof lport, &ignored) == 0)
    http_add_host(h, lhost);
  http_add_host(h, shown);
  if (loopback) {
    http_add_host(h, "localhost");
    http_add_host(h, "127.0.0.1");
    http_add_host(h, "::1");
  }
  if (tls)
    http_add_cert_hosts(h);
  h->mhd = MHD_start_daemon(
      flags, 0, http_accept, h, http_access, h, MHD_OPTION_EXTERNAL_LOGGER, http_mhd_log, h,
      MHD_OPTION_LISTEN_SOCKET, lfd, MHD_OPTION_THREAD_POOL_SIZE, pool, MHD_OPTION_CONNECTION_LIMIT,
      (unsigned)HTTP_THREAD_CONNECTIONS * pool, MHD_OPTION_CONNECTION_TIMEOUT, idle_s,
      MHD_OPTION_NOTIFY_COMPLETED, http_completed, h, MHD_OPTION_NOTIFY_CONNECTION, http_notify, h,
      MHD_OPTION_ARRAY, tls ? tls_opts : no_opts, MHD_OPTION_END);
  freeaddrinfo(ai);
  if (!h->mhd) {
    dm_error_set(err, DM_ERR_CONTROL_LISTEN, NULL,
                 "cannot serve --listen %s (libmicrohttpd's reason is in the log above)", addr);
    http_stop_reaper(h);
    http_free(h);
    return -1;
  }
  dmh_log(DM_LOG_INFO, "control", "control plane on http%s://%s" DMH_CONTROL_HTTP_PATH " (%s; %s)",
          tls ? "s" : "", h->where,
          loopback ? "loopback: this machine only" : "reachable from the network",
          !tls ? "no TLS: clients of the daemon's user, root and --socket-group only"
          : h->n_allowed
              ? "mutual TLS: only clients with a certificate of --tls-ca whose CN is one "
                "of --tls-allowed-cn"
              : "mutual TLS: only clients with a certificate of --tls-ca (any subject: "
                "--tls-allowed-cn narrows it)");
  *out = h;
  return 0;
}

int dmh_control_http_port(const dmh_control_http *h) {
  return h->port;
}

int dmh_control_listen_flags(const char *listen, const dmh_control_tls *tls, bool *tls_on,
                             dm_error *err) {
  int given = dmh_cli_tls_given(tls, err);
  *tls_on = given > 0;
  if (given < 0)
    return 2;
  if (given && !listen) {
    dm_error_set(err, DM_ERR_CONTROL_REQUEST, NULL,
                 "--tls-ca, --tls-cert and --tls-key secure --listen; give --listen HOST:PORT");
    return 2;
  }
  if (tls->allowed_cn && !given) {
    dm_error_set(err, DM_ERR_CONTROL_REQUEST, NULL,
                 "--tls-allowed-cn names the client certificates mutual TLS admits; give it with "
                 "--tls-ca, --tls-cert and --tls-key");
    return 2;
  }
  if (tls->allowed_cn) {
    const char *a = tls->allowed_cn;
    size_t n = strlen(a);
    if (n == 0 || a[0] == ',' || a[n - 1] == ',' || strstr(a, ",,")) {
      dm_error_set(err, DM_ERR_CONTROL_REQUEST, NULL,
                   "--tls-allowed-cn \"%s\": give NAME[,NAME...], the CN of each client "
                   "certificate admitted, none empty",
                   a);
      return 2;
    }
  }
  return listen && dmh_control_http_check(listen, *tls_on, err) < 0 ? 1 : 0;
}

void dmh_control_http_close(dmh_control_http *h) {
  if (!h)
    return;
  /* The commands running off the pool answer first (their connections are suspended, and
   * libmicrohttpd stops only without suspended connections); from now on a command runs on its
   * pool thread. */
  pthread_mutex_lock(&h->jobs_lock);
  h->closing = true;
  while (h->jobs > 0)
    pthread_cond_wait(&h->jobs_done, &h->jobs_lock);
  pthread_mutex_unlock(&h->jobs_lock);
  MHD_stop_daemon(h->mhd); /* every connection's CLOSED has run: the waiting list is empty */
  http_stop_reaper(h);
  http_free(h);
}
