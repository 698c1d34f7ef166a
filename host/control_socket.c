/* The control socket's transport, see control_socket.h. */
#include "control_socket.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "dmhost/sdk.h"
#include "log.h"

struct dmh_control_server {
  char *path;
  int listen_fd;
  int wake[2]; /* written once at close: idle connections poll its read end */
  dmh_control_handler handler;
  void *ud;
  pthread_mutex_t lock;
  pthread_cond_t cond; /* signalled when a connection thread ends */
  int active;          /* connection threads alive */
  bool closing;
};

typedef struct sock_conn {
  dmh_control_server *srv;
  int fd;
} sock_conn;

static int sock_fill_addr(const char *path, struct sockaddr_un *addr, dm_error *err) {
  memset(addr, 0, sizeof *addr);
  addr->sun_family = AF_UNIX;
  if (strlen(path) >= sizeof addr->sun_path) {
    dm_error_set(err, DM_ERR_CONTROL, NULL,
                 "control socket path %s is %zu characters, unix sockets allow %zu; give a "
                 "shorter --socket",
                 path, strlen(path), sizeof addr->sun_path - 1);
    return -1;
  }
  memcpy(addr->sun_path, path, strlen(path) + 1);
  return 0;
}

/* A socket file at `path`: refuse if a daemon answers on it, else remove the leftover. */
static int sock_clear_stale(const char *path, const struct sockaddr_un *addr, dm_error *err) {
  struct stat sb;
  if (lstat(path, &sb) < 0)
    return 0;
  if (!S_ISSOCK(sb.st_mode)) {
    dm_error_set(err, DM_ERR_CONTROL, NULL,
                 "control socket path %s exists and is not a socket; remove it or give another "
                 "--socket",
                 path);
    return -1;
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    dm_error_set(err, DM_ERR_CONTROL, strerror(errno), "cannot create a unix socket");
    return -1;
  }
  int rc = connect(fd, (const struct sockaddr *)addr, sizeof *addr);
  int saved = errno;
  close(fd);
  if (rc == 0) {
    dm_error_set(err, DM_ERR_EXISTS, NULL,
                 "another `dmhost serve` answers on %s; stop it, or give this one another "
                 "--socket",
                 path);
    return -1;
  }
  if (saved != ECONNREFUSED && saved != ENOENT) {
    dm_error_set(err, DM_ERR_CONTROL, strerror(saved), "cannot probe the existing socket %s", path);
    return -1;
  }
  if (unlink(path) < 0 && errno != ENOENT) {
    dm_error_set(err, DM_ERR_CONTROL, strerror(errno), "cannot remove the stale socket %s", path);
    return -1;
  }
  dmh_log(DM_LOG_INFO, "control", "removed the stale socket %s of a daemon that is gone", path);
  return 0;
}

int dmh_control_server_open(const char *path, dmh_control_handler handler, void *ud,
                            dmh_control_server **out, dm_error *err) {
  *out = NULL;
  struct sockaddr_un addr;
  if (sock_fill_addr(path, &addr, err) < 0 || sock_clear_stale(path, &addr, err) < 0)
    return -1;
  dmh_control_server *s = calloc(1, sizeof *s);
  if (!s || !(s->path = strdup(path))) {
    free(s);
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory opening the control socket %s", path);
    return -1;
  }
  s->listen_fd = -1;
  s->wake[0] = s->wake[1] = -1;
  s->handler = handler;
  s->ud = ud;
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->cond, NULL);
  const char *step = "socket";
  s->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s->listen_fd < 0)
    goto fail;
  /* The socket file is created by bind with the umask applied: make it owner-only from the start
   * rather than chmod after, when another user could already have connected. */
  mode_t old_mask = umask(0077);
  int rc = bind(s->listen_fd, (const struct sockaddr *)&addr, sizeof addr);
  umask(old_mask);
  step = "bind";
  if (rc < 0)
    goto fail;
  step = "listen";
  if (listen(s->listen_fd, 64) < 0)
    goto fail;
  step = "pipe";
  if (pipe2(s->wake, O_CLOEXEC) < 0)
    goto fail;
  *out = s;
  return 0;
fail:
  dm_error_set(err, DM_ERR_CONTROL, strerror(errno),
               "cannot listen on the control socket %s (%s failed); check the folder exists and "
               "is writable, or give another --socket",
               path, step);
  if (strcmp(step, "listen") == 0 || strcmp(step, "pipe") == 0)
    unlink(path);
  if (s->listen_fd >= 0)
    close(s->listen_fd);
  pthread_mutex_destroy(&s->lock);
  pthread_cond_destroy(&s->cond);
  free(s->path);
  free(s);
  return -1;
}

