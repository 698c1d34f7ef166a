/*
 * The HTTP API under load: `dmhost serve --listen` with a running task (the fake sync of
 * tests/fixtures, moving), DMH_API_LOAD_CLIENTS clients (200), each with its own keep-alive
 * connection asking GET /api/v1/dmhost/tasks/{task}/status, for DMH_API_LOAD_SECONDS (30) in each of two
 * phases: paced (each client every 50 ms: 4000 requests a second in all, a dashboard's polling
 * many times over), then a closed loop (each client sends its next request as soon as its answer
 * comes: the daemon's own throughput). DMH_API_LOAD_INTERVAL_MS runs one phase only (0: the
 * closed loop). Every answer must be a 200 with result true (no refused or dropped connection),
 * the task still Running at the end, and the p99 latency of the answers under DMH_API_LOAD_P99_MS
 * (50), the slowest under DMH_API_LOAD_WORST_MS (300; a thread per connection left one waiting
 * 343 ms in a closed loop, 555-669 ms when it also read /proc/net/tcp to admit). Paced, those are
 * the bounds. In the closed loop the mean latency is the clients over the rate (Little's law): it
 * measures how fast the machine is, not how the daemon treats a client, and this 2-core VM's speed
 * varies twofold from hour to hour (the same client binary took 18 us a request one day, 36-41 us
 * the next; the hypervisor took 17-23% of the cores during a run). There the p99 must be under
 * 50 ms or under DMH_API_LOAD_P99_MEANS (6) times the loop's own mean, whichever is larger, and the
 * slowest under 300 ms or DMH_API_LOAD_WORST_MEANS (20) means: a fast machine keeps the absolute
 * promise, a slow one the fairness (no connection served far behind the others; a thread per
 * connection's worst was 51 means). The rate itself is measured in bench/api. Prints the request
 * count, the rate, the mean, p50, p99, the worst, and the CPU per request of the daemon's HTTP
 * server (its dmhost_http_cpu_seconds_total) and of this client.
 *
 * The clients are one thread driving every connection from one epoll loop, so that 200 clients
 * are not 200 client threads competing with the daemon for the cores (on a 2-core machine the
 * scheduler's round robin over them would be the tail measured). It speaks the HTTP/1.1 it needs
 * itself (a GET, an answer of Content-Length bytes): curl_multi took 45 us of CPU a request, more
 * than the daemon's server, on the same two cores. A request's latency is from its send to the
 * last byte of its answer read.
 */
#include <CUnit/Basic.h>
#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <json-c/json.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "control_http.h"
#include "cunit_run.h"
#include "e2e_util.h"

static char addr[64];
/* bench/api: DMH_API_LOAD_ADDR names another server already serving the status path (nginx with
 * a copy of the daemon's answer: the ceiling of this client and machine); no daemon is started
 * and its metrics are not read. */
static const char *external;

/* One client: its connection, its answer as it arrives, when its request left, when the next one
 * is due (paced). */
typedef struct client {
  int fd; /* -1: none (closed: the next request connects again) */
  char *body;
  size_t len, cap;
  double t0, next;
  bool busy;
} client;

/* One phase's run. */
typedef struct load {
  int ep;      /* epoll of the clients' connections */
  double *lat; /* ms */
  size_t n, cap;
  long errors;
  char first_error[256];
  int in_flight;
  struct sockaddr_in to; /* the daemon */
} load;

/* The request of every load client, its Host the daemon's address (a Host of another name is
 * refused: docs/security.md, "The web browser"); made once addr is known (load_request_make). */
static char load_request[160];
static size_t load_request_len;

static void load_request_make(void) {
  load_request_len =
      (size_t)snprintf(load_request, sizeof load_request,
                       "GET /api/v1/dmhost/tasks/inc/status HTTP/1.1\r\nHost: %s\r\n\r\n", addr);
}

static size_t collect(char *ptr, size_t size, size_t n, void *ud) {
  client *c = ud;
  size_t k = size * n;
  if (c->len + k + 1 > c->cap) {
    size_t cap = c->cap ? c->cap * 2 : 4096;
    while (cap < c->len + k + 1)
      cap *= 2;
    char *nb = realloc(c->body, cap);
    if (!nb)
      return 0;
    c->body = nb;
    c->cap = cap;
  }
  memcpy(c->body + c->len, ptr, k);
  c->len += k;
  c->body[c->len] = '\0';
  return k;
}

