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

#include "load.h"

#define LOAD_DIR_SCHEMA_MAX (16u << 20) /* a schema file bigger than this is not one */

static int load_dir_hex(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

int load_dir_decode_name(const char *in, size_t len, char *out, size_t out_len) {
  size_t o = 0;
  for (size_t i = 0; i < len; i++) {
    char c = in[i];
    if (c == '@' && i + 4 < len) {
      int h[4];
      bool ok = true;
      for (int k = 0; ok && k < 4; k++)
        ok = (h[k] = load_dir_hex(in[i + 1 + k])) >= 0;
      if (ok) {
        int v = (h[0] << 12) | (h[1] << 8) | (h[2] << 4) | h[3];
        if (v > 0xff)
          return -1;
        c = (char)v;
        i += 4;
      }
    }
    if (o + 1 >= out_len || c == '\0')
      return -1;
    out[o++] = c;
  }
  out[o] = '\0';
  return o > 0 ? 0 : -1;
}

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
  /* The name is one entry of the folder (readdir's, or a fixed name): no '/', so openat beneath
   * the folder's fd cannot leave it; O_NOFOLLOW refuses a link as the entry itself, O_NONBLOCK
   * keeps a FIFO from blocking the open, and fstat refuses all but a regular file. */
  int fd = strchr(name, '/')
               ? (errno = EINVAL, -1)
               : openat(d->dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  if (fd < 0) {
    int e = errno;
    if (e == ELOOP)
      return load_dir_unsafe(u, err, d->dir, name, "a symbolic link");
    u->host->error_make(u->ctx, err, e == ENOENT ? DM_ERR_LOAD_DUMP_INCOMPLETE : DM_ERR_IO,
                        strerror(e), "load: cannot open %s/%s: %s", d->dir, name, strerror(e));
    return -1;
  }
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    u->host->error_make(u->ctx, err, DM_ERR_IO, strerror(e), "load: cannot stat %s/%s: %s", d->dir,
                        name, strerror(e));
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return load_dir_unsafe(u, err, d->dir, name, load_dir_kind(st.st_mode));
  }
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0)
    fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  return fd;
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

/* `metadata`: the binlog position of the snapshot. */
static int load_dir_metadata(load_unit *u, const load_dump *d, dm_position *pos, dm_error *err) {
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
  char line[DM_POSITION_GTID_MAX + 64];
  bool have_log = false;
  while (fgets(line, sizeof line, f)) {
    char *p = line;
    while (*p == ' ' || *p == '\t')
      p++;
    p[strcspn(p, "\r\n")] = '\0';
    if (strncmp(p, "Log:", 4) == 0) {
      p += 4;
      p += strspn(p, " \t");
      dm_strlcpy(pos->name, p, sizeof pos->name);
      have_log = true;
    } else if (strncmp(p, "Pos:", 4) == 0) {
      pos->pos = strtoull(p + 4, NULL, 10);
    } else if (strncmp(p, "GTID:", 5) == 0) {
      p += 5;
      p += strspn(p, " \t");
      dm_strlcpy(pos->gtid, p, sizeof pos->gtid);
    } else if (strncmp(p, "TABLES:", 7) == 0) {
      break; /* positions come first; the rest is for people */
    }
  }
  fclose(f);
  if (!have_log && pos->gtid[0] == '\0')
    return load_dir_bad(u, err, dir, "metadata", "no `Log:` or `GTID:` line");
  return 0;
}

/* Splits `<db>.<table>` (len bytes, one dot) into decoded names. */
static int load_dir_split(const char *s, size_t len, char *db, char *table) {
  const char *dot = memchr(s, '.', len);
  if (!dot)
    return -1;
  return load_dir_decode_name(s, (size_t)(dot - s), db, LOAD_NAME_MAX) == 0 &&
                 load_dir_decode_name(dot + 1, len - (size_t)(dot + 1 - s), table, LOAD_NAME_MAX) ==
                     0
             ? 0
             : -1;
}

static int load_dir_add_table(load_unit *u, load_dump *d, const char *name, size_t stem,
                              dm_error *err) {
  load_table *t = load_dir_grow(d->tables, d->n_tables, sizeof *t);
  if (!t)
    return load_dir_nomem(u, err);
  d->tables = t;
  t = &d->tables[d->n_tables];
  memset(t, 0, sizeof *t);
  if (load_dir_split(name, stem, t->db, t->table) != 0)
    return load_dir_bad(u, err, d->dir, name, "cannot read `<db>.<table>` from the name");
  if (!(t->schema_file = strdup(name)))
    return load_dir_nomem(u, err);
  d->n_tables++;
  return 0;
}

static int load_dir_add_db(load_unit *u, load_dump *d, const char *name, size_t stem,
                           dm_error *err) {
  void *a = load_dir_grow(d->dbs, d->n_dbs, sizeof *d->dbs);
  if (!a)
    return load_dir_nomem(u, err);
  d->dbs = a;
  void *b = load_dir_grow(d->db_files, d->n_dbs, sizeof *d->db_files);
  if (!b)
    return load_dir_nomem(u, err);
  d->db_files = b;
  if (load_dir_decode_name(name, stem, d->dbs[d->n_dbs], LOAD_NAME_MAX) != 0)
    return load_dir_bad(u, err, d->dir, name, "cannot read `<db>` from the name");
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
  if (load_dir_split(name, (size_t)(num - name), f->db, f->table_name) != 0)
    return load_dir_bad(u, err, d->dir, name, "cannot read `<db>.<table>` from the name");
  if (!(f->name = strdup(name)))
    return load_dir_nomem(u, err);
  f->size = size;
  f->present = true;
  f->table = -1;
  d->n_files++;
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
  if (load_dir_metadata(u, d, &d->pos, err) != 0) {
    closedir(dh);
    load_dir_free(d);
    return -1;
  }
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
      rc = load_dir_add_db(u, d, name, len - strlen("-schema-create.sql"), err);
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
  for (int i = 0; i < d->n_files; i++)
    for (int t = 0; t < d->n_tables; t++)
      if (strcmp(d->files[i].db, d->tables[t].db) == 0 &&
          strcmp(d->files[i].table_name, d->tables[t].table) == 0)
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
