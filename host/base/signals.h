/*
 * The processes' one way to take SIGINT and SIGTERM: blocked in the main thread before any other
 * thread starts (threads inherit the mask), then taken synchronously by whoever waits for them
 * (sigtimedwait in `run`, a signalfd in `serve` and `worker`, sigwait in `master`), so no unit or
 * connection thread is ever interrupted by one.
 */
#ifndef DMH_SIGNALS_H
#define DMH_SIGNALS_H
#include <signal.h>
#include <stdbool.h>

/* Blocks SIGINT and SIGTERM in the calling thread and fills *mask with them; with ignore_pipe,
 * SIGPIPE is ignored too (a daemon's client that hangs up must not kill it). */
void dmh_signals_block(sigset_t *mask, bool ignore_pipe);

#endif /* DMH_SIGNALS_H */
