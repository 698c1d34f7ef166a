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
  int wake[2]; /* written once at close: idle connections and blocked answers poll its read end */
  dmh_control_opts opts;
  pthread_mutex_t lock;
  pthread_cond_t cond; /* signalled when a connection thread ends */
  int active;          /* lock: connection threads alive, evicted ones included */
  /* lock: the connections holding a slot; an evicted one leaves its slot at once */
  struct sock_conn *slots[DMH_CONTROL_MAX_CONNECTIONS];
  unsigned long long clock; /* lock: orders the connections' idle_seq */
  bool closing;
};

typedef struct sock_conn {
  dmh_control_server *srv;
  int fd;
  int slot;                    /* lock: index in srv->slots, -1 once evicted */
  bool busy;                   /* lock: a request is being handled or answered */
  long long idle_since;        /* lock: accept or last answer, monotonic ms */
  unsigned long long idle_seq; /* lock: the same as an order (many fall in one millisecond) */
} sock_conn;

static long long sock_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

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

int dmh_control_server_open(const char *path, const dmh_control_opts *opts,
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
  s->opts = *opts;
  if (s->opts.idle_timeout_ms <= 0)
    s->opts.idle_timeout_ms = DMH_CONTROL_IDLE_TIMEOUT_MS;
  if (s->opts.send_timeout_ms <= 0)
    s->opts.send_timeout_ms = DMH_CONTROL_SEND_TIMEOUT_MS;
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->cond, NULL);
  const char *step = "socket";
  bool bound = false;
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
  bound = true;
  /* Widened to the group before listen: nobody can have connected yet. */
  step = "chown to the --socket-group of";
  if (s->opts.has_group && (chown(path, (uid_t)-1, s->opts.group) < 0 || chmod(path, 0660) < 0))
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
  if (bound)
    unlink(path);
  if (s->listen_fd >= 0)
    close(s->listen_fd);
  pthread_mutex_destroy(&s->lock);
  pthread_cond_destroy(&s->cond);
  free(s->path);
  free(s);
  return -1;
}

/* Write all of buf to a non-blocking connection within timeout_ms; give up at once when the server
 * closes (wake_fd readable). Returns 0, or -1 (error, timeout, closing). */
static int sock_send_timed(int fd, int wake_fd, int timeout_ms, const char *buf, size_t len) {
  long long deadline = sock_now_ms() + timeout_ms;
  while (len > 0) {
    ssize_t w = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
      buf += w;
      len -= (size_t)w;
      continue;
    }
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
      return -1;
    long long left = deadline - sock_now_ms();
    if (left <= 0)
      return -1;
    struct pollfd pf[2] = {{.fd = fd, .events = POLLOUT}, {.fd = wake_fd, .events = POLLIN}};
    int rc = poll(pf, 2, (int)left);
    if (rc < 0 && errno != EINTR)
      return -1;
    if (rc > 0 && pf[1].revents)
      return -1;
  }
  return 0;
}

/* Write one answer line within timeout_ms (the answer is freed). Returns -1 to close the
 * connection. */
static int sock_write_answer(dmh_control_server *s, int fd, char *answer, int timeout_ms) {
  size_t alen = strlen(answer);
  char *line = realloc(answer, alen + 2);
  if (!line) {
    free(answer);
    return -1;
  }
  line[alen] = '\n';
  line[alen + 1] = '\0';
  int rc = sock_send_timed(fd, s->wake[0], timeout_ms, line, alen + 1);
  free(line);
  return rc;
}

/* Refusals made by the accepting thread wait this long at most for the client: the answer of a
 * fresh connection fits its socket buffer at once, and no client may hold up the accept loop. */
#define SOCK_REFUSE_TIMEOUT_MS 100

/* Answer with the protocol's error shape a request that never reaches the handler. */
static void sock_refuse(dmh_control_server *s, int fd, const dm_error *err, int timeout_ms) {
  char *answer = s->opts.refusal ? s->opts.refusal(err) : NULL;
  if (answer)
    sock_write_answer(s, fd, answer, timeout_ms);
}

