/* `dmhost check --source S.cfg --task T.cfg`: the precheck in the foreground (precheck.h). */
#include <getopt.h>
#include <stdio.h>

#include "cli_flag.h"
#include "dmhost/sdk.h"
#include "error_json.h"
#include "precheck.h"
#include "secret.h"

static void check_usage(FILE *out) {
  fprintf(out,
          "usage: dmhost check --source SOURCE.cfg --task TASK.cfg [--json]\n"
          "  --json   print DM's check-task JSON instead of the table\n" DMH_CLI_SECRET_KEY_HELP
          "Checks what the task needs of the source and the target (docs/precheck.md).\n"
          "Exit 0 when no item failed (warnings allowed), 1 when one failed, 2 on a usage\n"
          "or config error.\n");
}

int dmh_check_main(int argc, char **argv) {
  static const struct option own[] = {
      {"source", required_argument, NULL, 's'},
      {"task", required_argument, NULL, 't'},
      {"json", no_argument, NULL, 'j'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  dmh_cli_common flags = {.groups = DMH_CLI_SECRET_KEY, .prog = "check"};
  struct option longopts[DMH_CLI_MAX_LONGOPTS];
  dmh_cli_longopts(&flags, own, longopts);
  const char *source_path = NULL, *task_path = NULL;
  bool json = false;
  int c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "s:t:jh", longopts, NULL)) != -1) {
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
      json = true;
      break;
    case 'h':
      check_usage(stdout);
      return 0;
    default:
      check_usage(stderr);
      return 2;
    }
  }
  if (!source_path || !task_path || optind < argc) {
    fprintf(stderr, "dmhost check: %s\n",
            optind < argc ? "unexpected argument" : "--source and --task are required");
    check_usage(stderr);
    return 2;
  }
  if (dmh_secret_dm_key_flag("check", flags.secret_key_path) < 0)
    return 2;
  dm_error err;
  dmh_source_config *source = NULL;
  dmh_task_config *task = NULL;
  if (dmh_config_load_pair(source_path, task_path, &source, &task, &err) < 0) {
    dmh_error_print("dmhost check", &err);
    return 2;
  }
  int rc = 2;
  dmh_precheck pc = {0};
  if (dmh_precheck_run(&pc, task, source, &err) < 0) {
    dmh_error_print("dmhost check", &err);
  } else {
    if (json) {
      json_object *o = dmh_precheck_json(&pc);
      printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
                                                           JSON_C_TO_STRING_NOSLASHESCAPE));
      json_object_put(o);
    } else {
      dmh_precheck_print(&pc, stdout);
    }
    rc = pc.n_fail ? 1 : 0;
  }
  dmh_precheck_free(&pc);
  dmh_task_config_free(task);
  dmh_source_config_free(source);
  return rc;
}
