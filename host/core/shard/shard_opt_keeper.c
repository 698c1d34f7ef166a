/*
 * The optimistic locks of a coordinator (shard_opt_keeper.h): records, operations, the locks
 * derived from them, their JSON.
 */
#include "shard_opt_keeper.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ok_lock {
  char *id, *task, *tschema, *ttable;
  dmh_opt_lock *l;
} ok_lock;

typedef struct ok_tables {
  char *lock_id, *task, *source, *tschema, *ttable;
  dm_shard_table *t; /* strings owned */
  uint32_t n;
} ok_tables;

typedef struct ok_info {
  char *lock_id, *task, *source, *schema, *table, *tschema, *ttable;
  char **ddls;
  uint32_t n_ddls;
  char *before, *after;
  bool unlocked; /* released by hand: replayed as such */
  uint64_t seq;  /* arrival order, for the replay */
} ok_info;

struct dmh_opt_keeper {
  ok_lock *locks;
  size_t n_locks;
  ok_tables *tabs;
  size_t n_tabs;
  ok_info *infos;
  size_t n_infos;
  dmh_opt_oprec *ops; /* in id order */
  size_t n_ops;
  uint64_t next_op, next_seq;
  bool replay; /* load: infos rebuild the locks, operations are the stored ones */
};

static bool ok_eq(const char *a, const char *b) {
  return strcmp(a ? a : "", b ? b : "") == 0;
}

static void ok_msg(char *msg, size_t len, const char *what) {
  if (msg && len)
    snprintf(msg, len, "%s", what);
}

/* Grows an array by one zeroed slot. NULL: memory. */
static void *ok_grow(void *arr, size_t *n, size_t size) {
  char *p = realloc(arr, (*n + 1) * size);
  if (!p)
    return NULL;
  memset(p + *n * size, 0, size);
  (*n)++;
  return p;
}

static void ok_free_strs(char **s, uint32_t n) {
  for (uint32_t i = 0; i < n; i++)
    free(s[i]);
  free(s);
}

static char **ok_dup_strs(const char *const *s, uint32_t n) {
  char **out = calloc(n ? n : 1, sizeof *out);
  for (uint32_t i = 0; out && i < n; i++)
    if (!(out[i] = strdup(s[i]))) {
      ok_free_strs(out, i);
      return NULL;
    }
  return out;
}

static void ok_lock_free(ok_lock *l) {
  free(l->id);
  free(l->task);
  free(l->tschema);
  free(l->ttable);
  dmh_opt_lock_free(l->l);
}

static void ok_tables_free(ok_tables *t) {
  for (uint32_t i = 0; i < t->n; i++) {
    free((char *)t->t[i].schema);
    free((char *)t->t[i].table);
  }
  free(t->t);
  free(t->lock_id);
  free(t->task);
  free(t->source);
  free(t->tschema);
  free(t->ttable);
}

static void ok_info_free(ok_info *f) {
  free(f->lock_id);
  free(f->task);
  free(f->source);
  free(f->schema);
  free(f->table);
  free(f->tschema);
  free(f->ttable);
  ok_free_strs(f->ddls, f->n_ddls);
  free(f->before);
  free(f->after);
}

static void ok_op_free(dmh_opt_oprec *o) {
  free(o->lock_id);
  free(o->task);
  free(o->source);
  free(o->schema);
  free(o->table);
  free(o->tschema);
  free(o->ttable);
  free(o->message);
  ok_free_strs(o->ddls, o->n_ddls);
}

dmh_opt_keeper *dmh_opt_keeper_new(void) {
  dmh_opt_keeper *k = calloc(1, sizeof *k);
  if (k)
    k->next_op = 1;
  return k;
}

void dmh_opt_keeper_free(dmh_opt_keeper *k) {
  if (!k)
    return;
  for (size_t i = 0; i < k->n_locks; i++)
    ok_lock_free(&k->locks[i]);
  for (size_t i = 0; i < k->n_tabs; i++)
    ok_tables_free(&k->tabs[i]);
  for (size_t i = 0; i < k->n_infos; i++)
    ok_info_free(&k->infos[i]);
  for (size_t i = 0; i < k->n_ops; i++)
    ok_op_free(&k->ops[i]);
  free(k->locks);
  free(k->tabs);
  free(k->infos);
  free(k->ops);
  free(k);
}

