/* The YAML reader: a DM mydumper's `extra-args`, dumpling's command-line options, into the dump's
 * settings. DM splits the text at white space and takes one pair of quotes off each word
 * (dm/pkg/dumpling: strings.Fields, then ParseArgLikeBash), then parses the words as dumpling's
 * flags (pflag: `--name value`, `--name=value`, `-n value`, `-n=value`, `-nvalue`); the values it
 * sets override the mydumper's own keys and mydumper-thread. The options that mean something for
 * dmhost's dump are taken; every other one of dumpling's is refused by name, with what to do. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config_yaml_internal.h"
#include "dmhost/settings.h"

/* What an option becomes. */
typedef enum {
  YX_INT,       /* a count: the dump's setting `to` (the dump judges the range) */
  YX_SIZE,      /* bytes, dumpling's size text ("64MiB"): `to` in bytes */
  YX_STRING,    /* a string: `to` */
  YX_NO_LOCKS,  /* DM's old --no-locks: consistency "none" */
  YX_SQL_ONLY,  /* --filetype: only sql */
  YX_TRUE_ONLY, /* --transactional-consistency: only true (DM's default) */
  YX_REFUSED,   /* dumpling's, not dmhost's: `why` */
} yx_kind;

typedef struct yx_opt {
  const char *name; /* long name, without "--" */
  char shorthand;   /* 0: none */
  bool flag;        /* a flag: takes no next word (`--name=value` only) */
  yx_kind kind;
  const char *to;  /* the dump's setting */
  const char *why; /* refused: why, and what to give instead */
} yx_opt;

/* dumpling's options as DM parses them (dm/pkg/dumpling/utils.go, ParseExtraArgs) and dumpling's
 * own that a DM user may have copied from dumpling's command line. */
static const yx_opt yx_opts[] = {
    {"threads", 't', false, YX_INT, "threads", NULL},
    {"rows", 'r', false, YX_INT, "chunk-rows", NULL},
    {"statement-size", 's', false, YX_INT, "statement-size", NULL},
    {"filesize", 'F', false, YX_SIZE, "chunk-filesize", NULL},
    {"consistency", 0, false, YX_STRING, "consistency", NULL},
    {"where", 0, false, YX_STRING, "where", NULL},
    {"no-locks", 0, true, YX_NO_LOCKS, "consistency", NULL},
    {"filetype", 0, false, YX_SQL_ONLY, NULL, NULL},
    {"transactional-consistency", 0, true, YX_TRUE_ONLY, NULL, NULL},
    {"database", 'B', false, YX_REFUSED, NULL,
     "it replaces the task's block-allow-list for the dump only; give the schemas in "
     "block-allow-list"},
    {"tables-list", 'T', false, YX_REFUSED, NULL,
     "it replaces the task's block-allow-list for the dump only; give the tables in "
     "block-allow-list"},
    {"filter", 'f', false, YX_REFUSED, NULL,
     "it replaces the task's block-allow-list for the dump only; give the tables in "
     "block-allow-list"},
    {"snapshot", 0, false, YX_REFUSED, NULL,
     "the dump reads at the position it takes itself; a task that starts at a position is "
     "task-mode incremental with meta"},
    {"no-views", 'W', true, YX_REFUSED, NULL, "the dump always dumps views"},
    {"escape-backslash", 0, true, YX_REFUSED, NULL,
     "the dump writes its own escaping, which the load reads"},
    {"ca", 0, false, YX_REFUSED, NULL, "the dump connects with the source file's `security`"},
    {"cert", 0, false, YX_REFUSED, NULL, "the dump connects with the source file's `security`"},
    {"key", 0, false, YX_REFUSED, NULL, "the dump connects with the source file's `security`"},
    {"compress", 0, false, YX_REFUSED, NULL, "the dump's files are not compressed"},
    {"csv-separator", 0, false, YX_REFUSED, NULL, "the dump writes SQL only"},
    {"csv-delimiter", 0, false, YX_REFUSED, NULL, "the dump writes SQL only"},
    {"no-schemas", 'm', true, YX_REFUSED, NULL, "the load needs the schemas the dump writes"},
    {"no-data", 'd', true, YX_REFUSED, NULL, "give task-mode and block-allow-list instead"},
};

