/* Values of source and task files beyond the examples: relative paths and overrides, floats,
 * @include, integer literals, modes and unit kinds, case-sensitive. */
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

/* ---- values beyond the examples ---- */

static void test_relative_paths_and_overrides(void) {
  char want[PATH_MAX + 32];
  dmh_source_config *s = load_source(fx("source-relative.cfg"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  /* "../relay-data/./mysql-03" from tests/config/files/ */
  real_join(DMH_TEST_DIR, "relay-data/mysql-03", want, sizeof want);
  CU_ASSERT_STRING_EQUAL(s->relay_dir, want);
  CU_ASSERT_EQUAL(s->server_id, 4000000000u);
  CU_ASSERT_STRING_EQUAL(s->from.ep.host, "db.example");
  CU_ASSERT_EQUAL(s->from.ep.port, 3310);
  CU_ASSERT_STRING_EQUAL(s->from.ep.password, "secret");
  CU_ASSERT_STRING_EQUAL(s->from.ep.socket, "/tmp/m.sock");
  real_join(DMH_TEST_DIR "/files", "plugins/dmhost-relay.so", want, sizeof want);
  CU_ASSERT_STRING_EQUAL(s->unit_paths[DMH_KIND_RELAY], want);
  CU_ASSERT_PTR_NULL(s->unit_paths[DMH_KIND_SYNC]);
  config_setting_t *relay = dmh_source_unit_section(s);
  CU_ASSERT_PTR_NOT_NULL_FATAL(relay);
  int buffer = 0;
  CU_ASSERT_TRUE(config_setting_lookup_int(relay, "buffer-size", &buffer));
  CU_ASSERT_EQUAL(buffer, 4);
  dmh_source_config_free(s);

  dmh_task_config *t = load_task(fx("task-relative.cfg"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_STRING_EQUAL(t->name, "rel.task");
  real_join(DMH_TEST_DIR, "plugins/dmhost-sync.so", want, sizeof want);
  CU_ASSERT_STRING_EQUAL(t->unit_paths[DMH_KIND_SYNC], want);
  CU_ASSERT_STRING_EQUAL(t->unit_paths[DMH_KIND_DUMP], "/abs/dmhost-dump.so");
  CU_ASSERT_PTR_NULL(t->unit_paths[DMH_KIND_LOAD]);
  CU_ASSERT_PTR_NULL(t->unit_paths[DMH_KIND_RELAY]);
  CU_ASSERT_STRING_EQUAL(t->target.ep.password, "");
  CU_ASSERT_EQUAL(t->target.ep.port, 3306);
  const dmh_task_instance *in = dmh_task_instance_for(t, "mysql-01");
  CU_ASSERT_PTR_NOT_NULL_FATAL(in);
  CU_ASSERT_PTR_NULL(in->meta_binlog_name);
  CU_ASSERT_EQUAL(in->meta_binlog_pos, 0u);
  CU_ASSERT_STRING_EQUAL(in->meta_binlog_gtid, "0-1-10");
  config_setting_t *sync = dmh_task_unit_section(t, DM_UNIT_SYNC);
  CU_ASSERT_PTR_NOT_NULL_FATAL(sync);
  int workers = 0;
  CU_ASSERT_TRUE(config_setting_lookup_int(sync, "worker-count", &workers));
  CU_ASSERT_EQUAL(workers, 4);
  CU_ASSERT_PTR_NULL(dmh_task_unit_section(t, DM_UNIT_LOAD));
  CU_ASSERT_PTR_NULL(dmh_task_unit_section(t, DM_UNIT_RELAY));
  dmh_task_config_free(t);
}

static void test_supervisor_floats(void) {
  dmh_task_config *t = load_task(fx("task-supervisor-floats.cfg"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_EQUAL(t->sup.init_timeout_ms, 500u);
  CU_ASSERT_EQUAL(t->sup.stop_timeout_ms, 2000u);
  CU_ASSERT_EQUAL(t->sup.relay_catchup_timeout_ms, 250u);
  CU_ASSERT_EQUAL(t->sup.relay_catchup_poll_ms, 10u);
  CU_ASSERT_FALSE(t->sup.auto_resume);
  CU_ASSERT_EQUAL(t->sup.auto_resume_initial_ms, 100u);
  CU_ASSERT_EQUAL(t->sup.auto_resume_max_ms, 1500u);
  dmh_task_config_free(t);
}

/* @include resolves next to the including file, and errors in the included file name it. */
static void test_include(void) {
  dmh_task_config *t = load_task(fx("task-include.cfg"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_STRING_EQUAL(t->target.ep.host, "10.0.0.7");
  CU_ASSERT_EQUAL(t->target.ep.port, 4000);
  CU_ASSERT_STRING_EQUAL(t->target.ep.password, "pw");
  dmh_task_config_free(t);

  char inc[PATH_MAX + 32], want[PATH_MAX + 256];
  real_join(DMH_TEST_DIR "/files", "bad-target.inc", inc, sizeof inc);
  snprintf(want, sizeof want,
           "%s:2: unknown setting `target-database.prot` in the task file; did you mean `port`?",
           inc);
  expect_failure(fx("task-include-bad.cfg"), false, DM_ERR_CONFIG_UNKNOWN, want);
}

/* Integer literals keep their value whatever libconfig 1.5 would make of them (issue 9). */
static void test_int_literals(void) {
  dmh_source_config *s = load_source(fx("source-server-id-large.cfg"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  CU_ASSERT_EQUAL(s->server_id, 4000000000u); /* libconfig alone: -294967296, refused */
  dmh_source_config_free(s);
  s = load_source(fx("source-server-id-hex.cfg"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  CU_ASSERT_EQUAL(s->server_id, 4294967295u); /* libconfig alone: -1 */
  dmh_source_config_free(s);

  /* A unit's own section, read by the unit through the host, holds the value written; numbers in
   * strings and comments are left alone. */
  dmh_task_config *t = load_task(fx("task-unit-wrap.cfg"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  config_setting_t *dump = dmh_task_unit_section(t, DM_UNIT_DUMP);
  CU_ASSERT_PTR_NOT_NULL_FATAL(dump);
  config_setting_t *threads = config_setting_get_member(dump, "threads");
  CU_ASSERT_PTR_NOT_NULL_FATAL(threads);
  CU_ASSERT_EQUAL(config_setting_get_int64(threads), 4294967297LL);
  CU_ASSERT_EQUAL(config_setting_source_line(threads), 8);
  const char *comment = NULL;
  CU_ASSERT(config_setting_lookup_string(dump, "comment", &comment));
  CU_ASSERT_STRING_EQUAL(comment, "port = 4294970633 in a string is text");
  dmh_task_config_free(t);

  /* An @include'd file is read by libconfig itself: refused there, with the suffix to write. */
  char inc[PATH_MAX + 32], want[PATH_MAX + 512];
  real_join(DMH_TEST_DIR "/files", "wrap-target.inc", inc, sizeof inc);
  snprintf(want, sizeof want,
           "%s:2: the integer 4294970633 is outside -2147483648..2147483647, all libconfig keeps "
           "of an integer without the L suffix in an @include'd file (it would read 3337); write "
           "4294970633L, and the setting's own range applies",
           inc);
  expect_failure(fx("task-include-wrap.cfg"), false, DM_ERR_CONFIG_INVALID, want);
}

static void test_modes_and_kinds(void) {
  static const struct {
    const char *name;
    dmh_task_mode mode;
    int n;
    dm_unit_kind chain[3];
  } cases[] = {
      {"all", DMH_MODE_ALL, 3, {DM_UNIT_DUMP, DM_UNIT_LOAD, DM_UNIT_SYNC}},
      {"full", DMH_MODE_FULL, 2, {DM_UNIT_DUMP, DM_UNIT_LOAD}},
      {"incremental", DMH_MODE_INCREMENTAL, 1, {DM_UNIT_SYNC}},
      {"dump", DMH_MODE_DUMP, 1, {DM_UNIT_DUMP}},
      {"load", DMH_MODE_LOAD, 1, {DM_UNIT_LOAD}},
      {"load&sync", DMH_MODE_LOAD_SYNC, 2, {DM_UNIT_LOAD, DM_UNIT_SYNC}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    dmh_task_mode m = (dmh_task_mode)-1;
    CU_ASSERT_EQUAL(dmh_task_mode_parse(cases[i].name, &m), 0);
    CU_ASSERT_EQUAL(m, cases[i].mode);
    CU_ASSERT_STRING_EQUAL(dmh_task_mode_name(cases[i].mode), cases[i].name);
    dm_unit_kind chain[3] = {0, 0, 0};
    CU_ASSERT_EQUAL_FATAL(dmh_task_mode_chain(cases[i].mode, chain), cases[i].n);
    for (int k = 0; k < cases[i].n; k++)
      CU_ASSERT_EQUAL(chain[k], cases[i].chain[k]);
  }
  dmh_task_mode m = DMH_MODE_ALL;
  CU_ASSERT_EQUAL(dmh_task_mode_parse("All", &m), -1);
  CU_ASSERT_EQUAL(dmh_task_mode_parse("load-sync", &m), -1);
  CU_ASSERT_EQUAL(m, DMH_MODE_ALL);

  static const char *const names[] = {"dump", "load", "sync", "relay"};
  for (int i = 0; i < DMH_KIND_COUNT; i++) {
    dm_unit_kind k = dmh_kind_of_index(i);
    CU_ASSERT_EQUAL(dmh_kind_index_of(k), i);
    CU_ASSERT_STRING_EQUAL(dmh_kind_name(k), names[i]);
    dm_unit_kind parsed = DM_UNIT_CUSTOM;
    CU_ASSERT_EQUAL(dmh_kind_parse(names[i], &parsed), 0);
    CU_ASSERT_EQUAL(parsed, k);
  }
  CU_ASSERT_EQUAL(dmh_kind_index_of(DM_UNIT_DUMP), DMH_KIND_DUMP);
  CU_ASSERT_EQUAL(dmh_kind_index_of(DM_UNIT_RELAY), DMH_KIND_RELAY);
  CU_ASSERT_EQUAL(dmh_kind_index_of(DM_UNIT_CUSTOM), -1);
  CU_ASSERT_STRING_EQUAL(dmh_kind_name(DM_UNIT_CUSTOM), "custom");
  dm_unit_kind k = DM_UNIT_DUMP;
  CU_ASSERT_EQUAL(dmh_kind_parse("syncer", &k), -1);
  CU_ASSERT_EQUAL(k, DM_UNIT_DUMP);
}

/* case-sensitive (DM's task setting) reaches every instance's rules; default false. */
static void test_case_sensitive(void) {
  dmh_task_config *t = load_task(fx("task-case-sensitive.cfg"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_TRUE(t->case_sensitive);
  CU_ASSERT_EQUAL_FATAL(t->n_instances, 2);
  CU_ASSERT_TRUE(t->instances[0].case_sensitive);
  CU_ASSERT_TRUE(t->instances[1].case_sensitive);
  dmh_task_config_free(t);
  t = load_task(ex("task-all.cfg"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_FALSE(t->case_sensitive);
  CU_ASSERT_FALSE(t->instances[0].case_sensitive);
  dmh_task_config_free(t);
}

/* collation_compatible (DM's task setting and spelling): "strict" reaches the chain spec the units'
 * collation_strict service answers from; absent or "loose" is DM's loose, and the same for
 * update-task. */
static void test_collation_compatible(void) {
  dmh_task_config *t = load_task(fx("task-collation-strict.cfg"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_TRUE(t->collation_strict);
  dmh_task_config *all = load_task(ex("task-all.cfg"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(all);
  CU_ASSERT_FALSE(all->collation_strict);
  dmh_task_config_free(all);
  dmh_task_config_free(t);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"relative paths, overrides, unit sections", test_relative_paths_and_overrides},
      {"supervisor floats", test_supervisor_floats},
      {"@include", test_include},
      {"integer literals keep their value", test_int_literals},
      {"modes and kinds", test_modes_and_kinds},
      {"case-sensitive", test_case_sensitive},
      {"collation_compatible", test_collation_compatible},
  };
  return dmh_cunit_run("config_values", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
