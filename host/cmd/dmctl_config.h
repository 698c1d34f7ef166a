/* dmctl's DM-compatible inputs: DM's dmctl --config file (TOML: master-addr, rpc-timeout, ssl-ca,
 * ssl-cert, ssl-key), --rpc-timeout's Go durations, and the words of an interactive command line.
 * dmctl's own: it links no config reader of the daemon's. */
#ifndef DMCTL_CONFIG_H
#define DMCTL_CONFIG_H

#include <stddef.h>

#include "dmhost/error.h"

typedef struct dmctl_file_cfg {
  char *master_addr, *rpc_timeout, *ssl_ca, *ssl_cert, *ssl_key; /* NULL: not in the file */
} dmctl_file_cfg;

/* Read DM's dmctl config file: `key = "value"` lines and # comments; any other key is refused with
 * file:line. 0, or -1 with *err. */
int dmctl_config_load(const char *path, dmctl_file_cfg *out, dm_error *err);
void dmctl_file_cfg_free(dmctl_file_cfg *c);

/* Seconds of "300" (dmhost's --timeout) or a Go duration ("10m", "1m30s", "500ms"). 0 or -1. */
int dmctl_duration_s(const char *v, long *out);

/* A command line split into words as a shell (and DM's shlex) does: blanks separate, '...' and
 * "..." quote, \ escapes outside '...'. The word count, the NULL-ended words in *out
 * (dmctl_words_free); -1 on an unclosed quote or no memory. */
int dmctl_split_line(const char *line, char ***out);
void dmctl_words_free(char **words);

/* The task name a task file gives (its top-level `name: X` or `name = "X";`), for DM's
 * [task-name | task-file] arguments. 0, or -1 when the file has none or cannot be read. */
int dmctl_task_name_of(const char *path, char *out, size_t len);

#endif /* DMCTL_CONFIG_H */
