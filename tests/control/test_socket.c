/*
 * The control socket under hostile or careless clients (issue 9): `dmhost serve` as a child
 * process, driven by dmctl and by raw sockets, with the fake units of tests/fixtures.
 *
 * Regressions, each failing on the code before the fix:
 * - a client that sent requests and never read its answers left its connection thread blocked in
 *   send(): SIGTERM never finished (the shutdown waited for that thread), so the tasks were never
 *   paused and the daemon never exited;
 * - 64 clients that connected and said nothing took every slot: dmctl waited in the backlog until
 *   its timeout;
 * - any local user who could reach the socket file controlled the daemon (no peer check);
 * - swap-unit loaded a library owned by another user, or writable by anyone;
 * - the answer to an over-long request had its own error shape (lowercase "code", "class", ...);
 * - dmctl --timeout 4294968 wrapped (in milliseconds) into a wait of 672 ms.
 */
#include <CUnit/Basic.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "control_socket.h"
#include "cunit_run.h"
#include "dmhost/sdk.h"

#include "e2e_util.h"

#define NOBODY 65534

static void sock_path(char *buf, size_t len) {
  snprintf(buf, len, "%s/dmhost.sock", e2e_state);
}

/* A raw connection to the daemon's socket (blocking), or -1. */
static int sock_connect(void) {
  char path[400];
  sock_path(path, sizeof path);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  dm_strlcpy(addr.sun_path, path, sizeof addr.sun_path);
  if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
    close(fd);
    return -1;
  }
  return fd;
}

/* Read one answer line from fd (blocking, at most `secs`); parsed, or NULL. */
static json_object *sock_read_answer(int fd, double secs) {
  char buf[65536];
  size_t n = 0;
  double deadline = e2e_now() + secs;
  while (n < sizeof buf - 1 && e2e_now() < deadline) {
    struct timeval tv = {.tv_sec = 0, .tv_usec = 100000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ssize_t r = recv(fd, buf + n, sizeof buf - 1 - n, 0);
    if (r < 0 && (errno == EAGAIN || errno == EINTR))
      continue;
    if (r <= 0)
      break;
    n += (size_t)r;
    if (memchr(buf, '\n', n))
      break;
  }
  buf[n] = '\0';
  return n ? json_tokener_parse(buf) : NULL;
}

/* Has the daemon closed fd (EOF) within `secs`? Data still queued is read and dropped. */
static bool sock_closed_within(int fd, double secs) {
  double deadline = e2e_now() + secs;
  char buf[4096];
  while (e2e_now() < deadline) {
    ssize_t r = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
      return true;
    if (r < 0)
      e2e_sleep_ms(20);
  }
  return false;
}

/* A connection that sends requests and never reads: requests are written until the daemon stops
 * taking them for 500 ms (its answers fill our receive buffer, its thread can no longer send, so
 * it no longer reads). Asserts that precondition; returns the connection. */
static int sock_flood(void) {
  int fd = sock_connect();
  if (fd < 0)
    return -1;
  int small = 4096;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
  fcntl(fd, F_SETFL, O_NONBLOCK);
  static const char req[] = "{\"cmd\": \"query-status\"}\n";
  long sent = 0;
  double stuck_since = 0, give_up = e2e_now() + 20;
  while (e2e_now() < give_up) {
    ssize_t w = send(fd, req, sizeof req - 1, MSG_NOSIGNAL);
    if (w > 0) {
      sent++;
      stuck_since = 0;
      continue;
    }
    if (w < 0 && errno != EAGAIN)
      break;
    if (!stuck_since)
      stuck_since = e2e_now();
    else if (e2e_now() - stuck_since > 0.5)
      break;
    e2e_sleep_ms(10);
  }
  int queued = 0;
  ioctl(fd, FIONREAD, &queued);
  /* The precondition: the daemon answered, the answers wait unread, and it stopped reading. */
  CU_ASSERT(sent > 10);
  CU_ASSERT(queued > 0);
  CU_ASSERT(stuck_since > 0 && e2e_now() - stuck_since > 0.5);
  fprintf(stderr, "\n  %ld requests sent, %d bytes of answers unread\n", sent, queued);
  return fd;
}

static void begin_task(const char *name) {
  e2e_create_source();
  e2e_task("task.cfg", name, "incremental", "mysql-01", "sync = { items = 0; item-ms = 10; };");
  json_object *o = NULL;
  CU_ASSERT_EQUAL_FATAL(e2e_dmctl(&o, "start-task", "task.cfg", NULL), 0);
  json_object_put(o);
  CU_ASSERT_FATAL(e2e_wait_stage(name, "Running", 5));
}

/* (a) A client floods requests and never reads: other clients are still served, a task still
 * pauses, and SIGTERM still ends the daemon promptly. The send timeout is set far beyond the test
 * so that only the shutdown itself can free the stuck connection. */
static void test_client_never_reads(void) {
  CU_ASSERT_FATAL(e2e_setup() == 0);
  e2e_source("source.cfg", "mysql-01", false);
  const char *const args[] = {"--send-timeout", "600", NULL};
  CU_ASSERT_FATAL(e2e_start_with(args, false));
  begin_task("inc");

  int fd = sock_flood();
  CU_ASSERT_FATAL(fd >= 0);

  json_object *o = NULL;
  double t0 = e2e_now();
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "query-status", NULL), 0);
  json_object_put(o);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "pause-task", "inc", NULL), 0);
  json_object_put(o);
  CU_ASSERT(e2e_wait_stage("inc", "Paused", 5));
  CU_ASSERT(e2e_now() - t0 < 10);

  t0 = e2e_now();
  CU_ASSERT_EQUAL(e2e_stop(), 0);
  double took = e2e_now() - t0;
  fprintf(stderr, "  SIGTERM to exit: %.2f s\n", took);
  CU_ASSERT(took < 5);
  close(fd);
  e2e_teardown();
}

