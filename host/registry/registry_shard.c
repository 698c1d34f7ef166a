/* The in-process coordinator of shard DDL locks, persisted in shard.json: see registry_shard.h. */
#include "registry_shard.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dmhost/clock.h"
#include "dmhost/sdk.h"
#include "log.h"
#include "metrics.h"
#include "registry_internal.h"
#include "shard.h"
#include "shard_metrics.h"
#include "shard_opt_keeper.h"
#include "state.h"

/* The operation last handed to a (task, source): shard_coord.h lends its strings until done or
 * the next wait of that task and source, whatever the keeper does meanwhile. */
typedef struct lent_op {
  char *task, *source;
  char **ddls;
  uint32_t n;
  char *schema, *table, *message; /* optimistic operations */
} lent_op;

struct dmh_shard_local {
  char *dir;
  dmh_shard_coord coord;
  pthread_mutex_t mu;
  pthread_cond_t changed; /* broadcast on every change of the keeper */
  dmh_shard_keeper *k;    /* [mu] pessimistic locks */
  dmh_opt_keeper *ok;     /* [mu] optimistic locks (docs/shard.md "Optimistic mode") */
  char **loaded;          /* [mu] tasks whose shard.json was read */
  size_t n_loaded;
  lent_op *lent; /* [mu] */
  size_t n_lent;
  uint64_t metrics_owner; /* dm_master_ddl_state_number's series (shard_metrics.h) */
  char **metrics_tasks;   /* [mu] the tasks it has shown */
  size_t n_metrics_tasks;
};

/* The keeper changed (under mu): wake the waiters, recount DM's pending DDL gauge. */
static void co_changed_locked(dmh_shard_local *c) {
  pthread_cond_broadcast(&c->changed);
  dmh_shard_metrics_pending(c->k, c->metrics_owner, &c->metrics_tasks, &c->n_metrics_tasks);
}

static void lent_clear(lent_op *l) {
  for (uint32_t i = 0; i < l->n; i++)
    free(l->ddls[i]);
  free(l->ddls);
  l->ddls = NULL;
  l->n = 0;
  free(l->schema);
  free(l->table);
  free(l->message);
  l->schema = l->table = l->message = NULL;
}

/* ---- persistence (under mu) ---- */

static int persist(dmh_shard_local *c, const char *task, dm_error *err) {
  char *path = dmh_state_task_shard_file(c->dir, task);
  if (!path) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory writing shard.json");
    return -1;
  }
  int rc;
  if (!dmh_shard_has_task(c->k, task) && !dmh_opt_keeper_has_task(c->ok, task)) {
    rc = dmh_state_remove_file(path, err);
  } else {
    char *folder = strdup(path);
    char *slash = folder ? strrchr(folder, '/') : NULL;
    if (slash)
      *slash = '\0';
    json_object *j = dmh_shard_to_json(c->k, task);
    /* the optimistic records are members of the same object ("otables", "oinfos", "oops") */
    json_object *oj = j ? dmh_opt_keeper_to_json(c->ok, task) : NULL;
    if (oj) {
      json_object_object_foreach(oj, key, val) {
        json_object_object_add(j, key, json_object_get(val));
      }
      json_object_put(oj);
    }
    const char *text = j ? json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY) : NULL;
    if (!folder || !text) {
      dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory writing %s", path);
      rc = -1;
    } else {
      rc = dmh_state_mkdirs(folder, err);
      if (rc == 0)
        rc = dmh_state_write_file(path, text, strlen(text), err);
    }
    json_object_put(j);
    free(folder);
  }
  if (rc < 0)
    dmh_log(DM_LOG_ERROR, "shard", "task %s: the shard DDL locks were not persisted: %s", task,
            err->message);
  free(path);
  return rc;
}

