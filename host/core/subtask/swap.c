/*
 * Hot-swap: replace the build of one unit of a running subtask. The new file is loaded under a
 * unique name (the dynamic loader would hand back the old library for the same path and inode) and
 * checked before anything is touched, so a refused build leaves the old one running. Then, at a
 * safe point: pause (the runner has returned and the checkpoint is saved), close the old instance,
 * init the new one, resume. The new instance starts with process, which reads the checkpoint, so
 * nothing is lost or done twice. The old library is unloaded when its last reference goes.
 */
#include <stdio.h>
#include <string.h>

#include "dmhost/sdk.h"
#include "log.h"
#include "metrics_host.h"
#include "supervisor_internal.h"

/* Point u at lib (taking over the reference); returns the old library. */
static dmh_unit_lib *swap_replace(dmh_subtask *st, sup_unit *u, dmh_unit_lib *lib) {
  pthread_rwlock_wrlock(&u->life);
  pthread_mutex_lock(&st->state_lock);
  dmh_unit_lib *old = u->lib;
  u->lib = lib;
  u->desc = dmh_unit_lib_descriptor(lib);
  u->handover = dmh_unit_handover(u->desc);
  memset(&u->rate, 0, sizeof u->rate);
  pthread_mutex_unlock(&st->state_lock);
  pthread_rwlock_unlock(&u->life);
  return old;
}

static int swap_unit(dmh_subtask *st, const char *name, const char *path, dm_error *err) {
  sup_unit *u = NULL;
  for (int i = 0; i < st->n_units; i++)
    if (strcmp(st->units[i].section, name) == 0)
      u = &st->units[i];
  if (!u) {
    dm_error_set(err, DM_ERR_NO_SUCH_UNIT, NULL, "task %s has no %s unit in its chain", st->name,
                 name);
    return -1;
  }
  dm_unit_kind kind = u->kind;
  dmh_load_opts lo = {.kind = kind,
                      .kind_name = kind == DM_UNIT_CUSTOM ? u->section : NULL,
                      .unique_copy = true,
                      .trusted_only = true,
                      .folders = st->unit_folders};
  dmh_unit_lib *lib;
  dm_error lerr;
  if (dmh_unit_lib_open(path, &lo, &lib, &lerr) < 0) {
    if (lerr.code == DM_ERR_UNTRUSTED_FILE || lerr.code == DM_ERR_UNIT_FOLDER) {
      /* Its own code: the fix is about the file's owner and mode, not about the build. */
      dm_error_set(err, lerr.code, NULL,
                   "swap of the %s unit of task %s refused (the old build keeps running): %s", name,
                   st->name, lerr.message);
      return -1;
    }
    char code[32];
    snprintf(code, sizeof code, "code %d", lerr.code);
    dm_error_set(err, DM_ERR_SWAP, code, "swap of the %s unit of task %s refused: %s", name,
                 st->name, lerr.message);
    return -1;
  }
  /* [cmd] field read without cmd_lock: only a swap changes it, and swaps of one task are serialized
   * by the registry's task lock */
  uint32_t want = u->handover, got = dmh_unit_handover(dmh_unit_lib_descriptor(lib));
  if (got != want) {
    dmh_unit_lib_unref(lib);
    dm_error_set(err, DM_ERR_SWAP, NULL,
                 "swap of the %s unit of task %s refused (the old build keeps running): the new "
                 "build's handover is 0x%x, the running one's 0x%x; a swap cannot change what a "
                 "unit takes from or gives to its chain (stop the task and start it again)",
                 name, st->name, (unsigned)got, (unsigned)want);
    return -1;
  }

  pthread_mutex_lock(&st->cmd_lock);
  pthread_mutex_lock(&st->state_lock);
  dmh_stage stage = st->stage;
  pthread_mutex_unlock(&st->state_lock);
  if (stage != DMH_STAGE_RUNNING && stage != DMH_STAGE_PAUSED && stage != DMH_STAGE_NEW &&
      stage != DMH_STAGE_STOPPED && stage != DMH_STAGE_FINISHED) {
    pthread_mutex_unlock(&st->cmd_lock);
    dmh_unit_lib_unref(lib);
    dm_error_set(err, DM_ERR_STAGE, NULL, "cannot swap a unit of task %s in stage %s", st->name,
                 dmh_stage_name(stage));
    return -1;
  }
  bool was_running = stage == DMH_STAGE_RUNNING;
  if (was_running && sup_pause_locked(st, false, err) < 0) {
    pthread_mutex_unlock(&st->cmd_lock);
    dmh_unit_lib_unref(lib);
    return -1;
  }
  pthread_rwlock_rdlock(&u->life);
  bool live = u->self != NULL;
  pthread_rwlock_unlock(&u->life);

  const dm_unit_descriptor *od = u->desc;
  dmh_log(DM_LOG_INFO, st->name, "swapping the %s unit: %s %s -> %s %s (%s)", u->section, od->name,
          od->version, dmh_unit_lib_descriptor(lib)->name, dmh_unit_lib_descriptor(lib)->version,
          path);
  int rc = 0;
  if (live) {
    sup_unit_close(st, u);
    dmh_unit_lib *old = swap_replace(st, u, lib);
    if (sup_unit_init(st, u, err) < 0) {
      /* the new build would not start: go back to the old one so the task keeps going */
      char why[DM_ERROR_MESSAGE_MAX];
      dm_strlcpy(why, err->message, sizeof why);
      dmh_unit_lib *newer = swap_replace(st, u, old);
      dmh_unit_lib_unref(newer);
      dm_error reinit;
      if (sup_unit_init(st, u, &reinit) < 0) {
        *err = reinit;
        pthread_mutex_unlock(&st->cmd_lock);
        return -1;
      }
      dm_error_set(err, DM_ERR_SWAP, why,
                   "swap of the %s unit of task %s refused: the new build failed init; the old "
                   "build was restored",
                   u->section, st->name);
      rc = -1;
    } else {
      dmh_unit_lib_unref(old);
    }
  } else {
    dmh_unit_lib_unref(swap_replace(st, u, lib));
  }
  if (was_running) {
    dm_error rerr;
    if (sup_resume_locked(st, false, &rerr) < 0) {
      *err = rerr;
      rc = -1;
    }
  }
  pthread_mutex_unlock(&st->cmd_lock);
  return rc;
}

int dmh_subtask_swap_unit(dmh_subtask *st, const char *name, const char *path, dm_error *err) {
  int rc = swap_unit(st, name, path, err);
  for (int i = 0; i < st->n_units; i++)
    if (strcmp(st->units[i].section, name) == 0)
      dmh_metrics_unit_swap(st->units[i].ctx, name, rc == 0);
  return rc;
}
