/*
 * The leader's scheduling (master.h): the snapshot of workers, sources and bindings read from
 * etcd at one revision, the pure scheduler's plan (scheduler.h), and the plan written as txns
 * fenced by the leadership token.
 */
#include "master_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dmhost/sdk.h"
#include "log.h"
#include "metrics.h"

int master_key(char *buf, size_t size, const dmh_master *m, dmh_cluster_key_kind kind,
               const char *a, const char *b, const char *c, dm_error *err) {
  if (dmh_cluster_key(buf, size, m->prefix, kind, a, b, c) < 0) {
    const char *bad = a && !dmh_cluster_name_ok(a)   ? a
                      : b && !dmh_cluster_name_ok(b) ? b
                      : c && !dmh_cluster_name_ok(c) ? c
                                                     : "";
    dm_error_set(err, DM_ERR_CONTROL_REQUEST, NULL,
                 "\"%s\" cannot name anything in the cluster: use 1 to 127 of the characters "
                 "A-Z a-z 0-9 _ . - (not \".\" or \"..\")",
                 bad);
    return -1;
  }
  return 0;
}

int master_range_kind(dmh_etcd *c, const dmh_master *m, dmh_cluster_key_kind kind, int64_t rev,
                      dmh_etcd_result *out, dm_error *err) {
  char k[DMH_CLUSTER_KEY_MAX];
  if (master_key(k, sizeof k, m, kind, NULL, NULL, NULL, err) < 0)
    return -1;
  return dmh_etcd_range(c, DMH_ETCD_S(k), 1, 0, rev, out, err);
}

/* ---- snapshot ---- */

void master_snapshot_free(master_snapshot *s) {
  free(s->workers);
  free(s->info);
  free(s->sources);
  free(s->unbound);
  memset(s, 0, sizeof *s);
}

static dmh_sched_worker *snap_worker(master_snapshot *s, const char *name) {
  for (size_t i = 0; i < s->n_workers; i++)
    if (strcmp(s->workers[i].name, name) == 0)
      return &s->workers[i];
  return NULL;
}

static int snap_cmp(const void *a, const void *b) {
  return strcmp(((const dmh_sched_worker *)a)->name, ((const dmh_sched_worker *)b)->name);
}

/* Keeps workers and info in step while sorting: info's name is the worker's. */
static void snap_sort(master_snapshot *s) {
  qsort(s->workers, s->n_workers, sizeof *s->workers, snap_cmp);
  dmh_cluster_worker_info *info = calloc(s->n_workers ? s->n_workers : 1, sizeof *info);
  if (!info)
    return; /* the addresses are only shown; the order is what counts */
  for (size_t i = 0; i < s->n_workers; i++) {
    dm_strlcpy(info[i].name, s->workers[i].name, sizeof info[i].name);
    for (size_t j = 0; j < s->n_workers; j++)
      if (strcmp(s->info[j].name, s->workers[i].name) == 0)
        info[i] = s->info[j];
  }
  free(s->info);
  s->info = info;
}

