/* Block-allow-list, routes and binlog event filters as DM applies them (host/core/rules/rules.c,
 * host/core/rules/filters.c), and DM's name matching they share (host/base/match.c). */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

#include "cunit_run.h"
#include "match.h"
#include "rules.h"

static dmh_rules *rules_with(dmh_bal_rule *bal, const dmh_route_rule **routes, int n_routes) {
  static dmh_task_instance inst;
  memset(&inst, 0, sizeof inst);
  inst.bal = bal;
  inst.routes = routes;
  inst.n_routes = n_routes;
  dm_error err;
  dmh_rules *r = dmh_rules_new(&inst, &err);
  CU_ASSERT_PTR_NOT_NULL(r);
  return r;
}

static void test_system_schemas_never(void) {
  dmh_rules *r = rules_with(NULL, NULL, 0);
  CU_ASSERT_FALSE(dmh_rules_table_allowed(r, "mysql", "user"));
  CU_ASSERT_FALSE(dmh_rules_table_allowed(r, "INFORMATION_SCHEMA", NULL));
  CU_ASSERT_FALSE(dmh_rules_table_allowed(r, "performance_schema", "x"));
  CU_ASSERT_FALSE(dmh_rules_table_allowed(r, "sys", "x"));
  CU_ASSERT_TRUE(dmh_rules_table_allowed(r, "shop", "orders"));
  CU_ASSERT_TRUE(dmh_rules_table_allowed(NULL, "shop", NULL));
  dmh_rules_free(r);
}

static void test_do_dbs_and_regex(void) {
  char *do_dbs[] = {"shop", "~^log_[0-9]+$"};
  dmh_bal_rule bal = {.do_dbs = do_dbs, .n_do_dbs = 2};
  dmh_rules *r = rules_with(&bal, NULL, 0);
  CU_ASSERT_TRUE(dmh_rules_table_allowed(r, "shop", "orders"));
  CU_ASSERT_TRUE(dmh_rules_table_allowed(r, "log_2024", "t"));
  CU_ASSERT_FALSE(dmh_rules_table_allowed(r, "log_x", "t"));
  CU_ASSERT_FALSE(dmh_rules_table_allowed(r, "shopping", "t"));
  CU_ASSERT_FALSE(dmh_rules_table_allowed(r, "other", NULL));
  dmh_rules_free(r);
}

static void test_ignore_dbs_and_tables(void) {
  char *ignore_dbs[] = {"tmp"};
  dmh_table_ref ignore_tables[] = {{"shop", "~^audit_"}, {"shop", "cache"}};
  dmh_bal_rule bal = {.ignore_dbs = ignore_dbs,
                      .n_ignore_dbs = 1,
                      .ignore_tables = ignore_tables,
                      .n_ignore_tables = 2};
  dmh_rules *r = rules_with(&bal, NULL, 0);
  CU_ASSERT_FALSE(dmh_rules_table_allowed(r, "tmp", "x"));
  CU_ASSERT_TRUE(dmh_rules_table_allowed(r, "shop", "orders"));
  CU_ASSERT_FALSE(dmh_rules_table_allowed(r, "shop", "audit_2024"));
  CU_ASSERT_FALSE(dmh_rules_table_allowed(r, "shop", "cache"));
  CU_ASSERT_TRUE(dmh_rules_table_allowed(r, "other", "cache"));
  CU_ASSERT_TRUE(dmh_rules_table_allowed(r, "shop", NULL));
  dmh_rules_free(r);
}

/* One schema.table (table NULL: the schema as a whole) and whether it passes. */
typedef struct bal_case {
  const char *schema, *table;
  bool allowed;
} bal_case;

static void bal_check(const dmh_rules *r, const char *what, const bal_case *cases, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const bal_case *c = &cases[i];
    bool got = dmh_rules_table_allowed(r, c->schema, c->table);
    if (got != c->allowed)
      fprintf(stderr, "\n  %s: %s.%s expected %s, got %s\n", what, c->schema,
              c->table ? c->table : "(schema)", c->allowed ? "allowed" : "filtered",
              got ? "allowed" : "filtered");
    CU_ASSERT_EQUAL(got, c->allowed);
  }
}

/* DM's tidb-tools filter: do-dbs decide the schema level alone (a do-tables entry does not let
 * its schema in), and once do-tables is set only the tables it names pass, also in do-dbs
 * schemas it names no table of. */
