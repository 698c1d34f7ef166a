/*
 * The SDK's transaction tracker (sdk/src/binlog_trx.c) on real MariaDB bytes
 * (tests/fixtures/mariadb-trx, its README says how the file was made): plain XID commits, a
 * non-transactional group ending in COMMIT, a BEGIN ... ROLLBACK group, SAVEPOINT and ROLLBACK TO
 * inside a committed transaction, DDL, XA PREPARE then XA COMMIT and XA ROLLBACK in groups of
 * their own; and a group with row events ending in ROLLBACK, put together from the file's events.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_run.h"
#include "dmhost/binlog.h"
#include "dmhost/binlog_trx.h"

/* One letter per step, so a file's whole reading is one string. */
static char step_letter(dm_binlog_trx_step s) {
  return "OBICRSPXY"[s];
}

/* One event of the fixture, copied out of the reader. */
typedef struct trx_ev {
  uint8_t *raw;
  uint32_t len;
  uint64_t offset;
} trx_ev;

static trx_ev evs[64];
static int n_evs;
static dm_binlog_format fmt;

static int trx_setup(void) {
  dm_binlog_reader *r;
  dm_error err;
  if (dm_binlog_reader_open_file(&r, TRX_FIXTURE, NULL, &err) < 0) {
    fprintf(stderr, "%s\n", err.message);
    return -1;
  }
  dm_binlog_event ev;
  while (dm_binlog_reader_next(r, &ev, &err) == 1 && n_evs < 64) {
    evs[n_evs].raw = malloc(ev.raw_len);
    memcpy(evs[n_evs].raw, ev.raw, ev.raw_len);
    evs[n_evs].len = ev.raw_len;
    evs[n_evs].offset = ev.offset;
    n_evs++;
  }
  fmt = *dm_binlog_reader_format(r);
  dm_binlog_reader_close(r);
  return n_evs > 0 ? 0 : -1;
}

static int trx_teardown(void) {
  for (int i = 0; i < n_evs; i++)
    free(evs[i].raw);
  return 0;
}

/* Feeds fixture event i, decoding GTID and QUERY events as a unit does. */
static dm_binlog_trx_step trx_feed(dm_binlog_trx *t, int i) {
  dm_binlog_event ev;
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dm_binlog_event_from_bytes(evs[i].raw, evs[i].len, &fmt, true,
                                                   "mysql-bin.000001", evs[i].offset, &ev, &err),
                        0);
  dm_binlog_gtid g;
  dm_binlog_query q;
  const dm_binlog_gtid *gp = NULL;
  const dm_binlog_query *qp = NULL;
  if (ev.header.type == DM_BINLOG_GTID && dm_binlog_decode_gtid(&fmt, &ev, &g, &err) == 0)
    gp = &g;
  if (ev.header.type == DM_BINLOG_QUERY && dm_binlog_decode_query(&fmt, &ev, &q, &err) == 0)
    qp = &q;
  return dm_binlog_trx_feed(t, &ev, gp, qp);
}

/* The index of the event at `offset` (the README's mariadb-binlog listing). */
static int trx_at(uint64_t offset) {
  for (int i = 0; i < n_evs; i++)
    if (evs[i].offset == offset)
      return i;
  CU_FAIL_FATAL("no event at that offset");
  return -1;
}

static void test_fixture(void) {
  dm_binlog_trx t = {0};
  char got[80] = "";
  uint64_t ended_seq[16];
  dm_binlog_trx_step ended[16];
  int n_ended = 0;
  for (int i = 0; i < n_evs && i < 79; i++) {
    uint64_t seq = t.seq;
    dm_binlog_trx_step s = trx_feed(&t, i);
    got[i] = step_letter(s);
    got[i + 1] = '\0';
    if (s != DM_BINLOG_TRX_OUTSIDE && dm_binlog_trx_boundary(s) && n_ended < 16) {
      ended_seq[n_ended] = seq;
      ended[n_ended++] = s;
    }
  }
  /* format description, GTID list, 2 checkpoints; 2 DDL; XID; COMMIT; ROLLBACK; the savepoint
   * transaction (ROLLBACK TO is inside it); XA PREPARE, XA COMMIT, XA PREPARE, XA ROLLBACK;
   * ROTATE */
  /* MariaDB writes no BEGIN query: the GTID event is the group's BEGIN */
  static const char want_steps[] = "OOOO"   /* format description, GTID list, 2 checkpoints */
                                   "BS"     /* 0-1-185: CREATE TABLE */
                                   "BS"     /* 0-1-186: CREATE TABLE */
                                   "BIIIC"  /* 0-1-187: annotation, map, rows, XID */
                                   "BIIIC"  /* 0-1-188: annotation, map, rows, COMMIT */
                                   "BIIR"   /* 0-1-189: 2 statements, ROLLBACK */
                                   "BIIIIC" /* 0-1-190: SAVEPOINT and ROLLBACK TO inside, XID */
                                   "BIIIIP" /* 0-1-191: rows, XA END, XA_PREPARE */
                                   "BX"     /* 0-1-192: XA COMMIT */
                                   "BIIIIP" /* 0-1-193 */
                                   "BY"     /* 0-1-194: XA ROLLBACK */
                                   "O";     /* ROTATE */
  CU_ASSERT_STRING_EQUAL(got, want_steps);
  if (strcmp(got, want_steps) != 0)
    fprintf(stderr, "steps: %s\n", got);
  /* each group's end names its own GTID, and says whether it committed */
  static const struct {
    uint64_t seq;
    dm_binlog_trx_step step;
    bool committed;
  } want[] = {
      {185, DM_BINLOG_TRX_STATEMENT, true},   {186, DM_BINLOG_TRX_STATEMENT, true},
      {187, DM_BINLOG_TRX_COMMIT, true},      {188, DM_BINLOG_TRX_COMMIT, true},
      {189, DM_BINLOG_TRX_ROLLBACK, false},   {190, DM_BINLOG_TRX_COMMIT, true},
      {191, DM_BINLOG_TRX_XA_PREPARE, false}, {192, DM_BINLOG_TRX_XA_COMMIT, true},
      {193, DM_BINLOG_TRX_XA_PREPARE, false}, {194, DM_BINLOG_TRX_XA_ROLLBACK, false},
  };
  CU_ASSERT_EQUAL_FATAL(n_ended, 10);
  for (int i = 0; i < 10; i++) {
    CU_ASSERT_EQUAL(ended_seq[i], want[i].seq);
    CU_ASSERT_EQUAL(ended[i], want[i].step);
    CU_ASSERT_EQUAL(dm_binlog_trx_committed(ended[i]), want[i].committed);
  }
  CU_ASSERT_FALSE(t.in_trx);
}

