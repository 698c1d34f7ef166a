/* The well-behaved slots of the conformance fixtures (conform_base.h). */
#include "conform_base.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int cb_setting(cb_unit *u, const char *name, int64_t def, int64_t *out, dm_error *err) {
  switch (u->host->cfg_int(u->ctx, name, out)) {
  case DM_CFG_OK:
    return 0;
  case DM_CFG_MISSING:
    *out = def;
    return 0;
  default:
    u->host->error_make(u->ctx, err, DM_ERR_CONFIG_INVALID, NULL,
                        "conform: setting `%s` must be an integer", name);
    return -1;
  }
}

int cb_setup(cb_unit *u, const dm_host_services *host, dm_ctx *ctx, dm_error *err) {
  u->host = host;
  u->ctx = ctx;
  atomic_init(&u->next, 1);
  atomic_init(&u->killed, false);
  snprintf(u->ckpt, sizeof u->ckpt, "%s/checkpoint", host->work_dir(ctx));
  if (cb_setting(u, "items", 0, &u->items, err) < 0 ||
      cb_setting(u, "item-ms", 5, &u->item_ms, err) < 0)
    return -1;
  pthread_mutex_init(&u->lock, NULL);
  return 0;
}

int cb_update(void *self, dm_error *err) {
  cb_unit *u = self;
  int64_t items, item_ms;
  if (cb_setting(u, "items", 0, &items, err) < 0 || cb_setting(u, "item-ms", 5, &item_ms, err) < 0)
    return -1;
  u->items = items;
  u->item_ms = item_ms;
  return 0;
}

int cb_init(const dm_host_services *host, dm_ctx *ctx, void **self, dm_error *err) {
  cb_unit *u = calloc(1, sizeof *u);
  if (!u) {
    host->error_make(ctx, err, DM_ERR_NO_MEMORY, NULL, "conform: no memory");
    return -1;
  }
  if (cb_setup(u, host, ctx, err) < 0) {
    free(u);
    return -1;
  }
  *self = u;
  return 0;
}

int cb_is_fresh(void *self, bool *fresh, dm_error *err) {
  cb_unit *u = self;
  FILE *f = fopen(u->ckpt, "re");
  if (!f) {
    *fresh = true;
    return errno == ENOENT ? 0
                           : (u->host->error_make(u->ctx, err, DM_ERR_IO, strerror(errno),
                                                  "conform: cannot read %s", u->ckpt),
                              -1);
  }
  long long next = 1;
  if (fscanf(f, "%lld", &next) == 1)
    atomic_store(&u->next, next);
  fclose(f);
  *fresh = false;
  return 0;
}

bool cb_step(cb_unit *u, dm_result *result) {
  if (u->items > 0 && atomic_load(&u->next) > u->items) {
    result->outcome = DM_OUTCOME_FINISHED;
    return false;
  }
  long long next = atomic_fetch_add(&u->next, 1) + 1;
  char line[32];
  int n = snprintf(line, sizeof line, "%lld\n", next);
  const char *step = "write";
  if (dm_fs_write_atomic(u->ckpt, line, (size_t)n, 0600, 0, &step) < 0) {
    result->outcome = DM_OUTCOME_ERROR;
    result->n_errors = 1;
    u->host->error_make(u->ctx, &result->errors[0], DM_ERR_IO, strerror(errno),
                        "conform: %s of %s failed", step, u->ckpt);
    return false;
  }
  return true;
}

void cb_process(void *self, dm_result *result) {
  cb_unit *u = self;
  for (;;) {
    if (u->host->wait_stop(u->ctx, (uint32_t)u->item_ms) || atomic_load(&u->killed)) {
      result->outcome = DM_OUTCOME_CANCELED;
      return;
    }
    if (!cb_step(u, result))
      return;
  }
}

void cb_pause(void *self) {
  (void)self;
}

void cb_status(void *self, dm_status_sink *sink) {
  cb_unit *u = self;
  sink->put_int(sink, "next", atomic_load(&u->next));
}

void cb_kill(void *self) {
  cb_unit *u = self;
  atomic_store(&u->killed, true);
}

void cb_close(void *self) {
  cb_unit *u = self;
  pthread_mutex_destroy(&u->lock);
  free(u);
}
