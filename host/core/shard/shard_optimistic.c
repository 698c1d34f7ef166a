/*
 * One optimistic shard DDL lock (shard_optimistic.h): the members' structures, DM's TrySync on
 * them, the conflict and resolution rules, unlock by hand.
 */
#include "shard_optimistic.h"

#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shard_join.h"

/* A member table. DM's three maps are its three structures: `cur` (DM's tables: what the target
 * must accept for it now), `fin` (finalTables: where it goes, its held after when in conflict),
 * `conf` (conflictTables: its after, only while in_conflict). */
typedef struct opt_member {
  dmh_opt_member_ref ref;
  bool has_table; /* cur and fin are known (its info or the lock's first before) */
  dmh_sj_table cur, fin, conf;
  bool in_conflict;
  dmh_opt_stage stage;
  char message[1024];
  char **ddls; /* its last info's DDLs: what unlock -a exec runs */
  uint32_t n_ddls;
  dmh_sj_table after; /* its last info's after */
} opt_member;

struct dmh_opt_lock {
  char *id;
  bool has_init;
  dmh_sj_table init; /* DM's initTable: the first info's before */
  opt_member **m;
  size_t n, cap;
  dmh_sj_dropped dropped;
  bool oom; /* a predicate ran out of memory: the call answers -1 */
};

const char *dmh_opt_stage_name(dmh_opt_stage s) {
  switch (s) {
  case DMH_OPT_STAGE_DETECTED:
    return "detected";
  case DMH_OPT_STAGE_SKIP_WAIT:
    return "skip and wait for redirect";
  case DMH_OPT_STAGE_RESOLVED:
    return "resolved";
  case DMH_OPT_STAGE_UNLOCKED:
    return "unlocked";
  default:
    return "none";
  }
}

static void opt_msg(char *out, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void opt_msg(char *out, size_t len, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(out, len, fmt, ap);
  va_end(ap);
}

static void opt_free_ddls(char **ddls, uint32_t n) {
  for (uint32_t i = 0; i < n; i++)
    free(ddls[i]);
  free(ddls);
}

static int opt_copy_ddls(const char *const *ddls, uint32_t n, char ***out, uint32_t *out_n) {
  *out = NULL;
  *out_n = 0;
  if (!n)
    return 0;
  if (!(*out = calloc(n, sizeof **out)))
    return -1;
  for (; *out_n < n; (*out_n)++)
    if (!((*out)[*out_n] = strdup(ddls[*out_n])))
      return -1;
  return 0;
}

void dmh_opt_result_free(dmh_opt_result *r) {
  opt_free_ddls(r->ddls, r->n_ddls);
  free(r->released);
  r->ddls = NULL;
  r->n_ddls = 0;
  r->released = NULL;
  r->n_released = 0;
}

static void opt_member_free(opt_member *m) {
  dmh_sj_table_free(&m->cur);
  dmh_sj_table_free(&m->fin);
  dmh_sj_table_free(&m->conf);
  dmh_sj_table_free(&m->after);
  opt_free_ddls(m->ddls, m->n_ddls);
  free(m);
}

dmh_opt_lock *dmh_opt_lock_new(const char *id) {
  dmh_opt_lock *l = calloc(1, sizeof *l);
  if (l && !(l->id = strdup(id))) {
    free(l);
    return NULL;
  }
  return l;
}

void dmh_opt_lock_free(dmh_opt_lock *l) {
  if (!l)
    return;
  for (size_t i = 0; i < l->n; i++)
    opt_member_free(l->m[i]);
  free(l->m);
  dmh_sj_table_free(&l->init);
  dmh_sj_dropped_free(&l->dropped);
  free(l->id);
  free(l);
}

const char *dmh_opt_lock_id(const dmh_opt_lock *l) {
  return l->id;
}

/* The member's name in the partially dropped columns and in messages. */
static void opt_member_key(const opt_member *m, char *out, size_t len) {
  snprintf(out, len, "%s`%s`.`%s`", m->ref.source, m->ref.schema, m->ref.table);
}

/* *dst becomes a copy of src (its old content freed). 0 or -1. */
static int opt_set(dmh_sj_table *dst, const dmh_sj_table *src) {
  dmh_sj_table c;
  if (dmh_sj_table_copy(src, &c) != 0)
    return -1;
  dmh_sj_table_free(dst);
  *dst = c;
  return 0;
}

static opt_member *opt_find(const dmh_opt_lock *l, const char *source, const char *schema,
                            const char *table, size_t *at) {
  for (size_t i = 0; i < l->n; i++)
    if (strcmp(l->m[i]->ref.source, source) == 0 && strcmp(l->m[i]->ref.schema, schema) == 0 &&
        strcmp(l->m[i]->ref.table, table) == 0) {
      if (at)
        *at = i;
      return l->m[i];
    }
  return NULL;
}

/* The member, added (with the lock's init structure, when there is one) if new. NULL: memory. */
static opt_member *opt_add(dmh_opt_lock *l, const char *source, const char *schema,
                           const char *table) {
  opt_member *m = opt_find(l, source, schema, table, NULL);
  if (m)
    return m;
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 8;
    opt_member **p = realloc(l->m, cap * sizeof *p);
    if (!p)
      return NULL;
    l->m = p;
    l->cap = cap;
  }
  if (!(m = calloc(1, sizeof *m)))
    return NULL;
  snprintf(m->ref.source, sizeof m->ref.source, "%s", source);
  snprintf(m->ref.schema, sizeof m->ref.schema, "%s", schema);
  snprintf(m->ref.table, sizeof m->ref.table, "%s", table);
  if (l->has_init) {
    if (opt_set(&m->cur, &l->init) != 0 || opt_set(&m->fin, &l->init) != 0) {
      opt_member_free(m);
      return NULL;
    }
    m->has_table = true;
  }
  l->m[l->n++] = m;
  return m;
}

