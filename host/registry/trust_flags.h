/*
 * The daemons' flags of what they trust (docs/security.md, "Unit builds the daemon loads" and
 * "Configs sent over the network"), shared by `dmhost serve`, `dmhost worker` and `dmhost master`:
 *   --unit-dir DIR (repeatable)       a folder unit builds may be loaded from, besides --plugin-dir
 *   --secrets-dir DIR                 submitted configs may name secret files below it
 *   --allow-submitted-unit-paths      submitted configs (and forwarded swap-unit) may name builds
 */
#ifndef DMH_TRUST_FLAGS_H
#define DMH_TRUST_FLAGS_H

#include <getopt.h>
#include <stdbool.h>

#include "config.h"
#include "registry.h"

#define DMH_TRUST_MAX_UNIT_DIRS 16
enum { DMH_TRUST_OPT_UNIT_DIR = 0x1101, DMH_TRUST_OPT_SECRETS_DIR, DMH_TRUST_OPT_ALLOW_UNIT_PATHS };
#define DMH_TRUST_LONGOPTS                                                                         \
  {"unit-dir", required_argument, NULL, DMH_TRUST_OPT_UNIT_DIR},                                   \
      {"secrets-dir", required_argument, NULL, DMH_TRUST_OPT_SECRETS_DIR}, {                       \
    "allow-submitted-unit-paths", no_argument, NULL, DMH_TRUST_OPT_ALLOW_UNIT_PATHS                \
  }
#define DMH_TRUST_USAGE                                                                            \
  "--unit-dir DIR (repeatable): a folder unit builds may be loaded from, besides --plugin-dir;\n"  \
  "  it and every folder above it must be owned by root or the daemon's user and writable by\n"    \
  "  no one else, and it may not hold or lie in the state dir.\n"                                  \
  "--secrets-dir DIR: a config sent over the network (HTTP content, dmctl --master-addr, etcd)\n"  \
  "  may name password-file, secret-key-path and ssl-key files below DIR (nowhere without it).\n"  \
  "--allow-submitted-unit-paths: a config sent over the network may set unit-paths (and a\n"       \
  "  worker takes swap-unit paths forwarded by a master); the unit folders still apply.\n"

typedef struct dmh_trust_flags {
  const char *unit_dirs[DMH_TRUST_MAX_UNIT_DIRS];
  int n_unit_dirs;
  const char *secrets_dir;
  bool allow_submitted_unit_paths;
  char **real_unit_dirs; /* after resolve */
  char *real_secrets_dir;
} dmh_trust_flags;

/* getopt_long's `c` when it is one of these flags: 1 taken, 0 not one of them, -1 a usage error
 * printed (exit 2). */
int dmh_trust_flag(dmh_trust_flags *f, int c, const char *arg, const char *prog);
/* Real paths of the folders (they must exist; a unit folder must not overlap `state_dir`, which
 * may be NULL): 0, or -1 with the message printed (exit 2). */
int dmh_trust_flags_resolve(dmh_trust_flags *f, const char *state_dir, const char *prog);
/* Into a registry's options (borrowed: keep f alive while the registry opens). */
void dmh_trust_flags_apply(const dmh_trust_flags *f, dmh_registry_opts *o);
void dmh_trust_flags_free(dmh_trust_flags *f);

#endif /* DMH_TRUST_FLAGS_H */
