/*
 * DM's YAML files into libconfig text (config_yaml.h). libyaml (Debian's libyaml-dev, a parser
 * that is maintained and fuzzed, rather than one of our own) builds the document; this file walks
 * it and writes the libconfig text the existing loader reads, so every check, default and message
 * stays the loader's. libconfig ignores newlines, so each setting is written on the line of its
 * YAML key: `task.yaml:12: unknown setting ...` then names the YAML line. What cannot keep its
 * line (a setting written after a later one, the unit sections gathered from mydumpers, loaders
 * and syncers) goes on the current line.
 */
#include "config_yaml.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "dmhost/sdk.h"

/* ---- the text written ---- */

typedef struct yout {
  char *buf;
  size_t len, cap;
  int line; /* the line being written, from 1 */
  bool oom;
  bool big; /* beyond YAML_OUT_MAX: aliases expanded into too much text */
} yout;

/* More output than this is an alias bomb (a few lines of anchors that expand a billion times). */
#define YAML_OUT_MAX (4 * DMH_CFG_TEXT_MAX)

static void yo_put(yout *o, const char *s, size_t n) {
  if (o->oom || o->big)
    return;
  if (o->len + n > YAML_OUT_MAX) {
    o->big = true;
    return;
  }
  if (o->len + n + 1 > o->cap) {
    size_t cap = o->cap ? o->cap : 4096;
    while (cap < o->len + n + 1)
      cap *= 2;
    char *b = realloc(o->buf, cap);
    if (!b) {
      o->oom = true;
      return;
    }
    o->buf = b;
    o->cap = cap;
  }
  memcpy(o->buf + o->len, s, n);
  o->len += n;
  o->buf[o->len] = '\0';
}

static void yo_puts(yout *o, const char *s) {
  yo_put(o, s, strlen(s));
}

static void yo_fmt(yout *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void yo_fmt(yout *o, const char *fmt, ...) {
  char b[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(b, sizeof b, fmt, ap);
  va_end(ap);
  if (n > 0)
    yo_put(o, b, (size_t)n < sizeof b ? (size_t)n : sizeof b - 1);
}

/* Go on to `line` (never back: a line already passed keeps what follows on the current one). */
static void yo_at(yout *o, int line) {
  if (o->line >= line) {
    yo_put(o, " ", 1);
    return;
  }
  while (o->line < line) {
    yo_put(o, "\n", 1);
    o->line++;
  }
}

/* A libconfig string literal: C escapes, a control byte as \xNN, so a multi-line YAML string
 * stays on its line. */
static void yo_string(yout *o, const char *s, size_t n) {
  yo_put(o, "\"", 1);
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (ch == '"' || ch == '\\') {
      char e[2] = {'\\', (char)ch};
      yo_put(o, e, 2);
    } else if (ch == '\n')
      yo_put(o, "\\n", 2);
    else if (ch == '\t')
      yo_put(o, "\\t", 2);
    else if (ch < 0x20 || ch == 0x7f)
      yo_fmt(o, "\\x%02x", ch);
    else
      yo_put(o, (const char *)&ch, 1);
  }
  yo_put(o, "\"", 1);
}

/* ---- the YAML document ---- */

/* A translation: the document, the text, what is being read. */
typedef struct ytr {
  dmh_cfg_ctx *c;
  yaml_document_t doc;
  yaml_node_t *root;
  yout o;
  bool task;
  int depth;
} ytr;

/* Deeper than this is an alias loop or not a config. */
#define YAML_DEPTH_MAX 32

static int yline(const yaml_node_t *n) {
  return (int)n->start_mark.line + 1;
}

static const char *ytext(const yaml_node_t *n) {
  return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static yaml_node_t *ynode(ytr *t, int id) {
  return yaml_document_get_node(&t->doc, id);
}

typedef enum ykind { YS_NULL, YS_BOOL, YS_INT, YS_FLOAT, YS_STR } ykind;

/* What a scalar is, as DM's YAML library (go-yaml, YAML 1.1) reads it: a plain `true`, `on`, `123`
 * is a bool or int; a quoted one is a string. (libyaml's document API gives every scalar without a
 * tag the str tag, so an explicit `!!str 1` cannot be told apart: it reads as 1.) */
static ykind yscalar(const yaml_node_t *n, bool *b, long long *iv) {
  const char *s = (const char *)n->data.scalar.value;
  if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE &&
      n->data.scalar.style != YAML_ANY_SCALAR_STYLE)
    return YS_STR;
  static const char *const nulls[] = {"", "~", "null", "Null", "NULL"};
  for (size_t i = 0; i < sizeof nulls / sizeof *nulls; i++)
    if (strcmp(s, nulls[i]) == 0)
      return YS_NULL;
  static const char *const yes[] = {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"};
  static const char *const no[] = {"false", "False", "FALSE", "no", "No",
                                   "NO",    "off",   "Off",   "OFF"};
  for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) {
    if (strcmp(s, yes[i]) == 0 || strcmp(s, no[i]) == 0) {
      if (b)
        *b = strcmp(s, yes[i]) == 0;
      return YS_BOOL;
    }
  }
  const char *d = s + (*s == '-' || *s == '+');
  if (*d >= '0' && *d <= '9') {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 0);
    if (*end == '\0' && errno == 0) {
      if (iv)
        *iv = v;
      return YS_INT;
    }
    errno = 0;
    (void)strtod(s, &end);
    if (*end == '\0' && errno == 0)
      return YS_FLOAT;
  }
  return YS_STR;
}

static bool ynull(const yaml_node_t *n) {
  return !n || (n->type == YAML_SCALAR_NODE && yscalar(n, NULL, NULL) == YS_NULL);
}

/* The members of a mapping in order, merge keys (`<<: *anchor`) resolved as go-yaml does: the
 * merged ones first, a key given in the mapping itself wins. */
typedef struct ypair {
  yaml_node_t *k, *v;
} ypair;

