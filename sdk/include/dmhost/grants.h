/*
 * dmhost SDK: what an account may do, read from SHOW GRANTS (libdmhost-sdk.a).
 *
 * One reading of the grant lines and one table of what each dump consistency needs, used by the
 * dump unit when it starts and by the host's precheck (docs/precheck.md) before a task starts, so
 * the two cannot disagree. REPLICATION CLIENT is called BINLOG MONITOR since MariaDB 10.5 (SHOW
 * GRANTS prints the new name); SUPER gives it too.
 */
#ifndef DMHOST_GRANTS_H
#define DMHOST_GRANTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Privileges as bits, in the order dm_grant_names prints them. */
enum {
  DM_PRIV_SELECT = 1u << 0,
  DM_PRIV_INSERT = 1u << 1,
  DM_PRIV_UPDATE = 1u << 2,
  DM_PRIV_DELETE = 1u << 3,
  DM_PRIV_CREATE = 1u << 4,
  DM_PRIV_DROP = 1u << 5,
  DM_PRIV_ALTER = 1u << 6,
  DM_PRIV_RELOAD = 1u << 7,      /* global only */
  DM_PRIV_LOCK_TABLES = 1u << 8, /* LOCK TABLES */
  DM_PRIV_REPL_CLIENT = 1u << 9, /* global only: REPLICATION CLIENT, BINLOG MONITOR or SUPER */
  DM_PRIV_REPL_SLAVE = 1u << 10, /* global only: REPLICATION SLAVE (the binlog stream) */
  DM_PRIV_COUNT = 11,
};

/* What a target account needs on each schema it writes (the routed schemas, the meta schema). */
#define DM_PRIV_TARGET_WRITE                                                                       \
  (DM_PRIV_SELECT | DM_PRIV_CREATE | DM_PRIV_INSERT | DM_PRIV_UPDATE | DM_PRIV_DELETE |            \
   DM_PRIV_ALTER | DM_PRIV_DROP)

/*
 * The privileges one line of SHOW GRANTS ("GRANT a, b ON *.* TO ...") gives on `schema`. A grant
 * ON *.* applies to every schema; a grant ON `db`.* applies when db (a LIKE pattern: % and _, \_
 * for a plain underscore) matches schema, or to any schema when schema is NULL (the dump: SELECT
 * on one schema lets the account dump that schema). Grants on single tables count only when
 * schema is NULL; routine grants, roles and USAGE count for nothing. Global-only privileges
 * (RELOAD, REPLICATION ...) count only ON *.*. ALL [PRIVILEGES] gives every bit it can at its
 * level. Schema names are compared as they are (lower_case_table_names = 0, Linux's default).
 */
uint32_t dm_grant_line(const char *line, const char *schema);

/* Does the line grant a role ("GRANT `r` TO `u`@`h`")? Its privileges are not in SHOW GRANTS of
 * the account, so a check that finds something missing cannot be sure. */
bool dm_grant_is_role(const char *line);

/* What the dump needs with consistency `consistency` ("flush", "lock", "snapshot", "none",
 * "auto"; NULL is the default, auto): flush adds RELOAD for FLUSH TABLES WITH READ LOCK, lock
 * adds LOCK TABLES, and both add REPLICATION CLIENT for SHOW MASTER STATUS when a sync follows,
 * as none does. snapshot needs SELECT only; so does auto, which falls back to snapshot. */
uint32_t dm_grants_dump_need(const char *consistency, bool sync_follows);

/* "SELECT, RELOAD, ..." of the bits, in the order of the enum above. Returns buf. */
char *dm_grant_names(uint32_t bits, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* DMHOST_GRANTS_H */
