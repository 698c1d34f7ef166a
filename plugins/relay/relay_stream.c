/*
 * The relay's main loop: connect to the source, pick the sub-folder and start position, pull
 * events through the SDK's stream reader and append their raw bytes to the relay file.
 *
 * Threads: the unit's process thread runs the loop; a watcher thread (started here, joined before
 * returning) wakes on the stop token to interrupt the stream, flushes the writer when the stream
 * has gone idle (so readers see the last events without waiting for more traffic), polls the
 * source's current position for the status, and purges by age/space. The writer is shared under
 * run.lock, held only for an append or a flush, never across a network read.
 *
 * Resumable trouble (connection lost, silent connection, a server restart) is handled here with
 * exponential back-off; another upstream server or a diverged history (relay_upstream.c) starts a
 * new sub-folder; only the stop token, a binlog purged upstream, a relay log the source does not
 * continue, or local I/O errors end the loop.
 */
#include <errno.h>
#include <mysql.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dmhost/relay_purge.h"
#include "dmhost/sdk.h"
#include "relay_internal.h"

typedef struct relay_run {
  relay_unit *u;
  pthread_mutex_t lock; /* guards everything below that the watcher touches */
  relay_file f;
  char subdir[RELAY_SUBDIR_MAX];
  char dir[RELAY_DIR_MAX]; /* relay_dir/subdir */
  dm_mariadb_gtid_set set; /* GTID set at `boundary` */
  dm_binlog_trx trx;
  uint64_t boundary;      /* last transaction boundary in f */
  uint64_t meta_boundary; /* what relay.meta says */
  char meta_name[256];
  bool only_fde;  /* the file holds magic + format description only: a hole may follow */
  bool take_list; /* the file was fetched from position 4: its GTID list gives the set */
  bool checksum;  /* events carry CRC32 */
  uint32_t upstream_server_id;
  double last_flush;
  double last_event; /* when the stream last delivered an event */
  double last_sync;
  bool final; /* the last flush before process returns: fsync whatever the interval */
  bool done;  /* the watcher exits */
  /* where the next connection starts */
  char start_file[256];
  uint64_t start_pos;
  char start_gtid[DM_POSITION_GTID_MAX];
} relay_run;

void relay_interrupt(relay_unit *u) {
  pthread_mutex_lock(&u->reader_lock);
  /* once per stream: a second call could reach into the connection while the stream thread
   * tears it down after the first */
  if (u->reader && !u->reader_interrupted)
    dm_binlog_reader_interrupt(u->reader);
  u->reader_interrupted = true;
  pthread_mutex_unlock(&u->reader_lock);
}

static void run_set_stage(relay_unit *u, const char *stage) {
  pthread_mutex_lock(&u->st.lock);
  u->st.stage = stage;
  pthread_mutex_unlock(&u->st.lock);
}

/* Publish the relay's position (lock held). */
static void run_publish(relay_run *r) {
  relay_status *st = &r->u->st;
  pthread_mutex_lock(&st->lock);
  dm_strlcpy(st->relay.name, r->f.name, sizeof st->relay.name);
  st->relay.pos = r->boundary;
  dm_mariadb_gtid_set_format(&r->set, st->relay.gtid, sizeof st->relay.gtid);
  st->has_relay = r->f.name[0] != '\0';
  dm_strlcpy(st->subdir, r->subdir, sizeof st->subdir);
  if (st->has_master)
    st->caught_up = dm_position_compare_file(&st->relay, &st->master) >= 0;
  dm_position written = st->relay;
  bool has = st->has_relay;
  pthread_mutex_unlock(&st->lock);
  relay_unit *u = r->u;
  if (has)
    relay_metrics_position(u, "relay", &written);
  uint64_t bytes = __atomic_load_n(&u->st.bytes, __ATOMIC_RELAXED);
  if (bytes > u->m_bytes_published)
    dm_host_metric_add(u->host, u->ctx, u->m_bytes, NULL, (double)(bytes - u->m_bytes_published));
  u->m_bytes_published = bytes;
}

