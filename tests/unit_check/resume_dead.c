/* Breaks `pause-resume`: resume returns canceled at once, though the stop token has not fired. */
#define CONFORM_NAME "resume-dead"
#include "conform_base.h"

static void resume_dead(void *self, dm_result *result) {
  (void)self;
  result->outcome = DM_OUTCOME_CANCELED;
}

CONFORM_UNIT(cb_init, cb_process, resume_dead, cb_status, cb_kill, cb_is_fresh, cb_close)
