/*
 * Source and task files (libconfig syntax, DM's vocabulary). Parsing validates everything the host
 * itself understands and rejects unknown settings, naming file, line and setting. Unit sections
 * (`dump`, `load`, `sync` in the task file, `relay` in the source file) are kept as libconfig
 * settings and checked by the host's config services against what the unit looked up (see
 * services.c).
 */
#ifndef DMH_CONFIG_H
#define DMH_CONFIG_H

#include <libconfig.h>
#include <stdbool.h>
#include <stdint.h>

#include "dmhost/error.h"
#include "dmhost/host.h"
#include "dmhost/shard.h"
#include "dmhost/unit.h"

/* Indexes into per-kind tables (unit-paths). */
typedef enum dmh_kind_index {
  DMH_KIND_DUMP = 0,
  DMH_KIND_LOAD = 1,
  DMH_KIND_SYNC = 2,
  DMH_KIND_RELAY = 3,
  DMH_KIND_COUNT = 4,
} dmh_kind_index;

typedef enum dmh_task_mode {
  DMH_MODE_ALL = 0,         /* dump -> load -> sync */
  DMH_MODE_FULL = 1,        /* dump -> load */
  DMH_MODE_INCREMENTAL = 2, /* sync */
  DMH_MODE_DUMP = 3,        /* dump */
  DMH_MODE_LOAD = 4,        /* load */
  DMH_MODE_LOAD_SYNC = 5,   /* load -> sync ("load&sync") */
  DMH_MODE_CUSTOM = 6,      /* `units = [...]` names a chain no task-mode gives ("custom") */
} dmh_task_mode;

/* A task's chain: at most DMH_CHAIN_MAX units, naming at most DMH_CUSTOM_MAX custom kinds. */
#define DMH_CHAIN_MAX 4
#define DMH_CUSTOM_MAX 4
/* unit-paths slots of a task: the built-in kinds at their dmh_kind_index, then the task's custom
 * kinds in the order `units` names them (DMH_KIND_COUNT + i for custom_names[i]). */
#define DMH_UNIT_SLOTS (DMH_KIND_COUNT + DMH_CUSTOM_MAX)
#define DMH_KIND_NAME_MAX 32 /* a custom kind's name, NUL included */

/* One unit of a task's chain. */
typedef struct dmh_chain_unit {
  dm_unit_kind kind; /* DM_UNIT_DUMP, _LOAD, _SYNC or DM_UNIT_CUSTOM */
  int slot;          /* its unit-paths slot (above) */
  const char *name;  /* "dump", "load", "sync" or the custom kind's name: its section in the task
                        file, its work folder, its key in query-status (<name>Status) */
} dmh_chain_unit;

/* "all", "full", "incremental", "dump", "load", "load&sync" (and "custom" for DMH_MODE_CUSTOM,
 * which parse does not accept: a task says `units` instead). */
const char *dmh_task_mode_name(dmh_task_mode mode);
int dmh_task_mode_parse(const char *s, dmh_task_mode *out);
/* The chain of unit kinds a mode runs, in order; returns its length (1..3). */
int dmh_task_mode_chain(dmh_task_mode mode, dm_unit_kind chain[3]);

/* dm_unit_kind <-> index and name ("dump", "load", "sync", "relay"). */
int dmh_kind_index_of(dm_unit_kind kind); /* -1 for custom kinds */
dm_unit_kind dmh_kind_of_index(int index);
const char *dmh_kind_name(dm_unit_kind kind);
int dmh_kind_parse(const char *s, dm_unit_kind *out);

/* A database endpoint with owned strings (the public view is the `ep` member). */
typedef struct dmh_db_config {
  dm_db_endpoint ep; /* host, port, user, password, socket: all strings owned here */
  /* `password` had DM's encrypted shape (secret.h DMH_DM_FORM_*): a refused account's message
   * says the key may be another (never the password) */
  int password_dm_form;
} dmh_db_config;

/* block-allow-list rule set (DM's names). Tables are "db.table" pairs; a name is a DM wildcard,
 * or, starting with '~', a regular expression in DM's (RE2) dialect (match.h). */
typedef struct dmh_table_ref {
  char *db;
  char *table;
} dmh_table_ref;

typedef struct dmh_bal_rule {
  char *name;
  char **do_dbs;
  int n_do_dbs;
  char **ignore_dbs;
  int n_ignore_dbs;
  dmh_table_ref *do_tables;
  int n_do_tables;
  dmh_table_ref *ignore_tables;
  int n_ignore_tables;
} dmh_bal_rule;

/* A route's extract groups (DM's extract-table, extract-schema, extract-source), in DM's order:
 * the order their columns are appended to a row. */
