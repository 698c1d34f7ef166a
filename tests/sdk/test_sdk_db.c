/*
 * dm_db_connect (sdk/src/db_connect.c) and the fencing kit (sdk/src/db_fence.c), against the real
 * servers.
 *
 * Regression: the dump's, the relay's and the binlog stream's connections to the source were
 * opened with Connector/C's defaults, which accept a server's LOAD DATA LOCAL INFILE request: a
 * hostile or hijacked source could read any file this process can (the task files with their
 * passwords, the relay folder). Every unit now connects through dm_db_connect, which turns LOCAL
 * INFILE off; before, the statement below ran and loaded the file.
 *
 * Issue 20, item 4: a server chooses the authentication plugin, and some hand it the password. A
 * rogue server (tests/db/rogue_server.py) that switched to mysql_clear_password or dialog received
 * "s3cret-xyz" as is; one that switched to sha256_password or caching_sha2_password sent its own
 * RSA key and decrypted it, or got it in clear. Now dm_db_connect allows those plugins only over
 * verified TLS: DM_ERR_DB_AUTH_PLUGIN naming the plugin, and the server records no password.
 */
#include <CUnit/Basic.h>
#include <inttypes.h>
#include <mysql.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cunit_run.h"
#include "dmhost/db.h"
#include "dmhost/sdk.h"
#include "rogue.h"
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

/* Issue 13, item 1: the one rule for a failed statement (dm_db_error): a refused statement is not
 * resumable whatever code the unit gives it, a lost connection and a lock wait timeout are. */
static void test_query_errors(void) {
  testdb_params p;
  dm_db_endpoint ep = test_endpoint(&p);
  dm_db_connect_opts o = {.who = "test", .side = DM_DB_SOURCE, .connect_timeout_s = 2};
  dm_error err = {0};
  MYSQL *c = dm_db_connect(&ep, &o, &err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  /* refused for good: no such column (1054) */
  CU_ASSERT_FATAL(mysql_query(c, "SELECT no_such_column FROM " DB ".t") != 0);
  CU_ASSERT_EQUAL(mysql_errno(c), 1054);
  dm_db_error(c, DM_DB_SOURCE, &err, DM_ERR_DB_QUERY, "test: reading `%s`", "t");
  CU_ASSERT_EQUAL(err.code, DM_ERR_DB_QUERY);
  CU_ASSERT_EQUAL(err.resumable, 0);
  CU_ASSERT_EQUAL(err.scope, DM_SCOPE_UPSTREAM);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "test: reading `t`: Unknown column"));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.raw_cause, "ERROR 1054 (42S22)"));
  /* the connection killed under the session: a lost connection, resumable */
  MYSQL *k = testdb_connect(TESTDB_SOURCE);
  CU_ASSERT_PTR_NOT_NULL_FATAL(k);
  CU_ASSERT(testdb_execf(k, "KILL CONNECTION %lu", mysql_thread_id(c)) == 0);
  testdb_close(k);
  CU_ASSERT_FATAL(mysql_query(c, "SELECT 1") != 0);
  unsigned no = mysql_errno(c);
  CU_ASSERT(no == 2013 || no == 2006 || no == 1927);
  dm_db_error(c, DM_DB_TARGET, &err, DM_ERR_DB_QUERY, "test: after the kill");
  CU_ASSERT_EQUAL(err.resumable, 1);
  CU_ASSERT_EQUAL(err.scope, DM_SCOPE_DOWNSTREAM);
  mysql_close(c);
  /* the numbers: rolled back by another transaction, lost, refused */
  CU_ASSERT(dm_db_errno_rolled_back(1213) && dm_db_errno_rolled_back(1205));
  CU_ASSERT(!dm_db_errno_rolled_back(2013) && !dm_db_errno_rolled_back(1142));
  CU_ASSERT(dm_db_errno_transient(1213) && dm_db_errno_transient(1205));
  CU_ASSERT(dm_db_errno_transient(2013) && dm_db_errno_transient(2006));
  CU_ASSERT(!dm_db_errno_transient(1142) && !dm_db_errno_transient(1146) &&
            !dm_db_errno_transient(1064) && !dm_db_errno_transient(1045));
}

/* DM's `session` (dm_db_session_apply): each variable in order after the unit's own set-up, a
 * string sent quoted (a quote in it cannot end the statement), an unknown tidb_ name skipped, any
 * other refusal a config error naming the variable; nothing from an older host's endpoint. */
