/* Typed, located lookups over libconfig settings for the source and task files. */
#include "config_util.h"

#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmhost/sdk.h"

#define CFGUTIL_PATH_MAX 256

const char *dmh_cfg_file_name(const dmh_cfg_ctx *c, const char *file, char *buf, size_t size) {
  /* libconfig 1.5 records an @include by the name written in the file, which resolves against the
   * include folder (the file's own), not against the working directory. */
  if (!file || strcmp(file, c->path) == 0)
    return c->path;
  if (file[0] == '/' || !c->dir)
    return file;
  snprintf(buf, size, "%s/%s", c->dir, file);
  return buf;
}

static int cfgutil_failv(dmh_cfg_ctx *c, int32_t code, const char *file, int line, const char *fmt,
                         va_list ap) {
  char msg[DM_ERROR_MESSAGE_MAX], name[CFGUTIL_PATH_MAX * 2];
  vsnprintf(msg, sizeof msg, fmt, ap);
  dm_error_set(c->err, code, NULL, "%s:%d: %s", dmh_cfg_file_name(c, file, name, sizeof name), line,
               msg);
  return -1;
}

int dmh_cfg_fail(dmh_cfg_ctx *c, int32_t code, const config_setting_t *at, const char *fmt, ...) {
  /* The root has line 0; a setting missing from the top level concerns the file as a whole, and
   * line 1 is where an editor can jump to. */
  int line = at ? (int)config_setting_source_line(at) : 0;
  const char *file = at ? config_setting_source_file(at) : NULL;
  va_list ap;
  va_start(ap, fmt);
  cfgutil_failv(c, code, file, line > 0 ? line : 1, fmt, ap);
  va_end(ap);
  return -1;
}

int dmh_cfg_fail_line(dmh_cfg_ctx *c, int32_t code, int line, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  cfgutil_failv(c, code, NULL, line, fmt, ap);
  va_end(ap);
  return -1;
}

int dmh_cfg_no_memory(dmh_cfg_ctx *c) {
  dm_error_set(c->err, DM_ERR_NO_MEMORY, NULL, "%s:0: out of memory while reading the %s", c->path,
               c->what);
  return -1;
}

const char *dmh_cfg_path_of(const config_setting_t *s, char *buf, size_t size) {
  const config_setting_t *chain[32];
  int depth = 0;
  for (const config_setting_t *p = s; p && !config_setting_is_root(p) && depth < 32;
       p = config_setting_parent(p))
    chain[depth++] = p;
  size_t len = 0;
  buf[0] = '\0';
  for (int i = depth - 1; i >= 0 && len < size; i--) {
    const char *sep = i == depth - 1 ? "" : ".";
    const char *name = config_setting_name(chain[i]);
    int n = name ? snprintf(buf + len, size - len, "%s%s", sep, name)
                 : snprintf(buf + len, size - len, "%s[%d]", sep, config_setting_index(chain[i]));
    if (n < 0)
      break;
    len += (size_t)n;
  }
  return buf;
}

const char *dmh_cfg_member_path(const config_setting_t *group, const char *name, char *buf,
                                size_t size) {
  dmh_cfg_path_of(group, buf, size);
  size_t len = strlen(buf);
  snprintf(buf + len, size - len, "%s%s", len ? "." : "", name);
  return buf;
}

const char *dmh_cfg_type_name(int type) {
  switch (type) {
  case CONFIG_TYPE_GROUP:
    return "a group { ... }";
  case CONFIG_TYPE_INT:
  case CONFIG_TYPE_INT64:
    return "an integer";
  case CONFIG_TYPE_FLOAT:
    return "a float";
  case CONFIG_TYPE_STRING:
    return "a string";
  case CONFIG_TYPE_BOOL:
    return "a boolean";
  case CONFIG_TYPE_ARRAY:
    return "an array [ ... ]";
  case CONFIG_TYPE_LIST:
    return "a list ( ... )";
  default:
    return "nothing";
  }
}

int dmh_cfg_edit_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 64 || lb > 64)
    return (int)(la > lb ? la : lb);
  int d[65][65];
  for (size_t i = 0; i <= la; i++)
    d[i][0] = (int)i;
  for (size_t j = 0; j <= lb; j++)
    d[0][j] = (int)j;
  for (size_t i = 1; i <= la; i++) {
    for (size_t j = 1; j <= lb; j++) {
      int cost = a[i - 1] == b[j - 1] ? 0 : 1;
      int best = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < best)
        best = d[i][j - 1] + 1;
      if (d[i - 1][j - 1] + cost < best)
        best = d[i - 1][j - 1] + cost;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
          d[i - 2][j - 2] + 1 < best)
        best = d[i - 2][j - 2] + 1;
      d[i][j] = best;
    }
  }
  return d[la][lb];
}

