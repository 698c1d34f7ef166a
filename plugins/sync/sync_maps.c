/*
 * The sync's table maps by table id, freed when transactions stop using them (sync_maps.h).
 */
#include <stdlib.h>

#include "sync_maps.h"

#define SYNC_MAPS_MIN_CAP 64u

static uint32_t sync_maps_home(const sync_maps *m, uint64_t id) {
  return (uint32_t)((id * UINT64_C(0x9E3779B97F4A7C15)) >> 32) & (m->cap - 1);
}

/* The slot holding id, or the empty slot where it would go. */
static uint32_t sync_maps_find(const sync_maps *m, uint64_t id) {
  uint32_t i = sync_maps_home(m, id);
  while (m->slots[i].tm && m->slots[i].id != id)
    i = (i + 1) & (m->cap - 1);
  return i;
}

static int sync_maps_resize(sync_maps *m, uint32_t cap) {
  sync_map_slot *old = m->slots;
  uint32_t old_cap = m->cap;
  sync_map_slot *slots = calloc(cap, sizeof *slots);
  if (!slots)
    return -1;
  m->slots = slots;
  m->cap = cap;
  for (uint32_t i = 0; i < old_cap; i++)
    if (old[i].tm)
      m->slots[sync_maps_find(m, old[i].id)] = old[i];
  free(old);
  return 0;
}

const sync_map_slot *sync_maps_get(sync_maps *m, uint64_t id) {
  if (!m->n)
    return NULL;
  sync_map_slot *s = &m->slots[sync_maps_find(m, id)];
  if (!s->tm)
    return NULL;
  s->used = m->txn;
  return s;
}

int sync_maps_put(sync_maps *m, dm_binlog_table_map *tm, uint64_t sig) {
  if (2 * (m->n + 1) > m->cap && sync_maps_resize(m, m->cap ? 2 * m->cap : SYNC_MAPS_MIN_CAP) < 0)
    return -1;
  sync_map_slot *s = &m->slots[sync_maps_find(m, tm->table_id)];
  if (s->tm)
    dm_binlog_table_map_free(s->tm);
  else if (++m->n > m->peak)
    m->peak = m->n;
  *s = (sync_map_slot){.id = tm->table_id, .tm = tm, .sig = sig, .used = m->txn};
  return 0;
}

/* Empties slot i and moves later slots of its probe run back (no tombstones). */
static void sync_maps_remove(sync_maps *m, uint32_t i) {
  uint32_t mask = m->cap - 1;
  dm_binlog_table_map_free(m->slots[i].tm);
  m->slots[i].tm = NULL;
  m->n--;
  for (uint32_t j = (i + 1) & mask; m->slots[j].tm; j = (j + 1) & mask) {
    uint32_t k = sync_maps_home(m, m->slots[j].id);
    /* the entry at j may fill the hole at i unless its home lies cyclically in (i, j] */
    bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
    if (stays)
      continue;
    m->slots[i] = m->slots[j];
    m->slots[j].tm = NULL;
    i = j;
  }
}

void sync_maps_txn_end(sync_maps *m) {
  for (uint32_t i = 0; i < m->cap;) {
    /* a removal may move an entry not looked at yet into slot i: look at i again */
    if (m->slots[i].tm && m->slots[i].used < m->txn)
      sync_maps_remove(m, i);
    else
      i++;
  }
  m->txn++;
  /* after a transaction over many tables, give the room back (and keep the scan above short) */
  if (m->cap > SYNC_MAPS_MIN_CAP && 8 * m->n < m->cap)
    (void)sync_maps_resize(m, m->cap / 2); /* no memory: the table stays as it is */
}

void sync_maps_free(sync_maps *m) {
  for (uint32_t i = 0; i < m->cap; i++)
    if (m->slots[i].tm)
      dm_binlog_table_map_free(m->slots[i].tm);
  free(m->slots);
  *m = (sync_maps){0};
}
