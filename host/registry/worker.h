/*
 * The worker's stage. `dmhost serve` is one worker in DM's sense: it binds at most one source and
 * may run that source's relay. Its stage is modelled explicitly so that a worker whose relay is
 * bound to source A can never be taken for a free worker and handed source B:
 *
 *   offline --start, nothing persisted--> free --create A--> bound(A) --start-relay A--> relay(A)
 *   offline --start, persisted bound(A)---------------------> bound(A)
 *   offline --start, persisted relay(A)----------------------------------------------> relay(A)
 *                                          free <--stop A--- bound(A) <--stop-relay A-- relay(A)
 *   any --shutdown--> offline (the persisted binding is kept for the next start)
 *
 * DM's bug (a worker with a relay bound to A seen as free after a rolling restart) came from the
 * restart path going through "free". Here offline -> free happens only when the persisted state
 * holds no binding; a persisted binding restores straight to bound/relay. Every other transition is
 * refused with a coded error naming the bound source and the fix.
 *
 * dmh_worker_apply is pure (no I/O, no locks): the caller (registry.c) holds its lock, applies the
 * event to a copy, and commits the copy only after the side effect (loading the source, starting
 * the relay) succeeded.
 */
#ifndef DMH_WORKER_H
#define DMH_WORKER_H

#include <stdbool.h>

#include "dmhost/error.h"

#define DMH_WORKER_SOURCE_MAX 128

typedef enum dmh_worker_stage {
  DMH_WORKER_OFFLINE = 0,
  DMH_WORKER_FREE = 1,
  DMH_WORKER_BOUND = 2, /* bound to `source`, no relay */
  DMH_WORKER_RELAY = 3, /* bound to `source`, its relay running */
} dmh_worker_stage;

typedef struct dmh_worker {
  dmh_worker_stage stage;
  char source[DMH_WORKER_SOURCE_MAX]; /* "" unless bound or relay */
} dmh_worker;

typedef enum dmh_worker_event_kind {
  /* Daemon start: restore from what the state dir holds (`source` "" = no binding, `relay` tells
   * whether the relay of `source` was running). Only from offline. */
  DMH_WORKER_EV_RESTORE = 1,
  DMH_WORKER_EV_BIND = 2,        /* operate-source create `source` */
  DMH_WORKER_EV_START_RELAY = 3, /* start-relay -s `source`, or enable-relay in its file */
  DMH_WORKER_EV_STOP_RELAY = 4,  /* stop-relay -s `source` */
  DMH_WORKER_EV_UNBIND = 5,      /* operate-source stop -s `source` */
  DMH_WORKER_EV_SHUTDOWN = 6,    /* daemon exit: any -> offline (the persisted binding stays) */
} dmh_worker_event_kind;

typedef struct dmh_worker_event {
  dmh_worker_event_kind kind;
  const char *source; /* the source the command names; NULL or "" for shutdown and empty restore */
  bool relay;         /* restore only: the persisted relay of `source` was running */
} dmh_worker_event;

/* "offline", "free", "bound", "relay". */
const char *dmh_worker_stage_name(dmh_worker_stage stage);
/* Returns 0 and *out, or -1 for an unknown name. */
int dmh_worker_stage_parse(const char *s, dmh_worker_stage *out);

/* A worker at offline, bound to nothing. */
void dmh_worker_init(dmh_worker *w);

/*
 * Apply `ev` to `cur` and write the resulting stage to *next (which may alias cur). On a refused
 * transition *next is untouched, *err says why (DM_ERR_EXISTS when another source is bound or the
 * relay already runs, DM_ERR_NOT_FOUND when the named source is not the bound one or no relay runs,
 * DM_ERR_STAGE for events that are not valid from the stage, DM_ERR_CONTROL_REQUEST for a missing
 * or too long source name) and -1 is returned.
 */
int dmh_worker_apply(const dmh_worker *cur, const dmh_worker_event *ev, dmh_worker *next,
                     dm_error *err);

/* Is the worker bound (bound or relay) to `source`? */
bool dmh_worker_bound_to(const dmh_worker *w, const char *source);

#endif /* DMH_WORKER_H */
