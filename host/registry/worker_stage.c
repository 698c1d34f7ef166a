/* The worker's stage machine: a pure function over a small value, see worker.h. */
#include "worker.h"

#include <string.h>

#include "dmhost/sdk.h"

static const char *const worker_stage_names[] = {
    [DMH_WORKER_OFFLINE] = "offline",
    [DMH_WORKER_FREE] = "free",
    [DMH_WORKER_BOUND] = "bound",
    [DMH_WORKER_RELAY] = "relay",
};

const char *dmh_worker_stage_name(dmh_worker_stage stage) {
  if ((unsigned)stage >= sizeof worker_stage_names / sizeof worker_stage_names[0])
    return "unknown";
  return worker_stage_names[stage];
}

int dmh_worker_stage_parse(const char *s, dmh_worker_stage *out) {
  for (size_t i = 0; s && i < sizeof worker_stage_names / sizeof worker_stage_names[0]; i++) {
    if (strcmp(s, worker_stage_names[i]) == 0) {
      *out = (dmh_worker_stage)i;
      return 0;
    }
  }
  return -1;
}

void dmh_worker_init(dmh_worker *w) {
  memset(w, 0, sizeof *w);
  w->stage = DMH_WORKER_OFFLINE;
}

bool dmh_worker_bound_to(const dmh_worker *w, const char *source) {
  return (w->stage == DMH_WORKER_BOUND || w->stage == DMH_WORKER_RELAY) && source &&
         strcmp(w->source, source) == 0;
}

static const char *worker_event_name(dmh_worker_event_kind kind) {
  switch (kind) {
  case DMH_WORKER_EV_RESTORE:
    return "restore";
  case DMH_WORKER_EV_BIND:
    return "operate-source create";
  case DMH_WORKER_EV_START_RELAY:
    return "start-relay";
  case DMH_WORKER_EV_STOP_RELAY:
    return "stop-relay";
  case DMH_WORKER_EV_UNBIND:
    return "operate-source stop";
  case DMH_WORKER_EV_SHUTDOWN:
    return "shutdown";
  }
  return "unknown event";
}

/* The source an event names must be given and fit the worker's buffer. */
static int worker_check_source(const dmh_worker_event *ev, dm_error *err) {
  if (!ev->source || !ev->source[0]) {
    dm_error_set(err, DM_ERR_CONTROL_REQUEST, NULL, "%s: no source named; give it with -s SOURCE",
                 worker_event_name(ev->kind));
    return -1;
  }
  if (strlen(ev->source) >= DMH_WORKER_SOURCE_MAX) {
    dm_error_set(err, DM_ERR_CONTROL_REQUEST, NULL,
                 "%s: source-id \"%.64s...\" is longer than %d characters; use a shorter "
                 "source-id",
                 worker_event_name(ev->kind), ev->source, DMH_WORKER_SOURCE_MAX - 1);
    return -1;
  }
  return 0;
}

static void worker_set(dmh_worker *next, dmh_worker_stage stage, const char *source) {
  next->stage = stage;
  if (source != next->source) /* the caller may pass the worker's own buffer back */
    dm_strlcpy(next->source, source ? source : "", sizeof next->source);
}

static int worker_restore(const dmh_worker *cur, const dmh_worker_event *ev, dmh_worker *next,
                          dm_error *err) {
  if (cur->stage != DMH_WORKER_OFFLINE) {
    dm_error_set(err, DM_ERR_STAGE, NULL,
                 "worker: restore is only valid at start (stage offline), the worker is %s%s%s",
                 dmh_worker_stage_name(cur->stage), cur->source[0] ? " to " : "", cur->source);
    return -1;
  }
  if (!ev->source || !ev->source[0]) {
    if (ev->relay) {
      dm_error_set(err, DM_ERR_STATE, NULL,
                   "worker: the persisted state has a running relay but no bound source; remove "
                   "the worker entry of state.json or restore it from a backup");
      return -1;
    }
    worker_set(next, DMH_WORKER_FREE, NULL);
    return 0;
  }
  if (worker_check_source(ev, err) < 0)
    return -1;
  /* Straight to the persisted binding, never through free: see worker.h. */
  worker_set(next, ev->relay ? DMH_WORKER_RELAY : DMH_WORKER_BOUND, ev->source);
  return 0;
}

static int worker_bind(const dmh_worker *cur, const dmh_worker_event *ev, dmh_worker *next,
                       dm_error *err) {
  if (worker_check_source(ev, err) < 0)
    return -1;
  switch (cur->stage) {
  case DMH_WORKER_FREE:
    worker_set(next, DMH_WORKER_BOUND, ev->source);
    return 0;
  case DMH_WORKER_BOUND:
  case DMH_WORKER_RELAY:
    if (strcmp(cur->source, ev->source) == 0)
      dm_error_set(err, DM_ERR_EXISTS, NULL,
                   "operate-source create: source \"%s\" already exists on this worker (stage %s); "
                   "run `dmctl operate-source stop -s %s` first to replace it",
                   ev->source, dmh_worker_stage_name(cur->stage), cur->source);
    else if (cur->stage == DMH_WORKER_RELAY)
      dm_error_set(err, DM_ERR_EXISTS, NULL,
                   "operate-source create: this worker is bound to source \"%s\" with its relay "
                   "running (stage relay) and binds one source; run `dmctl stop-relay -s %s` and "
                   "`dmctl operate-source stop -s %s` before binding \"%s\", or run another "
                   "`dmhost serve` for it",
                   cur->source, cur->source, cur->source, ev->source);
    else
      dm_error_set(err, DM_ERR_EXISTS, NULL,
                   "operate-source create: this worker is bound to source \"%s\" (stage bound) "
                   "and binds one source; run `dmctl operate-source stop -s %s` before binding "
                   "\"%s\", or run another `dmhost serve` for it",
                   cur->source, cur->source, ev->source);
    return -1;
  case DMH_WORKER_OFFLINE:
    break;
  }
  dm_error_set(err, DM_ERR_STAGE, NULL,
               "operate-source create: the worker is offline (its state is not restored yet); "
               "retry once `dmhost serve` has started");
  return -1;
}

