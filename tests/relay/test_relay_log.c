/*
 * The SDK's relay folder reader (dmhost/relay_log.h) on relay folders built from real binlog
 * files: three consecutive closed files of the source server (a workload between FLUSH BINARY
 * LOGS), copied from its datadir into a relay folder the way the relay writes them (a file
 * created empty, then its magic, then its events in pieces; a second sub-folder for a new
 * upstream), while the reader reads.
 *
 * Issue 13: the relay folder's format had several owners (the sync unit's reader, the host's
 * purge compiled into the relay, test helpers) and a third-party unit had no reader at all. These
 * tests are the reader's own: before it there was no dm_relay_log (the test does not build on
 * the old code); the sync's tests (test_sync_relay_names, crash_kill9_sync_relay, ...) check that
 * the sync, which now reads through it, behaves as before.
 */
#include <CUnit/Basic.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cunit_run.h"
#include "dmhost/binlog.h"
#include "dmhost/fs.h"
#include "dmhost/relay_folder.h"
#include "dmhost/relay_log.h"
#include "dmhost/relay_purge.h"
#include "dmhost/relay_reader.h"
#include "dmhost/sdk.h"
#include "testdb.h"

#define T_FILES 3

/* one event of a source file */
typedef struct t_ev {
  uint64_t offset;
  uint32_t len;
  uint8_t type;
} t_ev;

/* a closed binlog file of the source, in memory */
typedef struct t_file {
  char name[DM_POSITION_NAME_MAX];
  unsigned char *data;
  size_t len;
  t_ev *ev;
  int n_ev;
} t_file;

static t_file t_src[T_FILES];
static char t_root[64];

static double t_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void t_sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* ---- the source's files ---- */

/* The events of a file, read with the SDK's plain file reader (the reference). */
static int t_list_events(const char *path, t_file *f) {
  dm_binlog_reader *r;
  dm_error err;
  if (dm_binlog_reader_open_file(&r, path, NULL, &err) < 0) {
    fprintf(stderr, "%s\n", err.message);
    return -1;
  }
  dm_binlog_event ev;
  int rc, cap = 0;
  while ((rc = dm_binlog_reader_next(r, &ev, &err)) == 1) {
    if (f->n_ev == cap) {
      cap = cap ? cap * 2 : 256;
      f->ev = realloc(f->ev, (size_t)cap * sizeof *f->ev);
    }
    f->ev[f->n_ev++] = (t_ev){ev.offset, ev.raw_len, ev.header.type};
  }
  dm_binlog_reader_close(r);
  return rc;
}

static int suite_init(void) {
  MYSQL *c = testdb_connect(TESTDB_SOURCE);
  if (!c)
    return -1;
  char base[512], cur[DM_POSITION_NAME_MAX];
  int rc = testdb_recreate_db(c, "relay_log_t") < 0 ||
                   testdb_exec(c, "CREATE TABLE relay_log_t.t (id INT AUTO_INCREMENT PRIMARY "
                                  "KEY, v VARCHAR(300), b MEDIUMBLOB)") < 0 ||
                   testdb_query_value(c, base, sizeof base, "SELECT @@log_bin_basename") != 0
               ? -1
               : 0;
  /* three files of our own: FLUSH, rows, FLUSH, rows, FLUSH, rows, FLUSH */
  for (int i = 0; rc == 0 && i <= T_FILES; i++) {
    rc = testdb_exec(c, "FLUSH BINARY LOGS");
    for (int k = 0; rc == 0 && i < T_FILES && k < 20; k++)
      rc = testdb_execf(c,
                        "INSERT INTO relay_log_t.t (v, b) VALUES (REPEAT('v', %d), REPEAT('b', "
                        "%d)); UPDATE relay_log_t.t SET v = 'u' WHERE id = %d",
                        k * 13 % 300, k * 997, k);
  }
  if (rc == 0 && testdb_query_value(c, cur, sizeof cur, "SHOW MASTER STATUS") != 0)
    rc = -1;
  testdb_close(c);
  if (rc < 0)
    return -1;
  /* the three files before the current one (the same base name, one number width) */
  const char *dot = strrchr(cur, '.');
  long num = dot ? atol(dot + 1) : 0;
  char *slash = strrchr(base, '/');
  if (!dot || num < T_FILES + 1 || !slash)
    return -1;
  *slash = '\0';
  for (int i = 0; i < T_FILES; i++) {
    t_file *f = &t_src[i];
    snprintf(f->name, sizeof f->name, "%.*s.%0*ld", (int)(dot - cur), cur, (int)strlen(dot + 1),
             num - T_FILES + i);
    char path[2048];
    if (snprintf(path, sizeof path, "%s/%s", base, f->name) >= (int)sizeof path)
      return -1;
    if (!(f->data = (unsigned char *)dm_fs_read_all(path, &f->len)) || t_list_events(path, f) < 0 ||
        f->n_ev < 3)
      return -1;
  }
  snprintf(t_root, sizeof t_root, "/tmp/dmh-relay-log-XXXXXX");
  return mkdtemp(t_root) ? 0 : -1;
}

