/*
 * Pessimistic shard DDL, the sync unit's side (docs/shard.md "Pessimistic mode"). With the task's
 * shard-mode NONE none of this exists (u->shard is NULL) and the sync runs as without it.
 *
 * Groups. Every table of the source that the block-allow list lets through is a member of the
 * group of its routed target table (DM's sharding groups: all source tables routed to one
 * target). The members come from the source's information_schema at the start (as DM's
 * initShardingGroups) and follow CREATE TABLE (joins) and DROP TABLE / DROP DATABASE (leaves);
 * each change is reported to the host (shard_report_tables).
 *
 * Hold. A DDL of a member (ALTER TABLE, CREATE/DROP INDEX) is not run on the target: the tracker
 * follows it, and one target transaction writes the table's checkpoint row `held` at the DDL's
 * end together with the global row moving past it (sync_ddl_apply.c). From then the main stream
 * drops the table's row events (sync_shard_skips). When every member of a group is held at the
 * same statements the source is ready: it puts its info, waits for its operation (the whole
 * source blocks there), runs the statements once (exec) or nothing (skip), moves the rows to
 * `resync` in one transaction and reports the operation done. The re-sync (sync_run.c) then
 * applies the held tables' rows between their DDL and the block point, moving each table's row
 * with them, and deletes the rows at the block point.
 *
 * Restart: the rows say everything. Held rows are held again (and a ready group re-puts its info,
 * idempotent); rows at `resync` mean the DDL ran: done is reported again and the re-sync goes on
 * from the rows. The exec runs under the global row's DDL mark ("shard:<lock>"), so a restart
 * between the DDL and the `resync` transaction counts "already done" answers as done.
 *
 * One thread: the sync's coordinator owns all of this.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sync.h"
#include "sync_ddl.h"
#include "sync_shard.h"

#include "sync_shard_internal.h"

int sync_shard_nomem(sync_shard *s, dm_error *err) {
  return sync_nomem(s->u, err);
}

int sync_shard_new(sync_unit *u, sync_shard **out, dm_error *err) {
  *out = NULL;
  dm_shard_mode mode = dm_host_shard_mode(u->host, u->ctx);
  if (mode == DM_SHARD_MODE_NONE)
    return 0;
  if (!DM_HOST_HAS(u->host, shard_report_tables) || !DM_HOST_HAS(u->host, shard_put) ||
      !DM_HOST_HAS(u->host, shard_wait) || !DM_HOST_HAS(u->host, shard_done) ||
      (mode == DM_SHARD_MODE_OPTIMISTIC && !DM_HOST_HAS(u->host, shard_poll))) {
    u->host->error_make(u->ctx, err, DM_ERR_SYNC_UNSUPPORTED_STMT, NULL,
                        "sync: shard-mode pessimistic, but the host has no shard coordinator "
                        "(services shard_put/shard_wait/shard_done)");
    return -1;
  }
  sync_shard *s = calloc(1, sizeof *s);
  if (!s)
    return sync_nomem(u, err);
  s->u = u;
  s->optimistic = mode == DM_SHARD_MODE_OPTIMISTIC;
  *out = s;
  return 0;
}

void sync_shard_free(sync_shard *s) {
  if (!s)
    return;
  for (int i = 0; i < s->n; i++)
    dm_buf_free(&s->m[i].ddls);
  free(s->m);
  free(s->g);
  free(s);
}

/* ---- members and groups ---- */

static int shard_group_of(sync_shard *s, const char *db, const char *table) {
  char tdb[SYNC_NAME_MAX], tt[SYNC_NAME_MAX];
  sync_route(s->u, db, table, tdb, tt);
  for (int i = 0; i < s->ng; i++)
    if (strcmp(s->g[i].tdb, tdb) == 0 && strcmp(s->g[i].tname, tt) == 0)
      return i;
  if (s->ng == s->gcap) {
    int cap = s->gcap ? 2 * s->gcap : 8;
    void *p = realloc(s->g, (size_t)cap * sizeof *s->g);
    if (!p)
      return -1;
    s->g = p;
    s->gcap = cap;
  }
  shard_group *g = &s->g[s->ng];
  memset(g, 0, sizeof *g);
  dm_strlcpy(g->tdb, tdb, sizeof g->tdb);
  dm_strlcpy(g->tname, tt, sizeof g->tname);
  /* DM's lock ID: "<task>-`schema`.`table`" (GenDDLLockID) */
  dm_buf q = {0};
  if (dm_buf_printf(&q, "%s-", s->u->host->task_name(s->u->ctx)) < 0 ||
      sync_sql_qualified(&q, tdb, tt) < 0) {
    dm_buf_free(&q);
    return -1;
  }
  dm_strlcpy(g->lock, q.p, sizeof g->lock);
  dm_buf_free(&q);
  return s->ng++;
}

