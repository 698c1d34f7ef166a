/* The precheck's item table, its runner and its three outputs (table, DM's JSON, a refusal). */
#include "precheck_internal.h"

#include <stdlib.h>
#include <string.h>

#include "check_items.h"
#include "dmhost/db.h"
#include "dmhost/grants.h"
#include "dmhost/sdk.h"
#include "log.h"

/* When an item applies (any of its bits is true of the task). */
enum {
  PC_DUMP = 1,  /* the mode has a dump */
  PC_SYNC = 2,  /* the mode has a sync */
  PC_RELAY = 4, /* the source's relay is on */
  PC_WRITE = 8, /* the mode writes the target (load or sync) */
  PC_COPY = 16, /* the mode reads source tables (dump or sync) into the target (load or sync) */
};

/* Which connections an item needs. */
enum {
  PC_SOURCE = 1,
  PC_TARGET = 2,
};

/* An item; its name (DM's where DM has the item) is dmh_check_item_names[its row]. */
typedef struct pc_item {
  const char *desc;
  unsigned applies;
  unsigned needs;
  void (*fn)(pc_ctx *c);
  const char *instruction;
} pc_item;

/* The one table of items, a row for each of check_items.h's names (docs/precheck.md describes
 * each). */
static const pc_item pc_items[DMH_CHECK_N_ITEMS] = {
    [DMH_CHECK_VERSION] =
        {"the source server's version is one dmhost supports", PC_DUMP | PC_SYNC | PC_RELAY,
         PC_SOURCE, pc_check_version,
         "Use MariaDB 10.5 or later (tested: 10.11); MySQL is not supported by the sync and relay "
         "(its GTIDs differ)."},
    [DMH_CHECK_SERVER_ID] =
        {"the source's server_id is set and differs from the target's and the replica's",
         PC_SYNC | PC_RELAY, PC_SOURCE, pc_check_server_id,
         "Give the source a non-zero server_id of its own (server_id in its my.cnf, or SET GLOBAL "
         "server_id), and the task's sync (or the source's relay) a server-id no server uses."},
    [DMH_CHECK_BINLOG_ENABLE] = {"the source's binary log is on (log_bin)", PC_SYNC | PC_RELAY,
                                 PC_SOURCE, pc_check_binlog_enable,
                                 "Start the source with log_bin (and a server_id) in its "
                                 "configuration file; log_bin cannot "
                                 "be changed without a restart."},
    [DMH_CHECK_BINLOG_FORMAT] =
        {"the source's binlog_format is ROW", PC_SYNC | PC_RELAY, PC_SOURCE, pc_check_binlog_format,
         "SET GLOBAL binlog_format = 'ROW' on the source (and binlog_format = ROW in its my.cnf); "
         "sessions already open keep their format until they reconnect."},
    [DMH_CHECK_BINLOG_ROW_IMAGE] =
        {"the source's binlog_row_image is FULL", PC_SYNC | PC_RELAY, PC_SOURCE,
         pc_check_binlog_row_image,
         "SET GLOBAL binlog_row_image = 'FULL' on the source (and in its my.cnf)."},
    [DMH_CHECK_DUMP_PRIVILEGE] = {"the source account may dump with the task's consistency",
                                  PC_DUMP, PC_SOURCE, pc_check_dump_privilege,
                                  "GRANT the privileges named ON *.* to the source account, or "
                                  "choose another consistency in "
                                  "the task's dump section (docs/dump.md)."},
    [DMH_CHECK_REPLICATION_PRIVILEGE] =
        {"the source account may read the binlog", PC_SYNC | PC_RELAY, PC_SOURCE,
         pc_check_replication_privilege,
         "GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO the source account (REPLICATION CLIENT "
         "before MariaDB 10.5)."},
    [DMH_CHECK_TARGET_PRIVILEGE] =
        {"the target account may write the routed schemas and the meta schema", PC_WRITE, PC_TARGET,
         pc_check_target_privilege,
         "GRANT SELECT, CREATE, INSERT, UPDATE, DELETE, ALTER, DROP ON each schema named (or ON "
         "*.*) "
         "TO the target account."},
    [DMH_CHECK_TARGET_WRITABLE] =
        {"the target is writable and the meta schema can hold dmhost's tables", PC_WRITE, PC_TARGET,
         pc_check_target_writable,
         "Turn read_only off on the target (SET GLOBAL read_only = OFF) and let the account create "
         "tables in the meta schema, or set meta-schema to a schema it may use."},
    [DMH_CHECK_TABLE_SCHEMA] = {"every replicated table has a primary key or a NOT NULL unique key",
                                PC_SYNC, PC_SOURCE, pc_check_table_schema,
                                "Add a primary key (or a unique key on NOT NULL columns) to the "
                                "tables named: without one a "
                                "row change is applied by matching every column, slowly, and "
                                "duplicate rows cannot be told "
                                "apart."},
    [DMH_CHECK_TARGET_CHARSET] =
        {"the target knows every collation the replicated tables use", PC_COPY,
         PC_SOURCE | PC_TARGET, pc_check_target_charset,
         "Upgrade the target to a version with the collations named, or ALTER the source tables to "
         "a "
         "collation both servers have, or leave the tables out with the block-allow-list."},
    [DMH_CHECK_AUTO_INCREMENT_ID] =
        {"merged tables with an AUTO_INCREMENT key keep their rows apart on the target", PC_COPY,
         PC_SOURCE | PC_TARGET, pc_check_auto_increment,
         "Add an extract column (the route's extract-table, extract-schema or extract-source) to "
         "the target table's key named, so that equal values of different shards are different "
         "rows; or ignore the item (ignore-checking-items = [\"auto_increment_ID\"]) when the "
         "shards' values never collide."},
    [DMH_CHECK_CONN_NUMBER_CHECKING] =
        {"the servers accept the connections the task opens",
         PC_DUMP | PC_SYNC | PC_RELAY | PC_WRITE, PC_SOURCE | PC_TARGET, pc_check_conn_number,
         "Raise max_connections (SET GLOBAL max_connections = N, and in my.cnf) or the account's "
         "MAX_USER_CONNECTIONS, or lower the task's dump threads, load pool-size or sync "
         "worker-count."},
    [DMH_CHECK_RELAY_DISK_SPACE] =
        {"the relay folder's file system has the relay's purge-remain-space free", PC_RELAY, 0,
         pc_check_relay_disk,
         "Free space on the relay folder's file system, move relay-dir, or lower the relay's "
         "purge-remain-space (GB)."},
};

