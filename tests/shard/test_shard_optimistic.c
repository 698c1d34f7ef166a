/*
 * One optimistic shard DDL lock (host/core/shard/shard_optimistic.c), pure: what each member's
 * info gets (exec, skip, conflict with its stage and message), automatic resolution when the
 * final structures join (DM's lock.go TrySync), partially dropped columns, the scratch check's
 * result in `after`, unlock -a exec/skip, re-entrance, tables that leave.
 *
 * Structures are written as "col type[!][=default], ..." (see st()).
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_run.h"
#include "shard_optimistic.h"

/* The JSON of "id int!, c varchar(10) =x" (',' between columns; '!' NOT NULL; '=v' a default),
 * plus `extra` (e.g. "\"target\": {...}") inside the object. Static buffers, four in turn. */
static const char *st_extra(const char *spec, const char *extra) {
  static char bufs[4][2048];
  static int turn;
  char *out = bufs[turn++ % 4];
  size_t n = (size_t)snprintf(out, 2048, "{\"columns\":[");
  char copy[512];
  snprintf(copy, sizeof copy, "%s", spec);
  bool first = true;
  for (char *save = NULL, *c = strtok_r(copy, ",", &save); c; c = strtok_r(NULL, ",", &save)) {
    char name[65], type[65], def[65] = "";
    while (*c == ' ')
      c++;
    if (sscanf(c, "%64s %64[^ =!]", name, type) != 2)
      continue;
    const char *d = strchr(c, '=');
    if (d)
      sscanf(d + 1, "%64s", def);
    long long len = -1;
    char *paren = strchr(type, '(');
    if (paren) {
      len = atoll(paren + 1);
      *paren = '\0';
    }
    n += (size_t)snprintf(out + n, 2048 - n,
                          "%s{\"name\":\"%s\",\"type\":\"%s\",\"nullable\":%s%s%s%s",
                          first ? "" : ",", name, type, strchr(c, '!') ? "false" : "true",
                          d ? ",\"default\":\"" : "", d ? def : "", d ? "\"" : "");
    if (len >= 0)
      n += (size_t)snprintf(out + n, 2048 - n, ",\"length\":%lld", len);
    n += (size_t)snprintf(out + n, 2048 - n, "}");
    first = false;
  }
  snprintf(out + n, 2048 - n, "]%s%s}", extra ? "," : "", extra ? extra : "");
  return out;
}

static const char *st(const char *spec) {
  return st_extra(spec, NULL);
}

/* An info of source/db.t with one DDL. */
static int put(dmh_opt_lock *l, const char *source, const char *table, const char *ddl,
               const char *before, const char *after, dmh_opt_result *res) {
  const char *ddls[] = {ddl};
  dm_shard_table t = {"db", table};
  dm_shard_info info = {.target_schema = "db",
                        .target_table = "t",
                        .ddls = ddls,
                        .n_ddls = 1,
                        .tables = &t,
                        .n_tables = 1,
                        .schema = "db",
                        .table = table,
                        .before = before,
                        .after = after};
  int rc = dmh_opt_lock_try_sync(l, source, &info, res);
  if (rc != 0)
    fprintf(stderr, "put %s %s: %s\n", source, table, res->message);
  return rc;
}

/* A lock with members s1 db.t1 and s2 db.t2 (and s3 db.t3 when three). */
static dmh_opt_lock *lock_of(int members) {
  dmh_opt_lock *l = dmh_opt_lock_new("task-`db`.`t`");
  CU_ASSERT_PTR_NOT_NULL_FATAL(l);
  static const char *tables[] = {"t1", "t2", "t3"};
  static const char *sources[] = {"s1", "s2", "s3"};
  for (int i = 0; i < members; i++) {
    dm_shard_table t = {"db", tables[i]};
    CU_ASSERT_EQUAL_FATAL(dmh_opt_lock_set_tables(l, sources[i], &t, 1), 0);
  }
  return l;
}

