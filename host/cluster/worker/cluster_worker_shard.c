/*
 * The cluster worker's shard DDL coordinator (shard_coord.h) over etcd (docs/shard.md "The lock",
 * docs/cluster.md "Shard DDL locks"). The sync units of the worker's subtasks call it; the leader
 * master reads what it writes and answers with operations (master_shard.c).
 *
 *   report_tables  <p>/shard/tables/<task>/<source>: the source's "sources" records (shard.h's
 *                  format), one per target, the target's replaced (read, then a txn on its
 *                  mod_revision)
 *   put            <p>/shard/info/<task>/<source>: the source's "infos" record. While the
 *                  source's previous operation is still there and done (the leader deletes a
 *                  lock's keys once every member is done), the info waits here and wait() puts
 *                  it once the operation is gone (DM's PutInfoIfOpNotDone): one key per source
 *                  never holds an arrival newer than a done operation
 *   wait           <p>/shard/op/<task>/<source> read, then watched until an operation not done
 *                  for the target is there (a thread runs the watch; the caller polls its stop
 *                  callback every 100 ms)
 *   done           the operation's record written again with "done": true, if it is still the
 *                  one handed out (its mod_revision)
 *
 * The fence: every write is a txn that also compares <p>/bound/<worker>: its create_revision
 * must be the fencing token (the subtask's for done, the worker's current binding's for the
 * others) and its value the binding just read, which names the source. A worker whose source
 * moved, or a subtask of an older binding, writes nothing (DM_ERR_CLUSTER_SHARD_FENCED).
 *
 * Threads: the calls come from the sync units' threads (any number at once). Each call opens its
 * own etcd client (a dmh_etcd serves one thread); `lock` guards the slots and the token.
 */
#include "cluster_worker.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dmhost/sdk.h"
#include "log.h"
#include "shard.h"

/* Per (task, source): the operation lent to the unit, and an info waiting for the previous
 * operation's deletion. */
typedef struct cs_slot {
  char task[DMH_CLUSTER_NAME_MAX];
  char source[DMH_CLUSTER_NAME_MAX];
  json_object *op;   /* the record lent (its strings back op.ddls); NULL none */
  const char **ddls; /* into op */
  char *pending;     /* an info record's text to put once the done operation is gone */
  struct cs_slot *next;
} cs_slot;

struct cw_shard {
  char *endpoints;
  const dmh_etcd_opts *opts;
  char prefix[DMH_CLUSTER_KEY_MAX / 2];
  char worker[DMH_CLUSTER_NAME_MAX];
  pthread_mutex_t lock; /* guards token and slots */
  uint64_t token;
  cs_slot *slots;
  dmh_shard_coord coord;
};

#define CS_ATTEMPTS 8 /* txns repeated when a compare other than the fence failed */

static void cs_sleep_ms(long ms) {
  nanosleep(&(struct timespec){ms / 1000, (ms % 1000) * 1000000L}, NULL);
}

static cs_slot *cs_slot_get(cw_shard *s, const char *task, const char *source) {
  for (cs_slot *sl = s->slots; sl; sl = sl->next)
    if (strcmp(sl->task, task) == 0 && strcmp(sl->source, source) == 0)
      return sl;
  cs_slot *sl = calloc(1, sizeof *sl);
  if (sl) {
    dm_strlcpy(sl->task, task, sizeof sl->task);
    dm_strlcpy(sl->source, source, sizeof sl->source);
    sl->next = s->slots;
    s->slots = sl;
  }
  return sl;
}

static void cs_slot_drop_op(cs_slot *sl) {
  if (sl->op)
    json_object_put(sl->op);
  free(sl->ddls);
  sl->op = NULL;
  sl->ddls = NULL;
}

static int cs_key(cw_shard *s, dmh_cluster_key_kind kind, const char *task, const char *source,
                  char *out, size_t len, dm_error *err) {
  if (dmh_cluster_key(out, len, s->prefix, kind, task, source, NULL) < 0) {
    dm_error_set(err, DM_ERR_CONTROL_REQUEST, NULL,
                 "task \"%s\" or source \"%s\" cannot name a key of the cluster", task, source);
    return -1;
  }
  return 0;
}

static dmh_etcd *cs_open(cw_shard *s, dm_error *err) {
  return dmh_etcd_open(s->endpoints, s->opts, err);
}

