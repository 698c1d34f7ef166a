/*
 * The control plane over TCP: the requests and answers of the control socket (control.h) carried by
 * HTTP/1.1, served with libmicrohttpd and called with libcurl (docs/control.md, "The HTTP
 * transport"). Two endpoints: GET /metrics (metrics.h, docs/metrics.md), and POST /control with the
 * request object as the body; the answer is the body of a 200 (application/json), exactly the line
 * the socket would write. The transport's own refusals carry the same error shape with their HTTP
 * status: 413 (body over DMH_CONTROL_LINE_MAX), 403 (a client certificate of a subject not in
 * --tls-allowed-cn; a Host that does not name the daemon, a request of another web origin; in
 * depth, no valid certificate or a local peer of another user, which are refused before: in the TLS
 * handshake, at accept), 415 (a write that is not application/json), 404 (another path), 405
 * (another method). The Host, Origin, Sec-Fetch-Site and Content-Type checks come before any route:
 * the operator's browser is admitted as the operator, whichever page made it send the request
 * (docs/control.md, "Requests a browser makes").
 *
 * Like the socket server it knows nothing of the protocol: the body goes to opts->handler. A small
 * pool of event threads (libmicrohttpd's epoll loops, one a core) serves every connection first
 * come first served; the commands of opts->fast_cmds are answered there, every other one on a
 * thread of its own while its connection is suspended, so that a request blocked in the
 * supervisor holds up no other.
 */
#ifndef DMH_CONTROL_HTTP_H
#define DMH_CONTROL_HTTP_H

#include <stdbool.h>

#include "cli_flag.h"
#include "control_socket.h"
#include "dmhost/error.h"

#define DMH_CONTROL_HTTP_PATH "/control"
/* Connections served at once over HTTP (over the whole pool): more than the socket's
 * DMH_CONTROL_MAX_CONNECTIONS, for the API's clients (a dashboard's browsers, scripts polling
 * status; tests/control/test_api_load.c runs 200 at once). One beyond is closed on accept. */
#define DMH_CONTROL_HTTP_MAX_CONNECTIONS 256
/* A connection that has not sent its whole request headers (with TLS: finished its handshake and
 * sent them) this long after it was accepted is closed, whatever trickle of bytes it sends: an
 * absolute deadline, where --idle-timeout restarts with every byte. Once its first request's
 * headers are in and admitted, a connection keeps --idle-timeout. */
#define DMH_CONTROL_HTTP_HEADER_DEADLINE_MS 5000
/* Connections not yet admitted (before their first request's headers) at most, out of
 * DMH_CONTROL_HTTP_MAX_CONNECTIONS, once they have waited DMH_CONTROL_HTTP_UNADMITTED_GRACE_MS:
 * beyond, the oldest are closed, so that clients that stall hold at most this share. A new
 * connection when all DMH_CONTROL_HTTP_MAX_CONNECTIONS are open closes the oldest one waiting, of
 * any age: an admitted operator always finds a slot. */
#define DMH_CONTROL_HTTP_MAX_UNADMITTED 16
/* The time an honest client needs to send its headers (milliseconds on loopback): a burst of
 * them (200 connecting at once) is not cut by the share meanwhile. */
#define DMH_CONTROL_HTTP_UNADMITTED_GRACE_MS 1000
/* GET: the process's metrics in Prometheus' text format (metrics.h, docs/metrics.md), admitted
 * as /control is (loopback peer of the daemon's user, or a client certificate of --tls-ca). */
#define DMH_METRICS_HTTP_PATH "/metrics"

/* Mutual TLS: PEM files. All three or none. The server presents cert/key and admits only clients
 * whose certificate `ca` signed; the client presents cert/key and trusts only a server whose
 * certificate `ca` signed and that names the host it dialled. */
/* ca, cert, key and, server only (--tls-allowed-cn), allowed_cn: the client certificates'
 * subjects admitted, "NAME[,NAME...]" compared with the certificate's CN; NULL: any certificate
 * `ca` signed. A certificate of `ca` whose CN is not listed is answered 403
 * DM_ERR_CONTROL_CLIENT_SUBJECT. The type of the --tls-* flag group (cli_flag.h). */
typedef dmh_cli_tls dmh_control_tls;

typedef struct dmh_control_http dmh_control_http;

/*
 * Listen on `addr` ("HOST:PORT", "[V6]:PORT"; port 0 picks a free one, logged) and serve until
 * dmh_control_http_close. `tls` NULL or all three files. An address that is not loopback without
 * TLS is DM_ERR_CONTROL_INSECURE_LISTEN (nothing is opened); unreadable or mismatched TLS files are
 * DM_ERR_CONTROL_TLS; an address that does not resolve or cannot be bound is DM_ERR_CONTROL_LISTEN.
 * Without TLS, a loopback client is admitted as the socket admits one (its uid is the daemon's,
 * root's, or in opts->group), found by the kernel's socket of its connection (NETLINK_SOCK_DIAG)
 * when it is accepted: another uid's connection is closed at once and takes no slot. With TLS the
 * handshake requires a client certificate of tls->ca (none, or another CA's: the handshake fails),
 * and tls->allowed_cn then names the subjects admitted. A connection not admitted within
 * DMH_CONTROL_HTTP_HEADER_DEADLINE_MS is closed, and at most DMH_CONTROL_HTTP_MAX_UNADMITTED wait.
 * opts: handler, refusal, ud, the group, idle_timeout_ms (also bounds an unread answer).
 */
int dmh_control_http_open(const char *addr, const dmh_control_tls *tls,
                          const dmh_control_opts *opts, dmh_control_http **out, dm_error *err);

/* The checks of dmh_control_http_open on `addr` alone (it parses, resolves, and is loopback or
 * `tls`), made before anything else starts: 0, or -1 with its error. */
int dmh_control_http_check(const char *addr, bool tls, dm_error *err);

/* The checks of a daemon's --listen and --tls-* flags before anything starts (serve, master,
 * worker): the three TLS files all or none, TLS only with a listen address (`listen` NULL: none
 * given), --tls-allowed-cn only with them and naming at least one subject, no name empty, and the
 * address itself (dmh_control_http_check). 0 with *tls_on; else the exit status
 * (2 a usage error, 1 an address that cannot be served) with *err saying which. */
int dmh_control_listen_flags(const char *listen, const dmh_control_tls *tls, bool *tls_on,
                             dm_error *err);

/* The port bound (the one asked for, or the one picked for port 0). */
int dmh_control_http_port(const dmh_control_http *h);

/* Stop accepting, wait for the requests in progress, close the idle connections and free. */
void dmh_control_http_close(dmh_control_http *h);

/*
 * Client: POST `request` to http(s)://addr/control (https when `tls` is given) and return the
 * answer body in *response (malloc'd). `timeout_ms` bounds the whole call (<= 0: no limit).
 * Returns 0, or -1 with DM_ERR_CONTROL_HTTP (connect, TLS handshake, timeout, an answer that is not
 * the protocol's); a refusal by the transport (403, 404, 405, 413, 415) is returned as its
 * answer. It sends Content-Type: application/json and the Host of `addr`.
 */
int dmh_control_http_call(const char *addr, const dmh_control_tls *tls, const char *request,
                          int timeout_ms, char **response, dm_error *err);

#endif /* DMH_CONTROL_HTTP_H */
