/*
 * The dump folder's file names (dmhost/dump_format.h).
 */
#include "dmhost/dump_format.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static bool dm_dump_name_escaped(unsigned char ch) {
  /* '@' too, so that a name holding "@002e" cannot be read back as one holding ".". */
  return ch == '/' || ch == '\\' || ch == '.' || ch == '@' || ch < 0x20 || ch == 0x7f;
}

uint64_t dm_dump_fnv1a64(const void *bytes, size_t len) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const unsigned char *p = bytes, *end = p + len; p < end; p++) {
    h ^= *p;
    h *= 0x100000001b3ull;
  }
  return h;
}

static uint64_t dm_dump_name_hash(const char *s) {
  return dm_dump_fnv1a64(s, strlen(s));
}

size_t dm_dump_name_part(const char *name, char *out, size_t out_len) {
  static const char hex[] = "0123456789abcdef";
  if (out_len < DM_DUMP_NAME_PART_MAX + 1)
    return 0;
  size_t o = 0;
  /* Where a cut may go (a character or escape starts there): the last such place that leaves
   * room for the mark and the hash. */
  const size_t keep = DM_DUMP_NAME_PART_MAX - strlen(DM_DUMP_NAME_SHORT_MARK) - 16;
  size_t cut = 0;
  for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
    size_t w = dm_dump_name_escaped(*p) ? 5 : 1;
    if ((*p & 0xc0) != 0x80 && o <= keep)
      cut = o; /* not inside a UTF-8 character */
    if (o + w > DM_DUMP_NAME_PART_MAX) {
      snprintf(out + cut, out_len - cut, "%s%016llx", DM_DUMP_NAME_SHORT_MARK,
               (unsigned long long)dm_dump_name_hash(name));
      return strlen(out);
    }
    if (w == 5) {
      out[o++] = '@';
      out[o++] = '0';
      out[o++] = '0';
      out[o++] = hex[*p >> 4];
      out[o++] = hex[*p & 15];
    } else {
      out[o++] = (char)*p;
    }
  }
  out[o] = '\0';
  return o;
}

bool dm_dump_name_is_short(const char *part, size_t len) {
  for (size_t i = 0; i + 1 < len; i++)
    if (part[i] == '@' && part[i + 1] == '~')
      return true;
  return false;
}

static int dm_dump_name_hex(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

int dm_dump_name_decode(const char *in, size_t len, char *out, size_t out_len) {
  if (dm_dump_name_is_short(in, len))
    return -1;
  size_t o = 0;
  for (size_t i = 0; i < len; i++) {
    char c = in[i];
    if (c == '@' && i + 4 < len) {
      int h[4];
      bool ok = true;
      for (int k = 0; ok && k < 4; k++)
        ok = (h[k] = dm_dump_name_hex(in[i + 1 + k])) >= 0;
      if (ok) {
        int v = (h[0] << 12) | (h[1] << 8) | (h[2] << 4) | h[3];
        if (v > 0xff)
          return -1;
        c = (char)v;
        i += 4;
      }
    }
    if (o + 1 >= out_len || c == '\0')
      return -1;
    out[o++] = c;
  }
  out[o] = '\0';
  return o > 0 ? 0 : -1;
}
