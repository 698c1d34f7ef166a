/*
 * DM's relay folder layout: the index of sub-folders and each sub-folder's relay.meta. Both are
 * replaced atomically (temp file, fsync, rename, fsync of the folder) so a crash leaves either
 * the old or the new content, never a torn one.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dmhost/fs.h"
#include "dmhost/sdk.h"
#include "relay_internal.h"

static int layout_io(dm_error *err, const char *what, const char *path) {
  dm_error_set(err, DM_ERR_IO, strerror(errno), "relay: cannot %s %s", what, path);
  return -1;
}

int relay_atomic_write(const char *path, const char *text, size_t len, mode_t mode, bool sync,
                       dm_error *err) {
  const char *step = "create";
  if (dm_fs_write_atomic(path, text, len, mode, sync ? DM_FS_SYNC : 0, &step) < 0)
    return relay_open_error(err, step, path);
  return 0;
}

int relay_check_name(const char *what, const char *name, size_t len, dm_error *err) {
  if (dm_fs_name_ok(name, len))
    return 0;
  /* the name as it came, other than printable ASCII escaped, cut to fit the message */
  char shown[DM_FS_NAME_MAX + 1];
  size_t at = 0;
  for (size_t i = 0; i < len && at + 5 < sizeof shown; i++) {
    unsigned char c = (unsigned char)name[i];
    if (c >= 0x20 && c < 0x7f && c != '\\')
      shown[at++] = (char)c;
    else
      at += (size_t)snprintf(shown + at, sizeof shown - at, "\\x%02x", c);
  }
  shown[at] = '\0';
  dm_error_set(err, DM_ERR_RELAY_BAD_NAME, NULL,
               "relay: %s \"%s\"%s is not a plain file name ([A-Za-z0-9._-], 1 to %d, not "
               "starting with '.'); the relay stopped without writing it",
               what, shown, at < len ? "..." : "", DM_FS_NAME_MAX);
  return -1;
}

int relay_open_error(dm_error *err, const char *what, const char *path) {
  if (errno == ELOOP)
    dm_error_set(err, DM_ERR_RELAY_LINK, strerror(errno),
                 "relay: cannot %s %s: it is a symbolic link, which the relay does not follow in "
                 "its folder",
                 what, path);
  else
    dm_error_set(err, DM_ERR_IO, strerror(errno), "relay: cannot %s %s", what, path);
  return -1;
}

int relay_subdir_open(const char *dir, dm_error *err) {
  const char *slash = strrchr(dir, '/');
  char parent[RELAY_PATH_MAX];
  if (!slash || (size_t)(slash - dir) >= sizeof parent) {
    errno = ENAMETOOLONG;
    return relay_open_error(err, "open", dir);
  }
  snprintf(parent, sizeof parent, "%.*s", (int)(slash - dir), dir);
  if (relay_check_name("relay sub-folder", slash + 1, strlen(slash + 1), err) < 0)
    return -1;
  int pfd = dm_fs_open_dir(parent[0] ? parent : "/");
  if (pfd < 0)
    return relay_open_error(err, "open", parent);
  int fd = dm_fs_open_beneath(pfd, slash + 1, O_RDONLY | O_DIRECTORY, 0);
  int e = errno;
  close(pfd);
  errno = e;
  if (fd < 0)
    return relay_open_error(err, "open", dir);
  return fd;
}

/* Reads a whole small file; NULL with errno when it cannot. */
static char *layout_slurp(const char *path, size_t *len) {
  FILE *fp = fopen(path, "re");
  if (!fp)
    return NULL;
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    size_t r = fread(buf + n, 1, cap - n - 1, fp);
    n += r;
    if (n < cap - 1)
      break;
    char *nb = realloc(buf, cap * 2);
    if (!nb) {
      free(buf);
      buf = NULL;
      break;
    }
    buf = nb;
    cap *= 2;
  }
  fclose(fp);
  if (buf) {
    buf[n] = '\0';
    *len = n;
  }
  return buf;
}

int relay_index_last(const char *relay_dir, char *subdir, size_t len, dm_error *err) {
  char path[RELAY_DIR_MAX + 32];
  snprintf(path, sizeof path, "%s/%s", relay_dir, RELAY_INDEX_NAME);
  subdir[0] = '\0';
  size_t n = 0;
  char *text = layout_slurp(path, &n);
  if (!text)
    return errno == ENOENT ? 0 : layout_io(err, "read", path);
  int rc = 0;
  for (char *save = NULL, *line = strtok_r(text, "\n", &save); line && rc == 0;
       line = strtok_r(NULL, "\n", &save))
    if (line[0] &&
        (rc = relay_check_name("sub-folder in " RELAY_INDEX_NAME, line, strlen(line), err)) == 0)
      dm_strlcpy(subdir, line, len);
  free(text);
  return rc;
}

