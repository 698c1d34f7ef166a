/*
 * Reading a relay folder as one stream of events (dmhost/relay_log.h). Moved here from the sync
 * unit (plugins/sync/sync_source.c), which now reads the relay through it.
 *
 * One file at a time is open, with the SDK's following file reader; the reader's wait callback
 * is ours (rl_file_wait): it calls the caller's wait and, about every RL_LOOK_MS, gives up on the
 * file for a moment so dm_relay_log_next can look whether the relay has moved on (a later file in
 * the sub-folder, a newer sub-folder) where no ROTATE says so. A file the relay has not written
 * yet (not there, or the relay's newest without its magic and format description) is looked for
 * again after each wait.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "dmhost/fs.h"
#include "dmhost/relay_folder.h"
#include "dmhost/relay_log.h"
#include "dmhost/relay_reader.h"
#include "dmhost/sdk.h"

#define RL_LOOK_MS 500 /* a newer sub-folder, or a start past a ROTATE, is rare */
#define RL_POLL_MS 50

struct dm_relay_log {
  char *dir; /* the relay folder */
  dm_relay_log_options o;
  char *reader;
  dm_binlog_reader *br;                 /* the file being read, or NULL */
  char sub[DM_FS_NAME_MAX + 1];         /* its sub-folder */
  char file[DM_POSITION_NAME_MAX];      /* its name */
  char prev_sub[DM_FS_NAME_MAX + 1];    /* the file read before it, for a lagging checkpoint */
  char prev_file[DM_POSITION_NAME_MAX]; /* */
  char next_sub[DM_FS_NAME_MAX + 1];    /* where to go when the file ends: "" same sub-folder */
  char next_file[DM_POSITION_NAME_MAX]; /* "" none known yet */
  char registered[2 * DM_FS_NAME_MAX + 2];
  dm_position start; /* the start position while its file is awaited (br NULL) */
  dm_binlog_format fmt_default;
  uint64_t last_look_ms;
  bool waited, stopped; /* what rl_file_wait did during one dm_binlog_reader_next */
  atomic_bool interrupted;
};

static uint64_t rl_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* A name read from the folder or given by the caller becomes part of a path: plain names only. */
static int rl_name(dm_relay_log *r, const char *what, const char *name, size_t len, dm_error *err) {
  char who[PATH_MAX + 96];
  snprintf(who, sizeof who, "relay log %s: the %s", r->dir, what);
  return dm_relay_name_check(who, name, len, "it is not opened", err);
}

/* The caller's wait: true to look again, false to stop. */
static bool rl_wait(dm_relay_log *r, const char *path, uint64_t offset) {
  if (atomic_load(&r->interrupted))
    return false;
  if (r->o.wait)
    return r->o.wait(r->o.wait_arg, path, offset) && !atomic_load(&r->interrupted);
  uint32_t ms = r->o.poll_ms ? r->o.poll_ms : RL_POLL_MS;
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
  return !atomic_load(&r->interrupted);
}

/* The file reader's wait: at the end of a file known complete (the next one is known) give up at
 * once; else the caller's wait, then give up when it is time to look for a newer file. */
static bool rl_file_wait(void *arg, const char *path, uint64_t offset) {
  dm_relay_log *r = arg;
  if (r->next_file[0])
    return false;
  if (!rl_wait(r, path, offset)) {
    r->stopped = true;
    return false;
  }
  r->waited = true;
  return rl_now_ms() - r->last_look_ms < RL_LOOK_MS;
}

static bool rl_exists(const char *dir, const char *sub, const char *file) {
  char path[PATH_MAX];
  struct stat st;
  if (snprintf(path, sizeof path, "%s/%s/%s", dir, sub, file) >= (int)sizeof path)
    return false;
  return lstat(path, &st) == 0;
}

/* Is sub/file the file the relay writes now (the newest sub-folder, nothing after it there)? A
 * file the relay has only created may not hold its magic and format description yet. */
static bool rl_is_current(dm_relay_log *r, const char *sub, const char *file) {
  dm_relay_index ix;
  dm_error ignored;
  if (dm_relay_index_read(r->dir, &ix, &ignored) < 0)
    return false;
  char last[DM_POSITION_NAME_MAX];
  bool current = ix.n > 0 && strcmp(ix.subs[ix.n - 1], sub) == 0 &&
                 !(dm_relay_file_last(r->dir, sub, last, sizeof last) &&
                   dm_relay_file_number(last) > dm_relay_file_number(file));
  dm_relay_index_free(&ix);
  return current;
}

