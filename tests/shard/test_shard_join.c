/*
 * The join of shard table structures (host/core/shard/shard_join.c), pure: the JSON form, the
 * order of DM's RFC (dm/docs/RFCS/20191209_optimistic_ddl.md) as a table of pairs, the RFC's
 * examples as a member's before/after against the join of the others, partially dropped columns.
 *
 * Structures are written in a short form that spec() turns into the JSON of shard_join.h:
 * columns "name type[(len[,scale])] [unsigned] [@charset] [!] [=default]" separated by ';'
 * ('!' is NOT NULL; enum/set members as "enum(a|b)"), and indexes "#name(col,col)" ("#!name"
 * unique).
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_run.h"
#include "shard_join.h"

/* The JSON of a short form (see the header). A static buffer: one spec at a time per call. */
static char *spec_json(const char *spec, char *out, size_t len) {
  size_t n = (size_t)snprintf(out, len, "{\"columns\":[");
  char idx[1024] = "";
  size_t ni = 0;
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", spec);
  bool first = true;
  for (char *save = NULL, *item = strtok_r(buf, ";", &save); item;
       item = strtok_r(NULL, ";", &save)) {
    while (*item == ' ')
      item++;
    if (!*item)
      continue;
    if (*item == '#') {
      bool uniq = item[1] == '!';
      char *name = item + 1 + uniq, *open = strchr(name, '('), *close = strrchr(name, ')');
      *open = '\0';
      *close = '\0';
      ni += (size_t)snprintf(idx + ni, sizeof idx - ni,
                             "%s{\"name\":\"%s\",\"unique\":%s,\"columns\":[", ni ? "," : "", name,
                             uniq ? "true" : "false");
      bool f = true;
      for (char *s2 = NULL, *c = strtok_r(open + 1, ",", &s2); c; c = strtok_r(NULL, ",", &s2)) {
        ni += (size_t)snprintf(idx + ni, sizeof idx - ni, "%s\"%s\"", f ? "" : ",", c);
        f = false;
      }
      ni += (size_t)snprintf(idx + ni, sizeof idx - ni, "]}");
      continue;
    }
    char name[65], type[256];
    int used = 0;
    sscanf(item, "%64s %255s%n", name, type, &used);
    const char *rest = item + used;
    bool not_null = strchr(rest, '!') != NULL;
    if (type[strlen(type) - 1] == '!') {
      type[strlen(type) - 1] = '\0';
      not_null = true;
    }
    char members[256] = "";
    long long length = -1, scale = -1;
    char *paren = strchr(type, '(');
    if (paren) {
      *paren = '\0';
      if (strcmp(type, "enum") == 0 || strcmp(type, "set") == 0) {
        size_t m = 0;
        char *body = paren + 1;
        body[strcspn(body, ")")] = '\0';
        for (char *s3 = NULL, *v = strtok_r(body, "|", &s3); v; v = strtok_r(NULL, "|", &s3))
          m += (size_t)snprintf(members + m, sizeof members - m, "%s\"%s\"", m ? "," : "", v);
      } else if (sscanf(paren + 1, "%lld,%lld", &length, &scale) < 1)
        length = -1;
    }
    const char *cs = strchr(rest, '@'), *def = strchr(rest, '=');
    char charset[40] = "", defv[64] = "";
    if (cs)
      sscanf(cs + 1, "%39[^ !=]", charset);
    if (def)
      sscanf(def + 1, "%63s", defv);
    n += (size_t)snprintf(out + n, len - n,
                          "%s{\"name\":\"%s\",\"type\":\"%s\",\"unsigned\":%s,\"nullable\":%s",
                          first ? "" : ",", name, type, strstr(rest, "unsigned") ? "true" : "false",
                          not_null ? "false" : "true");
    if (length >= 0)
      n += (size_t)snprintf(out + n, len - n, ",\"length\":%lld", length);
    if (scale >= 0)
      n += (size_t)snprintf(out + n, len - n, ",\"scale\":%lld", scale);
    if (charset[0])
      n += (size_t)snprintf(out + n, len - n, ",\"charset\":\"%s\"", charset);
    if (def)
      n += (size_t)snprintf(out + n, len - n, ",\"default\":\"%s\"", defv);
    if (members[0])
      n += (size_t)snprintf(out + n, len - n, ",\"members\":[%s]", members);
    n += (size_t)snprintf(out + n, len - n, "}");
    first = false;
  }
  snprintf(out + n, len - n, "],\"indexes\":[%s]}", idx);
  return out;
}

