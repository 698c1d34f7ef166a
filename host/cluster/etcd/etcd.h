/*
 * etcd v3 client: the cluster's store (issue 11), host-private.
 *
 * Speaks etcd's v3 JSON gateway (grpc-gateway) over HTTP/1.1 with libcurl: POST
 * <endpoint>/v3/<service>/<method> with a JSON body, JSON back. Written against Debian's etcd
 * 3.4.23, which serves both /v3/ and the older /v3beta/; the client asks /v3/ and falls back to
 * /v3beta/ (etcd 3.3) for an endpoint that answers 404 there. What the gateway does (measured):
 * int64 fields are JSON strings (lease IDs exceed 2^53: they stay int64_t here, never double);
 * zero values are omitted (no `succeeded` = false, no `kvs` = none, a PUT event has no `type`);
 * keys and values are base64; a txn holds at most 128 operations per list; a request at most
 * 1.5 MiB; without quorum a write answers 503 after about 7 s. Use lease TTLs of 10 s or more.
 *
 * Endpoints and failover: a client has a list of endpoints (URLs of members' client ports). A
 * request goes to the current endpoint; when it cannot be sent (connection refused, no route), the
 * next endpoint is tried, and so on once round the list. A read (range, lease time-to-live,
 * keepalive) is also retried at the next member after a broken connection, a timeout or a 503; a
 * write (put, delete, txn, grant, revoke) only when etcd said it was not applied (503 "no leader"),
 * since otherwise it may have been: DM_ERR_ETCD_OUTCOME_UNKNOWN, read back before repeating. The
 * endpoint that answered stays current for the next request.
 *
 * Errors are dm_error with DM_CLASS_CLUSTER codes 15001-15008 (sdk/include/dmhost/error.h),
 * naming what failed, the endpoint, and etcd's own message as the raw cause.
 *
 * Threads: a dmh_etcd is used by one thread at a time (it holds one curl handle and its
 * keep-alive connection); give each thread its own (dmh_etcd_open is cheap: it connects at the
 * first request). A watch blocks the thread that runs it and uses a connection of its own; stop it
 * from another thread through its stop flag. A dmh_etcd_keeper has its own thread and client; any
 * thread may ask it. Results are plain malloc'd values owned by the caller.
 */
#ifndef DMH_ETCD_H
#define DMH_ETCD_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "dmhost/error.h"

/* The most operations one list of a txn (compares, success, failure) may hold (etcd's default). */
#define DMH_ETCD_TXN_MAX_OPS 128

typedef struct dmh_etcd dmh_etcd;

/* Bytes of a key or value: binary, may hold NUL. DMH_ETCD_S("text") for a C string. */
typedef struct dmh_etcd_bytes {
  const void *p;
  size_t n;
} dmh_etcd_bytes;
#define DMH_ETCD_S(s) ((dmh_etcd_bytes){(s), strlen(s)})

/* A key-value pair as etcd keeps it. key and value are malloc'd, NUL-terminated for convenience
 * (the lengths count without it). A deleted key (a DELETE event) has only key and mod_revision. */
typedef struct dmh_etcd_kv {
  char *key;
  size_t key_len;
  char *value;
  size_t value_len;
  int64_t create_revision;
  int64_t mod_revision;
  int64_t version; /* 1 at creation, +1 at each put; 0: absent */
  int64_t lease;   /* 0: none */
} dmh_etcd_kv;

typedef enum dmh_etcd_op_kind {
  DMH_ETCD_RANGE = 0,
  DMH_ETCD_PUT = 1,
  DMH_ETCD_DELETE = 2,
} dmh_etcd_op_kind;

/* One operation: on its own (dmh_etcd_do) or in a txn. Zero fields are etcd's defaults. */
typedef struct dmh_etcd_op {
  dmh_etcd_op_kind kind;
  dmh_etcd_bytes key;
  dmh_etcd_bytes value; /* put */
  int prefix;           /* range, delete: every key that starts with key */
  int64_t limit;        /* range: at most this many kvs (0: all) */
  int64_t revision;     /* range: read at this revision (0: the latest) */
  int64_t lease;        /* put: attach to this lease (0: none) */
  int prev_kv;          /* put, delete: return the previous pair(s) */
} dmh_etcd_op;

