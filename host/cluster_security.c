/* The cluster's security flags (cluster_security.h): parsed, checked, the secrets read. */
#include "cluster_security.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dmhost/sdk.h"

/* A secret is small: a password, a PEM key. */
#define CS_SECRET_MAX 4096

int dmh_cluster_security_flag(dmh_cluster_security *s, int opt, const char *arg) {
  switch (opt) {
  case DMH_CS_OPT_CACERT:
    s->etcd.cacert = arg;
    return 1;
  case DMH_CS_OPT_CERT:
    s->etcd.cert = arg;
    return 1;
  case DMH_CS_OPT_KEY:
    s->etcd.key = arg;
    return 1;
  case DMH_CS_OPT_USER:
    s->etcd.user = arg;
    return 1;
  case DMH_CS_OPT_PASSWORD_FILE:
    s->password_file = arg;
    return 1;
  case DMH_CS_OPT_INSECURE:
    s->opts.insecure_transport = 1;
    return 1;
  case DMH_CS_OPT_CLUSTER_KEY:
    s->key_file = arg;
    return 1;
  default:
    return 0;
  }
}

/* Opens path as a secret file and checks it on the descriptor; the descriptor, or -1 with err. */
static int cs_secret_open(const char *what, const char *path, dm_error *err) {
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) < 0) {
    dm_error_set(err, DM_ERR_CLUSTER_CREDENTIALS, strerror(errno), "%s %s cannot be read: %s%s",
                 what, path, strerror(errno),
                 errno == ELOOP ? " (a symbolic link: name the file itself)" : "");
    if (fd >= 0)
      close(fd);
    return -1;
  }
  const char *why = !S_ISREG(st.st_mode)                       ? "is not a regular file"
                    : st.st_uid != 0 && st.st_uid != geteuid() ? "is owned by another user"
                    : (st.st_mode & 07777) != 0600 && (st.st_mode & 07777) != 0400
                        ? "is not mode 0600 or 0400"
                    : st.st_size > CS_SECRET_MAX ? "is over 4 KiB"
                                                 : NULL;
  if (why) {
    dm_error_set(err, DM_ERR_CLUSTER_CREDENTIALS, NULL,
                 "%s %s %s (owner uid %u, mode %04o, %lld bytes): a secret is a regular file of "
                 "root or this user (uid %u), `chmod 600`, at most 4 KiB",
                 what, path, why, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777),
                 (long long)st.st_size, (unsigned)geteuid());
    close(fd);
    return -1;
  }
  return fd;
}

int dmh_cluster_secret_file(const char *what, const char *path, char **out, dm_error *err) {
  *out = NULL;
  int fd = cs_secret_open(what, path, err);
  if (fd < 0)
    return -1;
  char *buf = malloc(CS_SECRET_MAX + 2);
  size_t n = 0;
  ssize_t r = 0;
  while (buf && n <= CS_SECRET_MAX &&
         ((r = read(fd, buf + n, CS_SECRET_MAX + 1 - n)) > 0 || (r < 0 && errno == EINTR)))
    n += r > 0 ? (size_t)r : 0;
  int read_errno = errno;
  close(fd);
  if (!buf || r < 0 || n > CS_SECRET_MAX) {
    if (buf)
      OPENSSL_cleanse(buf, CS_SECRET_MAX + 2);
    free(buf);
    dm_error_set(err, buf ? DM_ERR_CLUSTER_CREDENTIALS : DM_ERR_NO_MEMORY, NULL, "%s %s: %s", what,
                 path,
                 !buf    ? "out of memory"
                 : r < 0 ? strerror(read_errno)
                         : "grew over 4 KiB");
    return -1;
  }
  buf[n] = '\0';
  buf[strcspn(buf, "\r\n")] = '\0';
  *out = buf;
  return 0;
}

static int cs_readable(const char *flag, const char *path, dm_error *err) {
  if (access(path, R_OK) == 0)
    return 0;
  dm_error_set(err, DM_ERR_CLUSTER_CREDENTIALS, strerror(errno), "%s %s cannot be read: %s", flag,
               path, strerror(errno));
  return -1;
}

int dmh_cluster_security_load(dmh_cluster_security *s, const char *endpoints, dm_error *err) {
  dmh_etcd_security *e = &s->etcd;
  const char *pair = !e->cert != !e->key ? "--etcd-cert and --etcd-key go together"
                     : !e->user != !s->password_file
                         ? "--etcd-user and --etcd-password-file go together (the password is "
                           "never given on the command line, where every local user reads it)"
                         : NULL;
  if (pair) {
    dm_error_set(err, DM_ERR_CLUSTER_CREDENTIALS, NULL, "%s", pair);
    return -1;
  }
  if ((e->cacert && cs_readable("--etcd-cacert", e->cacert, err) < 0) ||
      (e->cert && cs_readable("--etcd-cert", e->cert, err) < 0))
    return -1;
  if (e->key) {
    int fd = cs_secret_open("--etcd-key", e->key, err);
    if (fd < 0)
      return -1;
    close(fd);
  }
  char *password = NULL;
  if (s->password_file &&
      dmh_cluster_secret_file("--etcd-password-file", s->password_file, &password, err) < 0)
    return -1;
  e->password = password;
  if (s->key_file) {
    char why[512];
    int fd = cs_secret_open("--cluster-key", s->key_file, err);
    if (fd < 0)
      return -1;
    close(fd);
    if (dmh_secret_key_load(s->key_file, s->key, why, sizeof why) < 0) {
      dm_error_set(err, DM_ERR_CLUSTER_CREDENTIALS, NULL, "--cluster-key: %s", why);
      return -1;
    }
    s->has_key = true;
  }
  if (e->cacert || e->cert || e->user)
    s->opts.sec = e;
  /* the endpoints' check (and the scheme by --etcd-cacert) is the client's: open one */
  dmh_etcd *c = dmh_etcd_open(endpoints, &s->opts, err);
  if (!c)
    return -1;
  dmh_etcd_close(c);
  return 0;
}

void dmh_cluster_security_clear(dmh_cluster_security *s) {
  if (s->etcd.password) {
    char *p = (char *)s->etcd.password;
    OPENSSL_cleanse(p, strlen(p));
    free(p);
    s->etcd.password = NULL;
  }
  OPENSSL_cleanse(s->key, sizeof s->key);
  s->has_key = false;
}
