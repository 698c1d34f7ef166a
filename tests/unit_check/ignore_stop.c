/* Breaks `stop`: process sleeps between items without looking at the stop token; only kill
 * reaches it. */
#define CONFORM_NAME "ignore-stop"
#include <time.h>

#include "conform_base.h"

static void ignore_stop_process(void *self, dm_result *result) {
  cb_unit *u = self;
  while (!atomic_load(&u->killed)) {
    struct timespec ts = {0, (long)u->item_ms * 1000000L};
    nanosleep(&ts, NULL);
    if (!cb_step(u, result))
      return;
  }
  result->outcome = DM_OUTCOME_CANCELED;
}

CONFORM_UNIT(cb_init, ignore_stop_process, NULL, cb_status, cb_kill, cb_is_fresh, cb_close)