static void spec(const char *s, dmh_sj_table *t) {
  char json[4096], why[DMH_SJ_WHY_MAX] = "";
  spec_json(s, json, sizeof json);
  int rc = dmh_sj_table_from_json(json, t, why, sizeof why);
  if (rc != 0)
    fprintf(stderr, "spec %s: %s\n", s, why);
  CU_ASSERT_EQUAL_FATAL(rc, 0);
}

/* ---- the order, pair by pair ---------------------------------------------------------------- */

typedef struct join_case {
  const char *what;
  const char *a, *b;
  const char *joined;   /* NULL: a conflict */
  const char *conflict; /* a part of the message */
} join_case;

static const join_case join_cases[] = {
    {"same", "id int!; c varchar(10)", "id int!; c varchar(10)", "id int!; c varchar(10)", NULL},
    {"NULL above NOT NULL", "c int!", "c int", "c int", NULL},
    {"default above none", "c int!", "c int! =0", "c int! =0", NULL},
    {"different defaults", "c int =0", "c int =1", NULL, "different defaults"},
    {"integer widths", "c tinyint!", "c bigint!", "c bigint!", NULL},
    {"int and mediumint", "c int!", "c mediumint!", "c int!", NULL},
    {"signedness", "c int unsigned!", "c bigint!", NULL, "signedness"},
    {"char < varchar", "c char(10)", "c varchar(10)", "c varchar(10)", NULL},
    {"char(20) varchar(10)", "c char(20)", "c varchar(10)", "c varchar(20)", NULL},
    {"widen varchar", "c varchar(10)", "c varchar(32)", "c varchar(32)", NULL},
    {"binary < varbinary", "c binary(4)", "c varbinary(8)", "c varbinary(8)", NULL},
    {"text sizes", "c text", "c mediumtext", "c mediumtext", NULL},
    {"char and text", "c varchar(10)", "c text", NULL, "different kinds"},
    {"utf8 < utf8mb4", "c varchar(10) @utf8", "c varchar(10) @utf8mb4", "c varchar(10) @utf8mb4",
     NULL},
    {"utf8mb3 is utf8", "c varchar(10) @utf8mb3", "c varchar(10) @utf8", "c varchar(10) @utf8mb3",
     NULL},
    {"latin1 and utf8mb4", "c varchar(10) @latin1", "c varchar(10) @utf8mb4", NULL,
     "character sets"},
    {"ENUM appended", "c enum(a|b)", "c enum(a|b|c)", "c enum(a|b|c)", NULL},
    {"ENUM reordered", "c enum(a|b)", "c enum(b|a)", NULL, "appending"},
    {"SET appended", "c set(x)", "c set(x|y)", "c set(x|y)", NULL},
    {"float vs datetime", "c float", "c datetime", NULL, "different kinds"},
    {"datetime precision", "c datetime(0,0)", "c datetime(0,3)", NULL, "only with itself"},
    {"decimal only itself", "c decimal(10,2)", "c decimal(12,2)", NULL, "only with itself"},
    {"decimal same", "c decimal(10,2)", "c decimal(10,2)", "c decimal(10,2)", NULL},
    {"json itself", "c json", "c json", "c json", NULL},
    {"missing nullable column", "id int!", "id int!; c int", "id int!; c int", NULL},
    {"missing column with default", "id int!; c int! =5", "id int!", "id int!; c int! =5", NULL},
    {"missing NOT NULL column", "id int!", "id int!; c int!", NULL, "NOT NULL without a default"},
    {"fewer indexes above more", "id int!; #!PRIMARY(id); #k(id)", "id int!; #!PRIMARY(id)",
     "id int!; #!PRIMARY(id)", NULL},
    {"one index, two definitions", "id int!; c int; #k(id)", "id int!; c int; #k(c)",
     "id int!; c int", NULL},
    {"names case-insensitive", "C int", "c bigint", "C bigint", NULL},
};

