/*
 * The master's life (master.h): its lease and registration, the election of the leader by a
 * create-only txn on <p>/leader, following the leader by a watch, and the guard that makes a
 * leader stop acting the moment its lease can no longer be trusted.
 */
#include "master_internal.h"

#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dmhost/clock.h"
#include "dmhost/sdk.h"
#include "log.h"
#include "metrics.h"
#include "secret.h"

static void elect_sleep_ms(long ms) {
  nanosleep(&(struct timespec){ms / 1000, (ms % 1000) * 1000000L}, NULL);
}

int64_t dmh_master_token(dmh_master *m) {
  return atomic_load(&m->token);
}

/* Is the lease alive and renewed recently enough for a leader to act? */
static bool elect_lease_ok(dmh_master *m, bool *lost_out) {
  int lost = 1;
  long age = 0;
  pthread_mutex_lock(&m->lock);
  if (m->keeper)
    age = dmh_etcd_keeper_age_ms(m->keeper, &lost, NULL);
  pthread_mutex_unlock(&m->lock);
  if (lost_out)
    *lost_out = lost != 0;
  return !lost && age < m->ttl_s * 1000 - MASTER_LEASE_MARGIN_MS;
}

/* Grant a lease, start its keeper and write <p>/master/<name> under it (create-only: a live
 * master of the same name keeps it). Under m->lock. */
static int elect_register(dmh_master *m, dmh_etcd *c, dm_error *err) {
  char key[DMH_CLUSTER_KEY_MAX];
  if (master_key(key, sizeof key, m, DMH_KEY_MASTER, m->name, NULL, NULL, err) < 0)
    return -1;
  int64_t id = 0;
  if (dmh_etcd_lease_grant(c, m->ttl_s, 0, &id, NULL, err) < 0)
    return -1;
  char *val = dmh_cluster_master_json(m->name, m->addr);
  if (!val) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory registering master %s", m->name);
    dmh_etcd_lease_revoke(c, id, &(dm_error){0});
    return -1;
  }
  dmh_etcd_cmp cmp = {.key = DMH_ETCD_S(key), .target = DMH_ETCD_CMP_CREATE, .number = 0};
  dmh_etcd_op put = {
      .kind = DMH_ETCD_PUT, .key = DMH_ETCD_S(key), .value = DMH_ETCD_S(val), .lease = id};
  dmh_etcd_op get = {.kind = DMH_ETCD_RANGE, .key = DMH_ETCD_S(key)};
  dmh_etcd_txn_result tr = {0};
  int rc = dmh_etcd_txn(c, &cmp, 1, &put, 1, &get, 1, &tr, err);
  free(val);
  if (rc == 0 && !tr.succeeded) {
    int64_t other = tr.n_results && tr.results[0].n_kvs ? tr.results[0].kvs[0].lease : 0;
    dm_error_set(err, DM_ERR_EXISTS, NULL,
                 "a master named %s is registered at %s already (lease %lld): give this one "
                 "another --name, or stop that one",
                 m->name, key, (long long)other);
    rc = -1;
  }
  dmh_etcd_txn_result_free(&tr);
  if (rc == 0)
    m->keeper = dmh_etcd_keeper_start(m->endpoints, &m->etcd_opts, id, m->ttl_s, err);
  if (rc < 0 || !m->keeper) {
    dmh_etcd_lease_revoke(c, id, &(dm_error){0});
    return -1;
  }
  m->lease_id = id;
  dmh_log(DM_LOG_INFO, "master", "%s registered at %s (lease %lld, TTL %lld s)", m->name, key,
          (long long)id, (long long)m->ttl_s);
  return 0;
}

int master_leader(dmh_etcd *c, const dmh_master *m, char *name, char *addr, int64_t *token,
                  dm_error *err) {
  name[0] = addr[0] = '\0';
  *token = 0;
  char key[DMH_CLUSTER_KEY_MAX];
  if (master_key(key, sizeof key, m, DMH_KEY_LEADER, NULL, NULL, NULL, err) < 0)
    return -1;
  dmh_etcd_result r = {0};
  if (dmh_etcd_range(c, DMH_ETCD_S(key), 0, 0, 0, &r, err) < 0)
    return -1;
  if (r.n_kvs == 1 && dmh_cluster_name_ok(r.kvs[0].value)) {
    dm_strlcpy(name, r.kvs[0].value, DMH_CLUSTER_NAME_MAX);
    *token = r.kvs[0].create_revision;
  }
  dmh_etcd_result_free(&r);
  if (!name[0])
    return 0;
  dmh_etcd_result mr = {0};
  if (master_key(key, sizeof key, m, DMH_KEY_MASTER, name, NULL, NULL, err) < 0 ||
      dmh_etcd_range(c, DMH_ETCD_S(key), 0, 0, 0, &mr, err) < 0)
    return -1;
  dmh_cluster_worker_info info;
  dm_error perr;
  if (mr.n_kvs == 1 &&
      dmh_cluster_master_parse(mr.kvs[0].value, mr.kvs[0].value_len, &info, &perr) == 0)
    dm_strlcpy(addr, info.addr, DMH_CLUSTER_NAME_MAX);
  dmh_etcd_result_free(&mr);
  return 0;
}