/* A daemon serving HTTP on a free loopback port (addr), with the source mysql-01 of `source` (a
 * file name) created when given. */
static void serve_http(const char *source) {
  CU_ASSERT_FATAL(e2e_setup() == 0);
  const char *extra[] = {"--listen", "127.0.0.1:0", NULL};
  CU_ASSERT_FATAL(e2e_start_with(extra, false));
  CU_ASSERT_FATAL(e2e_http_addr(addr, sizeof addr));
  load_request_make();
  if (source) {
    e2e_source(source, "mysql-01", false);
    json_object *o = NULL;
    CU_ASSERT_EQUAL_FATAL(e2e_dmctl(&o, "operate-source", "create", source, NULL), 0);
    json_object_put(o);
  }
}

/* An easy handle asking http://addr`path`, its answer collected into `c`. */
static CURL *new_handle(const char *path, client *c) {
  char url[160];
  snprintf(url, sizeof url, "http://%s%s", addr, path);
  CURL *h = curl_easy_init();
  CU_ASSERT_FATAL(h != NULL);
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT, 20L);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
  return h;
}

static void load_close(load *l, client *c) {
  if (c->fd >= 0) {
    epoll_ctl(l->ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
  }
  c->fd = -1;
}

/* The request of `c` is over: its latency kept, or an error counted (`why`, the first one kept);
 * in a closed loop the next one is sent at once. */
static void send_request(load *l, client *c);
static void finish(load *l, client *c, const char *why, double interval, double deadline) {
  double now = e2e_now();
  c->busy = false;
  l->in_flight--;
  if (why) {
    if (l->errors++ == 0)
      snprintf(l->first_error, sizeof l->first_error, "%s: %.160s", why, c->body ? c->body : "");
    load_close(l, c);
  }
  if (l->n == l->cap) {
    l->cap = l->cap ? l->cap * 2 : 65536;
    l->lat = realloc(l->lat, l->cap * sizeof *l->lat);
  }
  l->lat[l->n++] = (now - c->t0) * 1000;
  if (interval <= 0 && now < deadline)
    send_request(l, c); /* a closed loop: the next at once */
}

static void send_request(load *l, client *c) {
  c->len = 0;
  c->busy = true;
  c->t0 = e2e_now();
  l->in_flight++;
  if (c->fd < 0) {
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&l->to, sizeof l->to) < 0 ||
        setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0 ||
        epoll_ctl(l->ep, EPOLL_CTL_ADD, c->fd, &ev) < 0) {
      finish(l, c, "cannot connect", 0, 0);
      return;
    }
  }
  if (send(c->fd, load_request, load_request_len, MSG_NOSIGNAL) != (ssize_t)load_request_len)
    finish(l, c, "cannot send the request", 0, 0);
}

