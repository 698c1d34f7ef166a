/*
 * What the relay derives from events (decoded by the SDK's binlog library): transaction
 * boundaries, the GTID set written so far, and the filler event for a hole before a mid-file
 * start. The relay never decodes rows: it stores bytes.
 */
#include <stdio.h>
#include <string.h>

#include "relay_internal.h"

static void ev_put32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)v;
  p[1] = (unsigned char)(v >> 8);
  p[2] = (unsigned char)(v >> 16);
  p[3] = (unsigned char)(v >> 24);
}

void relay_ev_filler(unsigned char *buf, uint32_t len, uint32_t start, uint32_t server_id,
                     bool checksum) {
  static const char note[] = "dmhost relay: hole before the start position";
  memset(buf, 0, len);
  buf[4] = DM_BINLOG_IGNORABLE;
  ev_put32(buf + 5, server_id);
  ev_put32(buf + 9, len);
  ev_put32(buf + 13, start + len);
  /* Ignorable, so every reader skips it; not artificial, so a reader does not mistake it for
   * something the server made up for a replica. */
  buf[17] = DM_BINLOG_F_IGNORABLE;
  uint32_t body = len - DM_BINLOG_HEADER_LEN - (checksum ? DM_BINLOG_CHECKSUM_LEN : 0);
  memcpy(buf + DM_BINLOG_HEADER_LEN, note, body < sizeof note - 1 ? body : sizeof note - 1);
  if (checksum)
    ev_put32(buf + len - DM_BINLOG_CHECKSUM_LEN,
             dm_binlog_crc32(0, buf, len - DM_BINLOG_CHECKSUM_LEN));
}

/* ---- transaction boundaries: the SDK's tracker (dmhost/binlog_trx.h) ---- */

bool relay_trx_feed(dm_binlog_trx *t, const dm_binlog_format *fmt, const dm_binlog_event *ev,
                    dm_mariadb_gtid_set *set, bool take_list) {
  dm_error err;
  dm_binlog_gtid g;
  dm_binlog_query q;
  const dm_binlog_gtid *gp = NULL;
  const dm_binlog_query *qp = NULL;
  switch (ev->header.type) {
  case DM_BINLOG_GTID:
    if (dm_binlog_decode_gtid(fmt, ev, &g, &err) < 0)
      return false; /* undecodable: the group stays as it was, not begun */
    gp = &g;
    break;
  case DM_BINLOG_QUERY:
    if (dm_binlog_decode_query(fmt, ev, &q, &err) == 0)
      qp = &q;
    break;
  case DM_BINLOG_GTID_LIST: {
    dm_binlog_gtid_list l;
    if (take_list && dm_binlog_decode_gtid_list(fmt, ev, &l, &err) == 0) {
      memset(set, 0, sizeof *set);
      for (uint32_t i = 0; i < l.count; i++) {
        uint32_t dom, srv;
        uint64_t seq;
        dm_binlog_gtid_list_get(&l, i, &dom, &srv, &seq);
        /* the list is the binlog state (every server of a domain): the position is the highest
         * sequence of each domain */
        bool higher = true;
        for (int k = 0; k < set->n; k++)
          if (set->d[k].domain == dom && set->d[k].seq >= seq)
            higher = false;
        if (higher)
          dm_mariadb_gtid_set_update(set, dom, srv, seq);
      }
    }
    break;
  }
  default:
    break;
  }
  /* the group's MariaDB GTID, read before the feed forgets it at the group's end */
  bool has_gtid = t->has_gtid;
  uint32_t domain = t->domain, server = t->server;
  uint64_t seq = t->seq;
  dm_binlog_trx_step step = dm_binlog_trx_feed(t, ev, gp, qp);
  if (step == DM_BINLOG_TRX_BEGIN || step == DM_BINLOG_TRX_INSIDE)
    return false;
  /* Every group's end takes its GTID, a rolled-back one's too: the source's binlog state counts
   * it, and a relay restarting from this set must not ask for it again. */
  if (step != DM_BINLOG_TRX_OUTSIDE && has_gtid)
    dm_mariadb_gtid_set_update(set, domain, server, seq);
  return true;
}
