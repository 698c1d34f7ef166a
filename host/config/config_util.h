/*
 * Shared by config.c and config_rules.c: typed lookups over libconfig settings that fail with a
 * dm_error naming file, line and setting path ("mysql-instances.[0].source-id"), the check for
 * unknown settings with a "did you mean" suggestion, and path resolution. Internal to the config
 * room; the rest of the host uses config.h.
 */
#ifndef DMH_CONFIG_UTIL_H
#define DMH_CONFIG_UTIL_H

#include <libconfig.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "config.h"
#include "dmhost/error.h"

/* ---- the settings table (config_settings.def, config_settings.c) ---- */

/* The groups settings appear in. */
typedef enum dmh_cfg_scope {
#define DMH_SCOPE(id, parent, path, heading) DMH_SCOPE_##id,
#include "config_settings.def"
  DMH_SCOPE_COUNT,
  DMH_SCOPE_NONE = -1, /* the parent of a top-level scope */
} dmh_cfg_scope;

/* One id per setting: DMH_SET_<id>. */
typedef enum dmh_cfg_setting_id {
#define DMH_SETTING(id, ...) DMH_SET_##id,
#include "config_settings.def"
  DMH_SET_COUNT,
} dmh_cfg_setting_id;

/* The parser's defaults, as constants (0 where a setting has none): DMH_DEFAULT_<id>. */
enum {
#define DMH_SETTING(id, scope, key, type, flags, dnum, ...) DMH_DEFAULT_##id = (dnum),
#include "config_settings.def"
};

typedef enum dmh_cfg_type {
  DMH_CFG_T_STRING,
  DMH_CFG_T_INT,
  DMH_CFG_T_BOOL,
  DMH_CFG_T_PATH,
  DMH_CFG_T_SECONDS,
  DMH_CFG_T_ENUM,
  DMH_CFG_T_GROUP,
  DMH_CFG_T_SECTION,
  DMH_CFG_T_LIST,
  DMH_CFG_T_GROUPS,
} dmh_cfg_type;

#define DMH_CFG_F_REQ 0x1u /* required where its group is */
#define DMH_CFG_F_PW 0x2u  /* one of the forms of a database password */

typedef enum dmh_cfg_update {
  DMH_CFG_UPD_FREE,    /* update-task may change it */
  DMH_CFG_UPD_FIXED,   /* it must stay as the running task has it */
  DMH_CFG_UPD_ENTRIES, /* compared entry by entry (mysql-instances) */
} dmh_cfg_update;

typedef struct dmh_cfg_setting {
  dmh_cfg_scope scope;
  const char *key;
  dmh_cfg_type type;
  unsigned flags;
  int64_t dnum;      /* default of an INT, SECONDS (s), BOOL */
  const char *dstr;  /* default of a STRING or PATH, or NULL */
  const char *dtext; /* the docs' default where the others do not say it, or NULL */
  int64_t min, max;  /* an INT's range */
  const char *unit;  /* named in an INT's messages, or NULL */
  dmh_cfg_update update;
  const char *why; /* FIXED, ENTRIES: why update-task may not change it (NULL: general) */
  const char *doc;
} dmh_cfg_setting;

typedef struct dmh_cfg_scope_info {
  const char *id; /* "SOURCE", "INSTANCE", ... */
  dmh_cfg_scope parent;
  const char *path;    /* where it sits in its parent */
  const char *heading; /* docs/config.md: its table's heading, "" in the parent's, NULL none */
} dmh_cfg_scope_info;

extern const dmh_cfg_setting dmh_cfg_settings[DMH_SET_COUNT];
extern const dmh_cfg_scope_info dmh_cfg_scopes[DMH_SCOPE_COUNT];

/* The keys of `scope` in the table's order into out[0..max-1], NULL-terminated (max counts the
 * NULL); returns how many. */
