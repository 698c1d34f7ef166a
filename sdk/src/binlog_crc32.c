/*
 * CRC32 of binlog events (the IEEE polynomial 0x04C11DB7, reflected, as zlib and the server
 * compute it). Every event a reader returns is checked, so this is on the hot path of every
 * reader: zlib's table-driven crc32 ran at ~0.7 GB/s here and took a quarter of the relay's CPU on
 * an OLTP stream. On x86-64 with PCLMULQDQ the buffer is folded 64 bytes at a time with carry-less
 * multiplications (Gopal et al., "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ
 * Instruction", Intel, 2009), a trailing partial block folded in with byte shuffles, and reduced
 * with Barrett's method; buffers shorter than 16 bytes and other CPUs use zlib's crc32. The choice
 * is made at run time (__builtin_cpu_supports), so one build runs everywhere.
 */
#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

#include "binlog_internal.h"

uint32_t bl_crc32_zlib(uint32_t crc, const uint8_t *p, size_t len) {
  /* zlib takes uInt lengths: feed huge buffers in slices */
  while (len > 0) {
    uInt n = len > (1u << 30) ? (1u << 30) : (uInt)len;
    crc = (uint32_t)crc32(crc, p, n);
    p += n;
    len -= n;
  }
  return crc;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define CRC_TARGET __attribute__((target("pclmul,sse4.1")))

/*
 * Folding constants: x^n mod P(x), bit-reflected and shifted left by one (the reflected domain
 * multiplies one bit short), for the distances the folds span; the first of each pair multiplies
 * the low 64 bits of a lane, the second the high ones. Derived with a few lines of polynomial
 * arithmetic; the unit test checks the result against zlib.
 *   fold 4 x 128 bits: x^(512+32), x^(512-32)    fold 128 bits: x^(128+32), x^(128-32)
 *   fold 64 to 32 bits: x^64                      Barrett: P(x) and mu = x^64 / P(x)
 */
#define CRC_K_512_LO UINT64_C(0x154442bd4)
#define CRC_K_512_HI UINT64_C(0x1c6e41596)
#define CRC_K_128_LO UINT64_C(0x1751997d0)
#define CRC_K_128_HI UINT64_C(0x0ccaa009e)
#define CRC_K_64 UINT64_C(0x163cd6124)
#define CRC_P UINT64_C(0x1db710641)
#define CRC_MU UINT64_C(0x1f7011641)

/* acc * x^distance + data, where k holds the two constants of the distance */
CRC_TARGET static inline __m128i crc_fold(__m128i acc, __m128i k, __m128i data) {
  __m128i lo = _mm_clmulepi64_si128(acc, k, 0x00);
  __m128i hi = _mm_clmulepi64_si128(acc, k, 0x11);
  return _mm_xor_si128(_mm_xor_si128(lo, hi), data);
}

CRC_TARGET static inline __m128i crc_load(const uint8_t *p) {
  return _mm_loadu_si128((const __m128i *)(const void *)p);
}

/*
 * Byte-shift masks for _mm_shuffle_epi8 (0x80: a zero byte). 16 bytes from crc_shift + 16 - k
 * move each byte k places up (left); from crc_shift + 16 + k, k places down (right).
 */
static const uint8_t crc_shift[48] __attribute__((aligned(16))) = {
    0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
    0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80};

/* The CRC register (not inverted) after len bytes, len >= 16. */
CRC_TARGET static uint32_t crc_clmul(uint32_t reg, const uint8_t *p, size_t len) {
  const uint8_t *end = p + len;
  const __m128i k128 = _mm_set_epi64x((long long)CRC_K_128_HI, (long long)CRC_K_128_LO);
  __m128i acc = _mm_xor_si128(crc_load(p), _mm_cvtsi32_si128((int)reg));
  p += 16;
  len -= 16;
  if (len >= 48) {
    /* four independent lanes keep the multiplier busy (its latency is several cycles) */
    const __m128i k512 = _mm_set_epi64x((long long)CRC_K_512_HI, (long long)CRC_K_512_LO);
    __m128i a1 = acc, a2 = crc_load(p), a3 = crc_load(p + 16), a4 = crc_load(p + 32);
    p += 48;
    len -= 48;
    while (len >= 64) {
      a1 = crc_fold(a1, k512, crc_load(p));
      a2 = crc_fold(a2, k512, crc_load(p + 16));
      a3 = crc_fold(a3, k512, crc_load(p + 32));
      a4 = crc_fold(a4, k512, crc_load(p + 48));
      p += 64;
      len -= 64;
    }
    acc = crc_fold(a1, k128, a2);
    acc = crc_fold(acc, k128, a3);
    acc = crc_fold(acc, k128, a4);
  }
  for (; len >= 16; p += 16, len -= 16)
    acc = crc_fold(acc, k128, crc_load(p));
  if (len) {
    /* r = len trailing bytes: the message ends acc[0..15] tail[0..r-1]. Its first r bytes, with
     * zeros before them (which change nothing), are a block to fold over the last 16 bytes
     * acc[r..15] tail[0..r-1]; the latter are the buffer's last 16 bytes with acc's high part in
     * place of the ones already folded. No byte outside the buffer is read. */
    __m128i up = _mm_loadu_si128((const __m128i *)(const void *)(crc_shift + len));
    __m128i down = _mm_loadu_si128((const __m128i *)(const void *)(crc_shift + 16 + len));
    __m128i head = _mm_shuffle_epi8(acc, up);   /* acc[0..r-1] moved to the top */
    __m128i rest = _mm_shuffle_epi8(acc, down); /* acc[r..15] moved to the bottom */
    __m128i last = crc_load(end - 16);          /* its top r bytes are the tail */
    rest = _mm_blendv_epi8(last, rest, up);     /* up's 0x80 bytes: below the tail */
    acc = crc_fold(head, k128, rest);
  }

  /* 128 -> 96 bits: the low half times x^(128-32) (k128's high constant) onto the high half */
  const __m128i low32 = _mm_set_epi32(0, -1, 0, -1);
  __m128i t = _mm_clmulepi64_si128(acc, k128, 0x10);
  acc = _mm_xor_si128(_mm_srli_si128(acc, 8), t);
  /* 96 -> 64 bits: the low 32 bits times x^64 onto the rest */
  const __m128i k64 = _mm_set_epi64x(0, (long long)CRC_K_64);
  t = _mm_srli_si128(acc, 4);
  acc = _mm_clmulepi64_si128(_mm_and_si128(acc, low32), k64, 0x00);
  acc = _mm_xor_si128(acc, t);
  /* Barrett: q = (low 32 bits * mu) mod x^32, remainder = value - q * P */
  const __m128i pmu = _mm_set_epi64x((long long)CRC_MU, (long long)CRC_P);
  t = _mm_clmulepi64_si128(_mm_and_si128(acc, low32), pmu, 0x10);
  t = _mm_clmulepi64_si128(_mm_and_si128(t, low32), pmu, 0x00);
  acc = _mm_xor_si128(acc, t);
  return (uint32_t)_mm_extract_epi32(acc, 1);
}

uint32_t bl_crc32_clmul(uint32_t crc, const uint8_t *p, size_t len) {
  /* below 16 bytes there is no block to fold */
  return len >= 16 ? ~crc_clmul(~crc, p, len) : bl_crc32_zlib(crc, p, len);
}

bool bl_crc32_has_clmul(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
}

uint32_t dm_binlog_crc32(uint32_t crc, const void *buf, size_t len) {
  if (len >= 16 && bl_crc32_has_clmul())
    return bl_crc32_clmul(crc, buf, len);
  return bl_crc32_zlib(crc, buf, len);
}

#else /* not x86-64 */

uint32_t bl_crc32_clmul(uint32_t crc, const uint8_t *p, size_t len) {
  return bl_crc32_zlib(crc, p, len);
}

bool bl_crc32_has_clmul(void) {
  return false;
}

uint32_t dm_binlog_crc32(uint32_t crc, const void *buf, size_t len) {
  return bl_crc32_zlib(crc, buf, len);
}

#endif