int master_snapshot_read(dmh_etcd *c, const dmh_master *m, master_snapshot *s, dm_error *err) {
  memset(s, 0, sizeof *s);
  dmh_etcd_result reg = {0}, bound = {0}, src = {0}, last = {0};
  int rc = -1;
  char a[DMH_CLUSTER_NAME_MAX];
  if (master_range_kind(c, m, DMH_KEY_WORKER, 0, &reg, err) < 0)
    return -1;
  s->revision = reg.revision; /* the other three at the same revision: one consistent picture */
  if (master_range_kind(c, m, DMH_KEY_BOUND, s->revision, &bound, err) < 0 ||
      master_range_kind(c, m, DMH_KEY_SOURCE, s->revision, &src, err) < 0 ||
      master_range_kind(c, m, DMH_KEY_LAST, s->revision, &last, err) < 0)
    goto out;
  size_t cap = reg.n_kvs + bound.n_kvs + 1;
  s->workers = calloc(cap, sizeof *s->workers);
  s->info = calloc(cap, sizeof *s->info);
  s->sources = calloc(src.n_kvs + 1, sizeof *s->sources);
  s->unbound = calloc(cap, sizeof *s->unbound);
  if (!s->workers || !s->info || !s->sources || !s->unbound) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory reading the cluster's snapshot");
    goto out;
  }
  for (size_t i = 0; i < reg.n_kvs; i++) {
    const dmh_etcd_kv *kv = &reg.kvs[i];
    if (dmh_cluster_key_parse(kv->key, kv->key_len, m->prefix, DMH_KEY_WORKER, a, NULL, NULL) < 0)
      continue;
    dmh_cluster_worker_info wi;
    dm_error perr;
    if (dmh_cluster_worker_parse(kv->value, kv->value_len, &wi, &perr) < 0) {
      /* online all the same (its lease lives), keeping no relay we could honour */
      dmh_log(DM_LOG_WARN, "master", "worker %s: %s", a, perr.message);
      memset(&wi, 0, sizeof wi);
    }
    dmh_sched_worker *w = &s->workers[s->n_workers];
    dm_strlcpy(w->name, a, sizeof w->name);
    w->online = true;
    dm_strlcpy(w->relay, wi.relay, sizeof w->relay);
    s->info[s->n_workers] = wi;
    dm_strlcpy(s->info[s->n_workers].name, a, sizeof wi.name);
    s->n_workers++;
  }
  for (size_t i = 0; i < bound.n_kvs; i++) {
    const dmh_etcd_kv *kv = &bound.kvs[i];
    dmh_cluster_binding b;
    dm_error perr;
    if (dmh_cluster_key_parse(kv->key, kv->key_len, m->prefix, DMH_KEY_BOUND, a, NULL, NULL) < 0)
      continue;
    if (dmh_cluster_binding_parse(kv->value, kv->value_len, &b, &perr) < 0) {
      dmh_log(DM_LOG_WARN, "master", "binding of worker %s ignored: %s", a, perr.message);
      continue;
    }
    dmh_sched_worker *w = snap_worker(s, a);
    if (!w) { /* bound but not registered: offline */
      w = &s->workers[s->n_workers];
      dm_strlcpy(w->name, a, sizeof w->name);
      dm_strlcpy(s->info[s->n_workers].name, a, sizeof s->info[0].name);
      s->n_workers++;
    }
    dm_strlcpy(w->bound, b.source, sizeof w->bound);
  }
  for (size_t i = 0; i < src.n_kvs; i++) {
    const dmh_etcd_kv *kv = &src.kvs[i];
    if (dmh_cluster_key_parse(kv->key, kv->key_len, m->prefix, DMH_KEY_SOURCE, a, NULL, NULL) < 0)
      continue;
    dm_strlcpy(s->sources[s->n_sources].name, a, DMH_SCHED_NAME_MAX);
    for (size_t j = 0; j < last.n_kvs; j++) {
      char ls[DMH_CLUSTER_NAME_MAX];
      if (dmh_cluster_key_parse(last.kvs[j].key, last.kvs[j].key_len, m->prefix, DMH_KEY_LAST, ls,
                                NULL, NULL) == 0 &&
          strcmp(ls, a) == 0 && dmh_cluster_name_ok(last.kvs[j].value))
        dm_strlcpy(s->sources[s->n_sources].last, last.kvs[j].value, DMH_SCHED_NAME_MAX);
    }
    s->n_sources++; /* etcd returns keys in byte order: sources are sorted by name */
  }
  snap_sort(s);
  rc = 0;
out:
  dmh_etcd_result_free(&reg);
  dmh_etcd_result_free(&bound);
  dmh_etcd_result_free(&src);
  dmh_etcd_result_free(&last);
  if (rc < 0)
    master_snapshot_free(s);
  return rc;
}

size_t master_repair(master_snapshot *s, dmh_sched_action *actions) {
  size_t n = 0;
  for (size_t i = 0; i < s->n_workers; i++) {
    dmh_sched_worker *w = &s->workers[i];
    if (!w->bound[0])
      continue;
    const char *why = NULL;
    bool listed = false;
    for (size_t j = 0; j < s->n_sources && !listed; j++)
      listed = strcmp(s->sources[j].name, w->bound) == 0;
    if (!listed)
      why = "the source was removed";
    else if (w->relay[0] && strcmp(w->relay, w->bound) != 0)
      why = "the worker keeps another source's relay";
    for (size_t j = 0; j < i && !why; j++)
      if (strcmp(s->workers[j].bound, w->bound) == 0)
        why = "the source is bound to another worker";
    if (!why)
      continue;
    dmh_log(DM_LOG_INFO, "master", "unbinding source %s from worker %s: %s", w->bound, w->name,
            why);
    /* the action points into the snapshot: its name is kept in `unbound` */
    dm_strlcpy(s->unbound[i], w->bound, sizeof s->unbound[i]);
    actions[n++] =
        (dmh_sched_action){.kind = DMH_SCHED_UNBIND, .source = s->unbound[i], .worker = w->name};
  }
  /* cleared after the loop so the "bound twice" check above sees the first holder */
  for (size_t k = 0; k < n; k++)
    snap_worker(s, actions[k].worker)->bound[0] = '\0';
  return n;
}