int dmh_cfg_scope_keys(dmh_cfg_scope scope, const char **out, int max);
/* The row of `key` in `scope`, or NULL. */
const dmh_cfg_setting *dmh_cfg_setting_in(dmh_cfg_scope scope, const char *key);
/* "string", "integer", ...: the docs' type column for a type. */
const char *dmh_cfg_type_doc(dmh_cfg_type type);
/* The docs' default column of a setting ("**required**", "`3306`", "" for none). Returns buf. */
const char *dmh_cfg_default_doc(const dmh_cfg_setting *s, char *buf, size_t size);

/* What is being parsed: every failure message names `path` and `what`. */
typedef struct dmh_cfg_ctx {
  const char *path; /* the file as given by the caller */
  const char *what; /* "task file" or "source file" */
  char *dir;        /* absolute folder of the file: relative paths in it resolve against it */
  dm_error *err;
  const dmh_cfg_trust *trust; /* never NULL while parsing (config.c gives the operator's) */
} dmh_cfg_ctx;

/* Submitted text (config.h, dmh_cfg_origin) naming `file` (absolute) for setting `at`: 0 when the
 * text is the operator's or `file` resolves below --secrets-dir, else -1 with
 * DM_ERR_CONFIG_SUBMITTED_SECRET naming file:line, the setting and the flag. `file` NULL: a
 * setting that names no file (password-env), refused in any submitted text. */
int dmh_cfg_check_secret_origin(dmh_cfg_ctx *c, const config_setting_t *at, const char *file);
/* The test of dmh_cfg_check_secret_origin without its error: true when the text is the operator's
 * or `file`'s real path is below --secrets-dir. */
bool dmh_cfg_secret_allowed(const dmh_cfg_ctx *c, const char *file);
bool dmh_cfg_submitted(const dmh_cfg_ctx *c);
/* The `unit-paths` group `g` of submitted text without --allow-submitted-unit-paths: -1 with
 * DM_ERR_CONFIG_SUBMITTED_UNIT_PATH naming file:line and the flag; else 0. */
int dmh_cfg_check_unit_paths_origin(dmh_cfg_ctx *c, const config_setting_t *g);

/* Read a file config loading reads (a config, an @include, a secret): opened without blocking
 * (O_NONBLOCK: a FIFO does not hold the thread), without following a last-component link when
 * `nofollow`, then checked on the descriptor: a regular file of at most `max` bytes, and what
 * `check` (may be NULL) says of its stat. At most max + 1 bytes are ever read. 0 and *out
 * (NUL-terminated, *len bytes); -1 when it cannot be opened or read (`why`: strerror); -3 when it
 * is not acceptable (`why`: "it is a FIFO, not a regular file", "... over the limit of 4096"); -2
 * out of memory. */
int dmh_cfg_read_bounded(const char *path, size_t max, bool nofollow,
                         int (*check)(const struct stat *st, void *ud, char *why, size_t size),
                         void *ud, char **out, size_t *len, char *why, size_t why_size);

/* Read a secret file (password-file, --etcd-password-file): dmh_cfg_read_bounded with
 * nofollow, at most DMH_CFG_SECRET_MAX bytes, owned by root or this process's user, mode 0600 or
 * 0400, one hard link. *out is its first line (newline dropped, the rest wiped). Returns as
 * dmh_cfg_read_bounded: 0, -1 (cannot read), -3 (not acceptable), -2 (out of memory). */
int dmh_cfg_read_secret(const char *path, char **out, char *why, size_t why_size);

/* A setting that is not accepted in a group but that users are known to put there, with the hint
 * given instead of "did you mean" (e.g. `relay` in the task file's unit-paths). */
typedef struct dmh_cfg_hint {
  const char *name;
  const char *hint;
} dmh_cfg_hint;

/* Room for a setting's dotted path (dmh_cfg_path_of) in messages. */
#define CFGUTIL_PATH_MAX 256

/* Flags of the typed lookups. */
#define DMH_CFG_REQUIRED 0x1u /* absent: DM_ERR_CONFIG_MISSING */
#define DMH_CFG_NONEMPTY 0x2u /* strings: "" is DM_ERR_CONFIG_INVALID */

