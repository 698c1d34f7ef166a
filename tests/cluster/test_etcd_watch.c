/*
 * The etcd client's watch against the fixture's cluster: events in order (PUT, DELETE, prev_kv,
 * the events of one txn together), the compacted answer, and a watch that survives the kill -9 of
 * the member it streams from without losing or repeating an event; plain requests fail over past
 * the dead member.
 */
#include "test_etcd.h"

#include "dmhost/sdk.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TW_MAX 64

/* What a watch thread saw, one line per event: "P key=value" or "D key", and mod revisions. */
typedef struct tw_seen {
  pthread_mutex_t mu;
  char ev[TW_MAX][96];
  int64_t rev[TW_MAX];
  int has_prev[TW_MAX];
  int batches;
  int n;
} tw_seen;

typedef struct tw_watch {
  pthread_t thread;
  dmh_etcd *client;
  char key[128];
  dmh_etcd_watch_opts opts;
  atomic_int stop;
  atomic_int done; /* the watch returned by itself */
  tw_seen seen;
  int rc;
  dm_error err;
} tw_watch;

static int tw_on_events(void *arg, const dmh_etcd_event *evs, size_t n) {
  tw_seen *s = arg;
  pthread_mutex_lock(&s->mu);
  s->batches++;
  for (size_t i = 0; i < n && s->n < TW_MAX; i++, s->n++) {
    if (evs[i].type == DMH_ETCD_EV_PUT)
      snprintf(s->ev[s->n], sizeof s->ev[s->n], "P %s=%s", evs[i].kv.key, evs[i].kv.value);
    else
      snprintf(s->ev[s->n], sizeof s->ev[s->n], "D %s", evs[i].kv.key);
    s->rev[s->n] = evs[i].kv.mod_revision;
    s->has_prev[s->n] = evs[i].has_prev;
  }
  pthread_mutex_unlock(&s->mu);
  return 0;
}

static void *tw_run(void *arg) {
  tw_watch *w = arg;
  w->rc = dmh_etcd_watch(w->client, DMH_ETCD_S(w->key), &w->opts, tw_on_events, &w->seen, &w->err);
  atomic_store(&w->done, 1);
  return NULL;
}

static void tw_start(tw_watch *w, const char *endpoints, const char *prefix, int64_t from,
                     long give_up_ms) {
  memset(w, 0, sizeof *w);
  pthread_mutex_init(&w->seen.mu, NULL);
  dm_error err;
  w->client = dmh_etcd_open(endpoints, NULL, &err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(w->client);
  snprintf(w->key, sizeof w->key, "%s", prefix);
  atomic_init(&w->stop, 0);
  atomic_init(&w->done, 0);
  w->opts = (dmh_etcd_watch_opts){.prefix = 1,
                                  .start_revision = from,
                                  .prev_kv = 1,
                                  .stop = &w->stop,
                                  .give_up_ms = give_up_ms};
  CU_ASSERT_EQUAL_FATAL(pthread_create(&w->thread, NULL, tw_run, w), 0);
}

/* Waits until the watch saw n events (10 s at most); how many it saw. */
static int tw_wait(tw_watch *w, int n) {
  int got = 0;
  for (int i = 0; i < 1000; i++) {
    pthread_mutex_lock(&w->seen.mu);
    got = w->seen.n;
    pthread_mutex_unlock(&w->seen.mu);
    if (got >= n)
      break;
    usleep(10 * 1000);
  }
  return got;
}

static void tw_stop(tw_watch *w) {
  atomic_store(&w->stop, 1);
  pthread_join(w->thread, NULL);
  dmh_etcd_close(w->client);
  pthread_mutex_destroy(&w->seen.mu);
}

static int64_t tw_revision(dmh_etcd *c) {
  int64_t rev = 0;
  free(te_get(c, "/dmh-test/none", &rev));
  return rev;
}

static void test_watch_order(void) {
  dmh_etcd *c = te_client();
  dm_error err;
  char pre[128], ka[160], kb[160], eps[256];
  te_key(pre, sizeof pre, "watch/");
  snprintf(ka, sizeof ka, "%sa", pre);
  snprintf(kb, sizeof kb, "%sb", pre);
  te_endpoints("012", eps, sizeof eps);
  int64_t from = tw_revision(c) + 1;
  /* a write before the watch starts, at a revision it asked for: delivered too */
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_put(c, DMH_ETCD_S(ka), DMH_ETCD_S("1"), 0, 0, NULL, &err), 0);
  tw_watch *w = calloc(1, sizeof *w);
  tw_start(w, eps, pre, from, 20000);
  CU_ASSERT_EQUAL(dmh_etcd_put(c, DMH_ETCD_S(ka), DMH_ETCD_S("2"), 0, 0, NULL, &err), 0);
  CU_ASSERT_EQUAL(dmh_etcd_delete(c, DMH_ETCD_S(ka), 0, NULL, &err), 0);
  /* two puts in one txn: one revision, one batch */
  const dmh_etcd_op ops[] = {
      {.kind = DMH_ETCD_PUT, .key = DMH_ETCD_S(ka), .value = {"3", 1}},
      {.kind = DMH_ETCD_PUT, .key = DMH_ETCD_S(kb), .value = {"4", 1}},
  };
  dmh_etcd_txn_result t;
  CU_ASSERT_EQUAL(dmh_etcd_txn(c, NULL, 0, ops, 2, NULL, 0, &t, &err), 0);
  dmh_etcd_txn_result_free(&t);
  CU_ASSERT_EQUAL(tw_wait(w, 5), 5);
  tw_stop(w);
  CU_ASSERT_EQUAL(w->rc, 0); /* stopped by the flag */
  char want[5][200];
  snprintf(want[0], sizeof want[0], "P %s=1", ka);
  snprintf(want[1], sizeof want[1], "P %s=2", ka);
  snprintf(want[2], sizeof want[2], "D %s", ka);
  snprintf(want[3], sizeof want[3], "P %s=3", ka);
  snprintf(want[4], sizeof want[4], "P %s=4", kb);
  for (int i = 0; i < 5; i++)
    CU_ASSERT_STRING_EQUAL(w->seen.ev[i], want[i]);
  CU_ASSERT_EQUAL(w->seen.rev[0], from);
  CU_ASSERT_EQUAL(w->seen.rev[3], w->seen.rev[4]);
  CU_ASSERT_EQUAL(w->seen.has_prev[0], 0); /* created: nothing before */
  CU_ASSERT_EQUAL(w->seen.has_prev[1], 1);
  CU_ASSERT_EQUAL(w->seen.has_prev[2], 1); /* the delete carries the pair it removed */
  CU_ASSERT_EQUAL(w->opts.next_revision, w->seen.rev[4] + 1);
  CU_ASSERT_EQUAL(w->opts.reconnects, 0);
  free(w);
  CU_ASSERT_EQUAL(dmh_etcd_delete(c, DMH_ETCD_S(pre), 1, NULL, &err), 0);
  dmh_etcd_close(c);
}

