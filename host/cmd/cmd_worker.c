/*
 * `dmhost worker`: the command (see cluster_worker.h). Start: the state dir's lock, the lease (the
 * saved ID while etcd still has it, else a new one), the registry restored with its tasks held,
 * the registration, a first reconcile, the threads. Then until SIGINT/SIGTERM: reconcile when the
 * watches saw a change (and every 30 s, once a second while fenced or missing a file), publish the
 * statuses, replace a lease that etcd lost. Exit: the subtasks paused at a safe point and the relay
 * stopped (dmh_registry_shutdown); the lease is NOT revoked, so a restart within its TTL keeps the
 * binding.
 */
#include "cluster_worker.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "cli_flag.h"
#include "control.h"
#include "control_http.h"
#include "dmhost/sdk.h"
#include "error_json.h"
#include "log.h"
#include "metrics.h"
#include "serve.h"
#include "state.h"

#define CW_LEASE_FILE "cluster-lease"

static void cw_usage(FILE *out) {
  fprintf(
      out,
      "usage: dmhost worker --name NAME --etcd URL[,URL...] --state-dir DIR\n"
      "                     [--etcd-prefix /dmhost] [--advertise-addr ADDR]\n"
      "                     [--listen HOST:PORT [" DMH_CLI_TLS_USAGE "\n"
      "                                          " DMH_CLI_TLS_CN_USAGE "]]\n"
      "                     [--lease-ttl SECONDS] [--plugin-dir DIR] [--unit-dir DIR]...\n"
      "                     [--secrets-dir DIR] [--allow-submitted-unit-paths]\n"
      "                     " DMH_CLI_LOG_USAGE "\n" DMH_CLUSTER_SECURITY_USAGE "\n"
      "Runs one worker of a cluster: registers NAME in etcd under a lease (TTL 10 s unless\n"
      "told, at least 10), runs the source the leader binds to it and that source's\n"
      "subtasks at the stages the leader sets, and publishes their status. Its source,\n"
      "relay and tasks are kept in DIR as `dmhost serve` keeps them, and so is the lease's\n"
      "ID: a restart within the TTL keeps the binding. The subtasks are paused when the\n"
      "lease was not renewed for TTL - 3 s. SIGINT or SIGTERM pauses them and exits 0.\n"
      "--listen serves the commands a master forwards to the worker of a source\n"
      "(purge-relay, swap-unit, binlog; query-status; config worker NAME: this command\n"
      "line) over HTTP, and is the address it\n"
      "registers unless --advertise-addr says another. --tls-allowed-cn: the client\n"
      "certificates' subjects (CN) admitted there, the masters'; default any of --tls-ca.\n"
      "Every source and task file it reads from etcd is a config sent over the network: it may\n"
      "not name secret files outside --secrets-dir, password-env, unit-paths (without\n"
      "--allow-submitted-unit-paths), a wider file-mode or @include "
      "(docs/security.md).\n"
      "etcd's TLS and user flags are the master's (docs/cluster.md); --cluster-key is the\n"
      "key the masters encrypt the passwords kept in etcd with: the worker decrypts them with\n"
      "it, never with a key path written in etcd.\n" DMH_TRUST_USAGE);
}

static void cw_fail(const dm_error *err) {
  char buf[2048];
  dmh_error_format(err, buf, sizeof buf);
  fprintf(stderr, "dmhost worker: %s\n", buf);
}

/* ---- the lease ---- */

static int cw_lease_save(cw *w, dm_error *err) {
  char text[32];
  int n = snprintf(text, sizeof text, "%" PRId64 "\n", w->lease);
  char *path = dmh_state_path(w->state_dir, CW_LEASE_FILE);
  int rc = path ? dmh_state_write_file(path, text, (size_t)n, err) : -1;
  if (!path)
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory");
  free(path);
  return rc;
}

/* The lease ID saved in the state dir, 0 when none. */
static int64_t cw_lease_load(cw *w) {
  char *path = dmh_state_path(w->state_dir, CW_LEASE_FILE);
  FILE *f = path ? fopen(path, "re") : NULL;
  long long id = 0;
  if (f) {
    if (fscanf(f, "%lld", &id) != 1)
      id = 0;
    fclose(f);
  }
  free(path);
  return (int64_t)id;
}

/* Keeps the saved lease while etcd still has it (a restart within the TTL), else grants a new one
 * and saves its ID; then starts the keeper. */
