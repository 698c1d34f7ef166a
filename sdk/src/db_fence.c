/*
 * Fencing of checkpoint rows on the target (see dmhost/db.h): the column, the raise at start, and
 * the reason a fenced statement failed.
 */
#include <inttypes.h>
#include <mysql.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmhost/db.h"
#include "dmhost/sdk.h"

_Static_assert(DM_DB_FENCE_CLIENT_FLAGS == CLIENT_FOUND_ROWS, "CLIENT_FOUND_ROWS");
_Static_assert(DM_DB_FENCE_ERRNO == 1242, "ER_SUBQUERY_NO_1_ROW");

#define FENCE_SQL_MAX 2048

/* One statement; its result (if any) stored in *out (NULL: freed). 0, or -1 with *err. */
static int fence_query(MYSQL *c, const char *q, MYSQL_RES **out, const char *who, const char *what,
                       dm_error *err) {
  MYSQL_RES *r = NULL;
  if (mysql_real_query(c, q, (unsigned long)strlen(q)) != 0 ||
      (!(r = mysql_store_result(c)) && mysql_errno(c) != 0)) {
    dm_db_error(c, DM_DB_TARGET, err, DM_ERR_CHECKPOINT, "%s: %s", who, what);
    return -1;
  }
  if (out)
    *out = r;
  else if (r)
    mysql_free_result(r);
  return 0;
}

int dm_db_fence_column(MYSQL *c, const char *schema, const char *table, const char *qualified,
                       const char *who, dm_error *err) {
  char s[2 * 64 + 1], t[2 * 128 + 1], q[FENCE_SQL_MAX];
  if (strlen(schema) > 64 || strlen(table) > 128) {
    dm_error_set(err, DM_ERR_INTERNAL, NULL, "%s: checkpoint table name too long", who);
    return -1;
  }
  mysql_real_escape_string(c, s, schema, (unsigned long)strlen(schema));
  mysql_real_escape_string(c, t, table, (unsigned long)strlen(table));
  snprintf(q, sizeof q,
           "SELECT 1 FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '%s' AND TABLE_NAME = "
           "'%s' AND COLUMN_NAME = 'fence'",
           s, t);
  MYSQL_RES *r;
  if (fence_query(c, q, &r, who, "cannot read the checkpoint table's columns", err) < 0)
    return -1;
  bool has = r && mysql_num_rows(r) > 0;
  if (r)
    mysql_free_result(r);
  if (has)
    return 0;
  if (snprintf(q, sizeof q, "ALTER TABLE %s ADD COLUMN IF NOT EXISTS " DM_DB_FENCE_COLUMN_DEF,
               qualified) >= (int)sizeof q) {
    dm_error_set(err, DM_ERR_INTERNAL, NULL, "%s: checkpoint table name too long", who);
    return -1;
  }
  return fence_query(c, q, NULL, who, "cannot add the fencing column to the checkpoint table", err);
}

/* The lowest and highest token of the rows; false when there is no row. */
static int fence_range(MYSQL *c, const char *qualified, const char *where, uint64_t *lo,
                       uint64_t *hi, bool *any, const char *who, dm_error *err) {
  char q[FENCE_SQL_MAX];
  if (snprintf(q, sizeof q, "SELECT MIN(`fence`), MAX(`fence`) FROM %s WHERE %s", qualified,
               where) >= (int)sizeof q) {
    dm_error_set(err, DM_ERR_INTERNAL, NULL, "%s: checkpoint selection too long", who);
    return -1;
  }
  MYSQL_RES *r;
  if (fence_query(c, q, &r, who, "cannot read the checkpoint's fencing tokens", err) < 0)
    return -1;
  MYSQL_ROW row = r ? mysql_fetch_row(r) : NULL;
  *any = row && row[0] && row[1];
  *lo = *any ? strtoull(row[0], NULL, 10) : 0;
  *hi = *any ? strtoull(row[1], NULL, 10) : 0;
  if (r)
    mysql_free_result(r);
  return 0;
}

static void fence_error(dm_error *err, const char *who, const char *qualified, uint64_t newer,
                        uint64_t token) {
  dm_error_set(err, DM_ERR_FENCED, NULL,
               "%s: fenced off: a newer worker (token %" PRIu64 ") owns this source's checkpoint "
               "in %s; this worker's token is %" PRIu64 ", so it stops and commits nothing more",
               who, newer, qualified, token);
  err->resumable = false;
}

int dm_db_fence_raise(MYSQL *c, const char *qualified, const char *where, uint64_t token,
                      const char *who, dm_error *err) {
  char q[FENCE_SQL_MAX];
  if (snprintf(q, sizeof q, "UPDATE %s SET `fence` = %" PRIu64 " WHERE %s AND `fence` < %" PRIu64,
               qualified, token, where, token) >= (int)sizeof q) {
    dm_error_set(err, DM_ERR_INTERNAL, NULL, "%s: checkpoint selection too long", who);
    return -1;
  }
  /* A row the update did not see (written by a transaction that committed while it ran) is
   * raised by the next round; a stale worker keeps no row from us for long. */
  for (int round = 0; round < 5; round++) {
    uint64_t lo, hi;
    bool any;
    if (fence_query(c, q, NULL, who, "cannot raise the checkpoint's fencing token", err) < 0 ||
        fence_range(c, qualified, where, &lo, &hi, &any, who, err) < 0)
      return -1;
    if (any && hi > token) {
      fence_error(err, who, qualified, hi, token);
      return 1;
    }
    if (!any || lo == token)
      return 0;
  }
  dm_error_set(err, DM_ERR_CHECKPOINT, NULL,
               "%s: the checkpoint rows in %s keep changing under the fencing token %" PRIu64
               ": another worker writes them",
               who, qualified, token);
  return -1;
}

int dm_db_fence_refused(MYSQL *c, const char *qualified, const char *where, uint64_t token,
                        const char *who, dm_error *err) {
  uint64_t lo, hi;
  bool any;
  if (fence_range(c, qualified, where, &lo, &hi, &any, who, err) < 0)
    return -1;
  if (!any || hi <= token)
    return 0;
  fence_error(err, who, qualified, hi, token);
  return 1;
}
