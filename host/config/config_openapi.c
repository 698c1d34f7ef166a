/*
 * DM's OpenAPI Source and Task into DM's YAML source and task files (config_openapi.h), as DM's
 * OpenAPISourceToSourceCfg and OpenAPITaskToSubTaskConfigs + SubTaskConfigsToTaskConfig build
 * them. Each object is first checked against its schema (config_openapi_schema.c): DM's Go decoder
 * drops a member it does not know, dmhost refuses it by its JSON path, so that nothing sent is
 * ignored without a word. The YAML document is built with libyaml's
 * document API and written by its emitter: every string is one scalar quoted as libyaml quotes it
 * (a newline or `: ` in a password cannot make a second key), and a string that YAML 1.1 would
 * read as a boolean, number or null (`true`, `0`, `~`) is double-quoted, so it stays a string.
 */
#include "config_openapi.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_openapi_internal.h"
#include "config_yaml_internal.h"
#include "dmhost/sdk.h"

/* ---- the YAML document ---- */

static int y_node(oa *o, int id) {
  if (!id)
    o->oom = true;
  return id;
}

static int y_map(oa *o) {
  return y_node(o, yaml_document_add_mapping(&o->doc, NULL, YAML_BLOCK_MAPPING_STYLE));
}

static int y_seq(oa *o) {
  return y_node(o, yaml_document_add_sequence(&o->doc, NULL, YAML_BLOCK_SEQUENCE_STYLE));
}

/* A string: plain where YAML 1.1 reads it back as that string (the reader's own yscalar says),
 * double-quoted where it would read a boolean, number or null; libyaml quotes what plain cannot
 * hold (`: `, a newline, a leading `*`). */
static int y_str(oa *o, const char *s) {
  yaml_node_t probe = {.type = YAML_SCALAR_NODE};
  probe.data.scalar.value = (yaml_char_t *)s;
  probe.data.scalar.length = strlen(s);
  probe.data.scalar.style = YAML_PLAIN_SCALAR_STYLE;
  yaml_scalar_style_t style = yscalar(&probe, NULL, NULL) == YS_STR
                                  ? YAML_ANY_SCALAR_STYLE
                                  : YAML_DOUBLE_QUOTED_SCALAR_STYLE;
  return y_node(
      o, yaml_document_add_scalar(&o->doc, NULL, (const yaml_char_t *)s, (int)strlen(s), style));
}

static int y_lit(oa *o, const char *s) {
  return y_node(o, yaml_document_add_scalar(&o->doc, NULL, (const yaml_char_t *)s, (int)strlen(s),
                                            YAML_PLAIN_SCALAR_STYLE));
}

static int y_int(oa *o, long long v) {
  char b[32];
  snprintf(b, sizeof b, "%lld", v);
  return y_lit(o, b);
}

static void y_put(oa *o, int map, const char *key, int value) {
  int k = y_lit(o, key);
  if (map && k && value && !yaml_document_append_mapping_pair(&o->doc, map, k, value))
    o->oom = true;
}

static void y_add(oa *o, int seq, int item) {
  if (seq && item && !yaml_document_append_sequence_item(&o->doc, seq, item))
    o->oom = true;
}

/* A JSON member of `from` as a YAML value under `key` of `map`, when present: a string, integer,
 * boolean or an array of strings (the types oa_check let through). */
static void y_copy(oa *o, int map, const char *key, json_object *from, const char *member) {
  json_object *v = oa_get(from, member);
  if (!v)
    return;
  int node = 0;
  switch (json_object_get_type(v)) {
  case json_type_string:
    node = y_str(o, json_object_get_string(v));
    break;
  case json_type_int:
    node = y_int(o, (long long)json_object_get_int64(v));
    break;
  case json_type_boolean:
    node = y_lit(o, json_object_get_boolean(v) ? "true" : "false");
    break;
  case json_type_array:
    node = y_seq(o);
    for (size_t i = 0; i < alen(v); i++)
      y_add(o, node, y_str(o, json_object_get_string(json_object_array_get_idx(v, i))));
    break;
  default:
    return;
  }
  y_put(o, map, key, node);
}

