/*
 * The dump folder (docs/dump-format.md): `metadata`, `<db>-schema-create.sql`,
 * `<db>.<table>-schema.sql` and `<db>.<table>.<NNNNNN>.sql`. Names in file names escape `.` (and a
 * few other bytes) as `@XXXX`, so the number of dots tells the kinds apart.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dmhost/dump_format.h>

#include <dmhost/fs.h>

#include "load.h"

#define LOAD_DIR_SCHEMA_MAX (16u << 20) /* a schema file bigger than this is not one */

static bool load_dir_ends(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n > m && strcmp(s + n - m, suffix) == 0;
}

static int load_dir_count_dots(const char *s, size_t len) {
  int n = 0;
  for (size_t i = 0; i < len; i++)
    n += s[i] == '.';
  return n;
}

static int load_dir_bad(load_unit *u, dm_error *err, const char *dir, const char *name,
                        const char *why) {
  u->host->error_make(u->ctx, err, DM_ERR_LOAD_FILE_FORMAT, NULL,
                      "load: dump file %s/%s: %s (names: docs/dump-format.md)", dir, name, why);
  return -1;
}

static void *load_dir_grow(void *arr, int n, size_t elem) {
  /* Grows by doubling when n reaches a power of two (n == 0 allocates 8). */
  if (n != 0 && (n < 8 || (n & (n - 1)) != 0))
    return arr;
  size_t cap = n == 0 ? 8 : (size_t)n * 2;
  return realloc(arr, cap * elem);
}

static int load_dir_nomem(load_unit *u, dm_error *err) {
  u->host->error_make(u->ctx, err, DM_ERR_NO_MEMORY, NULL, "load: no memory for the file list");
  return -1;
}

/* A name of the folder that is not a regular file: refused, never followed. */
static int load_dir_unsafe(load_unit *u, dm_error *err, const char *dir, const char *name,
                           const char *what) {
  u->host->error_make(u->ctx, err, DM_ERR_LOAD_UNSAFE_FILE, NULL,
                      "load: refused %s/%s: %s, not a regular file of the dump folder; the load "
                      "follows no link and reads nothing outside the folder",
                      dir, name, what);
  return -1;
}

static const char *load_dir_kind(mode_t m) {
  return S_ISLNK(m)    ? "a symbolic link"
         : S_ISDIR(m)  ? "a folder"
         : S_ISFIFO(m) ? "a FIFO"
         : S_ISSOCK(m) ? "a socket"
                       : "a device or special file";
}

int load_dir_open(load_unit *u, const load_dump *d, const char *name, dm_error *err) {
  /* The name is one entry of the folder (readdir's, or a fixed name), opened beneath the folder's
   * fd without following a link and only if it is a regular file (dm_fs_open_file). */
  struct stat st;
  int fd = dm_fs_open_file(d->dirfd, name, &st);
  if (fd >= 0)
    return fd;
  int e = errno;
  if (e == ELOOP)
    return load_dir_unsafe(u, err, d->dir, name, "a symbolic link");
  if (e == EPERM && st.st_mode)
    return load_dir_unsafe(u, err, d->dir, name, load_dir_kind(st.st_mode));
  u->host->error_make(u->ctx, err, e == ENOENT ? DM_ERR_LOAD_DUMP_INCOMPLETE : DM_ERR_IO,
                      strerror(e), "load: cannot open %s/%s: %s", d->dir, name, strerror(e));
  return -1;
}

int load_dir_read_file(load_unit *u, const load_dump *d, const char *name, char **out, size_t *len,
                       dm_error *err) {
  int fd = load_dir_open(u, d, name, err);
  if (fd < 0)
    return -1;
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    u->host->error_make(u->ctx, err, DM_ERR_IO, strerror(e), "load: cannot read %s/%s: %s", d->dir,
                        name, strerror(e));
    return -1;
  }
  if ((uint64_t)st.st_size > LOAD_DIR_SCHEMA_MAX) {
    close(fd);
    return load_dir_bad(u, err, d->dir, name, "too big for a schema file");
  }
  char *buf = malloc((size_t)st.st_size + 1);
  size_t got = 0;
  while (buf && got < (size_t)st.st_size) {
    ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    got += (size_t)n;
  }
  close(fd);
  if (!buf || got != (size_t)st.st_size) {
    free(buf);
    u->host->error_make(u->ctx, err, DM_ERR_IO, NULL, "load: cannot read %s/%s whole", d->dir,
                        name);
    return -1;
  }
  buf[got] = '\0';
  *out = buf;
  *len = got;
  return 0;
}

/* `metadata`: the binlog position of the snapshot, or the Warning line saying why the dump has
 * none (docs/dump-format.md), which is enough only when no sync follows the load. */
