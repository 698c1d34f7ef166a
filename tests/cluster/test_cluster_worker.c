/*
 * `dmhost worker` (host/cluster/worker/cluster_worker*.c) as a real process against the fixture's
 * real 3-member etcd and the real MariaDB pair; the test plays the master by writing the keys
 * itself (cluster_keys.h). In order, one worker throughout:
 *   register     the registration under a lease, the lease's ID saved in the state dir
 *   bind_run     bound to a source with a mode-all task expected Running: the target equals the
 *                source (rows written before and during the sync), the status is published; the
 *                binding that came before its source file counted once (DM's SourceBound)
 *   restart      SIGTERM and a start within the TTL: the same lease, the binding untouched, the
 *                task goes on from its checkpoint, target equal, no duplicate key
 *   no_quorum    two of three members killed: the worker pauses its subtask once the lease's last
 *                renewal is TTL - 3 s old, before the TTL (timed); the sync stops writing; quorum
 *                back: the lease is renewed and the subtask resumes
 *   unbind       the binding deleted: the subtask is stopped, its status key gone; the relay stays
 *                (worker at relay, registration naming it)
 *   expired      bound again, the task goes on from its checkpoints; then the lease expires and the
 *                source is unbound while the worker is down: a new lease, and the subtask of its
 *                state dir never runs
 * Before this worker existed `dmhost worker` was an unknown command: every test failed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cluster_keys.h"
#include "test_etcd.h"
#include "testdb.h"

#define CW_DB "cw_db"
#define CW_META "cw_meta"
#define CW_TTL 10

static char dir[256], state[300], log_path[300], prefix[128], eps[256];
static pid_t worker = -1;
static dmh_etcd *etcd;
static MYSQL *src, *dst;
static int64_t lease_seen;
static int64_t first_token; /* the first binding's token */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void key_of(char *buf, dmh_cluster_key_kind kind, const char *a, const char *b,
                   const char *c) {
  CU_ASSERT_FATAL(dmh_cluster_key(buf, DMH_CLUSTER_KEY_MAX, prefix, kind, a, b, c) > 0);
}

static void put(const char *key, const char *value) {
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_put(etcd, DMH_ETCD_S(key), DMH_ETCD_S(value), 0, 0, NULL, &err),
                        0);
}

/* The pair at key (value, lease, revisions); 0 when present. */
static int get_kv(const char *key, dmh_etcd_kv *out) {
  dmh_etcd_result r;
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_range(etcd, DMH_ETCD_S(key), 0, 0, 0, &r, &err), 0);
  int rc = -1;
  if (r.n_kvs == 1) {
    *out = r.kvs[0];
    r.kvs[0] = (dmh_etcd_kv){0};
    rc = 0;
  }
  dmh_etcd_result_free(&r);
  return rc;
}

static void start_worker(void) {
  fflush(NULL);
  worker = fork();
  CU_ASSERT_FATAL(worker >= 0);
  if (worker == 0) {
    int fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND, 0600);
    dup2(fd, 1);
    dup2(fd, 2);
    execl(DMHOST_BIN, DMHOST_BIN, "worker", "--name", "w1", "--etcd", eps, "--state-dir", state,
          "--etcd-prefix", prefix, "--plugin-dir", PLUGIN_DIR, "--lease-ttl", "10", "--listen",
          "127.0.0.1:0", (char *)NULL);
    _exit(127);
  }
}

/* SIGTERM; the exit status (-1: not within 30 s, then killed). */
static int stop_worker(void) {
  if (worker < 0)
    return -1;
  kill(worker, SIGTERM);
  double t0 = now_s();
  int st = 0;
  while (now_s() - t0 < 30) {
    if (waitpid(worker, &st, WNOHANG) == worker) {
      worker = -1;
      return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    usleep(50 * 1000);
  }
  kill(worker, SIGKILL);
  waitpid(worker, &st, 0);
  worker = -1;
  return -1;
}

static char *read_file(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f)
    return NULL;
  char *buf = calloc(1, 1 << 20);
  size_t n = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
  (void)n;
  fclose(f);
  return buf;
}

static bool log_has(const char *needle) {
  char *s = read_file(log_path);
  bool has = s && strstr(s, needle);
  free(s);
  return has;
}

/* Until the worker's log has `needle` (polled), at most `secs`: a line the worker writes after the
 * state the test saw change (the persisted stage comes before the line that tells of it). */
