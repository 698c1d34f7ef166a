/* The control plane over HTTP: the server (control_http.h); the client is control_http_client.c. */
#include "control_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <grp.h>
#include <json-c/json.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "dmhost/sdk.h"
#include "http_api.h"
#include "log.h"
#include "metrics.h"
#include "status_page.h"

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

static long long http_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Log the line of `fmt` unless `r` said one less than HTTP_LOG_EVERY_MS ago (then it is counted,
 * and the next line says how many were left out). */
__attribute__((format(printf, 4, 5))) static void
http_log_limited(dmh_control_http *h, http_ratelog *r, dm_log_level level, const char *fmt, ...) {
  long long now = http_now_ms();
  pthread_mutex_lock(&h->log_lock);
  bool say = r->last_ms == 0 || now - r->last_ms >= HTTP_LOG_EVERY_MS;
  unsigned left = r->left_out;
  if (say) {
    r->last_ms = now;
    r->left_out = 0;
  } else {
    r->left_out++;
  }
  pthread_mutex_unlock(&h->log_lock);
  if (!say)
    return;
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (left)
    dmh_log(level, "control", "%s (and %u more like it in the last %d s, not logged)", line, left,
            HTTP_LOG_EVERY_MS / 1000);
  else
    dmh_log(level, "control", "%s", line);
}

/* One request: its body as it arrives; a command run off the pool leaves its answer here. */
typedef struct http_req {
  char *body;
  size_t len, cap;
  const dmh_api_route *route; /* a route of the HTTP API (http_api.h), or NULL for /control */
  char *url;                  /* its path */
  bool suspended;             /* its command runs off the pool: answer once resumed */
  char *answer;               /* that command's answer (the job writes it before resuming) */
} http_req;

/* The server's event threads: the pool of libmicrohttpd's epoll loops, one a core (2 to 16). Each
 * connection belongs to one; its requests are read, routed and answered (the fast commands run
 * there, http_is_fast) in turn with the thread's other connections, first come first served.
 * Measured with 200 clients in a closed loop on 2 cores (tests/control/test_api_load.c): 24,000
 * requests/s, p99 18 ms, where a thread per connection made 16,000/s, p99 56 ms. */
#define HTTP_POOL_MIN 2
#define HTTP_POOL_MAX 16

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

/* ---- the peer of a loopback connection without TLS ---- */

/* The uid of the process that made the client's end of the loopback connection from `peer` to
 * `me` (ours): the kernel's socket of the exact pair (its local end our peer, its remote end us),
 * looked up by NETLINK_SOCK_DIAG (inet_diag), and only while ESTABLISHED: a closed connection that
 * used the same client port lingers as TIME_WAIT, owned by uid 0. One lookup of one socket,
 * whatever the number of sockets on the machine: ~13 us, where reading /proc/net/tcp for it grew
 * with them (11 ms with 2,151 entries, 33 ms with 11,155). -1 when not found (refused). */
static long long http_pair_uid(const struct sockaddr_storage *peer_ss,
                               const struct sockaddr_storage *me_ss) {
  if (me_ss->ss_family != peer_ss->ss_family)
    return -1;
  const struct sockaddr_storage peer = *peer_ss, me = *me_ss;
  struct {
    struct nlmsghdr nh;
    struct inet_diag_req_v2 r;
  } req = {.nh = {.nlmsg_len = sizeof req,
                  .nlmsg_type = SOCK_DIAG_BY_FAMILY,
                  .nlmsg_flags = NLM_F_REQUEST},
           .r = {.sdiag_family = (uint8_t)peer.ss_family,
                 .sdiag_protocol = IPPROTO_TCP,
                 .idiag_states = 1u << TCP_ESTABLISHED,
                 .id = {.idiag_cookie = {INET_DIAG_NOCOOKIE, INET_DIAG_NOCOOKIE}}}};
  if (peer.ss_family == AF_INET) {
    const struct sockaddr_in *p = (const struct sockaddr_in *)&peer,
                             *m = (const struct sockaddr_in *)&me;
    req.r.id.idiag_sport = p->sin_port;
    req.r.id.idiag_dport = m->sin_port;
    memcpy(req.r.id.idiag_src, &p->sin_addr, sizeof p->sin_addr);
    memcpy(req.r.id.idiag_dst, &m->sin_addr, sizeof m->sin_addr);
  } else if (peer.ss_family == AF_INET6) {
    const struct sockaddr_in6 *p = (const struct sockaddr_in6 *)&peer,
                              *m = (const struct sockaddr_in6 *)&me;
    req.r.id.idiag_sport = p->sin6_port;
    req.r.id.idiag_dport = m->sin6_port;
    memcpy(req.r.id.idiag_src, &p->sin6_addr, sizeof p->sin6_addr);
    memcpy(req.r.id.idiag_dst, &m->sin6_addr, sizeof m->sin6_addr);
  } else {
    return -1;
  }
  int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (nl < 0)
    return -1;
  struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
  long long uid = -1;
  if (sendto(nl, &req, sizeof req, 0, (struct sockaddr *)&kernel, sizeof kernel) ==
      (ssize_t)sizeof req) {
    union {
      struct nlmsghdr nh;
      char buf[1024];
    } ans;
    ssize_t n;
    while ((n = recv(nl, &ans, sizeof ans, 0)) < 0 && errno == EINTR)
      ;
    /* one answer: the socket, or NLMSG_ERROR (ENOENT: no such connection) */
    if (n >= (ssize_t)sizeof ans.nh && NLMSG_OK(&ans.nh, (size_t)n) &&
        ans.nh.nlmsg_type == SOCK_DIAG_BY_FAMILY &&
        ans.nh.nlmsg_len >= NLMSG_LENGTH(sizeof(struct inet_diag_msg))) {
      const struct inet_diag_msg *m = NLMSG_DATA(&ans.nh);
      if (m->idiag_state == TCP_ESTABLISHED && m->id.idiag_sport == req.r.id.idiag_sport &&
          m->id.idiag_dport == req.r.id.idiag_dport)
        uid = (long long)m->idiag_uid;
    }
  }
  close(nl);
  return uid;
}

