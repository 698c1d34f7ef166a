/*
 * Issue 20, items 3 and 4, the dump's side: the source is a rogue server (tests/db/rogue_server.py)
 * against the real dump unit (FIXTURES_REQUIRED mariadb).
 *
 * Before the fix the dump wrote the source's answer to SHOW CREATE TABLE into the table's schema
 * file as it was: a proxy in front of the real source that answered with the bytes of a library
 * (the build's own dmhost-dump.so) left an ELF file in the dump folder, owned by the daemon, which
 * the unit loader's trust check then accepted. Now an answer that is not text starting with the
 * statement asked for stops the dump with DM_ERR_DUMP_BAD_ANSWER (not resumable) naming the table,
 * and no file of the folder holds those bytes. And a source that switches the login to
 * mysql_clear_password gets no password from the dump (DM_ERR_DB_AUTH_PLUGIN).
 */
#include <CUnit/Basic.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cunit_run.h"
#include "dmhost/error.h"
#include "dump_test_util.h"
#include "rogue.h"

#define DB "dmh_dump_rogue"

static MYSQL *src;

static int suite_init(void) {
  src = dt_connect(dt_source_port());
  if (!src)
    return -1;
  if (dt_exec(src, "DROP DATABASE IF EXISTS " DB) || dt_exec(src, "CREATE DATABASE " DB) ||
      dt_exec(src, "CREATE TABLE " DB ".t (id INT PRIMARY KEY, v VARCHAR(20))") ||
      dt_exec(src, "INSERT INTO " DB ".t VALUES (1, 'a'), (2, 'b')"))
    return -1;
  return 0;
}

static int suite_clean(void) {
  if (src) {
    dt_exec(src, "DROP DATABASE IF EXISTS " DB);
    mysql_close(src);
  }
  return 0;
}

/* Files below dir (recursively) whose bytes hold needle (n bytes). */
static int files_holding(const char *dir, const void *needle, size_t n) {
  DIR *d = opendir(dir);
  if (!d)
    return 0;
  int found = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
      continue;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    struct stat st;
    if (lstat(path, &st) != 0)
      continue;
    if (S_ISDIR(st.st_mode)) {
      found += files_holding(path, needle, n);
      continue;
    }
    FILE *f = fopen(path, "rb");
    if (!f)
      continue;
    char *buf = malloc((size_t)st.st_size + 1);
    size_t got = buf ? fread(buf, 1, (size_t)st.st_size, f) : 0;
    if (buf && memmem(buf, got, needle, n))
      found++;
    free(buf);
    fclose(f);
  }
  closedir(d);
  return found;
}

/* A dump of DB through r (port) as root; the stage, first error in code/msg/resumable. */
static dmh_stage run_dump(dt_env *e, int port, const char *password, int *code, char *msg,
                          size_t len, int *resumable) {
  CU_ASSERT_FATAL(dt_setup(e, "dump-rogue", "root", password, port, "block-allow-list = \"bal\";",
                           "block-allow-list = { bal = { do-dbs = [\"" DB "\"]; }; };",
                           "threads = 2;") == 0);
  dmh_subtask *st = NULL;
  dmh_stage s = dt_run(e, &st, 60000);
  *code = st ? dt_first_error(st, msg, len) : 0;
  *resumable = st ? dt_first_error_resumable(st) : -1;
  if (*code)
    fprintf(stderr, "  stage %s, error %d: %s\n", dmh_stage_name(s), *code, msg);
  return s;
}

/* Precondition: through the proxy, answers passed on unchanged, the dump finishes and the
 * proxy saw the SHOW CREATE TABLE (so the attacks below go through the same path). */
static void test_proxy_passes(void) {
  testdb_rogue r;
  char port[16];
  snprintf(port, sizeof port, "%d", dt_source_port());
  CU_ASSERT_FATAL(testdb_rogue_start(&r, "proxy", port, NULL) == 0);
  dt_env e;
  int code, resumable;
  char msg[1200];
  CU_ASSERT_EQUAL(run_dump(&e, r.port, "", &code, msg, sizeof msg, &resumable), DMH_STAGE_FINISHED);
  CU_ASSERT(testdb_rogue_saw(&r, "passed SHOW CREATE TABLE"));
  CU_ASSERT(dt_exists(e.dump_dir, DB ".t-schema.sql"));
  dt_teardown(&e);
  testdb_rogue_stop(&r);
}

