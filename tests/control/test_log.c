/*
 * --log-format json: every record is one JSON object on one line, with time, level, the scope's
 * task/source/unit words as members (any other scope as "component"), msg and the fields, and
 * strings escaped so a message with quotes, newlines or control bytes cannot break the line.
 */
#include <CUnit/Basic.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cunit_run.h"
#include "log.h"

/* Run `fn` with stderr going to a file; returns the file's text (caller frees). */
static char *test_capture(void (*fn)(void)) {
  char path[] = "/tmp/dmh-log-XXXXXX";
  int fd = mkstemp(path);
  CU_ASSERT_FATAL(fd >= 0);
  fflush(stderr);
  int saved = dup(STDERR_FILENO);
  CU_ASSERT_FATAL(saved >= 0 && dup2(fd, STDERR_FILENO) >= 0);
  fn();
  CU_ASSERT_FATAL(dup2(saved, STDERR_FILENO) >= 0);
  close(saved);
  off_t len = lseek(fd, 0, SEEK_END);
  char *text = calloc(1, (size_t)len + 1);
  CU_ASSERT_FATAL(text != NULL && pread(fd, text, (size_t)len, 0) == len);
  close(fd);
  unlink(path);
  return text;
}

static void test_emit(void) {
  dmh_log(DM_LOG_INFO, "task=t1 source=mysql-01 unit=sync", "applied %d rows", 42);
  dmh_log(DM_LOG_DEBUG, "registry", "below the level: not written");
  dmh_log(DM_LOG_WARN, "registry", "a \"quoted\" word,\na new line and a tab\t");
  const dm_log_field f[] = {{"file", "mysql-bin.000003"}, {"pos", "1234"}};
  dmh_log_fields(DM_LOG_ERROR, "task=t2 source=s2 unit=json-sink", "rotated", f, 2);
  dmh_log(DM_LOG_INFO, NULL, "no scope");
}

static json_object *test_member(json_object *o, const char *key) {
  json_object *v = NULL;
  return json_object_object_get_ex(o, key, &v) ? v : NULL;
}

static const char *test_str(json_object *o, const char *key) {
  json_object *v = test_member(o, key);
  return v ? json_object_get_string(v) : "";
}

static void test_json_lines(void) {
  bool was = dmh_log_set_json(true);
  char *text = test_capture(test_emit);
  dmh_log_set_json(was);
  json_object *lines[8];
  int n = 0;
  char *save = NULL;
  for (char *l = strtok_r(text, "\n", &save); l && n < 8; l = strtok_r(NULL, "\n", &save)) {
    lines[n] = json_tokener_parse(l);
    CU_ASSERT_PTR_NOT_NULL_FATAL(lines[n]); /* every line is one whole object */
    n++;
  }
  CU_ASSERT_EQUAL_FATAL(n, 4); /* the debug record is below the level */
  CU_ASSERT_STRING_EQUAL(test_str(lines[0], "level"), "info");
  CU_ASSERT_STRING_EQUAL(test_str(lines[0], "task"), "t1");
  CU_ASSERT_STRING_EQUAL(test_str(lines[0], "source"), "mysql-01");
  CU_ASSERT_STRING_EQUAL(test_str(lines[0], "unit"), "sync");
  CU_ASSERT_STRING_EQUAL(test_str(lines[0], "msg"), "applied 42 rows");
  CU_ASSERT_EQUAL(strlen(test_str(lines[0], "time")), strlen("2026-12-01T22:30:27.018Z"));
  CU_ASSERT_STRING_EQUAL(test_str(lines[1], "component"), "registry");
  CU_ASSERT_STRING_EQUAL(test_str(lines[1], "level"), "warn");
  CU_ASSERT_STRING_EQUAL(test_str(lines[1], "msg"), "a \"quoted\" word,\na new line and a tab\t");
  CU_ASSERT_STRING_EQUAL(test_str(lines[2], "unit"), "json-sink");
  CU_ASSERT_STRING_EQUAL(test_str(lines[2], "file"), "mysql-bin.000003");
  CU_ASSERT_STRING_EQUAL(test_str(lines[2], "pos"), "1234");
  CU_ASSERT_STRING_EQUAL(test_str(lines[2], "level"), "error");
  CU_ASSERT_PTR_NULL(test_member(lines[3], "component"));
  CU_ASSERT_STRING_EQUAL(test_str(lines[3], "msg"), "no scope");
  for (int i = 0; i < n; i++)
    json_object_put(lines[i]);
  free(text);
}

static void test_text_unchanged(void) {
  char *text = test_capture(test_emit);
  CU_ASSERT_PTR_NOT_NULL(
      strstr(text, "[INFO] [task=t1 source=mysql-01 unit=sync] applied 42 rows\n"));
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "[ERROR] [task=t2 source=s2 unit=json-sink] rotated "
                                      "file=mysql-bin.000003 pos=1234\n"));
  CU_ASSERT_PTR_NULL(strchr(text, '{'));
  free(text);
}

static void test_format_flag(void) {
  CU_ASSERT_EQUAL(dmh_log_format_flag("serve", "yaml"), -1);
  CU_ASSERT_EQUAL(dmh_log_format_flag("serve", "json"), 0);
  CU_ASSERT_TRUE(dmh_log_set_json(false));
  CU_ASSERT_EQUAL(dmh_log_format_flag("serve", "text"), 0);
  CU_ASSERT_FALSE(dmh_log_set_json(false));
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"json lines", test_json_lines},
      {"text unchanged", test_text_unchanged},
      {"format flag", test_format_flag},
  };
  return dmh_cunit_run("log", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