/* --send-timeout: a client that leaves its answers unread loses its connection. */
static void test_send_timeout(void) {
  CU_ASSERT_FATAL(e2e_setup() == 0);
  e2e_source("source.cfg", "mysql-01", false);
  const char *const args[] = {"--send-timeout", "1", NULL};
  CU_ASSERT_FATAL(e2e_start_with(args, false));
  int fd = sock_flood();
  CU_ASSERT_FATAL(fd >= 0);
  e2e_sleep_ms(2000); /* not reading meanwhile */
  char *text = e2e_serve_log();
  CU_ASSERT(e2e_contains(text, "its client did not take the answer within 1000 ms"));
  free(text);
  CU_ASSERT(sock_closed_within(fd, 5)); /* what was sent before is read, then EOF */
  close(fd);
  CU_ASSERT_EQUAL(e2e_stop(), 0);
  e2e_teardown();
}

/* (b) 70 clients connect and say nothing: dmctl is answered at once (the connection idle longest
 * gives up its slot), and --idle-timeout closes a silent connection by itself. */
static void test_silent_clients(void) {
  CU_ASSERT_FATAL(e2e_setup() == 0);
  e2e_source("source.cfg", "mysql-01", false);
  const char *const args[] = {"--idle-timeout", "2", NULL};
  CU_ASSERT_FATAL(e2e_start_with(args, false));
  enum { N = DMH_CONTROL_MAX_CONNECTIONS + 6 };
  int fds[N];
  int connected = 0;
  for (int i = 0; i < N; i++) {
    fds[i] = sock_connect();
    if (fds[i] >= 0)
      connected++;
  }
  CU_ASSERT_EQUAL_FATAL(connected, N);
  e2e_sleep_ms(200); /* let the daemon accept them all */

  double t0 = e2e_now();
  json_object *o = NULL;
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "--timeout", "5", "query-status", NULL), 0);
  CU_ASSERT(e2e_bool(o, "result"));
  json_object_put(o);
  double took = e2e_now() - t0;
  fprintf(stderr, "\n  dmctl answered in %.2f s behind %d silent clients\n", took, N);
  CU_ASSERT(took < 1.5); /* not by the idle timeout (2 s) */
  /* The 7 oldest silent connections were closed to make room (6 clients and dmctl over the
   * limit), the next one not. */
  CU_ASSERT(sock_closed_within(fds[0], 0.5));
  CU_ASSERT(sock_closed_within(fds[6], 0.5));
  CU_ASSERT_FALSE(sock_closed_within(fds[7], 0.05));
  /* and the idle timeout ends the others */
  CU_ASSERT(sock_closed_within(fds[N - 1], 5));
  for (int i = 0; i < N; i++)
    close(fds[i]);
  CU_ASSERT_EQUAL(e2e_stop(), 0);
  e2e_teardown();
}