#define EXPECT(call, verdict_, stage_)                                                             \
  do {                                                                                             \
    dmh_opt_result r_;                                                                             \
    CU_ASSERT_EQUAL_FATAL(call, 0);                                                                \
    if (r_.verdict != (verdict_))                                                                  \
      fprintf(stderr, "line %d: verdict %d (%s)\n", __LINE__, r_.verdict, r_.message);             \
    CU_ASSERT_EQUAL(r_.verdict, verdict_);                                                         \
    CU_ASSERT_EQUAL(r_.stage, stage_);                                                             \
    dmh_opt_result_free(&r_);                                                                      \
  } while (0)

static void test_add_column(void) {
  dmh_opt_lock *l = lock_of(2);
  dmh_opt_result r;
  /* the first shard's ADD COLUMN grows the join: it runs, with the info's DDL */
  CU_ASSERT_EQUAL_FATAL(
      put(l, "s1", "t1", "ALTER TABLE t ADD c INT", st("id int!"), st("id int!, c int"), &r), 0);
  CU_ASSERT_EQUAL(r.verdict, DMH_OPT_EXEC);
  CU_ASSERT_EQUAL_FATAL(r.n_ddls, 1);
  CU_ASSERT_STRING_EQUAL(r.ddls[0], "ALTER TABLE t ADD c INT");
  dmh_opt_result_free(&r);
  size_t remain = 0;
  CU_ASSERT_FALSE(dmh_opt_lock_synced(l, &remain));
  CU_ASSERT_EQUAL(remain, 1); /* t2 has not added it */
  /* the second's: the target has it already */
  EXPECT(put(l, "s2", "t2", "ALTER TABLE t ADD c INT", st("id int!"), st("id int!, c int"), &r_),
         DMH_OPT_SKIP, DMH_OPT_STAGE_NONE);
  CU_ASSERT_TRUE(dmh_opt_lock_synced(l, &remain));
  /* re-entrance: the same info again gets the same answer */
  EXPECT(put(l, "s1", "t1", "ALTER TABLE t ADD c INT", st("id int!"), st("id int!, c int"), &r_),
         DMH_OPT_SKIP, DMH_OPT_STAGE_NONE);
  /* widen a varchar on one shard: runs; the other widening less: skipped */
  EXPECT(put(l, "s1", "t1", "ALTER TABLE t ADD v VARCHAR(10)", st("id int!, c int"),
             st("id int!, c int, v varchar(10)"), &r_),
         DMH_OPT_EXEC, DMH_OPT_STAGE_NONE);
  EXPECT(put(l, "s2", "t2", "ALTER TABLE t ADD v VARCHAR(10)", st("id int!, c int"),
             st("id int!, c int, v varchar(10)"), &r_),
         DMH_OPT_SKIP, DMH_OPT_STAGE_NONE);
  EXPECT(put(l, "s2", "t2", "ALTER TABLE t MODIFY v VARCHAR(32)",
             st("id int!, c int, v varchar(10)"), st("id int!, c int, v varchar(32)"), &r_),
         DMH_OPT_EXEC, DMH_OPT_STAGE_NONE);
  EXPECT(put(l, "s1", "t1", "ALTER TABLE t MODIFY v VARCHAR(20)",
             st("id int!, c int, v varchar(10)"), st("id int!, c int, v varchar(20)"), &r_),
         DMH_OPT_SKIP, DMH_OPT_STAGE_NONE);
  dmh_opt_lock_free(l);
}

/* DROP of a nullable column: skipped until the last member drops it (a partially dropped
 * column); a member that adds it back before then is a conflict (DM's checkAddDropColumn). */