/* ---- fenced writes ---- */

/* Room for one chunk's keys and values. */
typedef struct apply_chunk {
  dmh_etcd_cmp cmps[DMH_ETCD_TXN_MAX_OPS];
  dmh_etcd_op ops[DMH_ETCD_TXN_MAX_OPS];
  char keys[DMH_ETCD_TXN_MAX_OPS][DMH_CLUSTER_KEY_MAX];
  char bkeys[DMH_ETCD_TXN_MAX_OPS][DMH_CLUSTER_KEY_MAX];
  char *values[DMH_ETCD_TXN_MAX_OPS];
  size_t n_cmps, n_ops;
} apply_chunk;

static void chunk_reset(apply_chunk *ch) {
  for (size_t i = 0; i < ch->n_ops; i++)
    free(ch->values[i]);
  memset(ch->values, 0, sizeof ch->values);
  ch->n_cmps = 1; /* [0]: the leader compare */
  ch->n_ops = 0;
}

static int chunk_send(dmh_etcd *c, const dmh_master *m, int64_t token, apply_chunk *ch,
                      const char *leader_key, dm_error *err) {
  if (ch->n_ops == 0)
    return 0;
  dmh_etcd_op check = {.kind = DMH_ETCD_RANGE, .key = DMH_ETCD_S(leader_key)};
  dmh_etcd_txn_result tr = {0};
  if (dmh_etcd_txn(c, ch->cmps, ch->n_cmps, ch->ops, ch->n_ops, &check, 1, &tr, err) < 0)
    return -1;
  int rc = 0;
  if (!tr.succeeded) {
    int64_t now = 0;
    if (tr.n_results == 1 && tr.results[0].n_kvs == 1)
      now = tr.results[0].kvs[0].create_revision;
    if (now != token) {
      dm_error_set(err, DM_ERR_CLUSTER_FENCED, NULL,
                   "master %s: scheduler write refused: it led with token %lld, the leader key's "
                   "create_revision is now %lld",
                   m->name, (long long)token, (long long)now);
    } else {
      dm_error_set(err, DM_ERR_EXISTS, NULL,
                   "master %s: a binding changed while the scheduler planned; planning again",
                   m->name);
    }
    rc = -1;
  }
  dmh_etcd_txn_result_free(&tr);
  return rc;
}