static void opt_remove_at(dmh_opt_lock *l, size_t i) {
  char key[512];
  opt_member_key(l->m[i], key, sizeof key);
  dmh_sj_dropped_clear_member(&l->dropped, key);
  opt_member_free(l->m[i]);
  memmove(&l->m[i], &l->m[i + 1], (l->n - i - 1) * sizeof *l->m);
  l->n--;
}

int dmh_opt_lock_set_tables(dmh_opt_lock *l, const char *source, const dm_shard_table *tables,
                            uint32_t n) {
  for (size_t i = l->n; i-- > 0;) {
    if (strcmp(l->m[i]->ref.source, source) != 0)
      continue;
    bool keep = false;
    for (uint32_t j = 0; j < n && !keep; j++)
      keep = strcmp(tables[j].schema, l->m[i]->ref.schema) == 0 &&
             strcmp(tables[j].table, l->m[i]->ref.table) == 0;
    if (!keep)
      opt_remove_at(l, i);
  }
  for (uint32_t j = 0; j < n; j++)
    if (!opt_add(l, source, tables[j].schema, tables[j].table))
      return -1;
  return 0;
}

/* ---- joins of the members' structures (DM's joinTables and its predicates) ----------------- */

enum { OPT_NORMAL, OPT_FINAL, OPT_CONFLICT };

static const dmh_sj_table *opt_of(const opt_member *m, int which) {
  if (!m->has_table)
    return NULL;
  if (which == OPT_CONFLICT)
    return m->in_conflict ? &m->conf : NULL;
  return which == OPT_FINAL ? &m->fin : &m->cur;
}

/* The join of the members' `which` structures into *out. 0; 1 conflict (why names the first
 * member that did not join); -1 memory; 2 when no member has one (*out empty). */
static int opt_join(dmh_opt_lock *l, int which, dmh_sj_table *out, char *why, size_t why_len) {
  const dmh_sj_table **tabs = calloc(l->n ? l->n : 1, sizeof *tabs);
  const opt_member **who = calloc(l->n ? l->n : 1, sizeof *who);
  memset(out, 0, sizeof *out);
  int rc = -1;
  if (!tabs || !who)
    goto done;
  size_t k = 0;
  for (size_t i = 0; i < l->n; i++)
    if ((tabs[k] = opt_of(l->m[i], which)))
      who[k++] = l->m[i];
  if (!k) {
    rc = 2;
    goto done;
  }
  char inner[DMH_SJ_WHY_MAX] = "";
  size_t bad = 0;
  rc = dmh_sj_join_all(tabs, k, out, &bad, inner, sizeof inner);
  if (rc == 1 && why)
    opt_msg(why, why_len, "%s (source %s, `%s`.`%s`, against the tables before it)", inner,
            who[bad]->ref.source, who[bad]->ref.schema, who[bad]->ref.table);
done:
  if (rc < 0)
    l->oom = true;
  free(tabs);
  free(who);
  return rc;
}

