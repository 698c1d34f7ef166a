/* The binlog position of a point in time on a live source (binlog_find.h). */
#include "dmhost/binlog_find.h"

#include <ctype.h>
#include <mysql.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dmhost/db.h"
#include "dmhost/sdk.h"

/* ---- the time ---- */

/* "YYYY-MM-DD[ T]HH:MM:SS" at s, its fields into tm; the length read, or 0. */
static size_t bf_datetime(const char *s, struct tm *tm) {
  static const char shape[] = "dddd-dd-dd?dd:dd:dd";
  for (size_t i = 0; i < sizeof shape - 1; i++) {
    char c = s[i];
    if (shape[i] == 'd'   ? !isdigit((unsigned char)c)
        : shape[i] == '?' ? c != ' ' && c != 'T'
                          : c != shape[i])
      return 0;
  }
  *tm = (struct tm){0};
  tm->tm_year = atoi(s) - 1900;
  tm->tm_mon = atoi(s + 5) - 1;
  tm->tm_mday = atoi(s + 8);
  tm->tm_hour = atoi(s + 11);
  tm->tm_min = atoi(s + 14);
  tm->tm_sec = atoi(s + 17);
  if (tm->tm_mon > 11 || tm->tm_mday < 1 || tm->tm_mday > 31 || tm->tm_hour > 23 ||
      tm->tm_min > 59 || tm->tm_sec > 60)
    return 0;
  return sizeof shape - 1;
}

int dm_binlog_parse_start_time(struct st_mysql *conn, const char *text, int64_t *unix_s,
                               dm_error *err) {
  struct tm tm;
  size_t n = text ? bf_datetime(text, &tm) : 0;
  const char *zone = n ? text + n : NULL;
  long offset_s = 0;
  bool zoned = false;
  if (zone && *zone == 'Z' && zone[1] == '\0') {
    zoned = true;
  } else if (zone && (*zone == '+' || *zone == '-') && isdigit((unsigned char)zone[1]) &&
             isdigit((unsigned char)zone[2]) && zone[3] == ':' && isdigit((unsigned char)zone[4]) &&
             isdigit((unsigned char)zone[5]) && zone[6] == '\0') {
    zoned = true;
    offset_s = (atoi(zone + 1) * 60 + atoi(zone + 4)) * 60 * (*zone == '-' ? -1 : 1);
  } else if (zone && *zone != '\0') {
    zone = NULL;
  }
  if (!zone) {
    dm_error_set(err, DM_ERR_CONFIG_START_TIME, NULL,
                 "--start-time \"%.64s\" is not a time of DM's forms '2021-10-21 00:01:00', "
                 "'2021-10-21T00:01:00' or '2021-10-21T00:01:00+08:00'",
                 text ? text : "");
    return -1;
  }
  if (zoned) {
    *unix_s = (int64_t)timegm(&tm) - offset_s;
    return 0;
  }
  /* the source's time zone, as DM reads a time without an offset: the source converts it */
  char sql[96];
  snprintf(sql, sizeof sql, "SELECT UNIX_TIMESTAMP('%04d-%02d-%02d %02d:%02d:%02d')",
           tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  MYSQL_RES *res = NULL;
  MYSQL_ROW row;
  if (mysql_query(conn, sql) != 0 || !(res = mysql_store_result(conn))) {
    dm_db_error(conn, DM_DB_SOURCE, err, DM_ERR_DB_QUERY, "--start-time: %s", sql);
    return -1;
  }
  int rc = 0;
  if (!(row = mysql_fetch_row(res)) || !row[0]) {
    dm_error_set(err, DM_ERR_CONFIG_START_TIME, NULL,
                 "--start-time \"%.64s\" is no time of the source's time zone", text);
    rc = -1;
  } else {
    *unix_s = strtoll(row[0], NULL, 10);
  }
  mysql_free_result(res);
  return rc;
}

/* ---- the files ---- */

typedef struct bf_files {
  char (*name)[DM_POSITION_NAME_MAX];
  uint64_t *size;
  size_t n;
} bf_files;

static int bf_list(MYSQL *conn, bf_files *f, dm_error *err) {
  MYSQL_RES *res = NULL;
  if (mysql_query(conn, "SHOW BINARY LOGS") != 0 || !(res = mysql_store_result(conn))) {
    dm_db_error(conn, DM_DB_SOURCE, err, DM_ERR_DB_QUERY, "--start-time: SHOW BINARY LOGS");
    return -1;
  }
  size_t rows = (size_t)mysql_num_rows(res);
  f->name = calloc(rows ? rows : 1, sizeof *f->name);
  f->size = calloc(rows ? rows : 1, sizeof *f->size);
  if (!f->name || !f->size) {
    mysql_free_result(res);
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "--start-time: out of memory");
    return -1;
  }
  MYSQL_ROW row;
  while ((row = mysql_fetch_row(res)) && f->n < rows) {
    snprintf(f->name[f->n], DM_POSITION_NAME_MAX, "%s", row[0] ? row[0] : "");
    f->size[f->n++] = row[1] ? strtoull(row[1], NULL, 10) : 0;
  }
  mysql_free_result(res);
  if (f->n == 0) {
    dm_error_set(err, DM_ERR_CONFIG_START_TIME, NULL,
                 "--start-time: the source has no binary logs (is log-bin on?)");
    return -1;
  }
  return 0;
}

