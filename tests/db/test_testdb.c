/*
 * dmh_testdb against the real servers (CTest fixture mariadb): connections and their errors, the
 * accounts scripts/mariadb.sh creates, statements, checksums, and table comparison after copying
 * tests/sql/all-types.sql to the target with mariadb-dump.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cunit_run.h"
#include "testdb.h"

#define DB_BASIC "test_testdb_basic"
#define DB_SUM "test_testdb_sum"
#define DB_TYPES "test_testdb_types"

static MYSQL *src, *dst;

static int suite_init(void) {
  src = testdb_connect(TESTDB_SOURCE);
  dst = testdb_connect(TESTDB_TARGET);
  return src && dst ? 0 : 1;
}

static int suite_clean(void) {
  static const char *const dbs[] = {DB_BASIC, DB_SUM, DB_TYPES};
  for (size_t i = 0; i < sizeof dbs / sizeof dbs[0]; i++) {
    if (src)
      testdb_execf(src, "DROP DATABASE IF EXISTS %s", dbs[i]);
    if (dst)
      testdb_execf(dst, "DROP DATABASE IF EXISTS %s", dbs[i]);
  }
  testdb_close(src);
  testdb_close(dst);
  src = dst = NULL;
  return 0;
}

static void assert_error(int32_t code, const char *in_message, const char *in_raw) {
  const dm_error *e = testdb_last_error();
  CU_ASSERT_EQUAL(e->code, code);
  if (in_message && !strstr(e->message, in_message)) {
    fprintf(stderr, "message '%s' lacks '%s'\n", e->message, in_message);
    CU_FAIL("message text");
  }
  if (in_raw && !strstr(e->raw_cause, in_raw)) {
    fprintf(stderr, "raw cause '%s' lacks '%s'\n", e->raw_cause, in_raw);
    CU_FAIL("raw cause text");
  }
}

static void assert_contains(const char *text, const char *part) {
  if (!strstr(text, part)) {
    fprintf(stderr, "'%s' lacks '%s'\n", text, part);
    CU_FAIL("text");
  }
}

static void with_port(const char *var, const char *value, void (*fn)(void)) {
  char *saved = getenv(var) ? strdup(getenv(var)) : NULL;
  setenv(var, value, 1);
  fn();
  if (saved)
    setenv(var, saved, 1);
  else
    unsetenv(var);
  free(saved);
}

static void connect_closed_port(void) {
  CU_ASSERT_PTR_NULL(testdb_connect(TESTDB_TARGET));
  assert_error(DM_ERR_DB_CONNECT, "cannot connect to the target at 127.0.0.1:1 as root", "2002");
  assert_error(DM_ERR_DB_CONNECT, "run scripts/mariadb.sh start", NULL);
  assert_error(DM_ERR_DB_CONNECT, "FIXTURES_REQUIRED mariadb", NULL);
}

static void connect_bad_port(void) {
  CU_ASSERT_PTR_NULL(testdb_connect(TESTDB_SOURCE));
  assert_error(DM_ERR_CONFIG_INVALID, "DMH_SOURCE_PORT='13306x' is not a port number", NULL);
}

static void test_connect_errors(void) {
  with_port("DMH_TARGET_PORT", "1", connect_closed_port);
  with_port("DMH_SOURCE_PORT", "13306x", connect_bad_port);
  testdb_params p;
  CU_ASSERT_EQUAL(testdb_params_get(TESTDB_TARGET, &p), 0);
  CU_ASSERT_STRING_EQUAL(p.host, "127.0.0.1");
  CU_ASSERT_EQUAL(p.port,
                  getenv("DMH_TARGET_PORT") ? (unsigned)atoi(getenv("DMH_TARGET_PORT")) : 13307u);
}

/* scripts/mariadb.sh's dmh_limited: SELECT on everything on the source, nothing on the target. */
static void test_limited_account(void) {
  MYSQL *c = testdb_connect_as(TESTDB_SOURCE, "dmh_limited", "limited", NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  long long n = 0;
  CU_ASSERT_EQUAL(testdb_query_int(c, &n, "SELECT COUNT(*) FROM mysql.user"), 0);
  CU_ASSERT(n >= 2);
  CU_ASSERT_EQUAL(testdb_exec(c, "CREATE DATABASE test_testdb_denied"), -1);
  assert_error(DM_ERR_DB_QUERY, "statement failed on 127.0.0.1:", "1044");
  testdb_close(c);

  c = testdb_connect_as(TESTDB_TARGET, "dmh_limited", "limited", NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  CU_ASSERT_EQUAL(testdb_query_int(c, &n, "SELECT COUNT(*) FROM mysql.user"), -1);
  assert_error(DM_ERR_DB_QUERY, "SELECT COUNT(*) FROM mysql.user", "1142");
  testdb_close(c);

  CU_ASSERT_PTR_NULL(testdb_connect_as(TESTDB_SOURCE, "dmh_limited", "wrong", NULL));
  assert_error(DM_ERR_DB_CONNECT, "refused dmh_limited", "1045");
}

static void test_exec_and_query(void) {
  CU_ASSERT_EQUAL_FATAL(testdb_recreate_db(src, DB_BASIC), 0);
  CU_ASSERT_EQUAL(testdb_exec(src, "CREATE TABLE " DB_BASIC ".t (id INT PRIMARY KEY, v TEXT);"
                                   "INSERT INTO " DB_BASIC ".t VALUES (1, 'abcdef'), (2, NULL);"
                                   "SELECT * FROM " DB_BASIC ".t"),
                  0);
  char v[16];
  CU_ASSERT_EQUAL(
      testdb_query_value(src, v, sizeof v, "SELECT v FROM %s.t WHERE id = %d", DB_BASIC, 1), 0);
  CU_ASSERT_STRING_EQUAL(v, "abcdef");
  CU_ASSERT_EQUAL(testdb_query_value(src, v, 3, "SELECT v FROM %s.t WHERE id = 1", DB_BASIC), 0);
  CU_ASSERT_STRING_EQUAL(v, "ab");
  CU_ASSERT_EQUAL(testdb_query_value(src, v, sizeof v, "SELECT v FROM %s.t WHERE id = 2", DB_BASIC),
                  1);
  CU_ASSERT_STRING_EQUAL(v, "");
  CU_ASSERT_EQUAL(testdb_query_value(src, v, sizeof v, "SELECT v FROM %s.t WHERE id = 3", DB_BASIC),
                  1);
  long long n = -1;
  CU_ASSERT_EQUAL(testdb_query_int(src, &n, "SELECT COUNT(*) FROM %s.t", DB_BASIC), 0);
  CU_ASSERT_EQUAL(n, 2);
  CU_ASSERT_EQUAL(testdb_query_int(src, &n, "SELECT v FROM %s.t WHERE id = 1", DB_BASIC), -1);
  assert_error(DM_ERR_DB_QUERY, "not an integer", "abcdef");

  CU_ASSERT_EQUAL(testdb_exec(src, "SELEC 1"), -1);
  assert_error(DM_ERR_DB_QUERY, "statement failed on 127.0.0.1:", "1064 (42000)");
  assert_error(DM_ERR_DB_QUERY, "SELEC 1", NULL);
  /* The second statement fails: reported, and the connection stays usable. */
  CU_ASSERT_EQUAL(testdb_exec(src, "SELECT 1; SELECT * FROM " DB_BASIC ".nope"), -1);
  assert_error(DM_ERR_DB_QUERY, NULL, "1146");
  CU_ASSERT_EQUAL(testdb_query_int(src, &n, "SELECT 42"), 0);
  CU_ASSERT_EQUAL(n, 42);
  CU_ASSERT_EQUAL(testdb_execf(src, "DO %d", 1), 0);
}

static void test_exec_file_errors(void) {
  CU_ASSERT_EQUAL(testdb_exec_file(src, "/nonexistent/x.sql", NULL), -1);
  assert_error(DM_ERR_IO, "cannot open SQL file /nonexistent/x.sql", "No such file");

  char path[] = "/tmp/test_testdb-XXXXXX";
  int fd = mkstemp(path);
  CU_ASSERT_FATAL(fd >= 0);
  const char *sql = "CREATE TABLE t (id INT PRIMARY KEY);\nINSERT INTO t VALUES (1);\nSELEC 2;\n";
  CU_ASSERT_EQUAL((size_t)write(fd, sql, strlen(sql)), strlen(sql));
  close(fd);
  CU_ASSERT_EQUAL_FATAL(testdb_recreate_db(src, DB_BASIC), 0);
  CU_ASSERT_EQUAL(testdb_exec_file(src, path, DB_BASIC), -1);
  assert_error(DM_ERR_IO, "mariadb exited with status 1", "ERROR 1064");
  assert_error(DM_ERR_IO, path, "at line 3");
  /* The statements before the bad one ran. */
  long long n = 0;
  CU_ASSERT_EQUAL(testdb_query_int(src, &n, "SELECT COUNT(*) FROM %s.t", DB_BASIC), 0);
  CU_ASSERT_EQUAL(n, 1);

  /* No client program on the PATH. */
  char *saved_path = strdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
  setenv("PATH", "/nonexistent", 1);
  CU_ASSERT_EQUAL(testdb_exec_file(src, path, DB_BASIC), -1);
  assert_error(DM_ERR_IO, "cannot run mariadb; install mariadb-client (scripts/deps.sh)",
               "No such file");
  setenv("PATH", saved_path, 1);
  free(saved_path);
  unlink(path);

  CU_ASSERT_EQUAL(testdb_copy_db(src, dst, "test_testdb_no_such_db"), -1);
  assert_error(DM_ERR_IO, "copying database test_testdb_no_such_db", "1049");
}

static void checksum_of(const char *table, uint64_t *rows, char sha[65]) {
  CU_ASSERT_EQUAL(testdb_table_checksum(src, DB_SUM, table, rows, sha), 0);
  CU_ASSERT_EQUAL(strlen(sha), 64);
}

static int same_checksum(const char *a, const char *b) {
  uint64_t ra = 0, rb = 0;
  char sa[65], sb[65];
  checksum_of(a, &ra, sa);
  checksum_of(b, &rb, sb);
  return ra == rb && strcmp(sa, sb) == 0;
}

static void test_checksum(void) {
  CU_ASSERT_EQUAL_FATAL(testdb_recreate_db(src, DB_SUM), 0);
  CU_ASSERT_EQUAL_FATAL(
      testdb_exec(src, "USE " DB_SUM ";"
                       "CREATE TABLE a (id INT PRIMARY KEY, v VARCHAR(10), f FLOAT);"
                       "INSERT INTO a VALUES (1, 'x', 0.5), (2, 'y', 1.5), (3, NULL, 2.5);"
                       "CREATE TABLE b LIKE a; INSERT INTO b VALUES (3, NULL, 2.5), (1, 'x', 0.5);"
                       "INSERT INTO b VALUES (2, 'y', 1.5);"
                       "CREATE TABLE c (id INT PRIMARY KEY, v VARCHAR(10), f FLOAT) ENGINE=MyISAM;"
                       "INSERT INTO c SELECT * FROM b;"
                       "CREATE TABLE d (id INT PRIMARY KEY, p VARCHAR(5), q VARCHAR(5));"
                       "CREATE TABLE e LIKE d;"
                       "INSERT INTO d VALUES (1, 'ab', 'c'); INSERT INTO e VALUES (1, 'a', 'bc');"
                       "CREATE TABLE g (id INT PRIMARY KEY, w VARCHAR(10), f FLOAT);"
                       "INSERT INTO g SELECT * FROM a;"
                       "CREATE TABLE f1 (id INT PRIMARY KEY, f FLOAT); CREATE TABLE f2 LIKE f1;"
                       "INSERT INTO f1 VALUES (1, 3.14159274); INSERT INTO f2 VALUES (1, 3.14159);"
                       "CREATE TABLE n1 (s VARCHAR(5)) DEFAULT CHARSET=utf8mb4; CREATE TABLE n2 "
                       "LIKE n1; INSERT INTO n1 VALUES ('a'), ('A'), ('a'), (NULL);"
                       "INSERT INTO n2 VALUES ('A'), (NULL), ('a'), ('a');"
                       "CREATE TABLE l1 (t TEXT); CREATE TABLE l2 LIKE l1;"
                       "INSERT INTO l1 VALUES (CONCAT(REPEAT('a', 3000), 'x')),"
                       " (CONCAT(REPEAT('a', 3000), 'y'));"
                       "INSERT INTO l2 SELECT * FROM l1 ORDER BY t DESC;"
                       "CREATE TABLE s1 (g POINT, t TEXT, j JSON, e ENUM('b', 'a'), b BIT(3));"
                       "CREATE TABLE s2 LIKE s1;"
                       "INSERT INTO s1 VALUES (POINT(1, 2), 'x', '[1]', 'a', b'101'),"
                       " (POINT(2, 1), 'X', '[2]', 'b', b'010'), (NULL, NULL, NULL, NULL, NULL);"
                       "INSERT INTO s2 SELECT * FROM s1 ORDER BY t DESC;"
                       "CREATE TABLE z1 (id INT PRIMARY KEY); CREATE TABLE z2 LIKE z1"),
      0);
  uint64_t rows = 0;
  char sha[65];
  checksum_of("a", &rows, sha);
  CU_ASSERT_EQUAL(rows, 3);
  /* Insertion order, a rebuilt table and another engine do not count. */
  CU_ASSERT(same_checksum("a", "b"));
  CU_ASSERT_EQUAL(testdb_exec(src, "ALTER TABLE " DB_SUM ".b ENGINE=InnoDB, FORCE"), 0);
  CU_ASSERT(same_checksum("a", "b"));
  CU_ASSERT(same_checksum("a", "c"));
  /* Rows of a table without a key, equal under the collation: ordered as bytes. */
  CU_ASSERT(same_checksum("n1", "n2"));
  /* Values equal in their first max_sort_length (1024) bytes. */
  CU_ASSERT(same_checksum("l1", "l2"));
  /* Regression: with max_sort_length raised to 8 MiB to fix the line above, ordering by three long
   * columns failed with 1038 "Out of sort memory"; now long columns are ordered by their MD5. */
  CU_ASSERT(same_checksum("s1", "s2"));
  CU_ASSERT(same_checksum("z1", "z2"));
  checksum_of("z1", &rows, sha);
  CU_ASSERT_EQUAL(rows, 0);
  /* What must count: cell boundaries, NULL against '', FLOAT bits beyond the 6 digits the text
   * protocol prints, column names, and any value. */
  CU_ASSERT_FALSE(same_checksum("d", "e"));
  CU_ASSERT_FALSE(same_checksum("f1", "f2"));
  CU_ASSERT_FALSE(same_checksum("a", "g"));
  CU_ASSERT_EQUAL(testdb_exec(src, "UPDATE " DB_SUM ".b SET v = '' WHERE id = 3"), 0);
  CU_ASSERT_FALSE(same_checksum("a", "b"));
  CU_ASSERT_EQUAL(testdb_exec(src, "UPDATE " DB_SUM ".b SET v = NULL WHERE id = 3"), 0);
  CU_ASSERT(same_checksum("a", "b"));
  CU_ASSERT_EQUAL(testdb_exec(src, "DELETE FROM " DB_SUM ".n2 WHERE s = 'a' LIMIT 1"), 0);
  CU_ASSERT_FALSE(same_checksum("n1", "n2"));

  /* The session is put back: character set and time zone as before. */
  CU_ASSERT_EQUAL(testdb_exec(src, "SET time_zone = '+05:00'"), 0);
  checksum_of("a", &rows, sha);
  char v[64];
  CU_ASSERT_EQUAL(testdb_query_value(src, v, sizeof v, "SELECT @@time_zone"), 0);
  CU_ASSERT_STRING_EQUAL(v, "+05:00");
  CU_ASSERT_EQUAL(testdb_query_value(src, v, sizeof v, "SELECT @@character_set_results"), 0);
  CU_ASSERT_STRING_EQUAL(v, "utf8mb4");
  CU_ASSERT_EQUAL(testdb_query_value(src, v, sizeof v, "SELECT @@collation_connection"), 0);
  CU_ASSERT_STRING_EQUAL(v, "utf8mb4_general_ci");

  CU_ASSERT_EQUAL(testdb_table_checksum(src, DB_SUM, "nope", &rows, sha), -1);
  assert_error(DM_ERR_DB_QUERY, "table `" DB_SUM "`.`nope` not found on 127.0.0.1:", NULL);
}

/* The hex of a value on the source, as compare prints it (0x + up to 48 bytes + length). */
static void describe_on_source(const char *column, int id, char *out, size_t len) {
  char hex[128]; /* 48 bytes as hex: 96 characters */
  long long n = 0;
  CU_ASSERT_EQUAL(testdb_query_value(src, hex, sizeof hex,
                                     "SELECT LOWER(HEX(LEFT(CAST(%s AS BINARY), 48))) FROM "
                                     "%s.all_types WHERE id = %d",
                                     column, DB_TYPES, id),
                  0);
  CU_ASSERT_EQUAL(testdb_query_int(src, &n, "SELECT LENGTH(%s) FROM %s.all_types WHERE id = %d",
                                   column, DB_TYPES, id),
                  0);
  snprintf(out, len, "0x%s%s (%lld bytes)", hex, n > 48 ? "..." : "", n);
}

/* Puts back on the target the source's value of one cell. */
static void restore_cell(const char *column, int id) {
  static char hex[8 * 1024 * 1024];
  CU_ASSERT_EQUAL(testdb_query_value(src, hex, sizeof hex,
                                     "SELECT HEX(%s) FROM %s.all_types WHERE id = %d", column,
                                     DB_TYPES, id),
                  0);
  CU_ASSERT_EQUAL(testdb_execf(dst, "UPDATE %s.all_types SET %s = UNHEX('%s') WHERE id = %d",
                               DB_TYPES, column, hex, id),
                  0);
}

static int compare(const char *table, char *diff, size_t len) {
  return testdb_compare_tables(src, dst, DB_TYPES, DB_TYPES, table, diff, len);
}

static void test_all_types_copy(void) {
  char diff[2048], want[2048];
  CU_ASSERT_EQUAL_FATAL(testdb_load_all_types(src, DB_TYPES), 0);
  long long n = 0;
  CU_ASSERT_EQUAL(testdb_query_int(src, &n, "SELECT COUNT(*) FROM %s.all_types", DB_TYPES), 0);
  CU_ASSERT_EQUAL(n, 14);
  CU_ASSERT_EQUAL(testdb_execf(dst, "DROP DATABASE IF EXISTS %s", DB_TYPES), 0);
  CU_ASSERT_EQUAL(testdb_compare_schemas(src, dst, DB_TYPES, DB_TYPES, diff, sizeof diff), 1);
  CU_ASSERT_STRING_EQUAL(diff, "database `" DB_TYPES "` is missing on the target");

  CU_ASSERT_EQUAL_FATAL(testdb_copy_db(src, dst, DB_TYPES), 0);
  /* mariadb-dump prints FLOAT with 6 significant digits: the first casualty is row 1's FLOAT. */
  CU_ASSERT_EQUAL(testdb_compare_schemas(src, dst, DB_TYPES, DB_TYPES, diff, sizeof diff), 1);
  assert_contains(diff, "`" DB_TYPES "`.`all_types`: row 1 (`id`=1), column `c_float`: source 0x");
  for (int id = 1; id <= 14; id++) {
    char exact[64];
    if (testdb_query_value(src, exact, sizeof exact,
                           "SELECT CAST(c_float AS DOUBLE) FROM %s.all_types WHERE id = %d",
                           DB_TYPES, id) == 0)
      CU_ASSERT_EQUAL(testdb_execf(dst, "UPDATE %s.all_types SET c_float = %s WHERE id = %d",
                                   DB_TYPES, exact, id),
                      0);
  }
  CU_ASSERT_EQUAL(testdb_compare_schemas(src, dst, DB_TYPES, DB_TYPES, diff, sizeof diff), 0);
  CU_ASSERT_STRING_EQUAL(diff, "");
  static const char *const tables[] = {"all_types", "no_pk", "auto_zero", "weird.name/表 x"};
  for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
    CU_ASSERT_EQUAL(compare(tables[i], diff, sizeof diff), 0);
    CU_ASSERT_STRING_EQUAL(diff, "");
  }
  uint64_t rs = 0, rd = 0;
  char ss[65], sd[65];
  CU_ASSERT_EQUAL(testdb_table_checksum(src, DB_TYPES, "all_types", &rs, ss), 0);
  CU_ASSERT_EQUAL(testdb_table_checksum(dst, DB_TYPES, "all_types", &rd, sd), 0);
  CU_ASSERT_EQUAL(rs, 14);
  CU_ASSERT_EQUAL(rd, 14);
  CU_ASSERT_STRING_EQUAL(ss, sd);
  /* One connection on both sides (a second one is opened for the second stream). */
  CU_ASSERT_EQUAL(
      testdb_compare_tables(src, src, DB_TYPES, DB_TYPES, "all_types", diff, sizeof diff), 0);

  /* One cell changed on the target: exactly that row and column, both values in hex. */
  CU_ASSERT_EQUAL(
      testdb_execf(dst, "UPDATE %s.all_types SET c_varchar = 'changed' WHERE id = 6", DB_TYPES), 0);
  char source_value[256];
  describe_on_source("c_varchar", 6, source_value, sizeof source_value);
  snprintf(want, sizeof want,
           "`%s`.`all_types`: row 6 (`id`=6), column `c_varchar`: source %s, target "
           "0x6368616e676564 (7 bytes), first difference at byte 0",
           DB_TYPES, source_value);
  CU_ASSERT_EQUAL(compare("all_types", diff, sizeof diff), 1);
  CU_ASSERT_STRING_EQUAL(diff, want);
  CU_ASSERT_EQUAL(testdb_compare_schemas(src, dst, DB_TYPES, DB_TYPES, diff, sizeof diff), 1);
  CU_ASSERT_STRING_EQUAL(diff, want);
  restore_cell("c_varchar", 6);
  CU_ASSERT_EQUAL(compare("all_types", diff, sizeof diff), 0);

  /* One byte deep inside the 2 MiB blob. */
  CU_ASSERT_EQUAL(testdb_execf(dst,
                               "UPDATE %s.all_types SET c_longblob = INSERT(c_longblob, 1000001, "
                               "1, 0x00) WHERE id = 7",
                               DB_TYPES),
                  0);
  CU_ASSERT_EQUAL(compare("all_types", diff, sizeof diff), 1);
  assert_contains(diff, "row 7 (`id`=7), column `c_longblob`: source 0x000102");
  assert_contains(diff, "(2097152 bytes), target 0x000102");
  assert_contains(diff, "first difference at byte 1000000");
  restore_cell("c_longblob", 7);

  /* A NULL that became a value. */
  CU_ASSERT_EQUAL(testdb_execf(dst, "UPDATE %s.all_types SET c_json = '{}' WHERE id = 4", DB_TYPES),
                  0);
  CU_ASSERT_EQUAL(compare("all_types", diff, sizeof diff), 1);
  assert_contains(diff, "row 4 (`id`=4), column `c_json`: source NULL, target 0x7b7d (2 bytes)");
  CU_ASSERT_EQUAL(testdb_execf(dst, "UPDATE %s.all_types SET c_json = NULL WHERE id = 4", DB_TYPES),
                  0);

  /* A missing row, then a row only on the target. */
  CU_ASSERT_EQUAL(testdb_execf(dst, "DELETE FROM %s.all_types WHERE id = 14", DB_TYPES), 0);
  CU_ASSERT_EQUAL(compare("all_types", diff, sizeof diff), 1);
  assert_contains(diff,
                  "row 14 (`id`=14): missing on the target (it has 13 rows, the source more)");
  CU_ASSERT_EQUAL(testdb_execf(dst, "INSERT INTO %s.no_pk VALUES (9, 'zzz', 0, NULL)", DB_TYPES),
                  0);
  CU_ASSERT_EQUAL(compare("no_pk", diff, sizeof diff), 1);
  CU_ASSERT_STRING_EQUAL(diff, "`" DB_TYPES "`.`no_pk`: row 13 (in the order of all columns: the "
                               "table has no primary key): only on the target (the source has "
                               "12 rows)");
  /* One duplicate fewer in a table without a key. */
  CU_ASSERT_EQUAL(
      testdb_execf(dst, "DELETE FROM %s.no_pk WHERE a = 9 OR b = 'dup' LIMIT 2", DB_TYPES), 0);
  CU_ASSERT_EQUAL(compare("no_pk", diff, sizeof diff), 1);

  /* Names that need quoting, in the key and in the column. */
  CU_ASSERT_EQUAL(testdb_execf(dst,
                               "UPDATE %s.`weird.name/表 x` SET `col with space` = 'uno' "
                               "WHERE `select` = 1",
                               DB_TYPES),
                  0);
  CU_ASSERT_EQUAL(compare("weird.name/表 x", diff, sizeof diff), 1);
  CU_ASSERT_STRING_EQUAL(diff, "`" DB_TYPES "`.`weird.name/表 x`: row 2 (`select`=1), column "
                               "`col with space`: source 0x6f6e65 (3 bytes), target 0x756e6f "
                               "(3 bytes), first difference at byte 0");

  /* Different columns, missing and extra tables. */
  CU_ASSERT_EQUAL(testdb_execf(dst, "ALTER TABLE %s.auto_zero ADD COLUMN extra INT", DB_TYPES), 0);
  CU_ASSERT_EQUAL(compare("auto_zero", diff, sizeof diff), 1);
  CU_ASSERT_STRING_EQUAL(diff,
                         "`" DB_TYPES "`.`auto_zero`: the source has 2 columns, the target 3");
  CU_ASSERT_EQUAL(testdb_execf(dst, "ALTER TABLE %s.auto_zero CHANGE v w VARCHAR(10)", DB_TYPES),
                  0);
  CU_ASSERT_EQUAL(compare("auto_zero", diff, sizeof diff), 1);
  CU_ASSERT_STRING_EQUAL(diff, "`" DB_TYPES "`.`auto_zero`: column 2 is `v` on the source but `w` "
                               "on the target");
  CU_ASSERT_EQUAL(testdb_execf(dst, "DROP TABLE %s.auto_zero", DB_TYPES), 0);
  CU_ASSERT_EQUAL(compare("auto_zero", diff, sizeof diff), 1);
  CU_ASSERT_STRING_EQUAL(diff, "`" DB_TYPES "`.`auto_zero`: missing on the target");
  CU_ASSERT_EQUAL(testdb_compare_schemas(src, dst, DB_TYPES, DB_TYPES, diff, sizeof diff), 1);
  CU_ASSERT_STRING_EQUAL(diff, "table `" DB_TYPES "`.`auto_zero` is missing on the target");
  CU_ASSERT_EQUAL(testdb_execf(dst, "CREATE TABLE %s.aaa_extra (id INT PRIMARY KEY)", DB_TYPES), 0);
  CU_ASSERT_EQUAL(testdb_compare_schemas(src, dst, DB_TYPES, DB_TYPES, diff, sizeof diff), 1);
  CU_ASSERT_STRING_EQUAL(diff, "table `" DB_TYPES "`.`aaa_extra` is only on the target");

  /* Errors: a table or database that is not there. */
  CU_ASSERT_EQUAL(compare("nope", diff, sizeof diff), -1);
  assert_contains(diff, "table `" DB_TYPES "`.`nope` not found on 127.0.0.1:");
  CU_ASSERT_EQUAL(
      testdb_compare_schemas(src, dst, "test_testdb_no_such_db", DB_TYPES, diff, sizeof diff), -1);
  assert_contains(diff, "database `test_testdb_no_such_db` not found on the source");
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"connect errors name the server and the fix", test_connect_errors},
      {"the limited account", test_limited_account},
      {"exec and query", test_exec_and_query},
      {"SQL files and client errors", test_exec_file_errors},
      {"checksum", test_checksum},
      {"all types through mariadb-dump, then compare", test_all_types_copy},
  };
  int failed =
      dmh_cunit_run("testdb", suite_init, suite_clean, tests, sizeof tests / sizeof tests[0]);
  mysql_library_end();
  return failed;
}
