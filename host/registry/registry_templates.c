/* DM's task templates (registry.h, dmh_registry_task_template): DM's Task objects kept by name in
 * <state>/templates/<name>.json, as DM keeps them in etcd (ha/openapi_task_config.go), for its
 * WebUI's "create a task from a template". */
#include "registry_internal.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config_openapi.h"
#include "dmhost/sdk.h"

#define TPL_DIR "templates"

/* <state>/templates/<name><suffix>, malloc'd. */
static char *tpl_path(dmh_registry *r, const char *name, const char *suffix) {
  return reg_printf("%s/" TPL_DIR "/%s%s", r->state_dir, name, suffix);
}

/* The Task as DM's YAML task file, loaded as sent text is: what DM's Adjust and converters
 * refuse, and what dmhost's loader refuses, is refused here before anything is kept. */
static int tpl_check(dmh_registry *r, const char *name, json_object *task, dm_error *err) {
  char *yaml = NULL, *path = tpl_path(r, ".check-", name);
  int rc = -1;
  if (!path) {
    reg_oom(err, "checking the template");
    goto out;
  }
  char *yp = reg_printf("%s.yaml", path), *dir = reg_printf("%s/" TPL_DIR, r->state_dir);
  free(path);
  path = yp;
  int made = dir ? dmh_state_mkdirs(dir, err) : reg_oom(err, "checking the template");
  free(dir);
  if (made < 0)
    goto out;
  if (!path || dmh_openapi_task_to_yaml(task, &yaml, err) < 0 ||
      dmh_state_write_file(path, yaml, strlen(yaml), err) < 0)
    goto out;
  dmh_cfg_trust trust = reg_trust(r, DMH_CFG_SUBMITTED);
  dmh_task_config *cfg = NULL;
  rc = dmh_task_config_load_as(path, &trust, &cfg, err);
  dmh_task_config_free(cfg);
out:
  dm_error ignored;
  if (path)
    dmh_state_remove_file(path, &ignored);
  free(path);
  free(yaml);
  return rc;
}

json_object *dmh_task_template_masked(json_object *task) {
  json_object *o = NULL, *tc = NULL;
  if (json_object_deep_copy(task, &o, NULL) != 0)
    return json_object_new_object();
  if (json_object_object_get_ex(o, "target_config", &tc) &&
      json_object_is_type(tc, json_type_object))
    json_object_object_add(tc, "password", json_object_new_string("******"));
  return o;
}

/* The kept template `name`, or NULL (*missing when there is none). */
static json_object *tpl_read(dmh_registry *r, const char *name, bool *missing, dm_error *err) {
  char *path = tpl_path(r, name, ".json");
  char *text = path ? dmh_state_read_all(path, NULL) : NULL;
  int e = errno;
  *missing = !text && e == ENOENT;
  json_object *o = text ? json_tokener_parse(text) : NULL;
  if (!o && !*missing)
    dm_error_set(err, DM_ERR_STATE, text ? NULL : strerror(e),
                 "task template %s: %s is not readable JSON: delete it (DELETE "
                 "/api/v1/tasks/templates/%s) and create it again",
                 name, path ? path : "its file", name);
  free(text);
  free(path);
  return o;
}

static int tpl_write(dmh_registry *r, const char *name, json_object *task, dm_error *err) {
  char *dir = reg_printf("%s/" TPL_DIR, r->state_dir), *path = tpl_path(r, name, ".json");
  const char *text = json_object_to_json_string_ext(task, JSON_C_TO_STRING_PRETTY |
                                                              JSON_C_TO_STRING_NOSLASHESCAPE);
  int rc = !dir || !path                    ? reg_oom(err, "writing the template")
           : dmh_state_mkdirs(dir, err) < 0 ? -1
                                            : dmh_state_write_file(path, text, strlen(text), err);
  free(dir);
  free(path);
  return rc;
}

const char *dmh_task_template_name(const char *name, json_object *task, dm_error *err) {
  json_object *n = NULL;
  const char *tname =
      json_object_object_get_ex(task, "name", &n) && json_object_is_type(n, json_type_string)
          ? json_object_get_string(n)
          : NULL;
  if (!tname) {
    dm_error_set(err, DM_ERR_CONTROL_REQUEST, NULL, "task template: the Task has no name");
    return NULL;
  }
  if (name && strcmp(name, tname) != 0) {
    dm_error_set(err, DM_ERR_CONTROL_REQUEST, NULL,
                 "task template %s: the Task's name is %s: a template is updated under its own "
                 "name",
                 name, tname);
    return NULL;
  }
  if (!json_object_object_get_ex(task, "meta_schema", NULL))
    json_object_object_add(task, "meta_schema", json_object_new_string("dm_meta"));
  return tname;
}

/* create/update: the Task checked (dmh_task_template_name, its name as a file's, the Task as a
 * task file) and kept. */