/* The group with row events that ends in ROLLBACK, as MariaDB writes it when the row format is
 * not forced (or a replica of a statement-format source logs it): 0-1-188's GTID event (not
 * flagged transactional), annotation, map and rows, then 0-1-189's ROLLBACK. */
static void test_rows_rolled_back(void) {
  dm_binlog_trx t = {0};
  int gtid = trx_at(972), annotate = trx_at(1014), map = trx_at(1067), rows = trx_at(1124),
      rollback = trx_at(1463);
  CU_ASSERT_EQUAL(trx_feed(&t, gtid), DM_BINLOG_TRX_BEGIN);
  CU_ASSERT_TRUE(t.has_gtid && t.seq == 188 && !(t.flags & DM_BINLOG_GTID_TRANSACTIONAL));
  CU_ASSERT_EQUAL(trx_feed(&t, annotate), DM_BINLOG_TRX_INSIDE);
  CU_ASSERT_EQUAL(trx_feed(&t, map), DM_BINLOG_TRX_INSIDE);
  CU_ASSERT_EQUAL(trx_feed(&t, rows), DM_BINLOG_TRX_INSIDE);
  dm_binlog_trx_step s = trx_feed(&t, rollback);
  CU_ASSERT_EQUAL(s, DM_BINLOG_TRX_ROLLBACK);
  CU_ASSERT_TRUE(dm_binlog_trx_boundary(s));
  CU_ASSERT_FALSE(dm_binlog_trx_committed(s));
  CU_ASSERT_FALSE(t.in_trx);
  CU_ASSERT_STRING_EQUAL(dm_binlog_trx_step_name(s), "ROLLBACK");
}

/* Outside any group (a stream read from the middle of one): a statement is a group of its own,
 * ROLLBACK ends nothing open, ROLLBACK TO is no ROLLBACK. */
static void test_outside(void) {
  dm_binlog_trx t = {0};
  int gtid = trx_at(1235), insert_i = trx_at(1277), rollback = trx_at(1463),
      rollback_to = trx_at(1838);
  CU_ASSERT_EQUAL(trx_feed(&t, insert_i), DM_BINLOG_TRX_STATEMENT);
  CU_ASSERT_EQUAL(trx_feed(&t, rollback_to), DM_BINLOG_TRX_STATEMENT);
  CU_ASSERT_EQUAL(trx_feed(&t, rollback), DM_BINLOG_TRX_ROLLBACK);
  CU_ASSERT_FALSE(t.in_trx);
  /* reset: the open group is forgotten, the next event read at a boundary */
  CU_ASSERT_EQUAL(trx_feed(&t, gtid), DM_BINLOG_TRX_BEGIN);
  CU_ASSERT_EQUAL(trx_feed(&t, insert_i), DM_BINLOG_TRX_INSIDE);
  dm_binlog_trx_reset(&t);
  CU_ASSERT_EQUAL(trx_feed(&t, insert_i), DM_BINLOG_TRX_STATEMENT);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"a MariaDB file: commits, ROLLBACK, savepoints, DDL, XA", test_fixture},
      {"row events ending in ROLLBACK", test_rows_rolled_back},
      {"outside a group: statements, ROLLBACK, ROLLBACK TO", test_outside},
  };
  return dmh_cunit_run("binlog_trx", trx_setup, trx_teardown, tests,
                       sizeof tests / sizeof tests[0]);
}
