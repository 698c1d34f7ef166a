/* The in-process coordinator (host/registry/registry_shard.c) with threads playing three sources
 * of one task: each puts its info, blocks in wait, applies what it gets (counting the execs) and
 * reports done. A "restart" drops the coordinator and loads shard.json again mid-lock: the lock
 * resumes where it was and an operation done before is never handed out again. Unlock by hand
 * with a thread as the owner, and with an owner that never runs the DDL. */
#include <CUnit/Basic.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cunit_run.h"
#include "registry_shard.h"

#define TASK "shop"
#define ID "shop-`shop`.`orders`"
static const char *DDL[] = {"ALTER TABLE `shop`.`orders` ADD COLUMN `note` INT"};
static char dir[256];

typedef struct src {
  const dmh_shard_coord *co;
  const char *name;
  dm_shard_table table;
  atomic_bool stop;
  atomic_int finished; /* 1: done with an op, 2: stopped, 3: failed */
  dm_shard_action got;
} src;

static atomic_int execs; /* DDLs "run on the target" by every source together */

static bool src_stopped(void *arg) {
  return atomic_load(&((src *)arg)->stop);
}

static void *src_main(void *arg) {
  src *s = arg;
  dm_error err;
  dm_shard_info info = {.target_schema = "shop",
                        .target_table = "orders",
                        .ddls = DDL,
                        .n_ddls = 1,
                        .tables = &s->table,
                        .n_tables = 1};
  snprintf(info.pos.name, sizeof info.pos.name, "mysql-bin.000001");
  info.pos.pos = 4000;
  if (s->co->ops->put(s->co->self, TASK, s->name, &info, &err) < 0) {
    atomic_store(&s->finished, 3);
    return NULL;
  }
  dm_shard_op op;
  int rc =
      s->co->ops->wait(s->co->self, TASK, s->name, "shop", "orders", src_stopped, s, &op, &err);
  if (rc == 0) {
    atomic_store(&s->finished, 2);
    return NULL;
  }
  if (rc < 0 || strcmp(op.lock_id, ID) != 0) {
    atomic_store(&s->finished, 3);
    return NULL;
  }
  s->got = op.action;
  if (op.action == DM_SHARD_EXEC && op.n_ddls == 1 && strcmp(op.ddls[0], DDL[0]) == 0)
    atomic_fetch_add(&execs, 1);
  atomic_store(&s->finished,
               s->co->ops->done(s->co->self, TASK, s->name, 0, &op, &err) < 0 ? 3 : 1);
  return NULL;
}

static void src_init(src *s, const dmh_shard_coord *co, const char *name, const char *schema) {
  memset(s, 0, sizeof *s);
  s->co = co;
  s->name = name;
  s->table = (dm_shard_table){schema, "orders_01"};
}

static void report(const dmh_shard_coord *co, src *s) {
  dm_error err;
  CU_ASSERT_EQUAL(
      co->ops->report_tables(co->self, TASK, s->name, "shop", "orders", &s->table, 1, &err), 0);
}

