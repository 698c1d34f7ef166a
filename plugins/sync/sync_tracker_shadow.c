/*
 * The schema tracker's shadow tables on the target (sync_tracker.h): their names, seeding them
 * from the dump's schema files or the target's tables, and applying the binlog's DDL to them.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mysqld_error.h>

#include <dmhost/clock.h>
#include <dmhost/dump_format.h>
#include <dmhost/fs.h>

#include "sync.h"
#include "sync_structure.h"
#include "sync_tracker_internal.h"

#define TRK_SCHEMA_FILE_MAX (16u << 20) /* a schema file bigger than this is not read */

void trk_shadow_schema(const sync_tracker *tr, const char *db, char *out, size_t len) {
  snprintf(out, len, "%s%012" PRIx64, tr->prefix,
           sync_hash(db, strlen(db)) & (uint64_t)0xffffffffffff);
}

/* The rewrite's route: every name to its shadow (tables keep their names). */
static void trk_route(void *arg, const char *schema, const char *table, char *out_schema,
                      size_t schema_len, char *out_table, size_t table_len) {
  (void)table;
  (void)out_table;
  (void)table_len;
  trk_shadow_schema(arg, schema, out_schema, schema_len);
}

bool trk_skip_schema(const sync_tracker *tr, const char *db) {
  return !db[0] || strcmp(db, "mysql") == 0 || strcmp(db, "information_schema") == 0 ||
         strcmp(db, "performance_schema") == 0 || strcmp(db, "sys") == 0 ||
         strcmp(db, tr->u->meta) == 0 || strncmp(db, "_dmt_", 5) == 0;
}

unsigned trk_run(MYSQL *c, const char *sql, size_t len) {
  if (mysql_real_query(c, sql, (unsigned long)len) != 0)
    return mysql_errno(c) ? mysql_errno(c) : 1;
  MYSQL_RES *r = mysql_store_result(c);
  if (r)
    mysql_free_result(r);
  return 0;
}

static int trk_failed(sync_tracker *tr, MYSQL *c, const char *what, dm_error *err) {
  sync_db_error(tr->u, c, what, err);
  return -1;
}

int trk_ensure_schema(sync_tracker *tr, MYSQL *c, const char *db, dm_error *err) {
  sync_unit *u = tr->u;
  char shadow[SYNC_NAME_MAX], tdb[SYNC_NAME_MAX], tt[SYNC_NAME_MAX];
  trk_shadow_schema(tr, db, shadow, sizeof shadow);
  sync_route(u, db, NULL, tdb, tt);
  dm_buf q = {0};
  char lit[2 * SYNC_NAME_MAX + 1];
  mysql_real_escape_string(c, lit, tdb, (unsigned long)strlen(tdb));
  char coll[128] = "";
  if (dm_buf_printf(&q,
                    "SELECT DEFAULT_COLLATION_NAME FROM information_schema.SCHEMATA WHERE "
                    "SCHEMA_NAME = '%s'",
                    lit) < 0)
    return sync_nomem(u, err);
  if (mysql_real_query(c, q.p, (unsigned long)q.len) != 0) {
    dm_buf_free(&q);
    return trk_failed(tr, c, "sync: the schema tracker cannot read the target's schemas", err);
  }
  MYSQL_RES *r = mysql_store_result(c);
  MYSQL_ROW row = r ? mysql_fetch_row(r) : NULL;
  if (row && row[0] && strspn(row[0], "abcdefghijklmnopqrstuvwxyz0123456789_") == strlen(row[0]))
    dm_strlcpy(coll, row[0], sizeof coll);
  if (r)
    mysql_free_result(r);
  dm_buf_reset(&q);
  if (dm_buf_puts(&q, "CREATE DATABASE IF NOT EXISTS ") < 0 ||
      sync_sql_ident(&q, shadow, strlen(shadow)) < 0 ||
      (coll[0] && dm_buf_printf(&q, " COLLATE %s", coll) < 0)) {
    dm_buf_free(&q);
    return sync_nomem(u, err);
  }
  unsigned e = trk_run(c, q.p, q.len);
  dm_buf_free(&q);
  if (e)
    return trk_failed(tr, c, "sync: the schema tracker cannot create a shadow schema on the target",
                      err);
  trk_stamp_schema(tr, c, db);
  return 0;
}