int master_apply(dmh_etcd *c, const dmh_master *m, int64_t token, const dmh_sched_action *actions,
                 size_t n, dm_error *err) {
  char leader_key[DMH_CLUSTER_KEY_MAX];
  if (master_key(leader_key, sizeof leader_key, m, DMH_KEY_LEADER, NULL, NULL, NULL, err) < 0)
    return -1;
  apply_chunk *ch = calloc(1, sizeof *ch);
  if (!ch) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory writing the scheduler's plan");
    return -1;
  }
  ch->cmps[0] = (dmh_etcd_cmp){.key = DMH_ETCD_S(leader_key),
                               .target = DMH_ETCD_CMP_CREATE,
                               .result = DMH_ETCD_EQUAL,
                               .number = token};
  chunk_reset(ch);
  int rc = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    const dmh_sched_action *a = &actions[i];
    size_t need = a->kind == DMH_SCHED_BIND ? 3 : 1;
    if (ch->n_ops + need > DMH_ETCD_TXN_MAX_OPS) {
      rc = chunk_send(c, m, token, ch, leader_key, err);
      chunk_reset(ch);
      if (rc < 0)
        break;
    }
    size_t k = ch->n_ops;
    if (master_key(ch->keys[k], sizeof ch->keys[k], m, DMH_KEY_BOUND, a->worker, NULL, NULL, err) <
        0) {
      rc = -1;
      break;
    }
    if (a->kind == DMH_SCHED_UNBIND) {
      ch->ops[ch->n_ops++] = (dmh_etcd_op){.kind = DMH_ETCD_DELETE, .key = DMH_ETCD_S(ch->keys[k])};
      dmh_log(DM_LOG_INFO, "master", "unbind source %s from worker %s (token %lld)", a->source,
              a->worker, (long long)token);
      continue;
    }
    dmh_cluster_binding b = {.leader = token};
    dm_strlcpy(b.source, a->source, sizeof b.source);
    ch->values[k] = dmh_cluster_binding_json(&b);
    ch->values[k + 1] = strdup(a->worker);
    if (!ch->values[k] || !ch->values[k + 1] ||
        master_key(ch->keys[k + 1], sizeof ch->keys[k + 1], m, DMH_KEY_LAST, a->source, NULL, NULL,
                   err) < 0) {
      if (!ch->values[k] || !ch->values[k + 1])
        dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory writing the scheduler's plan");
      ch->n_ops += 2; /* so chunk_reset frees both values */
      rc = -1;
      break;
    }
    ch->ops[k] = (dmh_etcd_op){
        .kind = DMH_ETCD_PUT, .key = DMH_ETCD_S(ch->keys[k]), .value = DMH_ETCD_S(ch->values[k])};
    ch->ops[k + 1] = (dmh_etcd_op){.kind = DMH_ETCD_PUT,
                                   .key = DMH_ETCD_S(ch->keys[k + 1]),
                                   .value = DMH_ETCD_S(ch->values[k + 1])};
    ch->n_ops += 2;
    /* a new binding clears the worker's relay request (start-relay / stop-relay acted on the
     * binding or the relay before it): the source file's enable-relay decides again */
    if (master_key(ch->keys[k + 2], sizeof ch->keys[k + 2], m, DMH_KEY_RELAY, a->worker, NULL, NULL,
                   err) < 0) {
      rc = -1;
      break;
    }
    ch->ops[ch->n_ops++] =
        (dmh_etcd_op){.kind = DMH_ETCD_DELETE, .key = DMH_ETCD_S(ch->keys[k + 2])};
    /* the worker is still unbound: a binding is never overwritten (its create_revision is the
     * fencing token the worker's subtasks carry) */
    dm_strlcpy(ch->bkeys[ch->n_cmps], ch->keys[k], sizeof ch->bkeys[0]);
    ch->cmps[ch->n_cmps] = (dmh_etcd_cmp){.key = DMH_ETCD_S(ch->bkeys[ch->n_cmps]),
                                          .target = DMH_ETCD_CMP_CREATE,
                                          .result = DMH_ETCD_EQUAL,
                                          .number = 0};
    ch->n_cmps++;
    dmh_log(DM_LOG_INFO, "master", "bind source %s to worker %s (token %lld)", a->source, a->worker,
            (long long)token);
  }
  if (rc == 0)
    rc = chunk_send(c, m, token, ch, leader_key, err);
  chunk_reset(ch);
  free(ch);
  return rc;
}