static json_object *cs_parse(const char *text, size_t len) {
  json_tokener *tok = json_tokener_new();
  json_object *o = tok ? json_tokener_parse_ex(tok, text, (int)len) : NULL;
  if (tok)
    json_tokener_free(tok);
  return o;
}

static const char *cs_str(json_object *o, const char *field) {
  json_object *f = NULL;
  return o && json_object_object_get_ex(o, field, &f) && json_object_is_type(f, json_type_string)
             ? json_object_get_string(f)
             : NULL;
}

static bool cs_bool(json_object *o, const char *field) {
  json_object *f = NULL;
  return o && json_object_object_get_ex(o, field, &f) && json_object_get_boolean(f);
}

/* One key: 1 and *kv (the caller frees it with dmh_etcd_kv_free), 0 absent, -1 err. *rev: the
 * store's revision. */
static int cs_get(dmh_etcd *c, const char *key, dmh_etcd_kv *kv, int64_t *rev, dm_error *err) {
  dmh_etcd_result r;
  memset(kv, 0, sizeof *kv);
  if (dmh_etcd_range(c, DMH_ETCD_S(key), 0, 0, 0, &r, err) < 0)
    return -1;
  int have = r.n_kvs > 0;
  if (have) {
    *kv = r.kvs[0];
    memset(&r.kvs[0], 0, sizeof r.kvs[0]);
  }
  if (rev)
    *rev = r.revision;
  dmh_etcd_result_free(&r);
  return have;
}

/* ---- the fence ---- */

typedef struct cs_fence {
  char key[DMH_CLUSTER_KEY_MAX];
  dmh_etcd_kv kv; /* the binding as read */
  dmh_etcd_cmp cmps[2];
} cs_fence;

static int cs_fenced(dm_error *err, const char *worker, const char *source, const char *why) {
  dm_error_set(err, DM_ERR_CLUSTER_SHARD_FENCED, NULL,
               "worker %s: shard DDL write for source %s refused: %s", worker, source, why);
  return -1;
}

/* Reads the worker's binding: the source must be bound here under `token`. Fills the compares
 * every write carries. 0, or -1 with err (DM_ERR_CLUSTER_SHARD_FENCED: nothing to send). */
static int cs_fence_read(cw_shard *s, dmh_etcd *c, const char *source, uint64_t token, cs_fence *f,
                         dm_error *err) {
  memset(f, 0, sizeof *f);
  if (dmh_cluster_key(f->key, sizeof f->key, s->prefix, DMH_KEY_BOUND, s->worker, NULL, NULL) < 0)
    return cs_fenced(err, s->worker, source, "the binding's key does not fit");
  int have = cs_get(c, f->key, &f->kv, NULL, err);
  if (have < 0)
    return -1;
  dmh_cluster_binding b;
  dm_error perr;
  char why[512];
  if (!have)
    return cs_fenced(err, s->worker, source, "the worker is bound to no source");
  if (dmh_cluster_binding_parse(f->kv.value, f->kv.value_len, &b, &perr) < 0 ||
      strcmp(b.source, source) != 0) {
    snprintf(why, sizeof why, "the worker is bound to source \"%s\"", b.source);
    dmh_etcd_kv_free(&f->kv);
    return cs_fenced(err, s->worker, source, why);
  }
  if (token == 0 || (uint64_t)f->kv.create_revision != token) {
    snprintf(why, sizeof why,
             "the binding's fencing token is %lld, the writer's %llu (a subtask of an older "
             "binding)",
             (long long)f->kv.create_revision, (unsigned long long)token);
    dmh_etcd_kv_free(&f->kv);
    return cs_fenced(err, s->worker, source, why);
  }
  f->cmps[0] = (dmh_etcd_cmp){.key = DMH_ETCD_S(f->key),
                              .target = DMH_ETCD_CMP_CREATE,
                              .result = DMH_ETCD_EQUAL,
                              .number = (int64_t)token};
  f->cmps[1] = (dmh_etcd_cmp){.key = DMH_ETCD_S(f->key),
                              .target = DMH_ETCD_CMP_VALUE,
                              .result = DMH_ETCD_EQUAL,
                              .value = {f->kv.value, f->kv.value_len}};
  return 0;
}

