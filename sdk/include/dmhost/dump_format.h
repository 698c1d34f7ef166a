/*
 * The dump folder's file names (docs/dump-format.md, "Files"), one owner for the dump unit that
 * writes them and the load unit that reads them back.
 */
#ifndef DMHOST_DUMP_FORMAT_H
#define DMHOST_DUMP_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The longest file-name part of one name. Two parts and the longest suffix (".000000.sql.tmp",
 * "-schema-create.sql.tmp") stay within NAME_MAX (255) with room to spare. */
#define DM_DUMP_NAME_PART_MAX 112
/* What marks a shortened part: `@` is always escaped as @0040 in a plain part, so a raw `@~`
 * never occurs in one. */
#define DM_DUMP_NAME_SHORT_MARK "@~"

/* The `metadata` line that stands instead of the SHOW MASTER STATUS section when the dump has no
 * binlog position (no sync follows it and the source user may not read the position, or the
 * binlog is off): this, then why. A load with a sync after it refuses such a dump. */
#define DM_DUMP_METADATA_WARNING "Warning: "

/* The `metadata` section after SHOW MASTER STATUS (DM's dumpling writes the same) with the position
 * read after every dump thread started its snapshot, when the snapshots do not match one position
 * (consistency none): a sync starts at the first section's position and runs in safe mode until it
 * passes this one. Its Log/Pos/GTID lines follow as in the first section. */
#define DM_DUMP_METADATA_AFTER "SHOW MASTER STATUS: /* AFTER CONNECTION POOL ESTABLISHED */"

/* FNV-1a 64 of len bytes: the hash of a shortened name part, and a dump's identity, the hash of
 * its whole `metadata` file (position, times, tables: two dumps with the same text saw the same
 * snapshot), which the load checkpoint records with every file so that a load never continues
 * another dump's checkpoint (a subtask moved to a worker that dumped anew). */
uint64_t dm_dump_fnv1a64(const void *bytes, size_t len);

/*
 * The file-name part of a schema or table name: the name with `/`, `\`, `.`, `@` and bytes < 0x20
 * or 0x7f written as `@XXXX` (4 hex digits of the byte). When that is longer than
 * DM_DUMP_NAME_PART_MAX, the part is shortened: a prefix of it (cut between escapes and between
 * UTF-8 characters), `@~` and 16 hex digits of the FNV-1a 64 hash of the whole name. out needs
 * DM_DUMP_NAME_PART_MAX + 1 bytes at least. Returns the part's length, or 0 when out is too small.
 */
size_t dm_dump_name_part(const char *name, char *out, size_t out_len);
/* Is this part (len bytes) a shortened one? Its name is not in it: the load reads it from the
 * statement in the file and checks that dm_dump_name_part of that name gives this part. */
bool dm_dump_name_is_short(const char *part, size_t len);
/* Decodes a plain part (`@XXXX` escapes) into out (NUL-terminated); -1 when it is shortened,
 * empty, does not fit or decodes to a NUL byte. */
int dm_dump_name_decode(const char *part, size_t len, char *out, size_t out_len);

#ifdef __cplusplus
}
#endif
#endif /* DMHOST_DUMP_FORMAT_H */
