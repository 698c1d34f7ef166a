/* Breaks `fresh`: is_fresh_task says true even after work was checkpointed. */
#define CONFORM_NAME "fresh-always"
#include "conform_base.h"

static int fresh_always(void *self, bool *fresh, dm_error *err) {
  (void)self, (void)err;
  *fresh = true;
  return 0;
}

CONFORM_UNIT(cb_init, cb_process, NULL, cb_status, cb_kill, fresh_always, cb_close)