/* A fenced write: the fence's compares plus `extra` (the written key's mod_revision, as read),
 * then `op`. 1 written, 0 the key changed meanwhile (read again), -1 with err (fenced: the
 * binding changed between the read and the txn). */
static int cs_fenced_txn(cw_shard *s, dmh_etcd *c, const char *source, cs_fence *f,
                         const dmh_etcd_cmp *extra, const dmh_etcd_op *op, dm_error *err) {
  dmh_etcd_cmp cmps[3] = {f->cmps[0], f->cmps[1], *extra};
  dmh_etcd_op check = {.kind = DMH_ETCD_RANGE, .key = DMH_ETCD_S(f->key)};
  dmh_etcd_txn_result tr = {0};
  if (dmh_etcd_txn(c, cmps, 3, op, 1, &check, 1, &tr, err) < 0)
    return -1;
  int rc = 1;
  if (!tr.succeeded) {
    rc = 0;
    const dmh_etcd_kv *now =
        tr.n_results == 1 && tr.results[0].n_kvs == 1 ? &tr.results[0].kvs[0] : NULL;
    if (!now || now->create_revision != f->kv.create_revision ||
        now->value_len != f->kv.value_len || memcmp(now->value, f->kv.value, f->kv.value_len) != 0)
      rc = cs_fenced(err, s->worker, source, "the binding changed before the write");
  }
  dmh_etcd_txn_result_free(&tr);
  return rc;
}

static uint64_t cs_token(cw_shard *s) {
  pthread_mutex_lock(&s->lock);
  uint64_t t = s->token;
  pthread_mutex_unlock(&s->lock);
  return t;
}

/* ---- records: shard.h's format, made by its one owner (a scratch keeper) ---- */

/* The one record of array `array` ("sources", "infos") in the scratch keeper k's JSON of `task`,
 * once the call that filled k returned `rc`; frees k. NULL with err. */
static json_object *cs_scratch_record(dmh_shard_keeper *k, int rc, const char *task,
                                      const char *array, const char *what, dm_error *err) {
  json_object *all = NULL, *arr = NULL, *rec = NULL;
  if (rc == 0) {
    if ((all = dmh_shard_to_json(k, task)) && json_object_object_get_ex(all, array, &arr) &&
        json_object_array_length(arr) == 1)
      rec = json_object_get(json_object_array_get_idx(arr, 0));
    else
      dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory making a shard %s record", what);
  }
  json_object_put(all);
  dmh_shard_keeper_free(k);
  return rec;
}

/* The "sources" record of the source's tables for the target, or NULL without memory. */
static json_object *cs_tables_record(const char *task, const char *source, const char *tschema,
                                     const char *ttable, const dm_shard_table *tables, uint32_t n,
                                     dm_error *err) {
  dmh_shard_keeper *k = dmh_shard_keeper_new();
  if (!k) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory making a shard tables record");
    return NULL;
  }
  int rc = dmh_shard_report_tables(k, task, source, tschema, ttable, tables, n, err);
  return cs_scratch_record(k, rc, task, "sources", "tables", err);
}

/* The "infos" record of the source's arrival, or NULL with err. */
static json_object *cs_info_record(const char *task, const char *source, const dm_shard_info *info,
                                   dm_error *err) {
  dmh_shard_keeper *k = dmh_shard_keeper_new();
  if (!k) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory making a shard info record");
    return NULL;
  }
  return cs_scratch_record(k, dmh_shard_put(k, task, source, info, err), task, "infos", "info",
                           err);
}

/* The record's DDLs as an array of strings (into rec), *n of them; NULL and 0 when none. */
static const char **cs_ddls(json_object *rec, uint32_t *n) {
  json_object *arr = NULL;
  *n = 0;
  if (!json_object_object_get_ex(rec, "ddls", &arr) || !json_object_is_type(arr, json_type_array))
    return NULL;
  size_t len = json_object_array_length(arr);
  const char **out = calloc(len ? len : 1, sizeof *out);
  for (size_t i = 0; out && i < len; i++) {
    json_object *d = json_object_array_get_idx(arr, i);
    if (json_object_is_type(d, json_type_string))
      out[(*n)++] = json_object_get_string(d);
  }
  return out;
}

static bool cs_same_target(json_object *rec, const char *tschema, const char *ttable) {
  const char *s = cs_str(rec, "targetSchema"), *t = cs_str(rec, "targetTable");
  return s && t && strcmp(s, tschema) == 0 && strcmp(t, ttable) == 0;
}

