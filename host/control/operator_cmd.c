/* The `binlog` command's parsing (binlog_cmd.h; the request's work on a store is
 * unit_operators.c's), and `dmhost binlog` for the foreground run. */
#include "binlog_cmd.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_flag.h"
#include "control.h"
#include "dmhost/sdk.h"
#include "state.h"

static int binlog_bad(dm_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int binlog_bad(dm_error *err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  dm_error_vset(err, DM_ERR_CONTROL_REQUEST, NULL, fmt, ap);
  va_end(ap);
  return -1;
}

/* args[key] as a non-empty string, or NULL when absent; -1 when of another type. */
static int binlog_arg(json_object *args, const char *key, const char **out, dm_error *err) {
  json_object *v = NULL;
  *out = NULL;
  if (!json_object_object_get_ex(args, key, &v) || !v)
    return 0;
  if (!json_object_is_type(v, json_type_string) || json_object_get_string_len(v) == 0)
    return binlog_bad(err, "binlog: argument \"%s\" must be a non-empty string, got %s (usage: %s)",
                      key, json_object_to_json_string(v), DMH_BINLOG_USAGE);
  *out = json_object_get_string(v);
  return 0;
}

int dmh_binlog_req_parse(json_object *args, dmh_binlog_req *req, dm_error *err) {
  memset(req, 0, sizeof *req);
  const char *pos = NULL;
  if (binlog_arg(args, "op", &req->op_name, err) < 0 ||
      binlog_arg(args, "name", &req->name, err) < 0 ||
      binlog_arg(args, "source", &req->source, err) < 0 ||
      binlog_arg(args, "binlogPos", &pos, err) < 0)
    return -1;
  if (!req->op_name)
    return binlog_bad(err, "binlog: argument \"op\" is missing (usage: %s)", DMH_BINLOG_USAGE);
  if (!req->name)
    return binlog_bad(err, "binlog %s: the task name is missing (usage: %s)", req->op_name,
                      DMH_BINLOG_USAGE);
  if (strcmp(req->op_name, "list") == 0)
    req->verb = DMH_BINLOG_LIST;
  else if (strcmp(req->op_name, "revert") == 0)
    req->verb = DMH_BINLOG_REVERT;
  else if (dmh_binlog_op_parse(req->op_name, &req->op.kind) < 0)
    return binlog_bad(err,
                      "binlog: \"%s\" is not skip, replace, inject, list or revert (usage: %s)",
                      req->op_name, DMH_BINLOG_USAGE);
  if (pos && req->verb == DMH_BINLOG_LIST)
    return binlog_bad(err, "binlog list: takes no -b; it shows every operator of the task");
  if (pos && dmh_binlog_pos_parse(pos, req->op.at, err) < 0)
    return -1;
  req->has_pos = pos != NULL;

  json_object *sqls = NULL;
  if (json_object_object_get_ex(args, "sqls", &sqls) && sqls) {
    if (!json_object_is_type(sqls, json_type_array))
      return binlog_bad(err, "binlog %s: argument \"sqls\" must be an array of strings, got %s",
                        req->op_name, json_object_to_json_string(sqls));
    for (size_t i = 0; i < json_object_array_length(sqls); i++) {
      json_object *s = json_object_array_get_idx(sqls, i);
      if (!json_object_is_type(s, json_type_string)) {
        dmh_binlog_req_free(req);
        return binlog_bad(err, "binlog %s: \"sqls\" holds %s, not a string", req->op_name,
                          json_object_to_json_string(s));
      }
      if (dmh_binlog_sql_split(json_object_get_string(s), &req->op.sqls, &req->op.n_sqls, err) <
          0) {
        dmh_binlog_req_free(req);
        return -1;
      }
    }
  }
  bool wants_sql = req->verb == DMH_BINLOG_REGISTER && req->op.kind != DM_BINLOG_OP_SKIP;
  if (wants_sql && req->op.n_sqls == 0)
    return binlog_bad(err,
                      "binlog %s %s: give the SQL statements to %s, as arguments or one string "
                      "split on ';' (usage: %s)",
                      req->op_name, req->name,
                      req->op.kind == DM_BINLOG_OP_REPLACE ? "apply "
                                                             "instead of the event"
                                                           : "apply before the event",
                      DMH_BINLOG_USAGE);
  if (!wants_sql && req->op.n_sqls > 0) {
    dmh_binlog_req_free(req);
    return binlog_bad(err,
                      "binlog %s %s: takes no SQL statements (got %d); replace or inject take "
                      "them (usage: %s)",
                      req->op_name, req->name, req->op.n_sqls, DMH_BINLOG_USAGE);
  }
  return 0;
}

/* ---- dmhost binlog ---- */

static int binlog_print(json_object *resp) {
  json_object *res = NULL;
  bool ok = json_object_object_get_ex(resp, "result", &res) && json_object_get_boolean(res);
  printf("%s\n",
         json_object_to_json_string_ext(resp, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                  JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put(resp);
  return ok ? 0 : 1;
}

static json_object *binlog_source_result(const char *source, const dm_error *e) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "result", json_object_new_boolean(e == NULL));
  json_object_object_add(o, "msg", json_object_new_string(e ? e->message : ""));
  json_object_object_add(o, "source", json_object_new_string(source));
  if (e)
    json_object_object_add(o, "error", dmh_control_error_json(e));
  return o;
}

/* The request on <work>/tasks/<task>/<source> for each source (the one of -s, else every folder
 * there). Fills resp's "sources"; returns 0 or -1 with the first error. */
static int binlog_run_sources(const char *work, const dmh_binlog_req *req, json_object *resp,
                              dm_error *err) {
  json_object *arr = json_object_new_array();
  json_object_object_add(resp, "sources", arr);
  if (dmh_state_check_name("task name", req->name, err) < 0 ||
      (req->source && dmh_state_check_name("source-id", req->source, err) < 0))
    return -1;
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/tasks/%s", work, req->name);
  struct stat sb;
  if (stat(dir, &sb) < 0 || !S_ISDIR(sb.st_mode)) {
    dm_error_set(err, DM_ERR_NOT_FOUND, NULL,
                 "binlog %s: task \"%s\" has never run with work dir %s (no folder %s); give the "
                 "--work-dir of its `dmhost run`",
                 req->op_name, req->name, work, dir);
    return -1;
  }
  char **names = NULL;
  int n = 0, failed = 0;
  if (req->source) {
    names = malloc(sizeof *names);
    if (names && (names[0] = strdup(req->source)))
      n = 1;
  } else {
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
      if (e->d_name[0] == '.' || e->d_type != DT_DIR)
        continue;
      char **grown = realloc(names, sizeof *grown * (size_t)(n + 1));
      if (!grown)
        break;
      names = grown;
      if ((names[n] = strdup(e->d_name)))
        n++;
    }
    if (d)
      closedir(d);
  }
  if (n == 0) {
    dm_error_set(err, DM_ERR_NOT_FOUND, NULL,
                 "binlog %s: task \"%s\" has no source folder in %s; give -s SOURCE", req->op_name,
                 req->name, dir);
    free(names);
    return -1;
  }
  for (int i = 0; i < n; i++) {
    char root[4096 + 256];
    snprintf(root, sizeof root, "%s/%s", dir, names[i]);
    json_object *res = binlog_source_result(names[i], NULL);
    dm_error e;
    if (dmh_binlog_req_apply(req, root, res, &e) < 0) {
      json_object_put(res);
      res = binlog_source_result(names[i], &e);
      if (failed++ == 0)
        *err = e;
    }
    json_object_array_add(arr, res);
    free(names[i]);
  }
  free(names);
  return failed ? -1 : 0;
}