#define PC_N_ITEMS (sizeof pc_items / sizeof pc_items[0])

/* ---- helpers for the items ---- */

static void pc_add(pc_ctx *c, dmh_check_state sev, const char *fmt, va_list ap) {
  dmh_check_result *r = c->cur;
  char *msg = NULL;
  dmh_check_error *e = realloc(r->errors, (size_t)(r->n_errors + 1) * sizeof *e);
  if (!e || vasprintf(&msg, fmt, ap) < 0) {
    if (e)
      r->errors = e;
    c->oom = true;
    return;
  }
  r->errors = e;
  r->errors[r->n_errors++] = (dmh_check_error){.severity = sev, .msg = msg};
  if (sev > r->state)
    r->state = sev;
}

void pc_fail(pc_ctx *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  pc_add(c, DMH_CHECK_FAIL, fmt, ap);
  va_end(ap);
}

void pc_warn(pc_ctx *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  pc_add(c, DMH_CHECK_WARN, fmt, ap);
  va_end(ap);
}

int pc_value(pc_ctx *c, MYSQL *m, const char *sql, char *out, size_t len) {
  out[0] = '\0';
  MYSQL_RES *res = NULL;
  if (mysql_query(m, sql) != 0 || !(res = mysql_store_result(m))) {
    pc_fail(c, "`%s` failed: %s", sql, mysql_error(m));
    return -1;
  }
  MYSQL_ROW row = mysql_fetch_row(res);
  unsigned last = mysql_num_fields(res) - 1;
  if (row && row[last])
    dm_strlcpy(out, row[last], len);
  mysql_free_result(res);
  return 0;
}

