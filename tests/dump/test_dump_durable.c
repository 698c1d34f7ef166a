/*
 * Issue 25: the dump's files are made durable together, before the metadata names them, not one
 * by one. A power cut cannot be simulated here, so this test checks the ORDER on the real dump (a
 * real source, the built dmhost-dump.so in this process): this executable defines fsync,
 * fdatasync, syncfs and rename (exported, so the plugin's calls bind to them before libc's), each
 * recording what it made durable and then calling libc's. When the dump renames metadata.tmp to
 * `metadata`, every *.sql of the folder must have been synced after its last write (a fsync or
 * fdatasync of its inode while it had its current size and mtime, or a syncfs of its file system
 * after its mtime) and the folder after the last rename that named a *.sql; any file that was not
 * is listed and the test fails. So it fails when the grouped sync (dump_dir_sync_files) is left
 * out, and passed with the per-file fsyncs before it too: it checks the promise, not the method.
 *
 * The second case checks the background flush (dump_flush.c): a data file is fdatasync'ed while
 * a worker still writes it. The worker's sync_file_range (also defined here) holds the worker,
 * once 9 MiB of its file are written, until such a sync is seen (or 30 s passed: then the case
 * fails), so the case waits for the event, not for time. It also checks that the workers run as
 * SCHED_BATCH and that the process thread has its policy back when it writes the metadata.
 */
#include <CUnit/Basic.h>
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cunit_run.h"
#include "dump_test_util.h"

#define DUR_MAX 4096

typedef struct dur_rec {
  dev_t dev;
  ino_t ino;
  off_t size;
  struct timespec mtime;
  long seq; /* when it was synced */
} dur_rec;

static pthread_mutex_t dur_lock = PTHREAD_MUTEX_INITIALIZER;
static dur_rec dur_synced[DUR_MAX];
static int dur_n;
static long dur_seq;
static long dur_calls;            /* sync calls seen: proves the plugin's calls come here */
static dev_t dur_fs_dev;          /* the file system of the last syncfs */
static struct timespec dur_fs_at; /* when it started (realtime) */
static long dur_fs_seq;
static char dur_dir[512];        /* the dump folder watched */
static long dur_last_sql_rename; /* seq of the last rename that named a *.sql in it */
static int dur_checked_files;    /* *.sql files examined at the metadata's rename */
static int dur_checks;           /* metadata renames seen */
static char dur_bad[4096];       /* what was not durable */
/* the background flush case */
static pthread_cond_t dur_cond = PTHREAD_COND_INITIALIZER;
static bool dur_hold;            /* sync_file_range holds a worker until a *.sql.tmp is synced */
static long dur_tmp_syncs;       /* fdatasyncs of a data file still being written */
static bool dur_hold_timeout;    /* the hold ran out instead */
static long dur_held;            /* sync_file_range calls that waited */
static long dur_reached;         /* blocks written past 9 MiB of a file still open */
static long dur_batch_workers;   /* sync_file_range calls from a SCHED_BATCH thread */
static long dur_other_workers;   /* ... from any other policy */
static int dur_meta_policy = -1; /* the policy of the thread that renamed the metadata */

static void dur_record(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0)
    return;
  pthread_mutex_lock(&dur_lock);
  dur_calls++;
  int i = 0;
  while (i < dur_n && !(dur_synced[i].dev == st.st_dev && dur_synced[i].ino == st.st_ino))
    i++;
  if (i < DUR_MAX) {
    dur_synced[i] = (dur_rec){st.st_dev, st.st_ino, st.st_size, st.st_mtim, ++dur_seq};
    if (i == dur_n)
      dur_n++;
  }
  pthread_mutex_unlock(&dur_lock);
}

static const dur_rec *dur_find(const struct stat *st) {
  for (int i = 0; i < dur_n; i++)
    if (dur_synced[i].dev == st->st_dev && dur_synced[i].ino == st->st_ino)
      return &dur_synced[i];
  return NULL;
}

static bool dur_ts_le(struct timespec a, struct timespec b) {
  return a.tv_sec < b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec <= b.tv_nsec);
}

static void dur_bad_add(const char *what, const char *name) {
  size_t n = strlen(dur_bad);
  snprintf(dur_bad + n, sizeof dur_bad - n, "%s%s %s", n ? "; " : "", what, name);
}

