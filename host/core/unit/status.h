/*
 * Collecting a unit's status: the host side of dm_status_sink. Fields go into a JSON object (the
 * unit's part of query-status); positions and progress are also kept typed, for the supervisor's
 * relay catch-up wait, the hand-over between units and the progress line.
 */
#ifndef DMH_STATUS_H
#define DMH_STATUS_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "dmhost/unit.h"

#define DMH_STATUS_MAX_POSITIONS 8

typedef struct dmh_status {
  json_object *obj; /* owned */
  struct {
    char key[64];
    dm_position pos;
  } positions[DMH_STATUS_MAX_POSITIONS];
  int n_positions;
  bool has_progress;
  uint64_t done, total;
  char what[32];
  dm_status_sink sink;
} dmh_status;

void dmh_status_init(dmh_status *s);
void dmh_status_free(dmh_status *s);
bool dmh_status_position(const dmh_status *s, const char *key, dm_position *out);
bool dmh_status_bool(const dmh_status *s, const char *key, bool *out);

/* Rate and ETA from successive progress samples of one unit (owned by whoever samples). */
typedef struct dmh_rate {
  double last_t; /* seconds, monotonic; 0 = no sample yet */
  uint64_t last_done;
  double rate; /* smoothed items per second */
} dmh_rate;

/* Feed a sample; returns the smoothed rate. */
double dmh_rate_sample(dmh_rate *r, uint64_t done);
/* A unit's progress: what its status reported, with percent, rate and ETA worked out. */
typedef struct dmh_progress {
  uint64_t done, total;
  char what[32];  /* what is counted: "items", "rows", "bytes" */
  double percent; /* 0 when the total is unknown */
  double rate;    /* smoothed items per second (dmh_rate_sample) */
  double eta;     /* seconds left; -1: unknown */
} dmh_progress;

/* The progress of a status with progress, at a rate sampled by the caller. */
void dmh_progress_of(const dmh_status *s, double rate, dmh_progress *p);
/* {"done","total","unit","percent","rate","eta"} of p. */
json_object *dmh_progress_json(const dmh_progress *p);
double dmh_now_seconds(void);

#endif /* DMH_STATUS_H */
