/*
 * A task's chain of units: DM's `task-mode` (the shorthands: all = dump, load, sync, ...) or an
 * explicit `units = ["dump", "load", "my-sink"];` naming any kinds, built-in or custom, with the
 * custom kinds' builds in `unit-paths` and their settings in a section named after the kind. What
 * cannot be judged before the units are loaded (does each unit that takes a position follow one
 * that gives one?) is checked by the supervisor when it creates the subtask (supervisor.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_util.h"

static bool chain_name_ok(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n >= DMH_KIND_NAME_MAX || !(s[0] >= 'a' && s[0] <= 'z'))
    return false;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-'))
      return false;
  return true;
}

static int chain_from_mode(dmh_cfg_ctx *c, const config_setting_t *root, dmh_task_config *t) {
  const config_setting_t *m = config_setting_get_member(root, "task-mode");
  char *s = NULL;
  if (dmh_cfg_get_string(c, root, "task-mode", DMH_CFG_REQUIRED, &s) < 0)
    return -1;
  int rc = dmh_task_mode_parse(s, &t->mode);
  if (rc < 0) {
    const char *names[DMH_MODE_CUSTOM];
    for (int i = 0; i < DMH_MODE_CUSTOM; i++)
      names[i] = dmh_task_mode_name((dmh_task_mode)i);
    const char *near = dmh_cfg_closest(s, names, DMH_MODE_CUSTOM);
    char suggestion[64] = "";
    if (near)
      snprintf(suggestion, sizeof suggestion, "; did you mean \"%s\"?", near);
    dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID, m,
                 "`task-mode` in the %s must be one of \"all\", \"full\", \"incremental\", "
                 "\"dump\", \"load\", \"load&sync\" (or name the units with `units = [...]`); "
                 "not \"%s\"%s",
                 c->what, s, suggestion);
  }
  free(s);
  if (rc < 0)
    return -1;
  dm_unit_kind kinds[3];
  t->n_chain = dmh_task_mode_chain(t->mode, kinds);
  for (int i = 0; i < t->n_chain; i++)
    t->chain[i] = (dmh_chain_unit){kinds[i], dmh_kind_index_of(kinds[i]), dmh_kind_name(kinds[i])};
  t->chain_line = config_setting_source_line(m);
  return 0;
}

/* The mode whose chain `units` spells, so a task file that writes a mode out runs as that mode. */
static dmh_task_mode chain_mode(const dmh_task_config *t) {
  for (int m = 0; m < DMH_MODE_CUSTOM; m++) {
    dm_unit_kind kinds[3];
    int n = dmh_task_mode_chain((dmh_task_mode)m, kinds);
    bool same = n == t->n_chain;
    for (int i = 0; same && i < n; i++)
      same = t->chain[i].kind == kinds[i];
    if (same)
      return (dmh_task_mode)m;
  }
  return DMH_MODE_CUSTOM;
}

