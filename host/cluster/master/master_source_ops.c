/*
 * operate-source update, disable and enable on a master (DM's PUT /api/v1/sources/{name} and its
 * source `enable` flag; docs/cluster.md, "operate-source"): the leader decides (a follower
 * forwards), each change one txn compared on the revisions it read, so a stage written meanwhile
 * makes it read again.
 *
 *   update   the new text stored at <p>/source/<id> (sealed as create stores it) once no task on
 *            the source is expected Running and its relay is neither asked nor kept; the bound
 *            worker sees the key's new mod_revision and applies it (cluster_worker_sync.c)
 *   disable  <p>/disabled/<id> = the tasks expected Running on the source, their stage keys set
 *            Paused in the same txn; start-task and resume-task there refused
 *            (master_source_enabled) until
 *   enable   the flag deleted and those tasks' stage keys still Paused set Running
 */
#include "master_internal.h"

#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "dmhost/sdk.h"
#include "log.h"

/* A changed stage (or flag) between the read and the txn: read again, this many times. */
#define MSO_TRIES 5

static int mso_oom(dm_error *err) {
  dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory answering operate-source");
  return -1;
}

/* The key of `kind` of `source`, read now: 1 and *kv's copy (value malloc'd in *value), 0 when
 * absent, -1 with *err. */
static int mso_get(master_ctl *x, dmh_cluster_key_kind kind, const char *source, char *key,
                   char **value, int64_t *mod_rev, dm_error *err) {
  dmh_etcd_result r = {0};
  if (master_key(key, DMH_CLUSTER_KEY_MAX, x->m, kind, source, NULL, NULL, err) < 0 ||
      dmh_etcd_range(x->c, DMH_ETCD_S(key), 0, 1, 0, &r, err) < 0)
    return -1;
  int have = r.n_kvs > 0;
  if (have) {
    if (value) {
      *value = r.kvs[0].value;
      r.kvs[0].value = NULL;
    }
    *mod_rev = r.kvs[0].mod_revision;
  }
  dmh_etcd_result_free(&r);
  return have;
}

int master_source_enabled(master_ctl *x, const char *cmd, const char *task, const char *source,
                          dm_error *err) {
  char key[DMH_CLUSTER_KEY_MAX];
  int64_t rev;
  int have = mso_get(x, DMH_KEY_DISABLED, source, key, NULL, &rev, err);
  if (have <= 0)
    return have;
  /* DM's ErrMasterStartTask with its reason (openapi_controller.go), as `dmhost serve` says it */
  dm_error_set(err, DM_ERR_SOURCE_DISABLED, NULL,
               "%s: can not start task: %s reason: source: %s is not enabled", cmd, task, source);
  return -1;
}

/* The stage keys of `source`'s subtasks (every <p>/stage/<task>/<source>), read now. */
static int mso_stages(master_ctl *x, const char *source, dmh_etcd_result *all, size_t **idx,
                      size_t *n, dm_error *err) {
  *idx = NULL;
  *n = 0;
  if (master_range_kind(x->c, x->m, DMH_KEY_STAGE, 0, all, err) < 0)
    return -1;
  if (!(*idx = calloc(all->n_kvs ? all->n_kvs : 1, sizeof **idx))) {
    dmh_etcd_result_free(all);
    return mso_oom(err);
  }
  for (size_t i = 0; i < all->n_kvs; i++) {
    char t[DMH_CLUSTER_NAME_MAX], s[DMH_CLUSTER_NAME_MAX];
    if (dmh_cluster_key_parse(all->kvs[i].key, all->kvs[i].key_len, x->m->prefix, DMH_KEY_STAGE, t,
                              s, NULL) == 0 &&
        strcmp(s, source) == 0)
      (*idx)[(*n)++] = i;
  }
  return 0;
}

static bool mso_stage_is(const dmh_etcd_kv *kv, dmh_cluster_stage want) {
  dmh_cluster_stage st;
  return dmh_cluster_stage_parse(kv->value, kv->value_len, &st) == 0 && st == want;
}

static void mso_task_of(master_ctl *x, const dmh_etcd_kv *kv, char *task) {
  char s[DMH_CLUSTER_NAME_MAX];
  if (dmh_cluster_key_parse(kv->key, kv->key_len, x->m->prefix, DMH_KEY_STAGE, task, s, NULL) < 0)
    task[0] = '\0';
}

static json_object *mso_task_entry(const char *task) {
  json_object *e = json_object_new_object();
  json_object_object_add(e, "task", json_object_new_string(task));
  json_object_object_add(e, "result", json_object_new_boolean(1));
  json_object_object_add(e, "msg", json_object_new_string(""));
  return e;
}