static void test_drop_column(void) {
  dmh_opt_lock *l = lock_of(2);
  const char *with = st("id int!, c int"), *without = st("id int!");
  EXPECT(put(l, "s1", "t1", "ALTER TABLE t ADD c INT", without, with, &r_), DMH_OPT_EXEC,
         DMH_OPT_STAGE_NONE);
  EXPECT(put(l, "s2", "t2", "ALTER TABLE t ADD c INT", without, with, &r_), DMH_OPT_SKIP,
         DMH_OPT_STAGE_NONE);
  EXPECT(put(l, "s1", "t1", "ALTER TABLE t DROP c", with, without, &r_), DMH_OPT_SKIP,
         DMH_OPT_STAGE_NONE);
  dmh_opt_result r;
  CU_ASSERT_EQUAL_FATAL(put(l, "s1", "t1", "ALTER TABLE t ADD c INT", without, with, &r), 0);
  CU_ASSERT_EQUAL(r.verdict, DMH_OPT_CONFLICT);
  CU_ASSERT_EQUAL(r.stage, DMH_OPT_STAGE_DETECTED);
  CU_ASSERT_PTR_NOT_NULL(strstr(r.message, "column `c`"));
  CU_ASSERT_PTR_NOT_NULL(strstr(r.message, "partially dropped"));
  CU_ASSERT_PTR_NOT_NULL(strstr(r.message, "ALTER TABLE t ADD c INT"));
  CU_ASSERT_TRUE(dmh_opt_lock_held(l, "s1", "db", "t1"));
  dmh_opt_result_free(&r);
  /* unlock -a skip: the user keeps the target as it is; s1 has c again */
  EXPECT(dmh_opt_lock_unlock(l, "s1", "db", "t1", DM_SHARD_SKIP, &r_), DMH_OPT_SKIP,
         DMH_OPT_STAGE_UNLOCKED);
  CU_ASSERT_FALSE(dmh_opt_lock_held(l, "s1", "db", "t1"));
  /* both drop it: the last runs, and the column is forgotten: adding it back runs */
  EXPECT(put(l, "s2", "t2", "ALTER TABLE t DROP c", with, without, &r_), DMH_OPT_SKIP,
         DMH_OPT_STAGE_NONE);
  EXPECT(put(l, "s1", "t1", "ALTER TABLE t DROP c", with, without, &r_), DMH_OPT_EXEC,
         DMH_OPT_STAGE_NONE);
  EXPECT(put(l, "s2", "t2", "ALTER TABLE t ADD c INT", without, with, &r_), DMH_OPT_EXEC,
         DMH_OPT_STAGE_NONE);
  dmh_opt_lock_free(l);
}

/* DROP of a NOT NULL column without a default: held (the target could not write its rows) and
 * resolved when the others drop it too: the last DDL runs and the held table is released. */
static void test_drop_not_null_resolves(void) {
  dmh_opt_lock *l = lock_of(3);
  const char *with = st("id int!, c int!"), *without = st("id int!");
  dmh_opt_result r;
  CU_ASSERT_EQUAL_FATAL(put(l, "s1", "t1", "ALTER TABLE t DROP c", with, without, &r), 0);
  CU_ASSERT_EQUAL(r.verdict, DMH_OPT_CONFLICT);
  CU_ASSERT_EQUAL(r.stage, DMH_OPT_STAGE_SKIP_WAIT);
  CU_ASSERT_PTR_NOT_NULL(strstr(r.message, "column `c`"));
  CU_ASSERT_PTR_NOT_NULL(strstr(r.message, "NOT NULL without a default"));
  CU_ASSERT_PTR_NOT_NULL(strstr(r.message, "source s1"));
  dmh_opt_result_free(&r);
  char *js = dmh_opt_lock_json(l);
  CU_ASSERT_PTR_NOT_NULL_FATAL(js);
  CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"stage\":\"skip and wait for redirect\""));
  CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"mode\":\"optimistic\""));
  CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"synced\":false"));
  free(js);
  EXPECT(put(l, "s2", "t2", "ALTER TABLE t DROP c", with, without, &r_), DMH_OPT_CONFLICT,
         DMH_OPT_STAGE_SKIP_WAIT);
  /* the others go on meanwhile: a compatible DDL of t3 runs */
  const char *with_d = st("id int!, c int!, d int"), *without_d = st("id int!, d int");
  EXPECT(put(l, "s3", "t3", "ALTER TABLE t ADD d INT", with, with_d, &r_), DMH_OPT_EXEC,
         DMH_OPT_STAGE_NONE);
  CU_ASSERT_TRUE(dmh_opt_lock_held(l, "s1", "db", "t1"));
  /* t3 drops c too: every final structure joins, the last DROP runs, both held are released */
  CU_ASSERT_EQUAL_FATAL(put(l, "s3", "t3", "ALTER TABLE t DROP c", with_d, without_d, &r), 0);
  CU_ASSERT_EQUAL(r.verdict, DMH_OPT_EXEC);
  CU_ASSERT_EQUAL_FATAL(r.n_released, 2);
  CU_ASSERT_STRING_EQUAL(r.released[0].source, "s1");
  CU_ASSERT_STRING_EQUAL(r.released[1].table, "t2");
  dmh_opt_result_free(&r);
  CU_ASSERT_FALSE(dmh_opt_lock_held(l, "s1", "db", "t1"));
  size_t remain = 0; /* t1 and t2 have not added d: the lock is not synced (DM's remain) */
  CU_ASSERT_FALSE(dmh_opt_lock_synced(l, &remain));
  CU_ASSERT_EQUAL(remain, 2);
  dmh_opt_lock_free(l);
}

