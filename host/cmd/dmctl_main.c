/*
 * dmctl: DM's command names over the control socket of `dmhost serve`, or over its HTTP control
 * plane with --master-addr. Prints the JSON response (pretty) and exits 0 iff its "result" is true.
 * Mistakes on the command line are answered locally in the same shape (DM_ERR_CONTROL_REQUEST), so
 * scripts read one format. Parsing and printing are one path; only dmctl_send knows the transport.
 */
#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "binlog_cmd.h"
#include "cli_flag.h"
#include "control.h"
#include "control_http.h"
#include "control_socket.h"
#include "dmhost/sdk.h"
#include "state.h"

#define DMCTL_DEFAULT_TIMEOUT_S 300

typedef struct dmctl_cmd {
  const char *name;
  const char *usage;
  const char *what;
} dmctl_cmd;

static const dmctl_cmd dmctl_cmds[] = {
    {"operate-source", "operate-source create SOURCE.cfg | show [-s SOURCE] | stop -s SOURCE",
     "bind a source to the worker (its file is copied into the state dir), show it, or unbind it"},
    {"check-task", "check-task TASK.cfg",
     "check what the task needs of its sources and target (docs/precheck.md); DM's checker "
     "JSON in checkResult, result false when an item failed"},
    {"start-task", "start-task TASK.cfg",
     "start a task: one subtask per mysql-instances entry whose source is bound here"},
    {"update-task", "update-task TASK.cfg",
     "a paused task takes the file's rules (block-allow-list, routes, filters) and unit sections; "
     "its identity (name, task-mode, target, sources, meta-schema) must stay"},
    {"pause-task", "pause-task NAME", "pause the task's subtasks at a safe point"},
    {"resume-task", "resume-task NAME", "resume a paused (or restored-as-paused) task"},
    {"stop-task", "stop-task NAME", "stop the task and remove it"},
    {"query-status", "query-status [NAME]",
     "without NAME: every task with its stage per source; with NAME: DM's detailed status"},
    {"start-relay", "start-relay -s SOURCE [WORKER...]",
     "start the relay of the bound source (on the named workers, through --master-addr)"},
    {"stop-relay", "stop-relay -s SOURCE [WORKER...]",
     "stop the relay of the bound source (on the named workers, through --master-addr)"},
    {"purge-relay", "purge-relay -s SOURCE -f FILE",
     "remove the relay files before FILE ([SUB-FOLDER/]mysql-bin.N) that no reader needs"},
    {"swap-unit", "swap-unit NAME --unit KIND --path NEW.so",
     "replace the unit build of a task at a safe point"},
    {"binlog", DMH_BINLOG_USAGE,
     "skip, replace or inject SQL before the statement event at -b (default: the one the task "
     "fails on); list or revert those registered"},
    {"list-member", "list-member [--master|--worker]",
     "the cluster's masters (the leader marked) and workers (stage offline/free/bound/relay and "
     "source); --master-addr of any master"},
    {"transfer-source", "transfer-source SOURCE WORKER",
     "bind SOURCE to WORKER (free, or keeping SOURCE's relay) in the cluster; the leader "
     "applies it"},
    {"help", "help", "this list"},
};

#define DMCTL_N_CMDS (sizeof dmctl_cmds / sizeof dmctl_cmds[0])

static const char *dmctl_global_usage =
    "dmctl [--socket PATH | --state-dir DIR | --master-addr HOST:PORT [--tls-ca FILE --tls-cert "
    "FILE --tls-key FILE]] [--timeout SECONDS] COMMAND [ARGS]";

