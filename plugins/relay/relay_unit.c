/*
 * The relay unit's ops table, its settings (the source file's `relay` group) and its status.
 * The work itself is in relay_stream.c. A relay never finishes: process returns on stop (after a
 * flush and a relay.meta write) or on an error retrying cannot fix.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmhost/fs.h"
#include "dmhost/sdk.h"
#include "dmhost/settings.h"
#include "relay_internal.h"

#define RELAY_UNIT_VERSION "0.1.0"

static int unit_read_settings(relay_unit *u, relay_settings *s, dm_error *err) {
  memset(s, 0, sizeof *s);
  /* the source file's server-id (the host's default for the source-id when it sets none),
   * unless the relay section sets its own */
  uint32_t source_sid = dm_host_source_server_id(u->host, u->ctx);
  int64_t sid = 0;
  if (!source_sid && u->host->cfg_int(u->ctx, "server-id", &sid) == DM_CFG_MISSING) {
    u->host->error_make(u->ctx, err, DM_ERR_CONFIG_INVALID, NULL,
                        "relay: this host (services version < 8) does not give the source file's "
                        "server-id: set `server-id` in the relay section");
    return -1;
  }
  if (dm_setting_int(u->host, u->ctx, "relay", "server-id", source_sid, 1, UINT32_MAX, &sid, err) <
          0 ||
      dm_setting_int(u->host, u->ctx, "relay", "heartbeat-period", 5, 1, 3600,
                     &s->heartbeat_period_s, err) < 0 ||
      dm_setting_int(u->host, u->ctx, "relay", "purge-interval", 3600, 0, 86400 * 365,
                     &s->purge_interval_s, err) < 0 ||
      dm_setting_int(u->host, u->ctx, "relay", "purge-expires", 0, 0, 24 * 365 * 10,
                     &s->purge_expires_h, err) < 0 ||
      dm_setting_int(u->host, u->ctx, "relay", "purge-remain-space", 15, 0, 1 << 20,
                     &s->purge_remain_space_gb, err) < 0 ||
      dm_setting_int(u->host, u->ctx, "relay", "status-interval", 2000, 50, 3600000,
                     &s->master_status_interval_ms, err) < 0 ||
      dm_setting_int(u->host, u->ctx, "relay", "backoff-max", 10, 1, 3600, &s->backoff_max_ms,
                     err) < 0 ||
      dm_setting_int(u->host, u->ctx, "relay", "buffer-size", 1024, 64, 1 << 20, &s->buffer_kb,
                     err) < 0)
    return -1;
  s->server_id = (uint32_t)sid;
  s->backoff_max_ms *= 1000;
  const char *fs = "flush";
  dm_cfg_result rc = u->host->cfg_string(u->ctx, "fsync", &fs);
  if (rc == DM_CFG_WRONG_TYPE || strcmp(fs, "flush") == 0)
    s->fsync_policy = RELAY_FSYNC_FLUSH;
  else if (strcmp(fs, "rotate") == 0)
    s->fsync_policy = RELAY_FSYNC_ROTATE;
  else if (strcmp(fs, "never") == 0)
    s->fsync_policy = RELAY_FSYNC_NEVER;
  if (rc == DM_CFG_WRONG_TYPE ||
      (strcmp(fs, "flush") != 0 && strcmp(fs, "rotate") != 0 && strcmp(fs, "never") != 0)) {
    u->host->error_make(u->ctx, err, DM_ERR_CONFIG_INVALID, NULL,
                        "relay.fsync: expected \"flush\", \"rotate\" or \"never\"");
    return -1;
  }
  s->binlog_name = NULL;
  s->binlog_gtid = NULL;
  if (u->host->cfg_string(u->ctx, "binlog-name", &s->binlog_name) == DM_CFG_WRONG_TYPE ||
      u->host->cfg_string(u->ctx, "binlog-gtid", &s->binlog_gtid) == DM_CFG_WRONG_TYPE) {
    u->host->error_make(u->ctx, err, DM_ERR_CONFIG_INVALID, NULL,
                        "relay.binlog-name / relay.binlog-gtid: expected a string");
    return -1;
  }
  s->send_annotate_rows = true;
  if (u->host->cfg_bool(u->ctx, "send-annotate-rows", &s->send_annotate_rows) ==
      DM_CFG_WRONG_TYPE) {
    u->host->error_make(u->ctx, err, DM_ERR_CONFIG_INVALID, NULL,
                        "relay.send-annotate-rows: expected true or false");
    return -1;
  }
  return 0;
}

