/* The metrics registry and its text exposition, see metrics.h. */
#include "metrics.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dmhost/clock.h"
#include "dmhost/sdk.h"
#include "log.h"

#define SERIES_HASH 64 /* chains per family: a family has a handful of series, rarely hundreds */

typedef struct series {
  struct series *chain; /* same hash */
  struct series *next;  /* creation order, for a stable exposition */
  uint64_t hash;
  uint64_t owner;
  char **values; /* n_labels strings, in one block with the pointers */
  double value;  /* counter, gauge; histogram: the sum */
  uint64_t count;
  uint64_t *buckets;    /* histogram: non-cumulative counts per bound, +Inf last */
  struct history *hist; /* the sampled family (dmh_metrics_history_start): its ring, or NULL */
} series;

/* A ring of samples: entry i is at base_ms + s[i].t. */
typedef struct history {
  int64_t base_ms;
  uint32_t cap, n, head; /* head: the oldest */
  struct {
    uint32_t t;
    float v;
  } s[];
} history;

struct dmh_metric_family {
  struct dmh_metric_family *next; /* [registry lock] */
  char *name, *help;
  dm_metric_type type;
  int n_labels;
  char *labels[DMH_METRICS_MAX_LABELS];
  int n_bounds;         /* histogram: finite bounds; buckets hold n_bounds + 1 (+Inf) */
  double *bounds;       /* histogram */
  pthread_mutex_t lock; /* guards everything below */
  series *hash[SERIES_HASH];
  series *first, *last;
  int n_series;
  bool warned_full, warned_misuse;
};

typedef struct collector {
  struct collector *next;
  uint64_t owner;
  dmh_metrics_collector fn;
  void *ud;
} collector;

struct dmh_metrics {
  pthread_mutex_t lock; /* families list */
  dmh_metric_family *families, *last;
  pthread_mutex_t collect_lock; /* collectors, and the render that calls them */
  collector *collectors;
  /* the history sampler: its thread and settings, set by start before the thread runs */
  pthread_mutex_t hist_lock; /* hist_stop, and the wait of the thread */
  pthread_cond_t hist_cv;
  bool hist_running, hist_stop;
  pthread_t hist_thread;
  char *hist_name;
  int hist_period_ms;
  uint32_t hist_cap;
  _Atomic(dmh_metric_family *) hist_family; /* found by the sampler once registered */
};

/* Prometheus' default buckets (client libraries' DefBuckets), in seconds */
static const double default_buckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};

dmh_metrics *dmh_metrics_new(void) {
  dmh_metrics *r = calloc(1, sizeof *r);
  if (!r)
    return NULL;
  pthread_mutex_init(&r->lock, NULL);
  pthread_mutex_init(&r->collect_lock, NULL);
  pthread_mutex_init(&r->hist_lock, NULL);
  dm_cond_init_monotonic(&r->hist_cv);
  return r;
}

static void series_free(series *s) {
  free(s->hist);
  free(s->buckets);
  free(s->values);
  free(s);
}

static void family_free(dmh_metric_family *f) {
  for (series *s = f->first, *n; s; s = n) {
    n = s->next;
    series_free(s);
  }
  for (int i = 0; i < f->n_labels; i++)
    free(f->labels[i]);
  free(f->bounds);
  free(f->name);
  free(f->help);
  pthread_mutex_destroy(&f->lock);
  free(f);
}

void dmh_metrics_free(dmh_metrics *r) {
  if (!r)
    return;
  dmh_metrics_history_stop(r);
  for (dmh_metric_family *f = r->families, *n; f; f = n) {
    n = f->next;
    family_free(f);
  }
  for (collector *c = r->collectors, *n; c; c = n) {
    n = c->next;
    free(c);
  }
  pthread_mutex_destroy(&r->lock);
  pthread_mutex_destroy(&r->collect_lock);
  pthread_mutex_destroy(&r->hist_lock);
  pthread_cond_destroy(&r->hist_cv);
  free(r->hist_name);
  free(r);
}

static pthread_once_t process_once = PTHREAD_ONCE_INIT;
static dmh_metrics *process_registry;
static void process_init(void) {
  process_registry = dmh_metrics_new();
}

dmh_metrics *dmh_metrics_process(void) {
  pthread_once(&process_once, process_init);
  return process_registry;
}

uint64_t dmh_metrics_owner_new(void) {
  static atomic_uint_least64_t next = 1;
  return atomic_fetch_add(&next, 1);
}

