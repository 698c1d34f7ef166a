/*
 * dmhost SDK: purging relay files (libdmhost-sdk.a). Purge stays with the relay: the relay unit
 * runs the automatic purge (by age or free space) itself, and the host runs the manual one
 * (`dmctl purge-relay -s SOURCE -f FILE`) while the relay subtask is paused; both call this one
 * implementation of "which files may go". Not for other units: a reader registers what it still
 * needs (relay_reader.h, or dm_relay_log_options.reader) and lets the relay purge.
 *
 * Files are ordered by (the sub-folder's place in server-uuid.index, the binlog file's number).
 * Never removed: the file the newest sub-folder's relay.meta names (the relay writes it) and
 * anything after it, and each registered reader's file (<relay-dir>/readers/<reader>) and
 * anything after it; a reader file naming a sub-folder that is no longer in the index protects
 * nothing. Sub-folders left with no binlog file (but the newest) are removed with their index
 * line (the index is rewritten with the mode it had).
 */
#ifndef DMHOST_RELAY_PURGE_H
#define DMHOST_RELAY_PURGE_H

#include <stdint.h>

#include "error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dm_relay_purge_opts {
  const char *relay_dir;
  /* Manual: remove the files before this one ("mysql-bin.000005", or "<sub-folder>/<file>" to
   * name the sub-folder; a bare name is looked up from the newest sub-folder back). NULL: auto. */
  const char *before;
  /* Auto: files last written more than this many hours ago (0: no age limit). */
  int64_t expires_hours;
  /* Auto: while the relay-dir's file system has less than this many GB free, the oldest files
   * (0: no space limit). */
  int64_t remain_space_gb;
} dm_relay_purge_opts;

/*
 * Purge as opts say. Returns 0 with the number of files removed in *removed, or -1 with *err:
 * DM_ERR_NOT_FOUND (manual: no such relay file), DM_ERR_RELAY_PURGE_IN_USE (manual: a reader or
 * the relay itself still needs a file before `before`; names it; nothing is removed),
 * DM_ERR_RELAY_BAD_NAME (an index line that is not a plain name; nothing is removed), DM_ERR_IO,
 * DM_ERR_NO_MEMORY. Files removed before an I/O error stay removed (*removed counts them).
 */
int dm_relay_purge(const dm_relay_purge_opts *opts, int *removed, dm_error *err);

#ifdef __cplusplus
}
#endif
#endif /* DMHOST_RELAY_PURGE_H */