static ok_lock *ok_find_lock(const dmh_opt_keeper *k, const char *id) {
  for (size_t i = 0; i < k->n_locks; i++)
    if (strcmp(k->locks[i].id, id) == 0)
      return &k->locks[i];
  return NULL;
}

/* The lock, made when new (NULL: memory). */
static ok_lock *ok_lock_get(dmh_opt_keeper *k, const char *id, const char *task,
                            const char *tschema, const char *ttable) {
  ok_lock *l = ok_find_lock(k, id);
  if (l)
    return l;
  ok_lock *p = ok_grow(k->locks, &k->n_locks, sizeof *p);
  if (!p)
    return NULL;
  k->locks = p;
  l = &p[k->n_locks - 1];
  l->id = strdup(id);
  l->task = strdup(task);
  l->tschema = strdup(tschema);
  l->ttable = strdup(ttable);
  l->l = dmh_opt_lock_new(id);
  if (!l->id || !l->task || !l->tschema || !l->ttable || !l->l) {
    ok_lock_free(l);
    k->n_locks--;
    return NULL;
  }
  /* the tables the sources reported before the lock existed */
  for (size_t i = 0; i < k->n_tabs; i++)
    if (strcmp(k->tabs[i].lock_id, id) == 0 &&
        dmh_opt_lock_set_tables(l->l, k->tabs[i].source, k->tabs[i].t, k->tabs[i].n) != 0)
      return NULL;
  return l;
}

int dmh_opt_keeper_report_tables(dmh_opt_keeper *k, const char *lock_id, const char *task,
                                 const char *source, const char *tschema, const char *ttable,
                                 const dm_shard_table *tables, uint32_t n, char *msg,
                                 size_t msg_len) {
  ok_tables *rec = NULL;
  for (size_t i = 0; i < k->n_tabs && !rec; i++)
    if (strcmp(k->tabs[i].lock_id, lock_id) == 0 && strcmp(k->tabs[i].source, source) == 0)
      rec = &k->tabs[i];
  if (!rec) {
    ok_tables *p = ok_grow(k->tabs, &k->n_tabs, sizeof *p);
    if (!p)
      goto nomem;
    k->tabs = p;
    rec = &p[k->n_tabs - 1];
    rec->lock_id = strdup(lock_id);
    rec->task = strdup(task);
    rec->source = strdup(source);
    rec->tschema = strdup(tschema);
    rec->ttable = strdup(ttable);
    if (!rec->lock_id || !rec->task || !rec->source || !rec->tschema || !rec->ttable)
      goto nomem;
  }
  dm_shard_table *t = calloc(n ? n : 1, sizeof *t);
  if (!t)
    goto nomem;
  for (uint32_t i = 0; i < n; i++) {
    t[i].schema = strdup(tables[i].schema);
    t[i].table = strdup(tables[i].table);
  }
  for (uint32_t i = 0; i < rec->n; i++) {
    free((char *)rec->t[i].schema);
    free((char *)rec->t[i].table);
  }
  free(rec->t);
  rec->t = t;
  rec->n = n;
  for (uint32_t i = 0; i < n; i++)
    if (!t[i].schema || !t[i].table)
      goto nomem;
  ok_lock *l = ok_find_lock(k, lock_id);
  if (l && dmh_opt_lock_set_tables(l->l, source, t, n) != 0)
    goto nomem;
  return 0;
nomem:
  ok_msg(msg, msg_len, "out of memory keeping a source's tables");
  return -1;
}

static ok_info *ok_find_info(const dmh_opt_keeper *k, const char *task, const char *source,
                             const char *schema, const char *table) {
  for (size_t i = 0; i < k->n_infos; i++) {
    ok_info *f = &k->infos[i];
    if (strcmp(f->task, task) == 0 && strcmp(f->source, source) == 0 &&
        strcmp(f->schema, schema) == 0 && strcmp(f->table, table) == 0)
      return f;
  }
  return NULL;
}

