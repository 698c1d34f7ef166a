/* The YAML reader: DM's keys that dmhost names otherwise, or does not do (docs/config.md, "DM's
 * YAML files", lists every row). */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config_yaml_internal.h"
#include "dmhost/sdk.h"

/* ---- DM's keys that dmhost names otherwise, or does not do ---- */

static const ydm_key ydm_keys[] = {
    /* the task file */
    {"task", "enable-heartbeat", NULL, "false", "DM's heartbeat table is deprecated in DM"},
    {"task", "heartbeat-update-interval", NULL, "*", NULL},
    {"task", "heartbeat-report-interval", NULL, "*", NULL},
    {"task", "remove-meta", NULL, "false",
     "deprecated in DM; start the task with `dmctl start-task --remove-meta` instead"},
    {"task", "column-mappings", NULL, "{}", "column mapping is deprecated in DM and not built"},
    {"task", "experimental", NULL, "group", NULL},
    {"experimental", "async-checkpoint-flush", NULL, "false",
     "the sync commits its checkpoint with every batch"},
    /* target-database (and from) */
    {"db", "max-allowed-packet", NULL, "*", NULL},
    /* an entry of mysql-instances */
    {"instance", "column-mapping-rules", NULL, "{}",
     "column mapping is deprecated in DM and not built"},
    /* mydumpers, an instance's mydumper */
    {"mydumper", "threads", "threads", NULL, NULL},
    {"mydumper", "chunk-filesize", "chunk-filesize", NULL, NULL},
    {"mydumper", "rows", "chunk-rows", NULL, NULL},
    {"mydumper", "statement-size", "statement-size", NULL, NULL},
    {"mydumper", "skip-tz-utc", NULL, "true", "the dump always reads at time zone +00:00"},
    /* read by yunit_read (config_yaml_extra.c): dumpling's options into the dump's settings */
    {"mydumper", "extra-args", NULL, "*", NULL},
    {"mydumper", "where", "where", NULL, NULL},
    {"mydumper", "mydumper-path", NULL, "*", NULL},
    /* loaders, an instance's loader */
    {"loader", "pool-size", "pool-size", NULL, NULL},
    {"loader", "on-duplicate", "on-duplicate", NULL, NULL},
    {"loader", "on-duplicate-logical", "on-duplicate", NULL, NULL},
    {"loader", "dir", NULL, "*", NULL},
    {"loader", "import-mode", NULL, "sql|logical|loader", "physical import is not built"},
    {"loader", "on-duplicate-physical", NULL, "*", NULL},
    {"loader", "disk-quota-physical", NULL, "*", NULL},
    {"loader", "checksum-physical", NULL, "*", NULL},
    {"loader", "analyze", NULL, "*", NULL},
    {"loader", "range-concurrency", NULL, "*", NULL},
    {"loader", "compress-kv-pairs", NULL, "*", NULL},
    {"loader", "pd-addr", NULL, "*", NULL},
    {"loader", "sorting-dir-physical", NULL, "*", NULL},
    /* syncers, an instance's syncer */
    {"syncer", "worker-count", "worker-count", NULL, NULL},
    {"syncer", "batch", "batch", NULL, NULL},
    {"syncer", "safe-mode", "safe-mode", NULL, NULL},
    {"syncer", "safe-mode-duration", "safe-mode-duration", NULL, NULL},
    {"syncer", "compact", "compact", NULL, NULL},
    {"syncer", "multiple-rows", NULL, "*", NULL},
    {"syncer", "queue-size", NULL, "*", NULL},
    {"syncer", "checkpoint-flush-interval", NULL, "*", NULL},
    {"syncer", "max-retry", NULL, "*", NULL},
    {"syncer", "enable-ansi-quotes", NULL, "false", "ANSI_QUOTES parsing is not built"},
    {"syncer", "auto-fix-gtid", NULL, "false", "it is deprecated in DM and not built"},
    {"syncer", "enable-gtid", NULL, "false", "give enable-gtid in the source file"},
    {"syncer", "disable-detect", NULL, "false", "the sync always detects conflicts (causality)"},
    /* the source file */
    {"source", "flavor", NULL, "|mysql|mariadb", "the flavor is read from the server"},
    /* deprecated in DM: it set the relay connection's character set, and a binlog is read as
     * bytes whatever that is */
    {"source", "charset", NULL, "*", NULL},
    {"source", "relay-binlog-name", NULL, "", "the relay starts where the tasks need it"},
    {"source", "relay-binlog-gtid", NULL, "", "the relay starts where the tasks need it"},
    {"source", "meta-dir", NULL, "*", NULL},
    {"source", "auto-fix-gtid", NULL, "false", "it is deprecated in DM and not built"},
    {"source", "case-sensitive", NULL, "false", "give case-sensitive in the task file"},
    {"source", "filters", NULL, "{}",
     "a source's own event filters are not built yet: give "
     "them in the task file's filters"},
    {"source", "purge", NULL, "group", NULL},
    {"purge", "interval", NULL, "*", NULL},
    {"purge", "expires", NULL, "0", "the relay is purged with `dmctl purge-relay`"},
    {"purge", "remain-space", NULL, "*", NULL},
    {"source", "checker", NULL, "group", NULL},
    {"checker", "check-enable", NULL, "true",
     "a task's resuming is its supervisor.auto-resume in dmhost"},
    {"checker", "backoff-rollback", NULL, "5m|5m0s",
     "a task's resuming is its supervisor.auto-resume in dmhost"},
    {"checker", "backoff-max", NULL, "5m|5m0s",
     "a task's resuming is its supervisor.auto-resume in dmhost"},
    {"checker", "backoff-min", NULL, "1s", "a task's resuming is its supervisor.auto-resume"},
    {"checker", "check-interval", NULL, "5s", "a task's resuming is its supervisor.auto-resume"},
    {"source", "tracer", NULL, "group", NULL},
    {"tracer", "enable", NULL, "false", "DM's tracer is not built"},
    {"tracer", "tracer-addr", NULL, "*", NULL},
    {"tracer", "batch-size", NULL, "*", NULL},
    {"tracer", "checksum", NULL, "*", NULL},
};

