/*
 * The database groups of the source and task files (`from`, `target-database`): host, port,
 * account, the password in one of its forms (plain, encrypted with secret-key-path, a file, an
 * environment variable) and the TLS `security` group. Split from config_util.c, whose typed
 * lookups it uses.
 */
#include <errno.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config_util.h"
#include "dmhost/fs.h"
#include "dmhost/sdk.h"
#include "secret.h"

/* password-encrypted of a text from the cluster's store: the cluster key only (secret.h); key NULL
 * when the process has none. Consumes enc. */
static int cfgutil_password_cluster(dmh_cfg_ctx *c, const config_setting_t *root,
                                    const config_setting_t *m, const char *path, unsigned char *key,
                                    char *enc, char **out) {
  const config_setting_t *kp = config_setting_get_member(root, "secret-key-path");
  int rc = -1;
  if (kp)
    dmh_cfg_fail(c, DM_ERR_CLUSTER_KEY, kp,
                 "`secret-key-path` in a %s read from etcd: a password kept in etcd decrypts "
                 "only with this process's --cluster-key, never with a key file the text names",
                 c->what);
  else if (!key)
    dmh_cfg_fail(c, DM_ERR_CLUSTER_KEY, m,
                 "`%s` in the %s read from etcd needs the cluster key: start this process with "
                 "--cluster-key FILE, the key the masters were given",
                 path, c->what);
  else if (dmh_secret_decrypt(key, enc, out) < 0)
    dmh_cfg_fail(c, DM_ERR_CLUSTER_KEY, m,
                 "`%s` in the %s read from etcd does not decrypt with --cluster-key: the master "
                 "that stored it has another key (give every master and worker the same), or the "
                 "value is damaged",
                 path, c->what);
  else
    rc = 0;
  if (key)
    OPENSSL_cleanse(key, DMH_SECRET_KEY_LEN);
  free(enc);
  return rc;
}

/* password-encrypted: decrypted with the key file named by the top-level secret-key-path. */
static int cfgutil_password_encrypted(dmh_cfg_ctx *c, const config_setting_t *g,
                                      const config_setting_t *m, char **out) {
  char path[CFGUTIL_PATH_MAX], why[512];
  char *enc = NULL, *key_path = NULL;
  const config_setting_t *root = config_root_setting(m->config);
  dmh_cfg_path_of(m, path, sizeof path);
  if (dmh_cfg_get_string(c, g, "password-encrypted", DMH_CFG_NONEMPTY, &enc) < 0)
    return -1;
  unsigned char key[DMH_SECRET_KEY_LEN];
  int cluster = dmh_secret_cluster_key(key);
  if (cluster != 0)
    return cfgutil_password_cluster(c, root, m, path, cluster > 0 ? key : NULL, enc, out);
  int rc = dmh_cfg_get_path(c, root, "secret-key-path", &key_path);
  if (rc <= 0) {
    free(enc);
    if (rc < 0)
      return -1;
    return dmh_cfg_fail(c, DM_ERR_CONFIG_MISSING, m,
                        "`%s` in the %s needs the key it was encrypted with: add "
                        "`secret-key-path = \"/path/to/key\";` at the top of the file",
                        path, c->what);
  }
  /* A sent config naming the daemon's key would have the daemon decrypt for the sender. */
  if (dmh_cfg_check_secret_origin(c, config_setting_get_member(root, "secret-key-path"), key_path) <
      0) {
    free(enc);
    free(key_path);
    return -1;
  }
  if (dmh_secret_key_load(key_path, key, why, sizeof why) < 0) {
    free(enc);
    free(key_path);
    return dmh_cfg_fail(c, DM_ERR_CONFIG_IO, config_setting_get_member(root, "secret-key-path"),
                        "`secret-key-path` (needed by `%s`): %s", path, why);
  }
  rc = dmh_secret_decrypt(key, enc, out);
  OPENSSL_cleanse(key, sizeof key);
  free(enc);
  if (rc < 0) {
    dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID, m,
                 "`%s` in the %s does not decrypt with the key in secret-key-path (%s): it was "
                 "encrypted with another key or is damaged; encrypt the password again with "
                 "`dmhost encrypt --secret-key-path %s` (plain text on stdin)",
                 path, c->what, key_path, key_path);
    free(key_path);
    return -1;
  }
  free(key_path);
  return 0;
}

