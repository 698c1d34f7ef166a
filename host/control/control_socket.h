/*
 * The control socket's transport: a unix stream socket carrying newline-delimited requests, each
 * answered by one line. A client may send one request and close its side (the request needs no
 * trailing newline then), or send several lines on one connection; answers come in order.
 *
 * The server knows nothing of the protocol: each line goes to the handler, whose answer is written
 * back followed by '\n'. Each connection is served by its own thread, so a request blocked in the
 * supervisor (a pause waits for the unit to reach a safe point) never holds up another connection.
 * The handler must therefore be thread-safe.
 */
#ifndef DMH_CONTROL_SOCKET_H
#define DMH_CONTROL_SOCKET_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "dmhost/error.h"

#define DMH_CONTROL_LINE_MAX (1024 * 1024) /* longest request line accepted */
/* Connections served at once. At the limit a new connection takes the slot of the one idle longest
 * (connected, no request in progress), which is closed; only when every slot is handling a request
 * do new connections wait in the backlog. */
#define DMH_CONTROL_MAX_CONNECTIONS 64
#define DMH_CONTROL_IDLE_TIMEOUT_MS 30000 /* default: a connection without a request is closed */
#define DMH_CONTROL_SEND_TIMEOUT_MS 10000 /* an answer the client does not read closes it */

/* Answer one request line (without its '\n', NUL-terminated). Returns a malloc'd answer without a
 * trailing newline (the server adds it, and frees the answer), or NULL to close the connection. */
typedef char *(*dmh_control_handler)(void *ud, const char *line, size_t len);
/* The answer to a request the transport refuses itself (a line over DMH_CONTROL_LINE_MAX, a peer
 * that may not connect): the protocol's error shape, malloc'd, without the newline. */
typedef char *(*dmh_control_refusal)(const dm_error *err);

typedef struct dmh_control_opts {
  dmh_control_handler handler;
  dmh_control_refusal refusal;
  void *ud; /* the handler's */
  /* Who may connect, checked with SO_PEERCRED on every connection: the daemon's own uid, root, and
   * when has_group, any process whose group or supplementary groups include `group` (the socket
   * file is then given that group and mode 0660). Anyone else gets DM_ERR_CONTROL_PEER and is
   * closed. */
  bool has_group;
  gid_t group;
  const char *group_name; /* for messages */
  /* A connection that has not completed a request this long after connecting or after its last
   * answer is closed; 0: DMH_CONTROL_IDLE_TIMEOUT_MS. */
  int idle_timeout_ms;
  /* An answer not taken by the client within this is dropped with its connection; 0:
   * DMH_CONTROL_SEND_TIMEOUT_MS. */
  int send_timeout_ms;
  /* HTTP only: serve GET /metrics and nothing else (`dmhost run --listen`, which has no control
   * plane): the status page, the API and /control answer 404 saying so; handler is not called. */
  bool metrics_only;
  /* HTTP only (control_http.h): the commands answered on the server's event threads, in turn with
   * the other connections of their thread: quick ones that never wait (serve's query-status).
   * NULL-ended; NULL: none. Every other command runs on a thread of its own while its connection
   * waits, so that one blocked for seconds (start-task's precheck, pause-task) holds up nobody. */
  const char *const *fast_cmds;
} dmh_control_opts;

typedef struct dmh_control_server dmh_control_server;

/*
 * Bind and listen on `path` (mode 0600, or 0660 with the group: the socket gives full control of
 * the daemon). A socket file left by a daemon that died is replaced; one on which a daemon still
 * answers is DM_ERR_EXISTS; a path longer than sun_path or that cannot be bound is DM_ERR_CONTROL.
 * Returns 0 and *out, or -1.
 */
int dmh_control_server_open(const char *path, const dmh_control_opts *opts,
                            dmh_control_server **out, dm_error *err);

/* Accept and serve connections until `stop_fd` becomes readable (e.g. a signalfd or the read end of
 * a pipe), then stop accepting. Returns 0, or -1 with *err if accepting fails for good. */
int dmh_control_server_run(dmh_control_server *s, int stop_fd, dm_error *err);

/* Stop accepting (if still running), close idle connections and those whose answer waits for a
 * client that does not read, wait for the requests being handled to finish, unlink the socket file
 * and free. No client can hold it up longer than the request it has in progress. */
void dmh_control_server_close(dmh_control_server *s);

/*
 * Client: connect to `path`, send `request` (one line; '\n' added), read one answer line into
 * *response (malloc'd, no newline). `timeout_ms` bounds the whole call (<= 0: no limit). Returns 0,
 * or -1 with DM_ERR_CONTROL naming the socket and what failed.
 */
int dmh_control_call(const char *path, const char *request, int timeout_ms, char **response,
                     dm_error *err);

#endif /* DMH_CONTROL_SOCKET_H */