/* DM's allTableSmaller: with the join of `which`, no member in conflict may still be contained
 * as it was before its conflicting DDL (e.g. after RENAME a TO b, no table still has a). */
static bool opt_all_smaller(dmh_opt_lock *l, int which) {
  dmh_sj_table j;
  if (opt_join(l, which, &j, NULL, 0) != 0)
    return false;
  bool ok = true;
  for (size_t i = 0; i < l->n && ok; i++) {
    if (!l->m[i]->in_conflict)
      continue;
    int cmp;
    int rc = dmh_sj_compare(&j, &l->m[i]->cur, &cmp, NULL, 0);
    if (rc < 0)
      l->oom = true;
    ok = rc == 1;
  }
  dmh_sj_table_free(&j);
  return ok;
}

/* DM's allTableLarger, on the change itself: every judged structure has each column a
 * conflicting member's DDL added or changed, at least as its after has it (e.g. after RENAME a TO
 * b, every table has b). DM joins the whole before with each judged table instead, which also
 * asks a held table to have every column another member added meanwhile (a table held at a DROP
 * then never resolved once a third member added a nullable column): dmhost judges only what the
 * conflicting DDL changed; the columns it removed are allTableSmaller's. */
static bool opt_all_larger(dmh_opt_lock *l, int judge) {
  for (size_t i = 0; i < l->n; i++) {
    const opt_member *c = l->m[i];
    if (!c->in_conflict)
      continue;
    for (uint32_t x = 0; x < c->conf.n_cols; x++) {
      const dmh_sj_column *want = &c->conf.cols[x], *was = dmh_sj_column_find(&c->cur, want->name);
      dmh_sj_table one_want = {.cols = (dmh_sj_column *)want, .n_cols = 1};
      dmh_sj_table one_was = {.cols = (dmh_sj_column *)was, .n_cols = 1};
      if (was && dmh_sj_equal(&one_want, &one_was))
        continue; /* not part of the change */
      for (size_t k = 0; k < l->n; k++) {
        const dmh_sj_table *f = opt_of(l->m[k], judge);
        const dmh_sj_column *has = f ? dmh_sj_column_find(f, want->name) : NULL;
        if (!f)
          continue;
        if (!has)
          return false;
        dmh_sj_table one_has = {.cols = (dmh_sj_column *)has, .n_cols = 1};
        int cmp = -1, rc = dmh_sj_compare(&one_has, &one_want, &cmp, NULL, 0);
        if (rc < 0)
          l->oom = true;
        if (rc != 0 || cmp < 0)
          return false;
      }
    }
  }
  return true;
}

static bool opt_no_conflict(dmh_opt_lock *l, int which) {
  dmh_sj_table j;
  if (opt_join(l, which, &j, NULL, 0) != 0)
    return false;
  dmh_sj_table_free(&j);
  return opt_all_smaller(l, which) && opt_all_larger(l, which);
}

static size_t opt_n_conflict(const dmh_opt_lock *l) {
  size_t n = 0;
  for (size_t i = 0; i < l->n; i++)
    n += l->m[i]->in_conflict;
  return n;
}

/* DM's noConflictWithNormalTables: m's after, as the only conflict against everyone's current
 * structure, has no conflict (a held table that re-put a DDL the others already made). */
