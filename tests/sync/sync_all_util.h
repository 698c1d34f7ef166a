/*
 * Helpers of the sync unit's tests in mode all (test_sync_all_*.c): dump -> load -> sync with the
 * real units, under the supervisor in the test's process, while a writer thread keeps changing
 * the source: random multi-statement transactions (inserts, value updates, primary and unique key
 * changes and swaps, deletes, delete + re-insert of a key, multi-row changes, rollbacks) on four
 * tables (int PK, PK + UNIQUE, no key, composite PK) from before the dump starts until sync has
 * run a while. After the writer stops, a marker transaction is written, the sync checkpoint's
 * global row must reach the source's SHOW MASTER STATUS, and the target must equal the source cell
 * by cell. SA_WRITER_NO_KEYLESS=1 keeps the writer off the table without a key.
 *
 * Small batches (batch = 500, batch-ms = 50) and 4 workers give many batches and causality cases.
 * The writer is in sync_all_writer.c, the rest in sync_all_util.c.
 */
#ifndef DMH_SYNC_ALL_UTIL_H
#define DMH_SYNC_ALL_UTIL_H

#include <mysql.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "load_test_util.h"

#define SA_PK_ROWS 20000
#define SA_UK_ROWS 10000
#define SA_NK_ROWS 5000
#define SA_CK_ROWS 10000 /* 1000 values of a x 10 of b */

/* Resumable errors (a lost connection, a deadlock on the target) are resumed at once, as a
 * production task would after its back-off; non-resumable ones wait (and fail the test). */
extern const char sa_sup_auto[];
extern const char sa_sup_manual[];

/* The suite's root connections to the source and the target (sa_suite_init opens them). */
extern MYSQL *src, *dst;

/* ---- the writer (sync_all_writer.c) ---- */

typedef struct sa_writer {
  pthread_t th;
  const char *db;
  unsigned seed;
  atomic_bool stop;
  atomic_bool hold, held; /* hold: wait between transactions; held: waiting now */
  atomic_long commits, rollbacks, failed, rows;
  int next; /* fresh keys */
  bool running;
} sa_writer;

/* The writer of the running test (a failed CU_ASSERT_FATAL leaves it running: the next test and
 * the suite's clean-up stop it). */
extern sa_writer sa_w;

/* A step of the tests' pseudo-random sequence (the writer's, the storm's sleeps). */
unsigned sa_rand(unsigned *s);
/* Starts the writer on db (stops a running one first). */
void sa_writer_start(sa_writer *w, const char *db, unsigned seed);
/* Stops it (when running), prints its counts, asserts it committed more than 100 transactions. */
void sa_writer_stop(sa_writer *w);
/* Waits (at most timeout_ms) until it has committed `more` transactions after the call: the event a
 * test waits for instead of a fixed time (a loaded machine writes slower). true when they came. */
bool sa_writer_wait_commits(sa_writer *w, long more, int timeout_ms);

/* ---- databases, subtasks, comparison (sync_all_util.c) ---- */

/* The source database db with the four tables and marker, filled (the target's copy and the
 * task's checkpoint dropped; db noted for the suite's clean-up, so a string that lives on). 0, or
 * -1. */
int sa_make_source(const char *db);
/* A member of the subtask's status as a string (empty when absent). */
const char *sa_str(dmh_subtask *st, const char *key, char *buf, size_t len);
/* Waits until the subtask is Running in its sync unit with rows applied. */
bool sa_wait_sync(dmh_subtask *st, long long rows, int timeout_ms);
/* After the writer stopped: a marker transaction, then the checkpoint's global row must reach the
 * source's SHOW MASTER STATUS, and the status must say synced. Returns the seconds it took (<0:
 * not reached). */
double sa_catch_up(dmh_subtask *st, const char *db, const char *task, int timeout_ms);
/* Source and target equal cell by cell (asserted; the row counts printed). */
void sa_assert_equal(const char *db);
/* With the writer held between transactions: catch up and compare (the writer goes on after). */
void sa_equal_now(dmh_subtask *st, sa_writer *w, const char *db, const char *when);
/* Deadlocks the target detected so far (all of them between the sync unit's workers: nothing
 * else writes there). */
long long sa_deadlocks(void);
/* No error in the result (a duplicate key would mean a change applied twice). */
void sa_assert_no_error(dmh_subtask *st, const char *when);
/* The task of mode all over `db` (task named like it); source_extra: relay settings. */
int sa_config(lt_env *e, const char *db, const char *source_extra, const char *sup);
/* The subtask of the configured task (relay: the source's relay subtask, or NULL), started. */
dmh_subtask *sa_start(lt_env *e, dmh_subtask *relay);

/* ---- one case of mode all ---- */

typedef struct sa_case {
  const char *db;
  double t0;     /* when it began */
  long long dl0; /* the target's deadlocks then */
  lt_env e;      /* its folder, config files and work root */
} sa_case;

/* The writer of an earlier case stopped, the source database db made, the task of mode all over
 * it configured (with the relay on, its settings from lt_relay_settings; sup as in sa_config);
 * fails the test (fatally) when one of these fails. */
void sa_case_begin(sa_case *c, const char *db, bool relay, const char *sup);
/* The case's subtask started (relay as in sa_start), then waited for (60 s) until it runs in its
 * sync unit with at least `rows` applied; fatal when it does not. */
dmh_subtask *sa_case_start(sa_case *c, dmh_subtask *relay, long long rows);
/* The subtask (NULL: none) destroyed, the folder removed, the case's seconds and the deadlocks
 * between the sync workers since sa_case_begin printed. */
void sa_case_end(sa_case *c, dmh_subtask *st);

/* The suite's init and clean: root connections; clean also stops the writer and drops the
 * databases sa_make_source made in this process (no other: the mode-all suites run side by side).
 */
int sa_suite_init(void);
int sa_suite_clean(void);

#endif /* DMH_SYNC_ALL_UTIL_H */
