/*
 * The load checkpoint: DM's table `<meta-schema>`.`<task>_loader_checkpoint` on the target, one row
 * per data file and source: how many bytes of the file are loaded. A row's offset moves in the same
 * transaction as the statements it counts, so after any crash the table and the checkpoint agree.
 *
 * Every row names the dump it was registered for (`dump_id`, dm_dump_fnv1a64 of its `metadata`).
 * A subtask moved to another worker during its dump or load finds the rows of the old worker's
 * dump there but not its files (the dump folder is local): it dumps again, and the load of the new
 * dump first empties the target tables the old load wrote to and drops the old rows
 * (load_cp_other_dump), so that no row of the older snapshot stays next to the new one.
 *
 * Fencing (a token T > 0 from the host; dmhost/db.h): the rows carry T in `fence`; the start raises
 * this source's rows to T (refused when one carries more), and the UPDATE that moves a row before
 * a batch's COMMIT requires `fence` <= T and is checked, so a stale worker's batch rolls back.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mysqld_error.h>

#include <dmhost/db.h>

#include "load.h"

#define LOAD_CP_STMT_MAX (1u << 20) /* registration statements are cut at about this size */

int load_cp_prepare(load_unit *u, MYSQL *c, dm_error *err) {
  char q[1024 + 2 * LOAD_NAME_MAX], meta[2 * LOAD_NAME_MAX + 3];
  int n = snprintf(q, sizeof q, "CREATE DATABASE IF NOT EXISTS %s",
                   dm_db_quoted(u->meta, meta, sizeof meta));
  if (load_db_exec(u, c, q, (size_t)n, "load: cannot create the meta schema", err) != 0)
    return -1;
  n = snprintf(q, sizeof q,
               "CREATE TABLE IF NOT EXISTS %s ("
               "`id` VARCHAR(32) NOT NULL, "
               "`filename` VARCHAR(255) NOT NULL, "
               "`cp_schema` VARCHAR(128) NOT NULL, "
               "`cp_table` VARCHAR(128) NOT NULL, "
               "`offset` BIGINT NOT NULL, "
               "`end_pos` BIGINT NOT NULL, "
               "`dump_id` VARCHAR(16) NOT NULL DEFAULT '', "
               "`create_time` TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, "
               "`update_time` TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE "
               "CURRENT_TIMESTAMP, " DM_DB_FENCE_COLUMN_DEF ", "
               "PRIMARY KEY (`id`, `filename`)) DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin",
               u->cp_table);
  if (load_db_exec(u, c, q, (size_t)n, "load: cannot create the checkpoint table", err) != 0)
    return -1;
  /* a table of an older version has no `dump_id` (nor `fence`) column yet: its rows keep '',
   * "the dump of this folder" */
  char table[LOAD_NAME_MAX + 32], lit_meta[2 * LOAD_NAME_MAX + 3],
      lit_table[2 * LOAD_NAME_MAX + 40];
  dm_task_meta_table_name(u->host->task_name(u->ctx), DM_META_LOADER_CHECKPOINT, table,
                          sizeof table);
  if (load_db_literal(c, u->meta, lit_meta, sizeof lit_meta) != 0 ||
      load_db_literal(c, table, lit_table, sizeof lit_table) != 0) {
    u->host->error_make(u->ctx, err, DM_ERR_CONFIG_INVALID, NULL,
                        "load: the meta schema or task name is too long");
    return -1;
  }
  n = snprintf(q, sizeof q,
               "SELECT 1 FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = "
               "%s AND COLUMN_NAME = 'dump_id'",
               lit_meta, lit_table);
  MYSQL_RES *r = NULL;
  if (mysql_real_query(c, q, (size_t)n) != 0 || !(r = mysql_store_result(c))) {
    load_db_error(u, c, "load: cannot read the checkpoint table's columns", err);
    return -1;
  }
  bool has = mysql_num_rows(r) > 0;
  mysql_free_result(r);
  if (!has) {
    n = snprintf(
        q, sizeof q,
        "ALTER TABLE %s ADD COLUMN IF NOT EXISTS `dump_id` VARCHAR(16) NOT NULL DEFAULT ''",
        u->cp_table);
    if (load_db_exec(u, c, q, (size_t)n, "load: cannot add `dump_id` to the checkpoint table",
                     err) != 0)
      return -1;
  }
  if (!u->fence)
    return 0;
  return dm_db_fence_column(c, u->meta, table, u->cp_table, "load", err);
}

