/*
 * Configs sent over the network (issue 20, items 4, 7 and 8; docs/security.md, "Configs sent over
 * the network"): a task file whose text arrives in a request (dmctl --master-addr, the HTTP API's
 * POST /api/v1/dmhost/tasks) is submitted content. With a TCP listener standing in for the target that
 * counts every connection, each attack must be a coded error and reach nothing:
 * - password-file naming a root-only file of the daemon's machine (0640, like /etc/shadow);
 * - password-encrypted with secret-key-path pointing at the daemon's real key;
 * - password-file = "/dev/zero" and a FIFO (bounded: refused at once, not read);
 * - file-mode widened to 0644; an @include of /dev/zero.
 * The same task placed by the operator and named over the socket is accepted (the listener then
 * sees the connection), so the refusals are about provenance only.
 */
#include <CUnit/Basic.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dmhost/error.h"
#include "e2e_util.h"
#include "http_util.h"

static int target_fd = -1, target_port;
static atomic_int target_seen, target_stop;
static pthread_t target_thread;

/* The stand-in target: every connection accepted, counted and closed at once (a client then
 * fails fast instead of waiting for a handshake). */
static void *target_main(void *arg) {
  (void)arg;
  while (!atomic_load(&target_stop)) {
    struct pollfd p = {.fd = target_fd, .events = POLLIN};
    if (poll(&p, 1, 100) <= 0)
      continue;
    int fd = accept(target_fd, NULL, NULL);
    if (fd >= 0) {
      atomic_fetch_add(&target_seen, 1);
      close(fd);
    }
  }
  return NULL;
}

static void target_open(void) {
  target_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  CU_ASSERT_FATAL(target_fd >= 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  CU_ASSERT_FATAL(bind(target_fd, (struct sockaddr *)&a, sizeof a) == 0);
  CU_ASSERT_FATAL(listen(target_fd, 16) == 0);
  CU_ASSERT_FATAL(getsockname(target_fd, (struct sockaddr *)&a, &len) == 0);
  target_port = ntohs(a.sin_port);
  CU_ASSERT_FATAL(pthread_create(&target_thread, NULL, target_main, NULL) == 0);
}

static void target_close(void) {
  atomic_store(&target_stop, 1);
  pthread_join(target_thread, NULL);
  close(target_fd);
}

/* Connections the target got so far. */
static int target_connections(void) {
  return atomic_load(&target_seen);
}

static void task_text(const char *file, const char *db_extra, const char *top) {
  e2e_write(file,
            "name = \"evil\";\ntask-mode = \"full\";\n%s\n"
            "target-database = { host = \"127.0.0.1\"; port = %d; user = \"root\"; %s };\n"
            "mysql-instances = ( { source-id = \"mysql-01\"; } );\n"
            "unit-paths = { dump = \"%s\"; load = \"%s\"; };\n"
            "dump = { items = 0; item-ms = 10; };\n",
            top, target_port, db_extra, FAKE_DUMP, FAKE_LOAD);
}

/* start-task over --master-addr: refused with `code`, naming `what` and the file's line. */
static void refused(const char *file, int code, const char *what) {
  json_object *o = NULL;
  double t0 = e2e_now();
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "start-task", file, NULL), 1);
  CU_ASSERT(e2e_now() - t0 < 10); /* bounded: nothing blocked the request thread */
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), code);
  const char *msg = e2e_str(o, "msg");
  CU_ASSERT(e2e_contains(msg, what));
  CU_ASSERT(e2e_contains(msg, file));
  if (e2e_int(o, "error.ErrCode") != code || !e2e_contains(msg, what))
    fprintf(stderr, "\n  %s: %s\n", file, msg ? msg : "(no msg)");
  json_object_put(o);
  char *stage = e2e_stage("evil");
  CU_ASSERT_PTR_NULL(stage);
  free(stage);
  CU_ASSERT_EQUAL(target_connections(), 0);
}