/* the lock's listing as text ("" when there is none), and its state */
static const char *lock_state(dmh_shard_local *c, char *text, size_t len) {
  json_object *resp = json_object_new_object(), *locks = NULL;
  dm_error err;
  text[0] = '\0';
  const char *st = "none";
  static char buf[32];
  if (dmh_shard_local_show(c, TASK, resp, &err) == 0 &&
      json_object_object_get_ex(resp, "locks", &locks) && json_object_array_length(locks) == 1) {
    json_object *l = json_object_array_get_idx(locks, 0), *v = NULL;
    snprintf(text, len, "%s", json_object_to_json_string_ext(l, JSON_C_TO_STRING_NOSLASHESCAPE));
    if (json_object_object_get_ex(l, "state", &v))
      snprintf(buf, sizeof buf, "%s", json_object_get_string(v)), st = buf;
  }
  json_object_put(resp);
  return st;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* waits (bounded by 60 s) until the listing says `state` ("none": no lock) */
static bool wait_state(dmh_shard_local *c, const char *state) {
  char text[4096];
  for (double end = now_s() + 60; now_s() < end; usleep(10000))
    if (strcmp(lock_state(c, text, sizeof text), state) == 0)
      return true;
  return false;
}

static bool wait_finished(src *s, int want) {
  for (double end = now_s() + 60; now_s() < end; usleep(10000))
    if (atomic_load(&s->finished) == want)
      return true;
  return false;
}

static char *shard_json(void) {
  char path[400];
  snprintf(path, sizeof path, "%s/tasks/%s/shard.json", dir, TASK);
  FILE *f = fopen(path, "r");
  if (!f)
    return NULL;
  static char buf[16384];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

static dmh_shard_local *open_coord(void) {
  dm_error err;
  dmh_shard_local *c = dmh_shard_local_new(dir, &err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  CU_ASSERT_EQUAL_FATAL(dmh_shard_local_load(c, TASK, &err), 0);
  return c;
}

static int clean_dir(void) {
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  return system(cmd) == 0 ? 0 : -1;
}

/* Three sources arrive one by one; a restart while two wait; the owner execs once, the others
 * skip; a second restart after the owner's done hands the owner nothing again. */
static void test_three_sources_with_restarts(void) {
  clean_dir();
  atomic_store(&execs, 0);
  dmh_shard_local *c = open_coord();
  const dmh_shard_coord *co = dmh_shard_local_coord(c);
  src a, b, d;
  src_init(&a, co, "eu", "shop_1");
  src_init(&b, co, "us", "shop_3");
  src_init(&d, co, "as", "shop_5");
  report(co, &a);
  report(co, &b);
  report(co, &d);
  pthread_t ta, tb, td;
  pthread_create(&ta, NULL, src_main, &a);
  CU_ASSERT_TRUE(wait_state(c, "waiting"));
  pthread_create(&tb, NULL, src_main, &b);
  char text[4096];
  for (double end = now_s() + 60; now_s() < end; usleep(10000))
    if (lock_state(c, text, sizeof text) && strstr(text, "\"synced\":[\"eu\",\"us\"]"))
      break;
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"synced\":[\"eu\",\"us\"],\"unsynced\":[\"as\"]"));
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"owner\":\"eu\""));
  const char *j = shard_json();
  CU_ASSERT_PTR_NOT_NULL_FATAL(j);
  json_object *jo = json_tokener_parse(j), *infos = NULL;
  CU_ASSERT_TRUE(json_object_object_get_ex(jo, "infos", &infos));
  CU_ASSERT_EQUAL(json_object_array_length(infos), 2); /* both arrivals are on disk */
  json_object_put(jo);

  /* restart: the waiters stop (as a pause does), the coordinator goes, a new one loads */
  atomic_store(&a.stop, true);
  atomic_store(&b.stop, true);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  CU_ASSERT_EQUAL(atomic_load(&a.finished), 2);
  CU_ASSERT_EQUAL(atomic_load(&b.finished), 2);
  dmh_shard_local_free(c);
  c = open_coord();
  co = dmh_shard_local_coord(c);
  CU_ASSERT_STRING_EQUAL(lock_state(c, text, sizeof text), "waiting");
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"synced\":[\"eu\",\"us\"],\"unsynced\":[\"as\"]"));
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"owner\":\"eu\""));

  /* the sources come back (re-put: the same info) and the last one arrives */
  src_init(&a, co, "eu", "shop_1");
  src_init(&b, co, "us", "shop_3");
  src_init(&d, co, "as", "shop_5");
  pthread_create(&ta, NULL, src_main, &a);
  pthread_create(&tb, NULL, src_main, &b);
  CU_ASSERT_TRUE(wait_state(c, "waiting"));
  pthread_create(&td, NULL, src_main, &d);
  CU_ASSERT_TRUE(wait_finished(&a, 1));
  CU_ASSERT_TRUE(wait_finished(&b, 1));
  CU_ASSERT_TRUE(wait_finished(&d, 1));
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  pthread_join(td, NULL);
  CU_ASSERT_EQUAL(a.got, DM_SHARD_EXEC);
  CU_ASSERT_EQUAL(b.got, DM_SHARD_SKIP);
  CU_ASSERT_EQUAL(d.got, DM_SHARD_SKIP);
  CU_ASSERT_EQUAL(atomic_load(&execs), 1);
  CU_ASSERT_TRUE(wait_state(c, "none"));
  j = shard_json();
  CU_ASSERT_PTR_NOT_NULL_FATAL(j); /* the tables reported stay, no info or operation */
  CU_ASSERT_PTR_NULL(strstr(j, "ALTER"));
  dmh_shard_local_free(c);
}

