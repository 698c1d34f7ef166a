/*
 * The file reader: a binlog or relay file read with large read() calls into one buffer, events
 * handed out in place (no copy) once all their bytes are in. The buffer grows only to fit the
 * largest event, and only once the file really holds that many bytes, so a damaged size field
 * cannot make the reader allocate more than the file's size.
 *
 * Also the reader entry points shared with the stream reader (dispatch through the ops table, so
 * that a unit reading files only never pulls binlog_stream.o and libmariadb in).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "binlog_internal.h"

#define FILE_DEFAULT_BUFFER (1u << 20)
#define FILE_MIN_BUFFER (64u << 10)

typedef struct file_reader {
  struct dm_binlog_reader base;
  int fd;
  char *path;
  uint8_t *buf;
  size_t cap, start, end; /* valid bytes: buf[start, end) */
  uint64_t buf_off;       /* file offset of buf[start] */
  bool follow;
  dm_binlog_wait_fn wait;
  void *wait_arg;
  uint32_t poll_ms;
  bool ended;  /* following, and the file's last event (ROTATE/STOP) was returned */
  bool failed; /* after an error: only close */
} file_reader;

/* ---- shared entry points ---- */

int dm_binlog_reader_next(dm_binlog_reader *r, dm_binlog_event *ev, dm_error *err) {
  return r->ops->next(r, ev, err);
}

const dm_binlog_format *dm_binlog_reader_format(const dm_binlog_reader *r) {
  return &r->fmt;
}

void dm_binlog_reader_position(const dm_binlog_reader *r, dm_position *out) {
  memset(out, 0, sizeof *out);
  dm_strlcpy(out->name, r->file, sizeof out->name);
  out->pos = r->pos;
}

uint64_t dm_binlog_reader_offset(const dm_binlog_reader *r) {
  return r->pos;
}

size_t dm_binlog_reader_buffer_size(const dm_binlog_reader *r) {
  return r->max_buffer;
}

bool dm_binlog_reader_pending(dm_binlog_reader *r) {
  return !r->ops->pending || r->ops->pending(r);
}

int dm_binlog_reader_fd(const dm_binlog_reader *r) {
  return r->ops->fd ? r->ops->fd(r) : -1;
}

void dm_binlog_reader_interrupt(dm_binlog_reader *r) {
  atomic_store(&r->interrupted, true);
  if (r->ops->interrupt)
    r->ops->interrupt(r);
}

void dm_binlog_reader_close(dm_binlog_reader *r) {
  if (r)
    r->ops->close(r);
}

/* ---- the file reader ---- */

static void file_close(dm_binlog_reader *base) {
  file_reader *r = (file_reader *)base;
  if (r->fd >= 0)
    close(r->fd);
  free(r->buf);
  free(r->path);
  free(r);
}

static int file_fail(file_reader *r, int rc) {
  r->failed = true;
  return rc;
}

/* Make room for `need` contiguous bytes from buf[start]; grows the buffer if need > cap. */
static int file_make_room(file_reader *r, size_t need, dm_error *err) {
  if (need > r->cap) {
    size_t cap = r->cap * 2 > need ? r->cap * 2 : need;
    uint8_t *nb = malloc(cap);
    if (!nb) {
      dm_error_set(err, DM_ERR_NO_MEMORY, NULL,
                   "binlog %s: no memory for a %zu-byte event buffer at offset %" PRIu64, r->path,
                   cap, r->buf_off);
      return -1;
    }
    memcpy(nb, r->buf + r->start, r->end - r->start);
    free(r->buf);
    r->buf = nb;
    r->cap = cap;
    r->end -= r->start;
    r->start = 0;
    if (cap > r->base.max_buffer)
      r->base.max_buffer = cap;
  } else if (r->start + need > r->cap || r->end == r->cap) {
    memmove(r->buf, r->buf + r->start, r->end - r->start);
    r->end -= r->start;
    r->start = 0;
  }
  return 0;
}

/* Reads more of the file. Returns bytes read (0 at the current end of file), or -1. */
static ssize_t file_fill(file_reader *r, dm_error *err) {
  for (;;) {
    ssize_t n = read(r->fd, r->buf + r->end, r->cap - r->end);
    if (n >= 0) {
      r->end += (size_t)n;
      return n;
    }
    if (errno == EINTR)
      continue;
    dm_error_set(err, DM_ERR_IO, strerror(errno), "binlog %s: read at offset %" PRIu64 " failed",
                 r->path, r->buf_off + (r->end - r->start));
    return -1;
  }
}