typedef enum dmh_extract_kind {
  DMH_EXTRACT_TABLE = 0,
  DMH_EXTRACT_SCHEMA = 1,
  DMH_EXTRACT_SOURCE = 2,
  DMH_EXTRACT_KINDS = 3,
} dmh_extract_kind;

typedef struct dmh_route_rule {
  char *name;
  char *schema_pattern; /* required */
  char *table_pattern;  /* NULL: the rule applies to the schema */
  char *target_schema;  /* required */
  char *target_table;   /* NULL: table name kept */
  /* by dmh_extract_kind: the regexp (RE2, checked when read) and the target column it fills;
   * both NULL when the route has no such group */
  char *extract_regexp[DMH_EXTRACT_KINDS];
  char *extract_column[DMH_EXTRACT_KINDS];
} dmh_route_rule;

/* A filter rule's action, DM's: Do (apply only what matches), Ignore (skip what matches), Error
 * (stop the sync at what matches: docs/sync.md "Filters"). */
typedef enum dmh_filter_action {
  DMH_FILTER_DO = 0,
  DMH_FILTER_IGNORE,
  DMH_FILTER_ERROR,
} dmh_filter_action;

typedef struct dmh_filter_rule {
  char *name;
  char *schema_pattern; /* required */
  char *table_pattern;  /* may be NULL */
  char **events;        /* DM's event names: "all dml", "insert", "drop table", ... */
  int n_events;
  char **sql_patterns; /* regular expressions */
  int n_sql_patterns;
  dmh_filter_action action;
} dmh_filter_rule;

/* An expression-filter rule, DM's: a SQL expression on the rows of one source table (exact names);
 * a row for which it is true is not replayed (docs/sync.md, "Expression filters"). One kind per
 * rule: insert, update (old and/or new row: both must hold) or delete; the others are NULL. */
typedef struct dmh_expr_rule {
  char *name;
  char *schema, *table;
  char *insert_expr;
  char *update_old_expr, *update_new_expr;
  char *delete_expr;
} dmh_expr_rule;

/* One entry of mysql-instances: the source it reads and the rules that apply. */
typedef struct dmh_task_instance {
  char *source_id;
  const dmh_bal_rule *bal;       /* NULL: everything but system schemas */
  const dmh_route_rule **routes; /* resolved from route-rules names */
  int n_routes;
  const dmh_filter_rule **filters; /* resolved from filter-rules names */
  int n_filters;
  const dmh_expr_rule **exprs; /* resolved from expression-filters names */
  int n_exprs;
  bool case_sensitive; /* the task's case-sensitive: names and patterns compared as they are */
  /* the task's online-ddl and its rules (borrowed from the task config; NULL: DM's defaults) */
  bool online_ddl;
  char *const *shadow_rules;
  int n_shadow_rules;
  char *const *trash_rules;
  int n_trash_rules;
  /* meta: where mode incremental starts (binlog-name/binlog-pos or binlog-gtid) */
  char *meta_binlog_name;
  uint64_t meta_binlog_pos;
  char *meta_binlog_gtid;
} dmh_task_instance;

/* Timing of the subtask supervisor (the `supervisor` group of the task file; all optional, the
 * defaults are the settings table's, config_settings.def). */
typedef struct dmh_supervisor_config {
  uint32_t init_timeout_ms;          /* init-timeout (s) */
  uint32_t stop_timeout_ms;          /* stop-timeout (s): wait for a unit to return */
  uint32_t relay_catchup_timeout_ms; /* relay-catchup-timeout (s) */
  uint32_t relay_catchup_poll_ms;    /* relay-catchup-poll (ms) */
  bool auto_resume;                  /* auto-resume.enable */
  uint32_t auto_resume_initial_ms;   /* auto-resume.backoff-initial (s) */
  uint32_t auto_resume_max_ms;       /* auto-resume.backoff-max (s) */
} dmh_supervisor_config;

typedef struct dmh_source_config {
  char *path;      /* the file it was read from */
  char *source_id; /* source-id (required) */
  bool enable_gtid;
  bool enable_relay;
  bool enable;        /* enable (DM's): read by operate-source create and update only */
  char *relay_dir;    /* relay-dir; default "relay" beside the source file, absolute */
  uint32_t server_id; /* server-id used when pulling the binlog; default derived from source-id */
  dmh_db_config from; /* from (required) */
  char *unit_paths[DMH_KIND_COUNT]; /* unit-paths: only relay is allowed here; NULL = default */
  uint32_t file_mode; /* file-mode: of the relay's files (folders: dm_fs_dir_mode), default 0600 */
  config_t cfg;       /* the parsed tree, for the relay unit's section */
} dmh_source_config;

