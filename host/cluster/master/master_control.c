/*
 * The master's control handler (master.h, dmh_master_handle): DM's commands answered from etcd.
 * The user's intent (sources, tasks, expected stages) is written by whichever master answers, as
 * txns guarded by their own compares (create-only, exists); what only the scheduler writes
 * (bindings) goes through the leader and is fenced by its token.
 */
#include "master_internal.h"

#include <openssl/crypto.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "control.h"
#include "dmhost/sdk.h"
#include "precheck.h"
#include "state.h"

typedef master_ctl ctl;

static int ctl_oom(dm_error *err) {
  dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory answering a control request");
  return -1;
}

static json_object *ctl_source_entry(const char *source, const char *worker) {
  json_object *e = dmh_control_response_new();
  json_object_object_add(e, "source", json_object_new_string(source));
  json_object_object_add(e, "worker", json_object_new_string(worker ? worker : ""));
  return e;
}

const char *master_ctl_worker_of(const master_snapshot *s, const char *source) {
  for (size_t i = 0; i < s->n_workers; i++)
    if (strcmp(s->workers[i].bound, source) == 0)
      return s->workers[i].name;
  return "";
}

/* Put `value` at `key` if the key does not exist; DM_ERR_EXISTS (with `what`) if it does. */
static int ctl_create(ctl *x, const char *key, const char *value, const dmh_etcd_cmp *more,
                      size_t n_more, const dmh_etcd_op *extra, size_t n_extra, const char *what,
                      dm_error *err) {
  dmh_etcd_cmp cmps[DMH_ETCD_TXN_MAX_OPS];
  dmh_etcd_op ops[DMH_ETCD_TXN_MAX_OPS];
  if (n_more + 1 > DMH_ETCD_TXN_MAX_OPS || n_extra + 1 > DMH_ETCD_TXN_MAX_OPS) {
    dm_error_set(err, DM_ERR_ETCD_LIMIT, NULL, "%s: more than %d keys in one txn", what,
                 DMH_ETCD_TXN_MAX_OPS);
    return -1;
  }
  cmps[0] = (dmh_etcd_cmp){.key = DMH_ETCD_S(key), .target = DMH_ETCD_CMP_CREATE, .number = 0};
  if (n_more)
    memcpy(cmps + 1, more, n_more * sizeof *more);
  ops[0] = (dmh_etcd_op){.kind = DMH_ETCD_PUT, .key = DMH_ETCD_S(key), .value = DMH_ETCD_S(value)};
  if (n_extra)
    memcpy(ops + 1, extra, n_extra * sizeof *extra);
  dmh_etcd_op get = {.kind = DMH_ETCD_RANGE, .key = DMH_ETCD_S(key)};
  dmh_etcd_txn_result tr = {0};
  if (dmh_etcd_txn(x->c, cmps, n_more + 1, ops, n_extra + 1, &get, 1, &tr, err) < 0)
    return -1;
  int rc = 0;
  if (!tr.succeeded) {
    bool exists = tr.n_results == 1 && tr.results[0].n_kvs == 1;
    dm_error_set(err, exists ? DM_ERR_EXISTS : DM_ERR_NOT_FOUND, NULL,
                 exists ? "%s exists in the cluster already (%s); stop it first or pick another "
                          "name"
                        : "%s: a source it reads was removed meanwhile (%s); create it again",
                 what, key);
    rc = -1;
  }
  dmh_etcd_txn_result_free(&tr);
  return rc;
}

/* The trust a config the master was given gets (config.h): the text dmctl sent is submitted. */
dmh_cfg_trust master_ctl_trust(const ctl *x, dmh_cfg_origin origin) {
  dmh_cfg_trust t = {.origin = origin,
                     .secrets_dir = x->m->secrets_dir,
                     .allow_unit_paths = x->m->allow_submitted_unit_paths};
  return t;
}

/* The value a file `f` (sent as `path`) is stored under in etcd: its text with the password of
 * `group` sealed with the cluster key, so it never reaches etcd in clear (docs/cluster.md, "The
 * cluster key"). The cluster keeps libconfig text in etcd, so its workers read every file one way:
 * DM's YAML (a file, or DM's JSON the HTTP layer made YAML) is translated here as `dmhost convert`
 * does, after its load has checked it under the same trust. *sealed is the sealed text (the
 * caller frees it). NULL with *err. */
char *master_ctl_sealed_value(ctl *x, const dmh_control_file *f, const char *path,
                              const char *group, const char *password, char **sealed,
                              dm_error *err) {
  char *conv = NULL;
  if (dmh_config_is_yaml(f->path) && !(conv = dmh_config_convert(f->path, err))) {
    dmh_control_file_blame(f, path, err);
    return NULL;
  }
  int rc = dmh_config_seal_password(conv ? conv : f->text, group, password,
                                    x->m->has_cluster_key ? x->m->cluster_key : NULL, sealed, err);
  free(conv);
  if (rc < 0) {
    dmh_control_file_blame(f, path, err);
    return NULL;
  }
  char *val = dmh_cluster_config_json(*sealed);
  if (!val)
    ctl_oom(err);
  return val;
}

/* ---- operate-source ---- */

