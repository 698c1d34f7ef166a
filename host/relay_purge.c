/*
 * Which relay files may go, and removing them. See relay_purge.h. Files are ordered by
 * (sub-folder's place in server-uuid.index, binlog file number); the "floor" is the oldest file
 * anyone still needs: the relay's own current file and each reader's registered file.
 */
#include "relay_purge.h"

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "dmhost/fs.h"
#include "dmhost/relay_reader.h"
#include "dmhost/sdk.h"

#define PURGE_MAX_SUBDIRS 256
#define PURGE_NAME 256

typedef struct purge_file {
  int sub;
  unsigned long num;
  char name[PURGE_NAME];
  time_t mtime;
} purge_file;

typedef struct purge_state {
  const char *relay_dir;
  char subs[PURGE_MAX_SUBDIRS][PURGE_NAME];
  int n_subs;
  purge_file *files;
  int n_files, cap_files;
  int floor_sub;
  unsigned long floor_num;
  char floor_who[PURGE_NAME * 4 + 64];
} purge_state;

/* The number after the last '.', or -1 when the name is not "<base>.<digits>". */
static long purge_file_number(const char *name) {
  const char *dot = strrchr(name, '.');
  if (!dot || !dot[1] || dot == name)
    return -1;
  for (const char *p = dot + 1; *p; p++)
    if (*p < '0' || *p > '9')
      return -1;
  return strtol(dot + 1, NULL, 10);
}

static int purge_sub_index(const purge_state *s, const char *sub) {
  for (int i = 0; i < s->n_subs; i++)
    if (strcmp(s->subs[i], sub) == 0)
      return i;
  return -1;
}

static int purge_read_index(purge_state *s, dm_error *err) {
  char path[4096];
  snprintf(path, sizeof path, "%s/server-uuid.index", s->relay_dir);
  FILE *fp = fopen(path, "re");
  if (!fp) {
    if (errno == ENOENT)
      return 0;
    dm_error_set(err, DM_ERR_IO, strerror(errno), "relay purge: cannot read %s", path);
    return -1;
  }
  char line[PURGE_NAME];
  while (fgets(line, sizeof line, fp) && s->n_subs < PURGE_MAX_SUBDIRS) {
    line[strcspn(line, "\r\n")] = '\0';
    if (line[0] && !dm_fs_name_ok(line, strlen(line))) {
      fclose(fp);
      dm_error_set(err, DM_ERR_RELAY_BAD_NAME, NULL,
                   "relay purge: %s lists \"%s\", not a plain sub-folder name; nothing was removed",
                   path, line);
      return -1;
    }
    if (line[0])
      dm_strlcpy(s->subs[s->n_subs++], line, PURGE_NAME);
  }
  fclose(fp);
  return 0;
}

static int purge_list_files(purge_state *s, dm_error *err) {
  for (int i = 0; i < s->n_subs; i++) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", s->relay_dir, s->subs[i]);
    DIR *d = opendir(dir);
    if (!d)
      continue; /* a sub-folder already removed by hand */
    struct dirent *de;
    while ((de = readdir(d))) {
      long num = purge_file_number(de->d_name);
      if (num < 0 || strstr(de->d_name, ".tmp"))
        continue;
      if (s->n_files == s->cap_files) {
        int cap = s->cap_files ? s->cap_files * 2 : 64;
        purge_file *nf = realloc(s->files, (size_t)cap * sizeof *nf);
        if (!nf) {
          closedir(d);
          dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "relay purge: no memory listing %s", dir);
          return -1;
        }
        s->files = nf;
        s->cap_files = cap;
      }
      purge_file *f = &s->files[s->n_files++];
      f->sub = i;
      f->num = (unsigned long)num;
      dm_strlcpy(f->name, de->d_name, sizeof f->name);
      char path[4096 + PURGE_NAME];
      struct stat sb;
      snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
      f->mtime = stat(path, &sb) == 0 ? sb.st_mtime : time(NULL);
    }
    closedir(d);
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