static int load_locked(dmh_shard_local *c, const char *task, dm_error *err) {
  for (size_t i = 0; i < c->n_loaded; i++)
    if (strcmp(c->loaded[i], task) == 0)
      return 0;
  char *path = dmh_state_task_shard_file(c->dir, task);
  char **nl = realloc(c->loaded, (c->n_loaded + 1) * sizeof *nl);
  if (nl)
    c->loaded = nl;
  char *name = strdup(task);
  if (!path || !nl || !name) {
    free(path);
    free(name);
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory loading shard.json");
    return -1;
  }
  size_t len = 0;
  char *text = dmh_state_read_all(path, &len);
  int rc = 0;
  if (!text && errno != ENOENT) {
    dm_error_set(err, DM_ERR_STATE, strerror(errno), "state: cannot read %s", path);
    rc = -1;
  } else if (text) {
    json_tokener *tok = json_tokener_new();
    json_object *root = tok ? json_tokener_parse_ex(tok, text, (int)len + 1) : NULL;
    if (!root || !json_object_is_type(root, json_type_object)) {
      dm_error_set(err, DM_ERR_STATE, NULL,
                   "state: %s is not a JSON object; restore it from a backup, or move it away "
                   "(the task's shard DDL locks are then forgotten: unlock by hand what waits)",
                   path);
      rc = -1;
    } else if (dmh_shard_load_json(c->k, root, err) < 0) {
      char msg[DM_ERROR_MESSAGE_MAX];
      snprintf(msg, sizeof msg, "%s", err->message);
      dm_error_set(err, DM_ERR_STATE, NULL, "%s (%s)", msg, path);
      rc = -1;
    } else if (dmh_opt_keeper_load_json(c->ok, root, err->message, sizeof err->message) < 0) {
      char msg[DM_ERROR_MESSAGE_MAX];
      snprintf(msg, sizeof msg, "%s", err->message);
      dm_error_set(err, DM_ERR_STATE, NULL, "%s (%s)", msg, path);
      rc = -1;
    } else {
      dmh_log(DM_LOG_INFO, "shard", "task %s: shard DDL locks loaded from %s", task, path);
      /* the rebuild may have finished a step a kill cut short: keep that */
      rc = persist(c, task, err);
    }
    json_object_put(root);
    if (tok)
      json_tokener_free(tok);
    free(text);
  }
  free(path);
  if (rc < 0) {
    free(name);
    return -1;
  }
  c->loaded[c->n_loaded++] = name;
  return 0;
}

/* ---- the coordinator's calls (shard_coord.h) ---- */

static int co_report_tables(void *self, const char *task, const char *source, const char *tschema,
                            const char *ttable, const dm_shard_table *tables, uint32_t n,
                            dm_error *err) {
  dmh_shard_local *c = self;
  pthread_mutex_lock(&c->mu);
  int rc = load_locked(c, task, err);
  if (rc == 0)
    rc = dmh_shard_report_tables(c->k, task, source, tschema, ttable, tables, n, err);
  /* the optimistic keeper too: the task's mode is the unit's business, and a source's tables
   * are what both modes start from */
  char id[DM_SHARD_LOCK_ID_MAX];
  if (rc == 0 && dmh_shard_lock_id(id, sizeof id, task, tschema, ttable) == 0 &&
      dmh_opt_keeper_report_tables(c->ok, id, task, source, tschema, ttable, tables, n,
                                   err->message, sizeof err->message) < 0) {
    char msg[DM_ERROR_MESSAGE_MAX];
    snprintf(msg, sizeof msg, "%s", err->message);
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "%s", msg);
    rc = -1;
  }
  if (rc == 0)
    rc = persist(c, task, err);
  co_changed_locked(c);
  pthread_mutex_unlock(&c->mu);
  return rc;
}

/* An optimistic info: the lock's answer becomes operations (shard_opt_keeper.h). */
static int co_put_optimistic(dmh_shard_local *c, const char *task, const char *source,
                             const dm_shard_info *info, dm_error *err) {
  char id[DM_SHARD_LOCK_ID_MAX], msg[DM_ERROR_MESSAGE_MAX] = "";
  if (!info->before || !info->after || !info->schema || !info->table ||
      dmh_shard_lock_id(id, sizeof id, task, info->target_schema, info->target_table) < 0) {
    dm_error_set(err, DM_ERR_INTERNAL, NULL,
                 "task %s source %s: an optimistic shard DDL info without its table, before or "
                 "after",
                 task, source);
    return -1;
  }
  pthread_mutex_lock(&c->mu);
  int rc = load_locked(c, task, err);
  if (rc == 0 && dmh_opt_keeper_put(c->ok, id, task, source, info, msg, sizeof msg) < 0) {
    dm_error_set(err, DM_ERR_INTERNAL, NULL, "task %s source %s: %s", task, source, msg);
    rc = -1;
  }
  if (rc == 0)
    rc = persist(c, task, err);
  if (rc == 0) {
    const dmh_opt_oprec *o =
        dmh_opt_keeper_pending(c->ok, task, source, info->target_schema, info->target_table);
    dmh_log(DM_LOG_INFO, "shard", "lock %s: `%s`.`%s` of source %s: %s%s%s", id, info->schema,
            info->table, source,
            !o                           ? "no operation"
            : o->conflict                ? "conflict, held: "
            : o->action == DM_SHARD_EXEC ? "exec"
                                         : "skip",
            o && o->conflict ? o->message : "", "");
  }
  co_changed_locked(c);
  pthread_mutex_unlock(&c->mu);
  return rc;
}