static bool wait_log(const char *needle, double secs) {
  double t0 = now_s();
  while (!log_has(needle) && now_s() - t0 < secs)
    usleep(50 * 1000);
  return log_has(needle);
}

/* The store's revision now. */
static int64_t revision_now(void) {
  int64_t rev = 0;
  char key[DMH_CLUSTER_KEY_MAX];
  key_of(key, DMH_KEY_LEADER, NULL, NULL, NULL);
  free(te_get(etcd, key, &rev));
  return rev;
}

/* The registration of w1 written after revision `after` (its lease), waiting up to secs; 0 when
 * there is none. */
static char registered_relay[DMH_CLUSTER_NAME_MAX]; /* the relay of the last registration seen */

static int64_t wait_registered(double secs, int64_t after) {
  char key[DMH_CLUSTER_KEY_MAX];
  key_of(key, DMH_KEY_WORKER, "w1", NULL, NULL);
  for (double t0 = now_s(); now_s() - t0 < secs; usleep(100 * 1000)) {
    dmh_etcd_kv kv = {0};
    if (get_kv(key, &kv) == 0 && kv.mod_revision <= after) {
      dmh_etcd_kv_free(&kv);
    } else if (kv.key) {
      int64_t lease = kv.lease;
      dmh_cluster_worker_info info;
      dm_error err;
      CU_ASSERT_EQUAL(dmh_cluster_worker_parse(kv.value, kv.value_len, &info, &err), 0);
      CU_ASSERT_STRING_EQUAL(info.name, "w1");
      snprintf(registered_relay, sizeof registered_relay, "%s", info.relay);
      dmh_etcd_kv_free(&kv);
      return lease;
    }
  }
  return 0;
}

/* The stage of the subtask as the worker published it after revision `after` ("" none). */
static void published_stage(char *out, size_t len, int64_t after) {
  char key[DMH_CLUSTER_KEY_MAX];
  key_of(key, DMH_KEY_STATUS, "w1", "t1", "src1");
  out[0] = '\0';
  dmh_etcd_kv kv;
  if (get_kv(key, &kv) < 0)
    return;
  if (kv.mod_revision <= after) {
    dmh_etcd_kv_free(&kv);
    return;
  }
  CU_ASSERT_EQUAL(kv.lease, lease_seen); /* under the worker's lease */
  json_object *o = json_tokener_parse(kv.value), *subs = NULL, *stage = NULL;
  if (o && json_object_object_get_ex(o, "subTaskStatus", &subs) &&
      json_object_array_length(subs) > 0 &&
      json_object_object_get_ex(json_object_array_get_idx(subs, 0), "stage", &stage))
    snprintf(out, len, "%s", json_object_get_string(stage));
  json_object_put(o);
  dmh_etcd_kv_free(&kv);
}

static bool wait_published(const char *want, double secs, int64_t after) {
  char got[32];
  for (double t0 = now_s(); now_s() - t0 < secs; usleep(200 * 1000)) {
    published_stage(got, sizeof got, after);
    if (strcmp(got, want) == 0)
      return true;
  }
  fprintf(stderr, "published stage \"%s\", wanted \"%s\"\n", got, want);
  return false;
}

/* The task's expected stage in the worker's state.json ("" when the task is not there). */
static void persisted_stage(char *out, size_t len) {
  char path[400];
  snprintf(path, sizeof path, "%s/state.json", state);
  out[0] = '\0';
  char *s = read_file(path);
  json_object *o = s ? json_tokener_parse(s) : NULL, *tasks = NULL;
  free(s);
  if (o && json_object_object_get_ex(o, "tasks", &tasks))
    for (size_t i = 0; i < json_object_array_length(tasks); i++) {
      json_object *t = json_object_array_get_idx(tasks, i), *name = NULL, *stage = NULL;
      if (json_object_object_get_ex(t, "name", &name) &&
          strcmp(json_object_get_string(name), "t1") == 0 &&
          json_object_object_get_ex(t, "stage", &stage))
        snprintf(out, len, "%s", json_object_get_string(stage));
    }
  json_object_put(o);
}

static bool wait_target_equal(double secs) {
  char diff[512] = "";
  for (double t0 = now_s(); now_s() - t0 < secs; usleep(300 * 1000))
    if (testdb_compare_schemas(src, dst, CW_DB, CW_DB, diff, sizeof diff) == 0)
      return true;
  fprintf(stderr, "target differs: %s\n", diff);
  return false;
}

