/*
 * The join of shard table structures, for optimistic shard DDL (docs/shard.md "Optimistic mode",
 * DM's design dm/docs/RFCS/20191209_optimistic_ddl.md and tidb-tools' schemacmp): pure, no I/O.
 *
 * A structure is a table's columns and indexes as a sync unit's schema tracker reads them from
 * information_schema, carried as JSON in dm_shard_info's `before`/`after`:
 *
 *   {"columns": [{"name": "c", "type": "varchar", "length": 32, "scale": 0, "unsigned": false,
 *                 "nullable": true, "default": "'x'", "charset": "utf8mb4",
 *                 "members": ["a", "b"]}, ...],
 *    "indexes": [{"name": "PRIMARY", "unique": true, "columns": ["id", "c(10)"]}, ...]}
 *
 * `type` is information_schema's DATA_TYPE; `length` the character length (strings), the
 * precision (decimal, bit, float) or absent; `scale` the decimal scale or fractional seconds or
 * absent; `default` is COLUMN_DEFAULT as MariaDB writes it (a string literal quoted, NULL for
 * DEFAULT NULL) and is absent when the column has no default; `members` only for ENUM and SET.
 *
 * The order (RFC "CRDTs": S1 <= S2 when S2 accepts every row S1 accepts): nullable above NOT
 * NULL; a default above none (two different defaults do not join); tinyint < smallint <
 * mediumint < int < bigint of one signedness; char(n) < varchar(n), binary(n) < varbinary(n),
 * lengths grow; tinytext < text < mediumtext < longtext (and the blobs alike); utf8 (utf8mb3) <
 * utf8mb4, other character sets only with themselves; ENUM and SET grow by members appended;
 * every other type only with itself (same length and scale). A column missing in a table is below
 * every definition that accepts rows without it (nullable or with a default); with a NOT NULL
 * column without a default it does not join. Fewer indexes are above more: the join keeps the
 * indexes both have. Column names compare case-insensitively, as the server does.
 *
 * Partially dropped columns (DM's dm/pkg/shardddl/optimism/column.go): a column that some members
 * dropped while the target keeps it for the others. A member that adds it back before the target
 * dropped it is a conflict (DM's checkAddDropColumn: "add column ... that wasn't fully dropped in
 * downstream"), because the target kept the column's values of that member's old rows.
 */
#ifndef DMH_SHARD_JOIN_H
#define DMH_SHARD_JOIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DMH_SJ_NAME_MAX 65 /* a column or index name, 64 characters and the NUL */
#define DMH_SJ_WHY_MAX 512 /* a conflict's message */

typedef struct dmh_sj_column {
  char name[DMH_SJ_NAME_MAX];
  char type[32];  /* DATA_TYPE, lower case */
  int64_t length; /* -1: none */
  int64_t scale;  /* -1: none */
  bool is_unsigned;
  bool nullable;
  char *default_value; /* NULL: no default */
  char charset[33];    /* "": none */
  char **members;      /* ENUM/SET members, in order */
  uint32_t n_members;
} dmh_sj_column;

typedef struct dmh_sj_index {
  char name[DMH_SJ_NAME_MAX];
  bool unique;
  char *columns; /* the index's columns as one text, "id,c(10)": compared as a whole */
} dmh_sj_index;

/* A structure. All of it is owned (dmh_sj_table_free); a zeroed one is the empty table. */
typedef struct dmh_sj_table {
  dmh_sj_column *cols;
  uint32_t n_cols;
  dmh_sj_index *idx;
  uint32_t n_idx;
} dmh_sj_table;

void dmh_sj_table_free(dmh_sj_table *t);
/* A deep copy into *out. 0, or -1 (out of memory; *out is empty). */
int dmh_sj_table_copy(const dmh_sj_table *t, dmh_sj_table *out);
/* Reads the JSON above. 0, or -1 with why (the field that is wrong); *out is empty then. */
int dmh_sj_table_from_json(const char *json, dmh_sj_table *out, char *why, size_t why_len);
/* The JSON above (malloc'd; the caller frees), or NULL when out of memory. */
char *dmh_sj_table_to_json(const dmh_sj_table *t);
/* The column named `name` (case-insensitive), or NULL. */
const dmh_sj_column *dmh_sj_column_find(const dmh_sj_table *t, const char *name);
/* One column's definition as SQL-like text ("varchar(32) NOT NULL DEFAULT 'x'"), for messages. */
void dmh_sj_column_text(const dmh_sj_column *c, char *out, size_t len);

/* Same columns (any order) with the same definitions, and the same indexes. */
bool dmh_sj_equal(const dmh_sj_table *a, const dmh_sj_table *b);

/* The join of a and b into *out (columns in a's order, then b's new ones; a's index order).
 * 0; 1 for a conflict, with why naming the column and the reason; -1 out of memory. *out is
 * empty unless 0. */
int dmh_sj_join(const dmh_sj_table *a, const dmh_sj_table *b, dmh_sj_table *out, char *why,
                size_t why_len);

/* How a compares with b: 0 with *cmp -1 (a < b), 0 (equal) or 1 (a > b); 1 when they are not
 * comparable (their join is neither, or they do not join: why says which column); -1 out of
 * memory. */
int dmh_sj_compare(const dmh_sj_table *a, const dmh_sj_table *b, int *cmp, char *why,
                   size_t why_len);

/* The join of n structures (n >= 1) into *out; same answers as dmh_sj_join, the message naming
 * the index (in tabs) of the first that did not join: *bad_index. */
int dmh_sj_join_all(const dmh_sj_table *const *tabs, size_t n, dmh_sj_table *out, size_t *bad_index,
                    char *why, size_t why_len);

/* The partially dropped columns of one lock: (column, member) pairs. A member is named by the
 * caller as one text (the optimistic lock uses "source`schema`.`table`"). */
typedef struct dmh_sj_dropped {
  struct dmh_sj_dropped_entry {
    char column[DMH_SJ_NAME_MAX];
    char *member;
  } * e;
  size_t n, cap;
} dmh_sj_dropped;

void dmh_sj_dropped_free(dmh_sj_dropped *d);
/* Records that member dropped column (once). 0, or -1 out of memory. */
int dmh_sj_dropped_add(dmh_sj_dropped *d, const char *column, const char *member);
bool dmh_sj_dropped_has(const dmh_sj_dropped *d, const char *column, const char *member);
/* Forgets every member of the column: the target dropped it (or never will: the lock ends). */
void dmh_sj_dropped_clear_column(dmh_sj_dropped *d, const char *column);
/* Forgets a member's entries (it left the lock). */
void dmh_sj_dropped_clear_member(dmh_sj_dropped *d, const char *member);

#endif /* DMH_SHARD_JOIN_H */
