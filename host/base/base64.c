/* Base64 through OpenSSL's EVP_EncodeBlock/EVP_DecodeBlock. */
#include "base64.h"

#include <limits.h>
#include <openssl/evp.h>
#include <stdlib.h>

char *dmh_base64_encode(const void *p, size_t n) {
  if (n > (size_t)INT_MAX / 4 * 3 - 3)
    return NULL;
  char *out = malloc(4 * ((n + 2) / 3) + 1);
  if (!out)
    return NULL;
  EVP_EncodeBlock((unsigned char *)out, p, (int)n); /* writes the NUL */
  return out;
}

unsigned char *dmh_base64_decode(const char *text, size_t len, size_t *out_len) {
  if (len % 4 != 0 || len > (size_t)INT_MAX)
    return NULL;
  unsigned char *out = malloc(len / 4 * 3 + 1);
  if (!out)
    return NULL;
  int n = len ? EVP_DecodeBlock(out, (const unsigned char *)text, (int)len) : 0;
  if (n < 0) {
    free(out);
    return NULL;
  }
  /* EVP_DecodeBlock counts the '=' padding as zero bytes. */
  if (len && text[len - 1] == '=')
    n -= text[len - 2] == '=' ? 2 : 1;
  out[n] = '\0';
  *out_len = (size_t)n;
  return out;
}