static int cw_lease_take(cw *w, bool after_loss, dm_error *err) {
  int64_t saved = after_loss ? 0 : cw_lease_load(w), left = -1, granted = 0;
  if (saved && dmh_etcd_lease_ttl(w->etcd, saved, &left, &granted, err) < 0)
    return -1;
  if (saved && left > 0 && dmh_etcd_lease_keepalive(w->etcd, saved, &left, err) == 0) {
    w->lease = saved;
    w->ttl_s = granted > 0 ? granted : w->ttl_s;
    dmh_log(DM_LOG_INFO, "worker", "lease %lld still alive (TTL %lld s): kept", (long long)saved,
            (long long)w->ttl_s);
  } else {
    if (saved)
      dmh_log(DM_LOG_INFO, "worker", "saved lease %lld is gone: granting a new one",
              (long long)saved);
    int64_t ttl = 0;
    if (dmh_etcd_lease_grant(w->etcd, w->ttl_s, 0, &w->lease, &ttl, err) < 0)
      return -1;
    w->ttl_s = ttl > 0 ? ttl : w->ttl_s;
    dmh_log(DM_LOG_INFO, "worker", "lease %lld granted (TTL %lld s)", (long long)w->lease,
            (long long)w->ttl_s);
    if (cw_lease_save(w, err) < 0)
      return -1;
  }
  dmh_etcd_keeper *k = dmh_etcd_keeper_start(w->endpoints, &w->sec.opts, w->lease, w->ttl_s, err);
  if (!k)
    return -1;
  pthread_mutex_lock(&w->keeper_lock);
  dmh_etcd_keeper *old = w->keeper;
  w->keeper = k;
  pthread_mutex_unlock(&w->keeper_lock);
  if (old)
    dmh_etcd_keeper_stop(old);
  return 0;
}

/* ---- options ---- */

static int cw_options(cw *w, int argc, char **argv, dmh_cli_common *flags,
                      const char **listen_arg) {
  static const struct option own[] = {
      {"name", required_argument, NULL, 'n'},
      {"etcd", required_argument, NULL, 'e'},
      {"etcd-prefix", required_argument, NULL, 'P'},
      {"advertise-addr", required_argument, NULL, 'a'},
      {"lease-ttl", required_argument, NULL, 't'},
      {"listen", required_argument, NULL, 'L'},
      DMH_TRUST_LONGOPTS,
      {"help", no_argument, NULL, 'h'},
      DMH_CLUSTER_SECURITY_LONGOPTS,
      {NULL, 0, NULL, 0},
  };
  struct option longopts[DMH_CLI_MAX_LONGOPTS];
  dmh_cli_longopts(flags, own, longopts);
  optind = 1;
  int c;
  static const char shortopts[] = "n:e:d:P:a:t:p:l:h";
  while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
    int trc = dmh_trust_flag(&w->trust, c, optarg, "dmhost worker");
    if (trc == 0)
      trc = dmh_cli_common_flag(flags, c, optarg);
    if (trc < 0)
      return 2;
    if (trc > 0)
      continue;
    switch (c) {
    case 'L':
      *listen_arg = optarg;
      break;
    case 'n':
      if (!dmh_cluster_name_ok(optarg)) {
        fprintf(stderr,
                "dmhost worker: --name \"%s\" is not a name (1..127 of A-Z a-z 0-9 _ . -)\n",
                optarg);
        return 2;
      }
      dm_strlcpy(w->name, optarg, sizeof w->name);
      break;
    case 'e':
      w->endpoints = optarg;
      break;
    case 'P':
      if (optarg[0] != '/' || strlen(optarg) >= sizeof w->prefix ||
          optarg[strlen(optarg) - 1] == '/') {
        fprintf(stderr,
                "dmhost worker: --etcd-prefix \"%s\" must start with '/', not end with "
                "one, and be short\n",
                optarg);
        return 2;
      }
      dm_strlcpy(w->prefix, optarg, sizeof w->prefix);
      break;
    case 'a':
      dm_strlcpy(w->addr, optarg, sizeof w->addr);
      break;
    case 't': {
      long secs;
      if (dmh_cli_int(optarg, 10, 3600, &secs) < 0) {
        fprintf(stderr,
                "dmhost worker: --lease-ttl \"%s\" is not a number of seconds in 10..3600 (shorter "
                "leases are lost in etcd leader elections)\n",
                optarg);
        return 2;
      }
      w->ttl_s = secs;
      break;
    }
    case 'h':
      cw_usage(stdout);
      return 0;
    default:
      if (dmh_cluster_security_flag(&w->sec, c, optarg))
        break;
      cw_usage(stderr);
      return 2;
    }
  }
  const char *missing = optind < argc       ? NULL
                        : !w->name[0]       ? "--name"
                        : !w->endpoints     ? "--etcd"
                        : !flags->state_dir ? "--state-dir"
                                            : NULL;
  if (optind < argc || missing) {
    if (missing)
      fprintf(stderr, "dmhost worker: %s is required\n", missing);
    else
      fprintf(stderr, "dmhost worker: unexpected argument \"%s\"\n", argv[optind]);
    cw_usage(stderr);
    return 2;
  }
  /* config worker NAME's answer (NULL when out of memory: the worker answers that it keeps none) */
  w->settings = dmh_cli_settings_text(argc, argv, shortopts, longopts);
  return -1; /* go on */
}

