/* The dmhost executable: `run` (one task in the foreground), `serve` (the daemon) and `worker` (one
 * worker of a cluster on etcd). */
#include <stdio.h>
#include <string.h>

#include "binlog_cmd.h"
#include "cluster_worker.h"
#include "convert.h"
#include "dmhost/sdk.h"
#include "dmhost/unit.h"
#include "master.h"
#include "precheck.h"
#include "run.h"
#include "secret.h"
#include "serve.h"
#include "verify.h"

static void main_usage(FILE *out) {
  fprintf(out, "usage: dmhost COMMAND [options]\n"
               "  run --source S.cfg --task T.cfg   run one task in the foreground\n"
               "  check --source S.cfg --task T.cfg what the task needs of source and target\n"
               "                                    (the precheck run and start-task do)\n"
               "  verify --source S.cfg --task T.cfg is the target equal to the source? chunked\n"
               "                                    checksums, the rows that differ, --fix-sql\n"
               "  serve --state-dir DIR             run the daemon that dmctl talks to\n"
               "  master --name M --etcd URLS       run a master of the cluster (etcd)\n"
               "  worker --name W --etcd URLS --state-dir DIR\n"
               "                                    run one worker of a cluster on etcd\n"
               "  binlog skip|replace|inject|list|revert TASK [...] [--work-dir DIR]\n"
               "                                    binlog operators for `run` (dmctl binlog\n"
               "                                    for the daemon)\n"
               "  encrypt --secret-key-path KEY     encrypt a password (read from stdin) for\n"
               "                                    password-encrypted in a source/task file\n"
               "                                    (--dm: DM's form, as `dmctl encrypt`)\n"
               "  convert FILE.yaml                 print the libconfig form of DM's YAML task or\n"
               "                                    source file (dmhost reads YAML files as they\n"
               "                                    are)\n"
               "  version                           print versions (host, SDK, unit ABI)\n"
               "`dmhost COMMAND --help` for a command's options.\n");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    main_usage(stderr);
    return 2;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "run") == 0)
    return dmh_run_main(argc - 1, argv + 1);
  if (strcmp(cmd, "check") == 0)
    return dmh_check_main(argc - 1, argv + 1);
  if (strcmp(cmd, "verify") == 0)
    return dmh_verify_main(argc - 1, argv + 1);
  if (strcmp(cmd, "serve") == 0)
    return dmh_serve_main(argc - 1, argv + 1);
  if (strcmp(cmd, "master") == 0)
    return dmh_master_main(argc - 1, argv + 1);
  if (strcmp(cmd, "worker") == 0)
    return dmh_cluster_worker_main(argc - 1, argv + 1);
  if (strcmp(cmd, "binlog") == 0)
    return dmh_binlog_main(argc - 1, argv + 1);
  if (strcmp(cmd, "encrypt") == 0)
    return dmh_encrypt_main(argc - 1, argv + 1);
  if (strcmp(cmd, "convert") == 0)
    return dmh_convert_main(argc - 1, argv + 1);
  if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
    printf("dmhost %s (SDK %s, unit ABI %d.%d)\n", DMHOST_VERSION, DM_SDK_VERSION, DM_ABI_MAJOR,
           DM_ABI_MINOR);
    return 0;
  }
  if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
    main_usage(stdout);
    return 0;
  }
  fprintf(stderr, "dmhost: unknown command '%s'\n", cmd);
  main_usage(stderr);
  return 2;
}
