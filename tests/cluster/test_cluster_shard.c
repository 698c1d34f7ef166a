/*
 * Shard DDL locks in the cluster against the fixture's real etcd: the worker's coordinator
 * (host/cluster/worker/cluster_worker_shard.c) as the sync units call it, and the leader master's
 * (host/cluster/master/master_shard.c) in in-process masters, with fake workers (registration keys
 * under the test's leases; the leader binds each source to the worker keeping its relay, so the
 * bindings and their fencing tokens are the scheduler's own).
 *
 *   - a lock end to end: tables reported, the first arrival waits (no operation, the lock listed
 *     waiting with synced/unsynced), the second arrival: exec to the owner, skip only after the
 *     owner's done, every key of the lock deleted after the last done; DDLs that differ refused
 *   - the fence (the attack of a worker's client): another source's info or tables, a done with
 *     another token, a done of another source's operation, a done of a subtask of an older binding
 *     after the source moved: all refused with DM_ERR_CLUSTER_SHARD_FENCED and nothing written
 *   - the leader resigns while the lock is half arrived: the new leader resumes it
 *   - a source's next DDL while its done operation waits for the others: put waits in wait() until
 *     the lock's keys are deleted, then opens the next lock
 *   - stop-task deletes the task's shard keys
 */
#include "test_etcd.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cluster_keys.h"
#include "cluster_worker.h"
#include "master.h"
#include "master_internal.h"

#define TTL_S 60 /* the fake workers' leases: the whole test, no keeper needed */

static char ts_eps[256];

static int ts_init(void) {
  te_endpoints("012", ts_eps, sizeof ts_eps);
  return 0;
}

static int ts_clean(void) {
  return 0;
}

static void ts_sleep_ms(long ms) {
  nanosleep(&(struct timespec){ms / 1000, (ms % 1000) * 1000000L}, NULL);
}

static void ts_prefix(char *buf, size_t size, const char *test) {
  snprintf(buf, size, "/dmh-test-%ld-%s", (long)getpid(), test);
}

static dmh_master *ts_master(const char *name, const char *prefix) {
  dmh_master_opts o = {.name = name, .endpoints = ts_eps, .prefix = prefix, .addr = name};
  dmh_master *m = NULL;
  dm_error err;
  int rc = dmh_master_start(&o, &m, &err);
  if (rc < 0)
    printf("\n  dmh_master_start: %s\n", err.message);
  CU_ASSERT_FATAL(rc == 0 && m);
  return m;
}

/* The token of whichever of the n masters wins the election (any may: m2 can campaign first). */
static int64_t ts_wait_any_token(dmh_master *const *m, int n, long ms) {
  int64_t t0 = te_now_ms();
  while (te_now_ms() - t0 < ms) {
    for (int i = 0; i < n; i++) {
      int64_t t = dmh_master_token(m[i]);
      if (t)
        return t;
    }
    ts_sleep_ms(20);
  }
  return 0;
}

static int64_t ts_wait_token(dmh_master *m, long ms) {
  return ts_wait_any_token(&m, 1, ms);
}

/* A fake worker keeping source's relay (so the leader binds the source to it), and the source. */
static int64_t ts_worker(dmh_etcd *c, const char *prefix, const char *name, const char *source) {
  dm_error err;
  int64_t lease = 0;
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_lease_grant(c, TTL_S, 0, &lease, NULL, &err), 0);
  char key[DMH_CLUSTER_KEY_MAX];
  dmh_cluster_worker_info info = {0};
  snprintf(info.name, sizeof info.name, "%s", name);
  snprintf(info.relay, sizeof info.relay, "%s", source);
  char *val = dmh_cluster_worker_json(&info);
  dmh_cluster_key(key, sizeof key, prefix, DMH_KEY_WORKER, name, NULL, NULL);
  CU_ASSERT_EQUAL(dmh_etcd_put(c, DMH_ETCD_S(key), DMH_ETCD_S(val), lease, 0, NULL, &err), 0);
  free(val);
  val = dmh_cluster_config_json("source-id = \"x\";");
  dmh_cluster_key(key, sizeof key, prefix, DMH_KEY_SOURCE, source, NULL, NULL);
  CU_ASSERT_EQUAL(dmh_etcd_put(c, DMH_ETCD_S(key), DMH_ETCD_S(val), 0, 0, NULL, &err), 0);
  free(val);
  return lease;
}