/* Run as uid `uid`, gid `gid` with `ngroups` supplementary `groups`: connect, send help, write
 * the answer line to `out`. Exit 0 answered, 3 the socket file is out of reach for this uid (the
 * precondition failed), 4 connect failed, 5 no answer, 6 setuid failed. */
static void peer_child(uid_t uid, gid_t gid, const gid_t *groups, size_t ngroups, int out) {
  char path[400];
  sock_path(path, sizeof path);
  if (setgroups(ngroups, groups) < 0 || setgid(gid) < 0 || setuid(uid) < 0)
    _exit(6);
  if (access(path, R_OK | W_OK) != 0)
    _exit(3);
  int fd = sock_connect();
  if (fd < 0)
    _exit(4);
  static const char req[] = "{\"cmd\": \"help\"}\n";
  /* A refused client may find the connection closed already; its answer is still to be read. */
  if (write(fd, req, sizeof req - 1) < 0 && errno != EPIPE && errno != ECONNRESET)
    _exit(4);
  char buf[8192];
  ssize_t n = read(fd, buf, sizeof buf);
  if (n <= 0)
    _exit(5);
  if (write(out, buf, (size_t)n) < 0)
    _exit(5);
  _exit(0);
}

/* The answer the daemon gave a client of that identity; *status its exit code. */
static json_object *peer_call(uid_t uid, gid_t gid, const gid_t *groups, size_t ngroups,
                              int *status) {
  int pfd[2];
  CU_ASSERT_FATAL(pipe(pfd) == 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(pfd[0]);
    peer_child(uid, gid, groups, ngroups, pfd[1]);
  }
  close(pfd[1]);
  char buf[8192];
  *status = e2e_collect_child(pid, pfd[0], buf, sizeof buf);
  return buf[0] ? json_tokener_parse(buf) : NULL;
}

/* (c) SO_PEERCRED: a client of another uid is refused with the protocol's error, even when the
 * socket file lets it in; --socket-group admits the group's members (primary or supplementary). */
static void test_peer_uid(void) {
  if (geteuid() != 0) {
    fprintf(stderr, "\n  skipped: needs root to run a client as another uid\n");
    return;
  }
  CU_ASSERT_FATAL(e2e_setup() == 0);
  /* Folders the other uid can traverse, and a socket file it may open: only the daemon's own check
   * stands between that uid and the daemon. */
  CU_ASSERT_EQUAL_FATAL(chmod(e2e_dir, 0711), 0);
  CU_ASSERT_EQUAL_FATAL(mkdir(e2e_state, 0711), 0);
  e2e_begin();
  char path[400];
  sock_path(path, sizeof path);
  struct stat st;
  CU_ASSERT_EQUAL_FATAL(stat(path, &st), 0);
  CU_ASSERT_EQUAL(st.st_mode & 077, 0); /* as bound: the owner's only */
  CU_ASSERT_EQUAL_FATAL(chmod(path, 0666), 0);

  int status;
  const gid_t other = 12345;
  json_object *o = peer_call(NOBODY, other, NULL, 0, &status);
  if (status != 0)
    fprintf(stderr, "\n  the client as uid 65534 exited %d\n", status);
  CU_ASSERT_EQUAL(status, 0); /* 3 would mean the filesystem refused, not the daemon */
  CU_ASSERT_PTR_NOT_NULL_FATAL(o);
  CU_ASSERT_FALSE(e2e_bool(o, "result"));
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_CONTROL_PEER);
  CU_ASSERT(e2e_str_is(o, "error.ErrClass", "control"));
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), "running as uid 65534"));
  CU_ASSERT(e2e_contains(e2e_str(o, "error.Workaround"), "--socket-group"));
  json_object_put(o);
  /* root is still served */
  o = e2e_raw("{\"cmd\": \"help\"}");
  CU_ASSERT(e2e_bool(o, "result"));
  json_object_put(o);
  CU_ASSERT_EQUAL(e2e_stop(), 0);

  /* --socket-group: the socket file gets the group and 0660, members get in. */
  struct group *g = getgrgid(NOBODY);
  CU_ASSERT_PTR_NOT_NULL_FATAL(g);
  char gname[64];
  dm_strlcpy(gname, g->gr_name, sizeof gname);
  const char *const args[] = {"--socket-group", gname, NULL};
  CU_ASSERT_FATAL(e2e_start_with(args, false));
  CU_ASSERT_EQUAL_FATAL(stat(path, &st), 0);
  CU_ASSERT_EQUAL(st.st_mode & 0777, 0660);
  CU_ASSERT_EQUAL(st.st_gid, NOBODY);
  o = peer_call(NOBODY, NOBODY, NULL, 0, &status); /* the group as primary group */
  CU_ASSERT_EQUAL(status, 0);
  CU_ASSERT(e2e_bool(o, "result"));
  CU_ASSERT_PTR_NOT_NULL(e2e_get(o, "commands"));
  json_object_put(o);
  const gid_t member[] = {NOBODY};
  o = peer_call(NOBODY, other, member, 1, &status); /* as a supplementary group */
  CU_ASSERT_EQUAL(status, 0);
  CU_ASSERT(e2e_bool(o, "result"));
  json_object_put(o);
  /* still refused: another uid outside the group, the file opened up again */
  CU_ASSERT_EQUAL_FATAL(chmod(path, 0666), 0);
  o = peer_call(NOBODY, other, NULL, 0, &status);
  CU_ASSERT_EQUAL(status, 0);
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_CONTROL_PEER);
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), gname));
  json_object_put(o);
  CU_ASSERT_EQUAL(e2e_stop(), 0);
  e2e_teardown();
}

