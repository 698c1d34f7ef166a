/*
 * Starting and stopping tests/db/rogue_server.py (see rogue.h).
 */
#include "rogue.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

int testdb_rogue_start(testdb_rogue *r, const char *mode, const char *target,
                       const char *const *extra) {
  static unsigned seq;
  memset(r, 0, sizeof *r);
  r->pid = -1;
  snprintf(r->record, sizeof r->record, "/tmp/dmh-rogue-%d-%u.rec", (int)getpid(), seq++);
  unlink(r->record);
  const char *argv[32] = {"python3", DMH_ROGUE_SERVER_PY, mode, target, "--record", r->record};
  int n = 6;
  for (int i = 0; extra && extra[i] && n < 31; i++)
    argv[n++] = extra[i];
  argv[n] = NULL;
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0)
    return -1;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  int e = posix_spawnp(&r->pid, "python3", &fa, NULL, (char *const *)argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(out[1]);
  if (e != 0) {
    fprintf(stderr, "rogue server: cannot run python3: %s\n", strerror(e));
    r->pid = -1;
    close(out[0]);
    return -1;
  }
  char line[64] = "";
  size_t len = 0;
  struct pollfd p = {.fd = out[0], .events = POLLIN};
  while (len < sizeof line - 1 && !strchr(line, '\n') && poll(&p, 1, 30000) > 0) {
    ssize_t k = read(out[0], line + len, sizeof line - 1 - len);
    if (k <= 0)
      break;
    len += (size_t)k;
    line[len] = '\0';
  }
  close(out[0]);
  if (sscanf(line, "port %d", &r->port) != 1 || r->port <= 0) {
    fprintf(stderr, "rogue server: no port in its output \"%s\"\n", line);
    testdb_rogue_stop(r);
    return -1;
  }
  return 0;
}

void testdb_rogue_stop(testdb_rogue *r) {
  if (r->pid > 0) {
    kill(r->pid, SIGTERM);
    while (waitpid(r->pid, NULL, 0) < 0 && errno == EINTR)
      ;
    r->pid = -1;
  }
  if (r->record[0])
    unlink(r->record);
}

char *testdb_rogue_record(const testdb_rogue *r, size_t *len) {
  *len = 0;
  FILE *f = fopen(r->record, "rb");
  char *buf = malloc(1);
  if (!buf)
    return NULL;
  buf[0] = '\0';
  if (!f)
    return buf;
  char chunk[4096];
  size_t k;
  while ((k = fread(chunk, 1, sizeof chunk, f)) > 0) {
    char *b = realloc(buf, *len + k + 1);
    if (!b)
      break;
    buf = b;
    memcpy(buf + *len, chunk, k);
    *len += k;
    buf[*len] = '\0';
  }
  fclose(f);
  return buf;
}

int testdb_rogue_saw(const testdb_rogue *r, const char *bytes) {
  size_t len;
  char *rec = testdb_rogue_record(r, &len);
  int saw = rec && memmem(rec, len, bytes, strlen(bytes)) != NULL;
  free(rec);
  return saw;
}

int testdb_rogue_wait(const testdb_rogue *r, const char *bytes) {
  for (int i = 0; i < 3000; i++) {
    if (testdb_rogue_saw(r, bytes))
      return 1;
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  return 0;
}
