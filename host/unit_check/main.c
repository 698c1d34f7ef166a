/*
 * dmhost-unit-check UNIT.so [--config FILE] [--keep] [-v]
 *
 * Runs a unit through the unit contract against a fake host (fake_host.h: services for a unit
 * outside a task, no supervisor) and prints one line per check, "pass|fail|skip NAME: why".
 * Exit status 0 only when every check passed; 1 otherwise; 2 for a usage error. docs/sdk.md,
 * "Conformance suite", says what each check means.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "config.h"
#include "loader.h"
#include "log.h"

static int usage(void) {
  fprintf(stderr, "usage: dmhost-unit-check UNIT.so [--config FILE] [--keep] [-v]\n"
                  "  --config FILE  the unit's settings: its section (dump = { ... };) and what a\n"
                  "                 source/task file gives it (from, target-database, name,\n"
                  "                 source-id, task-mode, meta-schema, enable-gtid, relay-dir)\n"
                  "  --keep         keep the work dirs (printed) for a look afterwards\n"
                  "  -v             the unit's log at level info on stderr (default: warnings)\n");
  return 2;
}

/* load: the host's own loader and its ABI checks, of any kind. */
static const dm_unit_descriptor *check_load(uc_state *s, const char *path, dmh_unit_lib **lib) {
  dmh_load_opts opts = {.kind = 0};
  dm_error err;
  if (dmh_unit_lib_open(path, &opts, lib, &err) != 0) {
    uc_report(s, "load", UC_FAIL, "%s (code %d)", err.message, (int)err.code);
    return NULL;
  }
  const dm_unit_descriptor *d = dmh_unit_lib_descriptor(*lib);
  const char *kind = d->kind == DM_UNIT_CUSTOM ? d->kind_name : dmh_kind_name(d->kind);
  uc_report(s, "load", UC_PASS, "%s %s, kind %s, ABI %u.%u (host accepts %d.0-%d.%d)", d->name,
            d->version, kind ? kind : "?", (unsigned)d->abi_major, (unsigned)d->abi_minor,
            DMH_ABI_MAJOR, DMH_ABI_MAJOR, DMH_ABI_MINOR);
  return d;
}

int main(int argc, char **argv) {
  const char *unit = NULL, *config = NULL;
  bool keep = false;
  dm_log_level level = DM_LOG_WARN;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
      config = argv[++i];
    else if (strcmp(argv[i], "--keep") == 0)
      keep = true;
    else if (strcmp(argv[i], "-v") == 0)
      level = DM_LOG_INFO;
    else if (argv[i][0] != '-' && !unit)
      unit = argv[i];
    else
      return usage();
  }
  if (!unit)
    return usage();
  dmh_log_set_level(level);

  uc_state s = {0};
  printf("dmhost-unit-check %s%s%s\n", unit, config ? " --config " : "", config ? config : "");
  dmh_unit_lib *lib = NULL;
  s.d = check_load(&s, unit, &lib);
  static const struct {
    const char *name;
    void (*run)(uc_state *s);
  } checks[] = {
      {"init-close", uc_check_init_close},
      {"init-fail", uc_check_init_fail},
      {"fresh", uc_check_fresh},
      {"stop", uc_check_stop},
      {"pause-resume", uc_check_pause_resume},
      {"sequential", uc_check_sequential},
      {"status", uc_check_status},
      {"kill", uc_check_kill},
      {"update", uc_check_update},
  };
  size_t n = sizeof checks / sizeof checks[0];
  dm_error err;
  if (s.d && uc_host_open(config, s.d->kind, s.d->kind_name, NULL, &s.host, &err) != 0) {
    printf("config refused: %s\n", err.message);
    s.d = NULL;
  }
  for (size_t i = 0; i < n; i++) {
    if (!s.d)
      uc_report(&s, checks[i].name, UC_SKIP, "%s",
                lib ? "the --config file was refused" : "the unit could not be loaded");
    else
      checks[i].run(&s);
  }
  if (s.host && keep)
    printf("work dirs kept in %s\n", uc_host_root(s.host));
  uc_host_close(s.host, keep);
  printf("%d passed, %d failed, %d skipped\n", s.passed, s.failed, s.skipped);
  /* a unit whose thread was abandoned stays mapped: that thread may still run its code */
  if (!s.broken)
    dmh_unit_lib_unref(lib);
  return s.failed || s.skipped ? 1 : 0;
}
