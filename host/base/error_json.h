/*
 * dm_error as JSON with DM's field names (ErrCode, ErrClass, ErrScope, ErrLevel, Message, RawCause,
 * Workaround), the one shape every error takes in query-status and in control responses.
 */
#ifndef DMH_ERROR_JSON_H
#define DMH_ERROR_JSON_H

#include <json-c/json.h>

#include "dmhost/error.h"

/* A new object; `context` (e.g. "task=t unit=sync slot=process") is added as "Context" when set. */
json_object *dmh_error_to_json(const dm_error *err, const char *context);
/* One line for a terminal: "[code 12004, unit-loader] message (workaround: ...)". */
void dmh_error_format(const dm_error *err, char *buf, size_t len);
/* That line on stderr after "<who>: " ("dmhost serve: [code ...] ..."). */
void dmh_error_print(const char *who, const dm_error *err);
/* The copy `copy` named in err's message and raw cause becomes `path` (the file the user gave):
 * a config read from a temporary copy blames the file the user named. */
void dmh_error_rename_file(dm_error *err, const char *copy, const char *path);

/* The control protocol's answers (control.h): the error object (the "error" member), an answer
 * marked failed (result false, msg = the message, error = the error object), and {"result": true,
 * "msg": ""}, the start of every answer. Here, below the protocol, for every client and layer. */
json_object *dmh_control_error_json(const dm_error *err);
void dmh_control_set_error(json_object *resp, const dm_error *err);
json_object *dmh_control_response_new(void);

#endif /* DMH_ERROR_JSON_H */
