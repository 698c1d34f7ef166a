/*
 * bench/cluster: N fake workers and M sources against a real 3-member etcd and one real `dmhost
 * master` (started by run.sh). Each fake worker is a lease of its own, its registration
 * <p>/worker/<name> under it and a keeper thread renewing it (the worker's keepalive); it runs no
 * subtask. Measures (README.md): the time until every source that can be bound is bound, the time
 * until a dead worker's source is bound elsewhere (keepalive stopped, as a kill -9; lease revoked,
 * as a clean stop), etcd's requests per second at rest, the p99 of `dmctl query-status` over all
 * workers' status keys, and this process's peak RSS. With SIM_DMHOST, SIM_PLUGIN_DIR and
 * SIM_STATE_DIR set, a real `dmhost worker` joins once every source is bound (so it stays free) for
 * an idle worker's peak RSS.
 *
 *   sim ENDPOINTS PREFIX MASTER_ADDR DMCTL N M IDLE_S CALLS
 */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cluster_keys.h"
#include "etcd.h"

#define TTL_S 10
#define TASK "bench"

extern char **environ;

static const char *eps, *prefix;

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what, const dm_error *err) {
  fprintf(stderr, "sim: %s: %s\n", what, err ? err->message : strerror(errno));
  exit(1);
}

static void key(char *out, dmh_cluster_key_kind kind, const char *a, const char *b, const char *c) {
  if (dmh_cluster_key(out, DMH_CLUSTER_KEY_MAX, prefix, kind, a, b, c) < 0) {
    fprintf(stderr, "sim: no key for %s\n", a ? a : "(prefix)");
    exit(1);
  }
}

typedef struct worker {
  char name[32];
  int64_t lease;
  dmh_etcd_keeper *keeper;
  char bound[DMH_CLUSTER_NAME_MAX]; /* from the last read of the bindings */
} worker;

static worker *ws;
static int n_workers;

static worker *worker_named(const char *name) {
  for (int i = 0; i < n_workers; i++)
    if (strcmp(ws[i].name, name) == 0)
      return &ws[i];
  return NULL;
}

/* Reads <p>/bound/ into ws[].bound; the number of bindings. */
static int read_bindings(dmh_etcd *c) {
  char k[DMH_CLUSTER_KEY_MAX];
  key(k, DMH_KEY_BOUND, NULL, NULL, NULL);
  dmh_etcd_result r = {0};
  dm_error err = {0};
  if (dmh_etcd_range(c, DMH_ETCD_S(k), 1, 0, 0, &r, &err) < 0)
    die("range of the bindings", &err);
  for (int i = 0; i < n_workers; i++)
    ws[i].bound[0] = 0;
  int n = 0;
  for (size_t i = 0; i < r.n_kvs; i++) {
    char w[DMH_CLUSTER_NAME_MAX];
    dmh_cluster_binding b;
    if (dmh_cluster_key_parse(r.kvs[i].key, r.kvs[i].key_len, prefix, DMH_KEY_BOUND, w, NULL,
                              NULL) < 0 ||
        dmh_cluster_binding_parse(r.kvs[i].value, r.kvs[i].value_len, &b, &err) < 0)
      continue;
    worker *x = worker_named(w);
    if (x)
      snprintf(x->bound, sizeof x->bound, "%s", b.source);
    n++;
  }
  dmh_etcd_result_free(&r);
  return n;
}

/* The worker a source is bound to, from the last read; NULL when none. */
static worker *holder_of(const char *source) {
  for (int i = 0; i < n_workers; i++)
    if (strcmp(ws[i].bound, source) == 0)
      return &ws[i];
  return NULL;
}

/* Puts the n keys/values (lease per key) in txns of at most DMH_ETCD_TXN_MAX_OPS puts. */
static void put_batched(dmh_etcd *c, char **keys, char **vals, const int64_t *leases, int n) {
  dmh_etcd_op ops[DMH_ETCD_TXN_MAX_OPS];
  for (int i = 0; i < n; i += DMH_ETCD_TXN_MAX_OPS) {
    int k = n - i < DMH_ETCD_TXN_MAX_OPS ? n - i : DMH_ETCD_TXN_MAX_OPS;
    for (int j = 0; j < k; j++)
      ops[j] = (dmh_etcd_op){.kind = DMH_ETCD_PUT,
                             .key = DMH_ETCD_S(keys[i + j]),
                             .value = DMH_ETCD_S(vals[i + j]),
                             .lease = leases ? leases[i + j] : 0};
    dmh_etcd_txn_result tr = {0};
    dm_error err = {0};
    if (dmh_etcd_txn(c, NULL, 0, ops, (size_t)k, NULL, 0, &tr, &err) < 0)
      die("txn of puts", &err);
    dmh_etcd_txn_result_free(&tr);
  }
}