long pc_grants(pc_ctx *c, MYSQL *m, const char *schema) {
  MYSQL_RES *res = NULL;
  if (mysql_query(m, "SHOW GRANTS") != 0 || !(res = mysql_store_result(m))) {
    pc_fail(c, "SHOW GRANTS failed: %s", mysql_error(m));
    return -1;
  }
  uint32_t have = 0;
  MYSQL_ROW row;
  while ((row = mysql_fetch_row(res)))
    if (row[0])
      have |= dm_grant_line(row[0], schema);
  mysql_free_result(res);
  return (long)have;
}

const char *pc_where(const dm_db_endpoint *ep, char *buf, size_t len) {
  snprintf(buf, len, "`%s` on %s:%d", ep->user ? ep->user : "", ep->host ? ep->host : "127.0.0.1",
           ep->port);
  return buf;
}

static config_setting_t *pc_section(pc_ctx *c, dm_unit_kind kind) {
  return kind == DM_UNIT_RELAY ? dmh_source_unit_section(c->src)
                               : dmh_task_unit_section(c->task, kind);
}

long long pc_unit_int(pc_ctx *c, dm_unit_kind kind, const char *key, long long def) {
  config_setting_t *g = pc_section(c, kind);
  long long v;
  return g && config_setting_lookup_int64(g, key, &v) == CONFIG_TRUE ? v : def;
}

const char *pc_unit_string(pc_ctx *c, dm_unit_kind kind, const char *key) {
  config_setting_t *g = pc_section(c, kind);
  const char *v;
  return g && config_setting_lookup_string(g, key, &v) == CONFIG_TRUE ? v : NULL;
}

/* ---- the run ---- */

static bool pc_ignored(const dmh_task_config *t, size_t item) {
  return dmh_check_item_ignored(t->ignore_checks, t->n_ignore_checks, (dmh_check_item)item);
}

static MYSQL *pc_connect(const dmh_db_config *db, const char *group, dm_db_side side,
                         dm_error *why) {
  dm_db_connect_opts o = {.who = "precheck",
                          .side = side,
                          .connect_timeout_s = 5,
                          .read_timeout_s = 30,
                          .write_timeout_s = 30,
                          .endpoint_size = (uint32_t)sizeof(dm_db_endpoint)};
  MYSQL *m = dm_db_connect(&db->ep, &o, why);
  if (!m)
    dmh_db_config_hint(db, group, why);
  return m;
}

static dmh_check_result *pc_new_result(dmh_precheck *pc, const pc_item *it, const char *source_id) {
  if (pc->n == pc->cap) {
    int cap = pc->cap ? pc->cap * 2 : 16;
    dmh_check_result *r = realloc(pc->results, (size_t)cap * sizeof *r);
    if (!r)
      return NULL;
    pc->results = r;
    pc->cap = cap;
  }
  dmh_check_result *r = &pc->results[pc->n];
  *r = (dmh_check_result){.name = dmh_check_item_names[it - pc_items],
                          .desc = it->desc,
                          .instruction = it->instruction};
  if (!(r->source_id = strdup(source_id)))
    return NULL;
  pc->n++;
  return r;
}