/* password-file: the first line of the file (its newline dropped). The file is opened without
 * following a link and without blocking, and must be a regular file of at most
 * DMH_CFG_SECRET_MAX bytes owned by root or the daemon, mode 0600 or 0400: a FIFO, a device
 * (/dev/zero) or another user's file is refused before anything is read. */
static int cfgutil_password_file(dmh_cfg_ctx *c, const config_setting_t *g,
                                 const config_setting_t *m, char **out) {
  char path[CFGUTIL_PATH_MAX], why[256];
  char *file = NULL, *text = NULL;
  if (dmh_cfg_get_path(c, g, "password-file", &file) < 0)
    return -1;
  if (dmh_cfg_check_secret_origin(c, m, file) < 0) {
    free(file);
    return -1;
  }
  int rc = dmh_cfg_read_secret(file, &text, why, sizeof why);
  if (rc == -2) {
    free(file);
    return dmh_cfg_no_memory(c);
  }
  if (rc == -1)
    dmh_cfg_fail(c, DM_ERR_CONFIG_IO, m, "`%s` in the %s: cannot read %s: %s",
                 dmh_cfg_path_of(m, path, sizeof path), c->what, file, why);
  else if (rc < 0)
    dmh_cfg_fail(c, DM_ERR_CONFIG_UNSAFE_FILE, m, "`%s` in the %s: %s cannot be used: %s",
                 dmh_cfg_path_of(m, path, sizeof path), c->what, file, why);
  if (rc < 0) {
    free(file);
    return -1;
  }
  free(file);
  *out = text;
  return 0;
}

/* password-env: the value of the environment variable it names. */
static int cfgutil_password_env(dmh_cfg_ctx *c, const config_setting_t *g,
                                const config_setting_t *m, char **out) {
  char path[CFGUTIL_PATH_MAX];
  char *name = NULL;
  if (dmh_cfg_check_secret_origin(c, m, NULL) < 0 ||
      dmh_cfg_get_string(c, g, "password-env", DMH_CFG_NONEMPTY, &name) < 0)
    return -1;
  const char *v = getenv(name);
  if (!v) {
    dmh_cfg_fail(c, DM_ERR_CONFIG_MISSING, m,
                 "`%s` in the %s names the environment variable %s, which is not set: export it "
                 "in the environment dmhost starts in",
                 dmh_cfg_path_of(m, path, sizeof path), c->what, name);
    free(name);
    return -1;
  }
  free(name);
  *out = strdup(v);
  return *out ? 0 : dmh_cfg_no_memory(c);
}

/* password: as written, or, with the process's DM key, DM's encrypted form decrypted (DM's
 * DecryptOrPlaintext, secret.h). */
static int cfgutil_password_plain(dmh_cfg_ctx *c, const config_setting_t *g, char **out,
                                  int *dm_form) {
  char *v = NULL, key_path[4096];
  if (dmh_cfg_get_string(c, g, "password", 0, &v) < 0)
    return -1;
  /* Sent text may not use the daemon's secrets, this key included, unless the operator placed the
   * key below --secrets-dir: else a sender holding DM's form of a password would have the daemon
   * decrypt it and send it to a server the sender names. */
  if (v && dmh_cfg_submitted(c) && dmh_secret_dm_key_path(key_path, sizeof key_path) &&
      dmh_secret_dm_shaped(v) && !dmh_cfg_secret_allowed(c, key_path)) {
    char path[CFGUTIL_PATH_MAX];
    const config_setting_t *m = config_setting_get_member(g, "password");
    dmh_secret_free(v);
    return dmh_cfg_fail(c, DM_ERR_CONFIG_SUBMITTED_SECRET, m,
                        "`%s` in a %s sent to the daemon (not a file the operator placed) is DM's "
                        "encrypted form: the daemon decrypts a sent password with its "
                        "--secret-key-path only when that file is below its --secrets-dir (put "
                        "the key there), else give the file by path over the control socket",
                        dmh_cfg_path_of(m, path, sizeof path), c->what);
  }
  int rc = dmh_secret_dm_password(v ? v : "", out, dm_form);
  dmh_secret_free(v);
  return rc < 0 ? dmh_cfg_no_memory(c) : 0;
}

