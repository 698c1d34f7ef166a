/*
 * What config_openapi.c (DM's YAML written) and config_openapi_schema.c (DM's schemas and the
 * checks against them) share. Internal to host/config.
 */
#ifndef DMH_CONFIG_OPENAPI_INTERNAL_H
#define DMH_CONFIG_OPENAPI_INTERNAL_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <yaml.h>

#include "dmhost/error.h"

/* A translation: the error to fill, the YAML document being built. */
typedef struct oa {
  dm_error *err;
  yaml_document_t doc;
  bool doc_live, oom;
} oa;

#define OA_PATH_MAX 256

/* err filled with code and the message; -1. */
int oa_fail(oa *o, int32_t code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* `path` then `.key`, or `[idx]` when key is NULL, into out[OA_PATH_MAX]. */
void oa_sub(char *out, const char *path, const char *key, int idx);

/* A member (NULL when absent or null); a string member's text (NULL likewise). */
json_object *oa_get(json_object *v, const char *key);
const char *oa_str(json_object *v, const char *key);

/* An array's length; 0 when absent (json-c asserts on anything but an array). */
size_t alen(json_object *a);

/* A Source / Task against DM's schemas (and, for the Task, its filter rule names): 0, or -1 with
 * the refusal naming the JSON path. */
int oa_source_check(oa *o, json_object *src);
int oa_task_check(oa *o, json_object *task);
/* DM's ClusterTopology and its hosts (PUT /api/v1/cluster/info). */
int oa_topology_check(oa *o, json_object *topo);

#endif /* DMH_CONFIG_OPENAPI_INTERNAL_H */
