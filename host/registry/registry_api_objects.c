/* DM's OpenAPI Task and Source objects of the stored tasks and sources (registry.h,
 * dmh_registry_api_objects): DM's GET /api/v1/tasks[/{name}] and /api/v1/sources[/{name}]. The
 * objects come from the loaded configs (config_openapi.h), each with the status DM's with_status
 * adds, as the socket's answers say it (query-status, operate-source show): the HTTP layer shapes
 * those (http_dm.c). DM's list filters are applied here, as DM's listTask and listSource do. */
#include "registry_internal.h"

#include <string.h>

#include "config_openapi.h"
#include "dmhost/sdk.h"
#include "supervisor.h"

/* Every subtask of query-status's answer `qs` ("sources" [{"subTaskStatus": [{"stage"}]}]) is in
 * DM's TaskStage `stage` (DM's listTask: a task is left out when one is not; none: kept). */
static bool objs_stage_is(json_object *qs, const char *stage) {
  json_object *srcs = NULL;
  if (!json_object_object_get_ex(qs, "sources", &srcs))
    return true;
  for (size_t i = 0; i < json_object_array_length(srcs); i++) {
    json_object *subs = NULL;
    if (!json_object_object_get_ex(json_object_array_get_idx(srcs, i), "subTaskStatus", &subs))
      continue;
    for (size_t k = 0; k < json_object_array_length(subs); k++) {
      json_object *st = NULL;
      json_object_object_get_ex(json_object_array_get_idx(subs, k), "stage", &st);
      int s = dmh_stage_parse(json_object_get_string(st));
      if (strcmp(dmh_stage_dm_task_stage(s < 0 ? DMH_STAGE_STOPPED : (dmh_stage)s), stage) != 0)
        return false;
    }
  }
  return true;
}

/* The task reads exactly the sources only[n] (DM's source_name_list filter: as many, each one in
 * the list). */
static bool objs_sources_are(const dmh_task_config *c, const char *const *only, size_t n) {
  if ((size_t)c->n_instances != n)
    return false;
  for (int i = 0; i < c->n_instances; i++) {
    bool in = false;
    for (size_t k = 0; k < n && !in; k++)
      in = strcmp(c->instances[i].source_id, only[k]) == 0;
    if (!in)
      return false;
  }
  return true;
}

json_object *dmh_api_objects_task(const dmh_task_config *cfg, dm_error *err) {
  json_object *task = dmh_openapi_task_from_config(cfg, err);
  /* The target's password never leaves: the loaded one may come from a password-file, an
   * environment variable or a key the client never saw (get-config masks it the same way). DM
   * gives it back; a Task sent back with "******" is refused at the target's login, not used. */
  json_object *tc = NULL;
  if (task && json_object_object_get_ex(task, "target_config", &tc))
    json_object_object_add(tc, "password", json_object_new_string("******"));
  return task;
}

bool dmh_api_objects_task_kept(const dmh_task_config *cfg, const dmh_api_objects_req *q,
                               json_object *status) {
  if (q->n_sources && !objs_sources_are(cfg, q->sources, q->n_sources))
    return false;
  return !q->stage || (status && objs_stage_is(status, q->stage));
}

/* {"task": Task, "status": query-status NAME's answer} of t, or NULL when a filter leaves it out
 * (or with *err set: rc -1). */
static json_object *objs_task(dmh_registry *r, reg_task *t, const dmh_api_objects_req *q, int *rc,
                              dm_error *err) {
  pthread_mutex_lock(&r->lock);
  json_object *task = t->cfg ? dmh_api_objects_task(t->cfg, err) : NULL;
  bool sources_ok =
      !t->cfg || q->n_sources == 0 || objs_sources_are(t->cfg, q->sources, q->n_sources);
  bool no_cfg = !t->cfg;
  pthread_mutex_unlock(&r->lock);
  if (no_cfg) {
    dm_error_set(err, DM_ERR_STATE, NULL,
                 "task %s: its stored file could not be loaded (query-status %s says why)", t->name,
                 t->name);
    *rc = -1;
    return NULL;
  }
  if (!task) {
    *rc = -1;
    return NULL;
  }
  json_object *status = NULL;
  if (sources_ok && (q->with_status || q->stage)) {
    status = json_object_new_object();
    dm_error e;
    if (dmh_registry_query_status(r, t->name, status, &e) < 0) {
      json_object_put(status); /* gone since listed: left out */
      json_object_put(task);
      return NULL;
    }
  }
  if (!sources_ok || (q->stage && !objs_stage_is(status, q->stage))) {
    json_object_put(status);
    json_object_put(task);
    return NULL;
  }
  json_object *o = json_object_new_object();
  json_object_object_add(o, "task", task);
  if (status)
    json_object_object_add(o, "status", status);
  return o;
}