/* The family after `f` (the first with NULL): families are only appended, never freed before the
 * registry, so a walk needs the lock for each step only. */
static dmh_metric_family *family_next(dmh_metrics *r, dmh_metric_family *f) {
  pthread_mutex_lock(&r->lock);
  dmh_metric_family *n = f ? f->next : r->families;
  pthread_mutex_unlock(&r->lock);
  return n;
}

/* ---- names ---- */

static bool name_chars(const char *s) {
  if (!s || !*s)
    return false;
  for (const char *p = s; *p; p++) {
    char c = *p;
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
              (p > s && c >= '0' && c <= '9');
    if (!ok)
      return false;
  }
  return true;
}

bool dmh_metrics_valid_name(const char *name) {
  return name_chars(name);
}

bool dmh_metrics_valid_label(const char *name) {
  return name_chars(name) && strncmp(name, "__", 2) != 0;
}

static const char *type_name(dm_metric_type t) {
  switch (t) {
  case DM_METRIC_COUNTER:
    return "counter";
  case DM_METRIC_GAUGE:
    return "gauge";
  case DM_METRIC_HISTOGRAM:
    return "histogram";
  }
  return "?";
}

/* ---- families ---- */

static int family_check_labels(const char *name, dm_metric_type type,
                               const char *const *label_names, int n_labels, dm_error *err) {
  if (n_labels < 0 || n_labels > DMH_METRICS_MAX_LABELS || (n_labels > 0 && !label_names)) {
    dm_error_set(err, DM_ERR_METRIC_INVALID, NULL, "metric %s: %d labels (at most %d)", name,
                 n_labels, DMH_METRICS_MAX_LABELS);
    return -1;
  }
  for (int i = 0; i < n_labels; i++) {
    const char *l = label_names[i];
    if (!dmh_metrics_valid_label(l) || (type == DM_METRIC_HISTOGRAM && strcmp(l, "le") == 0)) {
      dm_error_set(err, DM_ERR_METRIC_INVALID, NULL,
                   "metric %s: label name \"%s\" is not a Prometheus label name "
                   "([a-zA-Z_][a-zA-Z0-9_]*, not __*, not le for a histogram)",
                   name, l ? l : "(null)");
      return -1;
    }
    for (int j = 0; j < i; j++)
      if (strcmp(label_names[j], l) == 0) {
        dm_error_set(err, DM_ERR_METRIC_INVALID, NULL, "metric %s: label \"%s\" given twice", name,
                     l);
        return -1;
      }
  }
  return 0;
}

static int family_check(const char *name, dm_metric_type type, const char *const *label_names,
                        int n_labels, const double *buckets, int n_buckets, dm_error *err) {
  if (!dmh_metrics_valid_name(name)) {
    dm_error_set(err, DM_ERR_METRIC_INVALID, NULL,
                 "metric name \"%s\" is not a Prometheus name ([a-zA-Z_][a-zA-Z0-9_]*; colons "
                 "are for recording rules)",
                 name ? name : "(null)");
    return -1;
  }
  if (type != DM_METRIC_COUNTER && type != DM_METRIC_GAUGE && type != DM_METRIC_HISTOGRAM) {
    dm_error_set(err, DM_ERR_METRIC_INVALID, NULL,
                 "metric %s: type %d is none of DM_METRIC_COUNTER, _GAUGE, _HISTOGRAM", name,
                 (int)type);
    return -1;
  }
  if (family_check_labels(name, type, label_names, n_labels, err) < 0)
    return -1;
  if (type != DM_METRIC_HISTOGRAM && n_buckets > 0) {
    dm_error_set(err, DM_ERR_METRIC_INVALID, NULL,
                 "metric %s: buckets are for a histogram, not a %s", name, type_name(type));
    return -1;
  }
  if (n_buckets < 0 || n_buckets > DMH_METRICS_MAX_BUCKETS || (n_buckets > 0 && !buckets)) {
    dm_error_set(err, DM_ERR_METRIC_INVALID, NULL, "metric %s: %d buckets (at most %d)", name,
                 n_buckets, DMH_METRICS_MAX_BUCKETS);
    return -1;
  }
  for (int i = 0; i < n_buckets; i++) {
    bool last_inf = i == n_buckets - 1 && isinf(buckets[i]) && buckets[i] > 0;
    if ((!isfinite(buckets[i]) && !last_inf) || (i > 0 && !(buckets[i] > buckets[i - 1]))) {
      dm_error_set(err, DM_ERR_METRIC_INVALID, NULL,
                   "metric %s: bucket %d (%g) is not finite and above the one before", name, i,
                   buckets[i]);
      return -1;
    }
  }
  return 0;
}

