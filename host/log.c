/* Host logging: formatted into one buffer, written with one write(2) so lines never interleave. */
#include "log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static atomic_int log_level = DM_LOG_INFO;

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

static size_t log_prefix(char *buf, size_t len, dm_log_level level, const char *scope) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  int n =
      snprintf(buf, len, "[%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ] [%s]%s%s%s ", tm.tm_year + 1900,
               tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000,
               log_level_name(level), scope ? " [" : "", scope ? scope : "", scope ? "]" : "");
  return n < 0 ? 0 : ((size_t)n < len ? (size_t)n : len - 1);
}

static void log_write(char *buf, size_t n, size_t cap) {
  if (n >= cap - 1)
    n = cap - 2;
  buf[n++] = '\n';
  ssize_t w = write(STDERR_FILENO, buf, n);
  (void)w; /* nothing sensible to do when stderr is gone */
}

void dmh_log(dm_log_level level, const char *scope, const char *fmt, ...) {
  if ((int)level < atomic_load(&log_level))
    return;
  char buf[2048];
  size_t n = log_prefix(buf, sizeof buf, level, scope);
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(buf + n, sizeof buf - n, fmt, ap);
  va_end(ap);
  if (m > 0)
    n += (size_t)m < sizeof buf - n ? (size_t)m : sizeof buf - n - 1;
  log_write(buf, n, sizeof buf);
}

void dmh_log_fields(dm_log_level level, const char *scope, const char *msg,
                    const dm_log_field *fields, size_t nf) {
  if ((int)level < atomic_load(&log_level))
    return;
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
