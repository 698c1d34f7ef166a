/*
 * operate-source update, disable and enable on a cluster's masters (master_source_ops.c), asked in
 * the middle of test_master's scheduling test, where their state is: t1 Running on src-a (bound to
 * w4) and src-b, w2 keeping src-b's relay. Declared in master_util.h.
 */
#include "master_util.h"
#include "test_etcd.h"
#include "test_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_keys.h"
#include "dmhost/sdk.h"

/* operate-source update|disable|enable on the masters (t1 Running on src-a and src-b, w2 keeping
 * src-b's relay): the leader decides, a follower without a forwarder names it; update refused
 * while a task on the source runs (or its relay), nothing written; disable pauses the source's
 * running subtasks and refuses start-task and resume-task there; update taken once paused;
 * enable resumes what the disable paused. */
void tm_source_ops(dmh_etcd *c, const char *prefix, dmh_master *m, dmh_master *f) {
  char key[DMH_CLUSTER_KEY_MAX], akey[DMH_CLUSTER_KEY_MAX], dkey[DMH_CLUSTER_KEY_MAX];
  char path[4096];
  json_object *r;
  char *v;
  dmh_cluster_key(key, sizeof key, prefix, DMH_KEY_SOURCE, "src-a", NULL, NULL);
  dmh_cluster_key(akey, sizeof akey, prefix, DMH_KEY_STAGE, "t1", "src-a", NULL);
  dmh_cluster_key(dkey, sizeof dkey, prefix, DMH_KEY_DISABLED, "src-a", NULL, NULL);
  dmh_test_writef(
      tm_dir, "src-a-new.cfg",
      "source-id = \"src-a\";\nenable-relay = false;\nserver-id = 4242;\n"
      "from = { host = \"127.0.0.1\"; port = 1; user = \"root\"; password = \"\"; };\n");
  snprintf(path, sizeof path, "%s/src-a-new.cfg", tm_dir);
  r = tm_cmd(f, "operate-source", "{\"op\": \"disable\", \"source\": \"src-a\"}");
  CU_ASSERT_EQUAL(tm_code(r), DM_ERR_CLUSTER_NOT_LEADER);
  json_object_put(r);
  r = tm_cmd(m, "operate-source", "{\"op\": \"update\", \"path\": \"%s\"}", path);
  CU_ASSERT_EQUAL(tm_code(r), DM_ERR_SOURCE_UPDATE_BUSY);
  CU_ASSERT(strstr(tm_text(r), "no tasks are running for now (Running: t1)") != NULL);
  json_object_put(r);
  r = tm_cmd(m, "operate-source", "{\"op\": \"update\", \"path\": \"%s\", \"source\": \"src-b\"}",
             path);
  CU_ASSERT_EQUAL(tm_code(r), DM_ERR_CONFIG_INVALID);
  json_object_put(r);
  v = te_get(c, key, NULL);
  CU_ASSERT(v && strstr(v, "server-id = 4242") == NULL); /* refused: nothing written */
  free(v);
  r = tm_cmd(m, "operate-source", "{\"op\": \"disable\", \"source\": \"src-a\"}");
  CU_ASSERT(tm_ok(r));
  CU_ASSERT(strstr(tm_text(r), "\"task\":\"t1\"") != NULL);
  json_object_put(r);
  v = te_get(c, akey, NULL);
  CU_ASSERT(v && strcmp(v, "Paused") == 0);
  free(v);
  v = te_get(c, dkey, NULL);
  CU_ASSERT(v && strstr(v, "\"t1\"") != NULL);
  free(v);
  r = tm_cmd(m, "operate-source", "{\"op\": \"disable\", \"source\": \"src-a\"}");
  CU_ASSERT(tm_ok(r) && strstr(tm_text(r), "\"tasks\":[]") != NULL); /* no change (DM's) */
  json_object_put(r);
  r = tm_cmd(f, "operate-source", "{\"op\": \"show\", \"source\": \"src-a\"}");
  CU_ASSERT(tm_ok(r) && strstr(tm_text(r), "\"enable\":false") != NULL);
  json_object_put(r);
  r = tm_cmd(f, "api-objects", "{\"op\": \"source\", \"name\": \"src-a\"}");
  CU_ASSERT(tm_ok(r) && strstr(tm_text(r), "\"enable\":false") != NULL);
  json_object_put(r);
  r = tm_cmd(m, "resume-task", "{\"name\": \"t1\"}");
  CU_ASSERT_EQUAL(tm_code(r), DM_ERR_SOURCE_DISABLED);
  CU_ASSERT(strstr(tm_text(r), "source: src-a is not enabled") != NULL);
  json_object_put(r);
  dmh_test_writef(tm_dir, "t5.cfg",
                  "name = \"t5\";\ntask-mode = \"all\";\nignore-checking-items = [\"all\"];\n"
                  "target-database = { host = \"127.0.0.1\"; port = 2; user = \"root\"; "
                  "password = \"\"; };\nmysql-instances = ( { source-id = \"src-a\"; } );\n");
  snprintf(path, sizeof path, "%s/t5.cfg", tm_dir);
  r = tm_cmd(m, "start-task", "{\"path\": \"%s\"}", path);
  CU_ASSERT_EQUAL(tm_code(r), DM_ERR_SOURCE_DISABLED);
  json_object_put(r);
  /* paused now, no relay: the update is taken */
  snprintf(path, sizeof path, "%s/src-a-new.cfg", tm_dir);
  r = tm_cmd(m, "operate-source", "{\"op\": \"update\", \"path\": \"%s\"}", path);
  CU_ASSERT(tm_ok(r));
  json_object_put(r);
  v = te_get(c, key, NULL);
  CU_ASSERT(v && strstr(v, "server-id = 4242") != NULL);
  free(v);
  /* src-b: its relay is kept by w2 (and t1 runs there) */
  snprintf(path, sizeof path, "%s/src-b.cfg", tm_dir);
  r = tm_cmd(m, "operate-source", "{\"op\": \"update\", \"path\": \"%s\"}", path);
  CU_ASSERT_EQUAL(tm_code(r), DM_ERR_SOURCE_UPDATE_BUSY);
  CU_ASSERT(strstr(tm_text(r), "its relay runs") != NULL);
  json_object_put(r);
  r = tm_cmd(m, "operate-source", "{\"op\": \"enable\", \"source\": \"src-a\"}");
  CU_ASSERT(tm_ok(r));
  CU_ASSERT(strstr(tm_text(r), "\"task\":\"t1\"") != NULL);
  json_object_put(r);
  v = te_get(c, akey, NULL);
  CU_ASSERT(v && strcmp(v, "Running") == 0);
  free(v);
  v = te_get(c, dkey, NULL);
  CU_ASSERT_PTR_NULL(v);
  free(v);
  r = tm_cmd(f, "operate-source", "{\"op\": \"show\", \"source\": \"src-a\"}");
  CU_ASSERT(tm_ok(r) && strstr(tm_text(r), "\"enable\":true") != NULL);
  json_object_put(r);
  r = tm_cmd(m, "operate-source", "{\"op\": \"enable\", \"source\": \"nope\"}");
  CU_ASSERT_EQUAL(tm_code(r), DM_ERR_NOT_FOUND);
  json_object_put(r);
}
