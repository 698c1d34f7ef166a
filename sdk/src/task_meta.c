/* The names of a task's meta on the target (task_meta.h). */
#include "dmhost/task_meta.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

uint64_t dm_hash64(const void *p, size_t len) {
  const unsigned char *s = p;
  uint64_t h = 0xcbf29ce484222325ull;
  while (len >= 8) {
    uint64_t w;
    memcpy(&w, s, 8);
    h = (h ^ w) * 0x100000001b3ull;
    h ^= h >> 29;
    s += 8;
    len -= 8;
  }
  while (len--)
    h = (h ^ *s++) * 0x100000001b3ull;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

int dm_task_meta_table_name(const char *task, dm_task_meta_table which, char *out, size_t len) {
  static const char *const suffix[DM_META_TABLE_COUNT] = {
      [DM_META_LOADER_CHECKPOINT] = "_loader_checkpoint",
      [DM_META_LOADER_KEYS] = "_loader_keys",
      [DM_META_SYNCER_CHECKPOINT] = "_syncer_checkpoint",
      [DM_META_ONLINEDDL] = "_onlineddl",
      [DM_META_SYNCER_XA] = "_syncer_xa",
      [DM_META_VALIDATOR_CHECKPOINT] = "_validator_checkpoint",
      [DM_META_VALIDATOR_PENDING_CHANGE] = "_validator_pending_change",
      [DM_META_VALIDATOR_ERROR_CHANGE] = "_validator_error_change",
  };
  if ((unsigned)which >= DM_META_TABLE_COUNT || !task)
    return -1;
  int n = snprintf(out, len, "%s%s", task, suffix[which]);
  return n < 0 || (size_t)n >= len || n > DM_META_NAME_MAX ? -1 : 0;
}

int dm_tracker_schema_prefix(const char *task, const char *source, char *out, size_t len) {
  /* the pair as task NUL source: no two pairs give the same bytes */
  char key[2 * 256 + 2]; /* names of up to 256 bytes, as the units keep them */
  int n = snprintf(key, sizeof key, "%s%c%s", task, '\0', source);
  if (n < 0 || (size_t)n >= sizeof key)
    return -1;
  int w = snprintf(out, len, "_dmt_%012" PRIx64 "_",
                   (uint64_t)(dm_hash64(key, (size_t)n) & 0xffffffffffffull));
  return w < 0 || (size_t)w >= len ? -1 : 0;
}