/* Open sub/file at pos. 1 opened (the reader moves there), 0 not written yet (the relay's newest
 * file without its header: the old reader, if any, stays at its end), -1 with err. */
static int rl_open_file(dm_relay_log *r, const char *sub, const char *file, uint64_t pos,
                        dm_error *err) {
  if (rl_name(r, "sub-folder", sub, strlen(sub), err) < 0 ||
      rl_name(r, "binlog file", file, strlen(file), err) < 0)
    return -1;
  char path[PATH_MAX], subpath[PATH_MAX];
  r->last_look_ms = 0; /* a short file's header: one wait in the open, then a look at the folder */
  if (snprintf(path, sizeof path, "%s/%s/%s", r->dir, sub, file) >= (int)sizeof path) {
    dm_error_set(err, DM_ERR_IO, NULL, "relay log %s: the path of %s/%s is too long", r->dir, sub,
                 file);
    return -1;
  }
  snprintf(subpath, sizeof subpath, "%s/%s", r->dir, sub);
  /* the relay never makes links: one there was planted, and is not followed */
  struct stat sb;
  if ((lstat(subpath, &sb) == 0 && !S_ISDIR(sb.st_mode)) ||
      (lstat(path, &sb) == 0 && !S_ISREG(sb.st_mode))) {
    dm_error_set(err, DM_ERR_RELAY_LINK, NULL,
                 "relay log: %s is a symbolic link or not a plain file; it is not followed", path);
    return -1;
  }
  dm_binlog_file_options o = {.start_pos = pos,
                              .follow = true,
                              .wait = rl_file_wait,
                              .wait_arg = r,
                              .no_verify_checksum = r->o.no_verify_checksum};
  dm_binlog_reader *br = NULL;
  if (dm_binlog_reader_open_file(&br, path, &o, err) < 0) {
    /* The relay has created the file but not yet written its magic and format description:
     * not there yet, look again later. Only in the file the relay writes now: one it has moved
     * past stays short for good, which one more look tells (the relay may have written it and
     * moved on since the first). */
    if (err->code != DM_ERR_BINLOG_INCOMPLETE)
      return -1;
    if (rl_is_current(r, sub, file))
      return 0;
    if (dm_binlog_reader_open_file(&br, path, &o, err) < 0)
      return -1;
  }
  if (r->br) {
    dm_strlcpy(r->prev_sub, r->sub, sizeof r->prev_sub);
    dm_strlcpy(r->prev_file, r->file, sizeof r->prev_file);
  }
  dm_binlog_reader_close(r->br);
  r->br = br;
  dm_strlcpy(r->sub, sub, sizeof r->sub);
  dm_strlcpy(r->file, file, sizeof r->file);
  r->next_sub[0] = r->next_file[0] = '\0';
  r->last_look_ms = rl_now_ms();
  return 1;
}

/* The same base name and number width ("mysql-bin.000007" vs "mysql-bin.000012")? */
static bool rl_same_series(const char *a, const char *b) {
  const char *da = strrchr(a, '.'), *db = strrchr(b, '.');
  return da && db && da - a == db - b && strncmp(a, b, (size_t)(da - a)) == 0 &&
         strlen(a) == strlen(b);
}

/* Find the start file: 1 opened, 0 not written yet, -1 err (purged, names, links, damage). */
static int rl_start(dm_relay_log *r, dm_error *err) {
  const dm_position *from = &r->start;
  dm_relay_index ix;
  if (dm_relay_index_read(r->dir, &ix, err) < 0)
    return -1;
  int rc = 0;
  bool found = false;
  for (int i = ix.n - 1; i >= 0 && !found; i--)
    if (rl_exists(r->dir, ix.subs[i], from->name)) {
      found = true;
      rc = rl_open_file(r, ix.subs[i], from->name, from->pos, err);
    }
  /* The relay has written nothing yet (no sub-folder, or no file in the newest), or not yet got
   * to the file (a later one of the same binlog; the same one: created since it was looked for
   * above): not there yet, looked for again. */
  char last[DM_POSITION_NAME_MAX] = "";
  if (!found && ix.n > 0)
    dm_relay_file_last(r->dir, ix.subs[ix.n - 1], last, sizeof last);
  dm_relay_index_free(&ix);
  if (found || !last[0] || (rl_same_series(from->name, last) && strcmp(from->name, last) >= 0))
    return rc;
  dm_error_set(err, DM_ERR_BINLOG_PURGED, NULL,
               "relay log %s has no file %s (position %s:%" PRIu64
               "): it was purged, or the relay started after it",
               r->dir, from->name, from->name, from->pos);
  return -1;
}