shard_member *sync_shard_find(sync_shard *s, const char *db, const char *table) {
  for (int i = 0; i < s->n; i++)
    if (!s->m[i].gone && strcmp(s->m[i].name, table) == 0 && strcmp(s->m[i].db, db) == 0)
      return &s->m[i];
  return NULL;
}

/* The member for db.table, added when new (NULL: no memory). */
static shard_member *shard_add(sync_shard *s, const char *db, const char *table) {
  shard_member *m = sync_shard_find(s, db, table);
  if (m)
    return m;
  if (s->n == s->cap) {
    int cap = s->cap ? 2 * s->cap : 32;
    void *p = realloc(s->m, (size_t)cap * sizeof *s->m);
    if (!p)
      return NULL;
    s->m = p;
    s->cap = cap;
  }
  int g = shard_group_of(s, db, table);
  if (g < 0)
    return NULL;
  m = &s->m[s->n++];
  memset(m, 0, sizeof *m);
  dm_strlcpy(m->db, db, sizeof m->db);
  dm_strlcpy(m->name, table, sizeof m->name);
  m->group = g;
  return m;
}

bool sync_shard_member(sync_shard *s, const char *db, const char *table) {
  return s && table && table[0] && s->u->host->table_allowed(s->u->ctx, db, table);
}

/* The group's members to the host. */
static int shard_report(sync_shard *s, int g, dm_error *err) {
  sync_unit *u = s->u;
  int n = 0;
  for (int i = 0; i < s->n; i++)
    n += !s->m[i].gone && s->m[i].group == g;
  dm_shard_table *t = calloc((size_t)n + 1, sizeof *t);
  if (!t)
    return sync_shard_nomem(s, err);
  n = 0;
  for (int i = 0; i < s->n; i++)
    if (!s->m[i].gone && s->m[i].group == g)
      t[n++] = (dm_shard_table){.schema = s->m[i].db, .table = s->m[i].name};
  int rc = u->host->shard_report_tables(u->ctx, s->g[g].tdb, s->g[g].tname, t, (uint32_t)n, err);
  free(t);
  return rc;
}

/* ---- the checkpoint rows of held tables ---- */

int sync_shard_lit(MYSQL *c, dm_buf *q, const char *v) {
  return sync_sql_lit(c, q, v, strlen(v));
}

/* "WHERE `id` = <source> AND `cp_schema` = <db> AND `cp_table` = <table>" */
int sync_shard_where(sync_shard *s, MYSQL *c, dm_buf *q, const shard_member *m) {
  return dm_buf_puts(q, " WHERE `id` = ") < 0 || sync_shard_lit(c, q, s->u->source_id) < 0 ||
                 dm_buf_puts(q, " AND `cp_schema` = ") < 0 || sync_shard_lit(c, q, m->db) < 0 ||
                 dm_buf_puts(q, " AND `cp_table` = ") < 0 || sync_shard_lit(c, q, m->name) < 0
             ? -1
             : 0;
}