static int suite_clean(void) {
  for (int i = 0; i < T_FILES; i++) {
    free(t_src[i].data);
    free(t_src[i].ev);
  }
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", t_root);
  return t_root[0] && system(cmd) != 0 ? -1 : 0;
}

/* ---- relay folders ---- */

/* A fresh relay folder <root>/<name> (nothing in it). */
static void t_relay(const char *name, char *dir, size_t len) {
  snprintf(dir, len, "%s/%s", t_root, name);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
  CU_ASSERT_EQUAL_FATAL(dm_fs_mkdir_p(dir, 0700), 0);
}

/* Append bytes [from, to) of source file i to <dir>/<sub>/<name of i> (created if missing). */
static void t_put(const char *dir, const char *sub, int i, size_t from, size_t to) {
  char path[700];
  snprintf(path, sizeof path, "%s/%s/%s", dir, sub, t_src[i].name);
  FILE *fp = fopen(path, "ab");
  CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
  if (to > from)
    CU_ASSERT_EQUAL(fwrite(t_src[i].data + from, 1, to - from, fp), to - from);
  CU_ASSERT_EQUAL(fclose(fp), 0);
}

/* Where the last event (the ROTATE of a closed file) starts. */
static uint64_t t_rotate_at(int i) {
  return t_src[i].ev[t_src[i].n_ev - 1].offset;
}

/* ---- following a growing folder ---- */

typedef struct t_grow {
  char dir[400];
  char sub_a[64], sub_b[64];
  atomic_int stage; /* 1: file 2 created empty, 2: its magic written, 3: sub-folder B added */
  atomic_int waits_on_empty; /* the reader waited while file 2 was there with 0 bytes */
  double deadline;
} t_grow;

static bool t_grow_wait(void *arg, const char *path, uint64_t offset) {
  (void)offset;
  t_grow *g = arg;
  struct stat st;
  if (strstr(path, t_src[1].name) && stat(path, &st) == 0 && st.st_size == 0)
    atomic_fetch_add(&g->waits_on_empty, 1);
  t_sleep_ms(5);
  return t_now() < g->deadline;
}

/* The relay, as it writes: pieces cut anywhere (inside events too), a file created empty before
 * its magic and events, a new sub-folder (a new upstream) whose first file follows a last file
 * with no ROTATE in the old one. */
static void *t_grow_writer(void *arg) {
  t_grow *g = arg;
  dm_error err;
  t_sleep_ms(100); /* the reader opened before anything was written */
  if (dm_relay_index_add(g->dir, "0-1", 0600, g->sub_a, sizeof g->sub_a, &err) < 0)
    return NULL;
  size_t len0 = t_src[0].len, step = len0 / 5 + 1;
  for (size_t at = 0; at < len0; at += step) {
    t_put(g->dir, g->sub_a, 0, at, at + step < len0 ? at + step : len0);
    t_sleep_ms(20);
  }
  t_put(g->dir, g->sub_a, 1, 0, 0); /* created, nothing in it yet */
  atomic_store(&g->stage, 1);
  t_sleep_ms(300);
  t_put(g->dir, g->sub_a, 1, 0, 4);
  atomic_store(&g->stage, 2);
  t_sleep_ms(100);
  size_t cut = (size_t)t_rotate_at(1); /* the upstream went away before its ROTATE */
  t_put(g->dir, g->sub_a, 1, 4, cut / 2);
  t_sleep_ms(30);
  t_put(g->dir, g->sub_a, 1, cut / 2, cut);
  t_sleep_ms(200);
  if (dm_relay_index_add(g->dir, "0-2", 0600, g->sub_b, sizeof g->sub_b, &err) < 0)
    return NULL;
  atomic_store(&g->stage, 3);
  size_t len2 = t_src[2].len;
  t_put(g->dir, g->sub_b, 2, 0, len2 / 3);
  t_sleep_ms(20);
  t_put(g->dir, g->sub_b, 2, len2 / 3, len2);
  return NULL;
}

