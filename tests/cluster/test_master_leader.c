/*
 * DM's operate-leader evict|cancel-evict (host/cluster/master/master_evict.c) against the
 * fixture's real 3-member etcd: an evicted leader stops acting before it answers and gives its
 * leader key back (fenced by its token), another master leads (the time the key took to come back
 * printed), the evicted one never leads while evicted even when nobody else may, cancel-evict lets
 * it lead again, a stale token deletes no newer leader's key, a follower evicted only stops
 * campaigning; dmctl --master-addr on master processes; `dmhost serve` refuses it.
 *
 * Regression (a bug seen before in this feature): the election loop's compare-exchange of the
 * token after master_lead wrote the current value (0 after an evict) into the variable the
 * give-back was fenced by; the delete then compared create_revision with 0, never true, and the
 * evicted leader's key stayed under its live lease: no other master could lead. The give-back is
 * now fenced by `held` (kept under evict_lock), and the loop's compare-exchange works on a copy.
 * With the give-back fenced by 0 the first test fails (checked: "another master leads", no new
 * leader within 15 s), and so does the second.
 */
#include "dmhost/clock.h"
#include "master_util.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "control.h"
#include "master_internal.h"

/* The leadership state the evict answer promises, read as master_evict.c writes it. */
static void tl_state(dmh_master *m, bool *leading, int64_t *held) {
  pthread_mutex_lock(&m->evict_lock);
  *leading = m->leading;
  *held = m->held;
  pthread_mutex_unlock(&m->evict_lock);
}

static bool tl_msg_has(json_object *r, const char *part) {
  json_object *v = NULL;
  bool ok = json_object_object_get_ex(r, "msg", &v) && strstr(json_object_get_string(v), part);
  if (!ok)
    printf("\n  answer without \"%s\": %s\n", part, tm_text(r));
  return ok;
}

