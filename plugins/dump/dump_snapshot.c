/*
 * One consistent snapshot shared by every worker connection, and the binlog position it matches.
 *
 * Why a global read lock: MariaDB gives a single connection a consistent position without any lock
 * (START TRANSACTION WITH CONSISTENT SNAPSHOT, then the binlog_snapshot_file/_position status
 * variables), but N connections cannot share one snapshot that way: each START TRANSACTION takes
 * its own read view, and commits landing between them would make the workers see different data.
 * So, as mydumper does, the main connection takes FLUSH TABLES WITH READ LOCK (no commit can
 * happen while it is held), every worker starts its snapshot, the main connection reads the
 * binlog position — which then matches every snapshot exactly — and UNLOCK TABLES. The lock is
 * held only for those statements: the worker connections are opened before it is taken.
 *
 * The position is what a sync continues from. When no sync follows (modes full and dump, the
 * host's unit_follows), the dump reads it when the source user may (and records it) and goes on
 * without it when the user may not (no REPLICATION CLIENT) or the binlog is off: a warning in the
 * log and in the metadata, as DM's dumpling does. With a sync to follow it is required.
 *
 * That is consistency = flush. The `consistency` setting (docs/dump.md) has the others: lock
 * (LOCK TABLES ... READ of the dumped tables instead of the global lock), snapshot (no lock, no
 * RELOAD: the dump runs on ONE connection, whose position binlog_snapshot_* gives), none (no
 * lock, each worker its own snapshot; a sync runs in safe mode until it passes the position read
 * after the last snapshot started) and auto, the default (the best of these the user may).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mysqld_error.h>

#include "dmhost/grants.h"
#include "dump_internal.h"

/* The privileges SHOW GRANTS gives the source user (DM_PRIV_* of dmhost/grants.h, the reading the
 * host's precheck shares), or -1. */
static int dump_snapshot_grants(dump_unit *u, dm_error *err) {
  MYSQL_RES *res;
  if (dump_conn_query(u, &u->main, "SHOW GRANTS", &res, err) != 0)
    return -1;
  uint32_t have = 0;
  MYSQL_ROW row;
  while ((row = mysql_fetch_row(res)))
    if (row[0])
      have |= dm_grant_line(row[0], NULL);
  mysql_free_result(res);
  return (int)have;
}

/* What `mode` needs (dm_grants_dump_need: one table with the host's precheck). */
static int dump_snapshot_need(dump_unit *u, dump_consistency mode) {
  return (int)dm_grants_dump_need(dump_consistency_names[mode], u->sync_follows);
}

/* Checks SHOW GRANTS up front, so the user learns every missing privilege at once instead of one
 * per failed start. */
static int dump_snapshot_check_privileges(dump_unit *u, dump_consistency mode, int have,
                                          dm_error *err) {
  int need = dump_snapshot_need(u, mode);
  if ((have & need) == need)
    return 0;
  char missing[128];
  dm_grant_names((uint32_t)(need & ~have), missing, sizeof missing);
  const dm_db_endpoint *ep = u->host->source_db(u->ctx);
  bool flush = mode == DUMP_CONS_FLUSH;
  u->host->error_make(
      u->ctx, err, DM_ERR_DB_PRIVILEGE, NULL,
      "dump: the source user `%s` on %s:%d lacks %s (SELECT reads the tables%s%s): GRANT %s ON "
      "*.* TO the user%s",
      ep->user ? ep->user : "", ep->host ? ep->host : "", ep->port, missing,
      flush                    ? ", RELOAD takes FLUSH TABLES WITH READ LOCK"
      : mode == DUMP_CONS_LOCK ? ", LOCK TABLES locks the dumped tables while the snapshots start"
                               : "",
      (need & ~have & DM_PRIV_REPL_CLIENT)
          ? ", REPLICATION CLIENT (BINLOG MONITOR since MariaDB 10.5) "
            "reads SHOW MASTER STATUS, the binlog position the sync "
            "of this task mode continues from"
          : "",
      missing,
      flush ? ", or set the dump's consistency = \"snapshot\" (one connection, no lock, no "
              "RELOAD), \"lock\" (LOCK TABLES instead) or \"auto\" in the task's dump section"
            : "");
  return -1;
}

