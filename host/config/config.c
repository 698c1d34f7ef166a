/* Source and task files: read with libconfig, validate what the host owns, keep the tree. */
#include "config.h"
#include "check_items.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config_util.h"
#include "config_yaml.h"
#include "dmhost/fs.h"
#include "dmhost/sdk.h"
#include "log.h"
#include "match.h"

#define CONF_PATH_MAX 256

/* ---- modes and kinds ---- */

static const char *const conf_mode_names[] = {
    [DMH_MODE_ALL] = "all",   [DMH_MODE_FULL] = "full", [DMH_MODE_INCREMENTAL] = "incremental",
    [DMH_MODE_DUMP] = "dump", [DMH_MODE_LOAD] = "load", [DMH_MODE_LOAD_SYNC] = "load&sync",
};
#define CONF_N_MODES ((int)(sizeof conf_mode_names / sizeof conf_mode_names[0]))

const char *dmh_task_mode_name(dmh_task_mode mode) {
  if (mode == DMH_MODE_CUSTOM)
    return "custom";
  if ((int)mode < 0 || (int)mode >= CONF_N_MODES)
    return "unknown";
  return conf_mode_names[mode];
}

int dmh_task_mode_parse(const char *s, dmh_task_mode *out) {
  for (int i = 0; s && i < CONF_N_MODES; i++) {
    if (strcmp(s, conf_mode_names[i]) == 0) {
      *out = (dmh_task_mode)i;
      return 0;
    }
  }
  return -1;
}

int dmh_task_mode_chain(dmh_task_mode mode, dm_unit_kind chain[3]) {
  switch (mode) {
  case DMH_MODE_ALL:
    chain[0] = DM_UNIT_DUMP;
    chain[1] = DM_UNIT_LOAD;
    chain[2] = DM_UNIT_SYNC;
    return 3;
  case DMH_MODE_FULL:
    chain[0] = DM_UNIT_DUMP;
    chain[1] = DM_UNIT_LOAD;
    return 2;
  case DMH_MODE_INCREMENTAL:
    chain[0] = DM_UNIT_SYNC;
    return 1;
  case DMH_MODE_DUMP:
    chain[0] = DM_UNIT_DUMP;
    return 1;
  case DMH_MODE_LOAD:
    chain[0] = DM_UNIT_LOAD;
    return 1;
  case DMH_MODE_LOAD_SYNC:
    chain[0] = DM_UNIT_LOAD;
    chain[1] = DM_UNIT_SYNC;
    return 2;
  case DMH_MODE_CUSTOM: /* the chain is the task file's `units` (dmh_task_config.chain) */
    return 0;
  }
  return 0;
}

static const char *const conf_kind_names[DMH_KIND_COUNT] = {"dump", "load", "sync", "relay"};
static const dm_unit_kind conf_kinds[DMH_KIND_COUNT] = {DM_UNIT_DUMP, DM_UNIT_LOAD, DM_UNIT_SYNC,
                                                        DM_UNIT_RELAY};

int dmh_kind_index_of(dm_unit_kind kind) {
  for (int i = 0; i < DMH_KIND_COUNT; i++)
    if (conf_kinds[i] == kind)
      return i;
  return -1;
}

dm_unit_kind dmh_kind_of_index(int index) {
  if (index < 0 || index >= DMH_KIND_COUNT)
    return DM_UNIT_CUSTOM;
  return conf_kinds[index];
}

const char *dmh_kind_name(dm_unit_kind kind) {
  int i = dmh_kind_index_of(kind);
  if (i >= 0)
    return conf_kind_names[i];
  return kind == DM_UNIT_CUSTOM ? "custom" : "unknown";
}

int dmh_kind_parse(const char *s, dm_unit_kind *out) {
  for (int i = 0; s && i < DMH_KIND_COUNT; i++) {
    if (strcmp(s, conf_kind_names[i]) == 0) {
      *out = conf_kinds[i];
      return 0;
    }
  }
  return -1;
}

/* ---- reading a file ---- */

/* The absolute folder of `path` (which was just read, so it exists). */
static char *conf_dir_of(const char *path) {
  char *real = realpath(path, NULL);
  if (!real)
    return NULL;
  char *slash = strrchr(real, '/');
  if (slash == real)
    slash[1] = '\0';
  else if (slash)
    *slash = '\0';
  return real;
}

