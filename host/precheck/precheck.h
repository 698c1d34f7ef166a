/*
 * The precheck: what a task needs of its source and target, checked before it starts (DM's
 * checker). One table of items (precheck.c), each with DM's name where DM has one, applied only
 * when the task's mode needs it (dump items for modes with a dump, replication items for modes
 * with a sync or a relay, target items for modes that write the target); ignore-checking-items in
 * the task file skips items by name ("all" skips every one). Every item and its fix:
 * docs/precheck.md.
 *
 * Run by `dmhost check` (a table), `dmctl check-task` (DM's JSON), start-task and `dmhost run`
 * (which refuse a task with a failed item: DM_ERR_PRECHECK_FAILED listing them; warnings pass).
 * Connections go through dm_db_connect with the config's endpoints (TLS and secrets as the units
 * get them).
 */
#ifndef DMH_PRECHECK_H
#define DMH_PRECHECK_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>

#include "config.h"
#include "dmhost/error.h"

typedef enum dmh_check_state {
  DMH_CHECK_PASS = 0,
  DMH_CHECK_WARN = 1,
  DMH_CHECK_FAIL = 2,
} dmh_check_state;

/* One finding of an item (DM's checker Error: severity, short_error). */
typedef struct dmh_check_error {
  dmh_check_state severity; /* WARN or FAIL */
  char *msg;
} dmh_check_error;

/* One item's result for one source (DM's checker Result). */
typedef struct dmh_check_result {
  const char *name; /* the item ("binlog_format") */
  const char *desc; /* what it checks */
  char *source_id;  /* DM's "extra": the source the result is about */
  dmh_check_state state;
  dmh_check_error *errors;
  int n_errors;
  const char *instruction; /* how to fix it; shown when the state is not PASS */
} dmh_check_result;

/* The results of one or more runs (one per source of the task). */
typedef struct dmh_precheck {
  dmh_check_result *results;
  int n, cap;
  int n_pass, n_warn, n_fail;
} dmh_precheck;

/*
 * Check what task t needs of source s (s must be one of t's mysql-instances) and of t's target,
 * appending one result per item that applies and is not ignored. Returns 0, or -1 only when out
 * of memory (*err); a server that cannot be reached is a failed result, not an error.
 */
int dmh_precheck_run(dmh_precheck *pc, const dmh_task_config *t, const dmh_source_config *s,
                     dm_error *err);
void dmh_precheck_free(dmh_precheck *pc);

/* DM's check-task result: {"summary": {"passed", "total", "successful", "failed", "warning"},
 * "results": [{"id", "name", "desc", "state", "errors": [{"severity", "short_error"}],
 * "instruction", "extra"}]} with state "pass", "warn" or "fail". */
json_object *dmh_precheck_json(const dmh_precheck *pc);
/* A readable table of the results and a summary line. */
void dmh_precheck_print(const dmh_precheck *pc, FILE *out);
/* 0 when no item failed; else -1 with DM_ERR_PRECHECK_FAILED whose message starts with `what`
 * ("start-task T") and names every failed item and its first finding. */
int dmh_precheck_refusal(const dmh_precheck *pc, const char *what, dm_error *err);

/* The answer of start-task and check-task (the registry's and the master's): "checkResult"
 * (dmh_precheck_json) added to resp when an item failed or warned, or always when `what` starts
 * with "check-task"; then dmh_precheck_refusal. */
int dmh_precheck_answer(const dmh_precheck *pc, const char *what, json_object *resp, dm_error *err);
/* Run the precheck of task t on source s and refuse as dmh_precheck_refusal does; warnings are
 * logged. What start-task and `dmhost run` call. */
int dmh_precheck_gate(const dmh_task_config *t, const dmh_source_config *s, const char *what,
                      dm_error *err);

/* The version check alone: state of a server's @@version string ("10.11.6-MariaDB-log",
 * "8.0.36"), with the reason in why. */
dmh_check_state dmh_precheck_version(const char *version, char *why, size_t len);

/* `dmhost check --source S.cfg --task T.cfg`: prints the table; exit 0 when nothing failed, 1 on a
 * failure, 2 on a usage or config error. */
int dmh_check_main(int argc, char **argv);

#endif /* DMH_PRECHECK_H */
