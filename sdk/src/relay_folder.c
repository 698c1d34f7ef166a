/*
 * The layout of a relay folder (dmhost/relay_folder.h): the index of sub-folders, the binlog
 * files of a sub-folder and their order, relay.meta. Moved here from the relay unit
 * (relay_layout.c), the sync unit (sync_source.c) and the host (relay_purge.c), which each had
 * their own parser.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dmhost/fs.h"
#include "dmhost/relay_folder.h"
#include "dmhost/sdk.h"

int dm_relay_name_check(const char *what, const char *name, size_t len, const char *then,
                        dm_error *err) {
  if (dm_fs_name_ok(name, len))
    return 0;
  /* the name as it came, other than printable ASCII escaped, cut to fit the message */
  char shown[DM_FS_NAME_MAX + 1];
  size_t at = 0, i = 0;
  for (; i < len && at + 5 < sizeof shown; i++) {
    unsigned char c = (unsigned char)name[i];
    if (c >= 0x20 && c < 0x7f && c != '\\')
      shown[at++] = (char)c;
    else
      at += (size_t)snprintf(shown + at, sizeof shown - at, "\\x%02x", c);
  }
  shown[at] = '\0';
  dm_error_set(err, DM_ERR_RELAY_BAD_NAME, NULL,
               "%s \"%s\"%s is not a plain file name ([A-Za-z0-9._-], 1 to %d, not starting with "
               "'.'); %s",
               what, shown, i < len ? "..." : "", DM_FS_NAME_MAX, then);
  return -1;
}

int dm_relay_open_error(dm_error *err, const char *who, const char *what, const char *path) {
  int e = errno;
  if (e == ELOOP)
    dm_error_set(err, DM_ERR_RELAY_LINK, strerror(e),
                 "%s: cannot %s %s: it is a symbolic link, which is not followed in a relay "
                 "folder",
                 who, what, path);
  else
    dm_error_set(err, DM_ERR_IO, strerror(e), "%s: cannot %s %s", who, what, path);
  errno = e;
  return -1;
}

/* A small file of the folder: 1 with *text (free it), 0 when there is none, -1 with err. */
static int folder_read(const char *path, char **text, size_t *len, dm_error *err) {
  if ((*text = dm_fs_read_all(path, len)))
    return 1;
  if (errno == ENOENT)
    return 0;
  dm_error_set(err, errno == ENOMEM ? DM_ERR_NO_MEMORY : DM_ERR_IO, strerror(errno),
               "relay folder: cannot read %s", path);
  return -1;
}

/* ---- server-uuid.index ---- */

static int index_push(dm_relay_index *ix, const char *name, size_t len) {
  if ((ix->n & (ix->n - 1)) == 0) { /* 0, 1, 2, 4, ...: grow to the next power of two */
    int cap = ix->n ? ix->n * 2 : 8;
    void *grown = realloc(ix->subs, (size_t)cap * sizeof *ix->subs);
    if (!grown)
      return -1;
    ix->subs = grown;
  }
  memcpy(ix->subs[ix->n], name, len);
  ix->subs[ix->n][len] = '\0';
  ix->n++;
  return 0;
}

int dm_relay_index_read(const char *relay_dir, dm_relay_index *ix, dm_error *err) {
  memset(ix, 0, sizeof *ix);
  char path[PATH_MAX];
  if (snprintf(path, sizeof path, "%s/%s", relay_dir, DM_RELAY_INDEX_NAME) >= (int)sizeof path) {
    dm_error_set(err, DM_ERR_IO, NULL, "relay folder: the path of %s is too long", relay_dir);
    return -1;
  }
  size_t n = 0;
  char *text;
  int got = folder_read(path, &text, &n, err);
  if (got <= 0)
    return got;
  int rc = 0;
  for (char *line = text; rc == 0 && line < text + n;) {
    size_t len = strcspn(line, "\n");
    char *next = line + len + (line[len] == '\n');
    if (len && line[len - 1] == '\r')
      len--;
    if (len) {
      char what[PATH_MAX + 64];
      snprintf(what, sizeof what, "relay folder: the sub-folder in %s", path);
      if (dm_relay_name_check(what, line, len, "it is not used as a path", err) < 0)
        rc = -1;
      else if (index_push(ix, line, len) < 0) {
        dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "relay folder: no memory reading %s", path);
        rc = -1;
      }
    }
    line = next;
  }
  free(text);
  if (rc < 0)
    dm_relay_index_free(ix);
  return rc;
}

void dm_relay_index_free(dm_relay_index *ix) {
  if (!ix)
    return;
  free(ix->subs);
  ix->subs = NULL;
  ix->n = 0;
}