static int y_write(void *data, unsigned char *buffer, size_t size) {
  yout *out = data;
  yo_put(out, (const char *)buffer, size);
  return !out->b.oom && !out->big;
}

/* The document as text into *yaml (the document is gone after, as yaml_emitter_dump leaves it). */
static int y_emit(oa *o, char **yaml) {
  yout out = {.line = 1};
  yaml_emitter_t e;
  if (o->oom || !yaml_emitter_initialize(&e)) {
    yaml_document_delete(&o->doc);
    o->doc_live = false;
    return oa_fail(o, DM_ERR_CONFIG_INVALID, "out of memory writing DM's YAML");
  }
  yaml_emitter_set_output(&e, y_write, &out);
  yaml_emitter_set_unicode(&e, 1);
  yaml_emitter_set_width(&e, -1);
  yaml_emitter_set_indent(&e, 2);
  int ok = yaml_emitter_open(&e) && yaml_emitter_dump(&e, &o->doc) && yaml_emitter_close(&e) &&
           yaml_emitter_flush(&e);
  o->doc_live = false;
  const char *problem = e.problem;
  yaml_emitter_delete(&e);
  if (!ok || out.b.oom || out.big) {
    dm_buf_free(&out.b);
    return oa_fail(o, DM_ERR_CONFIG_INVALID, "DM's YAML could not be written: %s",
                   out.big   ? "it is too long"
                   : problem ? problem
                             : "out of memory");
  }
  *yaml = out.b.p;
  return 0;
}

static int oa_begin(oa *o, dm_error *err) {
  memset(o, 0, sizeof *o);
  o->err = err;
  if (!yaml_document_initialize(&o->doc, NULL, NULL, NULL, 1, 1))
    return oa_fail(o, DM_ERR_CONFIG_INVALID, "out of memory writing DM's YAML");
  o->doc_live = true;
  return 0;
}

static int oa_end(oa *o, int rc) {
  if (o->doc_live)
    yaml_document_delete(&o->doc);
  o->doc_live = false;
  return rc;
}

int dmh_openapi_topology_check(json_object *topology, dm_error *err) {
  oa o = {.err = err};
  return oa_topology_check(&o, topology);
}

/* ---- Source ---- */

int dmh_openapi_source_to_yaml(json_object *src, char **yaml, dm_error *err) {
  oa o;
  *yaml = NULL;
  if (oa_begin(&o, err) < 0)
    return -1;
  json_object *purge = oa_get(src, "purge"), *relay = oa_get(src, "relay_config");
  if (oa_source_check(&o, src) < 0)
    return oa_end(&o, -1);
  int root = y_map(&o);
  y_copy(&o, root, "source-id", src, "source_name");
  y_copy(&o, root, "enable-gtid", src, "enable_gtid");
  /* `enable` is no setting of the file: the source's stage, kept by whoever creates it */
  y_copy(&o, root, "flavor", src, "flavor");
  if (relay) {
    y_copy(&o, root, "enable-relay", relay, "enable_relay");
    /* DM's default `./relay_log` is relative to dm-worker's folder: dmhost's default (the state
     * dir's) is the place of a relative one; an absolute one is kept */
    const char *dir = oa_str(relay, "relay_dir");
    if (dir && dir[0] == '/')
      y_put(&o, root, "relay-dir", y_str(&o, dir));
    y_copy(&o, root, "relay-binlog-name", relay, "relay_binlog_name");
    y_copy(&o, root, "relay-binlog-gtid", relay, "relay_binlog_gtid");
  }
  int from = y_map(&o);
  y_copy(&o, from, "host", src, "host");
  y_copy(&o, from, "port", src, "port");
  y_copy(&o, from, "user", src, "user");
  y_copy(&o, from, "password", src, "password");
  y_put(&o, root, "from", from);
  if (purge) {
    int p = y_map(&o);
    y_copy(&o, p, "interval", purge, "interval");
    y_copy(&o, p, "expires", purge, "expires");
    y_copy(&o, p, "remain-space", purge, "remain_space");
    y_put(&o, root, "purge", p);
  }
  return oa_end(&o, y_emit(&o, yaml));
}

