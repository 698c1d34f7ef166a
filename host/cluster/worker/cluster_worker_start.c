/*
 * `dmhost worker`: start-task's one-shot options (cluster_worker.h, cw_start_*). The leader puts
 * them at <p>/start/<task>/<source> in the txn that creates <p>/task/<task> (master_start.c), so
 * the key's mod_revision is the task key's create_revision: the start they belong to. They are
 * taken only when this worker creates the task's subtask, only for the binding they name, and only
 * once per start: the start's revision is kept in <state>/tasks/<task>/cluster.start, written by
 * the registry's `prepared` call, after the meta is dropped and before anything of the task runs.
 *
 * Crash points (docs/cluster.md, "start-task's options"):
 *   - after the drop, before the record: the next start drops again; nothing ran in between, so
 *     the drop finds what the first left (nothing of this start is lost or doubled);
 *   - after the record, before the registry kept the task (state.json): the next start finds the
 *     record and drops nothing, the position the master found is given again (a fresh sync starts
 *     there, one with a checkpoint goes on from it);
 *   - once the registry kept the task, a restart restores it and never starts it anew.
 * A worker bound anew (the source moved, or this worker's lease was lost) takes the task up from
 * its checkpoints: it cannot know whether the options were applied by the worker before.
 *
 * resume-task's options (DM's OpenAPI start of a task created stopped) are put in the txn that
 * flips the task's stage key to Running ("resume": true; their mod_revision is the stage key's):
 * taken when this worker resumes the subtask it holds New (cw_start_resume; the registry's
 * resume-task with them), or when it creates the task after the flip (created stopped, then
 * resumed with them), under the same binding and once-per-start rules.
 */
#include "cluster_worker.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmhost/sdk.h"
#include "log.h"
#include "state.h"

/* <state>/tasks/<task>/cluster.start's path under the state dir. */
static void cwst_rel(char *rel, size_t size, const char *task) {
  snprintf(rel, size, "tasks/%s/cluster.start", task);
}

typedef struct cwst_mark {
  cw *w;
  const char *task;
  int64_t rev;
} cwst_mark;

/* The registry's `prepared` call: the meta is dropped, nothing of the task runs yet. */
static int cwst_record(void *ud, dm_error *err) {
  cwst_mark *m = ud;
  char rel[DMH_CLUSTER_NAME_MAX + 32];
  cwst_rel(rel, sizeof rel, m->task);
  if (cw_rev_save(m->w, rel, m->rev, err) < 0)
    return -1;
  dmh_log(DM_LOG_INFO, "worker",
          "task %s: the start's options of revision %" PRId64
          " applied (the meta dropped if they asked it), kept in cluster.start",
          m->task, m->rev);
  return 0;
}

int cw_start_read(cw *w, const char *source, cw_want *want, dm_error *err) {
  char okey[DMH_CLUSTER_KEY_MAX], tkey[DMH_CLUSTER_KEY_MAX];
  want->has_start = false;
  if (dmh_cluster_key(okey, sizeof okey, w->prefix, DMH_KEY_START, want->task, source, NULL) < 0 ||
      dmh_cluster_key(tkey, sizeof tkey, w->prefix, DMH_KEY_TASK, want->task, NULL, NULL) < 0)
    return 0; /* names that fit no key have no options */
  dmh_etcd_result o = {0}, t = {0};
  if (dmh_etcd_range(w->etcd, DMH_ETCD_S(okey), 0, 0, 0, &o, err) < 0)
    return -1;
  int rc = 0;
  if (o.n_kvs > 0 && dmh_etcd_range(w->etcd, DMH_ETCD_S(tkey), 0, 0, o.revision, &t, err) < 0) {
    rc = -1;
  } else if (o.n_kvs > 0 && t.n_kvs > 0 &&
             (t.kvs[0].create_revision == o.kvs[0].mod_revision ||
              want->stage_rev == o.kvs[0].mod_revision)) {
    /* written with this task key, or (resume-task's) with the stage key's flip to Running: this
     * start's (an older start's key would differ) */
    dm_error e;
    if (dmh_cluster_start_parse(o.kvs[0].value, o.kvs[0].value_len, &want->start, &e) < 0) {
      cw_log_error(DM_LOG_WARN, okey, &e);
    } else if (want->start.at_resume ? want->stage_rev != o.kvs[0].mod_revision
                                     : t.kvs[0].create_revision != o.kvs[0].mod_revision) {
      /* a resume's record is taken with its stage key only, a start's with its task key only */
    } else {
      want->has_start = true;
      want->start_rev = o.kvs[0].mod_revision;
    }
  }
  dmh_etcd_result_free(&o);
  dmh_etcd_result_free(&t);
  return rc;
}

