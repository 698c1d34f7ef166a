/*
 * What the load takes from its dump folder (issue 9, item 9), against the real target (CTest
 * fixture mariadb). Before the fix a data line that was not one of the dump's INSERTs ran as it
 * was (`DROP TABLE` dropped the table; `INSERT ...; DROP ...` and an INSERT into another table
 * reached the server), a schema file could hold `CREATE TABLE ... SELECT`, and files were opened
 * through symbolic links: a link to a file outside the folder had its first line sent as a
 * statement, and the server's syntax error quoted it back into the error. Now each is refused
 * with a coded, non-resumable error naming file and line, before anything of it runs, and no text
 * of the file appears in the error, the status or the log.
 *
 * Issue 20, item 5: the schema check skipped every comment, but MariaDB runs `/ *M! ... * /` (no
 * spaces) as code: a schema file ending in `/ *M! SELECT ... FROM other.secret * /` made the load
 * copy another schema's rows into the loaded table (measured: the 2 secret rows arrived). Comments
 * other than the dump's own executable forms, DATA/INDEX DIRECTORY, CONNECTION= and engines off the
 * allowlist are now refused, and the load session has NO_DIR_IN_CREATE.
 */
#include <CUnit/Basic.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "cunit_run.h"
#include "dmhost/error.h"
#include "load_test_util.h"
#include "log.h"
#include "testdb.h"

#define LT_DB "lt_trust"
#define LT_OTHER "lt_trust_other" /* a schema the task does not load */
#define LT_REAL "lt_trust_real"   /* tables of many shapes on the source, dumped and loaded */
#define LT_SECRET "S3CRET-4f1c9a-do-not-leak"

static MYSQL *dst;

static const char *const lt_tasks[] = {"lt_trust_drop",    "lt_trust_chain",  "lt_trust_other",
                                       "lt_trust_link",    "lt_trust_select", "lt_trust_ok",
                                       "lt_trust_comment", "lt_trust_real"};

static void lt_clean(void) {
  static const char *const dbs[] = {LT_DB, LT_OTHER, LT_REAL};
  lt_drop_all(dst, dbs, 3, lt_tasks, sizeof lt_tasks / sizeof *lt_tasks);
}

static int suite_init(void) {
  return lt_suite_open(&dst, lt_clean);
}

static int suite_clean(void) {
  return lt_suite_close(&dst, lt_clean);
}

static const char lt_schema_t[] =
    "CREATE TABLE `t` (\n  `id` int(11) NOT NULL,\n  `v` varbinary(20) DEFAULT NULL,\n"
    "  PRIMARY KEY (`id`)\n) ENGINE=InnoDB;\n";

/* A fresh folder with table `t` and the target's `victim` table (one row) that an attack aims
 * at. */
static void lt_folder(lt_env *e) {
  CU_ASSERT_FATAL(lt_init(e) == 0);
  lt_clean();
  lt_exec(dst, "CREATE DATABASE " LT_DB);
  lt_exec(dst, "CREATE TABLE " LT_DB ".victim (id INT PRIMARY KEY, v VARCHAR(64))");
  lt_exec(dst, "INSERT INTO " LT_DB ".victim VALUES (1, 'still here')");
  lt_write_metadata(e, "mysql-bin.000001", 4, "");
  lt_write(e, LT_DB "-schema-create.sql", "CREATE DATABASE IF NOT EXISTS `" LT_DB "`;\n");
  lt_write(e, LT_DB ".t-schema.sql", lt_schema_t);
}

/* Runs the task with stderr (the host's log, at debug level) captured into *log (malloc'd);
 * returns the stage, the subtask in *st and the whole status as JSON text in *status. */
static dmh_stage lt_run_captured(lt_env *e, const char *name, dmh_subtask **st, char **log,
                                 char **status) {
  lt_task t = {.name = name};
  CU_ASSERT_FATAL(lt_config(e, &t) == 0);
  dmh_stage s = lt_run_logged(e, st, 30000, log);
  json_object *o = *st ? dmh_subtask_status_json(*st) : NULL;
  *status = strdup(o ? json_object_to_json_string(o) : "");
  json_object_put(o);
  return s;
}

