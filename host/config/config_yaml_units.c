/* The YAML reader: DM's mydumpers, loaders and syncers into the task's dump, load and sync
 * sections. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config_yaml_internal.h"
#include "dmhost/sdk.h"
#include "dmhost/settings.h"

/* ---- the unit sections: mydumpers, loaders, syncers ---- */

const yunit_kind ykinds[3] = {
    {"mydumper", "mydumpers", "mydumper-config-name", "mydumper-thread", "threads", "dump"},
    {"loader", "loaders", "loader-config-name", "loader-thread", "pool-size", "load"},
    {"syncer", "syncers", "syncer-config-name", "syncer-thread", "worker-count", "sync"},
};

static void yunit_put(yunit *u, const char *key, const char *lit, int line, bool extra) {
  int i = 0;
  while (i < u->n && strcmp(u->e[i].key, key) != 0)
    i++;
  if (i == YUNIT_MAX || (i < u->n && u->e[i].extra && !extra))
    return; /* DM applies extra-args last: its values win */
  if (i == u->n)
    u->n++;
  u->e[i].key = key;
  snprintf(u->e[i].lit, sizeof u->e[i].lit, "%s", lit);
  u->e[i].line = line;
  u->e[i].extra = extra;
}

static void yunit_set(yunit *u, const char *key, const char *lit, int line) {
  yunit_put(u, key, lit, line, false);
}

void yunit_set_extra(yunit *u, const char *key, const char *lit, int line) {
  yunit_put(u, key, lit, line, true);
}

const char *yunit_extra(const yunit *u, const char *key) {
  for (int i = 0; i < u->n; i++)
    if (u->e[i].extra && strcmp(u->e[i].key, key) == 0)
      return u->e[i].lit;
  return NULL;
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
  if (strcmp(to, "safe-mode-duration") == 0) {
    /* DM reads it as a string (a YAML 0 too): the sync's setting is one */
    int64_t ms;
    if (s[0] && dm_duration_parse(s, &ms) < 0)
      return dmh_cfg_fail_line(t->c, DM_ERR_CONFIG_INVALID, yline(v),
                               "`%s` in the %s must be a duration as DM's (Go's): \"60s\", "
                               "\"1m30s\", \"500ms\" or \"0s\", 0 or more, not \"%s\"",
                               path, t->c->what, s);
    yout q = {0};
    yo_string(&q, s, strlen(s));
    int rc = q.b.oom || q.b.len >= size ? -1 : 0;
    if (rc == 0)
      snprintf(out, size, "%s", q.b.p);
    dm_buf_free(&q.b);
    return rc < 0 ? dmh_cfg_fail_line(t->c, DM_ERR_CONFIG_INVALID, yline(v),
                                      "`%s` in the %s is too long", path, t->c->what)
                  : 0;
  }
  yout o = {0};
  ytr tmp = *t;
  tmp.o = o;
  yemit_scalar(&tmp, v, -1);
  if (tmp.o.b.oom || tmp.o.b.len >= size) {
    dm_buf_free(&tmp.o.b);
    return dmh_cfg_fail_line(t->c, DM_ERR_CONFIG_INVALID, yline(v), "`%s` in the %s is too long",
                             path, t->c->what);
  }
  snprintf(out, size, "%s", tmp.o.b.p);
  dm_buf_free(&tmp.o.b);
  return 0;
}

