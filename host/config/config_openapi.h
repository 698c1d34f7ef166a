/*
 * DM's OpenAPI Task and Source (dm/openapi/spec/dm.yaml) <-> dmhost's configs (issue 23, the HTTP
 * API). The way in writes DM's YAML task or source file (libyaml's emitter: the quoting is
 * libyaml's), which the YAML reader (config_yaml.c) then judges key by key as it judges a file
 * written by hand: this room only checks what DM's schema says (each member's type and enum, the
 * members it has) and what YAML cannot say (TLS contents instead of paths), naming the JSON path
 * (`task.source_config.source_conf[1].binlog_pos`). The way back gives the Task and Source DM's
 * converters give (dm/config/task_converters.go SubTaskConfigsToOpenAPITask, source_converter.go).
 * Internal to the config room and its callers (the control commands, the HTTP API).
 */
#ifndef DMH_CONFIG_OPENAPI_H
#define DMH_CONFIG_OPENAPI_H

#include <json-c/json.h>

#include "config.h"
#include "dmhost/error.h"

/* DM's Source / Task as DM's YAML source / task file: 0 with *yaml malloc'd, or -1 with err
 * (DM_ERR_CONFIG_UNKNOWN: a member DM's schema does not have; DM_ERR_CONFIG_INVALID: a wrong type
 * or enum value, a required member missing, a filter rule name no binlog_filter_rule defines,
 * TLS contents), the message naming the member's JSON path. */
int dmh_openapi_source_to_yaml(json_object *source, char **yaml, dm_error *err);
int dmh_openapi_task_to_yaml(json_object *task, char **yaml, dm_error *err);

/* A loaded config as DM's Task / Source (a new object), or NULL with err (out of memory). The
 * source's password is DM's "******" (ObfuscatedPasswordForFeedback); the task's target password
 * is given as DM gives it (the task's config, as loaded). What a Task cannot say (ignore-dbs,
 * ignore-tables, Do and Error filters, extract columns, dmhost's own settings) is left out, as DM's
 * converter leaves it. */
json_object *dmh_openapi_task_from_config(const dmh_task_config *t, dm_error *err);
json_object *dmh_openapi_source_from_config(const dmh_source_config *s, dm_error *err);
/* DM's ClusterTopology (PUT /api/v1/cluster/info) against DM's schema: its members and their
 * hosts' (name, host, port) types; 0, or -1 with *err naming the JSON path. */
int dmh_openapi_topology_check(json_object *topology, dm_error *err);

#endif /* DMH_CONFIG_OPENAPI_H */
