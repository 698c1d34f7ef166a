/*
 * Which relay files may go, and removing them (dmhost/relay_purge.h). Moved here from the host
 * (host/relay_purge.c, which the relay unit compiled into itself); the folder is read with
 * relay_folder.c's parser. The "floor" is the oldest file anyone still needs: the relay's own
 * current file and each reader's registered file.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "dmhost/fs.h"
#include "dmhost/relay_folder.h"
#include "dmhost/relay_purge.h"
#include "dmhost/relay_reader.h"
#include "dmhost/sdk.h"

typedef struct purge_file {
  int sub; /* place in the index */
  unsigned long num;
  char name[DM_FS_NAME_MAX + 1];
  time_t mtime;
} purge_file;

typedef struct purge_state {
  const char *relay_dir;
  dm_relay_index ix;
  purge_file *files;
  int n_files, cap_files;
  int floor_sub;
  unsigned long floor_num;
  char floor_who[3 * DM_FS_NAME_MAX + 64];
} purge_state;

static int purge_list_files(purge_state *s, dm_error *err) {
  for (int i = 0; i < s->ix.n; i++) {
    dm_relay_file *files;
    int n;
    if (dm_relay_files(s->relay_dir, s->ix.subs[i], &files, &n, err) < 0)
      return -1; /* a sub-folder removed by hand has no files: not an error */
    if (s->n_files + n > s->cap_files) {
      int cap = s->n_files + n + 64;
      purge_file *grown = realloc(s->files, (size_t)cap * sizeof *grown);
      if (!grown) {
        free(files);
        dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "relay purge: no memory listing %s",
                     s->relay_dir);
        return -1;
      }
      s->files = grown;
      s->cap_files = cap;
    }
    for (int k = 0; k < n; k++) {
      purge_file *f = &s->files[s->n_files++];
      f->sub = i;
      f->num = files[k].num;
      dm_strlcpy(f->name, files[k].name, sizeof f->name);
      char path[PATH_MAX];
      struct stat sb;
      snprintf(path, sizeof path, "%s/%s/%s", s->relay_dir, s->ix.subs[i], f->name);
      f->mtime = stat(path, &sb) == 0 ? sb.st_mtime : time(NULL);
    }
    free(files);
  }
  return 0;
}

static void purge_lower_floor(purge_state *s, int sub, unsigned long num, const char *who) {
  if (sub < s->floor_sub || (sub == s->floor_sub && num < s->floor_num)) {
    s->floor_sub = sub;
    s->floor_num = num;
    dm_strlcpy(s->floor_who, who, sizeof s->floor_who);
  }
}

/* The floor: the relay's current file, and every registered reader's. */
static void purge_find_floor(purge_state *s) {
  s->floor_sub = s->ix.n; /* nothing needed yet: everything may go */
  s->floor_num = 0;
  if (s->ix.n == 0)
    return;
  int last = s->ix.n - 1;
  char dir[PATH_MAX], who[sizeof s->floor_who];
  dm_relay_meta m;
  dm_error ignored;
  snprintf(dir, sizeof dir, "%s/%s", s->relay_dir, s->ix.subs[last]);
  long num = dm_relay_meta_read(dir, &m, &ignored) == 1 ? dm_relay_file_number(m.binlog_name) : -1;
  snprintf(who, sizeof who, "the relay (it writes %s/%s)", s->ix.subs[last],
           num >= 0 ? m.binlog_name : "*");
  purge_lower_floor(s, last, num >= 0 ? (unsigned long)num : 0, who);
  snprintf(dir, sizeof dir, "%s/readers", s->relay_dir);
  DIR *d = opendir(dir);
  if (!d)
    return;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (de->d_name[0] == '.' || strstr(de->d_name, ".tmp"))
      continue;
    char rsub[DM_FS_NAME_MAX + 1], rfile[DM_FS_NAME_MAX + 1];
    if (!dm_relay_reader_read(s->relay_dir, de->d_name, rsub, sizeof rsub, rfile, sizeof rfile))
      continue;
    int sub = dm_relay_index_find(&s->ix, rsub);
    long n = dm_relay_file_number(rfile);
    if (sub < 0 || n < 0)
      continue; /* a reader of a sub-folder that is gone protects nothing */
    snprintf(who, sizeof who, "reader %.255s (it needs %s/%s)", de->d_name, rsub, rfile);
    purge_lower_floor(s, sub, (unsigned long)n, who);
  }
  closedir(d);
}

static int purge_cmp(const void *a, const void *b) {
  const purge_file *x = a, *y = b;
  if (x->sub != y->sub)
    return x->sub < y->sub ? -1 : 1;
  return x->num < y->num ? -1 : x->num > y->num;
}

static bool purge_below(const purge_file *f, int sub, unsigned long num) {
  return f->sub < sub || (f->sub == sub && f->num < num);
}

static int purge_remove(purge_state *s, purge_file *f, dm_error *err) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s/%s", s->relay_dir, s->ix.subs[f->sub], f->name);
  if (unlink(path) < 0 && errno != ENOENT) {
    dm_error_set(err, DM_ERR_IO, strerror(errno), "relay purge: cannot remove %s", path);
    return -1;
  }
  f->name[0] = '\0';
  return 0;
}

