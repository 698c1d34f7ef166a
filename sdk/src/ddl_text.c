/* dm_db_ddl_canon (db.h): the text form under which DDL statements are compared. Without a
 * parser here (DM restores statements from its parser's tree), a canonical text gives the same
 * answer for what tools and people vary: case, blanks, comments, backticks. */
#include "dmhost/db.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static bool punct(char c) {
  return c == '(' || c == ')' || c == ',' || c == '.' || c == '=' || c == ';';
}

/* the quoted token at s (quote q), copied to out verbatim; returns the byte after it */
static const char *copy_quoted(const char *s, char q, char **out) {
  char *o = *out;
  *o++ = *s++;
  while (*s) {
    if (*s == '\\' && q != '`' && s[1]) {
      *o++ = *s++;
      *o++ = *s++;
      continue;
    }
    if (*s == q) {
      *o++ = *s++;
      if (*s != q) /* a doubled quote stays inside */
        break;
    }
    *o++ = *s++;
  }
  *out = o;
  return s;
}

/* a backticked name: plain ([A-Za-z0-9_$]) ones lose their backticks, all fold to lower case */
static const char *copy_name(const char *s, char **out) {
  const char *end = s + 1;
  bool plain = true;
  while (*end && !(*end == '`' && end[1] != '`')) {
    if (*end == '`') {
      end++; /* a doubled backtick inside the name */
      plain = false;
    } else if (!(isalnum((unsigned char)*end) || *end == '_' || *end == '$'))
      plain = false;
    end++;
  }
  if (!*end || end == s + 1)
    plain = false;
  char *o = *out;
  for (const char *p = plain ? s + 1 : s; p < end + (plain ? 0 : (*end ? 1 : 0)); p++)
    *o++ = (char)tolower((unsigned char)*p);
  *out = o;
  return *end ? end + 1 : end;
}

char *dm_db_ddl_canon(const char *ddl) {
  char *out = malloc(strlen(ddl) + 1), *o = out;
  if (!out)
    return NULL;
  bool blank = false; /* a blank is pending between two tokens */
  const char *s = ddl;
  while (*s) {
    if (isspace((unsigned char)*s)) {
      blank = true;
      s++;
      continue;
    }
    if (s[0] == '/' && s[1] == '*' && s[2] != '!' && !(s[2] == 'M' && s[3] == '!')) {
      const char *e = strstr(s + 2, "*/");
      s = e ? e + 2 : s + strlen(s);
      blank = true;
      continue;
    }
    if (*s == '#' || (s[0] == '-' && s[1] == '-' && (isspace((unsigned char)s[2]) || !s[2]))) {
      while (*s && *s != '\n')
        s++;
      blank = true;
      continue;
    }
    if (blank && o > out && !punct(o[-1]) && !punct(*s))
      *o++ = ' ';
    blank = false;
    if (*s == '\'' || *s == '"')
      s = copy_quoted(s, *s, &o);
    else if (*s == '`')
      s = copy_name(s, &o);
    else
      *o++ = (char)tolower((unsigned char)*s++);
  }
  while (o > out && o[-1] == ';')
    o--;
  *o = '\0';
  return out;
}

bool dm_db_ddl_same(const char *a, const char *b) {
  char *ca = dm_db_ddl_canon(a), *cb = dm_db_ddl_canon(b);
  bool same = ca && cb && strcmp(ca, cb) == 0;
  free(ca);
  free(cb);
  return same;
}