static int ypairs_add(ytr *t, const yaml_node_t *map, ypair **p, int *n, int *cap, int depth) {
  if (depth > YAML_DEPTH_MAX)
    return dmh_cfg_fail_line(t->c, DM_ERR_CONFIG_PARSE, yline(map),
                             "merge keys (<<) nested deeper than %d in the %s", YAML_DEPTH_MAX,
                             t->c->what);
  for (yaml_node_pair_t *q = map->data.mapping.pairs.start; q < map->data.mapping.pairs.top; q++) {
    yaml_node_t *k = ynode(t, q->key), *v = ynode(t, q->value);
    if (!ytext(k))
      return dmh_cfg_fail_line(t->c, DM_ERR_CONFIG_INVALID, yline(k),
                               "a key of the %s must be a plain name, not a mapping or list",
                               t->c->what);
    if (strcmp(ytext(k), "<<") == 0 && v && v->type != YAML_SCALAR_NODE) {
      if (v->type == YAML_MAPPING_NODE) {
        if (ypairs_add(t, v, p, n, cap, depth + 1) < 0)
          return -1;
      } else {
        for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top;
             i++) {
          yaml_node_t *m = ynode(t, *i);
          if (m && m->type == YAML_MAPPING_NODE && ypairs_add(t, m, p, n, cap, depth + 1) < 0)
            return -1;
        }
      }
      continue;
    }
    if (*n == *cap) {
      int nc = *cap ? *cap * 2 : 16;
      ypair *np = realloc(*p, (size_t)nc * sizeof *np);
      if (!np)
        return dmh_cfg_no_memory(t->c);
      *p = np;
      *cap = nc;
    }
    /* A later key replaces an earlier (merged) one. */
    int at = -1;
    for (int i = 0; i < *n; i++)
      if (strcmp(ytext((*p)[i].k), ytext(k)) == 0)
        at = i;
    if (at >= 0)
      (*p)[at] = (ypair){k, v};
    else
      (*p)[(*n)++] = (ypair){k, v};
  }
  return 0;
}

/* NULL with *n = -1 on failure (c->err filled); the caller frees. */
static ypair *ypairs(ytr *t, const yaml_node_t *map, int *n) {
  ypair *p = NULL;
  int cap = 0;
  *n = 0;
  if (ypairs_add(t, map, &p, n, &cap, 0) < 0) {
    free(p);
    *n = -1;
    return NULL;
  }
  return p;
}

static yaml_node_t *ymember(ytr *t, const yaml_node_t *map, const char *key) {
  if (!map || map->type != YAML_MAPPING_NODE)
    return NULL;
  int n;
  ypair *p = ypairs(t, map, &n);
  yaml_node_t *v = NULL;
  for (int i = 0; i < n; i++)
    if (strcmp(ytext(p[i].k), key) == 0)
      v = p[i].v;
  free(p);
  return ynull(v) ? NULL : v;
}

/* A setting's path for messages ("mysql-instances.[0].meta"): `path` then `.key`, or `.[idx]`
 * when key is NULL. A path longer than the buffer is cut (it is only said, never looked up). */
static void ysub(char *out, size_t size, const char *path, const char *key, int idx) {
  int n = key ? snprintf(out, size, "%s%s%s", path, path[0] ? "." : "", key)
              : snprintf(out, size, "%s.[%d]", path, idx);
  if (n < 0)
    out[0] = '\0';
}

/* ---- DM's keys that dmhost names otherwise, or does not do ---- */

/*
 * ctx: where the key is ("task", "source", "db" for target-database and from, "instance", the unit
 * configs "mydumper", "loader", "syncer", and a group's own name for its members: "checker").
 * to:  the unit section's setting it becomes (unit configs only), NULL: none.
 * ok:  NULL refused whatever it holds; "*" accepted, no effect here; "{}" accepted empty;
 *      "group" a group whose members are judged by the rows of ctx = this key; else the values
 *      accepted (DM's default, or what dmhost does anyway), '|'-separated, "" the empty string,
 *      compared without regard to case.
 * why: said in the refusal (and docs/config.md, "DM's YAML files", lists every row).
 */
typedef struct ydm_key {
  const char *ctx, *key, *to, *ok, *why;
} ydm_key;

