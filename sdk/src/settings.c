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
  case 't':
  case 'T':
    shift = 40;
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

int dm_duration_parse(const char *s, int64_t *ms) {
  if (!s || !*s)
    return -1;
  if (*s == '+')
    s++;
  if (strcmp(s, "0") == 0) {
    *ms = 0;
    return 0;
  }
  static const struct {
    const char *name;
    double ms;
  } units[] = {{"ns", 1e-6}, {"us", 1e-3}, {"\xc2\xb5s", 1e-3}, {"\xce\xbcs", 1e-3},
               {"ms", 1},    {"s", 1e3},   {"m", 6e4},          {"h", 3.6e6}};
  double total = 0;
  while (*s) {
    /* digits, optionally a dot and digits: at least one digit (Go's leadingInt, leadingFraction) */
    double x = 0, scale = 1;
    bool digits = false;
    for (; *s >= '0' && *s <= '9'; s++, digits = true)
      x = x * 10 + (*s - '0');
    if (*s == '.')
      for (s++; *s >= '0' && *s <= '9'; s++, digits = true)
        x += (*s - '0') * (scale /= 10);
    if (!digits)
      return -1;
    size_t best = 0, best_len = 0;
    for (size_t i = 0; i < sizeof units / sizeof *units; i++) {
      size_t n = strlen(units[i].name);
      if (n > best_len && strncmp(s, units[i].name, n) == 0)
        best = i, best_len = n;
    }
    if (!best_len)
      return -1; /* no unit, or one Go does not know */
    s += best_len;
    total += x * units[best].ms;
    if (total > 1e15)
      return -1;
  }
  int64_t v = (int64_t)total;
  *ms = v == 0 && total > 0 ? 1 : v;
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

int dm_setting_duration(const dm_host_services *h, dm_ctx *ctx, const char *who, const char *name,
                        int64_t def_ms, int64_t max_ms, int64_t *out, dm_error *err) {
  const char *s = NULL;
  int64_t v = def_ms;
  dm_cfg_result r = h->cfg_string(ctx, name, &s);
  if (r == DM_CFG_MISSING || (r == DM_CFG_OK && !*s))
    v = def_ms;
  else if (r != DM_CFG_OK || dm_duration_parse(s, &v) != 0 || v > max_ms) {
    char shown[80] = " (not a string)";
    if (r == DM_CFG_OK)
      snprintf(shown, sizeof shown, ", not \"%.40s\"", s);
    dm_error_set(err, DM_ERR_CONFIG_INVALID, NULL,
                 "%s: setting `%s` must be a duration string of 0 to %" PRId64
                 " s in Go's form (\"60s\", \"1m30s\", \"500ms\", \"0s\")%s",
                 who, name, max_ms / 1000, shown);
    return -1;
  }
  *out = v;
  return 0;
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