void trk_stamp_schema(sync_tracker *tr, MYSQL *c, const char *db) {
  char shadow[SYNC_NAME_MAX], lit[2 * SYNC_NAME_MAX + 1];
  trk_shadow_schema(tr, db, shadow, sizeof shadow);
  mysql_real_escape_string(c, lit, db, (unsigned long)strlen(db));
  dm_buf q = {0};
  if (dm_buf_puts(&q, "ALTER DATABASE ") == 0 && sync_sql_ident(&q, shadow, strlen(shadow)) == 0 &&
      dm_buf_printf(&q, " COMMENT = '%s'", lit) == 0)
    trk_run(c, q.p, q.len); /* MySQL has no schema comments: binlog-schema list then asks the
                               source (sync_tracker_op.c) */
  dm_buf_free(&q);
}

int trk_seed_from_target(sync_tracker *tr, MYSQL *c, const char *db, const char *table,
                         dm_error *err) {
  sync_unit *u = tr->u;
  if (trk_skip_schema(tr, db) || !u->host->table_allowed(u->ctx, db, table))
    return 0;
  char tdb[SYNC_NAME_MAX], tt[SYNC_NAME_MAX], shadow[SYNC_NAME_MAX];
  sync_route(u, db, table, tdb, tt);
  trk_shadow_schema(tr, db, shadow, sizeof shadow);
  if (trk_ensure_schema(tr, c, db, err) < 0)
    return -1;
  dm_buf q = {0};
  if (dm_buf_puts(&q, "CREATE TABLE IF NOT EXISTS ") < 0 ||
      sync_sql_qualified(&q, shadow, table) < 0 || dm_buf_puts(&q, " LIKE ") < 0 ||
      sync_sql_qualified(&q, tdb, tt) < 0) {
    dm_buf_free(&q);
    return sync_nomem(u, err);
  }
  unsigned e = trk_run(c, q.p, q.len);
  dm_buf_free(&q);
  if (e == ER_NO_SUCH_TABLE || e == ER_BAD_DB_ERROR)
    return 0; /* not on the target: nothing to seed from */
  if (e)
    return trk_failed(
        tr, c, "sync: the schema tracker cannot copy a table's structure on the target", err);
  u->host->logf(u->ctx, DM_LOG_INFO,
                "sync: schema tracker: `%s`.`%s` seeded from the target's `%s`.`%s`", db, table,
                tdb, tt);
  return 0;
}

/* ---- the first start: the dump's schema files ---- */

/* Reads a file of the dump folder (beneath its descriptor, no links), NUL-terminated. */
static char *trk_read_file(int dirfd, const char *name, size_t *len) {
  struct stat st;
  int fd = dm_fs_open_file(dirfd, name, &st);
  if (fd < 0)
    return NULL;
  char *buf = NULL;
  if (S_ISREG(st.st_mode) && (uint64_t)st.st_size <= TRK_SCHEMA_FILE_MAX &&
      (buf = malloc((size_t)st.st_size + 1))) {
    size_t got = 0;
    ssize_t n;
    while (got < (size_t)st.st_size && (n = read(fd, buf + got, (size_t)st.st_size - got)) > 0)
      got += (size_t)n;
    buf[got] = '\0';
    *len = got;
  }
  close(fd);
  return buf;
}

