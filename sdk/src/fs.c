/*
 * The filesystem kit (dmhost/fs.h): one copy of the name check, mkdir -p, the atomic write and the
 * open-beneath that the host and the units used to write each for themselves.
 */
#include "dmhost/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool dm_fs_name_ok(const char *name, size_t len) {
  if (!name || len == 0 || len > DM_FS_NAME_MAX || name[0] == '.')
    return false;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)name[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
          c == '_' || c == '-'))
      return false;
  }
  return true;
}

mode_t dm_fs_dir_mode(mode_t file_mode) {
  mode_t m = file_mode & 0777;
  if (m & S_IRUSR)
    m |= S_IXUSR;
  if (m & S_IRGRP)
    m |= S_IXGRP;
  if (m & S_IROTH)
    m |= S_IXOTH;
  return m;
}

int dm_fs_mkdir_p(const char *path, mode_t mode) {
  char buf[PATH_MAX];
  size_t n = strlen(path);
  if (n == 0 || n >= sizeof buf) {
    errno = n ? ENAMETOOLONG : ENOENT;
    return -1;
  }
  memcpy(buf, path, n + 1);
  for (char *p = buf + 1;; p++) {
    if (*p != '/' && *p != '\0')
      continue;
    char c = *p;
    *p = '\0';
    if (mkdir(buf, mode) < 0) {
      struct stat sb;
      int e = errno;
      if (e != EEXIST)
        return -1;
      if (stat(buf, &sb) < 0)
        return -1;
      if (!S_ISDIR(sb.st_mode)) {
        errno = ENOTDIR;
        return -1;
      }
    }
    *p = c;
    if (!c)
      break;
  }
  return 0;
}

int dm_fs_sync_dir(const char *path) {
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  int rc = fsync(fd);
  int e = errno;
  close(fd);
  errno = e;
  return rc;
}

static int fs_fail(const char **step, const char *what, int fd, const char *tmp) {
  int e = errno;
  if (fd >= 0)
    close(fd);
  if (tmp)
    unlink(tmp);
  if (step)
    *step = what;
  errno = e;
  return -1;
}

int dm_fs_tmp_open(const char *path, mode_t mode, char *tmp, size_t tmp_size) {
  if (snprintf(tmp, tmp_size, "%s.tmp", path) >= (int)tmp_size) {
    errno = ENAMETOOLONG;
    return -1;
  }
  /* A temp file left by a crash (or planted) is removed, not reused: O_EXCL makes the new one
   * ours, with our mode, and never a link to somewhere else. */
  if (unlink(tmp) < 0 && errno != ENOENT)
    return -1;
  return open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
}

int dm_fs_tmp_commit(int fd, const char *tmp, const char *path, unsigned flags, const char **step) {
  if ((flags & DM_FS_SYNC_FILE) && fsync(fd) < 0)
    return fs_fail(step, "fsync", fd, tmp);
  if (close(fd) < 0)
    return fs_fail(step, "write", -1, tmp);
  if (flags & DM_FS_NO_REPLACE) {
    if (link(tmp, path) < 0)
      return fs_fail(step, "create", -1, tmp);
    unlink(tmp);
  } else if (rename(tmp, path) < 0) {
    return fs_fail(step, "rename", -1, tmp);
  }
  if (flags & DM_FS_SYNC_DIR) {
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (!slash)
      snprintf(dir, sizeof dir, ".");
    else if (slash == path)
      snprintf(dir, sizeof dir, "/");
    else
      snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    if (dm_fs_sync_dir(dir) < 0)
      return fs_fail(step, "fsync the folder of", -1, NULL);
  }
  return 0;
}

int dm_fs_write_atomic(const char *path, const void *data, size_t len, mode_t mode, unsigned flags,
                       const char **step) {
  char tmp[PATH_MAX];
  int fd = dm_fs_tmp_open(path, mode, tmp, sizeof tmp);
  if (fd < 0)
    return fs_fail(step, "create", -1, NULL);
  for (size_t off = 0; off < len;) {
    ssize_t w = write(fd, (const char *)data + off, len - off);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      if (w == 0)
        errno = EIO;
      return fs_fail(step, "write", fd, tmp);
    }
    off += (size_t)w;
  }
  return dm_fs_tmp_commit(fd, tmp, path, flags, step);
}

int dm_fs_open_beneath(int dir_fd, const char *name, int flags, mode_t mode) {
  if (!name || !dm_fs_name_ok(name, strlen(name))) {
    errno = EINVAL;
    return -1;
  }
  return openat(dir_fd, name, flags | O_NOFOLLOW | O_CLOEXEC, mode);
}

int dm_fs_open_file(int dir_fd, const char *name, struct stat *st) {
  struct stat tmp;
  if (!st)
    st = &tmp;
  memset(st, 0, sizeof *st);
  if (!name || !name[0] || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, "..")) {
    errno = EINVAL;
    return -1;
  }
  /* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer. */
  int fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return -1;
  if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
    int e = S_ISREG(st->st_mode) || !st->st_mode ? errno : EPERM;
    close(fd);
    errno = e;
    return -1;
  }
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0)
    fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  return fd;
}

int dm_fs_open_dir(const char *path) {
  return open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

char *dm_fs_read_all(const char *path, size_t *len_out) {
  FILE *f = fopen(path, "rbe");
  if (!f)
    return NULL;
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  if (!buf)
    errno = ENOMEM;
  while (buf) {
    size_t n = fread(buf + len, 1, cap - len - 1, f);
    len += n;
    if (len < cap - 1) {
      if (ferror(f)) {
        int saved = errno ? errno : EIO;
        free(buf);
        buf = NULL;
        errno = saved;
      }
      break;
    }
    cap *= 2;
    char *nb = realloc(buf, cap);
    if (!nb) {
      free(buf);
      errno = ENOMEM;
    }
    buf = nb;
  }
  int saved = errno;
  fclose(f);
  errno = saved;
  if (buf) {
    buf[len] = '\0';
    if (len_out)
      *len_out = len;
  }
  return buf;
}
