/*
 * A master's api-objects task|source [NAME] (DM's GET /api/v1/tasks[/{task-name}] and
 * /api/v1/sources[/{source-name}]): the tasks and sources the cluster keeps in etcd as DM's Task
 * and Source objects, with DM's list filters. Each stored text is loaded as a worker loads it (its
 * sealed password opened with the cluster key, a key path in it refused): the same objects a
 * daemon answers for its own files (registry_api_objects.c), so the HTTP layer shapes both alike
 * (http_dm.c). with_status adds the master's own query-status NAME and operate-source show
 * answers. Any master answers, a follower too: it only reads etcd. Both passwords come back as
 * "******" (a Task's target by dmh_api_objects_task, a Source's as DM obfuscates it).
 * task-template OP [NAME]: DM's task templates at <p>/template/<name>, the Task kept with its
 * target password "******" (as every answer gives it: no secret reaches etcd), checked as sent text
 * first (dmh_control_task_json_check); import keeps every stored task's text as a Task.
 * cluster-info [update]: DM's cluster info kept at <p>/cluster-info (cluster_keys.h), as DM keeps
 * it in etcd; any master answers and writes it (no leadership needed: each write is a txn on what
 * it read).
 */
#include "master_internal.h"

#include <stdlib.h>
#include <string.h>

#include "config_openapi.h"
#include "dmhost/sdk.h"
#include "registry.h"
#include "secret.h"

/* The file is written under a temporary folder (dmh_control_file_from_text) and read with the
 * trust of submitted text, inside the cluster's scope of secrets. */
int master_ctl_stored_load(master_ctl *x, const dmh_etcd_kv *kv, const char *name, bool is_task,
                           dmh_task_config **task, dmh_source_config **source, dm_error *err) {
  char *text = NULL, file[DMH_CLUSTER_NAME_MAX + 8];
  if (dmh_cluster_config_parse(kv->value, kv->value_len, &text, err) < 0)
    return -1;
  snprintf(file, sizeof file, "%s.cfg", name);
  dmh_cfg_trust trust = {.origin = DMH_CFG_SUBMITTED,
                         .secrets_dir = x->m->secrets_dir,
                         .allow_unit_paths = x->m->allow_submitted_unit_paths};
  dmh_control_file f;
  dmh_secret_cluster_scope(1);
  int rc = dmh_control_file_from_text(file, text, false, &f, err);
  if (rc == 0)
    rc = is_task ? dmh_task_config_load_as(f.path, &trust, task, err)
                 : dmh_source_config_load_as(f.path, &trust, source, err);
  dmh_secret_cluster_scope(0);
  dmh_control_file_free(&f); /* the copy and its folder: also after a failed write */
  free(text);
  return rc < 0 ? -1 : 0;
}

/* Every stored key of `kind`, or the one of `name` (DM_ERR_NOT_FOUND when absent). */
static int mo_range(master_ctl *x, dmh_cluster_key_kind kind, const char *name, dmh_etcd_result *r,
                    dm_error *err) {
  if (!name)
    return master_range_kind(x->c, x->m, kind, 0, r, err);
  char key[DMH_CLUSTER_KEY_MAX];
  if (master_key(key, sizeof key, x->m, kind, name, NULL, NULL, err) < 0 ||
      dmh_etcd_range(x->c, DMH_ETCD_S(key), 0, 1, 0, r, err) < 0)
    return -1;
  if (r->n_kvs == 0) {
    dm_error_set(err, DM_ERR_NOT_FOUND, NULL,
                 "api-objects %s %s: no %s %s in the cluster; list them with `dmctl %s`",
                 kind == DMH_KEY_TASK ? "task" : "source", name,
                 kind == DMH_KEY_TASK ? "task" : "source", name,
                 kind == DMH_KEY_TASK ? "query-status" : "operate-source show");
    return -1;
  }
  return 0;
}

/* {"task", "status"?} of one stored task, NULL when a filter leaves it out (rc 0) or with *err
 * (*rc -1). */
