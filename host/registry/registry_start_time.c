/* start-task --start-time (DM's; registry.h, dmh_task_opts.start_time): where an incremental
 * task's sync starts, found on the bound source by time (dmhost/binlog_find.h), then given to the
 * sync as the task's meta. DM keeps the time in etcd until the sync's first checkpoint; here the
 * position found is kept with the task (state.json), so a restart before the sync's first
 * checkpoint starts at the same place, and a sync with a checkpoint goes on from it (the meta of
 * a task file is read only by a fresh sync). */
#include "registry_internal.h"

#include <mysql.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dmhost/binlog_find.h"
#include "dmhost/db.h"
#include "dmhost/sdk.h"
#include "log.h"

/* A server id for the finder's short binlog dumps: one a replica of the source is unlikely to
 * have (a second dump with a replica's id disconnects that replica, error 4052), random above the
 * 4,000,000,000 that dmhost's derived ids (dmh_source_default_server_id) stay below. */
static uint32_t st_server_id(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint32_t r = ((uint32_t)getpid() * 2654435761u) ^ (uint32_t)ts.tv_nsec;
  return 4000000001u + r % (UINT32_MAX - 4000000001u);
}

int dmh_registry_start_time_find(const dmh_task_config *cfg, const char *source_id,
                                 const dm_db_endpoint *ep, const char *cmd, const char *start_time,
                                 dm_position *out, json_object *resp, dm_error *err) {
  if (cfg->mode != DMH_MODE_INCREMENTAL) {
    dm_error_set(err, DM_ERR_CONTROL_REQUEST, NULL,
                 "%s %s --start-time: the task is task-mode %s; --start-time sets where an "
                 "incremental task's sync starts (a sync after a dump starts where the dump "
                 "ended): use task-mode incremental",
                 cmd, cfg->name, dmh_task_mode_name(cfg->mode));
    return -1;
  }
  dm_db_connect_opts o = {.who = "--start-time",
                          .side = DM_DB_SOURCE,
                          .connect_timeout_s = 10,
                          .read_timeout_s = 60,
                          .write_timeout_s = 30,
                          .endpoint_size = (uint32_t)sizeof(dm_db_endpoint)};
  MYSQL *c = dm_db_connect(ep, &o, err);
  if (!c)
    return -1;
  int64_t at;
  dm_binlog_time_where where;
  dm_binlog_stream_options so = {.source = ep,
                                 .server_id = st_server_id(),
                                 .connect_timeout_s = 10,
                                 .read_timeout_s = 60,
                                 .omit_annotate_rows = true,
                                 .source_size = (uint32_t)sizeof(dm_db_endpoint)};
  int rc = -1;
  if (dm_binlog_parse_start_time(c, start_time, &at, err) < 0 ||
      dm_binlog_find_by_time(c, &so, at, out, &where, err) < 0)
    goto out;
  char when[64] = "";
  time_t t = (time_t)at;
  struct tm tm;
  strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
  if (where == DM_BINLOG_TIME_AFTER) {
    dm_error_set(err, DM_ERR_CONFIG_START_TIME, NULL,
                 "%s %s --start-time %s (%s): source %s has no transaction that began "
                 "then or later (its binlog ends at %s:%llu)",
                 cmd, cfg->name, start_time, when, source_id, out->name,
                 (unsigned long long)out->pos);
    goto out;
  }
  char msg[512];
  snprintf(msg, sizeof msg,
           where == DM_BINLOG_TIME_BEFORE
               ? "--start-time %s (%s) is before source %s's oldest binlog: the sync starts at "
                 "its start, %s:%llu (GTID %s)"
               : "--start-time %s (%s): source %s's sync starts at %s:%llu (GTID %s)",
           start_time, when, source_id, out->name, (unsigned long long)out->pos,
           out->gtid[0] ? out->gtid : "none");
  dmh_log(where == DM_BINLOG_TIME_BEFORE ? DM_LOG_WARN : DM_LOG_INFO, "registry", "task %s: %s",
          cfg->name, msg);
  json_object_object_add(resp, "msg", json_object_new_string(msg));
  rc = 0;
out:
  mysql_close(c);
  return rc;
}

int reg_start_time_apply(dmh_task_config *cfg, const char *source_id, const dm_position *p,
                         dm_error *err) {
  if (!p->name[0] || !source_id)
    return 0;
  for (int i = 0; i < cfg->n_instances; i++) {
    dmh_task_instance *in = &cfg->instances[i];
    if (strcmp(in->source_id, source_id) != 0)
      continue;
    char *name = strdup(p->name), *gtid = p->gtid[0] ? strdup(p->gtid) : NULL;
    if (!name || (p->gtid[0] && !gtid)) {
      free(name);
      free(gtid);
      return reg_oom(err, "applying --start-time");
    }
    free(in->meta_binlog_name);
    free(in->meta_binlog_gtid);
    in->meta_binlog_name = name;
    in->meta_binlog_pos = p->pos;
    in->meta_binlog_gtid = gtid;
  }
  return 0;
}
