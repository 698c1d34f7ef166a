/*
 * Binlog positions: comparison by file/offset and by GTID set, as the relay catch-up wait and the
 * units need them. GTID sets are parsed on the stack in fixed tables: a set with more domains or
 * intervals than fit does not parse (-1) rather than being half-compared.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmhost/position.h"

#define GTID_MAX_ITEMS 256

bool dm_position_is_set(const dm_position *p) {
  return p && (p->name[0] || p->gtid[0]);
}

/* The numeric suffix of "mysql-bin.000123" (the part after the last dot), or -1. */
static long long pos_file_seq(const char *name) {
  const char *dot = strrchr(name, '.');
  if (!dot || !dot[1])
    return -1;
  char *end;
  long long v = strtoll(dot + 1, &end, 10);
  return *end ? -1 : v;
}

int dm_position_compare_file(const dm_position *a, const dm_position *b) {
  if (!a->name[0] || !b->name[0])
    return (a->name[0] != 0) - (b->name[0] != 0);
  long long sa = pos_file_seq(a->name), sb = pos_file_seq(b->name);
  int c = (sa >= 0 && sb >= 0) ? (sa > sb) - (sa < sb) : strcmp(a->name, b->name);
  if (c)
    return c;
  return (a->pos > b->pos) - (a->pos < b->pos);
}

/* One parsed item: MariaDB (domain, seq) or MySQL (uuid, [lo, hi]). */
typedef struct {
  char key[40]; /* decimal domain id, or the uuid */
  uint64_t lo, hi;
} gtid_item;

static const char *skip_ws(const char *s) {
  while (*s && isspace((unsigned char)*s))
    s++;
  return s;
}

static int parse_u64(const char **s, uint64_t *out) {
  if (!isdigit((unsigned char)**s))
    return -1;
  char *end;
  errno = 0;
  *out = strtoull(*s, &end, 10);
  *s = end;
  return errno == ERANGE ? -1 : 0; /* a clamped number would compare as something it is not */
}

/* A server uuid is hex digits and dashes. Anything else before a ':' means the text is not one
 * MySQL set (e.g. a MariaDB item glued in front of it: "0-1-5,3e11...:1-5"). */
static bool gtid_uuid_ok(const char *s, size_t n) {
  if (n == 0)
    return false;
  for (size_t i = 0; i < n; i++)
    if (!isxdigit((unsigned char)s[i]) && s[i] != '-')
      return false;
  return true;
}

/* Parses a whole set into items; for MySQL sets, one item per interval. Returns count or -1. */
static int gtid_parse(const char *set, gtid_item *items, int max, int *is_mysql) {
  int n = 0;
  const char *s = skip_ws(set);
  *is_mysql = strchr(set, ':') != NULL;
  while (*s) {
    if (*is_mysql) {
      const char *colon = strchr(s, ':');
      if (!colon || colon - s >= 40 || !gtid_uuid_ok(s, (size_t)(colon - s)))
        return -1;
      char uuid[40];
      /* Lower case: servers print lower case, people paste upper case; both name one server. */
      for (ptrdiff_t i = 0; i < colon - s; i++)
        uuid[i] = (char)tolower((unsigned char)s[i]);
      uuid[colon - s] = '\0';
      s = colon;
      while (*s == ':') {
        s++;
        uint64_t lo, hi;
        if (parse_u64(&s, &lo))
          return -1;
        hi = lo;
        if (*s == '-') {
          s++;
          if (parse_u64(&s, &hi) || hi < lo)
            return -1;
        }
        if (n == max)
          return -1;
        memcpy(items[n].key, uuid, sizeof uuid);
        items[n].lo = lo;
        items[n].hi = hi;
        n++;
      }
    } else {
      uint64_t domain, server, seq;
      if (parse_u64(&s, &domain) || *s++ != '-' || parse_u64(&s, &server) || *s++ != '-' ||
          parse_u64(&s, &seq))
        return -1;
      (void)server; /* per domain only the sequence orders events */
      if (n == max)
        return -1;
      snprintf(items[n].key, sizeof items[n].key, "%" PRIu64, domain);
      items[n].lo = 0;
      items[n].hi = seq;
      n++;
    }
    s = skip_ws(s);
    if (*s == ',')
      s = skip_ws(s + 1);
    else if (*s)
      return -1;
  }
  return n;
}

/* Is [lo, hi] covered by the union of have's intervals for key? (intervals may be unsorted) */
static bool gtid_covered(const gtid_item *have, int nh, const char *key, uint64_t lo, uint64_t hi) {
  uint64_t next = lo; /* first number not yet covered */
  bool progress = true;
  while (next <= hi && progress) {
    progress = false;
    for (int i = 0; i < nh; i++) {
      if (strcmp(have[i].key, key) == 0 && have[i].lo <= next && have[i].hi >= next) {
        if (have[i].hi == UINT64_MAX)
          return true;
        next = have[i].hi + 1;
        progress = true;
      }
    }
  }
  return next > hi;
}

int dm_gtid_set_contains(const char *have, const char *want) {
  gtid_item h[GTID_MAX_ITEMS], w[GTID_MAX_ITEMS];
  int hm, wm;
  int nh = gtid_parse(have ? have : "", h, GTID_MAX_ITEMS, &hm);
  int nw = gtid_parse(want ? want : "", w, GTID_MAX_ITEMS, &wm);
  if (nh < 0 || nw < 0)
    return -1;
  if (nw == 0)
    return 1;
  if (nh > 0 && hm != wm)
    return -1; /* a MariaDB set against a MySQL one */
  for (int i = 0; i < nw; i++) {
    if (wm) {
      if (!gtid_covered(h, nh, w[i].key, w[i].lo, w[i].hi))
        return 0;
    } else {
      bool found = false;
      for (int j = 0; j < nh; j++)
        if (strcmp(h[j].key, w[i].key) == 0 && h[j].hi >= w[i].hi)
          found = true;
      if (!found)
        return 0;
    }
  }
  return 1;
}

bool dm_position_reached(const dm_position *reached, const dm_position *target) {
  if (!dm_position_is_set(target))
    return true;
  if (reached->gtid[0] && target->gtid[0]) {
    int c = dm_gtid_set_contains(reached->gtid, target->gtid);
    if (c >= 0)
      return c == 1;
  }
  if (!reached->name[0] || !target->name[0])
    return false;
  return dm_position_compare_file(reached, target) >= 0;
}

const char *dm_position_format(const dm_position *p, char *buf, uint32_t len) {
  snprintf(buf, len, "(%s, %" PRIu64 ")", p->name, p->pos);
  return buf;
}