/* The password of the database group g: "" when none of the settings that give one (the table's
 * DMH_CFG_F_PW, at most one per group) is there. */
static int cfgutil_password(dmh_cfg_ctx *c, const config_setting_t *g, char **out, int *dm_form) {
  const config_setting_t *given = NULL;
  for (int i = 0; i < DMH_SET_COUNT; i++) {
    const dmh_cfg_setting *s = &dmh_cfg_settings[i];
    const config_setting_t *m = s->scope == DMH_SCOPE_DB && (s->flags & DMH_CFG_F_PW)
                                    ? config_setting_get_member(g, s->key)
                                    : NULL;
    if (!m)
      continue;
    if (given) {
      char a[CFGUTIL_PATH_MAX], b[CFGUTIL_PATH_MAX];
      return dmh_cfg_fail(
          c, DM_ERR_CONFIG_INVALID, m, "`%s` and `%s` in the %s both give the password: keep one",
          dmh_cfg_path_of(given, a, sizeof a), dmh_cfg_path_of(m, b, sizeof b), c->what);
    }
    given = m;
  }
  if (!given) {
    *out = strdup("");
    return *out ? 0 : dmh_cfg_no_memory(c);
  }
  const char *name = config_setting_name(given);
  if (strcmp(name, "password") == 0)
    return cfgutil_password_plain(c, g, out, dm_form);
  if (strcmp(name, "password-encrypted") == 0)
    return cfgutil_password_encrypted(c, g, given, out);
  if (strcmp(name, "password-file") == 0)
    return cfgutil_password_file(c, g, given, out);
  return cfgutil_password_env(c, g, given, out);
}

/* One file of a `security` group: an absolute path (relative ones against the config file's
 * folder) to a file that is there and readable now, or a config error at its line. */
static int cfgutil_tls_file(dmh_cfg_ctx *c, const config_setting_t *g, const char *name,
                            char **out) {
  char *p = NULL;
  int rc = dmh_cfg_get_path(c, g, name, &p);
  if (rc < 0 || !p)
    return rc < 0 ? -1 : 0;
  const config_setting_t *s = config_setting_get_member(g, name);
  char path[CFGUTIL_PATH_MAX];
  /* The private key is a secret of the daemon's machine: a sent config may not point the
   * connection at it (the CA and certificate are public). */
  if (strcmp(name, "ssl-key") == 0 && dmh_cfg_check_secret_origin(c, s, p) < 0) {
    free(p);
    return -1;
  }
  struct stat st;
  if (access(p, R_OK) != 0 || stat(p, &st) != 0) {
    int e = errno;
    dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID, s,
                 "`%s` in the %s: cannot read \"%s\": %s (give a PEM file this process can read)",
                 dmh_cfg_path_of(s, path, sizeof path), c->what, p, strerror(e));
    free(p);
    return -1;
  }
  if (!S_ISREG(st.st_mode)) { /* a FIFO would hold the connecting thread */
    dmh_cfg_fail(c, DM_ERR_CONFIG_UNSAFE_FILE, s,
                 "`%s` in the %s: \"%s\" is not a regular file (give a PEM file)",
                 dmh_cfg_path_of(s, path, sizeof path), c->what, p);
    free(p);
    return -1;
  }
  *out = p;
  return 0;
}