static void mso_answer(master_ctl *x, const char *source, json_object *tasks, json_object *resp) {
  master_snapshot s;
  dm_error ignored;
  bool have = master_snapshot_read(x->c, x->m, &s, &ignored) == 0;
  json_object *e = dmh_control_response_new();
  json_object_object_add(e, "source", json_object_new_string(source));
  json_object_object_add(e, "worker",
                         json_object_new_string(have ? master_ctl_worker_of(&s, source) : ""));
  if (have)
    master_snapshot_free(&s);
  json_object *list = json_object_new_array();
  json_object_array_add(list, e);
  json_object_object_add(resp, "sources", list);
  json_object_object_add(resp, "tasks", tasks ? tasks : json_object_new_array());
}

/* One try of disable (enable false) or enable: 1 done, 0 something changed meanwhile (try
 * again), -1 with *err. *tasks: the tasks paused or resumed. */
static int mso_flag_once(master_ctl *x, const char *source, bool enable, json_object *tasks,
                         dm_error *err) {
  char skey[DMH_CLUSTER_KEY_MAX], dkey[DMH_CLUSTER_KEY_MAX];
  char *flag = NULL;
  int64_t srev = 0, drev = 0;
  int hs = mso_get(x, DMH_KEY_SOURCE, source, skey, NULL, &srev, err);
  if (hs < 0)
    return -1;
  if (hs == 0) {
    dm_error_set(err, DM_ERR_NOT_FOUND, NULL, "operate-source %s: no source %s in the cluster",
                 enable ? "enable" : "disable", source);
    return -1;
  }
  int hd = mso_get(x, DMH_KEY_DISABLED, source, dkey, &flag, &drev, err);
  if (hd < 0)
    return -1;
  if ((hd == 1) == !enable) { /* DM: enabling an enabled source (or the reverse) is no change */
    free(flag);
    return 1;
  }
  char(*paused)[DMH_CLUSTER_NAME_MAX] = NULL;
  size_t n_paused = 0, *idx = NULL, n_idx = 0;
  dmh_etcd_result st = {0};
  int rc = -1;
  if (enable && dmh_cluster_disabled_parse(flag, strlen(flag), &paused, &n_paused, err) < 0)
    goto out;
  if (mso_stages(x, source, &st, &idx, &n_idx, err) < 0)
    goto out;
  dmh_etcd_cmp cmps[DMH_ETCD_TXN_MAX_OPS];
  dmh_etcd_op ops[DMH_ETCD_TXN_MAX_OPS];
  char(*names)[DMH_CLUSTER_NAME_MAX] = calloc(n_idx ? n_idx : 1, sizeof *names);
  if (!names) {
    mso_oom(err);
    goto out;
  }
  size_t nc = 0, no = 0, nn = 0;
  cmps[nc++] = (dmh_etcd_cmp){.key = DMH_ETCD_S(skey), .target = DMH_ETCD_CMP_MOD, .number = srev};
  cmps[nc++] = (dmh_etcd_cmp){.key = DMH_ETCD_S(dkey),
                              .target = enable ? DMH_ETCD_CMP_MOD : DMH_ETCD_CMP_CREATE,
                              .number = enable ? drev : 0};
  for (size_t k = 0; k < n_idx; k++) {
    const dmh_etcd_kv *kv = &st.kvs[idx[k]];
    char task[DMH_CLUSTER_NAME_MAX];
    mso_task_of(x, kv, task);
    bool pick = false;
    if (!enable)
      pick = mso_stage_is(kv, DMH_CLUSTER_RUNNING);
    for (size_t j = 0; enable && j < n_paused && !pick; j++)
      pick = strcmp(paused[j], task) == 0 && mso_stage_is(kv, DMH_CLUSTER_PAUSED);
    if (!pick)
      continue;
    if (nc + 1 >= DMH_ETCD_TXN_MAX_OPS || no + 2 >= DMH_ETCD_TXN_MAX_OPS) {
      dm_error_set(err, DM_ERR_ETCD_LIMIT, NULL,
                   "operate-source %s: source %s has more tasks than one txn holds (%d)",
                   enable ? "enable" : "disable", source, DMH_ETCD_TXN_MAX_OPS - 2);
      free(names);
      goto out;
    }
    cmps[nc++] = (dmh_etcd_cmp){
        .key = {kv->key, kv->key_len}, .target = DMH_ETCD_CMP_MOD, .number = kv->mod_revision};
    ops[no++] = (dmh_etcd_op){.kind = DMH_ETCD_PUT,
                              .key = {kv->key, kv->key_len},
                              .value = DMH_ETCD_S(dmh_cluster_stage_name(
                                  enable ? DMH_CLUSTER_RUNNING : DMH_CLUSTER_PAUSED))};
    dm_strlcpy(names[nn++], task, sizeof names[0]);
  }
  char *val =
      enable ? NULL : dmh_cluster_disabled_json((const char(*)[DMH_CLUSTER_NAME_MAX])names, nn);
  if (!enable && !val) {
    mso_oom(err);
    free(names);
    goto out;
  }
  ops[no++] =
      enable
          ? (dmh_etcd_op){.kind = DMH_ETCD_DELETE, .key = DMH_ETCD_S(dkey)}
          : (dmh_etcd_op){.kind = DMH_ETCD_PUT, .key = DMH_ETCD_S(dkey), .value = DMH_ETCD_S(val)};
  dmh_etcd_txn_result tr = {0};
  if (dmh_etcd_txn(x->c, cmps, nc, ops, no, NULL, 0, &tr, err) == 0) {
    rc = tr.succeeded ? 1 : 0;
    dmh_etcd_txn_result_free(&tr);
  }
  for (size_t k = 0; rc == 1 && k < nn; k++)
    json_object_array_add(tasks, mso_task_entry(names[k]));
  free(val);
  free(names);
out:
  free(idx);
  dmh_etcd_result_free(&st);
  free(paused);
  free(flag);
  return rc;
}

