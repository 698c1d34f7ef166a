/*
 * The checks of dmhost-unit-check and what they share: the report line, an instance (a context of
 * the fake host plus what init returned) and a run (process or resume on a thread of its own, as
 * the supervisor's runner calls them).
 */
#ifndef DMH_UC_CHECK_H
#define DMH_UC_CHECK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "dmhost/unit.h"
#include "fake_host.h"

/* How long a unit has to return after the stop token fired or kill was called. */
#define UC_RETURN_MS 1000

typedef struct uc_state {
  uc_host *host;
  const dm_unit_descriptor *d;
  int passed, failed, skipped;
  /* A process that returned neither after the token nor after kill: its thread was left running,
   * so no further instance is safe to start. */
  bool broken;
} uc_state;

typedef enum uc_verdict { UC_FAIL = 0, UC_PASS = 1, UC_SKIP = 2 } uc_verdict;

/* Prints "pass|fail|skip NAME: why" on stdout and counts it. */
void uc_report(uc_state *s, const char *name, uc_verdict v, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Reports skip when an earlier check broke the process; true then. */
bool uc_skip_if_broken(uc_state *s, const char *name);

typedef struct uc_inst {
  dm_ctx *ctx;
  void *self;
  bool abandoned; /* its process never returned: never close it */
} uc_inst;

/* A context with work dir `work` and init; 0, or -1 with the reason in why. */
int uc_inst_open(uc_state *s, const char *work, uc_inst *in, char *why, size_t len);
/* is_fresh_task; 0 with *fresh, or -1 with the reason. */
int uc_inst_fresh(uc_state *s, uc_inst *in, bool *fresh, char *why, size_t len);
void uc_inst_close(uc_state *s, uc_inst *in);
/* What every running check starts with: skipped when broken, then open in work dir `name` and
 * is_fresh_task (*fresh may be NULL), as the host does before a run. false when the check already
 * reported (skip or fail). */
bool uc_inst_begin(uc_state *s, const char *name, uc_inst *in, bool *fresh);

typedef struct uc_run {
  const dm_unit_descriptor *d;
  void *self;
  bool resume;
  pthread_t thread;
  atomic_bool done;
  double start_ms, end_ms;
  dm_result result;
  bool abandoned;
} uc_run;

/* process (or resume, when `resume` and the unit has the slot) on a new thread; NULL when no
 * thread could be started. Freed by uc_run_free, unless abandoned (its thread may still write). */
uc_run *uc_run_start(uc_state *s, uc_inst *in, bool resume);
void uc_run_free(uc_run *r);
/* The token reset, then process on a new thread; NULL after reporting the check failed (and
 * closing the instance). */
uc_run *uc_run_begin(uc_state *s, const char *name, uc_inst *in);
/* Until it returned or the moment `until_ms` (uc_now_ms) passed; true if it returned (joined). */
bool uc_run_wait(uc_run *r, double until_ms);
/* Stops a run the way the supervisor does (token, then kill after UC_RETURN_MS, then abandon).
 * true if it returned; false: abandoned, s->broken set. */
bool uc_run_stop(uc_state *s, uc_inst *in, uc_run *r);
const char *uc_outcome_name(uint32_t outcome);
/* "canceled" or "error: <message>" */
const char *uc_run_said(const uc_run *r, char *buf, size_t len);

void uc_check_init_close(uc_state *s);
void uc_check_init_fail(uc_state *s);
void uc_check_fresh(uc_state *s);
void uc_check_stop(uc_state *s);
void uc_check_pause_resume(uc_state *s);
void uc_check_sequential(uc_state *s);
void uc_check_status(uc_state *s);
void uc_check_kill(uc_state *s);
void uc_check_update(uc_state *s);

#endif
