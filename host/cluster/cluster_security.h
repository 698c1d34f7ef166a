/*
 * The cluster's security flags, one owner for `dmhost master` and `dmhost worker` (docs/cluster.md,
 * "etcd with TLS and users", "The cluster key"): how they reach etcd (--etcd-cacert, --etcd-cert,
 * --etcd-key, --etcd-user, --etcd-password-file, --etcd-insecure-transport) and the cluster key
 * (--cluster-key) that encrypts the passwords of the files kept in etcd.
 *
 * The password and key files are secrets: a regular file (no link, FIFO or device: opened with
 * O_NOFOLLOW|O_NONBLOCK and checked on the descriptor) owned by root or the process's user, mode
 * 0600 or 0400, at most 4 KiB (DM_ERR_CLUSTER_CREDENTIALS); the password is never a flag's value,
 * which every local user reads in /proc. The cluster key file is checked as `secret-key-path`
 * (host/config/secret.h) and the same format: 64 hex digits (`openssl rand -hex 32`).
 */
#ifndef DMH_CLUSTER_SECURITY_H
#define DMH_CLUSTER_SECURITY_H

#include <getopt.h>
#include <stdbool.h>

#include "dmhost/error.h"
#include "etcd.h"
#include "secret.h"

/* getopt_long values of the flags (above any short option character). */
enum {
  DMH_CS_OPT_CACERT = 0x1200, /* above trust_flags.h's 0x1101.. */
  DMH_CS_OPT_CERT,
  DMH_CS_OPT_KEY,
  DMH_CS_OPT_USER,
  DMH_CS_OPT_PASSWORD_FILE,
  DMH_CS_OPT_INSECURE,
  DMH_CS_OPT_CLUSTER_KEY,
};

/* The struct option entries, for a longopts table. */
#define DMH_CLUSTER_SECURITY_LONGOPTS                                                              \
  {"etcd-cacert", required_argument, NULL, DMH_CS_OPT_CACERT},                                     \
      {"etcd-cert", required_argument, NULL, DMH_CS_OPT_CERT},                                     \
      {"etcd-key", required_argument, NULL, DMH_CS_OPT_KEY},                                       \
      {"etcd-user", required_argument, NULL, DMH_CS_OPT_USER},                                     \
      {"etcd-password-file", required_argument, NULL, DMH_CS_OPT_PASSWORD_FILE},                   \
      {"etcd-insecure-transport", no_argument, NULL, DMH_CS_OPT_INSECURE}, {                       \
    "cluster-key", required_argument, NULL, DMH_CS_OPT_CLUSTER_KEY                                 \
  }

/* The flags' lines for a usage text. */
#define DMH_CLUSTER_SECURITY_USAGE                                                                 \
  "                     [--etcd-cacert FILE [--etcd-cert FILE --etcd-key FILE]]\n"                 \
  "                     [--etcd-user NAME --etcd-password-file FILE]\n"                            \
  "                     [--etcd-insecure-transport] [--cluster-key FILE]\n"

typedef struct dmh_cluster_security {
  dmh_etcd_security etcd; /* password: read from password_file by dmh_cluster_security_load */
  dmh_etcd_opts opts;     /* what every etcd client of the process is opened with */
  const char *password_file;
  const char *key_file;
  bool has_key;
  unsigned char key[DMH_SECRET_KEY_LEN]; /* the cluster key, when has_key */
} dmh_cluster_security;

/* Takes getopt_long's answer opt (with optarg): 1 when it was one of the flags above, else 0. */
int dmh_cluster_security_flag(dmh_cluster_security *s, int opt, const char *arg);

/* After the flags: checks them (pairs, files), reads the password and the cluster key, and checks
 * the endpoints (a plain http:// endpoint to another host: DM_ERR_CLUSTER_INSECURE_ETCD unless
 * --etcd-insecure-transport). 0, or -1 with err. */
int dmh_cluster_security_load(dmh_cluster_security *s, const char *endpoints, dm_error *err);

/* Wipes the password and the key. */
void dmh_cluster_security_clear(dmh_cluster_security *s);

/* Reads a secret file as described above: its first line (newline dropped), malloc'd, in *out.
 * what names it in messages ("--etcd-password-file"). 0, or -1 with err. */
int dmh_cluster_secret_file(const char *what, const char *path, char **out, dm_error *err);

#endif /* DMH_CLUSTER_SECURITY_H */