/* The first "key = value" line's value of relay.meta's binlog-name. */
static bool purge_meta_name(const char *dir, char *name, size_t len) {
  char path[4096 + 16];
  snprintf(path, sizeof path, "%s/relay.meta", dir);
  FILE *fp = fopen(path, "re");
  if (!fp)
    return false;
  char line[1024];
  bool found = false;
  while (!found && fgets(line, sizeof line, fp)) {
    char *q = strstr(line, "binlog-name");
    char *a = q ? strchr(q, '"') : NULL;
    char *b = a ? strchr(a + 1, '"') : NULL;
    if (b) {
      *b = '\0';
      dm_strlcpy(name, a + 1, len);
      found = true;
    }
  }
  fclose(fp);
  return found;
}

/* The floor: the relay's current file, and every registered reader's. */
static void purge_find_floor(purge_state *s) {
  s->floor_sub = s->n_subs; /* nothing needed yet: everything may go */
  s->floor_num = 0;
  if (s->n_subs == 0)
    return;
  int last = s->n_subs - 1;
  char dir[4096], name[PURGE_NAME], who[PURGE_NAME * 4 + 64];
  snprintf(dir, sizeof dir, "%s/%s", s->relay_dir, s->subs[last]);
  long num = purge_meta_name(dir, name, sizeof name) ? purge_file_number(name) : -1;
  snprintf(who, sizeof who, "the relay (it writes %s/%s)", s->subs[last], num >= 0 ? name : "*");
  purge_lower_floor(s, last, num >= 0 ? (unsigned long)num : 0, who);
  snprintf(dir, sizeof dir, "%s/readers", s->relay_dir);
  DIR *d = opendir(dir);
  if (!d)
    return;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (de->d_name[0] == '.' || strstr(de->d_name, ".tmp"))
      continue;
    char rsub[PURGE_NAME], rfile[PURGE_NAME];
    if (!dm_relay_reader_read(s->relay_dir, de->d_name, rsub, sizeof rsub, rfile, sizeof rfile))
      continue;
    int sub = purge_sub_index(s, rsub);
    long n = purge_file_number(rfile);
    if (sub < 0 || n < 0)
      continue; /* a reader of a sub-folder that is gone protects nothing */
    snprintf(who, sizeof who, "reader %s (it needs %s/%s)", de->d_name, rsub, rfile);
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
  char path[4096 + PURGE_NAME];
  snprintf(path, sizeof path, "%s/%s/%s", s->relay_dir, s->subs[f->sub], f->name);
  if (unlink(path) < 0 && errno != ENOENT) {
    dm_error_set(err, DM_ERR_IO, strerror(errno), "relay purge: cannot remove %s", path);
    return -1;
  }
  f->name[0] = '\0';
  return 0;
}

/* Sub-folders before the last with no relay file left go, with their index lines. */
static int purge_drop_empty_subdirs(purge_state *s, dm_error *err) {
  bool keep[PURGE_MAX_SUBDIRS] = {false};
  keep[s->n_subs - 1] = true;
  for (int i = 0; i < s->n_files; i++)
    if (s->files[i].name[0])
      keep[s->files[i].sub] = true;
  bool any = false;
  for (int i = 0; i < s->n_subs; i++)
    any |= !keep[i];
  if (!any)
    return 0;
  char path[4096], text[PURGE_MAX_SUBDIRS * (PURGE_NAME + 1)];
  snprintf(path, sizeof path, "%s/server-uuid.index", s->relay_dir);
  size_t len = 0;
  for (int i = 0; i < s->n_subs; i++)
    if (keep[i])
      len += (size_t)snprintf(text + len, sizeof text - len, "%s\n", s->subs[i]);
  struct stat sb; /* the index keeps the mode the relay gave it (the source's file-mode) */
  mode_t mode = stat(path, &sb) == 0 ? (sb.st_mode & 0777) : DM_FS_FILE_MODE;
  const char *step = "create";
  if (dm_fs_write_atomic(path, text, len, mode, DM_FS_SYNC, &step) < 0) {
    dm_error_set(err, DM_ERR_IO, strerror(errno), "relay purge: cannot replace %s (%s failed)",
                 path, step);
    return -1;
  }
  for (int i = 0; i < s->n_subs; i++) {
    if (keep[i])
      continue;
    char dir[4096], f[4200];
    snprintf(dir, sizeof dir, "%s/%s", s->relay_dir, s->subs[i]);
    snprintf(f, sizeof f, "%s/relay.meta", dir);
    unlink(f);
    rmdir(dir);
  }
  return 0;
}

