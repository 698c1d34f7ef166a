/*
 * Fuzz target for the load's dump-folder check (plugins/load/load_check.c): the input is a schema
 * file's text (or a data line), bytes whoever writes into a dump folder chooses. The first byte
 * picks what is checked (bit 0: a CREATE TABLE or a CREATE DATABASE IF NOT EXISTS schema file;
 * bit 1: also as a data line of table `t`), the rest is the text. Bad bytes must give refusals,
 * never a crash, a hang or a read out of bounds; and what the check accepts must not hold what
 * the server would run beyond the dump's statement (issue 20, item 5): outside quoted strings and
 * names (read here by a scanner of its own, with the server's rules under the load's sql_mode),
 * no comment but the dump's `/ *!NNNNN ` and `/ *M!NNNNNN COMPRESSED* /` (no spaces), no SELECT,
 * LOAD_FILE, DIRECTORY or CONNECTION, no `;` before the end, and every ENGINE one of the four.
 *
 * With DMHOST_FUZZ (CC=clang) this is a libFuzzer target (load_check_fuzz). Built with the normal
 * compiler (DMHOST_FUZZ_REPLAY), main() replays files or folders given on the command line, so CI
 * runs the seed corpus (tests/load/corpus-schema) through the same code (load_check_fuzz_replay).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fuzz_replay.h"
#include "load.h"

static void fuzz_fail(const char *what, const char *text) {
  fprintf(stderr, "accepted, but %s: %s\n", what, text);
  abort();
}

static bool fuzz_word(const char *p, size_t n, const char *w) {
  return strlen(w) == n && strncasecmp(p, w, n) == 0;
}

/* The accepted rest, read as the server reads it. */
static void fuzz_oracle(const char *rest) {
  for (const char *p = rest; *p;) {
    char c = *p;
    if (c == '\'' || c == '"' || c == '`') {
      for (p++; *p; p++) {
        if (*p == '\\' && c != '`' && p[1])
          p++;
        else if (*p == c && p[1] == c)
          p++;
        else if (*p == c)
          break;
      }
      if (!*p)
        fuzz_fail("a quote does not end", rest);
      p++;
    } else if (c == '/' && p[1] == '*') {
      const char *d = p + 2 + (p[2] == 'M') + 1;
      size_t n = strspn(d, "0123456789");
      if (p[2] == '!' && (n == 5 || n == 6) && d[n] == ' ')
        p = d + n + 1;
      else if (p[2] == 'M' && p[3] == '!' && n == 6 && strncmp(d + n, " COMPRESSED*/", 13) == 0)
        p = d + n + 13;
      else
        fuzz_fail("a comment", rest);
    } else if (c == '#' || (c == '-' && p[1] == '-' && (unsigned char)p[2] <= ' ')) {
      fuzz_fail("a line comment", rest);
    } else if (c == ';') {
      if (p[strspn(p, "; \t\r\n")] != '\0')
        fuzz_fail("a second statement", rest);
      p++;
    } else if (isalpha((unsigned char)c) || c == '_') {
      const char *w = p;
      while (isalnum((unsigned char)*p) || *p == '_' || *p == '$')
        p++;
      size_t n = (size_t)(p - w);
      if (fuzz_word(w, n, "SELECT") || fuzz_word(w, n, "LOAD_FILE") ||
          fuzz_word(w, n, "DIRECTORY") || fuzz_word(w, n, "CONNECTION"))
        fuzz_fail("a refused word", rest);
      if (fuzz_word(w, n, "ENGINE")) {
        const char *e = p + strspn(p, " \t\r\n");
        e += *e == '=';
        e += strspn(e, " \t\r\n");
        size_t k = 0;
        while (isalnum((unsigned char)e[k]) || e[k] == '_')
          k++;
        if (!fuzz_word(e, k, "InnoDB") && !fuzz_word(e, k, "Aria") && !fuzz_word(e, k, "MyISAM") &&
            !fuzz_word(e, k, "MEMORY"))
          fuzz_fail("another engine", rest);
      }
    } else {
      p++;
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  size_t len = size - 1;
  /* a schema file is read as a C string (load_dir_read_file): NUL-terminated */
  char *sql = malloc(len + 1);
  if (!sql)
    return 0;
  memcpy(sql, data + 1, len);
  sql[len] = '\0';
  const char *kw = (data[0] & 1) ? "CREATE DATABASE IF NOT EXISTS " : "CREATE TABLE ";
  char name[LOAD_NAME_MAX];
  size_t at = 0;
  const char *why = NULL;
  const char *rest = load_check_create(sql, kw, name, sizeof name, &at, &why);
  if (rest)
    fuzz_oracle(rest);
  else if (at > strlen(sql) || !why)
    fuzz_fail("a refusal points past the text or says nothing", sql);
  if (data[0] & 2) {
    /* a data line: exactly its bytes, no NUL after them (ASan sees a read past the end) */
    char *line = malloc(len ? len : 1);
    if (line) {
      memcpy(line, data + 1, len);
      size_t head = 0;
      if (load_check_insert(line, len, "t", &head, &at, &why) == 0 &&
          (head > len || memchr(line, ';', len) == NULL))
        fuzz_fail("an INSERT without its `;`", sql);
      free(line);
    }
  }
  free(sql);
  return 0;
}

#ifdef DMHOST_FUZZ_REPLAY
int main(int argc, char **argv) {
  return fuzz_replay_main(argc, argv, LLVMFuzzerTestOneInput, 0);
}
#endif
