/*
 * The metrics registry: families (a name, a type, a help text, label names, histogram buckets)
 * and their series (one per set of label values), rendered in Prometheus' text exposition format
 * 0.0.4 (docs/metrics.md). One registry per process serves /metrics (dmh_metrics_process); tests
 * make their own.
 *
 * Updates are cheap enough for a transaction's hot path from many threads: a family has a short
 * lock and a hash of its series; a series is allocated on the first use of its label values and
 * only then. Every series has an owner (a subtask, dmh_metrics_owner_new): when the subtask is
 * destroyed, dmh_metrics_drop_owner removes its series (and its collectors), so a scrape never
 * shows a task that is gone. Families live as long as the registry, so a handle to one stays valid.
 */
#ifndef DMH_METRICS_H
#define DMH_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dmhost/error.h"
#include "dmhost/host.h"

/* The Content-Type of the exposition. */
#define DMH_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
/* Label names of one family, host labels included. */
#define DMH_METRICS_MAX_LABELS 17
/* Histogram buckets of one family (+Inf not counted). */
#define DMH_METRICS_MAX_BUCKETS 64
/* Series of one family: past this, updates of new label values are dropped (logged once). */
#define DMH_METRICS_MAX_SERIES 10000

typedef struct dmh_metrics dmh_metrics;
typedef struct dmh_metric_family dmh_metric_family;

dmh_metrics *dmh_metrics_new(void);
void dmh_metrics_free(dmh_metrics *r);
/* The process's registry (created on first use, never freed): what /metrics serves. */
dmh_metrics *dmh_metrics_process(void);

/* A fresh owner id for the series of one subtask (never 0; 0 owns the process's own series). */
uint64_t dmh_metrics_owner_new(void);

/* Is `name` a valid metric name ([a-zA-Z_][a-zA-Z0-9_]*: the colons Prometheus allows are for its
 * recording rules, and promtool refuses them in a target's exposition) / label name (the same,
 * not starting with "__")? */
bool dmh_metrics_valid_name(const char *name);
bool dmh_metrics_valid_label(const char *name);

/*
 * The family `name`: created, or the one already registered with the same type and label names
 * (help and buckets of the first registration stay). `buckets` (histograms only; NULL/0: the
 * Prometheus defaults, 0.005 to 10 seconds) must be finite and increasing; +Inf is added. Returns
 * 0 and *out, or -1 with DM_ERR_METRIC_INVALID (a name, label or bucket list that is not valid)
 * or DM_ERR_METRIC_CLASH (the name is registered with another type or other labels).
 */
int dmh_metrics_family(dmh_metrics *r, const char *name, dm_metric_type type, const char *help,
                       const char *const *label_names, int n_labels, const double *buckets,
                       int n_buckets, dmh_metric_family **out, dm_error *err);

/*
 * Updates of the series with `values` (one per label name of the family; NULL counts as ""),
 * created for `owner` on first use. add: a counter or a gauge (a counter refuses a negative or
 * NaN amount, logged once per family); set: a gauge; observe: a histogram. An update of the wrong
 * kind for the family is ignored (logged once per family).
 */
void dmh_metric_add(dmh_metric_family *f, uint64_t owner, const char *const *values, double v);
void dmh_metric_set(dmh_metric_family *f, uint64_t owner, const char *const *values, double v);
void dmh_metric_observe(dmh_metric_family *f, uint64_t owner, const char *const *values, double v);

/* The gauge's series of `owner` become exactly these n: values holds n rows of the family's label
 * values, v their values; the owner's other series are removed. One step under the family's lock,
 * so a scrape sees the old set or the new one, never a gap (a state recomputed from scratch: the
 * master's view of its workers). */
void dmh_metric_set_all(dmh_metric_family *f, uint64_t owner, const char *const *values,
                        const double *v, int n);

/*
 * A collector is called at each render, before the families are written, to set gauges that are
 * read rather than pushed (the stage of a subtask). It runs under the registry's collector lock:
 * it may update families, never render or drop. Returns 0, or -1 (no memory).
 */