static void test_follow_growth(void) {
  t_grow g = {.deadline = t_now() + 20};
  t_relay("grow", g.dir, sizeof g.dir);
  dm_position from = {.pos = 4};
  dm_strlcpy(from.name, t_src[0].name, sizeof from.name);
  dm_relay_log_options o = {.wait = t_grow_wait, .wait_arg = &g, .reader = "t1"};
  dm_relay_log *r;
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dm_relay_log_open(g.dir, &from, &o, &r, &err), 0);
  CU_ASSERT_TRUE(dm_relay_log_waiting(r)); /* nothing written yet: waited for, no error */
  pthread_t th;
  CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, t_grow_writer, &g), 0);
  /* expected: all of file 1, file 2 up to its (never written) ROTATE, all of file 3 (in B) */
  int want[T_FILES] = {t_src[0].n_ev, t_src[1].n_ev - 1, t_src[2].n_ev};
  int got = 0, bad = 0, rc = 1;
  char reg_sub[300], reg_file[300];
  for (int i = 0; i < T_FILES && rc == 1; i++) {
    for (int k = 0; k < want[i] && rc == 1 && !bad; k++) {
      dm_binlog_event ev;
      rc = dm_relay_log_next(r, &ev, &err);
      if (rc != 1)
        break;
      const t_ev *w = &t_src[i].ev[k];
      if (strcmp(ev.file, t_src[i].name) != 0 || ev.offset != w->offset || ev.raw_len != w->len ||
          ev.header.type != w->type || memcmp(ev.raw, t_src[i].data + w->offset, w->len) != 0) {
        fprintf(stderr, "\n  event %d of %s: got %s:%llu (%u bytes, type %u), want %llu\n", k,
                t_src[i].name, ev.file, (unsigned long long)ev.offset, ev.raw_len, ev.header.type,
                (unsigned long long)w->offset);
        bad = 1;
      }
      got++;
    }
    /* the reader registered its file, in the sub-folder it was read from */
    if (rc == 1) {
      dm_position cp = {.pos = 4};
      dm_strlcpy(cp.name, t_src[i].name, sizeof cp.name);
      CU_ASSERT_EQUAL(dm_relay_log_checkpoint(r, &cp, &err), 0);
      CU_ASSERT_TRUE(
          dm_relay_reader_read(g.dir, "t1", reg_sub, sizeof reg_sub, reg_file, sizeof reg_file));
      CU_ASSERT_STRING_EQUAL(reg_file, t_src[i].name);
      CU_ASSERT_STRING_EQUAL(reg_sub, i < 2 ? g.sub_a : g.sub_b);
      CU_ASSERT_STRING_EQUAL(dm_relay_log_subdir(r), i < 2 ? g.sub_a : g.sub_b);
    }
  }
  if (rc != 1)
    fprintf(stderr, "\n  rc %d after %d events: %s\n", rc, got, rc < 0 ? err.message : "");
  CU_ASSERT_EQUAL(rc, 1);
  CU_ASSERT_EQUAL(bad, 0);
  CU_ASSERT_EQUAL(got, want[0] + want[1] + want[2]);
  /* preconditions: file 2 was really met empty, and sub-folder B was really added */
  CU_ASSERT_TRUE(atomic_load(&g.waits_on_empty) > 0);
  CU_ASSERT_EQUAL(atomic_load(&g.stage), 3);
  /* the position is past the last event; nothing more: a wait that says stop gives 0 */
  dm_position pos;
  dm_relay_log_position(r, &pos);
  CU_ASSERT_STRING_EQUAL(pos.name, t_src[2].name);
  CU_ASSERT_EQUAL(pos.pos, t_src[2].len);
  g.deadline = 0;
  dm_binlog_event ev;
  CU_ASSERT_EQUAL(dm_relay_log_next(r, &ev, &err), 0);
  pthread_join(th, NULL);
  dm_relay_log_close(r);
}

