/* Pessimistic shard DDL locks, the pure logic: records, the derived locks, the state machine. See
 * shard.h. */
#include "shard.h"
#include "shard_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmhost/db.h"
#include "dmhost/sdk.h"

const char *dmh_shard_state_name(dmh_shard_state s) {
  switch (s) {
  case DMH_SHARD_WAITING:
    return "waiting";
  case DMH_SHARD_SYNCED:
    return "synced";
  case DMH_SHARD_EXECUTED:
    return "executed";
  case DMH_SHARD_RESOLVED:
    return "resolved";
  }
  return "unknown";
}

/* ---- small helpers ---- */

bool dmh_shard_streq(const char *a, const char *b) {
  return strcmp(a ? a : "", b ? b : "") == 0;
}

char *dmh_shard_strdup(const char *s) {
  return strdup(s ? s : "");
}

void dmh_shard_strv_free(char **v, uint32_t n) {
  for (uint32_t i = 0; v && i < n; i++)
    free(v[i]);
  free(v);
}

char **dmh_shard_strv_dup(const char *const *v, uint32_t n) {
  char **out = calloc(n ? n : 1, sizeof *out);
  if (!out)
    return NULL;
  for (uint32_t i = 0; i < n; i++)
    if (!(out[i] = dmh_shard_strdup(v[i]))) {
      dmh_shard_strv_free(out, i);
      return NULL;
    }
  return out;
}

int dmh_shard_grow(void **arr, size_t *cap, size_t n, size_t size) {
  if (n < *cap)
    return 0;
  size_t c = *cap ? *cap * 2 : 8;
  void *p = realloc(*arr, c * size);
  if (!p)
    return -1;
  *arr = p;
  *cap = c;
  return 0;
}

bool dmh_shard_same_target(const char *task, const char *tschema, const char *ttable,
                           const char *t2, const char *s2, const char *tt2) {
  return dmh_shard_streq(task, t2) && dmh_shard_streq(tschema, s2) && dmh_shard_streq(ttable, tt2);
}

void dmh_shard_tables_free(sk_tables *t) {
  free(t->task);
  free(t->source);
  free(t->tschema);
  free(t->ttable);
  dmh_shard_strv_free(t->schemas, t->n);
  dmh_shard_strv_free(t->tables, t->n);
}

void dmh_shard_info_free(sk_info *i) {
  free(i->task);
  free(i->source);
  free(i->tschema);
  free(i->ttable);
  dmh_shard_strv_free(i->ddls, i->n_ddls);
  dmh_shard_strv_free(i->schemas, i->n_tables);
  dmh_shard_strv_free(i->tables, i->n_tables);
}

void dmh_shard_op_free(dmh_shard_oprec *o) {
  free(o->lock_id);
  free(o->task);
  free(o->source);
  free(o->tschema);
  free(o->ttable);
  dmh_shard_strv_free(o->ddls, o->n_ddls);
}

dmh_shard_keeper *dmh_shard_keeper_new(void) {
  dmh_shard_keeper *k = calloc(1, sizeof *k);
  if (k)
    k->next_op_id = 1;
  return k;
}

void dmh_shard_keeper_free(dmh_shard_keeper *k) {
  if (!k)
    return;
  for (size_t i = 0; i < k->n_srcs; i++)
    dmh_shard_tables_free(&k->srcs[i]);
  for (size_t i = 0; i < k->n_infos; i++)
    dmh_shard_info_free(&k->infos[i]);
  for (size_t i = 0; i < k->n_ops; i++)
    dmh_shard_op_free(&k->ops[i]);
  free(k->srcs);
  free(k->infos);
  free(k->ops);
  free(k);
}

int dmh_shard_lock_id(char *out, size_t len, const char *task, const char *tschema,
                      const char *ttable) {
  char qs[4 * 64 + 8], qt[4 * 64 + 8];
  if (dm_db_quote_ident(qs, sizeof qs, tschema, strlen(tschema)) >= sizeof qs ||
      dm_db_quote_ident(qt, sizeof qt, ttable, strlen(ttable)) >= sizeof qt)
    return -1;
  int n = snprintf(out, len, "%s-%s.%s", task, qs, qt);
  return n < 0 || (size_t)n >= len ? -1 : 0;
}