const char *dmh_cfg_closest(const char *s, const char *const *names, int n) {
  /* A third of the letters wrong is still a typo; more is a different word. */
  int limit = (int)strlen(s) / 3;
  if (limit < 1)
    limit = 1;
  const char *best = NULL;
  int best_d = limit + 1;
  for (int i = 0; n < 0 ? names[i] != NULL : i < n; i++) {
    int d = dmh_cfg_edit_distance(s, names[i]);
    if (d < best_d) {
      best_d = d;
      best = names[i];
    }
  }
  return best;
}

static bool cfgutil_known(const char *name, const char *const *known) {
  for (int i = 0; known[i]; i++)
    if (strcmp(name, known[i]) == 0)
      return true;
  return false;
}

int dmh_cfg_check_keys(dmh_cfg_ctx *c, const config_setting_t *group, const char *const *known,
                       const dmh_cfg_hint *misplaced) {
  int n = config_setting_length(group);
  for (int i = 0; i < n; i++) {
    const config_setting_t *m = config_setting_get_elem(group, (unsigned)i);
    const char *name = config_setting_name(m);
    if (!name || cfgutil_known(name, known))
      continue;
    char path[CFGUTIL_PATH_MAX];
    dmh_cfg_path_of(m, path, sizeof path);
    for (int h = 0; misplaced && misplaced[h].name; h++)
      if (strcmp(name, misplaced[h].name) == 0)
        return dmh_cfg_fail(c, DM_ERR_CONFIG_UNKNOWN, m, "unknown setting `%s` in the %s; %s", path,
                            c->what, misplaced[h].hint);
    const char *near = dmh_cfg_closest(name, known, -1);
    if (near)
      return dmh_cfg_fail(c, DM_ERR_CONFIG_UNKNOWN, m,
                          "unknown setting `%s` in the %s; did you mean `%s`?", path, c->what,
                          near);
    char list[320];
    size_t len = 0;
    list[0] = '\0';
    for (int k = 0; known[k] && len < sizeof list; k++) {
      int w = snprintf(list + len, sizeof list - len, "%s%s", k ? ", " : "", known[k]);
      if (w < 0)
        break;
      len += (size_t)w;
    }
    return dmh_cfg_fail(c, DM_ERR_CONFIG_UNKNOWN, m,
                        "unknown setting `%s` in the %s; the settings accepted here are: %s", path,
                        c->what, list);
  }
  return 0;
}

/* The member, or NULL with a MISSING error when required (*rc = -1) or without (*rc = 0). */
static config_setting_t *cfgutil_member(dmh_cfg_ctx *c, const config_setting_t *group,
                                        const char *name, unsigned flags, int *rc) {
  config_setting_t *m = config_setting_get_member(group, name);
  *rc = 0;
  if (m || !(flags & DMH_CFG_REQUIRED))
    return m;
  char path[CFGUTIL_PATH_MAX];
  dmh_cfg_member_path(group, name, path, sizeof path);
  if (config_setting_is_root(group))
    *rc = dmh_cfg_fail(c, DM_ERR_CONFIG_MISSING, NULL, "missing required setting `%s` in the %s",
                       path, c->what);
  else
    *rc = dmh_cfg_fail(c, DM_ERR_CONFIG_MISSING, group,
                       "missing required setting `%s` in the %s (in the group starting here)", path,
                       c->what);
  return NULL;
}

static int cfgutil_wrong_type(dmh_cfg_ctx *c, const config_setting_t *m, const char *expected) {
  char path[CFGUTIL_PATH_MAX];
  return dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID, m, "`%s` in the %s must be %s, not %s",
                      dmh_cfg_path_of(m, path, sizeof path), c->what, expected,
                      dmh_cfg_type_name(config_setting_type(m)));
}

int dmh_cfg_get_string(dmh_cfg_ctx *c, const config_setting_t *group, const char *name,
                       unsigned flags, char **out) {
  int rc;
  config_setting_t *m = cfgutil_member(c, group, name, flags, &rc);
  if (!m)
    return rc;
  if (config_setting_type(m) != CONFIG_TYPE_STRING)
    return cfgutil_wrong_type(c, m, "a string in double quotes");
  const char *v = config_setting_get_string(m);
  if ((flags & DMH_CFG_NONEMPTY) && v[0] == '\0') {
    char path[CFGUTIL_PATH_MAX];
    return dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID, m, "`%s` in the %s must not be empty",
                        dmh_cfg_path_of(m, path, sizeof path), c->what);
  }
  char *dup = strdup(v);
  if (!dup)
    return dmh_cfg_no_memory(c);
  *out = dup;
  return 1;
}

