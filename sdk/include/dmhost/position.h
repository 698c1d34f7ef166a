/*
 * dmhost SDK: binlog positions.
 *
 * A position is where a unit is in the source's binlog: a file name and an offset, and, when GTID
 * is on, the GTID set executed up to there. Units hand positions to the host through their status
 * (dm_status_sink.put_position); the host uses them to hand the dump's end position from load to
 * sync and to wait for the relay to catch up.
 */
#ifndef DMHOST_POSITION_H
#define DMHOST_POSITION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DM_POSITION_NAME_MAX 256
#define DM_POSITION_GTID_MAX 2048

typedef struct dm_position {
  char name[DM_POSITION_NAME_MAX]; /* binlog file name, e.g. "mysql-bin.000003"; "" if unknown */
  uint64_t pos;                    /* offset in that file */
  char gtid[DM_POSITION_GTID_MAX]; /* MariaDB "0-1-100,1-2-7" or MySQL "uuid:1-5"; "" if none */
} dm_position;

/* The index of a binlog file: the numeric suffix of "mysql-bin.000123" (123), or -1 when the name
 * has none. What DM's binlog_file metrics publish. */
long long dm_binlog_file_index(const char *name);

/* Is the position set at all (a file name or a GTID set)? */
bool dm_position_is_set(const dm_position *p);

/*
 * Compare two positions by file and offset: files by their numeric suffix, then offsets.
 * Returns <0, 0, >0. Positions with no file name compare equal to each other and below any other.
 */
int dm_position_compare_file(const dm_position *a, const dm_position *b);

/*
 * Does GTID set `have` contain everything in `want`? MariaDB sets (domain-server-seq, per domain
 * the highest seq) are compared per domain; MySQL sets (uuid:interval[:interval]) per uuid and
 * interval. Returns 1 yes, 0 no, -1 if either set does not parse.
 */
int dm_gtid_set_contains(const char *have, const char *want);

/*
 * A MariaDB GTID set ("0-1-100,1-2-7": per replication domain the last GTID, domain-server-seq),
 * the one parser and printer of MariaDB's form (the relay's and the sync's positions, and
 * dm_gtid_set_contains). Kept sorted by domain, as MariaDB prints @@gtid_binlog_pos. A plain value:
 * zero it (or parse into it) before use.
 *  - update: the GTID (domain, server, seq) replaces the domain's entry; -1 when the set already
 *    holds DM_MARIADB_GTID_DOMAINS other domains (more than any real topology; the set is kept).
 *  - parse: "" is the empty set; items separated by ',' (spaces and newlines allowed); -1 for any
 *    other text, a number out of range (domain and server are 32-bit) or too many domains.
 *  - format: "D-S-N,..." into out (len bytes); an item that does not fit is left out whole, with
 *    those after it.
 */
#define DM_MARIADB_GTID_DOMAINS 64
typedef struct dm_mariadb_gtid_set {
  int n;
  struct {
    uint32_t domain, server;
    uint64_t seq;
  } d[DM_MARIADB_GTID_DOMAINS];
} dm_mariadb_gtid_set;
int dm_mariadb_gtid_set_update(dm_mariadb_gtid_set *s, uint32_t domain, uint32_t server,
                               uint64_t seq);
int dm_mariadb_gtid_set_parse(dm_mariadb_gtid_set *s, const char *text);
void dm_mariadb_gtid_set_format(const dm_mariadb_gtid_set *s, char *out, size_t len);

/*
 * A MySQL GTID set ("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5:7,uuid2:1-3"): per server uuid (sid)
 * the transaction numbers (gno, from 1) executed. The one owner of that format in dmhost: the
 * binlog decoders (PREVIOUS_GTIDS), dm_gtid_set_contains and the sync unit's checkpoint use it.
 *
 * Kept canonical: sids sorted by their bytes (which is the order of their text), intervals sorted,
 * disjoint and never adjacent (1-3 and 4-5 are 1-5), as MySQL prints @@gtid_executed, so two sets
 * that hold the same GTIDs format to the same text. Formatted as DM stores it in a checkpoint's
 * binlog_gtid: lower-case uuids, "," between them, no spaces.
 *
 * Start from a zeroed struct (DM_MYSQL_GTID_SET_INIT); dm_mysql_gtid_set_free gives the memory back
 * and leaves it empty and usable. Not thread-safe (one owner at a time).
 */
typedef struct dm_gtid_interval {
  uint64_t lo, hi; /* inclusive: 1 <= lo <= hi */
} dm_gtid_interval;

typedef struct dm_mysql_gtid_sid {
  uint8_t sid[16];
  uint32_t n, cap;
  dm_gtid_interval *iv;
} dm_mysql_gtid_sid;

typedef struct dm_mysql_gtid_set {
  uint32_t n, cap;
  dm_mysql_gtid_sid *sids;
} dm_mysql_gtid_set;

#define DM_MYSQL_GTID_SET_INIT                                                                     \
  { 0, 0, NULL }

void dm_mysql_gtid_set_free(dm_mysql_gtid_set *s);

/*
 * Replace *s by the set in `text`: items "uuid:lo[-hi][:lo[-hi]...]" separated by ",", blanks and
 * new lines around them allowed ("" is the empty set); a uuid is 32 hex digits, with or without
 * its four dashes, in either case; overlapping or unsorted intervals are merged. Returns 0, or -1
 * with err (NULL allowed): DM_ERR_BINLOG_GTID_SET (the text is not a MySQL GTID set: says where;
 * *s is then empty), DM_ERR_NO_MEMORY.
 */
int dm_mysql_gtid_set_parse(dm_mysql_gtid_set *s, const char *text, dm_error *err);

/* As text (see above) into buf. Returns the length, or -1 if buf is too small (buf is then ""). */
int dm_mysql_gtid_set_format(const dm_mysql_gtid_set *s, char *buf, size_t len);

/* Add one GTID (gno >= 1), or the interval [lo, hi]. Returns 0, or -1 (out of memory, or a gno of
 * 0 / a reversed interval: nothing changes). */
int dm_mysql_gtid_set_add(dm_mysql_gtid_set *s, const uint8_t sid[16], uint64_t gno);
int dm_mysql_gtid_set_add_range(dm_mysql_gtid_set *s, const uint8_t sid[16], uint64_t lo,
                                uint64_t hi);

/* *s becomes *s ∪ *other. Returns 0, or -1 (out of memory: *s holds part of the union). */
int dm_mysql_gtid_set_union(dm_mysql_gtid_set *s, const dm_mysql_gtid_set *other);

/* Does `have` hold every GTID of `want`? */
bool dm_mysql_gtid_set_contains(const dm_mysql_gtid_set *have, const dm_mysql_gtid_set *want);

/* Does `have` hold the one GTID sid:gno? */
bool dm_mysql_gtid_set_has(const dm_mysql_gtid_set *have, const uint8_t sid[16], uint64_t gno);

/* Text of a sid: "3e11fa47-71ca-11e1-9e33-c80aa9429562" (36 characters + NUL in buf[37]). */
void dm_mysql_sid_format(const uint8_t sid[16], char buf[37]);

/*
 * Has position `reached` got to `target`? With a GTID set on both sides, by GTID containment;
 * else by file and offset. This is the test the host's relay catch-up wait uses.
 */
bool dm_position_reached(const dm_position *reached, const dm_position *target);

/* Formats "(name, pos)" as DM prints a binlog location. Returns buf. */
const char *dm_position_format(const dm_position *p, char *buf, uint32_t len);

#ifdef __cplusplus
}
#endif
#endif /* DMHOST_POSITION_H */
