/* Persistence in the state dir: state.json and atomic file writes, see state.h. */
#include "state.h"
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dmhost/fs.h"
#include "dmhost/sdk.h"

const char *dmh_expect_stage_name(dmh_expect_stage s) {
  switch (s) {
  case DMH_EXPECT_RUNNING:
    return "Running";
  case DMH_EXPECT_PAUSED:
    return "Paused";
  case DMH_EXPECT_STOPPED:
    return "Stopped";
  }
  return "unknown";
}

void dmh_state_init(dmh_state *st) {
  memset(st, 0, sizeof *st);
  dmh_worker_init(&st->worker);
  st->worker.stage = DMH_WORKER_FREE;
}

void dmh_state_clear(dmh_state *st) {
  for (int i = 0; i < st->n_sources; i++) {
    free(st->sources[i].source_id);
    free(st->sources[i].file);
  }
  for (int i = 0; i < st->n_tasks; i++) {
    free(st->tasks[i].name);
    free(st->tasks[i].file);
    dmh_unit_paths_clear(&st->tasks[i].unit_paths);
  }
  free(st->sources);
  free(st->tasks);
  dmh_state_init(st);
}

int dmh_state_add_source(dmh_state *st, const char *source_id, const char *file,
                         dmh_expect_stage relay, dm_error *err) {
  dmh_state_source *n = realloc(st->sources, sizeof *n * (size_t)(st->n_sources + 1));
  if (!n)
    goto oom;
  st->sources = n;
  dmh_state_source *s = &n[st->n_sources];
  memset(s, 0, sizeof *s); /* a new source is enabled: no field may be left to chance */
  s->source_id = strdup(source_id);
  s->file = strdup(file);
  s->relay = relay;
  if (!s->source_id || !s->file) {
    free(s->source_id);
    free(s->file);
    goto oom;
  }
  st->n_sources++;
  return 0;
oom:
  dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "state: out of memory adding source \"%s\"", source_id);
  return -1;
}

int dmh_state_add_task(dmh_state *st, const char *name, const char *file, dmh_expect_stage stage,
                       dm_error *err) {
  dmh_state_task *n = realloc(st->tasks, sizeof *n * (size_t)(st->n_tasks + 1));
  if (!n)
    goto oom;
  st->tasks = n;
  dmh_state_task *t = &n[st->n_tasks];
  memset(t, 0, sizeof *t);
  t->name = strdup(name);
  t->file = strdup(file);
  t->stage = stage;
  if (!t->name || !t->file) {
    free(t->name);
    free(t->file);
    goto oom;
  }
  st->n_tasks++;
  return 0;
oom:
  dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "state: out of memory adding task \"%s\"", name);
  return -1;
}

int dmh_unit_paths_set(dmh_unit_paths *p, const char *unit, const char *path, dm_error *err) {
  int i = 0;
  while (i < p->n && strcmp(p->unit[i], unit) != 0)
    i++;
  if (i == DMH_UNIT_SLOTS) {
    dm_error_set(err, DM_ERR_INTERNAL, NULL, "more than %d swapped unit builds", DMH_UNIT_SLOTS);
    return -1;
  }
  char *u = i < p->n ? p->unit[i] : strdup(unit), *copy = strdup(path);
  if (!u || !copy) {
    if (i == p->n)
      free(u);
    free(copy);
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory recording %s", path);
    return -1;
  }
  if (i < p->n)
    free(p->path[i]);
  else
    p->unit[p->n++] = u;
  p->path[i] = copy;
  return 0;
}

const char *dmh_unit_paths_get(const dmh_unit_paths *p, const char *unit) {
  for (int i = 0; i < p->n; i++)
    if (strcmp(p->unit[i], unit) == 0)
      return p->path[i];
  return NULL;
}

void dmh_unit_paths_clear(dmh_unit_paths *p) {
  for (int i = 0; i < p->n; i++) {
    free(p->unit[i]);
    free(p->path[i]);
  }
  p->n = 0;
}

/* ---- paths ---- */