static int sock_send_all(int fd, const char *buf, size_t len) {
  while (len > 0) {
    ssize_t w = send(fd, buf, len, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0)
      return -1;
    buf += w;
    len -= (size_t)w;
  }
  return 0;
}

/* Handle one line and write the answer. Returns -1 to close the connection. */
static int sock_answer(sock_conn *c, char *line, size_t len) {
  line[len] = '\0';
  if (len > 0 && line[len - 1] == '\r')
    line[--len] = '\0';
  if (len == 0)
    return 0; /* blank lines between requests are not requests */
  char *answer = c->srv->handler(c->srv->ud, line, len);
  if (!answer)
    return -1;
  size_t alen = strlen(answer);
  int rc = sock_send_all(c->fd, answer, alen);
  if (rc == 0)
    rc = sock_send_all(c->fd, "\n", 1);
  free(answer);
  return rc;
}

static void sock_too_long(sock_conn *c) {
  dm_error e;
  dm_error_set(&e, DM_ERR_CONTROL_REQUEST, NULL,
               "request is longer than %d bytes; send one JSON request per line",
               DMH_CONTROL_LINE_MAX);
  /* The protocol's error shape, written here because no handler saw the request. */
  char buf[1024];
  int n = snprintf(buf, sizeof buf,
                   "{\"result\":false,\"msg\":\"%s\",\"error\":{\"code\":%d,\"class\":\"%s\","
                   "\"scope\":\"%s\",\"level\":\"%s\",\"message\":\"%s\",\"rawCause\":\"\","
                   "\"workaround\":\"%s\"}}\n",
                   e.message, e.code, dm_error_class_name(e.cls), dm_error_scope_name(e.scope),
                   dm_error_level_name(e.level), e.message, e.workaround);
  if (n > 0)
    sock_send_all(c->fd, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

static void sock_serve(sock_conn *c) {
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  if (!buf)
    return;
  for (;;) {
    /* Serve complete lines already buffered first. */
    char *nl = memchr(buf, '\n', len);
    if (nl) {
      size_t ll = (size_t)(nl - buf);
      if (sock_answer(c, buf, ll) < 0)
        break;
      memmove(buf, nl + 1, len - ll - 1);
      len -= ll + 1;
      continue;
    }
    if (len >= DMH_CONTROL_LINE_MAX) {
      sock_too_long(c);
      break;
    }
    struct pollfd pf[2] = {{.fd = c->fd, .events = POLLIN},
                           {.fd = c->srv->wake[0], .events = POLLIN}};
    if (poll(pf, 2, -1) < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    if (pf[1].revents)
      break; /* closing: an idle connection is dropped, a request in progress has finished */
    if (len + 1 >= cap) {
      char *nb = realloc(buf, cap * 2);
      if (!nb)
        break;
      buf = nb;
      cap *= 2;
    }
    ssize_t r = recv(c->fd, buf + len, cap - len - 1, 0);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0) {
      /* EOF: a request without its newline is still a request (one request per connection). */
      if (r == 0 && len > 0)
        sock_answer(c, buf, len);
      break;
    }
    len += (size_t)r;
  }
  free(buf);
}

static void *sock_conn_main(void *arg) {
  sock_conn *c = arg;
  dmh_control_server *s = c->srv;
  sock_serve(c);
  close(c->fd);
  free(c);
  pthread_mutex_lock(&s->lock);
  s->active--;
  pthread_cond_broadcast(&s->cond);
  pthread_mutex_unlock(&s->lock);
  return NULL;
}

static void sock_spawn(dmh_control_server *s, int fd) {
  sock_conn *c = malloc(sizeof *c);
  if (!c) {
    close(fd);
    return;
  }
  c->srv = s;
  c->fd = fd;
  pthread_mutex_lock(&s->lock);
  s->active++;
  pthread_mutex_unlock(&s->lock);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t th;
  int rc = pthread_create(&th, &attr, sock_conn_main, c);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    dmh_log(DM_LOG_ERROR, "control", "cannot start a connection thread: %s", strerror(rc));
    close(fd);
    free(c);
    pthread_mutex_lock(&s->lock);
    s->active--;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
  }
}

int dmh_control_server_run(dmh_control_server *s, int stop_fd, dm_error *err) {
  for (;;) {
    pthread_mutex_lock(&s->lock);
    bool full = s->active >= DMH_CONTROL_MAX_CONNECTIONS;
    pthread_mutex_unlock(&s->lock);
    /* At the limit, leave new connections in the backlog but keep watching stop_fd. */
    struct pollfd pf[2] = {{.fd = full ? -1 : s->listen_fd, .events = POLLIN},
                           {.fd = stop_fd, .events = POLLIN}};
    if (poll(pf, 2, full ? 100 : -1) < 0) {
      if (errno == EINTR)
        continue;
      dm_error_set(err, DM_ERR_CONTROL, strerror(errno), "poll on the control socket %s failed",
                   s->path);
      return -1;
    }
    if (pf[1].revents)
      return 0;
    if (!(pf[0].revents & POLLIN))
      continue;
    int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED || errno == EAGAIN || errno == EMFILE ||
          errno == ENFILE) {
        if (errno == EMFILE || errno == ENFILE) {
          dmh_log(DM_LOG_WARN, "control", "accept on %s: %s; retrying", s->path, strerror(errno));
          struct timespec ts = {0, 100 * 1000 * 1000};
          nanosleep(&ts, NULL);
        }
        continue;
      }
      dm_error_set(err, DM_ERR_CONTROL, strerror(errno), "accept on the control socket %s failed",
                   s->path);
      return -1;
    }
    sock_spawn(s, fd);
  }
}

