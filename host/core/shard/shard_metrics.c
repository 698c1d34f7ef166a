/* DM's shard DDL metrics, see shard_metrics.h. Called on a change of the locks (rare): the
 * families are looked up by name each time. */
#include "shard_metrics.h"

#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "metrics.h"

static const char *const shard_labels[] = {"task", "type"};

static dmh_metric_family *shard_family(const char *name, dm_metric_type type, const char *help) {
  dmh_metric_family *f;
  dm_error err;
  if (dmh_metrics_family(dmh_metrics_process(), name, type, help, shard_labels, 2, NULL, 0, &f,
                         &err) < 0) {
    dmh_log(DM_LOG_WARN, "metrics", "%s", err.message);
    return NULL;
  }
  return f;
}

/* The index of `task` in the list, added when missing; -1 without memory. */
static long seen_index(char ***seen, size_t *n, const char *task) {
  for (size_t i = 0; i < *n; i++)
    if (strcmp((*seen)[i], task) == 0)
      return (long)i;
  char **grown = realloc(*seen, (*n + 1) * sizeof *grown);
  if (!grown)
    return -1;
  *seen = grown;
  if (!(grown[*n] = strdup(task)))
    return -1;
  return (long)(*n)++;
}

void dmh_shard_metrics_pending(const dmh_shard_keeper *k, uint64_t owner, char ***tasks_seen,
                               size_t *n_seen) {
  json_object *locks = dmh_shard_locks_json(k, NULL);
  if (!locks)
    return;
  size_t n_locks = json_object_array_length(locks);
  for (size_t i = 0; i < n_locks; i++) {
    json_object *t;
    if (json_object_object_get_ex(json_object_array_get_idx(locks, i), "task", &t))
      seen_index(tasks_seen, n_seen, json_object_get_string(t));
  }
  /* a task the keeper no longer holds (stop-task) loses its series, as DM removes them */
  size_t kept = 0;
  for (size_t i = 0; i < *n_seen; i++) {
    if (dmh_shard_has_task(k, (*tasks_seen)[i]))
      (*tasks_seen)[kept++] = (*tasks_seen)[i];
    else
      free((*tasks_seen)[i]);
  }
  *n_seen = kept;
  size_t n = *n_seen;
  const char **values = calloc(n * 4 + 1, sizeof *values);
  double *v = calloc(n * 2 + 1, sizeof *v);
  if (values && v) {
    for (size_t i = 0; i < n; i++) {
      values[4 * i] = values[4 * i + 2] = (*tasks_seen)[i];
      values[4 * i + 1] = "Un-synced";
      values[4 * i + 3] = "Synced";
    }
    for (size_t i = 0; i < n_locks; i++) {
      json_object *l = json_object_array_get_idx(locks, i), *t, *st;
      if (!json_object_object_get_ex(l, "task", &t) || !json_object_object_get_ex(l, "state", &st))
        continue;
      long at = seen_index(tasks_seen, n_seen, json_object_get_string(t));
      if (at >= 0 && (size_t)at < n)
        v[2 * at + (strcmp(json_object_get_string(st), "waiting") == 0 ? 0 : 1)] += 1;
    }
    dmh_metric_set_all(shard_family("dm_master_ddl_state_number", DM_METRIC_GAUGE,
                                    "number of pending DDL in different states, Un-synced "
                                    "(waiting all upstream), Synced (all upstream finished, "
                                    "waiting all downstream)"),
                       owner, values, v, (int)(2 * n));
  }
  free(values);
  free(v);
  json_object_put(locks);
}

void dmh_shard_metrics_error(const char *task, const char *type) {
  const char *v[] = {task, type};
  dmh_metric_add(shard_family("dm_master_shard_ddl_error", DM_METRIC_COUNTER,
                              "number of shard DDL lock/operation error"),
                 0, v, 1);
}

void dmh_shard_metrics_forget(uint64_t owner, char ***tasks_seen, size_t *n_seen) {
  dmh_metrics_drop_owner(dmh_metrics_process(), owner);
  for (size_t i = 0; i < *n_seen; i++)
    free((*tasks_seen)[i]);
  free(*tasks_seen);
  *tasks_seen = NULL;
  *n_seen = 0;
}
