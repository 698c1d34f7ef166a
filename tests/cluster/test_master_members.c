/*
 * offline-member on a master (host/cluster/master/master_members.c, issue 23) against the
 * fixture's real 3-member etcd: DM's removal of a worker that is gone, written by the leader in one
 * txn fenced by its token and by the worker's registration being absent. An online worker is
 * refused (15047) and keeps its keys; an unknown name and a second removal answer "not exists";
 * neither or both of --master/--worker is a usage error; a follower in process (no forwarder)
 * names the leader, a follower process forwards (dmctl and HTTP, DM's -w/-n flags); a stale token
 * writes nothing; the removal deletes the relay request and the binding and drops the worker's
 * dm_master_worker_state series, and list-member no longer shows it; --master answers "online" for
 * a running master and "not exists" for any other name.
 */
#include "master_util.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "cluster_keys.h"
#include "master_internal.h"
#include "metrics.h"

/* Whether the process's /metrics stops showing `needle` within ms. */
static bool mm_wait_metric_gone(const char *needle, int64_t ms) {
  for (int64_t t0 = te_now_ms(); te_now_ms() - t0 < ms;) {
    char *text = dmh_metrics_render(dmh_metrics_process(), NULL);
    bool found = text && strstr(text, needle);
    free(text);
    if (!found)
      return true;
    tm_sleep_ms(50);
  }
  return false;
}

/* <p>/relay/<w> as start-relay writes it (the worker need not be online for the test). */
static void mm_relay_key(dmh_etcd *c, const char *prefix, const char *w, const char *source) {
  char key[DMH_CLUSTER_KEY_MAX];
  dmh_cluster_key(key, sizeof key, prefix, DMH_KEY_RELAY, w, NULL, NULL);
  dmh_cluster_relay rq = {.stage = DMH_CLUSTER_RUNNING};
  snprintf(rq.source, sizeof rq.source, "%s", source);
  char *val = dmh_cluster_relay_json(&rq);
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_put(c, DMH_ETCD_S(key), DMH_ETCD_S(val), 0, 0, NULL, &err), 0);
  free(val);
}

static bool mm_has(dmh_etcd *c, const char *prefix, dmh_cluster_key_kind kind, const char *w) {
  char key[DMH_CLUSTER_KEY_MAX];
  dmh_cluster_key(key, sizeof key, prefix, kind, w, NULL, NULL);
  char *v = te_get(c, key, NULL);
  free(v);
  return v != NULL;
}

/* Whether list-member --worker names w. */
static bool mm_listed(dmh_master *m, const char *w) {
  json_object *r = tm_cmd(m, "list-member", "{\"worker\": true}");
  char needle[160];
  snprintf(needle, sizeof needle, "\"name\":\"%s\"", w);
  bool listed = strstr(tm_text(r), needle) != NULL;
  json_object_put(r);
  return listed;
}

