/* The precheck's item names (check_items.h). */
#include "check_items.h"

#include <stddef.h>
#include <string.h>

#define DMH_CHECK_ITEM_NAME(id, name) [DMH_CHECK_##id] = name,
const char *const dmh_check_item_names[DMH_CHECK_N_ITEMS] = {DMH_CHECK_ITEMS(DMH_CHECK_ITEM_NAME)};
#undef DMH_CHECK_ITEM_NAME

static const struct {
  dmh_check_item item;
  const char *name;
} pc_dm_names[] = {
#define DMH_CHECK_DM_NAME(id, name) {DMH_CHECK_##id, name},
    DMH_CHECK_DM_NAMES(DMH_CHECK_DM_NAME)
#undef DMH_CHECK_DM_NAME
};

/* DM's items that dmhost has nothing to check for: accepted in ignore-checking-items so that a DM
 * task file loads, with nothing to skip (docs/precheck.md says why each has none): sharding,
 * online DDL, binlog-do-db, the task's meta position, DM's opt-in primary key check (dmhost's
 * table_schema looks for a primary or unique key), and TiDB Lightning's physical import checks. */
static const char *const pc_dm_only[] = {"schema_of_shard_tables",
                                         "online_ddl",
                                         "binlog_db",
                                         "meta_position",
                                         "primary_key",
                                         "empty_region",
                                         "region_distribution",
                                         "downstream_version",
                                         "free_space",
                                         "downstream_mutex_features",
                                         "downstream_table_empty"};

int dmh_precheck_item_names(const char **out, int max) {
  int n = 0;
  if (n < max)
    out[n++] = "all";
  for (size_t i = 0; i < DMH_CHECK_N_ITEMS && n < max; i++)
    out[n++] = dmh_check_item_names[i];
  for (size_t i = 0; i < sizeof pc_dm_names / sizeof pc_dm_names[0] && n < max; i++)
    out[n++] = pc_dm_names[i].name;
  for (size_t i = 0; i < sizeof pc_dm_only / sizeof pc_dm_only[0] && n < max; i++)
    out[n++] = pc_dm_only[i];
  return n;
}

bool dmh_check_item_ignored(char *const *names, int n, dmh_check_item item) {
  for (int i = 0; i < n; i++) {
    if (strcmp(names[i], "all") == 0 || strcmp(names[i], dmh_check_item_names[item]) == 0)
      return true;
    for (size_t k = 0; k < sizeof pc_dm_names / sizeof pc_dm_names[0]; k++)
      if (pc_dm_names[k].item == item && strcmp(names[i], pc_dm_names[k].name) == 0)
        return true;
  }
  return false;
}
