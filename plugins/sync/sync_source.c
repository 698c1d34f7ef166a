/*
 * Where the sync unit's events come from.
 *
 * Relay on (relay_dir set): the relay folder (docs/relay.md). Its files keep the upstream names and
 * offsets, so a checkpoint position is a relay position. The file the position names is looked up
 * in the sub-folders, newest first; the SDK's following file reader reads it; after its ROTATE the
 * next file of the same sub-folder is opened (waiting for the relay to create it); when the relay
 * moved to a newer sub-folder (upstream switch) and the current file has nothing more, reading
 * goes on with the first file of the next sub-folder, as DM's reader does. The unit registers the
 * file of its checkpoint in `<relay-dir>/readers/<task>` (dm_relay_reader_register) so purge keeps
 * it; before the sync's first checkpoint, the host's registration of the dump's position holds.
 * A file the relay has not written yet (no file, or the newest file without its magic and format
 * description: the relay creates it, then writes them) is waited for, also at the start (mode
 * incremental starts the sync with no relay catch-up wait, often together with a fresh relay).
 *
 * Relay off: the source's binlog stream (SDK stream reader) from the position, with heartbeats
 * every SYNC_HEARTBEAT_MS, which tell the coordinator the stream is idle.
 *
 * Either way, 0 from sync_source_next means "nothing to read right now".
 */
#include <dirent.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dmhost/relay_reader.h"
#include "sync.h"

#define SYNC_HEARTBEAT_MS 50
#define SYNC_RELAY_POLL_MS 5

struct sync_source {
  sync_unit *u;
  dm_binlog_reader *r;
  const char *relay; /* relay_dir, or NULL */
  char subdir[256];
  char file[DM_POSITION_NAME_MAX];      /* relay: the file being read */
  char next_file[DM_POSITION_NAME_MAX]; /* after a ROTATE: the file to open next */
  char registered[600];
  unsigned idle_rounds;
  /* relay: the start position while the relay has not written its file yet (r is NULL) */
  dm_position pending;
  bool said_waiting;
};

/* ---- relay folder ---- */

/* A name the sync reads from the relay folder (an index line, a binlog file named by a ROTATE
 * event or by the checkpoint) becomes part of a path: anything but a plain name is refused. */
static int sync_relay_name_n(sync_source *s, const char *what, const char *name, size_t len,
                             dm_error *err) {
  if (dm_fs_name_ok(name, len))
    return 0;
  s->u->host->error_make(s->u->ctx, err, DM_ERR_RELAY_BAD_NAME, NULL,
                         "sync: the %s \"%.*s\"%s in the relay log %s is not a plain file name "
                         "([A-Za-z0-9._-], not starting with '.'); the sync does not open it",
                         what, (int)(len < 300 ? len : 300), name, len > 300 ? "..." : "",
                         s->relay);
  return -1;
}

static int sync_relay_name(sync_source *s, const char *what, const char *name, dm_error *err) {
  return sync_relay_name_n(s, what, name, strlen(name), err);
}

/* Sub-folders of the index, oldest first; returns the count (up to max), -1 with err when a line
 * is not a plain name. */
static int sync_relay_index(sync_source *s, char (*dirs)[256], int max, dm_error *err) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/server-uuid.index", s->relay);
  FILE *f = fopen(path, "re");
  if (!f)
    return 0;
  int n = 0;
  char line[512];
  while (n < max && fgets(line, sizeof line, f)) {
    line[strcspn(line, "\r\n")] = '\0';
    if (line[0] && sync_relay_name(s, "sub-folder in server-uuid.index", line, err) < 0) {
      fclose(f);
      return -1;
    }
    if (line[0])
      dm_strlcpy(dirs[n++], line, sizeof dirs[0]);
  }
  fclose(f);
  return n;
}

static bool sync_file_exists(const char *relay, const char *sub, const char *file) {
  char path[PATH_MAX];
  struct stat st;
  if (snprintf(path, sizeof path, "%s/%s/%s", relay, sub, file) >= (int)sizeof path)
    return false;
  return stat(path, &st) == 0;
}

