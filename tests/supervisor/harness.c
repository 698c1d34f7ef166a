#include "harness.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dmhost/sdk.h"
#include "error_json.h"

double harness_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void harness_sleep_ms(int ms) {
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
    ;
}

static int harness_write(const char *path, const char *text) {
  FILE *fp = fopen(path, "w");
  if (!fp)
    return -1;
  fputs(text, fp);
  return fclose(fp);
}

const char *harness_load_build = FAKE_LOAD;

/* A chain `[...]`: the custom kinds it names get their fake builds in unit-paths. */
static void harness_chain(const char *mode, char *out, size_t len, char *paths, size_t paths_len) {
  if (mode[0] != '[') {
    snprintf(out, len, "task-mode = \"%s\";", mode);
    paths[0] = '\0';
    return;
  }
  snprintf(out, len, "units = %s;", mode);
  static const struct {
    const char *name, *path;
  } customs[] = {{"fake-sink", FAKE_SINK}, {"fake-giver", FAKE_GIVER}};
  size_t n = 0;
  paths[0] = '\0';
  for (size_t i = 0; i < sizeof customs / sizeof customs[0]; i++) {
    char quoted[64];
    snprintf(quoted, sizeof quoted, "\"%s\"", customs[i].name);
    if (strstr(mode, quoted) && n < paths_len)
      n += (size_t)snprintf(paths + n, paths_len - n, " %s = \"%s\";", customs[i].name,
                            customs[i].path);
  }
}

int harness_setup(harness *h, const char *mode, const char *sup, const char *units) {
  memset(h, 0, sizeof *h);
  snprintf(h->dir, sizeof h->dir, "/tmp/dmh-sup-XXXXXX");
  if (!mkdtemp(h->dir))
    return -1;
  snprintf(h->work, sizeof h->work, "%s/work", h->dir);
  char path[512], text[8192];
  snprintf(text, sizeof text,
           "source-id = \"src1\";\n"
           "from = { host = \"127.0.0.1\"; port = 1; user = \"root\"; password = \"\"; };\n"
           "unit-paths = { relay = \"%s\"; };\n",
           FAKE_RELAY);
  snprintf(path, sizeof path, "%s/source.cfg", h->dir);
  if (harness_write(path, text) < 0)
    return -1;
  dm_error err;
  if (dmh_source_config_load(path, &h->source, &err) < 0) {
    fprintf(stderr, "source config: %s\n", err.message);
    return -1;
  }
  snprintf(text, sizeof text,
           "source-id = \"src1\";\nenable-relay = true;\nrelay-dir = \"%s/relay\";\n"
           "from = { host = \"127.0.0.1\"; port = 1; user = \"root\"; password = \"\"; };\n"
           "unit-paths = { relay = \"%s\"; };\n",
           h->dir, FAKE_RELAY);
  snprintf(path, sizeof path, "%s/source-relay.cfg", h->dir);
  if (harness_write(path, text) < 0 || dmh_source_config_load(path, &h->relay_source, &err) < 0) {
    fprintf(stderr, "relay source config: %s\n", err.message);
    return -1;
  }
  return (h->task = harness_task_file(h, "task.cfg", mode, sup, units)) ? 0 : -1;
}

dmh_task_config *harness_task_file(harness *h, const char *name, const char *mode, const char *sup,
                                   const char *units) {
  char path[512], text[8192];
  char chain[512], custom_paths[1024];
  harness_chain(mode, chain, sizeof chain, custom_paths, sizeof custom_paths);
  snprintf(text, sizeof text,
           "name = \"t1\";\n%s\n"
           "target-database = { host = \"127.0.0.1\"; port = 2; user = \"root\"; password = \"\"; "
           "};\n"
           "mysql-instances = ( { source-id = \"src1\"; } );\n"
           "unit-paths = { dump = \"%s\"; load = \"%s\"; sync = \"%s\";%s };\n"
           "supervisor = { %s };\n%s\n",
           chain, FAKE_DUMP, harness_load_build, FAKE_SYNC, custom_paths,
           sup ? sup
               : "init-timeout = 5; stop-timeout = 2; relay-catchup-timeout = 5; "
                 "relay-catchup-poll = 10; auto-resume = { enable = false; };",
           units ? units : "");
  snprintf(path, sizeof path, "%s/%s", h->dir, name);
  dmh_task_config *t = NULL;
  dm_error err;
  if (harness_write(path, text) < 0)
    return NULL;
  if (dmh_task_config_load(path, &t, &err) < 0)
    fprintf(stderr, "task config %s: %s\n", name, err.message);
  return t;
}

void harness_teardown(harness *h) {
  dmh_task_config_free(h->task);
  dmh_source_config_free(h->source);
  dmh_source_config_free(h->relay_source);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", h->dir);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", h->dir);
}

dmh_subtask *harness_subtask(harness *h, dmh_subtask *relay) {
  dmh_subtask_opts o = {.task = h->task,
                        .source = relay ? h->relay_source : h->source,
                        .work_root = h->work,
                        .relay = relay};
  dm_error err;
  dmh_subtask *st = dmh_subtask_create(&o, &err);
  if (!st)
    fprintf(stderr, "create: %s\n", err.message);
  return st;
}

