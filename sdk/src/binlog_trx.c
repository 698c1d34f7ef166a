/*
 * Transaction boundaries of a binlog stream (binlog_trx.h): the one reading the relay and the
 * sync follow.
 */
#include <string.h>
#include <strings.h>

#include "dmhost/binlog_trx.h"

void dm_binlog_trx_reset(dm_binlog_trx *t) {
  memset(t, 0, sizeof *t);
}

/* The whole statement is `word` (servers write BEGIN, COMMIT, ROLLBACK alone). */
static bool trx_query_is(const dm_binlog_query *q, const char *word) {
  size_t n = strlen(word);
  return q && q->query.len == n && strncasecmp(q->query.ptr, word, n) == 0;
}

/* The statement starts with `words` and a space or its end: XA COMMIT X'..',X'..',1. */
static bool trx_query_starts(const dm_binlog_query *q, const char *words) {
  size_t n = strlen(words);
  return q && q->query.len >= n && strncasecmp(q->query.ptr, words, n) == 0 &&
         (q->query.len == n || q->query.ptr[n] == ' ');
}

static dm_binlog_trx_step trx_end(dm_binlog_trx *t, dm_binlog_trx_step step) {
  dm_binlog_trx_reset(t); /* read what the group was before feeding the event that ends it */
  return step;
}

static dm_binlog_trx_step trx_query(dm_binlog_trx *t, const dm_binlog_query *q) {
  if (!t->in_trx) {
    if (trx_query_is(q, "BEGIN")) {
      /* a transaction with no GTID event before it (MySQL without GTIDs) */
      dm_binlog_trx_reset(t);
      t->in_trx = t->began = true;
      return DM_BINLOG_TRX_BEGIN;
    }
    if (trx_query_is(q, "COMMIT"))
      return DM_BINLOG_TRX_COMMIT;
    if (trx_query_is(q, "ROLLBACK"))
      return DM_BINLOG_TRX_ROLLBACK;
    return DM_BINLOG_TRX_STATEMENT;
  }
  if (t->has_gtid && (t->flags & DM_BINLOG_GTID_COMPLETED_XA)) {
    /* the group's one statement ends the prepared transaction */
    if (trx_query_starts(q, "XA COMMIT"))
      return trx_end(t, DM_BINLOG_TRX_XA_COMMIT);
    if (trx_query_starts(q, "XA ROLLBACK"))
      return trx_end(t, DM_BINLOG_TRX_XA_ROLLBACK);
  }
  if (!t->began && trx_query_is(q, "BEGIN") && (t->mysql || !t->standalone)) {
    t->began = true;
    t->standalone = false; /* MySQL: a transaction, not one statement */
    return DM_BINLOG_TRX_INSIDE;
  }
  if (t->standalone)
    return trx_end(t, DM_BINLOG_TRX_STATEMENT);
  if (trx_query_is(q, "COMMIT"))
    return trx_end(t, DM_BINLOG_TRX_COMMIT);
  if (trx_query_is(q, "ROLLBACK"))
    return trx_end(t, DM_BINLOG_TRX_ROLLBACK);
  return DM_BINLOG_TRX_INSIDE;
}

dm_binlog_trx_step dm_binlog_trx_feed(dm_binlog_trx *t, const dm_binlog_event *ev,
                                      const dm_binlog_gtid *gtid, const dm_binlog_query *query) {
  switch (ev->header.type) {
  case DM_BINLOG_GTID:
    dm_binlog_trx_reset(t);
    t->in_trx = true;
    if (gtid) {
      t->has_gtid = true;
      t->flags = gtid->flags;
      t->domain = gtid->domain_id;
      t->server = gtid->server_id;
      t->seq = gtid->seq_no;
      t->standalone = (gtid->flags & DM_BINLOG_GTID_STANDALONE) != 0; /* no COMMIT follows */
    }
    return DM_BINLOG_TRX_BEGIN;
  case DM_BINLOG_MYSQL_GTID:
  case DM_BINLOG_MYSQL_ANONYMOUS_GTID:
    dm_binlog_trx_reset(t);
    t->in_trx = t->mysql = true;
    t->standalone = true; /* until a BEGIN says otherwise */
    return DM_BINLOG_TRX_BEGIN;
  case DM_BINLOG_XID:
    return trx_end(t, DM_BINLOG_TRX_COMMIT);
  case DM_BINLOG_XA_PREPARE:
    return trx_end(t, DM_BINLOG_TRX_XA_PREPARE);
  case DM_BINLOG_TRANSACTION_PAYLOAD:
    /* MySQL 8 (binlog_transaction_compression): the whole transaction, BEGIN to XID, is this one
     * event after its GTID event */
    return trx_end(t, DM_BINLOG_TRX_COMMIT);
  case DM_BINLOG_QUERY:
  case DM_BINLOG_QUERY_COMPRESSED:
    return trx_query(t, query);
  default:
    if (t->in_trx && t->standalone && !t->mysql)
      return trx_end(t, DM_BINLOG_TRX_STATEMENT); /* a standalone group is its one next event */
    return t->in_trx ? DM_BINLOG_TRX_INSIDE : DM_BINLOG_TRX_OUTSIDE;
  }
}

bool dm_binlog_trx_boundary(dm_binlog_trx_step step) {
  return step != DM_BINLOG_TRX_BEGIN && step != DM_BINLOG_TRX_INSIDE;
}

bool dm_binlog_trx_committed(dm_binlog_trx_step step) {
  return step == DM_BINLOG_TRX_COMMIT || step == DM_BINLOG_TRX_STATEMENT ||
         step == DM_BINLOG_TRX_XA_COMMIT;
}

const char *dm_binlog_trx_step_name(dm_binlog_trx_step step) {
  static const char *const names[] = {"OUTSIDE",    "BEGIN",     "INSIDE",
                                      "COMMIT",     "ROLLBACK",  "STATEMENT",
                                      "XA_PREPARE", "XA_COMMIT", "XA_ROLLBACK"};
  return (unsigned)step < sizeof names / sizeof names[0] ? names[step] : "?";
}
