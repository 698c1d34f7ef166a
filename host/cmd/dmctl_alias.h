/* DM's older dmctl command names (handle-error, operate-schema, show-ddl-locks, unlock-ddl-lock),
 * which DM still takes (hidden) and scripts still use: each DM command line is rewritten into the
 * line of the dmhost command that replaced it (binlog, binlog-schema, shard-ddl-lock) before any
 * request is built, so an old line answers exactly as its new line does. A DM flag with no meaning
 * here is refused by name. dmctl's own: linked into dmctl only. */
#ifndef DMCTL_ALIAS_H
#define DMCTL_ALIAS_H

#include <stdbool.h>

#include "dmhost/error.h"

/* The new command line: argv[0..argc) (NULL after the last), the words argv's of the old line or
 * constants, but the task name read from a task file, held in `task`. */
typedef struct dmctl_alias_line {
  int argc;
  char **argv;
  char task[256];
} dmctl_alias_line;

/* Is `name` one of DM's older command names translated here? */
bool dmctl_alias_known(const char *name);

/* The line argv[0..argc) (argv[0] the command) translated into *out: 1 (dmctl_alias_line_free),
 * 0 when argv[0] is no older name (*out untouched), -1 with *err (DM_ERR_CONTROL_REQUEST) when DM's
 * own checks refuse it or it gives a flag that means nothing here, named with why. */
int dmctl_alias_translate(int argc, char **argv, dmctl_alias_line *out, dm_error *err);
void dmctl_alias_line_free(dmctl_alias_line *l);

#endif /* DMCTL_ALIAS_H */
