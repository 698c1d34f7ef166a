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

/* Typed lookups of member `name` of `group`. Each returns 1 when the setting is present (and
 * *out is set), 0 when absent (*out untouched), -1 with c->err filled. */
int dmh_cfg_get_string(dmh_cfg_ctx *c, const config_setting_t *group, const char *name,
                       unsigned flags, char **out);
int dmh_cfg_get_bool(dmh_cfg_ctx *c, const config_setting_t *group, const char *name, bool *out);
/* An integer in min..max. `unit` (may be NULL) is named in messages, e.g. "milliseconds". */
int dmh_cfg_get_int(dmh_cfg_ctx *c, const config_setting_t *group, const char *name, unsigned flags,
                    int64_t min, int64_t max, const char *unit, int64_t *out);
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
/* The task file's top-level settings (config.c), NULL-terminated; a custom kind's section joins
 * them. */
extern const char *const dmh_task_keys[];
int dmh_cfg_task_chain(dmh_cfg_ctx *c, const config_setting_t *root, dmh_task_config *t);
/* The names `units` gives that are no built-in kind (unchecked: dmh_cfg_task_chain checks them),
 * pointing into the tree: the sections the unknown-settings check must let through. */
int dmh_cfg_task_sections(const config_setting_t *root, const char **out, int max);
int dmh_cfg_task_unit_paths(dmh_cfg_ctx *c, const config_setting_t *root, dmh_task_config *t);
void dmh_cfg_task_chain_free(dmh_task_config *t);

int dmh_cfg_task_meta(dmh_cfg_ctx *c, const config_setting_t *g, dmh_task_instance *in);

#endif /* DMH_CONFIG_UTIL_H */