static void test_do_tables(void) {
  char *do_dbs[] = {"keep", "part"};
  dmh_table_ref do_tables[] = {{"part", "orders"}, {"part", "~^items_"}, {"elsewhere", "t"}};
  dmh_bal_rule bal = {.do_dbs = do_dbs, .n_do_dbs = 2, .do_tables = do_tables, .n_do_tables = 3};
  dmh_rules *r = rules_with(&bal, NULL, 0);
  static const bal_case both[] = {
      {"part", "orders", true},    {"part", "items_1", true},  {"part", "users", false},
      {"keep", "anything", false}, {"keep", NULL, false},      {"part", NULL, true},
      {"elsewhere", "t", false},   {"elsewhere", NULL, false}, {"other", "orders", false},
      {"PART", "ORDERS", true},
  };
  bal_check(r, "do-dbs + do-tables", both, sizeof both / sizeof *both);
  dmh_rules_free(r);
  /* do-tables alone: only those tables, only their schemas */
  dmh_bal_rule only = {.do_tables = do_tables, .n_do_tables = 3};
  r = rules_with(&only, NULL, 0);
  static const bal_case alone[] = {
      {"part", "orders", true}, {"part", "users", false}, {"elsewhere", "t", true},
      {"other", NULL, false},   {"part", NULL, true},
  };
  bal_check(r, "do-tables alone", alone, sizeof alone / sizeof *alone);
  dmh_rules_free(r);
  /* a do-tables match wins over ignore-tables; ignore-tables then filters the rest */
  dmh_table_ref dos[] = {{"app", "t*"}}, ignores[] = {{"app", "t_tmp*"}, {"app", "u*"}};
  dmh_bal_rule mixed = {
      .do_tables = dos, .n_do_tables = 1, .ignore_tables = ignores, .n_ignore_tables = 2};
  r = rules_with(&mixed, NULL, 0);
  static const bal_case mix[] = {
      {"app", "t1", true}, {"app", "t_tmp1", true}, {"app", "u1", false}, {"app", "v", false}};
  bal_check(r, "do-tables + ignore-tables", mix, sizeof mix / sizeof *mix);
  dmh_rules_free(r);
}

/* Plain names are DM wildcards, compared without regard to case unless case-sensitive. */
static void test_bal_wildcards_and_case(void) {
  char *do_dbs[] = {"Upper_DB*", "t?st", "log_[0-9]", "x[!a-c]"};
  char *ignore_dbs[] = {"Tmp_*"};
  dmh_bal_rule bal = {.do_dbs = do_dbs, .n_do_dbs = 4};
  dmh_rules *r = rules_with(&bal, NULL, 0);
  static const bal_case cases[] = {
      {"upper_db1", "t", true}, {"UPPER_DB22", NULL, true}, {"Upper_DB", "t", true},
      {"upper_d", "t", false},  {"other", NULL, false},     {"test", "t", true},
      {"tEst", "t", true},      {"teest", "t", false},      {"log_7", "t", true},
      {"log_x", "t", false},    {"xd", "t", true},          {"xb", "t", false},
      {"XB", "t", false},       {"XD", "t", true},
  };
  bal_check(r, "do-dbs wildcards", cases, sizeof cases / sizeof *cases);
  dmh_rules_free(r);
  dmh_table_ref ignore_tables[] = {{"Shop", "Audit_*"}};
  dmh_bal_rule ign = {.ignore_dbs = ignore_dbs,
                      .n_ignore_dbs = 1,
                      .ignore_tables = ignore_tables,
                      .n_ignore_tables = 1};
  r = rules_with(&ign, NULL, 0);
  static const bal_case ignored[] = {
      {"tmp_1", "t", false},         {"TMP_x", NULL, false},     {"tmp", "t", true},
      {"shop", "audit_2024", false}, {"SHOP", "AUDIT_1", false}, {"shop", "orders", true},
  };
  bal_check(r, "ignore wildcards", ignored, sizeof ignored / sizeof *ignored);
  dmh_rules_free(r);
}

/* DM's regular expressions are Go's (RE2): \d \w \s mean what DM users mean by them. */
static void test_bal_regex_classes(void) {
  char *do_dbs[] = {"~^app\\d*$"};
  dmh_table_ref do_tables[] = {{"~^app", "~^t[\\d]+"},
                               {"~^app", "~^u\\w*_\\d{2}$"},
                               {"~^app", "~^v\\s"},
                               {"~^app", "~^w[^\\d]$"},
                               {"~^app", "~^x\\D\\S\\W$"}};
  dmh_bal_rule bal = {.do_dbs = do_dbs, .n_do_dbs = 1, .do_tables = do_tables, .n_do_tables = 5};
  dmh_rules *r = rules_with(&bal, NULL, 0);
  static const bal_case cases[] = {
      {"app", "t1", true},      {"app", "t22", true},      {"app", "tx", false},
      {"app", "T3", true},      {"APP12", "t1", true},     {"app_x", "t1", false},
      {"app", "u_ab_12", true}, {"app", "u-ab_12", false}, {"app", "u_ab_1", false},
      {"app", "v x", true},     {"app", "vx", false},      {"app", "wa", true},
      {"app", "w1", false},     {"app", "xa!-", true},     {"app", "x1!-", false},
      {"app", "xa -", false},   {"app", "xa!a", false},
  };
  bal_check(r, "regex classes", cases, sizeof cases / sizeof *cases);
  dmh_rules_free(r);
}

