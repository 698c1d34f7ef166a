/*
 * The data files, loaded by pool-size workers with a target connection each. A worker takes a
 * whole file, streams it line by line (one statement a line, docs/dump-format.md) through a bounded
 * buffer, and commits every batch-bytes of statements together with the UPDATE that moves the
 * file's checkpoint offset past them: one transaction, so a crash anywhere leaves the table and the
 * checkpoint agreeing, and the next run seeks to the offset and goes on with no row lost or
 * doubled. When the last file of a target table is in, its deferred secondary keys are due
 * (load_keys.c): the worker that finished it adds them, while the others go on with other files.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dmhost/db.h>

#include "load.h"

#define LOAD_READ_BUF (8u << 20) /* read buffer per worker; grows for longer lines */
#define LOAD_LOCK_RETRIES 5      /* a batch rolled back by a deadlock or lock wait: tries again */
/* Room before the data in the read buffer: a line's `INSERT INTO `t` [(`a`,...)]` is replaced in
 * place by the (maybe longer) verb, routed table and the dump's column list, so a statement is
 * never copied. This much at least; more for a table whose column list is longer. */
#define LOAD_HEAD_ROOM (2 * LOAD_NAME_MAX + 32)

typedef struct load_run {
  load_unit *u;
  load_dump *d;
  int *jobs; /* file indexes, biggest remainder first */
  int n_jobs;
  int next;   /* under mu */
  int *ready; /* group tables whose data is in and whose deferred keys wait; under mu */
  int n_ready;
  pthread_mutex_t mu;
  atomic_bool abort; /* an error in one worker stops the others */
  dm_error error;    /* the first error; under mu */
  bool has_error;
  atomic_int jobs_done;
} load_run;

typedef struct load_worker {
  load_run *run;
  MYSQL *c;
  char *buf;         /* room bytes, then what was read of the file and not yet run */
  size_t cap;        /* bytes of buf */
  size_t room;       /* bytes before the data: at least the current file's verb_table_len */
  uint64_t max_stmt; /* the longest statement the target takes: its max_allowed_packet - 1 */
  char *verb_table;  /* "REPLACE INTO `t` (`a`,...)" for the current file (room bytes) */
  size_t verb_table_len;
  char *ext_buf; /* a statement with the route's extract values added to its rows */
  size_t ext_cap;
  pthread_t thread;
  bool started;
} load_worker;

static void load_run_error(load_run *run, const dm_error *e) {
  pthread_mutex_lock(&run->mu);
  if (!run->has_error) {
    run->error = *e;
    run->has_error = true;
  } else {
    run->u->host->logf(run->u->ctx, DM_LOG_WARN, "load: another worker failed too: %s", e->message);
  }
  pthread_mutex_unlock(&run->mu);
  atomic_store(&run->abort, true);
}

static bool load_run_stopping(load_run *run) {
  return atomic_load_explicit(&run->abort, memory_order_relaxed) ||
         atomic_load_explicit(&run->u->killed, memory_order_relaxed) ||
         run->u->host->stop_requested(run->u->ctx);
}

/* The next job: a table whose keys are due (*keys_table >= 0; first, so its ALTER overlaps the
 * other tables' data), else a file (returned). -1 when there is none. */
static int load_run_next(load_run *run, int *keys_table) {
  *keys_table = -1;
  if (load_run_stopping(run))
    return -1;
  pthread_mutex_lock(&run->mu);
  int j = -1;
  if (run->n_ready > 0)
    *keys_table = run->ready[--run->n_ready];
  else if (run->next < run->n_jobs)
    j = run->jobs[run->next++];
  pthread_mutex_unlock(&run->mu);
  return *keys_table >= 0 ? -2 : j;
}

static void load_run_ready(load_run *run, int table) {
  pthread_mutex_lock(&run->mu);
  run->ready[run->n_ready++] = table;
  pthread_mutex_unlock(&run->mu);
}