static bool ok_same_info(const ok_info *f, const dm_shard_info *info) {
  if (f->n_ddls != info->n_ddls || !ok_eq(f->before, info->before) || !ok_eq(f->after, info->after))
    return false;
  for (uint32_t i = 0; i < f->n_ddls; i++)
    if (strcmp(f->ddls[i], info->ddls[i]) != 0)
      return false;
  return true;
}

/* The table's operation becomes a new one (the old is dropped). -1: memory. */
static int ok_set_op(dmh_opt_keeper *k, const ok_lock *l, const char *source, const char *schema,
                     const char *table, dm_shard_action action, bool conflict, dmh_opt_stage stage,
                     const char *message, char *const *ddls, uint32_t n_ddls) {
  for (size_t i = 0; i < k->n_ops; i++) {
    dmh_opt_oprec *o = &k->ops[i];
    if (strcmp(o->task, l->task) == 0 && strcmp(o->source, source) == 0 &&
        strcmp(o->schema, schema) == 0 && strcmp(o->table, table) == 0) {
      ok_op_free(o);
      memmove(o, o + 1, (k->n_ops - i - 1) * sizeof *o);
      k->n_ops--;
      break;
    }
  }
  dmh_opt_oprec *p = ok_grow(k->ops, &k->n_ops, sizeof *p);
  if (!p)
    return -1;
  k->ops = p;
  dmh_opt_oprec *o = &p[k->n_ops - 1];
  o->id = k->next_op++;
  o->lock_id = strdup(l->id);
  o->task = strdup(l->task);
  o->source = strdup(source);
  o->schema = strdup(schema);
  o->table = strdup(table);
  o->tschema = strdup(l->tschema);
  o->ttable = strdup(l->ttable);
  o->message = strdup(message ? message : "");
  o->ddls = ok_dup_strs((const char *const *)ddls, n_ddls);
  o->n_ddls = o->ddls ? n_ddls : 0;
  o->action = action;
  o->conflict = conflict;
  o->stage = stage;
  if (!o->lock_id || !o->task || !o->source || !o->schema || !o->table || !o->tschema ||
      !o->ttable || !o->message || !o->ddls)
    return -1;
  return 0;
}

/* The answer of the lock as operations: the caller's, then the redirects. */
static int ok_ops_of(dmh_opt_keeper *k, const ok_lock *l, const char *source, const char *schema,
                     const char *table, const dmh_opt_result *r) {
  if (k->replay)
    return 0;
  int rc = ok_set_op(k, l, source, schema, table,
                     r->verdict == DMH_OPT_EXEC ? DM_SHARD_EXEC : DM_SHARD_SKIP,
                     r->verdict == DMH_OPT_CONFLICT, r->stage, r->message, r->ddls, r->n_ddls);
  for (size_t i = 0; rc == 0 && i < r->n_released; i++)
    rc = ok_set_op(k, l, r->released[i].source, r->released[i].schema, r->released[i].table,
                   DM_SHARD_SKIP, false, DMH_OPT_STAGE_RESOLVED, "", NULL, 0);
  return rc;
}

