/*
 * The cluster's scheduler (docs/cluster.md, "Scheduling"): which worker serves which source, by
 * DM's rules made explicit. A pure function over a snapshot, like worker_stage.c: the leader master
 * reads workers and sources from etcd, plans, and writes the plan's bindings (each fenced by its
 * leadership's revision); nothing here does I/O, so every rule is a unit test.
 *
 * A worker's stage in the cluster is derived from what etcd holds for it:
 *   offline  no live lease (never registered, or its lease expired);
 *   relay    it keeps the relay log of a source (`relay`): it may be bound to that source only,
 *            whether it is now or not (its relay files are on its disk);
 *   bound    bound to a source (`bound`), no relay;
 *   free     online, bound to nothing, no relay.
 *
 * Rules (dmh_sched_plan):
 *   1. a source bound to an offline worker is unbound (the worker's lease expired: DM's keepalive
 *      rule; a worker that restarts within its lease renews the same lease and never goes offline);
 *   2. an unbound source is bound, in this order, to: an online worker that keeps its relay; an
 *      online free worker that served it before (`last`); any online free worker (name order);
 *   3. a worker keeping source A's relay is never bound to another source, and a bound worker is
 *      never given a second one.
 */
#ifndef DMH_SCHEDULER_H
#define DMH_SCHEDULER_H

#include <stdbool.h>
#include <stddef.h>

#include "dmhost/error.h"
#include "worker.h"

#define DMH_SCHED_NAME_MAX 128

typedef struct dmh_sched_worker {
  char name[DMH_SCHED_NAME_MAX];
  bool online;                    /* its lease is alive */
  char bound[DMH_SCHED_NAME_MAX]; /* the source bound to it ("" none) */
  char relay[DMH_SCHED_NAME_MAX]; /* the source whose relay it keeps ("" none) */
} dmh_sched_worker;

typedef struct dmh_sched_source {
  char name[DMH_SCHED_NAME_MAX];
  char last[DMH_SCHED_NAME_MAX]; /* the worker that served it last ("" never served) */
} dmh_sched_source;

typedef enum dmh_sched_action_kind {
  DMH_SCHED_UNBIND = 1, /* remove the binding source -> worker */
  DMH_SCHED_BIND = 2,   /* bind source to worker */
} dmh_sched_action_kind;

typedef struct dmh_sched_action {
  dmh_sched_action_kind kind;
  const char *source; /* point into the snapshot's arrays */
  const char *worker;
} dmh_sched_action;

/* The worker's stage (offline, free, bound, relay: worker.h's names). */
dmh_worker_stage dmh_sched_stage(const dmh_sched_worker *w);

/*
 * The actions that bring the snapshot to the rules, in order (unbinds first). `workers` is
 * updated as the plan goes (bound fields), so the caller's copy ends as the plan leaves it;
 * sources that no worker can take stay unbound. `actions` needs room for 2 * n_sources entries.
 * Returns the number of actions, or -1 with *err (DM_ERR_STATE) for a snapshot that breaks the
 * invariants (a source bound to two workers, a worker keeping A's relay bound to B, a binding
 * naming a source not in `sources`).
 */
int dmh_sched_plan(dmh_sched_worker *workers, size_t n_workers, const dmh_sched_source *sources,
                   size_t n_sources, dmh_sched_action *actions, dm_error *err);

/*
 * transfer-source SOURCE WORKER: allowed when the worker is online and free, or keeps the
 * source's relay and is bound to nothing. Fills the actions (an unbind from the current worker if
 * any, then the bind; 0 actions when it is bound there already) and updates `workers`. Returns the
 * number of actions, or -1 with *err: DM_ERR_NOT_FOUND (no such worker or source), DM_ERR_STAGE
 * (offline), DM_ERR_EXISTS (bound to another source, or keeping another source's relay).
 */
int dmh_sched_transfer(dmh_sched_worker *workers, size_t n_workers, const dmh_sched_source *sources,
                       size_t n_sources, const char *source, const char *worker,
                       dmh_sched_action *actions, dm_error *err);

#endif /* DMH_SCHEDULER_H */