static void copy_file(const char *from, const char *to) {
  char *cmd = NULL;
  CU_ASSERT_FATAL(asprintf(&cmd, "cp '%s' '%s'", from, to) > 0);
  CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
  free(cmd);
}

static void expect_unit_version(const char *task, const char *version) {
  json_object *o = NULL;
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "query-status", task, NULL), 0);
  CU_ASSERT(e2e_str_is(o, "sources.0.subTaskStatus.0.unitVersion", version));
  CU_ASSERT(e2e_str_is(o, "sources.0.subTaskStatus.0.stage", "Running"));
  json_object_put(o);
}

/* A fresh folder below the fake units' folder (the daemon's --unit-dir, e2e_util.c): builds
 * there pass the folder rule, so what is refused is refused for its owner or mode. */
static char units_dir[512];
static void make_units_dir(void) {
  snprintf(units_dir, sizeof units_dir, "%s", FAKE_DUMP);
  char *slash = strrchr(units_dir, '/');
  CU_ASSERT_PTR_NOT_NULL_FATAL(slash);
  snprintf(slash, sizeof units_dir - (size_t)(slash - units_dir), "/socket-XXXXXX");
  CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(units_dir));
  CU_ASSERT_EQUAL_FATAL(chmod(units_dir, 0755), 0);
}

static void remove_units_dir(void) {
  char *cmd = NULL;
  if (units_dir[0] && asprintf(&cmd, "rm -rf '%s'", units_dir) > 0 && system(cmd) != 0)
    fprintf(stderr, "\n  could not remove %s\n", units_dir);
  free(cmd);
  units_dir[0] = '\0';
}

