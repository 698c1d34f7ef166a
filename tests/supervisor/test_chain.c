/*
 * A task's chain named with `units = [...]`: custom kinds in any position, the hand-over between
 * units (end_position of ABI 1.1, the status of an ABI 1.0 unit), the refusal of a chain that
 * cannot hand over, a custom kind's status and hot-swap. Fake units (tests/fixtures/fake_unit.c)
 * log the position they were handed ("handoff FILE:POS GTID") and each end_position call.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

#include "config_update.h"
#include "cunit_run.h"
#include "harness.h"
#include "unit_ctx.h"
#include "unit_spec.h"

#define SETUP(h, mode, sup, units) CU_ASSERT_FATAL(harness_setup(h, mode, sup, units) == 0)

/* A load hands its end position over to a custom sink after the relay caught up with it. */
static void test_custom_sink_after_load(void) {
  harness h;
  SETUP(&h, "[\"dump\", \"load\", \"fake-sink\"]", NULL,
        "dump = { items = 2; }; load = { items = 2; meta-pos = 2000; meta-gtid = \"0-1-7\"; }; "
        "fake-sink = { items = 3; };");
  CU_ASSERT_EQUAL(h.task->mode, DMH_MODE_CUSTOM);
  dmh_subtask *relay = harness_relay(&h, "items = 0; item-ms = 5; master-pos = 5000;");
  CU_ASSERT_FATAL(relay != NULL);
  dmh_subtask *st = harness_subtask(&h, relay);
  CU_ASSERT_FATAL(st != NULL);
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_start(st, &err), 0);
  /* the sink reads the relay (DM_UNIT_READS_RELAY): it waits for the relay as a sync would */
  double end = harness_now() + 5;
  char buf[64];
  while (harness_now() < end &&
         strcmp(harness_status_str(st, "waitingRelayCatchUp", buf, sizeof buf), "true") != 0)
    harness_sleep_ms(10);
  CU_ASSERT_STRING_EQUAL(buf, "true");
  CU_ASSERT_EQUAL(harness_events(&h, "fake-sink", "handoff"), 0);
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_start(relay, &err), 0);
  CU_ASSERT_EQUAL(dmh_subtask_wait_settled(st, 5000), DMH_STAGE_FINISHED);
  long n;
  CU_ASSERT_EQUAL(harness_out_sequence(&h, "fake-sink", &n), 0);
  CU_ASSERT_EQUAL(n, 3);
  /* the position came from the load's end_position slot (ABI 1.1), asked once */
  CU_ASSERT_EQUAL(harness_events(&h, "load", "end_position"), 1);
  CU_ASSERT_EQUAL(harness_events(&h, "fake-sink", "handoff mysql-bin.000001:2000 0-1-7"), 1);
  /* its status under its kind's name */
  json_object *o = dmh_subtask_status_json(st);
  json_object *ss = NULL;
  CU_ASSERT_TRUE(json_object_object_get_ex(o, "fake-sinkStatus", &ss));
  CU_ASSERT_PTR_NOT_NULL(ss);
  json_object_put(o);
  dmh_subtask_destroy(st);
  dmh_subtask_destroy(relay);
  harness_teardown(&h);
}

/* A custom kind first, giving a position to a sync: any kind in any position. */
static void test_custom_giver_before_sync(void) {
  harness h;
  SETUP(&h, "[\"fake-giver\", \"sync\"]", NULL,
        "fake-giver = { items = 2; meta-file = \"mysql-bin.000004\"; meta-pos = 120; }; "
        "sync = { items = 2; };");
  dmh_subtask *st = harness_subtask(&h, NULL);
  CU_ASSERT_FATAL(st != NULL);
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_start(st, &err), 0);
  CU_ASSERT_EQUAL(dmh_subtask_wait_settled(st, 5000), DMH_STAGE_FINISHED);
  CU_ASSERT_EQUAL(harness_events(&h, "fake-giver", "end_position"), 1);
  CU_ASSERT_EQUAL(harness_events(&h, "sync", "handoff mysql-bin.000004:120 -"), 1);
  dmh_subtask_destroy(st);
  harness_teardown(&h);
}

/* A unit that takes a position after one that gives none: refused when the subtask is created,
 * naming the file and the line of `units`. */
