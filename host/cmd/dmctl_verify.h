/* dmctl verify TASK's client side: --fix-sql FILE is written here, on dmctl's machine, from the
 * statements the daemon answers (a daemon never writes a path a client names: docs/security.md),
 * and the exit code is `dmhost verify`'s. dmctl only. */
#ifndef DMCTL_VERIFY_H
#define DMCTL_VERIFY_H

#include <json-c/json.h>

#include "dmhost/error.h"

/* For verify (argv[0]): --fix-sql FILE (or --fix-sql=FILE) becomes the bare --fix-sql the daemon
 * takes as "fix-sql": true, FILE in *out (NULL without one), checked now by --fix-sql's rules
 * (verify.h, dmh_verify_fix_check) so a long run is not wasted. -1 with *err. */
int dmctl_verify_take(int *argc, char **argv, const char **out, dm_error *err);

/* The answer's statements ("reports"[].fix_sql, taken out of it) written to `path` (NULL: none) as
 * `dmhost verify --fix-sql` writes them, "fix_sql_file" naming it; a write that fails makes the
 * answer that error. The exit code: 0 equal, 1 different, 2 an error (the answer failed). */
int dmctl_verify_finish(json_object *resp, const char *path);

#endif /* DMCTL_VERIFY_H */