/* ---- stop and interrupt ---- */

static bool t_wait_stop(void *arg, const char *path, uint64_t offset) {
  (void)path;
  (void)offset;
  atomic_fetch_add((atomic_int *)arg, 1);
  return false;
}

typedef struct t_intr {
  dm_relay_log *r;
  int after_ms;
  double at;
} t_intr;

static void *t_interrupter(void *arg) {
  t_intr *t = arg;
  t_sleep_ms(t->after_ms);
  t->at = t_now();
  dm_relay_log_interrupt(t->r);
  return NULL;
}

/* next blocks (wait NULL, poll 20 ms) until interrupted: returns 0 within a poll or so. */
static void t_expect_interrupted(dm_relay_log *r) {
  t_intr t = {.r = r, .after_ms = 200};
  pthread_t th;
  CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, t_interrupter, &t), 0);
  double t0 = t_now();
  dm_binlog_event ev;
  dm_error err;
  int rc = dm_relay_log_next(r, &ev, &err);
  double t1 = t_now();
  pthread_join(th, NULL);
  CU_ASSERT_EQUAL(rc, 0);
  CU_ASSERT_TRUE(t1 - t0 >= 0.19); /* it really waited until the interrupt */
  CU_ASSERT_TRUE(t1 - t.at < 0.1); /* and returned within its poll of 20 ms (and some slack) */
  CU_ASSERT_EQUAL(dm_relay_log_next(r, &ev, &err), 0); /* and stays interrupted */
}

static void test_stop_and_interrupt(void) {
  char dir[400], sub[64];
  t_relay("stop", dir, sizeof dir);
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dm_relay_index_add(dir, "0-1", 0600, sub, sizeof sub, &err), 0);
  uint64_t cut = t_src[0].ev[t_src[0].n_ev / 2].offset;
  t_put(dir, sub, 0, 0, (size_t)cut);
  /* a wait that says stop: 0 at once, nothing consumed, and reading goes on later */
  atomic_int waits = 0;
  dm_relay_log_options o = {.wait = t_wait_stop, .wait_arg = &waits};
  dm_position from = {.pos = cut};
  dm_strlcpy(from.name, t_src[0].name, sizeof from.name);
  dm_relay_log *r;
  CU_ASSERT_EQUAL_FATAL(dm_relay_log_open(dir, &from, &o, &r, &err), 0);
  dm_binlog_event ev;
  double t0 = t_now();
  CU_ASSERT_EQUAL(dm_relay_log_next(r, &ev, &err), 0);
  CU_ASSERT_EQUAL(dm_relay_log_next(r, &ev, &err), 0);
  CU_ASSERT_TRUE(t_now() - t0 < 0.05);
  CU_ASSERT_TRUE(atomic_load(&waits) >= 2);
  dm_position pos;
  dm_relay_log_position(r, &pos);
  CU_ASSERT_EQUAL(pos.pos, cut);
  t_put(dir, sub, 0, (size_t)cut, t_src[0].len);
  CU_ASSERT_EQUAL(dm_relay_log_next(r, &ev, &err), 1);
  CU_ASSERT_EQUAL(ev.offset, cut);
  dm_relay_log_close(r);

  /* no wait callback (poll 20 ms): blocked at the end of the file, then interrupted */
  dm_relay_log_options poll = {.poll_ms = 20};
  from.pos = t_src[0].len;
  CU_ASSERT_EQUAL_FATAL(dm_relay_log_open(dir, &from, &poll, &r, &err), 0);
  t_expect_interrupted(r);
  dm_relay_log_close(r);
  /* ... and while the start file is not written yet (the next file of the binlog) */
  dm_strlcpy(from.name, t_src[1].name, sizeof from.name);
  from.pos = 4;
  CU_ASSERT_EQUAL_FATAL(dm_relay_log_open(dir, &from, &poll, &r, &err), 0);
  CU_ASSERT_TRUE(dm_relay_log_waiting(r));
  t_expect_interrupted(r);
  dm_relay_log_close(r);
  /* ... and a wait that says stop there */
  CU_ASSERT_EQUAL_FATAL(dm_relay_log_open(dir, &from, &o, &r, &err), 0);
  CU_ASSERT_EQUAL(dm_relay_log_next(r, &ev, &err), 0);
  dm_relay_log_close(r);
}