static json_object *mo_task(master_ctl *x, const dmh_control_cmd *cmd, const dmh_etcd_kv *kv,
                            const dmh_api_objects_req *q, int *rc, dm_error *err) {
  char name[DMH_CLUSTER_NAME_MAX];
  if (dmh_cluster_key_parse(kv->key, kv->key_len, x->m->prefix, DMH_KEY_TASK, name, NULL, NULL) < 0)
    return NULL; /* not a task's key: none of ours */
  dmh_task_config *cfg = NULL;
  json_object *task = NULL, *status = NULL, *o = NULL;
  if (master_ctl_stored_load(x, kv, name, true, &cfg, NULL, err) < 0 ||
      !(task = dmh_api_objects_task(cfg, err))) {
    *rc = -1;
    goto out;
  }
  if (q->with_status || q->stage) {
    json_object *args = json_object_new_object();
    json_object_object_add(args, "name", json_object_new_string(name));
    status = json_object_new_object();
    dm_error e;
    int qrc = master_ctl_query_status(x, cmd, args, status, &e);
    json_object_put(args);
    if (qrc < 0) { /* stopped since listed: left out */
      json_object_put(status);
      status = NULL;
      goto out;
    }
  }
  if (!dmh_api_objects_task_kept(cfg, q, status))
    goto out;
  o = json_object_new_object();
  json_object_object_add(o, "task", task);
  task = NULL;
  if (status)
    json_object_object_add(o, "status", status);
  status = NULL;
out:
  json_object_put(task);
  json_object_put(status);
  dmh_task_config_free(cfg);
  return o;
}

static int mo_tasks(master_ctl *x, const dmh_control_cmd *cmd, const dmh_api_objects_req *q,
                    json_object *list, dm_error *err) {
  dmh_etcd_result r = {0};
  if (mo_range(x, DMH_KEY_TASK, q->name, &r, err) < 0) {
    dmh_etcd_result_free(&r);
    return -1;
  }
  int rc = 0;
  for (size_t i = 0; i < r.n_kvs && rc == 0; i++) {
    json_object *o = mo_task(x, cmd, &r.kvs[i], q, &rc, err);
    if (o)
      json_object_array_add(list, o);
  }
  dmh_etcd_result_free(&r);
  return rc;
}

/* The names of the stored tasks whose text reads `source`. */
static json_object *mo_tasks_of(master_ctl *x, const char *source, dm_error *err) {
  dmh_etcd_result r = {0};
  if (master_range_kind(x->c, x->m, DMH_KEY_TASK, 0, &r, err) < 0) {
    dmh_etcd_result_free(&r);
    return NULL;
  }
  json_object *names = json_object_new_array();
  for (size_t i = 0; i < r.n_kvs; i++) {
    char name[DMH_CLUSTER_NAME_MAX];
    dmh_task_config *cfg = NULL;
    dm_error e;
    if (dmh_cluster_key_parse(r.kvs[i].key, r.kvs[i].key_len, x->m->prefix, DMH_KEY_TASK, name,
                              NULL, NULL) < 0 ||
        master_ctl_stored_load(x, &r.kvs[i], name, true, &cfg, NULL, &e) < 0)
      continue; /* a text that does not load reads nothing here (query-status says why) */
    if (dmh_task_instance_for(cfg, source))
      json_object_array_add(names, json_object_new_string(name));
    dmh_task_config_free(cfg);
  }
  dmh_etcd_result_free(&r);
  return names;
}

/* {"source", "status"?, "tasks"?} of one stored source, NULL when the enable-relay filter leaves
 * it out (rc 0) or with *err (*rc -1). "enable": false while operate-source disable's flag
 * (<p>/disabled/<source>) is set. */
static json_object *mo_source(master_ctl *x, const master_snapshot *s, const dmh_etcd_kv *kv,
                              const dmh_api_objects_req *q, int *rc, dm_error *err) {
  char name[DMH_CLUSTER_NAME_MAX];
  if (dmh_cluster_key_parse(kv->key, kv->key_len, x->m->prefix, DMH_KEY_SOURCE, name, NULL, NULL) <
      0)
    return NULL;
  /* DM's enable_relay filter: the source has relay workers (a worker keeps its relay log) */
  bool relay = false;
  for (size_t i = 0; i < s->n_workers && !relay; i++)
    relay = s->workers[i].online && strcmp(s->workers[i].relay, name) == 0;
  if (q->has_enable_relay && q->enable_relay != relay)
    return NULL;
  dmh_source_config *cfg = NULL;
  json_object *src = NULL, *o = NULL;
  if (master_ctl_stored_load(x, kv, name, false, NULL, &cfg, err) < 0 ||
      !(src = dmh_openapi_source_from_config(cfg, err))) {
    *rc = -1;
    goto out;
  }
  dm_error de;
  int enabled = master_source_enabled(x, "api-objects", name, name, &de);
  if (enabled < 0 && de.code != DM_ERR_SOURCE_DISABLED) {
    *err = de;
    *rc = -1;
    goto out;
  }
  json_object_object_add(src, "enable", json_object_new_boolean(enabled == 0));
  o = json_object_new_object();
  json_object_object_add(o, "source", src);
  if (q->with_status) {
    json_object *show = json_object_new_object(), *arr = NULL, *names = NULL;
    if (master_ctl_source_show(x, name, show, err) < 0 || !(names = mo_tasks_of(x, name, err))) {
      json_object_put(show);
      json_object_put(o);
      o = NULL;
      *rc = -1;
      goto out;
    }
    if (json_object_object_get_ex(show, "sources", &arr) && json_object_array_length(arr) > 0)
      json_object_object_add(o, "status", json_object_get(json_object_array_get_idx(arr, 0)));
    json_object_object_add(o, "tasks", names);
    json_object_put(show);
  }
out:
  dmh_source_config_free(cfg);
  return o;
}