bool dmh_shard_ddls_equal(const char *const *a, uint32_t na, const char *const *b, uint32_t nb) {
  if (na != nb)
    return false;
  char **ca = calloc(na + 1, sizeof *ca), **cb = calloc(nb + 1, sizeof *cb);
  bool equal = ca && cb;
  for (uint32_t i = 0; equal && i < na; i++)
    equal = (ca[i] = dm_db_ddl_canon(a[i])) && (cb[i] = dm_db_ddl_canon(b[i]));
  for (int pass = 0; equal && pass < 2; pass++) {
    char *const *x = pass ? cb : ca, *const *y = pass ? ca : cb;
    for (uint32_t i = 0; equal && i < na; i++) {
      bool found = false;
      for (uint32_t j = 0; j < nb && !found; j++)
        found = strcmp(x[i], y[j]) == 0;
      equal = found;
    }
  }
  for (uint32_t i = 0; i < na; i++) {
    free(ca ? ca[i] : NULL);
    free(cb ? cb[i] : NULL);
  }
  free(ca);
  free(cb);
  return equal;
}

/* "`s`.`t`, `s`.`u`" of a table list, cut to len */
static void tables_text(char *out, size_t len, char *const *schemas, char *const *tables,
                        uint32_t n) {
  size_t at = 0;
  out[0] = '\0';
  for (uint32_t i = 0; i < n && at + 1 < len; i++) {
    char qs[300], qt[300];
    int w =
        snprintf(out + at, len - at, "%s%s.%s", i ? ", " : "",
                 dm_db_quoted(schemas[i], qs, sizeof qs), dm_db_quoted(tables[i], qt, sizeof qt));
    if (w < 0)
      break;
    at += (size_t)w;
  }
}

static void ddls_text(char *out, size_t len, char *const *ddls, uint32_t n) {
  size_t at = 0;
  out[0] = '\0';
  for (uint32_t i = 0; i < n && at + 1 < len; i++) {
    int w = snprintf(out + at, len - at, "%s%s", i ? "; " : "", ddls[i]);
    if (w < 0)
      break;
    at += (size_t)w;
  }
}

/* ---- finding records ---- */

sk_tables *dmh_shard_find_tables(const dmh_shard_keeper *k, const char *task, const char *source,
                                 const char *tschema, const char *ttable) {
  for (size_t i = 0; i < k->n_srcs; i++) {
    sk_tables *t = &k->srcs[i];
    if (dmh_shard_streq(t->source, source) &&
        dmh_shard_same_target(task, tschema, ttable, t->task, t->tschema, t->ttable))
      return t;
  }
  return NULL;
}

sk_info *dmh_shard_find_info(const dmh_shard_keeper *k, const char *task, const char *source,
                             const char *tschema, const char *ttable, bool queued) {
  for (size_t i = 0; i < k->n_infos; i++) {
    sk_info *f = &k->infos[i];
    if (f->queued == queued && dmh_shard_streq(f->source, source) &&
        dmh_shard_same_target(task, tschema, ttable, f->task, f->tschema, f->ttable))
      return f;
  }
  return NULL;
}

/* the lock's first current info (the owner's unless an exec operation names another) */
sk_info *dmh_shard_first_info(const dmh_shard_keeper *k, const char *task, const char *tschema,
                              const char *ttable) {
  for (size_t i = 0; i < k->n_infos; i++) {
    sk_info *f = &k->infos[i];
    if (!f->queued && dmh_shard_same_target(task, tschema, ttable, f->task, f->tschema, f->ttable))
      return f;
  }
  return NULL;
}