/* The result of one operation. range: kvs (n_kvs of them), count = how many match (all of them,
 * even past limit), more = some were left out by limit. put: kvs = the previous pair when asked
 * and there was one. delete: count = how many were deleted, kvs = their previous pairs when
 * asked. revision: the store's revision after the operation (of the txn, for an op in a txn). */
typedef struct dmh_etcd_result {
  dmh_etcd_op_kind kind;
  int64_t revision;
  dmh_etcd_kv *kvs;
  size_t n_kvs;
  int64_t count;
  int more;
} dmh_etcd_result;

typedef enum dmh_etcd_cmp_target {
  DMH_ETCD_CMP_VERSION = 0,
  DMH_ETCD_CMP_CREATE = 1, /* create_revision: 0 when the key does not exist */
  DMH_ETCD_CMP_MOD = 2,    /* mod_revision */
  DMH_ETCD_CMP_VALUE = 3,
  DMH_ETCD_CMP_LEASE = 4,
} dmh_etcd_cmp_target;

typedef enum dmh_etcd_cmp_result {
  DMH_ETCD_EQUAL = 0,
  DMH_ETCD_GREATER = 1,
  DMH_ETCD_LESS = 2,
  DMH_ETCD_NOT_EQUAL = 3,
} dmh_etcd_cmp_result;

/* A compare of a txn: key's target <op> number (or value, for DMH_ETCD_CMP_VALUE). A missing key
 * has version, create and mod revision and lease 0, and no value (a value compare on it fails). */
typedef struct dmh_etcd_cmp {
  dmh_etcd_bytes key;
  dmh_etcd_cmp_target target;
  dmh_etcd_cmp_result result;
  int64_t number;
  dmh_etcd_bytes value;
} dmh_etcd_cmp;

/* A txn's answer: whether the compares held (then `success` ran, else `failure`), the store's
 * revision after it, and one result per operation that ran, in order. */
typedef struct dmh_etcd_txn_result {
  int succeeded;
  int64_t revision;
  dmh_etcd_result *results;
  size_t n_results;
} dmh_etcd_txn_result;

/* How a client proves itself to etcd and checks etcd (docs/cluster.md, "etcd with TLS and
 * users"). The strings are the caller's and outlive every client opened with them.
 * TLS: an https:// endpoint is verified (peer certificate and host name, never off) against
 * `cacert` (the system's CAs when NULL); `cert` and `key` (both or neither) are presented as the
 * client certificate. Users (etcd's RBAC): with `user`, the client authenticates
 * (/v3/auth/authenticate with `password`), sends the token with every request and watch, and
 * authenticates again when etcd answers "invalid auth token" (an expired simple token: etcd's
 * --auth-token-ttl, a restarted member); the token is shared by the process's clients of the
 * same user and endpoints. Refusals (a handshake failing, a wrong password, "permission
 * denied") are DM_ERR_ETCD_AUTH. */
typedef struct dmh_etcd_security {
  const char *cacert;
  const char *cert;
  const char *key;
  const char *user;
  const char *password;
} dmh_etcd_security;

/* Client options; zero fields take the defaults. */
typedef struct dmh_etcd_opts {
  long connect_timeout_ms;      /* default 1000 (loopback and LAN members) */
  long request_timeout_ms;      /* default 10000: above the ~7 s after which etcd answers 503 */
  const dmh_etcd_security *sec; /* NULL: no client certificate, CA of the system, no user */
  /* An http:// endpoint on another host is refused (DM_ERR_CLUSTER_INSECURE_ETCD: the keys,
   * the token and the password would cross the network in clear) unless this is set
   * (--etcd-insecure-transport). Loopback (127.0.0.0/8, ::1, localhost) is always allowed. */
  int insecure_transport;
} dmh_etcd_opts;

/* A client for the comma-separated endpoint URLs ("http://127.0.0.1:22379,http://..."; an
 * endpoint without a scheme is https:// when opts->sec names a CA, else http://); opts may be
 * NULL. NULL with err set when the list is empty, an endpoint is refused (see insecure_transport)
 * or memory ran out. Connects at first use. */