static int objs_tasks(dmh_registry *r, const dmh_api_objects_req *q, json_object *list,
                      dm_error *err) {
  int rc = 0;
  if (q->name) {
    reg_task *t = reg_get_task(r, "api-objects task", q->name, err);
    if (!t)
      return -1;
    json_object *o = objs_task(r, t, q, &rc, err);
    if (o)
      json_object_array_add(list, o);
    reg_task_unref(r, t);
    return rc;
  }
  int n = 0;
  reg_task **all = reg_all_tasks(r, &n);
  if (!all && n > 0)
    return reg_oom(err, "listing the tasks");
  for (int i = 0; i < n; i++) {
    json_object *o = rc == 0 ? objs_task(r, all[i], q, &rc, err) : NULL;
    if (o)
      json_object_array_add(list, o);
    reg_task_unref(r, all[i]);
  }
  free(all);
  return rc;
}

/* {"source": Source, "status": operate-source show's entry, "tasks": [names]} of the bound
 * source, or none when a filter leaves it out. */
static int objs_sources(dmh_registry *r, const dmh_api_objects_req *q, json_object *list,
                        dm_error *err) {
  reg_source *s = q->name ? reg_bound_source(r, "api-objects source", q->name, "", err)
                          : reg_get_source(r, NULL);
  if (!s)
    return q->name ? -1 : 0;
  int rc = -1;
  json_object *src = dmh_openapi_source_from_config(s->cfg, err), *show = NULL;
  if (!src)
    goto out;
  pthread_mutex_lock(&r->lock);
  bool enabled = !s->disabled;
  /* DM's enable_relay filter: the source has relay workers, i.e. start-relay took it */
  bool relay = s->relay_expect == DMH_EXPECT_RUNNING || s->relay_expect == DMH_EXPECT_PAUSED;
  pthread_mutex_unlock(&r->lock);
  json_object_object_add(src, "enable", json_object_new_boolean(enabled));
  if (q->has_enable_relay && q->enable_relay != relay) {
    rc = 0;
    goto out;
  }
  json_object *o = json_object_new_object();
  json_object_object_add(o, "source", src);
  src = NULL;
  if (q->with_status) {
    show = json_object_new_object();
    json_object *arr = NULL;
    if (dmh_registry_source_show(r, s->id, show, err) < 0) {
      json_object_put(o);
      goto out;
    }
    if (json_object_object_get_ex(show, "sources", &arr) && json_object_array_length(arr) > 0)
      json_object_object_add(o, "status", json_object_get(json_object_array_get_idx(arr, 0)));
    json_object *names = json_object_new_array();
    int n = 0;
    reg_task **all = reg_all_tasks(r, &n);
    for (int i = 0; all && i < n; i++) {
      pthread_mutex_lock(&r->lock);
      bool reads = all[i]->cfg && dmh_task_instance_for(all[i]->cfg, s->id);
      pthread_mutex_unlock(&r->lock);
      if (reads)
        json_object_array_add(names, json_object_new_string(all[i]->name));
      reg_task_unref(r, all[i]);
    }
    free(all);
    json_object_object_add(o, "tasks", names);
  }
  json_object_array_add(list, o);
  rc = 0;
out:
  json_object_put(src);
  json_object_put(show);
  reg_source_unref(r, s);
  return rc;
}

int dmh_registry_api_objects(dmh_registry *r, const dmh_api_objects_req *q, json_object *resp,
                             dm_error *err) {
  json_object *list = json_object_new_array();
  json_object_object_add(resp, q->tasks ? "tasks" : "sources", list);
  reg_add_worker(r, resp);
  return q->tasks ? objs_tasks(r, q, list, err) : objs_sources(r, q, list, err);
}