static bool file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* (d') Units only from the unit folders (issue 20, item 3): a library the daemon itself wrote into
 * its state dir (as the dump writes a source's SHOW CREATE TABLE answer into its work dir: owned
 * by the daemon, mode 0600, which the owner-and-mode check admitted) named by a second task's
 * unit-paths and by swap-unit: refused with DM_ERR_UNIT_FOLDER, its constructor never ran. */
static void test_units_daemon_folders(void) {
  CU_ASSERT_FATAL(e2e_setup() == 0);
  char marker[400], probe[400];
  snprintf(marker, sizeof marker, "%s/marker-ran", e2e_dir);
  snprintf(probe, sizeof probe, "%s/marker-probe", e2e_dir);
  /* Precondition: the library's constructor does create the marker when it is loaded. */
  CU_ASSERT_EQUAL_FATAL(setenv("DMH_TEST_MARKER", probe, 1), 0);
  void *h = dlopen(MARKER_UNIT, RTLD_NOW | RTLD_LOCAL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(h);
  CU_ASSERT_FATAL(file_exists(probe));
  dlclose(h);
  /* The daemon inherits the variable: loading the file anywhere would create `marker`. */
  CU_ASSERT_EQUAL_FATAL(setenv("DMH_TEST_MARKER", marker, 1), 0);
  e2e_begin();
  e2e_create_source();
  e2e_task("task.cfg", "t1", "full", "mysql-01", "dump = { items = 0; item-ms = 10; };");
  json_object *o = NULL;
  CU_ASSERT_EQUAL_FATAL(e2e_dmctl(&o, "start-task", "task.cfg", NULL), 0);
  json_object_put(o);
  CU_ASSERT_FATAL(e2e_wait_stage("t1", "Running", 5));

  char evil[400];
  snprintf(evil, sizeof evil, "%s/tasks/t1/schema-evil.so", e2e_state);
  copy_file(MARKER_UNIT, evil);
  CU_ASSERT_EQUAL_FATAL(chmod(evil, 0600), 0);
  struct stat st;
  CU_ASSERT_EQUAL_FATAL(stat(evil, &st), 0);
  /* what the owner-and-mode check admits: the daemon's own file, nobody else may write it */
  CU_ASSERT_EQUAL_FATAL(st.st_uid, geteuid());
  CU_ASSERT_EQUAL_FATAL(st.st_mode & 07777, 0600);

  e2e_write("task-evil.cfg",
            "name = \"t2\";\ntask-mode = \"full\";\n"
            "target-database = { host = \"127.0.0.1\"; port = 2; user = \"root\"; password = "
            "\"\"; };\n"
            "mysql-instances = ( { source-id = \"mysql-01\"; } );\n"
            "unit-paths = { dump = \"%s\"; load = \"%s\"; };\n"
            "dump = { items = 0; item-ms = 10; };\nignore-checking-items = [\"all\"];\n",
            evil, FAKE_LOAD);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "start-task", "task-evil.cfg", NULL), 1);
  char *text = o ? strdup(json_object_to_json_string(o)) : NULL;
  CU_ASSERT_PTR_NOT_NULL_FATAL(text);
  CU_ASSERT(e2e_contains(text, "12012"));
  CU_ASSERT(e2e_contains(text, "the state dir"));
  free(text);
  json_object_put(o);
  char *t2 = e2e_stage("t2");
  CU_ASSERT_PTR_NULL(t2);
  free(t2);
  CU_ASSERT_FALSE(file_exists(marker));

  CU_ASSERT_EQUAL(e2e_dmctl(&o, "swap-unit", "t1", "--unit", "dump", "--path", evil, NULL), 1);
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_UNIT_FOLDER);
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), "the old build keeps running"));
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), "the state dir"));
  json_object_put(o);
  expect_unit_version("t1", "1");
  CU_ASSERT_FALSE(file_exists(marker));

  /* Root's, 0755, but in no unit folder (the test's /tmp folder): refused the same way. */
  char loose[400];
  snprintf(loose, sizeof loose, "%s/loose.so", e2e_dir);
  copy_file(MARKER_UNIT, loose);
  CU_ASSERT_EQUAL_FATAL(chmod(loose, 0755), 0);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "swap-unit", "t1", "--unit", "dump", "--path", loose, NULL), 1);
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_UNIT_FOLDER);
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), "not in a unit folder"));
  json_object_put(o);
  CU_ASSERT_FALSE(file_exists(marker));
  unsetenv("DMH_TEST_MARKER");
  CU_ASSERT_EQUAL(e2e_stop(), 0);
  e2e_teardown();
}