/* Flush the buffered events and, when the boundary moved, relay.meta (lock held). */
static int run_flush(relay_run *r, dm_error *err) {
  /* "flush": at most one fsync a second (and at stop); each would otherwise stall the stream for
   * the disk's latency. A crash of the machine between two can leave relay.meta ahead of the
   * file: recovery then cuts back to the last complete transaction and fetches the rest again. */
  double now = dm_clock_coarse_s();
  bool sync =
      r->u->set.fsync_policy == RELAY_FSYNC_FLUSH && (r->final || now - r->last_sync >= 1.0);
  if (relay_file_flush(&r->f, sync, err) < 0)
    return -1;
  r->last_flush = now;
  if (sync)
    r->last_sync = now;
  if (r->f.name[0] && (r->boundary != r->meta_boundary || strcmp(r->meta_name, r->f.name) != 0)) {
    relay_meta m = {.binlog_pos = r->boundary};
    dm_strlcpy(m.binlog_name, r->f.name, sizeof m.binlog_name);
    dm_mariadb_gtid_set_format(&r->set, m.binlog_gtid, sizeof m.binlog_gtid);
    if (dm_relay_meta_write(r->dir, &m, r->u->file_mode, sync, err) < 0)
      return -1;
    r->meta_boundary = r->boundary;
    dm_strlcpy(r->meta_name, r->f.name, sizeof r->meta_name);
  }
  run_publish(r);
  return 0;
}

/* ---- choosing where to write and where to start ---- */

/* The source's history no longer holds the relay log (relay_up_diverged said why): the old
 * sub-folder ends at m (its relay.meta is rewritten at the recovered boundary), a new one starts
 * from the start of the source's oldest binlog file, so nothing of the new history is missed and
 * its files are byte for byte the source's. */
static int run_diverged(relay_run *r, MYSQL *c, const char *uuid, const relay_meta *m,
                        const char *why, dm_error *err) {
  relay_unit *u = r->u;
  char first[256], sub[RELAY_SUBDIR_MAX];
  if (dm_relay_meta_write(r->dir, m, u->file_mode, true, err) < 0 ||
      relay_up_first_binlog(c, first, sizeof first, err) < 0 ||
      dm_relay_index_add(u->relay_dir, uuid, u->file_mode, sub, sizeof sub, err) < 0)
    return -1;
  u->host->logf(u->ctx, DM_LOG_WARN,
                "relay: the source's history diverged from the relay log in %s: %s; %s ends at "
                "%s:%llu and a new sub-folder %s starts from the source's first binlog file %s",
                r->subdir, why, r->subdir, m->binlog_name, (unsigned long long)m->binlog_pos, sub,
                first);
  dm_strlcpy(r->subdir, sub, sizeof r->subdir);
  snprintf(r->dir, sizeof r->dir, "%s/%s", u->relay_dir, sub);
  memset(&r->set, 0, sizeof r->set);
  dm_strlcpy(r->start_file, first, sizeof r->start_file);
  r->start_pos = DM_BINLOG_MAGIC_LEN;
  r->start_gtid[0] = '\0';
  return 0;
}

/* Open (or start) the sub-folder for the upstream `uuid`, recover its last file, check that the
 * source still continues it, and set the start position. */