/* A file of group g is done: when it was the group's last, its keys are due. */
static void load_run_file_done(load_run *run, int g) {
  load_table *t = &run->d->tables[g];
  if (atomic_fetch_sub(&t->files_left, 1) == 1 && t->keys)
    load_run_ready(run, g);
}

/* Moves the file's checkpoint to `offset` and commits the batch. */
static int load_worker_commit(load_worker *w, const load_file *f, uint64_t offset, dm_error *err) {
  load_unit *u = w->run->u;
  char q[2048];
  int n = load_cp_update_sql(u, w->c, f->name, offset, q, sizeof q);
  if (n < 0) {
    u->host->error_make(u->ctx, err, DM_ERR_INTERNAL, NULL, "load: file name %s too long", f->name);
    return -1;
  }
  char what[PATH_MAX + 128];
  snprintf(what, sizeof what, "load: cannot commit %s/%s up to byte %" PRIu64, w->run->d->dir,
           f->name, offset);
  static const char check[] = DM_DB_FENCE_CHECK_HEAD "1" DM_DB_FENCE_CHECK_TAIL;
  if (load_db_exec(u, w->c, q, (size_t)n, what, err) != 0)
    return -1;
  /* fenced: the row moved, or the batch never commits (the caller rolls it back) */
  if (u->fence && load_db_exec(u, w->c, check, sizeof check - 1, what, err) != 0) {
    if (mysql_errno(w->c) == DM_DB_FENCE_ERRNO) {
      mysql_real_query(w->c, "ROLLBACK", 8);
      load_cp_fence_failed(u, w->c, f->name, err);
    }
    return -1;
  }
  if (load_db_exec(u, w->c, "COMMIT", 6, what, err) != 0)
    return -1;
  return 0;
}

/* The 1-based line of `path` that starts at byte `off` (for an error: a resumed file was read
 * from its checkpoint, so the count is made from the start here). 0 if it cannot be read. */
static uint64_t load_worker_line_of(int fd, uint64_t off) {
  char b[65536];
  uint64_t line = 1, at = 0;
  while (at < off) {
    size_t want = off - at < sizeof b ? (size_t)(off - at) : sizeof b;
    ssize_t n = pread(fd, b, want, (off_t)at);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return 0;
    for (const char *p = b; (p = memchr(p, '\n', (size_t)(b + n - p))) != NULL; p++)
      line++;
    at += (uint64_t)n;
  }
  return line;
}

/* The length of the line of `fd` that starts at byte `off` (to its '\n' or the end). */
static uint64_t load_worker_line_len(int fd, uint64_t off) {
  char b[65536];
  for (uint64_t at = off;;) {
    ssize_t n = pread(fd, b, sizeof b, (off_t)at);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return at - off;
    const char *nl = memchr(b, '\n', (size_t)n);
    if (nl)
      return at - off + (uint64_t)(nl - b);
    at += (uint64_t)n;
  }
}

/* A statement longer than the target takes: its size, the real limit and the value to raise it
 * to (max_allowed_packet is set in multiples of 1024). stmt_len 0: the line was too long to keep,
 * its statement's size is worked out from the file. */
static void load_worker_too_big(load_worker *w, int fd, const char *path, const load_table *t,
                                uint64_t off, uint64_t stmt_len, dm_error *err) {
  load_unit *u = w->run->u;
  if (stmt_len == 0) {
    char q[2 * LOAD_NAME_MAX + 3];
    uint64_t head = strlen("INSERT INTO ") + strlen(dm_db_quoted(t->table, q, sizeof q));
    stmt_len = load_worker_line_len(fd, off) - head + w->verb_table_len;
  }
  uint64_t need = (stmt_len + 1 + 1023) / 1024 * 1024;
  const dm_db_endpoint *ep = u->host->target_db(u->ctx);
  u->host->error_make(u->ctx, err, DM_ERR_LOAD_PACKET_TOO_BIG, NULL,
                      "load: the statement of line %" PRIu64 " (byte %" PRIu64
                      ") of %s (into `%s`.`%s`) is %" PRIu64
                      " bytes, more than the target %s:%d takes: its max_allowed_packet is %" PRIu64
                      " bytes; raise it to at least %" PRIu64 " (the most is 1073741824)",
                      load_worker_line_of(fd, off), off, path, t->tdb, t->ttable, stmt_len,
                      ep->host, ep->port, w->max_stmt + 1, need);
  err->scope = DM_SCOPE_DOWNSTREAM;
}

