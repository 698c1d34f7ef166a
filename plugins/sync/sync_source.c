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
 * every SYNC_HEARTBEAT_MS, which tell the coordinator the stream is idle. A stream that breaks or
 * goes silent (DM_ERR_DB_CONNECT: a network cut, a source stalled past the read timeout, a killed
 * Binlog Dump thread) is opened again here, at the event after the last one returned (inside a
 * transaction too: the source sends from any event boundary), for up to SYNC_RECONNECT_S, as the
 * relay does (docs/relay.md) and as a MariaDB replica's IO thread does: the coordinator sees one
 * stream. Only then does the error reach it (resumable: auto-resume takes it from there).
 *
 * Either way, 0 from sync_source_next means "nothing to read right now".
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmhost/clock.h"
#include "dmhost/relay_log.h"
#include "sync.h"

#define SYNC_HEARTBEAT_MS 50
#define SYNC_RELAY_POLL_MS 5
#define SYNC_RECONNECT_S 30      /* a broken stream is opened again for this long */
#define SYNC_CONNECT_ATTEMPT_S 2 /* each attempt's connect timeout: a stop waits for one at most */

struct sync_source {
  sync_unit *u;
  /* relay off: the stream; swapped by a reconnect (coordinator) while a kill may interrupt it
   * (another thread): both under `lock` */
  dm_binlog_reader *r;
  pthread_mutex_t lock;
  atomic_bool interrupted;
  dm_binlog_stream_options so; /* how it was opened (file and pos change on a reconnect) */
  char so_file[sizeof(((dm_position *)0)->name)];
  char so_gtid[sizeof(((dm_position *)0)->gtid)];
  dm_relay_log *rl;  /* relay on */
  const char *relay; /* relay_dir, or NULL */
  char subdir[256];  /* relay: the sub-folder of the last event, for the log */
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
  pthread_mutex_init(&s->lock, NULL);
  s->relay = u->host->relay_dir(u->ctx);
  int rc;
  if (s->relay) {
    rc = sync_relay_open(s, from, err);
  } else {
    dm_strlcpy(s->so_file, from->name, sizeof s->so_file);
    dm_strlcpy(s->so_gtid, from->gtid, sizeof s->so_gtid);
    s->so = (dm_binlog_stream_options){
        .source = u->host->source_db(u->ctx),
        .server_id = u->cfg.server_id,
        .file = s->so_file,
        .pos = from->pos,
        .gtid = from->name[0] ? NULL : s->so_gtid,
        .heartbeat_ms = SYNC_HEARTBEAT_MS,
        .omit_annotate_rows = true,
        .source_size = dm_host_db_endpoint_size(u->host, u->ctx),
    };
    rc = dm_binlog_reader_open_stream(&s->r, &s->so, err);
  }
  if (rc < 0) {
    sync_source_close(s);
    return -1;
  }
  *out = s;
  return 0;
}

/* The stream broke (err, DM_ERR_DB_CONNECT): opened again where it stood, attempt after attempt,
 * until SYNC_RECONNECT_S have passed or a stop or kill comes. 1: reading again; 0: a stop or kill
 * came (no stream left); -1: err, the last attempt's (no stream left). */
static int sync_stream_reconnect(sync_source *s, dm_error *err) {
  sync_unit *u = s->u;
  dm_position at;
  dm_binlog_reader_position(s->r, &at);
  if (at.name[0]) { /* else nothing came yet: the start position again */
    dm_strlcpy(s->so_file, at.name, sizeof s->so_file);
    s->so.pos = at.pos;
    s->so.gtid = NULL;
  }
  pthread_mutex_lock(&s->lock);
  dm_binlog_reader *old = s->r;
  s->r = NULL;
  pthread_mutex_unlock(&s->lock);
  dm_binlog_reader_close(old);
  u->host->logf(u->ctx, DM_LOG_WARN,
                "sync: %s (%s): opening the stream again at %s:%" PRIu64 " for up to %d s",
                err->message, err->raw_cause, s->so_file, s->so.pos, SYNC_RECONNECT_S);
  double start = dm_clock_coarse_s();
  s->so.connect_timeout_s = SYNC_CONNECT_ATTEMPT_S;
  for (int attempt = 1;; attempt++) {
    dm_binlog_reader *nr = NULL;
    dm_error e2;
    int rc = dm_binlog_reader_open_stream(&nr, &s->so, &e2);
    pthread_mutex_lock(&s->lock);
    bool stop = atomic_load(&s->interrupted) || u->host->stop_requested(u->ctx);
    if (rc == 0 && !stop)
      s->r = nr;
    pthread_mutex_unlock(&s->lock);
    if (rc == 0 && !stop) {
      u->host->logf(u->ctx, DM_LOG_INFO,
                    "sync: the stream is open again at %s:%" PRIu64 " (attempt %d, %.1f s)",
                    s->so_file, s->so.pos, attempt, dm_clock_coarse_s() - start);
      return 1;
    }
    dm_binlog_reader_close(nr);
    if (stop)
      return 0; /* as an interrupted read: the caller sees the stop */
    *err = e2;
    if (e2.code != DM_ERR_DB_CONNECT || dm_clock_coarse_s() - start >= SYNC_RECONNECT_S)
      return -1;
    u->host->wait_stop(u->ctx, 1000);
  }
}

int sync_source_next(sync_source *s, dm_binlog_event *ev, dm_error *err) {
  if (s->rl) {
    int rc = dm_relay_log_next(s->rl, ev, err);
    if (rc == 1)
      sync_relay_note(s, ev);
    return rc;
  }
  if (!s->r) { /* a reconnect ended without a stream (a stop, or it gave up) */
    s->u->host->error_make(s->u->ctx, err, DM_ERR_DB_CONNECT, NULL,
                           "sync: the source's binlog stream is closed");
    err->resumable = 1;
    return -1;
  }
  int rc = dm_binlog_reader_next(s->r, ev, err);
  if (rc < 0 && err->code == DM_ERR_DB_CONNECT && !atomic_load(&s->interrupted) &&
      !s->u->host->stop_requested(s->u->ctx)) {
    int again = sync_stream_reconnect(s, err);
    if (again <= 0)
      return again;
    rc = dm_binlog_reader_next(s->r, ev, err);
  }
  if (rc == 1 && ev->artificial &&
      (ev->header.type == DM_BINLOG_HEARTBEAT || ev->header.type == DM_BINLOG_HEARTBEAT_V2))
    return 0;
  return rc; /* 0: a non-blocking end, or interrupted */
}

bool sync_source_pending(const sync_source *s) {
  return s->rl || !s->r || dm_binlog_reader_pending(s->r);
}

int sync_source_fd(const sync_source *s) {
  return s->rl || !s->r ? -1 : dm_binlog_reader_fd(s->r);
}

const dm_binlog_format *sync_source_format(const sync_source *s) {
  return s->rl ? dm_relay_log_format(s->rl) : dm_binlog_reader_format(s->r);
}

void sync_source_interrupt(sync_source *s) {
  if (s && s->rl) {
    dm_relay_log_interrupt(s->rl);
  } else if (s) {
    pthread_mutex_lock(&s->lock);
    s->interrupted = true;
    if (s->r)
      dm_binlog_reader_interrupt(s->r);
    pthread_mutex_unlock(&s->lock);
  }
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
  pthread_mutex_destroy(&s->lock);
  free(s);
}