int dmh_opt_keeper_put(dmh_opt_keeper *k, const char *lock_id, const char *task, const char *source,
                       const dm_shard_info *info, char *msg, size_t msg_len) {
  const char *schema = info->schema ? info->schema : "", *table = info->table ? info->table : "";
  ok_info *f = ok_find_info(k, task, source, schema, table);
  if (f && !k->replay && ok_same_info(f, info)) {
    /* the same info again: its operation stands, and is handed out again if it was done (the
     * unit reports done before its checkpoint can say so after a crash; the checkpoint decides,
     * and a DDL read again means the operation is to be applied again) */
    for (size_t i = 0; i < k->n_ops; i++) {
      dmh_opt_oprec *o = &k->ops[i];
      if (strcmp(o->task, task) == 0 && strcmp(o->source, source) == 0 &&
          strcmp(o->schema, schema) == 0 && strcmp(o->table, table) == 0)
        o->done = false;
    }
    return 0;
  }
  ok_lock *l = ok_lock_get(k, lock_id, task, info->target_schema, info->target_table);
  if (!l) {
    ok_msg(msg, msg_len, "out of memory keeping a lock");
    return -1;
  }
  dmh_opt_result r;
  if (dmh_opt_lock_try_sync(l->l, source, info, &r) != 0) {
    ok_msg(msg, msg_len, r.message);
    return -1;
  }
  int rc = ok_ops_of(k, l, source, schema, table, &r);
  dmh_opt_result_free(&r);
  if (rc == 0 && !f) {
    ok_info *p = ok_grow(k->infos, &k->n_infos, sizeof *p);
    if (!p)
      rc = -1;
    else {
      k->infos = p;
      f = &p[k->n_infos - 1];
    }
  }
  if (rc == 0) {
    ok_info n = {.lock_id = strdup(lock_id),
                 .task = strdup(task),
                 .source = strdup(source),
                 .schema = strdup(schema),
                 .table = strdup(table),
                 .tschema = strdup(info->target_schema),
                 .ttable = strdup(info->target_table),
                 .ddls = ok_dup_strs(info->ddls, info->n_ddls),
                 .n_ddls = info->n_ddls,
                 .before = strdup(info->before),
                 .after = strdup(info->after),
                 .seq = k->next_seq++};
    ok_info_free(f);
    *f = n;
    if (!n.lock_id || !n.task || !n.source || !n.schema || !n.table || !n.tschema || !n.ttable ||
        !n.ddls || !n.before || !n.after)
      rc = -1;
  }
  if (rc != 0)
    ok_msg(msg, msg_len, "out of memory keeping an info");
  return rc;
}

const dmh_opt_oprec *dmh_opt_keeper_pending(const dmh_opt_keeper *k, const char *task,
                                            const char *source, const char *tschema,
                                            const char *ttable) {
  for (size_t i = 0; i < k->n_ops; i++) {
    const dmh_opt_oprec *o = &k->ops[i];
    if (!o->done && strcmp(o->task, task) == 0 && strcmp(o->source, source) == 0 &&
        strcmp(o->tschema, tschema) == 0 && strcmp(o->ttable, ttable) == 0)
      return o;
  }
  return NULL;
}

/* A lock whose members all agree and whose operations are all done ends (DM removes a resolved
 * lock): its infos and operations go; the next DDL starts a new one from its before. */
static void ok_maybe_end(dmh_opt_keeper *k, const char *lock_id) {
  ok_lock *l = ok_find_lock(k, lock_id);
  if (!l || !dmh_opt_lock_synced(l->l, NULL))
    return;
  for (size_t i = 0; i < k->n_ops; i++)
    if (strcmp(k->ops[i].lock_id, lock_id) == 0 && !k->ops[i].done)
      return;
  for (size_t i = k->n_ops; i-- > 0;)
    if (strcmp(k->ops[i].lock_id, lock_id) == 0) {
      ok_op_free(&k->ops[i]);
      memmove(&k->ops[i], &k->ops[i + 1], (k->n_ops - i - 1) * sizeof *k->ops);
      k->n_ops--;
    }
  for (size_t i = k->n_infos; i-- > 0;)
    if (strcmp(k->infos[i].lock_id, lock_id) == 0) {
      ok_info_free(&k->infos[i]);
      memmove(&k->infos[i], &k->infos[i + 1], (k->n_infos - i - 1) * sizeof *k->infos);
      k->n_infos--;
    }
  size_t at = (size_t)(l - k->locks);
  ok_lock_free(l);
  memmove(&k->locks[at], &k->locks[at + 1], (k->n_locks - at - 1) * sizeof *k->locks);
  k->n_locks--;
}

