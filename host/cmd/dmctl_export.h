/* dmctl config export|import [-d DIR] (DM's, dm/ctl/master/config.go): every stored source and
 * task file written into DIR (DM's layout: sources/NAME.yaml, tasks/NAME.yaml; a libconfig file
 * keeps .cfg), and such a folder brought back (operate-source create of each source, then
 * start-task of each task). Export writes what `config source|task NAME` answers, so every
 * password is `******`; import refuses a folder still holding one, before sending anything.
 * dmctl's own: it asks through the caller's transport, one command line at a time. */
#ifndef DMCTL_EXPORT_H
#define DMCTL_EXPORT_H

#include <json-c/json.h>
#include <stdbool.h>

/* The daemon's (or master's) answer to one command line argv[0..argc), never NULL: a failure on
 * the way is an answer in the same shape. */
typedef json_object *(*dmctl_export_ask_fn)(void *ud, int argc, char **argv);

/* Is argv (argv[0] the command) `config export ...` or `config import ...`? */
bool dmctl_export_wanted(int argc, char **argv);

/* Run it: DM's answer shape, {result, msg} with `sources` and `tasks` (each one's name, file and,
 * for import, result and msg). */
json_object *dmctl_export_run(int argc, char **argv, dmctl_export_ask_fn ask, void *ud);

#endif /* DMCTL_EXPORT_H */
