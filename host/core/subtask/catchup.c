/*
 * Between load and sync, when relay is on for the source: wait until the relay has written the
 * binlog up to the dump's end position, so sync never starts reading a relay file that does not
 * hold its start position yet. Polls the relay's status; the stop token interrupts it.
 */
#include <stdio.h>

#include "dmhost/sdk.h"
#include "log.h"
#include "supervisor_internal.h"

/* Has the relay got to target? Its written position reaching the target is the plain case. A
 * relay that reports it has caught up with the source, at a source position that has reached the
 * target, counts as well: with no new event upstream its written position may never move past a
 * target that equals the source's current position. */
static bool catchup_reached(dmh_subtask *relay, const dm_position *target, dm_position *seen) {
  dmh_relay_progress rp; /* one status call per poll */
  if (!dmh_subtask_relay_progress(relay, &rp))
    return false;
  if (rp.has_written)
    *seen = rp.written;
  if (rp.has_written && dm_position_reached(&rp.written, target))
    return true;
  return rp.caught_up && rp.has_master && dm_position_reached(&rp.master, target);
}

int sup_wait_relay_catchup(dmh_subtask *st, const dm_position *target, dm_error *err) {
  char tbuf[DM_POSITION_NAME_MAX + 32], rbuf[DM_POSITION_NAME_MAX + 32];
  if (!target || !dm_position_is_set(target)) {
    dmh_log(DM_LOG_WARN, st->name,
            "the load unit reported no dump end position (%s); sync starts without waiting for "
            "the relay",
            DM_STATUS_META_BINLOG);
    return 0;
  }
  dm_position seen = {0};
  double deadline = dmh_now_seconds() + st->sup.relay_catchup_timeout_ms / 1000.0;
  dmh_log(DM_LOG_INFO, st->name, "waiting for the relay to reach the dump's end position %s %s",
          dm_position_format(target, tbuf, sizeof tbuf), target->gtid);
  for (;;) {
    if (dmh_stop_token_fired(&st->token))
      return 1;
    if (catchup_reached(st->relay, target, &seen)) {
      dmh_log(DM_LOG_INFO, st->name, "relay has caught up at %s",
              dm_position_format(&seen, rbuf, sizeof rbuf));
      return 0;
    }
    if (dmh_now_seconds() >= deadline) {
      dm_error_set(err, DM_ERR_RELAY_CATCHUP_TIMEOUT, NULL,
                   "task %s: the relay of source %s is at %s (GTID %s) and has not reached the "
                   "dump's end position %s (GTID %s) within %u ms",
                   st->name, st->source->source_id,
                   seen.name[0] ? dm_position_format(&seen, rbuf, sizeof rbuf) : "(none)",
                   seen.gtid[0] ? seen.gtid : "-", dm_position_format(target, tbuf, sizeof tbuf),
                   target->gtid[0] ? target->gtid : "-", st->sup.relay_catchup_timeout_ms);
      return -1;
    }
    if (dmh_stop_token_wait(&st->token, st->sup.relay_catchup_poll_ms))
      return 1;
  }
}
