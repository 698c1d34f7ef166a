/*
 * dmhost SDK: errors.
 *
 * One error struct crosses the unit boundary, with DM's fields: code, class, scope, level, message,
 * raw cause and workaround, plus whether retrying can help (resumable). It is a plain value with
 * fixed-size buffers so that no string allocated on one side of the boundary is ever freed on the
 * other. Codes are declared once, in DM_ERROR_MAP below; every other table (names, classes, default
 * workarounds) is generated from it.
 */
#ifndef DMHOST_ERROR_H
#define DMHOST_ERROR_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Error class: which part of the system raised it (DM's ErrClass). */
typedef enum dm_error_class {
  DM_CLASS_NONE = 0,
  DM_CLASS_FUNCTIONAL = 1, /* generic failures of a helper (I/O, memory) */
  DM_CLASS_CONFIG = 2,     /* source or task file */
  DM_CLASS_LOADER = 3,     /* loading a unit's shared object, ABI checks */
  DM_CLASS_SUPERVISOR = 4, /* the subtask stage machine */
  DM_CLASS_CONTROL = 5,    /* control socket, dmctl, persisted state */
  DM_CLASS_DATABASE = 6,   /* talking to a MySQL/MariaDB server */
  DM_CLASS_BINLOG = 7,     /* binlog reading and decoding */
  DM_CLASS_CHECKPOINT = 8,
  DM_CLASS_DUMP_UNIT = 9,
  DM_CLASS_LOAD_UNIT = 10,
  DM_CLASS_SYNC_UNIT = 11,
  DM_CLASS_RELAY_UNIT = 12,
  DM_CLASS_UNIT = 13,       /* a third-party unit's own errors */
  DM_CLASS_CLUSTER = 14,    /* the cluster's store (etcd) and its members */
  DM_CLASS_TASK_CHECK = 15, /* the precheck before a task starts (DM's 26xxx) */
  DM_CLASS_VALIDATOR = 16,  /* comparing the target with the source (DM's 43xxx) */
} dm_error_class;

/* Error scope: whose side the fault is on (DM's ErrScope). */
typedef enum dm_error_scope {
  DM_SCOPE_NOT_SET = 0,
  DM_SCOPE_UPSTREAM = 1,
  DM_SCOPE_DOWNSTREAM = 2,
  DM_SCOPE_INTERNAL = 3,
} dm_error_scope;

/* Error level: how bad it is (DM's ErrLevel). */
typedef enum dm_error_level {
  DM_LEVEL_LOW = 0,
  DM_LEVEL_MEDIUM = 1,
  DM_LEVEL_HIGH = 2,
} dm_error_level;

/*
 * The code table. X(name, code, class, scope, level, resumable, workaround)
 * Codes are stable: never renumber, only append. Ranges: 1xxxx host and SDK, 2xxxx database,
 * 26xxx the precheck (DM's task-check), 3xxxx binlog/relay, 4xxxx dump/load, 431xx verify (DM's
 * validator range, past DM's own 43001-43008), 5xxxx sync, 9xxxx free
 * for third-party units (use DM_ERR_UNIT_CUSTOM_BASE + n and DM_CLASS_UNIT).
 */