static void test_session_vars(void) {
  testdb_params p;
  dm_db_endpoint ep = test_endpoint(&p);
  const dm_db_session_var vars[] = {
      {"innodb_lock_wait_timeout", "7", false},
      {"tidb_retry_limit", "10", true}, /* unknown here: skipped */
      {"sql_mode", "STRICT_ALL_TABLES,NO_ZERO_DATE", true},
      {"sql_mode", "STRICT_ALL_TABLES", true}, /* the last one wins, as in the file */
      {"big_tables", "ON", false},
  };
  ep.session = vars;
  ep.n_session = (int)(sizeof vars / sizeof vars[0]);
  dm_db_connect_opts o = {.who = "test", .side = DM_DB_TARGET, .connect_timeout_s = 5};
  dm_error err = {0};
  MYSQL *c = dm_db_connect(&ep, &o, &err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  /* an endpoint of a host older than SDK 1.4: nothing is set */
  CU_ASSERT_EQUAL(
      dm_db_session_apply(c, &ep, offsetof(dm_db_endpoint, session), "test", DM_DB_TARGET, &err),
      0);
  long long v = 0;
  CU_ASSERT(testdb_query_int(c, &v, "SELECT @@session.innodb_lock_wait_timeout") == 0);
  CU_ASSERT_NOT_EQUAL(v, 7); /* the precondition: not the server's default already */
  CU_ASSERT_EQUAL(dm_db_session_apply(c, &ep, sizeof ep, "test", DM_DB_TARGET, &err), 0);
  CU_ASSERT(testdb_query_int(c, &v, "SELECT @@session.innodb_lock_wait_timeout") == 0);
  CU_ASSERT_EQUAL(v, 7);
  CU_ASSERT(testdb_query_int(c, &v, "SELECT @@session.sql_mode = 'STRICT_ALL_TABLES'") == 0);
  CU_ASSERT_EQUAL(v, 1);
  CU_ASSERT(testdb_query_int(c, &v, "SELECT @@session.big_tables") == 0);
  CU_ASSERT_EQUAL(v, 1);

  /* a value that tries to end the statement: one quoted string, refused by the server as a
   * sql_mode, and the table it names is still there */
  const dm_db_session_var bad[] = {{"sql_mode", "'; DROP TABLE " DB ".t; -- ", true}};
  ep.session = bad;
  ep.n_session = 1;
  CU_ASSERT_EQUAL(dm_db_session_apply(c, &ep, sizeof ep, "test", DM_DB_TARGET, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_CONFIG_INVALID);
  CU_ASSERT_EQUAL(err.resumable, 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "test: the target refused "
                                             "`target-database.session.sql_mode`"));
  CU_ASSERT(testdb_query_int(c, &v,
                             "SELECT COUNT(*) FROM information_schema.TABLES WHERE "
                             "TABLE_SCHEMA = '" DB "' AND TABLE_NAME = 't'") == 0);
  CU_ASSERT_EQUAL(v, 1);
  /* an unknown variable that is not TiDB's */
  const dm_db_session_var unknown[] = {{"no_such_variable", "1", false}};
  ep.session = unknown;
  CU_ASSERT_EQUAL(dm_db_session_apply(c, &ep, sizeof ep, "test", DM_DB_SOURCE, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_CONFIG_INVALID);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "`from.session.no_such_variable`"));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.raw_cause, "1193"));
  mysql_close(c);
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

/* ---- fencing (dmhost/db.h, docs/sdk.md "Fencing"): the kit on a real table ---- */

#define FENCE_T DB ".cp"
#define FENCE_WHERE "`id` = 's'"

