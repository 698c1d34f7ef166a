/* The binlog operators' store (binlog_ops.h): parsing of positions and statements, the JSON file
 * and its locking. */
#include "binlog_ops.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "dmhost/fs.h"
#include "dmhost/sdk.h"
#include "unit_ctx.h"

/* Serializes the read-modify-write of every store in this process; the flock on the store's
 * folder does the same between processes (`dmhost binlog` beside a running `dmhost run`). */
static pthread_mutex_t binlog_ops_mutex = PTHREAD_MUTEX_INITIALIZER;

static const char *const binlog_op_names[] = {[DM_BINLOG_OP_SKIP] = "skip",
                                              [DM_BINLOG_OP_REPLACE] = "replace",
                                              [DM_BINLOG_OP_INJECT] = "inject"};

const char *dmh_binlog_op_name(dm_binlog_op_kind kind) {
  return kind >= DM_BINLOG_OP_SKIP && kind <= DM_BINLOG_OP_INJECT ? binlog_op_names[kind] : "?";
}

int dmh_binlog_op_parse(const char *s, dm_binlog_op_kind *out) {
  for (int k = DM_BINLOG_OP_SKIP; k <= DM_BINLOG_OP_INJECT; k++)
    if (strcmp(s, binlog_op_names[k]) == 0) {
      *out = (dm_binlog_op_kind)k;
      return 0;
    }
  return -1;
}

/* ---- positions ---- */

int dmh_binlog_pos_parse(const char *text, char *at, dm_error *err) {
  const char *colon = strrchr(text, ':');
  const char *why = NULL;
  uint64_t pos = 0;
  size_t name_len = colon ? (size_t)(colon - text) : 0;
  if (!colon || name_len == 0)
    why = "it has no binlog file name before ':'";
  else if (name_len >= DM_POSITION_NAME_MAX)
    why = "the binlog file name is too long";
  else if (!colon[1])
    why = "it has no offset after ':'";
  for (const char *p = colon ? colon + 1 : ""; !why && *p; p++) {
    if (!isdigit((unsigned char)*p))
      why = "the offset is not a decimal number";
    else if (pos > (UINT64_MAX - 9) / 10)
      why = "the offset is too large";
    else
      pos = pos * 10 + (uint64_t)(*p - '0');
  }
  if (!why && pos < 4)
    why = "the offset is below 4, where a binlog file's first event starts";
  if (why) {
    dm_error_set(err, DM_ERR_CONTROL_REQUEST, NULL,
                 "binlog position \"%s\": %s; give the event's start position as FILE:POS, e.g. "
                 "-b mysql-bin.000001:1234 (query-status shows the failing one)",
                 text, why);
    return -1;
  }
  snprintf(at, DMH_BINLOG_AT_MAX, "%.*s:%" PRIu64, (int)name_len, text, pos);
  return 0;
}

/* ---- statements ---- */

static int binlog_sql_append(const char *start, const char *end, char ***sqls, int *n,
                             dm_error *err) {
  while (start < end && isspace((unsigned char)*start))
    start++;
  while (end > start && isspace((unsigned char)end[-1]))
    end--;
  if (start == end)
    return 0;
  char **grown = realloc(*sqls, sizeof *grown * (size_t)(*n + 1));
  char *s = grown ? strndup(start, (size_t)(end - start)) : NULL;
  if (grown)
    *sqls = grown;
  if (!s) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory splitting SQL statements");
    return -1;
  }
  grown[(*n)++] = s;
  return 0;
}

