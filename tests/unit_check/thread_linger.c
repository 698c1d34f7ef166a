/* Breaks `sequential`: process starts a helper thread and returns without joining it, so the
 * helper still runs when the next call begins. */
#define CONFORM_NAME "thread-linger"
#include <time.h>

#include "conform_base.h"

static void *linger(void *arg) {
  (void)arg;
  struct timespec ts = {0, 300 * 1000000L};
  nanosleep(&ts, NULL);
  return NULL;
}

static void thread_linger_process(void *self, dm_result *result) {
  pthread_t t;
  if (pthread_create(&t, NULL, linger, NULL) == 0)
    pthread_detach(t); /* the breach: never joined */
  cb_process(self, result);
}

CONFORM_UNIT(cb_init, thread_linger_process, NULL, cb_status, cb_kill, cb_is_fresh, cb_close)
