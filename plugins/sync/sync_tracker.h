/*
 * The schema tracker (docs/sync.md, "The schema tracker"): the structure of every table the sync
 * meets, as of its binlog position, so that rows decode without the binlog's column names
 * (binlog_row_metadata = NO_LOG or MINIMAL, the servers' defaults).
 *
 * The structures live on the target as empty **shadow tables**: source schema `db` is shadowed by
 * schema `_dmt_<task+source hash>_<db hash>` (created with db's character set), table `db`.`t` by
 * the shadow schema's `t`. The target's own parser applies every DDL of the binlog to them (its
 * names rewritten by the DDL reader, sync_ddl.c), so no second SQL parser reads ALTER TABLE, and
 * information_schema tells the result. They are seeded from the dump's schema files at the
 * sync's first start (modes all and load&sync), else from the routed table on the target when a
 * table is first needed. Being tables of the target, they persist with the checkpoint: a DDL runs
 * on the shadows after the target and before the checkpoint moves past it, inside the window the
 * checkpoint's DDL mark covers (sync_ddl_apply.c), so a restart replays both alike.
 */
#ifndef DMHOST_SYNC_TRACKER_H
#define DMHOST_SYNC_TRACKER_H

#include <mysql.h>
#include <stdbool.h>

#include <dmhost/binlog_rows.h>
#include <dmhost/unit.h>

#include "sync_ddl.h"

typedef struct sync_unit sync_unit;
typedef struct sync_tracker sync_tracker;

int sync_tracker_new(sync_unit *u, sync_tracker **out);
void sync_tracker_free(sync_tracker *tr);

/* The sync's first start (no checkpoint): drops the task's shadows of an earlier run, then
 * seeds from the dump's schema files when the task mode loaded a dump and its folder is there. */
int sync_tracker_first_start(sync_tracker *tr, MYSQL *c, dm_error *err);

/* Before the rows of a table map are decoded (tables the task replicates): a map without column
 * names gets them (and signedness, charsets, ENUM/SET values, primary key) from the tracker,
 * seeding the table from the target if the tracker does not know it; a map with names is checked
 * against the tracker's structure when it has one. `at` names the event ("file:pos"). 0, or -1
 * with DM_ERR_SYNC_SCHEMA (the tracker and the binlog disagree) or DM_ERR_SYNC_NO_SCHEMA. */
int sync_tracker_table_map(sync_tracker *tr, MYSQL *c, dm_binlog_table_map *tm, const char *at,
                           dm_error *err);

/* A DDL event, before the target runs it: the tables its statements alter, rename or copy
 * (LIKE) that the tracker does not know yet are seeded from the target as it is before them. */
int sync_tracker_ddl_before(sync_tracker *tr, MYSQL *c, const sync_ddl *d, dm_error *err);
/* After the target ran it: every statement applied to the shadows on `conn` (the DDL
 * connection, under the event's session). A statement the shadow refuses leaves its tables
 * untracked (a warning; they are seeded from the target again when next needed); with `replay`
 * (the checkpoint says this DDL was being applied), "already done" answers count as done. */
void sync_tracker_ddl_after(sync_tracker *tr, MYSQL *conn, const sync_ddl *d, const char *at,
                            bool replay);

/* Does the tracker hold a structure of db.table (its shadow exists)? Online DDL asks it which name
 * is a table of the source (sync_online.c). */
bool sync_tracker_knows(sync_tracker *tr, MYSQL *c, const char *db, const char *table);
/* A shadow of db.table, seeded from its routed table on the target when there is none (whatever
 * the binlog's metadata): optimistic shard DDL needs every member's structure from the start,
 * when the target has the shards' shape. 0, or -1 with *err. */
int sync_tracker_track(sync_tracker *tr, MYSQL *c, const char *db, const char *table,
                       dm_error *err);
/* Optimistic shard DDL (docs/shard.md "Optimistic mode"): a member's info for the statements of
 * d on db.table, read before the tracker applies them (sync_tracker_ddl_before done, not yet
 * sync_tracker_ddl_after): `before` is the structure of its shadow table, `after` the structure a
 * copy of the shadow has once the statements ran on it (the shadow itself changes only in
 * sync_tracker_ddl_after, after the target, so a replayed DDL reads the same before), both as the
 * JSON of sync_structure.h, appended. `after` also carries the scratch check: the statements on a
 * copy of the routed target table, as its "target" or "target_error" member (nothing when the
 * target has no such table). The copies live in db's shadow schema and are dropped. 0; 1 when the
 * tracker has no shadow of the table (nothing appended); -1 with *err (DM_ERR_SYNC_SCHEMA: the
 * shadow refuses a statement, or a copy could not be made or read). */
int sync_tracker_before_after(sync_tracker *tr, MYSQL *c, const sync_ddl *d, const char *db,
                              const char *table, dm_buf *before, dm_buf *after, dm_error *err);

/* The unit's schema_op slot (unit.h, ABI 1.2; sync_tracker_op.c): dmctl binlog-schema on the
 * shadows of a paused instance, by the source's names. */
int sync_schema_op(void *self, const dm_schema_req *req, dm_schema_answer *answer, dm_error *err);

#endif /* DMHOST_SYNC_TRACKER_H */