/* The answer of `c`, once whole: a 200 of Content-Length bytes whose body says the task runs. */
static void on_readable(load *l, client *c, double interval, double deadline) {
  if (c->len + 65536 > c->cap) {
    c->cap = c->len + 65536 + c->cap;
    c->body = realloc(c->body, c->cap);
  }
  ssize_t n = recv(c->fd, c->body + c->len, c->cap - c->len - 1, MSG_DONTWAIT);
  if (n <= 0 || !c->busy) {
    if (n < 0 && errno == EAGAIN)
      return;
    if (!c->busy) { /* not asked: counted as an error of its own */
      l->in_flight++;
      c->busy = true;
    }
    c->body[c->len] = '\0';
    finish(l, c, n == 0 ? "the daemon closed the connection" : "answer not asked for", interval,
           deadline);
    return;
  }
  c->len += (size_t)n;
  c->body[c->len] = '\0';
  const char *end = strstr(c->body, "\r\n\r\n");
  if (!end)
    return; /* the headers are not all in */
  const char *cl = strcasestr(c->body, "\r\nContent-Length:");
  if (!cl || cl > end) {
    finish(l, c, "an answer without Content-Length", interval, deadline);
    return;
  }
  size_t head = (size_t)(end + 4 - c->body), want = strtoul(cl + 17, NULL, 10);
  if (c->len < head + want)
    return; /* the body is not all in */
  json_object *o = strncmp(c->body, "HTTP/1.1 200 ", 13) == 0 && c->len == head + want
                       ? json_tokener_parse(c->body + head)
                       : NULL;
  bool ok =
      o && e2e_bool(o, "result") && e2e_str_is(o, "sources.0.subTaskStatus.0.stage", "Running");
  json_object_put(o);
  finish(l, c, ok ? NULL : "not a 200 saying the task runs", interval, deadline);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double env_num(const char *name, double dflt) {
  const char *v = getenv(name);
  return v && *v ? atof(v) : dflt;
}

/* A series of the daemon's GET /metrics, -1 when it cannot be read. */
static double daemon_metric(const char *series) {
  client c = {0};
  CURL *h = new_handle("/metrics", &c);
  double v = -1;
  if (curl_easy_perform(h) == CURLE_OK && c.body) {
    size_t n = strlen(series);
    for (const char *p = c.body; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
      if (strncmp(p, series, n) == 0 && p[n] == ' ')
        v = strtod(p + n + 1, NULL);
  }
  curl_easy_cleanup(h);
  free(c.body);
  return v;
}

static double client_cpu(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
         ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6;
}

/* The bounds of a phase: absolute (ms), and in a closed loop also relative to the loop's mean
 * latency (the larger one holds: the file's comment says why). */
typedef struct bounds {
  double p99_ms, worst_ms, p99_means, worst_means;
  double cpu_ratio; /* the daemon's CPU a request over the client's, at most */
} bounds;

/* One phase: `clients` clients for `secs`, each every `interval` s (0: a closed loop). */
static void run_phase(int clients, double secs, double interval, bounds b) {
  load l = {.ep = epoll_create1(EPOLL_CLOEXEC)};
  CU_ASSERT_FATAL(l.ep >= 0);
  l.to = (struct sockaddr_in){.sin_family = AF_INET,
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
                              .sin_port = htons((uint16_t)atoi(strchr(addr, ':') + 1))};
  client *cs = calloc((size_t)clients, sizeof *cs);
  CU_ASSERT_FATAL(cs != NULL);
  double cpu0 = external ? 0 : daemon_metric("dmhost_http_cpu_seconds_total");
  double req0 = external ? 0 : daemon_metric("dmhost_http_requests_total");
  double mine0 = client_cpu();
  double start = e2e_now(), deadline = start + secs;
  for (int i = 0; i < clients; i++) {
    cs[i].fd = -1;
    /* paced clients spread over the interval, as independent pollers are */
    cs[i].next = start + (interval > 0 ? interval * i / clients : 0);
  }
  double due = start; /* the first request due (paced) */
  for (;;) {
    double now = e2e_now();
    if (now >= due) { /* a closed loop's clients send from finish once started */
      due = interval > 0 ? deadline : 1e300;
      for (int i = 0; i < clients; i++) {
        client *c = &cs[i];
        if (!c->busy && now < deadline && c->next <= now) {
          send_request(&l, c);
          c->next += interval;
          if (c->next < now)
            c->next = now + interval; /* behind: no burst to catch up */
        }
        if (interval > 0 && c->next < due)
          due = c->next;
      }
    }
    if (now >= deadline && l.in_flight == 0)
      break;
    if (now >= deadline + 20) { /* unanswered for 20 s */
      for (int i = 0; i < clients; i++)
        if (cs[i].busy)
          finish(&l, &cs[i], "no answer within 20 s", interval, deadline);
      break;
    }
    /* rounded up: a wait of 0 would spin until the next request is due */
    long wait =
        now < deadline ? (long)((due < deadline ? due - now : deadline - now) * 1000) + 1 : 100;
    struct epoll_event evs[256];
    int n = epoll_wait(l.ep, evs, 256, (int)(wait < 0 ? 0 : wait));
    for (int i = 0; i < n; i++)
      on_readable(&l, evs[i].data.ptr, interval, deadline);
  }
  double took = e2e_now() - start;
  double mine = client_cpu() - mine0;
  double cpu = external ? -1 : daemon_metric("dmhost_http_cpu_seconds_total") - cpu0;
  double reqs =
      external ? -1
               : daemon_metric("dmhost_http_requests_total") - req0 - 1; /* less the first scrape */
  double server_us = reqs > 0 ? cpu / reqs * 1e6 : -1;
  for (int i = 0; i < clients; i++) {
    load_close(&l, &cs[i]);
    free(cs[i].body);
  }
  free(cs);
  close(l.ep);
  size_t total = l.n;
  double client_us = total ? mine / (double)total * 1e6 : -1;
  qsort(l.lat, total, sizeof *l.lat, cmp_double);
  double p50 = total ? l.lat[total / 2] : -1, p99 = total ? l.lat[(size_t)(total * 0.99)] : -1;
  double worst = total ? l.lat[total - 1] : -1, mean = 0;
  for (size_t i = 0; i < total; i++)
    mean += l.lat[i] / (double)total;
  double p99_max = b.p99_ms, worst_max = b.worst_ms;
  /* Paced, the offered rate is clients / interval; a machine that cannot serve it (other work on
   * its 2 cores: the fresh-clone run's 3,616/s of 4,000 at load 12) queues every request, as a
   * closed loop does, and is held to the same bound: its own mean's multiple. */
  bool kept_up = interval <= 0 || total / took >= 0.95 * clients / interval;
  if (!kept_up)
    fprintf(stderr,
            "\n  (paced: %.0f/s of the %.0f/s offered: the bounds are the mean's multiples)",
            total / took, clients / interval);
  if (!kept_up || interval <= 0) { /* a slow machine's bound is its own mean's multiple */
    /* twice the closed loop's when paced: a machine just short of the rate queues in bursts
     * (the queue builds while other work runs, then drains), so the mean stays low while the
     * tail holds the bursts (a -j2 run beside two other builds, load 8: 3,771/s of 4,000, mean
     * 15 ms, p99 102 ms = 6.6 means; its closed loop 4.2) */
    double k = interval > 0 ? 2 : 1;
    p99_max = mean * b.p99_means * k > p99_max ? mean * b.p99_means * k : p99_max;
    worst_max = mean * b.worst_means * k > worst_max ? mean * b.worst_means * k : worst_max;
  }
  if (interval > 0)
    fprintf(stderr, "\n  %d clients, each a request every %.0f ms,", clients, interval * 1000);
  else
    fprintf(stderr, "\n  %d clients in a closed loop,", clients);
  fprintf(
      stderr,
      " for %.0f s: %zu GET /api/v1/dmhost/tasks/inc/status (%.0f/s), %ld errors; mean %.2f ms, "
      "p50 %.2f ms, p99 %.2f ms, worst %.2f ms (limits %.1f and %.1f ms); CPU a request: the "
      "daemon's HTTP server %.0f us (%.0f requests), this client %.0f us",
      secs, total, total / took, l.errors, mean, p50, p99, worst, p99_max, worst_max, server_us,
      reqs, client_us);
  if (l.errors)
    fprintf(stderr, "\n  the first error: %s", l.first_error);
  fprintf(stderr, "\n");
  free(l.lat);
  CU_ASSERT(total > (size_t)clients); /* every client was answered more than once */
  CU_ASSERT_EQUAL(l.errors, 0);
  CU_ASSERT(p99 >= 0 && p99 < p99_max);
  CU_ASSERT(worst < worst_max); /* no client left waiting behind the others */
  if (external)
    return;                         /* another server (bench/api): its CPU is not known here */
  CU_ASSERT(reqs >= (double)total); /* the daemon counted them: the CPU is theirs */
  /* The daemon's cost a request, in units of this client's (the same code every run: a measure of
   * the machine's speed that moves with it): 1.8-2.2 measured, 1.4 on a faster day. */
  CU_ASSERT(server_us > 0 && client_us > 0 && server_us < b.cpu_ratio * client_us);
}

/* bench/api: the daemon's answer to the status path, saved into DMH_API_LOAD_SAVE. */
static void save_answer(const char *file) {
  client c = {0};
  CURL *h = new_handle("/api/v1/dmhost/tasks/inc/status", &c);
  FILE *f = curl_easy_perform(h) == CURLE_OK && c.body ? fopen(file, "w") : NULL;
  CU_ASSERT_FATAL(f != NULL);
  CU_ASSERT(fwrite(c.body, 1, c.len, f) == c.len);
  fclose(f);
  curl_easy_cleanup(h);
  free(c.body);
}

static void test_load(void) {
  int clients = (int)env_num("DMH_API_LOAD_CLIENTS", 200);
  double secs = env_num("DMH_API_LOAD_SECONDS", 30);
  bounds b = {.p99_ms = env_num("DMH_API_LOAD_P99_MS", 50),
              .worst_ms = env_num("DMH_API_LOAD_WORST_MS", 300),
              .p99_means = env_num("DMH_API_LOAD_P99_MEANS", 6),
              .worst_means = env_num("DMH_API_LOAD_WORST_MEANS", 20),
              .cpu_ratio = env_num("DMH_API_LOAD_CPU_RATIO", 4)};
  const char *one = getenv("DMH_API_LOAD_INTERVAL_MS");
  if ((external = getenv("DMH_API_LOAD_ADDR")) && *external) {
    snprintf(addr, sizeof addr, "%s", external);
    load_request_make();
    run_phase(clients, secs, one && *one ? atof(one) / 1000 : 0, b);
    return;
  }
  serve_http("source.cfg");
  e2e_task("inc.cfg", "inc", "incremental", "mysql-01", "sync = { items = 0; item-ms = 10; };");
  json_object *o = NULL;
  CU_ASSERT_EQUAL_FATAL(e2e_dmctl(&o, "start-task", "inc.cfg", NULL), 0);
  json_object_put(o);
  CU_ASSERT_FATAL(e2e_wait_stage("inc", "Running", 10));
  bool in_order;
  int before = e2e_items("inc", "sync", &in_order);

  if (one && *one) {
    run_phase(clients, secs, atof(one) / 1000, b);
  } else {
    run_phase(clients, secs, 0.050, b); /* paced */
    run_phase(clients, secs, 0, b);     /* closed loop */
  }

  const char *save = getenv("DMH_API_LOAD_SAVE");
  if (save && *save)
    save_answer(save);
  /* the task went on under the load, and the daemon answers */
  CU_ASSERT(e2e_wait_stage("inc", "Running", 5));
  CU_ASSERT(e2e_items("inc", "sync", &in_order) > before);
  CU_ASSERT(in_order);
  CU_ASSERT_EQUAL(e2e_stop(), 0);
  e2e_teardown();
}

/* One slow command: POST `path` over its own connection, its status and how long it took. */
typedef struct slow_call {
  pthread_t thread;
  const char *path;
  long status;
  double secs;
} slow_call;

static void *run_slow(void *ud) {
  slow_call *s = ud;
  client c = {0};
  CURL *h = new_handle(s->path, &c);
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, "");
  /* a write is taken only as JSON (docs/security.md, "The web browser") */
  struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
  double t0 = e2e_now();
  if (curl_easy_perform(h) == CURLE_OK)
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &s->status);
  s->secs = e2e_now() - t0;
  curl_easy_cleanup(h);
  curl_slist_free_all(hdr);
  free(c.body);
  return NULL;
}

