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

#include <stddef.h>

#include "dmhost/error.h"

#define DMH_CONTROL_LINE_MAX (1024 * 1024) /* longest request line accepted */
#define DMH_CONTROL_MAX_CONNECTIONS 64     /* served at once; more wait in the backlog */

/* Answer one request line (without its '\n', NUL-terminated). Returns a malloc'd answer without a
 * trailing newline (the server adds it, and frees the answer), or NULL to close the connection. */
typedef char *(*dmh_control_handler)(void *ud, const char *line, size_t len);

typedef struct dmh_control_server dmh_control_server;

/*
 * Bind and listen on `path` (mode 0600: the socket gives full control of the daemon). A socket file
 * left by a daemon that died is replaced; one on which a daemon still answers is DM_ERR_EXISTS; a
 * path longer than sun_path or that cannot be bound is DM_ERR_CONTROL. Returns 0 and *out, or -1.
 */
int dmh_control_server_open(const char *path, dmh_control_handler handler, void *ud,
                            dmh_control_server **out, dm_error *err);

/* Accept and serve connections until `stop_fd` becomes readable (e.g. a signalfd or the read end of
 * a pipe), then stop accepting. Returns 0, or -1 with *err if accepting fails for good. */
int dmh_control_server_run(dmh_control_server *s, int stop_fd, dm_error *err);

/* Stop accepting (if still running), wake connections idle in a read, wait for the requests being
 * handled to finish, unlink the socket file and free. */
void dmh_control_server_close(dmh_control_server *s);

/*
 * Client: connect to `path`, send `request` (one line; '\n' added), read one answer line into
 * *response (malloc'd, no newline). `timeout_ms` bounds the whole call (<= 0: no limit). Returns 0,
 * or -1 with DM_ERR_CONTROL naming the socket and what failed.
 */
int dmh_control_call(const char *path, const char *request, int timeout_ms, char **response,
                     dm_error *err);

#endif /* DMH_CONTROL_SOCKET_H */
