/*
 * Regression tests for issue 9, items 2 and 4: the relay folder against names from outside, and
 * the modes of what the relay creates (FIXTURES_REQUIRED mariadb).
 *
 * Before the fix the relay opened the file a ROTATE event named with create + truncate, relative
 * to its sub-folder: a proxy between dmhost and the source that rewrote one ROTATE to
 * "../../victim.txt" made the relay truncate that file and write binlog bytes into it. A server
 * uuid of "../x" created the sub-folder outside the relay folder; a symbolic link planted at the
 * next binlog file name was followed. And every file was 0644, every folder 0755.
 *
 * The proxy here sits on 127.0.0.1 between the relay and the real source, forwards the MySQL
 * protocol packet by packet and rewrites one thing: the first ROTATE event of a binlog dump (CRC32
 * recomputed, so only the name is hostile), or the answer to SELECT @@gtid_domain_id (the MariaDB
 * half of the relay's server uuid).
 */
#include <CUnit/Basic.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <json-c/json.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cunit_run.h"
#include "dmhost/binlog.h"
#include "dmhost/sdk.h"
#include "fs_modes.h"
#include "relay_test_util.h"
#include "testdb.h"

/* ---- the proxy ---- */

#define RP_MAX_CONNS 64

typedef struct rp_proxy {
  int lfd;
  unsigned port;
  unsigned upstream_port;
  const char *rotate_to; /* the first ROTATE of each binlog dump names this file (NULL: no) */
  const char *domain_to; /* the answer to SELECT @@gtid_domain_id (NULL: no) */
  atomic_int rewrites;   /* rewrites done: the attack reached the relay */
  atomic_bool stop;
  pthread_t accept_thread;
  pthread_mutex_t lock;
  int n_conns;
  struct rp_conn *conns[RP_MAX_CONNS];
} rp_proxy;

typedef struct rp_buf {
  unsigned char *p;
  size_t len, cap;
} rp_buf;

typedef struct rp_conn {
  rp_proxy *px;
  int cfd, sfd; /* client (the relay), server (the source) */
  pthread_t th;
  bool dumping, rotated, domain_pending;
  rp_buf from_client, from_server;
} rp_conn;

static void rp_append(rp_buf *b, const void *d, size_t n) {
  if (b->len + n > b->cap) {
    b->cap = (b->len + n) * 2 + 4096;
    b->p = realloc(b->p, b->cap);
  }
  memcpy(b->p + b->len, d, n);
  b->len += n;
}

static bool rp_write_all(int fd, const unsigned char *p, size_t n) {
  while (n) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return false;
    p += w;
    n -= (size_t)w;
  }
  return true;
}

static uint32_t rp_le32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void rp_put32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}

/* Send one packet (seq, payload) to fd. */
static bool rp_send_packet(int fd, unsigned char seq, const unsigned char *payload, size_t n) {
  unsigned char h[4] = {(unsigned char)n, (unsigned char)(n >> 8), (unsigned char)(n >> 16), seq};
  return rp_write_all(fd, h, 4) && rp_write_all(fd, payload, n);
}

/* A packet from the relay: remember a binlog dump or the domain query; forward as is. */
static bool rp_client_packet(rp_conn *c, unsigned char seq, const unsigned char *p, size_t n) {
  static const char q[] = "SELECT @@gtid_domain_id";
  if (seq == 0 && n >= 1) {
    if (p[0] == 0x12 || p[0] == 0x1e) { /* COM_BINLOG_DUMP, COM_BINLOG_DUMP_GTID */
      c->dumping = true;
      c->rotated = false;
    }
    if (p[0] == 0x03 && c->px->domain_to && n - 1 == sizeof q - 1 && memcmp(p + 1, q, n - 1) == 0)
      c->domain_pending = true;
  }
  return rp_send_packet(c->sfd, seq, p, n);
}