int dmh_cfg_get_bool(dmh_cfg_ctx *c, const config_setting_t *group, const char *name, bool *out) {
  int rc;
  config_setting_t *m = cfgutil_member(c, group, name, 0, &rc);
  if (!m)
    return rc;
  if (config_setting_type(m) != CONFIG_TYPE_BOOL)
    return cfgutil_wrong_type(c, m, "a boolean (true or false, without quotes)");
  *out = config_setting_get_bool(m) != 0;
  return 1;
}

int dmh_cfg_get_int(dmh_cfg_ctx *c, const config_setting_t *group, const char *name, unsigned flags,
                    int64_t min, int64_t max, const char *unit, int64_t *out) {
  int rc;
  config_setting_t *m = cfgutil_member(c, group, name, flags, &rc);
  if (!m)
    return rc;
  char expected[160];
  snprintf(expected, sizeof expected, "an integer in %lld..%lld%s%s", (long long)min,
           (long long)max, unit ? " " : "", unit ? unit : "");
  int type = config_setting_type(m);
  if (type != CONFIG_TYPE_INT && type != CONFIG_TYPE_INT64)
    return cfgutil_wrong_type(c, m, expected);
  int64_t v = config_setting_get_int64(m);
  if (v < min || v > max) {
    char path[CFGUTIL_PATH_MAX];
    /* libconfig 1.5 keeps only the low 32 bits of a literal without the L suffix, so a large value
     * arrives here negative. */
    const char *l_hint = type == CONFIG_TYPE_INT && v < 0 && max > INT32_MAX
                             ? "; write values above 2147483647 with an L suffix (4000000000L)"
                             : "";
    return dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID, m, "`%s` in the %s must be %s, not %lld%s",
                        dmh_cfg_path_of(m, path, sizeof path), c->what, expected, (long long)v,
                        l_hint);
  }
  *out = v;
  return 1;
}

int dmh_cfg_get_seconds_ms(dmh_cfg_ctx *c, const config_setting_t *group, const char *name,
                           uint32_t *out_ms) {
  int rc;
  config_setting_t *m = cfgutil_member(c, group, name, 0, &rc);
  if (!m)
    return rc;
  static const char expected[] = "a number of seconds above 0 (integer or float, e.g. 30 or 0.5)";
  double s;
  switch (config_setting_type(m)) {
  case CONFIG_TYPE_INT:
  case CONFIG_TYPE_INT64:
    s = (double)config_setting_get_int64(m);
    break;
  case CONFIG_TYPE_FLOAT:
    s = config_setting_get_float(m);
    break;
  default:
    return cfgutil_wrong_type(c, m, expected);
  }
  /* Below a millisecond rounds to 0, which the supervisor would read as "no wait at all". */
  double ms = s * 1000.0;
  if (!(ms >= 1.0) || ms > (double)UINT32_MAX) {
    char path[CFGUTIL_PATH_MAX];
    return dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID, m,
                        "`%s` in the %s must be a number of seconds in 0.001..4294967, not %g",
                        dmh_cfg_path_of(m, path, sizeof path), c->what, s);
  }
  *out_ms = (uint32_t)(ms + 0.5);
  return 1;
}

int dmh_cfg_get_group(dmh_cfg_ctx *c, const config_setting_t *group, const char *name,
                      unsigned flags, const char *example, config_setting_t **out) {
  int rc;
  config_setting_t *m = cfgutil_member(c, group, name, flags, &rc);
  if (!m)
    return rc;
  if (config_setting_type(m) != CONFIG_TYPE_GROUP) {
    char path[CFGUTIL_PATH_MAX];
    return dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID, m,
                        "`%s` in the %s must be a group, like %s; not %s",
                        dmh_cfg_path_of(m, path, sizeof path), c->what, example,
                        dmh_cfg_type_name(config_setting_type(m)));
  }
  *out = m;
  return 1;
}

int dmh_cfg_get_string_list(dmh_cfg_ctx *c, const config_setting_t *group, const char *name,
                            char ***out, int *n) {
  int rc;
  config_setting_t *m = cfgutil_member(c, group, name, 0, &rc);
  if (!m)
    return rc;
  static const char expected[] = "an array of strings, like [\"a\", \"b\"]";
  int type = config_setting_type(m);
  if (type != CONFIG_TYPE_ARRAY && type != CONFIG_TYPE_LIST)
    return cfgutil_wrong_type(c, m, expected);
  int len = config_setting_length(m);
  char **v = len ? calloc((size_t)len, sizeof *v) : NULL;
  if (len && !v)
    return dmh_cfg_no_memory(c);
  for (int i = 0; i < len; i++) {
    const config_setting_t *e = config_setting_get_elem(m, (unsigned)i);
    char path[CFGUTIL_PATH_MAX];
    if (config_setting_type(e) != CONFIG_TYPE_STRING || !config_setting_get_string(e)[0]) {
      dmh_cfg_strv_free(v, i);
      if (config_setting_type(e) != CONFIG_TYPE_STRING)
        return cfgutil_wrong_type(c, e, "a string (the setting is an array of strings)");
      return dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID, e, "`%s` in the %s must not be empty",
                          dmh_cfg_path_of(e, path, sizeof path), c->what);
    }
    v[i] = strdup(config_setting_get_string(e));
    if (!v[i]) {
      dmh_cfg_strv_free(v, i);
      return dmh_cfg_no_memory(c);
    }
  }
  *out = v;
  *n = len;
  return 1;
}

