/* dmh_testdb: errors, connections, statements and the client programs; see testdb.h. The
 * checksums and comparisons are in testdb_compare.c. */
#include "testdb.h"

#include <errmsg.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dmhost/sdk.h"
#include "testdb_internal.h"

extern char **environ;

static _Thread_local dm_error testdb_err;

const dm_error *testdb_last_error(void) {
  return &testdb_err;
}

/* Records the error for testdb_last_error() and prints it: a failing test shows why at once. */
void testdb_fail(int32_t code, const char *raw, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  dm_error_vset(&testdb_err, code, raw, fmt, ap);
  va_end(ap);
  fprintf(stderr, "testdb: %s%s%s\n", testdb_err.message, testdb_err.raw_cause[0] ? ": " : "",
          testdb_err.raw_cause);
}

void testdb_fail_query(MYSQL *conn, const char *sql) {
  char raw[DM_ERROR_RAW_MAX];
  snprintf(raw, sizeof raw, "%u (%s): %s", mysql_errno(conn), mysql_sqlstate(conn),
           mysql_error(conn));
  testdb_fail(DM_ERR_DB_QUERY, raw, "statement failed on %s:%u: %.300s%s", conn->host, conn->port,
              sql, strlen(sql) > 300 ? "..." : "");
}

/* ---- a growable string, for SQL and messages ---- */

