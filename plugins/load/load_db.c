/*
 * Connections to the target: the load session, error mapping, quoting, and the privilege check.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <errmsg.h>
#include <mysqld_error.h>

#include <dmhost/db.h>

#include "load.h"

/* One statement for the whole session set-up (docs/dump-format.md, "Session settings"). */
static const char load_db_session_sql[] =
    "SET NAMES binary, time_zone = '+00:00', sql_mode = 'NO_AUTO_VALUE_ON_ZERO', "
    "foreign_key_checks = 0, unique_checks = 0";

static void load_db_register(load_unit *u, int fd) {
  pthread_mutex_lock(&u->lock);
  for (int i = 0; i <= LOAD_MAX_CONNS; i++)
    if (u->conn_fds[i] < 0) {
      u->conn_fds[i] = fd;
      break;
    }
  pthread_mutex_unlock(&u->lock);
}

MYSQL *load_db_connect(load_unit *u, dm_error *err) {
  const dm_db_endpoint *ep = u->host->target_db(u->ctx);
  /* The client takes any statement the server may (1 GiB, the server's most); the server's own
   * max_allowed_packet is the limit (load_db_max_packet). */
  dm_db_connect_opts o = {.who = "load",
                          .side = DM_DB_TARGET,
                          .read_timeout_s = 3600,
                          .write_timeout_s = 3600,
                          .max_allowed_packet = 1ul << 30,
                          .endpoint_size = dm_host_db_endpoint_size(u->host, u->ctx)};
  MYSQL *c = dm_db_connect(ep, &o, err);
  if (!c)
    return NULL;
  if (mysql_real_query(c, load_db_session_sql, sizeof load_db_session_sql - 1) != 0) {
    load_db_error(u, c, "load: cannot set up the session on the target", err);
    mysql_close(c);
    return NULL;
  }
  load_db_register(u, (int)mysql_get_socket(c));
  return c;
}

void load_db_close(load_unit *u, MYSQL *c) {
  if (!c)
    return;
  int fd = (int)mysql_get_socket(c);
  pthread_mutex_lock(&u->lock);
  for (int i = 0; i <= LOAD_MAX_CONNS; i++)
    if (u->conn_fds[i] == fd) {
      u->conn_fds[i] = -1;
      break;
    }
  pthread_mutex_unlock(&u->lock);
  mysql_close(c);
}

void load_db_shutdown_all(load_unit *u) {
  /* Under the lock, so no socket is closed (and its number reused) while we shut it down. */
  pthread_mutex_lock(&u->lock);
  for (int i = 0; i <= LOAD_MAX_CONNS; i++)
    if (u->conn_fds[i] >= 0)
      shutdown(u->conn_fds[i], SHUT_RDWR);
  pthread_mutex_unlock(&u->lock);
}

void load_db_error(load_unit *u, MYSQL *c, const char *what, dm_error *err) {
  unsigned code = mysql_errno(c);
  char raw[DM_ERROR_RAW_MAX];
  snprintf(raw, sizeof raw, "ERROR %u (%s): %s", code, mysql_sqlstate(c), mysql_error(c));
  const dm_db_endpoint *ep = u->host->target_db(u->ctx);
  u->host->error_make(u->ctx, err, DM_ERR_DB_QUERY, raw, "%s (target %s:%d)", what, ep->host,
                      ep->port);
  err->resumable = dm_db_errno_transient(code);
  err->scope = DM_SCOPE_DOWNSTREAM;
}

int load_db_exec(load_unit *u, MYSQL *c, const char *sql, size_t len, const char *what,
                 dm_error *err) {
  if (mysql_real_query(c, sql, len) == 0) {
    MYSQL_RES *r = mysql_store_result(c);
    if (r)
      mysql_free_result(r);
    return 0;
  }
  load_db_error(u, c, what, err);
  return -1;
}

int load_db_max_packet(load_unit *u, MYSQL *c, uint64_t *max_stmt, dm_error *err) {
  static const char q[] = "SELECT @@max_allowed_packet";
  MYSQL_RES *r = NULL;
  MYSQL_ROW row;
  if (mysql_real_query(c, q, sizeof q - 1) != 0 || !(r = mysql_store_result(c)) ||
      !(row = mysql_fetch_row(r)) || !row[0]) {
    if (r)
      mysql_free_result(r);
    load_db_error(u, c, "load: cannot read the target's max_allowed_packet", err);
    return -1;
  }
  uint64_t v = strtoull(row[0], NULL, 10);
  mysql_free_result(r);
  /* A COM_QUERY packet is the statement and one command byte. */
  *max_stmt = v > 1 ? v - 1 : 1;
  return 0;
}