#define DM_ERROR_MAP(X)                                                                            \
  X(DM_ERR_OK, 0, DM_CLASS_NONE, DM_SCOPE_NOT_SET, DM_LEVEL_LOW, 0, "")                            \
  X(DM_ERR_INTERNAL, 10001, DM_CLASS_FUNCTIONAL, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,              \
    "This is a bug in dmhost or in the unit; please report it with the log.")                      \
  X(DM_ERR_NO_MEMORY, 10002, DM_CLASS_FUNCTIONAL, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 1,             \
    "Free memory on the host, then resume the task.")                                              \
  X(DM_ERR_IO, 10003, DM_CLASS_FUNCTIONAL, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 1,                    \
    "Check the path, its permissions and free disk space, then resume the task.")                  \
  X(DM_ERR_METRIC_INVALID, 10010, DM_CLASS_FUNCTIONAL, DM_SCOPE_INTERNAL, DM_LEVEL_MEDIUM, 0,      \
    "A metric's name, label names or buckets are not valid Prometheus ones (docs/sdk.md "          \
    "\"Metrics\"): fix the unit's metric_register call; the unit runs on without that metric.")    \
  X(DM_ERR_METRIC_CLASH, 10011, DM_CLASS_FUNCTIONAL, DM_SCOPE_INTERNAL, DM_LEVEL_MEDIUM, 0,        \
    "Another unit (or the host) registered this metric name with another type or other labels: "   \
    "give the unit's metric a name of its own (prefix it with the unit's name).")                  \
  X(DM_ERR_CONFIG_PARSE, 11001, DM_CLASS_CONFIG, DM_SCOPE_INTERNAL, DM_LEVEL_MEDIUM, 0,            \
    "Fix the syntax at the line given (libconfig syntax: `name = value;`, groups in { }).")        \
  X(DM_ERR_CONFIG_UNKNOWN, 11002, DM_CLASS_CONFIG, DM_SCOPE_INTERNAL, DM_LEVEL_MEDIUM, 0,          \
    "Remove the setting or fix its spelling; see examples/ for every accepted setting.")           \
  X(DM_ERR_CONFIG_MISSING, 11003, DM_CLASS_CONFIG, DM_SCOPE_INTERNAL, DM_LEVEL_MEDIUM, 0,          \
    "Add the setting; see examples/ for a commented file.")                                        \
  X(DM_ERR_CONFIG_INVALID, 11004, DM_CLASS_CONFIG, DM_SCOPE_INTERNAL, DM_LEVEL_MEDIUM, 0,          \
    "Give the setting a value of the type and range named in the message.")                        \
  X(DM_ERR_CONFIG_IO, 11005, DM_CLASS_CONFIG, DM_SCOPE_INTERNAL, DM_LEVEL_MEDIUM, 0,               \
    "Check that the file exists and is readable.")                                                 \
  X(DM_ERR_CONFIG_UNIT_KIND, 11006, DM_CLASS_CONFIG, DM_SCOPE_INTERNAL, DM_LEVEL_MEDIUM, 0,        \
    "Name built-in kinds (dump, load, sync) or custom kinds with a build in unit-paths in units.") \
  X(DM_ERR_CONFIG_SUBMITTED_SECRET, 11007, DM_CLASS_CONFIG, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,   \
    "A config sent to the daemon (HTTP, dmctl --master-addr, etcd) may not name the daemon's "     \
    "secrets: give the password encrypted, put the file below the daemon's --secrets-dir, or "     \
    "place the file on the daemon's machine and name its path over the control socket.")           \
  X(DM_ERR_CONFIG_SUBMITTED_UNIT_PATH, 11008, DM_CLASS_CONFIG, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH,   \
    0,                                                                                             \
    "A config sent to the daemon may not choose the code it loads: drop unit-paths, name the "     \
    "file over the control socket, or start the daemon with --allow-submitted-unit-paths.")        \
  X(DM_ERR_CONFIG_SUBMITTED_FILE_MODE, 11009, DM_CLASS_CONFIG, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH,   \
    0,                                                                                             \
    "A config sent to the daemon keeps the default file-mode 0600: drop file-mode, or name a "     \
    "file the operator placed on the daemon's machine over the control socket.")                   \
  X(DM_ERR_CONFIG_SUBMITTED_INCLUDE, 11010, DM_CLASS_CONFIG, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,  \
    "A config sent to the daemon may not @include files of the daemon's machine: put the "         \
    "settings in the file itself.")                                                                \
  X(DM_ERR_CONFIG_UNSAFE_FILE, 11011, DM_CLASS_CONFIG, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,        \
    "A secret file must be a regular file (no link, FIFO or device) of at most 4 KiB, owned by "   \
    "root or the daemon's user, mode 0600 or 0400: fix the file (chown, chmod 600).")              \
  X(DM_ERR_CONFIG_ONLINE_DDL_RULES, 11012, DM_CLASS_CONFIG, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,   \
    "A RENAME looked like an online schema change's cut-over on one side only: fix the rule list " \
    "the message names (shadow-table-rules or trash-table-rules) so both tables match, update "    \
    "the task, and resume; or `dmctl binlog skip TASK -b FILE:POS` if it was no cut-over.")        \
  X(DM_ERR_CONFIG_START_TIME, 11013, DM_CLASS_CONFIG, DM_SCOPE_UPSTREAM, DM_LEVEL_HIGH, 0,         \
    "--start-time is later than the source's last binlog event (or not a time DM's formats "       \
    "take: '2021-10-21 00:01:00', '2021-10-21T00:01:00', '2021-10-21T00:01:00+08:00'): give an "   \
    "earlier time, or start the task without --start-time.")                                       \
  X(DM_ERR_UNIT_OPEN, 12001, DM_CLASS_LOADER, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,                 \
    "Check the path in unit-paths (or --plugin-dir) names a shared object built for this host.")   \
  X(DM_ERR_UNIT_NO_ENTRY, 12002, DM_CLASS_LOADER, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,             \
    "Export dm_unit_entry from the unit (use DM_UNIT_EXPORT) and rebuild it.")                     \
  X(DM_ERR_UNIT_BAD_MAGIC, 12003, DM_CLASS_LOADER, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,            \
    "The entry returned something that is not a dmhost unit descriptor; build it with "            \
    "DM_UNIT_DESCRIPTOR_HEADER.")                                                                  \
  X(DM_ERR_UNIT_ABI_MAJOR, 12004, DM_CLASS_LOADER, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,            \
    "Rebuild the unit against the SDK installed with this host.")                                  \
  X(DM_ERR_UNIT_ABI_MINOR, 12005, DM_CLASS_LOADER, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,            \
    "The unit needs a newer host: upgrade dmhost, or rebuild the unit against this host's SDK.")   \
  X(DM_ERR_UNIT_SHORT, 12006, DM_CLASS_LOADER, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,                \
    "The descriptor is smaller than its ABI version requires; rebuild the unit against the SDK.")  \
  X(DM_ERR_UNIT_KIND, 12007, DM_CLASS_LOADER, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,                 \
    "Point unit-paths for this kind at a unit of that kind.")                                      \
  X(DM_ERR_UNIT_MISSING_OP, 12008, DM_CLASS_LOADER, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,           \
    "Implement the required slot in the unit's ops table and rebuild it.")                         \
  X(DM_ERR_UNIT_NOT_ELF, 12009, DM_CLASS_LOADER, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,              \
    "The file is not an ELF shared object; point unit-paths at the built .so file.")               \
  X(DM_ERR_UNIT_INIT, 12010, DM_CLASS_LOADER, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 1,                 \
    "See the unit's own error; fix its configuration and start the task again.")                   \
  X(DM_ERR_UNIT_TIMEOUT, 12011, DM_CLASS_SUPERVISOR, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 1,          \
    "The unit did not answer in time; check the servers it talks to, or raise the timeout.")       \
  X(DM_ERR_UNIT_FOLDER, 12012, DM_CLASS_LOADER, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,               \
    "The daemon loads units only from --plugin-dir and the folders of --unit-dir, owned by root "  \
    "or the daemon's user and writable by nobody else, never from its state, work, dump or "       \
    "relay folders: install the build into such a folder (or add one with --unit-dir DIR).")       \
  X(DM_ERR_STAGE, 13001, DM_CLASS_SUPERVISOR, DM_SCOPE_INTERNAL, DM_LEVEL_LOW, 0,                  \
    "Check the task's stage with query-status; the command is accepted only from the stages "      \
    "named.")                                                                                      \
  X(DM_ERR_RELAY_CATCHUP_TIMEOUT, 13002, DM_CLASS_SUPERVISOR, DM_SCOPE_UPSTREAM, DM_LEVEL_MEDIUM,  \
    1,                                                                                             \
    "Check the relay with query-status; resume the task once the relay has caught up, or raise "   \
    "relay-catchup-timeout.")                                                                      \
  X(DM_ERR_UNIT_ABANDONED, 13003, DM_CLASS_SUPERVISOR, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,        \
    "The unit did not return after stop and kill; its thread was abandoned. Restart dmhost "       \
    "before resuming, and report the unit's hang.")                                                \
  X(DM_ERR_SWAP, 13004, DM_CLASS_SUPERVISOR, DM_SCOPE_INTERNAL, DM_LEVEL_MEDIUM, 0,                \
    "The old build keeps running; fix the new build as the message says and swap again.")          \
  X(DM_ERR_NO_SUCH_UNIT, 13005, DM_CLASS_SUPERVISOR, DM_SCOPE_INTERNAL, DM_LEVEL_LOW, 0,           \
    "Name a unit kind that the task's mode runs.")                                                 \
  X(DM_ERR_CHAIN_HANDOVER, 13006, DM_CLASS_SUPERVISOR, DM_SCOPE_INTERNAL, DM_LEVEL_MEDIUM, 0,      \
    "Put a unit that gives a position before the one that takes it, or start units with it.")      \
  X(DM_ERR_UPDATE_STAGE, 13010, DM_CLASS_SUPERVISOR, DM_SCOPE_INTERNAL, DM_LEVEL_LOW, 0,           \
    "Pause the task first (`dmctl pause-task NAME`), wait for stage Paused in query-status, then " \
    "run update-task again.")                                                                      \
  X(DM_ERR_UPDATE_UNSUPPORTED, 13011, DM_CLASS_SUPERVISOR, DM_SCOPE_INTERNAL, DM_LEVEL_LOW, 0,     \
    "The unit cannot take new settings while paused: leave its section as it is, or stop and "     \
    "start the task to apply them.")                                                               \
  X(DM_ERR_UPDATE_FAILED, 13012, DM_CLASS_SUPERVISOR, DM_SCOPE_INTERNAL, DM_LEVEL_MEDIUM, 0,       \
    "The old settings stay in force for the whole task; fix the file as the unit's error says "    \
    "and run update-task again.")                                                                  \
  X(DM_ERR_SCHEMA_STAGE, 13020, DM_CLASS_SUPERVISOR, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,          \
    "binlog-schema works on a paused subtask (DM's rule): `dmctl pause-task -s SOURCE TASK`, "     \
    "wait "                                                                                        \
    "for stage Paused in query-status, run binlog-schema, then resume-task.")                      \
  X(DM_ERR_SCHEMA_UNIT, 13021, DM_CLASS_SUPERVISOR, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,           \
    "binlog-schema works on the sync unit's schema tracker: wait until the subtask's unit is "     \
    "Sync "                                                                                        \
    "(query-status), pause it, then run the command again.")                                       \
  X(DM_ERR_SCHEMA_UNSUPPORTED, 13022, DM_CLASS_SUPERVISOR, DM_SCOPE_INTERNAL, DM_LEVEL_LOW, 0,     \
    "The subtask's unit build keeps no table structures it can show or change (no schema_op "      \
    "slot, "                                                                                       \
    "ABI 1.2): use a sync unit that has one, or fix the target's tables by hand.")                 \
  X(DM_ERR_VALIDATION_UNIT, 13030, DM_CLASS_SUPERVISOR, DM_SCOPE_INTERNAL, DM_LEVEL_MEDIUM, 0,     \
    "The validator runs with the sync unit (DM's rule): wait until the subtask's unit is Sync "    \
    "and its stage Running or Paused (query-status), then run `dmctl validation` again.")          \
  X(DM_ERR_VALIDATION_UNSUPPORTED, 13031, DM_CLASS_SUPERVISOR, DM_SCOPE_INTERNAL, DM_LEVEL_LOW, 0, \
    "The subtask's sync unit build has no continuous validator (no validation_op slot, ABI 1.3): " \
    "use a sync unit that has one, or compare with `dmctl verify`.")                               \
  X(DM_ERR_CONTROL, 14001, DM_CLASS_CONTROL, DM_SCOPE_INTERNAL, DM_LEVEL_MEDIUM, 0,                \
    "Check that `dmhost serve` runs and that --socket names its socket.")                          \
  X(DM_ERR_CONTROL_REQUEST, 14002, DM_CLASS_CONTROL, DM_SCOPE_INTERNAL, DM_LEVEL_LOW, 0,           \
    "Fix the command as the message says; `dmctl help` lists the commands.")                       \
  X(DM_ERR_NOT_FOUND, 14003, DM_CLASS_CONTROL, DM_SCOPE_INTERNAL, DM_LEVEL_LOW, 0,                 \
    "Check the name with `dmctl query-status` or `dmctl operate-source show`.")                    \
  X(DM_ERR_EXISTS, 14004, DM_CLASS_CONTROL, DM_SCOPE_INTERNAL, DM_LEVEL_LOW, 0,                    \
    "Stop or remove the existing one first, or pick another name.")                                \
  X(DM_ERR_STATE, 14005, DM_CLASS_CONTROL, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,                    \
    "The state directory could not be read or written; check its permissions and free space.")     \
  X(DM_ERR_CONTROL_PEER, 14006, DM_CLASS_CONTROL, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,             \
    "Run dmctl as the daemon's user (or root), or start the daemon with --socket-group GROUP and " \
    "add the user to that group.")                                                                 \
  X(DM_ERR_UNTRUSTED_FILE, 14007, DM_CLASS_CONTROL, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,           \
    "Give the file to root or the daemon's user and take write access from group and others "      \
    "(chown root FILE; chmod go-w FILE), then run the command again.")                             \
  X(DM_ERR_CONTROL_SUBMITTED_SWAP, 14008, DM_CLASS_CONTROL, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,   \
    "A swap-unit path sent over the network (a master forwarding to a worker) is refused: run "    \
    "swap-unit over the daemon's control socket, or start it with --allow-submitted-unit-paths.")  \
  X(DM_ERR_UPDATE_IDENTITY, 14010, DM_CLASS_CONTROL, DM_SCOPE_INTERNAL, DM_LEVEL_LOW, 0,           \
    "That setting names the task or keys its checkpoints: keep it as it is in the file, or stop "  \
    "the task and start it as a new one.")                                                         \
  X(DM_ERR_UPDATE_CLUSTER, 14011, DM_CLASS_CONTROL, DM_SCOPE_INTERNAL, DM_LEVEL_MEDIUM, 0,         \
    "The task's file in etcd is the new one but the workers named did not take it: fix what each " \
    "says (its subtask Paused, the worker online), then update-task again with the same file.")    \
  X(DM_ERR_SOURCE_UPDATE_BUSY, 14012, DM_CLASS_CONTROL, DM_SCOPE_INTERNAL, DM_LEVEL_LOW, 0,        \
    "Pause the tasks on the source (pause-task) and stop its relay (stop-relay), then update it "  \
    "again; resume them after.")                                                                   \
  X(DM_ERR_SOURCE_DISABLED, 14013, DM_CLASS_CONTROL, DM_SCOPE_INTERNAL, DM_LEVEL_LOW, 0,           \
    "Enable the source first: `dmctl operate-source enable -s SOURCE` (DM's POST "                 \
    "/api/v1/sources/{name}/enable), which resumes the tasks its disable paused.")                 \
  /* 14014 was DM_ERR_SOURCE_OP_CLUSTER (a master refused operate-source update|enable|disable): \
     retired, never reused */ \
  X(DM_ERR_LAG_CLUSTER, 14020, DM_CLASS_CONTROL, DM_SCOPE_INTERNAL, DM_LEVEL_LOW, 0,               \
    "A master keeps no lag history: read each task's lag from `dmhost serve`, or the workers' "    \
    "dm_syncer_replication_lag_gauge in Prometheus (their GET /metrics).")                         \
  /* 14021 was DM_ERR_API_CLUSTER (a master refused DM's objects): retired, never reused */        \
  X(DM_ERR_LEADER_ONE_MASTER, 14022, DM_CLASS_CONTROL, DM_SCOPE_INTERNAL, DM_LEVEL_LOW, 0,         \
    "`dmhost serve` is a cluster of one: it is its only master and no other can take the "         \
    "leadership over. operate-leader moves the leadership among `dmhost master` processes: send "  \
    "it to one of them (docs/cluster.md).")                                                        \
  X(DM_ERR_SHARD_LOCK_NOT_FOUND, 14030, DM_CLASS_CONTROL, DM_SCOPE_INTERNAL, DM_LEVEL_LOW, 0,      \
    "No shard DDL lock has that ID (it may be resolved already): list them with `dmctl "           \
    "shard-ddl-lock [TASK]` and copy the ID as shown.")                                            \
  X(DM_ERR_SHARD_LOCK_RESOLVING, 14031, DM_CLASS_CONTROL, DM_SCOPE_INTERNAL, DM_LEVEL_LOW, 0,      \
    "Every source of the lock arrived and its operations are out: wait for the owner to run the "  \
    "DDL (query-status shows why it does not), then list the locks again.")                        \
  X(DM_ERR_SHARD_NOT_WAITING, 14032, DM_CLASS_CONTROL, DM_SCOPE_INTERNAL, DM_LEVEL_LOW, 0,         \
    "The owner named has not arrived at the lock: pick a source listed as synced with `-o "        \
    "SOURCE`, or wait until the owner arrives.")                                                   \
  X(DM_ERR_SHARD_OWNER_EXEC, 14033, DM_CLASS_CONTROL, DM_SCOPE_INTERNAL, DM_LEVEL_MEDIUM, 0,       \
    "The owner did not run the DDL in time (query-status of its subtask says why): fix that and "  \
    "unlock again, or add --force-remove to drop the lock anyway (then run the DDL on the target " \
    "yourself).")                                                                                  \
  X(DM_ERR_SHARD_DDL_DIFF, 36022, DM_CLASS_SYNC_UNIT, DM_SCOPE_UPSTREAM, DM_LEVEL_HIGH, 0,         \
    "The shards of one target table must run the same DDLs: run on this source the statements "    \
    "the lock shows (`dmctl shard-ddl-lock TASK`), or skip this one with `dmctl binlog skip`, "    \
    "then resume the task.")                                                                       \
  X(DM_ERR_ETCD_UNAVAILABLE, 15001, DM_CLASS_CLUSTER, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 1,         \
    "Check that the etcd members named run and have quorum (scripts/etcd.sh status, etcdctl "      \
    "endpoint health); the request is retried at the next member.")                                \
  X(DM_ERR_ETCD_OUTCOME_UNKNOWN, 15002, DM_CLASS_CLUSTER, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 1,     \
    "The write may or may not have been applied: read the keys back (or repeat a txn whose "       \
    "compares make it safe to repeat) before going on.")                                           \
  X(DM_ERR_ETCD_REQUEST, 15003, DM_CLASS_CLUSTER, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,             \
    "etcd refused the request as the message says; it is a bug of the caller, report it.")         \
  X(DM_ERR_ETCD_LIMIT, 15004, DM_CLASS_CLUSTER, DM_SCOPE_INTERNAL, DM_LEVEL_MEDIUM, 0,             \
    "Split the request: a txn holds at most 128 operations per list and a request at most "        \
    "1.5 MiB.")                                                                                    \
  X(DM_ERR_ETCD_COMPACTED, 15005, DM_CLASS_CLUSTER, DM_SCOPE_INTERNAL, DM_LEVEL_MEDIUM, 0,         \
    "The revision asked for was compacted away: read the current state again and watch from "      \
    "its revision + 1.")                                                                           \
  X(DM_ERR_ETCD_LEASE_NOT_FOUND, 15006, DM_CLASS_CLUSTER, DM_SCOPE_INTERNAL, DM_LEVEL_MEDIUM, 0,   \
    "The lease expired or was revoked: grant a new one (the same ID may be granted again) and "    \
    "write the keys it held again.")                                                               \
  X(DM_ERR_ETCD_LEASE_EXISTS, 15007, DM_CLASS_CLUSTER, DM_SCOPE_INTERNAL, DM_LEVEL_LOW, 0,         \
    "A lease with this ID is alive: keep it alive instead of granting it, or pick another ID.")    \
  X(DM_ERR_ETCD_REPLY, 15008, DM_CLASS_CLUSTER, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 1,               \
    "The endpoint's answer is not etcd v3's JSON gateway: check that the URL names an etcd 3.4+ "  \
    "client port.")                                                                                \
  X(DM_ERR_ETCD_AUTH, 15009, DM_CLASS_CLUSTER, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,                \
    "etcd refused this client (TLS or its user): give --etcd-cacert of the CA that signed the "    \
    "members' certificates, --etcd-cert/--etcd-key of a client certificate it accepts, and "       \
    "--etcd-user/--etcd-password-file of a user whose role grants the cluster's prefix.")          \
  X(DM_ERR_CONTROL_INSECURE_LISTEN, 15010, DM_CLASS_CONTROL, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,  \
    "The control plane gives full control of the daemon: listen on a loopback address, or give "   \
    "--tls-ca, --tls-cert and --tls-key so that only clients with a certificate of that CA may "   \
    "connect.")                                                                                    \
  X(DM_ERR_CONTROL_TLS, 15011, DM_CLASS_CONTROL, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,              \
    "Check the PEM files named: readable, the key matching the certificate, the certificate "      \
    "signed by the CA; docs/control.md shows how to make them with openssl.")                      \
  X(DM_ERR_CONTROL_CLIENT_CERT, 15012, DM_CLASS_CONTROL, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,      \
    "Give dmctl --tls-cert and --tls-key of a client certificate signed by the CA the daemon was " \
    "started with (--tls-ca), and --tls-ca to check the daemon's own certificate.")                \
  X(DM_ERR_CONTROL_LISTEN, 15013, DM_CLASS_CONTROL, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,           \
    "Give --listen HOST:PORT with an address of this machine and a free port (another daemon "     \
    "may hold it).")                                                                               \
  X(DM_ERR_CONTROL_HTTP, 15014, DM_CLASS_CONTROL, DM_SCOPE_INTERNAL, DM_LEVEL_MEDIUM, 0,           \
    "Check that `dmhost serve --listen` runs at the --master-addr given, and that dmctl's "        \
    "--tls-* flags match the daemon's (https with them, plain http without).")                     \
  X(DM_ERR_CONTROL_HOST, 15015, DM_CLASS_CONTROL, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,             \
    "Reach the daemon by the address it listens on (--listen HOST:PORT; on loopback also "         \
    "localhost, 127.0.0.1 or [::1] with the port; with TLS a name of its certificate): another "   \
    "Host is a DNS-rebinding page's, docs/security.md.")                                           \
  X(DM_ERR_CONTROL_CROSS_SITE, 15016, DM_CLASS_CONTROL, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,       \
    "A page of another web site sent this request through the operator's browser; nothing was "    \
    "run. Use the daemon's own status page (open http://LISTEN/ itself), dmctl or curl.")          \
  X(DM_ERR_CONTROL_CONTENT_TYPE, 15017, DM_CLASS_CONTROL, DM_SCOPE_INTERNAL, DM_LEVEL_MEDIUM, 0,   \
    "Send the request with the header Content-Type: application/json (curl -H 'Content-Type: "     \
    "application/json'), a body or none.")                                                         \
  X(DM_ERR_CONTROL_CLIENT_SUBJECT, 15020, DM_CLASS_CONTROL, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,   \
    "The daemon admits only the client certificates whose subject (CN) its --tls-allowed-cn "      \
    "names: use a certificate issued to one of them, or add the subject to the daemon's "          \
    "--tls-allowed-cn (docs/cluster.md lists who calls whom).")                                    \
  X(DM_ERR_CONTROL_SLOW_CLIENT, 15021, DM_CLASS_CONTROL, DM_SCOPE_INTERNAL, DM_LEVEL_MEDIUM, 0,    \
    "A connection must send its request headers (and finish its TLS handshake) within 5 s of "     \
    "connecting, and only 16 such connections wait at once: send the whole request at once (as "   \
    "dmctl and curl do); many of these in the log mean a client holding connections open.")        \
  X(DM_ERR_CLUSTER_NOT_LEADER, 15030, DM_CLASS_CLUSTER, DM_SCOPE_INTERNAL, DM_LEVEL_MEDIUM, 1,     \
    "Only the leader master schedules: send the command to the leader named in the message (or "   \
    "retry once a leader is elected).")                                                            \
  X(DM_ERR_CLUSTER_FENCED, 15031, DM_CLASS_CLUSTER, DM_SCOPE_INTERNAL, DM_LEVEL_MEDIUM, 1,         \
    "This master lost its leadership before the write; nothing was written. Send the command "     \
    "again: the new leader applies it.")                                                           \
  X(DM_ERR_CLUSTER_EVICT_PENDING, 15032, DM_CLASS_CLUSTER, DM_SCOPE_INTERNAL, DM_LEVEL_MEDIUM, 1,  \
    "The master is evicted (it will not campaign) but etcd did not confirm in time that its "      \
    "leadership ended and its leader key is gone: check etcd (scripts/etcd.sh status), then "      \
    "list-member --leader; it gives the key back as soon as etcd answers.")                        \
  X(DM_ERR_CLUSTER_CONFIG_MISSING, 15040, DM_CLASS_CLUSTER, DM_SCOPE_INTERNAL, DM_LEVEL_MEDIUM, 1, \
    "The leader bound a source or set a stage whose file is not (yet) in etcd: the worker tries "  \
    "again at the next change; store the file through the master.")                                \
  X(DM_ERR_CLUSTER_WORKER_FENCED, 15041, DM_CLASS_CLUSTER, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 1,    \
    "The worker's lease was not renewed in time, so it paused its subtasks before etcd could "     \
    "hand the source to another worker; they resume once a renewal succeeds and the binding is "   \
    "still its own. Check the etcd members' quorum and the network.")                              \
  X(DM_ERR_CLUSTER_INSECURE_ETCD, 15042, DM_CLASS_CLUSTER, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,    \
    "Whoever reaches etcd reads and writes the cluster: use https:// endpoints with "              \
    "--etcd-cacert (and a client certificate and user), or a loopback http:// endpoint; "          \
    "--etcd-insecure-transport allows plain http to another host (dangerous).")                    \
  X(DM_ERR_CLUSTER_CLEAR_PASSWORD, 15043, DM_CLASS_CLUSTER, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,   \
    "A file stored in etcd may not carry a password in clear: start the masters and workers with " \
    "--cluster-key FILE (the master stores the password encrypted with it), or give the password " \
    "as a password-file below every worker's --secrets-dir.")                                      \
  X(DM_ERR_CLUSTER_KEY, 15044, DM_CLASS_CLUSTER, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,              \
    "A password stored in etcd decrypts only with the cluster key: give every master and worker "  \
    "the same --cluster-key FILE (64 hex digits, mode 0600); a key path inside a text read from "  \
    "etcd is never used.")                                                                         \
  X(DM_ERR_CLUSTER_CREDENTIALS, 15045, DM_CLASS_CLUSTER, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,      \
    "Check the etcd flags: --etcd-cert and --etcd-key go together, --etcd-password-file with "     \
    "--etcd-user, and a password or key file is a regular file of root or this user, mode 0600 "   \
    "or 0400, at most 4 KiB.")                                                                     \
  X(DM_ERR_CLUSTER_SHARD_FENCED, 15046, DM_CLASS_CLUSTER, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,     \
    "A worker's shard DDL write (tables, info, done) was refused: the source is not bound to it "  \
    "under the writer's fencing token (it moved, or the subtask is an older binding's); nothing "  \
    "was written. The source's subtask runs on from its checkpoint where it is bound now.")        \
  X(DM_ERR_CLUSTER_MEMBER_ONLINE, 15047, DM_CLASS_CLUSTER, DM_SCOPE_INTERNAL, DM_LEVEL_MEDIUM, 0,  \
    "offline-member removes only a member that is gone: stop the worker, wait until its lease "    \
    "expires (list-member shows it offline), then offline-member it again. A master leaves the "   \
    "cluster by stopping (its key goes with its lease); a `dmhost serve` is its own cluster's "    \
    "only member and always online.")                                                              \
  X(DM_ERR_DB_CONNECT, 20001, DM_CLASS_DATABASE, DM_SCOPE_NOT_SET, DM_LEVEL_HIGH, 1,               \
    "Check host, port, user and password, and that the server runs.")                              \
  X(DM_ERR_DB_QUERY, 20002, DM_CLASS_DATABASE, DM_SCOPE_NOT_SET, DM_LEVEL_HIGH, 1,                 \
    "See the server's error in the raw cause.")                                                    \
  X(DM_ERR_DB_PRIVILEGE, 20003, DM_CLASS_DATABASE, DM_SCOPE_NOT_SET, DM_LEVEL_HIGH, 0,             \
    "GRANT the privileges named in the message to the user, then start the task again.")           \
  X(DM_ERR_DB_AUTH_PLUGIN, 20004, DM_CLASS_DATABASE, DM_SCOPE_NOT_SET, DM_LEVEL_HIGH, 0,           \
    "The server asked for a plugin that hands it the password, without verified TLS; nothing "     \
    "was sent. Give the server's `security` group with ssl-ca, or the account "                    \
    "mysql_native_password or ed25519; if unexpected, check what answers at that address.")        \
  X(DM_ERR_PRECHECK_FAILED, 26001, DM_CLASS_TASK_CHECK, DM_SCOPE_NOT_SET, DM_LEVEL_HIGH, 0,        \
    "Fix each failed check as its instruction says (`dmhost check` or `dmctl check-task` prints "  \
    "them all; docs/precheck.md), or skip the item with ignore-checking-items in the task file, "  \
    "then start the task again.")                                                                  \
  X(DM_ERR_VERIFY_TABLE, 43101, DM_CLASS_VALIDATOR, DM_SCOPE_DOWNSTREAM, DM_LEVEL_HIGH, 0,         \
    "The target has no such table (or lacks a key column of it): check the task's routes and "     \
    "that the load ran; create the table on the target (the dump's schema file has it), then "     \
    "run verify again.")                                                                           \
  X(DM_ERR_VERIFY_SNAPSHOT, 43102, DM_CLASS_VALIDATOR, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,        \
    "verify reads each side in one consistent snapshot (START TRANSACTION WITH CONSISTENT "        \
    "SNAPSHOT): give the account SELECT on the task's tables, and RELOAD for --threads above 1 "   \
    "(or use --threads 1); with --threads, run it again once the session holding a table lock "    \
    "or the long statement named ends; see docs/verify.md.")                                       \
  X(DM_ERR_VERIFY_FIX_FILE, 43103, DM_CLASS_VALIDATOR, DM_SCOPE_INTERNAL, DM_LEVEL_MEDIUM, 0,      \
    "--fix-sql writes a new file only (never over an existing file or through a link): name a "    \
    "path that does not exist, in a folder you may write.")                                        \
  X(DM_ERR_VERIFY_NOT_BUILT, 43104, DM_CLASS_VALIDATOR, DM_SCOPE_INTERNAL, DM_LEVEL_LOW, 0,        \
    "Not built yet (docs/verify.md, \"Not built yet\"): run `dmhost verify` without it.")          \
  X(DM_ERR_VERIFY_NO_TABLE, 43105, DM_CLASS_VALIDATOR, DM_SCOPE_UPSTREAM, DM_LEVEL_MEDIUM, 0,      \
    "Nothing was compared, so nothing is proven: check the task's block-allow-list (do-dbs, "      \
    "do-tables) against the source's schemas, and that verify connects to the right source.")      \
  X(DM_ERR_VERIFY_LAG, 43106, DM_CLASS_VALIDATOR, DM_SCOPE_DOWNSTREAM, DM_LEVEL_MEDIUM, 0,         \
    "The task's sync did not reach the source's snapshot position in time, so the table was not "  \
    "compared: check query-status (a paused or failing sync never gets there), resume it, or "     \
    "give "                                                                                        \
    "it longer (--checkpoint-wait); a paused task is verified as it is without --at-checkpoint.")  \
  X(DM_ERR_VERIFY_CANCELLED, 43107, DM_CLASS_VALIDATOR, DM_SCOPE_INTERNAL, DM_LEVEL_LOW, 0,        \
    "The daemon running the verify is shutting down, so the tables it had not compared are "       \
    "not proven: run the verify again once the daemon is back.")                                   \
  X(DM_ERR_BINLOG_PURGED, 30001, DM_CLASS_BINLOG, DM_SCOPE_UPSTREAM, DM_LEVEL_HIGH, 0,             \
    "The source no longer has the binlog this task needs; re-run the task in mode all from a new " \
    "dump.")                                                                                       \
  X(DM_ERR_BINLOG_CORRUPT, 30002, DM_CLASS_BINLOG, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,            \
    "The file is damaged at the offset named; purge it and let the relay fetch it again.")         \
  X(DM_ERR_BINLOG_INCOMPLETE, 30003, DM_CLASS_BINLOG, DM_SCOPE_INTERNAL, DM_LEVEL_MEDIUM, 0,       \
    "The file ends inside an event (a write was cut short): truncate it at the offset named; the " \
    "relay does so when it recovers.")                                                             \
  X(DM_ERR_BINLOG_UNSUPPORTED, 30004, DM_CLASS_BINLOG, DM_SCOPE_UPSTREAM, DM_LEVEL_HIGH, 0,        \
    "The binlog uses a feature this reader cannot decode (named in the message): turn it off on "  \
    "the source (encrypt_binlog, log_bin_compress) or use binlog format v4 (MySQL 5.0+).")         \
  X(DM_ERR_BINLOG_GTID_SET, 30005, DM_CLASS_BINLOG, DM_SCOPE_NOT_SET, DM_LEVEL_HIGH, 0,            \
    "A MySQL GTID set (a checkpoint's binlog_gtid, a task's meta binlog-gtid) does not parse: "    \
    "write it as MySQL prints @@gtid_executed, uuid:1-5[:7-9][,uuid2:1-3].")                       \
  X(DM_ERR_RELAY_PURGE_IN_USE, 32001, DM_CLASS_RELAY_UNIT, DM_SCOPE_INTERNAL, DM_LEVEL_LOW, 0,     \
    "A reader (a sync unit) still needs the file named; purge only files before it, or stop the "  \
    "task that reads it first.")                                                                   \
  X(DM_ERR_RELAY_UPSTREAM, 32002, DM_CLASS_RELAY_UNIT, DM_SCOPE_UPSTREAM, DM_LEVEL_HIGH, 0,        \
    "The source's binlog does not continue the relay log (see the message); check the source, "    \
    "then remove the relay sub-folder named (or set relay.binlog-name/binlog-gtid) and start the " \
    "relay again.")                                                                                \
  X(DM_ERR_RELAY_BAD_NAME, 32003, DM_CLASS_RELAY_UNIT, DM_SCOPE_UPSTREAM, DM_LEVEL_HIGH, 0,        \
    "A binlog file or relay sub-folder name (from the source, or read from the relay folder) is "  \
    "not a plain file name ([A-Za-z0-9._-], not starting with '.'): check what sits between "      \
    "dmhost and the source and the relay folder's files; nothing was written outside the relay "   \
    "folder.")                                                                                     \
  X(DM_ERR_RELAY_LINK, 32004, DM_CLASS_RELAY_UNIT, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,            \
    "The relay folder holds a symbolic link (or another non-file) where the relay keeps a file "   \
    "or sub-folder; the relay does not follow links there. Find who put it there, remove it, "     \
    "then start the relay again.")                                                                 \
  X(DM_ERR_CHECKPOINT, 31001, DM_CLASS_CHECKPOINT, DM_SCOPE_DOWNSTREAM, DM_LEVEL_HIGH, 1,          \
    "Check the target is reachable and the meta-schema writable, then resume.")                    \
  X(DM_ERR_DUMP_NO_BINLOG, 40001, DM_CLASS_DUMP_UNIT, DM_SCOPE_UPSTREAM, DM_LEVEL_HIGH, 0,         \
    "Turn on the source's binary log (log_bin) and restart it: the dump records the binlog "       \
    "position its snapshot matches, which the sync that follows starts from.")                     \
  X(DM_ERR_DUMP_TABLE_CHANGED, 40002, DM_CLASS_DUMP_UNIT, DM_SCOPE_UPSTREAM, DM_LEVEL_MEDIUM, 1,   \
    "A table was altered or dropped on the source while the dump read it; resume the task to "     \
    "dump again from a new snapshot, and avoid DDL on the source until the dump has finished.")    \
  X(DM_ERR_DUMP_IO_PERMANENT, 40003, DM_CLASS_DUMP_UNIT, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,      \
    "The dump folder cannot be written for a reason that does not pass by itself (permission, "    \
    "read-only file system, a folder where a file goes, a path too long: see the message); fix "   \
    "it, then resume the task.")                                                                   \
  X(DM_ERR_DUMP_NO_POSITION, 40004, DM_CLASS_DUMP_UNIT, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,       \
    "The dump has no binlog position (see its metadata's Warning line), so no sync can continue "  \
    "from it: grant the source user REPLICATION CLIENT, remove the dump folder and the load "      \
    "checkpoint, then start the task again; or use mode full.")                                    \
  X(DM_ERR_DUMP_LOCK_UNSTABLE, 40005, DM_CLASS_DUMP_UNIT, DM_SCOPE_UPSTREAM, DM_LEVEL_MEDIUM, 1,   \
    "With consistency = lock, tables kept being created (or dropped) in the dumped schemas while " \
    "the dump locked them: the task resumes by itself and tries again; if it keeps failing, let "  \
    "the source's DDL pause, or use consistency = snapshot (one connection, no lock) or flush.")   \
  X(DM_ERR_DUMP_BAD_ANSWER, 40006, DM_CLASS_DUMP_UNIT, DM_SCOPE_UPSTREAM, DM_LEVEL_HIGH, 0,        \
    "The source answered SHOW CREATE with something other than the statement asked for (binary "   \
    "bytes, another statement or name); nothing of it was written. Check what answers at the "     \
    "source's address (a proxy, a server that is not MySQL/MariaDB), then resume the task.")       \
  X(DM_ERR_DUMP_LOCK_WAIT, 40007, DM_CLASS_DUMP_UNIT, DM_SCOPE_UPSTREAM, DM_LEVEL_MEDIUM, 1,       \
    "A write on the source (a long UPDATE or ALTER, a LOCK TABLES ... WRITE) kept the dump's "     \
    "lock waiting past `lock-wait`, the source's writes queued behind it, so the dump gave up: "   \
    "let it end or KILL the connection the message names, then resume; or raise `lock-wait`, "     \
    "or use consistency = snapshot (no lock).")                                                    \
  X(DM_ERR_LOAD_DUMP_INCOMPLETE, 40101, DM_CLASS_LOAD_UNIT, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,   \
    "The dump folder is incomplete (no metadata, or a file the load needs is gone or changed): "   \
    "re-run the dump (remove the load checkpoint table and start the task again in mode full or "  \
    "all), or point the load unit's `dir` at a complete dump.")                                    \
  X(DM_ERR_LOAD_TABLE_MISMATCH, 40102, DM_CLASS_LOAD_UNIT, DM_SCOPE_DOWNSTREAM, DM_LEVEL_HIGH, 0,  \
    "Drop the target table or give it the dump's definition (or route the table elsewhere), "      \
    "then start the task again.")                                                                  \
  X(DM_ERR_LOAD_FILE_FORMAT, 40103, DM_CLASS_LOAD_UNIT, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,       \
    "The dump file does not follow docs/dump-format.md at the place named; re-run the dump with "  \
    "this dmhost's dump unit.")                                                                    \
  X(DM_ERR_LOAD_UNSAFE_FILE, 40104, DM_CLASS_LOAD_UNIT, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,       \
    "The load reads only regular files inside the dump folder: replace the symbolic link (or "     \
    "device, FIFO, folder) named by a copy of the dump's own file, or re-run the dump.")           \
  X(DM_ERR_LOAD_BAD_STATEMENT, 40105, DM_CLASS_LOAD_UNIT, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,     \
    "The file holds a statement the dump never writes (docs/dump-format.md); nothing of it ran. "  \
    "Check who changed the dump folder, then re-run the dump.")                                    \
  X(DM_ERR_LOAD_PACKET_TOO_BIG, 40106, DM_CLASS_LOAD_UNIT, DM_SCOPE_DOWNSTREAM, DM_LEVEL_HIGH, 0,  \
    "Raise the target's max_allowed_packet to the size named (SET GLOBAL max_allowed_packet = "    \
    "<bytes>; and in its configuration file), then resume the task.")                              \
  X(DM_ERR_LOAD_OTHER_DUMP, 40107, DM_CLASS_LOAD_UNIT, DM_SCOPE_DOWNSTREAM, DM_LEVEL_HIGH, 0,      \
    "The load must start over from a new dump, but another source loads into the table named. "    \
    "Stop the task, empty that table on the target, delete the task's rows of "                    \
    "<meta-schema>.<task>_loader_checkpoint, then start the task again.")                          \
  X(DM_ERR_SYNC_PRECHECK, 36001, DM_CLASS_SYNC_UNIT, DM_SCOPE_UPSTREAM, DM_LEVEL_HIGH, 0,          \
    "Set what the message names on the source (binlog_format=ROW, binlog_row_image=FULL, "         \
    "binlog_row_metadata=FULL, log_bin) or grant the privileges it lists, then resume the task.")  \
  X(DM_ERR_SYNC_TABLE, 36002, DM_CLASS_SYNC_UNIT, DM_SCOPE_DOWNSTREAM, DM_LEVEL_HIGH, 0,           \
    "Create the table on the target with the source's definition (or route the source table to "   \
    "an existing one, or leave it out with the block-allow-list), then resume the task.")          \
  X(DM_ERR_SYNC_APPLY, 36003, DM_CLASS_SYNC_UNIT, DM_SCOPE_DOWNSTREAM, DM_LEVEL_HIGH, 0,           \
    "The target refused a change of the binlog (see the raw cause): the target has diverged from " \
    "the source. Repair the row or table on the target (or set safe-mode = true in the sync "      \
    "section), then resume the task.")                                                             \
  X(DM_ERR_SYNC_DDL, 36004, DM_CLASS_SYNC_UNIT, DM_SCOPE_DOWNSTREAM, DM_LEVEL_HIGH, 0,             \
    "A DDL of the binlog failed on the target. Fix the target, or tell the task what to do with "  \
    "the event: `dmctl binlog skip|replace|inject TASK -b FILE:POS [SQL...]` (the position is in " \
    "the message), then resume the task.")                                                         \
  X(DM_ERR_SYNC_NO_START, 36005, DM_CLASS_SYNC_UNIT, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,          \
    "Mode incremental needs a start position: set `meta` (binlog-name and binlog-pos, or "         \
    "binlog-gtid) for the source in the task file, or run mode all / load&sync.")                  \
  X(DM_ERR_SYNC_DDL_MULTI, 36006, DM_CLASS_SYNC_UNIT, DM_SCOPE_UPSTREAM, DM_LEVEL_HIGH, 0,         \
    "The DDL at the position named holds a second statement after a ';' (crafted text, see "       \
    "docs/sync.md): it was not run. Find who ran it on the source; to go on without it, `dmctl "   \
    "binlog skip|replace TASK -b FILE:POS`, then resume the task.")                                \
  X(DM_ERR_SYNC_DDL_CHARSET, 36007, DM_CLASS_SYNC_UNIT, DM_SCOPE_DOWNSTREAM, DM_LEVEL_HIGH, 0,     \
    "The DDL at the position named was written in a client character set the target does not "     \
    "know, and holds bytes it would read otherwise: run it on the target by hand, then `dmctl "    \
    "binlog skip TASK -b FILE:POS` and resume the task.")                                          \
  X(DM_ERR_SYNC_RENAME_INTO, 36010, DM_CLASS_SYNC_UNIT, DM_SCOPE_UPSTREAM, DM_LEVEL_HIGH, 0,       \
    "A RENAME made a table the task left out (the target lacks its rows) a replicated one; none "  \
    "of it ran. Add that table to the block-allow list and start again from a new dump, or use "   \
    "online-DDL support once it exists; to go on without its rows: `dmctl binlog skip TASK -b "    \
    "FILE:POS`, then resume.")                                                                     \
  X(DM_ERR_SYNC_COLUMNS, 36014, DM_CLASS_SYNC_UNIT, DM_SCOPE_DOWNSTREAM, DM_LEVEL_HIGH, 0,         \
    "The target table's columns must be a superset of the source's: add the column named to the "  \
    "target table (an extra column of the target needs a DEFAULT or to be nullable), or route "    \
    "the table elsewhere, then resume the task.")                                                  \
  X(DM_ERR_SYNC_XA, 36008, DM_CLASS_SYNC_UNIT, DM_SCOPE_DOWNSTREAM, DM_LEVEL_HIGH, 0,              \
    "The stored statements of the XA transaction named (in `<meta>`.`<task>_syncer_xa`) were "     \
    "changed by hand. Make its changes on the target yourself, delete its rows of that table, "    \
    "then resume the task (a commit with nothing stored is passed with a warning).")               \
  X(DM_ERR_SYNC_SCHEMA, 36012, DM_CLASS_SYNC_UNIT, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,            \
    "The schema tracker's shadow table (named in the message) differs from the source's table: "   \
    "it was learnt from a target table that differs, or a DDL was missed. Make the shadow match "  \
    "the source's table at that position, or set binlog_row_metadata=FULL on the source and drop " \
    "the shadow, then resume the task.")                                                           \
  X(DM_ERR_SYNC_NO_SCHEMA, 36013, DM_CLASS_SYNC_UNIT, DM_SCOPE_DOWNSTREAM, DM_LEVEL_HIGH, 0,       \
    "The binlog names no columns (binlog_row_metadata is not FULL) and the table is on neither "   \
    "the target nor in the schema tracker: create it on the target as the source had it at that "  \
    "position, or set binlog_row_metadata=FULL on the source, then resume the task.")              \
  X(DM_ERR_FENCED, 36016, DM_CLASS_CHECKPOINT, DM_SCOPE_INTERNAL, DM_LEVEL_HIGH, 0,                \
    "Another worker now owns this subtask (it raised the checkpoint's fencing token); this one "   \
    "stopped and committed nothing more. If no other worker should run it, check the cluster's "   \
    "bindings, then start it with a token at least as high.")                                      \
  X(DM_ERR_SYNC_SHARD_MULTI, 36017, DM_CLASS_SYNC_UNIT, DM_SCOPE_UPSTREAM, DM_LEVEL_HIGH, 0,       \
    "A DDL names two tables of a shard group (a merged target table): a coordinated DDL must be "  \
    "about one shard. Run it as one statement per table on the source, or `dmctl binlog skip "     \
    "TASK -b FILE:POS` and apply it by hand, then resume the task.")                               \
  X(DM_ERR_SYNC_UNSUPPORTED_STMT, 36018, DM_CLASS_SYNC_UNIT, DM_SCOPE_UPSTREAM, DM_LEVEL_HIGH, 0,  \
    "The statement is not supported in a shard group (RENAME of a merged table): rename the "      \
    "table out of the task's routes first, or `dmctl binlog skip TASK -b FILE:POS`, then resume "  \
    "the task.")                                                                                   \
  X(DM_ERR_SYNC_GHOST_NO_RECORD, 36020, DM_CLASS_SYNC_UNIT, DM_SCOPE_DOWNSTREAM, DM_LEVEL_HIGH, 0, \
    "An online schema change's cut-over found no recorded DDL for its ghost table (in "            \
    "`<meta>`.`<task>_onlineddl`): the task started after the tool's ALTER. Run the ALTER on the " \
    "target table by hand, then `dmctl binlog skip TASK -b FILE:POS` and resume the task.")        \
  X(DM_ERR_SYNC_GHOST_RENAME, 36021, DM_CLASS_SYNC_UNIT, DM_SCOPE_UPSTREAM, DM_LEVEL_HIGH, 0,      \
    "A RENAME moved a table to or between online schema change ghost tables, which no tool does: " \
    "check shadow-table-rules, or make the change on the target by hand, then `dmctl binlog skip " \
    "TASK -b FILE:POS` and resume the task.")                                                      \
  X(DM_ERR_SYNC_SHARD_CONFLICT, 36019, DM_CLASS_SYNC_UNIT, DM_SCOPE_UPSTREAM, DM_LEVEL_HIGH, 0,    \
    "strict-optimistic-shard-mode: a shard's DDL conflicts with the other shards of its merged "   \
    "table (the message says which column and why). Make the shards agree, or release the table "  \
    "with `dmctl shard-ddl-lock unlock LOCK_ID -s SOURCE -d DB -t TABLE -a exec|skip`, then "      \
    "resume the task.")                                                                            \
  X(DM_ERR_SYNC_FILTER_ERROR, 36015, DM_CLASS_SYNC_UNIT, DM_SCOPE_UPSTREAM, DM_LEVEL_HIGH, 0,      \
    "A filter rule with action Error matched the event (the message names rule, table, event "     \
    "and statement); nothing of it ran. Change the task's `filters` and `dmctl update-task` (the " \
    "new rules judge it at resume), or `dmctl binlog skip TASK -b FILE:POS`; then resume.")        \
  X(DM_ERR_UNIT_CUSTOM_BASE, 90000, DM_CLASS_UNIT, DM_SCOPE_NOT_SET, DM_LEVEL_MEDIUM, 1, "")

