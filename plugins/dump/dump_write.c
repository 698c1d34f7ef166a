/*
 * INSERT statements and data files (docs/dump-format.md). Each worker owns one writer with one
 * buffer: the complete statements not yet written, then the statement being built. Rows are
 * formatted straight into it and it is written out in blocks of about DUMP_WRITE_BLOCK bytes, so
 * a worker makes one write(2) per block, not per statement or row. Its size is bounded whatever
 * the table: a block, plus a statement of at most `rows` rows and `statement-size` bytes (a bigger
 * row gets a statement of its own). Only complete statements are written, so every line of a file
 * is one complete INSERT. A file is written under <name>.tmp and renamed once complete, so a file
 * without .tmp is always whole; it is made durable with all others before the metadata names it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "dump_internal.h"

/* Big enough that write(2) costs nothing per byte, small enough to stay in the CPU cache. */
#define DUMP_WRITE_BLOCK (1u << 20)

static const char dump_write_hex[] = "0123456789abcdef";

/* The bytes mysql_real_escape_string escapes on a binary connection, and the letter after the
 * backslash; 0 for every other byte. */
static const char dump_write_esc[256] = {
    [0] = '0', ['\n'] = 'n', ['\r'] = 'r', [26] = 'Z', ['\\'] = '\\', ['\''] = '\'', ['"'] = '"',
};

/* The length of the run at s (< end) that needs no escape. SSE2 tests 16 bytes at once: every
 * byte <= 0x1f (NUL, \n, \r, ctrl-Z, and other controls that the byte loop then passes), '"',
 * '\'' and '\\'. Text columns are mostly such runs. */
static size_t dump_write_plain(const unsigned char *s, const unsigned char *end) {
  const unsigned char *p = s;
#ifdef __SSE2__
  const __m128i ctl = _mm_set1_epi8(0x1f), dq = _mm_set1_epi8('"'), sq = _mm_set1_epi8('\''),
                bs = _mm_set1_epi8('\\');
  while (end - p >= 16) {
    __m128i x = _mm_loadu_si128((const __m128i *)p);
    __m128i hit =
        _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(_mm_min_epu8(x, ctl), x), _mm_cmpeq_epi8(x, dq)),
                     _mm_or_si128(_mm_cmpeq_epi8(x, sq), _mm_cmpeq_epi8(x, bs)));
    int mask = _mm_movemask_epi8(hit);
    if (mask != 0) {
      p += __builtin_ctz((unsigned)mask);
      break;
    }
    p += 16;
  }
#endif
  while (p < end && !dump_write_esc[*p])
    p++;
  return (size_t)(p - s);
}

/* What mysql_real_escape_string writes for a binary connection without NO_BACKSLASH_ESCAPES,
 * byte for byte (test_dump_escape compares them), at many times its speed: it tests every byte
 * against the connection's character set and the buffer's end, and was 45 % of the dump's own CPU
 * time on sysbench tables. Runs without an escape are copied whole. */
static char *dump_write_escape(char *p, const char *v, size_t len) {
  const unsigned char *s = (const unsigned char *)v, *end = s + len;
  while (s < end) {
    size_t n = dump_write_plain(s, end);
    memcpy(p, s, n);
    p += n;
    s += n;
    while (s < end && dump_write_esc[*s]) {
      *p++ = '\\';
      *p++ = dump_write_esc[*s++];
    }
  }
  return p;
}

dump_form dump_form_of_field(const MYSQL_FIELD *f) {
  switch (f->type) {
  case MYSQL_TYPE_DECIMAL:
  case MYSQL_TYPE_NEWDECIMAL:
  case MYSQL_TYPE_TINY:
  case MYSQL_TYPE_SHORT:
  case MYSQL_TYPE_LONG:
  case MYSQL_TYPE_INT24:
  case MYSQL_TYPE_LONGLONG:
  case MYSQL_TYPE_FLOAT:
  case MYSQL_TYPE_DOUBLE:
    return DUMP_FORM_NUMBER;
  case MYSQL_TYPE_YEAR:
  case MYSQL_TYPE_DATE:
  case MYSQL_TYPE_NEWDATE:
  case MYSQL_TYPE_TIME:
  case MYSQL_TYPE_TIME2:
  case MYSQL_TYPE_DATETIME:
  case MYSQL_TYPE_DATETIME2:
  case MYSQL_TYPE_TIMESTAMP:
  case MYSQL_TYPE_TIMESTAMP2:
    return DUMP_FORM_QUOTED;
  case MYSQL_TYPE_BIT:
    /* A BIT is a number of at most 8 bytes: its hex literal is its value in any context, at no
     * measurable cost. */
    return DUMP_FORM_HEX;
  default:
    /* Strings, BLOBs, ENUM, SET, JSON, GEOMETRY: the raw bytes (the session reads with NAMES
     * binary, so every string column arrives with charsetnr 63 and its stored bytes). */
    return DUMP_FORM_STRING;
  }
}