static void test_offline_worker(void) {
  char prefix[128], path[256];
  tm_prefix(prefix, sizeof prefix, "offline");
  dmh_etcd *c = te_client();
  dmh_master *m = tm_start("lead", prefix);
  int64_t tok = tm_wait_token(m, 5000);
  CU_ASSERT_FATAL(tok > 0);
  dmh_master *f = tm_start("follow", prefix);
  fake_worker w1 = {"w1", 0};
  tm_worker_up(c, prefix, &w1, "");
  tm_source_file("src-o");
  snprintf(path, sizeof path, "%s/src-o.cfg", tm_dir);
  json_object *r = tm_cmd(m, "operate-source", "{\"op\": \"create\", \"path\": \"%s\"}", path);
  CU_ASSERT(tm_ok(r));
  json_object_put(r);
  CU_ASSERT_FATAL(tm_wait_bound(c, prefix, "w1", "src-o", 5000));
  r = tm_cmd(m, "start-relay", "{\"source\": \"src-o\"}");
  CU_ASSERT(tm_ok(r));
  json_object_put(r);
  CU_ASSERT_FATAL(mm_has(c, prefix, DMH_KEY_RELAY, "w1"));
  CU_ASSERT(tm_wait_metric("dm_master_worker_state{worker=\"w1\"} 2", 5000));

  /* neither or both flags: DM's usage words */
  r = tm_cmd(m, "offline-member", "{\"name\": \"w1\"}");
  CU_ASSERT_EQUAL(tm_code(r), DM_ERR_CONTROL_REQUEST);
  CU_ASSERT(strstr(tm_text(r), "should specify either --master or --worker") != NULL);
  json_object_put(r);
  r = tm_cmd(m, "offline-member", "{\"name\": \"w1\", \"master\": true, \"worker\": true}");
  CU_ASSERT_EQUAL(tm_code(r), DM_ERR_CONTROL_REQUEST);
  json_object_put(r);
  r = tm_cmd(m, "offline-member", "{\"worker\": true}");
  CU_ASSERT_EQUAL(tm_code(r), DM_ERR_CONTROL_REQUEST);
  json_object_put(r);

  /* the attack: a running worker's binding and relay request cannot be stripped */
  r = tm_cmd(m, "offline-member", "{\"worker\": true, \"name\": \"w1\"}");
  CU_ASSERT_EQUAL(tm_code(r), DM_ERR_CLUSTER_MEMBER_ONLINE);
  CU_ASSERT(strstr(tm_text(r), "dm-worker with name w1 is still online") != NULL);
  json_object_put(r);
  CU_ASSERT(mm_has(c, prefix, DMH_KEY_BOUND, "w1") && mm_has(c, prefix, DMH_KEY_RELAY, "w1"));
  /* the txn's own compare refuses it too (no read of ours before it) */
  dm_error err;
  CU_ASSERT_EQUAL(master_offline_worker(m, c, tok, "w1", &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_CLUSTER_MEMBER_ONLINE);
  CU_ASSERT(mm_has(c, prefix, DMH_KEY_BOUND, "w1") && mm_has(c, prefix, DMH_KEY_RELAY, "w1"));

  /* a name nothing is known of */
  r = tm_cmd(m, "offline-member", "{\"worker\": true, \"name\": \"nope\"}");
  CU_ASSERT_EQUAL(tm_code(r), DM_ERR_NOT_FOUND);
  CU_ASSERT(strstr(tm_text(r), "dm-worker with name nope not exists") != NULL);
  json_object_put(r);
  r = tm_cmd(m, "offline-member", "{\"worker\": true, \"name\": \"../x\"}");
  CU_ASSERT_EQUAL(tm_code(r), DM_ERR_CONTROL_REQUEST);
  json_object_put(r);

  /* a follower without a forwarder names the leader */
  r = tm_cmd(f, "offline-member", "{\"worker\": true, \"name\": \"w1\"}");
  CU_ASSERT_EQUAL(tm_code(r), DM_ERR_CLUSTER_NOT_LEADER);
  CU_ASSERT(strstr(tm_text(r), "the leader is lead") != NULL);
  json_object_put(r);

  /* w1 goes: the leader unbinds it (rule 1), shows it offline (0); its relay request stays */
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_lease_revoke(c, w1.lease, &err), 0);
  CU_ASSERT(tm_wait_bound(c, prefix, "w1", "", 5000));
  CU_ASSERT(tm_wait_metric("dm_master_worker_state{worker=\"w1\"} 0", 5000));
  CU_ASSERT(mm_has(c, prefix, DMH_KEY_RELAY, "w1"));

  /* a stale token (an earlier leadership's) writes nothing */
  CU_ASSERT_EQUAL(master_offline_worker(m, c, tok - 1, "w1", &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_CLUSTER_FENCED);
  CU_ASSERT(mm_has(c, prefix, DMH_KEY_RELAY, "w1"));
  CU_ASSERT(tm_wait_metric("dm_master_worker_state{worker=\"w1\"} 0", 100));

  /* the removal, through the follower's leader: keys and the series gone, list-member quiet */
  r = tm_cmd(m, "offline-member", "{\"worker\": true, \"name\": \"w1\"}");
  CU_ASSERT(tm_ok(r));
  json_object_put(r);
  CU_ASSERT(!mm_has(c, prefix, DMH_KEY_RELAY, "w1") && !mm_has(c, prefix, DMH_KEY_BOUND, "w1"));
  CU_ASSERT(mm_wait_metric_gone("dm_master_worker_state{worker=\"w1\"}", 100));
  CU_ASSERT(!mm_listed(m, "w1") && !mm_listed(f, "w1"));
  /* a scheduling round later it stays gone (the leader's list forgot it) */
  fake_worker w2 = {"w2", 0};
  tm_worker_up(c, prefix, &w2, "");
  CU_ASSERT(tm_wait_bound(c, prefix, "w2", "src-o", 5000));
  CU_ASSERT(tm_wait_metric("dm_master_worker_state{worker=\"w2\"} 2", 5000));
  CU_ASSERT(mm_wait_metric_gone("dm_master_worker_state{worker=\"w1\"}", 100));
  /* a second call: nothing left of it */
  r = tm_cmd(m, "offline-member", "{\"worker\": true, \"name\": \"w1\"}");
  CU_ASSERT_EQUAL(tm_code(r), DM_ERR_NOT_FOUND);
  json_object_put(r);

  /* --master: a running master is online, any other name was never kept */
  r = tm_cmd(f, "offline-member", "{\"master\": true, \"name\": \"lead\"}");
  CU_ASSERT_EQUAL(tm_code(r), DM_ERR_CLUSTER_MEMBER_ONLINE);
  CU_ASSERT(strstr(tm_text(r), "dm-master with name lead is still online") != NULL);
  json_object_put(r);
  r = tm_cmd(m, "offline-member", "{\"master\": true, \"name\": \"follow\"}");
  CU_ASSERT_EQUAL(tm_code(r), DM_ERR_CLUSTER_MEMBER_ONLINE);
  json_object_put(r);
  r = tm_cmd(m, "offline-member", "{\"master\": true, \"name\": \"gone\"}");
  CU_ASSERT_EQUAL(tm_code(r), DM_ERR_NOT_FOUND);
  CU_ASSERT(strstr(tm_text(r), "dm-master with name gone not exists") != NULL);
  json_object_put(r);

  dmh_master_stop(f, true);
  dmh_master_stop(m, true);
  dmh_etcd_lease_revoke(c, w2.lease, &err);
  dmh_etcd_delete(c, DMH_ETCD_S(prefix), 1, NULL, &err);
  dmh_etcd_close(c);
}

/* Through a follower process: dmctl with DM's flags and DM's DELETE routes, forwarded to the
 * leader. */
static void test_offline_through_follower(void) {
  char prefix[128], leader[64];
  tm_prefix(prefix, sizeof prefix, "offfwd");
  dmh_etcd *c = te_client();
  pid_t pids[2] = {tm_spawn("ma", prefix, TM_PORT(7)), tm_spawn("mb", prefix, TM_PORT(8))};
  CU_ASSERT_FATAL(tm_wait_leader(c, prefix, NULL, leader, sizeof leader, 5000) > 0);
  int fport = strcmp(leader, "ma") == 0 ? TM_PORT(8) : TM_PORT(7);
  fake_worker wq = {"wq", 0};
  tm_worker_up(c, prefix, &wq, "");
  json_object *r = NULL;
  int rc;
  /* the follower answers once it is up */
  for (int64_t t0 = te_now_ms(); (rc = tm_dmctl(&r, fport, "offline-member -w -n wq")) != 0 &&
                                 tm_code(r) != 15047 && te_now_ms() - t0 < 5000;) {
    json_object_put(r);
    tm_sleep_ms(100);
  }
  CU_ASSERT_NOT_EQUAL(rc, 0);
  CU_ASSERT_EQUAL(tm_code(r), DM_ERR_CLUSTER_MEMBER_ONLINE);
  json_object_put(r);
  CU_ASSERT_NOT_EQUAL(tm_dmctl(&r, fport, "offline-member -n wq"), 0);
  CU_ASSERT(strstr(tm_text(r), "should specify either --master or --worker") != NULL);
  json_object_put(r);
  CU_ASSERT_NOT_EQUAL(tm_dmctl(&r, fport, "offline-member --worker"), 0);
  CU_ASSERT(strstr(tm_text(r), "-n NAME is required") != NULL);
  json_object_put(r);
  long status = 0;
  r = tm_api(fport, "DELETE", "/api/v1/cluster/workers/wq", NULL, &status);
  CU_ASSERT_EQUAL(status, 400);
  CU_ASSERT(r && strstr(tm_text(r), "code=15047") != NULL);
  json_object_put(r);
  char path[128];
  snprintf(path, sizeof path, "/api/v1/cluster/masters/%s", leader);
  r = tm_api(fport, "DELETE", path, NULL, &status);
  CU_ASSERT_EQUAL(status, 400);
  CU_ASSERT(r && strstr(tm_text(r), "code=15047") != NULL);
  json_object_put(r);
  r = tm_api(fport, "DELETE", "/api/v1/cluster/masters/gone", NULL, &status);
  CU_ASSERT_EQUAL(status, 400);
  CU_ASSERT(r && strstr(tm_text(r), "code=14003") != NULL);
  json_object_put(r);

  /* wq gone, with a relay request left: dmctl removes it through the follower */
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_lease_revoke(c, wq.lease, &err), 0);
  mm_relay_key(c, prefix, "wq", "src-x");
  CU_ASSERT_EQUAL(tm_dmctl(&r, fport, "offline-member --worker --name wq"), 0);
  CU_ASSERT(tm_ok(r));
  json_object_put(r);
  CU_ASSERT(!mm_has(c, prefix, DMH_KEY_RELAY, "wq"));
  CU_ASSERT_NOT_EQUAL(tm_dmctl(&r, fport, "offline-member -w -n wq"), 0);
  CU_ASSERT_EQUAL(tm_code(r), DM_ERR_NOT_FOUND);
  json_object_put(r);
  /* DM's DELETE answers 204 with no body */
  mm_relay_key(c, prefix, "wr", "src-y");
  r = tm_api(fport, "DELETE", "/api/v1/cluster/workers/wr", NULL, &status);
  CU_ASSERT_EQUAL(status, 204);
  CU_ASSERT_PTR_NULL(r);
  json_object_put(r);
  CU_ASSERT(!mm_has(c, prefix, DMH_KEY_RELAY, "wr"));

  for (int i = 0; i < 2; i++) {
    int st = 0;
    kill(pids[i], SIGTERM);
    CU_ASSERT_EQUAL(waitpid(pids[i], &st, 0), pids[i]);
    CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  dmh_etcd_delete(c, DMH_ETCD_S(prefix), 1, NULL, &err);
  dmh_etcd_close(c);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"offline-member: refusals, the fenced removal, its series", test_offline_worker},
      {"offline-member through a follower process: dmctl and DM's routes",
       test_offline_through_follower},
  };
  return dmh_cunit_run("master_members", tm_init, tm_clean, tests, sizeof tests / sizeof tests[0]);
}
