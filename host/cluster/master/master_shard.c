/*
 * The leader's shard DDL coordinator (docs/shard.md "The lock", "Pessimistic mode"; docs/cluster.md
 * "Shard DDL locks"): the cluster side of what registry_shard.c does in process.
 *
 * The lock rules are shard.h's keeper, never a copy: each round reads every key under
 * <p>/shard/ at one revision R (tables, infos, operations: the keeper's records, written by the
 * workers, cluster_worker_shard.c, and by earlier rounds), loads them into a new keeper (which,
 * as after DM's recoverLocks, finishes what is due: exec to the owner once all arrived, skips
 * once the owner is done, resolution once all are done), and writes the difference between the
 * keeper's records and etcd's:
 *   - an operation the keeper holds and etcd lacks: created, create-only (a txn comparing the
 *     key's create_revision with 0), so an operation a worker marked done is never overwritten;
 *   - an operation or info etcd holds and the keeper dropped (its lock resolved, an exec
 *     withdrawn): deleted if its mod_revision is still the one read.
 * Every write also compares the leader key's create_revision with the leadership token
 * (docs/cluster.md "Fencing"): a deposed leader writes nothing. Then it watches <p>/shard/ from
 * R + 1 and runs again at the first change (its own writes come back once, to no action). So a
 * new leader resumes half-arrived locks from etcd alone (DM's doc.go steps 1-3, 9).
 *
 * Operation IDs: the keeper numbers its new operations from nextOpID = R + 1, and each operation
 * is created by a txn of its own (one revision each), so the next round's R is at least the
 * highest ID written and IDs never repeat.
 *
 * Threads: a thread of its own while the master leads (master_shard_start/stop, from the
 * election thread), with its own etcd client. `shard_lock` serializes its rounds with the
 * shard-ddl-lock unlock handler, which takes the same steps.
 */
#include "master_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dmhost/sdk.h"
#include "log.h"
#include "metrics.h"
#include "shard.h"
#include "shard_metrics.h"

/* The snapshot: the records by kind, and the kvs they came from. */
typedef struct shard_snap {
  int64_t revision;
  dmh_etcd_result r;
  json_object *root; /* shard.h's persisted shape, every task */
} shard_snap;

static void snap_free(shard_snap *s) {
  dmh_etcd_result_free(&s->r);
  json_object_put(s->root);
  memset(s, 0, sizeof *s);
}

static json_object *snap_parse(const dmh_etcd_kv *kv) {
  json_tokener *tok = json_tokener_new();
  json_object *o = tok ? json_tokener_parse_ex(tok, kv->value, (int)kv->value_len) : NULL;
  if (tok)
    json_tokener_free(tok);
  return o;
}

/* Reads <p>/shard/ (at `rev`, 0: now) into the keeper's persisted shape. */
static int snap_read(dmh_etcd *c, const dmh_master *m, int64_t rev, shard_snap *s, dm_error *err) {
  char pfx[DMH_CLUSTER_KEY_MAX];
  memset(s, 0, sizeof *s);
  if (dmh_cluster_shard_prefix(pfx, sizeof pfx, m->prefix) < 0) {
    dm_error_set(err, DM_ERR_INTERNAL, NULL, "the shard prefix does not fit");
    return -1;
  }
  if (dmh_etcd_range(c, DMH_ETCD_S(pfx), 1, 0, rev, &s->r, err) < 0)
    return -1;
  s->revision = s->r.revision;
  json_object *sources = json_object_new_array(), *infos = json_object_new_array(),
              *ops = json_object_new_array();
  s->root = json_object_new_object();
  if (!s->root || !sources || !infos || !ops) {
    json_object_put(sources), json_object_put(infos), json_object_put(ops);
    snap_free(s);
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory reading the shard keys");
    return -1;
  }
  json_object_object_add(s->root, "version", json_object_new_int(1));
  json_object_object_add(s->root, "nextOpID", json_object_new_int64(s->revision + 1));
  json_object_object_add(s->root, "sources", sources);
  json_object_object_add(s->root, "infos", infos);
  json_object_object_add(s->root, "ops", ops);
  char a[DMH_CLUSTER_NAME_MAX], b[DMH_CLUSTER_NAME_MAX];
  for (size_t i = 0; i < s->r.n_kvs; i++) {
    const dmh_etcd_kv *kv = &s->r.kvs[i];
    json_object *v = NULL;
    if (dmh_cluster_key_parse(kv->key, kv->key_len, m->prefix, DMH_KEY_SHARD_TABLES, a, b, NULL) ==
        0) {
      if ((v = snap_parse(kv)) && json_object_is_type(v, json_type_array))
        for (size_t j = 0; j < json_object_array_length(v); j++)
          json_object_array_add(sources, json_object_get(json_object_array_get_idx(v, j)));
      else
        dmh_log(DM_LOG_WARN, "master", "shard: %s holds no tables list: ignored", kv->key);
      json_object_put(v);
      continue;
    }
    bool info =
        dmh_cluster_key_parse(kv->key, kv->key_len, m->prefix, DMH_KEY_SHARD_INFO, a, b, NULL) == 0;
    if (info ||
        dmh_cluster_key_parse(kv->key, kv->key_len, m->prefix, DMH_KEY_SHARD_OP, a, b, NULL) == 0) {
      if ((v = snap_parse(kv)) && json_object_is_type(v, json_type_object))
        json_object_array_add(info ? infos : ops, v);
      else {
        dmh_log(DM_LOG_WARN, "master", "shard: %s holds no record: ignored", kv->key);
        json_object_put(v);
      }
    }
  }
  return 0;
}