/* Read c->path into cfg: a task file when `task`, else a source file (which YAML translation). */
static int conf_read(dmh_cfg_ctx *c, config_t *cfg, bool task) {
  /* libconfig reports only "file I/O error", and reads a folder as an empty file: look first so the
   * message can say why. */
  struct stat st;
  if (stat(c->path, &st) != 0)
    return dmh_cfg_fail_line(c, DM_ERR_CONFIG_IO, 0, "cannot read the %s: %s", c->what,
                             strerror(errno));
  if (!S_ISREG(st.st_mode))
    return dmh_cfg_fail_line(c, DM_ERR_CONFIG_IO, 0, "cannot read the %s: %s", c->what,
                             S_ISDIR(st.st_mode) ? "it is a directory" : "not a regular file");
  c->dir = conf_dir_of(c->path);
  if (!c->dir)
    return dmh_cfg_fail_line(c, DM_ERR_CONFIG_IO, 0, "cannot read the %s: %s", c->what,
                             strerror(errno));
  /* @include "x.cfg" then means next to the file, as relative paths in it do. */
  config_set_include_dir(cfg, c->dir);
  /* DM's YAML files are read as they are: translated into this text, each setting on its line. */
  char *text = dmh_config_is_yaml(c->path) ? dmh_cfg_yaml_text(c, task) : dmh_cfg_read_text(c);
  if (!text)
    return -1;
  errno = 0;
  int ok = config_read_string(cfg, text);
  free(text);
  if (ok == CONFIG_TRUE)
    return 0;
  if (config_error_type(cfg) == CONFIG_ERR_FILE_IO)
    return dmh_cfg_fail_line(c, DM_ERR_CONFIG_IO, 0, "cannot read the %s: %s", c->what,
                             errno ? strerror(errno) : "I/O error");
  char name[PATH_MAX];
  dm_error_set(c->err, DM_ERR_CONFIG_PARSE, config_error_text(cfg), "%s:%d: %s in the %s",
               dmh_cfg_file_name(c, config_error_file(cfg), name, sizeof name),
               config_error_line(cfg), config_error_text(cfg), c->what);
  return -1;
}

/* Kept as the name config.c uses; the lookup is config_util's (password-file needs it too). */
static int conf_get_path(dmh_cfg_ctx *c, const config_setting_t *g, const char *name, char **out) {
  return dmh_cfg_get_path(c, g, name, out);
}

/* unit-paths of the source file: relay only (the task file's are config_chain.c's). */
static int conf_unit_paths(dmh_cfg_ctx *c, const config_setting_t *root, const char *hint,
                           char *out[DMH_KIND_COUNT]) {
  config_setting_t *g = NULL;
  int rc = dmh_cfg_get_group(c, root, "unit-paths", 0,
                             "`unit-paths = { relay = \"/path/dmhost-relay.so\"; };`", &g);
  if (rc <= 0)
    return rc;
  if (dmh_cfg_check_unit_paths_origin(c, g) < 0)
    return -1;
  dmh_cfg_hint misplaced[DMH_SET_COUNT + 1];
  dmh_cfg_misplaced(DMH_SCOPE_SOURCE_UNIT_PATHS, DMH_SCOPE_TASK_UNIT_PATHS, hint, hint, misplaced);
  if (dmh_cfg_check_scope(c, g, DMH_SCOPE_SOURCE_UNIT_PATHS, NULL, misplaced) < 0)
    return -1;
  return conf_get_path(c, g, "relay", &out[DMH_KIND_RELAY]);
}

/* A unit's own section: its settings are checked against what the unit reads, but it has to be a
 * group for the unit to read anything. */
static int conf_unit_section(dmh_cfg_ctx *c, const config_setting_t *root, const char *name) {
  char example[96];
  snprintf(example, sizeof example, "`%s = { ... };`", name);
  config_setting_t *g = NULL;
  return dmh_cfg_get_group(c, root, name, 0, example, &g) < 0 ? -1 : 0;
}

static bool conf_is_id(const char *s, const char *extra) {
  if (!*s)
    return false;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
          *s == '_' || *s == '-' || (extra && strchr(extra, *s))))
      return false;
  return true;
}

static int conf_get_id(dmh_cfg_ctx *c, const config_setting_t *g, const char *name,
                       const char *extra, char **out) {
  if (dmh_cfg_get_string(c, g, name, DMH_CFG_REQUIRED, out) < 0)
    return -1;
  /* Names end up in folder names under the state directory and in the target's meta tables. */
  if (conf_is_id(*out, extra) && (*out)[0] != '.')
    return 0;
  char path[CONF_PATH_MAX];
  const config_setting_t *m = config_setting_get_member(g, name);
  return dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID, m,
                      "`%s` in the %s must be a non-empty name of letters, digits, '_' and '-'%s; "
                      "not \"%s\"",
                      dmh_cfg_path_of(m, path, sizeof path), c->what,
                      extra ? " (and '.', but not first)" : "", *out);
}

/* `file-mode = "0640";`: the mode of the files dmhost creates for this file's units (folders get
 * dm_fs_dir_mode of it). Default 0600. Octal in a string (libconfig has no octal literals); the
 * owner must be able to read and write, and nobody else may write or execute: a group or others
 * that could write into the relay or dump folder could plant what the units then read. */
