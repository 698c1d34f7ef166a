/*
 * dmhost SDK: reading a relay folder (libdmhost-sdk.a), the one owner of its layout for readers.
 *
 * A relay folder (docs/relay.md) is what the relay unit writes for one source:
 *
 *   <relay-dir>/server-uuid.index        sub-folders, oldest first, one per line
 *   <relay-dir>/<uuid>.000001/           one per upstream server (or diverged history)
 *   <relay-dir>/<uuid>.000001/mysql-bin.000042   the source's binlog files, named as upstream
 *   <relay-dir>/readers/<reader>         what a reader still needs (relay_reader.h)
 *
 * Files keep the upstream names and offsets, so a position in the source's binlog (a sync
 * checkpoint's file and offset) is a position in the relay folder. dm_relay_log reads the folder
 * from such a position as one stream of events: it finds the sub-folder holding the file, reads it
 * with the SDK's following file reader (binlog.h: an event is returned only once all its bytes are
 * in the file, CRC32 checked), crosses to the next file after the file's ROTATE, and to the first
 * file of the next sub-folder when the relay moved there (an upstream switch), waiting for the
 * relay to write what is not there yet.
 *
 * Events come as they are in the files: every FORMAT_DESCRIPTION (the first event of each file
 * read from its start: offset 4), ROTATE (the last of a file the relay moved past), GTID_LIST,
 * ... is returned, none is swallowed or made up. ev->file names the file an event is in, so a
 * consumer tells a file boundary by ev->file changing (the ROTATE carries the old file's name and
 * its header.next_pos is the old file's end; the next event is the new file's format description
 * at offset 4). A consumer that tracks positions as (ev->file, ev->header.next_pos) thus follows
 * the relay across files exactly as it follows the source's stream. The positions of two
 * sub-folders are not comparable (a new upstream may start again at mysql-bin.000001).
 *
 * What is refused, never followed (each coded, not resumable): a name that is not plain
 * (dm_fs_name_ok: an index line, the start file, a file named by a ROTATE) is
 * DM_ERR_RELAY_BAD_NAME; a symbolic link (or anything but a folder / regular file) where the relay
 * keeps a sub-folder or binlog file is DM_ERR_RELAY_LINK. A start file the folder no longer has
 * (purged, or the relay started after it) is DM_ERR_BINLOG_PURGED.
 *
 * Thread-safety: a dm_relay_log is used by one thread at a time, except dm_relay_log_interrupt,
 * which may be called from any thread.
 */
#ifndef DMHOST_RELAY_LOG_H
#define DMHOST_RELAY_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "binlog.h"
#include "error.h"
#include "position.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dm_relay_log dm_relay_log;

typedef struct dm_relay_log_options {
  /* While the reader waits for the relay to write more (the next event, the next file, the start
   * file): the same meaning as dm_binlog_file_options' wait/wait_arg/poll_ms (binlog.h). wait is
   * called with the path and offset awaited; true: look again, false: stop, and
   * dm_relay_log_next returns 0 with nothing consumed (a later call continues at the same place).
   * NULL wait: sleep poll_ms (default 50) between looks and never stop (only an interrupt does).
   * A wait that says stop after one short look (host->wait_stop(ctx, 5) then false) makes the
   * reader a non-blocking one: 0 means "nothing to read right now". */
  dm_binlog_wait_fn wait;
  void *wait_arg;
  uint32_t poll_ms;
  bool no_verify_checksum; /* skip CRC32 checks (dm_binlog_file_options.no_verify_checksum) */
  /* When set (a plain name, e.g. the task name): registered as a reader (dm_relay_reader_register,
   * relay_reader.h) at the file of `from` on open and at the file of each dm_relay_log_checkpoint,
   * so the relay's purge keeps what this reader still needs; reader files are written with
   * file_mode (0: DM_FS_FILE_MODE). A failure to register fails the open; when the start file is
   * not written yet at open, it is registered once found, and a failure then is left to the next
   * dm_relay_log_checkpoint (which retries and reports it). NULL: nothing is registered. */
  const char *reader;
  unsigned file_mode;
} dm_relay_log_options;

