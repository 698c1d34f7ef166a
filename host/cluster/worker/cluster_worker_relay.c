/* `dmhost worker`: where the relay of a source bound here anew starts (see cluster_worker.h,
 * cw_relay_start_text, and docs/cluster.md "Roles: worker"). */
#include "cluster_worker.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libconfig.h>
#include <mysql.h>

#include "config.h"
#include "dmhost/db.h"
#include "dmhost/position.h"
#include "dmhost/sdk.h"
#include "dmhost/task_meta.h"
#include "log.h"

/* The file of task `task`'s global sync checkpoint on `source` (its target's checkpoint table)
 * into out->name: 1, 0 when there is none (the task has not synced yet), -1 with err. */
static int cw_checkpoint_file(cw *w, const char *task, const char *text, const char *source,
                              dm_position *out, dm_error *err) {
  char *path = cw_write_config(w, "tasks", task, text, err);
  dmh_task_config *tc = NULL;
  /* text from etcd: submitted (config.h), as the registry loads it */
  dmh_cfg_trust trust = {.origin = DMH_CFG_SUBMITTED,
                         .secrets_dir = w->trust.real_secrets_dir,
                         .allow_unit_paths = w->trust.allow_submitted_unit_paths};
  if (!path || dmh_task_config_load_as(path, &trust, &tc, err) < 0) {
    free(path);
    return -1;
  }
  free(path);
  dm_db_connect_opts o = {.who = "worker (relay start)",
                          .side = DM_DB_TARGET,
                          .connect_timeout_s = 5,
                          .read_timeout_s = 30,
                          .write_timeout_s = 30,
                          .endpoint_size = (uint32_t)sizeof(dm_db_endpoint)};
  MYSQL *c = dm_db_connect(&tc->target.ep, &o, err);
  int rc = -1;
  if (!c)
    goto out;
  /* meta-schema has no '`' (config.c), task and source are cluster names ([A-Za-z0-9_.-]); the
   * table's name is the sync's (task_meta.h) */
  char q[512], cp[DM_META_NAME_MAX + 1];
  if (dm_task_meta_table_name(task, DM_META_SYNCER_CHECKPOINT, cp, sizeof cp) < 0) {
    rc = 0; /* a name too long for a table: the sync never made one */
    goto out;
  }
  snprintf(q, sizeof q,
           "SELECT binlog_name FROM `%s`.`%s` WHERE id = '%s' AND is_global = 1 "
           "AND binlog_name <> ''",
           tc->meta_schema, cp, source);
  if (mysql_query(c, q) != 0) {
    if (mysql_errno(c) == 1146 || mysql_errno(c) == 1049) /* no table or schema: not synced yet */
      rc = 0;
    else
      dm_db_error(c, DM_DB_TARGET, err, DM_ERR_DB_QUERY, "reading task %s's sync checkpoint", task);
    goto out;
  }
  MYSQL_RES *res = mysql_store_result(c);
  MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
  rc = 0;
  if (row && row[0]) {
    dm_strlcpy(out->name, row[0], sizeof out->name);
    rc = 1;
  }
  if (res)
    mysql_free_result(res);
out:
  if (c)
    mysql_close(c);
  dmh_task_config_free(tc);
  return rc;
}

/* `text` with relay.binlog-name = `file` (the relay group made when missing); NULL when the
 * text sets relay.binlog-name or binlog-gtid itself, or cannot be parsed here. */
static char *cw_text_with_start(const char *text, const char *file) {
  config_t cfg;
  config_init(&cfg);
  char *out = NULL;
  size_t len = 0;
  if (config_read_string(&cfg, text) != CONFIG_TRUE)
    goto out;
  config_setting_t *root = config_root_setting(&cfg);
  config_setting_t *g = config_setting_get_member(root, "relay");
  if (!g)
    g = config_setting_add(root, "relay", CONFIG_TYPE_GROUP);
  if (!g || !config_setting_is_group(g) || config_setting_get_member(g, "binlog-name") ||
      config_setting_get_member(g, "binlog-gtid"))
    goto out;
  config_setting_t *s = config_setting_add(g, "binlog-name", CONFIG_TYPE_STRING);
  if (!s || config_setting_set_string(s, file) != CONFIG_TRUE)
    goto out;
  FILE *f = open_memstream(&out, &len);
  if (!f)
    goto out;
  config_write(&cfg, f);
  if (fclose(f) != 0) {
    free(out);
    out = NULL;
  }
out:
  config_destroy(&cfg);
  return out;
}

char *cw_relay_start_text(cw *w, const char *source, const char *text, const cw_want *ws,
                          int n_ws) {
  dm_position first, p;
  memset(&first, 0, sizeof first);
  const char *from = NULL;
  for (int i = 0; i < n_ws; i++) {
    if (!ws[i].text)
      continue;
    dm_error err;
    memset(&p, 0, sizeof p);
    int rc = cw_checkpoint_file(w, ws[i].task, ws[i].text, source, &p, &err);
    if (rc < 0) {
      char what[256];
      snprintf(what, sizeof what,
               "source %s: task %s's sync checkpoint (the relay starts as the source file says)",
               source, ws[i].task);
      cw_log_error(DM_LOG_WARN, what, &err);
      return NULL; /* a start later than a task needs is worse than the file's default */
    }
    if (rc == 1 && (!from || dm_position_compare_file(&p, &first) < 0)) {
      first = p;
      from = ws[i].task;
    }
  }
  if (!from)
    return NULL;
  char *out = cw_text_with_start(text, first.name);
  if (out)
    dmh_log(DM_LOG_INFO, "worker",
            "source %s: its relay starts at %s, the earliest sync checkpoint's file (task %s)",
            source, first.name, from);
  else
    dmh_log(DM_LOG_INFO, "worker",
            "source %s: the source file sets the relay's start itself (or is not libconfig text "
            "here): kept; the earliest sync checkpoint is in %s (task %s)",
            source, first.name, from);
  return out;
}