/* No sync follows and the position cannot be read: say why in u->no_pos (the metadata's Warning
 * line) and in the log, and go on. */
static void dump_snapshot_no_position(dump_unit *u, const char *why) {
  const dm_db_endpoint *ep = u->host->source_db(u->ctx);
  snprintf(u->no_pos, sizeof u->no_pos, "no binlog position: %s on the source %s:%d", why,
           ep->host ? ep->host : "", ep->port);
  u->host->logf(u->ctx, DM_LOG_WARN,
                "dump: %s; going on without it, as task mode %s has no sync (no sync can continue "
                "from this dump)",
                u->no_pos, u->host->task_mode(u->ctx));
}

/* `what` found no binary log on the source: 1 when no sync follows (u->no_pos says why), else -1
 * with DM_ERR_DUMP_NO_BINLOG. */
static int dump_snapshot_binlog_off(dump_unit *u, const char *what, dm_error *err) {
  const dm_db_endpoint *ep = u->host->source_db(u->ctx);
  if (!u->sync_follows) {
    char why[256];
    snprintf(why, sizeof why, "%s returned nothing (the binary log is off)", what);
    dump_snapshot_no_position(u, why);
    return 1;
  }
  u->host->error_make(u->ctx, err, DM_ERR_DUMP_NO_BINLOG, NULL,
                      "dump: %s on the source %s:%d returned nothing: its binary log is off", what,
                      ep->host ? ep->host : "", ep->port);
  return -1;
}

/* The binlog position matching the snapshot c has just started, from MariaDB's
 * binlog_snapshot_file/_position (no lock, no privilege): 0, 1 when the server has none (MySQL,
 * or the binary log is off), -1 with *err. There is no matching GTID status variable: pos->gtid
 * stays empty and the sync continues from the file and position. */
static int dump_snapshot_read_status(dump_unit *u, dump_conn *c, dm_position *pos, dm_error *err) {
  MYSQL_RES *res;
  memset(pos, 0, sizeof *pos);
  if (dump_conn_query(u, c, "SHOW STATUS LIKE 'binlog_snapshot_%'", &res, err) != 0)
    return -1;
  bool have_file = false, have_pos = false;
  MYSQL_ROW row;
  while ((row = mysql_fetch_row(res))) {
    if (!row[0] || !row[1])
      continue;
    if (strcmp(row[0], "Binlog_snapshot_file") == 0 && row[1][0]) {
      dm_strlcpy(pos->name, row[1], sizeof pos->name);
      have_file = true;
    } else if (strcmp(row[0], "Binlog_snapshot_position") == 0) {
      pos->pos = strtoull(row[1], NULL, 10);
      have_pos = true;
    }
  }
  mysql_free_result(res);
  return have_file && have_pos ? 0 : 1;
}

/* consistency = snapshot: the position of c's snapshot (dump_snapshot_read_status), required. */
static int dump_snapshot_status_position(dump_unit *u, dump_conn *c, dm_position *pos,
                                         dm_error *err) {
  int got = dump_snapshot_read_status(u, c, pos, err);
  if (got == 1)
    return dump_snapshot_binlog_off(u, "SHOW STATUS LIKE 'binlog_snapshot_%'", err);
  return got;
}

/* SHOW MASTER STATUS and the GTID set (the SDK's reading, dm_db_master_status). Runs under the
 * lock. 1: no position, and none is needed (u->no_pos says why). */
