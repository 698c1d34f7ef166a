/*
 * DDL statements of the binlog, as the sync unit needs them before applying one (TiDB DM does the
 * same with its parser): which kind of DM event it is (for binlog event filters), which tables and
 * schemas it touches (for the block-allow list and routes), one statement per table (DROP TABLE a,
 * b and RENAME TABLE a TO b, c TO d are split so that each part is filtered and routed alone), and
 * the text with every name replaced by its routed target, written fully qualified so the QUERY
 * event's default database no longer matters. Every other byte of a statement is kept as it came.
 *
 * This is not a SQL parser: it reads only the few positions where the kinds below name a table or a
 * schema, and tokenizes the rest (quotes, comments, versioned comments) so that nothing inside a
 * string or comment is taken for a name. Anything outside those kinds is SYNC_DDL_OTHER, untouched.
 */
#ifndef DMHOST_SYNC_DDL_H
#define DMHOST_SYNC_DDL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dmhost/sql_lex.h"
#include <dmhost/buf.h>

/* Longest schema or table name kept, NUL included (MariaDB allows 64 characters, 256 bytes). */
#define SYNC_DDL_NAME_MAX 256

typedef enum sync_ddl_kind {
  SYNC_DDL_OTHER = 0,
  SYNC_DDL_CREATE_DATABASE,
  SYNC_DDL_DROP_DATABASE,
  SYNC_DDL_ALTER_DATABASE,
  SYNC_DDL_CREATE_TABLE,
  SYNC_DDL_DROP_TABLE,
  SYNC_DDL_RENAME_TABLE,
  SYNC_DDL_ALTER_TABLE,
  SYNC_DDL_TRUNCATE_TABLE,
  SYNC_DDL_CREATE_INDEX,
  SYNC_DDL_DROP_INDEX
} sync_ddl_kind;

/* DM's binlog-filter event name of a kind: "create database", "drop database", "create table",
 * "drop table", "rename table", "alter table", "truncate table", "create index", "drop index";
 * NULL for OTHER and ALTER DATABASE (DM has no filter event for them). */
const char *sync_ddl_event_name(sync_ddl_kind k);

typedef struct sync_ddl_name {
  char schema[SYNC_DDL_NAME_MAX]; /* unquoted, as the server stores it */
  char table[SYNC_DDL_NAME_MAX];  /* "" for a schema-only name */
} sync_ddl_name;

/* One place in a statement's sql that names a table or a schema: the bytes [off, off+len) are the
 * name as written (quoted or not, qualified or not, comments between its parts included). len 0
 * marks a name the statement leaves implicit (ALTER DATABASE without one: the default database);
 * the rewrite inserts it there. */
typedef struct sync_ddl_ref {
  size_t off, len;
  bool schema_only;   /* a database name: routed by route(schema, NULL) */
  sync_ddl_name name; /* resolved: an unqualified name carries the schema it means */
} sync_ddl_ref;

/* One single-table (or single-schema) statement after splitting. */
typedef struct sync_ddl_stmt {
  sync_ddl_kind kind;
  bool temporary;        /* a TEMPORARY table: the unit skips it */
  sync_ddl_name subject; /* the table (or for database statements: schema only, table "") the
                            statement is about; unqualified names take the default database */
  bool has_other; /* RENAME a TO b / ALTER ... RENAME TO b / CREATE TABLE a LIKE b: the second
                     name (unqualified: the default database, as the server resolves it) */
  sync_ddl_name other;
  bool as_select; /* CREATE TABLE ... SELECT (statement-format binlog): tables read by the SELECT
                     are neither reported nor routed; the unit decides whether to apply it */
  char *sql;      /* this one statement, as it came (for split statements: rebuilt for this part
                     only, from the original bytes of the shared head, this part and the tail) */
  size_t sql_len;
  sync_ddl_ref *refs; /* every name in sql, in byte order: the subject, the other name, and the
                         tables of FOREIGN KEY ... REFERENCES, EXCHANGE PARTITION ... WITH TABLE,
                         CONVERT PARTITION ... TO TABLE, CONVERT TABLE */
  int n_refs;
  unsigned flags; /* SYNC_DDL_* it was read under: the rewrite writes names the same way */
  /* What DM's SplitDDL adds to make the statement idempotent on the target, when it lacks it:
   * " IF NOT EXISTS" (CREATE DATABASE, CREATE TABLE; not with OR REPLACE, not ... SELECT) or
   * " IF EXISTS" (DROP DATABASE, DROP TABLE, DROP INDEX), to go at byte if_at of sql (right
   * after the keyword before the name); NULL: nothing to add. */
  const char *if_clause;
  size_t if_at;
} sync_ddl_stmt;

typedef struct sync_ddl {
  sync_ddl_stmt *stmts;
  int n;
  size_t multi_at; /* SYNC_DDL_MULTI: the byte of the ';' that ends the first statement */
} sync_ddl;

