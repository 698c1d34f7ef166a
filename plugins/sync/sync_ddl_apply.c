/*
 * DDL of the binlog. When a statement event outside a transaction arrives, the coordinator has
 * applied everything before it (all workers idle, their checkpoint rows at the DDL's start), then:
 *
 *   1. a binlog operator registered for the event's position (`dmctl binlog ... -b FILE:POS`)
 *      skips it, replaces it, or injects statements before it;
 *   2. else the statement is parsed (sync_ddl.c), split into one statement per table, and each
 *      part is dropped when the block-allow list or the task's binlog event filters say so, and
 *      its names are rewritten by the routes;
 *   3. the global checkpoint row is marked "DDL at FILE:POS being applied", the statements run,
 *      and all checkpoint rows move past the event in one transaction (which clears the mark).
 *
 * MariaDB commits a DDL by itself, so a crash between 3's statements and the checkpoint would run
 * the DDL a second time after the restart. The mark says so: when the unit meets the marked event
 * again, errors that mean "this is already done" (table exists, unknown table, duplicate column,
 * ...) count as success.
 *
 * A DDL the target refuses pauses the subtask with DM_ERR_SYNC_DDL naming FILE:POS; a `dmctl
 * binlog` operator registered without -b is then used for the failing event at the next try.
 *
 * The statement's text is the source user's: it runs on a target connection of its own that
 * refuses a second statement in one query (no CLIENT_MULTI_STATEMENTS), under the event's own
 * sql_mode, client charset and time zone (its status variables; the zone: sync_tz.c), so the
 * target reads every quote, backslash, multi-byte character and TIMESTAMP literal as the source
 * did; the parser reads it under the same
 * rules, and a statement in which it finds a ';' followed by more text is refused
 * (DM_ERR_SYNC_DDL_MULTI) before anything runs. Operator statements run under the unit's own
 * session. No log line above DEBUG carries statement text, and the text in messages has its
 * passwords redacted (sync_ddl_redact).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mysqld_error.h>

#include "sync.h"
#include "sync_ddl.h"
#include "sync_shard.h"
#include "sync_tracker.h"

bool sync_ddl_already_done(unsigned code) {
  switch (code) {
  case ER_DB_CREATE_EXISTS:       /* 1007 */
  case ER_DB_DROP_EXISTS:         /* 1008 */
  case ER_TABLE_EXISTS_ERROR:     /* 1050 */
  case ER_BAD_TABLE_ERROR:        /* 1051 */
  case ER_DUP_FIELDNAME:          /* 1060 */
  case ER_DUP_KEYNAME:            /* 1061 */
  case ER_CANT_DROP_FIELD_OR_KEY: /* 1091 */
  case ER_NO_SUCH_TABLE:          /* 1146 */
  case ER_BAD_FIELD_ERROR:        /* 1054: a column renamed or dropped already */
  case 1176:                      /* ER_KEY_DOES_NOT_EXITS */
    return true;
  default:
    return false;
  }
}

static void sync_ddl_route(void *arg, const char *schema, const char *table, char *out_schema,
                           size_t schema_len, char *out_table, size_t table_len) {
  sync_unit *u = arg;
  u->host->route_table(u->ctx, schema, table, out_schema, schema_len, out_table, table_len);
}

/* sql_mode bit of both servers: DATA/INDEX DIRECTORY of a CREATE TABLE are ignored. Always set
 * on the target: where the source kept a table's files says nothing about the target's disks,
 * and a source user must not choose where the target's account writes files. */
#define SYNC_SQL_MODE_NO_DIR_IN_CREATE (1ull << 7)

typedef struct sync_ddl_run {
  sync_unit *u;
  MYSQL *tc;   /* the unit's target connection (the checkpoint's) */
  MYSQL *conn; /* the DDL connection, opened at the first statement to run */
  const dm_binlog_query *q;
  const char *at;
  bool replay;
  dm_error *err;
  /* the event's session: SET for its statements ("" when the event names none), and how its
   * text is read (sync_ddl_flags) */
  char session_sql[384];
  unsigned flags;
  bool in_event_session; /* the connection runs under session_sql now */
} sync_ddl_run;

/* The sql_mode a statement of the event runs under on the target. MariaDB's bits are the
 * target's; a MySQL source shares bits 0..31 but for the combination-mode markers 8..17 (MySQL 8
 * has none, and MariaDB's ORACLE switches to another parser), and its bit 32 means something
 * else (TIME_TRUNCATE_FRACTIONAL). */
static uint64_t sync_ddl_sql_mode(uint64_t mode, bool mariadb) {
  if (!mariadb)
    mode &= 0xffffffffull & ~(0x3ffull << 8);
  return mode | SYNC_SQL_MODE_NO_DIR_IN_CREATE;
}

/* Reads the event's sql_mode and charsets into run: the SET that replays them, and the flags
 * its text is parsed under. A client charset the target does not know can still be replayed
 * for a text of ASCII bytes only (every client charset reads those alike), not otherwise. */
