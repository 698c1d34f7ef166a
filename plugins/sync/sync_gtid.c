/*
 * A MariaDB GTID set ("D-S-N,..."): one GTID per replication domain, the last one seen. The sync
 * unit starts from the checkpoint's set and moves it on with every GTID event, so each batch end
 * carries the set as it stood at that point of the source's binlog.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sync.h"

int sync_gtid_parse(sync_gtid_set *s, const char *text) {
  s->n = 0;
  const char *p = text;
  while (*p) {
    while (*p == ' ' || *p == ',' || *p == '\n')
      p++;
    if (!*p)
      break;
    char *end;
    unsigned long long d = strtoull(p, &end, 10);
    if (*end != '-')
      return -1;
    unsigned long long sv = strtoull(end + 1, &end, 10);
    if (*end != '-')
      return -1;
    unsigned long long seq = strtoull(end + 1, &end, 10);
    if (*end && *end != ',' && *end != ' ' && *end != '\n')
      return -1;
    sync_gtid_update(s, (uint32_t)d, (uint32_t)sv, seq);
    p = end;
  }
  return 0;
}

void sync_gtid_update(sync_gtid_set *s, uint32_t domain, uint32_t server, uint64_t seq) {
  for (int i = 0; i < s->n; i++)
    if (s->e[i].domain == domain) {
      s->e[i].server = server;
      s->e[i].seq = seq;
      return;
    }
  if (s->n == SYNC_GTID_DOMAINS_MAX)
    return; /* more domains than any real setup has: the set stays as it is */
  int i = s->n++;
  /* kept sorted by domain, as MariaDB prints @@gtid_binlog_pos */
  while (i > 0 && s->e[i - 1].domain > domain) {
    s->e[i] = s->e[i - 1];
    i--;
  }
  s->e[i].domain = domain;
  s->e[i].server = server;
  s->e[i].seq = seq;
}

void sync_gtid_format(const sync_gtid_set *s, char *out, size_t len) {
  size_t at = 0;
  if (len)
    out[0] = '\0';
  for (int i = 0; i < s->n && at < len; i++) {
    int n = snprintf(out + at, len - at, "%s%" PRIu32 "-%" PRIu32 "-%" PRIu64, i ? "," : "",
                     s->e[i].domain, s->e[i].server, s->e[i].seq);
    if (n < 0 || (size_t)n >= len - at) {
      out[at] = '\0';
      return;
    }
    at += (size_t)n;
  }
}
