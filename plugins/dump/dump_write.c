/*
 * INSERT statements and data files (docs/dump-format.md). Each worker owns one writer whose two
 * buffers — the statement being built and one formatted row — are all the memory a dump needs
 * whatever the table size: a statement holds at most `rows` rows and `statement-size` bytes (a
 * bigger row gets a statement of its own), and is written out whole, so every line of a file is
 * one complete INSERT. A file is written under <name>.tmp and renamed once complete and on disk,
 * so a file without .tmp is always whole.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dump_internal.h"

static const char dump_write_hex[] = "0123456789abcdef";

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
  default:
    /* Strings, BLOBs, BIT, ENUM, SET, JSON, GEOMETRY: the raw bytes (the session reads with
     * NAMES binary, so every string column arrives with charsetnr 63 and its stored bytes). */
    return DUMP_FORM_HEX;
  }
}

void dump_writer_init(dump_writer *w, dump_unit *u) {
  memset(w, 0, sizeof *w);
  w->u = u;
  w->fd = -1;
}

void dump_writer_free(dump_writer *w) {
  dump_writer_abort(w);
  free(w->stmt);
  free(w->row);
  w->stmt = w->row = NULL;
}

void dump_writer_begin(dump_writer *w, dump_table *t) {
  w->t = t;
  w->stmt_len = 0;
  w->stmt_rows = 0;
  w->fd = -1;
}

static int dump_write_reserve(dump_writer *w, char **buf, size_t *cap, size_t need, dm_error *err) {
  if (need <= *cap)
    return 0;
  size_t c = *cap ? *cap : 4096;
  while (c < need)
    c *= 2;
  char *b = realloc(*buf, c);
  if (!b) {
    w->u->host->error_make(w->u->ctx, err, DM_ERR_NO_MEMORY, NULL,
                           "dump: no memory for a row of %zu bytes of %s", need, w->t->qname);
    return -1;
  }
  *buf = b;
  *cap = c;
  return 0;
}

static int dump_write_io_error(dump_writer *w, const char *what, const char *path, int e,
                               dm_error *err) {
  w->u->host->error_make(w->u->ctx, err, DM_ERR_IO, strerror(e), "dump: cannot %s %s: %s", what,
                         path, strerror(e));
  return -1;
}

static int dump_write_open(dump_writer *w, dm_error *err) {
  int n = atomic_fetch_add(&w->t->files, 1);
  char file[PATH_MAX];
  if (snprintf(file, sizeof file, "%s.%06d.sql", w->t->file_base, n) >= (int)sizeof file)
    return dump_write_io_error(w, "name a file for", w->t->qname, ENAMETOOLONG, err);
  if (dump_path(w->u, w->path, file, err) != 0)
    return -1;
  if (snprintf(w->tmp, sizeof w->tmp, "%s.tmp", w->path) >= (int)sizeof w->tmp)
    return dump_write_io_error(w, "create", w->path, ENAMETOOLONG, err);
  w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (w->fd < 0)
    return dump_write_io_error(w, "create", w->tmp, errno, err);
  w->file_bytes = 0;
  return 0;
}

/* fdatasync before the rename: the name without .tmp promises the whole file. */
static int dump_write_complete(dump_writer *w, dm_error *err) {
  int fd = w->fd;
  w->fd = -1;
  if (fdatasync(fd) != 0) {
    int e = errno;
    close(fd);
    return dump_write_io_error(w, "write", w->tmp, e, err);
  }
  if (close(fd) != 0)
    return dump_write_io_error(w, "write", w->tmp, errno, err);
  if (rename(w->tmp, w->path) != 0)
    return dump_write_io_error(w, "rename to its final name", w->tmp, errno, err);
  return 0;
}

