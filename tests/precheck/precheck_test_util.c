#include "precheck_test_util.h"

#include <stdio.h>
#include <string.h>

int pt_run(lt_env *e, dmh_precheck *pc) {
  dm_error err;
  *pc = (dmh_precheck){0};
  if (dmh_precheck_run(pc, e->task, e->source, &err) < 0) {
    fprintf(stderr, "precheck: %s\n", err.message);
    return -1;
  }
  return 0;
}

const dmh_check_result *pt_item(const dmh_precheck *pc, const char *name) {
  for (int i = 0; i < pc->n; i++)
    if (strcmp(pc->results[i].name, name) == 0)
      return &pc->results[i];
  return NULL;
}

const char *pt_msgs(const dmh_check_result *r, char *buf, size_t len) {
  size_t at = 0;
  buf[0] = '\0';
  for (int k = 0; r && k < r->n_errors && at < len; k++)
    at += (size_t)snprintf(buf + at, len - at, "%s%s", k ? " | " : "", r->errors[k].msg);
  return buf;
}

bool pt_is(const dmh_precheck *pc, const char *name, dmh_check_state state, const char *part) {
  const dmh_check_result *r = pt_item(pc, name);
  char buf[2048];
  if (!r) {
    fprintf(stderr, "precheck item %s did not run\n", name);
    return false;
  }
  pt_msgs(r, buf, sizeof buf);
  if (r->state != state || (part && !strstr(buf, part))) {
    fprintf(stderr, "precheck item %s: state %d (want %d), findings '%s' (want '%s')\n", name,
            (int)r->state, (int)state, buf, part ? part : "");
    return false;
  }
  return true;
}