static int load_cp_where(load_unit *u, MYSQL *c, char *out, size_t len);

void load_cp_fenced_instead(load_unit *u, MYSQL *c, dm_error *err) {
  char where[200];
  dm_error fenced;
  if (load_cp_where(u, c, where, sizeof where) == 0 &&
      dm_db_fence_refused(c, u->cp_table, where, u->fence, "load", &fenced) == 1)
    *err = fenced;
}

/* The rows of this source: "`id` = '<source>'". -1 when the id is too long. */
static int load_cp_where(load_unit *u, MYSQL *c, char *out, size_t len) {
  char id[160];
  if (load_db_literal(c, u->host->source_id(u->ctx), id, sizeof id) != 0)
    return -1;
  snprintf(out, len, "`id` = %s", id);
  return 0;
}

int load_cp_fence_failed(load_unit *u, MYSQL *c, const char *file, dm_error *err) {
  char where[200], who[300];
  if (load_cp_where(u, c, where, sizeof where) != 0)
    return -1;
  snprintf(who, sizeof who, "load (moving the row of %s)", file);
  if (dm_db_fence_refused(c, u->cp_table, where, u->fence, who, err) == 0) {
    u->host->error_make(u->ctx, err, DM_ERR_CHECKPOINT, NULL,
                        "load: the row of %s is missing from the checkpoint table %s (removed by "
                        "hand?): the fenced update found no row to move",
                        file, u->cp_table);
    err->resumable = 0;
  }
  return -1;
}

static int load_cp_find(load_dump *d, const char *name) {
  int lo = 0, hi = d->n_files - 1;
  while (lo <= hi) {
    int mid = lo + (hi - lo) / 2;
    int r = strcmp(d->files[mid].name, name);
    if (r == 0)
      return mid;
    if (r < 0)
      lo = mid + 1;
    else
      hi = mid - 1;
  }
  return -1;
}

int load_cp_read(load_unit *u, MYSQL *c, load_dump *d, int *n_rows, dm_error *err) {
  char q[512 + 2 * LOAD_NAME_MAX + 256], id[160];
  *n_rows = 0;
  if (load_db_literal(c, u->host->source_id(u->ctx), id, sizeof id) != 0) {
    u->host->error_make(u->ctx, err, DM_ERR_CONFIG_INVALID, NULL, "load: source-id is too long");
    return -1;
  }
  if (u->fence) { /* owning the rows under a token: raised first (refused when one has more) */
    char where[200];
    snprintf(where, sizeof where, "`id` = %s", id);
    if (dm_db_fence_raise(c, u->cp_table, where, u->fence, "load", err) != 0)
      return -1;
  }
  /* A locking read: the connection of a process killed a moment ago may still be committing its
   * last batch on the server (its COMMIT was in flight). That transaction holds the lock of the
   * checkpoint row it moved, so FOR UPDATE waits for it and then reads the committed offset;
   * a plain read would see the old offset and load the batch a second time. */
  int n = snprintf(q, sizeof q,
                   "SELECT `filename`, `offset`, `end_pos` FROM %s WHERE `id` = %s "
                   "ORDER BY `filename` FOR UPDATE",
                   u->cp_table, id);
  if (mysql_real_query(c, q, (size_t)n) != 0) {
    load_db_error(u, c, "load: cannot read the checkpoint", err);
    return -1;
  }
  MYSQL_RES *r = mysql_store_result(c);
  if (!r) {
    load_db_error(u, c, "load: cannot read the checkpoint", err);
    return -1;
  }
  MYSQL_ROW row;
  int rc = 0;
  while (rc == 0 && (row = mysql_fetch_row(r)) != NULL) {
    (*n_rows)++;
    const char *name = row[0] ? row[0] : "";
    uint64_t off = row[1] ? strtoull(row[1], NULL, 10) : 0;
    uint64_t end = row[2] ? strtoull(row[2], NULL, 10) : 0;
    int i = load_cp_find(d, name);
    if (off >= end) {
      if (i >= 0) { /* done: whatever the file holds now is loaded */
        d->files[i].registered = true;
        d->files[i].offset = d->files[i].size;
      }
      continue;
    }
    if (i < 0) {
      u->host->error_make(u->ctx, err, DM_ERR_LOAD_DUMP_INCOMPLETE, NULL,
                          "load: %s/%s is in the load checkpoint (%" PRIu64 " of %" PRIu64
                          " bytes loaded) but no longer in the dump folder",
                          d->dir, name, off, end);
      rc = -1;
    } else if (d->files[i].size != end) {
      u->host->error_make(u->ctx, err, DM_ERR_LOAD_DUMP_INCOMPLETE, NULL,
                          "load: %s/%s has %" PRIu64 " bytes, but the load checkpoint registered "
                          "it with %" PRIu64 ": the dump changed since the load started",
                          d->dir, name, d->files[i].size, end);
      rc = -1;
    } else {
      d->files[i].registered = true;
      d->files[i].offset = off;
    }
  }
  mysql_free_result(r);
  return rc;
}