void master_metrics_workers(dmh_master *m, const master_snapshot *s) {
  static const char *const labels[] = {"worker"};
  dmh_metric_family *f;
  dm_error err;
  if (dmh_metrics_family(dmh_metrics_process(), "dm_master_worker_state", DM_METRIC_GAUGE,
                         "state of worker, -1 - unrecognized, 0 - offline, 1 - free, 2 - bound",
                         labels, 1, NULL, 0, &f, &err) < 0) {
    dmh_log(DM_LOG_WARN, "metrics", "%s", err.message);
    return;
  }
  /* a worker offline and unbound leaves the snapshot (no lease, no binding): it stays here at 0,
   * offline, as DM keeps an offline worker's state until it is removed (offline-member), so
   * DM_worker_offline can fire after its hour */
  size_t n = s->n_workers;
  const char **names = calloc(n + m->n_metrics_workers + 1, sizeof *names);
  double *v = calloc(n + m->n_metrics_workers + 1, sizeof *v);
  for (size_t i = 0; names && v && i < m->n_metrics_workers; i++) {
    bool listed = false;
    for (size_t j = 0; j < s->n_workers && !listed; j++)
      listed = strcmp(s->workers[j].name, m->metrics_workers[i]) == 0;
    if (!listed)
      names[n++] = m->metrics_workers[i]; /* v[] is 0: offline */
  }
  for (size_t i = 0; names && v && i < s->n_workers; i++) {
    bool seen = false;
    for (size_t j = 0; j < m->n_metrics_workers && !seen; j++)
      seen = strcmp(s->workers[i].name, m->metrics_workers[j]) == 0;
    char **grown =
        seen ? NULL
             : realloc(m->metrics_workers, (m->n_metrics_workers + 1) * sizeof *m->metrics_workers);
    if (grown) {
      m->metrics_workers = grown;
      if ((grown[m->n_metrics_workers] = strdup(s->workers[i].name)))
        m->n_metrics_workers++;
    }
  }
  for (size_t i = 0; names && v && i < s->n_workers; i++) {
    const dmh_sched_worker *w = &s->workers[i];
    names[i] = w->name;
    /* DM's numbers (dm/master/scheduler/worker.go): a worker keeping a relay is "relay" (1.5)
     * until it is bound too */
    switch (dmh_sched_stage(w)) {
    case DMH_WORKER_OFFLINE:
      v[i] = 0;
      break;
    case DMH_WORKER_FREE:
      v[i] = 1;
      break;
    case DMH_WORKER_BOUND:
      v[i] = 2;
      break;
    case DMH_WORKER_RELAY:
      v[i] = w->bound[0] ? 2 : 1.5;
      break;
    default:
      v[i] = -1;
    }
  }
  if (names && v)
    dmh_metric_set_all(f, m->metrics_owner, names, v, (int)n);
  free(names);
  free(v);
}

void master_metrics_leader(bool won) {
  dmh_metric_family *f;
  dm_error err;
  if (dmh_metrics_family(dmh_metrics_process(), "dm_master_start_leader_counter", DM_METRIC_COUNTER,
                         "counter of start leader", NULL, 0, NULL, 0, &f, &err) < 0) {
    dmh_log(DM_LOG_WARN, "metrics", "%s", err.message);
    return;
  }
  dmh_metric_add(f, 0, NULL, won ? 1 : 0); /* 0: the series shows before the first win */
}

void master_metrics_retire(dmh_master *m) {
  pthread_mutex_lock(&m->sched_lock);
  dmh_metrics_drop_owner(dmh_metrics_process(), m->metrics_owner);
  for (size_t i = 0; i < m->n_metrics_workers; i++)
    free(m->metrics_workers[i]);
  free(m->metrics_workers);
  m->metrics_workers = NULL;
  m->n_metrics_workers = 0;
  pthread_mutex_unlock(&m->sched_lock);
}

int master_schedule_once(dmh_master *m, dmh_etcd *c, int64_t token, int64_t *revision,
                         dm_error *err) {
  pthread_mutex_lock(&m->sched_lock);
  master_snapshot s;
  int rc = master_snapshot_read(c, m, &s, err);
  if (rc == 0) {
    *revision = s.revision;
    dmh_sched_action *acts = calloc(s.n_workers + 2 * s.n_sources + 1, sizeof *acts);
    if (!acts) {
      dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory planning");
      rc = -1;
    } else {
      size_t n = master_repair(&s, acts);
      int k = dmh_sched_plan(s.workers, s.n_workers, s.sources, s.n_sources, acts + n, err);
      if (k < 0)
        rc = -1;
      else if (atomic_load(&m->token) != token) {
        dm_error_set(err, DM_ERR_CLUSTER_FENCED, NULL, "master %s stopped leading while it planned",
                     m->name);
        rc = -1;
      } else
        rc = master_apply(c, m, token, acts, n + (size_t)k, err);
      if (rc == 0)
        master_metrics_workers(m, &s);
      free(acts);
    }
    master_snapshot_free(&s);
  }
  pthread_mutex_unlock(&m->sched_lock);
  return rc;
}

void master_metrics_worker_event(dmh_master *m, const char *type, double by) {
  static const char *const labels[] = {"type"};
  dmh_metric_family *f;
  dm_error err;
  if (dmh_metrics_family(dmh_metrics_process(), "dm_master_worker_event_error", DM_METRIC_COUNTER,
                         "number of error related to worker event, during handling or watching",
                         labels, 1, NULL, 0, &f, &err) < 0) {
    dmh_log(DM_LOG_WARN, "metrics", "%s", err.message);
    return;
  }
  const char *v[] = {type};
  dmh_metric_add(f, m->metrics_owner, v, by);
}

/* ---- the loop ---- */

