/*
 * Persistence in the state dir (host/registry/state.c): save/load round trip, atomic writes (a temp
 * file left by a crash is never read), and every kind of damaged state.json refused with
 * DM_ERR_STATE naming the file.
 */
#include <CUnit/Basic.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cunit_run.h"
#include "dmhost/sdk.h"
#include "state.h"

static char test_dir[256];

static bool test_contains(const char *haystack, const char *needle) {
  if (strstr(haystack, needle))
    return true;
  fprintf(stderr, "\n  expected \"%s\" in \"%s\"\n", needle, haystack);
  return false;
}

static void test_write(const char *name, const char *text) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", test_dir, name);
  FILE *f = fopen(path, "w");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  fputs(text, f);
  fclose(f);
}

static char *test_read(const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", test_dir, name);
  FILE *f = fopen(path, "r");
  if (!f)
    return NULL;
  static char buf[8192];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

static int test_setup(void) {
  snprintf(test_dir, sizeof test_dir, "/tmp/dmh-test-state-XXXXXX");
  return mkdtemp(test_dir) ? 0 : -1;
}

static int test_teardown(void) {
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", test_dir);
  return system(cmd) == 0 ? 0 : -1;
}

static void test_reset(void) {
  unlink(strcat(strcpy((char[512]){0}, test_dir), "/state.json"));
  unlink(strcat(strcpy((char[512]){0}, test_dir), "/state.json.tmp"));
}

static void test_missing_is_empty(void) {
  test_reset();
  dmh_state st;
  dm_error err;
  CU_ASSERT_EQUAL(dmh_state_load(test_dir, &st, &err), 0);
  CU_ASSERT_EQUAL(st.worker.stage, DMH_WORKER_FREE);
  CU_ASSERT_STRING_EQUAL(st.worker.source, "");
  CU_ASSERT_EQUAL(st.n_sources, 0);
  CU_ASSERT_EQUAL(st.n_tasks, 0);
  dmh_state_clear(&st);
}

static void test_round_trip(void) {
  test_reset();
  dmh_state st;
  dm_error err;
  dmh_state_init(&st);
  st.worker.stage = DMH_WORKER_RELAY;
  dm_strlcpy(st.worker.source, "mysql-01", sizeof st.worker.source);
  CU_ASSERT_EQUAL(dmh_state_add_source(&st, "mysql-01", "sources/mysql-01/source.cfg",
                                       DMH_EXPECT_RUNNING, &err),
                  0);
  CU_ASSERT_EQUAL(dmh_state_add_task(&st, "t1", "tasks/t1/task.cfg", DMH_EXPECT_RUNNING, &err), 0);
  CU_ASSERT_EQUAL(dmh_state_add_task(&st, "t2", "tasks/t2/task.cfg", DMH_EXPECT_PAUSED, &err), 0);
  CU_ASSERT_EQUAL(dmh_unit_paths_set(&st.tasks[1].unit_paths, "sync", "/opt/units/sync-2.so", &err),
                  0);
  /* a custom kind's swapped build is kept by its name */
  CU_ASSERT_EQUAL(
      dmh_unit_paths_set(&st.tasks[1].unit_paths, "json-sink", "/opt/units/sink-2.so", &err), 0);
  CU_ASSERT_EQUAL_FATAL(dmh_state_save(test_dir, &st, &err), 0);
  dmh_state_clear(&st);
  CU_ASSERT_EQUAL(st.n_tasks, 0);

  /* The temp file is gone after the rename. */
  CU_ASSERT_PTR_NULL(test_read("state.json.tmp"));
  CU_ASSERT(test_contains(test_read("state.json"), "\"stage\": \"relay\""));
  CU_ASSERT(!test_contains(test_read("state.json"), "\"enable\""));

  dmh_state back;
  CU_ASSERT_EQUAL_FATAL(dmh_state_load(test_dir, &back, &err), 0);
  CU_ASSERT_EQUAL(back.worker.stage, DMH_WORKER_RELAY);
  CU_ASSERT_STRING_EQUAL(back.worker.source, "mysql-01");
  CU_ASSERT_EQUAL_FATAL(back.n_sources, 1);
  CU_ASSERT_STRING_EQUAL(back.sources[0].source_id, "mysql-01");
  CU_ASSERT_STRING_EQUAL(back.sources[0].file, "sources/mysql-01/source.cfg");
  CU_ASSERT_EQUAL(back.sources[0].relay, DMH_EXPECT_RUNNING);
  /* a source added without a word on it is enabled (add_source once left the flag unset) */
  CU_ASSERT_FALSE(back.sources[0].disabled);
  CU_ASSERT_EQUAL_FATAL(back.n_tasks, 2);
  CU_ASSERT_STRING_EQUAL(back.tasks[0].name, "t1");
  CU_ASSERT_STRING_EQUAL(back.tasks[0].file, "tasks/t1/task.cfg");
  CU_ASSERT_EQUAL(back.tasks[0].stage, DMH_EXPECT_RUNNING);
  CU_ASSERT_STRING_EQUAL(back.tasks[1].name, "t2");
  CU_ASSERT_EQUAL(back.tasks[1].stage, DMH_EXPECT_PAUSED);
  CU_ASSERT_PTR_NULL(dmh_unit_paths_get(&back.tasks[0].unit_paths, "sync"));
  CU_ASSERT_PTR_NULL(dmh_unit_paths_get(&back.tasks[1].unit_paths, "dump"));
  CU_ASSERT_STRING_EQUAL(dmh_unit_paths_get(&back.tasks[1].unit_paths, "sync"),
                         "/opt/units/sync-2.so");
  CU_ASSERT_STRING_EQUAL(dmh_unit_paths_get(&back.tasks[1].unit_paths, "json-sink"),
                         "/opt/units/sink-2.so");
  dmh_state_clear(&back);
}

/* operate-source disable (issue 23): the source's flag and the tasks it paused survive a restart;
 * an enabled source and a task paused by hand write neither key (the files of an older dmhost
 * read the same). */
static void test_source_disabled(void) {
  test_reset();
  dmh_state st;
  dm_error err;
  dmh_state_init(&st);
  st.worker.stage = DMH_WORKER_BOUND;
  dm_strlcpy(st.worker.source, "mysql-01", sizeof st.worker.source);
  CU_ASSERT_EQUAL(dmh_state_add_source(&st, "mysql-01", "sources/mysql-01/source.cfg",
                                       DMH_EXPECT_STOPPED, &err),
                  0);
  CU_ASSERT_EQUAL(dmh_state_add_task(&st, "t1", "tasks/t1/task.cfg", DMH_EXPECT_PAUSED, &err), 0);
  CU_ASSERT_EQUAL(dmh_state_add_task(&st, "t2", "tasks/t2/task.cfg", DMH_EXPECT_PAUSED, &err), 0);
  CU_ASSERT_EQUAL_FATAL(dmh_state_save(test_dir, &st, &err), 0);
  CU_ASSERT(!test_contains(test_read("state.json"), "\"enable\""));
  CU_ASSERT(!test_contains(test_read("state.json"), "pausedBySource"));
  st.sources[0].disabled = true;
  st.tasks[0].source_paused = true;
  CU_ASSERT_EQUAL_FATAL(dmh_state_save(test_dir, &st, &err), 0);
  dmh_state_clear(&st);
  CU_ASSERT(test_contains(test_read("state.json"), "\"enable\": false"));
  dmh_state back;
  CU_ASSERT_EQUAL_FATAL(dmh_state_load(test_dir, &back, &err), 0);
  CU_ASSERT_EQUAL_FATAL(back.n_sources, 1);
  CU_ASSERT_TRUE(back.sources[0].disabled);
  CU_ASSERT_EQUAL_FATAL(back.n_tasks, 2);
  CU_ASSERT_TRUE(back.tasks[0].source_paused);
  CU_ASSERT_FALSE(back.tasks[1].source_paused);
  dmh_state_clear(&back);
}

/* A crash between writing the temp file and the rename leaves state.json.tmp behind: the load reads
 * the last complete state.json only, and the next save overwrites the temp file. */
static void test_leftover_temp_ignored(void) {
  test_reset();
  dmh_state st;
  dm_error err;
  dmh_state_init(&st);
  st.worker.stage = DMH_WORKER_BOUND;
  dm_strlcpy(st.worker.source, "mysql-01", sizeof st.worker.source);
  CU_ASSERT_EQUAL(dmh_state_add_source(&st, "mysql-01", "sources/mysql-01/source.cfg",
                                       DMH_EXPECT_STOPPED, &err),
                  0);
  CU_ASSERT_EQUAL_FATAL(dmh_state_save(test_dir, &st, &err), 0);
  test_write("state.json.tmp", "{\"version\": 1, \"worker\": {\"stage\": \"fr"); /* torn write */

  dmh_state back;
  CU_ASSERT_EQUAL_FATAL(dmh_state_load(test_dir, &back, &err), 0);
  CU_ASSERT_EQUAL(back.worker.stage, DMH_WORKER_BOUND);
  CU_ASSERT_EQUAL(back.n_sources, 1);
  dmh_state_clear(&back);

  CU_ASSERT_EQUAL(dmh_state_add_task(&st, "t9", "tasks/t9/task.cfg", DMH_EXPECT_PAUSED, &err), 0);
  CU_ASSERT_EQUAL_FATAL(dmh_state_save(test_dir, &st, &err), 0);
  CU_ASSERT_PTR_NULL(test_read("state.json.tmp"));
  CU_ASSERT_EQUAL_FATAL(dmh_state_load(test_dir, &back, &err), 0);
  CU_ASSERT_EQUAL(back.n_tasks, 1);
  dmh_state_clear(&back);
  dmh_state_clear(&st);
}

typedef struct {
  const char *name;
  const char *text;
  const char *needles[2];
} test_bad_row;

static const test_bad_row test_bad_rows[] = {
    {"not JSON",
     "{\"version\": 1,\n \"worker\": {\"stage\" \"free\"}}",
     {"state.json:2:", "is not valid JSON"}},
    {"empty file", "", {"is not valid JSON", NULL}},
    {"trailing garbage", "{\"version\": 1} xyz", {"is not valid JSON", NULL}},
    {"not an object", "[1, 2]", {"top level is not a JSON object", NULL}},
    {"other version", "{\"version\": 7}", {"\"version\" is 7", "reads version 1"}},
    {"no version", "{}", {"\"version\" is missing", NULL}},
    {"bad worker stage",
     "{\"version\":1,\"worker\":{\"stage\":\"offline\",\"source\":\"\"}}",
     {"worker.stage is \"offline\"", NULL}},
    {"bound without source",
     "{\"version\":1,\"worker\":{\"stage\":\"bound\",\"source\":\"\"}}",
     {"a free worker has no source", NULL}},
    {"worker bound to an unlisted source",
     "{\"version\":1,\"worker\":{\"stage\":\"relay\",\"source\":\"mysql-01\"}}",
     {"which is not in \"sources\"", "mysql-01"}},
    {"relay Running with the worker bound",
     "{\"version\":1,\"worker\":{\"stage\":\"bound\",\"source\":\"a\"},\"sources\":[{\"source\":"
     "\"a\",\"file\":\"f\",\"relay\":\"Running\"}]}",
     {"has relay Running but worker.stage is \"bound\"", NULL}},
    {"source not bound",
     "{\"version\":1,\"worker\":{\"stage\":\"free\",\"source\":\"\"},\"sources\":[{\"source\":"
     "\"a\",\"file\":\"f\",\"relay\":\"Stopped\"}]}",
     {"source \"a\" is listed but the worker is free", NULL}},
    {"task stage Stopped",
     "{\"version\":1,\"tasks\":[{\"name\":\"t\",\"file\":\"f\",\"stage\":\"Stopped\"}]}",
     {"tasks[0].stage is \"Stopped\"", NULL}},
    {"task without file",
     "{\"version\":1,\"tasks\":[{\"name\":\"t\",\"stage\":\"Running\"}]}",
     {"tasks[0].file is missing or not a string", NULL}},
    {"unitPaths with a relay",
     "{\"version\":1,\"tasks\":[{\"name\":\"t\",\"file\":\"f\",\"stage\":\"Running\","
     "\"unitPaths\":{\"relay\":\"/x.so\"}}]}",
     {"tasks[0].unitPaths.relay", NULL}},
    {"tasks not an array", "{\"version\":1,\"tasks\":{}}", {"\"tasks\" is not an array", NULL}},
    {"duplicate task",
     "{\"version\":1,\"tasks\":[{\"name\":\"t\",\"file\":\"f\",\"stage\":\"Running\"},{\"name\":"
     "\"t\",\"file\":\"g\",\"stage\":\"Paused\"}]}",
     {"task \"t\" is listed twice (tasks[1])", NULL}},
    {"enable not a boolean",
     "{\"version\":1,\"worker\":{\"stage\":\"bound\",\"source\":\"a\"},\"sources\":[{"
     "\"source\":\"a\",\"file\":\"f\",\"relay\":\"Stopped\",\"enable\":\"no\"}]}",
     {"sources[0].enable is not true or false", NULL}},
    {"pausedBySource not a boolean",
     "{\"version\":1,\"tasks\":[{\"name\":\"t\",\"file\":\"f\",\"stage\":\"Paused\","
     "\"pausedBySource\":1}]}",
     {"tasks[0].pausedBySource is not true or false", NULL}},
};

static void test_corrupt_refused(void) {
  char path[512];
  snprintf(path, sizeof path, "%s/state.json", test_dir);
  for (size_t i = 0; i < sizeof test_bad_rows / sizeof test_bad_rows[0]; i++) {
    const test_bad_row *r = &test_bad_rows[i];
    test_reset();
    test_write("state.json", r->text);
    dmh_state st;
    dm_error err;
    memset(&err, 0, sizeof err);
    CU_ASSERT_EQUAL(dmh_state_load(test_dir, &st, &err), -1);
    if (err.code != DM_ERR_STATE)
      fprintf(stderr, "\n  %s: got %d: %s\n", r->name, err.code, err.message);
    CU_ASSERT_EQUAL(err.code, DM_ERR_STATE);
    CU_ASSERT_EQUAL(err.cls, DM_CLASS_CONTROL);
    CU_ASSERT(test_contains(err.message, path));
    for (int k = 0; k < 2 && r->needles[k]; k++)
      CU_ASSERT(test_contains(err.message, r->needles[k]));
    /* Nothing half-loaded is handed back. */
    CU_ASSERT_EQUAL(st.n_sources, 0);
    CU_ASSERT_EQUAL(st.n_tasks, 0);
  }
  test_reset();
}

/* state.json that cannot be read or replaced (a folder in its place; works as root too). */
static void test_unreadable_state(void) {
  char sub[512], path[600];
  snprintf(sub, sizeof sub, "%s/blocked", test_dir);
  snprintf(path, sizeof path, "%s/state.json", sub);
  CU_ASSERT_EQUAL_FATAL(mkdir(sub, 0700), 0);
  CU_ASSERT_EQUAL_FATAL(mkdir(path, 0700), 0);
  dmh_state st;
  dm_error err;
  CU_ASSERT_EQUAL(dmh_state_load(sub, &st, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_STATE);
  CU_ASSERT(test_contains(err.message, "cannot read"));
  CU_ASSERT(test_contains(err.message, path));
  CU_ASSERT_STRING_EQUAL(err.raw_cause, "Is a directory");
  dmh_state_init(&st);
  CU_ASSERT_EQUAL(dmh_state_save(sub, &st, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_STATE);
  CU_ASSERT(test_contains(err.message, "cannot write"));
  CU_ASSERT(test_contains(err.message, "rename"));
  CU_ASSERT(test_contains(err.message, path));
  /* The failed write leaves no temp file behind. */
  char tmp[620];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  CU_ASSERT_EQUAL(access(tmp, F_OK), -1);
  rmdir(path);
  rmdir(sub);
}

static void test_copy_and_mkdirs(void) {
  char src[512], dst_dir[512], dst[600];
  snprintf(src, sizeof src, "%s/orig.cfg", test_dir);
  test_write("orig.cfg", "source-id = \"a\";\n");
  snprintf(dst_dir, sizeof dst_dir, "%s/sources/a", test_dir);
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_state_mkdirs(dst_dir, &err), 0);
  CU_ASSERT_EQUAL(dmh_state_mkdirs(dst_dir, &err), 0); /* again: fine */
  snprintf(dst, sizeof dst, "%s/source.cfg", dst_dir);
  CU_ASSERT_EQUAL_FATAL(dmh_state_copy_file(src, dst, &err), 0);
  /* The copy does not follow later edits of the original. */
  test_write("orig.cfg", "changed\n");
  CU_ASSERT_STRING_EQUAL(test_read("sources/a/source.cfg"), "source-id = \"a\";\n");

  CU_ASSERT_EQUAL(dmh_state_copy_file("/nonexistent/x.cfg", dst, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_CONFIG_IO);
  CU_ASSERT(test_contains(err.message, "/nonexistent/x.cfg"));
  CU_ASSERT_STRING_EQUAL(err.raw_cause, "No such file or directory");

  /* A file where a folder should be. */
  char file_as_dir[600];
  snprintf(file_as_dir, sizeof file_as_dir, "%s/orig.cfg/sub", test_dir);
  CU_ASSERT_EQUAL(dmh_state_mkdirs(file_as_dir, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_STATE);
  CU_ASSERT(test_contains(err.message, "orig.cfg"));
  CU_ASSERT_EQUAL(dmh_state_remove_file(dst, &err), 0);
  CU_ASSERT_EQUAL(dmh_state_remove_file(dst, &err), 0); /* missing: fine */
}

/* The copies of source and task files (they may hold a password, encrypted or not) are the owner's
 * only whatever the umask and the original's mode: files 0600, folders 0700, also when a copy
 * replaces one that was readable by others. */
static void test_copy_owner_only(void) {
  char src[512], dir[512], dst[600];
  snprintf(src, sizeof src, "%s/open.cfg", test_dir);
  test_write("open.cfg", "source-id = \"b\";\nfrom = { password = \"pw\"; };\n");
  CU_ASSERT_EQUAL_FATAL(chmod(src, 0644), 0);
  mode_t old = umask(0);
  snprintf(dir, sizeof dir, "%s/copies/b", test_dir);
  snprintf(dst, sizeof dst, "%s/source.cfg", dir);
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_state_mkdirs(dir, &err), 0);
  CU_ASSERT_EQUAL_FATAL(dmh_state_copy_file(src, dst, &err), 0);
  struct stat st;
  CU_ASSERT_EQUAL_FATAL(stat(dst, &st), 0);
  CU_ASSERT_EQUAL(st.st_mode & 0777, 0600);
  CU_ASSERT_EQUAL_FATAL(stat(dir, &st), 0);
  CU_ASSERT_EQUAL(st.st_mode & 0777, 0700);
  snprintf(dir, sizeof dir, "%s/copies", test_dir);
  CU_ASSERT_EQUAL_FATAL(stat(dir, &st), 0);
  CU_ASSERT_EQUAL(st.st_mode & 0777, 0700);
  /* a copy that replaces an open one: the owner's only again */
  CU_ASSERT_EQUAL_FATAL(chmod(dst, 0644), 0);
  CU_ASSERT_EQUAL_FATAL(dmh_state_copy_file(src, dst, &err), 0);
  CU_ASSERT_EQUAL_FATAL(stat(dst, &st), 0);
  CU_ASSERT_EQUAL(st.st_mode & 0777, 0600);
  umask(old);
  CU_ASSERT_EQUAL(dmh_state_remove_file(dst, &err), 0);
}

static void test_names(void) {
  dm_error err;
  CU_ASSERT_EQUAL(dmh_state_check_name("task name", "t-1.a_b", &err), 0);
  CU_ASSERT_EQUAL(dmh_state_check_name("task name", "../x", &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_CONFIG_INVALID);
  CU_ASSERT(test_contains(err.message, "task name \"../x\" has '.' at offset 0"));
  CU_ASSERT_EQUAL(dmh_state_check_name("source-id", "a/b", &err), -1);
  CU_ASSERT(test_contains(err.message, "source-id \"a/b\" has '/' at offset 1"));
  CU_ASSERT_EQUAL(dmh_state_check_name("source-id", "", &err), -1);
  CU_ASSERT(test_contains(err.message, "must have 1 to 127 characters"));
  char *p = dmh_state_task_work_root("/s", "t1", "mysql-01");
  CU_ASSERT_STRING_EQUAL(p, "/s/tasks/t1/mysql-01");
  free(p);
  p = dmh_state_relay_work_root("/s", "mysql-01");
  CU_ASSERT_STRING_EQUAL(p, "/s/sources/mysql-01/relay-work");
  free(p);
}

static void test_lock(void) {
  dm_error err;
  int fd = dmh_state_lock(test_dir, &err);
  CU_ASSERT_FATAL(fd >= 0);
  /* flock locks belong to the open file description: a second open conflicts even in-process. */
  CU_ASSERT_EQUAL(dmh_state_lock(test_dir, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_EXISTS);
  CU_ASSERT(test_contains(err.message, "another `dmhost serve` uses the state dir"));
  CU_ASSERT(test_contains(err.message, test_dir));
  close(fd);
  fd = dmh_state_lock(test_dir, &err);
  CU_ASSERT(fd >= 0);
  close(fd);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"missing state.json is an empty state", test_missing_is_empty},
      {"save/load round trip", test_round_trip},
      {"a disabled source and the tasks it paused", test_source_disabled},
      {"leftover temp file ignored", test_leftover_temp_ignored},
      {"corrupt state.json refused", test_corrupt_refused},
      {"unreadable state.json", test_unreadable_state},
      {"copy and mkdirs", test_copy_and_mkdirs},
      {"copies are the owner's only", test_copy_owner_only},
      {"names used as folders", test_names},
      {"state dir lock", test_lock},
  };
  return dmh_cunit_run("state", test_setup, test_teardown, tests, sizeof tests / sizeof tests[0]);
}