int dm_relay_index_last(const char *relay_dir, char *sub, size_t len, dm_error *err) {
  dm_relay_index ix;
  sub[0] = '\0';
  if (dm_relay_index_read(relay_dir, &ix, err) < 0)
    return -1;
  if (ix.n > 0)
    dm_strlcpy(sub, ix.subs[ix.n - 1], len);
  dm_relay_index_free(&ix);
  return 0;
}

int dm_relay_index_find(const dm_relay_index *ix, const char *sub) {
  for (int i = ix->n - 1; i >= 0; i--)
    if (strcmp(ix->subs[i], sub) == 0)
      return i;
  return -1;
}

int dm_relay_index_write(const char *relay_dir, const dm_relay_index *ix, unsigned mode,
                         dm_error *err) {
  char path[PATH_MAX];
  if (snprintf(path, sizeof path, "%s/%s", relay_dir, DM_RELAY_INDEX_NAME) >= (int)sizeof path) {
    dm_error_set(err, DM_ERR_IO, NULL, "relay folder: the path of %s is too long", relay_dir);
    return -1;
  }
  char *text = malloc((size_t)ix->n * (DM_FS_NAME_MAX + 1) + 1);
  if (!text) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "relay folder: no memory for %s", path);
    return -1;
  }
  size_t len = 0;
  for (int i = 0; i < ix->n; i++) {
    size_t l = strlen(ix->subs[i]);
    memcpy(text + len, ix->subs[i], l);
    len += l;
    text[len++] = '\n';
  }
  const char *step = "create";
  int rc =
      dm_fs_write_atomic(path, text, len, mode ? (mode_t)mode : DM_FS_FILE_MODE, DM_FS_SYNC, &step);
  free(text);
  if (rc < 0)
    return dm_relay_open_error(err, "relay folder", step, path);
  return 0;
}

int dm_relay_subdir_open(const char *dir, dm_error *err) {
  const char *slash = strrchr(dir, '/');
  char parent[PATH_MAX];
  if (!slash || (size_t)(slash - dir) >= sizeof parent) {
    errno = ENAMETOOLONG;
    return dm_relay_open_error(err, "relay folder", "open", dir);
  }
  snprintf(parent, sizeof parent, "%.*s", (int)(slash - dir), dir);
  if (dm_relay_name_check("relay folder: the sub-folder", slash + 1, strlen(slash + 1),
                          "it is not opened", err) < 0)
    return -1;
  int pfd = dm_fs_open_dir(parent[0] ? parent : "/");
  if (pfd < 0)
    return dm_relay_open_error(err, "relay folder", "open", parent);
  int fd = dm_fs_open_beneath(pfd, slash + 1, O_RDONLY | O_DIRECTORY, 0);
  int e = errno;
  close(pfd);
  errno = e;
  if (fd < 0)
    return dm_relay_open_error(err, "relay folder", "open", dir);
  return fd;
}

int dm_relay_index_add(const char *relay_dir, const char *uuid, unsigned mode, char *sub,
                       size_t len, dm_error *err) {
  dm_relay_index ix;
  if (dm_relay_index_read(relay_dir, &ix, err) < 0)
    return -1;
  /* The suffix grows across uuids (DM: <uuid>.000001, <other>.000002, ...). */
  unsigned long last = 0;
  for (int i = 0; i < ix.n; i++) {
    long n = dm_relay_file_number(ix.subs[i]);
    if (n > 0 && (unsigned long)n > last)
      last = (unsigned long)n;
  }
  char name[DM_FS_NAME_MAX + 32];
  snprintf(name, sizeof name, "%s.%06lu", uuid, last + 1);
  char dir[PATH_MAX];
  int rc = dm_relay_name_check("relay: the sub-folder (from the source's server uuid)", name,
                               strlen(name), "the relay stopped without writing it", err);
  if (rc == 0 && snprintf(dir, sizeof dir, "%s/%s", relay_dir, name) >= (int)sizeof dir) {
    dm_error_set(err, DM_ERR_IO, NULL, "relay folder: the path of %s in %s is too long", name,
                 relay_dir);
    rc = -1;
  }
  mode_t fmode = mode ? (mode_t)mode : DM_FS_FILE_MODE;
  if (rc == 0 && dm_fs_mkdir_p(dir, dm_fs_dir_mode(fmode)) < 0)
    rc = dm_relay_open_error(err, "relay folder", "create the sub-folder", dir);
  int fd = rc == 0 ? dm_relay_subdir_open(dir, err) : -1;
  if (fd < 0)
    rc = -1;
  else
    close(fd);
  if (rc == 0 && index_push(&ix, name, strlen(name)) < 0) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "relay folder: no memory for the index of %s",
                 relay_dir);
    rc = -1;
  }
  if (rc == 0)
    rc = dm_relay_index_write(relay_dir, &ix, (unsigned)fmode, err);
  if (rc == 0)
    dm_strlcpy(sub, name, len);
  dm_relay_index_free(&ix);
  return rc;
}