static int conf_file_mode(dmh_cfg_ctx *c, const config_setting_t *root, uint32_t *out) {
  *out = DM_FS_FILE_MODE;
  char *text = NULL;
  int rc = dmh_cfg_get_string(c, root, "file-mode", DMH_CFG_NONEMPTY, &text);
  if (rc <= 0)
    return rc;
  char *end = NULL;
  unsigned long m = strtoul(text, &end, 8);
  bool ok = text[0] >= '0' && text[0] <= '7' && *end == '\0' && strlen(text) <= 4 &&
            (m & 0600) == 0600 && (m & ~0644ul) == 0;
  if (!ok) {
    rc = dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID, config_setting_get_member(root, "file-mode"),
                      "`file-mode` in the %s must be an octal file mode in a string that gives "
                      "the owner read and write and nobody else write or execute: \"0600\" "
                      "(the default), \"0640\" (the group may read) or \"0644\"; not \"%s\"",
                      c->what, text);
    free(text);
    return rc;
  }
  free(text);
  /* Wider files let other local users read what the units write (the source's rows): only the
   * operator, who placed the file, may choose that. */
  if (m != DM_FS_FILE_MODE && dmh_cfg_submitted(c))
    return dmh_cfg_fail(c, DM_ERR_CONFIG_SUBMITTED_FILE_MODE,
                        config_setting_get_member(root, "file-mode"),
                        "`file-mode` \"%04lo\" in a %s sent to the daemon (not a file the operator "
                        "placed): a sent config keeps the default 0600; only a file placed on the "
                        "daemon's machine and named over the control socket may widen it",
                        m, c->what);
  *out = (uint32_t)m;
  return 0;
}

/* ---- the source file ---- */

static const char conf_hint_task_only[] =
    "this setting belongs in the task file (the source file describes one MySQL source)";
static const char conf_hint_source_only[] =
    "this setting belongs in the source file (the task file names its sources with "
    "mysql-instances.[n].source-id)";

static const char conf_hint_task_section[] =
    "unit sections `dump`, `load` and `sync` belong in the task file";
static const char conf_hint_source_section[] =
    "the relay unit's section `relay` belongs in the source file (relay runs per source)";

/* Two sources must not pull the binlog with the same server-id, so the default differs per
 * source-id and stays the same across restarts (FNV-1a). */
uint32_t dmh_source_default_server_id(const char *source_id) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const unsigned char *p = (const unsigned char *)source_id; *p; p++) {
    h ^= *p;
    h *= 0x100000001b3ull;
  }
  return (uint32_t)(100000u + h % (4000000000ull - 100000u + 1u));
}

static int conf_source_parse(dmh_cfg_ctx *c, dmh_source_config *s) {
  const config_setting_t *root = config_root_setting(&s->cfg);
  dmh_cfg_hint misplaced[DMH_SET_COUNT + 1];
  dmh_cfg_misplaced(DMH_SCOPE_SOURCE, DMH_SCOPE_TASK, conf_hint_task_only, conf_hint_task_section,
                    misplaced);
  if (dmh_cfg_check_scope(c, root, DMH_SCOPE_SOURCE, NULL, misplaced) < 0)
    return -1;
  if (conf_get_id(c, root, "source-id", NULL, &s->source_id) < 0 ||
      dmh_cfg_get_bool(c, root, "enable-gtid", &s->enable_gtid) < 0 ||
      dmh_cfg_get_bool(c, root, "enable-relay", &s->enable_relay) < 0)
    return -1;
  s->enable = DMH_DEFAULT_SRC_ENABLE;
  if (dmh_cfg_get_bool(c, root, "enable", &s->enable) < 0)
    return -1;
  int rc = conf_get_path(c, root, "relay-dir", &s->relay_dir);
  if (rc < 0)
    return -1;
  if (rc == 0 &&
      !(s->relay_dir = dmh_cfg_abs_path(c->dir, dmh_cfg_settings[DMH_SET_SRC_RELAY_DIR].dstr)))
    return dmh_cfg_no_memory(c);
  int64_t server_id = 0;
  rc = dmh_cfg_get_int_setting(c, root, DMH_SET_SRC_SERVER_ID, 0, &server_id);
  if (rc < 0)
    return -1;
  s->server_id = rc ? (uint32_t)server_id : dmh_source_default_server_id(s->source_id);
  if (dmh_cfg_get_db(c, root, "from", &s->from) < 0 || conf_file_mode(c, root, &s->file_mode) < 0)
    return -1;
  if (conf_unit_paths(c, root,
                      "the dump, load and sync units are chosen in the task file's unit-paths; "
                      "the source file's unit-paths takes only `relay`",
                      s->unit_paths) < 0)
    return -1;
  return conf_unit_section(c, root, "relay");
}

static const dmh_cfg_trust conf_operator = {.origin = DMH_CFG_OPERATOR};

int dmh_source_config_load(const char *path, dmh_source_config **out, dm_error *err) {
  return dmh_source_config_load_as(path, NULL, out, err);
}

int dmh_source_config_load_as(const char *path, const dmh_cfg_trust *trust, dmh_source_config **out,
                              dm_error *err) {
  *out = NULL;
  dmh_cfg_ctx c = {
      .path = path, .what = "source file", .err = err, .trust = trust ? trust : &conf_operator};
  dmh_source_config *s = calloc(1, sizeof *s);
  if (!s)
    return dmh_cfg_no_memory(&c);
  config_init(&s->cfg);
  if (!(s->path = strdup(path))) {
    dmh_source_config_free(s);
    return dmh_cfg_no_memory(&c);
  }
  int rc = conf_read(&c, &s->cfg, false);
  if (rc == 0)
    rc = conf_source_parse(&c, s);
  free(c.dir);
  if (rc < 0) {
    dmh_source_config_free(s);
    return -1;
  }
  *out = s;
  return 0;
}

