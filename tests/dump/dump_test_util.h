/*
 * Helpers for the dump unit's tests: a source and task file in a temp folder pointing at the real
 * servers (scripts/mariadb.sh), the supervisor around the built dmhost-dump.so, and checks of the
 * dump folder (docs/dump-format.md).
 */
#ifndef DMH_DUMP_TEST_UTIL_H
#define DMH_DUMP_TEST_UTIL_H

#include <mysql.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "supervisor.h"

typedef struct dt_env {
  char dir[256];      /* temp folder: config files and work root */
  char work[320];     /* work root */
  char dump_dir[352]; /* the dump unit's work dir: <work>/dump */
  dmh_source_config *source;
  dmh_task_config *task;
} dt_env;

int dt_source_port(void);
int dt_target_port(void);

/* Writes source.cfg (user/password/port of `from`) and task.cfg (mode dump; `rules` is put in the
 * mysql-instances entry, `extra` at top level, `dump` as the dump section) and loads them. */
int dt_setup(dt_env *e, const char *name, const char *user, const char *password, int port,
             const char *rules, const char *extra, const char *dump);
void dt_teardown(dt_env *e);
dmh_subtask *dt_subtask(dt_env *e);
/* create + start + wait settled (ms); returns the stage (the subtask stays in *out). */
dmh_stage dt_run(dt_env *e, dmh_subtask **out, int timeout_ms);

long dt_status_int(dmh_subtask *st, const char *key);
int dt_first_error(dmh_subtask *st, char *msg, size_t len);
/* Resumable of the subtask's first error: 1, 0, or -1 when there is none. */
int dt_first_error_resumable(dmh_subtask *st);
bool dt_wait_rows(dmh_subtask *st, long rows, int timeout_ms);

/* Root connections (NAMES binary, UTC), and helpers that fail the test loudly on error. */
MYSQL *dt_connect(int port);
int dt_exec(MYSQL *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
long long dt_query_ll(MYSQL *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* SHOW MASTER STATUS and the GTID position. */
int dt_master_status(MYSQL *m, char *file, size_t flen, uint64_t *pos, char *gtid, size_t glen);

/* Data files <base>.NNNNNN.sql of a table (base = escaped "<db>.<table>"): rows counted from the
 * INSERT lines; *bad counts lines that are not one complete INSERT (or hold a raw CR or NUL).
 * Returns the number of files. */
int dt_data_files(const char *dir, const char *base, long long *rows, long *bad);
bool dt_exists(const char *dir, const char *file);
int dt_count_suffix(const char *dir, const char *suffix);
/* Reads a whole file (NUL-terminated, malloc'd), or NULL. */
char *dt_read(const char *dir, const char *file);
/* Loads the schema and data files of the dump's db `db_part` (escaped) into target_db on the
 * target with the `mariadb` client. */
int dt_load_with_client(const char *dir, const char *db_part, const char *target_db);

double dt_now(void);
void dt_sleep_ms(int ms);
/* VmHWM of this process in kB. */
long dt_vm_hwm_kb(void);

#endif /* DMH_DUMP_TEST_UTIL_H */