static int ctl_source_create(ctl *x, const dmh_control_cmd *cmd, json_object *args,
                             const char *path, json_object *resp, dm_error *err) {
  dmh_control_file f;
  if (dmh_control_file_get(cmd, args, path, true, &f, err) < 0) {
    dmh_control_file_free(&f);
    return -1;
  }
  dmh_source_config *sc = NULL;
  dmh_cfg_trust trust = master_ctl_trust(x, f.origin);
  if (dmh_source_config_load_as(f.path, &trust, &sc, err) < 0) {
    dmh_control_file_blame(&f, path, err);
    dmh_control_file_free(&f);
    return -1;
  }
  char key[DMH_CLUSTER_KEY_MAX], what[DMH_CLUSTER_NAME_MAX + 16];
  char *val = NULL, *sealed = NULL;
  int rc = -1;
  if (master_key(key, sizeof key, x->m, DMH_KEY_SOURCE, sc->source_id, NULL, NULL, err) < 0)
    goto out;
  if (!(val = master_ctl_sealed_value(x, &f, path, "from", sc->from.ep.password, &sealed, err)))
    goto out;
  snprintf(what, sizeof what, "source %s", sc->source_id);
  if (ctl_create(x, key, val, NULL, 0, NULL, 0, what, err) < 0)
    goto out;
  json_object *list = json_object_new_array();
  json_object_array_add(list, ctl_source_entry(sc->source_id, ""));
  json_object_object_add(resp, "sources", list);
  rc = 0;
out:
  if (sealed)
    OPENSSL_cleanse(sealed, strlen(sealed));
  free(sealed);
  free(val);
  dmh_source_config_free(sc);
  dmh_control_file_free(&f);
  return rc;
}

int master_ctl_source_show(ctl *x, const char *source, json_object *resp, dm_error *err) {
  master_snapshot s;
  if (master_snapshot_read(x->c, x->m, &s, err) < 0)
    return -1;
  json_object *list = json_object_new_array();
  for (size_t i = 0; i < s.n_sources; i++) {
    if (source && strcmp(source, s.sources[i].name) != 0)
      continue;
    const char *w = master_ctl_worker_of(&s, s.sources[i].name);
    json_object *e = ctl_source_entry(s.sources[i].name, w);
    for (size_t k = 0; k < s.n_workers; k++)
      if (strcmp(s.workers[k].name, w) == 0)
        json_object_object_add(
            e, "stage",
            json_object_new_string(dmh_worker_stage_name(dmh_sched_stage(&s.workers[k]))));
    dm_error de; /* operate-source disable's flag (master_source_ops.c) */
    int en = master_source_enabled(x, "operate-source show", "", s.sources[i].name, &de);
    if (en == 0 || de.code == DM_ERR_SOURCE_DISABLED) /* a failed read: left out */
      json_object_object_add(e, "enable", json_object_new_boolean(en == 0));
    json_object_array_add(list, e);
  }
  master_snapshot_free(&s);
  json_object_object_add(resp, "sources", list);
  if (source && json_object_array_length(list) == 0) {
    dm_error_set(err, DM_ERR_NOT_FOUND, NULL, "no source %s in the cluster", source);
    return -1;
  }
  return 0;
}

/* The tasks whose expected stages name `source` (comma-separated into buf); their count. */
static int ctl_tasks_of(ctl *x, const char *source, char *buf, size_t size, dm_error *err) {
  dmh_etcd_result r = {0};
  if (master_range_kind(x->c, x->m, DMH_KEY_STAGE, 0, &r, err) < 0)
    return -1;
  int n = 0;
  size_t at = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < r.n_kvs; i++) {
    char t[DMH_CLUSTER_NAME_MAX], s[DMH_CLUSTER_NAME_MAX];
    if (dmh_cluster_key_parse(r.kvs[i].key, r.kvs[i].key_len, x->m->prefix, DMH_KEY_STAGE, t, s,
                              NULL) == 0 &&
        strcmp(s, source) == 0) {
      if (at < size)
        at += (size_t)snprintf(buf + at, size - at, "%s%s", n ? ", " : "", t);
      n++;
    }
  }
  dmh_etcd_result_free(&r);
  return n;
}

static int ctl_source_stop(ctl *x, const char *source, json_object *resp, dm_error *err) {
  char key[DMH_CLUSTER_KEY_MAX], tasks[512];
  if (master_key(key, sizeof key, x->m, DMH_KEY_SOURCE, source, NULL, NULL, err) < 0)
    return -1;
  int n = ctl_tasks_of(x, source, tasks, sizeof tasks, err);
  if (n < 0)
    return -1;
  if (n > 0) {
    dm_error_set(err, DM_ERR_EXISTS, NULL,
                 "source %s is read by task(s) %s: stop-task them first, then stop the source",
                 source, tasks);
    return -1;
  }
  dmh_etcd_result r = {0};
  if (dmh_etcd_delete(x->c, DMH_ETCD_S(key), 0, &r, err) < 0)
    return -1;
  int64_t deleted = r.count;
  dmh_etcd_result_free(&r);
  if (deleted == 0) {
    dm_error_set(err, DM_ERR_NOT_FOUND, NULL, "no source %s in the cluster", source);
    return -1;
  }
  /* its disabled flag goes with it (a source created again under the name starts enabled) */
  if (master_key(key, sizeof key, x->m, DMH_KEY_DISABLED, source, NULL, NULL, err) < 0 ||
      dmh_etcd_delete(x->c, DMH_ETCD_S(key), 0, NULL, err) < 0)
    return -1;
  json_object *list = json_object_new_array();
  json_object_array_add(list, ctl_source_entry(source, ""));
  json_object_object_add(resp, "sources", list);
  return 0; /* the leader unbinds it: its binding names a source no longer listed */
}

