/*
 * DM's OpenAPI schemas (dm/openapi/spec/dm.yaml) as tables of members, and the checks of a Task
 * and a Source against them before config_openapi.c writes DM's YAML: each object has only its
 * schema's members, each of its type and enum, the required ones there; a JSON null is an absent
 * member, as it is for DM's pointers. Every refusal names the member's JSON path.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_openapi_internal.h"
#include "dmhost/sdk.h"

/* ---- DM's schemas: the members of each object ---- */

typedef enum oa_type { OA_STR, OA_INT, OA_BOOL, OA_OBJ, OA_ARR_STR, OA_ARR_OBJ, OA_OUT } oa_type;

typedef struct oa_member {
  const char *name;
  oa_type type;
  bool required;
  const char *const *enumv; /* NULL-terminated; NULL: any value */
} oa_member;

typedef struct oa_schema {
  const char *name; /* DM's schema name, said in messages */
  const oa_member *m;
} oa_schema;

static const char *const e_task_mode[] = {"full", "incremental", "all", "dump", "load", NULL};
static const char *const e_shard_mode[] = {"pessimistic", "optimistic", NULL};
static const char *const e_on_dup[] = {"replace", "error", "ignore", NULL};
static const char *const e_import_mode[] = {"logical", "physical", "import-into", NULL};
static const char *const e_post_op[] = {"required", "optional", "off", NULL};
static const char *const e_on_dup_phys[] = {"none", "manual", NULL};
static const char *const e_fk_checks[] = {"0", "1", NULL};

/* OA_OUT: an output member (status_list, task_name_list): taken, whatever it holds, as DM takes
 * it (the WebUI sends back what a GET gave). */
