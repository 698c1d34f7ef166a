/*
 * The cluster's keys in etcd and their values (docs/cluster.md, "Keys"): the one owner of the
 * layout that masters, workers and dmctl's answers read and write. Pure (no I/O): key text is
 * built and parsed here, values are JSON objects (json-c) made and read here.
 *
 *   <p>/leader                        the leader master's name; under its lease. The key's
 *                                     create_revision is the leadership's token: every scheduler
 *                                     write is a txn that compares it.
 *   <p>/master/<name>                 {"name","addr"} under the master's lease
 *   <p>/worker/<name>                 {"name","addr","relay"} under the worker's lease: `relay`
 *                                     is the source whose relay log it keeps ("" none)
 *   <p>/source/<id>                   {"config"}: the source file's text
 *   <p>/bound/<worker>                {"source","leader"}: written by the leader (leader = its
 *                                     token); the key's create_revision is the binding's fencing
 *                                     token, carried by the target's checkpoint rows
 *   <p>/last/<source>                 the worker that served the source last (plain text)
 *   <p>/task/<name>                   {"config"}: the task file's text
 *   <p>/stage/<task>/<source>         the expected stage: "Running", "Paused" or "Stopped"
 *   <p>/status/<worker>/<task>/<source>  the subtask's status JSON, under the worker's lease
 *   <p>/relay/<worker>                {"source","stage"}: the relay the user wants on the worker
 *                                     (start-relay: "Running", stop-relay: "Stopped"); written
 *                                     by any master, followed by the worker (no key: the source
 *                                     file's enable-relay decides at bind)
 *   <p>/shard/tables/<task>/<source>  the source's tables per target of the task's merged tables:
 *                                     a JSON array of shard.h's "sources" records
 *   <p>/shard/info/<task>/<source>    the source's arrival at a pessimistic lock (shard.h's
 *                                     "infos" record); written by the worker, fenced
 *   <p>/shard/op/<task>/<source>      the leader's operation for the source (shard.h's "ops"
 *                                     record); created by the leader (create-only, fenced by its
 *                                     token), marked done by the worker (fenced by its binding)
 *   <p>/shard/oinfo|oop/<task>/<source>/<hex schema>/<hex table>, <p>/shard/joined/<task>/<hex
 *                                     target>: optimistic mode's (declared, not built yet)
 *   None of the shard keys has a lease: they outlive the processes (docs/shard.md "The lock").
 *   <p>/cluster-info                  DM's cluster info {"cluster_id", "topology"}: created once
 *                                     by the first master asked (create-only), its topology
 *                                     replaced by cluster-info update (master_objects.c)
 *   <p>/template/<name>               DM's task template: a Task (JSON), its target password
 *                                     "******" (no secret in etcd), written by masters
 *   <p>/disabled/<source>             operate-source disable's flag {"paused": [task, ...]}: the
 *                                     tasks whose expected stage on the source the disable set
 *                                     Paused (enable resumes those); written by masters only,
 *                                     never read by workers (they follow the stage keys)
 *   <p>/start/<task>/<source>         start-task's one-shot options for the source's worker
 *                                     {"binding", "remove_meta", "start"}, or stop-task's
 *                                     remove-meta ({"binding", "remove_meta", "stop": true}, put
 *                                     in the stop's txn), or resume-task's of a task created
 *                                     stopped ({"binding", "remove_meta", "start", "resume": true,
 *                                     "safe_mode_duration"}, put in the txn that flips its stage
 *                                     key to Running: the key's mod_revision is the stage key's):
 *                                     written by the leader
 *                                     in the txn that creates <p>/task/<task> (fenced by its token
 *                                     and the binding's create_revision), so the key's
 *                                     mod_revision is the task key's create_revision: the start it
 *                                     belongs to; deleted by stop-task; read by workers only
 *                                     (cluster_worker_start.c keeps which start it applied)
 *
 * <p> is the cluster's prefix (`--etcd-prefix`, default "/dmhost"); names are the ones the config
 * files allow (letters, digits, '_', '-', '.'), so '/' never occurs inside a name.
 */
