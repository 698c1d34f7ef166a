/* The host's own metrics, see metrics_host.h. Rare events (a stage read per scrape, an error, a
 * resume, a swap, a unit call): the family is looked up by name each time. */
#include "metrics_host.h"

#include "log.h"

static const char *const subtask_labels[] = {"task", "source_id", "worker", "unit", "result"};

/* The family `name` with the subtask's labels and `n_extra` of unit, result; NULL logged. */
static dmh_metric_family *host_family(dm_ctx *c, const char *name, dm_metric_type type,
                                      const char *help, int n_extra, const double *buckets,
                                      int n_buckets) {
  dmh_metric_family *f;
  dm_error err;
  if (dmh_metrics_family(c->metrics, name, type, help, subtask_labels, 3 + n_extra, buckets,
                         n_buckets, &f, &err) < 0) {
    dmh_log(DM_LOG_WARN, "metrics", "%s", err.message);
    return NULL;
  }
  return f;
}

static void host_values(dm_ctx *c, const char **v, const char *unit, const char *result) {
  v[0] = c->task_name ? c->task_name : "";
  v[1] = c->source_id ? c->source_id : "";
  v[2] = c->worker_name ? c->worker_name : "";
  v[3] = unit;
  v[4] = result;
}

void dmh_metrics_task_stage(dm_ctx *c, int dm_stage) {
  const char *v[5];
  host_values(c, v, NULL, NULL);
  dmh_metric_set(host_family(c, "dm_worker_task_state", DM_METRIC_GAUGE,
                             "state of task, 0 - invalidStage, 1 - New, 2 - Running, 3 - Paused, "
                             "4 - Stopped, 5 - Finished, 6 - Pausing, 7 - Resuming, 8 - Stopping",
                             0, NULL, 0),
                 c->metrics_owner, v, dm_stage);
}

/* DM's exit counters of a built-in kind: the dump unit's under both names DM has used
 * (dm_mydumper_ for its alert rules, dm_dumpling_ since dumpling replaced mydumper). */
static const struct {
  dm_unit_kind kind;
  const char *name, *help;
} exit_counters[] = {
    {DM_UNIT_DUMP, "dm_mydumper_exit_with_error_count", "counter for mydumper exits with error"},
    {DM_UNIT_DUMP, "dm_dumpling_exit_with_error_count", "counter for dumpling exit with error"},
    {DM_UNIT_LOAD, "dm_loader_exit_with_error_count", "counter for loader exits with error"},
    {DM_UNIT_SYNC, "dm_syncer_exit_with_error_count", "counter for syncer exits with error"},
    {DM_UNIT_RELAY, "dm_relay_exit_with_error_count", "counter of relay unit exits with error"},
};

/* DM's exit counter `i` of the unit's series, resumable_err "true" or "false", by `amount`. */
static void exit_counter_add(dm_ctx *c, size_t i, const char *unit, bool resumable, double amount) {
  static const char *const labels[] = {"task", "source_id", "worker", "resumable_err"};
  const char *v[5];
  host_values(c, v, unit, NULL);
  v[3] = resumable ? "true" : "false";
  dmh_metric_family *f;
  dm_error err;
  if (dmh_metrics_family(c->metrics, exit_counters[i].name, DM_METRIC_COUNTER,
                         exit_counters[i].help, labels, 4, NULL, 0, &f, &err) < 0) {
    dmh_log(DM_LOG_WARN, "metrics", "%s", err.message);
    return;
  }
  dmh_metric_add(f, c->metrics_owner, v, amount);
}

void dmh_metrics_unit_exit_start(dm_ctx *c, dm_unit_kind kind, const char *unit) {
  for (size_t i = 0; i < sizeof exit_counters / sizeof exit_counters[0]; i++)
    if (exit_counters[i].kind == kind) {
      exit_counter_add(c, i, unit, true, 0);
      exit_counter_add(c, i, unit, false, 0);
    }
}

void dmh_metrics_unit_exit_error(dm_ctx *c, dm_unit_kind kind, const char *unit, bool resumable) {
  for (size_t i = 0; i < sizeof exit_counters / sizeof exit_counters[0]; i++)
    if (exit_counters[i].kind == kind)
      exit_counter_add(c, i, unit, resumable, 1);
  const char *v[5];
  host_values(c, v, unit, NULL);
  dmh_metric_add(host_family(c, "dmhost_unit_exit_with_error_total", DM_METRIC_COUNTER,
                             "process or resume calls of a unit that returned errors", 1, NULL, 0),
                 c->metrics_owner, v, 1);
}

void dmh_metrics_auto_resume(dm_ctx *c) {
  const char *v[5];
  host_values(c, v, NULL, NULL);
  dmh_metric_add(host_family(c, "dmhost_auto_resume_total", DM_METRIC_COUNTER,
                             "auto-resume attempts of a subtask paused by a resumable error", 0,
                             NULL, 0),
                 c->metrics_owner, v, 1);
}

void dmh_metrics_unit_swap(dm_ctx *c, const char *unit, bool ok) {
  const char *v[5];
  host_values(c, v, unit, ok ? "ok" : "refused");
  dmh_metric_add(host_family(c, "dmhost_unit_swaps_total", DM_METRIC_COUNTER,
                             "swap-unit (hot-swap) of a unit's build, by result", 2, NULL, 0),
                 c->metrics_owner, v, 1);
}

void dmh_metrics_unit_duration(dm_ctx *c, const char *unit, bool init, double seconds) {
  static const double init_b[] = {0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60};
  static const double proc_b[] = {0.01, 0.1, 1, 10, 60, 300, 1800, 3600, 21600, 86400};
  const char *v[5];
  host_values(c, v, unit, NULL);
  dmh_metric_family *f =
      init ? host_family(c, "dmhost_unit_init_duration_seconds", DM_METRIC_HISTOGRAM,
                         "time a unit's init took, seconds", 1, init_b,
                         (int)(sizeof init_b / sizeof init_b[0]))
           : host_family(c, "dmhost_unit_process_duration_seconds", DM_METRIC_HISTOGRAM,
                         "time a unit's process or resume call ran until it returned (finished, "
                         "paused or failed), seconds",
                         1, proc_b, (int)(sizeof proc_b / sizeof proc_b[0]));
  dmh_metric_observe(f, c->metrics_owner, v, seconds);
}

void dmh_metrics_operate_error(const char *worker, const char *type) {
  static const char *const labels[] = {"worker", "type"};
  dmh_metric_family *f;
  dm_error err;
  if (dmh_metrics_family(dmh_metrics_process(), "dm_worker_operate_error", DM_METRIC_COUNTER,
                         "number of different operate error", labels, 2, NULL, 0, &f, &err) < 0) {
    dmh_log(DM_LOG_WARN, "metrics", "%s", err.message);
    return;
  }
  const char *v[] = {worker ? worker : "", type};
  dmh_metric_add(f, 0, v, 1);
}
