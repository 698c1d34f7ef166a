/*
 * The context spec of a subtask: what the config files say each unit's context holds (identity,
 * endpoints, modes, the unit's section and build), gathered in one place on the config side
 * (unit_spec.c) so the supervisor builds every unit's dm_ctx from it with one services call
 * (dmh_ctx_new_from_spec, unit_ctx.h) and never reads config itself. A task against one source is
 * a chain spec of its units; a source's relay is a chain spec of the one relay unit.
 */
#ifndef DMH_UNIT_SPEC_H
#define DMH_UNIT_SPEC_H

#include <libconfig.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "dmhost/error.h"
#include "dmhost/unit.h"

/* One unit of the chain. */
typedef struct dmh_unit_spec {
  dm_unit_kind kind;
  char name[DMH_KIND_NAME_MAX]; /* the kind's name: its section, work folder, <name>Status */
  int slot;                     /* its unit-paths slot (config.h; the relay: DMH_KIND_RELAY) */
  const char *path;             /* the build the config file names; NULL: the kind's default */
  config_setting_t *section;    /* its section in cfg_file, or NULL */
  /* dmh_unit_handover of its build: 0 from config, set by the supervisor once the build is
   * loaded (the units before it learn from it whether a later unit takes a position) */
  uint32_t handover;
} dmh_unit_spec;

/* The chain: what its units share. Strings and pointers are borrowed from the configs, which
 * outlive the subtask. */
typedef struct dmh_chain_spec {
  const char *name;      /* the subtask's: the task's name, or "relay" */
  const char *task_name; /* "" for the relay */
  const char *source_id;
  const char *task_mode;   /* dmh_task_mode_name, or "relay" */
  const char *meta_schema; /* "" for the relay */
  const char
      *relay_dir; /* the source's relay-dir when the relay is on (or this is it), else NULL */
  const dm_db_endpoint *source_db;
  const dm_db_endpoint *target_db; /* NULL for the relay */
  bool gtid_enabled;
  uint32_t file_mode; /* of the files the units create: the task's, or the source's for the relay */
  uint32_t server_id; /* the source's server-id */
  const dmh_task_instance *instance; /* the task's entry for the source; NULL for the relay */
  bool binlog_ops;          /* the subtask keeps binlog operators (binlog_ops.h): not the relay */
  dm_shard_mode shard_mode; /* the task's shard-mode; NONE for the relay */
  bool strict_optimistic;   /* strict-optimistic-shard-mode: a conflict pauses (36019) */
  bool collation_strict;    /* collation_compatible: strict (collation_strict service) */
  const char *cfg_file;     /* the file the units' sections are in */
  int chain_line; /* line of the chain in cfg_file (`units` or `task-mode`); 0 for the relay */
  int n_units;
  dmh_unit_spec units[DMH_CHAIN_MAX];
} dmh_chain_spec;

/* The spec of task t against source s. -1 with DM_ERR_CONFIG_INVALID when no entry of t's
 * mysql-instances reads s. */
int dmh_chain_spec_task(dmh_chain_spec *cs, const dmh_task_config *t, const dmh_source_config *s,
                        dm_error *err);
/* The spec of s's relay: the one relay unit. */
void dmh_chain_spec_relay(dmh_chain_spec *cs, const dmh_source_config *s);

#endif /* DMH_UNIT_SPEC_H */
