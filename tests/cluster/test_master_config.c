/*
 * Two things of issue 23 on master processes against the fixture's real 3-member etcd:
 *
 * config master|worker NAME (host/cluster/master/master_config.c, DM's GetCfg): two masters and a
 * `dmhost worker` process; every master answers its own settings, the other master's (forwarded
 * to the address it registered) and the worker's (forwarded to its --listen), as the command line
 * one flag a line; an unknown name is DM's "master not found" / "worker not found". The attack: m1
 * and the worker run with a cluster key and m1 with DM's key of encrypted passwords (files of
 * random hex): the answers name the files, and no byte of their contents is in any of them.
 *
 * dm_master_worker_event_error{type} (master_sched.c): the leader's watch of the workers'
 * registrations broken by killing the etcd member it streams from (one member at a time, each
 * restarted: the cluster keeps its quorum) counts type="watch" in the master's GET /metrics, which
 * promtool still passes. Kills etcd members: RUN_SERIAL.
 */
#include "master_util.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cluster_keys.h"
#include "promtool_check.h"
#include "test_file.h"

/* The children still running: killed by the suite's cleanup when a fatal assertion left them. */
static pid_t mc_pids[8];

static void mc_track(pid_t pid) {
  for (size_t i = 0; i < sizeof mc_pids / sizeof mc_pids[0]; i++)
    if (mc_pids[i] <= 0) {
      mc_pids[i] = pid;
      return;
    }
}

static void mc_untrack(pid_t pid) {
  for (size_t i = 0; i < sizeof mc_pids / sizeof mc_pids[0]; i++)
    if (mc_pids[i] == pid)
      mc_pids[i] = 0;
}

static int mc_clean(void) {
  for (size_t i = 0; i < sizeof mc_pids / sizeof mc_pids[0]; i++)
    if (mc_pids[i] > 0) {
      kill(mc_pids[i], SIGKILL);
      waitpid(mc_pids[i], NULL, 0);
    }
  return tm_clean();
}

/* A `dmhost` child with these arguments (NULL-ended), its output in <tm_dir>/<log>. */
static pid_t mc_spawn(const char *log, const char *const *args) {
  char path[256];
  snprintf(path, sizeof path, "%s/%s", tm_dir, log);
  pid_t pid = fork();
  if (pid == 0) {
    FILE *f = freopen(path, "a", stderr);
    (void)f;
    dup2(2, 1);
    execv(DMHOST_BIN, (char *const *)args);
    _exit(127);
  }
  mc_track(pid);
  return pid;
}

