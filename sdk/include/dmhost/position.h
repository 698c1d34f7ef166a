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
#include <stdint.h>

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