static void sock_set_busy(sock_conn *c, bool busy) {
  pthread_mutex_lock(&c->srv->lock);
  c->busy = busy;
  if (!busy) {
    c->idle_since = sock_now_ms();
    c->idle_seq = ++c->srv->clock;
  }
  pthread_mutex_unlock(&c->srv->lock);
}

/* Handle one line and write the answer. Returns -1 to close the connection. */
static int sock_answer(sock_conn *c, char *line, size_t len) {
  line[len] = '\0';
  if (len > 0 && line[len - 1] == '\r')
    line[--len] = '\0';
  if (len == 0)
    return 0; /* blank lines between requests are not requests */
  sock_set_busy(c, true);
  char *answer = c->srv->opts.handler(c->srv->opts.ud, line, len);
  int rc = answer ? sock_write_answer(c->srv, c->fd, answer, c->srv->opts.send_timeout_ms) : -1;
  sock_set_busy(c, false);
  if (rc < 0 && answer)
    dmh_log(DM_LOG_WARN, "control",
            "dropped a connection: its client did not take the answer within %d ms (or the "
            "daemon is stopping)",
            c->srv->opts.send_timeout_ms);
  return rc;
}

static void sock_serve(sock_conn *c) {
  dmh_control_server *s = c->srv;
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
      dm_error e;
      dm_error_set(&e, DM_ERR_CONTROL_REQUEST, NULL,
                   "request is longer than %d bytes; send one JSON request per line",
                   DMH_CONTROL_LINE_MAX);
      sock_refuse(s, c->fd, &e, s->opts.send_timeout_ms);
      break;
    }
    /* Only this thread writes idle_since once the connection runs. */
    long long left = c->idle_since + s->opts.idle_timeout_ms - sock_now_ms();
    if (left <= 0) {
      dmh_log(DM_LOG_DEBUG, "control", "closed a connection idle for %d ms",
              s->opts.idle_timeout_ms);
      break;
    }
    struct pollfd pf[2] = {{.fd = c->fd, .events = POLLIN}, {.fd = s->wake[0], .events = POLLIN}};
    int ready = poll(pf, 2, (int)left);
    if (ready < 0 && errno != EINTR)
      break;
    if (ready <= 0)
      continue;
    if (pf[1].revents)
      break; /* closing: an idle connection is dropped, a request in progress has finished */
    if (!pf[0].revents)
      continue;
    if (len + 1 >= cap) {
      char *nb = realloc(buf, cap * 2);
      if (!nb)
        break;
      buf = nb;
      cap *= 2;
    }
    ssize_t r = recv(c->fd, buf + len, cap - len - 1, MSG_DONTWAIT);
    if (r < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
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
  pthread_mutex_lock(&s->lock);
  if (c->slot >= 0)
    s->slots[c->slot] = NULL;
  s->active--;
  pthread_cond_broadcast(&s->cond);
  pthread_mutex_unlock(&s->lock);
  /* Closed only once out of the slots: an eviction shuts down descriptors found there. */
  close(c->fd);
  free(c);
  return NULL;
}

/* s->lock held. A free slot, or else the slot of the connection idle longest, which is shut down
 * (its thread sees EOF and ends) and leaves the slot at once. -1 when every slot is busy. */
static int sock_take_slot(dmh_control_server *s, bool evict) {
  int victim = -1;
  for (int i = 0; i < DMH_CONTROL_MAX_CONNECTIONS; i++) {
    if (!s->slots[i])
      return i;
    if (!s->slots[i]->busy && (victim < 0 || s->slots[i]->idle_seq < s->slots[victim]->idle_seq))
      victim = i;
  }
  if (victim < 0 || !evict)
    return victim;
  sock_conn *v = s->slots[victim];
  dmh_log(DM_LOG_INFO, "control",
          "all %d connections taken: closed the one idle for %lld ms to serve a new one",
          DMH_CONTROL_MAX_CONNECTIONS, sock_now_ms() - v->idle_since);
  shutdown(v->fd, SHUT_RDWR);
  v->slot = -1;
  s->slots[victim] = NULL;
  return victim;
}

