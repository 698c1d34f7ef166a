/* The JSON of the shard lock keeper: its persisted records (shard.json) and the listing of its
 * locks (shard-ddl-lock). See shard.h. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmhost/db.h"
#include "dmhost/sdk.h"
#include "shard.h"
#include "shard_internal.h"

/* ---- the listing (DM's ShowDDLLocks) ---- */

static json_object *quoted_tables(char *const *schemas, char *const *tables, uint32_t n,
                                  const sk_info *skip) {
  json_object *a = json_object_new_array();
  for (uint32_t i = 0; a && i < n; i++) {
    bool arrived = false;
    for (uint32_t j = 0; skip && j < skip->n_tables && !arrived; j++)
      arrived = dmh_shard_streq(skip->schemas[j], schemas[i]) &&
                dmh_shard_streq(skip->tables[j], tables[i]);
    if (arrived)
      continue;
    char qs[300], qt[300], buf[620];
    snprintf(buf, sizeof buf, "%s.%s", dm_db_quoted(schemas[i], qs, sizeof qs),
             dm_db_quoted(tables[i], qt, sizeof qt));
    json_object_array_add(a, json_object_new_string(buf));
  }
  return a;
}

static int cmp_lock_json(const void *a, const void *b) {
  json_object *x = *(json_object *const *)a, *y = *(json_object *const *)b;
  json_object *ix = NULL, *iy = NULL;
  json_object_object_get_ex(x, "ID", &ix);
  json_object_object_get_ex(y, "ID", &iy);
  return strcmp(json_object_get_string(ix), json_object_get_string(iy));
}

static json_object *lock_json(const dmh_shard_keeper *k, const sk_info *first) {
  const char *owner;
  dmh_shard_state st = dmh_shard_state_of(k, first, &owner);
  char id[DM_SHARD_LOCK_ID_MAX];
  if (dmh_shard_lock_id(id, sizeof id, first->task, first->tschema, first->ttable) < 0)
    return NULL;
  const sk_info *oi =
      dmh_shard_find_info(k, first->task, owner, first->tschema, first->ttable, false);
  if (!oi)
    oi = first;
  json_object *l = json_object_new_object(), *ddls = json_object_new_array();
  json_object *synced = json_object_new_array(), *unsynced = json_object_new_array();
  json_object *tables = json_object_new_object();
  json_object_object_add(l, "ID", json_object_new_string(id));
  json_object_object_add(l, "task", json_object_new_string(first->task));
  json_object_object_add(l, "mode", json_object_new_string("pessimistic"));
  json_object_object_add(l, "owner", json_object_new_string(owner));
  json_object_object_add(l, "state", json_object_new_string(dmh_shard_state_name(st)));
  for (uint32_t i = 0; i < oi->n_ddls; i++)
    json_object_array_add(ddls, json_object_new_string(oi->ddls[i]));
  bool out = st != DMH_SHARD_WAITING;
  for (size_t i = 0; i < k->n_infos; i++) {
    const sk_info *f = &k->infos[i];
    if (f->queued || !dmh_shard_same_target(first->task, first->tschema, first->ttable, f->task,
                                            f->tschema, f->ttable))
      continue;
    json_object_array_add(synced, json_object_new_string(f->source));
    const sk_tables *rt = dmh_shard_find_tables(k, f->task, f->source, f->tschema, f->ttable);
    json_object *t = json_object_new_object();
    json_object_object_add(t, "synced", quoted_tables(f->schemas, f->tables, f->n_tables, NULL));
    json_object_object_add(t, "unsynced",
                           rt ? quoted_tables(rt->schemas, rt->tables, rt->n, f)
                              : json_object_new_array());
    json_object_object_add(tables, f->source, t);
  }
  for (size_t i = 0; !out && i < k->n_srcs; i++) {
    const sk_tables *rt = &k->srcs[i];
    if (!rt->n ||
        !dmh_shard_same_target(first->task, first->tschema, first->ttable, rt->task, rt->tschema,
                               rt->ttable) ||
        dmh_shard_find_info(k, rt->task, rt->source, rt->tschema, rt->ttable, false))
      continue;
    json_object_array_add(unsynced, json_object_new_string(rt->source));
    json_object *t = json_object_new_object();
    json_object_object_add(t, "synced", json_object_new_array());
    json_object_object_add(t, "unsynced", quoted_tables(rt->schemas, rt->tables, rt->n, NULL));
    json_object_object_add(tables, rt->source, t);
  }
  json_object_object_add(l, "DDLs", ddls);
  json_object_object_add(l, "synced", synced);
  json_object_object_add(l, "unsynced", unsynced);
  json_object_object_add(l, "tables", tables);
  return l;
}