/* The same held DROP released by hand: unlock -a exec hands the held DDL out to run. */
static void test_unlock_exec(void) {
  dmh_opt_lock *l = lock_of(2);
  const char *with = st("id int!, c int!"), *without = st("id int!");
  EXPECT(put(l, "s1", "t1", "ALTER TABLE t DROP c", with, without, &r_), DMH_OPT_CONFLICT,
         DMH_OPT_STAGE_SKIP_WAIT);
  dmh_opt_result r;
  CU_ASSERT_EQUAL(dmh_opt_lock_unlock(l, "s2", "db", "t2", DM_SHARD_EXEC, &r), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(r.message, "not held"));
  CU_ASSERT_EQUAL(dmh_opt_lock_unlock(l, "s9", "db", "t2", DM_SHARD_EXEC, &r), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(r.message, "has no table"));
  CU_ASSERT_EQUAL_FATAL(dmh_opt_lock_unlock(l, "s1", "db", "t1", DM_SHARD_EXEC, &r), 0);
  CU_ASSERT_EQUAL(r.verdict, DMH_OPT_EXEC);
  CU_ASSERT_EQUAL(r.stage, DMH_OPT_STAGE_UNLOCKED);
  CU_ASSERT_EQUAL_FATAL(r.n_ddls, 1);
  CU_ASSERT_STRING_EQUAL(r.ddls[0], "ALTER TABLE t DROP c");
  dmh_opt_result_free(&r);
  CU_ASSERT_FALSE(dmh_opt_lock_held(l, "s1", "db", "t1"));
  char *js = dmh_opt_lock_json(l);
  CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"stage\":\"unlocked\""));
  free(js);
  dmh_opt_lock_free(l);
}

/* RENAME COLUMN (before and after do not compare): held until the other renames too. */
static void test_rename_resolves(void) {
  dmh_opt_lock *l = lock_of(2);
  const char *a = st("id int!, a int"), *b = st("id int!, b int");
  dmh_opt_result r;
  CU_ASSERT_EQUAL_FATAL(put(l, "s2", "t2", "ALTER TABLE t RENAME COLUMN a TO b", a, b, &r), 0);
  CU_ASSERT_EQUAL(r.verdict, DMH_OPT_CONFLICT);
  CU_ASSERT_EQUAL(r.stage, DMH_OPT_STAGE_SKIP_WAIT);
  CU_ASSERT_PTR_NOT_NULL(strstr(r.message, "RENAME COLUMN a TO b"));
  dmh_opt_result_free(&r);
  CU_ASSERT_EQUAL_FATAL(put(l, "s1", "t1", "ALTER TABLE t RENAME COLUMN a TO b", a, b, &r), 0);
  CU_ASSERT_EQUAL(r.verdict, DMH_OPT_EXEC);
  CU_ASSERT_EQUAL(r.n_released, 1);
  dmh_opt_result_free(&r);
  CU_ASSERT_TRUE(dmh_opt_lock_synced(l, NULL));
  dmh_opt_lock_free(l);
}

/* Conflicts only a user resolves ("detected"): different defaults, a type that does not join
 * while a held table waits for the other kind, two held tables whose DDLs disagree. */