static bool opt_fits_normal(dmh_opt_lock *l, opt_member *m) {
  /* save the conflict state, set the view, judge, restore */
  bool *saved = calloc(l->n, sizeof *saved);
  dmh_sj_table *fins = calloc(l->n, sizeof *fins);
  bool ok = false;
  if (!saved || !fins) {
    l->oom = true;
    goto done;
  }
  for (size_t i = 0; i < l->n; i++) {
    saved[i] = l->m[i]->in_conflict;
    fins[i] = l->m[i]->fin;
    memset(&l->m[i]->fin, 0, sizeof l->m[i]->fin);
    l->m[i]->in_conflict = l->m[i] == m;
    if (l->m[i]->has_table &&
        dmh_sj_table_copy(l->m[i] == m ? &m->conf : &l->m[i]->cur, &l->m[i]->fin) != 0)
      l->oom = true;
  }
  ok = !l->oom && opt_no_conflict(l, OPT_FINAL);
  for (size_t i = 0; i < l->n; i++) {
    dmh_sj_table_free(&l->m[i]->fin);
    l->m[i]->fin = fins[i];
    l->m[i]->in_conflict = saved[i];
  }
done:
  free(saved);
  free(fins);
  return ok;
}

/* DM's redirectForConflictTables + resolveTables: every member in conflict is released (listed in
 * res, stage resolved) and every member takes its final structure. 0 or -1. */
static int opt_resolve(dmh_opt_lock *l, const opt_member *caller, dmh_opt_result *res) {
  size_t n = opt_n_conflict(l);
  if (n && !(res->released = calloc(n, sizeof *res->released)))
    return -1;
  for (size_t i = 0; i < l->n; i++) {
    opt_member *m = l->m[i];
    if (m->in_conflict && m != caller) {
      res->released[res->n_released++] = m->ref;
      m->stage = DMH_OPT_STAGE_RESOLVED;
      m->message[0] = '\0';
    }
    m->in_conflict = false;
    dmh_sj_table_free(&m->conf);
    if (m->has_table && opt_set(&m->cur, &m->fin) != 0)
      return -1;
  }
  return 0;
}

/* ---- an info ------------------------------------------------------------------------------- */

/* The structure under `key` of a JSON object text (the scratch check's "target"). 0 found, 1 not
 * there, -1 bad or memory (why). */
static int opt_sub_table(const char *json, const char *key, dmh_sj_table *out, char *err,
                         size_t err_len, char *why, size_t why_len) {
  json_object *root = json_tokener_parse(json), *v;
  int rc = 1;
  err[0] = '\0';
  if (root && json_object_object_get_ex(root, "target_error", &v) &&
      json_object_is_type(v, json_type_string)) {
    snprintf(err, err_len, "%s", json_object_get_string(v));
    rc = 1;
  } else if (root && json_object_object_get_ex(root, key, &v) &&
             json_object_is_type(v, json_type_object))
    rc = dmh_sj_table_from_json(json_object_to_json_string(v), out, why, why_len) == 0 ? 0 : -1;
  json_object_put(root);
  return rc;
}

/* dmhost's scratch check: the target after the info's statements (on a scratch copy) accepts
 * every row of the new join, and a column the statements leave there that the join lost can be
 * filled. 0 passes (or nothing to check), 1 a conflict (why), -1 bad JSON or memory. */
static int opt_scratch_check(const char *after_json, const dmh_sj_table *old_join,
                             const dmh_sj_table *new_join, char *why, size_t why_len) {
  dmh_sj_table t;
  char err[512];
  int rc = opt_sub_table(after_json, "target", &t, err, sizeof err, why, why_len);
  if (rc < 0)
    return -1;
  if (rc == 1) {
    if (!err[0])
      return 0;
    opt_msg(why, why_len, "the DDLs fail on a copy of the target table: %s", err);
    return 1;
  }
  rc = 0;
  for (uint32_t i = 0; i < new_join->n_cols && rc == 0; i++) {
    const dmh_sj_column *jc = &new_join->cols[i], *tc = dmh_sj_column_find(&t, jc->name);
    char jt[160], tt[160];
    dmh_sj_column_text(jc, jt, sizeof jt);
    if (!tc) {
      opt_msg(why, why_len,
              "column `%s`: the target would not have it after the DDLs, the joined table has "
              "%s",
              jc->name, jt);
      rc = 1;
      break;
    }
    dmh_sj_column_text(tc, tt, sizeof tt);
    dmh_sj_table one_t = {.cols = (dmh_sj_column *)tc, .n_cols = 1};
    dmh_sj_table one_j = {.cols = (dmh_sj_column *)jc, .n_cols = 1};
    int cmp = 0;
    int c = dmh_sj_compare(&one_t, &one_j, &cmp, NULL, 0);
    if (c < 0)
      rc = -1;
    else if (c != 0 || cmp < 0) {
      opt_msg(why, why_len,
              "column `%s`: the target would be %s after the DDLs, which does not accept every "
              "row of the joined table's %s",
              jc->name, tt, jt);
      rc = 1;
    }
  }
  for (uint32_t i = 0; i < t.n_cols && rc == 0; i++) {
    const dmh_sj_column *tc = &t.cols[i];
    if (dmh_sj_column_find(new_join, tc->name) || !dmh_sj_column_find(old_join, tc->name) ||
        tc->nullable || tc->default_value)
      continue;
    opt_msg(why, why_len,
            "column `%s`: the joined table dropped it but the target keeps it NOT NULL without a "
            "default after the DDLs",
            tc->name);
    rc = 1;
  }
  dmh_sj_table_free(&t);
  return rc;
}

