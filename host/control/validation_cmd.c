/*
 * `dmctl validation` (validation_cmd.h): DM's dmctl rules for its eight subcommands into the
 * unit's dm_validation_req, and DM's answers (StartValidationResponse and the others) made of
 * what each subtask's validation_op put.
 */
#include "validation_cmd.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmhost/sdk.h"

static const struct {
  const char *name;
  uint32_t op, error_op;
} val_ops[] = {
    {"start", DM_VALIDATION_START, 0},
    {"stop", DM_VALIDATION_STOP, 0},
    {"status", DM_VALIDATION_STATUS, 0},
    {"show-error", DM_VALIDATION_SHOW_ERROR, 0},
    {"ignore-error", DM_VALIDATION_OPERATE, DM_VALIDATION_ERR_IGNORE},
    {"resolve-error", DM_VALIDATION_OPERATE, DM_VALIDATION_ERR_RESOLVE},
    {"clear-error", DM_VALIDATION_OPERATE, DM_VALIDATION_ERR_CLEAR},
    {"update", DM_VALIDATION_UPDATE, 0},
};

/* DM's utils.ParseStartTime's layouts: DATE[ T]TIME, then nothing, +HH:MM or +HHMM (or -). */
static bool val_start_time_ok(const char *s) {
  static const char shape[] = "dddd-dd-dd?dd:dd:dd";
  size_t n = strlen(shape);
  if (strlen(s) < n)
    return false;
  for (size_t i = 0; i < n; i++) {
    char want = shape[i], c = s[i];
    if (want == 'd' ? !isdigit((unsigned char)c) : want == '?' ? (c != ' ' && c != 'T') : c != want)
      return false;
  }
  const char *z = s + n;
  if (!*z)
    return true;
  if (*z != '+' && *z != '-')
    return false;
  z++;
  if (strlen(z) == 5)
    return isdigit((unsigned char)z[0]) && isdigit((unsigned char)z[1]) && z[2] == ':' &&
           isdigit((unsigned char)z[3]) && isdigit((unsigned char)z[4]);
  return strlen(z) == 4 && strspn(z, "0123456789") == 4;
}

/* DM's binlog.PositionFromPosStr: "(FILE, POS)" (the brackets optional), POS a 32-bit number. */
static int val_pos_check(const char *s, dm_error *err) {
  size_t len = strlen(s);
  const char *b = s, *e = s + len;
  if (len > 2 && s[0] == '(' && s[len - 1] == ')')
    b++, e--;
  const char *sep = NULL;
  int seps = 0; /* DM splits at ", " and wants two parts */
  for (const char *p = b; p + 1 < e; p++)
    if (p[0] == ',' && p[1] == ' ' && seps++ == 0)
      sep = p;
  if (seps != 1)
    return dmh_control_bad(
        err, "invalid binlog pos, should be like (mysql-bin.000001, 2345), got %s", s);
  const char *num = sep + 2;
  char *end = NULL;
  errno = 0;
  unsigned long long v = num < e && isdigit((unsigned char)*num) ? strtoull(num, &end, 10) : 0;
  if (!end || end != e || errno || v > UINT32_MAX)
    return dmh_control_bad(err, "the pos should be digital, position string %s", s);
  return 0;
}

/* An option or bare flag `what` given to a subcommand `op` that has none such in DM. */
static int val_refuse(const dmh_control_cmd *cmd, const char *op, const char *what, dm_error *err) {
  return dmh_control_bad(err, "validation %s: %s is not taken here (usage: %s)", op, what,
                         cmd->usage);
}

