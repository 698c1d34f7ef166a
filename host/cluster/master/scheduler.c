/* The cluster's scheduling rules: a pure function over a snapshot, see scheduler.h. */
#include "scheduler.h"

#include <string.h>

#include "dmhost/sdk.h"

dmh_worker_stage dmh_sched_stage(const dmh_sched_worker *w) {
  if (!w->online)
    return DMH_WORKER_OFFLINE;
  if (w->relay[0])
    return DMH_WORKER_RELAY;
  return w->bound[0] ? DMH_WORKER_BOUND : DMH_WORKER_FREE;
}

static dmh_sched_worker *sched_worker(dmh_sched_worker *ws, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(ws[i].name, name) == 0)
      return &ws[i];
  return NULL;
}

static const dmh_sched_source *sched_source(const dmh_sched_source *ss, size_t n,
                                            const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(ss[i].name, name) == 0)
      return &ss[i];
  return NULL;
}

/* The invariants a snapshot must hold before anything is planned on it. */
static int sched_check(const dmh_sched_worker *ws, size_t nw, const dmh_sched_source *ss, size_t ns,
                       dm_error *err) {
  for (size_t i = 0; i < nw; i++) {
    const dmh_sched_worker *w = &ws[i];
    if (w->bound[0] && !sched_source(ss, ns, w->bound)) {
      dm_error_set(err, DM_ERR_STATE, NULL, "worker %s is bound to source %s, which is not known",
                   w->name, w->bound);
      return -1;
    }
    if (w->bound[0] && w->relay[0] && strcmp(w->bound, w->relay) != 0) {
      dm_error_set(err, DM_ERR_STATE, NULL,
                   "worker %s keeps the relay of source %s but is bound to source %s", w->name,
                   w->relay, w->bound);
      return -1;
    }
    for (size_t j = i + 1; j < nw; j++)
      if (w->bound[0] && strcmp(w->bound, ws[j].bound) == 0) {
        dm_error_set(err, DM_ERR_STATE, NULL, "source %s is bound to both %s and %s", w->bound,
                     w->name, ws[j].name);
        return -1;
      }
  }
  return 0;
}

static const dmh_sched_worker *sched_holder(const dmh_sched_worker *ws, size_t n,
                                            const char *source) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(ws[i].bound, source) == 0)
      return &ws[i];
  return NULL;
}

/* Rule 2's choice for an unbound source; NULL when no online worker may take it. */
static dmh_sched_worker *sched_pick(dmh_sched_worker *ws, size_t n, const dmh_sched_source *s) {
  dmh_sched_worker *best = NULL;
  for (size_t i = 0; i < n; i++) /* 2a: keeps its relay */
    if (ws[i].online && !ws[i].bound[0] && strcmp(ws[i].relay, s->name) == 0)
      return &ws[i];
  for (size_t i = 0; i < n; i++) { /* 2b: free and served it before; 2c: free, name order */
    dmh_sched_worker *w = &ws[i];
    if (dmh_sched_stage(w) != DMH_WORKER_FREE)
      continue;
    if (s->last[0] && strcmp(w->name, s->last) == 0)
      return w;
    if (!best || strcmp(w->name, best->name) < 0)
      best = w;
  }
  return best;
}

int dmh_sched_plan(dmh_sched_worker *workers, size_t n_workers, const dmh_sched_source *sources,
                   size_t n_sources, dmh_sched_action *actions, dm_error *err) {
  if (sched_check(workers, n_workers, sources, n_sources, err) < 0)
    return -1;
  int n = 0;
  /* 1: bindings to offline workers go */
  for (size_t i = 0; i < n_workers; i++) {
    dmh_sched_worker *w = &workers[i];
    if (w->online || !w->bound[0])
      continue;
    const dmh_sched_source *s = sched_source(sources, n_sources, w->bound);
    actions[n++] = (dmh_sched_action){DMH_SCHED_UNBIND, s->name, w->name};
    w->bound[0] = '\0';
  }
  /* 2: unbound sources, in the order given (the caller sorts them by name) */
  for (size_t i = 0; i < n_sources; i++) {
    const dmh_sched_source *s = &sources[i];
    if (sched_holder(workers, n_workers, s->name))
      continue;
    dmh_sched_worker *w = sched_pick(workers, n_workers, s);
    if (!w)
      continue;
    dm_strlcpy(w->bound, s->name, sizeof w->bound);
    actions[n++] = (dmh_sched_action){DMH_SCHED_BIND, s->name, w->name};
  }
  return n;
}

int dmh_sched_transfer(dmh_sched_worker *workers, size_t n_workers, const dmh_sched_source *sources,
                       size_t n_sources, const char *source, const char *worker,
                       dmh_sched_action *actions, dm_error *err) {
  if (sched_check(workers, n_workers, sources, n_sources, err) < 0)
    return -1;
  const dmh_sched_source *s = sched_source(sources, n_sources, source);
  dmh_sched_worker *w = sched_worker(workers, n_workers, worker);
  if (!s || !w) {
    dm_error_set(err, DM_ERR_NOT_FOUND, NULL, "transfer-source: no %s named %s",
                 s ? "worker" : "source", s ? worker : source);
    return -1;
  }
  if (!w->online) {
    dm_error_set(err, DM_ERR_STAGE, NULL,
                 "transfer-source: worker %s is offline; start it, or choose another worker",
                 worker);
    return -1;
  }
  if (strcmp(w->bound, source) == 0)
    return 0;
  if (w->bound[0] || (w->relay[0] && strcmp(w->relay, source) != 0)) {
    dm_error_set(err, DM_ERR_EXISTS, NULL,
                 "transfer-source: worker %s %s source %s; it can take no other source%s", worker,
                 w->bound[0] ? "is bound to" : "keeps the relay of",
                 w->bound[0] ? w->bound : w->relay,
                 w->bound[0] ? " (transfer that one away first)"
                             : " (stop-relay of that source on it first)");
    return -1;
  }
  int n = 0;
  for (size_t i = 0; i < n_workers; i++)
    if (strcmp(workers[i].bound, source) == 0) {
      actions[n++] = (dmh_sched_action){DMH_SCHED_UNBIND, s->name, workers[i].name};
      workers[i].bound[0] = '\0';
    }
  dm_strlcpy(w->bound, source, sizeof w->bound);
  actions[n++] = (dmh_sched_action){DMH_SCHED_BIND, s->name, w->name};
  return n;
}
