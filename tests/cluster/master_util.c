/* Helpers of the master's tests: master_util.h. */
#include "master_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cluster_keys.h"
#include "metrics.h"
#include "test_file.h"
#include "test_http_client.h"

char tm_dir[128];
char tm_eps[256];

int tm_init(void) {
  snprintf(tm_dir, sizeof tm_dir, "/tmp/dmh-master-XXXXXX");
  if (!mkdtemp(tm_dir))
    return -1;
  te_endpoints("012", tm_eps, sizeof tm_eps);
  return 0;
}

int tm_clean(void) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tm_dir);
  return system(cmd) == 0 ? 0 : -1;
}

void tm_sleep_ms(long ms) {
  nanosleep(&(struct timespec){ms / 1000, (ms % 1000) * 1000000L}, NULL);
}

/* A cluster prefix of this run and test. */
void tm_prefix(char *buf, size_t size, const char *test) {
  snprintf(buf, size, "/dmh-test-%ld-%s", (long)getpid(), test);
}

/* The leader key's value (name) and create_revision; "" and 0 when absent. */
int64_t tm_leader(dmh_etcd *c, const char *prefix, char *name, size_t size) {
  char key[DMH_CLUSTER_KEY_MAX];
  dmh_cluster_key(key, sizeof key, prefix, DMH_KEY_LEADER, NULL, NULL, NULL);
  dmh_etcd_result r;
  dm_error err;
  name[0] = '\0';
  if (dmh_etcd_range(c, DMH_ETCD_S(key), 0, 0, 0, &r, &err) < 0)
    return 0;
  int64_t rev = 0;
  if (r.n_kvs == 1) {
    snprintf(name, size, "%s", r.kvs[0].value);
    rev = r.kvs[0].create_revision;
  }
  dmh_etcd_result_free(&r);
  return rev;
}

/* Waits (up to ms) for a leader other than `not` (NULL: any); its token, 0 on timeout. */
int64_t tm_wait_leader(dmh_etcd *c, const char *prefix, const char * not, char *name, size_t size,
                       long ms) {
  int64_t t0 = te_now_ms();
  do {
    int64_t tok = tm_leader(c, prefix, name, size);
    if (tok && (!not || strcmp(name, not ) != 0))
      return tok;
    tm_sleep_ms(20);
  } while (te_now_ms() - t0 < ms);
  return 0;
}

/* `dmhost master --name NAME` as a child process, its output in <dir>/NAME.log. */
pid_t tm_spawn(const char *name, const char *prefix, int port) {
  char log[256], listen[64];
  snprintf(log, sizeof log, "%s/%s.log", tm_dir, name);
  snprintf(listen, sizeof listen, "127.0.0.1:%d", port);
  pid_t pid = fork();
  if (pid == 0) {
    FILE *f = freopen(log, "a", stderr);
    (void)f;
    dup2(2, 1);
    execl(DMHOST_BIN, DMHOST_BIN, "master", "--name", name, "--etcd", tm_eps, "--etcd-prefix",
          prefix, "--listen", listen, (char *)NULL);
    _exit(127);
  }
  return pid;
}

dmh_master *tm_start(const char *name, const char *prefix) {
  dmh_master_opts o = {.name = name, .endpoints = tm_eps, .prefix = prefix, .addr = name};
  dmh_master *m = NULL;
  dm_error err;
  int rc = dmh_master_start(&o, &m, &err);
  if (rc < 0)
    printf("\n  dmh_master_start: %s\n", err.message);
  CU_ASSERT_FATAL(rc == 0 && m);
  return m;
}

int64_t tm_wait_token(dmh_master *m, long ms) {
  int64_t t0 = te_now_ms();
  while (te_now_ms() - t0 < ms) {
    int64_t t = dmh_master_token(m);
    if (t)
      return t;
    tm_sleep_ms(20);
  }
  return 0;
}

void tm_worker_up(dmh_etcd *c, const char *prefix, fake_worker *w, const char *relay) {
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_lease_grant(c, TTL_S, 0, &w->lease, NULL, &err), 0);
  char key[DMH_CLUSTER_KEY_MAX];
  dmh_cluster_key(key, sizeof key, prefix, DMH_KEY_WORKER, w->name, NULL, NULL);
  dmh_cluster_worker_info info = {0};
  snprintf(info.name, sizeof info.name, "%s", w->name);
  snprintf(info.relay, sizeof info.relay, "%s", relay);
  char *val = dmh_cluster_worker_json(&info);
  CU_ASSERT_EQUAL(dmh_etcd_put(c, DMH_ETCD_S(key), DMH_ETCD_S(val), w->lease, 0, NULL, &err), 0);
  free(val);
}

