/* Blocking the stop signals before threads start (signals.h). */
#include "signals.h"

#include <pthread.h>

void dmh_signals_block(sigset_t *mask, bool ignore_pipe) {
  sigemptyset(mask);
  sigaddset(mask, SIGINT);
  sigaddset(mask, SIGTERM);
  pthread_sigmask(SIG_BLOCK, mask, NULL);
  if (ignore_pipe)
    signal(SIGPIPE, SIG_IGN);
}
