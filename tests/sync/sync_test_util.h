/*
 * Helpers of the sync unit's tests against the real pair (test_sync.c, test_sync_inject.c): a
 * task in mode incremental from the source's current position, started and stopped through the
 * supervisor, and waits on its checkpoint.
 */
#ifndef DMH_SYNC_TEST_UTIL_H
#define DMH_SYNC_TEST_UTIL_H

#include <mysql.h>
#include <stdbool.h>
#include <stddef.h>

#include "load_test_util.h"

/* The sync section of the tasks: small batches, fast status. */
#define TS_SYNC "worker-count = 4; batch-ms = 20; status-interval = 100;"

/* The root connections the helpers use (the suite's own). */
void ts_init(MYSQL *source, MYSQL *target);
/* A suite's init and clean: opens (closes) root connections to both servers and hands them to
 * ts_init. 0, or -1 when a server cannot be reached. */
int ts_suite_open(MYSQL **source, MYSQL **target);
void ts_suite_close(MYSQL **source, MYSQL **target);
/* The source's current position (file, pos, GTID; gtid may be NULL). */
void ts_master(char *file, unsigned long *pos, char *gtid);
/* Waits until the task's global checkpoint row reached (file, pos). */
bool ts_wait_checkpoint(const char *task, const char *file, unsigned long pos, int timeout_ms);
/* Source and target databases equal cell by cell (prints the difference). */
bool ts_equal(const char *db_src, const char *db_dst);
/* A task in mode incremental from the source's current position, block-allow list do-dbs = db;
 * extra_rules: routes (named "r") or filters ("f1", "f2"); sync NULL: TS_SYNC. */
int ts_config(lt_env *e, const char *task, const char *db, const char *extra_rules,
              const char *sync);
/* The same with settings added to the source file (source_extra: enable-relay, ...). */
int ts_config_source(lt_env *e, const char *task, const char *db, const char *extra_rules,
                     const char *sync, const char *source_extra);
/* The same with the block-allow list's body given (bal: "do-dbs = [...]; do-tables = (...);"). */
int ts_config_bal(lt_env *e, const char *task, const char *bal, const char *extra_rules,
                  const char *sync, const char *source_extra);
/* The same with the instance's rule settings given (inst_rules: "expression-filters = [...];"). */
int ts_config_inst(lt_env *e, const char *task, const char *bal, const char *inst_rules,
                   const char *extra_rules, const char *sync, const char *source_extra);
/* Creates and starts the subtask and waits until it runs. */
dmh_subtask *ts_start(lt_env *e);
/* Everything written so far is applied (waits on the checkpoint). */
bool ts_catch_up(const char *task, int timeout_ms);
void ts_stop(dmh_subtask *st);
/* A relay folder <dir>/relay of one sub-folder <uuid>.000001 (made, named in server-uuid.index),
 * as a relay leaves it (the SDK's dm_relay_index_add, which the relay calls): the sub-folder's
 * path goes to `sub`. 0, or -1. */
int ts_relay_folder(const char *dir, const char *uuid, char *sub, size_t len);
/* Still running, no error recorded (prints the error when there is one). */
bool ts_clean_run(dmh_subtask *st);
/* The position "FILE:POS" an error message names ("the DDL at mysql-bin.000002:123 failed"). */
void ts_error_at(const char *msg, char *at, size_t len);

#endif /* DMH_SYNC_TEST_UTIL_H */
