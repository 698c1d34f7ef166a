/*
 * `dmhost serve`: restore the state dir, then answer the control socket until SIGINT/SIGTERM; on
 * the signal stop accepting, let the requests in progress finish (clients idle or not reading their
 * answers are dropped: none can hold the shutdown up), pause the running subtasks at a safe point
 * (their checkpoints saved) and exit 0. The expected stages persisted are left alone, so
 * the next start brings back what ran.
 */
#include "serve.h"

#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "cli_flag.h"
#include "control.h"
#include "control_http.h"
#include "control_socket.h"
#include "dmhost/sdk.h"
#include "error_json.h"
#include "log.h"
#include "metrics.h"
#include "registry.h"
#include "secret.h"
#include "signals.h"
#include "state.h"
#include "trust_flags.h"

static void serve_usage(FILE *out) {
  fprintf(
      out,
      "usage: dmhost serve --state-dir DIR [--socket PATH] [--plugin-dir DIR]\n"
      "                    [--socket-group GROUP] [--idle-timeout SECONDS]\n"
      "                    [--send-timeout SECONDS]\n"
      "                    [--listen HOST:PORT [" DMH_CLI_TLS_USAGE "\n"
      "                                         " DMH_CLI_TLS_CN_USAGE "]]\n"
      "                    [--unit-dir DIR]... [--secrets-dir DIR] [--allow-submitted-unit-paths]\n"
      "                    [--secret-key-path FILE]\n"
      "                    " DMH_CLI_LOG_USAGE "\n"
      "\n"
      "Runs the daemon that dmctl talks to. Sources, tasks and their expected stages are kept\n"
      "in DIR and restored on the next start. The control socket defaults to DIR/dmhost.sock.\n"
      "Only the daemon's user and root may use it, and with --socket-group the members of\n"
      "GROUP. A connection without a request for --idle-timeout seconds (default 30), or whose\n"
      "client leaves an answer unread for --send-timeout seconds (default 10), is closed.\n"
      "--listen (or --http, DM's name) also serves the same commands over HTTP (POST /control;\n"
      "dmctl --master-addr), DM's OpenAPI paths under /api/v1 (docs/api.md; the document at\n"
      "GET /api/v1/dmhost/openapi.json) and the metrics (GET /metrics, Prometheus text format).\n"
      "Without --tls-* it must be a loopback address and admits the same users as the socket;\n"
      "with them it requires mutual TLS: a client certificate signed by --tls-ca, whose\n"
      "subject (CN) is one of --tls-allowed-cn when given (dmctl's certificates).\n"
      "SIGINT or SIGTERM pauses the running tasks at a safe point and exits 0.\n"
      "Unit builds are loaded only from --plugin-dir and the --unit-dir folders; a config sent\n"
      "as content (HTTP, dmctl --master-addr) may not name secret files, unit-paths, a wider\n"
      "file-mode or @include (docs/security.md, \"Configs sent over the "
      "network\"):\n" DMH_TRUST_USAGE DMH_CLI_SECRET_KEY_HELP);
}

static void serve_fail(const dm_error *err) {
  dmh_error_print("dmhost serve", err);
}

int dmh_daemon_start(const char *state_arg, const char *plugin_arg, char **state_dir,
                     char **plugin_dir, int *sfd, dm_error *err) {
  *state_dir = *plugin_dir = NULL;
  *sfd = -1;
  if (dmh_state_mkdirs(state_arg, err) < 0)
    return -1;
  /* Absolute from here on: paths in responses and in the units' work dirs must not depend on the
   * daemon's working folder. */
  *state_dir = realpath(state_arg, NULL);
  *plugin_dir = plugin_arg ? realpath(plugin_arg, NULL) : NULL;
  if (!*state_dir || (plugin_arg && !*plugin_dir)) {
    dm_error_set(err, DM_ERR_CONFIG_IO, strerror(errno), "cannot resolve %s",
                 !*state_dir ? state_arg : plugin_arg);
    goto fail;
  }
  /* Signals are taken synchronously through a signalfd that the main loop polls: every thread
   * started from here on inherits the blocked mask, so no unit or connection thread is interrupted
   * by them. SIGPIPE is ignored: a client that hangs up must not kill the daemon. */
  sigset_t mask;
  dmh_signals_block(&mask, true);
  if ((*sfd = signalfd(-1, &mask, SFD_CLOEXEC)) < 0) {
    dm_error_set(err, DM_ERR_INTERNAL, strerror(errno), "cannot create the signalfd");
    goto fail;
  }
  return 0;
fail:
  free(*state_dir);
  free(*plugin_dir);
  *state_dir = *plugin_dir = NULL;
  return -1;
}