void dmh_source_config_free(dmh_source_config *s) {
  if (!s)
    return;
  free(s->path);
  free(s->source_id);
  free(s->relay_dir);
  dmh_cfg_db_free(&s->from);
  for (int i = 0; i < DMH_KIND_COUNT; i++)
    free(s->unit_paths[i]);
  config_destroy(&s->cfg);
  free(s);
}

config_setting_t *dmh_source_unit_section(const dmh_source_config *s) {
  config_setting_t *g = config_lookup(&s->cfg, "relay");
  return g && config_setting_is_group(g) ? g : NULL;
}

/* ---- the task file ---- */
/* (its settings, as the source file's: the settings table's, config_settings.def) */

/* ignore-checking-items: names of the precheck's items (check_items.h), refused when unknown. */
static int conf_ignore_checks(dmh_cfg_ctx *c, const config_setting_t *root, dmh_task_config *t) {
  if (dmh_cfg_get_string_list(c, root, "ignore-checking-items", &t->ignore_checks,
                              &t->n_ignore_checks) < 0)
    return -1;
  const char *names[DMH_CHECK_NAMES_MAX];
  int n = dmh_precheck_item_names(names, DMH_CHECK_NAMES_MAX);
  for (int i = 0; i < t->n_ignore_checks; i++) {
    bool known = false;
    for (int k = 0; k < n && !known; k++)
      known = strcmp(names[k], t->ignore_checks[i]) == 0;
    if (known)
      continue;
    const char *near = dmh_cfg_closest(t->ignore_checks[i], names, n);
    config_setting_t *list = config_setting_get_member(root, "ignore-checking-items");
    return dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID, config_setting_get_elem(list, (unsigned)i),
                        "`ignore-checking-items` in the %s names \"%s\", which is no precheck "
                        "item%s%s%s (docs/precheck.md lists them)",
                        c->what, t->ignore_checks[i], near ? "; did you mean \"" : "",
                        near ? near : "", near ? "\"?" : "");
  }
  return 0;
}

/* A name in mysql-instances that must be defined in one of the rule sets. */
static int conf_unresolved(dmh_cfg_ctx *c, const config_setting_t *at, const char *name,
                           const char *set, const char *const *names, int n) {
  char path[CONF_PATH_MAX];
  char defined[200] = "none is defined";
  const char *near = dmh_cfg_closest(name, names, n);
  if (near) {
    snprintf(defined, sizeof defined, "did you mean `%s`?", near);
  } else if (n > 0) {
    size_t len = (size_t)snprintf(defined, sizeof defined, "defined there:");
    for (int i = 0; i < n && len < sizeof defined; i++)
      len += (size_t)snprintf(defined + len, sizeof defined - len, "%s %s", i ? "," : "", names[i]);
  }
  return dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID, at,
                      "`%s` in the %s names the rule `%s`, which is not defined under `%s`; %s",
                      dmh_cfg_path_of(at, path, sizeof path), c->what, name, set, defined);
}

/* Rule names of a set, for lookups and suggestions (the name is the first member of each rule). */
_Static_assert(offsetof(dmh_bal_rule, name) == 0 && offsetof(dmh_route_rule, name) == 0 &&
                   offsetof(dmh_filter_rule, name) == 0,
               "conf_rule_names reads the name at offset 0");
static const char **conf_rule_names(const void *rules, size_t size, int n) {
  const char **names = calloc((size_t)n + 1, sizeof *names);
  for (int i = 0; names && i < n; i++)
    memcpy(&names[i], (const char *)rules + (size_t)i * size, sizeof names[i]);
  return names;
}

static int conf_find(const char *const *names, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (strcmp(names[i], name) == 0)
      return i;
  return -1;
}

/* Resolve the names of `key` (route-rules, filter-rules) into pointers to rules of a set. */
static int conf_resolve_list(dmh_cfg_ctx *c, const config_setting_t *g, const char *key,
                             const char *set, const void *rules, size_t size, int n_rules,
                             const void ***out, int *n_out) {
  char **names = NULL;
  int n = 0;
  int rc = dmh_cfg_get_string_list(c, g, key, &names, &n);
  if (rc <= 0 || n == 0)
    return rc < 0 ? -1 : 0;
  const char **known = conf_rule_names(rules, size, n_rules);
  const void **ptrs = calloc((size_t)n, sizeof *ptrs);
  if (!known || !ptrs) {
    rc = dmh_cfg_no_memory(c);
    goto done;
  }
  const config_setting_t *list = config_setting_get_member(g, key);
  for (int i = 0; i < n; i++) {
    int k = conf_find(known, n_rules, names[i]);
    if (k < 0) {
      rc = conf_unresolved(c, config_setting_get_elem(list, (unsigned)i), names[i], set, known,
                           n_rules);
      goto done;
    }
    ptrs[i] = (const char *)rules + (size_t)k * size;
  }
  *out = ptrs;
  *n_out = n;
  ptrs = NULL;
  rc = 0;
done:
  free(ptrs);
  free(known);
  dmh_cfg_strv_free(names, n);
  return rc;
}