/* Called under dur_lock, before the metadata appears: is everything it names on disk? */
static void dur_check(void) {
  dur_checks++;
  DIR *d = opendir(dur_dir);
  if (!d) {
    dur_bad_add("cannot open", dur_dir);
    return;
  }
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name);
    if (n < 5 || strcmp(e->d_name + n - 4, ".sql") != 0)
      continue;
    struct stat st;
    if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
      continue;
    dur_checked_files++;
    const dur_rec *r = dur_find(&st);
    bool file_ok = r && r->size == st.st_size && r->mtime.tv_sec == st.st_mtim.tv_sec &&
                   r->mtime.tv_nsec == st.st_mtim.tv_nsec;
    bool fs_ok = dur_fs_seq > 0 && dur_fs_dev == st.st_dev && dur_ts_le(st.st_mtim, dur_fs_at);
    if (!file_ok && !fs_ok)
      dur_bad_add("not synced since its last write:", e->d_name);
  }
  struct stat ds;
  if (fstat(dirfd(d), &ds) == 0) {
    const dur_rec *r = dur_find(&ds);
    bool dir_ok = (r && r->seq > dur_last_sql_rename) ||
                  (dur_fs_seq > dur_last_sql_rename && dur_fs_dev == ds.st_dev);
    if (!dir_ok)
      dur_bad_add("folder not synced after its last *.sql entry:", dur_dir);
  }
  closedir(d);
}

static bool dur_in_dir(const char *path, const char *suffix) {
  size_t dn = strlen(dur_dir), n = strlen(path), sn = strlen(suffix);
  return dn > 0 && strncmp(path, dur_dir, dn) == 0 && path[dn] == '/' &&
         strchr(path + dn + 1, '/') == NULL && n >= dn + 1 + sn &&
         strcmp(path + n - sn, suffix) == 0;
}

int fsync(int fd) {
  static int (*real)(int);
  if (!real)
    real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
  int rc = real(fd);
  if (rc == 0)
    dur_record(fd);
  return rc;
}

/* Is fd a data file of the watched folder that is still being written (its temp name)? */
static bool dur_fd_is_tmp(int fd) {
  char link[64], path[PATH_MAX];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, sizeof path - 1);
  if (n <= 0)
    return false;
  path[n] = '\0';
  pthread_mutex_lock(&dur_lock);
  bool tmp = dur_in_dir(path, ".sql.tmp");
  pthread_mutex_unlock(&dur_lock);
  return tmp;
}

int fdatasync(int fd) {
  static int (*real)(int);
  if (!real)
    real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
  bool tmp = dur_fd_is_tmp(fd);
  int rc = real(fd);
  if (rc == 0)
    dur_record(fd);
  if (rc == 0 && tmp) {
    pthread_mutex_lock(&dur_lock);
    dur_tmp_syncs++;
    pthread_cond_broadcast(&dur_cond);
    pthread_mutex_unlock(&dur_lock);
  }
  return rc;
}

int sync_file_range(int fd, off64_t off, off64_t n, unsigned int flags) {
  static int (*real)(int, off64_t, off64_t, unsigned int);
  if (!real)
    real = (int (*)(int, off64_t, off64_t, unsigned int))dlsym(RTLD_NEXT, "sync_file_range");
  if (dur_fd_is_tmp(fd)) {
    int policy = sched_getscheduler(0);
    pthread_mutex_lock(&dur_lock);
    if (policy == SCHED_BATCH)
      dur_batch_workers++;
    else
      dur_other_workers++;
    /* The blocks before this one (9 MiB and more) are counted as written: hold the worker until
     * the flusher has synced a file that is still open, with a generous bound. */
    if (off >= (off64_t)9 << 20)
      dur_reached++;
    if (dur_hold && off >= (off64_t)9 << 20 && dur_tmp_syncs == 0) {
      dur_held++;
      struct timespec until;
      clock_gettime(CLOCK_REALTIME, &until);
      until.tv_sec += 30;
      while (dur_tmp_syncs == 0 && !dur_hold_timeout)
        if (pthread_cond_timedwait(&dur_cond, &dur_lock, &until) != 0)
          dur_hold_timeout = true;
    }
    pthread_mutex_unlock(&dur_lock);
  }
  return real(fd, off, n, flags);
}

