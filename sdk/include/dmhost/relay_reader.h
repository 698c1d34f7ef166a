/*
 * dmhost SDK: the reader files of a relay folder (libdmhost-sdk.a), the one owner of their format.
 *
 * A reader of the relay log (the sync unit of a task; the host for that task before its sync
 * runs) registers the oldest relay file it may still read in <relay-dir>/readers/<reader>, whose
 * first line is "<sub-folder>/<binlog file>". The relay's purge never removes that file or
 * anything after it (docs/relay.md, "Readers").
 */
#ifndef DMHOST_RELAY_READER_H
#define DMHOST_RELAY_READER_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Write <relay_dir>/readers/<reader> atomically with file mode `mode` (dm_fs_write_atomic with
 * DM_FS_SYNC), creating the readers folder (dm_fs_dir_mode(mode)). reader, sub and file must be
 * plain names (dm_fs_name_ok): anything else is refused with DM_ERR_CONFIG_INVALID. 0, or -1 with
 * *err (DM_ERR_IO).
 */
int dm_relay_reader_register(const char *relay_dir, const char *reader, const char *sub,
                             const char *file, unsigned mode, dm_error *err);

/*
 * Read <relay_dir>/readers/<reader>: true with its sub-folder and binlog file, false when there is
 * no such file or its first line is not "<sub-folder>/<binlog file>" of two plain names.
 */
bool dm_relay_reader_read(const char *relay_dir, const char *reader, char *sub, size_t sub_len,
                          char *file, size_t file_len);

/*
 * Remove <relay_dir>/readers/<reader> (the reader is gone: the daemon's stop-task), so it no
 * longer keeps relay files from being purged. 0 (also when there was none), or -1 with *err:
 * DM_ERR_CONFIG_INVALID (reader not a plain name), DM_ERR_IO.
 */
int dm_relay_reader_remove(const char *relay_dir, const char *reader, dm_error *err);

#ifdef __cplusplus
}
#endif
#endif /* DMHOST_RELAY_READER_H */
