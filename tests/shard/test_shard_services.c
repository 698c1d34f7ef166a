/* The unit services of shard DDL locks (host/core/unit/services.c): every call reaches the
 * coordinator with the task and source of the unit's own context, never ones the unit names; the
 * wait's stop is the subtask's stop token; without a coordinator shard_mode is NONE and the calls
 * answer an error naming the task and source. */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cunit_run.h"
#include "unit_ctx.h"

typedef struct rec {
  char task[64], source[64], tschema[64];
  int calls;
  bool stopped_seen;
  uint64_t token;
} rec;

static int f_report(void *self, const char *task, const char *source, const char *tschema,
                    const char *ttable, const dm_shard_table *t, uint32_t n, dm_error *err) {
  (void)ttable, (void)t, (void)n, (void)err;
  rec *r = self;
  snprintf(r->task, sizeof r->task, "%s", task);
  snprintf(r->source, sizeof r->source, "%s", source);
  snprintf(r->tschema, sizeof r->tschema, "%s", tschema);
  r->calls++;
  return 0;
}
static int f_put(void *self, const char *task, const char *source, const dm_shard_info *info,
                 dm_error *err) {
  return f_report(self, task, source, info->target_schema, info->target_table, NULL, 0, err);
}
static int f_wait(void *self, const char *task, const char *source, const char *tschema,
                  const char *ttable, bool (*stopped)(void *), void *arg, dm_shard_op *op,
                  dm_error *err) {
  (void)op;
  f_report(self, task, source, tschema, ttable, NULL, 0, err);
  ((rec *)self)->stopped_seen = stopped(arg);
  return 0;
}
static int f_done(void *self, const char *task, const char *source, uint64_t token,
                  const dm_shard_op *op, dm_error *err) {
  (void)op;
  ((rec *)self)->token = token;
  return f_report(self, task, source, "", "", NULL, 0, err);
}
static const dmh_shard_coord_ops f_ops = {f_report, f_put, f_wait, f_done};

static void test_own_task_and_source(void) {
  char dir[] = "/tmp/dmh-shard-svc-XXXXXX";
  CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
  dm_error err;
  dm_ctx *c = dmh_ctx_new(dir, 0600, &err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  dmh_stop_token token;
  CU_ASSERT_EQUAL_FATAL(dmh_stop_token_init(&token), 0);
  rec r = {.calls = 0};
  dmh_shard_coord co = {&f_ops, &r};
  c->task_name = "shop";
  c->source_id = "eu";
  c->token = &token;
  c->fencing_token = 42;
  c->shard_mode = DM_SHARD_MODE_PESSIMISTIC;
  const dm_host_services *h = dmh_host_services();

  /* no coordinator: NONE, and an error naming the task and source */
  CU_ASSERT_EQUAL(dm_host_shard_mode(h, c), DM_SHARD_MODE_NONE);
  dm_shard_table t = {"shop_1", "orders_1"};
  dm_shard_info info = {
      .target_schema = "shop", .target_table = "orders", .tables = &t, .n_tables = 1};
  CU_ASSERT_EQUAL(h->shard_put(c, &info, &err), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "task shop source eu"));

  c->shard = &co;
  CU_ASSERT_EQUAL(dm_host_shard_mode(h, c), DM_SHARD_MODE_PESSIMISTIC);
  CU_ASSERT_EQUAL(h->shard_report_tables(c, "shop", "orders", &t, 1, &err), 0);
  CU_ASSERT_STRING_EQUAL(r.task, "shop");
  CU_ASSERT_STRING_EQUAL(r.source, "eu");
  CU_ASSERT_EQUAL(h->shard_put(c, &info, &err), 0);
  CU_ASSERT_STRING_EQUAL(r.source, "eu");
  dm_shard_op op;
  CU_ASSERT_EQUAL(h->shard_wait(c, "shop", "orders", &op, &err), 0);
  CU_ASSERT_FALSE(r.stopped_seen);
  dmh_stop_token_fire(&token);
  CU_ASSERT_EQUAL(h->shard_wait(c, "shop", "orders", &op, &err), 0);
  CU_ASSERT_TRUE(r.stopped_seen); /* the subtask's stop reaches the wait */
  memset(&op, 0, sizeof op);
  CU_ASSERT_EQUAL(h->shard_done(c, &op, &err), 0);
  CU_ASSERT_EQUAL(r.token, 42);
  CU_ASSERT_EQUAL(r.calls, 5);
  dmh_stop_token_destroy(&token);
  c->token = NULL;
  dmh_ctx_free(c);
  rmdir(dir);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"own_task_and_source", test_own_task_and_source},
  };
  return dmh_cunit_run("shard_services", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
