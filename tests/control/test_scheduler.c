/*
 * The cluster's scheduling rules (host/cluster/master/scheduler.c) as a pure function: the choice
 * order, the relay rule, transfer-source, refused snapshots, and the rolling restart of the issue's
 * seed scenario (within the lease: nothing moves; past it: the source moves and the returning
 * worker, which keeps the relay of its old source, is never handed another one).
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

#include "cunit_run.h"
#include "scheduler.h"

#define NW 8
#define NS 8

typedef struct snap {
  dmh_sched_worker w[NW];
  size_t nw;
  dmh_sched_source s[NS];
  size_t ns;
  dmh_sched_action a[2 * NS];
} snap;

static dmh_sched_worker *worker(snap *x, const char *name, bool online, const char *bound,
                                const char *relay) {
  dmh_sched_worker *w = &x->w[x->nw++];
  memset(w, 0, sizeof *w);
  snprintf(w->name, sizeof w->name, "%s", name);
  w->online = online;
  snprintf(w->bound, sizeof w->bound, "%s", bound);
  snprintf(w->relay, sizeof w->relay, "%s", relay);
  return w;
}

static void source(snap *x, const char *name, const char *last) {
  dmh_sched_source *s = &x->s[x->ns++];
  memset(s, 0, sizeof *s);
  snprintf(s->name, sizeof s->name, "%s", name);
  snprintf(s->last, sizeof s->last, "%s", last);
}

static dmh_sched_worker *find(snap *x, const char *name) {
  for (size_t i = 0; i < x->nw; i++)
    if (strcmp(x->w[i].name, name) == 0)
      return &x->w[i];
  return NULL;
}

/* The plan as text: "-s1@w2 +s1@w1" (unbinds and binds in order). */
static int plan(snap *x, char *out, size_t len) {
  dm_error err;
  int n = dmh_sched_plan(x->w, x->nw, x->s, x->ns, x->a, &err);
  out[0] = '\0';
  size_t o = 0;
  for (int i = 0; i < n && o < len; i++)
    o += (size_t)snprintf(out + o, len - o, "%s%c%s@%s", i ? " " : "",
                          x->a[i].kind == DMH_SCHED_BIND ? '+' : '-', x->a[i].source,
                          x->a[i].worker);
  if (n < 0)
    snprintf(out, len, "error %d: %.200s", err.code, err.message);
  return n;
}

static void test_stages(void) {
  snap x = {0};
  CU_ASSERT_EQUAL(dmh_sched_stage(worker(&x, "a", false, "s1", "s1")), DMH_WORKER_OFFLINE);
  CU_ASSERT_EQUAL(dmh_sched_stage(worker(&x, "b", true, "", "")), DMH_WORKER_FREE);
  CU_ASSERT_EQUAL(dmh_sched_stage(worker(&x, "c", true, "s2", "")), DMH_WORKER_BOUND);
  CU_ASSERT_EQUAL(dmh_sched_stage(worker(&x, "d", true, "s3", "s3")), DMH_WORKER_RELAY);
  /* keeps a relay but bound to nothing (its source moved while it was away): still relay */
  CU_ASSERT_EQUAL(dmh_sched_stage(worker(&x, "e", true, "", "s4")), DMH_WORKER_RELAY);
}

