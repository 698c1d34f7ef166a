/* dmctl config export|import. See dmctl_export.h.
 *
 * DM's export (getAllCfgs, createDirectory, writeSourceCfgs/writeTaskCfgs) asks the master for
 * every stored file and writes DIR/sources/NAME.yaml and DIR/tasks/NAME.yaml (folders 0700, files
 * 0600, over existing files); its import (collectCfgs, createSources, createTasks) reads every file
 * of both folders, then creates each source and starts each task, an "already exist" answer kept.
 * Here the files are what `config source|task NAME` answers (passwords `******`), so an export
 * holds no secret; they are never written over an existing file (nothing is written when one
 * exists); import refuses a folder whose files still hold the mask before it sends anything. */
#include "dmctl_export.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_flag.h"
#include "config.h"
#include "config_mask.h"
#include "dmctl_cfg_file.h"
#include "dmhost/fs.h"
#include "dmhost/sdk.h"
#include "error_json.h"

#define EXPORT_DEFAULT_DIR "configs" /* DM's */

/* A kind of stored file: how it is listed, read and brought back. */
typedef struct export_kind {
  const char *what;        /* config's word */
  const char *folder;      /* DM's sub-folder of DIR */
  const char *list[2];     /* the command line listing them (NULL-padded) */
  const char *list_member; /* its answer's array ... */
  const char *name_member; /* ... and each entry's name */
  const char *create[2];   /* import: the command words before the file */
} export_kind;

static const export_kind kinds[] = {
    {"source",
     "sources",
     {"operate-source", "show"},
     "sources",
     "source",
     {"operate-source", "create"}},
    {"task", "tasks", {"query-status", NULL}, "tasks", "taskName", {"start-task", NULL}},
};
#define N_KINDS (sizeof kinds / sizeof kinds[0])

bool dmctl_export_wanted(int argc, char **argv) {
  return argc > 1 && strcmp(argv[0], "config") == 0 &&
         (strcmp(argv[1], "export") == 0 || strcmp(argv[1], "import") == 0);
}

static json_object *export_fail(json_object *resp, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static json_object *export_fail(json_object *resp, int code, const char *fmt, ...) {
  dm_error err;
  va_list ap;
  va_start(ap, fmt);
  dm_error_vset(&err, code, NULL, fmt, ap);
  va_end(ap);
  dmh_control_set_error(resp, &err);
  return resp;
}

static bool export_ok(json_object *ans) {
  json_object *v = NULL;
  return json_object_object_get_ex(ans, "result", &v) && json_object_get_boolean(v);
}

static const char *export_str(json_object *o, const char *key) {
  json_object *v = NULL;
  return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string)
             ? json_object_get_string(v)
             : NULL;
}

/* resp fails with an answer's own failure, its msg after `what` ("config export: source s1"). */
static json_object *export_failed_answer(json_object *resp, json_object *ans, const char *what) {
  const char *msg = export_str(ans, "msg");
  char *line = NULL;
  if (asprintf(&line, "%s: %s", what, msg ? msg : "failed") < 0)
    line = NULL;
  json_object *e = NULL;
  json_object_object_add(resp, "result", json_object_new_boolean(0));
  json_object_object_add(resp, "msg", json_object_new_string(line ? line : what));
  if (json_object_object_get_ex(ans, "error", &e))
    json_object_object_add(resp, "error", json_object_get(e));
  free(line);
  return resp;
}

/* DM's -d/--dir (hidden) and config's persistent -p/--path, the path winning (exportCfgsFunc).
 * 0, or -1 with resp's error. */
static int export_dir_arg(int argc, char **argv, const char **dir, json_object *resp) {
  const char *d = NULL, *p = NULL;
  for (int i = 2; i < argc; i++) {
    int f = dmh_cli_flag(argc, argv, &i, "-d", "--dir", &d);
    if (f == 0)
      f = dmh_cli_flag(argc, argv, &i, "-p", "--path", &p);
    if (f <= 0) {
      export_fail(resp, DM_ERR_CONTROL_REQUEST,
                  "config %s: %s %s (usage: config export|import [-d DIR])", argv[1], argv[i],
                  f < 0 ? "needs a folder" : "is not an argument of it");
      return -1;
    }
  }
  *dir = p ? p : d ? d : EXPORT_DEFAULT_DIR;
  return 0;
}

