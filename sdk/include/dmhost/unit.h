/*
 * dmhost SDK: the unit contract.
 *
 * A unit is a shared object exporting one function, dm_unit_entry, that returns a pointer to a
 * const descriptor. The host checks the descriptor (magic, ABI major/minor, size, kind, required
 * slots) before it calls anything else, and refuses the unit with a coded error otherwise.
 *
 *   static const dm_unit_descriptor my_unit = {
 *       DM_UNIT_DESCRIPTOR_HEADER,
 *       .kind = DM_UNIT_SYNC, .name = "my-sync", .version = "1.2.0",
 *       .ops = { .init = my_init, .process = my_process, ... },
 *   };
 *   DM_UNIT_EXPORT(my_unit)
 *
 * Life of an instance, in the order the host's supervisor (host/core/subtask/supervisor.c,
 * swap.c) calls the slots, each call through one door (host/core/subtask/unit_call.c):
 *
 *   init -> is_fresh_task -> process -> ([pause] -> resume)* -> [kill] -> close
 *
 * One call at a time per instance, except status (any time between init and close, on any thread,
 * also beside another status call) and kill (beside a blocked process/resume). In detail:
 * - init: on a thread of its own, bounded by init-timeout. Every unit of the chain is initialised
 *   when the subtask starts (and again when it restarts from Stopped), not when its turn comes.
 * - is_fresh_task: on the thread of the command that starts the subtask, after every unit's init,
 *   from the last unit of the chain backwards until one is not fresh; the units before that one are
 *   closed without ever running process (their work was done in an earlier run).
 * - process, resume: on the subtask's runner thread (a new one at each start or resume). The first
 *   run of an instance is process, every later one resume (process again when resume is NULL).
 *   Each returns exactly one result: finished, canceled (the stop token fired) or errors. A unit
 *   that finished stays open (status is still asked) while the next unit of the chain runs.
 * - pause: only after process/resume returned to a pause request (the stop token fired): on the
 *   thread of the pause command, or on the runner thread when the unit returned after that command
 *   had given up waiting. Never on an instance whose process has not run, and not when
 *   process/resume returned errors: the subtask then pauses without calling pause, and the next
 *   call is resume (or kill/close).
 * - kill: after the stop token fired (a late init below excepted), on the thread of a kill
 *   command (at once) or of a stop command whose unit has not returned within stop-timeout;
 *   possibly beside a blocked process/resume, on an idle instance, and twice (a kill command kills
 *   the running unit, then every live instance right before its close). kill never replaces
 *   close.
 * - close: once per instance, on the thread of the command that ends it (stop, kill, hot-swap, a
 *   failed start, the subtask's end), after process/resume returned and with no other slot of the
 *   instance running. After it returns the host may unload the library. Exception: an instance
 *   whose process/resume returned neither after the stop token nor after kill is abandoned: never
 *   called again (not even close), its library never unloaded.
 * - Hot-swap (dmctl swap-unit): a running subtask pauses as above; the old instance is closed, the
 *   new one initialised, and when the subtask runs again its first call is process (no
 *   is_fresh_task): it continues from the checkpoint the old one saved.
 * - When init outlives init-timeout the host reports DM_ERR_UNIT_TIMEOUT and forgets the instance;
 *   if init then returns 0, its own thread calls kill (when set) and close on it.
 * - update: on a paused instance only (process/resume returned to the token and pause was called,
 *   or they returned errors), on the thread of the update-task command, with the subtask's
 *   commands held: no process/resume/pause/kill/close of the instance runs meanwhile, and none
 *   starts before it returns; status may run beside it. The next call is resume (or close).
 * - end_position (ABI 1.1): on the runner thread right after process/resume finished.
 * - schema_op (ABI 1.2): as update (a paused instance, the command's thread, the subtask's
 *   commands held, status may run beside it), on the thread of a binlog-schema command.
 * - validation_op (ABI 1.3): unlike the others, on a RUNNING instance too (and on a paused one),
 *   on the thread of a `dmctl validation` command, with the subtask's commands held (so never
 *   beside init, pause, resume, update, schema_op, kill or close), but beside process/resume and
 *   status: the unit guards what it shares with its process thread (its own lock).
 * So a unit needs no guard against running twice: pause comes only after process/resume
 * returned, resume only on an instance that is not running.
 *
 * Versioning (docs/sdk.md, "Versioning", relates it to the services and SDK versions):
 * - The host loads units of its own DM_ABI_MAJOR only (DM_ERR_UNIT_ABI_MAJOR), and of its own
 *   DM_ABI_MINOR or older (DM_ERR_UNIT_ABI_MINOR).
 * - dm_unit_descriptor is the one struct of this header that grows: a minor appends fields at its
 *   end, after ops, and marks where it ends ("fields above: ABI 1.x"). The loader refuses a
 *   descriptor whose struct_size is below what its abi_minor needs (DM_ERR_UNIT_SHORT; the sizes
 *   are frozen constants, DM_UNIT_DESCRIPTOR_SIZE_1_0 ...) and reads a field appended in minor M
 *   only from a unit whose abi_minor is M or later: an older, shorter descriptor is never read past
 *   its end. ABI 1.1 appended handover and end_position (custom kinds in a chain); a 1.0 unit
 *   still loads and runs (tests/abi/ keeps the 1.0 headers and CI builds a unit from them). ABI
 *   1.2 appended schema_op (dmctl binlog-schema: the sync unit's schema tracker). ABI 1.3
 *   appended validation_op (dmctl validation: the sync unit's continuous validator).
 * - Frozen for the whole major: dm_unit_ops (embedded in the descriptor: growing it would move
 *   what follows), dm_result, dm_status_sink, and dm_error and dm_position (error.h, position.h).
 *   They carry no size, so neither side could tell a shorter one: a later need becomes a
 *   descriptor field (unit to host) or a host service (host to unit).
 * - dm_host_services (host.h) grows on a version of its own, DM_HOST_SERVICES_VERSION, not with
 *   the ABI minor: a unit probes a later service with DM_HOST_HAS (the struct's size field).
 */