/* A keeper loaded from the snapshot (the lock rules finish what is due). */
static dmh_shard_keeper *snap_keeper(const shard_snap *s, dm_error *err) {
  dmh_shard_keeper *k = dmh_shard_keeper_new();
  if (!k) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory loading the shard locks");
    return NULL;
  }
  if (dmh_shard_load_json(k, s->root, err) < 0) {
    dmh_shard_keeper_free(k);
    return NULL;
  }
  return k;
}

static const char *rec_str(json_object *o, const char *field) {
  json_object *f = NULL;
  return o && json_object_object_get_ex(o, field, &f) && json_object_is_type(f, json_type_string)
             ? json_object_get_string(f)
             : "";
}

static int64_t rec_id(json_object *o) {
  json_object *f = NULL;
  return o && json_object_object_get_ex(o, "id", &f) ? json_object_get_int64(f) : -1;
}

/* The record of the keeper's list `field` for (task, source), or NULL. */
static json_object *want_rec(json_object *want, const char *field, const char *task,
                             const char *source) {
  json_object *arr = NULL;
  if (!json_object_object_get_ex(want, field, &arr))
    return NULL;
  for (size_t i = 0; i < json_object_array_length(arr); i++) {
    json_object *r = json_object_array_get_idx(arr, i);
    if (strcmp(rec_str(r, "task"), task) == 0 && strcmp(rec_str(r, "source"), source) == 0)
      return r;
  }
  return NULL;
}

/* Deletes, in txns of at most 100 keys, each if its mod_revision is as read. */
#define SHARD_DEL_CHUNK 100
static int shard_delete(dmh_etcd *c, const char *leader_key, int64_t token,
                        const dmh_etcd_kv *const *kvs, size_t n, dm_error *err) {
  for (size_t at = 0; at < n; at += SHARD_DEL_CHUNK) {
    size_t k = n - at < SHARD_DEL_CHUNK ? n - at : SHARD_DEL_CHUNK;
    dmh_etcd_cmp cmps[SHARD_DEL_CHUNK + 1];
    dmh_etcd_op ops[SHARD_DEL_CHUNK];
    cmps[0] = (dmh_etcd_cmp){.key = DMH_ETCD_S(leader_key),
                             .target = DMH_ETCD_CMP_CREATE,
                             .result = DMH_ETCD_EQUAL,
                             .number = token};
    for (size_t i = 0; i < k; i++) {
      const dmh_etcd_kv *kv = kvs[at + i];
      cmps[i + 1] = (dmh_etcd_cmp){.key = {kv->key, kv->key_len},
                                   .target = DMH_ETCD_CMP_MOD,
                                   .result = DMH_ETCD_EQUAL,
                                   .number = kv->mod_revision};
      ops[i] = (dmh_etcd_op){.kind = DMH_ETCD_DELETE, .key = {kv->key, kv->key_len}};
    }
    dmh_etcd_txn_result tr = {0};
    if (dmh_etcd_txn(c, cmps, k + 1, ops, k, NULL, 0, &tr, err) < 0)
      return -1;
    if (tr.succeeded)
      for (size_t i = 0; i < k; i++)
        dmh_log(DM_LOG_INFO, "master", "shard: deleted %s (lock resolved)", kvs[at + i]->key);
    dmh_etcd_txn_result_free(&tr); /* else: changed meanwhile; the next round sees it */
  }
  return 0;
}