static const ydm_key ydm_keys[] = {
    /* the task file */
    {"task", "enable-heartbeat", NULL, "false", "DM's heartbeat table is deprecated in DM"},
    {"task", "heartbeat-update-interval", NULL, "*", NULL},
    {"task", "heartbeat-report-interval", NULL, "*", NULL},
    {"task", "timezone", NULL, "",
     "the sync's sessions and replayed DDL run at the target's time zone"},
    {"task", "collation_compatible", NULL, "loose",
     "DDL is replayed as written (DM's loose); strict is not built"},
    {"task", "remove-meta", NULL, "false", "use `dmctl start-task --remove-meta` (a later slice)"},
    {"task", "column-mappings", NULL, "{}", "column mapping is deprecated in DM and not built"},
    {"task", "expression-filter", NULL, "{}", "expression filters are not built yet"},
    {"task", "validators", NULL, "{}", "the validator is not built yet"},
    {"task", "experimental", NULL, "group", NULL},
    {"experimental", "async-checkpoint-flush", NULL, "false",
     "the sync commits its checkpoint with every batch"},
    /* target-database (and from) */
    {"db", "session", NULL, "{}", "session variables on the connections are not built yet"},
    {"db", "max-allowed-packet", NULL, "*", NULL},
    /* an entry of mysql-instances */
    {"instance", "column-mapping-rules", NULL, "{}",
     "column mapping is deprecated in DM and not built"},
    {"instance", "expression-filters", NULL, "{}", "expression filters are not built yet"},
    {"instance", "validator-config-name", NULL, "", "the validator is not built yet"},
    /* mydumpers, an instance's mydumper */
    {"mydumper", "threads", "threads", NULL, NULL},
    {"mydumper", "chunk-filesize", "chunk-filesize", NULL, NULL},
    {"mydumper", "rows", "chunk-rows", NULL, NULL},
    {"mydumper", "statement-size", "statement-size", NULL, NULL},
    {"mydumper", "skip-tz-utc", NULL, "true", "the dump always reads at time zone +00:00"},
    {"mydumper", "extra-args", NULL, "", "dumpling's command-line options have no equivalent"},
    {"mydumper", "where", NULL, "", "the dump's WHERE filter is not built yet"},
    {"mydumper", "mydumper-path", NULL, "*", NULL},
    /* loaders, an instance's loader */
    {"loader", "pool-size", "pool-size", NULL, NULL},
    {"loader", "on-duplicate", "on-duplicate", NULL, NULL},
    {"loader", "on-duplicate-logical", "on-duplicate", NULL, NULL},
    {"loader", "dir", NULL, "*", NULL},
    {"loader", "import-mode", NULL, "sql|logical|loader", "physical import is not built"},
    {"loader", "on-duplicate-physical", NULL, "*", NULL},
    {"loader", "disk-quota-physical", NULL, "*", NULL},
    {"loader", "checksum-physical", NULL, "*", NULL},
    {"loader", "analyze", NULL, "*", NULL},
    {"loader", "range-concurrency", NULL, "*", NULL},
    {"loader", "compress-kv-pairs", NULL, "*", NULL},
    {"loader", "pd-addr", NULL, "*", NULL},
    {"loader", "sorting-dir-physical", NULL, "*", NULL},
    /* syncers, an instance's syncer */
    {"syncer", "worker-count", "worker-count", NULL, NULL},
    {"syncer", "batch", "batch", NULL, NULL},
    {"syncer", "safe-mode", "safe-mode", NULL, NULL},
    {"syncer", "compact", "compact", NULL, NULL},
    {"syncer", "multiple-rows", NULL, "*", NULL},
    {"syncer", "queue-size", NULL, "*", NULL},
    {"syncer", "checkpoint-flush-interval", NULL, "*", NULL},
    {"syncer", "max-retry", NULL, "*", NULL},
    {"syncer", "enable-ansi-quotes", NULL, "false", "ANSI_QUOTES parsing is not built"},
    {"syncer", "auto-fix-gtid", NULL, "false", "it is deprecated in DM and not built"},
    {"syncer", "enable-gtid", NULL, "false", "give enable-gtid in the source file"},
    {"syncer", "disable-detect", NULL, "false", "the sync always detects conflicts (causality)"},
    {"syncer", "safe-mode-duration", NULL, "", "a timed safe mode is not built yet"},
    /* the source file */
    {"source", "flavor", NULL, "|mysql|mariadb", "the flavor is read from the server"},
    {"source", "charset", NULL, "", "another connection charset is not built yet"},
    {"source", "relay-binlog-name", NULL, "", "the relay starts where the tasks need it"},
    {"source", "relay-binlog-gtid", NULL, "", "the relay starts where the tasks need it"},
    {"source", "meta-dir", NULL, "*", NULL},
    {"source", "auto-fix-gtid", NULL, "false", "it is deprecated in DM and not built"},
    {"source", "case-sensitive", NULL, "false", "give case-sensitive in the task file"},
    {"source", "filters", NULL, "{}",
     "a source's own event filters are not built yet: give "
     "them in the task file's filters"},
    {"source", "purge", NULL, "group", NULL},
    {"purge", "interval", NULL, "*", NULL},
    {"purge", "expires", NULL, "0", "the relay is purged with `dmctl purge-relay`"},
    {"purge", "remain-space", NULL, "*", NULL},
    {"source", "checker", NULL, "group", NULL},
    {"checker", "check-enable", NULL, "true",
     "a task's resuming is its supervisor.auto-resume in dmhost"},
    {"checker", "backoff-rollback", NULL, "5m|5m0s",
     "a task's resuming is its supervisor.auto-resume in dmhost"},
    {"checker", "backoff-max", NULL, "5m|5m0s",
     "a task's resuming is its supervisor.auto-resume in dmhost"},
    {"checker", "backoff-min", NULL, "1s", "a task's resuming is its supervisor.auto-resume"},
    {"checker", "check-interval", NULL, "5s", "a task's resuming is its supervisor.auto-resume"},
    {"source", "tracer", NULL, "group", NULL},
    {"tracer", "enable", NULL, "false", "DM's tracer is not built"},
    {"tracer", "tracer-addr", NULL, "*", NULL},
    {"tracer", "batch-size", NULL, "*", NULL},
    {"tracer", "checksum", NULL, "*", NULL},
};

static const ydm_key *ydm_find(const char *ctx, const char *key) {
  for (size_t i = 0; i < sizeof ydm_keys / sizeof *ydm_keys; i++)
    if (strcmp(ydm_keys[i].ctx, ctx) == 0 && strcmp(ydm_keys[i].key, key) == 0)
      return &ydm_keys[i];
  return NULL;
}

static int ydm_refuse(ytr *t, const yaml_node_t *at, const char *path, const char *ok,
                      const char *why) {
  char only[160] = "";
  if (ok && strcmp(ok, "{}") == 0)
    snprintf(only, sizeof only, " (only empty)");
  else if (ok && ok[0] != '\0' && strcmp(ok, "*") != 0 && strcmp(ok, "group") != 0)
    snprintf(only, sizeof only, " (only %s)", ok);
  else if (ok && ok[0] == '\0')
    snprintf(only, sizeof only, " (only \"\")");
  return dmh_cfg_fail_line(t->c, DM_ERR_CONFIG_UNKNOWN, yline(at),
                           "DM key `%s` is not supported by dmhost yet%s%s%s; remove it from the "
                           "%s (docs/config.md, \"DM's YAML files\")",
                           path, only, why ? ": " : "", why ? why : "", t->c->what);
}

static bool ydm_value_ok(const char *ok, const char *v) {
  size_t n = strlen(v);
  for (const char *p = ok;;) {
    const char *bar = strchr(p, '|');
    size_t len = bar ? (size_t)(bar - p) : strlen(p);
    if (len == n && strncasecmp(p, v, n) == 0)
      return true;
    if (!bar)
      return false;
    p = bar + 1;
  }
}

/* A DM key of `ctx` with value `v`: 1 accepted with no effect (not written), 0 not a key of this
 * table, -1 refused (c->err). */