/* `security = { ssl-ca = "..."; ssl-cert = "..."; ssl-key = "..."; }` of a database group (DM's
 * names): ssl-ca required in the group, ssl-cert and ssl-key both or neither. */
static int cfgutil_get_security(dmh_cfg_ctx *c, const config_setting_t *db, dm_db_endpoint *ep) {
  config_setting_t *g = NULL;
  int rc = dmh_cfg_get_group(c, db, "security", 0,
                             "`security = { ssl-ca = \"ca.pem\"; ssl-cert = \"client-cert.pem\"; "
                             "ssl-key = \"client-key.pem\"; };`",
                             &g);
  if (rc <= 0 || !g)
    return rc < 0 ? -1 : 0;
  if (dmh_cfg_check_scope(c, g, DMH_SCOPE_SECURITY, NULL, NULL) < 0)
    return -1;
  char *ca = NULL, *cert = NULL, *key = NULL;
  char path[CFGUTIL_PATH_MAX];
  if (cfgutil_tls_file(c, g, "ssl-ca", &ca) < 0 || cfgutil_tls_file(c, g, "ssl-cert", &cert) < 0 ||
      cfgutil_tls_file(c, g, "ssl-key", &key) < 0)
    goto fail;
  if (!ca) {
    dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID, g,
                 "`%s` in the %s has no ssl-ca: add `ssl-ca = \"/path/ca.pem\";` (the CA the "
                 "server's certificate is checked against)",
                 dmh_cfg_path_of(g, path, sizeof path), c->what);
    goto fail;
  }
  if (!cert != !key) {
    dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID, g,
                 "`%s` in the %s has %s without %s: give both ssl-cert and ssl-key, or neither",
                 dmh_cfg_path_of(g, path, sizeof path), c->what, cert ? "ssl-cert" : "ssl-key",
                 cert ? "ssl-key" : "ssl-cert");
    goto fail;
  }
  ep->ssl_ca = ca;
  ep->ssl_cert = cert;
  ep->ssl_key = key;
  return 0;
fail:
  free(ca);
  free(cert);
  free(key);
  return -1;
}

/* Session variables the units' connections must not take from a file: each would change how the
 * rows' bytes and instants are read (the units write binary text at +00:00, docs/sync.md), or
 * would keep changes out of the target's binlog. */
static const char *const cfgutil_session_refused[][2] = {
    {"time_zone", "the task's `timezone` names a zone (docs/sync.md, \"Time zones\")"},
    {"names", "the units read and write every value's bytes as binary"},
    {"character_set_", "the units read and write every value's bytes as binary"},
    {"collation_", "the units read and write every value's bytes as binary"},
    {"sql_log_bin", "the target's binlog must keep what the units write"},
};

static void cfgutil_session_free(dm_db_endpoint *ep) {
  dm_db_session_var *v = (dm_db_session_var *)ep->session;
  for (int i = 0; v && i < ep->n_session; i++) {
    free((char *)v[i].name);
    free((char *)v[i].value);
  }
  free(v);
  ep->session = NULL;
  ep->n_session = 0;
}

/* `session = { sql_mode = "..."; innodb_lock_wait_timeout = 100; }` of a database group (DM's):
 * names of letters, digits and `_`; values a string, an integer, a float or a boolean. */