/* Runs a folder holding an attack; expects `code` naming `where` and the file, non-resumable, with
 * none of `hidden` in the error, status or log. */
static void lt_expect_refused(lt_env *e, const char *task, int code, const char *where,
                              const char *file, const char *const *hidden, int n_hidden) {
  dmh_subtask *st = NULL;
  char *log = NULL, *status = NULL;
  dmh_stage s = lt_run_captured(e, task, &st, &log, &status);
  CU_ASSERT_PTR_NOT_NULL_FATAL(st);
  CU_ASSERT_EQUAL(s, DMH_STAGE_PAUSED);
  char msg[1200], raw[600];
  bool resumable = true;
  CU_ASSERT_EQUAL(lt_first_error(st, msg, sizeof msg, raw, sizeof raw, &resumable), code);
  CU_ASSERT_FALSE(resumable);
  CU_ASSERT(lt_has(msg, where));
  char path[600];
  snprintf(path, sizeof path, "%s/%s", e->dump_dir, file);
  CU_ASSERT(lt_has(msg, path));
  for (int i = 0; i < n_hidden; i++) {
    CU_ASSERT(lt_lacks(msg, hidden[i]));
    CU_ASSERT(lt_lacks(raw, hidden[i]));
    CU_ASSERT(lt_lacks(status, hidden[i]));
    CU_ASSERT(lt_lacks(log, hidden[i]));
  }
  free(log);
  free(status);
  dmh_subtask_destroy(st);
}

/* Data lines of other shapes: nothing of them runs (the valid line before the chained DROP is
 * rolled back with its batch, so checkpoint and table still agree), their text stays out. */
static const struct {
  const char *task, *text, *where, *hidden[2];
} lt_bad_lines[] = {
    {"lt_trust_drop",
     "DROP TABLE `victim`;\n",
     "refused line 1 (byte 0) of ",
     {"DROP TABLE", "victim"}},
    {"lt_trust_chain",
     "INSERT INTO `t` (`id`,`v`) VALUES (1,'a;b'),(2,'it\\'s');\n"
     "INSERT INTO `t` (`id`,`v`) VALUES (3,'x'); DROP TABLE `victim`;\n",
     "refused line 2 (byte 57) of ",
     {"DROP TABLE", "victim"}},
    {"lt_trust_other",
     "INSERT INTO `victim` (`id`,`v`) VALUES (2,'planted');\n",
     "refused line 1 (byte 0) of ",
     {"planted", "`victim` ("}},
};

static void test_trust_bad_lines(void) {
  for (size_t i = 0; i < sizeof lt_bad_lines / sizeof *lt_bad_lines; i++) {
    lt_env e;
    lt_folder(&e);
    lt_write(&e, LT_DB ".t.000000.sql", lt_bad_lines[i].text);
    lt_expect_refused(&e, lt_bad_lines[i].task, DM_ERR_LOAD_BAD_STATEMENT, lt_bad_lines[i].where,
                      LT_DB ".t.000000.sql", lt_bad_lines[i].hidden, 2);
    CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM " LT_DB ".victim"), 1);
    CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM " LT_DB ".t"), 0);
    lt_teardown(&e);
  }
}

/* A file of another user's, outside the folder (mode 0400, holding a secret). */
static void lt_secret_file(lt_env *e, char *path, size_t len) {
  snprintf(path, len, "%s/secret.txt", e->dir);
  FILE *f = fopen(path, "w");
  CU_ASSERT_FATAL(f != NULL);
  fputs(LT_SECRET " first line\nsecond line\n", f);
  fclose(f);
  chmod(path, 0400);
}

/* A data file, and a schema file, that is a symbolic link to it: refused, never opened. Before,
 * the data file's first line ran and ERROR 1064 quoted the secret back. */
