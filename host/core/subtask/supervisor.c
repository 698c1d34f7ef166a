/*
 * The subtask stage machine (see supervisor.h for the rules and supervisor_internal.h for the
 * locks). The shape that makes the field's classic bug impossible: exactly one runner thread calls
 * process/resume, every command that needs the unit idle joins that thread before touching the
 * unit, and resume is accepted only once the stage is Paused, which is set only after the join.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dmhost/clock.h"
#include "dmhost/sdk.h"
#include "error_json.h"
#include "log.h"
#include "metrics_host.h"
#include "supervisor_internal.h"

static const char *const stage_names[] = {
    [DMH_STAGE_NEW] = "New",           [DMH_STAGE_RUNNING] = "Running",
    [DMH_STAGE_PAUSED] = "Paused",     [DMH_STAGE_STOPPED] = "Stopped",
    [DMH_STAGE_FINISHED] = "Finished", [DMH_STAGE_PAUSING] = "Pausing",
    [DMH_STAGE_RESUMING] = "Resuming", [DMH_STAGE_STOPPING] = "Stopping",
};

const char *dmh_stage_name(dmh_stage stage) {
  return (unsigned)stage < sizeof stage_names / sizeof stage_names[0] ? stage_names[stage] : "?";
}

int dmh_stage_parse(const char *name) {
  for (size_t i = 0; name && i < sizeof stage_names / sizeof stage_names[0]; i++)
    if (stage_names[i] && strcmp(stage_names[i], name) == 0)
      return (int)i;
  return -1;
}

const char *dmh_stage_dm_task_stage(dmh_stage stage) {
  switch (stage) {
  case DMH_STAGE_RUNNING:
  case DMH_STAGE_RESUMING:
    return "Running";
  case DMH_STAGE_PAUSED:
  case DMH_STAGE_PAUSING:
    return "Paused";
  case DMH_STAGE_FINISHED:
    return "Finished";
  default: /* New, Stopped, Stopping, and any DM has no name for: not running */
    return "Stopped";
  }
}

static void *sup_auto_resume_thread(void *arg);
static void sup_stop_units_locked(dmh_subtask *st, bool kill, dm_error *err, bool *had_err);

static void sup_stage_error(dmh_subtask *st, dm_error *err, const char *cmd, dmh_stage stage,
                            const char *accepted) {
  dm_error_set(err, DM_ERR_STAGE, NULL, "cannot %s task %s (source %s) in stage %s: %s", cmd,
               st->name, st->source ? st->source->source_id : "?", dmh_stage_name(stage), accepted);
}

/* ---- creation ---- */

/*
 * Subtasks with an abandoned runner thread are never freed: the thread may come back from the unit
 * at any time and touch the subtask and its unit's context. They are kept here, reachable, for the
 * life of the process (a process that abandons threads should be restarted; the error says so).
 */
static pthread_mutex_t sup_graveyard_lock = PTHREAD_MUTEX_INITIALIZER;
static dmh_subtask *sup_graveyard[64];
static int sup_graveyard_n;

static void sup_free(dmh_subtask *st) {
  if (st->metrics_owner) /* first: no scrape reads the subtask from here on */
    dmh_metrics_drop_owner(dmh_metrics_process(), st->metrics_owner);
  for (int i = 0; i < st->n_units; i++) {
    if (st->units[i].abandoned) {
      pthread_mutex_lock(&sup_graveyard_lock);
      if (sup_graveyard_n < (int)(sizeof sup_graveyard / sizeof sup_graveyard[0]))
        sup_graveyard[sup_graveyard_n++] = st;
      pthread_mutex_unlock(&sup_graveyard_lock);
      return;
    }
  }
  for (int i = 0; i < st->n_units; i++) {
    sup_unit *u = &st->units[i];
    if (u->lib)
      dmh_unit_lib_unref(u->lib);
    dmh_ctx_free(u->ctx);
    pthread_rwlock_destroy(&u->life);
  }
  dmh_rules_free(st->rules);
  dmh_stop_token_destroy(&st->token);
  pthread_mutex_destroy(&st->cmd_lock);
  pthread_mutex_destroy(&st->state_lock);
  pthread_cond_destroy(&st->state_cv);
  free(st);
}