/* The binding's fencing token once worker w is bound to source (0 after ms). */
static int64_t ts_wait_bound(dmh_etcd *c, const char *prefix, const char *w, const char *source,
                             long ms) {
  char key[DMH_CLUSTER_KEY_MAX];
  dmh_cluster_key(key, sizeof key, prefix, DMH_KEY_BOUND, w, NULL, NULL);
  int64_t t0 = te_now_ms();
  do {
    dmh_etcd_result r;
    dm_error err;
    int64_t tok = 0;
    if (dmh_etcd_range(c, DMH_ETCD_S(key), 0, 0, 0, &r, &err) == 0) {
      dmh_cluster_binding b;
      if (r.n_kvs == 1 &&
          dmh_cluster_binding_parse(r.kvs[0].value, r.kvs[0].value_len, &b, &err) == 0 &&
          strcmp(b.source, source) == 0)
        tok = r.kvs[0].create_revision;
      dmh_etcd_result_free(&r);
    }
    if (tok)
      return tok;
    ts_sleep_ms(20);
  } while (te_now_ms() - t0 < ms);
  return 0;
}

/* How many keys lie under the prefix of kind for task (a, NULL). */
static int64_t ts_count(dmh_etcd *c, const char *prefix, dmh_cluster_key_kind kind,
                        const char *task) {
  char key[DMH_CLUSTER_KEY_MAX];
  dmh_cluster_key(key, sizeof key, prefix, kind, task, NULL, NULL);
  dmh_etcd_result r;
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_range(c, DMH_ETCD_S(key), 1, 0, 0, &r, &err), 0);
  int64_t n = (int64_t)r.n_kvs;
  dmh_etcd_result_free(&r);
  return n;
}

static char *ts_value(dmh_etcd *c, const char *prefix, dmh_cluster_key_kind kind, const char *task,
                      const char *source) {
  char key[DMH_CLUSTER_KEY_MAX];
  dmh_cluster_key(key, sizeof key, prefix, kind, task, source, NULL);
  return te_get(c, key, NULL);
}

static bool ts_wait_count(dmh_etcd *c, const char *prefix, dmh_cluster_key_kind kind,
                          const char *task, int64_t want, long ms) {
  int64_t t0 = te_now_ms(), n;
  do {
    if ((n = ts_count(c, prefix, kind, task)) == want)
      return true;
    ts_sleep_ms(20);
  } while (te_now_ms() - t0 < ms);
  printf("\n  %lld keys, expected %lld\n", (long long)n, (long long)want);
  return false;
}

/* ---- a sync unit's wait, on a thread of its own ---- */

typedef struct waiter {
  cw_shard *s;
  const char *task, *source, *ts, *tt;
  atomic_int stop;
  atomic_int finished;
  int rc;
  dm_shard_op op;
  char ddl0[256];
  dm_error err;
  pthread_t thr;
} waiter;

static bool w_stopped(void *arg) {
  return atomic_load(&((waiter *)arg)->stop) != 0;
}

static void *w_main(void *arg) {
  waiter *w = arg;
  const dmh_shard_coord *co = cw_shard_coord(w->s);
  w->rc = co->ops->wait(co->self, w->task, w->source, w->ts, w->tt, w_stopped, w, &w->op, &w->err);
  if (w->rc == 1 && w->op.n_ddls > 0)
    snprintf(w->ddl0, sizeof w->ddl0, "%s", w->op.ddls[0]);
  atomic_store(&w->finished, 1);
  return NULL;
}

