/*
 * An open-addressing hash map from byte strings to ints, for the batch's two lookups (compaction:
 * (table, key) -> record; causality: key -> union-find node). The key bytes are not copied: they
 * live in the batch's arena, which outlives the map's use (both are reset together), so an entry
 * is 20 bytes and a lookup touches one slot array and one entry.
 */
#include <stdlib.h>
#include <string.h>

#include "sync.h"

struct sync_keymap_entry *sync_keymap_find(const sync_keymap *m, const char *arena, uint32_t off,
                                           uint32_t len, uint64_t hash) {
  if (!m->cap)
    return NULL;
  for (uint32_t i = (uint32_t)hash & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
    uint32_t s = m->slots[i];
    if (!s)
      return NULL;
    struct sync_keymap_entry *e = &m->entries[s - 1];
    if (e->hash == hash && e->len == len && memcmp(arena + e->off, arena + off, len) == 0)
      return e;
  }
}

static int sync_keymap_grow(sync_keymap *m) {
  uint32_t cap = m->cap ? m->cap * 2 : 1024;
  uint32_t *slots = calloc(cap, sizeof *slots);
  if (!slots)
    return -1;
  for (uint32_t k = 0; k < m->n; k++) {
    uint32_t i = (uint32_t)m->entries[k].hash & (cap - 1);
    while (slots[i])
      i = (i + 1) & (cap - 1);
    slots[i] = k + 1;
  }
  free(m->slots);
  m->slots = slots;
  m->cap = cap;
  return 0;
}

int sync_keymap_add(sync_keymap *m, const char *arena, uint32_t off, uint32_t len, uint64_t hash,
                    int32_t value) {
  (void)arena;
  if ((m->n + 1) * 2 > m->cap && sync_keymap_grow(m) < 0)
    return -1;
  if (m->n == m->entries_cap) {
    uint32_t cap = m->entries_cap ? m->entries_cap * 2 : 512;
    void *e = realloc(m->entries, cap * sizeof *m->entries);
    if (!e)
      return -1;
    m->entries = e;
    m->entries_cap = cap;
  }
  struct sync_keymap_entry *e = &m->entries[m->n];
  e->hash = hash;
  e->off = off;
  e->len = len;
  e->value = value;
  uint32_t i = (uint32_t)hash & (m->cap - 1);
  while (m->slots[i])
    i = (i + 1) & (m->cap - 1);
  m->slots[i] = ++m->n;
  return 0;
}

void sync_keymap_clear(sync_keymap *m) {
  if (m->slots && m->n)
    memset(m->slots, 0, m->cap * sizeof *m->slots);
  m->n = 0;
}

void sync_keymap_free(sync_keymap *m) {
  free(m->slots);
  free(m->entries);
  memset(m, 0, sizeof *m);
}
