/*
 * Issue 12, TLS: the `security` group of `from` and `target-database` (ssl-ca, ssl-cert, ssl-key)
 * used by every unit's connections against the real pair, whose dmh_tls account is REQUIRE SSL
 * (scripts/mariadb.sh made the pair's CA and server certificate with openssl):
 *  - mode all (dump, load, sync) from and to dmh_tls with security groups: the target equals the
 *    source; the same with the relay streaming the source's binlog (enable-relay);
 *  - the same account without a security group is refused by the servers (TLS is really needed);
 *  - a CA made here with openssl that did not sign the servers' certificate: DM_ERR_DB_CONNECT,
 *    not resumable, naming the server and the CA file;
 *  - an ssl-ca that is not there: a config error at its file:line;
 *  - both servers with require_secure_transport = ON (a TLS-only installation): mode all with
 *    the relay works over the security groups, and a plain connection is refused.
 * It sets require_secure_transport, a global of the shared pair, for one test (RUN_SERIAL).
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cunit_run.h"
#include "dmhost/error.h"
#include "sync_test_util.h"
#include "testdb.h"

static MYSQL *src, *dst;
static char tls_dir[300];

static int suite_init(void) {
  const char *d = getenv("DMH_DB_DIR");
  char *real = realpath(d && d[0] ? d : "/tmp/dmhost-db", NULL);
  snprintf(tls_dir, sizeof tls_dir, "%s/tls", real ? real : "/nonexistent");
  free(real);
  return ts_suite_open(&src, &dst);
}

static int suite_clean(void) {
  lt_exec(src, "SET GLOBAL require_secure_transport = OFF");
  lt_exec(dst, "SET GLOBAL require_secure_transport = OFF");
  ts_suite_close(&src, &dst);
  return 0;
}

/* `security = { ssl-ca = "<ca>"; };` */
static void tls_group(const char *ca, char *out, size_t len) {
  snprintf(out, len, "security = { ssl-ca = \"%s\"; };", ca);
}

static void tls_make_db(const char *db) {
  testdb_recreate_db(src, db);
  testdb_recreate_db(dst, db);
  lt_drop_checkpoint(dst, db);
  lt_exec(dst, "DROP TABLE IF EXISTS dm_meta.`%s_syncer_checkpoint`", db);
  lt_exec(src, "CREATE TABLE %s.t (id int NOT NULL PRIMARY KEY, v varchar(20))", db);
  lt_exec(src, "INSERT INTO %s.t VALUES (1,'one'),(2,'two'),(3,NULL)", db);
}

static int tls_config(lt_env *e, const char *db, const char *from_extra, const char *target_extra,
                      const char *source_extra) {
  char instance[64], extra[256];
  snprintf(instance, sizeof instance, "block-allow-list = \"only\";");
  snprintf(extra, sizeof extra, "block-allow-list = { only = { do-dbs = [\"%s\"]; }; };\n", db);
  lt_task t = {.name = db,
               .mode = "all",
               .instance = instance,
               .extra = extra,
               .sync = TS_SYNC,
               .source_user = "dmh_tls",
               .source_password = "tls",
               .target_user = "dmh_tls",
               .target_password = "tls",
               .from_extra = from_extra,
               .target_extra = target_extra,
               .source_extra = source_extra};
  return lt_config(e, &t);
}

/* Mode all over TLS, the relay too when relay_on: dump and load, then rows synced. */
static void tls_mode_all(const char *db, bool relay_on) {
  char ca[400], group[512];
  snprintf(ca, sizeof ca, "%s/ca.pem", tls_dir);
  CU_ASSERT_FATAL(access(ca, R_OK) == 0);
  tls_group(ca, group, sizeof group);
  tls_make_db(db);
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  char source_extra[1024] = "";
  if (relay_on)
    lt_relay_settings(&e, NULL, source_extra, sizeof source_extra);
  CU_ASSERT_FATAL(tls_config(&e, db, group, group, source_extra) == 0);
  CU_ASSERT_STRING_EQUAL(e.source->from.ep.ssl_ca, ca);
  CU_ASSERT_STRING_EQUAL(e.task->target.ep.ssl_ca, ca);
  dmh_subtask *relay = NULL;
  dm_error err;
  if (relay_on) {
    relay = lt_relay(&e);
    CU_ASSERT_FATAL(relay != NULL);
    CU_ASSERT_FATAL(dmh_subtask_start(relay, &err) == 0);
  }
  dmh_subtask *st = lt_subtask_relay(&e, relay);
  CU_ASSERT_FATAL(st && dmh_subtask_start(st, &err) == 0);
  for (double end = lt_now() + 60;
       lt_now() < end && dmh_subtask_stage(st) == DMH_STAGE_RUNNING &&
       lt_count(dst,
                "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'dm_meta' "
                "AND TABLE_NAME = '%s_syncer_checkpoint'",
                db) == 0;
       lt_sleep_ms(50))
    ;
  bool caught = dmh_subtask_stage(st) == DMH_STAGE_RUNNING && ts_catch_up(db, 60000);
  char msg[1024] = "", raw[600] = "";
  int code = lt_first_error(st, msg, sizeof msg, raw, sizeof raw, NULL);
  if (code)
    fprintf(stderr, "error %d: %s (%s)\n", code, msg, raw);
  CU_ASSERT_EQUAL(code, 0);
  CU_ASSERT(caught);
  CU_ASSERT(ts_equal(db, db));
  lt_exec(src, "INSERT INTO %s.t VALUES (4,'four')", db);
  lt_exec(src, "UPDATE %s.t SET v = 'uno' WHERE id = 1", db);
  lt_exec(src, "DELETE FROM %s.t WHERE id = 2", db);
  CU_ASSERT(ts_catch_up(db, 30000));
  CU_ASSERT_EQUAL(lt_first_error(st, msg, sizeof msg, raw, sizeof raw, NULL), 0);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM %s.t", db), 3);
  CU_ASSERT(ts_equal(db, db));
  if (relay_on) {
    CU_ASSERT_EQUAL(dmh_subtask_stage(relay), DMH_STAGE_RUNNING);
    CU_ASSERT_EQUAL(lt_first_error(relay, msg, sizeof msg, raw, sizeof raw, NULL), 0);
  }
  ts_stop(st);
  ts_stop(relay);
  lt_teardown(&e);
}