/* (d) swap-unit refuses a build another user owns or anyone may rewrite; the old build runs on. */
static void test_swap_untrusted(void) {
  if (geteuid() != 0) {
    fprintf(stderr, "\n  skipped: needs root to give a file to another uid\n");
    return;
  }
  CU_ASSERT_FATAL(e2e_setup() == 0);
  e2e_begin();
  e2e_create_source();
  e2e_task("task.cfg", "t1", "full", "mysql-01", "dump = { items = 0; item-ms = 10; };");
  json_object *o = NULL;
  CU_ASSERT_EQUAL_FATAL(e2e_dmctl(&o, "start-task", "task.cfg", NULL), 0);
  json_object_put(o);
  CU_ASSERT_FATAL(e2e_wait_stage("t1", "Running", 5));

  char lib[600];
  make_units_dir();
  snprintf(lib, sizeof lib, "%s/dump-v2.so", units_dir);
  copy_file(FAKE_DUMP_V2, lib);
  CU_ASSERT_EQUAL_FATAL(chmod(lib, 0755), 0);
  CU_ASSERT_EQUAL_FATAL(chown(lib, NOBODY, NOBODY), 0);
  struct stat st;
  CU_ASSERT_EQUAL_FATAL(stat(lib, &st), 0);
  CU_ASSERT_EQUAL_FATAL(st.st_uid, NOBODY);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "swap-unit", "t1", "--unit", "dump", "--path", lib, NULL), 1);
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_UNTRUSTED_FILE);
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), lib));
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), "owned by uid 65534"));
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), "chown root"));
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), "the old build keeps running"));
  json_object_put(o);
  expect_unit_version("t1", "1");

  CU_ASSERT_EQUAL_FATAL(chown(lib, 0, 0), 0);
  CU_ASSERT_EQUAL_FATAL(chmod(lib, 0666), 0);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "swap-unit", "t1", "--unit", "dump", "--path", lib, NULL), 1);
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_UNTRUSTED_FILE);
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), "has mode 0666: it is writable by others"));
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), "chmod go-w"));
  json_object_put(o);
  expect_unit_version("t1", "1");

  /* the same file, root's and 0755: swapped (so the refusals were about owner and mode only) */
  CU_ASSERT_EQUAL_FATAL(chmod(lib, 0755), 0);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "swap-unit", "t1", "--unit", "dump", "--path", lib, NULL), 0);
  json_object_put(o);
  expect_unit_version("t1", "2");

  /* The swapped path is kept across restarts and loaded again at start: with the same check. The
   * file given to another user while the daemon is down is not run (before: loaded unchecked). */
  CU_ASSERT_EQUAL_FATAL(e2e_stop(), 0);
  CU_ASSERT_EQUAL_FATAL(chown(lib, NOBODY, NOBODY), 0);
  CU_ASSERT_FATAL(e2e_start());
  e2e_dmctl(&o, "query-status", "t1", NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(o);
  CU_ASSERT_FALSE(e2e_bool(o, "sources.0.result"));
  CU_ASSERT(e2e_contains(e2e_str(o, "sources.0.msg"), "owned by uid 65534"));
  const char *stage = e2e_str(o, "sources.0.subTaskStatus.0.stage");
  CU_ASSERT(!stage || strcmp(stage, "Running") != 0);
  json_object_put(o);
  /* Given back to root, resume-task loads and runs it. */
  CU_ASSERT_EQUAL_FATAL(chown(lib, 0, 0), 0);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "resume-task", "t1", NULL), 0);
  json_object_put(o);
  CU_ASSERT(e2e_wait_stage("t1", "Running", 5));
  expect_unit_version("t1", "2");

  /* start-task with unit-paths naming another user's file: refused, nothing runs. */
  char other[600];
  snprintf(other, sizeof other, "%s/dump-other.so", units_dir);
  copy_file(FAKE_DUMP_V2, other);
  CU_ASSERT_EQUAL_FATAL(chmod(other, 0755), 0);
  CU_ASSERT_EQUAL_FATAL(chown(other, NOBODY, NOBODY), 0);
  e2e_write("task-other.cfg",
            "name = \"t2\";\ntask-mode = \"full\";\n"
            "target-database = { host = \"127.0.0.1\"; port = 2; user = \"root\"; password = "
            "\"\"; };\n"
            "mysql-instances = ( { source-id = \"mysql-01\"; } );\n"
            "unit-paths = { dump = \"%s\"; load = \"%s\"; };\n"
            "dump = { items = 0; item-ms = 10; };\nignore-checking-items = [\"all\"];\n",
            other, FAKE_LOAD);
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "start-task", "task-other.cfg", NULL), 1);
  char *text = o ? strdup(json_object_to_json_string(o)) : NULL;
  CU_ASSERT_PTR_NOT_NULL_FATAL(text);
  CU_ASSERT(e2e_contains(text, "owned by uid 65534"));
  free(text);
  json_object_put(o);
  char *t2 = e2e_stage("t2"); /* the task was not created */
  CU_ASSERT_PTR_NULL(t2);
  free(t2);
  CU_ASSERT_EQUAL(e2e_stop(), 0);
  remove_units_dir();
  e2e_teardown();
}