/* A conflict only a user resolves (DM's ConflictDetected): the member goes back to its before
 * and is held. */
static int opt_detected(dmh_opt_lock *l, opt_member *m, const dmh_sj_table *before,
                        const dm_shard_info *info, const char *why, dmh_opt_result *res) {
  m->in_conflict = false;
  dmh_sj_table_free(&m->conf);
  if (opt_set(&m->cur, before) != 0 || opt_set(&m->fin, before) != 0)
    return -1;
  m->stage = DMH_OPT_STAGE_DETECTED;
  opt_msg(m->message, sizeof m->message,
          "lock %s: DDL %s of `%s`.`%s` (source %s) conflicts: %s; the table is held until "
          "shard-ddl-lock unlock",
          l->id, info->n_ddls ? info->ddls[0] : "(none)", m->ref.schema, m->ref.table,
          m->ref.source, why);
  res->verdict = DMH_OPT_CONFLICT;
  res->stage = m->stage;
  snprintf(res->message, sizeof res->message, "%s", m->message);
  return 0;
}

/* The info runs (EXEC) or not (SKIP); the caller's stage is none. */
static int opt_answer(opt_member *m, const dm_shard_info *info, bool exec, dmh_opt_result *res) {
  m->stage = DMH_OPT_STAGE_NONE;
  m->message[0] = '\0';
  res->verdict = exec ? DMH_OPT_EXEC : DMH_OPT_SKIP;
  res->stage = m->stage;
  if (exec && opt_copy_ddls(info->ddls, info->n_ddls, &res->ddls, &res->n_ddls) != 0)
    return -1;
  return 0;
}

/* DM's checkAddDropColumn: a column the info adds must not be one this member dropped while the
 * target kept it, nor one the target has with another definition. 0 passes, 1 (why). */
static int opt_check_added(dmh_opt_lock *l, const opt_member *m, const dmh_sj_table *before,
                           const dmh_sj_table *after, const dmh_sj_table *old_join,
                           bool has_old_join, char *why, size_t why_len) {
  char key[512];
  opt_member_key(m, key, sizeof key);
  for (uint32_t i = 0; i < after->n_cols; i++) {
    const dmh_sj_column *c = &after->cols[i];
    if (dmh_sj_column_find(before, c->name))
      continue;
    if (dmh_sj_dropped_has(&l->dropped, c->name, key)) {
      opt_msg(why, why_len,
              "column `%s`: added back, but the target still has it from before this table "
              "dropped it (a partially dropped column: the other tables have not dropped it)",
              c->name);
      return 1;
    }
    const dmh_sj_column *jc = has_old_join ? dmh_sj_column_find(old_join, c->name) : NULL;
    dmh_sj_table one_a = {.cols = (dmh_sj_column *)c, .n_cols = 1};
    dmh_sj_table one_j = {.cols = (dmh_sj_column *)jc, .n_cols = 1};
    if (jc && !dmh_sj_equal(&one_a, &one_j)) {
      char a[160], j[160];
      dmh_sj_column_text(c, a, sizeof a);
      dmh_sj_column_text(jc, j, sizeof j);
      opt_msg(why, why_len,
              "column `%s`: added as %s, but another table added it as %s (the target has that)",
              c->name, a, j);
      return 1;
    }
  }
  return 0;
}