/* case-sensitive = true: names and patterns compared as they are, regex too. */
static void test_case_sensitive(void) {
  char *do_dbs[] = {"Upper_DB*", "~^T\\d"};
  dmh_bal_rule bal = {.do_dbs = do_dbs, .n_do_dbs = 2};
  dmh_route_rule route = {
      .name = "r", .schema_pattern = "Upper_DB*", .table_pattern = "T_*", .target_schema = "u"};
  const dmh_route_rule *routes[] = {&route};
  char *ev[] = {"drop table"};
  dmh_filter_rule f = {.name = "f",
                       .schema_pattern = "Upper_DB*",
                       .events = ev,
                       .n_events = 1,
                       .action = DMH_FILTER_IGNORE};
  const dmh_filter_rule *filters[] = {&f};
  dmh_task_instance inst = {.bal = &bal,
                            .routes = routes,
                            .n_routes = 1,
                            .filters = filters,
                            .n_filters = 1,
                            .case_sensitive = true};
  dm_error err;
  dmh_rules *r = dmh_rules_new(&inst, &err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(r);
  static const bal_case cases[] = {
      {"Upper_DB1", "t", true}, {"upper_db1", "t", false}, {"UPPER_DB1", NULL, false},
      {"T1", "t", true},        {"t1", "t", false},
  };
  bal_check(r, "case-sensitive", cases, sizeof cases / sizeof *cases);
  char db[64], tb[64];
  dmh_rules_route(r, "Upper_DB1", "T_1", db, sizeof db, tb, sizeof tb);
  CU_ASSERT_STRING_EQUAL(db, "u");
  dmh_rules_route(r, "upper_db1", "t_1", db, sizeof db, tb, sizeof tb);
  CU_ASSERT_STRING_EQUAL(db, "upper_db1");
  CU_ASSERT_TRUE(dmh_rules_event_ignored(r, "Upper_DB1", "t", "drop table", "DROP TABLE t"));
  CU_ASSERT_FALSE(dmh_rules_event_ignored(r, "upper_db1", "t", "drop table", "DROP TABLE t"));
  dmh_rules_free(r);
}

/* Routes: wildcards compared without regard to case (DM lowers both), a table rule before a
 * schema rule, a schema statement (table NULL or "") by the schema rule. */
static void test_routes_case(void) {
  dmh_route_rule schema_rule = {
      .name = "s", .schema_pattern = "Shop_[a-z][a-z]", .target_schema = "shop"};
  dmh_route_rule table_rule = {.name = "t",
                               .schema_pattern = "Shop_*",
                               .table_pattern = "Orders_?",
                               .target_schema = "shop",
                               .target_table = "orders"};
  const dmh_route_rule *routes[] = {&schema_rule, &table_rule};
  dmh_rules *r = rules_with(NULL, routes, 2);
  static const struct {
    const char *schema, *table, *want_db, *want_table;
  } cases[] = {
      {"shop_eu", "orders_1", "shop", "orders"},
      {"SHOP_EU", "ORDERS_2", "shop", "orders"},
      {"shop_eu", "users", "shop", "users"},
      {"shop_e1", "orders_12", "shop_e1", "orders_12"},
      {"shop_us", "", "shop", ""},
      {"Shop_X1", "Orders_3", "shop", "orders"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char db[64], tb[64];
    dmh_rules_route(r, cases[i].schema, cases[i].table, db, sizeof db, tb, sizeof tb);
    if (strcmp(db, cases[i].want_db) != 0 || strcmp(tb, cases[i].want_table) != 0)
      fprintf(stderr, "\n  route %s.%s: expected %s.%s, got %s.%s\n", cases[i].schema,
              cases[i].table, cases[i].want_db, cases[i].want_table, db, tb);
    CU_ASSERT_STRING_EQUAL(db, cases[i].want_db);
    CU_ASSERT_STRING_EQUAL(tb, cases[i].want_table);
  }
  dmh_rules_free(r);
}

/* DM's (RE2) expressions as POSIX ones: what they match, and what is refused with a reason. */
static void test_regex_dialect(void) {
  static const struct {
    const char *re;
    bool icase;
    const char *subject;
    bool match;
  } cases[] = {
      {"^t[\\d]+", true, "t22", true},
      {"^t[\\d]+", true, "tx", false},
      {"^t[\\d]+", true, "t\\", false}, /* POSIX would read [\\d] as '\\' or 'd' */
      {"^t[\\d]+", true, "td", false},
      {"^\\w+$", true, "a_Z9", true},
      {"^\\w+$", true, "a-b", false},
      {"^a\\sb$", true, "a\tb", true},
      {"^a\\Sb$", true, "a b", false},
      {"^[\\w-]+$", true, "a-b_c", true},
      {"^[^\\s]+$", true, "ab", true},
      {"^[^\\s]+$", true, "a b", false},
      {"^[[:alpha:]]+$", true, "abC", true},
      {"^[[:^digit:]]+$", true, "ab1", false},
      {"^[]a]+$", true, "]a", true},
      {"^[[:x]+$", true, "[:x", true}, /* no ":]": a literal '[' */
      {"^[a-]+$", true, "a-", true},
      {"^[\\^x]$", true, "^", true},
      {"^[\\]\\-]+$", true, "]-", true},
      {"^[^a]$", true, "A", false},
      {"^[^a]$", false, "A", true},
      {"^a.b$", true, "a\nb", false}, /* RE2's '.' stops at a newline */
      {"(?s)^a.b$", true, "a\nb", true},
      {"(?i)^abc$", false, "ABC", true},
      {"^abc$", false, "ABC", false},
      {"^(?:ab|cd)+$", true, "abcd", true},
      {"^(?P<n>x)(?<m>y)$", true, "xy", true},
      {"^a.*?b$", true, "axxb", true},
      {"^a+?$", true, "aaa", true},
      {"^x{2}$", true, "xx", true},
      {"^x{2,}?$", true, "xxx", true},
      {"^a{$", true, "a{", true},
      {"^a}$", true, "a}", true},
      {"\\Qa.b\\E$", true, "a.b", true},
      {"\\Qa.b\\E$", true, "axb", false},
      {"\\Ax\\z", true, "x", true},
      {"^\\x41\\.$", true, "a.", true},
      {"^a\\tb$", true, "a\tb", true},
      {"^\\$\\(\\)$", true, "$()", true},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    regex_t re;
    char why[400] = "";
    int rc = dmh_regex_compile(&re, cases[i].re, cases[i].icase, why, sizeof why);
    if (rc != 0) {
      fprintf(stderr, "\n  regex %s refused: %s\n", cases[i].re, why);
      CU_FAIL("a supported expression was refused");
      continue;
    }
    bool got = regexec(&re, cases[i].subject, 0, NULL, 0) == 0;
    if (got != cases[i].match)
      fprintf(stderr, "\n  regex %s on \"%s\": expected %d, got %d\n", cases[i].re,
              cases[i].subject, cases[i].match, got);
    CU_ASSERT_EQUAL(got, cases[i].match);
    regfree(&re);
  }
  static const struct {
    const char *re, *why;
  } refused[] = {
      {"\\bword", "word boundary"},
      {"a\\B", "word boundary"},
      {"(?=x)", "lookaround"},
      {"a(?<!x)", "lookaround"},
      {"a(?i)b", "flags"},
      {"(?m)^a", "flags"},
      {"\\pL", "Unicode"},
      {"\\p{Greek}", "Unicode"},
      {"(a)\\1", "back-references"},
      {"[é]", "non-ASCII"},
      {"t[0-9", "without its ']'"},
      {"[z-a]", "before its start"},
      {"[[:nope:]]", "unknown class"},
      {"a\\", "trailing backslash"},
      {"\\x{e9}", "above 0x7F"},
      {"(unclosed", "invalid"},
      {"\\q", "unknown escape"},
  };
  for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
    regex_t re;
    char why[400] = "";
    int rc = dmh_regex_compile(&re, refused[i].re, true, why, sizeof why);
    CU_ASSERT_EQUAL(rc, -1);
    if (rc == 0) {
      fprintf(stderr, "\n  regex %s accepted\n", refused[i].re);
      regfree(&re);
      continue;
    }
    if (!strstr(why, refused[i].why))
      fprintf(stderr, "\n  regex %s: \"%s\" lacks \"%s\"\n", refused[i].re, why, refused[i].why);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, refused[i].why));
  }
}

