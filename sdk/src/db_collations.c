/* dm_collations_read (dmhost/ddl_collation.h): the source's collations, read once per run. Its
 * own object file: only units that read them pull libmariadb in through it. */
#include <mysql.h>
#include <mysqld_error.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dmhost/db.h"
#include "dmhost/ddl_collation.h"
#include "dmhost/sdk.h"

static int dbc_query(MYSQL *m, const char *q, MYSQL_RES **r) {
  *r = NULL;
  if (mysql_real_query(m, q, strlen(q)) != 0)
    return -1;
  *r = mysql_store_result(m);
  return *r ? 0 : -1;
}

int dm_collations_read(struct st_mysql *m, const char *who, dm_collations **out, dm_error *err) {
  *out = NULL;
  dm_collations *c = dm_collations_new();
  if (!c) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "%s: no memory for the source's collations", who);
    return -1;
  }
  MYSQL_RES *r = NULL;
  MYSQL_ROW row;
  const char *what = "information_schema.COLLATIONS";
  bool oom = false;
  /* MariaDB 10.10+ names every charset's collation there with its id (utf8mb4_uca1400_ai_ci,
   * which COLLATIONS shows only as uca1400_ai_ci without an id); elsewhere (MySQL, older
   * MariaDB: no such column, 1054) COLLATIONS has them all, DM's query */
  if (dbc_query(m,
                "SELECT ID, FULL_COLLATION_NAME, CHARACTER_SET_NAME, IS_DEFAULT FROM "
                "information_schema.COLLATION_CHARACTER_SET_APPLICABILITY",
                &r) != 0) {
    if (mysql_errno(m) != ER_BAD_FIELD_ERROR ||
        dbc_query(m,
                  "SELECT ID, COLLATION_NAME, CHARACTER_SET_NAME, IS_DEFAULT FROM "
                  "information_schema.COLLATIONS",
                  &r) != 0)
      goto failed;
  }
  while (!oom && (row = mysql_fetch_row(r)) != NULL) {
    if (!row[1])
      continue;
    bool is_default = row[3] && strcasecmp(row[3], "yes") == 0;
    oom = dm_collations_add(c, row[0] ? (uint32_t)strtoul(row[0], NULL, 10) : 0, row[1], row[2],
                            is_default) < 0;
  }
  mysql_free_result(r);
  /* what the server's sessions get: the global server collation, and what `utf8` names (MariaDB:
   * utf8mb3 under old_mode UTF8_IS_UTF8MB3, else utf8mb4; MySQL 8: utf8mb3) */
  what = "@@global.collation_server";
  if (oom ||
      dbc_query(m, "SELECT @@global.collation_server, CHARSET(CONVERT('' USING utf8))", &r) != 0)
    goto failed;
  if ((row = mysql_fetch_row(r)) != NULL)
    oom = (row[0] && dm_collations_set_server(c, row[0]) < 0) ||
          (row[1] && dm_collations_set_utf8(c, row[1]) < 0);
  mysql_free_result(r);
  /* MariaDB 11.2+ only: an unknown variable elsewhere (1193) */
  what = "@@global.character_set_collations";
  if (oom)
    goto failed;
  if (dbc_query(m, "SELECT @@global.character_set_collations", &r) == 0) {
    if ((row = mysql_fetch_row(r)) != NULL && row[0])
      oom = dm_collations_set_defaults(c, row[0]) < 0;
    mysql_free_result(r);
  } else if (mysql_errno(m) != ER_UNKNOWN_SYSTEM_VARIABLE) {
    goto failed;
  }
  if (oom)
    goto failed;
  *out = c;
  return 0;
failed:
  dm_collations_free(c);
  if (oom)
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "%s: no memory for the source's collations", who);
  else
    dm_db_error(m, DM_DB_SOURCE, err, DM_ERR_DB_QUERY, "%s: cannot read %s on the source", who,
                what);
  return -1;
}