typedef enum dm_error_code {
#define DM_X_ENUM(name, code, cls, scope, level, resumable, workaround) name = code,
  DM_ERROR_MAP(DM_X_ENUM)
#undef DM_X_ENUM
} dm_error_code;

#define DM_ERROR_MESSAGE_MAX 512
#define DM_ERROR_RAW_MAX 512
#define DM_ERROR_WORKAROUND_MAX 320

/*
 * An error. A plain value: copy it, never free it. `resumable` says whether the host's auto-resume
 * may retry (a lost connection: yes; a binlog purged upstream: no). Fill it with the host's
 * error_make service (which takes class, scope, level, resumable and workaround from the table) or
 * with dm_error_set from the SDK library.
 */
typedef struct dm_error {
  int32_t code;  /* dm_error_code, or DM_ERR_UNIT_CUSTOM_BASE + n */
  uint16_t cls;  /* dm_error_class */
  uint8_t scope; /* dm_error_scope */
  uint8_t level; /* dm_error_level */
  uint8_t resumable;
  uint8_t reserved[7];
  char message[DM_ERROR_MESSAGE_MAX];       /* what went wrong, and where */
  char raw_cause[DM_ERROR_RAW_MAX];         /* the underlying error, e.g. the server's message */
  char workaround[DM_ERROR_WORKAROUND_MAX]; /* what the user can do */
} dm_error;

#ifdef __cplusplus
}
#endif
#endif /* DMHOST_ERROR_H */