static int co_put(void *self, const char *task, const char *source, const dm_shard_info *info,
                  dm_error *err) {
  dmh_shard_local *c = self;
  if (info->before || info->after)
    return co_put_optimistic(c, task, source, info, err);
  pthread_mutex_lock(&c->mu);
  int rc = load_locked(c, task, err);
  if (rc == 0) {
    rc = dmh_shard_put(c->k, task, source, info, err);
    if (rc < 0 && err->code == DM_ERR_SHARD_DDL_DIFF)
      dmh_shard_metrics_error(task, DMH_SHARD_ERR_SYNC_LOCK);
  }
  if (rc == 0)
    rc = persist(c, task, err);
  if (rc == 0) {
    char id[DM_SHARD_LOCK_ID_MAX], owner[256] = "";
    dmh_shard_lock_id(id, sizeof id, task, info->target_schema, info->target_table);
    int st = dmh_shard_lock_state(c->k, id, owner, sizeof owner);
    dmh_log(DM_LOG_INFO, "shard", "lock %s: source %s arrived (%s, owner %s)", id, source,
            st < 0 ? "queued" : dmh_shard_state_name((dmh_shard_state)st), owner);
  }
  co_changed_locked(c);
  pthread_mutex_unlock(&c->mu);
  return rc;
}

static lent_op *lent_for(dmh_shard_local *c, const char *task, const char *source) {
  for (size_t i = 0; i < c->n_lent; i++)
    if (strcmp(c->lent[i].task, task) == 0 && strcmp(c->lent[i].source, source) == 0)
      return &c->lent[i];
  lent_op *nl = realloc(c->lent, (c->n_lent + 1) * sizeof *nl);
  if (!nl)
    return NULL;
  c->lent = nl;
  lent_op *l = &c->lent[c->n_lent];
  memset(l, 0, sizeof *l);
  l->task = strdup(task);
  l->source = strdup(source);
  if (!l->task || !l->source) {
    free(l->task);
    free(l->source);
    return NULL;
  }
  c->n_lent++;
  return l;
}

/* op into *out with its strings lent (under mu) */
static int lend_parts(dmh_shard_local *c, const char *task, const char *source, const char *lock_id,
                      uint64_t id, bool exec, char *const *op_ddls, uint32_t n_ddls,
                      const dmh_opt_oprec *opt, dm_shard_op *out, dm_error *err) {
  lent_op *l = lent_for(c, task, source);
  if (l)
    lent_clear(l);
  char **ddls = l ? calloc(n_ddls ? n_ddls : 1, sizeof *ddls) : NULL;
  bool ok = ddls != NULL;
  for (uint32_t i = 0; ok && i < n_ddls; i++)
    ok = (ddls[i] = strdup(op_ddls[i])) != NULL;
  if (ok && opt) {
    l->schema = strdup(opt->schema);
    l->table = strdup(opt->table);
    l->message = strdup(opt->message);
    ok = l->schema && l->table && l->message;
  }
  if (!ok) {
    for (uint32_t i = 0; ddls && i < n_ddls; i++)
      free(ddls[i]);
    free(ddls);
    if (l)
      lent_clear(l);
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory handing out a shard operation");
    return -1;
  }
  l->ddls = ddls;
  l->n = n_ddls;
  memset(out, 0, sizeof *out);
  snprintf(out->lock_id, sizeof out->lock_id, "%s", lock_id);
  out->op_id = id;
  out->action = exec ? DM_SHARD_EXEC : DM_SHARD_SKIP;
  out->ddls = (const char *const *)l->ddls;
  out->n_ddls = l->n;
  out->message = l->message ? l->message : "";
  if (opt) {
    out->conflict = opt->conflict;
    out->schema = l->schema;
    out->table = l->table;
  }
  return 1;
}