static int relay_init(const dm_host_services *host, dm_ctx *ctx, void **self, dm_error *err) {
  relay_unit *u = calloc(1, sizeof *u);
  if (!u) {
    host->error_make(ctx, err, DM_ERR_NO_MEMORY, NULL, "relay: no memory");
    return -1;
  }
  u->host = host;
  u->ctx = ctx;
  const char *dir = host->relay_dir(ctx);
  if (!dir || !dir[0]) {
    host->error_make(ctx, err, DM_ERR_CONFIG_MISSING, NULL, "relay: the source %s has no relay-dir",
                     host->source_id(ctx));
    free(u);
    return -1;
  }
  dm_strlcpy(u->relay_dir, dir, sizeof u->relay_dir);
  if (unit_read_settings(u, &u->set, err) < 0) {
    free(u);
    return -1;
  }
  u->file_mode = (mode_t)dm_host_file_mode(host, ctx);
  if (dm_fs_mkdir_p(u->relay_dir, dm_fs_dir_mode(u->file_mode)) < 0) {
    host->error_make(ctx, err, DM_ERR_IO, strerror(errno), "relay: cannot create %s", u->relay_dir);
    free(u);
    return -1;
  }
  pthread_mutex_init(&u->st.lock, NULL);
  pthread_mutex_init(&u->reader_lock, NULL);
  u->st.stage = "new";
  relay_metrics_init(u);
  *self = u;
  return 0;
}

static int relay_is_fresh(void *self, bool *fresh, dm_error *err) {
  relay_unit *u = self;
  char sub[RELAY_SUBDIR_MAX], dir[RELAY_DIR_MAX];
  if (dm_relay_index_last(u->relay_dir, sub, sizeof sub, err) < 0)
    return -1;
  *fresh = true;
  if (!sub[0])
    return 0;
  snprintf(dir, sizeof dir, "%s/%s", u->relay_dir, sub);
  relay_meta m;
  int rc = dm_relay_meta_read(dir, &m, err);
  if (rc < 0)
    return -1;
  *fresh = rc == 0;
  return 0;
}

static void relay_process(void *self, dm_result *result) {
  relay_unit *u = self;
  pthread_mutex_lock(&u->reader_lock);
  u->killed = false;
  pthread_mutex_unlock(&u->reader_lock);
  relay_stream_run(u, result);
}

static void relay_pause(void *self) {
  (void)self; /* process closed the stream and the files before returning */
}

static int relay_update(void *self, dm_error *err) {
  relay_unit *u = self;
  relay_settings s;
  if (unit_read_settings(u, &s, err) < 0)
    return -1;
  u->set = s;
  return 0;
}

static void relay_status_fn(void *self, dm_status_sink *sink) {
  relay_unit *u = self;
  relay_status *st = &u->st;
  pthread_mutex_lock(&st->lock);
  dm_position master = st->master, relay = st->relay;
  bool has_master = st->has_master, has_relay = st->has_relay, caught = st->caught_up;
  char sub[RELAY_SUBDIR_MAX];
  dm_strlcpy(sub, st->subdir, sizeof sub);
  const char *stage = st->stage;
  pthread_mutex_unlock(&st->lock);
  if (has_master)
    sink->put_position(sink, DM_STATUS_MASTER_BINLOG, &master);
  if (has_relay)
    sink->put_position(sink, DM_STATUS_RELAY_BINLOG, &relay);
  sink->put_str(sink, "relaySubDir", sub);
  sink->put_bool(sink, DM_STATUS_RELAY_CATCH_UP, has_master && has_relay && caught);
  sink->put_str(sink, "connection", stage);
  sink->put_int(sink, "events", (int64_t)__atomic_load_n(&st->events, __ATOMIC_RELAXED));
  sink->put_int(sink, "bytes", (int64_t)__atomic_load_n(&st->bytes, __ATOMIC_RELAXED));
  sink->put_int(sink, "reconnects", (int64_t)__atomic_load_n(&st->reconnects, __ATOMIC_RELAXED));
}

static void relay_close(void *self) {
  relay_unit *u = self;
  if (!u)
    return;
  pthread_mutex_destroy(&u->st.lock);
  pthread_mutex_destroy(&u->reader_lock);
  free(u);
}

static void relay_kill(void *self) {
  relay_unit *u = self;
  pthread_mutex_lock(&u->reader_lock);
  u->killed = true;
  pthread_mutex_unlock(&u->reader_lock);
  relay_interrupt(u); /* shuts the socket down */
}

static const dm_unit_descriptor relay_descriptor = {
    DM_UNIT_DESCRIPTOR_HEADER,
    .kind = DM_UNIT_RELAY,
    .name = "dmhost-relay",
    .version = RELAY_UNIT_VERSION,
    .ops =
        {
            .init = relay_init,
            .process = relay_process,
            .pause = relay_pause,
            .resume = relay_process,
            .close = relay_close,
            .kill = relay_kill,
            .is_fresh_task = relay_is_fresh,
            .status = relay_status_fn,
            .update = relay_update,
        },
};

DM_UNIT_EXPORT(relay_descriptor)