static void insert_rows(int from, int n) {
  for (int i = from; i < from + n; i++)
    CU_ASSERT_EQUAL(
        testdb_execf(src, "INSERT INTO " CW_DB ".t VALUES (%d, 'row %d', %d)", i, i, i * 7), 0);
}

static long long target_rows(void) {
  long long n = -1;
  testdb_query_int(dst, &n, "SELECT COUNT(*) FROM " CW_DB ".t");
  return n;
}

/* The binding's create_revision: the subtask's fencing token. */
static int64_t binding_token(void) {
  char key[DMH_CLUSTER_KEY_MAX];
  key_of(key, DMH_KEY_BOUND, "w1", NULL, NULL);
  dmh_etcd_kv kv = {0};
  if (get_kv(key, &kv) < 0)
    return 0;
  int64_t token = kv.create_revision;
  dmh_etcd_kv_free(&kv);
  return token;
}

/* Every sync checkpoint row of the task on the target carries the token. */
static void assert_fence(int64_t token) {
  CU_ASSERT_FATAL(token > 0);
  long long lo = -1, hi = -1, n = -1;
  CU_ASSERT_EQUAL(
      testdb_query_int(dst, &n, "SELECT COUNT(*) FROM " CW_META ".t1_syncer_checkpoint"), 0);
  CU_ASSERT_EQUAL(
      testdb_query_int(dst, &lo, "SELECT MIN(fence) FROM " CW_META ".t1_syncer_checkpoint"), 0);
  CU_ASSERT_EQUAL(
      testdb_query_int(dst, &hi, "SELECT MAX(fence) FROM " CW_META ".t1_syncer_checkpoint"), 0);
  CU_ASSERT(n > 0);
  CU_ASSERT_EQUAL(lo, token);
  CU_ASSERT_EQUAL(hi, token);
}

/* No unit reported an error and no duplicate key was ever hit. */
/* The value of the sample `series` (name{labels} as exposed) in the worker's GET /metrics, at the
 * port its --listen bound (the last "control plane on" line of its log), or -1. */
static double worker_metric(const char *series) {
  char *log = read_file(log_path);
  const char *at = NULL, *needle = "control plane on http://127.0.0.1:";
  for (const char *p = log; p && (p = strstr(p, needle)); p++)
    at = p + strlen(needle);
  int port = at ? atoi(at) : 0;
  free(log);
  if (port <= 0)
    return -1;
  char cmd[200], line[1024];
  snprintf(cmd, sizeof cmd, "curl -s --noproxy '*' http://127.0.0.1:%d/metrics", port);
  FILE *p = popen(cmd, "r");
  double v = -1;
  size_t n = strlen(series);
  while (p && fgets(line, sizeof line, p))
    if (strncmp(line, series, n) == 0 && line[n] == ' ')
      v = strtod(line + n + 1, NULL);
  if (p)
    pclose(p);
  return v;
}

static void assert_clean_log(void) {
  CU_ASSERT_FALSE(log_has("Duplicate entry"));
  CU_ASSERT_FALSE(log_has("[code 1062]"));
  CU_ASSERT_FALSE(log_has("[ERROR]"));
}

static int suite_init(void) {
  snprintf(dir, sizeof dir, "/tmp/dmh-cw-XXXXXX");
  if (!mkdtemp(dir))
    return 1;
  snprintf(state, sizeof state, "%s/state", dir);
  snprintf(log_path, sizeof log_path, "%s/worker.log", dir);
  snprintf(prefix, sizeof prefix, "/dmh-cw-%ld", (long)getpid());
  te_endpoints("012", eps, sizeof eps);
  dm_error err;
  if (!(etcd = dmh_etcd_open(eps, NULL, &err)) || !(src = testdb_connect(TESTDB_SOURCE)) ||
      !(dst = testdb_connect(TESTDB_TARGET)))
    return 1;
  if (testdb_recreate_db(src, CW_DB) < 0 ||
      testdb_exec(src, "CREATE TABLE " CW_DB ".t (id INT PRIMARY KEY, s VARCHAR(64), n INT)") < 0 ||
      testdb_exec(dst, "DROP DATABASE IF EXISTS " CW_DB "; DROP DATABASE IF EXISTS " CW_META) < 0)
    return 1;
  for (int i = 1; i <= 2000; i += 500) /* 2000 rows for the dump */
    if (testdb_execf(src,
                     "INSERT INTO " CW_DB ".t SELECT seq, CONCAT('row ', seq), seq * 7 FROM " CW_DB
                     ".seq_%d_to_%d",
                     i, i + 499) < 0)
      return 1;
  return 0;
}

