/*
 * Connections to the source. Every connection gets the session the dump format needs (binary
 * names, UTC) and timeouts long enough for a stream that waits on a slow disk. Sockets are
 * registered (the SDK's dmhost/conn_kill.h) so kill can shut them down from another thread while a
 * worker is blocked in a read; only the thread owning a connection ever closes it.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <errmsg.h>
#include <mysqld_error.h>

#include "dmhost/db.h"
#include "dump_internal.h"

#define DUMP_CONN_CONNECT_TIMEOUT 10

/* wait_timeout: a worker's connection sits idle while worker 0 plans. net_write_timeout: the
 * server waits for us while a worker writes a big statement to a slow disk. A day and an hour. */
static const char dump_conn_session[] =
    "SET NAMES binary, time_zone = '+00:00', sql_mode = 'NO_AUTO_VALUE_ON_ZERO', "
    "SESSION wait_timeout = 86400, SESSION net_write_timeout = 3600, "
    "SESSION net_read_timeout = 3600";

char *dump_strfmt(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = NULL;
  if (vasprintf(&s, fmt, ap) < 0)
    s = NULL;
  va_end(ap);
  return s;
}

char *dump_quote_string(dump_conn *c, const char *value) {
  size_t n = strlen(value);
  char *out = malloc(2 * n + 3);
  if (!out)
    return NULL;
  out[0] = '\'';
  unsigned long len = mysql_real_escape_string(c->m, out + 1, value, (unsigned long)n);
  out[len + 1] = '\'';
  out[len + 2] = '\0';
  return out;
}

int dump_conn_open(dump_unit *u, dump_conn *c, dm_error *err) {
  const dm_db_endpoint *ep = u->host->source_db(u->ctx);
  c->sock = -1;
  dm_db_connect_opts co = {.who = "dump",
                           .side = DM_DB_SOURCE,
                           .connect_timeout_s = DUMP_CONN_CONNECT_TIMEOUT,
                           .endpoint_size = dm_host_db_endpoint_size(u->host, u->ctx)};
  c->m = dm_db_connect(ep, &co, err);
  if (!c->m)
    return -1;
  c->sock = (int)mysql_get_socket(c->m);
  dm_conn_kill_add(u->conns, c->sock);
  /* kill may have run between connect and the registration above: it could not see this socket. */
  if (atomic_load(&u->killed))
    dm_conn_kill_one(u->conns, c->sock);
  if (dump_conn_exec(u, c, dump_conn_session, err) != 0 ||
      dm_db_session_apply(c->m, ep, co.endpoint_size, "dump", DM_DB_SOURCE, err) != 0) {
    dump_conn_close(u, c);
    return -1;
  }
  return 0;
}

void dump_conn_close(dump_unit *u, dump_conn *c) {
  if (!c->m)
    return;
  dm_conn_kill_remove(u->conns, c->sock);
  c->sock = -1;
  mysql_close(c->m);
  c->m = NULL;
}

void dump_conn_abort(dump_unit *u, dump_conn *c, MYSQL_RES *res) {
  /* the close below sends a reset: the server stops sending at once (DM_CONN_KILL_RESET) */
  dm_conn_kill_reset_on_close(u->conns, c->sock);
  /* mysql_free_result would read (and drop) every row still on its way, the rest of the chunk:
   * mark the connection idle so it frees only what it holds. The connection is closed next, so
   * its protocol state no longer matters. */
  c->m->status = MYSQL_STATUS_READY;
  mysql_free_result(res);
  dump_conn_close(u, c);
}

void dump_conn_error(dump_unit *u, dump_conn *c, const char *what, dm_error *err) {
  unsigned int no = mysql_errno(c->m);
  const dm_db_endpoint *ep = u->host->source_db(u->ctx);
  const char *host = ep->host ? ep->host : "";
  if (no == ER_TABLE_DEF_CHANGED || no == ER_NO_SUCH_TABLE || no == ER_BAD_DB_ERROR) {
    /* A table altered or dropped under the dump: a new dump (resume) sees the new state. */
    dm_db_error(c->m, DM_DB_SOURCE, err, DM_ERR_DUMP_TABLE_CHANGED,
                "dump: %s on the source %s:%d: the table changed during the dump (error %u)", what,
                host, ep->port, no);
    err->resumable = true;
  } else {
    /* The SDK's rule: resumable only when retrying can help (a lost connection, a deadlock); a
     * refused statement (no privilege, a bad column) pauses for the user. */
    dm_db_error(c->m, DM_DB_SOURCE, err, DM_ERR_DB_QUERY,
                "dump: %s failed on the source %s:%d (error %u)", what, host, ep->port, no);
  }
}

int dump_conn_exec(dump_unit *u, dump_conn *c, const char *sql, dm_error *err) {
  if (mysql_real_query(c->m, sql, strlen(sql)) != 0) {
    dump_conn_error(u, c, sql, err);
    return -1;
  }
  MYSQL_RES *res = mysql_store_result(c->m);
  if (res)
    mysql_free_result(res);
  else if (mysql_field_count(c->m) != 0) {
    dump_conn_error(u, c, sql, err);
    return -1;
  }
  return 0;
}

int dump_conn_query(dump_unit *u, dump_conn *c, const char *sql, MYSQL_RES **res, dm_error *err) {
  *res = NULL;
  if (mysql_real_query(c->m, sql, strlen(sql)) != 0 || !(*res = mysql_store_result(c->m))) {
    dump_conn_error(u, c, sql, err);
    return -1;
  }
  return 0;
}
