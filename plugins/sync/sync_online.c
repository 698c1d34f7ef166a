/*
 * Online schema changes (gh-ost, pt-online-schema-change), as DM follows them
 * (dm/syncer/online-ddl-tools/online_ddl.go; docs/shard.md, "Online DDL"). The host classifies a
 * table name by the task's shadow-table-rules and trash-table-rules (online_table_kind): a *ghost*
 * is a tool's copy of a real table (`_t_gho`, `_t_new`), a *trash* table one of its leftovers
 * (`_t_ghc`, `_t_del`, `_t_old`). Rows of both are never replicated; the DDL a ghost gets (the
 * tool's ALTER) is recorded here and not run, and the cut-over (`RENAME TABLE t TO _t_old, _t_new
 * TO t`) runs the recorded statements on the real table's target instead, with the ghost's name
 * replaced (sync_ddl_apply.c decides which statement is what; sync_ddl_rename.c judges renames).
 *
 * The records live on the target in DM's table `<meta-schema>`.`<task>_onlineddl` (`id` = the
 * source, the ghost's schema and name, `ddls` = DM's GhostDDLInfo JSON {"schema", "table" (the
 * real table), "ddls"}). A change is made in memory first and written by the statements
 * sync_online_sql gives, which the DDL's checkpoint transaction runs (sync_cp_reset_with): the
 * record and the position past its event commit together, so a kill -9 between the tool's ALTER
 * and its cut-over loses no statement, and a replayed ALTER is never recorded twice. A run that
 * fails leaves memory ahead of the target; the next run reads the records again at its start.
 *
 * The statements are kept as the parser's qualified text of the source's statement (names in
 * backticks, every other byte as it came); at the cut-over they are read again under the
 * cut-over event's sql_mode and charset (the tools issue both from one session).
 */
#include <json-c/json.h>
#include <mysqld_error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sync.h"
#include "sync_ddl.h"
#include "sync_tracker.h"

typedef struct online_rec {
  char schema[SYNC_NAME_MAX], ghost[SYNC_NAME_MAX]; /* the key: the ghost table */
  char real_schema[SYNC_NAME_MAX], real_table[SYNC_NAME_MAX];
  char **ddls;
  uint32_t n, cap;
  bool gone;    /* deleted: kept until the checkpoint commits the DELETE */
  bool touched; /* changed since the last commit */
} online_rec;

struct sync_online {
  sync_unit *u;
  bool on;                            /* online-ddl */
  char table[2 * SYNC_NAME_MAX + 32]; /* `meta`.`<task>_onlineddl` */
  online_rec *recs; /* few: one per online schema change in progress on this source */
  uint32_t n, cap;
};

static void online_rec_clear(online_rec *r) {
  for (uint32_t i = 0; i < r->n; i++)
    free(r->ddls[i]);
  free(r->ddls);
  r->ddls = NULL;
  r->n = r->cap = 0;
}

void sync_online_free(sync_online *o) {
  if (!o)
    return;
  for (uint32_t i = 0; i < o->n; i++)
    online_rec_clear(&o->recs[i]);
  free(o->recs);
  free(o);
}

bool sync_online_on(const sync_online *o) {
  return o && o->on;
}

static online_rec *online_find(sync_online *o, const char *schema, const char *ghost) {
  for (uint32_t i = 0; i < o->n; i++)
    if (strcmp(o->recs[i].schema, schema) == 0 && strcmp(o->recs[i].ghost, ghost) == 0)
      return &o->recs[i];
  return NULL;
}

/* The record of the ghost, made (empty) when missing. NULL: no memory. */
static online_rec *online_get(sync_online *o, const char *schema, const char *ghost) {
  online_rec *r = online_find(o, schema, ghost);
  if (r)
    return r;
  if (o->n == o->cap) {
    uint32_t cap = o->cap ? 2 * o->cap : 4;
    void *p = realloc(o->recs, cap * sizeof *o->recs);
    if (!p)
      return NULL;
    o->recs = p;
    o->cap = cap;
  }
  r = &o->recs[o->n++];
  memset(r, 0, sizeof *r);
  dm_strlcpy(r->schema, schema, sizeof r->schema);
  dm_strlcpy(r->ghost, ghost, sizeof r->ghost);
  r->gone = true; /* nothing on the target yet */
  return r;
}