void dmh_control_server_close(dmh_control_server *s) {
  if (!s)
    return;
  if (s->listen_fd >= 0) {
    close(s->listen_fd);
    s->listen_fd = -1;
  }
  unlink(s->path);
  pthread_mutex_lock(&s->lock);
  s->closing = true;
  ssize_t w = write(s->wake[1], "x", 1);
  (void)w; /* one byte in an empty pipe cannot fail short */
  while (s->active > 0)
    pthread_cond_wait(&s->cond, &s->lock);
  pthread_mutex_unlock(&s->lock);
  close(s->wake[0]);
  close(s->wake[1]);
  pthread_mutex_destroy(&s->lock);
  pthread_cond_destroy(&s->cond);
  free(s->path);
  free(s);
}

/* ---- client ---- */

static long long sock_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait for `events` on fd until the deadline (0: none). Returns 1 ready, 0 timed out, -1 error. */
static int sock_wait(int fd, short events, long long deadline) {
  for (;;) {
    int ms = -1;
    if (deadline) {
      long long left = deadline - sock_now_ms();
      if (left <= 0)
        return 0;
      ms = left > 1000000 ? 1000000 : (int)left;
    }
    struct pollfd pf = {.fd = fd, .events = events};
    int rc = poll(&pf, 1, ms);
    if (rc < 0 && errno == EINTR)
      continue;
    if (rc <= 0)
      return rc;
    return 1;
  }
}

int dmh_control_call(const char *path, const char *request, int timeout_ms, char **response,
                     dm_error *err) {
  *response = NULL;
  struct sockaddr_un addr;
  if (sock_fill_addr(path, &addr, err) < 0)
    return -1;
  long long deadline = timeout_ms > 0 ? sock_now_ms() + timeout_ms : 0;
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    dm_error_set(err, DM_ERR_CONTROL, strerror(errno), "cannot create a unix socket");
    return -1;
  }
  const char *step = "connect to";
  char *buf = NULL;
  if (connect(fd, (const struct sockaddr *)&addr, sizeof addr) < 0)
    goto fail;
  step = "send the request to";
  if (sock_send_all(fd, request, strlen(request)) < 0 || sock_send_all(fd, "\n", 1) < 0)
    goto fail;
  shutdown(fd, SHUT_WR);
  size_t cap = 4096, len = 0;
  buf = malloc(cap);
  step = "read the answer from";
  for (;;) {
    if (!buf) {
      errno = ENOMEM;
      goto fail;
    }
    int ready = sock_wait(fd, POLLIN, deadline);
    if (ready == 0) {
      dm_error_set(err, DM_ERR_CONTROL, NULL,
                   "no answer from %s within %d ms; the daemon may be busy (see its log), retry "
                   "or raise --timeout",
                   path, timeout_ms);
      goto out_fail;
    }
    if (ready < 0)
      goto fail;
    if (len + 1 >= cap) {
      cap *= 2;
      char *nb = realloc(buf, cap);
      if (!nb)
        free(buf);
      buf = nb;
      continue;
    }
    ssize_t r = recv(fd, buf + len, cap - len - 1, 0);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      goto fail;
    if (r == 0)
      break;
    len += (size_t)r;
    if (memchr(buf + len - r, '\n', (size_t)r))
      break;
  }
  buf[len] = '\0';
  char *nl = strchr(buf, '\n');
  if (nl)
    *nl = '\0';
  if (buf[0] == '\0') {
    dm_error_set(err, DM_ERR_CONTROL, NULL,
                 "%s closed the connection without an answer; see the daemon's log", path);
    goto out_fail;
  }
  close(fd);
  *response = buf;
  return 0;
fail:
  dm_error_set(err, DM_ERR_CONTROL, strerror(errno),
               "cannot %s the control socket %s; check that `dmhost serve` runs and that --socket "
               "names its socket",
               step, path);
out_fail:
  free(buf);
  close(fd);
  return -1;
}
