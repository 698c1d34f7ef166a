/*
 * What update-task may change in a task file (docs/control.md, "update-task"): the rules
 * (block-allow-list, routes, filters, and which of them each mysql-instances entry names), the
 * supervisor group, ignore-checking-items and the units' own sections. Everything else names the
 * task or keys its checkpoints (task-mode, meta-schema, target-database, the set of sources, an
 * entry's meta, case-sensitive, unit-paths, ...) and must stay as the running task has it. Which
 * is which, and why, is the update column of the settings table (config_settings.def); a setting
 * the table does not mark FREE is kept, so a new setting is never changed by accident.
 */
#ifndef DMH_CONFIG_UPDATE_H
#define DMH_CONFIG_UPDATE_H

#include <libconfig.h>
#include <stdbool.h>

#include "config.h"
#include "dmhost/error.h"

/* Same names, types and values, recursively (line numbers and the order of a group's members do
 * not count; a list's order does). Two NULLs are equal. */
bool dmh_cfg_setting_equal(const config_setting_t *a, const config_setting_t *b);

/* 0 when `next` keeps every setting of `running` that must not change; else -1 with
 * DM_ERR_UPDATE_IDENTITY naming next's file, the line and the setting, and why it cannot change. */
int dmh_task_config_same_identity(const dmh_task_config *running, const dmh_task_config *next,
                                  dm_error *err);

#endif /* DMH_CONFIG_UPDATE_H */
