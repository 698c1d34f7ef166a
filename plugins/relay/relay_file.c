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

#include "dmhost/binlog_rows.h"
#include "dmhost/fs.h"
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
  f->mode = DM_FS_FILE_MODE;
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
  if (f->fd >= 0) { /* reopened at another size (a rewind): the old descriptor goes */
    close(f->fd);
    f->fd = -1;
  }
  dm_strlcpy(f->dir, dir, sizeof f->dir);
  dm_strlcpy(f->name, name, sizeof f->name);
  char path[RELAY_DIR_MAX + 300];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  if (dm_relay_name_check("relay: binlog file", name, strlen(name),
                          "the relay stopped without writing it", err) < 0)
    return -1;
  int dfd = dm_relay_subdir_open(dir, err);
  if (dfd < 0)
    return -1;
  f->fd = dm_fs_open_beneath(dfd, name, O_WRONLY | O_CREAT, f->mode);
  int e = errno;
  close(dfd);
  errno = e;
  if (f->fd < 0)
    return dm_relay_open_error(err, "relay", "open", path);
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

/*
 * Are the events in [w0, end) of the file (end: relay.meta's position) whole and intact? w0 is a
 * known event start (the end of the format description), or any offset: then the first offset
 * from which an event's own fields agree (next position = offset + size, both within the window,
 * checksum right) is taken as an event start; a chance agreement of both is ~2^-64. From there
 * every event must check and the last must end exactly at `end`. 1 yes, 0 no (or cannot tell),
 * -1 on a read error.
 */
static int file_check_window(int fd, const char *path, const dm_binlog_format *fmt, uint64_t w0,
                             bool w0_is_event, uint64_t end, dm_error *err) {
  size_t len = (size_t)(end - w0);
  unsigned char *buf = malloc(len ? len : 1);
  if (!buf) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "relay: no memory to check %s", path);
    return -1;
  }
  size_t got = 0;
  while (got < len) {
    ssize_t n = pread(fd, buf + got, len - got, (off_t)(w0 + got));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      dm_error_set(err, DM_ERR_IO, n < 0 ? strerror(errno) : "short read",
                   "relay: cannot read %s at %llu", path, (unsigned long long)(w0 + got));
      free(buf);
      return -1;
    }
    got += (size_t)n;
  }
  int ok = 0;
  size_t at = 0;
  bool synced = w0_is_event;
  dm_binlog_event ev;
  dm_error ignored;
  while (at + DM_BINLOG_HEADER_LEN <= len) {
    uint32_t size = (uint32_t)buf[at + 9] | (uint32_t)buf[at + 10] << 8 |
                    (uint32_t)buf[at + 11] << 16 | (uint32_t)buf[at + 12] << 24;
    uint32_t next = (uint32_t)buf[at + 13] | (uint32_t)buf[at + 14] << 8 |
                    (uint32_t)buf[at + 15] << 16 | (uint32_t)buf[at + 16] << 24;
    bool fits = size >= DM_BINLOG_HEADER_LEN && size <= len - at && next == w0 + at + size;
    if (fits &&
        dm_binlog_event_from_bytes(buf + at, size, fmt, true, path, w0 + at, &ev, &ignored) == 0) {
      synced = true;
      at += size;
      continue;
    }
    if (synced)
      break; /* an event that does not check: damage */
    at++;    /* still looking for the first event start */
  }
  ok = synced && at == len;
  free(buf);
  return ok;
}

/* What may follow a transaction boundary: not the middle of a group. */
static bool file_starts_group(uint8_t type) {
  return type != DM_BINLOG_XID && type != DM_BINLOG_TABLE_MAP && !dm_binlog_is_rows_event(type);
}

/* Cut the file back to `boundary` (the end of its last complete transaction) and say so in note
 * unless a reason is already there. Both recovery paths end this way. */
static int file_cut_to(const char *path, uint64_t size, uint64_t boundary, char *note,
                       size_t note_len, dm_error *err) {
  if (boundary == size)
    return 0;
  if (truncate(path, (off_t)boundary) < 0) {
    dm_error_set(err, DM_ERR_IO, strerror(errno), "relay: cannot truncate %s to %llu", path,
                 (unsigned long long)boundary);
    return -1;
  }
  if (!note[0])
    snprintf(note, note_len,
             "%s: %llu bytes of an incomplete transaction after offset %llu removed", path,
             (unsigned long long)(size - boundary), (unsigned long long)boundary);
  return 0;
}

/*
 * Recovery from relay.meta's position (a transaction boundary the relay wrote, its GTID set
 * known): the RELAY_RECOVER_WINDOW bytes before it are checked (the last writes, where a crash
 * tears or loses data), then everything after it, truncated at the last boundary. 1 done, 0 when
 * the fast way cannot tell (the window or the position do not check): the caller reads the whole
 * file instead; -1 on I/O errors.
 */