/* ---- Task ---- */

/* DM's generated rule names (task.go getGenerateName): "route-01", "balist-01", ... */
static void oa_name(char *out, size_t size, const char *prefix, int n) {
  snprintf(out, size, "%s-%02d", prefix, n);
}

/* The unit configs of full_migrate_conf and incr_migrate_conf (one of each: every instance names
 * it, as dmhost runs one dump, load and sync section per task); has[k]: mydumpers, loaders,
 * syncers got one. */
static void oa_units(oa *o, json_object *task, int root, bool has[3]) {
  json_object *sc = oa_get(task, "source_config");
  json_object *full = oa_get(sc, "full_migrate_conf"), *incr = oa_get(sc, "incr_migrate_conf");
  int dump = y_map(o), load = y_map(o), sync = y_map(o);
  if (full) {
    y_copy(o, dump, "threads", full, "export_threads");
    const char *cons = oa_str(full, "consistency");
    if (cons) { /* DM's converter writes exactly this form (OpenAPITaskToSubTaskConfigs) */
      char b[256];
      snprintf(b, sizeof b, "--consistency %s", cons);
      y_put(o, dump, "extra-args", y_str(o, b));
    }
    /* the loader's keys: the YAML reader honours, accepts or refuses each (config_yaml_dm.c) */
    static const char *const loader[][2] = {
        {"pool-size", "import_threads"},
        {"dir", "data_dir"},
        {"import-mode", "import_mode"},
        {"sorting-dir-physical", "sorting_dir"},
        {"disk-quota-physical", "disk_quota"},
        {"checksum-physical", "checksum"},
        {"analyze", "analyze"},
        {"range-concurrency", "range_concurrency"},
        {"compress-kv-pairs", "compress-kv-pairs"},
        {"pd-addr", "pd_addr"},
        {"on-duplicate-physical", "on_duplicate_physical"},
        {"on-duplicate-logical", "on_duplicate_logical"},
    };
    for (size_t i = 0; i < sizeof loader / sizeof *loader; i++)
      y_copy(o, load, loader[i][0], full, loader[i][1]);
  }
  /* DM reads on_duplicate_logical only; dmhost honours on_duplicate where it is absent */
  if (!oa_get(full, "on_duplicate_logical"))
    y_copy(o, load, "on-duplicate", task, "on_duplicate");
  if (incr) {
    y_copy(o, sync, "worker-count", incr, "repl_threads");
    y_copy(o, sync, "batch", incr, "repl_batch");
    y_copy(o, sync, "safe-mode", incr, "safe_mode");
  }
  const char *maps[3] = {"mydumpers", "loaders", "syncers"}, *names[3] = {"dump", "load", "sync"};
  int nodes[3] = {dump, load, sync};
  for (int k = 0; k < 3; k++) {
    yaml_node_t *n = yaml_document_get_node(&o->doc, nodes[k]);
    has[k] = n && n->data.mapping.pairs.top != n->data.mapping.pairs.start;
    if (!has[k])
      continue;
    char nm[32];
    oa_name(nm, sizeof nm, names[k], 1);
    int m = y_map(o);
    y_put(o, m, nm, nodes[k]);
    y_put(o, root, maps[k], m);
  }
}