/* The sum of grpc_server_msg_received_total over the members' /metrics: every unary request and
 * every message of a stream (a keepalive through the gateway is one). */
static size_t curl_sink(char *p, size_t sz, size_t n, void *ud) {
  FILE *f = ud;
  return fwrite(p, sz, n, f);
}

static double etcd_requests(void) {
  double sum = 0;
  char *list = strdup(eps), *save = NULL;
  for (char *ep = strtok_r(list, ",", &save); ep; ep = strtok_r(NULL, ",", &save)) {
    char url[256], *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    snprintf(url, sizeof url, "%s/metrics", ep);
    CURL *h = curl_easy_init();
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, curl_sink);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, f);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 10L);
    CURLcode rc = curl_easy_perform(h);
    curl_easy_cleanup(h);
    fclose(f);
    if (rc != CURLE_OK) {
      fprintf(stderr, "sim: GET %s: %s\n", url, curl_easy_strerror(rc));
      exit(1);
    }
    char *lsave = NULL;
    for (char *line = strtok_r(buf, "\n", &lsave); line; line = strtok_r(NULL, "\n", &lsave))
      if (strncmp(line, "grpc_server_msg_received_total{", 31) == 0) {
        char *sp = strrchr(line, ' ');
        if (sp)
          sum += strtod(sp + 1, NULL);
      }
    free(buf);
  }
  free(list);
  return sum;
}

static long vm_hwm_kib_of(const char *status_path) {
  FILE *f = fopen(status_path, "r");
  char line[256];
  long v = -1;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "VmHWM: %ld", &v) == 1)
      break;
  if (f)
    fclose(f);
  return v;
}

/* Runs dmctl --master-addr ADDR query-status TASK, its output to `out`; its duration in ms. */
static double query_status(const char *dmctl, const char *addr, const char *out) {
  char *argv[] = {(char *)dmctl, "--master-addr", (char *)addr, "query-status", TASK, NULL};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  double t0 = now_s();
  pid_t pid;
  if (posix_spawn(&pid, dmctl, &fa, NULL, argv, environ) != 0)
    die("posix_spawn of dmctl", NULL);
  int st;
  waitpid(pid, &st, 0);
  double ms = (now_s() - t0) * 1000;
  posix_spawn_file_actions_destroy(&fa);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    fprintf(stderr, "sim: dmctl query-status failed (see %s)\n", out);
    exit(1);
  }
  return ms;
}

/* How many keys k names (0 or 1). */
static size_t key_count(dmh_etcd *c, const char *k) {
  dmh_etcd_result r = {0};
  dm_error err = {0};
  if (dmh_etcd_range(c, DMH_ETCD_S(k), 0, 0, 0, &r, &err) < 0)
    die(k, &err);
  size_t n = r.n_kvs;
  dmh_etcd_result_free(&r);
  return n;
}

/* Waits up to 10 s for key k to exist; exits naming `what` when it does not. */
static void wait_key(dmh_etcd *c, const char *k, const char *what) {
  for (int64_t t0 = now_ms(); !key_count(c, k); usleep(50000))
    if (now_ms() - t0 > 10000) {
      fprintf(stderr, "sim: %s (%s) not there after 10 s\n", what, k);
      exit(1);
    }
}

/* `dmhost worker` (SIM_DMHOST, SIM_PLUGIN_DIR, SIM_STATE_DIR; its log at SIM_STATE_DIR.log) as
 * "real-worker", once its registration is there: its pid; 0 when the env does not name it. */
static pid_t real_worker_start(dmh_etcd *c) {
  const char *bin = getenv("SIM_DMHOST"), *plugins = getenv("SIM_PLUGIN_DIR"),
             *state = getenv("SIM_STATE_DIR");
  if (!bin || !plugins || !state)
    return 0;
  char log[512];
  snprintf(log, sizeof log, "%s.log", state);
  char *argv[] = {(char *)bin,    "worker",        "--name",       "real-worker", "--etcd",
                  (char *)eps,    "--etcd-prefix", (char *)prefix, "--state-dir", (char *)state,
                  "--plugin-dir", (char *)plugins, "--log-level",  "warn",        NULL};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid;
  if (posix_spawn(&pid, bin, &fa, NULL, argv, environ) != 0)
    die("posix_spawn of dmhost worker", NULL);
  posix_spawn_file_actions_destroy(&fa);
  char k[DMH_CLUSTER_KEY_MAX];
  key(k, DMH_KEY_WORKER, "real-worker", NULL, NULL);
  wait_key(c, k, "the real dmhost worker's registration (see its log at SIM_STATE_DIR.log)");
  printf("real dmhost worker registered (pid %d), free: every source is bound\n", (int)pid);
  return pid;
}