static int file_recover_from_meta(const char *path, uint64_t size, relay_meta *m, char *note,
                                  size_t note_len, dm_error *err) {
  dm_binlog_reader *r = NULL;
  dm_error rerr;
  dm_binlog_file_options fo = {.start_pos = m->binlog_pos};
  if (dm_binlog_reader_open_file(&r, path, &fo, &rerr) < 0) {
    if (rerr.code == DM_ERR_IO) {
      *err = rerr;
      return -1;
    }
    return 0;
  }
  const dm_binlog_format *fmt = dm_binlog_reader_format(r);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  unsigned char h[DM_BINLOG_HEADER_LEN];
  if (fd < 0 || pread(fd, h, sizeof h, DM_BINLOG_MAGIC_LEN) != (ssize_t)sizeof h) {
    dm_error_set(err, DM_ERR_IO, strerror(errno), "relay: cannot read %s", path);
    if (fd >= 0)
      close(fd);
    dm_binlog_reader_close(r);
    return -1;
  }
  uint64_t fde_end = DM_BINLOG_MAGIC_LEN + ((uint64_t)h[9] | (uint64_t)h[10] << 8 |
                                            (uint64_t)h[11] << 16 | (uint64_t)h[12] << 24);
  int ok = 0;
  if (fde_end <= m->binlog_pos) {
    uint64_t w0 = m->binlog_pos > fde_end + RELAY_RECOVER_WINDOW
                      ? m->binlog_pos - RELAY_RECOVER_WINDOW
                      : fde_end;
    ok = file_check_window(fd, path, fmt, w0, w0 == fde_end, m->binlog_pos, err);
  }
  close(fd);
  if (ok <= 0) {
    dm_binlog_reader_close(r);
    return ok;
  }
  dm_mariadb_gtid_set set, at_boundary;
  dm_mariadb_gtid_set_parse(&set, m->binlog_gtid);
  at_boundary = set;
  dm_binlog_trx trx = {0};
  uint64_t boundary = m->binlog_pos;
  bool first = true;
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
    if (first && (ev.offset != m->binlog_pos || !file_starts_group(ev.header.type))) {
      dm_binlog_reader_close(r); /* relay.meta's position is not a boundary after all */
      return 0;
    }
    first = false;
    if (relay_trx_feed(&trx, dm_binlog_reader_format(r), &ev, &set, false)) {
      boundary = ev.offset + ev.raw_len;
      at_boundary = set;
    }
  }
  dm_binlog_reader_close(r);
  if (file_cut_to(path, size, boundary, note, note_len, err) < 0)
    return -1;
  m->binlog_pos = boundary;
  dm_mariadb_gtid_set_format(&at_boundary, m->binlog_gtid, sizeof m->binlog_gtid);
  return 1;
}

int relay_file_recover(const char *dir, relay_meta *m, char *note, size_t note_len, dm_error *err) {
  char path[RELAY_DIR_MAX + 300];
  snprintf(path, sizeof path, "%s/%s", dir, m->binlog_name);
  note[0] = '\0';
  struct stat sb;
  if (lstat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
    errno = ELOOP;
    return dm_relay_open_error(err, "relay", "recover", path);
  }
  if (stat(path, &sb) < 0) {
    if (errno == ENOENT && m->binlog_pos <= DM_BINLOG_MAGIC_LEN) {
      m->binlog_pos = 0; /* nothing written yet */
      return 0;
    }
    dm_error_set(err, DM_ERR_BINLOG_CORRUPT, strerror(errno),
                 "relay: %s named by %s/relay.meta is gone; remove the sub-folder from %s and "
                 "start the relay again",
                 path, dir, DM_RELAY_INDEX_NAME);
    return -1;
  }
  uint64_t size = (uint64_t)sb.st_size;
  if (m->binlog_pos > DM_BINLOG_MAGIC_LEN && size >= m->binlog_pos) {
    int rc = file_recover_from_meta(path, size, m, note, note_len, err);
    if (rc != 0)
      return rc < 0 ? -1 : 0;
  }
  dm_mariadb_gtid_set set, meta_set;
  dm_mariadb_gtid_set_parse(&meta_set, m->binlog_gtid);
  set = meta_set;
  dm_mariadb_gtid_set at_boundary = set;
  uint64_t boundary = 0, at = 0;
  bool seen_list = false, past_meta = m->binlog_pos <= DM_BINLOG_MAGIC_LEN;
  /* The whole file from its start (the SDK reader verifies every checksum), when the fast way
   * could not tell: the file is shorter than relay.meta says, or damaged in the window before
   * its position. */
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
    dm_binlog_trx trx = {0};
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
        dm_binlog_trx_reset(&trx);
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
  if (file_cut_to(path, size, boundary, note, note_len, err) < 0)
    return -1;
  m->binlog_pos = boundary;
  dm_mariadb_gtid_set_format(&at_boundary, m->binlog_gtid, sizeof m->binlog_gtid);
  return 0;
}