/* http_pair_uid of the connection `fd`, its pair read from the socket itself. */
static long long http_peer_uid(int fd) {
  struct sockaddr_storage me, peer;
  socklen_t ml = sizeof me, pl = sizeof peer;
  if (getsockname(fd, (struct sockaddr *)&me, &ml) < 0 ||
      getpeername(fd, (struct sockaddr *)&peer, &pl) < 0)
    return -1;
  return http_pair_uid(&peer, &me);
}

static bool http_uid_in_group(uid_t uid, gid_t group) {
  struct passwd pw, *found = NULL;
  char buf[4096];
  if (getpwuid_r(uid, &pw, buf, sizeof buf, &found) != 0 || !found)
    return false;
  if (pw.pw_gid == group)
    return true;
  gid_t groups[256];
  int n = 256;
  if (getgrouplist(pw.pw_name, pw.pw_gid, groups, &n) < 0)
    return false;
  for (int i = 0; i < n; i++)
    if (groups[i] == group)
      return true;
  return false;
}

/* Without TLS only loopback is served: admit the client as the socket does (its uid is ours,
 * root's or in the group). 0, or -1 with DM_ERR_CONTROL_PEER. */
static int http_admit_uid(dmh_control_http *h, long long uid, dm_error *err) {
  uid_t me = geteuid();
  if (uid >= 0 && ((uid_t)uid == me || uid == 0 ||
                   (h->opts.has_group && http_uid_in_group((uid_t)uid, h->opts.group))))
    return 0;
  char group[160] = "";
  if (h->opts.has_group)
    snprintf(group, sizeof group, " and members of group %s (gid %u)",
             h->opts.group_name ? h->opts.group_name : "?", (unsigned)h->opts.group);
  char who[64];
  if (uid >= 0)
    snprintf(who, sizeof who, "uid %lld", uid);
  else
    snprintf(who, sizeof who, "a process whose connection the kernel does not list");
  dm_error_set(err, DM_ERR_CONTROL_PEER, NULL,
               "control plane %s: a client running as %s may not control this daemon; without "
               "TLS it admits uid %u (its own), root%s on this machine",
               h->where, who, (unsigned)me, group);
  return -1;
}

/* http_admit_uid of the connection's socket, read from its fd: the check at accept
 * (http_accept) made again on the first request, in depth. It costs one lookup a connection
 * (~13 us), and holds by itself should the pair at accept ever not be the socket's (a listener
 * on several addresses, a wildcard). */
static int http_admit_local(dmh_control_http *h, struct MHD_Connection *conn, dm_error *err) {
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
  return http_admit_uid(h, ci ? http_peer_uid(ci->connect_fd) : -1, err);
}

/* The subject (CN) of the client's certificate, verified, in cn: 0; -1 when it has none or more
 * than one (which one would name the client?). */
static int http_peer_cn(gnutls_session_t session, char *cn, size_t size) {
  unsigned n = 0;
  const gnutls_datum_t *certs = gnutls_certificate_get_peers(session, &n);
  gnutls_x509_crt_t crt;
  if (!certs || n == 0 || gnutls_x509_crt_init(&crt) < 0)
    return -1;
  int rc = -1;
  size_t len = size;
  char more[8];
  size_t more_len = sizeof more;
  if (gnutls_x509_crt_import(crt, &certs[0], GNUTLS_X509_FMT_DER) == 0 &&
      gnutls_x509_crt_get_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, 0, cn, &len) == 0 &&
      gnutls_x509_crt_get_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 1, 0, more, &more_len) ==
          GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE &&
      strlen(cn) == len)
    rc = 0;
  gnutls_x509_crt_deinit(crt);
  return rc;
}

