/* The daemons' trust flags, see trust_flags.h. */
#include "trust_flags.h"

#include <stdio.h>
#include <stdlib.h>

int dmh_trust_flag(dmh_trust_flags *f, int c, const char *arg, const char *prog) {
  switch (c) {
  case DMH_TRUST_OPT_UNIT_DIR:
    if (f->n_unit_dirs >= DMH_TRUST_MAX_UNIT_DIRS) {
      fprintf(stderr, "%s: at most %d --unit-dir\n", prog, DMH_TRUST_MAX_UNIT_DIRS);
      return -1;
    }
    f->unit_dirs[f->n_unit_dirs++] = arg;
    return 1;
  case DMH_TRUST_OPT_SECRETS_DIR:
    f->secrets_dir = arg;
    return 1;
  case DMH_TRUST_OPT_ALLOW_UNIT_PATHS:
    f->allow_submitted_unit_paths = true;
    return 1;
  default:
    return 0;
  }
}

int dmh_trust_flags_resolve(dmh_trust_flags *f, const char *state_dir, const char *prog) {
  char why[1024];
  if (dmh_registry_real_dirs(f->unit_dirs, f->n_unit_dirs, state_dir, true, &f->real_unit_dirs, why,
                             sizeof why) < 0) {
    fprintf(stderr, "%s: --unit-dir %s\n", prog, why);
    return -1;
  }
  if (f->secrets_dir) {
    char **one = NULL;
    if (dmh_registry_real_dirs(&f->secrets_dir, 1, NULL, false, &one, why, sizeof why) < 0) {
      fprintf(stderr, "%s: --secrets-dir %s\n", prog, why);
      return -1;
    }
    f->real_secrets_dir = one[0];
    free(one);
  }
  return 0;
}

void dmh_trust_flags_apply(const dmh_trust_flags *f, dmh_registry_opts *o) {
  o->unit_dirs = (const char *const *)f->real_unit_dirs;
  o->n_unit_dirs = f->real_unit_dirs ? f->n_unit_dirs : 0;
  o->secrets_dir = f->real_secrets_dir;
  o->allow_submitted_unit_paths = f->allow_submitted_unit_paths;
}

void dmh_trust_flags_free(dmh_trust_flags *f) {
  for (int i = 0; f->real_unit_dirs && i < f->n_unit_dirs; i++)
    free(f->real_unit_dirs[i]);
  free(f->real_unit_dirs);
  free(f->real_secrets_dir);
  f->real_unit_dirs = NULL;
  f->real_secrets_dir = NULL;
}
