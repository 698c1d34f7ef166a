/*
 * dmhost SDK: the layout of a relay folder (libdmhost-sdk.a), its one parser and writer.
 *
 *   <relay-dir>/server-uuid.index            sub-folders, oldest first, one per line
 *   <relay-dir>/<uuid>.000001/               one per upstream server (or diverged history)
 *   <relay-dir>/<uuid>.000001/mysql-bin.000042   the source's binlog files, named as upstream
 *   <relay-dir>/<uuid>.000001/relay.meta     binlog-name, binlog-pos, binlog-gtid (TOML subset)
 *   <relay-dir>/readers/<reader>             what a reader still needs (relay_reader.h)
 *
 * The relay unit writes the folder with these functions (dm_relay_index_add, dm_relay_meta_write),
 * the relay's purge (relay_purge.h) and the host read and prune it with them, and the reader of
 * events (relay_log.h) walks it with them: nobody else parses the index, lists a sub-folder's
 * binlog files or reads relay.meta.
 *
 * Every name read from the folder (an index line, relay.meta's binlog-name) or given to it from
 * outside (a uuid) must be a plain name (dm_fs_name_ok): anything else is refused with
 * DM_ERR_RELAY_BAD_NAME before it becomes part of a path. `relay_dir` itself is the user's
 * configuration and is used as given.
 *
 * Replaced files (the index, relay.meta) are written atomically (dm_fs_write_atomic): a reader
 * sees the old or the new content, never a torn one. Functions are safe to call from any thread;
 * two writers of one folder must be serialized by the caller (the relay unit is the one writer,
 * the purge runs inside it or while it is paused).
 */
#ifndef DMHOST_RELAY_FOLDER_H
#define DMHOST_RELAY_FOLDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "fs.h"
#include "position.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DM_RELAY_INDEX_NAME "server-uuid.index"
#define DM_RELAY_META_NAME "relay.meta"

/*
 * Check a name that is to become part of a relay path (len bytes, not necessarily
 * NUL-terminated): 0 when dm_fs_name_ok, else -1 with DM_ERR_RELAY_BAD_NAME, whose message is
 * "<what> \"<name>\" is not a plain file name (...); <then>" with the name escaped (bytes other
 * than printable ASCII as \xNN) and cut to fit. `what` says who found it where ("sync: the
 * sub-folder in server-uuid.index of /srv/relay"), `then` what was not done.
 */
int dm_relay_name_check(const char *what, const char *name, size_t len, const char *then,
                        dm_error *err);

/* ---- server-uuid.index ---- */

/* The sub-folders listed in the index, oldest first. */
typedef struct dm_relay_index {
  int n;
  char (*subs)[DM_FS_NAME_MAX + 1];
} dm_relay_index;

/*
 * Read <relay_dir>/server-uuid.index into *ix (free it with dm_relay_index_free). Empty lines
 * are skipped. No index file is an empty list (n 0: the relay has written nothing yet). Returns
 * 0, or -1 with *err: DM_ERR_RELAY_BAD_NAME (a line that is not a plain name; names the folder),
 * DM_ERR_IO, DM_ERR_NO_MEMORY; *ix is then empty.
 */
int dm_relay_index_read(const char *relay_dir, dm_relay_index *ix, dm_error *err);
void dm_relay_index_free(dm_relay_index *ix);

/* The newest sub-folder of the index into sub (len bytes; "" when there is none yet). 0, or -1
 * with *err as dm_relay_index_read. */
int dm_relay_index_last(const char *relay_dir, char *sub, size_t len, dm_error *err);

/* The place of sub-folder `sub` in the index (0: the oldest), or -1. */
int dm_relay_index_find(const dm_relay_index *ix, const char *sub);

/*
 * Replace the index with ix's lines, atomically, fsynced (file and folder), with file mode
 * `mode` (0: DM_FS_FILE_MODE). 0, or -1 with *err (DM_ERR_IO naming the step that failed).
 */
int dm_relay_index_write(const char *relay_dir, const dm_relay_index *ix, unsigned mode,
                         dm_error *err);

/*
 * A new sub-folder for upstream `uuid`: "<uuid>.NNNNNN" with NNNNNN one more than the highest
 * suffix in the index (DM: <uuid>.000001, <other>.000002, ...), created with
 * dm_fs_dir_mode(mode) (a symbolic link there is refused: DM_ERR_RELAY_LINK) and appended to the
 * index (written as dm_relay_index_write). Its name goes to sub (len bytes). 0, or -1 with *err:
 * DM_ERR_RELAY_BAD_NAME (the uuid makes no plain name), DM_ERR_RELAY_LINK, DM_ERR_IO,
 * DM_ERR_NO_MEMORY.
 */
