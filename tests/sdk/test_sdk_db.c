/*
 * dm_db_connect (sdk/src/db_connect.c), against the real servers.
 *
 * Regression: the dump's, the relay's and the binlog stream's connections to the source were
 * opened with Connector/C's defaults, which accept a server's LOAD DATA LOCAL INFILE request: a
 * hostile or hijacked source could read any file this process can (the task files with their
 * passwords, the relay folder). Every unit now connects through dm_db_connect, which turns LOCAL
 * INFILE off; before, the statement below ran and loaded the file.
 */
#include <CUnit/Basic.h>
#include <mysql.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cunit_run.h"
#include "dmhost/db.h"
#include "testdb.h"

#define DB "sdk_db_test"

static char local_file[64];

static dm_db_endpoint test_endpoint(testdb_params *p) {
  CU_ASSERT_FATAL(testdb_params_get(TESTDB_SOURCE, p) == 0);
  return (dm_db_endpoint){
      .host = p->host, .port = (int)p->port, .user = p->user, .password = p->password};
}

static int suite_init(void) {
  snprintf(local_file, sizeof local_file, "/tmp/dmh-sdk-db-%d.txt", (int)getpid());
  FILE *f = fopen(local_file, "w");
  if (!f)
    return -1;
  fputs("1\n2\n3\n", f);
  fclose(f);
  MYSQL *c = testdb_connect(TESTDB_SOURCE);
  if (!c)
    return -1;
  int rc =
      testdb_recreate_db(c, DB) || testdb_exec(c, "CREATE TABLE " DB ".t (id INT) ENGINE=InnoDB");
  testdb_close(c);
  return rc ? -1 : 0;
}

static int suite_clean(void) {
  unlink(local_file);
  MYSQL *c = testdb_connect(TESTDB_SOURCE);
  if (c) {
    testdb_exec(c, "DROP DATABASE IF EXISTS " DB);
    testdb_close(c);
  }
  return 0;
}

static long long test_rows(void) {
  MYSQL *c = testdb_connect(TESTDB_SOURCE);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  long long n = -1;
  CU_ASSERT(testdb_query_int(c, &n, "SELECT COUNT(*) FROM " DB ".t") == 0);
  testdb_close(c);
  return n;
}

static int test_load_local(MYSQL *c) {
  char sql[256];
  snprintf(sql, sizeof sql, "LOAD DATA LOCAL INFILE '%s' INTO TABLE " DB ".t", local_file);
  return mysql_query(c, sql);
}

/* Precondition: the server accepts LOCAL INFILE from a client that allows it, so a refusal below
 * is the client's doing. */