static int chain_unit(dmh_cfg_ctx *c, const config_setting_t *el, int i, dmh_task_config *t) {
  const char *name = config_setting_get_string(el);
  if (!name)
    return dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID, el,
                        "`units.[%d]` in the %s must be a string naming a unit kind (\"dump\", "
                        "\"load\", \"sync\" or a custom kind of unit-paths)",
                        i, c->what);
  for (int j = 0; j < i; j++)
    if (strcmp(t->chain[j].name, name) == 0)
      return dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID, el,
                          "`units` in the %s names \"%s\" twice: a kind runs once per subtask "
                          "(its section, work folder and checkpoint are per kind)",
                          c->what, name);
  dm_unit_kind kind;
  if (dmh_kind_parse(name, &kind) == 0) {
    if (kind == DM_UNIT_RELAY)
      return dmh_cfg_fail(c, DM_ERR_CONFIG_UNIT_KIND, el,
                          "`units` in the %s names \"relay\": the relay runs per source, not in "
                          "a task; set `enable-relay = true;` in the source file",
                          c->what);
    t->chain[i] = (dmh_chain_unit){kind, dmh_kind_index_of(kind), dmh_kind_name(kind)};
    return 0;
  }
  if (!chain_name_ok(name))
    return dmh_cfg_fail(c, DM_ERR_CONFIG_UNIT_KIND, el,
                        "`units` in the %s names \"%s\", which is no unit kind: use \"dump\", "
                        "\"load\", \"sync\", or a custom kind's name (lower-case letters, digits "
                        "and '-', starting with a letter, at most %d characters) with its build "
                        "in `unit-paths`",
                        c->what, name, DMH_KIND_NAME_MAX - 1);
  /* its section is a top-level group of the file: no setting of the file may have its name */
  if (dmh_cfg_setting_in(DMH_SCOPE_TASK, name))
    return dmh_cfg_fail(c, DM_ERR_CONFIG_UNIT_KIND, el,
                        "`units` in the %s names \"%s\", a setting of the task file: a custom "
                        "kind's settings are a section named after it, so pick another name",
                        c->what, name);
  if (t->n_custom >= DMH_CUSTOM_MAX)
    return dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID, el,
                        "`units` in the %s names more than %d custom kinds", c->what,
                        DMH_CUSTOM_MAX);
  if (!(t->custom_names[t->n_custom] = strdup(name)))
    return dmh_cfg_no_memory(c);
  t->chain[i] =
      (dmh_chain_unit){DM_UNIT_CUSTOM, DMH_KIND_COUNT + t->n_custom, t->custom_names[t->n_custom]};
  t->n_custom++;
  return 0;
}

int dmh_cfg_task_sections(const config_setting_t *root, const char **out, int max) {
  const config_setting_t *units = config_setting_get_member(root, "units");
  int n = 0;
  dm_unit_kind kind;
  for (int i = 0; units && i < config_setting_length(units) && n < max; i++) {
    const char *s = config_setting_get_string_elem(units, i);
    if (s && dmh_kind_parse(s, &kind) != 0)
      out[n++] = s;
  }
  return n;
}

int dmh_cfg_task_chain(dmh_cfg_ctx *c, const config_setting_t *root, dmh_task_config *t) {
  const config_setting_t *units = config_setting_get_member(root, "units");
  if (!units)
    return chain_from_mode(c, root, t);
  if (config_setting_get_member(root, "task-mode"))
    return dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID, units,
                        "the %s sets both `task-mode` and `units`: keep one (`units` names the "
                        "chain itself; task-mode is its shorthand for DM's modes)",
                        c->what);
  int n = config_setting_is_array(units) || config_setting_is_list(units)
              ? config_setting_length(units)
              : -1;
  if (n < 1 || n > DMH_CHAIN_MAX)
    return dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID, units,
                        "`units` in the %s must be an array of 1 to %d unit kinds, e.g. "
                        "`units = [\"dump\", \"load\", \"sync\"];`",
                        c->what, DMH_CHAIN_MAX);
  for (int i = 0; i < n; i++)
    if (chain_unit(c, config_setting_get_elem(units, (unsigned)i), i, t) < 0)
      return -1;
  t->n_chain = n;
  for (int i = 0; i + 1 < n; i++)
    if (t->chain[i].kind == DM_UNIT_SYNC)
      return dmh_cfg_fail(c, DM_ERR_CONFIG_UNIT_KIND, units,
                          "`units` in the %s puts \"%s\" after \"sync\": a sync never finishes, "
                          "so nothing after it would run; make sync the last unit",
                          c->what, t->chain[i + 1].name);
  t->mode = chain_mode(t);
  t->chain_line = config_setting_source_line(units);
  return 0;
}

