/*
 * The SDK's CRC32 (sdk/src/binlog_crc32.c: PCLMULQDQ folding on x86-64, zlib elsewhere) against
 * zlib's crc32: every length 0..4096 at random alignments and starting values, split and chained
 * computations, large buffers, and the check value of the CRC-32/ISO-HDLC catalogue.
 */
#include <CUnit/Basic.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "binlog_internal.h"
#include "cunit_run.h"

static uint64_t crc_rng = UINT64_C(0x9E3779B97F4A7C15);

static uint64_t crc_rand(void) {
  crc_rng ^= crc_rng << 13;
  crc_rng ^= crc_rng >> 7;
  crc_rng ^= crc_rng << 17;
  return crc_rng;
}

static void crc_fill(uint8_t *p, size_t len) {
  for (size_t i = 0; i < len; i++)
    p[i] = (uint8_t)crc_rand();
}

static uint32_t crc_zlib(uint32_t crc, const uint8_t *p, size_t len) {
  while (len) {
    uInt n = len > (1u << 30) ? (1u << 30) : (uInt)len;
    crc = (uint32_t)crc32(crc, p, n);
    p += n;
    len -= n;
  }
  return crc;
}

static void test_check_value(void) {
  const char *s = "123456789";
  CU_ASSERT_EQUAL(dm_binlog_crc32(0, s, 9), 0xCBF43926u);
  CU_ASSERT_EQUAL(bl_crc32_clmul(0, (const uint8_t *)s, 9), 0xCBF43926u);
  /* 16 bytes and more take the folding path */
  const char *t = "123456789012345678901234567890123456789012345678901234567890123456789";
  CU_ASSERT_EQUAL(dm_binlog_crc32(0, t, strlen(t)), crc_zlib(0, (const uint8_t *)t, strlen(t)));
  CU_ASSERT_EQUAL(dm_binlog_crc32(0, NULL, 0), 0u);
  CU_ASSERT_EQUAL(dm_binlog_crc32(0x12345678u, "", 0), 0x12345678u);
}

/* Every length 0..4096, each at a random alignment (0..63) and from a random starting CRC, so the
 * folding loop, the four-lane loop, its hand-over to single folds and the tail all meet every
 * remainder they can have. */
static void test_every_length(void) {
  enum { MAX = 4096 };
  uint8_t *buf = malloc(MAX + 64);
  CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
  int bad = 0;
  for (size_t len = 0; len <= MAX; len++) {
    size_t align = (size_t)(crc_rand() % 64);
    uint8_t *p = buf + align;
    crc_fill(p, len);
    uint32_t start = len % 3 == 0 ? 0 : (uint32_t)crc_rand();
    uint32_t want = crc_zlib(start, p, len);
    uint32_t got = dm_binlog_crc32(start, p, len);
    uint32_t clmul = bl_crc32_clmul(start, p, len);
    if (got != want || clmul != want) {
      if (bad++ < 5)
        fprintf(stderr,
                "length %zu align %zu start 0x%08" PRIx32 ": zlib 0x%08" PRIx32 ", dm 0x%08" PRIx32
                ", clmul 0x%08" PRIx32 "\n",
                len, align, start, want, got, clmul);
    }
  }
  CU_ASSERT_EQUAL(bad, 0);
  free(buf);
}

/* A CRC continued over pieces equals the CRC of the whole: the reader checks a format description
 * in two pieces (header copy, then body). */
static void test_chained(void) {
  enum { LEN = 10000 };
  uint8_t *buf = malloc(LEN);
  CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
  crc_fill(buf, LEN);
  uint32_t whole = crc_zlib(0, buf, LEN);
  int bad = 0;
  for (int round = 0; round < 500; round++) {
    uint32_t crc = 0;
    size_t at = 0;
    while (at < LEN) {
      size_t n = (size_t)(crc_rand() % 300);
      if (n > LEN - at)
        n = LEN - at;
      crc = dm_binlog_crc32(crc, buf + at, n);
      at += n;
    }
    bad += crc != whole;
  }
  CU_ASSERT_EQUAL(bad, 0);
  free(buf);
}

/* Large buffers (a big row event is up to max_allowed_packet), and degenerate contents. */
static void test_large(void) {
  size_t len = (64u << 20) + 13;
  uint8_t *buf = malloc(len + 1);
  CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
  crc_fill(buf, len + 1);
  CU_ASSERT_EQUAL(dm_binlog_crc32(0, buf, len), crc_zlib(0, buf, len));
  CU_ASSERT_EQUAL(dm_binlog_crc32(7, buf + 1, len), crc_zlib(7, buf + 1, len));
  memset(buf, 0, len);
  CU_ASSERT_EQUAL(dm_binlog_crc32(0, buf, len), crc_zlib(0, buf, len));
  memset(buf, 0xff, len);
  CU_ASSERT_EQUAL(dm_binlog_crc32(0xffffffffu, buf, len), crc_zlib(0xffffffffu, buf, len));
  free(buf);
}

/* On x86-64 the fast path is what runs; say so in the log, so a number in a benchmark can be
 * read against it. */
static void test_dispatch(void) {
#if defined(__x86_64__)
  CU_ASSERT_EQUAL(bl_crc32_has_clmul(),
                  __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1"));
#else
  CU_ASSERT_FALSE(bl_crc32_has_clmul());
#endif
  fprintf(stderr, "CRC32: %s\n", bl_crc32_has_clmul() ? "PCLMULQDQ folding" : "zlib");
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"check value", test_check_value},
      {"every length 0..4096, random alignment", test_every_length},
      {"chained pieces", test_chained},
      {"large and degenerate buffers", test_large},
      {"dispatch", test_dispatch},
  };
  return dmh_cunit_run("binlog_crc32", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