void dmh_opt_keeper_done(dmh_opt_keeper *k, const char *task, const char *source, uint64_t op_id) {
  for (size_t i = 0; i < k->n_ops; i++) {
    dmh_opt_oprec *o = &k->ops[i];
    if (o->id == op_id && strcmp(o->task, task) == 0 && strcmp(o->source, source) == 0) {
      o->done = true;
      char id[DM_SHARD_LOCK_ID_MAX];
      snprintf(id, sizeof id, "%s", o->lock_id);
      ok_maybe_end(k, id);
      return;
    }
  }
}

int dmh_opt_keeper_unlock(dmh_opt_keeper *k, const char *lock_id, const char *source,
                          const char *schema, const char *table, dm_shard_action action, char *msg,
                          size_t msg_len) {
  ok_lock *l = ok_find_lock(k, lock_id);
  if (!l) {
    if (msg)
      snprintf(msg, msg_len, "no optimistic shard DDL lock %s", lock_id);
    return DMH_OPT_ERR_NOT_FOUND;
  }
  dmh_opt_result r;
  if (dmh_opt_lock_unlock(l->l, source, schema, table, action, &r) != 0) {
    ok_msg(msg, msg_len, r.message);
    return strstr(r.message, "not held") ? DMH_OPT_ERR_NOT_HELD : DMH_OPT_ERR_NOT_FOUND;
  }
  int rc = ok_ops_of(k, l, source, schema, table, &r);
  dmh_opt_result_free(&r);
  ok_info *f = ok_find_info(k, l->task, source, schema, table);
  if (f)
    f->unlocked = true;
  if (rc != 0)
    ok_msg(msg, msg_len, "out of memory keeping an operation");
  return rc;
}

void dmh_opt_keeper_remove_task(dmh_opt_keeper *k, const char *task) {
  for (size_t i = k->n_locks; i-- > 0;)
    if (strcmp(k->locks[i].task, task) == 0) {
      ok_lock_free(&k->locks[i]);
      memmove(&k->locks[i], &k->locks[i + 1], (k->n_locks - i - 1) * sizeof *k->locks);
      k->n_locks--;
    }
  for (size_t i = k->n_tabs; i-- > 0;)
    if (strcmp(k->tabs[i].task, task) == 0) {
      ok_tables_free(&k->tabs[i]);
      memmove(&k->tabs[i], &k->tabs[i + 1], (k->n_tabs - i - 1) * sizeof *k->tabs);
      k->n_tabs--;
    }
  for (size_t i = k->n_infos; i-- > 0;)
    if (strcmp(k->infos[i].task, task) == 0) {
      ok_info_free(&k->infos[i]);
      memmove(&k->infos[i], &k->infos[i + 1], (k->n_infos - i - 1) * sizeof *k->infos);
      k->n_infos--;
    }
  for (size_t i = k->n_ops; i-- > 0;)
    if (strcmp(k->ops[i].task, task) == 0) {
      ok_op_free(&k->ops[i]);
      memmove(&k->ops[i], &k->ops[i + 1], (k->n_ops - i - 1) * sizeof *k->ops);
      k->n_ops--;
    }
}

bool dmh_opt_keeper_has_task(const dmh_opt_keeper *k, const char *task) {
  for (size_t i = 0; i < k->n_tabs; i++)
    if (strcmp(k->tabs[i].task, task) == 0)
      return true;
  for (size_t i = 0; i < k->n_infos; i++)
    if (strcmp(k->infos[i].task, task) == 0)
      return true;
  return false;
}

/* ---- JSON ---------------------------------------------------------------------------------- */

static int ok_cmp_id(const void *a, const void *b) {
  json_object *x = *(json_object *const *)a, *y = *(json_object *const *)b, *ix, *iy;
  json_object_object_get_ex(x, "ID", &ix);
  json_object_object_get_ex(y, "ID", &iy);
  return strcmp(json_object_get_string(ix), json_object_get_string(iy));
}