static int dump_snapshot_position(dump_unit *u, dm_position *pos, dm_error *err) {
  int rc = dm_db_master_status(u->main.m, pos);
  if (rc < 0) {
    unsigned int no = mysql_errno(u->main.m);
    if (u->sync_follows ||
        (no != ER_SPECIFIC_ACCESS_DENIED_ERROR && no != ER_ACCESS_DENIED_ERROR)) {
      dump_conn_error(u, &u->main, "SHOW MASTER STATUS", err);
      return -1;
    }
    const dm_db_endpoint *ep = u->host->source_db(u->ctx);
    char why[512];
    snprintf(why, sizeof why,
             "the user `%s` may not run SHOW MASTER STATUS (it lacks REPLICATION CLIENT, called "
             "BINLOG MONITOR since MariaDB 10.5; error %u)",
             ep->user ? ep->user : "", no);
    dump_snapshot_no_position(u, why);
    return 1;
  }
  if (rc == 1)
    return dump_snapshot_binlog_off(u, "SHOW MASTER STATUS", err);
  return 0;
}

/* The mode of this run: `auto` (the default, as DM's) is the best the user may: flush when it may
 * take it (RELOAD, and REPLICATION CLIENT when a sync follows); else lock when it has LOCK TABLES
 * (and REPLICATION CLIENT when a sync follows) and threads > 1 (lock keeps every thread, snapshot
 * runs on one); else snapshot (no lock, one connection, SELECT only). The log says which and why.
 */
static dump_consistency dump_snapshot_mode(dump_unit *u, int have) {
  if (u->consistency != DUMP_CONS_AUTO)
    return u->consistency;
  int need = dump_snapshot_need(u, DUMP_CONS_FLUSH);
  int need_lock = dump_snapshot_need(u, DUMP_CONS_LOCK);
  dump_consistency mode = (have & need) == need ? DUMP_CONS_FLUSH
                          : (have & need_lock) == need_lock && u->threads_cfg > 1
                              ? DUMP_CONS_LOCK
                              : DUMP_CONS_SNAPSHOT;
  const char *lacks = (have & DM_PRIV_RELOAD) ? "REPLICATION CLIENT" : "RELOAD";
  if (mode == DUMP_CONS_FLUSH)
    u->host->logf(u->ctx, DM_LOG_INFO,
                  "dump: consistency auto: flush, as the source user may take FLUSH TABLES WITH "
                  "READ LOCK");
  else if (mode == DUMP_CONS_LOCK)
    u->host->logf(u->ctx, DM_LOG_INFO,
                  "dump: consistency auto: lock, as the source user lacks %s and has LOCK TABLES "
                  "(%d connections, LOCK TABLES ... READ of the dumped tables while they start)",
                  lacks, u->threads_cfg);
  else
    u->host->logf(u->ctx, DM_LOG_INFO,
                  "dump: consistency auto: snapshot, as the source user lacks %s%s (one "
                  "connection, no lock)",
                  lacks, (have & DM_PRIV_LOCK_TABLES) ? "" : " and LOCK TABLES");
  return mode;
}

/* "LOCK TABLES `d`.`t` READ, ..." of every table listed; malloc'd, NULL when out of memory. */
static char *dump_snapshot_lock_sql(dump_unit *u) {
  size_t len = sizeof "LOCK TABLES ";
  for (size_t i = 0; i < u->n_tables; i++)
    len += strlen(u->tables[i]->qname) + sizeof " READ, ";
  char *sql = malloc(len), *p = sql;
  if (!sql)
    return NULL;
  p += sprintf(p, "LOCK TABLES ");
  for (size_t i = 0; i < u->n_tables; i++)
    p += sprintf(p, "%s%s READ", i ? ", " : "", u->tables[i]->qname);
  return sql;
}

/* The longest statement running on the source that the dump's user can see (all of them with
 * PROCESS), as "connection N of `user`, an UPDATE running S s (state: ...)", for the message of a
 * lock given up. Only the statement's first word: its text may hold data or a password. */
