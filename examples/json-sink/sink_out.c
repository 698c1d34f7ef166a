/*
 * json-sink: output files and the checkpoint, the part that makes every row change appear exactly
 * once whatever happens to the process (README.md, "Exactly once").
 *
 * Lines are appended to the output files as rows are read (through a buffer per file). A commit,
 * only ever for the end of a whole transaction (s->boundary): every buffer is written out, each
 * file that grew is fdatasync'ed (the folder too when a file was created), and only then the
 * checkpoint is replaced atomically (dm_fs_write_atomic, DM_FS_SYNC) with the relay position
 * after that transaction and each file's length at that moment. Whatever a file holds past its
 * checkpointed length (the rest of a transaction, lines of transactions after it) was written by a
 * run that did not get to commit it: the next start cuts every file back to its length, removes
 * the files the checkpoint does not know, and reads the relay again from the checkpoint's
 * position, so those lines are written again exactly once.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sink.h"

#define SINK_CHECKPOINT_HEAD "json-sink checkpoint 1"
#define SINK_SUFFIX ".jsonl"

int64_t sink_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int sink_io_error(sink *s, dm_error *err, int e, const char *what, const char *name) {
  s->host->error_make(s->ctx, err, DM_ERR_IO, strerror(e), SINK_WHO ": cannot %s %s/%s: %s", what,
                      s->out_dir, name, strerror(e));
  return -1;
}

/* ---- the checkpoint file ---- */

static sink_file *sink_file_add(sink *s, const char *name) {
  if (s->n_files == s->cap_files) {
    size_t cap = s->cap_files ? s->cap_files * 2 : 16;
    sink_file *f = realloc(s->files, cap * sizeof *f);
    if (!f)
      return NULL;
    s->files = f;
    s->cap_files = cap;
  }
  sink_file *f = &s->files[s->n_files];
  memset(f, 0, sizeof *f);
  if (!(f->buf = malloc(SINK_BUF_SIZE)))
    return NULL;
  dm_strlcpy(f->name, name, sizeof f->name);
  f->fd = -1;
  s->n_files++;
  return f;
}

static sink_file *sink_file_find(sink *s, const char *name) {
  for (size_t i = 0; i < s->n_files; i++)
    if (strcmp(s->files[i].name, name) == 0)
      return &s->files[i];
  return NULL;
}

static int sink_checkpoint_damaged(sink *s, dm_error *err, int line, const char *why) {
  s->host->error_make(s->ctx, err, DM_ERR_CHECKPOINT, NULL,
                      SINK_WHO
                      ": checkpoint %s is damaged (line %d: %s): it is only ever replaced "
                      "whole, so someone edited it; remove it and the output files in %s to "
                      "start over from the task's meta position",
                      s->checkpoint_path, line, why, s->out_dir);
  return -1;
}

