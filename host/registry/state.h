/*
 * What `dmhost serve` keeps in its state dir so that a restart brings back what the user asked for:
 *
 *   <state-dir>/state.json                    worker binding, sources, tasks and expected stages
 *   <state-dir>/sources/<source>/source.cfg   copy of the source file given to operate-source
 *                                             create
 *   <state-dir>/sources/<source>/relay-work/  the relay subtask's work_root
 *   <state-dir>/tasks/<task>/task.cfg         copy of the task file given to start-task
 *   <state-dir>/tasks/<task>/<source>/        the subtask's work_root (units' work dirs,
 *                                             checkpoints)
 *   <state-dir>/tasks/<task>/shard.json       the task's shard DDL locks (registry_shard.h)
 *   <state-dir>/dmhost.lock                   flock'ed by the running daemon
 *   <state-dir>/dmhost.sock                   the control socket (default)
 *
 * state.json (version 1):
 *   {"version": 1,
 *    "worker": {"stage": "relay", "source": "mysql-01"},
 *    "sources": [{"source": "mysql-01", "file": "sources/mysql-01/source.cfg", "relay":
 * "Running"}], "tasks": [{"name": "t1", "file": "tasks/t1/task.cfg", "stage": "Paused"}]} Files are
 * relative to the state dir so the folder can be moved. A source disabled by operate-source disable
 * has "enable": false, and each task that disable paused "pausedBySource": true (both left out
 * otherwise, as in the files of a dmhost before them). The worker stage persisted is free, bound
 * or relay (never offline); see worker.h for how it is restored.
 *
 * Every file here is written atomically: a temp file next to it (name + ".tmp"), fsync, rename,
 * fsync of the folder. A temp file left by a crash is never read and is overwritten by the next
 * write. Nothing here locks: the caller serializes writes (registry.c writes under its lock).
 */
#ifndef DMH_STATE_H
#define DMH_STATE_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "dmhost/error.h"
#include "dmhost/position.h"
#include "worker.h"

#define DMH_STATE_FILE "state.json"
#define DMH_STATE_VERSION 1
#define DMH_STATE_NAME_MAX 127 /* longest task name or source-id used as a folder name */

/* The stage a task or relay should be in after a restart (not the stage it is in now). */
typedef enum dmh_expect_stage {
  DMH_EXPECT_RUNNING = 0,
  DMH_EXPECT_PAUSED = 1,  /* tasks only */
  DMH_EXPECT_STOPPED = 2, /* relays only */
} dmh_expect_stage;

/* "Running", "Paused", "Stopped" (DM's stage names). */
const char *dmh_expect_stage_name(dmh_expect_stage s);

typedef struct dmh_state_source {
  char *source_id;
  char *file;             /* relative to the state dir */
  dmh_expect_stage relay; /* Running or Stopped */
  bool disabled;          /* operate-source disable: "enable": false */
} dmh_state_source;

/* Builds swapped in with swap-unit, by the unit's kind name ("sync", a custom kind). */
typedef struct dmh_unit_paths {
  char *unit[DMH_UNIT_SLOTS];
  char *path[DMH_UNIT_SLOTS];
  int n;
} dmh_unit_paths;

/* Set (replace or add) the build of `unit`; 0, or -1 with *err (out of memory, list full). */
int dmh_unit_paths_set(dmh_unit_paths *p, const char *unit, const char *path, dm_error *err);
/* The build of `unit`, or NULL. */
const char *dmh_unit_paths_get(const dmh_unit_paths *p, const char *unit);
void dmh_unit_paths_clear(dmh_unit_paths *p);

typedef struct dmh_state_task {
  char *name;
  char *file;                /* relative to the state dir */
  dmh_expect_stage stage;    /* Running or Paused */
  dmh_unit_paths unit_paths; /* swapped builds; a unit not named: as the task file says */
  bool source_paused;        /* paused by operate-source disable: enable resumes it */
  /* start-task --start-time's position on the bound source (name "": none): the meta a fresh
   * sync starts from (registry_start_time.c) */
  dm_position start_pos;
} dmh_state_task;

