#include "status.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "dmhost/sdk.h"

static dmh_status *status_of(dm_status_sink *sink) {
  return (dmh_status *)sink->host_data;
}

static void status_put_str(dm_status_sink *sink, const char *key, const char *value) {
  json_object_object_add(status_of(sink)->obj, key, json_object_new_string(value ? value : ""));
}
static void status_put_int(dm_status_sink *sink, const char *key, int64_t value) {
  json_object_object_add(status_of(sink)->obj, key, json_object_new_int64(value));
}
static void status_put_double(dm_status_sink *sink, const char *key, double value) {
  json_object_object_add(status_of(sink)->obj, key, json_object_new_double(value));
}
static void status_put_bool(dm_status_sink *sink, const char *key, bool value) {
  json_object_object_add(status_of(sink)->obj, key, json_object_new_boolean(value));
}

static void status_put_position(dm_status_sink *sink, const char *key, const dm_position *pos) {
  dmh_status *s = status_of(sink);
  char buf[DM_POSITION_NAME_MAX + 32], gkey[80];
  json_object_object_add(s->obj, key,
                         json_object_new_string(dm_position_format(pos, buf, sizeof buf)));
  snprintf(gkey, sizeof gkey, "%sGtid", key);
  json_object_object_add(s->obj, gkey, json_object_new_string(pos->gtid));
  int i;
  for (i = 0; i < s->n_positions; i++)
    if (strcmp(s->positions[i].key, key) == 0)
      break;
  if (i == DMH_STATUS_MAX_POSITIONS)
    return; /* more positions than the host reads: JSON only */
  if (i == s->n_positions)
    s->n_positions++;
  dm_strlcpy(s->positions[i].key, key, sizeof s->positions[i].key);
  s->positions[i].pos = *pos;
}

static void status_put_progress(dm_status_sink *sink, uint64_t done, uint64_t total,
                                const char *what) {
  dmh_status *s = status_of(sink);
  s->has_progress = true;
  s->done = done;
  s->total = total;
  dm_strlcpy(s->what, what ? what : "items", sizeof s->what);
}

void dmh_status_init(dmh_status *s) {
  memset(s, 0, sizeof *s);
  s->obj = json_object_new_object();
  s->sink.put_str = status_put_str;
  s->sink.put_int = status_put_int;
  s->sink.put_double = status_put_double;
  s->sink.put_bool = status_put_bool;
  s->sink.put_position = status_put_position;
  s->sink.put_progress = status_put_progress;
  s->sink.host_data = s;
}

void dmh_status_free(dmh_status *s) {
  json_object_put(s->obj);
  s->obj = NULL;
}

bool dmh_status_position(const dmh_status *s, const char *key, dm_position *out) {
  for (int i = 0; i < s->n_positions; i++)
    if (strcmp(s->positions[i].key, key) == 0) {
      *out = s->positions[i].pos;
      return true;
    }
  return false;
}

bool dmh_status_bool(const dmh_status *s, const char *key, bool *out) {
  json_object *v;
  if (!json_object_object_get_ex(s->obj, key, &v) || !json_object_is_type(v, json_type_boolean))
    return false;
  *out = json_object_get_boolean(v);
  return true;
}

double dmh_now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

double dmh_rate_sample(dmh_rate *r, uint64_t done) {
  double now = dmh_now_seconds();
  if (r->last_t > 0 && now - r->last_t >= 0.2 && done >= r->last_done) {
    double inst = (double)(done - r->last_done) / (now - r->last_t);
    /* exponential smoothing: steady enough for an ETA, quick to follow a real change */
    r->rate = r->rate > 0 ? 0.7 * r->rate + 0.3 * inst : inst;
    r->last_t = now;
    r->last_done = done;
  } else if (r->last_t == 0 || done < r->last_done) {
    r->last_t = now;
    r->last_done = done;
  }
  return r->rate;
}

void dmh_progress_of(const dmh_status *s, double rate, dmh_progress *p) {
  p->done = s->done;
  p->total = s->total;
  dm_strlcpy(p->what, s->what, sizeof p->what);
  p->percent = s->total ? 100.0 * (double)s->done / (double)s->total : 0.0;
  p->rate = rate;
  p->eta = (rate > 0 && s->total >= s->done) ? (double)(s->total - s->done) / rate : -1;
}

json_object *dmh_progress_json(const dmh_progress *p) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "done", json_object_new_int64((int64_t)p->done));
  json_object_object_add(o, "total", json_object_new_int64((int64_t)p->total));
  json_object_object_add(o, "unit", json_object_new_string(p->what));
  json_object_object_add(o, "percent", json_object_new_double(p->percent));
  json_object_object_add(o, "rate", json_object_new_double(p->rate));
  json_object_object_add(o, "eta", json_object_new_double(p->eta));
  return o;
}
