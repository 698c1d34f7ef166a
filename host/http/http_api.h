/*
 * The HTTP API (docs/api.md): DM's OpenAPI v1 operations (/api/v1/sources, /api/v1/tasks, ... in
 * DM's shapes) and dmhost's own routes under /api/v1/dmhost/ (the control socket's JSON), mapped
 * onto the commands of the control protocol (control.h). One table of routes (the DMH_ROUTE rows
 * of commands.def): its method, its path template, the command it runs and where each of the
 * command's arguments comes from (a path parameter, the query string, a member of the JSON body,
 * or a fixed value). A route's request is built as the control socket's {"cmd", "args"} and
 * answered by the same handler. The same table serves `dmhost serve` and a master: each command is
 * a row of commands.def (test_control_commands). docs/openapi.json describes the same routes
 * (test_control_http_api checks the two are the same set) and is served at GET
 * DMH_API_OPENAPI_PATH and DM's GET DMH_API_DM_JSON_PATH; GET DMH_API_DOCS_PATH is a page listing
 * its operations (http_docs.c).
 */
#ifndef DMH_HTTP_API_H
#define DMH_HTTP_API_H

#include <stdbool.h>
#include <stddef.h>

#include "dmhost/error.h"

#define DMH_API_PREFIX "/api/"
#define DMH_API_OPENAPI_PATH "/api/v1/dmhost/openapi.json"
#define DMH_API_DM_JSON_PATH "/api/v1/dm.json" /* DM's name for the same document */
#define DMH_API_DOCS_PATH "/api/v1/docs"       /* the page listing its operations */
/* dmhost's own routes: under it the socket's answers and refusals; elsewhere DM's (http_dm.h) */
#define DMH_API_OWN_PREFIX "/api/v1/dmhost/"

/* Where a command argument comes from (commands.def's DMH_P, DMH_Q, ... in its header). */
typedef enum dmh_api_from {
  DMH_API_NONE = 0,
  DMH_API_PATH,       /* the path parameter `name` ({name} in the template) */
  DMH_API_QUERY,      /* the query parameter `name` (optional) */
  DMH_API_QUERY_BOOL, /* the query parameter `name`: true or false, a DMH_ARG_BOOL argument */
  DMH_API_QUERY_LIST, /* every query parameter `name` (a=x&a=y, OpenAPI's form explode): a list */
  DMH_API_QUERY_NOT,  /* the query parameter `name`, true or false: the argument its negation */
  DMH_API_BODY,       /* the body's member `name` (a string, or an array for "sqls") */
  DMH_API_BODY_LIST,  /* the body's member `name`, an array of strings: a list argument */
  DMH_API_BODY_OPT, /* the body's member `name`, a string or a boolean: none when it says nothing */
  DMH_API_BODY_DIR, /* the body's member `name`, a folder put before the argument's value */
  DMH_API_REFUSED,  /* the body's member `name` refused when it says anything (`why`) */
  DMH_API_IGNORED,  /* the body's member `name` taken with no effect (`why`, documented) */
  DMH_API_TRANSLATED, /* the body's member `name` (NULL: the whole body), an object, as the text
                         the translator of kind `why` makes of it (http_dm.h) */
  DMH_API_FIXED,      /* the value `name` itself */
  DMH_API_ABSENT,     /* true when the body's member `name` (a dotted path: "source.password")
                         is absent or null, else false: a DMH_ARG_BOOL argument */
} dmh_api_from;

typedef struct dmh_api_arg {
  const char *arg; /* the command's argument ("" for REFUSED and IGNORED: none) */
  dmh_api_from from;
  const char *name;
  bool required;   /* DMH_API_BODY: the member must be there */
  const char *why; /* REFUSED, IGNORED: said in the refusal, or the reason it is taken */
} dmh_api_arg;