/* REPLACE of a member's row: held at `at` with the statements, position `pos`. */
static int shard_row_sql(sync_shard *s, MYSQL *c, dm_buf *q, const shard_member *m,
                         const char *lock, const char *at, const char *const *ddls, uint32_t n,
                         const dm_position *pos) {
  if (dm_buf_printf(q,
                    "REPLACE INTO %s (`id`, `cp_schema`, `cp_table`, `binlog_name`, "
                    "`binlog_pos`, `binlog_gtid`, `table_info`, `is_global`) VALUES (",
                    s->u->cp_table) < 0 ||
      sync_shard_lit(c, q, s->u->source_id) < 0 || dm_buf_putc(q, ',') < 0 ||
      sync_shard_lit(c, q, m->db) < 0 || dm_buf_putc(q, ',') < 0 ||
      sync_shard_lit(c, q, m->name) < 0 || dm_buf_putc(q, ',') < 0 ||
      sync_shard_lit(c, q, pos->name) < 0 || dm_buf_printf(q, ",%" PRIu64 ",", pos->pos) < 0 ||
      sync_shard_lit(c, q, pos->gtid) < 0 ||
      dm_buf_puts(q, ",JSON_OBJECT('shard', JSON_OBJECT('lock', ") < 0 ||
      sync_shard_lit(c, q, lock) < 0 || dm_buf_puts(q, ", 'ddl', ") < 0 ||
      sync_shard_lit(c, q, at) < 0 || dm_buf_puts(q, ", 'state', 'held', 'ddls', JSON_ARRAY(") < 0)
    return -1;
  for (uint32_t i = 0; i < n; i++)
    if ((i && dm_buf_putc(q, ',') < 0) || sync_shard_lit(c, q, ddls[i]) < 0)
      return -1;
  return dm_buf_puts(q, "))),0);");
}

static int shard_delete_sql(sync_shard *s, MYSQL *c, dm_buf *q, const shard_member *m) {
  return dm_buf_printf(q, "DELETE FROM %s", s->u->cp_table) < 0 ||
                 sync_shard_where(s, c, q, m) < 0 || dm_buf_putc(q, ';') < 0
             ? -1
             : 0;
}

/* Loads the rows of held tables (cp_schema <> ''). */
static int shard_load_rows(sync_shard *s, MYSQL *c, dm_error *err) {
  sync_unit *u = s->u;
  dm_buf q = {0};
  int rc = -1;
  MYSQL_RES *res = NULL;
  if (dm_buf_printf(&q,
                    "SELECT `cp_schema`, `cp_table`, `binlog_name`, `binlog_pos`, "
                    "`binlog_gtid`, JSON_UNQUOTE(JSON_EXTRACT(`table_info`, '$.shard.state')), "
                    "JSON_UNQUOTE(JSON_EXTRACT(`table_info`, '$.shard.ddl')), "
                    "JSON_EXTRACT(`table_info`, '$.shard.op'), "
                    "JSON_LENGTH(`table_info`, '$.shard.ddls') FROM %s WHERE `id` = ",
                    u->cp_table) < 0 ||
      sync_shard_lit(c, &q, u->source_id) < 0 || dm_buf_puts(&q, " AND `cp_schema` <> ''") < 0) {
    sync_shard_nomem(s, err);
    goto out;
  }
  if (mysql_real_query(c, q.p, (unsigned long)q.len) != 0 || !(res = mysql_store_result(c))) {
    sync_db_error(u, c, "sync: cannot read the checkpoint rows of held shard tables", err);
    goto out;
  }
  MYSQL_ROW row;
  while ((row = mysql_fetch_row(res))) {
    shard_member *m = shard_add(s, row[0], row[1]);
    if (!m) {
      sync_shard_nomem(s, err);
      goto out;
    }
    m->state = row[5] && strcmp(row[5], "resync") == 0 ? SHARD_RESYNC : SHARD_HELD;
    memset(&m->pos, 0, sizeof m->pos);
    dm_strlcpy(m->pos.name, row[2] ? row[2] : "", sizeof m->pos.name);
    m->pos.pos = row[3] ? strtoull(row[3], NULL, 10) : 0;
    dm_strlcpy(m->pos.gtid, row[4] ? row[4] : "", sizeof m->pos.gtid);
    dm_strlcpy(m->ddl_at, row[6] ? row[6] : "", sizeof m->ddl_at);
    m->op_id = row[7] ? strtoull(row[7], NULL, 10) : 0;
    m->n_ddls = row[8] ? (uint32_t)strtoul(row[8], NULL, 10) : 0;
    s->n_held++;
  }
  mysql_free_result(res);
  res = NULL;
  /* the statements, one index at a time (JSON_TABLE is not on every target) */
  for (int i = 0; i < s->n; i++) {
    shard_member *m = &s->m[i];
    dm_buf_reset(&m->ddls);
    for (uint32_t k = 0; k < m->n_ddls; k++) {
      dm_buf_reset(&q);
      if (dm_buf_printf(&q,
                        "SELECT JSON_UNQUOTE(JSON_EXTRACT(`table_info`, '$.shard.ddls[%" PRIu32
                        "]')) FROM %s",
                        k, u->cp_table) < 0 ||
          sync_shard_where(s, c, &q, m) < 0) {
        sync_shard_nomem(s, err);
        goto out;
      }
      if (mysql_real_query(c, q.p, (unsigned long)q.len) != 0 || !(res = mysql_store_result(c))) {
        sync_db_error(u, c, "sync: cannot read the checkpoint rows of held shard tables", err);
        goto out;
      }
      row = mysql_fetch_row(res);
      const char *d = row && row[0] ? row[0] : "";
      if (dm_buf_put(&m->ddls, d, strlen(d) + 1) < 0) {
        sync_shard_nomem(s, err);
        goto out;
      }
      mysql_free_result(res);
      res = NULL;
    }
  }
  rc = 0;
out:
  if (res)
    mysql_free_result(res);
  dm_buf_free(&q);
  return rc;
}