/* The current file gave nothing more: 1 when there is somewhere to go on (read again), 0 not
 * yet, -1 err. After a ROTATE (or a look that found where the relay went), the next file is
 * opened once there; else, every RL_LOOK_MS, a look for a later file in the sub-folder (the start
 * was past this file's ROTATE: this one is complete) or a newer sub-folder (the relay moved to a
 * new upstream). A look only notes where to go: the current file is read to its end once more
 * first, in case the relay wrote its last events after the reader's last read. */
static int rl_advance(dm_relay_log *r, dm_error *err) {
  if (r->next_file[0]) {
    char sub[DM_FS_NAME_MAX + 1], next[DM_POSITION_NAME_MAX];
    dm_strlcpy(sub, r->next_sub[0] ? r->next_sub : r->sub, sizeof sub);
    dm_strlcpy(next, r->next_file, sizeof next);
    if (!rl_exists(r->dir, sub, next))
      return 0;
    return rl_open_file(r, sub, next, 4, err);
  }
  uint64_t now = rl_now_ms();
  if (now - r->last_look_ms < RL_LOOK_MS)
    return 0;
  r->last_look_ms = now;
  char later[DM_POSITION_NAME_MAX];
  if (dm_relay_file_after(r->dir, r->sub, r->file, later, sizeof later)) {
    dm_strlcpy(r->next_file, later, sizeof r->next_file);
    return 1;
  }
  dm_relay_index ix;
  if (dm_relay_index_read(r->dir, &ix, err) < 0)
    return -1;
  int i = dm_relay_index_find(&ix, r->sub), rc = 0;
  char first[DM_POSITION_NAME_MAX];
  if (i >= 0 && i + 1 < ix.n &&
      dm_relay_file_after(r->dir, ix.subs[i + 1], NULL, first, sizeof first)) {
    dm_strlcpy(r->next_sub, ix.subs[i + 1], sizeof r->next_sub);
    dm_strlcpy(r->next_file, first, sizeof r->next_file);
    rc = 1;
  }
  dm_relay_index_free(&ix);
  return rc;
}

/* Register sub/file for opts->reader when it is not what was registered last. */
static int rl_register(dm_relay_log *r, const char *sub, const char *file, dm_error *err) {
  if (!r->reader || !sub[0] || !file[0])
    return 0;
  char line[sizeof r->registered];
  snprintf(line, sizeof line, "%s/%s", sub, file);
  if (strcmp(line, r->registered) == 0)
    return 0;
  if (dm_relay_reader_register(r->dir, r->reader, sub, file,
                               r->o.file_mode ? r->o.file_mode : DM_FS_FILE_MODE, err) == 0) {
    dm_strlcpy(r->registered, line, sizeof r->registered);
    return 0;
  }
  if (err->code == DM_ERR_CONFIG_INVALID) /* a name that can never work: said once per file */
    dm_strlcpy(r->registered, line, sizeof r->registered);
  return -1;
}

int dm_relay_log_open(const char *relay_dir, const dm_position *from,
                      const dm_relay_log_options *opts, dm_relay_log **out, dm_error *err) {
  *out = NULL;
  if (!from->name[0]) {
    dm_error_set(err, DM_ERR_CONFIG_INVALID, NULL,
                 "relay log %s: a start position needs a binlog file and offset, and this one has "
                 "a GTID set only (%s)",
                 relay_dir, from->gtid);
    return -1;
  }
  dm_relay_log *r = calloc(1, sizeof *r);
  if (!r || !(r->dir = strdup(relay_dir)) ||
      (opts && opts->reader && !(r->reader = strdup(opts->reader)))) {
    dm_relay_log_close(r);
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "relay log %s: no memory", relay_dir);
    return -1;
  }
  if (opts)
    r->o = *opts;
  r->o.reader = r->reader;
  r->start = *from;
  r->start.gtid[0] = '\0';
  dm_binlog_format_default(&r->fmt_default, DM_BINLOG_CHECKSUM_CRC32);
  memset(err, 0, sizeof *err);
  if (rl_name(r, "binlog file of the start position", from->name, strlen(from->name), err) < 0 ||
      rl_start(r, err) < 0 || (r->br && rl_register(r, r->sub, r->file, err) < 0)) {
    dm_relay_log_close(r);
    return -1;
  }
  *out = r;
  return 0;
}