/* --tls-allowed-cn: the verified certificate's subject is one named. 0, or -1 with
 * DM_ERR_CONTROL_CLIENT_SUBJECT naming it and the flag. */
static int http_admit_subject(dmh_control_http *h, gnutls_session_t session, dm_error *err) {
  if (h->n_allowed == 0)
    return 0;
  char cn[256];
  bool has_cn = http_peer_cn(session, cn, sizeof cn) == 0;
  for (size_t i = 0; has_cn && i < h->n_allowed; i++)
    if (strcmp(cn, h->allowed[i]) == 0)
      return 0;
  dm_error_set(err, DM_ERR_CONTROL_CLIENT_SUBJECT, NULL,
               "control plane %s: refused the client certificate of subject %s%s: signed by "
               "--tls-ca, but its CN is not one of --tls-allowed-cn %s",
               h->where, has_cn ? "CN=" : "", has_cn ? cn : "(no single CN)", h->allowed_text);
  return -1;
}

/* With TLS: the client's certificate must verify against the CA (the handshake required it
 * already: http_tls_verify; checked again here, in depth) and name an allowed subject. 0, or -1
 * with DM_ERR_CONTROL_CLIENT_CERT or DM_ERR_CONTROL_CLIENT_SUBJECT. */
static int http_admit_cert(dmh_control_http *h, struct MHD_Connection *conn, dm_error *err) {
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
  gnutls_session_t session = ci ? (gnutls_session_t)ci->tls_session : NULL;
  unsigned status = 0;
  int rc = session ? gnutls_certificate_verify_peers2(session, &status) : GNUTLS_E_INTERNAL_ERROR;
  if (rc == GNUTLS_E_SUCCESS && status == 0)
    return http_admit_subject(h, session, err);
  const char *why = "it was not signed by the daemon's --tls-ca";
  gnutls_datum_t text = {NULL, 0};
  if (rc == GNUTLS_E_NO_CERTIFICATE_FOUND)
    why = "the client sent no certificate";
  else if (rc != GNUTLS_E_SUCCESS)
    why = gnutls_strerror(rc);
  else if (gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &text, 0) == 0)
    why = (const char *)text.data;
  dm_error_set(err, DM_ERR_CONTROL_CLIENT_CERT, NULL,
               "control plane %s: refused a client without a valid certificate: %s", h->where, why);
  gnutls_free(text.data);
  return -1;
}

/* ---- the browser: Host, Origin, Sec-Fetch-Site, Content-Type ---- */

/* A browser sends the operator's requests for any page it shows: the peer's uid or certificate is
 * the operator's whichever site wrote the request. These checks keep the API to the daemon's own
 * origin (docs/security.md, "The web browser"). */

/* Add `name` (lowercased; an IPv6 address bracketed) to the names a Host may give. */
static void http_add_host(dmh_control_http *h, const char *name) {
  char n[256];
  bool v6 = strchr(name, ':') != NULL && name[0] != '[';
  if (!*name || strlen(name) + 3 > sizeof n || h->n_hosts >= HTTP_HOSTS_MAX)
    return;
  snprintf(n, sizeof n, v6 ? "[%s]" : "%s", name);
  for (char *c = n; *c; c++)
    if (*c >= 'A' && *c <= 'Z')
      *c = (char)(*c - 'A' + 'a');
  for (int i = 0; i < h->n_hosts; i++)
    if (strcmp(h->hosts[i], n) == 0)
      return;
  snprintf(h->hosts[h->n_hosts++], sizeof h->hosts[0], "%s", n);
}

/* The names the server's certificate is made for: its subjectAltName DNS names and addresses (a
 * client that verifies the certificate reached the daemon by one of them), else its CN. */
static void http_add_cert_hosts(dmh_control_http *h) {
  gnutls_x509_crt_t crt;
  if (gnutls_x509_crt_init(&crt) < 0)
    return;
  if (gnutls_x509_crt_import(crt, &h->cert, GNUTLS_X509_FMT_PEM) < 0) {
    gnutls_x509_crt_deinit(crt);
    return;
  }
  bool san = false;
  for (unsigned i = 0;; i++) {
    unsigned char buf[256];
    size_t size = sizeof buf - 1;
    int type = gnutls_x509_crt_get_subject_alt_name(crt, i, buf, &size, NULL);
    if (type == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE)
      break;
    if (type == GNUTLS_SAN_DNSNAME) {
      buf[size] = '\0';
      http_add_host(h, (const char *)buf);
      san = true;
    } else if (type == GNUTLS_SAN_IPADDRESS && (size == 4 || size == 16)) {
      char ip[INET6_ADDRSTRLEN];
      if (inet_ntop(size == 4 ? AF_INET : AF_INET6, buf, ip, sizeof ip))
        http_add_host(h, ip);
      san = true;
    }
  }
  char cn[256];
  size_t size = sizeof cn;
  if (!san && gnutls_x509_crt_get_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, 0, cn, &size) == 0)
    http_add_host(h, cn);
  gnutls_x509_crt_deinit(crt);
}

