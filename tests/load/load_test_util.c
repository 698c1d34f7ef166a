#include "load_test_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dmhost/sdk.h"
#include "log.h"
#include "testdb.h"

double lt_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void lt_sleep_ms(int ms) {
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
    ;
}

int lt_suite_open(MYSQL **target, void (*clean)(void)) {
  *target = lt_target();
  if (!*target)
    return 1;
  clean();
  return 0;
}

int lt_suite_close(MYSQL **target, void (*clean)(void)) {
  if (*target)
    clean();
  testdb_close(*target);
  *target = NULL;
  return 0;
}

int lt_suite_close_account(MYSQL **source, MYSQL **target, void (*clean)(void), const char *db,
                           const char *user) {
  if (*source) {
    lt_exec(*source, "DROP DATABASE IF EXISTS `%s`", db);
    lt_account_drop(*source, user);
  }
  testdb_close(*source);
  *source = NULL;
  return lt_suite_close(target, clean);
}

void lt_drop_all(MYSQL *target, const char *const *dbs, size_t n_dbs, const char *const *tasks,
                 size_t n_tasks) {
  for (size_t i = 0; i < n_dbs; i++)
    lt_exec(target, "DROP DATABASE IF EXISTS `%s`", dbs[i]);
  for (size_t i = 0; i < n_tasks; i++)
    lt_drop_checkpoint(target, tasks[i]);
}

bool lt_has(const char *text, const char *part) {
  if (strstr(text, part))
    return true;
  fprintf(stderr, "'%.2000s' lacks '%s'\n", text, part);
  return false;
}

bool lt_lacks(const char *text, const char *part) {
  if (!strstr(text, part))
    return true;
  fprintf(stderr, "'%.2000s' holds '%s'\n", text, part);
  return false;
}

static int lt_write_path(const char *path, const char *text) {
  FILE *fp = fopen(path, "w");
  if (!fp)
    return -1;
  fputs(text, fp);
  return fclose(fp);
}

int lt_init(lt_env *e) {
  memset(e, 0, sizeof *e);
  snprintf(e->dir, sizeof e->dir, "/tmp/dmh-load-XXXXXX");
  if (!mkdtemp(e->dir))
    return -1;
  snprintf(e->work, sizeof e->work, "%s/work", e->dir);
  snprintf(e->dump_dir, sizeof e->dump_dir, "%s/dump-in", e->dir);
  return mkdir(e->dump_dir, 0755);
}

int lt_config(lt_env *e, const lt_task *t) {
  testdb_params src, dst;
  testdb_params_get(TESTDB_SOURCE, &src);
  testdb_params_get(TESTDB_TARGET, &dst);
  dmh_task_config_free(e->task);
  dmh_source_config_free(e->source);
  e->task = NULL;
  e->source = NULL;
  char path[512], text[16384], load[4096];
  snprintf(text, sizeof text,
           "source-id = \"lsrc\";\n"
           "from = { host = \"%s\"; port = %u; user = \"%s\"; password = \"%s\"; %s };\n%s\n",
           src.host, src.port, t->source_user ? t->source_user : src.user,
           t->source_password ? t->source_password : src.password,
           t->from_extra ? t->from_extra : "", t->source_extra ? t->source_extra : "");
  snprintf(path, sizeof path, "%s/source.cfg", e->dir);
  dm_error err;
  if (lt_write_path(path, text) < 0 || dmh_source_config_load(path, &e->source, &err) < 0) {
    fprintf(stderr, "source config: %s\n", err.message);
    return -1;
  }
  const char *mode = t->mode ? t->mode : "load";
  bool needs_dir = strcmp(mode, "load") == 0 && !(t->load && strstr(t->load, "dir ="));
  snprintf(load, sizeof load, "%s%s%s%s", needs_dir ? "dir = \"" : "", needs_dir ? e->dump_dir : "",
           needs_dir ? "\"; " : "", t->load ? t->load : "");
  snprintf(text, sizeof text,
           "name = \"%s\";\ntask-mode = \"%s\";\n"
           "target-database = { host = \"%s\"; port = %u; user = \"%s\"; password = \"%s\"; %s "
           "};\n"
           "mysql-instances = ( { source-id = \"lsrc\"; %s } );\n"
           "unit-paths = { dump = \"%s\"; load = \"%s\"; sync = \"%s\"; };\n"
           "supervisor = { %s };\n"
           "%s\nload = { %s };\n%s%s%s",
           t->name, mode, dst.host, t->target_port ? t->target_port : dst.port,
           t->target_user ? t->target_user : dst.user,
           t->target_password ? t->target_password : dst.password,
           t->target_extra ? t->target_extra : "", t->instance ? t->instance : "", DUMP_SO, LOAD_SO,
           SYNC_SO,
           t->supervisor
               ? t->supervisor
               : "init-timeout = 10; stop-timeout = 5; auto-resume = { enable = false; };",
           t->extra ? t->extra : "", load, t->sync ? "sync = { " : "", t->sync ? t->sync : "",
           t->sync ? " };\n" : "");
  snprintf(path, sizeof path, "%s/task.cfg", e->dir);
  if (lt_write_path(path, text) < 0 || dmh_task_config_load(path, &e->task, &err) < 0) {
    fprintf(stderr, "task config: %s\n%s\n", err.message, text);
    return -1;
  }
  return 0;
}