/* ---- binlog files of a sub-folder ---- */

long dm_relay_file_number(const char *name) {
  size_t len = strlen(name);
  const char *dot = strrchr(name, '.');
  if (!dm_fs_name_ok(name, len) || !dot || !dot[1] ||
      strspn(dot + 1, "0123456789") != strlen(dot + 1))
    return -1;
  errno = 0;
  unsigned long v = strtoul(dot + 1, NULL, 10);
  return errno || v > (unsigned long)LONG_MAX ? -1 : (long)v;
}

static int file_cmp(const void *a, const void *b) {
  const dm_relay_file *x = a, *y = b;
  if (x->num != y->num)
    return x->num < y->num ? -1 : 1;
  return strcmp(x->name, y->name);
}

int dm_relay_files(const char *relay_dir, const char *sub, dm_relay_file **out, int *n,
                   dm_error *err) {
  *out = NULL;
  *n = 0;
  char path[PATH_MAX];
  if (snprintf(path, sizeof path, "%s/%s", relay_dir, sub) >= (int)sizeof path) {
    dm_error_set(err, DM_ERR_IO, NULL, "relay folder: the path of %s in %s is too long", sub,
                 relay_dir);
    return -1;
  }
  DIR *d = opendir(path);
  if (!d) {
    if (errno == ENOENT)
      return 0;
    dm_error_set(err, DM_ERR_IO, strerror(errno), "relay folder: cannot list %s", path);
    return -1;
  }
  dm_relay_file *files = NULL;
  int count = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    long num = dm_relay_file_number(e->d_name);
    if (num < 0)
      continue;
    if (count == cap) {
      cap = cap ? cap * 2 : 16;
      dm_relay_file *grown = realloc(files, (size_t)cap * sizeof *grown);
      if (!grown) {
        free(files);
        closedir(d);
        dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "relay folder: no memory listing %s", path);
        return -1;
      }
      files = grown;
    }
    dm_strlcpy(files[count].name, e->d_name, sizeof files[count].name);
    files[count++].num = (unsigned long)num;
  }
  closedir(d);
  if (count)
    qsort(files, (size_t)count, sizeof *files, file_cmp);
  *out = files;
  *n = count;
  return 0;
}

bool dm_relay_file_after(const char *relay_dir, const char *sub, const char *after, char *out,
                         size_t len) {
  dm_relay_file *files, key = {.num = 0};
  int n;
  dm_error ignored;
  out[0] = '\0';
  if (dm_relay_files(relay_dir, sub, &files, &n, &ignored) < 0)
    return false;
  bool have_key = after && after[0] && dm_relay_file_number(after) >= 0;
  if (have_key) {
    dm_strlcpy(key.name, after, sizeof key.name);
    key.num = (unsigned long)dm_relay_file_number(after);
  }
  for (int i = 0; i < n && !out[0]; i++)
    if (!have_key || file_cmp(&files[i], &key) > 0)
      dm_strlcpy(out, files[i].name, len);
  free(files);
  return out[0] != '\0';
}

bool dm_relay_file_last(const char *relay_dir, const char *sub, char *out, size_t len) {
  dm_relay_file *files;
  int n;
  dm_error ignored;
  out[0] = '\0';
  if (dm_relay_files(relay_dir, sub, &files, &n, &ignored) < 0)
    return false;
  if (n)
    dm_strlcpy(out, files[n - 1].name, len);
  free(files);
  return n > 0;
}

/* ---- relay.meta ---- */

/* `key = value` or `key = "value"`; -1 for anything else. */
static int meta_kv(const char *line, char *key, size_t klen, char *val, size_t vlen) {
  const char *p = line, *k0;
  while (*p == ' ' || *p == '\t')
    p++;
  k0 = p;
  while ((*p >= 'a' && *p <= 'z') || *p == '-')
    p++;
  if (p == k0 || (size_t)(p - k0) >= klen)
    return -1;
  memcpy(key, k0, (size_t)(p - k0));
  key[p - k0] = '\0';
  while (*p == ' ' || *p == '\t')
    p++;
  if (*p++ != '=')
    return -1;
  while (*p == ' ' || *p == '\t')
    p++;
  const char *v0 = p, *v1;
  if (*p == '"') {
    v0 = ++p;
    if (!(v1 = strchr(p, '"')))
      return -1;
  } else {
    v1 = p + strcspn(p, " \t\r");
  }
  if ((size_t)(v1 - v0) >= vlen)
    return -1;
  memcpy(val, v0, (size_t)(v1 - v0));
  val[v1 - v0] = '\0';
  return 0;
}

