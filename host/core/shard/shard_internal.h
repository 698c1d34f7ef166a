/* The keeper's records, shared by shard_lock.c (the logic) and shard_json.c (their JSON); no
 * other file includes it. */
#ifndef DMH_SHARD_INTERNAL_H
#define DMH_SHARD_INTERNAL_H

#include "shard.h"

#include "dmhost/position.h"

/* the tables a source reported for a target */
typedef struct sk_tables {
  char *task, *source, *tschema, *ttable;
  char **schemas, **tables;
  uint32_t n;
} sk_tables;

/* a source's arrival */
typedef struct sk_info {
  char *task, *source, *tschema, *ttable;
  char **ddls;
  uint32_t n_ddls;
  char **schemas, **tables;
  uint32_t n_tables;
  dm_position pos;
  bool queued; /* waits for the current lock of its target to be resolved */
} sk_info;

struct dmh_shard_keeper {
  sk_tables *srcs;
  size_t n_srcs, cap_srcs;
  sk_info *infos; /* in arrival order: the first current one of a lock is its owner */
  size_t n_infos, cap_infos;
  dmh_shard_oprec *ops;
  size_t n_ops, cap_ops;
  uint64_t next_op_id;
};

bool dmh_shard_streq(const char *a, const char *b);
char *dmh_shard_strdup(const char *s);
void dmh_shard_strv_free(char **v, uint32_t n);
char **dmh_shard_strv_dup(const char *const *v, uint32_t n);
int dmh_shard_grow(void **arr, size_t *cap, size_t n, size_t size);
void dmh_shard_tables_free(sk_tables *t);
void dmh_shard_info_free(sk_info *i);
void dmh_shard_op_free(dmh_shard_oprec *o);
bool dmh_shard_same_target(const char *task, const char *tschema, const char *ttable,
                           const char *t2, const char *s2, const char *tt2);
sk_tables *dmh_shard_find_tables(const dmh_shard_keeper *k, const char *task, const char *source,
                                 const char *tschema, const char *ttable);
/* the source's info of the target: current (queued false) or waiting for the next lock */
sk_info *dmh_shard_find_info(const dmh_shard_keeper *k, const char *task, const char *source,
                             const char *tschema, const char *ttable, bool queued);
/* the lock's first current info */
sk_info *dmh_shard_first_info(const dmh_shard_keeper *k, const char *task, const char *tschema,
                              const char *ttable);
/* the state of the lock whose first info is first, and its owner */
dmh_shard_state dmh_shard_state_of(const dmh_shard_keeper *k, const sk_info *first,
                                   const char **owner);
/* Finishes what a kill cut short, for every lock (after loading records). Returns 0 or -1
 * without memory. */
int dmh_shard_advance_all(dmh_shard_keeper *k);

#endif /* DMH_SHARD_INTERNAL_H */
