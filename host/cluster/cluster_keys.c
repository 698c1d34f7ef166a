/* The cluster's keys and values in etcd: see cluster_keys.h. */
#include "cluster_keys.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmhost/fs.h"
#include "dmhost/sdk.h"

static const struct {
  const char *dir; /* the key's folder under the prefix */
  int n_names;     /* names after it */
} key_shapes[] = {
    [DMH_KEY_LEADER] = {"leader", 0},
    [DMH_KEY_MASTER] = {"master", 1},
    [DMH_KEY_WORKER] = {"worker", 1},
    [DMH_KEY_SOURCE] = {"source", 1},
    [DMH_KEY_BOUND] = {"bound", 1},
    [DMH_KEY_LAST] = {"last", 1},
    [DMH_KEY_TASK] = {"task", 1},
    [DMH_KEY_STAGE] = {"stage", 2},
    [DMH_KEY_STATUS] = {"status", 3},
    [DMH_KEY_RELAY] = {"relay", 1},
    [DMH_KEY_SHARD_TABLES] = {"shard/tables", 2},
    [DMH_KEY_SHARD_INFO] = {"shard/info", 2},
    [DMH_KEY_SHARD_OP] = {"shard/op", 2},
    [DMH_KEY_SHARD_OINFO] = {"shard/oinfo", 2},
    [DMH_KEY_SHARD_OOP] = {"shard/oop", 2},
    [DMH_KEY_SHARD_JOINED] = {"shard/joined", 1},
    [DMH_KEY_CLUSTER_INFO] = {"cluster-info", 0},
    [DMH_KEY_TEMPLATE] = {"template", 1},
    [DMH_KEY_DISABLED] = {"disabled", 1},
    [DMH_KEY_START] = {"start", 2},
};

bool dmh_cluster_name_ok(const char *name) {
  /* the state dir's rule (one owner: the SDK's file-name check), shorter */
  return name && strlen(name) < DMH_CLUSTER_NAME_MAX && dm_fs_name_ok(name, strlen(name));
}

static bool key_kind_ok(dmh_cluster_key_kind kind) {
  return kind >= DMH_KEY_LEADER && kind <= DMH_KEY_START;
}

int dmh_cluster_shard_prefix(char *out, size_t len, const char *prefix) {
  int n = snprintf(out, len, "%s/shard/", prefix);
  return n < 0 || (size_t)n >= len ? -1 : n;
}

int dmh_cluster_hex_name(char *out, size_t len, const char *name) {
  static const char digits[] = "0123456789abcdef";
  size_t n = strlen(name);
  if (n == 0 || 2 * n + 1 > len)
    return -1;
  for (size_t i = 0; i < n; i++) {
    out[2 * i] = digits[(unsigned char)name[i] >> 4];
    out[2 * i + 1] = digits[(unsigned char)name[i] & 15];
  }
  out[2 * n] = '\0';
  return (int)(2 * n);
}

int dmh_cluster_key(char *out, size_t len, const char *prefix, dmh_cluster_key_kind kind,
                    const char *a, const char *b, const char *c) {
  if (!key_kind_ok(kind))
    return -1;
  const char *names[3] = {a, b, c};
  int n = snprintf(out, len, "%s/%s", prefix, key_shapes[kind].dir);
  if (n < 0 || (size_t)n >= len)
    return -1;
  for (int i = 0; i < key_shapes[kind].n_names; i++) {
    if (!names[i]) { /* the prefix of every key from here on */
      if ((size_t)n + 1 >= len)
        return -1;
      out[n++] = '/';
      out[n] = '\0';
      return n;
    }
    if (!dmh_cluster_name_ok(names[i]))
      return -1;
    int k = snprintf(out + n, len - (size_t)n, "/%s", names[i]);
    if (k < 0 || (size_t)(n + k) >= len)
      return -1;
    n += k;
  }
  return n;
}

int dmh_cluster_key_parse(const char *key, size_t key_len, const char *prefix,
                          dmh_cluster_key_kind kind, char *a, char *b, char *c) {
  if (!key_kind_ok(kind))
    return -1;
  char head[DMH_CLUSTER_KEY_MAX];
  int hn = snprintf(head, sizeof head, "%s/%s", prefix, key_shapes[kind].dir);
  if (hn < 0 || (size_t)hn >= sizeof head || key_len < (size_t)hn ||
      memcmp(key, head, (size_t)hn) != 0)
    return -1;
  char *outs[3] = {a, b, c};
  size_t at = (size_t)hn;
  for (int i = 0; i < key_shapes[kind].n_names; i++) {
    if (at >= key_len || key[at] != '/')
      return -1;
    size_t start = ++at;
    while (at < key_len && key[at] != '/')
      at++;
    size_t n = at - start;
    if (n == 0 || n >= DMH_CLUSTER_NAME_MAX || !outs[i])
      return -1;
    memcpy(outs[i], key + start, n);
    outs[i][n] = '\0';
    if (!dmh_cluster_name_ok(outs[i]))
      return -1;
  }
  return at == key_len ? 0 : -1;
}