int dmh_serve_main(int argc, char **argv) {
  static const struct option own[] = {
      {"socket", required_argument, NULL, 's'},
      {"socket-group", required_argument, NULL, 'g'},
      {"idle-timeout", required_argument, NULL, 'i'},
      {"send-timeout", required_argument, NULL, 't'},
      {"listen", required_argument, NULL, 'L'},
      {"http", required_argument, NULL, 'L'}, /* DM's name for it */
      DMH_TRUST_LONGOPTS,
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  dmh_cli_common flags = {.groups = DMH_CLI_STATE_DIR | DMH_CLI_PLUGIN_DIR | DMH_CLI_LOG |
                                    DMH_CLI_TLS | DMH_CLI_TLS_CN | DMH_CLI_SECRET_KEY,
                          .prog = "serve"};
  struct option longopts[DMH_CLI_MAX_LONGOPTS];
  dmh_cli_longopts(&flags, own, longopts);
  const char *socket_arg = NULL, *listen_arg = NULL;
  dmh_trust_flags trust = {.n_unit_dirs = 0};
  /* DMH_CMD_FAST (commands.def: query-status and query-lag, which the status page polls) read the
   * registry's state and the lag history under short locks: answered on the HTTP server's event
   * threads (control_socket.h) */
  static const char *fast_cmds[DMH_CMD_COUNT + 1];
  dmh_command_names(DMH_CMD_FAST, fast_cmds);
  dmh_control_opts copts = {.handler = dmh_control_handle_line,
                            .refusal = dmh_control_error_line,
                            .fast_cmds = fast_cmds};
  optind = 1;
  int c;
  static const char shortopts[] = "d:s:p:l:g:i:t:h";
  while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
    int trc = dmh_trust_flag(&trust, c, optarg, "dmhost serve");
    if (trc == 0)
      trc = dmh_cli_common_flag(&flags, c, optarg);
    if (trc < 0)
      return 2;
    if (trc > 0)
      continue;
    switch (c) {
    case 's':
      socket_arg = optarg;
      break;
    case 'L':
      listen_arg = optarg;
      break;
    case 'g': {
      struct group gr, *found = NULL;
      char buf[4096];
      int e = getgrnam_r(optarg, &gr, buf, sizeof buf, &found);
      if (!found) {
        fprintf(stderr, "dmhost serve: --socket-group \"%s\": %s\n", optarg,
                e ? strerror(e) : "no such group (see /etc/group)");
        return 2;
      }
      copts.has_group = true;
      copts.group = gr.gr_gid;
      copts.group_name = optarg;
      break;
    }
    case 'i':
    case 't': {
      long secs;
      if (dmh_cli_int(optarg, 1, INT_MAX / 1000, &secs) < 0) {
        fprintf(stderr, "dmhost serve: --%s \"%s\" is not a number of seconds in 1..%d\n",
                c == 'i' ? "idle-timeout" : "send-timeout", optarg, INT_MAX / 1000);
        return 2;
      }
      *(c == 'i' ? &copts.idle_timeout_ms : &copts.send_timeout_ms) = (int)(secs * 1000);
      break;
    }
    case 'h':
      serve_usage(stdout);
      return 0;
    default:
      serve_usage(stderr);
      return 2;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "dmhost serve: unexpected argument \"%s\"\n", argv[optind]);
    serve_usage(stderr);
    return 2;
  }
  if (!flags.state_dir) {
    fprintf(stderr, "dmhost serve: --state-dir is required\n");
    serve_usage(stderr);
    return 2;
  }

  if (dmh_secret_dm_key_flag("serve", flags.secret_key_path) < 0)
    return 2;
  dm_error err;
  bool tls_given;
  int frc = dmh_control_listen_flags(listen_arg, &flags.tls, &tls_given, &err);
  if (frc != 0) {
    serve_fail(&err);
    return frc;
  }
  char *state_dir, *plugin_dir;
  int sfd;
  if (dmh_daemon_start(flags.state_dir, flags.plugin_dir, &state_dir, &plugin_dir, &sfd, &err) <
      0) {
    serve_fail(&err);
    return 1;
  }
  char *socket_path = socket_arg ? strdup(socket_arg) : dmh_state_path(state_dir, "dmhost.sock");

  int rc = 1;
  int lock_fd = -1;
  char *settings = NULL;
  dmh_registry *reg = NULL;
  dmh_control_server *srv = NULL;
  dmh_control_http *http = NULL;
  if (!socket_path) {
    dm_error_set(&err, DM_ERR_NO_MEMORY, NULL, "out of memory");
    serve_fail(&err);
    goto out;
  }
  if ((lock_fd = dmh_state_lock(state_dir, &err)) < 0) {
    serve_fail(&err);
    goto out;
  }
  if (dmh_trust_flags_resolve(&trust, state_dir, "dmhost serve") < 0) {
    rc = 2;
    goto out;
  }
  dmh_registry_opts ro = {.state_dir = state_dir, .plugin_dir = plugin_dir};
  dmh_trust_flags_apply(&trust, &ro);
  if (dmh_registry_open(&ro, &reg, &err) < 0) {
    serve_fail(&err);
    goto out;
  }
  copts.ud = reg;
  /* Before any request can read it: the lag history of GET /api/v1/dmhost/tasks/{name}/lag. */
  if (dmh_metrics_history_start(dmh_metrics_process(), DMH_METRICS_LAG, DMH_METRICS_LAG_PERIOD_MS,
                                DMH_METRICS_LAG_SAMPLES, &err) < 0) {
    serve_fail(&err);
    goto out;
  }
  /* DM's worker gauge: the daemon is the worker of its sources */
  if (dmh_metrics_cpu_usage(dmh_metrics_process(), "dm_worker_cpu_usage", DMH_METRICS_CPU_WINDOW_MS,
                            &err) < 0)
    dmh_log(DM_LOG_WARN, "metrics", "%s", err.message);
  if (dmh_control_server_open(socket_path, &copts, &srv, &err) < 0) {
    serve_fail(&err);
    goto out;
  }
  /* After the socket: a second daemon on this state dir is refused by its lock and socket before
   * it could take or fail on the port. */
  /* Over TCP the answers give paths relative to the state dir (control.h) */
  dmh_control_opts http_opts = copts;
  http_opts.handler = dmh_control_handle_line_tcp;
  if (listen_arg && dmh_control_http_open(listen_arg, tls_given ? &flags.tls : NULL, &http_opts,
                                          &http, &err) < 0) {
    serve_fail(&err);
    goto out;
  }
  if (http) { /* DM's list-member shows the address as bound: --listen's port 0 is another */
    char addr[DMH_REGISTRY_ADDR_MAX];
    const char *colon = strrchr(listen_arg, ':');
    int host_len = colon ? (int)(colon - listen_arg) : (int)strlen(listen_arg);
    snprintf(addr, sizeof addr, "%.*s:%d", host_len, listen_arg, dmh_control_http_port(http));
    dmh_registry_set_addr(reg, addr);
  }
  /* config master|worker NAME's answer: the command line, with the state dir as resolved
   * (absolute; over TCP the answer names it ".", as every path in it) and --listen as bound */
  char bound[DMH_REGISTRY_ADDR_MAX];
  dmh_registry_addr(reg, bound, sizeof bound);
  if (!(settings = dmh_cli_settings_text(argc, argv, shortopts, longopts)) ||
      dmh_cli_settings_put(&settings, "state-dir", state_dir) < 0 ||
      (http && dmh_cli_settings_put(&settings, "listen", bound) < 0) ||
      dmh_registry_set_settings(reg, settings) < 0)
    dmh_log(DM_LOG_WARN, "serve", "out of memory keeping the settings config master|worker shows");
  dmh_log(DM_LOG_INFO, "serve", "listening on %s (state dir %s, pid %d)", socket_path, state_dir,
          (int)getpid());
  if (dmh_control_server_run(srv, sfd, &err) < 0) {
    serve_fail(&err);
    goto out;
  }
  struct signalfd_siginfo si;
  if (read(sfd, &si, sizeof si) == (ssize_t)sizeof si)
    dmh_log(DM_LOG_INFO, "serve", "%s received: pausing the tasks and exiting",
            strsignal((int)si.ssi_signo));
  rc = 0;
out:
  /* The server goes first: no request may reach the registry while it shuts down. It waits for
   * the requests in progress: a verify among them stops at its next chunk. */
  dmh_registry_cancel_verifies(reg);
  dmh_control_http_close(http);
  dmh_control_server_close(srv);
  dmh_metrics_history_stop(dmh_metrics_process());
  dmh_registry_shutdown(reg);
  if (lock_fd >= 0)
    close(lock_fd);
  if (sfd >= 0)
    close(sfd);
  if (rc == 0)
    dmh_log(DM_LOG_INFO, "serve", "stopped");
  free(socket_path);
  free(settings);
  free(state_dir);
  free(plugin_dir);
  dmh_trust_flags_free(&trust);
  return rc;
}