/* The source bound to worker w ("" none). */
void tm_bound(dmh_etcd *c, const char *prefix, const char *w, char *src, size_t size) {
  char key[DMH_CLUSTER_KEY_MAX];
  dmh_cluster_key(key, sizeof key, prefix, DMH_KEY_BOUND, w, NULL, NULL);
  char *v = te_get(c, key, NULL);
  dmh_cluster_binding b = {0};
  dm_error err;
  src[0] = '\0';
  if (v && dmh_cluster_binding_parse(v, strlen(v), &b, &err) == 0)
    snprintf(src, size, "%s", b.source);
  free(v);
}

bool tm_wait_bound(dmh_etcd *c, const char *prefix, const char *w, const char *want, long ms) {
  char src[DMH_CLUSTER_NAME_MAX];
  int64_t t0 = te_now_ms();
  do {
    tm_bound(c, prefix, w, src, sizeof src);
    if (strcmp(src, want) == 0)
      return true;
    tm_sleep_ms(20);
  } while (te_now_ms() - t0 < ms);
  printf("\n  worker %s: bound to \"%s\", expected \"%s\"\n", w, src, want);
  return false;
}

/* dmh_master_handle of {"cmd", "args": <args JSON>}; the answer (caller frees). */
json_object *tm_cmd(dmh_master *m, const char *cmd, const char *args_fmt, ...) {
  char args[1024];
  va_list ap;
  va_start(ap, args_fmt);
  vsnprintf(args, sizeof args, args_fmt, ap);
  va_end(ap);
  json_object *req = json_object_new_object();
  json_object_object_add(req, "cmd", json_object_new_string(cmd));
  json_object_object_add(req, "args", json_tokener_parse(args));
  json_object *resp = dmh_master_handle(m, req);
  json_object_put(req);
  CU_ASSERT_PTR_NOT_NULL_FATAL(resp);
  return resp;
}

const char *tm_text(json_object *r) {
  return json_object_to_json_string_ext(r, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
}

bool tm_ok(json_object *r) {
  json_object *v = NULL;
  bool ok = json_object_object_get_ex(r, "result", &v) && json_object_get_boolean(v);
  if (!ok)
    printf("\n  answer: %s\n", tm_text(r));
  return ok;
}

int64_t tm_code(json_object *r) {
  json_object *e = NULL, *c = NULL;
  if (json_object_object_get_ex(r, "error", &e) && json_object_object_get_ex(e, "ErrCode", &c))
    return json_object_get_int64(c);
  return 0;
}

void tm_source_file(const char *id) {
  char name[64];
  snprintf(name, sizeof name, "%s.cfg", id);
  dmh_test_writef(tm_dir, name,
                  "source-id = \"%s\";\nenable-relay = false;\n"
                  "from = { host = \"127.0.0.1\"; port = 1; user = \"root\"; password = \"\"; };\n",
                  id);
}

/* Does the process's /metrics show `sample` (name{labels} value) within ms? */
bool tm_wait_metric(const char *sample, int64_t ms) {
  for (int64_t t0 = te_now_ms(); te_now_ms() - t0 < ms;) {
    char *text = dmh_metrics_render(dmh_metrics_process(), NULL);
    bool found = text && strstr(text, sample);
    free(text);
    if (found)
      return true;
    nanosleep(&(struct timespec){0, 50000000}, NULL);
  }
  return false;
}

/* dmctl --master-addr 127.0.0.1:PORT ARGS; its parsed answer in *out (caller frees). Its exit
 * status. */
int tm_dmctl(json_object **out, int port, const char *args) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "'%s' --master-addr 127.0.0.1:%d %s", DMCTL_BIN, port, args);
  FILE *p = popen(cmd, "r");
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  static char buf[65536];
  size_t n = fread(buf, 1, sizeof buf - 1, p);
  buf[n] = '\0';
  int st = pclose(p);
  *out = json_tokener_parse(buf);
  if (!*out)
    printf("\n  dmctl printed: %s\n", buf);
  CU_ASSERT_PTR_NOT_NULL_FATAL(*out);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* `method` on the HTTP API's `path` of the master on `port` (body NULL: none): the parsed answer
 * (NULL when not JSON), *status. */
json_object *tm_api(int port, const char *method, const char *path, const char *body,
                    long *status) {
  char url[256];
  snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
  char *text = dmh_test_http(url, method, body, status, NULL, 0);
  json_object *o = text ? json_tokener_parse(text) : NULL;
  free(text);
  return o;
}