void dump_writer_init(dump_writer *w, dump_unit *u, int slot) {
  memset(w, 0, sizeof *w);
  w->u = u;
  w->slot = slot;
  w->fd = -1;
}

void dump_writer_free(dump_writer *w) {
  dump_writer_abort(w);
  free(w->buf);
  w->buf = NULL;
  w->cap = 0;
}

void dump_writer_begin(dump_writer *w, dump_table *t) {
  w->t = t;
  w->fd = -1;
  w->file_bytes = w->file_off = 0;
  w->len = w->stmt_start = 0;
  w->stmt_rows = w->block_rows = 0;
}

static int dump_write_reserve(dump_writer *w, size_t need, dm_error *err) {
  if (need <= w->cap)
    return 0;
  size_t c = w->cap ? w->cap : DUMP_WRITE_BLOCK;
  while (c < need)
    c *= 2;
  char *b = realloc(w->buf, c);
  if (!b) {
    w->u->host->error_make(w->u->ctx, err, DM_ERR_NO_MEMORY, NULL,
                           "dump: no memory for %zu bytes of statements of %s", need, w->t->qname);
    return -1;
  }
  w->buf = b;
  w->cap = c;
  return 0;
}

static int dump_write_io_error(dump_writer *w, const char *what, const char *path, int e,
                               dm_error *err) {
  return dump_io_error(w->u, what, path, e, err);
}

static int dump_write_open(dump_writer *w, dm_error *err) {
  int n = atomic_fetch_add(&w->t->files, 1);
  char file[PATH_MAX];
  if (snprintf(file, sizeof file, "%s.%06d.sql", w->t->file_base, n) >= (int)sizeof file)
    return dump_write_io_error(w, "name a file for", w->t->qname, ENAMETOOLONG, err);
  if (dump_path(w->u, w->path, file, err) != 0)
    return -1;
  w->fd = dm_fs_tmp_open(w->path, w->u->file_mode, w->tmp, sizeof w->tmp);
  if (w->fd < 0)
    return dump_write_io_error(w, "create", errno == ENAMETOOLONG ? w->path : w->tmp, errno, err);
  dump_flush_track(w->u, w->slot, w->fd);
  return 0;
}

/* The SDK's replace (dm_fs_tmp_commit) without a sync: the name without .tmp promises the whole
 * file to this process, and only the metadata promises anything after a crash. Every file is
 * fdatasync'ed, and the folder once, before the metadata is written (dump_dir_sync_files); a crash
 * before that makes the next start remove them all. */
static int dump_write_complete(dump_writer *w, dm_error *err) {
  int fd = w->fd;
  dump_flush_track(w->u, w->slot, -1);
  w->fd = -1;
  w->file_bytes = 0;
  w->file_off = 0;
  const char *step = "write";
  if (dm_fs_tmp_commit(fd, w->tmp, w->path, 0, &step) != 0)
    return dump_write_io_error(w, strcmp(step, "rename") ? "write" : "rename to its final name",
                               w->tmp, errno, err);
  return 0;
}

/* Writes the complete statements of buf; the statement being built moves to its start. */
static int dump_write_out(dump_writer *w, dm_error *err) {
  size_t n = w->stmt_start;
  if (n == 0)
    return 0;
  if (w->fd < 0 && dump_write_open(w, err) != 0)
    return -1;
  for (size_t off = 0; off < n;) {
    ssize_t k = write(w->fd, w->buf + off, n - off);
    if (k < 0 && errno == EINTR)
      continue;
    if (k < 0)
      return dump_write_io_error(w, "write", w->tmp, errno, err);
    off += (size_t)k;
  }
  /* Starts the write-back of this block now, while the worker goes on reading: the fdatasync
   * before the metadata (dump_dir_sync_files) then waits for the last blocks only. */
  sync_file_range(w->fd, (off_t)w->file_off, (off_t)n, SYNC_FILE_RANGE_WRITE);
  w->file_off += n;
  dump_unit *u = w->u;
  atomic_fetch_add(&u->finished_rows, w->block_rows);
  atomic_fetch_add(&u->finished_bytes, (int_least64_t)n);
  atomic_fetch_add(&w->t->rows, w->block_rows);
  dump_metrics_written(u, w->block_rows, n);
  w->block_rows = 0;
  memmove(w->buf, w->buf + n, w->len - n);
  w->len -= n;
  w->stmt_start = 0;
  return 0;
}

/* Ends the statement being built (it has rows) with ";\n"; the 2 bytes are always reserved. */
static void dump_write_close_stmt(dump_writer *w) {
  w->buf[w->len++] = ';';
  w->buf[w->len++] = '\n';
  w->file_bytes += w->len - w->stmt_start;
  w->block_rows += w->stmt_rows;
  w->stmt_rows = 0;
  w->stmt_start = w->len;
}

/* After a statement was closed: completes the file once it reached chunk-filesize, else writes a
 * full block out. */
