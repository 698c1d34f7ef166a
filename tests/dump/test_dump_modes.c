/*
 * Regression test for issue 9, item 4: a dump made by `dmhost run` (the real binary, the built
 * dump unit, the real source; FIXTURES_REQUIRED mariadb) leaves its work dir readable by its owner
 * only. Before the fix the dump files were created 0644 and the work dir's folders 0755 (under the
 * usual umask 022, set here for the child), so every local user could read the source's data.
 * With `file-mode = "0640"` in the task file the group may read: 0640 files, 0750 folders.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cunit_run.h"
#include "dump_test_util.h"
#include "fs_modes.h"

#define DB "dmh_dump_modes"

/* `dmhost run` over e's files into <e->dir>/run; its exit status. */
static int dm_run(dt_env *e) {
  char src[400], task[400], work[400];
  snprintf(src, sizeof src, "%s/source.cfg", e->dir);
  snprintf(task, sizeof task, "%s/task.cfg", e->dir);
  snprintf(work, sizeof work, "%s/run", e->dir);
  pid_t pid = fork();
  if (pid == 0) {
    umask(022);
    execl(DMHOST_BIN, DMHOST_BIN, "run", "--source", src, "--task", task, "--work-dir", work,
          "--quiet", (char *)NULL);
    _exit(127);
  }
  int st = 0;
  if (pid < 0 || waitpid(pid, &st, 0) < 0)
    return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void dm_modes(const char *extra, mode_t file_mode, mode_t dir_mode) {
  dt_env e;
  CU_ASSERT_FATAL(dt_setup(&e, "dump-modes", "root", "", dt_source_port(),
                           "block-allow-list = \"bal\";",
                           "block-allow-list = { bal = { do-dbs = [\"" DB "\"]; }; };", NULL) == 0);
  if (extra) { /* top-level settings of the task file, appended */
    char path[400];
    snprintf(path, sizeof path, "%s/task.cfg", e.dir);
    FILE *f = fopen(path, "a");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fprintf(f, "%s\n", extra);
    fclose(f);
  }
  CU_ASSERT_EQUAL_FATAL(dm_run(&e), 0);
  char run[400];
  snprintf(run, sizeof run, "%s/run", e.dir);
  int sql = 0;
  int files = fsm_check_tree(run, file_mode, dir_mode, ".sql", &sql);
  CU_ASSERT(files >= 3); /* metadata, the schema files, the data file */
  CU_ASSERT(sql >= 2);
  dt_teardown(&e);
}

static void test_default_modes(void) {
  dm_modes(NULL, 0600, 0700);
}

static void test_widened_modes(void) {
  dm_modes("file-mode = \"0640\";", 0640, 0750);
}

static int suite_init(void) {
  MYSQL *m = dt_connect(dt_source_port());
  if (!m)
    return -1;
  int rc = dt_exec(m, "DROP DATABASE IF EXISTS " DB) || dt_exec(m, "CREATE DATABASE " DB) ||
           dt_exec(m, "CREATE TABLE " DB ".t (id INT PRIMARY KEY, v VARCHAR(20))") ||
           dt_exec(m, "INSERT INTO " DB ".t VALUES (1, 'secret'), (2, 'data')");
  mysql_close(m);
  return rc ? -1 : 0;
}

static int suite_clean(void) {
  MYSQL *m = dt_connect(dt_source_port());
  if (m) {
    dt_exec(m, "DROP DATABASE IF EXISTS " DB);
    mysql_close(m);
  }
  return 0;
}

static const dmh_cunit_test tests[] = {
    {"dmhost run: 0600 files, 0700 folders (umask 022)", test_default_modes},
    {"dmhost run with file-mode = \"0640\"", test_widened_modes},
};

int main(void) {
  return dmh_cunit_run("dump file modes", suite_init, suite_clean, tests,
                       sizeof tests / sizeof tests[0]);
}
