/*
 * The fake host: the host's own services over a dm_ctx of the tool's own, with the stop-token and
 * config-lookup slots wrapped so the checks can steer them (fake_host.h).
 */
#include "fake_host.h"

#include <errno.h>
#include <libconfig.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "config_util.h"
#include "dmhost/fs.h"
#include "dmhost/sdk.h"
#include "rules.h"
#include "stop_token.h"
#include "unit_ctx.h"

struct uc_host {
  char root[PATH_MAX];
  config_t cfg;
  bool have_cfg;
  const char *cfg_path;
  config_setting_t *section; /* the unit's section of the config, or NULL */
  char *task_name, *source_id, *task_mode, *meta_schema, *relay_dir;
  bool gtid;
  dmh_db_config from, target;
  bool have_from, have_target;
  /* `meta` of the config (DM's mysql-instances meta: where mode incremental starts); the rest of
   * the instance stays empty: no rules, every table but the system schemas allowed */
  dmh_task_instance instance;
  dmh_bal_rule bal; /* do-dbs: DM's block-allow-list do-dbs, else every schema but the system's */
  struct dmh_rules *rules;
  uint32_t later[3];
  int n_later;
  bool is_relay;

  dmh_stop_token token;
  _Atomic double fired_at;     /* ms, 0 while not fired */
  _Atomic double fire_look_at; /* fire at the first look from this moment (ms); 0: off */
  atomic_long looks;
  atomic_long fire_look_n; /* fire at this look (1-based); 0: off */
  bool own_root;           /* root was made here: removed at close */
  atomic_int lookups;      /* settings looked up since uc_host_fail_lookup */
  atomic_int fail_at;      /* answer this lookup with DM_CFG_WRONG_TYPE; 0: none */
};

/* The one fake host of the process (fake_host.h): the wrappers below reach it here. */
static uc_host *uc_the_host;

double uc_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---- the stop token, as the unit sees it ---- */

static void fake_look(void) {
  uc_host *h = uc_the_host;
  long n = atomic_fetch_add(&h->looks, 1) + 1;
  double at = atomic_load(&h->fire_look_at);
  long at_n = atomic_load(&h->fire_look_n);
  if (((at > 0 && uc_now_ms() >= at) || (at_n > 0 && n >= at_n)) && atomic_load(&h->fired_at) == 0)
    uc_host_fire(h);
}

static bool fake_stop_requested(dm_ctx *ctx) {
  (void)ctx;
  fake_look();
  return dmh_stop_token_fired(&uc_the_host->token);
}

static bool fake_wait_stop(dm_ctx *ctx, uint32_t ms) {
  (void)ctx;
  fake_look();
  /* In short slices, so a fire-at-look moment passing during a long wait is noticed. */
  double end = uc_now_ms() + ms;
  for (;;) {
    double left = end - uc_now_ms();
    if (left <= 0)
      return dmh_stop_token_fired(&uc_the_host->token);
    if (dmh_stop_token_wait(&uc_the_host->token, left > 50 ? 50 : (uint32_t)left + 1))
      return true;
    fake_look();
  }
}

static int fake_stop_fd(dm_ctx *ctx) {
  (void)ctx;
  fake_look();
  return uc_the_host->token.fd;
}

/* ---- config lookups: counted, the chosen one refused ---- */

static bool fake_refuse_lookup(void) {
  uc_host *h = uc_the_host;
  int n = atomic_fetch_add(&h->lookups, 1) + 1;
  return n == atomic_load(&h->fail_at);
}

static dm_host_services fake_services;