/* Every unit that takes a position must follow one that gives one, or start the chain (it then
 * starts at the task's meta or its own checkpoint). Known only once the units are loaded: their
 * descriptors say (ABI 1.1 handover; dmh_unit_handover for 1.0). */
static int sup_check_handover(dmh_subtask *st, const dmh_chain_spec *cs, dm_error *err) {
  for (int i = 1; i < st->n_units; i++) {
    const sup_unit *u = &st->units[i], *prev = &st->units[i - 1];
    if ((u->handover & DM_UNIT_TAKES_POSITION) && !(prev->handover & DM_UNIT_GIVES_POSITION)) {
      dm_error_set(err, DM_ERR_CHAIN_HANDOVER, NULL,
                   "%s:%d: the %s unit (%s) starts where the unit before it ended, but the %s unit "
                   "before it (%s) gives no end position: put a unit that gives one (dump, load) "
                   "before %s, or make %s the first unit (it then starts at the task's meta)",
                   cs->cfg_file, cs->chain_line, u->section, dmh_unit_lib_path(u->lib),
                   prev->section, dmh_unit_lib_path(prev->lib), u->section, u->section);
      return -1;
    }
  }
  return 0;
}

/* At each scrape: dm_worker_task_state of the subtask (DM's stage numbers are ours + 1). */
static void sup_metrics_collect(void *ud) {
  dmh_subtask *st = ud;
  pthread_mutex_lock(&st->state_lock);
  dmh_stage stage = st->stage;
  pthread_mutex_unlock(&st->state_lock);
  dmh_metrics_task_stage(st->units[0].ctx, (int)stage + 1);
}

static dmh_subtask *sup_create(const dmh_subtask_opts *o, bool is_relay, dm_error *err) {
  if (!o->source || (!is_relay && !o->task) || !o->work_root) {
    dm_error_set(err, DM_ERR_INTERNAL, NULL,
                 "subtask options need a source, a task and a work root");
    return NULL;
  }
  /* what the config files say each unit's context holds (unit_spec.c) */
  dmh_chain_spec cs;
  if (is_relay)
    dmh_chain_spec_relay(&cs, o->source);
  else if (dmh_chain_spec_task(&cs, o->task, o->source, err) < 0)
    return NULL;
  dmh_subtask *st = calloc(1, sizeof *st);
  if (!st) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory creating a subtask");
    return NULL;
  }
  st->task = o->task;
  st->source = o->source;
  st->is_relay = is_relay;
  st->relay = is_relay ? NULL : o->relay;
  st->sup = o->sup ? *o->sup : (o->task ? o->task->sup : dmh_supervisor_defaults);
  st->backoff_ms = st->sup.auto_resume_initial_ms;
  dm_strlcpy(st->name, cs.name, sizeof st->name);
  dm_strlcpy(st->worker, o->worker_name ? o->worker_name : "", sizeof st->worker);
  st->unit_folders = o->unit_folders;
  pthread_mutex_init(&st->cmd_lock, NULL);
  pthread_mutex_init(&st->state_lock, NULL);
  dm_cond_init_monotonic(&st->state_cv);
  if (dmh_stop_token_init(&st->token) < 0) {
    dm_error_set(err, DM_ERR_INTERNAL, strerror(errno), "cannot create the stop token");
    st->token.fd = -1;
    sup_free(st);
    return NULL;
  }

  if (cs.instance && !(st->rules = dmh_rules_new(cs.instance, err))) {
    sup_free(st);
    return NULL;
  }
  for (int i = 0; i < cs.n_units; i++) {
    dmh_unit_spec *us = &cs.units[i];
    sup_unit *u = &st->units[i];
    pthread_rwlock_init(&u->life, NULL);
    st->n_units = i + 1;
    u->kind = us->kind;
    dm_strlcpy(u->section, us->name, sizeof u->section);
    const char *path = o->unit_paths[us->slot] ? o->unit_paths[us->slot] : us->path;
    char *def = NULL;
    if (!path) {
      /* config.c insists on a build for every custom kind: only built-in kinds get here */
      def =
          dmh_unit_default_path(o->plugin_dir ? o->plugin_dir : dmh_plugin_dir_default(), us->kind);
      path = def;
    }
    dmh_load_opts lo = {.kind = us->kind,
                        .kind_name = us->kind == DM_UNIT_CUSTOM ? us->name : NULL,
                        .unique_copy = o->trusted_only,
                        .trusted_only = o->trusted_only,
                        .folders = o->unit_folders};
    int rc = path ? dmh_unit_lib_open(path, &lo, &u->lib, err) : -1;
    free(def);
    if (rc < 0) {
      if (!path)
        dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory");
      sup_free(st);
      return NULL;
    }
    u->desc = dmh_unit_lib_descriptor(u->lib);
    us->handover = u->handover = dmh_unit_handover(u->desc);
  }
  if (sup_check_handover(st, &cs, err) < 0) {
    sup_free(st);
    return NULL;
  }
  st->metrics_owner = dmh_metrics_owner_new();
  dmh_ctx_run run = {.work_root = o->work_root,
                     .worker_name = st->worker,
                     .fencing_token = o->fencing_token,
                     .token = &st->token,
                     .metrics_owner = st->metrics_owner,
                     .rules = st->rules,
                     .shard = o->shard};
  for (int i = 0; i < cs.n_units; i++) {
    if (!(st->units[i].ctx = dmh_ctx_new_from_spec(&cs, i, &run, err))) {
      sup_free(st);
      return NULL;
    }
  }
  if (!is_relay && dmh_metrics_collector_add(dmh_metrics_process(), st->metrics_owner,
                                             sup_metrics_collect, st) < 0) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory creating a subtask");
    sup_free(st);
    return NULL;
  }
  if (pthread_create(&st->auto_thread, NULL, sup_auto_resume_thread, st) != 0) {
    dm_error_set(err, DM_ERR_INTERNAL, strerror(errno), "cannot start the auto-resume thread");
    sup_free(st);
    return NULL;
  }
  st->auto_thread_started = true;
  return st;
}