#ifndef DMHOST_UNIT_H
#define DMHOST_UNIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "host.h"
#include "position.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DM_ABI_MAJOR 1
#define DM_ABI_MINOR 3
#define DM_UNIT_MAGIC 0x444d5554u /* "DMUT" */

/* The symbol the host looks up. A function, because dlsym is only guaranteed for functions. */
#define DM_UNIT_ENTRY_SYMBOL "dm_unit_entry"

typedef enum dm_unit_kind {
  DM_UNIT_DUMP = 1,
  DM_UNIT_LOAD = 2,
  DM_UNIT_SYNC = 3,
  DM_UNIT_RELAY = 4,
  DM_UNIT_CUSTOM = 100, /* a third-party kind; kind_name says which */
} dm_unit_kind;

/*
 * Hand-over between the units of a chain (dm_unit_descriptor.handover, ABI 1.1). A task names its
 * chain with `units = ["dump", "load", "my-sink"];` (or a task-mode); the host checks, when the
 * subtask is created, that every unit that takes a position follows one that gives one (or is the
 * first of the chain: it then starts at the task's `meta` or at its own checkpoint), and refuses
 * the task otherwise (DM_ERR_CHAIN_HANDOVER, naming the file and line of `units`).
 */
#define DM_UNIT_TAKES_POSITION 0x1u /* starts where the unit before it ended: handoff_position */
#define DM_UNIT_GIVES_POSITION 0x2u /* reports where it ended when it finishes: end_position */
/* Reads the source's relay folder (relay_dir): when it follows a unit that gives a position and
 * the source's relay is on, the host waits for the relay to have written up to that position before
 * it starts this unit, as it does before a sync. */
#define DM_UNIT_READS_RELAY 0x4u

/* Does a sync unit run after this unit in the subtask (the unit_follows service of host.h)? A host
 * older than services version 4 cannot say: true, so a unit keeps demanding what a sync would
 * need. */
static inline bool dm_host_sync_follows(const dm_host_services *host, dm_ctx *ctx) {
  return DM_HOST_HAS(host, unit_follows) ? host->unit_follows(ctx, DM_UNIT_SYNC) : true;
}

