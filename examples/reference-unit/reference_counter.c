/*
 * reference-counter: the smallest complete dmhost unit, written to be read.
 *
 * It is a dump unit that "dumps" the numbers 1..count into <work_dir>/numbers.txt, one per line,
 * `batch` numbers at a time. It shows every part of the contract a real unit has to get right:
 *
 *   - one exported symbol (dm_unit_entry) returning a const descriptor (bottom of this file);
 *   - all state per instance, behind the `void *self` that init returns: no globals but constants,
 *     so the host can run two instances (two tasks) of one library side by side;
 *   - settings read through the host (cfg_int), with defaults;
 *   - a durable checkpoint committed at safe points (after each batch), and work that restarts
 *     from it without losing or doubling anything, whatever happened before (pause, kill, crash);
 *   - the stop token polled at those safe points, so pause/stop/swap are prompt and clean;
 *   - status readable from another thread at any time (atomics, no locks, never blocking);
 *   - errors as dm_error values with a code from the table and a message saying what, where, fix.
 *
 * Settings (task file, section `dump` of the unit):
 *   count = 1000;  # how many numbers to write
 *   batch = 100;   # numbers per checkpoint
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dmhost/dmhost.h>
#include <dmhost/settings.h>

#define REFC_DEFAULT_COUNT 1000
#define REFC_DEFAULT_BATCH 100
#define REFC_NUMBERS "numbers.txt"
#define REFC_CHECKPOINT "checkpoint"

/* One instance of the unit. The host never looks inside; it only hands the pointer back. */
typedef struct refc {
  /* What init was given. Both stay valid until close returns. */
  const dm_host_services *host;
  dm_ctx *ctx;

  int64_t count; /* settings, fixed after init (this unit has no update slot) */
  int64_t batch;

  char numbers_path[PATH_MAX];
  char checkpoint_path[PATH_MAX];
  char work_dir[PATH_MAX];

  /* Shared with status and kill, which run on other threads while process runs: atomics. */
  atomic_int_least64_t done; /* numbers committed (the checkpoint's value) */
  atomic_bool killed;
} refc;

/* ---- the checkpoint ---- */

/*
 * The checkpoint is the one fact the unit trusts after a restart: "the first N numbers are in
 * numbers.txt and durable". The SDK's dm_fs_write_atomic writes it to a temporary file, flushes
 * it to disk, renames it over the old one and flushes the folder too: a crash at any moment leaves
 * either the old or the new checkpoint, never half of one. Its mode is the host's file_mode (0600
 * unless the task's file-mode widens it).
 */
static int refc_checkpoint_write(refc *r, int64_t done, dm_error *err) {
  char line[32];
  int n = snprintf(line, sizeof line, "%" PRId64 "\n", done);
  const char *step = "create";
  if (dm_fs_write_atomic(r->checkpoint_path, line, (size_t)n,
                         (mode_t)dm_host_file_mode(r->host, r->ctx), DM_FS_SYNC, &step) == 0)
    return 0;
  dm_error_set(err, DM_ERR_IO, strerror(errno),
               "reference-counter: cannot commit checkpoint %s (%" PRId64 " done; %s failed): %s",
               r->checkpoint_path, done, step, strerror(errno));
  return -1;
}

/* Reads the checkpoint: 0 with *done (0 when there is none yet), or -1 with *err. */
static int refc_checkpoint_read(refc *r, int64_t *done, dm_error *err) {
  *done = 0;
  FILE *f = fopen(r->checkpoint_path, "re");
  if (!f) {
    if (errno == ENOENT)
      return 0;
    dm_error_set(err, DM_ERR_IO, strerror(errno), "reference-counter: cannot read checkpoint %s",
                 r->checkpoint_path);
    return -1;
  }
  long long v = -1;
  int ok = fscanf(f, "%lld", &v) == 1 && v >= 0;
  fclose(f);
  if (!ok) {
    dm_error_set(err, DM_ERR_IO, NULL,
                 "reference-counter: checkpoint %s is damaged (no count in it): remove the "
                 "task's work folder %s to start over",
                 r->checkpoint_path, r->work_dir);
    return -1;
  }
  if (v > r->count) {
    dm_error_set(err, DM_ERR_CONFIG_INVALID, NULL,
                 "reference-counter: checkpoint %s says %lld numbers are done, but count is "
                 "%" PRId64 ": raise count, or remove the work folder %s to start over",
                 r->checkpoint_path, v, r->count, r->work_dir);
    return -1;
  }
  *done = v;
  return 0;
}

/*
 * Makes numbers.txt hold exactly the first `done` lines. A crash (or a kill) after some numbers of
 * a batch were written but before its checkpoint was committed leaves extra lines; they are cut
 * here, so the next batch writes them again exactly once.
 */