/* The extract values (DM's extractVal) and the shadow rules' group 1: "(?:" is written as a POSIX
 * group, so counting POSIX groups would take "new" for group 2 of the default shadow rule and cut
 * "eu" + "new" for an extract. */
static void test_regex_groups(void) {
  static const struct {
    const char *re, *subject, *extract; /* extract NULL: does not match ("") */
    size_t k;
    const char *group; /* group k; NULL: -1 */
  } cases[] = {
      {"orders_(.*)", "orders_01", "01", 1, "01"},
      {"orders_(.*)", "customers", NULL, 1, NULL},
      {"(.*)", "eu", "eu", 1, "eu"},
      {"shop_(?:x|y)_(.*)", "shop_x_01", "01", 1, "01"},
      {"^_(.+)_(?:new|gho)$", "_orders_gho", "orders", 1, "orders"},
      {"^_(.+)_(?:new|gho)$", "_orders_new", "orders", 2, NULL},
      {"^_(.+)_(?:ghc|del|old)$", "_t_20240101_del", "t_20240101", 1, "t_20240101"},
      {"^(?P<s>[a-z]+)_(?:[0-9]+)_(?<n>[0-9]+)$", "eu_7_12", "eu12", 2, "12"},
      {"^(a)|(b)$", "b", "b", 1, ""},     /* group 1 took no part */
      {"^t_[0-9]+$", "t_1", "", 1, NULL}, /* no group: "", as DM */
      {"(?i)^SHOP_(\\d+)$", "shop_12", "12", 1, "12"},
      {"^((x)(?:y)(z))$", "xyz", "xyzxz", 3, "z"}, /* nested: every group, in opening order */
      {"\\(([a-z])\\)", "f(q)", "q", 1, "q"},      /* escaped parentheses are no groups */
      {"[(]([a-z])[)]", "f(q)", "q", 1, "q"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    dmh_regex rx;
    char why[400] = "", out[64];
    if (dmh_regex_compile_groups(&rx, cases[i].re, false, why, sizeof why) != 0) {
      fprintf(stderr, "\n  regex %s refused: %s\n", cases[i].re, why);
      CU_FAIL("a supported expression was refused");
      continue;
    }
    const char *want = cases[i].extract ? cases[i].extract : "";
    size_t n = dmh_regex_extract(&rx, cases[i].subject, out, sizeof out);
    if (strcmp(out, want) != 0 || n != strlen(want))
      fprintf(stderr, "\n  extract %s on \"%s\": \"%s\" (%zu), expected \"%s\"\n", cases[i].re,
              cases[i].subject, out, n, want);
    CU_ASSERT_STRING_EQUAL(out, want);
    CU_ASSERT_EQUAL(n, strlen(want));
    long g = dmh_regex_group(&rx, cases[i].subject, cases[i].k, out, sizeof out);
    if (cases[i].group) {
      CU_ASSERT_EQUAL(g, (long)strlen(cases[i].group));
      CU_ASSERT_STRING_EQUAL(out, cases[i].group);
    } else {
      CU_ASSERT_EQUAL(g, -1);
    }
    CU_ASSERT_EQUAL(dmh_regex_matches(&rx, cases[i].subject), cases[i].extract != NULL);
    dmh_regex_free(&rx);
    dmh_regex_free(&rx); /* twice is safe */
  }

  /* A short buffer: cut and terminated, the full length returned. */
  dmh_regex rx;
  char why[400], out[4];
  CU_ASSERT_EQUAL(dmh_regex_compile_groups(&rx, "^(.*)_(.*)$", false, why, sizeof why), 0);
  CU_ASSERT_EQUAL(dmh_regex_extract(&rx, "abcd_efgh", out, sizeof out), 8);
  CU_ASSERT_STRING_EQUAL(out, "abc");
  CU_ASSERT_EQUAL(dmh_regex_group(&rx, "abcd_efgh", 2, out, sizeof out), 4);
  CU_ASSERT_STRING_EQUAL(out, "efg");
  dmh_regex_free(&rx);

  /* Many groups: the match slots leave the stack. */
  char many[200] = "^";
  for (int i = 0; i < 20; i++)
    strcat(many, "(?:(x))");
  CU_ASSERT_EQUAL(dmh_regex_compile_groups(&rx, many, false, why, sizeof why), 0);
  CU_ASSERT_EQUAL(rx.n_capture, 20);
  char big[64];
  CU_ASSERT_EQUAL(dmh_regex_extract(&rx, "xxxxxxxxxxxxxxxxxxxxy", big, sizeof big), 20);
  CU_ASSERT_EQUAL(dmh_regex_group(&rx, "xxxxxxxxxxxxxxxxxxxx", 20, big, sizeof big), 1);
  dmh_regex_free(&rx);

  /* Case: as asked, or by a leading (?i). */
  CU_ASSERT_EQUAL(dmh_regex_compile_groups(&rx, "^shop_(.*)$", true, why, sizeof why), 0);
  CU_ASSERT_EQUAL(dmh_regex_extract(&rx, "SHOP_EU", big, sizeof big), 2);
  dmh_regex_free(&rx);

  /* Non-greedy quantifiers would change a group's value (POSIX has none): refused here only. */
  static const char *const nongreedy[] = {"^(.*?)_", "a+?(b)",
                                          "(a?"
                                          "?)",
                                          "x{1,3}?(y)"};
  for (size_t i = 0; i < sizeof nongreedy / sizeof *nongreedy; i++) {
    why[0] = '\0';
    CU_ASSERT_EQUAL(dmh_regex_compile_groups(&rx, nongreedy[i], false, why, sizeof why), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "non-greedy"));
    CU_ASSERT_FALSE(rx.compiled);
    regex_t re;
    CU_ASSERT_EQUAL(dmh_regex_compile(&re, nongreedy[i], false, why, sizeof why), 0);
    regfree(&re);
  }
  /* What the plain compile refuses is refused the same way. */
  CU_ASSERT_EQUAL(dmh_regex_compile_groups(&rx, "(?=x)(a)", false, why, sizeof why), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(why, "lookaround"));
  CU_ASSERT_EQUAL(dmh_regex_compile_groups(&rx, "(unclosed", false, why, sizeof why), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(why, "invalid"));
}