/* The source's tables the task replicates, from its information_schema (DM reads the source's
 * tables the same way when it builds its sharding groups). */
static int shard_load_members(sync_shard *s, MYSQL *sc, dm_error *err) {
  sync_unit *u = s->u;
  static const char q[] =
      "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_TYPE = "
      "'BASE TABLE' AND TABLE_SCHEMA NOT IN ('mysql', 'information_schema', "
      "'performance_schema', 'sys')";
  MYSQL_RES *res;
  if (mysql_real_query(sc, q, sizeof q - 1) != 0 || !(res = mysql_use_result(sc))) {
    sync_db_error(u, sc, "sync: cannot list the source's tables for the shard groups", err);
    err->code = err->code == DM_ERR_DB_CONNECT ? DM_ERR_DB_CONNECT : DM_ERR_DB_QUERY;
    return -1;
  }
  MYSQL_ROW row;
  int rc = 0;
  while ((row = mysql_fetch_row(res)))
    if (rc == 0 && sync_shard_member(s, row[0], row[1]) && !shard_add(s, row[0], row[1]))
      rc = sync_shard_nomem(s, err);
  mysql_free_result(res);
  return rc;
}

int sync_shard_start(sync_shard *s, MYSQL *sc, MYSQL *tc, bool first, dm_error *err) {
  if (!s)
    return 0;
  if (first) {
    /* a first start: rows of held tables are an earlier run's under the same task name */
    dm_buf q = {0};
    int rc = -1;
    if (dm_buf_printf(&q, "DELETE FROM %s WHERE `id` = ", s->u->cp_table) < 0 ||
        sync_shard_lit(tc, &q, s->u->source_id) < 0 ||
        dm_buf_puts(&q, " AND `cp_schema` <> ''") < 0)
      sync_shard_nomem(s, err);
    else
      rc = sync_db_exec(s->u, tc, q.p, q.len, "sync: cannot write the checkpoint", err);
    dm_buf_free(&q);
    if (rc < 0)
      return -1;
  }
  if (shard_load_rows(s, tc, err) < 0 || shard_load_members(s, sc, err) < 0)
    return -1;
  for (int g = 0; g < s->ng; g++)
    if (shard_report(s, g, err) < 0)
      return -1;
  int held = 0, resync = 0;
  for (int i = 0; i < s->n; i++) {
    held += s->m[i].state == SHARD_HELD;
    resync += s->m[i].state == SHARD_RESYNC;
  }
  s->u->host->logf(s->u->ctx, DM_LOG_INFO,
                   "sync: shard-mode pessimistic: %d table(s) in %d group(s); %d held, %d to "
                   "re-sync from the checkpoint",
                   s->n, s->ng, held, resync);
  return 0;
}

bool sync_shard_skips(const sync_shard *s, const char *db, const char *table) {
  if (!s || s->n_held == 0)
    return false;
  for (int i = 0; i < s->n; i++) {
    const shard_member *m = &s->m[i];
    if (m->state != SHARD_RUN && !m->gone && strcmp(m->name, table) == 0 && strcmp(m->db, db) == 0)
      return true;
  }
  return false;
}

/* ---- a DDL of the main stream ---- */

