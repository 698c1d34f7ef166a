/*
 * DM's objects on a cluster's masters (master_objects.c), asked in the middle of test_master's
 * scheduling test, where their state is: t1 stored (reading src-a, paused and reported by w4, and
 * src-b), w2 keeping src-b's relay. Declared in master_util.h.
 */
#include "master_util.h"

#include <stdlib.h>
#include <string.h>

#include "cluster_keys.h"
#include "dmhost/sdk.h"

/* DM's GET /api/v1/tasks and /sources on a master (api-objects), asked of both masters: t1 (reading
 * src-a, paused and reported by w4, and src-b) and the two sources (w2 keeps src-b's relay) as DM's
 * Task and Source objects with DM's filters. A password sealed with the cluster key, loaded and
 * masked: cluster_dm_secret. */
void tm_api_objects(dmh_master *m, dmh_master *f) {
  json_object *r = tm_cmd(f, "api-objects", "{\"op\": \"task\"}");
  CU_ASSERT(tm_ok(r));
  CU_ASSERT(strstr(tm_text(r), "\"name\":\"t1\"") != NULL);
  CU_ASSERT(strstr(tm_text(r), "\"password\":\"******\"") != NULL);
  CU_ASSERT(strstr(tm_text(r), "\"status\"") == NULL);
  json_object_put(r);
  r = tm_cmd(m, "api-objects", "{\"op\": \"task\", \"name\": \"t1\", \"with-status\": true}");
  CU_ASSERT(tm_ok(r));
  CU_ASSERT(strstr(tm_text(r), "\"subTaskStatus\":[{\"name\":\"t1\",\"source\":\"src-a\","
                               "\"stage\":\"Paused\"") != NULL);
  json_object_put(r);
  /* DM's filters: every subtask in the stage; exactly the sources named */
  static const struct {
    const char *args;
    bool kept;
  } filters[] = {{"\"stage\": \"Paused\"", true},
                 {"\"stage\": \"Running\"", false},
                 {"\"source\": [\"src-a\"]", false},
                 {"\"source\": [\"src-b\", \"src-a\"]", true}};
  for (size_t i = 0; i < sizeof filters / sizeof filters[0]; i++) {
    r = tm_cmd(m, "api-objects", "{\"op\": \"task\", %s}", filters[i].args);
    CU_ASSERT(tm_ok(r));
    CU_ASSERT_EQUAL(strstr(tm_text(r), "\"name\":\"t1\"") != NULL, filters[i].kept);
    json_object_put(r);
  }
  r = tm_cmd(m, "api-objects", "{\"op\": \"task\", \"stage\": \"Bogus\"}");
  CU_ASSERT_EQUAL(tm_code(r), DM_ERR_CONTROL_REQUEST);
  json_object_put(r);
  r = tm_cmd(f, "api-objects", "{\"op\": \"task\", \"name\": \"nope\"}");
  CU_ASSERT_EQUAL(tm_code(r), DM_ERR_NOT_FOUND);
  json_object_put(r);
  /* the sources: both, enabled, password masked; with status, its worker and the tasks reading it */
  r = tm_cmd(f, "api-objects", "{\"op\": \"source\"}");
  CU_ASSERT(tm_ok(r));
  CU_ASSERT(strstr(tm_text(r), "\"source_name\":\"src-a\"") != NULL);
  CU_ASSERT(strstr(tm_text(r), "\"source_name\":\"src-b\"") != NULL);
  CU_ASSERT(strstr(tm_text(r), "\"enable\":true") != NULL);
  json_object_put(r);
  r = tm_cmd(m, "api-objects", "{\"op\": \"source\", \"name\": \"src-a\", \"with-status\": true}");
  CU_ASSERT(tm_ok(r));
  CU_ASSERT(strstr(tm_text(r), "\"status\":{\"result\":true,\"msg\":\"\",\"source\":\"src-a\","
                               "\"worker\":\"w4\"") != NULL);
  CU_ASSERT(strstr(tm_text(r), "\"tasks\":[\"t1\"]") != NULL);
  CU_ASSERT(strstr(tm_text(r), "src-b") == NULL);
  json_object_put(r);
  r = tm_cmd(m, "api-objects", "{\"op\": \"source\", \"enable-relay\": true}");
  CU_ASSERT(tm_ok(r));
  CU_ASSERT(strstr(tm_text(r), "\"source_name\":\"src-b\"") != NULL);
  CU_ASSERT(strstr(tm_text(r), "\"source_name\":\"src-a\"") == NULL);
  json_object_put(r);
  r = tm_cmd(m, "api-objects", "{\"op\": \"source\", \"name\": \"nope\"}");
  CU_ASSERT_EQUAL(tm_code(r), DM_ERR_NOT_FOUND);
  json_object_put(r);
}