static void test_bad_regex(void) {
  char *do_dbs[] = {"~([a-"};
  dmh_bal_rule bal = {.do_dbs = do_dbs, .n_do_dbs = 1};
  dmh_task_instance inst = {.bal = &bal};
  dm_error err;
  CU_ASSERT_PTR_NULL(dmh_rules_new(&inst, &err));
  CU_ASSERT_EQUAL(err.code, DM_ERR_CONFIG_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "~([a-"));
}

static void test_wildcards(void) {
  CU_ASSERT_TRUE(dmh_wildcard_match("shop_*", "shop_eu", true));
  CU_ASSERT_TRUE(dmh_wildcard_match("shop_*", "shop_", true));
  CU_ASSERT_FALSE(dmh_wildcard_match("shop_*", "shop", true));
  CU_ASSERT_TRUE(dmh_wildcard_match("t?", "t1", true));
  CU_ASSERT_FALSE(dmh_wildcard_match("t?", "t12", true));
  CU_ASSERT_TRUE(dmh_wildcard_match("*_*_x", "a_b_c_x", true));
  CU_ASSERT_TRUE(dmh_wildcard_match("*", "", true));
}

static void test_routes(void) {
  dmh_route_rule schema_rule = {.name = "s", .schema_pattern = "shop_*", .target_schema = "shop"};
  dmh_route_rule table_rule = {.name = "t",
                               .schema_pattern = "shop_*",
                               .table_pattern = "orders_*",
                               .target_schema = "shop",
                               .target_table = "orders"};
  const dmh_route_rule *routes[] = {&schema_rule, &table_rule};
  dmh_rules *r = rules_with(NULL, routes, 2);
  char db[64], tb[64];
  dmh_rules_route(r, "shop_eu", "orders_2024", db, sizeof db, tb, sizeof tb);
  CU_ASSERT_STRING_EQUAL(db, "shop"); /* the table rule wins though listed second */
  CU_ASSERT_STRING_EQUAL(tb, "orders");
  dmh_rules_route(r, "shop_eu", "users", db, sizeof db, tb, sizeof tb);
  CU_ASSERT_STRING_EQUAL(db, "shop");
  CU_ASSERT_STRING_EQUAL(tb, "users");
  dmh_rules_route(r, "blog", "posts", db, sizeof db, tb, sizeof tb);
  CU_ASSERT_STRING_EQUAL(db, "blog");
  CU_ASSERT_STRING_EQUAL(tb, "posts");
  dmh_rules_route(r, "shop_us", NULL, db, sizeof db, NULL, 0);
  CU_ASSERT_STRING_EQUAL(db, "shop");
  dmh_rules_free(r);
}

