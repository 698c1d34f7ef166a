/*
 * Host logging: one line per record to stderr, "time level [scope] message key=value ..." (text,
 * the default) or one JSON object per line (--log-format json, for log shippers):
 *   {"time":"2026-12-01T22:30:27.018Z","level":"info","task":"t1","source":"s1","unit":"sync",
 *    "msg":"...", "<field>":"<value>", ...}
 * where a scope of "key=value" words (the units' "task=t1 source=s1 unit=sync") gives one member
 * per word and any other scope ("registry", a task's name) is "component". Thread-safe (one write
 * per line). Level and format are set once at start-up.
 */
#ifndef DMH_LOG_H
#define DMH_LOG_H

#include <stdbool.h>
#include <stddef.h>

#include "dmhost/host.h"

/* --log-level VALUE of `dmhost CMD`: sets the level, or prints "dmhost CMD: --log-level ..." to
 * stderr and returns -1 (the caller exits 2). */
int dmh_log_level_flag(const char *cmd, const char *value);
/* --log-format VALUE ("text" or "json"): sets the format, or prints "dmhost CMD: --log-format ..."
 * to stderr and returns -1 (the caller exits 2). */
int dmh_log_format_flag(const char *cmd, const char *value);
/* Returns whether JSON was on before. */
bool dmh_log_set_json(bool json);
/* Returns the level before (a test that raises it for a while puts it back). */
dm_log_level dmh_log_set_level(dm_log_level level);
/* "debug", "info", "warn", "error" -> level; -1 for anything else. */
int dmh_log_level_parse(const char *s, dm_log_level *out);
/* scope: e.g. "supervisor" or "task=t1 source=s1 unit=sync"; may be NULL. */
void dmh_log(dm_log_level level, const char *scope, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void dmh_log_fields(dm_log_level level, const char *scope, const char *msg,
                    const dm_log_field *fields, size_t n);

#endif /* DMH_LOG_H */