static int run_prepare(relay_run *r, MYSQL *c, dm_error *err) {
  relay_unit *u = r->u;
  char uuid[RELAY_UUID_MAX], last[RELAY_SUBDIR_MAX];
  if (relay_up_uuid(c, uuid, sizeof uuid, err) < 0)
    return -1;
  if (dm_relay_index_last(u->relay_dir, last, sizeof last, err) < 0)
    return -1;
  relay_meta m = {0};
  int have = 0;
  bool switched = false;
  dm_mariadb_gtid_set prev = {0};
  if (last[0]) {
    snprintf(r->dir, sizeof r->dir, "%s/%s", u->relay_dir, last);
    if ((have = dm_relay_meta_read(r->dir, &m, err)) < 0)
      return -1;
    char *dot = strrchr(last, '.');
    size_t ulen = dot ? (size_t)(dot - last) : strlen(last);
    if (strlen(uuid) != ulen || strncmp(last, uuid, ulen) != 0) {
      switched = true;
      if (have)
        dm_mariadb_gtid_set_parse(&prev, m.binlog_gtid);
      u->host->logf(u->ctx, DM_LOG_WARN,
                    "relay: the source is now server %s (the relay log was from %s): a new "
                    "sub-folder starts from the GTID set %s",
                    uuid, last, have ? m.binlog_gtid : "(none)");
    }
  }
  if (!last[0] || switched) {
    if (dm_relay_index_add(u->relay_dir, uuid, u->file_mode, last, sizeof last, err) < 0)
      return -1;
    snprintf(r->dir, sizeof r->dir, "%s/%s", u->relay_dir, last);
    have = 0;
  }
  dm_strlcpy(r->subdir, last, sizeof r->subdir);
  memset(&r->set, 0, sizeof r->set);
  r->start_gtid[0] = '\0';
  r->start_file[0] = '\0';
  r->start_pos = 4;
  r->meta_name[0] = '\0'; /* a new sub-folder has no relay.meta yet */
  r->meta_boundary = 0;
  if (have) {
    char note[DM_ERROR_MESSAGE_MAX + 256];
    if (relay_file_recover(r->dir, &m, note, sizeof note, err) < 0)
      return -1;
    if (note[0])
      u->host->logf(u->ctx, DM_LOG_WARN, "relay: recovery: %s", note);
    char why[DM_ERROR_MESSAGE_MAX];
    int d = relay_up_diverged(c, &m, why, sizeof why, err);
    if (d < 0)
      return -1;
    if (d > 0)
      return run_diverged(r, c, uuid, &m, why, err);
    dm_mariadb_gtid_set_parse(&r->set, m.binlog_gtid);
    dm_strlcpy(r->start_file, m.binlog_name, sizeof r->start_file);
    r->start_pos = m.binlog_pos;
    dm_strlcpy(r->meta_name, m.binlog_name, sizeof r->meta_name);
    r->meta_boundary = m.binlog_pos;
    return 0;
  }
  if (switched) {
    if (prev.n == 0) {
      dm_error_set(err, DM_ERR_RELAY_UPSTREAM, NULL,
                   "relay: the source changed to server %s and the relay log holds no GTID set "
                   "to continue from (sub-folder %s)",
                   uuid, r->subdir);
      return -1;
    }
    r->set = prev;
    dm_mariadb_gtid_set_format(&prev, r->start_gtid, sizeof r->start_gtid);
    return 0;
  }
  if (u->set.binlog_gtid && u->set.binlog_gtid[0]) {
    if (dm_mariadb_gtid_set_parse(&r->set, u->set.binlog_gtid) < 0) {
      dm_error_set(err, DM_ERR_CONFIG_INVALID, NULL,
                   "relay: binlog-gtid \"%s\" is not a MariaDB GTID position (D-S-N,...)",
                   u->set.binlog_gtid);
      return -1;
    }
    dm_strlcpy(r->start_gtid, u->set.binlog_gtid, sizeof r->start_gtid);
  } else if (u->set.binlog_name && u->set.binlog_name[0]) {
    dm_strlcpy(r->start_file, u->set.binlog_name, sizeof r->start_file);
  } else {
    /* DM starts at the source's current position; the start of its current file costs at most
     * max_binlog_size more and leaves a file byte-identical from its first byte, with the GTID
     * list that gives the set. */
    dm_position mp;
    if (relay_up_master_status(c, &mp, err) < 0)
      return -1;
    dm_strlcpy(r->start_file, mp.name, sizeof r->start_file);
  }
  return 0;
}

/* ---- the writer side ---- */

/* The file a ROTATE event names, checked: it becomes a file name in the sub-folder and in
 * relay.meta, so anything but a plain name (a proxy or a hostile source sending
 * "../../victim.txt") stops the relay before it opens or records anything. */
static int run_rotate_name(const dm_binlog_format *fmt, const dm_binlog_event *ev,
                           dm_binlog_rotate *out, char *name, size_t len, dm_error *err) {
  dm_binlog_rotate rot;
  if (dm_binlog_decode_rotate(fmt, ev, &rot, err) < 0 ||
      dm_relay_name_check("relay: the binlog file named by the source's ROTATE event",
                          rot.next_file.ptr, rot.next_file.len,
                          "the relay stopped without writing it", err) < 0)
    return -1;
  if (rot.next_file.len >= len) { /* cannot happen: a plain name has at most 255 bytes */
    dm_error_set(err, DM_ERR_RELAY_BAD_NAME, NULL, "relay: a binlog file name is too long");
    return -1;
  }
  memcpy(name, rot.next_file.ptr, rot.next_file.len);
  name[rot.next_file.len] = '\0';
  *out = rot;
  return 0;
}

