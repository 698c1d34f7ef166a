/* Helpers of the daemon end-to-end tests (e2e_util.h). */
#include "e2e_util.h"

#include <CUnit/Basic.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "control_socket.h"
#include "dmhost/sdk.h"
#include "test_file.h"

char e2e_dir[256];
char e2e_state[300]; /* <dir>/state */
pid_t e2e_pid = -1;
const char *e2e_dmctl_target[9];

/* ---- helpers ---- */

bool e2e_contains(const char *haystack, const char *needle) {
  if (haystack && strstr(haystack, needle))
    return true;
  fprintf(stderr, "\n  expected \"%s\" in \"%s\"\n", needle, haystack ? haystack : "(null)");
  return false;
}

void e2e_sleep_ms(int ms) {
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
    ;
}

double e2e_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void e2e_write(const char *name, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  dmh_test_vwritef(e2e_dir, name, fmt, ap);
  va_end(ap);
}

char *e2e_read_file(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f)
    return NULL;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  n = fread(buf, 1, cap - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

/* The source file of every test: source mysql-01 (or `id`) with the fake relay. */
void e2e_source(const char *file, const char *id, bool enable_relay) {
  e2e_write(file,
            "source-id = \"%s\";\n"
            "enable-relay = %s;\n"
            "from = { host = \"127.0.0.1\"; port = 1; user = \"root\"; password = \"\"; };\n"
            "unit-paths = { relay = \"%s\"; };\n"
            "relay = { items = 0; item-ms = 20; };\n",
            id, enable_relay ? "true" : "false", FAKE_RELAY);
}

/* A task file: `units` holds the unit sections (dump = {...}; ...). */
void e2e_task(const char *file, const char *name, const char *mode, const char *source,
              const char *units) {
  e2e_write(file,
            "name = \"%s\";\ntask-mode = \"%s\";\n"
            "target-database = { host = \"127.0.0.1\"; port = 2; user = \"root\"; password = \"\"; "
            "};\n"
            "mysql-instances = ( { source-id = \"%s\"; } );\n"
            "unit-paths = { dump = \"%s\"; load = \"%s\"; sync = \"%s\"; };\n"
            "supervisor = { stop-timeout = 5; auto-resume = { enable = false; }; };\n"
            "ignore-checking-items = [\"all\"]; # no servers behind the fake units\n%s\n",
            name, mode, source, FAKE_DUMP, FAKE_LOAD, FAKE_SYNC, units);
}

int e2e_setup(void) {
  snprintf(e2e_dir, sizeof e2e_dir, "/tmp/dmh-e2e-XXXXXX");
  if (!mkdtemp(e2e_dir))
    return -1;
  snprintf(e2e_state, sizeof e2e_state, "%s/state", e2e_dir);
  return 0;
}

char *e2e_serve_log(void) {
  char path[512];
  snprintf(path, sizeof path, "%s/serve.log", e2e_dir);
  return e2e_read_file(path);
}

char *e2e_wait_log(const char *needle, double secs) {
  double until = e2e_now() + secs;
  char *log = e2e_serve_log();
  while (!e2e_contains(log, needle) && e2e_now() < until) {
    free(log);
    e2e_sleep_ms(50);
    log = e2e_serve_log();
  }
  return log;
}

bool e2e_http_addr(char *addr, size_t size) {
  char *log = e2e_serve_log();
  const char *p = log ? strstr(log, "control plane on http") : NULL;
  p = p ? strstr(p, "://") : NULL;
  p = p ? strchr(p + 3, ':') : NULL; /* after an IPv4 address */
  int port = p ? atoi(p + 1) : 0;
  free(log);
  snprintf(addr, size, "127.0.0.1:%d", port);
  return port > 0;
}

void e2e_show_log(void) {
  char *log = e2e_serve_log();
  fprintf(stderr, "\n---- serve.log ----\n%s-------------------\n", log ? log : "(none)");
  free(log);
}

int e2e_teardown(void) {
  if (e2e_pid > 0) {
    kill(e2e_pid, SIGKILL);
    waitpid(e2e_pid, NULL, 0);
    e2e_pid = -1;
  }
  if (CU_get_number_of_failures() > 0)
    e2e_show_log(); /* keep the folder too, for a look */
  else {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", e2e_dir);
    if (system(cmd) != 0)
      return -1;
  }
  return 0;
}

/* Start the daemon on the state dir (with the `extra` arguments, NULL-terminated; may be NULL)
 * and wait until it answers. */
bool e2e_start_with(const char *const *extra, bool quiet) {
  pid_t pid = fork();
  if (pid == 0) {
    char log[512];
    snprintf(log, sizeof log, "%s/serve.log", e2e_dir);
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, STDERR_FILENO);
      dup2(fd, STDOUT_FILENO);
    }
    /* The fake units' folder (the build's tests/fixtures): the daemon loads builds only from
     * --plugin-dir and --unit-dir folders (docs/security.md, "Unit builds the daemon loads"). */
    char units[512];
    snprintf(units, sizeof units, "%s", FAKE_DUMP);
    char *slash = strrchr(units, '/');
    if (slash)
      *slash = '\0';
    const char *argv[32] = {DMHOST_BIN,    "serve", "--state-dir", e2e_state,
                            "--log-level", "info",  "--unit-dir",  units};
    int argc = 8;
    for (int i = 0; extra && extra[i] && argc < 31; i++)
      argv[argc++] = extra[i];
    argv[argc] = NULL;
    execv(DMHOST_BIN, (char *const *)argv);
    _exit(127);
  }
  if (pid < 0)
    return false;
  e2e_pid = pid;
  char sock[400];
  snprintf(sock, sizeof sock, "%s/dmhost.sock", e2e_state);
  double deadline = e2e_now() + 15;
  while (e2e_now() < deadline) {
    int status;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      e2e_pid = -1;
      if (!quiet) {
        fprintf(stderr, "\n  dmhost serve exited early (status %d)\n", status);
        e2e_show_log();
      }
      return false;
    }
    char *answer = NULL;
    dm_error err;
    if (dmh_control_call(sock, "{\"cmd\": \"help\"}", 1000, &answer, &err) == 0) {
      free(answer);
      return true;
    }
    e2e_sleep_ms(20);
  }
  fprintf(stderr, "\n  dmhost serve did not answer on %s\n", sock);
  return false;
}