static void test_choice_order(void) {
  char p[256];
  /* name order among free workers */
  snap x = {0};
  worker(&x, "w3", true, "", "");
  worker(&x, "w2", true, "", "");
  source(&x, "s1", "");
  CU_ASSERT_EQUAL(plan(&x, p, sizeof p), 1);
  CU_ASSERT_STRING_EQUAL(p, "+s1@w2");
  /* the worker that served it before beats name order */
  snap y = {0};
  worker(&y, "w1", true, "", "");
  worker(&y, "w2", true, "", "");
  source(&y, "s1", "w2");
  plan(&y, p, sizeof p);
  CU_ASSERT_STRING_EQUAL(p, "+s1@w2");
  /* the worker keeping its relay beats both */
  snap z = {0};
  worker(&z, "w1", true, "", "");
  worker(&z, "w2", true, "", "");
  worker(&z, "w3", true, "", "s1");
  source(&z, "s1", "w2");
  plan(&z, p, sizeof p);
  CU_ASSERT_STRING_EQUAL(p, "+s1@w3");
  /* a worker keeping another source's relay, or bound, or offline, is never chosen */
  snap v = {0};
  worker(&v, "w1", true, "", "s9");
  worker(&v, "w2", true, "s8", "");
  worker(&v, "w3", false, "", "");
  source(&v, "s1", "w1");
  source(&v, "s8", "");
  source(&v, "s9", "");
  CU_ASSERT_EQUAL(plan(&v, p, sizeof p), 1);
  CU_ASSERT_STRING_EQUAL(p, "+s9@w1"); /* s9 goes to its relay keeper; s1 waits */
  CU_ASSERT_STRING_EQUAL(find(&v, "w1")->bound, "s9");
  /* one source per worker: two sources, one free worker */
  snap u = {0};
  worker(&u, "w1", true, "", "");
  source(&u, "s1", "");
  source(&u, "s2", "");
  CU_ASSERT_EQUAL(plan(&u, p, sizeof p), 1);
  CU_ASSERT_STRING_EQUAL(p, "+s1@w1");
}

static void test_offline_moves(void) {
  char p[256];
  snap x = {0};
  worker(&x, "w1", true, "", "");
  worker(&x, "w2", false, "s1", "s1"); /* lease expired */
  source(&x, "s1", "w2");
  CU_ASSERT_EQUAL(plan(&x, p, sizeof p), 2);
  CU_ASSERT_STRING_EQUAL(p, "-s1@w2 +s1@w1");
  /* and nothing more to do once applied */
  CU_ASSERT_EQUAL(plan(&x, p, sizeof p), 0);
}

static void test_refused_snapshots(void) {
  char p[256];
  snap x = {0};
  worker(&x, "w1", true, "s1", "");
  worker(&x, "w2", true, "s1", "");
  source(&x, "s1", "");
  CU_ASSERT_EQUAL(plan(&x, p, sizeof p), -1);
  CU_ASSERT(strstr(p, "bound to both w1 and w2") != NULL);
  snap y = {0};
  worker(&y, "w1", true, "s2", "s1");
  source(&y, "s1", "");
  source(&y, "s2", "");
  CU_ASSERT_EQUAL(plan(&y, p, sizeof p), -1);
  CU_ASSERT(strstr(p, "keeps the relay of source s1 but is bound to source s2") != NULL);
  snap z = {0};
  worker(&z, "w1", true, "ghost", "");
  CU_ASSERT_EQUAL(plan(&z, p, sizeof p), -1);
  CU_ASSERT(strstr(p, "ghost") != NULL);
}