static void load_worker_refuse(load_unit *u, int fd, const char *path, const load_table *t,
                               uint64_t off, size_t at, const char *why, dm_error *err) {
  u->host->error_make(u->ctx, err, DM_ERR_LOAD_BAD_STATEMENT, NULL,
                      "load: refused line %" PRIu64 " (byte %" PRIu64
                      ") of %s: not an INSERT of the dump's form into `%s`.`%s` (at byte %zu of "
                      "the line: %s); nothing of it ran",
                      load_worker_line_of(fd, off), off, path, t->db, t->table, at, why);
}

/* Checks one line (data[0..len)) and makes the statement in place: *sql, *sql_len. -1: refused
 * (*err), nothing of it runs. */
static int load_worker_line(load_worker *w, int fd, const char *path, const load_table *t,
                            char *line, size_t len, uint64_t off, char **sql, size_t *sql_len,
                            dm_error *err) {
  load_unit *u = w->run->u;
  size_t head, at;
  const char *why;
  if (load_check_insert(line, len, t->table, &head, &at, &why) != 0) {
    load_worker_refuse(u, fd, path, t, off, at, why, err);
    return -1;
  }
  /* The line's own column list, if any, must be the dump schema's (verb_table holds that one):
   * which columns a row goes into never comes from a data line. */
  size_t cl = t->cols ? strlen(t->cols) : 0;
  if (cl && line[head + 1] == '(') { /* the check saw ` (` or ` VALUES ` after the head */
    if (len - head - 1 < cl || memcmp(line + head + 1, t->cols, cl) != 0) {
      load_worker_refuse(u, fd, path, t, off, head + 1,
                         "expected the columns of the table's schema file, in its order", err);
      return -1;
    }
    head += 1 + cl;
  }
  /* `INSERT INTO `t` [(...)]` becomes the verb, the routed table and the dump's columns, written
   * over the old head (and the room before it: the lines before were run already, or it is the
   * buffer's head room, at least verb_table_len bytes). */
  if (t->ext_vals) { /* each row gains the extract values: written anew, not in place */
    size_t tl = strlen(t->ext_vals);
    size_t n = w->verb_table_len + load_check_extend(line, len, head, t->ext_vals, tl, NULL);
    if (n > w->max_stmt) {
      load_worker_too_big(w, fd, path, t, off, n, err);
      return -1;
    }
    if (n + 1 > w->ext_cap) {
      char *nb = realloc(w->ext_buf, n + 1);
      if (!nb) {
        u->host->error_make(u->ctx, err, DM_ERR_NO_MEMORY, NULL,
                            "load: no memory for a statement of %zu bytes of %s", n, path);
        return -1;
      }
      w->ext_buf = nb;
      w->ext_cap = n + 1;
    }
    memcpy(w->ext_buf, w->verb_table, w->verb_table_len);
    load_check_extend(line, len, head, t->ext_vals, tl, w->ext_buf + w->verb_table_len);
    *sql = w->ext_buf;
    *sql_len = n;
    return 0;
  }
  *sql = line + head - w->verb_table_len;
  memcpy(*sql, w->verb_table, w->verb_table_len);
  *sql_len = len - head + w->verb_table_len;
  if (*sql_len > w->max_stmt) {
    load_worker_too_big(w, fd, path, t, off, *sql_len, err);
    return -1;
  }
  return 0;
}