/* Writes the keeper's records (want) where etcd (s) differs. 0, or -1 with err
 * (DM_ERR_CLUSTER_FENCED when the token is not the leader's any more). */
static int shard_apply(dmh_etcd *c, const dmh_master *m, int64_t token, const shard_snap *s,
                       json_object *want, dm_error *err) {
  char leader_key[DMH_CLUSTER_KEY_MAX], a[DMH_CLUSTER_NAME_MAX], b[DMH_CLUSTER_NAME_MAX];
  if (master_key(leader_key, sizeof leader_key, m, DMH_KEY_LEADER, NULL, NULL, NULL, err) < 0)
    return -1;
  const dmh_etcd_kv **del = calloc(s->r.n_kvs + 1, sizeof *del);
  if (!del) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory writing the shard locks");
    return -1;
  }
  size_t n_del = 0;
  /* etcd's infos and operations the keeper no longer holds (or holds another operation) */
  for (size_t i = 0; i < s->r.n_kvs; i++) {
    const dmh_etcd_kv *kv = &s->r.kvs[i];
    bool info =
        dmh_cluster_key_parse(kv->key, kv->key_len, m->prefix, DMH_KEY_SHARD_INFO, a, b, NULL) == 0;
    bool op = !info && dmh_cluster_key_parse(kv->key, kv->key_len, m->prefix, DMH_KEY_SHARD_OP, a,
                                             b, NULL) == 0;
    if (!info && !op)
      continue;
    json_object *w = want_rec(want, info ? "infos" : "ops", a, b);
    bool keep = w != NULL;
    if (keep && op) {
      json_object *have = snap_parse(kv);
      keep = rec_id(have) == rec_id(w);
      json_object_put(have);
    }
    if (!keep)
      del[n_del++] = kv;
  }
  int rc = shard_delete(c, leader_key, token, del, n_del, err);
  free(del);
  /* the keeper's operations etcd lacks: created, never overwriting */
  json_object *ops = NULL;
  json_object_object_get_ex(want, "ops", &ops);
  for (size_t i = 0; rc == 0 && ops && i < json_object_array_length(ops); i++) {
    json_object *w = json_object_array_get_idx(ops, i);
    char key[DMH_CLUSTER_KEY_MAX];
    bool there = false;
    if (master_key(key, sizeof key, m, DMH_KEY_SHARD_OP, rec_str(w, "task"), rec_str(w, "source"),
                   NULL, err) < 0) {
      rc = -1;
      break;
    }
    for (size_t j = 0; j < s->r.n_kvs && !there; j++)
      there = strcmp(s->r.kvs[j].key, key) == 0;
    if (there)
      continue; /* the same operation, or one deleted above: the next round creates it */
    const char *text = json_object_to_json_string_ext(w, JSON_C_TO_STRING_PLAIN);
    dmh_etcd_cmp cmps[2] = {{.key = DMH_ETCD_S(leader_key),
                             .target = DMH_ETCD_CMP_CREATE,
                             .result = DMH_ETCD_EQUAL,
                             .number = token},
                            {.key = DMH_ETCD_S(key),
                             .target = DMH_ETCD_CMP_CREATE,
                             .result = DMH_ETCD_EQUAL,
                             .number = 0}};
    dmh_etcd_op put = {.kind = DMH_ETCD_PUT, .key = DMH_ETCD_S(key), .value = DMH_ETCD_S(text)};
    dmh_etcd_op check = {.kind = DMH_ETCD_RANGE, .key = DMH_ETCD_S(leader_key)};
    dmh_etcd_txn_result tr = {0};
    if (dmh_etcd_txn(c, cmps, 2, &put, 1, &check, 1, &tr, err) < 0) {
      rc = -1;
      break;
    }
    if (tr.succeeded) {
      dmh_log(DM_LOG_INFO, "master", "shard: %s %s to %s (operation %lld, token %lld)",
              rec_str(w, "lockID"),
              json_object_get_boolean(json_object_object_get(w, "exec")) ? "exec" : "skip",
              rec_str(w, "source"), (long long)rec_id(w), (long long)token);
    } else if (tr.n_results != 1 || tr.results[0].n_kvs != 1 ||
               tr.results[0].kvs[0].create_revision != token) {
      dm_error_set(err, DM_ERR_CLUSTER_FENCED, NULL,
                   "master %s: shard operation write refused: it led with token %lld, the "
                   "leader key is another's now",
                   m->name, (long long)token);
      rc = -1;
    }
    dmh_etcd_txn_result_free(&tr);
  }
  return rc;
}