/* ---- report_tables ---- */

static int cs_report_tables(void *self, const char *task, const char *source, const char *tschema,
                            const char *ttable, const dm_shard_table *tables, uint32_t n,
                            dm_error *err) {
  cw_shard *s = self;
  char key[DMH_CLUSTER_KEY_MAX];
  if (cs_key(s, DMH_KEY_SHARD_TABLES, task, source, key, sizeof key, err) < 0)
    return -1;
  json_object *rec = n ? cs_tables_record(task, source, tschema, ttable, tables, n, err) : NULL;
  if (n && !rec)
    return -1;
  dmh_etcd *c = cs_open(s, err);
  int rc = c ? 0 : -1;
  for (int attempt = 0; rc == 0; attempt++) {
    if (attempt == CS_ATTEMPTS) {
      dm_error_set(err, DM_ERR_ETCD_OUTCOME_UNKNOWN, NULL,
                   "%s changed %d times while being written: try again", key, CS_ATTEMPTS);
      rc = -1;
      break;
    }
    cs_fence f;
    dmh_etcd_kv kv;
    if (cs_fence_read(s, c, source, cs_token(s), &f, err) < 0) {
      rc = -1;
      break;
    }
    int have = cs_get(c, key, &kv, NULL, err);
    json_object *old = have > 0 ? cs_parse(kv.value, kv.value_len) : NULL;
    json_object *arr = json_object_new_array();
    /* the other targets' records stay; this target's is replaced (or dropped: no table left) */
    for (size_t i = 0;
         old && json_object_is_type(old, json_type_array) && i < json_object_array_length(old);
         i++) {
      json_object *e = json_object_array_get_idx(old, i);
      if (!cs_same_target(e, tschema, ttable))
        json_object_array_add(arr, json_object_get(e));
    }
    if (rec)
      json_object_array_add(arr, json_object_get(rec));
    const char *text = json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PLAIN);
    dmh_etcd_op op =
        json_object_array_length(arr) > 0
            ? (dmh_etcd_op){.kind = DMH_ETCD_PUT, .key = DMH_ETCD_S(key), .value = DMH_ETCD_S(text)}
            : (dmh_etcd_op){.kind = DMH_ETCD_DELETE, .key = DMH_ETCD_S(key)};
    dmh_etcd_cmp same = {.key = DMH_ETCD_S(key),
                         .target = DMH_ETCD_CMP_MOD,
                         .result = DMH_ETCD_EQUAL,
                         .number = have > 0 ? kv.mod_revision : 0};
    /* the same record again (a restarted sync): nothing to write */
    bool same_text =
        have > 0 && kv.value_len == strlen(text) && memcmp(kv.value, text, kv.value_len) == 0;
    int w = have < 0 ? -1 : same_text ? 1 : cs_fenced_txn(s, c, source, &f, &same, &op, err);
    json_object_put(arr);
    json_object_put(old);
    dmh_etcd_kv_free(&kv);
    dmh_etcd_kv_free(&f.kv);
    if (w < 0)
      rc = -1;
    else if (w == 1)
      break;
  }
  if (rc == 0)
    dmh_log(DM_LOG_INFO, "worker", "shard: %s/%s reported %u table(s) of `%s`.`%s`", task, source,
            n, tschema, ttable);
  json_object_put(rec);
  dmh_etcd_close(c);
  return rc;
}

/* ---- put ---- */

/* Other sources' infos for the same target must hold the same DDLs (DM's CompareShardingDDLs),
 * checked here so the later source pauses with the difference. 0, or -1 with err. */