/* Commands that wait run off the server's event threads: three pause-task (each waits 1.5 s for
 * its sync unit, which is slow to stop), more than the server has event threads, run at once
 * and hold up no other client: GET status on another connection keeps answering within 200 ms
 * meanwhile (DMH_API_LOAD_SLOW_MS; a sanitized build's answers are several times slower). Held
 * up behind a pause, the first answer would take over 1.3 s, so any bound well under it tells. */
static void test_slow_commands(void) {
  serve_http("source.cfg");
  json_object *o = NULL;
  const char *names[] = {"slow1", "slow2", "slow3", "quick"};
  for (int i = 0; i < 4; i++) {
    char file[32];
    snprintf(file, sizeof file, "%s.cfg", names[i]);
    e2e_task(file, names[i], "incremental", "mysql-01",
             i < 3 ? "sync = { items = 0; item-ms = 10; ignore-stop-ms = 1500; };"
                   : "sync = { items = 0; item-ms = 10; };");
    CU_ASSERT_EQUAL_FATAL(e2e_dmctl(&o, "start-task", file, NULL), 0);
    json_object_put(o);
    CU_ASSERT_FATAL(e2e_wait_stage(names[i], "Running", 10));
  }
  slow_call calls[3] = {{.path = "/api/v1/dmhost/tasks/slow1/pause"},
                        {.path = "/api/v1/dmhost/tasks/slow2/pause"},
                        {.path = "/api/v1/dmhost/tasks/slow3/pause"}};
  double start = e2e_now();
  for (int i = 0; i < 3; i++)
    CU_ASSERT_FATAL(pthread_create(&calls[i].thread, NULL, run_slow, &calls[i]) == 0);
  client c = {0};
  CURL *h = new_handle("/api/v1/dmhost/tasks/quick/status", &c);
  double worst = 0;
  int answered = 0;
  e2e_sleep_ms(200); /* the pauses are in */
  while (e2e_now() - start < 1.2) {
    c.len = 0;
    double t0 = e2e_now();
    long status = 0;
    if (curl_easy_perform(h) == CURLE_OK)
      curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    double ms = (e2e_now() - t0) * 1000;
    worst = ms > worst ? ms : worst;
    json_object *o = status == 200 && c.body ? json_tokener_parse(c.body) : NULL;
    answered +=
        e2e_bool(o, "result") && e2e_str_is(o, "sources.0.subTaskStatus.0.stage", "Running");
    json_object_put(o);
    e2e_sleep_ms(20);
  }
  curl_easy_cleanup(h);
  free(c.body);
  for (int i = 0; i < 3; i++) {
    pthread_join(calls[i].thread, NULL);
    CU_ASSERT_EQUAL(calls[i].status, 200);
    CU_ASSERT(calls[i].secs >= 1.4); /* the precondition: each pause did wait for its unit */
    CU_ASSERT(calls[i].secs < 2.5);  /* and the three waited at once, none behind another */
  }
  fprintf(
      stderr,
      "\n  3 pause-task of %.1f, %.1f, %.1f s; %d status answers meanwhile, the slowest %.1f ms\n",
      calls[0].secs, calls[1].secs, calls[2].secs, answered, worst);
  CU_ASSERT(answered >= 20);
  CU_ASSERT(worst < env_num("DMH_API_LOAD_SLOW_MS", 200));
  for (int i = 0; i < 3; i++)
    CU_ASSERT(e2e_wait_stage(names[i], "Paused", 5));
  CU_ASSERT_EQUAL(e2e_stop(), 0);
  e2e_teardown();
}