static int dmctl_print(json_object *resp) {
  json_object *res = NULL;
  bool ok = json_object_object_get_ex(resp, "result", &res) && json_object_get_boolean(res);
  printf("%s\n",
         json_object_to_json_string_ext(resp, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                  JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put(resp);
  return ok ? 0 : 1;
}

static int dmctl_fail(const dm_error *err) {
  json_object *resp = dmh_control_response_new();
  dmh_control_set_error(resp, err);
  return dmctl_print(resp);
}

static int dmctl_bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int dmctl_bad(const char *fmt, ...) {
  dm_error err;
  va_list ap;
  va_start(ap, fmt);
  dm_error_vset(&err, DM_ERR_CONTROL_REQUEST, NULL, fmt, ap);
  va_end(ap);
  return dmctl_fail(&err);
}

static int dmctl_help(void) {
  json_object *resp = dmh_control_response_new();
  json_object_object_add(resp, "usage", json_object_new_string(dmctl_global_usage));
  json_object *list = json_object_new_array();
  for (size_t i = 0; i < DMCTL_N_CMDS; i++) {
    json_object *c = json_object_new_object();
    json_object_object_add(c, "cmd", json_object_new_string(dmctl_cmds[i].name));
    json_object_object_add(c, "usage", json_object_new_string(dmctl_cmds[i].usage));
    json_object_object_add(c, "what", json_object_new_string(dmctl_cmds[i].what));
    json_object_array_add(list, c);
  }
  json_object_object_add(resp, "commands", list);
  return dmctl_print(resp);
}

/* The daemon runs elsewhere: a relative path must be made absolute here, where it means something.
 * The file need not exist (the daemon reports a missing one with the config's own error). */
static char *dmctl_abs(const char *path) {
  if (path[0] == '/')
    return strdup(path);
  char *cwd = getcwd(NULL, 0);
  if (!cwd)
    return NULL;
  char *out = NULL;
  if (asprintf(&out, "%s/%s", cwd, path[0] == '.' && path[1] == '/' ? path + 2 : path) < 0)
    out = NULL;
  free(cwd);
  return out;
}

static const dmctl_cmd *dmctl_find(const char *name) {
  for (size_t i = 0; i < DMCTL_N_CMDS; i++)
    if (strcmp(dmctl_cmds[i].name, name) == 0)
      return &dmctl_cmds[i];
  return NULL;
}

/* Build the request for argv[0..argc) (the command and its arguments). Returns the request, or
 * NULL having printed the error (*rc set). */
static json_object *dmctl_request(int argc, char **argv, int *rc) {
  const dmctl_cmd *cmd = dmctl_find(argv[0]);
  if (!cmd) {
    char list[512];
    size_t n = 0;
    for (size_t i = 0; i < DMCTL_N_CMDS && n < sizeof list; i++)
      n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", dmctl_cmds[i].name);
    *rc = dmctl_bad("unknown command \"%s\"; the commands are %s", argv[0], list);
    return NULL;
  }
  if (strcmp(cmd->name, "binlog") == 0) {
    /* SQL arguments may be many and look like anything: the command parses its own line */
    dm_error err;
    json_object *args = dmh_binlog_args_from_argv(argc - 1, argv + 1, &err);
    if (!args) {
      *rc = dmctl_fail(&err);
      return NULL;
    }
    json_object *req = json_object_new_object();
    json_object_object_add(req, "cmd", json_object_new_string(cmd->name));
    json_object_object_add(req, "args", args);
    return req;
  }
  const char *source = NULL, *unit = NULL, *path = NULL, *file = NULL;
  const char *pos[3] = {NULL, NULL, NULL};
  int npos = 0;
  bool only_masters = false, only_workers = false;
  for (int i = 1; i < argc; i++) {
    if (strcmp(cmd->name, "list-member") == 0 &&
        (strcmp(argv[i], "--master") == 0 || strcmp(argv[i], "--worker") == 0)) {
      *(argv[i][2] == 'm' ? &only_masters : &only_workers) = true;
      continue;
    }
    int f = dmh_cli_flag(argc, argv, &i, "-s", "--source", &source);
    if (f == 0)
      f = dmh_cli_flag(argc, argv, &i, "-u", "--unit", &unit);
    if (f == 0)
      f = dmh_cli_flag(argc, argv, &i, "-p", "--path", &path);
    if (f == 0)
      f = dmh_cli_flag(argc, argv, &i, "-f", "--filename", &file);
    if (f < 0) {
      *rc = dmctl_bad("%s: %s needs a value (usage: %s)", cmd->name, argv[i], cmd->usage);
      return NULL;
    }
    if (f > 0)
      continue;
    if (argv[i][0] == '-' && argv[i][1] != '\0') {
      *rc = dmctl_bad("%s: unknown option %s (usage: %s)", cmd->name, argv[i], cmd->usage);
      return NULL;
    }
    if (npos == 3) {
      *rc = dmctl_bad("%s: too many arguments (usage: %s)", cmd->name, cmd->usage);
      return NULL;
    }
    pos[npos++] = argv[i];
  }

  json_object *args = json_object_new_object();
  const char *name = cmd->name;
  /* Which of the parsed pieces each command takes; anything else is a usage error. */
  bool want_source = false, need_source = false, want_unit = false, want_file = false;
  int min_pos = 0, max_pos = 0;
  const char *pos_key = NULL;
  bool pos_is_path = false;
  if (strcmp(name, "operate-source") == 0) {
    const char *op = npos > 0 ? pos[0] : "";
    bool create = strcmp(op, "create") == 0, show = strcmp(op, "show") == 0,
         stop = strcmp(op, "stop") == 0;
    if (!create && !show && !stop) {
      json_object_put(args);
      *rc = dmctl_bad("operate-source: \"%s\" is not create, show or stop (usage: %s)", op,
                      cmd->usage);
      return NULL;
    }
    json_object_object_add(args, "op", json_object_new_string(op));
    /* the op is not one of the positionals below */
    for (int k = 1; k < npos; k++)
      pos[k - 1] = pos[k];
    npos--;
    if (!create && npos == 1 && !source) { /* DM also takes the source-id positionally */
      source = pos[0];
      npos = 0;
    }
    min_pos = max_pos = create ? 1 : 0;
    pos_key = "path";
    pos_is_path = true;
    want_source = !create;
    need_source = stop;
  } else if (strcmp(name, "start-task") == 0 || strcmp(name, "check-task") == 0 ||
             strcmp(name, "update-task") == 0) {
    min_pos = max_pos = 1;
    pos_key = "path";
    pos_is_path = true;
  } else if (strcmp(name, "pause-task") == 0 || strcmp(name, "resume-task") == 0 ||
             strcmp(name, "stop-task") == 0) {
    min_pos = max_pos = 1;
    pos_key = "name";
  } else if (strcmp(name, "query-status") == 0) {
    max_pos = 1;
    pos_key = "name";
  } else if (strcmp(name, "start-relay") == 0 || strcmp(name, "stop-relay") == 0) {
    want_source = need_source = true;
    max_pos = 3; /* the workers, through --master-addr (docs/cluster.md) */
  } else if (strcmp(name, "purge-relay") == 0) {
    want_source = need_source = want_file = true;
  } else if (strcmp(name, "transfer-source") == 0) {
    min_pos = max_pos = 2;
  } else if (strcmp(name, "swap-unit") == 0) {
    min_pos = max_pos = 1;
    pos_key = "name";
    want_unit = true;
  }
  const char *problem = NULL;
  if (npos < min_pos)
    problem = "missing argument";
  else if (npos > max_pos)
    problem = "too many arguments";
  else if (source && !want_source)
    problem = "-s is not an option of this command";
  else if (need_source && !source)
    problem = "-s SOURCE is required";
  else if ((unit || path) && !want_unit)
    problem = "--unit/--path are not options of this command";
  else if (want_unit && (!unit || !path))
    problem = "--unit KIND and --path NEW.so are required";
  else if (file && !want_file)
    problem = "-f is not an option of this command";
  else if (want_file && !file)
    problem = "-f FILE is required";
  if (problem) {
    json_object_put(args);
    *rc = dmctl_bad("%s: %s (usage: %s)", name, problem, cmd->usage);
    return NULL;
  }
  if (npos > 0 && pos_key) {
    char *abs = pos_is_path ? dmctl_abs(pos[0]) : NULL;
    json_object_object_add(args, pos_key, json_object_new_string(abs ? abs : pos[0]));
    free(abs);
  }
  if (npos > 0 && (strcmp(name, "start-relay") == 0 || strcmp(name, "stop-relay") == 0)) {
    json_object *ws = json_object_new_array();
    for (int k = 0; k < npos; k++)
      json_object_array_add(ws, json_object_new_string(pos[k]));
    json_object_object_add(args, "worker", ws);
  }
  if (strcmp(name, "transfer-source") == 0) {
    json_object_object_add(args, "source", json_object_new_string(pos[0]));
    json_object_object_add(args, "worker", json_object_new_string(pos[1]));
  }
  if (only_masters)
    json_object_object_add(args, "master", json_object_new_boolean(1));
  if (only_workers)
    json_object_object_add(args, "worker", json_object_new_boolean(1));
  if (source)
    json_object_object_add(args, "source", json_object_new_string(source));
  if (file)
    json_object_object_add(args, "file", json_object_new_string(file));
  if (want_unit) {
    char *abs = dmctl_abs(path);
    json_object_object_add(args, "unit", json_object_new_string(unit));
    json_object_object_add(args, "path", json_object_new_string(abs ? abs : path));
    free(abs);
  }
  json_object *req = json_object_new_object();
  json_object_object_add(req, "cmd", json_object_new_string(name));
  json_object_object_add(req, "args", args);
  return req;
}

/* Where the request goes: the control socket, or the HTTP control plane of --master-addr. */
typedef struct dmctl_target {
  const char *socket_path, *state_dir, *master_addr;
  dmh_control_tls tls;
} dmctl_target;

/* Send the request by the target's transport; the answer line in *answer. 0, or -1 with *err. */
static int dmctl_send(const dmctl_target *t, const char *request, int timeout_ms, char **answer,
                      dm_error *err) {
  int tls = dmh_control_tls_given(&t->tls, err);
  if (tls < 0)
    return -1;
  if (t->master_addr) {
    if (t->socket_path || t->state_dir) {
      dm_error_set(err, DM_ERR_CONTROL_REQUEST, NULL,
                   "--master-addr and --socket/--state-dir name two daemons; give one");
      return -1;
    }
    return dmh_control_http_call(t->master_addr, tls ? &t->tls : NULL, request, timeout_ms, answer,
                                 err);
  }
  if (tls) {
    dm_error_set(err, DM_ERR_CONTROL_REQUEST, NULL,
                 "--tls-ca, --tls-cert and --tls-key go with --master-addr HOST:PORT");
    return -1;
  }
  char *sock = NULL;
  if (t->socket_path)
    sock = strdup(t->socket_path);
  else if (t->state_dir && asprintf(&sock, "%s/dmhost.sock", t->state_dir) < 0)
    sock = NULL;
  else if (!t->state_dir && getenv("DMHOST_SOCKET"))
    sock = strdup(getenv("DMHOST_SOCKET"));
  if (!sock) {
    dm_error_set(err, DM_ERR_CONTROL_REQUEST, NULL,
                 "no control socket: give --socket PATH or --state-dir DIR (or set "
                 "DMHOST_SOCKET), or --master-addr HOST:PORT");
    return -1;
  }
  int rc = dmh_control_call(sock, request, timeout_ms, answer, err);
  free(sock);
  return rc;
}

/* Through --master-addr the daemon may run elsewhere: the file a command names goes along as
 * "content" (DM's dmctl sends the content too; dmh_control_file_get). 0, or the exit status. */
#define DMCTL_CONTENT_MAX (512 * 1024) /* twice that, JSON-escaped, still fits a request */
static int dmctl_attach_content(json_object *req) {
  json_object *args = NULL, *cmd = NULL, *op = NULL, *path = NULL;
  json_object_object_get_ex(req, "cmd", &cmd);
  json_object_object_get_ex(req, "args", &args);
  const char *name = cmd ? json_object_get_string(cmd) : "";
  bool sends = strcmp(name, "start-task") == 0 || strcmp(name, "check-task") == 0 ||
               strcmp(name, "update-task") == 0 ||
               (strcmp(name, "operate-source") == 0 && json_object_object_get_ex(args, "op", &op) &&
                strcmp(json_object_get_string(op), "create") == 0);
  if (!sends || !json_object_object_get_ex(args, "path", &path))
    return 0;
  const char *file = json_object_get_string(path);
  size_t len = 0;
  char *text = dmh_state_read_all(file, &len);
  if (!text)
    return dmctl_bad("%s: cannot read %s: %s", name, file, strerror(errno));
  if (len > DMCTL_CONTENT_MAX || strlen(text) != len) {
    free(text);
    return dmctl_bad("%s: %s is %s: a config file sent to the master is text of at most %d KiB",
                     name, file, len > DMCTL_CONTENT_MAX ? "too big" : "not text",
                     DMCTL_CONTENT_MAX / 1024);
  }
  json_object_object_add(args, "content", json_object_new_string_len(text, (int)len));
  free(text);
  return 0;
}

int main(int argc, char **argv) {
  dmctl_target target = {NULL, NULL, NULL, {NULL, NULL, NULL, NULL}};
  long timeout_s = DMCTL_DEFAULT_TIMEOUT_S;
  int i = 1;
  for (; i < argc && argv[i][0] == '-'; i++) {
    /* The flags naming where the daemon is; the TLS ones have no short form. */
    const struct {
      const char *s, *l;
      const char **dst;
    } where[] = {
        {"-S", "--socket", &target.socket_path},        {"-d", "--state-dir", &target.state_dir},
        {"-m", "--master-addr", &target.master_addr},   {"--tls-ca", "--tls-ca", &target.tls.ca},
        {"--tls-cert", "--tls-cert", &target.tls.cert}, {"--tls-key", "--tls-key", &target.tls.key},
    };
    const char *v = NULL;
    int f = 0;
    for (size_t k = 0; k < sizeof where / sizeof where[0] && f == 0; k++)
      if ((f = dmh_cli_flag(argc, argv, &i, where[k].s, where[k].l, &v)) > 0)
        *where[k].dst = v;
    if (f > 0)
      continue;
    if (f == 0 && (f = dmh_cli_flag(argc, argv, &i, "-t", "--timeout", &v)) > 0) {
      /* In milliseconds it must fit an int: a larger value would wrap into a short wait. */
      if (dmh_cli_int(v, 0, INT_MAX / 1000, &timeout_s) < 0)
        return dmctl_bad("--timeout \"%s\" is not a number of seconds in 0..%d (0: no limit)", v,
                         INT_MAX / 1000);
      continue;
    }
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
      return dmctl_help();
    if (f < 0)
      return dmctl_bad("%s needs a value (usage: %s)", argv[i], dmctl_global_usage);
    return dmctl_bad("unknown option %s (usage: %s)", argv[i], dmctl_global_usage);
  }
  if (i >= argc)
    return dmctl_bad("no command given (usage: %s); `dmctl help` lists the commands",
                     dmctl_global_usage);
  if (strcmp(argv[i], "help") == 0)
    return dmctl_help();

  int rc = 1;
  json_object *req = dmctl_request(argc - i, argv + i, &rc);
  if (!req)
    return rc;
  if (target.master_addr && (rc = dmctl_attach_content(req)) != 0) {
    json_object_put(req);
    return rc;
  }
  char *answer = NULL;
  dm_error err;
  int crc = dmctl_send(
      &target,
      json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
      (int)(timeout_s * 1000), &answer, &err);
  json_object_put(req);
  if (crc < 0)
    return dmctl_fail(&err);
  json_object *resp = json_tokener_parse(answer);
  if (!resp || !json_object_is_type(resp, json_type_object)) {
    dm_error_set(&err, DM_ERR_CONTROL, answer, "the daemon's answer is not a JSON object");
    free(answer);
    json_object_put(resp);
    return dmctl_fail(&err);
  }
  free(answer);
  return dmctl_print(resp);
}