/* What process/resume ended with. */
typedef enum dm_outcome {
  DM_OUTCOME_FINISHED = 1, /* all work done; the next unit of the chain may start */
  DM_OUTCOME_CANCELED = 2, /* the stop token fired and the unit stopped at a safe point */
  DM_OUTCOME_ERROR = 3,    /* errors[] says why; the subtask pauses */
} dm_outcome;

#define DM_RESULT_MAX_ERRORS 4

/* Filled by process/resume. Zeroed by the host before the call. */
typedef struct dm_result {
  uint32_t outcome;  /* dm_outcome */
  uint32_t n_errors; /* <= DM_RESULT_MAX_ERRORS, > 0 when outcome is DM_OUTCOME_ERROR */
  dm_error errors[DM_RESULT_MAX_ERRORS];
} dm_result;

/*
 * Where a unit writes its status. The host turns it into the unit's part of query-status (JSON,
 * with DM's field names) and reads the well-known keys below. Keys and strings are copied before
 * the call returns.
 */
typedef struct dm_status_sink dm_status_sink;
struct dm_status_sink {
  void (*put_str)(dm_status_sink *s, const char *key, const char *value);
  void (*put_int)(dm_status_sink *s, const char *key, int64_t value);
  void (*put_double)(dm_status_sink *s, const char *key, double value);
  void (*put_bool)(dm_status_sink *s, const char *key, bool value);
  /* A binlog location: writes `key` as "(file, pos)" and `key`+"Gtid" as the GTID set, the way DM
   * prints them (e.g. key "relayBinlog" gives relayBinlog and relayBinlogGtid). */
  void (*put_position)(dm_status_sink *s, const char *key, const dm_position *pos);
  /* Progress of the unit's work: `done` of `total` items of `what` ("rows", "bytes", "tables",
   * "events"). The host derives percent, rate and ETA from successive calls. */
  void (*put_progress)(dm_status_sink *s, uint64_t done, uint64_t total, const char *what);
  void *host_data; /* the host's; do not touch */
};

/* Well-known status keys the host reads. */
/* load: the dump's end position. The host hands it on only for a unit of ABI 1.0 (which has no
 * end_position slot); from ABI 1.1 the end position comes from end_position. */
#define DM_STATUS_META_BINLOG "metaBinlog"
/* dump, load: the position a sync must pass before it leaves safe mode (consistency none); read
 * back as handoff_safe_mode_exit of ABI 1.0 units, as metaBinlog is */
#define DM_STATUS_META_SAFE_EXIT "metaSafeModeExit"
#define DM_STATUS_RELAY_BINLOG "relayBinlog"   /* relay: what is written locally */
#define DM_STATUS_MASTER_BINLOG "masterBinlog" /* relay, sync: the source's current position */
#define DM_STATUS_RELAY_CATCH_UP "relayCatchUpMaster" /* relay: bool */

/* ---- the slots ---- */

/*
 * init (required). Called once per instance, on a host thread, with a timeout (the host gives up
 * and reports DM_ERR_UNIT_TIMEOUT, then calls kill if init returns late). Read your config section
 * via the host services, allocate your state, and return it in *self. Open connections here or
 * lazily in process. Return 0 on success; else fill *err and return -1, having released everything.
 */
typedef int (*dm_unit_init_fn)(const dm_host_services *host, dm_ctx *ctx, void **self,
                               dm_error *err);

/*
 * is_fresh_task (required). Has this unit done no work yet for this subtask? Read your checkpoint
 * (in the target's meta-schema or in work_dir). The host asks from the last unit of the chain
 * backwards; the subtask starts at the first unit that is not fresh. Return 0 and set *fresh, or
 * fill *err and return -1 (the subtask then fails to start).
 */
typedef int (*dm_unit_is_fresh_task_fn)(void *self, bool *fresh, dm_error *err);

/*
 * process (required). Do the unit's work from its checkpoint, on a host thread, until it is all
 * done (DM_OUTCOME_FINISHED; a sync unit never finishes), the stop token fires (save the
 * checkpoint, then DM_OUTCOME_CANCELED) or an error stops it (DM_OUTCOME_ERROR with errors[]). May
 * block on I/O, but must notice the stop token within about a second: poll it, sleep with
 * wait_stop, or poll stop_fd. Must not return while threads it started still run.
 */
