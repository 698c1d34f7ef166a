/* get-config's masking of passwords in a stored file's text. See config_mask.h. */
#include "config_mask.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define MASK_KEY "password"

static bool mask_word(char ch) {
  return isalnum((unsigned char)ch) || ch == '_';
}

/* The column of p on its line (the key's, for YAML's continuation lines). */
static size_t mask_column(const char *text, const char *p) {
  const char *b = p;
  while (b > text && b[-1] != '\n')
    b--;
  return (size_t)(p - b);
}

/* After a quoted string opening at p (*p is the quote): past its closing quote, or the end. */
static const char *mask_quoted(const char *p, bool yaml) {
  char q = *p++;
  for (; *p; p++) {
    if (q == '"' && *p == '\\' && p[1]) {
      p++;
      continue;
    }
    if (*p == q) {
      if (q == '\'' && yaml && p[1] == '\'') { /* YAML's '' inside single quotes */
        p++;
        continue;
      }
      return p + 1;
    }
  }
  return p;
}

/* YAML: past the rest of the line at p and the lines after it that continue the value (indented
 * more than the key at column col, blank lines between them), the final newline left. */
static const char *mask_yaml_lines(const char *p, size_t col) {
  const char *end = p + strcspn(p, "\n");
  for (const char *line = end; *line == '\n';) {
    line++;
    const char *s = line + strspn(line, " \t\r");
    const char *eol = s + strcspn(s, "\n");
    if (s == eol) { /* blank: the value's only if an indented line follows */
      line = eol;
      continue;
    }
    if ((size_t)(s - line) <= col)
      break;
    end = line = eol;
  }
  return end;
}

/* libconfig: past the blanks and comments (#, //, slash-star) at p. */
static const char *mask_libconfig_gap(const char *p) {
  for (;;) {
    while (*p && isspace((unsigned char)*p))
      p++;
    if (*p == '#' || (p[0] == '/' && p[1] == '/'))
      p += strcspn(p, "\n");
    else if (p[0] == '/' && p[1] == '*') {
      const char *end = strstr(p + 2, "*/");
      p = end ? end + 2 : p + strlen(p);
    } else
      return p;
  }
}

/* The end of the value starting at v (after `password`, its separator and blanks). */
static const char *mask_value_end(const char *v, bool yaml, size_t col) {
  if (*v == '"' || *v == '\'') {
    const char *e = mask_quoted(v, yaml);
    while (!yaml) { /* libconfig: "a" "b" is one string, blanks and comments between */
      const char *s = mask_libconfig_gap(e);
      if (*s != '"')
        break;
      e = mask_quoted(s, yaml);
    }
    return e;
  }
  if (yaml) /* plain, a block (| or >), an anchor, or the value on the next lines */
    return mask_yaml_lines(v, col);
  return v + strcspn(v, ";,}\n");
}

/* At p a key `password` followed by its separator? Then the value's start in *value. */
static bool mask_key_at(const char *text, const char *p, bool yaml, const char **value) {
  if (strncmp(p, MASK_KEY, strlen(MASK_KEY)) != 0 || (p > text && mask_word(p[-1])))
    return false;
  const char *s = p + strlen(MASK_KEY);
  if (*s == '"' || *s == '\'') /* a quoted key */
    s++;
  while (*s == ' ' || *s == '\t' || (!yaml && (*s == '\n' || *s == '\r')))
    s++;
  if (yaml ? *s != ':' || (s[1] && !isspace((unsigned char)s[1])) : *s != '=' && *s != ':')
    return false;
  s++;
  if (yaml) /* YAML: a value on the next lines is the plain rule's (mask_yaml_lines) */
    while (*s == ' ' || *s == '\t')
      s++;
  else /* libconfig: the value may follow on another line, after comments */
    s = mask_libconfig_gap(s);
  *value = s;
  return true;
}

char *dmh_config_masked(const char *text, bool yaml) {
  size_t len = strlen(text), cap = len + 1, n = 0;
  char *out = malloc(cap);
  if (!out)
    return NULL;
  for (const char *p = text; *p;) {
    const char *v;
    if (!mask_key_at(text, p, yaml, &v)) {
      out[n++] = *p++;
      continue;
    }
    const char *e = mask_value_end(v, yaml, mask_column(text, p));
    /* YAML's `password:` with its value on the next lines: the mask needs a blank after the ':' */
    const char *gap = yaml && v[-1] == ':' ? " " : "";
    size_t keep = (size_t)(v - p), add = keep + strlen(gap) + strlen(DMH_CONFIG_MASK);
    if (n + add + (size_t)(len - (size_t)(e - text)) + 1 > cap) {
      cap = n + add + len + 1;
      char *grown = realloc(out, cap);
      if (!grown) {
        free(out);
        return NULL;
      }
      out = grown;
    }
    memcpy(out + n, p, keep);
    n += keep;
    memcpy(out + n, gap, strlen(gap));
    n += strlen(gap);
    memcpy(out + n, DMH_CONFIG_MASK, strlen(DMH_CONFIG_MASK));
    n += strlen(DMH_CONFIG_MASK);
    p = e;
  }
  out[n] = '\0';
  return out;
}

bool dmh_config_mask_left(const char *text, bool yaml) {
  static const char stars[] = "******";
  const size_t n = sizeof stars - 1;
  for (const char *p = text; *p; p++) {
    const char *v;
    if (!mask_key_at(text, p, yaml, &v))
      continue;
    const char *e = mask_value_end(v, yaml, mask_column(text, p));
    while (e > v && isspace((unsigned char)e[-1])) /* a YAML value's line ends in blanks */
      e--;
    size_t len = (size_t)(e - v);
    if ((len == n && strncmp(v, stars, n) == 0) ||
        (len == n + 2 && (*v == '"' || *v == '\'') && e[-1] == *v && strncmp(v + 1, stars, n) == 0))
      return true;
  }
  return false;
}