/* Appends the row of file i to q (grown as needed). */
static int load_cp_row(MYSQL *c, const char *id, uint64_t fence, load_dump *d, int i, char **q,
                       size_t *len, size_t *cap) {
  const load_file *f = &d->files[i];
  const load_table *t = &d->tables[f->table];
  size_t need = strlen(id) + 2 * (strlen(f->name) + strlen(t->db) + strlen(t->table)) + 160;
  if (*len + need > *cap) {
    size_t ncap = (*cap + need) * 2;
    char *nq = realloc(*q, ncap);
    if (!nq)
      return -1;
    *q = nq;
    *cap = ncap;
  }
  char *p = *q + *len;
  size_t room = *cap - *len;
  int n = snprintf(p, room, "(%s, ", id);
  load_db_literal(c, f->name, p + n, room - (size_t)n);
  n += (int)strlen(p + n);
  p[n++] = ',';
  load_db_literal(c, t->db, p + n, room - (size_t)n);
  n += (int)strlen(p + n);
  p[n++] = ',';
  load_db_literal(c, t->table, p + n, room - (size_t)n);
  n += (int)strlen(p + n);
  n += snprintf(p + n, room - (size_t)n, ", 0, %" PRIu64 ", '%s'", f->size, d->dump_id);
  n += snprintf(p + n, room - (size_t)n, fence ? ", %" PRIu64 ")" : ")", fence);
  *len += (size_t)n;
  return 0;
}

int load_cp_register(load_unit *u, MYSQL *c, load_dump *d, dm_error *err) {
  char id[160];
  if (load_db_literal(c, u->host->source_id(u->ctx), id, sizeof id) != 0) {
    u->host->error_make(u->ctx, err, DM_ERR_CONFIG_INVALID, NULL, "load: source-id is too long");
    return -1;
  }
  if (load_db_exec(u, c, "BEGIN", 5, "load: cannot register the dump files", err) != 0)
    return -1;
  char *q = NULL;
  size_t len = 0, cap = 0;
  int rc = 0;
  int i = 0;
  while (rc == 0 && i < d->n_files) {
    char head[2 * LOAD_NAME_MAX + 128];
    len = 0;
    int hn = snprintf(head, sizeof head,
                      "INSERT INTO %s (`id`, `filename`, `cp_schema`, `cp_table`, `offset`, "
                      "`end_pos`, `dump_id`%s) VALUES ",
                      u->cp_table, u->fence ? ", `fence`" : "");
    bool any = false;
    for (; i < d->n_files && len < LOAD_CP_STMT_MAX; i++) {
      if (d->files[i].registered || !d->files[i].present)
        continue;
      if (len == 0) {
        if (!(q = q ? q : malloc(cap = 65536))) {
          rc = -1;
          break;
        }
        memcpy(q, head, (size_t)hn);
        len = (size_t)hn;
      } else {
        q[len++] = ',';
      }
      if (load_cp_row(c, id, u->fence, d, i, &q, &len, &cap) != 0) {
        rc = -1;
        break;
      }
      any = true;
    }
    if (rc != 0) {
      u->host->error_make(u->ctx, err, DM_ERR_NO_MEMORY, NULL, "load: no memory");
      break;
    }
    if (any)
      rc = load_db_exec(u, c, q, len, "load: cannot register the dump files", err);
  }
  free(q);
  if (rc == 0)
    rc = load_db_exec(u, c, "COMMIT", 6, "load: cannot register the dump files", err);
  if (rc != 0) {
    mysql_real_query(c, "ROLLBACK", 8); /* best effort: a lost connection rolls back anyway */
    return -1;
  }
  for (int k = 0; k < d->n_files; k++)
    if (d->files[k].present)
      d->files[k].registered = true;
  return 0;
}