int dmh_validation_cmd_parse(const dmh_control_cmd *cmd, json_object *args, dmh_validation_cmd *out,
                             dm_error *err) {
  memset(out, 0, sizeof *out);
  const char *op, *name = NULL, *id = NULL, *mode = NULL, *start_time = NULL, *stage = NULL,
                  *state = NULL, *pos = NULL, *gtid = NULL;
  bool all_task, all;
  if (dmh_control_arg_string(cmd, args, "op", true, &op, err) < 0 ||
      dmh_control_arg_string(cmd, args, "name", false, &name, err) < 0 ||
      dmh_control_arg_string(cmd, args, "error-id", false, &id, err) < 0 ||
      dmh_control_arg_bool(cmd, args, "all-task", &all_task, err) < 0 ||
      dmh_control_arg_bool(cmd, args, "all", &all, err) < 0 ||
      dmh_control_arg_list(cmd, args, "source", out->sources, DMH_CONTROL_MAX_LIST, &out->n_sources,
                           err) < 0 ||
      dmh_control_arg_string(cmd, args, "mode", false, &mode, err) < 0 ||
      dmh_control_arg_string(cmd, args, "start-time", false, &start_time, err) < 0 ||
      dmh_control_arg_string(cmd, args, "table-stage", false, &stage, err) < 0 ||
      dmh_control_arg_string(cmd, args, "error", false, &state, err) < 0 ||
      dmh_control_arg_string(cmd, args, "cutover-binlog-pos", false, &pos, err) < 0 ||
      dmh_control_arg_string(cmd, args, "cutover-binlog-gtid", false, &gtid, err) < 0)
    return -1;
  size_t k = 0;
  while (k < sizeof val_ops / sizeof val_ops[0] && strcmp(val_ops[k].name, op) != 0)
    k++;
  if (k == sizeof val_ops / sizeof val_ops[0])
    return dmh_control_bad(err,
                           "validation: \"%s\" is not start, stop, status, show-error, "
                           "ignore-error, resolve-error, clear-error or update (usage: %s)",
                           op, cmd->usage);
  dm_validation_req *q = &out->req;
  q->op = val_ops[k].op;
  q->error_op = val_ops[k].error_op;
  bool start_stop = q->op == DM_VALIDATION_START || q->op == DM_VALIDATION_STOP;
  bool operate = q->op == DM_VALIDATION_OPERATE;
  /* each option only where DM's subcommand has it */
  if ((mode || start_time) && q->op != DM_VALIDATION_START)
    return val_refuse(cmd, op, mode ? "--mode" : "--start-time", err);
  if (all_task && !start_stop)
    return val_refuse(cmd, op, "--all-task", err);
  if (stage && q->op != DM_VALIDATION_STATUS)
    return val_refuse(cmd, op, "--table-stage", err);
  if (state && q->op != DM_VALIDATION_SHOW_ERROR)
    return val_refuse(cmd, op, "--error", err);
  if (all && !operate)
    return val_refuse(cmd, op, "--all", err);
  if ((pos || gtid) && q->op != DM_VALIDATION_UPDATE)
    return val_refuse(cmd, op, pos ? "--cutover-binlog-pos" : "--cutover-binlog-gtid", err);
  if (id && !operate) /* DM: one task name at most */
    return dmh_control_bad(err, "too many arguments are specified");
  out->name = name;
  if (start_stop) {
    if (!name == !all_task) /* DM's words, both when both and when neither */
      return dmh_control_bad(err, "either `task-name` or `all-task` should be set");
    if (mode && strcmp(mode, "full") != 0 && strcmp(mode, "fast") != 0)
      return dmh_control_bad(err, "mode should be either `full` or `fast`, current is `%s`", mode);
    if (start_time && !val_start_time_ok(start_time))
      return dmh_control_bad(err, "start-time should be in the format like '2006-01-02 15:04:05', "
                                  "'2006-01-02T15:04:05', '2006-01-02 15:04:05+08:00', "
                                  "'2006-01-02T15:04:05+08:00', '2006-01-02 15:04:05+0800', or "
                                  "'2006-01-02T15:04:05+0800'");
    q->mode = mode;
    q->start_time = start_time;
    return 0;
  }
  if (!name)
    return dmh_control_bad(err, q->op == DM_VALIDATION_UPDATE ? "`task-name` should be set"
                                                              : "task name should be specified");
  if (q->op == DM_VALIDATION_STATUS) {
    if (stage && strcmp(stage, "running") != 0 && strcmp(stage, "stopped") != 0)
      return dmh_control_bad(err, "stage should be either `running` or `stopped`");
    q->table_stage = stage;
  } else if (q->op == DM_VALIDATION_SHOW_ERROR) {
    /* DM's dmctl: resolved errors are not shown ("todo: support querying resolved error?") */
    if (state && strcmp(state, "all") != 0 && strcmp(state, "ignored") != 0 &&
        strcmp(state, "unprocessed") != 0)
      return dmh_control_bad(err, "error flag should be either `all`, `ignored`, or `unprocessed`");
    q->error_state = state ? state : "unprocessed";
  } else if (operate) {
    if (!id == !all)
      return dmh_control_bad(err, "either `--all` or `error-id` should be set");
    if (id) {
      char *end = NULL;
      errno = 0;
      unsigned long long v = isdigit((unsigned char)id[0]) ? strtoull(id, &end, 10) : 0;
      if (!end || *end || errno)
        return dmh_control_bad(err, "`error-id` should be integer when `--all` is not set");
      if (v == 0) /* the slot's 0 is --all: an id is never 0 (DM's count from 1) */
        return dmh_control_bad(err, "`error-id` 0 names no error (ids start at 1); use --all "
                                    "for every error");
      q->error_id = v;
    }
  } else { /* update */
    if (pos && gtid)
      return dmh_control_bad(err, "you must specify either one of '--cutover-binlog-pos' or "
                                  "'--cutover-binlog-gtid'");
    if (!pos && !gtid)
      return dmh_control_bad(err,
                             "validation update: give --cutover-binlog-pos '(FILE, POS)' or "
                             "--cutover-binlog-gtid GTID_SET (usage: %s)",
                             cmd->usage);
    if (pos && val_pos_check(pos, err) < 0)
      return -1;
    q->cutover_pos = pos;
    q->cutover_gtid = gtid;
  }
  return 0;
}