int dmh_binlog_sql_split(const char *text, char ***sqls, int *n, dm_error *err) {
  enum { NORMAL, QUOTE, BLOCK, LINE } st = NORMAL;
  char quote = 0;
  const char *start = text, *p = text;
  for (; *p; p++) {
    char c = *p;
    switch (st) {
    case NORMAL:
      if (c == '\'' || c == '"' || c == '`') {
        st = QUOTE;
        quote = c;
      } else if (c == '/' && p[1] == '*') {
        st = BLOCK;
        p++;
      } else if (c == '#' ||
                 (c == '-' && p[1] == '-' && (p[2] == '\0' || isspace((unsigned char)p[2])))) {
        st = LINE; /* MySQL needs white space after "--" for a comment */
      } else if (c == ';') {
        if (binlog_sql_append(start, p, sqls, n, err) < 0)
          return -1;
        start = p + 1;
      }
      break;
    case QUOTE:
      if (c == '\\' && quote != '`' && p[1])
        p++; /* an escaped character, maybe the quote itself */
      else if (c == quote && p[1] == quote)
        p++; /* a doubled quote stands for itself */
      else if (c == quote)
        st = NORMAL;
      break;
    case BLOCK:
      if (c == '*' && p[1] == '/') {
        st = NORMAL;
        p++;
      }
      break;
    case LINE:
      if (c == '\n')
        st = NORMAL;
      break;
    }
  }
  if (st == QUOTE || st == BLOCK) {
    dm_error_set(err, DM_ERR_CONTROL_REQUEST, NULL,
                 "SQL \"%.200s\": %s is not closed; quote the statements for the shell so they "
                 "reach dmctl whole",
                 text, st == QUOTE ? "a quoted string" : "a /* comment");
    return -1;
  }
  return binlog_sql_append(start, p, sqls, n, err);
}

void dmh_binlog_sqls_free(char **sqls, int n) {
  for (int i = 0; sqls && i < n; i++)
    free(sqls[i]);
  free(sqls);
}

/* ---- operators ---- */

void dmh_binlog_op_clear(dmh_binlog_op *op) {
  dmh_binlog_sqls_free(op->sqls, op->n_sqls);
  memset(op, 0, sizeof *op);
}

int dmh_binlog_op_copy(dmh_binlog_op *dst, const dmh_binlog_op *src) {
  memset(dst, 0, sizeof *dst);
  dst->kind = src->kind;
  memcpy(dst->at, src->at, sizeof dst->at);
  if (src->n_sqls == 0)
    return 0;
  if (!(dst->sqls = calloc((size_t)src->n_sqls, sizeof *dst->sqls)))
    return -1;
  for (; dst->n_sqls < src->n_sqls; dst->n_sqls++)
    if (!(dst->sqls[dst->n_sqls] = strdup(src->sqls[dst->n_sqls]))) {
      dmh_binlog_op_clear(dst);
      return -1;
    }
  return 0;
}

void dmh_binlog_ops_clear(dmh_binlog_ops *ops) {
  for (int i = 0; ops->ops && i < ops->n; i++)
    dmh_binlog_op_clear(&ops->ops[i]);
  free(ops->ops);
  ops->ops = NULL;
  ops->n = 0;
}

json_object *dmh_binlog_op_to_json(const dmh_binlog_op *op) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "op", json_object_new_string(dmh_binlog_op_name(op->kind)));
  json_object_object_add(o, "binlogPos", json_object_new_string(op->at));
  json_object *sqls = json_object_new_array();
  for (int i = 0; i < op->n_sqls; i++)
    json_object_array_add(sqls, json_object_new_string(op->sqls[i]));
  json_object_object_add(o, "sqls", sqls);
  return o;
}

char *dmh_binlog_ops_path(const char *work_root) {
  char *path = NULL;
  return asprintf(&path, "%s/%s", work_root, DMH_BINLOG_OPS_FILE) < 0 ? NULL : path;
}

/* ---- the file ---- */

/* Lock the store of `path`: the mutex, then an flock on its folder. With `create` the folder is
 * made if missing; without, a missing folder means there is no store. Returns the folder's
 * descriptor (locked; release with binlog_ops_unlock), BINLOG_OPS_NONE (no store, nothing held),
 * or -1 with *err. */
#define BINLOG_OPS_NONE (-2)