static void test_trust_symlinks(void) {
  static const char *const files[] = {LT_DB ".t.000000.sql", LT_DB ".u-schema.sql"};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    lt_env e;
    lt_folder(&e);
    char secret[400], link[500];
    lt_secret_file(&e, secret, sizeof secret);
    snprintf(link, sizeof link, "%s/%s", e.dump_dir, files[i]);
    CU_ASSERT_FATAL(symlink(secret, link) == 0);
    struct stat st;
    CU_ASSERT_FATAL(lstat(link, &st) == 0 && S_ISLNK(st.st_mode)); /* the attack is in place */
    const char *const hidden[] = {LT_SECRET, "first line"};
    lt_expect_refused(&e, "lt_trust_link", DM_ERR_LOAD_UNSAFE_FILE, "a symbolic link", files[i],
                      hidden, 2);
    lt_teardown(&e);
  }
}

/* A schema file whose CREATE TABLE copies another table's rows (... SELECT), or holds a second
 * statement: refused before it runs. */
static void test_trust_schema_shape(void) {
  lt_env e;
  lt_folder(&e);
  lt_write(&e, LT_DB ".t-schema.sql",
           "CREATE TABLE `t` (`id` int NOT NULL, `v` varchar(64)) SELECT id, v FROM "
           "`" LT_DB "`.`victim`;\n");
  const char *const hidden[] = {"SELECT id, v"};
  lt_expect_refused(&e, "lt_trust_select", DM_ERR_LOAD_BAD_STATEMENT, "refused ",
                    LT_DB ".t-schema.sql", hidden, 1);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM information_schema.TABLES WHERE "
                                "TABLE_SCHEMA = '" LT_DB "' AND TABLE_NAME = 't'"),
                  0);
  lt_write(&e, LT_DB ".t-schema.sql",
           "CREATE TABLE `t` (`id` int NOT NULL);\nDROP TABLE `victim`;\n");
  lt_expect_refused(&e, "lt_trust_select", DM_ERR_LOAD_BAD_STATEMENT, "refused ",
                    LT_DB ".t-schema.sql", NULL, 0);
  lt_write(&e, LT_DB ".t-schema.sql", "CREATE TABLE `victim` (`id` int NOT NULL);\n");
  lt_expect_refused(&e, "lt_trust_select", DM_ERR_LOAD_BAD_STATEMENT,
                    "the name is not the one of the file name", LT_DB ".t-schema.sql", NULL, 0);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM " LT_DB ".victim"), 1);
  lt_teardown(&e);
}

/* Schema files whose text after the table name hides code in a comment the server runs, or asks
 * for what a dump never does (a folder of its own, a remote table, an engine that reads elsewhere).
 * The first two copied LT_OTHER.secret's rows into `t` before. */
static const struct {
  const char *schema, *where;
} lt_bad_schemas[] = {
    {"CREATE TABLE `t` (`id` int NOT NULL, `v` varchar(64)) /*M! SELECT id, v FROM "
     "`" LT_OTHER "`.`secret` */;\n",
     "a comment"},
    {"CREATE TABLE `t` (`id` int NOT NULL, `v` varchar(64)) /*M!100000 SELECT id, v FROM "
     "`" LT_OTHER "`.`secret` */;\n",
     "a comment"},
    {"CREATE TABLE `t` (`id` int NOT NULL, `v` varchar(64)) /*!100000 SELECT id, v FROM "
     "`" LT_OTHER "`.`secret` */;\n",
     "SELECT"},
    {"CREATE TABLE `t` (`id` int NOT NULL) /* plain */ ENGINE=InnoDB;\n", "a comment"},
    {"CREATE TABLE `t` (`id` int NOT NULL) -- a line comment\n ENGINE=InnoDB;\n", "a comment"},
    {"CREATE TABLE `t` (`id` int NOT NULL) # a line comment\n ENGINE=InnoDB;\n", "a comment"},
    {"CREATE TABLE `t` (`id` int NOT NULL) ENGINE=InnoDB DATA DIRECTORY='/tmp/lt-trust-dir';\n",
     "DIRECTORY"},
    {"CREATE TABLE `t` (`id` int NOT NULL) ENGINE=MyISAM INDEX DIRECTORY='/tmp/lt-trust-dir';\n",
     "DIRECTORY"},
    {"CREATE TABLE `t` (`id` int NOT NULL) ENGINE=FEDERATED "
     "CONNECTION='mysql://root@127.0.0.1:1/" LT_OTHER "/secret';\n",
     "ENGINE"},
    {"CREATE TABLE `t` (`id` int NOT NULL) CONNECTION='mysql://root@127.0.0.1:1/x/y';\n",
     "CONNECTION"},
    {"CREATE TABLE `t` (`id` int NOT NULL) ENGINE = CONNECT TABLE_TYPE=MYSQL;\n", "ENGINE"},
    {"CREATE TABLE `t` (`id` int NOT NULL) ENGINE='InnoDB';\n", "ENGINE"},
    {"CREATE TABLE `t` (`id` int NOT NULL) /*!50100 ENGINE=FEDERATED */;\n", "ENGINE"},
};

