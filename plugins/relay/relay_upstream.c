/*
 * The relay's view of the source on a plain connection (not the binlog stream): its identity (DM's
 * server uuid), its position, its binlog files, and whether its history still continues the relay
 * log. A source whose history diverged (RESET MASTER, a restore from a backup, a binlog tail lost
 * in a crash) cannot be continued from relay.meta's position: the relay starts a new sub-folder,
 * as it does for another server.
 */
#include <inttypes.h>
#include <mysql.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmhost/db.h"
#include "dmhost/sdk.h"
#include "relay_internal.h"

bool relay_connect_again(relay_unit *u, double start, unsigned timeout_s, double attempt_start,
                         const dm_error *err) {
  double now = dm_clock_coarse_s();
  return err->code == DM_ERR_DB_CONNECT && now - attempt_start >= RELAY_CONNECT_ATTEMPT_S * 0.9 &&
         now - start < timeout_s && !relay_stopping(u);
}

MYSQL *relay_up_connect(relay_unit *u, unsigned timeout_s, dm_error *err) {
  const dm_db_endpoint *ep = u->host->source_db(u->ctx);
  dm_db_connect_opts co = {.who = "relay",
                           .side = DM_DB_SOURCE,
                           .connect_timeout_s = timeout_s < RELAY_CONNECT_ATTEMPT_S
                                                    ? timeout_s
                                                    : RELAY_CONNECT_ATTEMPT_S,
                           .read_timeout_s = timeout_s,
                           .write_timeout_s = timeout_s,
                           .endpoint_size = dm_host_db_endpoint_size(u->host, u->ctx)};
  double start = dm_clock_coarse_s();
  for (;;) { /* attempts of a second, up to timeout_s: see relay_connect_again */
    double attempt = dm_clock_coarse_s();
    MYSQL *c = dm_db_connect(ep, &co, err);
    if (c || !relay_connect_again(u, start, timeout_s, attempt, err))
      return c;
  }
}

/* One row of a query into up to n strings; 1 row, 0 none, -1 error. */
int relay_up_query_row(MYSQL *c, const char *sql, char out[][256], int n, dm_error *err) {
  if (mysql_query(c, sql) != 0) {
    dm_db_error(c, DM_DB_SOURCE, err, DM_ERR_DB_QUERY, "relay: `%s` failed on the source", sql);
    return -1;
  }
  MYSQL_RES *res = mysql_store_result(c);
  if (!res) {
    dm_db_error(c, DM_DB_SOURCE, err, DM_ERR_DB_QUERY, "relay: `%s` returned no result", sql);
    return -1;
  }
  MYSQL_ROW row = mysql_fetch_row(res);
  unsigned nf = mysql_num_fields(res);
  for (int i = 0; i < n; i++)
    dm_strlcpy(out[i], row && (unsigned)i < nf && row[i] ? row[i] : "", 256);
  mysql_free_result(res);
  return row ? 1 : 0;
}

/* DM's server uuid: @@server_uuid on MySQL; on MariaDB (which has none) "<domain>-<server_id>". */
int relay_up_uuid(MYSQL *c, char *uuid, size_t len, dm_error *err) {
  char v[3][256];
  if (relay_up_query_row(c, "SELECT @@version, @@server_id", v, 2, err) < 0)
    return -1;
  if (strstr(v[0], "MariaDB")) {
    char d[1][256];
    if (relay_up_query_row(c, "SELECT @@gtid_domain_id", d, 1, err) < 0)
      return -1;
    if (snprintf(uuid, len, "%s-%s", d[0], v[1]) >= (int)len) {
      dm_error_set(err, DM_ERR_DB_QUERY, NULL, "relay: the source's uuid %s-%s is too long", d[0],
                   v[1]);
      return -1;
    }
  } else {
    char d[1][256];
    if (relay_up_query_row(c, "SELECT @@server_uuid", d, 1, err) < 0)
      return -1;
    dm_strlcpy(uuid, d[0], len);
  }
  /* it names the relay sub-folder: a source (or a proxy) answering "../x" must not move it */
  return dm_relay_name_check("relay: the server uuid of the source", uuid, strlen(uuid),
                             "the relay stopped without writing it", err);
}

