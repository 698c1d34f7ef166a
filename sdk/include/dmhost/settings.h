/*
 * dmhost SDK: a unit's ranged settings (libdmhost-sdk.a), the one reading of every unit's section.
 *
 * Each function reads `name` of the unit's section through the host's cfg_* services (so the host
 * knows it was read), uses `def` when it is missing and checks the range. On a wrong type or a
 * value out of range it returns -1 with *err DM_ERR_CONFIG_INVALID (not resumable) whose message
 * names the unit (`who`: "dump", "load", ...), the setting, the value and the range:
 *   dump: setting `threads` is 0, it must be in 1..64
 *   load: setting `batch-bytes` must be a size in 1..1073741824 bytes, not "12Q"
 * and 0 with *out set otherwise.
 */
#ifndef DMHOST_SETTINGS_H
#define DMHOST_SETTINGS_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "host.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An integer in min..max. */
int dm_setting_int(const dm_host_services *h, dm_ctx *ctx, const char *who, const char *name,
                   int64_t def, int64_t min, int64_t max, int64_t *out, dm_error *err);

/* A size in bytes in min..max: an integer, or a string of digits with an optional suffix K, M or
 * G (also k, m, g; powers of 1024: "64M" is 67108864), as DM's size settings are written. */
int dm_setting_size(const dm_host_services *h, dm_ctx *ctx, const char *who, const char *name,
                    int64_t def, int64_t min, int64_t max, int64_t *out, dm_error *err);

/* The size text above as bytes: 0, or -1 when it is not one (or does not fit in int64_t). */
int dm_size_parse(const char *s, int64_t *out);

/* true or false. */
int dm_setting_bool(const dm_host_services *h, dm_ctx *ctx, const char *who, const char *name,
                    bool def, bool *out, dm_error *err);

#ifdef __cplusplus
}
#endif
#endif /* DMHOST_SETTINGS_H */