static int sync_ddl_session_prepare(sync_ddl_run *run, const dm_binlog_format *fmt) {
  sync_unit *u = run->u;
  const dm_binlog_query *q = run->q;
  uint64_t mode = 0;
  const char *client = NULL;
  size_t o = 0;
  run->session_sql[0] = '\0';
  if (q->has_sql_mode) {
    mode = sync_ddl_sql_mode(q->sql_mode, fmt ? fmt->mariadb : true);
    o += (size_t)snprintf(run->session_sql + o, sizeof run->session_sql - o,
                          "SET SESSION sql_mode=%" PRIu64, mode);
  }
  if (q->has_charset) {
    client = sync_charsets_name(u->charsets, q->charset_client);
    if (!client) {
      for (uint32_t i = 0; i < q->query.len; i++) {
        if ((unsigned char)q->query.ptr[i] >= 0x80) {
          u->host->error_make(u->ctx, run->err, DM_ERR_SYNC_DDL_CHARSET, NULL,
                              "sync: the DDL at %s was written in a client character set the "
                              "target does not know (collation id %u), and holds non-ASCII bytes "
                              "(at byte %" PRIu32 ") the target cannot read as the source did",
                              run->at, (unsigned)q->charset_client, i);
          return -1;
        }
      }
    }
    /* by collation id, as mariadb-binlog prints them; ids the target lacks are left at the
     * session's (binary) */
    const uint16_t ids[3] = {q->charset_client, q->collation_connection, q->collation_server};
    static const char *const vars[3] = {"character_set_client", "collation_connection",
                                        "collation_server"};
    for (int k = 0; k < 3; k++)
      if (sync_charsets_name(u->charsets, ids[k]) && o < sizeof run->session_sql)
        o += (size_t)snprintf(run->session_sql + o, sizeof run->session_sql - o,
                              "%s@@session.%s=%u", o ? "," : "SET ", vars[k], (unsigned)ids[k]);
  }
  char zb[SYNC_TZ_MAX + 1];
  const char *tz = sync_tz_of_event(u, q, zb, sizeof zb);
  if (tz && !sync_tz_valid(tz)) {
    u->host->error_make(u->ctx, run->err, DM_ERR_SYNC_DDL, NULL,
                        "sync: the DDL at %s ran at a time zone whose name cannot be replayed "
                        "(%zu bytes, not a zone's name or an offset)",
                        run->at, strlen(tz));
    return -1;
  }
  if (tz && o < sizeof run->session_sql)
    o += (size_t)snprintf(run->session_sql + o, sizeof run->session_sql - o,
                          "%s@@session.time_zone='%s'", o ? "," : "SET ", tz);
  if (o >= sizeof run->session_sql) {
    u->host->error_make(u->ctx, run->err, DM_ERR_SYNC_DDL, NULL,
                        "sync: the session of the DDL at %s does not fit in %zu bytes", run->at,
                        sizeof run->session_sql);
    return -1;
  }
  run->flags = sync_ddl_flags(q->has_sql_mode ? mode : 0, client);
  return 0;
}

/* The DDL connection, opened at the first call; in the default database of the event (routed),
 * for statements a binlog operator gives that name tables without a schema. */
static MYSQL *sync_ddl_conn(sync_ddl_run *run) {
  sync_unit *u = run->u;
  if (run->conn)
    return run->conn;
  if (!(run->conn = sync_db_connect_ddl(u, run->err)))
    return NULL;
  if (run->q->db.len) {
    char db[SYNC_NAME_MAX], tdb[SYNC_NAME_MAX], tt[SYNC_NAME_MAX];
    size_t dl = run->q->db.len < sizeof db - 1 ? run->q->db.len : sizeof db - 1;
    memcpy(db, run->q->db.ptr, dl);
    db[dl] = '\0';
    sync_route(u, db, NULL, tdb, tt);
    dm_buf use = {0};
    if (dm_buf_puts(&use, "USE ") == 0 && sync_sql_ident(&use, tdb, strlen(tdb)) == 0 &&
        mysql_real_query(run->conn, use.p, (unsigned long)use.len) != 0) {
      /* the schema is not on the target (yet): the statements are qualified anyway */
    }
    dm_buf_free(&use);
  }
  return run->conn;
}

/* Puts the connection under the event's session (event) or the unit's own (a binlog operator's
 * statements, written by whoever runs dmctl). */
static int sync_ddl_session(sync_ddl_run *run, bool event) {
  static const char unit_session[] =
      "SET SESSION sql_mode='" SYNC_SQL_MODE "',NAMES binary,@@session.collation_server=DEFAULT,"
      "time_zone='+00:00'";
  if (event == run->in_event_session || !run->session_sql[0])
    return 0;
  const char *sql = event ? run->session_sql : unit_session;
  if (mysql_real_query(run->conn, sql, (unsigned long)strlen(sql)) != 0) {
    char what[DM_ERROR_MESSAGE_MAX];
    snprintf(what, sizeof what, "sync: cannot set the session for the DDL at %s on the target (%s)",
             run->at, sql);
    sync_db_error(run->u, run->conn, what, run->err);
    if (!run->err->resumable)
      run->err->code = DM_ERR_SYNC_DDL;
    return -1;
  }
  run->in_event_session = event;
  return 0;
}

/* Runs one statement: the event's (event true: under its session) or an operator's. */
static int sync_ddl_exec(sync_ddl_run *r, const char *sql, size_t len, bool event) {
  sync_unit *u = r->u;
  if (!sync_ddl_conn(r) || sync_ddl_session(r, event) < 0)
    return -1;
  if (mysql_real_query(r->conn, sql, (unsigned long)len) == 0) {
    MYSQL_RES *res = mysql_store_result(r->conn);
    if (res)
      mysql_free_result(res);
    return 0;
  }
  unsigned code = mysql_errno(r->conn);
  unsigned flags = event ? r->flags : 0;
  if (r->replay && sync_ddl_already_done(code)) {
    char said[DM_ERROR_RAW_MAX];
    dm_strlcpy(said, mysql_error(r->conn), sizeof said);
    sync_ddl_scrub(sql, len, flags, said, sizeof said);
    u->host->logf(u->ctx, DM_LOG_WARN,
                  "sync: the DDL at %s ran before the restart (the target says: %s): counted as "
                  "done",
                  r->at, said);
    return 0;
  }
  dm_buf what = {0};
  dm_buf_printf(&what, "sync: the DDL at %s failed on the target: ", r->at);
  sync_ddl_redact(sql, len, flags, 300, &what);
  sync_db_error(u, r->conn, what.p ? what.p : "sync: a DDL failed on the target", r->err);
  sync_ddl_scrub(sql, len, flags, r->err->raw_cause, sizeof r->err->raw_cause);
  if (!r->err->resumable && r->err->code == DM_ERR_DB_QUERY) {
    char cause[DM_ERROR_RAW_MAX];
    dm_strlcpy(cause, r->err->raw_cause, sizeof cause);
    u->host->error_make(u->ctx, r->err, DM_ERR_SYNC_DDL, cause, "%s", what.p ? what.p : "");
  }
  dm_buf_free(&what);
  return -1;
}

