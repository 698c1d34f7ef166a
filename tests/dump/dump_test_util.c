#include "dump_test_util.h"

#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dmhost/sdk.h"

double dt_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void dt_sleep_ms(int ms) {
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
    ;
}

static int dt_env_port(const char *var, int def) {
  const char *v = getenv(var);
  return v && *v ? atoi(v) : def;
}

int dt_source_port(void) {
  return dt_env_port("DMH_SOURCE_PORT", 13306);
}
int dt_target_port(void) {
  return dt_env_port("DMH_TARGET_PORT", 13307);
}

static int dt_write(const char *path, const char *text) {
  FILE *fp = fopen(path, "w");
  if (!fp)
    return -1;
  fputs(text, fp);
  return fclose(fp);
}

int dt_setup(dt_env *e, const char *name, const char *user, const char *password, int port,
             const char *rules, const char *extra, const char *dump) {
  memset(e, 0, sizeof *e);
  snprintf(e->dir, sizeof e->dir, "/tmp/dmh-dump-XXXXXX");
  if (!mkdtemp(e->dir))
    return -1;
  snprintf(e->work, sizeof e->work, "%s/work", e->dir);
  snprintf(e->dump_dir, sizeof e->dump_dir, "%s/dump", e->work);
  char path[512], text[8192];
  snprintf(text, sizeof text,
           "source-id = \"dsrc\";\n"
           "from = { host = \"127.0.0.1\"; port = %d; user = \"%s\"; password = \"%s\"; };\n",
           port, user, password);
  snprintf(path, sizeof path, "%s/source.cfg", e->dir);
  dm_error err;
  if (dt_write(path, text) < 0 || dmh_source_config_load(path, &e->source, &err) < 0) {
    fprintf(stderr, "source config: %s\n", err.message);
    return -1;
  }
  snprintf(text, sizeof text,
           "name = \"%s\";\ntask-mode = \"dump\";\n"
           "target-database = { host = \"127.0.0.1\"; port = %d; user = \"root\"; password = "
           "\"\"; };\n"
           "mysql-instances = ( { source-id = \"dsrc\"; %s } );\n"
           "unit-paths = { dump = \"%s\"; };\n"
           "supervisor = { init-timeout = 10; stop-timeout = 5; auto-resume = { enable = false; "
           "}; };\n"
           "%s\ndump = { %s };\n",
           name, dt_target_port(), rules ? rules : "", DUMP_SO, extra ? extra : "",
           dump ? dump : "");
  snprintf(path, sizeof path, "%s/task.cfg", e->dir);
  if (dt_write(path, text) < 0 || dmh_task_config_load(path, &e->task, &err) < 0) {
    fprintf(stderr, "task config: %s\n", err.message);
    return -1;
  }
  return 0;
}