/* `hp` (a Host header, or an Origin's authority) names the daemon: one of h->hosts with h->port,
 * or without a port when the port is the scheme's default. */
static bool http_host_ok(const dmh_control_http *h, const char *hp) {
  const char *end;
  if (hp[0] == '[')
    end = strchr(hp, ']') ? strchr(hp, ']') + 1 : hp + strlen(hp);
  else
    end = hp + strcspn(hp, ":");
  size_t hlen = (size_t)(end - hp);
  int port = h->tls ? 443 : 80;
  if (*end == ':') {
    const char *p = end + 1;
    if (!*p || strspn(p, "0123456789") != strlen(p) || strlen(p) > 5)
      return false;
    port = atoi(p);
  } else if (*end) {
    return false;
  }
  if (port != h->port || hlen == 0)
    return false;
  for (int i = 0; i < h->n_hosts; i++)
    if (strlen(h->hosts[i]) == hlen && strncasecmp(h->hosts[i], hp, hlen) == 0)
      return true;
  return false;
}

/* A header's value as shown in a message: at most 80 bytes, other than printable ASCII as '?'. */
static const char *http_shown(const char *v, char *buf, size_t size) {
  size_t n = 0;
  for (; v[n] && n + 1 < size && n < 80; n++)
    buf[n] = v[n] >= 0x20 && v[n] < 0x7f ? v[n] : '?';
  if (v[n] && n >= 3)
    memcpy(buf + n - 3, "...", 3);
  buf[n] = '\0';
  return buf;
}

/* The request's Host, Origin, Sec-Fetch-Site and (for a method that is not GET, HEAD or OPTIONS)
 * Content-Type, checked before any route. 0, or the HTTP status with *err:
 * 403 DM_ERR_CONTROL_HOST (a Host that is not the daemon's, missing included: DNS rebinding),
 * 403 DM_ERR_CONTROL_CROSS_SITE (an Origin that is not the daemon's, Sec-Fetch-Site cross-site, or
 * same-site without the daemon's Origin), 415 DM_ERR_CONTROL_CONTENT_TYPE (a write that is not
 * application/json: the only types a page of another origin may send without a CORS preflight are
 * text/plain, forms and multipart, and the daemon never answers a preflight). */
static unsigned http_check_site(const dmh_control_http *h, struct MHD_Connection *conn,
                                const char *url, const char *method, dm_error *err) {
  char shown[96], path[96];
  url = http_shown(url, path, sizeof path); /* as every header: the client's bytes */
  const char *host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
  if (!host || !http_host_ok(h, host)) {
    dm_error_set(err, DM_ERR_CONTROL_HOST, NULL,
                 "control plane %s: refused %s %s with %s%s%s: the daemon answers only to the "
                 "address it listens on (a page of another name that resolves to this address "
                 "is DNS rebinding)",
                 h->where, method, url, host ? "Host \"" : "no Host header",
                 host ? http_shown(host, shown, sizeof shown) : "", host ? "\"" : "");
    return MHD_HTTP_FORBIDDEN;
  }
  const char *origin = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin");
  const char *scheme = h->tls ? "https://" : "http://";
  bool own_origin = origin && strncasecmp(origin, scheme, strlen(scheme)) == 0 &&
                    http_host_ok(h, origin + strlen(scheme));
  if (origin && !own_origin) {
    dm_error_set(err, DM_ERR_CONTROL_CROSS_SITE, NULL,
                 "control plane %s: refused %s %s from the web page of Origin \"%s\": only the "
                 "daemon's own origin (%s%s) may call it",
                 h->where, method, url, http_shown(origin, shown, sizeof shown), scheme, h->where);
    return MHD_HTTP_FORBIDDEN;
  }
  const char *site = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Sec-Fetch-Site");
  if (site && (strcasecmp(site, "cross-site") == 0 ||
               (strcasecmp(site, "same-site") == 0 && !own_origin))) {
    dm_error_set(err, DM_ERR_CONTROL_CROSS_SITE, NULL,
                 "control plane %s: refused %s %s sent by the browser for a page of another "
                 "site (Sec-Fetch-Site: %s)",
                 h->where, method, url, http_shown(site, shown, sizeof shown));
    return MHD_HTTP_FORBIDDEN;
  }
  if (strcmp(method, MHD_HTTP_METHOD_GET) == 0 || strcmp(method, MHD_HTTP_METHOD_HEAD) == 0 ||
      strcmp(method, MHD_HTTP_METHOD_OPTIONS) == 0)
    return 0;
  const char *type =
      MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
  static const char json[] = "application/json";
  size_t tl = strlen(json);
  if (type) {
    type += strspn(type, " \t");
    if (strncasecmp(type, json, tl) == 0 && strchr(" \t;", type[tl]))
      return 0;
  }
  dm_error_set(err, DM_ERR_CONTROL_CONTENT_TYPE, NULL,
               "control plane %s: refused %s %s with %s%s%s: a request that is not a GET must "
               "be Content-Type: application/json",
               h->where, method, url, type ? "Content-Type \"" : "no Content-Type",
               type ? http_shown(type, shown, sizeof shown) : "", type ? "\"" : "");
  return MHD_HTTP_UNSUPPORTED_MEDIA_TYPE;
}