static dmh_shard_oprec *find_op(const dmh_shard_keeper *k, const char *task, const char *source,
                                const char *tschema, const char *ttable) {
  for (size_t i = 0; i < k->n_ops; i++) {
    dmh_shard_oprec *o = &k->ops[i];
    if (dmh_shard_streq(o->source, source) &&
        dmh_shard_same_target(task, tschema, ttable, o->task, o->tschema, o->ttable))
      return o;
  }
  return NULL;
}

static dmh_shard_oprec *exec_op(const dmh_shard_keeper *k, const char *task, const char *tschema,
                                const char *ttable) {
  for (size_t i = 0; i < k->n_ops; i++) {
    dmh_shard_oprec *o = &k->ops[i];
    if (o->exec && dmh_shard_same_target(task, tschema, ttable, o->task, o->tschema, o->ttable))
      return o;
  }
  return NULL;
}

static bool has_ops(const dmh_shard_keeper *k, const char *task, const char *tschema,
                    const char *ttable) {
  for (size_t i = 0; i < k->n_ops; i++)
    if (dmh_shard_same_target(task, tschema, ttable, k->ops[i].task, k->ops[i].tschema,
                              k->ops[i].ttable))
      return true;
  return false;
}

/* the current info whose lock ID is id */
static sk_info *info_by_lock_id(const dmh_shard_keeper *k, const char *id) {
  for (size_t i = 0; i < k->n_infos; i++) {
    sk_info *f = &k->infos[i];
    char buf[DM_SHARD_LOCK_ID_MAX];
    if (!f->queued && dmh_shard_lock_id(buf, sizeof buf, f->task, f->tschema, f->ttable) == 0 &&
        strcmp(buf, id) == 0)
      return f;
  }
  return NULL;
}

/* Are all members of the waiting lock arrived? Members: sources that reported tables for the
 * target, and those that arrived. */
static bool all_arrived(const dmh_shard_keeper *k, const char *task, const char *tschema,
                        const char *ttable) {
  for (size_t i = 0; i < k->n_srcs; i++) {
    sk_tables *t = &k->srcs[i];
    if (t->n && dmh_shard_same_target(task, tschema, ttable, t->task, t->tschema, t->ttable) &&
        !dmh_shard_find_info(k, task, t->source, tschema, ttable, false))
      return false;
  }
  return true;
}

static int add_op(dmh_shard_keeper *k, const sk_info *f, bool exec, const sk_info *owner) {
  if (dmh_shard_grow((void **)&k->ops, &k->cap_ops, k->n_ops, sizeof *k->ops) < 0)
    return -1;
  dmh_shard_oprec o = {.id = k->next_op_id, .exec = exec, .n_ddls = owner->n_ddls};
  char id[DM_SHARD_LOCK_ID_MAX];
  if (dmh_shard_lock_id(id, sizeof id, f->task, f->tschema, f->ttable) < 0)
    return -1;
  o.lock_id = dmh_shard_strdup(id);
  o.task = dmh_shard_strdup(f->task);
  o.source = dmh_shard_strdup(f->source);
  o.tschema = dmh_shard_strdup(f->tschema);
  o.ttable = dmh_shard_strdup(f->ttable);
  o.ddls = dmh_shard_strv_dup((const char *const *)owner->ddls, owner->n_ddls);
  if (!o.lock_id || !o.task || !o.source || !o.tschema || !o.ttable || !o.ddls) {
    dmh_shard_op_free(&o);
    return -1;
  }
  k->next_op_id++;
  k->ops[k->n_ops++] = o;
  return 0;
}

static void drop_info_at(dmh_shard_keeper *k, size_t i) {
  dmh_shard_info_free(&k->infos[i]);
  memmove(&k->infos[i], &k->infos[i + 1], (k->n_infos - i - 1) * sizeof *k->infos);
  k->n_infos--;
}

static void drop_op_at(dmh_shard_keeper *k, size_t i) {
  dmh_shard_op_free(&k->ops[i]);
  memmove(&k->ops[i], &k->ops[i + 1], (k->n_ops - i - 1) * sizeof *k->ops);
  k->n_ops--;
}

/* The lock's current infos and operations go; the queued infos of the target become current
 * (the next lock). */
