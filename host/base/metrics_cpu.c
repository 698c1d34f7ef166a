/* DM's dm_worker_cpu_usage / dm_master_cpu_usage, see metrics.h: the process's CPU time over the
 * wall time between two readings, in percent, read by a collector at a scrape. */
#include <pthread.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "dmhost/sdk.h"
#include "metrics.h"

typedef struct cpu_usage {
  dmh_metric_family *f;
  int64_t window_ns;
  pthread_mutex_t lock; /* the last reading, for two renders at once */
  int64_t last_wall_ns, last_cpu_ns;
} cpu_usage;

static int64_t cpu_now_ns(clockid_t clk) {
  struct timespec ts;
  clock_gettime(clk, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* getrusage's user + system time, as DM reads it */
static int64_t cpu_process_ns(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0)
    return 0;
  return ((int64_t)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000 +
         ((int64_t)ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000;
}

static void cpu_collect(void *ud) {
  cpu_usage *c = ud;
  pthread_mutex_lock(&c->lock);
  int64_t wall = cpu_now_ns(CLOCK_MONOTONIC), cpu = cpu_process_ns();
  /* a new value once a window has passed (DM reads every 10 s), so scrapes close together do not
   * give the CPU of a few milliseconds */
  if (wall - c->last_wall_ns >= c->window_ns && wall > c->last_wall_ns) {
    dmh_metric_set(c->f, 0, NULL,
                   (double)(cpu - c->last_cpu_ns) / (double)(wall - c->last_wall_ns) * 100.0);
    c->last_wall_ns = wall;
    c->last_cpu_ns = cpu;
  }
  pthread_mutex_unlock(&c->lock);
}

int dmh_metrics_cpu_usage(dmh_metrics *r, const char *name, int window_ms, dm_error *err) {
  cpu_usage *c = calloc(1, sizeof *c);
  if (!c) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "no memory for the metric %s", name);
    return -1;
  }
  if (dmh_metrics_family(r, name, DM_METRIC_GAUGE, "the cpu usage of the process, percent", NULL, 0,
                         NULL, 0, &c->f, err) < 0) {
    free(c);
    return -1;
  }
  pthread_mutex_init(&c->lock, NULL);
  c->window_ns = (int64_t)window_ms * 1000000;
  c->last_wall_ns = cpu_now_ns(CLOCK_MONOTONIC);
  c->last_cpu_ns = cpu_process_ns();
  dmh_metric_set(c->f, 0, NULL, 0);
  if (dmh_metrics_collector_add(r, 0, cpu_collect, c) < 0) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "no memory for the metric %s", name);
    pthread_mutex_destroy(&c->lock);
    free(c);
    return -1;
  }
  return 0; /* c lives as long as the process's registry: owner 0 is never dropped */
}