/* ---- server ---- */

/* Queue `body` (freed) as the JSON answer; a refusal (status other than 200) also closes the
 * connection, so a refused client keeps no slot. */
static enum MHD_Result http_send(struct MHD_Connection *conn, unsigned status, char *body,
                                 const char *allow) {
  if (!body)
    return MHD_NO;
  size_t len = strlen(body);
  char *line = realloc(body, len + 2); /* the socket's line, newline included */
  if (!line) {
    free(body);
    return MHD_NO;
  }
  line[len] = '\n';
  line[len + 1] = '\0';
  struct MHD_Response *resp = MHD_create_response_from_buffer(len + 1, line, MHD_RESPMEM_MUST_FREE);
  if (!resp) {
    free(line);
    return MHD_NO;
  }
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
  if (status != MHD_HTTP_OK)
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
  if (allow)
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow);
  enum MHD_Result rc = MHD_queue_response(conn, status, resp);
  MHD_destroy_response(resp);
  return rc;
}

static enum MHD_Result http_refuse_allow(dmh_control_http *h, struct MHD_Connection *conn,
                                         unsigned status, const dm_error *err, const char *allow) {
  if (status == MHD_HTTP_FORBIDDEN)
    dmh_log(DM_LOG_WARN, "control", "%s", err->message);
  return http_send(conn, status, h->opts.refusal ? h->opts.refusal(err) : NULL, allow);
}

static enum MHD_Result http_refuse(dmh_control_http *h, struct MHD_Connection *conn,
                                   unsigned status, const dm_error *err) {
  return http_refuse_allow(h, conn, status, err, NULL);
}

/* A path under /api/: its route in *route (0), or -1 with the refusal (404, 405 with Allow, 400)
 * or the OpenAPI document queued in *rc. */
static int http_api_route(dmh_control_http *h, struct MHD_Connection *conn, const char *url,
                          const char *method, const dmh_api_route **route, enum MHD_Result *rc) {
  dm_error err;
  char allow[64];
  int status = dmh_api_match(method, url, route, allow, sizeof allow, &err);
  if (status != 0) {
    *rc = http_refuse_allow(h, conn, (unsigned)status, &err, status == 405 ? allow : NULL);
    return -1;
  }
  if ((*route)->cmd)
    return 0;
  size_t len;
  const char *doc = dmh_api_openapi(&len);
  struct MHD_Response *resp =
      MHD_create_response_from_buffer(len, (void *)doc, MHD_RESPMEM_PERSISTENT);
  if (!resp) {
    *rc = MHD_NO;
    return -1;
  }
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
  *rc = MHD_queue_response(conn, MHD_HTTP_OK, resp);
  MHD_destroy_response(resp);
  return -1;
}

static const char *http_query(void *ud, const char *name) {
  return MHD_lookup_connection_value(ud, MHD_GET_ARGUMENT_KIND, name);
}

/* GET /metrics: the process's registry in Prometheus' text format (metrics.h), after the same
 * admission as the control plane. */