void sup_op_failed(dmh_subtask *st, const char *task_op, const char *relay_op) {
  dmh_metrics_operate_error(st->worker, st->is_relay ? relay_op : task_op);
}

dmh_subtask *dmh_subtask_create(const dmh_subtask_opts *opts, dm_error *err) {
  dmh_subtask *st = sup_create(opts, false, err);
  if (!st) /* DM's count when a subtask cannot be set up, before any operation */
    dmh_metrics_operate_error(opts->worker_name, DMH_OP_ERR_BEFORE_ANY);
  return st;
}

dmh_subtask *dmh_subtask_create_relay(const dmh_subtask_opts *opts, dm_error *err) {
  dmh_subtask *st = sup_create(opts, true, err);
  if (!st)
    dmh_metrics_operate_error(opts->worker_name, DMH_OP_ERR_RELAY_SOURCE);
  return st;
}

/* ---- the runner ---- */

static void sup_record_errors_locked(dmh_subtask *st, sup_unit *u, const char *slot,
                                     const dm_error *errs, int n) {
  st->n_errors = n > SUP_MAX_ERRORS ? SUP_MAX_ERRORS : n;
  st->errors_resumable = sup_errors_resumable(errs, st->n_errors);
  for (int i = 0; i < st->n_errors; i++) {
    st->errors[i] = errs[i];
    sup_error_context(st, u, slot, st->error_ctx[i], sizeof st->error_ctx[i]);
  }
}

/* The unit returned errors: pause by error and schedule auto-resume if it may help. */
static void sup_on_error_locked(dmh_subtask *st) {
  st->paused_by_error = true;
  if (st->stage != DMH_STAGE_RUNNING)
    return; /* a pause or stop is in flight: its command settles the stage */
  st->stage = DMH_STAGE_PAUSED;
  if (st->sup.auto_resume && st->errors_resumable && !st->manual_pause) {
    double now = dmh_now_seconds();
    /* a run that stayed up longer than the longest back-off was healthy: start over at 1 s */
    if ((now - st->run_started) * 1000.0 >= st->sup.auto_resume_max_ms)
      st->backoff_ms = st->sup.auto_resume_initial_ms;
    st->auto_resume_at = now + st->backoff_ms / 1000.0;
    dmh_log(DM_LOG_INFO, st->name, "paused by a resumable error; auto-resume in %.1f s",
            st->backoff_ms / 1000.0);
    uint64_t next = (uint64_t)st->backoff_ms * 2;
    st->backoff_ms =
        next > st->sup.auto_resume_max_ms ? st->sup.auto_resume_max_ms : (uint32_t)next;
  }
  pthread_cond_broadcast(&st->state_cv);
}