static int online_push(online_rec *r, const char *ddl, size_t len) {
  if (r->n == r->cap) {
    uint32_t cap = r->cap ? 2 * r->cap : 4;
    void *p = realloc(r->ddls, cap * sizeof *r->ddls);
    if (!p)
      return -1;
    r->ddls = p;
    r->cap = cap;
  }
  if (!(r->ddls[r->n] = strndup(ddl, len)))
    return -1;
  r->n++;
  return 0;
}

/* One row of the table: DM's GhostDDLInfo JSON into r. -1: not that shape. */
static int online_parse(online_rec *r, const char *json) {
  json_object *o = json_tokener_parse(json), *v, *ddls;
  int rc = -1;
  if (!o || !json_object_is_type(o, json_type_object) ||
      !json_object_object_get_ex(o, "ddls", &ddls) || !json_object_is_type(ddls, json_type_array))
    goto out;
  if (json_object_object_get_ex(o, "schema", &v) && json_object_is_type(v, json_type_string))
    dm_strlcpy(r->real_schema, json_object_get_string(v), sizeof r->real_schema);
  if (json_object_object_get_ex(o, "table", &v) && json_object_is_type(v, json_type_string))
    dm_strlcpy(r->real_table, json_object_get_string(v), sizeof r->real_table);
  size_t n = json_object_array_length(ddls);
  for (size_t i = 0; i < n; i++) {
    json_object *d = json_object_array_get_idx(ddls, i);
    if (!json_object_is_type(d, json_type_string) ||
        online_push(r, json_object_get_string(d), (size_t)json_object_get_string_len(d)) < 0)
      goto out;
  }
  rc = 0;
out:
  json_object_put(o);
  return rc;
}

static bool online_host_on(sync_unit *u) {
  char real[8];
  /* the service answers for no table whether online-ddl is on (host.h) */
  return dm_host_online_table_kind(u->host, u->ctx, NULL, NULL, real, sizeof real) ==
         DM_ONLINE_GHOST;
}

