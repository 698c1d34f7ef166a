/*
 * Time zones of replayed DDL (docs/sync.md, "Time zones").
 *
 * Row values need no zone: a TIMESTAMP is epoch seconds in the binlog, the sync prints it as UTC
 * text and its sessions read that text at '+00:00' (SYNC_SQL_SESSION), so every instant arrives
 * as it left, whatever zone the source, the target or the task names. DDL is another matter: a
 * literal such as `DEFAULT '2024-01-01 00:00:00'` of a TIMESTAMP column is read in the session's
 * zone, and the source's session may not have been at UTC. Its Query event says which zone it
 * ran at (the status variable Q_TIME_ZONE_CODE, written when the statement used the zone), so the
 * DDL runs at that zone on the target, as DM does:
 *   - a named zone or an offset: that one (a named zone needs the target's time zone tables);
 *   - "SYSTEM": the source's own system zone, as its offset from UTC read when the sync starts
 *     (DM's upstream time zone, the target's SYSTEM being another machine's); so a DDL of a
 *     SYSTEM session replayed across a daylight-saving change of the source's zone is an hour
 *     off, as in DM;
 *   - no zone in the event: the task's `timezone` when set (DM's downstream session zone), else
 *     '+00:00'; the server writes the zone whenever the statement read it, so this decides
 *     nothing a source wrote.
 * `timezone` is checked on the target when the sync starts, so a zone the target does not know
 * fails there, not at a DDL.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "sync.h"

/* What a zone's name may hold: an offset (+05:30) or a tz database name (Europe/Berlin,
 * Etc/GMT+5, America/Port-au-Prince). Nothing that needs quoting, so the name can be written
 * into SET as it is. */
bool sync_tz_valid(const char *tz) {
  size_t n = strlen(tz);
  if (n == 0 || n > SYNC_TZ_MAX)
    return false;
  for (size_t i = 0; i < n; i++) {
    char c = tz[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
          strchr("+-:/_", c)))
      return false;
  }
  return true;
}

/* Does the target know the zone? (a SET on a connection of the unit's, put back to UTC) */
static int sync_tz_check_target(sync_unit *u, MYSQL *tc, const char *tz, dm_error *err) {
  char sql[SYNC_TZ_MAX + 32];
  snprintf(sql, sizeof sql, "SET time_zone='%s'", tz);
  if (mysql_query(tc, sql) != 0) {
    u->host->error_make(u->ctx, err, DM_ERR_CONFIG_INVALID, mysql_error(tc),
                        "sync: setting `timezone` \"%s\" is not a time zone the target knows "
                        "(give an offset such as \"+08:00\", or load the target's time zone "
                        "tables: mariadb-tzinfo-to-sql /usr/share/zoneinfo | mariadb mysql)",
                        tz);
    return -1;
  }
  if (mysql_query(tc, "SET time_zone='+00:00'") != 0) {
    sync_db_error(u, tc, "sync: cannot put the session back at +00:00", err);
    return -1;
  }
  return 0;
}

int sync_tz_start(sync_unit *u, MYSQL *sc, MYSQL *tc, dm_error *err) {
  if (u->cfg.timezone[0] && sync_tz_check_target(u, tc, u->cfg.timezone, err) < 0)
    return -1;
  /* the source's system zone as an offset now: TIME_FORMAT keeps the sign of a negative one */
  static const char q[] = "SELECT TIME_FORMAT(TIMEDIFF(CONVERT_TZ(UTC_TIMESTAMP(),'+00:00',"
                          "'SYSTEM'), UTC_TIMESTAMP()), '%H:%i')";
  char off[16] = "";
  MYSQL_RES *r = NULL;
  MYSQL_ROW row;
  if (mysql_query(sc, q) == 0 && (r = mysql_store_result(sc)) && (row = mysql_fetch_row(r)) &&
      row[0])
    snprintf(off, sizeof off, "%s%s", row[0][0] == '-' ? "" : "+", row[0]);
  if (r)
    mysql_free_result(r);
  if (!sync_tz_valid(off)) {
    dm_db_error(sc, DM_DB_SOURCE, err, DM_ERR_DB_QUERY,
                "sync: cannot read the source's system time zone");
    return -1;
  }
  dm_strlcpy(u->tz_source_system, off, sizeof u->tz_source_system);
  return 0;
}

const char *sync_tz_of_event(const sync_unit *u, const dm_binlog_query *q, char *buf, size_t n) {
  if (!q->has_time_zone || q->time_zone.len == 0)
    return u->cfg.timezone[0] ? u->cfg.timezone : NULL;
  size_t len = q->time_zone.len < n - 1 ? q->time_zone.len : n - 1;
  memcpy(buf, q->time_zone.ptr, len);
  buf[len] = '\0';
  if (strcasecmp(buf, "SYSTEM") == 0)
    return u->tz_source_system;
  return buf;
}
