/*
 * Deferred secondary keys (defer-secondary-keys): a table is created without its plain secondary
 * keys, its data is loaded, and the keys are added in one ALTER TABLE, which InnoDB builds by
 * sorting instead of inserting row by row into each secondary B-tree (myloader's
 * --innodb-optimize-keys). The primary key and unique keys stay in the CREATE: they enforce the
 * duplicate checks of on-duplicate.
 *
 * Exactly once across crashes: a target table's keys are recorded as pending in
 * `<meta-schema>`.`<task>_loader_keys` BEFORE the table is created without them, and marked done
 * after the ALTER. The ALTER runs when every file of the table is at its end_pos, so whatever the
 * moment of a crash, the next run finds either a pending row (it adds what the table lacks; InnoDB
 * DDL is atomic, so an interrupted ALTER left no key behind) or a done one.
 */
#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mysqld_error.h>

#include <dmhost/db.h>

#include "load.h"

/* ---- the CREATE TABLE text ---- */

static bool load_keys_starts(const char *p, const char *end, const char *word) {
  size_t n = strlen(word);
  return (size_t)(end - p) >= n && memcmp(p, word, n) == 0;
}

/* Reads a backtick-quoted identifier at *p (unquoted into out); false if there is none. */
static bool load_keys_ident(const char **p, const char *end, char *out, size_t out_len) {
  const char *s = *p;
  size_t o = 0;
  if (s >= end || *s != '`')
    return false;
  for (s++; s < end; s++) {
    if (*s == '`') {
      if (s + 1 < end && s[1] == '`') {
        s++;
      } else {
        out[o] = '\0';
        *p = s + 1;
        return true;
      }
    }
    if (o + 1 >= out_len)
      return false;
    out[o++] = *s;
  }
  return false;
}

/* `KEY `name` (`col`...` or `INDEX ...`: the key's name and first column; false for any other
 * definition (PRIMARY, UNIQUE, FULLTEXT, SPATIAL, CONSTRAINT, columns, periods). */
static bool load_keys_plain_key(const char *p, const char *end, char *name, char *first) {
  if (load_keys_starts(p, end, "KEY "))
    p += 4;
  else if (load_keys_starts(p, end, "INDEX "))
    p += 6;
  else
    return false;
  if (!load_keys_ident(&p, end, name, LOAD_NAME_MAX))
    return false;
  while (p < end && *p == ' ')
    p++;
  if (p >= end || *p != '(')
    return false;
  p++;
  return load_keys_ident(&p, end, first, LOAD_NAME_MAX);
}

/* A column definition with AUTO_INCREMENT: its name. */
static bool load_keys_auto_column(const char *p, const char *end, char *name) {
  const char *s = p;
  if (!load_keys_ident(&s, end, name, LOAD_NAME_MAX))
    return false;
  for (; s + 15 <= end; s++)
    if (memcmp(s, " AUTO_INCREMENT", 15) == 0 && (s + 15 == end || s[15] == ' ' || s[15] == ','))
      return true;
  return false;
}

typedef struct load_keys_buf {
  char *p;
  size_t len, cap;
  bool oom;
} load_keys_buf;

