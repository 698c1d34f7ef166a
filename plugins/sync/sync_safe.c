/*
 * The automatic safe mode at a start (DM's enableSafeModeInitializationPhase, dm/syncer/
 * safe_mode.go), beside the task's own `safe-mode` (always on):
 *
 *   - the global row holds a safe-mode exit point ahead of the start (a dump with consistency
 *     none, or a stop inside that window): safe mode until the reading passes it; with
 *     `safe-mode-duration = "0s"` the run fails, as DM's ErrSyncerReprocessWithSafeModeFail;
 *   - the exit point equals the start: the last run stopped cleanly there (every stop that drains
 *     the workers writes it, as DM's Run saves and flushes its exit point on the way out): no
 *     automatic safe mode; the point is cleared;
 *   - none (a first start, or a start after a crash, an error or a kill -9; an exit point behind
 *     the start is one already passed, DM clears those): safe mode for `safe-mode-duration`
 *     of wall time from the start, when it is set (DM's default is 60s, 2 x its
 *     checkpoint-flush-interval, because its checkpoint lags the target; dmhost's is committed
 *     with every batch, so unset means none); a batch whose first change arrived in that window
 *     is applied in safe mode.
 *
 * Status shows which one holds (sync_unit.c: safeMode, safeModeReason, safeModeUntil).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "sync.h"

/* The status' copy of the automatic safe mode (status reads it beside the coordinator). */
static void sync_safe_publish(sync_unit *u, int kind, int64_t until_wall_ms) {
  pthread_mutex_lock(&u->lock);
  u->safe_auto = kind;
  u->safe_auto_exit = u->safe_exit;
  u->safe_auto_until_ms = until_wall_ms;
  pthread_mutex_unlock(&u->lock);
}

static int64_t sync_wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int sync_safe_start(sync_unit *u, MYSQL *tc, const dm_position *start, bool recovering,
                    bool *until_exit, int64_t *until_ns, dm_error *err) {
  char buf[DM_POSITION_NAME_MAX + 32], buf2[DM_POSITION_NAME_MAX + 32];
  *until_exit = false;
  *until_ns = 0;
  if (u->safe_exit.name[0]) {
    int c = dm_position_compare_file(start, &u->safe_exit);
    if (c < 0) {
      if (u->cfg.safe_mode_duration_ms == 0) {
        u->host->error_make(
            u->ctx, err, DM_ERR_CONFIG_INVALID, NULL,
            "sync: the checkpoint's safe-mode exit point %s is ahead of the start %s:%" PRIu64
            " (the changes between were maybe applied already), but safe-mode-duration is \"0s\": "
            "give it a duration other than 0s (DM's ErrSyncerReprocessWithSafeModeFail)",
            dm_position_format(&u->safe_exit, buf, sizeof buf), start->name, start->pos);
        return -1;
      }
      *until_exit = true;
      u->host->logf(u->ctx, DM_LOG_INFO,
                    "sync: safe mode until the safe-mode exit point %s (the changes up to there "
                    "may be on the target already: a dump with consistency none, or a stop "
                    "inside that window)",
                    dm_position_format(&u->safe_exit, buf, sizeof buf));
      sync_safe_publish(u, SYNC_SAFE_EXIT, 0);
      return 0;
    }
    bool clean = c == 0 && !recovering;
    if (clean)
      u->host->logf(u->ctx, DM_LOG_INFO,
                    "sync: the safe-mode exit point is the start %s (the last run stopped cleanly "
                    "there, or the dump's snapshot is at its end position): no automatic safe "
                    "mode",
                    dm_position_format(&u->safe_exit, buf, sizeof buf));
    memset(&u->safe_exit, 0, sizeof u->safe_exit);
    /* cleared in the global row at once (DM flushes it): the next crash must not look clean */
    if (sync_cp_safe_exit(u, tc, err) < 0)
      return -1;
    if (clean) {
      sync_safe_publish(u, SYNC_SAFE_NONE, 0);
      return 0;
    }
  }
  int64_t d = u->cfg.safe_mode_duration_ms;
  if (d <= 0) {
    u->host->logf(u->ctx, DM_LOG_INFO,
                  "sync: no clean stop recorded at %s, safe-mode-duration %s: no automatic safe "
                  "mode (the checkpoint is committed with every batch)",
                  dm_position_format(start, buf2, sizeof buf2), d == 0 ? "\"0s\"" : "unset");
    sync_safe_publish(u, SYNC_SAFE_NONE, 0);
    return 0;
  }
  *until_ns = dm_clock_ns() + d * 1000000;
  u->host->logf(u->ctx, DM_LOG_INFO,
                "sync: no clean stop recorded at %s (a first start, or after a crash or an error): "
                "safe mode for safe-mode-duration %" PRId64 ".%03" PRId64 "s",
                dm_position_format(start, buf2, sizeof buf2), d / 1000, d % 1000);
  sync_safe_publish(u, SYNC_SAFE_TIMED, sync_wall_ms() + d);
  return 0;
}

bool sync_safe_timed(sync_unit *u, int64_t *until_ns, int64_t first_ns) {
  if (!*until_ns)
    return false;
  int64_t now = dm_clock_ns();
  bool safe = (first_ns ? first_ns : now) < *until_ns;
  if (now >= *until_ns) {
    *until_ns = 0;
    u->host->logf(u->ctx, DM_LOG_INFO, "sync: safe-mode-duration over: safe mode off%s",
                  u->cfg.safe_mode ? " (but on by the task's safe-mode)" : "");
    sync_safe_publish(u, SYNC_SAFE_NONE, 0);
  }
  return safe;
}

void sync_safe_exit_passed(sync_unit *u) {
  char buf[DM_POSITION_NAME_MAX + 32];
  u->host->logf(u->ctx, DM_LOG_INFO, "sync: past the safe-mode exit point %s: safe mode off%s",
                dm_position_format(&u->safe_exit, buf, sizeof buf),
                u->cfg.safe_mode ? " (but on by the task's safe-mode)" : "");
  /* the next global row carries none: a crash after it is a start without a clean stop */
  memset(&u->safe_exit, 0, sizeof u->safe_exit);
  sync_safe_publish(u, SYNC_SAFE_NONE, 0);
}

void sync_safe_stop(sync_unit *u, MYSQL *tc, const dm_position *done) {
  dm_position keep = u->safe_exit;
  if (!u->safe_exit.name[0] || dm_position_compare_file(done, &u->safe_exit) > 0)
    u->safe_exit = *done;
  dm_error e;
  char buf[DM_POSITION_NAME_MAX + 32];
  if (sync_cp_global(u, tc, done, &e) == 0 && sync_cp_safe_exit(u, tc, &e) == 0)
    u->host->logf(u->ctx, DM_LOG_INFO,
                  "sync: a clean stop at %s recorded (the safe-mode exit point)",
                  dm_position_format(done, buf, sizeof buf));
  else {
    u->safe_exit = keep;
    u->host->logf(u->ctx, DM_LOG_WARN,
                  "sync: the clean stop could not be recorded ([code %d] %s): the next start runs "
                  "in safe mode for safe-mode-duration",
                  (int)e.code, e.message);
  }
  sync_safe_publish(u, SYNC_SAFE_NONE, 0);
}
