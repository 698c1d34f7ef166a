/*
 * Helpers for the load unit's tests: source and task files in a temp folder pointing at the real
 * servers (scripts/mariadb.sh), the supervisor around the built dmhost-load.so (and dmhost-dump.so
 * for mode full), hand-written dump folders (docs/dump-format.md) and status/error readers.
 */
#ifndef DMH_LOAD_TEST_UTIL_H
#define DMH_LOAD_TEST_UTIL_H

#include <mysql.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "supervisor.h"

typedef struct lt_env {
  char dir[256];      /* temp folder: config files and work root */
  char work[320];     /* work root of the subtasks */
  char dump_dir[352]; /* a hand-made dump folder, <dir>/dump-in (mode load points `dir` at it) */
  dmh_source_config *source;
  dmh_task_config *task;
} lt_env;

/* Options of one task file. NULL fields are left out. */
typedef struct lt_task {
  const char *name;            /* task name, unique per test */
  const char *mode;            /* "load" (default) or "full" */
  const char *target_user;     /* default root */
  const char *target_password; /* default "" */
  unsigned target_port;        /* default: the test pair's target */
  const char *instance;        /* put into the mysql-instances entry (rules) */
  const char *extra;           /* top-level settings (routes, block-allow-list) */
  const char *load;            /* the load section; for mode load `dir` is added unless given */
  const char *supervisor;      /* the supervisor section; default: no auto-resume, short waits */
  const char *sync;            /* the sync section's settings (NULL: no section) */
  const char *source_extra;    /* top-level settings of the source file (enable-relay, ...) */
  const char *source_user;     /* default root */
  const char *source_password; /* default "" */
  const char *from_extra;      /* settings added inside the source file's `from` group */
  const char *target_extra;    /* settings added inside the task file's `target-database` */
} lt_task;

/* Makes the temp folder and the hand-made dump folder (empty). */
int lt_init(lt_env *e);
/* Writes and loads source.cfg and task.cfg (replacing the ones loaded before). */
int lt_config(lt_env *e, const lt_task *t);
void lt_teardown(lt_env *e);

/* A file of the hand-made dump folder. */
int lt_write(lt_env *e, const char *name, const char *text);
/* `metadata` with Log/Pos/GTID as the dump writes it. */
int lt_write_metadata(lt_env *e, const char *log, unsigned long pos, const char *gtid);

dmh_subtask *lt_subtask(lt_env *e);
/* The subtask of the task that reads the folder of a relay subtask (relay NULL: lt_subtask). */
dmh_subtask *lt_subtask_relay(lt_env *e, dmh_subtask *relay);
/* Relay on, for lt_task.source_extra: relay folder <dir>/relay, the built relay unit, status every
 * 100 ms, no fsync; `more` (may be NULL) goes into the relay section. */
void lt_relay_settings(const lt_env *e, const char *more, char *out, size_t len);
/* The relay subtask of the source (work root <dir>/relay-work): created, not started. */
dmh_subtask *lt_relay(lt_env *e);
/* create + start + wait settled; the subtask stays in *out (NULL if create failed). */
dmh_stage lt_run(lt_env *e, dmh_subtask **out, int timeout_ms);

/* Runs fn(arg) with the host's log (stderr, at debug level) captured: the text, malloc'd and
 * NUL-terminated, also echoed to stderr afterwards so it stays in the test's output. */
char *lt_capture_stderr(void (*fn)(void *), void *arg);
/* lt_run with its log captured into *log (lt_capture_stderr). */
dmh_stage lt_run_logged(lt_env *e, dmh_subtask **out, int timeout_ms, char **log);

/* syncStatus fields when the subtask has a sync unit, else loadStatus fields. */
long long lt_status_int(dmh_subtask *st, const char *key);
const char *lt_status_str(dmh_subtask *st, const char *key, char *buf, size_t len);
/* The first error of the result: code, message, raw cause, resumable. 0 when none. */
int lt_first_error(dmh_subtask *st, char *msg, size_t len, char *raw, size_t rlen, bool *resumable);
/* Waits until loadStatus.finishedBytes >= bytes (true) or the subtask settles / time runs out. */
bool lt_wait_bytes(dmh_subtask *st, long long bytes, int timeout_ms);

/* Root connections to the servers (from dmh_testdb), and a helper that fails loudly. */
MYSQL *lt_source(void);
MYSQL *lt_target(void);
int lt_exec(MYSQL *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* lt_exec with sql_log_bin off: accounts and grants are not replicated, so they stay out of the
 * binlog other tests read from the shared source. */
int lt_exec_unlogged(MYSQL *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A test account `user`@127.0.0.1 (dropped first) with `grants` ("SELECT, RELOAD ON *.*"),
 * unlogged. 0 or -1. */
int lt_account(MYSQL *m, const char *user, const char *password, const char *grants);
void lt_account_drop(MYSQL *m, const char *user);
long long lt_count(MYSQL *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Removes this task's checkpoint rows and tables of the load's meta schema. */
void lt_drop_checkpoint(MYSQL *target, const char *task);
/* A suite's connection to the target, cleaned (clean) when opened and before it is closed. */
int lt_suite_open(MYSQL **target, void (*clean)(void));
int lt_suite_close(MYSQL **target, void (*clean)(void));
/* The end of a suite with a source database and a test account: clean (the target), the database
 * `db` and the account `user` dropped on the source, both connections closed. */
int lt_suite_close_account(MYSQL **source, MYSQL **target, void (*clean)(void), const char *db,
                           const char *user);
/* Drops these databases and the checkpoints of these tasks. */
void lt_drop_all(MYSQL *target, const char *const *dbs, size_t n_dbs, const char *const *tasks,
                 size_t n_tasks);

/* Do both tables have the same SHOW CREATE TABLE (but AUTO_INCREMENT=N)? Prints both if not. */
bool lt_same_create(MYSQL *a, const char *db_a, MYSQL *b, const char *db_b, const char *table);

/* Does text hold part (lt_has) / not hold it (lt_lacks)? Prints both when not. */
bool lt_has(const char *text, const char *part);
bool lt_lacks(const char *text, const char *part);

double lt_now(void);
void lt_sleep_ms(int ms);

#endif /* DMH_LOAD_TEST_UTIL_H */
