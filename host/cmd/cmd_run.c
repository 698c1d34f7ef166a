#include "run.h"

#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli_flag.h"
#include "config.h"
#include "control.h"
#include "control_http.h"
#include "dmhost/sdk.h"
#include "error_json.h"
#include "log.h"
#include "precheck.h"
#include "registry.h"
#include "registry_shard.h"
#include "secret.h"
#include "signals.h"
#include "status.h"
#include "supervisor.h"

static void run_usage(FILE *out) {
  fprintf(out,
          "usage: dmhost run --source SOURCE.cfg --task TASK.cfg [options]\n"
          "  --work-dir DIR     where units keep dump files and checkpoints (default "
          "./dmhost-work)\n" DMH_CLI_PLUGIN_DIR_HELP DMH_CLI_LOG_HELP DMH_CLI_SECRET_KEY_HELP
          "  --quiet            no progress output\n"
          "  --listen HOST:PORT serve the task's metrics at GET /metrics (Prometheus text format,\n"
          "                     docs/metrics.md); loopback only, this user's and root's clients\n"
          "  --fencing-token N  for the cluster worker and tests: the subtask's fencing token (a\n"
          "                     number that grows each time the subtask moves to another worker;\n"
          "                     0, the default, is no fencing); see docs/sdk.md \"Fencing\"\n"
          "Runs until a task that can finish has finished (exit 0). SIGINT/SIGTERM pause the\n"
          "task at a safe point, keep its checkpoints and exit 0; run again to continue.\n");
}

static void run_print_error(const dm_error *e) {
  dmh_error_print("dmhost", e);
}