/* ---- the control listener (--listen) ---- */

/* What a master forwards to the worker of a source (DMH_CMD_FORWARD), and reads (DMH_CMD_WORKER:
 * commands.def): the rest (sources, tasks and their stages) is the cluster's, written by the
 * masters into etcd, never asked of a worker. */
static json_object *cw_control_handle(void *ud, json_object *req) {
  cw *w = ud;
  json_object *cmd = NULL;
  const char *name =
      json_object_object_get_ex(req, "cmd", &cmd) && json_object_is_type(cmd, json_type_string)
          ? json_object_get_string(cmd)
          : "";
  const dmh_command *c = dmh_command_find(name);
  if (c && (c->flags & DMH_CMD_WORKER))
    return dmh_control_handle(w->reg, req);
  /* config|get-config worker NAME: the worker's own settings, which a master asks it for (the
   * stored files are the cluster's, in etcd) */
  json_object *args = NULL, *op = NULL;
  if (c && (c == &dmh_commands[DMH_CMD_CONFIG] || c == &dmh_commands[DMH_CMD_GET_CONFIG]) &&
      json_object_object_get_ex(req, "args", &args) && json_object_object_get_ex(args, "op", &op) &&
      json_object_is_type(op, json_type_string) &&
      strcmp(json_object_get_string(op), "worker") == 0)
    return dmh_control_handle(w->reg, req);
  char forwarded[256], read[256];
  dmh_command_list(DMH_CMD_WORKER | DMH_CMD_FORWARD, 0, forwarded, sizeof forwarded);
  dmh_command_list(DMH_CMD_WORKER, DMH_CMD_FORWARD, read, sizeof read);
  dm_error err;
  dmh_control_bad(&err,
                  "\"%s\" is not served by a worker (%s): send it to a master (dmctl "
                  "--master-addr MASTER); a worker answers %s and %s, which the masters forward to "
                  "it",
                  name, w->name, forwarded, read);
  json_object *resp = dmh_control_response_new();
  if (resp)
    dmh_control_set_error(resp, &err);
  return resp;
}

/* Over TCP (the worker has no socket) the answers give paths relative to the state dir. */
static json_object *cw_control_handle_tcp(void *ud, json_object *req) {
  json_object *resp = cw_control_handle(ud, req);
  dmh_control_relative_paths(resp, ((cw *)ud)->state_dir);
  return resp;
}

static char *cw_control_line(void *ud, const char *line, size_t len) {
  return dmh_control_line_with(cw_control_handle_tcp, ud, line, len);
}

/* The address a master reaches the listener at: --listen's host with the port bound. */
static void cw_listen_addr(char *out, size_t len, const char *listen_arg, int port) {
  const char *colon = strrchr(listen_arg, ':');
  int host_len = colon ? (int)(colon - listen_arg) : (int)strlen(listen_arg);
  snprintf(out, len, "%.*s:%d", host_len, listen_arg, port);
}

/* ---- the loop ---- */

