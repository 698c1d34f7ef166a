/*
 * dmhost SDK: one way to open a client connection to the source or the target (libdmhost-sdk.a;
 * needs libmariadb, as the binlog stream reader does).
 *
 * Every unit's connection goes through dm_db_connect, so every connection has the same safe
 * options: LOAD DATA LOCAL INFILE refused by the client (a hostile or hijacked server cannot ask
 * this process for a local file), no silent reconnect (a reconnect would lose the session and any
 * open transaction without a word), and bounded connect/read/write timeouts. Connection errors are
 * mapped the same way everywhere: a refused account is permanent, a lost or refused connection is
 * resumable.
 */
#ifndef DMHOST_DB_H
#define DMHOST_DB_H

#include "error.h"
#include "host.h"

#ifdef __cplusplus
extern "C" {
#endif

/* libmariadb's MYSQL is `struct st_mysql`: the SDK header does not need <mysql.h>. */
struct st_mysql;

typedef enum dm_db_side {
  DM_DB_SOURCE = 0, /* errors get DM_SCOPE_UPSTREAM */
  DM_DB_TARGET = 1, /* errors get DM_SCOPE_DOWNSTREAM */
} dm_db_side;

typedef struct dm_db_connect_opts {
  const char *who;            /* opens the error message: "dump", "relay", "binlog stream" */
  dm_db_side side;            /* which server the endpoint is */
  unsigned connect_timeout_s; /* 0: 10 s */
  unsigned read_timeout_s;    /* 0: no read timeout (a blocking read waits for the server) */
  unsigned write_timeout_s;   /* 0: no write timeout */
  unsigned long client_flags; /* for mysql_real_connect, e.g. CLIENT_MULTI_STATEMENTS */
  /* the largest packet the client sends or takes (MYSQL_OPT_MAX_ALLOWED_PACKET); 0: the
   * library's default. The server's own max_allowed_packet still applies. */
  unsigned long max_allowed_packet;
  /* sizeof the endpoint struct the endpoint was made with: dm_host_db_endpoint_size(host, ctx)
   * for an endpoint of the host, sizeof(dm_db_endpoint) for one of your own. 0 (or the size of
   * an older host's endpoint) means the endpoint has no TLS fields: they are not read, and the
   * connection is plain. */
  uint32_t endpoint_size;
} dm_db_connect_opts;

/*
 * Connect to ep (a NULL host is 127.0.0.1, a NULL password empty) with opts. Returns the
 * connection (close it with mysql_close), or NULL with *err set by dm_db_error: code
 * DM_ERR_DB_CONNECT, the message names who, the server and the account.
 *
 * TLS: when the endpoint has ssl_ca (see endpoint_size above) the connection is TLS, the server
 * certificate is verified against that CA and its name against the host
 * (MYSQL_OPT_SSL_VERIFY_SERVER_CERT), and ssl_cert/ssl_key are sent when set. A failed TLS
 * handshake or verification is DM_ERR_DB_CONNECT, not resumable (the certificates are a config
 * problem), and its message names the server and the CA file.
 */
struct st_mysql *dm_db_connect(const dm_db_endpoint *ep, const dm_db_connect_opts *opts,
                               dm_error *err);

/*
 * The endpoint's `session` variables (DM's) on connection c, one `SET SESSION` each in the file's
 * order: call it after the unit's own session set-up, so that the user's value wins where both
 * set one (as DM's session wins over its defaults). endpoint_size as in dm_db_connect_opts (an
 * older host's endpoint has none: 0 is returned). A variable named `tidb_...` that the server
 * does not know (1193) is skipped: DM's files target TiDB, where those mean something. Any other
 * refusal is DM_ERR_CONFIG_INVALID (not resumable), naming who, the side and the variable; a lost
 * connection is dm_db_error's. 0, or -1 with *err.
 */
int dm_db_session_apply(struct st_mysql *c, const dm_db_endpoint *ep, uint32_t endpoint_size,
                        const char *who, dm_db_side side, dm_error *err);

/*
 * The server's binlog position now, the one reading of SHOW MASTER STATUS (the dump's snapshot
 * position, the relay's start, the sync's "master" status): file and position, and the GTID set
 * that matches them: MySQL's Executed_Gtid_Set (its fifth column) when the server gives one, else
 * MariaDB's @@global.gtid_binlog_pos (empty where the server knows no such variable). 0; 1 when
 * the answer is empty (the binary log is off); -1 when a statement failed, mysql_errno(c) saying
 * why (1227: the user lacks REPLICATION CLIENT / BINLOG MONITOR) for the caller's dm_db_error.
 */
int dm_db_master_status(struct st_mysql *c, dm_position *pos);

/*
 * Authentication plugins dm_db_connect lets a server choose (MARIADB_OPT_RESTRICTED_AUTH). The
 * first list never hands the password to the server: mysql_native_password and ed25519 prove it
 * with a scramble. The second does (mysql_clear_password and dialog send it as is,
 * sha256_password and caching_sha2_password in clear or under an RSA key the server sends), so
 * it is added only when the connection is TLS with the server's certificate verified (ssl-ca).
 * Any other plugin the server asks for is refused before anything is sent: DM_ERR_DB_AUTH_PLUGIN,
 * not resumable, naming the plugin.
 */
#define DM_DB_AUTH_PLUGINS "mysql_native_password,client_ed25519,parsec"
#define DM_DB_AUTH_PLUGINS_TLS "mysql_clear_password,dialog,sha256_password,caching_sha2_password"

/*
 * Fill *err from the last error on c: raw cause "ERROR <no> (<sqlstate>): <message>", scope from
 * side, resumable only when dm_db_errno_transient says retrying can help (a refused statement or
 * account is permanent). code is the unit's choice (DM_ERR_DB_CONNECT, DM_ERR_DB_QUERY, ...); the
 * message is fmt followed by ": <server message>".
 *
 * This is the one mapping of a failed connect or statement for every unit: never fill a
 * DM_ERR_DB_QUERY by hand (its code table default is resumable, so a refused statement would be
 * run again by auto-resume forever). A unit may narrow it afterwards (make a resumable error
 * permanent) or give it a code of its own, never make a refused statement resumable.
 */
void dm_db_error(struct st_mysql *c, dm_db_side side, dm_error *err, int32_t code, const char *fmt,
                 ...) __attribute__((format(printf, 5, 6)));

/*
 * Identifier quoting, the one copy of every unit: `name` in backticks, each backtick in it doubled
 * (MySQL's and MariaDB's rule, whatever the sql_mode: ANSI_QUOTES only adds the double quote).
 * Any other byte is kept as it is, so a name in utf8mb4 (multibyte characters) stays whole.
 *
 * dm_db_quote_ident writes the len bytes of name quoted into out (size bytes with the NUL) and
 * returns the quoted length without the NUL, as snprintf does: when that is >= size nothing fits
 * and out is "" (never a truncated name: it would name another object). out may be NULL when size
 * is 0 (to measure). DM_DB_QUOTED_IDENT_MAX holds any identifier the server accepts (64
 * characters of up to 4 bytes, every one a backtick at worst).
 * dm_db_quoted: the same for a NUL-terminated name, returning out (for a printf argument).
 * dm_db_quote_ident_dup: the quoted name in malloc'd memory (free it), NULL without memory.
 */
/*
 * A condition on a row's columns from a task file (mydumper's `where`, an expression-filter's
 * expression), checked before a unit puts it into SQL of its own: 0 when it holds nothing that
 * reaches beyond the row (no `;`, comment, unbalanced parenthesis, nor SELECT, UNION, FROM, INTO,
 * TABLE, VALUES, HANDLER, LOAD_FILE, OUTFILE, DUMPFILE outside quotes), else -1 with the reason in
 * why[n] (docs/security.md, "Conditions in a task file").
 */
int dm_db_condition_check(const char *text, char *why, size_t n);

#define DM_DB_QUOTED_IDENT_MAX (2 * 64 * 4 + 3)
size_t dm_db_quote_ident(char *out, size_t size, const char *name, size_t len);
const char *dm_db_quoted(const char *name, char *out, size_t size);
char *dm_db_quote_ident_dup(const char *name);

/*
 * The canonical text of a DDL statement, under which two statements are "the same DDL" (a shard
 * group's statements are compared so, as DM compares the statements its parser restored): comments
 * out (executable ones, which start with `!`, kept: they run), keywords and names folded to lower
 * case, backticks dropped around plain names, blanks made one, none beside punctuation, no
 * trailing `;`; string literals kept byte for byte. So gh-ost's form (`alter`, its `gh-ost`
 * comment, `table t add column c int`) and `ALTER TABLE `t` ADD COLUMN `c` INT` are one.
 * dm_db_ddl_canon: malloc'd (free it), NULL without memory.
 * dm_db_ddl_same: the two canonical texts equal (false without memory).
 */
char *dm_db_ddl_canon(const char *ddl);
bool dm_db_ddl_same(const char *a, const char *b);

/*
 * Fencing: checkpoint rows on the target that a stale worker cannot move (host.h fencing_token,
 * docs/sdk.md "Fencing"). With a token T > 0 a unit keeps T in a column `fence` of its
 * checkpoint rows (DM_DB_FENCE_COLUMN_DEF) and:
 *  - at start, raises its rows to T (dm_db_fence_raise): a locking write, so it waits for a stale
 *    worker's open transaction on them, and is refused when a row already carries more than T;
 *  - moves a row only with `UPDATE ... SET ..., fence = T WHERE ... AND fence <= T` followed, in
 *    the same round trip and before the COMMIT, by DM_DB_FENCE_CHECK_HEAD "<rows expected>"
 *    DM_DB_FENCE_CHECK_TAIL: a statement that fails with DM_DB_FENCE_ERRNO unless the update
 *    matched that many rows. The server stops a multi-statement at its first error, so the
 *    COMMIT after it never runs; the caller rolls back and asks dm_db_fence_refused why.
 * ROW_COUNT() counts matched rows (not only changed ones) only on a connection opened with
 * CLIENT_FOUND_ROWS: open fenced connections with DM_DB_FENCE_CLIENT_FLAGS. (Measured on MariaDB
 * 10.11: a `DO` in place of the SET turns the error into a warning, and a SELECT in its place
 * fails only when its result is read, which a caller draining results may miss.)
 */
#define DM_DB_FENCE_COLUMN_DEF "`fence` BIGINT UNSIGNED NOT NULL DEFAULT 0"
#define DM_DB_FENCE_CHECK_HEAD "SET @dmhost_fence = IF(ROW_COUNT() = "
#define DM_DB_FENCE_CHECK_TAIL ", 0, (SELECT 1 UNION SELECT 2))"
#define DM_DB_FENCE_ERRNO 1242       /* ER_SUBQUERY_NO_1_ROW, from the check above */
#define DM_DB_FENCE_CLIENT_FLAGS 2UL /* CLIENT_FOUND_ROWS */

/* Adds the `fence` column to `qualified` (the quoted `schema`.`table`) when the table, made by an
 * older version, lacks it (looked up in information_schema first: an ALTER would wait for every
 * open transaction on the table). 0, or -1 with *err (DM_ERR_CHECKPOINT, resumable as the server
 * error is). */
int dm_db_fence_column(struct st_mysql *c, const char *schema, const char *table,
                       const char *qualified, const char *who, dm_error *err);

/* Raises the rows of `qualified` that `where` selects (SQL, e.g. "`id` = 'mysql-01'") to token,
 * in the caller's transaction (or autocommitted): waits for any transaction holding them, then
 * checks that no row carries a higher token. Returns 0, 1 when one does (*err is DM_ERR_FENCED,
 * not resumable, naming that token), -1 on a server error (*err). */
int dm_db_fence_raise(struct st_mysql *c, const char *qualified, const char *where, uint64_t token,
                      const char *who, dm_error *err);

/* After a fenced statement failed with DM_DB_FENCE_ERRNO (and the caller rolled back): is a row
 * that `where` selects now at a token above `token`? 1 with *err DM_ERR_FENCED, 0 when none is (the
 * row the update wanted is gone: the caller reports that), -1 on a server error (*err). */
int dm_db_fence_refused(struct st_mysql *c, const char *qualified, const char *where,
                        uint64_t token, const char *who, dm_error *err);

#ifdef __cplusplus
}
#endif
#endif /* DMHOST_DB_H */