static int sync_ddl_exec_list(sync_ddl_run *r, const char *const *sqls, uint32_t n) {
  for (uint32_t i = 0; i < n; i++)
    if (sync_ddl_exec(r, sqls[i], strlen(sqls[i]), false) < 0)
      return -1;
  return 0;
}

/* A parse failure of the event's text: the message carries the text with its passwords redacted,
 * and no password the parser's excerpt ("near ...") quoted. */
static void sync_ddl_parse_failed(sync_ddl_run *run, int rc, const char *msg) {
  sync_unit *u = run->u;
  const dm_binlog_query *q = run->q;
  dm_buf m = {0};
  if (rc == SYNC_DDL_MULTI)
    dm_buf_printf(&m,
                  "sync: the DDL at %s holds more than one statement (%s): refused, nothing "
                  "of it ran: ",
                  run->at, msg);
  else
    dm_buf_printf(&m, "sync: cannot parse the DDL at %s (%s): ", run->at, msg);
  sync_ddl_redact(q->query.ptr, q->query.len, run->flags, 300, &m);
  char text[DM_ERROR_MESSAGE_MAX];
  dm_strlcpy(text, m.p ? m.p : "sync: cannot parse a DDL", sizeof text);
  sync_ddl_scrub(q->query.ptr, q->query.len, run->flags, text, sizeof text);
  u->host->error_make(u->ctx, run->err,
                      rc == SYNC_DDL_MULTI ? DM_ERR_SYNC_DDL_MULTI : DM_ERR_SYNC_DDL, NULL, "%s",
                      text);
  dm_buf_free(&m);
}

/* A statement with a second one after a ';' is never run. Whether it pauses the task: only when
 * its first statement is about a table or schema the task replicates; one about tables the
 * block-allow list leaves out (or no table at all) is skipped like any such DDL, so that a source
 * user cannot pause every task on the source with text about a schema of its own. */
static bool sync_ddl_multi_out_of_scope(sync_ddl_run *run, const char *db, size_t first_end) {
  sync_unit *u = run->u;
  sync_ddl first = {0};
  char msg[64];
  if (sync_ddl_parse_mode(run->q->query.ptr, first_end, db, run->flags, &first, msg, sizeof msg) <
      0)
    return false;
  bool out = true;
  for (int i = 0; i < first.n && out; i++) {
    const sync_ddl_stmt *s = &first.stmts[i];
    if (s->kind == SYNC_DDL_OTHER || s->temporary)
      continue;
    const char *table = s->subject.table[0] ? s->subject.table : NULL;
    if (!s->subject.schema[0] || u->host->table_allowed(u->ctx, s->subject.schema, table))
      out = false;
  }
  if (out)
    u->host->logf(u->ctx, DM_LOG_INFO,
                  "sync: DDL at %s holds a second statement, and the first is about nothing "
                  "the task replicates: skipped, nothing of it ran",
                  run->at);
  sync_ddl_free(&first);
  return out;
}

static bool sync_ddl_allowed(void *arg, const char *schema, const char *table) {
  sync_unit *u = arg;
  return u->host->table_allowed(u->ctx, schema, table);
}

static int sync_ddl_online_kind(void *arg, const char *schema, const char *table) {
  sync_ddl_run *run = arg;
  return (int)sync_online_kind(run->u->online, NULL, schema, table, NULL, 0);
}

/* Does the task replicate this table, a ghost judged by its real table (DM's filter.go)? */
static bool sync_ddl_online_in_scope(sync_ddl_run *run, const sync_ddl_name *t) {
  sync_unit *u = run->u;
  char real[SYNC_NAME_MAX];
  if (u->host->table_allowed(u->ctx, t->schema, t->table))
    return true;
  return sync_online_kind(u->online, NULL, t->schema, t->table, real, sizeof real) ==
             DM_ONLINE_GHOST &&
         u->host->table_allowed(u->ctx, t->schema, real);
}

/* online-ddl on: the parts that move ghost or trash tables get their verdicts (DM's rules,
 * sync_rename_online); a statement DM refuses is refused whole, before any of it runs. */
