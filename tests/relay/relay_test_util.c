#include "relay_test_util.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dmhost/fs.h"
#include "dmhost/relay_folder.h"
#include "dmhost/sdk.h"
#include "testdb.h"

static void rt_sleep_ms(int ms) {
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
    ;
}

int rt_setup(rt_env *e, const char *name, const char *relay_section) {
  return rt_setup_ex(e, name, relay_section, 0, NULL);
}

int rt_setup_ex(rt_env *e, const char *name, const char *relay_section, unsigned port,
                const char *top) {
  memset(e, 0, sizeof *e);
  dm_strlcpy(e->name, name, sizeof e->name);
  snprintf(e->dir, sizeof e->dir, "/tmp/dmh-relay-XXXXXX");
  if (!mkdtemp(e->dir))
    return -1;
  snprintf(e->relay_dir, sizeof e->relay_dir, "%s/relay", e->dir);
  snprintf(e->work, sizeof e->work, "%s/work", e->dir);
  snprintf(e->source_cfg, sizeof e->source_cfg, "%s/source.cfg", e->dir);
  testdb_params p;
  testdb_params_get(TESTDB_SOURCE, &p);
  FILE *fp = fopen(e->source_cfg, "w");
  if (!fp)
    return -1;
  fprintf(fp,
          "source-id = \"%s\";\nenable-relay = true;\nenable-gtid = true;\nrelay-dir = \"%s\";\n"
          "from = { host = \"%s\"; port = %u; user = \"%s\"; password = \"%s\"; };\n"
          "unit-paths = { relay = \"%s\"; };\nrelay = { %s };\n%s\n",
          name, e->relay_dir, p.host, port ? port : p.port, p.user, p.password, RELAY_SO,
          relay_section ? relay_section : "", top ? top : "");
  fclose(fp);
  dm_error err;
  if (dmh_source_config_load(e->source_cfg, &e->source, &err) < 0) {
    fprintf(stderr, "source config: %s\n", err.message);
    return -1;
  }
  return 0;
}