static void write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  CU_ASSERT_EQUAL(fwrite(data, 1, n, f), n);
  fclose(f);
}

/* The proxy answers SHOW CREATE TABLE with answer_file's bytes: refused, nothing written. */
static void expect_refused(const char *answer_file, const void *marker, size_t marker_len) {
  testdb_rogue r;
  char port[16];
  snprintf(port, sizeof port, "%d", dt_source_port());
  const char *const extra[] = {"--answer", answer_file, NULL};
  CU_ASSERT_FATAL(testdb_rogue_start(&r, "proxy", port, extra) == 0);
  dt_env e;
  int code, resumable;
  char msg[1200];
  dmh_stage s = run_dump(&e, r.port, "", &code, msg, sizeof msg, &resumable);
  CU_ASSERT(testdb_rogue_saw(&r, "rewrote SHOW CREATE TABLE")); /* the attack was played */
  CU_ASSERT_EQUAL(s, DMH_STAGE_PAUSED);
  CU_ASSERT_EQUAL(code, DM_ERR_DUMP_BAD_ANSWER);
  CU_ASSERT_EQUAL(resumable, 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(msg, "`" DB "`.`t`"));
  CU_ASSERT_FALSE(dt_exists(e.dump_dir, DB ".t-schema.sql"));
  CU_ASSERT_EQUAL(files_holding(e.dir, marker, marker_len), 0);
  dt_teardown(&e);
  testdb_rogue_stop(&r);
}

/* The bytes of a real library (the build's dmhost-dump.so): before, they became the schema file
 * (an ELF file in the dump folder); now refused. */
static void test_elf_answer(void) {
  expect_refused(DUMP_SO,
                 "\x7f"
                 "ELF",
                 4);
}

/* Text that is not the statement asked for: another statement, another table, a comment before
 * the column list, a NUL byte after a good start. */
static void test_text_answers(void) {
  static const char *const answers[] = {
      "DROP TABLE `victim` /*rogue-marker*/",
      "CREATE TABLE `other` (`id` int) /*rogue-marker*/",
      "CREATE TABLE `t`/*rogue-marker*/(`id` int)",
  };
  char path[128];
  snprintf(path, sizeof path, "/tmp/dmh-dump-rogue-%d.answer", (int)getpid());
  for (size_t i = 0; i < sizeof answers / sizeof *answers; i++) {
    write_file(path, answers[i], strlen(answers[i]));
    expect_refused(path, "rogue-marker", 12);
  }
  /* a valid statement, then a NUL and more bytes */
  static const char nul[] = "CREATE TABLE `t` (`id` int)\0rogue-marker";
  write_file(path, nul, sizeof nul - 1);
  expect_refused(path, "rogue-marker", 12);
  unlink(path);
}

/* The source switches the dump's login to mysql_clear_password: refused, no password sent. */
static void test_clear_password(void) {
  testdb_rogue r;
  CU_ASSERT_FATAL(testdb_rogue_start(&r, "auth-switch", "mysql_clear_password", NULL) == 0);
  dt_env e;
  int code, resumable;
  char msg[1200];
  dmh_stage s = run_dump(&e, r.port, "s3cret-xyz", &code, msg, sizeof msg, &resumable);
  CU_ASSERT(testdb_rogue_wait(&r, "[closed]\n"));
  CU_ASSERT(testdb_rogue_saw(&r, "[switched-to mysql_clear_password]"));
  CU_ASSERT_FALSE(testdb_rogue_saw(&r, "s3cret-xyz"));
  CU_ASSERT_NOT_EQUAL(s, DMH_STAGE_FINISHED);
  CU_ASSERT_EQUAL(code, DM_ERR_DB_AUTH_PLUGIN);
  CU_ASSERT_EQUAL(resumable, 0);
  dt_teardown(&e);
  testdb_rogue_stop(&r);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"precondition: the proxy passes a real source's answers", test_proxy_passes},
      {"regression: a library as SHOW CREATE TABLE's answer", test_elf_answer},
      {"regression: text that is not the statement asked for", test_text_answers},
      {"regression: no password to a clear-text switch", test_clear_password},
  };
  return dmh_cunit_run("dump rogue", suite_init, suite_clean, tests,
                       sizeof tests / sizeof tests[0]);
}