static MYSQL *fence_connect(bool found_rows) {
  testdb_params p;
  dm_db_endpoint ep = test_endpoint(&p);
  dm_db_connect_opts o = {.who = "test",
                          .side = DM_DB_TARGET,
                          .client_flags = CLIENT_MULTI_STATEMENTS | CLIENT_MULTI_RESULTS |
                                          (found_rows ? DM_DB_FENCE_CLIENT_FLAGS : 0)};
  dm_error err = {0};
  MYSQL *c = dm_db_connect(&ep, &o, &err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  return c;
}

/* Runs a multi-statement text to its end or its first error; the errno of that error, or 0. */
static unsigned fence_run(MYSQL *c, const char *sql) {
  if (mysql_query(c, sql) != 0)
    return mysql_errno(c);
  for (;;) {
    MYSQL_RES *r = mysql_store_result(c);
    if (r)
      mysql_free_result(r);
    else if (mysql_errno(c))
      return mysql_errno(c);
    int rc = mysql_next_result(c);
    if (rc < 0)
      return 0;
    if (rc > 0)
      return mysql_errno(c);
  }
}

static long long fence_value(MYSQL *c, const char *q) {
  CU_ASSERT_FATAL(mysql_query(c, q) == 0);
  MYSQL_RES *r = mysql_store_result(c);
  MYSQL_ROW row = r ? mysql_fetch_row(r) : NULL;
  long long v = row && row[0] ? atoll(row[0]) : -1;
  if (r)
    mysql_free_result(r);
  return v;
}

/* The column is added to a table of an older version; a start raises the rows, a lower token is
 * refused with DM_ERR_FENCED naming the higher one; a fenced transaction whose row carries a
 * higher token stops at the check: the statement after it and its COMMIT never run. */
static void test_fence_kit(void) {
  MYSQL *c = fence_connect(true);
  CU_ASSERT_EQUAL_FATAL(fence_run(c, "DROP TABLE IF EXISTS " FENCE_T ";CREATE TABLE " FENCE_T
                                     " (`id` VARCHAR(8) NOT NULL, `k` VARCHAR(8) NOT NULL, "
                                     "`pos` INT, PRIMARY KEY (`id`, `k`));INSERT INTO " FENCE_T
                                     " VALUES ('s', 'a', 1), ('s', 'b', 1), ('o', 'a', 1)"),
                        0);
  dm_error err = {0};
  for (int i = 0; i < 2; i++) /* the second finds the column there */
    CU_ASSERT_EQUAL(dm_db_fence_column(c, DB, "cp", FENCE_T, "test", &err), 0);
  CU_ASSERT_EQUAL(fence_value(c, "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE "
                                 "TABLE_SCHEMA = '" DB "' AND TABLE_NAME = 'cp' AND "
                                 "COLUMN_NAME = 'fence'"),
                  1);
  CU_ASSERT_EQUAL(dm_db_fence_raise(c, FENCE_T, FENCE_WHERE, 2, "test", &err), 0);
  CU_ASSERT_EQUAL(fence_value(c, "SELECT SUM(fence) FROM " FENCE_T), 4); /* only id 's' */
  CU_ASSERT_EQUAL(dm_db_fence_raise(c, FENCE_T, FENCE_WHERE, 2, "test", &err), 0);
  memset(&err, 0, sizeof err);
  CU_ASSERT_EQUAL(dm_db_fence_raise(c, FENCE_T, FENCE_WHERE, 1, "test", &err), 1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_FENCED);
  CU_ASSERT_FALSE(err.resumable);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "fenced off: a newer worker (token 2)"));
  CU_ASSERT_EQUAL(fence_value(c, "SELECT SUM(fence) FROM " FENCE_T), 4); /* nothing lowered */

  /* token 1 moves a row at 2: refused before the INSERT and the COMMIT */
  static const char stale[] =
      "START TRANSACTION;UPDATE " FENCE_T " SET `pos` = 9, `fence` = 1 WHERE " FENCE_WHERE
      " AND `k` = 'a' AND `fence` <= 1;" DM_DB_FENCE_CHECK_HEAD "1" DM_DB_FENCE_CHECK_TAIL
      ";INSERT INTO " FENCE_T " VALUES ('x', 'x', 1, 1);COMMIT";
  CU_ASSERT_EQUAL(fence_run(c, stale), DM_DB_FENCE_ERRNO);
  CU_ASSERT_EQUAL(mysql_query(c, "ROLLBACK"), 0);
  CU_ASSERT_EQUAL(fence_value(c, "SELECT COUNT(*) FROM " FENCE_T " WHERE `id` = 'x'"), 0);
  CU_ASSERT_EQUAL(fence_value(c, "SELECT MAX(`pos`) FROM " FENCE_T), 1);
  memset(&err, 0, sizeof err);
  CU_ASSERT_EQUAL(dm_db_fence_refused(c, FENCE_T, FENCE_WHERE, 1, "test", &err), 1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_FENCED);
  CU_ASSERT_EQUAL(dm_db_fence_refused(c, FENCE_T, FENCE_WHERE, 2, "test", &err), 0);

  /* token 2 moves it, also when nothing changes (CLIENT_FOUND_ROWS: the row matched) */
  static const char owner[] =
      "START TRANSACTION;UPDATE " FENCE_T " SET `pos` = 1, `fence` = 2 WHERE " FENCE_WHERE
      " AND `k` = 'a' AND `fence` <= 2;" DM_DB_FENCE_CHECK_HEAD "1" DM_DB_FENCE_CHECK_TAIL
      ";INSERT INTO " FENCE_T " VALUES ('y', 'y', 1, 2);COMMIT";
  CU_ASSERT_EQUAL(fence_run(c, owner), 0);
  CU_ASSERT_EQUAL(fence_value(c, "SELECT COUNT(*) FROM " FENCE_T " WHERE `id` = 'y'"), 1);
  mysql_close(c);

  /* precondition of DM_DB_FENCE_CLIENT_FLAGS: without it the same unchanged row counts 0 */
  c = fence_connect(false);
  CU_ASSERT_EQUAL(fence_run(c, owner), DM_DB_FENCE_ERRNO);
  CU_ASSERT_EQUAL(mysql_query(c, "ROLLBACK"), 0);
  mysql_close(c);
}

