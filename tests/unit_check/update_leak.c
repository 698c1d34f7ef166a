/* Breaks `update`: a setting it refuses makes update return -1 without freeing what it read the
 * settings into. */
#define CONFORM_NAME "update-leak"
#define CONFORM_UPDATE update_leak
#include <stdlib.h>

#include "conform_base.h"

static int update_leak(void *self, dm_error *err);

CONFORM_UNIT(cb_init, cb_process, NULL, cb_status, cb_kill, cb_is_fresh, cb_close)

static int update_leak(void *self, dm_error *err) {
  cb_unit *u = self;
  cb_unit *next = calloc(1, sizeof *next);
  if (!next)
    return -1;
  if (cb_setup(next, u->host, u->ctx, err) < 0)
    return -1; /* the breach: next is not freed */
  u->items = next->items;
  u->item_ms = next->item_ms;
  pthread_mutex_destroy(&next->lock);
  free(next);
  return 0;
}
