/*
 * The precheck's items by name, the one list: ignore-checking-items' vocabulary (config.c refuses a
 * task file naming another) and the rows of the precheck's table (precheck.c, indexed by
 * dmh_check_item). Config owns it, below the precheck, so that loading a task file does not need
 * the precheck (docs/architecture.md, the layers).
 */
#ifndef DMH_CHECK_ITEMS_H
#define DMH_CHECK_ITEMS_H

#include <stdbool.h>

/* X(ID, name) for each item, in the order check-task runs them (docs/precheck.md describes each).
 */
#define DMH_CHECK_ITEMS(X)                                                                         \
  X(VERSION, "version")                                                                            \
  X(SERVER_ID, "server_id")                                                                        \
  X(BINLOG_ENABLE, "binlog_enable")                                                                \
  X(BINLOG_FORMAT, "binlog_format")                                                                \
  X(BINLOG_ROW_IMAGE, "binlog_row_image")                                                          \
  X(DUMP_PRIVILEGE, "dump_privilege")                                                              \
  X(REPLICATION_PRIVILEGE, "replication_privilege")                                                \
  X(TARGET_PRIVILEGE, "target_privilege")                                                          \
  X(TARGET_WRITABLE, "target_writable")                                                            \
  X(TABLE_SCHEMA, "table_schema")                                                                  \
  X(TARGET_CHARSET, "target_charset")                                                              \
  X(AUTO_INCREMENT_ID, "auto_increment_ID")                                                        \
  X(CONN_NUMBER_CHECKING, "conn_number_checking")                                                  \
  X(RELAY_DISK_SPACE, "relay_disk_space")

#define DMH_CHECK_ITEM_ENUM(id, name) DMH_CHECK_##id,
typedef enum dmh_check_item {
  DMH_CHECK_ITEMS(DMH_CHECK_ITEM_ENUM) DMH_CHECK_N_ITEMS
} dmh_check_item;
#undef DMH_CHECK_ITEM_ENUM

/* DM's names for dmhost's items where they differ (dm/config/checking_item.go): X(ID, DM's name).
 * ignore-checking-items takes either. */
#define DMH_CHECK_DM_NAMES(X) X(CONN_NUMBER_CHECKING, "conn_number")

/* Each item's name ("binlog_format"), by dmh_check_item. */
extern const char *const dmh_check_item_names[DMH_CHECK_N_ITEMS];

/* The names ignore-checking-items accepts ("all", every item, DM's names of them, then DM's items
 * dmhost has no counterpart for) into out (at most max, DMH_CHECK_NAMES_MAX is enough); returns
 * how many. */
#define DMH_CHECK_NAMES_MAX 64
int dmh_precheck_item_names(const char **out, int max);

/* Does the list (ignore-checking-items) skip the item: "all", its name, or DM's name of it? */
bool dmh_check_item_ignored(char *const *names, int n, dmh_check_item item);

#endif /* DMH_CHECK_ITEMS_H */
