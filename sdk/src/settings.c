/* A unit's ranged settings (see dmhost/settings.h): the one copy every unit uses. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "dmhost/sdk.h"
#include "dmhost/settings.h"

int dm_size_parse(const char *s, int64_t *out) {
  if (!s || *s < '0' || *s > '9')
    return -1;
  uint64_t v = 0;
  for (; *s >= '0' && *s <= '9'; s++) {
    if (v > ((uint64_t)INT64_MAX - (uint64_t)(*s - '0')) / 10)
      return -1;
    v = v * 10 + (uint64_t)(*s - '0');
  }
  unsigned shift = 0;
  switch (*s) {
  case '\0':
    break;
  case 'k':
  case 'K':
    shift = 10;
    break;
  case 'm':
  case 'M':
    shift = 20;
    break;
  case 'g':
  case 'G':
    shift = 30;
    break;
  default:
    return -1;
  }
  if (shift && *++s != '\0')
    return -1;
  if (v > (uint64_t)INT64_MAX >> shift)
    return -1;
  *out = (int64_t)(v << shift);
  return 0;
}

/* An integer setting; with `size` also a size text (dm_size_parse). */
static int setting_number(const dm_host_services *h, dm_ctx *ctx, const char *who, const char *name,
                          int64_t def, int64_t min, int64_t max, bool size, int64_t *out,
                          dm_error *err) {
  int64_t v = def;
  dm_cfg_result r = h->cfg_int(ctx, name, &v);
  const char *s = NULL;
  if (r == DM_CFG_MISSING)
    v = def;
  else if (r != DM_CFG_OK &&
           (!size || h->cfg_string(ctx, name, &s) != DM_CFG_OK || dm_size_parse(s, &v) != 0)) {
    char shown[64] = "";
    if (s)
      snprintf(shown, sizeof shown, ", not \"%.40s\"", s);
    if (size)
      dm_error_set(err, DM_ERR_CONFIG_INVALID, NULL,
                   "%s: setting `%s` must be a size in %" PRId64 "..%" PRId64
                   " bytes (a number, or a string with K, M or G: \"64M\")%s",
                   who, name, min, max, shown);
    else
      dm_error_set(err, DM_ERR_CONFIG_INVALID, NULL,
                   "%s: setting `%s` must be an integer in %" PRId64 "..%" PRId64
                   " (default %" PRId64 ")",
                   who, name, min, max, def);
    return -1;
  }
  if (v < min || v > max) {
    dm_error_set(err, DM_ERR_CONFIG_INVALID, NULL,
                 "%s: setting `%s` is %" PRId64 ", it must be in %" PRId64 "..%" PRId64, who, name,
                 v, min, max);
    return -1;
  }
  *out = v;
  return 0;
}

int dm_setting_int(const dm_host_services *h, dm_ctx *ctx, const char *who, const char *name,
                   int64_t def, int64_t min, int64_t max, int64_t *out, dm_error *err) {
  return setting_number(h, ctx, who, name, def, min, max, false, out, err);
}

int dm_setting_size(const dm_host_services *h, dm_ctx *ctx, const char *who, const char *name,
                    int64_t def, int64_t min, int64_t max, int64_t *out, dm_error *err) {
  return setting_number(h, ctx, who, name, def, min, max, true, out, err);
}

int dm_setting_bool(const dm_host_services *h, dm_ctx *ctx, const char *who, const char *name,
                    bool def, bool *out, dm_error *err) {
  bool v = def;
  switch (h->cfg_bool(ctx, name, &v)) {
  case DM_CFG_OK:
    break;
  case DM_CFG_MISSING:
    v = def;
    break;
  default:
    dm_error_set(err, DM_ERR_CONFIG_INVALID, NULL, "%s: setting `%s` must be true or false", who,
                 name);
    return -1;
  }
  *out = v;
  return 0;
}