/* With `first`: the time file `name` began (its format description's), read from offset 4 and no
 * further. Otherwise: the first GTID event at or after unix_s from the start of `name` on, the
 * stream following into the next files (a transaction of that second may sit in a file that began
 * in the same second or in the one before): its file into at_file and offset into *at; -1 in *at
 * when the source's binlog ends first. at_file holds DM_POSITION_NAME_MAX bytes. */
static int bf_scan(const dm_binlog_stream_options *base, const char *name, bool first,
                   int64_t unix_s, int64_t *at, char *at_file, dm_error *err) {
  dm_binlog_stream_options o = *base;
  o.file = name;
  o.pos = 4;
  o.gtid = NULL;
  o.non_blocking = true;
  dm_binlog_reader *r = NULL;
  if (dm_binlog_reader_open_stream(&r, &o, err) < 0)
    return -1;
  *at = -1;
  int rc;
  dm_binlog_event ev;
  while ((rc = dm_binlog_reader_next(r, &ev, err)) == 1) {
    if (ev.artificial)
      continue;
    if (first) {
      if (strcmp(ev.file, name) != 0)
        break;
      if (ev.header.type == DM_BINLOG_FORMAT_DESCRIPTION) {
        *at = ev.header.timestamp;
        break;
      }
      continue;
    }
    if (ev.header.type == DM_BINLOG_GTID && (int64_t)ev.header.timestamp >= unix_s) {
      *at = (int64_t)ev.offset;
      snprintf(at_file, DM_POSITION_NAME_MAX, "%s", ev.file);
      break;
    }
  }
  dm_binlog_reader_close(r);
  return rc < 0 ? -1 : 0;
}

/* The GTID state at file:pos (MariaDB's BINLOG_GTID_POS; "" where the server has none). */
static int bf_gtid(MYSQL *conn, dm_position *p, dm_error *err) {
  char name[2 * DM_POSITION_NAME_MAX + 1], sql[sizeof name + 96];
  mysql_real_escape_string(conn, name, p->name, (unsigned long)strlen(p->name));
  snprintf(sql, sizeof sql, "SELECT BINLOG_GTID_POS('%s', %llu)", name, (unsigned long long)p->pos);
  MYSQL_RES *res = NULL;
  if (mysql_query(conn, sql) != 0 || !(res = mysql_store_result(conn))) {
    dm_db_error(conn, DM_DB_SOURCE, err, DM_ERR_DB_QUERY, "--start-time: %s", sql);
    return -1;
  }
  MYSQL_ROW row = mysql_fetch_row(res);
  snprintf(p->gtid, sizeof p->gtid, "%s", row && row[0] ? row[0] : "");
  mysql_free_result(res);
  return 0;
}

int dm_binlog_find_by_time(struct st_mysql *conn, const dm_binlog_stream_options *stream,
                           int64_t unix_s, dm_position *out, dm_binlog_time_where *where,
                           dm_error *err) {
  bf_files f = {0};
  int rc = -1;
  memset(out, 0, sizeof *out);
  if (bf_list(conn, &f, err) < 0)
    goto out;
  /* the last file that began before the time: a binary search on the files' start times (they
   * only grow), each one read to its format description. Strictly before: a file that began in
   * the time's own second may follow one that holds transactions of that second. */
  int64_t began;
  if (bf_scan(stream, f.name[0], true, unix_s, &began, NULL, err) < 0)
    goto out;
  if (unix_s < began) {
    snprintf(out->name, sizeof out->name, "%s", f.name[0]);
    out->pos = 4;
    *where = DM_BINLOG_TIME_BEFORE;
    rc = bf_gtid(conn, out, err);
    goto out;
  }
  size_t lo = 0, hi = f.n - 1; /* f.name[lo] began before the time, or is the first file */
  while (lo < hi) {
    size_t mid = lo + (hi - lo + 1) / 2;
    if (bf_scan(stream, f.name[mid], true, unix_s, &began, NULL, err) < 0)
      goto out;
    if (began < unix_s)
      lo = mid;
    else
      hi = mid - 1;
  }
  int64_t at;
  char at_file[DM_POSITION_NAME_MAX] = "";
  if (bf_scan(stream, f.name[lo], false, unix_s, &at, at_file, err) < 0)
    goto out;
  if (at < 0) { /* after the last transaction: the end of the last file, as SHOW BINARY LOGS said */
    snprintf(out->name, sizeof out->name, "%s", f.name[f.n - 1]);
    out->pos = f.size[f.n - 1];
    *where = DM_BINLOG_TIME_AFTER;
    rc = 0;
    goto out;
  }
  snprintf(out->name, sizeof out->name, "%s", at_file);
  out->pos = (uint64_t)at;
  *where = DM_BINLOG_TIME_IN_RANGE;
  rc = bf_gtid(conn, out, err);
out:
  free(f.name);
  free(f.size);
  return rc;
}
