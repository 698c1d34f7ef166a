/* Typed, located lookups over libconfig settings for the source and task files. */
#include "config_util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dmhost/sdk.h"

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

bool dmh_cfg_submitted(const dmh_cfg_ctx *c) {
  return c->trust && c->trust->origin == DMH_CFG_SUBMITTED;
}

/* Is `p` (absolute) below `dir` (both real paths)? */
static bool cfgutil_below(const char *p, const char *dir) {
  size_t n = strlen(dir);
  while (n > 1 && dir[n - 1] == '/')
    n--;
  return strncmp(p, dir, n) == 0 && (p[n] == '/' || (n == 1 && dir[0] == '/'));
}

bool dmh_cfg_secret_allowed(const dmh_cfg_ctx *c, const char *file) {
  if (!dmh_cfg_submitted(c))
    return true;
  /* The real path: a link below the folder must not lead out of it. */
  char *real = c->trust->secrets_dir ? realpath(file, NULL) : NULL;
  bool ok = real && cfgutil_below(real, c->trust->secrets_dir);
  free(real);
  return ok;
}

int dmh_cfg_check_secret_origin(dmh_cfg_ctx *c, const config_setting_t *at, const char *file) {
  if (!dmh_cfg_submitted(c))
    return 0;
  char path[CFGUTIL_PATH_MAX];
  dmh_cfg_path_of(at, path, sizeof path);
  if (!file)
    return dmh_cfg_fail(c, DM_ERR_CONFIG_SUBMITTED_SECRET, at,
                        "`%s` in a %s sent to the daemon (not a file the operator placed): the "
                        "daemon's environment is not for the sender to read; give the password "
                        "encrypted, or a password-file below the daemon's --secrets-dir",
                        path, c->what);
  if (dmh_cfg_secret_allowed(c, file))
    return 0;
  if (c->trust->secrets_dir)
    return dmh_cfg_fail(c, DM_ERR_CONFIG_SUBMITTED_SECRET, at,
                        "`%s` in a %s sent to the daemon names %s, which is not below the "
                        "daemon's --secrets-dir %s: a sent config may read secrets only there",
                        path, c->what, file, c->trust->secrets_dir);
  return dmh_cfg_fail(c, DM_ERR_CONFIG_SUBMITTED_SECRET, at,
                      "`%s` in a %s sent to the daemon (not a file the operator placed) names "
                      "the file %s: a sent config may name secret files only below a folder the "
                      "daemon was started with (--secrets-dir DIR)",
                      path, c->what, file);
}

