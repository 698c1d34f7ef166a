/*
 * Issue 13, "the source file's server-id reaches the relay through a service instead of being
 * computed twice": the relay presents the source file's top-level `server-id` as its replica
 * server_id unless its own section sets one (host service source_server_id, services version 8).
 * Before, the unit could not see that setting and derived the host's default for the source-id
 * itself, so a source file's server-id never reached the relay's stream. Against the real source
 * (CTest fixture mariadb): the relay's log names the server_id its stream presents.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "cunit_run.h"
#include "load_test_util.h"

typedef struct rs_run {
  lt_env *e;
  bool started;
} rs_run;

/* The relay subtask started, left to write into its folder for a moment, stopped. */
static void rs_relay(void *arg) {
  rs_run *r = arg;
  dmh_subtask *relay = lt_relay(r->e);
  dm_error err;
  r->started = relay && dmh_subtask_start(relay, &err) == 0;
  for (int i = 0; r->started && i < 50 && dmh_subtask_stage(relay) == DMH_STAGE_RUNNING; i++)
    lt_sleep_ms(100);
  if (relay) {
    dmh_subtask_stop(relay, &err);
    dmh_subtask_destroy(relay);
  }
}

/* The relay of a source file with `top` among its top-level settings; its log. */
static char *rs_log(const char *top) {
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  char extra[1024];
  snprintf(extra, sizeof extra,
           "%s\nenable-relay = true;\nrelay-dir = \"%s/relay\";\nunit-paths = { relay = \"%s\"; "
           "};\nrelay = { status-interval = 100; fsync = \"never\"; };\n",
           top, e.dir, RELAY_SO);
  lt_task t = {.name = "rsid", .source_extra = extra};
  CU_ASSERT_FATAL(lt_config(&e, &t) == 0);
  rs_run r = {.e = &e};
  char *log = lt_capture_stderr(rs_relay, &r);
  CU_ASSERT(r.started);
  lt_teardown(&e);
  return log;
}

static void test_source_server_id(void) {
  /* of this process's own: two replicas with one id throw each other out (error 4052) */
  long sid = 1000000L + (long)getpid();
  char top[64], want[96];
  snprintf(top, sizeof top, "server-id = %ld;", sid);
  char *log = rs_log(top);
  snprintf(want, sizeof want, "as replica server-id %ld", sid);
  CU_ASSERT(log && lt_has(log, "relay: writing into") && lt_has(log, want));
  free(log);
}

static void test_default_server_id(void) {
  /* no server-id anywhere: the host's default for the source-id, the one its config gives */
  char *log = rs_log("");
  char want[96];
  snprintf(want, sizeof want, "as replica server-id %u", dmh_source_default_server_id("lsrc"));
  CU_ASSERT(log && lt_has(log, want));
  free(log);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"the source file's server-id is the relay's", test_source_server_id},
      {"without one, the host's default for the source-id", test_default_server_id},
  };
  return dmh_cunit_run("relay_server_id", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
