/* get-config (dmctl config task|source NAME): the stored file's text, passwords masked. */
#include "registry_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config_mask.h"
#include "dmhost/sdk.h"

/* The text of the file at file_rel in the state dir, masked, as "cfg". The copies are replaced by
 * an atomic rename (state.h), so a read racing update-task sees the old file or the new one. */
static int reg_config_answer(dmh_registry *r, const char *what, const char *name,
                             const char *file_rel, json_object *resp, dm_error *err) {
  char *abs = dmh_state_path(r->state_dir, file_rel);
  char *text = abs ? dmh_state_read_all(abs, NULL) : NULL;
  char *masked = text ? dmh_config_masked(text, dmh_config_is_yaml(abs)) : NULL;
  int rc = 0;
  if (!masked) {
    int e = errno;
    rc = -1;
    if (text || !abs)
      dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "get-config %s %s: out of memory", what, name);
    else
      dm_error_set(err, DM_ERR_STATE, strerror(e), "get-config %s %s: cannot read its copy %s",
                   what, name, abs);
  } else {
    json_object_object_add(resp, "cfg", json_object_new_string(masked));
    /* the text's form, which its file name must say (config export names the file by it) */
    json_object_object_add(resp, "format",
                           json_object_new_string(dmh_config_is_yaml(abs) ? "yaml" : "libconfig"));
  }
  if (text) /* the clear text is not left in freed memory */
    memset(text, 0, strlen(text));
  free(text);
  free(masked);
  free(abs);
  return rc;
}

int dmh_registry_get_config(dmh_registry *r, const char *what, const char *name, json_object *resp,
                            dm_error *err) {
  if (strcmp(what, "source") == 0) {
    reg_source *s = reg_get_source(r, name);
    if (!s) {
      dm_error_set(err, DM_ERR_NOT_FOUND, NULL,
                   "get-config source %s: the source is not bound to this worker; list the "
                   "sources with `dmctl operate-source show`",
                   name);
      return -1;
    }
    int rc = reg_config_answer(r, what, name, s->file_rel, resp, err);
    reg_source_unref(r, s);
    return rc;
  }
  reg_task *t = reg_get_task(r, "get-config task", name, err);
  if (!t)
    return -1;
  int rc = reg_config_answer(r, what, name, t->file_rel, resp, err);
  reg_task_unref(r, t);
  return rc;
}