/* DM's Go %v of a list of strings: "[a b]". */
static void val_list_text(const char *const *v, size_t n, char *buf, size_t len) {
  size_t k = (size_t)snprintf(buf, len, "[");
  for (size_t i = 0; i < n && k < len; i++)
    k += (size_t)snprintf(buf + k, len - k, "%s%s", i ? " " : "", v[i]);
  if (k < len)
    snprintf(buf + k, len - k, "]");
}

int dmh_validation_not_found(const dmh_validation_cmd *c, dm_error *err) {
  char list[512];
  val_list_text(c->sources, c->n_sources, list, sizeof list);
  if (!c->name)
    dm_error_set(err, DM_ERR_NOT_FOUND, NULL, "cannot get subtask by sources `%s`", list);
  else if (c->req.op == DM_VALIDATION_START || c->req.op == DM_VALIDATION_STOP || c->n_sources)
    dm_error_set(err, DM_ERR_NOT_FOUND, NULL,
                 "cannot get subtask by task name `%s` and sources `%s`", c->name, list);
  else
    dm_error_set(err, DM_ERR_NOT_FOUND, NULL, "cannot get subtask by task name `%s`", c->name);
  return -1;
}

/* The array resp[key], made when missing. */
static json_object *val_array(json_object *resp, const char *key) {
  json_object *a = NULL;
  if (json_object_object_get_ex(resp, key, &a) && json_object_is_type(a, json_type_array))
    return a;
  a = json_object_new_array();
  json_object_object_add(resp, key, a);
  return a;
}

static void val_fail_entry(json_object *entry, const char *msg) {
  json_object_object_add(entry, "result", json_object_new_boolean(0));
  json_object_object_add(entry, "msg", json_object_new_string(msg));
}

void dmh_validation_shape(const dm_validation_req *req, json_object *resp) {
  json_object *srcs = val_array(resp, "sources");
  json_object *validators = NULL, *tables = NULL, *errors = NULL;
  if (req->op == DM_VALIDATION_STATUS) {
    validators = val_array(resp, "validators");
    tables = val_array(resp, "tableStatuses");
  } else if (req->op == DM_VALIDATION_SHOW_ERROR) {
    errors = val_array(resp, "error"); /* DM's GetValidationErrorResponse.error */
  }
  for (size_t i = 0; i < json_object_array_length(srcs); i++) {
    json_object *e = json_object_array_get_idx(srcs, i), *items = NULL;
    if (!json_object_object_get_ex(e, "items", &items))
      continue;
    json_object *got = json_object_new_array();
    bool bad = false;
    for (size_t k = 0; k < json_object_array_length(items) && !bad; k++) {
      json_object *o =
          json_tokener_parse(json_object_get_string(json_object_array_get_idx(items, k)));
      if (!json_object_is_type(o, json_type_object)) {
        json_object_put(o);
        bad = true;
      } else {
        json_object_array_add(got, o);
      }
    }
    if (bad) /* the unit broke its contract: say so rather than pass text on as DM's */
      val_fail_entry(e, "the sync unit's validation_op answered an item that is not a JSON object");
    for (size_t k = 0; !bad && k < json_object_array_length(got); k++) {
      json_object *o = json_object_get(json_object_array_get_idx(got, k));
      json_object *into = req->op == DM_VALIDATION_STATUS ? (k == 0 ? validators : tables)
                          : errors                        ? errors
                                                          : NULL;
      if (into)
        json_object_array_add(into, o);
      else
        json_object_put(o);
    }
    json_object_put(got);
    json_object_object_del(e, "items");
  }
  dmh_validation_result(req, resp);
}

