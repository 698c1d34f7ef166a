/*
 * convert-task (commands.def; DM's POST /api/v1/tasks/converters, DMAPIConvertTask): a Task into
 * DM's YAML task file and back, or a task file's text into a Task. The same on a daemon and a
 * master: it reads no state, opens no database, and the text is loaded from a private copy
 * (dmh_control_file_from_text) with the trust of sent text (config.h, DMH_CFG_SUBMITTED).
 *
 *   {"task": {...} or its JSON text}   -> the Task as DM's YAML, loaded by the loader, read back
 *   {"content": TEXT[, "path": NAME]}   -> the task file (DM's YAML; libconfig when NAME does not
 *                                          end in .yaml/.yml), loaded, as a Task and its DM YAML
 *
 * The answer (DM's ConverterTaskResponse beside result/msg): "task" (the Task from the loaded
 * config: what dmhost understood, not an echo) and "task_config_file" (the DM YAML text). A Task the
 * loader refuses answers the refusal and "task_config_file" too: its message names a line of that
 * text. DM also requires the task's sources to be known to the cluster (ErrConfigSourceIDNotFound);
 * dmhost converts without asking (docs/control.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_openapi.h"
#include "control.h"
#include "dmhost/sdk.h"

/* The task file at `path` (a private copy) loaded as sent text, then as a Task. */
static json_object *convert_load(const char *path, dm_error *err) {
  const dmh_cfg_trust trust = {.origin = DMH_CFG_SUBMITTED};
  dmh_task_config *t = NULL;
  if (dmh_task_config_load_as(path, &trust, &t, err) != 0)
    return NULL;
  json_object *task = dmh_openapi_task_from_config(t, err);
  dmh_task_config_free(t);
  return task;
}

int dmh_control_task_json_check(json_object *task, const dmh_cfg_trust *trust, dm_error *err) {
  char *yaml = NULL;
  dmh_control_file f;
  memset(&f, 0, sizeof f);
  int rc = -1;
  if (dmh_openapi_task_to_yaml(task, &yaml, err) == 0 &&
      dmh_control_file_from_text("task.yaml", yaml, false, &f, err) == 0) {
    dmh_task_config *t = NULL;
    rc = dmh_task_config_load_as(f.path, trust, &t, err) == 0 ? 0 : -1;
    if (rc < 0)
      dmh_control_file_blame(&f, "task.yaml", err);
    dmh_task_config_free(t);
  }
  dmh_control_file_free(&f);
  free(yaml);
  return rc;
}

int dmh_control_convert_task(void *ud, const dmh_control_cmd *cmd, json_object *args,
                             json_object *resp, dm_error *err) {
  (void)ud;
  json_object *in = NULL;
  bool has_task = json_object_object_get_ex(args, "task", &in) && in;
  bool has_content = json_object_object_get_ex(args, "content", NULL);
  if (has_task == has_content)
    /* DM's words (openapi_view.go) */
    return dmh_control_bad(err,
                           "convert-task: request body is invalid one of `task` or "
                           "`task_config_file` must be entered. (give \"task\" or \"content\", "
                           "not both; usage: %s)",
                           cmd->usage);
  char *yaml = NULL;
  json_object *parsed = NULL, *task = NULL;
  dmh_control_file f;
  memset(&f, 0, sizeof f);
  int rc = -1;
  if (has_task) {
    if (json_object_is_type(in, json_type_string)) {
      enum json_tokener_error jerr;
      parsed = json_tokener_parse_verbose(json_object_get_string(in), &jerr);
      if (!parsed) {
        dmh_control_bad(err, "convert-task: \"task\" is not JSON: %s",
                        json_tokener_error_desc(jerr));
        goto out;
      }
      in = parsed;
    }
    if (dmh_openapi_task_to_yaml(in, &yaml, err) < 0 ||
        dmh_control_file_from_text("task.yaml", yaml, false, &f, err) < 0)
      goto out;
    if (!(task = convert_load(f.path, err)))
      dmh_control_file_blame(&f, "task.yaml", err);
  } else {
    const char *name = NULL;
    if (dmh_control_arg_string(cmd, args, "path", false, &name, err) < 0)
      goto out;
    if (name && strchr(name, '/'))
      name = strrchr(name, '/') + 1; /* only the name says the format: no path is opened */
    if (dmh_control_file_get(cmd, args, name && *name ? name : "task.yaml", false, &f, err) < 0)
      goto out;
    if (!(task = convert_load(f.path, err)))
      dmh_control_file_blame(&f, name && *name ? name : "task.yaml", err);
    /* DM answers its own YAML of the loaded task: dmhost writes DM's YAML of the Task */
    if (task && dmh_openapi_task_to_yaml(task, &yaml, err) < 0) {
      /* a chain DM's Task has no mode for (load&sync, custom units) */
      if (strlen(err->message) + 60 < sizeof err->message)
        strcat(err->message, " (the task file read as DM's Task, which cannot say it)");
      json_object_put(task);
      task = NULL;
    }
  }
  if (yaml)
    json_object_object_add(resp, "task_config_file", json_object_new_string(yaml));
  if (!task) {
    if (has_task && yaml && strlen(err->message) + 80 < sizeof err->message)
      strcat(err->message, " (the line of the task as DM's YAML: task_config_file shows it)");
    goto out;
  }
  json_object_object_add(resp, "task", task);
  rc = 0;
out:
  dmh_control_file_free(&f);
  json_object_put(parsed);
  free(yaml);
  return rc;
}