/* Runs a schema file's one statement (CREATE DATABASE or CREATE TABLE of db) on the shadows. */
static bool trk_seed_statement(sync_tracker *tr, MYSQL *c, const char *db, const char *text,
                               size_t len, sync_ddl_kind want) {
  sync_ddl d = {0};
  char msg[256];
  bool ok = false;
  dm_buf out = {0};
  if (sync_ddl_parse(text, len, db, &d, msg, sizeof msg) == 0 && d.n == 1 &&
      d.stmts[0].kind == want && strcmp(d.stmts[0].subject.schema, db) == 0 &&
      sync_ddl_rewrite(&d.stmts[0], trk_route, tr, true, &out) == 0)
    ok = trk_run(c, out.p, out.len) == 0;
  sync_ddl_free(&d);
  dm_buf_free(&out);
  return ok;
}

static bool trk_ends(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a > b && strcmp(s + a - b, suffix) == 0;
}

/* Every table of the dump folder: its schema's file first (the character set a CREATE TABLE
 * without one inherits), then its own. Names come from the file names; a shortened (hashed)
 * part is left to the target seeding. */
static int trk_seed_dump(sync_tracker *tr, MYSQL *c, const char *dir, dm_error *err) {
  sync_unit *u = tr->u;
  int dirfd = dm_fs_open_dir(dir);
  if (dirfd < 0)
    return 0;
  DIR *dp = fdopendir(dup(dirfd));
  if (!dp) {
    close(dirfd);
    return 0;
  }
  int tables = 0, failed = 0;
  int64_t t0 = dm_clock_ns();
  for (int pass = 0; pass < 2; pass++) {
    rewinddir(dp);
    struct dirent *de;
    while ((de = readdir(dp))) {
      const char *name = de->d_name;
      bool schema_file = trk_ends(name, "-schema-create.sql");
      if (pass == 0 ? !schema_file : (schema_file || !trk_ends(name, "-schema.sql")))
        continue;
      size_t stem = strlen(name) - strlen(pass == 0 ? "-schema-create.sql" : "-schema.sql");
      const char *dot = pass == 0 ? name + stem : memchr(name, '.', stem);
      if (!dot)
        continue;
      char db[SYNC_NAME_MAX], table[SYNC_NAME_MAX] = "";
      if (dm_dump_name_decode(name, (size_t)(dot - name), db, sizeof db) < 0 ||
          (pass == 1 &&
           dm_dump_name_decode(dot + 1, stem - (size_t)(dot - name) - 1, table, sizeof table) < 0))
        continue;
      if (trk_skip_schema(tr, db))
        continue;
      size_t len = 0;
      char *text = trk_read_file(dirfd, name, &len);
      bool ok =
          text && trk_seed_statement(tr, c, db, text, len,
                                     pass == 0 ? SYNC_DDL_CREATE_DATABASE : SYNC_DDL_CREATE_TABLE);
      free(text);
      if (ok && pass == 0)
        trk_stamp_schema(tr, c, db);
      if (pass == 1) {
        tables += ok;
        failed += !ok;
      }
      if (!ok)
        u->host->logf(u->ctx, DM_LOG_WARN,
                      "sync: schema tracker: %s/%s could not be applied to a shadow table (%s); "
                      "the table is seeded from the target when first needed",
                      dir, name, mysql_errno(c) ? mysql_error(c) : "not one CREATE statement");
    }
  }
  closedir(dp);
  close(dirfd);
  u->host->logf(u->ctx, DM_LOG_INFO,
                "sync: schema tracker: %d table(s) seeded from the dump's schema files in %s in "
                "%.2f s%s",
                tables, dir, (double)(dm_clock_ns() - t0) / 1e9,
                failed ? " (some could not be: see the warnings)" : "");
  (void)err;
  return 0;
}

