/*
 * A table's structure as optimistic shard DDL carries it (docs/shard.md "Optimistic mode"; the
 * JSON the host's host/core/shard/shard_join.h reads): columns with type, length, scale,
 * signedness, nullability, default, charset and ENUM/SET members, and indexes, read from
 * information_schema of the server that holds the table. The schema tracker reads its shadow
 * tables with it (sync_tracker_structure) and the scratch check the copy of a target table
 * (sync_tracker_scratch). No running unit needed: part of sync_parts.
 */
#ifndef DMHOST_SYNC_STRUCTURE_H
#define DMHOST_SYNC_STRUCTURE_H

#include <mysql.h>
#include <stddef.h>
#include <stdint.h>

#include "sync_ddl.h"
#include <dmhost/buf.h>

/* Appends the JSON object of schema.table on c. 0; 1 when c has no such table (nothing
 * appended); -1 with msg (the server's error, or out of memory). */
int sync_structure_json(MYSQL *c, const char *schema, const char *table, dm_buf *out, char *msg,
                        size_t msg_len);

/* The structure from_db.from_table would have after the statements of d that name the table
 * `subject_schema`.`subject_table`: a copy is made as scratch_schema.scratch_table (CREATE TABLE
 * ... LIKE), the statements run on it in the subject's place, its structure is appended to out,
 * and the copy is dropped. 0; 1 when the server refused a statement (its message in refused,
 * nothing appended); 2 when from_db.from_table does not exist; -1 with msg. */
int sync_structure_try(MYSQL *c, const char *scratch_schema, const char *scratch_table,
                       const char *from_db, const char *from_table, const sync_ddl *d,
                       const char *subject_schema, const char *subject_table, dm_buf *out,
                       char *refused, size_t refused_len, char *msg, size_t msg_len);

/* The scratch check's part of an `after`: a copy of the target table tdb.tt is made as
 * scratch_schema.scratch_table (CREATE TABLE ... LIKE, on c, which must reach the target
 * server), the statements of d that name the table `subject_schema`.`subject_table` run on it in
 * its place, and the result is appended as `"target":{...}` or, when the server refused one,
 * `"target_error":"<its message>"`; the copy is dropped. Appends nothing when the target has no
 * tdb.tt. 0, or -1 with msg (the copy could not be made or read, or out of memory). */
int sync_structure_scratch(MYSQL *c, const char *scratch_schema, const char *scratch_table,
                           const char *tdb, const char *tt, const sync_ddl *d,
                           const char *subject_schema, const char *subject_table, dm_buf *out,
                           char *msg, size_t msg_len);

/* ENUM/SET values out of information_schema's COLUMN_TYPE, enum('a','it''s','c\\d'): appends each
 * value NUL-terminated to text at *at (text holds at least strlen(ctype) + 1 more bytes) and
 * counts them. */
uint32_t sync_enum_members(const char *ctype, char *text, size_t *at);

/* Appends s as a JSON string (quotes and escapes). 0 or -1. */
int sync_json_string(dm_buf *out, const char *s);

#endif /* DMHOST_SYNC_STRUCTURE_H */
