/* What update-task may change in a task file; see config_update.h. */
#include "config_update.h"

#include <string.h>

#include "config_util.h"
#include "dmhost/sdk.h"

bool dmh_cfg_setting_equal(const config_setting_t *a, const config_setting_t *b) {
  if (!a || !b)
    return a == b;
  int t = config_setting_type(a);
  if (t != config_setting_type(b))
    return false;
  switch (t) {
  case CONFIG_TYPE_INT:
  case CONFIG_TYPE_INT64:
    return config_setting_get_int64(a) == config_setting_get_int64(b);
  case CONFIG_TYPE_FLOAT:
    return config_setting_get_float(a) == config_setting_get_float(b);
  case CONFIG_TYPE_BOOL:
    return config_setting_get_bool(a) == config_setting_get_bool(b);
  case CONFIG_TYPE_STRING:
    return strcmp(config_setting_get_string(a), config_setting_get_string(b)) == 0;
  case CONFIG_TYPE_GROUP: {
    int n = config_setting_length(a);
    if (n != config_setting_length(b))
      return false;
    for (int i = 0; i < n; i++) {
      const config_setting_t *m = config_setting_get_elem(a, (unsigned)i);
      if (!dmh_cfg_setting_equal(m, config_setting_get_member(b, config_setting_name(m))))
        return false;
    }
    return true;
  }
  default: { /* arrays and lists: element by element */
    int n = config_setting_length(a);
    if (n != config_setting_length(b))
      return false;
    for (int i = 0; i < n; i++)
      if (!dmh_cfg_setting_equal(config_setting_get_elem(a, (unsigned)i),
                                 config_setting_get_elem(b, (unsigned)i)))
        return false;
    return true;
  }
  }
}

/* What update-task may do with setting `name` of `scope` (the table's update column). A setting
 * the table does not know (a custom kind's section: upd_unit_section) must stay. */
static bool upd_free(dmh_cfg_scope scope, const char *name) {
  const dmh_cfg_setting *s = dmh_cfg_setting_in(scope, name);
  /* mysql-instances: entry by entry, below */
  return s && s->update != DMH_CFG_UPD_FIXED;
}

/* A unit's section: a built-in kind's, or a custom kind's the running task's `units` names. */
static bool upd_unit_section(const dmh_task_config *running, const char *name) {
  return dmh_task_slot_of(running, name) >= 0;
}

static const char *upd_why(dmh_cfg_scope scope, const char *name) {
  const dmh_cfg_setting *s = dmh_cfg_setting_in(scope, name);
  if (s && s->why)
    return s->why;
  return "only block-allow-list, routes, filters, the rules an entry of mysql-instances names, "
         "supervisor, ignore-checking-items and the units' sections may change";
}

/* `path` (shown) differs. `at` is the setting in the new file, or where it would be (its group). */
static int upd_refuse(const dmh_task_config *next, const config_setting_t *at, const char *path,
                      dmh_cfg_scope scope, const char *name, bool removed, dm_error *err) {
  int line = at ? config_setting_source_line(at) : 0;
  dm_error_set(err, DM_ERR_UPDATE_IDENTITY, NULL,
               "%s:%d: update-task: `%s` %s the running task's (%s); keep it as it is, or stop the "
               "task and start it as a new one",
               next->path, line > 0 ? line : 1, path,
               removed ? "is missing here and would change" : "differs from", upd_why(scope, name));
  return -1;
}

/* Members of groups a (running) and b (next), settings of `scope`, must be equal unless the table
 * lets update-task change them. */
static int upd_same_members(const dmh_task_config *next, const config_setting_t *a,
                            const config_setting_t *b, dmh_cfg_scope scope, bool units_free,
                            bool (*semantic)(const dmh_task_config *, const dmh_task_config *,
                                             const char *, bool *),
                            const dmh_task_config *running, dm_error *err) {
  char path[CFGUTIL_PATH_MAX];
  for (int pass = 0; pass < 2; pass++) {
    const config_setting_t *from = pass == 0 ? b : a, *other = pass == 0 ? a : b;
    int n = config_setting_length(from);
    for (int i = 0; i < n; i++) {
      const config_setting_t *m = config_setting_get_elem(from, (unsigned)i);
      const char *name = config_setting_name(m);
      if (!name || upd_free(scope, name) || (units_free && upd_unit_section(running, name)))
        continue;
      const config_setting_t *o = config_setting_get_member(other, name);
      if (pass == 1 && o)
        continue; /* compared in the first pass */
      bool same;
      if (semantic && semantic(running, next, name, &same)) {
        if (same)
          continue;
      } else if (dmh_cfg_setting_equal(m, o)) {
        continue;
      }
      if (pass == 0)
        return upd_refuse(next, m, dmh_cfg_path_of(m, path, sizeof path), scope, name, false, err);
      return upd_refuse(next, b, dmh_cfg_member_path(b, name, path, sizeof path), scope, name, true,
                        err);
    }
  }
  return 0;
}