static char *state_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *state_printf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = NULL;
  int n = vasprintf(&s, fmt, ap);
  va_end(ap);
  return n < 0 ? NULL : s;
}

char *dmh_state_path(const char *dir, const char *rel) {
  return state_printf("%s/%s", dir, rel);
}

char *dmh_state_source_file_rel(const char *source_id, const char *given) {
  return state_printf("sources/%s/source.%s", source_id,
                      dmh_config_is_yaml(given) ? "yaml" : "cfg");
}

char *dmh_state_task_file_rel(const char *task, const char *given) {
  return state_printf("tasks/%s/task.%s", task, dmh_config_is_yaml(given) ? "yaml" : "cfg");
}

char *dmh_state_relay_work_root(const char *dir, const char *source_id) {
  return state_printf("%s/sources/%s/relay-work", dir, source_id);
}

char *dmh_state_task_work_root(const char *dir, const char *task, const char *source_id) {
  return state_printf("%s/tasks/%s/%s", dir, task, source_id);
}

char *dmh_state_task_shard_file(const char *dir, const char *task) {
  return state_printf("%s/tasks/%s/shard.json", dir, task);
}

int dmh_state_check_name(const char *what, const char *name, dm_error *err) {
  size_t n = name ? strlen(name) : 0;
  if (n <= DMH_STATE_NAME_MAX && dm_fs_name_ok(name, n))
    return 0;
  if (n == 0 || n > DMH_STATE_NAME_MAX) {
    dm_error_set(err, DM_ERR_CONFIG_INVALID, NULL,
                 "%s \"%s\" must have 1 to %d characters; it names a folder in the state dir", what,
                 name ? name : "", DMH_STATE_NAME_MAX);
    return -1;
  }
  size_t i = name[0] == '.' ? 0
                            : strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                           "0123456789_-.");
  dm_error_set(err, DM_ERR_CONFIG_INVALID, NULL,
               "%s \"%s\" has '%c' at offset %zu; use letters, digits, '_', '-' and '.' (not "
               "first), as it names a folder in the state dir",
               what, name, name[i], i);
  return -1;
}

/* ---- atomic files ---- */

int dmh_state_mkdirs(const char *path, dm_error *err) {
  if (dm_fs_mkdir_p(path, DM_FS_DIR_MODE) < 0) {
    dm_error_set(err, DM_ERR_STATE, strerror(errno),
                 errno == ENOTDIR ? "state: %s (or a folder above it) exists but is not a folder"
                                  : "state: cannot create folder %s",
                 path);
    return -1;
  }
  return 0;
}

int dmh_state_write_file(const char *path, const void *data, size_t len, dm_error *err) {
  const char *step = "create";
  if (dm_fs_write_atomic(path, data, len, DM_FS_FILE_MODE, DM_FS_SYNC, &step) < 0) {
    dm_error_set(err, DM_ERR_STATE, strerror(errno), "state: cannot write %s (%s of %s.tmp failed)",
                 path, step, path);
    return -1;
  }
  return 0;
}

char *dmh_state_read_all(const char *path, size_t *len_out) {
  return dm_fs_read_all(path, len_out);
}

int dmh_state_copy_file(const char *src, const char *dst, dm_error *err) {
  size_t len = 0;
  char *data = dmh_state_read_all(src, &len);
  if (!data) {
    dm_error_set(err, DM_ERR_CONFIG_IO, strerror(errno), "cannot read %s to copy it into %s", src,
                 dst);
    return -1;
  }
  int rc = dmh_state_write_file(dst, data, len, err);
  free(data);
  return rc;
}

int dmh_state_remove_file(const char *path, dm_error *err) {
  if (unlink(path) < 0 && errno != ENOENT) {
    dm_error_set(err, DM_ERR_STATE, strerror(errno), "state: cannot remove %s", path);
    return -1;
  }
  return 0;
}

static int state_rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)ftw;
  return (flag == FTW_DP ? rmdir(path) : unlink(path)) < 0 && errno != ENOENT ? -1 : 0;
}