int sync_tracker_first_start(sync_tracker *tr, MYSQL *c, dm_error *err) {
  sync_unit *u = tr->u;
  /* shadows of an earlier run of this task on this source (stopped and started afresh) */
  dm_buf q = {0};
  char lit[64];
  mysql_real_escape_string(c, lit, tr->prefix, (unsigned long)strlen(tr->prefix));
  if (dm_buf_printf(&q,
                    "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE "
                    "LEFT(SCHEMA_NAME, %zu) = '%s'",
                    strlen(tr->prefix), lit) < 0)
    return sync_nomem(u, err);
  if (mysql_real_query(c, q.p, (unsigned long)q.len) != 0) {
    dm_buf_free(&q);
    return trk_failed(tr, c, "sync: the schema tracker cannot list its shadow schemas", err);
  }
  MYSQL_RES *r = mysql_store_result(c);
  MYSQL_ROW row;
  int rc = 0;
  while (r && rc == 0 && (row = mysql_fetch_row(r))) {
    dm_buf_reset(&q);
    if (dm_buf_puts(&q, "DROP DATABASE IF EXISTS ") < 0 ||
        sync_sql_ident(&q, row[0], strlen(row[0])) < 0)
      rc = sync_nomem(u, err);
    else if (trk_run(c, q.p, q.len) != 0)
      rc = trk_failed(tr, c, "sync: the schema tracker cannot drop an old shadow schema", err);
  }
  if (r)
    mysql_free_result(r);
  dm_buf_free(&q);
  trk_forget_all(tr);
  if (rc < 0)
    return -1;
  const char *mode = u->host->task_mode(u->ctx);
  if (strcmp(mode, "all") != 0 && strcmp(mode, "load&sync") != 0)
    return 0;
  /* the load's default folder (docs/load.md: `dir`, default <work dir>/../dump) */
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/../dump", u->host->work_dir(u->ctx));
  return trk_seed_dump(tr, c, dir, err);
}

/* ---- DDL ---- */

static bool trk_table_kind(sync_ddl_kind k) {
  return k == SYNC_DDL_ALTER_TABLE || k == SYNC_DDL_RENAME_TABLE || k == SYNC_DDL_CREATE_INDEX ||
         k == SYNC_DDL_DROP_INDEX;
}

/* Tracked (a shadow exists), seeding it from the target when it can. */
static int trk_ensure(sync_tracker *tr, MYSQL *c, const char *db, const char *table,
                      dm_error *err) {
  if (trk_skip_schema(tr, db) || !table[0])
    return 0;
  trk_table *t = trk_get(tr, db, table);
  if (!t)
    return sync_nomem(tr->u, err);
  if (t->state == TRK_UNKNOWN && trk_load(tr, c, t, err) < 0)
    return -1;
  /* with FULL metadata the binlog names the columns: the target's table (maybe a superset of
   * the source's) is not taken for the source's structure */
  if (t->state != TRK_NONE || tr->u->source_full_metadata)
    return 0;
  if (trk_seed_from_target(tr, c, db, table, err) < 0)
    return -1;
  t = trk_get(tr, db, table);
  return t ? trk_load(tr, c, t, err) : sync_nomem(tr->u, err);
}

int sync_tracker_ddl_before(sync_tracker *tr, MYSQL *c, const sync_ddl *d, dm_error *err) {
  for (int i = 0; i < d->n; i++) {
    const sync_ddl_stmt *s = &d->stmts[i];
    if (s->temporary)
      continue;
    if (trk_table_kind(s->kind) && trk_ensure(tr, c, s->subject.schema, s->subject.table, err) < 0)
      return -1;
    if (s->kind == SYNC_DDL_CREATE_TABLE && s->has_other &&
        trk_ensure(tr, c, s->other.schema, s->other.table, err) < 0)
      return -1;
  }
  return 0;
}

static bool trk_tracked(sync_tracker *tr, MYSQL *c, const char *db, const char *table) {
  trk_table *t = trk_get(tr, db, table);
  dm_error e;
  if (t && t->state == TRK_UNKNOWN && trk_load(tr, c, t, &e) < 0)
    return false;
  return t && t->state == TRK_OK;
}

bool sync_tracker_knows(sync_tracker *tr, MYSQL *c, const char *db, const char *table) {
  return !trk_skip_schema(tr, db) && trk_tracked(tr, c, db, table);
}