json_object *dmh_opt_keeper_locks_json(const dmh_opt_keeper *k, const char *task) {
  json_object *a = json_object_new_array();
  for (size_t i = 0; a && i < k->n_locks; i++) {
    if (task && strcmp(k->locks[i].task, task) != 0)
      continue;
    char *s = dmh_opt_lock_json(k->locks[i].l);
    json_object *o = s ? json_tokener_parse(s) : NULL;
    free(s);
    if (!o) {
      json_object_put(a);
      return NULL;
    }
    json_object_object_add(o, "task", json_object_new_string(k->locks[i].task));
    json_object_array_add(a, o);
  }
  if (a)
    json_object_array_sort(a, ok_cmp_id);
  return a;
}

static json_object *ok_strs(char *const *s, uint32_t n) {
  json_object *a = json_object_new_array();
  for (uint32_t i = 0; a && i < n; i++)
    json_object_array_add(a, json_object_new_string(s[i]));
  return a;
}

static void ok_add_str(json_object *o, const char *key, const char *v) {
  json_object_object_add(o, key, json_object_new_string(v ? v : ""));
}

json_object *dmh_opt_keeper_to_json(const dmh_opt_keeper *k, const char *task) {
  json_object *root = json_object_new_object(), *tabs = json_object_new_array(),
              *infos = json_object_new_array(), *ops = json_object_new_array();
  if (!root || !tabs || !infos || !ops) {
    json_object_put(root);
    json_object_put(tabs);
    json_object_put(infos);
    json_object_put(ops);
    return NULL;
  }
  json_object_object_add(root, "nextOOpID", json_object_new_int64((int64_t)k->next_op));
  json_object_object_add(root, "otables", tabs);
  json_object_object_add(root, "oinfos", infos);
  json_object_object_add(root, "oops", ops);
  for (size_t i = 0; i < k->n_tabs; i++) {
    const ok_tables *t = &k->tabs[i];
    if (task && strcmp(t->task, task) != 0)
      continue;
    json_object *o = json_object_new_object(), *a = json_object_new_array();
    ok_add_str(o, "lockID", t->lock_id);
    ok_add_str(o, "task", t->task);
    ok_add_str(o, "source", t->source);
    ok_add_str(o, "targetSchema", t->tschema);
    ok_add_str(o, "targetTable", t->ttable);
    for (uint32_t j = 0; j < t->n; j++) {
      json_object *x = json_object_new_object();
      ok_add_str(x, "schema", t->t[j].schema);
      ok_add_str(x, "table", t->t[j].table);
      json_object_array_add(a, x);
    }
    json_object_object_add(o, "tables", a);
    json_object_array_add(tabs, o);
  }
  for (size_t i = 0; i < k->n_infos; i++) {
    const ok_info *f = &k->infos[i];
    if (task && strcmp(f->task, task) != 0)
      continue;
    json_object *o = json_object_new_object();
    ok_add_str(o, "lockID", f->lock_id);
    ok_add_str(o, "task", f->task);
    ok_add_str(o, "source", f->source);
    ok_add_str(o, "schema", f->schema);
    ok_add_str(o, "table", f->table);
    ok_add_str(o, "targetSchema", f->tschema);
    ok_add_str(o, "targetTable", f->ttable);
    json_object_object_add(o, "ddls", ok_strs(f->ddls, f->n_ddls));
    ok_add_str(o, "before", f->before);
    ok_add_str(o, "after", f->after);
    json_object_object_add(o, "unlocked", json_object_new_boolean(f->unlocked));
    json_object_object_add(o, "seq", json_object_new_int64((int64_t)f->seq));
    json_object_array_add(infos, o);
  }
  for (size_t i = 0; i < k->n_ops; i++) {
    const dmh_opt_oprec *p = &k->ops[i];
    if (task && strcmp(p->task, task) != 0)
      continue;
    json_object *o = json_object_new_object();
    ok_add_str(o, "lockID", p->lock_id);
    ok_add_str(o, "task", p->task);
    ok_add_str(o, "source", p->source);
    ok_add_str(o, "schema", p->schema);
    ok_add_str(o, "table", p->table);
    ok_add_str(o, "targetSchema", p->tschema);
    ok_add_str(o, "targetTable", p->ttable);
    json_object_object_add(o, "id", json_object_new_int64((int64_t)p->id));
    ok_add_str(o, "action", p->action == DM_SHARD_EXEC ? "exec" : "skip");
    json_object_object_add(o, "conflict", json_object_new_boolean(p->conflict));
    ok_add_str(o, "stage", dmh_opt_stage_name(p->stage));
    ok_add_str(o, "message", p->message);
    json_object_object_add(o, "ddls", ok_strs(p->ddls, p->n_ddls));
    json_object_object_add(o, "done", json_object_new_boolean(p->done));
    json_object_array_add(ops, o);
  }
  return root;
}

