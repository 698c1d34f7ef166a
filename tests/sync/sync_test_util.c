/* Helpers of the sync unit's tests against the real pair (sync_test_util.h). */
#include "sync_test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmhost/fs.h"
#include "dmhost/relay_folder.h"
#include "dmhost/sdk.h"
#include "testdb.h"

static MYSQL *src, *dst;

void ts_init(MYSQL *source, MYSQL *target) {
  src = source;
  dst = target;
}

int ts_suite_open(MYSQL **source, MYSQL **target) {
  *source = lt_source();
  *target = lt_target();
  ts_init(*source, *target);
  return *source && *target ? 0 : -1;
}

void ts_suite_close(MYSQL **source, MYSQL **target) {
  testdb_close(*source);
  testdb_close(*target);
  *source = *target = NULL;
  ts_init(NULL, NULL);
}

/* The source's current position (file, pos, GTID). */
void ts_master(char *file, unsigned long *pos, char *gtid) {
  MYSQL_RES *r = NULL;
  if (mysql_query(src, "SHOW MASTER STATUS") == 0 && (r = mysql_store_result(src))) {
    MYSQL_ROW row = mysql_fetch_row(r);
    if (row) {
      dm_strlcpy(file, row[0], 256);
      *pos = strtoul(row[1], NULL, 10);
    }
    mysql_free_result(r);
  }
  if (gtid)
    testdb_query_value(src, gtid, 512, "SELECT @@GLOBAL.gtid_binlog_pos");
}

/* Waits until the task's global checkpoint row reached (file, pos). */
bool ts_wait_checkpoint(const char *task, const char *file, unsigned long pos, int timeout_ms) {
  double end = lt_now() + timeout_ms / 1000.0;
  char name[256];
  while (lt_now() < end) {
    long long p = -1;
    name[0] = '\0';
    if (testdb_query_value(dst, name, sizeof name,
                           "SELECT binlog_name FROM dm_meta.%s_syncer_checkpoint WHERE "
                           "is_global = 1",
                           task) == 0 &&
        testdb_query_int(dst, &p,
                         "SELECT binlog_pos FROM dm_meta.%s_syncer_checkpoint WHERE is_global = 1",
                         task) == 0) {
      int c = strcmp(name, file);
      if (c > 0 || (c == 0 && (unsigned long long)p >= pos))
        return true;
    }
    lt_sleep_ms(20);
  }
  fprintf(stderr, "checkpoint of %s did not reach %s:%lu (at %s)\n", task, file, pos, name);
  return false;
}

/* Source and target databases equal cell by cell. */
bool ts_equal(const char *db_src, const char *db_dst) {
  char diff[1024];
  int rc = testdb_compare_schemas(src, dst, db_src, db_dst, diff, sizeof diff);
  if (rc != 0)
    fprintf(stderr, "%s vs %s: %s\n", db_src, db_dst, diff);
  return rc == 0;
}

/* A task in mode incremental from the source's current position. */
int ts_config(lt_env *e, const char *task, const char *db, const char *extra_rules,
              const char *sync) {
  return ts_config_source(e, task, db, extra_rules, sync, NULL);
}

int ts_config_source(lt_env *e, const char *task, const char *db, const char *extra_rules,
                     const char *sync, const char *source_extra) {
  char bal[512];
  snprintf(bal, sizeof bal, "do-dbs = [\"%s\"];", db);
  return ts_config_bal(e, task, bal, extra_rules, sync, source_extra);
}

int ts_config_bal(lt_env *e, const char *task, const char *bal, const char *extra_rules,
                  const char *sync, const char *source_extra) {
  const char *inst = extra_rules && strstr(extra_rules, "route") ? "route-rules = [\"r\"];"
                     : extra_rules && strstr(extra_rules, "filters")
                         ? "filter-rules = [\"f1\", \"f2\"];"
                         : "";
  return ts_config_inst(e, task, bal, inst, extra_rules, sync, source_extra);
}

