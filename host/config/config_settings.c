/* The settings table (config_settings.def) and the lookups over it. */
#include <stdio.h>
#include <string.h>

#include "config_util.h"

#define T_STRING DMH_CFG_T_STRING
#define T_INT DMH_CFG_T_INT
#define T_BOOL DMH_CFG_T_BOOL
#define T_PATH DMH_CFG_T_PATH
#define T_SECONDS DMH_CFG_T_SECONDS
#define T_ENUM DMH_CFG_T_ENUM
#define T_GROUP DMH_CFG_T_GROUP
#define T_SECTION DMH_CFG_T_SECTION
#define T_LIST DMH_CFG_T_LIST
#define T_GROUPS DMH_CFG_T_GROUPS
#define REQ DMH_CFG_F_REQ
#define PW DMH_CFG_F_PW
#define FREE DMH_CFG_UPD_FREE
#define FIXED DMH_CFG_UPD_FIXED
#define ENTRIES DMH_CFG_UPD_ENTRIES

const dmh_cfg_setting dmh_cfg_settings[DMH_SET_COUNT] = {
#define DMH_SETTING(id, scope, key, type, flags, dnum, dstr, dtext, min, max, unit, update, why,   \
                    doc)                                                                           \
  [DMH_SET_##id] = {DMH_SCOPE_##scope,                                                             \
                    key,                                                                           \
                    T_##type,                                                                      \
                    flags,                                                                         \
                    dnum,                                                                          \
                    dstr,                                                                          \
                    dtext,                                                                         \
                    min,                                                                           \
                    max,                                                                           \
                    unit,                                                                          \
                    update,                                                                        \
                    why,                                                                           \
                    doc},
#include "config_settings.def"
};

const dmh_cfg_scope_info dmh_cfg_scopes[DMH_SCOPE_COUNT] = {
#define DMH_SCOPE(id, parent, path, heading)                                                       \
  [DMH_SCOPE_##id] = {#id, DMH_SCOPE_##parent, path, heading},
#include "config_settings.def"
};

int dmh_cfg_scope_keys(dmh_cfg_scope scope, const char **out, int max) {
  int n = 0;
  for (int i = 0; i < DMH_SET_COUNT && n + 1 < max; i++)
    if (dmh_cfg_settings[i].scope == scope)
      out[n++] = dmh_cfg_settings[i].key;
  if (max > 0)
    out[n] = NULL;
  return n;
}

const dmh_cfg_setting *dmh_cfg_setting_in(dmh_cfg_scope scope, const char *key) {
  for (int i = 0; key && i < DMH_SET_COUNT; i++)
    if (dmh_cfg_settings[i].scope == scope && strcmp(dmh_cfg_settings[i].key, key) == 0)
      return &dmh_cfg_settings[i];
  return NULL;
}

const char *dmh_cfg_type_doc(dmh_cfg_type type) {
  switch (type) {
  case DMH_CFG_T_STRING:
  case DMH_CFG_T_ENUM:
    return "string";
  case DMH_CFG_T_INT:
    return "integer";
  case DMH_CFG_T_BOOL:
    return "boolean";
  case DMH_CFG_T_PATH:
    return "path";
  case DMH_CFG_T_SECONDS:
    return "seconds";
  case DMH_CFG_T_GROUP:
  case DMH_CFG_T_SECTION:
    return "group";
  case DMH_CFG_T_LIST:
    return "array of strings";
  case DMH_CFG_T_GROUPS:
    return "list of groups";
  }
  return "?";
}

const char *dmh_cfg_default_doc(const dmh_cfg_setting *s, char *buf, size_t size) {
  if (s->dtext)
    snprintf(buf, size, "%s", s->dtext);
  else if (s->flags & DMH_CFG_F_REQ)
    snprintf(buf, size, "**required**");
  else if (s->type == DMH_CFG_T_BOOL)
    snprintf(buf, size, "`%s`", s->dnum ? "true" : "false");
  else if ((s->type == DMH_CFG_T_INT || s->type == DMH_CFG_T_SECONDS) && s->dnum)
    snprintf(buf, size, "`%lld`", (long long)s->dnum);
  else if (s->dstr)
    snprintf(buf, size, "`\"%s\"`", s->dstr);
  else
    snprintf(buf, size, "%s", "");
  return buf;
}

int dmh_cfg_check_scope(dmh_cfg_ctx *c, const config_setting_t *group, dmh_cfg_scope scope,
                        const char *const *extra, const dmh_cfg_hint *misplaced) {
  const char *known[DMH_SET_COUNT + DMH_UNIT_SLOTS + 1];
  int n = dmh_cfg_scope_keys(scope, known, DMH_SET_COUNT + 1);
  for (int i = 0; extra && extra[i] && n < DMH_SET_COUNT + DMH_UNIT_SLOTS; i++)
    known[n++] = extra[i];
  known[n] = NULL;
  return dmh_cfg_check_keys(c, group, known, misplaced);
}

int dmh_cfg_get_int_setting(dmh_cfg_ctx *c, const config_setting_t *group, dmh_cfg_setting_id id,
                            unsigned flags, int64_t *out) {
  const dmh_cfg_setting *s = &dmh_cfg_settings[id];
  return dmh_cfg_get_int(c, group, s->key, flags, s->min, s->max, s->unit, out);
}

void dmh_cfg_misplaced(dmh_cfg_scope here, dmh_cfg_scope other, const char *hint,
                       const char *section_hint, dmh_cfg_hint *out) {
  int n = 0;
  for (int i = 0; i < DMH_SET_COUNT; i++) {
    const dmh_cfg_setting *s = &dmh_cfg_settings[i];
    if (s->scope == other && !dmh_cfg_setting_in(here, s->key))
      out[n++] = (dmh_cfg_hint){s->key, s->type == DMH_CFG_T_SECTION ? section_hint : hint};
  }
  out[n] = (dmh_cfg_hint){NULL, NULL};
}