/* Collect the member names of an object, sorted, as one string. */
static void member_names(json_object *o, char *buf, size_t len) {
  const char *names[32];
  int n = 0;
  json_object_object_foreach(o, key, val) {
    (void)val;
    if (n < 32)
      names[n++] = key;
  }
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
      const char *t = names[j];
      names[j] = names[j - 1];
      names[j - 1] = t;
    }
  buf[0] = '\0';
  for (int i = 0; i < n; i++)
    snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", i ? "," : "", names[i]);
}

/* (f) The answer to a request over the line limit has every other error answer's shape. */
static void test_too_long_shape(void) {
  CU_ASSERT_FATAL(e2e_setup() == 0);
  e2e_begin();
  json_object *usual = e2e_raw("{\"cmd\": \"nope\"}");
  CU_ASSERT_PTR_NOT_NULL_FATAL(usual);

  int fd = sock_connect();
  CU_ASSERT_FATAL(fd >= 0);
  size_t len = DMH_CONTROL_LINE_MAX;
  char *big = malloc(len);
  CU_ASSERT_PTR_NOT_NULL_FATAL(big);
  memset(big, 'x', len);
  size_t off = 0;
  while (off < len) {
    ssize_t w = send(fd, big + off, len - off, MSG_NOSIGNAL);
    if (w <= 0)
      break;
    off += (size_t)w;
  }
  free(big);
  CU_ASSERT_EQUAL(off, len); /* the whole line reached the daemon */
  json_object *o = sock_read_answer(fd, 10);
  close(fd);
  CU_ASSERT_PTR_NOT_NULL_FATAL(o);
  CU_ASSERT_FALSE(e2e_bool(o, "result"));
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_CONTROL_REQUEST);
  CU_ASSERT(e2e_str_is(o, "error.ErrClass", "control"));
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), "longer than 1048576 bytes"));
  CU_ASSERT(e2e_contains(e2e_str(o, "error.Workaround"), "dmctl help"));
  char want[512], got[512];
  member_names(usual, want, sizeof want);
  member_names(o, got, sizeof got);
  CU_ASSERT_STRING_EQUAL(got, want);
  member_names(e2e_get(usual, "error"), want, sizeof want);
  member_names(e2e_get(o, "error"), got, sizeof got);
  CU_ASSERT_STRING_EQUAL(got, want);
  fprintf(stderr, "\n  error members: %s\n", got);
  json_object_put(o);
  json_object_put(usual);
  CU_ASSERT_EQUAL(e2e_stop(), 0);
  e2e_teardown();
}

/* dmctl --timeout and serve's timeouts refuse values that do not fit, rather than wrap. */
static void test_timeout_flags_range(void) {
  CU_ASSERT_FATAL(e2e_setup() == 0);
  json_object *o = NULL;
  CU_ASSERT_EQUAL(e2e_dmctl(&o, "--timeout", "4294968", "query-status", NULL), 1);
  CU_ASSERT_EQUAL(e2e_int(o, "error.ErrCode"), DM_ERR_CONTROL_REQUEST);
  CU_ASSERT(e2e_contains(e2e_str(o, "msg"), "0..2147483"));
  json_object_put(o);
  const char *const args[] = {"--idle-timeout", "4294968", NULL};
  CU_ASSERT_FALSE(e2e_start_with(args, true));
  char *text = e2e_serve_log();
  CU_ASSERT(
      e2e_contains(text, "--idle-timeout \"4294968\" is not a number of seconds in 1..2147483"));
  free(text);
  e2e_teardown();
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  static const dmh_cunit_test tests[] = {
      {"a client that never reads holds up nothing", test_client_never_reads},
      {"--send-timeout drops a client that does not read", test_send_timeout},
      {"silent clients do not lock dmctl out", test_silent_clients},
      {"peer uid check and --socket-group", test_peer_uid},
      {"swap-unit refuses an untrusted file", test_swap_untrusted},
      {"units only from the unit folders", test_units_daemon_folders},
      {"an over-long request gets the usual error shape", test_too_long_shape},
      {"timeout flags refuse values that do not fit", test_timeout_flags_range},
  };
  return dmh_cunit_run("control socket", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
