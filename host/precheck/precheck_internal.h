/*
 * Inside the precheck (precheck.h): the run's context handed to each item, and the items, one file
 * per kind of check: precheck_source.c (version, server_id, binlog settings, source privileges),
 * precheck_target.c (target privileges, writable target and meta schema), precheck_tables.c (keys
 * and collations of the replicated tables, merged tables' AUTO_INCREMENT keys), precheck_limits.c
 * (connection limits, relay disk).
 */
#ifndef DMH_PRECHECK_INTERNAL_H
#define DMH_PRECHECK_INTERNAL_H

#include <mysql.h>
#include <stdarg.h>

#include "precheck.h"
#include "rules.h"

/* A replicated table of the source and the schema it is routed to on the target. */
typedef struct pc_table {
  char schema[256], table[256], to_schema[256], to_table[256];
} pc_table;

typedef struct pc_ctx {
  const dmh_task_config *task;
  const dmh_source_config *src;
  const dmh_task_instance *inst;
  dmh_rules *rules;
  MYSQL *source, *target;       /* NULL when the item needs none, or the connection failed */
  bool dump, load, sync, relay; /* what runs: the task mode's units, the source's relay */
  pc_table *tables;             /* pc_tables: listed once per run */
  int n_tables;
  bool listed;
  dmh_check_result *cur; /* the item being run */
  bool oom;
} pc_ctx;

/* Add a finding to the current item (its state becomes the worst of its findings). */
void pc_fail(pc_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void pc_warn(pc_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The last column of the first row of sql into out ("" for NULL or no row; the last, so that
 * SHOW ... LIKE gives its value): 0, or -1 having failed the current item with the server's
 * error. */
int pc_value(pc_ctx *c, MYSQL *m, const char *sql, char *out, size_t len);
/* The privilege bits of the account of m on schema (dm_grant_line; NULL: any schema), or -1
 * having failed the current item. */
long pc_grants(pc_ctx *c, MYSQL *m, const char *schema);
/* "user@host:port" of the source or the target, for messages. */
const char *pc_where(const dm_db_endpoint *ep, char *buf, size_t len);
/* An integer setting of a unit section (dump, load, sync in the task; relay in the source), or def
 * when absent. */
long long pc_unit_int(pc_ctx *c, dm_unit_kind kind, const char *key, long long def);
const char *pc_unit_string(pc_ctx *c, dm_unit_kind kind, const char *key);

/* The source's base tables the task's rules let through, listed once (0), or -1 having failed the
 * current item. */
int pc_tables(pc_ctx *c);

/* The items (precheck_*.c). */
void pc_check_version(pc_ctx *c);
void pc_check_server_id(pc_ctx *c);
void pc_check_binlog_enable(pc_ctx *c);
void pc_check_binlog_format(pc_ctx *c);
void pc_check_binlog_row_image(pc_ctx *c);
void pc_check_dump_privilege(pc_ctx *c);
void pc_check_replication_privilege(pc_ctx *c);
void pc_check_target_privilege(pc_ctx *c);
void pc_check_target_writable(pc_ctx *c);
void pc_check_table_schema(pc_ctx *c);
void pc_check_target_charset(pc_ctx *c);
void pc_check_auto_increment(pc_ctx *c);
void pc_check_conn_number(pc_ctx *c);
void pc_check_relay_disk(pc_ctx *c);

#endif /* DMH_PRECHECK_INTERNAL_H */
