/* The precheck's limits: connections the servers accept (conn_number_checking) and the relay
 * folder's free space (relay_disk_space). */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "dmhost/sdk.h"
#include "precheck_internal.h"

/* The units' defaults when the task file does not set them (plugins/dump/dump_unit.c
 * DUMP_DEFAULT_THREADS, plugins/load/load_unit.c LOAD_DEFAULT_POOL, plugins/sync/sync_unit.c). */
#define PC_DUMP_THREADS 4
#define PC_LOAD_POOL 4
#define PC_SYNC_WORKERS 8

/* How many more connections m's server and account accept; the text says why. -1 having failed
 * the item. This check's own connection is counted as free: it closes before the task starts. */
static long pc_free_conns(pc_ctx *c, MYSQL *m, char *why, size_t len) {
  char max[32], used[32], user_max[32], user_used[32];
  if (pc_value(c, m, "SELECT @@GLOBAL.max_connections", max, sizeof max) < 0 ||
      pc_value(c, m, "SHOW GLOBAL STATUS LIKE 'Threads_connected'", used, sizeof used) < 0 ||
      pc_value(c, m, "SELECT @@SESSION.max_user_connections", user_max, sizeof user_max) < 0 ||
      pc_value(c, m,
               "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = "
               "SUBSTRING_INDEX(USER(), '@', 1)",
               user_used, sizeof user_used) < 0)
    return -1;
  long free_all = atol(max) - atol(used) + 1;
  snprintf(why, len, "max_connections %s, %s in use", max, used);
  long um = atol(user_max);
  if (um > 0) {
    long free_user = um - atol(user_used) + 1;
    size_t at = strlen(why);
    snprintf(why + at, len - at, "; the account's max_user_connections %ld, %s in use", um,
             user_used);
    if (free_user < free_all)
      free_all = free_user;
  }
  return free_all;
}

static void pc_conn_side(pc_ctx *c, MYSQL *m, const char *side, long need, const char *opens) {
  char why[256];
  long avail = pc_free_conns(c, m, why, sizeof why);
  if (avail >= 0 && need > avail)
    pc_fail(c, "the %s accepts %ld more connection(s) (%s), the task opens up to %ld (%s)", side,
            avail, why, need, opens);
}

void pc_check_conn_number(pc_ctx *c) {
  /* Units of a chain run one after the other; a relay runs beside them. */
  if (c->source && (c->dump || c->sync || c->relay)) {
    long dump = 0, sync = 0, relay = c->relay ? 2 : 0;
    if (c->dump) {
      const char *cons = pc_unit_string(c, DM_UNIT_DUMP, "consistency");
      dump = (cons && strcmp(cons, "snapshot") == 0
                  ? 1
                  : (long)pc_unit_int(c, DM_UNIT_DUMP, "threads", PC_DUMP_THREADS)) +
             1;
    }
    if (c->sync && !c->relay)
      sync = 2;
    char opens[160];
    snprintf(opens, sizeof opens, "dump threads + 1: %ld, sync stream and queries: %ld, relay: %ld",
             dump, sync, relay);
    pc_conn_side(c, c->source, "source", (dump > sync ? dump : sync) + relay, opens);
  }
  if (c->target && (c->load || c->sync)) {
    long load = c->load ? (long)pc_unit_int(c, DM_UNIT_LOAD, "pool-size", PC_LOAD_POOL) + 1 : 0;
    long sync =
        c->sync ? (long)pc_unit_int(c, DM_UNIT_SYNC, "worker-count", PC_SYNC_WORKERS) + 2 : 0;
    char opens[160];
    snprintf(opens, sizeof opens, "load pool-size + 1: %ld, sync worker-count + 2: %ld", load,
             sync);
    pc_conn_side(c, c->target, "target", load > sync ? load : sync, opens);
  }
}

void pc_check_relay_disk(pc_ctx *c) {
  long long floor_gb = pc_unit_int(c, DM_UNIT_RELAY, "purge-remain-space", 15);
  if (floor_gb <= 0)
    return;
  /* the relay folder, or the nearest folder above it that exists (the relay creates it) */
  char path[4096];
  dm_strlcpy(path, c->src->relay_dir, sizeof path);
  struct statvfs st;
  while (statvfs(path, &st) != 0) {
    if (errno != ENOENT || strcmp(path, "/") == 0) {
      pc_fail(c, "cannot read the free space of %s: %s", path, strerror(errno));
      return;
    }
    char *slash = strrchr(path, '/');
    if (slash == path)
      slash[1] = '\0';
    else
      *slash = '\0';
  }
  double free_gb = (double)st.f_bavail * (double)st.f_frsize / (1024.0 * 1024 * 1024);
  if (free_gb < (double)floor_gb)
    pc_warn(c,
            "the relay folder %s has %.1f GB free (file system of %s), less than the relay's "
            "purge-remain-space %lld GB: the relay will purge its oldest files as it writes",
            c->src->relay_dir, free_gb, path, floor_gb);
}