static void mc_stop(pid_t pid) {
  int st = 0;
  if (pid <= 0)
    return;
  mc_untrack(pid);
  kill(pid, SIGTERM);
  CU_ASSERT_EQUAL(waitpid(pid, &st, 0), pid);
  CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* A secret file of 64 random hex digits (mode 0600) at <tm_dir>/<name>: its path into path, its
 * contents into hex. */
static void mc_key_file(const char *name, char *path, size_t path_len, char hex[65]) {
  FILE *r = fopen("/dev/urandom", "re");
  CU_ASSERT_PTR_NOT_NULL_FATAL(r);
  unsigned char b[32];
  CU_ASSERT_EQUAL_FATAL(fread(b, 1, sizeof b, r), sizeof b);
  fclose(r);
  for (int i = 0; i < 32; i++)
    snprintf(hex + 2 * i, 3, "%02x", b[i]);
  snprintf(path, path_len, "%s/%s", tm_dir, name);
  FILE *f = fopen(path, "we");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  fprintf(f, "%s\n", hex);
  fclose(f);
  CU_ASSERT_EQUAL_FATAL(chmod(path, 0600), 0);
}

/* dmctl's answer to `config WHAT NAME` through the master on `port`: cfg (a static copy) when
 * result is true, else NULL with msg in *msg (a static copy). The answer's whole text must hold
 * none of the secrets. */
static const char *mc_config(int port, const char *what, const char *name, const char **msg,
                             const char *const *secrets) {
  static char cfg[8192], m[1024];
  char args[256];
  snprintf(args, sizeof args, "config %s %s", what, name);
  json_object *r = NULL;
  tm_dmctl(&r, port, args);
  CU_ASSERT_PTR_NOT_NULL_FATAL(r);
  const char *text = tm_text(r);
  for (int i = 0; secrets[i]; i++)
    if (strstr(text, secrets[i])) {
      printf("\n  config %s %s through :%d holds a secret: %s\n", what, name, port, text);
      CU_FAIL("a secret file's contents are in the answer");
    }
  json_object *v = NULL;
  bool ok = json_object_object_get_ex(r, "result", &v) && json_object_get_boolean(v);
  snprintf(m, sizeof m, "%s",
           json_object_object_get_ex(r, "msg", &v) ? json_object_get_string(v) : "");
  snprintf(cfg, sizeof cfg, "%s",
           ok && json_object_object_get_ex(r, "cfg", &v) ? json_object_get_string(v) : "");
  if (!ok)
    printf("\n  config %s %s through :%d: %s\n", what, name, port, text);
  json_object_put(r);
  *msg = m;
  return ok ? cfg : NULL;
}

/* Does text hold `line` as one whole line? */
static bool mc_line(const char *text, const char *line) {
  size_t n = strlen(line);
  for (const char *p = text; p && (p = strstr(p, line)); p++)
    if ((p == text || p[-1] == '\n') && p[n] == '\n')
      return true;
  return false;
}

static void test_config_members(void) {
  char prefix[128], leader[64], ck_path[256], dk_path[256], ck[65], dk[65];
  tm_prefix(prefix, sizeof prefix, "mcfg");
  mc_key_file("cluster.key", ck_path, sizeof ck_path, ck);
  mc_key_file("dm.key", dk_path, sizeof dk_path, dk);
  /* precondition: the files hold the secrets the answers must not */
  char kept[128] = "";
  FILE *kf = fopen(ck_path, "re");
  CU_ASSERT_FATAL(kf && fgets(kept, sizeof kept, kf) && strstr(kept, ck));
  fclose(kf);
  const char *secrets[] = {ck, dk, NULL};
  char l1[64], l2[64], lw[64], state[256];
  int p1 = TM_PORT(9), p2 = TM_PORT(10), pw = TM_PORT(11);
  snprintf(l1, sizeof l1, "127.0.0.1:%d", p1);
  snprintf(l2, sizeof l2, "127.0.0.1:%d", p2);
  snprintf(lw, sizeof lw, "127.0.0.1:%d", pw);
  snprintf(state, sizeof state, "%s/w1-state", tm_dir);
  const char *m1[] = {DMHOST_BIN,
                      "master",
                      "--name",
                      "m1",
                      "--etcd",
                      tm_eps,
                      "--etcd-prefix",
                      prefix,
                      "--listen",
                      l1,
                      "--secrets-dir",
                      tm_dir,
                      "--cluster-key",
                      ck_path,
                      "--secret-key-path",
                      dk_path,
                      NULL};
  const char *m2[] = {DMHOST_BIN,      "master", "--name",   "m2", "--etcd", tm_eps,
                      "--etcd-prefix", prefix,   "--listen", l2,   NULL};
  const char *w1[] = {DMHOST_BIN,    "worker", "--name",        "w1",
                      "--etcd",      tm_eps,   "--etcd-prefix", prefix,
                      "--state-dir", state,    "--plugin-dir",  PLUGIN_DIR,
                      "--listen",    lw,       "--cluster-key", ck_path,
                      NULL};
  pid_t pids[3] = {mc_spawn("m1.log", m1), mc_spawn("m2.log", m2), mc_spawn("w1.log", w1)};
  dmh_etcd *c = te_client();
  CU_ASSERT_FATAL(tm_wait_leader(c, prefix, NULL, leader, sizeof leader, 10000) > 0);
  /* both masters answer, and the worker is registered */
  const char *msg = NULL;
  int64_t t0 = te_now_ms();
  bool up = false;
  while (!up && te_now_ms() - t0 < 15000) {
    json_object *r = NULL;
    up = tm_dmctl(&r, p1, "list-member") == 0 && strstr(tm_text(r), "\"name\":\"w1\"") &&
         strstr(tm_text(r), "\"name\":\"m2\"");
    json_object_put(r);
    if (!up)
      tm_sleep_ms(100);
  }
  CU_ASSERT_FATAL(up);

  char want[512];
  for (int k = 0; k < 2; k++) { /* through each master: the leader and the follower */
    int port = k == 0 ? p1 : p2;
    /* m1: its own, or forwarded to it; the key files by path */
    const char *cfg = mc_config(port, "master", "m1", &msg, secrets);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
    CU_ASSERT(mc_line(cfg, "--name m1"));
    CU_ASSERT(mc_line(cfg, "--listen 127.0.0.1:0") == false);
    snprintf(want, sizeof want, "--listen %s", l1);
    CU_ASSERT(mc_line(cfg, want));
    snprintf(want, sizeof want, "--cluster-key %s", ck_path);
    CU_ASSERT(mc_line(cfg, want));
    snprintf(want, sizeof want, "--secret-key-path %s", dk_path);
    CU_ASSERT(mc_line(cfg, want));
    snprintf(want, sizeof want, "--etcd-prefix %s", prefix);
    CU_ASSERT(mc_line(cfg, want));
    /* m2 */
    cfg = mc_config(port, "master", "m2", &msg, secrets);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
    CU_ASSERT(mc_line(cfg, "--name m2"));
    snprintf(want, sizeof want, "--listen %s", l2);
    CU_ASSERT(mc_line(cfg, want));
    CU_ASSERT(strstr(cfg, "--cluster-key") == NULL);
    /* the worker, asked at its --listen: the state dir given relative to itself over TCP */
    cfg = mc_config(port, "worker", "w1", &msg, secrets);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
    CU_ASSERT(mc_line(cfg, "--name w1"));
    CU_ASSERT(mc_line(cfg, "--state-dir ."));
    snprintf(want, sizeof want, "--listen %s", lw);
    CU_ASSERT(mc_line(cfg, want));
    snprintf(want, sizeof want, "--cluster-key %s", ck_path);
    CU_ASSERT(mc_line(cfg, want));
    /* DM's words for a name nobody has */
    CU_ASSERT(mc_config(port, "master", "nope", &msg, secrets) == NULL);
    CU_ASSERT(strncmp(msg, "master not found", 16) == 0);
    CU_ASSERT(mc_config(port, "worker", "nope", &msg, secrets) == NULL);
    CU_ASSERT(strncmp(msg, "worker not found", 16) == 0);
  }
  /* get-config, DM's older name, is the same command */
  json_object *g = NULL;
  CU_ASSERT_EQUAL(tm_dmctl(&g, p2, "get-config worker w1"), 0);
  CU_ASSERT(g && strstr(tm_text(g), "--name w1\\n") && !strstr(tm_text(g), ck));
  json_object_put(g);

  /* the worker's listener answers config worker, never a stored file or another member */
  char out[4096];
  snprintf(want, sizeof want,
           "curl -s --noproxy '*' -X POST -H 'Content-Type: application/json' -d "
           "'{\"cmd\":\"config\",\"args\":{\"op\":\"master\",\"name\":\"w1\"}}' "
           "http://%s/control",
           lw);
  FILE *p = popen(want, "r");
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  size_t n = fread(out, 1, sizeof out - 1, p);
  out[n] = '\0';
  pclose(p);
  CU_ASSERT(strstr(out, "\"result\":false") != NULL || strstr(out, "\"result\": false") != NULL);
  if (!strstr(out, "is not served by a worker"))
    printf("\n  the worker's listener answered: %s\n", out);
  CU_ASSERT(strstr(out, "is not served by a worker") != NULL);

  mc_stop(pids[2]);
  mc_stop(pids[1]);
  mc_stop(pids[0]);
  dm_error err;
  dmh_etcd_delete(c, DMH_ETCD_S(prefix), 1, NULL, &err);
  dmh_etcd_close(c);
}

/* ---- dm_master_worker_event_error ---- */

/* The master's GET /metrics body (a static buffer). */
static const char *mc_scrape(int port) {
  static char body[1 << 17];
  char cmd[256];
  snprintf(cmd, sizeof cmd, "curl -s --noproxy '*' http://127.0.0.1:%d/metrics", port);
  FILE *p = popen(cmd, "r");
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  size_t n = fread(body, 1, sizeof body - 1, p);
  body[n] = '\0';
  pclose(p);
  return body;
}

/* The value of `series` (name{labels}) in body, -1 when absent. */
static double mc_value(const char *body, const char *series) {
  char needle[256];
  snprintf(needle, sizeof needle, "\n%s ", series);
  const char *at = strstr(body, needle);
  return at ? strtod(at + strlen(needle), NULL) : -1;
}

static void test_worker_event_watch(void) {
  char prefix[128], leader[64];
  tm_prefix(prefix, sizeof prefix, "wevent");
  int port = TM_PORT(12);
  pid_t pid = tm_spawn("me", prefix, port);
  mc_track(pid);
  dmh_etcd *c = te_client();
  /* generous: the suite before may have left an etcd member rejoining */
  if (tm_wait_leader(c, prefix, NULL, leader, sizeof leader, 30000) <= 0) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "cat '%s/me.log'", tm_dir);
    CU_ASSERT(system(cmd) >= 0);
    CU_FAIL_FATAL("master me did not lead");
  }
  fake_worker w1 = {"w1", 0};
  tm_worker_up(c, prefix, &w1, "");
  static const char watch[] = "dm_master_worker_event_error{type=\"watch\"}";
  static const char handle[] = "dm_master_worker_event_error{type=\"handle\"}";
  /* precondition: the leader serves both series, at 0 */
  int64_t t0 = te_now_ms();
  while (mc_value(mc_scrape(port), watch) < 0 && te_now_ms() - t0 < 10000)
    tm_sleep_ms(100);
  CU_ASSERT_EQUAL_FATAL(mc_value(mc_scrape(port), watch), 0);
  CU_ASSERT_EQUAL(mc_value(mc_scrape(port), handle), 0);
  /* each member in turn killed and restarted until the one the leader's watch streams from broke */
  double got = 0;
  for (int i = 1; i <= 3 && got < 1; i++) {
    char kill_cmd[32], restart_cmd[32];
    snprintf(kill_cmd, sizeof kill_cmd, "kill e%d", i);
    snprintf(restart_cmd, sizeof restart_cmd, "restart e%d", i);
    CU_ASSERT_EQUAL_FATAL(te_etcd_sh(kill_cmd), 0);
    for (t0 = te_now_ms(); got < 1 && te_now_ms() - t0 < 5000; tm_sleep_ms(100))
      got = mc_value(mc_scrape(port), watch);
    CU_ASSERT_EQUAL_FATAL(te_etcd_sh(restart_cmd), 0);
    printf("\n  e%d killed and restarted: %s %g", i, watch, got);
  }
  CU_ASSERT(got >= 1);
  /* the watch opened again: a worker's change still reaches the leader (it binds a source) */
  tm_source_file("src-w");
  char path[256];
  snprintf(path, sizeof path, "%s/src-w.cfg", tm_dir);
  char args[320];
  snprintf(args, sizeof args, "operate-source create %s", path);
  json_object *r = NULL;
  for (t0 = te_now_ms(); te_now_ms() - t0 < 15000; tm_sleep_ms(200)) {
    json_object_put(r);
    if (tm_dmctl(&r, port, args) == 0 || tm_code(r) == DM_ERR_EXISTS)
      break;
  }
  json_object_put(r);
  CU_ASSERT(tm_wait_bound(c, prefix, "w1", "src-w", 15000));
  char why[8192];
  const char *body = mc_scrape(port);
  int prc = promtool_check(body, why, sizeof why);
  if (prc != 0)
    printf("\n  %s\n", why);
  CU_ASSERT_EQUAL(prc, 0);
  CU_ASSERT(mc_value(body, watch) >= 1);

  mc_stop(pid);
  dm_error err;
  dmh_etcd_lease_revoke(c, w1.lease, &err);
  dmh_etcd_delete(c, DMH_ETCD_S(prefix), 1, NULL, &err);
  dmh_etcd_close(c);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"config master|worker NAME through every master, no secret in it", test_config_members},
      {"dm_master_worker_event_error: the leader's watch broken by an etcd member killed",
       test_worker_event_watch},
  };
  return dmh_cunit_run("master_config", tm_init, mc_clean, tests, sizeof tests / sizeof tests[0]);
}
