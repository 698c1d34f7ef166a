/* DM's older dmctl command names, translated. See dmctl_alias.h.
 *
 * One table: a row per older command, read from DM's dm/ctl/master/{handle_error,operate_schema,
 * show_ddl_locks,unlock_ddl_lock}.go (their Use lines, flags and checks). A row says which of DM's
 * positional words is the operation and what each operation is called here, how many words DM
 * takes, what each of DM's flags becomes, and the new line as a template of words:
 *   "$op"    the operation's name here       "$1"     DM's first word but the operation (the
 *   "$opts"  the flags kept or renamed                task or lock id; a task file gives its name)
 *   "$rest"  DM's words after "$1"           "$d"/"$t" the value of a flag made a word (AL_WORD)
 * and any other word as it is. */
#include "dmctl_alias.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_flag.h"
#include "dmctl_config.h"
#include "dmhost/sdk.h"

typedef enum alias_how {
  AL_KEEP,   /* given on as it is (a value flag: its long name and value) */
  AL_RENAME, /* given on as `to` (same value, if any) */
  AL_WORD,   /* its value becomes the template's word `to` ("$d") */
  AL_DROP,   /* DM takes it to no effect here (or for this operation): left out */
  AL_REFUSE, /* it means something dmhost does not do: refused naming it, `to` saying why */
} alias_how;

typedef struct alias_flag {
  const char *shrt,
      *lng;   /* DM's spellings (shrt NULL: none); a bool's "--x=false" is its own row */
  bool value; /* it takes a value */
  alias_how how;
  const char *to;
  const char *only_op; /* kept only with this DM operation, dropped with the others (DM ignores it
                          there); NULL: every operation */
  bool required;       /* DM refuses the line without it */
} alias_flag;

typedef struct dmctl_alias {
  const char *name, *dm_usage;
  int op_at;                /* which positional word is the operation; -1 none */
  const char *ops[4][2];    /* DM's operation, its name here */
  int min_words, max_words; /* DM's positional words, the operation's included; max -1: any */
  bool task_file;           /* "$1" is DM's <task-name | task-file> */
  const char *out[8];       /* the new line's template, NULL-ended */
  alias_flag flags[8];      /* NULL-ended */
} dmctl_alias;

#define AL_MAX_FLAGS 8

static const dmctl_alias aliases[] = {
    /* handle-error <task-name | task-file> [-s source ...] [-b binlog-pos] <skip/replace/revert>
     * [replace-sql1;replace-sql2;] */
    {"handle-error",
     "handle-error TASK [-s SOURCE] [-b FILE:POS] skip|replace|revert [SQL...]",
     1,
     {{"skip", "skip"}, {"replace", "replace"}, {"revert", "revert"}},
     2,
     -1,
     true,
     {"binlog", "$op", "$1", "$opts", "--", "$rest"},
     {{"-s", "--source", true, AL_KEEP, NULL, NULL, false},
      {"-b", "--binlog-pos", true, AL_KEEP, NULL, NULL, false}}},
    /* operate-schema <operate-type> <-s source ...> <task-name | task-file> <-d database>
     * <-t table> [schema-file] [--flush] [--sync]; --flush and --sync default true */
    {"operate-schema",
     "operate-schema get|set|remove -s SOURCE TASK -d DB -t TABLE [SCHEMA.sql] [--flush] [--sync]",
     0,
     {{"get", "list"}, {"set", "update"}, {"remove", "delete"}},
     2,
     3,
     true,
     {"binlog-schema", "$op", "$opts", "$1", "$d", "$t", "$rest"},
     {{"-s", "--source", true, AL_KEEP, NULL, NULL, false},
      {"-d", "--database", true, AL_WORD, "$d", NULL, true},
      {"-t", "--table", true, AL_WORD, "$t", NULL, true},
      {NULL, "--flush=false", false, AL_REFUSE,
       "the schema tracker's table is written at once (docs/control.md, the schema tracker)", NULL,
       false},
      {NULL, "--flush", false, AL_KEEP, NULL, "set", false},
      /* --sync has no effect here (docs/control.md): false is the same line */
      {NULL, "--sync=false", false, AL_DROP, NULL, NULL, false},
      {NULL, "--sync", false, AL_KEEP, NULL, "set", false}}},
    /* show-ddl-locks [-s source ...] [task-name | task-file] */
    {"show-ddl-locks",
     "show-ddl-locks [TASK]",
     -1,
     {{NULL, NULL}},
     0,
     1,
     true,
     {"shard-ddl-lock", "$1"},
     {{"-s", "--source", true, AL_REFUSE,
       "shard-ddl-lock shows the locks of every source of the task; no list per source", NULL,
       false}}},
    /* unlock-ddl-lock <lock-ID> [-o owner] [-f|--force-remove] [-a skip|exec] [-s source]
     * [-d database] [-t table] */
    {"unlock-ddl-lock",
     "unlock-ddl-lock LOCK_ID [-o SOURCE] [--force-remove] [-a skip|exec -s SOURCE -d DB -t TABLE]",
     -1,
     {{NULL, NULL}},
     1,
     1,
     false,
     {"shard-ddl-lock", "unlock", "$1", "$opts"},
     {{"-o", "--owner", true, AL_KEEP, NULL, NULL, false},
      {NULL, "--force-remove=false", false, AL_DROP, NULL, NULL, false},
      {"-f", "--force-remove", false, AL_RENAME, "--force-remove", NULL, false},
      {"-a", "--action", true, AL_KEEP, NULL, NULL, false},
      {"-s", "--source", true, AL_KEEP, NULL, NULL, false},
      {"-d", "--database", true, AL_KEEP, NULL, NULL, false},
      {"-t", "--table", true, AL_KEEP, NULL, NULL, false}}},
};
#define N_ALIASES (sizeof aliases / sizeof aliases[0])

