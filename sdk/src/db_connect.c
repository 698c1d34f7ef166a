/*
 * dm_db_connect and dm_db_error: the one client connection every unit opens (see dmhost/db.h).
 */
#include <errmsg.h>
#include <mysql.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <mysqld_error.h>

#include "dmhost/db.h"
#include "dmhost/sdk.h"

void dm_db_error(struct st_mysql *c, dm_db_side side, dm_error *err, int32_t code, const char *fmt,
                 ...) {
  unsigned no = mysql_errno(c);
  char raw[DM_ERROR_RAW_MAX], what[DM_ERROR_MESSAGE_MAX];
  snprintf(raw, sizeof raw, "ERROR %u (%s): %s", no, mysql_sqlstate(c), mysql_error(c));
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  dm_error_set(err, code, raw, "%s: %s", what, mysql_error(c));
  err->scope = side == DM_DB_TARGET ? DM_SCOPE_DOWNSTREAM : DM_SCOPE_UPSTREAM;
  err->resumable = dm_db_errno_transient(no);
}

struct st_mysql *dm_db_connect(const dm_db_endpoint *ep, const dm_db_connect_opts *opts,
                               dm_error *err) {
  const char *who = opts->who ? opts->who : "dmhost";
  const char *side = opts->side == DM_DB_TARGET ? "target" : "source";
  MYSQL *c = mysql_init(NULL);
  if (!c) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "%s: no memory for a connection to the %s", who,
                 side);
    return NULL;
  }
  unsigned connect_to = opts->connect_timeout_s ? opts->connect_timeout_s : 10;
  my_bool off = 0;
  mysql_optionsv(c, MYSQL_OPT_CONNECT_TIMEOUT, &connect_to);
  if (opts->read_timeout_s)
    mysql_optionsv(c, MYSQL_OPT_READ_TIMEOUT, &opts->read_timeout_s);
  if (opts->write_timeout_s)
    mysql_optionsv(c, MYSQL_OPT_WRITE_TIMEOUT, &opts->write_timeout_s);
  mysql_optionsv(c, MYSQL_OPT_RECONNECT, &off);
  /* Connector/C answers a server's LOCAL INFILE request with any file this process can read
   * unless told not to; no unit ever sends one. It reads this option as an unsigned int, not a
   * my_bool: a my_bool 0 leaves three bytes of whatever follows it on the stack, and the option
   * stays on (measured: the test of this file loads the file then). */
  unsigned int local_infile = 0;
  mysql_optionsv(c, MYSQL_OPT_LOCAL_INFILE, &local_infile);
  if (opts->max_allowed_packet)
    mysql_optionsv(c, MYSQL_OPT_MAX_ALLOWED_PACKET, &opts->max_allowed_packet);
  const char *host = ep->host ? ep->host : "127.0.0.1";
  const char *user = ep->user ? ep->user : "";
  /* The TLS fields exist only in an endpoint of a version 5 host (dmhost/host.h). */
  const char *ca = NULL;
  if (opts->endpoint_size >= offsetof(dm_db_endpoint, ssl_key) + sizeof ep->ssl_key && ep->ssl_ca) {
    ca = ep->ssl_ca;
    my_bool verify = 1;
    mysql_optionsv(c, MYSQL_OPT_SSL_CA, ca);
    if (ep->ssl_cert)
      mysql_optionsv(c, MYSQL_OPT_SSL_CERT, ep->ssl_cert);
    if (ep->ssl_key)
      mysql_optionsv(c, MYSQL_OPT_SSL_KEY, ep->ssl_key);
    mysql_optionsv(c, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &verify);
  }
  /* The server picks the authentication plugin, and some hand it the password: mysql_clear_password
   * and dialog send it as is, sha256_password and caching_sha2_password send it in clear or
   * encrypted with a public key the server itself provides (measured with tests/db/
   * rogue_server.py: each gave a rogue server "s3cret-xyz"). Those are allowed only over TLS
   * whose server certificate was verified (ssl-ca above); otherwise only plugins that prove the
   * password without revealing it. Connector/C checks the list for the handshake's plugin and for
   * every switch, before the plugin sends anything. parsec: where the library has it. */
  mysql_optionsv(c, MARIADB_OPT_RESTRICTED_AUTH,
                 ca ? DM_DB_AUTH_PLUGINS "," DM_DB_AUTH_PLUGINS_TLS : DM_DB_AUTH_PLUGINS);
  if (!mysql_real_connect(c, host, user, ep->password ? ep->password : "", NULL, (unsigned)ep->port,
                          ep->socket, opts->client_flags)) {
    unsigned no = mysql_errno(c);
    if (no == CR_PLUGIN_NOT_ALLOWED) {
      /* Connector/C 3.3 names the plugin wrongly in its message ('password' for each) and frees
       * the switch request before returning, so the message names the allowed plugins. */
      dm_db_error(c, opts->side, err, DM_ERR_DB_AUTH_PLUGIN,
                  "%s: the %s %s:%d asked `%s` to log in with an authentication plugin other than "
                  "%s; refused before the password was sent: %s hand the password to the server "
                  "and are allowed only over TLS verified with ssl-ca (give the server's "
                  "`security` group, or the account mysql_native_password or ed25519)",
                  who, side, host, ep->port, user,
                  ca ? DM_DB_AUTH_PLUGINS "," DM_DB_AUTH_PLUGINS_TLS : DM_DB_AUTH_PLUGINS,
                  DM_DB_AUTH_PLUGINS_TLS);
      err->resumable = false;
    } else if (ca && no == CR_SSL_CONNECTION_ERROR) {
      dm_db_error(c, opts->side, err, DM_ERR_DB_CONNECT,
                  "%s: TLS to the %s %s:%d failed (is ssl-ca \"%s\" the CA of its certificate, and "
                  "the certificate made for this host?)",
                  who, side, host, ep->port, ca);
      err->resumable = false;
    } else {
      dm_db_error(c, opts->side, err, DM_ERR_DB_CONNECT,
                  "%s: cannot connect to the %s %s:%d as `%s`%s", who, side, host, ep->port, user,
                  ca ? " over TLS" : "");
    }
    mysql_close(c);
    return NULL;
  }
  return c;
}

