/*
 * A stored source or task file's text as get-config answers it (dmctl config, docs/control.md):
 * the value of every `password` key replaced by "******", whatever the file's form (libconfig or
 * DM's YAML) and however the value is written (quoted over several lines, a YAML block, libconfig's
 * adjacent strings). password-file, password-env and password-encrypted name no clear text and
 * are kept. Text only: no file is read, nothing is parsed beyond the keys' values.
 */
#ifndef DMH_CONFIG_MASK_H
#define DMH_CONFIG_MASK_H

#include <stdbool.h>

#define DMH_CONFIG_MASK "\"******\""

/* The masked copy of `text` (yaml: DM's YAML, else libconfig), malloc'd; NULL when out of memory.
 */
char *dmh_config_masked(const char *text, bool yaml);

/* Does a `password` key of `text` still hold the mask (`******`, quoted or not), as get-config
 * answered it? A file exported by `dmctl config export` is refused by import until each is put
 * back: sent as it is, the mask would be taken for the password. */
bool dmh_config_mask_left(const char *text, bool yaml);

#endif /* DMH_CONFIG_MASK_H */