static void test_chain_that_cannot_hand_over(void) {
  harness h;
  SETUP(&h, "[\"fake-sink\", \"sync\"]", NULL, "");
  dmh_subtask_opts o = {.task = h.task, .source = h.source, .work_root = h.work};
  dm_error err;
  dmh_subtask *st = dmh_subtask_create(&o, &err);
  CU_ASSERT_PTR_NULL(st);
  CU_ASSERT_EQUAL(err.code, DM_ERR_CHAIN_HANDOVER);
  char where[600];
  snprintf(where, sizeof where, "%s:2:", h.task->path);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, where));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "the sync unit"));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "fake-sink"));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.workaround, "gives a position"));
  harness_teardown(&h);
  /* the same sink first is fine: it starts at the task's meta */
  SETUP(&h, "[\"fake-sink\"]", NULL, "fake-sink = { items = 1; };");
  st = harness_subtask(&h, NULL);
  CU_ASSERT_FATAL(st != NULL);
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_start(st, &err), 0);
  CU_ASSERT_EQUAL(dmh_subtask_wait_settled(st, 5000), DMH_STAGE_FINISHED);
  CU_ASSERT_EQUAL(harness_events(&h, "fake-sink", "handoff none"), 1);
  dmh_subtask_destroy(st);
  harness_teardown(&h);
}

/* ABI compatibility: a load built from the released ABI 1.0 headers (tests/abi/1.0) loads and
 * hands its position over through its status, as 1.0 units did. */
static void test_abi_1_0_load_hands_over(void) {
  harness h;
  harness_load_build = FAKE_LOAD_ABI10;
  SETUP(&h, "load&sync", NULL,
        "load = { items = 2; meta-pos = 777; meta-gtid = \"0-1-9\"; }; sync = { items = 2; };");
  harness_load_build = FAKE_LOAD;
  dmh_subtask *st = harness_subtask(&h, NULL);
  CU_ASSERT_FATAL(st != NULL);
  char buf[32];
  CU_ASSERT_STRING_EQUAL(harness_status_str(st, "unitVersion", buf, sizeof buf), "abi10");
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_start(st, &err), 0);
  CU_ASSERT_EQUAL(dmh_subtask_wait_settled(st, 5000), DMH_STAGE_FINISHED);
  CU_ASSERT_EQUAL(harness_events(&h, "load", "end_position"), 0); /* it has no such slot */
  CU_ASSERT_EQUAL(harness_events(&h, "sync", "handoff mysql-bin.000001:777 0-1-9"), 1);
  long n;
  CU_ASSERT_EQUAL(harness_out_sequence(&h, "sync", &n), 0);
  CU_ASSERT_EQUAL(n, 2);
  dmh_subtask_destroy(st);
  harness_teardown(&h);
}

