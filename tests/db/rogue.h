/*
 * The rogue MySQL-protocol server (tests/db/rogue_server.py, issue 20) from a C test: started as a
 * child process on 127.0.0.1, its port read from its first line of output, stopped by its pid.
 * What it received or did is appended to a record file the test reads afterwards.
 */
#ifndef DMH_ROGUE_H
#define DMH_ROGUE_H

#include <stddef.h>
#include <sys/types.h>

typedef struct testdb_rogue {
  pid_t pid;
  int port;
  char record[256]; /* the record file (removed by testdb_rogue_stop) */
} testdb_rogue;

/* Starts `python3 rogue_server.py <mode> <target> --record <file> [extra...]` (extra: NULL-ended,
 * may be NULL) and waits up to 30 s for its port. 0, or -1 with a message on stderr. */
int testdb_rogue_start(testdb_rogue *r, const char *mode, const char *target,
                       const char *const *extra);
/* Stops it (SIGTERM, then waits) and removes the record file. */
void testdb_rogue_stop(testdb_rogue *r);
/* The record file's bytes (malloc'd, NUL added after *len bytes); "" when it does not exist. */
char *testdb_rogue_record(const testdb_rogue *r, size_t *len);
/* Waits up to 30 s for the record to hold these bytes ("[closed]\n": a connection of the
 * auth-switch mode has ended); 1 when it does. */
int testdb_rogue_wait(const testdb_rogue *r, const char *bytes);
/* Does the record hold these bytes? */
int testdb_rogue_saw(const testdb_rogue *r, const char *bytes);

#endif
