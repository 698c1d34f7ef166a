/*
 * The dump folder: file names, small files written atomically, the metadata file that marks a
 * complete dump, and the clean-up of an incomplete one.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dmhost/fs.h"
#include <dmhost/dump_format.h>

#include "dump_internal.h"

char *dump_file_name_part(const char *name) {
  char *out = malloc(DM_DUMP_NAME_PART_MAX + 1);
  if (out && dm_dump_name_part(name, out, DM_DUMP_NAME_PART_MAX + 1) == 0) {
    free(out);
    return NULL;
  }
  return out;
}

int dump_io_error(dump_unit *u, const char *what, const char *path, int e, dm_error *err) {
  /* A permanent error is not resumable: auto-resume would take the source's read lock and dump
   * again only to fail at the same place (dm_errno_permanent says which). */
  u->host->error_make(u->ctx, err, dm_errno_permanent(e) ? DM_ERR_DUMP_IO_PERMANENT : DM_ERR_IO,
                      strerror(e), "dump: cannot %s %s: %s", what, path, strerror(e));
  return -1;
}

int dump_path(dump_unit *u, char *out, const char *file, dm_error *err) {
  if (snprintf(out, PATH_MAX, "%s/%s", u->work_dir, file) >= PATH_MAX)
    return dump_io_error(u, "make a path of", file, ENAMETOOLONG, err);
  return 0;
}

int dump_dir_sync(dump_unit *u, dm_error *err) {
  return dm_fs_sync_dir(u->work_dir) == 0 ? 0 : dump_io_error(u, "flush", u->work_dir, errno, err);
}

static bool dump_metadata_ours(const char *name);

/*
 * The one place that makes the dump's files durable (issue 25). The data and schema files are
 * written and renamed without a sync each: a crash before the metadata exists loses nothing that
 * anything names, as the next start removes every *.sql and dumps again (dump_dir_clean). So once
 * all of them are renamed, each is fdatasync'ed here (its write-back was started block by block,
 * dump_write_out, so this mostly waits for the last blocks) and the folder once; only then is the
 * metadata written. At 8 x 200k rows (strace) the workers' per-file fsyncs waited 0.195 s in
 * all, this loop 0.067 s; one syncfs(2) took 0.010 s there, but it flushes whatever else is dirty
 * on the file system (the servers', other processes'), an earlier run's 0.205 s (bench/README.md).
 */
int dump_dir_sync_files(dump_unit *u, dm_error *err) {
  DIR *d = opendir(u->work_dir);
  if (!d)
    return dump_io_error(u, "open", u->work_dir, errno, err);
  int rc = 0;
  struct dirent *e;
  while (rc == 0 && (e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name);
    if (!dump_metadata_ours(e->d_name) || strcmp(e->d_name + n - 4, ".sql") != 0)
      continue;
    int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || fdatasync(fd) != 0) {
      int en = errno;
      char path[PATH_MAX + 256];
      snprintf(path, sizeof path, "%s/%s", u->work_dir, e->d_name);
      rc = dump_io_error(u, "flush", path, en, err);
    }
    if (fd >= 0)
      close(fd);
  }
  closedir(d);
  return rc == 0 ? dump_dir_sync(u, err) : -1;
}

int dump_file_write_atomic(dump_unit *u, const char *file, const char *data, size_t len,
                           unsigned flags, dm_error *err) {
  char path[PATH_MAX];
  if (dump_path(u, path, file, err) != 0)
    return -1;
  const char *step = "create";
  if (dm_fs_write_atomic(path, data, len, u->file_mode, flags, &step) != 0)
    return dump_io_error(u, step, path, errno, err);
  return 0;
}

static void dump_metadata_time(time_t t, char *buf, size_t len) {
  struct tm tm;
  localtime_r(&t, &tm);
  strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm);
}