/* Close the current file and open `name` in the sub-folder at `size` (lock held). */
static int run_switch_file(relay_run *r, const char *name, uint64_t size, dm_error *err) {
  if (r->f.fd >= 0 && relay_file_close(&r->f, err) < 0)
    return -1;
  if (relay_file_open(&r->f, r->dir, name, size, err) < 0)
    return -1;
  if (size < DM_BINLOG_MAGIC_LEN) {
    if (relay_file_open(&r->f, r->dir, name, 0, err) < 0 ||
        relay_file_append(&r->f, DM_BINLOG_MAGIC, DM_BINLOG_MAGIC_LEN, err) < 0)
      return -1;
    r->boundary = DM_BINLOG_MAGIC_LEN;
    r->only_fde = true;
  } else {
    r->boundary = size;
    r->only_fde = false;
  }
  memset(&r->trx, 0, sizeof r->trx);
  return 0;
}

/* One event from the stream (lock held). Returns 0, or -1 with err. */
static int run_event(relay_run *r, dm_binlog_reader *rd, const dm_binlog_event *ev, dm_error *err) {
  const dm_binlog_format *fmt = dm_binlog_reader_format(rd);
  uint8_t type = ev->header.type;
  if (type == DM_BINLOG_HEARTBEAT || type == DM_BINLOG_HEARTBEAT_V2)
    return 0;
  if (type == DM_BINLOG_ROTATE && ev->artificial) {
    char name[256];
    dm_binlog_rotate rot;
    if (run_rotate_name(fmt, ev, &rot, name, sizeof name, err) < 0)
      return -1;
    if (strcmp(name, r->f.name) == 0 && r->f.fd >= 0)
      return 0;
    /* A new file: it starts empty here whatever position the source starts it at. */
    r->take_list = rot.position <= DM_BINLOG_MAGIC_LEN;
    if (r->f.fd >= 0 && run_flush(r, err) < 0)
      return -1;
    struct stat sb;
    char path[RELAY_DIR_MAX + 300];
    snprintf(path, sizeof path, "%s/%s", r->dir, name);
    uint64_t have = lstat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0; /* a link: open refuses */
    /* Resuming in a file we already hold: continue at its end (== the start position). A new
     * file is named in relay.meta at once, so no file exists that relay.meta does not account
     * for. */
    if (run_switch_file(r, name, have == rot.position ? have : 0, err) < 0)
      return -1;
    return run_flush(r, err);
  }
  if (r->f.fd < 0) {
    dm_error_set(err, DM_ERR_RELAY_UPSTREAM, NULL,
                 "relay: the source sent an event of type %s before naming its binlog file",
                 dm_binlog_event_type_name(type));
    return -1;
  }
  if (type == DM_BINLOG_FORMAT_DESCRIPTION && ev->header.next_pos == 0) {
    /* Resent when a stream starts mid-file: a new relay file needs it (as DM writes it) so the
     * file can be read; a file we continue already has its own. */
    r->checksum = ev->has_checksum;
    if (r->f.size == DM_BINLOG_MAGIC_LEN) {
      if (relay_file_append(&r->f, ev->raw, ev->raw_len, err) < 0)
        return -1;
      r->boundary = r->f.size;
    }
    return 0;
  }
  if (ev->artificial)
    return 0;
  if (type == DM_BINLOG_FORMAT_DESCRIPTION)
    r->checksum = ev->has_checksum;
  uint64_t start = (uint64_t)ev->header.next_pos - ev->raw_len;
  if (ev->header.next_pos < ev->raw_len || start < r->f.size) {
    dm_error_set(err, DM_ERR_RELAY_UPSTREAM, NULL,
                 "relay: the source sent an event of %s at %llu but %s/%s already holds %llu "
                 "bytes",
                 r->f.name, (unsigned long long)start, r->subdir, r->f.name,
                 (unsigned long long)r->f.size);
    return -1;
  }
  if (start > r->f.size) {
    uint64_t hole = start - r->f.size;
    if (!r->only_fde || hole < RELAY_FILLER_MIN || hole > UINT32_MAX) {
      dm_error_set(err, DM_ERR_RELAY_UPSTREAM, NULL,
                   "relay: the source's next event of %s starts at %llu but %s/%s ends at %llu "
                   "(a gap of %llu bytes)",
                   r->f.name, (unsigned long long)start, r->subdir, r->f.name,
                   (unsigned long long)r->f.size, (unsigned long long)hole);
      return -1;
    }
    unsigned char *fill = malloc(hole);
    if (!fill) {
      dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "relay: no memory for a %llu-byte filler",
                   (unsigned long long)hole);
      return -1;
    }
    relay_ev_filler(fill, (uint32_t)hole, (uint32_t)r->f.size, r->upstream_server_id, r->checksum);
    int rc = relay_file_append(&r->f, fill, hole, err);
    free(fill);
    if (rc < 0)
      return -1;
    r->boundary = r->f.size;
  }
  if (relay_file_append(&r->f, ev->raw, ev->raw_len, err) < 0)
    return -1;
  if (type != DM_BINLOG_FORMAT_DESCRIPTION)
    r->only_fde = false;
  bool take = r->take_list && start < 1024;
  if (relay_trx_feed(&r->trx, fmt, ev, &r->set, take))
    r->boundary = r->f.size;
  __atomic_fetch_add(&r->u->st.events, 1, __ATOMIC_RELAXED);
  __atomic_fetch_add(&r->u->st.bytes, ev->raw_len, __ATOMIC_RELAXED);
  dm_host_metric_observe(r->u->host, r->u->ctx, r->u->m_write_size, NULL, (double)ev->raw_len);
  if (type == DM_BINLOG_ROTATE) {
    /* The file's last event: the next comes from the file it names (the source sends a
     * made-up ROTATE for it, which opens it). */
    char name[256];
    dm_binlog_rotate rot;
    if (run_rotate_name(fmt, ev, &rot, name, sizeof name, err) < 0 || run_flush(r, err) < 0 ||
        relay_file_close(&r->f, err) < 0)
      return -1;
    dm_strlcpy(r->f.name, name, sizeof r->f.name);
    r->boundary = 0;
    r->take_list = true;
    return run_flush(r, err);
  }
  return 0;
}