/* One campaign: 1 and *token when this master leads, 0 with *next (the revision to follow the
 * leader key from) when another does, -1 on error. */
static int elect_campaign(dmh_master *m, dmh_etcd *c, const char *key, int64_t *token,
                          int64_t *next, dm_error *err) {
  pthread_mutex_lock(&m->lock);
  int64_t lease = m->lease_id;
  pthread_mutex_unlock(&m->lock);
  dmh_etcd_cmp cmp = {.key = DMH_ETCD_S(key), .target = DMH_ETCD_CMP_CREATE, .number = 0};
  dmh_etcd_op put = {
      .kind = DMH_ETCD_PUT, .key = DMH_ETCD_S(key), .value = DMH_ETCD_S(m->name), .lease = lease};
  dmh_etcd_op get = {.kind = DMH_ETCD_RANGE, .key = DMH_ETCD_S(key)};
  dmh_etcd_txn_result tr = {0};
  if (dmh_etcd_txn(c, &cmp, 1, &put, 1, &get, 1, &tr, err) < 0)
    return -1;
  int rc = 0;
  *next = tr.revision + 1;
  if (tr.succeeded) {
    *token = tr.revision; /* the put is the txn's only write: the key's create_revision */
    rc = 1;
  } else if (tr.n_results == 1 && tr.results[0].n_kvs == 1 && tr.results[0].kvs[0].lease == lease &&
             elect_lease_ok(m, NULL)) {
    /* ours already: an earlier campaign whose answer was lost (DM_ERR_ETCD_OUTCOME_UNKNOWN) */
    *token = tr.results[0].kvs[0].create_revision;
    rc = 1;
  } else if (!(tr.n_results == 1 && tr.results[0].n_kvs == 1)) {
    *next = 0; /* deleted since: campaign again at once */
  }
  dmh_etcd_txn_result_free(&tr);
  return rc;
}

static int elect_leader_gone(void *arg, const dmh_etcd_event *evs, size_t n) {
  (void)arg;
  for (size_t i = 0; i < n; i++)
    if (evs[i].type == DMH_ETCD_EV_DELETE)
      return 1;
  return 0;
}

static void *elect_main(void *arg) {
  dmh_master *m = arg;
  dm_error err;
  dmh_etcd *c = dmh_etcd_open(m->endpoints, &m->etcd_opts, &err);
  char key[DMH_CLUSTER_KEY_MAX];
  if (!c || master_key(key, sizeof key, m, DMH_KEY_LEADER, NULL, NULL, NULL, &err) < 0) {
    dmh_log(DM_LOG_ERROR, "master", "election cannot run: %s", err.message);
    dmh_etcd_close(c);
    return NULL;
  }
  bool gone = false; /* etcd said the lease is gone before the keeper noticed */
  master_metrics_leader(false);
  while (!atomic_load(&m->stopping)) {
    atomic_store(&m->watch_stop, 0);
    bool lost = false;
    elect_lease_ok(m, &lost);
    if (lost || gone) {
      gone = false; /* expired or revoked behind our back: a new lease, registered again */
      pthread_mutex_lock(&m->lock);
      dmh_etcd_keeper_stop(m->keeper);
      m->keeper = NULL;
      int rc = atomic_load(&m->stopping) ? -1 : elect_register(m, c, &err);
      pthread_mutex_unlock(&m->lock);
      if (rc < 0) {
        if (atomic_load(&m->stopping))
          break;
        dmh_log(DM_LOG_WARN, "master", "%s lost its lease; registering again in 1 s: %s", m->name,
                err.message);
        elect_sleep_ms(1000);
        continue;
      }
    }
    if (atomic_load(&m->evicted)) {
      master_evicted_wait(m, c); /* operate-leader evict: no campaign until cancel-evict */
      continue;
    }
    int64_t token = 0, next = 0;
    int won = elect_campaign(m, c, key, &token, &next, &err);
    if (won < 0) {
      if (err.code == DM_ERR_ETCD_LEASE_NOT_FOUND) {
        gone = true; /* register again with a new lease, now */
        continue;
      }
      dmh_log(DM_LOG_WARN, "master", "campaign failed, again in 1 s: %s", err.message);
      elect_sleep_ms(1000);
      continue;
    }
    if (won) {
      if (!master_lead_begin(m, token))
        continue; /* evicted while campaigning: the loop gives the key back */
      master_metrics_leader(true);
      master_shard_run shard;
      master_shard_start(m, token, &shard); /* the shard DDL locks, beside the scheduling */
      master_lead(m, c, token);
      master_shard_stop(&shard);
      master_metrics_retire(m);
      dmh_log(DM_LOG_INFO, "master", "%s stopped leading (token %lld)", m->name, (long long)token);
      /* a copy: a failed compare-exchange writes the current value (0 after an evict) into its
       * `expected`, and `token` is what the give-back is fenced by (master_lead_begin kept it) */
      int64_t expected = token;
      atomic_compare_exchange_strong(&m->token, &expected, 0);
      master_lead_end(m);
      continue;
    }
    if (next == 0)
      continue;
    dmh_etcd_watch_opts wo = {.start_revision = next, .stop = &m->watch_stop};
    if (dmh_etcd_watch(c, DMH_ETCD_S(key), &wo, elect_leader_gone, NULL, &err) < 0 &&
        !atomic_load(&m->stopping)) {
      dmh_log(DM_LOG_WARN, "master", "watch of %s ended: %s", key, err.message);
      elect_sleep_ms(500);
    }
  }
  dmh_etcd_close(c);
  return NULL;
}