static int ctl_operate_source(void *ud, const dmh_control_cmd *cmd, json_object *args,
                              json_object *resp, dm_error *err) {
  dmh_source_op so;
  if (dmh_control_source_args(cmd, args, &so, err) < 0)
    return -1;
  if (so.op == DMH_SOURCE_CREATE)
    return ctl_source_create(ud, cmd, args, so.path, resp, err);
  if (so.op == DMH_SOURCE_SHOW)
    return master_ctl_source_show(ud, so.source, resp, err);
  if (so.op == DMH_SOURCE_STOP)
    return ctl_source_stop(ud, so.source, resp, err);
  return master_ctl_source_op(ud, cmd, args, &so, resp, err); /* update, enable, disable */
}

/* ---- tasks ---- */

/* The precheck of task tc on each of its sources, whose files are read from etcd (the texts
 * operate-source stored), as DM's master checks at start-task and check-task: the registry's
 * answer and refusal (dmh_precheck_answer). A source not in the cluster is DM_ERR_NOT_FOUND. */
int master_ctl_precheck(ctl *x, const dmh_task_config *tc, const char *what, json_object *resp,
                        dm_error *err) {
  dmh_precheck pc = {0};
  int rc = 0;
  for (int i = 0; i < tc->n_instances && rc == 0; i++) {
    dmh_source_config *sc = NULL;
    if (master_ctl_source_load(x, tc->name, tc->instances[i].source_id, &sc, err) < 0 ||
        dmh_precheck_run(&pc, tc, sc, err) < 0)
      rc = -1;
    dmh_source_config_free(sc);
  }
  if (rc == 0)
    rc = dmh_precheck_answer(&pc, what, resp, err);
  dmh_precheck_free(&pc);
  return rc;
}

/* What a task file may ask that the cluster does not do yet, refused before anything is written
 * or checked: shard-mode optimistic is coordinated inside one process only (a cluster worker
 * would refuse the first optimistic DDL and pause, with half the shards past it). */
int master_ctl_cluster_supports(const dmh_task_config *tc, const char *file, dm_error *err) {
  if (tc->shard_mode != DM_SHARD_MODE_OPTIMISTIC)
    return 0;
  dm_error_set(err, DM_ERR_CONFIG_INVALID, NULL,
               "%s: task %s: shard-mode \"optimistic\" is coordinated only inside one process "
               "(`dmhost serve`/`run`), not by a cluster's master yet; set shard-mode = "
               "\"pessimistic\" for a task whose shards a cluster merges (docs/shard.md)",
               file, tc->name);
  return -1;
}

static int ctl_check_task(void *ud, const dmh_control_cmd *cmd, json_object *args,
                          json_object *resp, dm_error *err) {
  const char *path;
  if (dmh_control_arg_path(cmd, args, "path", &path, err) < 0)
    return -1;
  dmh_control_file f;
  dmh_task_config *tc = NULL;
  int rc = dmh_control_file_get(cmd, args, path, false, &f, err);
  dmh_cfg_trust trust = master_ctl_trust(ud, f.origin);
  if (rc == 0 && (rc = dmh_task_config_load_as(f.path, &trust, &tc, err)) < 0)
    dmh_control_file_blame(&f, path, err);
  if (rc == 0)
    rc = master_ctl_cluster_supports(tc, path, err);
  if (rc == 0) {
    char what[DMH_CLUSTER_NAME_MAX + 16];
    snprintf(what, sizeof what, "check-task %s", tc->name);
    if ((rc = master_ctl_precheck(ud, tc, what, resp, err)) == 0)
      json_object_object_add(resp, "msg", json_object_new_string("pre-check is passed"));
  }
  dmh_task_config_free(tc);
  dmh_control_file_free(&f);
  return rc;
}

/* remove-meta of pause-task on a master: the workers drop a task's meta at its start
 * (master_start.c: start-task's, and resume-task's of a task created stopped) and after its stop,
 * where the option is tied to the start or the stop. Refused, naming what does it; *rm:
 * stop-task's. */
static int ctl_remove_meta(const dmh_control_cmd *cmd, json_object *args, bool *rm, dm_error *err) {
  if (dmh_control_arg_bool(cmd, args, "remove-meta", rm, err) < 0)
    return -1;
  if (!*rm || strcmp(cmd->name, "stop-task") == 0)
    return 0;
  dm_error_set(err, DM_ERR_CONTROL_REQUEST, NULL,
               "%s remove-meta: not served by a cluster's master (its workers drop a task's meta "
               "when it starts or after it stops); stop-task the task, then `start-task "
               "--remove-meta` it",
               cmd->name);
  return -1;
}