static void test_local_infile_reachable(void) {
  testdb_params p;
  dm_db_endpoint ep = test_endpoint(&p);
  MYSQL *c = mysql_init(NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  my_bool on = 1;
  mysql_optionsv(c, MYSQL_OPT_LOCAL_INFILE, &on);
  CU_ASSERT_PTR_NOT_NULL_FATAL(
      mysql_real_connect(c, ep.host, ep.user, ep.password, NULL, p.port, NULL, 0));
  long long before = test_rows();
  CU_ASSERT_EQUAL(test_load_local(c), 0);
  CU_ASSERT_EQUAL(test_rows(), before + 3);
  mysql_close(c);
}

static void test_local_infile_refused(void) {
  testdb_params p;
  dm_db_endpoint ep = test_endpoint(&p);
  dm_error err = {0};
  dm_db_connect_opts o = {.who = "test", .side = DM_DB_SOURCE, .read_timeout_s = 10};
  MYSQL *c = dm_db_connect(&ep, &o, &err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  long long before = test_rows();
  CU_ASSERT_NOT_EQUAL(test_load_local(c), 0);
  fprintf(stderr, "refused as expected: %u %s\n", mysql_errno(c), mysql_error(c));
  CU_ASSERT_EQUAL(test_rows(), before);
  /* the connection is still usable afterwards */
  CU_ASSERT_EQUAL(mysql_query(c, "SELECT 1"), 0);
  MYSQL_RES *res = mysql_store_result(c);
  if (res)
    mysql_free_result(res);
  mysql_close(c);
}

/* A refused connection is resumable; a refused account is not (retrying cannot fix it). */
static void test_connect_errors(void) {
  testdb_params p;
  dm_db_endpoint ep = test_endpoint(&p);
  dm_db_connect_opts o = {.who = "test", .side = DM_DB_TARGET, .connect_timeout_s = 2};
  dm_error err = {0};
  dm_db_endpoint closed = ep;
  closed.port = 1;
  CU_ASSERT_PTR_NULL(dm_db_connect(&closed, &o, &err));
  CU_ASSERT_EQUAL(err.code, DM_ERR_DB_CONNECT);
  CU_ASSERT_EQUAL(err.scope, DM_SCOPE_DOWNSTREAM);
  CU_ASSERT_EQUAL(err.resumable, 1);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "test: cannot connect to the target"));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.raw_cause, "ERROR 2002") ? err.raw_cause
                                                             : strstr(err.raw_cause, "ERROR 2003"));

  dm_db_endpoint bad = ep;
  bad.user = "dmh_no_such_user";
  memset(&err, 0, sizeof err);
  CU_ASSERT_PTR_NULL(dm_db_connect(&bad, &o, &err));
  CU_ASSERT_EQUAL(err.code, DM_ERR_DB_CONNECT);
  CU_ASSERT_EQUAL(err.resumable, 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.raw_cause, "ERROR 1045"));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "as `dmh_no_such_user`"));
}

/* The Ssl_cipher of c's session ("" when plain). */
static void test_cipher(MYSQL *c, char *out, size_t len) {
  out[0] = '\0';
  if (mysql_query(c, "SHOW SESSION STATUS LIKE 'Ssl_cipher'") != 0)
    return;
  MYSQL_RES *res = mysql_store_result(c);
  MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
  if (row && row[1])
    snprintf(out, len, "%s", row[1]);
  if (res)
    mysql_free_result(res);
}

/* The TLS fields are read only when endpoint_size says the endpoint has them (a unit on a host
 * older than services version 5 gets an endpoint without them): a size of 0 or of the version 1
 * endpoint connects in plain text, sizeof(dm_db_endpoint) over TLS, verified against the pair's
 * CA (scripts/mariadb.sh made it). */
static void test_tls_by_endpoint_size(void) {
  testdb_params p;
  dm_db_endpoint ep = test_endpoint(&p);
  const char *d = getenv("DMH_DB_DIR");
  char ca[400], cipher[128];
  snprintf(ca, sizeof ca, "%s/tls/ca.pem", d && d[0] ? d : "/tmp/dmhost-db");
  CU_ASSERT_FATAL(access(ca, R_OK) == 0);
  ep.ssl_ca = ca;
  dm_error err = {0};
  const uint32_t sizes[] = {0, (uint32_t)offsetof(dm_db_endpoint, ssl_ca),
                            (uint32_t)sizeof(dm_db_endpoint)};
  for (size_t i = 0; i < 3; i++) {
    dm_db_connect_opts o = {.who = "test", .side = DM_DB_SOURCE, .endpoint_size = sizes[i]};
    MYSQL *c = dm_db_connect(&ep, &o, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    test_cipher(c, cipher, sizeof cipher);
    if (i < 2) {
      CU_ASSERT_STRING_EQUAL(cipher, "");
    } else {
      CU_ASSERT_STRING_NOT_EQUAL(cipher, "");
    }
    mysql_close(c);
  }
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"TLS only when the endpoint size holds its fields", test_tls_by_endpoint_size},
      {"precondition: LOCAL INFILE reaches the server", test_local_infile_reachable},
      {"regression: LOCAL INFILE refused on dm_db_connect", test_local_infile_refused},
      {"connect errors: transient resumable, account not", test_connect_errors},
  };
  return dmh_cunit_run("sdk db", suite_init, suite_clean, tests, sizeof tests / sizeof tests[0]);
}