/* ---- values ---- */

static char *value_text(json_object *o) {
  char *s = NULL;
  if (o) {
    const char *t = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
    s = t ? strdup(t) : NULL;
    json_object_put(o);
  }
  return s;
}

static json_object *value_parse(const char *text, size_t len, const char *what, dm_error *err) {
  json_tokener *tok = json_tokener_new();
  json_object *o = tok ? json_tokener_parse_ex(tok, text, (int)len) : NULL;
  if (tok)
    json_tokener_free(tok);
  if (!o || !json_object_is_type(o, json_type_object)) {
    if (o)
      json_object_put(o);
    dm_error_set(err, DM_ERR_STATE, NULL, "etcd holds a %s that is not a JSON object", what);
    return NULL;
  }
  return o;
}

/* A string field into out: a usable name, or "" when empty is allowed. */
static int value_name(json_object *o, const char *field, bool may_be_empty, char *out,
                      const char *what, dm_error *err) {
  json_object *f = NULL;
  const char *s =
      json_object_object_get_ex(o, field, &f) && json_object_is_type(f, json_type_string)
          ? json_object_get_string(f)
          : NULL;
  if (!s || (s[0] ? !dmh_cluster_name_ok(s) : !may_be_empty)) {
    dm_error_set(err, DM_ERR_STATE, NULL, "etcd holds a %s whose `%s` is missing or not a name",
                 what, field);
    return -1;
  }
  dm_strlcpy(out, s, DMH_CLUSTER_NAME_MAX);
  return 0;
}

char *dmh_cluster_worker_json(const dmh_cluster_worker_info *w) {
  json_object *o = json_object_new_object();
  if (o) {
    json_object_object_add(o, "name", json_object_new_string(w->name));
    json_object_object_add(o, "addr", json_object_new_string(w->addr));
    json_object_object_add(o, "relay", json_object_new_string(w->relay));
  }
  return value_text(o);
}

int dmh_cluster_worker_parse(const char *text, size_t len, dmh_cluster_worker_info *w,
                             dm_error *err) {
  memset(w, 0, sizeof *w);
  json_object *o = value_parse(text, len, "worker registration", err);
  if (!o)
    return -1;
  json_object *f = NULL;
  int rc = value_name(o, "name", false, w->name, "worker registration", err) == 0 &&
                   value_name(o, "relay", true, w->relay, "worker registration", err) == 0
               ? 0
               : -1;
  if (rc == 0 && json_object_object_get_ex(o, "addr", &f) &&
      json_object_is_type(f, json_type_string))
    dm_strlcpy(w->addr, json_object_get_string(f), sizeof w->addr);
  json_object_put(o);
  return rc;
}

char *dmh_cluster_binding_json(const dmh_cluster_binding *b) {
  json_object *o = json_object_new_object();
  if (o) {
    json_object_object_add(o, "source", json_object_new_string(b->source));
    json_object_object_add(o, "leader", json_object_new_int64(b->leader));
  }
  return value_text(o);
}

int dmh_cluster_binding_parse(const char *text, size_t len, dmh_cluster_binding *b, dm_error *err) {
  memset(b, 0, sizeof *b);
  json_object *o = value_parse(text, len, "binding", err);
  if (!o)
    return -1;
  json_object *f = NULL;
  int rc = value_name(o, "source", false, b->source, "binding", err);
  if (rc == 0) {
    if (json_object_object_get_ex(o, "leader", &f) && json_object_is_type(f, json_type_int) &&
        json_object_get_int64(f) > 0)
      b->leader = json_object_get_int64(f);
    else {
      dm_error_set(err, DM_ERR_STATE, NULL, "etcd holds a binding without a leader token");
      rc = -1;
    }
  }
  json_object_put(o);
  return rc;
}

char *dmh_cluster_master_json(const char *name, const char *addr) {
  json_object *o = json_object_new_object();
  if (o) {
    json_object_object_add(o, "name", json_object_new_string(name));
    json_object_object_add(o, "addr", json_object_new_string(addr));
  }
  return value_text(o);
}