/* ---- what is refused ---- */

static void t_expect_open_error(const char *dir, const char *file, int code) {
  dm_position from = {.pos = 4};
  dm_strlcpy(from.name, file, sizeof from.name);
  dm_relay_log *r = (dm_relay_log *)1;
  dm_error err;
  CU_ASSERT_EQUAL(dm_relay_log_open(dir, &from, NULL, &r, &err), -1);
  CU_ASSERT_PTR_NULL(r);
  CU_ASSERT_EQUAL(err.code, code);
  CU_ASSERT_FALSE(err.resumable);
  if (err.code != code)
    fprintf(stderr, "\n  %s: %d %s\n", file, err.code, err.message);
}

/* A symbolic link where a binlog file or a sub-folder should be (to a real binlog file, a real
 * folder of them, outside the relay folder) is not followed: at the start and when crossing. */
static void test_links_refused(void) {
  char dir[400], sub[64], outside[500], link[1024];
  t_relay("links", dir, sizeof dir);
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dm_relay_index_add(dir, "0-1", 0600, sub, sizeof sub, &err), 0);
  t_put(dir, sub, 0, 0, t_src[0].len);
  snprintf(outside, sizeof outside, "%s/outside", t_root);
  CU_ASSERT_EQUAL_FATAL(dm_fs_mkdir_p(outside, 0700), 0);
  t_put(t_root, "outside", 1, 0, t_src[1].len);
  t_put(t_root, "outside", 2, 0, t_src[2].len);
  char target[1024];
  snprintf(target, sizeof target, "%s/%s", outside, t_src[1].name);
  snprintf(link, sizeof link, "%s/%s/%s", dir, sub, t_src[1].name);
  CU_ASSERT_EQUAL_FATAL(symlink(target, link), 0);
  struct stat st;
  CU_ASSERT_TRUE_FATAL(lstat(link, &st) == 0 && S_ISLNK(st.st_mode) && stat(link, &st) == 0);
  t_expect_open_error(dir, t_src[1].name, DM_ERR_RELAY_LINK);
  /* crossing from file 1 (its ROTATE names file 2) */
  dm_position from = {.pos = 4};
  dm_strlcpy(from.name, t_src[0].name, sizeof from.name);
  dm_relay_log_options o = {.poll_ms = 5};
  dm_relay_log *r;
  CU_ASSERT_EQUAL_FATAL(dm_relay_log_open(dir, &from, &o, &r, &err), 0);
  int rc, n = 0;
  dm_binlog_event ev;
  while ((rc = dm_relay_log_next(r, &ev, &err)) == 1)
    n++;
  CU_ASSERT_EQUAL(n, t_src[0].n_ev); /* file 1 whole, then the refusal */
  CU_ASSERT_EQUAL(rc, -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_RELAY_LINK);
  dm_relay_log_close(r);
  /* a sub-folder that is a link to a folder holding file 3 */
  char sub2[64];
  CU_ASSERT_EQUAL_FATAL(dm_relay_index_add(dir, "0-2", 0600, sub2, sizeof sub2, &err), 0);
  snprintf(link, sizeof link, "%s/%s", dir, sub2);
  CU_ASSERT_EQUAL_FATAL(rmdir(link), 0);
  CU_ASSERT_EQUAL_FATAL(symlink(outside, link), 0);
  t_expect_open_error(dir, t_src[2].name, DM_ERR_RELAY_LINK);
}