/* A DM unit config (a mydumpers entry, an instance's mydumper) into `u`. */
int yunit_read(ytr *t, const yunit_kind *k, const yaml_node_t *cfg, const char *path, yunit *u) {
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
    if (strcmp(k->dm, "mydumper") == 0 && strcmp(ytext(p[i].k), "extra-args") == 0) {
      /* dumpling's options (DM's OpenAPI converter writes full_migrate_conf.consistency as
       * "--consistency X") */
      if (!ynull(p[i].v) && (rc = yextra_args(t, p[i].k, p[i].v, sub, u)) < 0)
        break;
      continue;
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
  yaml_node_t *vname = ymember(t, inst, "validator-config-name");
  if (strcmp(k->section, "sync") == 0 && vname && !ynull(vname)) {
    /* DM's continuous validator: the named validators entry becomes the sync's `validator` */
    const char *vn = ytext(vname) ? ytext(vname) : "";
    yaml_node_t *cfg = ymember(t, ymember(t, t->root, "validators"), vn);
    if (!cfg || ynull(cfg))
      return dmh_cfg_fail_line(t->c, DM_ERR_CONFIG_INVALID, yline(vname),
                               "`mysql-instances.[%d].validator-config-name` in the %s names `%s`, "
                               "which `validators` does not define",
                               idx, t->c->what, vn);
    char lit[400];
    ysub(path, sizeof path, "validators", vn, 0);
    if (yval_read(t, cfg, path, lit, sizeof lit) < 0)
      return -1;
    yunit_set(u, "validator", lit, yline(vname));
  }
  yaml_node_t *tz = ymember(t, t->root, "timezone");
  if (strcmp(k->section, "sync") == 0 && tz && !ynull(tz) && ytext(tz) && ytext(tz)[0]) {
    /* DM's task-wide zone is the sync's (sync_tz.c): as a string, whatever YAML made of it */
    yout o = {0};
    yo_string(&o, ytext(tz), tz->data.scalar.length);
    if (o.b.oom || o.b.len >= sizeof u->e[0].lit) {
      dm_buf_free(&o.b);
      return dmh_cfg_fail_line(t->c, DM_ERR_CONFIG_INVALID, yline(tz),
                               "`timezone` in the %s is too long", t->c->what);
    }
    yunit_set(u, "timezone", o.b.p, yline(tz));
    dm_buf_free(&o.b);
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

/* DM's ValidatorConfig keys (dm/config/task.go): strings (mode, durations, a size) or integers.
 * start-time is no YAML key in DM (yaml:"-"). */
static const struct {
  const char *key;
  bool str;
} yval_keys[] = {
    {"mode", true},
    {"worker-count", false},
    {"validate-interval", true},
    {"check-interval", true},
    {"row-error-delay", true},
    {"meta-flush-interval", true},
    {"batch-query-size", false},
    {"max-pending-row-size", true},
    {"max-pending-row-count", false},
};

int yval_read(ytr *t, const yaml_node_t *cfg, const char *path, char *out, size_t size) {
  if (cfg->type != YAML_MAPPING_NODE)
    return dmh_cfg_fail_line(t->c, DM_ERR_CONFIG_INVALID, yline(cfg),
                             "`%s` in the %s must be a group", path, t->c->what);
  int n;
  ypair *p = ypairs(t, cfg, &n);
  if (n < 0)
    return -1;
  yout o = {0};
  yo_puts(&o, "{");
  int rc = 0;
  for (int i = 0; i < n && rc == 0; i++) {
    const char *key = ytext(p[i].k) ? ytext(p[i].k) : "";
    size_t j = 0;
    while (j < sizeof yval_keys / sizeof *yval_keys && strcmp(yval_keys[j].key, key) != 0)
      j++;
    const char *s = ytext(p[i].v);
    if (j == sizeof yval_keys / sizeof *yval_keys) {
      rc = dmh_cfg_fail_line(t->c, DM_ERR_CONFIG_INVALID, yline(p[i].k),
                             "`%s.%s` in the %s is no validator setting (DM's are mode, "
                             "worker-count, validate-interval, check-interval, row-error-delay, "
                             "meta-flush-interval, batch-query-size, max-pending-row-size, "
                             "max-pending-row-count)",
                             path, key, t->c->what);
    } else if (ynull(p[i].v)) {
      continue;
    } else if (p[i].v->type != YAML_SCALAR_NODE || !s ||
               (!yval_keys[j].str &&
                (!s[0] || strspn(s, "0123456789") != strlen(s) || strlen(s) > 9))) {
      rc = dmh_cfg_fail_line(t->c, DM_ERR_CONFIG_INVALID, yline(p[i].v),
                             "`%s.%s` in the %s must be %s", path, key, t->c->what,
                             yval_keys[j].str ? "a single value" : "a number");
    } else {
      yo_fmt(&o, " %s = ", key);
      if (yval_keys[j].str)
        yo_string(&o, s, strlen(s));
      else
        yo_puts(&o, s);
      yo_puts(&o, ";");
    }
  }
  free(p);
  yo_puts(&o, " }");
  if (rc == 0 && (o.b.oom || o.b.len >= size))
    rc = dmh_cfg_fail_line(t->c, DM_ERR_CONFIG_INVALID, yline(cfg), "`%s` in the %s is too long",
                           path, t->c->what);
  if (rc == 0)
    snprintf(out, size, "%s", o.b.p);
  dm_buf_free(&o.b);
  return rc;
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
int yemit_units(ytr *t) {
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