static void w_start(waiter *w, cw_shard *s, const char *task, const char *source) {
  memset(w, 0, sizeof *w);
  *w = (waiter){.s = s, .task = task, .source = source, .ts = "shop", .tt = "orders"};
  CU_ASSERT_EQUAL_FATAL(pthread_create(&w->thr, NULL, w_main, w), 0);
}

/* Joined once it returned (within ms); false when it is still waiting. */
static bool w_join(waiter *w, long ms) {
  int64_t t0 = te_now_ms();
  while (!atomic_load(&w->finished) && te_now_ms() - t0 < ms)
    ts_sleep_ms(10);
  if (!atomic_load(&w->finished))
    return false;
  pthread_join(w->thr, NULL);
  return true;
}

static void w_cancel(waiter *w) {
  atomic_store(&w->stop, 1);
  CU_ASSERT(w_join(w, 3000));
  CU_ASSERT_EQUAL(w->rc, 0);
}

/* ---- the calls ---- */

static const char *const ddl_add[] = {"ALTER TABLE `shop`.`orders` ADD COLUMN `note` INT"};
static const char *const ddl_other[] = {"ALTER TABLE `shop`.`orders` ADD COLUMN `n2` INT"};
static const char *const ddl_next[] = {"ALTER TABLE `shop`.`orders` ADD COLUMN `more` INT"};

static int ts_report(cw_shard *s, const char *task, const char *source, uint32_t n, dm_error *err) {
  static const dm_shard_table tables[] = {{"shop_1", "orders_1"}, {"shop_1", "orders_2"}};
  const dmh_shard_coord *co = cw_shard_coord(s);
  return co->ops->report_tables(co->self, task, source, "shop", "orders", tables, n, err);
}

static int ts_put(cw_shard *s, const char *task, const char *source, const char *const *ddls,
                  uint64_t pos, dm_error *err) {
  static const dm_shard_table tables[] = {{"shop_1", "orders_1"}};
  dm_shard_info info = {.target_schema = "shop",
                        .target_table = "orders",
                        .ddls = ddls,
                        .n_ddls = 1,
                        .tables = tables,
                        .n_tables = 1};
  snprintf(info.pos.name, sizeof info.pos.name, "mysql-bin.000001");
  info.pos.pos = pos;
  const dmh_shard_coord *co = cw_shard_coord(s);
  return co->ops->put(co->self, task, source, &info, err);
}

static int ts_done(cw_shard *s, const char *task, const char *source, uint64_t token,
                   const dm_shard_op *op, dm_error *err) {
  const dmh_shard_coord *co = cw_shard_coord(s);
  return co->ops->done(co->self, task, source, token, op, err);
}

/* Two fake workers bound by the leader: w1 to s1, w2 to s2; their coordinators. */
typedef struct ts_cluster {
  char prefix[128];
  dmh_etcd *c;
  dmh_master *m[2];
  int64_t lease[2];
  int64_t tok[2];
  cw_shard *w[2];
} ts_cluster;

static void ts_up(ts_cluster *x, const char *test, int n_masters) {
  memset(x, 0, sizeof *x);
  ts_prefix(x->prefix, sizeof x->prefix, test);
  x->c = te_client();
  for (int i = 0; i < n_masters; i++) {
    char name[16];
    snprintf(name, sizeof name, "m%d", i + 1);
    x->m[i] = ts_master(name, x->prefix);
  }
  CU_ASSERT_FATAL(ts_wait_any_token(x->m, n_masters, 5000) != 0);
  for (int i = 0; i < 2; i++) {
    char w[8], s[8];
    snprintf(w, sizeof w, "w%d", i + 1);
    snprintf(s, sizeof s, "s%d", i + 1);
    x->lease[i] = ts_worker(x->c, x->prefix, w, s);
    x->tok[i] = ts_wait_bound(x->c, x->prefix, w, s, 5000);
    CU_ASSERT_FATAL(x->tok[i] != 0);
    x->w[i] = cw_shard_new(ts_eps, NULL, x->prefix, w);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x->w[i]);
    cw_shard_set_token(x->w[i], (uint64_t)x->tok[i]);
  }
}