static enum MHD_Result http_metrics(dmh_control_http *h, struct MHD_Connection *conn,
                                    const char *method) {
  dm_error err;
  if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
    dm_error_set(&err, DM_ERR_CONTROL_REQUEST, NULL, "%s " DMH_METRICS_HTTP_PATH ": only GET",
                 method);
    return http_refuse(h, conn, MHD_HTTP_METHOD_NOT_ALLOWED, &err);
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

static void http_cut(dmh_control_http *h, http_conn *c);

/* Who is let in at accept, before the connection takes a slot:
 * - without TLS, only a client whose uid is admitted (http_admit_uid): the client's socket is
 *   found from the pair, its address given here and ours the listening one (h->me: only a loopback
 *   address is listened on without TLS, never a wildcard). Another uid's connection is closed at
 *   once: holding the 256 slots with a byte every 10 s kept root's requests out for minutes.
 * - at most DMH_CONTROL_HTTP_MAX_CONNECTIONS open. The count is the server's, not a pool
 *   thread's: libmicrohttpd divides its own limit among the pool's threads, and a thread at its
 *   share stops accepting while connections wait in the backlog that no other thread is woken for
 *   (seen: 56 of 200 clients unanswered for 20 s), so its limit is set beyond reach and this one
 *   holds. */
static enum MHD_Result http_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen) {
  dmh_control_http *h = cls;
  if (!h->tls) {
    struct sockaddr_storage peer = {0};
    memcpy(&peer, addr, addrlen < sizeof peer ? addrlen : sizeof peer);
    long long uid = http_pair_uid(&peer, &h->me);
    dm_error err;
    if (http_admit_uid(h, uid, &err) < 0) {
      http_log_limited(h, &h->log_peer, DM_LOG_WARN, "[code %d] %s (closed at accept)", err.code,
                       err.message);
      return MHD_NO;
    }
  }
  if (atomic_fetch_add(&h->open, 1) < DMH_CONTROL_HTTP_MAX_CONNECTIONS)
    return MHD_YES; /* released when it closes (http_notify) */
  /* Full: a connection still waiting for its headers gives its slot to this one (the oldest, of
   * whatever age: an admitted operator is never refused while one waits). The count stays over
   * the limit until the one closed is (its CLOSED releases it). */
  pthread_mutex_lock(&h->conns_lock);
  bool room = h->waiting_head != NULL;
  if (room)
    http_cut(h, h->waiting_head);
  pthread_mutex_unlock(&h->conns_lock);
  if (room) {
    http_log_limited(h, &h->log_room, DM_LOG_WARN,
                     "[code %d] control plane %s: %d connections are open; closed the oldest "
                     "still waiting for its request headers%s to make room for a new one",
                     DM_ERR_CONTROL_SLOW_CLIENT, h->where, DMH_CONTROL_HTTP_MAX_CONNECTIONS,
                     h->tls ? " (or the TLS handshake)" : "");
    return MHD_YES;
  }
  atomic_fetch_sub(&h->open, 1);
  http_log_limited(
      h, &h->log_full, DM_LOG_WARN,
      "control plane %s: %d connections are open, the most served at once; closed a new one",
      h->where, DMH_CONTROL_HTTP_MAX_CONNECTIONS);
  return MHD_NO;
}

/* ---- connections not yet admitted: their deadline and their share ---- */

static void http_unlist(dmh_control_http *h, http_conn *c) {
  if (!c->listed)
    return;
  if (c->prev)
    c->prev->next = c->next;
  else
    h->waiting_head = c->next;
  if (c->next)
    c->next->prev = c->prev;
  else
    h->waiting_tail = c->prev;
  c->prev = c->next = NULL;
  c->listed = false;
  h->waiting--;
}

/* Close a waiting connection (conns_lock held): its socket shut down both ways, which its pool
 * thread's epoll sees as a hang-up, and libmicrohttpd closes it there (http_notify CLOSED, then
 * the fd). Its socket is still its own: it is listed, so CLOSED has not run. */
static void http_cut(dmh_control_http *h, http_conn *c) {
  shutdown(c->fd, SHUT_RDWR);
  http_unlist(h, c);
}

/* The reaper: closes each waiting connection at DMH_CONTROL_HTTP_HEADER_DEADLINE_MS from its
 * accept, whatever it sent, and while more than DMH_CONTROL_HTTP_MAX_UNADMITTED wait, the oldest
 * once it has waited DMH_CONTROL_HTTP_UNADMITTED_GRACE_MS (a burst of honest clients, each sending
 * its headers within milliseconds, is not cut: 200 connecting at once were, with no grace). The
 * list is in accept order, so the head is the next due. */
