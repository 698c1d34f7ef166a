/*
 * The way back (config_openapi.h): a loaded task or source config as DM's Task or Source, the
 * fields DM's SubTaskConfigsToOpenAPITask and SourceCfgToOpenAPISource give
 * (dm/config/task_converters.go, source_converter.go). Where DM fills a unit setting with its own
 * default (export_threads 4, import_threads 16, repl_batch 100), dmhost gives the setting only when
 * the task sets it: an absent one is the unit's default (docs/dump.md, load.md, sync.md), which
 * the config room does not know.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config_openapi.h"
#include "dmhost/sdk.h"

/* DM's ObfuscatedPasswordForFeedback: a source's password is never given back. */
#define OA_OBFUSCATED "******"

static json_object *jstr(const char *s) {
  return json_object_new_string(s ? s : "");
}

/* A unit section's integer, string or boolean into `o` under `key`, when set. */
static void unit_copy(json_object *o, const char *key, const dmh_task_config *t, dm_unit_kind kind,
                      const char *setting) {
  config_setting_t *sec = dmh_task_unit_section(t, kind);
  config_setting_t *s = sec ? config_setting_get_member(sec, setting) : NULL;
  if (!s)
    return;
  switch (config_setting_type(s)) {
  case CONFIG_TYPE_INT:
  case CONFIG_TYPE_INT64:
    json_object_object_add(o, key, json_object_new_int64(config_setting_get_int64(s)));
    break;
  case CONFIG_TYPE_STRING:
    json_object_object_add(o, key, jstr(config_setting_get_string(s)));
    break;
  case CONFIG_TYPE_BOOL:
    json_object_object_add(o, key, json_object_new_boolean(config_setting_get_bool(s)));
    break;
  default:
    break;
  }
}

/* DM hides TLS contents: a connection with TLS answers the Security object with them empty. */
static json_object *hidden_security(void) {
  json_object *s = json_object_new_object();
  json_object_object_add(s, "ssl_ca_content", jstr(""));
  json_object_object_add(s, "ssl_cert_content", jstr(""));
  json_object_object_add(s, "ssl_key_content", jstr(""));
  json_object_object_add(s, "cert_allowed_cn", json_object_new_array());
  return s;
}

static json_object *strv(char *const *v, int n) {
  json_object *a = json_object_new_array();
  for (int i = 0; i < n; i++)
    json_object_array_add(a, jstr(v[i]));
  return a;
}

/* DM's genFilterRuleName */
static void filter_name(char *out, size_t size, const char *source, int idx) {
  snprintf(out, size, "%s-filter-rule-%d", source, idx);
}

/* Does filter `f` name exactly the rule's schema and table ("": none)? */
static bool filter_fits(const dmh_filter_rule *f, const char *schema, const char *table) {
  return strcmp(f->schema_pattern, schema) == 0 &&
         strcmp(f->table_pattern ? f->table_pattern : "", table) == 0;
}

/* Does filter `f` fit one of the instance's rules (its routes, do-dbs, do-tables)? */
static bool filter_fits_any(const dmh_task_instance *in, const dmh_filter_rule *f) {
  for (int r = 0; r < in->n_routes; r++)
    if (filter_fits(f, in->routes[r]->schema_pattern,
                    in->routes[r]->table_pattern ? in->routes[r]->table_pattern : ""))
      return true;
  for (int d = 0; in->bal && d < in->bal->n_do_dbs; d++)
    if (filter_fits(f, in->bal->do_dbs[d], ""))
      return true;
  for (int d = 0; in->bal && d < in->bal->n_do_tables; d++)
    if (filter_fits(f, in->bal->do_tables[d].db, in->bal->do_tables[d].table))
      return true;
  return false;
}

/* One table_migrate_rule, unless one of the same source, schema and table is there (DM's ruleKey).
 * Its binlog_filter_rule: the source's Ignore filters written for exactly this schema and table
 * (what the way in writes), and those that fit no rule of the source. DM names every filter of the
 * source on every rule, which the way in then applies to every rule's tables: a task converted
 * twice would gain filters. */