/* Loads one file from its checkpoint. 0 done, 1 stopped at a safe point, 2 rolled back by a
 * deadlock or lock wait timeout (f->offset back at the last commit; *err says which), -1 error
 * (*err). */
static int load_worker_file(load_worker *w, load_file *f, dm_error *err) {
  load_run *run = w->run;
  load_unit *u = run->u;
  const load_table *t = &run->d->tables[f->table];
  char path[PATH_MAX + 512], qd[2 * LOAD_NAME_MAX + 8], qt[2 * LOAD_NAME_MAX + 3];
  snprintf(path, sizeof path, "%s/%s", run->d->dir, f->name);
  static const char *verbs[] = {"REPLACE INTO ", "INSERT IGNORE INTO ", "INSERT INTO "};
  dm_db_quoted(t->ttable, qt, sizeof qt);
  if (t->ext_cols && !t->cols) {
    u->host->error_make(u->ctx, err, DM_ERR_INTERNAL, NULL,
                        "load: `%s`.`%s` has extract columns but no column list", t->db, t->table);
    return -1;
  }
  size_t need = strlen(verbs[u->cfg.on_dup]) + strlen(qt) + 2 + (t->cols ? strlen(t->cols) : 0) +
                (t->ext_cols ? strlen(t->ext_cols) : 0);
  if (need > w->room) { /* no data is kept between files: the buffer can move */
    char *nb = realloc(w->buf, w->cap - w->room + need), *nv = realloc(w->verb_table, need);
    if (nb) {
      w->cap += need - w->room;
      w->buf = nb;
    }
    if (nv)
      w->verb_table = nv;
    if (!nb || !nv) {
      u->host->error_make(u->ctx, err, DM_ERR_NO_MEMORY, NULL,
                          "load: no memory for the column list of `%s`.`%s`", t->tdb, t->ttable);
      return -1;
    }
    w->room = need;
  }
  /* the dump's columns, then the extract columns inside the same parentheses */
  int cl = t->cols ? (int)strlen(t->cols) - (t->ext_cols ? 1 : 0) : 0;
  w->verb_table_len = (size_t)snprintf(
      w->verb_table, w->room, "%s%s%s%.*s%s%s", verbs[u->cfg.on_dup], qt, t->cols ? " " : "", cl,
      t->cols ? t->cols : "", t->ext_cols ? t->ext_cols : "", t->ext_cols ? ")" : "");

  char use[2 * LOAD_NAME_MAX + 16];
  int n = snprintf(use, sizeof use, "USE %s", dm_db_quoted(t->tdb, qd, sizeof qd));
  if (load_db_exec(u, w->c, use, (size_t)n, "load: cannot USE the target schema", err) != 0)
    return -1;
  int fd = load_dir_open(u, run->d, f->name, err);
  if (fd < 0)
    return -1;
  if (f->offset > 0 && lseek(fd, (off_t)f->offset, SEEK_SET) < 0) {
    int e = errno;
    close(fd);
    u->host->error_make(u->ctx, err, DM_ERR_IO, strerror(e),
                        "load: cannot read %s at byte %" PRIu64 ": %s", path, f->offset,
                        strerror(e));
    return -1;
  }
  posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);

  /* The longest line kept: a statement the target takes, with a longer head than ours. */
  const size_t line_max = (size_t)w->max_stmt + w->room;
  uint64_t base = f->offset;      /* file offset of data[0] */
  uint64_t committed = f->offset; /* what the checkpoint says */
  uint64_t executed = f->offset;  /* the end of the last line run */
  uint64_t pending = 0;           /* statement bytes in the open transaction */
  uint64_t pending_rows = 0;      /* rows the statements of the open transaction wrote */
  size_t have = 0;
  bool eof = false;
  int rc = 0;
  while (rc == 0) {
    char *data = w->buf + w->room;
    size_t dcap = w->cap - w->room;
    if (!eof && have < dcap) {
      ssize_t got = read(fd, data + have, dcap - have);
      if (got < 0 && errno == EINTR)
        continue;
      if (got < 0) {
        u->host->error_make(u->ctx, err, DM_ERR_IO, strerror(errno),
                            "load: cannot read %s at byte %" PRIu64 ": %s", path, base + have,
                            strerror(errno));
        rc = -1;
        break;
      }
      eof = got == 0;
      have += (size_t)got;
    }
    size_t pos = 0;
    for (;;) {
      char *nl = memchr(data + pos, '\n', have - pos);
      size_t line_end = nl ? (size_t)(nl - data) : have;
      if (!nl && !(eof && line_end > pos))
        break; /* an incomplete line: read more */
      size_t next = nl ? line_end + 1 : have;
      size_t len = line_end - pos;
      while (len > 0 && (data[pos + len - 1] == '\r' || data[pos + len - 1] == ' '))
        len--;
      if (len > 0) {
        if (load_run_stopping(run)) {
          rc = 1;
          break;
        }
        char *sql;
        size_t sl;
        if (load_worker_line(w, fd, path, t, data + pos, len, base + pos, &sql, &sl, err) != 0) {
          rc = -1;
          break;
        }
        if (mysql_real_query(w->c, sql, (unsigned long)sl) != 0) {
          unsigned no = mysql_errno(w->c);
          char what[PATH_MAX + 1536];
          snprintf(what, sizeof what,
                   "load: the statement of line %" PRIu64 " (byte %" PRIu64
                   ") of %s (into `%s`.`%s`) failed",
                   load_worker_line_of(fd, base + pos), base + pos, path, t->tdb, t->ttable);
          load_db_error(u, w->c, what, err);
          /* A deadlock or lock wait timeout rolled the statement (or the transaction) back: the
           * batch runs again from the last commit (load_worker_main), not a pause. */
          rc = dm_db_errno_rolled_back(no) ? 2 : -1;
          break;
        }
        pending += sl;
        my_ulonglong affected = mysql_affected_rows(w->c);
        if (affected != (my_ulonglong)-1)
          pending_rows += affected;
      }
      pos = next;
      executed = base + pos;
      if (pending >= u->cfg.batch_bytes) {
        if (load_worker_commit(w, f, executed, err) != 0) {
          rc = -1;
          break;
        }
        atomic_fetch_add(&u->finished_bytes, executed - committed);
        load_metrics_committed(u, executed - committed, pending_rows);
        committed = executed;
        pending = 0;
        pending_rows = 0;
      }
    }
    if (rc != 0)
      break;
    /* Keep the incomplete line; grow the buffer when a line does not fit in it, up to the
     * longest statement the target takes: one statement is all a worker ever holds. */
    memmove(data, data + pos, have - pos);
    have -= pos;
    base += pos;
    if (eof && have == 0)
      break;
    if (have == dcap) {
      if (have > line_max) {
        load_worker_too_big(w, fd, path, t, base, 0, err);
        rc = -1;
        break;
      }
      size_t cap = 2 * dcap < line_max + 1 ? 2 * dcap : line_max + 1;
      char *nb = realloc(w->buf, w->room + cap);
      if (!nb) {
        u->host->error_make(u->ctx, err, DM_ERR_NO_MEMORY, NULL,
                            "load: no memory for a line of %zu bytes of %s", cap, path);
        rc = -1;
        break;
      }
      w->buf = nb;
      w->cap = w->room + cap;
    }
  }
  close(fd);
  /* A long line grew the buffer: give the memory back rather than hold it for the next files. */
  if (w->ext_cap > LOAD_READ_BUF) {
    free(w->ext_buf);
    w->ext_buf = NULL;
    w->ext_cap = 0;
  }
  if (w->cap > w->room + LOAD_READ_BUF) {
    char *nb = realloc(w->buf, w->room + LOAD_READ_BUF);
    if (nb) {
      w->buf = nb;
      w->cap = w->room + LOAD_READ_BUF;
    }
  }
  if (rc == -1) {
    mysql_real_query(w->c, "ROLLBACK", 8); /* best effort: a lost connection rolls back anyway */
    /* A stale worker's statement may fail before its checkpoint update does (a duplicate key of
     * a row its successor has loaded): the cause to report is then the fence. */
    if (u->fence && err->code != DM_ERR_FENCED)
      load_cp_fenced_instead(u, w->c, err);
    return -1;
  }
  if (rc == 2) { /* to be run again from what the checkpoint row says */
    mysql_real_query(w->c, "ROLLBACK", 8);
    f->offset = committed;
    return 2;
  }
  /* Done or stopped: commit what ran, so a stop loses no work. */
  uint64_t upto = rc == 0 ? f->size : executed;
  if (upto > committed || pending > 0) {
    if (load_worker_commit(w, f, upto, err) != 0) {
      mysql_real_query(w->c, "ROLLBACK", 8);
      return -1;
    }
    atomic_fetch_add(&u->finished_bytes, upto - committed);
    load_metrics_committed(u, upto - committed, pending_rows);
  }
  f->offset = upto;
  return rc;
}