static int mo_sources(master_ctl *x, const dmh_api_objects_req *q, json_object *list,
                      dm_error *err) {
  dmh_etcd_result r = {0};
  master_snapshot s = {0};
  int rc = 0;
  if (mo_range(x, DMH_KEY_SOURCE, q->name, &r, err) < 0 ||
      master_snapshot_read(x->c, x->m, &s, err) < 0)
    rc = -1;
  for (size_t i = 0; rc == 0 && i < r.n_kvs; i++) {
    json_object *o = mo_source(x, &s, &r.kvs[i], q, &rc, err);
    if (o)
      json_object_array_add(list, o);
  }
  master_snapshot_free(&s);
  dmh_etcd_result_free(&r);
  return rc;
}

int master_ctl_api_objects(void *ud, const dmh_control_cmd *cmd, json_object *args,
                           json_object *resp, dm_error *err) {
  const char *only[DMH_CONTROL_MAX_LIST];
  dmh_api_objects_req q;
  if (dmh_control_api_objects_args(cmd, args, &q, only, err) < 0)
    return -1;
  json_object *list = json_object_new_array();
  json_object_object_add(resp, q.tasks ? "tasks" : "sources", list);
  return q.tasks ? mo_tasks(ud, cmd, &q, list, err) : mo_sources(ud, &q, list, err);
}

/* ---- cluster-info ---- */

/* <p>/cluster-info's info, made and created once when there is none (a txn on its absence: two
 * masters asked at once keep one id). *mod its revision. NULL with *err. */
static json_object *mo_info_read(master_ctl *x, const char *key, int64_t *mod, dm_error *err) {
  for (int attempt = 0; attempt < 5; attempt++) {
    dmh_etcd_result r = {0};
    if (dmh_etcd_range(x->c, DMH_ETCD_S(key), 0, 1, 0, &r, err) < 0)
      return NULL;
    if (r.n_kvs) {
      json_object *o = json_tokener_parse(r.kvs[0].value), *id = NULL;
      *mod = r.kvs[0].mod_revision;
      dmh_etcd_result_free(&r);
      if (!o || !json_object_object_get_ex(o, "cluster_id", &id) ||
          !json_object_is_type(id, json_type_int)) {
        json_object_put(o);
        dm_error_set(err, DM_ERR_STATE, NULL,
                     "cluster info: %s is not the JSON a master wrote: delete the key (a new id "
                     "is made)",
                     key);
        return NULL;
      }
      return o;
    }
    dmh_etcd_result_free(&r);
    json_object *o = dmh_cluster_info_new(err);
    if (!o)
      return NULL;
    const char *v = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
    dmh_etcd_cmp absent = {.key = DMH_ETCD_S(key),
                           .target = DMH_ETCD_CMP_CREATE,
                           .result = DMH_ETCD_EQUAL,
                           .number = 0};
    dmh_etcd_op put = {.kind = DMH_ETCD_PUT, .key = DMH_ETCD_S(key), .value = DMH_ETCD_S(v)};
    dmh_etcd_txn_result tr = {0};
    int rc = dmh_etcd_txn(x->c, &absent, 1, &put, 1, NULL, 0, &tr, err);
    dmh_etcd_txn_result_free(&tr);
    json_object_put(o);
    if (rc < 0)
      return NULL; /* made here or by another master: the next round reads the one kept */
  }
  dm_error_set(err, DM_ERR_STATE, NULL, "cluster info: %s changed under every read: retry", key);
  return NULL;
}