static int cs_check_ddls(cw_shard *s, dmh_etcd *c, const char *task, const char *source,
                         const char *text, dm_error *err) {
  char pfx[DMH_CLUSTER_KEY_MAX];
  dmh_etcd_result r;
  json_object *rec = cs_parse(text, strlen(text));
  if (!rec) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory checking a shard info");
    return -1;
  }
  if (dmh_cluster_key(pfx, sizeof pfx, s->prefix, DMH_KEY_SHARD_INFO, task, NULL, NULL) < 0 ||
      dmh_etcd_range(c, DMH_ETCD_S(pfx), 1, 0, 0, &r, err) < 0) {
    json_object_put(rec);
    return -1;
  }
  const char *ts = cs_str(rec, "targetSchema"), *tt = cs_str(rec, "targetTable");
  uint32_t n_mine = 0;
  const char **mine = cs_ddls(rec, &n_mine);
  int rc = 0;
  for (size_t i = 0; i < r.n_kvs && rc == 0; i++) {
    char t[DMH_CLUSTER_NAME_MAX], src[DMH_CLUSTER_NAME_MAX];
    if (dmh_cluster_key_parse(r.kvs[i].key, r.kvs[i].key_len, s->prefix, DMH_KEY_SHARD_INFO, t, src,
                              NULL) < 0 ||
        strcmp(src, source) == 0)
      continue;
    json_object *other = cs_parse(r.kvs[i].value, r.kvs[i].value_len);
    uint32_t n_other = 0;
    const char **theirs =
        other && ts && tt && cs_same_target(other, ts, tt) ? cs_ddls(other, &n_other) : NULL;
    if (theirs && !dmh_shard_ddls_equal(mine, n_mine, theirs, n_other)) {
      char lock[DM_SHARD_LOCK_ID_MAX];
      dmh_shard_lock_id(lock, sizeof lock, task, ts, tt);
      dm_error_set(err, DM_ERR_SHARD_DDL_DIFF, NULL,
                   "sharding ddls in ddl lock %s are different: source %s has \"%s\"%s, source "
                   "%s has \"%s\"%s",
                   lock, source, n_mine ? mine[0] : "", n_mine > 1 ? " ..." : "", src,
                   n_other ? theirs[0] : "", n_other > 1 ? " ..." : "");
      rc = -1;
    }
    free(theirs);
    json_object_put(other);
  }
  free(mine);
  json_object_put(rec);
  dmh_etcd_result_free(&r);
  return rc;
}

/* Puts the info record `text` unless the source's operation key holds a done operation:
 * 1 put, 0 not now (the done operation is still there), -1 err. */
static int cs_put_info(cw_shard *s, dmh_etcd *c, const char *task, const char *source,
                       const char *text, dm_error *err) {
  char ikey[DMH_CLUSTER_KEY_MAX], okey[DMH_CLUSTER_KEY_MAX];
  if (cs_key(s, DMH_KEY_SHARD_INFO, task, source, ikey, sizeof ikey, err) < 0 ||
      cs_key(s, DMH_KEY_SHARD_OP, task, source, okey, sizeof okey, err) < 0)
    return -1;
  for (int attempt = 0; attempt < CS_ATTEMPTS; attempt++) {
    dmh_etcd_kv op, info;
    int have = cs_get(c, okey, &op, NULL, err);
    if (have < 0)
      return -1;
    json_object *rec = have ? cs_parse(op.value, op.value_len) : NULL;
    bool done = rec && cs_bool(rec, "done");
    json_object_put(rec);
    int64_t op_mod = op.mod_revision;
    dmh_etcd_kv_free(&op);
    if (done)
      return 0;
    if (attempt == 0 && cs_check_ddls(s, c, task, source, text, err) < 0)
      return -1;
    int ihave = cs_get(c, ikey, &info, NULL, err);
    if (ihave < 0)
      return -1;
    bool same =
        ihave && info.value_len == strlen(text) && memcmp(info.value, text, info.value_len) == 0;
    dmh_etcd_kv_free(&info);
    if (same)
      return 1; /* idempotent: a restarted sync puts the same arrival again */
    cs_fence f;
    if (cs_fence_read(s, c, source, cs_token(s), &f, err) < 0)
      return -1;
    /* the operation key as read: absent, or an operation not done */
    dmh_etcd_cmp same_op = {.key = DMH_ETCD_S(okey),
                            .target = DMH_ETCD_CMP_MOD,
                            .result = DMH_ETCD_EQUAL,
                            .number = have ? op_mod : 0};
    dmh_etcd_op put = {.kind = DMH_ETCD_PUT, .key = DMH_ETCD_S(ikey), .value = DMH_ETCD_S(text)};
    int w = cs_fenced_txn(s, c, source, &f, &same_op, &put, err);
    dmh_etcd_kv_free(&f.kv);
    if (w != 0)
      return w;
  }
  dm_error_set(err, DM_ERR_ETCD_OUTCOME_UNKNOWN, NULL,
               "%s changed %d times while the info was put: try again", okey, CS_ATTEMPTS);
  return -1;
}

