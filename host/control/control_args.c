/* The readers of a request's arguments, one per kind (see control.h): each refuses a wrong one with
 * DM_ERR_CONTROL_REQUEST naming the command, the argument and the usage. */
#include "control.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "dmhost/sdk.h"
#include "dmhost/settings.h"

typedef dmh_control_cmd control_cmd;

int dmh_control_bad(dm_error *err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  dm_error_vset(err, DM_ERR_CONTROL_REQUEST, NULL, fmt, ap);
  va_end(ap);
  return -1;
}

/* args[key] as a non-empty string; NULL when absent and optional. */
int dmh_control_arg_string(const control_cmd *cmd, json_object *args, const char *key,
                           bool required, const char **out, dm_error *err) {
  *out = NULL;
  json_object *v = NULL;
  if (!json_object_object_get_ex(args, key, &v) || !v) {
    if (required)
      return dmh_control_bad(err, "%s: argument \"%s\" is missing (usage: %s)", cmd->name, key,
                             cmd->usage);
    return 0;
  }
  if (!json_object_is_type(v, json_type_string) || json_object_get_string_len(v) == 0)
    return dmh_control_bad(err,
                           "%s: argument \"%s\" must be a non-empty string, got %s (usage: %s)",
                           cmd->name, key, json_object_to_json_string(v), cmd->usage);
  *out = json_object_get_string(v);
  return 0;
}

int dmh_control_arg_list(const control_cmd *cmd, json_object *args, const char *key,
                         const char **out, size_t max, size_t *n, dm_error *err) {
  *n = 0;
  json_object *v = NULL;
  if (!json_object_object_get_ex(args, key, &v) || !v)
    return 0;
  if (json_object_is_type(v, json_type_string))
    return dmh_control_arg_string(cmd, args, key, true, &out[(*n)++], err);
  size_t len = json_object_is_type(v, json_type_array) ? json_object_array_length(v) : 0;
  for (size_t i = 0; i < len && i < max; i++) {
    json_object *e = json_object_array_get_idx(v, i);
    if (!json_object_is_type(e, json_type_string) || json_object_get_string_len(e) == 0)
      break;
    out[(*n)++] = json_object_get_string(e);
  }
  if (len == 0 || *n != len)
    return dmh_control_bad(err,
                           "%s: argument \"%s\" must be a non-empty string or a list of at most "
                           "%zu of them, got %s (usage: %s)",
                           cmd->name, key, max, json_object_to_json_string(v), cmd->usage);
  return 0;
}

int dmh_control_arg_bool(const control_cmd *cmd, json_object *args, const char *key, bool *out,
                         dm_error *err) {
  json_object *v = NULL;
  *out = false;
  if (!json_object_object_get_ex(args, key, &v))
    return 0;
  /* the strings too: an HTTP route's query parameter (DM's `?force=true`) arrives as one */
  const char *t = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
  if (t && (strcmp(t, "true") == 0 || strcmp(t, "false") == 0)) {
    *out = t[0] == 't';
    return 0;
  }
  if (!json_object_is_type(v, json_type_boolean))
    return dmh_control_bad(err, "%s: argument \"%s\" must be true or false (usage: %s)", cmd->name,
                           key, cmd->usage);
  *out = json_object_get_boolean(v);
  return 0;
}

int dmh_control_arg_path(const control_cmd *cmd, json_object *args, const char *key,
                         const char **out, dm_error *err) {
  if (dmh_control_arg_string(cmd, args, key, true, out, err) < 0)
    return -1;
  if ((*out)[0] != '/')
    return dmh_control_bad(
        err,
        "%s: argument \"%s\" is \"%s\"; it must be an absolute path (the daemon's "
        "working folder is not yours; dmctl makes paths absolute)",
        cmd->name, key, *out);
  return 0;
}

int dmh_control_arg_duration(const control_cmd *cmd, json_object *args, const char *key,
                             const char *dm_name, size_t max_len, const char **out, dm_error *err) {
  if (dmh_control_arg_string(cmd, args, key, false, out, err) < 0)
    return -1;
  int64_t ms;
  /* a text longer than the field it is kept in is no duration a user means */
  if (*out && (dm_duration_parse(*out, &ms) < 0 || (max_len && strlen(*out) >= max_len)))
    return dmh_control_bad(err,
                           "%s: argument \"%s\" (DM's %s) is \"%.64s\"; it is a duration as DM's "
                           "(Go's): \"60s\", \"1m30s\", \"500ms\" or \"0s\", 0 or more",
                           cmd->name, key, dm_name, *out);
  return 0;
}
