/*
 * `dmhost master --name M --etcd URL[,URL...] [--listen HOST:PORT] [--etcd-prefix P]` (and the
 * cluster's security flags, cluster_security.h): a master of the cluster (master.h) serving the
 * control plane over HTTP (control_http.h: POST /control, what dmctl --master-addr sends) until
 * SIGINT/SIGTERM, which resign (the lease revoked: another master leads at once) and exit 0.
 */
#include "master.h"

#include <getopt.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_flag.h"
#include "cluster_keys.h"
#include "cluster_security.h"
#include "control.h"
#include "control_http.h"
#include "dmhost/sdk.h"
#include "error_json.h"
#include "log.h"
#include "metrics.h"
#include "secret.h"
#include "signals.h"
#include "trust_flags.h"

/* The HTTP server's handler: the master once it runs (the server opens first, so that a port 0
 * is known before the master registers its address). */
typedef struct master_door {
  _Atomic(dmh_master *) m;
  dmh_control_tls tls;
  bool tls_on;
} master_door;

static char *door_line(void *ud, const char *line, size_t len) {
  master_door *d = ud;
  dmh_master *m = atomic_load(&d->m);
  if (m)
    return dmh_master_handle_line(m, line, len);
  dm_error err;
  dm_error_set(&err, DM_ERR_ETCD_UNAVAILABLE, NULL,
               "this master is still registering in etcd; send the request again");
  return dmh_control_error_line(&err);
}

/* A follower's request for the leader, or a request for the worker of a source, sent as dmctl
 * --master-addr sends it (with this master's TLS files when it has them: its certificate then
 * serves as a client certificate too). */
static json_object *door_forward(void *ud, const char *addr, json_object *req, int timeout_ms,
                                 dm_error *err) {
  master_door *d = ud;
  const char *text = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
  char *answer = NULL;
  if (dmh_control_http_call(addr, d->tls_on ? &d->tls : NULL, text, timeout_ms, &answer, err) < 0)
    return NULL;
  json_object *o = json_tokener_parse(answer);
  free(answer);
  if (!o || !json_object_is_type(o, json_type_object)) {
    json_object_put(o);
    dm_error_set(err, DM_ERR_CONTROL_HTTP, NULL,
                 "the master or worker at %s answered something that is not a JSON object", addr);
    return NULL;
  }
  return o;
}

static void master_usage(FILE *out) {
  fprintf(out,
          "usage: dmhost master --name NAME --etcd URL[,URL...] [--listen HOST:PORT]\n"
          "                     [" DMH_CLI_TLS_USAGE "\n"
          "                      " DMH_CLI_TLS_CN_USAGE "]\n"
          "                     [--etcd-prefix PREFIX]\n"
          "                     " DMH_CLI_LOG_USAGE "\n"
          "                     [--secrets-dir DIR] "
          "[--allow-submitted-unit-paths]\n" DMH_CLUSTER_SECURITY_USAGE "\n"
          "Runs a master of the cluster: registers under a lease of its own, campaigns for the\n"
          "leadership and, while it leads, binds sources to workers by the scheduler's rules.\n"
          "It answers dmctl --master-addr on --listen (default 127.0.0.1:8261; port 0 picks\n"
          "one), the address it announces to the others; without --tls-* only on loopback.\n"
          "--tls-allowed-cn: the client certificates' subjects (CN) admitted, dmctl's and the\n"
          "other masters' (a follower forwards transfer-source to the leader); default any\n"
          "certificate of --tls-ca.\n"
          "--etcd-prefix: the cluster's keys (default " DMH_CLUSTER_PREFIX_DEFAULT "). SIGINT or\n"
          "SIGTERM resign the leadership at once and exit 0.\n"
          "The files dmctl sends are configs sent over the network: they may not name secret\n"
          "files outside --secrets-dir, password-env, unit-paths (without\n"
          "--allow-submitted-unit-paths), a wider file-mode or @include (docs/security.md).\n"
          "etcd: https endpoints are verified against --etcd-cacert, --etcd-cert/--etcd-key\n"
          "are presented, --etcd-user authenticates with the password in --etcd-password-file\n"
          "(mode 0600); plain http is refused to another host unless --etcd-insecure-transport\n"
          "(dangerous). --cluster-key FILE (64 hex digits, mode 0600, the same on every master\n"
          "and worker) encrypts the passwords of the files kept in etcd; without it a file with\n"
          "a clear password is refused. See docs/cluster.md.\n" DMH_CLI_SECRET_KEY_HELP
          "                     (decrypted before the file is sealed with --cluster-key); dmctl's\n"
          "                     files are sent content: FILE must lie below --secrets-dir\n");
}

static void master_fail(const dm_error *err) {
  dmh_error_print("dmhost master", err);
}

