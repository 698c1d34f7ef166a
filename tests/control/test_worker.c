/*
 * The worker's stage machine (host/registry/worker_stage.c), table-driven: every allowed transition
 * and every refusal with its code and message.
 *
 * Regression (DM): after a rolling restart a DM worker whose relay was bound to source A came back
 * as "free" and the master handed it source B, so two sources fought over one relay. Here the
 * persisted relay binding to A restores straight to relay(A), and binding B is refused naming A.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

#include "cunit_run.h"
#include "dmhost/sdk.h"
#include "worker.h"

static bool test_contains(const char *haystack, const char *needle) {
  if (strstr(haystack, needle))
    return true;
  fprintf(stderr, "\n  expected \"%s\" in \"%s\"\n", needle, haystack);
  return false;
}

static dmh_worker test_at(dmh_worker_stage stage, const char *source) {
  dmh_worker w;
  dmh_worker_init(&w);
  w.stage = stage;
  dm_strlcpy(w.source, source ? source : "", sizeof w.source);
  return w;
}

typedef struct {
  const char *name;
  dmh_worker_stage from;
  const char *from_source;
  dmh_worker_event ev;
  dmh_worker_stage to;
  const char *to_source;
} test_ok_row;

static const test_ok_row test_ok_rows[] = {
    {"offline, nothing persisted -> free",
     DMH_WORKER_OFFLINE,
     NULL,
     {DMH_WORKER_EV_RESTORE, NULL, false},
     DMH_WORKER_FREE,
     ""},
    {"offline, empty source persisted -> free",
     DMH_WORKER_OFFLINE,
     NULL,
     {DMH_WORKER_EV_RESTORE, "", false},
     DMH_WORKER_FREE,
     ""},
    {"offline, persisted bound A -> bound A",
     DMH_WORKER_OFFLINE,
     NULL,
     {DMH_WORKER_EV_RESTORE, "mysql-01", false},
     DMH_WORKER_BOUND,
     "mysql-01"},
    {"offline, persisted relay A -> relay A",
     DMH_WORKER_OFFLINE,
     NULL,
     {DMH_WORKER_EV_RESTORE, "mysql-01", true},
     DMH_WORKER_RELAY,
     "mysql-01"},
    {"free -> bound on create",
     DMH_WORKER_FREE,
     NULL,
     {DMH_WORKER_EV_BIND, "mysql-01", false},
     DMH_WORKER_BOUND,
     "mysql-01"},
    {"bound -> relay on start-relay",
     DMH_WORKER_BOUND,
     "mysql-01",
     {DMH_WORKER_EV_START_RELAY, "mysql-01", false},
     DMH_WORKER_RELAY,
     "mysql-01"},
    {"relay -> bound on stop-relay",
     DMH_WORKER_RELAY,
     "mysql-01",
     {DMH_WORKER_EV_STOP_RELAY, "mysql-01", false},
     DMH_WORKER_BOUND,
     "mysql-01"},
    {"bound -> free on operate-source stop",
     DMH_WORKER_BOUND,
     "mysql-01",
     {DMH_WORKER_EV_UNBIND, "mysql-01", false},
     DMH_WORKER_FREE,
     ""},
    {"relay -> offline on shutdown",
     DMH_WORKER_RELAY,
     "mysql-01",
     {DMH_WORKER_EV_SHUTDOWN, NULL, false},
     DMH_WORKER_OFFLINE,
     ""},
    {"free -> offline on shutdown",
     DMH_WORKER_FREE,
     NULL,
     {DMH_WORKER_EV_SHUTDOWN, NULL, false},
     DMH_WORKER_OFFLINE,
     ""},
};

static void test_allowed_transitions(void) {
  for (size_t i = 0; i < sizeof test_ok_rows / sizeof test_ok_rows[0]; i++) {
    const test_ok_row *r = &test_ok_rows[i];
    dmh_worker cur = test_at(r->from, r->from_source);
    dmh_worker next = test_at(DMH_WORKER_OFFLINE, "garbage");
    dm_error err;
    memset(&err, 0, sizeof err);
    int rc = dmh_worker_apply(&cur, &r->ev, &next, &err);
    if (rc != 0)
      fprintf(stderr, "\n  %s: refused: %s\n", r->name, err.message);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_EQUAL(next.stage, r->to);
    CU_ASSERT_STRING_EQUAL(next.source, r->to_source);
    /* Applying in place (next aliasing cur) gives the same result. */
    CU_ASSERT_EQUAL(dmh_worker_apply(&cur, &r->ev, &cur, &err), 0);
    CU_ASSERT_EQUAL(cur.stage, r->to);
    CU_ASSERT_STRING_EQUAL(cur.source, r->to_source);
  }
}

typedef struct {
  const char *name;
  dmh_worker_stage from;
  const char *from_source;
  dmh_worker_event ev;
  int32_t code;
  const char *needles[3]; /* each must be in the message */
} test_refusal_row;