/* The first (lowest) or last (highest) binlog file of a sub-folder: "" if none yet. */
static void sync_relay_edge_file(const char *relay, const char *sub, bool last, char *out,
                                 size_t len) {
  char path[PATH_MAX];
  out[0] = '\0';
  snprintf(path, sizeof path, "%s/%s", relay, sub);
  DIR *d = opendir(path);
  if (!d)
    return;
  struct dirent *e;
  while ((e = readdir(d))) {
    const char *dot = strrchr(e->d_name, '.');
    if (!dm_fs_name_ok(e->d_name, strlen(e->d_name)) || !dot ||
        strspn(dot + 1, "0123456789") != strlen(dot + 1) || strlen(dot + 1) == 0)
      continue;
    int c = out[0] ? strcmp(e->d_name, out) : (last ? 1 : -1);
    if (last ? c > 0 : c < 0)
      dm_strlcpy(out, e->d_name, len);
  }
  closedir(d);
}

/* The first binlog file after `file` in the sub-folder (by name: the relay keeps upstream's
 * names, whose numbers have one width): "" if none. */
static void sync_relay_next_after(const char *relay, const char *sub, const char *file, char *out,
                                  size_t len) {
  char path[PATH_MAX];
  out[0] = '\0';
  snprintf(path, sizeof path, "%s/%s", relay, sub);
  DIR *d = opendir(path);
  if (!d)
    return;
  struct dirent *e;
  while ((e = readdir(d))) {
    const char *dot = strrchr(e->d_name, '.');
    if (!dm_fs_name_ok(e->d_name, strlen(e->d_name)) || !dot ||
        strspn(dot + 1, "0123456789") != strlen(dot + 1) || strlen(dot + 1) == 0)
      continue;
    if (strcmp(e->d_name, file) > 0 && (!out[0] || strcmp(e->d_name, out) < 0))
      dm_strlcpy(out, e->d_name, len);
  }
  closedir(d);
}

/* Is there a file after `file` in the sub-folder (so `file` is complete)? */
static bool sync_relay_has_later(const char *relay, const char *sub, const char *file) {
  char last[DM_POSITION_NAME_MAX];
  sync_relay_edge_file(relay, sub, true, last, sizeof last);
  return last[0] && strcmp(last, file) > 0;
}

/* Is sub/file the file the relay writes now (the newest sub-folder, nothing after it there)? A
 * file the relay has only created may not hold its magic and format description yet. */
static bool sync_relay_is_current(sync_source *s, const char *sub, const char *file) {
  char dirs[64][256];
  dm_error ignored;
  int n = sync_relay_index(s, dirs, 64, &ignored);
  return n > 0 && strcmp(dirs[n - 1], sub) == 0 && !sync_relay_has_later(s->relay, sub, file);
}

static bool sync_relay_wait(void *arg, const char *path, uint64_t offset) {
  (void)path;
  (void)offset;
  sync_source *s = arg;
  /* a short look only: the coordinator flushes what it holds on "idle" and asks again */
  s->u->host->wait_stop(s->u->ctx, SYNC_RELAY_POLL_MS);
  return false;
}