static void test_trust_schema_comments(void) {
  for (size_t i = 0; i < sizeof lt_bad_schemas / sizeof *lt_bad_schemas; i++) {
    lt_env e;
    lt_folder(&e);
    lt_exec(dst, "CREATE DATABASE IF NOT EXISTS " LT_OTHER);
    lt_exec(dst, "CREATE TABLE IF NOT EXISTS " LT_OTHER ".secret (id INT PRIMARY KEY, v "
                 "VARCHAR(64))");
    lt_exec(dst, "REPLACE INTO " LT_OTHER ".secret VALUES (7, '" LT_SECRET "'), (8, 'other')");
    lt_write(&e, LT_DB ".t-schema.sql", lt_bad_schemas[i].schema);
    fprintf(stderr, "  schema file %zu: %s", i, lt_bad_schemas[i].schema);
    const char *const hidden[] = {LT_SECRET};
    lt_expect_refused(&e, "lt_trust_comment", DM_ERR_LOAD_BAD_STATEMENT, lt_bad_schemas[i].where,
                      LT_DB ".t-schema.sql", hidden, 1);
    /* nothing was created, no row of the other schema arrived */
    if (lt_count(dst, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '" LT_DB
                      "' AND TABLE_NAME = 't'") > 0)
      fprintf(stderr, "  `t` was created, with %lld rows of " LT_OTHER ".secret\n",
              lt_count(dst,
                       "SELECT COUNT(*) FROM " LT_DB ".t t JOIN " LT_OTHER ".secret s USING (id)"));
    CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM information_schema.TABLES WHERE "
                                  "TABLE_SCHEMA = '" LT_DB "' AND TABLE_NAME = 't'"),
                    0);
    CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM information_schema.TABLES WHERE "
                                  "TABLE_SCHEMA = '" LT_DB "' AND TABLE_NAME LIKE '%%secret%%'"),
                    0);
    lt_teardown(&e);
  }
}

/* What SHOW CREATE TABLE of the test server writes for many table shapes (partitions and
 * subpartitions with an ENGINE each, MariaDB's compressed column comment, generated columns,
 * checks, full-text and spatial keys, foreign keys, every allowed engine, options, a comment
 * holding comment markers) passes the check: dumped from the real source and loaded. */