/* Entries of /proc/net/tcp (the machine's IPv4 TCP sockets); those with an end on `port` in
 * *on_port. */
static int tcp_sockets(int port, int *on_port) {
  FILE *f = fopen("/proc/net/tcp", "r");
  int n = -1; /* less the header */
  char line[512], want[16];
  snprintf(want, sizeof want, ":%04X", (unsigned)port);
  *on_port = 0;
  while (f && fgets(line, sizeof line, f)) {
    char local[64] = "", remote[64] = "";
    n++;
    if (sscanf(line, " %*s %63s %63s", local, remote) == 2 &&
        (strstr(local, want) || strstr(remote, want)))
      ++*on_port;
  }
  if (f)
    fclose(f);
  return n;
}

/* A new connection's admission (its peer's uid) is one lookup of its own socket, whatever the
 * number of sockets on the machine: with 3,000 more loopback sockets open, a request on a new
 * connection still answers in under 5 ms (the median of 30; reading /proc/net/tcp took ~15 ms
 * a connection at that size). */
static void test_admission_cost(void) {
  serve_http(NULL);
  enum { PAIRS = 1500, TRIES = 30 };
  int *fds = malloc(2 * PAIRS * sizeof *fds), nfds = 0;
  int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in la = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof la;
  CU_ASSERT_FATAL(fds && l >= 0 && bind(l, (struct sockaddr *)&la, sizeof la) == 0 &&
                  listen(l, PAIRS) == 0 && getsockname(l, (struct sockaddr *)&la, &len) == 0);

  for (int i = 0; i < PAIRS; i++) {
    int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c < 0 || connect(c, (struct sockaddr *)&la, sizeof la) < 0)
      break;
    fds[nfds++] = c;
    int a = accept(l, NULL, NULL);
    if (a < 0)
      break;
    fds[nfds++] = a;
  }
  int mine, after = tcp_sockets(ntohs(la.sin_port), &mine);
  CU_ASSERT_FATAL(mine >= 2 * PAIRS); /* the precondition: they are listed */
  double ms[TRIES];
  for (int i = 0; i < TRIES; i++) {
    client c = {0};
    CURL *h = new_handle("/api/v1/dmhost/tasks", &c);
    double t0 = e2e_now();
    long status = 0;
    if (curl_easy_perform(h) == CURLE_OK)
      curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    ms[i] = (e2e_now() - t0) * 1000;
    CU_ASSERT_EQUAL(status, 200); /* admitted */
    curl_easy_cleanup(h);
    free(c.body);
  }
  qsort(ms, TRIES, sizeof *ms, cmp_double);
  fprintf(
      stderr,
      "\n  %d TCP sockets on the machine: a request on a new connection %.2f ms (median of %d)\n",
      after, ms[TRIES / 2], TRIES);
  CU_ASSERT(ms[TRIES / 2] < 5);
  for (int i = 0; i < nfds; i++)
    close(fds[i]);
  close(l);
  free(fds);
  CU_ASSERT_EQUAL(e2e_stop(), 0);
  e2e_teardown();
}