static int suite_clean(void) {
  stop_worker();
  if (etcd) {
    char p[160];
    dm_error err;
    snprintf(p, sizeof p, "%s/", prefix);
    dmh_etcd_delete(etcd, DMH_ETCD_S(p), 1, NULL, &err);
    if (lease_seen)
      dmh_etcd_lease_revoke(etcd, lease_seen, &err);
    dmh_etcd_close(etcd);
  }
  if (dst)
    testdb_exec(dst, "DROP DATABASE IF EXISTS " CW_DB "; DROP DATABASE IF EXISTS " CW_META);
  if (src)
    testdb_exec(src, "DROP DATABASE IF EXISTS " CW_DB);
  testdb_close(src);
  testdb_close(dst);
  if (CU_get_number_of_failures() == 0 && !getenv("KEEP")) {
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
      return 1;
  } else {
    fprintf(stderr, "worker folder kept: %s (log %s)\n", dir, log_path);
  }
  return 0;
}

static void test_register(void) {
  start_worker();
  int64_t lease = wait_registered(15, 0);
  CU_ASSERT_FATAL(lease != 0);
  lease_seen = lease;
  /* the lease's ID is saved in the state dir, and it lives with the TTL asked for */
  char path[400];
  snprintf(path, sizeof path, "%s/cluster-lease", state);
  char *saved = read_file(path);
  CU_ASSERT_PTR_NOT_NULL_FATAL(saved);
  CU_ASSERT_EQUAL(strtoll(saved, NULL, 10), lease);
  free(saved);
  int64_t left = 0, granted = 0;
  dm_error err;
  CU_ASSERT_EQUAL(dmh_etcd_lease_ttl(etcd, lease, &left, &granted, &err), 0);
  CU_ASSERT_EQUAL(granted, CW_TTL);
  CU_ASSERT(left > 0);
}

static void test_bind_run(void) {
  CU_ASSERT_FATAL(worker > 0);
  testdb_params sp, tp;
  CU_ASSERT_FATAL(testdb_params_get(TESTDB_SOURCE, &sp) == 0 &&
                  testdb_params_get(TESTDB_TARGET, &tp) == 0);
  char text[2048], key[DMH_CLUSTER_KEY_MAX];
  snprintf(text, sizeof text,
           "source-id = \"src1\";\nenable-relay = true;\n"
           "from = { host = \"%s\"; port = %u; user = \"%s\"; password = \"%s\"; };\n",
           sp.host, sp.port, sp.user, sp.password);
  char *source_v = dmh_cluster_config_json(text);
  snprintf(text, sizeof text,
           "name = \"t1\";\ntask-mode = \"all\";\nmeta-schema = \"" CW_META "\";\n"
           "target-database = { host = \"%s\"; port = %u; user = \"%s\"; password = \"%s\"; };\n"
           "mysql-instances = ( { source-id = \"src1\"; block-allow-list = \"b\"; } );\n"
           "block-allow-list = { b = { do-dbs = [\"" CW_DB "\"]; }; };\n"
           "supervisor = { auto-resume = { enable = false; }; };\n"
           "load = { on-duplicate = \"error\"; };\n"
           "sync = { batch-ms = 50; status-interval = 200; };\n",
           tp.host, tp.port, tp.user, tp.password);
  char *task_v = dmh_cluster_config_json(text);
  /* The binding and the stage first, the files a moment later: the worker, which watches only
   * its binding and the stages, must read them again on its own. */
  key_of(key, DMH_KEY_STAGE, "t1", "src1", NULL);
  put(key, "Running");
  dmh_cluster_binding b = {.source = "src1", .leader = 1};
  char *v = dmh_cluster_binding_json(&b);
  key_of(key, DMH_KEY_BOUND, "w1", NULL, NULL);
  put(key, v);
  free(v);
  CU_ASSERT(wait_log("etcd has no source file", 5));
  key_of(key, DMH_KEY_SOURCE, "src1", NULL, NULL);
  put(key, source_v);
  free(source_v);
  key_of(key, DMH_KEY_TASK, "t1", NULL, NULL);
  put(key, task_v);
  free(task_v);
  double t0 = now_s();
  CU_ASSERT_FATAL(wait_published("Running", 10, 0));
  fprintf(stderr, "files there, bound and Running in %.2f s\n", now_s() - t0);
  /* the binding came before its source file: DM's dm_worker_operate_error counts the binding that
   * could not be taken up once, however often the worker read etcd again meanwhile */
  CU_ASSERT_EQUAL(worker_metric("dm_worker_operate_error{worker=\"w1\",type=\"SourceBound\"}"), 1);
  insert_rows(3001, 200); /* during the sync */
  CU_ASSERT(wait_target_equal(30));
  CU_ASSERT_EQUAL(target_rows(), 2200);
  char stage[32];
  persisted_stage(stage, sizeof stage);
  CU_ASSERT_STRING_EQUAL(stage, "Running");
  first_token = binding_token();
  assert_fence(first_token); /* the binding's create_revision reached the target's checkpoint */
  /* the source file says enable-relay: the registration names the relay this worker keeps */
  CU_ASSERT(wait_registered(5, 0) == lease_seen && strcmp(registered_relay, "src1") == 0);
  /* its relay log is local, next to the source's copy in the state dir (relay-dir's default) */
  char relay_dir[400];
  snprintf(relay_dir, sizeof relay_dir, "%s/sources/src1/relay", state);
  struct stat sb;
  CU_ASSERT(stat(relay_dir, &sb) == 0 && S_ISDIR(sb.st_mode));
  assert_clean_log();
}