static const yx_opt *yx_find(const char *name, size_t len, char shorthand) {
  for (size_t i = 0; i < sizeof yx_opts / sizeof *yx_opts; i++) {
    const yx_opt *o = &yx_opts[i];
    if (shorthand ? o->shorthand == shorthand
                  : strlen(o->name) == len && strncmp(o->name, name, len) == 0)
      return o;
  }
  return NULL;
}

/* dumpling's size text in bytes: digits and one of B, K, KB, KiB, M, MB, MiB, G, GB, GiB, T, TB,
 * TiB (any case), each a power of 1024: how files are cut changes nothing loaded. Its "B", "iB"
 * off, the rest is the SDK's size text (dm_size_parse). -1: not one. */
static long long yx_size(const char *s) {
  char t[32];
  size_t n = strlen(s);
  if (n == 0 || n >= sizeof t)
    return -1;
  memcpy(t, s, n + 1);
  if (n > 1 && (t[n - 1] == 'b' || t[n - 1] == 'B')) {
    t[--n] = '\0'; /* "KB", "B" */
    if (n > 1 && (t[n - 1] == 'i' || t[n - 1] == 'I') && strchr("kKmMgGtT", t[n - 2]))
      t[--n] = '\0'; /* "KiB" */
    else if (n > 0 && !strchr("0123456789kKmMgGtT", t[n - 1]))
      return -1;
  }
  int64_t v;
  return dm_size_parse(t, &v) == 0 ? (long long)v : -1;
}

/* One option `o` with `val` (NULL for a flag) into `u`; -1 refused (t->c->err). */
static int yx_apply(ytr *t, const yaml_node_t *at, const char *path, const char *word,
                    const yx_opt *o, const char *val, yunit *u) {
  char lit[96];
  int line = yline(at);
  switch (o->kind) {
  case YX_INT: {
    size_t d = strspn(val, "0123456789");
    if (d == 0 || val[d] != '\0' || d > 15)
      return dmh_cfg_fail_line(t->c, DM_ERR_CONFIG_INVALID, line,
                               "`%s` in the %s: dumpling's %s takes a whole number, not \"%s\"",
                               path, t->c->what, word, val);
    long long n = strtoll(val, NULL, 10);
    snprintf(lit, sizeof lit, "%lld%s", n, n > INT32_MAX ? "L" : "");
    break;
  }
  case YX_SIZE: {
    long long n = yx_size(val);
    if (n < 0)
      return dmh_cfg_fail_line(t->c, DM_ERR_CONFIG_INVALID, line,
                               "`%s` in the %s: dumpling's %s takes a size (\"64MiB\", "
                               "\"1048576\"), not \"%s\"",
                               path, t->c->what, word, val);
    if (n == 0)
      return 0; /* dumpling's "no split": dmhost's files stay (as mydumper chunk-filesize 0) */
    snprintf(lit, sizeof lit, "%lld%s", n, n > INT32_MAX ? "L" : "");
    break;
  }
  case YX_STRING: {
    yout s = {0};
    yo_string(&s, val, strlen(val));
    bool fits = !s.b.oom && s.b.len < sizeof lit;
    if (fits)
      snprintf(lit, sizeof lit, "%s", s.b.p);
    dm_buf_free(&s.b);
    if (!fits)
      return dmh_cfg_fail_line(t->c, DM_ERR_CONFIG_INVALID, line,
                               "`%s` in the %s: the value of dumpling's %s is too long", path,
                               t->c->what, word);
    break;
  }
  case YX_NO_LOCKS: /* judged once all are read (yextra_args) */
    return 0;
  case YX_SQL_ONLY:
    if (strcasecmp(val, "sql") != 0)
      return dmh_cfg_fail_line(t->c, DM_ERR_CONFIG_UNKNOWN, line,
                               "`%s` in the %s: dumpling's %s %s is not supported: the dump "
                               "writes SQL only; remove it",
                               path, t->c->what, word, val);
    return 0;
  case YX_TRUE_ONLY:
    if (val && strcasecmp(val, "true") != 0)
      return dmh_cfg_fail_line(t->c, DM_ERR_CONFIG_UNKNOWN, line,
                               "`%s` in the %s: dumpling's %s=%s is not supported: the dump is "
                               "always transactionally consistent; remove it",
                               path, t->c->what, word, val);
    return 0;
  case YX_REFUSED:
    return dmh_cfg_fail_line(t->c, DM_ERR_CONFIG_UNKNOWN, line,
                             "`%s` in the %s: dumpling's option %s is not supported by dmhost: "
                             "%s; remove it (docs/config.md, \"DM's YAML files\")",
                             path, t->c->what, word, o->why);
  }
  /* later ones win, as pflag's; over the mydumper's keys too (yunit_set) */
  yunit_set_extra(u, o->to, lit, line);
  return 0;
}