static const char *run_fmt_eta(double eta, char *buf, size_t len) {
  if (eta < 0) {
    snprintf(buf, len, "--:--");
  } else {
    long s = (long)eta;
    snprintf(buf, len, "%ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
  }
  return buf;
}

/* One progress line from the subtask's progress: unit, percent, rate, ETA. */
static void run_progress_line(dmh_subtask *st, char *line, size_t len) {
  dmh_subtask_view v;
  dmh_subtask_progress(st, &v);
  const char *stage = dmh_stage_name(v.stage);
  const dmh_progress *p = &v.progress;
  if (v.has_progress) {
    char etab[32];
    if (p->total > 0)
      snprintf(line, len, "[%s %s] %5.1f%%  %lld/%lld %s  %.0f %s/s  ETA %s", v.unit, stage,
               p->percent, (long long)p->done, (long long)p->total, p->what, p->rate, p->what,
               run_fmt_eta(p->eta, etab, sizeof etab));
    else
      snprintf(line, len, "[%s %s] %lld %s  %.0f %s/s", v.unit, stage, (long long)p->done, p->what,
               p->rate, p->what);
  } else {
    snprintf(line, len, "[%s %s]%s", v.unit, stage,
             v.waiting_relay ? " waiting for the relay" : "");
  }
}

/* Print the subtask's result errors, if any. Returns how many. */
static int run_print_result(dmh_subtask *st) {
  dmh_subtask_view v;
  dmh_subtask_summary(st, &v);
  for (int i = 0; i < v.n_errors; i++) {
    json_object *e = dmh_error_to_json(&v.errors[i], v.error_ctx[i]);
    fprintf(stderr, "dmhost: error: %s\n",
            json_object_to_json_string_ext(e, JSON_C_TO_STRING_PRETTY));
    json_object_put(e);
  }
  return v.n_errors;
}

/* Is it paused by an error that auto-resume will retry? Then keep waiting. */
static bool run_auto_resume_pending(dmh_subtask *st) {
  dmh_subtask_view v;
  dmh_subtask_summary(st, &v);
  return v.auto_resume_pending;
}

int dmh_run_main(int argc, char **argv) {
  static const struct option own[] = {
      {"source", required_argument, NULL, 's'},
      {"task", required_argument, NULL, 't'},
      {"work-dir", required_argument, NULL, 'w'},
      {"quiet", no_argument, NULL, 'q'},
      {"fencing-token", required_argument, NULL, 'F'},
      {"listen", required_argument, NULL, 'L'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  dmh_cli_common flags = {.groups = DMH_CLI_PLUGIN_DIR | DMH_CLI_LOG | DMH_CLI_SECRET_KEY,
                          .prog = "run"};
  struct option longopts[DMH_CLI_MAX_LONGOPTS];
  dmh_cli_longopts(&flags, own, longopts);
  const char *source_path = NULL, *task_path = NULL, *work = "dmhost-work";
  bool quiet = false;
  uint64_t fencing_token = 0;
  const char *listen = NULL;
  int c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "s:t:w:p:l:qh", longopts, NULL)) != -1) {
    int frc = dmh_cli_common_flag(&flags, c, optarg);
    if (frc < 0)
      return 2;
    if (frc > 0)
      continue;
    switch (c) {
    case 's':
      source_path = optarg;
      break;
    case 't':
      task_path = optarg;
      break;
    case 'w':
      work = optarg;
      break;
    case 'q':
      quiet = true;
      break;
    case 'F': {
      long v;
      if (dmh_cli_int(optarg, 0, LONG_MAX, &v) < 0) {
        fprintf(stderr, "dmhost run: --fencing-token must be a number from 0 to %ld, not '%s'\n",
                LONG_MAX, optarg);
        return 2;
      }
      fencing_token = (uint64_t)v;
      break;
    }
    case 'L':
      listen = optarg;
      break;
    case 'h':
      run_usage(stdout);
      return 0;
    default:
      run_usage(stderr);
      return 2;
    }
  }
  if (!source_path || !task_path || optind < argc) {
    fprintf(stderr, "dmhost run: %s\n",
            optind < argc ? "unexpected argument" : "--source and --task are required");
    run_usage(stderr);
    return 2;
  }

  if (dmh_secret_dm_key_flag("run", flags.secret_key_path) < 0)
    return 2;
  dm_error err;
  dmh_source_config *source = NULL;
  dmh_task_config *task = NULL;
  if (dmh_config_load_pair(source_path, task_path, &source, &task, &err) < 0) {
    run_print_error(&err);
    return 1;
  }
  int rc = 1;
  dmh_subtask *relay = NULL, *st = NULL;
  dmh_shard_local *shard = NULL;
  char *worker = NULL; /* DM's `worker` label: dmhost@<hostname>, as the daemon's default */
  dmh_control_http *http = NULL;
  /* Signals are taken by this thread only, with sigtimedwait, so no other thread is interrupted
   * and none ends the process: blocked before the first thread (the HTTP server's) is created,
   * as every thread inherits the mask. A thread without it took a SIGTERM sent while this one
   * was not in sigtimedwait, and its default action ended the run (exit by signal, no pause). */
  sigset_t sigs;
  dmh_signals_block(&sigs, false);
  /* no control plane: GET /metrics alone */
  dmh_control_opts copts = {.refusal = dmh_control_error_line, .metrics_only = true};
  if (listen && dmh_control_http_open(listen, NULL, &copts, &http, &err) < 0) {
    run_print_error(&err);
    goto out;
  }

  /* The precheck refuses a task that cannot work (docs/precheck.md); warnings are logged. No task
   * runs yet: a signal meanwhile ends the process at once (this thread alone takes it). */
  char what[300];
  snprintf(what, sizeof what, "run %s", task->name);
  pthread_sigmask(SIG_UNBLOCK, &sigs, NULL);
  int gate = dmh_precheck_gate(task, source, what, &err);
  pthread_sigmask(SIG_BLOCK, &sigs, NULL);
  if (gate < 0) {
    run_print_error(&err);
    goto out;
  }

  char root[4096];
  worker = dmh_registry_default_worker_name();
  if (source->enable_relay) {
    snprintf(root, sizeof root, "%s/sources/%s/relay-work", work, source->source_id);
    dmh_subtask_opts ro = {
        .source = source, .work_root = root, .plugin_dir = flags.plugin_dir, .worker_name = worker};
    if (!(relay = dmh_subtask_create_relay(&ro, &err)) || dmh_subtask_start(relay, &err) < 0) {
      run_print_error(&err);
      goto out;
    }
  }
  /* The shard DDL locks of this process, in <work>/tasks/<task>/shard.json: a kill -9 resumes
   * them. It sees only this source: another source's shards are not waited for. */
  if (!(shard = dmh_shard_local_new(work, &err)) ||
      dmh_shard_local_load(shard, task->name, &err) < 0) {
    run_print_error(&err);
    goto out;
  }
  if (task->shard_mode != DM_SHARD_MODE_NONE && task->n_instances > 1)
    dmh_log(DM_LOG_WARN, "run",
            "task %s has shard-mode and %d sources: `dmhost run` coordinates the shard DDL locks "
            "of source %s alone, so the other sources' shards are not waited for; run the task "
            "in a cluster for that (docs/shard.md)",
            task->name, task->n_instances, source->source_id);
  snprintf(root, sizeof root, "%s/tasks/%s/%s", work, task->name, source->source_id);
  dmh_subtask_opts o = {.task = task,
                        .source = source,
                        .work_root = root,
                        .plugin_dir = flags.plugin_dir,
                        .relay = relay,
                        .fencing_token = fencing_token,
                        .worker_name = worker,
                        .shard = dmh_shard_local_coord(shard)};
  if (!(st = dmh_subtask_create(&o, &err)) || dmh_subtask_start(st, &err) < 0) {
    run_print_error(&err);
    goto out;
  }

  bool tty = isatty(STDERR_FILENO);
  double last_log = 0, last_line = 0;
  for (;;) {
    /* The stage's settling ends the wait at once: a finished task exits when it finishes, not at
     * the next tick (a 200 ms sleep here made every run, a dump of a few tables, 0.1-0.2 s
     * longer). Signals, blocked in every thread, are taken between waits: within 100 ms. A
     * settled stage that goes on (Paused, auto-resume pending) sleeps its 100 ms in sigtimedwait. */
    dmh_stage seen = dmh_subtask_wait_settled(st, 100);
    bool settled = seen == DMH_STAGE_PAUSED || seen == DMH_STAGE_STOPPED;
    struct timespec wait = {.tv_sec = 0, .tv_nsec = settled ? 100 * 1000000L : 0};
    int sig = sigtimedwait(&sigs, NULL, &wait);
    if (sig == SIGINT || sig == SIGTERM) {
      if (tty && !quiet)
        fputc('\n', stderr);
      dmh_log(DM_LOG_INFO, "run", "signal %d: pausing the task at a safe point", sig);
      if (dmh_subtask_stage(st) == DMH_STAGE_RUNNING && dmh_subtask_pause(st, &err) < 0)
        run_print_error(&err);
      rc = 0;
      break;
    }
    dmh_stage stage = dmh_subtask_stage(st);
    if (!quiet) {
      char line[256];
      double now = dmh_now_seconds();
      if (tty && now - last_line >= 0.2) { /* 5 a second: each reads the unit's status */
        run_progress_line(st, line, sizeof line);
        fprintf(stderr, "\r\033[K%s", line);
        last_line = now;
      } else if (!tty && now - last_log >= 5.0) {
        run_progress_line(st, line, sizeof line);
        dmh_log(DM_LOG_INFO, "progress", "%s", line);
        last_log = now;
      }
    }
    if (stage == DMH_STAGE_FINISHED) {
      if (tty && !quiet)
        fputc('\n', stderr);
      dmh_log(DM_LOG_INFO, "run", "task %s finished", task->name);
      rc = 0;
      break;
    }
    if ((stage == DMH_STAGE_PAUSED && !run_auto_resume_pending(st)) || stage == DMH_STAGE_STOPPED) {
      if (tty && !quiet)
        fputc('\n', stderr);
      run_print_result(st);
      fprintf(stderr,
              "dmhost: task %s is %s; fix the cause and run again to continue from its "
              "checkpoint\n",
              task->name, dmh_stage_name(stage));
      rc = 1;
      break;
    }
  }
out:
  dmh_control_http_close(http);
  dmh_subtask_destroy(st);
  dmh_subtask_destroy(relay);
  dmh_shard_local_free(shard); /* after the subtask using it */
  dmh_task_config_free(task);
  dmh_source_config_free(source);
  free(worker);
  return rc;
}