/* A table the tracker can no longer follow: its shadow goes, so that it is seeded again. */
static void trk_untrack(sync_tracker *tr, MYSQL *c, const sync_ddl_name *n) {
  if (!n->table[0] || trk_skip_schema(tr, n->schema))
    return;
  char shadow[SYNC_NAME_MAX];
  trk_shadow_schema(tr, n->schema, shadow, sizeof shadow);
  dm_buf q = {0};
  if (dm_buf_puts(&q, "DROP TABLE IF EXISTS ") == 0 &&
      sync_sql_qualified(&q, shadow, n->table) == 0)
    trk_run(c, q.p, q.len);
  dm_buf_free(&q);
  trk_forget(tr, n->schema, n->table);
}

void sync_tracker_ddl_after(sync_tracker *tr, MYSQL *conn, const sync_ddl *d, const char *at,
                            bool replay) {
  sync_unit *u = tr->u;
  for (int i = 0; i < d->n; i++) {
    const sync_ddl_stmt *s = &d->stmts[i];
    if (s->temporary || s->kind == SYNC_DDL_OTHER || s->kind == SYNC_DDL_TRUNCATE_TABLE ||
        trk_skip_schema(tr, s->subject.schema))
      continue;
    bool db_stmt = s->kind == SYNC_DDL_CREATE_DATABASE || s->kind == SYNC_DDL_DROP_DATABASE ||
                   s->kind == SYNC_DDL_ALTER_DATABASE;
    if (s->as_select) { /* its rows came with it; its structure is the target's business */
      trk_untrack(tr, conn, &s->subject);
      continue;
    }
    if (trk_table_kind(s->kind) && !trk_tracked(tr, conn, s->subject.schema, s->subject.table)) {
      if (s->has_other) /* renamed from nothing known: the new name is unknown too */
        trk_untrack(tr, conn, &s->other);
      continue;
    }
    dm_error e;
    if (((!db_stmt && s->kind != SYNC_DDL_DROP_TABLE) || s->kind == SYNC_DDL_ALTER_DATABASE) &&
        trk_ensure_schema(tr, conn, s->subject.schema, &e) < 0)
      goto refused;
    if (s->has_other && !trk_skip_schema(tr, s->other.schema) &&
        trk_ensure_schema(tr, conn, s->other.schema, &e) < 0)
      goto refused;
    dm_buf q = {0};
    if (sync_ddl_rewrite(s, trk_route, tr, true, &q) < 0) {
      dm_buf_free(&q);
      goto refused;
    }
    unsigned code = trk_run(conn, q.p, q.len);
    u->host->logf(u->ctx, DM_LOG_DEBUG, "sync: schema tracker: the DDL at %s on `%s`.`%s`: %s", at,
                  s->subject.schema, s->subject.table, code ? mysql_error(conn) : "applied");
    dm_buf_free(&q);
    if (code == 0 || (replay && sync_ddl_already_done(code)) ||
        (s->kind == SYNC_DDL_ALTER_DATABASE && code == ER_BAD_DB_ERROR)) {
      if (s->kind == SYNC_DDL_CREATE_DATABASE || s->kind == SYNC_DDL_ALTER_DATABASE)
        trk_stamp_schema(tr, conn, s->subject.schema); /* an ALTER may have set a comment */
      if (db_stmt)
        trk_forget(tr, s->subject.schema, NULL);
      else
        trk_forget(tr, s->subject.schema, s->subject.table);
      if (s->has_other)
        trk_forget(tr, s->other.schema, s->other.table);
      continue;
    }
  refused:
    u->host->logf(u->ctx, DM_LOG_WARN,
                  "sync: schema tracker: the DDL at %s on `%s`.`%s` could not be applied to its "
                  "shadow (%s): the table is seeded from the target when next needed",
                  at, s->subject.schema, s->subject.table, mysql_error(conn));
    trk_untrack(tr, conn, &s->subject);
    if (s->has_other)
      trk_untrack(tr, conn, &s->other);
  }
}

