/* Breaks `kill`: kill does nothing, so a process the stop token does not reach runs on. */
#define CONFORM_NAME "kill-noop"
#include "conform_base.h"

static void kill_noop(void *self) {
  (void)self;
}

CONFORM_UNIT(cb_init, cb_process, NULL, cb_status, kill_noop, cb_is_fresh, cb_close)
