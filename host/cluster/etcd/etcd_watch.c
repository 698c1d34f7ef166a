/*
 * The etcd client's watch: one streaming POST to <endpoint>/v3/watch, the gateway answering one
 * JSON object per line ({"result": WatchResponse} or {"error": ...}), reopened at the next member
 * from the revision after the last one delivered when the stream breaks.
 */
#define DMH_ETCD_INTERNAL
#include "etcd.h"

#include <curl/curl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "dmhost/sdk.h"

/* One line of the stream may not exceed this (a batch of events: etcd caps a message at 2 MiB). */
#define WATCH_LINE_MAX (64u << 20)

typedef enum watch_end {
  WATCH_GOING = 0,
  WATCH_BROKEN,  /* reconnect elsewhere */
  WATCH_STOPPED, /* fn or the stop flag ended it */
  WATCH_FAILED,  /* err is set */
} watch_end;

typedef struct watch_state {
  dmh_etcd_watch_opts *opts;
  dmh_etcd_watch_fn fn;
  void *arg;
  dm_error *err;
  const char *endpoint;
  CURL *h;
  long status;   /* HTTP status, read at the first byte */
  etcd_buf line; /* the bytes of the current, unfinished line (or a non-200 body) */
  int created;   /* the stream was set up: a member took the watch */
  int renew;     /* the token was refused: authenticate again before the next stream */
  int renewed;   /* a stream since the last renewal was refused too: the user is refused */
  char *token;   /* the token the stream was opened with (NULL: no user) */
  char errbuf[CURL_ERROR_SIZE];
  watch_end end;
  char cause[DM_ERROR_RAW_MAX]; /* why the stream broke */
} watch_state;

static long watch_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int watch_stop_set(const dmh_etcd_watch_opts *opts) {
  return opts->stop && atomic_load(opts->stop);
}

static void watch_events_free(dmh_etcd_event *evs, size_t n) {
  for (size_t i = 0; i < n; i++) {
    dmh_etcd_kv_free(&evs[i].kv);
    dmh_etcd_kv_free(&evs[i].prev_kv);
  }
  free(evs);
}

/* The events of one WatchResponse to fn; next_revision moves past them. */
static void watch_deliver(watch_state *st, json_object *arr) {
  size_t n = json_object_array_length(arr);
  dmh_etcd_event *evs = calloc(n ? n : 1, sizeof *evs);
  int ok = evs != NULL;
  for (size_t i = 0; ok && i < n; i++) {
    json_object *e = json_object_array_get_idx(arr, i), *v = NULL;
    /* PUT is etcd's zero value: the gateway omits it. */
    evs[i].type =
        json_object_object_get_ex(e, "type", &v) && !strcmp(json_object_get_string(v), "DELETE")
            ? DMH_ETCD_EV_DELETE
            : DMH_ETCD_EV_PUT;
    ok = json_object_object_get_ex(e, "kv", &v) && etcd_kv_parse(v, &evs[i].kv) == 0;
    if (ok && json_object_object_get_ex(e, "prev_kv", &v)) {
      ok = etcd_kv_parse(v, &evs[i].prev_kv) == 0;
      evs[i].has_prev = ok;
    }
  }
  if (!ok) {
    watch_events_free(evs, n);
    dm_error_set(st->err, DM_ERR_ETCD_REPLY, NULL,
                 "watch at etcd %s: an event is not what etcd sends (bad base64 or no kv), or "
                 "memory ran out",
                 st->endpoint);
    st->end = WATCH_FAILED;
    return;
  }
  if (n) {
    /* Batches end at revision boundaries (etcd never splits a revision's events unless asked
     * to fragment), so the next revision to ask for after a break is the last one + 1. */
    st->opts->next_revision = evs[n - 1].kv.mod_revision + 1;
    if (st->fn(st->arg, evs, n) != 0)
      st->end = WATCH_STOPPED;
  }
  watch_events_free(evs, n);
}