typedef struct dmh_task_config {
  char *path;
  char *name; /* name (required) */
  dmh_task_mode mode;
  char *meta_schema;    /* meta-schema, default "dm_meta" */
  dmh_db_config target; /* target-database (required) */
  dmh_task_instance *instances;
  int n_instances;
  dmh_bal_rule *bal_rules;
  int n_bal_rules;
  dmh_route_rule *routes;
  int n_routes;
  dmh_filter_rule *filters;
  int n_filters;
  dmh_expr_rule *exprs; /* expression-filter */
  int n_exprs;
  bool case_sensitive; /* case-sensitive (DM's name), default false: names folded (match.h) */
  /* unit-paths by slot (DMH_UNIT_SLOTS above): dump, load, sync and the custom kinds; relay is
   * refused here. NULL: the default build of a built-in kind (a custom kind must have one). */
  char *unit_paths[DMH_UNIT_SLOTS];
  dmh_chain_unit chain[DMH_CHAIN_MAX]; /* from `units`, or the chain of task-mode */
  int n_chain;
  int chain_line;                     /* line of `units` (or `task-mode`) in the file */
  char *custom_names[DMH_CUSTOM_MAX]; /* the custom kinds `units` names, in order */
  int n_custom;
  dmh_supervisor_config sup;
  uint32_t file_mode;   /* file-mode: of the files the task's units create, default 0600 */
  char **ignore_checks; /* ignore-checking-items: precheck items skipped (precheck.h), or "all" */
  int n_ignore_checks;
  dm_shard_mode shard_mode; /* shard-mode (is-sharding = true: pessimistic), default NONE */
  bool strict_optimistic;   /* strict-optimistic-shard-mode */
  /* collation_compatible (DM's spelling): "strict" is true, "loose" (the default) false */
  bool collation_strict;
  /* online-ddl (online-ddl-scheme sets it too) and its rules, checked as regular expressions when
   * read; none given: DM's defaults (dmh_rules_new) */
  bool online_ddl;
  char **shadow_rules;
  int n_shadow_rules;
  char **trash_rules;
  int n_trash_rules;
  config_t cfg; /* the parsed tree, for the unit sections */
} dmh_task_config;

/* The supervisor timing a task gets when its file says nothing (also a relay's). */
extern const dmh_supervisor_config dmh_supervisor_defaults;

/* Where a config's text comes from, which decides what it may ask of the daemon (docs/security.md,
 * "Configs sent over the network"). A file the operator placed (a path on the command line of
 * `dmhost run|serve|check`, or named by an admitted client of the control plane) may name files
 * the daemon reads secrets or code from; text sent in a request ("content" over HTTP, dmctl
 * --master-addr) or read from etcd by a worker may not: whoever can send it is not shown to hold
 * those files. */
typedef enum dmh_cfg_origin {
  DMH_CFG_OPERATOR = 0,
  DMH_CFG_SUBMITTED = 1,
} dmh_cfg_origin;

/* The load's provenance and what the daemon was started allowing for submitted text. */
typedef struct dmh_cfg_trust {
  dmh_cfg_origin origin;
  /* --secrets-dir (absolute, real path; NULL: none): submitted text may name a password-file,
   * secret-key-path or security.ssl-key below it. */
  const char *secrets_dir;
  /* --allow-submitted-unit-paths: submitted text may set unit-paths (the unit folders still
   * apply, loader.h). */
  bool allow_unit_paths;
} dmh_cfg_trust;

/* The read limits: a config file and each file it @includes, and a secret file. */
#define DMH_CFG_TEXT_MAX (1024 * 1024)
#define DMH_CFG_SECRET_MAX 4096

/* Load and validate. On error fill *err (code DM_ERR_CONFIG_*, message naming file:line and the
 * setting) and return -1. Without `trust` (or with origin DMH_CFG_OPERATOR) the file is the
 * operator's; with DMH_CFG_SUBMITTED, password-file, password-env, secret-key-path and
 * security.ssl-key outside trust->secrets_dir (DM_ERR_CONFIG_SUBMITTED_SECRET), unit-paths
 * without trust->allow_unit_paths (DM_ERR_CONFIG_SUBMITTED_UNIT_PATH), a file-mode other than
 * 0600 (DM_ERR_CONFIG_SUBMITTED_FILE_MODE) and @include (DM_ERR_CONFIG_SUBMITTED_INCLUDE) are
 * refused, each naming file:line. */
int dmh_source_config_load(const char *path, dmh_source_config **out, dm_error *err);

