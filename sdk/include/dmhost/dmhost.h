/*
 * dmhost SDK: everything a unit author needs, in one include. See unit.h first, and docs/sdk.md for
 * the map of the headers. This umbrella includes every public header of the SDK (sdk_install fails
 * when a header under include/dmhost is missing here).
 */
#ifndef DMHOST_DMHOST_H
#define DMHOST_DMHOST_H

#include "binlog.h"
#include "binlog_find.h"
#include "binlog_rows.h"
#include "binlog_trx.h"
#include "buf.h"
#include "clock.h"
#include "conn_kill.h"
#include "db.h"
#include "ddl_collation.h"
#include "dump_format.h"
#include "error.h"
#include "fs.h"
#include "grants.h"
#include "host.h"
#include "position.h"
#include "relay_folder.h"
#include "relay_log.h"
#include "relay_purge.h"
#include "relay_reader.h"
#include "result.h"
#include "sdk.h"
#include "settings.h"
#include "shard.h"
#include "sql_lex.h"
#include "task_meta.h"
#include "unit.h"

#endif /* DMHOST_DMHOST_H */
