/*
 * Purge rules (the SDK's dmhost/relay_purge.h) on a relay folder made with the SDK's writer
 * (relay_folder.h, as the relay makes it): no server needed.
 */
#include <CUnit/Basic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <utime.h>

#include "cunit_run.h"
#include "dmhost/relay_folder.h"
#include "dmhost/relay_purge.h"
#include "dmhost/relay_reader.h"

static char pdir[256];

static void p_write(const char *rel, const char *text) {
  char path[1024];
  CU_ASSERT_FATAL(snprintf(path, sizeof path, "%s/%s", pdir, rel) < (int)sizeof path);
  FILE *fp = fopen(path, "w");
  CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
  fputs(text, fp);
  fclose(fp);
}

static bool p_exists(const char *rel) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", pdir, rel);
  return access(path, F_OK) == 0;
}

static void p_age(const char *rel, int hours) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", pdir, rel);
  struct utimbuf t = {.actime = time(NULL) - hours * 3600, .modtime = time(NULL) - hours * 3600};
  utime(path, &t);
}

/* Two sub-folders: 0-1.000001 with files 1..3, 0-2.000002 with 4..7; the relay writes 7. */
static void p_setup(void) {
  snprintf(pdir, sizeof pdir, "/tmp/dmh-relay-purge-XXXXXX");
  CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(pdir));
  char path[512], sub[64];
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dm_relay_index_add(pdir, "0-1", 0600, sub, sizeof sub, &err), 0);
  CU_ASSERT_STRING_EQUAL_FATAL(sub, "0-1.000001");
  for (int i = 1; i <= 3; i++) {
    snprintf(path, sizeof path, "0-1.000001/mysql-bin.%06d", i);
    p_write(path, "x");
  }
  dm_relay_meta m = {.binlog_name = "mysql-bin.000003", .binlog_pos = 1};
  snprintf(path, sizeof path, "%s/0-1.000001", pdir);
  CU_ASSERT_EQUAL_FATAL(dm_relay_meta_write(path, &m, 0600, false, &err), 0);
  CU_ASSERT_EQUAL_FATAL(dm_relay_index_add(pdir, "0-2", 0600, sub, sizeof sub, &err), 0);
  CU_ASSERT_STRING_EQUAL_FATAL(sub, "0-2.000002");
  for (int i = 4; i <= 7; i++) {
    snprintf(path, sizeof path, "0-2.000002/mysql-bin.%06d", i);
    p_write(path, "x");
  }
  dm_relay_meta m2 = {.binlog_name = "mysql-bin.000007", .binlog_pos = 4, .binlog_gtid = "0-2-9"};
  snprintf(path, sizeof path, "%s/0-2.000002", pdir);
  CU_ASSERT_EQUAL_FATAL(dm_relay_meta_write(path, &m2, 0600, false, &err), 0);
}

/* A reader registered at sub/file, as the sync unit does. */
static void p_reader(const char *reader, const char *sub, const char *file) {
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dm_relay_reader_register(pdir, reader, sub, file, 0600, &err), 0);
}

static void p_teardown(void) {
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", pdir);
  CU_ASSERT_EQUAL(system(cmd), 0);
}

static void test_manual_purge_respects_readers(void) {
  p_setup();
  p_reader("task1", "0-2.000002", "mysql-bin.000005");
  dm_relay_purge_opts o = {.relay_dir = pdir, .before = "mysql-bin.000006"};
  dm_error err;
  int removed = -1;
  /* task1 still needs 5: nothing goes, and the message names the reader and its file */
  CU_ASSERT_EQUAL(dm_relay_purge(&o, &removed, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_RELAY_PURGE_IN_USE);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "reader task1"));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "0-2.000002/mysql-bin.000005"));
  CU_ASSERT_EQUAL(removed, 0);
  CU_ASSERT_TRUE(p_exists("0-1.000001/mysql-bin.000001"));
  /* up to the reader's file: the older sub-folder goes entirely, with its index line */
  o.before = "mysql-bin.000005";
  CU_ASSERT_EQUAL(dm_relay_purge(&o, &removed, &err), 0);
  CU_ASSERT_EQUAL(removed, 4);
  CU_ASSERT_FALSE(p_exists("0-1.000001"));
  CU_ASSERT_FALSE(p_exists("0-2.000002/mysql-bin.000004"));
  CU_ASSERT_TRUE(p_exists("0-2.000002/mysql-bin.000005"));
  dm_relay_index ix;
  CU_ASSERT_EQUAL_FATAL(dm_relay_index_read(pdir, &ix, &err), 0);
  CU_ASSERT_EQUAL(ix.n, 1);
  if (ix.n == 1)
    CU_ASSERT_STRING_EQUAL(ix.subs[0], "0-2.000002");
  dm_relay_index_free(&ix);
  p_teardown();
}

static void test_manual_purge_never_the_active_file(void) {
  p_setup();
  dm_relay_purge_opts o = {.relay_dir = pdir, .before = "0-2.000002/mysql-bin.000008"};
  dm_error err;
  int removed = 0;
  CU_ASSERT_EQUAL(dm_relay_purge(&o, &removed, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_NOT_FOUND);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "no relay file 0-2.000002/mysql-bin.000008"));
  o.before = "mysql-bin.000007"; /* the relay's own file: everything before it may go */
  CU_ASSERT_EQUAL(dm_relay_purge(&o, &removed, &err), 0);
  CU_ASSERT_EQUAL(removed, 6);
  CU_ASSERT_TRUE(p_exists("0-2.000002/mysql-bin.000007"));
  CU_ASSERT_TRUE(p_exists("0-2.000002/relay.meta"));
  p_teardown();
}

static void test_auto_purge_by_age(void) {
  p_setup();
  p_age("0-1.000001/mysql-bin.000001", 50);
  p_age("0-1.000001/mysql-bin.000002", 50);
  p_age("0-2.000002/mysql-bin.000007", 50); /* old but the relay's own: kept */
  p_reader("sync-a", "0-1.000001", "mysql-bin.000002");
  dm_relay_purge_opts o = {.relay_dir = pdir, .expires_hours = 24};
  dm_error err;
  int removed = 0;
  CU_ASSERT_EQUAL(dm_relay_purge(&o, &removed, &err), 0);
  CU_ASSERT_EQUAL(removed, 1); /* 2 is old too, but sync-a needs it */
  CU_ASSERT_FALSE(p_exists("0-1.000001/mysql-bin.000001"));
  CU_ASSERT_TRUE(p_exists("0-1.000001/mysql-bin.000002"));
  CU_ASSERT_TRUE(p_exists("0-2.000002/mysql-bin.000007"));
  /* a huge remain-space empties everything below the floor (still sync-a's file) */
  o.expires_hours = 0;
  o.remain_space_gb = 1 << 30;
  CU_ASSERT_EQUAL(dm_relay_purge(&o, &removed, &err), 0);
  CU_ASSERT_EQUAL(removed, 0);
  CU_ASSERT_EQUAL(dm_relay_reader_remove(pdir, "sync-a", &err), 0);
  CU_ASSERT_EQUAL(dm_relay_purge(&o, &removed, &err), 0);
  CU_ASSERT_EQUAL(removed, 5); /* 2, 3, 4, 5, 6 */
  CU_ASSERT_TRUE(p_exists("0-2.000002/mysql-bin.000007"));
  p_teardown();
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"manual purge respects readers", test_manual_purge_respects_readers},
      {"manual purge never the active file", test_manual_purge_never_the_active_file},
      {"auto purge by age and space", test_auto_purge_by_age},
  };
  return dmh_cunit_run("relay_purge", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