/* ---- the watcher thread ---- */

static void *run_watcher(void *arg) {
  relay_run *r = arg;
  relay_unit *u = r->u;
  int stop_fd = u->host->stop_fd(u->ctx);
  double next_master = 0, next_purge = dm_clock_coarse_s() + (double)u->set.purge_interval_s;
  double next_space = 0; /* DM reads the relay folder's space every 10 s */
  MYSQL *c = NULL;
  for (;;) {
    struct pollfd p = {.fd = stop_fd, .events = POLLIN};
    poll(&p, 1, 50);
    pthread_mutex_lock(&r->lock);
    bool done = r->done;
    double now0 = dm_clock_coarse_s();
    if (!done && r->f.buf_len && now0 - r->last_event >= 0.05 && now0 - r->last_flush >= 0.05) {
      /* idle stream: hand the buffered events to readers (a busy stream flushes itself, so the
       * writer's lock is not taken away from it for a write) */
      dm_error err;
      if (run_flush(r, &err) < 0) {
        relay_metrics_write_error(u, &err);
        u->host->logf(u->ctx, DM_LOG_ERROR, "%s", err.message);
      }
    }
    pthread_mutex_unlock(&r->lock);
    if (done)
      break;
    if (u->host->stop_requested(u->ctx)) {
      relay_interrupt(u);
      continue;
    }
    double now = dm_clock_coarse_s();
    if (now >= next_space) {
      next_space = now + 10;
      relay_metrics_space(u);
    }
    if (now >= next_master) {
      next_master = now + u->set.master_status_interval_ms / 1000.0;
      dm_error err;
      dm_position mp;
      if (!c)
        c = relay_up_connect(u, 1, &err);
      if (c && relay_up_master_status(c, &mp, &err) == 0) {
        pthread_mutex_lock(&u->st.lock);
        u->st.master = mp;
        u->st.has_master = true;
        u->st.caught_up = u->st.has_relay && dm_position_compare_file(&u->st.relay, &mp) >= 0;
        pthread_mutex_unlock(&u->st.lock);
        relay_metrics_position(u, "master", &mp);
      } else if (c) {
        mysql_close(c);
        c = NULL;
      }
    }
    if (u->set.purge_interval_s > 0 &&
        (u->set.purge_expires_h > 0 || u->set.purge_remain_space_gb > 0) && now >= next_purge) {
      next_purge = now + (double)u->set.purge_interval_s;
      dm_relay_purge_opts po = {.relay_dir = u->relay_dir,
                                .expires_hours = u->set.purge_expires_h,
                                .remain_space_gb = u->set.purge_remain_space_gb};
      dm_error err;
      int removed = 0;
      if (dm_relay_purge(&po, &removed, &err) < 0)
        u->host->logf(u->ctx, DM_LOG_WARN, "relay: automatic purge: %s", err.message);
      else if (removed)
        u->host->logf(u->ctx, DM_LOG_INFO, "relay: automatic purge removed %d file(s)", removed);
    }
  }
  if (c)
    mysql_close(c);
  return NULL;
}