static const oa_member m_task[] = {
    {"name", OA_STR, true, NULL},
    {"task_mode", OA_STR, true, e_task_mode},
    {"shard_mode", OA_STR, false, e_shard_mode},
    {"strict_optimistic_shard_mode", OA_BOOL, false, NULL},
    {"meta_schema", OA_STR, false, NULL},
    {"timezone", OA_STR, false, NULL},
    {"enhance_online_schema_change", OA_BOOL, true, NULL},
    {"on_duplicate", OA_STR, true, e_on_dup},
    {"target_config", OA_OBJ, true, NULL},
    {"binlog_filter_rule", OA_OBJ, false, NULL},
    {"table_migrate_rule", OA_ARR_OBJ, true, NULL},
    {"source_config", OA_OBJ, true, NULL},
    {"status_list", OA_OUT, false, NULL},
    {"ignore_checking_items", OA_ARR_STR, false, NULL},
    {NULL, 0, false, NULL},
};
static const oa_member m_target[] = {
    {"host", OA_STR, true, NULL},
    {"port", OA_INT, true, NULL},
    {"user", OA_STR, true, NULL},
    {"password", OA_STR, true, NULL},
    {"security", OA_OBJ, false, NULL},
    {"session", OA_OBJ, false, NULL},
    {NULL, 0, false, NULL},
};
static const oa_member m_session[] = {
    {"foreign_key_checks", OA_STR, false, e_fk_checks},
    {NULL, 0, false, NULL},
};
static const oa_member m_security[] = {
    {"ssl_ca_content", OA_STR, true, NULL},
    {"ssl_cert_content", OA_STR, true, NULL},
    {"ssl_key_content", OA_STR, true, NULL},
    {"cert_allowed_cn", OA_ARR_STR, false, NULL},
    {NULL, 0, false, NULL},
};
static const oa_member m_filter[] = {
    {"ignore_event", OA_ARR_STR, false, NULL},
    {"ignore_sql", OA_ARR_STR, false, NULL},
    {NULL, 0, false, NULL},
};
static const oa_member m_migrate[] = {
    {"source", OA_OBJ, true, NULL},
    {"target", OA_OBJ, false, NULL},
    {"binlog_filter_rule", OA_ARR_STR, false, NULL},
    {NULL, 0, false, NULL},
};
static const oa_member m_migrate_source[] = {
    {"source_name", OA_STR, true, NULL},
    {"schema", OA_STR, true, NULL},
    {"table", OA_STR, true, NULL},
    {NULL, 0, false, NULL},
};
static const oa_member m_migrate_target[] = {
    {"schema", OA_STR, false, NULL},
    {"table", OA_STR, false, NULL},
    {NULL, 0, false, NULL},
};
static const oa_member m_source_config[] = {
    {"full_migrate_conf", OA_OBJ, false, NULL},
    {"incr_migrate_conf", OA_OBJ, false, NULL},
    {"source_conf", OA_ARR_OBJ, true, NULL},
    {NULL, 0, false, NULL},
};
static const oa_member m_source_conf[] = {
    {"source_name", OA_STR, true, NULL},
    {"binlog_name", OA_STR, false, NULL},
    {"binlog_pos", OA_INT, false, NULL},
    {"binlog_gtid", OA_STR, false, NULL},
    {NULL, 0, false, NULL},
};
static const oa_member m_full[] = {
    {"export_threads", OA_INT, false, NULL},
    {"import_threads", OA_INT, false, NULL},
    {"data_dir", OA_STR, false, NULL},
    {"consistency", OA_STR, false, NULL},
    {"import_mode", OA_STR, false, e_import_mode},
    {"sorting_dir", OA_STR, false, NULL},
    {"disk_quota", OA_STR, false, NULL},
    {"checksum", OA_STR, false, e_post_op},
    {"analyze", OA_STR, false, e_post_op},
    {"range_concurrency", OA_INT, false, NULL},
    {"compress-kv-pairs", OA_STR, false, NULL},
    {"pd_addr", OA_STR, false, NULL},
    {"security", OA_OBJ, false, NULL},
    {"on_duplicate_logical", OA_STR, false, e_on_dup},
    {"on_duplicate_physical", OA_STR, false, e_on_dup_phys},
    {NULL, 0, false, NULL},
};
static const oa_member m_incr[] = {
    {"repl_threads", OA_INT, false, NULL},
    {"repl_batch", OA_INT, false, NULL},
    {"safe_mode", OA_BOOL, false, NULL},
    {NULL, 0, false, NULL},
};
static const oa_member m_source[] = {
    {"source_name", OA_STR, true, NULL},
    {"host", OA_STR, true, NULL},
    {"port", OA_INT, true, NULL},
    {"user", OA_STR, true, NULL},
    {"password", OA_STR, false, NULL},
    {"enable_gtid", OA_BOOL, true, NULL},
    {"enable", OA_BOOL, true, NULL},
    {"flavor", OA_STR, false, NULL},
    {"task_name_list", OA_OUT, false, NULL},
    {"security", OA_OBJ, false, NULL},
    {"purge", OA_OBJ, false, NULL},
    {"status_list", OA_OUT, false, NULL},
    {"relay_config", OA_OBJ, false, NULL},
    {NULL, 0, false, NULL},
};
static const oa_member m_purge[] = {
    {"interval", OA_INT, false, NULL},
    {"expires", OA_INT, false, NULL},
    {"remain_space", OA_INT, false, NULL},
    {NULL, 0, false, NULL},
};
static const oa_member m_relay[] = {
    {"enable_relay", OA_BOOL, false, NULL},
    {"relay_binlog_name", OA_STR, false, NULL},
    {"relay_binlog_gtid", OA_STR, false, NULL},
    {"relay_dir", OA_STR, false, NULL},
    {NULL, 0, false, NULL},
};