static int binlog_ops_lock(const char *path, bool create, dm_error *err) {
  char dir[4096];
  const char *slash = strrchr(path, '/');
  if (!slash)
    dm_strlcpy(dir, ".", sizeof dir);
  else if (slash == path)
    dm_strlcpy(dir, "/", sizeof dir);
  else if ((size_t)(slash - path) < sizeof dir)
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
  else {
    dm_error_set(err, DM_ERR_STATE, NULL, "binlog operators: the path %s is too long", path);
    return -1;
  }
  pthread_mutex_lock(&binlog_ops_mutex);
  if (create && dm_fs_mkdir_p(dir, DM_FS_DIR_MODE) < 0) {
    dm_error_set(err, DM_ERR_STATE, strerror(errno),
                 "binlog operators: cannot create the folder %s", dir);
    pthread_mutex_unlock(&binlog_ops_mutex);
    return -1;
  }
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT && !create) {
    pthread_mutex_unlock(&binlog_ops_mutex);
    return BINLOG_OPS_NONE;
  }
  int rc = -1;
  if (fd >= 0)
    while ((rc = flock(fd, LOCK_EX)) < 0 && errno == EINTR)
      ;
  if (rc < 0) {
    dm_error_set(err, DM_ERR_STATE, strerror(errno), "binlog operators: cannot lock the folder %s",
                 dir);
    if (fd >= 0)
      close(fd);
    pthread_mutex_unlock(&binlog_ops_mutex);
    return -1;
  }
  return fd;
}

static void binlog_ops_unlock(int fd) {
  close(fd); /* releases the flock */
  pthread_mutex_unlock(&binlog_ops_mutex);
}

static int binlog_ops_bad(const char *path, const char *what, dm_error *err) {
  dm_error_set(err, DM_ERR_STATE, NULL,
               "binlog operators file %s: %s; fix or remove it (then register the operators "
               "again with `dmctl binlog`)",
               path, what);
  return -1;
}

static int binlog_ops_parse_one(const char *path, json_object *o, dmh_binlog_op *op,
                                dm_error *err) {
  json_object *kind = NULL, *at = NULL, *sqls = NULL;
  if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, "op", &kind) ||
      !json_object_is_type(kind, json_type_string) ||
      !json_object_object_get_ex(o, "binlogPos", &at) ||
      !json_object_is_type(at, json_type_string) || !json_object_object_get_ex(o, "sqls", &sqls) ||
      !json_object_is_type(sqls, json_type_array))
    return binlog_ops_bad(path,
                          "an operator is not {\"op\": STRING, \"binlogPos\": STRING, \"sqls\": "
                          "[STRING...]}",
                          err);
  if (dmh_binlog_op_parse(json_object_get_string(kind), &op->kind) < 0)
    return binlog_ops_bad(path, "an operator's \"op\" is not skip, replace or inject", err);
  const char *pos = json_object_get_string(at);
  if (pos[0] && dmh_binlog_pos_parse(pos, op->at, err) < 0)
    return binlog_ops_bad(path, "an operator's \"binlogPos\" is not FILE:POS", err);
  size_t n = json_object_array_length(sqls);
  if (n > 0 && !(op->sqls = calloc(n, sizeof *op->sqls))) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory reading %s", path);
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    json_object *s = json_object_array_get_idx(sqls, i);
    if (!json_object_is_type(s, json_type_string))
      return binlog_ops_bad(path, "an operator's \"sqls\" holds something else than strings", err);
    if (!(op->sqls[i] = strdup(json_object_get_string(s)))) {
      dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory reading %s", path);
      return -1;
    }
    op->n_sqls++;
  }
  return 0;
}

/* Read the file; the locks are held. */
static int binlog_ops_read(const char *path, dmh_binlog_ops *out, dm_error *err) {
  memset(out, 0, sizeof *out);
  FILE *f = fopen(path, "re");
  if (!f && errno == ENOENT)
    return 0;
  if (!f) {
    dm_error_set(err, DM_ERR_STATE, strerror(errno), "binlog operators: cannot read %s", path);
    return -1;
  }
  char *text = NULL;
  size_t cap = 0, len = 0;
  for (;;) {
    if (len + 4096 + 1 > cap) {
      char *grown = realloc(text, cap = cap ? cap * 2 : 8192);
      if (!grown) {
        free(text);
        fclose(f);
        dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory reading %s", path);
        return -1;
      }
      text = grown;
    }
    size_t r = fread(text + len, 1, cap - len - 1, f);
    len += r;
    if (r == 0)
      break;
  }
  bool read_err = ferror(f) != 0;
  fclose(f);
  text[len] = '\0';
  if (read_err) {
    free(text);
    dm_error_set(err, DM_ERR_STATE, NULL, "binlog operators: cannot read %s", path);
    return -1;
  }
  json_object *root = json_tokener_parse(text);
  free(text);
  json_object *version = NULL, *list = NULL;
  int rc = 0;
  if (!root || !json_object_is_type(root, json_type_object))
    rc = binlog_ops_bad(path, "it is not a JSON object", err);
  else if (!json_object_object_get_ex(root, "version", &version) ||
           json_object_get_int(version) != DMH_BINLOG_OPS_VERSION)
    rc = binlog_ops_bad(path, "its \"version\" is not 1", err);
  else if (!json_object_object_get_ex(root, "operators", &list) ||
           !json_object_is_type(list, json_type_array))
    rc = binlog_ops_bad(path, "it has no \"operators\" array", err);
  size_t n = rc == 0 ? json_object_array_length(list) : 0;
  if (n > 0 && !(out->ops = calloc(n, sizeof *out->ops))) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory reading %s", path);
    rc = -1;
  }
  for (size_t i = 0; rc == 0 && i < n; i++) {
    out->n++; /* counted before parsing so a half-parsed entry is freed too */
    rc = binlog_ops_parse_one(path, json_object_array_get_idx(list, i), &out->ops[i], err);
  }
  json_object_put(root);
  if (rc < 0)
    dmh_binlog_ops_clear(out);
  return rc;
}

