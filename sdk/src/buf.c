/* The growable text buffer (dmhost/buf.h). */
#include "dmhost/buf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int dm_buf_reserve(dm_buf *b, size_t extra) {
  if (b->oom)
    return -1;
  if (extra > SIZE_MAX - b->len - 1) { /* no size holds it: said as memory run out */
    b->oom = true;
    return -1;
  }
  size_t need = b->len + extra + 1;
  if (need <= b->cap)
    return 0;
  size_t cap = b->cap ? b->cap : 4096;
  while (cap < need)
    cap = cap > SIZE_MAX / 2 ? need : cap * 2;
  char *p = realloc(b->p, cap);
  if (!p) {
    b->oom = true;
    return -1;
  }
  b->p = p;
  b->cap = cap;
  return 0;
}

int dm_buf_put(dm_buf *b, const void *data, size_t len) {
  if (dm_buf_reserve(b, len) < 0)
    return -1;
  memcpy(b->p + b->len, data, len);
  b->len += len;
  b->p[b->len] = '\0';
  return 0;
}

int dm_buf_puts(dm_buf *b, const char *s) {
  return dm_buf_put(b, s, strlen(s));
}

int dm_buf_putc(dm_buf *b, char c) {
  return dm_buf_put(b, &c, 1);
}

int dm_buf_printf(dm_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char small[256];
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) { /* an encoding error of the format: nothing appended, and said */
    b->oom = true;
    return -1;
  }
  if ((size_t)n < sizeof small)
    return dm_buf_put(b, small, (size_t)n);
  if (dm_buf_reserve(b, (size_t)n) < 0)
    return -1;
  va_start(ap, fmt);
  vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
  return 0;
}

void dm_buf_free(dm_buf *b) {
  free(b->p);
  *b = (dm_buf){0};
}