int cw_start_task(cw *w, const cw_want *want, const char *path, bool run, int64_t binding,
                  dm_error *err) {
  if (want->has_start && want->start.at_resume) {
    /* resume-task's options, the task not here yet (this worker came after the flip): created
     * stopped as its leader made it, then started with them as a worker that had it would */
    static const dmh_task_opts stopped = {.stopped = true};
    json_object *resp = json_object_new_object();
    int rc = dmh_registry_task_start_opts(w->reg, path, DMH_CFG_OPERATOR, &stopped, resp, err);
    json_object_put(resp);
    return rc < 0 || !run ? rc : cw_start_resume(w, want, binding, err);
  }
  dmh_task_opts o = {.stopped = !run};
  cwst_mark mark = {.w = w, .task = want->task, .rev = want->start_rev};
  const dmh_cluster_start *st = &want->start;
  char rel[DMH_CLUSTER_NAME_MAX + 32];
  if (want->has_start && st->binding != binding) {
    dmh_log(DM_LOG_WARN, "worker",
            "task %s: start-task's options (revision %" PRId64 ") were for binding %" PRId64
            ", this worker's is %" PRId64 ": not applied, the task goes on from its checkpoints",
            want->task, want->start_rev, st->binding, binding);
  } else if (want->has_start && (cwst_rel(rel, sizeof rel, want->task),
                                 cw_rev_load(w, rel, NULL) == want->start_rev)) {
    /* applied before (a restart, a start retried): the meta is not dropped again */
    o.start_pos = st->has_start ? &st->start : NULL;
    dmh_log(DM_LOG_INFO, "worker",
            "task %s: start-task's options of revision %" PRId64
            " were applied before: the meta is not dropped again",
            want->task, want->start_rev);
  } else if (want->has_start) {
    o.remove_meta = st->remove_meta || st->has_start;
    o.start_pos = st->has_start ? &st->start : NULL;
    o.prepared = cwst_record;
    o.prepared_ud = &mark;
  }
  json_object *resp = json_object_new_object();
  int rc = dmh_registry_task_start_opts(w->reg, path, DMH_CFG_OPERATOR, &o, resp, err);
  json_object_put(resp);
  return rc;
}

int cw_start_resume(cw *w, const cw_want *want, int64_t binding, dm_error *err) {
  /* the leader checked that the task never ran (its stage keys never left the Paused of its
   * creation): taken though this worker restored it after a restart */
  dmh_task_opts o = {.first_start = true};
  cwst_mark mark = {.w = w, .task = want->task, .rev = want->start_rev};
  const dmh_cluster_start *st = &want->start;
  char rel[DMH_CLUSTER_NAME_MAX + 32];
  cwst_rel(rel, sizeof rel, want->task);
  if (st->binding != binding) {
    dmh_log(DM_LOG_WARN, "worker",
            "task %s: resume-task's options (revision %" PRId64 ") were for binding %" PRId64
            ", this worker's is %" PRId64 ": not applied, the task goes on from its checkpoints",
            want->task, want->start_rev, st->binding, binding);
    o.first_start = false;
  } else if (cw_rev_load(w, rel, NULL) == want->start_rev) {
    /* applied before (a restart after the start): not dropped again; the position as the
     * registry kept it, the safe mode for this start of the worker */
    o.start_pos = st->has_start ? &st->start : NULL;
    o.safe_mode_duration = st->safe_mode_duration[0] ? st->safe_mode_duration : NULL;
    dmh_log(DM_LOG_INFO, "worker",
            "task %s: resume-task's options of revision %" PRId64
            " were applied before: the meta is not dropped again",
            want->task, want->start_rev);
  } else {
    o.remove_meta = st->remove_meta || st->has_start;
    o.start_pos = st->has_start ? &st->start : NULL;
    o.safe_mode_duration = st->safe_mode_duration[0] ? st->safe_mode_duration : NULL;
    o.prepared = cwst_record;
    o.prepared_ud = &mark;
  }
  json_object *resp = json_object_new_object();
  int rc = dmh_registry_task_op_opts(w->reg, "resume-task", want->task, NULL, 0, &o, resp, err);
  json_object_put(resp);
  return rc;
}

int cw_stop_read(cw *w, const char *task, const char *source, int64_t binding, dm_error *err) {
  char key[DMH_CLUSTER_KEY_MAX];
  if (dmh_cluster_key(key, sizeof key, w->prefix, DMH_KEY_START, task, source, NULL) < 0)
    return 0;
  dmh_etcd_result r = {0};
  if (dmh_etcd_range(w->etcd, DMH_ETCD_S(key), 0, 0, 0, &r, err) < 0)
    return -1;
  dmh_cluster_start st;
  dm_error e;
  int rm = 0;
  if (r.n_kvs > 0 && dmh_cluster_start_parse(r.kvs[0].value, r.kvs[0].value_len, &st, &e) < 0)
    cw_log_error(DM_LOG_WARN, key, &e);
  else if (r.n_kvs > 0 && st.at_stop && st.remove_meta && st.binding != binding)
    dmh_log(DM_LOG_WARN, "worker",
            "task %s: stop-task's remove-meta was for binding %" PRId64
            ", this worker's is %" PRId64 ": the task is stopped, its meta kept",
            task, st.binding, binding);
  else if (r.n_kvs > 0 && st.at_stop && st.remove_meta)
    rm = 1;
  dmh_etcd_result_free(&r);
  return rm;
}

int cw_stop_task(cw *w, const char *task, dm_error *err) {
  const dmh_task_opts o = {.remove_meta = true};
  json_object *resp = json_object_new_object();
  int rc = dmh_registry_task_op_opts(w->reg, "stop-task", task, NULL, 0, &o, resp, err);
  json_object_put(resp);
  return rc;
}
