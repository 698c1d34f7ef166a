/*
 * A process that runs just the relay subtask of a source file until SIGTERM/SIGINT, so tests can
 * kill -9 it mid-stream and start it again. Usage: relay_driver SOURCE.cfg WORK-ROOT
 * Exits 0 after a clean stop, 2 on a usage error, 1 if the relay could not start.
 */
#include <signal.h>
#include <stdio.h>

#include "config.h"
#include "supervisor.h"

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s SOURCE.cfg WORK-ROOT\n", argv[0]);
    return 2;
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  dm_error err;
  dmh_source_config *src = NULL;
  if (dmh_source_config_load(argv[1], &src, &err) < 0) {
    fprintf(stderr, "relay_driver: %s\n", err.message);
    return 1;
  }
  dmh_subtask_opts o = {.source = src, .work_root = argv[2]};
  o.unit_paths[DMH_KIND_RELAY] = RELAY_SO;
  dmh_subtask *relay = dmh_subtask_create_relay(&o, &err);
  if (!relay || dmh_subtask_start(relay, &err) < 0) {
    fprintf(stderr, "relay_driver: %s\n", err.message);
    return 1;
  }
  fprintf(stderr, "relay_driver: running\n");
  int sig = 0;
  sigwait(&set, &sig);
  if (dmh_subtask_stop(relay, &err) < 0)
    fprintf(stderr, "relay_driver: stop: %s\n", err.message);
  dmh_subtask_destroy(relay);
  dmh_source_config_free(src);
  return 0;
}