/* DM's binlog-filter events of an ALTER TABLE statement, one per clause kind, each once, in the
 * order first seen (sync_ddl_event.c says how clauses are named): at most max into out; returns
 * how many (at least 1: "alter table" for a statement without a clause). 0 for another kind. */
#define SYNC_DDL_EVENTS_MAX 16
int sync_ddl_alter_events(const sync_ddl_stmt *s, const char **out, int max);

/* Flags of sync_ddl_parse_mode: how the server that runs the statement reads it, from the QUERY
 * event's sql_mode and client charset (sync_ddl_flags). The parser must read the text exactly as
 * the server does, or a name it routes or a ';' it must see could hide inside what it takes for
 * a string. */
/* The SDK lexer's flags (dmhost/sql_lex.h says what each means), under the sync's names. */
#define SYNC_DDL_NO_BACKSLASH_ESCAPES DM_SQL_NO_BACKSLASH_ESCAPES
#define SYNC_DDL_ANSI_QUOTES DM_SQL_ANSI_QUOTES
#define SYNC_DDL_MB_MASK DM_SQL_MB_MASK
#define SYNC_DDL_MB_GBK DM_SQL_MB_GBK
#define SYNC_DDL_MB_BIG5 DM_SQL_MB_BIG5
#define SYNC_DDL_MB_SJIS DM_SQL_MB_SJIS
#define SYNC_DDL_MB_GB18030 DM_SQL_MB_GB18030

/* sql_mode bits (the same in MySQL and MariaDB) that change how a statement is read. */
#define SYNC_SQL_MODE_ANSI_QUOTES (1ull << 2)
#define SYNC_SQL_MODE_NO_BACKSLASH_ESCAPES (1ull << 20)

/* The flags for a statement run under sql_mode with the client charset named (NULL or unknown:
 * read byte by byte). */
unsigned sync_ddl_flags(uint64_t sql_mode, const char *charset);

/* Parse one QUERY event's statement. default_db may be "" (then an unqualified table name is an
 * error for kinds that need one). Returns 0, or -1 with msg (what is wrong, and at which byte,
 * counted from 0) for a statement of a known kind that does not parse, or SYNC_DDL_MULTI for one
 * that holds a ';' outside strings, names and comments anywhere but at its very end (a second
 * statement: never to be run, whatever the target would make of it); *out is then empty. OTHER
 * statements are returned as one stmt with sql as-is and no refs. A table named by REFERENCES
 * without a schema resolves to the schema of the table being created or altered (InnoDB's rule);
 * every other unqualified name to default_db. */
#define SYNC_DDL_MULTI (-2)
int sync_ddl_parse(const char *sql, size_t len, const char *default_db, sync_ddl *out, char *msg,
                   size_t msg_len);
/* The same, with SYNC_DDL_* flags. */
int sync_ddl_parse_mode(const char *sql, size_t len, const char *default_db, unsigned flags,
                        sync_ddl *out, char *msg, size_t msg_len);
void sync_ddl_free(sync_ddl *d);

/* A route: fill out_schema/out_table with the target of (schema, table); table is NULL for a
 * schema-only name (out_table is then NULL too). The outputs come pre-filled with the inputs, so a
 * route that keeps a name need not write it. */
typedef void (*sync_ddl_route_fn)(void *arg, const char *schema, const char *table,
                                  char *out_schema, size_t schema_len, char *out_table,
                                  size_t table_len);

/* The statement of `s` with every table/schema name it names (its refs) replaced by
 * route(schema, table) (schema-only names by route(schema, NULL)), written fully qualified and
 * backtick-quoted; route NULL keeps every name and only qualifies it. idempotent: with
 * s->if_clause put in (what the sync unit runs on the target). Appends to out. Returns 0,
 * or -1 when memory ran out, a route gave an empty name, or (under a SYNC_DDL_MB_* charset) a
 * name holds a byte that would join the closing backtick into one character (out may then hold
 * part of it). */
int sync_ddl_rewrite(const sync_ddl_stmt *s, sync_ddl_route_fn route, void *arg, bool idempotent,
                     dm_buf *out);

/* ---- RENAME judged on both sides (sync_ddl_rename.c) ----------------------------------------
 * The parts of a split RENAME TABLE (or one ALTER TABLE ... RENAME TO) followed through the
 * statement as chains: the table a part moves, by its name before the statement (origin) and
 * after it (final). A chain is judged by its two ends against the block-allow list. */