int dmh_state_remove_tree(const char *path, dm_error *err) {
  /* FTW_PHYS: a symlink inside is removed, never followed out of the folder */
  if (nftw(path, state_rm_one, 16, FTW_DEPTH | FTW_PHYS) < 0 && errno != ENOENT) {
    dm_error_set(err, DM_ERR_STATE, strerror(errno), "state: cannot remove the folder %s", path);
    return -1;
  }
  return 0;
}

int dmh_state_lock(const char *dir, dm_error *err) {
  char *path = dmh_state_path(dir, "dmhost.lock");
  if (!path) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "state: out of memory locking %s", dir);
    return -1;
  }
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    dm_error_set(err, DM_ERR_STATE, strerror(errno), "state: cannot open the lock file %s", path);
    free(path);
    return -1;
  }
  if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
    if (errno == EWOULDBLOCK)
      dm_error_set(err, DM_ERR_EXISTS, NULL,
                   "state: another `dmhost serve` uses the state dir %s (it holds %s); stop it, or "
                   "give this one another --state-dir",
                   dir, path);
    else
      dm_error_set(err, DM_ERR_STATE, strerror(errno), "state: cannot lock %s", path);
    close(fd);
    free(path);
    return -1;
  }
  free(path);
  return fd;
}

/* ---- state.json ---- */

static json_object *state_to_json(const dmh_state *st) {
  json_object *root = json_object_new_object();
  json_object_object_add(root, "version", json_object_new_int(DMH_STATE_VERSION));
  json_object *w = json_object_new_object();
  json_object_object_add(w, "stage",
                         json_object_new_string(dmh_worker_stage_name(st->worker.stage)));
  json_object_object_add(w, "source", json_object_new_string(st->worker.source));
  json_object_object_add(root, "worker", w);
  json_object *srcs = json_object_new_array();
  for (int i = 0; i < st->n_sources; i++) {
    json_object *s = json_object_new_object();
    json_object_object_add(s, "source", json_object_new_string(st->sources[i].source_id));
    json_object_object_add(s, "file", json_object_new_string(st->sources[i].file));
    json_object_object_add(s, "relay",
                           json_object_new_string(dmh_expect_stage_name(st->sources[i].relay)));
    if (st->sources[i].disabled)
      json_object_object_add(s, "enable", json_object_new_boolean(0));
    json_object_array_add(srcs, s);
  }
  json_object_object_add(root, "sources", srcs);
  json_object *tasks = json_object_new_array();
  for (int i = 0; i < st->n_tasks; i++) {
    json_object *t = json_object_new_object();
    json_object_object_add(t, "name", json_object_new_string(st->tasks[i].name));
    json_object_object_add(t, "file", json_object_new_string(st->tasks[i].file));
    json_object_object_add(t, "stage",
                           json_object_new_string(dmh_expect_stage_name(st->tasks[i].stage)));
    json_object *up = NULL;
    const dmh_unit_paths *ps = &st->tasks[i].unit_paths;
    for (int k = 0; k < ps->n; k++) {
      if (!up)
        up = json_object_new_object();
      json_object_object_add(up, ps->unit[k], json_object_new_string(ps->path[k]));
    }
    if (up)
      json_object_object_add(t, "unitPaths", up);
    if (st->tasks[i].source_paused)
      json_object_object_add(t, "pausedBySource", json_object_new_boolean(1));
    const dm_position *sp = &st->tasks[i].start_pos;
    if (sp->name[0]) {
      json_object *p = json_object_new_object();
      json_object_object_add(p, "name", json_object_new_string(sp->name));
      json_object_object_add(p, "pos", json_object_new_int64((int64_t)sp->pos));
      json_object_object_add(p, "gtid", json_object_new_string(sp->gtid));
      json_object_object_add(t, "startPosition", p);
    }
    json_object_array_add(tasks, t);
  }
  json_object_object_add(root, "tasks", tasks);
  return root;
}

