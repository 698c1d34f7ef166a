/* The code table turned into lookups, and error construction. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "dmhost/sdk.h"

typedef struct {
  int32_t code;
  const char *name;
  uint16_t cls;
  uint8_t scope;
  uint8_t level;
  uint8_t resumable;
  const char *workaround;
} err_row;

static const err_row err_table[] = {
#define DM_X_ROW(name, code, cls, scope, level, resumable, workaround)                             \
  {code, #name, cls, scope, level, resumable, workaround},
    DM_ERROR_MAP(DM_X_ROW)
#undef DM_X_ROW
};

static const err_row *err_find(int32_t code) {
  for (size_t i = 0; i < sizeof err_table / sizeof err_table[0]; i++)
    if (err_table[i].code == code)
      return &err_table[i];
  return NULL;
}

char *dm_strlcpy(char *dst, const char *src, size_t size) {
  if (size == 0)
    return dst;
  size_t n = src ? strlen(src) : 0;
  if (n >= size)
    n = size - 1;
  if (n)
    memcpy(dst, src, n);
  dst[n] = '\0';
  return dst;
}

void dm_error_vset(dm_error *err, int32_t code, const char *raw_cause, const char *fmt,
                   va_list ap) {
  /* Formatted before the struct is cleared: wrapping an error in place (raw_cause = err->message,
   * or the old message as an argument) must not read a wiped buffer. */
  char message[sizeof err->message] = "";
  char raw[sizeof err->raw_cause];
  if (fmt)
    vsnprintf(message, sizeof message, fmt, ap);
  dm_strlcpy(raw, raw_cause, sizeof raw);
  memset(err, 0, sizeof *err);
  err->code = code;
  const err_row *row = err_find(code);
  if (row) {
    err->cls = row->cls;
    err->scope = row->scope;
    err->level = row->level;
    err->resumable = row->resumable;
    dm_strlcpy(err->workaround, row->workaround, sizeof err->workaround);
  } else {
    err->cls = DM_CLASS_UNIT;
    err->level = DM_LEVEL_MEDIUM;
  }
  dm_strlcpy(err->message, message, sizeof err->message);
  dm_strlcpy(err->raw_cause, raw, sizeof err->raw_cause);
}

void dm_error_set(dm_error *err, int32_t code, const char *raw_cause, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  dm_error_vset(err, code, raw_cause, fmt, ap);
  va_end(ap);
}

const char *dm_error_code_name(int32_t code) {
  const err_row *row = err_find(code);
  return row ? row->name : NULL;
}

bool dm_db_errno_rolled_back(unsigned code) {
  return code == 1213 /* ER_LOCK_DEADLOCK */ || code == 1205 /* ER_LOCK_WAIT_TIMEOUT */;
}

bool dm_db_errno_transient(unsigned code) {
  if (dm_db_errno_rolled_back(code))
    return true;
  switch (code) {
  case 2002: /* CR_CONNECTION_ERROR */
  case 2003: /* CR_CONN_HOST_ERROR */
  case 2006: /* CR_SERVER_GONE_ERROR */
  case 2013: /* CR_SERVER_LOST */
  case 2055: /* lost connection at '%s', system error */
  case 1053: /* ER_SERVER_SHUTDOWN: the server is going down; it will come back */
  case 1927: /* ER_CONNECTION_KILLED */
    return true;
  default:
    return false;
  }
}

bool dm_errno_permanent(int e) {
  switch (e) {
  case ENAMETOOLONG:
  case EACCES:
  case EPERM:
  case EROFS:
  case EISDIR:
  case ENOTDIR:
  case EEXIST:
  case ELOOP:
  case EINVAL:
    return true;
  default:
    return false;
  }
}

int dm_error_code_resumable(int32_t code) {
  const err_row *row = err_find(code);
  return row ? row->resumable : 0;
}

const char *dm_error_class_name(int cls) {
  static const char *const names[] = {
      [DM_CLASS_NONE] = "not-set",          [DM_CLASS_FUNCTIONAL] = "functional",
      [DM_CLASS_CONFIG] = "config",         [DM_CLASS_LOADER] = "unit-loader",
      [DM_CLASS_SUPERVISOR] = "supervisor", [DM_CLASS_CONTROL] = "control",
      [DM_CLASS_DATABASE] = "database",     [DM_CLASS_BINLOG] = "binlog-op",
      [DM_CLASS_CHECKPOINT] = "checkpoint", [DM_CLASS_DUMP_UNIT] = "dump-unit",
      [DM_CLASS_LOAD_UNIT] = "load-unit",   [DM_CLASS_SYNC_UNIT] = "sync-unit",
      [DM_CLASS_RELAY_UNIT] = "relay-unit", [DM_CLASS_UNIT] = "unit",
      [DM_CLASS_CLUSTER] = "cluster",       [DM_CLASS_TASK_CHECK] = "task-check",
      [DM_CLASS_VALIDATOR] = "validator",
  };
  if (cls < 0 || (size_t)cls >= sizeof names / sizeof names[0] || !names[cls])
    return "unknown";
  return names[cls];
}

const char *dm_error_scope_name(int scope) {
  switch (scope) {
  case DM_SCOPE_UPSTREAM:
    return "upstream";
  case DM_SCOPE_DOWNSTREAM:
    return "downstream";
  case DM_SCOPE_INTERNAL:
    return "internal";
  default:
    return "not-set";
  }
}

const char *dm_error_level_name(int level) {
  switch (level) {
  case DM_LEVEL_LOW:
    return "low";
  case DM_LEVEL_MEDIUM:
    return "medium";
  default:
    return "high";
  }
}