int dmh_cluster_master_parse(const char *text, size_t len, dmh_cluster_worker_info *m,
                             dm_error *err) {
  memset(m, 0, sizeof *m);
  json_object *o = value_parse(text, len, "master registration", err);
  if (!o)
    return -1;
  json_object *f = NULL;
  int rc = value_name(o, "name", false, m->name, "master registration", err);
  if (rc == 0 && json_object_object_get_ex(o, "addr", &f) &&
      json_object_is_type(f, json_type_string))
    dm_strlcpy(m->addr, json_object_get_string(f), sizeof m->addr);
  json_object_put(o);
  return rc;
}

char *dmh_cluster_config_json(const char *config_text) {
  json_object *o = json_object_new_object();
  if (o)
    json_object_object_add(o, "config", json_object_new_string(config_text));
  return value_text(o);
}

int dmh_cluster_config_parse(const char *text, size_t len, char **text_out, dm_error *err) {
  *text_out = NULL;
  json_object *o = value_parse(text, len, "source or task file", err);
  if (!o)
    return -1;
  json_object *f = NULL;
  if (json_object_object_get_ex(o, "config", &f) && json_object_is_type(f, json_type_string))
    *text_out = strdup(json_object_get_string(f));
  json_object_put(o);
  if (!*text_out) {
    dm_error_set(err, DM_ERR_STATE, NULL,
                 "etcd holds a source or task file without its text (`config`)");
    return -1;
  }
  return 0;
}

static const char *const stage_names[] = {
    [DMH_CLUSTER_RUNNING] = "Running",
    [DMH_CLUSTER_PAUSED] = "Paused",
    [DMH_CLUSTER_STOPPED] = "Stopped",
};

const char *dmh_cluster_stage_name(dmh_cluster_stage s) {
  return s >= DMH_CLUSTER_RUNNING && s <= DMH_CLUSTER_STOPPED ? stage_names[s] : "?";
}

int dmh_cluster_stage_parse(const char *text, size_t len, dmh_cluster_stage *out) {
  for (int s = DMH_CLUSTER_RUNNING; s <= DMH_CLUSTER_STOPPED; s++) {
    if (strlen(stage_names[s]) == len && memcmp(text, stage_names[s], len) == 0) {
      *out = (dmh_cluster_stage)s;
      return 0;
    }
  }
  return -1;
}

char *dmh_cluster_relay_json(const dmh_cluster_relay *r) {
  json_object *o = json_object_new_object();
  if (o) {
    json_object_object_add(o, "source", json_object_new_string(r->source));
    json_object_object_add(o, "stage", json_object_new_string(dmh_cluster_stage_name(r->stage)));
  }
  return value_text(o);
}

int dmh_cluster_relay_parse(const char *text, size_t len, dmh_cluster_relay *r, dm_error *err) {
  memset(r, 0, sizeof *r);
  json_object *o = value_parse(text, len, "relay request", err);
  if (!o)
    return -1;
  json_object *f = NULL;
  int rc = value_name(o, "source", false, r->source, "relay request", err);
  if (rc == 0) {
    const char *st =
        json_object_object_get_ex(o, "stage", &f) && json_object_is_type(f, json_type_string)
            ? json_object_get_string(f)
            : "";
    if (dmh_cluster_stage_parse(st, strlen(st), &r->stage) < 0 || r->stage == DMH_CLUSTER_PAUSED) {
      dm_error_set(err, DM_ERR_STATE, NULL,
                   "etcd holds a relay request whose `stage` is not Running or Stopped");
      rc = -1;
    }
  }
  json_object_put(o);
  return rc;
}

char *dmh_cluster_disabled_json(const char (*tasks)[DMH_CLUSTER_NAME_MAX], size_t n) {
  json_object *o = json_object_new_object(), *a = json_object_new_array();
  for (size_t i = 0; a && i < n; i++)
    json_object_array_add(a, json_object_new_string(tasks[i]));
  if (o && a)
    json_object_object_add(o, "paused", a);
  else
    json_object_put(a);
  return value_text(o);
}