static void test_evict_leader(void) {
  char prefix[128], name[64];
  tm_prefix(prefix, sizeof prefix, "evict");
  dmh_etcd *c = te_client();
  dmh_master *ma = tm_start("ma", prefix);
  int64_t ta = tm_wait_token(ma, 5000);
  CU_ASSERT_FATAL(ta > 0);
  dmh_master *mb = tm_start("mb", prefix), *mc = tm_start("mc", prefix);
  CU_ASSERT_EQUAL_FATAL(tm_leader(c, prefix, name, sizeof name), ta);
  CU_ASSERT_STRING_EQUAL_FATAL(name, "ma");

  /* evict the leader: when the answer comes it has stopped acting and its key is gone */
  int64_t t0 = te_now_ms();
  json_object *r = tm_cmd(ma, "operate-leader", "{\"op\": \"evict\"}");
  int64_t t_answer = te_now_ms();
  CU_ASSERT(tm_ok(r));
  CU_ASSERT(tl_msg_has(r, "stopped leading"));
  json_object_put(r);
  bool leading;
  int64_t held;
  tl_state(ma, &leading, &held);
  CU_ASSERT_EQUAL(dmh_master_token(ma), 0);
  CU_ASSERT_FALSE(leading); /* its scheduling loop and shard coordinator returned */
  CU_ASSERT_EQUAL(held, 0); /* its key given back */
  int64_t now_tok = tm_leader(c, prefix, name, sizeof name);
  CU_ASSERT(now_tok != ta);
  /* a scheduler write fenced by its old token lands nowhere */
  dm_error err;
  dmh_sched_action bind = {.kind = DMH_SCHED_BIND, .source = "s-ev", .worker = "w-ev"};
  CU_ASSERT_EQUAL(master_apply(c, ma, ta, &bind, 1, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_CLUSTER_FENCED);

  /* another master leads: the others' watch saw the key's delete */
  int64_t tb = tm_wait_leader(c, prefix, "ma", name, sizeof name, 15000);
  int64_t t_back = te_now_ms();
  printf("\n  evict answered in %lld ms; a new leader's key %lld ms after the answer\n",
         (long long)(t_answer - t0), (long long)(t_back - t_answer));
  CU_ASSERT_FATAL(tb > ta); /* "another master leads" */
  CU_ASSERT(strcmp(name, "mb") == 0 || strcmp(name, "mc") == 0);
  dmh_master *lead = strcmp(name, "mb") == 0 ? mb : mc;
  dmh_master *follower = lead == mb ? mc : mb;
  CU_ASSERT_EQUAL(tm_wait_token(lead, 5000), tb);
  CU_ASSERT_EQUAL(dmh_master_token(ma), 0);

  /* a stale token deletes no newer leader's key, nor does 0 (the overwritten token of the bug) */
  bool deleted = true;
  CU_ASSERT_EQUAL(master_give_back(c, ma, ta, &deleted, &err), 0);
  CU_ASSERT_FALSE(deleted);
  CU_ASSERT_EQUAL(master_give_back(c, ma, 0, &deleted, &err), 0);
  CU_ASSERT_FALSE(deleted);
  CU_ASSERT_EQUAL(tm_leader(c, prefix, name, sizeof name), tb);
  CU_ASSERT_STRING_EQUAL(name, lead->name);

  /* a follower evicted: it only stops campaigning; the leader stays */
  r = tm_cmd(follower, "operate-leader", "{\"op\": \"evict\"}");
  CU_ASSERT(tm_ok(r));
  CU_ASSERT(tl_msg_has(r, "is not the leader"));
  json_object_put(r);
  CU_ASSERT_EQUAL(tm_leader(c, prefix, name, sizeof name), tb);
  CU_ASSERT_EQUAL(dmh_master_token(lead), tb);
  /* evict again: answered the same, nothing changes */
  r = tm_cmd(ma, "operate-leader", "{\"op\": \"evict\"}");
  CU_ASSERT(tm_ok(r));
  CU_ASSERT(tl_msg_has(r, "is not the leader"));
  json_object_put(r);

  /* the leader stops (resigns): the two evicted ones never campaign, nobody leads. Nothing to
   * wait for but time: a master that campaigns takes the deleted key within ~100 ms (above), so
   * 3 s without one is the answer. */
  dmh_master_stop(lead, true);
  int64_t t1 = te_now_ms();
  int64_t seen = 0;
  while (te_now_ms() - t1 < 3000 && !seen) {
    seen = tm_leader(c, prefix, name, sizeof name) || dmh_master_token(ma) ||
           dmh_master_token(follower);
    tm_sleep_ms(50);
  }
  if (seen)
    printf("\n  an evicted master leads: %s\n", name);
  CU_ASSERT_EQUAL(seen, 0);

  /* cancel-evict: ma campaigns again and leads */
  t1 = te_now_ms();
  r = tm_cmd(ma, "operate-leader", "{\"op\": \"cancel-evict\"}");
  CU_ASSERT(tm_ok(r));
  CU_ASSERT(tl_msg_has(r, "campaigns again"));
  json_object_put(r);
  int64_t ta2 = tm_wait_token(ma, 5000);
  printf("\n  cancel-evict: ma leads again %lld ms after the request\n",
         (long long)(te_now_ms() - t1));
  CU_ASSERT_FATAL(ta2 > tb);
  CU_ASSERT_EQUAL(tm_leader(c, prefix, name, sizeof name), ta2);
  CU_ASSERT_STRING_EQUAL(name, "ma");
  r = tm_cmd(follower, "operate-leader", "{\"op\": \"cancel-evict\"}");
  CU_ASSERT(tm_ok(r));
  json_object_put(r);
  r = tm_cmd(follower, "operate-leader", "{\"op\": \"cancel-evict\"}");
  CU_ASSERT(tm_ok(r));
  CU_ASSERT(tl_msg_has(r, "was not evicted"));
  json_object_put(r);
  CU_ASSERT_EQUAL(dmh_master_token(follower), 0); /* ma keeps leading */

  /* DM's words for another op; the op is required */
  r = tm_cmd(ma, "operate-leader", "{\"op\": \"resign\"}");
  CU_ASSERT_EQUAL(tm_code(r), DM_ERR_CONTROL_REQUEST);
  CU_ASSERT(tl_msg_has(r, "invalid operate 'resign' on leader"));
  json_object_put(r);
  r = tm_cmd(ma, "operate-leader", "{}");
  CU_ASSERT_EQUAL(tm_code(r), DM_ERR_CONTROL_REQUEST);
  json_object_put(r);
  CU_ASSERT_EQUAL(dmh_master_token(ma), ta2);

  /* the follower evicted, ma evicted again: no leader; the give-back is the key's delete */
  r = tm_cmd(follower, "operate-leader", "{\"op\": \"evict\"}");
  CU_ASSERT(tm_ok(r));
  json_object_put(r);
  r = tm_cmd(ma, "operate-leader", "{\"op\": \"evict\"}");
  CU_ASSERT(tm_ok(r));
  CU_ASSERT(tl_msg_has(r, "stopped leading"));
  json_object_put(r);
  CU_ASSERT_EQUAL(tm_leader(c, prefix, name, sizeof name), 0);
  dmh_master_stop(ma, true);
  dmh_master_stop(follower, true);
  dmh_etcd_delete(c, DMH_ETCD_S(prefix), 1, NULL, &err);
  dmh_etcd_close(c);
}

/* A campaign that wins after the evict (its txn in flight when the flag was set): it never acts
 * and its key is given back, fenced by the token it won. Played on a master object without
 * threads, so that the order is the test's: the flag, then the won key, then the loop's steps. */
static void test_campaign_won_after_evict(void) {
  char prefix[128], key[DMH_CLUSTER_KEY_MAX], name[64];
  tm_prefix(prefix, sizeof prefix, "late-win");
  dmh_etcd *c = te_client();
  dmh_master *m = calloc(1, sizeof *m);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  snprintf(m->name, sizeof m->name, "mlate");
  snprintf(m->prefix, sizeof m->prefix, "%s", prefix);
  pthread_mutex_init(&m->evict_lock, NULL);
  dm_cond_init_monotonic(&m->evict_cond);
  bool was_leader = true, was_evicted = true;
  dm_error err;
  CU_ASSERT_EQUAL(dmh_master_evict(m, true, &was_leader, &was_evicted, &err), 0);
  CU_ASSERT_FALSE(was_leader);
  CU_ASSERT_FALSE(was_evicted);
  /* the campaign's create-only put lands now: its token is the key's create_revision */
  dmh_cluster_key(key, sizeof key, prefix, DMH_KEY_LEADER, NULL, NULL, NULL);
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_put(c, DMH_ETCD_S(key), DMH_ETCD_S("mlate"), 0, 0, NULL, &err), 0);
  int64_t won = tm_leader(c, prefix, name, sizeof name);
  CU_ASSERT_FATAL(won > 0);
  CU_ASSERT_FALSE(master_lead_begin(m, won)); /* evicted: it does not lead */
  CU_ASSERT_EQUAL(dmh_master_token(m), 0);
  bool leading;
  int64_t held;
  tl_state(m, &leading, &held);
  CU_ASSERT_FALSE(leading);
  CU_ASSERT_EQUAL(held, won);
  /* the loop's next step while evicted gives it back */
  master_evicted_wait(m, c);
  tl_state(m, &leading, &held);
  CU_ASSERT_EQUAL(held, 0);
  CU_ASSERT_EQUAL(tm_leader(c, prefix, name, sizeof name), 0);
  pthread_mutex_destroy(&m->evict_lock);
  pthread_cond_destroy(&m->evict_cond);
  free(m);
  dmh_etcd_close(c);
}