static bool upd_same_list(char *const *a, int na, char *const *b, int nb) {
  if (na != nb)
    return false;
  for (int i = 0; i < na; i++)
    if (strcmp(a[i], b[i]) != 0)
      return false;
  return true;
}

/* The forms of a password and the key of one: compared by the password they give, not by their
 * text (a master seals a password with a fresh nonce each time it stores a file). */
static bool upd_password_form(const char *name) {
  static const char *const forms[] = {"password", "password-encrypted", "password-file",
                                      "password-env", "secret-key-path"};
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++)
    if (strcmp(name, forms[i]) == 0)
      return true;
  return false;
}

/* target-database: every other member the same, and the same password once loaded. */
static bool upd_same_target(const dmh_task_config *a, const dmh_task_config *b) {
  const config_setting_t *ga = config_setting_get_member(config_root_setting(&a->cfg),
                                                         "target-database"),
                         *gb = config_setting_get_member(config_root_setting(&b->cfg),
                                                         "target-database");
  if (!ga || !gb)
    return ga == gb;
  for (int pass = 0; pass < 2; pass++) {
    const config_setting_t *from = pass == 0 ? ga : gb, *other = pass == 0 ? gb : ga;
    int n = config_setting_length(from);
    for (int i = 0; i < n; i++) {
      const config_setting_t *m = config_setting_get_elem(from, (unsigned)i);
      const char *name = config_setting_name(m);
      if (name && !upd_password_form(name) &&
          !dmh_cfg_setting_equal(m, config_setting_get_member(other, name)))
        return false;
    }
  }
  const char *pa = a->target.ep.password ? a->target.ep.password : "",
             *pb = b->target.ep.password ? b->target.ep.password : "";
  return strcmp(pa, pb) == 0;
}

/* Settings with a default are compared by their value, so that writing the default out (or
 * leaving it out) is no change. true when `name` is one of them, with *same. */
static bool upd_semantic(const dmh_task_config *a, const dmh_task_config *b, const char *name,
                         bool *same) {
  if (strcmp(name, "meta-schema") == 0)
    *same = strcmp(a->meta_schema, b->meta_schema) == 0;
  else if (strcmp(name, "collation_compatible") == 0)
    *same = a->collation_strict == b->collation_strict;
  else if (strcmp(name, "case-sensitive") == 0)
    *same = a->case_sensitive == b->case_sensitive;
  else if (strcmp(name, "file-mode") == 0)
    *same = a->file_mode == b->file_mode;
  else if (strcmp(name, "task-mode") == 0)
    *same = a->mode == b->mode;
  else if (strcmp(name, "online-ddl") == 0 || strcmp(name, "online-ddl-scheme") == 0)
    *same = a->online_ddl == b->online_ddl;
  else if (strcmp(name, "shadow-table-rules") == 0)
    *same = upd_same_list(a->shadow_rules, a->n_shadow_rules, b->shadow_rules, b->n_shadow_rules);
  else if (strcmp(name, "target-database") == 0)
    *same = upd_same_target(a, b);
  else if (strcmp(name, "trash-table-rules") == 0)
    *same = upd_same_list(a->trash_rules, a->n_trash_rules, b->trash_rules, b->n_trash_rules);
  else
    return false;
  return true;
}

static const config_setting_t *upd_instance(const config_setting_t *list, const char *source_id) {
  int n = list ? config_setting_length(list) : 0;
  for (int i = 0; i < n; i++) {
    const config_setting_t *g = config_setting_get_elem(list, (unsigned)i);
    const char *sid = NULL;
    if (config_setting_lookup_string(g, "source-id", &sid) && strcmp(sid, source_id) == 0)
      return g;
  }
  return NULL;
}

int dmh_task_config_same_identity(const dmh_task_config *running, const dmh_task_config *next,
                                  dm_error *err) {
  const config_setting_t *ra = config_root_setting(&running->cfg),
                         *nb = config_root_setting(&next->cfg);
  if (upd_same_members(next, ra, nb, DMH_SCOPE_TASK, true, upd_semantic, running, err) < 0)
    return -1;
  /* mysql-instances: the same sources, each entry the same but for the rules it names */
  const config_setting_t *la = config_setting_get_member(ra, "mysql-instances"),
                         *lb = config_setting_get_member(nb, "mysql-instances");
  bool same_set = running->n_instances == next->n_instances;
  for (int i = 0; same_set && i < next->n_instances; i++)
    same_set = dmh_task_instance_for(running, next->instances[i].source_id) != NULL;
  if (!same_set)
    return upd_refuse(next, lb, "mysql-instances", DMH_SCOPE_TASK, "mysql-instances", false, err);
  for (int i = 0; i < next->n_instances; i++) {
    const char *sid = next->instances[i].source_id;
    const config_setting_t *ga = upd_instance(la, sid), *gb = upd_instance(lb, sid);
    if (ga && gb &&
        upd_same_members(next, ga, gb, DMH_SCOPE_INSTANCE, false, NULL, running, err) < 0)
      return -1;
  }
  return 0;
}
