/*
 * The relay's crash recovery (plugins/relay/relay_file.c) on files built here, no server: a real
 * MariaDB binlog (tests/binlog/corpus) followed by 1.5 MB of filler events, relay.meta at its end.
 *   - it starts from relay.meta's position: damage far before it (outside the 1 MiB window) is not
 *     read, the file is kept whole;
 *   - damage inside the window, a relay.meta position that is not an event boundary, a file
 *     shorter than relay.meta: the whole file is read and cut at the last boundary before;
 *   - an incomplete transaction after relay.meta's position is cut off, the GTID set kept.
 */
#include <CUnit/Basic.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cunit_run.h"
#include "dmhost/binlog.h"
#include "dmhost/sdk.h"
#include "relay_internal.h"

#define REC_FILE "mysql-bin.000007"
#define REC_PREFIX 11639 /* the corpus file up to its ROTATE: ends at a transaction boundary */
#define REC_FILLER 1000
#define REC_FILLERS 1500

static char rec_dir[64];
static char rec_path[128];
static uint64_t rec_size;

static void rec_build(void) {
  FILE *in = fopen(CORPUS_DIR "/mariadb-all-types.bin", "rb");
  CU_ASSERT_PTR_NOT_NULL_FATAL(in);
  unsigned char *buf = malloc(REC_PREFIX);
  CU_ASSERT_FATAL(buf && fread(buf, 1, REC_PREFIX, in) == REC_PREFIX);
  fclose(in);
  FILE *out = fopen(rec_path, "wb");
  CU_ASSERT_PTR_NOT_NULL_FATAL(out);
  CU_ASSERT_EQUAL(fwrite(buf, 1, REC_PREFIX, out), REC_PREFIX);
  unsigned char ev[REC_FILLER];
  uint64_t at = REC_PREFIX;
  int written = 0;
  for (int i = 0; i < REC_FILLERS; i++, at += REC_FILLER) {
    relay_ev_filler(ev, REC_FILLER, (uint32_t)at, 1, true);
    written += fwrite(ev, 1, REC_FILLER, out) == REC_FILLER;
  }
  CU_ASSERT_EQUAL(written, REC_FILLERS);
  CU_ASSERT_EQUAL(fclose(out), 0);
  free(buf);
  rec_size = at;
}

static void rec_flip(uint64_t off) {
  int fd = open(rec_path, O_RDWR);
  CU_ASSERT_FATAL(fd >= 0);
  unsigned char b;
  CU_ASSERT_EQUAL(pread(fd, &b, 1, (off_t)off), 1);
  b ^= 0x5a;
  CU_ASSERT_EQUAL(pwrite(fd, &b, 1, (off_t)off), 1);
  close(fd);
}