static void val_append(json_object *to, json_object *from) {
  for (size_t i = 0;
       from && json_object_is_type(from, json_type_array) && i < json_object_array_length(from);
       i++)
    json_object_array_add(to, json_object_get(json_object_array_get_idx(from, i)));
}

void dmh_validation_merge(json_object *resp, json_object *answer, const char *task,
                          const char *source, const char *worker, const dm_error *e) {
  json_object *srcs = val_array(resp, "sources"), *v = NULL;
  if (answer && json_object_object_get_ex(answer, "sources", &v) &&
      json_object_array_length(v) > 0) {
    val_append(srcs, v);
    static const char *const keys[] = {"validators", "tableStatuses", "error"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
      json_object *a = NULL, *to = NULL;
      if (json_object_object_get_ex(answer, keys[k], &a) &&
          json_object_is_type(a, json_type_array) && json_object_object_get_ex(resp, keys[k], &to))
        val_append(to, a);
    }
    return;
  }
  /* refused as a whole (its msg and error), or not reached (e) */
  json_object *entry = json_object_new_object();
  json_object *msg = NULL, *error = NULL;
  if (answer) {
    json_object_object_get_ex(answer, "msg", &msg);
    json_object_object_get_ex(answer, "error", &error);
  }
  val_fail_entry(entry, msg ? json_object_get_string(msg) : e ? e->message : "no answer");
  json_object_object_add(entry, "source", json_object_new_string(source));
  json_object_object_add(entry, "worker", json_object_new_string(worker ? worker : ""));
  json_object_object_add(entry, "task", json_object_new_string(task));
  if (error && json_object_is_type(error, json_type_object))
    json_object_object_add(entry, "error", json_object_get(error));
  else if (!answer && e)
    json_object_object_add(entry, "error", dmh_control_error_json(e));
  json_object_array_add(srcs, entry);
}

void dmh_validation_result(const dm_validation_req *req, json_object *resp) {
  json_object *srcs = val_array(resp, "sources");
  char msg[4096] = "";
  size_t n = 0;
  bool ok = true;
  for (size_t i = 0; i < json_object_array_length(srcs); i++) {
    json_object *e = json_object_array_get_idx(srcs, i), *r = NULL, *m = NULL;
    if (json_object_object_get_ex(e, "result", &r) && json_object_get_boolean(r))
      continue;
    ok = false;
    json_object_object_get_ex(e, "msg", &m);
    if (n < sizeof msg)
      n += (size_t)snprintf(msg + n, sizeof msg - n, "%s; ", m ? json_object_get_string(m) : "");
  }
  bool success_word = req->op == DM_VALIDATION_START || req->op == DM_VALIDATION_STOP ||
                      req->op == DM_VALIDATION_UPDATE;
  json_object_object_add(resp, "result", json_object_new_boolean(ok));
  json_object_object_add(resp, "msg",
                         json_object_new_string(ok ? (success_word ? "success" : "") : msg));
}

int dmh_control_validation(void *ud, const dmh_control_cmd *cmd, json_object *args,
                           json_object *resp, dm_error *err) {
  dmh_validation_cmd c;
  if (dmh_validation_cmd_parse(cmd, args, &c, err) < 0 ||
      dmh_registry_validation(ud, c.name, c.sources, c.n_sources, &c.req, resp, err) < 0)
    return -1;
  json_object *srcs = NULL;
  if (!json_object_object_get_ex(resp, "sources", &srcs) || json_object_array_length(srcs) == 0)
    return dmh_validation_not_found(&c, err);
  dmh_validation_shape(&c.req, resp);
  return 0;
}