typedef void (*dm_unit_process_fn)(void *self, dm_result *result);

/*
 * pause (optional). Called after process/resume has returned because the subtask pauses (a pause
 * command or a hot-swap; not after process/resume returned errors). Release what a paused unit
 * should not hold (connections, open files); keep the checkpoint. Must not block for long.
 */
typedef void (*dm_unit_pause_fn)(void *self);

/*
 * resume (optional; NULL means process is called again). Continue from the checkpoint after a
 * pause, or after process/resume returned errors (no pause call in between). Same contract as
 * process.
 */
typedef void (*dm_unit_resume_fn)(void *self, dm_result *result);

/*
 * update (optional). `dmctl update-task` gave a paused task a new file: re-read your section and
 * take what changed at the next resume. When it is called: see "Life of an instance" above (a
 * paused instance, the command's thread, nothing else of the instance running but status). What
 * the unit may assume: the task's identity is unchanged (task name, mode, meta-schema, target,
 * source, checkpoints: the host refused a file that changes them), and the host's rule services
 * (table_allowed, route_table, event_ignored) already answer from the new file, so drop any
 * answer of theirs you cached. The cfg_* lookups read the new section; every setting in it must be
 * read, as after init (a misspelt one refuses the update, naming file and line). Strings read
 * from the old section stay valid until close.
 * Return 0, or fill *err and return -1 with your old settings in force (release what you read the
 * new ones into): then the host switches the whole task back to the old file, calls update again
 * on the instances it already updated, and answers the command with your error. Refuse a change
 * you cannot take while paused (e.g. a setting your checkpoint depends on) with a message saying
 * to stop and start the task. NULL means the unit cannot take new settings while paused: a
 * change of its section is refused before anything changes (the rules may still change).
 * Keep it short: the command waits for it.
 */
typedef int (*dm_unit_update_fn)(void *self, dm_error *err);

/*
 * status (optional). Write the unit's status to the sink. Called from any host thread at any time
 * between init and close, also while process, pause or kill runs on another thread and beside
 * another status call: read shared counters atomically or under your own lock, and never block.
 */
typedef void (*dm_unit_status_fn)(void *self, dm_status_sink *sink);

/*
 * close (required). Release everything of the instance. Called once, never while another slot of
 * the instance runs (process/resume have returned, kill has returned), also on an instance that
 * never ran process and after kill. After it returns the host may unload the library.
 */
typedef void (*dm_unit_close_fn)(void *self);

/*
 * kill (optional). Stop as fast as possible without saving more than is already durable (crash
 * semantics, DM's Kill). Called after the stop token fired: by a kill command at once, by a stop
 * command when process/resume has not returned within stop-timeout. It may run while
 * process/resume is blocked on another thread (it must make them return soon, e.g. shut down its
 * sockets), on an idle instance, and more than once. It must not free the instance: close always
 * follows, once process/resume has returned; kill must leave the instance safe to close.
 */
typedef void (*dm_unit_kill_fn)(void *self);

/*
 * end_position (ABI 1.1; required when handover has DM_UNIT_GIVES_POSITION, else unused). Called
 * once each time process/resume returned DM_OUTCOME_FINISHED, on the same thread, before the next
 * unit of the chain is initialised for its turn. Write where the unit's work ends in the source's
 * binlog (the dump's snapshot position: the next unit starts there) to *end and return true, or
 * return false when there is none (the next unit then starts at the task's meta). *safe_mode_exit
 * (zeroed by the host) is DM's safe-mode exit point: set it when the data may already hold changes
 * up to that later position (a dump with consistency none); leave it unset (dm_position_is_set
 * false) otherwise. The host hands both on as handoff_position and handoff_safe_mode_exit.
 */
typedef bool (*dm_unit_end_position_fn)(void *self, dm_position *end, dm_position *safe_mode_exit);