static void *http_reaper(void *ud) {
  dmh_control_http *h = ud;
  pthread_mutex_lock(&h->conns_lock);
  while (!h->reaper_stop) {
    long long now = http_now_ms();
    int late = 0, over = 0;
    for (http_conn *c; (c = h->waiting_head);) {
      long long age = now - c->since_ms;
      if (age >= DMH_CONTROL_HTTP_HEADER_DEADLINE_MS)
        late++;
      else if (h->waiting > DMH_CONTROL_HTTP_MAX_UNADMITTED &&
               age >= DMH_CONTROL_HTTP_UNADMITTED_GRACE_MS)
        over++;
      else
        break;
      http_cut(h, c);
    }
    if (late || over) {
      pthread_mutex_unlock(&h->conns_lock);
      if (late)
        http_log_limited(h, &h->log_slow, DM_LOG_WARN,
                         "[code %d] control plane %s: closed %d connection(s) that had not sent "
                         "their request headers%s within %d ms of connecting",
                         DM_ERR_CONTROL_SLOW_CLIENT, h->where, late,
                         h->tls ? " (or finished the TLS handshake)" : "",
                         DMH_CONTROL_HTTP_HEADER_DEADLINE_MS);
      if (over)
        http_log_limited(h, &h->log_evict, DM_LOG_WARN,
                         "[code %d] control plane %s: more than %d connections were waiting for "
                         "their request headers%s; closed the oldest %d",
                         DM_ERR_CONTROL_SLOW_CLIENT, h->where, DMH_CONTROL_HTTP_MAX_UNADMITTED,
                         h->tls ? " (or the TLS handshake)" : "", over);
      pthread_mutex_lock(&h->conns_lock);
      continue;
    }
    /* until the head is due, or a second when none waits (a first one, or one over the share,
     * signals) */
    long long due = !h->waiting_head ? now + 1000
                    : h->waiting > DMH_CONTROL_HTTP_MAX_UNADMITTED
                        ? h->waiting_head->since_ms + DMH_CONTROL_HTTP_UNADMITTED_GRACE_MS
                        : h->waiting_head->since_ms + DMH_CONTROL_HTTP_HEADER_DEADLINE_MS;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    long long wait = due - now;
    ts.tv_sec += wait / 1000;
    ts.tv_nsec += (wait % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait(&h->reaper_wake, &h->conns_lock, &ts);
  }
  pthread_mutex_unlock(&h->conns_lock);
  return NULL;
}

/* Admitted: the connection leaves the waiting list and keeps --idle-timeout from now on. */
static void http_admitted(dmh_control_http *h, http_conn *c) {
  pthread_mutex_lock(&h->conns_lock);
  http_unlist(h, c);
  pthread_mutex_unlock(&h->conns_lock);
  c->admitted = true;
}

/* ---- the TLS handshake requires the client's certificate ---- */

/* libmicrohttpd only requests a certificate (GNUTLS_CERT_REQUEST with MHD_OPTION_HTTPS_MEM_TRUST):
 * a client without one, or with another CA's, finished its handshake and held a slot until its
 * request was refused. Each session is made to require one (GNUTLS_CERT_REQUIRE: no certificate
 * fails the handshake) and to verify it on receipt against --tls-ca (this function, run by
 * GnuTLS inside the handshake: a nonzero return fails it). */
static int http_tls_verify(gnutls_session_t session) {
  http_conn *c = gnutls_session_get_ptr(session);
  unsigned status = 0;
  int rc = gnutls_certificate_verify_peers2(session, &status);
  if (rc == GNUTLS_E_SUCCESS && status == 0)
    return 0;
  gnutls_datum_t text = {NULL, 0};
  const char *why = "it was not signed by the daemon's --tls-ca";
  if (rc != GNUTLS_E_SUCCESS)
    why = gnutls_strerror(rc);
  else if (gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &text, 0) == 0)
    why = (const char *)text.data;
  if (c)
    http_log_limited(c->h, &c->h->log_bad_cert, DM_LOG_WARN,
                     "[code %d] control plane %s: refused in the TLS handshake a client "
                     "certificate: %s",
                     DM_ERR_CONTROL_CLIENT_CERT, c->h->where, why);
  gnutls_free(text.data);
  return -1;
}

/* The client's Certificate message, as received: an empty list is a client that sent no
 * certificate, which GNUTLS_CERT_REQUIRE fails without calling http_tls_verify; said here. */
static int http_tls_cert_hook(gnutls_session_t session, unsigned htype, unsigned when,
                              unsigned incoming, const gnutls_datum_t *msg) {
  (void)htype;
  (void)when;
  http_conn *c = gnutls_session_get_ptr(session);
  if (!incoming || !c)
    return 0;
  size_t at = 0; /* TLS 1.3: a context (1 byte of length) before the list's 3 bytes of length */
  if (gnutls_protocol_get_version(session) == GNUTLS_TLS1_3)
    at = msg->size > 0 ? 1u + msg->data[0] : 0;
  if (msg->size >= at + 3 && msg->data[at] == 0 && msg->data[at + 1] == 0 && msg->data[at + 2] == 0)
    http_log_limited(c->h, &c->h->log_no_cert, DM_LOG_WARN,
                     "[code %d] control plane %s: refused in the TLS handshake a client that sent "
                     "no certificate",
                     DM_ERR_CONTROL_CLIENT_CERT, c->h->where);
  return 0;
}

/* A new connection: its record, listed to wait (the reaper holds it to the deadline and the
 * share); with TLS, its session made to require the client's certificate (libmicrohttpd has set the
 * session up, the handshake has not begun). A record that cannot be made closes the connection: it
 * would escape the deadline. */