static int ctl_start_task(void *ud, const dmh_control_cmd *cmd, json_object *args,
                          json_object *resp, dm_error *err) {
  ctl *x = ud;
  const char *path, *stage = NULL;
  master_start_opts so;
  if (dmh_control_arg_path(cmd, args, "path", &path, err) < 0 ||
      dmh_control_no_sources(cmd, args, err) < 0 ||
      dmh_control_arg_string(cmd, args, "stage", false, &stage, err) < 0 ||
      master_start_opts_parse(cmd, args, &so, err) < 0)
    return -1;
  /* the options are the leader's to hand out (fenced by its token): a follower forwards */
  int64_t token = 0;
  if (so.remove_meta || so.start_time) {
    int fwd = master_ctl_leader_token(x, cmd, args, resp, &token, err);
    if (fwd != 0)
      return fwd < 0 ? -1 : 0;
  }
  if (stage && strcmp(stage, "Stopped") != 0 && strcmp(stage, "Running") != 0) {
    dm_error_set(err, DM_ERR_CONTROL_REQUEST, NULL,
                 "start-task: argument \"stage\" is \"%s\"; it is \"Stopped\" (create the task "
                 "without starting it) or \"Running\" (the default)",
                 stage);
    return -1;
  }
  /* created stopped: stored expected Paused, so the workers create its subtasks New (DM's
   * AddSubTasks with pb.Stage_Stopped keeps them from running too) */
  dmh_cluster_stage want =
      stage && strcmp(stage, "Stopped") == 0 ? DMH_CLUSTER_PAUSED : DMH_CLUSTER_RUNNING;
  dmh_control_file f;
  if (dmh_control_file_get(cmd, args, path, true, &f, err) < 0) {
    dmh_control_file_free(&f);
    return -1;
  }
  dmh_task_config *tc = NULL;
  dmh_cfg_trust trust = master_ctl_trust(x, f.origin);
  if (dmh_task_config_load_as(f.path, &trust, &tc, err) < 0 ||
      master_ctl_cluster_supports(tc, path, err) < 0) {
    if (!tc)
      dmh_control_file_blame(&f, path, err);
    dmh_task_config_free(tc);
    dmh_control_file_free(&f);
    return -1;
  }
  int rc = -1;
  char *val = NULL, *sealed = NULL;
  size_t n = (size_t)tc->n_instances;
  char(*keys)[DMH_CLUSTER_KEY_MAX] = calloc(2 * n + 1, sizeof *keys);
  dmh_etcd_cmp *cmps = calloc(n + MASTER_START_MAX + 2, sizeof *cmps);
  dmh_etcd_op *ops = calloc(n + MASTER_START_MAX + 1, sizeof *ops);
  master_start_keys *sk = calloc(1, sizeof *sk);
  char key[DMH_CLUSTER_KEY_MAX], what[DMH_CLUSTER_NAME_MAX + 16];
  master_snapshot s = {0};
  if (!keys || !cmps || !ops || !sk) {
    ctl_oom(err);
    goto out;
  }
  if (master_key(key, sizeof key, x->m, DMH_KEY_TASK, tc->name, NULL, NULL, err) < 0 ||
      master_snapshot_read(x->c, x->m, &s, err) < 0)
    goto out;
  for (size_t i = 0; i < n; i++) {
    const char *src = tc->instances[i].source_id;
    bool known = false;
    for (size_t k = 0; k < s.n_sources && !known; k++)
      known = strcmp(s.sources[k].name, src) == 0;
    if (!known) {
      dm_error_set(err, DM_ERR_NOT_FOUND, NULL,
                   "task %s reads source %s, which is not in the cluster: operate-source create "
                   "it first",
                   tc->name, src);
      goto out;
    }
    if (master_source_enabled(x, "start-task", tc->name, src, err) < 0)
      goto out;
    if (master_key(keys[2 * i], DMH_CLUSTER_KEY_MAX, x->m, DMH_KEY_STAGE, tc->name, src, NULL,
                   err) < 0 ||
        master_key(keys[2 * i + 1], DMH_CLUSTER_KEY_MAX, x->m, DMH_KEY_SOURCE, src, NULL, NULL,
                   err) < 0)
      goto out;
    ops[i] = (dmh_etcd_op){.kind = DMH_ETCD_PUT,
                           .key = DMH_ETCD_S(keys[2 * i]),
                           .value = DMH_ETCD_S(dmh_cluster_stage_name(want))};
    cmps[i] = (dmh_etcd_cmp){.key = DMH_ETCD_S(keys[2 * i + 1]),
                             .target = DMH_ETCD_CMP_CREATE,
                             .result = DMH_ETCD_GREATER,
                             .number = 0};
  }
  /* the precheck (docs/precheck.md), before anything is written: a failed item refuses */
  snprintf(what, sizeof what, "start-task %s", tc->name);
  if (master_ctl_precheck(x, tc, what, resp, err) < 0 ||
      master_start_prepare(x, tc, &s, &so, token, sk, resp, err) < 0)
    goto out;
  memcpy(cmps + n, sk->cmps, sk->n_cmps * sizeof *cmps);
  memcpy(ops + n, sk->ops, sk->n_ops * sizeof *ops);
  if (!(val = master_ctl_sealed_value(x, &f, path, "target-database", tc->target.ep.password,
                                      &sealed, err)))
    goto out;
  snprintf(what, sizeof what, "task %s", tc->name);
  if (ctl_create(x, key, val, cmps, n + sk->n_cmps, ops, n + sk->n_ops, what, err) < 0) {
    if (sk->n_cmps && err->code == DM_ERR_NOT_FOUND) /* a compare of the options failed */
      dm_error_set(err, DM_ERR_CLUSTER_FENCED, NULL,
                   "start-task %s: the leadership, a source or its binding changed meanwhile: "
                   "nothing written; start the task again",
                   tc->name);
    goto out;
  }
  json_object *list = json_object_new_array();
  for (size_t i = 0; i < n; i++)
    json_object_array_add(list,
                          ctl_source_entry(tc->instances[i].source_id,
                                           master_ctl_worker_of(&s, tc->instances[i].source_id)));
  json_object_object_add(resp, "sources", list);
  rc = 0;
out:
  if (sealed)
    OPENSSL_cleanse(sealed, strlen(sealed));
  free(sealed);
  master_snapshot_free(&s);
  if (sk)
    master_start_keys_free(sk);
  free(sk);
  free(keys);
  free(cmps);
  free(ops);
  free(val);
  dmh_task_config_free(tc);
  dmh_control_file_free(&f);
  return rc;
}

bool master_ctl_in(const char *const *only, size_t n, const char *source) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(only[i], source) == 0)
      return true;
  return n == 0;
}

