/* The sockets a unit's kill shuts down (conn_kill.h). */
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "dmhost/conn_kill.h"

struct dm_conn_kill {
  pthread_mutex_t lock;
  unsigned flags;
  int n;
  int fds[]; /* -1: free */
};

dm_conn_kill *dm_conn_kill_new(int capacity, unsigned flags) {
  if (capacity < 1)
    capacity = 1;
  dm_conn_kill *k = malloc(sizeof *k + (size_t)capacity * sizeof k->fds[0]);
  if (!k)
    return NULL;
  pthread_mutex_init(&k->lock, NULL);
  k->flags = flags;
  k->n = capacity;
  for (int i = 0; i < capacity; i++)
    k->fds[i] = -1;
  return k;
}

void dm_conn_kill_free(dm_conn_kill *k) {
  if (!k)
    return;
  pthread_mutex_destroy(&k->lock);
  free(k);
}

int dm_conn_kill_add(dm_conn_kill *k, int fd) {
  int rc = -1;
  pthread_mutex_lock(&k->lock);
  for (int i = 0; i < k->n; i++)
    if (k->fds[i] < 0) {
      k->fds[i] = fd;
      rc = 0;
      break;
    }
  pthread_mutex_unlock(&k->lock);
  return rc;
}

void dm_conn_kill_remove(dm_conn_kill *k, int fd) {
  pthread_mutex_lock(&k->lock);
  for (int i = 0; i < k->n; i++)
    if (k->fds[i] == fd) {
      k->fds[i] = -1;
      break;
    }
  pthread_mutex_unlock(&k->lock);
}

static void conn_reset_on_close(int fd) {
  struct linger l = {.l_onoff = 1, .l_linger = 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
}

/* Under the lock. */
static void conn_shutdown(const dm_conn_kill *k, int fd) {
  if (k->flags & DM_CONN_KILL_RESET)
    conn_reset_on_close(fd);
  shutdown(fd, SHUT_RDWR);
}

void dm_conn_kill_one(dm_conn_kill *k, int fd) {
  pthread_mutex_lock(&k->lock);
  for (int i = 0; i < k->n; i++)
    if (k->fds[i] == fd && fd >= 0) {
      conn_shutdown(k, fd);
      break;
    }
  pthread_mutex_unlock(&k->lock);
}

void dm_conn_kill_all(dm_conn_kill *k) {
  /* under the lock, so no socket is closed (and its number reused) while it is shut down */
  pthread_mutex_lock(&k->lock);
  for (int i = 0; i < k->n; i++)
    if (k->fds[i] >= 0)
      conn_shutdown(k, k->fds[i]);
  pthread_mutex_unlock(&k->lock);
}

void dm_conn_kill_reset_on_close(dm_conn_kill *k, int fd) {
  pthread_mutex_lock(&k->lock);
  for (int i = 0; i < k->n; i++)
    if (k->fds[i] == fd && fd >= 0) {
      conn_reset_on_close(fd);
      break;
    }
  pthread_mutex_unlock(&k->lock);
}
