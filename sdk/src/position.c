/*
 * Binlog positions: comparison by file/offset and by GTID set, as the relay catch-up wait and the
 * units need them, and the MySQL GTID set type (the one parser and printer of MySQL's form).
 * MariaDB sets are compared on the stack in a fixed table: a set with more domains than fit does
 * not parse (-1) rather than being half-compared.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmhost/position.h"
#include "dmhost/sdk.h"

bool dm_position_is_set(const dm_position *p) {
  return p && (p->name[0] || p->gtid[0]);
}

long long dm_binlog_file_index(const char *name) {
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
  long long sa = dm_binlog_file_index(a->name), sb = dm_binlog_file_index(b->name);
  int c = (sa >= 0 && sb >= 0) ? (sa > sb) - (sa < sb) : strcmp(a->name, b->name);
  if (c)
    return c;
  return (a->pos > b->pos) - (a->pos < b->pos);
}

/* ---- MySQL GTID sets ---- */

void dm_mysql_gtid_set_free(dm_mysql_gtid_set *s) {
  for (uint32_t i = 0; i < s->n; i++)
    free(s->sids[i].iv);
  free(s->sids);
  s->sids = NULL;
  s->n = s->cap = 0;
}

/* The entry of sid, inserted (sorted) when `make`; NULL if absent or out of memory. */
static dm_mysql_gtid_sid *gtid_sid_find(dm_mysql_gtid_set *s, const uint8_t sid[16], bool make) {
  uint32_t lo = 0, hi = s->n;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    int c = memcmp(s->sids[mid].sid, sid, 16);
    if (c == 0)
      return &s->sids[mid];
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (!make)
    return NULL;
  if (s->n == s->cap) {
    uint32_t cap = s->cap ? 2 * s->cap : 4;
    dm_mysql_gtid_sid *n = realloc(s->sids, cap * sizeof *n);
    if (!n)
      return NULL;
    s->sids = n;
    s->cap = cap;
  }
  memmove(&s->sids[lo + 1], &s->sids[lo], (s->n - lo) * sizeof *s->sids);
  s->n++;
  dm_mysql_gtid_sid *e = &s->sids[lo];
  memset(e, 0, sizeof *e);
  memcpy(e->sid, sid, 16);
  return e;
}

/* Inserts [lo, hi] into a sid's sorted intervals, merging what it overlaps or touches. */
static int gtid_iv_add(dm_mysql_gtid_sid *e, uint64_t lo, uint64_t hi) {
  /* first interval that ends at or after lo - 1 (the ones before cannot touch [lo, hi]) */
  uint32_t a = 0, b = e->n;
  while (a < b) {
    uint32_t mid = a + (b - a) / 2;
    if (e->iv[mid].hi < lo - 1)
      a = mid + 1;
    else
      b = mid;
  }
  uint32_t first = a, last = a; /* [first, last): the intervals merged into the new one */
  while (last < e->n && (hi == UINT64_MAX || e->iv[last].lo <= hi + 1)) {
    if (e->iv[last].lo < lo)
      lo = e->iv[last].lo;
    if (e->iv[last].hi > hi)
      hi = e->iv[last].hi;
    last++;
  }
  if (first == last) {
    if (e->n == e->cap) {
      uint32_t cap = e->cap ? 2 * e->cap : 4;
      dm_gtid_interval *n = realloc(e->iv, cap * sizeof *n);
      if (!n)
        return -1;
      e->iv = n;
      e->cap = cap;
    }
    memmove(&e->iv[first + 1], &e->iv[first], (e->n - first) * sizeof *e->iv);
    e->n++;
  } else if (last - first > 1) {
    memmove(&e->iv[first + 1], &e->iv[last], (e->n - last) * sizeof *e->iv);
    e->n -= last - first - 1;
  }
  e->iv[first].lo = lo;
  e->iv[first].hi = hi;
  return 0;
}

int dm_mysql_gtid_set_add_range(dm_mysql_gtid_set *s, const uint8_t sid[16], uint64_t lo,
                                uint64_t hi) {
  if (lo == 0 || hi < lo)
    return -1;
  dm_mysql_gtid_sid *e = gtid_sid_find(s, sid, true);
  return e ? gtid_iv_add(e, lo, hi) : -1;
}

int dm_mysql_gtid_set_add(dm_mysql_gtid_set *s, const uint8_t sid[16], uint64_t gno) {
  return dm_mysql_gtid_set_add_range(s, sid, gno, gno);
}

int dm_mysql_gtid_set_union(dm_mysql_gtid_set *s, const dm_mysql_gtid_set *other) {
  for (uint32_t i = 0; i < other->n; i++)
    for (uint32_t k = 0; k < other->sids[i].n; k++)
      if (dm_mysql_gtid_set_add_range(s, other->sids[i].sid, other->sids[i].iv[k].lo,
                                      other->sids[i].iv[k].hi) < 0)
        return -1;
  return 0;
}

