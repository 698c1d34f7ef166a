/*
 * Connections of the sync unit: the target's (session settings of sync_sql.h, several statements
 * per round trip), the target's for DDL (one statement per query: the server refuses a second
 * one), the source's (precheck and the source's position for status), error mapping, and the
 * sockets kill shuts down.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <errmsg.h>
#include <mysqld_error.h>

#include <dmhost/db.h>

#include "sync.h"

/* Runs the ';'-separated statements of a constant text (no ';' inside a literal) one by one. */
static int sync_db_exec_each(sync_unit *u, MYSQL *c, const char *sql, const char *what,
                             dm_error *err) {
  while (*sql) {
    size_t n = strcspn(sql, ";");
    if (n && sync_db_exec(u, c, sql, n, what, err) != 0)
      return -1;
    sql += n + (sql[n] == ';');
  }
  return 0;
}

/* multi: CLIENT_MULTI_STATEMENTS, for the workers' batches; without it, the server refuses a
 * query that holds a second statement (the DDL connection: the text comes from the source). */
static MYSQL *sync_db_connect(sync_unit *u, const dm_db_endpoint *ep, bool target, bool multi,
                              dm_error *err) {
  dm_db_connect_opts o = {
      .who = "sync",
      .side = target ? DM_DB_TARGET : DM_DB_SOURCE,
      .read_timeout_s = 600,
      .write_timeout_s = 600,
      .client_flags = (multi ? CLIENT_MULTI_STATEMENTS | CLIENT_MULTI_RESULTS : 0) |
                      (target && u->fence ? DM_DB_FENCE_CLIENT_FLAGS : 0),
      .endpoint_size = dm_host_db_endpoint_size(u->host, u->ctx),
  };
  MYSQL *c = dm_db_connect(ep, &o, err);
  if (!c)
    return NULL;
  /* READ COMMITTED: the workers' transactions run side by side on rows no two of them share;
   * REPEATABLE READ's gap locks would still make them wait for (and deadlock with) each other. */
  static const char rc_sql[] = "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED";
  static const char what[] = "sync: cannot set up the session on the target";
  if ((target && (sync_db_exec_each(u, c, SYNC_SQL_SESSION, what, err) != 0 ||
                  sync_db_exec(u, c, rc_sql, sizeof rc_sql - 1, what, err) != 0)) ||
      dm_db_session_apply(c, ep, o.endpoint_size, "sync", o.side, err) != 0) {
    mysql_close(c);
    return NULL;
  }
  dm_conn_kill_add(u->conns, (int)mysql_get_socket(c));
  return c;
}

MYSQL *sync_db_connect_target(sync_unit *u, dm_error *err) {
  return sync_db_connect(u, u->host->target_db(u->ctx), true, true, err);
}

MYSQL *sync_db_connect_ddl(sync_unit *u, dm_error *err) {
  return sync_db_connect(u, u->host->target_db(u->ctx), true, false, err);
}

MYSQL *sync_db_connect_source(sync_unit *u, dm_error *err) {
  return sync_db_connect(u, u->host->source_db(u->ctx), false, false, err);
}

void sync_db_close(sync_unit *u, MYSQL *c) {
  if (!c)
    return;
  dm_conn_kill_remove(u->conns, (int)mysql_get_socket(c));
  mysql_close(c);
}

void sync_db_error(sync_unit *u, MYSQL *c, const char *what, dm_error *err) {
  (void)u;
  unsigned code = mysql_errno(c);
  dm_db_error(c, DM_DB_TARGET, err, DM_ERR_DB_QUERY, "%s", what);
  /* A client error (2xxx: the connection was lost) is told apart by code: the checkpoint and XA
   * code reconnect on it instead of reporting the statement. */
  if (code >= 2000 && code < 3000)
    err->code = DM_ERR_DB_CONNECT;
}

int sync_db_exec(sync_unit *u, MYSQL *c, const char *sql, size_t len, const char *what,
                 dm_error *err) {
  if (mysql_real_query(c, sql, (unsigned long)len) != 0) {
    sync_db_error(u, c, what, err);
    return -1;
  }
  for (;;) {
    MYSQL_RES *r = mysql_store_result(c);
    if (r) {
      mysql_free_result(r);
    } else if (mysql_errno(c) != 0) {
      /* a statement that failed while its rows were sent (a SELECT's subquery): the server
       * stopped there, and mysql_next_result would only say there is nothing more */
      sync_db_error(u, c, what, err);
      return -1;
    }
    int rc = mysql_next_result(c);
    if (rc < 0)
      return 0;
    if (rc > 0) {
      sync_db_error(u, c, what, err);
      return -1;
    }
  }
}

/* ---- precheck of the source ---- */