static int sync_ddl_rename_online(sync_ddl_run *run, const sync_ddl *d, sync_rename_part *parts) {
  sync_unit *u = run->u;
  int bad = -1;
  const char *rules = "";
  /* A RENAME of nothing the task replicates is another application's business (a shared source
   * holds their schema changes too): never judged by this task's rules, nor refused. */
  bool in_scope = false;
  for (int i = 0; i < d->n && !in_scope; i++)
    in_scope =
        sync_rename_part_of(&d->stmts[i]) && (sync_ddl_online_in_scope(run, &d->stmts[i].subject) ||
                                              sync_ddl_online_in_scope(run, &d->stmts[i].other));
  if (!in_scope) {
    for (int i = 0; i < d->n; i++)
      parts[i] = (sync_rename_part){.chain = -1, .swapped = -1};
    return 0;
  }
  int code = sync_rename_online(d, sync_ddl_online_kind, run, parts, &bad, &rules);
  if (code == 0)
    return 0;
  const sync_ddl_stmt *s = &d->stmts[bad];
  dm_buf text = {0};
  sync_ddl_redact(run->q->query.ptr, run->q->query.len, run->flags, 300, &text);
  if (code == DM_ERR_CONFIG_ONLINE_DDL_RULES) {
    bool trash_missed = strcmp(rules, "trash-table-rules") == 0;
    u->host->error_make(
        u->ctx, run->err, code, NULL,
        "sync: the RENAME at %s looks like an online schema change's cut-over on "
        "one side only: `%s`.`%s` matches no rule of %s (DM: ErrConfigOnlineDDL"
        "MistakeRegex); nothing of the statement ran: %s",
        run->at, s->other.schema[0] && trash_missed ? s->other.schema : s->subject.schema,
        trash_missed ? s->other.table : s->subject.table, rules, text.p ? text.p : "");
  } else {
    u->host->error_make(u->ctx, run->err, code, NULL,
                        "sync: the RENAME at %s moves `%s`.`%s` to `%s`.`%s`, a ghost table of "
                        "the task's shadow-table-rules (no online schema change tool does); "
                        "nothing of the statement ran",
                        run->at, s->subject.schema, s->subject.table, s->other.schema,
                        s->other.table);
  }
  dm_buf_free(&text);
  return -1;
}

/* The parts of d that move tables, judged on both sides (sync_ddl_rename.c): *out gets one entry
 * per statement of d (NULL when none moves a table). A table brought into the replicated set
 * from outside refuses the whole event before any of it runs: -1 with DM_ERR_SYNC_RENAME_INTO. A
 * chain the binlog event filters ignore in one of its parts is skipped whole, and one whose two
 * ends route to the same target table has nothing to do there. */
static int sync_ddl_rename_judge(sync_ddl_run *run, const sync_ddl *d, sync_rename_part **out) {
  sync_unit *u = run->u;
  *out = NULL;
  bool any = false;
  for (int i = 0; i < d->n && !any; i++)
    any = sync_rename_part_of(&d->stmts[i]);
  if (!any)
    return 0;
  sync_rename_part *parts = calloc((size_t)d->n, sizeof *parts);
  if (!parts)
    return sync_nomem(u, run->err);
  bool online = sync_online_on(u->online);
  if (online && sync_ddl_rename_online(run, d, parts) < 0) {
    free(parts);
    return -1;
  }
  int into = sync_rename_plan(d, sync_ddl_allowed, u, !online, parts);
  if (into >= 0) {
    const sync_ddl_name *o = parts[into].origin, *f = parts[into].final;
    u->host->error_make(u->ctx, run->err, DM_ERR_SYNC_RENAME_INTO, NULL,
                        "sync: the RENAME at %s brings `%s`.`%s`, which the block-allow list "
                        "leaves out, into the replicated set as `%s`.`%s`: the target has none "
                        "of its rows; nothing of the statement ran",
                        run->at, o->schema, o->table, f->schema, f->table);
    free(parts);
    return -1;
  }
  for (int i = 0; i < d->n; i++) {
    sync_rename_part *p = &parts[i];
    const sync_ddl_stmt *s = &d->stmts[i];
    if (p->chain < 0 || parts[p->chain].verdict != SYNC_RENAME_APPLY)
      continue;
    char os[SYNC_NAME_MAX], ot[SYNC_NAME_MAX], fs[SYNC_NAME_MAX], ft[SYNC_NAME_MAX];
    sync_route(u, s->subject.schema, s->subject.table, os, ot);
    sync_route(u, s->other.schema, s->other.table, fs, ft);
    bool same = strcmp(os, fs) == 0 && strcmp(ot, ft) == 0;
    int skip =
        same ? 1 : sync_filter_ddl(u, run->at, s, s->subject.schema, s->subject.table, run->err);
    if (skip < 0) {
      free(parts);
      return -1;
    }
    if (skip) {
      u->host->logf(u->ctx, DM_LOG_INFO,
                    "sync: RENAME at %s of `%s`.`%s` to `%s`.`%s` %s: skipped, with every part "
                    "that moves the same table",
                    run->at, s->subject.schema, s->subject.table, s->other.schema, s->other.table,
                    same ? "routes both names to one target table"
                         : "ignored by the task's filters");
      parts[p->chain].verdict = SYNC_RENAME_NEITHER;
    }
  }
  for (int i = 0; i < d->n; i++) {
    sync_rename_part *p = &parts[i];
    if (p->chain < 0)
      continue;
    p->verdict = parts[p->chain].verdict;
    if (p->chain != i)
      continue;
    const sync_ddl_name *o = p->origin, *f = p->final;
    if (p->verdict == SYNC_RENAME_OUT)
      u->host->logf(u->ctx, DM_LOG_INFO,
                    "sync: RENAME at %s moves `%s`.`%s` out of the replicated set (to `%s`.`%s`, "
                    "which the block-allow list leaves out): skipped, the target keeps the table",
                    run->at, o->schema, o->table, f->schema, f->table);
    else if (p->verdict == SYNC_RENAME_GHOST && p->swapped >= 0)
      u->host->logf(u->ctx, DM_LOG_WARN,
                    "sync: RENAME at %s swaps `%s`.`%s` in for `%s`.`%s` (an online schema "
                    "change's cut-over; the block-allow list leaves out `%s`.`%s` and `%s`.`%s`): "
                    "skipped, the target keeps `%s` with its rows and applies the rows of the new "
                    "`%s` to it; a change of its columns the tool made on its copy is not applied",
                    run->at, o->schema, o->table, f->schema, f->table, o->schema, o->table,
                    parts[p->swapped].final->schema, parts[p->swapped].final->table, f->table,
                    f->table);
    else if (p->verdict == SYNC_RENAME_NEITHER)
      u->host->logf(u->ctx, DM_LOG_DEBUG,
                    "sync: RENAME at %s of `%s`.`%s` to `%s`.`%s`: not replicated, skipped",
                    run->at, o->schema, o->table, f->schema, f->table);
  }
  *out = parts;
  return 0;
}