/*
 * schema_op (ABI 1.2; optional): DM's `binlog-schema` (OperateSchema) on the table structures a
 * unit keeps of the source's tables (the sync unit's schema tracker, docs/sync.md). The host calls
 * it only on a paused instance whose subtask's current unit it is (DM's rule: Paused, in the sync
 * unit), on the thread of the command, with the subtask's commands held: nothing but status runs
 * beside it, and the next call is resume (or close). Names in the request and the answer are the
 * SOURCE's (schema `db`, table `t`), whatever the unit stores them as.
 *   DM_SCHEMA_LIST_SCHEMAS  every schema holding a table structure: one answer item per schema
 *   DM_SCHEMA_LIST_TABLES   the tables of schema db: one item per table (none: an empty answer)
 *   DM_SCHEMA_GET           db.table's structure as one CREATE TABLE statement naming `table`:
 *                           one item; DM_ERR_NOT_FOUND when the unit has none
 *   DM_SCHEMA_SET           db.table's structure becomes `from`'s: DM_SCHEMA_FROM_SQL the CREATE
 *                           TABLE in sql (its names are replaced by db and table), _UPSTREAM the
 *                           source's table, _DOWNSTREAM the routed table on the target; the next
 *                           resume decodes the table's rows with it
 *   DM_SCHEMA_REMOVE        forget db.table's structure (learnt again when next needed)
 * flush and sync are DM's flags, passed as given (DM: --flush is always in effect; --sync only
 * means something in optimistic shard mode). Items are copied by put before it returns. Return
 * 0, or fill *err and return -1 (what was put is dropped). Keep it short: the command waits.
 */
typedef enum dm_schema_op_kind {
  DM_SCHEMA_LIST_SCHEMAS = 1,
  DM_SCHEMA_LIST_TABLES = 2,
  DM_SCHEMA_GET = 3,
  DM_SCHEMA_SET = 4,
  DM_SCHEMA_REMOVE = 5,
} dm_schema_op_kind;

typedef enum dm_schema_from {
  DM_SCHEMA_FROM_SQL = 1,
  DM_SCHEMA_FROM_UPSTREAM = 2,
  DM_SCHEMA_FROM_DOWNSTREAM = 3,
} dm_schema_from;

/* What binlog-schema asks. The host's; valid during the call. Grows only at its end (a unit reads
 * the fields of its own ABI minor, never more: the host's struct is never shorter). */
typedef struct dm_schema_req {
  uint32_t op;       /* dm_schema_op_kind */
  uint32_t from;     /* dm_schema_from, for DM_SCHEMA_SET; else 0 */
  const char *db;    /* the source's schema ("" for DM_SCHEMA_LIST_SCHEMAS) */
  const char *table; /* the source's table ("" for the list ops) */
  const char *sql;   /* DM_SCHEMA_FROM_SQL: the statement; else NULL */
  bool flush, sync;  /* DM's --flush and --sync */
  /* fields above: ABI 1.2 */
} dm_schema_req;

/* Where schema_op writes its answer, item by item (copied before put returns). */
typedef struct dm_schema_answer dm_schema_answer;
struct dm_schema_answer {
  void (*put)(dm_schema_answer *a, const char *item);
  void *host_data; /* the host's; do not touch */
};

typedef int (*dm_unit_schema_op_fn)(void *self, const dm_schema_req *req, dm_schema_answer *answer,
                                    dm_error *err);

