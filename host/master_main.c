/*
 * `dmhost master --name M --etcd URL[,URL...] [--listen HOST:PORT] [--etcd-prefix P]`: a master
 * of the cluster (master.h) until SIGINT/SIGTERM, which resign (the lease revoked: another master
 * leads at once) and exit 0.
 */
#include "master.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cluster_keys.h"
#include "error_json.h"
#include "log.h"

static void master_usage(FILE *out) {
  fprintf(out,
          "usage: dmhost master --name NAME --etcd URL[,URL...] [--listen HOST:PORT]\n"
          "                     [--etcd-prefix PREFIX] [--log-level debug|info|warn|error]\n"
          "\n"
          "Runs a master of the cluster: registers under a lease of its own, campaigns for the\n"
          "leadership and, while it leads, binds sources to workers by the scheduler's rules.\n"
          "--listen is the control address it announces (default 127.0.0.1:8261); --etcd-prefix\n"
          "the cluster's keys (default " DMH_CLUSTER_PREFIX_DEFAULT "). SIGINT or SIGTERM resign\n"
          "the leadership at once and exit 0.\n");
}

int dmh_master_main(int argc, char **argv) {
  static const struct option longopts[] = {
      {"name", required_argument, NULL, 'n'},
      {"etcd", required_argument, NULL, 'e'},
      {"listen", required_argument, NULL, 'L'},
      {"etcd-prefix", required_argument, NULL, 'p'},
      {"log-level", required_argument, NULL, 'l'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  dmh_master_opts o = {.addr = "127.0.0.1:8261"};
  optind = 1;
  int c;
  while ((c = getopt_long(argc, argv, "n:e:L:p:l:h", longopts, NULL)) != -1) {
    switch (c) {
    case 'n':
      o.name = optarg;
      break;
    case 'e':
      o.endpoints = optarg;
      break;
    case 'L':
      o.addr = optarg;
      break;
    case 'p':
      o.prefix = optarg;
      break;
    case 'l':
      if (dmh_log_level_flag("master", optarg) < 0)
        return 2;
      break;
    case 'h':
      master_usage(stdout);
      return 0;
    default:
      master_usage(stderr);
      return 2;
    }
  }
  if (optind < argc || !o.name || !o.endpoints) {
    fprintf(stderr, "dmhost master: %s\n",
            optind < argc ? "unexpected argument" : "--name and --etcd are required");
    master_usage(stderr);
    return 2;
  }
  /* signals are taken synchronously by sigwait: every thread started from here on blocks them */
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &mask, NULL);
  signal(SIGPIPE, SIG_IGN);

  dm_error err;
  dmh_master *m = NULL;
  if (dmh_master_start(&o, &m, &err) < 0) {
    char buf[2048];
    dmh_error_format(&err, buf, sizeof buf);
    fprintf(stderr, "dmhost master: %s\n", buf);
    return 1;
  }
  dmh_log(DM_LOG_INFO, "master", "%s runs (pid %d, control address %s)", o.name, (int)getpid(),
          o.addr);
  int sig = 0;
  sigwait(&mask, &sig);
  dmh_log(DM_LOG_INFO, "master", "%s received: resigning and exiting", strsignal(sig));
  dmh_master_stop(m, true);
  return 0;
}
