/* dmctl config|get-config task|source NAME's output file: DM's `config ... -p FILE` (--path) and
 * `get-config ... -f FILE` (--file) write the answer's text to a file on dmctl's machine. */
#ifndef DMCTL_CFG_FILE_H
#define DMCTL_CFG_FILE_H

#include <json-c/json.h>

#include "dmhost/error.h"

/* For config/get-config (argv[0]): the output option taken out of argv (*argc lessened), its
 * value in *out (NULL without one). -1 with err (DM_ERR_CONTROL_REQUEST) when its value is
 * missing or it is given twice. */
int dmctl_cfg_file_take(int *argc, char **argv, const char **out, dm_error *err);

/* A successful answer's "cfg" written to path: a new file (never over an existing one, never
 * through a link), mode 0600; then DM's msg "write config to file PATH succeed" and cfg emptied.
 * When it cannot be written the answer becomes that error (DM_ERR_CONFIG_IO naming the file). */
void dmctl_cfg_file_write(json_object *resp, const char *path);

#endif /* DMCTL_CFG_FILE_H */
