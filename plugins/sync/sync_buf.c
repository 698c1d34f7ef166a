/* The sync unit's growable byte buffer (sync_buf.h). */
#include "sync_buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sync_buf_reserve(sync_buf *b, size_t extra) {
  if (b->len + extra + 1 <= b->cap)
    return 0;
  size_t cap = b->cap ? b->cap : 4096;
  while (cap < b->len + extra + 1)
    cap *= 2;
  char *p = realloc(b->p, cap);
  if (!p)
    return -1;
  b->p = p;
  b->cap = cap;
  return 0;
}

int sync_buf_put(sync_buf *b, const void *data, size_t len) {
  if (sync_buf_reserve(b, len) < 0)
    return -1;
  memcpy(b->p + b->len, data, len);
  b->len += len;
  b->p[b->len] = '\0';
  return 0;
}

int sync_buf_puts(sync_buf *b, const char *s) {
  return sync_buf_put(b, s, strlen(s));
}

int sync_buf_putc(sync_buf *b, char c) {
  return sync_buf_put(b, &c, 1);
}

int sync_buf_printf(sync_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char small[256];
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0)
    return -1;
  if ((size_t)n < sizeof small)
    return sync_buf_put(b, small, (size_t)n);
  if (sync_buf_reserve(b, (size_t)n) < 0)
    return -1;
  va_start(ap, fmt);
  vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
  return 0;
}

void sync_buf_free(sync_buf *b) {
  free(b->p);
  b->p = NULL;
  b->len = b->cap = 0;
}