typedef struct dmh_state {
  dmh_worker worker; /* stage free, bound or relay */
  dmh_state_source *sources;
  int n_sources;
  dmh_state_task *tasks;
  int n_tasks;
} dmh_state;

/* An empty state: worker free, nothing else. */
void dmh_state_init(dmh_state *st);
/* Frees what the state owns and leaves it empty. */
void dmh_state_clear(dmh_state *st);
/* Append entries (strings copied). Return 0, or -1 with DM_ERR_NO_MEMORY. */
int dmh_state_add_source(dmh_state *st, const char *source_id, const char *file,
                         dmh_expect_stage relay, dm_error *err);
int dmh_state_add_task(dmh_state *st, const char *name, const char *file, dmh_expect_stage stage,
                       dm_error *err);

/*
 * Read <dir>/state.json into *st (initialised here). A missing file is an empty state (first
 * start). A file that does not parse, has wrong types, another version, or contradicts itself (the
 * worker bound to a source that is not listed, a relay running with the worker not at relay)
 * gives DM_ERR_STATE with the path and what is wrong. Returns 0 or -1.
 */
int dmh_state_load(const char *dir, dmh_state *st, dm_error *err);
/* Write *st to <dir>/state.json atomically. Returns 0 or -1 with DM_ERR_STATE. */
int dmh_state_save(const char *dir, const dmh_state *st, dm_error *err);

/* Write `len` bytes to `path` atomically (see above). Returns 0 or -1 with DM_ERR_STATE. */
int dmh_state_write_file(const char *path, const void *data, size_t len, dm_error *err);
/* A whole file in a malloc'd NUL-terminated buffer (*len_out, may be NULL: its length without the
 * NUL). NULL with errno set. */
char *dmh_state_read_all(const char *path, size_t *len_out);
/* Copy the file `src` to `dst` atomically; a missing or unreadable src is DM_ERR_CONFIG_IO (the
 * user's file), a failure to write dst DM_ERR_STATE. */
int dmh_state_copy_file(const char *src, const char *dst, dm_error *err);
/* mkdir -p with mode 0700. Returns 0 or -1 with DM_ERR_STATE. */
int dmh_state_mkdirs(const char *path, dm_error *err);
/* Remove a file; a missing one is fine. Returns 0 or -1 with DM_ERR_STATE. */
int dmh_state_remove_file(const char *path, dm_error *err);
/* Remove a folder and everything in it (symlinks removed, not followed); a missing one is fine.
 * Returns 0 or -1 with DM_ERR_STATE. */
int dmh_state_remove_tree(const char *path, dm_error *err);

/*
 * Can `name` (a task name or source-id) be used as a folder name in the state dir: 1 to
 * DMH_STATE_NAME_MAX characters of [A-Za-z0-9._-], not starting with '.'? `what` ("task name",
 * "source-id") goes into the message. Returns 0 or -1 with DM_ERR_CONFIG_INVALID.
 */
int dmh_state_check_name(const char *what, const char *name, dm_error *err);

/* Paths in the state dir (malloc'd; NULL only when out of memory). *_rel are relative to it. */
char *dmh_state_path(const char *dir, const char *rel);
/* The copies keep the format of the file `given` (`source.yaml` for DM's YAML, else `source.cfg`):
 * a copy is loaded by its name. */
char *dmh_state_source_file_rel(const char *source_id, const char *given);
char *dmh_state_task_file_rel(const char *task, const char *given);
char *dmh_state_relay_work_root(const char *dir, const char *source_id);
char *dmh_state_task_work_root(const char *dir, const char *task, const char *source_id);
char *dmh_state_task_shard_file(const char *dir, const char *task);

/*
 * Take the state dir for this process: flock(LOCK_EX|LOCK_NB) on <dir>/dmhost.lock, so that two
 * daemons never share one state dir. Returns the descriptor to keep open (closing it releases the
 * lock), or -1 with DM_ERR_EXISTS when another process holds it, DM_ERR_STATE otherwise.
 */
int dmh_state_lock(const char *dir, dm_error *err);

#endif /* DMH_STATE_H */