static int load_dir_metadata(load_unit *u, load_dump *d, dm_error *err) {
  dm_position *pos = &d->pos, *at = pos; /* at: the section being read */
  bool *has_pos = &d->has_pos;
  const char *dir = d->dir;
  int fd = load_dir_open(u, d, "metadata", err);
  if (fd < 0) {
    if (err->code == DM_ERR_LOAD_DUMP_INCOMPLETE)
      u->host->error_make(u->ctx, err, DM_ERR_LOAD_DUMP_INCOMPLETE, strerror(ENOENT),
                          "load: the dump folder %s has no `metadata` file: the dump did not "
                          "finish (or `dir` names the wrong folder)",
                          dir);
    return -1;
  }
  FILE *f = fdopen(fd, "r");
  if (!f) {
    int e = errno;
    close(fd);
    u->host->error_make(u->ctx, err, DM_ERR_NO_MEMORY, strerror(e),
                        "load: cannot read %s/metadata: %s", dir, strerror(e));
    return -1;
  }
  memset(pos, 0, sizeof *pos);
  memset(&d->safe_exit, 0, sizeof d->safe_exit);
  char line[DM_POSITION_GTID_MAX + 64], warning[1024] = "";
  bool have_log = false;
  while (fgets(line, sizeof line, f)) {
    char *p = line;
    while (*p == ' ' || *p == '\t')
      p++;
    p[strcspn(p, "\r\n")] = '\0';
    if (strcmp(p, DM_DUMP_METADATA_AFTER) == 0) {
      at = &d->safe_exit;
    } else if (strncmp(p, "Log:", 4) == 0) {
      p += 4;
      p += strspn(p, " \t");
      dm_strlcpy(at->name, p, sizeof at->name);
      have_log = have_log || at == pos;
    } else if (strncmp(p, "Pos:", 4) == 0) {
      at->pos = strtoull(p + 4, NULL, 10);
    } else if (strncmp(p, "GTID:", 5) == 0) {
      p += 5;
      p += strspn(p, " \t");
      dm_strlcpy(at->gtid, p, sizeof at->gtid);
    } else if (strncmp(p, DM_DUMP_METADATA_WARNING, strlen(DM_DUMP_METADATA_WARNING)) == 0) {
      dm_strlcpy(warning, p + strlen(DM_DUMP_METADATA_WARNING), sizeof warning);
    } else if (strncmp(p, "TABLES:", 7) == 0) {
      break; /* positions come first; the rest is for people */
    }
  }
  fclose(f);
  *has_pos = have_log || pos->gtid[0] != '\0';
  d->has_safe_exit = d->safe_exit.name[0] != '\0';
  if (*has_pos)
    return 0;
  if (!warning[0])
    return load_dir_bad(u, err, dir, "metadata",
                        "no `Log:` or `GTID:` line, and no `" DM_DUMP_METADATA_WARNING
                        "` line saying why");
  if (dm_host_sync_follows(u->host, u->ctx)) {
    u->host->error_make(u->ctx, err, DM_ERR_DUMP_NO_POSITION, NULL,
                        "load: the sync of task mode %s must continue from a binlog position, "
                        "but the dump in %s has none (its metadata: %s)",
                        u->host->task_mode(u->ctx), dir, warning);
    return -1;
  }
  u->host->logf(u->ctx, DM_LOG_WARN,
                "load: the dump in %s has no binlog position (its metadata: %s); loading it, as "
                "no sync follows in task mode %s",
                dir, warning, u->host->task_mode(u->ctx));
  return 0;
}

/* Are these two `<db>.<table>` stems (or parts) the same bytes? */
static bool load_dir_same_stem(const char *a, size_t alen, const char *b, size_t blen) {
  return alen == blen && memcmp(a, b, alen) == 0;
}

static int load_dir_add_table(load_unit *u, load_dump *d, const char *name, size_t stem,
                              dm_error *err) {
  load_table *t = load_dir_grow(d->tables, d->n_tables, sizeof *t);
  if (!t)
    return load_dir_nomem(u, err);
  d->tables = t;
  t = &d->tables[d->n_tables];
  memset(t, 0, sizeof *t);
  if (!memchr(name, '.', stem))
    return load_dir_bad(u, err, d->dir, name, "cannot read `<db>.<table>` from the name");
  /* The names are read in load_dir_names, once every schema file is known. */
  if (!(t->schema_file = strdup(name)))
    return load_dir_nomem(u, err);
  t->stem = stem;
  d->n_tables++;
  return 0;
}

