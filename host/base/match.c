/* DM's name matching: wildcards, case folding, and DM's (RE2) regular expressions as POSIX ones;
 * the rules are spelled out in match.h. */
#include "match.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- wildcards ---- */

static unsigned char match_fold(unsigned char c, bool fold) {
  return fold && c >= 'A' && c <= 'Z' ? (unsigned char)(c - 'A' + 'a') : c;
}

/*
 * One token of a wildcard at p against the byte c: '?' (any), a set "[a-z0-9_]" or "[!0-9]"
 * (negated; "[!]" is a literal '!'; a '[' without a closing ']' is a literal '['), or a literal
 * byte. Returns how many pattern bytes the token spans and sets *match.
 */
static size_t match_wildcard_token(const char *p, unsigned char c, bool fold, bool *match) {
  c = match_fold(c, fold);
  if (*p == '?') {
    *match = true;
    return 1;
  }
  const char *close = *p == '[' ? strchr(p + 1, ']') : NULL;
  if (!close) {
    *match = match_fold((unsigned char)*p, fold) == c;
    return 1;
  }
  const char *q = p + 1;
  bool neg = *q == '!';
  if (neg)
    q++;
  if (neg && q == close) {
    *match = c == '!';
    return (size_t)(close - p) + 1;
  }
  bool in = false;
  for (; q < close; q++) {
    unsigned char lo = match_fold((unsigned char)*q, fold), hi = lo;
    if (q[1] == '-' && q + 2 < close) {
      hi = match_fold((unsigned char)q[2], fold);
      q += 2;
    }
    if (lo <= c && c <= hi)
      in = true;
  }
  *match = in != neg;
  return (size_t)(close - p) + 1;
}

/* '*' any run, with backtracking to the last star. */
static bool match_wildcard(const char *p, const char *s, bool fold) {
  const char *star = NULL, *retry = NULL;
  while (*s) {
    if (*p == '*') {
      star = ++p;
      retry = s;
      continue;
    }
    bool match = false;
    size_t n = *p ? match_wildcard_token(p, (unsigned char)*s, fold, &match) : 0;
    if (match) {
      p += n;
      s++;
    } else if (star) {
      p = star;
      s = ++retry;
    } else {
      return false;
    }
  }
  while (*p == '*')
    p++;
  return *p == '\0';
}

bool dmh_wildcard_match(const char *p, const char *s, bool case_sensitive) {
  return match_wildcard(p, s, !case_sensitive);
}

/* ---- DM's (RE2) regular expressions, translated into POSIX extended ones ---- */

typedef struct rx_set {
  uint32_t w[8]; /* bytes 1..255 */
} rx_set;

static void rx_set_add(rx_set *s, int c) {
  s->w[c >> 5] |= 1u << (c & 31);
}

static bool rx_set_has(const rx_set *s, int c) {
  return (s->w[c >> 5] >> (c & 31)) & 1u;
}

static void rx_set_negate(rx_set *s) {
  for (int i = 0; i < 8; i++)
    s->w[i] = ~s->w[i];
  s->w[0] &= ~1u; /* never NUL */
}

/* Both cases of every ASCII letter in the set. */
static void rx_set_fold(rx_set *s) {
  for (int c = 'a'; c <= 'z'; c++)
    if (rx_set_has(s, c) || rx_set_has(s, c - 'a' + 'A')) {
      rx_set_add(s, c);
      rx_set_add(s, c - 'a' + 'A');
    }
}

static void rx_set_union(rx_set *s, const rx_set *t) {
  for (int i = 0; i < 8; i++)
    s->w[i] |= t->w[i];
}

/* The ASCII classes of RE2: the Perl ones (\d \w \s) and the POSIX ones ([[:alpha:]]). */
static bool rx_in_class(const char *name, size_t n, int c) {
  if (c >= 128)
    return false;
#define RX_IS(s) (n == sizeof s - 1 && memcmp(name, s, n) == 0)
  if (RX_IS("d") || RX_IS("digit"))
    return isdigit(c);
  if (RX_IS("w") || RX_IS("word"))
    return isalnum(c) || c == '_';
  if (RX_IS("s"))
    return c == '\t' || c == '\n' || c == '\f' || c == '\r' || c == ' ';
  if (RX_IS("alnum"))
    return isalnum(c);
  if (RX_IS("alpha"))
    return isalpha(c);
  if (RX_IS("ascii"))
    return true;
  if (RX_IS("blank"))
    return c == ' ' || c == '\t';
  if (RX_IS("cntrl"))
    return iscntrl(c);
  if (RX_IS("graph"))
    return isgraph(c);
  if (RX_IS("lower"))
    return islower(c);
  if (RX_IS("print"))
    return isprint(c);
  if (RX_IS("punct"))
    return ispunct(c);
  if (RX_IS("space"))
    return isspace(c);
  if (RX_IS("upper"))
    return isupper(c);
  if (RX_IS("xdigit"))
    return isxdigit(c);
#undef RX_IS
  return false;
}