void dt_teardown(dt_env *e) {
  dmh_task_config_free(e->task);
  dmh_source_config_free(e->source);
  e->task = NULL;
  e->source = NULL;
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", e->dir);
  if (e->dir[0] && system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", e->dir);
}

dmh_subtask *dt_subtask(dt_env *e) {
  dmh_subtask_opts o = {.task = e->task, .source = e->source, .work_root = e->work};
  dm_error err;
  dmh_subtask *st = dmh_subtask_create(&o, &err);
  if (!st)
    fprintf(stderr, "create: %s\n", err.message);
  return st;
}

dmh_stage dt_run(dt_env *e, dmh_subtask **out, int timeout_ms) {
  *out = dt_subtask(e);
  if (!*out)
    return DMH_STAGE_NEW;
  dm_error err;
  if (dmh_subtask_start(*out, &err) < 0)
    fprintf(stderr, "start: %s\n", err.message);
  return dmh_subtask_wait_settled(*out, timeout_ms);
}

static json_object *dt_unit_status(json_object *o) {
  json_object *v;
  return json_object_object_get_ex(o, "dumpStatus", &v) ? v : NULL;
}

long dt_status_int(dmh_subtask *st, const char *key) {
  json_object *o = dmh_subtask_status_json(st), *u = dt_unit_status(o), *v;
  long r = -1;
  if (u && json_object_object_get_ex(u, key, &v))
    r = (long)json_object_get_int64(v);
  json_object_put(o);
  return r;
}

int dt_first_error(dmh_subtask *st, char *msg, size_t len) {
  json_object *o = dmh_subtask_status_json(st), *res, *errs, *code, *m;
  int c = 0;
  msg[0] = '\0';
  if (json_object_object_get_ex(o, "result", &res) && res &&
      json_object_object_get_ex(res, "errors", &errs) && json_object_array_length(errs) > 0) {
    json_object *e = json_object_array_get_idx(errs, 0);
    if (json_object_object_get_ex(e, "ErrCode", &code))
      c = json_object_get_int(code);
    if (json_object_object_get_ex(e, "Message", &m))
      dm_strlcpy(msg, json_object_get_string(m), len);
  }
  json_object_put(o);
  return c;
}

int dt_first_error_resumable(dmh_subtask *st) {
  json_object *o = dmh_subtask_status_json(st), *res, *errs, *v;
  int r = -1;
  if (json_object_object_get_ex(o, "result", &res) && res &&
      json_object_object_get_ex(res, "errors", &errs) && json_object_array_length(errs) > 0 &&
      json_object_object_get_ex(json_object_array_get_idx(errs, 0), "Resumable", &v))
    r = json_object_get_boolean(v) ? 1 : 0;
  json_object_put(o);
  return r;
}

bool dt_wait_rows(dmh_subtask *st, long rows, int timeout_ms) {
  double end = dt_now() + timeout_ms / 1000.0;
  while (dt_now() < end) {
    if (dt_status_int(st, "finishedRows") >= rows)
      return true;
    dt_sleep_ms(2);
  }
  return false;
}

MYSQL *dt_connect(int port) {
  MYSQL *m = mysql_init(NULL);
  /* binary: mysql_real_escape_string on it escapes as the dump does (test_dump_escape) */
  mysql_optionsv(m, MYSQL_SET_CHARSET_NAME, "binary");
  if (!mysql_real_connect(m, "127.0.0.1", "root", "", NULL, (unsigned)port, NULL, 0)) {
    fprintf(stderr, "connect 127.0.0.1:%d: %s (run scripts/mariadb.sh start)\n", port,
            mysql_error(m));
    mysql_close(m);
    return NULL;
  }
  if (mysql_query(m, "SET NAMES binary, time_zone = '+00:00'") != 0)
    fprintf(stderr, "session: %s\n", mysql_error(m));
  return m;
}

static char *dt_vfmt(const char *fmt, va_list ap) {
  char *s = NULL;
  if (vasprintf(&s, fmt, ap) < 0)
    return NULL;
  return s;
}

int dt_exec(MYSQL *m, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *sql = dt_vfmt(fmt, ap);
  va_end(ap);
  int rc = mysql_query(m, sql);
  if (rc != 0)
    fprintf(stderr, "query failed: %.300s: %s\n", sql, mysql_error(m));
  else {
    MYSQL_RES *r = mysql_store_result(m);
    if (r)
      mysql_free_result(r);
  }
  free(sql);
  return rc == 0 ? 0 : -1;
}

long long dt_query_ll(MYSQL *m, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *sql = dt_vfmt(fmt, ap);
  va_end(ap);
  long long v = -1;
  MYSQL_RES *r = NULL;
  if (mysql_query(m, sql) != 0 || !(r = mysql_store_result(m)))
    fprintf(stderr, "query failed: %.300s: %s\n", sql, mysql_error(m));
  else {
    MYSQL_ROW row = mysql_fetch_row(r);
    if (row && row[0])
      v = strtoll(row[0], NULL, 10);
    mysql_free_result(r);
  }
  free(sql);
  return v;
}

int dt_master_status(MYSQL *m, char *file, size_t flen, uint64_t *pos, char *gtid, size_t glen) {
  MYSQL_RES *r;
  if (mysql_query(m, "SHOW MASTER STATUS") != 0 || !(r = mysql_store_result(m)))
    return -1;
  MYSQL_ROW row = mysql_fetch_row(r);
  if (!row) {
    mysql_free_result(r);
    return -1;
  }
  dm_strlcpy(file, row[0], flen);
  *pos = strtoull(row[1], NULL, 10);
  mysql_free_result(r);
  if (mysql_query(m, "SELECT @@global.gtid_binlog_pos") != 0 || !(r = mysql_store_result(m)))
    return -1;
  row = mysql_fetch_row(r);
  dm_strlcpy(gtid, row && row[0] ? row[0] : "", glen);
  mysql_free_result(r);
  return 0;
}

/* Rows of one INSERT line, counted by the "),(" between tuples outside quoted strings (whose
 * backslash escapes are skipped). *ok: one complete INSERT on one line, which holds no raw CR or
 * NUL (docs/dump-format.md: they are escaped) and no unclosed quote. */
static long long dt_line_rows(const char *line, size_t len, bool *ok) {
  static const char head[] = "INSERT INTO `", values[] = ") VALUES (";
  const char *v = strstr(line, values);
  *ok = len > sizeof head + 4 && strncmp(line, head, sizeof head - 1) == 0 &&
        strncmp(line + len - 2, ");", 2) == 0 && v != NULL && !memchr(line, '\r', len) &&
        strlen(line) == len;
  if (!v)
    return 0;
  long long n = 1;
  bool quoted = false;
  for (const char *p = v + sizeof values - 1, *end = line + len; p < end; p++) {
    if (quoted) {
      if (*p == '\\')
        p++;
      else if (*p == '\'')
        quoted = false;
    } else if (*p == '\'')
      quoted = true;
    else if (*p == ')' && end - p > 2 && p[1] == ',' && p[2] == '(')
      n++;
  }
  if (quoted)
    *ok = false;
  return n;
}

int dt_data_files(const char *dir, const char *base, long long *rows, long *bad) {
  char pat[1024];
  snprintf(pat, sizeof pat, "%s/%s.[0-9][0-9][0-9][0-9][0-9][0-9].sql", dir, base);
  glob_t g;
  *rows = 0;
  *bad = 0;
  if (glob(pat, 0, NULL, &g) != 0)
    return 0;
  char *line = NULL;
  size_t cap = 0;
  for (size_t i = 0; i < g.gl_pathc; i++) {
    FILE *f = fopen(g.gl_pathv[i], "r");
    if (!f) {
      (*bad)++;
      continue;
    }
    ssize_t n;
    while ((n = getline(&line, &cap, f)) > 0) {
      if (line[n - 1] != '\n') {
        (*bad)++;
        continue;
      }
      line[--n] = '\0';
      bool ok;
      *rows += dt_line_rows(line, (size_t)n, &ok);
      if (!ok)
        (*bad)++;
    }
    fclose(f);
  }
  free(line);
  int files = (int)g.gl_pathc;
  globfree(&g);
  return files;
}

bool dt_exists(const char *dir, const char *file) {
  char p[1024];
  snprintf(p, sizeof p, "%s/%s", dir, file);
  return access(p, F_OK) == 0;
}

int dt_count_suffix(const char *dir, const char *suffix) {
  DIR *d = opendir(dir);
  if (!d)
    return 0;
  int n = 0;
  size_t sl = strlen(suffix);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    size_t l = strlen(e->d_name);
    if (l >= sl && strcmp(e->d_name + l - sl, suffix) == 0)
      n++;
  }
  closedir(d);
  return n;
}