static void resolve(dmh_shard_keeper *k, const char *task, const char *tschema,
                    const char *ttable) {
  char *t = dmh_shard_strdup(task), *s = dmh_shard_strdup(tschema), *tt = dmh_shard_strdup(ttable);
  if (!t || !s || !tt)
    goto out;
  for (size_t i = k->n_ops; i-- > 0;)
    if (dmh_shard_same_target(t, s, tt, k->ops[i].task, k->ops[i].tschema, k->ops[i].ttable))
      drop_op_at(k, i);
  for (size_t i = k->n_infos; i-- > 0;)
    if (!k->infos[i].queued &&
        dmh_shard_same_target(t, s, tt, k->infos[i].task, k->infos[i].tschema, k->infos[i].ttable))
      drop_info_at(k, i);
  for (size_t i = 0; i < k->n_infos; i++)
    if (dmh_shard_same_target(t, s, tt, k->infos[i].task, k->infos[i].tschema, k->infos[i].ttable))
      k->infos[i].queued = false;
out:
  free(t);
  free(s);
  free(tt);
}

/* The state machine: run after every change of the target's records, and for every lock after
 * loading them (what DM's recoverLocks and the master's handlers do between them). */
static int advance(dmh_shard_keeper *k, const char *task, const char *tschema, const char *ttable) {
  {
    sk_info *first = dmh_shard_first_info(k, task, tschema, ttable);
    if (!first)
      return 0;
    if (!has_ops(k, task, tschema, ttable)) {
      if (!all_arrived(k, task, tschema, ttable))
        return 0;
      return add_op(k, first, true, first); /* synced: exec to the owner */
    }
    dmh_shard_oprec *ex = exec_op(k, task, tschema, ttable);
    const sk_info *owner =
        ex ? dmh_shard_find_info(k, task, ex->source, tschema, ttable, false) : NULL;
    if (ex && ex->done && owner)
      for (size_t i = 0; i < k->n_infos; i++) {
        sk_info *f = &k->infos[i];
        if (!f->queued &&
            dmh_shard_same_target(task, tschema, ttable, f->task, f->tschema, f->ttable) &&
            !find_op(k, task, f->source, tschema, ttable) && add_op(k, f, false, owner) < 0)
          return -1;
      }
    for (size_t i = 0; i < k->n_infos; i++) {
      sk_info *f = &k->infos[i];
      if (f->queued ||
          !dmh_shard_same_target(task, tschema, ttable, f->task, f->tschema, f->ttable))
        continue;
      dmh_shard_oprec *o = find_op(k, task, f->source, tschema, ttable);
      if (!o || !o->done)
        return 0;
    }
    /* every arrived source is done: resolved; the next lock may be complete already */
    char *t = dmh_shard_strdup(task), *s = dmh_shard_strdup(tschema),
         *tt = dmh_shard_strdup(ttable);
    if (!t || !s || !tt) {
      free(t);
      free(s);
      free(tt);
      return -1;
    }
    resolve(k, t, s, tt); /* the caller's strings may have been the records just freed */
    int rc = advance(k, t, s, tt);
    free(t);
    free(s);
    free(tt);
    return rc;
  }
}

static int nomem(dm_error *err) {
  dm_error_set(err, DM_ERR_NO_MEMORY, "", "shard lock: out of memory");
  return -1;
}

/* ---- the calls ---- */

