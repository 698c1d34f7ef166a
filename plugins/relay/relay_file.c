/*
 * The relay file writer and its crash recovery.
 *
 * Events are appended to a user-space buffer and handed to the kernel in one write() when the
 * buffer fills or the stream goes idle (the upstream has nothing more right now), so a reader
 * following the file sees new events within one poll round, and an OLTP stream of small events
 * costs one system call per buffer rather than per event. The buffer holds whole events only.
 * relay.meta is written by the caller after relay_file_flush, so it never names bytes that are
 * not in the file.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dmhost/sdk.h"
#include "relay_internal.h"

static int file_io(dm_error *err, const char *what, const relay_file *f) {
  dm_error_set(err, DM_ERR_IO, strerror(errno), "relay: cannot %s %s/%s", what, f->dir, f->name);
  return -1;
}

int relay_file_init(relay_file *f, size_t buf_cap, relay_fsync policy) {
  memset(f, 0, sizeof *f);
  f->fd = -1;
  f->buf_cap = buf_cap;
  f->fsync_policy = policy;
  f->buf = malloc(buf_cap);
  return f->buf ? 0 : -1;
}

void relay_file_free(relay_file *f) {
  if (f->fd >= 0)
    close(f->fd);
  f->fd = -1;
  free(f->buf);
  f->buf = NULL;
}

int relay_file_open(relay_file *f, const char *dir, const char *name, uint64_t size,
                    dm_error *err) {
  dm_strlcpy(f->dir, dir, sizeof f->dir);
  dm_strlcpy(f->name, name, sizeof f->name);
  char path[RELAY_DIR_MAX + 300];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  f->fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (f->fd < 0)
    return file_io(err, "open", f);
  struct stat sb;
  if (fstat(f->fd, &sb) < 0)
    return file_io(err, "stat", f);
  if ((uint64_t)sb.st_size > size && ftruncate(f->fd, (off_t)size) < 0)
    return file_io(err, "truncate", f);
  if ((uint64_t)sb.st_size < size) {
    errno = EINVAL;
    dm_error_set(err, DM_ERR_BINLOG_CORRUPT, NULL,
                 "relay: %s is %lld bytes, shorter than the position %" PRIu64
                 " relay.meta names (data lost in a crash)",
                 path, (long long)sb.st_size, size);
    return -1;
  }
  if (lseek(f->fd, (off_t)size, SEEK_SET) < 0)
    return file_io(err, "seek in", f);
  f->size = f->flushed = size;
  f->buf_len = 0;
  f->dirty_since_sync = false;
  return 0;
}

static int file_write_all(relay_file *f, const unsigned char *p, size_t len, dm_error *err) {
  while (len) {
    ssize_t w = write(f->fd, p, len);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return file_io(err, "write", f);
    p += w;
    len -= (size_t)w;
    f->flushed += (uint64_t)w;
  }
  f->dirty_since_sync = true;
  return 0;
}

int relay_file_append(relay_file *f, const void *data, size_t len, dm_error *err) {
  if (f->buf_len + len > f->buf_cap) {
    if (relay_file_flush(f, false, err) < 0)
      return -1;
    if (len > f->buf_cap) { /* a big event goes straight through, still whole */
      if (file_write_all(f, data, len, err) < 0)
        return -1;
      f->size += len;
      return 0;
    }
  }
  memcpy(f->buf + f->buf_len, data, len);
  f->buf_len += len;
  f->size += len;
  return 0;
}

int relay_file_flush(relay_file *f, bool sync, dm_error *err) {
  if (f->fd < 0)
    return 0;
  if (f->buf_len) {
    if (file_write_all(f, f->buf, f->buf_len, err) < 0)
      return -1;
    f->buf_len = 0;
  }
  if (sync && f->fsync_policy == RELAY_FSYNC_FLUSH && f->dirty_since_sync) {
    if (fdatasync(f->fd) < 0)
      return file_io(err, "fsync", f);
    f->dirty_since_sync = false;
  }
  return 0;
}

int relay_file_close(relay_file *f, dm_error *err) {
  if (f->fd < 0)
    return 0;
  int rc = relay_file_flush(f, true, err);
  if (rc == 0 && f->fsync_policy == RELAY_FSYNC_ROTATE && f->dirty_since_sync &&
      fdatasync(f->fd) < 0)
    rc = file_io(err, "fsync", f);
  close(f->fd);
  f->fd = -1;
  return rc;
}