static void test_transfer(void) {
  snap x = {0};
  worker(&x, "w1", true, "", "");
  worker(&x, "w2", true, "s2", "");
  worker(&x, "w3", true, "", "s3");
  worker(&x, "w4", false, "", "");
  source(&x, "s1", "");
  source(&x, "s2", "");
  source(&x, "s3", "");
  dm_error err;
  CU_ASSERT_EQUAL(dmh_sched_transfer(x.w, x.nw, x.s, x.ns, "s1", "w1", x.a, &err), 1);
  CU_ASSERT(x.a[0].kind == DMH_SCHED_BIND && strcmp(x.a[0].worker, "w1") == 0);
  /* bound elsewhere: moved (unbind, bind) */
  CU_ASSERT_EQUAL(dmh_sched_transfer(x.w, x.nw, x.s, x.ns, "s2", "w3", x.a, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_EXISTS); /* w3 keeps s3's relay */
  CU_ASSERT(strstr(err.message, "keeps the relay of source s3") != NULL);
  CU_ASSERT_EQUAL(dmh_sched_transfer(x.w, x.nw, x.s, x.ns, "s3", "w3", x.a, &err), 1);
  CU_ASSERT_EQUAL(dmh_sched_transfer(x.w, x.nw, x.s, x.ns, "s1", "w2", x.a, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_EXISTS); /* w2 is bound to s2 */
  CU_ASSERT_EQUAL(dmh_sched_transfer(x.w, x.nw, x.s, x.ns, "s1", "w4", x.a, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_STAGE);
  CU_ASSERT_EQUAL(dmh_sched_transfer(x.w, x.nw, x.s, x.ns, "s1", "w9", x.a, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_NOT_FOUND);
  CU_ASSERT_EQUAL(dmh_sched_transfer(x.w, x.nw, x.s, x.ns, "s1", "w1", x.a, &err), 0);
  /* a free worker takes a source from a bound one */
  find(&x, "w4")->online = true;
  CU_ASSERT_EQUAL(dmh_sched_transfer(x.w, x.nw, x.s, x.ns, "s2", "w4", x.a, &err), 2);
  CU_ASSERT(x.a[0].kind == DMH_SCHED_UNBIND && strcmp(x.a[0].worker, "w2") == 0);
  CU_ASSERT(x.a[1].kind == DMH_SCHED_BIND && strcmp(x.a[1].worker, "w4") == 0);
  CU_ASSERT_STRING_EQUAL(find(&x, "w2")->bound, "");
}

/* The seed scenario: w1 free, w2 (source1), w3 (source2) after transfer-source, relays
 * started; then each worker restarted in name order. */
static void seed(snap *x) {
  memset(x, 0, sizeof *x);
  worker(x, "w1", true, "", "");
  worker(x, "w2", true, "", "");
  worker(x, "w3", true, "", "");
  source(x, "source1", "");
  source(x, "source2", "");
  dm_error err;
  CU_ASSERT_FATAL(dmh_sched_transfer(x->w, x->nw, x->s, x->ns, "source1", "w2", x->a, &err) == 1);
  CU_ASSERT_FATAL(dmh_sched_transfer(x->w, x->nw, x->s, x->ns, "source2", "w3", x->a, &err) == 1);
  strcpy(find(x, "w2")->relay, "source1"); /* start-relay on both */
  strcpy(find(x, "w3")->relay, "source2");
}

static void test_rolling_restart(void) {
  char p[256];
  snap x;
  seed(&x);
  CU_ASSERT_EQUAL(plan(&x, p, sizeof p), 0);
  /* within the lease (the worker renews the lease ID it saved): never offline, nothing moves */
  const char *order[] = {"w1", "w2", "w3"};
  for (int i = 0; i < 3; i++) {
    CU_ASSERT_EQUAL(plan(&x, p, sizeof p), 0);
    if (p[0])
      fprintf(stderr, "restart of %s planned: %s\n", order[i], p);
  }
  CU_ASSERT_STRING_EQUAL(find(&x, "w2")->bound, "source1");
  CU_ASSERT_STRING_EQUAL(find(&x, "w3")->bound, "source2");

  /* past the lease (kill -9, or a restart slower than the TTL): w2 goes offline, source1 moves
   * to the free w1; w2 comes back keeping source1's relay: stage relay, never free */
  find(&x, "w2")->online = false;
  CU_ASSERT_EQUAL(plan(&x, p, sizeof p), 2);
  CU_ASSERT_STRING_EQUAL(p, "-source1@w2 +source1@w1");
  find(&x, "w2")->online = true;
  CU_ASSERT_EQUAL(dmh_sched_stage(find(&x, "w2")), DMH_WORKER_RELAY);
  CU_ASSERT_EQUAL(plan(&x, p, sizeof p), 0);
  /* a new source is not handed to w2 (DM's bug: "has already started with source ...") */
  source(&x, "source3", "");
  CU_ASSERT_EQUAL(plan(&x, p, sizeof p), 0);
  worker(&x, "w4", true, "", "");
  CU_ASSERT_EQUAL(plan(&x, p, sizeof p), 1);
  CU_ASSERT_STRING_EQUAL(p, "+source3@w4");
  /* w1 dies now: source1 goes back to w2, the keeper of its relay, ahead of any free worker */
  worker(&x, "w0", true, "", "");
  find(&x, "w1")->online = false;
  CU_ASSERT_EQUAL(plan(&x, p, sizeof p), 2);
  CU_ASSERT_STRING_EQUAL(p, "-source1@w1 +source1@w2");
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"stages from etcd's view", test_stages},
      {"choice order: relay keeper, last worker, name", test_choice_order},
      {"an offline worker's source moves", test_offline_moves},
      {"refused snapshots", test_refused_snapshots},
      {"transfer-source", test_transfer},
      {"rolling restart of the seed scenario", test_rolling_restart},
  };
  return dmh_cunit_run("scheduler", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