int sink_checkpoint_load(sink *s, dm_error *err) {
  FILE *f = fopen(s->checkpoint_path, "re");
  if (!f) {
    if (errno == ENOENT)
      return 0;
    s->host->error_make(s->ctx, err, DM_ERR_IO, strerror(errno), SINK_WHO ": cannot read %s: %s",
                        s->checkpoint_path, strerror(errno));
    return -1;
  }
  memset(&s->checkpointed, 0, sizeof s->checkpointed);
  memset(&s->gtids, 0, sizeof s->gtids);
  char line[DM_POSITION_GTID_MAX + 64];
  int no = 0, rc = 1;
  bool head = false, have_pos = false;
  while (rc == 1 && fgets(line, sizeof line, f)) {
    no++;
    size_t len = strlen(line);
    if (len == 0 || line[len - 1] != '\n') {
      rc = sink_checkpoint_damaged(s, err, no, "line cut short or too long");
      break;
    }
    line[--len] = '\0';
    char *val = strchr(line, ' ');
    if (val)
      *val++ = '\0';
    if (no == 1) {
      head = val && strcmp(line, "json-sink") == 0 && strcmp(val, "checkpoint 1") == 0;
      if (!head)
        rc = sink_checkpoint_damaged(s, err, no, "not a json-sink checkpoint of format 1");
    } else if (!val) {
      rc = sink_checkpoint_damaged(s, err, no, "no value");
    } else if (strcmp(line, "binlog-name") == 0) {
      if (!dm_fs_name_ok(val, strlen(val)))
        rc = sink_checkpoint_damaged(s, err, no, "binlog-name is not a plain file name");
      dm_strlcpy(s->checkpointed.name, val, sizeof s->checkpointed.name);
    } else if (strcmp(line, "binlog-pos") == 0) {
      char *end;
      errno = 0;
      s->checkpointed.pos = strtoull(val, &end, 10);
      have_pos = errno == 0 && *end == '\0' && end != val;
      if (!have_pos)
        rc = sink_checkpoint_damaged(s, err, no, "binlog-pos is not a number");
    } else if (strcmp(line, "binlog-gtid") == 0) {
      if (dm_mariadb_gtid_set_parse(&s->gtids, val) != 0)
        rc = sink_checkpoint_damaged(s, err, no, "binlog-gtid is not a MariaDB GTID set");
      dm_strlcpy(s->checkpointed.gtid, val, sizeof s->checkpointed.gtid);
    } else if (strcmp(line, "file") == 0) {
      char *end;
      errno = 0;
      unsigned long long n = strtoull(val, &end, 10);
      const char *name = *end == ' ' ? end + 1 : "";
      size_t nl = strlen(name);
      if (errno || end == val || *end != ' ' || !dm_fs_name_ok(name, nl) ||
          nl <= strlen(SINK_SUFFIX) || strcmp(name + nl - strlen(SINK_SUFFIX), SINK_SUFFIX) != 0)
        rc = sink_checkpoint_damaged(s, err, no, "file is not `<length> <name>.jsonl`");
      else if (sink_file_find(s, name))
        rc = sink_checkpoint_damaged(s, err, no, "a file named twice");
      else {
        sink_file *sf = sink_file_add(s, name);
        if (!sf) {
          s->host->error_make(s->ctx, err, DM_ERR_NO_MEMORY, NULL, SINK_WHO ": no memory");
          rc = -1;
        } else {
          sf->written = sf->boundary = sf->synced = sf->checkpointed = n;
        }
      }
    } else {
      rc = sink_checkpoint_damaged(s, err, no, "unknown key");
    }
  }
  if (rc == 1 && ferror(f))
    rc = sink_io_error(s, err, errno, "read", SINK_CHECKPOINT);
  fclose(f);
  if (rc == 1 && (!head || !have_pos || !s->checkpointed.name[0]))
    rc = sink_checkpoint_damaged(s, err, no, "binlog-name or binlog-pos missing");
  if (rc == 1)
    s->boundary = s->checkpointed;
  return rc;
}

/* ---- restore: back to exactly what the checkpoint says ---- */

static bool sink_is_output_name(const char *name) {
  size_t n = strlen(name), k = strlen(SINK_SUFFIX);
  return n > k && strcmp(name + n - k, SINK_SUFFIX) == 0 && dm_fs_name_ok(name, n);
}

int sink_out_restore(sink *s, dm_error *err) {
  for (size_t i = 0; i < s->n_files; i++) {
    sink_file *f = &s->files[i];
    int fd = dm_fs_open_beneath(s->dir_fd, f->name, O_RDWR | O_CREAT, s->file_mode);
    if (fd < 0)
      return sink_io_error(s, err, errno, "open", f->name);
    struct stat st;
    if (fstat(fd, &st) != 0) {
      int e = errno;
      close(fd);
      return sink_io_error(s, err, e, "stat", f->name);
    }
    if ((uint64_t)st.st_size < f->checkpointed) {
      close(fd);
      s->host->error_make(
          s->ctx, err, DM_ERR_CHECKPOINT, NULL,
          SINK_WHO ": %s/%s has %lld bytes, but checkpoint %s says %" PRIu64
                   " were written and synced: the file was cut or replaced by someone "
                   "else; remove the checkpoint and the output files to start over",
          s->out_dir, f->name, (long long)st.st_size, s->checkpoint_path, f->checkpointed);
      return -1;
    }
    if ((uint64_t)st.st_size > f->checkpointed) {
      s->host->logf(s->ctx, DM_LOG_INFO,
                    SINK_WHO ": %s: cutting %lld bytes written after the checkpoint (they are "
                             "read again from the relay)",
                    f->name, (long long)st.st_size - (long long)f->checkpointed);
      if (ftruncate(fd, (off_t)f->checkpointed) != 0 || fdatasync(fd) != 0) {
        int e = errno;
        close(fd);
        return sink_io_error(s, err, e, "truncate", f->name);
      }
    }
    close(fd);
  }
  /* files a run created after its last checkpoint */
  int dfd = dup(s->dir_fd);
  DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
  if (!d) {
    if (dfd >= 0)
      close(dfd);
    return sink_io_error(s, err, errno, "list", ".");
  }
  rewinddir(d);
  struct dirent *de;
  int rc = 0;
  while ((de = readdir(d))) {
    if (!sink_is_output_name(de->d_name) || sink_file_find(s, de->d_name))
      continue;
    s->host->logf(s->ctx, DM_LOG_INFO,
                  SINK_WHO ": removing %s/%s, created after the checkpoint (its lines are read "
                           "again from the relay)",
                  s->out_dir, de->d_name);
    if (unlinkat(s->dir_fd, de->d_name, 0) != 0 && errno != ENOENT) {
      rc = sink_io_error(s, err, errno, "remove", de->d_name);
      break;
    }
    s->dir_dirty = true;
  }
  closedir(d);
  if (rc == 0 && s->dir_dirty) {
    if (fsync(s->dir_fd) != 0)
      return sink_io_error(s, err, errno, "fsync", ".");
    s->dir_dirty = false;
  }
  return rc;
}

