/*
 * The online-DDL rules (issue 22; docs/shard.md, "Online DDL"): what the task's shadow-table-rules
 * and trash-table-rules make of a table name (host/core/rules/rules.c, the host service
 * online_table_kind), with DM's defaults and with custom rules, RE2 groups through match.c's
 * translator ("group 1" is the first capturing group: `(?:` groups are not counted), and the task
 * file's settings (online-ddl, the deprecated online-ddl-scheme, rules checked when read).
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "cunit_run.h"
#include "rules.h"
#include "test_file.h"

static dmh_rules *online_rules(bool on, char **shadow, int n_shadow, char **trash, int n_trash) {
  dmh_task_instance inst;
  memset(&inst, 0, sizeof inst);
  inst.online_ddl = on;
  inst.shadow_rules = shadow;
  inst.n_shadow_rules = n_shadow;
  inst.trash_rules = trash;
  inst.n_trash_rules = n_trash;
  dm_error err;
  memset(&err, 0, sizeof err);
  dmh_rules *r = dmh_rules_new(&inst, &err);
  if (!r)
    fprintf(stderr, "rules: [%d] %s\n", err.code, err.message);
  CU_ASSERT_PTR_NOT_NULL_FATAL(r);
  return r;
}

typedef struct kind_case {
  const char *table;
  dm_online_kind kind;
  const char *real; /* for a ghost */
} kind_case;

static void expect_kinds(const dmh_rules *r, const kind_case *cases, size_t n) {
  for (size_t i = 0; i < n; i++) {
    char real[64];
    dm_online_kind k = dmh_rules_online_kind(r, cases[i].table, real, sizeof real);
    bool ok = k == cases[i].kind &&
              (k != DM_ONLINE_GHOST || strcmp(real, cases[i].real ? cases[i].real : "") == 0);
    if (!ok)
      fprintf(stderr, "\n  %s: kind %d real \"%s\", expected %d \"%s\"", cases[i].table, (int)k,
              real, (int)cases[i].kind, cases[i].real ? cases[i].real : "");
    CU_ASSERT(ok);
  }
}

/* DM's defaults: ^_(.+)_(?:new|gho)$ and ^_(.+)_(?:ghc|del|old)$ */
static void test_default_rules(void) {
  dmh_rules *r = online_rules(true, NULL, 0, NULL, 0);
  static const kind_case cases[] = {
      {"_t_gho", DM_ONLINE_GHOST, "t"},
      {"_t_new", DM_ONLINE_GHOST, "t"},
      /* pt-osc when _t_new exists: group 1 is `_t` (the sync then asks its tracker) */
      {"__t_new", DM_ONLINE_GHOST, "_t"},
      {"_order_items_gho", DM_ONLINE_GHOST, "order_items"},
      {"_t_ghc", DM_ONLINE_TRASH, NULL},
      {"_t_del", DM_ONLINE_TRASH, NULL},
      {"_t_old", DM_ONLINE_TRASH, NULL},
      /* gh-ost --timestamp-old-table */
      {"_t_20261202120000_del", DM_ONLINE_TRASH, NULL},
      {"t", DM_ONLINE_REAL, NULL},
      {"t_gho", DM_ONLINE_REAL, NULL},
      {"_t_gho_2", DM_ONLINE_REAL, NULL},
      {"_gho", DM_ONLINE_REAL, NULL},
      /* DM's regexps know no case folding */
      {"_t_GHO", DM_ONLINE_REAL, NULL},
  };
  expect_kinds(r, cases, sizeof cases / sizeof *cases);
  CU_ASSERT_TRUE(dmh_rules_online(r));
  char real[8] = "x";
  CU_ASSERT_EQUAL(dmh_rules_online_kind(r, NULL, real, sizeof real), DM_ONLINE_REAL);
  CU_ASSERT_STRING_EQUAL(real, "");
  dmh_rules_free(r);
}

static void test_online_off(void) {
  dmh_rules *r = online_rules(false, NULL, 0, NULL, 0);
  static const kind_case cases[] = {
      {"_t_gho", DM_ONLINE_REAL, NULL},
      {"_t_del", DM_ONLINE_REAL, NULL},
  };
  expect_kinds(r, cases, sizeof cases / sizeof *cases);
  CU_ASSERT_FALSE(dmh_rules_online(r));
  CU_ASSERT_FALSE(dmh_rules_online(NULL));
  CU_ASSERT_EQUAL(dmh_rules_online_kind(NULL, "_t_gho", NULL, 0), DM_ONLINE_REAL);
  dmh_rules_free(r);
}