static void cw_loop(cw *w, int sfd) {
  long last_reconcile = cw_now_ms(), last_stage_check = 0;
  for (;;) {
    struct pollfd p = {.fd = sfd, .events = POLLIN};
    if (poll(&p, 1, 200) > 0)
      return;
    dm_error err;
    int lost = 0;
    cw_lease_age(w, &lost);
    if (lost) {
      dmh_log(DM_LOG_WARN, "worker", "lease %lld is gone: granting a new one and registering again",
              (long long)w->lease);
      if (cw_lease_take(w, true, &err) < 0 || cw_register(w, true, &err) < 0) {
        cw_log_error(DM_LOG_WARN, "a new lease (trying again)", &err);
        continue;
      }
      atomic_store(&w->dirty, 1);
      cw_publish_reset(w);
      w->last_publish_ms = 0;
    }
    long now = cw_now_ms();
    pthread_mutex_lock(&w->ops_lock);
    bool fenced = w->fenced;
    pthread_mutex_unlock(&w->ops_lock);
    long every = fenced || w->config_missing ? 1000 : CW_RECONCILE_EVERY_MS;
    if (atomic_exchange(&w->dirty, 0) || now - last_reconcile >= every) {
      last_reconcile = now;
      w->config_missing = false;
      if (cw_reconcile(w, NULL, &err) < 0)
        cw_log_error(DM_LOG_WARN, "reconcile (trying again)", &err);
      if (cw_register(w, false, &err) < 0)
        cw_log_error(DM_LOG_WARN, "registration (trying again)", &err);
    }
    now = cw_now_ms();
    if (now - w->last_publish_ms >= CW_STATUS_EVERY_MS)
      cw_publish(w, true);
    else if (now - last_stage_check >= 500) {
      last_stage_check = now;
      cw_publish(w, false);
    }
  }
}

