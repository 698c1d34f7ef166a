/*
 * The source's GTID set. MariaDB ("D-S-N,..."): one GTID per replication domain, the last one seen.
 * MySQL ("uuid:1-5:7,..."): every GTID executed, a dm_mysql_gtid_set of the SDK (the one owner of
 * that format), in the checkpoint's binlog_gtid as DM keeps it. The sync unit starts from the
 * checkpoint's set and moves it on with every GTID event (a MySQL file's PREVIOUS_GTIDS adds what
 * came before the file), so each batch end carries the set as it stood at that point of the
 * source's binlog.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sync.h"

int sync_gtid_parse(sync_gtid_set *s, const char *text, dm_error *err) {
  sync_gtid_free(s);
  if (strchr(text, ':')) {
    s->mysql = true;
    return dm_mysql_gtid_set_parse(&s->my, text, err);
  }
  if (dm_mariadb_gtid_set_parse(&s->ma, text) == 0)
    return 0;
  dm_error_set(
      err, DM_ERR_BINLOG_GTID_SET, NULL,
      "sync: GTID set `%.200s` is neither MariaDB's (D-S-N,...) nor MySQL's (uuid:1-5,...)", text);
  return -1;
}

void sync_gtid_free(sync_gtid_set *s) {
  dm_mysql_gtid_set_free(&s->my);
  s->mysql = false;
  s->pending = false;
  memset(&s->ma, 0, sizeof s->ma);
}

void sync_gtid_pend_mariadb(sync_gtid_set *s, uint32_t domain, uint32_t server, uint64_t seq) {
  s->pending = true;
  s->p_domain = domain;
  s->p_server = server;
  s->p_seq = seq;
}

int sync_gtid_pend_mysql(sync_gtid_set *s, const dm_binlog_format *fmt, const dm_binlog_event *ev,
                         dm_error *err) {
  dm_binlog_mysql_gtid g;
  if (dm_binlog_decode_mysql_gtid(fmt, ev, &g, err) < 0)
    return -1;
  s->pending = true;
  memcpy(s->p_sid, g.sid, sizeof s->p_sid);
  /* an anonymous GTID (gtid_mode OFF) numbers nothing: 0 adds nothing at the commit */
  s->p_seq = ev->header.type == DM_BINLOG_MYSQL_GTID && g.gno > 0 ? (uint64_t)g.gno : 0;
  s->p_domain = UINT32_MAX; /* marks the pending GTID as MySQL's */
  return 0;
}

static int sync_gtid_nomem(dm_error *err) {
  dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "sync: no memory for the MySQL GTID set");
  return -1;
}

int sync_gtid_commit(sync_gtid_set *s, dm_error *err) {
  if (!s->pending)
    return 0;
  s->pending = false;
  if (s->p_domain != UINT32_MAX) {
    sync_gtid_update(s, s->p_domain, s->p_server, s->p_seq);
    return 0;
  }
  if (s->p_seq == 0)
    return 0;
  s->mysql = true;
  return dm_mysql_gtid_set_add(&s->my, s->p_sid, s->p_seq) < 0 ? sync_gtid_nomem(err) : 0;
}

int sync_gtid_previous(sync_gtid_set *s, const dm_binlog_format *fmt, const dm_binlog_event *ev,
                       dm_error *err) {
  dm_mysql_gtid_set prev = DM_MYSQL_GTID_SET_INIT;
  if (dm_binlog_decode_previous_gtids_set(fmt, ev, &prev, err) < 0)
    return -1;
  int rc = 0;
  if (prev.n > 0) {
    s->mysql = true;
    if (dm_mysql_gtid_set_union(&s->my, &prev) < 0)
      rc = sync_gtid_nomem(err);
  }
  dm_mysql_gtid_set_free(&prev);
  return rc;
}

void sync_gtid_update(sync_gtid_set *s, uint32_t domain, uint32_t server, uint64_t seq) {
  /* more domains than any real setup has: the set stays as it is */
  (void)dm_mariadb_gtid_set_update(&s->ma, domain, server, seq);
}

void sync_gtid_format(const sync_gtid_set *s, char *out, size_t len) {
  if (s->mysql) {
    /* a set longer than a position holds (DM_POSITION_GTID_MAX) comes out "": the file and
     * offset still say where the sync stands */
    if (len)
      out[0] = '\0';
    dm_mysql_gtid_set_format(&s->my, out, len);
    return;
  }
  dm_mariadb_gtid_set_format(&s->ma, out, len);
}