static int refc_numbers_trim(refc *r, int64_t done, dm_error *err) {
  int fd = open(r->numbers_path, O_RDWR | O_CREAT | O_CLOEXEC,
                (mode_t)dm_host_file_mode(r->host, r->ctx));
  if (fd < 0) {
    dm_error_set(err, DM_ERR_IO, strerror(errno), "reference-counter: cannot open %s",
                 r->numbers_path);
    return -1;
  }
  off_t pos = 0;  /* bytes read so far */
  off_t keep = 0; /* the end of the last line to keep */
  int64_t lines = 0;
  char buf[65536];
  while (lines < done) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      dm_error_set(err, DM_ERR_IO, strerror(errno), "reference-counter: cannot read %s",
                   r->numbers_path);
      close(fd);
      return -1;
    }
    if (n == 0)
      break;
    for (ssize_t i = 0; i < n && lines < done; i++)
      if (buf[i] == '\n') {
        lines++;
        keep = pos + i + 1;
      }
    pos += n;
  }
  if (lines < done) {
    /* The checkpoint is only committed after the lines are on disk, so this is not a crash: the
     * file was changed by someone else. Refuse rather than guess. */
    dm_error_set(err, DM_ERR_IO, NULL,
                 "reference-counter: %s has %" PRId64 " lines, but checkpoint %s says %" PRId64
                 " were written: remove the work folder %s to start over",
                 r->numbers_path, lines, r->checkpoint_path, done, r->work_dir);
    close(fd);
    return -1;
  }
  if (ftruncate(fd, keep) != 0) {
    dm_error_set(err, DM_ERR_IO, strerror(errno),
                 "reference-counter: cannot cut %s to %" PRId64 " lines", r->numbers_path, done);
    close(fd);
    return -1;
  }
  close(fd);
  return 0;
}

/* ---- the slots ---- */

static int refc_path(char *out, const char *dir, const char *file, dm_error *err) {
  if (snprintf(out, PATH_MAX, "%s/%s", dir, file) >= PATH_MAX) {
    dm_error_set(err, DM_ERR_CONFIG_INVALID, NULL, "reference-counter: work folder %s is too long",
                 dir);
    return -1;
  }
  return 0;
}

/*
 * init: read the settings, allocate the instance. Nothing is opened here: process opens what it
 * needs and closes it before returning, so a paused unit holds nothing.
 */
static int refc_init(const dm_host_services *host, dm_ctx *ctx, void **self, dm_error *err) {
  refc *r = calloc(1, sizeof *r);
  if (!r) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "reference-counter: no memory for an instance");
    return -1;
  }
  r->host = host;
  r->ctx = ctx;
  atomic_init(&r->done, 0);
  atomic_init(&r->killed, false);
  const char *dir = host->work_dir(ctx);
  /* The SDK's ranged settings (settings.h): the default when absent; a wrong type or a value out
   * of range is a coded error naming the setting, its value and the range. */
  if (dm_setting_int(host, ctx, "reference-counter", "count", REFC_DEFAULT_COUNT, 0, INT64_MAX,
                     &r->count, err) != 0 ||
      dm_setting_int(host, ctx, "reference-counter", "batch", REFC_DEFAULT_BATCH, 1, INT64_MAX,
                     &r->batch, err) != 0 ||
      refc_path(r->numbers_path, dir, REFC_NUMBERS, err) != 0 ||
      refc_path(r->checkpoint_path, dir, REFC_CHECKPOINT, err) != 0) {
    free(r); /* on failure init releases everything itself: close is not called */
    return -1;
  }
  dm_strlcpy(r->work_dir, dir, sizeof r->work_dir);
  *self = r;
  return 0;
}

/* is_fresh_task: fresh until the first checkpoint exists. */
static int refc_is_fresh_task(void *self, bool *fresh, dm_error *err) {
  refc *r = self;
  struct stat st;
  if (stat(r->checkpoint_path, &st) == 0) {
    *fresh = false;
    return 0;
  }
  if (errno == ENOENT) {
    *fresh = true;
    return 0;
  }
  dm_error_set(err, DM_ERR_IO, strerror(errno), "reference-counter: cannot look at %s",
               r->checkpoint_path);
  return -1;
}

static void refc_fail(dm_result *result, const dm_error *e) {
  result->outcome = DM_OUTCOME_ERROR;
  result->n_errors = 1;
  result->errors[0] = *e;
}

/*
 * process: from the checkpoint to count, one batch at a time. Each batch is written, flushed to
 * disk, and only then committed in the checkpoint; the stop token is polled between batches, where
 * everything done is committed, so stopping there loses nothing and needs no extra save.
 */