/* A packet from the source: maybe rewritten, then forwarded. */
static bool rp_server_packet(rp_conn *c, unsigned char seq, const unsigned char *p, size_t n) {
  rp_proxy *px = c->px;
  bool digits = n >= 2 && p[0] == n - 1;
  for (size_t i = 1; digits && i < n; i++)
    digits = p[i] >= '0' && p[i] <= '9';
  if (c->domain_pending && digits) {
    /* the row of the domain query: one length-encoded string of digits */
    unsigned char out[256];
    size_t l = strlen(px->domain_to);
    out[0] = (unsigned char)l;
    memcpy(out + 1, px->domain_to, l);
    c->domain_pending = false;
    atomic_fetch_add(&px->rewrites, 1);
    return rp_send_packet(c->cfd, seq, out, l + 1);
  }
  if (px->rotate_to && c->dumping && !c->rotated && n >= 1 + 19 + 8 && p[0] == 0x00 &&
      p[1 + 4] == DM_BINLOG_ROTATE) {
    const unsigned char *ev = p + 1;
    size_t evlen = n - 1;
    bool crc = evlen >= 19 + 8 + 4 && dm_binlog_crc32(0, ev, evlen - 4) == rp_le32(ev + evlen - 4);
    size_t l = strlen(px->rotate_to);
    size_t nlen = 19 + 8 + l + (crc ? 4 : 0);
    unsigned char *out = malloc(1 + nlen);
    out[0] = 0x00;
    memcpy(out + 1, ev, 19 + 8);
    memcpy(out + 1 + 19 + 8, px->rotate_to, l);
    rp_put32(out + 1 + 9, (uint32_t)nlen); /* event size */
    if (crc)
      rp_put32(out + 1 + nlen - 4, dm_binlog_crc32(0, out + 1, nlen - 4));
    c->rotated = true;
    atomic_fetch_add(&px->rewrites, 1);
    bool ok = rp_send_packet(c->cfd, seq, out, 1 + nlen);
    free(out);
    return ok;
  }
  return rp_send_packet(c->cfd, seq, p, n);
}

/* Complete packets of b go to fn; the rest stays. */
static bool rp_drain(rp_conn *c, rp_buf *b,
                     bool (*fn)(rp_conn *, unsigned char, const unsigned char *, size_t)) {
  size_t at = 0;
  bool ok = true;
  while (ok && b->len - at >= 4) {
    size_t n = (size_t)b->p[at] | (size_t)b->p[at + 1] << 8 | (size_t)b->p[at + 2] << 16;
    if (b->len - at < 4 + n)
      break;
    ok = fn(c, b->p[at + 3], b->p + at + 4, n);
    at += 4 + n;
  }
  memmove(b->p, b->p + at, b->len - at);
  b->len -= at;
  return ok;
}

static void *rp_conn_main(void *arg) {
  rp_conn *c = arg;
  unsigned char buf[65536];
  for (;;) {
    struct pollfd p[2] = {{.fd = c->cfd, .events = POLLIN}, {.fd = c->sfd, .events = POLLIN}};
    if (poll(p, 2, 100) < 0 && errno != EINTR)
      break;
    if (atomic_load(&c->px->stop))
      break;
    bool ok = true;
    for (int i = 0; i < 2 && ok; i++) {
      if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      ssize_t r = recv(p[i].fd, buf, sizeof buf, 0);
      if (r <= 0) {
        ok = false;
        break;
      }
      rp_buf *b = i == 0 ? &c->from_client : &c->from_server;
      rp_append(b, buf, (size_t)r);
      ok = rp_drain(c, b, i == 0 ? rp_client_packet : rp_server_packet);
    }
    if (!ok)
      break;
  }
  shutdown(c->cfd, SHUT_RDWR);
  shutdown(c->sfd, SHUT_RDWR);
  return NULL;
}

static void *rp_accept_main(void *arg) {
  rp_proxy *px = arg;
  while (!atomic_load(&px->stop)) {
    struct pollfd p = {.fd = px->lfd, .events = POLLIN};
    if (poll(&p, 1, 100) <= 0)
      continue;
    int cfd = accept(px->lfd, NULL, NULL);
    if (cfd < 0)
      continue;
    int sfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)px->upstream_port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    pthread_mutex_lock(&px->lock);
    if (sfd < 0 || connect(sfd, (struct sockaddr *)&a, sizeof a) < 0 ||
        px->n_conns == RP_MAX_CONNS) {
      pthread_mutex_unlock(&px->lock);
      close(cfd);
      if (sfd >= 0)
        close(sfd);
      continue;
    }
    rp_conn *c = calloc(1, sizeof *c);
    c->px = px;
    c->cfd = cfd;
    c->sfd = sfd;
    px->conns[px->n_conns++] = c;
    pthread_create(&c->th, NULL, rp_conn_main, c);
    pthread_mutex_unlock(&px->lock);
  }
  return NULL;
}