static void test_custom_rules(void) {
  char *shadow[] = {
      "^_(.+)_(?:new|gho|osc)$",
      /* (?: first: the capturing group after it is group 1 */
      "^(?:tmp|temp)_(\\w+)_shadow$",
      /* no capturing group: the name itself stands for the real table (DM's RealName) */
      "^copy_of_[a-z]+$",
  };
  char *trash[] = {"^_(.+)_(?:bak|trash)$"};
  dmh_rules *r = online_rules(true, shadow, 3, trash, 1);
  static const kind_case cases[] = {
      {"_t_osc", DM_ONLINE_GHOST, "t"},
      {"_t_gho", DM_ONLINE_GHOST, "t"},
      {"tmp_orders_shadow", DM_ONLINE_GHOST, "orders"},
      {"temp_x1_shadow", DM_ONLINE_GHOST, "x1"},
      {"copy_of_users", DM_ONLINE_GHOST, "copy_of_users"},
      {"_t_bak", DM_ONLINE_TRASH, NULL},
      {"_t_trash", DM_ONLINE_TRASH, NULL},
      /* the default trash rule is replaced, not added to */
      {"_t_del", DM_ONLINE_REAL, NULL},
      {"_t_old", DM_ONLINE_REAL, NULL},
  };
  expect_kinds(r, cases, sizeof cases / sizeof *cases);
  dmh_rules_free(r);
  /* a name both lists match is a ghost: shadow rules first (DM's TableType) */
  char *both_shadow[] = {"^_(.+)_x$"};
  char *both_trash[] = {"_x$"};
  r = online_rules(true, both_shadow, 1, both_trash, 1);
  static const kind_case both[] = {{"_t_x", DM_ONLINE_GHOST, "t"}, {"t_x", DM_ONLINE_TRASH, NULL}};
  expect_kinds(r, both, sizeof both / sizeof *both);
  dmh_rules_free(r);
}

static void test_bad_rule_refused(void) {
  char *bad[] = {"^_(.+_gho$"};
  dmh_task_instance inst;
  memset(&inst, 0, sizeof inst);
  inst.online_ddl = true;
  inst.shadow_rules = bad;
  inst.n_shadow_rules = 1;
  dm_error err;
  memset(&err, 0, sizeof err);
  CU_ASSERT_PTR_NULL(dmh_rules_new(&inst, &err));
  CU_ASSERT_EQUAL(err.code, DM_ERR_CONFIG_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "shadow-table-rules"));
  /* off: the rules are not compiled */
  inst.online_ddl = false;
  dmh_rules *r = dmh_rules_new(&inst, &err);
  CU_ASSERT_PTR_NOT_NULL(r);
  dmh_rules_free(r);
}

#define TASK_HEAD                                                                                  \
  "name = \"t\";\ntask-mode = \"incremental\";\n"                                                  \
  "target-database = { host = \"h\"; user = \"u\"; };\n"                                           \
  "mysql-instances = ( { source-id = \"s\"; meta = { binlog-name = \"f\"; }; } );\n"

/* The task file: the settings, a rule refused with its key, the deprecated scheme. */
static void test_task_file(void) {
  char dir[] = "/tmp/dmh-shard-rules-XXXXXX";
  CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
  char path[sizeof dir + 16];
  snprintf(path, sizeof path, "%s/task.cfg", dir);
  static const struct {
    const char *body;
    int code;         /* 0: loads */
    const char *want; /* in the message, or the expected state "on"/"off" */
  } cases[] = {
      {"", 0, "on"},
      {"online-ddl = false;\n", 0, "off"},
      {"online-ddl = false;\nonline-ddl-scheme = \"pt\";\n", 0, "on"},
      {"online-ddl-scheme = \"gh-ost\";\n", 0, "on"},
      {"online-ddl-scheme = \"osc\";\n", DM_ERR_CONFIG_INVALID, "`online-ddl-scheme`"},
      {"shadow-table-rules = [\"^_(.+)_(?:new|gho|osc)$\"];\n", 0, "on"},
      {"shadow-table-rules = [\"^_(.+)_new$\", \"^_(.+_gho$\"];\n", DM_ERR_CONFIG_INVALID,
       "`shadow-table-rules.[1]`"},
      {"trash-table-rules = [\"\\\\bdel$\"];\n", DM_ERR_CONFIG_INVALID, "`trash-table-rules.[0]`"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    dmh_test_writef(dir, "task.cfg", "%s%s", TASK_HEAD, cases[i].body);
    dmh_task_config *t = NULL;
    dm_error err;
    memset(&err, 0, sizeof err);
    int rc = dmh_task_config_load(path, &t, &err);
    if (cases[i].code) {
      bool ok = rc == -1 && err.code == cases[i].code && strstr(err.message, cases[i].want);
      if (!ok)
        fprintf(stderr, "\n  %s: rc %d [%d] %s", cases[i].body, rc, err.code, err.message);
      CU_ASSERT(ok);
    } else {
      if (rc != 0)
        fprintf(stderr, "\n  %s: [%d] %s", cases[i].body, err.code, err.message);
      CU_ASSERT_EQUAL_FATAL(rc, 0);
      CU_ASSERT_EQUAL(t->online_ddl, strcmp(cases[i].want, "on") == 0);
      CU_ASSERT_EQUAL(t->instances[0].online_ddl, t->online_ddl);
      dmh_task_config_free(t);
    }
  }
  unlink(path);
  rmdir(dir);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"DM's default rules", test_default_rules},
      {"online-ddl off: every table is real", test_online_off},
      {"custom rules, (?: groups, no group", test_custom_rules},
      {"a rule that does not compile", test_bad_rule_refused},
      {"the task file's settings", test_task_file},
  };
  return dmh_cunit_run("shard_rules", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