/* A raw HTTP/1.1 keep-alive request on a new connection to the daemon: the socket, the first
 * bytes of the answer in buf (0 bytes: closed; -1: nothing within 3 s). */
static int raw_request(char *buf, size_t size, ssize_t *got) {
  struct sockaddr_in sa = {.sin_family = AF_INET,
                           .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
                           .sin_port = htons((uint16_t)atoi(strchr(addr, ':') + 1))};
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  *got = -1;
  if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
    if (fd >= 0)
      close(fd);
    return -1;
  }
  char req[160];
  int req_len =
      snprintf(req, sizeof req, "GET /api/v1/dmhost/tasks HTTP/1.1\r\nHost: %s\r\n\r\n", addr);
  if (send(fd, req, (size_t)req_len, MSG_NOSIGNAL) < 0) {
    *got = 0; /* closed already */
    return fd;
  }
  struct pollfd p = {.fd = fd, .events = POLLIN};
  if (poll(&p, 1, 3000) == 1) {
    *got = recv(fd, buf, size - 1, 0);
    if (*got < 0)
      *got = 0; /* reset: closed */
    buf[*got] = '\0';
  }
  return fd;
}

/* The HTTP server serves DMH_CONTROL_HTTP_MAX_CONNECTIONS (256) connections at once over its pool
 * of threads: all 256 are answered, the 257th is closed on accept (not left waiting), and once
 * one closes a new one is served again. */
