/* SHOW GRANTS lines as privilege bits, and what each dump consistency needs (dmhost/grants.h). */
#include "dmhost/grants.h"

#include <stdio.h>
#include <string.h>

/* In the order of the DM_PRIV_* bits. */
static const char *const grant_names[DM_PRIV_COUNT] = {
    "SELECT",
    "INSERT",
    "UPDATE",
    "DELETE",
    "CREATE",
    "DROP",
    "ALTER",
    "RELOAD",
    "LOCK TABLES",
    "REPLICATION CLIENT",
    "REPLICATION SLAVE",
};

#define GRANT_GLOBAL_ONLY (DM_PRIV_RELOAD | DM_PRIV_REPL_CLIENT | DM_PRIV_REPL_SLAVE)
#define GRANT_ALL ((1u << DM_PRIV_COUNT) - 1)

/* Is `name` one whole entry of the comma-separated list privs ("SELECT, REPLICATION SLAVE")?
 * "REPLICATION SLAVE ADMIN" is not "REPLICATION SLAVE". */
static bool grant_has(const char *privs, const char *name) {
  size_t n = strlen(name);
  for (const char *p = privs; (p = strstr(p, name)) != NULL; p += n) {
    bool start = p == privs || p[-1] == ' ' || p[-1] == ',';
    bool end = p[n] == '\0' || p[n] == ',';
    if (start && end)
      return true;
  }
  return false;
}

/* MySQL's LIKE on a schema name of a grant: % any run, _ one character, \ quotes the next. */
static bool grant_like(const char *pat, const char *s) {
  for (; *pat; pat++, s++) {
    if (*pat == '%') {
      for (const char *t = s;; t++) {
        if (grant_like(pat + 1, t))
          return true;
        if (!*t)
          return false;
      }
    }
    if (!*s)
      return false;
    if (*pat == '\\' && pat[1])
      pat++;
    else if (*pat == '_')
      continue;
    if (*pat != *s)
      return false;
  }
  return *s == '\0';
}

/* The schema of "`db`.* TO ..." into buf (backquotes undone); false when it is not `db`.*. */
static bool grant_schema(const char *on, char *buf, size_t len, bool *table_level) {
  *table_level = false;
  if (*on != '`')
    return false;
  size_t n = 0;
  const char *p = on + 1;
  for (; *p; p++) {
    if (*p == '`') {
      if (p[1] != '`')
        break;
      p++;
    }
    if (n + 1 < len)
      buf[n++] = *p;
  }
  buf[n] = '\0';
  if (*p != '`' || p[1] != '.')
    return false;
  *table_level = p[2] != '*';
  return true;
}

bool dm_grant_is_role(const char *line) {
  if (strncmp(line, "GRANT ", 6) != 0)
    return false;
  const char *on = strstr(line, " ON "), *to = strstr(line, " TO ");
  return !on || (to && to < on);
}

uint32_t dm_grant_line(const char *line, const char *schema) {
  if (strncmp(line, "GRANT ", 6) != 0 || dm_grant_is_role(line))
    return 0;
  const char *on = strstr(line, " ON ") + 4;
  if (strncmp(on, "FUNCTION ", 9) == 0 || strncmp(on, "PROCEDURE ", 10) == 0 ||
      strncmp(on, "PACKAGE ", 8) == 0)
    return 0;
  char privs[512];
  size_t n = (size_t)(on - 4 - (line + 6));
  if (n >= sizeof privs)
    n = sizeof privs - 1;
  memcpy(privs, line + 6, n);
  privs[n] = '\0';
  bool global = strncmp(on, "*.* ", 4) == 0;
  if (!global) {
    char db[256];
    bool table_level;
    if (!grant_schema(on, db, sizeof db, &table_level))
      return 0;
    if (schema && (table_level || !grant_like(db, schema)))
      return 0;
  }
  uint32_t have = 0;
  if (grant_has(privs, "ALL PRIVILEGES") || grant_has(privs, "ALL"))
    have = GRANT_ALL;
  for (int i = 0; i < DM_PRIV_COUNT; i++)
    if (grant_has(privs, grant_names[i]))
      have |= 1u << i;
  if (grant_has(privs, "BINLOG MONITOR") || grant_has(privs, "SUPER"))
    have |= DM_PRIV_REPL_CLIENT;
  return global ? have : have & ~(uint32_t)GRANT_GLOBAL_ONLY;
}

uint32_t dm_grants_dump_need(const char *consistency, bool sync_follows) {
  /* flush: RELOAD for the lock (lock: LOCK TABLES) and, when a sync follows, REPLICATION CLIENT
   * for SHOW MASTER STATUS (without a sync the position is only for the record); none likewise
   * REPLICATION CLIENT. snapshot: SELECT only (the binlog_snapshot_* status variables need no
   * privilege). auto (the default, also when unset) takes the best mode the account may: SELECT
   * is enough. */
  uint32_t repl = sync_follows ? DM_PRIV_REPL_CLIENT : 0;
  if (!consistency || strcmp(consistency, "auto") == 0 || strcmp(consistency, "snapshot") == 0)
    return DM_PRIV_SELECT;
  if (strcmp(consistency, "flush") == 0)
    return DM_PRIV_SELECT | DM_PRIV_RELOAD | repl;
  if (strcmp(consistency, "lock") == 0)
    return DM_PRIV_SELECT | DM_PRIV_LOCK_TABLES | repl;
  if (strcmp(consistency, "none") == 0)
    return DM_PRIV_SELECT | repl;
  return DM_PRIV_SELECT;
}

char *dm_grant_names(uint32_t bits, char *buf, size_t len) {
  size_t at = 0;
  if (len)
    buf[0] = '\0';
  for (int i = 0; i < DM_PRIV_COUNT && at < len; i++)
    if (bits & (1u << i))
      at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? ", " : "", grant_names[i]);
  return buf;
}
