/*
 * One command-line flag with a value, in the forms dmctl and dmhost accept: "-s X", "--source X",
 * "-s=X", "--source=X". And the flag groups the programs share (dmhost run|serve|master|worker,
 * dmctl): each group's long options, its parse step and its usage lines are here, each program
 * lists the groups it takes. (The trust group, which keeps more state, is trust_flags.h.)
 */
#ifndef DMH_CLI_FLAG_H
#define DMH_CLI_FLAG_H

/* The flag `short_name`/`long_name` at argv[*i]: 1 taken (*out set, *i moved past its value), 0
 * not this flag, -1 the value is missing. */
int dmh_cli_flag(int argc, char **argv, int *i, const char *short_name, const char *long_name,
                 const char **out);

/* A flag's decimal value in min..max: 0 and *out, or -1 (not a number, or out of range: never
 * wrapped or clamped). */
int dmh_cli_int(const char *v, long min, long max, long *out);

/* ---- the common flag groups ---- */

#include <getopt.h>
#include <stdio.h>

#include "dmhost/error.h"

enum {
  DMH_CLI_LOG = 1u << 0,        /* --log-level (-l), --log-format */
  DMH_CLI_STATE_DIR = 1u << 1,  /* --state-dir (-d) */
  DMH_CLI_PLUGIN_DIR = 1u << 2, /* --plugin-dir (-p) */
  DMH_CLI_TLS = 1u << 3,        /* --tls-ca, --tls-cert, --tls-key: the files of mutual TLS */
  DMH_CLI_TLS_CN = 1u << 4,     /* --tls-allowed-cn: a server's admitted client subjects */
  DMH_CLI_SECRET_KEY = 1u << 5, /* --secret-key-path: DM's master key of encrypted passwords */
};
/* getopt's value of --secret-key-path (no short form) */
#define DMH_CLI_SECRET_KEY_VAL 0x10b

/* TLS's files (dmh_control_tls is this type): the CA, the own certificate and key, and for a
 * server the client certificates' subjects admitted, "NAME[,NAME...]" (NULL: any of the CA's). */
typedef struct dmh_cli_tls {
  const char *ca;
  const char *cert;
  const char *key;
  const char *allowed_cn;
} dmh_cli_tls;

/* Which of the three files are given: 0 none, 1 all, -1 some (a usage error, *err set naming the
 * missing ones). */
int dmh_cli_tls_given(const dmh_cli_tls *tls, dm_error *err);

/* The values of the groups a program takes (`groups`, set by the program). */
typedef struct dmh_cli_common {
  unsigned groups;
  const char *prog; /* "serve", ...: log.h's messages say "dmhost PROG: ..." */
  const char *state_dir, *plugin_dir;
  dmh_cli_tls tls;
  const char *secret_key_path; /* DMH_CLI_SECRET_KEY; the program loads it (secret.h) */
} dmh_cli_common;

/* The synopsis of each group, for a program's usage. */
#define DMH_CLI_LOG_USAGE "[--log-level debug|info|warn|error] [--log-format text|json]"
#define DMH_CLI_TLS_USAGE "--tls-ca FILE --tls-cert FILE --tls-key FILE"
#define DMH_CLI_TLS_CN_USAGE "[--tls-allowed-cn NAME[,NAME...]]"
/* ... and the group's lines in a list of options (dmhost run's) */
#define DMH_CLI_PLUGIN_DIR_HELP                                                                    \
  "  --plugin-dir DIR   where the default unit builds are (default: installed folder)\n"
#define DMH_CLI_SECRET_KEY_HELP                                                                    \
  "  --secret-key-path FILE  the key (64 hex digits, mode 0600) of DM's encrypted passwords\n"     \
  "                     (`dmctl encrypt`, `dmhost encrypt --dm`) in `password`, as DM's master\n"
#define DMH_CLI_LOG_HELP                                                                           \
  "  --log-level L      debug, info, warn or error (default info)\n"                               \
  "  --log-format F     text (default) or json: one object per line for log shippers\n"

/* getopt_long's options: `own` (ended by a {NULL} entry) followed by those of f->groups, into
 * out[DMH_CLI_MAX_LONGOPTS] (ended likewise). A group's option has its short letter as getopt's
 * value ('l', 'd', 'p'; the TLS ones 'A', 'C', 'K', 'N'): a program's own option keeps another. */
#define DMH_CLI_MAX_LONGOPTS 48
const struct option *dmh_cli_longopts(const dmh_cli_common *f, const struct option *own,
                                      struct option *out);
/* getopt_long's `c` when it is one of f->groups' options: 1 taken (a log flag applied, a path
 * kept), 0 not one of them, -1 a usage error printed (exit 2). */
int dmh_cli_common_flag(dmh_cli_common *f, int c, const char *arg);
/* The same for a command line read with dmh_cli_flag (dmctl's): argv[*i] one of f->groups'
 * options (short and long forms, "=VALUE" too): 1 taken, 0 not, -1 its value is missing. */
int dmh_cli_common_arg(dmh_cli_common *f, int argc, char **argv, int *i);

/* ---- a daemon's settings, as dmctl config master|worker NAME answers them ---- */

/* The daemons take no settings file: their settings are their command line. This is that command
 * line as the process parsed it, one flag a line ("--name VALUE", "--flag" for one without a
 * value), each under its long name in the program's own table (longopts, the one list it parsed
 * argv with, dmh_cli_longopts's; a flag with two names under the first), a value quoted as a
 * shell word when it is not plain, in argv's order, --help left out. argv as getopt_long left it
 * after the program's parse (its optstring `shortopts`): parsed again here, so call it on the main
 * thread before another getopt. No flag of the daemons takes a secret as its value (passwords and
 * keys are files: cluster_security.h), and no file is read here. malloc'd; NULL when out of
 * memory. */
char *dmh_cli_settings_text(int argc, char **argv, const char *shortopts,
                            const struct option *longopts);
/* Sets flag --`name`'s line of *text to `value` (the effective one: --listen's port bound), added
 * at the end when the command line did not give it. 0, or -1 when out of memory (*text kept). */
int dmh_cli_settings_put(char **text, const char *name, const char *value);

#endif /* DMH_CLI_FLAG_H */