static bool stop_now(void *arg) {
  (void)arg;
  return true;
}

static void put_direct(const dmh_shard_coord *co, src *s) {
  dm_error err;
  dm_shard_info info = {.target_schema = "shop",
                        .target_table = "orders",
                        .ddls = DDL,
                        .n_ddls = 1,
                        .tables = &s->table,
                        .n_tables = 1};
  CU_ASSERT_EQUAL(co->ops->put(co->self, TASK, s->name, &info, &err), 0);
}

/* what wait hands out at once (stop already requested: 0 when there is no operation) */
static int wait_now(const dmh_shard_coord *co, const char *source, dm_shard_op *op) {
  dm_error err;
  return co->ops->wait(co->self, TASK, source, "shop", "orders", stop_now, NULL, op, &err);
}

/* A restart after the owner's done and before the other's: the owner gets nothing again, the
 * other its skip. */
static void test_restart_after_owner_done(void) {
  clean_dir();
  atomic_store(&execs, 0);
  dmh_shard_local *c = open_coord();
  const dmh_shard_coord *co = dmh_shard_local_coord(c);
  src a, b;
  src_init(&a, co, "eu", "shop_1");
  src_init(&b, co, "us", "shop_3");
  report(co, &a);
  report(co, &b);
  pthread_t ta;
  pthread_create(&ta, NULL, src_main, &a);
  CU_ASSERT_TRUE(wait_state(c, "waiting"));
  put_direct(co, &b); /* b arrives; its sync is "killed" before it waits */
  CU_ASSERT_TRUE(wait_finished(&a, 1));
  pthread_join(ta, NULL);
  CU_ASSERT_EQUAL(a.got, DM_SHARD_EXEC);
  CU_ASSERT_STRING_EQUAL(lock_state(c, (char[4096]){0}, 4096), "executed");
  dmh_shard_local_free(c);
  c = open_coord();
  co = dmh_shard_local_coord(c);
  CU_ASSERT_STRING_EQUAL(lock_state(c, (char[4096]){0}, 4096), "executed");
  dm_shard_op op;
  CU_ASSERT_EQUAL(wait_now(co, "eu", &op), 0); /* done before the restart: never again */
  CU_ASSERT_EQUAL(wait_now(co, "us", &op), 1);
  CU_ASSERT_EQUAL(op.action, DM_SHARD_SKIP);
  dm_error err;
  CU_ASSERT_EQUAL(co->ops->done(co->self, TASK, "us", 0, &op, &err), 0);
  CU_ASSERT_STRING_EQUAL(lock_state(c, (char[4096]){0}, 4096), "none");
  CU_ASSERT_EQUAL(atomic_load(&execs), 1);
  dmh_shard_local_free(c);
}

/* unlock while one source is missing: the owner (a thread) runs the DDL, the other skips; the
 * missing one is left out */