static void test_join_table(void) {
  for (size_t i = 0; i < sizeof join_cases / sizeof join_cases[0]; i++) {
    const join_case *k = &join_cases[i];
    dmh_sj_table a, b, j, want;
    spec(k->a, &a);
    spec(k->b, &b);
    char why[DMH_SJ_WHY_MAX] = "";
    for (int swap = 0; swap < 2; swap++) { /* the join is commutative */
      int rc = swap ? dmh_sj_join(&b, &a, &j, why, sizeof why)
                    : dmh_sj_join(&a, &b, &j, why, sizeof why);
      if (k->joined) {
        if (rc != 0)
          fprintf(stderr, "case %s: %s\n", k->what, why);
        CU_ASSERT_EQUAL(rc, 0);
        if (rc == 0) {
          spec(k->joined, &want);
          bool eq = dmh_sj_equal(&j, &want);
          if (!eq) {
            char *js = dmh_sj_table_to_json(&j);
            fprintf(stderr, "case %s: joined %s\n", k->what, js);
            free(js);
          }
          CU_ASSERT_TRUE(eq);
          dmh_sj_table_free(&want);
          dmh_sj_table_free(&j);
        }
      } else {
        CU_ASSERT_EQUAL(rc, 1);
        if (!strstr(why, k->conflict) || !strstr(why, "column `"))
          fprintf(stderr, "case %s: message %s\n", k->what, why);
        CU_ASSERT_PTR_NOT_NULL(strstr(why, k->conflict));
      }
    }
    dmh_sj_table_free(&a);
    dmh_sj_table_free(&b);
  }
}

/* ---- the RFC's examples: a member's DDL against the others ----------------------------------- */

/* What the coordinator decides from the join (shard_optimistic.c does it per lock): the
 * structures of the other members, one member's before and after. */
typedef struct rfc_case {
  const char *what;
  const char *others; /* the other members' structure (one or more, '|' between them) */
  const char *before, *after;
  int want; /* 1: the join grows (exec), 0: unchanged (skip), -1: conflict */
  const char *conflict;
} rfc_case;

static const rfc_case rfc_cases[] = {
    {"ADD COLUMN on one of two shards", "id int!", "id int!", "id int!; c int", 1, NULL},
    {"ADD COLUMN on the second shard", "id int!; c int", "id int!", "id int!; c int", 0, NULL},
    {"ADD COLUMN with a default", "id int!", "id int!", "id int!; c varchar(8)! ='x'", 1, NULL},
    {"ADD COLUMN NOT NULL without a default", "id int!", "id int!", "id int!; c int!", -1,
     "NOT NULL without a default"},
    {"DROP nullable column on one", "id int!; c int", "id int!; c int", "id int!", 0, NULL},
    {"DROP on the last shard", "id int!", "id int!; c int", "id int!", 1, NULL},
    {"DROP a NOT NULL column without default", "id int!; c int!", "id int!; c int!", "id int!", -1,
     "NOT NULL without a default"},
    {"widen varchar on one", "id int!; c varchar(10)", "id int!; c varchar(10)",
     "id int!; c varchar(32)", 1, NULL},
    {"widen varchar on the second", "id int!; c varchar(32)", "id int!; c varchar(10)",
     "id int!; c varchar(32)", 0, NULL},
    {"rename conflict", "id int!; a int", "id int!; a int", "id int!; b int", -1,
     "neither table contains the other"},
    {"float vs datetime", "id int!; c float", "id int!; c float", "id int!; c datetime", -1,
     "different kinds"},
    {"different defaults", "id int!; c int =1", "id int!", "id int!; c int =2", -1,
     "different defaults"},
    {"ADD INDEX on one (fewer indexes above more)", "id int!", "id int!", "id int!; #k(id)", 0,
     NULL},
    {"three shards, the third adds", "id int!|id int!", "id int!", "id int!; c int", 1, NULL},
};

/* The decision shard_optimistic.c takes for an info: before and after must compare (else a
 * conflict), the new join must exist (else a conflict), and the join changed or not. */