int dmh_binlog_main(int argc, char **argv) {
  const char *work = "dmhost-work";
  /* --work-dir may come anywhere; the rest is dmctl's syntax */
  char **rest = calloc((size_t)argc + 1, sizeof *rest);
  int n = 0;
  dm_error err;
  json_object *resp = dmh_control_response_new();
  if (!rest) {
    dm_error_set(&err, DM_ERR_NO_MEMORY, NULL, "out of memory");
    dmh_control_set_error(resp, &err);
    return binlog_print(resp);
  }
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      printf("usage: dmhost %s [--work-dir DIR]\n"
             "The operators of the tasks `dmhost run --work-dir DIR` runs (default "
             "./dmhost-work); the next run of the task applies them. See docs/control.md.\n",
             DMH_BINLOG_USAGE);
      free(rest);
      json_object_put(resp);
      return 0;
    }
    int f = dmh_cli_flag(argc, argv, &i, "-w", "--work-dir", &work);
    if (f < 0) {
      binlog_bad(&err, "binlog: --work-dir needs a value (usage: dmhost %s [--work-dir DIR])",
                 DMH_BINLOG_USAGE);
      dmh_control_set_error(resp, &err);
      free(rest);
      return binlog_print(resp);
    }
    if (f == 0)
      rest[n++] = argv[i];
  }
  json_object *args = dmh_binlog_args_from_argv(n, rest, &err);
  free(rest);
  dmh_binlog_req req;
  int rc = -1;
  if (args && dmh_binlog_req_parse(args, &req, &err) == 0) {
    json_object_object_add(resp, "op", json_object_new_string(req.op_name));
    json_object_object_add(resp, "task", json_object_new_string(req.name));
    rc = binlog_run_sources(work, &req, resp, &err);
    dmh_binlog_req_free(&req);
  }
  if (rc < 0)
    dmh_control_set_error(resp, &err);
  json_object_put(args);
  return binlog_print(resp);
}