/* Runner exit while a pause that timed out waits for it: finish that pause here. */
static void sup_runner_exit(dmh_subtask *st) {
  pthread_mutex_lock(&st->state_lock);
  bool finish_pause = st->stage == DMH_STAGE_PAUSING && st->pause_detached;
  if (finish_pause)
    st->pause_detached = false;
  pthread_mutex_unlock(&st->state_lock);
  if (!finish_pause)
    return;
  sup_unit_pause(st, &st->units[st->cur]);
  pthread_mutex_lock(&st->state_lock);
  if (st->stage == DMH_STAGE_PAUSING)
    st->stage = st->finished ? DMH_STAGE_FINISHED : DMH_STAGE_PAUSED;
  pthread_cond_broadcast(&st->state_cv);
  pthread_mutex_unlock(&st->state_lock);
}

/* With the relay on, hold the task's place in the relay log (relay_hold.c): before a dump runs,
 * from the relay's current file; when a unit finished with the dump's position (at), and before a
 * resumed load (the handoff of an earlier run), from that position's file. The sync registers its
 * own place. A failure pauses the subtask with the error (recorded against u): -1. */
static int sup_runner_hold(dmh_subtask *st, sup_unit *u, const dm_position *at) {
  pthread_mutex_lock(&st->state_lock);
  dm_position p = at ? *at : st->handoff;
  bool has = at || st->has_handoff;
  pthread_mutex_unlock(&st->state_lock);
  dm_error err;
  int rc = 0;
  if (at)
    rc = sup_relay_hold_at(st, at, &err);
  else if (u->kind == DM_UNIT_DUMP)
    rc = sup_relay_hold_begin(st, &err);
  else if (u->kind == DM_UNIT_LOAD && has) /* a resumed load: the handoff of an earlier run */
    rc = sup_relay_hold_at(st, &p, &err);
  if (rc < 0) {
    pthread_mutex_lock(&st->state_lock);
    sup_record_errors_locked(st, u, "relay-hold", &err, 1);
    sup_on_error_locked(st);
    pthread_mutex_unlock(&st->state_lock);
  }
  return rc;
}

static void *sup_runner(void *arg) {
  dmh_subtask *st = arg;
  for (;;) {
    pthread_mutex_lock(&st->state_lock);
    int i = st->cur;
    bool stop = dmh_stop_token_fired(&st->token);
    pthread_mutex_unlock(&st->state_lock);
    if (stop)
      break; /* canceled between units: the next one has not started */
    sup_unit *u = &st->units[i];
    if (sup_runner_hold(st, u, NULL) < 0)
      break;
    dm_result r;
    sup_unit_run(st, u, &r);

    if (r.outcome == DM_OUTCOME_FINISHED) {
      dm_position p, exit;
      bool has_exit = false;
      bool has = sup_unit_end_position(st, u, &p, &exit, &has_exit);
      pthread_mutex_lock(&st->state_lock);
      if (has) {
        st->handoff = p;
        st->has_handoff = true;
        st->safe_exit = exit;
        st->has_safe_exit = has_exit;
      }
      if (i + 1 >= st->n_units) {
        st->finished = true;
        if (st->stage == DMH_STAGE_RUNNING)
          st->stage = DMH_STAGE_FINISHED;
        pthread_cond_broadcast(&st->state_cv);
        pthread_mutex_unlock(&st->state_lock);
        break;
      }
      sup_unit *next = &st->units[i + 1];
      st->cur = i + 1;
      dmh_ctx_set_handoff(next->ctx, st->has_handoff ? &st->handoff : NULL,
                          st->has_safe_exit ? &st->safe_exit : NULL);
      /* a unit that reads the relay, after one that says where it ended: the relay must have
       * written that far first (DM's wait between load and sync) */
      bool wait = st->relay && (u->handover & DM_UNIT_GIVES_POSITION) &&
                  (next->handover & DM_UNIT_READS_RELAY);
      st->waiting_relay = wait;
      dm_position target = st->handoff;
      bool has_target = st->has_handoff;
      pthread_mutex_unlock(&st->state_lock);
      dmh_log(DM_LOG_INFO, st->name, "%s unit finished; next: %s", u->section, next->section);
      if (has && sup_runner_hold(st, next, &p) < 0)
        break;
      if (!wait)
        continue;
      dm_error werr;
      int w = sup_wait_relay_catchup(st, has_target ? &target : NULL, &werr);
      pthread_mutex_lock(&st->state_lock);
      st->waiting_relay = false;
      if (w < 0) {
        sup_record_errors_locked(st, next, "relay-catchup", &werr, 1);
        sup_on_error_locked(st);
      }
      pthread_mutex_unlock(&st->state_lock);
      if (w != 0)
        break;
      continue;
    }

    pthread_mutex_lock(&st->state_lock);
    if (r.outcome == DM_OUTCOME_CANCELED && dmh_stop_token_fired(&st->token)) {
      st->canceled = true;
    } else {
      if (r.outcome == DM_OUTCOME_CANCELED) {
        /* nobody asked it to stop: a unit that gives up silently must not leave Running with no
         * runner behind it */
        char label[200];
        r.n_errors = 1;
        dm_error_set(&r.errors[0], DM_ERR_INTERNAL, NULL,
                     "the %s returned canceled though the stop token had not fired",
                     sup_unit_label(u, label, sizeof label));
      }
      sup_record_errors_locked(st, u, u->started ? "process" : "resume", r.errors, (int)r.n_errors);
      sup_on_error_locked(st);
    }
    pthread_mutex_unlock(&st->state_lock);
    break;
  }
  sup_runner_exit(st);
  return NULL;
}