/* ---- the loop ---- */

bool relay_stopping(relay_unit *u) {
  pthread_mutex_lock(&u->reader_lock);
  bool killed = u->killed;
  pthread_mutex_unlock(&u->reader_lock);
  return killed || u->host->stop_requested(u->ctx);
}

/* Back off before the next attempt; true when the stop token fired meanwhile. */
static bool run_backoff(relay_unit *u, uint32_t *delay_ms, const dm_error *why) {
  u->host->logf(u->ctx, DM_LOG_WARN, "relay: %s%s%s; retrying in %u ms", why->message,
                why->raw_cause[0] ? ": " : "", why->raw_cause, *delay_ms);
  run_set_stage(u, "reconnecting");
  __atomic_fetch_add(&u->st.reconnects, 1, __ATOMIC_RELAXED);
  bool stop = u->host->wait_stop(u->ctx, *delay_ms) || relay_stopping(u);
  *delay_ms = *delay_ms * 2 > (uint32_t)u->set.backoff_max_ms ? (uint32_t)u->set.backoff_max_ms
                                                              : *delay_ms * 2;
  return stop;
}

/* One connection: stream until it breaks. Returns 0 (connection lost or interrupted: the caller
 * decides), or -1 with a non-resumable err. Sets *progress when events were written. */
static int run_stream_once(relay_run *r, bool *progress, dm_error *err) {
  relay_unit *u = r->u;
  const dm_db_endpoint *ep = u->host->source_db(u->ctx);
  dm_binlog_stream_options so = {
      .source = ep,
      .server_id = u->set.server_id,
      .file = r->start_file,
      .pos = r->start_pos < DM_BINLOG_MAGIC_LEN ? DM_BINLOG_MAGIC_LEN : r->start_pos,
      .gtid = r->start_gtid,
      .heartbeat_ms = (uint32_t)(u->set.heartbeat_period_s * 1000),
      .connect_timeout_s = RELAY_CONNECT_ATTEMPT_S,
      .omit_annotate_rows = !u->set.send_annotate_rows,
      .source_size = dm_host_db_endpoint_size(u->host, u->ctx),
  };
  dm_binlog_reader *rd = NULL;
  double start = dm_clock_coarse_s();
  for (;;) { /* attempts of a second, up to 5 s: see relay_connect_again */
    double attempt = dm_clock_coarse_s();
    if (dm_binlog_reader_open_stream(&rd, &so, err) == 0)
      break;
    if (!relay_connect_again(u, start, 5, attempt, err))
      return err->code == DM_ERR_BINLOG_PURGED ? -1 : 0;
  }
  pthread_mutex_lock(&u->reader_lock);
  u->reader = rd;
  u->reader_interrupted = false;
  bool killed = u->killed;
  pthread_mutex_unlock(&u->reader_lock);
  if (killed || u->host->stop_requested(u->ctx))
    dm_binlog_reader_interrupt(rd);
  run_set_stage(u, "streaming");
  int out = 0;
  for (;;) {
    dm_binlog_event ev;
    int rc = dm_binlog_reader_next(rd, &ev, err);
    if (rc == 0) {
      err->code = DM_ERR_OK;
      break;
    }
    if (rc < 0) {
      relay_metrics_read_error(u, err);
      if (err->code == DM_ERR_BINLOG_PURGED || err->code == DM_ERR_BINLOG_UNSUPPORTED)
        out = -1;
      break;
    }
    pthread_mutex_lock(&r->lock);
    r->last_event = dm_clock_coarse_s();
    if (r->upstream_server_id == 0 && !ev.artificial)
      r->upstream_server_id = ev.header.server_id;
    int erc = run_event(r, rd, &ev, err);
    if (erc == 0 && r->boundary == r->f.size && r->last_event - r->last_flush >= 0.1)
      erc = run_flush(r, err);
    pthread_mutex_unlock(&r->lock);
    if (erc < 0) {
      relay_metrics_write_error(u, err);
      out = -1;
      break;
    }
    *progress = true;
  }
  pthread_mutex_lock(&u->reader_lock);
  u->reader = NULL;
  pthread_mutex_unlock(&u->reader_lock);
  dm_position at;
  dm_binlog_reader_position(rd, &at);
  u->host->logf(u->ctx, DM_LOG_INFO, "relay: stream from %s:%llu ended at %s:%llu: %s",
                r->start_file[0] ? r->start_file : "(GTID)", (unsigned long long)r->start_pos,
                at.name, (unsigned long long)at.pos,
                err->code == DM_ERR_OK ? "interrupted" : err->message);
  dm_binlog_reader_close(rd);
  return out;
}