int dmh_shard_report_tables(dmh_shard_keeper *k, const char *task, const char *source,
                            const char *tschema, const char *ttable, const dm_shard_table *tables,
                            uint32_t n, dm_error *err) {
  sk_tables *t = dmh_shard_find_tables(k, task, source, tschema, ttable);
  if (!t) {
    if (n == 0)
      return advance(k, task, tschema, ttable) < 0 ? nomem(err) : 0;
    if (dmh_shard_grow((void **)&k->srcs, &k->cap_srcs, k->n_srcs, sizeof *k->srcs) < 0)
      return nomem(err);
    t = &k->srcs[k->n_srcs];
    memset(t, 0, sizeof *t);
    t->task = dmh_shard_strdup(task);
    t->source = dmh_shard_strdup(source);
    t->tschema = dmh_shard_strdup(tschema);
    t->ttable = dmh_shard_strdup(ttable);
    if (!t->task || !t->source || !t->tschema || !t->ttable) {
      dmh_shard_tables_free(t);
      return nomem(err);
    }
    k->n_srcs++;
  }
  char **ns = calloc(n ? n : 1, sizeof *ns), **nt = calloc(n ? n : 1, sizeof *nt);
  if (!ns || !nt) {
    free(ns);
    free(nt);
    return nomem(err);
  }
  for (uint32_t i = 0; i < n; i++)
    if (!(ns[i] = dmh_shard_strdup(tables[i].schema)) ||
        !(nt[i] = dmh_shard_strdup(tables[i].table))) {
      dmh_shard_strv_free(ns, n);
      dmh_shard_strv_free(nt, n);
      return nomem(err);
    }
  dmh_shard_strv_free(t->schemas, t->n);
  dmh_shard_strv_free(t->tables, t->n);
  t->schemas = ns;
  t->tables = nt;
  t->n = n;
  return advance(k, task, tschema, ttable) < 0 ? nomem(err) : 0;
}

static bool same_position(const dm_position *a, const dm_position *b) {
  return strcmp(a->name, b->name) == 0 && a->pos == b->pos && strcmp(a->gtid, b->gtid) == 0;
}

/* DM_ERR_SHARD_DDL_DIFF naming both sides when info's DDLs differ from other's */
static int check_same_ddls(const sk_info *other, const char *source, const dm_shard_info *info,
                           dm_error *err) {
  if (dmh_shard_ddls_equal((const char *const *)other->ddls, other->n_ddls, info->ddls,
                           info->n_ddls))
    return 0;
  char id[DM_SHARD_LOCK_ID_MAX], mine[160], theirs[160], mt[120], tt[120];
  if (dmh_shard_lock_id(id, sizeof id, other->task, other->tschema, other->ttable) < 0)
    snprintf(id, sizeof id, "%s", other->task);
  char **ms = calloc(info->n_tables + 1, sizeof *ms), **mn = calloc(info->n_tables + 1, sizeof *mn);
  if (ms && mn)
    for (uint32_t i = 0; i < info->n_tables; i++) {
      ms[i] = (char *)info->tables[i].schema;
      mn[i] = (char *)info->tables[i].table;
    }
  tables_text(mt, sizeof mt, ms, mn, ms && mn ? info->n_tables : 0);
  free(ms);
  free(mn);
  ddls_text(mine, sizeof mine, (char *const *)info->ddls, info->n_ddls);
  ddls_text(theirs, sizeof theirs, other->ddls, other->n_ddls);
  tables_text(tt, sizeof tt, other->schemas, other->tables, other->n_tables);
  dm_error_set(err, DM_ERR_SHARD_DDL_DIFF, "",
               "sharding DDLs in DDL lock %s are different: source %s (%s) has [%s], source %s "
               "(%s) has [%s]",
               id, source, mt, mine, other->source, tt, theirs);
  return -1;
}

static int store_info(dmh_shard_keeper *k, sk_info *slot, const char *task, const char *source,
                      const dm_shard_info *info, bool queued, dm_error *err) {
  sk_info f = {
      .n_ddls = info->n_ddls, .n_tables = info->n_tables, .pos = info->pos, .queued = queued};
  f.task = dmh_shard_strdup(task);
  f.source = dmh_shard_strdup(source);
  f.tschema = dmh_shard_strdup(info->target_schema);
  f.ttable = dmh_shard_strdup(info->target_table);
  f.ddls = dmh_shard_strv_dup(info->ddls, info->n_ddls);
  f.schemas = calloc(info->n_tables, sizeof *f.schemas);
  f.tables = calloc(info->n_tables, sizeof *f.tables);
  bool ok = f.task && f.source && f.tschema && f.ttable && f.ddls && f.schemas && f.tables;
  for (uint32_t i = 0; ok && i < info->n_tables; i++)
    ok = (f.schemas[i] = dmh_shard_strdup(info->tables[i].schema)) &&
         (f.tables[i] = dmh_shard_strdup(info->tables[i].table));
  if (!ok) {
    dmh_shard_info_free(&f);
    return nomem(err);
  }
  if (slot) {
    dmh_shard_info_free(slot);
    *slot = f;
    return 0;
  }
  if (dmh_shard_grow((void **)&k->infos, &k->cap_infos, k->n_infos, sizeof *k->infos) < 0) {
    dmh_shard_info_free(&f);
    return nomem(err);
  }
  k->infos[k->n_infos++] = f;
  return 0;
}

