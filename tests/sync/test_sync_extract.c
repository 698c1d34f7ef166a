/*
 * Merged keys (issue 22, docs/shard.md "Merged keys and the precheck"), against the real pair: two
 * schemas × two tables of the source routed into one target table whose key includes the route's
 * extract columns (c_source, c_schema, c_table), with the same ids in every shard. Before the
 * extract columns were written, the four shards' `id = 1` were one target row: the rows of one
 * shard overwrote (REPLACE, ON DUPLICATE KEY) or deleted (DELETE .. IN) the others', and a target
 * key NOT NULL on the extract columns refused the rows outright. Each case compares every shard
 * with its part of the target, row by row.
 *
 *  - `orders`: the primary key is the only unique key (compacted changes: grouped DELETE .. IN,
 *    multi-row INSERT, ON DUPLICATE KEY UPDATE), a primary key change included;
 *  - `items`: a second unique key with the extract columns (in-order UPDATE .. WHERE, DELETE);
 *  - `logs`: no key (whole-row matching, DELETE .. LIMIT 1).
 * Each runs in normal and in safe mode (REPLACE, DELETE + REPLACE), and in mode all (the dump's rows
 * go through the load with the extract values, then the sync).
 */
#include <CUnit/Basic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_run.h"
#include "sync_test_util.h"
#include "testdb.h"

static MYSQL *src, *dst;

static const char *const tx_schemas[] = {"tx_shop_a", "tx_shop_b"};
static const char *const tx_tables[] = {"orders", "items", "logs"};

static void tx_drop(void) {
  for (size_t i = 0; i < 2; i++) {
    lt_exec(src, "DROP DATABASE IF EXISTS %s", tx_schemas[i]);
    lt_exec(dst, "DROP DATABASE IF EXISTS %s", tx_schemas[i]);
  }
  lt_exec(dst, "DROP DATABASE IF EXISTS tx_merged");
}

static int suite_init(void) {
  src = lt_source();
  dst = lt_target();
  ts_init(src, dst);
  if (!src || !dst)
    return -1;
  tx_drop();
  return 0;
}

static int suite_clean(void) {
  if (src && dst)
    tx_drop();
  testdb_close(src);
  testdb_close(dst);
  return 0;
}