/* The partially dropped columns after a compatible info: the member's dropped columns the join
 * keeps are recorded, the columns the join lost (the target drops them now) forgotten. */
static int opt_note_dropped(dmh_opt_lock *l, const opt_member *m, const dmh_sj_table *before,
                            const dmh_sj_table *after, const dmh_sj_table *old_join,
                            const dmh_sj_table *new_join) {
  char key[512];
  opt_member_key(m, key, sizeof key);
  for (uint32_t i = 0; i < old_join->n_cols; i++)
    if (!dmh_sj_column_find(new_join, old_join->cols[i].name))
      dmh_sj_dropped_clear_column(&l->dropped, old_join->cols[i].name);
  for (uint32_t i = 0; i < before->n_cols; i++) {
    const char *c = before->cols[i].name;
    if (!dmh_sj_column_find(after, c) && dmh_sj_column_find(new_join, c) &&
        dmh_sj_dropped_add(&l->dropped, c, key) != 0)
      return -1;
  }
  return 0;
}

/* The body of try_sync once the structures are read. 0 or -1 (memory). */
static int opt_sync(dmh_opt_lock *l, opt_member *m, const dm_shard_info *info,
                    const dmh_sj_table *before, const dmh_sj_table *after, dmh_opt_result *res) {
  char why[DMH_SJ_WHY_MAX] = "";
  /* DM: one conflict per table at a time: a new info replaces the member's conflict */
  m->in_conflict = false;
  dmh_sj_table_free(&m->conf);
  if (opt_set(&m->fin, &m->cur) != 0)
    return -1;
  /* re-entrance: the lock's structure of the member is what the info says it was before */
  if (!dmh_sj_equal(before, &m->cur) &&
      (opt_set(&m->cur, before) != 0 || opt_set(&m->fin, before) != 0))
    return -1;

  int cmp = 0;
  int table_rc = dmh_sj_compare(before, after, &cmp, why, sizeof why);
  if (table_rc < 0)
    return -1;
  dmh_sj_table old_join, new_join;
  int old_rc = opt_join(l, OPT_NORMAL, &old_join, NULL, 0);
  if (old_rc < 0)
    return -1;
  int rc = 0;
  if (table_rc == 0) {
    if (opt_set(&m->cur, after) != 0 || opt_set(&m->fin, after) != 0)
      goto nomem;
    int new_rc = opt_join(l, OPT_NORMAL, &new_join, why, sizeof why);
    if (new_rc < 0)
      goto nomem;
    if (new_rc == 0) {
      bool resolves = opt_n_conflict(l) > 0 && opt_no_conflict(l, OPT_FINAL);
      if (!resolves) {
        int added = opt_check_added(l, m, before, after, &old_join, old_rc == 0, why, sizeof why);
        bool exec = old_rc != 0 || !dmh_sj_equal(&old_join, &new_join) || !before->n_cols;
        int scratch = added || !exec
                          ? 0
                          : opt_scratch_check(info->after, old_rc == 0 ? &old_join : &new_join,
                                              &new_join, why, sizeof why);
        if (scratch < 0) {
          dmh_sj_table_free(&new_join);
          goto nomem;
        }
        if (added || scratch)
          rc = opt_detected(l, m, before, info, why, res);
        else if ((old_rc != 0 || opt_note_dropped(l, m, before, after, &old_join, &new_join) == 0))
          rc = opt_answer(m, info, exec, res);
        else
          rc = -1;
      } else if ((rc = opt_resolve(l, m, res)) == 0)
        rc = opt_answer(m, info, true, res);
      dmh_sj_table_free(&new_join);
      goto done;
    }
  }

  /* a conflict: the member stays at its before, its after is held as its final structure */
  if (opt_set(&m->cur, before) != 0 || opt_set(&m->conf, after) != 0 ||
      opt_set(&m->fin, after) != 0)
    goto nomem;
  m->in_conflict = true;
  if (opt_n_conflict(l) > 1 && opt_fits_normal(l, m)) {
    m->in_conflict = false;
    dmh_sj_table_free(&m->conf);
    rc = opt_set(&m->cur, after) != 0 ? -1 : opt_answer(m, info, true, res);
  } else if (!opt_no_conflict(l, OPT_CONFLICT)) {
    char both[DMH_SJ_WHY_MAX];
    opt_msg(both, sizeof both, "%s; and it conflicts with another held table's DDL", why);
    rc = opt_detected(l, m, before, info, both, res);
  } else if (opt_no_conflict(l, OPT_FINAL)) {
    rc = opt_resolve(l, m, res) == 0 ? opt_answer(m, info, true, res) : -1;
  } else {
    m->stage = DMH_OPT_STAGE_SKIP_WAIT;
    opt_msg(m->message, sizeof m->message,
            "lock %s: DDL %s of `%s`.`%s` (source %s) conflicts: %s; the table is held until "
            "every table of the lock makes the same change (or shard-ddl-lock unlock)",
            l->id, info->n_ddls ? info->ddls[0] : "(none)", m->ref.schema, m->ref.table,
            m->ref.source, why);
    res->verdict = DMH_OPT_CONFLICT;
    res->stage = m->stage;
    snprintf(res->message, sizeof res->message, "%s", m->message);
  }
  goto done;
nomem:
  rc = -1;
done:
  if (old_rc == 0)
    dmh_sj_table_free(&old_join);
  return rc;
}