static int sync_relay_open_file(sync_source *s, const char *sub, const char *file, uint64_t pos,
                                dm_error *err) {
  char path[PATH_MAX];
  if (sync_relay_name(s, "sub-folder", sub, err) < 0 ||
      sync_relay_name(s, "binlog file", file, err) < 0)
    return -1;
  if (snprintf(path, sizeof path, "%s/%s/%s", s->relay, sub, file) >= (int)sizeof path) {
    s->u->host->error_make(s->u->ctx, err, DM_ERR_IO, NULL, "sync: relay path too long");
    return -1;
  }
  /* the relay never makes links: one there was planted, and is not followed */
  struct stat sb;
  char subpath[PATH_MAX];
  snprintf(subpath, sizeof subpath, "%s/%s", s->relay, sub);
  if ((lstat(subpath, &sb) == 0 && !S_ISDIR(sb.st_mode)) ||
      (lstat(path, &sb) == 0 && !S_ISREG(sb.st_mode))) {
    s->u->host->error_make(s->u->ctx, err, DM_ERR_RELAY_LINK, NULL,
                           "sync: %s in the relay log is a symbolic link or not a plain file; "
                           "the sync does not follow it",
                           path);
    return -1;
  }
  dm_binlog_file_options o = {
      .start_pos = pos, .follow = true, .wait = sync_relay_wait, .wait_arg = s};
  dm_binlog_reader *r = NULL;
  if (dm_binlog_reader_open_file(&r, path, &o, err) < 0) {
    /* The relay has created the file but not yet written its magic and format description:
     * not there yet, look again later (the old reader, if any, stays at its end). Only in the
     * file the relay writes now: one it has moved past stays short for good, which one more
     * look tells (the relay may have written it and moved on since the first). */
    if (err->code != DM_ERR_BINLOG_INCOMPLETE)
      return -1;
    if (sync_relay_is_current(s, sub, file))
      return 0;
    if (dm_binlog_reader_open_file(&r, path, &o, err) < 0)
      return -1;
  }
  dm_binlog_reader_close(s->r);
  s->r = r;
  dm_strlcpy(s->subdir, sub, sizeof s->subdir);
  dm_strlcpy(s->file, file, sizeof s->file);
  s->next_file[0] = '\0';
  return 0;
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
  if (sync_relay_name(s, "binlog file of the start position", from->name, err) < 0)
    return -1;
  char dirs[64][256];
  int n = sync_relay_index(s, dirs, 64, err);
  if (n < 0)
    return -1;
  for (int i = n - 1; i >= 0; i--)
    if (sync_file_exists(s->relay, dirs[i], from->name))
      return sync_relay_open_file(s, dirs[i], from->name, from->pos, err);
  /* The relay has written nothing yet (no sub-folder, or no file in the newest), or not yet got
   * to the file (a later one of the same binlog; the same one: created since it was looked for
   * above): not there yet, looked for again. */
  char last[DM_POSITION_NAME_MAX] = "";
  if (n > 0)
    sync_relay_edge_file(s->relay, dirs[n - 1], true, last, sizeof last);
  const char *dot = strrchr(from->name, '.'), *ldot = strrchr(last, '.');
  if (!last[0] || (dot && ldot && dot - from->name == ldot - last &&
                   strncmp(from->name, last, (size_t)(dot - from->name)) == 0 &&
                   strlen(from->name) == strlen(last) && strcmp(from->name, last) >= 0))
    return 0;
  u->host->error_make(u->ctx, err, DM_ERR_BINLOG_PURGED, NULL,
                      "sync: the relay log in %s has no file %s (position %s:%" PRIu64
                      "): it was purged, or the relay started after it",
                      s->relay, from->name, from->name, from->pos);
  return -1;
}