json_object *dmh_shard_locks_json(const dmh_shard_keeper *k, const char *task) {
  json_object *arr = json_object_new_array();
  if (!arr)
    return NULL;
  for (size_t i = 0; i < k->n_infos; i++) {
    const sk_info *f = &k->infos[i];
    if (f->queued || (task && !dmh_shard_streq(f->task, task)) ||
        dmh_shard_first_info(k, f->task, f->tschema, f->ttable) != f)
      continue;
    json_object *l = lock_json(k, f);
    if (l)
      json_object_array_add(arr, l);
  }
  json_object_array_sort(arr, cmp_lock_json);
  return arr;
}

/* ---- shard.json: the records ---- */

static json_object *strv_json(char *const *v, uint32_t n) {
  json_object *a = json_object_new_array();
  for (uint32_t i = 0; a && i < n; i++)
    json_object_array_add(a, json_object_new_string(v[i]));
  return a;
}

static json_object *pairs_json(char *const *schemas, char *const *tables, uint32_t n) {
  json_object *a = json_object_new_array();
  for (uint32_t i = 0; a && i < n; i++) {
    json_object *t = json_object_new_object();
    json_object_object_add(t, "schema", json_object_new_string(schemas[i]));
    json_object_object_add(t, "table", json_object_new_string(tables[i]));
    json_object_array_add(a, t);
  }
  return a;
}

static void add_target(json_object *o, const char *task, const char *source, const char *tschema,
                       const char *ttable) {
  json_object_object_add(o, "task", json_object_new_string(task));
  json_object_object_add(o, "source", json_object_new_string(source));
  json_object_object_add(o, "targetSchema", json_object_new_string(tschema));
  json_object_object_add(o, "targetTable", json_object_new_string(ttable));
}

json_object *dmh_shard_to_json(const dmh_shard_keeper *k, const char *task) {
  json_object *root = json_object_new_object();
  if (!root)
    return NULL;
  json_object *srcs = json_object_new_array(), *infos = json_object_new_array();
  json_object *ops = json_object_new_array();
  json_object_object_add(root, "version", json_object_new_int(1));
  json_object_object_add(root, "nextOpID", json_object_new_int64((int64_t)k->next_op_id));
  for (size_t i = 0; i < k->n_srcs; i++) {
    const sk_tables *t = &k->srcs[i];
    if (task && !dmh_shard_streq(t->task, task))
      continue;
    json_object *o = json_object_new_object();
    add_target(o, t->task, t->source, t->tschema, t->ttable);
    json_object_object_add(o, "tables", pairs_json(t->schemas, t->tables, t->n));
    json_object_array_add(srcs, o);
  }
  for (size_t i = 0; i < k->n_infos; i++) {
    const sk_info *f = &k->infos[i];
    if (task && !dmh_shard_streq(f->task, task))
      continue;
    json_object *o = json_object_new_object(), *pos = json_object_new_object();
    add_target(o, f->task, f->source, f->tschema, f->ttable);
    json_object_object_add(o, "ddls", strv_json(f->ddls, f->n_ddls));
    json_object_object_add(o, "tables", pairs_json(f->schemas, f->tables, f->n_tables));
    json_object_object_add(pos, "name", json_object_new_string(f->pos.name));
    json_object_object_add(pos, "pos", json_object_new_int64((int64_t)f->pos.pos));
    json_object_object_add(pos, "gtid", json_object_new_string(f->pos.gtid));
    json_object_object_add(o, "pos", pos);
    json_object_object_add(o, "queued", json_object_new_boolean(f->queued));
    json_object_array_add(infos, o);
  }
  for (size_t i = 0; i < k->n_ops; i++) {
    const dmh_shard_oprec *p = &k->ops[i];
    if (task && !dmh_shard_streq(p->task, task))
      continue;
    json_object *o = json_object_new_object();
    json_object_object_add(o, "lockID", json_object_new_string(p->lock_id));
    add_target(o, p->task, p->source, p->tschema, p->ttable);
    json_object_object_add(o, "id", json_object_new_int64((int64_t)p->id));
    json_object_object_add(o, "exec", json_object_new_boolean(p->exec));
    json_object_object_add(o, "ddls", strv_json(p->ddls, p->n_ddls));
    json_object_object_add(o, "done", json_object_new_boolean(p->done));
    json_object_array_add(ops, o);
  }
  json_object_object_add(root, "sources", srcs);
  json_object_object_add(root, "infos", infos);
  json_object_object_add(root, "ops", ops);
  return root;
}