int sync_shard_plan(sync_shard *s, const char *at, const sync_ddl_kept *kept, uint32_t *offs,
                    uint32_t *n, sync_shard_plan_t *plan, dm_error *err) {
  sync_unit *u = s->u;
  memset(plan, 0, sizeof *plan);
  plan->hold = -1;
  uint32_t w = 0;
  const sync_ddl_kept *first = NULL;
  for (uint32_t i = 0; i < *n; i++) {
    const sync_ddl_kept *k = &kept[i];
    bool member = sync_shard_member(s, k->subject.schema, k->subject.table);
    if (k->kind == SYNC_DDL_DROP_DATABASE) {
      /* its tables leave; the schema stays on the target (other shards may write there) */
      plan->leave_schema = true;
      dm_strlcpy(plan->leave_db, k->subject.schema, sizeof plan->leave_db);
      u->host->logf(u->ctx, DM_LOG_INFO,
                    "sync: DROP DATABASE `%s` at %s in shard mode: not applied on the target, "
                    "its tables leave their shard groups",
                    k->subject.schema, at);
      continue;
    }
    if (!member) {
      offs[w] = offs[i];
      w++;
      continue;
    }
    if (k->moves) {
      u->host->error_make(u->ctx, err, DM_ERR_SYNC_UNSUPPORTED_STMT, NULL,
                          "sync: the DDL at %s renames `%s`.`%s`, a table of a shard group: not "
                          "supported in shard mode; nothing of it ran",
                          at, k->subject.schema, k->subject.table);
      return -1;
    }
    switch (k->kind) {
    case SYNC_DDL_DROP_TABLE:
      if (plan->n_leave < SYNC_SHARD_PLAN_MAX)
        plan->leave[plan->n_leave++] = k->subject;
      u->host->logf(u->ctx, DM_LOG_INFO,
                    "sync: DROP TABLE `%s`.`%s` at %s in shard mode: not applied on the target, "
                    "the table leaves its shard group",
                    k->subject.schema, k->subject.table, at);
      continue;
    case SYNC_DDL_TRUNCATE_TABLE:
      /* DM's Pessimist.preFilter: ignored in a shard group (the merged table holds the other
       * shards' rows); the table stays a member */
      u->host->logf(u->ctx, DM_LOG_INFO,
                    "sync: TRUNCATE `%s`.`%s` at %s in shard mode: not applied on the target",
                    k->subject.schema, k->subject.table, at);
      continue;
    case SYNC_DDL_CREATE_TABLE:
      if (plan->n_join < SYNC_SHARD_PLAN_MAX)
        plan->join[plan->n_join++] = k->subject;
      offs[w++] = offs[i];
      continue;
    default:
      break;
    }
    /* a DDL that changes a member: held */
    if (first && (strcmp(first->subject.schema, k->subject.schema) != 0 ||
                  strcmp(first->subject.table, k->subject.table) != 0)) {
      u->host->error_make(u->ctx, err, DM_ERR_SYNC_SHARD_MULTI, NULL,
                          "sync: the DDL at %s changes `%s`.`%s` and `%s`.`%s`, two tables of "
                          "shard groups: a coordinated DDL must be about one table; nothing of "
                          "it ran",
                          at, first->subject.schema, first->subject.table, k->subject.schema,
                          k->subject.table);
      return -1;
    }
    first = k;
    offs[w++] = offs[i];
    plan->n_hold_stmts++;
  }
  *n = w;
  if (!first)
    return 0;
  if (plan->n_hold_stmts != w) {
    u->host->error_make(u->ctx, err, DM_ERR_SYNC_SHARD_MULTI, NULL,
                        "sync: the DDL at %s changes `%s`.`%s`, a table of a shard group, and "
                        "other objects in one statement: a coordinated DDL must be about one "
                        "table; nothing of it ran",
                        at, first->subject.schema, first->subject.table);
    return -1;
  }
  shard_member *m = shard_add(s, first->subject.schema, first->subject.table);
  if (!m)
    return sync_shard_nomem(s, err);
  if (m->state != SHARD_RUN) {
    u->host->error_make(u->ctx, err, DM_ERR_SYNC_UNSUPPORTED_STMT, NULL,
                        "sync: the DDL at %s changes `%s`.`%s`, which is still held at its DDL at "
                        "%s (lock %s): a second DDL of a shard table before its lock resolved is "
                        "not supported yet; nothing of it ran",
                        at, m->db, m->name, m->ddl_at, s->g[m->group].lock);
    return -1;
  }
  plan->hold = (int)(m - s->m);
  return 0;
}