static void *load_worker_main(void *arg) {
  load_worker *w = arg;
  load_run *run = w->run;
  load_unit *u = run->u;
  dm_error err;
  mysql_thread_init();
  w->c = load_db_connect(u, &err);
  if (w->c && (load_db_exec(u, w->c, "SET autocommit = 0", 18, "load: cannot set up the session",
                            &err) != 0 ||
               load_db_max_packet(u, w->c, &w->max_stmt, &err) != 0)) {
    load_db_close(u, w->c);
    w->c = NULL;
  }
  if (!w->c) {
    if (!atomic_load(&u->killed))
      load_run_error(run, &err);
    mysql_thread_end();
    return NULL;
  }
  int j, kt;
  while ((j = load_run_next(run, &kt)) != -1) {
    int rc = kt >= 0 ? load_keys_apply(u, w->c, &run->d->tables[kt], &run->abort, &err)
                     : load_worker_file(w, &run->d->files[j], &err);
    /* Two workers inserting into one table (its files, or a merged table) may deadlock on a
     * unique key: InnoDB rolls one back, and running it again is the fix (the server's own
     * advice). A few tries with a growing pause; then the error pauses the task (resumable). */
    for (int tries = 1; rc == 2 && tries <= LOAD_LOCK_RETRIES && !load_run_stopping(run); tries++) {
      u->host->logf(u->ctx, DM_LOG_WARN,
                    "%s: %s; running it again from byte %" PRIu64 " (try %d of %d)", err.message,
                    err.raw_cause, run->d->files[j].offset, tries, LOAD_LOCK_RETRIES);
      usleep(100000u * (unsigned)tries);
      rc = load_worker_file(w, &run->d->files[j], &err);
    }
    if (rc == 2)
      rc = -1;
    if (rc < 0 && !atomic_load(&u->killed))
      load_run_error(run, &err);
    if (rc != 0)
      break;
    if (kt < 0) {
      atomic_fetch_add(&run->jobs_done, 1);
      load_run_file_done(run, run->d->tables[run->d->files[j].table].group);
    }
  }
  load_db_close(u, w->c);
  w->c = NULL;
  mysql_thread_end();
  return NULL;
}