int sync_online_start(sync_unit *u, MYSQL *c, sync_online **out, dm_error *err) {
  sync_online *o = calloc(1, sizeof *o);
  *out = NULL;
  if (!o)
    return sync_nomem(u, err);
  o->u = u;
  o->on = online_host_on(u);
  char name[SYNC_NAME_MAX];
  dm_task_meta_table_name(u->host->task_name(u->ctx), DM_META_ONLINEDDL, name, sizeof name);
  dm_buf q = {0};
  if (sync_sql_qualified(&q, u->meta, name) < 0 || q.len >= sizeof o->table) {
    dm_buf_free(&q);
    sync_online_free(o);
    return sync_nomem(u, err);
  }
  memcpy(o->table, q.p, q.len + 1);
  dm_buf_reset(&q);
  *out = o;
  if (!o->on) {
    dm_buf_free(&q);
    return 0;
  }
  /* DM's table (online_ddl.go createTable); the meta schema exists (sync_cp_prepare) */
  int rc = -1;
  if (dm_buf_printf(&q,
                    "CREATE TABLE IF NOT EXISTS %s (`id` VARCHAR(32) NOT NULL, `ghost_schema` "
                    "VARCHAR(128) NOT NULL, `ghost_table` VARCHAR(128) NOT NULL, `ddls` TEXT, "
                    "`update_time` TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE "
                    "CURRENT_TIMESTAMP, UNIQUE KEY `uk_id_schema_table` (`id`, `ghost_schema`, "
                    "`ghost_table`)) DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin",
                    o->table) < 0) {
    sync_nomem(u, err);
    goto out;
  }
  if (sync_db_exec(u, c, q.p, q.len, "sync: cannot create the online DDL table", err) < 0)
    goto out;
  dm_buf_reset(&q);
  if (dm_buf_printf(
          &q, "SELECT `ghost_schema`, `ghost_table`, `ddls` FROM %s WHERE `id` = ", o->table) < 0 ||
      sync_sql_lit(c, &q, u->source_id, strlen(u->source_id)) < 0) {
    sync_nomem(u, err);
    goto out;
  }
  MYSQL_RES *res = NULL;
  if (mysql_real_query(c, q.p, (unsigned long)q.len) != 0 || !(res = mysql_store_result(c))) {
    sync_db_error(u, c, "sync: cannot read the online DDL records", err);
    goto out;
  }
  MYSQL_ROW row;
  rc = 0;
  while (rc == 0 && (row = mysql_fetch_row(res))) {
    online_rec *r = online_get(o, row[0] ? row[0] : "", row[1] ? row[1] : "");
    if (!r) {
      rc = sync_nomem(u, err);
      break;
    }
    r->gone = false;
    if (online_parse(r, row[2] ? row[2] : "") < 0) {
      u->host->error_make(u->ctx, err, DM_ERR_CHECKPOINT, NULL,
                          "sync: the online DDL record of ghost table `%s`.`%s` in %s is not DM's "
                          "JSON {\"schema\", \"table\", \"ddls\": [...]} (changed by hand?)",
                          r->schema, r->ghost, o->table);
      rc = -1;
    } else {
      u->host->logf(u->ctx, DM_LOG_INFO,
                    "sync: online DDL: %u statement(s) recorded for ghost table `%s`.`%s` (of "
                    "`%s`.`%s`) wait for its cut-over",
                    r->n, r->schema, r->ghost, r->real_schema, r->real_table);
    }
  }
  mysql_free_result(res);
out:
  dm_buf_free(&q);
  return rc;
}

dm_online_kind sync_online_kind(sync_online *o, MYSQL *c, const char *db, const char *table,
                                char *real, size_t len) {
  if (len)
    real[0] = '\0';
  if (!sync_online_on(o) || !table || !table[0])
    return DM_ONLINE_REAL;
  sync_unit *u = o->u;
  dm_online_kind k = dm_host_online_table_kind(u->host, u->ctx, db, table, real, len);
  if (k != DM_ONLINE_GHOST || !c || !u->tracker)
    return k;
  /* pt-online-schema-change names the copy `__t_new` when `_t_new` exists: group 1 of DM's rule
   * is then `_t`. The tracker tells which of the names is a table of the source. */
  const char *bare = real;
  while (*bare == '_')
    bare++;
  if (bare != real && *bare && !sync_tracker_knows(u->tracker, c, db, real) &&
      sync_tracker_knows(u->tracker, c, db, bare))
    memmove(real, bare, strlen(bare) + 1);
  return k;
}

bool sync_online_rows_replicated(sync_unit *u, const char *db, const char *table) {
  if (!u->host->table_allowed(u->ctx, db, table))
    return false;
  return sync_online_kind(u->online, NULL, db, table, NULL, 0) == DM_ONLINE_REAL;
}

