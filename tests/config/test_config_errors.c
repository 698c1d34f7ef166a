/* Each bad file in files/ fails with its code and the exact message (file:line, setting path, the
 * fix); io errors, a source and a task file swapped, free of NULL, file-mode. */
#include <CUnit/Basic.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "config_test_util.h"
#include "cunit_run.h"

/* ---- errors ---- */

typedef struct {
  const char *file; /* under files/ */
  bool source;      /* a source file (else a task file) */
  int32_t code;
  const char *msg; /* the message after "<path>:" */
} bad_case;

static const bad_case bad_cases[] = {
    {"task-parse-error.cfg", false, DM_ERR_CONFIG_PARSE, "3: syntax error in the task file"},
    {"task-misspelt.cfg", false, DM_ERR_CONFIG_UNKNOWN,
     "7: unknown setting `target-databse` in the task file; did you mean `target-database`?"},
    {"task-unknown-top.cfg", false, DM_ERR_CONFIG_UNKNOWN,
     "5: unknown setting `colour` in the task file; the settings accepted here are: name, "
     "task-mode, units, case-sensitive, meta-schema, target-database, mysql-instances, "
     "block-allow-list, "
     "routes, "
     "filters, expression-filter, unit-paths, supervisor, dump, load, sync, file-mode, "
     "secret-key-path, ignore-checking-items, shard-mode, is-sharding, ... (docs/config.md lists "
     "them all)"},
    {"task-bad-ignore.cfg", false, DM_ERR_CONFIG_INVALID,
     "6: `ignore-checking-items` in the task file names \"binlog_fromat\", which is no precheck "
     "item; did you mean \"binlog_format\"? (docs/precheck.md lists them)"},
    {"task-misplaced-from.cfg", false, DM_ERR_CONFIG_UNKNOWN,
     "3: unknown setting `from` in the task file; this setting belongs in the source file (the "
     "task file names its sources with mysql-instances.[n].source-id)"},
    {"source-unknown-from.cfg", true, DM_ERR_CONFIG_UNKNOWN,
     "3: unknown setting `from.hots` in the source file; did you mean `host`?"},
    {"task-unknown-instance.cfg", false, DM_ERR_CONFIG_UNKNOWN,
     "8: unknown setting `mysql-instances.[1].route-rule` in the task file; did you mean "
     "`route-rules`?"},
    {"task-unknown-route.cfg", false, DM_ERR_CONFIG_UNKNOWN,
     "9: unknown setting `routes.r1.target-tabel` in the task file; did you mean `target-table`?"},
    {"task-missing-name.cfg", false, DM_ERR_CONFIG_MISSING,
     "1: missing required setting `name` in the task file"},
    {"task-missing-host.cfg", false, DM_ERR_CONFIG_MISSING,
     "4: missing required setting `target-database.host` in the task file (in the group starting "
     "here)"},
    {"task-missing-instances.cfg", false, DM_ERR_CONFIG_MISSING,
     "1: missing required setting `mysql-instances` in the task file; add e.g. `mysql-instances = "
     "( { source-id = \"mysql-01\"; } );`"},
    {"source-missing-id.cfg", true, DM_ERR_CONFIG_MISSING,
     "1: missing required setting `source-id` in the source file"},
    {"task-wrong-type.cfg", false, DM_ERR_CONFIG_INVALID,
     "5: `target-database.port` in the task file must be an integer in 1..65535, not a string"},
    {"source-wrong-bool.cfg", true, DM_ERR_CONFIG_INVALID,
     "2: `enable-gtid` in the source file must be a boolean (true or false, without quotes), not "
     "a string"},
    {"task-collation-bad.cfg", false, DM_ERR_CONFIG_INVALID,
     "2: `collation_compatible` in the task file must be \"loose\" or \"strict\" (DM's values), "
     "not \"Strict\""},
    {"task-bad-mode.cfg", false, DM_ERR_CONFIG_INVALID,
     "2: `task-mode` in the task file must be one of \"all\", \"full\", \"incremental\", \"dump\", "
     "\"load\", \"load&sync\" (or name the units with `units = [...]`); not \"increment\"; did "
     "you mean \"incremental\"?"},
    {"task-unresolved-route.cfg", false, DM_ERR_CONFIG_INVALID,
     "7: `mysql-instances.[0].route-rules.[1]` in the task file names the rule `to-archive`, which "
     "is not defined under `routes`; defined there: to-shop, other"},
    {"task-unresolved-bal.cfg", false, DM_ERR_CONFIG_INVALID,
     "4: `mysql-instances.[0].block-allow-list` in the task file names the rule `everything`, "
     "which is not defined under `block-allow-list`; defined there: bal1, bal2"},
    {"task-duplicate-source.cfg", false, DM_ERR_CONFIG_INVALID,
     "7: `mysql-instances.[2].source-id` in the task file: source \"mysql-01\" is already listed "
     "in mysql-instances.[0]; list each source once"},
    {"task-bad-sql-pattern.cfg", false, DM_ERR_CONFIG_INVALID,
     "8: `filters.f1.sql-pattern.[1]` in the task file: regular expression \"(unclosed\": invalid "
     "(Unmatched ( or \\() (see docs/config.md, \"Matching names\")"},
    {"task-bad-bal-regex.cfg", false, DM_ERR_CONFIG_INVALID,
     "8: `block-allow-list.bal1.do-tables.[1].tbl-name` in the task file: regular expression "
     "\"t[0-9\": a '[' without its ']' (at character 2 of \"t[0-9\") (see docs/config.md, "
     "\"Matching names\")"},
    /* read as POSIX, \b would be a GNU extension and \d a 'd': refused with its line instead */
    {"task-bad-bal-boundary.cfg", false, DM_ERR_CONFIG_INVALID,
     "8: `block-allow-list.bal1.do-dbs.[1]` in the task file: regular expression "
     "\"\\blog_\\d+$\": \\b (a word boundary) has no POSIX equivalent and is not supported; use "
     "(^|[^[:alnum:]_]) or ([^[:alnum:]_]|$) instead (at character 1 of \"\\blog_\\d+$\") (see "
     "docs/config.md, \"Matching names\")"},
    /* extract regexps are compiled as the extraction uses them: groups kept, non-greedy refused */
    {"task-bad-extract-regex.cfg", false, DM_ERR_CONFIG_INVALID,
     "8: `routes.r1.extract-table.table-regexp` in the task file: regular expression "
     "\"^(.*?)_x\": non-greedy quantifiers (*? +? ?"
     "? {n,m}?) are not supported in an "
     "expression whose groups are used; write the group so that the longest match is the one "
     "meant (e.g. ([^_]*) for (.*?)_) (at character 4 of \"^(.*?)_x\") (see docs/config.md, "
     "\"Matching names\")"},
    {"task-extract-no-column.cfg", false, DM_ERR_CONFIG_MISSING,
     "8: missing required setting `routes.r1.extract-schema.target-column` in the task file (in "
     "the group starting here)"},
    {"task-extract-same-column.cfg", false, DM_ERR_CONFIG_INVALID,
     "9: `routes.r1.extract-source.target-column` in the task file: column `C` is already filled "
     "by `extract-table`; each extract group needs its own column"},
    {"task-bad-event.cfg", false, DM_ERR_CONFIG_INVALID,
     "6: `filters.f1.events.[1]` in the task file: unknown event \"drop tables\"; did you mean "
     "\"drop table\"? (docs/config.md, \"filters\", lists DM's events)"},
    /* DM's expression-filter: one kind per rule; a text that is no expression on the row */
    {"task-expr-two-kinds.cfg", false, DM_ERR_CONFIG_INVALID,
     "6: `expression-filter.e1` in the task file must have one kind of expression: "
     "insert-value-expr, update-old-value-expr and/or update-new-value-expr, or delete-value-expr "
     "(it has several; as DM, give each kind its own rule)"},
    {"task-expr-escape.cfg", false, DM_ERR_CONFIG_INVALID,
     "7: `expression-filter.e1.insert-value-expr` in the task file is not an expression on the "
     "row's columns: a `)` closes a parenthesis the condition did not open"},
    {"task-expr-unresolved.cfg", false, DM_ERR_CONFIG_INVALID,
     "4: `mysql-instances.[0].expression-filters.[0]` in the task file names the rule `e2`, which "
     "is not defined under `expression-filter`; did you mean `e1`?"},
    {"task-bad-action.cfg", false, DM_ERR_CONFIG_INVALID,
     "6: `filters.f1.action` in the task file must be \"Ignore\", \"Do\" or \"Error\", "
     "not \"Skip\""},
    {"task-relay-unit-path.cfg", false, DM_ERR_CONFIG_UNKNOWN,
     "7: unknown setting `unit-paths.relay` in the task file; the relay unit is chosen in the "
     "source file's unit-paths (relay runs per source, not per task)"},
    {"source-dump-unit-path.cfg", true, DM_ERR_CONFIG_UNKNOWN,
     "4: unknown setting `unit-paths.dump` in the source file; the dump, load and sync units are "
     "chosen in the task file's unit-paths; the source file's unit-paths takes only `relay`"},
    {"source-server-id-overflow.cfg", true, DM_ERR_CONFIG_INVALID,
     "2: `server-id` in the source file must be an integer in 1..4294967295, not 4294967296"},
    /* Integers that libconfig 1.5 alone would wrap to their low 32 bits (issue 9): refused with
     * their own value, and the setting's range. */
    {"source-port-wrap.cfg", true, DM_ERR_CONFIG_INVALID,
     "3: `from.port` in the source file must be an integer in 1..65535, not 4294970633"},
    {"task-port-negative.cfg", false, DM_ERR_CONFIG_INVALID,
     "6: `target-database.port` in the task file must be an integer in 1..65535, not -1"},
    {"task-port-int-max.cfg", false, DM_ERR_CONFIG_INVALID,
     "6: `target-database.port` in the task file must be an integer in 1..65535, not 2147483648"},
    {"task-port-max.cfg", false, DM_ERR_CONFIG_INVALID,
     "6: `target-database.port` in the task file must be an integer in 1..65535, not 65536"},
    {"task-hex-wrap.cfg", false, DM_ERR_CONFIG_INVALID,
     "6: `supervisor.relay-catchup-poll` in the task file must be an integer in 1..4294967295 "
     "milliseconds, not 4294967296"},
    {"task-binlog-pos-huge.cfg", false, DM_ERR_CONFIG_INVALID,
     "5: the integer 99999999999999999999 does not fit in 64 bits: a setting takes an integer in "
     "-9223372036854775808..9223372036854775807 at most, and its own range below that"},
    {"task-supervisor-zero.cfg", false, DM_ERR_CONFIG_INVALID,
     "6: `supervisor.stop-timeout` in the task file must be a number of seconds in "
     "0.001..4294967, not 0"},
    {"task-supervisor-backoff.cfg", false, DM_ERR_CONFIG_INVALID,
     "7: `supervisor.auto-resume.backoff-initial` (10000 ms) in the task file must not exceed "
     "`supervisor.auto-resume.backoff-max` (5000 ms)"},
    {"task-supervisor-poll-float.cfg", false, DM_ERR_CONFIG_INVALID,
     "5: `supervisor.relay-catchup-poll` in the task file must be an integer in 1..4294967295 "
     "milliseconds, not a float"},
    {"task-section-not-group.cfg", false, DM_ERR_CONFIG_INVALID,
     "5: `dump` in the task file must be a group, like `dump = { ... };`; not an integer"},
    {"task-meta-pos-only.cfg", false, DM_ERR_CONFIG_INVALID,
     "4: `mysql-instances.[0].meta.binlog-pos` in the task file needs binlog-name: a position is "
     "an offset in one binlog file"},
    {"task-bad-source-id.cfg", false, DM_ERR_CONFIG_INVALID,
     "4: `mysql-instances.[0].source-id` in the task file must be a non-empty name of letters, "
     "digits, '_' and '-'; not \"mysql 01/x\""},
    /* file-mode may widen the 0600 default to a group or others reading, never to writing */
    {"task-file-mode-writable.cfg", false, DM_ERR_CONFIG_INVALID,
     "5: `file-mode` in the task file must be an octal file mode in a string that gives the owner "
     "read and write and nobody else write or execute: \"0600\" (the default), \"0640\" (the "
     "group may read) or \"0644\"; not \"0666\""},
    {"source-file-mode-bad.cfg", true, DM_ERR_CONFIG_INVALID,
     "3: `file-mode` in the source file must be an octal file mode in a string that gives the "
     "owner read and write and nobody else write or execute: \"0600\" (the default), \"0640\" "
     "(the group may read) or \"0644\"; not \"rw-r-----\""},
};