static int mso_flag(master_ctl *x, const char *source, bool enable, json_object *resp,
                    dm_error *err) {
  for (int i = 0; i < MSO_TRIES; i++) {
    json_object *tasks = json_object_new_array();
    int rc = mso_flag_once(x, source, enable, tasks, err);
    if (rc != 0) {
      if (rc == 1)
        mso_answer(x, source, tasks, resp);
      else
        json_object_put(tasks);
      return rc < 0 ? -1 : 0;
    }
    json_object_put(tasks);
  }
  dm_error_set(err, DM_ERR_STAGE, NULL,
               "operate-source %s: source %s or its tasks' stages changed %d times while it was "
               "applied; try again",
               enable ? "enable" : "disable", source, MSO_TRIES);
  return -1;
}

/* Why `source` may not be updated now (DM's ErrSchedulerSourceCfgUpdate, the words `dmhost serve`
 * uses): a task expected Running on it, its relay asked Running of a worker or kept by one. The
 * stage keys and relay requests read go into cmps (compared unchanged by the update's txn). */
static int mso_update_busy(master_ctl *x, const char *source, dmh_etcd_result *st,
                           dmh_etcd_result *rl, dmh_etcd_cmp *cmps, size_t *nc, dm_error *err) {
  size_t *idx = NULL, n_idx = 0;
  if (mso_stages(x, source, st, &idx, &n_idx, err) < 0)
    return -1;
  char names[512] = "";
  size_t at = 0;
  int n = 0;
  for (size_t k = 0; k < n_idx; k++) {
    const dmh_etcd_kv *kv = &st->kvs[idx[k]];
    if (*nc < DMH_ETCD_TXN_MAX_OPS)
      cmps[(*nc)++] = (dmh_etcd_cmp){
          .key = {kv->key, kv->key_len}, .target = DMH_ETCD_CMP_MOD, .number = kv->mod_revision};
    if (!mso_stage_is(kv, DMH_CLUSTER_RUNNING))
      continue;
    char task[DMH_CLUSTER_NAME_MAX];
    mso_task_of(x, kv, task);
    if (at < sizeof names)
      at += (size_t)snprintf(names + at, sizeof names - at, "%s%s", n ? ", " : "", task);
    n++;
  }
  free(idx);
  bool relay = false;
  if (master_range_kind(x->c, x->m, DMH_KEY_RELAY, 0, rl, err) < 0)
    return -1;
  for (size_t i = 0; i < rl->n_kvs; i++) {
    dmh_cluster_relay r;
    dm_error ignored;
    if (dmh_cluster_relay_parse(rl->kvs[i].value, rl->kvs[i].value_len, &r, &ignored) < 0 ||
        strcmp(r.source, source) != 0)
      continue;
    relay = relay || r.stage == DMH_CLUSTER_RUNNING;
    if (*nc < DMH_ETCD_TXN_MAX_OPS)
      cmps[(*nc)++] = (dmh_etcd_cmp){.key = {rl->kvs[i].key, rl->kvs[i].key_len},
                                     .target = DMH_ETCD_CMP_MOD,
                                     .number = rl->kvs[i].mod_revision};
  }
  master_snapshot s;
  if (master_snapshot_read(x->c, x->m, &s, err) < 0)
    return -1;
  for (size_t i = 0; i < s.n_workers; i++)
    relay = relay || (s.workers[i].online && strcmp(s.info[i].relay, source) == 0);
  master_snapshot_free(&s);
  if (*nc >= DMH_ETCD_TXN_MAX_OPS) {
    dm_error_set(err, DM_ERR_ETCD_LIMIT, NULL,
                 "operate-source update: source %s has more tasks than one txn holds", source);
    return -1;
  }
  if (n == 0 && !relay)
    return 0;
  dm_error_set(err, DM_ERR_SOURCE_UPDATE_BUSY, NULL,
               "operate-source update: source %s can only be updated when relay is disabled and "
               "no tasks are running for now (%s%s%s%s)",
               source, n ? "Running: " : "", names, n && relay ? "; " : "",
               relay ? "its relay runs" : "");
  return -1;
}