static bool family_same_labels(const dmh_metric_family *f, const char *const *label_names,
                               int n_labels) {
  if (f->n_labels != n_labels)
    return false;
  for (int i = 0; i < n_labels; i++)
    if (strcmp(f->labels[i], label_names[i]) != 0)
      return false;
  return true;
}

static dmh_metric_family *family_new(const char *name, dm_metric_type type, const char *help,
                                     const char *const *label_names, int n_labels,
                                     const double *buckets, int n_buckets) {
  dmh_metric_family *f = calloc(1, sizeof *f);
  if (!f)
    return NULL;
  pthread_mutex_init(&f->lock, NULL);
  f->type = type;
  f->name = strdup(name);
  f->help = strdup(help ? help : "");
  bool ok = f->name && f->help;
  for (int i = 0; i < n_labels && ok; i++) {
    ok = (f->labels[i] = strdup(label_names[i])) != NULL;
    f->n_labels = i + 1;
  }
  if (ok && type == DM_METRIC_HISTOGRAM) {
    if (n_buckets == 0) {
      buckets = default_buckets;
      n_buckets = (int)(sizeof default_buckets / sizeof default_buckets[0]);
    }
    if (isinf(buckets[n_buckets - 1]))
      n_buckets--; /* +Inf is always there */
    f->n_bounds = n_buckets;
    ok = (f->bounds = malloc(sizeof *f->bounds * (size_t)(n_buckets ? n_buckets : 1))) != NULL;
    if (ok)
      memcpy(f->bounds, buckets, sizeof *f->bounds * (size_t)n_buckets);
  }
  if (!ok) {
    family_free(f);
    return NULL;
  }
  return f;
}

static void labels_join(char *out, size_t len, const char *const *names, int n) {
  out[0] = '\0';
  for (int i = 0; i < n; i++) {
    size_t at = strlen(out);
    snprintf(out + at, len - at, "%s%s", i ? "," : "", names[i]);
  }
}

int dmh_metrics_family(dmh_metrics *r, const char *name, dm_metric_type type, const char *help,
                       const char *const *label_names, int n_labels, const double *buckets,
                       int n_buckets, dmh_metric_family **out, dm_error *err) {
  *out = NULL;
  if (!r) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory: no metrics registry for %s", name);
    return -1;
  }
  if (family_check(name, type, label_names, n_labels, buckets, n_buckets, err) < 0)
    return -1;
  pthread_mutex_lock(&r->lock);
  dmh_metric_family *f = r->families;
  while (f && strcmp(f->name, name) != 0)
    f = f->next;
  int rc = 0;
  if (f && (f->type != type || !family_same_labels(f, label_names, n_labels))) {
    char have[256], want[256];
    labels_join(have, sizeof have, (const char *const *)f->labels, f->n_labels);
    labels_join(want, sizeof want, label_names, n_labels);
    dm_error_set(err, DM_ERR_METRIC_CLASH, NULL,
                 "metric %s is registered as a %s with labels {%s}; it cannot also be a %s with "
                 "labels {%s}",
                 name, type_name(f->type), have, type_name(type), want);
    rc = -1;
  } else if (!f) {
    if (!(f = family_new(name, type, help, label_names, n_labels, buckets, n_buckets))) {
      dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory registering metric %s", name);
      rc = -1;
    } else if (r->last) {
      r->last->next = f;
      r->last = f;
    } else {
      r->families = r->last = f;
    }
  }
  pthread_mutex_unlock(&r->lock);
  if (rc == 0)
    *out = f;
  return rc;
}

/* ---- series ---- */

static uint64_t values_hash(const char *const *values, int n) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a, a 0xff between values */
  for (int i = 0; i < n; i++) {
    for (const unsigned char *p = (const unsigned char *)(values[i] ? values[i] : ""); *p; p++)
      h = (h ^ *p) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;
  }
  return h;
}

static bool values_equal(const series *s, const char *const *values, int n) {
  for (int i = 0; i < n; i++)
    if (strcmp(s->values[i], values[i] ? values[i] : "") != 0)
      return false;
  return true;
}