int ts_config_inst(lt_env *e, const char *task, const char *bal, const char *inst_rules,
                   const char *extra_rules, const char *sync, const char *source_extra) {
  char file[256] = "", inst[1024], extra[4096];
  unsigned long pos = 0;
  ts_master(file, &pos, NULL);
  snprintf(inst, sizeof inst,
           "block-allow-list = \"b\"; %s meta = { binlog-name = \"%s\"; binlog-pos = %lu; };",
           inst_rules ? inst_rules : "", file, pos);
  snprintf(extra, sizeof extra, "block-allow-list = { b = { %s }; };\n%s", bal,
           extra_rules ? extra_rules : "");
  lt_drop_checkpoint(dst, task);
  lt_exec(dst, "DROP TABLE IF EXISTS dm_meta.`%s_syncer_checkpoint`", task);
  lt_exec(dst, "DROP TABLE IF EXISTS dm_meta.`%s_syncer_xa`", task);
  lt_exec(dst, "DROP TABLE IF EXISTS dm_meta.`%s_validator_checkpoint`", task);
  lt_exec(dst, "DROP TABLE IF EXISTS dm_meta.`%s_validator_error_change`", task);
  lt_exec(dst, "DROP TABLE IF EXISTS dm_meta.`%s_validator_pending_change`", task);
  lt_task t = {.name = task,
               .mode = "incremental",
               .instance = inst,
               .extra = extra,
               .sync = sync ? sync : TS_SYNC,
               .source_extra = source_extra};
  return lt_config(e, &t);
}

dmh_subtask *ts_start(lt_env *e) {
  dmh_subtask *st = lt_subtask(e);
  dm_error err;
  if (!st || dmh_subtask_start(st, &err) != 0) {
    fprintf(stderr, "start: %s\n", st ? err.message : "create failed");
    return st;
  }
  double end = lt_now() + 20;
  while (dmh_subtask_stage(st) != DMH_STAGE_RUNNING && lt_now() < end)
    lt_sleep_ms(10);
  return st;
}

/* Everything written so far is applied (waits on the checkpoint). */
bool ts_catch_up(const char *task, int timeout_ms) {
  char file[256] = "";
  unsigned long pos = 0;
  ts_master(file, &pos, NULL);
  return ts_wait_checkpoint(task, file, pos, timeout_ms);
}

void ts_stop(dmh_subtask *st) {
  dm_error err;
  if (!st)
    return;
  dmh_subtask_stop(st, &err);
  dmh_subtask_destroy(st);
}

bool ts_clean_run(dmh_subtask *st) {
  char msg[1024] = "", raw[1024] = "";
  int code = lt_first_error(st, msg, sizeof msg, raw, sizeof raw, NULL);
  dmh_stage stage = dmh_subtask_stage(st);
  if (code || stage != DMH_STAGE_RUNNING)
    fprintf(stderr, "stage %d, error %d: %s / %s\n", (int)stage, code, msg, raw);
  return code == 0 && stage == DMH_STAGE_RUNNING;
}

/* The position "FILE:POS" an error message names ("the DDL at mysql-bin.000002:123 failed"). */
void ts_error_at(const char *msg, char *at, size_t len) {
  const char *p = strstr(msg, " at ");
  at[0] = '\0';
  if (p) {
    p += 4;
    size_t n = strcspn(p, " ");
    snprintf(at, len, "%.*s", (int)n, p);
  }
}

int ts_relay_folder(const char *dir, const char *uuid, char *sub, size_t len) {
  char relay[700], name[300];
  dm_error err;
  snprintf(relay, sizeof relay, "%s/relay", dir);
  if (dm_relay_index_add(relay, uuid, 0600, name, sizeof name, &err) < 0)
    return -1;
  snprintf(sub, len, "%s/%s", relay, name);
  return 0;
}