/* One round: read, load, write what is due. Under m->shard_lock. *rev: the snapshot's. */
static int shard_round(master_shard_run *run, dmh_etcd *c, int64_t *rev, dm_error *err) {
  dmh_master *m = run->m;
  int64_t token = run->token;
  shard_snap s;
  if (snap_read(c, m, 0, &s, err) < 0)
    return -1;
  *rev = s.revision;
  dmh_shard_keeper *k = snap_keeper(&s, err);
  json_object *want = k ? dmh_shard_to_json(k, NULL) : NULL;
  int rc = -1;
  if (k && !want)
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory writing the shard locks");
  else if (want)
    rc = atomic_load(&m->token) == token ? shard_apply(c, m, token, &s, want, err) : 0;
  if (rc == 0 && k) /* the locks as written: DM's pending DDL gauge, the leader's */
    dmh_shard_metrics_pending(k, run->metrics_owner, &run->metrics_tasks, &run->n_metrics_tasks);
  json_object_put(want);
  dmh_shard_keeper_free(k);
  snap_free(&s);
  return rc;
}

/* ---- the leader's thread ---- */

static int shard_event(void *arg, const dmh_etcd_event *evs, size_t n) {
  (void)arg, (void)evs;
  return n > 0; /* any change: a round */
}

static void shard_sleep(master_shard_run *run, long ms) {
  for (long t = 0; t < ms && !atomic_load(&run->stop); t += 100)
    nanosleep(&(struct timespec){0, 100000000}, NULL);
}

static void *shard_thread(void *arg) {
  master_shard_run *run = arg;
  dmh_master *m = run->m;
  dm_error err;
  dmh_etcd *c = dmh_etcd_open(m->endpoints, &m->etcd_opts, &err);
  if (!c) {
    dmh_log(DM_LOG_ERROR, "master", "shard: no etcd client: %s", err.message);
    return NULL;
  }
  char pfx[DMH_CLUSTER_KEY_MAX];
  dmh_cluster_shard_prefix(pfx, sizeof pfx, m->prefix);
  dmh_log(DM_LOG_INFO, "master", "shard: %s coordinates the shard DDL locks (token %lld)", m->name,
          (long long)run->token);
  while (!atomic_load(&run->stop) && atomic_load(&m->token) == run->token) {
    int64_t rev = 0;
    pthread_mutex_lock(&m->shard_lock);
    int rc = shard_round(run, c, &rev, &err);
    pthread_mutex_unlock(&m->shard_lock);
    if (rc < 0) {
      if (err.code == DM_ERR_CLUSTER_FENCED) {
        dmh_log(DM_LOG_WARN, "master", "shard: %s", err.message);
        break;
      }
      dmh_log(DM_LOG_WARN, "master", "shard: round failed, again in 1 s: %s", err.message);
      shard_sleep(run, 1000);
      continue;
    }
    dmh_etcd_watch_opts wo = {.prefix = 1, .start_revision = rev + 1, .stop = &run->stop};
    if (dmh_etcd_watch(c, DMH_ETCD_S(pfx), &wo, shard_event, NULL, &err) < 0 &&
        !atomic_load(&run->stop)) {
      dmh_log(DM_LOG_WARN, "master", "shard: watch of %s ended: %s", pfx, err.message);
      shard_sleep(run, 1000);
    }
  }
  dmh_etcd_close(c);
  return NULL;
}