static int ydm_judge(ytr *t, const char *ctx, const yaml_node_t *k, const yaml_node_t *v,
                     const char *path) {
  const ydm_key *r = ydm_find(ctx, ytext(k));
  if (!r || r->to)
    return 0;
  if (ynull(v) || (r->ok && strcmp(r->ok, "*") == 0))
    return 1;
  if (!r->ok)
    return ydm_refuse(t, k, path, NULL, r->why);
  if (strcmp(r->ok, "{}") == 0) {
    bool empty = (v->type == YAML_MAPPING_NODE &&
                  v->data.mapping.pairs.top == v->data.mapping.pairs.start) ||
                 (v->type == YAML_SEQUENCE_NODE &&
                  v->data.sequence.items.top == v->data.sequence.items.start);
    return empty ? 1 : ydm_refuse(t, k, path, r->ok, r->why);
  }
  if (strcmp(r->ok, "group") == 0) {
    if (v->type != YAML_MAPPING_NODE)
      return ydm_refuse(t, k, path, NULL, "a group was expected");
    int n;
    ypair *p = ypairs(t, v, &n);
    if (n < 0)
      return -1;
    int rc = 1;
    for (int i = 0; i < n && rc == 1; i++) {
      char sub[CFGUTIL_PATH_MAX];
      ysub(sub, sizeof sub, path, ytext(p[i].k), 0);
      rc = ydm_judge(t, r->key, p[i].k, p[i].v, sub);
      if (rc == 0)
        rc = ydm_refuse(t, p[i].k, sub, NULL, NULL);
    }
    free(p);
    return rc;
  }
  if (v->type != YAML_SCALAR_NODE || !ydm_value_ok(r->ok, ytext(v)))
    return ydm_refuse(t, k, path, r->ok, r->why);
  return 1;
}

/* ---- values ---- */

/* The libconfig type dmhost's table gives `key` in `scope` (-1: none, write what YAML says). */
static int ywant(dmh_cfg_scope scope, const char *key) {
  if (scope < 0 || scope >= DMH_SCOPE_COUNT)
    return -1;
  const dmh_cfg_setting *s = dmh_cfg_setting_in(scope, key);
  return s ? (int)s->type : -1;
}

static void yemit_scalar(ytr *t, const yaml_node_t *n, int want) {
  const char *s = ytext(n);
  size_t len = n->data.scalar.length;
  if (want == DMH_CFG_T_STRING || want == DMH_CFG_T_PATH || want == DMH_CFG_T_ENUM ||
      want == DMH_CFG_T_LIST) {
    yo_string(&t->o, s, len);
    return;
  }
  bool b;
  long long iv;
  switch (yscalar(n, &b, &iv)) {
  case YS_BOOL:
    yo_puts(&t->o, b ? "true" : "false");
    return;
  case YS_INT:
    /* libconfig 1.5 keeps 32 bits of an integer without the L suffix. */
    yo_fmt(&t->o, "%lld%s", iv, iv < INT32_MIN || iv > INT32_MAX ? "L" : "");
    return;
  case YS_FLOAT: {
    double d = strtod(s, NULL);
    char b2[64];
    snprintf(b2, sizeof b2, "%.17g", d);
    if (!strpbrk(b2, ".en"))
      strcat(b2, ".0");
    yo_puts(&t->o, b2);
    return;
  }
  default:
    yo_string(&t->o, s, len);
  }
}

/* The scope of the groups under `key` of `scope`, and whether `key` holds named rules. */
static dmh_cfg_scope ychild(dmh_cfg_scope scope, const char *key, bool *rules) {
  static const struct {
    dmh_cfg_scope parent;
    const char *key;
    dmh_cfg_scope child;
    bool rules;
  } map[] = {
      {DMH_SCOPE_TASK, "target-database", DMH_SCOPE_DB, false},
      {DMH_SCOPE_SOURCE, "from", DMH_SCOPE_DB, false},
      {DMH_SCOPE_DB, "security", DMH_SCOPE_SECURITY, false},
      {DMH_SCOPE_TASK, "mysql-instances", DMH_SCOPE_INSTANCE, false},
      {DMH_SCOPE_INSTANCE, "meta", DMH_SCOPE_META, false},
      {DMH_SCOPE_TASK, "block-allow-list", DMH_SCOPE_BAL, true},
      {DMH_SCOPE_TASK, "black-white-list", DMH_SCOPE_BAL, true},
      {DMH_SCOPE_BAL, "do-tables", DMH_SCOPE_TABLE, false},
      {DMH_SCOPE_BAL, "ignore-tables", DMH_SCOPE_TABLE, false},
      {DMH_SCOPE_TASK, "routes", DMH_SCOPE_ROUTE, true},
      {DMH_SCOPE_ROUTE, "extract-table", DMH_SCOPE_EXTRACT_TABLE, false},
      {DMH_SCOPE_ROUTE, "extract-schema", DMH_SCOPE_EXTRACT_SCHEMA, false},
      {DMH_SCOPE_ROUTE, "extract-source", DMH_SCOPE_EXTRACT_SOURCE, false},
      {DMH_SCOPE_TASK, "filters", DMH_SCOPE_FILTER, true},
      {DMH_SCOPE_TASK, "supervisor", DMH_SCOPE_SUPERVISOR, false},
      {DMH_SCOPE_SUPERVISOR, "auto-resume", DMH_SCOPE_AUTO_RESUME, false},
  };
  *rules = false;
  for (size_t i = 0; i < sizeof map / sizeof *map; i++)
    if (map[i].parent == scope && strcmp(map[i].key, key) == 0) {
      *rules = map[i].rules;
      return map[i].child;
    }
  return DMH_SCOPE_NONE;
}

/* A libconfig setting name: a letter or `*`, then letters, digits, `-`, `_`, `*`. */
static bool yname_ok(const char *s) {
  if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '*'))
    return false;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
          *s == '-' || *s == '_' || *s == '*'))
      return false;
  return true;
}

static int yemit_members(ytr *t, dmh_cfg_scope scope, const yaml_node_t *map, const char *path);

