/*
 * The cluster's key layout and values (host/cluster/cluster_keys.c): keys built and parsed back,
 * prefixes for ranges, names that must not reach a key, and the JSON values round-tripped or
 * refused.
 */
#include <CUnit/Basic.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_keys.h"
#include "cunit_run.h"

static void test_keys(void) {
  char k[DMH_CLUSTER_KEY_MAX], a[DMH_CLUSTER_NAME_MAX], b[DMH_CLUSTER_NAME_MAX],
      c[DMH_CLUSTER_NAME_MAX];
  const char *p = DMH_CLUSTER_PREFIX_DEFAULT;
  CU_ASSERT(dmh_cluster_key(k, sizeof k, p, DMH_KEY_LEADER, NULL, NULL, NULL) > 0);
  CU_ASSERT_STRING_EQUAL(k, "/dmhost/leader");
  CU_ASSERT_EQUAL(dmh_cluster_key_parse(k, strlen(k), p, DMH_KEY_LEADER, NULL, NULL, NULL), 0);
  CU_ASSERT(dmh_cluster_key(k, sizeof k, p, DMH_KEY_BOUND, "w-1", NULL, NULL) > 0);
  CU_ASSERT_STRING_EQUAL(k, "/dmhost/bound/w-1");
  CU_ASSERT_EQUAL(dmh_cluster_key_parse(k, strlen(k), p, DMH_KEY_BOUND, a, NULL, NULL), 0);
  CU_ASSERT_STRING_EQUAL(a, "w-1");
  CU_ASSERT(dmh_cluster_key(k, sizeof k, "/c2", DMH_KEY_STATUS, "w1", "task.a", "src_1") > 0);
  CU_ASSERT_STRING_EQUAL(k, "/c2/status/w1/task.a/src_1");
  CU_ASSERT_EQUAL(dmh_cluster_key_parse(k, strlen(k), "/c2", DMH_KEY_STATUS, a, b, c), 0);
  CU_ASSERT(strcmp(a, "w1") == 0 && strcmp(b, "task.a") == 0 && strcmp(c, "src_1") == 0);
  /* prefixes: every key of the kind, or of the first names */
  CU_ASSERT(dmh_cluster_key(k, sizeof k, p, DMH_KEY_WORKER, NULL, NULL, NULL) > 0);
  CU_ASSERT_STRING_EQUAL(k, "/dmhost/worker/");
  CU_ASSERT(dmh_cluster_key(k, sizeof k, p, DMH_KEY_STATUS, "w1", NULL, NULL) > 0);
  CU_ASSERT_STRING_EQUAL(k, "/dmhost/status/w1/");
  /* another kind, another prefix, a short or long key: not parsed */
  const char *bad[] = {"/dmhost/worker/w1", "/other/bound/w1",    "/dmhost/bound/",
                       "/dmhost/bound",     "/dmhost/bound/w1/x", "/dmhost/bound/.."};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    CU_ASSERT_EQUAL(dmh_cluster_key_parse(bad[i], strlen(bad[i]), p, DMH_KEY_BOUND, a, NULL, NULL),
                    -1);
  /* names that would change the key's shape never make one */
  const char *names[] = {"", "a/b", "..", ".hidden", "a b", "x\n"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    CU_ASSERT_EQUAL(dmh_cluster_key(k, sizeof k, p, DMH_KEY_WORKER, names[i], NULL, NULL), -1);
  char longname[200];
  memset(longname, 'n', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  CU_ASSERT_EQUAL(dmh_cluster_key(k, sizeof k, p, DMH_KEY_WORKER, longname, NULL, NULL), -1);
  CU_ASSERT_EQUAL(dmh_cluster_key(k, 16, p, DMH_KEY_WORKER, "w123456789", NULL, NULL), -1);
}

static void test_values(void) {
  dm_error err;
  dmh_cluster_worker_info w = {.name = "w1", .addr = "127.0.0.1:8262", .relay = "src"}, w2;
  char *t = dmh_cluster_worker_json(&w);
  CU_ASSERT_FATAL(t != NULL);
  CU_ASSERT_EQUAL(dmh_cluster_worker_parse(t, strlen(t), &w2, &err), 0);
  CU_ASSERT(strcmp(w2.name, "w1") == 0 && strcmp(w2.addr, w.addr) == 0 &&
            strcmp(w2.relay, "src") == 0);
  free(t);
  dmh_cluster_binding bnd = {.source = "mysql-01", .leader = 9007199254740993LL}, b2;
  t = dmh_cluster_binding_json(&bnd);
  CU_ASSERT_FATAL(t != NULL);
  CU_ASSERT_EQUAL(dmh_cluster_binding_parse(t, strlen(t), &b2, &err), 0);
  CU_ASSERT_STRING_EQUAL(b2.source, "mysql-01");
  CU_ASSERT_EQUAL(b2.leader, 9007199254740993LL); /* above 2^53: exact */
  free(t);
  const char *bad[] = {"[]",
                       "{",
                       "{\"source\":\"a/b\",\"leader\":3}",
                       "{\"source\":\"s\"}",
                       "{\"source\":\"s\",\"leader\":0}",
                       "{\"source\":7,\"leader\":1}"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CU_ASSERT_EQUAL(dmh_cluster_binding_parse(bad[i], strlen(bad[i]), &b2, &err), -1);
    CU_ASSERT_EQUAL(err.code, DM_ERR_STATE);
  }
  const char *wbad = "{\"name\":\"\",\"relay\":\"\"}";
  CU_ASSERT_EQUAL(dmh_cluster_worker_parse(wbad, strlen(wbad), &w2, &err), -1);
  const char *wok = "{\"name\":\"w9\",\"relay\":\"\"}";
  CU_ASSERT_EQUAL(dmh_cluster_worker_parse(wok, strlen(wok), &w2, &err), 0);
  CU_ASSERT_STRING_EQUAL(w2.relay, "");
}

static void test_master_values(void) {
  dm_error err;
  dmh_cluster_worker_info m;
  char *t = dmh_cluster_master_json("m-1", "127.0.0.1:8261");
  CU_ASSERT_FATAL(t != NULL);
  CU_ASSERT_EQUAL(dmh_cluster_master_parse(t, strlen(t), &m, &err), 0);
  CU_ASSERT(strcmp(m.name, "m-1") == 0 && strcmp(m.addr, "127.0.0.1:8261") == 0);
  free(t);
  const char *mbad = "{\"name\":\"../x\",\"addr\":\"a\"}";
  CU_ASSERT_EQUAL(dmh_cluster_master_parse(mbad, strlen(mbad), &m, &err), -1);
}

/* The file texts ({"config"}) and the expected stages the worker reads (cluster_worker_sync.c). */
static void test_config_and_stage(void) {
  const char *text = "source-id = \"s1\";\n# \"quotes\" and \\ stay\n";
  char *json = dmh_cluster_config_json(text), *back = NULL;
  dm_error err;
  CU_ASSERT_PTR_NOT_NULL_FATAL(json);
  CU_ASSERT_EQUAL(dmh_cluster_config_parse(json, strlen(json), &back, &err), 0);
  CU_ASSERT_STRING_EQUAL(back, text);
  free(back);
  free(json);
  const char *bad[] = {"{}", "{\"config\":1}", "\"x\"", "{"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CU_ASSERT_EQUAL(dmh_cluster_config_parse(bad[i], strlen(bad[i]), &back, &err), -1);
    CU_ASSERT_PTR_NULL(back);
    CU_ASSERT_EQUAL(err.code, DM_ERR_STATE);
  }
  dmh_cluster_stage st;
  for (int s = DMH_CLUSTER_RUNNING; s <= DMH_CLUSTER_STOPPED; s++) {
    const char *name = dmh_cluster_stage_name((dmh_cluster_stage)s);
    CU_ASSERT_EQUAL(dmh_cluster_stage_parse(name, strlen(name), &st), 0);
    CU_ASSERT_EQUAL(st, s);
  }
  CU_ASSERT_STRING_EQUAL(dmh_cluster_stage_name(DMH_CLUSTER_PAUSED), "Paused");
  CU_ASSERT_EQUAL(dmh_cluster_stage_parse("Runnin", 6, &st), -1);
  CU_ASSERT_EQUAL(dmh_cluster_stage_parse("\"Running\"", 9, &st), -1);
  CU_ASSERT_EQUAL(dmh_cluster_stage_parse("running", 7, &st), -1);
}

/* The relay request of start-relay / stop-relay (<p>/relay/<worker>). */
static void test_relay_request(void) {
  dm_error err;
  char k[DMH_CLUSTER_KEY_MAX], a[DMH_CLUSTER_NAME_MAX];
  CU_ASSERT(dmh_cluster_key(k, sizeof k, "/c", DMH_KEY_RELAY, "w2", NULL, NULL) > 0);
  CU_ASSERT_STRING_EQUAL(k, "/c/relay/w2");
  CU_ASSERT_EQUAL(dmh_cluster_key_parse(k, strlen(k), "/c", DMH_KEY_RELAY, a, NULL, NULL), 0);
  CU_ASSERT_STRING_EQUAL(a, "w2");
  dmh_cluster_relay r = {.source = "source1", .stage = DMH_CLUSTER_STOPPED}, r2;
  char *t = dmh_cluster_relay_json(&r);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_STRING_EQUAL(t, "{\"source\":\"source1\",\"stage\":\"Stopped\"}");
  CU_ASSERT_EQUAL(dmh_cluster_relay_parse(t, strlen(t), &r2, &err), 0);
  CU_ASSERT(strcmp(r2.source, "source1") == 0 && r2.stage == DMH_CLUSTER_STOPPED);
  free(t);
  const char *bad[] = {"{\"source\":\"s\",\"stage\":\"Paused\"}", "{\"source\":\"s\"}",
                       "{\"source\":\"a/b\",\"stage\":\"Running\"}", "[]"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CU_ASSERT_EQUAL(dmh_cluster_relay_parse(bad[i], strlen(bad[i]), &r2, &err), -1);
    CU_ASSERT_EQUAL(err.code, DM_ERR_STATE);
  }
}

/* operate-source disable's flag (<p>/disabled/<source>): the tasks it paused. */
static void test_disabled_flag(void) {
  dm_error err;
  char k[DMH_CLUSTER_KEY_MAX], a[DMH_CLUSTER_NAME_MAX];
  CU_ASSERT(dmh_cluster_key(k, sizeof k, "/c", DMH_KEY_DISABLED, "src-a", NULL, NULL) > 0);
  CU_ASSERT_STRING_EQUAL(k, "/c/disabled/src-a");
  CU_ASSERT_EQUAL(dmh_cluster_key_parse(k, strlen(k), "/c", DMH_KEY_DISABLED, a, NULL, NULL), 0);
  CU_ASSERT_STRING_EQUAL(a, "src-a");
  const char names[2][DMH_CLUSTER_NAME_MAX] = {"t1", "t2"};
  char *t = dmh_cluster_disabled_json(names, 2);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_STRING_EQUAL(t, "{\"paused\":[\"t1\",\"t2\"]}");
  char(*got)[DMH_CLUSTER_NAME_MAX] = NULL;
  size_t n = 0;
  CU_ASSERT_EQUAL(dmh_cluster_disabled_parse(t, strlen(t), &got, &n, &err), 0);
  CU_ASSERT(n == 2 && strcmp(got[0], "t1") == 0 && strcmp(got[1], "t2") == 0);
  free(got);
  free(t);
  t = dmh_cluster_disabled_json(names, 0);
  CU_ASSERT(t && strcmp(t, "{\"paused\":[]}") == 0);
  CU_ASSERT(dmh_cluster_disabled_parse(t, strlen(t), &got, &n, &err) == 0 && n == 0);
  free(got);
  free(t);
  const char *bad[] = {"{}", "{\"paused\":\"t1\"}", "{\"paused\":[\"a/b\"]}", "{\"paused\":[1]}"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CU_ASSERT_EQUAL(dmh_cluster_disabled_parse(bad[i], strlen(bad[i]), &got, &n, &err), -1);
    CU_ASSERT_EQUAL(err.code, DM_ERR_STATE);
    CU_ASSERT_PTR_NULL(got);
  }
}

/* start-task's options (<p>/start/<task>/<source>): the binding, remove-meta, the position. */
static void test_start_options(void) {
  dm_error err;
  char k[DMH_CLUSTER_KEY_MAX], a[DMH_CLUSTER_NAME_MAX], b[DMH_CLUSTER_NAME_MAX];
  CU_ASSERT(dmh_cluster_key(k, sizeof k, "/c", DMH_KEY_START, "t1", "src-a", NULL) > 0);
  CU_ASSERT_STRING_EQUAL(k, "/c/start/t1/src-a");
  CU_ASSERT_EQUAL(dmh_cluster_key_parse(k, strlen(k), "/c", DMH_KEY_START, a, b, NULL), 0);
  CU_ASSERT(strcmp(a, "t1") == 0 && strcmp(b, "src-a") == 0);
  CU_ASSERT(dmh_cluster_key(k, sizeof k, "/c", DMH_KEY_START, "t1", NULL, NULL) > 0);
  CU_ASSERT_STRING_EQUAL(k, "/c/start/t1/"); /* stop-task's prefix: not t1x's keys */
  dmh_cluster_start st = {.binding = 42, .remove_meta = true, .has_start = true}, got;
  strcpy(st.start.name, "mysql-bin.000004");
  st.start.pos = 385;
  strcpy(st.start.gtid, "0-1-22");
  char *t = dmh_cluster_start_json(&st);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_EQUAL(dmh_cluster_start_parse(t, strlen(t), &got, &err), 0);
  CU_ASSERT(got.binding == 42 && got.remove_meta && got.has_start && got.start.pos == 385 &&
            strcmp(got.start.name, "mysql-bin.000004") == 0 &&
            strcmp(got.start.gtid, "0-1-22") == 0);
  free(t);
  st.has_start = false;
  t = dmh_cluster_start_json(&st);
  CU_ASSERT(t && dmh_cluster_start_parse(t, strlen(t), &got, &err) == 0 && got.remove_meta &&
            !got.has_start && !got.at_stop && got.binding == 42);
  free(t);
  st.at_stop = true; /* stop-task's remove-meta */
  t = dmh_cluster_start_json(&st);
  CU_ASSERT(t && dmh_cluster_start_parse(t, strlen(t), &got, &err) == 0 && got.at_stop &&
            got.remove_meta && !got.has_start && !got.at_resume);
  free(t);
  /* resume-task's (DM's OpenAPI start of a task created stopped): marked, with its duration */
  dmh_cluster_start rs = {.binding = 9, .at_resume = true, .has_start = true};
  strcpy(rs.start.name, "mysql-bin.000002");
  strcpy(rs.safe_mode_duration, "90s");
  t = dmh_cluster_start_json(&rs);
  CU_ASSERT(t && dmh_cluster_start_parse(t, strlen(t), &got, &err) == 0 && got.at_resume &&
            !got.at_stop && !got.remove_meta && got.has_start &&
            strcmp(got.safe_mode_duration, "90s") == 0);
  free(t);
  const char *bad[] = {
      "{}",
      "{\"binding\":7,\"safe_mode_duration\":90}",
      "{\"binding\":7,\"safe_mode_duration\":\"1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h\"}",
      "{\"binding\":0}",
      "{\"binding\":\"7\"}",
      "{\"binding\":7,\"start\":{\"pos\":4}}",
      "{\"binding\":7,\"start\":{\"name\":\"\",\"pos\":4}}",
      "{\"binding\":7,\"start\":{\"name\":\"b.1\",\"pos\":-1}}",
      "["};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CU_ASSERT_EQUAL(dmh_cluster_start_parse(bad[i], strlen(bad[i]), &got, &err), -1);
    CU_ASSERT_EQUAL(err.code, DM_ERR_STATE);
  }
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"keys built and parsed", test_keys},
      {"values round-tripped and refused", test_values},
      {"master values", test_master_values},
      {"file texts and stages", test_config_and_stage},
      {"relay requests", test_relay_request},
      {"disabled flags", test_disabled_flag},
      {"start-task's options", test_start_options},
  };
  return dmh_cunit_run("cluster_keys", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