/* A unit asks the token through dm_host_fencing_token: 0 from a host older than services
 * version 6 (its struct ends before the slot), the host's answer from a newer one. */
static uint64_t fence_svc(dm_ctx *ctx) {
  (void)ctx;
  return 42;
}

static void test_fence_service(void) {
  dm_host_services h = {.version = DM_HOST_SERVICES_VERSION,
                        .size = sizeof(dm_host_services),
                        .fencing_token = fence_svc};
  CU_ASSERT_EQUAL(dm_host_fencing_token(&h, NULL), 42);
  h.size = (uint32_t)offsetof(dm_host_services, fencing_token);
  h.version = 5;
  CU_ASSERT_EQUAL(dm_host_fencing_token(&h, NULL), 0);
}

#define ROGUE_PASSWORD "s3cret-xyz"

static const char *const rogue_plugins[] = {"mysql_clear_password", "dialog", "sha256_password",
                                            "caching_sha2_password"};

/* A rogue server for plugin (the RSA ones get a key made here), or -1. */
static int rogue_start(testdb_rogue *r, const char *plugin, char *key, size_t key_len) {
  snprintf(key, key_len, "/tmp/dmh-sdk-db-%d.key", (int)getpid());
  char cmd[256];
  snprintf(cmd, sizeof cmd,
           "openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out %s 2>/dev/null", key);
  if (access(key, R_OK) != 0 && system(cmd) != 0)
    return -1;
  const char *const extra[] = {"--rsa-key", key, NULL};
  return testdb_rogue_start(r, "auth-switch", plugin, extra);
}

/* Precondition: a client without the restriction gives each rogue server the password, so the
 * rogue server plays the attack and a clean record below is dm_db_connect's doing. */
/* ---- dm_db_master_status: the one reading of SHOW MASTER STATUS (dump, relay, sync) ---- */