int dm_relay_index_add(const char *relay_dir, const char *uuid, unsigned mode, char *sub,
                       size_t len, dm_error *err);

/*
 * Open the sub-folder `dir` (<relay-dir>/<sub>: the relay folder as configured, the sub-folder
 * beneath it, O_DIRECTORY, read-only) without following a link at <sub>, for dm_fs_open_beneath
 * of its files. A descriptor, or -1 with *err: DM_ERR_RELAY_BAD_NAME (<sub> not plain),
 * DM_ERR_RELAY_LINK (a symbolic link there), DM_ERR_IO (errno kept).
 */
int dm_relay_subdir_open(const char *dir, dm_error *err);

/* An open(2)/openat(2) failure (errno) of `path` as a relay error: ELOOP (a link refused by
 * O_NOFOLLOW) is DM_ERR_RELAY_LINK, anything else DM_ERR_IO; the message is "<who>: cannot
 * <what> <path>...". errno is kept. Returns -1. */
int dm_relay_open_error(dm_error *err, const char *who, const char *what, const char *path);

/* ---- binlog files of a sub-folder ---- */

/* The number of a relay binlog file name: the digits after its last '.' of a plain name
 * ("mysql-bin.000042": 42), or -1 when the name is no binlog file ("relay.meta", "x.tmp"). */
long dm_relay_file_number(const char *name);

typedef struct dm_relay_file {
  char name[DM_FS_NAME_MAX + 1];
  unsigned long num; /* dm_relay_file_number */
} dm_relay_file;

/*
 * The binlog files of <relay_dir>/<sub>, in the order the relay wrote them (by number, then
 * name: the relay keeps upstream's names, whose numbers have one width). *out is malloc'd (free
 * it; NULL when *n is 0). A sub-folder that does not exist has no files. 0, or -1 with *err
 * (DM_ERR_IO, DM_ERR_NO_MEMORY).
 */
int dm_relay_files(const char *relay_dir, const char *sub, dm_relay_file **out, int *n,
                   dm_error *err);

/* The first binlog file of the sub-folder after `after` (NULL or "": the first of all) into out
 * (len bytes): true, or false when there is none (or the folder cannot be listed). */
bool dm_relay_file_after(const char *relay_dir, const char *sub, const char *after, char *out,
                         size_t len);

/* The last (newest) binlog file of the sub-folder: true, or false when it has none. */
bool dm_relay_file_last(const char *relay_dir, const char *sub, char *out, size_t len);

/* ---- relay.meta ---- */

/* What the relay has written of a sub-folder: a transaction boundary whose bytes were handed to
 * the kernel before relay.meta was written (docs/relay.md). */
typedef struct dm_relay_meta {
  char binlog_name[DM_POSITION_NAME_MAX];
  uint64_t binlog_pos;
  char binlog_gtid[DM_POSITION_GTID_MAX];
} dm_relay_meta;

/*
 * Read <dir>/relay.meta (dir: a sub-folder's path, <relay-dir>/<sub>): DM's TOML subset,
 * `binlog-name = "..."`, `binlog-pos = N`, `binlog-gtid = "..."`, '#' comments. Returns 1 read,
 * 0 absent (a sub-folder the relay has written nothing into yet), -1 with *err:
 * DM_ERR_BINLOG_CORRUPT (a line that is not `key = value`, or binlog-name / binlog-pos missing:
 * names path and line), DM_ERR_RELAY_BAD_NAME (binlog-name not plain), DM_ERR_IO.
 */
int dm_relay_meta_read(const char *dir, dm_relay_meta *m, dm_error *err);

/* Replace <dir>/relay.meta with *m atomically (mode 0: DM_FS_FILE_MODE), fsynced when `sync`.
 * 0, or -1 with *err (DM_ERR_IO naming the step; DM_ERR_RELAY_LINK for a link in the way). */
int dm_relay_meta_write(const char *dir, const dm_relay_meta *m, unsigned mode, bool sync,
                        dm_error *err);

/* ---- where things are ---- */

/* Where the relay writes: its newest sub-folder and the file its relay.meta names. 0, or -1 when
 * it has written nothing yet (no index, no relay.meta) or the folder cannot be read. */
int dm_relay_current(const char *relay_dir, char *sub, size_t sub_len, char *file, size_t file_len);

/* The sub-folder of relay file `file`: the newest sub-folder (in the index) holding it, else the
 * newest one (where the relay will write it). 0, or -1 when there is no sub-folder yet. */
int dm_relay_locate(const char *relay_dir, const char *file, char *sub, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* DMHOST_RELAY_FOLDER_H */