/* Start the runner at st->cur. cmd_lock held, no runner alive. */
static int sup_spawn_runner(dmh_subtask *st, dm_error *err) {
  dmh_stop_token_reset(&st->token);
  pthread_mutex_lock(&st->state_lock);
  st->stage = DMH_STAGE_RUNNING;
  st->run_started = dmh_now_seconds();
  st->canceled = false;
  int rc = pthread_create(&st->runner, NULL, sup_runner, st);
  if (rc != 0) {
    st->stage = DMH_STAGE_PAUSED;
    dm_error_set(err, DM_ERR_INTERNAL, strerror(rc), "cannot start the runner thread of task %s",
                 st->name);
    sup_record_errors_locked(st, &st->units[st->cur], "process", err, 1);
    st->paused_by_error = true;
  }
  pthread_cond_broadcast(&st->state_cv);
  pthread_mutex_unlock(&st->state_lock);
  st->runner_joinable = rc == 0;
  return rc == 0 ? 0 : -1;
}

static void sup_join_runner(dmh_subtask *st) {
  if (st->runner_joinable) {
    pthread_join(st->runner, NULL);
    st->runner_joinable = false;
  }
}

/* Wait up to ms for the runner; true when it has returned (and was joined). */
static bool sup_timed_join(dmh_subtask *st, uint32_t ms) {
  if (!st->runner_joinable)
    return true;
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline); /* pthread_timedjoin_np's clock */
  dm_timespec_add_ms(&deadline, ms);
  if (pthread_timedjoin_np(st->runner, NULL, &deadline) != 0)
    return false;
  st->runner_joinable = false;
  return true;
}

/* ---- start ---- */

/* Init every unit, find where to start, run. cmd_lock held, no runner, stage Resuming or New. */
static int sup_start_units(dmh_subtask *st, dm_error *err) {
  int inited = 0, failed = -1, start = 0;
  const char *slot = "init";
  for (; inited < st->n_units; inited++)
    if (sup_unit_init(st, &st->units[inited], err) < 0) {
      failed = inited;
      break;
    }
  /* from the last unit backwards: the first one that has done work is where we resume */
  for (int i = st->n_units - 1; failed < 0 && i >= 0; i--) {
    bool fresh = true;
    if (sup_unit_is_fresh(st, &st->units[i], &fresh, err) < 0) {
      failed = i;
      slot = "is_fresh_task";
    } else if (!fresh) {
      start = i;
      break;
    }
  }
  if (failed >= 0) {
    for (int i = 0; i < inited; i++)
      sup_unit_close(st, &st->units[i]);
    pthread_mutex_lock(&st->state_lock);
    sup_record_errors_locked(st, &st->units[failed], slot, err, 1);
    st->stage = DMH_STAGE_STOPPED;
    pthread_cond_broadcast(&st->state_cv);
    pthread_mutex_unlock(&st->state_lock);
    return -1;
  }
  for (int i = 0; i < start; i++)
    sup_unit_close(st, &st->units[i]); /* done in an earlier run */
  pthread_mutex_lock(&st->state_lock);
  st->cur = start;
  st->finished = false;
  st->n_errors = 0;
  st->paused_by_error = st->manual_pause = false;
  st->auto_resume_at = 0;
  pthread_mutex_unlock(&st->state_lock);
  dmh_log(DM_LOG_INFO, st->name, "starting at the %s unit", st->units[start].section);
  return sup_spawn_runner(st, err);
}

