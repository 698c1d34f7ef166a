/* The precheck's items on the target server: privileges on the schemas the task writes, a
 * writable server and a usable meta schema. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dmhost/grants.h"
#include "precheck_internal.h"

/* One schema the task writes: fail when the target account lacks a privilege on it. */
static void pc_target_schema(pc_ctx *c, const char *schema, const char *why) {
  long have = pc_grants(c, c->target, schema);
  if (have < 0)
    return;
  uint32_t missing = DM_PRIV_TARGET_WRITE & ~(uint32_t)have;
  if (!missing)
    return;
  char names[160], where[256];
  dm_grant_names(missing, names, sizeof names);
  pc_fail(c, "the target account %s lacks %s on `%s` (%s)",
          pc_where(&c->task->target.ep, where, sizeof where), names, schema, why);
}

void pc_check_target_privilege(pc_ctx *c) {
  pc_target_schema(c, c->task->meta_schema, "the meta schema: checkpoints");
  if (!c->source)
    return; /* mode load: the tables come from the dump folder, not listed here */
  if (pc_tables(c) < 0)
    return;
  /* each routed schema once (the tables are sorted by source schema: the routed names repeat in
   * runs, and there are few of them) */
  const char **seen = calloc((size_t)c->n_tables + 1, sizeof *seen);
  if (!seen) {
    c->oom = true;
    return;
  }
  int n_seen = 0;
  for (int i = 0; i < c->n_tables; i++) {
    const char *to = c->tables[i].to_schema;
    bool dup = strcmp(to, c->task->meta_schema) == 0;
    for (int k = n_seen - 1; k >= 0 && !dup; k--)
      dup = strcmp(seen[k], to) == 0;
    if (dup)
      continue;
    seen[n_seen++] = to;
    pc_target_schema(c, to, "a replicated schema");
  }
  free(seen);
}

/* A statement on the target; false having failed the item with the server's error. */
static bool pc_target_exec(pc_ctx *c, const char *sql, const char *what) {
  if (mysql_query(c->target, sql) == 0)
    return true;
  char where[256];
  pc_fail(c, "%s on the target as %s failed: %s", what,
          pc_where(&c->task->target.ep, where, sizeof where), mysql_error(c->target));
  return false;
}

void pc_check_target_writable(pc_ctx *c) {
  char v[16];
  if (pc_value(c, c->target, "SELECT @@GLOBAL.read_only", v, sizeof v) < 0)
    return;
  if (strcmp(v, "0") != 0 && strcasecmp(v, "OFF") != 0) {
    pc_fail(c, "the target is read_only");
    return;
  }
  /* Create a table in the meta schema (created first if missing: the units create it too) and
   * drop it again; the name is this process's own so that two checks do not collide. */
  static atomic_uint seq;
  char sql[512];
  const char *meta = c->task->meta_schema;
  snprintf(sql, sizeof sql, "CREATE DATABASE IF NOT EXISTS `%s`", meta);
  if (!pc_target_exec(c, sql, "creating the meta schema"))
    return;
  char table[64];
  snprintf(table, sizeof table, "dmhost_precheck_%ld_%u", (long)getpid(),
           atomic_fetch_add(&seq, 1));
  snprintf(sql, sizeof sql, "CREATE TABLE `%s`.`%s` (id INT PRIMARY KEY)", meta, table);
  if (!pc_target_exec(c, sql, "creating a table in the meta schema"))
    return;
  snprintf(sql, sizeof sql, "INSERT INTO `%s`.`%s` VALUES (1)", meta, table);
  pc_target_exec(c, sql, "writing a table of the meta schema");
  snprintf(sql, sizeof sql, "DROP TABLE `%s`.`%s`", meta, table);
  pc_target_exec(c, sql, "dropping a table of the meta schema");
}
