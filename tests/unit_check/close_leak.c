/* Breaks `init-close`: close leaves the instance allocated. */
#define CONFORM_NAME "close-leak"
#include "conform_base.h"

static void close_leak(void *self) {
  cb_unit *u = self;
  pthread_mutex_destroy(&u->lock); /* the breach: u is not freed */
}

CONFORM_UNIT(cb_init, cb_process, NULL, cb_status, cb_kill, cb_is_fresh, close_leak)