/* swap-unit names a custom kind by its name; the items go on with none lost or doubled. */
static void test_swap_custom_kind(void) {
  harness h;
  SETUP(&h, "[\"fake-sink\"]", NULL, "fake-sink = { items = 300; item-ms = 2; };");
  dmh_subtask *st = harness_subtask(&h, NULL);
  CU_ASSERT_FATAL(st != NULL);
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_start(st, &err), 0);
  harness_sleep_ms(150);
  long before = harness_status_int(st, "next");
  CU_ASSERT(before > 1 && before < 300);
  CU_ASSERT_EQUAL(dmh_subtask_swap_unit(st, "sync", FAKE_SYNC, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_NO_SUCH_UNIT);
  /* a build of another kind is refused, the old one keeps running */
  CU_ASSERT_EQUAL(dmh_subtask_swap_unit(st, "fake-sink", FAKE_GIVER, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_SWAP);
  CU_ASSERT_EQUAL(dmh_subtask_swap_unit(st, "fake-sink", FAKE_SINK_V2, &err), 0);
  char buf[32];
  CU_ASSERT_STRING_EQUAL(harness_status_str(st, "unitVersion", buf, sizeof buf), "2");
  CU_ASSERT_EQUAL(dmh_subtask_wait_settled(st, 10000), DMH_STAGE_FINISHED);
  long n;
  CU_ASSERT_EQUAL(harness_out_sequence(&h, "fake-sink", &n), 0);
  CU_ASSERT_EQUAL(n, 300);
  CU_ASSERT_EQUAL(harness_events(&h, "fake-sink", "init v2"), 1);
  dmh_subtask_destroy(st);
  harness_teardown(&h);
}

/* update-task reaches a custom kind by its name: its section may change (a unit's section is no
 * part of the task's identity) and its update slot is called; a build without the slot refuses a
 * changed section, and the chain itself (`units`) is identity. */
static void test_update_custom_kind(void) {
  harness h;
  SETUP(&h, "[\"fake-sink\"]", NULL, "fake-sink = { items = 0; item-ms = 5; };");
  dmh_subtask_opts o = {.task = h.task, .source = h.source, .work_root = h.work};
  o.unit_paths[DMH_KIND_COUNT] = FAKE_SINK_UPD; /* the task's first custom kind */
  dm_error err;
  dmh_subtask *st = dmh_subtask_create(&o, &err);
  CU_ASSERT_FATAL(st != NULL);
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_start(st, &err), 0);
  harness_sleep_ms(50);
  CU_ASSERT_EQUAL_FATAL(dmh_subtask_pause(st, &err), 0);
  dmh_task_config *next = harness_task_file(&h, "next.cfg", "[\"fake-sink\"]", NULL,
                                            "fake-sink = { items = 0; item-ms = 7; };");
  CU_ASSERT_FATAL(next != NULL);
  CU_ASSERT_EQUAL(dmh_task_config_same_identity(h.task, next, &err), 0);
  CU_ASSERT_EQUAL(dmh_subtask_update_check(st, next, false, &err), 0);
  CU_ASSERT_EQUAL(dmh_subtask_update_apply(st, next, &err), 0);
  CU_ASSERT_EQUAL(harness_events(&h, "fake-sink", "update item-ms=7"), 1);
  /* another chain is another task */
  dmh_task_config *other = harness_task_file(&h, "other.cfg", "[\"load\", \"fake-sink\"]", NULL,
                                             "fake-sink = { items = 0; item-ms = 7; };");
  CU_ASSERT_FATAL(other != NULL);
  CU_ASSERT_EQUAL(dmh_task_config_same_identity(h.task, other, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_UPDATE_IDENTITY);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "`units`"));
  dmh_subtask_destroy(st);
  dmh_task_config_free(next);
  dmh_task_config_free(other);
  harness_teardown(&h);
}

/* The context spec says what each unit's context holds, the relay being a one-unit chain, and
 * one call builds a unit's context from it: what sup_create set by hand, field by field, with a
 * relay-or-not choice for most of them. */