int dmh_state_save(const char *dir, const dmh_state *st, dm_error *err) {
  char *path = dmh_state_path(dir, DMH_STATE_FILE);
  if (!path) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "state: out of memory saving %s", dir);
    return -1;
  }
  json_object *root = state_to_json(st);
  size_t len = 0;
  const char *text = json_object_to_json_string_length(
      root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE,
      &len);
  char *buf = malloc(len + 1);
  int rc = -1;
  if (!buf) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "state: out of memory saving %s", path);
  } else {
    memcpy(buf, text, len);
    buf[len] = '\n';
    rc = dmh_state_write_file(path, buf, len + 1, err);
  }
  free(buf);
  json_object_put(root);
  free(path);
  return rc;
}

/* An optional boolean member of `obj` into *out (absent: dflt); -1 with *err naming
 * `where`.`key` when it is not a boolean. */
static int state_get_bool(json_object *obj, const char *where, const char *key, bool dflt,
                          bool *out, const char *path, dm_error *err) {
  json_object *v = NULL;
  *out = dflt;
  if (!json_object_object_get_ex(obj, key, &v))
    return 0;
  if (!json_object_is_type(v, json_type_boolean)) {
    dm_error_set(err, DM_ERR_STATE, NULL,
                 "state: %s: %s.%s is not true or false; restore the file from a backup or fix it "
                 "by hand",
                 path, where, key);
    return -1;
  }
  *out = json_object_get_boolean(v);
  return 0;
}

/* A string member of `obj`, or NULL with *err naming `where`.`key`. */
static const char *state_get_string(json_object *obj, const char *where, const char *key,
                                    const char *path, dm_error *err);

/* A task's "startPosition" {"name", "pos", "gtid"} (optional). */
static int state_parse_start_pos(json_object *o, dmh_state_task *t, const char *where,
                                 const char *path, dm_error *err) {
  json_object *p = NULL, *pos = NULL;
  if (!json_object_object_get_ex(o, "startPosition", &p))
    return 0;
  const char *name = json_object_is_type(p, json_type_object)
                         ? state_get_string(p, where, "name", path, err)
                         : NULL;
  const char *gtid = name ? state_get_string(p, where, "gtid", path, err) : NULL;
  if (!gtid || !json_object_object_get_ex(p, "pos", &pos) ||
      !json_object_is_type(pos, json_type_int) || json_object_get_int64(pos) < 0 || !name[0] ||
      strlen(name) >= sizeof t->start_pos.name || strlen(gtid) >= sizeof t->start_pos.gtid) {
    dm_error_set(err, DM_ERR_STATE, NULL,
                 "state: %s: %s.startPosition is not {\"name\", \"pos\", \"gtid\"} of a binlog "
                 "position",
                 path, where);
    return -1;
  }
  snprintf(t->start_pos.name, sizeof t->start_pos.name, "%s", name);
  snprintf(t->start_pos.gtid, sizeof t->start_pos.gtid, "%s", gtid);
  t->start_pos.pos = (uint64_t)json_object_get_int64(pos);
  return 0;
}

static const char *state_get_string(json_object *obj, const char *where, const char *key,
                                    const char *path, dm_error *err) {
  json_object *v = NULL;
  if (!json_object_object_get_ex(obj, key, &v) || !json_object_is_type(v, json_type_string)) {
    dm_error_set(err, DM_ERR_STATE, NULL,
                 "state: %s: %s.%s is missing or not a string; restore the file from a backup or "
                 "fix it by hand",
                 path, where, key);
    return NULL;
  }
  return json_object_get_string(v);
}

static json_object *state_get_array(json_object *obj, const char *key, const char *path,
                                    dm_error *err) {
  json_object *v = NULL;
  if (!json_object_object_get_ex(obj, key, &v))
    return NULL; /* an absent list is an empty one */
  if (!json_object_is_type(v, json_type_array)) {
    dm_error_set(err, DM_ERR_STATE, NULL,
                 "state: %s: \"%s\" is not an array; restore the file from a backup or fix it by "
                 "hand",
                 path, key);
    return NULL;
  }
  return v;
}