static int purge_manual(purge_state *s, const char *before, int *removed, dm_error *err) {
  char sub[PURGE_NAME] = "", name[PURGE_NAME];
  const char *slash = strchr(before, '/');
  if (slash) {
    snprintf(sub, sizeof sub, "%.*s", (int)(slash - before), before);
    dm_strlcpy(name, slash + 1, sizeof name);
  } else {
    dm_strlcpy(name, before, sizeof name);
  }
  long num = purge_file_number(name);
  int target = -1;
  for (int i = s->n_files - 1; i >= 0 && target < 0; i--)
    if (strcmp(s->files[i].name, name) == 0 &&
        (!sub[0] || strcmp(s->subs[s->files[i].sub], sub) == 0))
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

static int purge_auto(purge_state *s, const dmh_relay_purge_opts *o, int *removed, dm_error *err) {
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

int dmh_relay_purge(const dmh_relay_purge_opts *o, int *removed, dm_error *err) {
  *removed = 0;
  purge_state *s = calloc(1, sizeof *s);
  if (!s) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "relay purge: no memory");
    return -1;
  }
  s->relay_dir = o->relay_dir;
  int rc = purge_read_index(s, err);
  if (rc == 0)
    rc = purge_list_files(s, err);
  if (rc == 0) {
    qsort(s->files, (size_t)s->n_files, sizeof *s->files, purge_cmp);
    purge_find_floor(s);
    rc = o->before ? purge_manual(s, o->before, removed, err) : purge_auto(s, o, removed, err);
  }
  if (rc == 0 && *removed && s->n_subs > 0)
    rc = purge_drop_empty_subdirs(s, err);
  free(s->files);
  free(s);
  return rc;
}

/* The index of relay_dir read into a new state (free it); NULL when it lists no sub-folder. */
static purge_state *purge_open_index(const char *relay_dir) {
  purge_state *s = calloc(1, sizeof *s);
  if (!s)
    return NULL;
  s->relay_dir = relay_dir;
  dm_error ignored;
  if (purge_read_index(s, &ignored) < 0 || s->n_subs == 0) {
    free(s);
    return NULL;
  }
  return s;
}

int dmh_relay_current(const char *relay_dir, char *sub, size_t sub_len, char *file,
                      size_t file_len) {
  purge_state *s = purge_open_index(relay_dir);
  if (!s)
    return -1;
  char dir[4096], name[PURGE_NAME];
  snprintf(dir, sizeof dir, "%s/%s", relay_dir, s->subs[s->n_subs - 1]);
  int rc = -1;
  if (purge_meta_name(dir, name, sizeof name) && purge_file_number(name) >= 0) {
    dm_strlcpy(sub, s->subs[s->n_subs - 1], sub_len);
    dm_strlcpy(file, name, file_len);
    rc = 0;
  }
  free(s);
  return rc;
}

int dmh_relay_locate(const char *relay_dir, const char *file, char *sub, size_t len) {
  purge_state *s = purge_open_index(relay_dir);
  if (!s)
    return -1;
  int at = s->n_subs - 1; /* not written yet: the relay writes it into its newest sub-folder */
  for (int i = s->n_subs - 1; i >= 0; i--) {
    char path[4096 + PURGE_NAME];
    struct stat sb;
    snprintf(path, sizeof path, "%s/%s/%s", relay_dir, s->subs[i], file);
    if (stat(path, &sb) == 0) {
      at = i;
      break;
    }
  }
  dm_strlcpy(sub, s->subs[at], len);
  free(s);
  return 0;
}