int dm_relay_log_next(dm_relay_log *r, dm_binlog_event *ev, dm_error *err) {
  for (;;) {
    if (atomic_load(&r->interrupted))
      return 0;
    if (!r->br) {
      int rc = rl_start(r, err);
      if (rc < 0)
        return -1;
      if (rc == 0) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", r->dir, r->start.name);
        if (!rl_wait(r, path, r->start.pos))
          return 0;
        continue;
      }
      /* a failure here is the next dm_relay_log_checkpoint's to report (it retries) */
      dm_error ignored;
      rl_register(r, r->sub, r->file, &ignored);
    }
    r->waited = r->stopped = false;
    int rc = dm_binlog_reader_next(r->br, ev, err);
    if (rc < 0)
      return -1;
    if (rc == 1) {
      if (ev->header.type == DM_BINLOG_ROTATE) {
        /* the file the relay goes on with: checked before the event is handed on */
        dm_binlog_rotate rot;
        if (dm_binlog_decode_rotate(dm_binlog_reader_format(r->br), ev, &rot, err) < 0 ||
            rl_name(r, "binlog file named by a ROTATE event", rot.next_file.ptr, rot.next_file.len,
                    err) < 0)
          return -1;
        /* a plain name has at most DM_FS_NAME_MAX bytes: it fits */
        memcpy(r->next_file, rot.next_file.ptr, rot.next_file.len);
        r->next_file[rot.next_file.len] = '\0';
        r->next_sub[0] = '\0';
      }
      return 1;
    }
    /* the file has nothing more for now: its end (ROTATE read, or the next file known), the
     * caller's wait said stop, a look is due, or interrupted */
    if (atomic_load(&r->interrupted))
      return 0;
    rc = rl_advance(r, err);
    if (rc < 0)
      return -1;
    if (rc == 1)
      continue;
    if (r->stopped)
      return 0;
    if (r->waited)
      continue; /* the look is done; wait on */
    /* at a file's end with the next one not written yet: wait here */
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s/%s", r->dir, r->next_sub[0] ? r->next_sub : r->sub,
             r->next_file[0] ? r->next_file : r->file);
    if (!rl_wait(r, path, 4))
      return 0;
  }
}

const dm_binlog_format *dm_relay_log_format(const dm_relay_log *r) {
  return r->br ? dm_binlog_reader_format(r->br) : &r->fmt_default;
}

void dm_relay_log_position(const dm_relay_log *r, dm_position *out) {
  if (r->br) {
    dm_binlog_reader_position(r->br, out);
    return;
  }
  *out = r->start;
}

const char *dm_relay_log_subdir(const dm_relay_log *r) {
  return r->br ? r->sub : "";
}

bool dm_relay_log_waiting(const dm_relay_log *r) {
  return r->br == NULL;
}

int dm_relay_log_checkpoint(dm_relay_log *r, const dm_position *pos, dm_error *err) {
  memset(err, 0, sizeof *err);
  if (!r->reader || !pos->name[0] || !r->br)
    return 0;
  /* a checkpoint lags the reading: its file may be the one read before, in an older sub-folder */
  const char *sub = strcmp(pos->name, r->file) != 0 && strcmp(pos->name, r->prev_file) == 0
                        ? r->prev_sub
                        : r->sub;
  return rl_register(r, sub, pos->name, err);
}

void dm_relay_log_interrupt(dm_relay_log *r) {
  if (!r)
    return;
  /* Only the flag: the reading thread may be replacing r->br right now. The file reader blocks
   * only in its wait, which is rl_file_wait: it sees the flag after at most one wait. */
  atomic_store(&r->interrupted, true);
}

void dm_relay_log_close(dm_relay_log *r) {
  if (!r)
    return;
  dm_binlog_reader_close(r->br);
  free(r->dir);
  free(r->reader);
  free(r);
}