/* A name from the daemon used as a file name: it must stay in its folder. */
static bool export_name_ok(const char *name) {
  return name && name[0] && name[0] != '.' && !strchr(name, '/');
}

/* One file to write: its path and the config answer holding its text. */
typedef struct export_file {
  char *path;
  json_object *ans;
  json_object *entry; /* {name, file} for the answer's list */
} export_file;

static void export_files_free(export_file *f, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free(f[i].path);
    json_object_put(f[i].ans);
    json_object_put(f[i].entry);
  }
  free(f);
}

/* Every stored file of kind k asked and appended to *files (*n, room *cap). 0, or -1 with resp's
 * error. */
static int export_collect(const export_kind *k, const char *dir, dmctl_export_ask_fn ask, void *ud,
                          export_file **files, size_t *n, size_t *cap, json_object *resp) {
  char *list_argv[] = {(char *)k->list[0], (char *)k->list[1], NULL};
  json_object *lst = ask(ud, k->list[1] ? 2 : 1, list_argv), *arr = NULL;
  int rc = 0;
  if (!export_ok(lst)) {
    char what[64];
    snprintf(what, sizeof what, "config export: listing the %s", k->folder);
    export_failed_answer(resp, lst, what);
    json_object_put(lst);
    return -1;
  }
  json_object_object_get_ex(lst, k->list_member, &arr);
  size_t len = json_object_is_type(arr, json_type_array) ? json_object_array_length(arr) : 0;
  for (size_t i = 0; i < len && rc == 0; i++) {
    const char *name = export_str(json_object_array_get_idx(arr, i), k->name_member);
    if (!export_name_ok(name)) {
      export_fail(resp, DM_ERR_CONTROL,
                  "config export: the daemon lists a %s named \"%s\", "
                  "which cannot be a file name in %s/%s",
                  k->what, name ? name : "", dir, k->folder);
      rc = -1;
      break;
    }
    char *cfg_argv[] = {"config", (char *)k->what, (char *)name, NULL};
    json_object *ans = ask(ud, 3, cfg_argv);
    if (!export_ok(ans) || !export_str(ans, "cfg")) {
      char what[320];
      snprintf(what, sizeof what, "config export: %s %s", k->what, name);
      export_failed_answer(resp, ans, what);
      json_object_put(ans);
      rc = -1;
      break;
    }
    /* the stored file's form decides its name: dmhost reads *.yaml as DM's YAML */
    const char *form = export_str(ans, "format");
    bool yaml = form && strcmp(form, "yaml") == 0;
    if (*n == *cap) {
      size_t nc = *cap ? *cap * 2 : 8;
      export_file *g = realloc(*files, nc * sizeof *g);
      if (!g) {
        json_object_put(ans);
        export_fail(resp, DM_ERR_NO_MEMORY, "config export: out of memory");
        rc = -1;
        break;
      }
      *files = g;
      *cap = nc;
    }
    export_file *f = &(*files)[*n];
    if (asprintf(&f->path, "%s/%s/%s.%s", dir, k->folder, name, yaml ? "yaml" : "cfg") < 0) {
      json_object_put(ans);
      export_fail(resp, DM_ERR_NO_MEMORY, "config export: out of memory");
      rc = -1;
      break;
    }
    f->ans = ans;
    f->entry = json_object_new_object();
    json_object_object_add(f->entry, k->what, json_object_new_string(name));
    json_object_object_add(f->entry, "file", json_object_new_string(f->path));
    (*n)++;
  }
  json_object_put(lst);
  return rc;
}