static uint64_t rec_file_size(void) {
  struct stat sb;
  return stat(rec_path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
}

static int rec_recover(uint64_t pos, relay_meta *m, char *note, size_t note_len) {
  memset(m, 0, sizeof *m);
  dm_strlcpy(m->binlog_name, REC_FILE, sizeof m->binlog_name);
  m->binlog_pos = pos;
  dm_strlcpy(m->binlog_gtid, "0-1-100", sizeof m->binlog_gtid);
  dm_error err;
  int rc = relay_file_recover(rec_dir, m, note, note_len, &err);
  if (rc < 0)
    fprintf(stderr, "recover: %s\n", err.message);
  return rc;
}

static int rec_setup(void) {
  snprintf(rec_dir, sizeof rec_dir, "/tmp/dmh-relay-rec-XXXXXX");
  if (!mkdtemp(rec_dir))
    return -1;
  snprintf(rec_path, sizeof rec_path, "%s/%s", rec_dir, REC_FILE);
  return 0;
}

static int rec_teardown(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", rec_dir);
  return system(cmd) == 0 ? 0 : -1;
}

/* Damage 1.4 MB before relay.meta's position: the fast way does not read it; the whole-file way
 * would have cut the file there. */
static void test_starts_at_meta(void) {
  rec_build();
  rec_flip(REC_PREFIX + 100 * REC_FILLER + 50);
  relay_meta m;
  char note[1024];
  CU_ASSERT_EQUAL(rec_recover(rec_size, &m, note, sizeof note), 0);
  CU_ASSERT_EQUAL(m.binlog_pos, rec_size);
  CU_ASSERT_STRING_EQUAL(m.binlog_gtid, "0-1-100");
  CU_ASSERT_STRING_EQUAL(note, "");
  CU_ASSERT_EQUAL(rec_file_size(), rec_size);
}

/* Damage 200 bytes before relay.meta's position (the damaged-file test of test_relay): found in
 * the window, the whole file is read, cut before the damaged event. */
static void test_damage_in_window(void) {
  rec_build();
  uint64_t damaged_event = rec_size - REC_FILLER;
  rec_flip(rec_size - 200);
  relay_meta m;
  char note[1024];
  CU_ASSERT_EQUAL(rec_recover(rec_size, &m, note, sizeof note), 0);
  CU_ASSERT_EQUAL(m.binlog_pos, damaged_event);
  CU_ASSERT_EQUAL(rec_file_size(), damaged_event);
  CU_ASSERT_PTR_NOT_NULL(strstr(note, "checksum mismatch"));
  CU_ASSERT_PTR_NOT_NULL(strstr(note, "truncated to the last complete transaction"));
}

/* A transaction cut after relay.meta's position (half an event written): cut back to the
 * position, relay.meta's GTID set kept. */
static void test_incomplete_tail(void) {
  rec_build();
  uint64_t meta = rec_size - 3 * REC_FILLER;
  CU_ASSERT_EQUAL(truncate(rec_path, (off_t)(rec_size - REC_FILLER / 2)), 0);
  relay_meta m;
  char note[1024];
  CU_ASSERT_EQUAL(rec_recover(meta, &m, note, sizeof note), 0);
  /* the fillers after meta are whole events outside any group: boundaries */
  CU_ASSERT_EQUAL(m.binlog_pos, rec_size - REC_FILLER);
  CU_ASSERT_EQUAL(rec_file_size(), rec_size - REC_FILLER);
  CU_ASSERT_STRING_EQUAL(m.binlog_gtid, "0-1-100");
  CU_ASSERT_PTR_NOT_NULL(strstr(note, "incomplete"));
}

/* relay.meta's position inside an event: the window does not end on an event end, the whole file
 * is read and cut at the event's start. */
static void test_meta_not_a_boundary(void) {
  rec_build();
  uint64_t inside = rec_size - REC_FILLER + 300;
  relay_meta m;
  char note[1024];
  CU_ASSERT_EQUAL(rec_recover(inside, &m, note, sizeof note), 0);
  CU_ASSERT_EQUAL(m.binlog_pos, rec_size - REC_FILLER);
  CU_ASSERT_EQUAL(rec_file_size(), rec_size - REC_FILLER);
  CU_ASSERT_PTR_NOT_NULL(strstr(note, "falls inside the event"));
}

/* A file shorter than relay.meta's position (its tail lost with the machine): the whole file. */
static void test_file_shorter_than_meta(void) {
  rec_build();
  uint64_t cut = rec_size - 5 * REC_FILLER - 10;
  CU_ASSERT_EQUAL(truncate(rec_path, (off_t)cut), 0);
  relay_meta m;
  char note[1024];
  CU_ASSERT_EQUAL(rec_recover(rec_size, &m, note, sizeof note), 0);
  CU_ASSERT_EQUAL(m.binlog_pos, rec_size - 6 * REC_FILLER);
  CU_ASSERT_EQUAL(rec_file_size(), rec_size - 6 * REC_FILLER);
}

/* A window start inside an event (relay.meta far into the file): the check finds the next event
 * start by itself and the fast way is taken. */
static void test_window_resyncs(void) {
  rec_build();
  /* damage just before the window: outside it, so not read */
  uint64_t meta = rec_size;
  rec_flip(meta - RELAY_RECOVER_WINDOW - 10);
  relay_meta m;
  char note[1024];
  CU_ASSERT_EQUAL(rec_recover(meta, &m, note, sizeof note), 0);
  CU_ASSERT_EQUAL(m.binlog_pos, meta);
  CU_ASSERT_STRING_EQUAL(note, "");
  CU_ASSERT_EQUAL(rec_file_size(), rec_size);
}

/* Issue 12: a MySQL 8 relay file with compressed transactions (tests/fixtures/mysql8: GTID +
 * TRANSACTION_PAYLOAD, the payload holding BEGIN ... XID), its last transaction cut. Before, a
 * payload never ended its transaction for the relay: recovery cut the file back to the last plain
 * XID (the end of GTID :8), dropping the complete payload transaction :9 after it. */
static void test_mysql8_payloads(void) {
  char path[256];
  snprintf(path, sizeof path, "%s/mysql-bin.000001", rec_dir);
  uint64_t base = 0, more = 0;
  FILE *out = fopen(path, "wb");
  CU_ASSERT_PTR_NOT_NULL_FATAL(out);
  const char *parts[2] = {MYSQL8_FIXTURE, MYSQL8_FIXTURE "-more"};
  for (int i = 0; i < 2; i++) {
    FILE *in = fopen(parts[i], "rb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(in);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0) {
      CU_ASSERT_EQUAL(fwrite(buf, 1, n, out), n);
      *(i ? &more : &base) += n;
    }
    fclose(in);
  }
  CU_ASSERT_EQUAL_FATAL(fclose(out), 0);
  CU_ASSERT_FATAL(base > 2000 && more > 100);
  /* the last transaction (GTID :10 + payload) cut in its payload */
  CU_ASSERT_EQUAL_FATAL(truncate(path, (off_t)(base + more - 50)), 0);
  /* relay.meta at the end of PREVIOUS_GTIDS (the first GTID event, a boundary): the whole rest
   * is checked */
  dm_binlog_reader *r;
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dm_binlog_reader_open_file(&r, MYSQL8_FIXTURE, NULL, &err), 0);
  dm_binlog_event ev;
  uint64_t first_gtid = 0, payloads = 0;
  while (dm_binlog_reader_next(r, &ev, &err) == 1) {
    if (ev.header.type == DM_BINLOG_MYSQL_GTID && !first_gtid)
      first_gtid = ev.offset;
    payloads += ev.header.type == DM_BINLOG_TRANSACTION_PAYLOAD;
  }
  dm_binlog_reader_close(r);
  CU_ASSERT_FATAL(first_gtid > 0 && payloads == 3); /* precondition: the fixture's payloads */
  relay_meta m;
  memset(&m, 0, sizeof m);
  dm_strlcpy(m.binlog_name, "mysql-bin.000001", sizeof m.binlog_name);
  m.binlog_pos = first_gtid;
  char note[1024];
  CU_ASSERT_EQUAL(relay_file_recover(rec_dir, &m, note, sizeof note, &err), 0);
  /* cut after the last complete transaction: payload :9, the fixture's end */
  CU_ASSERT_EQUAL(m.binlog_pos, base);
  struct stat sb;
  CU_ASSERT(stat(path, &sb) == 0 && (uint64_t)sb.st_size == base);
  CU_ASSERT_PTR_NOT_NULL(strstr(note, "incomplete"));
}

