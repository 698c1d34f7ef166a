/*
 * A harness for supervisor tests: writes a source file and a task file (unit-paths pointing at the
 * fake units, short supervisor timeouts) into a fresh temp folder, loads them, and reads what the
 * fake units leave behind (out.log, events.log, their status).
 */
#ifndef DMH_TEST_HARNESS_H
#define DMH_TEST_HARNESS_H

#include <json-c/json.h>
#include <stdbool.h>

#include "config.h"
#include "supervisor.h"

typedef struct harness {
  char dir[256];
  char work[300];
  dmh_source_config *source;
  dmh_task_config *task;
  dmh_source_config *relay_source; /* with enable-relay, for relay tests */
} harness;

/* The load build harness_setup writes into unit-paths (FAKE_LOAD unless a test changes it). */
extern const char *harness_load_build;

/* mode: "all", "full", ..., or a chain `["load", "fake-sink"]` (units; the custom kinds fake-sink
 * and fake-giver get their builds); sup: the body of `supervisor = { ... }` (may be NULL for fast
 * defaults); units: extra task file text (unit sections, e.g. "dump = { items = 10; };").
 * Returns 0, or -1 with the config error printed. */
int harness_setup(harness *h, const char *mode, const char *sup, const char *units);
/* Another task file of the same task in the harness's folder (named `name`, written as
 * harness_setup writes task.cfg), loaded; NULL with the error printed. The caller frees it. */
dmh_task_config *harness_task_file(harness *h, const char *name, const char *mode, const char *sup,
                                   const char *units);
void harness_teardown(harness *h);
dmh_subtask *harness_subtask(harness *h, dmh_subtask *relay);
/* A relay subtask of the harness's source, with the fake relay's section text. */
dmh_subtask *harness_relay(harness *h, const char *relay_section);

/* out.log of a unit kind ("dump", ...): 0 if it holds exactly 1..n, else -1; *n set. */
int harness_out_sequence(harness *h, const char *kind, long *n);
/* How often `what` appears at the start of a line of the unit's events.log. */
int harness_events(harness *h, const char *kind, const char *what);
/* The same for the relay of harness_relay. */
int harness_relay_events(harness *h, const char *what);
/* The 0-based line of events.log where `what` first starts a line, -1 if never. */
int harness_first_line(harness *h, const char *kind, const char *what);
/* An integer from the current unit's status ("next", "inCall", ...); -1 if absent. */
long harness_status_int(dmh_subtask *st, const char *key);
/* A string field of the subtask's status (stage, unit, ...), copied into buf. */
const char *harness_status_str(dmh_subtask *st, const char *key, char *buf, size_t len);
/* The code of the first result error, 0 if none. */
int harness_first_error(dmh_subtask *st, char *msg, size_t len);
double harness_now(void);
void harness_sleep_ms(int ms);
/* Wait until the stage is `want` (up to ms); true if reached. */
bool harness_wait_stage(dmh_subtask *st, dmh_stage want, int ms);

#endif