int dmh_cluster_worker_main(int argc, char **argv) {
  cw w = {.ttl_s = CW_TTL_DEFAULT};
  dm_strlcpy(w.prefix, DMH_CLUSTER_PREFIX_DEFAULT, sizeof w.prefix);
  const char *listen_arg = NULL;
  dmh_cli_common flags = {.groups = DMH_CLI_STATE_DIR | DMH_CLI_PLUGIN_DIR | DMH_CLI_LOG |
                                    DMH_CLI_TLS | DMH_CLI_TLS_CN,
                          .prog = "worker"};
  int orc = cw_options(&w, argc, argv, &flags, &listen_arg);
  if (orc >= 0)
    return orc;
  dm_error err;
  if (dmh_cluster_security_load(&w.sec, w.endpoints, &err) < 0) {
    cw_fail(&err);
    dmh_cluster_security_clear(&w.sec);
    free(w.settings);
    return 1;
  }
  /* Every file this process loads is a copy of a text from etcd: passwords in them decrypt with
   * the cluster key only, never with a key file the text names. */
  dmh_secret_cluster_key_set(w.sec.has_key ? w.sec.key : NULL);
  dmh_secret_cluster_texts(1);
  bool tls_given;
  int frc = dmh_control_listen_flags(listen_arg, &flags.tls, &tls_given, &err);
  if (frc != 0) {
    cw_fail(&err);
    dmh_cluster_security_clear(&w.sec);
    free(w.settings);
    return frc;
  }
  bool advertised = w.addr[0] != '\0';
  if (!w.addr[0] && gethostname(w.addr, sizeof w.addr) < 0)
    dm_strlcpy(w.addr, "localhost", sizeof w.addr);
  w.addr[sizeof w.addr - 1] = '\0';
  w.registered_relay[0] = '\1';
  pthread_mutex_init(&w.keeper_lock, NULL);
  pthread_mutex_init(&w.ops_lock, NULL);

  dmh_control_http *http = NULL;
  int sfd;
  if (dmh_daemon_start(flags.state_dir, flags.plugin_dir, &w.state_dir, &w.plugin_dir, &sfd, &err) <
      0) {
    cw_fail(&err);
    dmh_cluster_security_clear(&w.sec);
    free(w.settings);
    return 1;
  }
  int rc = 1, lock_fd = -1;
  if ((lock_fd = dmh_state_lock(w.state_dir, &err)) < 0 ||
      !(w.etcd = dmh_etcd_open(w.endpoints, &w.sec.opts, &err)) ||
      cw_lease_take(&w, false, &err) < 0) {
    cw_fail(&err);
    goto out;
  }
  /* Tasks held: none runs before the reconcile has seen the binding is still ours. Restored with
   * the binding's token (its create_revision) when there is one; a binding made later brings its
   * own (cw_reconcile). */
  dmh_cluster_binding b;
  int64_t token = 0;
  int brc = cw_read_binding(&w, &b, &token, NULL, &err);
  /* the subtasks' shard DDL coordinator: its writes are fenced by the binding (cw_reconcile keeps
   * its token in step with the registry's) */
  if (!(w.shard = cw_shard_new(w.endpoints, &w.sec.opts, w.prefix, w.name))) {
    dm_error_set(&err, DM_ERR_NO_MEMORY, NULL, "out of memory starting the worker");
    cw_fail(&err);
    goto out;
  }
  cw_shard_set_token(w.shard, brc == 1 ? (uint64_t)token : 0);
  dmh_registry_opts ro = {.state_dir = w.state_dir,
                          .plugin_dir = w.plugin_dir,
                          .worker_name = w.name,
                          .hold_tasks = true,
                          .fencing_token = brc == 1 ? (uint64_t)token : 0,
                          .shard = cw_shard_coord(w.shard),
                          .configs_submitted = true};
  if (dmh_trust_flags_resolve(&w.trust, w.state_dir, "dmhost worker") < 0) {
    rc = 2;
    goto out;
  }
  dmh_trust_flags_apply(&w.trust, &ro);
  if (brc < 0 || dmh_registry_open(&ro, &w.reg, &err) < 0) {
    cw_fail(&err);
    goto out;
  }
  if (listen_arg) {
    dmh_control_opts copts = {
        .handler = cw_control_line, .refusal = dmh_control_error_line, .ud = &w};
    if (dmh_control_http_open(listen_arg, tls_given ? &flags.tls : NULL, &copts, &http, &err) < 0) {
      cw_fail(&err);
      goto out;
    }
  }
  /* the address bound; the one registered unless --advertise-addr says another */
  char bound[DMH_CLUSTER_NAME_MAX];
  if (http) {
    cw_listen_addr(bound, sizeof bound, listen_arg, dmh_control_http_port(http));
    if (!advertised)
      dm_strlcpy(w.addr, bound, sizeof w.addr);
  }
  /* config worker NAME's answer: the state dir as resolved, --listen as bound; over TCP every
   * path in an answer is given relative to the state dir (cw_control_handle_tcp) */
  if (!w.settings || dmh_cli_settings_put(&w.settings, "state-dir", w.state_dir) < 0 ||
      (http && dmh_cli_settings_put(&w.settings, "listen", bound) < 0) ||
      dmh_registry_set_settings(w.reg, w.settings) < 0)
    dmh_log(DM_LOG_WARN, "worker", "out of memory keeping the settings config worker shows");
  if (cw_register(&w, true, &err) < 0 || cw_reconcile(&w, &w.watch_from, &err) < 0) {
    cw_fail(&err);
    goto out;
  }
  w.watch_from++;
  cw_publish(&w, true);
  if (cw_threads_start(&w, &err) < 0) {
    cw_fail(&err);
    goto out;
  }
  if (dmh_metrics_cpu_usage(dmh_metrics_process(), "dm_worker_cpu_usage", DMH_METRICS_CPU_WINDOW_MS,
                            &err) < 0)
    dmh_log(DM_LOG_WARN, "metrics", "%s", err.message);
  dmh_log(DM_LOG_INFO, "worker", "worker %s running (state dir %s, lease %lld, pid %d)", w.name,
          w.state_dir, (long long)w.lease, (int)getpid());
  cw_loop(&w, sfd);
  struct signalfd_siginfo si;
  if (read(sfd, &si, sizeof si) == (ssize_t)sizeof si)
    dmh_log(DM_LOG_INFO, "worker", "%s received: pausing the subtasks and exiting (lease kept)",
            strsignal((int)si.ssi_signo));
  rc = 0;
out:
  dmh_registry_cancel_verifies(w.reg); /* a forwarded verify in progress ends at its next chunk */
  dmh_control_http_close(http);        /* no forwarded command reaches a registry shutting down */
  cw_threads_stop(&w);
  /* Pauses the subtasks at a safe point, stops the relay; the lease is left to its TTL. */
  dmh_registry_shutdown(w.reg);
  cw_shard_free(w.shard); /* after the subtasks that call it */
  if (w.keeper)
    dmh_etcd_keeper_stop(w.keeper);
  dmh_etcd_close(w.etcd);
  if (lock_fd >= 0)
    close(lock_fd);
  if (sfd >= 0)
    close(sfd);
  if (rc == 0)
    dmh_log(DM_LOG_INFO, "worker", "stopped");
  cw_publish_reset(&w);
  free(w.pub);
  free(w.settings);
  free(w.state_dir);
  free(w.plugin_dir);
  dmh_trust_flags_free(&w.trust);
  pthread_mutex_destroy(&w.keeper_lock);
  pthread_mutex_destroy(&w.ops_lock);
  dmh_secret_cluster_key_set(NULL);
  dmh_cluster_security_clear(&w.sec);
  return rc;
}