int dmh_subtask_start(dmh_subtask *st, dm_error *err) {
  pthread_mutex_lock(&st->cmd_lock);
  pthread_mutex_lock(&st->state_lock);
  dmh_stage stage = st->stage;
  pthread_mutex_unlock(&st->state_lock);
  int rc;
  if (stage != DMH_STAGE_NEW) {
    sup_stage_error(st, err, "start", stage, "start is accepted from New");
    rc = -1;
  } else {
    rc = sup_start_units(st, err);
  }
  pthread_mutex_unlock(&st->cmd_lock);
  if (rc < 0)
    sup_op_failed(st, DMH_OP_ERR_START, DMH_OP_ERR_RELAY_SOURCE);
  return rc;
}

/* ---- pause ---- */

int sup_pause_locked(dmh_subtask *st, bool manual, dm_error *err) {
  pthread_mutex_lock(&st->state_lock);
  dmh_stage stage = st->stage;
  if (stage == DMH_STAGE_PAUSED && manual && !st->manual_pause) {
    /* paused by an error: now the user owns it, so auto-resume must leave it alone */
    st->manual_pause = true;
    st->auto_resume_at = 0;
    pthread_mutex_unlock(&st->state_lock);
    return 0;
  }
  if (stage != DMH_STAGE_RUNNING) {
    pthread_mutex_unlock(&st->state_lock);
    sup_stage_error(st, err, "pause", stage, "pause is accepted from Running");
    return -1;
  }
  st->stage = DMH_STAGE_PAUSING;
  if (manual)
    st->manual_pause = true;
  dmh_stop_token_fire(&st->token);
  pthread_cond_broadcast(&st->state_cv);
  pthread_mutex_unlock(&st->state_lock);

  if (!sup_timed_join(st, st->sup.stop_timeout_ms)) {
    /* The unit ignores the token. Stay Pausing (resume stays refused) and let the runner finish
     * the pause when it returns; stop and kill remain available and are bounded. */
    pthread_mutex_lock(&st->state_lock);
    st->pause_detached = true;
    pthread_mutex_unlock(&st->state_lock);
    dm_error_set(err, DM_ERR_UNIT_TIMEOUT, NULL,
                 "task %s: the %s unit has not returned %u ms after the pause request; the task "
                 "stays Pausing until it does (stop-task and kill are still accepted)",
                 st->name, st->units[st->cur].section, st->sup.stop_timeout_ms);
    return -1;
  }
  sup_unit_pause(st, &st->units[st->cur]);
  pthread_mutex_lock(&st->state_lock);
  st->stage = st->finished ? DMH_STAGE_FINISHED : DMH_STAGE_PAUSED;
  pthread_cond_broadcast(&st->state_cv);
  pthread_mutex_unlock(&st->state_lock);
  return 0;
}

int dmh_subtask_pause(dmh_subtask *st, dm_error *err) {
  pthread_mutex_lock(&st->cmd_lock);
  int rc = sup_pause_locked(st, true, err);
  pthread_mutex_unlock(&st->cmd_lock);
  if (rc < 0)
    sup_op_failed(st, DMH_OP_ERR_PAUSE, DMH_OP_ERR_PAUSE_RELAY);
  return rc;
}

/* ---- resume ---- */

static bool sup_any_abandoned_locked(dmh_subtask *st) {
  for (int i = 0; i < st->n_units; i++)
    if (st->units[i].abandoned)
      return true;
  return false;
}