int dmh_openapi_task_to_yaml(json_object *task, char **yaml, dm_error *err) {
  oa o;
  *yaml = NULL;
  if (oa_begin(&o, err) < 0)
    return -1;
  if (oa_task_check(&o, task) < 0)
    return oa_end(&o, -1);
  int root = y_map(&o);
  y_copy(&o, root, "name", task, "name");
  y_copy(&o, root, "task-mode", task, "task_mode");
  if (oa_get(task, "shard_mode")) {
    y_put(&o, root, "is-sharding", y_lit(&o, "true"));
    y_copy(&o, root, "shard-mode", task, "shard_mode");
  }
  y_copy(&o, root, "strict-optimistic-shard-mode", task, "strict_optimistic_shard_mode");
  y_copy(&o, root, "meta-schema", task, "meta_schema");
  const char *tz = oa_str(task, "timezone");
  if (tz && tz[0]) /* DM: omitted or empty is the target's zone */
    y_put(&o, root, "timezone", y_str(&o, tz));
  y_copy(&o, root, "online-ddl", task, "enhance_online_schema_change");
  json_object *ign = oa_get(task, "ignore_checking_items");
  if (ign && alen(ign))
    y_copy(&o, root, "ignore-checking-items", task, "ignore_checking_items");

  json_object *tgt = oa_get(task, "target_config");
  int td = y_map(&o);
  y_copy(&o, td, "host", tgt, "host");
  y_copy(&o, td, "port", tgt, "port");
  y_copy(&o, td, "user", tgt, "user");
  y_copy(&o, td, "password", tgt, "password");
  json_object *sess = oa_get(tgt, "session");
  if (oa_get(sess, "foreign_key_checks")) {
    int s = y_map(&o);
    y_copy(&o, s, "foreign_key_checks", sess, "foreign_key_checks");
    y_put(&o, td, "session", s);
  }
  y_put(&o, root, "target-database", td);

  bool has[3];
  oa_units(&o, task, root, has);

  json_object *sc = oa_get(task, "source_config"), *confs = oa_get(sc, "source_conf");
  json_object *rules = oa_get(task, "table_migrate_rule"), *bf = oa_get(task, "binlog_filter_rule");
  int insts = y_seq(&o), bals = y_map(&o), routes = y_map(&o), filters = y_map(&o);
  int n_bal = 0, n_route = 0, n_filter = 0;
  for (size_t i = 0; i < alen(confs); i++) {
    json_object *c = json_object_array_get_idx(confs, i);
    const char *src = oa_str(c, "source_name");
    int inst = y_map(&o);
    y_put(&o, inst, "source-id", y_str(&o, src));
    /* DM's fixture sends binlog_pos 0 and binlog_gtid "": nothing said (dmhost's meta needs a
     * position of at least 4, which binlog-name alone gives) */
    const char *bn = oa_str(c, "binlog_name"), *gtid = oa_str(c, "binlog_gtid");
    json_object *pos = oa_get(c, "binlog_pos");
    if ((bn && bn[0]) || (gtid && gtid[0]) || (pos && json_object_get_int64(pos) != 0)) {
      int meta = y_map(&o);
      if (bn && bn[0])
        y_put(&o, meta, "binlog-name", y_str(&o, bn));
      if (pos && json_object_get_int64(pos) != 0)
        y_copy(&o, meta, "binlog-pos", c, "binlog_pos");
      if (gtid && gtid[0])
        y_put(&o, meta, "binlog-gtid", y_str(&o, gtid));
      y_put(&o, inst, "meta", meta);
    }
    int do_dbs = y_seq(&o), do_tables = y_seq(&o), rr = y_seq(&o), fr = y_seq(&o);
    int n_dbs = 0, n_tables = 0, n_rr = 0, n_fr = 0;
    for (size_t j = 0; j < alen(rules); j++) {
      json_object *r = json_object_array_get_idx(rules, j), *rs = oa_get(r, "source");
      if (strcmp(oa_str(rs, "source_name"), src) != 0)
        continue;
      const char *schema = oa_str(rs, "schema"), *table = oa_str(rs, "table");
      json_object *t = oa_get(r, "target");
      char name[32];
      if (t && (oa_get(t, "schema") || oa_get(t, "table"))) {
        oa_name(name, sizeof name, "route", ++n_route);
        int route = y_map(&o);
        y_put(&o, route, "schema-pattern", y_str(&o, schema));
        if (table[0])
          y_put(&o, route, "table-pattern", y_str(&o, table));
        y_put(&o, route, "target-schema",
              y_str(&o, oa_str(t, "schema") ? oa_str(t, "schema") : ""));
        if (oa_str(t, "table") && oa_str(t, "table")[0])
          y_copy(&o, route, "target-table", t, "table");
        y_put(&o, routes, name, route);
        y_add(&o, rr, y_str(&o, name));
        n_rr++;
      }
      json_object *names = oa_get(r, "binlog_filter_rule");
      for (size_t k = 0; k < alen(names); k++) {
        json_object *tmpl = oa_get(bf, json_object_get_string(json_object_array_get_idx(names, k)));
        oa_name(name, sizeof name, "filter", ++n_filter);
        int f = y_map(&o);
        y_put(&o, f, "schema-pattern", y_str(&o, schema));
        if (table[0])
          y_put(&o, f, "table-pattern", y_str(&o, table));
        y_copy(&o, f, "events", tmpl, "ignore_event");
        y_copy(&o, f, "sql-pattern", tmpl, "ignore_sql");
        y_put(&o, f, "action", y_lit(&o, "Ignore"));
        y_put(&o, filters, name, f);
        y_add(&o, fr, y_str(&o, name));
        n_fr++;
      }
      if (table[0]) {
        int dt = y_map(&o);
        y_put(&o, dt, "db-name", y_str(&o, schema));
        y_put(&o, dt, "tbl-name", y_str(&o, table));
        y_add(&o, do_tables, dt);
        n_tables++;
      } else {
        /* DM removes duplicates from do-dbs (removeDuplication) */
        bool seen = false;
        for (size_t q = 0; q < j && !seen; q++) {
          json_object *qs = oa_get(json_object_array_get_idx(rules, q), "source");
          seen = strcmp(oa_str(qs, "source_name"), src) == 0 && !oa_str(qs, "table")[0] &&
                 strcmp(oa_str(qs, "schema"), schema) == 0;
        }
        if (!seen) {
          y_add(&o, do_dbs, y_str(&o, schema));
          n_dbs++;
        }
      }
    }
    if (n_dbs || n_tables) {
      char name[32];
      oa_name(name, sizeof name, "balist", ++n_bal);
      int bal = y_map(&o);
      if (n_dbs)
        y_put(&o, bal, "do-dbs", do_dbs);
      if (n_tables)
        y_put(&o, bal, "do-tables", do_tables);
      y_put(&o, bals, name, bal);
      y_put(&o, inst, "block-allow-list", y_str(&o, name));
    }
    if (n_rr)
      y_put(&o, inst, "route-rules", rr);
    if (n_fr)
      y_put(&o, inst, "filter-rules", fr);
    const char *cfg_keys[3] = {"mydumper-config-name", "loader-config-name", "syncer-config-name"};
    const char *cfg_names[3] = {"dump-01", "load-01", "sync-01"};
    for (int k = 0; k < 3; k++)
      if (has[k])
        y_put(&o, inst, cfg_keys[k], y_str(&o, cfg_names[k]));
    y_add(&o, insts, inst);
  }
  y_put(&o, root, "mysql-instances", insts);
  if (n_bal)
    y_put(&o, root, "block-allow-list", bals);
  if (n_route)
    y_put(&o, root, "routes", routes);
  if (n_filter)
    y_put(&o, root, "filters", filters);
  return oa_end(&o, y_emit(&o, yaml));
}