static void test_mode_all_tls(void) {
  tls_mode_all("h12_tls", false);
}

static void test_mode_all_tls_relay(void) {
  tls_mode_all("h12_tlsr", true);
}

/* Both servers as a TLS-only installation runs them: require_secure_transport = ON refuses every
 * connection without TLS (root's too; the suite's connections, opened before, stay). Mode all with
 * the relay, over the security groups, as above. */
static void test_secure_transport_only(void) {
  CU_ASSERT_FATAL(lt_exec(src, "SET GLOBAL require_secure_transport = ON") == 0);
  CU_ASSERT_FATAL(lt_exec(dst, "SET GLOBAL require_secure_transport = ON") == 0);
  /* the precondition: a plain connection is refused now */
  MYSQL *plain = mysql_init(NULL);
  unsigned port = (unsigned)atoi(getenv("DMH_SOURCE_PORT") ? getenv("DMH_SOURCE_PORT") : "13306");
  bool ssl_off = false;
  mysql_optionsv(plain, MYSQL_OPT_SSL_ENFORCE, &ssl_off);
  CU_ASSERT(mysql_real_connect(plain, "127.0.0.1", "root", "", NULL, port, NULL, 0) == NULL);
  CU_ASSERT(strstr(mysql_error(plain), "secure transport") != NULL || mysql_errno(plain) == 3159 ||
            mysql_errno(plain) == 1045);
  mysql_close(plain);
  tls_mode_all("h12_tlso", true);
  lt_exec(src, "SET GLOBAL require_secure_transport = OFF");
  lt_exec(dst, "SET GLOBAL require_secure_transport = OFF");
}

/* The error of a mode all run that cannot connect: the start's own (the sync checks the target at
 * start) or the first error of the settled subtask. */
static int tls_refused(const char *db, const char *from_extra, const char *target_extra, char *msg,
                       size_t len, bool *resumable) {
  tls_make_db(db);
  lt_env e;
  if (lt_init(&e) != 0 || tls_config(&e, db, from_extra, target_extra, NULL) != 0)
    return -1;
  dmh_subtask *st = lt_subtask(&e);
  CU_ASSERT_FATAL(st != NULL);
  dm_error err;
  int code;
  if (dmh_subtask_start(st, &err) < 0) {
    code = err.code;
    snprintf(msg, len, "%s", err.message);
    *resumable = err.resumable;
  } else {
    CU_ASSERT_EQUAL(dmh_subtask_wait_settled(st, 30000), DMH_STAGE_PAUSED);
    code = lt_first_error(st, msg, len, NULL, 0, resumable);
  }
  fprintf(stderr, "refused: %s\n", msg);
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM %s.t", db), -1); /* nothing loaded */
  ts_stop(st);
  lt_teardown(&e);
  return code;
}

static void tls_good_group(char *out, size_t len) {
  char ca[400];
  snprintf(ca, sizeof ca, "%s/ca.pem", tls_dir);
  tls_group(ca, out, len);
}

/* Without a security group the REQUIRE SSL account is refused: TLS is what lets it in. */
static void test_plain_refused(void) {
  char msg[1024] = "", good[512];
  bool resumable = true;
  tls_good_group(good, sizeof good);
  CU_ASSERT_EQUAL(tls_refused("h12_tlsp", NULL, good, msg, sizeof msg, &resumable),
                  DM_ERR_DB_CONNECT);
  CU_ASSERT(lt_has(msg, "Access denied for user 'dmh_tls'"));
  CU_ASSERT(lt_has(msg, "source"));
  CU_ASSERT_EQUAL(tls_refused("h12_tlsp", good, NULL, msg, sizeof msg, &resumable),
                  DM_ERR_DB_CONNECT);
  CU_ASSERT(lt_has(msg, "Access denied for user 'dmh_tls'"));
  CU_ASSERT(lt_has(msg, "target"));
}