int dmh_cfg_task_meta(dmh_cfg_ctx *c, const config_setting_t *g, dmh_task_instance *in) {
  config_setting_t *meta = NULL;
  int rc = dmh_cfg_get_group(
      c, g, "meta", 0, "`meta = { binlog-name = \"mysql-bin.000001\"; binlog-pos = 4; };`", &meta);
  if (rc <= 0)
    return rc;
  int64_t pos = DMH_DEFAULT_META_BINLOG_POS;
  if (dmh_cfg_check_scope(c, meta, DMH_SCOPE_META, NULL, NULL) < 0 ||
      dmh_cfg_get_string(c, meta, "binlog-name", DMH_CFG_NONEMPTY, &in->meta_binlog_name) < 0 ||
      (rc = dmh_cfg_get_int_setting(c, meta, DMH_SET_META_BINLOG_POS, 0, &pos)) < 0 ||
      dmh_cfg_get_string(c, meta, "binlog-gtid", DMH_CFG_NONEMPTY, &in->meta_binlog_gtid) < 0)
    return -1;
  char path[CONF_PATH_MAX];
  if (rc == 1 && !in->meta_binlog_name)
    return dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID, config_setting_get_member(meta, "binlog-pos"),
                        "`%s.binlog-pos` in the %s needs binlog-name: a position is an offset in "
                        "one binlog file",
                        dmh_cfg_path_of(meta, path, sizeof path), c->what);
  if (!in->meta_binlog_name && !in->meta_binlog_gtid)
    return dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID, meta,
                        "`%s` in the %s needs binlog-name (and binlog-pos) or binlog-gtid: where "
                        "incremental replication starts",
                        dmh_cfg_path_of(meta, path, sizeof path), c->what);
  in->meta_binlog_pos = in->meta_binlog_name ? (uint64_t)pos : 0;
  return 0;
}

/* online-ddl, DM's deprecated online-ddl-scheme (either tool's name turns it on, with a warning, as
 * DM's task.go does) and the rules, each a regular expression in DM's dialect checked here (DM's
 * ErrConfigOnlineDDLInvalidRegex): the rules are compiled for every subtask (rules.c), and a task
 * must not start to fail at its first table. */
static int conf_online_ddl(dmh_cfg_ctx *c, const config_setting_t *root, dmh_task_config *t) {
  t->online_ddl = DMH_DEFAULT_TASK_ONLINE_DDL;
  char *scheme = NULL;
  int rc = dmh_cfg_get_bool(c, root, "online-ddl", &t->online_ddl);
  if (rc >= 0)
    rc = dmh_cfg_get_string(c, root, "online-ddl-scheme", 0, &scheme);
  if (rc < 0)
    return -1;
  if (rc == 1) {
    const config_setting_t *at = config_setting_get_member(root, "online-ddl-scheme");
    bool known = strcmp(scheme, "gh-ost") == 0 || strcmp(scheme, "pt") == 0;
    if (!known) {
      rc = dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID, at,
                        "`online-ddl-scheme` in the %s: \"%s\" is no online schema change tool DM "
                        "knows (\"gh-ost\" or \"pt\"); the setting is deprecated: write "
                        "`online-ddl = true;` instead",
                        c->what, scheme);
    } else {
      dmh_log(DM_LOG_WARN, "config",
              "%s:%d: `online-ddl-scheme` is deprecated (DM's); \"%s\" sets `online-ddl = true` "
              "(both tools are followed)",
              c->path, config_setting_source_line(at), scheme);
      t->online_ddl = true;
    }
    free(scheme);
    if (rc < 0)
      return -1;
  }
  static const char *const keys[2] = {"shadow-table-rules", "trash-table-rules"};
  char ***lists[2] = {&t->shadow_rules, &t->trash_rules};
  int *counts[2] = {&t->n_shadow_rules, &t->n_trash_rules};
  for (int k = 0; k < 2; k++) {
    if (dmh_cfg_get_string_list(c, root, keys[k], lists[k], counts[k]) < 0)
      return -1;
    const config_setting_t *list = config_setting_get_member(root, keys[k]);
    for (int i = 0; i < *counts[k]; i++) {
      dmh_regex rx = {0};
      char why[400];
      if (dmh_regex_compile_groups(&rx, (*lists[k])[i], false, why, sizeof why) == 0) {
        dmh_regex_free(&rx);
        continue;
      }
      return dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID, config_setting_get_elem(list, (unsigned)i),
                          "`%s.[%d]` in the %s: regular expression \"%s\": %s (see "
                          "docs/config.md, \"Matching names\")",
                          keys[k], i, c->what, (*lists[k])[i], why);
    }
  }
  return 0;
}

