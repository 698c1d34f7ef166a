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

/*
 * A collector is called at each render, before the families are written, to set gauges that are
 * read rather than pushed (the stage of a subtask). It runs under the registry's collector lock:
 * it may update families, never render or drop. Returns 0, or -1 (no memory).
 */
typedef void (*dmh_metrics_collector)(void *ud);
int dmh_metrics_collector_add(dmh_metrics *r, uint64_t owner, dmh_metrics_collector fn, void *ud);

/* Remove every series and collector of `owner`; returns once no collector of it is running. */
void dmh_metrics_drop_owner(dmh_metrics *r, uint64_t owner);

/* The exposition (malloc'd, NUL-terminated, *len without the NUL), or NULL without memory. */
char *dmh_metrics_render(dmh_metrics *r, size_t *len);

#endif /* DMH_METRICS_H */