void lt_teardown(lt_env *e) {
  dmh_task_config_free(e->task);
  dmh_source_config_free(e->source);
  e->task = NULL;
  e->source = NULL;
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", e->dir);
  if (e->dir[0] && system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", e->dir);
}

int lt_write(lt_env *e, const char *name, const char *text) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", e->dump_dir, name);
  return lt_write_path(path, text);
}

int lt_write_metadata(lt_env *e, const char *log, unsigned long pos, const char *gtid) {
  char text[1024];
  snprintf(text, sizeof text,
           "Started dump at: 2026-11-30 03:59:01\nSHOW MASTER STATUS:\n\tLog: %s\n\tPos: %lu\n"
           "\tGTID:%s\n\nTABLES:\nFinished dump at: 2026-11-30 03:59:09\n",
           log, pos, gtid);
  return lt_write(e, "metadata", text);
}

dmh_subtask *lt_subtask(lt_env *e) {
  return lt_subtask_relay(e, NULL);
}

dmh_subtask *lt_subtask_relay(lt_env *e, dmh_subtask *relay) {
  dmh_subtask_opts o = {.task = e->task, .source = e->source, .work_root = e->work, .relay = relay};
  dm_error err;
  dmh_subtask *st = dmh_subtask_create(&o, &err);
  if (!st)
    fprintf(stderr, "create: %s\n", err.message);
  return st;
}

void lt_relay_settings(const lt_env *e, const char *more, char *out, size_t len) {
  /* A server-id of this process's own: every test's source is "lsrc", whose default id would be
   * the same in two tests running at once, and the source drops the older of two replicas with
   * one id (error 4052). */
  snprintf(out, len,
           "enable-relay = true;\nrelay-dir = \"%s/relay\";\nunit-paths = { relay = \"%s\"; };\n"
           "relay = { status-interval = 100; fsync = \"never\"; server-id = %ld; %s };\n",
           e->dir, RELAY_SO, 1000000L + (long)getpid(), more ? more : "");
}

dmh_subtask *lt_relay(lt_env *e) {
  char rwork[400];
  snprintf(rwork, sizeof rwork, "%s/relay-work", e->dir);
  dmh_subtask_opts ro = {.source = e->source, .work_root = rwork};
  dm_error err;
  dmh_subtask *relay = dmh_subtask_create_relay(&ro, &err);
  if (!relay)
    fprintf(stderr, "relay: %s\n", err.message);
  return relay;
}

dmh_stage lt_run(lt_env *e, dmh_subtask **out, int timeout_ms) {
  *out = lt_subtask(e);
  if (!*out)
    return DMH_STAGE_NEW;
  dm_error err;
  if (dmh_subtask_start(*out, &err) < 0)
    fprintf(stderr, "start: %s\n", err.message);
  return dmh_subtask_wait_settled(*out, timeout_ms);
}

