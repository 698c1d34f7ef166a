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
#include <sys/stat.h>
#include <unistd.h>

#include "cli_flag.h"
#include "commands.h"
#include "control_http.h"
#include "control_socket.h"
#include "dmctl_alias.h"
#include "dmctl_cfg_file.h"
#include "dmctl_config.h"
#include "dmctl_export.h"
#include "dmctl_sample.h"
#include "dmctl_verify.h"
#include "dmhost/fs.h"
#include "dmhost/sdk.h"
#include "error_json.h"

#define DMCTL_DEFAULT_TIMEOUT_S 300

static const char *dmctl_global_usage =
    "dmctl [--socket PATH | --state-dir DIR | --master-addr HOST:PORT [" DMH_CLI_TLS_USAGE
    "]] [--timeout SECONDS] [--config DMCTL.toml] [COMMAND [ARGS]] (the long flags may follow "
    "the command; --ssl-ca/--ssl-cert/--ssl-key and --rpc-timeout are DM's names; no command: a "
    "command per line of stdin)";

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

/* The commands of commands.def that dmctl sends, with their usage and summary. */
static int dmctl_help(void) {
  json_object *resp = dmh_control_response_new();
  json_object_object_add(resp, "usage", json_object_new_string(dmctl_global_usage));
  json_object *list = json_object_new_array();
  for (size_t i = 0; i < DMH_CMD_COUNT; i++) {
    const dmh_command *cmd = &dmh_commands[i];
    if (cmd->flags & DMH_CMD_NO_DMCTL)
      continue;
    json_object *c = json_object_new_object();
    json_object_object_add(c, "cmd", json_object_new_string(cmd->name));
    json_object_object_add(c, "usage", json_object_new_string(cmd->usage));
    json_object_object_add(c, "what", json_object_new_string(cmd->summary));
    json_object_array_add(list, c);
  }
  json_object_object_add(resp, "commands", list);
  return dmctl_print(resp);
}

/* Where the request goes: the control socket, or the HTTP control plane of --master-addr. */
typedef struct dmctl_target {
  const char *socket_path, *master_addr;
  dmh_cli_common flags; /* --state-dir, --tls-ca/--tls-cert/--tls-key */
} dmctl_target;