static int cfgutil_get_session(dmh_cfg_ctx *c, const config_setting_t *db, dm_db_endpoint *ep) {
  config_setting_t *g = NULL;
  char path[CFGUTIL_PATH_MAX];
  int rc = dmh_cfg_get_group(c, db, "session", 0,
                             "`session = { sql_mode = \"STRICT_TRANS_TABLES\"; "
                             "innodb_lock_wait_timeout = 100; };`",
                             &g);
  if (rc <= 0 || !g)
    return rc < 0 ? -1 : 0;
  int n = config_setting_length(g);
  dm_db_session_var *v = n ? calloc((size_t)n, sizeof *v) : NULL;
  if (n && !v)
    return dmh_cfg_fail(c, DM_ERR_NO_MEMORY, g, "no memory for `%s`",
                        dmh_cfg_path_of(g, path, sizeof path));
  ep->session = v;
  ep->n_session = n;
  for (int i = 0; i < n; i++) {
    config_setting_t *m = config_setting_get_elem(g, (unsigned)i);
    const char *name = config_setting_name(m);
    dmh_cfg_path_of(m, path, sizeof path);
    if (!name || strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") !=
                     strlen(name))
      return dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID, m,
                          "`%s` in the %s: a session variable's name holds letters, digits and "
                          "`_` only",
                          path, c->what);
    for (size_t k = 0; k < sizeof cfgutil_session_refused / sizeof *cfgutil_session_refused; k++) {
      const char *r = cfgutil_session_refused[k][0];
      size_t rl = strlen(r);
      if (r[rl - 1] == '_' ? strncasecmp(name, r, rl) == 0 : strcasecmp(name, r) == 0)
        return dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID, m,
                            "`%s` in the %s cannot be set: %s; remove it", path, c->what,
                            cfgutil_session_refused[k][1]);
    }
    char num[64];
    const char *text = NULL;
    switch (config_setting_type(m)) {
    case CONFIG_TYPE_STRING:
      text = config_setting_get_string(m);
      v[i].is_string = true;
      break;
    case CONFIG_TYPE_INT:
    case CONFIG_TYPE_INT64:
      snprintf(num, sizeof num, "%lld", (long long)config_setting_get_int64(m));
      text = num;
      break;
    case CONFIG_TYPE_FLOAT:
      snprintf(num, sizeof num, "%.17g", config_setting_get_float(m));
      text = num;
      break;
    case CONFIG_TYPE_BOOL:
      text = config_setting_get_bool(m) ? "ON" : "OFF";
      break;
    default:
      return dmh_cfg_fail(c, DM_ERR_CONFIG_INVALID, m,
                          "`%s` in the %s must be a string, a number or true/false", path, c->what);
    }
    v[i].name = strdup(name);
    v[i].value = strdup(text);
    if (!v[i].name || !v[i].value)
      return dmh_cfg_fail(c, DM_ERR_NO_MEMORY, m, "no memory for `%s`", path);
  }
  return 0;
}

int dmh_cfg_get_db(dmh_cfg_ctx *c, const config_setting_t *parent, const char *name,
                   dmh_db_config *out) {
  config_setting_t *g = NULL;
  char example[160];
  snprintf(example, sizeof example,
           "`%s = { host = \"127.0.0.1\"; port = 3306; user = \"root\"; password = \"\"; };`",
           name);
  int rc = dmh_cfg_get_group(c, parent, name, DMH_CFG_REQUIRED, example, &g);
  if (rc < 0)
    return -1;
  if (dmh_cfg_check_scope(c, g, DMH_SCOPE_DB, NULL, NULL) < 0)
    return -1;
  char *host = NULL, *user = NULL, *password = NULL, *sock = NULL;
  int64_t port = DMH_DEFAULT_DB_PORT;
  int dm_form = DMH_DM_FORM_NONE;
  if (dmh_cfg_get_string(c, g, "host", DMH_CFG_REQUIRED | DMH_CFG_NONEMPTY, &host) < 0 ||
      dmh_cfg_get_int_setting(c, g, DMH_SET_DB_PORT, 0, &port) < 0 ||
      dmh_cfg_get_string(c, g, "user", DMH_CFG_REQUIRED | DMH_CFG_NONEMPTY, &user) < 0 ||
      cfgutil_password(c, g, &password, &dm_form) < 0 ||
      dmh_cfg_get_string(c, g, "socket", DMH_CFG_NONEMPTY, &sock) < 0)
    goto fail;
  out->ep.host = host;
  out->ep.port = (int)port;
  out->ep.user = user;
  out->ep.password = password;
  out->ep.socket = sock;
  out->password_dm_form = dm_form;
  if (cfgutil_get_security(c, g, &out->ep) < 0 || cfgutil_get_session(c, g, &out->ep) < 0) {
    dmh_cfg_db_free(out);
    return -1;
  }
  return 0;
fail:
  free(host);
  free(user);
  dmh_secret_free(password);
  free(sock);
  return -1;
}