/* POSTs query-status TASK to http://ADDR/control `calls` times on one connection (the master's
 * share of a query-status, without dmctl's process start) into lat[] (ms). */
static void http_query_status(const char *addr, int calls, double *lat) {
  char url[256];
  snprintf(url, sizeof url, "http://%s/control", addr);
  const char *body = "{\"cmd\":\"query-status\",\"args\":{\"name\":\"" TASK "\"}}";
  CURL *h = curl_easy_init();
  struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, curl_sink);
  curl_easy_setopt(h, CURLOPT_TIMEOUT, 10L);
  for (int i = 0; i < calls; i++) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, f);
    double t0 = now_s();
    CURLcode rc = curl_easy_perform(h);
    lat[i] = (now_s() - t0) * 1000;
    fclose(f);
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    if (rc != CURLE_OK || status != 200 || !strstr(buf, "\"result\":true")) {
      fprintf(stderr, "sim: POST %s: %s, HTTP %ld: %.200s\n", url, curl_easy_strerror(rc), status,
              buf ? buf : "");
      exit(1);
    }
    free(buf);
  }
  curl_slist_free_all(hdr);
  curl_easy_cleanup(h);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Kills one bound worker (revoke: its lease revoked; else its keeper stopped, the lease left to
 * expire as after kill -9) and waits until its source is bound to another worker: the ms. */
static int64_t move_one(dmh_etcd *c, int revoke) {
  read_bindings(c);
  worker *victim = NULL;
  for (int i = 0; i < n_workers && !victim; i++)
    if (ws[i].bound[0] && ws[i].keeper)
      victim = &ws[i];
  if (!victim) {
    fprintf(stderr, "sim: no bound worker to kill\n");
    exit(1);
  }
  char source[DMH_CLUSTER_NAME_MAX];
  snprintf(source, sizeof source, "%s", victim->bound);
  long age = dmh_etcd_keeper_age_ms(victim->keeper, NULL, NULL);
  int64_t t0 = now_ms();
  dmh_etcd_keeper_stop(victim->keeper);
  victim->keeper = NULL;
  dm_error err = {0};
  if (revoke && dmh_etcd_lease_revoke(c, victim->lease, &err) < 0)
    die("revoke", &err);
  int64_t limit = t0 + (TTL_S + 30) * 1000;
  for (;;) {
    read_bindings(c);
    worker *h = holder_of(source);
    if (h && h != victim) {
      int64_t ms = now_ms() - t0;
      printf("%s: worker %s (last renewal %ld ms before), source %s bound to %s after %lld ms\n",
             revoke ? "lease revoked" : "keepalive stopped", victim->name, age, source, h->name,
             (long long)ms);
      return ms;
    }
    if (now_ms() > limit) {
      fprintf(stderr, "sim: source %s not moved within %d s\n", source, TTL_S + 30);
      exit(1);
    }
    usleep(20000);
  }
}

