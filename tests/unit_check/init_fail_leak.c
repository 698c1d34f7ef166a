/* Breaks `init-fail`: a setting it refuses makes init return -1 without freeing its instance. */
#define CONFORM_NAME "init-fail-leak"
#include <stdlib.h>

#include "conform_base.h"

static int init_fail_leak(const dm_host_services *host, dm_ctx *ctx, void **self, dm_error *err) {
  cb_unit *u = calloc(1, sizeof *u);
  if (!u) {
    host->error_make(ctx, err, DM_ERR_NO_MEMORY, NULL, "conform: no memory");
    return -1;
  }
  if (cb_setup(u, host, ctx, err) < 0)
    return -1; /* the breach: u is not freed */
  *self = u;
  return 0;
}

CONFORM_UNIT(init_fail_leak, cb_process, NULL, cb_status, cb_kill, cb_is_fresh, cb_close)