int dmh_precheck_run(dmh_precheck *pc, const dmh_task_config *t, const dmh_source_config *s,
                     dm_error *err) {
  pc_ctx c = {.task = t, .src = s, .inst = dmh_task_instance_for(t, s->source_id)};
  /* the built-in units of the chain; a custom kind checks what it needs itself */
  for (int i = 0; i < t->n_chain; i++) {
    c.dump |= t->chain[i].kind == DM_UNIT_DUMP;
    c.load |= t->chain[i].kind == DM_UNIT_LOAD;
    c.sync |= t->chain[i].kind == DM_UNIT_SYNC;
  }
  c.relay = s->enable_relay;
  unsigned mode = (c.dump ? PC_DUMP : 0) | (c.sync ? PC_SYNC : 0) | (c.relay ? PC_RELAY : 0) |
                  (c.load || c.sync ? PC_WRITE : 0) |
                  ((c.dump || c.sync) && (c.load || c.sync) ? PC_COPY : 0);
  /* mode load reads nothing of the source: its items never connect to it */
  unsigned avail = PC_TARGET | (mode & (PC_DUMP | PC_SYNC | PC_RELAY) ? PC_SOURCE : 0);
  if (!(c.rules = dmh_rules_new(c.inst, err)))
    return -1;
  unsigned needs = 0;
  for (size_t i = 0; i < PC_N_ITEMS; i++)
    if ((pc_items[i].applies & mode) && !pc_ignored(t, i))
      needs |= pc_items[i].needs & avail;
  dm_error src_err = {0}, dst_err = {0};
  if (needs & PC_SOURCE)
    c.source = pc_connect(&s->from, "from", DM_DB_SOURCE, &src_err);
  if (needs & PC_TARGET)
    c.target = pc_connect(&t->target, "target-database", DM_DB_TARGET, &dst_err);
  int rc = 0;
  for (size_t i = 0; i < PC_N_ITEMS && rc == 0; i++) {
    const pc_item *it = &pc_items[i];
    if (!(it->applies & mode) || pc_ignored(t, i))
      continue;
    if (!(c.cur = pc_new_result(pc, it, s->source_id))) {
      rc = -1;
      break;
    }
    if ((it->needs & avail & PC_SOURCE) && !c.source)
      pc_fail(&c, "not checked: %s", src_err.message);
    else if ((it->needs & avail & PC_TARGET) && !c.target)
      pc_fail(&c, "not checked: %s", dst_err.message);
    else
      it->fn(&c);
    if (c.oom)
      rc = -1;
    pc->n_pass += c.cur->state == DMH_CHECK_PASS;
    pc->n_warn += c.cur->state == DMH_CHECK_WARN;
    pc->n_fail += c.cur->state == DMH_CHECK_FAIL;
  }
  if (c.source)
    mysql_close(c.source);
  if (c.target)
    mysql_close(c.target);
  dmh_rules_free(c.rules);
  free(c.tables);
  if (rc < 0)
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "precheck: out of memory");
  return rc;
}

void dmh_precheck_free(dmh_precheck *pc) {
  for (int i = 0; i < pc->n; i++) {
    dmh_check_result *r = &pc->results[i];
    for (int k = 0; k < r->n_errors; k++)
      free(r->errors[k].msg);
    free(r->errors);
    free(r->source_id);
  }
  free(pc->results);
  *pc = (dmh_precheck){0};
}

/* ---- outputs ---- */

static const char *pc_state_name(dmh_check_state s) {
  return s == DMH_CHECK_FAIL ? "fail" : s == DMH_CHECK_WARN ? "warn" : "pass";
}

json_object *dmh_precheck_json(const dmh_precheck *pc) {
  json_object *o = json_object_new_object(), *sum = json_object_new_object();
  json_object_object_add(sum, "passed", json_object_new_boolean(pc->n_fail == 0));
  json_object_object_add(sum, "total", json_object_new_int(pc->n));
  json_object_object_add(sum, "successful", json_object_new_int(pc->n_pass));
  json_object_object_add(sum, "failed", json_object_new_int(pc->n_fail));
  json_object_object_add(sum, "warning", json_object_new_int(pc->n_warn));
  json_object_object_add(o, "summary", sum);
  json_object *arr = json_object_new_array();
  for (int i = 0; i < pc->n; i++) {
    const dmh_check_result *r = &pc->results[i];
    json_object *j = json_object_new_object();
    json_object_object_add(j, "id", json_object_new_int(i + 1));
    json_object_object_add(j, "name", json_object_new_string(r->name));
    json_object_object_add(j, "desc", json_object_new_string(r->desc));
    json_object_object_add(j, "state", json_object_new_string(pc_state_name(r->state)));
    if (r->n_errors) {
      json_object *errs = json_object_new_array();
      for (int k = 0; k < r->n_errors; k++) {
        json_object *e = json_object_new_object();
        json_object_object_add(e, "severity",
                               json_object_new_string(pc_state_name(r->errors[k].severity)));
        json_object_object_add(e, "short_error", json_object_new_string(r->errors[k].msg));
        json_object_array_add(errs, e);
      }
      json_object_object_add(j, "errors", errs);
    }
    if (r->state != DMH_CHECK_PASS)
      json_object_object_add(j, "instruction", json_object_new_string(r->instruction));
    json_object_object_add(j, "extra", json_object_new_string(r->source_id));
    json_object_array_add(arr, j);
  }
  json_object_object_add(o, "results", arr);
  return o;
}