static int lend(dmh_shard_local *c, const char *task, const char *source, const dmh_shard_oprec *op,
                dm_shard_op *out, dm_error *err) {
  return lend_parts(c, task, source, op->lock_id, op->id, op->exec, op->ddls, op->n_ddls, NULL, out,
                    err);
}

static int co_wait(void *self, const char *task, const char *source, const char *tschema,
                   const char *ttable, bool (*stopped)(void *), void *stop_arg, dm_shard_op *op,
                   dm_error *err) {
  dmh_shard_local *c = self;
  pthread_mutex_lock(&c->mu);
  int rc = load_locked(c, task, err) < 0 ? -1 : 0;
  while (rc == 0) {
    const dmh_shard_oprec *o = dmh_shard_pending_op(c->k, task, source, tschema, ttable);
    if (o) {
      rc = lend(c, task, source, o, op, err);
      break;
    }
    const dmh_opt_oprec *oo = dmh_opt_keeper_pending(c->ok, task, source, tschema, ttable);
    if (oo) {
      rc = lend_parts(c, task, source, oo->lock_id, oo->id, oo->action == DM_SHARD_EXEC, oo->ddls,
                      oo->n_ddls, oo, op, err);
      break;
    }
    if (stopped && stopped(stop_arg))
      break; /* rc 0: stopped */
    struct timespec ts = dm_clock_deadline(100);
    pthread_cond_timedwait(&c->changed, &c->mu, &ts);
  }
  pthread_mutex_unlock(&c->mu);
  return rc;
}

static int co_done(void *self, const char *task, const char *source, uint64_t fencing_token,
                   const dm_shard_op *op, dm_error *err) {
  (void)fencing_token; /* one process: nothing else can run this source's subtask */
  dmh_shard_local *c = self;
  pthread_mutex_lock(&c->mu);
  int rc = load_locked(c, task, err);
  bool optimistic = op->table != NULL; /* dm_shard_op: a member table only in optimistic mode */
  if (rc == 0 && optimistic)
    dmh_opt_keeper_done(c->ok, task, source, op->op_id);
  else if (rc == 0)
    rc = dmh_shard_done(c->k, task, source, op->op_id, err);
  if (rc == 0)
    rc = persist(c, task, err);
  if (rc == 0 && optimistic)
    dmh_log(DM_LOG_INFO, "shard", "lock %s: `%s`.`%s` of source %s done with operation %llu",
            op->lock_id, op->schema ? op->schema : "", op->table, source,
            (unsigned long long)op->op_id);
  else if (rc == 0) {
    int st = dmh_shard_lock_state(c->k, op->lock_id, NULL, 0);
    dmh_log(DM_LOG_INFO, "shard", "lock %s: source %s done with operation %llu (%s)", op->lock_id,
            source, (unsigned long long)op->op_id,
            st < 0 ? "resolved" : dmh_shard_state_name((dmh_shard_state)st));
  }
  /* the strings lent with op are not needed any more */
  for (size_t i = 0; i < c->n_lent; i++)
    if (strcmp(c->lent[i].task, task) == 0 && strcmp(c->lent[i].source, source) == 0)
      lent_clear(&c->lent[i]);
  co_changed_locked(c);
  pthread_mutex_unlock(&c->mu);
  return rc;
}

static const dmh_shard_coord_ops local_ops = {
    .report_tables = co_report_tables,
    .put = co_put,
    .wait = co_wait,
    .done = co_done,
};

dmh_shard_local *dmh_shard_local_new(const char *dir, dm_error *err) {
  dmh_shard_local *c = calloc(1, sizeof *c);
  if (!c || !(c->dir = strdup(dir)) || !(c->k = dmh_shard_keeper_new()) ||
      !(c->ok = dmh_opt_keeper_new())) {
    if (c) {
      free(c->dir);
      dmh_shard_keeper_free(c->k);
    }
    free(c);
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory creating the shard coordinator");
    return NULL;
  }
  pthread_mutex_init(&c->mu, NULL);
  dm_cond_init_monotonic(&c->changed);
  c->coord.ops = &local_ops;
  c->metrics_owner = dmh_metrics_owner_new();
  c->coord.self = c;
  return c;
}