static int mso_update(master_ctl *x, const dmh_control_cmd *cmd, json_object *args,
                      const dmh_source_op *so, json_object *resp, dm_error *err) {
  if (so->keep_password) {
    dm_error_set(err, DM_ERR_CONFIG_INVALID, NULL,
                 "operate-source update --keep-password: not served by `dmhost master` yet (the "
                 "stored password is sealed with the cluster key): give the password in the file");
    return -1;
  }
  dmh_control_file f;
  if (dmh_control_file_get(cmd, args, so->path, true, &f, err) < 0) {
    dmh_control_file_free(&f);
    return -1;
  }
  dmh_source_config *sc = NULL;
  dmh_cfg_trust trust = master_ctl_trust(x, f.origin);
  char key[DMH_CLUSTER_KEY_MAX];
  char *val = NULL, *sealed = NULL;
  dmh_etcd_result st = {0}, rl = {0};
  int rc = -1;
  if (dmh_source_config_load_as(f.path, &trust, &sc, err) < 0) {
    dmh_control_file_blame(&f, so->path, err);
    goto out;
  }
  /* DM's PUT of source A with a body naming B would update B: refused, naming both */
  if (so->source && strcmp(so->source, sc->source_id) != 0) {
    dm_error_set(err, DM_ERR_CONFIG_INVALID, NULL,
                 "operate-source update: the request is for source %s, the file's source-id "
                 "(source_name) is %s: send the source's own name",
                 so->source, sc->source_id);
    goto out;
  }
  int64_t rev = 0;
  int have = mso_get(x, DMH_KEY_SOURCE, sc->source_id, key, NULL, &rev, err);
  if (have < 0)
    goto out;
  if (have == 0) {
    dm_error_set(err, DM_ERR_NOT_FOUND, NULL,
                 "operate-source update: no source %s in the cluster; create it with `dmctl "
                 "operate-source create SOURCE.cfg`",
                 sc->source_id);
    goto out;
  }
  dmh_etcd_cmp cmps[DMH_ETCD_TXN_MAX_OPS];
  size_t nc = 0;
  cmps[nc++] = (dmh_etcd_cmp){.key = DMH_ETCD_S(key), .target = DMH_ETCD_CMP_MOD, .number = rev};
  if (mso_update_busy(x, sc->source_id, &st, &rl, cmps, &nc, err) < 0)
    goto out;
  if (!(val = master_ctl_sealed_value(x, &f, so->path, "from", sc->from.ep.password, &sealed, err)))
    goto out;
  dmh_etcd_op put = {.kind = DMH_ETCD_PUT, .key = DMH_ETCD_S(key), .value = DMH_ETCD_S(val)};
  dmh_etcd_txn_result tr = {0};
  if (dmh_etcd_txn(x->c, cmps, nc, &put, 1, NULL, 0, &tr, err) < 0)
    goto out;
  bool ok = tr.succeeded;
  dmh_etcd_txn_result_free(&tr);
  if (!ok) {
    dm_error_set(err, DM_ERR_SOURCE_UPDATE_BUSY, NULL,
                 "operate-source update: source %s, a stage of its tasks or its relay changed "
                 "while the update was checked; nothing written: try again",
                 sc->source_id);
    goto out;
  }
  dmh_log(DM_LOG_INFO, "master", "source %s updated in etcd (was revision %lld)", sc->source_id,
          (long long)rev);
  mso_answer(x, sc->source_id, NULL, resp);
  rc = 0;
out:
  if (sealed)
    OPENSSL_cleanse(sealed, strlen(sealed));
  free(sealed);
  free(val);
  dmh_etcd_result_free(&st);
  dmh_etcd_result_free(&rl);
  dmh_source_config_free(sc);
  dmh_control_file_free(&f);
  return rc;
}

int master_ctl_source_op(master_ctl *x, const dmh_control_cmd *cmd, json_object *args,
                         const dmh_source_op *so, json_object *resp, dm_error *err) {
  int fwd = master_ctl_to_leader(x, cmd, args, resp, err);
  if (fwd != 0)
    return fwd < 0 ? -1 : 0;
  if (so->op == DMH_SOURCE_UPDATE)
    return mso_update(x, cmd, args, so, resp, err);
  return mso_flag(x, so->source, so->op == DMH_SOURCE_ENABLE, resp, err);
}
