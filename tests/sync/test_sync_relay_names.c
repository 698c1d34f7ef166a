/*
 * The sync unit's relay reader (plugins/sync/sync_source.c, compiled in, with the host's real
 * services and a unit context) against relay folders made of files, no server.
 *
 * Issue 10, item 1: a task in mode incremental with the relay on paused at start with
 * DM_ERR_BINLOG_INCOMPLETE ("incomplete event at offset 4: the file has no format description",
 * not resumable) when the sync opened the relay's first file between its creation and the write
 * of its header, and with DM_ERR_BINLOG_PURGED when the relay had written nothing at all yet. A
 * relay file not written yet is now waited for; a short file the relay has moved past, or a
 * damaged header, is still an error.
 *
 * Issue 9, item 2 (the sync side): a relay folder whose names lead outside it.
 *
 * Before the fix the reader built paths from whatever the relay folder said: a line "../evil" of
 * server-uuid.index, a start position naming "../../outside.bin", a ROTATE event naming it, or a
 * symbolic link where a binlog file should be, and read binlog events from a file outside the
 * relay folder. Now each is refused with DM_ERR_RELAY_BAD_NAME or DM_ERR_RELAY_LINK.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "binlog_builder.h"
#include "cunit_run.h"
#include "dmhost/fs.h"
#include "dmhost/sdk.h"
#include "stop_token.h"
#include "sync.h"
#include "unit_ctx.h"

/* sync_unit.c is not compiled in: its one helper sync_source.c calls. */
int sync_nomem(sync_unit *u, dm_error *err) {
  u->host->error_make(u->ctx, err, DM_ERR_NO_MEMORY, NULL, "sync: no memory");
  return -1;
}

static char t_root[64], t_relay[128];
static dmh_stop_token t_token;
static dm_ctx *t_ctx;
static sync_unit t_unit;

/* Also used by suite_init: no CUnit assertion here. */
static int t_write(const char *rel, const void *data, size_t len) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", t_root, rel);
  FILE *f = fopen(path, "w");
  if (!f)
    return -1;
  bool ok = fwrite(data, 1, len, f) == len;
  return fclose(f) == 0 && ok ? 0 : -1;
}

/* A binlog file: magic, format description, and a ROTATE naming `rotate_to` when not NULL. */
static int t_binlog(const char *rel, const char *rotate_to) {
  bb file = {0};
  bb_start_file(&file, "10.11.6-MariaDB-log");
  if (rotate_to) {
    bb body = {0};
    bb_uint(&body, 4, 8);
    bb_str(&body, rotate_to);
    bb_event(&file, DM_BINLOG_ROTATE, &body, 0);
    free(body.p);
  }
  int rc = t_write(rel, file.p, file.len);
  free(file.p);
  return rc;
}

static int t_open_at(const char *name, uint64_t pos, dm_error *err, sync_source **out) {
  dm_position from;
  memset(&from, 0, sizeof from);
  dm_strlcpy(from.name, name, sizeof from.name);
  from.pos = pos;
  memset(err, 0, sizeof *err);
  *out = NULL;
  return sync_source_open(&t_unit, &from, out, err);
}

static int t_open(const char *name, dm_error *err, sync_source **out) {
  return t_open_at(name, 4, err, out);
}

static void t_index(const char *text) {
  CU_ASSERT_EQUAL(t_write("relay/server-uuid.index", text, strlen(text)), 0);
}

/* The well-formed case opens: the files above are valid, so a refusal below is the name's. */
static void test_plain_names_open(void) {
  t_index("0-1.000001\n");
  dm_error err;
  sync_source *s;
  CU_ASSERT_EQUAL(t_open("mysql-bin.000001", &err, &s), 0);
  if (!s)
    fprintf(stderr, "\n  %s\n", err.message);
  sync_source_close(s);
  /* and the files outside the relay folder are valid binlog files too */
  static const char *const outside[] = {"evil/mysql-bin.000001", "outside.bin"};
  for (int i = 0; i < 2; i++) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", t_root, outside[i]);
    dm_binlog_reader *r = NULL;
    dm_binlog_file_options o = {.start_pos = 4};
    CU_ASSERT_EQUAL(dm_binlog_reader_open_file(&r, path, &o, &err), 0);
    dm_binlog_reader_close(r);
  }
}

/* server-uuid.index names ../evil (which exists outside the relay folder, holding the file). */
static void test_index_line_refused(void) {
  t_index("0-1.000001\n../evil\n");
  dm_error err;
  sync_source *s;
  CU_ASSERT_EQUAL(t_open("mysql-bin.000001", &err, &s), -1);
  CU_ASSERT_PTR_NULL(s);
  CU_ASSERT_EQUAL(err.code, DM_ERR_RELAY_BAD_NAME);
  CU_ASSERT_FALSE(err.resumable);
  sync_source_close(s);
  t_index("0-1.000001\n");
}