static int load_run_cmp(const void *a, const void *b, void *arg) {
  const load_dump *d = arg;
  const load_file *x = &d->files[*(const int *)a], *y = &d->files[*(const int *)b];
  uint64_t rx = x->size - x->offset, ry = y->size - y->offset;
  return rx < ry ? 1 : rx > ry ? -1 : (*(const int *)a - *(const int *)b);
}

dm_outcome load_workers_run(load_unit *u, load_dump *d, dm_result *result) {
  load_run run = {.u = u, .d = d};
  pthread_mutex_init(&run.mu, NULL);
  atomic_init(&run.abort, false);
  atomic_init(&run.jobs_done, 0);
  run.jobs = malloc(sizeof *run.jobs * ((size_t)d->n_files + 1));
  run.ready = malloc(sizeof *run.ready * ((size_t)d->n_tables + 1));
  load_worker *ws = calloc((size_t)u->cfg.pool_size, sizeof *ws);
  dm_error e;
  if (!run.jobs || !run.ready || !ws) {
    free(run.jobs);
    free(run.ready);
    free(ws);
    pthread_mutex_destroy(&run.mu);
    u->host->error_make(u->ctx, &e, DM_ERR_NO_MEMORY, NULL, "load: no memory for the workers");
    dm_result_fail(result, &e);
    return DM_OUTCOME_ERROR;
  }
  for (int i = 0; i < d->n_files; i++) {
    const load_file *f = &d->files[i];
    if (f->registered && f->offset < f->size && d->tables[f->table].allowed)
      run.jobs[run.n_jobs++] = i;
  }
  qsort_r(run.jobs, (size_t)run.n_jobs, sizeof *run.jobs, load_run_cmp, d);
  for (int i = 0; i < d->n_tables; i++)
    atomic_init(&d->tables[i].files_left, 0);
  for (int k = 0; k < run.n_jobs; k++)
    atomic_fetch_add(&d->tables[d->tables[d->files[run.jobs[k]].table].group].files_left, 1);
  for (int i = 0; i < d->n_tables; i++) /* data loaded by an earlier run, keys not yet added */
    if (d->tables[i].allowed && d->tables[i].group == i && d->tables[i].keys &&
        atomic_load(&d->tables[i].files_left) == 0)
      run.ready[run.n_ready++] = i;
  int n_work = run.n_jobs + run.n_ready;
  int n_workers = n_work < u->cfg.pool_size ? n_work : u->cfg.pool_size;
  for (int i = 0; i < n_workers; i++) {
    load_worker *w = &ws[i];
    w->run = &run;
    w->room = LOAD_HEAD_ROOM;
    w->cap = w->room + LOAD_READ_BUF;
    w->buf = malloc(w->cap);
    w->verb_table = malloc(w->room);
    if (!w->buf || !w->verb_table || pthread_create(&w->thread, NULL, load_worker_main, w) != 0) {
      u->host->error_make(u->ctx, &e, DM_ERR_NO_MEMORY, NULL, "load: cannot start worker %d", i);
      load_run_error(&run, &e);
      break;
    }
    w->started = true;
  }
  for (int i = 0; i < n_workers; i++) {
    if (ws[i].started)
      pthread_join(ws[i].thread, NULL);
    free(ws[i].buf);
    free(ws[i].verb_table);
    free(ws[i].ext_buf);
  }
  free(ws);
  free(run.jobs);
  free(run.ready);
  pthread_mutex_destroy(&run.mu);

  if (atomic_load(&u->killed))
    return DM_OUTCOME_CANCELED;
  if (run.has_error) {
    dm_result_fail(result, &run.error);
    return DM_OUTCOME_ERROR;
  }
  for (int i = 0; i < d->n_files; i++) {
    const load_file *f = &d->files[i];
    if (f->registered && f->offset < f->size && d->tables[f->table].allowed)
      return DM_OUTCOME_CANCELED; /* stopped with work left */
  }
  for (int i = 0; i < d->n_tables; i++)
    if (d->tables[i].allowed && d->tables[i].keys)
      return DM_OUTCOME_CANCELED; /* stopped before or while adding keys */
  return DM_OUTCOME_FINISHED;
}