/* The rows of a query as one text ("a|b|c\n" a row, NULL as "\N"); NULL when it fails. */
static char *tx_rows(MYSQL *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *tx_rows(MYSQL *m, const char *fmt, ...) {
  char q[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(q, sizeof q, fmt, ap);
  va_end(ap);
  MYSQL_RES *r;
  if (mysql_query(m, q) != 0 || !(r = mysql_store_result(m))) {
    fprintf(stderr, "\n  %s: %s\n", q, mysql_error(m));
    return NULL;
  }
  size_t cap = 256, len = 0;
  char *out = malloc(cap);
  out[0] = '\0';
  MYSQL_ROW row;
  unsigned n = mysql_num_fields(r);
  while ((row = mysql_fetch_row(r))) {
    for (unsigned i = 0; i < n; i++) {
      const char *v = row[i] ? row[i] : "\\N";
      while (len + strlen(v) + 2 >= cap)
        out = realloc(out, cap *= 2);
      len += (size_t)sprintf(out + len, "%s%c", v, i + 1 < n ? '|' : '\n');
    }
  }
  mysql_free_result(r);
  return out;
}

/* Every shard of the source equals its part of the merged table, row by row; the merged table has
 * nothing else. */
static bool tx_compare(const char *source_id) {
  bool ok = true;
  for (size_t k = 0; k < sizeof tx_tables / sizeof *tx_tables; k++) {
    long long total = 0;
    const char *cols = strcmp(tx_tables[k], "items") == 0 ? "id, code, v" : "id, v, note";
    for (size_t s = 0; s < 2; s++)
      for (int t = 1; t <= 2; t++) {
        char *a = tx_rows(src, "SELECT %s FROM %s.%s_%d ORDER BY %s", cols, tx_schemas[s],
                          tx_tables[k], t, cols);
        char *b = tx_rows(dst,
                          "SELECT %s FROM tx_merged.%s WHERE c_source = '%s' AND c_schema = '%c' "
                          "AND c_table = '%d' ORDER BY %s",
                          cols, tx_tables[k], source_id, 'a' + (int)s, t, cols);
        if (!a || !b || strcmp(a, b) != 0) {
          fprintf(stderr, "\n  %s.%s_%d:\n--- source\n%s--- target\n%s", tx_schemas[s],
                  tx_tables[k], t, a ? a : "(failed)\n", b ? b : "(failed)\n");
          ok = false;
        }
        total += lt_count(src, "SELECT COUNT(*) FROM %s.%s_%d", tx_schemas[s], tx_tables[k], t);
        free(a);
        free(b);
      }
    long long merged = lt_count(dst, "SELECT COUNT(*) FROM tx_merged.%s", tx_tables[k]);
    if (merged != total) {
      fprintf(stderr, "\n  tx_merged.%s: %lld rows, the shards %lld\n", tx_tables[k], merged,
              total);
      ok = false;
    }
  }
  return ok;
}

/* The source's shards (ids 1..5 in each, the same in every shard) and the merged target tables,
 * keyed by the extract columns too. */
static void tx_setup(void) {
  tx_drop();
  for (size_t s = 0; s < 2; s++) {
    CU_ASSERT_FATAL(lt_exec(src, "CREATE DATABASE %s", tx_schemas[s]) == 0);
    for (int t = 1; t <= 2; t++) {
      const char *d = tx_schemas[s];
      CU_ASSERT(lt_exec(src,
                        "CREATE TABLE %s.orders_%d (id INT PRIMARY KEY, v INT, note VARCHAR(20))",
                        d, t) == 0);
      CU_ASSERT(lt_exec(src,
                        "CREATE TABLE %s.items_%d (id INT PRIMARY KEY, code VARCHAR(8) NOT NULL, "
                        "v INT, UNIQUE KEY (code))",
                        d, t) == 0);
      CU_ASSERT(lt_exec(src, "CREATE TABLE %s.logs_%d (id INT, v INT, note VARCHAR(20))", d, t) ==
                0);
      CU_ASSERT(lt_exec(src,
                        "INSERT INTO %s.orders_%d VALUES (1, 10, 'o1'), (2, 20, 'o2'), (3, 30, "
                        "NULL), (4, 40, 'o4'), (5, 50, 'o5')",
                        d, t) == 0);
      CU_ASSERT(lt_exec(src,
                        "INSERT INTO %s.items_%d VALUES (1, 'c1', 1), (2, 'c2', 2), (3, 'c3', 3)",
                        d, t) == 0);
      CU_ASSERT(lt_exec(src, "INSERT INTO %s.logs_%d VALUES (1, 1, 'x'), (1, 1, 'x'), (2, 2, 'y')",
                        d, t) == 0);
    }
  }
  static const char ext[] = "c_source VARCHAR(64) NOT NULL, c_schema VARCHAR(64) NOT NULL, "
                            "c_table VARCHAR(64) NOT NULL";
  CU_ASSERT_FATAL(lt_exec(dst, "CREATE DATABASE tx_merged") == 0);
  CU_ASSERT(lt_exec(dst,
                    "CREATE TABLE tx_merged.orders (id INT, v INT, note VARCHAR(20), %s, PRIMARY "
                    "KEY (c_source, c_schema, c_table, id))",
                    ext) == 0);
  CU_ASSERT(lt_exec(dst,
                    "CREATE TABLE tx_merged.items (id INT, code VARCHAR(8) NOT NULL, v INT, %s, "
                    "PRIMARY KEY (id, c_table, c_schema, c_source), UNIQUE KEY (c_source, "
                    "c_schema, c_table, code))",
                    ext) == 0);
  CU_ASSERT(
      lt_exec(dst, "CREATE TABLE tx_merged.logs (id INT, v INT, note VARCHAR(20), %s)", ext) == 0);
}

/* The same changes in every shard: updates, deletes, a primary key change, a row deleted and
 * inserted again, one of two equal keyless rows deleted. */
static void tx_write(void) {
  for (size_t s = 0; s < 2; s++)
    for (int t = 1; t <= 2; t++) {
      const char *d = tx_schemas[s];
      CU_ASSERT(
          lt_exec(src, "INSERT INTO %s.orders_%d VALUES (6, 60, 'n6'), (7, 70, 'n7')", d, t) == 0);
      CU_ASSERT(lt_exec(src, "UPDATE %s.orders_%d SET v = v + %d WHERE id <= 3", d, t,
                        (int)s * 100 + t) == 0);
      CU_ASSERT(lt_exec(src, "DELETE FROM %s.orders_%d WHERE id = 4", d, t) == 0);
      CU_ASSERT(lt_exec(src, "UPDATE %s.orders_%d SET id = 50 WHERE id = 5", d, t) == 0);
      CU_ASSERT(lt_exec(src, "DELETE FROM %s.orders_%d WHERE id = 2", d, t) == 0);
      CU_ASSERT(lt_exec(src, "INSERT INTO %s.orders_%d VALUES (2, 222, 'again')", d, t) == 0);
      CU_ASSERT(lt_exec(src, "INSERT INTO %s.items_%d VALUES (4, 'c4', 4)", d, t) == 0);
      CU_ASSERT(
          lt_exec(src, "UPDATE %s.items_%d SET v = v * 10 + %d WHERE id >= 2", d, t, (int)s) == 0);
      CU_ASSERT(lt_exec(src, "UPDATE %s.items_%d SET code = 'c9' WHERE id = 3", d, t) == 0);
      CU_ASSERT(lt_exec(src, "DELETE FROM %s.items_%d WHERE id = 1", d, t) == 0);
      CU_ASSERT(lt_exec(src, "DELETE FROM %s.logs_%d WHERE id = 1 LIMIT 1", d, t) == 0);
      CU_ASSERT(lt_exec(src, "UPDATE %s.logs_%d SET note = 'z' WHERE id = 2", d, t) == 0);
      CU_ASSERT(lt_exec(src, "INSERT INTO %s.logs_%d VALUES (3, 3, NULL)", d, t) == 0);
    }
}

/* One route per table kind, each with the three extract groups. */
static const char tx_routes[] =
    "routes = {\n"
    "  r_orders = { schema-pattern = \"tx_shop_*\"; table-pattern = \"orders_*\";\n"
    "    target-schema = \"tx_merged\"; target-table = \"orders\";\n"
    "    extract-table = { table-regexp = \"^(?:orders|items|logs)_(.*)$\"; target-column = "
    "\"c_table\"; };\n"
    "    extract-schema = { schema-regexp = \"tx_shop_(.*)\"; target-column = \"c_schema\"; };\n"
    "    extract-source = { source-regexp = \"(.*)\"; target-column = \"c_source\"; }; };\n"
    "  r_items = { schema-pattern = \"tx_shop_*\"; table-pattern = \"items_*\";\n"
    "    target-schema = \"tx_merged\"; target-table = \"items\";\n"
    "    extract-source = { source-regexp = \"(.*)\"; target-column = \"c_source\"; };\n"
    "    extract-schema = { schema-regexp = \"tx_shop_(.*)\"; target-column = \"c_schema\"; };\n"
    "    extract-table = { table-regexp = \"_(.*)\"; target-column = \"c_table\"; }; };\n"
    "  r_logs = { schema-pattern = \"tx_shop_*\"; table-pattern = \"logs_*\";\n"
    "    target-schema = \"tx_merged\"; target-table = \"logs\";\n"
    "    extract-table = { table-regexp = \"logs_(.*)\"; target-column = \"c_table\"; };\n"
    "    extract-schema = { schema-regexp = \"tx_shop_(.*)\"; target-column = \"c_schema\"; };\n"
    "    extract-source = { source-regexp = \"(.*)\"; target-column = \"c_source\"; }; };\n"
    "};\n";

/* A task over the shards: mode incremental from the source's current position, or all. */
static int tx_config(lt_env *e, const char *task, const char *mode, const char *sync) {
  char file[256] = "", inst[1024], extra[4096];
  unsigned long pos = 0;
  ts_master(file, &pos, NULL);
  if (strcmp(mode, "all") == 0)
    snprintf(inst, sizeof inst,
             "block-allow-list = \"b\"; route-rules = [\"r_orders\", \"r_items\", \"r_logs\"];");
  else
    snprintf(inst, sizeof inst,
             "block-allow-list = \"b\"; route-rules = [\"r_orders\", \"r_items\", \"r_logs\"]; "
             "meta = { binlog-name = \"%s\"; binlog-pos = %lu; };",
             file, pos);
  snprintf(extra, sizeof extra, "block-allow-list = { b = { do-dbs = [\"tx_shop_*\"]; }; };\n%s",
           tx_routes);
  lt_drop_checkpoint(dst, task);
  lt_exec(dst, "DROP TABLE IF EXISTS dm_meta.`%s_syncer_checkpoint`", task);
  lt_exec(dst, "DROP TABLE IF EXISTS dm_meta.`%s_syncer_xa`", task);
  lt_task t = {.name = task, .mode = mode, .instance = inst, .extra = extra, .sync = sync};
  return lt_config(e, &t);
}

/* Mode incremental: the target starts with the shards' rows copied by hand (with their extract
 * values), then the binlog's changes come through the sync. */
static void tx_run_incremental(const char *task, const char *sync) {
  tx_setup();
  for (size_t k = 0; k < sizeof tx_tables / sizeof *tx_tables; k++)
    for (size_t s = 0; s < 2; s++)
      for (int t = 1; t <= 2; t++) {
        char *rows = tx_rows(src, "SELECT CONCAT_WS(',', QUOTE(id), %s) FROM %s.%s_%d",
                             strcmp(tx_tables[k], "items") == 0 ? "QUOTE(code), QUOTE(v)"
                                                                : "QUOTE(v), QUOTE(note)",
                             tx_schemas[s], tx_tables[k], t);
        CU_ASSERT_PTR_NOT_NULL_FATAL(rows);
        for (char *line = strtok(rows, "\n"); line; line = strtok(NULL, "\n"))
          CU_ASSERT(lt_exec(dst, "INSERT INTO tx_merged.%s VALUES (%s, 'lsrc', '%c', '%d')",
                            tx_tables[k], line, 'a' + (int)s, t) == 0);
        free(rows);
      }
  CU_ASSERT_FATAL(tx_compare("lsrc")); /* the starting point */
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  CU_ASSERT_FATAL(tx_config(&e, task, "incremental", sync) == 0);
  dmh_subtask *st = ts_start(&e);
  CU_ASSERT_FATAL(st != NULL && dmh_subtask_stage(st) == DMH_STAGE_RUNNING);
  tx_write();
  /* the precondition: the shards changed (and so differ from the target) */
  CU_ASSERT_EQUAL(lt_count(src, "SELECT COUNT(*) FROM tx_shop_b.orders_2 WHERE id = 50"), 1);
  CU_ASSERT(ts_catch_up(task, 60000));
  CU_ASSERT(ts_clean_run(st));
  CU_ASSERT(tx_compare("lsrc"));
  ts_stop(st);
  lt_teardown(&e);
}

static void test_sync_merged(void) {
  tx_run_incremental("tx_sync", TS_SYNC);
}

static void test_sync_merged_safe_mode(void) {
  tx_run_incremental("tx_sync_safe", TS_SYNC " safe-mode = true;");
}

/* Without compaction every change of the PK-only table goes in order too. */
static void test_sync_merged_in_order(void) {
  tx_run_incremental("tx_sync_order", TS_SYNC " compact = false;");
}

/* Mode all: the shards' rows go through the dump and the load (each row given its extract values),
 * then the changes through the sync. */
static void test_all_merged(void) {
  tx_setup();
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  CU_ASSERT_FATAL(tx_config(&e, "tx_all", "all", TS_SYNC) == 0);
  dmh_subtask *st = ts_start(&e);
  CU_ASSERT_FATAL(st != NULL && dmh_subtask_stage(st) == DMH_STAGE_RUNNING);
  CU_ASSERT(ts_catch_up("tx_all", 120000)); /* the dump's rows are loaded, the sync runs */
  CU_ASSERT(ts_clean_run(st));
  /* the precondition: the load wrote every shard's rows, told apart by their extract values */
  CU_ASSERT_EQUAL(lt_count(dst, "SELECT COUNT(*) FROM tx_merged.orders"), 20);
  CU_ASSERT(tx_compare("lsrc"));
  tx_write();
  CU_ASSERT(ts_catch_up("tx_all", 60000));
  CU_ASSERT(ts_clean_run(st));
  CU_ASSERT(tx_compare("lsrc"));
  ts_stop(st);
  lt_teardown(&e);
}

/* The load refuses to make a merged table itself (the dump's CREATE TABLE has no extract columns)
 * and one that lacks an extract column, naming it. */
static void test_all_target_lacks_columns(void) {
  tx_setup();
  lt_exec(dst, "DROP TABLE tx_merged.items");
  lt_exec(dst, "ALTER TABLE tx_merged.orders DROP PRIMARY KEY, DROP COLUMN c_source");
  CU_ASSERT_EQUAL_FATAL(lt_count(dst, "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE "
                                      "TABLE_SCHEMA = 'tx_merged' AND TABLE_NAME = 'orders' AND "
                                      "COLUMN_NAME = 'c_source'"),
                        0);
  lt_env e;
  CU_ASSERT_FATAL(lt_init(&e) == 0);
  CU_ASSERT_FATAL(tx_config(&e, "tx_all_bad", "all", TS_SYNC) == 0);
  dmh_subtask *st = ts_start(&e);
  CU_ASSERT_PTR_NOT_NULL_FATAL(st);
  char msg[2048] = "", raw[512];
  bool resumable;
  double end = lt_now() + 60;
  int code = 0;
  while ((code = lt_first_error(st, msg, sizeof msg, raw, sizeof raw, &resumable)) == 0 &&
         lt_now() < end)
    lt_sleep_ms(50);
  CU_ASSERT_EQUAL(code, DM_ERR_LOAD_TABLE_MISMATCH);
  CU_ASSERT(lt_has(msg, "extract columns"));
  CU_ASSERT(lt_has(msg, "c_source") || lt_has(msg, "`tx_merged`.`items`"));
  ts_stop(st);
  lt_teardown(&e);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"merged tables keyed by extract columns", test_sync_merged},
      {"the same in safe mode", test_sync_merged_safe_mode},
      {"the same without compaction", test_sync_merged_in_order},
      {"mode all: the load gives dumped rows their extract values", test_all_merged},
      {"mode all: a target table without the extract columns", test_all_target_lacks_columns},
  };
  return dmh_cunit_run("sync_extract", suite_init, suite_clean, tests,
                       sizeof tests / sizeof tests[0]);
}
