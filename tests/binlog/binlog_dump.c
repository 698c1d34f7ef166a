/*
 * binlog_dump [--rows] [--bench] [--no-verify] FILE...
 * binlog_dump --stream HOST:PORT [--no-verify] FIRST LAST
 *
 * Reads binlog files with the SDK's file reader and prints one line per event (with --rows also
 * every decoded row value), or with --bench only counts and prints throughput (MB/s, events/s)
 * and the reader's peak buffer. With --stream, pulls the source's binlog files FIRST..LAST (names)
 * through the SDK's stream reader (user root, no password) and prints the same throughput line:
 * the reader's own cost, without a relay writing anything. A debugging and measuring aid for the
 * binlog library.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dmhost/binlog.h"
#include "dmhost/binlog_rows.h"
#include "dmhost/sdk.h"

#define DUMP_MAX_MAPS 256

static double dump_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void dump_values(const dm_binlog_table_map *tm, const dm_binlog_value *vals,
                        const char *tag) {
  static char buf[1 << 16];
  for (uint32_t i = 0; i < tm->column_count; i++) {
    if (vals[i].kind == DM_VAL_ABSENT)
      continue;
    long n = dm_binlog_value_format(&vals[i], &tm->columns[i], buf, sizeof buf);
    printf("    %s %.*s = %s: %.*s%s\n", tag, (int)tm->columns[i].name.len, tm->columns[i].name.ptr,
           dm_binlog_value_kind_name(vals[i].kind), n < 0 ? 7 : (int)(n > 200 ? 200 : n),
           n < 0 ? "<error>" : buf, n > 200 ? "..." : "");
  }
}

/* Pull FIRST..LAST from the source; stops at the first event of a file after LAST. */
static int dump_stream(const char *where, const char *first, const char *last, bool verify) {
  char host[256];
  dm_strlcpy(host, where, sizeof host);
  char *colon = strrchr(host, ':');
  int port = 3306;
  if (colon) {
    *colon = '\0';
    port = atoi(colon + 1);
  }
  dm_db_endpoint ep = {.host = host, .port = port, .user = "root", .password = ""};
  dm_binlog_stream_options so = {.source = &ep,
                                 .server_id = 3000000u + (uint32_t)getpid() % 1000000u,
                                 .file = first,
                                 .pos = 4,
                                 .no_verify_checksum = !verify};
  dm_error err;
  dm_binlog_reader *r;
  double t0 = dump_now();
  if (dm_binlog_reader_open_stream(&r, &so, &err) < 0) {
    fprintf(stderr, "%s\n", err.message);
    return 1;
  }
  uint64_t bytes = 0, events = 0;
  dm_binlog_event ev;
  int n;
  while ((n = dm_binlog_reader_next(r, &ev, &err)) == 1) {
    if (ev.artificial)
      continue;
    if (strcmp(ev.file, last) > 0)
      break;
    events++;
    bytes += ev.raw_len;
  }
  double dt = dump_now() - t0;
  dm_binlog_reader_close(r);
  if (n < 0) {
    fprintf(stderr, "%s\n", err.message);
    return 1;
  }
  printf("stream: %" PRIu64 " events, %.1f MB in %.3f s: %.0f MB/s, %.2f M events/s, checksums "
         "%s\n",
         events, (double)bytes / 1e6, dt, (double)bytes / 1e6 / dt, (double)events / 1e6 / dt,
         verify ? "verified" : "not verified");
  return 0;
}

