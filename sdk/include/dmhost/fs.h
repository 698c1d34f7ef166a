/*
 * dmhost SDK: the filesystem kit (libdmhost-sdk.a). One implementation of what the host and every
 * unit do with files: check a name that came from outside, create folders, replace a file
 * atomically, open a file inside a folder without leaving it.
 *
 * Modes: everything dmhost writes (dump files, relay files, checkpoints, state) holds the source's
 * data or a password, so files are created DM_FS_FILE_MODE (0600) and folders DM_FS_DIR_MODE (0700)
 * unless the user widened it (`file-mode` of the task or source file, handed to units by the host
 * service file_mode). The process umask still applies on top, as for any open(2).
 *
 * Every function returns 0 (or a descriptor) on success and -1 with errno set on failure; the
 * caller names the path and the step in its own error. None allocates memory that outlives the
 * call; all are safe to call from any thread.
 */
#ifndef DMHOST_FS_H
#define DMHOST_FS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DM_FS_FILE_MODE 0600 /* files: the owner only */
#define DM_FS_DIR_MODE 0700  /* folders: the owner only */
#define DM_FS_NAME_MAX 255   /* the longest name dm_fs_name_ok accepts */

/*
 * Is `name` (`len` bytes; not necessarily NUL-terminated) safe as one entry of a folder: 1 to
 * DM_FS_NAME_MAX characters of [A-Za-z0-9._-], not starting with '.'? That refuses "", ".", "..",
 * hidden files, any '/', NUL or control byte, so the name can never leave the folder it is opened
 * in. Use it on every name that came from outside: a binlog file name in a ROTATE event, a server
 * uuid, a line of an index file, a task name.
 */
bool dm_fs_name_ok(const char *name, size_t len);

/* The folder mode that goes with a file mode: each class that may read may also enter
 * (0600 -> 0700, 0640 -> 0750, 0644 -> 0755). */
mode_t dm_fs_dir_mode(mode_t file_mode);

/*
 * mkdir -p: create `path` and the folders above it that are missing, each with `mode`. Folders
 * that exist are left as they are (a user's /srv stays 0755); a part of the path that exists but
 * is not a folder fails with ENOTDIR.
 */
int dm_fs_mkdir_p(const char *path, mode_t mode);

/* fsync a folder, so a rename or create in it survives a crash of the machine. */
int dm_fs_sync_dir(const char *path);

/* Flags of dm_fs_write_atomic. */
#define DM_FS_SYNC_FILE 0x1u /* fsync the temp file before the rename */
#define DM_FS_SYNC_DIR 0x2u  /* fsync the folder after the rename */
#define DM_FS_SYNC (DM_FS_SYNC_FILE | DM_FS_SYNC_DIR)
/* dm_fs_tmp_commit only: never over an existing `path` (a file, a folder or a link at the name):
 * the temp file is linked to `path` (link(2) fails with EEXIST when anything is there), then
 * removed; a file the user names (`dmhost verify --fix-sql`) is written so. */
#define DM_FS_NO_REPLACE 0x4u

/*
 * Replace `path` with `len` bytes of `data` atomically: write "<path>.tmp" (created afresh with
 * `mode`, never through a link), then rename it over `path`, so a reader (or a crash of the
 * process) sees the old or the new content, never a torn one. With DM_FS_SYNC a crash of the
 * machine does too; DM_FS_SYNC_FILE alone leaves the folder's fsync to the caller (one for many
 * files). On failure the temp file is removed and *step (when not NULL) names what failed:
 * "create", "write", "fsync", "rename", "fsync the folder of".
 */
int dm_fs_write_atomic(const char *path, const void *data, size_t len, mode_t mode, unsigned flags,
                       const char **step);

/*
 * The same replace for a file written in pieces (a dump's data file, streamed as rows arrive):
 * dm_fs_tmp_open creates "<path>.tmp" afresh as dm_fs_write_atomic does (a stale or planted one
 * removed first, O_EXCL | O_NOFOLLOW, `mode`), writes its name into tmp (tmp_size bytes) and
 * returns the descriptor to write to, or -1 with errno (ENAMETOOLONG when the name does not fit).
 * dm_fs_tmp_commit then fsyncs it (DM_FS_SYNC_FILE), closes it, renames it over path and fsyncs
 * the folder (DM_FS_SYNC_DIR): 0, or -1 with errno, *step as above and the temp file removed.
 * To give up instead, close the descriptor and unlink tmp. A unit never calls rename(2) itself:
 * these and dm_fs_write_atomic are the one sequence (tests/sdk checks the units' sources).
 */
int dm_fs_tmp_open(const char *path, mode_t mode, char *tmp, size_t tmp_size);
int dm_fs_tmp_commit(int fd, const char *tmp, const char *path, unsigned flags, const char **step);

/*
 * openat(dir_fd, name, flags | O_NOFOLLOW | O_CLOEXEC, mode), after dm_fs_name_ok(name): a name
 * that fails the check is refused with EINVAL, a symbolic link at `name` with ELOOP, so the file
 * opened is always a real entry of the folder `dir_fd` refers to. With O_DIRECTORY it opens a
 * sub-folder the same way. dir_fd may be AT_FDCWD.
 */
int dm_fs_open_beneath(int dir_fd, const char *name, int flags, mode_t mode);

/*
 * Open an existing regular file `name`, one entry of the folder `dir_fd` refers to, read-only,
 * for a reader that must not be led elsewhere (the load reading a dump folder). `name` may hold
 * any byte but '/' (a dump's escaped names are not dm_fs_name_ok); "", "." and ".." are refused
 * with EINVAL. A symbolic link is refused with ELOOP; anything but a regular file (a FIFO, a
 * device, a folder) with EPERM and its mode in *st, so the caller can name what it found. The
 * open never blocks on a FIFO. *st (when not NULL) holds the file's stat on success.
 */
int dm_fs_open_file(int dir_fd, const char *name, struct stat *st);

/*
 * A whole file in a malloc'd buffer with a NUL after its bytes (free it); *len (may be NULL) gets
 * its length without the NUL. NULL with errno (ENOENT: no such file, ENOMEM, a read error's).
 * For small files (an index, a meta file, a state file): it reads everything into memory.
 */
char *dm_fs_read_all(const char *path, size_t *len);

/* Open the folder `path` itself for dm_fs_open_beneath (O_DIRECTORY, read-only; links in `path`
 * are followed: the path is the user's configuration, only what lies below it is checked). */
int dm_fs_open_dir(const char *path);

#ifdef __cplusplus
}
#endif
#endif /* DMHOST_FS_H */