/* Returns 0 resumed, 1 nothing to do (only_if_auto and conditions not met), -1 error. */
int sup_resume_locked(dmh_subtask *st, bool only_if_auto, dm_error *err) {
  pthread_mutex_lock(&st->state_lock);
  dmh_stage stage = st->stage;
  if (only_if_auto &&
      !(stage == DMH_STAGE_PAUSED && st->paused_by_error && st->errors_resumable &&
        !st->manual_pause && st->auto_resume_at > 0 && dmh_now_seconds() >= st->auto_resume_at)) {
    pthread_mutex_unlock(&st->state_lock);
    return 1;
  }
  if (stage != DMH_STAGE_PAUSED && stage != DMH_STAGE_STOPPED) {
    pthread_mutex_unlock(&st->state_lock);
    sup_stage_error(st, err, "resume", stage, "resume is accepted from Paused or Stopped");
    return -1;
  }
  if (stage == DMH_STAGE_STOPPED && sup_any_abandoned_locked(st)) {
    pthread_mutex_unlock(&st->state_lock);
    dm_error_set(err, DM_ERR_UNIT_ABANDONED, NULL,
                 "task %s: a unit thread that never returned may still run; resuming could run "
                 "two instances on one checkpoint",
                 st->name);
    return -1;
  }
  st->stage = DMH_STAGE_RESUMING;
  st->auto_resume_at = 0;
  pthread_cond_broadcast(&st->state_cv);
  pthread_mutex_unlock(&st->state_lock);
  if (only_if_auto)
    dmh_log(DM_LOG_INFO, st->name, "auto-resuming after a resumable error");

  sup_join_runner(st); /* it has returned (the stage was Paused/Stopped); reap it */
  if (stage == DMH_STAGE_STOPPED)
    return sup_start_units(st, err) < 0 ? -1 : 0;
  pthread_mutex_lock(&st->state_lock);
  st->n_errors = 0;
  st->paused_by_error = st->manual_pause = false;
  pthread_mutex_unlock(&st->state_lock);
  return sup_spawn_runner(st, err);
}

int dmh_subtask_resume(dmh_subtask *st, dm_error *err) {
  pthread_mutex_lock(&st->cmd_lock);
  int rc = sup_resume_locked(st, false, err);
  pthread_mutex_unlock(&st->cmd_lock);
  if (rc < 0)
    sup_op_failed(st, DMH_OP_ERR_RESUME, DMH_OP_ERR_RESUME_RELAY);
  return rc;
}

static void *sup_auto_resume_thread(void *arg) {
  dmh_subtask *st = arg;
  pthread_mutex_lock(&st->state_lock);
  while (!st->shutting_down) {
    if (st->auto_resume_at > 0) {
      double at = st->auto_resume_at;
      struct timespec now, deadline;
      clock_gettime(CLOCK_MONOTONIC, &now);
      double wake = (double)now.tv_sec + now.tv_nsec / 1e9 + (at - dmh_now_seconds());
      deadline.tv_sec = (time_t)wake;
      deadline.tv_nsec = (long)((wake - (double)deadline.tv_sec) * 1e9);
      if (at > dmh_now_seconds())
        pthread_cond_timedwait(&st->state_cv, &st->state_lock, &deadline);
      if (st->shutting_down || st->auto_resume_at <= 0 || dmh_now_seconds() < st->auto_resume_at)
        continue;
      pthread_mutex_unlock(&st->state_lock);
      dm_error err;
      pthread_mutex_lock(&st->cmd_lock);
      int rc = sup_resume_locked(st, true, &err);
      pthread_mutex_unlock(&st->cmd_lock);
      if (rc != 1) /* 1: nothing was due after all */
        dmh_metrics_auto_resume(st->units[0].ctx);
      if (rc < 0) {
        dmh_log(DM_LOG_WARN, st->name, "auto-resume failed: %s", err.message);
        sup_op_failed(st, DMH_OP_ERR_AUTO_RESUME, DMH_OP_ERR_AUTO_RESUME);
      }
      pthread_mutex_lock(&st->state_lock);
    } else {
      pthread_cond_wait(&st->state_cv, &st->state_lock);
    }
  }
  pthread_mutex_unlock(&st->state_lock);
  return NULL;
}

/* ---- stop and kill ---- */

