/* dmhost/grants.h: SHOW GRANTS lines as privilege bits (the one reading the dump unit, the load
 * unit and the host's precheck share), and what each dump consistency needs. */
#include <stdio.h>
#include <string.h>

#include "cunit_run.h"
#include "dmhost/grants.h"

#define ALL_SCHEMA                                                                                 \
  (DM_PRIV_SELECT | DM_PRIV_INSERT | DM_PRIV_UPDATE | DM_PRIV_DELETE | DM_PRIV_CREATE |            \
   DM_PRIV_DROP | DM_PRIV_ALTER | DM_PRIV_LOCK_TABLES)

static void test_lines(void) {
  static const struct {
    const char *line, *schema;
    uint32_t want;
  } cases[] = {
      {"GRANT ALL PRIVILEGES ON *.* TO `root`@`localhost` WITH GRANT OPTION", "db",
       (1u << DM_PRIV_COUNT) - 1},
      {"GRANT USAGE ON *.* TO `u`@`%`", NULL, 0},
      {"GRANT SELECT, RELOAD, BINLOG MONITOR ON *.* TO `u`@`%`", NULL,
       DM_PRIV_SELECT | DM_PRIV_RELOAD | DM_PRIV_REPL_CLIENT},
      {"GRANT SUPER ON *.* TO `u`@`%`", NULL, DM_PRIV_REPL_CLIENT},
      {"GRANT REPLICATION SLAVE ADMIN ON *.* TO `u`@`%`", NULL, 0},
      {"GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO `u`@`%`", NULL,
       DM_PRIV_REPL_SLAVE | DM_PRIV_REPL_CLIENT},
      /* schema grants: LIKE patterns, \_ a plain underscore, compared as they are */
      {"GRANT ALL PRIVILEGES ON `dm\\_meta`.* TO `u`@`%`", "dm_meta", ALL_SCHEMA},
      {"GRANT ALL PRIVILEGES ON `dm\\_meta`.* TO `u`@`%`", "dmxmeta", 0},
      {"GRANT INSERT ON `dm_meta`.* TO `u`@`%`", "dmxmeta", DM_PRIV_INSERT},
      {"GRANT INSERT ON `shop%`.* TO `u`@`%`", "shop_eu", DM_PRIV_INSERT},
      {"GRANT INSERT ON `shop%`.* TO `u`@`%`", "Shop_eu", 0},
      {"GRANT INSERT ON `a``b`.* TO `u`@`%`", "a`b", DM_PRIV_INSERT},
      {"GRANT SELECT ON `db`.* TO `u`@`%`", NULL, DM_PRIV_SELECT}, /* any schema */
      /* global-only privileges count only ON *.*; table and routine grants for one schema none */
      {"GRANT RELOAD ON `db`.* TO `u`@`%`", NULL, 0},
      {"GRANT SELECT, INSERT ON `db`.`t` TO `u`@`%`", "db", 0},
      {"GRANT SELECT, INSERT ON `db`.`t` TO `u`@`%`", NULL, DM_PRIV_SELECT | DM_PRIV_INSERT},
      {"GRANT SELECT (a, b) ON `db`.`t` TO `u`@`%`", NULL, 0},
      {"GRANT EXECUTE ON FUNCTION `db`.`f` TO `u`@`%`", NULL, 0},
      {"GRANT `dba` TO `u`@`%`", NULL, 0},
      {"REVOKE SELECT ON *.* FROM `u`@`%`", NULL, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    uint32_t got = dm_grant_line(cases[i].line, cases[i].schema);
    if (got != cases[i].want)
      fprintf(stderr, "%s (schema %s): 0x%x, want 0x%x\n", cases[i].line,
              cases[i].schema ? cases[i].schema : "any", got, cases[i].want);
    CU_ASSERT_EQUAL(got, cases[i].want);
  }
  CU_ASSERT(dm_grant_is_role("GRANT `dba` TO `u`@`%`"));
  CU_ASSERT(!dm_grant_is_role("GRANT SELECT ON *.* TO `u`@`%`"));
}

static void test_dump_need(void) {
  CU_ASSERT_EQUAL(dm_grants_dump_need(NULL, false), DM_PRIV_SELECT); /* unset: auto */
  CU_ASSERT_EQUAL(dm_grants_dump_need("flush", false), DM_PRIV_SELECT | DM_PRIV_RELOAD);
  CU_ASSERT_EQUAL(dm_grants_dump_need("none", false), DM_PRIV_SELECT);
  CU_ASSERT_EQUAL(dm_grants_dump_need("none", true), DM_PRIV_SELECT | DM_PRIV_REPL_CLIENT);
  CU_ASSERT_EQUAL(dm_grants_dump_need("flush", true),
                  DM_PRIV_SELECT | DM_PRIV_RELOAD | DM_PRIV_REPL_CLIENT);
  CU_ASSERT_EQUAL(dm_grants_dump_need("lock", true),
                  DM_PRIV_SELECT | DM_PRIV_LOCK_TABLES | DM_PRIV_REPL_CLIENT);
  CU_ASSERT_EQUAL(dm_grants_dump_need("snapshot", true), DM_PRIV_SELECT);
  CU_ASSERT_EQUAL(dm_grants_dump_need("auto", true), DM_PRIV_SELECT);
  char buf[160];
  CU_ASSERT_STRING_EQUAL(
      dm_grant_names(DM_PRIV_RELOAD | DM_PRIV_SELECT | DM_PRIV_REPL_CLIENT, buf, sizeof buf),
      "SELECT, RELOAD, REPLICATION CLIENT");
  CU_ASSERT_STRING_EQUAL(dm_grant_names(0, buf, sizeof buf), "");
  /* a short buffer: cut, terminated */
  CU_ASSERT_STRING_EQUAL(dm_grant_names(DM_PRIV_SELECT | DM_PRIV_INSERT, buf, 10), "SELECT, I");
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"SHOW GRANTS lines", test_lines},
      {"what the dump needs, names", test_dump_need},
  };
  return dmh_cunit_run("sdk_grants", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
