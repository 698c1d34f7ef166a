/*
 * What the relay derives from events (decoded by the SDK's binlog library): transaction
 * boundaries, the GTID set written so far, and the filler event for a hole before a mid-file
 * start. The relay never decodes rows: it stores bytes.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

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

/* ---- transaction boundaries ---- */

static bool trx_query_is(const dm_binlog_query *q, const char *word) {
  size_t w = strlen(word);
  const char *p = q->query.ptr;
  size_t n = q->query.len;
  return n >= w && strncasecmp(p, word, w) == 0 && (n == w || p[w] == ' ' || p[w] == ';');
}

static void trx_commit(relay_trx *t, dm_mariadb_gtid_set *set) {
  if (!t->mysql_gtid)
    dm_mariadb_gtid_set_update(set, t->domain, t->server, t->seq);
  t->in_trx = false;
}

bool relay_trx_feed(relay_trx *t, const dm_binlog_format *fmt, const dm_binlog_event *ev,
                    dm_mariadb_gtid_set *set, bool take_list) {
  dm_error err;
  switch (ev->header.type) {
  case DM_BINLOG_GTID: {
    dm_binlog_gtid g;
    if (dm_binlog_decode_gtid(fmt, ev, &g, &err) < 0)
      return false;
    t->in_trx = true;
    t->mysql_gtid = false;
    t->seq = g.seq_no;
    t->domain = g.domain_id;
    t->server = g.server_id;
    t->standalone = (g.flags & DM_BINLOG_GTID_STANDALONE) != 0; /* a DDL: no COMMIT follows */
    return false;
  }
  case DM_BINLOG_MYSQL_GTID:
  case DM_BINLOG_MYSQL_ANONYMOUS_GTID:
    t->in_trx = true;
    t->mysql_gtid = true;
    t->standalone = true; /* until a BEGIN says otherwise */
    return false;
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
    return !t->in_trx;
  }
  case DM_BINLOG_XID:
    if (t->in_trx)
      trx_commit(t, set);
    return true;
  case DM_BINLOG_QUERY:
  case DM_BINLOG_QUERY_COMPRESSED: {
    if (!t->in_trx)
      return true;
    dm_binlog_query q;
    bool parsed =
        ev->header.type == DM_BINLOG_QUERY && dm_binlog_decode_query(fmt, ev, &q, &err) == 0;
    if (t->mysql_gtid && t->standalone && parsed && trx_query_is(&q, "BEGIN")) {
      t->standalone = false;
      return false;
    }
    if (t->standalone || (parsed && (trx_query_is(&q, "COMMIT") || trx_query_is(&q, "ROLLBACK")))) {
      trx_commit(t, set);
      return true;
    }
    return false;
  }
  case DM_BINLOG_TRANSACTION_PAYLOAD:
    /* MySQL 8 (binlog_transaction_compression): the whole transaction, BEGIN to XID, is this one
     * event after its GTID event, so it ends the group */
    if (t->in_trx)
      trx_commit(t, set);
    return true;
  default:
    if (t->in_trx && t->standalone && !t->mysql_gtid) {
      /* a standalone GTID's group is its one next event, whatever its type */
      trx_commit(t, set);
      return true;
    }
    return !t->in_trx;
  }
}
