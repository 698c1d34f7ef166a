/* Who may connect to the HTTP server (http_server_internal.h): the peer's uid of a loopback
 * connection (sock_diag), the check at accept, the connections waiting for their headers and the
 * reaper that holds them to a deadline and a share, the TLS handshake's hooks, --tls-allowed-cn's
 * subjects, and the rate-limited log of refusals. */
#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <grp.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "dmhost/clock.h"
#include "http_server_internal.h"

long long http_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Log the line of `fmt` unless `r` said one less than HTTP_LOG_EVERY_MS ago (then it is counted,
 * and the next line says how many were left out). */
__attribute__((format(printf, 4, 5))) void
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
int http_admit_local(dmh_control_http *h, struct MHD_Connection *conn, dm_error *err) {
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
int http_admit_cert(dmh_control_http *h, struct MHD_Connection *conn, dm_error *err) {
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
enum MHD_Result http_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen) {
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

void http_unlist(dmh_control_http *h, http_conn *c) {
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
void *http_reaper(void *ud) {
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
    struct timespec ts = dm_clock_deadline(due - now);
    pthread_cond_timedwait(&h->reaper_wake, &h->conns_lock, &ts);
  }
  pthread_mutex_unlock(&h->conns_lock);
  return NULL;
}

/* Admitted: the connection leaves the waiting list and keeps --idle-timeout from now on. */
void http_admitted(dmh_control_http *h, http_conn *c) {
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
void http_started(dmh_control_http *h, struct MHD_Connection *conn, void **socket_context) {
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

/* --tls-allowed-cn into h->allowed: 0, or -1 (out of memory). The names were checked by
 * dmh_control_listen_flags. */
int http_allowed_split(dmh_control_http *h, const char *text, dm_error *err) {
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

void http_stop_reaper(dmh_control_http *h) {
  if (!h->reaper_on)
    return;
  pthread_mutex_lock(&h->conns_lock);
  h->reaper_stop = true;
  pthread_cond_signal(&h->reaper_wake);
  pthread_mutex_unlock(&h->conns_lock);
  pthread_join(h->reaper, NULL);
  h->reaper_on = false;
}
