/*
 * Connections to the target: the load session, error mapping, quoting, and the privilege check.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <errmsg.h>
#include <mysqld_error.h>

#include <dmhost/db.h>

#include "dmhost/grants.h"
#include "load.h"

/* One statement for the whole session set-up (docs/dump-format.md, "Session settings").
 * NO_DIR_IN_CREATE: a schema file cannot choose where the target writes table files (load_check.c
 * refuses DATA/INDEX DIRECTORY first; this holds should a form slip past it). */
static const char load_db_session_sql[] =
    "SET NAMES binary, time_zone = '+00:00', sql_mode = 'NO_AUTO_VALUE_ON_ZERO,NO_DIR_IN_CREATE', "
    "foreign_key_checks = 0, unique_checks = 0";

MYSQL *load_db_connect(load_unit *u, dm_error *err) {
  const dm_db_endpoint *ep = u->host->target_db(u->ctx);
  /* The client takes any statement the server may (1 GiB, the server's most); the server's own
   * max_allowed_packet is the limit (load_db_max_packet). */
  dm_db_connect_opts o = {.who = "load",
                          .side = DM_DB_TARGET,
                          .read_timeout_s = 3600,
                          .write_timeout_s = 3600,
                          .max_allowed_packet = 1ul << 30,
                          .client_flags = u->fence ? DM_DB_FENCE_CLIENT_FLAGS : 0,
                          .endpoint_size = dm_host_db_endpoint_size(u->host, u->ctx)};
  MYSQL *c = dm_db_connect(ep, &o, err);
  if (!c)
    return NULL;
  if (mysql_real_query(c, load_db_session_sql, sizeof load_db_session_sql - 1) != 0) {
    load_db_error(u, c, "load: cannot set up the session on the target", err);
    mysql_close(c);
    return NULL;
  }
  if (dm_db_session_apply(c, ep, o.endpoint_size, "load", DM_DB_TARGET, err) != 0) {
    mysql_close(c);
    return NULL;
  }
  dm_conn_kill_add(u->conns, (int)mysql_get_socket(c));
  return c;
}

void load_db_close(load_unit *u, MYSQL *c) {
  if (!c)
    return;
  dm_conn_kill_remove(u->conns, (int)mysql_get_socket(c));
  mysql_close(c);
}

int load_db_source_collations(load_unit *u, dm_collations **out, dm_error *err) {
  const dm_db_endpoint *ep = u->host->source_db(u->ctx);
  dm_db_connect_opts o = {.who = "load",
                          .side = DM_DB_SOURCE,
                          .read_timeout_s = 60,
                          .write_timeout_s = 60,
                          .endpoint_size = dm_host_db_endpoint_size(u->host, u->ctx)};
  MYSQL *c = dm_db_connect(ep, &o, err);
  if (!c)
    return -1;
  dm_conn_kill_add(u->conns, (int)mysql_get_socket(c));
  int rc = dm_db_session_apply(c, ep, o.endpoint_size, "load", DM_DB_SOURCE, err);
  if (rc == 0)
    rc = dm_collations_read(c, "load (collation_compatible: strict)", out, err);
  dm_conn_kill_remove(u->conns, (int)mysql_get_socket(c));
  mysql_close(c);
  return rc;
}

void load_db_error(load_unit *u, MYSQL *c, const char *what, dm_error *err) {
  const dm_db_endpoint *ep = u->host->target_db(u->ctx);
  dm_db_error(c, DM_DB_TARGET, err, DM_ERR_DB_QUERY, "%s (target %s:%d)", what,
              ep->host ? ep->host : "", ep->port);
}

int load_db_exec(load_unit *u, MYSQL *c, const char *sql, size_t len, const char *what,
                 dm_error *err) {
  if (mysql_real_query(c, sql, len) == 0) {
    MYSQL_RES *r = mysql_store_result(c);
    if (r)
      mysql_free_result(r);
    return 0;
  }
  load_db_error(u, c, what, err);
  return -1;
}

int load_db_max_packet(load_unit *u, MYSQL *c, uint64_t *max_stmt, dm_error *err) {
  static const char q[] = "SELECT @@max_allowed_packet";
  MYSQL_RES *r = NULL;
  MYSQL_ROW row;
  if (mysql_real_query(c, q, sizeof q - 1) != 0 || !(r = mysql_store_result(c)) ||
      !(row = mysql_fetch_row(r)) || !row[0]) {
    if (r)
      mysql_free_result(r);
    load_db_error(u, c, "load: cannot read the target's max_allowed_packet", err);
    return -1;
  }
  uint64_t v = strtoull(row[0], NULL, 10);
  mysql_free_result(r);
  /* A COM_QUERY packet is the statement and one command byte. */
  *max_stmt = v > 1 ? v - 1 : 1;
  return 0;
}