static void refc_process(void *self, dm_result *result) {
  refc *r = self;
  dm_error e;
  int64_t done;
  if (refc_checkpoint_read(r, &done, &e) != 0 || refc_numbers_trim(r, done, &e) != 0) {
    refc_fail(result, &e);
    return;
  }
  atomic_store(&r->done, done);
  r->host->logf(r->ctx, DM_LOG_INFO, "reference-counter: starting at %" PRId64 " of %" PRId64, done,
                r->count);

  FILE *out = fopen(r->numbers_path, "ae");
  if (!out) {
    dm_error_set(&e, DM_ERR_IO, strerror(errno), "reference-counter: cannot open %s",
                 r->numbers_path);
    refc_fail(result, &e);
    return;
  }
  while (done < r->count) {
    /* The safe point: everything written so far is committed. */
    if (r->host->stop_requested(r->ctx) || atomic_load(&r->killed)) {
      fclose(out);
      result->outcome = DM_OUTCOME_CANCELED;
      return;
    }
    int64_t end = r->count - done > r->batch ? done + r->batch : r->count; /* no overflow */
    /* The stop token is only polled between batches, so a batch must take well under a second
     * (the host's limit for noticing it). kill, though, abandons a batch half-way: its lines are
     * past the checkpoint and the next start trims them. */
    for (int64_t i = done + 1; i <= end; i++) {
      if (atomic_load_explicit(&r->killed, memory_order_relaxed)) {
        fclose(out);
        result->outcome = DM_OUTCOME_CANCELED;
        return;
      }
      fprintf(out, "%" PRId64 "\n", i);
    }
    /* Data first, durably; the checkpoint after. The other order could promise lines that a crash
     * then loses. */
    if (fflush(out) != 0 || fdatasync(fileno(out)) != 0) {
      dm_error_set(&e, DM_ERR_IO, strerror(errno), "reference-counter: cannot write %s",
                   r->numbers_path);
      fclose(out);
      refc_fail(result, &e);
      return;
    }
    if (refc_checkpoint_write(r, end, &e) != 0) {
      fclose(out);
      refc_fail(result, &e);
      return;
    }
    done = end;
    atomic_store(&r->done, done);
  }
  fclose(out);
  r->host->logf(r->ctx, DM_LOG_INFO, "reference-counter: all %" PRId64 " numbers written",
                r->count);
  result->outcome = DM_OUTCOME_FINISHED;
}

/*
 * pause: process has already returned (the host guarantees it) and closed its file, so there is
 * nothing to release; the checkpoint stays. A unit holding connections would close them here.
 * There is no resume slot: process restarts from the checkpoint, which is exactly a resume.
 */
static void refc_pause(void *self) {
  refc *r = self;
  r->host->logf(r->ctx, DM_LOG_INFO, "reference-counter: paused at %" PRId64 " of %" PRId64,
                (int64_t)atomic_load(&r->done), r->count);
}

/*
 * status: any thread, any time, also while process runs: only atomic reads, no locks, no I/O.
 */
static void refc_status(void *self, dm_status_sink *sink) {
  refc *r = self;
  int64_t done = atomic_load(&r->done);
  sink->put_progress(sink, (uint64_t)done, (uint64_t)r->count, "rows");
  sink->put_int(sink, "count", r->count);
}

/*
 * kill: called from another thread while process may still run, when the stop token was not
 * enough. Only raise a flag that process checks; never free here (close does that, after process
 * has returned). Nothing extra is saved: what is durable is what the checkpoint says.
 */
static void refc_kill(void *self) {
  refc *r = self;
  atomic_store(&r->killed, true);
}

/* close: the end of the instance. Called once, never while process runs. */
static void refc_close(void *self) {
  free(self);
}

/*
 * The descriptor. DM_UNIT_DESCRIPTOR_HEADER writes magic, ABI version and size, which the host
 * checks before it calls anything. NULL slots are "not supported": resume (process is called
 * again) and update (settings cannot change while paused). handover (ABI 1.1) is 0: it neither
 * starts at a position the unit before it hands over nor gives one to the unit after it (a unit
 * that does sets DM_UNIT_TAKES_POSITION / DM_UNIT_GIVES_POSITION, the latter with end_position).
 */
static const dm_unit_descriptor refc_unit = {
    DM_UNIT_DESCRIPTOR_HEADER,
    .kind = DM_UNIT_DUMP,
    .name = "reference-counter",
    .version = "1.0.0",
    .ops =
        {
            .init = refc_init,
            .is_fresh_task = refc_is_fresh_task,
            .process = refc_process,
            .pause = refc_pause,
            .status = refc_status,
            .kill = refc_kill,
            .close = refc_close,
        },
    .handover = 0,
};

DM_UNIT_EXPORT(refc_unit)