static void add_rule(json_object *list, const dmh_task_instance *in, const char *schema,
                     const char *table, const char *target_schema, const char *target_table) {
  for (size_t i = 0; i < json_object_array_length(list); i++) {
    json_object *s = NULL, *r = json_object_array_get_idx(list, i);
    json_object_object_get_ex(r, "source", &s);
    if (strcmp(json_object_get_string(json_object_object_get(s, "source_name")), in->source_id) ==
            0 &&
        strcmp(json_object_get_string(json_object_object_get(s, "schema")), schema) == 0 &&
        strcmp(json_object_get_string(json_object_object_get(s, "table")), table) == 0)
      return;
  }
  json_object *r = json_object_new_object(), *s = json_object_new_object();
  json_object_object_add(s, "source_name", jstr(in->source_id));
  json_object_object_add(s, "schema", jstr(schema));
  json_object_object_add(s, "table", jstr(table));
  json_object_object_add(r, "source", s);
  if (target_schema && target_schema[0]) {
    json_object *t = json_object_new_object();
    json_object_object_add(t, "schema", jstr(target_schema));
    if (target_table && target_table[0])
      json_object_object_add(t, "table", jstr(target_table));
    json_object_object_add(r, "target", t);
  }
  json_object *names = json_object_new_array();
  for (int f = 0, idx = 0; f < in->n_filters; f++) {
    const dmh_filter_rule *fr = in->filters[f];
    if (fr->action != DMH_FILTER_IGNORE)
      continue;
    if (filter_fits(fr, schema, table) || !filter_fits_any(in, fr)) {
      char nm[320];
      filter_name(nm, sizeof nm, in->source_id, idx);
      json_object_array_add(names, jstr(nm));
    }
    idx++;
  }
  if (json_object_array_length(names))
    json_object_object_add(r, "binlog_filter_rule", names);
  else
    json_object_put(names);
  json_object_array_add(list, r);
}

json_object *dmh_openapi_task_from_config(const dmh_task_config *t, dm_error *err) {
  json_object *task = json_object_new_object();
  if (!task) {
    dm_error_set(err, DM_ERR_CONFIG_INVALID, NULL, "out of memory");
    return NULL;
  }
  json_object_object_add(task, "name", jstr(t->name));
  json_object_object_add(task, "task_mode", jstr(dmh_task_mode_name(t->mode)));
  if (t->shard_mode == DM_SHARD_MODE_PESSIMISTIC || t->shard_mode == DM_SHARD_MODE_OPTIMISTIC)
    json_object_object_add(
        task, "shard_mode",
        jstr(t->shard_mode == DM_SHARD_MODE_PESSIMISTIC ? "pessimistic" : "optimistic"));
  json_object_object_add(task, "strict_optimistic_shard_mode",
                         json_object_new_boolean(t->strict_optimistic));
  json_object_object_add(task, "meta_schema", jstr(t->meta_schema));
  unit_copy(task, "timezone", t, DM_UNIT_SYNC, "timezone");
  json_object_object_add(task, "enhance_online_schema_change",
                         json_object_new_boolean(t->online_ddl));
  /* required by DM's schema: the load's, else its default (DM's and dmhost's: replace) */
  json_object_object_add(task, "on_duplicate", jstr("replace"));
  unit_copy(task, "on_duplicate", t, DM_UNIT_LOAD, "on-duplicate");

  json_object *tc = json_object_new_object();
  json_object_object_add(tc, "host", jstr(t->target.ep.host));
  json_object_object_add(tc, "port", json_object_new_int(t->target.ep.port));
  json_object_object_add(tc, "user", jstr(t->target.ep.user));
  json_object_object_add(tc, "password", jstr(t->target.ep.password));
  if (t->target.ep.ssl_ca)
    json_object_object_add(tc, "security", hidden_security());
  /* DM's projectTargetSession: foreign_key_checks only, as "0" or "1" */
  const dm_db_session_var *sv = t->target.ep.session;
  for (int i = 0; sv && i < t->target.ep.n_session; i++) {
    if (strcasecmp(sv[i].name, "foreign_key_checks") != 0)
      continue;
    bool on = strcmp(sv[i].value, "1") == 0 || strcasecmp(sv[i].value, "ON") == 0 ||
              strcasecmp(sv[i].value, "true") == 0;
    json_object *s = json_object_new_object();
    json_object_object_add(s, "foreign_key_checks", jstr(on ? "1" : "0"));
    json_object_object_add(tc, "session", s);
    break;
  }
  json_object_object_add(task, "target_config", tc);

  /* filters: DM's OpenAPI filters are Ignore templates; a Do or Error rule has no Task field */
  json_object *bf = json_object_new_object();
  int n_bf = 0;
  json_object *rules = json_object_new_array(), *confs = json_object_new_array();
  for (int i = 0; i < t->n_instances; i++) {
    const dmh_task_instance *in = &t->instances[i];
    json_object *c = json_object_new_object();
    json_object_object_add(c, "source_name", jstr(in->source_id));
    if (in->meta_binlog_name || in->meta_binlog_gtid) {
      json_object_object_add(c, "binlog_name", jstr(in->meta_binlog_name));
      json_object_object_add(c, "binlog_pos", json_object_new_int64((int64_t)in->meta_binlog_pos));
      json_object_object_add(c, "binlog_gtid", jstr(in->meta_binlog_gtid));
    }
    json_object_array_add(confs, c);
    int nf = 0;
    for (int f = 0; f < in->n_filters; f++) {
      const dmh_filter_rule *fr = in->filters[f];
      if (fr->action != DMH_FILTER_IGNORE)
        continue;
      json_object *r = json_object_new_object();
      if (fr->n_events)
        json_object_object_add(r, "ignore_event", strv(fr->events, fr->n_events));
      if (fr->n_sql_patterns)
        json_object_object_add(r, "ignore_sql", strv(fr->sql_patterns, fr->n_sql_patterns));
      char nm[320];
      filter_name(nm, sizeof nm, in->source_id, nf++);
      json_object_object_add(bf, nm, r);
      n_bf++;
    }
    /* DM: rules from the routes first, then the block-allow list's do-dbs and do-tables */
    for (int r = 0; r < in->n_routes; r++) {
      const dmh_route_rule *rt = in->routes[r];
      add_rule(rules, in, rt->schema_pattern, rt->table_pattern ? rt->table_pattern : "",
               rt->target_schema, rt->target_table);
    }
    for (int d = 0; in->bal && d < in->bal->n_do_dbs; d++)
      add_rule(rules, in, in->bal->do_dbs[d], "", NULL, NULL);
    for (int d = 0; in->bal && d < in->bal->n_do_tables; d++)
      add_rule(rules, in, in->bal->do_tables[d].db, in->bal->do_tables[d].table, NULL, NULL);
  }
  if (n_bf)
    json_object_object_add(task, "binlog_filter_rule", bf);
  else
    json_object_put(bf);
  json_object_object_add(task, "table_migrate_rule", rules);

  json_object *sc = json_object_new_object(), *full = json_object_new_object(),
              *incr = json_object_new_object();
  unit_copy(full, "export_threads", t, DM_UNIT_DUMP, "threads");
  unit_copy(full, "data_dir", t, DM_UNIT_LOAD, "dir");
  unit_copy(full, "import_threads", t, DM_UNIT_LOAD, "pool-size");
  json_object_object_add(full, "import_mode", jstr("logical")); /* the only one dmhost does */
  unit_copy(full, "consistency", t, DM_UNIT_DUMP, "consistency");
  unit_copy(incr, "repl_batch", t, DM_UNIT_SYNC, "batch");
  unit_copy(incr, "repl_threads", t, DM_UNIT_SYNC, "worker-count");
  unit_copy(incr, "safe_mode", t, DM_UNIT_SYNC, "safe-mode");
  json_object_object_add(sc, "full_migrate_conf", full);
  json_object_object_add(sc, "incr_migrate_conf", incr);
  json_object_object_add(sc, "source_conf", confs);
  json_object_object_add(task, "source_config", sc);
  if (t->n_ignore_checks)
    json_object_object_add(task, "ignore_checking_items",
                           strv(t->ignore_checks, t->n_ignore_checks));
  return task;
}

