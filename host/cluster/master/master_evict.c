/*
 * DM's operate-leader evict|cancel-evict on a master (master.h, dmh_master_evict): the evicted flag
 * the election loop reads before every campaign, the leadership's begin and end under evict_lock
 * (so that an evict never answers while a campaign just won is about to act), and the leader key
 * given back by a delete fenced by the token it was won with.
 */
#include "master_internal.h"

#include <errno.h>
#include <stdio.h>
#include <time.h>

#include "dmhost/clock.h"
#include "dmhost/sdk.h"
#include "log.h"

int master_give_back(dmh_etcd *c, const dmh_master *m, int64_t token, bool *deleted,
                     dm_error *err) {
  *deleted = false;
  char key[DMH_CLUSTER_KEY_MAX];
  if (master_key(key, sizeof key, m, DMH_KEY_LEADER, NULL, NULL, NULL, err) < 0)
    return -1;
  /* create_revision is the token: a newer leader's key has a higher one and stays */
  dmh_etcd_cmp cmp = {.key = DMH_ETCD_S(key), .target = DMH_ETCD_CMP_CREATE, .number = token};
  dmh_etcd_op del = {.kind = DMH_ETCD_DELETE, .key = DMH_ETCD_S(key)};
  dmh_etcd_txn_result tr = {0};
  if (dmh_etcd_txn(c, &cmp, 1, &del, 1, NULL, 0, &tr, err) < 0)
    return -1;
  *deleted = tr.succeeded != 0;
  dmh_etcd_txn_result_free(&tr);
  if (*deleted)
    dmh_log(DM_LOG_INFO, "master", "%s gave its leader key back (token %lld): evicted", m->name,
            (long long)token);
  return 0;
}

bool master_lead_begin(dmh_master *m, int64_t token) {
  pthread_mutex_lock(&m->evict_lock);
  m->held = token;
  bool lead = !atomic_load(&m->evicted);
  if (lead) {
    m->leading = true;
    atomic_store(&m->token, token);
  }
  pthread_mutex_unlock(&m->evict_lock);
  if (!lead)
    dmh_log(DM_LOG_INFO, "master", "%s won a campaign begun before its eviction: not leading",
            m->name);
  return lead;
}

void master_lead_end(dmh_master *m) {
  pthread_mutex_lock(&m->evict_lock);
  m->leading = false;
  pthread_cond_broadcast(&m->evict_cond);
  pthread_mutex_unlock(&m->evict_lock);
}

void master_evicted_wait(dmh_master *m, dmh_etcd *c) {
  pthread_mutex_lock(&m->evict_lock);
  int64_t held = m->held;
  pthread_mutex_unlock(&m->evict_lock);
  if (held) {
    bool deleted;
    dm_error err;
    int rc = master_give_back(c, m, held, &deleted, &err);
    if (rc < 0)
      dmh_log(DM_LOG_WARN, "master",
              "%s could not give its leader key back (token %lld), again "
              "in 1 s: %s",
              m->name, (long long)held, err.message);
    pthread_mutex_lock(&m->evict_lock);
    if (rc == 0 && m->held == held) {
      m->held = 0; /* deleted, or not its key any more: nothing of it left in etcd */
      pthread_cond_broadcast(&m->evict_cond);
    }
    pthread_mutex_unlock(&m->evict_lock);
  }
  pthread_mutex_lock(&m->evict_lock);
  if (atomic_load(&m->evicted) && !atomic_load(&m->stopping)) {
    struct timespec until = dm_clock_deadline(1000);
    pthread_cond_timedwait(&m->evict_cond, &m->evict_lock, &until);
  }
  pthread_mutex_unlock(&m->evict_lock);
}

int dmh_master_evict(dmh_master *m, bool on, bool *was_leader, bool *was_evicted, dm_error *err) {
  pthread_mutex_lock(&m->evict_lock);
  *was_leader = m->leading;
  *was_evicted = atomic_load(&m->evicted) != 0;
  if (!on) {
    atomic_store(&m->evicted, 0);
    pthread_cond_broadcast(&m->evict_cond); /* the election thread campaigns now */
    pthread_mutex_unlock(&m->evict_lock);
    if (*was_evicted)
      dmh_log(DM_LOG_INFO, "master", "%s: operate-leader cancel-evict, campaigning again", m->name);
    return 0;
  }
  atomic_store(&m->evicted, 1);
  /* Stop acting now: master_lead's loop and every fenced write test the token, the watch ends.
   * Under evict_lock no campaign can store a token meanwhile (master_lead_begin). */
  atomic_store(&m->token, 0);
  atomic_store(&m->watch_stop, 1);
  dmh_log(DM_LOG_INFO, "master", "%s: operate-leader evict (%s)", m->name,
          *was_leader ? "leading: stepping down" : "not leading");
  /* The answer waits for the scheduling round and the shard coordinator to return and for the
   * key to be given back: nothing of this leadership happens after it. */
  struct timespec until = dm_clock_deadline(MASTER_EVICT_WAIT_MS);
  int rc = 0;
  while ((m->leading || m->held) && !atomic_load(&m->stopping) && rc != ETIMEDOUT)
    rc = pthread_cond_timedwait(&m->evict_cond, &m->evict_lock, &until);
  bool leading = m->leading, held = m->held != 0;
  pthread_mutex_unlock(&m->evict_lock);
  if (leading || held) {
    dm_error_set(err, DM_ERR_CLUSTER_EVICT_PENDING, NULL,
                 "%s is evicted and will not campaign, but %s within %d s", m->name,
                 leading ? "its scheduling round did not end (etcd did not answer it)"
                         : "etcd did not confirm that its leader key was given back",
                 MASTER_EVICT_WAIT_MS / 1000);
    return -1;
  }
  return 0;
}

int master_ctl_operate_leader(void *ud, const dmh_control_cmd *cmd, json_object *args,
                              json_object *resp, dm_error *err) {
  master_ctl *x = ud;
  bool evict, was_leader, was_evicted;
  if (dmh_control_leader_op(cmd, args, &evict, err) < 0 ||
      dmh_master_evict(x->m, evict, &was_leader, &was_evicted, err) < 0)
    return -1;
  char msg[512];
  if (evict)
    snprintf(msg, sizeof msg, "%s %s; it will not campaign until operate-leader cancel-evict",
             x->m->name,
             was_leader ? "stopped leading and gave its leader key back"
                        : "is not the leader (evict acts on the master asked)");
  else
    snprintf(msg, sizeof msg, "%s %s", x->m->name,
             was_evicted ? "is no longer evicted: it campaigns again"
                         : "was not evicted: it campaigns as before");
  json_object_object_add(resp, "msg", json_object_new_string(msg));
  return 0;
}