static void http_started(dmh_control_http *h, struct MHD_Connection *conn, void **socket_context) {
  const union MHD_ConnectionInfo *fdi =
      MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
  http_conn *c = calloc(1, sizeof *c);
  *socket_context = c;
  if (!c || !fdi) {
    if (fdi)
      shutdown(fdi->connect_fd, SHUT_RDWR);
    return;
  }
  c->h = h;
  c->fd = fdi->connect_fd;
  if (h->tls) {
    const union MHD_ConnectionInfo *ti =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (!ti) {
      shutdown(c->fd, SHUT_RDWR);
      return;
    }
    gnutls_session_t session = (gnutls_session_t)ti->tls_session;
    /* the session's pointer is libmicrohttpd's only for its PSK credentials (psk_gnutls_adapter),
     * which this server does not use; the record outlives the session (gnutls_deinit comes before
     * CLOSED) */
    gnutls_session_set_ptr(session, c);
    gnutls_certificate_server_set_request(session, GNUTLS_CERT_REQUIRE);
    gnutls_session_set_verify_function(session, http_tls_verify);
    gnutls_handshake_set_hook_function(session, GNUTLS_HANDSHAKE_CERTIFICATE_PKT, GNUTLS_HOOK_POST,
                                       http_tls_cert_hook);
  }
  pthread_mutex_lock(&h->conns_lock);
  c->since_ms = http_now_ms();
  c->listed = true;
  c->prev = h->waiting_tail;
  if (h->waiting_tail)
    h->waiting_tail->next = c;
  else
    h->waiting_head = c;
  h->waiting_tail = c;
  /* the reaper's next due time changes with the first one waiting and with one over the share */
  if (++h->waiting == 1 || h->waiting == DMH_CONTROL_HTTP_MAX_UNADMITTED + 1)
    pthread_cond_signal(&h->reaper_wake);
  pthread_mutex_unlock(&h->conns_lock);
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
    *rc = http_refuse(h, conn, MHD_HTTP_FORBIDDEN, &err);
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
    *rc = http_send(conn, status, h->opts.refusal ? h->opts.refusal(&err) : NULL, NULL);
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
    *rc = http_refuse(h, conn, MHD_HTTP_NOT_FOUND, &err);
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
    *rc = http_refuse(h, conn, MHD_HTTP_NOT_FOUND, &err);
    return -1;
  } else if (strcmp(method, MHD_HTTP_METHOD_POST) != 0) {
    dm_error_set(&err, DM_ERR_CONTROL_REQUEST, NULL,
                 "%s " DMH_CONTROL_HTTP_PATH ": only POST, with the request object as the body",
                 method);
    *rc = http_refuse_allow(h, conn, MHD_HTTP_METHOD_NOT_ALLOWED, &err, MHD_HTTP_METHOD_POST);
    return -1;
  }
  const char *clen = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
  if (clen && strtoull(clen, NULL, 10) > DMH_CONTROL_LINE_MAX) {
    dm_error_set(&err, DM_ERR_CONTROL_REQUEST, NULL,
                 "request body of %s bytes is longer than %d bytes", clen, DMH_CONTROL_LINE_MAX);
    *rc = http_refuse(h, conn, MHD_HTTP_CONTENT_TOO_LARGE, &err);
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
    return http_send(conn, MHD_HTTP_OK, http_take_answer(req), NULL);
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
      return http_refuse(h, conn, MHD_HTTP_BAD_REQUEST, &err);
    line = api_line;
    len = strlen(api_line);
  }
  if (!http_is_fast(h, req->route, line) && http_run_off_pool(h, conn, req, line, len)) {
    free(api_line);
    return MHD_YES; /* answered once its job resumes the connection */
  }
  char *answer = h->opts.handler(h->opts.ud, line, len);
  free(api_line);
  return http_send(conn, MHD_HTTP_OK, answer, NULL);
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

/* --tls-allowed-cn into h->allowed: 0, or -1 (out of memory). The names were checked by
 * dmh_control_listen_flags. */
static int http_allowed_split(dmh_control_http *h, const char *text, dm_error *err) {
  if (!text)
    return 0;
  size_t n = 1;
  for (const char *p = text; *p; p++)
    n += *p == ',';
  if (!(h->allowed_text = strdup(text)) || !(h->allowed = calloc(n, sizeof *h->allowed))) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory reading --tls-allowed-cn");
    return -1;
  }
  char *copy = strdup(text), *save = NULL;
  if (!copy) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory reading --tls-allowed-cn");
    return -1;
  }
  h->allowed_buf = copy;
  for (char *name = strtok_r(copy, ",", &save); name; name = strtok_r(NULL, ",", &save))
    h->allowed[h->n_allowed++] = name;
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

static void http_stop_reaper(dmh_control_http *h) {
  if (!h->reaper_on)
    return;
  pthread_mutex_lock(&h->conns_lock);
  h->reaper_stop = true;
  pthread_cond_signal(&h->reaper_wake);
  pthread_mutex_unlock(&h->conns_lock);
  pthread_join(h->reaper, NULL);
  h->reaper_on = false;
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
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&h->reaper_wake, &ca);
  pthread_condattr_destroy(&ca);
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
  /* libmicrohttpd's own limit (divided among the pool's threads) out of reach: http_accept's
   * holds, over the whole pool */
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
      (unsigned)DMH_CONTROL_HTTP_MAX_CONNECTIONS * (pool + 1), MHD_OPTION_CONNECTION_TIMEOUT,
      idle_s, MHD_OPTION_NOTIFY_COMPLETED, http_completed, h, MHD_OPTION_NOTIFY_CONNECTION,
      http_notify, h, MHD_OPTION_ARRAY, tls ? tls_opts : no_opts, MHD_OPTION_END);
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