int master_shard_start(dmh_master *m, int64_t token, master_shard_run *run) {
  memset(run, 0, sizeof *run);
  run->m = m;
  run->token = token;
  run->metrics_owner = dmh_metrics_owner_new();
  atomic_store(&run->stop, 0);
  if (pthread_create(&run->thr, NULL, shard_thread, run) != 0) {
    dmh_log(DM_LOG_ERROR, "master", "shard: cannot start the coordinator's thread");
    return -1;
  }
  run->started = true;
  return 0;
}

void master_shard_stop(master_shard_run *run) {
  atomic_store(&run->stop, 1);
  if (run->started)
    pthread_join(run->thr, NULL);
  run->started = false;
  /* a master that no longer leads shows no locks (DM resets them when its leader retires) */
  dmh_shard_metrics_forget(run->metrics_owner, &run->metrics_tasks, &run->n_metrics_tasks);
}

/* ---- shard-ddl-lock ---- */

/* One step of the leader on the keeper loaded from etcd, written back: under shard_lock, as a
 * round. step may be NULL (a round). *state: the lock's state after it (-1: no such lock). */
typedef int (*shard_step_fn)(dmh_shard_keeper *k, const char *lock_id, const char *owner,
                             dm_error *err);

static int shard_step(master_ctl *x, int64_t token, const char *lock_id, const char *owner,
                      shard_step_fn step, int *state, dm_error *err) {
  dmh_master *m = x->m;
  pthread_mutex_lock(&m->shard_lock);
  shard_snap s;
  int rc = snap_read(x->c, m, 0, &s, err);
  if (rc == 0) {
    dmh_shard_keeper *k = snap_keeper(&s, err);
    json_object *want = NULL;
    rc = !k || (step && step(k, lock_id, owner, err) < 0) ? -1 : 0;
    if (rc == 0 && step && !(want = dmh_shard_to_json(k, NULL))) {
      dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory unlocking");
      rc = -1;
    }
    if (rc == 0 && want)
      rc = shard_apply(x->c, m, token, &s, want, err);
    if (rc == 0)
      *state = dmh_shard_lock_state(k, lock_id, NULL, 0);
    json_object_put(want);
    dmh_shard_keeper_free(k);
    snap_free(&s);
  }
  pthread_mutex_unlock(&m->shard_lock);
  return rc;
}

static int step_unlock(dmh_shard_keeper *k, const char *id, const char *owner, dm_error *err) {
  return dmh_shard_unlock(k, id, owner, err);
}
static int step_revert(dmh_shard_keeper *k, const char *id, const char *owner, dm_error *err) {
  (void)owner, (void)err;
  dmh_shard_unlock_revert(k, id);
  return 0;
}
static int step_skip_rest(dmh_shard_keeper *k, const char *id, const char *owner, dm_error *err) {
  (void)owner, (void)err;
  dmh_shard_unlock_skip_rest(k, id);
  return 0;
}
static int step_remove(dmh_shard_keeper *k, const char *id, const char *owner, dm_error *err) {
  (void)owner, (void)err;
  dmh_shard_remove_lock(k, id);
  return 0;
}

/* Until the lock leaves state `from` (read from etcd every 100 ms) or wait_ms pass: its state
 * then (-1: resolved), or -2 with err when etcd cannot be read. */