/* Make the file end at the last boundary and resume from there (lock held). */
static int run_rewind(relay_run *r, dm_error *err) {
  if (run_flush(r, err) < 0)
    return -1;
  if (r->f.fd >= 0) {
    if (r->f.size != r->boundary) {
      char name[256];
      dm_strlcpy(name, r->f.name, sizeof name);
      if (relay_file_open(&r->f, r->dir, name, r->boundary, err) < 0)
        return -1;
    }
  }
  /* No file open: nothing of this stream was written (it failed before its first event, e.g. the
   * source refused it), so the next try starts where this one did. Taking the empty name would
   * leave the stream with neither a file nor a GTID to start from, for good. */
  if (r->f.fd >= 0 && r->f.name[0]) {
    dm_strlcpy(r->start_file, r->f.name, sizeof r->start_file);
    r->start_pos = r->boundary;
    r->start_gtid[0] = '\0';
  }
  memset(&r->trx, 0, sizeof r->trx);
  return 0;
}

/* Close the relay file; the next run_prepare opens the sub-folder's again (or a new one). */
static void run_forget_file(relay_run *r) {
  dm_error err;
  pthread_mutex_lock(&r->lock);
  relay_file_close(&r->f, &err);
  r->f.name[0] = '\0';
  pthread_mutex_unlock(&r->lock);
}

/* Before resuming: is the source another server (uuid), or has its history diverged from where
 * the relay log ends (after run_rewind: start_file, start_pos, set)? Then the file is closed and
 * true returned. A source that cannot be asked (down) is not "changed": the stream will say. */
static bool run_upstream_changed(relay_run *r) {
  relay_unit *u = r->u;
  dm_error err;
  MYSQL *c = relay_up_connect(u, 5, &err);
  if (!c)
    return false;
  char uuid[RELAY_UUID_MAX], why[DM_ERROR_MESSAGE_MAX] = "";
  size_t ul = 0;
  bool changed = relay_up_uuid(c, uuid, sizeof uuid, &err) == 0 &&
                 (strncmp(r->subdir, uuid, (ul = strlen(uuid))) != 0 || r->subdir[ul] != '.');
  if (!changed && r->start_file[0] && !r->start_gtid[0]) {
    relay_meta m = {.binlog_pos = r->start_pos};
    dm_strlcpy(m.binlog_name, r->start_file, sizeof m.binlog_name);
    dm_mariadb_gtid_set_format(&r->set, m.binlog_gtid, sizeof m.binlog_gtid);
    changed = relay_up_diverged(c, &m, why, sizeof why, &err) == 1;
  }
  mysql_close(c);
  if (changed)
    run_forget_file(r);
  return changed;
}

