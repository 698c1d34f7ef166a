/*
 * The SDK's filesystem kit (sdk/src/fs.c): the name check, mkdir -p and the atomic write with their
 * modes (under umask 022, which let the old copies create 0644/0755), and open-beneath refusing
 * names that leave the folder and links.
 */
#include <CUnit/Basic.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cunit_run.h"
#include "dmhost/fs.h"

static char fs_root[64];

static const char *fs_path(const char *rel) {
  static char buf[4][256];
  static int i;
  char *b = buf[i++ % 4];
  snprintf(b, 256, "%s/%s", fs_root, rel);
  return b;
}

static mode_t fs_mode(const char *path) {
  struct stat sb;
  return lstat(path, &sb) == 0 ? (sb.st_mode & 07777) : (mode_t)-1;
}

static char *fs_read(const char *path) {
  static char buf[256];
  FILE *f = fopen(path, "re");
  if (!f)
    return NULL;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  return buf;
}

static void test_name_ok(void) {
  static const char *const good[] = {"mysql-bin.000001", "0-1.000002", "a", "A_b-c.d", "x..y"};
  static const char *const bad[] = {"",     ".",      "..",      "../../victim.txt",
                                    "a/b",  "/etc",   ".hidden", "mysql bin.1",
                                    "a\\b", "name\n", "ü",       "a:b"};
  for (size_t i = 0; i < sizeof good / sizeof *good; i++)
    CU_ASSERT_TRUE(dm_fs_name_ok(good[i], strlen(good[i])));
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    CU_ASSERT_FALSE(dm_fs_name_ok(bad[i], strlen(bad[i])));
  /* counted: a NUL inside is refused, bytes after len are not looked at */
  CU_ASSERT_FALSE(dm_fs_name_ok("ab\0cd", 5));
  CU_ASSERT_TRUE(dm_fs_name_ok("ab/cd", 2));
  char longest[DM_FS_NAME_MAX + 2];
  memset(longest, 'a', sizeof longest);
  CU_ASSERT_TRUE(dm_fs_name_ok(longest, DM_FS_NAME_MAX));
  CU_ASSERT_FALSE(dm_fs_name_ok(longest, DM_FS_NAME_MAX + 1));
  CU_ASSERT_FALSE(dm_fs_name_ok(NULL, 0));
}

static void test_dir_mode(void) {
  CU_ASSERT_EQUAL(dm_fs_dir_mode(0600), 0700);
  CU_ASSERT_EQUAL(dm_fs_dir_mode(0640), 0750);
  CU_ASSERT_EQUAL(dm_fs_dir_mode(0644), 0755);
  CU_ASSERT_EQUAL(dm_fs_dir_mode(0604), 0705);
}

static void test_mkdir_p(void) {
  CU_ASSERT_EQUAL(dm_fs_mkdir_p(fs_path("m/a/b/c"), DM_FS_DIR_MODE), 0);
  CU_ASSERT_EQUAL(fs_mode(fs_path("m")), 0700);
  CU_ASSERT_EQUAL(fs_mode(fs_path("m/a/b/c")), 0700);
  /* again: fine; an existing folder keeps its mode */
  CU_ASSERT_EQUAL(chmod(fs_path("m/a"), 0755), 0);
  CU_ASSERT_EQUAL(dm_fs_mkdir_p(fs_path("m/a/b/c/"), DM_FS_DIR_MODE), 0);
  CU_ASSERT_EQUAL(fs_mode(fs_path("m/a")), 0755);
  /* the widened mode */
  CU_ASSERT_EQUAL(dm_fs_mkdir_p(fs_path("w/x"), dm_fs_dir_mode(0640)), 0);
  CU_ASSERT_EQUAL(fs_mode(fs_path("w/x")), 0750);
  /* a file in the way */
  int fd = open(fs_path("m/file"), O_WRONLY | O_CREAT, 0600);
  CU_ASSERT_TRUE_FATAL(fd >= 0);
  close(fd);
  errno = 0;
  CU_ASSERT_EQUAL(dm_fs_mkdir_p(fs_path("m/file/sub"), DM_FS_DIR_MODE), -1);
  CU_ASSERT_EQUAL(errno, ENOTDIR);
}

