/* dmctl's DM-compatible inputs (dmctl_config.h): --config's TOML file, --rpc-timeout's durations
 * and the interactive mode's command lines. */
#include "dmctl_config.h"

#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmhost/fs.h"
#include "dmhost/sdk.h"
#include "dmhost/settings.h"

void dmctl_file_cfg_free(dmctl_file_cfg *c) {
  free(c->master_addr);
  free(c->rpc_timeout);
  free(c->ssl_ca);
  free(c->ssl_cert);
  free(c->ssl_key);
  memset(c, 0, sizeof *c);
}

/* The value of `key = "VALUE"` (or 'VALUE', or a bare word) after the '='; NULL when malformed. */
static char *cfg_value(char *v) {
  while (*v == ' ' || *v == '\t')
    v++;
  char *end;
  if (*v == '"' || *v == '\'') {
    end = strchr(v + 1, *v);
    if (!end)
      return NULL;
    char *rest = end + 1;
    while (*rest == ' ' || *rest == '\t')
      rest++;
    if (*rest && *rest != '#')
      return NULL;
    return strndup(v + 1, (size_t)(end - v - 1));
  }
  end = v;
  while (*end && *end != '#' && *end != ' ' && *end != '\t')
    end++;
  return end == v ? NULL : strndup(v, (size_t)(end - v));
}

int dmctl_config_load(const char *path, dmctl_file_cfg *out, dm_error *err) {
  memset(out, 0, sizeof *out);
  size_t len = 0;
  char *text = dm_fs_read_all(path, &len);
  if (!text) {
    dm_error_set(err, DM_ERR_CONTROL_REQUEST, NULL, "--config %s: cannot read it: %s", path,
                 strerror(errno));
    return -1;
  }
  static const struct {
    const char *key;
    size_t off;
  } keys[] = {
      {"master-addr", offsetof(dmctl_file_cfg, master_addr)},
      {"rpc-timeout", offsetof(dmctl_file_cfg, rpc_timeout)},
      {"ssl-ca", offsetof(dmctl_file_cfg, ssl_ca)},
      {"ssl-cert", offsetof(dmctl_file_cfg, ssl_cert)},
      {"ssl-key", offsetof(dmctl_file_cfg, ssl_key)},
  };
  int line = 0, rc = 0;
  for (char *l = text; l && rc == 0;) {
    char *nl = strchr(l, '\n');
    if (nl)
      *nl = '\0';
    line++;
    char *s = l;
    while (isspace((unsigned char)*s))
      s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
      s[--n] = '\0';
    if (*s && *s != '#') {
      char *eq = strchr(s, '=');
      char *k = s, *kend = eq ? eq : s + n;
      while (kend > k && (kend[-1] == ' ' || kend[-1] == '\t'))
        kend--;
      size_t klen = (size_t)(kend - k);
      size_t found = sizeof keys / sizeof keys[0];
      for (size_t i = 0; eq && i < sizeof keys / sizeof keys[0]; i++)
        if (strlen(keys[i].key) == klen && strncmp(keys[i].key, k, klen) == 0)
          found = i;
      char *v = eq && found < sizeof keys / sizeof keys[0] ? cfg_value(eq + 1) : NULL;
      if (!v) {
        dm_error_set(err, DM_ERR_CONTROL_REQUEST, NULL,
                     "--config %s:%d: \"%s\" is not one of DM's dmctl settings (master-addr, "
                     "rpc-timeout, ssl-ca, ssl-cert, ssl-key as key = \"value\"); fix or remove "
                     "the line",
                     path, line, s);
        rc = -1;
      } else {
        char **slot = (char **)((char *)out + keys[found].off);
        free(*slot);
        *slot = v;
      }
    }
    l = nl ? nl + 1 : NULL;
  }
  free(text);
  if (rc < 0)
    dmctl_file_cfg_free(out);
  return rc;
}

int dmctl_duration_s(const char *v, long *out) {
  /* a plain number is seconds (dmhost's --timeout); else Go's units, e.g. "10m", "1m30s" */
  char *end;
  errno = 0;
  long n = strtol(v, &end, 10);
  if (*v && !*end && errno == 0 && n >= 0) {
    *out = n;
    return 0;
  }
  int64_t ms;
  if (dm_duration_parse(v, &ms) < 0 || ms > (int64_t)1e12)
    return -1;
  *out = ms > 0 && ms < 1000 ? 1 : (long)(ms / 1000);
  return 0;
}

int dmctl_split_line(const char *line, char ***out) {
  size_t cap = 8, n = 0;
  char **words = calloc(cap + 1, sizeof *words);
  char *buf = malloc(strlen(line) + 1);
  if (!words || !buf)
    goto fail;
  const char *p = line;
  for (;;) {
    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
      p++;
    if (!*p)
      break;
    size_t b = 0;
    char quote = 0;
    for (; *p && (quote || !(*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')); p++) {
      if (quote == '\'' && *p == '\'')
        quote = 0;
      else if (quote == '"' && *p == '"')
        quote = 0;
      else if (!quote && (*p == '\'' || *p == '"'))
        quote = *p;
      else if (quote != '\'' && *p == '\\' && p[1])
        buf[b++] = *++p;
      else
        buf[b++] = *p;
    }
    if (quote)
      goto fail; /* an unclosed quote */
    if (n == cap) {
      char **grown = realloc(words, (cap * 2 + 1) * sizeof *words);
      if (!grown)
        goto fail;
      words = grown;
      cap *= 2;
    }
    if (!(words[n++] = strndup(buf, b)))
      goto fail;
    words[n] = NULL;
  }
  free(buf);
  *out = words;
  return (int)n;
fail:
  for (size_t i = 0; words && i < n; i++)
    free(words[i]);
  free(words);
  free(buf);
  return -1;
}

void dmctl_words_free(char **words) {
  for (size_t i = 0; words && words[i]; i++)
    free(words[i]);
  free(words);
}

int dmctl_task_name_of(const char *path, char *out, size_t len) {
  size_t n = 0;
  char *text = dm_fs_read_all(path, &n);
  if (!text)
    return -1;
  int rc = -1;
  for (char *l = text; l && rc < 0;) {
    char *nl = strchr(l, '\n');
    if (nl)
      *nl = '\0';
    /* a top-level key at the line's start: YAML's "name: X", libconfig's name = "X"; */
    if (strncmp(l, "name", 4) == 0) {
      char *p = l + 4;
      while (*p == ' ' || *p == '\t')
        p++;
      if (*p == ':' || *p == '=') {
        p++;
        while (*p == ' ' || *p == '\t')
          p++;
        char q = *p == '"' || *p == '\'' ? *p++ : 0;
        size_t k = 0;
        while (p[k] && (q ? p[k] != q : !strchr(" \t;#\r", p[k])))
          k++;
        if (k > 0 && k < len && (!q || p[k] == q)) {
          memcpy(out, p, k);
          out[k] = '\0';
          rc = 0;
        }
      }
    }
    l = nl ? nl + 1 : NULL;
  }
  free(text);
  return rc;
}