int sync_online_ghost_ddl(sync_online *o, const sync_ddl_stmt *s, const char *real_schema,
                          const char *real_table, const char *at, dm_error *err) {
  sync_unit *u = o->u;
  const char *schema = s->subject.schema, *ghost = s->subject.table;
  if (s->kind == SYNC_DDL_CREATE_TABLE || s->kind == SYNC_DDL_DROP_TABLE) {
    /* a new run of the tool starts clean (DM's Apply) */
    sync_online_forget(o, schema, ghost);
    u->host->logf(u->ctx, DM_LOG_INFO, "sync: online DDL at %s: %s of ghost table `%s`.`%s`", at,
                  s->kind == SYNC_DDL_CREATE_TABLE ? "CREATE" : "DROP", schema, ghost);
    return 0;
  }
  if (s->kind == SYNC_DDL_TRUNCATE_TABLE) {
    /* DM would record it and empty the real table at the cut-over, whose rows the copy holds */
    u->host->logf(u->ctx, DM_LOG_INFO,
                  "sync: online DDL at %s: TRUNCATE of ghost table `%s`.`%s`: nothing to record",
                  at, schema, ghost);
    return 0;
  }
  dm_buf text = {0};
  online_rec *r = online_get(o, schema, ghost);
  if (!r || sync_ddl_rewrite(s, NULL, NULL, false, &text) < 0 ||
      online_push(r, text.p, text.len) < 0) {
    dm_buf_free(&text);
    return sync_nomem(u, err);
  }
  dm_buf_free(&text);
  r->gone = false;
  r->touched = true;
  dm_strlcpy(r->real_schema, real_schema, sizeof r->real_schema);
  dm_strlcpy(r->real_table, real_table, sizeof r->real_table);
  char verb[64];
  sync_ddl_verb(s->sql, s->sql_len, s->flags, verb, sizeof verb);
  u->host->logf(u->ctx, DM_LOG_INFO,
                "sync: online DDL at %s: %s of ghost table `%s`.`%s` recorded for `%s`.`%s` (%u "
                "statement(s)), not run",
                at, verb, schema, ghost, real_schema, real_table, r->n);
  return 0;
}

void sync_online_forget(sync_online *o, const char *schema, const char *ghost) {
  online_rec *r = online_find(o, schema, ghost);
  if (!r)
    return;
  online_rec_clear(r);
  r->gone = true;
  r->touched = true;
}

typedef struct online_route {
  sync_unit *u;
  const sync_ddl_name *ghost, *real;
} online_route;

/* The ghost's name becomes the real table's (DM's renameOnlineDDLTable), and every name goes
 * through the task's routes. */
static void online_route_fn(void *arg, const char *schema, const char *table, char *out_schema,
                            size_t schema_len, char *out_table, size_t table_len) {
  online_route * or = arg;
  if (table && strcmp(schema, or->ghost->schema) == 0 && strcmp(table, or->ghost->table) == 0) {
    schema = or->real->schema;
    table = or->real->table;
  }
  or->u->host->route_table(or->u->ctx, schema, table, out_schema, schema_len, out_table, table_len);
}

int sync_online_cutover(sync_online *o, const sync_ddl_name *ghost, const sync_ddl_name *real,
                        unsigned flags, const char *at, dm_buf *out, uint32_t *n_out,
                        dm_error *err) {
  sync_unit *u = o->u;
  *n_out = 0;
  online_rec *r = online_find(o, ghost->schema, ghost->table);
  if (!r || r->gone) {
    u->host->error_make(u->ctx, err, DM_ERR_SYNC_GHOST_NO_RECORD, NULL,
                        "sync: the RENAME at %s swaps ghost table `%s`.`%s` in for `%s`.`%s` (an "
                        "online schema change's cut-over), but no DDL of the ghost is recorded in "
                        "%s for source `%s` (DM: online ddl metadata for ghost temporary table not "
                        "found); nothing of the statement ran",
                        at, ghost->schema, ghost->table, real->schema, real->table, o->table,
                        u->source_id);
    return -1;
  }
  online_route route = {.u = u, .ghost = ghost, .real = real};
  for (uint32_t i = 0; i < r->n; i++) {
    sync_ddl d = {0};
    char msg[256];
    if (sync_ddl_parse_mode(r->ddls[i], strlen(r->ddls[i]), ghost->schema, flags, &d, msg,
                            sizeof msg) < 0) {
      u->host->error_make(u->ctx, err, DM_ERR_SYNC_DDL, NULL,
                          "sync: the cut-over at %s: recorded statement %u of ghost table "
                          "`%s`.`%s` does not parse (%s)",
                          at, i + 1, ghost->schema, ghost->table, msg);
      return -1;
    }
    for (int k = 0; k < d.n; k++) {
      if (sync_ddl_rewrite(&d.stmts[k], online_route_fn, &route, true, out) < 0 ||
          dm_buf_putc(out, '\0') < 0) {
        sync_ddl_free(&d);
        u->host->error_make(u->ctx, err, DM_ERR_SYNC_DDL, NULL,
                            "sync: the cut-over at %s: cannot write recorded statement %u of "
                            "ghost table `%s`.`%s` for the target (no memory, or a route gave an "
                            "empty name)",
                            at, i + 1, ghost->schema, ghost->table);
        return -1;
      }
      (*n_out)++;
    }
    sync_ddl_free(&d);
  }
  u->host->logf(
      u->ctx, DM_LOG_INFO,
      "sync: online DDL at %s: cut-over of ghost table `%s`.`%s` to `%s`.`%s`: its %u "
      "recorded statement(s) are the real table's DDL (run on the target, or held by its shard "
      "lock)",
      at, ghost->schema, ghost->table, real->schema, real->table, r->n);
  sync_online_forget(o, ghost->schema, ghost->table);
  return 0;
}