static int rp_start(rp_proxy *px, const char *rotate_to, const char *domain_to) {
  memset(px, 0, sizeof *px);
  testdb_params p;
  testdb_params_get(TESTDB_SOURCE, &p);
  px->upstream_port = p.port;
  px->rotate_to = rotate_to;
  px->domain_to = domain_to;
  pthread_mutex_init(&px->lock, NULL);
  px->lfd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t al = sizeof a;
  if (px->lfd < 0 || bind(px->lfd, (struct sockaddr *)&a, sizeof a) < 0 ||
      listen(px->lfd, 16) < 0 || getsockname(px->lfd, (struct sockaddr *)&a, &al) < 0)
    return -1;
  px->port = ntohs(a.sin_port);
  return pthread_create(&px->accept_thread, NULL, rp_accept_main, px) == 0 ? 0 : -1;
}

static void rp_stop(rp_proxy *px) {
  atomic_store(&px->stop, true);
  pthread_join(px->accept_thread, NULL);
  for (int i = 0; i < px->n_conns; i++) {
    rp_conn *c = px->conns[i];
    pthread_join(c->th, NULL);
    close(c->cfd);
    close(c->sfd);
    free(c->from_client.p);
    free(c->from_server.p);
    free(c);
  }
  close(px->lfd);
  pthread_mutex_destroy(&px->lock);
}

/* ---- checks ---- */

/* The first error of the subtask's status: code and resumable; false when there is none. */
static bool rp_first_error(dmh_subtask *st, int *code, bool *resumable, char *msg, size_t len) {
  json_object *js = dmh_subtask_status_json(st), *res, *errs, *e0, *v;
  bool found = false;
  if (json_object_object_get_ex(js, "result", &res) &&
      json_object_object_get_ex(res, "errors", &errs) && json_object_array_length(errs) > 0) {
    e0 = json_object_array_get_idx(errs, 0);
    found = true;
    *code = json_object_object_get_ex(e0, "ErrCode", &v) ? json_object_get_int(v) : 0;
    *resumable = json_object_object_get_ex(e0, "Resumable", &v) && json_object_get_boolean(v);
    dm_strlcpy(msg, json_object_object_get_ex(e0, "Message", &v) ? json_object_get_string(v) : "",
               len);
  }
  json_object_put(js);
  return found;
}

/* The relay stopped on its own with `want` (not resumable); waits up to 10 s. */
static void rp_expect_stopped(dmh_subtask *relay, int want) {
  dmh_stage stage = dmh_subtask_wait_settled(relay, 10000);
  CU_ASSERT_EQUAL(stage, DMH_STAGE_PAUSED);
  int code = 0;
  bool resumable = true;
  char msg[1024] = "";
  /* not fatal: the checks of what was written (or not) outside the folder follow all the same */
  CU_ASSERT_TRUE(rp_first_error(relay, &code, &resumable, msg, sizeof msg));
  CU_ASSERT_EQUAL(code, want);
  CU_ASSERT_FALSE(resumable);
  if (code != want)
    fprintf(stderr, "\n  relay error %d: %s\n", code, msg);
}

static void rp_write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  fputs(text, f);
  fclose(f);
}

static bool rp_file_is(const char *path, const char *text) {
  char buf[256] = "";
  FILE *f = fopen(path, "r");
  if (!f)
    return false;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  return strcmp(buf, text) == 0;
}

/* The test folder holds exactly `want` (NULL-terminated): nothing was created beside the relay
 * folder. */
static void rp_expect_entries(const char *dir, const char *const *want) {
  DIR *d = opendir(dir);
  CU_ASSERT_PTR_NOT_NULL_FATAL(d);
  struct dirent *e;
  int n = 0, known = 0;
  while ((e = readdir(d))) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    n++;
    bool ok = false;
    for (int i = 0; want[i]; i++)
      ok |= strcmp(e->d_name, want[i]) == 0;
    known += ok;
    if (!ok)
      fprintf(stderr, "\n  unexpected %s/%s\n", dir, e->d_name);
  }
  closedir(d);
  CU_ASSERT_EQUAL(n, known);
}