static void test_write_atomic(void) {
  char p[256];
  snprintf(p, sizeof p, "%s", fs_path("state.json"));
  const char *step = NULL;
  CU_ASSERT_EQUAL(dm_fs_write_atomic(p, "one", 3, DM_FS_FILE_MODE, DM_FS_SYNC, &step), 0);
  CU_ASSERT_STRING_EQUAL(fs_read(p), "one");
  CU_ASSERT_EQUAL(fs_mode(p), 0600);
  /* replacing a file that was 0644 leaves it with the mode asked for */
  CU_ASSERT_EQUAL(chmod(p, 0644), 0);
  CU_ASSERT_EQUAL(dm_fs_write_atomic(p, "two", 3, 0640, DM_FS_SYNC_FILE, &step), 0);
  CU_ASSERT_STRING_EQUAL(fs_read(p), "two");
  CU_ASSERT_EQUAL(fs_mode(p), 0640);
  CU_ASSERT_EQUAL(access(fs_path("state.json.tmp"), F_OK), -1); /* no temp file left */
  /* a link planted at the temp name is removed, not written through */
  int fd = open(fs_path("victim"), O_WRONLY | O_CREAT, 0600);
  CU_ASSERT_TRUE_FATAL(fd >= 0);
  CU_ASSERT_EQUAL(write(fd, "precious", 8), 8);
  close(fd);
  CU_ASSERT_EQUAL(symlink(fs_path("victim"), fs_path("state.json.tmp")), 0);
  CU_ASSERT_EQUAL(dm_fs_write_atomic(p, "three", 5, DM_FS_FILE_MODE, 0, &step), 0);
  CU_ASSERT_STRING_EQUAL(fs_read(fs_path("victim")), "precious");
  CU_ASSERT_STRING_EQUAL(fs_read(p), "three");
  CU_ASSERT_EQUAL(fs_mode(p), 0600);
  /* failure: the step is named */
  step = NULL;
  CU_ASSERT_EQUAL(dm_fs_write_atomic(fs_path("nofolder/x"), "x", 1, 0600, DM_FS_SYNC, &step), -1);
  CU_ASSERT_EQUAL(errno, ENOENT);
  CU_ASSERT_PTR_NOT_NULL_FATAL(step);
  CU_ASSERT_STRING_EQUAL(step, "create");
}

/* Issue 13, item 3: the streamed replace (the dump's data files used their own open + rename,
 * reusing a stale temp file with O_TRUNC, even one that was a link planted there). */
static void test_tmp_stream(void) {
  char p[256], tmp[256];
  snprintf(p, sizeof p, "%s", fs_path("data.sql"));
  int fd = open(fs_path("victim2"), O_WRONLY | O_CREAT, 0600);
  CU_ASSERT_TRUE_FATAL(fd >= 0);
  CU_ASSERT_EQUAL(write(fd, "precious", 8), 8);
  close(fd);
  CU_ASSERT_EQUAL(symlink(fs_path("victim2"), fs_path("data.sql.tmp")), 0);
  fd = dm_fs_tmp_open(p, 0640, tmp, sizeof tmp);
  CU_ASSERT_TRUE_FATAL(fd >= 0);
  CU_ASSERT_STRING_EQUAL(tmp, fs_path("data.sql.tmp"));
  CU_ASSERT_EQUAL(write(fd, "ab", 2), 2);
  CU_ASSERT_EQUAL(write(fd, "cd", 2), 2);
  CU_ASSERT_EQUAL(access(p, F_OK), -1); /* nothing at the name before the commit */
  const char *step = NULL;
  CU_ASSERT_EQUAL(dm_fs_tmp_commit(fd, tmp, p, DM_FS_SYNC, &step), 0);
  CU_ASSERT_STRING_EQUAL(fs_read(p), "abcd");
  CU_ASSERT_EQUAL(fs_mode(p), 0640);
  CU_ASSERT_STRING_EQUAL(fs_read(fs_path("victim2")), "precious");
  CU_ASSERT_EQUAL(access(tmp, F_OK), -1);
  /* a name too long for tmp */
  char small[8];
  errno = 0;
  CU_ASSERT_EQUAL(dm_fs_tmp_open(p, 0600, small, sizeof small), -1);
  CU_ASSERT_EQUAL(errno, ENAMETOOLONG);
  /* a failed rename (the folder is gone) names the step and leaves no temp file */
  CU_ASSERT_EQUAL(mkdir(fs_path("gone"), 0700), 0);
  char q[256];
  snprintf(q, sizeof q, "%s", fs_path("gone/f"));
  fd = dm_fs_tmp_open(q, 0600, tmp, sizeof tmp);
  CU_ASSERT_TRUE_FATAL(fd >= 0);
  CU_ASSERT_EQUAL(mkdir(fs_path("gone/f"), 0700), 0); /* a folder in the way of the rename */
  CU_ASSERT_EQUAL(mkdir(fs_path("gone/f/x"), 0700), 0);
  CU_ASSERT_EQUAL(dm_fs_tmp_commit(fd, tmp, q, DM_FS_SYNC, &step), -1);
  CU_ASSERT_STRING_EQUAL(step, "rename");
  CU_ASSERT_EQUAL(access(tmp, F_OK), -1);
  rmdir(fs_path("gone/f/x"));
  rmdir(fs_path("gone/f"));
  rmdir(fs_path("gone"));
}