static void dump_snapshot_blocker(dump_unit *u, char *out, size_t len) {
  snprintf(out, len, "none is visible to the dump's user now (PROCESS shows every user's)");
  static const char sql[] =
      "SELECT ID, USER, TIME, STATE, LEFT(TRIM(INFO), 32) FROM information_schema.PROCESSLIST "
      "WHERE ID <> CONNECTION_ID() AND INFO IS NOT NULL AND COMMAND NOT IN ('Sleep', 'Daemon', "
      "'Binlog Dump') ORDER BY TIME DESC LIMIT 1";
  MYSQL_RES *res;
  dm_error ignored;
  if (dump_conn_query(u, &u->main, sql, &res, &ignored) != 0)
    return;
  MYSQL_ROW r = mysql_fetch_row(res);
  if (r && mysql_num_fields(res) == 5) {
    char word[17] = "";
    size_t n = 0;
    for (const char *p = r[4] ? r[4] : "";
         n < sizeof word - 1 && ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z')); p++)
      word[n++] = (char)(*p >= 'a' ? *p - 'a' + 'A' : *p);
    word[n] = '\0';
    /* what the server sent, shown as printable ASCII only */
    char shown[3][65];
    for (int f = 0; f < 3; f++) {
      const char *v = r[f + 1] ? r[f + 1] : "";
      size_t k = 0;
      for (; v[k] && k < sizeof shown[f] - 1; k++)
        shown[f][k] = v[k] >= 0x20 && v[k] < 0x7f ? v[k] : '?';
      shown[f][k] = '\0';
    }
    snprintf(out, len, "connection %lld of `%s`, %s %s running %s s (state: %s)",
             r[0] ? strtoll(r[0], NULL, 10) : -1LL, shown[0],
             n && strchr("AEIOU", word[0]) ? "an" : "a", n ? word : "statement", shown[1],
             shown[2][0] ? shown[2] : "none");
  }
  mysql_free_result(res);
}

/*
 * FLUSH TABLES WITH READ LOCK and LOCK TABLES ... READ wait for statements running on the source
 * (a long UPDATE or ALTER, a session's LOCK TABLES ... WRITE; on MariaDB not for a SELECT, nor
 * for an idle open transaction under FTWRL), and while they wait every write of the source
 * (FTWRL) or of the locked tables (LOCK TABLES) queues behind them, for MariaDB's
 * lock_wait_timeout, a day. So `sql` waits `lock-wait` (10 s) at most, then the dump gives up
 * with DM_ERR_DUMP_LOCK_WAIT naming the longest statement it sees, and the writes go on
 * (mydumper's --long-query-guard, 60 s, refuses to lock when such a statement runs). The
 * session's own bound is put back after, for the main connection's other statements.
 */
static int dump_snapshot_lock_exec(dump_unit *u, const char *sql, const char *what, dm_error *err) {
  char set[64];
  snprintf(set, sizeof set, "SET SESSION lock_wait_timeout = %lld",
           (long long)((u->lock_wait_ms + 999) / 1000));
  if (dump_conn_exec(u, &u->main, set, err) != 0)
    return -1;
  if (dump_conn_exec(u, &u->main, sql, err) != 0) {
    if (mysql_errno(u->main.m) != ER_LOCK_WAIT_TIMEOUT)
      return -1;
    char blocker[256];
    dump_snapshot_blocker(u, blocker, sizeof blocker);
    const dm_db_endpoint *ep = u->host->source_db(u->ctx);
    u->host->error_make(u->ctx, err, DM_ERR_DUMP_LOCK_WAIT, NULL,
                        "dump: %s on the source %s:%d waited lock-wait = %lld ms for a statement "
                        "running there (%s waited behind it) and was given up; the longest "
                        "running: %s",
                        what, ep->host ? ep->host : "", ep->port, (long long)u->lock_wait_ms,
                        strncmp(sql, "LOCK", 4) == 0 ? "the writes of the dumped tables"
                                                     : "every write of the source",
                        blocker);
    return -1;
  }
  return dump_conn_exec(u, &u->main, "SET SESSION lock_wait_timeout = DEFAULT", err);
}

/* START TRANSACTION WITH CONSISTENT SNAPSHOT on every worker connection. */
static int dump_snapshot_workers(dump_unit *u, dm_error *err) {
  for (int i = 0; i < u->threads; i++)
    if (dump_conn_exec(u, &u->workers[i], "START TRANSACTION WITH CONSISTENT SNAPSHOT", err) != 0)
      return -1;
  return 0;
}

/* Is `d`.`t` in tables[0..n)? */
static bool dump_snapshot_listed(dump_table *const *tables, size_t n, const dump_table *t) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(tables[i]->db, t->db) == 0 && strcmp(tables[i]->name, t->name) == 0)
      return true;
  return false;
}