const ydm_key *ydm_find(const char *ctx, const char *key) {
  for (size_t i = 0; i < sizeof ydm_keys / sizeof *ydm_keys; i++)
    if (strcmp(ydm_keys[i].ctx, ctx) == 0 && strcmp(ydm_keys[i].key, key) == 0)
      return &ydm_keys[i];
  return NULL;
}

int ydm_refuse(ytr *t, const yaml_node_t *at, const char *path, const char *ok, const char *why) {
  char only[160] = "";
  if (ok && strcmp(ok, "{}") == 0)
    snprintf(only, sizeof only, " (only empty)");
  else if (ok && ok[0] != '\0' && strcmp(ok, "*") != 0 && strcmp(ok, "group") != 0)
    snprintf(only, sizeof only, " (only %s)", ok);
  else if (ok && ok[0] == '\0')
    snprintf(only, sizeof only, " (only \"\")");
  return dmh_cfg_fail_line(t->c, DM_ERR_CONFIG_UNKNOWN, yline(at),
                           "DM key `%s` is not supported by dmhost yet%s%s%s; remove it from the "
                           "%s (docs/config.md, \"DM's YAML files\")",
                           path, only, why ? ": " : "", why ? why : "", t->c->what);
}

static bool ydm_value_ok(const char *ok, const char *v) {
  size_t n = strlen(v);
  for (const char *p = ok;;) {
    const char *bar = strchr(p, '|');
    size_t len = bar ? (size_t)(bar - p) : strlen(p);
    if (len == n && strncasecmp(p, v, n) == 0)
      return true;
    if (!bar)
      return false;
    p = bar + 1;
  }
}

/* A DM key of `ctx` with value `v`: 1 accepted with no effect (not written), 0 not a key of this
 * table, -1 refused (c->err). */
int ydm_judge(ytr *t, const char *ctx, const yaml_node_t *k, const yaml_node_t *v,
              const char *path) {
  const ydm_key *r = ydm_find(ctx, ytext(k));
  if (!r || r->to)
    return 0;
  if (ynull(v) || (r->ok && strcmp(r->ok, "*") == 0))
    return 1;
  if (!r->ok)
    return ydm_refuse(t, k, path, NULL, r->why);
  if (strcmp(r->ok, "{}") == 0) {
    bool empty = (v->type == YAML_MAPPING_NODE &&
                  v->data.mapping.pairs.top == v->data.mapping.pairs.start) ||
                 (v->type == YAML_SEQUENCE_NODE &&
                  v->data.sequence.items.top == v->data.sequence.items.start);
    return empty ? 1 : ydm_refuse(t, k, path, r->ok, r->why);
  }
  if (strcmp(r->ok, "group") == 0) {
    if (v->type != YAML_MAPPING_NODE)
      return ydm_refuse(t, k, path, NULL, "a group was expected");
    int n;
    ypair *p = ypairs(t, v, &n);
    if (n < 0)
      return -1;
    int rc = 1;
    for (int i = 0; i < n && rc == 1; i++) {
      char sub[CFGUTIL_PATH_MAX];
      ysub(sub, sizeof sub, path, ytext(p[i].k), 0);
      rc = ydm_judge(t, r->key, p[i].k, p[i].v, sub);
      if (rc == 0)
        rc = ydm_refuse(t, p[i].k, sub, NULL, NULL);
    }
    free(p);
    return rc;
  }
  if (v->type != YAML_SCALAR_NODE || !ydm_value_ok(r->ok, ytext(v)))
    return ydm_refuse(t, k, path, r->ok, r->why);
  return 1;
}