static void test_restart(void) {
  CU_ASSERT_FATAL(worker > 0);
  char key[DMH_CLUSTER_KEY_MAX];
  key_of(key, DMH_KEY_BOUND, "w1", NULL, NULL);
  dmh_etcd_kv before;
  CU_ASSERT_EQUAL_FATAL(get_kv(key, &before), 0);
  CU_ASSERT_EQUAL(stop_worker(), 0);
  CU_ASSERT(log_has("lease kept"));
  insert_rows(4001, 100); /* while the worker is down */
  double t0 = now_s();
  int64_t rev = revision_now();
  start_worker();
  CU_ASSERT_EQUAL(wait_registered(10, rev), lease_seen); /* the same lease */
  CU_ASSERT(log_has("still alive (TTL 10 s): kept"));
  dmh_etcd_kv after;
  CU_ASSERT_EQUAL_FATAL(get_kv(key, &after), 0);
  CU_ASSERT_EQUAL(after.create_revision, before.create_revision); /* the binding untouched */
  CU_ASSERT_EQUAL(after.mod_revision, before.mod_revision);
  dmh_etcd_kv_free(&before);
  dmh_etcd_kv_free(&after);
  CU_ASSERT(wait_published("Running", 20, rev));
  fprintf(stderr, "restarted and Running again in %.2f s\n", now_s() - t0);
  insert_rows(5001, 100);
  CU_ASSERT(wait_target_equal(30));
  CU_ASSERT_EQUAL(target_rows(), 2400);
  assert_fence(binding_token()); /* the same binding, the same token */
  assert_clean_log();
}

