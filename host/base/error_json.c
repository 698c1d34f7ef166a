#include "error_json.h"

#include <stdio.h>
#include <string.h>

#include "dmhost/sdk.h"

json_object *dmh_error_to_json(const dm_error *err, const char *context) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "ErrCode", json_object_new_int(err->code));
  json_object_object_add(o, "ErrClass", json_object_new_string(dm_error_class_name(err->cls)));
  json_object_object_add(o, "ErrScope", json_object_new_string(dm_error_scope_name(err->scope)));
  json_object_object_add(o, "ErrLevel", json_object_new_string(dm_error_level_name(err->level)));
  json_object_object_add(o, "Message", json_object_new_string(err->message));
  json_object_object_add(o, "RawCause", json_object_new_string(err->raw_cause));
  json_object_object_add(o, "Workaround", json_object_new_string(err->workaround));
  json_object_object_add(o, "Resumable", json_object_new_boolean(err->resumable));
  if (context && *context)
    json_object_object_add(o, "Context", json_object_new_string(context));
  return o;
}

void dmh_error_format(const dm_error *err, char *buf, size_t len) {
  snprintf(buf, len, "[code %d, %s] %s%s%s%s%s%s", err->code, dm_error_class_name(err->cls),
           err->message, err->raw_cause[0] ? " (cause: " : "", err->raw_cause,
           err->raw_cause[0] ? ")" : "", err->workaround[0] ? "\n  workaround: " : "",
           err->workaround);
}

void dmh_error_print(const char *who, const dm_error *err) {
  char buf[2048];
  dmh_error_format(err, buf, sizeof buf);
  fprintf(stderr, "%s: %s\n", who, buf);
}

/* The first `copy` in buf (of `size`) becomes `path`. */
static void control_rename_in(char *buf, size_t size, const char *copy, const char *path) {
  char *at = strstr(buf, copy);
  if (!at)
    return;
  char tail[DM_ERROR_MESSAGE_MAX];
  snprintf(tail, sizeof tail, "%s", at + strlen(copy));
  snprintf(at, size - (size_t)(at - buf), "%s%s", path, tail);
}

void dmh_error_rename_file(dm_error *err, const char *copy, const char *path) {
  control_rename_in(err->message, sizeof err->message, copy, path);
  control_rename_in(err->raw_cause, sizeof err->raw_cause, copy, path);
}

/* One error shape everywhere (DM's field names), the same as in query-status's result.errors. */
json_object *dmh_control_error_json(const dm_error *err) {
  return dmh_error_to_json(err, NULL);
}

json_object *dmh_control_response_new(void) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "result", json_object_new_boolean(1));
  json_object_object_add(o, "msg", json_object_new_string(""));
  return o;
}

void dmh_control_set_error(json_object *resp, const dm_error *err) {
  json_object_object_add(resp, "result", json_object_new_boolean(0));
  json_object_object_add(resp, "msg", json_object_new_string(err->message));
  json_object_object_add(resp, "error", dmh_control_error_json(err));
}