/* DM's cluster info on a cluster: one id for every master, kept in etcd; an update's topology
 * checked against DM's schema, kept, and read back by the other master. */
void tm_cluster_info(dmh_etcd *c, const char *prefix, dmh_master *m, dmh_master *f) {
  char key[DMH_CLUSTER_KEY_MAX];
  dmh_cluster_key(key, sizeof key, prefix, DMH_KEY_CLUSTER_INFO, NULL, NULL, NULL);
  char *v = te_get(c, key, NULL);
  CU_ASSERT_PTR_NULL(v); /* precondition: none yet */
  free(v);
  json_object *r = tm_cmd(f, "cluster-info", "{}"), *id = NULL;
  CU_ASSERT(tm_ok(r) && json_object_object_get_ex(r, "cluster_id", &id));
  int64_t first = id ? json_object_get_int64(id) : 0;
  CU_ASSERT(first > 0);
  json_object_put(r);
  r = tm_cmd(m, "cluster-info", "{}");
  CU_ASSERT(tm_ok(r) && json_object_object_get_ex(r, "cluster_id", &id) &&
            json_object_get_int64(id) == first);
  CU_ASSERT(!json_object_object_get_ex(r, "topology", NULL));
  json_object_put(r);
  r = tm_cmd(m, "cluster-info",
             "{\"op\": \"update\", \"topology\": {\"master_topology_list\": [{\"name\": \"m1\", "
             "\"host\": \"10.0.0.1\", \"port\": 8261}], \"grafana_topology\": {\"host\": "
             "\"10.0.0.9\", \"port\": 3000}}}");
  CU_ASSERT(tm_ok(r));
  json_object_put(r);
  r = tm_cmd(f, "cluster-info", "{}");
  CU_ASSERT(tm_ok(r) && json_object_object_get_ex(r, "cluster_id", &id) &&
            json_object_get_int64(id) == first);
  CU_ASSERT(strstr(tm_text(r), "\"grafana_topology\":{\"host\":\"10.0.0.9\",\"port\":3000}") !=
            NULL);
  json_object_put(r);
  /* DM's schema: a member it does not have is refused naming it, nothing kept */
  r = tm_cmd(f, "cluster-info", "{\"op\": \"update\", \"topology\": {\"grafana\": 1}}");
  CU_ASSERT_FALSE(tm_ok(r));
  CU_ASSERT(strstr(tm_text(r), "grafana") != NULL);
  json_object_put(r);
  v = te_get(c, key, NULL);
  CU_ASSERT(v && strstr(v, "10.0.0.9") && !strstr(v, "\"grafana\":"));
  free(v);
}

/* DM's task templates on a cluster, t1 stored: import keeps its text as a Task (the target
 * password masked in etcd too), list and get from either master, a second import refused by name
 * (overwrite takes it), create of an existing name refused, update under its own name only,
 * delete (twice: no change), create again. */