/* The start position names ../../outside.bin. */
static void test_position_name_refused(void) {
  dm_error err;
  sync_source *s;
  CU_ASSERT_EQUAL(t_open("../../outside.bin", &err, &s), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_RELAY_BAD_NAME);
  sync_source_close(s);
}

/* A link where a binlog file should be is not followed. */
static void test_link_refused(void) {
  dm_error err;
  sync_source *s;
  CU_ASSERT_EQUAL(t_open("mysql-bin.000002", &err, &s), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_RELAY_LINK);
  sync_source_close(s);
}

/* A ROTATE event in a relay file naming ../../outside.bin: refused when read. */
static void test_rotate_name_refused(void) {
  dm_error err;
  sync_source *s;
  CU_ASSERT_EQUAL_FATAL(t_open("mysql-bin.000003", &err, &s), 0);
  int rc = 1, rotates = 0;
  for (int i = 0; i < 10 && rc == 1; i++) {
    dm_binlog_event ev;
    rc = sync_source_next(s, &ev, &err);
    if (rc == 1 && ev.header.type == DM_BINLOG_ROTATE)
      rotates++; /* the old reader handed the event on, to open the file it names next */
  }
  CU_ASSERT_EQUAL(rotates, 0);
  CU_ASSERT_EQUAL(rc, -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_RELAY_BAD_NAME);
  sync_source_close(s);
}

/* ---- a relay file not written yet (issue 10) ---- */

/* The files of these tests live in their own relay folder, <root>/relay-wait. */
static void t_wait_dir(const char *index) {
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s/relay-wait'", t_root);
  CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
  t_ctx->relay_dir = NULL;
  static char dir[160];
  snprintf(dir, sizeof dir, "%s/relay-wait", t_root);
  CU_ASSERT_EQUAL_FATAL(dm_fs_mkdir_p(dir, 0700), 0);
  if (index) {
    char sub[200];
    snprintf(sub, sizeof sub, "%s/0-1.000001", dir);
    CU_ASSERT_EQUAL_FATAL(dm_fs_mkdir_p(sub, 0700), 0);
    CU_ASSERT_EQUAL_FATAL(t_write("relay-wait/server-uuid.index", index, strlen(index)), 0);
  }
  t_ctx->relay_dir = dir;
}

/* The bytes of a whole binlog file (magic, format description, one QUERY event). */
static bb t_file_bytes(void) {
  bb file = {0};
  bb_start_file(&file, "10.11.6-MariaDB-log");
  bb body = {0};
  bb_uint(&body, 1, 4); /* thread id */
  bb_uint(&body, 0, 4); /* exec time */
  bb_uint(&body, 0, 1); /* db length */
  bb_uint(&body, 0, 2); /* error code */
  bb_uint(&body, 0, 2); /* status vars length */
  bb_uint(&body, 0, 1); /* the db's NUL */
  bb_str(&body, "BEGIN");
  bb_event(&file, DM_BINLOG_QUERY, &body, 0);
  free(body.p);
  return file;
}

static void t_append(const char *rel, const void *data, size_t len) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", t_root, rel);
  FILE *f = fopen(path, "a");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  CU_ASSERT_EQUAL(fwrite(data, 1, len, f), len);
  CU_ASSERT_EQUAL(fclose(f), 0);
}

/* Reads until an event comes (1), an error (-1), or `rounds` calls said "nothing yet" (0). */
static int t_next_within(sync_source *s, int rounds, dm_binlog_event *ev, dm_error *err) {
  for (int i = 0; i < rounds; i++) {
    int rc = sync_source_next(s, ev, err);
    if (rc != 0)
      return rc;
  }
  return 0;
}

/* The file's events, from position 4: its format description, then the QUERY. */
static void t_expect_events(sync_source *s) {
  dm_binlog_event ev;
  dm_error err;
  static const uint8_t want[] = {DM_BINLOG_FORMAT_DESCRIPTION, DM_BINLOG_QUERY};
  for (int k = 0; k < 2; k++) {
    int rc = t_next_within(s, 50, &ev, &err);
    if (rc < 0)
      fprintf(stderr, "\n  %s\n", err.message);
    CU_ASSERT_EQUAL(rc, 1);
    if (rc == 1)
      CU_ASSERT_EQUAL(ev.header.type, want[k]);
  }
}

/* The relay has created its file and written `written` of its first bytes (0: none, 4: the
 * magic, 30: part of the format description): the sync opens it, waits, and reads the events
 * once the relay has written them. */