void relay_stream_run(relay_unit *u, dm_result *result) {
  relay_run *r = calloc(1, sizeof *r);
  dm_error err = {0};
  if (!r || relay_file_init(&r->f, (size_t)u->set.buffer_kb * 1024, u->set.fsync_policy) < 0) {
    free(r);
    dm_error_set(&err, DM_ERR_NO_MEMORY, NULL, "relay: no memory for the writer");
    dm_result_fail(result, &err);
    return;
  }
  r->u = u;
  r->f.mode = u->file_mode;
  pthread_mutex_init(&r->lock, NULL);
  r->last_flush = dm_clock_coarse_s();
  pthread_t watcher;
  bool have_watcher = pthread_create(&watcher, NULL, run_watcher, r) == 0;
  uint32_t delay = 200;
  bool prepared = false, failed = false, purge_checked = false;
  run_set_stage(u, "connecting");
  while (!relay_stopping(u)) {
    if (!prepared) {
      MYSQL *c = relay_up_connect(u, 5, &err);
      int rc = c ? 0 : -1;
      if (c) {
        /* not under r->lock: the watcher must stay free to see the stop token; it touches only
         * the writer's buffer, which is empty here */
        rc = run_prepare(r, c, &err);
        mysql_close(c);
      }
      if (rc < 0) {
        /* a refused statement or account (dm_db_error's rule) is not retried here either */
        if ((err.code != DM_ERR_DB_CONNECT && err.code != DM_ERR_DB_QUERY) || !err.resumable) {
          failed = true;
          break;
        }
        if (relay_stopping(u) || run_backoff(u, &delay, &err))
          break;
        continue;
      }
      prepared = true;
      relay_metrics_subdir(u, r->subdir);
      u->host->logf(u->ctx, DM_LOG_INFO,
                    "relay: writing into %s from %s:%llu%s%s, as replica server-id %u", r->subdir,
                    r->start_file[0] ? r->start_file : "(GTID)", (unsigned long long)r->start_pos,
                    r->start_gtid[0] ? " GTID " : "", r->start_gtid, (unsigned)u->set.server_id);
    }
    bool progress = false;
    int rc = run_stream_once(r, &progress, &err);
    pthread_mutex_lock(&r->lock);
    dm_error ferr;
    int wrc = run_rewind(r, &ferr);
    pthread_mutex_unlock(&r->lock);
    if (wrc < 0) {
      relay_metrics_write_error(u, &ferr);
      err = ferr;
      failed = true;
      break;
    }
    if (rc < 0) {
      /* "Purged" may be the source's history gone (RESET MASTER: the dump thread answers "could
       * not find next log"): run_prepare looks once, with relay.meta to compare, before the relay
       * gives up. */
      if (err.code == DM_ERR_BINLOG_PURGED && !purge_checked && r->meta_name[0]) {
        u->host->logf(u->ctx, DM_LOG_WARN,
                      "relay: %s; checking whether the source's history diverged", err.message);
        purge_checked = true;
        run_forget_file(r);
        prepared = false;
        continue;
      }
      failed = true;
      break;
    }
    if (relay_stopping(u))
      break;
    if (progress) {
      delay = 200;
      purge_checked = false;
    }
    if (err.code == DM_ERR_OK)
      dm_error_set(&err, DM_ERR_DB_CONNECT, NULL, "relay: the source ended the binlog stream");
    if (run_backoff(u, &delay, &err))
      break;
    /* The source may be another server now (fail-over), or the same one with another history
     * (RESET MASTER, a restore): then run_prepare starts a new sub-folder. */
    if (run_upstream_changed(r))
      prepared = false;
  }
  pthread_mutex_lock(&r->lock);
  dm_error cerr;
  r->final = true;
  if (run_flush(r, &cerr) < 0) {
    relay_metrics_write_error(u, &cerr);
    if (!failed) {
      err = cerr;
      failed = true;
    }
  }
  relay_file_close(&r->f, &cerr);
  r->done = true;
  pthread_mutex_unlock(&r->lock);
  if (have_watcher)
    pthread_join(watcher, NULL);
  run_set_stage(u, "stopped");
  relay_file_free(&r->f);
  pthread_mutex_destroy(&r->lock);
  free(r);
  if (failed) {
    dm_result_fail(result, &err);
  } else {
    result->outcome = DM_OUTCOME_CANCELED;
  }
}
