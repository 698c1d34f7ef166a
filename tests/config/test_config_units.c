/*
 * A task's chain named with `units = [...]`: what parses (built-in and custom kinds, their
 * unit-paths and sections, the mode a chain spells) and every refusal, each with its code and the
 * file and line it names.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "cunit_run.h"
#include "test_file.h"

static char test_path[256];

#define TASK_HEAD                                                                                  \
  "name = \"t\";\n"                                                                                \
  "target-database = { host = \"127.0.0.1\"; user = \"root\"; };\n"                                \
  "mysql-instances = ( { source-id = \"s\"; } );\n"

static int test_load(const char *body, dmh_task_config **t, dm_error *err) {
  snprintf(test_path, sizeof test_path, "/tmp/dmh-units-%d.cfg", (int)getpid());
  dmh_test_writef("/tmp", test_path + 5, "%s%s", TASK_HEAD, body);
  int rc = dmh_task_config_load(test_path, t, err);
  unlink(test_path);
  return rc;
}

static void test_custom_chain_parses(void) {
  dmh_task_config *t = NULL;
  dm_error err;
  int rc = test_load("units = [\"dump\", \"load\", \"json-sink\"];\n"
                     "unit-paths = { json-sink = \"/opt/units/json-sink.so\"; };\n"
                     "json-sink = { layout = \"stream\"; };\n",
                     &t, &err);
  if (rc < 0)
    fprintf(stderr, "%s\n", err.message);
  CU_ASSERT_EQUAL_FATAL(rc, 0);
  CU_ASSERT_EQUAL(t->mode, DMH_MODE_CUSTOM);
  CU_ASSERT_STRING_EQUAL(dmh_task_mode_name(t->mode), "custom");
  CU_ASSERT_EQUAL_FATAL(t->n_chain, 3);
  CU_ASSERT_EQUAL(t->chain[0].kind, DM_UNIT_DUMP);
  CU_ASSERT_EQUAL(t->chain[2].kind, DM_UNIT_CUSTOM);
  CU_ASSERT_STRING_EQUAL(t->chain[2].name, "json-sink");
  CU_ASSERT_EQUAL(t->chain_line, 4);
  int slot = dmh_task_slot_of(t, "json-sink");
  CU_ASSERT_EQUAL(slot, DMH_KIND_COUNT);
  CU_ASSERT_STRING_EQUAL(t->unit_paths[slot], "/opt/units/json-sink.so");
  CU_ASSERT_PTR_NOT_NULL(dmh_task_section_named(t, "json-sink"));
  CU_ASSERT_PTR_NULL(dmh_task_section_named(t, "sync"));
  CU_ASSERT_EQUAL(dmh_task_slot_of(t, "relay"), -1);
  dmh_task_config_free(t);
  /* a chain that spells a mode runs as that mode */
  CU_ASSERT_EQUAL_FATAL(test_load("units = [\"load\", \"sync\"];\n", &t, &err), 0);
  CU_ASSERT_EQUAL(t->mode, DMH_MODE_LOAD_SYNC);
  CU_ASSERT_EQUAL(t->n_chain, 2);
  dmh_task_config_free(t);
  /* task-mode still gives DM's chains */
  CU_ASSERT_EQUAL_FATAL(test_load("task-mode = \"all\";\n", &t, &err), 0);
  CU_ASSERT_EQUAL(t->n_chain, 3);
  CU_ASSERT_EQUAL(t->chain[2].kind, DM_UNIT_SYNC);
  CU_ASSERT_STRING_EQUAL(t->chain[2].name, "sync");
  CU_ASSERT_EQUAL(t->chain_line, 4);
  dmh_task_config_free(t);
}

static void test_chain_refusals(void) {
  static const struct {
    const char *body;
    int32_t code;
    const char *want; /* after "<file>:" */
  } cases[] = {
      {"units = [\"dump\", \"audit\"];\n", DM_ERR_CONFIG_MISSING,
       "4: `units` in the task file names the custom kind \"audit\" but `unit-paths` gives no "
       "build of it"},
      {"units = [\"dump\", \"Audit!\"];\nunit-paths = { };\n", DM_ERR_CONFIG_UNIT_KIND,
       "4: `units` in the task file names \"Audit!\", which is no unit kind"},
      {"units = [\"relay\"];\n", DM_ERR_CONFIG_UNIT_KIND,
       "4: `units` in the task file names \"relay\": the relay runs per source"},
      {"units = [\"dump\", \"dump\"];\n", DM_ERR_CONFIG_INVALID,
       "4: `units` in the task file names \"dump\" twice"},
      {"units = [\"sync\", \"load\"];\n", DM_ERR_CONFIG_UNIT_KIND,
       "4: `units` in the task file puts \"load\" after \"sync\": a sync never finishes"},
      {"task-mode = \"all\";\nunits = [\"dump\"];\n", DM_ERR_CONFIG_INVALID,
       "5: the task file sets both `task-mode` and `units`"},
      {"units = [];\n", DM_ERR_CONFIG_INVALID,
       "4: `units` in the task file must be an array of 1 to"},
      {"units = [\"routes\"];\n", DM_ERR_CONFIG_UNIT_KIND,
       "4: `units` in the task file names \"routes\", a setting of the task file"},
      {"units = [\"a\", \"b\", \"c\", \"d\", \"e\"];\n", DM_ERR_CONFIG_INVALID,
       "4: `units` in the task file must be an array of 1 to 4 unit kinds"},
      /* a build for a kind the chain does not name: a typo the unknown-settings check catches */
      {"units = [\"dump\", \"json-sink\"];\nunit-paths = { json-snk = \"/x.so\"; };\n",
       DM_ERR_CONFIG_UNKNOWN, "5: unknown setting `unit-paths.json-snk`"},
      /* a section for a custom kind the chain does not name */
      {"task-mode = \"full\";\njson-sink = { };\n", DM_ERR_CONFIG_UNKNOWN,
       "5: unknown setting `json-sink`"},
      {"units = [\"json-sink\"];\nunit-paths = { json-sink = \"/x.so\"; };\njson-sink = 3;\n",
       DM_ERR_CONFIG_INVALID, "6: `json-sink`"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    dmh_task_config *t = NULL;
    dm_error err;
    memset(&err, 0, sizeof err);
    CU_ASSERT_EQUAL(test_load(cases[i].body, &t, &err), -1);
    CU_ASSERT_PTR_NULL(t);
    char want[512];
    snprintf(want, sizeof want, "%s:%s", test_path, cases[i].want);
    if (err.code != cases[i].code || strncmp(err.message, want, strlen(want)) != 0) {
      fprintf(stderr, "\n  case %zu\n  got:  [%d] %s\n  want: [%d] %s\n", i, err.code, err.message,
              cases[i].code, want);
      CU_FAIL("refusal");
    }
    dmh_task_config_free(t);
  }
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"custom chain parses", test_custom_chain_parses},
      {"chain refusals", test_chain_refusals},
  };
  return dmh_cunit_run("config-units", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
