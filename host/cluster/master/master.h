/*
 * `dmhost master`: a master of the cluster (docs/cluster.md, "Roles: master"). Several run; each
 * registers `<p>/master/<name>` under a lease of its own (kept alive by a dmh_etcd_keeper) and
 * campaigns for `<p>/leader` with a txn that creates the key only if its create_revision is 0,
 * under that lease. The winner's create_revision is the leadership token: every scheduler write is
 * a txn that compares the leader key's create_revision with it, so a deposed leader's writes fail.
 * The others watch the key and campaign again when it is deleted (the leader's lease expired or it
 * resigned). The leader runs the scheduling loop: on every change of `<p>/worker/`, `<p>/source/`
 * or `<p>/bound/` (and at start) it reads the snapshot, runs dmh_sched_plan and writes the actions
 * as fenced txns.
 *
 * Threads: dmh_master_start starts an election thread (campaign, follow, lead: the scheduling
 * loop runs on it) and a guard thread (stops the leader from acting at once when its lease is lost
 * or not renewed for TTL - 2.5 s, when the leader key is no longer its own, or at shutdown).
 * dmh_master_handle may be called from any number of threads at once (each call opens its own etcd
 * client).
 */
#ifndef DMH_MASTER_H
#define DMH_MASTER_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "dmhost/error.h"
#include "etcd.h"

typedef struct dmh_master dmh_master;

/* Sends `request` to the master or worker at `addr` (host:port) and returns its answer (new
 * object), or NULL with *err; the whole call bounded by timeout_ms (<= 0: no limit, verify's).
 * Installed by the control server once it exists; without one, a follower refuses what only the
 * leader may do with DM_ERR_CLUSTER_NOT_LEADER naming the leader and its address. */
typedef json_object *(*dmh_master_forward_fn)(void *ud, const char *addr, json_object *request,
                                              int timeout_ms, dm_error *err);

typedef struct dmh_master_opts {
  const char *name;      /* the master's name (a cluster name: [A-Za-z0-9_.-]) */
  const char *endpoints; /* etcd URLs, comma-separated */
  const char *prefix;    /* NULL: DMH_CLUSTER_PREFIX_DEFAULT */
  const char *addr;      /* the control address it listens on, as others reach it */
  int64_t ttl_s;         /* lease TTL; 0: 10 (no less than 10: shorter leases were lost in etcd
                            leader failovers) */
  dmh_master_forward_fn forward;
  void *forward_ud;
  /* --secrets-dir (a real path; NULL: none) and --allow-submitted-unit-paths: what the configs
   * dmctl sends may name (config.h, dmh_cfg_trust); the text the master keeps in etcd is checked
   * again by the workers. */
  const char *secrets_dir;
  bool allow_submitted_unit_paths;
  /* How every etcd client of the master is opened (TLS, user; cluster_security.h); NULL: plain.
   * Outlives the master. */
  const dmh_etcd_opts *etcd;
  /* The cluster key (--cluster-key), NULL: none. operate-source create and start-task keep a
   * file's password in etcd only encrypted with it (dmh_config_seal_password): without it a
   * clear password is refused. Copied. */
  const unsigned char *cluster_key;
  /* Its settings as `dmctl config master NAME` answers them: its command line, one flag a line
   * (cli_flag.h's dmh_cli_settings_text); NULL: none (in-process use). Copied. */
  const char *settings;
} dmh_master_opts;

/* Grant the lease, register (refused with DM_ERR_EXISTS while a live master has the name), start
 * the keeper and the threads. 0, or -1 with *err. */
int dmh_master_start(const dmh_master_opts *opts, dmh_master **out, dm_error *err);

/* The leadership token while this master leads and may act, else 0. */
int64_t dmh_master_token(dmh_master *m);

/* DM's operate-leader. on (evict): this master stops acting as leader before returning (the
 * scheduling loop and the shard coordinator returned, the token 0), gives its leader key back by a
 * delete fenced by its token, and campaigns no more until cancel-evict; a follower only stops
 * campaigning. !on (cancel-evict): it campaigns again. *was_leader: it was leading;
 * *was_evicted: it was evicted already. -1 with DM_ERR_CLUSTER_EVICT_PENDING when the end of its
 * leadership was not confirmed within MASTER_EVICT_WAIT_MS (etcd not answering): it stays
 * evicted and gives the key back when etcd answers. */
#define MASTER_EVICT_WAIT_MS 15000
int dmh_master_evict(dmh_master *m, bool on, bool *was_leader, bool *was_evicted, dm_error *err);

/* Resign now (stop acting, revoke the lease) without freeing: requests in progress may still use
 * m and get answers from etcd; dmh_master_stop after them. */
void dmh_master_resign(dmh_master *m);

/* Stop. resign: revoke the lease first, which deletes the leader and master keys at once, so
 * another master leads without waiting for the TTL (SIGTERM does this). Without it the keys stay
 * until the lease expires (a crash looks like this). Frees m. */
void dmh_master_stop(dmh_master *m, bool resign);

/*
 * Answer one control request (control.h's shapes: {"cmd", "args"} in, {"result", "msg", ...}
 * out), from any master. Reads come from etcd. Writes of the user's intent (operate-source
 * create/stop, start-task, pause/resume/stop-task) are etcd txns guarded by their own compares,
 * applied by whichever master answers; scheduling writes (transfer-source) are fenced by the
 * leadership token: the leader applies them, a follower forwards them to the leader (see
 * dmh_master_forward_fn). Commands: operate-source, check-task, start-task, pause-task,
 * resume-task, stop-task, query-status, list-member {["master": true], ["worker": true]},
 * transfer-source {"source", "worker"}, start-relay, stop-relay, help; purge-relay, binlog and
 * swap-unit are forwarded (the same dmh_master_forward_fn) to the worker of the source, at the
 * address it registered (its --listen). Returns a new object (NULL only when out of memory).
 */
json_object *dmh_master_handle(dmh_master *m, json_object *request);

/* The same over one request's text (a dmh_control_handler: `ud` is the dmh_master), for the
 * control servers; returns the compact answer, malloc'd. */
char *dmh_master_handle_line(void *ud, const char *line, size_t len);

/* `dmhost master ...`. */
int dmh_master_main(int argc, char **argv);

#endif /* DMH_MASTER_H */