void dmh_db_config_hint(const dmh_db_config *db, const char *group, dm_error *e) {
  if (!db || db->password_dm_form == DMH_DM_FORM_NONE || e->code != DM_ERR_DB_CONNECT ||
      !strstr(e->raw_cause, "ERROR 1045 ") || strstr(e->message, "DM's encrypted form"))
    return;
  size_t at = strlen(e->message);
  snprintf(e->message + at, sizeof e->message - at,
           db->password_dm_form == DMH_DM_FORM_KEYED
               ? " (`%s.password` is DM's encrypted form and was decrypted with the key of "
                 "--secret-key-path: it may have been encrypted with another key; encrypt it "
                 "again with `dmhost encrypt --dm --secret-key-path FILE`)"
               : " (`%s.password` looks like DM's encrypted form, used as written since this "
                 "process has no --secret-key-path: give DM's key, dm-master's secret-key-path)",
           group);
}

void dmh_cfg_db_free(dmh_db_config *db) {
  free((char *)db->ep.host);
  free((char *)db->ep.user);
  dmh_secret_free((char *)db->ep.password);
  free((char *)db->ep.socket);
  free((char *)db->ep.ssl_ca);
  free((char *)db->ep.ssl_cert);
  free((char *)db->ep.ssl_key);
  cfgutil_session_free(&db->ep);
  memset(db, 0, sizeof *db);
}

/* ---- a file's password sealed for the cluster's store ---- */

static int cfgutil_seal_write(config_t *cfg, char **out, dm_error *err) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory sealing a file's password");
    return -1;
  }
  config_write(cfg, f);
  if (fclose(f) != 0 || !buf) {
    free(buf);
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory sealing a file's password");
    return -1;
  }
  *out = buf;
  return 0;
}

int dmh_config_seal_password(const char *text, const char *group, const char *plain,
                             const unsigned char *key, char **out, dm_error *err) {
  *out = NULL;
  config_t cfg;
  config_init(&cfg);
  int rc = -1;
  if (config_read_string(&cfg, text) != CONFIG_TRUE) {
    dm_error_set(err, DM_ERR_CONFIG_INVALID, config_error_text(&cfg),
                 "the file to keep in etcd does not parse again (line %d: %s)",
                 config_error_line(&cfg), config_error_text(&cfg));
    goto out;
  }
  config_setting_t *root = config_root_setting(&cfg);
  config_setting_t *g = config_setting_get_member(root, group);
  config_setting_t *pw = g ? config_setting_get_member(g, "password") : NULL;
  config_setting_t *enc = g ? config_setting_get_member(g, "password-encrypted") : NULL;
  const char *clear = pw ? config_setting_get_string(pw) : NULL;
  if (!enc && (!clear || !*clear)) { /* nothing secret in it: kept byte for byte */
    *out = strdup(text);
    rc = *out ? 0 : (dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory"), -1);
    goto out;
  }
  if (!key) {
    if (enc)
      dm_error_set(err, DM_ERR_CLUSTER_KEY, NULL,
                   "`%s.password-encrypted` would reach the workers with a key path from etcd, "
                   "which they never use: start the masters and workers with --cluster-key FILE "
                   "(the master encrypts the password with it), or give the password as a "
                   "password-file below every worker's --secrets-dir",
                   group);
    else
      dm_error_set(err, DM_ERR_CLUSTER_CLEAR_PASSWORD, NULL,
                   "`%s.password` is in clear and would be kept so in etcd, where whoever reads "
                   "etcd reads it: start the masters and workers with --cluster-key FILE (the "
                   "master then keeps it encrypted), or use a password-file below every "
                   "worker's --secrets-dir",
                   group);
    goto out;
  }
  char *sealed = dmh_secret_encrypt(key, plain ? plain : "");
  if (!sealed) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL,
                 "cannot encrypt `%s`'s password (over 4096 bytes, "
                 "or out of memory)",
                 group);
    goto out;
  }
  if (pw)
    config_setting_remove(g, "password");
  if (enc)
    config_setting_remove(g, "password-encrypted");
  if (config_setting_get_member(root, "secret-key-path"))
    config_setting_remove(root, "secret-key-path");
  config_setting_t *n = config_setting_add(g, "password-encrypted", CONFIG_TYPE_STRING);
  if (!n || config_setting_set_string(n, sealed) != CONFIG_TRUE)
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory sealing a file's password");
  else
    rc = cfgutil_seal_write(&cfg, out, err);
  free(sealed);