/* One more statement starts at byte `off` of the output; with `kept` (shard mode), what it is
 * about. -1: no memory. */
static int sync_ddl_push(uint32_t **offs, sync_ddl_kept **kept, uint32_t *n, uint32_t *cap,
                         size_t off, sync_ddl_kept what) {
  if (*n == *cap) {
    uint32_t c = 2 * *cap;
    uint32_t *p = realloc(*offs, c * sizeof *p);
    if (!p)
      return -1;
    *offs = p;
    if (kept) {
      sync_ddl_kept *k = realloc(*kept, c * sizeof *k);
      if (!k)
        return -1;
      *kept = k;
    }
    *cap = c;
  }
  if (kept)
    (*kept)[*n] = what;
  (*offs)[(*n)++] = (uint32_t)off;
  return 0;
}

/* online-ddl (sync_online.c, docs/shard.md "Online DDL"): statement s of the event when it is
 * about a ghost or trash table. Returns 1 when it is (handled: the cut-over's recorded statements
 * appended to out, a ghost's DDL recorded, anything else skipped), 0 when s is for the usual
 * path, -1 with run->err. */
static int sync_ddl_online_part(sync_ddl_run *run, const sync_ddl_stmt *s, sync_rename_verdict rv,
                                dm_buf *out, uint32_t **offs, sync_ddl_kept **kept, uint32_t *n,
                                uint32_t *cap) {
  sync_unit *u = run->u;
  sync_online *o = u->online;
  if (!sync_online_on(o) || !s->subject.table[0])
    return 0;
  if (rv == SYNC_RENAME_TOOL || rv == SYNC_RENAME_TRASHED) {
    if (rv == SYNC_RENAME_TRASHED)
      sync_online_forget(o, s->subject.schema, s->subject.table);
    u->host->logf(u->ctx, DM_LOG_INFO,
                  "sync: online DDL at %s: RENAME of `%s`.`%s` to `%s`.`%s` (a tool's table): "
                  "nothing to run on the target",
                  run->at, s->subject.schema, s->subject.table, s->other.schema, s->other.table);
    sync_schema_invalidate(u->schema, s->subject.schema, s->subject.table);
    return 1;
  }
  if (rv == SYNC_RENAME_CUTOVER) {
    /* judged by the real table's name, which the ALTER was recorded under; not by the filters'
     * "rename table" (what runs on the target is the recorded statements) */
    if (!u->host->table_allowed(u->ctx, s->other.schema, s->other.table)) {
      sync_online_forget(o, s->subject.schema, s->subject.table);
      u->host->logf(u->ctx, DM_LOG_DEBUG,
                    "sync: online DDL at %s: cut-over to `%s`.`%s`, which the block-allow list "
                    "leaves out: skipped",
                    run->at, s->other.schema, s->other.table);
      return 1;
    }
    size_t start = out->len;
    uint32_t k = 0;
    if (sync_online_cutover(o, &s->subject, &s->other, run->flags, run->at, out, &k, run->err) < 0)
      return -1;
    /* in a shard group the recorded statements are the real table's DDL (docs/shard.md "Inside
     * a shard group"): the group's lock holds it as for any ALTER of a member */
    sync_ddl_kept what = {.kind = SYNC_DDL_ALTER_TABLE, .subject = s->other};
    for (uint32_t j = 0; j < k; j++) {
      if (sync_ddl_push(offs, kept, n, cap, start, what) < 0)
        return sync_nomem(u, run->err);
      start += strlen(out->p + start) + 1;
    }
    sync_schema_invalidate(u->schema, s->subject.schema, s->subject.table);
    sync_schema_invalidate(u->schema, s->other.schema, s->other.table);
    return 1;
  }
  if (rv != SYNC_RENAME_NONE)
    return 0;
  char real[SYNC_NAME_MAX];
  dm_online_kind k =
      sync_online_kind(o, run->tc, s->subject.schema, s->subject.table, real, sizeof real);
  if (k == DM_ONLINE_REAL)
    return 0;
  if (k == DM_ONLINE_TRASH) {
    u->host->logf(u->ctx, DM_LOG_DEBUG, "sync: online DDL at %s on trash table `%s`.`%s`: skipped",
                  run->at, s->subject.schema, s->subject.table);
    return 1;
  }
  /* a ghost: the block-allow list and the filters judge it by its real table (DM's filter.go) */
  int skip = u->host->table_allowed(u->ctx, s->subject.schema, real)
                 ? sync_filter_ddl(u, run->at, s, s->subject.schema, real, run->err)
                 : 1;
  if (skip < 0)
    return -1;
  if (skip) {
    u->host->logf(u->ctx, DM_LOG_DEBUG,
                  "sync: online DDL at %s on ghost table `%s`.`%s`: its real table `%s` is left "
                  "out by the block-allow list or the filters: skipped",
                  run->at, s->subject.schema, s->subject.table, real);
    return 1;
  }
  return sync_online_ghost_ddl(o, s, s->subject.schema, real, run->at, run->err) < 0 ? -1 : 1;
}

