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

#include "config_util.h"
#include "dmhost/sdk.h"

/* A secret is small: a password, a PEM key. */

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

int dmh_cluster_secret_file(const char *what, const char *path, char **out, dm_error *err) {
  char why[256];
  *out = NULL;
  int rc = dmh_cfg_read_secret(path, out, why, sizeof why);
  if (rc == 0)
    return 0;
  if (rc == -2)
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "%s %s: out of memory", what, path);
  else
    dm_error_set(err, DM_ERR_CLUSTER_CREDENTIALS, NULL,
                 "%s %s cannot be used: %s (a secret is a regular file of root or this user "
                 "(uid %u), `chmod 600`, at most %d bytes)",
                 what, path, why, (unsigned)geteuid(), DMH_CFG_SECRET_MAX);
  return -1;
}

/* A key file is checked as a secret file is (its reader, libcurl or dmh_secret_key_load, opens
 * it again). */
static int cs_secret_check(const char *what, const char *path, dm_error *err) {
  char *text = NULL;
  if (dmh_cluster_secret_file(what, path, &text, err) < 0)
    return -1;
  OPENSSL_cleanse(text, strlen(text));
  free(text);
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
  if (e->key && cs_secret_check("--etcd-key", e->key, err) < 0)
    return -1;
  char *password = NULL;
  if (s->password_file &&
      dmh_cluster_secret_file("--etcd-password-file", s->password_file, &password, err) < 0)
    return -1;
  e->password = password;
  if (s->key_file) {
    char why[512];
    if (cs_secret_check("--cluster-key", s->key_file, err) < 0)
      return -1;
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