/* The extract columns (DM's FetchExtendColumn): the route routing picks, its groups in DM's order
 * table, schema, source, each value the capture groups of its regexp ("" without a match). */
static void test_route_extract(void) {
  dmh_route_rule schema_rule = {.name = "s",
                                .schema_pattern = "shop_*",
                                .target_schema = "shop",
                                .extract_regexp = {[DMH_EXTRACT_SCHEMA] = "shop_(.*)"},
                                .extract_column = {[DMH_EXTRACT_SCHEMA] = "c_db"}};
  dmh_route_rule table_rule = {
      .name = "t",
      .schema_pattern = "shop_*",
      .table_pattern = "orders_*",
      .target_schema = "shop",
      .target_table = "orders",
      /* given in another order than DM's: the columns still come table, schema, source */
      .extract_regexp = {[DMH_EXTRACT_SOURCE] = "^(?:src-)?(.*)$",
                         [DMH_EXTRACT_SCHEMA] = "shop_(?P<region>[a-z]+)_(\\d+)",
                         [DMH_EXTRACT_TABLE] = "orders_(.*)"},
      .extract_column = {[DMH_EXTRACT_SOURCE] = "c_source",
                         [DMH_EXTRACT_SCHEMA] = "c_schema",
                         [DMH_EXTRACT_TABLE] = "c_table"}};
  dmh_route_rule plain = {.name = "p", .schema_pattern = "blog", .target_schema = "b"};
  const dmh_route_rule *routes[] = {&schema_rule, &table_rule, &plain};
  static dmh_task_instance inst;
  memset(&inst, 0, sizeof inst);
  inst.source_id = "src-eu";
  inst.routes = routes;
  inst.n_routes = 3;
  dm_error err;
  dmh_rules *r = dmh_rules_new(&inst, &err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(r);
  dm_route_extract ex;
  dmh_rules_extract(r, "shop_eu_7", "orders_01", &ex);
  CU_ASSERT_EQUAL_FATAL(ex.n, 3);
  CU_ASSERT_STRING_EQUAL(ex.cols[0].column, "c_table");
  CU_ASSERT_STRING_EQUAL(ex.cols[0].value, "01");
  CU_ASSERT_STRING_EQUAL(ex.cols[1].column, "c_schema");
  CU_ASSERT_STRING_EQUAL(ex.cols[1].value, "eu7"); /* both groups, concatenated */
  CU_ASSERT_STRING_EQUAL(ex.cols[2].column, "c_source");
  CU_ASSERT_STRING_EQUAL(ex.cols[2].value, "eu"); /* (?:src-) is not a group */
  /* a schema that the table regexp's group does not match: "" as DM */
  dmh_rules_extract(r, "shop_x", "orders_02", &ex);
  CU_ASSERT_EQUAL_FATAL(ex.n, 3);
  CU_ASSERT_STRING_EQUAL(ex.cols[1].value, "");
  CU_ASSERT_STRING_EQUAL(ex.cols[0].value, "02");
  /* routed by the schema rule: its one group */
  dmh_rules_extract(r, "shop_us", "users", &ex);
  CU_ASSERT_EQUAL_FATAL(ex.n, 1);
  CU_ASSERT_STRING_EQUAL(ex.cols[0].column, "c_db");
  CU_ASSERT_STRING_EQUAL(ex.cols[0].value, "us");
  /* a route without extract groups, no route, no table: nothing */
  dmh_rules_extract(r, "blog", "posts", &ex);
  CU_ASSERT_EQUAL(ex.n, 0);
  dmh_rules_extract(r, "other", "t", &ex);
  CU_ASSERT_EQUAL(ex.n, 0);
  dmh_rules_extract(r, "shop_eu", NULL, &ex);
  CU_ASSERT_EQUAL(ex.n, 0);
  dmh_rules_extract(NULL, "shop_eu", "orders_1", &ex);
  CU_ASSERT_EQUAL(ex.n, 0);
  dmh_rules_free(r);

  /* a regexp the task file's check would refuse: refused here too, naming the route */
  dmh_route_rule bad = {.name = "bad",
                        .schema_pattern = "s",
                        .target_schema = "t",
                        .extract_regexp = {[DMH_EXTRACT_TABLE] = "(unclosed"},
                        .extract_column = {[DMH_EXTRACT_TABLE] = "c"}};
  const dmh_route_rule *bads[] = {&bad};
  inst.routes = bads;
  inst.n_routes = 1;
  CU_ASSERT_PTR_NULL(dmh_rules_new(&inst, &err));
  CU_ASSERT_EQUAL(err.code, DM_ERR_CONFIG_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "routes.bad"));
}

static void test_wildcard_ranges_and_case(void) {
  CU_ASSERT_TRUE(dmh_wildcard_match("t_[0-9]", "t_7", true));
  CU_ASSERT_FALSE(dmh_wildcard_match("t_[0-9]", "t_x", true));
  CU_ASSERT_TRUE(dmh_wildcard_match("t_[!0-9]", "t_x", true));
  CU_ASSERT_FALSE(dmh_wildcard_match("t_[!0-9]", "t_7", true));
  CU_ASSERT_TRUE(dmh_wildcard_match("t_[ab]*", "t_b_2024", true));
  CU_ASSERT_TRUE(dmh_wildcard_match("a[!]", "a!", true)); /* "[!]" is a literal '!' */
  CU_ASSERT_TRUE(dmh_wildcard_match("a[b", "a[b", true)); /* no ']': a literal '[' */
  CU_ASSERT_FALSE(dmh_wildcard_match("Shop_*", "shop_eu", true));
  CU_ASSERT_TRUE(dmh_wildcard_match("Shop_*", "SHOP_eu", false));
  CU_ASSERT_TRUE(dmh_wildcard_match("t_[A-C]", "T_b", false));
  CU_ASSERT_FALSE(dmh_wildcard_match("t_[A-C]", "t_d", false));
}

