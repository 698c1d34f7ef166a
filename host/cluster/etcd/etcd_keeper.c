/* The etcd client's lease keeper: one thread renewing one lease, asked how fresh the lease is. */
#define DMH_ETCD_INTERNAL
#include "etcd.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "dmhost/clock.h"
#include "dmhost/sdk.h"

struct dmh_etcd_keeper {
  dmh_etcd *client; /* the thread's own */
  int64_t id;
  long every_ms;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cond; /* on CLOCK_MONOTONIC: signalled by stop */
  /* fields below: under mu */
  int stop;
  int lost;
  long last_ok_ms;
  dm_error last_err;
};

static long keeper_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits ms or until stop; whether to go on. Called with mu held. */
static int keeper_wait(dmh_etcd_keeper *k, long ms) {
  struct timespec until = dm_clock_deadline(ms);
  while (!k->stop && pthread_cond_timedwait(&k->cond, &k->mu, &until) == 0)
    ;
  return !k->stop;
}

static void *keeper_run(void *arg) {
  dmh_etcd_keeper *k = arg;
  long wait = k->every_ms;
  pthread_mutex_lock(&k->mu);
  while (keeper_wait(k, wait)) {
    pthread_mutex_unlock(&k->mu);
    dm_error err;
    int rc = dmh_etcd_lease_keepalive(k->client, k->id, NULL, &err);
    pthread_mutex_lock(&k->mu);
    if (rc == 0) {
      k->last_ok_ms = keeper_now_ms();
      k->last_err.code = 0;
      wait = k->every_ms;
      continue;
    }
    k->last_err = err;
    if (err.code == DM_ERR_ETCD_LEASE_NOT_FOUND) {
      k->lost = 1;
      break;
    }
    wait = 1000 < k->every_ms ? 1000 : k->every_ms;
  }
  pthread_mutex_unlock(&k->mu);
  return NULL;
}

dmh_etcd_keeper *dmh_etcd_keeper_start(const char *endpoints, const dmh_etcd_opts *opts,
                                       int64_t lease_id, int64_t ttl_s, dm_error *err) {
  dmh_etcd_keeper *k = calloc(1, sizeof *k);
  if (!k) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "lease keeper: out of memory");
    return NULL;
  }
  k->client = dmh_etcd_open(endpoints, opts, err);
  if (!k->client) {
    free(k);
    return NULL;
  }
  k->id = lease_id;
  k->every_ms = ttl_s > 0 ? (long)ttl_s * 1000 / 3 : 1000;
  k->last_ok_ms = keeper_now_ms();
  dm_cond_init_monotonic(&k->cond);
  pthread_mutex_init(&k->mu, NULL);
  if (pthread_create(&k->thread, NULL, keeper_run, k) != 0) {
    pthread_cond_destroy(&k->cond);
    pthread_mutex_destroy(&k->mu);
    dmh_etcd_close(k->client);
    free(k);
    dm_error_set(err, DM_ERR_INTERNAL, NULL, "lease keeper: no thread could be started");
    return NULL;
  }
  return k;
}

long dmh_etcd_keeper_age_ms(dmh_etcd_keeper *k, int *lost, dm_error *last_err) {
  pthread_mutex_lock(&k->mu);
  long age = keeper_now_ms() - k->last_ok_ms;
  if (lost)
    *lost = k->lost;
  if (last_err)
    *last_err = k->last_err;
  pthread_mutex_unlock(&k->mu);
  return age;
}

void dmh_etcd_keeper_stop(dmh_etcd_keeper *k) {
  if (!k)
    return;
  pthread_mutex_lock(&k->mu);
  k->stop = 1;
  pthread_cond_signal(&k->cond);
  pthread_mutex_unlock(&k->mu);
  pthread_join(k->thread, NULL);
  pthread_cond_destroy(&k->cond);
  pthread_mutex_destroy(&k->mu);
  dmh_etcd_close(k->client);
  free(k);
}