char *load_db_quote(const char *name, char *out, size_t out_len) {
  size_t o = 0;
  if (out_len < 3) {
    if (out_len)
      out[0] = '\0';
    return out;
  }
  out[o++] = '`';
  for (const char *p = name; *p && o + 3 < out_len; p++) {
    if (*p == '`')
      out[o++] = '`';
    out[o++] = *p;
  }
  out[o++] = '`';
  out[o] = '\0';
  return out;
}

int load_db_literal(MYSQL *c, const char *s, char *out, size_t out_len) {
  size_t n = strlen(s);
  if (out_len < 2 * n + 3)
    return -1;
  out[0] = '\'';
  unsigned long m = mysql_real_escape_string(c, out + 1, s, (unsigned long)n);
  out[1 + m] = '\'';
  out[2 + m] = '\0';
  return 0;
}

/* ---- privileges ---- */

enum {
  LOAD_PRIV_SELECT = 1 << 0,
  LOAD_PRIV_INSERT = 1 << 1,
  LOAD_PRIV_UPDATE = 1 << 2,
  LOAD_PRIV_DELETE = 1 << 3,
  LOAD_PRIV_CREATE = 1 << 4,
  LOAD_PRIV_DROP = 1 << 5,
  LOAD_PRIV_ALTER = 1 << 6,
  LOAD_PRIV_ALL = (1 << 7) - 1,
};

static const struct {
  int bit;
  const char *name;
} load_db_privs[] = {
    {LOAD_PRIV_SELECT, "SELECT"}, {LOAD_PRIV_INSERT, "INSERT"}, {LOAD_PRIV_UPDATE, "UPDATE"},
    {LOAD_PRIV_DELETE, "DELETE"}, {LOAD_PRIV_CREATE, "CREATE"}, {LOAD_PRIV_DROP, "DROP"},
    {LOAD_PRIV_ALTER, "ALTER"},
};

/* "SELECT, INSERT, CREATE" -> bits (ALL PRIVILEGES -> all). Column lists "(a, b)" are skipped. */
static int load_db_priv_bits(const char *s, size_t len) {
  int bits = 0;
  size_t i = 0;
  while (i < len) {
    while (i < len && (s[i] == ' ' || s[i] == ','))
      i++;
    size_t start = i;
    int depth = 0;
    while (i < len && (depth > 0 || s[i] != ',')) {
      depth += s[i] == '(';
      depth -= s[i] == ')';
      i++;
    }
    size_t n = i - start;
    if (n >= 3 && strncasecmp(s + start, "ALL", 3) == 0)
      bits |= LOAD_PRIV_ALL;
    for (size_t k = 0; k < sizeof load_db_privs / sizeof *load_db_privs; k++) {
      size_t m = strlen(load_db_privs[k].name);
      if (n >= m && strncasecmp(s + start, load_db_privs[k].name, m) == 0 &&
          (n == m || (s[start + m] == ' ' && s[start + m + 1] == '('))) /* not ALTER ROUTINE */
        bits |= load_db_privs[k].bit;
    }
  }
  return bits;
}

/* SQL LIKE with `\` escapes, as database names in grants are matched. */
static bool load_db_like(const char *pat, const char *s) {
  for (; *pat; pat++, s++) {
    if (*pat == '%') {
      for (const char *t = s;; t++) {
        if (load_db_like(pat + 1, t))
          return true;
        if (!*t)
          return false;
      }
    }
    if (*pat == '\\' && pat[1])
      pat++;
    else if (*pat == '_') {
      if (!*s)
        return false;
      continue;
    }
    if (*s != *pat)
      return false;
  }
  return *s == '\0';
}

/* One grant line: "GRANT <privs> ON <object> TO ...". Adds its bits to global or to schemas. */
static void load_db_grant_line(const char *line, const char *const *schemas, int n, int *global,
                               int *per_schema, bool *has_role) {
  if (strncmp(line, "GRANT ", 6) != 0)
    return;
  const char *on = strstr(line, " ON ");
  const char *to = strstr(line, " TO ");
  if (!on || (to && to < on)) {
    *has_role = true; /* "GRANT `role` TO user": privileges we cannot see from here */
    return;
  }
  int bits = load_db_priv_bits(line + 6, (size_t)(on - (line + 6)));
  const char *obj = on + 4;
  if (strncmp(obj, "*.*", 3) == 0) {
    *global |= bits;
    return;
  }
  if (*obj != '`')
    return; /* PROCEDURE/FUNCTION grants */
  char db[LOAD_NAME_MAX];
  size_t o = 0;
  const char *p = obj + 1;
  for (; *p && o + 1 < sizeof db; p++) {
    if (*p == '`') {
      if (p[1] != '`')
        break;
      p++;
    }
    db[o++] = *p;
  }
  db[o] = '\0';
  if (strncmp(p, "`.*", 3) != 0)
    return; /* a table-level grant: not enough to create tables */
  for (int i = 0; i < n; i++)
    if (load_db_like(db, schemas[i]))
      per_schema[i] |= bits;
}