static int cs_put(void *self, const char *task, const char *source, const dm_shard_info *info,
                  dm_error *err) {
  cw_shard *s = self;
  if (info->before || info->after) {
    /* optimistic infos carry structures; the leader serves only pessimistic locks so far */
    dm_error_set(err, DM_ERR_CONFIG_INVALID, NULL,
                 "task %s: shard-mode \"optimistic\" is coordinated only inside one process "
                 "(`dmhost serve`/`run`), not by a cluster's master yet; set shard-mode = "
                 "\"pessimistic\" for a task whose shards a cluster merges (docs/shard.md)",
                 task);
    return -1;
  }
  json_object *rec = cs_info_record(task, source, info, err);
  if (!rec)
    return -1;
  char *text = strdup(json_object_to_json_string_ext(rec, JSON_C_TO_STRING_PLAIN));
  dmh_etcd *c = text ? cs_open(s, err) : NULL;
  int rc = -1;
  if (!text)
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory putting a shard info");
  else if (c)
    rc = cs_put_info(s, c, task, source, text, err);
  if (rc >= 0) {
    pthread_mutex_lock(&s->lock);
    cs_slot *sl = cs_slot_get(s, task, source);
    if (sl) {
      free(sl->pending);
      sl->pending = rc == 0 ? text : NULL; /* put by wait() once the done operation is gone */
      if (rc == 0)
        text = NULL;
    }
    pthread_mutex_unlock(&s->lock);
    dmh_log(DM_LOG_INFO, "worker", "shard: %s/%s arrived at `%s`.`%s`%s", task, source,
            info->target_schema, info->target_table,
            rc == 0 ? " (put once the previous lock's done operation is deleted)" : "");
    rc = 0;
  }
  free(text);
  json_object_put(rec);
  dmh_etcd_close(c);
  return rc;
}

/* ---- wait ---- */

/* A watch of one key on a thread of its own, so the waiting thread can poll its stop callback. */
typedef struct cs_watch {
  cw_shard *s;
  const char *key;
  int64_t from;
  atomic_int stop;
  atomic_int finished;
  int rc;
  dm_error err;
} cs_watch;

static int cs_watch_event(void *arg, const dmh_etcd_event *evs, size_t n) {
  (void)arg, (void)evs;
  return n > 0; /* the first change ends it: the caller reads the key again */
}

static void *cs_watch_thread(void *arg) {
  cs_watch *wt = arg;
  dmh_etcd *c = cs_open(wt->s, &wt->err);
  wt->rc = -1;
  if (c) {
    dmh_etcd_watch_opts o = {.start_revision = wt->from, .stop = &wt->stop};
    wt->rc = dmh_etcd_watch(c, DMH_ETCD_S(wt->key), &o, cs_watch_event, NULL, &wt->err);
    dmh_etcd_close(c);
  }
  atomic_store(&wt->finished, 1);
  return NULL;
}

/* Until `key` changes after revision `rev`: 1 changed, 0 stopped, -1 err. */
static int cs_wait_change(cw_shard *s, const char *key, int64_t rev, bool (*stopped)(void *),
                          void *stop_arg, dm_error *err) {
  cs_watch wt = {.s = s, .key = key, .from = rev + 1};
  pthread_t thr;
  if (pthread_create(&thr, NULL, cs_watch_thread, &wt) != 0) {
    dm_error_set(err, DM_ERR_INTERNAL, NULL, "cannot start the thread watching %s", key);
    return -1;
  }
  bool stop = false;
  while (!atomic_load(&wt.finished) && !(stop = stopped(stop_arg)))
    cs_sleep_ms(100);
  atomic_store(&wt.stop, 1); /* the watch ends within about a second */
  pthread_join(thr, NULL);
  if (stop)
    return 0;
  if (wt.rc < 0) {
    *err = wt.err;
    return -1;
  }
  return 1;
}

