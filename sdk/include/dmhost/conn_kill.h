/*
 * dmhost SDK: the sockets a unit's `kill` shuts down. A unit's threads block in reads on MySQL
 * connections (a long query, a result streaming, a lock wait); `kill` (and a stop) must make them
 * return at once, from another thread, without closing a connection another thread owns. The
 * registry keeps the socket of every open connection; kill calls shutdown(2) on each, so a blocked
 * read returns with an error and the owning thread closes its connection itself.
 *
 * The rule that makes it safe: a connection is registered after its connect and removed BEFORE
 * its close (mysql_close), all under the registry's lock, so kill never shuts down a socket number
 * the kernel has already handed to another file.
 *
 *   dm_conn_kill *k = dm_conn_kill_new(8, 0);       // at init
 *   MYSQL *c = dm_db_connect(...);                   // a thread connects
 *   dm_conn_kill_add(k, (int)mysql_get_socket(c));
 *   ...                                              // kill, any thread: dm_conn_kill_all(k)
 *   dm_conn_kill_remove(k, (int)mysql_get_socket(c));
 *   mysql_close(c);
 *   dm_conn_kill_free(k);                            // at destroy
 *
 * Thread-safety: every function but new/free may be called from any thread.
 */
#ifndef DMHOST_CONN_KILL_H
#define DMHOST_CONN_KILL_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dm_conn_kill dm_conn_kill;

/* With DM_CONN_KILL_RESET a shut-down socket is also set to linger 0 (SO_LINGER), so its close
 * sends a reset: a plain close leaves the server blocked writing the rest of a result into a
 * window that never opens again, holding the table's metadata lock until the kernel gives up on
 * the half-closed connection (a minute or two; measured by the dump). */
#define DM_CONN_KILL_RESET 0x1u

/* A registry for up to `capacity` sockets; NULL when out of memory. */
dm_conn_kill *dm_conn_kill_new(int capacity, unsigned flags);
void dm_conn_kill_free(dm_conn_kill *k);

/* Register socket fd. 0, or -1 when the registry is full (the socket cannot be interrupted). */
int dm_conn_kill_add(dm_conn_kill *k, int fd);
/* Forget socket fd; call it before closing the connection. */
void dm_conn_kill_remove(dm_conn_kill *k, int fd);
/* Shut down socket fd if it is registered (a connection made while kill ran: it could not see
 * it). */
void dm_conn_kill_one(dm_conn_kill *k, int fd);
/* Shut down every registered socket (kill): blocked reads and writes on them return. */
void dm_conn_kill_all(dm_conn_kill *k);
/* Set linger 0 on socket fd if registered, so its close sends a reset (DM_CONN_KILL_RESET's
 * effect, for a connection its owner abandons in the middle of a result). */
void dm_conn_kill_reset_on_close(dm_conn_kill *k, int fd);

#ifdef __cplusplus
}
#endif
#endif /* DMHOST_CONN_KILL_H */