#define DUMP_LOCK_ROUNDS 4

/*
 * consistency = lock. LOCK TABLES ... READ of the listed tables waits for the transactions writing
 * them; while it is held no commit can touch them, so every worker's snapshot sees the same state
 * of them, and SHOW MASTER STATUS is the position that state matches. LOCK TABLES does not stop a
 * CREATE TABLE, though: a table created after the listing (before the lock, or while it is held)
 * would be missed by the dump, and its CREATE lie before the position, where the sync never sees
 * it. So, still under the lock and after the position is read, the tables are listed again: when
 * a table is there that is not locked, the round is thrown away (UNLOCK, the snapshots rolled
 * back) and taken again with the longer list; a listed table dropped before the lock (LOCK TABLES
 * says "no such table") likewise. A table created after that second listing is created after the
 * position, so the sync creates it. After DUMP_LOCK_ROUNDS rounds: DM_ERR_DUMP_LOCK_UNSTABLE
 * (resumable).
 */
static int dump_snapshot_lock(dump_unit *u, dm_position *pos, dm_error *err) {
  char why[DM_ERROR_MESSAGE_MAX / 2] = "";
  if (dump_schema_list(u, &u->main, err) != 0)
    return -1;
  for (int round = 1; round <= DUMP_LOCK_ROUNDS; round++) {
    char *lock_sql = NULL;
    if (u->n_tables > 0 && !(lock_sql = dump_snapshot_lock_sql(u))) {
      u->host->error_make(u->ctx, err, DM_ERR_NO_MEMORY, NULL, "dump: no memory for LOCK TABLES");
      return -1;
    }
    int rc = lock_sql ? dump_snapshot_lock_exec(u, lock_sql, "LOCK TABLES ... READ", err) : 0;
    free(lock_sql);
    bool gone = rc != 0 && mysql_errno(u->main.m) == ER_NO_SUCH_TABLE;
    if (rc != 0 && !gone)
      return -1;
    int got = 0;
    if (!gone &&
        (dump_snapshot_workers(u, err) != 0 || (got = dump_snapshot_position(u, pos, err)) < 0))
      return -1;
    /* The list again, under the lock: every table there must be one that is locked. */
    dump_table **locked = u->tables;
    size_t n_locked = u->n_tables;
    u->tables = NULL;
    u->n_tables = u->cap_tables = 0;
    const dump_table *extra = NULL;
    rc = dump_schema_list(u, &u->main, err);
    for (size_t i = 0; rc == 0 && !gone && !extra && i < u->n_tables; i++)
      if (!dump_snapshot_listed(locked, n_locked, u->tables[i]))
        extra = u->tables[i];
    if (rc == 0 && gone)
      snprintf(why, sizeof why, "a listed table was dropped before LOCK TABLES (%s)",
               mysql_error(u->main.m));
    else if (rc == 0 && extra)
      snprintf(why, sizeof why, "`%s`.`%s` was created after the tables were listed", extra->db,
               extra->name);
    for (size_t i = 0; i < n_locked; i++)
      dump_table_free(locked[i]);
    free(locked);
    if (rc != 0)
      return -1;
    if (!gone && !extra) {
      u->listed = true;
      if (got >= 0 && dump_conn_exec(u, &u->main, "UNLOCK TABLES", err) != 0)
        return -1;
      return got;
    }
    u->host->logf(u->ctx, DM_LOG_INFO,
                  "dump: consistency lock: %s; locking %zu tables again (round %d of %d)", why,
                  u->n_tables, round + 1, DUMP_LOCK_ROUNDS);
    if (dump_conn_exec(u, &u->main, "UNLOCK TABLES", err) != 0)
      return -1;
    for (int i = 0; !gone && i < u->threads; i++)
      if (dump_conn_exec(u, &u->workers[i], "ROLLBACK", err) != 0)
        return -1;
  }
  const dm_db_endpoint *ep = u->host->source_db(u->ctx);
  u->host->error_make(u->ctx, err, DM_ERR_DUMP_LOCK_UNSTABLE, NULL,
                      "dump: consistency lock on the source %s:%d: the tables to dump changed "
                      "while they were being locked, %d times (last: %s)",
                      ep->host ? ep->host : "", ep->port, DUMP_LOCK_ROUNDS, why);
  return -1;
}

