/* The HTTP server's own header, shared by its files: http_server.c (the daemon: start and stop,
 * routing, requests), http_answer.c (answers and refusals), http_admission.c (who may connect:
 * the peer's uid, the client certificate, the connections waiting for their headers and the
 * reaper, the rate-limited log) and http_site.c (the browser's headers: Host, Origin,
 * Sec-Fetch-Site, Content-Type). The public API is control_http.h. */
#ifndef DMHOST_HTTP_SERVER_INTERNAL_H
#define DMHOST_HTTP_SERVER_INTERNAL_H

#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/socket.h>

#include "control_http.h"
#include "dmhost/sdk.h"
#include "log.h"
#include "metrics.h"

/* A log line said at most once per HTTP_LOG_EVERY_MS, the ones left out counted into the next: a
 * flood of refused or closed connections must not flood the log. */
#define HTTP_LOG_EVERY_MS 10000
typedef struct http_ratelog {
  long long last_ms; /* when said last; 0 never */
  unsigned left_out; /* since */
} http_ratelog;

typedef struct http_conn http_conn;

#define HTTP_HOSTS_MAX 32

struct dmh_control_http {
  struct MHD_Daemon *mhd;
  dmh_control_opts opts;
  bool tls;
  int port;
  char where[300]; /* "127.0.0.1:8261", for messages */
  /* The names a request's Host (and Origin) may give the daemon, with h->port (http_check_site):
   * lowercase, an IPv6 address in brackets. */
  char hosts[HTTP_HOSTS_MAX][256];
  int n_hosts;
  gnutls_datum_t ca, cert, key;
  /* What serving costs, the process's own series (owner 0): CPU seconds of the server's threads
   * (the pool's and the commands' own), requests answered. bench/sync reads the first to show
   * what a scrape costs a sync. */
  dmh_metric_family *cpu_seconds, *requests;
  /* The commands running off the pool (http_job), and whether closing has begun (a command is
   * then run on the pool thread itself: nothing is left suspended when the daemon stops). */
  pthread_mutex_t jobs_lock;
  pthread_cond_t jobs_done;
  int jobs;
  bool closing;
  /* Connections open (admitted by http_accept, not yet closed): at most
   * DMH_CONTROL_HTTP_MAX_CONNECTIONS over the whole pool. */
  atomic_int open;
  /* The listening socket's address (bound here, before libmicrohttpd starts): the server's end of
   * every connection's pair, which http_accept needs to find the client's socket. */
  struct sockaddr_storage me;
  /* --tls-allowed-cn split: the subjects admitted (n_allowed 0: any certificate of --tls-ca) */
  char *allowed_text, *allowed_buf, **allowed;
  size_t n_allowed;
  /* The connections not yet admitted, oldest first (http_conn.prev/next), and the reaper that
   * closes them at their deadline. One lock, conns_lock, over the list and every record's `listed`
   * and `fd` while listed: a record leaves the list (the reaper's or an eviction's shutdown, its
   * admission, or http_notify's CLOSED, which libmicrohttpd calls before it closes the socket)
   * only under it, so a socket shut down through the list is always still the connection's. */
  pthread_mutex_t conns_lock;
  pthread_cond_t reaper_wake; /* CLOCK_MONOTONIC */
  http_conn *waiting_head, *waiting_tail;
  int waiting;
  bool reaper_stop, reaper_on;
  pthread_t reaper;
  /* the rate-limited lines, under log_lock */
  pthread_mutex_t log_lock;
  http_ratelog log_peer, log_full, log_room, log_evict, log_slow, log_no_cert, log_bad_cert,
      log_mhd, log_host, log_cross, log_type;
  char mhd_last[256]; /* libmicrohttpd's last line (its handshake failures repeat) */
};

/* A connection's own record (its socket context, from http_notify): admitted once, since the peer
 * of a TCP connection and its TLS session do not change, a keep-alive client's next requests are
 * not checked again. Until then it waits in h's list (conns_lock), which gives it
 * DMH_CONTROL_HTTP_HEADER_DEADLINE_MS from its accept and a place among the
 * DMH_CONTROL_HTTP_MAX_UNADMITTED. */
struct http_conn {
  dmh_control_http *h;
  http_conn *prev, *next; /* in h's list while `listed` */
  int fd;                 /* the connection's socket (libmicrohttpd's) */
  long long since_ms;     /* accepted (monotonic) */
  bool listed;            /* waiting: not admitted, not closed, not shut down */
  bool admitted;          /* its pool thread's only */
};

/* ---- http_admission.c ---- */

long long http_now_ms(void);
__attribute__((format(printf, 4, 5))) void
http_log_limited(dmh_control_http *h, http_ratelog *r, dm_log_level level, const char *fmt, ...);
int http_admit_local(dmh_control_http *h, struct MHD_Connection *conn, dm_error *err);
int http_admit_cert(dmh_control_http *h, struct MHD_Connection *conn, dm_error *err);
enum MHD_Result http_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen);
void http_unlist(dmh_control_http *h, http_conn *c);
void *http_reaper(void *ud);
void http_admitted(dmh_control_http *h, http_conn *c);
void http_started(dmh_control_http *h, struct MHD_Connection *conn, void **socket_context);
int http_allowed_split(dmh_control_http *h, const char *text, dm_error *err);
void http_stop_reaper(dmh_control_http *h);

/* ---- http_answer.c ---- */

struct dmh_api_route;
enum MHD_Result http_send(struct MHD_Connection *conn, unsigned status, char *body,
                          const char *allow);
/* The answer of a route's command (the socket's JSON, freed): as it is (no route, DMH_OWN), or
 * DM's (http_dm.h), which may echo the request's body `request` (NUL-ended, or NULL). */
enum MHD_Result http_reply(struct MHD_Connection *conn, const struct dmh_api_route *route,
                           char *answer, const char *request);
/* The refusal's body for `url`: the socket's error shape, on DM's paths DM's ErrorWithMessage. */
char *http_refusal_body(dmh_control_http *h, const char *url, const dm_error *err);
enum MHD_Result http_refuse_allow(dmh_control_http *h, struct MHD_Connection *conn, const char *url,
                                  unsigned status, const dm_error *err, const char *allow);
enum MHD_Result http_refuse(dmh_control_http *h, struct MHD_Connection *conn, const char *url,
                            unsigned status, const dm_error *err);
/* A path under /api/: its route in *route (0), or -1 with the refusal (404, 405 with Allow, 400)
 * or the OpenAPI document (or its page) queued in *rc. */
int http_api_route(dmh_control_http *h, struct MHD_Connection *conn, const char *url,
                   const char *method, const struct dmh_api_route **route, enum MHD_Result *rc);

/* ---- http_site.c ---- */

void http_add_host(dmh_control_http *h, const char *name);
void http_add_cert_hosts(dmh_control_http *h);
unsigned http_check_site(const dmh_control_http *h, struct MHD_Connection *conn, const char *url,
                         const char *method, dm_error *err);

#endif
