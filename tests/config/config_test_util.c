/* Helpers of the source and task file tests (config_test_util.h). */
#include "config_test_util.h"

#include <CUnit/Basic.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char test_buf[4][PATH_MAX];
int test_next;

const char *test_write(const char *dir, const char *name, const char *text, unsigned mode) {
  char *b = test_buf[test_next++ % 4];
  snprintf(b, PATH_MAX, "%s/%s", dir, name);
  unlink(b);
  int fd = open(b, O_WRONLY | O_CREAT | O_TRUNC, (mode_t)mode);
  CU_ASSERT_FATAL(fd >= 0);
  CU_ASSERT_FATAL(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
  CU_ASSERT_FATAL(fchmod(fd, (mode_t)mode) == 0); /* whatever the umask */
  close(fd);
  return b;
}

/* A path under examples/ or tests/config/files/ (a few may be live at once). */
const char *ex(const char *name) {
  char *b = test_buf[test_next++ % 4];
  snprintf(b, PATH_MAX, "%s/%s", DMH_EXAMPLES_DIR, name);
  return b;
}

const char *fx(const char *name) {
  char *b = test_buf[test_next++ % 4];
  snprintf(b, PATH_MAX, "%s/files/%s", DMH_TEST_DIR, name);
  return b;
}

/* realpath of a folder joined with a relative name: what relative paths in a file resolve to. */
void real_join(const char *dir, const char *rel, char *out, size_t size) {
  char real[PATH_MAX];
  CU_ASSERT_PTR_NOT_NULL_FATAL(realpath(dir, real));
  snprintf(out, size, "%s/%s", real, rel);
}

dmh_task_config *load_task(const char *path) {
  dmh_task_config *t = NULL;
  dm_error err;
  memset(&err, 0, sizeof err);
  int rc = dmh_task_config_load(path, &t, &err);
  if (rc != 0)
    fprintf(stderr, "\nunexpected error: %s\n", err.message);
  CU_ASSERT_EQUAL(rc, 0);
  CU_ASSERT_EQUAL(err.code, 0);
  return t;
}

dmh_source_config *load_source(const char *path) {
  dmh_source_config *s = NULL;
  dm_error err;
  memset(&err, 0, sizeof err);
  int rc = dmh_source_config_load(path, &s, &err);
  if (rc != 0)
    fprintf(stderr, "\nunexpected error: %s\n", err.message);
  CU_ASSERT_EQUAL(rc, 0);
  CU_ASSERT_EQUAL(err.code, 0);
  return s;
}

/* Load `path` as a source or task file; it must fail with `code` and exactly `want`. */
void expect_failure(const char *path, bool source, int32_t code, const char *want) {
  dm_error err;
  memset(&err, 0, sizeof err);
  int rc;
  if (source) {
    static dmh_source_config sentinel; /* *out must be reset to NULL */
    dmh_source_config *s = &sentinel;
    rc = dmh_source_config_load(path, &s, &err);
    CU_ASSERT_PTR_NULL(s);
  } else {
    static dmh_task_config sentinel;
    dmh_task_config *t = &sentinel;
    rc = dmh_task_config_load(path, &t, &err);
    CU_ASSERT_PTR_NULL(t);
  }
  CU_ASSERT_EQUAL(rc, -1);
  CU_ASSERT_EQUAL(err.code, code);
  CU_ASSERT_EQUAL(err.cls, DM_CLASS_CONFIG);
  CU_ASSERT_NOT_EQUAL(err.workaround[0], '\0');
  CU_ASSERT_STRING_EQUAL(err.message, want);
  if (strcmp(err.message, want) != 0)
    fprintf(stderr, "\n  got:  %s\n  want: %s\n", err.message, want);
}