int main(int argc, char **argv) {
  if (argc != 9) {
    fprintf(stderr, "usage: sim ENDPOINTS PREFIX MASTER_ADDR DMCTL N M IDLE_S CALLS\n");
    return 2;
  }
  eps = argv[1];
  prefix = argv[2];
  const char *addr = argv[3], *dmctl = argv[4];
  n_workers = atoi(argv[5]);
  int n_sources = atoi(argv[6]), idle_s = atoi(argv[7]), calls = atoi(argv[8]);
  int bindable = n_sources < n_workers ? n_sources : n_workers;
  dm_error err = {0};
  curl_global_init(CURL_GLOBAL_DEFAULT);
  dmh_etcd *c = dmh_etcd_open(eps, NULL, &err);
  if (!c)
    die("etcd client", &err);
  char k[DMH_CLUSTER_KEY_MAX];
  long hwm0 = vm_hwm_kib_of("/proc/self/status"); /* before any fake worker */

  /* the leader master */
  key(k, DMH_KEY_LEADER, NULL, NULL, NULL);
  wait_key(c, k, "the leader master");

  /* N workers: a lease each, the registration under it, a keeper */
  ws = calloc((size_t)n_workers, sizeof *ws);
  double t0 = now_s();
  for (int i = 0; i < n_workers; i++) {
    worker *w = &ws[i];
    snprintf(w->name, sizeof w->name, "w%04d", i);
    if (dmh_etcd_lease_grant(c, TTL_S, 0, &w->lease, NULL, &err) < 0)
      die("lease grant", &err);
    if (!(w->keeper = dmh_etcd_keeper_start(eps, NULL, w->lease, TTL_S, &err)))
      die("keeper", &err);
    dmh_cluster_worker_info info = {0};
    snprintf(info.name, sizeof info.name, "%s", w->name);
    snprintf(info.addr, sizeof info.addr, "127.0.0.1:%d", 30000 + i);
    char *v = dmh_cluster_worker_json(&info);
    key(k, DMH_KEY_WORKER, w->name, NULL, NULL);
    if (dmh_etcd_put(c, DMH_ETCD_S(k), DMH_ETCD_S(v), w->lease, 0, NULL, &err) < 0)
      die("registration", &err);
    free(v);
  }
  printf("workers: %d registered in %.2f s (lease TTL %d s, a keeper thread each)\n", n_workers,
         now_s() - t0, TTL_S);

  /* M sources, as operate-source writes them, in txns of 128 */
  const char *text_fmt = "source-id = \"%s\";\nenable-gtid = false;\nenable-relay = false;\n"
                         "from = { host = \"127.0.0.1\"; port = 3306; user = \"root\"; "
                         "password = \"\"; };\n";
  char **keys = calloc((size_t)n_sources, sizeof *keys),
       **vals = calloc((size_t)n_sources, sizeof *vals);
  for (int i = 0; i < n_sources; i++) {
    char id[32], text[512];
    snprintf(id, sizeof id, "s%05d", i);
    snprintf(text, sizeof text, text_fmt, id);
    key(k, DMH_KEY_SOURCE, id, NULL, NULL);
    keys[i] = strdup(k);
    vals[i] = dmh_cluster_config_json(text);
  }
  t0 = now_s();
  put_batched(c, keys, vals, NULL, n_sources);
  double put_s = now_s() - t0;
  int bound = 0;
  while ((bound = read_bindings(c)) < bindable) {
    if (now_s() - t0 > 120) {
      fprintf(stderr, "sim: %d of %d bound after 120 s\n", bound, bindable);
      return 1;
    }
    usleep(10000);
  }
  double bind_s = now_s() - t0;
  printf("bind: %d sources put in %.2f s; all %d bindable bound %.2f s after the first put "
         "(target 5 s)%s\n",
         n_sources, put_s, bindable, bind_s,
         n_sources > n_workers ? " (one source per worker: the rest wait for a worker)" : "");
  for (int i = 0; i < n_sources; i++) {
    free(keys[i]);
    free(vals[i]);
  }

  /* a dead worker's source moved: needs a free worker */
  int free_workers = n_workers - bindable;
  if (free_workers >= 1) {
    int64_t ms = move_one(c, 0);
    printf("move after kill: %lld ms (target: lease TTL + 2 s = %d ms)\n", (long long)ms,
           (TTL_S + 2) * 1000);
  } else
    printf("move after kill: skipped (M >= N: no free worker to take a dead worker's source)\n");
  if (free_workers >= 2)
    move_one(c, 1);
  /* every source bound now: a real `dmhost worker` started here stays free, an idle worker */
  pid_t real = free_workers >= 2 ? real_worker_start(c) : 0;

  /* a task on every bound source: its stage keys and each worker's status key under its lease */
  read_bindings(c);
  char **skeys = calloc((size_t)n_workers * 2 + 1, sizeof *skeys),
       **svals = calloc((size_t)n_workers * 2 + 1, sizeof *svals);
  int64_t *sleases = calloc((size_t)n_workers * 2 + 1, sizeof *sleases);
  int n = 0, n_status = 0;
  key(k, DMH_KEY_TASK, TASK, NULL, NULL);
  skeys[n] = strdup(k);
  svals[n++] = dmh_cluster_config_json("name = \"bench\";\ntask-mode = \"incremental\";\n");
  for (int i = 0; i < n_workers; i++) {
    if (!ws[i].bound[0] || !ws[i].keeper)
      continue;
    key(k, DMH_KEY_STAGE, TASK, ws[i].bound, NULL);
    skeys[n] = strdup(k);
    svals[n++] = strdup("Running");
    key(k, DMH_KEY_STATUS, ws[i].name, TASK, ws[i].bound);
    char st[1024];
    snprintf(st, sizeof st,
             "{\"name\":\"bench\",\"source\":\"%s\",\"worker\":\"%s\",\"stage\":\"Running\","
             "\"unit\":\"Sync\",\"result\":null,\"unresolvedDDLLockID\":\"\",\"sync\":{"
             "\"totalEvents\":\"123456\",\"totalTps\":\"100\",\"recentTps\":\"95\","
             "\"masterBinlog\":\"(mysql-bin.000042, 123456789)\",\"masterBinlogGtid\":\"\","
             "\"syncerBinlog\":\"(mysql-bin.000042, 123456000)\",\"syncerBinlogGtid\":\"\","
             "\"blockingDDLs\":[],\"unresolvedGroups\":[],\"synced\":true,"
             "\"binlogType\":\"remote\",\"secondsBehindMaster\":\"0\"}}",
             ws[i].bound, ws[i].name);
    sleases[n] = ws[i].lease;
    skeys[n] = strdup(k);
    svals[n++] = strdup(st);
    n_status++;
  }
  put_batched(c, skeys, svals, sleases, n);
  for (int i = 0; i < n; i++) {
    free(skeys[i]);
    free(svals[i]);
  }
  free(skeys);
  free(svals);
  free(sleases);

  /* etcd at rest: the workers' keepalives and the master's own traffic, nothing from us */
  sleep(2);
  double r0 = etcd_requests(), i0 = now_s();
  sleep((unsigned)idle_s);
  double r1 = etcd_requests(), idle = now_s() - i0;
  int alive = n_workers - (free_workers >= 1) - (free_workers >= 2) + (real > 0);
  printf("idle: %.0f etcd requests in %.1f s = %.1f/s over 3 members, %.3f per worker per second "
         "(%d live workers%s and the master; target < 1)\n",
         r1 - r0, idle, (r1 - r0) / idle, (r1 - r0) / idle / alive, alive,
         real > 0 ? ", one a real dmhost worker," : "");

  /* query-status of the task over all workers' status keys */
  double *lat = calloc((size_t)calls, sizeof *lat);
  char out[64];
  snprintf(out, sizeof out, "/tmp/bench-cluster-qs.%d.json", (int)getpid());
  for (int i = 0; i < calls; i++)
    lat[i] = query_status(dmctl, addr, out);
  FILE *f = fopen(out, "r");
  int entries = 0;
  char line[4096];
  while (f && fgets(line, sizeof line, f))
    entries += strstr(line, "\"totalEvents\"") != NULL;
  if (f)
    fclose(f);
  unlink(out);
  if (entries != n_status) {
    fprintf(stderr, "sim: query-status shows %d subtask statuses, %d were put\n", entries,
            n_status);
    return 1;
  }
  qsort(lat, (size_t)calls, sizeof *lat, cmp_double);
  printf("query-status %s (%d subtask statuses, one per worker): %d calls of dmctl, p50 %.1f ms, "
         "p99 %.1f ms, max %.1f ms (target p99 < 200 ms)\n",
         TASK, entries, calls, lat[calls / 2], lat[(calls * 99 + 99) / 100 - 1], lat[calls - 1]);
  http_query_status(addr, calls, lat);
  qsort(lat, (size_t)calls, sizeof *lat, cmp_double);
  printf("query-status %s over HTTP (POST /control, one connection, no dmctl): %d calls, p50 %.1f "
         "ms, p99 %.1f ms, max %.1f ms\n",
         TASK, calls, lat[calls / 2], lat[(calls * 99 + 99) / 100 - 1], lat[calls - 1]);
  free(lat);

  if (real > 0) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/status", (int)real);
    long real_hwm = vm_hwm_kib_of(path);
    key(k, DMH_KEY_BOUND, "real-worker", NULL, NULL);
    size_t bound_real = key_count(c, k);
    kill(real, SIGTERM);
    int st;
    waitpid(real, &st, 0);
    if (bound_real || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      fprintf(stderr, "sim: the real worker was %s, exit status %d\n",
              bound_real ? "bound" : "free", st);
      return 1;
    }
    printf("real dmhost worker, free and idle: peak RSS %ld KiB\n", real_hwm);
  }
  long hwm = vm_hwm_kib_of("/proc/self/status");
  printf("sim peak RSS: %ld KiB, %ld KiB before the workers: %.1f KiB per fake worker (its lease "
         "keeper thread and etcd connection)\n",
         hwm, hwm0, (double)(hwm - hwm0) / n_workers);

  for (int i = 0; i < n_workers; i++) {
    if (ws[i].keeper)
      dmh_etcd_keeper_stop(ws[i].keeper);
    dmh_etcd_lease_revoke(c, ws[i].lease, &err); /* the revoked ones answer not found */
  }
  free(ws);
  free(keys);
  free(vals);
  dmh_etcd_close(c);
  curl_global_cleanup();
  return 0;
}
