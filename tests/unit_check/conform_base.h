/*
 * The well-behaved unit the conformance fixtures start from (conform_base.c): it counts items,
 * one every `item-ms`, checkpointing the next in <work_dir>/checkpoint, until `items` are done
 * (0: never, like a sync). Every fixture of this folder takes these slots but the one whose rule
 * it breaks, so dmhost-unit-check must fail it on exactly that check.
 *
 * Settings (its section, both optional): items = 0; item-ms = 5;
 */
#ifndef CONFORM_BASE_H
#define CONFORM_BASE_H

#include <pthread.h>
#include <stdatomic.h>

#include "dmhost/dmhost.h"

typedef struct cb_unit {
  const dm_host_services *host;
  dm_ctx *ctx;
  int64_t items, item_ms;
  char ckpt[4096];
  atomic_llong next; /* the next item, 1-based */
  atomic_bool killed;
  pthread_mutex_t lock; /* taken by no base slot; a fixture's process may hold it */
} cb_unit;

/* init without the allocation: reads the settings into *u. 0, or -1 with *err. */
int cb_setup(cb_unit *u, const dm_host_services *host, dm_ctx *ctx, dm_error *err);
int cb_init(const dm_host_services *host, dm_ctx *ctx, void **self, dm_error *err);
int cb_is_fresh(void *self, bool *fresh, dm_error *err);
/* One item: false when the run must end (*result filled). */
bool cb_step(cb_unit *u, dm_result *result);
void cb_process(void *self, dm_result *result);
void cb_pause(void *self);
void cb_status(void *self, dm_status_sink *sink);
void cb_kill(void *self);
void cb_close(void *self);

/* update: re-reads both settings; the old ones stay when one is refused. */
int cb_update(void *self, dm_error *err);

/* The descriptor of a fixture: the base's slots, each given here so a fixture names its own. The
 * update slot is CONFORM_UPDATE, NULL unless the fixture defines it before this header (the
 * good unit and the one that breaks `update`): a unit without it passes `update` unchecked, so a
 * fixture breaking another slot fails that check alone. */
#ifndef CONFORM_UPDATE
#define CONFORM_UPDATE NULL
#endif
#define CONFORM_UNIT(init_, process_, resume_, status_, kill_, fresh_, close_)                     \
  static const dm_unit_descriptor conform_unit = {                                                 \
      DM_UNIT_DESCRIPTOR_HEADER,                                                                   \
      .kind = DM_UNIT_CUSTOM, /* runs until stopped, as no dump does (the fresh check) */          \
      .kind_name = "conform",                                                                      \
      .name = "conform-" CONFORM_NAME,                                                             \
      .version = "1",                                                                              \
      .ops = {.init = init_,                                                                       \
              .process = process_,                                                                 \
              .pause = cb_pause,                                                                   \
              .resume = resume_,                                                                   \
              .close = close_,                                                                     \
              .kill = kill_,                                                                       \
              .is_fresh_task = fresh_,                                                             \
              .status = status_,                                                                   \
              .update = CONFORM_UPDATE},                                                           \
  };                                                                                               \
  DM_UNIT_EXPORT(conform_unit)

#endif
