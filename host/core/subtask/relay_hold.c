/*
 * Mode all with the relay on: the task's place in the relay log, held by the host while the dump
 * and the load run, until the sync registers its own checkpoint.
 *
 * The sync starts reading the relay log at the dump's position. Before this, nothing registered
 * that position while dump and load ran (hours on a big database): a purge then (hourly by age, or
 * for free space) could remove the relay file holding it, and the sync failed for good with the
 * binlog purged. Now the host writes the task's reader file (dmhost/relay_reader.h, the format the
 * sync writes too):
 *  - before the dump runs, at the relay's current file if the task has no reader file yet: the
 *    dump's position, taken later, is at or after it;
 *  - when a unit before the sync finishes with the dump's position (the dump's, or the load's in
 *    mode load&sync), at the file of that position, before the next unit starts.
 * The sync's first checkpoint rewrites the file; stop-task removes it (registry_tasks.c).
 */
#include <stdio.h>
#include <string.h>

#include "dmhost/relay_folder.h"
#include "dmhost/relay_reader.h"
#include "dmhost/sdk.h"
#include "log.h"
#include "supervisor_internal.h"
#include "unit_ctx.h"

/* The sync unit's context when the task reads the relay log; NULL otherwise. */
static const dm_ctx *hold_sync_ctx(const dmh_subtask *st) {
  for (int i = 0; i < st->n_units; i++)
    if (st->units[i].kind == DM_UNIT_SYNC)
      return st->units[i].ctx->relay_dir && st->units[i].ctx->task_name[0] ? st->units[i].ctx
                                                                           : NULL;
  return NULL;
}

int sup_relay_hold_begin(dmh_subtask *st, dm_error *err) {
  const dm_ctx *c = hold_sync_ctx(st);
  char sub[256], file[256];
  if (!c || dm_relay_reader_read(c->relay_dir, c->task_name, sub, sizeof sub, file, sizeof file))
    return 0; /* no relay, or held already (by an earlier run of this dump, or by the sync) */
  if (dm_relay_current(c->relay_dir, sub, sizeof sub, file, sizeof file) < 0)
    return 0; /* the relay has written nothing yet: nothing can be purged */
  if (dm_relay_reader_register(c->relay_dir, c->task_name, sub, file, c->file_mode, err) < 0)
    return -1;
  dmh_log(DM_LOG_INFO, st->name,
          "relay files from %s/%s on are held for this task until the dump "
          "reports its position",
          sub, file);
  return 0;
}

int sup_relay_hold_at(dmh_subtask *st, const dm_position *p, dm_error *err) {
  const dm_ctx *c = hold_sync_ctx(st);
  char sub[256];
  if (!c || !p->name[0])
    return 0;
  if (dm_relay_locate(c->relay_dir, p->name, sub, sizeof sub) < 0) {
    dmh_log(DM_LOG_WARN, st->name,
            "the relay log in %s has no sub-folder yet: the dump's position %s:%llu is not held "
            "against purge",
            c->relay_dir, p->name, (unsigned long long)p->pos);
    return 0;
  }
  char held_sub[256], held_file[256];
  if (dm_relay_reader_read(c->relay_dir, c->task_name, held_sub, sizeof held_sub, held_file,
                           sizeof held_file) &&
      strcmp(held_sub, sub) == 0 && strcmp(held_file, p->name) == 0)
    return 0; /* held there already (each unit before the sync passes here): nothing to write */
  if (dm_relay_reader_register(c->relay_dir, c->task_name, sub, p->name, c->file_mode, err) < 0)
    return -1;
  dmh_log(DM_LOG_INFO, st->name,
          "relay files from %s/%s on (the dump's position) are held for "
          "this task until its sync registers its own",
          sub, p->name);
  return 0;
}