/*
 * Open <relay_dir> at `from` (a binlog file name and the offset of an event boundary in it, as a
 * sync checkpoint holds it; 4 or less: the file's start, its format description first; from->gtid
 * is not used). Finds the sub-folder holding that file (the newest in server-uuid.index that has
 * it). A file the relay has not written yet (no index or sub-folder yet, a later file of the same
 * binlog, or the relay's newest file still without its magic and format description: the relay
 * creates a file, then writes them) is not an error: the open succeeds and dm_relay_log_next
 * waits for it (through opts->wait). Returns 0 and *out, or -1 with *err:
 *   DM_ERR_BINLOG_PURGED   the folder has no such file and it is not one still to come (purged,
 *                          or the relay started after it): names the folder and the position;
 *   DM_ERR_RELAY_BAD_NAME  from->name or a line of server-uuid.index is not a plain name;
 *   DM_ERR_RELAY_LINK      the sub-folder or the file is a symbolic link (or not a folder /
 *                          regular file): not followed;
 *   DM_ERR_CONFIG_INVALID  from has no file name (a GTID-only position cannot be found in files),
 *                          or opts->reader is not a plain name (dm_relay_reader_register);
 *   DM_ERR_BINLOG_CORRUPT, DM_ERR_BINLOG_INCOMPLETE, DM_ERR_IO   as dm_binlog_reader_open_file
 *                          (a short file the relay has moved past stays short: INCOMPLETE), and
 *                          DM_ERR_IO when the reader file cannot be written;
 *   DM_ERR_NO_MEMORY.
 * opts may be NULL (defaults: no wait callback, poll 50 ms, checksums verified, no reader).
 * relay_dir, opts->reader are copied.
 */
int dm_relay_log_open(const char *relay_dir, const dm_position *from,
                      const dm_relay_log_options *opts, dm_relay_log **out, dm_error *err);

/*
 * The next event. Returns 1 with *ev filled (ev->file / ev->offset name where it is; raw bytes
 * valid until the next call on r), 0 when stopped (opts->wait said stop, or interrupted: nothing
 * consumed, a later call continues at the same place unless interrupted), -1 with *err (the
 * errors of dm_relay_log_open for the files it moves to, and of dm_binlog_reader_next:
 * DM_ERR_BINLOG_CORRUPT, DM_ERR_BINLOG_UNSUPPORTED, DM_ERR_IO); after -1 only close is useful.
 *
 * Crosses to the next file and the next sub-folder itself, following the relay as it writes:
 * after a file's ROTATE, the file it names in the same sub-folder (waited for); in a file with
 * no ROTATE (the start position was past it, or the relay moved to a new sub-folder), about
 * every 500 ms it looks whether the relay wrote a later file in the sub-folder (then this one is
 * complete: go on there) or a newer sub-folder (the first file there). Events are returned as
 * they are in the files (see the top of this header).
 */
int dm_relay_log_next(dm_relay_log *r, dm_binlog_event *ev, dm_error *err);

/* The format description in force for the file being read (the one of the last event returned;
 * before the first file is open, a default v4 format with CRC32). Never NULL. */
const dm_binlog_format *dm_relay_log_format(const dm_relay_log *r);

/* Where the next event starts: the file being read and the offset after the last event returned
 * (before any: the start position). out->gtid is left "". */
void dm_relay_log_position(const dm_relay_log *r, dm_position *out);

/* The sub-folder being read ("" while the start file is still awaited). Valid until the next
 * call on r. */
const char *dm_relay_log_subdir(const dm_relay_log *r);

/* Is the reader still waiting for its start file (the relay has not written it yet)? For a
 * caller that says so in its log once. */
bool dm_relay_log_waiting(const dm_relay_log *r);

/*
 * The consumer's checkpoint moved to `pos` (a file this reader has read, and an offset): with
 * opts->reader set, registers that file (in the sub-folder it was read from) as what this reader
 * still needs, when it differs from the one registered last. 0 (also without opts->reader, or
 * when pos has no file name), or -1 with *err from dm_relay_reader_register (DM_ERR_IO: retried
 * at the next checkpoint; DM_ERR_CONFIG_INVALID, a reader name that can never work: reported
 * once per file, not retried for it).
 */
int dm_relay_log_checkpoint(dm_relay_log *r, const dm_position *pos, dm_error *err);

/* From any thread: a blocked or later dm_relay_log_next returns 0 within one poll (or one call
 * of opts->wait), and every later one too. For a unit's kill. Only sets a flag: safe while the
 * reading thread moves to another file. */
void dm_relay_log_interrupt(dm_relay_log *r);

/* Close and free (NULL is fine). Does not remove the reader file (the reader's owner does, e.g.
 * the daemon's stop-task). */
void dm_relay_log_close(dm_relay_log *r);

#ifdef __cplusplus
}
#endif
#endif /* DMHOST_RELAY_LOG_H */