static void t_wait_then_read(size_t written) {
  t_wait_dir("0-1.000001\n");
  bb file = t_file_bytes();
  const char *rel = "relay-wait/0-1.000001/mysql-bin.000001";
  CU_ASSERT_EQUAL_FATAL(t_write(rel, file.p, written), 0);
  dm_error err;
  sync_source *s;
  int rc = t_open("mysql-bin.000001", &err, &s);
  if (rc != 0)
    fprintf(stderr, "\n  %zu bytes written: %s\n", written, err.message);
  CU_ASSERT_EQUAL_FATAL(rc, 0);
  dm_binlog_event ev;
  CU_ASSERT_EQUAL(t_next_within(s, 5, &ev, &err), 0); /* not there yet, and no error */
  t_append(rel, file.p + written, file.len - written);
  t_expect_events(s);
  sync_source_close(s);
  free(file.p);
}

static void test_wait_for_header(void) {
  t_wait_then_read(0);
  t_wait_then_read(4);
  t_wait_then_read(30);
}

/* The relay has not written anything at all (no index yet), or not yet got to the file the
 * position names: waited for, then read. */
static void test_wait_for_file(void) {
  t_wait_dir(NULL);
  dm_error err;
  sync_source *s;
  CU_ASSERT_EQUAL_FATAL(t_open("mysql-bin.000002", &err, &s), 0);
  dm_binlog_event ev;
  CU_ASSERT_EQUAL(t_next_within(s, 3, &ev, &err), 0);
  /* the relay starts, from the file before */
  char sub[300];
  snprintf(sub, sizeof sub, "%s/0-1.000001", t_ctx->relay_dir);
  CU_ASSERT_EQUAL_FATAL(dm_fs_mkdir_p(sub, 0700), 0);
  CU_ASSERT_EQUAL_FATAL(t_write("relay-wait/server-uuid.index", "0-1.000001\n", 11), 0);
  CU_ASSERT_EQUAL_FATAL(t_binlog("relay-wait/0-1.000001/mysql-bin.000001", NULL), 0);
  CU_ASSERT_EQUAL(t_next_within(s, 3, &ev, &err), 0);
  bb file = t_file_bytes();
  CU_ASSERT_EQUAL_FATAL(t_write("relay-wait/0-1.000001/mysql-bin.000002", file.p, file.len), 0);
  t_expect_events(s);
  sync_source_close(s);
  free(file.p);
  /* a file before the oldest the relay holds: purged, an error as before */
  CU_ASSERT_EQUAL(t_open("mysql-bin.000000", &err, &s), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_BINLOG_PURGED);
  sync_source_close(s);
}

/* A file the relay has moved past (a later one in the sub-folder) that stops short, and a file
 * whose first bytes are no binlog magic: errors, not waits. */
static void test_short_or_damaged_is_error(void) {
  t_wait_dir("0-1.000001\n");
  CU_ASSERT_EQUAL_FATAL(t_write("relay-wait/0-1.000001/mysql-bin.000001", DM_BINLOG_MAGIC, 4), 0);
  CU_ASSERT_EQUAL_FATAL(t_binlog("relay-wait/0-1.000001/mysql-bin.000002", NULL), 0);
  dm_error err;
  sync_source *s;
  CU_ASSERT_EQUAL(t_open("mysql-bin.000001", &err, &s), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_BINLOG_INCOMPLETE);
  sync_source_close(s);
  /* the newest file, damaged where its header should be */
  CU_ASSERT_EQUAL_FATAL(t_write("relay-wait/0-1.000001/mysql-bin.000003", "GARBAGE!", 8), 0);
  CU_ASSERT_EQUAL(t_open("mysql-bin.000003", &err, &s), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_BINLOG_CORRUPT);
  sync_source_close(s);
  /* a short file in a sub-folder the relay has left for a newer one */
  CU_ASSERT_EQUAL_FATAL(t_write("relay-wait/0-1.000001/mysql-bin.000004", DM_BINLOG_MAGIC, 4), 0);
  char sub[300];
  snprintf(sub, sizeof sub, "%s/0-2.000002", t_ctx->relay_dir);
  CU_ASSERT_EQUAL_FATAL(dm_fs_mkdir_p(sub, 0700), 0);
  CU_ASSERT_EQUAL_FATAL(t_write("relay-wait/server-uuid.index", "0-1.000001\n0-2.000002\n", 22), 0);
  CU_ASSERT_EQUAL(t_open("mysql-bin.000004", &err, &s), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_BINLOG_INCOMPLETE);
  sync_source_close(s);
  t_ctx->relay_dir = t_relay;
}