static void watch_line(watch_state *st, const char *text) {
  json_object *o = json_tokener_parse(text), *res = NULL, *e = NULL, *v = NULL;
  if (!o || !json_object_is_type(o, json_type_object)) {
    snprintf(st->cause, sizeof st->cause, "%s: a line that is not JSON: %.120s", st->endpoint,
             text);
    st->end = WATCH_BROKEN;
  } else if (json_object_object_get_ex(o, "error", &e)) {
    /* The stream ended on the member's side: no leader (hasleader), the member stopping. */
    json_object *m = NULL;
    const char *msg =
        json_object_is_type(e, json_type_object) && json_object_object_get_ex(e, "message", &m)
            ? json_object_get_string(m)
            : json_object_get_string(e);
    snprintf(st->cause, sizeof st->cause, "%s: %s", st->endpoint, msg);
    st->end = WATCH_BROKEN;
  } else if (json_object_object_get_ex(o, "result", &res)) {
    json_object *hdr = NULL;
    int64_t rev =
        json_object_object_get_ex(res, "header", &hdr) ? etcd_json_int64(hdr, "revision") : 0;
    int64_t compact = etcd_json_int64(res, "compact_revision");
    if (json_object_object_get_ex(res, "created", &v) && json_object_get_boolean(v)) {
      st->created = 1;
      /* From "now": the watch delivers what comes after the member's revision at creation. */
      if (st->opts->next_revision <= 0)
        st->opts->next_revision = rev + 1;
    }
    if (json_object_object_get_ex(res, "canceled", &v) && json_object_get_boolean(v)) {
      const char *reason = json_object_object_get_ex(res, "cancel_reason", &v)
                               ? json_object_get_string(v)
                               : "no reason given";
      if (compact > 0) {
        dm_error_set(st->err, DM_ERR_ETCD_COMPACTED, "mvcc: required revision has been compacted",
                     "watch from revision %" PRId64 " at etcd %s: etcd compacted its history up "
                     "to revision %" PRId64 "; the oldest revision left to watch from is %" PRId64,
                     st->opts->next_revision, st->endpoint, compact, compact);
        st->end = WATCH_FAILED;
      } else if (strstr(reason, "no leader")) {
        snprintf(st->cause, sizeof st->cause, "%s: %s", st->endpoint, reason);
        st->end = WATCH_BROKEN;
      } else if (st->token && !st->renewed &&
                 (etcd_token_refused(reason) || strstr(reason, "permission denied"))) {
        /* etcd checks the token when the watch is created: an expired one reads as "permission
         * denied"; once with a new token before believing it */
        snprintf(st->cause, sizeof st->cause, "%s: %s", st->endpoint, reason);
        st->renew = 1;
        st->end = WATCH_BROKEN;
      } else {
        dm_error_set(st->err,
                     strstr(reason, "permission denied") ? DM_ERR_ETCD_AUTH : DM_ERR_ETCD_REQUEST,
                     reason, "watch at etcd %s was refused: %s", st->endpoint, reason);
        st->end = WATCH_FAILED;
      }
    } else if (json_object_object_get_ex(res, "events", &v) &&
               json_object_is_type(v, json_type_array)) {
      watch_deliver(st, v);
    }
  }
  json_object_put(o);
}

static size_t watch_write(char *data, size_t size, size_t nmemb, void *arg) {
  watch_state *st = arg;
  size_t len = size * nmemb;
  if (!st->status)
    curl_easy_getinfo(st->h, CURLINFO_RESPONSE_CODE, &st->status);
  if (etcd_buf_add(&st->line, data, len, WATCH_LINE_MAX) < 0) {
    snprintf(st->cause, sizeof st->cause, "%s: a watch answer over %u bytes", st->endpoint,
             WATCH_LINE_MAX);
    st->end = WATCH_BROKEN;
    return 0;
  }
  if (st->status != 200) /* kept whole for the error after the transfer */
    return len;
  char *start = st->line.p, *nl;
  while (st->end == WATCH_GOING &&
         (nl = memchr(start, '\n', st->line.n - (size_t)(start - st->line.p)))) {
    *nl = '\0';
    if (nl > start)
      watch_line(st, start);
    start = nl + 1;
  }
  st->line.n -= (size_t)(start - st->line.p);
  memmove(st->line.p, start, st->line.n + 1);
  return st->end == WATCH_GOING ? len : 0;
}

