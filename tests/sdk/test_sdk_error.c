/* The SDK's error helpers (sdk/src/error.c) against the code table they are generated from. */
#include <CUnit/Basic.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cunit_run.h"
#include "dmhost/sdk.h"

typedef struct {
  int32_t code;
  const char *name;
  int cls, scope, level, resumable;
  const char *workaround;
} test_row;

/* The table again, expanded here independently of error.c, so both sides are checked. */
static const test_row test_table[] = {
#define TEST_X(name, code, cls, scope, level, resumable, workaround)                               \
  {code, #name, cls, scope, level, resumable, workaround},
    DM_ERROR_MAP(TEST_X)
#undef TEST_X
};
#define TEST_N (sizeof test_table / sizeof test_table[0])

static void test_every_code_from_table(void) {
  for (size_t i = 0; i < TEST_N; i++) {
    const test_row *r = &test_table[i];
    dm_error e;
    memset(&e, 0xff, sizeof e);
    dm_error_set(&e, r->code, "cause", "row %zu", i);
    CU_ASSERT_EQUAL(e.code, r->code);
    CU_ASSERT_EQUAL(e.cls, r->cls);
    CU_ASSERT_EQUAL(e.scope, r->scope);
    CU_ASSERT_EQUAL(e.level, r->level);
    CU_ASSERT_EQUAL(e.resumable, r->resumable);
    CU_ASSERT_STRING_EQUAL(e.workaround, r->workaround);
    CU_ASSERT_STRING_EQUAL(e.raw_cause, "cause");
    char want[32];
    snprintf(want, sizeof want, "row %zu", i);
    CU_ASSERT_STRING_EQUAL(e.message, want);
    for (size_t k = 0; k < sizeof e.reserved; k++)
      CU_ASSERT_EQUAL(e.reserved[k], 0);
    CU_ASSERT_STRING_EQUAL(dm_error_code_name(r->code), r->name);
    CU_ASSERT_EQUAL(dm_error_code_resumable(r->code), r->resumable);
  }
}

/* Codes are stable identifiers: two rows with one code would make one of them unreachable. */
static void test_codes_unique(void) {
  for (size_t i = 0; i < TEST_N; i++)
    for (size_t j = i + 1; j < TEST_N; j++) {
      CU_ASSERT_NOT_EQUAL(test_table[i].code, test_table[j].code);
      CU_ASSERT(strcmp(test_table[i].name, test_table[j].name) != 0);
    }
}

static void test_known_codes(void) {
  dm_error e;
  dm_error_set(&e, DM_ERR_UNIT_ABI_MAJOR, NULL, "unit %s: ABI %d.%d", "/x/dump.so", 2, 0);
  CU_ASSERT_EQUAL(e.code, 12004);
  CU_ASSERT_EQUAL(e.cls, DM_CLASS_LOADER);
  CU_ASSERT_EQUAL(e.scope, DM_SCOPE_INTERNAL);
  CU_ASSERT_EQUAL(e.level, DM_LEVEL_HIGH);
  CU_ASSERT_EQUAL(e.resumable, 0);
  CU_ASSERT_STRING_EQUAL(e.message, "unit /x/dump.so: ABI 2.0");
  CU_ASSERT_STRING_EQUAL(e.raw_cause, "");
  CU_ASSERT_STRING_EQUAL(e.workaround,
                         "Rebuild the unit against the SDK installed with this host.");

  dm_error_set(&e, DM_ERR_DB_CONNECT, "Can't connect to MySQL server on '10.0.0.1' (111)",
               "source %s", "mysql-01");
  CU_ASSERT_EQUAL(e.cls, DM_CLASS_DATABASE);
  CU_ASSERT_EQUAL(e.scope, DM_SCOPE_NOT_SET);
  CU_ASSERT_EQUAL(e.resumable, 1);
  CU_ASSERT_STRING_EQUAL(e.raw_cause, "Can't connect to MySQL server on '10.0.0.1' (111)");

  dm_error_set(&e, DM_ERR_BINLOG_PURGED, NULL, "x");
  CU_ASSERT_EQUAL(e.scope, DM_SCOPE_UPSTREAM);
  CU_ASSERT_EQUAL(e.cls, DM_CLASS_BINLOG);
  CU_ASSERT_EQUAL(e.resumable, 0);
}

static void test_unknown_code(void) {
  dm_error e;
  memset(&e, 0x5a, sizeof e);
  dm_error_set(&e, DM_ERR_UNIT_CUSTOM_BASE + 7, "raw", "my unit's own error %d", 7);
  CU_ASSERT_EQUAL(e.code, 90007);
  CU_ASSERT_EQUAL(e.cls, DM_CLASS_UNIT);
  CU_ASSERT_EQUAL(e.scope, DM_SCOPE_NOT_SET);
  CU_ASSERT_EQUAL(e.level, DM_LEVEL_MEDIUM);
  CU_ASSERT_EQUAL(e.resumable, 0);
  CU_ASSERT_STRING_EQUAL(e.workaround, "");
  CU_ASSERT_STRING_EQUAL(e.message, "my unit's own error 7");
  CU_ASSERT_PTR_NULL(dm_error_code_name(90007));
  CU_ASSERT_PTR_NULL(dm_error_code_name(-1));
  CU_ASSERT_EQUAL(dm_error_code_resumable(90007), 0);
  CU_ASSERT_EQUAL(dm_error_code_resumable(-1), 0);
}

/* dm_error_vset with no format at all, through a real va_list. */
static void test_vset_no_format(dm_error *e, int32_t code, ...) {
  va_list ap;
  va_start(ap, code);
  dm_error_vset(e, code, NULL, NULL, ap);
  va_end(ap);
}

static void test_no_message(void) {
  dm_error e;
  memset(&e, 0x5a, sizeof e);
  test_vset_no_format(&e, DM_ERR_IO);
  CU_ASSERT_STRING_EQUAL(e.message, "");
  CU_ASSERT_STRING_EQUAL(e.raw_cause, "");
  CU_ASSERT_EQUAL(e.cls, DM_CLASS_FUNCTIONAL);
}

static void test_truncation(void) {
  char big[DM_ERROR_MESSAGE_MAX * 2];
  memset(big, 'm', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  dm_error e;
  dm_error_set(&e, DM_ERR_INTERNAL, big, "%s", big);
  CU_ASSERT_EQUAL(strlen(e.message), DM_ERROR_MESSAGE_MAX - 1);
  CU_ASSERT_EQUAL(strlen(e.raw_cause), DM_ERROR_RAW_MAX - 1);
  CU_ASSERT_EQUAL(e.message[0], 'm');
}

/*
 * Regression: dm_error_vset cleared the struct before formatting, so wrapping an error in place
 * (the old message as raw cause or as an argument) produced an empty raw cause and "outer: ".
 */
static void test_wrap_in_place(void) {
  dm_error e;
  dm_error_set(&e, DM_ERR_DB_QUERY, "Table 'db.t' doesn't exist", "inner %d", 1);
  dm_error_set(&e, DM_ERR_CHECKPOINT, e.message, "outer: %s (%s)", e.message, e.raw_cause);
  CU_ASSERT_EQUAL(e.code, DM_ERR_CHECKPOINT);
  CU_ASSERT_STRING_EQUAL(e.raw_cause, "inner 1");
  CU_ASSERT_STRING_EQUAL(e.message, "outer: inner 1 (Table 'db.t' doesn't exist)");
}

static void test_names(void) {
  static const struct {
    int cls;
    const char *name;
  } classes[] = {
      {DM_CLASS_NONE, "not-set"},
      {DM_CLASS_FUNCTIONAL, "functional"},
      {DM_CLASS_CONFIG, "config"},
      {DM_CLASS_LOADER, "unit-loader"},
      {DM_CLASS_SUPERVISOR, "supervisor"},
      {DM_CLASS_CONTROL, "control"},
      {DM_CLASS_DATABASE, "database"},
      {DM_CLASS_BINLOG, "binlog-op"},
      {DM_CLASS_CHECKPOINT, "checkpoint"},
      {DM_CLASS_DUMP_UNIT, "dump-unit"},
      {DM_CLASS_LOAD_UNIT, "load-unit"},
      {DM_CLASS_SYNC_UNIT, "sync-unit"},
      {DM_CLASS_RELAY_UNIT, "relay-unit"},
      {DM_CLASS_UNIT, "unit"},
      {DM_CLASS_CLUSTER, "cluster"},
      {DM_CLASS_TASK_CHECK, "task-check"},
      {DM_CLASS_VALIDATOR, "validator"},
      {-1, "unknown"},
      {17, "unknown"},
      {1000, "unknown"},
  };
  for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++)
    CU_ASSERT_STRING_EQUAL(dm_error_class_name(classes[i].cls), classes[i].name);

  CU_ASSERT_STRING_EQUAL(dm_error_scope_name(DM_SCOPE_NOT_SET), "not-set");
  CU_ASSERT_STRING_EQUAL(dm_error_scope_name(DM_SCOPE_UPSTREAM), "upstream");
  CU_ASSERT_STRING_EQUAL(dm_error_scope_name(DM_SCOPE_DOWNSTREAM), "downstream");
  CU_ASSERT_STRING_EQUAL(dm_error_scope_name(DM_SCOPE_INTERNAL), "internal");
  CU_ASSERT_STRING_EQUAL(dm_error_level_name(DM_LEVEL_LOW), "low");
  CU_ASSERT_STRING_EQUAL(dm_error_level_name(DM_LEVEL_MEDIUM), "medium");
  CU_ASSERT_STRING_EQUAL(dm_error_level_name(DM_LEVEL_HIGH), "high");
}

static void test_strlcpy(void) {
  char buf[8];
  CU_ASSERT_PTR_EQUAL(dm_strlcpy(buf, "abc", sizeof buf), buf);
  CU_ASSERT_STRING_EQUAL(buf, "abc");
  dm_strlcpy(buf, "1234567", sizeof buf); /* exactly fits */
  CU_ASSERT_STRING_EQUAL(buf, "1234567");
  dm_strlcpy(buf, "123456789", sizeof buf);
  CU_ASSERT_STRING_EQUAL(buf, "1234567");
  dm_strlcpy(buf, NULL, sizeof buf);
  CU_ASSERT_STRING_EQUAL(buf, "");
  dm_strlcpy(buf, "xyz", 1);
  CU_ASSERT_STRING_EQUAL(buf, "");
  memcpy(buf, "keep", 5);
  dm_strlcpy(buf, "xyz", 0); /* no room even for the terminator: untouched */
  CU_ASSERT_STRING_EQUAL(buf, "keep");
}

/* Which file errors are permanent (never resumable) and which can pass while the task waits. */
static void test_errno_permanent(void) {
  static const int permanent[] = {ENAMETOOLONG, EACCES, EPERM, EROFS, EISDIR,
                                  ENOTDIR,      EEXIST, ELOOP, EINVAL};
  static const int passing[] = {ENOSPC, EDQUOT, EIO, EFBIG, EINTR, EAGAIN, EMFILE, ENFILE, ENOMEM};
  for (size_t i = 0; i < sizeof permanent / sizeof *permanent; i++)
    CU_ASSERT_TRUE(dm_errno_permanent(permanent[i]));
  for (size_t i = 0; i < sizeof passing / sizeof *passing; i++)
    CU_ASSERT_FALSE(dm_errno_permanent(passing[i]));
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"every code fills from the table", test_every_code_from_table},
      {"codes and names are unique", test_codes_unique},
      {"known codes", test_known_codes},
      {"unknown code", test_unknown_code},
      {"no message, no raw cause", test_no_message},
      {"truncation", test_truncation},
      {"wrap an error in place", test_wrap_in_place},
      {"class, scope, level names", test_names},
      {"dm_strlcpy", test_strlcpy},
      {"permanent file errors", test_errno_permanent},
  };
  return dmh_cunit_run("sdk error", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