int dmh_opt_lock_try_sync(dmh_opt_lock *l, const char *source, const dm_shard_info *info,
                          dmh_opt_result *res) {
  memset(res, 0, sizeof *res);
  const char *schema = info->schema ? info->schema : info->n_tables ? info->tables[0].schema : "";
  const char *table = info->table ? info->table : info->n_tables ? info->tables[0].table : "";
  dmh_sj_table before, after;
  char why[DMH_SJ_WHY_MAX];
  if (dmh_sj_table_from_json(info->before, &before, why, sizeof why) != 0) {
    opt_msg(res->message, sizeof res->message, "lock %s: the info's before of `%s`.`%s`: %s", l->id,
            schema, table, why);
    return -1;
  }
  if (dmh_sj_table_from_json(info->after, &after, why, sizeof why) != 0) {
    dmh_sj_table_free(&before);
    opt_msg(res->message, sizeof res->message, "lock %s: the info's after of `%s`.`%s`: %s", l->id,
            schema, table, why);
    return -1;
  }
  l->oom = false;
  int rc = -1;
  if (!l->has_init) {
    if (opt_set(&l->init, &before) != 0)
      goto done;
    l->has_init = true;
    for (size_t i = 0; i < l->n; i++)
      if (!l->m[i]->has_table) {
        if (opt_set(&l->m[i]->cur, &before) != 0 || opt_set(&l->m[i]->fin, &before) != 0)
          goto done;
        l->m[i]->has_table = true;
      }
  }
  opt_member *m = opt_add(l, source, schema, table);
  if (!m)
    goto done;
  m->has_table = true;
  opt_free_ddls(m->ddls, m->n_ddls);
  if (opt_copy_ddls(info->ddls, info->n_ddls, &m->ddls, &m->n_ddls) != 0 ||
      opt_set(&m->after, &after) != 0)
    goto done;
  rc = opt_sync(l, m, info, &before, &after, res);
done:
  if (rc != 0 || l->oom) {
    dmh_opt_result_free(res);
    opt_msg(res->message, sizeof res->message, "lock %s: out of memory", l->id);
    rc = -1;
  }
  dmh_sj_table_free(&before);
  dmh_sj_table_free(&after);
  return rc;
}

/* ---- by hand, and the view ----------------------------------------------------------------- */

