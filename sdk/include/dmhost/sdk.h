/*
 * dmhost SDK library (libdmhost-sdk.a, linked into each unit; it calls nothing of the host).
 * Helpers over the contract's plain types.
 */
#ifndef DMHOST_SDK_H
#define DMHOST_SDK_H

#include <stdarg.h>
#include <stdbool.h>

#include "error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DM_SDK_VERSION "1.10.0"

/*
 * Fill *err for `code` from the code table: class, scope, level, resumable and workaround; message
 * from fmt; raw_cause may be NULL. An unknown code gets DM_CLASS_UNIT and no workaround.
 */
void dm_error_set(dm_error *err, int32_t code, const char *raw_cause, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void dm_error_vset(dm_error *err, int32_t code, const char *raw_cause, const char *fmt, va_list ap);

/* The code's symbolic name ("DM_ERR_UNIT_ABI_MAJOR"), or NULL if the code is not in the table. */
const char *dm_error_code_name(int32_t code);
/* DM's names for class, scope, level ("unit-loader", "upstream", "high"). */
const char *dm_error_class_name(int cls);
const char *dm_error_scope_name(int scope);
const char *dm_error_level_name(int level);
/* The table's default resumability of a code (0 for unknown codes). */
int dm_error_code_resumable(int32_t code);

/* Is this MySQL/MariaDB client or server error number one that trying again can fix: a lost or
 * refused connection (2002, 2003, 2006, 2013, 2055), a server going down (1053) or killing the
 * connection (1927), a deadlock (1213) or lock wait timeout (1205)? This is the one rule of every
 * unit for every failed statement: dm_db_error (db.h) makes such errors resumable and every other
 * one not (the statement itself was refused: running it again fails the same way). */
bool dm_db_errno_transient(unsigned code);

/* Did the server roll the statement (or the transaction) back because of another transaction: a
 * deadlock (1213) or a lock wait timeout (1205)? Running it again at once, a few times, may well
 * succeed; a unit does that before it pauses (with a resumable error, as above). */
bool dm_db_errno_rolled_back(unsigned code);

/* Is this errno from a file operation one that trying again cannot fix until someone acts: a
 * name or path too long (ENAMETOOLONG), no permission (EACCES, EPERM), a read-only file system
 * (EROFS), a folder or file where the other is needed (EISDIR, ENOTDIR, EEXIST), a loop of links
 * (ELOOP), a bad argument (EINVAL)? Units make such errors non-resumable, so auto-resume does not
 * redo work (and take locks) for nothing. Full disks (ENOSPC, EDQUOT), EIO, EFBIG and running out
 * of descriptors or memory are not permanent: space and limits can be freed while the task
 * waits. */
bool dm_errno_permanent(int e);

/* Copy a string into a fixed buffer, always NUL-terminated, truncating. Returns dst. */
char *dm_strlcpy(char *dst, const char *src, size_t size);

#ifdef __cplusplus
}
#endif
#endif /* DMHOST_SDK_H */
