/*
 * Purging relay files: manual (`dmctl purge-relay -s SOURCE -f FILE`, run by the host while the
 * relay subtask is paused) and automatic (by age or free space, run by the relay unit itself).
 * This file and relay_purge.c depend on libc and the SDK only, so the relay unit compiles the same
 * source into itself: one implementation of "which files may go".
 *
 * A file is never removed when a reader still needs it: every reader keeps one file
 * <relay-dir>/readers/<reader-name> whose first line is "<sub-folder>/<binlog file>", the oldest
 * relay file it will read again (docs/relay.md). Nor is the file the relay writes (its relay.meta)
 * or anything after it.
 */
#ifndef DMH_RELAY_PURGE_H
#define DMH_RELAY_PURGE_H

#include <stddef.h>
#include <stdint.h>

#include "dmhost/error.h"

typedef struct dmh_relay_purge_opts {
  const char *relay_dir;
  /* Manual: remove the files before this one ("mysql-bin.000005", or "<sub-folder>/<file>" to
   * name the sub-folder; a bare name is looked up from the newest sub-folder back). NULL: auto. */
  const char *before;
  /* Auto: files last written more than this many hours ago (0: no age limit). */
  int64_t expires_hours;
  /* Auto: while the relay-dir's file system has less than this many GB free, the oldest files
   * (0: no space limit). */
  int64_t remain_space_gb;
} dmh_relay_purge_opts;

/* Returns 0 with the number of files removed, or -1 with *err: DM_ERR_NOT_FOUND (no such relay
 * file), DM_ERR_RELAY_PURGE_IN_USE (a reader or the relay itself still needs a file before
 * `before`; nothing is removed), DM_ERR_IO. */
int dmh_relay_purge(const dmh_relay_purge_opts *opts, int *removed, dm_error *err);

/* Where the relay writes: its newest sub-folder and the file its relay.meta names. 0, or -1 when
 * it has written nothing yet. */
int dmh_relay_current(const char *relay_dir, char *sub, size_t sub_len, char *file,
                      size_t file_len);

/* The sub-folder of relay file `file`: the newest sub-folder (in server-uuid.index) holding it,
 * else the newest one (where the relay will write it). 0, or -1 when there is no sub-folder yet. */
int dmh_relay_locate(const char *relay_dir, const char *file, char *sub, size_t len);

#endif /* DMH_RELAY_PURGE_H */
