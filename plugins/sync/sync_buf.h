/*
 * The sync unit's growable byte buffer: statements are built in one, sent with one
 * mysql_real_query, then the buffer is reset (its memory kept) for the next batch.
 */
#ifndef DMHOST_SYNC_BUF_H
#define DMHOST_SYNC_BUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct sync_buf {
  char *p;    /* NUL-terminated after every append (len excludes it) */
  size_t len; /* bytes in use */
  size_t cap; /* bytes allocated */
} sync_buf;

/* Each returns 0, or -1 when memory ran out (the buffer is left as it was). */
int sync_buf_reserve(sync_buf *b, size_t extra);
int sync_buf_put(sync_buf *b, const void *data, size_t len);
int sync_buf_puts(sync_buf *b, const char *s);
int sync_buf_putc(sync_buf *b, char c);
int sync_buf_printf(sync_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void sync_buf_reset(sync_buf *b) {
  b->len = 0;
  if (b->p)
    b->p[0] = '\0';
}
void sync_buf_free(sync_buf *b);

#endif /* DMHOST_SYNC_BUF_H */