int dmh_shard_put(dmh_shard_keeper *k, const char *task, const char *source,
                  const dm_shard_info *info, dm_error *err) {
  const char *ts = info->target_schema, *tt = info->target_table;
  if (!ts || !tt || !*ts || !*tt || info->n_ddls == 0 || info->n_tables == 0) {
    dm_error_set(err, DM_ERR_INTERNAL, "",
                 "shard lock: the info of source %s (task %s) names no target table, DDL or "
                 "table",
                 source, task);
    return -1;
  }
  sk_info *cur = dmh_shard_find_info(k, task, source, ts, tt, false);
  if (cur) {
    dmh_shard_oprec *op = find_op(k, task, source, ts, tt);
    bool same =
        same_position(&cur->pos, &info->pos) &&
        dmh_shard_ddls_equal((const char *const *)cur->ddls, cur->n_ddls, info->ddls, info->n_ddls);
    if (same || (op && !op->done))
      return 0; /* the same arrival again (a restart), or its operation is out: keep it */
    if (!op) {
      /* a new arrival in place of the old before anything was sent: compare with the others */
      for (size_t i = 0; i < k->n_infos; i++) {
        sk_info *o = &k->infos[i];
        if (o != cur && !o->queued &&
            dmh_shard_same_target(task, ts, tt, o->task, o->tschema, o->ttable))
          return check_same_ddls(o, source, info, err);
      }
      return store_info(k, cur, task, source, info, false, err);
    }
  }
  /* a lock with operations out takes no new member: the info waits for the next lock */
  bool queued = has_ops(k, task, ts, tt);
  sk_info *q = queued ? dmh_shard_find_info(k, task, source, ts, tt, true) : NULL;
  for (size_t i = 0; i < k->n_infos; i++) {
    sk_info *o = &k->infos[i];
    if (o != q && o->queued == queued && !dmh_shard_streq(o->source, source) &&
        dmh_shard_same_target(task, ts, tt, o->task, o->tschema, o->ttable)) {
      if (check_same_ddls(o, source, info, err) < 0)
        return -1;
      break;
    }
  }
  if (store_info(k, q, task, source, info, queued, err) < 0)
    return -1;
  return advance(k, task, ts, tt) < 0 ? nomem(err) : 0;
}

const dmh_shard_oprec *dmh_shard_pending_op(const dmh_shard_keeper *k, const char *task,
                                            const char *source, const char *tschema,
                                            const char *ttable) {
  dmh_shard_oprec *o = find_op(k, task, source, tschema, ttable);
  return o && !o->done ? o : NULL;
}

int dmh_shard_done(dmh_shard_keeper *k, const char *task, const char *source, uint64_t op_id,
                   dm_error *err) {
  for (size_t i = 0; i < k->n_ops; i++) {
    dmh_shard_oprec *o = &k->ops[i];
    if (o->id != op_id || !dmh_shard_streq(o->task, task) || !dmh_shard_streq(o->source, source))
      continue;
    o->done = true;
    char *t = dmh_shard_strdup(o->task), *s = dmh_shard_strdup(o->tschema),
         *tt = dmh_shard_strdup(o->ttable);
    int rc = t && s && tt ? advance(k, t, s, tt) : -1;
    free(t);
    free(s);
    free(tt);
    return rc < 0 ? nomem(err) : 0;
  }
  return 0;
}

