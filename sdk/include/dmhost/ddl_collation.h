/*
 * dmhost SDK: DM's `collation_compatible: strict` (docs/config.md, "collation_compatible"), the
 * one statement adjustment the load (the dump's schema files) and the sync (the binlog's DDL)
 * share (libdmhost-sdk.a).
 *
 * A CREATE DATABASE or CREATE TABLE that names a character set without a collation leaves the
 * collation to the server that runs it: its default collation of that charset. Servers differ
 * there (MariaDB 11's character_set_collations and its uca1400 defaults, MySQL 8's
 * utf8mb4_0900_ai_ci, MariaDB's utf8mb4_general_ci), so the target could compare and sort text
 * otherwise than the source. In strict mode the source's collation is written into the statement
 * before the target runs it. DM's rules (dm/syncer/ddl.go adjustCollation, dumpling's
 * adjustTableCollation and adjustDatabaseCollation):
 *   - CREATE DATABASE (CREATE SCHEMA) with a charset and no collation: the source's default
 *     collation of that charset is added after the charset;
 *   - CREATE DATABASE with neither: the collation the caller names (the sync: the server collation
 *     the binlog event carries, the collation the source gave the database; the load: the
 *     source's @@collation_server) is added after the name;
 *   - CREATE TABLE with a table charset and no table collation: the source's default collation of
 *     that charset is added after the charset;
 *   - CREATE TABLE with neither: left as written (the table takes its database's default, which
 *     strict mode made the source's when the database was created);
 *   - every column definition with a charset and no collation: the source's default collation of
 *     that charset is added after the charset (also when the table names neither);
 *   - CREATE TABLE ... LIKE, any other statement: left as written.
 * A collation already written (COLLATE, a column's BINARY attribute) is never touched, and the
 * statement keeps every other byte as it came: only " COLLATE <name>" is inserted, inside a
 * versioned comment when the charset is in one (so it runs exactly when the charset does).
 *
 * Where DM asks TiDB's parser and the source's information_schema.COLLATIONS, dmhost reads what a
 * MariaDB or MySQL source really does (dm_collations_read): a MariaDB 11.2+ source's
 * character_set_collations overrides the IS_DEFAULT of COLLATIONS, `utf8` is resolved as the
 * source resolves it (utf8mb3, or utf8mb4 under MariaDB's old_mode without UTF8_IS_UTF8MB3), and
 * the sync gives a MySQL 8 event's default_collation_for_utf8mb4 (utf8mb4_default below).
 */
#ifndef DMHOST_DDL_COLLATION_H
#define DMHOST_DDL_COLLATION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#ifdef __cplusplus
extern "C" {
#endif

struct st_mysql;

/* The source's collations: names by id, the default collation of each charset, the server's
 * collation. Read once (dm_collations_read), then only read: safe to share between threads. */
typedef struct dm_collations dm_collations;

/* An empty set (tests, or a unit that knows them otherwise); NULL without memory. */
dm_collations *dm_collations_new(void);
void dm_collations_free(dm_collations *c);
/* One row of information_schema.COLLATIONS (charset may be NULL: MariaDB 11's collations that
 * apply to several charsets; only names by id then). Names are kept in lower case. 0, or -1
 * without memory. */
int dm_collations_add(dm_collations *c, uint32_t id, const char *collation, const char *charset,
                      bool is_default);
/* charset's default is collation, whatever the rows said (MariaDB's character_set_collations). */
int dm_collations_set_default(dm_collations *c, const char *charset, const char *collation);
/* The same for each pair of a list in the form of MariaDB 11.2+'s character_set_collations
 * ("utf8mb4=utf8mb4_uca1400_ai_ci, ucs2=ucs2_uca1400_ai_ci"; blanks around the names ignored, a
 * pair without `=` skipped). 0, or -1 without memory. */
int dm_collations_set_defaults(dm_collations *c, const char *list);
/* What `utf8` names on the source ("utf8mb3" or "utf8mb4"); the server's collation. */
int dm_collations_set_utf8(dm_collations *c, const char *charset);
int dm_collations_set_server(dm_collations *c, const char *collation);

/* The source's default collation of charset (any case; `utf8` as the source reads it), or NULL
 * when the source has no such charset. */
const char *dm_collations_default(const dm_collations *c, const char *charset);
/* The collation of that id (a binlog event's status carries ids), or NULL. */
const char *dm_collations_name(const dm_collations *c, uint32_t id);
/* The source's @@global.collation_server, or NULL when not read. */
const char *dm_collations_server(const dm_collations *c);

/* Reads them from a connection to the source, once per run (the caller keeps the set): each
 * collation with its id, charset and whether it is the charset's default (MariaDB 10.10+:
 * information_schema.COLLATION_CHARACTER_SET_APPLICABILITY, whose FULL_COLLATION_NAME and ID
 * also cover the uca1400 collations that COLLATIONS lists without an id; elsewhere COLLATIONS,
 * DM's query), the global collation_server, character_set_collations where the server has it
 * (MariaDB 11.2+), and what `utf8` names there. 0, or -1 with *err (who opens its message; a
 * refused query is dm_db_error's DM_ERR_DB_QUERY, scope upstream). */
int dm_collations_read(struct st_mysql *source, const char *who, dm_collations **out,
                       dm_error *err);

typedef struct dm_ddl_collation_opts {
  unsigned lex_flags; /* DM_SQL_* of dmhost/sql_lex.h (0 for a dump's schema file) */
  /* What a CREATE DATABASE naming neither charset nor collation gets; NULL: left as written. */
  const char *database_collation;
  /* The default collation of utf8mb4 the statement ran under, when the server's session had
   * another (MySQL 8's default_collation_for_utf8mb4, from the binlog event); NULL: the set's. */
  const char *utf8mb4_default;
} dm_ddl_collation_opts;

/*
 * sql[0..len) with the source's collations written in by the rules above. Returns 1 with *out
 * (malloc'd, NUL-terminated, *out_len bytes) when something was added, 0 when nothing was (*out
 * NULL: another statement, collations already there, a table naming neither, a charset the source
 * does not have, text the lexer cannot read), -1 without memory. note[note_len] (may be NULL)
 * says what was added ("table: COLLATE utf8mb4_general_ci; column `b`: COLLATE latin1_bin") or
 * why something was left ("charset `x` is unknown on the source"), or "" when there is nothing to
 * say, for the caller's log line.
 */
int dm_ddl_add_collations(const char *sql, size_t len, const dm_collations *c,
                          const dm_ddl_collation_opts *o, char **out, size_t *out_len, char *note,
                          size_t note_len);

#ifdef __cplusplus
}
#endif
#endif /* DMHOST_DDL_COLLATION_H */