static int rfc_decide(const rfc_case *k, char *why, size_t why_len) {
  dmh_sj_table before, after, old_join, new_join;
  spec(k->before, &before);
  spec(k->after, &after);
  dmh_sj_table others[4];
  size_t n = 0;
  char buf[512];
  snprintf(buf, sizeof buf, "%s", k->others);
  for (char *save = NULL, *o = strtok_r(buf, "|", &save); o; o = strtok_r(NULL, "|", &save))
    spec(o, &others[n++]);
  const dmh_sj_table *tabs[5];
  for (size_t i = 0; i < n; i++)
    tabs[i] = &others[i];
  int cmp, rc = dmh_sj_compare(&before, &after, &cmp, why, why_len);
  int result = -1;
  if (rc == 0) {
    tabs[n] = &before;
    CU_ASSERT_EQUAL_FATAL(dmh_sj_join_all(tabs, n + 1, &old_join, NULL, why, why_len), 0);
    tabs[n] = &after;
    if (dmh_sj_join_all(tabs, n + 1, &new_join, NULL, why, why_len) == 0) {
      result = dmh_sj_equal(&old_join, &new_join) ? 0 : 1;
      dmh_sj_table_free(&new_join);
    }
    dmh_sj_table_free(&old_join);
  }
  for (size_t i = 0; i < n; i++)
    dmh_sj_table_free(&others[i]);
  dmh_sj_table_free(&before);
  dmh_sj_table_free(&after);
  return result;
}

static void test_rfc_examples(void) {
  for (size_t i = 0; i < sizeof rfc_cases / sizeof rfc_cases[0]; i++) {
    const rfc_case *k = &rfc_cases[i];
    char why[DMH_SJ_WHY_MAX] = "";
    int got = rfc_decide(k, why, sizeof why);
    if (got != k->want || (k->conflict && !strstr(why, k->conflict)))
      fprintf(stderr, "case %s: got %d (%s)\n", k->what, got, why);
    CU_ASSERT_EQUAL(got, k->want);
    if (k->conflict)
      CU_ASSERT_PTR_NOT_NULL(strstr(why, k->conflict));
  }
}

/* ---- the JSON form, compare, join of all, dropped columns ----------------------------------- */

static void test_json_round_trip(void) {
  dmh_sj_table t, back;
  spec("id bigint unsigned!; c varchar(32) @utf8mb4 ='x'; e enum(a|b); d decimal(10,2); "
       "#!PRIMARY(id); #k(c(10),id)",
       &t);
  CU_ASSERT_EQUAL(t.n_cols, 4);
  CU_ASSERT_EQUAL(t.n_idx, 2);
  CU_ASSERT_STRING_EQUAL(t.idx[1].columns, "c(10),id");
  char *js = dmh_sj_table_to_json(&t);
  CU_ASSERT_PTR_NOT_NULL_FATAL(js);
  char why[DMH_SJ_WHY_MAX];
  CU_ASSERT_EQUAL_FATAL(dmh_sj_table_from_json(js, &back, why, sizeof why), 0);
  CU_ASSERT_TRUE(dmh_sj_equal(&t, &back));
  free(js);
  dmh_sj_table_free(&back);
  char text[160];
  dmh_sj_column_text(dmh_sj_column_find(&t, "C"), text, sizeof text);
  CU_ASSERT_STRING_EQUAL(text, "varchar(32) CHARACTER SET utf8mb4 NULL DEFAULT 'x'");
  dmh_sj_table_free(&t);

  static const struct {
    const char *json, *why;
  } bad[] = {
      {"[]", "not a JSON object"},
      {"{\"columns\":[{\"type\":\"int\"}]}", "without a valid \"name\""},
      {"{\"columns\":[{\"name\":\"c\"}]}", "without a valid \"type\""},
      {"{\"columns\":[{\"name\":\"c\",\"type\":\"int\"},{\"name\":\"C\",\"type\":\"int\"}]}",
       "appears twice"},
      {"{\"columns\":[],\"indexes\":[{\"name\":\"k\"}]}", "without \"columns\""},
      {"{\"indexes\":[]}", "without \"columns\""},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    why[0] = '\0';
    CU_ASSERT_EQUAL(dmh_sj_table_from_json(bad[i].json, &t, why, sizeof why), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, bad[i].why));
    CU_ASSERT_EQUAL(t.n_cols, 0);
  }
}