dmh_etcd *dmh_etcd_open(const char *endpoints, const dmh_etcd_opts *opts, dm_error *err);
void dmh_etcd_close(dmh_etcd *c);
/* The endpoint the next request goes to first (the last one that answered). */
const char *dmh_etcd_endpoint(const dmh_etcd *c);

/* One operation. 0, or -1 with err set. *out is filled on success; free it with
 * dmh_etcd_result_free. */
int dmh_etcd_do(dmh_etcd *c, const dmh_etcd_op *op, dmh_etcd_result *out, dm_error *err);
/* The usual three as calls; out may be NULL for put and delete. */
int dmh_etcd_range(dmh_etcd *c, dmh_etcd_bytes key, int prefix, int64_t limit, int64_t revision,
                   dmh_etcd_result *out, dm_error *err);
int dmh_etcd_put(dmh_etcd *c, dmh_etcd_bytes key, dmh_etcd_bytes value, int64_t lease, int prev_kv,
                 dmh_etcd_result *out, dm_error *err);
int dmh_etcd_delete(dmh_etcd *c, dmh_etcd_bytes key, int prefix, dmh_etcd_result *out,
                    dm_error *err);
void dmh_etcd_result_free(dmh_etcd_result *r);
/* Drops the history before revision (reads and watches from older revisions then fail with
 * DM_ERR_ETCD_COMPACTED). */
int dmh_etcd_compact(dmh_etcd *c, int64_t revision, dm_error *err);

/* A txn: if every compare holds, the success ops run, else the failure ops, atomically. More than
 * DMH_ETCD_TXN_MAX_OPS in a list is refused by etcd: DM_ERR_ETCD_LIMIT. 0, or -1 with err set. */
int dmh_etcd_txn(dmh_etcd *c, const dmh_etcd_cmp *cmps, size_t n_cmps, const dmh_etcd_op *success,
                 size_t n_success, const dmh_etcd_op *failure, size_t n_failure,
                 dmh_etcd_txn_result *out, dm_error *err);
void dmh_etcd_txn_result_free(dmh_etcd_txn_result *r);

/* Leases. grant: id 0 lets etcd pick one; a given id (a restarted process reusing its own) is
 * granted when no live lease has it, else DM_ERR_ETCD_LEASE_EXISTS. *id_out (may be NULL) gets the
 * lease's ID, *ttl_out (may be NULL) the TTL granted. keepalive: one renewal; *ttl_out the TTL
 * from now; DM_ERR_ETCD_LEASE_NOT_FOUND once it expired or was revoked (so does revoke).
 * time_to_live: *ttl_out seconds left, -1 when the lease does not exist (not an error);
 * *granted_out (may be NULL) its granted TTL. A keepalive thread is the caller's: renew every
 * TTL/3 or so; the client of that thread is its own. */
int dmh_etcd_lease_grant(dmh_etcd *c, int64_t ttl_s, int64_t id, int64_t *id_out, int64_t *ttl_out,
                         dm_error *err);
int dmh_etcd_lease_keepalive(dmh_etcd *c, int64_t id, int64_t *ttl_out, dm_error *err);
int dmh_etcd_lease_revoke(dmh_etcd *c, int64_t id, dm_error *err);
int dmh_etcd_lease_ttl(dmh_etcd *c, int64_t id, int64_t *ttl_out, int64_t *granted_out,
                       dm_error *err);

/* A lease kept alive by a thread of its own (with its own client of the endpoints): a keepalive
 * every TTL/3, again after 1 s when one fails. Start it right after the grant: the grant counts as
 * the first renewal. The owner asks how long ago the last renewal succeeded, the measure of the
 * issue's fencing rule (stop the work bound to the lease once it exceeds TTL minus a margin, before
 * etcd can expire it). lost: etcd said the lease is gone (DM_ERR_ETCD_LEASE_NOT_FOUND): the thread
 * stops renewing. stop joins the thread (at once, or after the renewal in flight) and frees the
 * keeper; it does not revoke the lease. */