/* Send the request by the target's transport; the answer line in *answer. 0, or -1 with *err. */
static int dmctl_send(const dmctl_target *t, const char *request, int timeout_ms, char **answer,
                      dm_error *err) {
  int tls = dmh_cli_tls_given(&t->flags.tls, err);
  if (tls < 0)
    return -1;
  if (t->master_addr) {
    if (t->socket_path || t->flags.state_dir) {
      dm_error_set(err, DM_ERR_CONTROL_REQUEST, NULL,
                   "--master-addr and --socket/--state-dir name two daemons; give one");
      return -1;
    }
    return dmh_control_http_call(t->master_addr, tls ? &t->flags.tls : NULL, request, timeout_ms,
                                 answer, err);
  }
  if (tls) {
    dm_error_set(err, DM_ERR_CONTROL_REQUEST, NULL,
                 "--tls-ca, --tls-cert and --tls-key go with --master-addr HOST:PORT");
    return -1;
  }
  char *sock = NULL;
  if (t->socket_path)
    sock = strdup(t->socket_path);
  else if (t->flags.state_dir && asprintf(&sock, "%s/dmhost.sock", t->flags.state_dir) < 0)
    sock = NULL;
  else if (!t->flags.state_dir && getenv("DMHOST_SOCKET"))
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
 * "content" (DM's dmctl sends the content too; dmh_control_file_get). binlog-schema's SQL file
 * always does: a daemon never reads it (schema_cmd.c). 0, or the exit status. */
#define DMCTL_CONTENT_MAX (512 * 1024) /* twice that, JSON-escaped, still fits a request */
static int dmctl_attach_content(json_object *req, dm_error *err) {
  json_object *args = NULL, *cmd = NULL, *path = NULL;
  json_object_object_get_ex(req, "cmd", &cmd);
  json_object_object_get_ex(req, "args", &args);
  const char *name = cmd ? json_object_get_string(cmd) : "";
  /* operate-source has a "path" with create only */
  const dmh_command *c = dmh_command_find(name);
  if (!c || !(c->flags & DMH_CMD_SENDS_FILE) || !json_object_object_get_ex(args, "path", &path))
    return 0;
  const char *file = json_object_get_string(path);
  size_t len = 0;
  char *text = dm_fs_read_all(file, &len);
  if (!text) {
    dm_error_set(err, DM_ERR_CONTROL_REQUEST, NULL, "%s: cannot read %s: %s", name, file,
                 strerror(errno));
    return -1;
  }
  if (len > DMCTL_CONTENT_MAX || strlen(text) != len) {
    free(text);
    dm_error_set(err, DM_ERR_CONTROL_REQUEST, NULL,
                 "%s: %s is %s: a config file sent to the master is text of at most %d KiB", name,
                 file, len > DMCTL_CONTENT_MAX ? "too big" : "not text", DMCTL_CONTENT_MAX / 1024);
    return -1;
  }
  json_object_object_add(args, "content", json_object_new_string_len(text, (int)len));
  free(text);
  return 0;
}

/* One run's settings: where the request goes, how long to wait, DM's --config file. */
typedef struct dmctl_run {
  dmctl_target target;
  const char *timeout_v, *config;
  dmctl_file_cfg file; /* --config's values, filling what the command line leaves out */
} dmctl_run;

/* DM's [task-name | task-file]: pause-task, resume-task, stop-task and query-status take a task
 * file in place of the name, which is read from it (a file of that name existing here wins, as in
 * DM). 0, or the exit status. */
static int dmctl_name_from_file(json_object *req, dm_error *err) {
  static const char *const takes[] = {"pause-task", "resume-task", "stop-task", "query-status"};
  json_object *cmd = NULL, *args = NULL, *name = NULL;
  json_object_object_get_ex(req, "cmd", &cmd);
  json_object_object_get_ex(req, "args", &args);
  bool takes_file = false;
  for (size_t i = 0; i < sizeof takes / sizeof takes[0]; i++)
    takes_file |= strcmp(json_object_get_string(cmd), takes[i]) == 0;
  struct stat st;
  if (!takes_file || !json_object_object_get_ex(args, "name", &name) ||
      stat(json_object_get_string(name), &st) < 0 || !S_ISREG(st.st_mode))
    return 0;
  char task[256];
  if (dmctl_task_name_of(json_object_get_string(name), task, sizeof task) < 0) {
    dm_error_set(err, DM_ERR_CONTROL_REQUEST, NULL,
                 "%s: %s is a file without a top-level task name (name: NAME); give the task's "
                 "name",
                 json_object_get_string(cmd), json_object_get_string(name));
    return -1;
  }
  json_object_object_add(args, "name", json_object_new_string(task));
  return 0;
}

/* DM's check-task -e N / -w N (--error/--warn): the answer's checkResult shows at most N failures
 * and N warnings and no passed check (DM's filterResults), applied by dmctl to the answer. The
 * options are taken out of argv (*argc shrinks); cnt[0] errors, [1] warnings, -1 when not given.
 * 0, or -1 with *err. */
static int dmctl_check_counts(int *argc, char **argv, long cnt[2], dm_error *err) {
  cnt[0] = cnt[1] = -1;
  int out = 1;
  for (int i = 1; i < *argc; i++) {
    const char *v = NULL, *flag = argv[i];
    int k = 0, f = dmh_cli_flag(*argc, argv, &i, "-e", "--error", &v);
    if (f == 0 && (f = dmh_cli_flag(*argc, argv, &i, "-w", "--warn", &v)) != 0)
      k = 1;
    if (f < 0 || (f > 0 && dmh_cli_int(v, 0, 1000000, &cnt[k]) < 0)) {
      dm_error_set(err, DM_ERR_CONTROL_REQUEST, NULL,
                   "check-task: %s takes a count of 0 or more (usage: check-task TASK.cfg "
                   "[-e COUNT] [-w COUNT])",
                   flag);
      return -1;
    }
    if (f == 0)
      argv[out++] = argv[i];
  }
  *argc = out;
  return 0;
}

/* A checkResult's result or error entry kept while its kind's count lasts (k: 0 fail, 1 warn). */
static bool dmctl_check_keep(long left[2], const char *state) {
  int k = strcmp(state, "fail") == 0 ? 0 : strcmp(state, "warn") == 0 ? 1 : -1;
  if (k < 0 || left[k] == 0)
    return false;
  left[k]--;
  return true;
}

static void dmctl_check_filter(json_object *resp, const long cnt[2]) {
  json_object *cr = NULL, *results = NULL;
  if (!json_object_object_get_ex(resp, "checkResult", &cr) ||
      !json_object_object_get_ex(cr, "results", &results) ||
      !json_object_is_type(results, json_type_array))
    return;
  long left[2] = {cnt[0] < 0 ? LONG_MAX : cnt[0], cnt[1] < 0 ? LONG_MAX : cnt[1]};
  json_object *kept = json_object_new_array();
  for (size_t i = 0; i < json_object_array_length(results); i++) {
    json_object *r = json_object_array_get_idx(results, i), *v = NULL, *errs = NULL;
    const char *state = json_object_object_get_ex(r, "state", &v) ? json_object_get_string(v) : "";
    if (!json_object_object_get_ex(r, "errors", &errs) || json_object_array_length(errs) == 0) {
      if (dmctl_check_keep(left, state))
        json_object_array_add(kept, json_object_get(r));
      continue;
    }
    json_object *sub = json_object_new_array();
    for (size_t e = 0; e < json_object_array_length(errs); e++) {
      json_object *x = json_object_array_get_idx(errs, e), *sv = NULL;
      if (dmctl_check_keep(left, json_object_object_get_ex(x, "severity", &sv)
                                     ? json_object_get_string(sv)
                                     : ""))
        json_object_array_add(sub, json_object_get(x));
    }
    if (json_object_array_length(sub) == 0 || strcmp(state, "pass") == 0) {
      json_object_put(sub);
      continue;
    }
    json_object *copy = NULL;
    json_object_deep_copy(r, &copy, NULL);
    json_object_object_add(copy, "errors", sub);
    json_object_array_add(kept, copy);
  }
  json_object_object_add(cr, "results", kept);
}

/* DM's dmctl commands dmhost does not serve, each refused here (nothing is sent: encrypt's argument
 * is a password) with what to do instead. */
static const struct {
  const char *name, *instead;
} dmctl_dm_refused[] = {
    {"encrypt", "dmctl does not encrypt: run `dmhost encrypt` on this machine (the secret is "
                "never sent to a daemon)"},
    {"decrypt", "dmctl does not decrypt; `dmhost encrypt` makes the ciphertext"},
};

/* The answer to one command line (argv[0] the command): the daemon's, or one in the same shape
 * saying what went wrong before or on the way. */
static json_object *dmctl_ask(const dmctl_run *g, long timeout_s, int argc, char **argv) {
  dm_error err;
  json_object *req = dmh_command_request(argc, argv, &err);
  if (!req || dmctl_name_from_file(req, &err) < 0 ||
      ((g->target.master_addr || strcmp(argv[0], "binlog-schema") == 0) &&
       dmctl_attach_content(req, &err) < 0)) {
    json_object_put(req);
    json_object *resp = dmh_control_response_new();
    dmh_control_set_error(resp, &err);
    return resp;
  }
  char *answer = NULL;
  int crc = dmctl_send(
      &g->target,
      json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
      (int)(timeout_s * 1000), &answer, &err);
  json_object_put(req);
  json_object *resp = crc < 0 ? NULL : json_tokener_parse(answer);
  if (crc == 0 && (!resp || !json_object_is_type(resp, json_type_object)))
    dm_error_set(&err, DM_ERR_CONTROL, answer, "the daemon's answer is not a JSON object");
  free(answer);
  if (!resp || !json_object_is_type(resp, json_type_object)) {
    json_object_put(resp);
    resp = dmh_control_response_new();
    dmh_control_set_error(resp, &err);
  }
  return resp;
}

/* config export|import's way to ask (dmctl_export.h): dmctl_ask with this run's settings. */
typedef struct dmctl_asking {
  const dmctl_run *g;
  long timeout_s;
} dmctl_asking;

static json_object *dmctl_ask_one(void *ud, int argc, char **argv) {
  const dmctl_asking *a = ud;
  return dmctl_ask(a->g, a->timeout_s, argc, argv);
}

/* Send one command line (argv[0] the command) and print the answer; the exit status. */
static int dmctl_command(const dmctl_run *g, int argc, char **argv) {
  if (strcmp(argv[0], "help") == 0)
    return dmctl_help();
  if (dmctl_sample_wanted(argc, argv))
    return dmctl_sample_print();
  dmctl_alias_line al;
  dm_error aerr;
  int arc = dmctl_alias_translate(argc, argv, &al, &aerr);
  if (arc < 0)
    return dmctl_fail(&aerr);
  if (arc > 0) { /* DM's older name: the new command's line, on the same path */
    int rc = dmctl_command(g, al.argc, al.argv);
    dmctl_alias_line_free(&al);
    return rc;
  }
  for (size_t i = 0; i < sizeof dmctl_dm_refused / sizeof dmctl_dm_refused[0]; i++)
    if (strcmp(argv[0], dmctl_dm_refused[i].name) == 0)
      return dmctl_bad("%s: DM's command, refused: %s", argv[0], dmctl_dm_refused[i].instead);
  /* a verify reads both databases whole: minutes, or hours on a large task; it waits without a
   * limit unless --timeout (or the config file's rpc-timeout) gives one */
  long timeout_s = strcmp(argv[0], "verify") == 0 ? 0 : DMCTL_DEFAULT_TIMEOUT_S;
  /* In milliseconds it must fit an int: a larger value would wrap into a short wait. */
  if (g->timeout_v &&
      (dmctl_duration_s(g->timeout_v, &timeout_s) < 0 || timeout_s > INT_MAX / 1000))
    return dmctl_bad("--timeout \"%s\" is not a number of seconds (or a duration as \"10m\") in "
                     "0..%d (0: no limit)",
                     g->timeout_v, INT_MAX / 1000);
  if (dmctl_export_wanted(argc, argv)) { /* several requests, each with the same settings */
    dmctl_asking a = {g, timeout_s};
    return dmctl_print(dmctl_export_run(argc, argv, dmctl_ask_one, &a));
  }

  /* DM's operate-source create|stop with several files or sources: one request each, their
   * sources[] in one answer */
  bool words_only = true; /* no option among them: "stop -s ID" is one source */
  for (int i = 2; i < argc; i++)
    words_only = words_only && argv[i][0] != '-';
  if (strcmp(argv[0], "operate-source") == 0 && argc > 3 && words_only &&
      (strcmp(argv[1], "create") == 0 || strcmp(argv[1], "stop") == 0)) {
    json_object *all = dmh_control_response_new(), *list = json_object_new_array();
    json_object_object_add(all, "sources", list);
    bool ok = true;
    for (int i = 2; i < argc; i++) {
      char *one[] = {argv[0], argv[1], argv[i]};
      json_object *resp = dmctl_ask(g, timeout_s, 3, one), *v = NULL;
      json_object_object_get_ex(resp, "result", &v);
      if (ok && !json_object_get_boolean(v)) {
        ok = false;
        json_object_object_get_ex(resp, "msg", &v);
        json_object_object_add(all, "result", json_object_new_boolean(0));
        json_object_object_add(all, "msg", json_object_get(v));
      }
      json_object *srcs = NULL;
      if (json_object_object_get_ex(resp, "sources", &srcs) && json_object_array_length(srcs) > 0)
        for (size_t k = 0; k < json_object_array_length(srcs); k++)
          json_object_array_add(list, json_object_get(json_object_array_get_idx(srcs, k)));
      else { /* a refusal before any source: its answer as the entry, naming the word */
        json_object_object_add(resp, "source", json_object_new_string(argv[i]));
        json_object_array_add(list, json_object_get(resp));
      }
      json_object_put(resp);
    }
    return dmctl_print(all);
  }
  /* start-task's option given to check-task: refused, saying where it belongs */
  for (int i = 1; i < argc && strcmp(argv[0], "check-task") == 0; i++) {
    if (strcmp(argv[i], "--remove-meta") == 0)
      return dmctl_bad("check-task --remove-meta: a check removes nothing; give --remove-meta to "
                       "start-task");
  }
  /* DM's update-task -s SOURCE updates those sources' subtasks only: dmhost keeps one task text
   * for all its sources (a master's in etcd, the daemon's in its state), which a part of them
   * would no longer match */
  for (int i = 1; i < argc && strcmp(argv[0], "update-task") == 0; i++) {
    if (strcmp(argv[i], "-s") == 0 || strcmp(argv[i], "--source") == 0 ||
        strncmp(argv[i], "--source=", 9) == 0)
      return dmctl_bad("update-task -s: a task's sources share one task file in dmhost, so an "
                       "update takes them all (each must be paused); to change one source's "
                       "part, give it its own mysql-instances entry settings in the file");
  }
  long cnt[2] = {-1, -1};
  if (strcmp(argv[0], "check-task") == 0) {
    dm_error err;
    if (dmctl_check_counts(&argc, argv, cnt, &err) < 0)
      return dmctl_fail(&err);
  }
  const char *cfg_out = NULL; /* config|get-config -p FILE: written here, never sent */
  dm_error ferr;
  if (dmctl_cfg_file_take(&argc, argv, &cfg_out, &ferr) < 0)
    return dmctl_fail(&ferr);
  if (strcmp(argv[0], "verify") == 0) { /* `dmhost verify`'s exit codes; --fix-sql written here */
    const char *fix = NULL;
    json_object *resp = dmctl_verify_take(&argc, argv, &fix, &ferr) < 0
                            ? NULL
                            : dmctl_ask(g, timeout_s, argc, argv);
    if (!resp) {
      resp = dmh_control_response_new();
      dmh_control_set_error(resp, &ferr);
    }
    int code = dmctl_verify_finish(resp, fix);
    dmctl_print(resp);
    return code;
  }
  json_object *resp = dmctl_ask(g, timeout_s, argc, argv);
  if (cnt[0] >= 0 || cnt[1] >= 0)
    dmctl_check_filter(resp, cnt);
  if (cfg_out)
    dmctl_cfg_file_write(resp, cfg_out);
  return dmctl_print(resp);
}

/* A global flag at argv[*i]: 1 taken, 0 not one, -1 its value missing. After the command word only
 * the long forms are global (DM's cobra takes its persistent flags anywhere), since the commands'
 * own short options reuse the letters: -d DB, -t TABLE, -m of list-member. DM's --ssl-* name the
 * same files as dmhost's --tls-*; DM's --rpc-timeout is --timeout. */
static int dmctl_global_flag(dmctl_run *g, int argc, char **argv, int *i, bool after_cmd) {
  if (after_cmd && strncmp(argv[*i], "--", 2) != 0)
    return 0;
  dmctl_target *t = &g->target;
  int f = dmh_cli_flag(argc, argv, i, "-S", "--socket", &t->socket_path);
  if (f == 0)
    f = dmh_cli_flag(argc, argv, i, "-m", "--master-addr", &t->master_addr);
  if (f == 0)
    f = dmh_cli_common_arg(&t->flags, argc, argv, i);
  if (f == 0)
    f = dmh_cli_flag(argc, argv, i, "--ssl-ca", "--ssl-ca", &t->flags.tls.ca);
  if (f == 0)
    f = dmh_cli_flag(argc, argv, i, "--ssl-cert", "--ssl-cert", &t->flags.tls.cert);
  if (f == 0)
    f = dmh_cli_flag(argc, argv, i, "--ssl-key", "--ssl-key", &t->flags.tls.key);
  if (f == 0)
    f = dmh_cli_flag(argc, argv, i, "--config", "--config", &g->config);
  if (f == 0)
    f = dmh_cli_flag(argc, argv, i, "-t", "--timeout", &g->timeout_v);
  if (f == 0)
    f = dmh_cli_flag(argc, argv, i, "--rpc-timeout", "--rpc-timeout", &g->timeout_v);
  return f;
}

static int dmctl_interactive(const dmctl_run *base);

/* One command line (argv[0..argc), no program name) with the settings `base`: the global flags
 * anywhere, the command and its arguments. No command: the interactive mode when `top`. */
static int dmctl_line(const dmctl_run *base, int argc, char **argv, bool top) {
  dmctl_run g = *base;
  g.file = (dmctl_file_cfg){0};
  /* the command's words, with room for the -s SOURCE given before the command */
  char **cmdv = calloc((size_t)argc * 2 + 1, sizeof *cmdv);
  const char **pre_src = calloc((size_t)argc + 1, sizeof *pre_src);
  int cmdc = 0, npre = 0, rc = 1;
  bool only_words = false; /* after a bare "--" (binlog's SQL) */
  if (!cmdv || !pre_src) {
    rc = dmctl_bad("out of memory");
    goto out;
  }
  for (int i = 0; i < argc; i++) {
    bool seen = cmdc > 0;
    if (seen && strcmp(argv[i], "--") == 0)
      only_words = true;
    if (!only_words && argv[i][0] == '-' && argv[i][1]) {
      int f = dmctl_global_flag(&g, argc, argv, &i, seen);
      const char *v = NULL;
      if (f == 0 && !seen && (f = dmh_cli_flag(argc, argv, &i, "-s", "--source", &v)) > 0)
        pre_src[npre++] = v; /* DM's -s is a flag of every command: given before one too */
      if (f > 0)
        continue;
      if (f < 0) {
        rc = dmctl_bad("%s needs a value (usage: %s)", argv[i], dmctl_global_usage);
        goto out;
      }
      if (!seen && (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)) {
        rc = dmctl_help();
        goto out;
      }
      if (!seen) {
        rc = dmctl_bad("unknown option %s (usage: %s)", argv[i], dmctl_global_usage);
        goto out;
      }
    }
    cmdv[cmdc++] = argv[i];
    if (cmdc == 1) /* the -s given before the command go right after it */
      for (int k = 0; k < npre; k++) {
        cmdv[cmdc++] = "-s";
        cmdv[cmdc++] = (char *)pre_src[k];
      }
  }
  if (g.config && g.config != base->config) {
    dm_error err;
    if (dmctl_config_load(g.config, &g.file, &err) < 0) {
      rc = dmctl_fail(&err);
      goto out;
    }
    dmh_cli_tls *tls = &g.target.flags.tls;
    if (!g.target.master_addr && !g.target.socket_path && !g.target.flags.state_dir)
      g.target.master_addr = g.file.master_addr;
    if (!g.timeout_v)
      g.timeout_v = g.file.rpc_timeout;
    if (!tls->ca && !tls->cert && !tls->key) {
      tls->ca = g.file.ssl_ca;
      tls->cert = g.file.ssl_cert;
      tls->key = g.file.ssl_key;
    }
  }
  /* DM's dmctl reads DM_MASTER_ADDR when nothing names the daemon */
  if (!g.target.master_addr && !g.target.socket_path && !g.target.flags.state_dir &&
      !getenv("DMHOST_SOCKET"))
    g.target.master_addr = getenv("DM_MASTER_ADDR");
  if (cmdc == 0) {
    rc = top ? dmctl_interactive(&g) : 0;
    goto out;
  }
  if (npre > 0 && cmdc == 1 + 2 * npre && strcmp(cmdv[0], "help") != 0 &&
      !dmh_command_find(cmdv[0]) && !dmctl_alias_known(cmdv[0])) {
    rc = dmctl_bad("unknown command \"%s\"; `dmctl help` lists the commands", cmdv[0]);
    goto out;
  }
  rc = dmctl_command(&g, cmdc, cmdv);
out:
  dmctl_file_cfg_free(&g.file);
  free(cmdv);
  free(pre_src);
  return rc;
}

/* DM's interactive mode (dmctl without a command): a command line per line of stdin, `exit` or
 * the end of the input ends it. The prompt only on a terminal, so a script's output is the
 * answers alone. */
static int dmctl_interactive(const dmctl_run *base) {
  bool tty = isatty(STDIN_FILENO);
  char *line = NULL;
  size_t cap = 0;
  for (;;) {
    if (tty) {
      fputs("» ", stdout);
      fflush(stdout);
    }
    if (getline(&line, &cap, stdin) < 0)
      break;
    char **words = NULL;
    int n = dmctl_split_line(line, &words);
    if (n < 0) {
      dmctl_bad("the line has an unclosed quote: %s", line);
      continue;
    }
    bool stop = n == 1 && strcmp(words[0], "exit") == 0;
    if (!stop && n > 0)
      dmctl_line(base, n, words, false);
    fflush(stdout);
    dmctl_words_free(words);
    if (stop)
      break;
  }
  free(line);
  return 0;
}

int main(int argc, char **argv) {
  dmctl_run g = {.target = {.flags = {.groups = DMH_CLI_STATE_DIR | DMH_CLI_TLS, .prog = "dmctl"}}};
  return dmctl_line(&g, argc - 1, argv + 1, true);
}