int dmh_cfg_check_unit_paths_origin(dmh_cfg_ctx *c, const config_setting_t *g) {
  if (!dmh_cfg_submitted(c) || c->trust->allow_unit_paths)
    return 0;
  return dmh_cfg_fail(c, DM_ERR_CONFIG_SUBMITTED_UNIT_PATH, g,
                      "`unit-paths` in a %s sent to the daemon (not a file the operator placed): "
                      "a sent config may not choose the code the daemon loads; drop it (the "
                      "builds of --plugin-dir run), or start the daemon with "
                      "--allow-submitted-unit-paths",
                      c->what);
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
    /* A fixed room, whatever the file's path, so the message never runs past the error's own
     * limit and reads the same everywhere: names that do not fit are left to docs/config.md. */
    char list[320];
    const char more[] = ", ... (docs/config.md lists them all)";
    size_t len = 0;
    list[0] = '\0';
    for (int k = 0; known[k]; k++) {
      if (len + 2 + strlen(known[k]) >= sizeof list - sizeof more) {
        memcpy(list + len, more, sizeof more);
        break;
      }
      len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", k ? ", " : "", known[k]);
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
    /* The value as written: dmh_cfg_read_text kept libconfig from wrapping it. */
    char path[CFGUTIL_PATH_MAX];
    return dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID, m, "`%s` in the %s must be %s, not %lld",
                        dmh_cfg_path_of(m, path, sizeof path), c->what, expected, (long long)v);
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

int dmh_cfg_get_path(dmh_cfg_ctx *c, const config_setting_t *g, const char *name, char **out) {
  char *raw = NULL;
  int rc = dmh_cfg_get_string(c, g, name, DMH_CFG_NONEMPTY, &raw);
  if (rc <= 0)
    return rc;
  *out = dmh_cfg_abs_path(c->dir, raw);
  free(raw);
  return *out ? 1 : dmh_cfg_no_memory(c);
}

char *dmh_cfg_abs_path(const char *dir, const char *p) {
  if (!dir) /* a config read from text, not a file: relative to the current folder */
    dir = ".";
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

/* ---- integer literals ---- */

/*
 * libconfig 1.5 reads an integer literal without the L suffix into an int: 4294970633 becomes
 * 3337, 2147483648 becomes -2147483648, 0xFFFFFFFF becomes -1, and the setting's range check then
 * sees a plausible value. Its scanner is not ours to change, so the text is scanned first with
 * the same token rules: a literal outside the int range gets the L suffix (read as a 64-bit
 * integer, its value kept for the range check), a literal beyond 64 bits is refused.
 */

#define CFGINT_INCLUDE_DEPTH 10 /* libconfig's own limit */

typedef struct cfgint_scan {
  dmh_cfg_ctx *c;
  const char *file; /* as named in messages */
  const char *text;
  size_t len;
  bool rewrite; /* the main file: add the suffix; an @include'd one: refuse */
  char *out;    /* rewrite: the new text */
  size_t out_len;
  int depth;
} cfgint_scan;

static bool cfgint_name_char(char ch) {
  return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
         ch == '-' || ch == '_' || ch == '*';
}

static bool cfgint_digit(char ch) {
  return ch >= '0' && ch <= '9';
}

static int cfgint_scan_text(cfgint_scan *s);

static int cfgint_failv(cfgint_scan *s, int32_t code, int line, const char *fmt, va_list ap) {
  char msg[DM_ERROR_MESSAGE_MAX];
  vsnprintf(msg, sizeof msg, fmt, ap);
  dm_error_set(s->c->err, code, NULL, "%s:%d: %s", s->file, line, msg);
  return -1;
}

static int cfgint_fail(cfgint_scan *s, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int cfgint_fail(cfgint_scan *s, int line, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  cfgint_failv(s, DM_ERR_CONFIG_INVALID, line, fmt, ap);
  va_end(ap);
  return -1;
}

static int cfgint_fail_code(cfgint_scan *s, int32_t code, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int cfgint_fail_code(cfgint_scan *s, int32_t code, int line, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  cfgint_failv(s, code, line, fmt, ap);
  va_end(ap);
  return -1;
}

/* The @include on this line: scan that file too (libconfig reads it itself, unchanged). */
static int cfgint_include(cfgint_scan *s, const char *name, size_t name_len, int line) {
  if (s->depth >= CFGINT_INCLUDE_DEPTH)
    return 0; /* libconfig refuses it with its own message */
  char rel[CFGUTIL_PATH_MAX], buf[CFGUTIL_PATH_MAX * 2];
  snprintf(rel, sizeof rel, "%.*s", (int)name_len, name);
  const char *path = dmh_cfg_file_name(s->c, rel, buf, sizeof buf);
  /* libconfig opens the file itself and reads it whole: what it will read is checked here first,
   * with the same limit as the main file (a FIFO or /dev/zero would block or fill memory). */
  if (dmh_cfg_submitted(s->c))
    return cfgint_fail_code(s, DM_ERR_CONFIG_SUBMITTED_INCLUDE, line,
                            "@include \"%s\" in a %s sent to the daemon (not a file the "
                            "operator placed): an include reads a file of the daemon's machine; "
                            "put the settings in the file itself",
                            rel, s->c->what);
  char *text = NULL, why[256];
  size_t len = 0;
  int rc =
      dmh_cfg_read_bounded(path, DMH_CFG_TEXT_MAX, false, NULL, NULL, &text, &len, why, sizeof why);
  if (rc == -2)
    return dmh_cfg_no_memory(s->c);
  if (rc < 0)
    return cfgint_fail_code(s, rc == -3 ? DM_ERR_CONFIG_UNSAFE_FILE : DM_ERR_CONFIG_IO, line,
                            "cannot read @include \"%s\" (%s): %s", rel, path, why);
  cfgint_scan sub = {.c = s->c, .file = path, .text = text, .len = len, .depth = s->depth + 1};
  rc = cfgint_scan_text(&sub);
  free(text);
  return rc;
}

/* One integer literal at text[start..end) (suffix excluded), `suffixed` when an L follows. */
static int cfgint_literal(cfgint_scan *s, size_t start, size_t end, bool hex, bool suffixed,
                          int line) {
  char lit[72];
  size_t n = end - start;
  if (n >= sizeof lit)
    n = sizeof lit - 1;
  memcpy(lit, s->text + start, n);
  lit[n] = '\0';
  errno = 0;
  bool fits64;
  long long v = 0;
  if (hex) {
    unsigned long long u = strtoull(lit, NULL, 16);
    fits64 = errno != ERANGE && end - start < sizeof lit && u <= (unsigned long long)INT64_MAX;
    v = (long long)u;
  } else {
    v = strtoll(lit, NULL, 10);
    fits64 = errno != ERANGE && end - start < sizeof lit;
  }
  if (!fits64)
    return cfgint_fail(s, line,
                       "the integer %s%s does not fit in 64 bits: a setting takes an integer in "
                       "%lld..%lld at most, and its own range below that",
                       lit, end - start >= sizeof lit ? "..." : "", (long long)INT64_MIN,
                       (long long)INT64_MAX);
  if (suffixed || (v >= INT32_MIN && v <= INT32_MAX))
    return 0;
  if (!s->rewrite)
    return cfgint_fail(s, line,
                       "the integer %s is outside %d..%d, all libconfig keeps of an integer "
                       "without the L suffix in an @include'd file (it would read %d); write %sL, "
                       "and the setting's own range applies",
                       lit, INT32_MIN, INT32_MAX, (int)(uint32_t)(unsigned long long)v, lit);
  return 1; /* the caller adds the suffix */
}

static int cfgint_emit(cfgint_scan *s, const char *p, size_t n) {
  if (!s->rewrite)
    return 0;
  memcpy(s->out + s->out_len, p, n);
  s->out_len += n;
  return 0;
}

static int cfgint_scan_text(cfgint_scan *s) {
  const char *t = s->text;
  size_t i = 0, len = s->len;
  int line = 1;
  bool line_start = true;
  while (i < len) {
    size_t from = i;
    char ch = t[i];
    if (ch == '\n') {
      line++;
      line_start = true;
      i++;
    } else if (ch == ' ' || ch == '\t' || ch == '\r') {
      i++;
    } else if (ch == '#' || (ch == '/' && i + 1 < len && t[i + 1] == '/')) {
      while (i < len && t[i] != '\n')
        i++;
    } else if (ch == '/' && i + 1 < len && t[i + 1] == '*') {
      for (i += 2; i < len && !(t[i] == '*' && i + 1 < len && t[i + 1] == '/'); i++)
        line += t[i] == '\n';
      i = i < len ? i + 2 : len;
    } else if (ch == '"') {
      for (i++; i < len && t[i] != '"'; i++) {
        if (t[i] == '\\' && i + 1 < len)
          i++;
        line += t[i] == '\n';
      }
      i = i < len ? i + 1 : len;
    } else if (ch == '@' && line_start && len - i > 8 && strncmp(t + i, "@include", 8) == 0) {
      size_t q = i + 8;
      while (q < len && (t[q] == ' ' || t[q] == '\t'))
        q++;
      if (q < len && t[q] == '"') {
        size_t e = q + 1;
        while (e < len && t[e] != '"' && t[e] != '\n')
          e++;
        if (e < len && t[e] == '"' && cfgint_include(s, t + q + 1, e - q - 1, line) < 0)
          return -1;
      }
      while (i < len && t[i] != '\n')
        i++;
    } else if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || ch == '*') {
      while (i < len && cfgint_name_char(t[i]))
        i++;
    } else if (cfgint_digit(ch) || ((ch == '-' || ch == '+' || ch == '.') && i + 1 < len &&
                                    (cfgint_digit(t[i + 1]) || t[i + 1] == '.'))) {
      bool hex = ch == '0' && i + 2 < len && (t[i + 1] == 'x' || t[i + 1] == 'X') &&
                 isxdigit((unsigned char)t[i + 2]);
      size_t end = i + (hex ? 2 : 1);
      while (end < len && (hex ? isxdigit((unsigned char)t[end]) : cfgint_digit(t[end])))
        end++;
      /* ".5", "-.5": a float from its first characters */
      bool is_float = !hex && (ch == '.' || t[i + 1] == '.');
      if (!hex && end < len && (is_float || t[end] == '.' || t[end] == 'e' || t[end] == 'E')) {
        /* A float (or the start of one): skip its digits, point and exponent. */
        is_float = true;
        while (end < len &&
               (cfgint_digit(t[end]) || t[end] == '.' || t[end] == 'e' || t[end] == 'E' ||
                ((t[end] == '-' || t[end] == '+') && (t[end - 1] == 'e' || t[end - 1] == 'E'))))
          end++;
      }
      i = end;
      if (!is_float) {
        bool suffixed = i < len && t[i] == 'L';
        int rc = cfgint_literal(s, from, end, hex, suffixed, line);
        if (rc < 0)
          return -1;
        cfgint_emit(s, t + from, end - from);
        if (rc == 1)
          cfgint_emit(s, "L", 1);
        line_start = false;
        continue;
      }
    } else {
      i++;
    }
    if (ch != '\n' && ch != ' ' && ch != '\t' && ch != '\r')
      line_start = false;
    cfgint_emit(s, t + from, i - from);
  }
  return 0;
}

static const char *cfgutil_kind_of(mode_t m) {
  return S_ISDIR(m)    ? "a directory"
         : S_ISFIFO(m) ? "a FIFO"
         : S_ISCHR(m)  ? "a character device"
         : S_ISBLK(m)  ? "a block device"
         : S_ISSOCK(m) ? "a socket"
         : S_ISLNK(m)  ? "a symbolic link"
                       : "not a regular file";
}

int dmh_cfg_read_bounded(const char *path, size_t max, bool nofollow,
                         int (*check)(const struct stat *st, void *ud, char *why, size_t size),
                         void *ud, char **out, size_t *len, char *why, size_t why_size) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | (nofollow ? O_NOFOLLOW : 0));
  if (fd < 0) {
    int e = errno;
    if (e == ELOOP && nofollow) {
      snprintf(why, why_size, "it is a symbolic link (give the file itself)");
      return -3;
    }
    snprintf(why, why_size, "%s", strerror(e));
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    snprintf(why, why_size, "%s", strerror(errno));
    close(fd);
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    snprintf(why, why_size, "it is %s, not a regular file", cfgutil_kind_of(st.st_mode));
    close(fd);
    return -3;
  }
  if ((uint64_t)st.st_size > max) {
    snprintf(why, why_size, "it is %lld bytes, over the limit of %zu", (long long)st.st_size, max);
    close(fd);
    return -3;
  }
  if (check && check(&st, ud, why, why_size) < 0) {
    close(fd);
    return -3;
  }
  /* The size can change under us: read until EOF, never more than max + 1 bytes. */
  char *buf = malloc(max + 2);
  if (!buf) {
    close(fd);
    return -2;
  }
  size_t n = 0;
  int e = 0;
  while (n <= max) {
    ssize_t r = read(fd, buf + n, max + 1 - n);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      e = errno;
    if (r <= 0)
      break;
    n += (size_t)r;
  }
  close(fd);
  if (e || n > max) {
    if (e)
      snprintf(why, why_size, "%s", strerror(e));
    else
      snprintf(why, why_size, "it is over the limit of %zu bytes", max);
    free(buf);
    return e ? -1 : -3;
  }
  buf[n] = '\0';
  *out = buf;
  *len = n;
  return 0;
}

/* A password file must be as private as the daemon's own secrets: owned by root or the daemon's
 * user, readable by the owner only. */
static int cfgutil_secret_owner(const struct stat *st, void *ud, char *why, size_t size) {
  (void)ud;
  unsigned mode = (unsigned)(st->st_mode & 07777);
  if (st->st_uid != 0 && st->st_uid != geteuid())
    snprintf(why, size, "it is owned by uid %u, not by root or the daemon's uid %u",
             (unsigned)st->st_uid, (unsigned)geteuid());
  else if (mode != 0600 && mode != 0400)
    snprintf(why, size, "its mode is %04o, not 0600 or 0400 (`chmod 600` it)", mode);
  else if (st->st_nlink != 1)
    snprintf(why, size, "it has %lu hard links (give a file of its own)",
             (unsigned long)st->st_nlink);
  else
    return 0;
  return -1;
}

int dmh_cfg_read_secret(const char *path, char **out, char *why, size_t why_size) {
  char *text = NULL;
  size_t len = 0;
  int rc = dmh_cfg_read_bounded(path, DMH_CFG_SECRET_MAX, true, cfgutil_secret_owner, NULL, &text,
                                &len, why, why_size);
  if (rc < 0)
    return rc;
  size_t first = strcspn(text, "\r\n");
  OPENSSL_cleanse(text + first, len - first);
  text[first] = '\0';
  *out = text;
  return 0;
}

char *dmh_cfg_read_raw(dmh_cfg_ctx *c, size_t *len) {
  char *text = NULL, why[256];
  *len = 0;
  int rc = dmh_cfg_read_bounded(c->path, DMH_CFG_TEXT_MAX, false, NULL, NULL, &text, len, why,
                                sizeof why);
  if (rc < 0) {
    if (rc == -2)
      dmh_cfg_no_memory(c);
    else
      dmh_cfg_fail_line(c, rc == -3 ? DM_ERR_CONFIG_UNSAFE_FILE : DM_ERR_CONFIG_IO, 0,
                        "cannot read the %s: %s", c->what, why);
    return NULL;
  }
  return text;
}

char *dmh_cfg_read_text(dmh_cfg_ctx *c) {
  size_t len;
  char *text = dmh_cfg_read_raw(c, &len);
  if (!text)
    return NULL;
  /* At worst every other character gains a suffix. */
  cfgint_scan s = {.c = c, .file = c->path, .text = text, .len = len, .rewrite = true};
  s.out = malloc(len * 2 + 1);
  if (!s.out) {
    free(text);
    dmh_cfg_no_memory(c);
    return NULL;
  }
  int rc = cfgint_scan_text(&s);
  free(text);
  if (rc < 0) {
    free(s.out);
    return NULL;
  }
  s.out[s.out_len] = '\0';
  return s.out;
}