/* Nothing in the current file: move on when the relay has (ROTATE seen, or a newer sub-folder). */
static int sync_relay_advance(sync_source *s, dm_error *err) {
  if (s->next_file[0]) {
    if (!sync_file_exists(s->relay, s->subdir, s->next_file))
      return 0;
    char sub[256], next[DM_POSITION_NAME_MAX];
    dm_strlcpy(sub, s->subdir, sizeof sub);
    dm_strlcpy(next, s->next_file, sizeof next);
    if (sync_relay_open_file(s, sub, next, 4, err) < 0)
      return -1;
    return strcmp(s->file, next) == 0 ? 1 : 0; /* 0: not written yet */
  }
  if (++s->idle_rounds % 100 != 0)
    return 0; /* a newer sub-folder is rare: look about every half second */
  /* No ROTATE seen in this file, yet the relay has written a later one here: the sync started
   * past the ROTATE (a checkpoint at the file's very end), and this file is complete. Go on as
   * if the ROTATE had named the next file (one more read of this file first: the next round). */
  char later[DM_POSITION_NAME_MAX];
  sync_relay_next_after(s->relay, s->subdir, s->file, later, sizeof later);
  if (later[0]) {
    dm_strlcpy(s->next_file, later, sizeof s->next_file);
    return 0;
  }
  char dirs[64][256];
  int n = sync_relay_index(s, dirs, 64, err);
  if (n < 0)
    return -1;
  for (int i = 0; i + 1 < n; i++)
    if (strcmp(dirs[i], s->subdir) == 0) {
      if (sync_relay_has_later(s->relay, s->subdir, s->file))
        return 0;
      char first[DM_POSITION_NAME_MAX];
      sync_relay_edge_file(s->relay, dirs[i + 1], false, first, sizeof first);
      if (!first[0])
        return 0;
      if (sync_relay_open_file(s, dirs[i + 1], first, 4, err) < 0)
        return -1;
      if (strcmp(s->subdir, dirs[i + 1]) != 0)
        return 0; /* not written yet */
      s->u->host->logf(s->u->ctx, DM_LOG_INFO,
                       "sync: the relay log moved on to sub-folder %s: reading %s from there",
                       dirs[i + 1], first);
      return 1;
    }
  return 0;
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
    s->pending = *from;
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

/* Relay on, and its start file not written yet: look again (a short, interruptible wait). */
static int sync_relay_retry_open(sync_source *s, dm_error *err) {
  if (sync_relay_open(s, &s->pending, err) < 0)
    return -1;
  if (s->r) {
    if (s->said_waiting)
      s->u->host->logf(s->u->ctx, DM_LOG_INFO, "sync: the relay has written %s/%s: reading it",
                       s->subdir, s->file);
    return 0;
  }
  if (!s->said_waiting)
    s->u->host->logf(s->u->ctx, DM_LOG_INFO,
                     "sync: the relay log in %s has not written %s yet (a relay that has just "
                     "started): waiting for it",
                     s->relay, s->pending.name);
  s->said_waiting = true;
  s->u->host->wait_stop(s->u->ctx, SYNC_RELAY_POLL_MS);
  return 0;
}

int sync_source_next(sync_source *s, dm_binlog_event *ev, dm_error *err) {
  if (!s->r && sync_relay_retry_open(s, err) < 0)
    return -1;
  if (!s->r)
    return 0;
  for (;;) {
    int rc = dm_binlog_reader_next(s->r, ev, err);
    if (rc < 0)
      return -1;
    if (rc == 0) {
      if (!s->relay)
        return 0; /* a non-blocking end, or interrupted */
      rc = sync_relay_advance(s, err);
      if (rc <= 0)
        return rc;
      continue;
    }
    if (ev->artificial)
      return ev->header.type == DM_BINLOG_HEARTBEAT || ev->header.type == DM_BINLOG_HEARTBEAT_V2
                 ? 0
                 : 1;
    s->idle_rounds = 0;
    if (s->relay && ev->header.type == DM_BINLOG_ROTATE) {
      dm_binlog_rotate rot;
      if (dm_binlog_decode_rotate(dm_binlog_reader_format(s->r), ev, &rot, err) < 0)
        return -1;
      if (sync_relay_name_n(s, "binlog file named by a ROTATE event", rot.next_file.ptr,
                            rot.next_file.len, err) < 0)
        return -1;
      /* a plain name has at most DM_FS_NAME_MAX bytes: it fits */
      memcpy(s->next_file, rot.next_file.ptr, rot.next_file.len);
      s->next_file[rot.next_file.len] = '\0';
    }
    return 1;
  }
}

const dm_binlog_format *sync_source_format(const sync_source *s) {
  return dm_binlog_reader_format(s->r);
}

void sync_source_interrupt(sync_source *s) {
  if (s && s->r)
    dm_binlog_reader_interrupt(s->r);
}

void sync_source_checkpoint(sync_source *s, const dm_position *pos) {
  if (!s->relay || !pos->name[0])
    return;
  char line[600];
  snprintf(line, sizeof line, "%s/%s", s->subdir, pos->name);
  if (strcmp(line, s->registered) == 0)
    return;
  const char *task = s->u->host->task_name(s->u->ctx);
  dm_error err;
  if (dm_relay_reader_register(s->relay, task, s->subdir, pos->name,
                               (unsigned)dm_host_file_mode(s->u->host, s->u->ctx), &err) == 0)
    dm_strlcpy(s->registered, line, sizeof s->registered);
  else {
    s->u->host->logf(s->u->ctx, DM_LOG_WARN, "sync: %s (%s)", err.message, err.raw_cause);
    if (err.code == DM_ERR_CONFIG_INVALID) /* a name that can never work: say it once per file */
      dm_strlcpy(s->registered, line, sizeof s->registered);
  }
}

void sync_source_close(sync_source *s) {
  if (!s)
    return;
  dm_binlog_reader_close(s->r);
  free(s);
}