int dm_db_session_apply(struct st_mysql *c, const dm_db_endpoint *ep, uint32_t endpoint_size,
                        const char *who, dm_db_side side, dm_error *err) {
  if (endpoint_size < offsetof(dm_db_endpoint, n_session) + sizeof ep->n_session || !ep->session)
    return 0;
  for (int i = 0; i < ep->n_session; i++) {
    const dm_db_session_var *v = &ep->session[i];
    size_t nl = strlen(v->name), vl = strlen(v->value);
    char *sql = malloc(nl + 2 * vl + 32);
    if (!sql) {
      dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "%s: no memory for a session variable", who);
      return -1;
    }
    /* the name was checked by the host (letters, digits, `_`): no quoting can be needed */
    int n = sprintf(sql, "SET SESSION %s = ", v->name);
    if (v->is_string) {
      sql[n++] = '\'';
      n += (int)mysql_real_escape_string(c, sql + n, v->value, (unsigned long)vl);
      sql[n++] = '\'';
      sql[n] = '\0';
    } else {
      n += sprintf(sql + n, "%s", v->value);
    }
    int rc = mysql_real_query(c, sql, (unsigned long)n);
    free(sql);
    if (rc == 0)
      continue;
    unsigned no = mysql_errno(c);
    if (no == ER_UNKNOWN_SYSTEM_VARIABLE && strncasecmp(v->name, "tidb_", 5) == 0)
      continue;
    const char *s = side == DM_DB_TARGET ? "target-database" : "from";
    dm_db_error(c, side, err, dm_db_errno_transient(no) ? DM_ERR_DB_QUERY : DM_ERR_CONFIG_INVALID,
                "%s: the %s refused `%s.session.%s` (set it to a value the server takes, or "
                "remove it)",
                who, side == DM_DB_TARGET ? "target" : "source", s, v->name);
    return -1;
  }
  return 0;
}