int dmh_cfg_check_regex(dmh_cfg_ctx *c, const config_setting_t *at, const char *re) {
  regex_t rx;
  int rc = regcomp(&rx, re, REG_EXTENDED | REG_NOSUB);
  if (rc == 0) {
    regfree(&rx);
    return 0;
  }
  char why[128];
  regerror(rc, &rx, why, sizeof why);
  regfree(&rx);
  char path[CFGUTIL_PATH_MAX];
  return dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID, at,
                      "`%s` in the %s: \"%s\" is not a valid POSIX extended regular expression "
                      "(%s)",
                      dmh_cfg_path_of(at, path, sizeof path), c->what, re, why);
}

static const char *const cfgutil_db_keys[] = {"host", "port", "user", "password", "socket", NULL};

int dmh_cfg_get_db(dmh_cfg_ctx *c, const config_setting_t *parent, const char *name,
                   dmh_db_config *out) {
  config_setting_t *g = NULL;
  char example[160];
  snprintf(example, sizeof example,
           "`%s = { host = \"127.0.0.1\"; port = 3306; user = \"root\"; password = \"\"; };`",
           name);
  int rc = dmh_cfg_get_group(c, parent, name, DMH_CFG_REQUIRED, example, &g);
  if (rc < 0)
    return -1;
  if (dmh_cfg_check_keys(c, g, cfgutil_db_keys, NULL) < 0)
    return -1;
  char *host = NULL, *user = NULL, *password = NULL, *sock = NULL;
  int64_t port = 3306;
  if (dmh_cfg_get_string(c, g, "host", DMH_CFG_REQUIRED | DMH_CFG_NONEMPTY, &host) < 0 ||
      dmh_cfg_get_int(c, g, "port", 0, 1, 65535, NULL, &port) < 0 ||
      dmh_cfg_get_string(c, g, "user", DMH_CFG_REQUIRED | DMH_CFG_NONEMPTY, &user) < 0 ||
      dmh_cfg_get_string(c, g, "password", 0, &password) < 0 ||
      dmh_cfg_get_string(c, g, "socket", DMH_CFG_NONEMPTY, &sock) < 0)
    goto fail;
  if (!password && !(password = strdup(""))) {
    dmh_cfg_no_memory(c);
    goto fail;
  }
  out->ep.host = host;
  out->ep.port = (int)port;
  out->ep.user = user;
  out->ep.password = password;
  out->ep.socket = sock;
  return 0;
fail:
  free(host);
  free(user);
  free(password);
  free(sock);
  return -1;
}

void dmh_cfg_db_free(dmh_db_config *db) {
  free((char *)db->ep.host);
  free((char *)db->ep.user);
  free((char *)db->ep.password);
  free((char *)db->ep.socket);
  memset(db, 0, sizeof *db);
}

char *dmh_cfg_abs_path(const char *dir, const char *p) {
  size_t cap = strlen(dir) + strlen(p) + 3;
  char *joined = malloc(cap);
  char *out = malloc(cap);
  if (!joined || !out) {
    free(joined);
    free(out);
    return NULL;
  }
  if (p[0] == '/')
    snprintf(joined, cap, "%s", p);
  else
    snprintf(joined, cap, "%s/%s", dir, p);
  /* Lexical normalization: the folder may not exist yet (relay-dir is created by the relay). */
  size_t len = 0;
  char *save = NULL;
  for (char *part = strtok_r(joined, "/", &save); part; part = strtok_r(NULL, "/", &save)) {
    if (strcmp(part, ".") == 0)
      continue;
    if (strcmp(part, "..") == 0) {
      while (len > 0 && out[len - 1] != '/')
        len--;
      if (len > 0)
        len--;
      continue;
    }
    out[len++] = '/';
    size_t n = strlen(part);
    memcpy(out + len, part, n);
    len += n;
  }
  if (len == 0)
    out[len++] = '/';
  out[len] = '\0';
  free(joined);
  return out;
}

void dmh_cfg_strv_free(char **v, int n) {
  for (int i = 0; v && i < n; i++)
    free(v[i]);
  free(v);
}