/*
 * validation_op (ABI 1.3; optional): DM's `dmctl validation` on the continuous validator a unit
 * runs beside its work (the sync unit's, DM's `validators` task section; docs/validation.md).
 * The host calls it on the instance of the subtask's sync unit whether it runs or is paused (see
 * "Life of an instance"); the validator's wish (started, stopped, its mode) outlives a pause and
 * a restart (the unit keeps it with its checkpoint). Every answer item is one JSON object text
 * in DM's shapes (dm/proto/dmworker.proto), copied by put before it returns:
 *   DM_VALIDATION_START      start (or go on) validating: mode "full"|"fast" (NULL: the task's
 *                            validator-config mode, or the mode it had when stopped), start_time
 *                            ("YYYY-MM-DD HH:MM:SS", NULL: from the sync's checkpoint or the
 *                            validator's own); one that runs already is no change (success, as
 *                            DM's); DM_ERR_STAGE (DM's master) when mode or start_time is given
 *                            for a validator enabled before (its mode not none, running or
 *                            stopped). No items.
 *   DM_VALIDATION_STOP       stop validating (pending rows and errors kept). No items; a stopped
 *                            one is no change (success); DM_ERR_STAGE for a validator never
 *                            enabled (DM's "some target validator(...) is not enabled").
 *   DM_VALIDATION_STATUS     one item, DM's ValidationStatus: {"task","source","mode","stage",
 *                            "validatorBinlog","validatorBinlogGtid","cutoverBinlogPos",
 *                            "cutoverBinlogGtid","result","processedRowsStatus",
 *                            "pendingRowsStatus","errorRowsStatus"}, then one item per table,
 *                            DM's ValidationTableStatus {"source","srcTable","dstTable","stage",
 *                            "message"}, those whose stage is table_stage when it is given
 *                            ("running"|"stopped").
 *   DM_VALIDATION_SHOW_ERROR one item per error row whose state error_state names ("all",
 *                            "unprocessed" (new), "ignored", "resolved"), DM's ValidationError
 *                            {"id","source","srcTable","srcData","dstTable","dstData",
 *                            "errorType","status","time","message"}.
 *   DM_VALIDATION_OPERATE    error_op (ignore|resolve|clear) on the error error_id, or on every
 *                            error when error_id is 0 (DM's --all). No items.
 *   DM_VALIDATION_UPDATE     the cutover point: cutover_pos "(mysql-bin.000001, 5989)" or
 *                            cutover_gtid. No items.
 * Return 0, or fill *err and return -1 (what was put is dropped). Keep it short: the command
 * waits, and the unit's process thread may be waiting on the same lock.
 */
typedef enum dm_validation_op_kind {
  DM_VALIDATION_START = 1,
  DM_VALIDATION_STOP = 2,
  DM_VALIDATION_STATUS = 3,
  DM_VALIDATION_SHOW_ERROR = 4,
  DM_VALIDATION_OPERATE = 5,
  DM_VALIDATION_UPDATE = 6,
} dm_validation_op_kind;

typedef enum dm_validation_error_op {
  DM_VALIDATION_ERR_IGNORE = 1,
  DM_VALIDATION_ERR_RESOLVE = 2,
  DM_VALIDATION_ERR_CLEAR = 3,
} dm_validation_error_op;

/* What `dmctl validation` asks. The host's; valid during the call. Grows only at its end. */
typedef struct dm_validation_req {
  uint32_t op;              /* dm_validation_op_kind */
  uint32_t error_op;        /* dm_validation_error_op, for DM_VALIDATION_OPERATE; else 0 */
  const char *mode;         /* START: "full", "fast" or NULL */
  const char *start_time;   /* START: NULL or the time */
  const char *table_stage;  /* STATUS: NULL, "running" or "stopped" */
  const char *error_state;  /* SHOW_ERROR: "all", "unprocessed", "ignored" or "resolved" */
  uint64_t error_id;        /* OPERATE: the error's id; 0: all */
  const char *cutover_pos;  /* UPDATE: NULL or "(file, pos)" */
  const char *cutover_gtid; /* UPDATE: NULL or a GTID set */
  /* fields above: ABI 1.3 */
} dm_validation_req;

/* Where validation_op writes its answer: the same shape as binlog-schema's. */
typedef dm_schema_answer dm_validation_answer;

typedef int (*dm_unit_validation_op_fn)(void *self, const dm_validation_req *req,
                                        dm_validation_answer *answer, dm_error *err);

typedef struct dm_unit_ops {
  dm_unit_init_fn init;
  dm_unit_process_fn process;
  dm_unit_pause_fn pause;
  dm_unit_resume_fn resume;
  dm_unit_close_fn close;
  dm_unit_kill_fn kill;
  dm_unit_is_fresh_task_fn is_fresh_task;
  dm_unit_status_fn status;
  dm_unit_update_fn update;
  /* fields above: ABI 1.0. This struct never grows (it is embedded in the descriptor): slots of
   * later minors are appended to dm_unit_descriptor, after `ops`. */
} dm_unit_ops;

