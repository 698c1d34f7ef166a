/* The source's binlog position now (see dmhost/db.h): the one reading of SHOW MASTER STATUS. */
#include <mysql.h>
#include <mysqld_error.h>
#include <stdlib.h>
#include <string.h>

#include "dmhost/db.h"
#include "dmhost/sdk.h"

/* The first column of the one-row answer to `sql` into out: 0, 1 when there is no row (or the
 * value is NULL), -1 when the statement failed (mysql_errno(c) says why). */
static int dm_db_scalar(MYSQL *c, const char *sql, char *out, size_t len) {
  if (mysql_query(c, sql) != 0)
    return -1;
  MYSQL_RES *res = mysql_store_result(c);
  if (!res)
    return -1;
  MYSQL_ROW row = mysql_fetch_row(res);
  int rc = row && row[0] ? 0 : 1;
  if (rc == 0)
    dm_strlcpy(out, row[0], len);
  mysql_free_result(res);
  return rc;
}

int dm_db_master_status(struct st_mysql *c, dm_position *pos) {
  memset(pos, 0, sizeof *pos);
  if (mysql_query(c, "SHOW MASTER STATUS") != 0)
    return -1;
  MYSQL_RES *res = mysql_store_result(c);
  if (!res)
    return -1;
  MYSQL_ROW row = mysql_fetch_row(res);
  if (!row || !row[0] || !row[1]) {
    mysql_free_result(res);
    return 1;
  }
  dm_strlcpy(pos->name, row[0], sizeof pos->name);
  pos->pos = strtoull(row[1], NULL, 10);
  /* MySQL: Executed_Gtid_Set is the fifth column */
  bool mysql_set = mysql_num_fields(res) >= 5 && row[4] && row[4][0];
  if (mysql_set)
    dm_strlcpy(pos->gtid, row[4], sizeof pos->gtid);
  mysql_free_result(res);
  if (mysql_set)
    return 0;
  /* MariaDB: the set of the binlog's last GTIDs, what a replica at this file and position has
   * seen. A server that does not know it (MySQL with GTIDs off: 1193) has no set. */
  if (dm_db_scalar(c, "SELECT @@global.gtid_binlog_pos", pos->gtid, sizeof pos->gtid) < 0) {
    pos->gtid[0] = '\0';
    if (mysql_errno(c) != ER_UNKNOWN_SYSTEM_VARIABLE)
      return -1;
  }
  return 0;
}