/*
 * consistency = none: no lock, each worker takes its own snapshot at its own moment, so no one
 * position matches them all. As DM's dumpling (its metadata's section "AFTER CONNECTION POOL
 * ESTABLISHED"), two positions are recorded: the sync starts at the first and runs in safe mode
 * (an insert may find its row there already, a delete find it gone) until it passes the second.
 * SHOW MASTER STATUS before the first snapshot and after the last would be the pair, but a
 * transaction already in the binlog can still be committing in the engine when the first is read,
 * and a snapshot taken then would miss it, before the sync's start. On MariaDB each snapshot's
 * own position (binlog_snapshot_*) is exact: the sync starts at the earliest and leaves safe mode
 * after the latest. SHOW MASTER STATUS (which also gives the GTID) stays the fallback. *exit is
 * set (*has_exit) only when the two differ.
 */
static int dump_snapshot_none(dump_unit *u, dm_position *pos, dm_position *exit, bool *has_exit,
                              dm_error *err) {
  int got = dump_snapshot_position(u, pos, err);
  if (got < 0 || dump_snapshot_workers(u, err) != 0)
    return -1;
  if (got == 1)
    return 1; /* no sync follows, no position: nothing to hand on */
  dm_position first = {0}, last = {0}, p;
  int exact = 0;
  for (int i = 0; i < u->threads; i++) {
    int r = dump_snapshot_read_status(u, &u->workers[i], &p, err);
    if (r < 0)
      return -1;
    if (r == 1)
      break;
    if (exact == 0 || dm_position_compare_file(&p, &first) < 0)
      first = p;
    if (exact == 0 || dm_position_compare_file(&p, &last) > 0)
      last = p;
    exact++;
  }
  if (exact == u->threads) {
    if (dm_position_compare_file(&first, pos) != 0)
      *pos = first; /* no GTID for it: the sync continues by file and position */
    *exit = last;
  } else if (dump_snapshot_position(u, exit, err) < 0) {
    return -1;
  }
  *has_exit = dm_position_compare_file(exit, pos) > 0;
  return 0;
}

/* Starts every worker's snapshot and reads the position (1: none, u->no_pos says why), and for
 * consistency none the position a sync must pass before it leaves safe mode (*has_exit). */