static const oa_member m_topology[] = {
    {"master_topology_list", OA_ARR_OBJ, false, NULL},
    {"worker_topology_list", OA_ARR_OBJ, false, NULL},
    {"grafana_topology", OA_OBJ, false, NULL},
    {"prometheus_topology", OA_OBJ, false, NULL},
    {"alert_manager_topology", OA_OBJ, false, NULL},
    {NULL, 0, false, NULL},
};
static const oa_member m_member_host[] = {
    /* MasterTopology, WorkerTopology */
    {"name", OA_STR, true, NULL},
    {"host", OA_STR, true, NULL},
    {"port", OA_INT, true, NULL},
    {NULL, 0, false, NULL},
};
static const oa_member m_host[] = {
    /* GrafanaTopology, PrometheusTopology, AlertManagerTopology */
    {"host", OA_STR, true, NULL},
    {"port", OA_INT, true, NULL},
    {NULL, 0, false, NULL},
};

static const oa_schema s_task = {"Task", m_task}, s_target = {"TaskTargetDataBase", m_target},
                       s_session = {"TaskTargetSession", m_session},
                       s_security = {"Security", m_security},
                       s_filter = {"TaskBinLogFilterRule", m_filter},
                       s_migrate = {"TaskTableMigrateRule", m_migrate},
                       s_migrate_source = {"TaskTableMigrateRuleSource", m_migrate_source},
                       s_migrate_target = {"TaskTableMigrateRuleTarget", m_migrate_target},
                       s_source_config = {"TaskSourceConfig", m_source_config},
                       s_source_conf = {"TaskSourceConf", m_source_conf},
                       s_full = {"TaskFullMigrateConf", m_full},
                       s_incr = {"TaskIncrMigrateConf", m_incr}, s_source = {"Source", m_source},
                       s_purge = {"Purge", m_purge}, s_relay = {"RelayConfig", m_relay},
                       s_topology = {"ClusterTopology", m_topology},
                       s_master_topo = {"MasterTopology", m_member_host},
                       s_worker_topo = {"WorkerTopology", m_member_host},
                       s_grafana_topo = {"GrafanaTopology", m_host},
                       s_prometheus_topo = {"PrometheusTopology", m_host},
                       s_alert_topo = {"AlertManagerTopology", m_host};

/* ---- the checks ---- */

/* An array's length; 0 when absent (json-c asserts on anything but an array). */
size_t alen(json_object *a) {
  return json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
}