/* The same for a task's stage key (its source part). */
static bool ctl_kv_in(const ctl *x, const dmh_etcd_kv *kv, const char *const *only, size_t n) {
  char t[DMH_CLUSTER_NAME_MAX], src[DMH_CLUSTER_NAME_MAX];
  return dmh_cluster_key_parse(kv->key, kv->key_len, x->m->prefix, DMH_KEY_STAGE, t, src, NULL) ==
             0 &&
         master_ctl_in(only, n, src);
}

/* dmctl's -s of a task's command: every one a source of the task (its stage keys `stages`); for
 * stop-task all of them (a task stops as a whole). -1 with *err. */
static int ctl_check_only(const ctl *x, const dmh_etcd_result *stages, const char *cmd,
                          const char *task, const char *const *only, size_t n, bool stop,
                          dm_error *err) {
  size_t covered = 0;
  for (size_t i = 0; i < stages->n_kvs; i++)
    covered += n > 0 && ctl_kv_in(x, &stages->kvs[i], only, n) ? 1 : 0;
  for (size_t k = 0; k < n; k++) {
    bool found = false;
    for (size_t i = 0; i < stages->n_kvs && !found; i++)
      found = ctl_kv_in(x, &stages->kvs[i], &only[k], 1);
    if (!found) {
      dm_error_set(err, DM_ERR_NOT_FOUND, NULL, "%s -s %s: task %s has no subtask on that source",
                   cmd, only[k], task);
      return -1;
    }
  }
  if (stop && n > 0 && covered != stages->n_kvs) {
    dm_error_set(err, DM_ERR_CONTROL_REQUEST, NULL,
                 "stop-task %s -s: dmhost stops a task as a whole, not some of its sources; "
                 "pause-task -s those sources, or stop the task without -s",
                 task);
    return -1;
  }
  return 0;
}