/* A callback that asks to stop: the watch returns 0 at once. */
static int tw_stop_at_first(void *arg, const dmh_etcd_event *evs, size_t n) {
  (void)evs;
  *(size_t *)arg += n;
  return 1;
}

static void test_watch_compacted(void) {
  dmh_etcd *c = te_client();
  dm_error err;
  char key[128];
  te_key(key, sizeof key, "compact/k");
  dmh_etcd_result r;
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_put(c, DMH_ETCD_S(key), DMH_ETCD_S("1"), 0, 0, &r, &err), 0);
  int64_t old = r.revision;
  dmh_etcd_result_free(&r);
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_put(c, DMH_ETCD_S(key), DMH_ETCD_S("2"), 0, 0, &r, &err), 0);
  int64_t now = r.revision;
  dmh_etcd_result_free(&r);
  /* before the compaction, from old: the first event, then the callback ends the watch */
  size_t seen = 0;
  dmh_etcd_watch_opts o = {.start_revision = old};
  CU_ASSERT_EQUAL(dmh_etcd_watch(c, DMH_ETCD_S(key), &o, tw_stop_at_first, &seen, &err), 0);
  CU_ASSERT(seen >= 1);
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_compact(c, now, &err), 0);
  o = (dmh_etcd_watch_opts){.start_revision = old};
  CU_ASSERT_EQUAL(dmh_etcd_watch(c, DMH_ETCD_S(key), &o, tw_stop_at_first, &seen, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_ETCD_COMPACTED);
  CU_ASSERT_EQUAL(err.resumable, 0);
  char want[64];
  snprintf(want, sizeof want, "up to revision %" PRId64, now);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, want));
  /* a range at a compacted revision: the same code */
  CU_ASSERT_EQUAL(dmh_etcd_range(c, DMH_ETCD_S(key), 0, 0, old, &r, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_ETCD_COMPACTED);
  CU_ASSERT_EQUAL(dmh_etcd_delete(c, DMH_ETCD_S(key), 0, NULL, &err), 0);
  dmh_etcd_close(c);
}

/* The member at index i's name for scripts/etcd.sh. */
static const char *const tw_names[] = {"e1", "e2", "e3"};