/* ---- writing ---- */

static int sink_write_all(sink *s, sink_file *f, const char *p, size_t len, dm_error *err) {
  size_t off = 0;
  while (off < len) {
    ssize_t n = write(f->fd, p + off, len - off);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return sink_io_error(s, err, errno, "write", f->name);
    off += (size_t)n;
  }
  return 0;
}

static int sink_file_flush(sink *s, sink_file *f, dm_error *err) {
  if (sink_write_all(s, f, f->buf, f->buf_len, err) != 0)
    return -1;
  f->buf_len = 0;
  return 0;
}

/* Makes a name of a schema or table that dm_fs_name_ok takes: [A-Za-z0-9_] kept, every other byte
 * as -XX (hex), so '.' separates schema from table and no two names meet. */
static bool sink_name_part(char *out, size_t size, size_t *at, const char *in) {
  for (const unsigned char *p = (const unsigned char *)in; *p; p++) {
    if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
        *p == '_') {
      if (*at + 1 >= size)
        return false;
      out[(*at)++] = (char)*p;
    } else {
      if (*at + 3 >= size)
        return false;
      snprintf(out + *at, 4, "-%02x", *p);
      *at += 3;
    }
  }
  out[*at] = '\0';
  return true;
}

static int sink_name_too_long(sink *s, const char *db, const char *table, dm_error *err) {
  s->host->error_make(s->ctx, err, DM_ERR_CONFIG_INVALID, NULL,
                      SINK_WHO ": the file name for %s.%s is longer than %d bytes: use "
                               "layout = \"stream\"",
                      db, table, DM_FS_NAME_MAX);
  return -1;
}

sink_file *sink_file_for(sink *s, const char *db, const char *table, dm_error *err) {
  char name[DM_FS_NAME_MAX + 1];
  if (s->per_table) {
    size_t last = s->last_file;
    if (last < s->n_files && s->files[last].fd >= 0 && strcmp(s->files[last].db, db) == 0 &&
        strcmp(s->files[last].table, table) == 0)
      return &s->files[last];
    size_t at = 0, room = sizeof name - strlen(SINK_SUFFIX);
    if (!sink_name_part(name, room, &at, db) || at + 1 >= room) {
      sink_name_too_long(s, db, table, err);
      return NULL;
    }
    name[at++] = '.';
    if (!sink_name_part(name, room, &at, table)) {
      sink_name_too_long(s, db, table, err);
      return NULL;
    }
    memcpy(name + at, SINK_SUFFIX, sizeof SINK_SUFFIX);
  } else {
    dm_strlcpy(name, SINK_STREAM_FILE, sizeof name);
  }
  sink_file *f = sink_file_find(s, name);
  if (!f && !(f = sink_file_add(s, name))) {
    s->host->error_make(s->ctx, err, DM_ERR_NO_MEMORY, NULL, SINK_WHO ": no memory");
    return NULL;
  }
  if (f->fd < 0) {
    int fd = dm_fs_open_beneath(s->dir_fd, f->name, O_WRONLY | O_APPEND, 0);
    if (fd < 0 && errno == ENOENT) {
      fd = dm_fs_open_beneath(s->dir_fd, f->name, O_WRONLY | O_APPEND | O_CREAT | O_EXCL,
                              s->file_mode);
      s->dir_dirty = true;
    }
    if (fd < 0) {
      sink_io_error(s, err, errno, "open", f->name);
      return NULL;
    }
    f->fd = fd;
  }
  if (s->per_table) {
    dm_strlcpy(f->db, db, sizeof f->db);
    dm_strlcpy(f->table, table, sizeof f->table);
  }
  s->last_file = (size_t)(f - s->files);
  return f;
}

