/*
 * DM's YAML task and source files, read as they are (issue 23): a file whose name ends in `.yaml`
 * or `.yml` is parsed with libyaml and translated into the libconfig text the loader reads
 * (config.c's conf_read), every setting on the line of its YAML key, so that each `file:line`
 * message of the loader points at the YAML line. DM keys are renamed where dmhost's name differs
 * (black-white-list, the mydumpers/loaders/syncers maps into the dump/load/sync sections), accepted
 * when they hold DM's default or have no effect here, and refused by name with file and line
 * otherwise (docs/config.md, "DM's YAML files"). Internal to the config room.
 */
#ifndef DMH_CONFIG_YAML_H
#define DMH_CONFIG_YAML_H

#include <stdbool.h>

#include "config_util.h"

/* The libconfig text of the YAML file c->path (a task file when `task`, else a source file), read
 * with config loading's limits; NULL with c->err filled: DM_ERR_CONFIG_PARSE for a YAML syntax
 * error (file:line:column and libyaml's problem), DM_ERR_CONFIG_UNKNOWN for a DM key dmhost does
 * not do, DM_ERR_CONFIG_INVALID for instances whose unit settings differ. */
char *dmh_cfg_yaml_text(dmh_cfg_ctx *c, bool task);

#endif /* DMH_CONFIG_YAML_H */