static void test_detected(void) {
  dmh_opt_lock *l = lock_of(2);
  EXPECT(put(l, "s1", "t1", "ALTER TABLE t ADD c INT DEFAULT 1", st("id int!"),
             st("id int!, c int =1"), &r_),
         DMH_OPT_EXEC, DMH_OPT_STAGE_NONE);
  dmh_opt_result r;
  CU_ASSERT_EQUAL_FATAL(put(l, "s2", "t2", "ALTER TABLE t ADD c INT DEFAULT 2", st("id int!"),
                            st("id int!, c int =2"), &r),
                        0);
  CU_ASSERT_EQUAL(r.verdict, DMH_OPT_CONFLICT);
  CU_ASSERT_EQUAL(r.stage, DMH_OPT_STAGE_DETECTED);
  CU_ASSERT_PTR_NOT_NULL(strstr(r.message, "different definitions") ||
                                 strstr(r.message, "different defaults")
                             ? r.message
                             : NULL);
  dmh_opt_result_free(&r);
  dmh_opt_lock_free(l);

  /* float vs datetime on one shard: held for the other to change alike; the other changes c
   * to bigint instead: the two held DDLs disagree */
  l = lock_of(2);
  EXPECT(put(l, "s1", "t1", "ALTER TABLE t MODIFY c DATETIME", st("id int!, c float"),
             st("id int!, c datetime"), &r_),
         DMH_OPT_CONFLICT, DMH_OPT_STAGE_SKIP_WAIT);
  CU_ASSERT_EQUAL_FATAL(put(l, "s2", "t2", "ALTER TABLE t MODIFY c VARCHAR(20)",
                            st("id int!, c float"), st("id int!, c varchar(20)"), &r),
                        0);
  CU_ASSERT_EQUAL(r.verdict, DMH_OPT_CONFLICT);
  CU_ASSERT_EQUAL(r.stage, DMH_OPT_STAGE_DETECTED);
  CU_ASSERT_PTR_NOT_NULL(strstr(r.message, "another held table"));
  dmh_opt_result_free(&r);
  /* the second shard then makes the same change as the first: resolved, the first released */
  CU_ASSERT_EQUAL_FATAL(put(l, "s2", "t2", "ALTER TABLE t MODIFY c DATETIME",
                            st("id int!, c float"), st("id int!, c datetime"), &r),
                        0);
  CU_ASSERT_EQUAL(r.verdict, DMH_OPT_EXEC);
  CU_ASSERT_EQUAL(r.n_released, 1);
  dmh_opt_result_free(&r);
  dmh_opt_lock_free(l);
}

/* ADD COLUMN NOT NULL without a default: the other shard's rows could not be written; held until
 * the other adds it too. */
static void test_add_not_null(void) {
  dmh_opt_lock *l = lock_of(2);
  dmh_opt_result r;
  CU_ASSERT_EQUAL_FATAL(put(l, "s1", "t1", "ALTER TABLE t ADD c INT NOT NULL", st("id int!"),
                            st("id int!, c int!"), &r),
                        0);
  CU_ASSERT_EQUAL(r.verdict, DMH_OPT_CONFLICT);
  CU_ASSERT_EQUAL(r.stage, DMH_OPT_STAGE_SKIP_WAIT); /* the other may add it alike */
  CU_ASSERT_PTR_NOT_NULL(strstr(r.message, "column `c`"));
  dmh_opt_result_free(&r);
  CU_ASSERT_EQUAL_FATAL(put(l, "s2", "t2", "ALTER TABLE t ADD c INT NOT NULL", st("id int!"),
                            st("id int!, c int!"), &r),
                        0);
  CU_ASSERT_EQUAL(r.verdict, DMH_OPT_EXEC);
  CU_ASSERT_EQUAL(r.n_released, 1);
  dmh_opt_result_free(&r);
  dmh_opt_lock_free(l);
}

/* dmhost's scratch check: the DDL as the target would take it (after's "target") must accept
 * the new join; a refusal there ("target_error") is a conflict too. Skipped infos need none. */