static json_object *export_run(const char *dir, dmctl_export_ask_fn ask, void *ud,
                               json_object *resp) {
  export_file *files = NULL;
  size_t n = 0, cap = 0, per_kind[N_KINDS] = {0};
  for (size_t k = 0; k < N_KINDS; k++) {
    if (export_collect(&kinds[k], dir, ask, ud, &files, &n, &cap, resp) < 0)
      goto out;
    per_kind[k] = n;
  }
  /* all or nothing: an existing file (or link) at any of the names stops the export first */
  for (size_t i = 0; i < n; i++) {
    struct stat st;
    if (lstat(files[i].path, &st) == 0) {
      export_fail(resp, DM_ERR_CONFIG_IO,
                  "config export: %s exists: an existing file is never overwritten; export into "
                  "a new folder (-d DIR), nothing was written",
                  files[i].path);
      goto out;
    }
  }
  for (size_t k = 0; k < N_KINDS; k++) {
    char *sub = NULL;
    if (asprintf(&sub, "%s/%s", dir, kinds[k].folder) < 0 || dm_fs_mkdir_p(sub, 0700) < 0) {
      int e = errno;
      export_fail(resp, DM_ERR_CONFIG_IO, "config export: cannot create the folder %s: %s",
                  sub ? sub : dir, strerror(e));
      free(sub);
      goto out;
    }
    free(sub);
  }
  json_object *lists[N_KINDS];
  for (size_t k = 0; k < N_KINDS; k++) {
    lists[k] = json_object_new_array();
    json_object_object_add(resp, kinds[k].folder, lists[k]);
  }
  for (size_t i = 0, k = 0; i < n; i++) {
    while (i >= per_kind[k])
      k++;
    dmctl_cfg_file_write(files[i].ans, files[i].path); /* new, 0600, never through a link */
    if (!export_ok(files[i].ans)) {
      export_failed_answer(resp, files[i].ans, "config export");
      goto out;
    }
    json_object_array_add(lists[k], files[i].entry);
    files[i].entry = NULL;
  }
  char msg[4200];
  snprintf(msg, sizeof msg, "export configs to directory `%s` succeed", dir);
  json_object_object_add(resp, "msg", json_object_new_string(msg));
out:
  export_files_free(files, n);
  return resp;
}

/* ---- import ---- */

/* One file read before anything is sent. */
typedef struct import_file {
  char *path;
  size_t kind;
} import_file;

static int import_name_cmp(const struct dirent **a, const struct dirent **b) {
  return strcmp((*a)->d_name, (*b)->d_name);
}

static int import_skip_dots(const struct dirent *d) {
  return strcmp(d->d_name, ".") != 0 && strcmp(d->d_name, "..") != 0;
}

/* Every file of DIR/<kind's folder> (a missing folder: none), read and checked: appended to
 * *files. 0, or -1 with resp's error. */
static int import_collect(size_t k, const char *dir, import_file **files, size_t *n,
                          json_object *resp) {
  char *sub = NULL;
  if (asprintf(&sub, "%s/%s", dir, kinds[k].folder) < 0) {
    export_fail(resp, DM_ERR_NO_MEMORY, "config import: out of memory");
    return -1;
  }
  struct stat st;
  if (stat(sub, &st) < 0 || !S_ISDIR(st.st_mode)) {
    free(sub);
    return 0;
  }
  struct dirent **ents = NULL;
  int m = scandir(sub, &ents, import_skip_dots, import_name_cmp), rc = 0;
  if (m < 0) {
    int e = errno;
    export_fail(resp, DM_ERR_CONFIG_IO, "config import: cannot read the folder %s: %s", sub,
                strerror(e));
    free(sub);
    return -1;
  }
  for (int i = 0; i < m; i++) {
    char *path = NULL;
    size_t len = 0;
    char *text = rc == 0 && asprintf(&path, "%s/%s", sub, ents[i]->d_name) >= 0
                     ? dm_fs_read_all(path, &len)
                     : NULL;
    if (rc == 0 && (!text || strlen(text) != len)) {
      int e = errno;
      export_fail(resp, DM_ERR_CONFIG_IO, "config import: cannot read %s: %s", path ? path : sub,
                  text ? "it is not text" : strerror(e));
      rc = -1;
    } else if (rc == 0 && dmh_config_mask_left(text, dmh_config_is_yaml(path))) {
      export_fail(resp, DM_ERR_CONFIG_INVALID,
                  "config import: %s still holds a password masked as ****** (config export "
                  "writes no password): put the real one back (or name it with password-file "
                  "or password-env) and import again; nothing was sent",
                  path);
      rc = -1;
    } else if (rc == 0) {
      import_file *g = realloc(*files, (*n + 1) * sizeof *g);
      if (!g) {
        export_fail(resp, DM_ERR_NO_MEMORY, "config import: out of memory");
        rc = -1;
      } else {
        *files = g;
        (*files)[(*n)++] = (import_file){.path = path, .kind = k};
        path = NULL;
      }
    }
    if (text) /* the clear passwords are not left in freed memory */
      memset(text, 0, len);
    free(text);
    free(path);
    free(ents[i]);
  }
  free(ents);
  free(sub);
  return rc;
}

