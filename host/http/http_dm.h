/*
 * DM's answers on DM's OpenAPI paths (docs/api.md, "DM's operations"): a route of commands.def
 * whose answer column is DMH_DM(SHAPE, status) runs its command as every route does, and the
 * command's answer (the control socket's JSON) is reshaped here into what DM's dm-master answers:
 * the shape's body and `status` on success; on `result: false` HTTP 400 (404 for DMH_DM_ONE's
 * DM_ERR_NOT_FOUND) with DM's ErrorWithMessage {"error_msg", "error_code"}, error_msg in terror's
 * format ("[code=14003:class=control:scope=internal:level=low], Message: ..., Workaround: ...") so
 * that DM's scripts matching on "code=" keep working. The transport's own refusals on a DM path
 * (400, 403, 404, 405, 413, 415) are reshaped the same way. One shaper per shape, in one table.
 */
#ifndef DMH_HTTP_DM_H
#define DMH_HTTP_DM_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "http_api.h"

/* `url` is one of DM's paths: under /api/v1/ but not dmhost's own /api/v1/dmhost/. */
bool dmh_dm_path(const char *url);

/* DM's answer of `route` (a DMH_DM route) from its command's answer `answer` (the socket's JSON
 * text, freed) and the request's body `request` (its JSON text or NULL: the shapes DM answers
 * with what it was sent, a Task or a Source): the body (malloc'd; NULL with *empty when the answer
 * has none, NULL without it when out of memory) and *status. */
char *dmh_dm_answer(const dmh_api_route *route, char *answer, const char *request, unsigned *status,
                    bool *empty);

/* DM's ErrorWithMessage of the socket's refusal `refusal` (JSON text with "error", freed). */
char *dmh_dm_refusal(char *refusal);

/* A translator: the text (malloc'd) of the JSON object `obj` a DMH_T route member carries, or -1
 * with *err naming what is wrong (by JSON path). */
typedef int (*dmh_dm_translator)(json_object *obj, char **text, dm_error *err);

/* The text the translator of `kind` (commands.def's DMH_T: TASK, SOURCE, JSON) makes of `obj`:
 * 0, or -1 with *err (DM_ERR_CONTROL_REQUEST: no such kind, or its translator is not built). */
int dmh_dm_translate(const char *kind, json_object *obj, char **text, dm_error *err);

/* terror's text of the socket's error object `error` ({ErrCode, ErrClass, ...}) into buf:
 * "[code=%d:class=%s:scope=%s:level=%s], Message: %s[, RawCause: %s][, Workaround: %s]". */
void dmh_dm_error_text(json_object *error, char *buf, size_t size);

#endif /* DMH_HTTP_DM_H */