static dm_cfg_result fake_cfg_int(dm_ctx *ctx, const char *path, int64_t *out) {
  return fake_refuse_lookup() ? DM_CFG_WRONG_TYPE : dmh_host_services()->cfg_int(ctx, path, out);
}
static dm_cfg_result fake_cfg_bool(dm_ctx *ctx, const char *path, bool *out) {
  return fake_refuse_lookup() ? DM_CFG_WRONG_TYPE : dmh_host_services()->cfg_bool(ctx, path, out);
}
static dm_cfg_result fake_cfg_float(dm_ctx *ctx, const char *path, double *out) {
  return fake_refuse_lookup() ? DM_CFG_WRONG_TYPE : dmh_host_services()->cfg_float(ctx, path, out);
}
static dm_cfg_result fake_cfg_string(dm_ctx *ctx, const char *path, const char **out) {
  return fake_refuse_lookup() ? DM_CFG_WRONG_TYPE : dmh_host_services()->cfg_string(ctx, path, out);
}

const dm_host_services *uc_host_services(void) {
  return &fake_services;
}

/* ---- the config file ---- */

static const char *const fake_top_keys[] = {
    "name",      "source-id", "task-mode",       "meta-schema", "enable-gtid",
    "relay-dir", "from",      "target-database", "dump",        "load",
    "sync",      "relay",     "secret-key-path", "meta",        "do-dbs",
    NULL};

static int fake_read_config(uc_host *h, const char *path, uint32_t kind, const char *kind_name,
                            dm_error *err) {
  char abs[PATH_MAX];
  if (!realpath(path, abs)) {
    dm_error_set(err, DM_ERR_CONFIG_INVALID, strerror(errno), "config %s cannot be read: %s", path,
                 strerror(errno));
    return -1;
  }
  char *slash = strrchr(abs, '/');
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%.*s", (int)(slash - abs), abs);
  dmh_cfg_ctx c = {.path = path, .what = "unit-check config", .dir = dir, .err = err};
  config_init(&h->cfg);
  h->have_cfg = true;
  if (config_read_file(&h->cfg, path) != CONFIG_TRUE) {
    dm_error_set(err, DM_ERR_CONFIG_INVALID, config_error_text(&h->cfg), "%s:%d: %s", path,
                 config_error_line(&h->cfg), config_error_text(&h->cfg));
    return -1;
  }
  config_setting_t *root = config_root_setting(&h->cfg);
  const char *section = kind == DM_UNIT_CUSTOM ? kind_name : dmh_kind_name((dm_unit_kind)kind);
  /* a custom kind's section is allowed under its own name */
  const char *known[sizeof fake_top_keys / sizeof fake_top_keys[0] + 1];
  size_t n = 0;
  for (; fake_top_keys[n]; n++)
    known[n] = fake_top_keys[n];
  known[n++] = section;
  known[n] = NULL;
  if (dmh_cfg_check_keys(&c, root, known, NULL) < 0 ||
      dmh_cfg_get_string(&c, root, "name", DMH_CFG_NONEMPTY, &h->task_name) < 0 ||
      dmh_cfg_get_string(&c, root, "source-id", DMH_CFG_NONEMPTY, &h->source_id) < 0 ||
      dmh_cfg_get_string(&c, root, "task-mode", DMH_CFG_NONEMPTY, &h->task_mode) < 0 ||
      dmh_cfg_get_string(&c, root, "meta-schema", DMH_CFG_NONEMPTY, &h->meta_schema) < 0 ||
      dmh_cfg_get_bool(&c, root, "enable-gtid", &h->gtid) < 0 ||
      dmh_cfg_get_path(&c, root, "relay-dir", &h->relay_dir) < 0)
    return -1;
  if (dmh_cfg_task_meta(&c, root, &h->instance) < 0 ||
      dmh_cfg_get_string_list(&c, root, "do-dbs", &h->bal.do_dbs, &h->bal.n_do_dbs) < 0)
    return -1;
  if (h->bal.n_do_dbs) {
    h->bal.name = "do-dbs";
    h->instance.bal = &h->bal;
  }
  if (!(h->rules = dmh_rules_new(&h->instance, err)))
    return -1;
  if (config_setting_get_member(root, "from")) {
    if (dmh_cfg_get_db(&c, root, "from", &h->from) < 0)
      return -1;
    h->have_from = true;
  }
  if (config_setting_get_member(root, "target-database")) {
    if (dmh_cfg_get_db(&c, root, "target-database", &h->target) < 0)
      return -1;
    h->have_target = true;
  }
  h->section = section ? config_setting_get_member(root, section) : NULL;
  h->cfg_path = path;
  return 0;
}