int sync_shard_plan_sql(sync_shard *s, MYSQL *c, const sync_shard_plan_t *plan, const char *at,
                        const char *text, const uint32_t *offs, uint32_t n,
                        const dm_position *after, dm_buf *q) {
  if (plan->hold >= 0) {
    const shard_member *m = &s->m[plan->hold];
    const char **ddls = calloc(n + 1, sizeof *ddls);
    if (!ddls)
      return -1;
    for (uint32_t i = 0; i < n; i++)
      ddls[i] = text + offs[i];
    int rc = shard_row_sql(s, c, q, m, s->g[m->group].lock, at, ddls, n, after);
    free(ddls);
    if (rc < 0)
      return -1;
  }
  for (int i = 0; i < plan->n_leave; i++) {
    shard_member *m = sync_shard_find(s, plan->leave[i].schema, plan->leave[i].table);
    if (m && shard_delete_sql(s, c, q, m) < 0)
      return -1;
  }
  for (int i = 0; plan->leave_schema && i < s->n; i++)
    if (!s->m[i].gone && strcmp(s->m[i].db, plan->leave_db) == 0 &&
        shard_delete_sql(s, c, q, &s->m[i]) < 0)
      return -1;
  return 0;
}

/* Member m leaves its group. */
static void shard_leave(sync_shard *s, shard_member *m, bool *changed) {
  if (m->state != SHARD_RUN)
    s->n_held--;
  m->state = SHARD_RUN;
  m->gone = true;
  changed[m->group] = true;
}

int sync_shard_plan_done(sync_shard *s, const sync_shard_plan_t *plan, const char *at,
                         const char *text, const uint32_t *offs, uint32_t n,
                         const dm_position *after, dm_error *err) {
  sync_unit *u = s->u;
  bool *changed = calloc((size_t)s->ng + SYNC_SHARD_PLAN_MAX + 1, sizeof *changed);
  if (!changed)
    return sync_shard_nomem(s, err);
  int rc = -1;
  if (plan->hold >= 0) {
    shard_member *m = &s->m[plan->hold];
    dm_buf_reset(&m->ddls);
    for (uint32_t i = 0; i < n; i++)
      if (dm_buf_put(&m->ddls, text + offs[i], strlen(text + offs[i]) + 1) < 0)
        goto nomem;
    m->n_ddls = n;
    m->state = SHARD_HELD;
    m->pos = *after;
    dm_strlcpy(m->ddl_at, at, sizeof m->ddl_at);
    s->n_held++;
    u->host->logf(u->ctx, DM_LOG_INFO,
                  "sync: shard lock %s: `%s`.`%s` held at its DDL at %s (its rows wait)",
                  s->g[m->group].lock, m->db, m->name, at);
    /* DM's count at each member's DDL: the group's tables of this source not at it yet */
    int remain = 0;
    for (int i = 0; i < s->n; i++)
      remain += !s->m[i].gone && s->m[i].group == m->group && s->m[i].state != SHARD_HELD;
    sync_metrics_unsynced(u, s->g[m->group].tdb, s->g[m->group].tname, remain);
  }
  for (int i = 0; i < plan->n_leave; i++) {
    shard_member *m = sync_shard_find(s, plan->leave[i].schema, plan->leave[i].table);
    if (m)
      shard_leave(s, m, changed);
  }
  for (int i = 0; plan->leave_schema && i < s->n; i++)
    if (!s->m[i].gone && strcmp(s->m[i].db, plan->leave_db) == 0)
      shard_leave(s, &s->m[i], changed);
  for (int i = 0; i < plan->n_join; i++) {
    int ng = s->ng;
    shard_member *m = sync_shard_find(s, plan->join[i].schema, plan->join[i].table);
    if (m)
      continue;
    if (!(m = shard_add(s, plan->join[i].schema, plan->join[i].table)))
      goto nomem;
    if (s->ng > ng) { /* a new group: `changed` grows with it */
      bool *p = realloc(changed, ((size_t)s->ng + 1) * sizeof *changed);
      if (!p)
        goto nomem;
      changed = p;
      changed[s->ng - 1] = false;
    }
    changed[m->group] = true;
  }
  for (int g = 0; g < s->ng; g++)
    if (changed[g] && shard_report(s, g, err) < 0)
      goto out;
  rc = 0;
  goto out;
nomem:
  sync_shard_nomem(s, err);
out:
  free(changed);
  return rc;
}
