/* The command table's rows and the command line's parser, see commands.h. */
#include "commands.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_flag.h"
#include "dmhost/sdk.h"

const dmh_command dmh_commands[DMH_CMD_COUNT] = {
#define DMH_COMMAND(id, name, flags, usage, daemon_usage, master_usage, summary, args)             \
  [DMH_CMD_##id] = {name, flags, usage, daemon_usage, master_usage, summary, args},
#include "commands.def"
};

static const dmh_cmd_option cmd_options[] = {
#define DMH_OPTION(arg, short_name, long_name, not_taken, missing)                                 \
  {arg, short_name, long_name, not_taken, missing},
#include "commands.def"
};
#define CMD_N_OPTIONS (sizeof cmd_options / sizeof cmd_options[0])
#define CMD_MAX_OPTIONS 20 /* a command line's room for them (cmd_line) */
_Static_assert(CMD_N_OPTIONS <= CMD_MAX_OPTIONS, "cmd_line holds CMD_MAX_OPTIONS options");

const dmh_cmd_option *dmh_cmd_options(size_t *n) {
  *n = CMD_N_OPTIONS;
  return cmd_options;
}

const dmh_command *dmh_command_find(const char *name) {
  for (size_t i = 0; name && i < DMH_CMD_COUNT; i++)
    if (strcmp(dmh_commands[i].name, name) == 0)
      return &dmh_commands[i];
  return NULL;
}

void dmh_command_names(unsigned flags, const char **out) {
  size_t n = 0;
  for (size_t i = 0; i < DMH_CMD_COUNT; i++)
    if ((dmh_commands[i].flags & flags) == flags)
      out[n++] = dmh_commands[i].name;
  out[n] = NULL;
}

void dmh_command_list(unsigned flags, unsigned without, char *buf, size_t len) {
  size_t n = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < DMH_CMD_COUNT && n < len; i++)
    if ((dmh_commands[i].flags & flags) == flags && !(dmh_commands[i].flags & without))
      n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "", dmh_commands[i].name);
}

/* ---- the command line ---- */