void rt_teardown(rt_env *e) {
  if (e->driver)
    rt_driver_kill9(e);
  dmh_source_config_free(e->source);
  e->source = NULL;
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", e->dir);
  if (e->dir[0] && !getenv("RELAY_TEST_KEEP") && system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", e->dir);
}

dmh_subtask *rt_relay_start(rt_env *e) {
  dmh_subtask_opts o = {.source = e->source, .work_root = e->work};
  dm_error err;
  dmh_subtask *r = dmh_subtask_create_relay(&o, &err);
  if (!r || dmh_subtask_start(r, &err) < 0) {
    fprintf(stderr, "relay start: %s\n", err.message);
    dmh_subtask_destroy(r);
    return NULL;
  }
  return r;
}

int rt_driver_start(rt_env *e) {
  pid_t pid = fork();
  if (pid < 0)
    return -1;
  if (pid == 0) {
    execl(RELAY_DRIVER, RELAY_DRIVER, e->source_cfg, e->work, (char *)NULL);
    _exit(127);
  }
  e->driver = pid;
  return 0;
}

void rt_driver_kill9(rt_env *e) {
  if (!e->driver)
    return;
  kill(e->driver, SIGKILL);
  waitpid(e->driver, NULL, 0);
  e->driver = 0;
}

int rt_driver_stop(rt_env *e) {
  if (!e->driver)
    return -1;
  kill(e->driver, SIGTERM);
  int st = 0;
  waitpid(e->driver, &st, 0);
  e->driver = 0;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int rt_workload(MYSQL *c, const char *db, int n, int seed) {
  if (testdb_execf(c,
                   "CREATE DATABASE IF NOT EXISTS `%s`; CREATE TABLE IF NOT EXISTS `%s`.t ("
                   "id INT AUTO_INCREMENT PRIMARY KEY, k INT, v VARCHAR(200), b MEDIUMBLOB, "
                   "d DECIMAL(12,3), ts DATETIME(6))",
                   db, db) < 0)
    return -1;
  unsigned s = (unsigned)seed * 2654435761u + 1;
  for (int i = 0; i < n; i++) {
    s = s * 1103515245u + 12345u;
    int kind = (int)(s >> 16) % 10;
    int rc;
    if (kind < 5)
      rc = testdb_execf(c,
                        "INSERT INTO `%s`.t (k, v, b, d, ts) VALUES (%d, REPEAT('x', %u), "
                        "REPEAT('b', %u), %d.125, NOW(6)), (%d, 'two', NULL, -1.5, NULL)",
                        db, i, (s >> 8) % 200, (s >> 4) % (kind == 0 ? 70000 : 300), i, i + 1);
    else if (kind < 8)
      rc = testdb_execf(
          c, "UPDATE `%s`.t SET k = k + 1, v = LEFT(CONCAT(v, 'u'), 200) WHERE id %% 7 = %u", db,
          (s >> 8) % 7);
    else if (kind < 9)
      rc = testdb_execf(c, "DELETE FROM `%s`.t WHERE id %% 13 = %u", db, (s >> 8) % 13);
    else
      rc = testdb_execf(c,
                        "BEGIN; INSERT INTO `%s`.t (k, v) VALUES (%d, 'a'); INSERT INTO `%s`.t "
                        "(k, v) VALUES (%d, 'b'); COMMIT",
                        db, i, db, i);
    if (rc < 0)
      return -1;
  }
  return 0;
}

int rt_master_pos(MYSQL *c, dm_position *out) {
  memset(out, 0, sizeof *out);
  if (mysql_query(c, "SHOW MASTER STATUS") != 0)
    return -1;
  MYSQL_RES *res = mysql_store_result(c);
  MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
  if (row) {
    dm_strlcpy(out->name, row[0], sizeof out->name);
    out->pos = strtoull(row[1], NULL, 10);
  }
  if (res)
    mysql_free_result(res);
  return row ? 0 : -1;
}

/* relay.meta at path into out; 0 when read. */
/* relay.meta of the sub-folder dir, through the SDK's parser (dmhost/relay_folder.h). */
static int rt_read_meta(const char *dir, dm_position *out) {
  dm_relay_meta m;
  dm_error err;
  memset(out, 0, sizeof *out);
  if (dm_relay_meta_read(dir, &m, &err) != 1)
    return -1;
  dm_strlcpy(out->name, m.binlog_name, sizeof out->name);
  out->pos = m.binlog_pos;
  dm_strlcpy(out->gtid, m.binlog_gtid, sizeof out->gtid);
  return 0;
}

int rt_relay_index(rt_env *e, char subs[][256], int max) {
  dm_relay_index ix;
  dm_error err;
  if (dm_relay_index_read(e->relay_dir, &ix, &err) < 0 || ix.n == 0) {
    dm_relay_index_free(&ix);
    return -1;
  }
  int n = 0;
  for (; n < ix.n && n < max; n++)
    dm_strlcpy(subs[n], ix.subs[n], 256);
  dm_relay_index_free(&ix);
  return n;
}

int rt_relay_meta(rt_env *e, char *subdir, size_t sublen, dm_position *out) {
  char subs[64][256];
  int n = rt_relay_index(e, subs, 64);
  if (n <= 0)
    return -1;
  if (subdir)
    dm_strlcpy(subdir, subs[n - 1], sublen);
  char dir[900];
  snprintf(dir, sizeof dir, "%s/%s", e->relay_dir, subs[n - 1]);
  return rt_read_meta(dir, out);
}

int rt_wait_relay(rt_env *e, const dm_position *target, int timeout_ms) {
  dm_position p;
  for (int waited = 0; waited < timeout_ms; waited += 50) {
    char sub[256], path[900];
    struct stat sb;
    /* the relay's file must hold what relay.meta names (right after a restart it may not yet:
     * recovery has not run) */
    if (rt_relay_meta(e, sub, sizeof sub, &p) == 0 && dm_position_compare_file(&p, target) >= 0 &&
        snprintf(path, sizeof path, "%s/%s/%s", e->relay_dir, sub, p.name) > 0 &&
        stat(path, &sb) == 0 && (uint64_t)sb.st_size >= p.pos)
      return 0;
    rt_sleep_ms(50);
  }
  char a[300], b[300];
  fprintf(stderr, "relay at %s, not at %s after %d ms\n", dm_position_format(&p, a, sizeof a),
          dm_position_format(target, b, sizeof b), timeout_ms);
  return -1;
}

const char *rt_source_binlog_dir(void) {
  static char dir[512];
  const char *db = getenv("DMH_DB_DIR");
  snprintf(dir, sizeof dir, "%s/source/data", db ? db : "/tmp/dmhost-db");
  return dir;
}

/* Where the source's bytes start in a relay file: 0, or after the filler event (ignorable, type
 * 28) that follows the format description of a file started mid-file. */
static size_t rt_filler_end(const unsigned char *r, size_t rl) {
  if (rl < 4 + 19)
    return 0;
  size_t at = 4 + ((size_t)r[4 + 9] | (size_t)r[4 + 10] << 8 | (size_t)r[4 + 11] << 16 |
                   (size_t)r[4 + 12] << 24);
  if (rl < at + 19 || r[at + 4] != 28 || !(r[at + 17] & 0x80))
    return 0;
  return (size_t)r[at + 13] | (size_t)r[at + 14] << 8 | (size_t)r[at + 15] << 16 |
         (size_t)r[at + 16] << 24;
}

int rt_compare_sub(rt_env *e, const char *subdir, uint64_t *bytes, int *mid_file) {
  char sub[256], path[900];
  dm_position meta;
  *bytes = 0;
  if (mid_file)
    *mid_file = 0;
  if (!subdir) {
    if (rt_relay_meta(e, sub, sizeof sub, &meta) < 0) {
      fprintf(stderr, "compare: no relay.meta in %s\n", e->relay_dir);
      return -1;
    }
  } else {
    dm_strlcpy(sub, subdir, sizeof sub);
    snprintf(path, sizeof path, "%s/%s", e->relay_dir, sub);
    if (rt_read_meta(path, &meta) < 0) {
      fprintf(stderr, "compare: no relay.meta in %s\n", path);
      return -1;
    }
  }
  char dir[600];
  snprintf(dir, sizeof dir, "%s/%s", e->relay_dir, sub);
  dm_relay_file *list;
  int n_files, files = 0, bad = 0;
  dm_error err;
  if (dm_relay_files(e->relay_dir, sub, &list, &n_files, &err) < 0 || n_files == 0) {
    fprintf(stderr, "compare: no binlog file in %s\n", dir);
    free(list);
    return -1;
  }
  for (int k = 0; k < n_files && !bad; k++) {
    const char *name = list[k].name;
    char rp[900], sp[900];
    snprintf(rp, sizeof rp, "%s/%s", dir, name);
    snprintf(sp, sizeof sp, "%s/%s", rt_source_binlog_dir(), name);
    size_t rl = 0, sl = 0;
    unsigned char *r = (unsigned char *)dm_fs_read_all(rp, &rl),
                  *s = (unsigned char *)dm_fs_read_all(sp, &sl);
    bool active = strcmp(name, meta.name) == 0;
    size_t n = active ? (size_t)meta.pos : sl;
    size_t from = r ? rt_filler_end(r, rl) : 0;
    if (from && mid_file)
      (*mid_file)++;
    if (!r || !s || rl < n || sl < n || (!active && rl != sl) || from > n) {
      fprintf(stderr, "compare %s/%s: relay %zu bytes, source %zu bytes, expected %zu%s\n", sub,
              name, rl, sl, n, active ? " (active)" : "");
      bad = 1;
    }
    for (size_t i = from; !bad && i < n; i++) {
      if (r[i] == s[i] || (i == 4 + 17 && ((r[i] ^ s[i]) == 0x01)))
        continue; /* the format description's in-use flag differs while the file is open */
      fprintf(stderr, "compare %s/%s: first difference at offset %zu (relay %02x, source %02x)\n",
              sub, name, i, r[i], s[i]);
      bad = 1;
    }
    free(r);
    free(s);
    if (!bad) {
      files++;
      *bytes += n - from;
    }
  }
  free(list);
  return bad ? -1 : files;
}

int rt_compare(rt_env *e, uint64_t *bytes) {
  return rt_compare_sub(e, NULL, bytes, NULL);
}
