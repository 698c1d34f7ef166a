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

#include "dmhost/sdk.h"
#include "relay_internal.h"

static int layout_io(dm_error *err, const char *what, const char *path) {
  dm_error_set(err, DM_ERR_IO, strerror(errno), "relay: cannot %s %s", what, path);
  return -1;
}

static int layout_fsync_dir(const char *dir) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  int rc = fsync(fd);
  close(fd);
  return rc;
}

int relay_atomic_write(const char *path, const char *text, size_t len, bool sync, dm_error *err) {
  char tmp[RELAY_PATH_MAX + 8];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return layout_io(err, "create", tmp);
  size_t done = 0;
  while (done < len) {
    ssize_t w = write(fd, text + done, len - done);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      int e = errno;
      close(fd);
      unlink(tmp);
      errno = e;
      return layout_io(err, "write", tmp);
    }
    done += (size_t)w;
  }
  if (sync && fsync(fd) < 0) {
    close(fd);
    return layout_io(err, "fsync", tmp);
  }
  close(fd);
  if (rename(tmp, path) < 0)
    return layout_io(err, "rename into place", path);
  char dir[RELAY_PATH_MAX];
  dm_strlcpy(dir, path, sizeof dir);
  char *slash = strrchr(dir, '/');
  if (sync && slash && slash != dir) {
    *slash = '\0';
    if (layout_fsync_dir(dir) < 0)
      return layout_io(err, "fsync the folder", dir);
  }
  return 0;
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
  for (char *save = NULL, *line = strtok_r(text, "\n", &save); line;
       line = strtok_r(NULL, "\n", &save))
    if (line[0])
      dm_strlcpy(subdir, line, len);
  free(text);
  return 0;
}

int relay_index_add(const char *relay_dir, const char *uuid, char *subdir, size_t len,
                    dm_error *err) {
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
  char dir[RELAY_PATH_MAX];
  snprintf(dir, sizeof dir, "%s/%s", relay_dir, subdir);
  if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
    free(text);
    return layout_io(err, "create the relay sub-folder", dir);
  }
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
  int rc = relay_atomic_write(path, out, at, true, err);
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
  if (have != 3) {
    dm_error_set(err, DM_ERR_BINLOG_CORRUPT, NULL,
                 "relay: %s lacks binlog-name or binlog-pos; the relay cannot tell where it "
                 "stopped",
                 path);
    return -1;
  }
  return 1;
}

int relay_meta_write(const char *dir, const relay_meta *m, bool sync, dm_error *err) {
  char path[RELAY_DIR_MAX + 32], text[DM_POSITION_GTID_MAX + 512];
  snprintf(path, sizeof path, "%s/%s", dir, RELAY_META_NAME);
  int n = snprintf(text, sizeof text,
                   "binlog-name = \"%s\"\nbinlog-pos = %" PRIu64 "\nbinlog-gtid = \"%s\"\n",
                   m->binlog_name, m->binlog_pos, m->binlog_gtid);
  return relay_atomic_write(path, text, (size_t)n, sync, err);
}