char *dt_read(const char *dir, const char *file) {
  char p[1024];
  snprintf(p, sizeof p, "%s/%s", dir, file);
  FILE *f = fopen(p, "r");
  if (!f)
    return NULL;
  char *buf = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&buf, &len);
  char tmp[8192];
  size_t n;
  while ((n = fread(tmp, 1, sizeof tmp, f)) > 0)
    fwrite(tmp, 1, n, out);
  fclose(out);
  fclose(f);
  return buf;
}

int dt_load_with_client(const char *dir, const char *db_part, const char *target_db) {
  char pat[1024], cmd[512];
  snprintf(pat, sizeof pat, "%s/%s.*-schema.sql", dir, db_part);
  glob_t g;
  if (glob(pat, 0, NULL, &g) != 0)
    return -1;
  snprintf(cmd, sizeof cmd, "mariadb --no-defaults --protocol=tcp -h127.0.0.1 -P%d -uroot --batch",
           dt_target_port());
  FILE *p = popen(cmd, "w");
  if (!p) {
    globfree(&g);
    return -1;
  }
  fprintf(p,
          "SET NAMES binary; SET time_zone = '+00:00'; SET sql_mode = 'NO_AUTO_VALUE_ON_ZERO'; "
          "SET foreign_key_checks = 0; SET unique_checks = 0;\n"
          "DROP DATABASE IF EXISTS `%s`; CREATE DATABASE `%s`; USE `%s`;\n",
          target_db, target_db, target_db);
  for (size_t i = 0; i < g.gl_pathc; i++) {
    const char *s = g.gl_pathv[i];
    char base[1024];
    size_t blen = strlen(s) - strlen("-schema.sql");
    snprintf(base, sizeof base, "%.*s", (int)blen, s);
    char *text = dt_read("/", s);
    if (text) {
      fputs(text, p);
      fputc('\n', p);
      free(text);
    }
    char dpat[1100];
    snprintf(dpat, sizeof dpat, "%s.[0-9][0-9][0-9][0-9][0-9][0-9].sql", base);
    glob_t d;
    if (glob(dpat, 0, NULL, &d) == 0) {
      for (size_t k = 0; k < d.gl_pathc; k++) {
        FILE *f = fopen(d.gl_pathv[k], "r");
        char buf[65536];
        size_t n;
        while (f && (n = fread(buf, 1, sizeof buf, f)) > 0)
          fwrite(buf, 1, n, p);
        if (f)
          fclose(f);
      }
      globfree(&d);
    }
  }
  globfree(&g);
  int rc = pclose(p);
  return rc == 0 ? 0 : -1;
}

long dt_vm_hwm_kb(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long v = -1;
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "VmHWM:", 6) == 0)
      v = strtol(line + 6, NULL, 10);
  if (f)
    fclose(f);
  return v;
}