static int load_dir_add_db(load_unit *u, load_dump *d, const char *name, dm_error *err) {
  void *a = load_dir_grow(d->dbs, d->n_dbs, sizeof *d->dbs);
  if (!a)
    return load_dir_nomem(u, err);
  d->dbs = a;
  void *b = load_dir_grow(d->db_files, d->n_dbs, sizeof *d->db_files);
  if (!b)
    return load_dir_nomem(u, err);
  d->db_files = b;
  d->dbs[d->n_dbs][0] = '\0';
  if (!(d->db_files[d->n_dbs] = strdup(name)))
    return load_dir_nomem(u, err);
  d->n_dbs++;
  return 0;
}

static int load_dir_add_file(load_unit *u, load_dump *d, const char *name, uint64_t size,
                             dm_error *err) {
  /* `<db>.<table>.<NNNNNN>.sql`: the stem before the number has exactly one dot. */
  size_t n = strlen(name) - 4; /* without ".sql" */
  const char *num = memrchr(name, '.', n);
  if (!num || num == name)
    return load_dir_bad(u, err, d->dir, name, "no chunk number");
  for (const char *p = num + 1; p < name + n; p++)
    if (*p < '0' || *p > '9')
      return load_dir_bad(u, err, d->dir, name, "the chunk number is not a number");
  load_file *f = load_dir_grow(d->files, d->n_files, sizeof *f);
  if (!f)
    return load_dir_nomem(u, err);
  d->files = f;
  f = &d->files[d->n_files];
  memset(f, 0, sizeof *f);
  if (!(f->name = strdup(name)))
    return load_dir_nomem(u, err);
  f->stem = (size_t)(num - name);
  f->size = size;
  f->present = true;
  f->table = -1;
  d->n_files++;
  return 0;
}

/* The name a file-name part stands for. A plain part decodes to it. A shortened one
 * (docs/dump-format.md) is read from the schema file's own statement, `file`, and trusted only
 * when dm_dump_name_part of what it names gives this very part: so it names a schema or table of
 * the dump, and two files cannot claim one name. */
static int load_dir_name(load_unit *u, load_dump *d, const char *file, const char *kw,
                         const char *part, size_t plen, char *out, dm_error *err) {
  if (!dm_dump_name_is_short(part, plen))
    return dm_dump_name_decode(part, plen, out, LOAD_NAME_MAX) == 0
               ? 0
               : load_dir_bad(u, err, d->dir, file, "cannot read `<db>.<table>` from the name");
  char *sql, again[DM_DUMP_NAME_PART_MAX + 1];
  size_t len, at;
  const char *why;
  if (load_dir_read_file(u, d, file, &sql, &len, err) != 0)
    return -1;
  const char *rest = load_check_create(sql, kw, out, LOAD_NAME_MAX, &at, &why);
  free(sql);
  if (!rest) {
    u->host->error_make(u->ctx, err, DM_ERR_LOAD_BAD_STATEMENT, NULL,
                        "load: refused %s/%s: the name of a shortened file name is read from its "
                        "`%.*s` statement, and there is none of the dump's form (byte %zu: %s)",
                        d->dir, file, (int)strlen(kw) - 1, kw, at, why);
    return -1;
  }
  size_t n = dm_dump_name_part(out, again, sizeof again);
  if (!load_dir_same_stem(again, n, part, plen))
    return load_dir_bad(u, err, d->dir, file,
                        "the shortened file name is not the one of the name in the file");
  return 0;
}

/* Reads the names of the schemas (first: a table's shortened schema part is found by its schema
 * file's name) and tables. */
static int load_dir_names(load_unit *u, load_dump *d, dm_error *err) {
  static const char db_kw[] = "CREATE DATABASE IF NOT EXISTS ";
  for (int i = 0; i < d->n_dbs; i++) {
    const char *f = d->db_files[i];
    if (load_dir_name(u, d, f, db_kw, f, strlen(f) - strlen("-schema-create.sql"), d->dbs[i],
                      err) != 0)
      return -1;
  }
  for (int i = 0; i < d->n_tables; i++) {
    load_table *t = &d->tables[i];
    const char *f = t->schema_file, *dot = memchr(f, '.', t->stem);
    size_t dl = (size_t)(dot - f);
    if (dm_dump_name_is_short(f, dl)) {
      int k = 0;
      while (k < d->n_dbs && !(strncmp(d->db_files[k], f, dl) == 0 &&
                               strcmp(d->db_files[k] + dl, "-schema-create.sql") == 0))
        k++;
      if (k == d->n_dbs)
        return load_dir_bad(u, err, d->dir, f,
                            "a shortened schema name without its `<db>-schema-create.sql`");
      dm_strlcpy(t->db, d->dbs[k], sizeof t->db);
    } else if (load_dir_name(u, d, f, db_kw, f, dl, t->db, err) != 0) {
      return -1;
    }
    if (load_dir_name(u, d, f, "CREATE TABLE ", dot + 1, t->stem - dl - 1, t->table, err) != 0)
      return -1;
  }
  return 0;
}