int dump_metadata_write(dump_unit *u, dm_error *err) {
  char *data = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&data, &len);
  if (!f) {
    u->host->error_make(u->ctx, err, DM_ERR_NO_MEMORY, NULL, "dump: no memory for the metadata");
    return -1;
  }
  char started[32], finished[32];
  dump_metadata_time(u->started, started, sizeof started);
  dump_metadata_time(time(NULL), finished, sizeof finished);
  fprintf(f, "Started dump at: %s\n", started);
  if (u->have_pos)
    fprintf(f, "SHOW MASTER STATUS:\n\tLog: %s\n\tPos: %" PRIu64 "\n\tGTID:%s\n\n", u->pos.name,
            u->pos.pos, u->pos.gtid);
  if (u->have_pos && u->have_safe_exit)
    fprintf(f, "%s\n\tLog: %s\n\tPos: %" PRIu64 "\n\tGTID:%s\n\n", DM_DUMP_METADATA_AFTER,
            u->safe_exit.name, u->safe_exit.pos, u->safe_exit.gtid);
  if (!u->have_pos) /* docs/dump-format.md: no position section, the reason instead */
    fprintf(f, "%s%s\n\n", DM_DUMP_METADATA_WARNING, u->no_pos);
  fprintf(f, "TABLES:\n");
  for (size_t i = 0; i < u->n_tables; i++) {
    dump_table *t = u->tables[i];
    fprintf(f, "\t%s\trows=%" PRId64 "\tchunks=%d\n", t->qname, (int64_t)atomic_load(&t->rows),
            atomic_load(&t->files));
  }
  fprintf(f, "Finished dump at: %s\n", finished);
  int rc;
  if (fclose(f) != 0 || !data) {
    u->host->error_make(u->ctx, err, DM_ERR_NO_MEMORY, NULL, "dump: no memory for the metadata");
    rc = -1;
  } else {
    /* Every file the metadata promises, and its folder entry, must be on disk before the
     * metadata says the dump is complete; then the metadata itself and its own entry. */
    rc = dump_dir_sync_files(u, err) == 0 &&
                 dump_file_write_atomic(u, DUMP_METADATA, data, len, DM_FS_SYNC, err) == 0
             ? 0
             : -1;
  }
  free(data);
  return rc;
}

bool dump_metadata_read(dump_unit *u, dm_position *pos, bool *has_pos, dm_position *safe_exit,
                        bool *has_safe_exit, char *no_pos, size_t no_pos_len, int *tables,
                        int64_t *rows) {
  char path[PATH_MAX];
  dm_error err;
  if (dump_path(u, path, DUMP_METADATA, &err) != 0)
    return false;
  FILE *f = fopen(path, "re");
  if (!f)
    return false;
  memset(pos, 0, sizeof *pos);
  memset(safe_exit, 0, sizeof *safe_exit);
  dm_position *at = pos; /* the section being read */
  no_pos[0] = '\0';
  *tables = 0;
  *rows = 0;
  bool finished = false;
  char line[DM_POSITION_GTID_MAX + sizeof u->no_pos];
  bool in_tables = false;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\r\n")] = '\0';
    const char *r;
    if (in_tables) {
      if (line[0] == '\t' && (r = strstr(line, "\trows=")) != NULL) {
        (*tables)++;
        *rows += strtoll(r + 6, NULL, 10);
      }
    } else if (strcmp(line, DM_DUMP_METADATA_AFTER) == 0)
      at = safe_exit;
    else if (strncmp(line, "\tLog: ", 6) == 0)
      dm_strlcpy(at->name, line + 6, sizeof at->name);
    else if (strncmp(line, "\tPos: ", 6) == 0)
      at->pos = strtoull(line + 6, NULL, 10);
    else if (strncmp(line, "\tGTID:", 6) == 0)
      dm_strlcpy(at->gtid, line + 6, sizeof at->gtid);
    else if (strncmp(line, DM_DUMP_METADATA_WARNING, strlen(DM_DUMP_METADATA_WARNING)) == 0)
      dm_strlcpy(no_pos, line + strlen(DM_DUMP_METADATA_WARNING), no_pos_len);
    else if (strcmp(line, "TABLES:") == 0)
      in_tables = true;
    if (strncmp(line, "Finished dump at:", 17) == 0)
      finished = true;
  }
  fclose(f);
  *has_pos = pos->name[0] != '\0';
  *has_safe_exit = safe_exit->name[0] != '\0';
  /* the metadata is written whole (atomically) or not at all: a position or the reason there is
   * none, then its last line */
  return finished && (*has_pos || no_pos[0] != '\0');
}

static bool dump_metadata_ours(const char *name) {
  size_t n = strlen(name);
  return (n > 4 && strcmp(name + n - 4, ".sql") == 0) ||
         (n > 4 && strcmp(name + n - 4, ".tmp") == 0);
}

int dump_dir_clean(dump_unit *u, dm_error *err) {
  DIR *d = opendir(u->work_dir);
  if (!d)
    return dump_io_error(u, "open", u->work_dir, errno, err);
  int removed = 0, rc = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (!dump_metadata_ours(e->d_name))
      continue;
    if (unlinkat(dirfd(d), e->d_name, 0) != 0 && errno != ENOENT) {
      char path[PATH_MAX + 256];
      snprintf(path, sizeof path, "%s/%s", u->work_dir, e->d_name);
      rc = dump_io_error(u, "remove", path, errno, err);
      break;
    }
    removed++;
  }
  closedir(d);
  if (removed > 0)
    u->host->logf(u->ctx, DM_LOG_INFO,
                  "dump: removed %d file(s) of an incomplete earlier dump from %s; dumping again "
                  "from a new snapshot",
                  removed, u->work_dir);
  return rc;
}