static int dump_write_settle(dump_writer *w, dm_error *err) {
  if (w->file_bytes >= (uint64_t)w->u->chunk_filesize) {
    /* file_bytes counts a closed statement, so dump_write_out opened the file */
    if (dump_write_out(w, err) != 0)
      return -1;
    return dump_write_complete(w, err);
  }
  if (w->stmt_start >= DUMP_WRITE_BLOCK)
    return dump_write_out(w, err);
  return 0;
}

/* Formats "(v1,v2,...)" at p, which has room for the bound dump_writer_row reserves; returns
 * its length. */
static size_t dump_write_format(dump_writer *w, char *p, MYSQL_ROW row,
                                const unsigned long *lengths, const uint8_t *forms) {
  char *start = p;
  int n = w->t->n_cols;
  *p++ = '(';
  for (int i = 0; i < n; i++) {
    if (i > 0)
      *p++ = ',';
    const char *v = row[i];
    size_t len = lengths[i];
    if (!v) {
      memcpy(p, "NULL", 4);
      p += 4;
      continue;
    }
    switch (forms[i]) {
    case DUMP_FORM_NUMBER:
      memcpy(p, v, len);
      p += len;
      break;
    case DUMP_FORM_STRING:
      /* The bytes as stored (NAMES binary), each escaped on its own: the loader's NAMES binary has
       * no multibyte sequence that could swallow a backslash. LF and CR come out escaped, so the
       * statement stays one line. */
      *p++ = '\'';
      p = dump_write_escape(p, v, len);
      *p++ = '\'';
      break;
    case DUMP_FORM_TEXT:
      memcpy(p, "_latin1", 7);
      p += 7;
      /* fall through */
    case DUMP_FORM_QUOTED:
      /* Only dates, times and address/UUID text take these forms: digits, '-', ':', '.', ' ' and
       * hex letters, never a quote or backslash. */
      *p++ = '\'';
      memcpy(p, v, len);
      p += len;
      *p++ = '\'';
      break;
    default: /* DUMP_FORM_HEX */
      if (len == 0) {
        *p++ = '\'';
        *p++ = '\'';
        break;
      }
      *p++ = '0';
      *p++ = 'x';
      for (size_t k = 0; k < len; k++) {
        unsigned char b = (unsigned char)v[k];
        *p++ = dump_write_hex[b >> 4];
        *p++ = dump_write_hex[b & 15];
      }
    }
  }
  *p++ = ')';
  return (size_t)(p - start);
}

int dump_writer_row(dump_writer *w, MYSQL_ROW row, const unsigned long *lengths,
                    const uint8_t *forms, dm_error *err) {
  dump_unit *u = w->u;
  if (w->stmt_rows > 0 && w->stmt_rows >= u->stmt_rows) {
    dump_write_close_stmt(w);
    if (dump_write_settle(w, err) != 0)
      return -1;
  }
  /* The most a row can take: every value escaped or hex (2 bytes a byte), or 10 bytes of quotes,
   * introducer, separator and mysql_real_escape_string's terminating NUL. */
  size_t max = 2;
  for (int i = 0; i < w->t->n_cols; i++)
    max += 2 * (size_t)lengths[i] + 10;
  size_t head = w->t->insert_head_len;
  /* Room for the worst case below: ";\n", the head and the row, then ";\n" for its end. */
  if (dump_write_reserve(w, w->len + 2 + head + max + 2, err) != 0)
    return -1;
  if (w->stmt_rows == 0) {
    memcpy(w->buf + w->len, w->t->insert_head, head);
    w->len += head;
    w->len += dump_write_format(w, w->buf + w->len, row, lengths, forms);
    w->stmt_rows = 1;
    return 0;
  }
  char *p = w->buf + w->len + 1;
  size_t n = dump_write_format(w, p, row, lengths, forms);
  /* +3: the ',' before the row and the ";\n" after the statement. */
  if (w->len - w->stmt_start + n + 3 <= (size_t)u->stmt_size) {
    w->buf[w->len] = ',';
    w->len += 1 + n;
    w->stmt_rows++;
    return 0;
  }
  /* The row starts a statement of its own: ";\n" and the head go before it. */
  memmove(w->buf + w->len + 2 + head, p, n);
  dump_write_close_stmt(w);
  memcpy(w->buf + w->len, w->t->insert_head, head);
  w->len += head + n;
  w->stmt_rows = 1;
  return dump_write_settle(w, err);
}

int dump_writer_end(dump_writer *w, dm_error *err) {
  if (w->stmt_rows > 0)
    dump_write_close_stmt(w);
  if (dump_write_out(w, err) != 0)
    return -1;
  if (w->fd >= 0)
    return dump_write_complete(w, err);
  return 0;
}

void dump_writer_abort(dump_writer *w) {
  if (w->fd >= 0) {
    dump_flush_track(w->u, w->slot, -1);
    close(w->fd);
    unlink(w->tmp);
    w->fd = -1;
  }
  w->file_bytes = w->file_off = 0;
  w->len = w->stmt_start = 0;
  w->stmt_rows = w->block_rows = 0;
}