int sync_online_sql(sync_online *o, MYSQL *c, dm_buf *q) {
  if (!o)
    return 0;
  sync_unit *u = o->u;
  for (uint32_t i = 0; i < o->n; i++) {
    online_rec *r = &o->recs[i];
    if (!r->touched)
      continue;
    if (r->gone) {
      if (dm_buf_printf(q, "DELETE FROM %s WHERE `id` = ", o->table) < 0 ||
          sync_sql_lit(c, q, u->source_id, strlen(u->source_id)) < 0 ||
          dm_buf_puts(q, " AND `ghost_schema` = ") < 0 ||
          sync_sql_lit(c, q, r->schema, strlen(r->schema)) < 0 ||
          dm_buf_puts(q, " AND `ghost_table` = ") < 0 ||
          sync_sql_lit(c, q, r->ghost, strlen(r->ghost)) < 0 || dm_buf_putc(q, ';') < 0)
        return -1;
      continue;
    }
    /* DM's GhostDDLInfo */
    json_object *j = json_object_new_object(), *ddls = json_object_new_array();
    if (!j || !ddls) {
      json_object_put(j);
      json_object_put(ddls);
      return -1;
    }
    json_object_object_add(j, "schema", json_object_new_string(r->real_schema));
    json_object_object_add(j, "table", json_object_new_string(r->real_table));
    for (uint32_t k = 0; k < r->n; k++)
      json_object_array_add(ddls, json_object_new_string(r->ddls[k]));
    json_object_object_add(j, "ddls", ddls);
    const char *text = json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN);
    int rc =
        !text ||
                dm_buf_printf(q,
                              "REPLACE INTO %s (`id`, `ghost_schema`, `ghost_table`, "
                              "`ddls`) VALUES (",
                              o->table) < 0 ||
                sync_sql_lit(c, q, u->source_id, strlen(u->source_id)) < 0 ||
                dm_buf_putc(q, ',') < 0 || sync_sql_lit(c, q, r->schema, strlen(r->schema)) < 0 ||
                dm_buf_putc(q, ',') < 0 || sync_sql_lit(c, q, r->ghost, strlen(r->ghost)) < 0 ||
                dm_buf_putc(q, ',') < 0 || sync_sql_lit(c, q, text, strlen(text)) < 0 ||
                dm_buf_puts(q, ");") < 0
            ? -1
            : 0;
    json_object_put(j);
    if (rc < 0)
      return -1;
  }
  return 0;
}

void sync_online_committed(sync_online *o) {
  if (!o)
    return;
  uint32_t w = 0;
  for (uint32_t i = 0; i < o->n; i++) {
    online_rec *r = &o->recs[i];
    r->touched = false;
    if (r->gone) {
      online_rec_clear(r);
      continue;
    }
    if (w != i)
      o->recs[w] = *r;
    w++;
  }
  o->n = w;
}