/* collation_compatible: strict (docs/sync.md, "collation_compatible"): the statement just
 * written to out from `start` on, a CREATE DATABASE or CREATE TABLE, gets the source's collations
 * written in (dmhost/ddl_collation.h, DM's adjustCollation). A database naming neither charset nor
 * collation gets the server collation the event carries (what the source gave it); a MySQL 8
 * event's default_collation_for_utf8mb4 is utf8mb4's default. The source's set is read once per
 * run. 0, or -1 with *run->err. */
static int sync_ddl_collate(sync_ddl_run *run, const sync_ddl_stmt *s, dm_buf *out, size_t start) {
  sync_unit *u = run->u;
  if ((s->kind != SYNC_DDL_CREATE_DATABASE && s->kind != SYNC_DDL_CREATE_TABLE) ||
      !dm_host_collation_strict(u->host, u->ctx))
    return 0;
  if (!u->coll) {
    MYSQL *sc = sync_db_connect_source(u, run->err);
    int rc =
        sc ? dm_collations_read(sc, "sync (collation_compatible: strict)", &u->coll, run->err) : -1;
    sync_db_close(u, sc);
    if (rc < 0)
      return -1;
  }
  const dm_binlog_query *q = run->q;
  const char *server = q->has_charset ? dm_collations_name(u->coll, q->collation_server) : NULL;
  dm_ddl_collation_opts o = {.lex_flags = s->flags,
                             .database_collation = server ? server : dm_collations_server(u->coll),
                             .utf8mb4_default =
                                 q->has_default_collation_utf8
                                     ? dm_collations_name(u->coll, q->default_collation_utf8)
                                     : NULL};
  char *adj, note[512];
  size_t adj_len;
  int rc = dm_ddl_add_collations(out->p + start, out->len - start, u->coll, &o, &adj, &adj_len,
                                 note, sizeof note);
  if (rc < 0)
    return sync_nomem(u, run->err);
  if (note[0])
    u->host->logf(u->ctx, DM_LOG_INFO,
                  "sync: collation_compatible strict: DDL at %s (%s `%s`%s%s%s): %s%s", run->at,
                  sync_ddl_event_name(s->kind), s->subject.schema, s->subject.table[0] ? ".`" : "",
                  s->subject.table, s->subject.table[0] ? "`" : "", note,
                  rc == 1 ? "" : " (the statement runs as written)");
  if (rc == 1) {
    out->len = start;
    rc = dm_buf_put(out, adj, adj_len);
    free(adj);
    if (rc < 0)
      return sync_nomem(u, run->err);
  }
  return 0;
}

/* The statements of the event after parsing, filtering and routing, one per array slot; with
 * `kept`, what each is about (for the shard groups). */