static int state_parse_expect(const char *s, bool task, dmh_expect_stage *out) {
  if (strcmp(s, "Running") == 0)
    *out = DMH_EXPECT_RUNNING;
  else if (task && strcmp(s, "Paused") == 0)
    *out = DMH_EXPECT_PAUSED;
  else if (!task && strcmp(s, "Stopped") == 0)
    *out = DMH_EXPECT_STOPPED;
  else
    return -1;
  return 0;
}

static int state_parse_sources(json_object *arr, dmh_state *st, const char *path, dm_error *err) {
  for (size_t i = 0; arr && i < json_object_array_length(arr); i++) {
    json_object *o = json_object_array_get_idx(arr, i);
    char where[32];
    snprintf(where, sizeof where, "sources[%zu]", i);
    if (!json_object_is_type(o, json_type_object)) {
      dm_error_set(err, DM_ERR_STATE, NULL, "state: %s: %s is not an object", path, where);
      return -1;
    }
    const char *id = state_get_string(o, where, "source", path, err);
    const char *file = id ? state_get_string(o, where, "file", path, err) : NULL;
    const char *relay = file ? state_get_string(o, where, "relay", path, err) : NULL;
    if (!relay)
      return -1;
    dmh_expect_stage rs;
    if (state_parse_expect(relay, false, &rs) < 0) {
      dm_error_set(err, DM_ERR_STATE, NULL,
                   "state: %s: %s.relay is \"%s\"; it must be \"Running\" or \"Stopped\"", path,
                   where, relay);
      return -1;
    }
    for (int j = 0; j < st->n_sources; j++) {
      if (strcmp(st->sources[j].source_id, id) == 0) {
        dm_error_set(err, DM_ERR_STATE, NULL, "state: %s: source \"%s\" is listed twice (%s)", path,
                     id, where);
        return -1;
      }
    }
    bool enable;
    if (state_get_bool(o, where, "enable", true, &enable, path, err) < 0 ||
        dmh_state_add_source(st, id, file, rs, err) < 0)
      return -1;
    st->sources[st->n_sources - 1].disabled = !enable;
  }
  return 0;
}

static int state_parse_unit_paths(json_object *task, dmh_state_task *t, const char *where,
                                  const char *path, dm_error *err) {
  json_object *up = NULL;
  if (!json_object_object_get_ex(task, "unitPaths", &up))
    return 0;
  if (!json_object_is_type(up, json_type_object)) {
    dm_error_set(err, DM_ERR_STATE, NULL, "state: %s: %s.unitPaths is not an object", path, where);
    return -1;
  }
  json_object_object_foreach(up, key, val) {
    /* a kind's name (config.h: the built-in kinds, custom kinds of lower-case letters, digits and
     * '-'); relay is the source file's */
    bool name_ok = key[0] >= 'a' && key[0] <= 'z' && strlen(key) < DMH_KIND_NAME_MAX &&
                   strspn(key, "abcdefghijklmnopqrstuvwxyz0123456789-") == strlen(key);
    if (!name_ok || strcmp(key, "relay") == 0 || !json_object_is_type(val, json_type_string)) {
      dm_error_set(err, DM_ERR_STATE, NULL,
                   "state: %s: %s.unitPaths.%s: keys are unit kinds of the task (\"dump\", "
                   "\"load\", \"sync\", a custom kind) with a path string",
                   path, where, key);
      return -1;
    }
    if (dmh_unit_paths_set(&t->unit_paths, key, json_object_get_string(val), err) < 0)
      return -1;
  }
  return 0;
}