/* ---- loading ---- */

typedef struct sk_load {
  dm_error *err;
  const char *where; /* "infos[3]" */
  int failed;
} sk_load;

static json_object *member(sk_load *l, json_object *o, const char *key, json_type type) {
  json_object *v = NULL;
  if (l->failed)
    return NULL;
  if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, type)) {
    dm_error_set(l->err, DM_ERR_STATE, "", "shard.json: %s.%s is missing or not a %s", l->where,
                 key, json_type_to_name(type));
    l->failed = 1;
    return NULL;
  }
  return v;
}

static char *str_member(sk_load *l, json_object *o, const char *key) {
  json_object *v = member(l, o, key, json_type_string);
  return v ? dmh_shard_strdup(json_object_get_string(v)) : NULL;
}

static char **strv_member(sk_load *l, json_object *o, const char *key, uint32_t *n) {
  json_object *a = member(l, o, key, json_type_array);
  *n = 0;
  if (!a)
    return NULL;
  size_t len = json_object_array_length(a);
  char **v = calloc(len + 1, sizeof *v);
  for (size_t i = 0; v && i < len; i++) {
    json_object *e = json_object_array_get_idx(a, i);
    if (!json_object_is_type(e, json_type_string)) {
      dm_error_set(l->err, DM_ERR_STATE, "", "shard.json: %s.%s[%zu] is not a string", l->where,
                   key, i);
      l->failed = 1;
      dmh_shard_strv_free(v, (uint32_t)i);
      return NULL;
    }
    v[i] = dmh_shard_strdup(json_object_get_string(e));
  }
  *n = (uint32_t)len;
  return v;
}

static int pairs_member(sk_load *l, json_object *o, char ***schemas, char ***tables, uint32_t *n) {
  json_object *a = member(l, o, "tables", json_type_array);
  *n = 0;
  if (!a)
    return -1;
  size_t len = json_object_array_length(a);
  *schemas = calloc(len + 1, sizeof **schemas);
  *tables = calloc(len + 1, sizeof **tables);
  if (!*schemas || !*tables)
    return -1;
  for (size_t i = 0; i < len && !l->failed; i++) {
    json_object *e = json_object_array_get_idx(a, i);
    (*schemas)[i] = str_member(l, e, "schema");
    (*tables)[i] = str_member(l, e, "table");
    *n = (uint32_t)i + 1;
  }
  return l->failed ? -1 : 0;
}

static void target_members(sk_load *l, json_object *o, char **task, char **source, char **ts,
                           char **tt) {
  *task = str_member(l, o, "task");
  *source = str_member(l, o, "source");
  *ts = str_member(l, o, "targetSchema");
  *tt = str_member(l, o, "targetTable");
}