void dmh_shard_local_free(dmh_shard_local *c) {
  if (!c)
    return;
  for (size_t i = 0; i < c->n_lent; i++) {
    lent_clear(&c->lent[i]);
    free(c->lent[i].task);
    free(c->lent[i].source);
  }
  free(c->lent);
  for (size_t i = 0; i < c->n_loaded; i++)
    free(c->loaded[i]);
  free(c->loaded);
  dmh_shard_metrics_forget(c->metrics_owner, &c->metrics_tasks, &c->n_metrics_tasks);
  dmh_shard_keeper_free(c->k);
  dmh_opt_keeper_free(c->ok);
  pthread_cond_destroy(&c->changed);
  pthread_mutex_destroy(&c->mu);
  free(c->dir);
  free(c);
}

const dmh_shard_coord *dmh_shard_local_coord(dmh_shard_local *c) {
  return &c->coord;
}

int dmh_shard_local_load(dmh_shard_local *c, const char *task, dm_error *err) {
  pthread_mutex_lock(&c->mu);
  int rc = load_locked(c, task, err);
  co_changed_locked(c);
  pthread_mutex_unlock(&c->mu);
  return rc;
}

int dmh_shard_local_show(dmh_shard_local *c, const char *task, json_object *resp, dm_error *err) {
  pthread_mutex_lock(&c->mu);
  int rc = task ? load_locked(c, task, err) : 0;
  json_object *locks = rc == 0 ? dmh_shard_locks_json(c->k, task) : NULL;
  json_object *olocks = locks ? dmh_opt_keeper_locks_json(c->ok, task) : NULL;
  for (size_t i = 0; olocks && i < json_object_array_length(olocks); i++)
    json_object_array_add(locks, json_object_get(json_object_array_get_idx(olocks, i)));
  if (locks && !olocks) {
    json_object_put(locks);
    locks = NULL;
  }
  json_object_put(olocks);
  pthread_mutex_unlock(&c->mu);
  if (rc < 0)
    return -1;
  if (!locks) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory listing the shard DDL locks");
    return -1;
  }
  json_object_object_add(resp, "locks", locks);
  return 0;
}

/* Waits (under mu) until the lock's state is not `while_state` or it is gone, at most ms.
 * Returns the state then, -1 gone. */
static int wait_state_change(dmh_shard_local *c, const char *id, int while_state, uint32_t ms) {
  struct timespec until = dm_clock_deadline(ms);
  for (;;) {
    int st = dmh_shard_lock_state(c->k, id, NULL, 0);
    if (st != while_state)
      return st;
    if (pthread_cond_timedwait(&c->changed, &c->mu, &until) == ETIMEDOUT)
      return dmh_shard_lock_state(c->k, id, NULL, 0);
  }
}

/* the task of a lock ID: what comes before "-`" (task names have no backtick) */
static char *task_of_id(const char *id) {
  const char *cut = strstr(id, "-`");
  return cut ? strndup(id, (size_t)(cut - id)) : NULL;
}

int dmh_shard_local_unlock(dmh_shard_local *c, const char *lock_id, const char *owner,
                           bool force_remove, uint32_t wait_ms, json_object *resp, dm_error *err) {
  char *task = task_of_id(lock_id);
  pthread_mutex_lock(&c->mu);
  int rc = 0;
  if (task && load_locked(c, task, err) < 0)
    rc = -1;
  if (rc == 0)
    rc = dmh_shard_unlock(c->k, lock_id, owner, err);
  if (rc == 0)
    rc = persist(c, task, err);
  co_changed_locked(c);
  if (rc == 0) {
    dmh_log(DM_LOG_INFO, "shard", "lock %s: unlock by hand, waiting for the owner", lock_id);
    int st = wait_state_change(c, lock_id, DMH_SHARD_SYNCED, wait_ms);
    if (st == DMH_SHARD_SYNCED && !force_remove) {
      dmh_shard_unlock_revert(c->k, lock_id);
      persist(c, task, err);
      co_changed_locked(c);
      dm_error_set(err, DM_ERR_SHARD_OWNER_EXEC, NULL,
                   "the owner of lock %s did not run its DDL within %u ms; the lock waits for "
                   "its sources again",
                   lock_id, wait_ms);
      rc = -1;
    } else {
      if (st == DMH_SHARD_SYNCED) {
        dmh_log(DM_LOG_WARN, "shard", "lock %s: the owner did not run its DDL; --force-remove",
                lock_id);
        dmh_shard_unlock_skip_rest(c->k, lock_id);
        persist(c, task, err);
        co_changed_locked(c);
      }
      st = st < 0 ? st
                  : wait_state_change(c, lock_id, dmh_shard_lock_state(c->k, lock_id, NULL, 0),
                                      wait_ms);
      if (st >= 0 && force_remove) {
        dmh_shard_remove_lock(c->k, lock_id);
        rc = persist(c, task, err);
        co_changed_locked(c);
        st = -1;
      }
      json_object_object_add(resp, "lock", json_object_new_string(lock_id));
      json_object_object_add(
          resp, "state",
          json_object_new_string(st < 0 ? "resolved" : dmh_shard_state_name((dmh_shard_state)st)));
    }
  }
  pthread_mutex_unlock(&c->mu);
  free(task);
  return rc;
}

