/* The YAML reader's text written and its view of the YAML document (config_yaml_internal.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config_yaml_internal.h"
#include "dmhost/sdk.h"

/* ---- the text written ---- */

void yo_put(yout *o, const char *s, size_t n) {
  if (o->big)
    return;
  if (o->b.len + n > YAML_OUT_MAX) {
    o->big = true;
    return;
  }
  (void)dm_buf_put(&o->b, s, n); /* a failure stays said in b.oom */
}

void yo_puts(yout *o, const char *s) {
  yo_put(o, s, strlen(s));
}

void yo_fmt(yout *o, const char *fmt, ...) {
  char b[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(b, sizeof b, fmt, ap);
  va_end(ap);
  if (n > 0)
    yo_put(o, b, (size_t)n < sizeof b ? (size_t)n : sizeof b - 1);
}

/* Go on to `line` (never back: a line already passed keeps what follows on the current one). */
void yo_at(yout *o, int line) {
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
void yo_string(yout *o, const char *s, size_t n) {
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

int yline(const yaml_node_t *n) {
  return (int)n->start_mark.line + 1;
}

const char *ytext(const yaml_node_t *n) {
  return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

yaml_node_t *ynode(ytr *t, int id) {
  return yaml_document_get_node(&t->doc, id);
}

/* What a scalar is, as DM's YAML library (go-yaml, YAML 1.1) reads it: a plain `true`, `on`, `123`
 * is a bool or int; a quoted one is a string. (libyaml's document API gives every scalar without a
 * tag the str tag, so an explicit `!!str 1` cannot be told apart: it reads as 1.) */
ykind yscalar(const yaml_node_t *n, bool *b, long long *iv) {
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

bool ynull(const yaml_node_t *n) {
  return !n || (n->type == YAML_SCALAR_NODE && yscalar(n, NULL, NULL) == YS_NULL);
}

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
ypair *ypairs(ytr *t, const yaml_node_t *map, int *n) {
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

yaml_node_t *ymember(ytr *t, const yaml_node_t *map, const char *key) {
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
void ysub(char *out, size_t size, const char *path, const char *key, int idx) {
  int n = key ? snprintf(out, size, "%s%s%s", path, path[0] ? "." : "", key)
              : snprintf(out, size, "%s.[%d]", path, idx);
  if (n < 0)
    out[0] = '\0';
}
