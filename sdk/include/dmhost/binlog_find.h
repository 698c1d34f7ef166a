/*
 * dmhost SDK: the binlog position of a point in time on a live source (DM's --start-time, its
 * remote BinlogPosFinder). libdmhost-sdk.a; needs libmariadb, as the stream reader does.
 *
 * The source's binlog files are searched by the time each began (its format description's
 * timestamp), then read with a non-blocking binlog dump from the last one that began before the
 * time (strictly: a file begun in the time's own second may follow one holding transactions of
 * that second), on into the next files, up to the first transaction (a GTID event) that began at
 * or after it. Memory stays one event:
 * the files are streamed, never kept. The position found is a transaction's start, with the GTID
 * state there (MariaDB's BINLOG_GTID_POS), so a sync started from it neither misses nor splits a
 * transaction.
 */
#ifndef DMHOST_BINLOG_FIND_H
#define DMHOST_BINLOG_FIND_H

#include <stdint.h>

#include "binlog.h"
#include "position.h"

#ifdef __cplusplus
extern "C" {
#endif

struct st_mysql;

typedef enum dm_binlog_time_where {
  DM_BINLOG_TIME_IN_RANGE = 0, /* the first transaction that began at or after the time */
  DM_BINLOG_TIME_BEFORE = 1,   /* earlier than the oldest binlog kept: its start (DM warns) */
  DM_BINLOG_TIME_AFTER = 2,    /* later than the last transaction: no position (DM refuses) */
} dm_binlog_time_where;

/*
 * A time given as DM's --start-time ('2006-01-02 15:04:05', '2006-01-02T15:04:05', either with an
 * offset such as +08:00 or Z) into seconds since the epoch. Without an offset it is a time of the
 * source's time zone, as DM reads it: `conn` (the source) converts it (UNIX_TIMESTAMP). 0, or -1
 * with err (DM_ERR_CONFIG_START_TIME: not one of those forms; DM_ERR_DB_QUERY).
 */
int dm_binlog_parse_start_time(struct st_mysql *conn, const char *text, int64_t *unix_s,
                               dm_error *err);

/*
 * The position of `unix_s` on the source: `conn` answers SHOW BINARY LOGS and BINLOG_GTID_POS;
 * `stream` (its source, server_id, timeouts; start and non_blocking are set here) reads the files.
 * out gets the file, offset and (MariaDB) the GTID state there; *where says which case. With
 * DM_BINLOG_TIME_AFTER, out is the end of the last file. 0, or -1 with err (the stream's or the
 * query's error).
 */
int dm_binlog_find_by_time(struct st_mysql *conn, const dm_binlog_stream_options *stream,
                           int64_t unix_s, dm_position *out, dm_binlog_time_where *where,
                           dm_error *err);

#ifdef __cplusplus
}
#endif

#endif /* DMHOST_BINLOG_FIND_H */