static void test_bad_files(void) {
  for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
    const bad_case *b = &bad_cases[i];
    char path[PATH_MAX], want[PATH_MAX + 512];
    snprintf(path, sizeof path, "%s", fx(b->file));
    snprintf(want, sizeof want, "%s:%s", path, b->msg);
    expect_failure(path, b->source, b->code, want);
  }
}

static void test_io_errors(void) {
  char want[PATH_MAX + 128];
  const char *missing = fx("no-such-file.cfg");
  snprintf(want, sizeof want, "%s:0: cannot read the task file: No such file or directory",
           missing);
  expect_failure(missing, false, DM_ERR_CONFIG_IO, want);
  snprintf(want, sizeof want, "%s:0: cannot read the source file: No such file or directory",
           missing);
  expect_failure(missing, true, DM_ERR_CONFIG_IO, want);
  /* libconfig would read a folder as an empty file and complain about missing settings. */
  snprintf(want, sizeof want, "%s:0: cannot read the task file: it is a directory",
           DMH_TEST_DIR "/files");
  expect_failure(DMH_TEST_DIR "/files", false, DM_ERR_CONFIG_IO, want);
}

/* A source file given where a task file is expected (and the reverse) is named as such. */
static void test_swapped_files(void) {
  char want[PATH_MAX + 256];
  const char *source = ex("source.cfg");
  snprintf(want, sizeof want,
           "%s:8: unknown setting `source-id` in the task file; this setting belongs in the "
           "source file (the task file names its sources with mysql-instances.[n].source-id)",
           source);
  expect_failure(source, false, DM_ERR_CONFIG_UNKNOWN, want);
  const char *task = ex("task-full.cfg");
  snprintf(want, sizeof want,
           "%s:4: unknown setting `name` in the source file; this setting belongs in the task "
           "file (the source file describes one MySQL source)",
           task);
  expect_failure(task, true, DM_ERR_CONFIG_UNKNOWN, want);
}

static void test_free_null(void) {
  /* The host frees whatever a failed load left, which is NULL. */
  dmh_task_config_free(NULL);
  dmh_source_config_free(NULL);
  CU_PASS("free(NULL) is a no-op");
}

/* file-mode = "0640": read as octal, handed to the relay's files (folders 0750). */
static void test_file_mode(void) {
  dmh_source_config *s = load_source(fx("source-file-mode.cfg"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  CU_ASSERT_EQUAL(s->file_mode, 0640);
  dmh_source_config_free(s);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"bad files: code and exact message", test_bad_files},
      {"io errors", test_io_errors},
      {"source and task files swapped", test_swapped_files},
      {"free NULL", test_free_null},
      {"file-mode", test_file_mode},
  };
  return dmh_cunit_run("config_errors", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