out:
  config_destroy(&cfg);
  return rc;
}

/* Copy `name` of group `from` into group `to` (a scalar: string, integer or boolean). */
static int cfgutil_copy_member(config_setting_t *to, const config_setting_t *from,
                               const char *name) {
  const config_setting_t *m = from ? config_setting_get_member(from, name) : NULL;
  if (!m)
    return 0;
  int type = config_setting_type(m);
  config_setting_t *n = config_setting_add(to, name, type);
  if (!n)
    return -1;
  if (type == CONFIG_TYPE_STRING)
    return config_setting_set_string(n, config_setting_get_string(m)) == CONFIG_TRUE ? 0 : -1;
  if (type == CONFIG_TYPE_INT || type == CONFIG_TYPE_INT64)
    return config_setting_set_int64(n, config_setting_get_int64(m)) == CONFIG_TRUE ? 0 : -1;
  if (type == CONFIG_TYPE_BOOL)
    return config_setting_set_bool(n, config_setting_get_bool(m)) == CONFIG_TRUE ? 0 : -1;
  return -1;
}

int dmh_config_carry_password(const char *path, const dmh_source_config *old, char **out,
                              dm_error *err) {
  static const char *const keys[] = {"password", "password-encrypted", "password-file",
                                     "password-env"};
  *out = NULL;
  char *text =
      dmh_config_is_yaml(path) ? dmh_config_convert(path, err) : dm_fs_read_all(path, NULL);
  if (!text) {
    if (!dmh_config_is_yaml(path))
      dm_error_set(err, DM_ERR_CONFIG_IO, strerror(errno), "cannot read %s", path);
    return -1;
  }
  config_t cfg;
  config_init(&cfg);
  int rc = -1;
  if (config_read_string(&cfg, text) != CONFIG_TRUE) {
    dm_error_set(err, DM_ERR_CONFIG_PARSE, config_error_text(&cfg), "%s:%d: %s", path,
                 config_error_line(&cfg), config_error_text(&cfg));
    goto out;
  }
  config_setting_t *root = config_root_setting(&cfg);
  config_setting_t *g = config_setting_get_member(root, "from");
  if (!g || !config_setting_is_group(g)) {
    dm_error_set(err, DM_ERR_CONFIG_MISSING, NULL, "%s: `from` (the source's server) is missing",
                 path);
    goto out;
  }
  const config_setting_t *oroot = config_root_setting(&old->cfg);
  const config_setting_t *og = config_setting_get_member(oroot, "from");
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    if (config_setting_get_member(g, keys[i]))
      config_setting_remove(g, keys[i]);
    if (cfgutil_copy_member(g, og, keys[i]) < 0)
      goto oom;
  }
  if (config_setting_get_member(root, "secret-key-path"))
    config_setting_remove(root, "secret-key-path");
  if (cfgutil_copy_member(root, oroot, "secret-key-path") < 0)
    goto oom;
  rc = cfgutil_seal_write(&cfg, out, err);
  goto out;
oom:
  dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory carrying %s's password over", path);
out:
  config_destroy(&cfg);
  free(text);
  return rc;
}