/* How a route answers (commands.def's answer column: DMH_OWN, DMH_DM(SHAPE, status)). */
typedef enum dmh_api_shape {
  DMH_API_OWN = 0,       /* dmhost's own: the socket's JSON, 200 */
  DMH_API_EMPTY,         /* DM's c.Status(status): no body */
  DMH_API_TASK_STATUS,   /* GetTaskStatusResponse {total, data: [SubTaskStatus]} (query-status) */
  DMH_API_SOURCE_STATUS, /* GetSourceStatusResponse {total, data: [SourceStatus]} (operate-source) */
  DMH_API_MASTERS,       /* GetClusterMasterListResponse (list-member --master) */
  DMH_API_WORKERS,       /* GetClusterWorkerListResponse (list-member --worker) */
  DMH_API_OPERATE_TASK,  /* OperateTaskResponse {task: the request's, check_result} (start-task) */
  DMH_API_CONVERTER,     /* ConverterTaskResponse {task, task_config_file} (convert-task) */
  DMH_API_SOURCE,        /* Source: the request's, password hidden (operate-source create) */
  DMH_API_NAMES,         /* SchemaNameList / TableNameList: a bare array of names (source-schemas'
                            "schemas" or "tables", binlog-schema list's items) */
  DMH_API_TABLE_STRUCTURE, /* GetTaskTableStructureResponse (binlog-schema list DB TABLE) */
  DMH_API_MIGRATE_TARGETS, /* GetTaskMigrateTargetsResponse {total, data} (task-tables) */
  DMH_API_SOURCE_LIST,     /* GetSourceListResponse {total, data: [Source]} (api-objects) */
  DMH_API_SOURCE_ONE,      /* Source (api-objects source NAME) */
  DMH_API_TASK_LIST,       /* GetTaskListResponse {total, data: [Task]} (api-objects) */
  DMH_API_TASK_ONE,        /* Task (api-objects task NAME) */
  DMH_API_TEMPLATE,        /* Task (task-template create|update|get) */
  DMH_API_TEMPLATE_LIST,   /* GetTaskListResponse (task-template list) */
  DMH_API_TEMPLATE_IMPORT, /* TaskTemplateResponse (task-template import) */
  DMH_API_CLUSTER_INFO,    /* GetClusterInfoResponse {cluster_id, topology} (cluster-info) */
  DMH_API_SHAPES
} dmh_api_shape;

#define DMH_API_MAX_ARGS 12
typedef struct dmh_api_route {
  const char *method;
  const char *path; /* "/api/v1/tasks/{task-name}/status", as docs/openapi.json spells it */
  const char *cmd;  /* NULL: the OpenAPI document itself (or its page) */
  dmh_api_shape shape;
  unsigned status;    /* DM's status on success (DMH_OWN: 200) */
  bool not_found_404; /* DM's GET of one item: DM_ERR_NOT_FOUND answers 404, not 400 */
  dmh_api_arg args[DMH_API_MAX_ARGS];
} dmh_api_route;

/* The query parameters of a request: up to `max` values of `name` into values[], their count. */
typedef size_t (*dmh_api_query_fn)(void *ud, const char *name, const char **values, size_t max);

/* The table, and its length. */
const dmh_api_route *dmh_api_routes(size_t *n);

/* The OpenAPI document embedded at build time (docs/openapi.json), and its length. */
const char *dmh_api_openapi(size_t *len);

/* The page of GET DMH_API_DOCS_PATH (http_docs.c): the document's operations as one HTML table,
 * built once; NULL when out of memory. */
const char *dmh_api_docs_html(size_t *len);

/* The route of `method` on `url` (no query string): 0 with *route; or the HTTP status to answer
 * with *err: 404 (no route has the path), 405 (the path is served by other methods: they
 * are in `allow`, ", "-separated, for the Allow header), 400 (a path parameter is empty). */
int dmh_api_match(const char *method, const char *url, const dmh_api_route **route, char *allow,
                  size_t allow_size, dm_error *err);

/* The control request of `route` for `url`, its query parameters (`query`, NULL: none) and the
 * body (`body` of `len`, JSON object or empty): a malloc'd {"cmd", "args"} line, or NULL with
 * *err (DM_ERR_CONTROL_REQUEST: the body is not a JSON object, a member the route does not take
 * or refuses, a required member missing or of the wrong type, a query boolean that is not
 * true or false). */
char *dmh_api_request(const dmh_api_route *route, const char *url, dmh_api_query_fn query,
                      void *query_ud, const char *body, size_t len, dm_error *err);

#endif /* DMH_HTTP_API_H */
