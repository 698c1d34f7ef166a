/* verify TASK: the daemon's handler (control.h, dmh_control_verify). */
#include "control.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "verify.h"

/* args[key]: a whole number in [min, max], given as a string (dmctl's option, a query) or a number
 * (an HTTP body's); `dflt` when absent. 0, or -1 with *err. */
static int verify_cmd_num(const dmh_control_cmd *cmd, json_object *args, const char *key, long min,
                          long max, long dflt, long *out, dm_error *err) {
  json_object *v = NULL;
  *out = dflt;
  if (!json_object_object_get_ex(args, key, &v) || !v)
    return 0;
  long long n = -1;
  bool ok = false;
  if (json_object_is_type(v, json_type_int)) {
    n = json_object_get_int64(v);
    ok = true;
  } else if (json_object_is_type(v, json_type_string)) {
    const char *s = json_object_get_string(v);
    char *end = NULL;
    errno = 0;
    n = strtoll(s, &end, 10);
    ok = end != s && !*end && !errno;
  }
  if (!ok || n < min || n > max)
    return dmh_control_bad(err, "%s: argument \"%s\" takes %ld to %ld, got %s (usage: %s)",
                           cmd->name, key, min, max, json_object_to_json_string(v), cmd->usage);
  *out = (long)n;
  return 0;
}

int dmh_control_verify(void *ud, const dmh_control_cmd *cmd, json_object *args, json_object *resp,
                       dm_error *err) {
  const char *name, *only[DMH_CONTROL_MAX_LIST];
  dmh_registry_verify_opts o = {.only = only};
  if (dmh_control_arg_string(cmd, args, "name", true, &name, err) < 0 ||
      dmh_control_arg_list(cmd, args, "source", only, DMH_CONTROL_MAX_LIST, &o.n_only, err) < 0 ||
      verify_cmd_num(cmd, args, "chunk-rows", 1, 100000000, DMH_VERIFY_CHUNK_ROWS_DEFAULT,
                     &o.chunk_rows, err) < 0 ||
      verify_cmd_num(cmd, args, "threads", 1, 64, 1, &o.threads, err) < 0 ||
      /* the bounds of `dmhost verify`'s (cmd_verify.c) */
      verify_cmd_num(cmd, args, "checkpoint-wait", 1, 86400,
                     (long)DMH_VERIFY_CHECKPOINT_WAIT_DEFAULT, &o.checkpoint_wait_s, err) < 0 ||
      verify_cmd_num(cmd, args, "rechecks", 1, 100, DMH_VERIFY_RECHECKS_DEFAULT, &o.rechecks, err) <
          0 ||
      dmh_control_arg_bool(cmd, args, "fix-sql", &o.fix_sql, err) < 0)
    return -1;
  return dmh_registry_task_verify(ud, name, &o, resp, err);
}