char *lt_capture_stderr(void (*fn)(void *), void *arg) {
  char path[] = "/tmp/dmh-stderr-XXXXXX";
  fflush(stderr);
  int saved = dup(STDERR_FILENO), fd = mkstemp(path);
  if (fd >= 0)
    unlink(path);
  dm_log_level old = dmh_log_set_level(DM_LOG_DEBUG);
  if (saved >= 0 && fd >= 0)
    dup2(fd, STDERR_FILENO);
  fn(arg);
  fflush(stderr);
  if (saved >= 0) {
    dup2(saved, STDERR_FILENO);
    close(saved);
  }
  dmh_log_set_level(old);
  struct stat st;
  char *log = NULL;
  if (fd >= 0 && fstat(fd, &st) == 0 && (log = calloc(1, (size_t)st.st_size + 1)) != NULL &&
      pread(fd, log, (size_t)st.st_size, 0) < 0)
    log[0] = '\0';
  if (fd >= 0)
    close(fd);
  if (!log)
    log = calloc(1, 1);
  fputs(log ? log : "", stderr);
  return log;
}

typedef struct lt_run_args {
  lt_env *e;
  dmh_subtask **out;
  int timeout_ms;
  dmh_stage stage;
} lt_run_args;

static void lt_run_cb(void *p) {
  lt_run_args *a = p;
  a->stage = lt_run(a->e, a->out, a->timeout_ms);
}

dmh_stage lt_run_logged(lt_env *e, dmh_subtask **out, int timeout_ms, char **log) {
  lt_run_args a = {.e = e, .out = out, .timeout_ms = timeout_ms, .stage = DMH_STAGE_NEW};
  *log = lt_capture_stderr(lt_run_cb, &a);
  return a.stage;
}

/* The sync unit's status when the subtask has one (modes all, incremental), else the load's. */
static json_object *lt_unit_status(json_object *o) {
  json_object *v;
  if (json_object_object_get_ex(o, "syncStatus", &v) && v)
    return v;
  return json_object_object_get_ex(o, "loadStatus", &v) ? v : NULL;
}

long long lt_status_int(dmh_subtask *st, const char *key) {
  json_object *o = dmh_subtask_status_json(st), *u = lt_unit_status(o), *v;
  long long r = -1;
  if (u && json_object_object_get_ex(u, key, &v))
    r = (long long)json_object_get_int64(v);
  json_object_put(o);
  return r;
}

const char *lt_status_str(dmh_subtask *st, const char *key, char *buf, size_t len) {
  json_object *o = dmh_subtask_status_json(st), *u = lt_unit_status(o), *v;
  buf[0] = '\0';
  if (u && json_object_object_get_ex(u, key, &v) && v)
    dm_strlcpy(buf, json_object_get_string(v), len);
  json_object_put(o);
  return buf;
}

int lt_first_error(dmh_subtask *st, char *msg, size_t len, char *raw, size_t rlen,
                   bool *resumable) {
  json_object *o = dmh_subtask_status_json(st), *res, *errs, *v;
  int c = 0;
  if (msg)
    msg[0] = '\0';
  if (raw)
    raw[0] = '\0';
  if (resumable)
    *resumable = false;
  if (json_object_object_get_ex(o, "result", &res) && res &&
      json_object_object_get_ex(res, "errors", &errs) && json_object_array_length(errs) > 0) {
    json_object *e = json_object_array_get_idx(errs, 0);
    if (json_object_object_get_ex(e, "ErrCode", &v))
      c = json_object_get_int(v);
    if (msg && json_object_object_get_ex(e, "Message", &v))
      dm_strlcpy(msg, json_object_get_string(v), len);
    if (raw && json_object_object_get_ex(e, "RawCause", &v))
      dm_strlcpy(raw, json_object_get_string(v), rlen);
    if (resumable && json_object_object_get_ex(e, "Resumable", &v))
      *resumable = json_object_get_boolean(v);
  }
  json_object_put(o);
  return c;
}

bool lt_wait_bytes(dmh_subtask *st, long long bytes, int timeout_ms) {
  double end = lt_now() + timeout_ms / 1000.0;
  while (lt_now() < end) {
    if (lt_status_int(st, "finishedBytes") >= bytes)
      return true;
    dmh_stage s = dmh_subtask_stage(st);
    if (s == DMH_STAGE_FINISHED || s == DMH_STAGE_STOPPED)
      return false;
    lt_sleep_ms(1);
  }
  return false;
}

