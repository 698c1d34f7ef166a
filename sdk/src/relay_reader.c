/*
 * The reader files of a relay folder (dmhost/relay_reader.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dmhost/fs.h"
#include "dmhost/relay_reader.h"
#include "dmhost/sdk.h"

int dm_relay_reader_register(const char *relay_dir, const char *reader, const char *sub,
                             const char *file, unsigned mode, dm_error *err) {
  if (!reader || !sub || !file || !dm_fs_name_ok(reader, strlen(reader)) ||
      !dm_fs_name_ok(sub, strlen(sub)) || !dm_fs_name_ok(file, strlen(file))) {
    dm_error_set(err, DM_ERR_CONFIG_INVALID, NULL,
                 "relay reader: `%s` / `%s` / `%s` is not a plain reader name, sub-folder and file "
                 "name ([A-Za-z0-9._-], not starting with '.'): purge cannot know what this reader "
                 "still needs; give the task a plain name",
                 reader ? reader : "", sub ? sub : "", file ? file : "");
    return -1;
  }
  char dir[PATH_MAX], path[PATH_MAX], line[2 * NAME_MAX + 4];
  if (snprintf(dir, sizeof dir, "%s/readers", relay_dir) >= (int)sizeof dir ||
      snprintf(path, sizeof path, "%s/%s", dir, reader) >= (int)sizeof path ||
      snprintf(line, sizeof line, "%s/%s\n", sub, file) >= (int)sizeof line) {
    dm_error_set(err, DM_ERR_IO, NULL, "relay reader: the path of reader %s in %s is too long",
                 reader, relay_dir);
    return -1;
  }
  const char *step = "create the folder of";
  if (dm_fs_mkdir_p(dir, dm_fs_dir_mode((mode_t)mode)) != 0 ||
      dm_fs_write_atomic(path, line, strlen(line), (mode_t)mode, DM_FS_SYNC, &step) != 0) {
    int e = errno;
    dm_error_set(err, DM_ERR_IO, strerror(e), "relay reader: cannot %s %s: %s", step, path,
                 strerror(e));
    return -1;
  }
  return 0;
}

bool dm_relay_reader_read(const char *relay_dir, const char *reader, char *sub, size_t sub_len,
                          char *file, size_t file_len) {
  char path[PATH_MAX], line[2 * NAME_MAX + 4];
  if (snprintf(path, sizeof path, "%s/readers/%s", relay_dir, reader) >= (int)sizeof path)
    return false;
  FILE *fp = fopen(path, "re");
  if (!fp)
    return false;
  bool ok = fgets(line, sizeof line, fp) != NULL;
  fclose(fp);
  if (!ok)
    return false;
  line[strcspn(line, "\r\n")] = '\0';
  char *slash = strchr(line, '/');
  if (!slash || slash == line || !slash[1] || strchr(slash + 1, '/'))
    return false;
  *slash = '\0';
  if (!dm_fs_name_ok(line, strlen(line)) || !dm_fs_name_ok(slash + 1, strlen(slash + 1)))
    return false; /* a path, not a sub-folder and a file: not ours */
  dm_strlcpy(sub, line, sub_len);
  dm_strlcpy(file, slash + 1, file_len);
  return true;
}

int dm_relay_reader_remove(const char *relay_dir, const char *reader, dm_error *err) {
  if (!reader || !dm_fs_name_ok(reader, strlen(reader))) {
    dm_error_set(err, DM_ERR_CONFIG_INVALID, NULL,
                 "relay reader: `%s` is not a plain reader name ([A-Za-z0-9._-], not starting "
                 "with '.'); nothing removed",
                 reader ? reader : "");
    return -1;
  }
  char path[PATH_MAX];
  if (snprintf(path, sizeof path, "%s/readers/%s", relay_dir, reader) >= (int)sizeof path) {
    dm_error_set(err, DM_ERR_IO, NULL, "relay reader: the path of reader %s in %s is too long",
                 reader, relay_dir);
    return -1;
  }
  if (unlink(path) != 0 && errno != ENOENT) {
    int e = errno;
    dm_error_set(err, DM_ERR_IO, strerror(e), "relay reader: cannot remove %s: %s", path,
                 strerror(e));
    return -1;
  }
  return 0;
}
