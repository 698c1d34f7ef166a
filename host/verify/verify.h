/*
 * `dmhost verify`: does the task's target hold what its source holds? (docs/verify.md)
 *
 * Every source table the task's block-allow list takes is compared with the target table its
 * routes name (a route merging several tables: their union against the one target table). Each
 * side is read in one consistent snapshot, by chunks of key ranges walked on the source
 * (pt-table-checksum's nibbling); per chunk each server computes COUNT(*) and the SUM of a CRC32
 * of each row's values, and a chunk that differs is compared row by row, each differing row
 * printed and, with a fix file, the statement that repairs the target written. A table without a
 * usable key is one chunk, its rows compared as a multiset of row checksums.
 *
 * The one-shot command line (cmd_verify.c) and `dmhost serve`'s `verify TASK` (dmctl verify and
 * its HTTP route: registry_verify.c, which runs this with a private fix file and answers its
 * statements) call dmh_verify_run; a running task is compared at its sync's checkpoint
 * (verify_checkpoint.c, opts.at_checkpoint); the continuous validator is the sync unit's
 * (docs/validation.md).
 */
#ifndef DMH_VERIFY_H
#define DMH_VERIFY_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>

#include "config.h"
#include "dmhost/error.h"

/* Exit codes of `dmhost verify`. */
enum {
  DMH_VERIFY_EQUAL = 0,  /* every table equal */
  DMH_VERIFY_DIFFER = 1, /* a difference found, no error */
  DMH_VERIFY_ERROR = 2,  /* usage, config, connection or a table that could not be compared */
};

#define DMH_VERIFY_CHUNK_ROWS_DEFAULT 10000
#define DMH_VERIFY_LIST_MAX                                                                        \
  100 /* rows listed per table (all are counted, all are in the fix file) */

typedef struct dmh_verify_opts {
  long chunk_rows;      /* rows per chunk on the source (>= 1) */
  long threads;         /* tables compared at once, each thread with a connection per side */
  const char *fix_path; /* --fix-sql: a new file (NULL: none) */
  bool json;            /* one JSON document on out, nothing else */
  bool progress;        /* a progress line on stderr (a terminal) */
  FILE *out;            /* the report (stdout) */
  /* A running task: each chunk's target read once the sync's checkpoint has passed the source's
   * snapshot of that chunk, a differing chunk and its differing rows checked again
   * (verify_checkpoint.c). false: one snapshot per side for the whole run. */
  bool at_checkpoint;
  double checkpoint_wait_s; /* how long a chunk waits for the checkpoint (0: the default) */
  int rechecks;             /* checks of a chunk or row before it is reported (0: the default) */
  /* One pass of a task whose sync does not move (paused): its checkpoint, read in the target's
   * snapshot, reported beside the source's (is the target behind?). Nothing when it has none. */
  bool show_checkpoint;
  /* Non-zero (read atomically): stop before the next chunk, the tables not compared failed with
   * DM_ERR_VERIFY_CANCELLED (a daemon's shutdown: dmh_registry_cancel_verifies). NULL: never. */
  const int *cancel;
} dmh_verify_opts;

#define DMH_VERIFY_CHECKPOINT_WAIT_DEFAULT 60.0
#define DMH_VERIFY_RECHECKS_DEFAULT 5

/* Compare task t's tables of source s (one of t's mysql-instances) with t's target. Returns an exit
 * code above; the report (text or JSON) is on opts->out, an error that stops the whole run also
 * in *err (printed by the caller). */
int dmh_verify_run(const dmh_task_config *t, const dmh_source_config *s,
                   const dmh_verify_opts *opts, dm_error *err);

/* --fix-sql's rules for a path given by the user: refused (DM_ERR_VERIFY_FIX_FILE) when a file or
 * link is at `path` or at "<path>.tmp". dmctl verify checks its --fix-sql before asking the daemon,
 * so a long run is not wasted on a name it will refuse. 0, or -1 with *err. */
int dmh_verify_fix_check(const char *path, dm_error *err);
/* Write `text` (the statements a daemon answered) into a new file `path` by the same rules as
 * --fix-sql: checked as above, written as "<path>.tmp" (dm_fs_tmp_open, 0600), synced and linked
 * into place never over a file (DM_FS_NO_REPLACE): whole or not at all. 0, or -1 with *err. */
int dmh_verify_fix_write(const char *path, const char *text, size_t len, dm_error *err);

/* `dmhost verify --source S --task T [--json] [--fix-sql FILE] [--chunk-rows N] [--threads 1]`
 * (host/cmd/cmd_verify.c): the exit code above. */
int dmh_verify_main(int argc, char **argv);

#endif /* DMH_VERIFY_H */
