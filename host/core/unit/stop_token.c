#include "stop_token.h"

#include <errno.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

int dmh_stop_token_init(dmh_stop_token *t) {
  atomic_init(&t->fired, false);
  t->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  return t->fd < 0 ? -1 : 0;
}

void dmh_stop_token_destroy(dmh_stop_token *t) {
  if (t->fd >= 0)
    close(t->fd);
  t->fd = -1;
}

void dmh_stop_token_fire(dmh_stop_token *t) {
  atomic_store(&t->fired, true);
  uint64_t one = 1;
  ssize_t n = write(t->fd, &one, sizeof one);
  (void)n; /* the counter cannot overflow with one write per fire; EAGAIN is harmless */
}

void dmh_stop_token_reset(dmh_stop_token *t) {
  uint64_t v;
  while (read(t->fd, &v, sizeof v) == (ssize_t)sizeof v)
    ;
  atomic_store(&t->fired, false);
}

bool dmh_stop_token_fired(dmh_stop_token *t) {
  return atomic_load(&t->fired);
}

static int64_t token_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

bool dmh_stop_token_wait(dmh_stop_token *t, uint32_t ms) {
  int64_t deadline = token_now_ms() + ms;
  for (;;) {
    if (atomic_load(&t->fired))
      return true;
    int64_t left = deadline - token_now_ms();
    if (left <= 0)
      return false;
    struct pollfd p = {.fd = t->fd, .events = POLLIN};
    int r = poll(&p, 1, (int)left);
    if (r < 0 && errno != EINTR)
      return atomic_load(&t->fired);
  }
}