/* The chain of the task mode, for unit_follows: the units after this kind. */
static int fake_chain(uc_host *h, uint32_t kind, dm_error *err) {
  if (h->is_relay)
    return 0;
  dmh_task_mode mode;
  if (dmh_task_mode_parse(h->task_mode, &mode) != 0) {
    dm_error_set(err, DM_ERR_CONFIG_INVALID, NULL,
                 "unit-check config: task-mode `%s` is none of DM's modes (all, full, "
                 "incremental, dump, load, load&sync)",
                 h->task_mode);
    return -1;
  }
  dm_unit_kind chain[3];
  int n = dmh_task_mode_chain(mode, chain);
  bool after = false;
  for (int i = 0; i < n; i++) {
    if (after)
      h->later[h->n_later++] = (uint32_t)chain[i];
    if ((uint32_t)chain[i] == kind)
      after = true;
  }
  return 0;
}

static char *fake_strdup_or(char *have, const char *def) {
  return have ? have : strdup(def);
}

int uc_host_open(const char *config_path, uint32_t kind, const char *kind_name, const char *root,
                 uc_host **out, dm_error *err) {
  *out = NULL;
  uc_host *h = calloc(1, sizeof *h);
  if (!h) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "unit-check: no memory for the fake host");
    return -1;
  }
  if (dmh_stop_token_init(&h->token) < 0) {
    free(h);
    dm_error_set(err, DM_ERR_INTERNAL, strerror(errno), "unit-check: no eventfd for the token");
    return -1;
  }
  uc_the_host = h;
  h->is_relay = kind == DM_UNIT_RELAY;
  static const char *const default_mode[] = {
      [DM_UNIT_DUMP] = "dump", [DM_UNIT_LOAD] = "load", [DM_UNIT_SYNC] = "incremental"};
  const char *mode = kind < 4 && default_mode[kind] ? default_mode[kind] : "all";
  if ((config_path && fake_read_config(h, config_path, kind, kind_name, err) < 0) ||
      !(h->task_name = fake_strdup_or(h->task_name, "unit-check")) ||
      !(h->source_id = fake_strdup_or(h->source_id, "unit-check-source")) ||
      !(h->task_mode = fake_strdup_or(h->task_mode, h->is_relay ? "relay" : mode)) ||
      !(h->meta_schema = fake_strdup_or(h->meta_schema, "dm_meta")) ||
      fake_chain(h, kind, err) < 0) {
    if (err->code == 0)
      dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "unit-check: no memory for the fake host");
    uc_host_close(h, false);
    return -1;
  }
  if (root) {
    dm_strlcpy(h->root, root, sizeof h->root);
  } else {
    const char *tmp = getenv("TMPDIR");
    snprintf(h->root, sizeof h->root, "%s/dmhost-unit-check-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(h->root)) {
      dm_error_set(err, DM_ERR_IO, strerror(errno), "unit-check: cannot create %s: %s", h->root,
                   strerror(errno));
      h->root[0] = '\0';
      uc_host_close(h, false);
      return -1;
    }
    h->own_root = true;
  }
  fake_services = *dmh_host_services();
  fake_services.stop_requested = fake_stop_requested;
  fake_services.wait_stop = fake_wait_stop;
  fake_services.stop_fd = fake_stop_fd;
  fake_services.cfg_int = fake_cfg_int;
  fake_services.cfg_bool = fake_cfg_bool;
  fake_services.cfg_float = fake_cfg_float;
  fake_services.cfg_string = fake_cfg_string;
  *out = h;
  return 0;
}