static const dmctl_alias *alias_find(const char *name) {
  for (size_t i = 0; name && i < N_ALIASES; i++)
    if (strcmp(aliases[i].name, name) == 0)
      return &aliases[i];
  return NULL;
}

bool dmctl_alias_known(const char *name) {
  return alias_find(name) != NULL;
}

static int alias_bad(dm_error *err, const dmctl_alias *a, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int alias_bad(dm_error *err, const dmctl_alias *a, const char *fmt, ...) {
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  dm_error_set(err, DM_ERR_CONTROL_REQUEST, NULL, "%s: %s (DM's usage: %s)", a->name, what,
               a->dm_usage);
  return -1;
}

/* The flag row matching argv[*i]: its index, *val its value (a value flag; *i moved past it), or
 * -1 (no row), -2 (its value missing). A bool row matches its spelling and "SPELLING=true". */
static int alias_flag_at(const dmctl_alias *a, int argc, char **argv, int *i, const char **val) {
  for (int k = 0; k < AL_MAX_FLAGS && a->flags[k].lng; k++) {
    const alias_flag *f = &a->flags[k];
    if (f->value) {
      int r = dmh_cli_flag(argc, argv, i, f->shrt ? f->shrt : f->lng, f->lng, val);
      if (r != 0)
        return r < 0 ? -2 : k;
      continue;
    }
    for (int s = 0; s < 2; s++) {
      const char *sp = s ? f->lng : f->shrt;
      size_t n = sp ? strlen(sp) : 0;
      if (sp && strncmp(argv[*i], sp, n) == 0 &&
          (argv[*i][n] == '\0' || strcmp(argv[*i] + n, "=true") == 0)) {
        *val = NULL;
        return k;
      }
    }
  }
  return -1;
}

/* What one DM line holds, parsed by its row. */
typedef struct alias_parsed {
  const char *words[8];
  int nwords;
  const char *given[AL_MAX_FLAGS]; /* a value flag's value, a bool's spelling; NULL: not given */
} alias_parsed;

static int alias_parse(const dmctl_alias *a, int argc, char **argv, alias_parsed *p,
                       dm_error *err) {
  bool only_words = false;
  for (int i = 1; i < argc; i++) {
    if (!only_words && strcmp(argv[i], "--") == 0) {
      only_words = true;
      continue;
    }
    if (!only_words && argv[i][0] == '-' && argv[i][1]) {
      const char *v = NULL;
      const char *flag = argv[i];
      int k = alias_flag_at(a, argc, argv, &i, &v);
      if (k == -2)
        return alias_bad(err, a, "%s needs a value", flag);
      if (k < 0)
        return alias_bad(err, a, "%s is not an option of DM's %s", flag, a->name);
      if (a->flags[k].how == AL_REFUSE)
        return alias_bad(err, a, "DM's %s is refused: %s", flag, a->flags[k].to);
      if (p->given[k]) /* the new command takes one: a second would be lost */
        return alias_bad(err, a, "%s is given twice (give one, or \"a,b\" where DM lists)", flag);
      p->given[k] = v ? v : flag;
      continue;
    }
    if (p->nwords == (int)(sizeof p->words / sizeof p->words[0]))
      return alias_bad(err, a, "too many arguments");
    p->words[p->nwords++] = argv[i];
  }
  if (p->nwords < a->min_words || (a->max_words >= 0 && p->nwords > a->max_words))
    return alias_bad(err, a, "%s",
                     p->nwords < a->min_words ? "missing argument" : "too many arguments");
  for (int k = 0; k < AL_MAX_FLAGS && a->flags[k].lng; k++)
    if (a->flags[k].required && !p->given[k])
      return alias_bad(err, a, "%s/%s is required", a->flags[k].shrt, a->flags[k].lng);
  return 0;
}

/* DM's <task-name | task-file>: a file of that name here gives the name it holds (as
 * dmctl_main.c's name_from_file). 0, or -1 with *err. */
static int alias_task_name(const dmctl_alias *a, const char **word, dmctl_alias_line *out,
                           dm_error *err) {
  struct stat st;
  if (!a->task_file || stat(*word, &st) < 0 || !S_ISREG(st.st_mode))
    return 0;
  if (dmctl_task_name_of(*word, out->task, sizeof out->task) < 0)
    return alias_bad(err, a,
                     "%s is a file without a top-level task name (name: NAME); give the task's "
                     "name",
                     *word);
  *word = out->task;
  return 0;
}

static void alias_push(dmctl_alias_line *out, const char *w) {
  out->argv[out->argc++] = (char *)w;
}

int dmctl_alias_translate(int argc, char **argv, dmctl_alias_line *out, dm_error *err) {
  const dmctl_alias *a = alias_find(argv[0]);
  if (!a)
    return 0;
  alias_parsed p = {.nwords = 0};
  if (alias_parse(a, argc, argv, &p, err) < 0)
    return -1;
  const char *op = NULL, *dm_op = a->op_at >= 0 ? p.words[a->op_at] : NULL;
  for (int k = 0; dm_op && k < 4 && a->ops[k][0]; k++)
    if (strcmp(a->ops[k][0], dm_op) == 0)
      op = a->ops[k][1];
  if (dm_op && !op) {
    char list[128] = "";
    for (int k = 0; k < 4 && a->ops[k][0]; k++)
      snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", k ? ", " : "",
               a->ops[k][0]);
    return alias_bad(err, a, "invalid operation \"%s\": use %s", dm_op, list);
  }
  /* the words but the operation: "$1" and "$rest" */
  const char *rest[8];
  int nrest = 0;
  for (int w = 0; w < p.nwords; w++)
    if (w != a->op_at)
      rest[nrest++] = p.words[w];
  *out = (dmctl_alias_line){.argc = 0};
  /* at most: every template word, 2 words a flag, DM's words */
  out->argv = calloc(8 + 2 * AL_MAX_FLAGS + (size_t)argc + 1, sizeof *out->argv);
  if (!out->argv) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "%s: out of memory", a->name);
    return -1;
  }
  for (int t = 0; t < 8 && a->out[t]; t++) {
    const char *w = a->out[t];
    if (strcmp(w, "$op") == 0)
      alias_push(out, op);
    else if (strcmp(w, "$1") == 0 && nrest > 0) {
      const char *first = rest[0];
      if (alias_task_name(a, &first, out, err) < 0) {
        dmctl_alias_line_free(out);
        return -1;
      }
      alias_push(out, first);
    } else if (strcmp(w, "$rest") == 0)
      for (int r = 1; r < nrest; r++)
        alias_push(out, rest[r]);
    else if (strcmp(w, "$opts") == 0)
      for (int k = 0; k < AL_MAX_FLAGS && a->flags[k].lng; k++) {
        const alias_flag *f = &a->flags[k];
        bool kept = f->how == AL_KEEP || f->how == AL_RENAME;
        if (!p.given[k] || !kept || (f->only_op && strcmp(f->only_op, dm_op) != 0))
          continue;
        alias_push(out, f->how == AL_RENAME ? f->to : f->lng);
        if (f->value)
          alias_push(out, p.given[k]);
      }
    else if (w[0] == '$') { /* a flag made a word, or "$1" of a line without one */
      for (int k = 0; k < AL_MAX_FLAGS && a->flags[k].lng; k++)
        if (a->flags[k].how == AL_WORD && strcmp(a->flags[k].to, w) == 0 && p.given[k])
          alias_push(out, p.given[k]);
    } else
      alias_push(out, w);
  }
  out->argv[out->argc] = NULL;
  return 1;
}

void dmctl_alias_line_free(dmctl_alias_line *l) {
  free(l->argv);
  l->argv = NULL;
  l->argc = 0;
}
