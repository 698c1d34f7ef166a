/*
 * Fuzz target for the binlog file reader and every decoder: the input is a binlog file. Each
 * event the reader returns is decoded by the decoder for its type (compressed events made plain,
 * MySQL transaction payloads read event by event); table maps are kept and rows
 * iterated and formatted; MySQL JSON values turned into text. Bad bytes must give errors, never a
 * crash, a hang or a read out of bounds.
 *
 * With DMHOST_FUZZ (CC=clang) this is a libFuzzer target (binlog_fuzz). Built with the normal
 * compiler (DMHOST_FUZZ_REPLAY), main() replays files or folders given on the command line, so CI
 * runs the seed corpus through the same code (binlog_fuzz_replay).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dmhost/binlog.h"
#include "dmhost/binlog_rows.h"
#include "fuzz_replay.h"

#define FUZZ_MAPS 4
#define FUZZ_MAX_EVENTS 100000

static char fuzz_text[1 << 16];

static void fuzz_rows(const dm_binlog_format *fmt, const dm_binlog_event *ev,
                      dm_binlog_table_map **maps) {
  dm_error err;
  dm_binlog_rows rows;
  if (dm_binlog_rows_begin(fmt, ev, &rows, &err) < 0)
    return;
  dm_binlog_table_map *tm = maps[rows.table_id % FUZZ_MAPS];
  if (!tm)
    return;
  dm_binlog_value *before = calloc(tm->column_count, sizeof *before);
  dm_binlog_value *after = calloc(tm->column_count, sizeof *after);
  if (!before || !after)
    goto out;
  for (int n = 0; n < 10000 && dm_binlog_rows_next(&rows, tm, before, after, &err) == 1; n++) {
    for (uint32_t i = 0; i < tm->column_count; i++) {
      dm_binlog_value_format(&before[i], &tm->columns[i], fuzz_text, sizeof fuzz_text);
      dm_binlog_value_format(&after[i], &tm->columns[i], fuzz_text, sizeof fuzz_text);
      if (after[i].kind == DM_VAL_JSON)
        dm_binlog_json_to_text(after[i].v.s.ptr, after[i].v.s.len, fuzz_text, sizeof fuzz_text,
                               &err);
      if (after[i].kind == DM_VAL_JSON_DIFF) {
        size_t cur = 0;
        dm_binlog_json_diff d;
        while (dm_binlog_json_diff_next(&after[i], &cur, &d, &err) == 1)
          if (d.value)
            dm_binlog_json_to_text(d.value, d.value_len, fuzz_text, sizeof fuzz_text, &err);
      }
    }
  }
out:
  free(before);
  free(after);
}

static void fuzz_event(const dm_binlog_format *fmt, const dm_binlog_event *ev,
                       dm_binlog_table_map **maps) {
  dm_error err;
  union {
    dm_binlog_rotate rot;
    dm_binlog_gtid gtid;
    dm_binlog_xa_prepare xa;
    dm_binlog_gtid_list list;
    dm_binlog_checkpoint cp;
    dm_binlog_query q;
    dm_binlog_incident inc;
    dm_binlog_mysql_gtid mg;
    dm_binlog_str s;
    dm_binlog_format f;
    uint64_t xid;
  } u;
  if (dm_binlog_is_compressed_event(ev->header.type)) {
    uint8_t *buf = NULL;
    size_t cap = 0;
    dm_binlog_event plain;
    if (dm_binlog_event_uncompress(fmt, ev, &buf, &cap, &plain, &err) == 0)
      fuzz_event(fmt, &plain, maps);
    free(buf);
    return;
  }
  if (ev->header.type == DM_BINLOG_TRANSACTION_PAYLOAD) {
    dm_binlog_payload *pl;
    dm_binlog_event in;
    if (dm_binlog_payload_new(&pl, &err) < 0)
      return;
    if (dm_binlog_payload_begin(pl, fmt, ev, &err) == 0)
      for (int n = 0; n < FUZZ_MAX_EVENTS && dm_binlog_payload_next(pl, &in, &err) == 1; n++)
        fuzz_event(fmt, &in, maps);
    dm_binlog_payload_free(pl);
    return;
  }
  switch (ev->header.type) {
  case DM_BINLOG_FORMAT_DESCRIPTION:
    dm_binlog_decode_format(ev, &u.f, &err);
    break;
  case DM_BINLOG_ROTATE:
    dm_binlog_decode_rotate(fmt, ev, &u.rot, &err);
    break;
  case DM_BINLOG_GTID:
    if (dm_binlog_decode_gtid(fmt, ev, &u.gtid, &err) == 0)
      dm_binlog_xid_format(&u.gtid.xa, fuzz_text, sizeof fuzz_text);
    break;
  case DM_BINLOG_XA_PREPARE:
    if (dm_binlog_decode_xa_prepare(fmt, ev, &u.xa, &err) == 0)
      dm_binlog_xid_format(&u.xa.xid, fuzz_text, sizeof fuzz_text);
    break;
  case DM_BINLOG_GTID_LIST:
    if (dm_binlog_decode_gtid_list(fmt, ev, &u.list, &err) == 0)
      dm_binlog_gtid_list_format(&u.list, fuzz_text, sizeof fuzz_text);
    break;
  case DM_BINLOG_BINLOG_CHECKPOINT:
    dm_binlog_decode_checkpoint(fmt, ev, &u.cp, &err);
    break;
  case DM_BINLOG_QUERY:
    dm_binlog_decode_query(fmt, ev, &u.q, &err);
    break;
  case DM_BINLOG_XID:
    dm_binlog_decode_xid(fmt, ev, &u.xid, &err);
    break;
  case DM_BINLOG_ANNOTATE_ROWS:
  case DM_BINLOG_ROWS_QUERY:
    dm_binlog_decode_annotate(fmt, ev, &u.s, &err);
    break;
  case DM_BINLOG_HEARTBEAT:
    dm_binlog_decode_heartbeat(fmt, ev, &u.s, &err);
    break;
  case DM_BINLOG_INCIDENT:
    dm_binlog_decode_incident(fmt, ev, &u.inc, &err);
    break;
  case DM_BINLOG_MYSQL_GTID:
  case DM_BINLOG_MYSQL_ANONYMOUS_GTID:
    if (dm_binlog_decode_mysql_gtid(fmt, ev, &u.mg, &err) == 0)
      dm_binlog_mysql_gtid_format(&u.mg, fuzz_text, sizeof fuzz_text);
    break;
  case DM_BINLOG_MYSQL_PREVIOUS_GTIDS:
    dm_binlog_decode_previous_gtids(fmt, ev, fuzz_text, sizeof fuzz_text, &err);
    break;
  case DM_BINLOG_TABLE_MAP: {
    dm_binlog_table_map *tm;
    if (dm_binlog_table_map_decode(fmt, ev, &tm, &err) == 0) {
      dm_binlog_table_map_free(maps[tm->table_id % FUZZ_MAPS]);
      maps[tm->table_id % FUZZ_MAPS] = tm;
    }
    break;
  }
  default:
    if (dm_binlog_is_rows_event(ev->header.type))
      fuzz_rows(fmt, ev, maps);
    break;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int fd = memfd_create("binlog_fuzz", MFD_CLOEXEC);
  if (fd < 0)
    return 0;
  size_t done = 0;
  while (done < size) {
    ssize_t n = write(fd, data + done, size - done);
    if (n <= 0)
      break;
    done += (size_t)n;
  }
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  dm_binlog_table_map *maps[FUZZ_MAPS] = {0};
  dm_error err;
  dm_binlog_reader *r;
  /* With checksums checked, then without: mutated bytes rarely keep a valid CRC32, and the
   * decoders behind the check must hold up to anything too. */
  for (int pass = 0; pass < 2; pass++) {
    dm_binlog_file_options o = {.buffer_size = 64 << 10, .no_verify_checksum = pass == 1};
    if (lseek(fd, 0, SEEK_SET) < 0 || dm_binlog_reader_open_file(&r, path, &o, &err) < 0)
      continue;
    dm_binlog_event ev;
    for (int n = 0; n < FUZZ_MAX_EVENTS && dm_binlog_reader_next(r, &ev, &err) == 1; n++)
      fuzz_event(dm_binlog_reader_format(r), &ev, maps);
    dm_binlog_reader_close(r);
  }
  /* The same bytes past the magic as one event under the default format, without checksums:
   * reaches the decoders with bodies the reader's CRC check would have refused. */
  if (size > 4) {
    dm_binlog_format fmt;
    dm_binlog_format_default(&fmt, DM_BINLOG_CHECKSUM_OFF);
    dm_binlog_event ev;
    if (dm_binlog_event_from_bytes(data + 4, size - 4, &fmt, false, "fuzz", 4, &ev, &err) == 0)
      fuzz_event(&fmt, &ev, maps);
  }
  for (int i = 0; i < FUZZ_MAPS; i++)
    dm_binlog_table_map_free(maps[i]);
  close(fd);
  return 0;
}

#ifdef DMHOST_FUZZ_REPLAY
int main(int argc, char **argv) {
  return fuzz_replay_main(argc, argv, LLVMFuzzerTestOneInput, 4); /* past the magic */
}
#endif
