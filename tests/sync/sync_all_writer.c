/* The writer of the mode-all tests (sync_all_util.h): random multi-statement transactions on the
 * four tables from its own connection, until stopped; held between transactions on request. */
#include <CUnit/Basic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sync_all_util.h"
#include "testdb.h"

unsigned sa_rand(unsigned *s) {
  *s = *s * 1103515245u + 12345u;
  return (*s >> 8) & 0xffffff;
}

/* One statement; false when the server refused it (the transaction is then rolled back). */
static bool sa_q(sa_writer *w, MYSQL *c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static bool sa_q(sa_writer *w, MYSQL *c, const char *fmt, ...) {
  char sql[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(sql, sizeof sql, fmt, ap);
  va_end(ap);
  if (mysql_query(c, sql) != 0) {
    long f = atomic_fetch_add(&w->failed, 1);
    if (f < 5 || mysql_errno(c) != 1062)
      fprintf(stderr, "writer: %s: %s\n", sql, mysql_error(c));
    return false;
  }
  MYSQL_RES *r = mysql_store_result(c);
  if (r)
    mysql_free_result(r);
  long long n = (long long)mysql_affected_rows(c);
  if (n > 0)
    atomic_fetch_add(&w->rows, (long)n);
  return true;
}

/* Two rows' u values of t_uk (locked for the transaction); false if either is missing. */
static bool sa_two_u(MYSQL *c, int a, int b, long long *ua, long long *ub) {
  char q[200];
  snprintf(q, sizeof q, "SELECT id, u FROM t_uk WHERE id IN (%d, %d) FOR UPDATE", a, b);
  if (mysql_query(c, q) != 0)
    return false;
  MYSQL_RES *r = mysql_store_result(c);
  if (!r)
    return false;
  int found = 0;
  MYSQL_ROW row;
  while ((row = mysql_fetch_row(r))) {
    if (atoi(row[0]) == a)
      *ua = atoll(row[1]), found |= 1;
    else
      *ub = atoll(row[1]), found |= 2;
  }
  mysql_free_result(r);
  return found == 3;
}

/* One random statement (or a few that belong together). */
static bool sa_op(sa_writer *w, MYSQL *c, unsigned *s) {
  int x = 1 + (int)(sa_rand(s) % (SA_PK_ROWS + 2000)), y = 1 + (int)(sa_rand(s) % SA_PK_ROWS);
  int r = (int)sa_rand(s);
  unsigned op = sa_rand(s) % 16;
  if ((op == 10 || op == 11) && getenv("SA_WRITER_NO_KEYLESS"))
    op = 14; /* investigation: leave the table without a key alone */
  switch (op) {
  case 0: { /* multi-row insert of new keys */
    int n = 1 + r % 5, id = w->next;
    w->next += n;
    char v[512];
    size_t len = 0;
    for (int i = 0; i < n; i++)
      len += (size_t)snprintf(v + len, sizeof v - len, "%s(%d, %d, 'new-%d', %d.25)", i ? "," : "",
                              id + i, r % 977, r, i);
    return sa_q(w, c, "INSERT INTO t_pk VALUES %s", v);
  }
  case 1: /* value update of a range */
    return sa_q(w, c,
                "UPDATE t_pk SET v = v + 1, s = CONCAT('u', %d, '''') WHERE id BETWEEN %d AND %d",
                r, x, x + r % 20);
  case 2: /* primary key moved to a new value */
    return sa_q(w, c, "UPDATE t_pk SET id = %d WHERE id = %d", w->next++, x);
  case 3: /* primary keys of two rows swapped */
    if (x == y)
      return true;
    return sa_q(w, c, "UPDATE t_pk SET id = %d WHERE id = %d", -x, x) &&
           sa_q(w, c, "UPDATE t_pk SET id = %d WHERE id = %d", x, y) &&
           sa_q(w, c, "UPDATE t_pk SET id = %d WHERE id = %d", y, -x);
  case 4: /* deletes */
    return sa_q(w, c, "DELETE FROM t_pk WHERE id = %d OR id BETWEEN %d AND %d", x, y, y + r % 4);
  case 5: /* a key deleted and inserted again */
    return sa_q(w, c, "DELETE FROM t_pk WHERE id = %d", x) &&
           sa_q(w, c, "INSERT INTO t_pk VALUES (%d, %d, 'again-%d', NULL)", x, r % 100, r);
  case 6: /* unique key table: values */
    return sa_q(w, c, "UPDATE t_uk SET v = v * 3 + %d WHERE id IN (%d, %d, %d)", r % 10,
                x % SA_UK_ROWS, y % SA_UK_ROWS, (x + y) % SA_UK_ROWS);
  case 7: { /* unique key values of two rows swapped */
    int a = 1 + x % SA_UK_ROWS, b = 1 + y % SA_UK_ROWS;
    long long ua, ub;
    if (a == b || !sa_two_u(c, a, b, &ua, &ub))
      return true;
    int tmp = -(w->next++);
    return sa_q(w, c, "UPDATE t_uk SET u = %d WHERE id = %d", tmp, a) &&
           sa_q(w, c, "UPDATE t_uk SET u = %lld WHERE id = %d", ua, b) &&
           sa_q(w, c, "UPDATE t_uk SET u = %lld WHERE id = %d", ub, a);
  }
  case 8: { /* a unique value freed by a delete and taken by a new row */
    int a = 1 + x % SA_UK_ROWS;
    long long ua, ub;
    if (!sa_two_u(c, a, a == 1 ? 2 : 1, &ua, &ub))
      return true;
    int id = w->next++;
    return sa_q(w, c, "DELETE FROM t_uk WHERE id = %d", a) &&
           sa_q(w, c, "INSERT INTO t_uk VALUES (%d, %lld, %d)", id, ua, r % 1000);
  }
  case 9: /* unique key moved to a new value, primary key moved */
    return sa_q(w, c, "UPDATE t_uk SET u = %d WHERE id = %d", w->next++, 1 + x % SA_UK_ROWS) &&
           sa_q(w, c, "UPDATE t_uk SET id = %d WHERE id = %d", w->next++, 1 + y % SA_UK_ROWS);
  case 10: /* no key: inserts (duplicates too), updates and deletes by value */
    return sa_q(w, c, "INSERT INTO t_nokey VALUES (%d, 'nk%d', %d), (%d, 'nk%d', %d)", x % 1000,
                r % 37, r % 5, x % 1000, r % 37, r % 5) &&
           sa_q(w, c, "UPDATE t_nokey SET c = c + 1, b = 'upd' WHERE a = %d", y % 1000);
  case 11:
    return sa_q(w, c, "DELETE FROM t_nokey WHERE a = %d LIMIT %d", x % 1000, 1 + r % 2);
  case 12: /* composite key: a part of the key changed */
    return sa_q(w, c, "UPDATE t_comp SET b = b + 100000 WHERE a = %d AND b = %d", x % 1000, r % 10);
  case 13: /* composite key: rows of one a deleted, new ones inserted */
    return sa_q(w, c, "DELETE FROM t_comp WHERE a = %d", y % 1000) &&
           sa_q(w, c, "INSERT INTO t_comp VALUES (%d, %d, 'n', %d), (%d, %d, 'n2', NULL)", y % 1000,
                w->next, r, y % 1000, w->next + 1) &&
           ((w->next += 2), true);
  case 14:
    return sa_q(w, c, "UPDATE t_comp SET v = CONCAT(v, 'x'), w = w + 1 WHERE a BETWEEN %d AND %d",
                x % 1000, x % 1000 + 3);
  default: /* many rows in one statement */
    return sa_q(w, c, "UPDATE t_pk SET v = v + 1 WHERE id %% 97 = %d AND id < 6000", r % 97);
  }
}

static void *sa_writer_main(void *arg) {
  sa_writer *w = arg;
  MYSQL *c = testdb_connect(TESTDB_SOURCE);
  if (!c)
    return NULL;
  char use[128];
  snprintf(use, sizeof use, "USE `%s`", w->db);
  testdb_exec(c, use);
  unsigned s = w->seed;
  while (!atomic_load(&w->stop)) {
    if (atomic_load(&w->hold)) {
      atomic_store(&w->held, true);
      lt_sleep_ms(2);
      continue;
    }
    atomic_store(&w->held, false);
    bool ok = mysql_query(c, "START TRANSACTION") == 0;
    int n = 1 + (int)(sa_rand(&s) % 5);
    for (int i = 0; ok && i < n; i++)
      ok = sa_op(w, c, &s);
    if (!ok || sa_rand(&s) % 10 == 0) {
      mysql_query(c, "ROLLBACK");
      if (ok)
        atomic_fetch_add(&w->rollbacks, 1);
    } else if (mysql_query(c, "COMMIT") == 0) {
      atomic_fetch_add(&w->commits, 1);
    } else {
      fprintf(stderr, "writer: COMMIT: %s\n", mysql_error(c));
      atomic_fetch_add(&w->failed, 1);
    }
    lt_sleep_ms(1 + (int)(sa_rand(&s) % 3));
  }
  testdb_close(c);
  return NULL;
}

sa_writer sa_w;

void sa_writer_start(sa_writer *w, const char *db, unsigned seed) {
  sa_writer_stop(w);
  memset(w, 0, sizeof *w);
  w->db = db;
  w->seed = seed;
  w->next = 1000000;
  atomic_init(&w->stop, false);
  atomic_init(&w->hold, false);
  atomic_init(&w->held, false);
  w->running = pthread_create(&w->th, NULL, sa_writer_main, w) == 0;
  CU_ASSERT(w->running);
}

bool sa_writer_wait_commits(sa_writer *w, long more, int timeout_ms) {
  long want = atomic_load(&w->commits) + more;
  double end = lt_now() + timeout_ms / 1000.0;
  while (atomic_load(&w->commits) < want && lt_now() < end)
    lt_sleep_ms(20);
  return atomic_load(&w->commits) >= want;
}

void sa_writer_stop(sa_writer *w) {
  if (!w->running)
    return;
  atomic_store(&w->stop, true);
  pthread_join(w->th, NULL);
  w->running = false;
  fprintf(stderr, "writer: %ld commits, %ld rollbacks, %ld refused statements, %ld rows\n",
          atomic_load(&w->commits), atomic_load(&w->rollbacks), atomic_load(&w->failed),
          atomic_load(&w->rows));
  CU_ASSERT(atomic_load(&w->commits) > 100);
}
