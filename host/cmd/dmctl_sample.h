/* DM's `dmctl operate-source --print-sample-config` (-p): the sample source file printed by dmctl
 * itself, nothing contacted (as DM's dmctl does). */
#ifndef DMCTL_SAMPLE_H
#define DMCTL_SAMPLE_H

#include <stdbool.h>

/* argv[0..argc) (argv[0] the command) is operate-source with -p or --print-sample-config. */
bool dmctl_sample_wanted(int argc, char **argv);
/* Print the sample on stdout; the exit status. */
int dmctl_sample_print(void);

#endif /* DMCTL_SAMPLE_H */