static int watch_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                          curl_off_t ulnow) {
  (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
  watch_state *st = arg;
  if (watch_stop_set(st->opts)) {
    st->end = WATCH_STOPPED;
    return 1;
  }
  return 0;
}

static json_object *watch_request(dmh_etcd_bytes key, const dmh_etcd_watch_opts *opts) {
  json_object *req = json_object_new_object(), *outer = json_object_new_object();
  if (!req || !outer || etcd_json_add_bytes(req, "key", key) < 0 ||
      (opts->prefix && etcd_json_add_prefix_end(req, key) < 0)) {
    json_object_put(req);
    json_object_put(outer);
    return NULL;
  }
  if (opts->next_revision > 0)
    etcd_json_add_int64(req, "start_revision", opts->next_revision);
  if (opts->prev_kv)
    json_object_object_add(req, "prev_kv", json_object_new_boolean(1));
  json_object_object_add(outer, "create_request", req);
  return outer;
}

/* One stream at endpoint i until it breaks or ends; st->end says how. */
static void watch_once(dmh_etcd *c, size_t i, dmh_etcd_bytes key, watch_state *st) {
  json_object *body = watch_request(key, st->opts);
  const char *json = body ? json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN) : NULL;
  if (!json) {
    json_object_put(body);
    dm_error_set(st->err, DM_ERR_NO_MEMORY, NULL, "watch: out of memory");
    st->end = WATCH_FAILED;
    return;
  }
  char url[1024];
  snprintf(url, sizeof url, "%s%s/watch", etcd_endpoint_at(c, i), etcd_api_at(c, i));
  struct curl_slist *hdr = NULL;
  char *stale = st->token;
  dm_error aerr;
  int arc = etcd_auth_header(c, i, st->renew, stale, &hdr, &st->token, &aerr);
  free(stale);
  if (arc < 0) {
    json_object_put(body);
    if (aerr.code == DM_ERR_ETCD_UNAVAILABLE) {
      snprintf(st->cause, sizeof st->cause, "%s", aerr.message);
      st->end = WATCH_BROKEN;
    } else {
      *st->err = aerr;
      st->end = WATCH_FAILED;
    }
    return;
  }
  st->renewed = st->renew;
  st->renew = 0;
  hdr = curl_slist_append(hdr, "Content-Type: application/json");
  /* Without it a member cut off from the leader keeps the stream open and silent. */
  hdr = curl_slist_append(hdr, "Grpc-Metadata-hasleader: true");
  CURL *h = st->h;
  curl_easy_reset(h);
  st->errbuf[0] = '\0';
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, st->errbuf);
  etcd_tls_setopt(c, h);
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, json);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, watch_write);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, st);
  curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, watch_progress);
  curl_easy_setopt(h, CURLOPT_XFERINFODATA, st);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, etcd_connect_timeout_ms(c));
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  /* A member frozen or cut off without a reset: found dead after ~11 s (2 s idle, then 9 probes
   * 1 s apart: the kernel's count, which curl 7.88 cannot set). */
  curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(h, CURLOPT_TCP_KEEPIDLE, 2L);
  curl_easy_setopt(h, CURLOPT_TCP_KEEPINTVL, 1L);
  st->endpoint = etcd_endpoint_at(c, i);
  st->status = 0;
  st->line.n = 0;
  st->created = 0;
  st->end = WATCH_GOING;
  CURLcode rc = curl_easy_perform(h);
  for (struct curl_slist *l = hdr; l; l = l->next) /* the token */
    memset(l->data, 0, strlen(l->data));
  curl_slist_free_all(hdr);
  json_object_put(body);
  if (st->created)
    st->renewed = 0; /* the token served: a later refusal may be an expiry again */
  if (rc != CURLE_OK && st->end == WATCH_GOING && etcd_tls_failure(rc, st->errbuf)) {
    dm_error_set(st->err, DM_ERR_ETCD_AUTH, st->errbuf,
                 "watch at etcd %s: TLS refused the connection (%s): the members' certificate is "
                 "not signed by --etcd-cacert or does not name the host, or etcd wants a client "
                 "certificate it signed",
                 st->endpoint, st->errbuf[0] ? st->errbuf : curl_easy_strerror(rc));
    st->end = WATCH_FAILED;
    return;
  }
  if (st->end != WATCH_GOING && st->end != WATCH_BROKEN)
    return;
  if (watch_stop_set(st->opts)) {
    st->end = WATCH_STOPPED;
    return;
  }
  if (rc == CURLE_OK && !st->status)
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &st->status);
  if (st->end == WATCH_GOING && rc == CURLE_OK && st->status != 200 && st->status != 503) {
    json_object *o = st->line.n ? json_tokener_parse(st->line.p) : NULL;
    json_object *m = NULL;
    const char *msg = o && json_object_is_type(o, json_type_object) &&
                              (json_object_object_get_ex(o, "message", &m) ||
                               json_object_object_get_ex(o, "error", &m))
                          ? json_object_get_string(m)
                          : NULL;
    if (st->status == 404 && etcd_api_fallback(c, i)) {
      snprintf(st->cause, sizeof st->cause, "%s: no /v3/watch, trying /v3beta/", st->endpoint);
      st->end = WATCH_BROKEN;
    } else if (st->token && !st->renewed && etcd_token_refused(msg)) {
      snprintf(st->cause, sizeof st->cause, "%s: %s", st->endpoint, msg);
      st->renew = 1;
      st->end = WATCH_BROKEN;
    } else {
      etcd_error_from_reply(o && json_object_is_type(o, json_type_object) ? o : NULL, st->status,
                            st->endpoint, "watch", st->err);
      st->end = WATCH_FAILED;
    }
    json_object_put(o);
    return;
  }
  if (st->end == WATCH_GOING && rc == CURLE_OK && st->status == 503) {
    /* {"error": {"message": "etcdserver: no leader", ...}}: the member lost its leader */
    json_object *o = st->line.n ? json_tokener_parse(st->line.p) : NULL, *e = NULL, *m = NULL;
    int has = o && json_object_object_get_ex(o, "error", &e) &&
              json_object_is_type(e, json_type_object) &&
              json_object_object_get_ex(e, "message", &m);
    snprintf(st->cause, sizeof st->cause, "%s: HTTP 503, %s", st->endpoint,
             has ? json_object_get_string(m) : "unavailable");
    json_object_put(o);
    st->end = WATCH_BROKEN;
  }
  if (st->end == WATCH_GOING) {
    snprintf(st->cause, sizeof st->cause, "%s: %s", st->endpoint,
             rc != CURLE_OK ? curl_easy_strerror(rc) : "the stream ended");
    st->end = WATCH_BROKEN;
  }
}