static int shard_wait_state(master_ctl *x, const char *lock_id, int from, uint32_t wait_ms,
                            dm_error *err) {
  long t0 = 0;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  t0 = (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
  for (;;) {
    int st = -1;
    if (shard_step(x, 0, lock_id, NULL, NULL, &st, err) < 0)
      return -2;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    if (st != from || (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 - t0 >= (long)wait_ms)
      return st;
    nanosleep(&(struct timespec){0, 100000000}, NULL);
  }
}

/* DM's UnlockLock as the daemon's (registry_shard.c dmh_shard_local_unlock): forced synced with
 * the arrived sources, exec to the owner; its done awaited up to wait_ms (none: the exec is
 * withdrawn and DM_ERR_SHARD_OWNER_EXEC, unless force_remove sends the skips anyway); then the
 * others' up to wait_ms; force_remove deletes the lock at the end whatever is left. */
static int shard_unlock(master_ctl *x, const char *lock_id, const char *owner, bool force_remove,
                        uint32_t wait_ms, json_object *resp, dm_error *err) {
  int64_t token = dmh_master_token(x->m);
  int st = -1;
  if (shard_step(x, token, lock_id, owner, step_unlock, &st, err) < 0)
    return -1;
  dmh_log(DM_LOG_INFO, "master", "shard: lock %s: unlock by hand, waiting for the owner", lock_id);
  st = shard_wait_state(x, lock_id, DMH_SHARD_SYNCED, wait_ms, err);
  if (st == -2)
    return -1;
  if (st == DMH_SHARD_SYNCED && !force_remove) {
    if (shard_step(x, token, lock_id, NULL, step_revert, &st, err) < 0)
      return -1;
    dm_error_set(err, DM_ERR_SHARD_OWNER_EXEC, NULL,
                 "the owner of lock %s did not run its DDL within %u ms; the lock waits for its "
                 "sources again",
                 lock_id, wait_ms);
    return -1;
  }
  if (st == DMH_SHARD_SYNCED) {
    dmh_log(DM_LOG_WARN, "master", "shard: lock %s: the owner did not run its DDL; --force-remove",
            lock_id);
    if (shard_step(x, token, lock_id, NULL, step_skip_rest, &st, err) < 0)
      return -1;
  }
  if (st >= 0 && (st = shard_wait_state(x, lock_id, st, wait_ms, err)) == -2)
    return -1;
  if (st >= 0 && force_remove) {
    if (shard_step(x, token, lock_id, NULL, step_remove, &st, err) < 0)
      return -1;
    st = -1;
  }
  json_object_object_add(resp, "lock", json_object_new_string(lock_id));
  json_object_object_add(
      resp, "state",
      json_object_new_string(st < 0 ? "resolved" : dmh_shard_state_name((dmh_shard_state)st)));
  return 0;
}

/* shard-ddl-lock [TASK]: the locks from etcd (any master); shard-ddl-lock unlock LOCK_ID
 * [-o SOURCE] [--force-remove]: the leader's (a follower forwards it). The request is checked as
 * the daemon's (dmh_shard_cmd_parse). */
int master_ctl_shard_ddl_lock(void *ud, const dmh_control_cmd *cmd, json_object *args,
                              json_object *resp, dm_error *err) {
  master_ctl *x = ud;
  dmh_master *m = x->m;
  dmh_shard_cmd req;
  if (dmh_shard_cmd_parse(cmd, args, &req, err) < 0)
    return -1;
  if (!req.unlock) {
    if (req.name) { /* the daemon's answer to an unknown task */
      char tkey[DMH_CLUSTER_KEY_MAX];
      dmh_etcd_result r;
      if (master_key(tkey, sizeof tkey, m, DMH_KEY_TASK, req.name, NULL, NULL, err) < 0 ||
          dmh_etcd_range(x->c, DMH_ETCD_S(tkey), 0, 0, 0, &r, err) < 0)
        return -1;
      size_t n = r.n_kvs;
      dmh_etcd_result_free(&r);
      if (n == 0) {
        dm_error_set(err, DM_ERR_NOT_FOUND, NULL, "shard-ddl-lock: no task %s in the cluster",
                     req.name);
        return -1;
      }
    }
    shard_snap s;
    if (snap_read(x->c, m, 0, &s, err) < 0)
      return -1;
    dmh_shard_keeper *k = snap_keeper(&s, err);
    json_object *locks = k ? dmh_shard_locks_json(k, req.name) : NULL;
    dmh_shard_keeper_free(k);
    snap_free(&s);
    if (!locks) {
      if (k)
        dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory listing the shard locks");
      return -1;
    }
    json_object_object_add(resp, "locks", locks);
    return 0;
  }
  if (req.action)
    return dmh_control_bad(err,
                           "shard-ddl-lock unlock: -a/-s/-d/-t release one table of an optimistic "
                           "lock; %s is served as a pessimistic lock here (usage: %s)",
                           req.name, cmd->usage);
  int fwd = master_ctl_to_leader(x, cmd, args, resp, err);
  if (fwd != 0)
    return fwd < 0 ? -1 : 0;
  return shard_unlock(x, req.name, req.owner && req.owner[0] ? req.owner : NULL, req.force_remove,
                      MASTER_SHARD_UNLOCK_WAIT_MS, resp, err);
}