int dmh_opt_lock_unlock(dmh_opt_lock *l, const char *source, const char *schema, const char *table,
                        dm_shard_action action, dmh_opt_result *res) {
  memset(res, 0, sizeof *res);
  opt_member *m = opt_find(l, source, schema, table, NULL);
  if (!m) {
    opt_msg(res->message, sizeof res->message, "lock %s has no table `%s`.`%s` of source %s", l->id,
            schema, table, source);
    return -1;
  }
  if (m->stage != DMH_OPT_STAGE_DETECTED && m->stage != DMH_OPT_STAGE_SKIP_WAIT) {
    opt_msg(res->message, sizeof res->message,
            "table `%s`.`%s` of source %s is not held in lock %s (stage %s)", schema, table, source,
            l->id, dmh_opt_stage_name(m->stage));
    return -1;
  }
  m->in_conflict = false;
  dmh_sj_table_free(&m->conf);
  if (opt_set(&m->cur, &m->after) != 0 || opt_set(&m->fin, &m->after) != 0 ||
      (action == DM_SHARD_EXEC &&
       opt_copy_ddls((const char *const *)m->ddls, m->n_ddls, &res->ddls, &res->n_ddls) != 0)) {
    dmh_opt_result_free(res);
    opt_msg(res->message, sizeof res->message, "lock %s: out of memory", l->id);
    return -1;
  }
  m->stage = DMH_OPT_STAGE_UNLOCKED;
  m->message[0] = '\0';
  res->verdict = action == DM_SHARD_EXEC ? DMH_OPT_EXEC : DMH_OPT_SKIP;
  res->stage = m->stage;
  return 0;
}

bool dmh_opt_lock_held(const dmh_opt_lock *l, const char *source, const char *schema,
                       const char *table) {
  const opt_member *m = opt_find(l, source, schema, table, NULL);
  return m && (m->stage == DMH_OPT_STAGE_DETECTED || m->stage == DMH_OPT_STAGE_SKIP_WAIT);
}

bool dmh_opt_lock_synced(const dmh_opt_lock *l, size_t *remain) {
  dmh_sj_table j;
  int rc = opt_join((dmh_opt_lock *)l, OPT_NORMAL, &j, NULL, 0);
  size_t r = 0;
  for (size_t i = 0; i < l->n; i++) {
    const opt_member *m = l->m[i];
    bool held = m->stage == DMH_OPT_STAGE_DETECTED || m->stage == DMH_OPT_STAGE_SKIP_WAIT;
    if (held || (m->has_table && (rc != 0 || !dmh_sj_equal(&m->cur, &j))))
      r++;
  }
  if (rc == 0)
    dmh_sj_table_free(&j);
  if (remain)
    *remain = r;
  return r == 0;
}

char *dmh_opt_lock_json(const dmh_opt_lock *l) {
  json_object *root = json_object_new_object(), *tabs = json_object_new_array();
  char *out = NULL;
  if (!root || !tabs) {
    json_object_put(tabs);
    goto done;
  }
  json_object_object_add(root, "ID", json_object_new_string(l->id));
  json_object_object_add(root, "mode", json_object_new_string("optimistic"));
  json_object_object_add(root, "synced", json_object_new_boolean(dmh_opt_lock_synced(l, NULL)));
  dmh_sj_table j;
  json_object *joined = NULL;
  if (opt_join((dmh_opt_lock *)l, OPT_NORMAL, &j, NULL, 0) == 0) {
    char *js = dmh_sj_table_to_json(&j);
    joined = js ? json_tokener_parse(js) : NULL;
    free(js);
    dmh_sj_table_free(&j);
  }
  json_object_object_add(root, "joined", joined);
  json_object_object_add(root, "tables", tabs);
  for (size_t i = 0; i < l->n; i++) {
    const opt_member *m = l->m[i];
    json_object *o = json_object_new_object(), *ddls = json_object_new_array();
    if (!o || !ddls || json_object_array_add(tabs, o) != 0) {
      json_object_put(o);
      json_object_put(ddls);
      goto done;
    }
    json_object_object_add(o, "source", json_object_new_string(m->ref.source));
    json_object_object_add(o, "schema", json_object_new_string(m->ref.schema));
    json_object_object_add(o, "table", json_object_new_string(m->ref.table));
    json_object_object_add(o, "stage", json_object_new_string(dmh_opt_stage_name(m->stage)));
    json_object_object_add(o, "message", json_object_new_string(m->message));
    json_object_object_add(o, "ddls", ddls);
    bool held = m->stage == DMH_OPT_STAGE_DETECTED || m->stage == DMH_OPT_STAGE_SKIP_WAIT;
    for (uint32_t k = 0; held && k < m->n_ddls; k++)
      json_object_array_add(ddls, json_object_new_string(m->ddls[k]));
  }
  const char *s = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN);
  out = s ? strdup(s) : NULL;
done:
  json_object_put(root);
  return out;
}
