/* dmctl verify's --fix-sql and exit code. See dmctl_verify.h. */
#include "dmctl_verify.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "dmhost/sdk.h"
#include "error_json.h"
#include "verify.h"

int dmctl_verify_take(int *argc, char **argv, const char **out, dm_error *err) {
  *out = NULL;
  if (strcmp(argv[0], "verify") != 0)
    return 0;
  for (int i = 1; i < *argc; i++) {
    const char *a = argv[i];
    bool joined = strncmp(a, "--fix-sql=", 10) == 0;
    if (strcmp(a, "--fix-sql") != 0 && !joined)
      continue;
    if ((!joined && i + 1 >= *argc) || (joined && !a[10]) || *out) {
      dm_error_set(err, DM_ERR_CONTROL_REQUEST, NULL,
                   "verify: --fix-sql %s (usage: verify TASK "
                   "[--fix-sql FILE])",
                   *out ? "is given twice" : "needs a file name");
      return -1;
    }
    *out = joined ? a + 10 : argv[i + 1];
    argv[i] = "--fix-sql";
    if (!joined) {
      memmove(&argv[i + 1], &argv[i + 2], (size_t)(*argc - i - 2) * sizeof *argv);
      (*argc)--;
    }
  }
  return *out ? dmh_verify_fix_check(*out, err) : 0;
}

/* Every report's "fix_sql", taken out of it, one after another (each opens with its SET lines). */
static char *dmctl_verify_fix_text(json_object *resp, size_t *len) {
  json_object *reports = NULL;
  size_t cap = 1;
  *len = 0;
  char *text = calloc(1, 1);
  if (!text || !json_object_object_get_ex(resp, "reports", &reports))
    return text;
  for (size_t i = 0; i < json_object_array_length(reports); i++) {
    json_object *r = json_object_array_get_idx(reports, i), *f = NULL;
    if (!json_object_object_get_ex(r, "fix_sql", &f))
      continue;
    size_t n = (size_t)json_object_get_string_len(f);
    char *grown = realloc(text, cap + n);
    if (!grown) {
      free(text);
      return NULL;
    }
    text = grown;
    memcpy(text + *len, json_object_get_string(f), n);
    *len += n;
    cap += n;
    text[*len] = '\0';
    json_object_object_del(r, "fix_sql");
  }
  return text;
}

int dmctl_verify_finish(json_object *resp, const char *path) {
  json_object *v = NULL;
  bool ok = json_object_object_get_ex(resp, "result", &v) && json_object_get_boolean(v);
  size_t len = 0;
  char *text = path ? dmctl_verify_fix_text(resp, &len) : NULL;
  dm_error err;
  if (path && ok && !text) {
    dm_error_set(&err, DM_ERR_NO_MEMORY, NULL, "verify: out of memory for the fix statements");
    dmh_control_set_error(resp, &err);
    ok = false;
  } else if (path && ok && dmh_verify_fix_write(path, text, len, &err) < 0) {
    dmh_control_set_error(resp, &err);
    ok = false;
  } else if (path && ok) {
    json_object_object_add(resp, "fix_sql_file", json_object_new_string(path));
  }
  free(text);
  if (!ok)
    return 2;
  const char *result =
      json_object_object_get_ex(resp, "verify", &v) ? json_object_get_string(v) : NULL;
  if (result && strcmp(result, "equal") == 0)
    return 0;
  return result && strcmp(result, "different") == 0 ? 1 : 2;
}