int dmh_shard_local_unlock_table(dmh_shard_local *c, const char *lock_id, const char *source,
                                 const char *schema, const char *table, bool exec,
                                 json_object *resp, dm_error *err) {
  char *task = task_of_id(lock_id), msg[DM_ERROR_MESSAGE_MAX] = "";
  pthread_mutex_lock(&c->mu);
  int rc = task && load_locked(c, task, err) < 0 ? -1 : 0;
  if (rc == 0) {
    int u = dmh_opt_keeper_unlock(c->ok, lock_id, source, schema, table,
                                  exec ? DM_SHARD_EXEC : DM_SHARD_SKIP, msg, sizeof msg);
    if (u == DMH_OPT_ERR_NOT_FOUND)
      dm_error_set(err, DM_ERR_SHARD_LOCK_NOT_FOUND, NULL, "%s", msg);
    else if (u == DMH_OPT_ERR_NOT_HELD)
      dm_error_set(err, DM_ERR_SHARD_NOT_WAITING, NULL, "%s", msg);
    else if (u < 0)
      dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "%s", msg);
    rc = u < 0 ? -1 : 0;
  }
  if (rc == 0)
    rc = persist(c, task, err);
  if (rc == 0) {
    dmh_log(DM_LOG_INFO, "shard", "lock %s: `%s`.`%s` of source %s unlocked by hand (%s)", lock_id,
            schema, table, source, exec ? "exec" : "skip");
    json_object_object_add(resp, "lock", json_object_new_string(lock_id));
    json_object_object_add(resp, "state", json_object_new_string("unlocked"));
  }
  co_changed_locked(c);
  pthread_mutex_unlock(&c->mu);
  free(task);
  return rc;
}

int dmh_shard_local_forget(dmh_shard_local *c, const char *task, dm_error *err) {
  pthread_mutex_lock(&c->mu);
  dmh_shard_remove_task(c->k, task);
  dmh_opt_keeper_remove_task(c->ok, task);
  int rc = persist(c, task, err);
  co_changed_locked(c);
  pthread_mutex_unlock(&c->mu);
  return rc;
}

/* ---- the registry's commands (registry.h) ---- */

int dmh_registry_shard_locks(dmh_registry *r, const char *name, json_object *resp, dm_error *err) {
  if (name) {
    reg_task *t = reg_get_task(r, "shard-ddl-lock", name, err);
    if (!t)
      return -1;
    reg_task_unref(r, t);
  }
  return dmh_shard_local_show(r->shard, name, resp, err);
}

int dmh_registry_shard_unlock_table(dmh_registry *r, const char *lock_id, const char *source,
                                    const char *schema, const char *table, bool exec,
                                    json_object *resp, dm_error *err) {
  return dmh_shard_local_unlock_table(r->shard, lock_id, source, schema, table, exec, resp, err);
}

int dmh_registry_shard_unlock(dmh_registry *r, const char *lock_id, const char *owner,
                              bool force_remove, json_object *resp, dm_error *err) {
  return dmh_shard_local_unlock(r->shard, lock_id, owner, force_remove, DMH_SHARD_UNLOCK_WAIT_MS,
                                resp, err);
}