/* A wrong CA on `side` (the other side right): the coded error names that server and the file. */
static void tls_wrong_ca(testdb_side side, const char *db) {
  char dir[] = "/tmp/dmh-tls-ca-XXXXXX";
  CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
  char cmd[1024], ca[300], group[512], good[512];
  snprintf(ca, sizeof ca, "%s/other-ca.pem", dir);
  snprintf(cmd, sizeof cmd,
           "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj '/CN=not the pair CA' "
           "-keyout '%s/other-ca-key.pem' -out '%s' >/dev/null 2>&1",
           dir, ca);
  CU_ASSERT_FATAL(system(cmd) == 0);
  CU_ASSERT_FATAL(access(ca, R_OK) == 0);
  tls_group(ca, group, sizeof group);
  tls_good_group(good, sizeof good);
  char msg[1024] = "";
  bool resumable = true;
  bool src_side = side == TESTDB_SOURCE;
  CU_ASSERT_EQUAL(tls_refused(db, src_side ? group : good, src_side ? good : group, msg, sizeof msg,
                              &resumable),
                  DM_ERR_DB_CONNECT);
  testdb_params p;
  testdb_params_get(side, &p);
  char where[300];
  snprintf(where, sizeof where, "%s %s:%u", src_side ? "source" : "target", p.host, p.port);
  CU_ASSERT(lt_has(msg, where));
  CU_ASSERT(lt_has(msg, ca));
  CU_ASSERT(lt_has(msg, "TLS"));
  CU_ASSERT_FALSE(resumable);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  CU_ASSERT(system(cmd) == 0);
}

static void test_wrong_ca(void) {
  tls_wrong_ca(TESTDB_SOURCE, "h12_tlsw");
  tls_wrong_ca(TESTDB_TARGET, "h12_tlsw");
}

/* An ssl-ca that is not there is refused when the file is loaded, at its line. */
static void test_missing_ca_file(void) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  char path[400], text[1024];
  snprintf(path, sizeof path, "%s/src.cfg", e.dir);
  snprintf(text, sizeof text,
           "source-id = \"s\";\nfrom = { host = \"127.0.0.1\"; port = 3306; user = \"u\";\n"
           "  security = { ssl-ca = \"%s/no-such-ca.pem\"; };\n};\n",
           e.dir);
  FILE *f = fopen(path, "w");
  CU_ASSERT_FATAL(f != NULL);
  fputs(text, f);
  fclose(f);
  dmh_source_config *s = NULL;
  dm_error err;
  CU_ASSERT_EQUAL(dmh_source_config_load(path, &s, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_CONFIG_INVALID);
  char at[420];
  snprintf(at, sizeof at, "%s:3:", path);
  CU_ASSERT(lt_has(err.message, at));
  CU_ASSERT(lt_has(err.message, "no-such-ca.pem"));
  dmh_source_config_free(s);
  s = NULL;
  /* a relative ssl-ca is the config file's neighbour; ssl-cert without ssl-key is refused */
  char ca[420], key_less[420];
  snprintf(ca, sizeof ca, "%s/ca.pem", e.dir);
  snprintf(key_less, sizeof key_less, "%s/src2.cfg", e.dir);
  f = fopen(ca, "w");
  CU_ASSERT_FATAL(f != NULL);
  fputs("not read at load time\n", f);
  fclose(f);
  f = fopen(path, "w");
  CU_ASSERT_FATAL(f != NULL);
  fputs("source-id = \"s\";\nfrom = { host = \"127.0.0.1\"; user = \"u\";\n"
        "  security = { ssl-ca = \"ca.pem\"; };\n};\n",
        f);
  fclose(f);
  CU_ASSERT_EQUAL_FATAL(dmh_source_config_load(path, &s, &err), 0);
  CU_ASSERT_STRING_EQUAL(s->from.ep.ssl_ca, ca);
  CU_ASSERT_PTR_NULL(s->from.ep.ssl_cert);
  dmh_source_config_free(s);
  s = NULL;
  f = fopen(key_less, "w");
  CU_ASSERT_FATAL(f != NULL);
  fputs("source-id = \"s\";\nfrom = { host = \"127.0.0.1\"; user = \"u\";\n"
        "  security = { ssl-ca = \"ca.pem\"; ssl-cert = \"ca.pem\"; };\n};\n",
        f);
  fclose(f);
  CU_ASSERT_EQUAL(dmh_source_config_load(key_less, &s, &err), -1);
  CU_ASSERT(lt_has(err.message, "ssl-cert without ssl-key"));
  CU_ASSERT(lt_has(err.message, "src2.cfg:3:"));
  dmh_source_config_free(s);
  lt_teardown(&e);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"mode all over TLS", test_mode_all_tls},
      {"mode all over TLS with the relay", test_mode_all_tls_relay},
      {"servers with require_secure_transport = ON", test_secure_transport_only},
      {"no security group: refused", test_plain_refused},
      {"a wrong CA: coded error naming server and file", test_wrong_ca},
      {"an ssl-ca that is not there", test_missing_ca_file},
  };
  return dmh_cunit_run("sync_tls", suite_init, suite_clean, tests, sizeof tests / sizeof tests[0]);
}