/* A string member, "" when absent. */
static const char *ok_get(json_object *o, const char *key) {
  json_object *v;
  return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string)
             ? json_object_get_string(v)
             : NULL;
}

static int64_t ok_get_int(json_object *o, const char *key) {
  json_object *v;
  return json_object_object_get_ex(o, key, &v) ? json_object_get_int64(v) : 0;
}

static bool ok_get_bool(json_object *o, const char *key) {
  json_object *v;
  return json_object_object_get_ex(o, key, &v) && json_object_get_boolean(v);
}

/* The strings of an array member (borrowed from the JSON); n counts them. NULL: bad or memory. */
static const char **ok_get_strs(json_object *o, const char *key, uint32_t *n) {
  json_object *a;
  *n = 0;
  if (!json_object_object_get_ex(o, key, &a) || !json_object_is_type(a, json_type_array))
    return NULL;
  size_t len = json_object_array_length(a);
  const char **s = calloc(len ? len : 1, sizeof *s);
  for (size_t i = 0; s && i < len; i++)
    if (!(s[i] = json_object_get_string(json_object_array_get_idx(a, i)))) {
      free(s);
      return NULL;
    }
  *n = (uint32_t)len;
  return s;
}

static json_object *ok_array(json_object *root, const char *key) {
  json_object *a;
  return json_object_object_get_ex(root, key, &a) && json_object_is_type(a, json_type_array) ? a
                                                                                             : NULL;
}

static int ok_cmp_seq(const void *a, const void *b) {
  int64_t x = ok_get_int(*(json_object *const *)a, "seq"),
          y = ok_get_int(*(json_object *const *)b, "seq");
  return x < y ? -1 : x > y;
}