int load_db_literal(MYSQL *c, const char *s, char *out, size_t out_len) {
  size_t n = strlen(s);
  if (out_len < 2 * n + 3)
    return -1;
  out[0] = '\'';
  unsigned long m = mysql_real_escape_string(c, out + 1, s, (unsigned long)n);
  out[1 + m] = '\'';
  out[2 + m] = '\0';
  return 0;
}

/* ---- privileges ---- */

/* Privileges are read by the SDK (dmhost/grants.h: one reading for the units and the host's
 * precheck). */
int load_db_check_privileges(load_unit *u, MYSQL *c, const char *const *schemas, int n,
                             dm_error *err) {
  if (mysql_query(c, "SHOW GRANTS FOR CURRENT_USER()") != 0) {
    load_db_error(u, c, "load: cannot read the user's grants (SHOW GRANTS)", err);
    return -1;
  }
  MYSQL_RES *r = mysql_store_result(c);
  if (!r) {
    load_db_error(u, c, "load: cannot read the user's grants (SHOW GRANTS)", err);
    return -1;
  }
  uint32_t *per = calloc((size_t)n + 1, sizeof *per);
  if (!per) {
    mysql_free_result(r);
    u->host->error_make(u->ctx, err, DM_ERR_NO_MEMORY, NULL, "load: no memory");
    return -1;
  }
  bool has_role = false;
  MYSQL_ROW row;
  while ((row = mysql_fetch_row(r)) != NULL) {
    if (!row[0])
      continue;
    has_role |= dm_grant_is_role(row[0]);
    for (int i = 0; i < n; i++)
      per[i] |= dm_grant_line(row[0], schemas[i]);
  }
  mysql_free_result(r);

  /* What each schema needs: the meta schema (index 0) SELECT/INSERT/UPDATE/CREATE, the scratch
   * schema (1) CREATE/DROP/SELECT, data schemas CREATE/INSERT/SELECT plus DELETE for REPLACE and
   * ALTER for deferred secondary keys. */
  char missing[DM_ERROR_MESSAGE_MAX] = "";
  size_t mlen = 0;
  for (int i = 0; i < n; i++) {
    uint32_t need = i == 0   ? DM_PRIV_SELECT | DM_PRIV_INSERT | DM_PRIV_UPDATE | DM_PRIV_CREATE
                    : i == 1 ? DM_PRIV_SELECT | DM_PRIV_CREATE | DM_PRIV_DROP
                             : DM_PRIV_SELECT | DM_PRIV_INSERT | DM_PRIV_CREATE |
                                   (u->cfg.on_dup == LOAD_DUP_REPLACE ? DM_PRIV_DELETE : 0) |
                                   (u->cfg.defer_keys ? DM_PRIV_ALTER : 0);
    uint32_t lack = need & ~per[i];
    if (!lack)
      continue;
    bool dup = false; /* a schema listed twice (a route onto the meta schema) */
    for (int k = 0; k < i && !dup; k++)
      dup = strcmp(schemas[k], schemas[i]) == 0 && (need & ~per[k]) == lack;
    if (dup || mlen + 8 >= sizeof missing)
      continue;
    char names[160];
    mlen +=
        (size_t)snprintf(missing + mlen, sizeof missing - mlen, "%s%s on `%s`", mlen ? "; " : "",
                         dm_grant_names(lack, names, sizeof names), schemas[i]);
    if (mlen >= sizeof missing)
      mlen = sizeof missing - 1;
  }
  free(per);
  if (mlen == 0)
    return 0;
  if (has_role) {
    u->host->logf(u->ctx, DM_LOG_WARN,
                  "load: the target user seems to lack %s, but it has roles the check cannot "
                  "see into; going on",
                  missing);
    return 0;
  }
  const dm_db_endpoint *ep = u->host->target_db(u->ctx);
  u->host->error_make(u->ctx, err, DM_ERR_DB_PRIVILEGE, NULL,
                      "load: user `%s` on the target %s:%d lacks %s", ep->user, ep->host, ep->port,
                      missing);
  err->scope = DM_SCOPE_DOWNSTREAM;
  return -1;
}