void testdb_buf_add(testdb_buf *b, const char *s, size_t n) {
  if (b->oom)
    return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 256;
    while (cap < b->len + n + 1)
      cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
      b->oom = 1;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

void testdb_buf_str(testdb_buf *b, const char *s) {
  testdb_buf_add(b, s, strlen(s));
}

void testdb_buf_printf(testdb_buf *b, const char *fmt, ...) {
  char *s = NULL;
  va_list ap;
  va_start(ap, fmt);
  int n = vasprintf(&s, fmt, ap);
  va_end(ap);
  if (n < 0) {
    b->oom = 1;
    return;
  }
  testdb_buf_add(b, s, (size_t)n);
  free(s);
}

/* `name` with backticks doubled: any identifier, whatever it holds. */
void testdb_buf_ident(testdb_buf *b, const char *name) {
  testdb_buf_add(b, "`", 1);
  for (const char *p = name; *p; p++) {
    testdb_buf_add(b, p, 1);
    if (*p == '`')
      testdb_buf_add(b, "`", 1);
  }
  testdb_buf_add(b, "`", 1);
}

/* 'text' escaped for conn's character set. */
void testdb_buf_literal(testdb_buf *b, MYSQL *conn, const char *s) {
  size_t n = strlen(s);
  char *esc = malloc(2 * n + 1);
  if (!esc) {
    b->oom = 1;
    return;
  }
  unsigned long m = mysql_real_escape_string(conn, esc, s, n);
  testdb_buf_add(b, "'", 1);
  testdb_buf_add(b, esc, m);
  testdb_buf_add(b, "'", 1);
  free(esc);
}

int testdb_buf_ok(testdb_buf *b) {
  if (b->oom) {
    testdb_fail(DM_ERR_NO_MEMORY, NULL, "out of memory building a statement");
    return 0;
  }
  if (!b->p)
    testdb_buf_add(b, "", 0);
  return !b->oom;
}

/* ---- connections ---- */

const char *testdb_side_name(testdb_side side) {
  return side == TESTDB_SOURCE ? "source" : side == TESTDB_SOURCE2 ? "source2" : "target";
}

static const char *testdb_env(const char *prefix, const char *name, const char *dflt) {
  char var[64];
  snprintf(var, sizeof var, "%s%s", prefix, name);
  const char *v = getenv(var);
  return v ? v : dflt;
}

int testdb_params_get(testdb_side side, testdb_params *out) {
  if (side == TESTDB_SOURCE2) {
    /* source2's default port follows the source's, as scripts/mariadb.sh picks it */
    testdb_params src;
    if (testdb_params_get(TESTDB_SOURCE, &src) != 0)
      return -1;
    *out = src;
    out->port = src.port + 2;
    const char *port = testdb_env("DMH_SOURCE2_", "PORT", NULL);
    char *end = NULL;
    unsigned long p = port ? strtoul(port, &end, 10) : 0;
    if (port && (end == port || *end || p == 0 || p > 65535)) {
      testdb_fail(DM_ERR_CONFIG_INVALID, port,
                  "DMH_SOURCE2_PORT='%s' is not a port number (1-65535)", port);
      return -1;
    }
    if (port)
      out->port = (unsigned)p;
    return 0;
  }
  const char *prefix = side == TESTDB_SOURCE ? "DMH_SOURCE_" : "DMH_TARGET_";
  dm_strlcpy(out->host, testdb_env(prefix, "HOST", "127.0.0.1"), sizeof out->host);
  dm_strlcpy(out->user, testdb_env(prefix, "USER", "root"), sizeof out->user);
  dm_strlcpy(out->password, testdb_env(prefix, "PASSWORD", ""), sizeof out->password);
  out->port = side == TESTDB_SOURCE ? 13306 : 13307;
  const char *port = testdb_env(prefix, "PORT", NULL);
  if (!port)
    return 0;
  char *end = NULL;
  errno = 0;
  unsigned long p = strtoul(port, &end, 10);
  /* Port 0 would make libmariadb pick 3306: perhaps another server, never ours. */
  if (errno || end == port || *end || p == 0 || p > 65535) {
    testdb_fail(DM_ERR_CONFIG_INVALID, port, "%sPORT='%s' is not a port number (1-65535)", prefix,
                port);
    return -1;
  }
  out->port = (unsigned)p;
  return 0;
}

static MYSQL *testdb_open(const char *what, const char *host, unsigned port, const char *user,
                          const char *password, const char *db) {
  MYSQL *conn = mysql_init(NULL);
  if (!conn) {
    testdb_fail(DM_ERR_NO_MEMORY, NULL, "mysql_init failed: out of memory");
    return NULL;
  }
  unsigned timeout = 5, protocol = MYSQL_PROTOCOL_TCP;
  mysql_options(conn, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
  mysql_options(conn, MYSQL_OPT_PROTOCOL, &protocol);
  mysql_options(conn, MYSQL_SET_CHARSET_NAME, "utf8mb4");
  if (mysql_real_connect(conn, host, user, password, db, port, NULL, CLIENT_MULTI_STATEMENTS))
    return conn;
  char raw[DM_ERROR_RAW_MAX];
  unsigned code = mysql_errno(conn);
  snprintf(raw, sizeof raw, "%u (%s): %s", code, mysql_sqlstate(conn), mysql_error(conn));
  if (code == CR_CONNECTION_ERROR || code == CR_CONN_HOST_ERROR || code == CR_SERVER_LOST ||
      code == CR_SERVER_GONE_ERROR || code == CR_UNKNOWN_HOST)
    testdb_fail(DM_ERR_DB_CONNECT, raw,
                "cannot connect to the %s at %s:%u as %s; if it is not running, run "
                "scripts/mariadb.sh start (in CTest: set FIXTURES_REQUIRED mariadb on the test)",
                what, host, port, user);
  else
    testdb_fail(DM_ERR_DB_CONNECT, raw,
                "the %s at %s:%u refused %s%s%s: check the account (scripts/mariadb.sh creates "
                "root and dmh_limited)",
                what, host, port, user, db ? " for database " : "", db ? db : "");
  mysql_close(conn);
  return NULL;
}

MYSQL *testdb_connect_as(testdb_side side, const char *user, const char *password, const char *db) {
  testdb_params p;
  if (testdb_params_get(side, &p) != 0)
    return NULL;
  return testdb_open(testdb_side_name(side), p.host, p.port, user, password, db);
}

MYSQL *testdb_connect(testdb_side side) {
  testdb_params p;
  if (testdb_params_get(side, &p) != 0)
    return NULL;
  return testdb_open(testdb_side_name(side), p.host, p.port, p.user, p.password, NULL);
}

void testdb_close(MYSQL *conn) {
  if (conn)
    mysql_close(conn);
}

/* A second connection to conn's server: one connection cannot stream two results at once. */
MYSQL *testdb_clone(MYSQL *conn) {
  return testdb_open("server", conn->host, conn->port, conn->user, conn->passwd ? conn->passwd : "",
                     NULL);
}

/* ---- statements ---- */

int testdb_exec(MYSQL *conn, const char *sql) {
  if (mysql_real_query(conn, sql, strlen(sql))) {
    testdb_fail_query(conn, sql);
    return -1;
  }
  for (;;) {
    MYSQL_RES *res = mysql_store_result(conn);
    if (res)
      mysql_free_result(res);
    else if (mysql_field_count(conn) != 0) {
      testdb_fail_query(conn, sql);
      return -1;
    }
    int more = mysql_next_result(conn);
    if (more < 0)
      return 0;
    if (more > 0) {
      testdb_fail_query(conn, sql);
      return -1;
    }
  }
}

int testdb_execf(MYSQL *conn, const char *fmt, ...) {
  char *sql = NULL;
  va_list ap;
  va_start(ap, fmt);
  int n = vasprintf(&sql, fmt, ap);
  va_end(ap);
  if (n < 0) {
    testdb_fail(DM_ERR_NO_MEMORY, NULL, "out of memory formatting a statement");
    return -1;
  }
  int rc = testdb_exec(conn, sql);
  free(sql);
  return rc;
}

/* Reads the rest of a multi-statement call, so the connection can take the next statement. */
void testdb_drain(MYSQL *conn) {
  while (mysql_more_results(conn) && mysql_next_result(conn) == 0) {
    MYSQL_RES *res = mysql_store_result(conn);
    if (res)
      mysql_free_result(res);
  }
}

static int testdb_vquery_value(MYSQL *conn, char *out, size_t len, const char *fmt, va_list ap) {
  if (len)
    out[0] = '\0';
  char *sql = NULL;
  if (vasprintf(&sql, fmt, ap) < 0) {
    testdb_fail(DM_ERR_NO_MEMORY, NULL, "out of memory formatting a statement");
    return -1;
  }
  int rc = -1;
  if (mysql_real_query(conn, sql, strlen(sql))) {
    testdb_fail_query(conn, sql);
    goto out;
  }
  MYSQL_RES *res = mysql_store_result(conn);
  if (!res) {
    if (mysql_field_count(conn) != 0)
      testdb_fail_query(conn, sql);
    else
      testdb_fail(DM_ERR_DB_QUERY, NULL, "statement returned no result set on %s:%u: %.300s",
                  conn->host, conn->port, sql);
    testdb_drain(conn);
    goto out;
  }
  MYSQL_ROW row = mysql_fetch_row(res);
  rc = 1;
  if (row && row[0]) {
    unsigned long n = mysql_fetch_lengths(res)[0];
    if (len) {
      size_t k = n < len - 1 ? n : len - 1;
      memcpy(out, row[0], k);
      out[k] = '\0';
    }
    rc = 0;
  }
  mysql_free_result(res);
  testdb_drain(conn);
out:
  free(sql);
  return rc;
}

int testdb_query_value(MYSQL *conn, char *out, size_t len, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = testdb_vquery_value(conn, out, len, fmt, ap);
  va_end(ap);
  return rc;
}

int testdb_query_int(MYSQL *conn, long long *out, const char *fmt, ...) {
  char value[64];
  *out = 0;
  va_list ap;
  va_start(ap, fmt);
  int rc = testdb_vquery_value(conn, value, sizeof value, fmt, ap);
  va_end(ap);
  if (rc != 0)
    return rc;
  char *end = NULL;
  errno = 0;
  long long v = strtoll(value, &end, 10);
  if (errno || end == value || *end) {
    testdb_fail(DM_ERR_DB_QUERY, value, "testdb_query_int: the value is not an integer (%s:%u)",
                conn->host, conn->port);
    return -1;
  }
  *out = v;
  return 0;
}

int testdb_recreate_db(MYSQL *conn, const char *db) {
  /* One statement per call: the caller's connection may not allow several. */
  testdb_buf drop = {0}, create = {0};
  testdb_buf_str(&drop, "DROP DATABASE IF EXISTS ");
  testdb_buf_ident(&drop, db);
  testdb_buf_str(&create, "CREATE DATABASE ");
  testdb_buf_ident(&create, db);
  int rc = -1;
  if (testdb_buf_ok(&drop) && testdb_buf_ok(&create) && testdb_exec(conn, drop.p) == 0)
    rc = testdb_exec(conn, create.p);
  free(drop.p);
  free(create.p);
  return rc;
}

/* ---- client programs ---- */

/* argv for a client program of the MariaDB suite against conn's server. */
typedef struct testdb_argv {
  char *v[24];
  int n;
} testdb_argv;

static void testdb_argv_add(testdb_argv *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void testdb_argv_add(testdb_argv *a, const char *fmt, ...) {
  if (a->n >= (int)(sizeof a->v / sizeof a->v[0]) - 1)
    return;
  va_list ap;
  va_start(ap, fmt);
  if (vasprintf(&a->v[a->n], fmt, ap) >= 0)
    a->n++;
  va_end(ap);
  a->v[a->n] = NULL;
}

static void testdb_argv_client(testdb_argv *a, const char *prog, MYSQL *conn) {
  a->n = 0;
  testdb_argv_add(a, "%s", prog);
  /* /etc/mysql and ~/.my.cnf may name another server's socket or options the tests do not want. */
  testdb_argv_add(a, "--no-defaults");
  testdb_argv_add(a, "--protocol=tcp");
  testdb_argv_add(a, "--host=%s", conn->host);
  testdb_argv_add(a, "--port=%u", conn->port);
  testdb_argv_add(a, "--user=%s", conn->user);
  if (conn->passwd && conn->passwd[0])
    testdb_argv_add(a, "--password=%s", conn->passwd);
}

static void testdb_argv_free(testdb_argv *a) {
  for (int i = 0; i < a->n; i++)
    free(a->v[i]);
  a->n = 0;
}

/*
 * Runs first (stdin from in_fd, or /dev/null when -1), its stdout into second's stdin when second
 * is given (else to /dev/null); collects the stderr of both into errbuf. Returns 0 when every
 * program exited with 0, else -1 with the error recorded (what names the job in the message).
 */
static int testdb_run(char *const *first, int in_fd, char *const *second, const char *what) {
  int errpipe[2] = {-1, -1}, datapipe[2] = {-1, -1}, devnull = -1, rc = -1;
  pid_t pids[2] = {-1, -1};
  char errbuf[DM_ERROR_RAW_MAX] = "";
  size_t errlen = 0;
  posix_spawn_file_actions_t fa[2];
  int fa_init[2] = {0, 0};

  devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (devnull < 0 || pipe2(errpipe, O_CLOEXEC) != 0 ||
      (second && pipe2(datapipe, O_CLOEXEC) != 0)) {
    testdb_fail(DM_ERR_IO, strerror(errno), "%s: cannot create pipes", what);
    goto out;
  }
  char *const *argvs[2] = {first, second};
  int failed = 0;
  for (int i = 0; i < 2 && argvs[i]; i++) {
    posix_spawn_file_actions_init(&fa[i]);
    fa_init[i] = 1;
    int in = i == 0 ? (in_fd >= 0 ? in_fd : devnull) : datapipe[0];
    int outfd = i == 0 && second ? datapipe[1] : devnull;
    posix_spawn_file_actions_adddup2(&fa[i], in, 0);
    posix_spawn_file_actions_adddup2(&fa[i], outfd, 1);
    posix_spawn_file_actions_adddup2(&fa[i], errpipe[1], 2);
    int e = posix_spawnp(&pids[i], argvs[i][0], &fa[i], NULL, argvs[i], environ);
    if (e != 0) {
      pids[i] = -1;
      testdb_fail(DM_ERR_IO, strerror(e),
                  "%s: cannot run %s; install mariadb-client (scripts/deps.sh)", what, argvs[i][0]);
      failed = 1;
      break;
    }
  }
  /* Only the children may keep the pipes' write ends, or the reads below never see EOF. */
  close(errpipe[1]);
  errpipe[1] = -1;
  if (datapipe[0] >= 0) {
    close(datapipe[0]);
    close(datapipe[1]);
    datapipe[0] = datapipe[1] = -1;
  }
  char chunk[4096];
  ssize_t n;
  while ((n = read(errpipe[0], chunk, sizeof chunk)) != 0) {
    if (n < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    size_t k = (size_t)n;
    if (k > sizeof errbuf - 1 - errlen)
      k = sizeof errbuf - 1 - errlen;
    memcpy(errbuf + errlen, chunk, k);
    errlen += k;
    errbuf[errlen] = '\0';
  }
  while (errlen && (errbuf[errlen - 1] == '\n' || errbuf[errlen - 1] == '\r'))
    errbuf[--errlen] = '\0';
  for (int i = 0; i < 2; i++) {
    if (pids[i] <= 0)
      continue;
    int status = 0;
    while (waitpid(pids[i], &status, 0) < 0 && errno == EINTR)
      ;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      if (!failed)
        testdb_fail(DM_ERR_IO, errbuf, "%s: %s %s %d", what, argvs[i][0],
                    WIFEXITED(status) ? "exited with status" : "was killed by signal",
                    WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
      failed = 1;
    }
  }
  if (!failed)
    rc = 0;
out:
  for (int i = 0; i < 2; i++)
    if (fa_init[i])
      posix_spawn_file_actions_destroy(&fa[i]);
  int fds[] = {devnull, errpipe[0], errpipe[1], datapipe[0], datapipe[1]};
  for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
    if (fds[i] >= 0)
      close(fds[i]);
  return rc;
}

static int testdb_exec_fd(MYSQL *conn, int fd, const char *path, const char *db) {
  testdb_argv a;
  testdb_argv_client(&a, "mariadb", conn);
  testdb_argv_add(&a, "--default-character-set=utf8mb4");
  if (db)
    testdb_argv_add(&a, "--database=%s", db);
  char what[PATH_MAX + 64];
  snprintf(what, sizeof what, "loading %s into %s:%u", path, conn->host, conn->port);
  int rc = testdb_run(a.v, fd, NULL, what);
  testdb_argv_free(&a);
  return rc;
}

int testdb_exec_file(MYSQL *conn, const char *path, const char *db) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    testdb_fail(DM_ERR_IO, strerror(errno), "cannot open SQL file %s", path);
    return -1;
  }
  int rc = testdb_exec_fd(conn, fd, path, db);
  close(fd);
  return rc;
}

int testdb_exec_file_renaming(MYSQL *conn, const char *path, const char *from, const char *to) {
  FILE *in = fopen(path, "re");
  if (!in) {
    testdb_fail(DM_ERR_IO, strerror(errno), "cannot open SQL file %s", path);
    return -1;
  }
  testdb_buf text = {0}, out = {0};
  char chunk[8192];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, in)) > 0)
    testdb_buf_add(&text, chunk, n);
  int read_error = ferror(in);
  fclose(in);
  int rc = -1, fd = -1;
  if (read_error) {
    testdb_fail(DM_ERR_IO, NULL, "cannot read SQL file %s", path);
    goto out;
  }
  if (!testdb_buf_ok(&text))
    goto out;
  size_t from_len = strlen(from);
  for (const char *p = text.p, *hit; *p; p = hit + from_len) {
    hit = from_len ? strstr(p, from) : NULL;
    if (!hit) {
      testdb_buf_str(&out, p);
      break;
    }
    testdb_buf_add(&out, p, (size_t)(hit - p));
    testdb_buf_str(&out, to);
  }
  if (!testdb_buf_ok(&out))
    goto out;
  /* An unlinked temp file: nothing is left behind, whatever happens to the test. */
  const char *dir = getenv("TMPDIR");
  char tmp[PATH_MAX];
  snprintf(tmp, sizeof tmp, "%s/testdb-sql-XXXXXX", dir && *dir ? dir : "/tmp");
  fd = mkostemp(tmp, O_CLOEXEC);
  if (fd < 0) {
    testdb_fail(DM_ERR_IO, strerror(errno), "cannot create a temp file like %s", tmp);
    goto out;
  }
  unlink(tmp);
  for (size_t done = 0; done < out.len;) {
    ssize_t w = write(fd, out.p + done, out.len - done);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      testdb_fail(DM_ERR_IO, strerror(errno), "cannot write the temp file for %s", path);
      goto out;
    }
    done += (size_t)w;
  }
  lseek(fd, 0, SEEK_SET);
  rc = testdb_exec_fd(conn, fd, path, NULL);
out:
  if (fd >= 0)
    close(fd);
  free(text.p);
  free(out.p);
  return rc;
}

int testdb_load_all_types(MYSQL *conn, const char *db) {
  return testdb_exec_file_renaming(conn, DMH_TESTDB_SQL_DIR "/all-types.sql", "types_db", db);
}

int testdb_copy_db(MYSQL *src, MYSQL *dst, const char *db) {
  testdb_argv dump, load;
  testdb_argv_client(&dump, "mariadb-dump", src);
  testdb_argv_add(&dump, "--single-transaction");
  testdb_argv_add(&dump, "--hex-blob");
  testdb_argv_add(&dump, "--databases");
  testdb_argv_add(&dump, "%s", db);
  testdb_argv_client(&load, "mariadb", dst);
  char what[512];
  snprintf(what, sizeof what, "copying database %s from %s:%u to %s:%u", db, src->host, src->port,
           dst->host, dst->port);
  int rc = testdb_run(dump.v, -1, load.v, what);
  testdb_argv_free(&dump);
  testdb_argv_free(&load);
  return rc;
}