static int sync_ddl_prepare(sync_ddl_run *run, dm_buf *out, uint32_t **offs, uint32_t *n,
                            sync_ddl_kept **kept) {
  sync_unit *u = run->u;
  const dm_binlog_query *q = run->q;
  const char *at = run->at;
  dm_error *err = run->err;
  char db[SYNC_NAME_MAX];
  size_t dl = q->db.len < sizeof db - 1 ? q->db.len : sizeof db - 1;
  memcpy(db, q->db.ptr, dl);
  db[dl] = '\0';
  sync_ddl d = {0};
  char msg[512];
  int prc = sync_ddl_parse_mode(q->query.ptr, q->query.len, db, run->flags, &d, msg, sizeof msg);
  if (prc == SYNC_DDL_MULTI && sync_ddl_multi_out_of_scope(run, db, d.multi_at)) {
    *offs = NULL;
    *n = 0;
    return 0;
  }
  if (prc < 0) {
    sync_ddl_parse_failed(run, prc, msg);
    return -1;
  }
  sync_rename_part *renames = NULL;
  if (sync_ddl_rename_judge(run, &d, &renames) < 0) {
    sync_ddl_free(&d);
    return -1;
  }
  uint32_t cap = (uint32_t)d.n + 1;
  *offs = calloc(cap, sizeof **offs);
  if (kept)
    *kept = calloc(cap, sizeof **kept);
  if (!*offs || (kept && !*kept)) {
    free(renames);
    sync_ddl_free(&d);
    sync_nomem(u, err);
    return -1;
  }
  *n = 0;
  for (int i = 0; i < d.n; i++) {
    const sync_ddl_stmt *s = &d.stmts[i];
    const char *ev = sync_ddl_event_name(s->kind);
    bool schema_only = s->subject.table[0] == '\0';
    const char *table = schema_only ? NULL : s->subject.table;
    if (s->temporary) {
      u->host->logf(u->ctx, DM_LOG_DEBUG, "sync: DDL at %s on a temporary table: skipped", at);
      continue;
    }
    if (s->kind == SYNC_DDL_OTHER) {
      /* CREATE USER, GRANT, SET PASSWORD, ...: the verb at INFO, the (redacted) text at DEBUG */
      char verb[64];
      sync_ddl_verb(s->sql, s->sql_len, run->flags, verb, sizeof verb);
      u->host->logf(u->ctx, DM_LOG_INFO,
                    "sync: statement at %s is not a DDL on tables: skipped (%s)", at, verb);
      dm_buf t = {0};
      sync_ddl_redact(s->sql, s->sql_len, run->flags, 200, &t);
      u->host->logf(u->ctx, DM_LOG_DEBUG, "sync: statement at %s skipped: %s", at, t.p ? t.p : "");
      dm_buf_free(&t);
      continue;
    }
    sync_rename_verdict rv = renames ? renames[i].verdict : SYNC_RENAME_NONE;
    int on = sync_ddl_online_part(run, s, rv, out, offs, kept, n, &cap);
    if (on < 0) {
      free(renames);
      sync_ddl_free(&d);
      return -1;
    }
    if (on > 0)
      continue; /* an online schema change's: done above */
    if (rv != SYNC_RENAME_NONE && rv != SYNC_RENAME_APPLY) {
      /* judged (and logged) above; the source's tables under both names changed */
      sync_schema_invalidate(u->schema, s->subject.schema, s->subject.table);
      sync_schema_invalidate(u->schema, s->other.schema, s->other.table);
      continue;
    }
    if (rv == SYNC_RENAME_APPLY) {
      /* judged above by both ends of the table's chain (an intermediate name may be left out) */
    } else if (s->subject.schema[0] && !u->host->table_allowed(u->ctx, s->subject.schema, table)) {
      u->host->logf(u->ctx, DM_LOG_DEBUG,
                    "sync: DDL at %s on `%s`.`%s` left out by the "
                    "block-allow list",
                    at, s->subject.schema, table ? table : "");
      continue;
    }
    int skip =
        rv == SYNC_RENAME_NONE ? sync_filter_ddl(u, at, s, s->subject.schema, table, err) : 0;
    if (skip < 0) {
      free(renames);
      sync_ddl_free(&d);
      return -1;
    }
    if (skip) {
      u->host->logf(u->ctx, DM_LOG_INFO,
                    "sync: DDL at %s (%s on `%s`%s%s%s) ignored by the task's filters", at,
                    ev ? ev : "alter database", s->subject.schema, table ? ".`" : "",
                    table ? table : "", table ? "`" : "");
      continue;
    }
    sync_ddl_kept what = {.kind = s->kind, .moves = sync_rename_part_of(s), .subject = s->subject};
    size_t start = out->len;
    bool written = sync_ddl_push(offs, kept, n, &cap, out->len, what) == 0 &&
                   sync_ddl_rewrite(s, sync_ddl_route, u, true, out) == 0;
    if (written && sync_ddl_collate(run, s, out, start) < 0) {
      free(renames);
      sync_ddl_free(&d);
      return -1;
    }
    if (!written || dm_buf_putc(out, '\0') < 0) {
      free(renames);
      sync_ddl_free(&d);
      u->host->error_make(u->ctx, err, DM_ERR_SYNC_DDL, NULL,
                          "sync: cannot write the names of the DDL at %s for the target (out of "
                          "memory, a route gave an empty name, or a name is not whole characters "
                          "of the event's client charset)",
                          at);
      return -1;
    }
    sync_val_ddl(u->val, s); /* its pending rows of the tables this changes go */
    /* the tables it names are read again from the target at their next row event */
    if (schema_only)
      sync_schema_invalidate(u->schema, s->subject.schema, NULL);
    else
      sync_schema_invalidate(u->schema, s->subject.schema, s->subject.table);
    if (s->has_other)
      sync_schema_invalidate(u->schema, s->other.schema, s->other.table);
  }
  free(renames);
  sync_ddl_free(&d);
  return 0;
}

/* The event's statements as the schema tracker follows them: all of them, whatever the task's
 * filters, routes or a binlog operator make of them on the target (the rows after the DDL have
 * the source's new structure). Empty when the text does not parse or holds a second statement. */
static void sync_ddl_parse_for_tracker(sync_ddl_run *run, sync_ddl *d) {
  char db[SYNC_NAME_MAX], msg[64];
  size_t dl = run->q->db.len < sizeof db - 1 ? run->q->db.len : sizeof db - 1;
  memcpy(db, run->q->db.ptr, dl);
  db[dl] = '\0';
  if (sync_ddl_parse_mode(run->q->query.ptr, run->q->query.len, db, run->flags, d, msg,
                          sizeof msg) < 0)
    memset(d, 0, sizeof *d);
}

