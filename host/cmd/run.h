/*
 * `dmhost run`: one task against one source in the foreground, until it finishes (modes that can)
 * or a signal pauses it at a safe point. Progress goes to the terminal as a live line, or to the
 * log every few seconds when stderr is not a terminal.
 */
#ifndef DMH_RUN_H
#define DMH_RUN_H

int dmh_run_main(int argc, char **argv);

#endif /* DMH_RUN_H */