static void test_scratch_check(void) {
  dmh_opt_lock *l = lock_of(2);
  dmh_opt_result r;
  /* the target is wider than the shards and keeps an extract column: passes */
  EXPECT(put(l, "s1", "t1", "ALTER TABLE t ADD c INT", st("id int!"),
             st_extra("id int!, c int",
                      "\"target\":{\"columns\":[{\"name\":\"id\",\"type\":\"bigint\"},"
                      "{\"name\":\"c\",\"type\":\"int\",\"nullable\":true},"
                      "{\"name\":\"c_table\",\"type\":\"varchar\",\"length\":64}]}"),
             &r_),
         DMH_OPT_EXEC, DMH_OPT_STAGE_NONE);
  /* the target would get c as tinyint: it cannot take the join's int */
  CU_ASSERT_EQUAL_FATAL(put(l, "s2", "t2", "ALTER TABLE t ADD d INT", st("id int!, c int"),
                            st_extra("id int!, c int, d int",
                                     "\"target\":{\"columns\":[{\"name\":\"id\",\"type\":\"int\"},"
                                     "{\"name\":\"c\",\"type\":\"tinyint\",\"nullable\":true},"
                                     "{\"name\":\"d\",\"type\":\"int\",\"nullable\":true}]}"),
                            &r),
                        0);
  CU_ASSERT_EQUAL(r.verdict, DMH_OPT_CONFLICT);
  CU_ASSERT_EQUAL(r.stage, DMH_OPT_STAGE_DETECTED);
  CU_ASSERT_PTR_NOT_NULL(strstr(r.message, "column `c`: the target would be tinyint"));
  dmh_opt_result_free(&r);
  /* the held table went back to its before: the join did not change */
  char *js = dmh_opt_lock_json(l);
  CU_ASSERT_PTR_NULL(strstr(js, "\"name\":\"d\""));
  free(js);
  dmh_opt_lock_free(l);

  l = lock_of(2);
  CU_ASSERT_EQUAL_FATAL(
      put(l, "s1", "t1", "ALTER TABLE t ADD c INT AFTER x", st("id int!"),
          st_extra("id int!, c int", "\"target_error\":\"Unknown column 'x' in 't'\""), &r),
      0);
  CU_ASSERT_EQUAL(r.verdict, DMH_OPT_CONFLICT);
  CU_ASSERT_PTR_NOT_NULL(strstr(r.message, "Unknown column 'x'"));
  dmh_opt_result_free(&r);
  /* a skipped info's refusal is ignored (the second ADD COLUMN fails on the target: it has c) */
  EXPECT(put(l, "s2", "t2", "ALTER TABLE t ADD c INT", st("id int!"), st("id int!, c int"), &r_),
         DMH_OPT_EXEC, DMH_OPT_STAGE_NONE);
  EXPECT(put(l, "s1", "t1", "ALTER TABLE t ADD c INT", st("id int!"),
             st_extra("id int!, c int", "\"target_error\":\"Duplicate column name 'c'\""), &r_),
         DMH_OPT_SKIP, DMH_OPT_STAGE_NONE);
  dmh_opt_lock_free(l);
}

/* Tables that leave (DROP TABLE: set_tables without them) no longer count; a bad structure is
 * an error naming the table. */
static void test_leave_and_errors(void) {
  dmh_opt_lock *l = lock_of(2);
  EXPECT(put(l, "s1", "t1", "ALTER TABLE t ADD c INT", st("id int!"), st("id int!, c int"), &r_),
         DMH_OPT_EXEC, DMH_OPT_STAGE_NONE);
  CU_ASSERT_FALSE(dmh_opt_lock_synced(l, NULL));
  CU_ASSERT_EQUAL(dmh_opt_lock_set_tables(l, "s2", NULL, 0), 0);
  CU_ASSERT_TRUE(dmh_opt_lock_synced(l, NULL));
  dmh_opt_result r;
  CU_ASSERT_EQUAL(put(l, "s1", "t1", "ALTER TABLE t ADD d INT", "{", st("id int!"), &r), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(r.message, "before of `db`.`t1`"));
  CU_ASSERT_STRING_EQUAL(dmh_opt_lock_id(l), "task-`db`.`t`");
  dmh_opt_lock_free(l);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"add_column", test_add_column},
      {"drop_column", test_drop_column},
      {"drop_not_null_resolves", test_drop_not_null_resolves},
      {"unlock_exec", test_unlock_exec},
      {"rename_resolves", test_rename_resolves},
      {"detected", test_detected},
      {"add_not_null", test_add_not_null},
      {"scratch_check", test_scratch_check},
      {"leave_and_errors", test_leave_and_errors},
  };
  return dmh_cunit_run("shard_optimistic", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
