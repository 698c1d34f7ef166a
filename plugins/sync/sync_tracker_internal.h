/* The schema tracker's files' shared parts (sync_tracker.c, sync_tracker_shadow.c). */
#ifndef DMHOST_SYNC_TRACKER_INTERNAL_H
#define DMHOST_SYNC_TRACKER_INTERNAL_H

#include "sync.h"
#include "sync_tracker.h"

enum {
  TRK_UNKNOWN = 0, /* not looked at on the target yet */
  TRK_NONE = 1,    /* no shadow table: not tracked */
  TRK_OK = 2,      /* the shadow's columns are in defs */
};

typedef struct trk_table {
  uint32_t db, name; /* offsets of the NUL-terminated names in sync_tracker.keys */
  int state;
  int allowed; /* block-allow list: -1 not asked yet */
  uint32_t n;
  dm_binlog_column_def *defs;
  const char **dtype; /* information_schema DATA_TYPE per column */
  char *text;         /* names, types and values */
  const char **values;
} trk_table;

struct sync_tracker {
  sync_unit *u;
  char prefix[32]; /* "_dmt_<12 hex digits of task and source>_" */
  sync_keymap map; /* "db\0table" -> index in t */
  dm_buf keys;
  trk_table *t;
  uint32_t n, cap;
};

static inline const char *trk_name(const sync_tracker *tr, const trk_table *t) {
  return tr->keys.p + t->name;
}
/* The table's entry (made on first use); NULL: no memory. Entries move when more are made. */
trk_table *trk_get(sync_tracker *tr, const char *db, const char *table);
/* Reads the shadow table's columns into t (state TRK_OK, or TRK_NONE without a shadow). */
int trk_load(sync_tracker *tr, MYSQL *c, trk_table *t, dm_error *err);
/* Forget what was read (table NULL: every table of db). */
void trk_forget(sync_tracker *tr, const char *db, const char *table);
void trk_forget_all(sync_tracker *tr);

/* sync_tracker_shadow.c */
void trk_shadow_schema(const sync_tracker *tr, const char *db, char *out, size_t len);
/* Schemas the tracker never shadows: the server's own, the task's meta schema, shadows. */
bool trk_skip_schema(const sync_tracker *tr, const char *db);
/* Runs one statement on c, draining results; the server's error number, or 0. */
unsigned trk_run(MYSQL *c, const char *sql, size_t len);
/* The shadow schema of db, made if missing with the character set of the routed schema on the
 * target (what a CREATE TABLE without one inherits), and stamped. */
int trk_ensure_schema(sync_tracker *tr, MYSQL *c, const char *db, dm_error *err);
/* Its comment becomes db, the source's name the shadow's hashed name cannot give back (what
 * binlog-schema list answers). Best effort: a MySQL target has no schema comments. */
void trk_stamp_schema(sync_tracker *tr, MYSQL *c, const char *db);
/* Makes the shadow of db.table from the routed table on the target (CREATE TABLE ... LIKE), when
 * the task replicates it and the target has it; nothing otherwise. */
int trk_seed_from_target(sync_tracker *tr, MYSQL *c, const char *db, const char *table,
                         dm_error *err);

#endif /* DMHOST_SYNC_TRACKER_INTERNAL_H */