/* DM_FS_NO_REPLACE (`dmhost verify --fix-sql`): a new file only; a file or a link at the name is
 * kept, the temp file removed. */
static void test_tmp_no_replace(void) {
  char p[256], tmp[300];
  snprintf(p, sizeof p, "%s", fs_path("nr"));
  int fd = dm_fs_tmp_open(p, 0600, tmp, sizeof tmp);
  CU_ASSERT_TRUE_FATAL(fd >= 0);
  CU_ASSERT_EQUAL(write(fd, "new", 3), 3);
  const char *step = NULL;
  CU_ASSERT_EQUAL(dm_fs_tmp_commit(fd, tmp, p, DM_FS_SYNC | DM_FS_NO_REPLACE, &step), 0);
  CU_ASSERT_STRING_EQUAL(fs_read(p), "new");
  CU_ASSERT_EQUAL(fs_mode(p), 0600);
  CU_ASSERT_EQUAL(access(tmp, F_OK), -1);
  /* again at the same name: refused, the file kept */
  fd = dm_fs_tmp_open(p, 0600, tmp, sizeof tmp);
  CU_ASSERT_TRUE_FATAL(fd >= 0);
  CU_ASSERT_EQUAL(write(fd, "other", 5), 5);
  errno = 0;
  CU_ASSERT_EQUAL(dm_fs_tmp_commit(fd, tmp, p, DM_FS_NO_REPLACE, &step), -1);
  CU_ASSERT_EQUAL(errno, EEXIST);
  CU_ASSERT_STRING_EQUAL(step, "create");
  CU_ASSERT_STRING_EQUAL(fs_read(p), "new");
  CU_ASSERT_EQUAL(access(tmp, F_OK), -1);
  /* a dangling link at the name: not followed, nothing created where it points */
  char l[256];
  snprintf(l, sizeof l, "%s", fs_path("nr-link"));
  CU_ASSERT_EQUAL(symlink(fs_path("nr-nowhere"), l), 0);
  fd = dm_fs_tmp_open(l, 0600, tmp, sizeof tmp);
  CU_ASSERT_TRUE_FATAL(fd >= 0);
  CU_ASSERT_EQUAL(dm_fs_tmp_commit(fd, tmp, l, DM_FS_NO_REPLACE, &step), -1);
  CU_ASSERT_EQUAL(errno, EEXIST);
  CU_ASSERT_EQUAL(access(fs_path("nr-nowhere"), F_OK), -1);
  unlink(l);
  unlink(p);
}