#ifndef DMH_CLUSTER_KEYS_H
#define DMH_CLUSTER_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "dmhost/error.h"
#include "dmhost/position.h"

#define DMH_CLUSTER_PREFIX_DEFAULT "/dmhost"
#define DMH_CLUSTER_KEY_MAX 512
#define DMH_CLUSTER_NAME_MAX 128

typedef enum dmh_cluster_key_kind {
  DMH_KEY_LEADER = 1,
  DMH_KEY_MASTER,
  DMH_KEY_WORKER,
  DMH_KEY_SOURCE,
  DMH_KEY_BOUND,
  DMH_KEY_LAST,
  DMH_KEY_TASK,
  DMH_KEY_STAGE,
  DMH_KEY_STATUS,
  DMH_KEY_RELAY,
  DMH_KEY_SHARD_TABLES,
  DMH_KEY_SHARD_INFO,
  DMH_KEY_SHARD_OP,
  /* optimistic mode (a later piece): dmh_cluster_key gives the <task>/<source> (<task> for
   * JOINED) part; the hex names (dmh_cluster_hex_name) are appended by their writer */
  DMH_KEY_SHARD_OINFO,
  DMH_KEY_SHARD_OOP,
  DMH_KEY_SHARD_JOINED,
  DMH_KEY_CLUSTER_INFO, /* DM's cluster info: {"cluster_id", "topology"}, written by masters */
  DMH_KEY_TEMPLATE,     /* DM's task template <name>: a Task, its password masked; by masters */
  DMH_KEY_DISABLED,     /* operate-source disable's flag of <source>; by masters */
  DMH_KEY_START,        /* start-task's one-shot options of <task>/<source>; by the leader */
} dmh_cluster_key_kind;

/* "<p>/shard/": every shard key of the cluster (the leader's range and watch). Length, or -1. */
int dmh_cluster_shard_prefix(char *out, size_t len, const char *prefix);

/* A schema or table name as a key segment: lowercase hex of its bytes (DM's keyHexEncoderDecoder:
 * any name fits the key's [A-Za-z0-9_.-] rule). Length, or -1 when it does not fit in len. */
int dmh_cluster_hex_name(char *out, size_t len, const char *name);

/* Is `name` usable in a key (1..127 bytes of [A-Za-z0-9_.-], not "." or "..")? */
bool dmh_cluster_name_ok(const char *name);

/*
 * The key of `kind` with its names (a, b, c as the kind needs: worker/source/task names in the
 * order of the layout above; unused ones NULL), or the prefix of every key of the kind when the
 * last needed name is NULL (for ranges and watches: "<p>/worker/"). Returns the length, or -1
 * when a name is not usable or the key does not fit in `len`.
 */
int dmh_cluster_key(char *out, size_t len, const char *prefix, dmh_cluster_key_kind kind,
                    const char *a, const char *b, const char *c);

/* The names of a key of `kind` (the reverse of dmh_cluster_key): 0 and the names written into a, b,
 * c (each DMH_CLUSTER_NAME_MAX bytes; NULL for names the kind lacks), or -1 for a key of another
 * kind or shape. */
int dmh_cluster_key_parse(const char *key, size_t key_len, const char *prefix,
                          dmh_cluster_key_kind kind, char *a, char *b, char *c);

/* A worker's registration. */
typedef struct dmh_cluster_worker_info {
  char name[DMH_CLUSTER_NAME_MAX];
  char addr[DMH_CLUSTER_NAME_MAX];
  char relay[DMH_CLUSTER_NAME_MAX]; /* "" none */
} dmh_cluster_worker_info;

/* A binding written by the leader. */
typedef struct dmh_cluster_binding {
  char source[DMH_CLUSTER_NAME_MAX];
  int64_t leader; /* the leadership token it was written under */
} dmh_cluster_binding;

/* JSON text of the values (malloc'd), and back: 0, or -1 with *err (DM_ERR_STATE naming the field)
 * for a value that is not such an object or holds an unusable name. */