static int state_parse_tasks(json_object *arr, dmh_state *st, const char *path, dm_error *err) {
  for (size_t i = 0; arr && i < json_object_array_length(arr); i++) {
    json_object *o = json_object_array_get_idx(arr, i);
    char where[32];
    snprintf(where, sizeof where, "tasks[%zu]", i);
    if (!json_object_is_type(o, json_type_object)) {
      dm_error_set(err, DM_ERR_STATE, NULL, "state: %s: %s is not an object", path, where);
      return -1;
    }
    const char *name = state_get_string(o, where, "name", path, err);
    const char *file = name ? state_get_string(o, where, "file", path, err) : NULL;
    const char *stage = file ? state_get_string(o, where, "stage", path, err) : NULL;
    if (!stage)
      return -1;
    dmh_expect_stage ts;
    if (state_parse_expect(stage, true, &ts) < 0) {
      dm_error_set(err, DM_ERR_STATE, NULL,
                   "state: %s: %s.stage is \"%s\"; it must be \"Running\" or \"Paused\"", path,
                   where, stage);
      return -1;
    }
    for (int j = 0; j < st->n_tasks; j++) {
      if (strcmp(st->tasks[j].name, name) == 0) {
        dm_error_set(err, DM_ERR_STATE, NULL, "state: %s: task \"%s\" is listed twice (%s)", path,
                     name, where);
        return -1;
      }
    }
    if (dmh_state_add_task(st, name, file, ts, err) < 0)
      return -1;
    if (state_parse_unit_paths(o, &st->tasks[st->n_tasks - 1], where, path, err) < 0 ||
        state_get_bool(o, where, "pausedBySource", false, &st->tasks[st->n_tasks - 1].source_paused,
                       path, err) < 0 ||
        state_parse_start_pos(o, &st->tasks[st->n_tasks - 1], where, path, err) < 0)
      return -1;
  }
  return 0;
}

static int state_parse_worker(json_object *root, dmh_state *st, const char *path, dm_error *err) {
  json_object *w = NULL;
  if (!json_object_object_get_ex(root, "worker", &w))
    return 0; /* no worker entry: free */
  if (!json_object_is_type(w, json_type_object)) {
    dm_error_set(err, DM_ERR_STATE, NULL, "state: %s: \"worker\" is not an object", path);
    return -1;
  }
  const char *stage = state_get_string(w, "worker", "stage", path, err);
  const char *source = stage ? state_get_string(w, "worker", "source", path, err) : NULL;
  if (!source)
    return -1;
  dmh_worker_stage ws;
  if (dmh_worker_stage_parse(stage, &ws) < 0 || ws == DMH_WORKER_OFFLINE) {
    dm_error_set(err, DM_ERR_STATE, NULL,
                 "state: %s: worker.stage is \"%s\"; it must be \"free\", \"bound\" or \"relay\"",
                 path, stage);
    return -1;
  }
  if ((ws == DMH_WORKER_FREE) != (source[0] == '\0') || strlen(source) >= DMH_WORKER_SOURCE_MAX) {
    dm_error_set(err, DM_ERR_STATE, NULL,
                 "state: %s: worker.stage \"%s\" with worker.source \"%.64s\": a free worker has "
                 "no source, a bound or relay one has one",
                 path, stage, source);
    return -1;
  }
  st->worker.stage = ws;
  dm_strlcpy(st->worker.source, source, sizeof st->worker.source);
  return 0;
}

/* The worker binding and the sources' relays must tell the same story. */
static int state_check_consistent(const dmh_state *st, const char *path, dm_error *err) {
  for (int i = 0; i < st->n_sources; i++) {
    const dmh_state_source *s = &st->sources[i];
    bool bound = dmh_worker_bound_to(&st->worker, s->source_id);
    if (!bound) {
      dm_error_set(err, DM_ERR_STATE, NULL,
                   "state: %s: source \"%s\" is listed but the worker is %s%s%s; a worker binds "
                   "one source: fix worker.source or remove the source entry",
                   path, s->source_id, dmh_worker_stage_name(st->worker.stage),
                   st->worker.source[0] ? " to " : "", st->worker.source);
      return -1;
    }
    if ((s->relay == DMH_EXPECT_RUNNING) != (st->worker.stage == DMH_WORKER_RELAY)) {
      dm_error_set(err, DM_ERR_STATE, NULL,
                   "state: %s: source \"%s\" has relay %s but worker.stage is \"%s\"; make them "
                   "agree (relay Running <-> stage relay)",
                   path, s->source_id, dmh_expect_stage_name(s->relay),
                   dmh_worker_stage_name(st->worker.stage));
      return -1;
    }
  }
  if (st->worker.stage != DMH_WORKER_FREE && st->n_sources == 0) {
    dm_error_set(err, DM_ERR_STATE, NULL,
                 "state: %s: the worker is %s to source \"%s\", which is not in \"sources\"; add "
                 "the source entry or set the worker free",
                 path, dmh_worker_stage_name(st->worker.stage), st->worker.source);
    return -1;
  }
  return 0;
}

