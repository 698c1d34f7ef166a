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

/* A size in bytes in min..max: an integer, or a string of digits with an optional suffix K, M, G
 * or T (also k, m, g, t; powers of 1024: "64M" is 67108864), as DM's size settings are written. */
int dm_setting_size(const dm_host_services *h, dm_ctx *ctx, const char *who, const char *name,
                    int64_t def, int64_t min, int64_t max, int64_t *out, dm_error *err);

/* The size text above as bytes: 0, or -1 when it is not one (or does not fit in int64_t). */
int dm_size_parse(const char *s, int64_t *out);

/* A duration as Go's time.ParseDuration writes it (DM's duration settings: "60s", "1m30s",
 * "1.5h", "500ms"; units ns, us, µs, ms, s, m, h; a bare "0"), 0 or more, in milliseconds (a
 * positive duration shorter than 1 ms is 1 ms): 0, or -1 when it is not one (a number without a
 * unit but "0", a negative one, junk, or more than 10^15 ms). */
int dm_duration_parse(const char *s, int64_t *ms);

/* A duration setting, a string of dm_duration_parse's text, in milliseconds, at most max_ms;
 * missing or "": def_ms. Any other value (a number too) is refused naming the setting. */
int dm_setting_duration(const dm_host_services *h, dm_ctx *ctx, const char *who, const char *name,
                        int64_t def_ms, int64_t max_ms, int64_t *out, dm_error *err);

/* true or false. */
int dm_setting_bool(const dm_host_services *h, dm_ctx *ctx, const char *who, const char *name,
                    bool def, bool *out, dm_error *err);

#ifdef __cplusplus
}
#endif
#endif /* DMHOST_SETTINGS_H */
