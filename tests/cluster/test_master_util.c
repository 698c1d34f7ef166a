/* The helpers of the master suites (test_master_util.h): in-process and process masters, their
 * answers, dmctl --master-addr. */
#include "test_master_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cluster_keys.h"

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