dmh_shard_state dmh_shard_state_of(const dmh_shard_keeper *k, const sk_info *first,
                                   const char **owner) {
  dmh_shard_oprec *ex = exec_op(k, first->task, first->tschema, first->ttable);
  *owner = ex ? ex->source : first->source;
  if (!has_ops(k, first->task, first->tschema, first->ttable))
    return DMH_SHARD_WAITING;
  return ex && ex->done ? DMH_SHARD_EXECUTED : DMH_SHARD_SYNCED;
}

int dmh_shard_lock_state(const dmh_shard_keeper *k, const char *lock_id, char *owner,
                         size_t owner_len) {
  sk_info *f = info_by_lock_id(k, lock_id);
  if (!f)
    return -1;
  const char *o;
  dmh_shard_state s =
      dmh_shard_state_of(k, dmh_shard_first_info(k, f->task, f->tschema, f->ttable), &o);
  if (owner && owner_len)
    snprintf(owner, owner_len, "%s", o);
  return (int)s;
}

int dmh_shard_unlock(dmh_shard_keeper *k, const char *lock_id, const char *owner_override,
                     dm_error *err) {
  sk_info *f = info_by_lock_id(k, lock_id);
  if (!f) {
    dm_error_set(err, DM_ERR_SHARD_LOCK_NOT_FOUND, "", "lock %s not found", lock_id);
    return -1;
  }
  f = dmh_shard_first_info(k, f->task, f->tschema, f->ttable);
  if (has_ops(k, f->task, f->tschema, f->ttable)) {
    const char *o;
    dmh_shard_state s = dmh_shard_state_of(k, f, &o);
    dm_error_set(err, DM_ERR_SHARD_LOCK_RESOLVING, "",
                 "lock %s is being resolved (%s, owner %s): its operations are out", lock_id,
                 dmh_shard_state_name(s), o);
    return -1;
  }
  const char *owner = owner_override && *owner_override ? owner_override : f->source;
  sk_info *of = dmh_shard_find_info(k, f->task, owner, f->tschema, f->ttable, false);
  if (!of) {
    char synced[300];
    size_t at = 0;
    synced[0] = '\0';
    for (size_t i = 0; i < k->n_infos && at + 1 < sizeof synced; i++) {
      sk_info *g = &k->infos[i];
      if (!g->queued &&
          dmh_shard_same_target(f->task, f->tschema, f->ttable, g->task, g->tschema, g->ttable)) {
        int w = snprintf(synced + at, sizeof synced - at, "%s%s", at ? ", " : "", g->source);
        at += w > 0 ? (size_t)w : 0;
      }
    }
    dm_error_set(err, DM_ERR_SHARD_NOT_WAITING, "",
                 "owner %s is not waiting for lock %s, but sources [%s] are waiting for it", owner,
                 lock_id, synced);
    return -1;
  }
  /* forced synced: the exec operation is out, so members are the arrived sources only */
  return add_op(k, of, true, f) < 0 ? nomem(err) : 0;
}

void dmh_shard_unlock_revert(dmh_shard_keeper *k, const char *lock_id) {
  sk_info *f = info_by_lock_id(k, lock_id);
  if (!f)
    return;
  for (size_t i = k->n_ops; i-- > 0;)
    if (k->ops[i].exec && !k->ops[i].done &&
        dmh_shard_same_target(f->task, f->tschema, f->ttable, k->ops[i].task, k->ops[i].tschema,
                              k->ops[i].ttable))
      drop_op_at(k, i);
  char *t = dmh_shard_strdup(f->task), *s = dmh_shard_strdup(f->tschema),
       *tt = dmh_shard_strdup(f->ttable);
  if (t && s && tt)
    advance(k, t, s, tt);
  free(t);
  free(s);
  free(tt);
}