int dmh_master_main(int argc, char **argv) {
  static const struct option own[] = {
      {"name", required_argument, NULL, 'n'},
      {"etcd", required_argument, NULL, 'e'},
      {"listen", required_argument, NULL, 'L'},
      {"etcd-prefix", required_argument, NULL, 'p'},
      DMH_TRUST_LONGOPTS,
      {"help", no_argument, NULL, 'h'},
      DMH_CLUSTER_SECURITY_LONGOPTS,
      {NULL, 0, NULL, 0},
  };
  dmh_cli_common flags = {.groups = DMH_CLI_TLS | DMH_CLI_TLS_CN | DMH_CLI_LOG | DMH_CLI_SECRET_KEY,
                          .prog = "master"};
  struct option longopts[DMH_CLI_MAX_LONGOPTS];
  dmh_cli_longopts(&flags, own, longopts);
  dmh_master_opts o = {0};
  static dmh_cluster_security sec; /* outlives the master: its clients point at it */
  memset(&sec, 0, sizeof sec);
  const char *listen = "127.0.0.1:8261";
  static master_door door; /* outlives every request: the server is closed before return */
  memset(&door, 0, sizeof door);
  optind = 1;
  int c;
  dmh_trust_flags trust = {.n_unit_dirs = 0};
  static const char shortopts[] = "n:e:L:p:A:C:K:N:l:h";
  while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
    int trc = dmh_trust_flag(&trust, c, optarg, "dmhost master");
    if (trc == 0)
      trc = dmh_cli_common_flag(&flags, c, optarg);
    if (trc < 0)
      return 2;
    if (trc > 0)
      continue;
    switch (c) {
    case 'n':
      o.name = optarg;
      break;
    case 'e':
      o.endpoints = optarg;
      break;
    case 'L':
      listen = optarg;
      break;
    case 'p':
      o.prefix = optarg;
      break;
    case 'h':
      master_usage(stdout);
      return 0;
    default:
      if (dmh_cluster_security_flag(&sec, c, optarg))
        break;
      master_usage(stderr);
      return 2;
    }
  }
  door.tls = flags.tls;
  if (optind < argc || !o.name || !o.endpoints) {
    fprintf(stderr, "dmhost master: %s\n",
            optind < argc ? "unexpected argument" : "--name and --etcd are required");
    master_usage(stderr);
    return 2;
  }
  /* --unit-dir means nothing to a master (it loads no unit): only the secrets and the flag */
  if (dmh_trust_flags_resolve(&trust, NULL, "dmhost master") < 0 ||
      dmh_secret_dm_key_flag("master", flags.secret_key_path) < 0)
    return 2;
  o.secrets_dir = trust.real_secrets_dir;
  o.allow_submitted_unit_paths = trust.allow_submitted_unit_paths;
  dm_error err;
  if (dmh_cluster_security_load(&sec, o.endpoints, &err) < 0) {
    master_fail(&err);
    dmh_cluster_security_clear(&sec);
    return 1;
  }
  o.etcd = &sec.opts;
  o.cluster_key = sec.has_key ? sec.key : NULL;
  int frc = dmh_control_listen_flags(listen, &door.tls, &door.tls_on, &err);
  if (frc != 0) {
    master_fail(&err);
    dmh_cluster_security_clear(&sec);
    return frc;
  }
  /* signals are taken synchronously by sigwait: every thread started from here on blocks them */
  sigset_t mask;
  dmh_signals_block(&mask, true);

  dmh_control_opts copts = {.handler = door_line, .refusal = dmh_control_error_line, .ud = &door};
  dmh_control_http *http = NULL;
  if (dmh_control_http_open(listen, door.tls_on ? &door.tls : NULL, &copts, &http, &err) < 0) {
    master_fail(&err);
    return 1;
  }
  /* the address the others reach: the port bound (port 0 picks one) */
  char addr[DMH_CLUSTER_NAME_MAX];
  const char *colon = strrchr(listen, ':');
  snprintf(addr, sizeof addr, "%.*s:%d", colon ? (int)(colon - listen) : 0, listen,
           dmh_control_http_port(http));
  o.addr = addr;
  o.forward = door_forward;
  o.forward_ud = &door;
  /* config master NAME's answer: the command line, --listen as bound (NULL when out of memory:
   * the master answers that it keeps none) */
  char *settings = dmh_cli_settings_text(argc, argv, shortopts, longopts);
  if (settings && dmh_cli_settings_put(&settings, "listen", addr) < 0) {
    free(settings);
    settings = NULL;
  }
  o.settings = settings;
  dmh_master *m = NULL;
  int src = dmh_master_start(&o, &m, &err);
  free(settings); /* copied */
  if (src < 0) {
    master_fail(&err);
    dmh_control_http_close(http);
    dmh_cluster_security_clear(&sec);
    return 1;
  }
  atomic_store(&door.m, m);
  if (dmh_metrics_cpu_usage(dmh_metrics_process(), "dm_master_cpu_usage", DMH_METRICS_CPU_WINDOW_MS,
                            &err) < 0)
    dmh_log(DM_LOG_WARN, "metrics", "%s", err.message);
  dmh_log(DM_LOG_INFO, "master", "%s runs (pid %d, control address %s)", o.name, (int)getpid(),
          addr);
  int sig = 0;
  sigwait(&mask, &sig);
  dmh_log(DM_LOG_INFO, "master", "%s received: resigning and exiting", strsignal(sig));
  /* resign first (another master leads at once), then let the requests in progress finish */
  dmh_master_resign(m);
  dmh_control_http_close(http);
  dmh_master_stop(m, true);
  dmh_cluster_security_clear(&sec);
  dmh_trust_flags_free(&trust);
  return 0;
}