/* ---- optimistic shard DDL: before, after, the scratch check ---- */

/* The copies' names in db's shadow schema: shadows keep their source tables' names, and the
 * tracker never shadows a table of a source schema whose name starts with _dmt_ (it skips such
 * schemas; a source table of that name would share the shadow schema, so the names are long). */
#define TRK_AFTER "_dmt_after_copy"
#define TRK_SCRATCH "_dmt_target_copy"

static int trk_opt_failed(sync_tracker *tr, const char *db, const char *table, const char *what,
                          const char *why, dm_error *err) {
  tr->u->host->error_make(tr->u->ctx, err, DM_ERR_SYNC_SCHEMA, NULL,
                          "sync: optimistic shard DDL of `%s`.`%s`: %s: %s", db, table, what, why);
  return -1;
}

int sync_tracker_track(sync_tracker *tr, MYSQL *c, const char *db, const char *table,
                       dm_error *err) {
  if (trk_ensure(tr, c, db, table, err) < 0)
    return -1;
  /* with FULL metadata the tracker learns tables from the binlog's names and keeps no shadow of
   * a table it only saw rows of: seeded from the routed table on the target as in NO_LOG mode */
  trk_table *t = trk_get(tr, db, table);
  if (!t)
    return sync_nomem(tr->u, err);
  if (t->state != TRK_NONE)
    return 0;
  if (trk_seed_from_target(tr, c, db, table, err) < 0)
    return -1;
  t = trk_get(tr, db, table);
  return t ? trk_load(tr, c, t, err) : sync_nomem(tr->u, err);
}

int sync_tracker_before_after(sync_tracker *tr, MYSQL *c, const sync_ddl *d, const char *db,
                              const char *table, dm_buf *before, dm_buf *after, dm_error *err) {
  sync_unit *u = tr->u;
  char tdb[SYNC_NAME_MAX], tt[SYNC_NAME_MAX], shadow[SYNC_NAME_MAX], msg[512], refused[512];
  if (sync_tracker_track(tr, c, db, table, err) < 0)
    return -1;
  trk_shadow_schema(tr, db, shadow, sizeof shadow);
  size_t b0 = before->len, a0 = after->len;
  int rc = sync_structure_json(c, shadow, table, before, msg, sizeof msg);
  if (rc != 0)
    return rc < 0 ? trk_opt_failed(tr, db, table, "reading its shadow", msg, err) : 1;
  rc = sync_structure_try(c, shadow, TRK_AFTER, shadow, table, d, db, table, after, refused,
                          sizeof refused, msg, sizeof msg);
  if (rc != 0) {
    before->len = b0;
    before->p[b0] = '\0';
    if (rc == 2)
      return 1; /* the shadow went meanwhile */
    return trk_opt_failed(tr, db, table,
                          rc == 1 ? "the statements fail on a copy of its shadow"
                                  : "copying its shadow",
                          rc == 1 ? refused : msg, err);
  }
  /* the scratch check goes inside after's object, before its closing brace */
  sync_route(u, db, table, tdb, tt);
  after->len--;
  size_t mark = after->len;
  if (dm_buf_putc(after, ',') < 0)
    return sync_nomem(u, err);
  size_t body = after->len;
  if (sync_structure_scratch(c, shadow, TRK_SCRATCH, tdb, tt, d, db, table, after, msg,
                             sizeof msg) < 0) {
    before->len = b0;
    before->p[b0] = '\0';
    after->len = a0;
    after->p[a0] = '\0';
    return trk_opt_failed(tr, db, table, "the scratch check on a copy of the target table", msg,
                          err);
  }
  if (after->len == body) /* the target has no such table: nothing added */
    after->len = mark;
  after->p[after->len] = '\0';
  return dm_buf_putc(after, '}') < 0 ? sync_nomem(u, err) : 0;
}