static void test_no_quorum(void) {
  CU_ASSERT_FATAL(worker > 0);
  char stage[32];
  persisted_stage(stage, sizeof stage);
  CU_ASSERT_STRING_EQUAL_FATAL(stage, "Running");
  CU_ASSERT_EQUAL_FATAL(te_etcd_sh("kill e2"), 0);
  CU_ASSERT_EQUAL_FATAL(te_etcd_sh("kill e3"), 0);
  double t0 = now_s(), paused_at = -1;
  while (now_s() - t0 < 15) {
    persisted_stage(stage, sizeof stage);
    if (strcmp(stage, "Paused") == 0) {
      paused_at = now_s() - t0;
      break;
    }
    usleep(50 * 1000);
  }
  fprintf(stderr, "no quorum: subtask paused %.2f s after the kill (TTL %d s)\n", paused_at,
          CW_TTL);
  /* the last renewal was at most TTL/3 before the kill: the fence (TTL - 3 s after it) falls
   * between 7 - 3.4 and 7 s after the kill, before etcd could expire the lease (TTL) */
  CU_ASSERT(paused_at >= 3.0);
  CU_ASSERT(paused_at > 0 && paused_at < CW_TTL - 1);
  CU_ASSERT(wait_log("pause (fenced)", 10));
  /* paused: rows written now stay on the source */
  insert_rows(6001, 50);
  usleep(1500 * 1000);
  CU_ASSERT_EQUAL(target_rows(), 2400);
  /* quorum back: the same lease renewed (etcd never expired it), the subtask resumed */
  CU_ASSERT_EQUAL(te_etcd_sh("restart e2"), 0);
  CU_ASSERT_EQUAL(te_etcd_sh("restart e3"), 0);
  double t1 = now_s();
  int64_t rev = revision_now();
  bool resumed = false;
  while (!resumed && now_s() - t1 < 30) {
    persisted_stage(stage, sizeof stage);
    resumed = strcmp(stage, "Running") == 0;
    usleep(100 * 1000);
  }
  CU_ASSERT(resumed);
  fprintf(stderr, "quorum back: resumed after %.2f s\n", now_s() - t1);
  CU_ASSERT(wait_log("still bound here", 10));
  CU_ASSERT_EQUAL(wait_registered(5, 0), lease_seen);
  CU_ASSERT(wait_target_equal(30));
  CU_ASSERT_EQUAL(target_rows(), 2450);
  CU_ASSERT(wait_published("Running", 10, rev));
  assert_clean_log();
}

static void test_unbind(void) {
  CU_ASSERT_FATAL(worker > 0);
  char key[DMH_CLUSTER_KEY_MAX], stage[32];
  key_of(key, DMH_KEY_BOUND, "w1", NULL, NULL);
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_delete(etcd, DMH_ETCD_S(key), 0, NULL, &err), 0);
  double t0 = now_s();
  bool gone = false;
  while (!gone && now_s() - t0 < 15) {
    persisted_stage(stage, sizeof stage);
    char pub[32];
    published_stage(pub, sizeof pub, 0);
    gone = !stage[0] && !pub[0];
    usleep(100 * 1000);
  }
  CU_ASSERT(gone); /* stopped: out of state.json, its status key deleted */
  fprintf(stderr, "unbound: subtask stopped in %.2f s\n", now_s() - t0);
  /* stopped: rows written now stay on the source */
  insert_rows(7001, 10);
  usleep(1000 * 1000);
  CU_ASSERT_EQUAL(target_rows(), 2450);
  char path[400];
  snprintf(path, sizeof path, "%s/state.json", state);
  char *s = read_file(path);
  /* the relay stays (its files are local): the worker is still at relay, never free, and its
   * registration keeps naming the relay */
  json_object *o = s ? json_tokener_parse(s) : NULL, *wk = NULL, *ws = NULL;
  CU_ASSERT(o && json_object_object_get_ex(o, "worker", &wk) &&
            json_object_object_get_ex(wk, "stage", &ws) &&
            strcmp(json_object_get_string(ws), "relay") == 0);
  json_object_put(o);
  free(s);
  CU_ASSERT(wait_registered(5, 0) == lease_seen && strcmp(registered_relay, "src1") == 0);
  assert_clean_log();
}

static void bind_w1(void) {
  char key[DMH_CLUSTER_KEY_MAX];
  dmh_cluster_binding b = {.source = "src1", .leader = 1};
  char *v = dmh_cluster_binding_json(&b);
  key_of(key, DMH_KEY_BOUND, "w1", NULL, NULL);
  put(key, v);
  free(v);
}

/* Bound again: the task (still expected Running) starts again from its checkpoints. Then the
 * worker is stopped, its lease expires (revoked here: the same as the TTL running out) and the
 * source is unbound while it is down: the restarted worker takes a new lease and never runs the
 * subtask its state dir holds (restored held, then stopped). */