static void test_submitted_secrets(void) {
  CU_ASSERT_FATAL(e2e_setup() == 0);
  target_open();
  e2e_source("source.cfg", "mysql-01", false);
  http_start("127.0.0.1:0", false);
  e2e_create_source();

  /* A root-only file standing for /etc/shadow, and the daemon's real key. */
  char shadow[400], key[400], fifo[400];
  snprintf(shadow, sizeof shadow, "%s/shadow", e2e_dir);
  e2e_write("shadow", "root:$6$secret:19000:0:99999:7:::\n");
  CU_ASSERT_EQUAL_FATAL(chmod(shadow, 0640), 0);
  snprintf(key, sizeof key, "%s/key", e2e_dir);
  e2e_write("key", "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n");
  CU_ASSERT_EQUAL_FATAL(chmod(key, 0600), 0);
  snprintf(fifo, sizeof fifo, "%s/fifo", e2e_dir);
  CU_ASSERT_EQUAL_FATAL(mkfifo(fifo, 0600), 0);

  char db[600];
  snprintf(db, sizeof db, "password-file = \"%s\";", shadow);
  task_text("t-shadow.cfg", db, "ignore-checking-items = [\"all\"];");
  refused("t-shadow.cfg", DM_ERR_CONFIG_SUBMITTED_SECRET, "password-file");
  snprintf(db, sizeof db, "password-encrypted = \"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\";");
  char top[600];
  snprintf(top, sizeof top, "secret-key-path = \"%s\";\nignore-checking-items = [\"all\"];", key);
  task_text("t-key.cfg", db, top);
  refused("t-key.cfg", DM_ERR_CONFIG_SUBMITTED_SECRET, "secret-key-path");
  task_text("t-env.cfg", "password-env = \"HOME\";", "ignore-checking-items = [\"all\"];");
  refused("t-env.cfg", DM_ERR_CONFIG_SUBMITTED_SECRET, "password-env");
  task_text("t-zero.cfg", "password-file = \"/dev/zero\";", "ignore-checking-items = [\"all\"];");
  refused("t-zero.cfg", DM_ERR_CONFIG_SUBMITTED_SECRET, "--secrets-dir");
  snprintf(db, sizeof db, "password-file = \"%s\";", fifo);
  task_text("t-fifo.cfg", db, "ignore-checking-items = [\"all\"];");
  refused("t-fifo.cfg", DM_ERR_CONFIG_SUBMITTED_SECRET, "--secrets-dir");
  task_text("t-mode.cfg", "password = \"\";",
            "file-mode = \"0644\";\nignore-checking-items = [\"all\"];");
  refused("t-mode.cfg", DM_ERR_CONFIG_SUBMITTED_FILE_MODE, "file-mode");
  task_text("t-inc.cfg", "password = \"\";",
            "@include \"/dev/zero\"\nignore-checking-items = [\"all\"];");
  refused("t-inc.cfg", DM_ERR_CONFIG_SUBMITTED_INCLUDE, "@include");

  /* The HTTP API's route: the same refusal from the body's content. */
  json_object *body = json_object_new_object();
  char *text = NULL;
  size_t len = 0;
  char path[500];
  snprintf(path, sizeof path, "%s/t-shadow.cfg", e2e_dir);
  FILE *f = fopen(path, "r");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  text = calloc(1, 8192);
  len = fread(text, 1, 8191, f);
  fclose(f);
  json_object_object_add(body, "content", json_object_new_string_len(text, (int)len));
  free(text);
  const char *b = json_object_to_json_string(body);
  long status = 0;
  CURLcode rc;
  json_object *o =
      raw_http("POST", "/api/v1/dmhost/tasks", b, strlen(b), NULL, NULL, NULL, &status, &rc);
  json_object_put(body);
  CU_ASSERT_PTR_NOT_NULL(o);
  CU_ASSERT(e2e_contains(json_object_to_json_string(o), "11007"));
  json_object_put(o);
  CU_ASSERT_EQUAL(target_connections(), 0);

  /* Control: the operator's own file named over the socket is read (the target is dialled). */
  http_use_socket();
  CU_ASSERT_EQUAL_FATAL(chmod(shadow, 0600), 0);
  json_object *ok = NULL;
  snprintf(top, sizeof top, "# checks on: the precheck dials the target");
  task_text("t-operator.cfg", "password-file = \"shadow\";", top);
  e2e_dmctl(&ok, "check-task", "t-operator.cfg", NULL);
  const char *m = ok ? json_object_to_json_string(ok) : "";
  CU_ASSERT(!e2e_contains(m, "11007"));
  json_object_put(ok);
  double deadline = e2e_now() + 30;
  while (!target_connections() && e2e_now() < deadline)
    usleep(50000);
  CU_ASSERT(target_connections() > 0);
  CU_ASSERT_EQUAL(e2e_stop(), 0);
  target_close();
  e2e_teardown();
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"submitted secrets, file-mode, include: refused, nothing dialled", test_submitted_secrets},
  };
  return http_run_tests("control http submitted", tests, sizeof tests / sizeof tests[0]);
}