int relay_index_add(const char *relay_dir, const char *uuid, mode_t file_mode, char *subdir,
                    size_t len, dm_error *err) {
  char path[RELAY_DIR_MAX + 32];
  snprintf(path, sizeof path, "%s/%s", relay_dir, RELAY_INDEX_NAME);
  size_t n = 0;
  char *text = layout_slurp(path, &n);
  if (!text && errno != ENOENT)
    return layout_io(err, "read", path);
  /* The suffix grows across uuids (DM: <uuid>.000001, <other>.000002, ...). */
  long last = 0;
  if (text)
    for (char *p = text; *p;) {
      char *nl = strchr(p, '\n');
      char *dot = strrchr(p, '.');
      if (dot && (!nl || dot < nl))
        last = strtol(dot + 1, NULL, 10) > last ? strtol(dot + 1, NULL, 10) : last;
      p = nl ? nl + 1 : p + strlen(p);
    }
  snprintf(subdir, len, "%s.%06ld", uuid, last + 1);
  if (relay_check_name("sub-folder (from the source's server uuid)", subdir, strlen(subdir), err) <
      0) {
    free(text);
    return -1;
  }
  char dir[RELAY_PATH_MAX];
  snprintf(dir, sizeof dir, "%s/%s", relay_dir, subdir);
  int dfd = -1;
  if (dm_fs_mkdir_p(dir, dm_fs_dir_mode(file_mode)) < 0) {
    free(text);
    return layout_io(err, "create the relay sub-folder", dir);
  }
  if ((dfd = relay_subdir_open(dir, err)) < 0) {
    free(text);
    return -1;
  }
  close(dfd);
  size_t sl = strlen(subdir);
  char *out = malloc(n + sl + 2);
  if (!out) {
    free(text);
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "relay: no memory for %s", path);
    return -1;
  }
  size_t at = 0;
  if (text && n) {
    memcpy(out, text, n);
    at = n;
    if (out[at - 1] != '\n')
      out[at++] = '\n';
  }
  memcpy(out + at, subdir, sl);
  at += sl;
  out[at++] = '\n';
  free(text);
  int rc = relay_atomic_write(path, out, at, file_mode, true, err);
  free(out);
  return rc;
}

/* `key = value` or `key = "value"`; -1 for anything else. */
static int layout_kv(const char *line, char *key, size_t klen, char *val, size_t vlen) {
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

int relay_meta_read(const char *dir, relay_meta *m, dm_error *err) {
  char path[RELAY_DIR_MAX + 32];
  snprintf(path, sizeof path, "%s/%s", dir, RELAY_META_NAME);
  memset(m, 0, sizeof *m);
  size_t n = 0;
  char *text = layout_slurp(path, &n);
  if (!text)
    return errno == ENOENT ? 0 : layout_io(err, "read", path);
  /* DM's TOML subset: binlog-name = "...", binlog-pos = N, binlog-gtid = "..." */
  int have = 0, line_no = 0;
  for (char *save = NULL, *line = strtok_r(text, "\n", &save); line;
       line = strtok_r(NULL, "\n", &save)) {
    line_no++;
    char key[32], val[DM_POSITION_GTID_MAX];
    if (line[0] == '#' || line[0] == '\0')
      continue;
    if (layout_kv(line, key, sizeof key, val, sizeof val) == 0) {
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
                 "relay: %s:%d is not `key = value`; the relay cannot tell where it stopped", path,
                 line_no);
    return -1;
  }
  free(text);
  if (have == 3 && relay_check_name("binlog file in relay.meta", m->binlog_name,
                                    strlen(m->binlog_name), err) < 0)
    return -1;
  if (have != 3) {
    dm_error_set(err, DM_ERR_BINLOG_CORRUPT, NULL,
                 "relay: %s lacks binlog-name or binlog-pos; the relay cannot tell where it "
                 "stopped",
                 path);
    return -1;
  }
  return 1;
}

int relay_meta_write(const char *dir, const relay_meta *m, mode_t mode, bool sync, dm_error *err) {
  char path[RELAY_DIR_MAX + 32], text[DM_POSITION_GTID_MAX + 512];
  snprintf(path, sizeof path, "%s/%s", dir, RELAY_META_NAME);
  int n = snprintf(text, sizeof text,
                   "binlog-name = \"%s\"\nbinlog-pos = %" PRIu64 "\nbinlog-gtid = \"%s\"\n",
                   m->binlog_name, m->binlog_pos, m->binlog_gtid);
  return relay_atomic_write(path, text, (size_t)n, mode, sync, err);
}