static void test_trust_real_answers(void) {
  static const char *const sql[] = {
      "CREATE TABLE " LT_REAL ".p1 (id INT NOT NULL, d DATE NOT NULL, PRIMARY KEY (id, d)) "
      "PARTITION BY RANGE (YEAR(d)) (PARTITION p0 VALUES LESS THAN (2000), PARTITION p1 VALUES "
      "LESS THAN MAXVALUE)",
      "CREATE TABLE " LT_REAL ".p2 (id INT PRIMARY KEY) PARTITION BY HASH (id) PARTITIONS 3",
      "CREATE TABLE " LT_REAL ".p3 (id INT, k INT, PRIMARY KEY (id, k)) PARTITION BY LIST (k) "
      "SUBPARTITION BY HASH (id) SUBPARTITIONS 2 (PARTITION a VALUES IN (1, 2), PARTITION b "
      "VALUES IN (3))",
      "CREATE TABLE " LT_REAL ".g (id INT PRIMARY KEY, a INT, b INT AS (a * 2) VIRTUAL, c INT AS "
      "(a + 1) PERSISTENT, j JSON CHECK (JSON_VALID(j)), t TEXT, FULLTEXT KEY ft (t), CONSTRAINT "
      "ck CHECK (a > 0 AND a NOT LIKE '%-- #%')) ENGINE=InnoDB ROW_FORMAT=DYNAMIC "
      "COMMENT='x /*M! SELECT 1 */ -- # DATA DIRECTORY ENGINE=CONNECT'",
      "CREATE TABLE " LT_REAL ".s (id INT PRIMARY KEY, pt POINT NOT NULL, SPATIAL KEY (pt)) "
      "ENGINE=Aria",
      "CREATE TABLE " LT_REAL ".m (id INT PRIMARY KEY, ts TIMESTAMP(3) DEFAULT "
      "CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3)) ENGINE=MEMORY",
      "CREATE TABLE " LT_REAL ".fk (id INT PRIMARY KEY, g INT, FOREIGN KEY (g) REFERENCES g (id) "
      "ON DELETE CASCADE) ENGINE=InnoDB PAGE_COMPRESSED=1",
      "CREATE TABLE " LT_REAL ".inv (id INT PRIMARY KEY, h INT INVISIBLE, u UUID, i6 INET6, e "
      "ENUM('a', 'b'), st SET('x', 'y'), bl BLOB COMPRESSED, `connection` INT, `directory` INT) "
      "ENGINE=MyISAM",
      /* a binary default is printed as its raw bytes ('<0xFF>\\0': not UTF-8, NUL escaped) */
      "CREATE TABLE " LT_REAL ".bin (id INT PRIMARY KEY, b VARBINARY(4) DEFAULT 0xFF00) "
      "COMMENT='\xc3\xbc'",
      "CREATE TABLE " LT_REAL ".ai (id INT AUTO_INCREMENT PRIMARY KEY, x VARCHAR(10) COLLATE "
      "utf8mb4_bin) AUTO_INCREMENT=100 DEFAULT CHARSET=latin1 STATS_PERSISTENT=0",
      "INSERT INTO " LT_REAL ".p1 VALUES (1, '1999-01-01'), (2, '2020-01-01')",
      "INSERT INTO " LT_REAL ".g (id, a, j, t) VALUES (1, 1, '{}', 'text')",
      "INSERT INTO " LT_REAL ".inv (id, h, bl) VALUES (1, 2, REPEAT('z', 1000))",
  };
  MYSQL *src = lt_source();
  CU_ASSERT_PTR_NOT_NULL_FATAL(src);
  CU_ASSERT_FATAL(testdb_recreate_db(src, LT_REAL) == 0);
  for (size_t i = 0; i < sizeof sql / sizeof *sql; i++)
    CU_ASSERT_FATAL(testdb_exec(src, sql[i]) == 0);
  char create[4096];
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  lt_task t = {.name = "lt_trust_real",
               .mode = "full",
               .instance = "block-allow-list = \"only\";",
               .extra = "block-allow-list = { only = { do-dbs = [\"" LT_REAL "\"]; }; };"};
  CU_ASSERT_FATAL(lt_config(&e, &t) == 0);
  dmh_subtask *st;
  dmh_stage s = lt_run(&e, &st, 120000);
  char msg[1200];
  bool resumable;
  if (s != DMH_STAGE_FINISHED && lt_first_error(st, msg, sizeof msg, NULL, 0, &resumable))
    fprintf(stderr, "error: %s (resumable %d)\n", msg, resumable);
  CU_ASSERT_EQUAL(s, DMH_STAGE_FINISHED);
  char dump[400];
  snprintf(dump, sizeof dump, "%s/dump/" LT_REAL ".inv-schema.sql", e.work);
  FILE *f = fopen(dump, "r");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  size_t n = fread(create, 1, sizeof create - 1, f);
  create[n] = '\0';
  fclose(f);
  /* the form this test is about is really in the dump's file */
  CU_ASSERT(lt_has(create, "/*M!100301 COMPRESSED*/"));
  char diff[1024];
  int rc = testdb_compare_schemas(src, dst, LT_REAL, LT_REAL, diff, sizeof diff);
  if (rc != 0)
    fprintf(stderr, "%s\n", diff);
  CU_ASSERT_EQUAL(rc, 0);
  static const char *const tables[] = {"p1", "p2", "p3", "g", "s", "m", "fk", "inv", "ai", "bin"};
  for (size_t i = 0; i < sizeof tables / sizeof *tables; i++)
    CU_ASSERT(lt_same_create(src, LT_REAL, dst, LT_REAL, tables[i]));
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM " LT_REAL ".p1"), 2);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT LENGTH(bl) FROM " LT_REAL ".inv"), 1000);
  dmh_subtask_destroy(st);
  lt_teardown(&e);
  lt_exec(src, "DROP DATABASE IF EXISTS " LT_REAL);
  testdb_close(src);
}