static void sock_spawn(dmh_control_server *s, int fd) {
  sock_conn *c = calloc(1, sizeof *c);
  if (!c) {
    close(fd);
    return;
  }
  c->srv = s;
  c->fd = fd;
  pthread_mutex_lock(&s->lock);
  c->slot = sock_take_slot(s, true);
  if (c->slot < 0) {
    pthread_mutex_unlock(&s->lock);
    free(c);
    dm_error e;
    dm_error_set(&e, DM_ERR_CONTROL, NULL,
                 "the daemon is handling %d requests at once; retry when one has finished",
                 DMH_CONTROL_MAX_CONNECTIONS);
    sock_refuse(s, fd, &e, SOCK_REFUSE_TIMEOUT_MS);
    close(fd);
    return;
  }
  c->idle_since = sock_now_ms();
  c->idle_seq = ++s->clock;
  s->slots[c->slot] = c;
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
    pthread_mutex_lock(&s->lock);
    s->slots[c->slot] = NULL;
    s->active--;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    close(fd);
    free(c);
  }
}

/* Is the peer's group, or one of its supplementary groups, `group`? */
static bool sock_peer_in_group(int fd, const struct ucred *cred, gid_t group) {
  if (cred->gid == group)
    return true;
  bool in = false;
#ifdef SO_PEERGROUPS
  gid_t small[64];
  gid_t *groups = small;
  socklen_t len = sizeof small;
  int rc = getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len);
  if (rc < 0 && errno == ERANGE && (groups = malloc(len)) != NULL)
    rc = getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len);
  for (size_t i = 0; rc == 0 && groups && i < len / sizeof *groups && !in; i++)
    in = groups[i] == group;
  if (groups != small)
    free(groups);
#else
  (void)fd;
#endif
  return in;
}

/* SO_PEERCRED against the daemon's uid, root and the configured group; a refused peer gets the
 * error as its answer. Returns true when the peer may talk to the daemon. */
static bool sock_admit(dmh_control_server *s, int fd) {
  struct ucred cred = {.pid = 0, .uid = (uid_t)-1, .gid = (gid_t)-1};
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
    dmh_log(DM_LOG_WARN, "control", "refused a connection on %s: SO_PEERCRED failed: %s", s->path,
            strerror(errno));
    return false;
  }
  uid_t me = geteuid();
  if (cred.uid == me || cred.uid == 0 ||
      (s->opts.has_group && sock_peer_in_group(fd, &cred, s->opts.group)))
    return true;
  char group[160] = "";
  if (s->opts.has_group)
    snprintf(group, sizeof group, " and members of group %s (gid %u)",
             s->opts.group_name ? s->opts.group_name : "?", (unsigned)s->opts.group);
  dm_error e;
  dm_error_set(&e, DM_ERR_CONTROL_PEER, NULL,
               "control socket %s: a client running as uid %u (gid %u, pid %d) may not control "
               "this daemon; it admits uid %u (its own), root%s",
               s->path, (unsigned)cred.uid, (unsigned)cred.gid, (int)cred.pid, (unsigned)me, group);
  dmh_log(DM_LOG_WARN, "control", "%s", e.message);
  sock_refuse(s, fd, &e, SOCK_REFUSE_TIMEOUT_MS);
  return false;
}

int dmh_control_server_run(dmh_control_server *s, int stop_fd, dm_error *err) {
  for (;;) {
    pthread_mutex_lock(&s->lock);
    bool full = sock_take_slot(s, false) < 0;
    pthread_mutex_unlock(&s->lock);
    /* With every slot handling a request, leave new connections in the backlog but keep watching
     * stop_fd. */
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
    int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
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
    if (!sock_admit(s, fd)) {
      close(fd);
      continue;
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