/* ---- binlog event filters ---- */

typedef struct filter_case {
  const char *what;
  const char *schema, *table, *event, *sql;
  bool ignored;
} filter_case;

static dmh_rules *rules_with_filters(const dmh_filter_rule **filters, int n) {
  static dmh_task_instance inst;
  memset(&inst, 0, sizeof inst);
  inst.filters = filters;
  inst.n_filters = n;
  dm_error err;
  dmh_rules *r = dmh_rules_new(&inst, &err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(r);
  return r;
}

static void filter_check(const dmh_rules *r, const filter_case *cases, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const filter_case *c = &cases[i];
    bool got = dmh_rules_event_ignored(r, c->schema, c->table, c->event, c->sql);
    if (got != c->ignored)
      fprintf(stderr, "\n  filter case \"%s\": expected %s, got %s\n", c->what,
              c->ignored ? "ignored" : "applied", got ? "ignored" : "applied");
    CU_ASSERT_EQUAL(got, c->ignored);
  }
}

/* One task's filters, as DM's docs use them: ignore drops and truncates of the shop tables,
 * ignore procedures by statement, only the DML of the log schemas, nothing of db_tmp. */
static void test_filters_table(void) {
  char *ev_drop[] = {"truncate table", "drop table"};
  char *sql_proc[] = {"^DROP\\s+PROCEDURE", "^CREATE\\s+PROCEDURE"};
  char *ev_dml[] = {"all dml"};
  char *ev_all[] = {"all"};
  char *ev_none_first[] = {"none", "insert"};
  dmh_filter_rule drop_shop = {.name = "no-drop",
                               .schema_pattern = "shop_*",
                               .table_pattern = "t_*",
                               .events = ev_drop,
                               .n_events = 2,
                               .action = DMH_FILTER_IGNORE};
  dmh_filter_rule procs = {.name = "no-procs",
                           .schema_pattern = "*",
                           .sql_patterns = sql_proc,
                           .n_sql_patterns = 2,
                           .action = DMH_FILTER_IGNORE};
  dmh_filter_rule log_dml = {.name = "log-dml-only",
                             .schema_pattern = "log_?",
                             .events = ev_dml,
                             .n_events = 1,
                             .action = DMH_FILTER_DO};
  dmh_filter_rule tmp_all = {.name = "no-tmp",
                             .schema_pattern = "db_tmp",
                             .events = ev_all,
                             .n_events = 1,
                             .action = DMH_FILTER_IGNORE};
  dmh_filter_rule none_first = {.name = "none-stops",
                                .schema_pattern = "audit",
                                .table_pattern = "*",
                                .events = ev_none_first,
                                .n_events = 2,
                                .action = DMH_FILTER_IGNORE};
  const dmh_filter_rule *filters[] = {&drop_shop, &procs, &log_dml, &tmp_all, &none_first};
  dmh_rules *r = rules_with_filters(filters, 5);
  static const filter_case cases[] = {
      /* Ignore by event, table-level rule, case-insensitive names */
      {"drop of a matching table", "shop_eu", "t_orders", "drop table", "DROP TABLE t_orders",
       true},
      {"names fold case", "SHOP_EU", "T_Orders", "truncate table", "TRUNCATE t_orders", true},
      {"other event on the table", "shop_eu", "t_orders", "insert", NULL, false},
      {"table outside the pattern", "shop_eu", "users", "drop table", "DROP TABLE users", false},
      {"schema outside the pattern", "shop", "t_orders", "drop table", "DROP TABLE t_orders",
       false},
      {"table rule, schema statement", "shop_eu", NULL, "drop database", "DROP DATABASE shop_eu",
       false},
      /* Ignore by sql-pattern (case-insensitive, any schema) */
      {"sql-pattern matches", "blog", NULL, NULL, "drop   procedure p1", true},
      {"sql-pattern is a search, anchored by ^", "blog", NULL, NULL, "CALL x; DROP PROCEDURE p",
       false},
      {"sql-pattern misses", "blog", "posts", "alter table", "ALTER TABLE posts ADD c INT", false},
      {"row change has no statement", "blog", "posts", "delete", NULL, false},
      /* Do rule (schema-level): the events it lists pass, all others are skipped */
      {"Do: dml passes", "log_1", "events", "insert", NULL, false},
      {"Do: ddl skipped", "log_1", "events", "alter table", "ALTER TABLE events ADD c INT", true},
      {"Do: schema statement skipped", "log_1", NULL, "create database", "CREATE DATABASE log_1",
       true},
      {"Do: statement without event name passes", "log_1", NULL, NULL, "CREATE VIEW v AS SELECT 1",
       false},
      {"Do: other schema untouched", "log_12", "events", "alter table", "ALTER TABLE events",
       false},
      /* Schema-level Ignore all */
      {"all: a row change", "db_tmp", "x", "update", NULL, true},
      {"all: a DDL", "db_tmp", "x", "create index", "CREATE INDEX i ON x (a)", true},
      {"all: no event name is judged by sql only", "db_tmp", NULL, NULL,
       "CREATE VIEW v AS SELECT 1", false},
      /* "none" ends the events list before "insert"; "*" reaches schema statements */
      {"none stops the list", "audit", "log", "insert", NULL, false},
      {"table-pattern * and a schema statement", "audit", NULL, "drop database",
       "DROP DATABASE audit", false},
      /* no rule applies */
      {"no rule", "other", "t", "drop table", "DROP TABLE t", false},
  };
  filter_check(r, cases, sizeof cases / sizeof cases[0]);
  dmh_rules_free(r);
}