/* Lends the operation record to the unit through *out. 0, or -1 without memory. */
static int cs_lend(cs_slot *sl, json_object *rec, dm_shard_op *out) {
  cs_slot_drop_op(sl);
  uint32_t n = 0;
  const char **ddls = cs_ddls(rec, &n);
  if (!ddls)
    return -1;
  sl->op = rec;
  sl->ddls = ddls;
  memset(out, 0, sizeof *out);
  dm_strlcpy(out->lock_id, cs_str(rec, "lockID") ? cs_str(rec, "lockID") : "", sizeof out->lock_id);
  json_object *id = NULL;
  out->op_id = json_object_object_get_ex(rec, "id", &id) ? (uint64_t)json_object_get_int64(id) : 0;
  out->action = cs_bool(rec, "exec") ? DM_SHARD_EXEC : DM_SHARD_SKIP;
  out->ddls = ddls;
  out->n_ddls = n;
  out->message = "";
  return 0;
}

static int cs_wait(void *self, const char *task, const char *source, const char *tschema,
                   const char *ttable, bool (*stopped)(void *), void *stop_arg, dm_shard_op *op,
                   dm_error *err) {
  cw_shard *s = self;
  char okey[DMH_CLUSTER_KEY_MAX];
  if (cs_key(s, DMH_KEY_SHARD_OP, task, source, okey, sizeof okey, err) < 0)
    return -1;
  pthread_mutex_lock(&s->lock);
  cs_slot *sl = cs_slot_get(s, task, source);
  if (sl)
    cs_slot_drop_op(sl);
  pthread_mutex_unlock(&s->lock);
  if (!sl) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory waiting for a shard operation");
    return -1;
  }
  dmh_etcd *c = NULL;
  while (!stopped(stop_arg)) {
    dmh_etcd_kv kv;
    int64_t rev = 0;
    int have = -1, wc = -1;
    if (!c && !(c = cs_open(s, err)))
      return -1;
    if ((have = cs_get(c, okey, &kv, &rev, err)) < 0)
      goto retry;
    pthread_mutex_lock(&s->lock);
    char *pending = sl->pending ? strdup(sl->pending) : NULL;
    pthread_mutex_unlock(&s->lock);
    if (pending && !have) { /* the previous lock's operation is gone: the info goes in now */
      int p = cs_put_info(s, c, task, source, pending, err);
      free(pending);
      if (p < 0 && (err->code == DM_ERR_CLUSTER_SHARD_FENCED || err->code == DM_ERR_SHARD_DDL_DIFF))
        break; /* not for a retry: the unit pauses with it */
      if (p == 1) {
        pthread_mutex_lock(&s->lock);
        free(sl->pending);
        sl->pending = NULL;
        pthread_mutex_unlock(&s->lock);
      }
      if (p < 0)
        goto retry;
      continue; /* read the operation key again */
    }
    /* while an info waits, the operation there is the previous lock's: only its deletion counts */
    json_object *rec = have && !pending ? cs_parse(kv.value, kv.value_len) : NULL;
    free(pending);
    dmh_etcd_kv_free(&kv);
    if (rec && !cs_bool(rec, "done") && cs_same_target(rec, tschema, ttable)) {
      pthread_mutex_lock(&s->lock);
      int l = cs_lend(sl, rec, op);
      pthread_mutex_unlock(&s->lock);
      dmh_etcd_close(c);
      if (l < 0) {
        json_object_put(rec);
        dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory lending a shard operation");
        return -1;
      }
      dmh_log(DM_LOG_INFO, "worker", "shard: %s/%s operation %llu for %s: %s", task, source,
              (unsigned long long)op->op_id, op->lock_id,
              op->action == DM_SHARD_EXEC ? "exec" : "skip");
      return 1;
    }
    json_object_put(rec);
    if ((wc = cs_wait_change(s, okey, rev, stopped, stop_arg, err)) == 0)
      break;
    if (wc == 1)
      continue;
  retry:
    /* etcd unreachable or the watch broke: the lock waits anyway; again in a second */
    {
      char what[DMH_CLUSTER_KEY_MAX + 64];
      snprintf(what, sizeof what, "shard: waiting at %s (again in 1 s)", okey);
      cw_log_error(DM_LOG_WARN, what, err);
    }
    for (int i = 0; i < 10 && !stopped(stop_arg); i++)
      cs_sleep_ms(100);
  }
  dmh_etcd_close(c);
  if (!stopped(stop_arg))
    return -1; /* fenced or refused (err set) */
  return 0;
}

/* ---- done ---- */