static int conf_instance(dmh_cfg_ctx *c, const config_setting_t *g, dmh_task_config *t,
                         dmh_task_instance *in) {
  if (dmh_cfg_check_scope(c, g, DMH_SCOPE_INSTANCE, NULL, NULL) < 0 ||
      conf_get_id(c, g, "source-id", NULL, &in->source_id) < 0)
    return -1;
  char path[CONF_PATH_MAX];
  const config_setting_t *sid = config_setting_get_member(g, "source-id");
  for (const dmh_task_instance *prev = t->instances; prev < in; prev++)
    if (strcmp(prev->source_id, in->source_id) == 0)
      return dmh_cfg_fail(
          c, DM_ERR_CONFIG_INVALID, sid,
          "`%s` in the %s: source \"%s\" is already listed in mysql-instances.[%d]; "
          "list each source once",
          dmh_cfg_path_of(sid, path, sizeof path), c->what, in->source_id,
          (int)(prev - t->instances));
  in->case_sensitive = t->case_sensitive;
  in->online_ddl = t->online_ddl;
  in->shadow_rules = t->shadow_rules;
  in->n_shadow_rules = t->n_shadow_rules;
  in->trash_rules = t->trash_rules;
  in->n_trash_rules = t->n_trash_rules;
  char *bal = NULL;
  int rc = dmh_cfg_get_string(c, g, "block-allow-list", DMH_CFG_NONEMPTY, &bal);
  if (rc < 0)
    return -1;
  if (rc == 1) {
    const char **known = conf_rule_names(t->bal_rules, sizeof *t->bal_rules, t->n_bal_rules);
    int k = known ? conf_find(known, t->n_bal_rules, bal) : -1;
    if (!known)
      rc = dmh_cfg_no_memory(c);
    else if (k < 0)
      rc = conf_unresolved(c, config_setting_get_member(g, "block-allow-list"), bal,
                           "block-allow-list", known, t->n_bal_rules);
    else
      in->bal = &t->bal_rules[k];
    free(known);
    free(bal);
    if (rc < 0)
      return -1;
  }
  const void **routes = NULL, **filters = NULL;
  rc = conf_resolve_list(c, g, "route-rules", "routes", t->routes, sizeof *t->routes, t->n_routes,
                         &routes, &in->n_routes);
  in->routes = (const dmh_route_rule **)routes;
  if (rc < 0)
    return -1;
  rc = conf_resolve_list(c, g, "filter-rules", "filters", t->filters, sizeof *t->filters,
                         t->n_filters, &filters, &in->n_filters);
  in->filters = (const dmh_filter_rule **)filters;
  if (rc < 0)
    return -1;
  const void **exprs = NULL;
  rc = conf_resolve_list(c, g, "expression-filters", "expression-filter", t->exprs,
                         sizeof *t->exprs, t->n_exprs, &exprs, &in->n_exprs);
  in->exprs = (const dmh_expr_rule **)exprs;
  if (rc < 0)
    return -1;
  return dmh_cfg_task_meta(c, g, in);
}

static int conf_instances(dmh_cfg_ctx *c, const config_setting_t *root, dmh_task_config *t) {
  static const char example[] = "mysql-instances = ( { source-id = \"mysql-01\"; } );";
  config_setting_t *list = config_setting_get_member(root, "mysql-instances");
  if (!list)
    return dmh_cfg_fail(c, DM_ERR_CONFIG_MISSING, NULL,
                        "missing required setting `mysql-instances` in the %s; add e.g. `%s`",
                        c->what, example);
  int type = config_setting_type(list);
  int n = config_setting_length(list);
  if (type != CONFIG_TYPE_LIST && !(type == CONFIG_TYPE_ARRAY && n == 0))
    return dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID, list,
                        "`mysql-instances` in the %s must be a list of groups, like `%s`; not %s",
                        c->what, example, dmh_cfg_type_name(type));
  if (n == 0)
    return dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID, list,
                        "`mysql-instances` in the %s must list at least one source, like `%s`",
                        c->what, example);
  t->instances = calloc((size_t)n, sizeof *t->instances);
  if (!t->instances)
    return dmh_cfg_no_memory(c);
  t->n_instances = n;
  for (int i = 0; i < n; i++) {
    const config_setting_t *g = config_setting_get_elem(list, (unsigned)i);
    if (config_setting_type(g) != CONFIG_TYPE_GROUP) {
      char path[CONF_PATH_MAX];
      return dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID, g,
                          "`%s` in the %s must be a group { source-id = \"...\"; ... }, not %s",
                          dmh_cfg_path_of(g, path, sizeof path), c->what,
                          dmh_cfg_type_name(config_setting_type(g)));
    }
    if (conf_instance(c, g, t, &t->instances[i]) < 0)
      return -1;
  }
  return 0;
}

const dmh_supervisor_config dmh_supervisor_defaults = {
    .init_timeout_ms = DMH_DEFAULT_SUP_INIT_TIMEOUT * 1000,
    .stop_timeout_ms = DMH_DEFAULT_SUP_STOP_TIMEOUT * 1000,
    .relay_catchup_timeout_ms = DMH_DEFAULT_SUP_CATCHUP_TIMEOUT * 1000,
    .relay_catchup_poll_ms = DMH_DEFAULT_SUP_CATCHUP_POLL,
    .auto_resume = DMH_DEFAULT_AR_ENABLE,
    .auto_resume_initial_ms = DMH_DEFAULT_AR_BACKOFF_INITIAL * 1000,
    .auto_resume_max_ms = DMH_DEFAULT_AR_BACKOFF_MAX * 1000,
};

