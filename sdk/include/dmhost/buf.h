/*
 * dmhost SDK: a growable text buffer (libdmhost-sdk.a), the one of every builder of statements
 * and documents: the sync unit's batches and DDL, the host's verify. Text is built in one, sent
 * with one call (mysql_real_query), then the buffer is reset, its memory kept for the next one.
 *
 * Memory that runs out is said twice: each append returns -1 (the buffer left as it was), and
 * `oom` stays set until dm_buf_reset, every later append refused, so a builder may append a whole
 * statement without a check per piece and look at `oom` once before using the text.
 */
#ifndef DMHOST_BUF_H
#define DMHOST_BUF_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dm_buf {
  char *p;    /* NUL-terminated after every append (len excludes it); NULL before the first */
  size_t len; /* bytes in use */
  size_t cap; /* bytes allocated */
  bool oom;   /* an append failed since the last reset */
} dm_buf;

/* Each returns 0, or -1 when memory ran out or ran out before (oom). */
int dm_buf_reserve(dm_buf *b, size_t extra);
int dm_buf_put(dm_buf *b, const void *data, size_t len);
int dm_buf_puts(dm_buf *b, const char *s);
int dm_buf_putc(dm_buf *b, char c);
int dm_buf_printf(dm_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Empties the buffer (and clears oom), keeping its memory. */
static inline void dm_buf_reset(dm_buf *b) {
  b->len = 0;
  b->oom = false;
  if (b->p)
    b->p[0] = '\0';
}
void dm_buf_free(dm_buf *b);

#ifdef __cplusplus
}
#endif
#endif /* DMHOST_BUF_H */