static series *series_new(const dmh_metric_family *f, uint64_t hash, uint64_t owner,
                          const char *const *values) {
  size_t len = sizeof(char *) * (size_t)f->n_labels;
  for (int i = 0; i < f->n_labels; i++)
    len += strlen(values[i] ? values[i] : "") + 1;
  series *s = calloc(1, sizeof *s);
  if (!s || !(s->values = malloc(len ? len : 1))) {
    free(s);
    return NULL;
  }
  char *p = (char *)(s->values + f->n_labels);
  for (int i = 0; i < f->n_labels; i++) {
    const char *v = values[i] ? values[i] : "";
    size_t n = strlen(v) + 1;
    memcpy(p, v, n);
    s->values[i] = p;
    p += n;
  }
  if (f->type == DM_METRIC_HISTOGRAM &&
      !(s->buckets = calloc((size_t)f->n_bounds + 1, sizeof *s->buckets))) {
    series_free(s);
    return NULL;
  }
  s->hash = hash;
  s->owner = owner;
  return s;
}

/* The series of `values`, created on first use; NULL when the family is full or out of memory.
 * With f->lock held. */
static series *series_get(dmh_metric_family *f, uint64_t owner, const char *const *values) {
  uint64_t h = values_hash(values, f->n_labels);
  series **slot = &f->hash[h % SERIES_HASH];
  for (series *s = *slot; s; s = s->chain)
    if (s->hash == h && values_equal(s, values, f->n_labels))
      return s;
  series *s = f->n_series < DMH_METRICS_MAX_SERIES ? series_new(f, h, owner, values) : NULL;
  if (!s) {
    if (!f->warned_full) {
      f->warned_full = true;
      dmh_log(DM_LOG_WARN, "metrics",
              "metric %s: %d series (or no memory): updates of new label values are dropped; a "
              "label should not take unbounded values (a row key, a timestamp)",
              f->name, f->n_series);
    }
    return NULL;
  }
  s->chain = *slot;
  *slot = s;
  if (f->last)
    f->last->next = s;
  else
    f->first = s;
  f->last = s;
  f->n_series++;
  return s;
}

static void family_misuse(dmh_metric_family *f, const char *what, double v) {
  if (f->warned_misuse)
    return;
  f->warned_misuse = true;
  dmh_log(DM_LOG_WARN, "metrics", "metric %s (%s): %s %g ignored (logged once)", f->name,
          type_name(f->type), what, v);
}

void dmh_metric_add(dmh_metric_family *f, uint64_t owner, const char *const *values, double v) {
  if (!f)
    return;
  pthread_mutex_lock(&f->lock);
  if (f->type == DM_METRIC_HISTOGRAM || (f->type == DM_METRIC_COUNTER && !(v >= 0))) {
    family_misuse(f, f->type == DM_METRIC_HISTOGRAM ? "add" : "a negative or NaN add of", v);
  } else {
    series *s = series_get(f, owner, values);
    if (s)
      s->value += v;
  }
  pthread_mutex_unlock(&f->lock);
}

void dmh_metric_set(dmh_metric_family *f, uint64_t owner, const char *const *values, double v) {
  if (!f)
    return;
  pthread_mutex_lock(&f->lock);
  if (f->type != DM_METRIC_GAUGE) {
    family_misuse(f, "set", v);
  } else {
    series *s = series_get(f, owner, values);
    if (s)
      s->value = v;
  }
  pthread_mutex_unlock(&f->lock);
}

void dmh_metric_observe(dmh_metric_family *f, uint64_t owner, const char *const *values, double v) {
  if (!f)
    return;
  pthread_mutex_lock(&f->lock);
  if (f->type != DM_METRIC_HISTOGRAM || isnan(v)) {
    family_misuse(f, "observe", v);
  } else {
    series *s = series_get(f, owner, values);
    if (s) {
      int i = 0;
      while (i < f->n_bounds && v > f->bounds[i])
        i++;
      s->buckets[i]++;
      s->count++;
      s->value += v;
    }
  }
  pthread_mutex_unlock(&f->lock);
}

/* ---- owners and collectors ---- */

int dmh_metrics_collector_add(dmh_metrics *r, uint64_t owner, dmh_metrics_collector fn, void *ud) {
  collector *c = calloc(1, sizeof *c);
  if (!c)
    return -1;
  c->owner = owner;
  c->fn = fn;
  c->ud = ud;
  pthread_mutex_lock(&r->collect_lock);
  c->next = r->collectors;
  r->collectors = c;
  pthread_mutex_unlock(&r->collect_lock);
  return 0;
}