static int conf_supervisor(dmh_cfg_ctx *c, const config_setting_t *root,
                           dmh_supervisor_config *sup) {
  *sup = dmh_supervisor_defaults;
  config_setting_t *g = NULL, *ar = NULL;
  int rc =
      dmh_cfg_get_group(c, root, "supervisor", 0, "`supervisor = { init-timeout = 30; };`", &g);
  if (rc <= 0)
    return rc;
  int64_t poll = sup->relay_catchup_poll_ms;
  if (dmh_cfg_check_scope(c, g, DMH_SCOPE_SUPERVISOR, NULL, NULL) < 0 ||
      dmh_cfg_get_seconds_ms(c, g, "init-timeout", &sup->init_timeout_ms) < 0 ||
      dmh_cfg_get_seconds_ms(c, g, "stop-timeout", &sup->stop_timeout_ms) < 0 ||
      dmh_cfg_get_seconds_ms(c, g, "relay-catchup-timeout", &sup->relay_catchup_timeout_ms) < 0 ||
      dmh_cfg_get_int_setting(c, g, DMH_SET_SUP_CATCHUP_POLL, 0, &poll) < 0)
    return -1;
  sup->relay_catchup_poll_ms = (uint32_t)poll;
  rc = dmh_cfg_get_group(c, g, "auto-resume", 0,
                         "`auto-resume = { enable = true; backoff-initial = 1; backoff-max = 300; "
                         "};`",
                         &ar);
  if (rc <= 0)
    return rc;
  if (dmh_cfg_check_scope(c, ar, DMH_SCOPE_AUTO_RESUME, NULL, NULL) < 0 ||
      dmh_cfg_get_bool(c, ar, "enable", &sup->auto_resume) < 0 ||
      dmh_cfg_get_seconds_ms(c, ar, "backoff-initial", &sup->auto_resume_initial_ms) < 0 ||
      dmh_cfg_get_seconds_ms(c, ar, "backoff-max", &sup->auto_resume_max_ms) < 0)
    return -1;
  if (sup->auto_resume_initial_ms > sup->auto_resume_max_ms) {
    const config_setting_t *at = config_setting_get_member(ar, "backoff-initial");
    return dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID, at ? at : ar,
                        "`supervisor.auto-resume.backoff-initial` (%u ms) in the %s must not "
                        "exceed `supervisor.auto-resume.backoff-max` (%u ms)",
                        sup->auto_resume_initial_ms, c->what, sup->auto_resume_max_ms);
  }
  return 0;
}

/* shard-mode, DM's is-sharding and strict-optimistic-shard-mode (DM's task.go: an empty
 * shard-mode with is-sharding = true is "pessimistic") */
static int conf_shard_mode(dmh_cfg_ctx *c, const config_setting_t *root, dmh_task_config *t) {
  char *mode = NULL;
  bool is_sharding = false;
  if (dmh_cfg_get_string(c, root, "shard-mode", 0, &mode) < 0 ||
      dmh_cfg_get_bool(c, root, "is-sharding", &is_sharding) < 0 ||
      dmh_cfg_get_bool(c, root, "strict-optimistic-shard-mode", &t->strict_optimistic) < 0) {
    free(mode);
    return -1;
  }
  int rc = 0;
  if (!mode || !*mode)
    t->shard_mode = is_sharding ? DM_SHARD_MODE_PESSIMISTIC : DM_SHARD_MODE_NONE;
  else if (strcmp(mode, "pessimistic") == 0)
    t->shard_mode = DM_SHARD_MODE_PESSIMISTIC;
  else if (strcmp(mode, "optimistic") == 0)
    t->shard_mode = DM_SHARD_MODE_OPTIMISTIC;
  else
    rc = dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID, config_setting_get_member(root, "shard-mode"),
                      "`shard-mode` in the %s must be \"pessimistic\" or \"optimistic\", not "
                      "\"%s\"",
                      c->what, mode);
  free(mode);
  return rc;
}

/* collation_compatible, DM's values (DM's task.go adjust: "" is "loose") */
static int conf_collation(dmh_cfg_ctx *c, const config_setting_t *root, dmh_task_config *t) {
  char *v = NULL;
  if (dmh_cfg_get_string(c, root, "collation_compatible", 0, &v) < 0)
    return -1;
  int rc = 0;
  t->collation_strict = v && strcmp(v, "strict") == 0;
  if (v && *v && strcmp(v, "loose") != 0 && strcmp(v, "strict") != 0)
    rc = dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID,
                      config_setting_get_member(root, "collation_compatible"),
                      "`collation_compatible` in the %s must be \"loose\" or \"strict\" (DM's "
                      "values), not \"%s\"",
                      c->what, v);
  free(v);
  return rc;
}

