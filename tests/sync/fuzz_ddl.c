/*
 * Fuzz target for the sync unit's DDL reader (plugins/sync/sync_ddl*.c): the input is a QUERY
 * event's statement, bytes any source user with CREATE or ALTER on one table writes. The first
 * byte picks how the server reads it (bit 0 NO_BACKSLASH_ESCAPES, bit 1 ANSI_QUOTES, bits 2-4 the
 * client charset: none, gbk, big5, sjis, gb18030), the rest is the statement. It is parsed, each
 * part rewritten with routes that put backticks and multi-byte characters into names, and
 * redacted, its verb taken and a message scrubbed; each rewritten part also gets collation_compatible
 * strict's collations (dm_ddl_add_collations). Bad bytes must give errors, never a crash, a hang
 * or a read out of bounds; and what the unit would run never holds a second statement: a
 * rewritten part, with its collations too, parses again under the same flags without
 * SYNC_DDL_MULTI, the collations only add " COLLATE <name>" bytes, and redacted text holds no
 * control byte (no forged log line).
 *
 * With DMHOST_FUZZ (CC=clang) this is a libFuzzer target (ddl_fuzz). Built with the normal
 * compiler (DMHOST_FUZZ_REPLAY), main() replays files or folders given on the command line, so CI
 * runs the seed corpus (tests/sync/corpus-ddl) through the same code (ddl_fuzz_replay).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmhost/ddl_collation.h"
#include "fuzz_replay.h"
#include "sync_ddl.h"

/* A source's few collations, made once. */
static const dm_collations *fuzz_collations(void) {
  static dm_collations *c;
  if (!c && (c = dm_collations_new()) != NULL) {
    dm_collations_add(c, 45, "utf8mb4_general_ci", "utf8mb4", true);
    dm_collations_add(c, 8, "latin1_swedish_ci", "latin1", true);
    dm_collations_add(c, 28, "gbk_chinese_ci", "gbk", true);
    dm_collations_set_utf8(c, "utf8mb4");
  }
  return c;
}

/* collation_compatible strict on a part the unit would run: still one statement, and only
 * " COLLATE <name>" added. */
static void fuzz_collate(const char *sql, size_t len, unsigned flags) {
  const dm_collations *c = fuzz_collations();
  if (!c)
    return;
  dm_ddl_collation_opts o = {.lex_flags = flags, .database_collation = "utf8mb4_general_ci"};
  char *out = NULL, note[128];
  size_t out_len = 0;
  if (dm_ddl_add_collations(sql, len, c, &o, &out, &out_len, note, sizeof note) != 1)
    return;
  /* a statement may hold NUL bytes (a binary literal): the output is out_len bytes and a NUL */
  if (out_len <= len || out[out_len] != '\0') {
    fprintf(stderr, "collations made %zu bytes of %zu\n", out_len, len);
    abort();
  }
  size_t i = 0, j = 0; /* the input's bytes, in order, with insertions between them */
  while (j < out_len) {
    bool ins = out_len - j > 9 && strncmp(out + j, " COLLATE ", 9) == 0 &&
               !(len - i >= 9 && strncmp(sql + i, " COLLATE ", 9) == 0);
    if (!ins && i < len && out[j] == sql[i]) {
      i++, j++;
      continue;
    }
    if (!ins) {
      fprintf(stderr, "collations changed byte %zu\n[%.*s]\n[%.*s]\n", i, (int)len, sql,
              (int)out_len, out);
      abort();
    }
    j += 9;
    while (j < out_len &&
           ((out[j] >= 'a' && out[j] <= 'z') || (out[j] >= '0' && out[j] <= '9') || out[j] == '_'))
      j++;
  }
  if (i != len) {
    fprintf(stderr, "collations lost bytes after %zu\n", i);
    abort();
  }
  sync_ddl again;
  char msg[256];
  if (sync_ddl_parse_mode(out, out_len, "", flags, &again, msg, sizeof msg) == SYNC_DDL_MULTI) {
    fprintf(stderr, "a part with its collations holds a second statement: %s\n", msg);
    abort();
  }
  sync_ddl_free(&again);
  free(out);
}

static void fuzz_route(void *arg, const char *schema, const char *table, char *out_schema,
                       size_t schema_len, char *out_table, size_t table_len) {
  (void)arg;
  if (strcmp(schema, "app") == 0)
    snprintf(out_schema, schema_len, "tgt`x");
  if (table && strcmp(table, "t") == 0)
    snprintf(out_table, table_len, "t\xbf\x5c`");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  static const unsigned mbs[] = {0, SYNC_DDL_MB_GBK, SYNC_DDL_MB_BIG5, SYNC_DDL_MB_SJIS,
                                 SYNC_DDL_MB_GB18030};
  unsigned flags = (data[0] & 3u) | mbs[(data[0] >> 2) % 5];
  /* exactly the statement's bytes, no NUL after them: ASan sees any read past the end */
  size_t len = size - 1;
  char *sql = malloc(len ? len : 1);
  if (!sql)
    return 0;
  memcpy(sql, data + 1, len);

  sync_ddl d;
  char msg[256];
  int rc = sync_ddl_parse_mode(sql, len, "app", flags, &d, msg, sizeof msg);
  if (rc == 0) {
    for (int i = 0; i < d.n; i++) {
      dm_buf out = {0};
      if (sync_ddl_rewrite(&d.stmts[i], fuzz_route, NULL, true, &out) == 0 && out.p) {
        sync_ddl again;
        if (sync_ddl_parse_mode(out.p, out.len, "", flags, &again, msg, sizeof msg) ==
            SYNC_DDL_MULTI) {
          fprintf(stderr, "a rewritten part holds a second statement: %s\n", msg);
          abort();
        }
        sync_ddl_free(&again);
        fuzz_collate(out.p, out.len, flags);
      }
      dm_buf_free(&out);
    }
    sync_ddl_free(&d);
  }
  dm_buf red = {0};
  if (sync_ddl_redact(sql, len, flags, 300, &red) == 0 && red.p) {
    for (size_t i = 0; i < red.len; i++) {
      if ((unsigned char)red.p[i] < 0x20 || red.p[i] == 0x7f) {
        fprintf(stderr, "a control byte in redacted text at %zu\n", i);
        abort();
      }
    }
  }
  dm_buf_free(&red);
  char verb[64], said[128];
  sync_ddl_verb(sql, len, flags, verb, sizeof verb);
  snprintf(said, sizeof said, "near '%.*s' at line 1", (int)(len < 60 ? len : 60), sql);
  sync_ddl_scrub(sql, len, flags, said, sizeof said);
  free(sql);
  return 0;
}

#ifdef DMHOST_FUZZ_REPLAY
int main(int argc, char **argv) {
  return fuzz_replay_main(argc, argv, LLVMFuzzerTestOneInput, 0);
}
#endif