static int yemit_value(ytr *t, dmh_cfg_scope scope, const char *key, const yaml_node_t *v,
                       const char *path) {
  if (++t->depth > YAML_DEPTH_MAX)
    return dmh_cfg_fail_line(t->c, DM_ERR_CONFIG_PARSE, yline(v),
                             "`%s` nests deeper than %d (an alias loop?) in the %s", path,
                             YAML_DEPTH_MAX, t->c->what);
  if (t->o.big)
    return dmh_cfg_fail_line(t->c, DM_ERR_CONFIG_INVALID, yline(v),
                             "the %s grows beyond %d bytes with its aliases expanded", t->c->what,
                             YAML_OUT_MAX);
  int rc = 0, want = ywant(scope, key);
  bool rules;
  dmh_cfg_scope child = ychild(scope, key, &rules);
  if (v->type == YAML_SCALAR_NODE) {
    yemit_scalar(t, v, want);
  } else if (v->type == YAML_MAPPING_NODE) {
    yo_puts(&t->o, "{");
    if (rules) {
      /* named rules: each a group of the child scope */
      int n;
      ypair *p = ypairs(t, v, &n);
      if (n < 0)
        rc = -1;
      for (int i = 0; i < n && rc == 0; i++) {
        char sub[CFGUTIL_PATH_MAX];
        ysub(sub, sizeof sub, path, ytext(p[i].k), 0);
        if (!yname_ok(ytext(p[i].k))) {
          rc = dmh_cfg_fail_line(t->c, DM_ERR_CONFIG_INVALID, yline(p[i].k),
                                 "`%s` in the %s: a rule's name must start with a letter and "
                                 "hold letters, digits, `-` and `_`",
                                 sub, t->c->what);
          break;
        }
        yo_at(&t->o, yline(p[i].k));
        yo_puts(&t->o, ytext(p[i].k));
        yo_puts(&t->o, " = ");
        if (p[i].v->type != YAML_MAPPING_NODE)
          rc = yemit_value(t, DMH_SCOPE_NONE, ytext(p[i].k), p[i].v, sub);
        else {
          yo_puts(&t->o, "{");
          rc = yemit_members(t, child, p[i].v, sub);
          yo_puts(&t->o, " }");
        }
        yo_puts(&t->o, ";");
      }
      free(p);
    } else {
      rc = yemit_members(t, child, v, path);
    }
    yo_puts(&t->o, " }");
  } else {
    /* a list of scalars is a libconfig array when they are of one kind, else a list */
    bool scalars = true;
    int kind = -1;
    for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top; i++) {
      yaml_node_t *it = ynode(t, *i);
      if (it->type != YAML_SCALAR_NODE) {
        scalars = false;
        break;
      }
      int k = want == DMH_CFG_T_LIST ? YS_STR : (int)yscalar(it, NULL, NULL);
      if (kind >= 0 && k != kind)
        scalars = false;
      kind = k;
    }
    yo_puts(&t->o, scalars ? "[" : "(");
    int idx = 0;
    for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top && !rc;
         i++, idx++) {
      yaml_node_t *it = ynode(t, *i);
      char sub[CFGUTIL_PATH_MAX];
      ysub(sub, sizeof sub, path, NULL, idx);
      if (idx)
        yo_puts(&t->o, ",");
      yo_at(&t->o, yline(it));
      if (it->type == YAML_MAPPING_NODE) {
        yo_puts(&t->o, "{");
        rc = yemit_members(t, child, it, sub);
        yo_puts(&t->o, " }");
      } else {
        rc = yemit_value(t, DMH_SCOPE_NONE, key, it, sub);
      }
    }
    yo_puts(&t->o, scalars ? " ]" : " )");
  }
  t->depth--;
  return rc;
}

static int yemit_setting(ytr *t, dmh_cfg_scope scope, const char *name, const yaml_node_t *k,
                         const yaml_node_t *v, const char *path) {
  if (!yname_ok(name))
    return dmh_cfg_fail_line(t->c, DM_ERR_CONFIG_INVALID, yline(k),
                             "`%s` in the %s is no setting name (a letter first, then letters, "
                             "digits, `-` and `_`)",
                             path, t->c->what);
  yo_at(&t->o, yline(k));
  yo_puts(&t->o, name);
  yo_puts(&t->o, " = ");
  int want = ywant(scope, name);
  int rc;
  if (v->type == YAML_SEQUENCE_NODE && want == DMH_CFG_T_LIST) {
    /* an array of strings: a plain `[1, 2]` of do-dbs still names schemas */
    yo_puts(&t->o, "[");
    int idx = 0;
    rc = 0;
    for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top;
         i++, idx++) {
      yaml_node_t *it = ynode(t, *i);
      if (idx)
        yo_puts(&t->o, ",");
      yo_at(&t->o, yline(it));
      if (it->type == YAML_SCALAR_NODE)
        yemit_scalar(t, it, DMH_CFG_T_LIST);
      else {
        char sub[CFGUTIL_PATH_MAX];
        ysub(sub, sizeof sub, path, NULL, idx);
        return dmh_cfg_fail_line(t->c, DM_ERR_CONFIG_INVALID, yline(it),
                                 "`%s` in the %s must be a string", sub, t->c->what);
      }
    }
    yo_puts(&t->o, " ]");
  } else {
    rc = yemit_value(t, scope, name, v, path);
  }
  yo_puts(&t->o, ";");
  return rc;
}

/* ---- the unit sections: mydumpers, loaders, syncers ---- */

typedef struct yunit_kind {
  const char *dm;      /* "mydumper": the instance's inline config, the rows' ctx */
  const char *map;     /* "mydumpers" */
  const char *name;    /* "mydumper-config-name" */
  const char *thread;  /* "mydumper-thread" */
  const char *to;      /* "threads": what the thread count sets */
  const char *section; /* "dump" */
} yunit_kind;

static const yunit_kind ykinds[3] = {
    {"mydumper", "mydumpers", "mydumper-config-name", "mydumper-thread", "threads", "dump"},
    {"loader", "loaders", "loader-config-name", "loader-thread", "pool-size", "load"},
    {"syncer", "syncers", "syncer-config-name", "syncer-thread", "worker-count", "sync"},
};

#define YUNIT_MAX 16

/* One unit's effective settings for one instance: key, libconfig literal, YAML line. */
typedef struct yunit {
  struct {
    const char *key;
    char lit[96];
    int line;
  } e[YUNIT_MAX];
  int n;
} yunit;

static void yunit_set(yunit *u, const char *key, const char *lit, int line) {
  int i = 0;
  while (i < u->n && strcmp(u->e[i].key, key) != 0)
    i++;
  if (i == YUNIT_MAX)
    return;
  if (i == u->n)
    u->n++;
  u->e[i].key = key;
  snprintf(u->e[i].lit, sizeof u->e[i].lit, "%s", lit);
  u->e[i].line = line;
}

static const char *yunit_get(const yunit *u, const char *key) {
  for (int i = 0; i < u->n; i++)
    if (strcmp(u->e[i].key, key) == 0)
      return u->e[i].lit;
  return NULL;
}