static void test_master_status(void) {
  MYSQL *c = testdb_connect(TESTDB_SOURCE);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  /* a write, so the position is not the file's start and the GTID set not empty */
  CU_ASSERT_EQUAL_FATAL(testdb_exec(c, "INSERT INTO " DB ".t VALUES (1)"), 0);
  dm_position p;
  CU_ASSERT_EQUAL(dm_db_master_status(c, &p), 0);
  /* the same, read by hand (no write between: this connection is the only one writing here, and
   * another test's write would move both) */
  CU_ASSERT_EQUAL_FATAL(mysql_query(c, "SHOW MASTER STATUS"), 0);
  MYSQL_RES *res = mysql_store_result(c);
  MYSQL_ROW r = res ? mysql_fetch_row(res) : NULL;
  CU_ASSERT_PTR_NOT_NULL_FATAL(r);
  fprintf(stderr, "master status: %s:%" PRIu64 " %s (by hand %s:%s)\n", p.name, p.pos, p.gtid, r[0],
          r[1]);
  CU_ASSERT_STRING_EQUAL(p.name, r[0]);
  CU_ASSERT(p.pos >= 4 && p.pos <= strtoull(r[1], NULL, 10));
  mysql_free_result(res);
  CU_ASSERT(strchr(p.gtid, '-') != NULL); /* MariaDB: domain-server-seq */
  /* the target has no binary log: 1, nothing filled */
  MYSQL *t = testdb_connect(TESTDB_TARGET);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_EQUAL(dm_db_master_status(t, &p), 1);
  CU_ASSERT_STRING_EQUAL(p.name, "");
  testdb_close(t);
  /* a user without REPLICATION CLIENT: -1, the server's 1227 left for the caller */
  MYSQL *l = testdb_connect_as(TESTDB_SOURCE, "dmh_limited", "limited", NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(l);
  CU_ASSERT_EQUAL(dm_db_master_status(l, &p), -1);
  CU_ASSERT_EQUAL(mysql_errno(l), 1227);
  testdb_close(l);
  testdb_close(c);
}

static void test_rogue_auth_reachable(void) {
  char key[128];
  for (size_t i = 0; i < sizeof rogue_plugins / sizeof *rogue_plugins; i++) {
    testdb_rogue r;
    CU_ASSERT_FATAL(rogue_start(&r, rogue_plugins[i], key, sizeof key) == 0);
    MYSQL *c = mysql_init(NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_PTR_NULL(
        mysql_real_connect(c, "127.0.0.1", "app", ROGUE_PASSWORD, NULL, (unsigned)r.port, NULL, 0));
    mysql_close(c);
    CU_ASSERT(testdb_rogue_wait(&r, "[closed]\n"));
    CU_ASSERT(testdb_rogue_saw(&r, "[switched-to "));
    if (!testdb_rogue_saw(&r, ROGUE_PASSWORD))
      fprintf(stderr, "the rogue server got no password with %s\n", rogue_plugins[i]);
    CU_ASSERT(testdb_rogue_saw(&r, ROGUE_PASSWORD));
    testdb_rogue_stop(&r);
  }
  unlink(key);
}

static void test_rogue_auth_refused(void) {
  char key[128];
  for (size_t i = 0; i < sizeof rogue_plugins / sizeof *rogue_plugins; i++) {
    testdb_rogue r;
    CU_ASSERT_FATAL(rogue_start(&r, rogue_plugins[i], key, sizeof key) == 0);
    dm_db_endpoint ep = {
        .host = "127.0.0.1", .port = r.port, .user = "app", .password = ROGUE_PASSWORD};
    dm_db_connect_opts o = {.who = "test", .side = DM_DB_SOURCE, .endpoint_size = sizeof ep};
    dm_error err = {0};
    CU_ASSERT_PTR_NULL(dm_db_connect(&ep, &o, &err));
    fprintf(stderr, "%s: %d %s\n", rogue_plugins[i], err.code, err.message);
    CU_ASSERT_EQUAL(err.code, DM_ERR_DB_AUTH_PLUGIN);
    CU_ASSERT_FALSE(err.resumable);
    /* the plugins it would send the password to, and what to do */
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, rogue_plugins[i]));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "ssl-ca"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "mysql_native_password"));
    /* the attack was played: the server got the login and asked for the switch */
    CU_ASSERT(testdb_rogue_wait(&r, "[closed]\n"));
    CU_ASSERT(testdb_rogue_saw(&r, "[switched-to "));
    CU_ASSERT(testdb_rogue_saw(&r, "app"));
    CU_ASSERT_FALSE(testdb_rogue_saw(&r, ROGUE_PASSWORD));
    CU_ASSERT_FALSE(testdb_rogue_saw(&r, "[auth-data]"));
    CU_ASSERT_FALSE(testdb_rogue_saw(&r, "[decrypted]"));
    testdb_rogue_stop(&r);
  }
  unlink(key);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"master status: file, position, GTID; 1 without a binlog; -1 refused", test_master_status},
      {"fencing: column, raise, a stale transaction refused before COMMIT", test_fence_kit},
      {"fencing: the service, 0 from an older host", test_fence_service},
      {"TLS only when the endpoint size holds its fields", test_tls_by_endpoint_size},
      {"DM's session variables: in order, quoted, tidb_ skipped, refusals", test_session_vars},
      {"precondition: LOCAL INFILE reaches the server", test_local_infile_reachable},
      {"regression: LOCAL INFILE refused on dm_db_connect", test_local_infile_refused},
      {"connect errors: transient resumable, account not", test_connect_errors},
      {"query errors: refused not resumable, lost connection resumable", test_query_errors},
      {"precondition: a plain client gives a rogue server the password", test_rogue_auth_reachable},
      {"regression: no password to a plugin that reveals it without TLS", test_rogue_auth_refused},
  };
  return dmh_cunit_run("sdk db", suite_init, suite_clean, tests, sizeof tests / sizeof tests[0]);
}