static void test_compare(void) {
  static const struct {
    const char *a, *b;
    int rc, cmp;
  } cases[] = {
      {"c int", "c int", 0, 0},
      {"c int", "c bigint", 0, -1},
      {"c varchar(20)", "c varchar(10)", 0, 1},
      {"a int", "a int; b int", 0, -1},
      {"a int", "b int", 1, 0}, /* a rename: neither contains the other */
      {"c int; d varchar(5)", "c bigint; d varchar(2)", 1, 0},
      {"c float", "c datetime", 1, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    dmh_sj_table a, b;
    spec(cases[i].a, &a);
    spec(cases[i].b, &b);
    int cmp = 99;
    char why[DMH_SJ_WHY_MAX];
    CU_ASSERT_EQUAL(dmh_sj_compare(&a, &b, &cmp, why, sizeof why), cases[i].rc);
    if (cases[i].rc == 0)
      CU_ASSERT_EQUAL(cmp, cases[i].cmp);
    dmh_sj_table_free(&a);
    dmh_sj_table_free(&b);
  }
}

static void test_join_all(void) {
  dmh_sj_table t[3], j;
  spec("id int!; a int", &t[0]);
  spec("id bigint!; b int =1", &t[1]);
  spec("id int!; c float", &t[2]);
  const dmh_sj_table *tabs[] = {&t[0], &t[1], &t[2]};
  char why[DMH_SJ_WHY_MAX];
  size_t bad = 99;
  CU_ASSERT_EQUAL_FATAL(dmh_sj_join_all(tabs, 3, &j, &bad, why, sizeof why), 0);
  dmh_sj_table want;
  spec("id bigint!; a int; b int =1; c float", &want);
  CU_ASSERT_TRUE(dmh_sj_equal(&j, &want));
  dmh_sj_table_free(&want);
  dmh_sj_table_free(&j);
  dmh_sj_table_free(&t[2]);
  spec("id int!; a datetime", &t[2]);
  CU_ASSERT_EQUAL(dmh_sj_join_all(tabs, 3, &j, &bad, why, sizeof why), 1);
  CU_ASSERT_EQUAL(bad, 2);
  CU_ASSERT_PTR_NOT_NULL(strstr(why, "column `a`"));
  for (int i = 0; i < 3; i++)
    dmh_sj_table_free(&t[i]);
}

/* Re-adding a partially dropped column (DM's checkAddDropColumn): shard 1 drops c (the target
 * keeps it for shard 2), then adds it back before shard 2 dropped it: the set says so; once the
 * target dropped c (every member dropped it), the set forgets the column. */
static void test_dropped_columns(void) {
  dmh_sj_dropped d = {0};
  CU_ASSERT_FALSE(dmh_sj_dropped_has(&d, "c", "s1`db`.`t1`"));
  CU_ASSERT_EQUAL(dmh_sj_dropped_add(&d, "c", "s1`db`.`t1`"), 0);
  CU_ASSERT_EQUAL(dmh_sj_dropped_add(&d, "c", "s1`db`.`t1`"), 0); /* once */
  CU_ASSERT_EQUAL(d.n, 1);
  CU_ASSERT_TRUE(dmh_sj_dropped_has(&d, "C", "s1`db`.`t1`"));
  CU_ASSERT_FALSE(dmh_sj_dropped_has(&d, "c", "s2`db`.`t1`"));
  CU_ASSERT_EQUAL(dmh_sj_dropped_add(&d, "c", "s2`db`.`t1`"), 0);
  CU_ASSERT_EQUAL(dmh_sj_dropped_add(&d, "e", "s2`db`.`t1`"), 0);
  dmh_sj_dropped_clear_column(&d, "c");
  CU_ASSERT_FALSE(dmh_sj_dropped_has(&d, "c", "s1`db`.`t1`"));
  CU_ASSERT_TRUE(dmh_sj_dropped_has(&d, "e", "s2`db`.`t1`"));
  dmh_sj_dropped_clear_member(&d, "s2`db`.`t1`");
  CU_ASSERT_EQUAL(d.n, 0);
  dmh_sj_dropped_free(&d);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"join_table", test_join_table},
      {"rfc_examples", test_rfc_examples},
      {"json_round_trip", test_json_round_trip},
      {"compare", test_compare},
      {"join_all", test_join_all},
      {"dropped_columns", test_dropped_columns},
  };
  return dmh_cunit_run("shard_join", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