static int cmd_bad(dm_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int cmd_bad(dm_error *err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  dm_error_vset(err, DM_ERR_CONTROL_REQUEST, NULL, fmt, ap);
  va_end(ap);
  return -1;
}

/* The daemon runs elsewhere: a relative path must be made absolute here, where it means something.
 * The file need not exist (the daemon reports a missing one with the config's own error). */
static char *cmd_abs(const char *path) {
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

static void cmd_add_string(json_object *args, const char *key, const char *v, bool path) {
  char *abs = path ? cmd_abs(v) : NULL;
  json_object_object_add(args, key, json_object_new_string(abs ? abs : v));
  free(abs);
}

/* The argument `name` of the command's row, or NULL. */
static const dmh_cmd_arg *cmd_arg(const dmh_command *cmd, const char *name) {
  for (int i = 0; i < DMH_CMD_MAX_ARGS && cmd->args[i].name; i++)
    if (strcmp(cmd->args[i].name, name) == 0)
      return &cmd->args[i];
  return NULL;
}

/* The DMH_ARG_BOOL argument spelled `word` ("-w") by the command's row, or NULL. */
static const dmh_cmd_arg *cmd_short(const dmh_command *cmd, const char *word) {
  for (int i = 0; i < DMH_CMD_MAX_ARGS && cmd->args[i].name; i++)
    if (cmd->args[i].short_name && (cmd->args[i].flags & DMH_ARG_BOOL) &&
        strcmp(cmd->args[i].short_name, word) == 0)
      return &cmd->args[i];
  return NULL;
}

/* What a command line gave: the positional words and each option's value. */
typedef struct cmd_line {
  const char *pos[DMH_CMD_MAX_POS];
  int npos;
  const char *opt[CMD_MAX_OPTIONS]; /* by cmd_options' index */
  bool taken[CMD_MAX_OPTIONS];      /* the command takes the option */
  bool required[CMD_MAX_OPTIONS];   /* ... and needs it */
} cmd_line;

/* operate-source's words depend on its first: create and update take the file, show, stop,
 * enable and disable the source (DM also takes the source-id positionally); all but show need it.
 * Returns the op, or NULL with *err. */
static const char *cmd_operate_source(const dmh_command *cmd, cmd_line *l, dm_error *err) {
  const char *op = l->npos > 0 ? l->pos[0] : "";
  bool create = strcmp(op, "create") == 0 || strcmp(op, "update") == 0,
       show = strcmp(op, "show") == 0,
       stop = strcmp(op, "stop") == 0 || strcmp(op, "enable") == 0 || strcmp(op, "disable") == 0;
  if (!create && !show && !stop) {
    cmd_bad(err,
            "operate-source: \"%s\" is not create, update, show, stop, enable or disable (usage: "
            "%s)",
            op, cmd->usage);
    return NULL;
  }
  for (int k = 1; k < l->npos; k++) /* the op is not one of the positionals */
    l->pos[k - 1] = l->pos[k];
  l->npos--;
  for (size_t o = 0; o < CMD_N_OPTIONS; o++) {
    if (strcmp(cmd_options[o].arg, "source") != 0)
      continue;
    if (!create && l->npos == 1 && !l->opt[o]) {
      l->opt[o] = l->pos[0];
      l->npos = 0;
    }
    l->taken[o] = !create;
    l->required[o] = stop;
  }
  return op;
}

/* A repeatable option's value "a[,b...]" appended to *list (made on the first); -1 on an empty
 * name. */
static int cmd_list_add(json_object **list, const char *v) {
  if (!*list)
    *list = json_object_new_array();
  for (const char *p = v;;) {
    size_t n = strcspn(p, ",");
    if (n == 0)
      return -1;
    json_object_array_add(*list, json_object_new_string_len(p, (int)n));
    if (!p[n])
      return 0;
    p += n + 1;
  }
}

json_object *dmh_command_request(int argc, char **argv, dm_error *err) {
  const dmh_command *cmd = dmh_command_find(argv[0]);
  if (cmd && (cmd->flags & DMH_CMD_NO_DMCTL))
    cmd = NULL;
  if (!cmd) {
    char list[512];
    dmh_command_list(0, DMH_CMD_NO_DMCTL, list, sizeof list);
    cmd_bad(err, "unknown command \"%s\"; the commands are %s", argv[0], list);
    return NULL;
  }
  json_object *args = NULL;
  if (cmd == &dmh_commands[DMH_CMD_BINLOG]) {
    /* SQL arguments may be many and look like anything: the command parses its own line */
    if (!(args = dmh_binlog_args_from_argv(argc - 1, argv + 1, err)))
      return NULL;
    goto done;
  }
  cmd_line l = {.npos = 0};
  for (size_t o = 0; o < CMD_N_OPTIONS; o++) {
    const dmh_cmd_arg *a = cmd_arg(cmd, cmd_options[o].arg);
    l.taken[o] = a && (a->flags & DMH_ARG_OPT);
    l.required[o] = l.taken[o] && (a->flags & DMH_ARG_REQ);
  }
  args = json_object_new_object();
  json_object *lists[CMD_MAX_OPTIONS] = {0}; /* a DMH_ARG_LIST option's values, in order */
  for (int i = 1; i < argc; i++) {
    const dmh_cmd_arg *b = argv[i][0] == '-' && argv[i][1] == '-' ? cmd_arg(cmd, argv[i] + 2)
                                                                  : cmd_short(cmd, argv[i]);
    if (b && (b->flags & DMH_ARG_BOOL)) {
      json_object_object_add(args, b->name, json_object_new_boolean(1));
      continue;
    }
    int f = 0;
    size_t o = 0;
    for (; o < CMD_N_OPTIONS && f == 0; o++)
      f = dmh_cli_flag(argc, argv, &i, cmd_options[o].short_name, cmd_options[o].long_name,
                       &l.opt[o]);
    if (f < 0) {
      cmd_bad(err, "%s: %s needs a value (usage: %s)", cmd->name, argv[i], cmd->usage);
      goto fail;
    }
    if (f > 0 && l.taken[o - 1] && (cmd_arg(cmd, cmd_options[o - 1].arg)->flags & DMH_ARG_LIST) &&
        cmd_list_add(&lists[o - 1], l.opt[o - 1]) < 0) {
      cmd_bad(err, "%s: %s: an empty name in \"%s\" (usage: %s)", cmd->name,
              cmd_options[o - 1].short_name, l.opt[o - 1], cmd->usage);
      goto fail;
    }
    if (f > 0)
      continue;
    if (argv[i][0] == '-' && argv[i][1] != '\0') {
      cmd_bad(err, "%s: unknown option %s (usage: %s)", cmd->name, argv[i], cmd->usage);
      goto fail;
    }
    if (l.npos == DMH_CMD_MAX_POS) {
      cmd_bad(err, "%s: too many arguments (usage: %s)", cmd->name, cmd->usage);
      goto fail;
    }
    l.pos[l.npos++] = argv[i];
  }
  /* How many positional words the row takes; operate-source's first word says which. */
  const char *op = NULL;
  if (cmd == &dmh_commands[DMH_CMD_OPERATE_SOURCE]) {
    if (!(op = cmd_operate_source(cmd, &l, err)))
      goto fail;
    json_object_object_add(args, "op", json_object_new_string(op));
  }
  int min_pos = 0, max_pos = 0;
  for (int i = 0; i < DMH_CMD_MAX_ARGS && cmd->args[i].name; i++) {
    unsigned fl = cmd->args[i].flags;
    if (op && strcmp(cmd->args[i].name, "op") == 0)
      continue;
    if (op) /* the file: create's (and update's) one word */
      fl = (strcmp(op, "create") == 0 || strcmp(op, "update") == 0) && (fl & DMH_ARG_POS)
               ? fl | DMH_ARG_REQ
               : 0;
    if (fl & DMH_ARG_REST)
      max_pos = DMH_CMD_MAX_POS;
    else if (fl & DMH_ARG_POS) {
      max_pos++;
      min_pos += (fl & DMH_ARG_REQ) ? 1 : 0;
    }
  }
  const char *problem = NULL;
  if (l.npos < min_pos)
    problem = "missing argument";
  else if (l.npos > max_pos)
    problem = "too many arguments";
  for (size_t o = 0; o < CMD_N_OPTIONS && !problem; o++)
    if (l.opt[o] && !l.taken[o])
      problem = cmd_options[o].not_taken;
    else if (l.required[o] && !l.opt[o])
      problem = cmd_options[o].missing;
  if (problem) {
    cmd_bad(err, "%s: %s (usage: %s)", cmd->name, problem, cmd->usage);
    goto fail;
  }
  /* The words, in the row's order; then the options. */
  int next = 0;
  for (int i = 0; i < DMH_CMD_MAX_ARGS && cmd->args[i].name && next < l.npos; i++) {
    const dmh_cmd_arg *a = &cmd->args[i];
    if (a->flags & DMH_ARG_REST) {
      json_object *ws = json_object_new_array();
      for (; next < l.npos; next++)
        json_object_array_add(ws, json_object_new_string(l.pos[next]));
      json_object_object_add(args, a->name, ws);
    } else if ((a->flags & DMH_ARG_POS) && !(op && strcmp(a->name, "op") == 0))
      cmd_add_string(args, a->name, l.pos[next++], a->flags & DMH_ARG_PATH);
  }
  for (size_t o = 0; o < CMD_N_OPTIONS; o++)
    if (lists[o]) {
      json_object_object_add(args, cmd_options[o].arg, lists[o]);
      lists[o] = NULL;
    } else if (l.opt[o]) {
      const dmh_cmd_arg *a = cmd_arg(cmd, cmd_options[o].arg);
      cmd_add_string(args, a->name, l.opt[o], a->flags & DMH_ARG_PATH);
    }
done:;
  json_object *req = json_object_new_object();
  json_object_object_add(req, "cmd", json_object_new_string(cmd->name));
  json_object_object_add(req, "args", args);
  return req;
fail:
  for (size_t o = 0; o < CMD_N_OPTIONS && cmd != &dmh_commands[DMH_CMD_BINLOG]; o++)
    json_object_put(lists[o]);
  json_object_put(args);
  return NULL;
}

json_object *dmh_binlog_args_from_argv(int argc, char **argv, dm_error *err) {
  if (argc < 1) {
    cmd_bad(err, "binlog: what to do is missing (usage: %s)", DMH_BINLOG_USAGE);
    return NULL;
  }
  const char *task = NULL, *source = NULL, *pos = NULL;
  json_object *sqls = json_object_new_array();
  bool only_sql = false; /* after "--" every argument is SQL, even one starting with '-' */
  for (int i = 1; i < argc; i++) {
    int f = 0;
    if (!only_sql && strcmp(argv[i], "--") == 0) {
      only_sql = true;
      continue;
    }
    if (!only_sql && (f = dmh_cli_flag(argc, argv, &i, "-s", "--source", &source)) == 0)
      f = dmh_cli_flag(argc, argv, &i, "-b", "--binlog-pos", &pos);
    if (f < 0 || (f == 0 && !only_sql && argv[i][0] == '-' && argv[i][1])) {
      cmd_bad(err, "binlog %s: %s %s (usage: %s; put SQL starting with '-' after --)", argv[0],
              argv[i], f < 0 ? "needs a value" : "is not an option", DMH_BINLOG_USAGE);
      json_object_put(sqls);
      return NULL;
    }
    if (f > 0)
      continue;
    if (!task)
      task = argv[i];
    else
      json_object_array_add(sqls, json_object_new_string(argv[i]));
  }
  if (!task) {
    cmd_bad(err, "binlog %s: the task name is missing (usage: %s)", argv[0], DMH_BINLOG_USAGE);
    json_object_put(sqls);
    return NULL;
  }
  json_object *args = json_object_new_object();
  json_object_object_add(args, "op", json_object_new_string(argv[0]));
  json_object_object_add(args, "name", json_object_new_string(task));
  if (source)
    json_object_object_add(args, "source", json_object_new_string(source));
  if (pos)
    json_object_object_add(args, "binlogPos", json_object_new_string(pos));
  if (json_object_array_length(sqls) > 0)
    json_object_object_add(args, "sqls", sqls);
  else
    json_object_put(sqls);
  return args;
}