/* ---- recovery ---- */

int relay_file_recover(const char *dir, relay_meta *m, char *note, size_t note_len, dm_error *err) {
  char path[RELAY_DIR_MAX + 300];
  snprintf(path, sizeof path, "%s/%s", dir, m->binlog_name);
  note[0] = '\0';
  struct stat sb;
  if (stat(path, &sb) < 0) {
    if (errno == ENOENT && m->binlog_pos <= DM_BINLOG_MAGIC_LEN) {
      m->binlog_pos = 0; /* nothing written yet */
      return 0;
    }
    dm_error_set(err, DM_ERR_BINLOG_CORRUPT, strerror(errno),
                 "relay: %s named by %s/relay.meta is gone; remove the sub-folder from %s and "
                 "start the relay again",
                 path, dir, RELAY_INDEX_NAME);
    return -1;
  }
  uint64_t size = (uint64_t)sb.st_size;
  relay_gtid_set set, meta_set;
  relay_gtid_parse(&meta_set, m->binlog_gtid);
  set = meta_set;
  relay_gtid_set at_boundary = set;
  uint64_t boundary = 0, at = 0;
  bool seen_list = false, past_meta = m->binlog_pos <= DM_BINLOG_MAGIC_LEN;
  /* The whole file is checked from its start (the SDK reader verifies every checksum): damage
   * anywhere in the file the relay still appends to is found now, not by a reader later. */
  dm_binlog_reader *r = NULL;
  dm_error rerr;
  dm_binlog_file_options fo = {.start_pos = 0};
  if (dm_binlog_reader_open_file(&r, path, &fo, &rerr) < 0) {
    if (rerr.code == DM_ERR_IO) {
      *err = rerr;
      return -1;
    }
    snprintf(note, note_len, "%s; the file is fetched again from its start", rerr.message);
  } else {
    boundary = at = DM_BINLOG_MAGIC_LEN;
    relay_trx trx = {0};
    for (;;) {
      dm_binlog_event ev;
      int rc = dm_binlog_reader_next(r, &ev, &rerr);
      if (rc == 0)
        break;
      if (rc < 0) {
        if (rerr.code == DM_ERR_IO) {
          dm_binlog_reader_close(r);
          *err = rerr;
          return -1;
        }
        snprintf(note, note_len, "%s; truncated to the last complete transaction at %llu",
                 rerr.message, (unsigned long long)boundary);
        break;
      }
      uint64_t end = ev.offset + ev.raw_len;
      if (ev.offset < m->binlog_pos && end > m->binlog_pos) {
        snprintf(note, note_len,
                 "%s: relay.meta's position %llu falls inside the event at offset %llu; "
                 "truncated to %llu",
                 path, (unsigned long long)m->binlog_pos, (unsigned long long)ev.offset,
                 (unsigned long long)boundary);
        break;
      }
      bool take_list = !seen_list && ev.offset < 1024;
      if (ev.header.type == DM_BINLOG_GTID_LIST)
        seen_list = true;
      bool b = relay_trx_feed(&trx, dm_binlog_reader_format(r), &ev, &set, take_list);
      at = end;
      if (at == m->binlog_pos) {
        /* relay.meta's set is authoritative at its own position */
        past_meta = true;
        set = meta_set;
        trx.in_trx = false;
        b = true;
      }
      if (b) {
        boundary = at;
        at_boundary = set;
      }
    }
    dm_binlog_reader_close(r);
  }
  if (!past_meta && boundary < m->binlog_pos && !seen_list) {
    size_t l = strlen(note);
    snprintf(note + l, note_len - l,
             "%s(the GTID set at %llu cannot be rebuilt: the file has no GTID list; relay.meta's "
             "set is kept)",
             l ? " " : "", (unsigned long long)boundary);
  }
  if (boundary != size) {
    if (truncate(path, (off_t)boundary) < 0) {
      dm_error_set(err, DM_ERR_IO, strerror(errno), "relay: cannot truncate %s to %llu", path,
                   (unsigned long long)boundary);
      return -1;
    }
    if (!note[0])
      snprintf(note, note_len,
               "%s: %llu bytes of an incomplete transaction after offset %llu removed", path,
               (unsigned long long)(size - boundary), (unsigned long long)boundary);
  }
  m->binlog_pos = boundary;
  relay_gtid_format(&at_boundary, m->binlog_gtid, sizeof m->binlog_gtid);
  return 0;
}
