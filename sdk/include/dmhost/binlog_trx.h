/*
 * dmhost SDK: where a binlog transaction (an event group) begins and ends, and whether it
 * committed. The one reading of transaction boundaries: the relay unit (its "last complete
 * transaction" and GTID set) and the sync unit (what it applies, where its checkpoint may stand)
 * both follow it, so they never disagree about a group.
 *
 * Feed every event of a stream, in order, to dm_binlog_trx_feed; it says what the event is to the
 * group it belongs to:
 *
 *   group                        its events, as the tracker reads them
 *   MariaDB, row changes         GTID (BEGIN) | BEGIN query, maps, rows (INSIDE) | XID or COMMIT
 *                                query (COMMIT)
 *   MariaDB, rolled back         GTID (BEGIN) | BEGIN query, maps, rows of the non-transactional
 *                                tables (INSIDE) | ROLLBACK query (ROLLBACK; see below)
 *   MariaDB, a DDL               GTID flagged STANDALONE (BEGIN) | the statement (STATEMENT; any
 *                                next event ends such a group)
 *   MariaDB, XA PREPARE          GTID flagged PREPARED_XA (BEGIN) | rows, XA END (INSIDE) |
 *                                XA_PREPARE event (XA_PREPARE: the group is complete, the
 *                                transaction prepared, not committed)
 *   MariaDB, XA COMMIT /         GTID flagged COMPLETED_XA and STANDALONE (BEGIN) | the query
 *     XA ROLLBACK                XA COMMIT ... (XA_COMMIT) or XA ROLLBACK ... (XA_ROLLBACK)
 *   MySQL                        GTID or ANONYMOUS_GTID (BEGIN) | a BEGIN query makes it a
 *                                transaction ending at XID, COMMIT or ROLLBACK, else its one
 *                                statement is the group (STATEMENT); a MySQL 8
 *                                TRANSACTION_PAYLOAD is a whole transaction (COMMIT)
 *   no GTID event (old MySQL)    a BEGIN query (BEGIN) ... XID, COMMIT or ROLLBACK; any other
 *                                statement outside a group is one (STATEMENT)
 *
 * A rolled-back group: MariaDB and MySQL log BEGIN ... ROLLBACK only for a transaction that
 * changed a non-transactional table (MyISAM, Aria), then rolled back. Its transactional part is
 * not in the binlog; the row events it carries are changes that stay on the source, so a user
 * that applies rows keeps them (the sync applies them as they come and keeps them). The tracker
 * reports ROLLBACK so the group is known to be complete: the position after it is a boundary, and
 * its GTID is executed like any other group's.
 *
 * Events outside any group (format descriptions, rotations, GTID lists, checkpoints) are OUTSIDE:
 * the position after one is a boundary too. BEGIN, COMMIT and ROLLBACK are matched as the whole
 * statement (case-insensitive), as servers write them: `ROLLBACK TO sp` inside a transaction is a
 * statement of the transaction, not its end.
 *
 * The tracker decodes nothing: the caller decodes GTID and QUERY events (it needs them anyway)
 * and passes them in. Its fields describe the open group: read them before feeding the event
 * that ends it (the end forgets them). It allocates nothing; zero it (or dm_binlog_trx_reset)
 * before the first event and at a position known to be a boundary. One thread at a time.
 */
#ifndef DMHOST_BINLOG_TRX_H
#define DMHOST_BINLOG_TRX_H

#include <stdbool.h>
#include <stdint.h>

#include "binlog.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum dm_binlog_trx_step {
  DM_BINLOG_TRX_OUTSIDE = 0, /* between groups: the position after it is a boundary */
  DM_BINLOG_TRX_BEGIN,       /* begins a group: a GTID event, or a BEGIN no GTID event opened */
  DM_BINLOG_TRX_INSIDE,      /* inside the open group: its BEGIN, maps, rows, SAVEPOINT, ... */
  DM_BINLOG_TRX_COMMIT,      /* ends the group, committed: XID, COMMIT, a MySQL 8 payload */
  DM_BINLOG_TRX_ROLLBACK,    /* ends the group (ROLLBACK): complete, its rows stay (see above) */
  DM_BINLOG_TRX_STATEMENT,   /* ends the group that is this one statement (a DDL), committed */
  DM_BINLOG_TRX_XA_PREPARE,  /* ends an XA PREPARE group: prepared, committed or not later */
  DM_BINLOG_TRX_XA_COMMIT,   /* ends the group of XA COMMIT: the prepared transaction commits */
  DM_BINLOG_TRX_XA_ROLLBACK, /* ends the group of XA ROLLBACK: it never applies */
} dm_binlog_trx_step;

typedef struct dm_binlog_trx {
  bool in_trx;     /* a group is open */
  bool began;      /* its BEGIN query was read */
  bool standalone; /* it is one statement: a standalone MariaDB GTID, a MySQL GTID before BEGIN */
  bool mysql;      /* a MySQL GTID or ANONYMOUS_GTID event opened it */
  bool has_gtid;   /* a MariaDB GTID event opened it: the four fields below are that GTID's */
  uint8_t flags;   /* its DM_BINLOG_GTID_* flags */
  uint32_t domain, server;
  uint64_t seq;
} dm_binlog_trx;

/* Forget the open group: the next event is read as one at a boundary. */
void dm_binlog_trx_reset(dm_binlog_trx *t);

/*
 * One event, in stream order. `gtid`: the decoded event when it is a MariaDB GTID event (NULL
 * otherwise: then a GTID event is read as a group with no GTID known). `query`: the decoded event
 * when it is a QUERY event (NULL for one that is not, or that the caller could not decode or did
 * not uncompress: such a statement is read as neither BEGIN, COMMIT nor ROLLBACK).
 */
dm_binlog_trx_step dm_binlog_trx_feed(dm_binlog_trx *t, const dm_binlog_event *ev,
                                      const dm_binlog_gtid *gtid, const dm_binlog_query *query);

/* Does the step end a group (the position after the event is a transaction boundary)? OUTSIDE
 * counts: nothing is open there either. */
bool dm_binlog_trx_boundary(dm_binlog_trx_step step);

/* Did the group the step ends commit (COMMIT, STATEMENT, XA_COMMIT)? XA_PREPARE did not yet.
 * ROLLBACK did not either, but the rows of such a group stay on the source (see above). */
bool dm_binlog_trx_committed(dm_binlog_trx_step step);

/* "COMMIT", "ROLLBACK", ... for logs. */
const char *dm_binlog_trx_step_name(dm_binlog_trx_step step);

#ifdef __cplusplus
}
#endif
#endif /* DMHOST_BINLOG_TRX_H */