/* The literal of a unit value: what YAML says; DM's chunk-filesize is in MiB (dumpling's "64M"). */
static int yunit_lit(ytr *t, const char *to, const yaml_node_t *v, const char *path, char *out,
                     size_t size) {
  if (v->type != YAML_SCALAR_NODE)
    return dmh_cfg_fail_line(t->c, DM_ERR_CONFIG_INVALID, yline(v),
                             "`%s` in the %s must be a single value", path, t->c->what);
  const char *s = ytext(v);
  if (strcmp(to, "chunk-filesize") == 0) {
    size_t d = strspn(s, "0123456789");
    if (d == 0 || s[d] != '\0' || d > 9)
      return dmh_cfg_fail_line(t->c, DM_ERR_CONFIG_INVALID, yline(v),
                               "`%s` in the %s must be a number of MB, as DM's, not \"%s\"", path,
                               t->c->what, s);
    /* in bytes: the dump reads a number first (a size text would be read as a string after) */
    long long bytes = strtoll(s, NULL, 10) * 1048576LL;
    snprintf(out, size, "%lld%s", bytes, bytes > INT32_MAX ? "L" : "");
    return 0;
  }
  yout o = {0};
  ytr tmp = *t;
  tmp.o = o;
  yemit_scalar(&tmp, v, -1);
  if (tmp.o.oom || tmp.o.len >= size) {
    free(tmp.o.buf);
    return dmh_cfg_fail_line(t->c, DM_ERR_CONFIG_INVALID, yline(v), "`%s` in the %s is too long",
                             path, t->c->what);
  }
  snprintf(out, size, "%s", tmp.o.buf);
  free(tmp.o.buf);
  return 0;
}

/* A DM unit config (a mydumpers entry, an instance's mydumper) into `u`. */
static int yunit_read(ytr *t, const yunit_kind *k, const yaml_node_t *cfg, const char *path,
                      yunit *u) {
  if (cfg->type != YAML_MAPPING_NODE)
    return dmh_cfg_fail_line(t->c, DM_ERR_CONFIG_INVALID, yline(cfg),
                             "`%s` in the %s must be a group", path, t->c->what);
  int n;
  ypair *p = ypairs(t, cfg, &n);
  if (n < 0)
    return -1;
  int rc = 0;
  for (int i = 0; i < n && rc == 0; i++) {
    char sub[CFGUTIL_PATH_MAX];
    ysub(sub, sizeof sub, path, ytext(p[i].k), 0);
    const ydm_key *r = ydm_find(k->dm, ytext(p[i].k));
    if (!r) {
      rc = ydm_refuse(t, p[i].k, sub, NULL, NULL);
      break;
    }
    if (strcmp(ytext(p[i].k), "dir") == 0 && strcmp(k->dm, "loader") == 0 && !ynull(p[i].v) &&
        ytext(ymember(t, t->root, "task-mode")) &&
        strcasecmp(ytext(ymember(t, t->root, "task-mode")), "load") == 0) {
      /* in mode load the loader's dir is where an earlier dump is: not a place to ignore */
      rc = ydm_refuse(t, p[i].k, sub, NULL,
                      "in task-mode load it names an earlier dump (DM appends .<task> to it), "
                      "which is not mapped yet; give dmhost's load.dir in a libconfig task file");
      break;
    }
    if (!r->to) {
      rc = ydm_judge(t, k->dm, p[i].k, p[i].v, sub) < 0 ? -1 : 0;
      continue;
    }
    if (ynull(p[i].v))
      continue;
    /* dumpling's 0 is "one file per table": how files are cut changes nothing loaded, dmhost's
     * 64 MiB files stay */
    if (strcmp(r->to, "chunk-filesize") == 0 &&
        strcmp(ytext(p[i].v) ? ytext(p[i].v) : "", "0") == 0)
      continue;
    char lit[96];
    rc = yunit_lit(t, r->to, p[i].v, sub, lit, sizeof lit);
    if (rc == 0)
      yunit_set(u, r->to, lit, yline(p[i].k));
  }
  free(p);
  return rc;
}

/* Instance `idx`'s effective settings of unit kind `k`: its named or inline config, then its
 * thread count, as DM resolves them (task.go's adjust). */
static int yunit_of(ytr *t, const yunit_kind *k, const yaml_node_t *inst, int idx, yunit *u) {
  char path[CFGUTIL_PATH_MAX];
  yaml_node_t *name = ymember(t, inst, k->name), *own = ymember(t, inst, k->dm);
  if (name && own)
    return dmh_cfg_fail_line(t->c, DM_ERR_CONFIG_INVALID, yline(own),
                             "mysql-instances.[%d] in the %s sets both `%s` and `%s`: give one",
                             idx, t->c->what, k->name, k->dm);
  if (name) {
    yaml_node_t *cfg = ymember(t, ymember(t, t->root, k->map), ytext(name) ? ytext(name) : "");
    if (!cfg)
      return dmh_cfg_fail_line(
          t->c, DM_ERR_CONFIG_INVALID, yline(name),
          "`mysql-instances.[%d].%s` in the %s names `%s`, which `%s` does not define", idx,
          k->name, t->c->what, ytext(name) ? ytext(name) : "", k->map);
    ysub(path, sizeof path, k->map, ytext(name), 0);
    if (yunit_read(t, k, cfg, path, u) < 0)
      return -1;
  } else if (own) {
    snprintf(path, sizeof path, "mysql-instances.[%d].%s", idx, k->dm);
    if (yunit_read(t, k, own, path, u) < 0)
      return -1;
  }
  yaml_node_t *thr = ymember(t, inst, k->thread);
  if (thr) {
    snprintf(path, sizeof path, "mysql-instances.[%d].%s", idx, k->thread);
    char lit[96];
    if (yunit_lit(t, k->to, thr, path, lit, sizeof lit) < 0)
      return -1;
    yunit_set(u, k->to, lit, yline(thr));
  }
  if (strcmp(k->section, "load") == 0) {
    /* DM removes the dump files once loaded unless clean-dump-file is false */
    yaml_node_t *clean = ymember(t, t->root, "clean-dump-file");
    bool b = true;
    if (clean && (clean->type != YAML_SCALAR_NODE || yscalar(clean, &b, NULL) != YS_BOOL))
      return dmh_cfg_fail_line(t->c, DM_ERR_CONFIG_INVALID, yline(clean),
                               "`clean-dump-file` in the %s must be true or false", t->c->what);
    yunit_set(u, "cleanup-dump", b ? "true" : "false", clean ? yline(clean) : 0);
  }
  return 0;
}