static bool rx_class_known(const char *name, size_t n) {
  static const char *const names[] = {"alnum", "alpha", "ascii", "blank", "cntrl",
                                      "digit", "graph", "lower", "print", "punct",
                                      "space", "upper", "word",  "xdigit"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (strlen(names[i]) == n && memcmp(names[i], name, n) == 0)
      return true;
  return false;
}

static void rx_set_class(rx_set *s, const char *name, size_t n, bool neg) {
  for (int c = 1; c < 256; c++)
    if (rx_in_class(name, n, c) != neg)
      rx_set_add(s, c);
}

typedef struct rx_ctx {
  const char *start; /* the expression */
  char *out;         /* the POSIX expression being written */
  size_t len, cap;
  bool icase, dotall, nomem;
  bool groups;     /* sub-matches kept: non-greedy quantifiers are refused */
  bool *capturing; /* per POSIX group written so far: capturing in the RE2 source */
  size_t n_posix, cap_posix;
  char *why;
  size_t why_len;
} rx_ctx;

static int rx_fail(rx_ctx *x, const char *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int rx_fail(rx_ctx *x, const char *at, const char *fmt, ...) {
  char what[200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  snprintf(x->why, x->why_len, "%s (at character %zu of \"%s\")", what, (size_t)(at - x->start) + 1,
           x->start);
  return -1;
}

static void rx_put(rx_ctx *x, const char *s, size_t n) {
  if (x->nomem)
    return;
  if (x->len + n + 1 > x->cap) {
    size_t cap = (x->len + n + 1) * 2;
    char *out = realloc(x->out, cap);
    if (!out) {
      x->nomem = true;
      return;
    }
    x->out = out;
    x->cap = cap;
  }
  memcpy(x->out + x->len, s, n);
  x->len += n;
  x->out[x->len] = '\0';
}

static void rx_putc(rx_ctx *x, char c) {
  rx_put(x, &c, 1);
}

/* A POSIX group opens: every '(' written is one, counted in order; capturing says whether RE2
 * counts it too ('(' and named groups do, "(?:" does not). */
static void rx_open_group(rx_ctx *x, bool capturing) {
  rx_putc(x, '(');
  if (x->nomem)
    return;
  if (x->n_posix == x->cap_posix) {
    size_t cap = x->cap_posix ? x->cap_posix * 2 : 8;
    bool *c = realloc(x->capturing, cap * sizeof *c);
    if (!c) {
      x->nomem = true;
      return;
    }
    x->capturing = c;
    x->cap_posix = cap;
  }
  x->capturing[x->n_posix++] = capturing;
}

/* A literal byte outside brackets. */
static void rx_put_literal(rx_ctx *x, unsigned char c) {
  if (strchr(".[]()*+?{}|^$\\", c))
    rx_putc(x, '\\');
  rx_putc(x, (char)c);
}

/* A set of bytes as a POSIX bracket expression: ']' first, '^' never first, '-' last, and '['
 * where no '.', ':' or '=' follows it; a set holding bytes >= 0x80 (a negated one: only ASCII
 * can be named) is written as the negation of the rest. */
static int rx_put_set(rx_ctx *x, rx_set s, const char *at) {
  if (x->icase)
    rx_set_fold(&s);
  bool neg = rx_set_has(&s, 0x80);
  if (neg)
    rx_set_negate(&s);
  int count = 0, only = 0;
  for (int c = 1; c < 128; c++)
    if (rx_set_has(&s, c)) {
      count++;
      only = c;
    }
  if (count == 0 && !neg)
    return rx_fail(x, at, "a class that matches no character");
  if (count == 0) {
    rx_putc(x, '.'); /* every byte (no REG_NEWLINE: '.' matches a newline too) */
    return 0;
  }
  if (count == 1 && !neg) {
    rx_put_literal(x, (unsigned char)only);
    return 0;
  }
  rx_put(x, neg ? "[^" : "[", neg ? 2 : 1);
  size_t first = x->len;
  if (rx_set_has(&s, ']'))
    rx_putc(x, ']');
  for (int c = 1; c < 128; c++) {
    if (!rx_set_has(&s, c) || strchr("]^-[", c))
      continue;
    int end = c;
    while (end + 1 < 128 && rx_set_has(&s, end + 1) && !strchr("]^-[", end + 1))
      end++;
    if (end - c >= 2) {
      rx_putc(x, (char)c);
      rx_putc(x, '-');
      rx_putc(x, (char)end);
    } else {
      for (int k = c; k <= end; k++)
        rx_putc(x, (char)k);
    }
    c = end;
  }
  bool open = rx_set_has(&s, '['), dash = rx_set_has(&s, '-');
  if (rx_set_has(&s, '^')) {
    if (x->len == first && open) {
      rx_putc(x, '[');
      open = false;
    } else if (x->len == first && dash) {
      rx_putc(x, '-');
      dash = false;
    }
    rx_putc(x, '^'); /* first only after the negation's own '^': a literal there too */
  }
  if (open)
    rx_putc(x, '[');
  if (dash)
    rx_putc(x, '-');
  rx_putc(x, ']');
  return 0;
}

/* An escape at p (the byte after '\'), inside or outside brackets: a literal byte (returns 1,
 * *lit) or a class (returns 2, *set). *end is set past it. */
static int rx_escape(rx_ctx *x, const char *p, const char **end, int *lit, rx_set *set) {
  unsigned char c = (unsigned char)*p;
  const char *at = p - 1;
  *end = p + 1;
  if (c == '\0')
    return rx_fail(x, at, "a trailing backslash");
  if (strchr("dDwWsS", c)) {
    memset(set, 0, sizeof *set);
    char name = (char)tolower(c);
    rx_set_class(set, &name, 1, isupper(c));
    return 2;
  }
  static const char names[] = "ntrfva", bytes[] = "\n\t\r\f\v\a";
  const char *k = strchr(names, c);
  if (k) {
    *lit = (unsigned char)bytes[k - names];
    return 1;
  }
  if (c == 'x') {
    unsigned long v = 0;
    const char *q = p + 1;
    if (*q == '{') {
      char *e;
      v = strtoul(q + 1, &e, 16);
      if (e == q + 1 || *e != '}')
        return rx_fail(x, at, "a malformed \\x{...} escape");
      *end = e + 1;
    } else {
      if (!isxdigit((unsigned char)q[0]) || !isxdigit((unsigned char)q[1]))
        return rx_fail(x, at, "a malformed \\xHH escape");
      char hex[3] = {q[0], q[1], 0};
      v = strtoul(hex, NULL, 16);
      *end = q + 2;
    }
    if (v == 0 || v > 0x7f)
      return rx_fail(x, at,
                     "\\x escapes of NUL or above 0x7F (multi-byte characters) are not "
                     "supported; write the character itself");
    *lit = (int)v;
    return 1;
  }
  if (c < 128 && ispunct(c)) {
    *lit = c;
    return 1;
  }
  if (c == 'b' || c == 'B')
    return rx_fail(x, at,
                   "\\%c (a word boundary) has no POSIX equivalent and is not supported; use "
                   "(^|[^[:alnum:]_]) or ([^[:alnum:]_]|$) instead",
                   c);
  if (c == 'p' || c == 'P')
    return rx_fail(x, at, "Unicode classes (\\%c) are not supported; list the characters", c);
  if (isdigit(c))
    return rx_fail(x, at, "octal escapes and back-references (\\%c) are not supported", c);
  return rx_fail(x, at, "unknown escape \\%c", c);
}

/* A bracket expression at p ('['), in RE2's syntax, into *set. Returns the byte after it or
 * NULL. */
static const char *rx_bracket(rx_ctx *x, const char *p, rx_set *set) {
  const char *q = p + 1;
  bool neg = *q == '^';
  if (neg)
    q++;
  memset(set, 0, sizeof *set);
  for (bool first = true; first || *q != ']'; first = false) {
    if (*q == '\0')
      return rx_fail(x, p, "a '[' without its ']'"), NULL;
    const char *close = q[0] == '[' && q[1] == ':' ? strstr(q + 2, ":]") : NULL;
    if (close) { /* without its ":]" the '[' is a literal, as in RE2 */
      const char *name = q + 2;
      bool cneg = *name == '^';
      if (cneg)
        name++;
      if (!rx_class_known(name, (size_t)(close - name)))
        return rx_fail(x, q, "an unknown class [:...:]"), NULL;
      rx_set_class(set, name, (size_t)(close - name), cneg);
      q = close + 2;
      continue;
    }
    int lo, hi;
    rx_set cls;
    if (*q == '\\') {
      int kind = rx_escape(x, q + 1, &q, &lo, &cls);
      if (kind < 0)
        return NULL;
      if (kind == 2) {
        rx_set_union(set, &cls);
        continue;
      }
    } else {
      lo = (unsigned char)*q++;
    }
    hi = lo;
    if (q[0] == '-' && q[1] != ']' && q[1] != '\0') {
      const char *at = q;
      if (q[1] == '\\') {
        if (rx_escape(x, q + 2, &q, &hi, &cls) != 1)
          return x->why[0] ? NULL : (rx_fail(x, at, "a class cannot end a range"), NULL);
      } else {
        hi = (unsigned char)q[1];
        q += 2;
      }
      if (hi < lo)
        return rx_fail(x, at, "a range whose end comes before its start"), NULL;
    }
    if (lo >= 128 || hi >= 128)
      return rx_fail(x, p,
                     "non-ASCII characters inside [...] are not supported (matching is "
                     "byte-wise); use an alternative (a|b) instead"),
             NULL;
    for (int c = lo; c <= hi; c++)
      rx_set_add(set, c);
  }
  if (neg) {
    if (x->icase)
      rx_set_fold(set); /* (?i)[^a]: neither a nor A */
    rx_set_negate(set);
  }
  return q + 1;
}

/* "(?flags)" at the very start: i and s only. Returns the byte after it, p when it is not one. */
static const char *rx_leading_flags(rx_ctx *x, const char *p) {
  if (p[0] != '(' || p[1] != '?')
    return p;
  size_t n = strspn(p + 2, "is");
  if (n == 0 || p[2 + n] != ')')
    return p;
  for (size_t i = 0; i < n; i++) {
    x->icase |= p[2 + i] == 'i';
    x->dotall |= p[2 + i] == 's';
  }
  return p + 3 + n;
}

/* "(?" not at the start: non-capturing and named groups open a plain group; the rest is refused.
 * Returns the byte after what was written, or NULL. */
static const char *rx_group(rx_ctx *x, const char *p) {
  const char *q = p + 2;
  if (*q == ':') {
    rx_open_group(x, false);
    return q + 1;
  }
  if (*q == '=' || *q == '!' || (*q == '<' && (q[1] == '=' || q[1] == '!')))
    return rx_fail(x, p, "lookarounds (?=, (?!, (?<=, (?<! are not supported (nor by DM)"), NULL;
  if (*q == '<' || (*q == 'P' && q[1] == '<')) {
    const char *close = strchr(q, '>');
    if (!close)
      return rx_fail(x, p, "a group name without its '>'"), NULL;
    rx_open_group(x, true);
    return close + 1;
  }
  return rx_fail(x, p,
                 "flags (?...) are only supported at the start, as (?i), (?s) or (?is); the "
                 "task's case-sensitive setting decides the case"),
         NULL;
}

/* "{n}", "{n,}", "{n,m}": the length of a repetition at p, 0 when it is a literal '{'. */
static size_t rx_repeat_len(const char *p) {
  size_t n = 1, digits = strspn(p + n, "0123456789");
  if (digits == 0)
    return 0;
  n += digits;
  if (p[n] == ',') {
    n++;
    n += strspn(p + n, "0123456789");
  }
  return p[n] == '}' ? n + 1 : 0;
}

/* Where sub-matches are kept, a non-greedy quantifier would change what a group holds, and POSIX
 * has none: refused rather than giving other values than DM. */
static const char rx_nongreedy[] =
    "non-greedy quantifiers (*? +? ?? {n,m}?) are not supported in an expression whose groups are "
    "used; write the group so that the longest match is the one meant (e.g. ([^_]*) for (.*?)_)";

static int rx_translate(rx_ctx *x) {
  const char *p = rx_leading_flags(x, x->start);
  while (*p) {
    unsigned char c = (unsigned char)*p;
    rx_set set;
    size_t rep;
    if (c == '\\' && (p[1] == 'A' || p[1] == 'z')) {
      rx_putc(x, p[1] == 'A' ? '^' : '$');
      p += 2;
    } else if (c == '\\' && p[1] == 'Q') {
      const char *e = strstr(p + 2, "\\E");
      const char *stop = e ? e : p + strlen(p);
      for (const char *q = p + 2; q < stop; q++)
        rx_put_literal(x, (unsigned char)*q);
      p = e ? e + 2 : stop;
    } else if (c == '\\') {
      int lit;
      const char *at = p;
      int kind = rx_escape(x, p + 1, &p, &lit, &set);
      if (kind < 0 || (kind == 2 && rx_put_set(x, set, at) < 0))
        return -1;
      if (kind == 1)
        rx_put_literal(x, (unsigned char)lit);
    } else if (c == '.') {
      if (x->dotall) {
        rx_putc(x, '.');
      } else {
        memset(&set, 0, sizeof set);
        rx_set_add(&set, '\n');
        rx_set_negate(&set);
        rx_put_set(x, set, p);
      }
      p++;
    } else if (c == '[') {
      const char *at = p;
      if (!(p = rx_bracket(x, p, &set)) || rx_put_set(x, set, at) < 0)
        return -1;
    } else if (c == '(' && p[1] == '?') {
      if (!(p = rx_group(x, p)))
        return -1;
    } else if (c == '(') {
      rx_open_group(x, true);
      p++;
    } else if (c == '*' || c == '+' || c == '?') {
      if (p[1] == '?' && x->groups)
        return rx_fail(x, p, "%s", rx_nongreedy);
      rx_putc(x, (char)c);
      p += p[1] == '?' ? 2 : 1; /* non-greedy: the same yes/no answer */
    } else if (c == '{' && (rep = rx_repeat_len(p)) > 0) {
      if (p[rep] == '?' && x->groups)
        return rx_fail(x, p, "%s", rx_nongreedy);
      rx_put(x, p, rep);
      p += rep;
      p += *p == '?';
    } else if (c == '{' || c == '}') {
      rx_put_literal(x, c);
      p++;
    } else {
      rx_putc(x, (char)c);
      p++;
    }
  }
  rx_put(x, "", 0);
  return 0;
}

/* Translates expr and compiles it with cflags (REG_ICASE added as the expression says). On
 * success x->capturing holds one flag per POSIX group; the caller frees it. */
static int rx_compile(rx_ctx *x, regex_t *re, int cflags) {
  if (x->why_len)
    x->why[0] = '\0';
  rx_put(x, "", 0);
  int rc = rx_translate(x);
  if (rc == 0 && x->nomem)
    rc = (snprintf(x->why, x->why_len, "out of memory"), -1);
  if (rc == 0) {
    int e = regcomp(re, x->out, cflags | (x->icase ? REG_ICASE : 0));
    if (e != 0) {
      char msg[128];
      regerror(e, re, msg, sizeof msg);
      snprintf(x->why, x->why_len, "invalid (%s)", msg);
      rc = -1;
    }
  }
  free(x->out);
  x->out = NULL;
  return rc;
}

int dmh_regex_compile(regex_t *re, const char *expr, bool icase, char *why, size_t why_len) {
  rx_ctx x = {.start = expr, .icase = icase, .why = why, .why_len = why_len};
  int rc = rx_compile(&x, re, REG_EXTENDED | REG_NOSUB);
  free(x.capturing);
  return rc;
}

int dmh_regex_compile_groups(dmh_regex *rx, const char *expr, bool icase, char *why,
                             size_t why_len) {
  memset(rx, 0, sizeof *rx);
  rx_ctx x = {.start = expr, .icase = icase, .groups = true, .why = why, .why_len = why_len};
  if (rx_compile(&x, &rx->re, REG_EXTENDED) < 0) {
    free(x.capturing);
    return -1;
  }
  if (x.n_posix != rx->re.re_nsub) { /* every '(' written opens a group: a translator bug */
    snprintf(why, why_len, "internal error: %zu groups written, %zu compiled", x.n_posix,
             (size_t)rx->re.re_nsub);
    regfree(&rx->re);
    free(x.capturing);
    return -1;
  }
  size_t n = 0;
  for (size_t i = 0; i < x.n_posix; i++)
    n += x.capturing[i];
  rx->capture = n ? malloc(n * sizeof *rx->capture) : NULL;
  if (n && !rx->capture) {
    snprintf(why, why_len, "out of memory");
    regfree(&rx->re);
    free(x.capturing);
    return -1;
  }
  for (size_t i = 0; i < x.n_posix; i++)
    if (x.capturing[i])
      rx->capture[rx->n_capture++] = i + 1;
  free(x.capturing);
  rx->compiled = true;
  return 0;
}

/* The first match of rx in s with every POSIX group: m holds re_nsub + 1 slots (on the stack when
 * few, else allocated: *heap is set and the caller frees it). Returns false when nothing matched
 * (or out of memory). */
static bool rx_exec(const dmh_regex *rx, const char *s, regmatch_t *stack, size_t n_stack,
                    regmatch_t **m) {
  size_t n = rx->re.re_nsub + 1;
  *m = n <= n_stack ? stack : malloc(n * sizeof **m);
  if (!*m)
    return false;
  if (regexec(&rx->re, s, n, *m, 0) == 0)
    return true;
  if (*m != stack)
    free(*m);
  *m = NULL;
  return false;
}

/* Copies the bytes [so, eo) of s at out + at, as far as out_len allows (keeping a NUL). */
static void rx_append(char *out, size_t out_len, size_t at, const char *s, regoff_t so,
                      regoff_t eo) {
  if (so < 0 || eo <= so || at + 1 >= out_len)
    return;
  size_t n = (size_t)(eo - so);
  if (n > out_len - 1 - at)
    n = out_len - 1 - at;
  memcpy(out + at, s + so, n);
  out[at + n] = '\0';
}

size_t dmh_regex_extract(const dmh_regex *rx, const char *s, char *out, size_t out_len) {
  if (out_len)
    out[0] = '\0';
  regmatch_t stack[16], *m;
  if (!rx->compiled || !rx_exec(rx, s, stack, sizeof stack / sizeof *stack, &m))
    return 0;
  size_t len = 0;
  for (size_t k = 0; k < rx->n_capture; k++) {
    regmatch_t g = m[rx->capture[k]];
    rx_append(out, out_len, len, s, g.rm_so, g.rm_eo);
    if (g.rm_so >= 0 && g.rm_eo > g.rm_so)
      len += (size_t)(g.rm_eo - g.rm_so);
  }
  if (m != stack)
    free(m);
  return len;
}

long dmh_regex_group(const dmh_regex *rx, const char *s, size_t k, char *out, size_t out_len) {
  if (out_len)
    out[0] = '\0';
  regmatch_t stack[16], *m;
  if (!rx->compiled || k == 0 || k > rx->n_capture ||
      !rx_exec(rx, s, stack, sizeof stack / sizeof *stack, &m))
    return -1;
  regmatch_t g = m[rx->capture[k - 1]];
  rx_append(out, out_len, 0, s, g.rm_so, g.rm_eo);
  long len = g.rm_so >= 0 && g.rm_eo > g.rm_so ? (long)(g.rm_eo - g.rm_so) : 0;
  if (m != stack)
    free(m);
  return len;
}

bool dmh_regex_matches(const dmh_regex *rx, const char *s) {
  return rx->compiled && regexec(&rx->re, s, 0, NULL, 0) == 0;
}

void dmh_regex_free(dmh_regex *rx) {
  if (!rx || !rx->compiled)
    return;
  regfree(&rx->re);
  free(rx->capture);
  memset(rx, 0, sizeof *rx);
}

/* ---- name patterns ---- */

int dmh_match_init(dmh_match *m, const char *pattern, bool allow_regex, bool case_sensitive,
                   char *why, size_t why_len) {
  memset(m, 0, sizeof *m);
  m->pattern = pattern;
  m->fold = !case_sensitive;
  if (allow_regex && pattern[0] == '~') {
    if (dmh_regex_compile(&m->re, pattern + 1, m->fold, why, why_len) < 0)
      return -1;
    m->regex = true;
  }
  return 0;
}

bool dmh_match_name(const dmh_match *m, const char *name) {
  if (m->regex)
    return regexec(&m->re, name, 0, NULL, 0) == 0;
  return match_wildcard(m->pattern, name, m->fold);
}

void dmh_match_free(dmh_match *m) {
  if (m && m->regex) {
    regfree(&m->re);
    m->regex = false;
  }
}