/* Every value form the dump writes still loads: escapes, ';' and ')' inside strings, _latin1
 * text, hex, numbers with exponents, NULL. */
static void test_trust_accepts_dump_forms(void) {
  lt_env e;
  lt_folder(&e);
  lt_write(&e, LT_DB ".t-schema.sql",
           "CREATE TABLE `t` (\n  `id` int(11) NOT NULL,\n  `v` varbinary(40) DEFAULT NULL,\n"
           "  `d` double DEFAULT NULL,\n  `i` inet6 DEFAULT NULL,\n  PRIMARY KEY (`id`)\n"
           ") ENGINE=InnoDB /*!50100 COMMENT='a;b' */;\n");
  lt_write(&e, LT_DB ".t.000000.sql",
           "INSERT INTO `t` (`id`,`v`,`d`,`i`) VALUES (1,'a\\0b\\n\\r\\Z\\\\\\'\\\"),;',-1.5e-07,"
           "_latin1'::1'),(2,0x00ff,1e300,NULL),(3,'',-0.25,NULL);\n"
           "INSERT INTO `t` VALUES (4,NULL,12,NULL);\n");
  dmh_subtask *st = NULL;
  char *log = NULL, *status = NULL;
  dmh_stage s = lt_run_captured(&e, "lt_trust_ok", &st, &log, &status);
  char msg[1200];
  if (s != DMH_STAGE_FINISHED && lt_first_error(st, msg, sizeof msg, NULL, 0, NULL))
    fprintf(stderr, "error: %s\n", msg);
  CU_ASSERT_EQUAL(s, DMH_STAGE_FINISHED);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM " LT_DB ".t"), 4);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM " LT_DB ".t WHERE id = 1 AND v = "
                                "0x6100620a0d1a5c2722292c3b AND i = '::1' AND d = -1.5e-07"),
                  1);
  free(log);
  free(status);
  dmh_subtask_destroy(st);
  lt_teardown(&e);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"data lines of other shapes", test_trust_bad_lines},
      {"files linked outside", test_trust_symlinks},
      {"schema files of another shape", test_trust_schema_shape},
      {"regression: comments, DIRECTORY, CONNECTION, engines in schema files",
       test_trust_schema_comments},
      {"every form the dump writes", test_trust_accepts_dump_forms},
      {"real SHOW CREATE TABLE answers of many shapes load", test_trust_real_answers},
  };
  return dmh_cunit_run("load_trust", suite_init, suite_clean, tests,
                       sizeof tests / sizeof tests[0]);
}