/* SHOW MASTER STATUS and the GTID position, into pos (the SDK's reading). */
int relay_up_master_status(MYSQL *c, dm_position *pos, dm_error *err) {
  int rc = dm_db_master_status(c, pos);
  if (rc < 0) {
    dm_db_error(c, DM_DB_SOURCE, err, DM_ERR_DB_QUERY,
                "relay: the source's binlog position (SHOW MASTER STATUS) could not be read");
    return -1;
  }
  if (rc == 1) {
    dm_error_set(err, DM_ERR_DUMP_NO_BINLOG, NULL,
                 "relay: the source has no binary log (SHOW MASTER STATUS is empty)");
    return -1;
  }
  return 0;
}

/* The first binlog file the source still has (SHOW BINARY LOGS). */
int relay_up_first_binlog(MYSQL *c, char *name, size_t len, dm_error *err) {
  char v[2][256];
  int rc = relay_up_query_row(c, "SHOW BINARY LOGS", v, 2, err);
  if (rc < 0)
    return -1;
  if (rc == 0) {
    dm_error_set(err, DM_ERR_DUMP_NO_BINLOG, NULL,
                 "relay: the source has no binary log (SHOW BINARY LOGS is empty)");
    return -1;
  }
  dm_strlcpy(name, v[0], len);
  return 0;
}

/* Why the history diverged, for the log: cut if long (it names GTID sets). */
__attribute__((format(printf, 3, 4))) static void up_why(char *why, size_t len, const char *fmt,
                                                         ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, len, fmt, ap);
  va_end(ap);
}

/* The number after the last '.' of a binlog file name (mysql-bin.000042: 42), -1 if none. */
static long up_file_seq(const char *name) {
  const char *dot = strrchr(name, '.');
  if (!dot || !dot[1])
    return -1;
  char *end;
  long n = strtol(dot + 1, &end, 10);
  return *end ? -1 : n;
}

/* Is every domain of `want` in `have` at the same (exact) or a later (!exact) sequence? Server
 * ids are not compared: the last GTID of a domain may come from any server of it. */
static bool up_gtid_covers(const dm_mariadb_gtid_set *have, const dm_mariadb_gtid_set *want,
                           bool exact) {
  if (exact && have->n != want->n)
    return false;
  for (int i = 0; i < want->n; i++) {
    int k = 0;
    while (k < have->n && have->d[k].domain != want->d[i].domain)
      k++;
    if (k == have->n || have->d[k].seq < want->d[i].seq ||
        (exact && have->d[k].seq != want->d[i].seq))
      return false;
  }
  return true;
}

/*
 * Does the source's history still hold the relay log up to relay.meta's position m (a transaction
 * boundary of the source's file m->binlog_name, with the GTID set m->binlog_gtid there)?
 *   - BINLOG_GTID_POS(file, pos) is the source's GTID position at that place: it must be the
 *     relay's set. It is NULL when the file is not there or pos is not an event boundary in it.
 *   - NULL, and the file is one of the source's: pos is not a boundary of the source's file of
 *     that name (or past its end): another history.
 *   - NULL, the file is gone and its number is above the source's last file: the numbering went
 *     back (RESET MASTER).
 *   - NULL, the file is gone and older than the source's first: purged; diverged only if the
 *     source's @@gtid_binlog_pos is behind the relay's set in some domain.
 * MariaDB only (MySQL has no BINLOG_GTID_POS; its uuid changes with the server). Returns 1 with
 * *why filled, 0 (continues), -1 when a query failed.
 */