void tm_templates(dmh_etcd *c, const char *prefix, dmh_master *m, dmh_master *f) {
  json_object *r = tm_cmd(f, "task-template", "{\"op\": \"import\"}");
  CU_ASSERT(tm_ok(r) && strstr(tm_text(r), "\"success\":[\"t1\"],\"failed\":[]") != NULL);
  json_object_put(r);
  char key[DMH_CLUSTER_KEY_MAX];
  dmh_cluster_key(key, sizeof key, prefix, DMH_KEY_TEMPLATE, "t1", NULL, NULL);
  char *v = te_get(c, key, NULL);
  CU_ASSERT(v && strstr(v, "\"name\":\"t1\"") && strstr(v, "\"password\":\"******\""));
  free(v);
  r = tm_cmd(m, "task-template", "{\"op\": \"list\"}");
  CU_ASSERT(tm_ok(r) && strstr(tm_text(r), "\"templates\":[{") && strstr(tm_text(r), "\"t1\""));
  json_object_put(r);
  r = tm_cmd(m, "task-template", "{\"op\": \"import\"}");
  CU_ASSERT(tm_ok(r) && strstr(tm_text(r), "\"success\":[]") &&
            strstr(tm_text(r), "task config template with name t1 already exists"));
  json_object_put(r);
  r = tm_cmd(m, "task-template", "{\"op\": \"import\", \"overwrite\": true}");
  CU_ASSERT(tm_ok(r) && strstr(tm_text(r), "\"success\":[\"t1\"]") != NULL);
  json_object_put(r);
  r = tm_cmd(f, "task-template", "{\"op\": \"get\", \"name\": \"t1\"}");
  json_object *tpl = NULL;
  CU_ASSERT_FATAL(tm_ok(r) && json_object_object_get_ex(r, "template", &tpl));
  tpl = json_object_get(tpl);
  json_object_put(r);
  const char *t = json_object_to_json_string_ext(tpl, JSON_C_TO_STRING_PLAIN);
  r = tm_cmd(m, "task-template", "{\"op\": \"create\", \"task\": %s}", t);
  CU_ASSERT_EQUAL(tm_code(r), DM_ERR_EXISTS);
  json_object_put(r);
  json_object_object_add(tpl, "meta_schema", json_object_new_string("tm_meta2"));
  t = json_object_to_json_string_ext(tpl, JSON_C_TO_STRING_PLAIN);
  r = tm_cmd(m, "task-template", "{\"op\": \"update\", \"name\": \"t9\", \"task\": %s}", t);
  CU_ASSERT_EQUAL(tm_code(r), DM_ERR_CONTROL_REQUEST); /* under its own name only */
  json_object_put(r);
  r = tm_cmd(m, "task-template", "{\"op\": \"update\", \"name\": \"t1\", \"task\": %s}", t);
  CU_ASSERT(tm_ok(r));
  json_object_put(r);
  r = tm_cmd(f, "task-template", "{\"op\": \"get\", \"name\": \"t1\"}");
  CU_ASSERT(tm_ok(r) && strstr(tm_text(r), "\"meta_schema\":\"tm_meta2\"") != NULL);
  json_object_put(r);
  for (int i = 0; i < 2; i++) { /* a missing one: no change (DM's) */
    r = tm_cmd(m, "task-template", "{\"op\": \"delete\", \"name\": \"t1\"}");
    CU_ASSERT(tm_ok(r));
    json_object_put(r);
  }
  r = tm_cmd(f, "task-template", "{\"op\": \"get\", \"name\": \"t1\"}");
  CU_ASSERT_EQUAL(tm_code(r), DM_ERR_NOT_FOUND);
  json_object_put(r);
  r = tm_cmd(m, "task-template", "{\"op\": \"update\", \"name\": \"t1\", \"task\": %s}", t);
  CU_ASSERT_EQUAL(tm_code(r), DM_ERR_NOT_FOUND);
  json_object_put(r);
  r = tm_cmd(m, "task-template", "{\"op\": \"create\", \"task\": %s}", t);
  CU_ASSERT(tm_ok(r));
  json_object_put(r);
  json_object_put(tpl);
  v = te_get(c, key, NULL);
  CU_ASSERT(v && strstr(v, "tm_meta2"));
  free(v);
}