dmh_subtask *harness_relay(harness *h, const char *relay_section) {
  char path[512], text[4096];
  snprintf(text, sizeof text,
           "source-id = \"src1\";\nenable-relay = true;\nrelay-dir = \"%s/relay\";\n"
           "from = { host = \"127.0.0.1\"; port = 1; user = \"root\"; password = \"\"; };\n"
           "unit-paths = { relay = \"%s\"; };\nrelay = { %s };\n",
           h->dir, FAKE_RELAY, relay_section);
  snprintf(path, sizeof path, "%s/source-relay.cfg", h->dir);
  dm_error err;
  dmh_source_config_free(h->relay_source);
  h->relay_source = NULL;
  if (harness_write(path, text) < 0 || dmh_source_config_load(path, &h->relay_source, &err) < 0) {
    fprintf(stderr, "relay source: %s\n", err.message);
    return NULL;
  }
  char work[400];
  snprintf(work, sizeof work, "%s/relay-work", h->dir);
  dmh_subtask_opts o = {.source = h->relay_source, .work_root = work};
  dmh_subtask *r = dmh_subtask_create_relay(&o, &err);
  if (!r)
    fprintf(stderr, "relay create: %s\n", err.message);
  return r;
}

int harness_out_sequence(harness *h, const char *kind, long *n) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s/out.log", h->work, kind);
  *n = 0;
  FILE *fp = fopen(path, "r");
  if (!fp)
    return 0;
  long v;
  int rc = 0;
  while (fscanf(fp, "%ld", &v) == 1) {
    if (v != *n + 1)
      rc = -1;
    *n += 1;
  }
  fclose(fp);
  return rc;
}

/* How often `what` starts a line of the events.log at path. */
static int harness_events_at(const char *path, const char *what) {
  char line[256];
  FILE *fp = fopen(path, "r");
  if (!fp)
    return 0;
  int n = 0;
  size_t wl = strlen(what);
  while (fgets(line, sizeof line, fp))
    if (strncmp(line, what, wl) == 0)
      n++;
  fclose(fp);
  return n;
}

int harness_events(harness *h, const char *kind, const char *what) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s/events.log", h->work, kind);
  return harness_events_at(path, what);
}

int harness_relay_events(harness *h, const char *what) {
  char path[512];
  snprintf(path, sizeof path, "%s/relay-work/relay/events.log", h->dir);
  return harness_events_at(path, what);
}

int harness_first_line(harness *h, const char *kind, const char *what) {
  char path[512], line[256];
  snprintf(path, sizeof path, "%s/%s/events.log", h->work, kind);
  FILE *fp = fopen(path, "r");
  if (!fp)
    return -1;
  int n = 0, found = -1;
  size_t wl = strlen(what);
  while (found < 0 && fgets(line, sizeof line, fp)) {
    if (strncmp(line, what, wl) == 0)
      found = n;
    n++;
  }
  fclose(fp);
  return found;
}

static json_object *harness_unit_status(json_object *o) {
  json_object_object_foreach(o, key, val) {
    size_t n = strlen(key);
    if (n > 6 && strcmp(key + n - 6, "Status") == 0 && val)
      return val;
  }
  return NULL;
}

long harness_status_int(dmh_subtask *st, const char *key) {
  json_object *o = dmh_subtask_status_json(st), *u = harness_unit_status(o), *v;
  long r = -1;
  if (u && json_object_object_get_ex(u, key, &v))
    r = (long)json_object_get_int64(v);
  json_object_put(o);
  return r;
}

const char *harness_status_str(dmh_subtask *st, const char *key, char *buf, size_t len) {
  json_object *o = dmh_subtask_status_json(st), *v;
  buf[0] = '\0';
  if (json_object_object_get_ex(o, key, &v) && v)
    dm_strlcpy(buf, json_object_get_string(v), len);
  json_object_put(o);
  return buf;
}

int harness_first_error(dmh_subtask *st, char *msg, size_t len) {
  json_object *o = dmh_subtask_status_json(st), *res, *errs, *code, *m;
  int c = 0;
  if (msg && len)
    msg[0] = '\0';
  if (json_object_object_get_ex(o, "result", &res) && res &&
      json_object_object_get_ex(res, "errors", &errs) && json_object_array_length(errs) > 0) {
    json_object *e = json_object_array_get_idx(errs, 0);
    if (json_object_object_get_ex(e, "ErrCode", &code))
      c = json_object_get_int(code);
    if (msg && json_object_object_get_ex(e, "Message", &m))
      dm_strlcpy(msg, json_object_get_string(m), len);
  }
  json_object_put(o);
  return c;
}

bool harness_wait_stage(dmh_subtask *st, dmh_stage want, int ms) {
  double end = harness_now() + ms / 1000.0;
  while (harness_now() < end) {
    if (dmh_subtask_stage(st) == want)
      return true;
    harness_sleep_ms(5);
  }
  return dmh_subtask_stage(st) == want;
}
