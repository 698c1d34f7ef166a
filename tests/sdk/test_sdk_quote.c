/*
 * Identifier quoting of the SDK (dm_db_quote_ident, dm_db_quoted, dm_db_quote_ident_dup in
 * dmhost/db.h). Issue 13, item 2: the load, the dump and the sync each had their own copy; the
 * load's truncated a name that did not fit its buffer (and so named another object). One copy now,
 * tested here: plain names, backticks doubled, multibyte characters kept whole, nothing partial.
 */
#include <CUnit/Basic.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_run.h"
#include "dmhost/db.h"

static void test_quote_table(void) {
  static const struct {
    const char *name, *quoted;
  } cases[] = {
      {"t", "`t`"},
      {"", "``"},
      {"a`b", "`a``b`"},
      {"`", "````"},
      {"``x``", "`````x`````"},
      {"we.ird name", "`we.ird name`"},
      {"'\"\\;--", "`'\"\\;--`"},
      /* multibyte: UTF-8 bytes kept as they are, no byte of a multibyte character is a backtick */
      {"t\xc3\xa9st", "`t\xc3\xa9st`"},                              /* é */
      {"\xe8\xa1\xa8`\xe5\x90\x8d", "`\xe8\xa1\xa8``\xe5\x90\x8d`"}, /* 表`名 */
      {"\xf0\x9f\x98\x80", "`\xf0\x9f\x98\x80`"},                    /* an emoji, 4 bytes */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char out[64];
    size_t n = dm_db_quote_ident(out, sizeof out, cases[i].name, strlen(cases[i].name));
    CU_ASSERT_EQUAL(n, strlen(cases[i].quoted));
    CU_ASSERT_STRING_EQUAL(out, cases[i].quoted);
    char out2[64];
    CU_ASSERT_PTR_EQUAL(dm_db_quoted(cases[i].name, out2, sizeof out2), out2);
    CU_ASSERT_STRING_EQUAL(out2, cases[i].quoted);
    char *d = dm_db_quote_ident_dup(cases[i].name);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    CU_ASSERT_STRING_EQUAL(d, cases[i].quoted);
    free(d);
    /* measuring alone */
    CU_ASSERT_EQUAL(dm_db_quote_ident(NULL, 0, cases[i].name, strlen(cases[i].name)), n);
  }
}

/* A name with len bytes (not NUL-terminated there) is quoted up to len. */
static void test_quote_len(void) {
  char out[16];
  CU_ASSERT_EQUAL(dm_db_quote_ident(out, sizeof out, "ab`cd", 3), 6);
  CU_ASSERT_STRING_EQUAL(out, "`ab```");
}

/* Never a partial name: exactly enough room, one byte short, none. */
static void test_quote_no_truncation(void) {
  char out[8];
  memset(out, 'x', sizeof out);
  /* "`a``b`" is 6 bytes + NUL = 7 */
  CU_ASSERT_EQUAL(dm_db_quote_ident(out, 7, "a`b", 3), 6);
  CU_ASSERT_STRING_EQUAL(out, "`a``b`");
  memset(out, 'x', sizeof out);
  CU_ASSERT_EQUAL(dm_db_quote_ident(out, 6, "a`b", 3), 6);
  CU_ASSERT_STRING_EQUAL(out, "");
  CU_ASSERT_STRING_EQUAL(dm_db_quoted("a`b", out, 6), "");
  /* the largest identifier the server accepts fits DM_DB_QUOTED_IDENT_MAX: 64 characters of 4
   * bytes (here, worse, 256 backticks) */
  char name[257], big[DM_DB_QUOTED_IDENT_MAX];
  memset(name, '`', 256);
  name[256] = '\0';
  CU_ASSERT_EQUAL(dm_db_quote_ident(big, sizeof big, name, 256), 514);
  CU_ASSERT_EQUAL(strlen(big), 514);
  CU_ASSERT(big[0] == '`' && big[513] == '`');
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"quoted names: plain, backticks, multibyte", test_quote_table},
      {"a name of len bytes", test_quote_len},
      {"never a truncated name", test_quote_no_truncation},
  };
  return dmh_cunit_run("sdk_quote", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