/* Do with sql-pattern: a statement that does not match is skipped; "all ddl" Ignore rules; an
 * alias from DM ("create schema") and aliases in the filter ("none ddl"). */
static void test_filters_do_sql_and_classes(void) {
  char *sql_alter[] = {"^alter table .* add column"};
  char *ev_ddl[] = {"all ddl"};
  char *ev_none_dml[] = {"none dml", "all"};
  dmh_filter_rule do_alter = {.name = "only-add-column",
                              .schema_pattern = "app",
                              .table_pattern = "users",
                              .sql_patterns = sql_alter,
                              .n_sql_patterns = 1,
                              .action = DMH_FILTER_DO};
  dmh_filter_rule no_ddl = {.name = "no-ddl",
                            .schema_pattern = "ro_*",
                            .events = ev_ddl,
                            .n_events = 1,
                            .action = DMH_FILTER_IGNORE};
  dmh_filter_rule dml_pass = {.name = "dml-pass",
                              .schema_pattern = "mixed",
                              .events = ev_none_dml,
                              .n_events = 2,
                              .action = DMH_FILTER_IGNORE};
  const dmh_filter_rule *filters[] = {&do_alter, &no_ddl, &dml_pass};
  dmh_rules *r = rules_with_filters(filters, 3);
  static const filter_case cases[] = {
      /* the Do rule has no events: any event name fails it (DM's Do with an empty list) */
      {"Do sql: a row change", "app", "users", "insert", NULL, true},
      {"Do sql: statement without name, matching", "app", "users", NULL,
       "ALTER TABLE users ADD COLUMN c INT", false},
      {"Do sql: statement without name, not matching", "app", "users", NULL,
       "ALTER TABLE users DROP COLUMN c", true},
      {"Do sql: other table", "app", "orders", "insert", NULL, false},
      {"all ddl: create schema alias", "ro_1", NULL, "create schema", "CREATE SCHEMA ro_1", true},
      {"all ddl: a row change passes", "ro_1", "t", "delete", NULL, false},
      {"all ddl: NULL event passes", "ro_1", "t", NULL, "FLUSH TABLES", false},
      {"none dml stops the list for dml", "mixed", "t", "insert", NULL, false},
      {"none dml does not stop it for ddl", "mixed", "t", "drop table", "DROP TABLE t", true},
      {"unknown event name is judged by sql only", "ro_1", "t", "frobnicate", "FROB", false},
  };
  filter_check(r, cases, sizeof cases / sizeof cases[0]);
  dmh_rules_free(r);
  /* no filters at all, or no rules object: nothing is skipped */
  r = rules_with_filters(NULL, 0);
  CU_ASSERT_FALSE(dmh_rules_event_ignored(r, "db_tmp", "x", "drop table", "DROP TABLE x"));
  dmh_rules_free(r);
  CU_ASSERT_FALSE(dmh_rules_event_ignored(NULL, "db", "x", "drop table", "DROP TABLE x"));
}

static void test_filters_bad_sql_pattern(void) {
  char *bad[] = {"^ok", "(unclosed"};
  dmh_filter_rule f = {
      .name = "broken", .schema_pattern = "*", .sql_patterns = bad, .n_sql_patterns = 2};
  const dmh_filter_rule *filters[] = {&f};
  dmh_task_instance inst = {.filters = filters, .n_filters = 1};
  dm_error err;
  CU_ASSERT_PTR_NULL(dmh_rules_new(&inst, &err));
  CU_ASSERT_EQUAL(err.code, DM_ERR_CONFIG_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "broken"));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "(unclosed"));
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"system schemas never", test_system_schemas_never},
      {"do-dbs and regex", test_do_dbs_and_regex},
      {"ignore-dbs and ignore-tables", test_ignore_dbs_and_tables},
      {"do-tables", test_do_tables},
      {"block-allow-list wildcards and case", test_bal_wildcards_and_case},
      {"block-allow-list regex classes", test_bal_regex_classes},
      {"case-sensitive", test_case_sensitive},
      {"routes: wildcards and case", test_routes_case},
      {"regex dialect", test_regex_dialect},
      {"regex groups (extract, shadow rules)", test_regex_groups},
      {"bad regex", test_bad_regex},
      {"wildcards", test_wildcards},
      {"routes", test_routes},
      {"wildcard ranges and case", test_wildcard_ranges_and_case},
      {"route extract columns", test_route_extract},
      {"filters: a table of cases", test_filters_table},
      {"filters: Do with sql-pattern, event classes", test_filters_do_sql_and_classes},
      {"filters: bad sql-pattern", test_filters_bad_sql_pattern},
  };
  return dmh_cunit_run("rules", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