/* Sub-folders before the last with no relay file left go, with their index lines. */
static int purge_drop_empty_subdirs(purge_state *s, dm_error *err) {
  bool *keep = calloc((size_t)s->ix.n, sizeof *keep);
  if (!keep) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "relay purge: no memory");
    return -1;
  }
  keep[s->ix.n - 1] = true;
  for (int i = 0; i < s->n_files; i++)
    if (s->files[i].name[0])
      keep[s->files[i].sub] = true;
  dm_relay_index kept = {.n = 0, .subs = malloc((size_t)s->ix.n * sizeof *s->ix.subs)};
  int rc = kept.subs ? 0 : -1;
  if (rc < 0)
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "relay purge: no memory");
  for (int i = 0; rc == 0 && i < s->ix.n; i++)
    if (keep[i])
      memcpy(kept.subs[kept.n++], s->ix.subs[i], sizeof *kept.subs);
  if (rc == 0 && kept.n < s->ix.n) {
    char path[PATH_MAX];
    struct stat sb; /* the index keeps the mode the relay gave it (the source's file-mode) */
    snprintf(path, sizeof path, "%s/%s", s->relay_dir, DM_RELAY_INDEX_NAME);
    unsigned mode = stat(path, &sb) == 0 ? (unsigned)(sb.st_mode & 0777) : DM_FS_FILE_MODE;
    rc = dm_relay_index_write(s->relay_dir, &kept, mode, err);
    for (int i = 0; rc == 0 && i < s->ix.n; i++) {
      if (keep[i])
        continue;
      char dir[PATH_MAX], f[PATH_MAX + 16];
      snprintf(dir, sizeof dir, "%s/%s", s->relay_dir, s->ix.subs[i]);
      snprintf(f, sizeof f, "%s/%s", dir, DM_RELAY_META_NAME);
      unlink(f);
      rmdir(dir);
    }
  }
  dm_relay_index_free(&kept);
  free(keep);
  return rc;
}

static int purge_manual(purge_state *s, const char *before, int *removed, dm_error *err) {
  char sub[DM_FS_NAME_MAX + 1] = "", name[DM_FS_NAME_MAX + 1];
  const char *slash = strchr(before, '/');
  if (slash) {
    snprintf(sub, sizeof sub, "%.*s", (int)(slash - before), before);
    dm_strlcpy(name, slash + 1, sizeof name);
  } else {
    dm_strlcpy(name, before, sizeof name);
  }
  long num = dm_relay_file_number(name);
  int target = -1;
  for (int i = s->n_files - 1; i >= 0 && target < 0; i--)
    if (strcmp(s->files[i].name, name) == 0 &&
        (!sub[0] || strcmp(s->ix.subs[s->files[i].sub], sub) == 0))
      target = s->files[i].sub;
  if (target < 0 || num < 0) {
    dm_error_set(err, DM_ERR_NOT_FOUND, NULL,
                 "relay purge: no relay file %s in %s; name a file the relay holds (see "
                 "relaySubDir and relayBinlog in query-status)",
                 before, s->relay_dir);
    return -1;
  }
  if (target > s->floor_sub || (target == s->floor_sub && (unsigned long)num > s->floor_num)) {
    dm_error_set(err, DM_ERR_RELAY_PURGE_IN_USE, NULL,
                 "relay purge: cannot remove the files before %s: %s; nothing was removed", before,
                 s->floor_who);
    return -1;
  }
  for (int i = 0; i < s->n_files; i++) {
    if (!purge_below(&s->files[i], target, (unsigned long)num))
      continue;
    if (purge_remove(s, &s->files[i], err) < 0)
      return -1;
    (*removed)++;
  }
  return 0;
}

static int purge_auto(purge_state *s, const dm_relay_purge_opts *o, int *removed, dm_error *err) {
  time_t now = time(NULL);
  for (int i = 0; i < s->n_files; i++) {
    purge_file *f = &s->files[i];
    if (!purge_below(f, s->floor_sub, s->floor_num))
      break;
    bool go = o->expires_hours > 0 && now - f->mtime > o->expires_hours * 3600;
    if (!go && o->remain_space_gb > 0) {
      struct statvfs vfs;
      go = statvfs(s->relay_dir, &vfs) == 0 &&
           (uint64_t)vfs.f_bavail * vfs.f_frsize < (uint64_t)o->remain_space_gb << 30;
    }
    if (!go)
      continue;
    if (purge_remove(s, f, err) < 0)
      return -1;
    (*removed)++;
  }
  return 0;
}

int dm_relay_purge(const dm_relay_purge_opts *o, int *removed, dm_error *err) {
  *removed = 0;
  purge_state *s = calloc(1, sizeof *s);
  if (!s) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "relay purge: no memory");
    return -1;
  }
  s->relay_dir = o->relay_dir;
  int rc = dm_relay_index_read(s->relay_dir, &s->ix, err);
  if (rc == 0)
    rc = purge_list_files(s, err);
  if (rc == 0) {
    if (s->n_files > 1) /* no files: s->files is NULL, which qsort may not be given */
      qsort(s->files, (size_t)s->n_files, sizeof *s->files, purge_cmp);
    purge_find_floor(s);
    rc = o->before ? purge_manual(s, o->before, removed, err) : purge_auto(s, o, removed, err);
  }
  if (rc == 0 && *removed && s->ix.n > 0)
    rc = purge_drop_empty_subdirs(s, err);
  dm_relay_index_free(&s->ix);
  free(s->files);
  free(s);
  return rc;
}