typedef struct dmh_etcd_keeper dmh_etcd_keeper;
dmh_etcd_keeper *dmh_etcd_keeper_start(const char *endpoints, const dmh_etcd_opts *opts,
                                       int64_t lease_id, int64_t ttl_s, dm_error *err);
/* Milliseconds since the last successful renewal; *lost (may be NULL) as above; *last_err (may be
 * NULL) the last renewal's error (code 0 when it succeeded). Any thread may call it. */
long dmh_etcd_keeper_age_ms(dmh_etcd_keeper *k, int *lost, dm_error *last_err);
void dmh_etcd_keeper_stop(dmh_etcd_keeper *k);

/* Watch events. A PUT carries the new pair, a DELETE the key and its mod_revision (the delete's
 * revision); prev_kv is the pair before, when asked for and there was one (has_prev). */
typedef enum dmh_etcd_event_type {
  DMH_ETCD_EV_PUT = 0,
  DMH_ETCD_EV_DELETE = 1,
} dmh_etcd_event_type;

typedef struct dmh_etcd_event {
  dmh_etcd_event_type type;
  dmh_etcd_kv kv;
  dmh_etcd_kv prev_kv;
  int has_prev;
} dmh_etcd_event;

/* Called for each batch of events, in revision order; the events of one revision (one txn) are
 * always in one batch. The events are freed after the call. Return 0 to go on, anything else to
 * end the watch (dmh_etcd_watch then returns 0). */
typedef int (*dmh_etcd_watch_fn)(void *arg, const dmh_etcd_event *events, size_t n);

typedef struct dmh_etcd_watch_opts {
  int prefix;             /* every key that starts with key */
  int64_t start_revision; /* first revision to deliver (0: changes after now) */
  int prev_kv;
  /* Set (to nonzero) by another thread to end the watch; it ends within about a second. */
  const atomic_int *stop;
  /* How long no member may take a watch before the watch gives up with DM_ERR_ETCD_UNAVAILABLE;
   * 0: 30000 ms. */
  long give_up_ms;
  /* Filled as the watch runs: the next revision it would deliver. */
  int64_t next_revision;
  /* How many times the stream was opened again after it broke (a member killed, a failover). */
  int reconnects;
  /* Called (when set) on the watch's thread each time a stream a member had taken broke, before
   * it is opened again; `cause` says what broke it. For a count of the breaks as they happen
   * (the master's dm_master_worker_event_error{type="watch"}). */
  void (*broken)(void *arg, const char *cause);
  void *broken_arg;
} dmh_etcd_watch_opts;

/* Watches key (or the prefix) from opts->start_revision and calls fn per batch until fn returns
 * nonzero or *opts->stop is set (0), or an error (-1): DM_ERR_ETCD_COMPACTED when the start
 * revision was compacted away (the message gives the compact revision), DM_ERR_ETCD_UNAVAILABLE
 * when no member took the watch for give_up_ms, DM_ERR_ETCD_REQUEST for a watch etcd refuses. A
 * broken stream (a member killed or cut off, a member that lost its leader: the watch asks with
 * Grpc-Metadata-hasleader: true) is opened again at the next member from the revision after the
 * last one delivered, so no event is lost or repeated. Blocks; uses a connection of its own. */
int dmh_etcd_watch(dmh_etcd *c, dmh_etcd_bytes key, dmh_etcd_watch_opts *opts, dmh_etcd_watch_fn fn,
                   void *arg, dm_error *err);

void dmh_etcd_kv_free(dmh_etcd_kv *kv);

/* The member behind the current endpoint: its ID and the ID of the leader it knows (0: none);
 * IDs are uint64. Fails over like a read, so the member is the one dmh_etcd_endpoint names after.
 */
int dmh_etcd_status(dmh_etcd *c, uint64_t *member_id, uint64_t *leader_id, dm_error *err);

/* ---- Internal to host/cluster/etcd/etcd*.c (one header, as for every room): not for other
 * callers. ---- */
#ifdef DMH_ETCD_INTERNAL
#include <curl/curl.h>
#include <json-c/json.h>