int load_cp_update_sql(load_unit *u, MYSQL *c, const char *file, uint64_t offset, char *out,
                       size_t out_len) {
  char id[160], name[2 * 256 + 3];
  if (load_db_literal(c, u->host->source_id(u->ctx), id, sizeof id) != 0 ||
      load_db_literal(c, file, name, sizeof name) != 0)
    return -1;
  int n = u->fence
              ? snprintf(out, out_len,
                         "UPDATE %s SET `offset` = %" PRIu64 ", `fence` = %" PRIu64
                         " WHERE `id` = %s AND `filename` = %s AND `fence` <= %" PRIu64,
                         u->cp_table, offset, u->fence, id, name, u->fence)
              : snprintf(out, out_len,
                         "UPDATE %s SET `offset` = %" PRIu64 " WHERE `id` = %s AND `filename` = %s",
                         u->cp_table, offset, id, name);
  return n > 0 && (size_t)n < out_len ? n : -1;
}

int load_cp_exists(load_unit *u, MYSQL *c, bool *exists, dm_error *err) {
  char q[512 + 2 * LOAD_NAME_MAX + 160], id[160];
  *exists = false;
  if (load_db_literal(c, u->host->source_id(u->ctx), id, sizeof id) != 0) {
    u->host->error_make(u->ctx, err, DM_ERR_CONFIG_INVALID, NULL, "load: source-id is too long");
    return -1;
  }
  int n = snprintf(q, sizeof q, "SELECT 1 FROM %s WHERE `id` = %s LIMIT 1", u->cp_table, id);
  if (mysql_real_query(c, q, (size_t)n) != 0) {
    unsigned code = mysql_errno(c);
    if (code == ER_BAD_DB_ERROR || code == ER_NO_SUCH_TABLE)
      return 0; /* never started here */
    if (code == ER_TABLEACCESS_DENIED_ERROR || code == ER_DBACCESS_DENIED_ERROR)
      return 0; /* process says which privileges are missing */
    load_db_error(u, c, "load: cannot read the checkpoint", err);
    return -1;
  }
  MYSQL_RES *r = mysql_store_result(c);
  if (!r) {
    load_db_error(u, c, "load: cannot read the checkpoint", err);
    return -1;
  }
  *exists = mysql_num_rows(r) > 0;
  mysql_free_result(r);
  return 0;
}

/* The target tables (routed) of the source tables that `sql` selects (cp_schema, cp_table) */
typedef struct load_cp_targets {
  char (*names)[2][LOAD_NAME_MAX];
  int n;
} load_cp_targets;

static int load_cp_targets_read(load_unit *u, MYSQL *c, const char *sql, int len,
                                load_cp_targets *out, dm_error *err) {
  out->names = NULL;
  out->n = 0;
  MYSQL_RES *r = NULL;
  if (mysql_real_query(c, sql, (size_t)len) != 0 || !(r = mysql_store_result(c))) {
    load_db_error(u, c, "load: cannot read the checkpoint", err);
    return -1;
  }
  out->names = calloc(mysql_num_rows(r) + 1, sizeof *out->names);
  if (!out->names) {
    mysql_free_result(r);
    u->host->error_make(u->ctx, err, DM_ERR_NO_MEMORY, NULL, "load: no memory");
    return -1;
  }
  MYSQL_ROW row;
  while ((row = mysql_fetch_row(r)) != NULL) {
    char(*t)[LOAD_NAME_MAX] = out->names[out->n++];
    u->host->route_table(u->ctx, row[0] ? row[0] : "", row[1] ? row[1] : "", t[0], LOAD_NAME_MAX,
                         t[1], LOAD_NAME_MAX);
  }
  mysql_free_result(r);
  return 0;
}