/* ---- the tests ---- */

/* A ROTATE naming ../../victim.txt: the file outside stays as it was, the relay stops with the
 * coded error, nothing is written outside the relay folder. */
static void test_rotate_traversal(void) {
  rp_proxy px;
  CU_ASSERT_EQUAL_FATAL(rp_start(&px, "../../victim.txt", NULL), 0);
  rt_env e;
  CU_ASSERT_EQUAL_FATAL(rt_setup_ex(&e, "relay_rot", "status-interval = 100;", px.port, NULL), 0);
  char victim[400];
  snprintf(victim, sizeof victim, "%s/victim.txt", e.dir);
  rp_write_file(victim, "precious data\n");
  dmh_subtask *relay = rt_relay_start(&e);
  CU_ASSERT_PTR_NOT_NULL_FATAL(relay);
  rp_expect_stopped(relay, DM_ERR_RELAY_BAD_NAME);
  CU_ASSERT(atomic_load(&px.rewrites) >= 1); /* the hostile ROTATE reached the relay */
  dmh_subtask_destroy(relay);
  CU_ASSERT_TRUE(rp_file_is(victim, "precious data\n"));
  static const char *const top[] = {"relay", "work", "source.cfg", "victim.txt", NULL};
  rp_expect_entries(e.dir, top);
  /* the sub-folder holds no binlog file, and relay.meta (if any) does not name the hostile file */
  char sub[256];
  dm_position meta;
  if (rt_relay_meta(&e, sub, sizeof sub, &meta) == 0)
    CU_ASSERT_PTR_NULL(strstr(meta.name, ".."));
  rp_stop(&px);
  rt_teardown(&e);
}

/* A server uuid of "../x-1" (the domain id answered as "../x"): no sub-folder outside, the coded
 * error. */
static void test_uuid_traversal(void) {
  rp_proxy px;
  CU_ASSERT_EQUAL_FATAL(rp_start(&px, NULL, "../x"), 0);
  rt_env e;
  CU_ASSERT_EQUAL_FATAL(rt_setup_ex(&e, "relay_uuid", "status-interval = 100;", px.port, NULL), 0);
  dmh_subtask *relay = rt_relay_start(&e);
  CU_ASSERT_PTR_NOT_NULL_FATAL(relay);
  rp_expect_stopped(relay, DM_ERR_RELAY_BAD_NAME);
  CU_ASSERT(atomic_load(&px.rewrites) >= 1);
  dmh_subtask_destroy(relay);
  static const char *const top[] = {"relay", "work", "source.cfg", NULL};
  rp_expect_entries(e.dir, top);
  static const char *const none[] = {NULL};
  rp_expect_entries(e.relay_dir, none); /* no sub-folder, no index line */
  rp_stop(&px);
  rt_teardown(&e);
}

