/*
 * The validator's settings (the task's `sync.validator` group, DM's validator config): read and
 * checked once per start (sync_val.h, docs/validation.md "Settings").
 */
#include <stdint.h>
#include <string.h>

#include <dmhost/settings.h>

#include "sync.h"
#include "sync_val.h"

int sync_val_settings(sync_unit *u, sync_val_cfg *c, dm_error *err) {
  const dm_host_services *h = u->host;
  memset(c, 0, sizeof *c);
  const char *mode = NULL;
  dm_cfg_result r = h->cfg_string(u->ctx, "validator.mode", &mode);
  if (r == DM_CFG_WRONG_TYPE ||
      (r == DM_CFG_OK && strcmp(mode, "none") != 0 && strcmp(mode, "fast") != 0 &&
       strcmp(mode, "full") != 0 && mode[0] != '\0')) {
    h->error_make(u->ctx, err, DM_ERR_CONFIG_INVALID, NULL,
                  "sync: setting `validator.mode` must be \"none\", \"fast\" or \"full\" (DM's "
                  "validator modes), not %s",
                  r == DM_CFG_OK ? mode : "a value of another type");
    return -1;
  }
  c->mode = r != DM_CFG_OK || !strcmp(mode, "none") || !mode[0] ? SYNC_VAL_NONE
            : strcmp(mode, "fast") == 0                         ? SYNC_VAL_FAST
                                                                : SYNC_VAL_FULL;
  int64_t v;
  if (dm_setting_int(h, u->ctx, "sync", "validator.worker-count", 4, 1, 64, &v, err) < 0)
    return -1;
  c->workers = (int)v;
  if (dm_setting_int(h, u->ctx, "sync", "validator.batch-query-size", 100, 1, 10000, &v, err) < 0)
    return -1;
  c->batch = (int)v;
  const int64_t day = 86400000;
  if (dm_setting_duration(h, u->ctx, "sync", "validator.validate-interval", 10000, day,
                          &c->validate_ms, err) < 0 ||
      dm_setting_duration(h, u->ctx, "sync", "validator.check-interval", 5000, day, &c->check_ms,
                          err) < 0 ||
      dm_setting_duration(h, u->ctx, "sync", "validator.row-error-delay", 30 * 60000, 30 * day,
                          &c->error_delay_ms, err) < 0 ||
      dm_setting_duration(h, u->ctx, "sync", "validator.meta-flush-interval", 5 * 60000, day,
                          &c->flush_ms, err) < 0)
    return -1;
  /* DM: 0 means the default */
  if (!c->validate_ms)
    c->validate_ms = 10000;
  if (!c->check_ms)
    c->check_ms = 5000;
  if (!c->error_delay_ms)
    c->error_delay_ms = 30 * 60000;
  if (!c->flush_ms)
    c->flush_ms = 5 * 60000;
  if (dm_setting_size(h, u->ctx, "sync", "validator.max-pending-row-size", 500 << 20, 1 << 16,
                      (int64_t)1 << 40, &c->max_bytes, err) < 0 ||
      dm_setting_int(h, u->ctx, "sync", "validator.max-pending-row-count", INT32_MAX, 1, INT32_MAX,
                     &c->max_rows, err) < 0)
    return -1;
  const char *st = NULL;
  r = h->cfg_string(u->ctx, "validator.start-time", &st);
  if (r == DM_CFG_WRONG_TYPE || (r == DM_CFG_OK && strlen(st) >= sizeof c->start_time)) {
    h->error_make(u->ctx, err, DM_ERR_CONFIG_INVALID, NULL,
                  "sync: setting `validator.start-time` must be a time \"YYYY-MM-DD HH:MM:SS\"");
    return -1;
  }
  if (r == DM_CFG_OK)
    dm_strlcpy(c->start_time, st, sizeof c->start_time);
  return 0;
}