json_object *dmh_openapi_source_from_config(const dmh_source_config *s, dm_error *err) {
  json_object *o = json_object_new_object();
  if (!o) {
    dm_error_set(err, DM_ERR_CONFIG_INVALID, NULL, "out of memory");
    return NULL;
  }
  json_object_object_add(o, "source_name", jstr(s->source_id));
  json_object_object_add(o, "host", jstr(s->from.ep.host));
  json_object_object_add(o, "port", json_object_new_int(s->from.ep.port));
  json_object_object_add(o, "user", jstr(s->from.ep.user));
  json_object_object_add(o, "password", jstr(OA_OBFUSCATED));
  json_object_object_add(o, "enable_gtid", json_object_new_boolean(s->enable_gtid));
  /* the source's stage is not in its file: a loaded source is enabled until whoever keeps the
   * stage says otherwise */
  json_object_object_add(o, "enable", json_object_new_boolean(true));
  if (s->from.ep.ssl_ca)
    json_object_object_add(o, "security", hidden_security());
  /* dmhost does not purge the relay by age: DM's defaults, which mean the same */
  json_object *p = json_object_new_object();
  json_object_object_add(p, "interval", json_object_new_int(3600));
  json_object_object_add(p, "expires", json_object_new_int(0));
  json_object_object_add(p, "remain_space", json_object_new_int(15));
  json_object_object_add(o, "purge", p);
  json_object *r = json_object_new_object();
  json_object_object_add(r, "enable_relay", json_object_new_boolean(s->enable_relay));
  json_object_object_add(r, "relay_binlog_name", jstr(""));
  json_object_object_add(r, "relay_binlog_gtid", jstr(""));
  json_object_object_add(r, "relay_dir", jstr(s->relay_dir));
  json_object_object_add(o, "relay_config", r);
  return o;
}
