/*
 * DM's binlog-filter events of ALTER TABLE clauses (sync_ddl_event.c), no server (issue 23). Before
 * the classifier every ALTER TABLE was "alter table", so a rule naming "drop column" matched
 * nothing. Each case is a statement and the events, in order, the sync judges it by; the names
 * come from dm/syncer/ddl.go AstToDDLEvent (with dmhost's finer names for what DM calls "alter
 * table" or "modify constraint": the host's list maps them back).
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

#include "cunit_run.h"
#include "sync_ddl.h"

typedef struct event_case {
  const char *sql;
  const char *events; /* the events joined by "|" */
} event_case;

static const event_case cases[] = {
    {"ALTER TABLE t DROP COLUMN c", "drop column"},
    {"ALTER TABLE t DROP c", "drop column"},
    {"ALTER TABLE t DROP IF EXISTS c", "drop column"},
    {"ALTER TABLE t ADD COLUMN c INT", "add column"},
    {"ALTER TABLE t ADD c INT NOT NULL DEFAULT 0", "add column"},
    {"ALTER TABLE t ADD (c INT, d INT)", "add column"},
    {"ALTER TABLE `s`.`t` ADD COLUMN c INT, DROP COLUMN d", "add column|drop column"},
    {"ALTER TABLE t ADD INDEX i (a), ADD UNIQUE KEY u (b)", "modify constraint"},
    {"ALTER TABLE t ADD PRIMARY KEY (id)", "add primary key"},
    {"ALTER TABLE t ADD CONSTRAINT pk PRIMARY KEY (id)", "add primary key"},
    {"ALTER TABLE t ADD CONSTRAINT fk FOREIGN KEY (a) REFERENCES p (id)", "add foreign key"},
    {"ALTER TABLE t ADD FOREIGN KEY (a) REFERENCES p (id) ON DELETE CASCADE", "add foreign key"},
    {"ALTER TABLE t ADD CONSTRAINT c CHECK (a > 0)", "modify constraint"},
    {"ALTER TABLE t DROP FOREIGN KEY fk", "drop foreign key"},
    {"ALTER TABLE t DROP PRIMARY KEY", "drop primary key"},
    {"ALTER TABLE t DROP INDEX i", "drop index"},
    {"ALTER TABLE t DROP KEY i", "drop index"},
    {"ALTER TABLE t DROP CONSTRAINT c", "alter table"},
    {"ALTER TABLE t MODIFY c BIGINT", "modify column"},
    {"ALTER TABLE t MODIFY COLUMN c INT FIRST", "modify column"},
    {"ALTER TABLE t CHANGE c d INT", "rename column"},
    {"ALTER TABLE t CHANGE COLUMN `c` C BIGINT", "modify column"},
    {"ALTER TABLE t RENAME COLUMN c TO d", "rename column"},
    {"ALTER TABLE t RENAME INDEX i TO j", "rename index"},
    {"ALTER TABLE t RENAME KEY i TO j", "rename index"},
    {"ALTER TABLE t RENAME TO u", "rename table"},
    {"ALTER TABLE t ALTER COLUMN c SET DEFAULT 3", "modify default value"},
    {"ALTER TABLE t ALTER c DROP DEFAULT", "modify default value"},
    {"ALTER TABLE t ALTER INDEX i IGNORED", "alter index visibility"},
    {"ALTER TABLE t ENGINE = InnoDB", "modify storage engine"},
    {"ALTER TABLE t DEFAULT CHARSET = utf8mb4", "modify charset"},
    {"ALTER TABLE t CHARACTER SET latin1 COLLATE latin1_bin", "modify charset"},
    {"ALTER TABLE t COLLATE = utf8mb4_bin", "modify collation"},
    {"ALTER TABLE t CONVERT TO CHARACTER SET utf8mb4", "modify charset"},
    {"ALTER TABLE t COMMENT = 'x, y'", "modify table comment"},
    {"ALTER TABLE t ROW_FORMAT = DYNAMIC", "alter table"},
    {"ALTER TABLE t FORCE", "alter table"},
    {"ALTER TABLE t", "alter table"},
    {"ALTER TABLE t ALGORITHM = INPLACE, LOCK = NONE, DROP COLUMN c", "drop column"},
    {"ALTER TABLE t ALGORITHM = COPY", "alter table"},
    {"ALTER TABLE t ADD PARTITION (PARTITION p3 VALUES LESS THAN (30))", "add table partition"},
    {"ALTER TABLE t DROP PARTITION p1, p2", "drop table partition"},
    {"ALTER TABLE t TRUNCATE PARTITION p1", "truncate table partition"},
    {"ALTER TABLE t REORGANIZE PARTITION p1 INTO (PARTITION a VALUES LESS THAN (5), PARTITION b "
     "VALUES LESS THAN (10))",
     "reorganize table partition"},
    {"ALTER TABLE t REBUILD PARTITION p1", "rebuild table partition"},
    {"ALTER TABLE t COALESCE PARTITION 2", "coalesce table partition"},
    {"ALTER TABLE t EXCHANGE PARTITION p1 WITH TABLE u", "exchange table partition"},
    {"ALTER TABLE t REMOVE PARTITIONING", "remove table partitioning"},
    {"ALTER TABLE t PARTITION BY HASH (id) PARTITIONS 4", "alter table partitioning"},
    {"ALTER TABLE t DROP COLUMN a, DROP COLUMN b, ADD c INT", "drop column|add column"},
    {"alter table t add column `drop` int /* DROP COLUMN x */", "add column"},
    {"ALTER TABLE t ADD COLUMN c INT DEFAULT ','", "add column"},
};

static void test_alter_events(void) {
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    sync_ddl d;
    char msg[256];
    int rc = sync_ddl_parse(cases[i].sql, strlen(cases[i].sql), "db", &d, msg, sizeof msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_EQUAL_FATAL(d.n, 1);
    const char *ev[SYNC_DDL_EVENTS_MAX];
    int n = sync_ddl_alter_events(&d.stmts[0], ev, SYNC_DDL_EVENTS_MAX);
    char got[512] = "";
    for (int k = 0; k < n; k++)
      snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", k ? "|" : "", ev[k]);
    if (strcmp(got, cases[i].events) != 0)
      fprintf(stderr, "\n  %s: expected %s, got %s\n", cases[i].sql, cases[i].events, got);
    CU_ASSERT_STRING_EQUAL(got, cases[i].events);
    sync_ddl_free(&d);
  }
}

/* Other kinds have no clauses: 0, and the caller names them by sync_ddl_event_name. */
static void test_other_kinds(void) {
  static const char *const sql[] = {"TRUNCATE TABLE t", "DROP TABLE t", "CREATE INDEX i ON t (a)"};
  for (size_t i = 0; i < sizeof sql / sizeof sql[0]; i++) {
    sync_ddl d;
    CU_ASSERT_EQUAL_FATAL(sync_ddl_parse(sql[i], strlen(sql[i]), "db", &d, NULL, 0), 0);
    const char *ev[2];
    CU_ASSERT_EQUAL(sync_ddl_alter_events(&d.stmts[0], ev, 2), 0);
    sync_ddl_free(&d);
  }
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"ALTER TABLE clauses named by DM's events", test_alter_events},
      {"other kinds have no clause events", test_other_kinds},
  };
  return dmh_cunit_run("sync_ddl_event", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
