/*
 * Regression test for issue 9, item 2 (the sync side): the sync unit's relay reader
 * (plugins/sync/sync_source.c, compiled in, with the host's real services and a unit context)
 * against a relay folder whose names lead outside it. No server: the relay folder is files.
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

static int t_open(const char *name, dm_error *err, sync_source **out) {
  dm_position from;
  memset(&from, 0, sizeof from);
  dm_strlcpy(from.name, name, sizeof from.name);
  from.pos = 4;
  memset(err, 0, sizeof *err);
  *out = NULL;
  return sync_source_open(&t_unit, &from, out, err);
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
};

int main(void) {
  return dmh_cunit_run("sync relay names", suite_init, suite_clean, tests,
                       sizeof tests / sizeof tests[0]);
}