/* Does the chain of task-mode `mode` (NULL: unknown, all of them) run unit section `s`? */
static bool ymode_runs(const char *mode, const char *s) {
  if (!mode)
    return true;
  static const struct {
    const char *mode, *units;
  } m[] = {{"all", "dump load sync"}, {"full", "dump load"}, {"incremental", "sync"},
           {"dump", "dump"},          {"load", "load"},      {"load&sync", "load sync"}};
  for (size_t i = 0; i < sizeof m / sizeof *m; i++)
    if (strcasecmp(m[i].mode, mode) == 0)
      return strstr(m[i].units, s) != NULL;
  return true;
}

static const char *ysource_id(ytr *t, const yaml_node_t *inst) {
  const char *s = ytext(ymember(t, inst, "source-id"));
  return s ? s : "?";
}

/* dmhost runs one dump, load and sync section per task: every instance must resolve to the same
 * settings; they are written after the last line of the file (or on it). */
static int yemit_units(ytr *t) {
  yaml_node_t *list = ymember(t, t->root, "mysql-instances");
  if (!list || list->type != YAML_SEQUENCE_NODE)
    return 0;
  const char *mode = ytext(ymember(t, t->root, "task-mode"));
  for (int k = 0; k < 3; k++) {
    yunit first = {.n = 0}, u;
    const yaml_node_t *first_inst = NULL;
    int idx = 0;
    for (yaml_node_item_t *i = list->data.sequence.items.start; i < list->data.sequence.items.top;
         i++, idx++) {
      yaml_node_t *inst = ynode(t, *i);
      if (inst->type != YAML_MAPPING_NODE)
        continue;
      u.n = 0;
      if (yunit_of(t, &ykinds[k], inst, idx, &u) < 0)
        return -1;
      if (!first_inst) {
        first = u;
        first_inst = inst;
        continue;
      }
      /* the same keys with the same values, both ways */
      for (int pass = 0; pass < 2; pass++) {
        const yunit *a = pass ? &first : &u, *b = pass ? &u : &first;
        for (int e = 0; e < a->n; e++) {
          const char *other = yunit_get(b, a->e[e].key);
          if (other && strcmp(other, a->e[e].lit) == 0)
            continue;
          const char *here = pass ? other : a->e[e].lit, *there = pass ? a->e[e].lit : other;
          int line = pass ? yline(inst) : (a->e[e].line ? a->e[e].line : yline(inst));
          return dmh_cfg_fail_line(
              t->c, DM_ERR_CONFIG_INVALID, line,
              "mysql-instances.[%d] (source `%s`) and mysql-instances.[0] (source `%s`, line %d) "
              "give the %s unit different `%s`: %s here, %s there; dmhost runs one `%s` section "
              "per task: give every instance the same %s settings",
              idx, ysource_id(t, inst), ysource_id(t, first_inst), yline(first_inst),
              ykinds[k].section, a->e[e].key, here ? here : "not set", there ? there : "not set",
              ykinds[k].section, ykinds[k].dm);
        }
      }
    }
    if (!first_inst || first.n == 0 || !ymode_runs(mode, ykinds[k].section))
      continue;
    yo_at(&t->o, first.e[0].line);
    yo_fmt(&t->o, "%s = {", ykinds[k].section);
    for (int e = 0; e < first.n; e++) {
      yo_at(&t->o, first.e[e].line);
      yo_fmt(&t->o, "%s = %s;", first.e[e].key, first.e[e].lit);
    }
    yo_puts(&t->o, " };");
  }
  return 0;
}

/* ---- the members of a group ---- */

/* DM's keys of a group dmhost reads: 1 taken (accepted or consumed elsewhere), 0 write it (under
 * *name), -1 refused. */
static int ytake(ytr *t, dmh_cfg_scope scope, const yaml_node_t *map, const yaml_node_t *k,
                 const yaml_node_t *v, const char *path, const char **name) {
  const char *key = ytext(k);
  const char *ctx = NULL;
  switch (scope) {
  case DMH_SCOPE_TASK:
    ctx = "task";
    if (strcmp(key, "mydumpers") == 0 || strcmp(key, "loaders") == 0 ||
        strcmp(key, "syncers") == 0) {
      /* every config is checked, also one no instance names (DM checks them too) */
      const yunit_kind *uk = &ykinds[key[0] == 'm' ? 0 : key[0] == 'l' ? 1 : 2];
      if (v->type != YAML_MAPPING_NODE)
        return dmh_cfg_fail_line(t->c, DM_ERR_CONFIG_INVALID, yline(k),
                                 "`%s` in the %s must be a group of named configs", key,
                                 t->c->what);
      int n;
      ypair *p = ypairs(t, v, &n);
      int rc = n < 0 ? -1 : 1;
      for (int i = 0; i < n && rc == 1; i++) {
        char sub[CFGUTIL_PATH_MAX];
        yunit u = {.n = 0};
        ysub(sub, sizeof sub, key, ytext(p[i].k), 0);
        if (!ynull(p[i].v) && yunit_read(t, uk, p[i].v, sub, &u) < 0)
          rc = -1;
      }
      free(p);
      return rc;
    }
    if (strcmp(key, "clean-dump-file") == 0)
      return 1;
    if (strcmp(key, "black-white-list") == 0) {
      if (ymember(t, map, "block-allow-list"))
        return dmh_cfg_fail_line(t->c, DM_ERR_CONFIG_INVALID, yline(k),
                                 "the %s gives both `black-white-list` (DM's old name) and "
                                 "`block-allow-list`: keep one",
                                 t->c->what);
      *name = "block-allow-list";
      return 0;
    }
    break;
  case DMH_SCOPE_INSTANCE:
    ctx = "instance";
    for (int i = 0; i < 3; i++)
      if (strcmp(key, ykinds[i].dm) == 0 || strcmp(key, ykinds[i].name) == 0 ||
          strcmp(key, ykinds[i].thread) == 0)
        return 1; /* yemit_units */
    if (strcmp(key, "black-white-list") == 0) {
      if (ymember(t, map, "block-allow-list"))
        return dmh_cfg_fail_line(t->c, DM_ERR_CONFIG_INVALID, yline(k),
                                 "`%s` in the %s: both `black-white-list` (DM's old name) and "
                                 "`block-allow-list` are given; keep one",
                                 path, t->c->what);
      *name = "block-allow-list";
      return 0;
    }
    break;
  case DMH_SCOPE_DB:
    ctx = "db";
    break;
  case DMH_SCOPE_SOURCE:
    ctx = "source";
    break;
  default:
    return 0;
  }
  return ydm_judge(t, ctx, k, v, path);
}