/* A growing byte buffer with a NUL after its n bytes. */
typedef struct etcd_buf {
  char *p;
  size_t n, cap;
  int too_big; /* an add failed: over its max, or memory ran out */
} etcd_buf;
/* Appends len bytes; 0, or -1 (too_big set) when the buffer would exceed max bytes or memory ran
 * out. */
int etcd_buf_add(etcd_buf *b, const char *data, size_t len, size_t max);

/* Whether a request may be sent again after it may have reached etcd. */
typedef enum etcd_retry { ETCD_WRITE = 0, ETCD_READ = 1 } etcd_retry;

/* POSTs body to <endpoint><api>/<path> with failover; *reply is the parsed JSON answer of a 200.
 * body is consumed (NULL: memory ran out building it). what names the request in messages ("put
 * of key 'x'"). 0, or -1 with err set. */
int etcd_call(dmh_etcd *c, const char *path, json_object *body, etcd_retry retry, const char *what,
              json_object **reply, dm_error *err);
/* The endpoint list, for the watch's own connection. */
size_t etcd_endpoint_count(const dmh_etcd *c);
const char *etcd_endpoint_at(const dmh_etcd *c, size_t i);
size_t etcd_endpoint_current(const dmh_etcd *c);
const char *etcd_api_at(const dmh_etcd *c, size_t i);
/* Switches endpoint i from /v3 to /v3beta after a 404 there: 1 when it did, 0 when it was not at
 * /v3 any more. */
int etcd_api_fallback(dmh_etcd *c, size_t i);
long etcd_connect_timeout_ms(const dmh_etcd *c);
/* The client's TLS options (CA, client certificate, verification on) set on handle h. */
void etcd_tls_setopt(const dmh_etcd *c, CURL *h);
/* Appends "Authorization: <token>" to *hdr when the client has a user, authenticating at endpoint
 * i first when it holds no token, or when renew (the token was refused) and the token is still
 * `stale` (NULL: any). *used (may be NULL) gets a copy of the token sent ("" none), malloc'd. 0, or
 * -1 with err (DM_ERR_ETCD_AUTH for a refused user). */
int etcd_auth_header(dmh_etcd *c, size_t i, int renew, const char *stale, struct curl_slist **hdr,
                     char **used, dm_error *err);
/* Whether an etcd message says the token is no longer valid: authenticate again and retry. */
int etcd_token_refused(const char *msg);
/* Whether a curl error is TLS refusing the connection (a bad CA or certificate, no client
 * certificate); errbuf is curl's detail. */
int etcd_tls_failure(int curl_rc, const char *errbuf);
/* POSTs {field: v} (an int64 as etcd's string) to path: the calls that take one ID or revision.
 * reply may be NULL (the answer is dropped). */
int etcd_call_int64(dmh_etcd *c, const char *path, const char *field, int64_t v, etcd_retry retry,
                    const char *what, json_object **reply, dm_error *err);
/* Maps an etcd error answer ({"error"|"message", "code"}) to err. */
void etcd_error_from_reply(json_object *reply, long http_status, const char *endpoint,
                           const char *what, dm_error *err);

/* JSON helpers: an int64 field (string or number; 0 when absent), a base64 field added. */
int64_t etcd_json_int64(json_object *o, const char *field);
uint64_t etcd_json_uint64(json_object *o, const char *field);
void etcd_json_add_int64(json_object *o, const char *field, int64_t v);
int etcd_json_add_bytes(json_object *o, const char *field, dmh_etcd_bytes b);
/* A kv object of etcd into kv (malloc'd fields). 0, or -1 on bad base64 or no memory. */
int etcd_kv_parse(json_object *o, dmh_etcd_kv *kv);
/* The range_end of a prefix (the key with its last byte below 0xff incremented; "\0" = all keys
 * when the key is empty or all 0xff), added as "range_end". */
int etcd_json_add_prefix_end(json_object *o, dmh_etcd_bytes key);
/* A printable form of a key for messages (cut, non-printable bytes as '?'). */
void etcd_key_text(dmh_etcd_bytes key, char *buf, size_t size);
#endif /* DMH_ETCD_INTERNAL */

#endif /* DMH_ETCD_H */