/* Bounded: token, (kill), wait stop-timeout, kill, wait again, abandon. Then close every unit. */
static void sup_stop_units_locked(dmh_subtask *st, bool kill, dm_error *err, bool *had_err) {
  sup_unit *cur = &st->units[st->cur];
  if (kill && st->runner_joinable)
    sup_unit_kill(st, cur);
  if (!sup_timed_join(st, st->sup.stop_timeout_ms)) {
    if (!kill) {
      dmh_log(DM_LOG_WARN, st->name, "the %s unit ignored the stop token for %u ms; killing it",
              cur->section, st->sup.stop_timeout_ms);
      sup_unit_kill(st, cur);
    }
    if (!sup_timed_join(st, st->sup.stop_timeout_ms)) {
      pthread_detach(st->runner);
      st->runner_joinable = false;
      dmh_unit_lib_pin(cur->lib); /* its code may still run: never unload it */
      char label[200];
      dm_error_set(err, DM_ERR_UNIT_ABANDONED, NULL,
                   "task %s: the %s did not return after stop and kill; its thread was abandoned",
                   st->name, sup_unit_label(cur, label, sizeof label));
      dmh_log(DM_LOG_ERROR, st->name, "%s", err->message);
      pthread_mutex_lock(&st->state_lock);
      cur->abandoned = true;
      sup_record_errors_locked(st, cur, "process", err, 1);
      pthread_mutex_unlock(&st->state_lock);
      *had_err = true;
    }
  }
  for (int i = 0; i < st->n_units; i++) {
    if (kill)
      sup_unit_kill(st, &st->units[i]);
    sup_unit_close(st, &st->units[i]);
  }
}

static int sup_stop(dmh_subtask *st, bool kill, bool any_stage, dm_error *err) {
  pthread_mutex_lock(&st->cmd_lock);
  pthread_mutex_lock(&st->state_lock);
  dmh_stage stage = st->stage;
  if (stage == DMH_STAGE_STOPPED && !any_stage) {
    pthread_mutex_unlock(&st->state_lock);
    pthread_mutex_unlock(&st->cmd_lock);
    sup_stage_error(st, err, kill ? "kill" : "stop", stage, "the task is already stopped");
    return -1;
  }
  st->stage = DMH_STAGE_STOPPING;
  st->pause_detached = false; /* this command reaps the runner now */
  st->auto_resume_at = 0;
  st->manual_pause = false;
  dmh_stop_token_fire(&st->token);
  pthread_cond_broadcast(&st->state_cv);
  pthread_mutex_unlock(&st->state_lock);
  bool had_err = false;
  sup_stop_units_locked(st, kill, err, &had_err);
  pthread_mutex_lock(&st->state_lock);
  st->stage = DMH_STAGE_STOPPED;
  pthread_cond_broadcast(&st->state_cv);
  pthread_mutex_unlock(&st->state_lock);
  pthread_mutex_unlock(&st->cmd_lock);
  return had_err ? -1 : 0;
}

int dmh_subtask_stop(dmh_subtask *st, dm_error *err) {
  int rc = sup_stop(st, false, false, err);
  if (rc < 0)
    sup_op_failed(st, DMH_OP_ERR_STOP, DMH_OP_ERR_STOP_RELAY);
  return rc;
}
int dmh_subtask_kill(dmh_subtask *st, dm_error *err) {
  int rc = sup_stop(st, true, false, err);
  if (rc < 0)
    sup_op_failed(st, DMH_OP_ERR_STOP, DMH_OP_ERR_STOP_RELAY);
  return rc;
}

void dmh_subtask_destroy(dmh_subtask *st) {
  if (!st)
    return;
  pthread_mutex_lock(&st->state_lock);
  st->shutting_down = true;
  pthread_cond_broadcast(&st->state_cv);
  pthread_mutex_unlock(&st->state_lock);
  if (st->auto_thread_started)
    pthread_join(st->auto_thread, NULL);
  dm_error err;
  sup_stop(st, false, true, &err);
  sup_free(st);
}

/* ---- observing ---- */

void dmh_subtask_hold_commands(dmh_subtask *st) {
  pthread_mutex_lock(&st->cmd_lock);
}
void dmh_subtask_release_commands(dmh_subtask *st) {
  pthread_mutex_unlock(&st->cmd_lock);
}

dmh_stage dmh_subtask_stage(dmh_subtask *st) {
  pthread_mutex_lock(&st->state_lock);
  dmh_stage s = st->stage;
  pthread_mutex_unlock(&st->state_lock);
  return s;
}

bool dmh_subtask_manually_paused(dmh_subtask *st) {
  pthread_mutex_lock(&st->state_lock);
  bool m = st->manual_pause;
  pthread_mutex_unlock(&st->state_lock);
  return m;
}