char *dmh_cluster_worker_json(const dmh_cluster_worker_info *w);
int dmh_cluster_worker_parse(const char *text, size_t len, dmh_cluster_worker_info *w,
                             dm_error *err);
char *dmh_cluster_binding_json(const dmh_cluster_binding *b);
int dmh_cluster_binding_parse(const char *text, size_t len, dmh_cluster_binding *b, dm_error *err);

/* A master's registration ({"name","addr"}): the same struct as a worker's, relay unused (""). */
char *dmh_cluster_master_json(const char *name, const char *addr);
int dmh_cluster_master_parse(const char *text, size_t len, dmh_cluster_worker_info *m,
                             dm_error *err);

/* A source's or task's file text ({"config"}), and back: *text_out is malloc'd. 0, or -1 with
 * *err (DM_ERR_STATE) for a value without a string `config`. */
char *dmh_cluster_config_json(const char *config_text);
int dmh_cluster_config_parse(const char *text, size_t len, char **text_out, dm_error *err);

/* The expected stage of a subtask (the plain text "Running", "Paused" or "Stopped"). */
typedef enum dmh_cluster_stage {
  DMH_CLUSTER_RUNNING = 1,
  DMH_CLUSTER_PAUSED,
  DMH_CLUSTER_STOPPED,
} dmh_cluster_stage;
const char *dmh_cluster_stage_name(dmh_cluster_stage s);
/* 0 and *out, or -1 for any other text. */
int dmh_cluster_stage_parse(const char *text, size_t len, dmh_cluster_stage *out);

/* The relay asked of a worker (start-relay / stop-relay through the master). */
typedef struct dmh_cluster_relay {
  char source[DMH_CLUSTER_NAME_MAX];
  dmh_cluster_stage stage; /* DMH_CLUSTER_RUNNING or DMH_CLUSTER_STOPPED */
} dmh_cluster_relay;
char *dmh_cluster_relay_json(const dmh_cluster_relay *r);
/* 0, or -1 with *err (DM_ERR_STATE) for a value without a source name or with a stage other than
 * Running or Stopped. */
int dmh_cluster_relay_parse(const char *text, size_t len, dmh_cluster_relay *r, dm_error *err);

/* A source's disabled flag: the tasks the disable paused (malloc'd *tasks, *n of them), and back.
 * 0, or -1 with *err (DM_ERR_STATE) for a value without a `paused` array of usable names. */
char *dmh_cluster_disabled_json(const char (*tasks)[DMH_CLUSTER_NAME_MAX], size_t n);
int dmh_cluster_disabled_parse(const char *text, size_t len, char (**tasks)[DMH_CLUSTER_NAME_MAX],
                               size_t *n, dm_error *err);

/* start-task's options for one source (<p>/start/<task>/<source>): remove-meta, and the position
 * --start-time found on the source (remove-meta implied), for the worker of the binding whose
 * create_revision is `binding` only (a source bound anew takes up the task from its checkpoints:
 * another worker cannot know whether the first one dropped the meta and ran). */
typedef struct dmh_cluster_start {
  int64_t binding;
  bool remove_meta;
  /* stop-task's remove-meta (DM's delete with keep_meta=false), written in the stop's txn: the
   * worker drops the meta after it stopped the subtask */
  bool at_stop;
  bool has_start;    /* --start-time given: `start` is where the sync starts */
  dm_position start; /* the file, offset and GTID state of the first transaction at/after it */
  /* fields below: resume-task's (DM's OpenAPI start of a task created stopped), put in the txn
   * that flips <p>/stage/<task>/<source> from the Paused of its creation to Running, so the key's
   * mod_revision is that stage key's: the start it belongs to */
  bool at_resume;
  char safe_mode_duration[32]; /* the sync's safe-mode-duration for this start ("" none) */
} dmh_cluster_start;
char *dmh_cluster_start_json(const dmh_cluster_start *s);
/* 0, or -1 with *err (DM_ERR_STATE) for a value without a binding or with a malformed position. */
int dmh_cluster_start_parse(const char *text, size_t len, dmh_cluster_start *s, dm_error *err);

#endif /* DMH_CLUSTER_KEYS_H */