int load_db_check_privileges(load_unit *u, MYSQL *c, const char *const *schemas, int n,
                             dm_error *err) {
  if (mysql_query(c, "SHOW GRANTS FOR CURRENT_USER()") != 0) {
    load_db_error(u, c, "load: cannot read the user's grants (SHOW GRANTS)", err);
    return -1;
  }
  MYSQL_RES *r = mysql_store_result(c);
  if (!r) {
    load_db_error(u, c, "load: cannot read the user's grants (SHOW GRANTS)", err);
    return -1;
  }
  int global = 0;
  int *per = calloc((size_t)n + 1, sizeof *per);
  if (!per) {
    mysql_free_result(r);
    u->host->error_make(u->ctx, err, DM_ERR_NO_MEMORY, NULL, "load: no memory");
    return -1;
  }
  bool has_role = false;
  MYSQL_ROW row;
  while ((row = mysql_fetch_row(r)) != NULL)
    if (row[0])
      load_db_grant_line(row[0], schemas, n, &global, per, &has_role);
  mysql_free_result(r);

  /* What each schema needs: the meta schema (index 0) SELECT/INSERT/UPDATE/CREATE, the scratch
   * schema (1) CREATE/DROP/SELECT, data schemas CREATE/INSERT/SELECT plus DELETE for REPLACE and
   * ALTER for deferred secondary keys. */
  char missing[DM_ERROR_MESSAGE_MAX] = "";
  size_t mlen = 0;
  for (int i = 0; i < n; i++) {
    int need = i == 0   ? LOAD_PRIV_SELECT | LOAD_PRIV_INSERT | LOAD_PRIV_UPDATE | LOAD_PRIV_CREATE
               : i == 1 ? LOAD_PRIV_SELECT | LOAD_PRIV_CREATE | LOAD_PRIV_DROP
                        : LOAD_PRIV_SELECT | LOAD_PRIV_INSERT | LOAD_PRIV_CREATE |
                              (u->cfg.on_dup == LOAD_DUP_REPLACE ? LOAD_PRIV_DELETE : 0) |
                              (u->cfg.defer_keys ? LOAD_PRIV_ALTER : 0);
    int lack = need & ~(global | per[i]);
    if (!lack)
      continue;
    bool dup = false; /* a schema listed twice (a route onto the meta schema) */
    for (int k = 0; k < i && !dup; k++)
      dup = strcmp(schemas[k], schemas[i]) == 0 && (need & ~(global | per[k])) == lack;
    if (dup || mlen + 8 >= sizeof missing)
      continue;
    mlen += (size_t)snprintf(missing + mlen, sizeof missing - mlen, "%s", mlen ? "; " : "");
    bool first = true;
    for (size_t k = 0; k < sizeof load_db_privs / sizeof *load_db_privs; k++) {
      if (!(lack & load_db_privs[k].bit) || mlen >= sizeof missing)
        continue;
      mlen += (size_t)snprintf(missing + mlen, sizeof missing - mlen, "%s%s", first ? "" : ", ",
                               load_db_privs[k].name);
      first = false;
    }
    if (mlen < sizeof missing)
      mlen += (size_t)snprintf(missing + mlen, sizeof missing - mlen, " on `%s`", schemas[i]);
  }
  free(per);
  if (mlen == 0)
    return 0;
  if (has_role) {
    u->host->logf(u->ctx, DM_LOG_WARN,
                  "load: the target user seems to lack %s, but it has roles the check cannot "
                  "see into; going on",
                  missing);
    return 0;
  }
  const dm_db_endpoint *ep = u->host->target_db(u->ctx);
  u->host->error_make(u->ctx, err, DM_ERR_DB_PRIVILEGE, NULL,
                      "load: user `%s` on the target %s:%d lacks %s", ep->user, ep->host, ep->port,
                      missing);
  err->scope = DM_SCOPE_DOWNSTREAM;
  return -1;
}