/* Write the file (or remove it when empty); the locks are held. */
static int binlog_ops_write(const char *path, const dmh_binlog_ops *ops, dm_error *err) {
  if (ops->n == 0) {
    if (unlink(path) < 0 && errno != ENOENT) {
      dm_error_set(err, DM_ERR_STATE, strerror(errno), "state: cannot remove %s", path);
      return -1;
    }
    return 0;
  }
  json_object *root = json_object_new_object();
  json_object_object_add(root, "version", json_object_new_int(DMH_BINLOG_OPS_VERSION));
  json_object *list = json_object_new_array();
  for (int i = 0; i < ops->n; i++)
    json_object_array_add(list, dmh_binlog_op_to_json(&ops->ops[i]));
  json_object_object_add(root, "operators", list);
  const char *text = json_object_to_json_string_ext(
      root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE);
  /* the SDK's atomic write, the one owner of the sequence (dmhost/fs.h) */
  const char *step = "create";
  int rc = -1;
  if (!text)
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory writing %s", path);
  else if ((rc = dm_fs_write_atomic(path, text, strlen(text), DM_FS_FILE_MODE, DM_FS_SYNC, &step)) <
           0)
    dm_error_set(err, DM_ERR_STATE, strerror(errno), "state: cannot write %s (%s of %s.tmp failed)",
                 path, step, path);
  json_object_put(root);
  return rc;
}

int dmh_binlog_ops_load(const char *path, dmh_binlog_ops *out, dm_error *err) {
  memset(out, 0, sizeof *out);
  int fd = binlog_ops_lock(path, false, err);
  if (fd == BINLOG_OPS_NONE)
    return 0;
  if (fd < 0)
    return -1;
  int rc = binlog_ops_read(path, out, err);
  binlog_ops_unlock(fd);
  return rc;
}

int dmh_binlog_ops_put(const char *path, const dmh_binlog_op *op, bool *replaced, dm_error *err) {
  *replaced = false;
  int fd = binlog_ops_lock(path, true, err);
  if (fd < 0)
    return -1;
  dmh_binlog_ops ops;
  int rc = binlog_ops_read(path, &ops, err);
  int at = -1;
  for (int i = 0; rc == 0 && i < ops.n && at < 0; i++)
    if (strcmp(ops.ops[i].at, op->at) == 0)
      at = i;
  *replaced = at >= 0;
  if (rc == 0 && at < 0) {
    dmh_binlog_op *grown = realloc(ops.ops, sizeof *grown * (size_t)(ops.n + 1));
    if (grown) {
      ops.ops = grown;
      memset(&ops.ops[ops.n], 0, sizeof ops.ops[ops.n]);
      at = ops.n++;
    }
  }
  if (rc == 0 && at >= 0) {
    dmh_binlog_op_clear(&ops.ops[at]);
    if (dmh_binlog_op_copy(&ops.ops[at], op) == 0)
      rc = binlog_ops_write(path, &ops, err);
    else
      at = -1;
  }
  if (rc == 0 && at < 0) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory registering a binlog operator");
    rc = -1;
  }
  dmh_binlog_ops_clear(&ops);
  binlog_ops_unlock(fd);
  return rc;
}