/* A symbolic link planted at the next binlog file's name in the sub-folder is not followed. */
static void test_symlink_not_followed(void) {
  rt_env e;
  CU_ASSERT_EQUAL_FATAL(rt_setup(&e, "relay_link", "status-interval = 100;"), 0);
  MYSQL *c = testdb_connect(TESTDB_SOURCE);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  testdb_recreate_db(c, e.name);
  dmh_subtask *relay = rt_relay_start(&e);
  CU_ASSERT_PTR_NOT_NULL_FATAL(relay);
  CU_ASSERT_EQUAL(rt_workload(c, e.name, 20, 5), 0);
  /* The next binlog file's name, planted as a link before the relay gets there. Other tests share
   * the source and may rotate it meanwhile: then the relay has made that file already (EEXIST),
   * and the test looks again at the newest file. A rotation after the link is planted only makes
   * the relay meet the link sooner. */
  dm_position target, meta;
  char sub[256], next[300], link[900], victim[400];
  snprintf(victim, sizeof victim, "%s/victim2.txt", e.dir);
  rp_write_file(victim, "precious data\n");
  int planted = -1;
  for (int attempt = 0; attempt < 10 && planted != 0; attempt++) {
    CU_ASSERT_EQUAL_FATAL(rt_master_pos(c, &target), 0);
    CU_ASSERT_EQUAL_FATAL(rt_wait_relay(&e, &target, 30000), 0);
    CU_ASSERT_EQUAL_FATAL(rt_relay_meta(&e, sub, sizeof sub, &meta), 0);
    /* the name FLUSH LOGS gives next: same base, number + 1, same width */
    char *dot = strrchr(target.name, '.');
    CU_ASSERT_PTR_NOT_NULL_FATAL(dot);
    snprintf(next, sizeof next, "%.*s.%0*lu", (int)(dot - target.name), target.name,
             (int)strlen(dot + 1), strtoul(dot + 1, NULL, 10) + 1);
    snprintf(link, sizeof link, "%s/%s/%s", e.relay_dir, sub, next);
    planted = symlink(victim, link);
    CU_ASSERT_FATAL(planted == 0 || errno == EEXIST);
  }
  CU_ASSERT_EQUAL_FATAL(planted, 0);
  CU_ASSERT_EQUAL(testdb_exec(c, "FLUSH LOGS"), 0);
  rp_expect_stopped(relay, DM_ERR_RELAY_LINK);
  dmh_subtask_destroy(relay);
  CU_ASSERT_TRUE(rp_file_is(victim, "precious data\n"));
  struct stat sb;
  CU_ASSERT_TRUE(lstat(link, &sb) == 0 && S_ISLNK(sb.st_mode)); /* still the planted link */
  testdb_execf(c, "DROP DATABASE `%s`", e.name);
  testdb_close(c);
  rt_teardown(&e);
}

/* Item 4: under umask 022 the relay's folders are 0700 and its files 0600; with file-mode
 * "0640", 0750 and 0640. */
static void rp_modes(const char *top, mode_t file_mode, mode_t dir_mode) {
  rt_env e;
  CU_ASSERT_EQUAL_FATAL(rt_setup_ex(&e, "relay_modes", "status-interval = 100;", 0, top), 0);
  MYSQL *c = testdb_connect(TESTDB_SOURCE);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  testdb_recreate_db(c, e.name);
  dmh_subtask *relay = rt_relay_start(&e);
  CU_ASSERT_PTR_NOT_NULL_FATAL(relay);
  /* the relay has connected and reads the current file before the FLUSH LOGS, else under load it
   * may start after it and write one binlog file only */
  dm_position start;
  CU_ASSERT_EQUAL_FATAL(rt_master_pos(c, &start), 0);
  CU_ASSERT_EQUAL_FATAL(rt_wait_relay(&e, &start, 30000), 0);
  CU_ASSERT_EQUAL(rt_workload(c, e.name, 20, 7), 0);
  CU_ASSERT_EQUAL(testdb_exec(c, "FLUSH LOGS"), 0);
  CU_ASSERT_EQUAL(rt_workload(c, e.name, 20, 8), 0);
  dm_position target;
  CU_ASSERT_EQUAL(rt_master_pos(c, &target), 0);
  CU_ASSERT_EQUAL(rt_wait_relay(&e, &target, 30000), 0);
  dmh_subtask_destroy(relay);
  /* index, relay.meta, two binlog files at least */
  CU_ASSERT(fsm_check_tree(e.relay_dir, file_mode, dir_mode, NULL, NULL) >= 4);
  fsm_check_tree(e.work, file_mode, dir_mode, NULL, NULL);
  testdb_execf(c, "DROP DATABASE `%s`", e.name);
  testdb_close(c);
  rt_teardown(&e);
}

static void test_modes_default(void) {
  rp_modes(NULL, 0600, 0700);
}

static void test_modes_widened(void) {
  rp_modes("file-mode = \"0640\";", 0640, 0750);
}

static const dmh_cunit_test tests[] = {
    {"ROTATE naming ../../victim.txt through a proxy", test_rotate_traversal},
    {"server uuid ../x through a proxy", test_uuid_traversal},
    {"symbolic link at the next binlog file", test_symlink_not_followed},
    {"modes 0600/0700 by default (umask 022)", test_modes_default},
    {"modes with file-mode = \"0640\"", test_modes_widened},
};

int main(void) {
  umask(022); /* the usual default, under which the old code made 0644 files and 0755 folders */
  return dmh_cunit_run("relay paths and modes", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
