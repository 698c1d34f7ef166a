/*
 * The relay unit against a source that accepts TCP connections but never answers (a hung server,
 * a firewall that lets the SYN through, a proxy whose backend is gone): no server needed, a
 * listening socket that accepts and holds every connection, silent.
 *
 * Regression (issue 13): dm_db_connect cannot cancel a handshake, and the relay connected with a
 * 5 s timeout, so pause, stop and kill waited for it: a pause took up to 5 s (4.7 s measured here
 * on the old code, 0.74 s now). Connects are now attempts of a second that the stop token and kill
 * end (relay_connect_again), so the unit returns within about a second.
 */
#include <CUnit/Basic.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cunit_run.h"
#include "relay_test_util.h"
#include "supervisor.h"

#define SILENT_MAX_CONN 64

typedef struct silent {
  int lfd;
  unsigned port;
  int fds[SILENT_MAX_CONN];
  atomic_int accepted;
  atomic_bool done;
  pthread_t th;
} silent;

static void *silent_loop(void *arg) {
  silent *s = arg;
  while (!atomic_load(&s->done)) {
    struct pollfd p = {.fd = s->lfd, .events = POLLIN};
    if (poll(&p, 1, 20) <= 0)
      continue;
    int fd = accept(s->lfd, NULL, NULL);
    int n = atomic_load(&s->accepted);
    if (fd >= 0 && n < SILENT_MAX_CONN) {
      s->fds[n] = fd; /* held open, never written to */
      atomic_store(&s->accepted, n + 1);
    } else if (fd >= 0) {
      close(fd);
    }
  }
  return NULL;
}

static int silent_start(silent *s) {
  memset(s, 0, sizeof *s);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t al = sizeof a;
  s->lfd = socket(AF_INET, SOCK_STREAM, 0);
  if (s->lfd < 0 || bind(s->lfd, (struct sockaddr *)&a, sizeof a) < 0 || listen(s->lfd, 16) < 0 ||
      getsockname(s->lfd, (struct sockaddr *)&a, &al) < 0)
    return -1;
  s->port = ntohs(a.sin_port);
  return pthread_create(&s->th, NULL, silent_loop, s) == 0 ? 0 : -1;
}

static void silent_stop(silent *s) {
  atomic_store(&s->done, true);
  pthread_join(s->th, NULL);
  for (int i = 0; i < atomic_load(&s->accepted); i++)
    close(s->fds[i]);
  close(s->lfd);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* A relay on the silent source, inside its first connect's handshake. */
static dmh_subtask *silent_relay(rt_env *e, silent *s, const char *name) {
  CU_ASSERT_EQUAL_FATAL(silent_start(s), 0);
  CU_ASSERT_EQUAL_FATAL(rt_setup_ex(e, name, "status-interval = 100;", s->port, NULL), 0);
  dmh_subtask *relay = rt_relay_start(e);
  CU_ASSERT_PTR_NOT_NULL_FATAL(relay);
  /* precondition: the relay's connection reached the socket (its handshake waits there) */
  double end = now_s() + 5;
  while (atomic_load(&s->accepted) == 0 && now_s() < end)
    sleep_ms(10);
  CU_ASSERT_TRUE_FATAL(atomic_load(&s->accepted) > 0);
  sleep_ms(300); /* well inside an attempt */
  CU_ASSERT_EQUAL(dmh_subtask_stage(relay), DMH_STAGE_RUNNING);
  return relay;
}

static void test_pause_while_connecting(void) {
  rt_env e;
  silent s;
  dmh_subtask *relay = silent_relay(&e, &s, "relay_silent_pause");
  dm_error err;
  double t0 = now_s();
  CU_ASSERT_EQUAL(dmh_subtask_pause(relay, &err), 0);
  double took = now_s() - t0;
  fprintf(stderr, "\n  pause while connecting to a silent source: %.2f s\n", took);
  CU_ASSERT_TRUE(took < 1.5);
  CU_ASSERT_EQUAL(dmh_subtask_stage(relay), DMH_STAGE_PAUSED);
  dmh_subtask_stop(relay, &err);
  dmh_subtask_destroy(relay);
  silent_stop(&s);
  rt_teardown(&e);
}

static void test_stop_and_kill_while_connecting(void) {
  rt_env e;
  silent s;
  dmh_subtask *relay = silent_relay(&e, &s, "relay_silent_stop");
  dm_error err;
  double t0 = now_s();
  CU_ASSERT_EQUAL(dmh_subtask_stop(relay, &err), 0);
  double took = now_s() - t0;
  fprintf(stderr, "  stop while connecting to a silent source: %.2f s\n", took);
  CU_ASSERT_TRUE(took < 1.5);
  CU_ASSERT_EQUAL(dmh_subtask_stage(relay), DMH_STAGE_STOPPED);
  dmh_subtask_destroy(relay);
  silent_stop(&s);
  rt_teardown(&e);

  relay = silent_relay(&e, &s, "relay_silent_kill");
  t0 = now_s();
  CU_ASSERT_EQUAL(dmh_subtask_kill(relay, &err), 0);
  took = now_s() - t0;
  fprintf(stderr, "  kill while connecting to a silent source: %.2f s\n", took);
  CU_ASSERT_TRUE(took < 1.5);
  CU_ASSERT_EQUAL(dmh_subtask_stage(relay), DMH_STAGE_STOPPED);
  dmh_subtask_destroy(relay);
  silent_stop(&s);
  rt_teardown(&e);
}

static const dmh_cunit_test tests[] = {
    {"pause while connecting to a silent source", test_pause_while_connecting},
    {"stop and kill while connecting to a silent source", test_stop_and_kill_while_connecting},
};

int main(void) {
  return dmh_cunit_run("relay silent source", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