int sink_file_append_line(sink *s, sink_file *f, const char *text, size_t len, dm_error *err) {
  if (f->buf_len + len + 1 > SINK_BUF_SIZE && sink_file_flush(s, f, err) != 0)
    return -1;
  if (len + 1 > SINK_BUF_SIZE) { /* a huge row: straight through */
    if (sink_write_all(s, f, text, len, err) != 0 || sink_write_all(s, f, "\n", 1, err) != 0)
      return -1;
  } else {
    memcpy(f->buf + f->buf_len, text, len);
    f->buf[f->buf_len + len] = '\n';
    f->buf_len += len + 1;
  }
  f->written += len + 1;
  atomic_fetch_add_explicit(&s->lines, 1, memory_order_relaxed);
  return 0;
}

int sink_txn_boundary(sink *s, dm_error *err) {
  for (size_t i = 0; i < s->n_files; i++) {
    sink_file *f = &s->files[i];
    if (f->buf_len && sink_file_flush(s, f, err) != 0)
      return -1;
    f->boundary = f->written;
  }
  s->pending_txns++;
  return 0;
}

/* ---- commit ---- */

int sink_commit(sink *s, bool force, dm_error *err) {
  bool moved = force || strcmp(s->boundary.name, s->checkpointed.name) != 0 ||
               s->boundary.pos != s->checkpointed.pos;
  for (size_t i = 0; i < s->n_files && !moved; i++)
    moved = s->files[i].boundary != s->files[i].checkpointed;
  if (!moved) {
    s->pending_txns = 0;
    return 0;
  }
  /* data first, durably; the checkpoint that promises it after */
  for (size_t i = 0; i < s->n_files; i++) {
    sink_file *f = &s->files[i];
    if (f->fd < 0 || f->boundary <= f->synced)
      continue;
    if (sink_file_flush(s, f, err) != 0)
      return -1;
    if (fdatasync(f->fd) != 0)
      return sink_io_error(s, err, errno, "fdatasync", f->name);
    f->synced = f->written;
  }
  if (s->dir_dirty) {
    if (fsync(s->dir_fd) != 0)
      return sink_io_error(s, err, errno, "fsync", ".");
    s->dir_dirty = false;
  }
  dm_mariadb_gtid_set_format(&s->gtids, s->boundary.gtid, sizeof s->boundary.gtid);
  size_t cap = 256 + DM_POSITION_GTID_MAX + s->n_files * (DM_FS_NAME_MAX + 32);
  char *text = malloc(cap);
  if (!text) {
    s->host->error_make(s->ctx, err, DM_ERR_NO_MEMORY, NULL, SINK_WHO ": no memory");
    return -1;
  }
  size_t n = (size_t)snprintf(
      text, cap, SINK_CHECKPOINT_HEAD "\nbinlog-name %s\nbinlog-pos %" PRIu64 "\nbinlog-gtid %s\n",
      s->boundary.name, s->boundary.pos, s->boundary.gtid);
  for (size_t i = 0; i < s->n_files; i++)
    n += (size_t)snprintf(text + n, cap - n, "file %" PRIu64 " %s\n", s->files[i].boundary,
                          s->files[i].name);
  const char *step = "create";
  int rc = dm_fs_write_atomic(s->checkpoint_path, text, n, s->file_mode, DM_FS_SYNC, &step);
  int e = errno;
  free(text);
  if (rc != 0) {
    s->host->error_make(s->ctx, err, DM_ERR_IO, strerror(e),
                        SINK_WHO ": cannot commit checkpoint %s (%s failed): %s",
                        s->checkpoint_path, step, strerror(e));
    return -1;
  }
  for (size_t i = 0; i < s->n_files; i++)
    s->files[i].checkpointed = s->files[i].boundary;
  s->checkpointed = s->boundary;
  s->pending_txns = 0;
  s->last_commit_ms = sink_now_ms();
  s->reader_pending = true;
  pthread_mutex_lock(&s->lock);
  s->status_pos = s->checkpointed;
  pthread_mutex_unlock(&s->lock);
  atomic_fetch_add_explicit(&s->commits, 1, memory_order_relaxed);
  return 0;
}

void sink_out_close(sink *s) {
  for (size_t i = 0; i < s->n_files; i++) {
    if (s->files[i].fd >= 0)
      close(s->files[i].fd);
    s->files[i].fd = -1;
    s->files[i].buf_len = 0;
  }
  if (s->dir_fd >= 0)
    close(s->dir_fd);
  s->dir_fd = -1;
}

void sink_out_free(sink *s) {
  sink_out_close(s);
  for (size_t i = 0; i < s->n_files; i++)
    free(s->files[i].buf);
  free(s->files);
  s->files = NULL;
  s->n_files = s->cap_files = 0;
}