static int dump_snapshot_start(dump_unit *u, dump_consistency mode, dm_position *pos,
                               dm_position *exit, bool *has_exit, dm_error *err) {
  *has_exit = false;
  if (mode == DUMP_CONS_SNAPSHOT) {
    /* One connection: MariaDB gives it a position matching its snapshot without any lock, but
     * a second connection's snapshot would be taken at another moment (there is no way to share
     * one across connections), so the dump runs on this one alone. */
    if (dump_snapshot_workers(u, err) != 0)
      return -1;
    return dump_snapshot_status_position(u, &u->workers[0], pos, err);
  }
  if (mode == DUMP_CONS_NONE)
    return dump_snapshot_none(u, pos, exit, has_exit, err);
  if (mode == DUMP_CONS_LOCK)
    return dump_snapshot_lock(u, pos, err);
  /* flush: FTWRL waits for running writes to end, `lock-wait` at most. The stop token cannot
   * interrupt a blocked query: kill does, by shutting the socket down. */
  if (dump_snapshot_lock_exec(u, "FLUSH TABLES WITH READ LOCK", "FLUSH TABLES WITH READ LOCK",
                              err) != 0 ||
      dump_snapshot_workers(u, err) != 0)
    return -1;
  int got = dump_snapshot_position(u, pos, err);
  if (got >= 0 && dump_conn_exec(u, &u->main, "UNLOCK TABLES", err) != 0)
    return -1;
  return got;
}

int dump_snapshot_take(dump_unit *u, dm_error *err) {
  u->threads = u->threads_cfg;
  if (dump_conn_open(u, &u->main, err) != 0)
    return -1;
  int have = dump_snapshot_grants(u, err);
  if (have < 0)
    goto fail;
  dump_consistency mode = dump_snapshot_mode(u, have);
  if (dump_snapshot_check_privileges(u, mode, have, err) != 0)
    goto fail;
  if (mode == DUMP_CONS_SNAPSHOT && u->threads > 1) {
    u->host->logf(u->ctx, DM_LOG_INFO,
                  "dump: consistency snapshot: 1 connection instead of threads = %d (separate "
                  "connections cannot share one snapshot without a lock)",
                  u->threads);
    u->threads = 1;
  }
  for (int i = 0; i < u->threads; i++) {
    if (dump_conn_open(u, &u->workers[i], err) != 0 ||
        dump_conn_exec(u, &u->workers[i], "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ",
                       err) != 0)
      goto fail;
  }
  if (dump_should_stop(u)) /* the caller reports the stop */
    goto fail;
  dm_position pos, exit;
  bool has_exit;
  int got = dump_snapshot_start(u, mode, &pos, &exit, &has_exit, err);
  if (got < 0)
    goto fail;
  dump_conn_close(u, &u->main);
  const char *name = dump_consistency_names[mode];
  if (got == 1) {
    u->host->logf(u->ctx, DM_LOG_INFO,
                  "dump: snapshot of %d connections, without a position (consistency %s)",
                  u->threads, name);
    return 0;
  }
  pthread_mutex_lock(&u->pos_lock);
  u->pos = pos;
  u->have_pos = true;
  u->safe_exit = exit;
  u->have_safe_exit = has_exit;
  pthread_mutex_unlock(&u->pos_lock);
  char buf[DM_POSITION_NAME_MAX + 32], ebuf[DM_POSITION_NAME_MAX + 96] = "";
  if (has_exit) {
    char b2[DM_POSITION_NAME_MAX + 32];
    snprintf(ebuf, sizeof ebuf, "; the snapshots reach to %s: a sync runs in safe mode until there",
             dm_position_format(&exit, b2, sizeof b2));
  }
  u->host->logf(u->ctx, DM_LOG_INFO,
                "dump: snapshot of %d connections at %s, GTID %s (consistency %s)%s", u->threads,
                dm_position_format(&pos, buf, sizeof buf), pos.gtid[0] ? pos.gtid : "(none)", name,
                ebuf);
  return 0;
fail:
  /* Closing the main connection releases the lock, if it was taken. */
  dump_conn_close(u, &u->main);
  return -1;
}