static int dump_write_flush(dump_writer *w, dm_error *err) {
  if (w->stmt_rows == 0)
    return 0;
  if (dump_write_reserve(w, &w->stmt, &w->stmt_cap, w->stmt_len + 2, err) != 0)
    return -1;
  w->stmt[w->stmt_len++] = ';';
  w->stmt[w->stmt_len++] = '\n';
  if (w->fd < 0 && dump_write_open(w, err) != 0)
    return -1;
  for (size_t off = 0; off < w->stmt_len;) {
    ssize_t n = write(w->fd, w->stmt + off, w->stmt_len - off);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return dump_write_io_error(w, "write", w->tmp, errno, err);
    off += (size_t)n;
  }
  dump_unit *u = w->u;
  w->file_bytes += w->stmt_len;
  atomic_fetch_add(&u->finished_rows, w->stmt_rows);
  atomic_fetch_add(&u->finished_bytes, (int_least64_t)w->stmt_len);
  atomic_fetch_add(&w->t->rows, w->stmt_rows);
  w->stmt_len = 0;
  w->stmt_rows = 0;
  if (w->file_bytes >= (uint64_t)u->chunk_filesize)
    return dump_write_complete(w, err);
  return 0;
}

/* Formats "(v1,v2,...)" into w->row. */
static int dump_write_format(dump_writer *w, MYSQL_ROW row, const unsigned long *lengths,
                             const uint8_t *forms, dm_error *err) {
  int n = w->t->n_cols;
  size_t need = 3;
  for (int i = 0; i < n; i++)
    need += row[i] ? 2 * (size_t)lengths[i] + 10 : 5;
  if (dump_write_reserve(w, &w->row, &w->row_cap, need, err) != 0)
    return -1;
  char *p = w->row;
  *p++ = '(';
  for (int i = 0; i < n; i++) {
    if (i > 0)
      *p++ = ',';
    const unsigned char *v = (const unsigned char *)row[i];
    size_t len = lengths[i];
    if (!v) {
      memcpy(p, "NULL", 4);
      p += 4;
    } else if (forms[i] == DUMP_FORM_NUMBER) {
      memcpy(p, v, len);
      p += len;
    } else if (forms[i] == DUMP_FORM_QUOTED || forms[i] == DUMP_FORM_TEXT) {
      /* Only dates, times and address/UUID text take these forms: digits, '-', ':', '.', ' ' and
       * hex letters, never a quote or backslash. */
      if (forms[i] == DUMP_FORM_TEXT) {
        memcpy(p, "_latin1", 7);
        p += 7;
      }
      *p++ = '\'';
      memcpy(p, v, len);
      p += len;
      *p++ = '\'';
    } else if (len == 0) {
      *p++ = '\'';
      *p++ = '\'';
    } else {
      *p++ = '0';
      *p++ = 'x';
      for (size_t k = 0; k < len; k++) {
        *p++ = dump_write_hex[v[k] >> 4];
        *p++ = dump_write_hex[v[k] & 15];
      }
    }
  }
  *p++ = ')';
  w->row_len = (size_t)(p - w->row);
  return 0;
}

int dump_writer_row(dump_writer *w, MYSQL_ROW row, const unsigned long *lengths,
                    const uint8_t *forms, dm_error *err) {
  if (dump_write_format(w, row, lengths, forms, err) != 0)
    return -1;
  dump_unit *u = w->u;
  /* +3: the ',' before the row and the ";\n" after the statement. */
  if (w->stmt_rows > 0 &&
      (w->stmt_rows >= u->stmt_rows || w->stmt_len + w->row_len + 3 > (size_t)u->stmt_size)) {
    if (dump_write_flush(w, err) != 0)
      return -1;
  }
  size_t head = w->stmt_rows == 0 ? w->t->insert_head_len : 1;
  if (dump_write_reserve(w, &w->stmt, &w->stmt_cap, w->stmt_len + head + w->row_len + 2, err) != 0)
    return -1;
  if (w->stmt_rows == 0)
    memcpy(w->stmt, w->t->insert_head, head);
  else
    w->stmt[w->stmt_len] = ',';
  w->stmt_len += head;
  memcpy(w->stmt + w->stmt_len, w->row, w->row_len);
  w->stmt_len += w->row_len;
  w->stmt_rows++;
  return 0;
}

int dump_writer_end(dump_writer *w, dm_error *err) {
  if (dump_write_flush(w, err) != 0)
    return -1;
  if (w->fd >= 0)
    return dump_write_complete(w, err);
  return 0;
}

void dump_writer_abort(dump_writer *w) {
  if (w->fd >= 0) {
    close(w->fd);
    unlink(w->tmp);
    w->fd = -1;
  }
  w->stmt_len = 0;
  w->stmt_rows = 0;
}
