/* Breaks `status`: status takes a lock that process holds for its whole run. */
#define CONFORM_NAME "status-lock"
#include "conform_base.h"

static void status_lock_process(void *self, dm_result *result) {
  cb_unit *u = self;
  pthread_mutex_lock(&u->lock);
  cb_process(self, result);
  pthread_mutex_unlock(&u->lock);
}

static void status_lock_status(void *self, dm_status_sink *sink) {
  cb_unit *u = self;
  pthread_mutex_lock(&u->lock);
  cb_status(self, sink);
  pthread_mutex_unlock(&u->lock);
}

CONFORM_UNIT(cb_init, status_lock_process, NULL, status_lock_status, cb_kill, cb_is_fresh, cb_close)