/* A file's text as a master keeps it in etcd (docs/cluster.md, "The cluster key"), the password
 * of its database group `group` ("from", "target-database") out of it in clear: a non-empty
 * `password` or a `password-encrypted` becomes `password-encrypted` with the cluster key `key`
 * (`plain`: the password as the file's load gave it) and `secret-key-path` is dropped, the text
 * written again by libconfig; a text with no password, an empty one, `password-file` or
 * `password-env` (references to a secret on the workers) is kept as it is. Without a key, a clear
 * password is DM_ERR_CLUSTER_CLEAR_PASSWORD and `password-encrypted` DM_ERR_CLUSTER_KEY. *out
 * malloc'd. 0, or -1 with err. */
int dmh_config_seal_password(const char *text, const char *group, const char *plain,
                             const unsigned char *key, char **out, dm_error *err);
/* operate-source update --keep-password (DM's update with a null password): the libconfig text of
 * the source file `path` (DM's YAML converted) with its `from` group's password settings
 * (password, password-encrypted, password-file, password-env) replaced by those of `old`, the
 * stored copy's, and old's secret-key-path kept. *out malloc'd. 0, or -1 with err. */
int dmh_config_carry_password(const char *path, const dmh_source_config *old, char **out,
                              dm_error *err);
int dmh_task_config_load(const char *path, dmh_task_config **out, dm_error *err);
int dmh_source_config_load_as(const char *path, const dmh_cfg_trust *trust, dmh_source_config **out,
                              dm_error *err);
int dmh_task_config_load_as(const char *path, const dmh_cfg_trust *trust, dmh_task_config **out,
                            dm_error *err);
void dmh_source_config_free(dmh_source_config *c);

/* A refused account (DM_ERR_DB_CONNECT, server error 1045) of database group `group` ("from",
 * "target-database") whose `password` had DM's encrypted shape: CFB has no tag, so a key other
 * than DM's decrypts into another password and "access denied" is the only sign (secret.h). The
 * message of e then says the key may be another, never the password; else e is left as it is. */
void dmh_db_config_hint(const dmh_db_config *db, const char *group, dm_error *e);
void dmh_task_config_free(dmh_task_config *c);

/* The server-id a source's binlog is pulled with when no file sets one (FNV-1a of source-id; the
 * relay unit derives the same). */
uint32_t dmh_source_default_server_id(const char *source_id);

/* Both files of `dmhost run` and `dmhost check`: the task must read the source (an entry of
 * mysql-instances with its source-id, else DM_ERR_CONFIG_INVALID). Nothing is kept on error. */
int dmh_config_load_pair(const char *source_path, const char *task_path, dmh_source_config **source,
                         dmh_task_config **task, dm_error *err);

/* The unit's section ("dump", "load", "sync" in the task; "relay" in the source), or NULL. */
config_setting_t *dmh_task_unit_section(const dmh_task_config *t, dm_unit_kind kind);
/* The section of the chain's unit named `name` (a built-in or a custom kind), or NULL. */
config_setting_t *dmh_task_section_named(const dmh_task_config *t, const char *name);
/* The string setting `key` of the section of the chain's unit `name` set to `value` (the section
 * made when the file has none: *made true, as a context made before has no pointer to it), over
 * what the file says: a setting given for one run, as DM's start options (registry_start_opts.c).
 * -1 when the task has no such unit, its `name` is not a group, or out of memory. */
int dmh_task_section_set_string(dmh_task_config *t, const char *name, const char *key,
                                const char *value, bool *made);
/* The unit-paths slot of a kind of the task by its name ("sync", a custom kind), -1 when the task
 * has no such kind (relay included). */
int dmh_task_slot_of(const dmh_task_config *t, const char *name);
/* The name of a slot: a built-in kind's or the task's custom kind's; NULL when unused. */
const char *dmh_task_slot_name(const dmh_task_config *t, int slot);
config_setting_t *dmh_source_unit_section(const dmh_source_config *s);

/* The instance of the task reading `source_id`, or NULL. */
const dmh_task_instance *dmh_task_instance_for(const dmh_task_config *t, const char *source_id);

/* Is `path` one of DM's YAML files, read as they are (docs/config.md, "DM's YAML files")? By its
 * name: `.yaml` or `.yml`. */
bool dmh_config_is_yaml(const char *path);

/* `dmhost convert`: the libconfig form of DM's YAML task or source file `path` (which of the two
 * its keys say: `source-id` with `from` is a source file), laid out by libconfig's writer; the
 * line-kept form the loader reads is another. Malloc'd; NULL with `err` (what loading the file
 * would say of its YAML and DM keys). The settings themselves are checked when the file is
 * loaded (`dmhost check`), not here. */
char *dmh_config_convert(const char *path, dm_error *err);

#endif /* DMH_CONFIG_H */