static const test_refusal_row test_refusal_rows[] = {
    {"bound A, create B",
     DMH_WORKER_BOUND,
     "mysql-01",
     {DMH_WORKER_EV_BIND, "mysql-02", false},
     DM_ERR_EXISTS,
     {"bound to source \"mysql-01\"", "operate-source stop -s mysql-01", "\"mysql-02\""}},
    {"relay A, create B",
     DMH_WORKER_RELAY,
     "mysql-01",
     {DMH_WORKER_EV_BIND, "mysql-02", false},
     DM_ERR_EXISTS,
     {"relay", "stop-relay -s mysql-01", "operate-source stop -s mysql-01"}},
    {"bound A, create A again",
     DMH_WORKER_BOUND,
     "mysql-01",
     {DMH_WORKER_EV_BIND, "mysql-01", false},
     DM_ERR_EXISTS,
     {"\"mysql-01\" already exists", "operate-source stop -s mysql-01", NULL}},
    {"offline, create",
     DMH_WORKER_OFFLINE,
     NULL,
     {DMH_WORKER_EV_BIND, "mysql-01", false},
     DM_ERR_STAGE,
     {"offline", NULL, NULL}},
    {"free, create without a source",
     DMH_WORKER_FREE,
     NULL,
     {DMH_WORKER_EV_BIND, NULL, false},
     DM_ERR_CONTROL_REQUEST,
     {"no source named", NULL, NULL}},
    {"free, start-relay",
     DMH_WORKER_FREE,
     NULL,
     {DMH_WORKER_EV_START_RELAY, "mysql-01", false},
     DM_ERR_NOT_FOUND,
     {"\"mysql-01\" is not bound", "free", "operate-source create"}},
    {"bound A, start-relay B",
     DMH_WORKER_BOUND,
     "mysql-01",
     {DMH_WORKER_EV_START_RELAY, "mysql-02", false},
     DM_ERR_NOT_FOUND,
     {"\"mysql-02\" is not bound", "bound to \"mysql-01\"", NULL}},
    {"relay A, start-relay A",
     DMH_WORKER_RELAY,
     "mysql-01",
     {DMH_WORKER_EV_START_RELAY, "mysql-01", false},
     DM_ERR_EXISTS,
     {"relay of source \"mysql-01\" already runs", NULL, NULL}},
    {"bound A, stop-relay A",
     DMH_WORKER_BOUND,
     "mysql-01",
     {DMH_WORKER_EV_STOP_RELAY, "mysql-01", false},
     DM_ERR_NOT_FOUND,
     {"no relay runs for source \"mysql-01\"", "start-relay -s mysql-01", NULL}},
    {"relay A, stop-relay B",
     DMH_WORKER_RELAY,
     "mysql-01",
     {DMH_WORKER_EV_STOP_RELAY, "mysql-02", false},
     DM_ERR_NOT_FOUND,
     {"\"mysql-02\" is not bound", "\"mysql-01\"", NULL}},
    {"relay A, stop A (relay -> free would skip bound)",
     DMH_WORKER_RELAY,
     "mysql-01",
     {DMH_WORKER_EV_UNBIND, "mysql-01", false},
     DM_ERR_STAGE,
     {"relay of source \"mysql-01\" still runs", "stop-relay -s mysql-01", NULL}},
    {"bound A, stop B",
     DMH_WORKER_BOUND,
     "mysql-01",
     {DMH_WORKER_EV_UNBIND, "mysql-02", false},
     DM_ERR_NOT_FOUND,
     {"\"mysql-02\" is not bound", NULL, NULL}},
    {"free, stop A",
     DMH_WORKER_FREE,
     NULL,
     {DMH_WORKER_EV_UNBIND, "mysql-01", false},
     DM_ERR_NOT_FOUND,
     {"\"mysql-01\" is not bound", NULL, NULL}},
    {"free, restore",
     DMH_WORKER_FREE,
     NULL,
     {DMH_WORKER_EV_RESTORE, "mysql-01", true},
     DM_ERR_STAGE,
     {"only valid at start", "free", NULL}},
    {"relay A, restore B (a second restore never rebinds)",
     DMH_WORKER_RELAY,
     "mysql-01",
     {DMH_WORKER_EV_RESTORE, "mysql-02", false},
     DM_ERR_STAGE,
     {"relay to mysql-01", NULL, NULL}},
    {"offline, restore a relay without a source",
     DMH_WORKER_OFFLINE,
     NULL,
     {DMH_WORKER_EV_RESTORE, "", true},
     DM_ERR_STATE,
     {"no bound source", NULL, NULL}},
};

