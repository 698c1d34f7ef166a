/*
 * dm_ctx: the host's side of one unit instance, handed to the unit with the services table. It
 * holds what the services answer (identity, endpoints, the unit's config section, the stop token
 * of the subtask, the hand-over position) and records which settings the unit looked up, so
 * settings it never read can be refused as unknown after init.
 */
#ifndef DMH_UNIT_CTX_H
#define DMH_UNIT_CTX_H

#include <libconfig.h>
#include <pthread.h>
#include <stdbool.h>

#include "binlog_ops.h"
#include "config.h"
#include "dmhost/host.h"
#include "dmhost/unit.h"
#include "metrics.h"
#include "shard_coord.h"
#include "stop_token.h"
#include "unit_spec.h"

struct dm_ctx {
  /* identity: strings borrowed from the configs, which outlive the subtask */
  const char *task_name;
  const char *source_id;
  const char *worker_name; /* the subtask's copy: DM's `worker` label */
  const char *task_mode;
  const char *meta_schema;
  const char *relay_dir;
  const dm_db_endpoint *source_db;
  const dm_db_endpoint *target_db;
  bool gtid_enabled;
  /* dm_unit_kind of the units after this one in the chain (unit_follows), and DM_UNIT_SYNC for a
   * later unit that takes a position */
  uint32_t later[2 * DMH_CHAIN_MAX];
  int n_later;
  uint32_t file_mode; /* of the files the unit creates (file-mode); its work dir has the dir mode */
  uint64_t fencing_token;       /* the subtask's (dmh_subtask_opts.fencing_token); 0: no fencing */
  uint32_t server_id;           /* the source file's server-id (source_server_id) */
  char *work_dir;               /* owned; created by dmh_ctx_new */
  dm_shard_mode shard_mode;     /* the task's shard-mode (shard_mode service) */
  bool strict_optimistic;       /* a conflicting optimistic operation is an error (36019) */
  bool collation_strict;        /* the task's collation_compatible is strict */
  const dmh_shard_coord *shard; /* the process's coordinator (dmh_ctx_run.shard); NULL: none */
  char scope[320];              /* log scope: "task=.. source=.. unit=.." */

  dmh_stop_token *token;             /* the subtask's */
  const struct dmh_rules *rules;     /* the subtask's; NULL for a relay */
  const dmh_task_instance *instance; /* the task's entry for this source; NULL for a relay */

  config_setting_t *section; /* the unit's config section, or NULL */
  const char *cfg_file;      /* the file the section is in */

  /* The subtask's binlog operator store (binlog_ops.h), owned; NULL for a relay. */
  char *binlog_ops_path;

  /* Metrics: the registry the unit's families go to (the process's unless a test sets another),
   * the owner of the subtask's series (dmh_metrics_drop_owner when it is destroyed), and the
   * handles the unit registered, freed with the ctx (they outlive close, as the contract asks). */
  dmh_metrics *metrics;
  uint64_t metrics_owner;
  struct dm_metric *metric_handles; /* [lock] */

  pthread_mutex_t lock; /* guards seen[], handoff, held_op and metric_handles */
  char **seen;          /* setting paths the unit looked up */
  int n_seen, cap_seen;
  bool has_handoff;
  dm_position handoff;
  bool has_safe_exit; /* handoff_safe_mode_exit */
  dm_position safe_exit;
  /* The operator binlog_operator last returned: its statements are lent to the unit until the
   * next binlog_operator or binlog_operator_done call. */
  dmh_binlog_op held_op;
};

/* The services table every unit gets. */
const dm_host_services *dmh_host_services(void);

/* work_dir is created (with parents, dm_fs_dir_mode(file_mode)); the unit's file_mode service
 * answers file_mode. Returns NULL on failure with *err. */
dm_ctx *dmh_ctx_new(const char *work_dir, uint32_t file_mode, dm_error *err);
/* What a unit's context takes from its subtask rather than from the config files. Borrowed: the
 * subtask outlives its units' contexts. */
typedef struct dmh_ctx_run {
  const char *work_root;         /* the unit's work dir is <work_root>/<its name> */
  const char *worker_name;       /* DM's `worker` label */
  uint64_t fencing_token;        /* dmh_subtask_opts.fencing_token */
  dmh_stop_token *token;         /* the subtask's */
  uint64_t metrics_owner;        /* the subtask's series */
  const struct dmh_rules *rules; /* compiled from spec->instance; NULL without one */
  const dmh_shard_coord *shard;  /* dmh_subtask_opts.shard: shard DDL locks; NULL: none */
} dmh_ctx_run;
/* The context of unit i of the chain spec cs (unit_spec.h), in one call: dmh_ctx_new at
 * <work_root>/<name>, every field from the spec and the run, the units after it (unit_follows),
 * the log scope, and the binlog operator store when cs->binlog_ops. The handover of the units
 * after i must be set in cs. Returns NULL with *err. */
dm_ctx *dmh_ctx_new_from_spec(const dmh_chain_spec *cs, int i, const dmh_ctx_run *run,
                              dm_error *err);
/* The task's part of unit i's context from the spec cs (task name, meta schema, target,
 * instance, section, config file) and `rules`: what dmh_ctx_new_from_spec sets from the task, and
 * what update-task points at the new file's settings. */
void dmh_ctx_set_task_part(dm_ctx *ctx, const dmh_chain_spec *cs, int i,
                           const struct dmh_rules *rules);
void dmh_ctx_free(dm_ctx *ctx);
/* Forget what was looked up (before a new instance reads the same section). */
void dmh_ctx_reset_seen(dm_ctx *ctx);
/* After init: refuse the first setting in the section the unit never looked up.
 * `unit_label` names the unit in the message. Returns 0 or -1 with DM_ERR_CONFIG_UNKNOWN. */
int dmh_ctx_check_unread(dm_ctx *ctx, const char *section_name, const char *unit_label,
                         dm_error *err);
/* What handoff_position and handoff_safe_mode_exit answer (NULL: none). */
void dmh_ctx_set_handoff(dm_ctx *ctx, const dm_position *pos, const dm_position *safe_exit);
/* Where the binlog operators of the unit's subtask are kept: <work_root>/binlog-operators.json.
 * Returns 0 or -1 with DM_ERR_NO_MEMORY. */
int dmh_ctx_set_binlog_ops(dm_ctx *ctx, const char *work_root, dm_error *err);

#endif /* DMH_UNIT_CTX_H */