int master_ctl_cluster_info(void *ud, const dmh_control_cmd *cmd, json_object *args,
                            json_object *resp, dm_error *err) {
  master_ctl *x = ud;
  json_object *topology, *info = NULL;
  char key[DMH_CLUSTER_KEY_MAX];
  if (dmh_control_cluster_info_args(cmd, args, &topology, err) < 0)
    return -1;
  int rc = -1;
  if (master_key(key, sizeof key, x->m, DMH_KEY_CLUSTER_INFO, NULL, NULL, NULL, err) < 0)
    goto out;
  /* an update replaces the topology of the info it read, if nobody wrote it since (else again) */
  for (int attempt = 0; attempt < 5 && rc < 0; attempt++) {
    int64_t mod = 0;
    json_object_put(info);
    if (!(info = mo_info_read(x, key, &mod, err)))
      goto out;
    if (!topology) {
      rc = 0;
      break;
    }
    json_object_object_add(info, "topology", json_object_get(topology));
    const char *v = json_object_to_json_string_ext(info, JSON_C_TO_STRING_PLAIN);
    dmh_etcd_cmp same = {.key = DMH_ETCD_S(key),
                         .target = DMH_ETCD_CMP_MOD,
                         .result = DMH_ETCD_EQUAL,
                         .number = mod};
    dmh_etcd_op put = {.kind = DMH_ETCD_PUT, .key = DMH_ETCD_S(key), .value = DMH_ETCD_S(v)};
    dmh_etcd_txn_result tr = {0};
    if (dmh_etcd_txn(x->c, &same, 1, &put, 1, NULL, 0, &tr, err) < 0)
      goto out;
    rc = tr.succeeded ? 0 : -1;
    dmh_etcd_txn_result_free(&tr);
  }
  if (rc < 0) {
    dm_error_set(err, DM_ERR_STATE, NULL, "cluster info: %s changed under every update: retry",
                 key);
    goto out;
  }
  json_object_object_foreach(info, k, val) json_object_object_add(resp, k, json_object_get(val));
out:
  json_object_put(info);
  json_object_put(topology);
  return rc;
}

/* ---- task-template ---- */

/* The kept template `name` (NULL: none, *err unset; or with *err, rc -1). */
static json_object *mo_tpl_read(master_ctl *x, const char *name, int *rc, dm_error *err) {
  char key[DMH_CLUSTER_KEY_MAX];
  dmh_etcd_result r = {0};
  *rc = -1;
  if (master_key(key, sizeof key, x->m, DMH_KEY_TEMPLATE, name, NULL, NULL, err) < 0 ||
      dmh_etcd_range(x->c, DMH_ETCD_S(key), 0, 1, 0, &r, err) < 0)
    return NULL;
  json_object *o = r.n_kvs ? json_tokener_parse(r.kvs[0].value) : NULL;
  *rc = r.n_kvs && !o ? -1 : 0;
  if (*rc < 0)
    dm_error_set(err, DM_ERR_STATE, NULL,
                 "task template %s: %s is not JSON: delete it (DELETE /api/v1/tasks/templates/%s) "
                 "and create it again",
                 name, key, name);
  dmh_etcd_result_free(&r);
  return o;
}

/* create (overwrite: import's) or update: the Task checked (dmh_task_template_name, its name as
 * a key's, the Task as sent text) and kept, masked, by a txn on the key's absence (create) or
 * presence (update). */
static int mo_tpl_put(master_ctl *x, const char *name, json_object *task, bool create,
                      bool overwrite, dm_error *err) {
  const char *tname = dmh_task_template_name(name, task, err);
  char key[DMH_CLUSTER_KEY_MAX];
  if (!tname || master_key(key, sizeof key, x->m, DMH_KEY_TEMPLATE, tname, NULL, NULL, err) < 0)
    return -1;
  dmh_cfg_trust trust = {.origin = DMH_CFG_SUBMITTED,
                         .secrets_dir = x->m->secrets_dir,
                         .allow_unit_paths = x->m->allow_submitted_unit_paths};
  if (dmh_control_task_json_check(task, &trust, err) < 0)
    return -1;
  json_object *kept = dmh_task_template_masked(task);
  const char *v = json_object_to_json_string_ext(kept, JSON_C_TO_STRING_PLAIN);
  dmh_etcd_cmp cmp = {.key = DMH_ETCD_S(key),
                      .target = DMH_ETCD_CMP_CREATE,
                      .result = create ? DMH_ETCD_EQUAL : DMH_ETCD_GREATER,
                      .number = 0};
  dmh_etcd_op put = {.kind = DMH_ETCD_PUT, .key = DMH_ETCD_S(key), .value = DMH_ETCD_S(v)};
  dmh_etcd_txn_result tr = {0};
  int rc =
      dmh_etcd_txn(x->c, overwrite ? NULL : &cmp, overwrite ? 0 : 1, &put, 1, NULL, 0, &tr, err);
  if (rc == 0 && !tr.succeeded) {
    rc = -1;
    if (create) /* DM's ErrOpenAPITaskConfigExist */
      dm_error_set(err, DM_ERR_EXISTS, NULL,
                   "task config template with name %s already exists (delete it first, or "
                   "import with overwrite)",
                   tname);
    else /* DM's ErrOpenAPITaskConfigNotExist */
      dm_error_set(err, DM_ERR_NOT_FOUND, NULL,
                   "task config template with name %s not exists (create it first)", tname);
  }
  dmh_etcd_txn_result_free(&tr);
  json_object_put(kept);
  return rc;
}

