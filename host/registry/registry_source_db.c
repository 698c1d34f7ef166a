/* source-schemas and task-tables: what the bound source holds (DM's GET .../sources/{name}/schemas
 * and .../tasks/{t}/sources/{s}/migrate_targets), read from the source over one short connection. */
#include "registry_internal.h"

#include <mysql.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmhost/db.h"
#include "dmhost/sdk.h"
#include "match.h"
#include "rules.h"

static MYSQL *reg_source_connect(const reg_source *s, const char *cmd, dm_error *err) {
  dm_db_connect_opts o = {.who = cmd,
                          .side = DM_DB_SOURCE,
                          .connect_timeout_s = 5,
                          .read_timeout_s = 30,
                          .write_timeout_s = 30,
                          .endpoint_size = (uint32_t)sizeof(dm_db_endpoint)};
  return dm_db_connect(&s->cfg->from.ep, &o, err);
}

static int reg_name_cmp(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Run `sql` on m and add column 0 of each row to a new array, sorted; rows whose column 1 is
 * "VIEW" are left out (SHOW FULL TABLES), as are system schemas when `schemas`. NULL with *err. */
static json_object *reg_names(MYSQL *m, const char *sql, bool schemas, const char *cmd,
                              dm_error *err) {
  if (mysql_query(m, sql) != 0) {
    dm_db_error(m, DM_DB_SOURCE, err, DM_ERR_DB_QUERY, "%s: %s", cmd, sql);
    return NULL;
  }
  MYSQL_RES *res = mysql_store_result(m);
  if (!res) {
    dm_db_error(m, DM_DB_SOURCE, err, DM_ERR_DB_QUERY, "%s: %s", cmd, sql);
    return NULL;
  }
  size_t n = 0, cap = (size_t)mysql_num_rows(res) + 1;
  const char **names = calloc(cap, sizeof *names);
  json_object *arr = names ? json_object_new_array() : NULL;
  MYSQL_ROW row;
  while (arr && (row = mysql_fetch_row(res))) {
    if (!row[0] || (schemas && dmh_rules_is_system_schema(row[0])))
      continue;
    if (!schemas && mysql_num_fields(res) > 1 && row[1] && strcmp(row[1], "VIEW") == 0)
      continue;
    names[n++] = row[0];
  }
  if (arr) {
    qsort(names, n, sizeof *names, reg_name_cmp);
    for (size_t i = 0; i < n; i++)
      json_object_array_add(arr, json_object_new_string(names[i]));
  } else {
    reg_oom(err, "listing the source's names");
  }
  free(names);
  mysql_free_result(res);
  return arr;
}

/* The schemas of the source but the system ones (tidb dbutil's GetSchemas), or NULL. */
static json_object *reg_schemas(MYSQL *m, const char *cmd, dm_error *err) {
  return reg_names(m, "SHOW DATABASES", true, cmd, err);
}

/* The tables of db that are not views (DM's conn.GetTables), or NULL. */
static json_object *reg_tables(MYSQL *m, const char *db, const char *cmd, dm_error *err) {
  char *q = dm_db_quote_ident_dup(db);
  char *sql = q ? reg_printf("SHOW FULL TABLES IN %s WHERE Table_Type != 'VIEW'", q) : NULL;
  json_object *arr = NULL;
  if (!sql)
    reg_oom(err, "listing the source's tables");
  else
    arr = reg_names(m, sql, false, cmd, err);
  free(q);
  free(sql);
  return arr;
}

int dmh_registry_source_schemas(dmh_registry *r, const char *source, const char *db,
                                json_object *resp, dm_error *err) {
  reg_source *s = reg_bound_source(r, "source-schemas", source, "", err);
  if (!s)
    return -1;
  MYSQL *m = reg_source_connect(s, "source-schemas", err);
  json_object *arr = !m   ? NULL
                     : db ? reg_tables(m, db, "source-schemas", err)
                          : reg_schemas(m, "source-schemas", err);
  if (m)
    mysql_close(m);
  reg_source_unref(r, s);
  if (!arr)
    return -1;
  json_object_object_add(resp, db ? "tables" : "schemas", arr);
  return 0;
}

/* A pattern of DM's (Go regexp, searched in the name) compiled into *re; -1 with *err naming it. */
static int reg_pattern(const char *what, const char *expr, regex_t *re, dm_error *err) {
  char why[256];
  if (dmh_regex_compile(re, expr, false, why, sizeof why) == 0)
    return 0;
  dm_error_set(err, DM_ERR_CONTROL_REQUEST, NULL,
               "task-tables: %s \"%s\" is not a regular expression: %s", what, expr, why);
  return -1;
}

/* Each table of schema db the rules keep (and table_re finds), routed, into targets. */
static int reg_targets_of(MYSQL *m, const dmh_rules *rules, const char *db, const regex_t *table_re,
                          json_object *targets, dm_error *err) {
  json_object *tables = reg_tables(m, db, "task-tables", err);
  if (!tables)
    return -1;
  for (size_t i = 0; i < json_object_array_length(tables); i++) {
    const char *t = json_object_get_string(json_object_array_get_idx(tables, i));
    if ((table_re && regexec(table_re, t, 0, NULL, 0) != 0) ||
        !dmh_rules_table_allowed(rules, db, t))
      continue;
    char ts[256], tt[256];
    dmh_rules_route(rules, db, t, ts, sizeof ts, tt, sizeof tt);
    json_object *o = json_object_new_object();
    json_object_object_add(o, "source_schema", json_object_new_string(db));
    json_object_object_add(o, "source_table", json_object_new_string(t));
    json_object_object_add(o, "target_schema", json_object_new_string(ts));
    json_object_object_add(o, "target_table", json_object_new_string(tt));
    json_object_array_add(targets, o);
  }
  json_object_put(tables);
  return 0;
}

int dmh_registry_task_tables(dmh_registry *r, const char *name, const char *source,
                             const char *schema_re, const char *table_re, json_object *resp,
                             dm_error *err) {
  reg_task *t = reg_get_task(r, "task-tables", name, err);
  if (!t)
    return -1;
  reg_source *s = NULL;
  dmh_rules *rules = NULL;
  MYSQL *m = NULL;
  json_object *schemas = NULL, *targets = NULL;
  regex_t sre, tre;
  bool has_sre = false, has_tre = false;
  int rc = -1;
  /* the config is replaced only under cmd_lock (update-task): held while the rules compile */
  if (!reg_lock_task(r, t, "task-tables", err))
    goto out;
  const dmh_task_instance *inst = t->cfg ? dmh_task_instance_for(t->cfg, source) : NULL;
  if (inst)
    rules = dmh_rules_new(inst, err);
  else if (!t->cfg)
    *err = t->load_err;
  else
    dm_error_set(err, DM_ERR_NOT_FOUND, NULL,
                 "task-tables: task %s does not read source %s (its mysql-instances)", name,
                 source);
  pthread_mutex_unlock(&t->cmd_lock);
  if (!rules)
    goto out;
  if (schema_re) {
    if (reg_pattern("schema pattern", schema_re, &sre, err) < 0)
      goto out;
    has_sre = true;
  }
  if (table_re) {
    if (reg_pattern("table pattern", table_re, &tre, err) < 0)
      goto out;
    has_tre = true;
  }
  if (!(s = reg_bound_source(r, "task-tables", source, "", err)) ||
      !(m = reg_source_connect(s, "task-tables", err)) ||
      !(schemas = reg_schemas(m, "task-tables", err)))
    goto out;
  targets = json_object_new_array();
  for (size_t i = 0; i < json_object_array_length(schemas); i++) {
    const char *db = json_object_get_string(json_object_array_get_idx(schemas, i));
    if ((has_sre && regexec(&sre, db, 0, NULL, 0) != 0) ||
        !dmh_rules_table_allowed(rules, db, NULL))
      continue;
    if (reg_targets_of(m, rules, db, has_tre ? &tre : NULL, targets, err) < 0)
      goto out;
  }
  json_object_object_add(resp, "targets", targets);
  targets = NULL;
  rc = 0;
out:
  if (has_sre)
    regfree(&sre);
  if (has_tre)
    regfree(&tre);
  json_object_put(targets);
  json_object_put(schemas);
  if (m)
    mysql_close(m);
  dmh_rules_free(rules);
  reg_source_unref(r, s);
  reg_task_unref(r, t);
  return rc;
}