/* A line of server-uuid.index that leads out of the folder, and a start name that does. */
static void test_names_refused(void) {
  char dir[400], sub[64], path[700];
  t_relay("names", dir, sizeof dir);
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dm_relay_index_add(dir, "0-1", 0600, sub, sizeof sub, &err), 0);
  t_put(dir, sub, 0, 0, t_src[0].len);
  char evil[500];
  snprintf(evil, sizeof evil, "%s/evil", t_root);
  CU_ASSERT_EQUAL_FATAL(dm_fs_mkdir_p(evil, 0700), 0);
  t_put(t_root, "evil", 0, 0, t_src[0].len); /* what ../evil would lead to: a real file */
  /* written by hand: the SDK's writer never writes such a line */
  snprintf(path, sizeof path, "%s/server-uuid.index", dir);
  FILE *fp = fopen(path, "w");
  CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
  fprintf(fp, "%s\n../evil\n", sub);
  fclose(fp);
  t_expect_open_error(dir, t_src[0].name, DM_ERR_RELAY_BAD_NAME);
  t_expect_open_error(dir, "../evil/x.000001", DM_ERR_RELAY_BAD_NAME);
  dm_relay_index ix;
  CU_ASSERT_EQUAL(dm_relay_index_read(dir, &ix, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_RELAY_BAD_NAME);
}

/* A start file the relay no longer has (purged): a coded error; a later file of the binlog is
 * one still to come (waited for). With a registered reader, the relay's purge keeps the file it
 * reads until its checkpoint moves on. */
static void test_purged_start(void) {
  char dir[400], sub[64];
  t_relay("purged", dir, sizeof dir);
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dm_relay_index_add(dir, "0-1", 0600, sub, sizeof sub, &err), 0);
  t_put(dir, sub, 1, 0, t_src[1].len);
  t_put(dir, sub, 2, 0, t_src[2].len);
  dm_position from = {.pos = 4};
  dm_strlcpy(from.name, t_src[0].name, sizeof from.name);
  dm_relay_log *r = NULL;
  CU_ASSERT_EQUAL(dm_relay_log_open(dir, &from, NULL, &r, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_BINLOG_PURGED);
  CU_ASSERT_FALSE(err.resumable);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, t_src[0].name));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, dir));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.workaround, "dump"));
  /* the file after the newest: to come */
  const char *dot = strrchr(t_src[2].name, '.');
  snprintf(from.name, sizeof from.name, "%.*s.%0*ld", (int)(dot - t_src[2].name), t_src[2].name,
           (int)strlen(dot + 1), atol(dot + 1) + 1);
  CU_ASSERT_EQUAL_FATAL(dm_relay_log_open(dir, &from, NULL, &r, &err), 0);
  CU_ASSERT_TRUE(dm_relay_log_waiting(r));
  dm_relay_log_close(r);
  /* a reader at file 2 keeps it from the purge until its checkpoint is in file 3 */
  dm_strlcpy(from.name, t_src[1].name, sizeof from.name);
  dm_relay_log_options o = {.reader = "t1"};
  CU_ASSERT_EQUAL_FATAL(dm_relay_log_open(dir, &from, &o, &r, &err), 0);
  dm_relay_meta m = {.binlog_pos = 4};
  dm_strlcpy(m.binlog_name, t_src[2].name, sizeof m.binlog_name);
  char subdir[500];
  snprintf(subdir, sizeof subdir, "%s/%s", dir, sub);
  CU_ASSERT_EQUAL_FATAL(dm_relay_meta_write(subdir, &m, 0600, false, &err), 0);
  dm_relay_purge_opts po = {.relay_dir = dir, .before = t_src[2].name};
  int removed = -1;
  CU_ASSERT_EQUAL(dm_relay_purge(&po, &removed, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_RELAY_PURGE_IN_USE);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "t1"));
  dm_position cp = {.pos = 4};
  dm_strlcpy(cp.name, t_src[2].name, sizeof cp.name);
  CU_ASSERT_EQUAL(dm_relay_log_checkpoint(r, &cp, &err), 0);
  CU_ASSERT_EQUAL(dm_relay_purge(&po, &removed, &err), 0);
  CU_ASSERT_EQUAL(removed, 1);
  dm_relay_log_close(r);
}

static const dmh_cunit_test tests[] = {
    {"follows the relay across files and sub-folders", test_follow_growth},
    {"stops on wait and on interrupt within its poll", test_stop_and_interrupt},
    {"links refused", test_links_refused},
    {"names that are not plain refused", test_names_refused},
    {"a purged start file is an error; a reader holds its file", test_purged_start},
};

int main(void) {
  return dmh_cunit_run("relay log reader", suite_init, suite_clean, tests,
                       sizeof tests / sizeof tests[0]);
}