/* dmctl --master-addr at master processes: the leader evicted, the other leads; cancel-evict. */
static void test_dmctl_operate_leader(void) {
  char prefix[128], leader[64], next[64];
  tm_prefix(prefix, sizeof prefix, "dmctl-leader");
  dmh_etcd *c = te_client();
  pid_t pids[2] = {tm_spawn("ma", prefix, TM_PORT(7)), tm_spawn("mb", prefix, TM_PORT(8))};
  int64_t tok = tm_wait_leader(c, prefix, NULL, leader, sizeof leader, 5000);
  CU_ASSERT_FATAL(tok > 0);
  int lport = strcmp(leader, "ma") == 0 ? TM_PORT(7) : TM_PORT(8);
  /* the leader answers once its control server listens */
  json_object *r = NULL;
  int rc;
  int64_t t0 = te_now_ms();
  while ((rc = tm_dmctl(&r, lport, "operate-leader evict")) != 0 && te_now_ms() - t0 < 5000) {
    json_object_put(r);
    tm_sleep_ms(50);
  }
  CU_ASSERT_EQUAL(rc, 0);
  CU_ASSERT(tm_ok(r));
  CU_ASSERT(tl_msg_has(r, "stopped leading"));
  json_object_put(r);
  int64_t tok2 = tm_wait_leader(c, prefix, leader, next, sizeof next, 15000);
  CU_ASSERT(tok2 > tok);
  CU_ASSERT(strcmp(next, leader) != 0 && next[0]);
  /* DM's dmctl refuses another op with its words */
  CU_ASSERT_EQUAL(tm_dmctl(&r, lport, "operate-leader bogus"), 1);
  CU_ASSERT(tl_msg_has(r, "invalid operate 'bogus' on leader"));
  json_object_put(r);
  CU_ASSERT_EQUAL(tm_dmctl(&r, lport, "operate-leader cancel-evict"), 0);
  CU_ASSERT(tl_msg_has(r, "campaigns again"));
  json_object_put(r);
  for (int i = 0; i < 2; i++) {
    int st = 0;
    kill(pids[i], SIGTERM);
    CU_ASSERT_EQUAL(waitpid(pids[i], &st, 0), pids[i]);
    CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  dm_error err;
  dmh_etcd_delete(c, DMH_ETCD_S(prefix), 1, NULL, &err);
  dmh_etcd_close(c);
}

/* `dmhost serve` is a cluster of one: refused with its code, its op checked first. */
static void test_daemon_refuses(void) {
  json_object *req =
      json_tokener_parse("{\"cmd\": \"operate-leader\", \"args\": {\"op\": \"evict\"}}");
  json_object *r = dmh_control_handle(NULL, req);
  json_object_put(req);
  CU_ASSERT_EQUAL(tm_code(r), DM_ERR_LEADER_ONE_MASTER);
  CU_ASSERT(tl_msg_has(r, "no other master"));
  CU_ASSERT(strstr(tm_text(r), "\"ErrClass\":\"control\"") != NULL);
  json_object_put(r);
  req = json_tokener_parse("{\"cmd\": \"operate-leader\", \"args\": {\"op\": \"x\"}}");
  r = dmh_control_handle(NULL, req);
  json_object_put(req);
  CU_ASSERT_EQUAL(tm_code(r), DM_ERR_CONTROL_REQUEST);
  json_object_put(r);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"evict the leader, a follower; stale token; cancel-evict", test_evict_leader},
      {"a campaign won after the evict never acts, its key given back",
       test_campaign_won_after_evict},
      {"dmctl operate-leader at master processes", test_dmctl_operate_leader},
      {"dmhost serve refuses operate-leader", test_daemon_refuses},
  };
  return dmh_cunit_run("master_leader", tm_init, tm_clean, tests, sizeof tests / sizeof tests[0]);
}