/* Is [lo, hi] inside one interval of e? (intervals are merged, so one must hold it all) */
static bool gtid_iv_covers(const dm_mysql_gtid_sid *e, uint64_t lo, uint64_t hi) {
  uint32_t a = 0, b = e->n;
  while (a < b) {
    uint32_t mid = a + (b - a) / 2;
    if (e->iv[mid].hi < lo)
      a = mid + 1;
    else
      b = mid;
  }
  return a < e->n && e->iv[a].lo <= lo && e->iv[a].hi >= hi;
}

bool dm_mysql_gtid_set_contains(const dm_mysql_gtid_set *have, const dm_mysql_gtid_set *want) {
  for (uint32_t i = 0; i < want->n; i++) {
    const dm_mysql_gtid_sid *e = gtid_sid_find((dm_mysql_gtid_set *)have, want->sids[i].sid, false);
    for (uint32_t k = 0; k < want->sids[i].n; k++)
      if (!e || !gtid_iv_covers(e, want->sids[i].iv[k].lo, want->sids[i].iv[k].hi))
        return false;
  }
  return true;
}

bool dm_mysql_gtid_set_has(const dm_mysql_gtid_set *have, const uint8_t sid[16], uint64_t gno) {
  const dm_mysql_gtid_sid *e = gtid_sid_find((dm_mysql_gtid_set *)have, sid, false);
  return e && gtid_iv_covers(e, gno, gno);
}

void dm_mysql_sid_format(const uint8_t u[16], char buf[37]) {
  static const char hex[] = "0123456789abcdef";
  int o = 0;
  for (int i = 0; i < 16; i++) {
    if (i == 4 || i == 6 || i == 8 || i == 10)
      buf[o++] = '-';
    buf[o++] = hex[u[i] >> 4];
    buf[o++] = hex[u[i] & 15];
  }
  buf[o] = '\0';
}

int dm_mysql_gtid_set_format(const dm_mysql_gtid_set *s, char *buf, size_t len) {
  size_t at = 0;
  if (len == 0)
    return -1;
  buf[0] = '\0';
  for (uint32_t i = 0; i < s->n; i++) {
    if (s->sids[i].n == 0)
      continue;
    char u[37];
    dm_mysql_sid_format(s->sids[i].sid, u);
    int w = snprintf(buf + at, len - at, "%s%s", at ? "," : "", u);
    if (w < 0 || (size_t)w >= len - at)
      goto small;
    at += (size_t)w;
    for (uint32_t k = 0; k < s->sids[i].n; k++) {
      const dm_gtid_interval *v = &s->sids[i].iv[k];
      if (v->lo == v->hi)
        w = snprintf(buf + at, len - at, ":%" PRIu64, v->lo);
      else
        w = snprintf(buf + at, len - at, ":%" PRIu64 "-%" PRIu64, v->lo, v->hi);
      if (w < 0 || (size_t)w >= len - at)
        goto small;
      at += (size_t)w;
    }
  }
  return (int)at;
small:
  buf[0] = '\0';
  return -1;
}

static int hexval(int c) {
  return c >= '0' && c <= '9'   ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                : -1;
}

/* A uuid, with its dashes (8-4-4-4-12) or as 32 hex digits; *s moves past it. */
static int gtid_parse_sid(const char **s, uint8_t sid[16]) {
  const char *p = *s;
  for (int i = 0; i < 8; i++) /* stops at the NUL: p[8] is read only inside the text */
    if (hexval((unsigned char)p[i]) < 0)
      return -1;
  bool dashed = p[8] == '-';
  for (int i = 0; i < 16; i++) {
    if (dashed && (i == 4 || i == 6 || i == 8 || i == 10) && *p++ != '-')
      return -1;
    int h = hexval((unsigned char)p[0]), l = h < 0 ? -1 : hexval((unsigned char)p[1]);
    if (h < 0 || l < 0)
      return -1;
    sid[i] = (uint8_t)(h << 4 | l);
    p += 2;
  }
  *s = p;
  return 0;
}

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