static int yemit_members(ytr *t, dmh_cfg_scope scope, const yaml_node_t *map, const char *path) {
  int n;
  ypair *p = ypairs(t, map, &n);
  if (n < 0)
    return -1;
  int rc = 0;
  for (int i = 0; i < n && rc == 0; i++) {
    char sub[CFGUTIL_PATH_MAX];
    ysub(sub, sizeof sub, path, ytext(p[i].k), 0);
    if (ynull(p[i].v))
      continue; /* DM reads a key without a value as absent */
    const char *name = ytext(p[i].k);
    int took = ytake(t, scope, map, p[i].k, p[i].v, sub, &name);
    if (took < 0)
      rc = -1;
    else if (took == 0)
      rc = yemit_setting(t, scope, name, p[i].k, p[i].v, sub);
  }
  free(p);
  return rc;
}

/* ---- the file ---- */

/* Is the document a source file? DM's source files have `source-id` and `from` at the top, task
 * files `name`, `task-mode`, `mysql-instances`. */
static bool ytext_is_source(const char *text, size_t len) {
  yaml_parser_t parser;
  yaml_document_t doc;
  bool source = false;
  if (!yaml_parser_initialize(&parser))
    return false;
  yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
  if (yaml_parser_load(&parser, &doc)) {
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    bool from = false, inst = false;
    if (root && root->type == YAML_MAPPING_NODE)
      for (yaml_node_pair_t *q = root->data.mapping.pairs.start; q < root->data.mapping.pairs.top;
           q++) {
        const char *k = ytext(yaml_document_get_node(&doc, q->key));
        from |= k && strcmp(k, "from") == 0;
        inst |= k && (strcmp(k, "mysql-instances") == 0 || strcmp(k, "task-mode") == 0);
      }
    source = from && !inst;
    yaml_document_delete(&doc);
  }
  yaml_parser_delete(&parser);
  return source;
}

char *dmh_config_convert(const char *path, dm_error *err) {
  dmh_cfg_ctx c = {.path = path, .what = "task file", .err = err};
  char *raw = NULL, why[256];
  size_t len = 0;
  if (dmh_cfg_read_bounded(path, DMH_CFG_TEXT_MAX, false, NULL, NULL, &raw, &len, why,
                           sizeof why) == 0) {
    if (ytext_is_source(raw, len))
      c.what = "source file";
    free(raw);
  }
  char *text = dmh_cfg_yaml_text(&c, strcmp(c.what, "task file") == 0);
  if (!text)
    return NULL;
  /* libconfig's writer lays the settings out one per line, groups indented */
  config_t cfg;
  config_init(&cfg);
  char *out = NULL;
  size_t size = 0;
  if (config_read_string(&cfg, text) != CONFIG_TRUE) {
    dm_error_set(err, DM_ERR_CONFIG_PARSE, config_error_text(&cfg), "%s:%d: %s in the %s", path,
                 config_error_line(&cfg), config_error_text(&cfg), c.what);
  } else {
    FILE *f = open_memstream(&out, &size);
    if (f) {
      config_write(&cfg, f);
      fclose(f);
    }
    if (!out)
      dmh_cfg_no_memory(&c);
  }
  config_destroy(&cfg);
  free(text);
  return out;
}

bool dmh_config_is_yaml(const char *path) {
  size_t n = strlen(path);
  return (n > 5 && strcasecmp(path + n - 5, ".yaml") == 0) ||
         (n > 4 && strcasecmp(path + n - 4, ".yml") == 0);
}

char *dmh_cfg_yaml_text(dmh_cfg_ctx *c, bool task) {
  size_t len = 0;
  char *text = dmh_cfg_read_raw(c, &len);
  if (!text)
    return NULL;
  ytr t = {.c = c, .task = task, .o = {.line = 1}};
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser)) {
    free(text);
    dmh_cfg_no_memory(c);
    return NULL;
  }
  yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
  if (!yaml_parser_load(&parser, &t.doc)) {
    char msg[DM_ERROR_MESSAGE_MAX];
    const yaml_mark_t *m = &parser.problem_mark;
    int n = snprintf(msg, sizeof msg, "%s%s%s", parser.problem ? parser.problem : "syntax error",
                     parser.context ? " " : "", parser.context ? parser.context : "");
    /* "while scanning a quoted scalar" names where that began, often the line to fix */
    if (parser.context && n > 0 && (size_t)n < sizeof msg)
      snprintf(msg + n, sizeof msg - (size_t)n, " that started at line %d, column %d",
               (int)parser.context_mark.line + 1, (int)parser.context_mark.column + 1);
    dm_error_set(c->err, DM_ERR_CONFIG_PARSE, msg, "%s:%d:%d: YAML syntax error in the %s: %s",
                 c->path, (int)m->line + 1, (int)m->column + 1, c->what, msg);
    yaml_parser_delete(&parser);
    free(text);
    return NULL;
  }
  yaml_parser_delete(&parser);
  free(text);
  t.root = yaml_document_get_root_node(&t.doc);
  int rc = 0;
  if (t.root && t.root->type != YAML_MAPPING_NODE) {
    rc = dmh_cfg_fail_line(c, DM_ERR_CONFIG_PARSE, yline(t.root),
                           "the %s must be a YAML mapping of settings (`name: value`)", c->what);
  } else if (t.root) {
    rc = yemit_members(&t, task ? DMH_SCOPE_TASK : DMH_SCOPE_SOURCE, t.root, "");
    if (rc == 0 && task)
      rc = yemit_units(&t);
  }
  yo_puts(&t.o, "\n");
  yaml_document_delete(&t.doc);
  if (rc == 0 && t.o.oom)
    rc = dmh_cfg_no_memory(c);
  if (rc == 0 && t.o.big)
    rc = dmh_cfg_fail_line(c, DM_ERR_CONFIG_INVALID, 1,
                           "the %s grows beyond %d bytes with its aliases expanded", c->what,
                           YAML_OUT_MAX);
  if (rc < 0) {
    free(t.o.buf);
    return NULL;
  }
  return t.o.buf;
}