int syncfs(int fd) {
  static int (*real)(int);
  if (!real)
    real = (int (*)(int))dlsym(RTLD_NEXT, "syncfs");
  struct stat st;
  struct timespec at;
  clock_gettime(CLOCK_REALTIME, &at);
  int rc = real(fd);
  if (rc == 0 && fstat(fd, &st) == 0) {
    pthread_mutex_lock(&dur_lock);
    dur_calls++;
    dur_fs_dev = st.st_dev;
    dur_fs_at = at;
    dur_fs_seq = ++dur_seq;
    pthread_mutex_unlock(&dur_lock);
  }
  return rc;
}

int rename(const char *from, const char *to) {
  static int (*real)(const char *, const char *);
  if (!real)
    real = (int (*)(const char *, const char *))dlsym(RTLD_NEXT, "rename");
  pthread_mutex_lock(&dur_lock);
  size_t dn = strlen(dur_dir);
  if (dn > 0 && strncmp(to, dur_dir, dn) == 0 && strcmp(to + dn, "/metadata") == 0) {
    dur_check();
    dur_meta_policy = sched_getscheduler(0);
  }
  pthread_mutex_unlock(&dur_lock);
  int rc = real(from, to);
  if (rc == 0 && dur_in_dir(to, ".sql")) {
    pthread_mutex_lock(&dur_lock);
    dur_last_sql_rename = ++dur_seq;
    pthread_mutex_unlock(&dur_lock);
  }
  return rc;
}

static MYSQL *src;

static void test_dump_durable_before_metadata(void) {
  const char *db = "dmh_dump_durable";
  CU_ASSERT_FATAL(dt_exec(src, "DROP DATABASE IF EXISTS %s", db) == 0);
  CU_ASSERT_FATAL(dt_exec(src, "CREATE DATABASE %s", db) == 0);
  CU_ASSERT_FATAL(dt_exec(src, "USE %s", db) == 0); /* for seq_1_to_N */
  for (int t = 0; t < 3; t++) {
    CU_ASSERT_FATAL(
        dt_exec(src, "CREATE TABLE %s.t%d (id INT PRIMARY KEY, v VARCHAR(64))", db, t) == 0);
    CU_ASSERT_FATAL(dt_exec(src,
                            "INSERT INTO %s.t%d SELECT seq, REPEAT(CHAR(97 + seq %% 26), 40) "
                            "FROM seq_1_to_30000",
                            db, t) == 0);
  }
  dt_env e;
  CU_ASSERT_FATAL(dt_setup(&e, "dump-durable", "root", "", dt_source_port(),
                           "block-allow-list = \"bal\";",
                           "block-allow-list = { bal = { do-dbs = [\"dmh_dump_durable\"]; }; };",
                           "threads = 4; chunk-rows = 10000; chunk-filesize = 200000;") == 0);
  pthread_mutex_lock(&dur_lock);
  snprintf(dur_dir, sizeof dur_dir, "%s", e.dump_dir);
  pthread_mutex_unlock(&dur_lock);
  dmh_subtask *st;
  dmh_stage stage = dt_run(&e, &st, 120000);
  char msg[600];
  int code = dt_first_error(st, msg, sizeof msg);
  if (stage != DMH_STAGE_FINISHED)
    fprintf(stderr, "stage %s, error %d: %s\n", dmh_stage_name(stage), code, msg);
  CU_ASSERT_EQUAL_FATAL(stage, DMH_STAGE_FINISHED);
  pthread_mutex_lock(&dur_lock);
  dur_dir[0] = '\0';
  pthread_mutex_unlock(&dur_lock);

  /* preconditions: the plugin's syncs reached this executable's fsync family, the metadata's
   * rename was seen once, and it found the files the dump wrote (schema + several per table) */
  printf("\n  %ld sync calls seen, %d files checked at the metadata's rename\n", dur_calls,
         dur_checked_files);
  CU_ASSERT(dur_calls > 0);
  CU_ASSERT_EQUAL(dur_checks, 1);
  int data_files = 0;
  for (int t = 0; t < 3; t++) {
    char base[64];
    long long rows = 0;
    long bad = 0;
    snprintf(base, sizeof base, "%s.t%d", db, t);
    data_files += dt_data_files(e.dump_dir, base, &rows, &bad);
    CU_ASSERT_EQUAL(rows, dt_query_ll(src, "SELECT COUNT(*) FROM %s.t%d", db, t));
    CU_ASSERT_EQUAL(bad, 0);
  }
  CU_ASSERT(data_files >= 9);
  CU_ASSERT_EQUAL(dur_checked_files, data_files + 1 + 3); /* + schema-create + 3 schemas */
  if (dur_bad[0])
    fprintf(stderr, "  not durable when the metadata was written: %s\n", dur_bad);
  CU_ASSERT_STRING_EQUAL(dur_bad, "");
  dt_teardown(&e);
  CU_ASSERT(dt_exec(src, "DROP DATABASE %s", db) == 0);
}