void uc_host_close(uc_host *h, bool keep) {
  if (!h)
    return;
  if (h->own_root && !keep) {
    char cmd[PATH_MAX + 32];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", h->root);
    if (system(cmd) != 0)
      fprintf(stderr, "dmhost-unit-check: could not remove %s\n", h->root);
  }
  if (h->have_from)
    dmh_cfg_db_free(&h->from);
  if (h->have_target)
    dmh_cfg_db_free(&h->target);
  if (h->have_cfg)
    config_destroy(&h->cfg);
  free(h->task_name);
  free(h->source_id);
  free(h->task_mode);
  free(h->meta_schema);
  free(h->relay_dir);
  dmh_rules_free(h->rules);
  dmh_cfg_strv_free(h->bal.do_dbs, h->bal.n_do_dbs);
  free(h->instance.meta_binlog_name);
  free(h->instance.meta_binlog_gtid);
  dmh_stop_token_destroy(&h->token);
  if (uc_the_host == h)
    uc_the_host = NULL;
  free(h);
}

const char *uc_host_root(const uc_host *h) {
  return h->root;
}

dm_ctx *uc_host_ctx(uc_host *h, const char *work, dm_error *err) {
  char dir[PATH_MAX + 64];
  if (snprintf(dir, sizeof dir, "%s/%s", h->root, work) >= (int)sizeof dir) {
    dm_error_set(err, DM_ERR_CONFIG_INVALID, NULL, "unit-check: work dir %s/%s is too long",
                 h->root, work);
    return NULL;
  }
  dm_ctx *c = dmh_ctx_new(dir, 0600, err);
  if (!c)
    return NULL;
  c->task_name = h->is_relay ? "" : h->task_name;
  c->source_id = h->source_id;
  c->task_mode = h->task_mode;
  c->meta_schema = h->meta_schema;
  c->relay_dir = h->relay_dir;
  c->source_db = h->have_from ? &h->from.ep : NULL;
  c->target_db = h->have_target && !h->is_relay ? &h->target.ep : NULL;
  c->gtid_enabled = h->gtid;
  c->server_id = dmh_source_default_server_id(h->source_id); /* a source file without one */
  memcpy(c->later, h->later, sizeof c->later);
  c->n_later = h->n_later;
  c->file_mode = 0600;
  c->token = &h->token;
  c->instance = h->is_relay ? NULL : &h->instance;
  c->rules = h->is_relay ? NULL : h->rules;
  c->section = h->section;
  c->cfg_file = h->cfg_path;
  snprintf(c->scope, sizeof c->scope, "unit-check %s", work);
  return c;
}

void uc_host_ctx_free(dm_ctx *ctx) {
  dmh_ctx_free(ctx);
}

void uc_host_ctx_reset(dm_ctx *ctx) {
  dmh_ctx_reset_seen(ctx);
}

void uc_host_fire(uc_host *h) {
  double zero = 0;
  if (atomic_compare_exchange_strong(&h->fired_at, &zero, uc_now_ms()))
    dmh_stop_token_fire(&h->token);
}

void uc_host_reset(uc_host *h) {
  atomic_store(&h->fire_look_at, 0);
  atomic_store(&h->fire_look_n, 0);
  dmh_stop_token_reset(&h->token);
  atomic_store(&h->fired_at, 0);
  atomic_store(&h->looks, 0);
}

bool uc_host_fired(uc_host *h, double *at_ms) {
  double at = atomic_load(&h->fired_at);
  if (at_ms)
    *at_ms = at;
  return at > 0;
}

void uc_host_fire_at_look(uc_host *h, int after_ms) {
  atomic_store(&h->fire_look_at, after_ms < 0 ? 0 : uc_now_ms() + after_ms);
}

void uc_host_fire_at_looks(uc_host *h, long n) {
  atomic_store(&h->fire_look_n, n);
}

long uc_host_looks(uc_host *h) {
  return atomic_load(&h->looks);
}

void uc_host_fail_lookup(uc_host *h, int n) {
  atomic_store(&h->lookups, 0);
  atomic_store(&h->fail_at, n);
}

int uc_host_lookups(uc_host *h) {
  return atomic_load(&h->lookups);
}