int dmh_cluster_disabled_parse(const char *text, size_t len, char (**tasks)[DMH_CLUSTER_NAME_MAX],
                               size_t *n, dm_error *err) {
  *tasks = NULL;
  *n = 0;
  json_object *o = value_parse(text, len, "source's disabled flag", err), *a = NULL;
  if (!o)
    return -1;
  int rc = 0;
  if (!json_object_object_get_ex(o, "paused", &a) || !json_object_is_type(a, json_type_array)) {
    dm_error_set(err, DM_ERR_STATE, NULL,
                 "etcd holds a source's disabled flag without a `paused` array");
    rc = -1;
  }
  size_t k = rc == 0 ? json_object_array_length(a) : 0;
  if (rc == 0 && !(*tasks = calloc(k ? k : 1, sizeof **tasks))) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory reading a disabled flag");
    rc = -1;
  }
  for (size_t i = 0; rc == 0 && i < k; i++) {
    json_object *e = json_object_array_get_idx(a, i);
    const char *t = json_object_is_type(e, json_type_string) ? json_object_get_string(e) : "";
    if (!dmh_cluster_name_ok(t)) {
      dm_error_set(err, DM_ERR_STATE, NULL,
                   "etcd holds a source's disabled flag naming an unusable task name");
      rc = -1;
    } else {
      dm_strlcpy((*tasks)[(*n)++], t, DMH_CLUSTER_NAME_MAX);
    }
  }
  if (rc < 0) {
    free(*tasks);
    *tasks = NULL;
    *n = 0;
  }
  json_object_put(o);
  return rc;
}

char *dmh_cluster_start_json(const dmh_cluster_start *s) {
  json_object *o = json_object_new_object();
  if (o) {
    json_object_object_add(o, "binding", json_object_new_int64(s->binding));
    json_object_object_add(o, "remove_meta", json_object_new_boolean(s->remove_meta));
    if (s->at_stop)
      json_object_object_add(o, "stop", json_object_new_boolean(1));
    if (s->at_resume)
      json_object_object_add(o, "resume", json_object_new_boolean(1));
    if (s->safe_mode_duration[0])
      json_object_object_add(o, "safe_mode_duration",
                             json_object_new_string(s->safe_mode_duration));
    if (s->has_start) {
      json_object *p = json_object_new_object();
      json_object_object_add(p, "name", json_object_new_string(s->start.name));
      json_object_object_add(p, "pos", json_object_new_int64((int64_t)s->start.pos));
      json_object_object_add(p, "gtid", json_object_new_string(s->start.gtid));
      json_object_object_add(o, "start", p);
    }
  }
  return value_text(o);
}

int dmh_cluster_start_parse(const char *text, size_t len, dmh_cluster_start *s, dm_error *err) {
  memset(s, 0, sizeof *s);
  json_object *o = value_parse(text, len, "start-task's options", err), *f = NULL, *p = NULL;
  if (!o)
    return -1;
  int rc = 0;
  if (!json_object_object_get_ex(o, "binding", &f) || !json_object_is_type(f, json_type_int) ||
      (s->binding = json_object_get_int64(f)) <= 0)
    rc = -1;
  if (json_object_object_get_ex(o, "remove_meta", &f))
    s->remove_meta = json_object_get_boolean(f);
  if (json_object_object_get_ex(o, "stop", &f))
    s->at_stop = json_object_get_boolean(f);
  if (json_object_object_get_ex(o, "resume", &f))
    s->at_resume = json_object_get_boolean(f);
  if (json_object_object_get_ex(o, "safe_mode_duration", &f)) {
    if (!json_object_is_type(f, json_type_string) ||
        json_object_get_string_len(f) >= (int)sizeof s->safe_mode_duration)
      rc = -1;
    else
      dm_strlcpy(s->safe_mode_duration, json_object_get_string(f), sizeof s->safe_mode_duration);
  }
  if (rc == 0 && json_object_object_get_ex(o, "start", &p)) {
    json_object *n = NULL, *ps = NULL, *g = NULL;
    const char *name = json_object_object_get_ex(p, "name", &n) ? json_object_get_string(n) : NULL;
    const char *gtid = json_object_object_get_ex(p, "gtid", &g) ? json_object_get_string(g) : "";
    if (!name || !name[0] || strlen(name) >= sizeof s->start.name || !gtid ||
        strlen(gtid) >= sizeof s->start.gtid || !json_object_object_get_ex(p, "pos", &ps) ||
        !json_object_is_type(ps, json_type_int) || json_object_get_int64(ps) < 0) {
      rc = -1;
    } else {
      s->has_start = true;
      dm_strlcpy(s->start.name, name, sizeof s->start.name);
      dm_strlcpy(s->start.gtid, gtid, sizeof s->start.gtid);
      s->start.pos = (uint64_t)json_object_get_int64(ps);
    }
  }
  if (rc < 0)
    dm_error_set(err, DM_ERR_STATE, NULL,
                 "etcd holds start-task's options without a `binding`, with a malformed `start` "
                 "position or a `safe_mode_duration` that is no short text");
  json_object_put(o);
  return rc;
}