int load_cp_other_dump(load_unit *u, MYSQL *c, const load_dump *d, dm_error *err) {
  char id[160], where[200], q[1024 + 2 * LOAD_NAME_MAX];
  if (load_db_literal(c, u->host->source_id(u->ctx), id, sizeof id) != 0) {
    u->host->error_make(u->ctx, err, DM_ERR_CONFIG_INVALID, NULL, "load: source-id is too long");
    return -1;
  }
  snprintf(where, sizeof where, "`id` = %s", id);
  /* owning the rows first: a stale worker of the old binding (frozen, partitioned) can no longer
   * commit a batch into the tables emptied below (its batch's checkpoint update is fenced) */
  if (u->fence && dm_db_fence_raise(c, u->cp_table, where, u->fence, "load", err) != 0)
    return -1;
  int n = snprintf(q, sizeof q,
                   "SELECT `dump_id` FROM %s WHERE %s AND `dump_id` NOT IN ('', '%s') LIMIT 1",
                   u->cp_table, where, d->dump_id);
  MYSQL_RES *r = NULL;
  if (mysql_real_query(c, q, (size_t)n) != 0 || !(r = mysql_store_result(c))) {
    load_db_error(u, c, "load: cannot read the checkpoint", err);
    return -1;
  }
  MYSQL_ROW row = mysql_fetch_row(r);
  char other[17] = "";
  if (row && row[0])
    dm_strlcpy(other, row[0], sizeof other);
  mysql_free_result(r);
  if (!other[0])
    return 0; /* this dump's rows, or none */

  load_cp_targets mine, others;
  n = snprintf(q, sizeof q,
               "SELECT `cp_schema`, `cp_table` FROM %s WHERE %s GROUP BY `cp_schema`, `cp_table` "
               "HAVING MAX(`offset`) > 0",
               u->cp_table, where);
  if (load_cp_targets_read(u, c, q, n, &mine, err) != 0)
    return -1;
  n = snprintf(q, sizeof q, "SELECT DISTINCT `cp_schema`, `cp_table` FROM %s WHERE NOT (%s)",
               u->cp_table, where);
  if (load_cp_targets_read(u, c, q, n, &others, err) != 0) {
    free(mine.names);
    return -1;
  }
  int rc = 0;
  for (int i = 0; i < mine.n && rc == 0; i++)
    for (int k = 0; k < others.n && rc == 0; k++)
      if (strcmp(mine.names[i][0], others.names[k][0]) == 0 &&
          strcmp(mine.names[i][1], others.names[k][1]) == 0) {
        u->host->error_make(
            u->ctx, err, DM_ERR_LOAD_OTHER_DUMP, NULL,
            "load: the checkpoint %s holds rows of source `%s` for another dump (%s, this one is "
            "%s: the subtask moved from another worker, or its dump folder was made again) that "
            "loaded into `%s`.`%s`, where other sources load too: its rows cannot be taken out "
            "alone, so the load does not start",
            u->cp_table, u->host->source_id(u->ctx), other, d->dump_id, mine.names[i][0],
            mine.names[i][1]);
        rc = -1;
      }
  free(others.names);
  for (int i = 0; i < mine.n && rc == 0; i++) {
    char qd[2 * LOAD_NAME_MAX + 3], qt[2 * LOAD_NAME_MAX + 3];
    n = snprintf(q, sizeof q, "TRUNCATE TABLE %s.%s", dm_db_quoted(mine.names[i][0], qd, sizeof qd),
                 dm_db_quoted(mine.names[i][1], qt, sizeof qt));
    if (mysql_real_query(c, q, (size_t)n) != 0 && mysql_errno(c) != ER_NO_SUCH_TABLE) {
      load_db_error(u, c, "load: cannot empty a table of the other dump's load", err);
      rc = -1;
    }
  }
  if (rc == 0) {
    n = u->fence ? snprintf(q, sizeof q, "DELETE FROM %s WHERE %s AND `fence` <= %" PRIu64,
                            u->cp_table, where, u->fence)
                 : snprintf(q, sizeof q, "DELETE FROM %s WHERE %s", u->cp_table, where);
    rc = load_db_exec(u, c, q, (size_t)n, "load: cannot remove the other dump's checkpoint", err);
  }
  if (rc == 0)
    u->host->logf(u->ctx, DM_LOG_WARN,
                  "load: the checkpoint held this source's rows for another dump (%s; this one is "
                  "%s): the subtask moved from another worker, or its dump was made again. Emptied "
                  "the %d target table(s) that load had written to and removed its rows; loading "
                  "%s from the start",
                  other, d->dump_id, mine.n, d->dir);
  free(mine.names);
  return rc;
}