static void test_refusals(void) {
  for (size_t i = 0; i < sizeof test_refusal_rows / sizeof test_refusal_rows[0]; i++) {
    const test_refusal_row *r = &test_refusal_rows[i];
    dmh_worker cur = test_at(r->from, r->from_source);
    dmh_worker next = cur;
    dm_error err;
    memset(&err, 0, sizeof err);
    CU_ASSERT_EQUAL(dmh_worker_apply(&cur, &r->ev, &next, &err), -1);
    if (err.code != r->code)
      fprintf(stderr, "\n  %s: got %d: %s\n", r->name, err.code, err.message);
    CU_ASSERT_EQUAL(err.code, r->code);
    CU_ASSERT(err.workaround[0] != '\0');
    for (int k = 0; k < 3 && r->needles[k]; k++)
      CU_ASSERT(test_contains(err.message, r->needles[k]));
    /* A refusal leaves the worker as it was. */
    CU_ASSERT_EQUAL(next.stage, cur.stage);
    CU_ASSERT_STRING_EQUAL(next.source, cur.source);
  }
}

/* The DM bug, as a sequence: bind A, start its relay, restart (shutdown + restore from what was
 * persisted), then another source is offered. */
static void test_restart_keeps_relay_binding(void) {
  dmh_worker w;
  dm_error err;
  dmh_worker_init(&w);
  dmh_worker_event restore_empty = {DMH_WORKER_EV_RESTORE, NULL, false};
  dmh_worker_event bind_a = {DMH_WORKER_EV_BIND, "mysql-01", false};
  dmh_worker_event relay_a = {DMH_WORKER_EV_START_RELAY, "mysql-01", false};
  dmh_worker_event shutdown = {DMH_WORKER_EV_SHUTDOWN, NULL, false};
  CU_ASSERT_EQUAL_FATAL(dmh_worker_apply(&w, &restore_empty, &w, &err), 0);
  CU_ASSERT_EQUAL_FATAL(dmh_worker_apply(&w, &bind_a, &w, &err), 0);
  CU_ASSERT_EQUAL_FATAL(dmh_worker_apply(&w, &relay_a, &w, &err), 0);
  dmh_worker persisted = w; /* what state.json holds */
  CU_ASSERT_EQUAL(dmh_worker_apply(&w, &shutdown, &w, &err), 0);
  CU_ASSERT_EQUAL(w.stage, DMH_WORKER_OFFLINE);

  dmh_worker_event restore = {DMH_WORKER_EV_RESTORE, persisted.source,
                              persisted.stage == DMH_WORKER_RELAY};
  dmh_worker seen[2];
  CU_ASSERT_EQUAL(dmh_worker_apply(&w, &restore, &seen[0], &err), 0);
  /* Never through free: the one step from offline lands on relay(A). */
  CU_ASSERT_EQUAL(seen[0].stage, DMH_WORKER_RELAY);
  CU_ASSERT_STRING_EQUAL(seen[0].source, "mysql-01");
  w = seen[0];

  dmh_worker_event bind_b = {DMH_WORKER_EV_BIND, "mysql-02", false};
  memset(&err, 0, sizeof err);
  CU_ASSERT_EQUAL(dmh_worker_apply(&w, &bind_b, &seen[1], &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_EXISTS);
  CU_ASSERT(test_contains(err.message, "bound to source \"mysql-01\" with its relay running"));
  CU_ASSERT(test_contains(err.message, "before binding \"mysql-02\""));
  CU_ASSERT_EQUAL(w.stage, DMH_WORKER_RELAY);
  CU_ASSERT(dmh_worker_bound_to(&w, "mysql-01"));
  CU_ASSERT(!dmh_worker_bound_to(&w, "mysql-02"));
}

static void test_stage_names(void) {
  static const char *const names[] = {"offline", "free", "bound", "relay"};
  for (int i = 0; i < 4; i++) {
    dmh_worker_stage s;
    CU_ASSERT_STRING_EQUAL(dmh_worker_stage_name((dmh_worker_stage)i), names[i]);
    CU_ASSERT_EQUAL(dmh_worker_stage_parse(names[i], &s), 0);
    CU_ASSERT_EQUAL(s, (dmh_worker_stage)i);
  }
  dmh_worker_stage s = DMH_WORKER_BOUND;
  CU_ASSERT_EQUAL(dmh_worker_stage_parse("Free", &s), -1);
  CU_ASSERT_EQUAL(dmh_worker_stage_parse(NULL, &s), -1);
  CU_ASSERT_EQUAL(s, DMH_WORKER_BOUND);
}

static void test_long_source_refused(void) {
  char longname[DMH_WORKER_SOURCE_MAX + 8];
  memset(longname, 'a', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  dmh_worker w = test_at(DMH_WORKER_FREE, NULL);
  dmh_worker_event ev = {DMH_WORKER_EV_BIND, longname, false};
  dm_error err;
  CU_ASSERT_EQUAL(dmh_worker_apply(&w, &ev, &w, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_CONTROL_REQUEST);
  CU_ASSERT(test_contains(err.message, "is longer than 127 characters"));
  CU_ASSERT_EQUAL(w.stage, DMH_WORKER_FREE);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"allowed transitions", test_allowed_transitions},
      {"refusals", test_refusals},
      {"restart keeps the relay binding (DM bug)", test_restart_keeps_relay_binding},
      {"stage names", test_stage_names},
      {"long source-id refused", test_long_source_refused},
  };
  return dmh_cunit_run("worker", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