/* Fill c->err with "<file>:<line>: " + the message, the line being where `at` is (line 1 for the
 * root or NULL: the file as a whole). Always returns -1. */
int dmh_cfg_fail(dmh_cfg_ctx *c, int32_t code, const config_setting_t *at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Same with an explicit line. */
int dmh_cfg_fail_line(dmh_cfg_ctx *c, int32_t code, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int dmh_cfg_no_memory(dmh_cfg_ctx *c);
/* The name of `file` (a setting's source file, or libconfig's error file) for messages: an
 * included file resolved against the folder of the file being read. Returns c->path, file or buf.
 */
const char *dmh_cfg_file_name(const dmh_cfg_ctx *c, const char *file, char *buf, size_t size);

/* The setting's path in libconfig's syntax ("routes.r1.schema-pattern", "mysql-instances.[0]");
 * "" for the root. Returns buf. */
const char *dmh_cfg_path_of(const config_setting_t *s, char *buf, size_t size);
/* The path of member `name` of `group`, as dmh_cfg_path_of would give it once it exists. */
const char *dmh_cfg_member_path(const config_setting_t *group, const char *name, char *buf,
                                size_t size);
/* "a string", "an integer", ... for messages. */
const char *dmh_cfg_type_name(int type);

/* Optimal string alignment distance (an edit, or swapping two neighbours, costs 1). */
int dmh_cfg_edit_distance(const char *a, const char *b);
/* The entry of `names` (NULL-terminated, or the first n when n >= 0) closest to `s` if it is close
 * enough to be a plausible misspelling, else NULL. */
const char *dmh_cfg_closest(const char *s, const char *const *names, int n);

/* Reject members of `group` not in `known` (NULL-terminated) with DM_ERR_CONFIG_UNKNOWN, naming the
 * closest known name, or the hint of `misplaced` (terminated by a NULL name; may be NULL). */
int dmh_cfg_check_keys(dmh_cfg_ctx *c, const config_setting_t *group, const char *const *known,
                       const dmh_cfg_hint *misplaced);

/* The hints for the settings of scope `other` (the same group of the other file) that `here` does
 * not have: where they belong. A unit section gets `section_hint`, any other setting `hint`. `out`
 * has room for DMH_SET_COUNT + 1 (terminated by a NULL name). */
void dmh_cfg_misplaced(dmh_cfg_scope here, dmh_cfg_scope other, const char *hint,
                       const char *section_hint, dmh_cfg_hint *out);
/* dmh_cfg_check_keys with the settings of `scope` (the table), then `extra` (NULL-terminated, may
 * be NULL: e.g. the custom kinds' sections of a task). */
int dmh_cfg_check_scope(dmh_cfg_ctx *c, const config_setting_t *group, dmh_cfg_scope scope,
                        const char *const *extra, const dmh_cfg_hint *misplaced);

/* Typed lookups of member `name` of `group`. Each returns 1 when the setting is present (and
 * *out is set), 0 when absent (*out untouched), -1 with c->err filled. */
int dmh_cfg_get_string(dmh_cfg_ctx *c, const config_setting_t *group, const char *name,
                       unsigned flags, char **out);
int dmh_cfg_get_bool(dmh_cfg_ctx *c, const config_setting_t *group, const char *name, bool *out);
/* An integer in min..max. `unit` (may be NULL) is named in messages, e.g. "milliseconds". */
int dmh_cfg_get_int(dmh_cfg_ctx *c, const config_setting_t *group, const char *name, unsigned flags,
                    int64_t min, int64_t max, const char *unit, int64_t *out);
/* dmh_cfg_get_int of an INT setting of the table: its key, range and unit. */
int dmh_cfg_get_int_setting(dmh_cfg_ctx *c, const config_setting_t *group, dmh_cfg_setting_id id,
                            unsigned flags, int64_t *out);
/* A duration in seconds, integer or float, > 0, returned in milliseconds. */
int dmh_cfg_get_seconds_ms(dmh_cfg_ctx *c, const config_setting_t *group, const char *name,
                           uint32_t *out_ms);
/* A group; `example` shows the expected shape in the message when it is of another type. */
int dmh_cfg_get_group(dmh_cfg_ctx *c, const config_setting_t *group, const char *name,
                      unsigned flags, const char *example, config_setting_t **out);
/* An array or list of non-empty strings, e.g. ["a", "b"]. *out is NULL when *n is 0. */
int dmh_cfg_get_string_list(dmh_cfg_ctx *c, const config_setting_t *group, const char *name,
                            char ***out, int *n);

/* A path setting (non-empty string) made absolute against the file's folder: 1 and *out, 0 absent,
 * -1. */
int dmh_cfg_get_path(dmh_cfg_ctx *c, const config_setting_t *g, const char *name, char **out);
/* A database endpoint group (`from`, `target-database`): host and user required, port 3306 by
 * default, socket optional, the password from at most one of `password`, `password-encrypted`
 * (decrypted with the top-level `secret-key-path`), `password-file` (its first line) and
 * `password-env` (an environment variable); "" when none is there. */
int dmh_cfg_get_db(dmh_cfg_ctx *c, const config_setting_t *parent, const char *name,
                   dmh_db_config *out);
void dmh_cfg_db_free(dmh_db_config *db);

/* The text of the file c->path for config_read_string, with each integer literal that libconfig
 * 1.5 would keep only the low 32 bits of (no L suffix, outside the int range: 4294970633 reads as
 * 3337) given the L suffix, so it is read at its value and the setting's range check refuses it.
 * Files it @includes are scanned too: such a literal there, or one beyond 64 bits anywhere, is
 * DM_ERR_CONFIG_INVALID naming file, line and range. NULL with c->err filled. */
char *dmh_cfg_read_text(dmh_cfg_ctx *c);
/* c->path's bytes as they are (bounded by DMH_CFG_TEXT_MAX, the file's safety checked), *len of
 * them; NULL with c->err set. The YAML reader's input; dmh_cfg_read_text's before its scan. */
char *dmh_cfg_read_raw(dmh_cfg_ctx *c, size_t *len);

/* `p` made absolute against `dir` and normalized ("." and ".." removed), malloc'd; NULL on OOM. */
char *dmh_cfg_abs_path(const char *dir, const char *p);
void dmh_cfg_strv_free(char **v, int n);

/* Rules of the task file (config_rules.c): block-allow-list, routes, filters. */
int dmh_cfg_parse_rules(dmh_cfg_ctx *c, const config_setting_t *root, dmh_task_config *t);
void dmh_cfg_rules_free(dmh_task_config *t);

/* A mysql-instances entry's `meta` group in `g` (binlog-name/binlog-pos/binlog-gtid: where
 * incremental replication starts) into `in`; 0 when absent or read, -1 with the error. The task
 * file's parser and dmhost-unit-check's fake host share it. */
/* config_chain.c: the task's chain (task-mode or units; before the unknown-settings check, which
 * must know the custom kinds' sections), then its unit-paths and the custom kinds' sections. */
int dmh_cfg_task_chain(dmh_cfg_ctx *c, const config_setting_t *root, dmh_task_config *t);
/* The names `units` gives that are no built-in kind (unchecked: dmh_cfg_task_chain checks them),
 * pointing into the tree: the sections the unknown-settings check must let through. */
int dmh_cfg_task_sections(const config_setting_t *root, const char **out, int max);
int dmh_cfg_task_unit_paths(dmh_cfg_ctx *c, const config_setting_t *root, dmh_task_config *t);
void dmh_cfg_task_chain_free(dmh_task_config *t);

int dmh_cfg_task_meta(dmh_cfg_ctx *c, const config_setting_t *g, dmh_task_instance *in);

#endif /* DMH_CONFIG_UTIL_H */
