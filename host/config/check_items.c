/* The precheck's item names (check_items.h). */
#include "check_items.h"

#include <stddef.h>

#define DMH_CHECK_ITEM_NAME(id, name) [DMH_CHECK_##id] = name,
const char *const dmh_check_item_names[DMH_CHECK_N_ITEMS] = {DMH_CHECK_ITEMS(DMH_CHECK_ITEM_NAME)};
#undef DMH_CHECK_ITEM_NAME

/* DM's items that dmhost has nothing to check for (sharding, online DDL, binlog-do-db): accepted in
 * ignore-checking-items so that a DM task file loads, with nothing to skip. */
static const char *const pc_dm_only[] = {"schema_of_shard_tables", "online_ddl", "binlog_db"};

int dmh_precheck_item_names(const char **out, int max) {
  int n = 0;
  if (n < max)
    out[n++] = "all";
  for (size_t i = 0; i < DMH_CHECK_N_ITEMS && n < max; i++)
    out[n++] = dmh_check_item_names[i];
  for (size_t i = 0; i < sizeof pc_dm_only / sizeof pc_dm_only[0] && n < max; i++)
    out[n++] = pc_dm_only[i];
  return n;
}