int main(int argc, char **argv) {
  bool rows = false, bench = false, verify = true;
  const char *stream = NULL;
  int first = 1;
  for (; first < argc && argv[first][0] == '-'; first++) {
    if (strcmp(argv[first], "--rows") == 0)
      rows = true;
    else if (strcmp(argv[first], "--bench") == 0)
      bench = true;
    else if (strcmp(argv[first], "--no-verify") == 0)
      verify = false;
    else if (strcmp(argv[first], "--stream") == 0 && first + 1 < argc)
      stream = argv[++first];
  }
  if (stream && first + 2 == argc)
    return dump_stream(stream, argv[first], argv[first + 1], verify);
  if (first >= argc || stream) {
    fprintf(stderr,
            "usage: %s [--rows] [--bench] [--no-verify] FILE...\n"
            "       %s --stream HOST:PORT [--no-verify] FIRST LAST\n",
            argv[0], argv[0]);
    return 2;
  }
  uint64_t bytes = 0, events = 0;
  size_t peak = 0;
  double t0 = dump_now();
  int rc = 0;
  dm_binlog_table_map *maps[DUMP_MAX_MAPS] = {0};
  dm_binlog_value *before = NULL, *after = NULL;
  for (int f = first; f < argc; f++) {
    dm_error err;
    dm_binlog_reader *r;
    dm_binlog_file_options o = {.no_verify_checksum = !verify};
    if (dm_binlog_reader_open_file(&r, argv[f], &o, &err) < 0) {
      fprintf(stderr, "%s\n", err.message);
      return 1;
    }
    dm_binlog_event ev;
    int n;
    while ((n = dm_binlog_reader_next(r, &ev, &err)) == 1) {
      events++;
      bytes += ev.raw_len;
      if (bench)
        continue;
      printf("%s@%" PRIu64 " %s size=%u next=%u flags=0x%x\n", ev.file, ev.offset,
             dm_binlog_event_type_name(ev.header.type), ev.raw_len, ev.header.next_pos,
             ev.header.flags);
      const dm_binlog_format *fmt = dm_binlog_reader_format(r);
      if (ev.header.type == DM_BINLOG_QUERY) {
        dm_binlog_query q;
        if (dm_binlog_decode_query(fmt, &ev, &q, &err) == 0)
          printf("  db=%.*s query=%.*s\n", (int)q.db.len, q.db.ptr,
                 (int)(q.query.len > 200 ? 200 : q.query.len), q.query.ptr);
        else
          printf("  %s\n", err.message);
      } else if (ev.header.type == DM_BINLOG_TABLE_MAP && rows) {
        dm_binlog_table_map *tm;
        if (dm_binlog_table_map_decode(fmt, &ev, &tm, &err) < 0) {
          printf("  %s\n", err.message);
          continue;
        }
        size_t slot = tm->table_id % DUMP_MAX_MAPS;
        dm_binlog_table_map_free(maps[slot]);
        maps[slot] = tm;
        printf("  %s.%s id=%" PRIu64 " cols=%u\n", tm->db.ptr, tm->table.ptr, tm->table_id,
               tm->column_count);
      } else if (dm_binlog_is_rows_event(ev.header.type) && rows) {
        dm_binlog_rows rs;
        if (dm_binlog_rows_begin(fmt, &ev, &rs, &err) < 0) {
          printf("  %s\n", err.message);
          continue;
        }
        dm_binlog_table_map *tm = maps[rs.table_id % DUMP_MAX_MAPS];
        if (!tm)
          continue;
        free(before);
        free(after);
        before = calloc(tm->column_count, sizeof *before);
        after = calloc(tm->column_count, sizeof *after);
        int k;
        while ((k = dm_binlog_rows_next(&rs, tm, before, after, &err)) == 1) {
          printf("  row\n");
          if (rs.kind != DM_ROWS_WRITE)
            dump_values(tm, before, "before");
          if (rs.kind != DM_ROWS_DELETE)
            dump_values(tm, after, "after");
        }
        if (k < 0)
          printf("  %s\n", err.message);
      }
    }
    if (n < 0) {
      fprintf(stderr, "%s\n", err.message);
      rc = 1;
    }
    if (dm_binlog_reader_buffer_size(r) > peak)
      peak = dm_binlog_reader_buffer_size(r);
    dm_binlog_reader_close(r);
  }
  double dt = dump_now() - t0;
  if (bench)
    printf("%" PRIu64 " events, %.1f MB in %.3f s: %.0f MB/s, %.2f M events/s, peak buffer %zu "
           "KiB, checksums %s\n",
           events, (double)bytes / 1e6, dt, (double)bytes / 1e6 / dt, (double)events / 1e6 / dt,
           peak / 1024, verify ? "verified" : "not verified");
  for (int i = 0; i < DUMP_MAX_MAPS; i++)
    dm_binlog_table_map_free(maps[i]);
  free(before);
  free(after);
  return rc;
}