int relay_up_diverged(MYSQL *c, const relay_meta *m, char *why, size_t why_len, dm_error *err) {
  why[0] = '\0';
  char v[2][256];
  if (relay_up_query_row(c, "SELECT @@version", v, 1, err) < 0)
    return -1;
  if (!strstr(v[0], "MariaDB") || !m->binlog_name[0])
    return 0;
  dm_mariadb_gtid_set mine, theirs;
  if (dm_mariadb_gtid_set_parse(&mine, m->binlog_gtid) < 0)
    return 0; /* nothing to compare with */
  char name_sql[2 * sizeof m->binlog_name + 1];
  mysql_real_escape_string(c, name_sql, m->binlog_name, (unsigned long)strlen(m->binlog_name));
  char sql[2 * sizeof name_sql + 128];
  uint64_t pos = m->binlog_pos < DM_BINLOG_MAGIC_LEN ? DM_BINLOG_MAGIC_LEN : m->binlog_pos;
  snprintf(sql, sizeof sql,
           "SELECT BINLOG_GTID_POS('%s', %" PRIu64 ") IS NULL, BINLOG_GTID_POS('%s', %" PRIu64 ")",
           name_sql, pos, name_sql, pos);
  if (relay_up_query_row(c, sql, v, 2, err) < 0)
    return -1;
  if (strcmp(v[0], "0") == 0) {
    /* At the start of a file (after a rotate, or a file fetched again from its start) the relay's
     * set is the one the file ends with, not the one it starts with: the file's presence is all
     * there is to check. */
    if (m->binlog_pos <= DM_BINLOG_MAGIC_LEN)
      return 0;
    if (dm_mariadb_gtid_set_parse(&theirs, v[1]) == 0 && !up_gtid_covers(&theirs, &mine, true)) {
      up_why(why, why_len,
             "at %s:%" PRIu64 " the relay log has GTID set \"%s\" but the source's binlog has "
             "\"%s\"",
             m->binlog_name, m->binlog_pos, m->binlog_gtid, v[1]);
      return 1;
    }
    return 0;
  }
  /* not a place in the source's binlog: which files does it have? */
  if (mysql_query(c, "SHOW BINARY LOGS") != 0) {
    dm_db_error(c, DM_DB_SOURCE, err, DM_ERR_DB_QUERY,
                "relay: `SHOW BINARY LOGS` failed on the source");
    return -1;
  }
  MYSQL_RES *res = mysql_store_result(c);
  if (!res) {
    dm_db_error(c, DM_DB_SOURCE, err, DM_ERR_DB_QUERY,
                "relay: `SHOW BINARY LOGS` returned no result");
    return -1;
  }
  char first[256] = "", last[256] = "";
  uint64_t size = 0;
  bool listed = false;
  MYSQL_ROW row;
  while ((row = mysql_fetch_row(res))) {
    if (!row[0])
      continue;
    if (!first[0])
      dm_strlcpy(first, row[0], sizeof first);
    dm_strlcpy(last, row[0], sizeof last);
    if (strcmp(row[0], m->binlog_name) == 0) {
      listed = true;
      size = row[1] ? strtoull(row[1], NULL, 10) : 0;
    }
  }
  mysql_free_result(res);
  if (listed) {
    up_why(why, why_len,
           "relay.meta's position %s:%" PRIu64 " is not an event boundary of the source's file "
           "of that name (%" PRIu64 " bytes)",
           m->binlog_name, m->binlog_pos, size);
    return 1;
  }
  long mine_seq = up_file_seq(m->binlog_name), last_seq = up_file_seq(last);
  if (last[0] && mine_seq >= 0 && last_seq >= 0 && mine_seq > last_seq) {
    up_why(why, why_len,
           "the relay log is at %s but the source's binlog ends with %s (its numbering went "
           "back: RESET MASTER?)",
           m->binlog_name, last);
    return 1;
  }
  if (relay_up_query_row(c, "SELECT @@gtid_binlog_pos", v, 1, err) < 0)
    return -1;
  if (dm_mariadb_gtid_set_parse(&theirs, v[0]) == 0 && !up_gtid_covers(&theirs, &mine, false)) {
    up_why(why, why_len,
           "the source's @@gtid_binlog_pos \"%s\" is behind the relay log's GTID set \"%s\" (at "
           "%s:%" PRIu64 ", a file the source no longer has; its first is %s)",
           v[0], m->binlog_gtid, m->binlog_name, m->binlog_pos, first);
    return 1;
  }
  return 0;
}