/* The leader (leader = 1) or a member that is not the leader (0); -1 when none answers. */
static int tw_member(int leader) {
  for (int i = 0; i < 3; i++) {
    char ep[64];
    snprintf(ep, sizeof ep, "http://127.0.0.1:%d", te_port(i));
    dm_error err;
    dmh_etcd *c = dmh_etcd_open(ep, NULL, &err);
    uint64_t me = 0, id = 0;
    int rc = c ? dmh_etcd_status(c, &me, &id, &err) : -1;
    dmh_etcd_close(c);
    if (rc == 0 && id && (me == id) == leader)
      return i;
  }
  return -1;
}

/* Creates key (value "v") exactly once, also across an election: a txn that puts only while the
 * key does not exist, repeated after an unknown outcome or unavailability (the way those two
 * errors are meant to be handled). 0, or -1. */
static int tw_create(dmh_etcd *c, const char *key, int *retries) {
  const dmh_etcd_cmp cmp = {
      .key = DMH_ETCD_S(key), .target = DMH_ETCD_CMP_CREATE, .result = DMH_ETCD_EQUAL};
  const dmh_etcd_op put = {.kind = DMH_ETCD_PUT, .key = DMH_ETCD_S(key), .value = {"v", 1}};
  for (int i = 0; i < 40; i++) {
    dmh_etcd_txn_result t;
    dm_error err;
    if (dmh_etcd_txn(c, &cmp, 1, &put, 1, NULL, 0, &t, &err) == 0) {
      dmh_etcd_txn_result_free(&t); /* not succeeded: an earlier try was applied */
      return 0;
    }
    if (err.code != DM_ERR_ETCD_OUTCOME_UNKNOWN && err.code != DM_ERR_ETCD_UNAVAILABLE) {
      fprintf(stderr, "create of %s: %s\n", key, err.message);
      return -1;
    }
    fprintf(stderr, "  create of %s again after %s: %s\n", key, dm_error_code_name(err.code),
            err.raw_cause);
    (*retries)++;
    usleep(250 * 1000);
  }
  return -1;
}

/* The watch streams from a member (the leader, or not) that is then killed -9: it goes on at the
 * next member from the next revision, and the events it delivers are exactly the writes, once
 * each, in order. Plain requests whose first endpoint is the dead member go to the next one. */