int dmh_etcd_watch(dmh_etcd *c, dmh_etcd_bytes key, dmh_etcd_watch_opts *opts, dmh_etcd_watch_fn fn,
                   void *arg, dm_error *err) {
  watch_state st = {.opts = opts, .fn = fn, .arg = arg, .err = err};
  opts->next_revision = opts->start_revision > 0 ? opts->start_revision : 0;
  opts->reconnects = 0;
  st.h = curl_easy_init();
  if (!st.h) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "watch: out of memory");
    return -1;
  }
  long give_up = opts->give_up_ms > 0 ? opts->give_up_ms : 30000;
  long deadline = watch_now_ms() + give_up;
  size_t n = etcd_endpoint_count(c), i = etcd_endpoint_current(c), failed_in_row = 0;
  int rc = 0;
  for (;;) {
    watch_once(c, i, key, &st);
    if (st.end == WATCH_STOPPED)
      break;
    if (st.end == WATCH_FAILED) {
      rc = -1;
      break;
    }
    /* Broken: the same revision again, at the next member (at the same one, with a new
     * token, when the token was refused). */
    if (st.created) {
      opts->reconnects++;
      if (opts->broken)
        opts->broken(opts->broken_arg, st.cause);
      deadline = watch_now_ms() + give_up;
      failed_in_row = 0;
    }
    if (st.renew)
      continue;
    i = (i + 1) % n;
    if (watch_now_ms() >= deadline) {
      dm_error_set(err, DM_ERR_ETCD_UNAVAILABLE, st.cause,
                   "watch from revision %" PRId64 ": no etcd member took it for %ld ms (%zu "
                   "endpoints)",
                   opts->next_revision, give_up, n);
      rc = -1;
      break;
    }
    /* Once round the list without a stream: wait a little before the next round. */
    if (++failed_in_row >= n) {
      failed_in_row = 0;
      for (int k = 0; k < 4 && !watch_stop_set(opts); k++)
        nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL);
    }
    if (watch_stop_set(opts))
      break;
  }
  curl_easy_cleanup(st.h);
  free(st.line.p);
  free(st.token);
  return rc;
}
