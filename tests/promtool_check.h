/*
 * `promtool check metrics` (Debian package prometheus, scripts/deps.sh) on an exposition, for the
 * tests of /metrics. Header-only, one owner for every test that checks an exposition.
 *
 * promtool exits 0 when the text is clean, 1 when it does not parse, 3 when it parses but its
 * linter has findings. The only findings accepted are those about the names DM itself gave against
 * the linter (counters without `_total`: dm_*_exit_with_error_count, dumpling_dump_finished_*,
 * dm_relay_{read,write}_error_count, dm_relay_data_corruption, dm_master_shard_ddl_error,
 * dm_worker_operate_error, dm_master_worker_event_error, dm_master_start_leader_counter; the type
 * in a name: dm_syncer_replication_lag_gauge, dm_master_start_leader_counter): dmhost keeps DM's
 * names so DM's dashboards and alerts work unchanged (docs/metrics.md). Anything else fails, and so does
 * a missing promtool: the check is never skipped.
 */
#ifndef DMH_PROMTOOL_CHECK_H
#define DMH_PROMTOOL_CHECK_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* DM's names the linter finds fault with, named at the start of its lines. */
static const char *const promtool_dm_names[] = {
    "dm_mydumper_exit_with_error_count", "dm_loader_exit_with_error_count",
    "dm_syncer_exit_with_error_count",   "dm_relay_exit_with_error_count",
    "dumpling_dump_finished_rows",       "dumpling_dump_finished_size",
    "dm_syncer_replication_lag_gauge",   "dm_dumpling_exit_with_error_count",
    "dm_relay_read_error_count",         "dm_relay_write_error_count",
    "dm_relay_data_corruption",          "dm_master_shard_ddl_error",
    "dumpling_dump_estimate_total_rows", "dm_worker_operate_error",
    "dm_master_worker_event_error",      "dm_master_start_leader_counter",
};

static inline bool promtool_line_accepted(const char *line) {
  for (size_t i = 0; i < sizeof promtool_dm_names / sizeof promtool_dm_names[0]; i++) {
    size_t n = strlen(promtool_dm_names[i]);
    if (strncmp(line, promtool_dm_names[i], n) == 0 && line[n] == ' ')
      return true;
  }
  return false;
}

/* 0 when `text` passes; else -1 with promtool's words (or why it could not run) in why. */
static inline int promtool_check(const char *text, char *why, size_t why_len) {
  char in[] = "/tmp/dmh-promtool-XXXXXX";
  int fd = mkstemp(in);
  if (fd < 0) {
    snprintf(why, why_len, "cannot create a temp file");
    return -1;
  }
  size_t len = strlen(text);
  bool wrote = write(fd, text, len) == (ssize_t)len;
  close(fd);
  char cmd[256];
  snprintf(cmd, sizeof cmd, "promtool check metrics < %s 2>&1", in);
  FILE *p = wrote ? popen(cmd, "r") : NULL;
  if (!p) {
    unlink(in);
    snprintf(why, why_len, "cannot run promtool");
    return -1;
  }
  char out[8192] = "";
  size_t n = fread(out, 1, sizeof out - 1, p);
  out[n] = '\0';
  int status = pclose(p);
  unlink(in);
  int rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (rc == 127) {
    snprintf(why, why_len,
             "promtool is not installed (Debian package prometheus: scripts/deps.sh installs it)");
    return -1;
  }
  if (rc == 0)
    return 0;
  if (rc == 3) { /* lint findings only: each must be about one of DM's names */
    char lines[sizeof out];
    memcpy(lines, out, sizeof out);
    bool all = true;
    char *save = NULL;
    for (char *line = strtok_r(lines, "\n", &save); line && all; line = strtok_r(NULL, "\n", &save))
      all = promtool_line_accepted(line);
    if (all)
      return 0;
  }
  snprintf(why, why_len, "promtool check metrics exited %d: %s", rc, out);
  return -1;
}

#endif /* DMH_PROMTOOL_CHECK_H */