static void family_drop_owner_locked(dmh_metric_family *f, uint64_t owner) {
  for (int b = 0; b < SERIES_HASH; b++)
    for (series **p = &f->hash[b]; *p;) {
      if ((*p)->owner == owner)
        *p = (*p)->chain;
      else
        p = &(*p)->chain;
    }
  series *prev = NULL;
  for (series *s = f->first, *n; s; s = n) {
    n = s->next;
    if (s->owner != owner) {
      prev = s;
      continue;
    }
    if (prev)
      prev->next = n;
    else
      f->first = n;
    if (f->last == s)
      f->last = prev;
    f->n_series--;
    series_free(s);
  }
}

static void family_drop_owner(dmh_metric_family *f, uint64_t owner) {
  pthread_mutex_lock(&f->lock);
  family_drop_owner_locked(f, owner);
  pthread_mutex_unlock(&f->lock);
}

void dmh_metric_set_all(dmh_metric_family *f, uint64_t owner, const char *const *values,
                        const double *v, int n) {
  if (!f)
    return;
  pthread_mutex_lock(&f->lock);
  if (f->type != DM_METRIC_GAUGE) {
    family_misuse(f, "set", n > 0 ? v[0] : 0);
  } else {
    family_drop_owner_locked(f, owner);
    for (int i = 0; i < n; i++) {
      series *s = series_get(f, owner, values + (size_t)i * (size_t)f->n_labels);
      if (s)
        s->value = v[i];
    }
  }
  pthread_mutex_unlock(&f->lock);
}

void dmh_metrics_drop_owner(dmh_metrics *r, uint64_t owner) {
  if (!r)
    return;
  pthread_mutex_lock(&r->collect_lock); /* waits for a render calling them */
  for (collector **p = &r->collectors; *p;) {
    if ((*p)->owner == owner) {
      collector *c = *p;
      *p = c->next;
      free(c);
    } else {
      p = &(*p)->next;
    }
  }
  pthread_mutex_unlock(&r->collect_lock);
  for (dmh_metric_family *f = family_next(r, NULL); f; f = family_next(r, f))
    family_drop_owner(f, owner);
}

/* ---- exposition ---- */

typedef struct out_buf {
  char *p;
  size_t len, cap;
  bool failed;
} out_buf;