void dmh_shard_unlock_skip_rest(dmh_shard_keeper *k, const char *lock_id) {
  sk_info *f = info_by_lock_id(k, lock_id);
  if (!f)
    return;
  dmh_shard_oprec *ex = exec_op(k, f->task, f->tschema, f->ttable);
  const sk_info *owner =
      ex ? dmh_shard_find_info(k, f->task, ex->source, f->tschema, f->ttable, false) : f;
  for (size_t i = 0; owner && i < k->n_infos; i++) {
    sk_info *g = &k->infos[i];
    if (!g->queued &&
        dmh_shard_same_target(f->task, f->tschema, f->ttable, g->task, g->tschema, g->ttable) &&
        !find_op(k, g->task, g->source, g->tschema, g->ttable))
      add_op(k, g, false, owner);
  }
}

void dmh_shard_remove_lock(dmh_shard_keeper *k, const char *lock_id) {
  sk_info *f = info_by_lock_id(k, lock_id);
  if (!f)
    return;
  char *t = dmh_shard_strdup(f->task), *s = dmh_shard_strdup(f->tschema),
       *tt = dmh_shard_strdup(f->ttable);
  if (t && s && tt) {
    resolve(k, t, s, tt);
    advance(k, t, s, tt);
  }
  free(t);
  free(s);
  free(tt);
}

void dmh_shard_remove_task(dmh_shard_keeper *k, const char *task) {
  char *t = dmh_shard_strdup(task);
  if (!t)
    return;
  for (size_t i = k->n_ops; i-- > 0;)
    if (dmh_shard_streq(k->ops[i].task, t))
      drop_op_at(k, i);
  for (size_t i = k->n_infos; i-- > 0;)
    if (dmh_shard_streq(k->infos[i].task, t))
      drop_info_at(k, i);
  for (size_t i = k->n_srcs; i-- > 0;)
    if (dmh_shard_streq(k->srcs[i].task, t)) {
      dmh_shard_tables_free(&k->srcs[i]);
      memmove(&k->srcs[i], &k->srcs[i + 1], (k->n_srcs - i - 1) * sizeof *k->srcs);
      k->n_srcs--;
    }
  free(t);
}

bool dmh_shard_has_task(const dmh_shard_keeper *k, const char *task) {
  for (size_t i = 0; i < k->n_srcs; i++)
    if (dmh_shard_streq(k->srcs[i].task, task))
      return true;
  for (size_t i = 0; i < k->n_infos; i++)
    if (dmh_shard_streq(k->infos[i].task, task))
      return true;
  return false;
}

/* the distinct (task, target) of the current infos, as copies */
typedef struct sk_key {
  char *task, *tschema, *ttable;
} sk_key;

static sk_key *lock_keys(const dmh_shard_keeper *k, const char *task, size_t *n_out) {
  sk_key *keys = calloc(k->n_infos + 1, sizeof *keys);
  size_t n = 0;
  if (!keys)
    return NULL;
  for (size_t i = 0; i < k->n_infos; i++) {
    const sk_info *f = &k->infos[i];
    if (f->queued || (task && !dmh_shard_streq(f->task, task)) ||
        dmh_shard_first_info(k, f->task, f->tschema, f->ttable) != f)
      continue;
    keys[n].task = dmh_shard_strdup(f->task);
    keys[n].tschema = dmh_shard_strdup(f->tschema);
    keys[n].ttable = dmh_shard_strdup(f->ttable);
    n++;
  }
  *n_out = n;
  return keys;
}

static void keys_free(sk_key *keys, size_t n) {
  for (size_t i = 0; keys && i < n; i++) {
    free(keys[i].task);
    free(keys[i].tschema);
    free(keys[i].ttable);
  }
  free(keys);
}

int dmh_shard_advance_all(dmh_shard_keeper *k) {
  size_t n = 0;
  sk_key *keys = lock_keys(k, NULL, &n);
  if (!keys)
    return -1;
  int rc = 0;
  for (size_t i = 0; i < n; i++)
    if (!keys[i].task || !keys[i].tschema || !keys[i].ttable ||
        advance(k, keys[i].task, keys[i].tschema, keys[i].ttable) < 0)
      rc = -1;
  keys_free(keys, n);
  return rc;
}