static int tpl_put(dmh_registry *r, const char *name, json_object *task, bool create,
                   bool overwrite, dm_error *err) {
  const char *tname = dmh_task_template_name(name, task, err);
  if (!tname || dmh_state_check_name("task name", tname, err) < 0)
    return -1;
  bool missing = false;
  json_object *old = tpl_read(r, tname, &missing, err);
  json_object_put(old);
  if (!old && !missing)
    return -1;
  if (create && !missing && !overwrite) { /* DM's ErrOpenAPITaskConfigExist */
    dm_error_set(err, DM_ERR_EXISTS, NULL,
                 "task config template with name %s already exists (delete it first, or "
                 "import with overwrite)",
                 tname);
    return -1;
  }
  if (!create && missing) { /* DM's ErrOpenAPITaskConfigNotExist */
    dm_error_set(err, DM_ERR_NOT_FOUND, NULL,
                 "task config template with name %s not exists (create it first)", tname);
    return -1;
  }
  if (tpl_check(r, tname, task, err) < 0)
    return -1;
  return tpl_write(r, tname, task, err);
}

static int tpl_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every kept template, by name. */
static int tpl_list(dmh_registry *r, json_object *list, dm_error *err) {
  char *dir = reg_printf("%s/" TPL_DIR, r->state_dir);
  DIR *d = dir ? opendir(dir) : NULL;
  free(dir);
  if (!d)
    return errno == ENOENT ? 0 : reg_oom(err, "listing the templates");
  char **names = NULL;
  size_t n = 0, cap = 0;
  int rc = 0;
  for (struct dirent *e; (e = readdir(d));) {
    size_t len = strlen(e->d_name);
    if (e->d_name[0] == '.' || len <= 5 || strcmp(e->d_name + len - 5, ".json") != 0)
      continue;
    if (n == cap) {
      char **g = realloc(names, sizeof *g * (cap = cap ? cap * 2 : 16));
      if (!g) {
        rc = reg_oom(err, "listing the templates");
        break;
      }
      names = g;
    }
    if (!(names[n] = strndup(e->d_name, len - 5))) {
      rc = reg_oom(err, "listing the templates");
      break;
    }
    n++;
  }
  closedir(d);
  if (rc == 0 && n)
    qsort(names, n, sizeof *names, tpl_cmp);
  for (size_t i = 0; i < n; i++) {
    bool missing = false;
    json_object *t = rc == 0 ? tpl_read(r, names[i], &missing, err) : NULL;
    if (t)
      json_object_array_add(list, dmh_task_template_masked(t));
    else if (rc == 0 && !missing)
      rc = -1;
    json_object_put(t);
    free(names[i]);
  }
  free(names);
  return rc;
}

/* import: every task's config as a Task, kept (replacing one of its name with overwrite). */
static void tpl_import(dmh_registry *r, bool overwrite, json_object *ok, json_object *failed) {
  int n = 0;
  reg_task **all = reg_all_tasks(r, &n);
  for (int i = 0; all && i < n; i++) {
    dm_error e = {0};
    pthread_mutex_lock(&r->lock);
    json_object *task = all[i]->cfg ? dmh_openapi_task_from_config(all[i]->cfg, &e) : NULL;
    pthread_mutex_unlock(&r->lock);
    if (!task && !e.message[0])
      dm_error_set(&e, DM_ERR_STATE, NULL, "task %s: its stored file could not be loaded",
                   all[i]->name);
    int rc = task ? tpl_put(r, NULL, task, true, overwrite, &e) : -1;
    if (rc == 0) {
      json_object_array_add(ok, json_object_new_string(all[i]->name));
    } else {
      json_object *f = json_object_new_object();
      json_object_object_add(f, "task", json_object_new_string(all[i]->name));
      json_object_object_add(f, "msg", json_object_new_string(e.message));
      json_object_array_add(failed, f);
    }
    json_object_put(task);
    reg_task_unref(r, all[i]);
  }
  free(all);
}

int dmh_registry_task_template(dmh_registry *r, const char *op, const char *name, json_object *task,
                               bool overwrite, json_object *resp, dm_error *err) {
  int rc = 0;
  pthread_mutex_lock(&r->files_lock);
  if (strcmp(op, "create") == 0 || strcmp(op, "update") == 0) {
    bool create = op[0] == 'c';
    rc = tpl_put(r, create ? NULL : name, task, create, false, err);
    if (rc == 0)
      json_object_object_add(resp, "template", dmh_task_template_masked(task));
  } else if (strcmp(op, "get") == 0) {
    bool missing = false;
    json_object *t =
        dmh_state_check_name("task name", name, err) < 0 ? NULL : tpl_read(r, name, &missing, err);
    if (!t && missing)
      dm_error_set(err, DM_ERR_NOT_FOUND, NULL,
                   "task config template with name %s not exists (GET /api/v1/tasks/templates "
                   "lists them)",
                   name);
    rc = t ? 0 : -1;
    if (t)
      json_object_object_add(resp, "template", dmh_task_template_masked(t));
    json_object_put(t);
  } else if (strcmp(op, "delete") == 0) { /* DM's: deleting a missing one is no change */
    char *path =
        dmh_state_check_name("task name", name, err) < 0 ? NULL : tpl_path(r, name, ".json");
    rc = path ? dmh_state_remove_file(path, err) : -1;
    free(path);
  } else if (strcmp(op, "list") == 0) {
    json_object *list = json_object_new_array();
    json_object_object_add(resp, "templates", list);
    rc = tpl_list(r, list, err);
  } else {
    json_object *ok = json_object_new_array(), *failed = json_object_new_array();
    json_object_object_add(resp, "success", ok);
    json_object_object_add(resp, "failed", failed);
    tpl_import(r, overwrite, ok, failed);
  }
  pthread_mutex_unlock(&r->files_lock);
  return rc;
}