int dmh_shard_load_json(dmh_shard_keeper *k, json_object *root, dm_error *err) {
  char where[48];
  sk_load l = {.err = err, .where = "shard.json"};
  json_object *ver = member(&l, root, "version", json_type_int);
  json_object *next = member(&l, root, "nextOpID", json_type_int);
  json_object *srcs = member(&l, root, "sources", json_type_array);
  json_object *infos = member(&l, root, "infos", json_type_array);
  json_object *ops = member(&l, root, "ops", json_type_array);
  if (l.failed)
    return -1;
  if (json_object_get_int(ver) != 1) {
    dm_error_set(err, DM_ERR_STATE, "", "shard.json: version %d, this dmhost reads version 1",
                 json_object_get_int(ver));
    return -1;
  }
  /* parsed into a scratch keeper first, so a file that does not parse adds nothing */
  dmh_shard_keeper *s = dmh_shard_keeper_new();
  if (!s)
    return -1;
  for (size_t i = 0; !l.failed && i < json_object_array_length(srcs); i++) {
    json_object *o = json_object_array_get_idx(srcs, i);
    snprintf(where, sizeof where, "sources[%zu]", i);
    l.where = where;
    if (dmh_shard_grow((void **)&s->srcs, &s->cap_srcs, s->n_srcs, sizeof *s->srcs) < 0)
      break;
    sk_tables *t = &s->srcs[s->n_srcs++];
    memset(t, 0, sizeof *t);
    target_members(&l, o, &t->task, &t->source, &t->tschema, &t->ttable);
    pairs_member(&l, o, &t->schemas, &t->tables, &t->n);
  }
  for (size_t i = 0; !l.failed && i < json_object_array_length(infos); i++) {
    json_object *o = json_object_array_get_idx(infos, i);
    snprintf(where, sizeof where, "infos[%zu]", i);
    l.where = where;
    if (dmh_shard_grow((void **)&s->infos, &s->cap_infos, s->n_infos, sizeof *s->infos) < 0)
      break;
    sk_info *f = &s->infos[s->n_infos++];
    memset(f, 0, sizeof *f);
    target_members(&l, o, &f->task, &f->source, &f->tschema, &f->ttable);
    f->ddls = strv_member(&l, o, "ddls", &f->n_ddls);
    pairs_member(&l, o, &f->schemas, &f->tables, &f->n_tables);
    json_object *pos = member(&l, o, "pos", json_type_object);
    json_object *q = member(&l, o, "queued", json_type_boolean);
    if (l.failed)
      break;
    l.where = "pos";
    json_object *pn = member(&l, pos, "name", json_type_string);
    json_object *pp = member(&l, pos, "pos", json_type_int);
    json_object *pg = member(&l, pos, "gtid", json_type_string);
    if (l.failed)
      break;
    snprintf(f->pos.name, sizeof f->pos.name, "%s", json_object_get_string(pn));
    f->pos.pos = (uint64_t)json_object_get_int64(pp);
    snprintf(f->pos.gtid, sizeof f->pos.gtid, "%s", json_object_get_string(pg));
    f->queued = json_object_get_boolean(q);
  }
  for (size_t i = 0; !l.failed && i < json_object_array_length(ops); i++) {
    json_object *o = json_object_array_get_idx(ops, i);
    snprintf(where, sizeof where, "ops[%zu]", i);
    l.where = where;
    if (dmh_shard_grow((void **)&s->ops, &s->cap_ops, s->n_ops, sizeof *s->ops) < 0)
      break;
    dmh_shard_oprec *p = &s->ops[s->n_ops++];
    memset(p, 0, sizeof *p);
    p->lock_id = str_member(&l, o, "lockID");
    target_members(&l, o, &p->task, &p->source, &p->tschema, &p->ttable);
    json_object *id = member(&l, o, "id", json_type_int);
    json_object *ex = member(&l, o, "exec", json_type_boolean);
    json_object *dn = member(&l, o, "done", json_type_boolean);
    p->ddls = strv_member(&l, o, "ddls", &p->n_ddls);
    if (l.failed)
      break;
    p->id = (uint64_t)json_object_get_int64(id);
    p->exec = json_object_get_boolean(ex);
    p->done = json_object_get_boolean(dn);
  }
  if (l.failed) {
    dmh_shard_keeper_free(s);
    return -1;
  }
  /* moved over; the next operation id stays above every one seen */
  uint64_t nid = (uint64_t)json_object_get_int64(next);
  for (size_t i = 0; i < s->n_ops; i++)
    if (s->ops[i].id >= nid)
      nid = s->ops[i].id + 1;
  if (nid > k->next_op_id)
    k->next_op_id = nid;
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < s->n_srcs; i++)
    if ((rc = dmh_shard_grow((void **)&k->srcs, &k->cap_srcs, k->n_srcs, sizeof *k->srcs)) == 0)
      k->srcs[k->n_srcs++] = s->srcs[i], s->srcs[i] = (sk_tables){0};
  for (size_t i = 0; rc == 0 && i < s->n_infos; i++)
    if ((rc = dmh_shard_grow((void **)&k->infos, &k->cap_infos, k->n_infos, sizeof *k->infos)) == 0)
      k->infos[k->n_infos++] = s->infos[i], s->infos[i] = (sk_info){0};
  for (size_t i = 0; rc == 0 && i < s->n_ops; i++)
    if ((rc = dmh_shard_grow((void **)&k->ops, &k->cap_ops, k->n_ops, sizeof *k->ops)) == 0)
      k->ops[k->n_ops++] = s->ops[i], s->ops[i] = (dmh_shard_oprec){0};
  dmh_shard_keeper_free(s);
  if (rc < 0 || dmh_shard_advance_all(k) < 0) {
    dm_error_set(err, DM_ERR_NO_MEMORY, "", "shard.json: out of memory while loading");
    return -1;
  }
  return 0;
}