/* 1-based line and column of byte `off` in `text`. */
static void state_line_col(const char *text, size_t off, int *line, int *col) {
  *line = 1;
  *col = 1;
  for (size_t i = 0; i < off && text[i]; i++) {
    if (text[i] == '\n') {
      (*line)++;
      *col = 1;
    } else {
      (*col)++;
    }
  }
}

int dmh_state_load(const char *dir, dmh_state *st, dm_error *err) {
  dmh_state_init(st);
  char *path = dmh_state_path(dir, DMH_STATE_FILE);
  if (!path) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "state: out of memory loading %s", dir);
    return -1;
  }
  size_t len = 0;
  char *text = dmh_state_read_all(path, &len);
  if (!text) {
    if (errno == ENOENT) {
      free(path);
      return 0; /* first start */
    }
    dm_error_set(err, DM_ERR_STATE, strerror(errno), "state: cannot read %s", path);
    free(path);
    return -1;
  }
  int rc = -1;
  json_tokener *tok = json_tokener_new();
  json_object *root = tok ? json_tokener_parse_ex(tok, text, (int)len + 1) : NULL;
  size_t end = tok ? json_tokener_get_parse_end(tok) : 0;
  if (root) /* json-c stops after the first value: anything but blanks after it is damage */
    end += strspn(text + end, " \t\r\n");
  if (!root || json_tokener_get_error(tok) != json_tokener_success || end < len) {
    int line, col;
    state_line_col(text, end, &line, &col);
    const char *why = !tok                ? "out of memory"
                      : root && end < len ? "unexpected data after the JSON object"
                                          : json_tokener_error_desc(json_tokener_get_error(tok));
    dm_error_set(err, DM_ERR_STATE, why,
                 "state: %s:%d:%d is not valid JSON; restore the file from a backup, or move it "
                 "away to start with an empty state (sources and tasks must then be created "
                 "again)",
                 path, line, col);
    goto out;
  }
  if (!json_object_is_type(root, json_type_object)) {
    dm_error_set(err, DM_ERR_STATE, NULL, "state: %s: the top level is not a JSON object", path);
    goto out;
  }
  json_object *ver = NULL;
  if (!json_object_object_get_ex(root, "version", &ver) ||
      !json_object_is_type(ver, json_type_int) || json_object_get_int(ver) != DMH_STATE_VERSION) {
    dm_error_set(err, DM_ERR_STATE, NULL,
                 "state: %s: \"version\" is %s, this dmhost reads version %d; use the dmhost "
                 "that wrote it",
                 path, ver ? json_object_to_json_string(ver) : "missing", DMH_STATE_VERSION);
    goto out;
  }
  dm_error_set(err, DM_ERR_OK, NULL, "%s", "");
  json_object *srcs = state_get_array(root, "sources", path, err);
  if (!srcs && err->code)
    goto out;
  json_object *tasks = state_get_array(root, "tasks", path, err);
  if (!tasks && err->code)
    goto out;
  if (state_parse_worker(root, st, path, err) < 0 || state_parse_sources(srcs, st, path, err) < 0 ||
      state_parse_tasks(tasks, st, path, err) < 0 || state_check_consistent(st, path, err) < 0)
    goto out;
  rc = 0;
out:
  if (rc < 0)
    dmh_state_clear(st);
  json_object_put(root);
  if (tok)
    json_tokener_free(tok);
  free(text);
  free(path);
  return rc;
}