static int conf_task_parse(dmh_cfg_ctx *c, dmh_task_config *t) {
  const config_setting_t *root = config_root_setting(&t->cfg);
  /* the settings, and a section for each custom kind the chain names */
  const char *sections[DMH_CHAIN_MAX + 1];
  sections[dmh_cfg_task_sections(root, sections, DMH_CHAIN_MAX)] = NULL;
  dmh_cfg_hint misplaced[DMH_SET_COUNT + 1];
  dmh_cfg_misplaced(DMH_SCOPE_TASK, DMH_SCOPE_SOURCE, conf_hint_source_only,
                    conf_hint_source_section, misplaced);
  if (dmh_cfg_check_scope(c, root, DMH_SCOPE_TASK, sections, misplaced) < 0 ||
      dmh_cfg_task_chain(c, root, t) < 0 || conf_get_id(c, root, "name", ".", &t->name) < 0)
    return -1;
  int rc = dmh_cfg_get_string(c, root, "meta-schema", DMH_CFG_NONEMPTY, &t->meta_schema);
  if (rc < 0)
    return -1;
  if (rc == 0 && !(t->meta_schema = strdup(dmh_cfg_settings[DMH_SET_TASK_META_SCHEMA].dstr)))
    return dmh_cfg_no_memory(c);
  if (strlen(t->meta_schema) > 64 || strchr(t->meta_schema, '`')) {
    return dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID, config_setting_get_member(root, "meta-schema"),
                        "`meta-schema` in the %s must be a MySQL schema name of at most 64 "
                        "characters without backticks; not \"%s\"",
                        c->what, t->meta_schema);
  }
  if (dmh_cfg_get_bool(c, root, "case-sensitive", &t->case_sensitive) < 0 ||
      dmh_cfg_get_db(c, root, "target-database", &t->target) < 0 ||
      dmh_cfg_parse_rules(c, root, t) < 0 || conf_online_ddl(c, root, t) < 0 ||
      conf_instances(c, root, t) < 0)
    return -1;
  if (dmh_cfg_task_unit_paths(c, root, t) < 0)
    return -1;
  if (conf_supervisor(c, root, &t->sup) < 0 || conf_file_mode(c, root, &t->file_mode) < 0 ||
      conf_ignore_checks(c, root, t) < 0 || conf_shard_mode(c, root, t) < 0 ||
      conf_collation(c, root, t) < 0)
    return -1;
  for (int i = DMH_KIND_DUMP; i <= DMH_KIND_SYNC; i++)
    if (conf_unit_section(c, root, conf_kind_names[i]) < 0)
      return -1;
  return 0;
}

int dmh_task_config_load(const char *path, dmh_task_config **out, dm_error *err) {
  return dmh_task_config_load_as(path, NULL, out, err);
}

int dmh_task_config_load_as(const char *path, const dmh_cfg_trust *trust, dmh_task_config **out,
                            dm_error *err) {
  *out = NULL;
  dmh_cfg_ctx c = {
      .path = path, .what = "task file", .err = err, .trust = trust ? trust : &conf_operator};
  dmh_task_config *t = calloc(1, sizeof *t);
  if (!t)
    return dmh_cfg_no_memory(&c);
  config_init(&t->cfg);
  if (!(t->path = strdup(path))) {
    dmh_task_config_free(t);
    return dmh_cfg_no_memory(&c);
  }
  int rc = conf_read(&c, &t->cfg, true);
  if (rc == 0)
    rc = conf_task_parse(&c, t);
  free(c.dir);
  if (rc < 0) {
    dmh_task_config_free(t);
    return -1;
  }
  *out = t;
  return 0;
}

int dmh_config_load_pair(const char *source_path, const char *task_path, dmh_source_config **source,
                         dmh_task_config **task, dm_error *err) {
  *source = NULL;
  *task = NULL;
  if (dmh_source_config_load(source_path, source, err) < 0)
    return -1;
  if (dmh_task_config_load(task_path, task, err) == 0 &&
      dmh_task_instance_for(*task, (*source)->source_id))
    return 0;
  if (*task)
    dm_error_set(err, DM_ERR_CONFIG_INVALID, NULL,
                 "%s: no entry of mysql-instances reads source `%s` (from %s)", (*task)->path,
                 (*source)->source_id, (*source)->path);
  dmh_task_config_free(*task);
  dmh_source_config_free(*source);
  *task = NULL;
  *source = NULL;
  return -1;
}

void dmh_task_config_free(dmh_task_config *t) {
  if (!t)
    return;
  free(t->path);
  free(t->name);
  free(t->meta_schema);
  dmh_cfg_strv_free(t->ignore_checks, t->n_ignore_checks);
  dmh_cfg_strv_free(t->shadow_rules, t->n_shadow_rules);
  dmh_cfg_strv_free(t->trash_rules, t->n_trash_rules);
  dmh_cfg_db_free(&t->target);
  for (int i = 0; t->instances && i < t->n_instances; i++) {
    dmh_task_instance *in = &t->instances[i];
    free(in->source_id);
    free(in->routes);
    free(in->filters);
    free(in->exprs);
    free(in->meta_binlog_name);
    free(in->meta_binlog_gtid);
  }
  free(t->instances);
  dmh_cfg_rules_free(t);
  dmh_cfg_task_chain_free(t);
  config_destroy(&t->cfg);
  free(t);
}

config_setting_t *dmh_task_unit_section(const dmh_task_config *t, dm_unit_kind kind) {
  int i = dmh_kind_index_of(kind);
  if (i < 0 || i == DMH_KIND_RELAY)
    return NULL;
  config_setting_t *g = config_lookup(&t->cfg, conf_kind_names[i]);
  return g && config_setting_is_group(g) ? g : NULL;
}

const dmh_task_instance *dmh_task_instance_for(const dmh_task_config *t, const char *source_id) {
  for (int i = 0; source_id && i < t->n_instances; i++)
    if (strcmp(t->instances[i].source_id, source_id) == 0)
      return &t->instances[i];
  return NULL;
}