static void out_mem(out_buf *b, const char *s, size_t n) {
  if (b->failed)
    return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 8192;
    while (cap < b->len + n + 1)
      cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
      b->failed = true;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

static void out_str(out_buf *b, const char *s) {
  out_mem(b, s, strlen(s));
}

/* HELP escapes \ and newline; a label value escapes " too. */
static void out_escaped(out_buf *b, const char *s, bool quote) {
  const char *run = s;
  for (const char *p = s; *p; p++) {
    const char *rep = *p == '\\' ? "\\\\" : *p == '\n' ? "\\n" : quote && *p == '"' ? "\\\"" : NULL;
    if (!rep)
      continue;
    out_mem(b, run, (size_t)(p - run));
    out_str(b, rep);
    run = p + 1;
  }
  out_str(b, run);
}

/* A float as Prometheus reads it: the shorter of %.15g and %.17g that reads back the same. */
static void fmt_double(double v, char *buf, size_t len) {
  if (isnan(v))
    snprintf(buf, len, "NaN");
  else if (isinf(v))
    snprintf(buf, len, v > 0 ? "+Inf" : "-Inf");
  else {
    snprintf(buf, len, "%.15g", v);
    if (strtod(buf, NULL) != v)
      snprintf(buf, len, "%.17g", v);
  }
}

/* name{labels[,le="x"]} value */
static void out_sample(out_buf *b, const dmh_metric_family *f, const series *s, const char *suffix,
                       const char *le, const char *value) {
  out_str(b, f->name);
  out_str(b, suffix);
  if (f->n_labels > 0 || le) {
    out_str(b, "{");
    for (int i = 0; i < f->n_labels; i++) {
      out_str(b, i ? "," : "");
      out_str(b, f->labels[i]);
      out_str(b, "=\"");
      out_escaped(b, s->values[i], true);
      out_str(b, "\"");
    }
    if (le) {
      out_str(b, f->n_labels ? ",le=\"" : "le=\"");
      out_str(b, le);
      out_str(b, "\"");
    }
    out_str(b, "}");
  }
  out_str(b, " ");
  out_str(b, value);
  out_str(b, "\n");
}

static void out_family(out_buf *b, dmh_metric_family *f) {
  char v[48], le[48];
  pthread_mutex_lock(&f->lock);
  if (f->first) { /* a family without series says nothing (its labels would be unknown) */
    out_str(b, "# HELP ");
    out_str(b, f->name);
    out_str(b, " ");
    out_escaped(b, f->help, false);
    out_str(b, "\n# TYPE ");
    out_str(b, f->name);
    out_str(b, " ");
    out_str(b, type_name(f->type));
    out_str(b, "\n");
  }
  for (const series *s = f->first; s; s = s->next) {
    if (f->type != DM_METRIC_HISTOGRAM) {
      fmt_double(s->value, v, sizeof v);
      out_sample(b, f, s, "", NULL, v);
      continue;
    }
    uint64_t cum = 0;
    for (int i = 0; i <= f->n_bounds; i++) {
      if (i < f->n_bounds)
        fmt_double(f->bounds[i], le, sizeof le);
      else
        snprintf(le, sizeof le, "+Inf");
      cum += s->buckets[i];
      snprintf(v, sizeof v, "%llu", (unsigned long long)cum);
      out_sample(b, f, s, "_bucket", le, v);
    }
    fmt_double(s->value, v, sizeof v);
    out_sample(b, f, s, "_sum", NULL, v);
    snprintf(v, sizeof v, "%llu", (unsigned long long)s->count);
    out_sample(b, f, s, "_count", NULL, v);
  }
  pthread_mutex_unlock(&f->lock);
}

char *dmh_metrics_render(dmh_metrics *r, size_t *len) {
  pthread_mutex_lock(&r->collect_lock);
  for (collector *c = r->collectors; c; c = c->next)
    c->fn(c->ud);
  pthread_mutex_unlock(&r->collect_lock);
  out_buf b = {0};
  out_mem(&b, "", 0);
  for (dmh_metric_family *f = family_next(r, NULL); f; f = family_next(r, f))
    out_family(&b, f);
  if (b.failed) {
    free(b.p);
    return NULL;
  }
  if (len)
    *len = b.len;
  return b.p;
}

/* ---- history ---- */

static void history_push(series *s, uint32_t cap, int64_t now_ms, double v) {
  history *h = s->hist;
  if (!h) {
    if (!(h = s->hist = calloc(1, sizeof *h + sizeof h->s[0] * cap)))
      return; /* no memory: no history for this series, the exposition goes on */
    h->cap = cap;
    h->base_ms = now_ms;
  }
  if (now_ms < h->base_ms) /* the wall clock went back: start over rather than lie about order */
    h->n = h->head = 0, h->base_ms = now_ms;
  if (now_ms - h->base_ms > (int64_t)(UINT32_MAX / 2)) { /* 24 days on: rebase at the oldest */
    int64_t base = h->n ? h->base_ms + h->s[h->head].t : now_ms;
    for (uint32_t i = 0; i < h->n; i++) {
      uint32_t k = (h->head + i) % h->cap;
      int64_t t = h->base_ms + h->s[k].t - base;
      h->s[k].t = t > 0 ? (uint32_t)t : 0;
    }
    h->base_ms = base;
  }
  uint32_t at = (h->head + h->n) % h->cap;
  if (h->n == h->cap)
    h->head = (h->head + 1) % h->cap;
  else
    h->n++;
  h->s[at].t = (uint32_t)(now_ms - h->base_ms);
  h->s[at].v = (float)v;
}

static dmh_metric_family *history_family(dmh_metrics *r) {
  dmh_metric_family *f = atomic_load(&r->hist_family);
  if (f || !r->hist_name)
    return f;
  for (f = family_next(r, NULL); f && strcmp(f->name, r->hist_name) != 0; f = family_next(r, f))
    ;
  if (f && f->type == DM_METRIC_GAUGE)
    atomic_store(&r->hist_family, f); /* families live as long as the registry */
  return f && f->type == DM_METRIC_GAUGE ? f : NULL;
}

void dmh_metrics_history_sample(dmh_metrics *r, int64_t unix_ms) {
  dmh_metric_family *f = history_family(r);
  if (!f)
    return;
  pthread_mutex_lock(&f->lock);
  for (series *s = f->first; s; s = s->next)
    history_push(s, r->hist_cap, unix_ms, s->value);
  pthread_mutex_unlock(&f->lock);
}

static int64_t history_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *history_thread(void *arg) {
  dmh_metrics *r = arg;
  struct timespec next;
  clock_gettime(CLOCK_MONOTONIC, &next);
  pthread_mutex_lock(&r->hist_lock);
  while (!r->hist_stop) {
    pthread_mutex_unlock(&r->hist_lock);
    dmh_metrics_history_sample(r, history_now_ms());
    pthread_mutex_lock(&r->hist_lock);
    /* ticks at fixed times: a slow sample does not push the next ones later */
    dm_timespec_add_ms(&next, r->hist_period_ms);
    while (!r->hist_stop && pthread_cond_timedwait(&r->hist_cv, &r->hist_lock, &next) == 0)
      ;
  }
  pthread_mutex_unlock(&r->hist_lock);
  return NULL;
}

int dmh_metrics_history_start(dmh_metrics *r, const char *name, int period_ms, int samples,
                              dm_error *err) {
  if (!r || r->hist_running || !dmh_metrics_valid_name(name) || period_ms < 10 || samples < 1 ||
      samples > 100000) {
    dm_error_set(err, DM_ERR_METRIC_INVALID, NULL,
                 "metric history of %s every %d ms, %d samples: %s", name ? name : "(null)",
                 period_ms, samples,
                 r && r->hist_running ? "a sampler runs already"
                                      : "a valid name, 10 ms or more, 1 to 100000 samples");
    return -1;
  }
  if (!(r->hist_name = strdup(name))) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory starting the history of %s", name);
    return -1;
  }
  r->hist_period_ms = period_ms;
  r->hist_cap = (uint32_t)samples;
  r->hist_stop = false;
  int rc = pthread_create(&r->hist_thread, NULL, history_thread, r);
  if (rc != 0) {
    dm_error_set(err, DM_ERR_INTERNAL, strerror(rc), "cannot start the history sampler of %s",
                 name);
    free(r->hist_name);
    r->hist_name = NULL;
    return -1;
  }
  r->hist_running = true;
  return 0;
}