typedef enum sync_rename_verdict {
  SYNC_RENAME_NONE = 0, /* not a table rename */
  SYNC_RENAME_APPLY,    /* replicated before and after: run every part of the chain (routed) */
  SYNC_RENAME_NEITHER,  /* left out before and after: skip */
  SYNC_RENAME_OUT,      /* a replicated table leaves the set: skip, the target keeps it */
  SYNC_RENAME_GHOST,    /* an online schema change's cut-over (gh-ost `_t_gho`, pt-osc `_t_new`
                           in for `t`, which leaves): skip both, the target keeps `t` */
  SYNC_RENAME_INTO,     /* a left-out table enters the set: refuse the whole statement */
  /* online-ddl on (sync_rename_online): parts that move a ghost or trash table, out of chains */
  SYNC_RENAME_CUTOVER, /* ghost TO real: the ghost's recorded DDL runs on the real table */
  SYNC_RENAME_TOOL,    /* real TO trash, trash TO real or trash: nothing on the target */
  SYNC_RENAME_TRASHED, /* ghost TO trash: nothing on the target; the ghost's record goes */
} sync_rename_verdict;

typedef struct sync_rename_part {
  sync_rename_verdict verdict;
  int chain;   /* index of the chain's first part; -1 for a statement that renames nothing */
  int swapped; /* SYNC_RENAME_GHOST at the incoming chain's first part: the leaving chain's */
  const sync_ddl_name *origin, *final; /* the chain's ends (point into the sync_ddl) */
} sync_rename_part;

/* Is `schema`.`table` replicated (the block-allow list)? */
typedef bool (*sync_rename_allowed_fn)(void *arg, const char *schema, const char *table);

/* Does s move a table (RENAME TABLE, ALTER TABLE ... RENAME TO)? */
bool sync_rename_part_of(const sync_ddl_stmt *s);
/* Fills parts[0..d->n) (SYNC_RENAME_NONE for statements that move no table). Parts that already
 * hold a verdict of sync_rename_online (CUTOVER, TOOL, TRASHED) keep it and stay out of every
 * chain; every other entry is overwritten. guess_cutover: a table coming in that is named like
 * gh-ost's or pt-online-schema-change's copy of one leaving gets SYNC_RENAME_GHOST (online-ddl
 * off: the cut-over is skipped with a warning). Returns the index of the first part of a
 * SYNC_RENAME_INTO chain (the statement must not run at all), or -1. */
int sync_rename_plan(const sync_ddl *d, sync_rename_allowed_fn allowed, void *arg,
                     bool guess_cutover, sync_rename_part *parts);

/* A table's kind by the task's online-DDL rules (a dm_online_kind of dmhost/shard.h). */
typedef int (*sync_online_kind_fn)(void *arg, const char *schema, const char *table);
/* online-ddl on: DM's rules for the parts of d that move tables (docs/shard.md, "Online DDL";
 * DM's online_ddl.go Apply and CheckRegex). parts[0..d->n) are zeroed, then a part whose either
 * name is a ghost or trash table gets CUTOVER, TOOL or TRASHED; the others stay NONE for
 * sync_rename_plan. Returns 0; or, refusing the whole statement, DM_ERR_SYNC_GHOST_RENAME (a
 * table renamed to a ghost, or a ghost to a ghost) or DM_ERR_CONFIG_ONLINE_DDL_RULES (a RENAME
 * of two pairs whose first is `real TO trash` or whose second is `ghost TO real`, not both: one
 * rule list misses a name), with *bad the part to name (for 11012: the one the rules miss, and
 * *rules "shadow-table-rules" or "trash-table-rules"). */
int sync_rename_online(const sync_ddl *d, sync_online_kind_fn kind, void *arg,
                       sync_rename_part *parts, int *bad, const char **rules);

/* ---- text for messages and logs (sync_ddl_redact.c) ----------------------------------------
 * A statement's text goes into an error message or a DEBUG line only through sync_ddl_redact;
 * an INFO line carries its verb (sync_ddl_verb) and the object the parser found, nothing else. */

/* Appends sql (read under flags) with every literal that holds a password written as '***': the
 * one after IDENTIFIED BY, after USING/AS of IDENTIFIED VIA|WITH, after a word ending in PASSWORD
 * (PASSWORD '...', MASTER_PASSWORD = '...'), all inside PASSWORD(...) / OLD_PASSWORD(...), all
 * after the '=' of SET PASSWORD, and a FederatedX CONNECTION = '...'. Text the lexer cannot read
 * (an unterminated quote) is left out; control bytes (newlines) become spaces, so the text stays on
 * one log line. At most max bytes are appended (0: no limit), a cut one ending in "...". 0, or -1:
 * no memory (out may then hold part of it). */
int sync_ddl_redact(const char *sql, size_t len, unsigned flags, size_t max, dm_buf *out);
/* The statement's leading keywords, upper-cased (at most 3 words: "CREATE USER", "SET
 * PASSWORD FOR", "GRANT SELECT ON"), or "(a statement)". */
void sync_ddl_verb(const char *sql, size_t len, unsigned flags, char *out, size_t out_len);
/* Rewrites msg (NUL-terminated, in a buffer of msg_cap bytes) so that no password literal of sql
 * appears in it: for the target's error messages, which quote the statement back. */
void sync_ddl_scrub(const char *sql, size_t len, unsigned flags, char *msg, size_t msg_cap);

#endif /* DMHOST_SYNC_DDL_H */
