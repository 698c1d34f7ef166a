/*
 * Base64 (RFC 4648, with padding, no line breaks) through OpenSSL's EVP block functions: the one
 * owner in the host (secrets, the etcd client).
 */
#ifndef DMH_BASE64_H
#define DMH_BASE64_H

#include <stddef.h>

/* The base64 text of n bytes, malloc'd and NUL-terminated; NULL when memory ran out. */
char *dmh_base64_encode(const void *p, size_t n);

/* The bytes of base64 text (len chars), malloc'd with a NUL after them, their count in *out_len;
 * NULL when it is not base64 (length not a multiple of 4, a foreign character) or memory ran out.
 */
unsigned char *dmh_base64_decode(const char *text, size_t len, size_t *out_len);

#endif /* DMH_BASE64_H */