/* Stops a leader from acting the moment its lease is in doubt or the leader key is not its own,
 * and ends the election thread's watch then and at shutdown. */
static void *guard_main(void *arg) {
  dmh_master *m = arg;
  dm_error err;
  dmh_etcd *c = dmh_etcd_open(m->endpoints, &m->etcd_opts, &err);
  char key[DMH_CLUSTER_KEY_MAX];
  master_key(key, sizeof key, m, DMH_KEY_LEADER, NULL, NULL, NULL, &err);
  int tick = 0;
  while (!atomic_load(&m->stopping)) {
    elect_sleep_ms(100);
    tick++;
    int64_t token = atomic_load(&m->token);
    bool lost = false;
    bool ok = elect_lease_ok(m, &lost);
    if (lost)
      atomic_store(&m->watch_stop, 1); /* the election thread registers again */
    if (token == 0)
      continue;
    const char *why = ok ? NULL : lost ? "its lease is gone" : "its lease was not renewed in time";
    dmh_etcd_result r = {0};
    if (!why && c && tick % 10 == 0 && dmh_etcd_range(c, DMH_ETCD_S(key), 0, 0, 0, &r, &err) == 0) {
      if (r.n_kvs != 1 || r.kvs[0].create_revision != token)
        why = "the leader key is not its own any more";
      dmh_etcd_result_free(&r);
    }
    if (why && atomic_compare_exchange_strong(&m->token, &token, 0)) {
      dmh_log(DM_LOG_WARN, "master", "%s stops leading at once (token %lld): %s", m->name,
              (long long)token, why);
      atomic_store(&m->watch_stop, 1);
    }
  }
  atomic_store(&m->watch_stop, 1);
  dmh_etcd_close(c);
  return NULL;
}