typedef struct lead_watch {
  dmh_master *m;
  int64_t token;
  bool worker_event; /* the watch ended at a change of a worker's registration */
} lead_watch;

/* The watch's stream broke (a member killed or cut off) and is opened again: DM's "watch" error of
 * the workers' keep-alive watch, counted at once. */
static void lead_watch_broken(void *arg, const char *cause) {
  lead_watch *lw = arg;
  dmh_log(DM_LOG_WARN, "master", "watch of the cluster's keys broke (%s): opened again", cause);
  master_metrics_worker_event(lw->m, "watch", 1);
}

/* Ends the watch at the first change the scheduler cares about; stops the leader at once when
 * the leader key is deleted (its lease expired or was revoked) or is another's. */
static int lead_event(void *arg, const dmh_etcd_event *evs, size_t n) {
  lead_watch *lw = arg;
  char a[DMH_CLUSTER_NAME_MAX];
  for (size_t i = 0; i < n; i++) {
    const dmh_etcd_kv *kv = &evs[i].kv;
    if (dmh_cluster_key_parse(kv->key, kv->key_len, lw->m->prefix, DMH_KEY_LEADER, NULL, NULL,
                              NULL) == 0 &&
        (evs[i].type == DMH_ETCD_EV_DELETE || kv->create_revision != lw->token)) {
      int64_t t = lw->token;
      if (atomic_compare_exchange_strong(&lw->m->token, &t, 0))
        dmh_log(DM_LOG_WARN, "master", "%s stops leading at once (token %lld): the leader key %s",
                lw->m->name, (long long)lw->token,
                evs[i].type == DMH_ETCD_EV_DELETE ? "was deleted (its lease is gone)"
                                                  : "is another master's");
      return 1;
    }
    static const dmh_cluster_key_kind kinds[] = {DMH_KEY_WORKER, DMH_KEY_SOURCE, DMH_KEY_BOUND};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
      if (dmh_cluster_key_parse(kv->key, kv->key_len, lw->m->prefix, kinds[k], a, NULL, NULL) ==
          0) {
        lw->worker_event = kinds[k] == DMH_KEY_WORKER;
        return 1;
      }
  }
  return 0;
}

void master_lead(dmh_master *m, dmh_etcd *c, int64_t token) {
  dmh_log(DM_LOG_INFO, "master", "%s leads (token %lld): scheduling", m->name, (long long)token);
  char root[DMH_CLUSTER_KEY_MAX];
  snprintf(root, sizeof root, "%s/", m->prefix);
  /* DM's dm_master_worker_event_error: both types at 0 from the leadership on */
  master_metrics_worker_event(m, "handle", 0);
  master_metrics_worker_event(m, "watch", 0);
  bool worker_event = false; /* the round below handles a change of a worker's registration */
  while (atomic_load(&m->token) == token && !atomic_load(&m->stopping)) {
    int64_t rev = 0;
    dm_error err;
    if (master_schedule_once(m, c, token, &rev, &err) < 0) {
      if (worker_event && err.code != DM_ERR_CLUSTER_FENCED)
        master_metrics_worker_event(m, "handle", 1); /* DM's: the worker's event not handled */
      if (err.code == DM_ERR_CLUSTER_FENCED) {
        dmh_log(DM_LOG_WARN, "master", "%s", err.message);
        atomic_compare_exchange_strong(&m->token, &token, 0);
        return;
      }
      dmh_log(DM_LOG_WARN, "master", "scheduling round failed, again in 1 s: %s", err.message);
      for (int i = 0; i < 10 && atomic_load(&m->token) == token; i++)
        nanosleep(&(struct timespec){0, 100000000}, NULL);
      continue;
    }
    lead_watch lw = {.m = m, .token = token};
    dmh_etcd_watch_opts wo = {.prefix = 1,
                              .start_revision = rev + 1,
                              .stop = &m->watch_stop,
                              .broken = lead_watch_broken,
                              .broken_arg = &lw};
    if (dmh_etcd_watch(c, DMH_ETCD_S(root), &wo, lead_event, &lw, &err) < 0 &&
        atomic_load(&m->token) == token) {
      dmh_log(DM_LOG_WARN, "master", "watch of %s ended: %s", root, err.message);
      master_metrics_worker_event(m, "watch", 1); /* given up: the next round watches again */
    }
    worker_event = lw.worker_event;
  }
}