static int load_dir_cmp_file(const void *a, const void *b) {
  return strcmp(((const load_file *)a)->name, ((const load_file *)b)->name);
}

int load_dir_scan(load_unit *u, const char *dir, load_dump *d, dm_error *err) {
  memset(d, 0, sizeof *d);
  dm_strlcpy(d->dir, dir, sizeof d->dir);
  d->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int dfd = d->dirfd >= 0 ? dup(d->dirfd) : -1;
  DIR *dh = dfd >= 0 ? fdopendir(dfd) : NULL;
  if (!dh) {
    int e = errno;
    if (dfd >= 0)
      close(dfd);
    load_dir_free(d);
    u->host->error_make(u->ctx, err, e == ENOENT ? DM_ERR_LOAD_DUMP_INCOMPLETE : DM_ERR_IO,
                        strerror(e), "load: cannot open the dump folder %s: %s", dir, strerror(e));
    return -1;
  }
  char *meta = NULL;
  size_t meta_len = 0;
  if (load_dir_metadata(u, d, err) != 0 ||
      load_dir_read_file(u, d, "metadata", &meta, &meta_len, err) != 0) {
    closedir(dh);
    load_dir_free(d);
    return -1;
  }
  snprintf(d->dump_id, sizeof d->dump_id, "%016llx",
           (unsigned long long)dm_dump_fnv1a64(meta, meta_len));
  free(meta);
  struct dirent *de;
  int rc = 0;
  while (rc == 0 && (de = readdir(dh)) != NULL) {
    const char *name = de->d_name;
    if (name[0] == '.' || !load_dir_ends(name, ".sql"))
      continue; /* metadata, *.tmp, anything else */
    size_t len = strlen(name);
    int dots = load_dir_count_dots(name, len);
    struct stat st;
    if (fstatat(d->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      int e = errno;
      u->host->error_make(u->ctx, err, DM_ERR_IO, strerror(e), "load: cannot stat %s/%s: %s", dir,
                          name, strerror(e));
      rc = -1;
    } else if (!S_ISREG(st.st_mode)) {
      rc = load_dir_unsafe(u, err, dir, name, load_dir_kind(st.st_mode));
    } else if (dots == 1 && load_dir_ends(name, "-schema-create.sql")) {
      rc = load_dir_add_db(u, d, name, err);
    } else if (dots == 2 && load_dir_ends(name, "-schema.sql")) {
      rc = load_dir_add_table(u, d, name, len - strlen("-schema.sql"), err);
    } else if (dots == 3) {
      rc = load_dir_add_file(u, d, name, (uint64_t)st.st_size, err);
    } else {
      u->host->logf(u->ctx, DM_LOG_WARN, "load: ignoring %s/%s: not a dump file name", dir, name);
    }
  }
  closedir(dh);
  if (rc != 0) {
    load_dir_free(d);
    return -1;
  }
  /* In name order: chunks of a table together, numbers ascending; stable across runs. */
  if (d->n_files > 1)
    qsort(d->files, (size_t)d->n_files, sizeof *d->files, load_dir_cmp_file);
  if (load_dir_names(u, d, err) != 0) {
    load_dir_free(d);
    return -1;
  }
  for (int i = 0; i < d->n_files; i++)
    for (int t = 0; t < d->n_tables; t++)
      if (load_dir_same_stem(d->files[i].name, d->files[i].stem, d->tables[t].schema_file,
                             d->tables[t].stem))
        d->files[i].table = t;
  for (int i = 0; i < d->n_files; i++)
    if (d->files[i].table < 0) {
      load_dir_bad(u, err, dir, d->files[i].name,
                   "a data file without its `<db>.<table>-schema.sql`");
      load_dir_free(d);
      return -1;
    }
  return 0;
}

void load_dir_free(load_dump *d) {
  for (int i = 0; i < d->n_tables; i++) {
    free(d->tables[i].schema_file);
    free(d->tables[i].keys);
    free(d->tables[i].cols);
    free(d->tables[i].ext_cols);
    free(d->tables[i].ext_vals);
  }
  for (int i = 0; i < d->n_files; i++)
    free(d->files[i].name);
  for (int i = 0; i < d->n_dbs; i++)
    free(d->db_files[i]);
  free(d->tables);
  free(d->files);
  free(d->dbs);
  free(d->db_files);
  if (d->dirfd >= 0)
    close(d->dirfd);
  memset(d, 0, sizeof *d);
  d->dirfd = -1;
}