int dmh_cfg_task_unit_paths(dmh_cfg_ctx *c, const config_setting_t *root, dmh_task_config *t) {
  config_setting_t *g = NULL;
  int rc = dmh_cfg_get_group(c, root, "unit-paths", 0,
                             "`unit-paths = { sync = \"/path/dmhost-sync.so\"; };`", &g);
  if (rc < 0)
    return -1;
  if (rc > 0 && dmh_cfg_check_unit_paths_origin(c, g) < 0)
    return -1;
  if (rc > 0) {
    static const char hint[] = "the relay unit is chosen in the source file's unit-paths (relay "
                               "runs per source, not per task)";
    const char *custom[DMH_CUSTOM_MAX + 1];
    for (int i = 0; i < t->n_custom; i++)
      custom[i] = t->custom_names[i];
    custom[t->n_custom] = NULL;
    dmh_cfg_hint misplaced[DMH_SET_COUNT + 1];
    dmh_cfg_misplaced(DMH_SCOPE_TASK_UNIT_PATHS, DMH_SCOPE_SOURCE_UNIT_PATHS, hint, hint,
                      misplaced);
    if (dmh_cfg_check_scope(c, g, DMH_SCOPE_TASK_UNIT_PATHS, custom, misplaced) < 0)
      return -1;
    for (int slot = 0; slot < DMH_UNIT_SLOTS; slot++) {
      const char *name = dmh_task_slot_name(t, slot);
      if (name && slot != DMH_KIND_RELAY && dmh_cfg_get_path(c, g, name, &t->unit_paths[slot]) < 0)
        return -1;
    }
  }
  for (int i = 0; i < t->n_custom; i++) {
    if (!t->unit_paths[DMH_KIND_COUNT + i])
      return dmh_cfg_fail_line(c, DM_ERR_CONFIG_MISSING, t->chain_line,
                               "`units` in the %s names the custom kind \"%s\" but `unit-paths` "
                               "gives no build of it: add `unit-paths = { %s = "
                               "\"/path/to/unit.so\"; };`",
                               c->what, t->custom_names[i], t->custom_names[i]);
    char example[96];
    snprintf(example, sizeof example, "`%s = { ... };`", t->custom_names[i]);
    config_setting_t *sec = NULL;
    if (dmh_cfg_get_group(c, root, t->custom_names[i], 0, example, &sec) < 0)
      return -1;
  }
  return 0;
}

void dmh_cfg_task_chain_free(dmh_task_config *t) {
  for (int i = 0; i < t->n_custom; i++)
    free(t->custom_names[i]);
  for (int i = 0; i < DMH_UNIT_SLOTS; i++)
    free(t->unit_paths[i]);
}

int dmh_task_slot_of(const dmh_task_config *t, const char *name) {
  for (int slot = 0; name && slot < DMH_UNIT_SLOTS; slot++) {
    const char *s = dmh_task_slot_name(t, slot);
    if (s && slot != DMH_KIND_RELAY && strcmp(s, name) == 0)
      return slot;
  }
  return -1;
}

const char *dmh_task_slot_name(const dmh_task_config *t, int slot) {
  if (slot >= 0 && slot < DMH_KIND_COUNT)
    return dmh_kind_name(dmh_kind_of_index(slot));
  if (slot >= DMH_KIND_COUNT && slot - DMH_KIND_COUNT < t->n_custom)
    return t->custom_names[slot - DMH_KIND_COUNT];
  return NULL;
}

config_setting_t *dmh_task_section_named(const dmh_task_config *t, const char *name) {
  if (dmh_task_slot_of(t, name) < 0)
    return NULL;
  config_setting_t *g = config_lookup(&t->cfg, name);
  return g && config_setting_is_group(g) ? g : NULL;
}

int dmh_task_section_set_string(dmh_task_config *t, const char *name, const char *key,
                                const char *value, bool *made) {
  *made = false;
  if (dmh_task_slot_of(t, name) < 0)
    return -1;
  config_setting_t *root = config_root_setting(&t->cfg), *g = config_setting_get_member(root, name);
  if (g && !config_setting_is_group(g))
    return -1;
  if (!g && (*made = true, !(g = config_setting_add(root, name, CONFIG_TYPE_GROUP))))
    return -1;
  config_setting_t *s = config_setting_get_member(g, key);
  if (s && config_setting_type(s) != CONFIG_TYPE_STRING) { /* the file's value of another type */
    if (config_setting_remove(g, key) != CONFIG_TRUE)
      return -1;
    s = NULL;
  }
  if (!s)
    s = config_setting_add(g, key, CONFIG_TYPE_STRING);
  return s && config_setting_set_string(s, value) == CONFIG_TRUE ? 0 : -1;
}