/* The SDK's transaction tracker decides what a complete transaction is (issue 21), on a real
 * MariaDB file (tests/fixtures/mariadb-trx): a BEGIN ... ROLLBACK group is complete, ROLLBACK TO
 * inside a transaction ends nothing, an XA PREPARE group is complete. */
static uint64_t trx_recover(uint64_t cut, char *gtid, size_t gtid_len) {
  char path[256];
  snprintf(path, sizeof path, "%s/mysql-bin.000002", rec_dir);
  FILE *in = fopen(TRX_FIXTURE, "rb");
  FILE *out = fopen(path, "wb");
  CU_ASSERT_FATAL(in && out);
  unsigned char buf[4096];
  size_t n = fread(buf, 1, sizeof buf, in);
  CU_ASSERT_FATAL(n > cut);
  CU_ASSERT_EQUAL(fwrite(buf, 1, cut, out), cut);
  fclose(in);
  CU_ASSERT_EQUAL_FATAL(fclose(out), 0);
  relay_meta m;
  memset(&m, 0, sizeof m);
  dm_strlcpy(m.binlog_name, "mysql-bin.000002", sizeof m.binlog_name);
  m.binlog_pos = 385; /* the first GTID event: a boundary */
  dm_strlcpy(m.binlog_gtid, "0-1-184", sizeof m.binlog_gtid);
  char note[1024];
  dm_error err;
  CU_ASSERT_EQUAL(relay_file_recover(rec_dir, &m, note, sizeof note, &err), 0);
  dm_strlcpy(gtid, m.binlog_gtid, gtid_len);
  return m.binlog_pos;
}

static void test_trx_groups(void) {
  char gtid[64];
  /* cut in 0-1-190's XID, after its ROLLBACK TO: back to the end of 0-1-189 (its ROLLBACK) */
  CU_ASSERT_EQUAL(trx_recover(1916 + 10, gtid, sizeof gtid), 1534);
  CU_ASSERT_STRING_EQUAL(gtid, "0-1-189");
  /* cut in 0-1-192's GTID event: the XA PREPARE group 0-1-191 before it is complete */
  CU_ASSERT_EQUAL(trx_recover(2266 + 20, gtid, sizeof gtid), 2266);
  CU_ASSERT_STRING_EQUAL(gtid, "0-1-191");
  /* cut in 0-1-194 (XA ROLLBACK): everything before it, 0-1-193's XA PREPARE included */
  CU_ASSERT_EQUAL(trx_recover(2715 + 30, gtid, sizeof gtid), 2715);
  CU_ASSERT_STRING_EQUAL(gtid, "0-1-193");
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"starts at relay.meta's position", test_starts_at_meta},
      {"damage in the window before it: whole file", test_damage_in_window},
      {"incomplete tail after it: cut back", test_incomplete_tail},
      {"position inside an event: whole file", test_meta_not_a_boundary},
      {"file shorter than relay.meta: whole file", test_file_shorter_than_meta},
      {"window starting inside an event", test_window_resyncs},
      {"MySQL 8 transaction payloads are transactions", test_mysql8_payloads},
      {"ROLLBACK and XA PREPARE groups are complete, ROLLBACK TO is inside", test_trx_groups},
  };
  return dmh_cunit_run("relay_recover", rec_setup, rec_teardown, tests,
                       sizeof tests / sizeof tests[0]);
}