int dmh_opt_keeper_load_json(dmh_opt_keeper *k, json_object *root, char *msg, size_t msg_len) {
  json_object *tabs = ok_array(root, "otables"), *infos = ok_array(root, "oinfos"),
              *ops = ok_array(root, "oops");
  int rc = 0;
  for (size_t i = 0; tabs && rc == 0 && i < json_object_array_length(tabs); i++) {
    json_object *o = json_object_array_get_idx(tabs, i), *a;
    const char *lock = ok_get(o, "lockID"), *task = ok_get(o, "task"), *src = ok_get(o, "source");
    const char *ts = ok_get(o, "targetSchema"), *tt = ok_get(o, "targetTable");
    if (!lock || !task || !src || !ts || !tt || !json_object_object_get_ex(o, "tables", &a)) {
      ok_msg(msg, msg_len, "shard.json: an entry of \"otables\" lacks a field");
      return -1;
    }
    size_t n = json_object_array_length(a);
    dm_shard_table *t = calloc(n ? n : 1, sizeof *t);
    if (!t)
      return -1;
    for (size_t j = 0; j < n; j++) {
      json_object *x = json_object_array_get_idx(a, j);
      t[j].schema = ok_get(x, "schema") ? ok_get(x, "schema") : "";
      t[j].table = ok_get(x, "table") ? ok_get(x, "table") : "";
    }
    rc = dmh_opt_keeper_report_tables(k, lock, task, src, ts, tt, t, (uint32_t)n, msg, msg_len);
    free(t);
  }
  for (size_t i = 0; ops && rc == 0 && i < json_object_array_length(ops); i++) {
    json_object *o = json_object_array_get_idx(ops, i);
    const char *lock = ok_get(o, "lockID"), *task = ok_get(o, "task"), *src = ok_get(o, "source");
    const char *s = ok_get(o, "schema"), *t = ok_get(o, "table"), *ts = ok_get(o, "targetSchema"),
               *tt = ok_get(o, "targetTable"), *stage = ok_get(o, "stage");
    uint32_t n = 0;
    const char **ddls = ok_get_strs(o, "ddls", &n);
    if (!lock || !task || !src || !s || !t || !ts || !tt || !ddls || !stage) {
      free(ddls);
      ok_msg(msg, msg_len, "shard.json: an entry of \"oops\" lacks a field");
      return -1;
    }
    dmh_opt_stage st = DMH_OPT_STAGE_NONE;
    for (int x = DMH_OPT_STAGE_NONE; x <= DMH_OPT_STAGE_UNLOCKED; x++)
      if (strcmp(stage, dmh_opt_stage_name((dmh_opt_stage)x)) == 0)
        st = (dmh_opt_stage)x;
    ok_lock l = {
        .id = (char *)lock, .task = (char *)task, .tschema = (char *)ts, .ttable = (char *)tt};
    rc = ok_set_op(k, &l, src, s, t,
                   ok_eq(ok_get(o, "action"), "exec") ? DM_SHARD_EXEC : DM_SHARD_SKIP,
                   ok_get_bool(o, "conflict"), st, ok_get(o, "message"), (char *const *)ddls, n);
    free(ddls);
    if (rc == 0) {
      k->ops[k->n_ops - 1].id = (uint64_t)ok_get_int(o, "id");
      k->ops[k->n_ops - 1].done = ok_get_bool(o, "done");
    }
  }
  int64_t next = ok_get_int(root, "nextOOpID");
  if ((uint64_t)next > k->next_op)
    k->next_op = (uint64_t)next;
  if (infos && rc == 0) {
    /* the replay: infos in arrival order through the locks, operations as stored */
    size_t n = json_object_array_length(infos);
    json_object **sorted = calloc(n ? n : 1, sizeof *sorted);
    if (!sorted)
      return -1;
    for (size_t i = 0; i < n; i++)
      sorted[i] = json_object_array_get_idx(infos, i);
    qsort(sorted, n, sizeof *sorted, ok_cmp_seq);
    k->replay = true;
    for (size_t i = 0; rc == 0 && i < n; i++) {
      json_object *o = sorted[i];
      uint32_t nd = 0;
      const char **ddls = ok_get_strs(o, "ddls", &nd);
      const char *lock = ok_get(o, "lockID"), *task = ok_get(o, "task"), *src = ok_get(o, "source");
      dm_shard_info info = {.target_schema = ok_get(o, "targetSchema"),
                            .target_table = ok_get(o, "targetTable"),
                            .ddls = ddls,
                            .n_ddls = nd,
                            .schema = ok_get(o, "schema"),
                            .table = ok_get(o, "table"),
                            .before = ok_get(o, "before"),
                            .after = ok_get(o, "after")};
      if (!ddls || !lock || !task || !src || !info.target_schema || !info.target_table ||
          !info.schema || !info.table || !info.before || !info.after) {
        ok_msg(msg, msg_len, "shard.json: an entry of \"oinfos\" lacks a field");
        rc = -1;
      } else
        rc = dmh_opt_keeper_put(k, lock, task, src, &info, msg, msg_len);
      if (rc == 0 && ok_get_bool(o, "unlocked")) {
        dmh_opt_result r;
        ok_lock *l = ok_find_lock(k, lock);
        if (l && dmh_opt_lock_unlock(l->l, src, info.schema, info.table, DM_SHARD_SKIP, &r) == 0)
          dmh_opt_result_free(&r);
        ok_info *f = ok_find_info(k, task, src, info.schema, info.table);
        if (f)
          f->unlocked = true;
      }
      free(ddls);
    }
    k->replay = false;
    free(sorted);
  }
  return rc;
}
