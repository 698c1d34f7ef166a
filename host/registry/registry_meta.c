/*
 * remove-meta (DM's removeMetaData, keep_meta=false): what a task keeps behind when it is stopped,
 * dropped so that a task started again under its name starts from scratch: its tables in the
 * target's meta-schema and the sync's tracker schemas (the SDK names both: task_meta.h, so exactly
 * the task's own go, never another task's), and its work folders in the state dir (the dump's
 * files: a dump unit that finds them is not fresh).
 */
#include "registry_internal.h"

#include <mysql.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmhost/db.h"
#include "dmhost/sdk.h"
#include "dmhost/task_meta.h"
#include "log.h"

/* Drop `what` (a quoted `db`.`t` or `db`); logged with the task's name. */
static int meta_drop(MYSQL *c, const char *task, const char *kind, const char *what,
                     dm_error *err) {
  char q[512];
  snprintf(q, sizeof q, "DROP %s IF EXISTS %s", kind, what);
  if (mysql_query(c, q) != 0) {
    dm_db_error(c, DM_DB_TARGET, err, DM_ERR_DB_QUERY, "remove-meta of task %s: %s", task, q);
    return -1;
  }
  dmh_log(DM_LOG_INFO, "registry", "remove-meta of task %s: %s", task, q);
  return 0;
}

/* The tracker's shadow schemas of (task, source): those whose name opens with its prefix. */
static int meta_drop_tracker(MYSQL *c, const char *task, const char *source, int *dropped,
                             dm_error *err) {
  char prefix[DM_TRACKER_PREFIX_LEN + 1], q[256];
  if (dm_tracker_schema_prefix(task, source, prefix, sizeof prefix) < 0) {
    dm_error_set(err, DM_ERR_CONFIG_INVALID, NULL,
                 "remove-meta of task %s: the task and source names (%s) are too long", task,
                 source);
    return -1;
  }
  /* the prefix is [_a-z0-9]: no quoting needed; LEFT, not LIKE, whose '_' is a wildcard */
  snprintf(q, sizeof q,
           "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE LEFT(SCHEMA_NAME, %d) = '%s'",
           DM_TRACKER_PREFIX_LEN, prefix);
  MYSQL_RES *res = mysql_query(c, q) == 0 ? mysql_store_result(c) : NULL;
  if (!res) {
    dm_db_error(c, DM_DB_TARGET, err, DM_ERR_DB_QUERY,
                "remove-meta of task %s: listing the tracker's schemas", task);
    return -1;
  }
  int rc = 0;
  MYSQL_ROW row;
  while (rc == 0 && (row = mysql_fetch_row(res))) {
    char qs[2 * DM_META_NAME_MAX + 3];
    if (!row[0] || strlen(row[0]) > DM_META_NAME_MAX)
      continue;
    rc = meta_drop(c, task, "DATABASE", dm_db_quoted(row[0], qs, sizeof qs), err);
    *dropped += rc == 0;
  }
  mysql_free_result(res);
  return rc;
}

int reg_remove_meta(dmh_registry *r, const dmh_task_config *cfg, json_object *resp, dm_error *err) {
  dm_db_connect_opts o = {.who = "remove-meta",
                          .side = DM_DB_TARGET,
                          .connect_timeout_s = 10,
                          .read_timeout_s = 60,
                          .write_timeout_s = 60,
                          .endpoint_size = (uint32_t)sizeof(dm_db_endpoint)};
  MYSQL *c = dm_db_connect(&cfg->target.ep, &o, err);
  if (!c)
    return -1;
  int rc = 0, tables = 0, schemas = 0;
  char qm[2 * DM_META_NAME_MAX + 3];
  dm_db_quoted(cfg->meta_schema, qm, sizeof qm);
  for (int i = 0; rc == 0 && i < DM_META_TABLE_COUNT; i++) {
    char name[DM_META_NAME_MAX + 1], qt[2 * DM_META_NAME_MAX + 3], what[5 * DM_META_NAME_MAX];
    if (dm_task_meta_table_name(cfg->name, (dm_task_meta_table)i, name, sizeof name) < 0)
      continue; /* longer than a table name: never created */
    snprintf(what, sizeof what, "%s.%s", qm, dm_db_quoted(name, qt, sizeof qt));
    rc = meta_drop(c, cfg->name, "TABLE", what, err);
    tables += rc == 0;
  }
  for (int i = 0; rc == 0 && i < cfg->n_instances; i++)
    rc = meta_drop_tracker(c, cfg->name, cfg->instances[i].source_id, &schemas, err);
  mysql_close(c);
  if (rc < 0)
    return -1;
  /* the work folders: <state>/tasks/<task>/<source> of each source (the task's file copy, in
   * <state>/tasks/<task>, is not touched) */
  for (int i = 0; i < cfg->n_instances; i++) {
    char *root = dmh_state_task_work_root(r->state_dir, cfg->name, cfg->instances[i].source_id);
    if (!root)
      return reg_oom(err, "removing the task's meta");
    rc = dmh_state_remove_tree(root, err);
    free(root);
    if (rc < 0)
      return -1;
  }
  json_object *m = json_object_new_object();
  json_object_object_add(m, "metaSchema", json_object_new_string(cfg->meta_schema));
  json_object_object_add(m, "tables", json_object_new_int(tables));
  json_object_object_add(m, "trackerSchemas", json_object_new_int(schemas));
  json_object_object_add(resp, "removedMeta", m);
  return 0;
}
