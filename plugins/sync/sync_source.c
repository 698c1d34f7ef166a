/*
 * Where the sync unit's events come from.
 *
 * Relay on (relay_dir set): the relay folder (docs/relay.md), read with the SDK's relay log
 * reader (dmhost/relay_log.h), the one owner of the folder's layout: its files keep the upstream
 * names and offsets, so a checkpoint position is a relay position; it finds the file in the
 * sub-folders, crosses files and sub-folders, waits for what the relay has not written yet (also
 * at the start: mode incremental starts the sync with no relay catch-up wait, often together with
 * a fresh relay) and refuses names that are not plain and planted links. Its wait is a short look
 * (SYNC_RELAY_POLL_MS), so "nothing yet" comes back to the coordinator, which flushes what it
 * holds. The reader registers the file of the sync's checkpoint in `<relay-dir>/readers/<task>`
 * (dm_relay_reader_register) so purge keeps it; before the sync's first checkpoint, the host's
 * registration of the dump's position holds.
 *
 * Relay off: the source's binlog stream (SDK stream reader) from the position, with heartbeats
 * every SYNC_HEARTBEAT_MS, which tell the coordinator the stream is idle.
 *
 * Either way, 0 from sync_source_next means "nothing to read right now".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmhost/relay_log.h"
#include "sync.h"

#define SYNC_HEARTBEAT_MS 50
#define SYNC_RELAY_POLL_MS 5

struct sync_source {
  sync_unit *u;
  dm_binlog_reader *r; /* relay off: the stream */
  dm_relay_log *rl;    /* relay on */
  const char *relay;   /* relay_dir, or NULL */
  char subdir[256];    /* relay: the sub-folder of the last event, for the log */
  bool said_waiting;
};

/* ---- relay folder ---- */

static bool sync_relay_wait(void *arg, const char *path, uint64_t offset) {
  (void)path;
  (void)offset;
  sync_source *s = arg;
  /* a short look only: the coordinator flushes what it holds on "idle" and asks again */
  s->u->host->wait_stop(s->u->ctx, SYNC_RELAY_POLL_MS);
  return false;
}

static int sync_relay_open(sync_source *s, const dm_position *from, dm_error *err) {
  sync_unit *u = s->u;
  if (!from->name[0]) {
    u->host->error_make(u->ctx, err, DM_ERR_SYNC_NO_START, NULL,
                        "sync: reading the relay log needs a binlog file and position to start "
                        "from, and the start position has a GTID set only (%s)",
                        from->gtid);
    return -1;
  }
  const char *task = u->host->task_name(u->ctx);
  dm_relay_log_options o = {
      .wait = sync_relay_wait,
      .wait_arg = s,
      .reader = task[0] ? task : NULL,
      .file_mode = (unsigned)dm_host_file_mode(u->host, u->ctx),
  };
  if (dm_relay_log_open(s->relay, from, &o, &s->rl, err) < 0)
    return -1;
  if (dm_relay_log_waiting(s->rl)) {
    u->host->logf(u->ctx, DM_LOG_INFO,
                  "sync: the relay log in %s has not written %s yet (a relay that has just "
                  "started): waiting for it",
                  s->relay, from->name);
    s->said_waiting = true;
  }
  dm_strlcpy(s->subdir, dm_relay_log_subdir(s->rl), sizeof s->subdir);
  return 0;
}

/* An event came from the relay: say when the reader found its start file, or moved on to a new
 * sub-folder (an upstream switch). */
static void sync_relay_note(sync_source *s, const dm_binlog_event *ev) {
  const char *sub = dm_relay_log_subdir(s->rl);
  if (strcmp(sub, s->subdir) == 0)
    return;
  if (s->said_waiting)
    s->u->host->logf(s->u->ctx, DM_LOG_INFO, "sync: the relay has written %s/%s: reading it", sub,
                     ev->file);
  else if (s->subdir[0])
    s->u->host->logf(s->u->ctx, DM_LOG_INFO,
                     "sync: the relay log moved on to sub-folder %s: reading %s from there", sub,
                     ev->file);
  s->said_waiting = false;
  dm_strlcpy(s->subdir, sub, sizeof s->subdir);
}

/* ---- both ---- */

int sync_source_open(sync_unit *u, const dm_position *from, sync_source **out, dm_error *err) {
  sync_source *s = calloc(1, sizeof *s);
  if (!s) {
    sync_nomem(u, err);
    return -1;
  }
  s->u = u;
  s->relay = u->host->relay_dir(u->ctx);
  int rc;
  if (s->relay) {
    rc = sync_relay_open(s, from, err);
  } else {
    dm_binlog_stream_options o = {
        .source = u->host->source_db(u->ctx),
        .server_id = u->cfg.server_id,
        .file = from->name,
        .pos = from->pos,
        .gtid = from->name[0] ? NULL : from->gtid,
        .heartbeat_ms = SYNC_HEARTBEAT_MS,
        .omit_annotate_rows = true,
        .source_size = dm_host_db_endpoint_size(u->host, u->ctx),
    };
    rc = dm_binlog_reader_open_stream(&s->r, &o, err);
  }
  if (rc < 0) {
    sync_source_close(s);
    return -1;
  }
  *out = s;
  return 0;
}

int sync_source_next(sync_source *s, dm_binlog_event *ev, dm_error *err) {
  if (s->rl) {
    int rc = dm_relay_log_next(s->rl, ev, err);
    if (rc == 1)
      sync_relay_note(s, ev);
    return rc;
  }
  int rc = dm_binlog_reader_next(s->r, ev, err);
  if (rc == 1 && ev->artificial &&
      (ev->header.type == DM_BINLOG_HEARTBEAT || ev->header.type == DM_BINLOG_HEARTBEAT_V2))
    return 0;
  return rc; /* 0: a non-blocking end, or interrupted */
}

const dm_binlog_format *sync_source_format(const sync_source *s) {
  return s->rl ? dm_relay_log_format(s->rl) : dm_binlog_reader_format(s->r);
}

void sync_source_interrupt(sync_source *s) {
  if (s && s->rl)
    dm_relay_log_interrupt(s->rl);
  else if (s && s->r)
    dm_binlog_reader_interrupt(s->r);
}

void sync_source_checkpoint(sync_source *s, const dm_position *pos) {
  dm_error err;
  if (s->rl && dm_relay_log_checkpoint(s->rl, pos, &err) < 0)
    s->u->host->logf(s->u->ctx, DM_LOG_WARN, "sync: %s (%s)", err.message, err.raw_cause);
}

void sync_source_close(sync_source *s) {
  if (!s)
    return;
  dm_relay_log_close(s->rl);
  dm_binlog_reader_close(s->r);
  free(s);
}