static int worker_not_bound(const dmh_worker *cur, const dmh_worker_event *ev, dm_error *err) {
  if (cur->stage == DMH_WORKER_OFFLINE)
    dm_error_set(err, DM_ERR_STAGE, NULL,
                 "%s: the worker is offline (its state is not restored yet); retry once `dmhost "
                 "serve` has started",
                 worker_event_name(ev->kind));
  else if (cur->stage == DMH_WORKER_FREE)
    dm_error_set(err, DM_ERR_NOT_FOUND, NULL,
                 "%s: source \"%s\" is not bound to this worker (it is free); create it with "
                 "`dmctl operate-source create SOURCE.cfg`",
                 worker_event_name(ev->kind), ev->source);
  else
    dm_error_set(err, DM_ERR_NOT_FOUND, NULL,
                 "%s: source \"%s\" is not bound to this worker, which is bound to \"%s\" (stage "
                 "%s); name that source",
                 worker_event_name(ev->kind), ev->source, cur->source,
                 dmh_worker_stage_name(cur->stage));
  return -1;
}

static int worker_start_relay(const dmh_worker *cur, const dmh_worker_event *ev, dmh_worker *next,
                              dm_error *err) {
  if (worker_check_source(ev, err) < 0)
    return -1;
  if (!dmh_worker_bound_to(cur, ev->source))
    return worker_not_bound(cur, ev, err);
  if (cur->stage == DMH_WORKER_RELAY) {
    dm_error_set(err, DM_ERR_EXISTS, NULL,
                 "start-relay: the relay of source \"%s\" already runs on this worker; see it "
                 "with `dmctl operate-source show -s %s`",
                 cur->source, cur->source);
    return -1;
  }
  worker_set(next, DMH_WORKER_RELAY, ev->source);
  return 0;
}

static int worker_stop_relay(const dmh_worker *cur, const dmh_worker_event *ev, dmh_worker *next,
                             dm_error *err) {
  if (worker_check_source(ev, err) < 0)
    return -1;
  if (!dmh_worker_bound_to(cur, ev->source))
    return worker_not_bound(cur, ev, err);
  if (cur->stage != DMH_WORKER_RELAY) {
    dm_error_set(err, DM_ERR_NOT_FOUND, NULL,
                 "stop-relay: no relay runs for source \"%s\" (worker stage %s); start it with "
                 "`dmctl start-relay -s %s`",
                 cur->source, dmh_worker_stage_name(cur->stage), cur->source);
    return -1;
  }
  worker_set(next, DMH_WORKER_BOUND, ev->source);
  return 0;
}

static int worker_unbind(const dmh_worker *cur, const dmh_worker_event *ev, dmh_worker *next,
                         dm_error *err) {
  if (worker_check_source(ev, err) < 0)
    return -1;
  if (!dmh_worker_bound_to(cur, ev->source))
    return worker_not_bound(cur, ev, err);
  if (cur->stage == DMH_WORKER_RELAY) {
    /* relay -> free would skip bound: the relay must be stopped first (registry.c does that as
     * its own transition). */
    dm_error_set(err, DM_ERR_STAGE, NULL,
                 "operate-source stop: the relay of source \"%s\" still runs; stop it first with "
                 "`dmctl stop-relay -s %s`",
                 cur->source, cur->source);
    return -1;
  }
  worker_set(next, DMH_WORKER_FREE, NULL);
  return 0;
}

int dmh_worker_apply(const dmh_worker *cur, const dmh_worker_event *ev, dmh_worker *next,
                     dm_error *err) {
  switch (ev->kind) {
  case DMH_WORKER_EV_RESTORE:
    return worker_restore(cur, ev, next, err);
  case DMH_WORKER_EV_BIND:
    return worker_bind(cur, ev, next, err);
  case DMH_WORKER_EV_START_RELAY:
    return worker_start_relay(cur, ev, next, err);
  case DMH_WORKER_EV_STOP_RELAY:
    return worker_stop_relay(cur, ev, next, err);
  case DMH_WORKER_EV_UNBIND:
    return worker_unbind(cur, ev, next, err);
  case DMH_WORKER_EV_SHUTDOWN:
    worker_set(next, DMH_WORKER_OFFLINE, NULL);
    return 0;
  }
  dm_error_set(err, DM_ERR_INTERNAL, NULL, "worker: unknown event %d", (int)ev->kind);
  return -1;
}