static void ts_down(ts_cluster *x) {
  dm_error err;
  for (int i = 0; i < 2; i++) {
    if (x->m[i])
      dmh_master_stop(x->m[i], true);
    cw_shard_free(x->w[i]);
    dmh_etcd_lease_revoke(x->c, x->lease[i], &err);
  }
  char key[DMH_CLUSTER_KEY_MAX];
  snprintf(key, sizeof key, "%s/", x->prefix);
  dmh_etcd_delete(x->c, DMH_ETCD_S(key), 1, NULL, &err);
  dmh_etcd_close(x->c);
}

/* shard-ddl-lock through the master's control handler: the answer (caller frees). */
static json_object *ts_cmd(dmh_master *m, const char *args) {
  json_object *req = json_object_new_object();
  json_object_object_add(req, "cmd", json_object_new_string("shard-ddl-lock"));
  json_object_object_add(req, "args", json_tokener_parse(args));
  json_object *resp = dmh_master_handle(m, req);
  json_object_put(req);
  CU_ASSERT_PTR_NOT_NULL_FATAL(resp);
  return resp;
}

static const char *ts_text(json_object *r) {
  return json_object_to_json_string_ext(r, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
}

/* shard-ddl-lock on a thread of its own. */
typedef struct unlocker {
  dmh_master *m;
  const char *args;
  json_object *resp;
  pthread_t thr;
} unlocker;

static void *u_main(void *arg) {
  unlocker *u = arg;
  u->resp = ts_cmd(u->m, u->args);
  return NULL;
}

/* ---- tests ---- */

static void test_lock_end_to_end(void) {
  ts_cluster x;
  ts_up(&x, "lock", 1);
  dm_error err;
  const char *task = "shop";
  json_object *r = ts_cmd(x.m[0], "{\"op\": \"shop\"}"); /* no such task yet */
  CU_ASSERT(strstr(ts_text(r), "\"result\":false") && strstr(ts_text(r), "no task shop"));
  json_object_put(r);
  char key[DMH_CLUSTER_KEY_MAX];
  dmh_cluster_key(key, sizeof key, x.prefix, DMH_KEY_TASK, task, NULL, NULL);
  char *val = dmh_cluster_config_json("name = \"shop\";");
  CU_ASSERT_EQUAL(dmh_etcd_put(x.c, DMH_ETCD_S(key), DMH_ETCD_S(val), 0, 0, NULL, &err), 0);
  free(val);
  CU_ASSERT_EQUAL(ts_report(x.w[0], task, "s1", 2, &err), 0);
  CU_ASSERT_EQUAL(ts_report(x.w[1], task, "s2", 1, &err), 0);
  /* s1 arrives first: the owner; it waits, no operation yet */
  CU_ASSERT_EQUAL(ts_put(x.w[0], task, "s1", ddl_add, 100, &err), 0);
  waiter a, b;
  w_start(&a, x.w[0], task, "s1");
  r = ts_cmd(x.m[0], "{\"op\": \"shop\"}");
  const char *t = ts_text(r);
  CU_ASSERT(strstr(t, "\"state\":\"waiting\"") && strstr(t, "\"synced\":[\"s1\"]") &&
            strstr(t, "\"unsynced\":[\"s2\"]") && strstr(t, "\"owner\":\"s1\""));
  if (!strstr(t, "waiting"))
    printf("\n  %s\n", t);
  json_object_put(r);
  CU_ASSERT_EQUAL(ts_count(x.c, x.prefix, DMH_KEY_SHARD_OP, task), 0);
  CU_ASSERT(!w_join(&a, 300));
  /* s2 with other DDLs: refused, nothing put */
  CU_ASSERT_EQUAL(ts_put(x.w[1], task, "s2", ddl_other, 200, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_SHARD_DDL_DIFF);
  CU_ASSERT_EQUAL(ts_count(x.c, x.prefix, DMH_KEY_SHARD_INFO, task), 1);
  /* s2 arrives: exec to s1 */
  CU_ASSERT_EQUAL(ts_put(x.w[1], task, "s2", ddl_add, 200, &err), 0);
  CU_ASSERT_FATAL(w_join(&a, 5000));
  CU_ASSERT_EQUAL(a.rc, 1);
  CU_ASSERT_EQUAL(a.op.action, DM_SHARD_EXEC);
  CU_ASSERT_STRING_EQUAL(a.ddl0, ddl_add[0]);
  CU_ASSERT_STRING_EQUAL(a.op.lock_id, "shop-`shop`.`orders`");
  /* s2 gets its skip only once s1 is done */
  w_start(&b, x.w[1], task, "s2");
  CU_ASSERT(!w_join(&b, 300));
  CU_ASSERT_EQUAL(ts_count(x.c, x.prefix, DMH_KEY_SHARD_OP, task), 1);
  CU_ASSERT_EQUAL(ts_done(x.w[0], task, "s1", (uint64_t)x.tok[0], &a.op, &err), 0);
  CU_ASSERT_FATAL(w_join(&b, 5000));
  CU_ASSERT_EQUAL(b.rc, 1);
  CU_ASSERT_EQUAL(b.op.action, DM_SHARD_SKIP);
  /* a done repeated after a restart is accepted and changes nothing */
  CU_ASSERT_EQUAL(ts_done(x.w[0], task, "s1", (uint64_t)x.tok[0], &a.op, &err), 0);
  CU_ASSERT_EQUAL(ts_done(x.w[1], task, "s2", (uint64_t)x.tok[1], &b.op, &err), 0);
  /* resolved: infos and operations deleted; the tables stay */
  CU_ASSERT(ts_wait_count(x.c, x.prefix, DMH_KEY_SHARD_OP, task, 0, 5000));
  CU_ASSERT(ts_wait_count(x.c, x.prefix, DMH_KEY_SHARD_INFO, task, 0, 5000));
  CU_ASSERT_EQUAL(ts_count(x.c, x.prefix, DMH_KEY_SHARD_TABLES, task), 2);
  r = ts_cmd(x.m[0], "{}");
  CU_ASSERT(strstr(ts_text(r), "\"locks\":[]") != NULL);
  json_object_put(r);
  /* stop-task: the task's shard keys go with it */
  json_object *req = json_object_new_object();
  json_object_object_add(req, "cmd", json_object_new_string("stop-task"));
  json_object_object_add(req, "args", json_tokener_parse("{\"name\": \"shop\"}"));
  r = dmh_master_handle(x.m[0], req);
  json_object_put(req);
  CU_ASSERT(r && strstr(ts_text(r), "\"result\":true"));
  json_object_put(r);
  CU_ASSERT_EQUAL(ts_count(x.c, x.prefix, DMH_KEY_SHARD_TABLES, task), 0);
  ts_down(&x);
}

static void test_fence(void) {
  ts_cluster x;
  ts_up(&x, "fence", 1);
  dm_error err;
  const char *task = "shop";
  CU_ASSERT_EQUAL(ts_report(x.w[0], task, "s1", 1, &err), 0);
  CU_ASSERT_EQUAL(ts_report(x.w[1], task, "s2", 1, &err), 0);
  char *tables_s2 = ts_value(x.c, x.prefix, DMH_KEY_SHARD_TABLES, task, "s2");
  /* w1's client writing s2's info or tables: refused, nothing written */
  CU_ASSERT_EQUAL(ts_put(x.w[0], task, "s2", ddl_add, 1, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_CLUSTER_SHARD_FENCED);
  CU_ASSERT_EQUAL(ts_count(x.c, x.prefix, DMH_KEY_SHARD_INFO, task), 0);
  CU_ASSERT_EQUAL(ts_report(x.w[0], task, "s2", 2, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_CLUSTER_SHARD_FENCED);
  char *now = ts_value(x.c, x.prefix, DMH_KEY_SHARD_TABLES, task, "s2");
  CU_ASSERT(now && tables_s2 && strcmp(now, tables_s2) == 0);
  free(now);
  free(tables_s2);
  /* both arrive; s1 gets exec */
  CU_ASSERT_EQUAL(ts_put(x.w[0], task, "s1", ddl_add, 1, &err), 0);
  CU_ASSERT_EQUAL(ts_put(x.w[1], task, "s2", ddl_add, 2, &err), 0);
  waiter a;
  w_start(&a, x.w[0], task, "s1");
  CU_ASSERT_FATAL(w_join(&a, 5000) && a.rc == 1);
  char *op_before = ts_value(x.c, x.prefix, DMH_KEY_SHARD_OP, task, "s1");
  CU_ASSERT_PTR_NOT_NULL_FATAL(op_before);
  /* w2 marking s1's operation done (with its own token or s1's): refused */
  CU_ASSERT_EQUAL(ts_done(x.w[1], task, "s1", (uint64_t)x.tok[1], &a.op, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_CLUSTER_SHARD_FENCED);
  CU_ASSERT_EQUAL(ts_done(x.w[1], task, "s1", (uint64_t)x.tok[0], &a.op, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_CLUSTER_SHARD_FENCED);
  /* w1 with a token that is not its binding's (a subtask of an older binding) */
  CU_ASSERT_EQUAL(ts_done(x.w[0], task, "s1", (uint64_t)x.tok[0] - 1, &a.op, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_CLUSTER_SHARD_FENCED);
  now = ts_value(x.c, x.prefix, DMH_KEY_SHARD_OP, task, "s1");
  CU_ASSERT(now && strcmp(now, op_before) == 0 && !strstr(now, "\"done\":true"));
  free(now);
  /* s1 moves to w3 (w1's lease revoked: the leader binds s1 anew); w1's late done is refused */
  CU_ASSERT_EQUAL(dmh_etcd_lease_revoke(x.c, x.lease[0], &err), 0);
  int64_t l3 = ts_worker(x.c, x.prefix, "w3", "s1");
  int64_t tok3 = ts_wait_bound(x.c, x.prefix, "w3", "s1", 5000);
  CU_ASSERT_FATAL(tok3 > x.tok[0]);
  CU_ASSERT_EQUAL(ts_done(x.w[0], task, "s1", (uint64_t)x.tok[0], &a.op, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_CLUSTER_SHARD_FENCED);
  now = ts_value(x.c, x.prefix, DMH_KEY_SHARD_OP, task, "s1");
  CU_ASSERT(now && strcmp(now, op_before) == 0);
  free(now);
  free(op_before);
  /* the raw attack: a txn with w1's old fence compares, as a stale worker would send it */
  char bkey[DMH_CLUSTER_KEY_MAX], okey[DMH_CLUSTER_KEY_MAX];
  dmh_cluster_key(bkey, sizeof bkey, x.prefix, DMH_KEY_BOUND, "w1", NULL, NULL);
  dmh_cluster_key(okey, sizeof okey, x.prefix, DMH_KEY_SHARD_OP, task, "s1", NULL);
  dmh_etcd_cmp cmp = {.key = DMH_ETCD_S(bkey),
                      .target = DMH_ETCD_CMP_CREATE,
                      .result = DMH_ETCD_EQUAL,
                      .number = x.tok[0]};
  dmh_etcd_op put = {.kind = DMH_ETCD_PUT, .key = DMH_ETCD_S(okey), .value = DMH_ETCD_S("{}")};
  dmh_etcd_txn_result tr = {0};
  CU_ASSERT_EQUAL(dmh_etcd_txn(x.c, &cmp, 1, &put, 1, NULL, 0, &tr, &err), 0);
  CU_ASSERT_EQUAL(tr.succeeded, 0);
  dmh_etcd_txn_result_free(&tr);
  /* w3, the source's worker now, marks it done under its token; s2 gets its skip */
  cw_shard *w3 = cw_shard_new(ts_eps, NULL, x.prefix, "w3");
  cw_shard_set_token(w3, (uint64_t)tok3);
  CU_ASSERT_EQUAL(ts_done(w3, task, "s1", (uint64_t)tok3, &a.op, &err), 0);
  waiter b;
  w_start(&b, x.w[1], task, "s2");
  CU_ASSERT(w_join(&b, 5000) && b.rc == 1 && b.op.action == DM_SHARD_SKIP);
  cw_shard_free(w3);
  dmh_etcd_lease_revoke(x.c, l3, &err);
  ts_down(&x);
}

static void test_leader_change(void) {
  ts_cluster x;
  ts_up(&x, "leader", 2);
  dm_error err;
  const char *task = "shop";
  CU_ASSERT_EQUAL(ts_report(x.w[0], task, "s1", 1, &err), 0);
  CU_ASSERT_EQUAL(ts_report(x.w[1], task, "s2", 1, &err), 0);
  CU_ASSERT_EQUAL(ts_put(x.w[0], task, "s1", ddl_add, 1, &err), 0);
  waiter a;
  w_start(&a, x.w[0], task, "s1");
  CU_ASSERT(!w_join(&a, 300));
  /* half arrived: the leader resigns, the other leads and resumes from etcd */
  int lead = dmh_master_token(x.m[0]) ? 0 : 1;
  dmh_master_stop(x.m[lead], true);
  x.m[lead] = NULL;
  CU_ASSERT_FATAL(ts_wait_token(x.m[1 - lead], 5000) != 0);
  CU_ASSERT_EQUAL(ts_put(x.w[1], task, "s2", ddl_add, 2, &err), 0);
  CU_ASSERT_FATAL(w_join(&a, 5000));
  CU_ASSERT(a.rc == 1 && a.op.action == DM_SHARD_EXEC);
  CU_ASSERT_EQUAL(ts_done(x.w[0], task, "s1", (uint64_t)x.tok[0], &a.op, &err), 0);
  waiter b;
  w_start(&b, x.w[1], task, "s2");
  CU_ASSERT_FATAL(w_join(&b, 5000));
  CU_ASSERT_EQUAL(ts_done(x.w[1], task, "s2", (uint64_t)x.tok[1], &b.op, &err), 0);
  CU_ASSERT(ts_wait_count(x.c, x.prefix, DMH_KEY_SHARD_INFO, task, 0, 5000));
  ts_down(&x);
}

static void test_next_ddl_waits(void) {
  ts_cluster x;
  ts_up(&x, "next", 1);
  dm_error err;
  const char *task = "shop";
  CU_ASSERT_EQUAL(ts_report(x.w[0], task, "s1", 1, &err), 0);
  CU_ASSERT_EQUAL(ts_report(x.w[1], task, "s2", 1, &err), 0);
  CU_ASSERT_EQUAL(ts_put(x.w[0], task, "s1", ddl_add, 1, &err), 0);
  CU_ASSERT_EQUAL(ts_put(x.w[1], task, "s2", ddl_add, 2, &err), 0);
  waiter a;
  w_start(&a, x.w[0], task, "s1");
  CU_ASSERT_FATAL(w_join(&a, 5000) && a.rc == 1);
  CU_ASSERT_EQUAL(ts_done(x.w[0], task, "s1", (uint64_t)x.tok[0], &a.op, &err), 0);
  /* s1's next DDL while its done operation waits for s2: kept back, the info key unchanged */
  char *info_before = ts_value(x.c, x.prefix, DMH_KEY_SHARD_INFO, task, "s1");
  CU_ASSERT_EQUAL(ts_put(x.w[0], task, "s1", ddl_next, 3, &err), 0);
  char *info_now = ts_value(x.c, x.prefix, DMH_KEY_SHARD_INFO, task, "s1");
  CU_ASSERT(info_before && info_now && strcmp(info_before, info_now) == 0);
  free(info_before);
  free(info_now);
  w_start(&a, x.w[0], task, "s1");
  CU_ASSERT(!w_join(&a, 300));
  waiter b;
  w_start(&b, x.w[1], task, "s2");
  CU_ASSERT_FATAL(w_join(&b, 5000) && b.rc == 1 && b.op.action == DM_SHARD_SKIP);
  CU_ASSERT_EQUAL(ts_done(x.w[1], task, "s2", (uint64_t)x.tok[1], &b.op, &err), 0);
  /* the first lock resolved: s1's kept info went in, the next lock waits for s2 */
  int64_t t0 = te_now_ms();
  char *v = NULL;
  while (te_now_ms() - t0 < 5000) {
    free(v);
    v = ts_value(x.c, x.prefix, DMH_KEY_SHARD_INFO, task, "s1");
    if (v && strstr(v, "`more`"))
      break;
    ts_sleep_ms(20);
  }
  CU_ASSERT(v && strstr(v, "`more`"));
  free(v);
  CU_ASSERT(!w_join(&a, 300));
  json_object *r = ts_cmd(x.m[0], "{}");
  CU_ASSERT(strstr(ts_text(r), "\"synced\":[\"s1\"]") && strstr(ts_text(r), "`more`"));
  json_object_put(r);
  /* unlock by hand (on a thread: it waits for the owner's done): s2 never comes; s1 executes */
  unlocker u = {.m = x.m[0], .args = "{\"op\": \"unlock\", \"name\": \"shop-`shop`.`orders`\"}"};
  CU_ASSERT_EQUAL_FATAL(pthread_create(&u.thr, NULL, u_main, &u), 0);
  CU_ASSERT_FATAL(w_join(&a, 5000));
  CU_ASSERT(a.rc == 1 && a.op.action == DM_SHARD_EXEC);
  CU_ASSERT_STRING_EQUAL(a.ddl0, ddl_next[0]);
  CU_ASSERT_EQUAL(ts_done(x.w[0], task, "s1", (uint64_t)x.tok[0], &a.op, &err), 0);
  pthread_join(u.thr, NULL);
  CU_ASSERT(u.resp && strstr(ts_text(u.resp), "\"result\":true") &&
            strstr(ts_text(u.resp), "\"state\":\"resolved\""));
  json_object_put(u.resp);
  CU_ASSERT(ts_wait_count(x.c, x.prefix, DMH_KEY_SHARD_INFO, task, 0, 5000));
  CU_ASSERT(ts_wait_count(x.c, x.prefix, DMH_KEY_SHARD_OP, task, 0, 5000));
  waiter c;
  w_start(&c, x.w[1], task, "s2");
  CU_ASSERT(!w_join(&c, 300)); /* s2 had not arrived: it gets nothing */
  w_cancel(&c);
  ts_down(&x);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"a lock through etcd: waiting, exec, skip, resolved", test_lock_end_to_end},
      {"the fence: other sources' and stale writes refused", test_fence},
      {"the leader resigns half-arrived: the next one resumes", test_leader_change},
      {"a source's next DDL waits for its lock's deletion; unlock", test_next_ddl_waits},
  };
  return dmh_cunit_run("cluster_shard", ts_init, ts_clean, tests, sizeof tests / sizeof tests[0]);
}
