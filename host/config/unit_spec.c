/*
 * The context spec of a subtask from its config files (unit_spec.h): the one place that decides
 * what a task's units and a source's relay are told.
 */
#include "unit_spec.h"

#include <string.h>

#include "dmhost/sdk.h"

/* What a task's units and a relay share from the source. */
static void spec_source(dmh_chain_spec *cs, const dmh_source_config *s) {
  cs->source_id = s->source_id;
  cs->source_db = &s->from.ep;
  cs->gtid_enabled = s->enable_gtid;
  cs->server_id = s->server_id;
  cs->relay_dir = s->enable_relay ? s->relay_dir : NULL;
}

int dmh_chain_spec_task(dmh_chain_spec *cs, const dmh_task_config *t, const dmh_source_config *s,
                        dm_error *err) {
  memset(cs, 0, sizeof *cs);
  if (!(cs->instance = dmh_task_instance_for(t, s->source_id))) {
    dm_error_set(err, DM_ERR_CONFIG_INVALID, NULL,
                 "%s: no entry of mysql-instances reads source `%s`", t->path, s->source_id);
    return -1;
  }
  spec_source(cs, s);
  cs->name = t->name;
  cs->task_name = t->name;
  cs->task_mode = dmh_task_mode_name(t->mode);
  cs->shard_mode = t->shard_mode;
  cs->strict_optimistic = t->strict_optimistic;
  cs->collation_strict = t->collation_strict;
  cs->meta_schema = t->meta_schema;
  cs->target_db = &t->target.ep;
  cs->file_mode = t->file_mode;
  cs->binlog_ops = true;
  cs->cfg_file = t->path;
  cs->chain_line = t->chain_line;
  cs->n_units = t->n_chain;
  for (int i = 0; i < t->n_chain; i++) {
    const dmh_chain_unit *c = &t->chain[i];
    dmh_unit_spec *u = &cs->units[i];
    u->kind = c->kind;
    dm_strlcpy(u->name, c->name, sizeof u->name);
    u->slot = c->slot;
    u->path = t->unit_paths[c->slot];
    u->section = dmh_task_section_named(t, c->name);
  }
  return 0;
}

void dmh_chain_spec_relay(dmh_chain_spec *cs, const dmh_source_config *s) {
  memset(cs, 0, sizeof *cs);
  spec_source(cs, s);
  cs->name = "relay";
  cs->task_name = "";
  cs->task_mode = "relay";
  cs->meta_schema = "";
  cs->relay_dir = s->relay_dir; /* the relay writes there whether or not tasks read it */
  cs->file_mode = s->file_mode;
  cs->cfg_file = s->path;
  cs->n_units = 1;
  dmh_unit_spec *u = &cs->units[0];
  u->kind = DM_UNIT_RELAY;
  dm_strlcpy(u->name, "relay", sizeof u->name);
  u->slot = DMH_KIND_RELAY;
  u->path = s->unit_paths[DMH_KIND_RELAY];
  u->section = dmh_source_unit_section(s);
}