static int cs_done(void *self, const char *task, const char *source, uint64_t fencing_token,
                   const dm_shard_op *op, dm_error *err) {
  cw_shard *s = self;
  char okey[DMH_CLUSTER_KEY_MAX];
  uint64_t op_id = op->op_id;
  if (cs_key(s, DMH_KEY_SHARD_OP, task, source, okey, sizeof okey, err) < 0)
    return -1;
  pthread_mutex_lock(&s->lock);
  cs_slot *sl = cs_slot_get(s, task, source);
  if (sl)
    cs_slot_drop_op(sl); /* op's strings are not read after this point */
  pthread_mutex_unlock(&s->lock);
  dmh_etcd *c = cs_open(s, err);
  int rc = c ? 1 : -1;
  for (int attempt = 0; rc == 1; attempt++) {
    dmh_etcd_kv kv;
    int have = attempt < CS_ATTEMPTS ? cs_get(c, okey, &kv, NULL, err) : -1;
    if (attempt == CS_ATTEMPTS)
      dm_error_set(err, DM_ERR_ETCD_OUTCOME_UNKNOWN, NULL,
                   "%s changed %d times while marked done: try again", okey, CS_ATTEMPTS);
    if (have <= 0) {
      rc = have < 0 ? -1 : 0; /* gone: the lock was resolved (a done repeated after a restart) */
      break;
    }
    json_object *rec = cs_parse(kv.value, kv.value_len), *id = NULL;
    if (!rec || !json_object_object_get_ex(rec, "id", &id) ||
        (uint64_t)json_object_get_int64(id) != op_id || cs_bool(rec, "done")) {
      rc = 0; /* another operation now, or done already: nothing to mark */
    } else {
      cs_fence f;
      json_object_object_add(rec, "done", json_object_new_boolean(1));
      const char *text = json_object_to_json_string_ext(rec, JSON_C_TO_STRING_PLAIN);
      dmh_etcd_cmp same = {.key = DMH_ETCD_S(okey),
                           .target = DMH_ETCD_CMP_MOD,
                           .result = DMH_ETCD_EQUAL,
                           .number = kv.mod_revision};
      dmh_etcd_op put = {.kind = DMH_ETCD_PUT, .key = DMH_ETCD_S(okey), .value = DMH_ETCD_S(text)};
      if (cs_fence_read(s, c, source, fencing_token, &f, err) < 0)
        rc = -1;
      else {
        int w = cs_fenced_txn(s, c, source, &f, &same, &put, err);
        rc = w < 0 ? -1 : w == 1 ? 0 : 1;
        dmh_etcd_kv_free(&f.kv);
      }
    }
    json_object_put(rec);
    dmh_etcd_kv_free(&kv);
  }
  dmh_etcd_close(c);
  if (rc == 0)
    dmh_log(DM_LOG_INFO, "worker", "shard: %s/%s operation %llu done", task, source,
            (unsigned long long)op_id);
  return rc;
}

/* ---- the coordinator ---- */

static const dmh_shard_coord_ops cs_ops = {
    .report_tables = cs_report_tables,
    .put = cs_put,
    .wait = cs_wait,
    .done = cs_done,
};

cw_shard *cw_shard_new(const char *endpoints, const dmh_etcd_opts *opts, const char *prefix,
                       const char *worker) {
  cw_shard *s = calloc(1, sizeof *s);
  if (!s || !(s->endpoints = strdup(endpoints))) {
    free(s);
    return NULL;
  }
  s->opts = opts;
  dm_strlcpy(s->prefix, prefix, sizeof s->prefix);
  dm_strlcpy(s->worker, worker, sizeof s->worker);
  pthread_mutex_init(&s->lock, NULL);
  s->coord = (dmh_shard_coord){.ops = &cs_ops, .self = s};
  return s;
}

void cw_shard_set_token(cw_shard *s, uint64_t token) {
  pthread_mutex_lock(&s->lock);
  s->token = token;
  pthread_mutex_unlock(&s->lock);
}

const dmh_shard_coord *cw_shard_coord(cw_shard *s) {
  return &s->coord;
}

void cw_shard_free(cw_shard *s) {
  if (!s)
    return;
  while (s->slots) {
    cs_slot *sl = s->slots;
    s->slots = sl->next;
    cs_slot_drop_op(sl);
    free(sl->pending);
    free(sl);
  }
  pthread_mutex_destroy(&s->lock);
  free(s->endpoints);
  free(s);
}
