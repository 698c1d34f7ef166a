/*
 * The sync's table maps by table id, bounded.
 *
 * A table map lives only as long as row events can name it: the source writes the maps a
 * transaction uses inside that transaction, and MariaDB gives a table a new id each time it is
 * opened again (FLUSH TABLES, table cache eviction), so ids of closed tables are never named
 * again. Kept forever, the maps grew without bound (1,500 for 500 tables after three FLUSH
 * TABLES) and every row event scanned them all. Here a map is kept while the transactions use it:
 * at each transaction boundary the maps that transaction did not use are freed, so the live maps
 * are those of the last transaction and the current one. Lookup is a hash on the id (open
 * addressing, linear probing, at most half full).
 */
#ifndef DMHOST_SYNC_MAPS_H
#define DMHOST_SYNC_MAPS_H

#include <stdint.h>

#include "dmhost/binlog_rows.h"

typedef struct sync_map_slot {
  uint64_t id;
  dm_binlog_table_map *tm; /* NULL: an empty slot */
  uint64_t sig;            /* the caller's signature of tm, computed once per table map */
  uint64_t used;           /* the transaction (sync_maps.txn) that last put or got it */
} sync_map_slot;

typedef struct sync_maps {
  sync_map_slot *slots;
  uint32_t cap; /* a power of two, or 0 */
  uint32_t n;   /* live maps */
  uint32_t peak;
  uint64_t txn; /* counts transaction boundaries */
} sync_maps;

/* The map for id (marked used by the current transaction), or NULL. */
const sync_map_slot *sync_maps_get(sync_maps *m, uint64_t id);
/* Takes tm (replacing and freeing a map of the same id). -1: no memory, tm is then the caller's. */
int sync_maps_put(sync_maps *m, dm_binlog_table_map *tm, uint64_t sig);
/* A transaction boundary: frees the maps the transaction that ends did not use. */
void sync_maps_txn_end(sync_maps *m);
void sync_maps_free(sync_maps *m);

#endif /* DMHOST_SYNC_MAPS_H */