static void tw_kill_case(int leader) {
  int dead = tw_member(leader);
  CU_ASSERT_FATAL(dead >= 0);
  char order[4] = {(char)('0' + dead), (char)('0' + (dead + 1) % 3), (char)('0' + (dead + 2) % 3),
                   0};
  char eps[256], alive[256];
  te_endpoints(order, eps, sizeof eps);
  te_endpoints(order + 1, alive, sizeof alive);
  dm_error err;
  dmh_etcd *writer = dmh_etcd_open(alive, NULL, &err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(writer);
  char pre[128];
  te_key(pre, sizeof pre, leader ? "failover-leader/" : "failover/");
  int64_t from = tw_revision(writer) + 1;
  tw_watch *w = calloc(1, sizeof *w);
  tw_start(w, eps, pre, from, 20000);
  char keys[10][160];
  for (int i = 0; i < 10; i++)
    snprintf(keys[i], sizeof keys[i], "%s%d", pre, i);
  int retries = 0;
  for (int i = 0; i < 5; i++)
    CU_ASSERT_EQUAL(tw_create(writer, keys[i], &retries), 0);
  CU_ASSERT_EQUAL_FATAL(tw_wait(w, 5), 5);
  /* The watch streams from the first endpoint, the member about to die: a fresh client starts
   * there, and reconnects >= 1 below shows the kill broke that stream. */
  char args[32];
  snprintf(args, sizeof args, "kill %s", tw_names[dead]);
  CU_ASSERT_EQUAL_FATAL(te_etcd_sh(args), 0);
  for (int i = 5; i < 10; i++)
    CU_ASSERT_EQUAL(tw_create(writer, keys[i], &retries), 0);
  CU_ASSERT_EQUAL(tw_wait(w, 10), 10);
  /* plain requests: the dead member first in the list, the next one answers */
  dmh_etcd *c = dmh_etcd_open(eps, NULL, &err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  dmh_etcd_result r;
  CU_ASSERT_EQUAL(dmh_etcd_range(c, DMH_ETCD_S(pre), 1, 0, 0, &r, &err), 0);
  CU_ASSERT_EQUAL(r.count, 10);
  dmh_etcd_result_free(&r);
  CU_ASSERT_PTR_NOT_NULL(strstr(eps, dmh_etcd_endpoint(c)));
  CU_ASSERT(strncmp(eps, dmh_etcd_endpoint(c), strlen(dmh_etcd_endpoint(c))) != 0);
  dmh_etcd_close(c);
  /* the dead member alone: unavailable, resumable */
  char one[64];
  snprintf(one, sizeof one, "http://127.0.0.1:%d", te_port(dead));
  c = dmh_etcd_open(one, NULL, &err);
  CU_ASSERT_EQUAL(dmh_etcd_put(c, DMH_ETCD_S(keys[0]), DMH_ETCD_S("v"), 0, 0, NULL, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_ETCD_UNAVAILABLE);
  dmh_etcd_close(c);

  tw_stop(w);
  CU_ASSERT_EQUAL(w->rc, 0);
  CU_ASSERT_EQUAL(w->seen.n, 10);
  CU_ASSERT(w->opts.reconnects >= 1); /* the precondition: the kill reached the stream */
  for (int i = 0; i < w->seen.n && i < 10; i++) {
    char want[1700]; /* keys[i] holds up to 1599 bytes */
    snprintf(want, sizeof want, "P %s=v", keys[i]);
    CU_ASSERT_STRING_EQUAL(w->seen.ev[i], want);
    CU_ASSERT_EQUAL(w->seen.rev[i], from + i);
  }
  fprintf(stderr,
          "watch: member %s (%s) killed, %d reconnect(s), %d events in %d batches, %d write "
          "retries\n",
          tw_names[dead], leader ? "leader" : "follower", w->opts.reconnects, w->seen.n,
          w->seen.batches, retries);
  free(w);
  CU_ASSERT_EQUAL(dmh_etcd_delete(writer, DMH_ETCD_S(pre), 1, NULL, &err), 0);
  dmh_etcd_close(writer);
  snprintf(args, sizeof args, "restart %s", tw_names[dead]);
  CU_ASSERT_EQUAL(te_etcd_sh(args), 0);
}

/* A follower: no election, the writes go on at once. */
static void test_watch_follower_killed(void) {
  tw_kill_case(0);
}

/* The leader: an election in between; writes are retried as their errors say. */
static void test_watch_leader_killed(void) {
  tw_kill_case(1);
}

/* Two members killed: the third has no leader, and a watch there (asked with hasleader) is refused
 * at once instead of hanging silent; the watch gives up after give_up_ms with the member's words.
 * The members are started again after. */
static void test_watch_no_leader(void) {
  CU_ASSERT_EQUAL_FATAL(te_etcd_sh("kill e2"), 0);
  CU_ASSERT_EQUAL_FATAL(te_etcd_sh("kill e3"), 0);
  char ep[64];
  snprintf(ep, sizeof ep, "http://127.0.0.1:%d", te_port(0));
  dm_error err;
  dmh_etcd *c = dmh_etcd_open(ep, NULL, &err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  /* the precondition: e1 knows it has no leader (its election timeout, a second or two) */
  uint64_t me = 0, leader = 1;
  for (int i = 0; i < 100 && leader; i++) {
    CU_ASSERT_EQUAL_FATAL(dmh_etcd_status(c, &me, &leader, &err), 0);
    if (leader)
      usleep(100 * 1000);
  }
  CU_ASSERT_EQUAL(leader, 0);
  dmh_etcd_close(c);
  char key[128];
  te_key(key, sizeof key, "noleader");
  /* in a thread, so that a watch that hangs (no hasleader: created, then silent) fails the test
   * after 8 s instead of hanging it */
  tw_watch *w = calloc(1, sizeof *w);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  tw_start(w, ep, key, 0, 1500);
  for (int i = 0; i < 800 && !atomic_load(&w->done); i++)
    usleep(10 * 1000);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
  CU_ASSERT_EQUAL(atomic_load(&w->done), 1);
  tw_stop(w);
  CU_ASSERT_EQUAL(w->rc, -1);
  CU_ASSERT_EQUAL(w->err.code, DM_ERR_ETCD_UNAVAILABLE);
  CU_ASSERT_PTR_NOT_NULL(strstr(w->err.raw_cause, "no leader"));
  CU_ASSERT(ms >= 1500 && ms < 5000);
  CU_ASSERT_EQUAL(w->opts.reconnects, 0);
  CU_ASSERT_EQUAL(w->seen.n, 0);
  fprintf(stderr, "watch without leader: gave up after %ld ms: %s\n", ms, w->err.raw_cause);
  free(w);
  CU_ASSERT_EQUAL(te_etcd_sh("restart e2"), 0);
  CU_ASSERT_EQUAL(te_etcd_sh("restart e3"), 0);
}

const dmh_cunit_test te_watch_tests[] = {
    {"watch_order", test_watch_order},
    {"watch_compacted", test_watch_compacted},
    {"watch_follower_killed", test_watch_follower_killed},
    {"watch_leader_killed", test_watch_leader_killed},
    {"watch_no_leader", test_watch_no_leader},
};
const size_t te_watch_n = sizeof te_watch_tests / sizeof te_watch_tests[0];
