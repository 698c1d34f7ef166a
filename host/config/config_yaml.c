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

#include "config_yaml_internal.h"
#include "dmhost/sdk.h"

/* ---- values ---- */

/* The libconfig type dmhost's table gives `key` in `scope` (-1: none, write what YAML says). */
static int ywant(dmh_cfg_scope scope, const char *key) {
  if (scope < 0 || scope >= DMH_SCOPE_COUNT)
    return -1;
  const dmh_cfg_setting *s = dmh_cfg_setting_in(scope, key);
  return s ? (int)s->type : -1;
}

void yemit_scalar(ytr *t, const yaml_node_t *n, int want) {
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
    if (strcmp(key, "validators") == 0) {
      /* every config is checked, also one no instance names */
      if (v->type != YAML_MAPPING_NODE)
        return dmh_cfg_fail_line(t->c, DM_ERR_CONFIG_INVALID, yline(k),
                                 "`%s` in the %s must be a group of named configs", key,
                                 t->c->what);
      int n;
      ypair *p = ypairs(t, v, &n);
      int rc = n < 0 ? -1 : 1;
      for (int i = 0; i < n && rc == 1; i++) {
        char sub[CFGUTIL_PATH_MAX], lit[400];
        ysub(sub, sizeof sub, key, ytext(p[i].k), 0);
        if (!ynull(p[i].v) && yval_read(t, p[i].v, sub, lit, sizeof lit) < 0)
          rc = -1;
      }
      free(p);
      return rc;
    }
    if (strcmp(key, "clean-dump-file") == 0 || strcmp(key, "timezone") == 0)
      return 1; /* yemit_units: the load's and the sync's */
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
    if (strcmp(key, "validator-config-name") == 0)
      return 1; /* yemit_units: the sync's `validator` group */
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
  if (rc == 0 && t.o.b.oom)
    rc = dmh_cfg_no_memory(c);
  if (rc == 0 && t.o.big)
    rc = dmh_cfg_fail_line(c, DM_ERR_CONFIG_INVALID, 1,
                           "the %s grows beyond %d bytes with its aliases expanded", c->what,
                           YAML_OUT_MAX);
  if (rc < 0) {
    dm_buf_free(&t.o.b);
    return NULL;
  }
  return t.o.b.p;
}