void dmh_precheck_print(const dmh_precheck *pc, FILE *out) {
  fprintf(out, "%-5s %-22s %-12s %s\n", "STATE", "ITEM", "SOURCE", "CHECKS");
  for (int i = 0; i < pc->n; i++) {
    const dmh_check_result *r = &pc->results[i];
    fprintf(out, "%-5s %-22s %-12s %s\n", pc_state_name(r->state), r->name, r->source_id, r->desc);
    for (int k = 0; k < r->n_errors; k++)
      fprintf(out, "      %s: %s\n", pc_state_name(r->errors[k].severity), r->errors[k].msg);
    if (r->state != DMH_CHECK_PASS)
      fprintf(out, "      fix: %s\n", r->instruction);
  }
  fprintf(out, "%d checked: %d passed, %d warnings, %d failed\n", pc->n, pc->n_pass, pc->n_warn,
          pc->n_fail);
}

int dmh_precheck_refusal(const dmh_precheck *pc, const char *what, dm_error *err) {
  if (pc->n_fail == 0)
    return 0;
  char list[DM_ERROR_MESSAGE_MAX];
  size_t at = 0;
  for (int i = 0; i < pc->n && at < sizeof list; i++) {
    const dmh_check_result *r = &pc->results[i];
    if (r->state != DMH_CHECK_FAIL)
      continue;
    const char *first = "";
    for (int k = 0; k < r->n_errors && !first[0]; k++)
      if (r->errors[k].severity == DMH_CHECK_FAIL)
        first = r->errors[k].msg;
    at += (size_t)snprintf(list + at, sizeof list - at, "%s%s (%s): %s", at ? "; " : "", r->name,
                           r->source_id, first);
  }
  char summary[160];
  snprintf(summary, sizeof summary,
           "%d of %d item(s) failed, %d warning(s); `dmhost check` or `dmctl check-task` prints "
           "each with its fix",
           pc->n_fail, pc->n, pc->n_warn);
  dm_error_set(err, DM_ERR_PRECHECK_FAILED, summary, "%s: the precheck failed: %s", what, list);
  return -1;
}

int dmh_precheck_answer(const dmh_precheck *pc, const char *what, json_object *resp,
                        dm_error *err) {
  if (pc->n_fail || pc->n_warn || strncmp(what, "check-task", 10) == 0)
    json_object_object_add(resp, "checkResult", dmh_precheck_json(pc));
  return dmh_precheck_refusal(pc, what, err);
}

int dmh_precheck_gate(const dmh_task_config *t, const dmh_source_config *s, const char *what,
                      dm_error *err) {
  dmh_precheck pc = {0};
  int rc = dmh_precheck_run(&pc, t, s, err);
  for (int i = 0; rc == 0 && i < pc.n; i++)
    for (int k = 0; k < pc.results[i].n_errors; k++)
      if (pc.results[i].errors[k].severity == DMH_CHECK_WARN)
        dmh_log(DM_LOG_WARN, "precheck", "%s (%s): %s", pc.results[i].name, pc.results[i].source_id,
                pc.results[i].errors[k].msg);
  if (rc == 0)
    rc = dmh_precheck_refusal(&pc, what, err);
  dmh_precheck_free(&pc);
  return rc;
}