typedef void (*dmh_metrics_collector)(void *ud);
int dmh_metrics_collector_add(dmh_metrics *r, uint64_t owner, dmh_metrics_collector fn, void *ud);

/*
 * DM's process CPU gauge `name` (dm_worker_cpu_usage, dm_master_cpu_usage): the process's user +
 * system CPU time over the wall time since the previous value, in percent (100 = one core busy),
 * recomputed at a render once `window_ms` has passed (DM's 10 s) and held otherwise. A process
 * series (owner 0) with its collector; the state it keeps lives as long as the registry's owner 0
 * series, the process's. 0, or -1 with err (DM_ERR_NO_MEMORY, or the family's refusal).
 */
#define DMH_METRICS_CPU_WINDOW_MS 10000
int dmh_metrics_cpu_usage(dmh_metrics *r, const char *name, int window_ms, dm_error *err);

/* Remove every series and collector of `owner`; returns once no collector of it is running. */
void dmh_metrics_drop_owner(dmh_metrics *r, uint64_t owner);

/* The exposition (malloc'd, NUL-terminated, *len without the NUL), or NULL without memory. */
char *dmh_metrics_render(dmh_metrics *r, size_t *len);

/*
 * The history of one gauge family, kept by the registry: a sampler thread reads every series of
 * the family each `period_ms` and appends (unix time in ms, value) to a ring of `samples` entries
 * held in the series itself. So the history has one owner and one lock, the family's: an update,
 * a sample, a read and dmh_metrics_drop_owner all take it, and the ring is freed with its series
 * (a subtask destroyed takes its history with it; a new subtask of the same names starts empty).
 * A ring costs 8 bytes a sample (a float and a 32-bit offset in ms from the ring's base time),
 * allocated at the series' first sample. The daemon keeps dm_syncer_replication_lag_gauge
 * (DMH_METRICS_LAG) this way for GET /api/v1/dmhost/tasks/{task-name}/lag (docs/api.md): the value
 * sampled is the gauge the sync publishes, the one /metrics shows, not a second computation.
 */
#define DMH_METRICS_LAG "dm_syncer_replication_lag_gauge"
#define DMH_METRICS_LAG_PERIOD_MS 2000
#define DMH_METRICS_LAG_SAMPLES 300 /* 10 minutes */

/* Start the sampler of family `name` (registered now or later); one per registry. 0, or -1 with
 * DM_ERR_NO_MEMORY / DM_ERR_INTERNAL (the thread could not start) / DM_ERR_METRIC_INVALID (a
 * sampler runs already, bad period or size). Stopped by dmh_metrics_history_stop (the registry's
 * free stops it too). */
int dmh_metrics_history_start(dmh_metrics *r, const char *name, int period_ms, int samples,
                              dm_error *err);
void dmh_metrics_history_stop(dmh_metrics *r);
/* One sample of every series of the family now (the sampler's tick; tests call it). */
void dmh_metrics_history_sample(dmh_metrics *r, int64_t unix_ms);

typedef struct dmh_metrics_sample {
  int64_t unix_ms;
  double value;
} dmh_metrics_sample;
/* Called per series by dmh_metrics_history_read, under the family's lock: copy what is needed,
 * never call the registry. `values` are the series' label values (the family's label order),
 * `s` its samples after since_ms, oldest first. */
typedef void (*dmh_metrics_history_fn)(void *ud, const char *const *values, int n_labels,
                                       const dmh_metrics_sample *s, size_t n);
/* The history of the series of the sampled family whose labels `match_labels[i]` are
 * `match_values[i]` (n_match pairs; a label the family lacks matches nothing). Returns the number
 * of series given to fn (0: none sampled yet, or no sampler). */
int dmh_metrics_history_read(dmh_metrics *r, const char *const *match_labels,
                             const char *const *match_values, int n_match, int64_t since_ms,
                             dmh_metrics_history_fn fn, void *ud);

#endif /* DMH_METRICS_H */