int oa_fail(oa *o, int32_t code, const char *fmt, ...) {
  char msg[DM_ERROR_MESSAGE_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  dm_error_set(o->err, code, NULL, "%s", msg);
  return -1;
}

void oa_sub(char *out, const char *path, const char *key, int idx) {
  int n = key ? snprintf(out, OA_PATH_MAX, "%s.%s", path, key)
              : snprintf(out, OA_PATH_MAX, "%s[%d]", path, idx);
  if (n < 0)
    out[0] = '\0';
}

static const char *oa_type_name(oa_type t) {
  switch (t) {
  case OA_STR:
    return "a string";
  case OA_INT:
    return "an integer";
  case OA_BOOL:
    return "true or false";
  case OA_OBJ:
    return "an object";
  case OA_ARR_STR:
    return "an array of strings";
  case OA_ARR_OBJ:
    return "an array of objects";
  default:
    return "anything";
  }
}

static const char *json_kind(json_object *v) {
  switch (json_object_get_type(v)) {
  case json_type_string:
    return "a string";
  case json_type_int:
    return "an integer";
  case json_type_double:
    return "a number with a fraction";
  case json_type_boolean:
    return "a boolean";
  case json_type_object:
    return "an object";
  case json_type_array:
    return "an array";
  default:
    return "null";
  }
}

static bool oa_is(json_object *v, oa_type t) {
  switch (t) {
  case OA_STR:
    return json_object_is_type(v, json_type_string);
  case OA_INT:
    return json_object_is_type(v, json_type_int);
  case OA_BOOL:
    return json_object_is_type(v, json_type_boolean);
  case OA_OBJ:
    return json_object_is_type(v, json_type_object);
  case OA_ARR_STR:
  case OA_ARR_OBJ:
    return json_object_is_type(v, json_type_array);
  default:
    return true;
  }
}

/* Is s (n bytes) UTF-8 as YAML takes it: shortest forms, no surrogates, at most U+10FFFF? */
static bool oa_utf8(const unsigned char *s, size_t n) {
  for (size_t i = 0; i < n;) {
    unsigned c = s[i];
    size_t w = c < 0x80             ? 1
               : (c & 0xE0) == 0xC0 ? 2
               : (c & 0xF0) == 0xE0 ? 3
               : (c & 0xF8) == 0xF0 ? 4
                                    : 0;
    if (!w || i + w > n)
      return false;
    unsigned long v = w == 1 ? c : w == 2 ? c & 0x1F : w == 3 ? c & 0x0F : c & 0x07;
    for (size_t k = 1; k < w; k++) {
      if ((s[i + k] & 0xC0) != 0x80)
        return false;
      v = (v << 6) | (s[i + k] & 0x3F);
    }
    static const unsigned long min[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (v < min[w] || (v >= 0xD800 && v <= 0xDFFF) || v > 0x10FFFF)
      return false;
    i += w;
  }
  return true;
}

/* A string holding `\u0000` (C strings and every file would cut it there) or bytes that are not
 * UTF-8 (YAML is UTF-8): refused by its path. */
static int oa_nul(oa *o, json_object *v, const char *path) {
  const char *sv = json_object_get_string(v);
  size_t n = (size_t)json_object_get_string_len(v);
  if (strlen(sv) != n)
    return oa_fail(o, DM_ERR_CONFIG_INVALID, "`%s` holds a NUL character (\\u0000)", path);
  if (!oa_utf8((const unsigned char *)sv, n))
    return oa_fail(o, DM_ERR_CONFIG_INVALID, "`%s` is not UTF-8 text", path);
  return 0;
}

/* `v` (at `path`) against schema `s`: an object, only its members, each of its type and enum,
 * the required ones there. Arrays' items are checked here too (strings, or objects the caller
 * checks with their schema). */
static int oa_check(oa *o, json_object *v, const char *path, const oa_schema *s) {
  if (!json_object_is_type(v, json_type_object))
    return oa_fail(o, DM_ERR_CONFIG_INVALID, "`%s` must be an object (DM's %s), not %s", path,
                   s->name, json_kind(v));
  json_object_object_foreach(v, key, val) {
    const oa_member *m = s->m;
    while (m->name && strcmp(m->name, key) != 0)
      m++;
    char sub[OA_PATH_MAX];
    oa_sub(sub, path, key, 0);
    if (!m->name)
      return oa_fail(o, DM_ERR_CONFIG_UNKNOWN,
                     "`%s`: DM's %s has no member `%s` (dm/openapi/spec/dm.yaml); remove it", sub,
                     s->name, key);
    if (!val || m->type == OA_OUT)
      continue;
    if (!oa_is(val, m->type))
      return oa_fail(o, DM_ERR_CONFIG_INVALID, "`%s` must be %s (DM's %s), not %s", sub,
                     oa_type_name(m->type), s->name, json_kind(val));
    if (m->type == OA_STR && oa_nul(o, val, sub) < 0)
      return -1;
    if (m->type == OA_ARR_STR || m->type == OA_ARR_OBJ) {
      for (size_t i = 0; i < alen(val); i++) {
        json_object *it = json_object_array_get_idx(val, i);
        char isub[OA_PATH_MAX];
        oa_sub(isub, sub, NULL, (int)i);
        oa_type want = m->type == OA_ARR_STR ? OA_STR : OA_OBJ;
        if (!it || !oa_is(it, want))
          return oa_fail(o, DM_ERR_CONFIG_INVALID, "`%s` must be %s, not %s", isub,
                         want == OA_STR ? "a string" : "an object", it ? json_kind(it) : "null");
        if (want == OA_STR && oa_nul(o, it, isub) < 0)
          return -1;
      }
    }
    if (m->enumv) {
      const char *sv = json_object_get_string(val);
      const char *const *e = m->enumv;
      while (*e && strcmp(*e, sv) != 0)
        e++;
      if (!*e) {
        char list[160] = "";
        for (e = m->enumv; *e; e++)
          snprintf(list + strlen(list), sizeof list - strlen(list), "%s\"%s\"",
                   e == m->enumv ? "" : ", ", *e);
        return oa_fail(o, DM_ERR_CONFIG_INVALID, "`%s` is \"%s\"; DM's %s takes %s", sub, sv,
                       s->name, list);
      }
    }
  }
  for (const oa_member *m = s->m; m->name; m++) {
    json_object *val = NULL;
    if (m->required && (!json_object_object_get_ex(v, m->name, &val) || !val)) {
      char sub[OA_PATH_MAX];
      oa_sub(sub, path, m->name, 0);
      return oa_fail(o, DM_ERR_CONFIG_INVALID, "`%s` is required (DM's %s)", sub, s->name);
    }
  }
  return 0;
}

/* A member (NULL when absent or null). */
json_object *oa_get(json_object *v, const char *key) {
  json_object *m = NULL;
  return v && json_object_object_get_ex(v, key, &m) ? m : NULL;
}

const char *oa_str(json_object *v, const char *key) {
  json_object *m = oa_get(v, key);
  return m ? json_object_get_string(m) : NULL;
}

/* TLS given by contents: dmhost's files name PEM files (docs/config.md, "security (TLS)"). */
static int oa_security(oa *o, json_object *sec, const char *path) {
  if (!sec)
    return 0;
  if (oa_check(o, sec, path, &s_security) < 0)
    return -1;
  return oa_fail(o, DM_ERR_CONFIG_UNKNOWN,
                 "`%s`: TLS given by the certificates' contents is not taken by dmhost yet; give "
                 "null, and a source or task file whose `security` names the PEM files "
                 "(docs/config.md, \"security (TLS)\")",
                 path);
}

/* The Source's checks: its members, purge, relay_config, no TLS contents. */
int oa_source_check(oa *o, json_object *src) {
  json_object *purge = oa_get(src, "purge"), *relay = oa_get(src, "relay_config");
  if (oa_check(o, src, "source", &s_source) < 0 ||
      (purge && oa_check(o, purge, "source.purge", &s_purge) < 0) ||
      (relay && oa_check(o, relay, "source.relay_config", &s_relay) < 0) ||
      oa_security(o, oa_get(src, "security"), "source.security") < 0)
    return -1;
  return 0;
}

/* The task's checks beyond oa_check of the top: every nested object, the filter names. */
int oa_task_check(oa *o, json_object *task) {
  if (oa_check(o, task, "task", &s_task) < 0)
    return -1;
  json_object *tgt = oa_get(task, "target_config"), *sc = oa_get(task, "source_config");
  json_object *bf = oa_get(task, "binlog_filter_rule"), *rules = oa_get(task, "table_migrate_rule");
  if (oa_check(o, tgt, "task.target_config", &s_target) < 0 ||
      oa_security(o, oa_get(tgt, "security"), "task.target_config.security") < 0 ||
      (oa_get(tgt, "session") &&
       oa_check(o, oa_get(tgt, "session"), "task.target_config.session", &s_session) < 0) ||
      oa_check(o, sc, "task.source_config", &s_source_config) < 0)
    return -1;
  json_object *full = oa_get(sc, "full_migrate_conf"), *incr = oa_get(sc, "incr_migrate_conf");
  if ((full && oa_check(o, full, "task.source_config.full_migrate_conf", &s_full) < 0) ||
      (full && oa_security(o, oa_get(full, "security"),
                           "task.source_config.full_migrate_conf.security") < 0) ||
      (incr && oa_check(o, incr, "task.source_config.incr_migrate_conf", &s_incr) < 0))
    return -1;
  json_object *confs = oa_get(sc, "source_conf");
  for (size_t i = 0; i < alen(confs); i++) {
    char p[OA_PATH_MAX];
    oa_sub(p, "task.source_config.source_conf", NULL, (int)i);
    if (oa_check(o, json_object_array_get_idx(confs, i), p, &s_source_conf) < 0)
      return -1;
  }
  if (bf) {
    json_object_object_foreach(bf, name, rule) {
      char p[OA_PATH_MAX];
      oa_sub(p, "task.binlog_filter_rule", name, 0);
      if (!rule)
        return oa_fail(o, DM_ERR_CONFIG_INVALID, "`%s` must be an object (DM's %s), not null", p,
                       s_filter.name);
      if (oa_check(o, rule, p, &s_filter) < 0)
        return -1;
    }
  }
  for (size_t i = 0; i < alen(rules); i++) {
    char p[OA_PATH_MAX], sub[OA_PATH_MAX];
    json_object *r = json_object_array_get_idx(rules, i);
    oa_sub(p, "task.table_migrate_rule", NULL, (int)i);
    if (oa_check(o, r, p, &s_migrate) < 0)
      return -1;
    oa_sub(sub, p, "source", 0);
    if (oa_check(o, oa_get(r, "source"), sub, &s_migrate_source) < 0)
      return -1;
    /* DM drops a rule of a source the task does not read; dmhost says so */
    const char *src = oa_str(oa_get(r, "source"), "source_name");
    bool listed = false;
    for (size_t c = 0; c < alen(confs) && !listed; c++)
      listed = strcmp(oa_str(json_object_array_get_idx(confs, c), "source_name"), src) == 0;
    if (!listed)
      return oa_fail(o, DM_ERR_CONFIG_INVALID,
                     "`%s.source_name` names source `%s`, which task.source_config.source_conf "
                     "does not list: add it there or remove the rule",
                     sub, src);
    oa_sub(sub, p, "target", 0);
    if (oa_get(r, "target") && oa_check(o, oa_get(r, "target"), sub, &s_migrate_target) < 0)
      return -1;
    json_object *names = oa_get(r, "binlog_filter_rule");
    for (size_t k = 0; k < alen(names); k++) {
      const char *n = json_object_get_string(json_object_array_get_idx(names, k));
      if (!oa_get(bf, n)) {
        char nsub[OA_PATH_MAX];
        oa_sub(sub, p, "binlog_filter_rule", 0);
        oa_sub(nsub, sub, NULL, (int)k);
        /* DM's own words (task_converters.go), then where */
        return oa_fail(o, DM_ERR_CONFIG_INVALID,
                       "filter rule name %s not found. (`%s`: task.binlog_filter_rule does not "
                       "define it)",
                       n, nsub);
      }
    }
  }
  return 0;
}

int oa_topology_check(oa *o, json_object *topo) {
  if (oa_check(o, topo, "topology", &s_topology) < 0)
    return -1;
  static const struct {
    const char *member;
    const oa_schema *s;
    bool list;
  } parts[] = {{"master_topology_list", &s_master_topo, true},
               {"worker_topology_list", &s_worker_topo, true},
               {"grafana_topology", &s_grafana_topo, false},
               {"prometheus_topology", &s_prometheus_topo, false},
               {"alert_manager_topology", &s_alert_topo, false}};
  for (size_t k = 0; k < sizeof parts / sizeof parts[0]; k++) {
    json_object *v = oa_get(topo, parts[k].member);
    char p[OA_PATH_MAX];
    oa_sub(p, "topology", parts[k].member, 0);
    if (v && !parts[k].list && oa_check(o, v, p, parts[k].s) < 0)
      return -1;
    for (size_t i = 0; v && parts[k].list && i < alen(v); i++) {
      char ip[OA_PATH_MAX];
      oa_sub(ip, p, NULL, (int)i);
      if (oa_check(o, json_object_array_get_idx(v, i), ip, parts[k].s) < 0)
        return -1;
    }
  }
  return 0;
}
