/* `dmhost verify --source S.cfg --task T.cfg`: is the target equal to the source? (verify.h) */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli_flag.h"
#include "dmhost/sdk.h"
#include "error_json.h"
#include "secret.h"
#include "verify.h"

static void verify_usage(FILE *out) {
  fprintf(
      out,
      "usage: dmhost verify --source SOURCE.cfg --task TASK.cfg [--json] [--fix-sql FILE]\n"
      "                     [--chunk-rows N] [--threads N]\n"
      "                     [--at-checkpoint [--checkpoint-wait S] [--rechecks N]]\n"
      "  --json          one JSON document for scripts instead of the report\n"
      "  --fix-sql FILE  write the REPLACE/DELETE statements that repair the target into a\n"
      "                  new file FILE (0600; never over an existing file or through a link)\n"
      "  --chunk-rows N  rows of the source per checksummed chunk (default %d)\n"
      "  --threads N     tables compared at once (default 1); above 1 the snapshots of a\n"
      "                  side are opened under FLUSH TABLES WITH READ LOCK (RELOAD)\n"
      "  --at-checkpoint the task runs (dmhost serve, a worker): each chunk's target read\n"
      "                  once the sync's checkpoint has passed the source's snapshot, a\n"
      "                  difference checked again before it is reported\n"
      "  --checkpoint-wait S  seconds a chunk waits for the checkpoint (default %.0f)\n"
      "  --rechecks N    checks of a differing chunk or row (default %d)\n" DMH_CLI_SECRET_KEY_HELP
      "Compares every table the task's rules take with its target table (routes merging\n"
      "tables: their union), by chunked checksums on both servers, then row by row where a\n"
      "chunk differs (docs/verify.md). Exit 0 equal, 1 differences found, 2 an error (usage,\n"
      "config, a server, a table that could not be compared).\n",
      DMH_VERIFY_CHUNK_ROWS_DEFAULT, DMH_VERIFY_CHECKPOINT_WAIT_DEFAULT,
      DMH_VERIFY_RECHECKS_DEFAULT);
}

int dmh_verify_main(int argc, char **argv) {
  static const struct option own[] = {
      {"source", required_argument, NULL, 's'},
      {"task", required_argument, NULL, 't'},
      {"json", no_argument, NULL, 'j'},
      {"fix-sql", required_argument, NULL, 'f'},
      {"chunk-rows", required_argument, NULL, 'c'},
      {"threads", required_argument, NULL, 'n'},
      {"at-checkpoint", no_argument, NULL, 'a'},
      {"checkpoint-wait", required_argument, NULL, 'w'},
      {"rechecks", required_argument, NULL, 'r'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  dmh_cli_common flags = {.groups = DMH_CLI_SECRET_KEY, .prog = "verify"};
  struct option longopts[DMH_CLI_MAX_LONGOPTS];
  dmh_cli_longopts(&flags, own, longopts);
  const char *source_path = NULL, *task_path = NULL;
  dmh_verify_opts o = {.chunk_rows = DMH_VERIFY_CHUNK_ROWS_DEFAULT, .threads = 1, .out = stdout};
  int c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "s:t:jf:c:n:aw:r:h", longopts, NULL)) != -1) {
    if (dmh_cli_common_flag(&flags, c, optarg) > 0)
      continue;
    switch (c) {
    case 's':
      source_path = optarg;
      break;
    case 't':
      task_path = optarg;
      break;
    case 'j':
      o.json = true;
      break;
    case 'f':
      o.fix_path = optarg;
      break;
    case 'c':
      if (dmh_cli_int(optarg, 1, 100000000, &o.chunk_rows) < 0) {
        fprintf(stderr, "dmhost verify: --chunk-rows takes 1 to 100000000, not '%s'\n", optarg);
        return DMH_VERIFY_ERROR;
      }
      break;
    case 'n':
      if (dmh_cli_int(optarg, 1, 64, &o.threads) < 0) {
        fprintf(stderr, "dmhost verify: --threads takes 1 to 64, not '%s'\n", optarg);
        return DMH_VERIFY_ERROR;
      }
      break;
    case 'a':
      o.at_checkpoint = true;
      break;
    case 'w': {
      long s;
      if (dmh_cli_int(optarg, 1, 86400, &s) < 0) {
        fprintf(stderr, "dmhost verify: --checkpoint-wait takes 1 to 86400 s, not '%s'\n", optarg);
        return DMH_VERIFY_ERROR;
      }
      o.checkpoint_wait_s = (double)s;
      break;
    }
    case 'r': {
      long n;
      if (dmh_cli_int(optarg, 1, 100, &n) < 0) {
        fprintf(stderr, "dmhost verify: --rechecks takes 1 to 100, not '%s'\n", optarg);
        return DMH_VERIFY_ERROR;
      }
      o.rechecks = (int)n;
      break;
    }
    case 'h':
      verify_usage(stdout);
      return 0;
    default:
      verify_usage(stderr);
      return DMH_VERIFY_ERROR;
    }
  }
  if (!source_path || !task_path || optind < argc) {
    fprintf(stderr, "dmhost verify: %s\n",
            optind < argc ? "unexpected argument" : "--source and --task are required");
    verify_usage(stderr);
    return DMH_VERIFY_ERROR;
  }
  if (o.fix_path && !o.fix_path[0]) {
    fprintf(stderr, "dmhost verify: --fix-sql needs a file name\n");
    return DMH_VERIFY_ERROR;
  }
  if (dmh_secret_dm_key_flag("verify", flags.secret_key_path) < 0)
    return DMH_VERIFY_ERROR;
  o.progress = !o.json && isatty(STDERR_FILENO);
  dm_error err;
  dmh_source_config *source = NULL;
  dmh_task_config *task = NULL;
  if (dmh_config_load_pair(source_path, task_path, &source, &task, &err) < 0) {
    dmh_error_print("dmhost verify", &err);
    return DMH_VERIFY_ERROR;
  }
  int rc = dmh_verify_run(task, source, &o, &err);
  if (err.code && !o.json)
    dmh_error_print("dmhost verify", &err);
  dmh_task_config_free(task);
  dmh_source_config_free(source);
  return rc;
}