/* What dm_unit_entry returns. Open it with DM_UNIT_DESCRIPTOR_HEADER. */
typedef struct dm_unit_descriptor {
  uint32_t magic;        /* DM_UNIT_MAGIC */
  uint16_t abi_major;    /* DM_ABI_MAJOR the unit was built with */
  uint16_t abi_minor;    /* DM_ABI_MINOR the unit was built with */
  uint32_t struct_size;  /* sizeof(dm_unit_descriptor) the unit was built with */
  uint32_t kind;         /* dm_unit_kind */
  const char *kind_name; /* for DM_UNIT_CUSTOM: the kind's name; else NULL */
  const char *name;      /* e.g. "dmhost-sync" */
  const char *version;   /* the unit's own version, e.g. "0.1.0" */
  dm_unit_ops ops;
  /* fields above: ABI 1.0 */
  uint32_t handover; /* DM_UNIT_TAKES_POSITION | DM_UNIT_GIVES_POSITION | DM_UNIT_READS_RELAY */
  dm_unit_end_position_fn end_position;
  /* fields above: ABI 1.1 */
  dm_unit_schema_op_fn schema_op;
  /* fields above: ABI 1.2 */
  dm_unit_validation_op_fn validation_op;
  /* fields above: ABI 1.3 */
} dm_unit_descriptor;

/* The sizes descriptors of ABI 1.0, 1.1, 1.2 and 1.3 have; the host refuses shorter ones. Frozen: they must
 * not follow sizeof(dm_unit_descriptor) once later minors append fields. A unit of ABI 1.0 has no
 * handover field: the host gives the built-in kinds theirs (dump and load give a position, read
 * back from the status keys above; sync takes one and reads the relay) and a custom kind none. */
#define DM_UNIT_DESCRIPTOR_SIZE_1_0 (offsetof(dm_unit_descriptor, ops) + sizeof(dm_unit_ops))
#define DM_UNIT_DESCRIPTOR_SIZE_1_1                                                                \
  (offsetof(dm_unit_descriptor, end_position) + sizeof(dm_unit_end_position_fn))
#define DM_UNIT_DESCRIPTOR_SIZE_1_2                                                                \
  (offsetof(dm_unit_descriptor, schema_op) + sizeof(dm_unit_schema_op_fn))
#define DM_UNIT_DESCRIPTOR_SIZE_1_3                                                                \
  (offsetof(dm_unit_descriptor, validation_op) + sizeof(dm_unit_validation_op_fn))
#ifndef __cplusplus
_Static_assert(sizeof(void *) != 8 || DM_UNIT_DESCRIPTOR_SIZE_1_0 == 112,
               "the ABI 1.0 descriptor layout changed");
_Static_assert(sizeof(void *) != 8 || DM_UNIT_DESCRIPTOR_SIZE_1_1 == 128,
               "the ABI 1.1 descriptor layout changed");
_Static_assert(sizeof(void *) != 8 || DM_UNIT_DESCRIPTOR_SIZE_1_2 == 136,
               "the ABI 1.2 descriptor layout changed");
_Static_assert(sizeof(void *) != 8 || DM_UNIT_DESCRIPTOR_SIZE_1_3 == 144,
               "the ABI 1.3 descriptor layout changed");
#endif

/* Writes the header fields of a descriptor. */
#define DM_UNIT_DESCRIPTOR_HEADER                                                                  \
  .magic = DM_UNIT_MAGIC, .abi_major = DM_ABI_MAJOR, .abi_minor = DM_ABI_MINOR,                    \
  .struct_size = sizeof(dm_unit_descriptor)

typedef const dm_unit_descriptor *(*dm_unit_entry_fn)(void);

/* Defines the exported entry function returning `desc`. Build units with -fvisibility=hidden: this
 * is the only symbol they need to export. */
#ifdef __cplusplus
#define DM_UNIT_EXTERN_C extern "C"
#else
#define DM_UNIT_EXTERN_C
#endif
#define DM_UNIT_EXPORT(desc)                                                                       \
  DM_UNIT_EXTERN_C __attribute__((visibility("default"))) const dm_unit_descriptor *dm_unit_entry( \
      void);                                                                                       \
  DM_UNIT_EXTERN_C __attribute__((visibility("default"))) const dm_unit_descriptor *dm_unit_entry( \
      void) {                                                                                      \
    return &(desc);                                                                                \
  }

#ifdef __cplusplus
}
#endif
#endif /* DMHOST_UNIT_H */