/* An answer to a create that says the source or task is there already (DM's createSources: "already
 * exist"; a daemon's and a master's DM_ERR_EXISTS say "already"): kept, not a failure. */
static bool import_exists(json_object *ans) {
  json_object *e = NULL, *c = NULL;
  const char *msg = export_str(ans, "msg");
  return json_object_object_get_ex(ans, "error", &e) &&
         json_object_object_get_ex(e, "ErrCode", &c) && json_object_get_int(c) == DM_ERR_EXISTS &&
         msg && strstr(msg, "already");
}

static json_object *import_run(const char *dir, dmctl_export_ask_fn ask, void *ud,
                               json_object *resp) {
  struct stat st;
  if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
    return export_fail(resp, DM_ERR_CONFIG_IO, "config import: config directory `%s` not exists",
                       dir);
  import_file *files = NULL;
  size_t n = 0;
  for (size_t k = 0; k < N_KINDS; k++)
    if (import_collect(k, dir, &files, &n, resp) < 0)
      goto out;
  json_object *lists[N_KINDS];
  for (size_t k = 0; k < N_KINDS; k++) {
    lists[k] = json_object_new_array();
    json_object_object_add(resp, kinds[k].folder, lists[k]);
  }
  /* sources first: a task needs its sources (DM's order) */
  for (size_t i = 0; i < n; i++) {
    const export_kind *k = &kinds[files[i].kind];
    char *argv[] = {(char *)k->create[0], (char *)k->create[1], files[i].path, NULL};
    if (!k->create[1])
      argv[1] = files[i].path, argv[2] = NULL;
    json_object *ans = ask(ud, k->create[1] ? 3 : 2, argv);
    bool ok = export_ok(ans), kept = !ok && import_exists(ans);
    json_object *entry = json_object_new_object();
    json_object_object_add(entry, "file", json_object_new_string(files[i].path));
    json_object_object_add(entry, "result", json_object_new_boolean(ok || kept));
    const char *msg = export_str(ans, "msg");
    char *line = NULL;
    if (asprintf(&line, "%s%s", ok ? (files[i].kind == 0 ? "created" : "started") : "kept: ",
                 ok    ? ""
                 : msg ? msg
                       : "") < 0)
      line = NULL;
    json_object_object_add(entry, "msg", json_object_new_string(line ? line : ""));
    free(line);
    json_object_array_add(lists[files[i].kind], entry);
    if (!ok && !kept) { /* DM stops at the first failure: what came before stays */
      char what[4200];
      snprintf(what, sizeof what, "config import: %s", files[i].path);
      json_object_object_add(entry, "msg", json_object_new_string(msg ? msg : "failed"));
      export_failed_answer(resp, ans, what);
      json_object_put(ans);
      goto out;
    }
    json_object_put(ans);
  }
  char msg[4200];
  snprintf(msg, sizeof msg, "import configs from directory `%s` succeed", dir);
  json_object_object_add(resp, "msg", json_object_new_string(msg));
out:
  for (size_t i = 0; i < n; i++)
    free(files[i].path);
  free(files);
  return resp;
}

json_object *dmctl_export_run(int argc, char **argv, dmctl_export_ask_fn ask, void *ud) {
  json_object *resp = dmh_control_response_new();
  const char *dir;
  if (export_dir_arg(argc, argv, &dir, resp) < 0)
    return resp;
  return strcmp(argv[1], "export") == 0 ? export_run(dir, ask, ud, resp)
                                        : import_run(dir, ask, ud, resp);
}
