/* The dump folder's file names (sdk/src/dump_format.c): plain parts as mydumper writes them,
 * shortened parts for names whose escaped form is too long (issue 9, item 7), and decoding. */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

#include "cunit_run.h"
#include "dmhost/dump_format.h"

static size_t part(const char *name, char *out) {
  return dm_dump_name_part(name, out, DM_DUMP_NAME_PART_MAX + 1);
}

/* A short name is escaped and kept whole, and decodes back. */
static void test_plain(void) {
  static const struct {
    const char *name, *part;
  } rows[] = {
      {"t1", "t1"},
      {"a.b", "a@002eb"},
      {"x@002ey", "x@0040002ey"},
      {"s/l\\a\x01sh", "s@002fl@005ca@0001sh"},
      {"día~", "día~"},
  };
  for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
    char out[DM_DUMP_NAME_PART_MAX + 1], back[256];
    CU_ASSERT_EQUAL(part(rows[i].name, out), strlen(rows[i].part));
    CU_ASSERT_STRING_EQUAL(out, rows[i].part);
    CU_ASSERT_FALSE(dm_dump_name_is_short(out, strlen(out)));
    CU_ASSERT_EQUAL(dm_dump_name_decode(out, strlen(out), back, sizeof back), 0);
    CU_ASSERT_STRING_EQUAL(back, rows[i].name);
  }
}

/* A long one is cut to a prefix (between escapes, between UTF-8 characters), `@~` and the hash:
 * at most DM_DUMP_NAME_PART_MAX bytes, the same every time, another for another name, and it
 * does not decode (its name is read from the file). */
static void test_shortened(void) {
  static const char *const names[] = {
      "................................................................",
      "ééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééé",
      ".é.é.é.é.é.é.é.é.é.é.é.é.é.é.é.é.é.é.é.é.é.é.é.é.é.é.é.é.é.é.éA",
      ".é.é.é.é.é.é.é.é.é.é.é.é.é.é.é.é.é.é.é.é.é.é.é.é.é.é.é.é.é.é.éB",
      "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
      "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
  };
  char prev[DM_DUMP_NAME_PART_MAX + 1] = "";
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    char out[DM_DUMP_NAME_PART_MAX + 1], again[DM_DUMP_NAME_PART_MAX + 1], back[256];
    size_t n = part(names[i], out);
    CU_ASSERT(n > 0 && n <= DM_DUMP_NAME_PART_MAX);
    CU_ASSERT_EQUAL(n, strlen(out));
    CU_ASSERT_TRUE(dm_dump_name_is_short(out, n));
    const char *mark = strstr(out, DM_DUMP_NAME_SHORT_MARK);
    CU_ASSERT_FATAL(mark != NULL);
    CU_ASSERT_EQUAL(strlen(mark), 2 + 16);
    size_t cut = (size_t)(mark - out);
    /* the prefix is the escaped name's own start, cut at a boundary */
    CU_ASSERT((out[cut - 1] & 0xc0) != 0xc0); /* not the lead byte of a cut character */
    CU_ASSERT(cut < 4 || memchr(out + cut - 4, '@', 4) == NULL || out[cut - 5] == '@');
    CU_ASSERT_EQUAL(part(names[i], again), n);
    CU_ASSERT_STRING_EQUAL(again, out);
    CU_ASSERT_STRING_NOT_EQUAL(out, prev);
    CU_ASSERT_EQUAL(dm_dump_name_decode(out, n, back, sizeof back), -1);
    memcpy(prev, out, sizeof prev);
  }
  char small[DM_DUMP_NAME_PART_MAX];
  CU_ASSERT_EQUAL(dm_dump_name_part("t", small, sizeof small), 0);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"plain parts", test_plain},
      {"shortened parts", test_shortened},
  };
  return dmh_cunit_run("sdk dump format", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