int dm_relay_meta_read(const char *dir, dm_relay_meta *m, dm_error *err) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", dir, DM_RELAY_META_NAME);
  memset(m, 0, sizeof *m);
  size_t n = 0;
  char *text;
  int got = folder_read(path, &text, &n, err);
  if (got <= 0)
    return got;
  /* DM's TOML subset: binlog-name = "...", binlog-pos = N, binlog-gtid = "..." */
  int have = 0, line_no = 0;
  for (char *save = NULL, *line = strtok_r(text, "\n", &save); line;
       line = strtok_r(NULL, "\n", &save)) {
    line_no++;
    char key[32], val[DM_POSITION_GTID_MAX];
    if (line[0] == '#' || line[0] == '\0')
      continue;
    if (meta_kv(line, key, sizeof key, val, sizeof val) == 0) {
      if (strcmp(key, "binlog-name") == 0) {
        dm_strlcpy(m->binlog_name, val, sizeof m->binlog_name);
        have |= 1;
      } else if (strcmp(key, "binlog-pos") == 0) {
        char *end;
        m->binlog_pos = strtoull(val, &end, 10);
        if (*end == '\0' && val[0])
          have |= 2;
      } else if (strcmp(key, "binlog-gtid") == 0) {
        dm_strlcpy(m->binlog_gtid, val, sizeof m->binlog_gtid);
      }
      continue;
    }
    free(text);
    dm_error_set(err, DM_ERR_BINLOG_CORRUPT, NULL,
                 "relay folder: %s:%d is not `key = value`; where the relay stopped cannot be "
                 "told",
                 path, line_no);
    return -1;
  }
  free(text);
  if (have != 3) {
    dm_error_set(err, DM_ERR_BINLOG_CORRUPT, NULL,
                 "relay folder: %s lacks binlog-name or binlog-pos; where the relay stopped cannot "
                 "be told",
                 path);
    return -1;
  }
  char what[PATH_MAX + 64];
  snprintf(what, sizeof what, "relay folder: the binlog file in %s", path);
  if (dm_relay_name_check(what, m->binlog_name, strlen(m->binlog_name), "it is not used as a path",
                          err) < 0)
    return -1;
  return 1;
}

int dm_relay_meta_write(const char *dir, const dm_relay_meta *m, unsigned mode, bool sync,
                        dm_error *err) {
  char path[PATH_MAX], text[DM_POSITION_GTID_MAX + 512];
  snprintf(path, sizeof path, "%s/%s", dir, DM_RELAY_META_NAME);
  int n = snprintf(text, sizeof text,
                   "binlog-name = \"%s\"\nbinlog-pos = %" PRIu64 "\nbinlog-gtid = \"%s\"\n",
                   m->binlog_name, m->binlog_pos, m->binlog_gtid);
  const char *step = "create";
  if (dm_fs_write_atomic(path, text, (size_t)n, mode ? (mode_t)mode : DM_FS_FILE_MODE,
                         sync ? DM_FS_SYNC : 0, &step) < 0)
    return dm_relay_open_error(err, "relay folder", step, path);
  return 0;
}

/* ---- where things are ---- */

int dm_relay_current(const char *relay_dir, char *sub, size_t sub_len, char *file,
                     size_t file_len) {
  dm_relay_index ix;
  dm_error ignored;
  if (dm_relay_index_read(relay_dir, &ix, &ignored) < 0 || ix.n == 0) {
    dm_relay_index_free(&ix);
    return -1;
  }
  char dir[PATH_MAX];
  dm_relay_meta m;
  int rc = -1;
  if (snprintf(dir, sizeof dir, "%s/%s", relay_dir, ix.subs[ix.n - 1]) < (int)sizeof dir &&
      dm_relay_meta_read(dir, &m, &ignored) == 1 && dm_relay_file_number(m.binlog_name) >= 0) {
    dm_strlcpy(sub, ix.subs[ix.n - 1], sub_len);
    dm_strlcpy(file, m.binlog_name, file_len);
    rc = 0;
  }
  dm_relay_index_free(&ix);
  return rc;
}

int dm_relay_locate(const char *relay_dir, const char *file, char *sub, size_t len) {
  dm_relay_index ix;
  dm_error ignored;
  if (dm_relay_index_read(relay_dir, &ix, &ignored) < 0 || ix.n == 0) {
    dm_relay_index_free(&ix);
    return -1;
  }
  int at = ix.n - 1; /* not written yet: the relay writes it into its newest sub-folder */
  for (int i = ix.n - 1; i >= 0; i--) {
    char path[PATH_MAX];
    struct stat sb;
    if (snprintf(path, sizeof path, "%s/%s/%s", relay_dir, ix.subs[i], file) < (int)sizeof path &&
        lstat(path, &sb) == 0) {
      at = i;
      break;
    }
  }
  dm_strlcpy(sub, ix.subs[at], len);
  dm_relay_index_free(&ix);
  return 0;
}