static void test_context_spec(void) {
  harness h;
  SETUP(&h, "[\"dump\", \"load\", \"fake-sink\"]", NULL, "load = { items = 1; };");
  dmh_chain_spec cs;
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_chain_spec_task(&cs, h.task, h.source, &err), 0);
  CU_ASSERT_STRING_EQUAL(cs.name, "t1");
  CU_ASSERT_STRING_EQUAL(cs.task_name, "t1");
  CU_ASSERT_STRING_EQUAL(cs.source_id, "src1");
  CU_ASSERT_STRING_EQUAL(cs.task_mode, "custom");
  CU_ASSERT_STRING_EQUAL(cs.meta_schema, h.task->meta_schema);
  CU_ASSERT_PTR_NULL(cs.relay_dir); /* the harness's source has no relay */
  CU_ASSERT_PTR_EQUAL(cs.source_db, &h.source->from.ep);
  CU_ASSERT_PTR_EQUAL(cs.target_db, &h.task->target.ep);
  CU_ASSERT_EQUAL(cs.file_mode, h.task->file_mode);
  CU_ASSERT_EQUAL(cs.server_id, h.source->server_id);
  CU_ASSERT_PTR_NOT_NULL(cs.instance);
  CU_ASSERT_TRUE(cs.binlog_ops);
  CU_ASSERT_STRING_EQUAL(cs.cfg_file, h.task->path);
  CU_ASSERT_EQUAL_FATAL(cs.n_units, 3);
  CU_ASSERT_EQUAL(cs.units[2].kind, DM_UNIT_CUSTOM);
  CU_ASSERT_STRING_EQUAL(cs.units[2].name, "fake-sink");
  CU_ASSERT_STRING_EQUAL(cs.units[2].path, FAKE_SINK);
  CU_ASSERT_PTR_NULL(cs.units[0].section);
  CU_ASSERT_PTR_EQUAL(cs.units[1].section, dmh_task_section_named(h.task, "load"));

  /* one call: a load followed by a sink that takes a position sees a sync after it */
  cs.units[2].handover = DM_UNIT_TAKES_POSITION;
  dmh_stop_token token;
  CU_ASSERT_EQUAL_FATAL(dmh_stop_token_init(&token), 0);
  dmh_ctx_run run = {.work_root = h.work, .worker_name = "w1", .fencing_token = 7, .token = &token};
  dm_ctx *c = dmh_ctx_new_from_spec(&cs, 1, &run, &err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  char wd[600];
  snprintf(wd, sizeof wd, "%s/load", h.work);
  CU_ASSERT_STRING_EQUAL(c->work_dir, wd);
  CU_ASSERT_STRING_EQUAL(c->scope, "task=t1 source=src1 unit=load");
  CU_ASSERT_EQUAL(c->n_later, 2);
  CU_ASSERT_EQUAL(c->later[0], DM_UNIT_CUSTOM);
  CU_ASSERT_EQUAL(c->later[1], DM_UNIT_SYNC);
  CU_ASSERT_PTR_NOT_NULL(c->binlog_ops_path);
  CU_ASSERT_EQUAL(c->fencing_token, 7);
  CU_ASSERT_STRING_EQUAL(c->worker_name, "w1");
  CU_ASSERT_PTR_EQUAL(c->section, cs.units[1].section);
  dmh_ctx_free(c);

  /* a source nothing of the task reads */
  dmh_source_config other = *h.source;
  other.source_id = "src9";
  CU_ASSERT_EQUAL(dmh_chain_spec_task(&cs, h.task, &other, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_CONFIG_INVALID);

  /* the relay: one unit, no task side, its relay dir whatever enable-relay says */
  dmh_subtask *relay = harness_relay(&h, "items = 1;");
  CU_ASSERT_PTR_NOT_NULL_FATAL(relay);
  dmh_chain_spec_relay(&cs, h.relay_source);
  CU_ASSERT_STRING_EQUAL(cs.name, "relay");
  CU_ASSERT_STRING_EQUAL(cs.task_name, "");
  CU_ASSERT_STRING_EQUAL(cs.task_mode, "relay");
  CU_ASSERT_STRING_EQUAL(cs.meta_schema, "");
  CU_ASSERT_PTR_EQUAL(cs.relay_dir, h.relay_source->relay_dir);
  CU_ASSERT_PTR_NULL(cs.target_db);
  CU_ASSERT_PTR_NULL(cs.instance);
  CU_ASSERT_FALSE(cs.binlog_ops);
  CU_ASSERT_EQUAL(cs.file_mode, h.relay_source->file_mode);
  CU_ASSERT_STRING_EQUAL(cs.cfg_file, h.relay_source->path);
  CU_ASSERT_EQUAL_FATAL(cs.n_units, 1);
  CU_ASSERT_EQUAL(cs.units[0].kind, DM_UNIT_RELAY);
  CU_ASSERT_STRING_EQUAL(cs.units[0].name, "relay");
  CU_ASSERT_STRING_EQUAL(cs.units[0].path, FAKE_RELAY);
  CU_ASSERT_PTR_NOT_NULL(cs.units[0].section);
  dmh_source_config norelay = *h.relay_source;
  norelay.enable_relay = false;
  dmh_chain_spec_relay(&cs, &norelay);
  CU_ASSERT_PTR_EQUAL(cs.relay_dir, h.relay_source->relay_dir);
  dmh_subtask_destroy(relay);
  dmh_stop_token_destroy(&token);
  harness_teardown(&h);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"custom sink after load, relay waited", test_custom_sink_after_load},
      {"custom giver before sync", test_custom_giver_before_sync},
      {"chain that cannot hand over", test_chain_that_cannot_hand_over},
      {"ABI 1.0 load hands over", test_abi_1_0_load_hands_over},
      {"swap a custom kind", test_swap_custom_kind},
      {"update a custom kind", test_update_custom_kind},
      {"context spec of a task and of a relay", test_context_spec},
  };
  return dmh_cunit_run("chain", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