void dmh_metrics_history_stop(dmh_metrics *r) {
  if (!r || !r->hist_running)
    return;
  pthread_mutex_lock(&r->hist_lock);
  r->hist_stop = true;
  pthread_cond_signal(&r->hist_cv);
  pthread_mutex_unlock(&r->hist_lock);
  pthread_join(r->hist_thread, NULL);
  r->hist_running = false;
}

int dmh_metrics_history_read(dmh_metrics *r, const char *const *match_labels,
                             const char *const *match_values, int n_match, int64_t since_ms,
                             dmh_metrics_history_fn fn, void *ud) {
  dmh_metric_family *f = r ? history_family(r) : NULL;
  if (!f)
    return 0;
  int idx[DMH_METRICS_MAX_LABELS], found = 0;
  for (int m = 0; m < n_match && m < DMH_METRICS_MAX_LABELS; m++) {
    idx[m] = -1;
    for (int i = 0; i < f->n_labels; i++)
      if (strcmp(f->labels[i], match_labels[m]) == 0)
        idx[m] = i;
    if (idx[m] < 0)
      return 0;
  }
  pthread_mutex_lock(&f->lock);
  dmh_metrics_sample *out = NULL;
  size_t out_cap = 0;
  for (series *s = f->first; s; s = s->next) {
    bool match = s->hist != NULL;
    for (int m = 0; m < n_match && match; m++)
      match = strcmp(s->values[idx[m]], match_values[m] ? match_values[m] : "") == 0;
    if (!match)
      continue;
    history *h = s->hist;
    if (out_cap < h->n) {
      free(out);
      if (!(out = malloc(sizeof *out * h->n))) {
        out_cap = 0;
        continue; /* no memory: the series is left out */
      }
      out_cap = h->n;
    }
    size_t n = 0;
    for (uint32_t i = 0; i < h->n; i++) {
      uint32_t k = (h->head + i) % h->cap;
      int64_t t = h->base_ms + h->s[k].t;
      if (t > since_ms)
        out[n++] = (dmh_metrics_sample){t, h->s[k].v};
    }
    fn(ud, (const char *const *)s->values, f->n_labels, out, n);
    found++;
  }
  pthread_mutex_unlock(&f->lock);
  free(out);
  return found;
}