MYSQL *lt_source(void) {
  return testdb_connect(TESTDB_SOURCE);
}

MYSQL *lt_target(void) {
  return testdb_connect(TESTDB_TARGET);
}

int lt_exec(MYSQL *m, const char *fmt, ...) {
  char *sql = NULL;
  va_list ap;
  va_start(ap, fmt);
  int n = vasprintf(&sql, fmt, ap);
  va_end(ap);
  if (n < 0)
    return -1;
  int rc = testdb_exec(m, sql);
  free(sql);
  return rc;
}

int lt_exec_unlogged(MYSQL *m, const char *fmt, ...) {
  char *sql = NULL;
  va_list ap;
  va_start(ap, fmt);
  int n = vasprintf(&sql, fmt, ap);
  va_end(ap);
  if (n < 0)
    return -1;
  int rc = testdb_exec(m, "SET sql_log_bin = 0") || testdb_exec(m, sql) ||
                   testdb_exec(m, "SET sql_log_bin = 1")
               ? -1
               : 0;
  free(sql);
  return rc;
}

int lt_account(MYSQL *m, const char *user, const char *password, const char *grants) {
  return lt_exec_unlogged(m, "DROP USER IF EXISTS '%s'@'127.0.0.1'", user) ||
                 lt_exec_unlogged(m, "CREATE USER '%s'@'127.0.0.1' IDENTIFIED BY '%s'", user,
                                  password) ||
                 lt_exec_unlogged(m, "GRANT %s TO '%s'@'127.0.0.1'", grants, user)
             ? -1
             : 0;
}

void lt_account_drop(MYSQL *m, const char *user) {
  lt_exec_unlogged(m, "DROP USER IF EXISTS '%s'@'127.0.0.1'", user);
}

long long lt_count(MYSQL *m, const char *fmt, ...) {
  char *sql = NULL;
  va_list ap;
  va_start(ap, fmt);
  int n = vasprintf(&sql, fmt, ap);
  va_end(ap);
  if (n < 0)
    return -1;
  long long v = -1;
  if (testdb_query_int(m, &v, "%s", sql) < 0)
    v = -1;
  free(sql);
  return v;
}

void lt_drop_checkpoint(MYSQL *target, const char *task) {
  lt_exec(target, "DROP TABLE IF EXISTS dm_meta.`%s_loader_checkpoint`", task);
  lt_exec(target, "DROP TABLE IF EXISTS dm_meta.`%s_loader_keys`", task);
}

/* SHOW CREATE TABLE without the AUTO_INCREMENT=N table option (the next value, not the shape). */
static int lt_show_create(MYSQL *m, const char *db, const char *table, char *out, size_t len) {
  char q[512];
  snprintf(q, sizeof q, "SHOW CREATE TABLE `%s`.`%s`", db, table);
  MYSQL_RES *r = NULL;
  MYSQL_ROW row;
  if (mysql_query(m, q) != 0 || !(r = mysql_store_result(m)) || !(row = mysql_fetch_row(r)) ||
      !row[1]) {
    snprintf(out, len, "(%s: %s)", q, mysql_error(m));
    if (r)
      mysql_free_result(r);
    return -1;
  }
  snprintf(out, len, "%s", row[1]);
  mysql_free_result(r);
  char *a = strstr(out, " AUTO_INCREMENT=");
  if (a) {
    char *e = a + 16;
    while (*e >= '0' && *e <= '9')
      e++;
    memmove(a, e, strlen(e) + 1);
  }
  return 0;
}

bool lt_same_create(MYSQL *a, const char *db_a, MYSQL *b, const char *db_b, const char *table) {
  char x[8192], y[8192];
  int ra = lt_show_create(a, db_a, table, x, sizeof x);
  int rb = lt_show_create(b, db_b, table, y, sizeof y);
  if (ra == 0 && rb == 0 && strcmp(x, y) == 0)
    return true;
  fprintf(stderr, "SHOW CREATE TABLE of %s.%s and %s.%s differ:\n%s\n---\n%s\n", db_a, table, db_b,
          table, x, y);
  return false;
}