int sync_ddl_apply(sync_unit *u, MYSQL *conn, const dm_binlog_format *fmt,
                   const dm_binlog_event *ev, const dm_binlog_query *q, const dm_position *after,
                   int n_workers, dm_error *err) {
  char at[DM_POSITION_NAME_MAX + 24];
  snprintf(at, sizeof at, "%s:%" PRIu64, ev->file, ev->offset);
  sync_ddl_run run = {.u = u,
                      .tc = conn,
                      .q = q,
                      .at = at,
                      .replay = strcmp(u->replay_ddl_at, at) == 0,
                      .err = err};
  bool has_ops =
      DM_HOST_HAS(u->host, binlog_operator) && DM_HOST_HAS(u->host, binlog_operator_done);
  dm_binlog_operator op = {0};
  bool have_op = has_ops && u->host->binlog_operator(u->ctx, ev->file, ev->offset, false, &op);

  dm_buf text = {0};
  uint32_t *offs = NULL, n = 0;
  int rc = -1;
  sync_ddl tracked = {0};
  /* shard mode: which statements hold a table, leave or join a group (a binlog operator for the
   * event stands for the whole event, as without shard mode) */
  sync_ddl_kept *kept = NULL;
  sync_shard_plan_t *plan = NULL;
  bool shard = u->shard && !have_op;
  if ((!have_op || op.kind == DM_BINLOG_OP_INJECT) &&
      (sync_ddl_session_prepare(&run, fmt) < 0 ||
       sync_ddl_prepare(&run, &text, &offs, &n, shard ? &kept : NULL) < 0))
    goto failed;
  if (shard) {
    if (!(plan = calloc(1, sizeof *plan))) {
      sync_nomem(u, err);
      goto out;
    }
    if (sync_shard_plan(u->shard, at, kept, offs, &n, plan, err) < 0)
      goto failed;
  }
  bool hold = plan && plan->hold >= 0;
  bool readable = true;
  if (have_op && op.kind != DM_BINLOG_OP_INJECT) { /* how the text reads, for the tracker */
    dm_error ignored;
    run.err = &ignored;
    readable = sync_ddl_session_prepare(&run, fmt) == 0;
    run.err = err;
  }
  if (readable)
    sync_ddl_parse_for_tracker(&run, &tracked);
  /* tables the DDL changes that the tracker meets for the first time: from the target as it is
   * before the DDL runs there */
  if (sync_tracker_ddl_before(u->tracker, conn, &tracked, err) < 0)
    goto out;
  /* optimistic: the member's DDL asks its lock (exec, skip or held) before anything runs */
  dm_shard_op sop;
  bool opt_op = false;
  if (hold && sync_shard_optimistic(u->shard)) {
    if (sync_shard_opt_ddl(u->shard, conn, conn, &tracked, plan, text.p, offs, &n, after, &sop,
                           err) < 0)
      goto failed;
    opt_op = true;
    hold = plan->hold >= 0;
  }
  if (sync_cp_mark_ddl(u, conn, at, err) < 0)
    goto out;
  if (have_op) {
    u->host->logf(u->ctx, DM_LOG_INFO, "sync: binlog operator %s for the event at %s",
                  op.kind == DM_BINLOG_OP_SKIP      ? "skip"
                  : op.kind == DM_BINLOG_OP_REPLACE ? "replace"
                                                    : "inject",
                  at);
    if (op.kind != DM_BINLOG_OP_SKIP &&
        sync_ddl_exec_list(&run, (const char *const *)op.sqls, op.n_sqls) < 0)
      goto failed;
  }
  if (!hold && (!have_op || op.kind == DM_BINLOG_OP_INJECT)) {
    for (uint32_t i = 0; i < n; i++) {
      const char *sql = text.p + offs[i];
      if (sync_ddl_exec(&run, sql, strlen(sql), true) == 0)
        continue;
      /* refused: an operator registered for the failing event (dmctl binlog without -b)? */
      dm_binlog_operator fop = {0};
      if (err->code != DM_ERR_SYNC_DDL || have_op ||
          !(has_ops && u->host->binlog_operator(u->ctx, ev->file, ev->offset, true, &fop)))
        goto failed;
      have_op = true;
      op = fop;
      u->host->logf(u->ctx, DM_LOG_INFO, "sync: binlog operator for the failing event at %s", at);
      if (op.kind != DM_BINLOG_OP_SKIP &&
          sync_ddl_exec_list(&run, (const char *const *)op.sqls, op.n_sqls) < 0)
        goto failed;
      if (op.kind == DM_BINLOG_OP_INJECT && sync_ddl_exec(&run, sql, strlen(sql), true) < 0)
        goto failed;
      if (op.kind != DM_BINLOG_OP_INJECT)
        break; /* skip / replace stand for the whole event */
    }
  }
  if (tracked.n) {
    /* the shadows follow, on the DDL connection under the event's session, before the
     * checkpoint moves past the event (a restart in between replays both) */
    if (!sync_ddl_conn(&run) || sync_ddl_session(&run, true) < 0)
      goto failed;
    sync_tracker_ddl_after(u->tracker, run.conn, &tracked, at, run.replay);
  }
  /* the online DDL records the event changed and, in shard mode, the held table's row and the
   * rows of tables that left commit with the position past the event: the hold, the records and
   * the position agree after any stop */
  dm_buf also = {0};
  if (sync_online_sql(u->online, conn, &also) < 0 ||
      (plan && sync_shard_plan_sql(u->shard, conn, plan, at, text.p, offs, n, after, &also) < 0)) {
    dm_buf_free(&also);
    sync_nomem(u, err);
    goto out;
  }
  int cp = sync_cp_reset_with(u, conn, after, 0, n_workers, &also, err);
  dm_buf_free(&also);
  if (cp < 0)
    goto out;
  sync_online_committed(u->online);
  if (plan && sync_shard_plan_done(u->shard, plan, at, text.p, offs, n, after, err) < 0)
    goto out;
  if (opt_op && u->host->shard_done(u->ctx, &sop, err) < 0)
    goto out;
  if (have_op)
    u->host->binlog_operator_done(u->ctx, &op);
  u->replay_ddl_at[0] = '\0';
  rc = 0;
  goto out;
failed:
  if (!err->resumable) {
    /* Refused, not interrupted: the DDL did not run, so the next try must not count "already
     * exists" errors as done. The mark stays only when a lost connection leaves it open whether
     * the DDL ran. */
    dm_error e2;
    sync_cp_mark_ddl(u, conn, "", &e2);
  }
  if (err->code == DM_ERR_SYNC_DDL) {
    char w[DM_ERROR_WORKAROUND_MAX];
    snprintf(w, sizeof w,
             "Fix the target, or tell the task what to do with this event: `dmctl binlog "
             "skip|replace|inject %.64s -b %.100s [SQL...]`, then resume the task.",
             u->host->task_name(u->ctx), at);
    dm_strlcpy(err->workaround, w, sizeof err->workaround);
  }
out:
  free(kept);
  free(plan);
  sync_ddl_free(&tracked);
  sync_db_close(u, run.conn);
  free(offs);
  dm_buf_free(&text);
  return rc;
}