static void load_keys_add(load_keys_buf *b, const char *s, size_t n) {
  if (b->oom)
    return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = (b->len + n + 1) * 2;
    char *np = realloc(b->p, cap);
    if (!np) {
      b->oom = true;
      return;
    }
    b->p = np;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

int load_keys_split(const char *rest, char **stripped, char **keys) {
  *stripped = *keys = NULL;
  /* SHOW CREATE TABLE's layout: "(\n", one definition a line indented by two spaces (string
   * literals in it have their newlines escaped), ")..." and the options. Anything else, or a
   * foreign key (it needs an index of its own on the referencing columns), is left as it is. */
  const char *open = rest;
  while (*open == ' ' || *open == '\t')
    open++;
  if (*open != '(' || open[1] != '\n' || strstr(rest, "FOREIGN KEY"))
    return 0;
  load_keys_buf kept = {0}, deferred = {0};
  char autocol[LOAD_NAME_MAX] = "", name[LOAD_NAME_MAX], first[LOAD_NAME_MAX];
  const char *p = open + 2, *close = NULL;
  bool ok = true;
  int n_kept = 0;
  while (*p && ok) {
    const char *eol = strchr(p, '\n');
    if (!eol)
      eol = p + strlen(p);
    if (*p == ')') {
      close = p;
      break;
    }
    if (p[0] != ' ' || p[1] != ' ') {
      ok = false;
      break;
    }
    const char *def = p + 2, *end = eol;
    if (end > def && end[-1] == ',')
      end--;
    if (*def == '`' && load_keys_auto_column(def, end, name))
      memcpy(autocol, name, sizeof autocol);
    bool defer = load_keys_plain_key(def, end, name, first) &&
                 !(autocol[0] && strcmp(first, autocol) == 0); /* AUTO_INCREMENT needs a key */
    load_keys_buf *b = defer ? &deferred : &kept;
    if (defer && deferred.len)
      load_keys_add(b, "\n", 1);
    if (!defer) {
      load_keys_add(b, n_kept ? ",\n  " : "\n  ", n_kept ? 4 : 3);
      n_kept++;
    }
    load_keys_add(b, def, (size_t)(end - def));
    p = *eol ? eol + 1 : eol;
  }
  if (!ok || !close || deferred.len == 0 || n_kept == 0) {
    int rc = kept.oom || deferred.oom ? -1 : 0;
    free(kept.p);
    free(deferred.p);
    return rc;
  }
  load_keys_buf out = {0};
  load_keys_add(&out, rest, (size_t)(open + 1 - rest));
  load_keys_add(&out, kept.p, kept.len);
  load_keys_add(&out, "\n", 1);
  load_keys_add(&out, close, strlen(close));
  free(kept.p);
  if (out.oom || kept.oom || deferred.oom) {
    free(out.p);
    free(deferred.p);
    return -1;
  }
  *stripped = out.p;
  *keys = deferred.p;
  return 0;
}

/* ---- the table of deferred keys ---- */

int load_keys_prepare(load_unit *u, MYSQL *c, dm_error *err) {
  char q[1024 + 2 * LOAD_NAME_MAX];
  int n = snprintf(q, sizeof q,
                   "CREATE TABLE IF NOT EXISTS %s ("
                   "`id` VARCHAR(32) NOT NULL, "
                   "`target_schema` VARCHAR(128) NOT NULL, "
                   "`target_table` VARCHAR(128) NOT NULL, "
                   "`key_defs` MEDIUMTEXT NOT NULL, "
                   "`done` TINYINT NOT NULL DEFAULT 0, "
                   "`create_time` TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, "
                   "`update_time` TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE "
                   "CURRENT_TIMESTAMP, "
                   "PRIMARY KEY (`id`, `target_schema`, `target_table`)) "
                   "DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin",
                   u->keys_table);
  return load_db_exec(u, c, q, (size_t)n, "load: cannot create the table of deferred keys", err);
}

static int load_keys_nomem(load_unit *u, dm_error *err) {
  u->host->error_make(u->ctx, err, DM_ERR_NO_MEMORY, NULL, "load: no memory");
  return -1;
}

/* "WHERE `id` = '..' AND `target_schema` = '..' AND `target_table` = '..'" */
static int load_keys_where(load_unit *u, MYSQL *c, const load_table *t, char *out, size_t len) {
  char id[160], db[2 * LOAD_NAME_MAX + 3], tb[2 * LOAD_NAME_MAX + 3];
  if (load_db_literal(c, u->host->source_id(u->ctx), id, sizeof id) != 0 ||
      load_db_literal(c, t->tdb, db, sizeof db) != 0 ||
      load_db_literal(c, t->ttable, tb, sizeof tb) != 0)
    return -1;
  int n = snprintf(out, len, " WHERE `id` = %s AND `target_schema` = %s AND `target_table` = %s",
                   id, db, tb);
  return n > 0 && (size_t)n < len ? 0 : -1;
}

int load_keys_read(load_unit *u, MYSQL *c, load_dump *d, dm_error *err) {
  char q[512 + 2 * LOAD_NAME_MAX + 160], id[160];
  if (load_db_literal(c, u->host->source_id(u->ctx), id, sizeof id) != 0)
    return load_keys_nomem(u, err);
  int n = snprintf(q, sizeof q,
                   "SELECT `target_schema`, `target_table`, `key_defs` FROM %s WHERE `id` = %s "
                   "AND `done` = 0",
                   u->keys_table, id);
  MYSQL_RES *r = NULL;
  if (mysql_real_query(c, q, (size_t)n) != 0 || !(r = mysql_store_result(c))) {
    load_db_error(u, c, "load: cannot read the table of deferred keys", err);
    return -1;
  }
  MYSQL_ROW row;
  int rc = 0;
  while (rc == 0 && (row = mysql_fetch_row(r)) != NULL) {
    if (!row[0] || !row[1] || !row[2] || !row[2][0])
      continue;
    for (int i = 0; i < d->n_tables; i++) {
      load_table *t = &d->tables[i];
      if (!t->allowed || t->group != i || strcmp(t->tdb, row[0]) != 0 ||
          strcmp(t->ttable, row[1]) != 0)
        continue;
      free(t->keys);
      if (!(t->keys = strdup(row[2])))
        rc = load_keys_nomem(u, err);
      break;
    }
  }
  mysql_free_result(r);
  return rc;
}

int load_keys_record(load_unit *u, MYSQL *c, const load_table *t, const char *keys, dm_error *err) {
  char id[160], db[2 * LOAD_NAME_MAX + 3], tb[2 * LOAD_NAME_MAX + 3];
  size_t kl = strlen(keys), cap = 2 * kl + 1024 + 2 * LOAD_NAME_MAX;
  char *q = malloc(cap), *lit = malloc(2 * kl + 3);
  if (!q || !lit || load_db_literal(c, u->host->source_id(u->ctx), id, sizeof id) != 0 ||
      load_db_literal(c, t->tdb, db, sizeof db) != 0 ||
      load_db_literal(c, t->ttable, tb, sizeof tb) != 0 ||
      load_db_literal(c, keys, lit, 2 * kl + 3) != 0) {
    free(q);
    free(lit);
    return load_keys_nomem(u, err);
  }
  /* The table is about to be created without them: whatever an older row said is obsolete. */
  int n = snprintf(q, cap,
                   "INSERT INTO %s (`id`, `target_schema`, `target_table`, `key_defs`, `done`) "
                   "VALUES (%s, %s, %s, %s, 0) ON DUPLICATE KEY UPDATE `key_defs` = "
                   "VALUES(`key_defs`), `done` = 0",
                   u->keys_table, id, db, tb, lit);
  free(lit);
  char what[3 * LOAD_NAME_MAX];
  snprintf(what, sizeof what, "load: cannot record the deferred keys of `%s`.`%s`", t->tdb,
           t->ttable);
  int rc = load_db_exec(u, c, q, (size_t)n, what, err);
  free(q);
  return rc;
}

/* ---- the ALTER TABLE ---- */

/* Names of the indexes the target table has, one `name`\n each (caller frees). */
static int load_keys_existing(load_unit *u, MYSQL *c, const load_table *t, char **out,
                              dm_error *err) {
  char q[512 + 4 * LOAD_NAME_MAX], db[2 * LOAD_NAME_MAX + 3], tb[2 * LOAD_NAME_MAX + 3];
  load_db_literal(c, t->tdb, db, sizeof db);
  load_db_literal(c, t->ttable, tb, sizeof tb);
  int n = snprintf(q, sizeof q,
                   "SELECT DISTINCT INDEX_NAME FROM information_schema.STATISTICS WHERE "
                   "TABLE_SCHEMA = %s AND TABLE_NAME = %s",
                   db, tb);
  MYSQL_RES *r = NULL;
  if (mysql_real_query(c, q, (size_t)n) != 0 || !(r = mysql_store_result(c))) {
    load_db_error(u, c, "load: cannot read information_schema.STATISTICS", err);
    return -1;
  }
  load_keys_buf b = {0};
  load_keys_add(&b, "\n", 1);
  MYSQL_ROW row;
  while ((row = mysql_fetch_row(r)) != NULL)
    if (row[0]) {
      load_keys_add(&b, row[0], strlen(row[0]));
      load_keys_add(&b, "\n", 1);
    }
  mysql_free_result(r);
  if (b.oom) {
    free(b.p);
    return load_keys_nomem(u, err);
  }
  *out = b.p;
  return 0;
}

static bool load_keys_has(const char *existing, const char *name) {
  size_t n = strlen(name);
  for (const char *p = existing; (p = strchr(p, '\n')) != NULL && p[1]; p++)
    if (strncasecmp(p + 1, name, n) == 0 && p[1 + n] == '\n')
      return true;
  return false;
}

/* Interrupts the statement running on c (a stop while an ALTER runs). */
static void load_keys_kill_query(load_unit *u, MYSQL *c) {
  dm_error e;
  MYSQL *k = load_db_connect(u, &e);
  if (!k) {
    u->host->logf(u->ctx, DM_LOG_WARN, "load: cannot interrupt the ALTER TABLE: %s", e.message);
    return;
  }
  char q[64];
  int n = snprintf(q, sizeof q, "KILL QUERY %lu", mysql_thread_id(c));
  if (mysql_real_query(k, q, (size_t)n) != 0)
    u->host->logf(u->ctx, DM_LOG_WARN, "load: cannot interrupt the ALTER TABLE: %s",
                  mysql_error(k));
  load_db_close(u, k);
}

/* Runs sql on c; a stop meanwhile interrupts it (*stopped). 0 ok, -1 the server's error. */
static int load_keys_run(load_unit *u, MYSQL *c, const char *sql, size_t len, atomic_bool *abort,
                         bool *stopped) {
  *stopped = false;
  if (mysql_send_query(c, sql, (unsigned long)len) != 0)
    return -1;
  int sfd = u->host->stop_fd(u->ctx);
  struct pollfd p[2] = {{.fd = (int)mysql_get_socket(c), .events = POLLIN},
                        {.fd = sfd, .events = POLLIN}};
  for (;;) {
    int n = poll(p, !*stopped && sfd >= 0 ? 2 : 1, 500);
    if (n < 0 && errno != EINTR)
      break;
    if (n > 0 && p[0].revents)
      break; /* the answer (or a closed socket, after kill) */
    if (!*stopped && (u->host->stop_requested(u->ctx) || (abort && atomic_load(abort)))) {
      *stopped = true;
      load_keys_kill_query(u, c);
    }
  }
  return mysql_read_query_result(c) == 0 ? 0 : -1;
}

int load_keys_apply(load_unit *u, MYSQL *c, load_table *t, atomic_bool *abort, dm_error *err) {
  char *existing = NULL, where[1024 + 4 * LOAD_NAME_MAX];
  if (load_keys_existing(u, c, t, &existing, err) != 0)
    return -1;
  char qd[2 * LOAD_NAME_MAX + 3], qt[2 * LOAD_NAME_MAX + 3], head[5 * LOAD_NAME_MAX];
  snprintf(head, sizeof head, "ALTER TABLE %s.%s ", dm_db_quoted(t->tdb, qd, sizeof qd),
           dm_db_quoted(t->ttable, qt, sizeof qt));
  load_keys_buf q = {0};
  load_keys_add(&q, head, strlen(head));
  int n_add = 0;
  for (const char *p = t->keys; *p;) {
    const char *eol = strchr(p, '\n');
    if (!eol)
      eol = p + strlen(p);
    char name[LOAD_NAME_MAX], first[LOAD_NAME_MAX];
    /* A key the table has already: added by an ALTER that finished before a crash, or by
     * another subtask loading into the same table. */
    if (!load_keys_plain_key(p, eol, name, first) || !load_keys_has(existing, name)) {
      load_keys_add(&q, n_add ? ", ADD " : "ADD ", n_add ? 6 : 4);
      n_add++;
      load_keys_add(&q, p, (size_t)(eol - p));
    }
    p = *eol ? eol + 1 : eol;
  }
  free(existing);
  if (q.oom) {
    free(q.p);
    return load_keys_nomem(u, err);
  }
  int rc = 0;
  char what[4 * LOAD_NAME_MAX];
  snprintf(what, sizeof what, "load: cannot add the deferred secondary keys to `%s`.`%s`", t->tdb,
           t->ttable);
  if (n_add > 0) {
    int64_t t0 = dm_clock_ns();
    bool stopped = false;
    rc = load_keys_run(u, c, q.p, q.len, abort, &stopped);
    unsigned code = rc != 0 ? mysql_errno(c) : 0;
    if (rc != 0 && code == ER_DUP_KEYNAME) {
      rc = 0; /* another subtask added them meanwhile */
    } else if (rc != 0 && stopped) {
      u->host->logf(u->ctx, DM_LOG_INFO,
                    "load: adding the keys of `%s`.`%s` interrupted by a stop (they are added "
                    "at the next run)",
                    t->tdb, t->ttable);
      free(q.p);
      return 1;
    } else if (rc != 0) {
      load_db_error(u, c, what, err);
    } else {
      u->host->logf(u->ctx, DM_LOG_INFO, "load: added %d secondary key(s) to `%s`.`%s` in %.1f s",
                    n_add, t->tdb, t->ttable, (double)(dm_clock_ns() - t0) / 1e9);
    }
  }
  free(q.p);
  if (rc != 0)
    return -1;
  char upd[2048 + 4 * LOAD_NAME_MAX];
  if (load_keys_where(u, c, t, where, sizeof where) != 0)
    return load_keys_nomem(u, err);
  int n = snprintf(upd, sizeof upd, "UPDATE %s SET `done` = 1%s", u->keys_table, where);
  if (load_db_exec(u, c, upd, (size_t)n, what, err) != 0 ||
      load_db_exec(u, c, "COMMIT", 6, what, err) != 0)
    return -1;
  free(t->keys);
  t->keys = NULL;
  return 0;
}
