/*
 * What a unit holds of the process: heap bytes in use, open descriptors, threads. The leak checks
 * compare it before and after rounds of init/close.
 */
#ifndef DMH_UC_METER_H
#define DMH_UC_METER_H

#include <stddef.h>

typedef struct uc_usage {
  long long heap; /* bytes in use (ASan's allocator, or glibc's mallinfo2) */
  int fds;        /* entries of /proc/self/fd */
  int threads;    /* entries of /proc/self/task */
} uc_usage;

void uc_usage_now(uc_usage *u);
/* The thread count, recounted (up to patience_ms) while it is above at_most: a thread that
 * pthread_join has returned for may still be listed in /proc/self/task for a moment, as the kernel
 * wakes the joiner before it releases the task. Returns the last count. */
int uc_threads_settle(int at_most, int patience_ms);
/* What measures the heap, said in the tool's output. */
const char *uc_meter_heap_source(void);

/* A leak over rounds: heap[0] after a warm-up round, heap[i] after round i. Heap grows in (nearly)
 * every round, or descriptors or threads are more than before. */
typedef struct uc_leak {
  uc_usage base, last;
  int rounds, grew;
} uc_leak;
void uc_leak_start(uc_leak *l);
void uc_leak_round(uc_leak *l);
/* 1 and a description when it leaked, 0 with what was measured otherwise. */
int uc_leak_verdict(const uc_leak *l, char *out, size_t len);

#endif