static int ctl_task_op(void *ud, const dmh_control_cmd *cmd, json_object *args, json_object *resp,
                       dm_error *err) {
  ctl *x = ud;
  const char *name, *only[DMH_CONTROL_MAX_LIST];
  size_t n_only;
  if (dmh_control_arg_string(cmd, args, "name", true, &name, err) < 0 ||
      dmh_control_arg_list(cmd, args, "source", only, DMH_CONTROL_MAX_LIST, &n_only, err) < 0)
    return -1;
  bool stop = strcmp(cmd->name, "stop-task") == 0, force = false, rm = false;
  bool resume = strcmp(cmd->name, "resume-task") == 0;
  master_resume_opts ro = {0};
  /* force given: DM's DELETE rule (below); remove-meta: stop-task's (ctl_remove_meta) and, with
   * start-time and safe-mode-duration, resume-task's of a task created stopped (master_start.c) */
  bool check_force = stop && json_object_object_get_ex(args, "force", NULL);
  if ((stop && dmh_control_arg_bool(cmd, args, "force", &force, err) < 0) ||
      (resume ? master_resume_opts_parse(cmd, args, &ro, err)
              : ctl_remove_meta(cmd, args, &rm, err)) < 0)
    return -1;
  bool ro_any = resume && master_resume_opts_any(&ro);
  /* stop-task's remove-meta and resume-task's options are handed to the workers by the leader
   * (fenced by its token) */
  int64_t token = 0;
  if (rm || ro_any) {
    int fwd = master_ctl_leader_token(x, cmd, args, resp, &token, err);
    if (fwd != 0)
      return fwd < 0 ? -1 : 0;
  }
  const char *stage = strcmp(cmd->name, "pause-task") == 0
                          ? dmh_cluster_stage_name(DMH_CLUSTER_PAUSED)
                          : dmh_cluster_stage_name(DMH_CLUSTER_RUNNING);
  json_object_object_add(resp, "op",
                         json_object_new_string(stop              ? "Stop"
                                                : stage[0] == 'P' ? "Pause"
                                                                  : "Resume"));
  char tkey[DMH_CLUSTER_KEY_MAX], skey[DMH_CLUSTER_KEY_MAX];
  /* stop-task also deletes the task's shard DDL records (DM's RemoveMetaData) and start-task's
   * options (master_start.c) */
  static const dmh_cluster_key_kind shard_kinds[] = {DMH_KEY_SHARD_TABLES, DMH_KEY_SHARD_INFO,
                                                     DMH_KEY_SHARD_OP, DMH_KEY_START};
  char shkeys[4][DMH_CLUSTER_KEY_MAX];
  if (master_key(tkey, sizeof tkey, x->m, DMH_KEY_TASK, name, NULL, NULL, err) < 0 ||
      master_key(skey, sizeof skey, x->m, DMH_KEY_STAGE, name, NULL, NULL, err) < 0)
    return -1;
  for (int i = 0; i < 4; i++)
    if (master_key(shkeys[i], sizeof shkeys[i], x->m, shard_kinds[i], name, NULL, NULL, err) < 0)
      return -1;
  dmh_etcd_result r = {0};
  if (dmh_etcd_range(x->c, DMH_ETCD_S(skey), 1, 0, 0, &r, err) < 0)
    return -1;
  master_snapshot s = {0};
  dmh_etcd_op *ops = calloc(r.n_kvs + 6 + MASTER_START_MAX, sizeof *ops);
  master_start_keys *sk = calloc(1, sizeof *sk);
  dmh_etcd_cmp cmps[2 * MASTER_START_MAX + 2];
  size_t nc = 0;
  int rc = -1;
  if (!ops || !sk) {
    ctl_oom(err);
    goto out;
  }
  if (master_snapshot_read(x->c, x->m, &s, err) < 0 ||
      ctl_check_only(x, &r, cmd->name, name, only, n_only, stop, err) < 0)
    goto out;
  /* resume-task on a disabled source: DM's refusal (operate-source enable first) */
  for (size_t i = 0; !stop && stage[0] == 'R' && i < r.n_kvs; i++) {
    char t[DMH_CLUSTER_NAME_MAX], src[DMH_CLUSTER_NAME_MAX];
    if (dmh_cluster_key_parse(r.kvs[i].key, r.kvs[i].key_len, x->m->prefix, DMH_KEY_STAGE, t, src,
                              NULL) == 0 &&
        master_ctl_in(only, n_only, src) && master_source_enabled(x, cmd->name, name, src, err) < 0)
      goto out;
  }
  size_t n = 0;
  /* DM's DELETE rule (openapi_controller.go deleteTask): a subtask expected Running refuses */
  for (size_t i = 0; check_force && !force && i < r.n_kvs; i++) {
    dmh_cluster_stage st;
    if (dmh_cluster_stage_parse(r.kvs[i].value, r.kvs[i].value_len, &st) == 0 &&
        st == DMH_CLUSTER_RUNNING) {
      dm_error_set(err, DM_ERR_STAGE, NULL,
                   "task %s have running subtasks, please stop them or delete task with force.",
                   name);
      goto out;
    }
  }
  if (stop) {
    ops[n++] = (dmh_etcd_op){.kind = DMH_ETCD_DELETE, .key = DMH_ETCD_S(tkey)};
    ops[n++] = (dmh_etcd_op){.kind = DMH_ETCD_DELETE, .key = DMH_ETCD_S(skey), .prefix = 1};
    /* the start options go, unless remove-meta puts each source's (a key is once in a txn) */
    for (int i = 0; i < (rm ? 3 : 4); i++)
      ops[n++] = (dmh_etcd_op){.kind = DMH_ETCD_DELETE, .key = DMH_ETCD_S(shkeys[i]), .prefix = 1};
    if (rm) {
      const char *srcs[MASTER_START_MAX];
      char names[MASTER_START_MAX][DMH_CLUSTER_NAME_MAX];
      size_t ns = 0;
      for (size_t i = 0; i < r.n_kvs && ns < MASTER_START_MAX; i++) {
        char t[DMH_CLUSTER_NAME_MAX];
        if (dmh_cluster_key_parse(r.kvs[i].key, r.kvs[i].key_len, x->m->prefix, DMH_KEY_STAGE, t,
                                  names[ns], NULL) == 0) {
          srcs[ns] = names[ns];
          ns++;
        }
      }
      if (master_stop_prepare(x, name, srcs, ns, &s, token, sk, err) < 0)
        goto out;
      memcpy(ops + n, sk->ops, sk->n_ops * sizeof *ops);
      n += sk->n_ops;
      memcpy(cmps + 1, sk->cmps, sk->n_cmps * sizeof *cmps);
      nc = sk->n_cmps;
    }
  } else {
    for (size_t i = 0; i < r.n_kvs && i < DMH_ETCD_TXN_MAX_OPS; i++)
      if (ctl_kv_in(x, &r.kvs[i], only, n_only))
        ops[n++] = (dmh_etcd_op){.kind = DMH_ETCD_PUT,
                                 .key = {r.kvs[i].key, r.kvs[i].key_len},
                                 .value = DMH_ETCD_S(stage)};
    if (ro_any) {
      if (master_resume_prepare(x, name, &r, only, n_only, &s, &ro, token, sk, resp, err) < 0)
        goto out;
      memcpy(ops + n, sk->ops, sk->n_ops * sizeof *ops);
      n += sk->n_ops;
      memcpy(cmps + 1, sk->cmps, sk->n_cmps * sizeof *cmps);
      nc = sk->n_cmps;
    }
  }
  cmps[0] = (dmh_etcd_cmp){.key = DMH_ETCD_S(tkey),
                           .target = DMH_ETCD_CMP_CREATE,
                           .result = DMH_ETCD_GREATER,
                           .number = 0};
  dmh_etcd_txn_result tr = {0};
  if (dmh_etcd_txn(x->c, cmps, nc + 1, ops, n, NULL, 0, &tr, err) < 0)
    goto out;
  bool ok = tr.succeeded;
  dmh_etcd_txn_result_free(&tr);
  if (!ok) {
    dm_error_set(err, rm || ro_any ? DM_ERR_CLUSTER_FENCED : DM_ERR_NOT_FOUND, NULL,
                 rm ? "stop-task %s remove-meta: the task left the cluster, or the leadership or a "
                      "source's binding changed meanwhile: nothing written; stop it again"
                 : ro_any ? "resume-task %s with options: the task left the cluster, or the "
                            "leadership, a source's binding or a subtask's stage changed "
                            "meanwhile: nothing written; start it again"
                          : "no task %s in the cluster",
                 name);
    goto out;
  }
  if (rm)
    json_object_object_add(resp, "msg",
                           json_object_new_string("remove-meta: each source's worker drops the "
                                                  "task's meta after its stop (its log names "
                                                  "each DROP)"));
  json_object *list = json_object_new_array();
  for (size_t i = 0; i < r.n_kvs; i++) {
    char t[DMH_CLUSTER_NAME_MAX], src[DMH_CLUSTER_NAME_MAX];
    if (dmh_cluster_key_parse(r.kvs[i].key, r.kvs[i].key_len, x->m->prefix, DMH_KEY_STAGE, t, src,
                              NULL) == 0 &&
        master_ctl_in(only, n_only, src))
      json_object_array_add(list, ctl_source_entry(src, master_ctl_worker_of(&s, src)));
  }
  json_object_object_add(resp, "sources", list);
  rc = 0;
out:
  master_snapshot_free(&s);
  if (sk)
    master_start_keys_free(sk);
  free(sk);
  free(ops);
  dmh_etcd_result_free(&r);
  return rc;
}