bool e2e_start_ex(bool quiet) {
  return e2e_start_with(NULL, quiet);
}

bool e2e_start(void) {
  return e2e_start_ex(false);
}

/* SIGTERM the daemon; returns its exit status (or -1 if it did not exit within 30 s). */
int e2e_stop(void) {
  if (e2e_pid <= 0)
    return -1;
  kill(e2e_pid, SIGTERM);
  double deadline = e2e_now() + 30;
  int status = 0;
  while (e2e_now() < deadline) {
    if (waitpid(e2e_pid, &status, WNOHANG) == e2e_pid) {
      e2e_pid = -1;
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    e2e_sleep_ms(20);
  }
  return -1;
}

/* Run dmctl with --state-dir and the arguments (NULL-terminated); *out gets the parsed stdout.
 * Returns dmctl's exit status. */
int e2e_dmctl(json_object **out, ...) {
  const char *argv[32];
  int argc = 0;
  argv[argc++] = DMCTL_BIN;
  if (e2e_dmctl_target[0]) {
    for (int k = 0; e2e_dmctl_target[k] && k < 8; k++)
      argv[argc++] = e2e_dmctl_target[k];
  } else {
    argv[argc++] = "--state-dir";
    argv[argc++] = e2e_state;
  }
  va_list ap;
  va_start(ap, out);
  const char *a;
  while ((a = va_arg(ap, const char *)) != NULL && argc < 31)
    argv[argc++] = a;
  va_end(ap);
  argv[argc] = NULL;
  int pfd[2];
  if (pipe(pfd) < 0)
    return -1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(pfd[1], STDOUT_FILENO);
    close(pfd[0]);
    close(pfd[1]);
    if (chdir(e2e_dir) != 0) /* relative paths are the user's, made absolute by dmctl */
      _exit(126);
    execv(DMCTL_BIN, (char *const *)argv);
    _exit(127);
  }
  close(pfd[1]);
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  ssize_t r;
  while ((r = read(pfd[0], buf + n, cap - n - 1)) > 0) {
    n += (size_t)r;
    if (n + 1 >= cap) {
      cap *= 2;
      buf = realloc(buf, cap);
    }
  }
  buf[n] = '\0';
  close(pfd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  json_object *o = json_tokener_parse(buf);
  if (!o)
    fprintf(stderr, "\n  dmctl printed no JSON: %s\n", buf);
  free(buf);
  if (out)
    *out = o;
  else
    json_object_put(o);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* dmctl in the background (output dropped); returns its pid. */
pid_t e2e_dmctl_async(const char *a1, const char *a2) {
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open("/dev/null", O_WRONLY);
    if (fd >= 0)
      dup2(fd, STDOUT_FILENO);
    execl(DMCTL_BIN, DMCTL_BIN, "--state-dir", e2e_state, a1, a2, (char *)NULL);
    _exit(127);
  }
  return pid;
}

/* A raw request on the socket; the parsed answer. */
json_object *e2e_raw(const char *request) {
  char sock[400];
  snprintf(sock, sizeof sock, "%s/dmhost.sock", e2e_state);
  char *answer = NULL;
  dm_error err;
  if (dmh_control_call(sock, request, 10000, &answer, &err) < 0) {
    fprintf(stderr, "\n  raw request failed: %s\n", err.message);
    return NULL;
  }
  json_object *o = json_tokener_parse(answer);
  free(answer);
  return o;
}

int e2e_collect_child(pid_t pid, int fd, char *buf, size_t size) {
  size_t n = 0;
  ssize_t r;
  while (n < size - 1 && (r = read(fd, buf + n, size - 1 - n)) > 0)
    n += (size_t)r;
  buf[n] = '\0';
  close(fd);
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Follow "a.b.0.c" (numbers index arrays). */
json_object *e2e_get(json_object *o, const char *path) {
  char buf[256];
  dm_strlcpy(buf, path, sizeof buf);
  char *save = NULL;
  for (char *tok = strtok_r(buf, ".", &save); tok && o; tok = strtok_r(NULL, ".", &save)) {
    if (json_object_is_type(o, json_type_array)) {
      char *end;
      long i = strtol(tok, &end, 10);
      o = *end ? NULL : json_object_array_get_idx(o, (size_t)i);
    } else {
      json_object *next = NULL;
      o = json_object_object_get_ex(o, tok, &next) ? next : NULL;
    }
  }
  return o;
}

const char *e2e_str(json_object *o, const char *path) {
  json_object *v = e2e_get(o, path);
  return v ? json_object_get_string(v) : NULL;
}

int64_t e2e_int(json_object *o, const char *path) {
  json_object *v = e2e_get(o, path);
  return v ? json_object_get_int64(v) : -1;
}

bool e2e_bool(json_object *o, const char *path) {
  json_object *v = e2e_get(o, path);
  return v && json_object_get_boolean(v);
}

bool e2e_str_is(json_object *o, const char *path, const char *want) {
  const char *got = e2e_str(o, path);
  if (got && strcmp(got, want) == 0)
    return true;
  fprintf(stderr, "\n  %s: expected \"%s\", got \"%s\"\n", path, want, got ? got : "(missing)");
  return false;
}

/* The stage of `task` on its first source, by query-status NAME. */
char *e2e_stage(const char *task) {
  json_object *o = NULL;
  e2e_dmctl(&o, "query-status", task, NULL);
  const char *s = e2e_str(o, "sources.0.subTaskStatus.0.stage");
  char *copy = s ? strdup(s) : NULL;
  json_object_put(o);
  return copy;
}

/* Poll until the task's stage is `want` (true) or `secs` pass (false). */
bool e2e_wait_stage(const char *task, const char *want, double secs) {
  double deadline = e2e_now() + secs;
  char *last = NULL;
  while (e2e_now() < deadline) {
    free(last);
    last = e2e_stage(task);
    if (last && strcmp(last, want) == 0) {
      free(last);
      return true;
    }
    e2e_sleep_ms(50);
  }
  fprintf(stderr, "\n  task %s: waited %.0f s for %s, last stage %s\n", task, secs, want,
          last ? last : "(none)");
  free(last);
  return false;
}

/* The items in a fake unit's out.log: count, and whether they are exactly 1..count in order. */
int e2e_items(const char *task, const char *unit, bool *in_order) {
  char path[600];
  snprintf(path, sizeof path, "%s/tasks/%s/mysql-01/%s/out.log", e2e_state, task, unit);
  char *text = e2e_read_file(path);
  *in_order = true;
  if (!text)
    return 0;
  int n = 0;
  char *save = NULL;
  for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    n++;
    if (atoi(line) != n)
      *in_order = false;
  }
  free(text);
  return n;
}

void e2e_begin(void) {
  e2e_source("source.cfg", "mysql-01", false);
  CU_ASSERT_FATAL(e2e_start());
}

void e2e_create_source(void) {
  json_object *o = NULL;
  CU_ASSERT_EQUAL_FATAL(e2e_dmctl(&o, "operate-source", "create", "source.cfg", NULL), 0);
  json_object_put(o);
}
