/* Host logging: formatted into one buffer, written with one write(2) so lines never interleave. */
#include "log.h"

#include <json-c/json.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static atomic_int log_level = DM_LOG_INFO;
static atomic_bool log_json = false;

bool dmh_log_set_json(bool json) {
  return atomic_exchange(&log_json, json);
}

int dmh_log_format_flag(const char *cmd, const char *value) {
  if (strcmp(value, "text") != 0 && strcmp(value, "json") != 0) {
    fprintf(stderr, "dmhost %s: --log-format \"%s\" is not text or json\n", cmd, value);
    return -1;
  }
  dmh_log_set_json(strcmp(value, "json") == 0);
  return 0;
}

dm_log_level dmh_log_set_level(dm_log_level level) {
  return (dm_log_level)atomic_exchange(&log_level, (int)level);
}

int dmh_log_level_parse(const char *s, dm_log_level *out) {
  static const char *const names[] = {"debug", "info", "warn", "error"};
  for (int i = 0; i < 4; i++) {
    if (strcmp(s, names[i]) == 0) {
      *out = (dm_log_level)i;
      return 0;
    }
  }
  return -1;
}

static const char *log_level_name(dm_log_level l) {
  static const char *const names[] = {"DEBUG", "INFO", "WARN", "ERROR"};
  return (unsigned)l < 4 ? names[l] : "?";
}

/* Room for any time log_time can print (every field at its widest), so -O2 sees no truncation. */
#define LOG_TIME_MAX 128
static void log_time(char buf[LOG_TIME_MAX]);

static size_t log_prefix(char *buf, size_t len, dm_log_level level, const char *scope) {
  char when[LOG_TIME_MAX];
  log_time(when);
  int n = snprintf(buf, len, "[%s] [%s]%s%s%s ", when, log_level_name(level), scope ? " [" : "",
                   scope ? scope : "", scope ? "]" : "");
  return n < 0 ? 0 : ((size_t)n < len ? (size_t)n : len - 1);
}

static void log_write(char *buf, size_t n, size_t cap) {
  if (n >= cap - 1)
    n = cap - 2;
  buf[n++] = '\n';
  ssize_t w = write(STDERR_FILENO, buf, n);
  (void)w; /* nothing sensible to do when stderr is gone */
}

static void log_time(char buf[LOG_TIME_MAX]) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  snprintf(buf, LOG_TIME_MAX, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900,
           tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
}

/* One JSON object: time, level, the scope's words (or "component"), msg, then the fields. */
static void log_json_line(dm_log_level level, const char *scope, const char *msg,
                          const dm_log_field *fields, size_t nf) {
  static const char *const names[] = {"debug", "info", "warn", "error"};
  char when[LOG_TIME_MAX];
  log_time(when);
  json_object *o = json_object_new_object();
  json_object_object_add(o, "time", json_object_new_string(when));
  json_object_object_add(o, "level",
                         json_object_new_string((unsigned)level < 4 ? names[level] : "unknown"));
  if (scope && strchr(scope, '=')) {
    char words[512];
    snprintf(words, sizeof words, "%s", scope);
    char *save = NULL;
    for (char *w = strtok_r(words, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
      char *eq = strchr(w, '=');
      if (!eq)
        continue;
      *eq = '\0';
      json_object_object_add(o, w, json_object_new_string(eq + 1));
    }
  } else if (scope) {
    json_object_object_add(o, "component", json_object_new_string(scope));
  }
  json_object_object_add(o, "msg", json_object_new_string(msg ? msg : ""));
  for (size_t i = 0; i < nf; i++)
    if (fields[i].key)
      json_object_object_add(o, fields[i].key,
                             json_object_new_string(fields[i].value ? fields[i].value : ""));
  size_t len = 0;
  const char *text = json_object_to_json_string_length(
      o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
  char *line = malloc(len + 1);
  if (line) {
    memcpy(line, text, len);
    line[len] = '\n';
    ssize_t w = write(STDERR_FILENO, line, len + 1);
    (void)w; /* nothing sensible to do when stderr is gone */
    free(line);
  }
  json_object_put(o);
}

void dmh_log(dm_log_level level, const char *scope, const char *fmt, ...) {
  if ((int)level < atomic_load(&log_level))
    return;
  char buf[2048];
  bool json = atomic_load(&log_json);
  size_t n = json ? 0 : log_prefix(buf, sizeof buf, level, scope);
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(buf + n, sizeof buf - n, fmt, ap);
  va_end(ap);
  if (m > 0)
    n += (size_t)m < sizeof buf - n ? (size_t)m : sizeof buf - n - 1;
  if (json) {
    buf[n] = '\0';
    log_json_line(level, scope, buf, NULL, 0);
    return;
  }
  log_write(buf, n, sizeof buf);
}

void dmh_log_fields(dm_log_level level, const char *scope, const char *msg,
                    const dm_log_field *fields, size_t nf) {
  if ((int)level < atomic_load(&log_level))
    return;
  if (atomic_load(&log_json)) {
    log_json_line(level, scope, msg, fields, nf);
    return;
  }
  char buf[2048];
  size_t n = log_prefix(buf, sizeof buf, level, scope);
  int m = snprintf(buf + n, sizeof buf - n, "%s", msg ? msg : "");
  if (m > 0)
    n += (size_t)m < sizeof buf - n ? (size_t)m : sizeof buf - n - 1;
  for (size_t i = 0; i < nf && n < sizeof buf - 1; i++) {
    m = snprintf(buf + n, sizeof buf - n, " %s=%s", fields[i].key ? fields[i].key : "",
                 fields[i].value ? fields[i].value : "");
    if (m > 0)
      n += (size_t)m < sizeof buf - n ? (size_t)m : sizeof buf - n - 1;
  }
  log_write(buf, n, sizeof buf);
}

int dmh_log_level_flag(const char *cmd, const char *value) {
  dm_log_level level;
  if (dmh_log_level_parse(value, &level) < 0) {
    fprintf(stderr, "dmhost %s: --log-level \"%s\" is not debug, info, warn or error\n", cmd,
            value);
    return -1;
  }
  dmh_log_set_level(level);
  return 0;
}