static void test_open_beneath(void) {
  CU_ASSERT_EQUAL_FATAL(dm_fs_mkdir_p(fs_path("b/sub"), DM_FS_DIR_MODE), 0);
  int dfd = dm_fs_open_dir(fs_path("b/sub"));
  CU_ASSERT_TRUE_FATAL(dfd >= 0);
  int fd = dm_fs_open_beneath(dfd, "mysql-bin.000001", O_WRONLY | O_CREAT, DM_FS_FILE_MODE);
  CU_ASSERT_TRUE(fd >= 0);
  if (fd >= 0)
    close(fd);
  CU_ASSERT_EQUAL(fs_mode(fs_path("b/sub/mysql-bin.000001")), 0600);
  /* names that leave the folder: refused before any open */
  static const char *const bad[] = {"../escape", "..", ".", "x/y", "", ".hidden"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    errno = 0;
    CU_ASSERT_EQUAL(dm_fs_open_beneath(dfd, bad[i], O_WRONLY | O_CREAT, 0600), -1);
    CU_ASSERT_EQUAL(errno, EINVAL);
  }
  CU_ASSERT_EQUAL(access(fs_path("b/escape"), F_OK), -1);
  /* a link is not followed, also for a folder */
  CU_ASSERT_EQUAL(symlink(fs_path("victim"), fs_path("b/sub/mysql-bin.000002")), 0);
  errno = 0;
  CU_ASSERT_EQUAL(dm_fs_open_beneath(dfd, "mysql-bin.000002", O_WRONLY | O_CREAT, 0600), -1);
  CU_ASSERT_EQUAL(errno, ELOOP);
  CU_ASSERT_STRING_EQUAL(fs_read(fs_path("victim")), "precious");
  CU_ASSERT_EQUAL(symlink(fs_root, fs_path("b/sub/linkdir")), 0);
  CU_ASSERT_EQUAL(dm_fs_open_beneath(dfd, "linkdir", O_RDONLY | O_DIRECTORY, 0), -1);
  close(dfd);
}

/* dm_fs_open_file: the load's open of a dump folder entry (escaped names, no links, regular only)
 */
static void test_open_file(void) {
  CU_ASSERT_EQUAL_FATAL(dm_fs_mkdir_p(fs_path("c"), DM_FS_DIR_MODE), 0);
  FILE *f = fopen(fs_path("c/db@002et\xc3\xa9.sql"), "w");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  fputs("ok", f);
  fclose(f);
  int dfd = dm_fs_open_dir(fs_path("c"));
  CU_ASSERT_TRUE_FATAL(dfd >= 0);
  struct stat st;
  int fd = dm_fs_open_file(dfd, "db@002et\xc3\xa9.sql", &st);
  CU_ASSERT_TRUE(fd >= 0);
  CU_ASSERT_TRUE(S_ISREG(st.st_mode));
  CU_ASSERT_EQUAL(st.st_size, 2);
  if (fd >= 0) {
    CU_ASSERT_EQUAL(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
    close(fd);
  }
  static const char *const bad[] = {"../victim", "..", ".", "", "x/y"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    errno = 0;
    CU_ASSERT_EQUAL(dm_fs_open_file(dfd, bad[i], &st), -1);
    CU_ASSERT_EQUAL(errno, EINVAL);
  }
  CU_ASSERT_EQUAL_FATAL(symlink(fs_path("victim"), fs_path("c/link.sql")), 0);
  errno = 0;
  CU_ASSERT_EQUAL(dm_fs_open_file(dfd, "link.sql", &st), -1);
  CU_ASSERT_EQUAL(errno, ELOOP);
  /* a FIFO would block a plain open; here it is refused at once, its kind in st */
  CU_ASSERT_EQUAL_FATAL(mkfifo(fs_path("c/fifo.sql"), 0600), 0);
  errno = 0;
  CU_ASSERT_EQUAL(dm_fs_open_file(dfd, "fifo.sql", &st), -1);
  CU_ASSERT_EQUAL(errno, EPERM);
  CU_ASSERT_TRUE(S_ISFIFO(st.st_mode));
  errno = 0;
  CU_ASSERT_EQUAL(dm_fs_open_file(dfd, "missing.sql", &st), -1);
  CU_ASSERT_EQUAL(errno, ENOENT);
  close(dfd);
}

static const dmh_cunit_test tests[] = {
    {"name check", test_name_ok},
    {"folder mode from file mode", test_dir_mode},
    {"open a regular file of a folder", test_open_file},
    {"mkdir -p and its mode", test_mkdir_p},
    {"atomic write: mode, temp file, link at the temp name", test_write_atomic},
    {"open beneath: names and links", test_open_beneath},
    {"streamed replace: temp afresh, commit, failed rename", test_tmp_stream},
    {"streamed write, never over a file or a link (DM_FS_NO_REPLACE)", test_tmp_no_replace},
};

static int suite_init(void) {
  snprintf(fs_root, sizeof fs_root, "/tmp/dmh-fs-XXXXXX");
  return mkdtemp(fs_root) ? 0 : -1;
}

static int suite_clean(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", fs_root);
  return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
  umask(022); /* the common default: the modes asked for must not depend on a stricter one */
  return dmh_cunit_run("sdk fs", suite_init, suite_clean, tests, sizeof tests / sizeof tests[0]);
}