/* A checkpoint at the very end of a file, past its ROTATE (a kill right after the sync moved it
 * there): the sync never reads that ROTATE, yet must go on with the next file of the sub-folder.
 * Before, it waited at the end of the old file for good (crash_kill9_sync_relay, a kill at a
 * rotation: the checkpoint never moved again). */
static void test_start_past_rotate(void) {
  t_wait_dir("0-1.000001\n");
  const char *a = "relay-wait/0-1.000001/mysql-bin.000001";
  CU_ASSERT_EQUAL_FATAL(t_binlog(a, "mysql-bin.000002"), 0);
  char path[512];
  snprintf(path, sizeof path, "%s/%s", t_root, a);
  struct stat st;
  CU_ASSERT_EQUAL_FATAL(stat(path, &st), 0);
  bb next = t_file_bytes();
  CU_ASSERT_EQUAL_FATAL(t_write("relay-wait/0-1.000001/mysql-bin.000002", next.p, next.len), 0);
  dm_error err;
  sync_source *s;
  CU_ASSERT_EQUAL_FATAL(t_open_at("mysql-bin.000001", (uint64_t)st.st_size, &err, &s), 0);
  /* the events of the next file, within a few of the sync's idle looks (one every 100 rounds) */
  dm_binlog_event ev;
  static const uint8_t want[] = {DM_BINLOG_FORMAT_DESCRIPTION, DM_BINLOG_QUERY};
  for (int k = 0; k < 2; k++) {
    int rc = t_next_within(s, 400, &ev, &err);
    CU_ASSERT_EQUAL(rc, 1);
    if (rc == 1) {
      CU_ASSERT_EQUAL(ev.header.type, want[k]);
      CU_ASSERT_STRING_EQUAL(ev.file, "mysql-bin.000002");
    }
  }
  sync_source_close(s);
  free(next.p);
}

static int suite_init(void) {
  snprintf(t_root, sizeof t_root, "/tmp/dmh-syncnames-XXXXXX");
  if (!mkdtemp(t_root))
    return -1;
  snprintf(t_relay, sizeof t_relay, "%s/relay", t_root);
  char sub[256], evil[256], link[300], outside[256];
  snprintf(sub, sizeof sub, "%s/0-1.000001", t_relay);
  snprintf(evil, sizeof evil, "%s/evil", t_root);
  if (dm_fs_mkdir_p(sub, 0700) < 0 || dm_fs_mkdir_p(evil, 0700) < 0)
    return -1;
  if (t_binlog("relay/0-1.000001/mysql-bin.000001", NULL) < 0 ||
      t_binlog("relay/0-1.000001/mysql-bin.000003", "../../outside.bin") < 0 ||
      t_binlog("evil/mysql-bin.000001", NULL) < 0 || t_binlog("outside.bin", NULL) < 0)
    return -1;
  snprintf(outside, sizeof outside, "%s/outside.bin", t_root);
  snprintf(link, sizeof link, "%s/mysql-bin.000002", sub);
  if (symlink(outside, link) < 0)
    return -1;
  dm_error err;
  char work[256];
  snprintf(work, sizeof work, "%s/work/sync", t_root);
  if (dmh_stop_token_init(&t_token) < 0 || !(t_ctx = dmh_ctx_new(work, 0600, &err)))
    return -1;
  t_ctx->relay_dir = t_relay;
  t_ctx->task_name = "names";
  t_ctx->token = &t_token;
  snprintf(t_ctx->scope, sizeof t_ctx->scope, "test");
  t_unit.host = dmh_host_services();
  t_unit.ctx = t_ctx;
  return 0;
}

static int suite_clean(void) {
  dmh_ctx_free(t_ctx);
  dmh_stop_token_destroy(&t_token);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", t_root);
  return system(cmd) == 0 ? 0 : -1;
}

static const dmh_cunit_test tests[] = {
    {"plain names open", test_plain_names_open},
    {"index line ../evil refused", test_index_line_refused},
    {"start position ../../outside.bin refused", test_position_name_refused},
    {"link at a binlog file refused", test_link_refused},
    {"ROTATE naming ../../outside.bin refused", test_rotate_name_refused},
    {"a relay file without its header yet is waited for", test_wait_for_header},
    {"a relay that has not written the file yet is waited for", test_wait_for_file},
    {"a short file left behind, a damaged header: errors", test_short_or_damaged_is_error},
    {"a start past the ROTATE at a file's end goes on with the next file", test_start_past_rotate},
};

int main(void) {
  return dmh_cunit_run("sync relay names", suite_init, suite_clean, tests,
                       sizeof tests / sizeof tests[0]);
}