static void test_unlock_by_hand(void) {
  clean_dir();
  atomic_store(&execs, 0);
  dmh_shard_local *c = open_coord();
  const dmh_shard_coord *co = dmh_shard_local_coord(c);
  src a, b, d;
  src_init(&a, co, "eu", "shop_1");
  src_init(&b, co, "us", "shop_3");
  src_init(&d, co, "as", "shop_5");
  report(co, &a);
  report(co, &b);
  report(co, &d);
  pthread_t ta, tb;
  pthread_create(&ta, NULL, src_main, &a);
  CU_ASSERT_TRUE(wait_state(c, "waiting"));
  pthread_create(&tb, NULL, src_main, &b);
  char text[4096];
  for (double end = now_s() + 60; now_s() < end; usleep(10000))
    if (lock_state(c, text, sizeof text) && strstr(text, "\"synced\":[\"eu\",\"us\"]"))
      break;
  json_object *resp = json_object_new_object(), *v = NULL;
  dm_error err;
  CU_ASSERT_EQUAL(dmh_shard_local_unlock(c, ID, "as", false, 60000, resp, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_SHARD_NOT_WAITING);
  CU_ASSERT_EQUAL(dmh_shard_local_unlock(c, ID, NULL, false, 60000, resp, &err), 0);
  CU_ASSERT_TRUE(json_object_object_get_ex(resp, "state", &v));
  CU_ASSERT_STRING_EQUAL(json_object_get_string(v), "resolved");
  json_object_put(resp);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  CU_ASSERT_EQUAL(a.got, DM_SHARD_EXEC);
  CU_ASSERT_EQUAL(b.got, DM_SHARD_SKIP);
  CU_ASSERT_EQUAL(atomic_load(&execs), 1);
  CU_ASSERT_STRING_EQUAL(lock_state(c, text, sizeof text), "none");
  dmh_shard_local_free(c);
}

/* an owner that never runs the DDL: the exec is withdrawn (DM_ERR_SHARD_OWNER_EXEC) and the lock
 * waits again; with --force-remove the lock is deleted anyway */
static void test_unlock_owner_never_runs(void) {
  clean_dir();
  dmh_shard_local *c = open_coord();
  const dmh_shard_coord *co = dmh_shard_local_coord(c);
  src a, b, d;
  src_init(&a, co, "eu", "shop_1");
  src_init(&b, co, "us", "shop_3");
  src_init(&d, co, "as", "shop_5");
  report(co, &a);
  report(co, &b);
  report(co, &d);
  put_direct(co, &a);
  put_direct(co, &b);
  json_object *resp = json_object_new_object();
  dm_error err;
  CU_ASSERT_EQUAL(dmh_shard_local_unlock(c, "shop-`no`.`such`", NULL, false, 100, resp, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_SHARD_LOCK_NOT_FOUND);
  CU_ASSERT_EQUAL(dmh_shard_local_unlock(c, ID, NULL, false, 200, resp, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_SHARD_OWNER_EXEC);
  char text[4096];
  CU_ASSERT_STRING_EQUAL(lock_state(c, text, sizeof text), "waiting");
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"unsynced\":[\"as\"]"));
  dm_shard_op op;
  CU_ASSERT_EQUAL(wait_now(co, "eu", &op), 0); /* withdrawn */
  CU_ASSERT_EQUAL(dmh_shard_local_unlock(c, ID, "us", true, 200, resp, &err), 0);
  CU_ASSERT_STRING_EQUAL(lock_state(c, text, sizeof text), "none");
  CU_ASSERT_PTR_NULL(strstr(shard_json() ? shard_json() : "", "ALTER"));
  json_object_put(resp);
  dmh_shard_local_free(c);
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/dmh-shard-coord-%d", (int)getpid());
  static const dmh_cunit_test tests[] = {
      {"three_sources_with_restarts", test_three_sources_with_restarts},
      {"restart_after_owner_done", test_restart_after_owner_done},
      {"unlock_by_hand", test_unlock_by_hand},
      {"unlock_owner_never_runs", test_unlock_owner_never_runs},
  };
  int rc = dmh_cunit_run("shard_coord", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
  clean_dir();
  return rc;
}
