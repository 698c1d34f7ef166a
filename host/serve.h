/* `dmhost serve`: the daemon behind the control socket (see control.h, registry.h). */
#ifndef DMH_SERVE_H
#define DMH_SERVE_H

int dmh_serve_main(int argc, char **argv);

#endif /* DMH_SERVE_H */