static int sync_db_value(MYSQL *c, const char *q, char *out, size_t len, dm_error *err) {
  out[0] = '\0';
  if (mysql_query(c, q) != 0) {
    dm_db_error(c, DM_DB_SOURCE, err, DM_ERR_DB_QUERY, "sync: cannot read the source's settings");
    return -1;
  }
  MYSQL_RES *r = mysql_store_result(c);
  if (!r) {
    dm_db_error(c, DM_DB_SOURCE, err, DM_ERR_DB_QUERY, "sync: cannot read the source's settings");
    return -1;
  }
  MYSQL_ROW row = mysql_fetch_row(r);
  if (row && row[0])
    dm_strlcpy(out, row[0], len);
  mysql_free_result(r);
  return 0;
}

int sync_db_precheck(sync_unit *u, MYSQL *src, dm_error *err) {
  const dm_db_endpoint *ep = u->host->source_db(u->ctx);
  static const struct {
    const char *var, *want;
  } vars[] = {
      {"log_bin", "1"},
      {"binlog_format", "ROW"},
      {"binlog_row_image", "FULL"},
  };
  char bad[1024] = "";
  size_t at = 0;
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    char q[128], v[128];
    snprintf(q, sizeof q, "SELECT @@GLOBAL.%s", vars[i].var);
    if (sync_db_value(src, q, v, sizeof v, err) < 0)
      return -1;
    if (strcasecmp(v, vars[i].want) != 0 && !(i == 0 && strcasecmp(v, "ON") == 0))
      at += (size_t)snprintf(bad + at, sizeof bad - at, "%s%s is %s (needs %s)", at ? ", " : "",
                             vars[i].var, v[0] ? v : "unset", vars[i].want);
    if (at >= sizeof bad)
      break;
  }
  if (at) {
    u->host->error_make(u->ctx, err, DM_ERR_SYNC_PRECHECK, NULL,
                        "sync: the source %s:%d cannot be replicated: %s", ep->host, ep->port, bad);
    return -1;
  }
  /* Not required (the schema tracker decodes rows without it), but it decides where the tracker
   * may learn a table it has not met: with FULL metadata the binlog names the columns, and a
   * target table that is a superset of the source's (DM allows it) must not be taken for the
   * source's structure. MySQL 5.7 has no such variable: as NO_LOG. */
  char meta[32] = "";
  if (mysql_query(src, "SELECT @@GLOBAL.binlog_row_metadata") == 0) {
    MYSQL_RES *mr = mysql_store_result(src);
    MYSQL_ROW m = mr ? mysql_fetch_row(mr) : NULL;
    if (m && m[0])
      dm_strlcpy(meta, m[0], sizeof meta);
    if (mr)
      mysql_free_result(mr);
  }
  u->source_full_metadata = strcasecmp(meta, "FULL") == 0;
  /* privileges: REPLICATION SLAVE (binlog stream), REPLICATION CLIENT / BINLOG MONITOR (master
   * status), SELECT; ALL PRIVILEGES has them all */
  if (mysql_query(src, "SHOW GRANTS") != 0) {
    dm_db_error(src, DM_DB_SOURCE, err, DM_ERR_DB_QUERY,
                "sync: cannot read the source account's privileges");
    return -1;
  }
  MYSQL_RES *r = mysql_store_result(src);
  bool all = false, slave = false, client = false;
  MYSQL_ROW row;
  while (r && (row = mysql_fetch_row(r))) {
    const char *g = row[0];
    if (!g || strncmp(g, "GRANT ", 6) != 0)
      continue;
    const char *on = strstr(g, " ON ");
    bool global = on && strncmp(on, " ON *.*", 7) == 0;
    if (!global)
      continue;
    if (strstr(g, "ALL PRIVILEGES"))
      all = true;
    if (strstr(g, "REPLICATION SLAVE") && !strstr(g, "REPLICATION SLAVE ADMIN"))
      slave = true;
    else if (strstr(g, "REPLICATION SLAVE,") || strstr(g, "REPLICATION SLAVE ON"))
      slave = true;
    if (strstr(g, "REPLICATION CLIENT") || strstr(g, "BINLOG MONITOR") || strstr(g, "SUPER"))
      client = true;
  }
  if (r)
    mysql_free_result(r);
  if (!all && (!slave || !client)) {
    u->host->error_make(u->ctx, err, DM_ERR_SYNC_PRECHECK, NULL,
                        "sync: the account `%s` on the source %s:%d lacks %s%s%s (GRANT "
                        "REPLICATION SLAVE, BINLOG MONITOR ON *.* TO ...)",
                        ep->user, ep->host, ep->port, slave ? "" : "REPLICATION SLAVE",
                        !slave && !client ? " and " : "",
                        client ? "" : "REPLICATION CLIENT (BINLOG MONITOR)");
    return -1;
  }
  return 0;
}