int dmh_master_start(const dmh_master_opts *o, dmh_master **out, dm_error *err) {
  *out = NULL;
  const char *prefix = o->prefix ? o->prefix : DMH_CLUSTER_PREFIX_DEFAULT;
  if (!dmh_cluster_name_ok(o->name)) {
    dm_error_set(err, DM_ERR_CONFIG_INVALID, NULL,
                 "master name \"%s\" is not usable: 1 to 127 of A-Z a-z 0-9 _ . -",
                 o->name ? o->name : "");
    return -1;
  }
  if (strlen(prefix) >= DMH_CLUSTER_KEY_MAX / 2 || prefix[0] != '/' ||
      prefix[strlen(prefix) - 1] == '/') {
    dm_error_set(err, DM_ERR_CONFIG_INVALID, NULL,
                 "--etcd-prefix \"%s\": give a key prefix starting with '/' and not ending with "
                 "one, under %d bytes (default %s)",
                 prefix, DMH_CLUSTER_KEY_MAX / 2, DMH_CLUSTER_PREFIX_DEFAULT);
    return -1;
  }
  if (o->ttl_s != 0 && o->ttl_s < 10) {
    dm_error_set(err, DM_ERR_CONFIG_INVALID, NULL,
                 "lease TTL %lld s is too short: use 10 s or more (shorter leases were lost in "
                 "etcd leader failovers)",
                 (long long)o->ttl_s);
    return -1;
  }
  dmh_master *m = calloc(1, sizeof *m);
  if (!m || !(m->endpoints = strdup(o->endpoints ? o->endpoints : ""))) {
    free(m);
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory starting master %s", o->name);
    return -1;
  }
  dm_strlcpy(m->name, o->name, sizeof m->name);
  dm_strlcpy(m->addr, o->addr ? o->addr : "", sizeof m->addr);
  dm_strlcpy(m->prefix, prefix, sizeof m->prefix);
  m->ttl_s = o->ttl_s ? o->ttl_s : 10;
  m->metrics_owner = dmh_metrics_owner_new();
  m->forward = o->forward;
  m->forward_ud = o->forward_ud;
  m->secrets_dir = o->secrets_dir ? strdup(o->secrets_dir) : NULL;
  m->settings = o->settings ? strdup(o->settings) : NULL;
  m->allow_submitted_unit_paths = o->allow_submitted_unit_paths;
  if (o->etcd)
    m->etcd_opts = *o->etcd;
  if (o->cluster_key) {
    memcpy(m->cluster_key, o->cluster_key, sizeof m->cluster_key);
    m->has_cluster_key = true;
    /* the precheck decrypts the stored files' passwords with it (secret.h) */
    dmh_secret_cluster_key_set(o->cluster_key);
  }
  pthread_mutex_init(&m->lock, NULL);
  pthread_mutex_init(&m->sched_lock, NULL);
  pthread_mutex_init(&m->shard_lock, NULL);
  pthread_mutex_init(&m->evict_lock, NULL);
  dm_cond_init_monotonic(&m->evict_cond); /* master_evict.c's waits */
  dmh_etcd *c = dmh_etcd_open(m->endpoints, &m->etcd_opts, err);
  int rc = c ? elect_register(m, c, err) : -1;
  dmh_etcd_close(c);
  if (rc < 0) {
    dmh_master_stop(m, false);
    return -1;
  }
  if (pthread_create(&m->elect_thread, NULL, elect_main, m) != 0) {
    dm_error_set(err, DM_ERR_INTERNAL, NULL, "cannot start master %s's election thread", m->name);
    dmh_master_stop(m, true);
    return -1;
  }
  if (pthread_create(&m->guard_thread, NULL, guard_main, m) != 0) {
    atomic_store(&m->stopping, 1);
    atomic_store(&m->watch_stop, 1);
    pthread_join(m->elect_thread, NULL);
    dm_error_set(err, DM_ERR_INTERNAL, NULL, "cannot start master %s's guard thread", m->name);
    dmh_master_stop(m, true);
    return -1;
  }
  m->threads_started = true;
  *out = m;
  return 0;
}

void dmh_master_resign(dmh_master *m) {
  atomic_store(&m->stopping, 1);
  atomic_store(&m->token, 0); /* stop acting before anything else */
  atomic_store(&m->watch_stop, 1);
  /* revoking the lease deletes the leader and master keys now: the others campaign at once */
  pthread_mutex_lock(&m->lock);
  if (!m->resigned) {
    m->resigned = true;
    dmh_etcd_keeper_stop(m->keeper);
    m->keeper = NULL;
    dm_error err;
    dmh_etcd *c = m->lease_id ? dmh_etcd_open(m->endpoints, &m->etcd_opts, &err) : NULL;
    if (c && dmh_etcd_lease_revoke(c, m->lease_id, &err) < 0 &&
        err.code != DM_ERR_ETCD_LEASE_NOT_FOUND)
      dmh_log(DM_LOG_WARN, "master", "%s could not resign (revoke of lease %lld): %s", m->name,
              (long long)m->lease_id, err.message);
    else if (c)
      dmh_log(DM_LOG_INFO, "master", "%s resigned (lease %lld revoked)", m->name,
              (long long)m->lease_id);
    dmh_etcd_close(c);
  }
  pthread_mutex_unlock(&m->lock);
}

void dmh_master_stop(dmh_master *m, bool resign) {
  if (!m)
    return;
  atomic_store(&m->stopping, 1);
  atomic_store(&m->token, 0);
  atomic_store(&m->watch_stop, 1);
  if (resign)
    dmh_master_resign(m);
  pthread_mutex_lock(&m->evict_lock); /* an evicted election thread waits on it */
  pthread_cond_broadcast(&m->evict_cond);
  pthread_mutex_unlock(&m->evict_lock);
  if (m->threads_started) {
    pthread_join(m->elect_thread, NULL);
    pthread_join(m->guard_thread, NULL);
  }
  dmh_etcd_keeper_stop(m->keeper);
  pthread_mutex_destroy(&m->lock);
  pthread_mutex_destroy(&m->sched_lock);
  pthread_mutex_destroy(&m->shard_lock);
  pthread_mutex_destroy(&m->evict_lock);
  pthread_cond_destroy(&m->evict_cond);
  free(m->endpoints);
  free(m->secrets_dir);
  free(m->settings);
  OPENSSL_cleanse(m->cluster_key, sizeof m->cluster_key);
  free(m);
}