int yextra_args(ytr *t, const yaml_node_t *k, const yaml_node_t *v, const char *path, yunit *u) {
  if (v->type != YAML_SCALAR_NODE)
    return dmh_cfg_fail_line(t->c, DM_ERR_CONFIG_INVALID, yline(v),
                             "`%s` in the %s must be a string of dumpling's options", path,
                             t->c->what);
  char *text = strdup(ytext(v) ? ytext(v) : "");
  if (!text)
    return dmh_cfg_fail_line(t->c, DM_ERR_NO_MEMORY, yline(k), "no memory for `%s`", path);
  /* the words, a pair of quotes off each, as DM splits them */
  char *words[64];
  int n = 0, rc = 0;
  bool no_locks = false;
  for (char *save = NULL, *w = strtok_r(text, " \t\r\n\f\v", &save); w;
       w = strtok_r(NULL, " \t\r\n\f\v", &save)) {
    if (n == (int)(sizeof words / sizeof *words)) {
      free(text);
      return dmh_cfg_fail_line(t->c, DM_ERR_CONFIG_INVALID, yline(v),
                               "`%s` in the %s has more than %d words", path, t->c->what, n);
    }
    size_t len = strlen(w);
    if (len >= 2 && (w[0] == '"' || w[0] == '\'') && w[len - 1] == w[0]) {
      w[len - 1] = '\0';
      w++;
    }
    words[n++] = w;
  }
  for (int i = 0; i < n && rc == 0; i++) {
    char *w = words[i], *val = NULL, shorthand[3];
    const yx_opt *o = NULL;
    if (w[0] == '-' && w[1] == '-' && w[2]) {
      char *eq = strchr(w + 2, '=');
      o = yx_find(w + 2, eq ? (size_t)(eq - w - 2) : strlen(w + 2), 0);
      if (eq && o) {
        *eq = '\0';
        val = eq + 1;
      }
    } else if (w[0] == '-' && w[1] && w[1] != '-') {
      o = yx_find(NULL, 0, w[1]);
      if (o && w[2])
        val = w[2] == '=' ? w + 3 : w + 2;
      snprintf(shorthand, sizeof shorthand, "-%c", w[1]);
      w = shorthand; /* the option as named in messages */
    } else {
      rc = dmh_cfg_fail_line(t->c, DM_ERR_CONFIG_INVALID, yline(v),
                             "`%s` in the %s: \"%s\" is not one of dumpling's options (DM reads "
                             "extra-args as options only)",
                             path, t->c->what, w);
      break;
    }
    if (!o) {
      rc = dmh_cfg_fail_line(t->c, DM_ERR_CONFIG_UNKNOWN, yline(v),
                             "`%s` in the %s: unknown dumpling option %s (dmhost takes "
                             "--threads, --rows, --statement-size, --filesize, --consistency, "
                             "--where, --no-locks, --filetype sql; docs/config.md, \"DM's YAML "
                             "files\")",
                             path, t->c->what, w);
      break;
    }
    no_locks = no_locks || o->kind == YX_NO_LOCKS;
    if (!val && !o->flag) {
      if (i + 1 >= n) {
        rc = dmh_cfg_fail_line(t->c, DM_ERR_CONFIG_INVALID, yline(v),
                               "`%s` in the %s: dumpling's %s needs a value", path, t->c->what, w);
        break;
      }
      val = words[++i];
    }
    rc = yx_apply(t, v, path, w, o, val, u);
  }
  free(text);
  if (rc == 0 && no_locks) {
    /* DM: --no-locks is --consistency none, refused beside another consistency */
    const char *c = yunit_extra(u, "consistency");
    if (c && strcmp(c, "\"none\"") != 0)
      return dmh_cfg_fail_line(t->c, DM_ERR_CONFIG_INVALID, yline(v),
                               "`%s` in the %s gives both --no-locks and --consistency %s: "
                               "--no-locks is --consistency none (as DM reads it); give one",
                               path, t->c->what, c);
    yunit_set_extra(u, "consistency", "\"none\"", yline(v));
  }
  return rc;
}