/* One worker, one 12 MB file: the flusher syncs it while it is open (the worker held at 9 MiB
 * until it has). */
static void test_dump_durable_flush_while_writing(void) {
  const char *db = "dmh_dump_flush";
  CU_ASSERT_FATAL(dt_exec(src, "DROP DATABASE IF EXISTS %s", db) == 0);
  CU_ASSERT_FATAL(dt_exec(src, "CREATE DATABASE %s", db) == 0);
  CU_ASSERT_FATAL(dt_exec(src, "USE %s", db) == 0);
  CU_ASSERT_FATAL(dt_exec(src, "CREATE TABLE %s.t (id INT PRIMARY KEY, v VARCHAR(255))", db) == 0);
  CU_ASSERT_FATAL(dt_exec(src,
                          "INSERT INTO %s.t SELECT seq, REPEAT(CHAR(97 + seq %% 26), 200) "
                          "FROM seq_1_to_60000",
                          db) == 0);
  dt_env e;
  CU_ASSERT_FATAL(dt_setup(&e, "dump-flush", "root", "", dt_source_port(),
                           "block-allow-list = \"bal\";",
                           "block-allow-list = { bal = { do-dbs = [\"dmh_dump_flush\"]; }; };",
                           "threads = 1;") == 0);
  pthread_mutex_lock(&dur_lock);
  snprintf(dur_dir, sizeof dur_dir, "%s", e.dump_dir);
  dur_bad[0] = '\0';
  dur_checks = dur_checked_files = 0;
  dur_tmp_syncs = dur_held = dur_reached = dur_batch_workers = dur_other_workers = 0;
  dur_hold_timeout = false;
  dur_meta_policy = -1;
  dur_hold = true;
  pthread_mutex_unlock(&dur_lock);
  dmh_subtask *st;
  dmh_stage stage = dt_run(&e, &st, 120000);
  pthread_mutex_lock(&dur_lock);
  dur_hold = false;
  dur_dir[0] = '\0';
  pthread_mutex_unlock(&dur_lock);
  CU_ASSERT_EQUAL_FATAL(stage, DMH_STAGE_FINISHED);
  long long rows = 0;
  long bad = 0;
  CU_ASSERT_EQUAL(dt_data_files(e.dump_dir, "dmh_dump_flush.t", &rows, &bad), 1);
  CU_ASSERT_EQUAL(rows, 60000);
  CU_ASSERT_EQUAL(bad, 0);
  printf("\n  %ld block(s) past 9 MiB, held %ld time(s); %ld sync(s) of a file being written; "
         "workers' blocks: %ld as SCHED_BATCH, %ld not; the metadata's thread: policy %d\n",
         dur_reached, dur_held, dur_tmp_syncs, dur_batch_workers, dur_other_workers,
         dur_meta_policy);
  /* precondition: the file grew past 9 MiB while open (held there unless a sync came first) */
  CU_ASSERT(dur_reached > 0);
  CU_ASSERT(dur_held <= 1);
  CU_ASSERT(dur_tmp_syncs > 0);
  CU_ASSERT_FALSE(dur_hold_timeout);
  CU_ASSERT_STRING_EQUAL(dur_bad, ""); /* and still all durable before the metadata */
  CU_ASSERT(dur_batch_workers > 0);
  CU_ASSERT_EQUAL(dur_other_workers, 0);
  CU_ASSERT_EQUAL(dur_meta_policy, SCHED_OTHER);
  dt_teardown(&e);
  CU_ASSERT(dt_exec(src, "DROP DATABASE %s", db) == 0);
}

int main(void) {
  src = dt_connect(dt_source_port());
  if (!src)
    return 1;
  static const dmh_cunit_test tests[] = {
      {"files durable before the metadata", test_dump_durable_before_metadata},
      {"a file flushed while it is written", test_dump_durable_flush_while_writing},
  };
  int failed = dmh_cunit_run("dump_durable", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
  mysql_close(src);
  return failed;
}