static void test_connection_limit(void) {
  serve_http(NULL);
  enum { MAX = DMH_CONTROL_HTTP_MAX_CONNECTIONS };
  int fds[MAX], answered = 0;
  char buf[4096];
  ssize_t got;
  for (int i = 0; i < MAX; i++) {
    fds[i] = raw_request(buf, sizeof buf, &got);
    answered += got > 0 && strncmp(buf, "HTTP/1.1 200", 12) == 0;
  }
  CU_ASSERT_EQUAL_FATAL(answered, MAX); /* the precondition: all open, each served */
  int extra_fd = raw_request(buf, sizeof buf, &got);
  CU_ASSERT_EQUAL(got, 0); /* closed, not answered and not left waiting */
  if (extra_fd >= 0)
    close(extra_fd);
  close(fds[0]);
  fds[0] = -1;
  bool served = false;
  for (int tries = 0; tries < 50 && !served; tries++) {
    int fd = raw_request(buf, sizeof buf, &got);
    served = got > 0 && strncmp(buf, "HTTP/1.1 200", 12) == 0;
    if (fd >= 0)
      close(fd);
    if (!served)
      e2e_sleep_ms(20); /* the daemon sees the close */
  }
  CU_ASSERT(served);
  char *log = e2e_serve_log();
  CU_ASSERT(e2e_contains(log, "256 connections are open, the most served at once"));
  free(log);
  for (int i = 1; i < MAX; i++)
    close(fds[i]);
  CU_ASSERT_EQUAL(e2e_stop(), 0);
  e2e_teardown();
}

int main(void) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  const dmh_cunit_test tests[] = {
      {"200 clients on GET status, paced then in a closed loop, 30 s each: no error, p99 under "
       "50 ms (or 6 means in the closed loop, 12 on a machine short of the paced rate)",
       test_load},
      {"commands that wait hold up no other client", test_slow_commands},
      {"a new connection is admitted in one lookup, whatever the sockets", test_admission_cost},
      {"256 connections at once, the next closed on accept", test_connection_limit},
  };
  /* DMH_API_LOAD_TEST_ONLY: the tests whose name holds it (bench/api: "200 clients") */
  const dmh_cunit_suite suite = {"api load", NULL, NULL, tests, sizeof tests / sizeof tests[0]};
  int rc = dmh_cunit_run_suites(&suite, 1, "DMH_API_LOAD_TEST_ONLY");
  curl_global_cleanup();
  return rc;
}