static bool file_wait(file_reader *r) {
  if (atomic_load(&r->base.interrupted))
    return false;
  if (r->wait)
    return r->wait(r->wait_arg, r->path, r->buf_off) && !atomic_load(&r->base.interrupted);
  struct timespec ts = {(time_t)(r->poll_ms / 1000), (long)(r->poll_ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
  return !atomic_load(&r->base.interrupted);
}

/*
 * Get the next complete event's bytes at buf[start]. Returns 1 with *size, 0 at the end (clean end
 * of file, or the wait gave up), -1 with err.
 */
static int file_next_raw(file_reader *r, uint32_t *size, dm_error *err) {
  for (;;) {
    size_t avail = r->end - r->start;
    size_t need = DM_BINLOG_HEADER_LEN;
    uint32_t next_pos = 0;
    if (avail >= DM_BINLOG_HEADER_LEN) {
      const uint8_t *h = r->buf + r->start;
      uint32_t sz = bl_le32(h + 9);
      next_pos = bl_le32(h + 13);
      if (sz < DM_BINLOG_HEADER_LEN) {
        dm_error_set(err, DM_ERR_BINLOG_CORRUPT, NULL,
                     "binlog %s: damaged event header at offset %" PRIu64 ": event size %" PRIu32
                     " is below the 19-byte header",
                     r->path, r->buf_off, sz);
        return -1;
      }
      if (avail >= sz) {
        *size = sz;
        return 1;
      }
      need = sz;
    }
    if (need > r->cap) {
      /* Grow only once the file holds the whole event: a damaged size must not allocate. */
      struct stat st;
      if (fstat(r->fd, &st) == 0 && (uint64_t)st.st_size < r->buf_off + need)
        goto at_end;
    }
    if (file_make_room(r, need, err) < 0)
      return -1;
    ssize_t n = file_fill(r, err);
    if (n < 0)
      return -1;
    if (n > 0)
      continue;
  at_end:
    avail = r->end - r->start;
    if (r->follow) {
      if (!file_wait(r))
        return 0;
      continue;
    }
    if (avail == 0)
      return 0;
    if (avail >= DM_BINLOG_HEADER_LEN && next_pos != 0 &&
        (uint32_t)(r->buf_off + need) != next_pos) {
      /* A cut-short write keeps a header that agrees with itself; this one does not. */
      dm_error_set(err, DM_ERR_BINLOG_CORRUPT, NULL,
                   "binlog %s: damaged event header at offset %" PRIu64 ": it says %zu bytes "
                   "ending at %" PRIu64 ", past the end of the file, and names %" PRIu32
                   " as the next position",
                   r->path, r->buf_off, need, r->buf_off + need, next_pos);
      return -1;
    }
    dm_error_set(err, DM_ERR_BINLOG_INCOMPLETE, NULL,
                 "binlog %s: incomplete event at offset %" PRIu64 ": the file ends after %zu of "
                 "its %s bytes",
                 r->path, r->buf_off, avail,
                 avail >= DM_BINLOG_HEADER_LEN ? "announced" : "19 header");
    return -1;
  }
}

static int file_next(dm_binlog_reader *base, dm_binlog_event *ev, dm_error *err) {
  file_reader *r = (file_reader *)base;
  if (r->failed) {
    dm_error_set(err, DM_ERR_INTERNAL, NULL,
                 "binlog %s: the reader failed earlier; close it and open a new one", r->path);
    return -1;
  }
  if (r->ended)
    return 0;
  uint32_t size;
  int rc = file_next_raw(r, &size, err);
  if (rc <= 0)
    return rc < 0 ? file_fail(r, -1) : 0;
  uint64_t off = r->buf_off;
  if (dm_binlog_event_from_bytes(r->buf + r->start, size, &r->base.fmt, r->base.verify,
                                 r->base.file, off, ev, err) < 0) {
    /* name the full path, not only the base name */
    char msg[sizeof err->message];
    dm_strlcpy(msg, err->message, sizeof msg);
    dm_error_set(err, DM_ERR_BINLOG_CORRUPT, NULL, "%s (file %s)", msg, r->path);
    return file_fail(r, -1);
  }
  r->start += size;
  r->buf_off += size;
  r->base.pos = r->buf_off;
  switch (ev->header.type) {
  case DM_BINLOG_FORMAT_DESCRIPTION:
    if (dm_binlog_decode_format(ev, &r->base.fmt, err) < 0)
      return file_fail(r, -1);
    break;
  case DM_BINLOG_START_ENCRYPTION:
    dm_error_set(err, DM_ERR_BINLOG_UNSUPPORTED, NULL,
                 "binlog %s: encrypted from offset %" PRIu64 " (START_ENCRYPTION): encrypted "
                 "binlogs cannot be read",
                 r->path, off);
    return file_fail(r, -1);
  case DM_BINLOG_ROTATE:
  case DM_BINLOG_STOP:
    if (r->follow)
      r->ended = true;
    break;
  default:
    break;
  }
  ev->artificial = (ev->header.flags & DM_BINLOG_F_ARTIFICIAL) != 0;
  return 1;
}

static const bl_reader_ops file_ops = {
    .next = file_next,
    .interrupt = NULL,
    .close = file_close,
};

/* Drop the buffer and read from `off` on. */
static int file_seek(file_reader *r, uint64_t off, dm_error *err) {
  if (lseek(r->fd, (off_t)off, SEEK_SET) < 0) {
    dm_error_set(err, DM_ERR_IO, strerror(errno), "binlog %s: cannot seek to offset %" PRIu64,
                 r->path, off);
    return -1;
  }
  r->start = r->end = 0;
  r->buf_off = off;
  r->base.pos = off;
  return 0;
}

int dm_binlog_reader_open_file(dm_binlog_reader **out, const char *path,
                               const dm_binlog_file_options *opts, dm_error *err) {
  *out = NULL;
  dm_binlog_file_options none = {0};
  if (!opts)
    opts = &none;
  file_reader *r = calloc(1, sizeof *r);
  if (!r) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "binlog %s: no memory for a reader", path);
    return -1;
  }
  r->base.ops = &file_ops;
  r->fd = -1;
  r->path = strdup(path);
  r->cap = opts->buffer_size ? opts->buffer_size : FILE_DEFAULT_BUFFER;
  if (r->cap < FILE_MIN_BUFFER)
    r->cap = FILE_MIN_BUFFER;
  r->buf = malloc(r->cap);
  if (!r->path || !r->buf) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "binlog %s: no memory for a reader", path);
    file_close(&r->base);
    return -1;
  }
  r->base.max_buffer = r->cap;
  r->base.verify = !opts->no_verify_checksum;
  r->follow = opts->follow;
  r->wait = opts->wait;
  r->wait_arg = opts->wait_arg;
  r->poll_ms = opts->poll_ms ? opts->poll_ms : 50;
  const char *slash = strrchr(path, '/');
  dm_strlcpy(r->base.file, slash ? slash + 1 : path, sizeof r->base.file);
  dm_binlog_format_default(&r->base.fmt, DM_BINLOG_CHECKSUM_OFF);

  r->fd = open(path, O_RDONLY | O_CLOEXEC);
  if (r->fd < 0) {
    dm_error_set(err, DM_ERR_IO, strerror(errno), "binlog %s: cannot open: %s", path,
                 strerror(errno));
    file_close(&r->base);
    return -1;
  }
  /* The magic: wait for it when following a file its writer has only just created. */
  while (r->end < DM_BINLOG_MAGIC_LEN) {
    ssize_t n = file_fill(r, err);
    if (n < 0)
      goto fail;
    if (n == 0) {
      if (r->follow && file_wait(r))
        continue;
      dm_error_set(err, DM_ERR_BINLOG_INCOMPLETE, NULL,
                   "binlog %s: incomplete event at offset 0: the file has %zu bytes, not even "
                   "the 4-byte binlog magic",
                   path, r->end);
      goto fail;
    }
  }
  if (memcmp(r->buf, DM_BINLOG_MAGIC, DM_BINLOG_MAGIC_LEN) != 0) {
    dm_error_set(err, DM_ERR_BINLOG_CORRUPT, NULL,
                 "binlog %s: not a binlog file: offset 0 holds %02x %02x %02x %02x, expected the "
                 "magic fe 62 69 6e",
                 path, r->buf[0], r->buf[1], r->buf[2], r->buf[3]);
    goto fail;
  }
  r->start = DM_BINLOG_MAGIC_LEN;
  r->buf_off = DM_BINLOG_MAGIC_LEN;
  r->base.pos = DM_BINLOG_MAGIC_LEN;
  /* The format description first, whatever the start: it says how to read the rest. */
  dm_binlog_event ev;
  bool follow = r->follow;
  int rc = file_next(&r->base, &ev, err);
  r->ended = false;
  r->follow = follow;
  if (rc == 0) {
    dm_error_set(err, DM_ERR_BINLOG_INCOMPLETE, NULL,
                 "binlog %s: incomplete event at offset 4: the file has no format description",
                 path);
    goto fail;
  }
  if (rc < 0)
    goto fail;
  if (ev.header.type != DM_BINLOG_FORMAT_DESCRIPTION) {
    if (ev.header.type == DM_BINLOG_START_V3)
      dm_error_set(err, DM_ERR_BINLOG_UNSUPPORTED, NULL,
                   "binlog %s: starts with START_V3 (binlog format v1/v3, MySQL < 5.0): only v4 is "
                   "read",
                   path);
    else
      dm_error_set(err, DM_ERR_BINLOG_CORRUPT, NULL,
                   "binlog %s: the event at offset 4 is %s (type %u), expected a "
                   "FORMAT_DESCRIPTION",
                   path, dm_binlog_event_type_name(ev.header.type), ev.header.type);
    goto fail;
  }
  uint64_t start = opts->start_pos < DM_BINLOG_MAGIC_LEN ? DM_BINLOG_MAGIC_LEN : opts->start_pos;
  if (file_seek(r, start, err) < 0)
    goto fail;
  *out = &r->base;
  return 0;
fail:
  file_close(&r->base);
  return -1;
}