/* import: every stored task's text as a Task, kept (replacing one of its name with overwrite). */
static int mo_tpl_import(master_ctl *x, bool overwrite, json_object *ok, json_object *failed,
                         dm_error *err) {
  dmh_etcd_result r = {0};
  if (master_range_kind(x->c, x->m, DMH_KEY_TASK, 0, &r, err) < 0) {
    dmh_etcd_result_free(&r);
    return -1;
  }
  for (size_t i = 0; i < r.n_kvs; i++) {
    char name[DMH_CLUSTER_NAME_MAX];
    if (dmh_cluster_key_parse(r.kvs[i].key, r.kvs[i].key_len, x->m->prefix, DMH_KEY_TASK, name,
                              NULL, NULL) < 0)
      continue;
    dm_error e = {0};
    dmh_task_config *cfg = NULL;
    json_object *task = master_ctl_stored_load(x, &r.kvs[i], name, true, &cfg, NULL, &e) == 0
                            ? dmh_openapi_task_from_config(cfg, &e)
                            : NULL;
    if (task && mo_tpl_put(x, NULL, task, true, overwrite, &e) == 0) {
      json_object_array_add(ok, json_object_new_string(name));
    } else {
      json_object *f = json_object_new_object();
      json_object_object_add(f, "task", json_object_new_string(name));
      json_object_object_add(f, "msg", json_object_new_string(e.message));
      json_object_array_add(failed, f);
    }
    json_object_put(task);
    dmh_task_config_free(cfg);
  }
  dmh_etcd_result_free(&r);
  return 0;
}

int master_ctl_task_template(void *ud, const dmh_control_cmd *cmd, json_object *args,
                             json_object *resp, dm_error *err) {
  master_ctl *x = ud;
  const char *op, *name;
  bool overwrite;
  json_object *task;
  if (dmh_control_template_args(cmd, args, &op, &name, &task, &overwrite, err) < 0)
    return -1;
  int rc = 0;
  if (strcmp(op, "create") == 0 || strcmp(op, "update") == 0) {
    bool create = op[0] == 'c';
    rc = mo_tpl_put(x, create ? NULL : name, task, create, false, err);
    if (rc == 0)
      json_object_object_add(resp, "template", dmh_task_template_masked(task));
  } else if (strcmp(op, "get") == 0) {
    json_object *t = mo_tpl_read(x, name, &rc, err);
    if (rc == 0 && !t) {
      dm_error_set(err, DM_ERR_NOT_FOUND, NULL,
                   "task config template with name %s not exists (GET /api/v1/tasks/templates "
                   "lists them)",
                   name);
      rc = -1;
    }
    if (t)
      json_object_object_add(resp, "template", t);
  } else if (strcmp(op, "delete") == 0) { /* DM's: deleting a missing one is no change */
    char key[DMH_CLUSTER_KEY_MAX];
    dmh_etcd_result r = {0};
    rc = master_key(key, sizeof key, x->m, DMH_KEY_TEMPLATE, name, NULL, NULL, err) < 0 ||
                 dmh_etcd_delete(x->c, DMH_ETCD_S(key), 0, &r, err) < 0
             ? -1
             : 0;
    dmh_etcd_result_free(&r);
  } else if (strcmp(op, "list") == 0) { /* etcd's range comes sorted by key: by name */
    json_object *list = json_object_new_array();
    json_object_object_add(resp, "templates", list);
    dmh_etcd_result r = {0};
    rc = master_range_kind(x->c, x->m, DMH_KEY_TEMPLATE, 0, &r, err);
    for (size_t i = 0; rc == 0 && i < r.n_kvs; i++) {
      json_object *t = json_tokener_parse(r.kvs[i].value);
      if (t)
        json_object_array_add(list, t);
    }
    dmh_etcd_result_free(&r);
  } else {
    json_object *ok = json_object_new_array(), *failed = json_object_new_array();
    json_object_object_add(resp, "success", ok);
    json_object_object_add(resp, "failed", failed);
    rc = mo_tpl_import(x, overwrite, ok, failed, err);
  }
  json_object_put(task);
  return rc;
}