/* ---- list-member, transfer-source ---- */

static int ctl_list_member(void *ud, const dmh_control_cmd *cmd, json_object *args,
                           json_object *resp, dm_error *err) {
  ctl *x = ud;
  dmh_member_args a;
  if (dmh_control_member_args(cmd, args, &a, err) < 0)
    return -1;
  return master_list_member(x->m, x->c, a.masters, a.workers, a.leader, a.names, a.n_names, resp,
                            err);
}

static int ctl_transfer_source(void *ud, const dmh_control_cmd *cmd, json_object *args,
                               json_object *resp, dm_error *err) {
  ctl *x = ud;
  dmh_master *m = x->m;
  const char *source, *worker;
  if (dmh_control_arg_string(cmd, args, "source", true, &source, err) < 0 ||
      dmh_control_arg_string(cmd, args, "worker", true, &worker, err) < 0)
    return -1;
  int fwd = master_ctl_to_leader(x, cmd, args, resp, err);
  if (fwd != 0)
    return fwd < 0 ? -1 : 0;
  int64_t token = dmh_master_token(m);
  pthread_mutex_lock(&m->sched_lock);
  master_snapshot s;
  int rc = master_snapshot_read(x->c, m, &s, err);
  if (rc == 0) {
    dmh_sched_action *acts = calloc(s.n_workers + 3, sizeof *acts);
    if (!acts) {
      rc = ctl_oom(err);
    } else {
      size_t n = master_repair(&s, acts);
      int k = dmh_sched_transfer(s.workers, s.n_workers, s.sources, s.n_sources, source, worker,
                                 acts + n, err);
      rc = k < 0 ? -1 : master_apply(x->c, m, token, acts, n + (size_t)k, err);
      free(acts);
    }
    master_snapshot_free(&s);
  }
  pthread_mutex_unlock(&m->sched_lock);
  if (rc < 0)
    return -1;
  json_object *list = json_object_new_array();
  json_object_array_add(list, ctl_source_entry(source, worker));
  json_object_object_add(resp, "sources", list);
  return 0;
}

/* ---- start-relay, stop-relay ---- */

/* start-relay / stop-relay -s SOURCE [WORKER...]: <p>/relay/<worker> = {source, stage} for each
 * worker named (default: the worker bound to the source), which the worker follows. start-relay
 * needs the worker bound to the source; stop-relay the worker bound to it or keeping its relay. */
#define CTL_RELAY_MAX 16 /* workers in one start-relay / stop-relay */

static int ctl_relay(void *ud, const dmh_control_cmd *cmd, json_object *args, json_object *resp,
                     dm_error *err) {
  ctl *x = ud;
  const char *source;
  if (dmh_control_arg_string(cmd, args, "source", true, &source, err) < 0)
    return -1;
  bool start = strcmp(cmd->name, "start-relay") == 0;
  json_object *named = NULL;
  if (json_object_object_get_ex(args, "worker", &named) &&
      (!json_object_is_type(named, json_type_array) || json_object_array_length(named) == 0 ||
       json_object_array_length(named) > CTL_RELAY_MAX))
    return dmh_control_bad(err,
                           "%s: argument \"worker\" must be a list of 1 to %d worker names "
                           "(usage: %s)",
                           cmd->name, CTL_RELAY_MAX, cmd->usage);
  master_snapshot s;
  if (master_snapshot_read(x->c, x->m, &s, err) < 0)
    return -1;
  const char *workers[CTL_RELAY_MAX];
  size_t n = named ? json_object_array_length(named) : 1;
  workers[0] = master_ctl_worker_of(&s, source);
  for (size_t i = 0; named && i < n; i++)
    workers[i] = json_object_get_string(json_object_array_get_idx(named, i));
  char keys[CTL_RELAY_MAX][DMH_CLUSTER_KEY_MAX];
  dmh_etcd_op ops[CTL_RELAY_MAX];
  dmh_cluster_relay rq = {.stage = start ? DMH_CLUSTER_RUNNING : DMH_CLUSTER_STOPPED};
  dm_strlcpy(rq.source, source, sizeof rq.source);
  char *val = NULL;
  int rc = -1;
  if (!workers[0][0]) {
    dm_error_set(err, DM_ERR_NOT_FOUND, NULL,
                 "%s: source %s is bound to no worker; name the worker (%s)", cmd->name, source,
                 cmd->usage);
    goto out;
  }
  for (size_t i = 0; i < n; i++) {
    const dmh_sched_worker *w = NULL;
    for (size_t k = 0; k < s.n_workers && !w; k++)
      if (strcmp(s.workers[k].name, workers[i]) == 0)
        w = &s.workers[k];
    bool ok = w && w->online &&
              (strcmp(w->bound, source) == 0 || (!start && strcmp(w->relay, source) == 0));
    if (!ok) {
      dm_error_set(err, DM_ERR_NOT_FOUND, NULL,
                   start ? "start-relay: worker %s is not an online worker bound to source %s; "
                           "transfer-source %s %s first"
                         : "stop-relay: worker %s is not an online worker bound to source %s or "
                           "keeping its relay (see list-member)%s%s",
                   workers[i], source, start ? source : "", start ? workers[i] : "");
      goto out;
    }
    if (master_key(keys[i], sizeof keys[i], x->m, DMH_KEY_RELAY, workers[i], NULL, NULL, err) < 0)
      goto out;
  }
  if (!(val = dmh_cluster_relay_json(&rq))) {
    ctl_oom(err);
    goto out;
  }
  for (size_t i = 0; i < n; i++)
    ops[i] =
        (dmh_etcd_op){.kind = DMH_ETCD_PUT, .key = DMH_ETCD_S(keys[i]), .value = DMH_ETCD_S(val)};
  dmh_etcd_txn_result tr = {0};
  if (dmh_etcd_txn(x->c, NULL, 0, ops, n, NULL, 0, &tr, err) < 0)
    goto out;
  dmh_etcd_txn_result_free(&tr);
  json_object *list = json_object_new_array();
  for (size_t i = 0; i < n; i++)
    json_object_array_add(list, ctl_source_entry(source, workers[i]));
  json_object_object_add(resp, "sources", list);
  rc = 0;
out:
  free(val);
  master_snapshot_free(&s);
  return rc;
}

