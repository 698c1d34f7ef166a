/*
 * The meter of what a unit holds. Under AddressSanitizer the heap is read from its allocator
 * (glibc's statistics do not see it), and LeakSanitizer reports every leaked block at exit as well.
 */
#include <stddef.h>

#include "meter.h"

#include <dirent.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <time.h>

#if defined(__SANITIZE_ADDRESS__)
#define UC_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UC_ASAN 1
#endif
#endif
#ifdef UC_ASAN
/* The sanitizers' public allocator interface (sanitizer/allocator_interface.h, which GCC does not
 * install everywhere). */
size_t __sanitizer_get_current_allocated_bytes(void);
#endif

static int meter_count(const char *dir) {
  DIR *d = opendir(dir);
  if (!d)
    return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (e->d_name[0] != '.')
      n++;
  closedir(d);
  return n;
}

void uc_usage_now(uc_usage *u) {
#ifdef UC_ASAN
  u->heap = (long long)__sanitizer_get_current_allocated_bytes();
#else
  struct mallinfo2 mi = mallinfo2();
  u->heap = (long long)(mi.uordblks + mi.hblkhd);
#endif
  u->fds = meter_count("/proc/self/fd") - 1; /* the one opendir holds */
  u->threads = meter_count("/proc/self/task");
}

int uc_threads_settle(int at_most, int patience_ms) {
  int n = meter_count("/proc/self/task");
  for (int waited = 0; n > at_most && waited < patience_ms; waited += 5) {
    nanosleep(&(struct timespec){0, 5000000}, NULL);
    n = meter_count("/proc/self/task");
  }
  return n;
}

const char *uc_meter_heap_source(void) {
#ifdef UC_ASAN
  return "heap from ASan's allocator; LeakSanitizer also reports each leaked block at exit";
#else
  return "heap from mallinfo2; build with -DDMHOST_SANITIZE=address for LeakSanitizer's report "
         "of each leaked block";
#endif
}

void uc_leak_start(uc_leak *l) {
  uc_usage_now(&l->base);
  l->last = l->base;
  l->rounds = l->grew = 0;
}

void uc_leak_round(uc_leak *l) {
  uc_usage u;
  uc_usage_now(&u);
  if (u.threads > l->base.threads)
    u.threads = uc_threads_settle(l->base.threads, 500);
  if (u.heap > l->last.heap)
    l->grew++;
  l->rounds++;
  l->last = u;
}

int uc_leak_verdict(const uc_leak *l, char *out, size_t len) {
  long long heap = l->last.heap - l->base.heap;
  bool heap_leak = l->rounds > 1 && l->grew >= l->rounds - 1 && heap > 0;
  if (heap_leak || l->last.fds > l->base.fds || l->last.threads > l->base.threads) {
    snprintf(out, len,
             "after %d rounds: heap %+lld bytes (grew in %d rounds), descriptors %d -> %d, "
             "threads %d -> %d",
             l->rounds, heap, l->grew, l->base.fds, l->last.fds, l->base.threads, l->last.threads);
    return 1;
  }
  snprintf(out, len, "%d rounds: heap %+lld bytes, descriptors %d, threads %d", l->rounds, heap,
           l->last.fds, l->last.threads);
  return 0;
}