static void test_expired(void) {
  CU_ASSERT_FATAL(worker > 0);
  int64_t rev = revision_now();
  bind_w1();
  CU_ASSERT(wait_published("Running", 20, rev));
  CU_ASSERT(wait_target_equal(30));
  CU_ASSERT_EQUAL(target_rows(), 2460);
  /* bound anew: a higher token, and the checkpoint rows raised to it */
  int64_t token = binding_token();
  CU_ASSERT(token > first_token);
  assert_fence(token);
  char stage[32];
  persisted_stage(stage, sizeof stage);
  CU_ASSERT_STRING_EQUAL_FATAL(stage, "Running");
  CU_ASSERT_EQUAL(stop_worker(), 0);

  dm_error err;
  char key[DMH_CLUSTER_KEY_MAX];
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_lease_revoke(etcd, lease_seen, &err), 0);
  key_of(key, DMH_KEY_BOUND, "w1", NULL, NULL);
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_delete(etcd, DMH_ETCD_S(key), 0, NULL, &err), 0);
  insert_rows(8001, 20);
  rev = revision_now();
  start_worker();
  int64_t lease = wait_registered(10, rev);
  CU_ASSERT(lease != 0 && lease != lease_seen); /* a new lease, saved */
  char path[400];
  snprintf(path, sizeof path, "%s/cluster-lease", state);
  char *saved = read_file(path);
  CU_ASSERT(saved && strtoll(saved, NULL, 10) == lease);
  free(saved);
  lease_seen = lease;
  CU_ASSERT(log_has("is gone: granting a new one"));
  CU_ASSERT(log_has("left New (held until the cluster says Running)"));
  double t0 = now_s();
  while (now_s() - t0 < 10) {
    persisted_stage(stage, sizeof stage);
    if (!stage[0])
      break;
    usleep(100 * 1000);
  }
  CU_ASSERT_STRING_EQUAL(stage, ""); /* stopped, never run: the rows stay on the source */
  usleep(1000 * 1000);
  CU_ASSERT_EQUAL(target_rows(), 2460);
  CU_ASSERT(strcmp(registered_relay, "src1") == 0);
  CU_ASSERT_EQUAL(stop_worker(), 0);
  assert_clean_log();
}

/* Issue 20, items 2 and 4: whoever writes etcd writes a task key naming a root-only file of the
 * worker's machine as password-file (standing for /etc/shadow), a target of their own (a TCP
 * listener counting connections) and its stage key Running. The worker reads it as text sent over
 * the network: refused (DM_ERR_CONFIG_SUBMITTED_SECRET, logged), the task not created, the target
 * never dialled. */
static void test_etcd_submitted(void) {
  int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  CU_ASSERT_FATAL(lfd >= 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t alen = sizeof a;
  CU_ASSERT_FATAL(bind(lfd, (struct sockaddr *)&a, sizeof a) == 0 && listen(lfd, 8) == 0 &&
                  getsockname(lfd, (struct sockaddr *)&a, &alen) == 0);
  char shadow[400];
  snprintf(shadow, sizeof shadow, "%s/shadow", dir);
  FILE *f = fopen(shadow, "w");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  fputs("root:$6$secret:19000:0:99999:7:::\n", f);
  fclose(f);
  CU_ASSERT_EQUAL_FATAL(chmod(shadow, 0640), 0);
  int64_t rev = revision_now();
  start_worker();
  CU_ASSERT_FATAL(wait_registered(10, rev) != 0);
  char text[2048], key[DMH_CLUSTER_KEY_MAX];
  snprintf(text, sizeof text,
           "name = \"t9\";\ntask-mode = \"full\";\n"
           "target-database = { host = \"127.0.0.1\"; port = %d; user = \"root\"; "
           "password-file = \"%s\"; };\n"
           "mysql-instances = ( { source-id = \"src1\"; } );\n"
           "ignore-checking-items = [\"all\"];\n",
           ntohs(a.sin_port), shadow);
  char *task_v = dmh_cluster_config_json(text);
  key_of(key, DMH_KEY_TASK, "t9", NULL, NULL);
  put(key, task_v);
  free(task_v);
  key_of(key, DMH_KEY_STAGE, "t9", "src1", NULL);
  put(key, "Running");
  bind_w1();
  CU_ASSERT(wait_log("11007", 20));
  CU_ASSERT(log_has("password-file"));
  CU_ASSERT(log_has("--secrets-dir"));
  usleep(500 * 1000);
  int fd = accept(lfd, NULL, NULL); /* nothing connected: EAGAIN */
  CU_ASSERT(fd < 0);
  if (fd >= 0)
    close(fd);
  close(lfd);
  CU_ASSERT_EQUAL(stop_worker(), 0);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"register", test_register},
      {"bind_run", test_bind_run},
      {"restart", test_restart},
      {"no_quorum", test_no_quorum},
      {"unbind", test_unbind},
      {"expired", test_expired},
      {"etcd_submitted", test_etcd_submitted},
  };
  return dmh_cunit_run("cluster_worker", suite_init, suite_clean, tests,
                       sizeof tests / sizeof tests[0]);
}