int dm_mysql_gtid_set_parse(dm_mysql_gtid_set *s, const char *text, dm_error *err) {
  dm_mysql_gtid_set_free(s);
  const char *p = skip_ws(text ? text : ""), *what = NULL;
  while (*p) {
    uint8_t sid[16];
    if (gtid_parse_sid(&p, sid) < 0) {
      what = "a server uuid";
      goto bad;
    }
    p = skip_ws(p);
    if (*p != ':') {
      what = "':' after the uuid";
      goto bad;
    }
    while (*p == ':') {
      p = skip_ws(p + 1);
      uint64_t lo, hi;
      if (parse_u64(&p, &lo) || lo == 0) {
        what = "a transaction number from 1";
        goto bad;
      }
      hi = lo;
      p = skip_ws(p);
      if (*p == '-') {
        p = skip_ws(p + 1);
        if (parse_u64(&p, &hi) || hi < lo) {
          what = "an interval's end, not below its start";
          goto bad;
        }
      }
      if (dm_mysql_gtid_set_add_range(s, sid, lo, hi) < 0) {
        dm_mysql_gtid_set_free(s);
        if (err)
          dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "no memory for a MySQL GTID set");
        return -1;
      }
      p = skip_ws(p);
    }
    if (*p == ',')
      p = skip_ws(p + 1);
    else if (*p) {
      what = "',' or the end after an interval";
      goto bad;
    }
  }
  return 0;
bad:
  dm_mysql_gtid_set_free(s);
  if (err)
    dm_error_set(err, DM_ERR_BINLOG_GTID_SET, NULL,
                 "MySQL GTID set `%.200s`: expected %s at character %td", text, what, p - text);
  return -1;
}

/* ---- comparing GTID sets given as text (MariaDB's or MySQL's) ---- */

int dm_mariadb_gtid_set_update(dm_mariadb_gtid_set *s, uint32_t domain, uint32_t server,
                               uint64_t seq) {
  int i = 0;
  while (i < s->n && s->d[i].domain < domain)
    i++;
  if (i == s->n || s->d[i].domain != domain) {
    if (s->n == DM_MARIADB_GTID_DOMAINS)
      return -1;
    memmove(&s->d[i + 1], &s->d[i], (size_t)(s->n - i) * sizeof s->d[0]);
    s->n++;
    s->d[i].domain = domain;
  }
  s->d[i].server = server;
  s->d[i].seq = seq;
  return 0;
}

int dm_mariadb_gtid_set_parse(dm_mariadb_gtid_set *s, const char *text) {
  memset(s, 0, sizeof *s);
  const char *p = text ? text : "";
  for (;;) {
    while (*p == ',' || isspace((unsigned char)*p))
      p++;
    if (!*p)
      return 0;
    uint64_t domain, server, seq;
    if (parse_u64(&p, &domain) || *p++ != '-' || parse_u64(&p, &server) || *p++ != '-' ||
        parse_u64(&p, &seq) || domain > UINT32_MAX || server > UINT32_MAX ||
        (*p && *p != ',' && !isspace((unsigned char)*p)) ||
        dm_mariadb_gtid_set_update(s, (uint32_t)domain, (uint32_t)server, seq) < 0) {
      memset(s, 0, sizeof *s);
      return -1;
    }
  }
}

void dm_mariadb_gtid_set_format(const dm_mariadb_gtid_set *s, char *out, size_t len) {
  size_t at = 0;
  if (len)
    out[0] = '\0';
  for (int i = 0; i < s->n && at < len; i++) {
    int n = snprintf(out + at, len - at, "%s%" PRIu32 "-%" PRIu32 "-%" PRIu64, i ? "," : "",
                     s->d[i].domain, s->d[i].server, s->d[i].seq);
    if (n < 0 || (size_t)n >= len - at) {
      out[at] = '\0';
      return;
    }
    at += (size_t)n;
  }
}

int dm_gtid_set_contains(const char *have, const char *want) {
  have = have ? have : "";
  want = want ? want : "";
  if (strchr(have, ':') || strchr(want, ':')) {
    /* MySQL's form: a MariaDB set on the other side does not parse as one (-1) */
    dm_mysql_gtid_set h = DM_MYSQL_GTID_SET_INIT, w = DM_MYSQL_GTID_SET_INIT;
    int rc = -1;
    if (dm_mysql_gtid_set_parse(&h, have, NULL) == 0 &&
        dm_mysql_gtid_set_parse(&w, want, NULL) == 0)
      rc = dm_mysql_gtid_set_contains(&h, &w) ? 1 : 0;
    dm_mysql_gtid_set_free(&h);
    dm_mysql_gtid_set_free(&w);
    return rc;
  }
  /* per domain only the sequence orders events */
  dm_mariadb_gtid_set h, w;
  if (dm_mariadb_gtid_set_parse(&h, have) < 0 || dm_mariadb_gtid_set_parse(&w, want) < 0)
    return -1;
  for (int i = 0; i < w.n; i++) {
    bool found = false;
    for (int j = 0; j < h.n; j++)
      if (h.d[j].domain == w.d[i].domain && h.d[j].seq >= w.d[i].seq)
        found = true;
    if (!found)
      return 0;
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