static int ctl_help(void *ud, const dmh_control_cmd *cmd, json_object *args, json_object *resp,
                    dm_error *err);

/* DM's pause-relay/resume-relay: stop-relay/start-relay of each source */
static int ctl_relay_each(void *ud, const dmh_control_cmd *cmd, json_object *args,
                          json_object *resp, dm_error *err) {
  return dmh_control_relay_each(ud, cmd, ctl_relay, args, resp, err);
}

/* The master's handler of each row of commands.def (dmh_control_table): the forwarded ones
 * (DMH_CMD_FORWARD) and the refused ones (DMH_CMD_DAEMON_ONLY) in master_forward.c. */
static const dmh_control_fn ctl_fns[DMH_CMD_COUNT] = {
    [DMH_CMD_OPERATE_SOURCE] = ctl_operate_source,
    [DMH_CMD_CHECK_TASK] = ctl_check_task,
    [DMH_CMD_START_TASK] = ctl_start_task,
    [DMH_CMD_UPDATE_TASK] = master_ctl_update_task,
    [DMH_CMD_PAUSE_TASK] = ctl_task_op,
    [DMH_CMD_RESUME_TASK] = ctl_task_op,
    [DMH_CMD_STOP_TASK] = ctl_task_op,
    [DMH_CMD_QUERY_STATUS] = master_ctl_query_status,
    [DMH_CMD_QUERY_LAG] = master_ctl_query_lag,
    [DMH_CMD_VERIFY] = master_ctl_verify,
    [DMH_CMD_LIST_MEMBER] = ctl_list_member,
    [DMH_CMD_TRANSFER_SOURCE] = ctl_transfer_source,
    [DMH_CMD_OFFLINE_MEMBER] = master_ctl_offline_member,
    [DMH_CMD_START_RELAY] = ctl_relay,
    [DMH_CMD_STOP_RELAY] = ctl_relay,
    [DMH_CMD_PAUSE_RELAY] = ctl_relay_each,
    [DMH_CMD_RESUME_RELAY] = ctl_relay_each,
    [DMH_CMD_PURGE_RELAY] = master_ctl_worker_cmd,
    [DMH_CMD_SWAP_UNIT] = master_ctl_swap_unit,
    [DMH_CMD_BINLOG] = master_ctl_worker_cmd,
    [DMH_CMD_BINLOG_SCHEMA] = master_ctl_worker_cmd,
    [DMH_CMD_VALIDATION] = master_ctl_validation,
    [DMH_CMD_SHARD_DDL_LOCK] = master_ctl_shard_ddl_lock,
    [DMH_CMD_OPERATE_LEADER] = master_ctl_operate_leader,
    [DMH_CMD_CONVERT_TASK] = dmh_control_convert_task,
    [DMH_CMD_SOURCE_SCHEMAS] = master_ctl_worker_cmd,
    [DMH_CMD_TASK_TABLES] = master_ctl_worker_cmd,
    [DMH_CMD_API_OBJECTS] = master_ctl_api_objects,
    [DMH_CMD_TASK_TEMPLATE] = master_ctl_task_template,
    [DMH_CMD_CLUSTER_INFO] = master_ctl_cluster_info,
    [DMH_CMD_CONFIG] = master_ctl_get_config,
    [DMH_CMD_GET_CONFIG] = master_ctl_get_config,
    [DMH_CMD_HELP] = ctl_help,
};

static dmh_control_cmd ctl_cmds[DMH_CMD_COUNT];
static size_t ctl_n_cmds;
static pthread_once_t ctl_once = PTHREAD_ONCE_INIT;

static void ctl_init(void) {
  ctl_n_cmds = dmh_control_table(DMH_ROLE_MASTER, ctl_fns, ctl_cmds);
}

static int ctl_help(void *ud, const dmh_control_cmd *cmd, json_object *args, json_object *resp,
                    dm_error *err) {
  (void)ud, (void)cmd, (void)args, (void)err;
  dmh_control_help(ctl_cmds, ctl_n_cmds, resp);
  return 0;
}

json_object *dmh_master_handle(dmh_master *m, json_object *request) {
  pthread_once(&ctl_once, ctl_init);
  dm_error err;
  ctl x = {.m = m, .c = dmh_etcd_open(m->endpoints, &m->etcd_opts, &err)};
  if (!x.c) {
    json_object *resp = dmh_control_response_new();
    dmh_control_set_error(resp, &err);
    return resp;
  }
  json_object *resp = dmh_control_dispatch(ctl_cmds, ctl_n_cmds, &x, request);
  dmh_etcd_close(x.c);
  return resp;
}

static json_object *ctl_handle(void *ud, json_object *request) {
  return dmh_master_handle(ud, request);
}

char *dmh_master_handle_line(void *ud, const char *line, size_t len) {
  return dmh_control_line_with(ctl_handle, ud, line, len);
}