int dmh_binlog_ops_remove(const char *path, const char *at, int *removed, dm_error *err) {
  *removed = 0;
  int fd = binlog_ops_lock(path, false, err);
  if (fd == BINLOG_OPS_NONE)
    return 0;
  if (fd < 0)
    return -1;
  dmh_binlog_ops ops;
  int rc = binlog_ops_read(path, &ops, err);
  int kept = 0;
  for (int i = 0; rc == 0 && i < ops.n; i++) {
    if (!at || strcmp(ops.ops[i].at, at) == 0) {
      dmh_binlog_op_clear(&ops.ops[i]);
      (*removed)++;
    } else {
      ops.ops[kept++] = ops.ops[i];
    }
  }
  if (rc == 0 && *removed > 0) {
    ops.n = kept;
    rc = binlog_ops_write(path, &ops, err);
  }
  dmh_binlog_ops_clear(&ops);
  binlog_ops_unlock(fd);
  return rc;
}

int dmh_binlog_ops_find(const char *path, const char *file, uint64_t offset, bool failing,
                        dmh_binlog_op *out, dm_error *err) {
  memset(out, 0, sizeof *out);
  char at[DMH_BINLOG_AT_MAX];
  snprintf(at, sizeof at, "%s:%" PRIu64, file ? file : "", offset);
  dmh_binlog_ops ops;
  if (dmh_binlog_ops_load(path, &ops, err) < 0)
    return -1;
  const dmh_binlog_op *hit = NULL, *fallback = NULL;
  for (int i = 0; i < ops.n && !hit; i++) {
    if (file && strcmp(ops.ops[i].at, at) == 0)
      hit = &ops.ops[i];
    else if (!ops.ops[i].at[0])
      fallback = &ops.ops[i];
  }
  if (!hit && failing)
    hit = fallback;
  int rc = 0;
  if (hit) {
    rc = dmh_binlog_op_copy(out, hit) == 0 ? 1 : -1;
    if (rc < 0)
      dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory reading a binlog operator");
  }
  dmh_binlog_ops_clear(&ops);
  return rc;
}

/* ---- the `binlog` command's request (binlog_ops.h) ---- */

void dmh_binlog_req_free(dmh_binlog_req *req) {
  dmh_binlog_op_clear(&req->op);
}

int dmh_binlog_req_apply(const dmh_binlog_req *req, const char *work_root, json_object *result,
                         dm_error *err) {
  char *path = dmh_binlog_ops_path(work_root);
  if (!path) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "out of memory in binlog %s", req->op_name);
    return -1;
  }
  int rc = 0;
  if (req->verb == DMH_BINLOG_REGISTER) {
    bool replaced = false;
    rc = dmh_binlog_ops_put(path, &req->op, &replaced, err);
    if (rc == 0) {
      json_object_object_add(result, "operator", dmh_binlog_op_to_json(&req->op));
      if (replaced) {
        char msg[DMH_BINLOG_AT_MAX + 96];
        snprintf(msg, sizeof msg, "replaced the operator registered before for %s",
                 req->has_pos ? req->op.at : "the failing event");
        json_object_object_add(result, "msg", json_object_new_string(msg));
      }
    }
  } else if (req->verb == DMH_BINLOG_LIST) {
    dmh_binlog_ops ops;
    rc = dmh_binlog_ops_load(path, &ops, err);
    if (rc == 0) {
      json_object *list = json_object_new_array();
      for (int i = 0; i < ops.n; i++)
        json_object_array_add(list, dmh_binlog_op_to_json(&ops.ops[i]));
      json_object_object_add(result, "operators", list);
      dmh_binlog_ops_clear(&ops);
    }
  } else {
    int removed = 0;
    rc = dmh_binlog_ops_remove(path, req->op.at, &removed, err);
    if (rc == 0 && removed == 0) {
      dm_error_set(err, DM_ERR_NOT_FOUND, NULL,
                   "binlog revert %s: no operator registered for %s%s; `binlog list %s` shows "
                   "them",
                   req->name, req->has_pos ? "binlog position " : "the failing event",
                   req->has_pos ? req->op.at : " (registered without -b)", req->name);
      rc = -1;
    }
    if (rc == 0)
      json_object_object_add(result, "removed", json_object_new_int(removed));
  }
  free(path);
  return rc;
}
