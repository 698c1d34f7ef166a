/* The precheck's items on the source server: version, server_id, binlog settings, privileges. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dmhost/grants.h"
#include "precheck_internal.h"

dmh_check_state dmh_precheck_version(const char *version, char *why, size_t len) {
  int major = 0, minor = 0;
  if (sscanf(version, "%d.%d", &major, &minor) != 2) {
    snprintf(why, len, "cannot read the version \"%s\"", version);
    return DMH_CHECK_FAIL;
  }
  if (strstr(version, "MariaDB")) {
    if (major > 10 || (major == 10 && minor >= 5)) {
      snprintf(why, len, "MariaDB %d.%d", major, minor);
      return DMH_CHECK_PASS;
    }
    snprintf(why, len,
             "MariaDB %d.%d is older than 10.5 (dmhost reads BINLOG MONITOR grants and binlog "
             "events of 10.5 and later)",
             major, minor);
    return DMH_CHECK_FAIL;
  }
  if (major > 5 || (major == 5 && minor >= 7)) {
    snprintf(why, len,
             "MySQL %d.%d: accepted as DM accepts it, but dmhost is built and tested against "
             "MariaDB only (the sync and the relay start from MariaDB GTIDs or binlog positions)",
             major, minor);
    return DMH_CHECK_WARN;
  }
  snprintf(why, len, "MySQL %d.%d is older than 5.7", major, minor);
  return DMH_CHECK_FAIL;
}

void pc_check_version(pc_ctx *c) {
  char v[128], why[256];
  if (pc_value(c, c->source, "SELECT @@version", v, sizeof v) < 0)
    return;
  dmh_check_state s = dmh_precheck_version(v, why, sizeof why);
  if (s == DMH_CHECK_FAIL)
    pc_fail(c, "the source runs %s: %s", v, why);
  else if (s == DMH_CHECK_WARN)
    pc_warn(c, "the source runs %s: %s", v, why);
}

void pc_check_server_id(pc_ctx *c) {
  char v[32];
  if (pc_value(c, c->source, "SELECT @@GLOBAL.server_id", v, sizeof v) < 0)
    return;
  unsigned long id = strtoul(v, NULL, 10);
  if (id == 0) {
    pc_fail(c, "the source's server_id is 0: a server without an id writes no usable binlog");
    return;
  }
  char t[32];
  if (c->target && pc_value(c, c->target, "SELECT @@GLOBAL.server_id", t, sizeof t) == 0 &&
      strtoul(t, NULL, 10) == id)
    pc_fail(c, "the source and the target have the same server_id %lu", id);
  /* The id this task pulls the binlog with: the relay's when the relay is on, else the sync's
   * (its default is derived from the task and source names and is not checked here). */
  const char *who = NULL;
  long long rid = -1;
  if (c->relay) {
    /* the relay unit reads its own section's server-id, else the default of the source-id */
    rid = pc_unit_int(c, DM_UNIT_RELAY, "server-id", c->src->server_id);
    who = "the relay's server-id (source file)";
  } else if (c->sync) {
    rid = pc_unit_int(c, DM_UNIT_SYNC, "server-id", -1);
    who = "the sync's server-id (task file)";
  }
  if (rid >= 0 && (unsigned long)rid == id)
    pc_fail(c, "%s is %lld, the source's own server_id: the source refuses a replica with its id",
            who, rid);
}

/* @@GLOBAL.var must be want (case-insensitive; alt is a second accepted spelling or NULL). */
static void pc_global_is(pc_ctx *c, const char *var, const char *want, const char *alt) {
  char q[96], v[64];
  snprintf(q, sizeof q, "SELECT @@GLOBAL.%s", var);
  if (pc_value(c, c->source, q, v, sizeof v) < 0)
    return;
  if (strcasecmp(v, want) != 0 && !(alt && strcasecmp(v, alt) == 0))
    pc_fail(c, "the source's %s is %s, the sync needs %s", var,
            strcmp(v, "0") == 0 ? "OFF"
            : v[0]              ? v
                                : "unset",
            want);
}

void pc_check_binlog_enable(pc_ctx *c) {
  pc_global_is(c, "log_bin", "ON", "1");
}

void pc_check_binlog_format(pc_ctx *c) {
  pc_global_is(c, "binlog_format", "ROW", NULL);
}

void pc_check_binlog_row_image(pc_ctx *c) {
  pc_global_is(c, "binlog_row_image", "FULL", NULL);
}

void pc_check_dump_privilege(pc_ctx *c) {
  long have = pc_grants(c, c->source, NULL);
  if (have < 0)
    return;
  const char *cons = pc_unit_string(c, DM_UNIT_DUMP, "consistency");
  uint32_t need = dm_grants_dump_need(cons, c->sync);
  if ((need & (uint32_t)have) == need)
    return;
  char missing[160], where[256];
  dm_grant_names(need & ~(uint32_t)have, missing, sizeof missing);
  pc_fail(c, "the source account %s lacks %s, which the dump needs with consistency %s%s",
          pc_where(&c->src->from.ep, where, sizeof where), missing, cons ? cons : "flush",
          c->sync ? " and a sync to follow" : "");
}

void pc_check_replication_privilege(pc_ctx *c) {
  long have = pc_grants(c, c->source, NULL);
  if (have < 0)
    return;
  uint32_t need = DM_PRIV_REPL_SLAVE | DM_PRIV_REPL_CLIENT;
  if ((need & (uint32_t)have) == need)
    return;
  char missing[160], where[256];
  dm_grant_names(need & ~(uint32_t)have, missing, sizeof missing);
  pc_fail(c,
          "the source account %s lacks %s (REPLICATION SLAVE reads the binlog, REPLICATION "
          "CLIENT, called BINLOG MONITOR since MariaDB 10.5, reads its position)",
          pc_where(&c->src->from.ep, where, sizeof where), missing);
}
