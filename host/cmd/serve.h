/* `dmhost serve`: the daemon behind the control socket (see control.h, registry.h). */
#ifndef DMH_SERVE_H
#define DMH_SERVE_H

#include "dmhost/error.h"

int dmh_serve_main(int argc, char **argv);

/* The common start of the daemons (`serve`, `worker`): the state dir created and made absolute
 * (and the plugin dir when given, else *plugin_dir NULL); SIGINT and SIGTERM blocked in every
 * thread started from here on and read from *sfd (a signalfd); SIGPIPE ignored. 0, or -1 with
 * err and nothing to free. */
int dmh_daemon_start(const char *state_arg, const char *plugin_arg, char **state_dir,
                     char **plugin_dir, int *sfd, dm_error *err);

#endif /* DMH_SERVE_H */
