/* The etcd client's key space: range, put, delete and txn (etcd's KV service). */
#define DMH_ETCD_INTERNAL
#include "etcd.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "dmhost/sdk.h"

static const char *const etcd_op_path[] = {"kv/range", "kv/put", "kv/deleterange"};
static const char *const etcd_op_name[] = {"range", "put", "delete"};
static const char *const etcd_op_request[] = {"request_range", "request_put",
                                              "request_delete_range"};
static const char *const etcd_op_response[] = {"response_range", "response_put",
                                               "response_delete_range"};
static const char *const etcd_cmp_target[] = {"VERSION", "CREATE", "MOD", "VALUE", "LEASE"};
static const char *const etcd_cmp_field[] = {"version", "create_revision", "mod_revision", "value",
                                             "lease"};
static const char *const etcd_cmp_result[] = {"EQUAL", "GREATER", "LESS", "NOT_EQUAL"};

static int etcd_kind_ok(int kind) {
  return kind >= DMH_ETCD_RANGE && kind <= DMH_ETCD_DELETE;
}

/* The request object of one operation (RangeRequest, PutRequest, DeleteRangeRequest). */
static json_object *etcd_op_json(const dmh_etcd_op *op) {
  json_object *o = json_object_new_object();
  if (!o || etcd_json_add_bytes(o, "key", op->key) < 0)
    goto fail;
  if (op->prefix && op->kind != DMH_ETCD_PUT && etcd_json_add_prefix_end(o, op->key) < 0)
    goto fail;
  switch (op->kind) {
  case DMH_ETCD_RANGE:
    if (op->limit)
      etcd_json_add_int64(o, "limit", op->limit);
    if (op->revision)
      etcd_json_add_int64(o, "revision", op->revision);
    break;
  case DMH_ETCD_PUT:
    if (etcd_json_add_bytes(o, "value", op->value) < 0)
      goto fail;
    if (op->lease)
      etcd_json_add_int64(o, "lease", op->lease);
    break;
  case DMH_ETCD_DELETE:
    break;
  }
  if (op->prev_kv && op->kind != DMH_ETCD_RANGE)
    json_object_object_add(o, "prev_kv", json_object_new_boolean(1));
  return o;
fail:
  json_object_put(o);
  return NULL;
}

static int etcd_kvs_add(dmh_etcd_result *r, json_object *kv) {
  dmh_etcd_kv *kvs = realloc(r->kvs, (r->n_kvs + 1) * sizeof *kvs);
  if (!kvs)
    return -1;
  r->kvs = kvs;
  if (etcd_kv_parse(kv, &kvs[r->n_kvs]) < 0)
    return -1;
  r->n_kvs++;
  return 0;
}

static int etcd_kvs_parse(dmh_etcd_result *r, json_object *o, const char *field) {
  json_object *arr = NULL;
  if (!json_object_object_get_ex(o, field, &arr)) /* omitted when empty */
    return 0;
  if (!json_object_is_type(arr, json_type_array))
    return -1;
  for (size_t i = 0; i < json_object_array_length(arr); i++)
    if (etcd_kvs_add(r, json_object_array_get_idx(arr, i)) < 0)
      return -1;
  return 0;
}

/* A RangeResponse, PutResponse or DeleteRangeResponse into r. 0, or -1 (bad answer, memory). */
static int etcd_result_parse(json_object *o, dmh_etcd_op_kind kind, dmh_etcd_result *r) {
  memset(r, 0, sizeof *r);
  r->kind = kind;
  json_object *hdr = NULL, *v = NULL;
  if (json_object_object_get_ex(o, "header", &hdr))
    r->revision = etcd_json_int64(hdr, "revision");
  int rc = 0;
  switch (kind) {
  case DMH_ETCD_RANGE:
    rc = etcd_kvs_parse(r, o, "kvs");
    r->count = etcd_json_int64(o, "count");
    r->more = json_object_object_get_ex(o, "more", &v) && json_object_get_boolean(v);
    break;
  case DMH_ETCD_PUT:
    if (json_object_object_get_ex(o, "prev_kv", &v))
      rc = etcd_kvs_add(r, v);
    break;
  case DMH_ETCD_DELETE:
    rc = etcd_kvs_parse(r, o, "prev_kvs");
    r->count = etcd_json_int64(o, "deleted");
    break;
  }
  if (rc < 0)
    dmh_etcd_result_free(r);
  return rc;
}

void dmh_etcd_result_free(dmh_etcd_result *r) {
  if (!r)
    return;
  for (size_t i = 0; i < r->n_kvs; i++)
    dmh_etcd_kv_free(&r->kvs[i]);
  free(r->kvs);
  memset(r, 0, sizeof *r);
}

static void etcd_bad_reply(dm_error *err, const char *what, const dmh_etcd *c) {
  dm_error_set(err, DM_ERR_ETCD_REPLY, NULL,
               "%s at etcd %s: the answer is not what etcd sends (bad base64 or fields), or "
               "memory ran out",
               what, dmh_etcd_endpoint(c));
}

int dmh_etcd_do(dmh_etcd *c, const dmh_etcd_op *op, dmh_etcd_result *out, dm_error *err) {
  if (out)
    memset(out, 0, sizeof *out);
  if (!etcd_kind_ok(op->kind)) {
    dm_error_set(err, DM_ERR_INTERNAL, NULL, "etcd: unknown operation kind %d", (int)op->kind);
    return -1;
  }
  char key[96], what[160];
  etcd_key_text(op->key, key, sizeof key);
  snprintf(what, sizeof what, "%s of key '%s'%s", etcd_op_name[op->kind], key,
           op->prefix ? " (prefix)" : "");
  json_object *reply = NULL;
  int rc = etcd_call(c, etcd_op_path[op->kind], etcd_op_json(op),
                     op->kind == DMH_ETCD_RANGE ? ETCD_READ : ETCD_WRITE, what, &reply, err);
  if (rc == 0 && out && etcd_result_parse(reply, op->kind, out) < 0) {
    etcd_bad_reply(err, what, c);
    rc = -1;
  }
  json_object_put(reply);
  return rc;
}

int dmh_etcd_range(dmh_etcd *c, dmh_etcd_bytes key, int prefix, int64_t limit, int64_t revision,
                   dmh_etcd_result *out, dm_error *err) {
  const dmh_etcd_op op = {
      .kind = DMH_ETCD_RANGE, .key = key, .prefix = prefix, .limit = limit, .revision = revision};
  return dmh_etcd_do(c, &op, out, err);
}

int dmh_etcd_put(dmh_etcd *c, dmh_etcd_bytes key, dmh_etcd_bytes value, int64_t lease, int prev_kv,
                 dmh_etcd_result *out, dm_error *err) {
  const dmh_etcd_op op = {
      .kind = DMH_ETCD_PUT, .key = key, .value = value, .lease = lease, .prev_kv = prev_kv};
  return dmh_etcd_do(c, &op, out, err);
}

int dmh_etcd_delete(dmh_etcd *c, dmh_etcd_bytes key, int prefix, dmh_etcd_result *out,
                    dm_error *err) {
  const dmh_etcd_op op = {.kind = DMH_ETCD_DELETE, .key = key, .prefix = prefix};
  return dmh_etcd_do(c, &op, out, err);
}

int dmh_etcd_compact(dmh_etcd *c, int64_t revision, dm_error *err) {
  char what[64];
  snprintf(what, sizeof what, "compaction to revision %" PRId64, revision);
  return etcd_call_int64(c, "kv/compaction", "revision", revision, ETCD_WRITE, what, NULL, err);
}

static json_object *etcd_cmp_json(const dmh_etcd_cmp *cmp) {
  if ((int)cmp->target < 0 || cmp->target > DMH_ETCD_CMP_LEASE || (int)cmp->result < 0 ||
      cmp->result > DMH_ETCD_NOT_EQUAL)
    return NULL;
  json_object *o = json_object_new_object();
  if (!o || etcd_json_add_bytes(o, "key", cmp->key) < 0) {
    json_object_put(o);
    return NULL;
  }
  json_object_object_add(o, "target", json_object_new_string(etcd_cmp_target[cmp->target]));
  json_object_object_add(o, "result", json_object_new_string(etcd_cmp_result[cmp->result]));
  if (cmp->target == DMH_ETCD_CMP_VALUE) {
    if (etcd_json_add_bytes(o, "value", cmp->value) < 0) {
      json_object_put(o);
      return NULL;
    }
  } else {
    etcd_json_add_int64(o, etcd_cmp_field[cmp->target], cmp->number);
  }
  return o;
}

static int etcd_ops_json(json_object *body, const char *field, const dmh_etcd_op *ops, size_t n) {
  json_object *arr = json_object_new_array();
  if (!arr)
    return -1;
  json_object_object_add(body, field, arr);
  for (size_t i = 0; i < n; i++) {
    json_object *req = etcd_kind_ok(ops[i].kind) ? etcd_op_json(&ops[i]) : NULL;
    json_object *wrap = req ? json_object_new_object() : NULL;
    if (!wrap) {
      json_object_put(req);
      return -1;
    }
    json_object_object_add(wrap, etcd_op_request[ops[i].kind], req);
    json_object_array_add(arr, wrap);
  }
  return 0;
}

static int etcd_txn_parse(json_object *reply, dmh_etcd_txn_result *out) {
  json_object *v = NULL, *hdr = NULL;
  out->succeeded = json_object_object_get_ex(reply, "succeeded", &v) && json_object_get_boolean(v);
  if (json_object_object_get_ex(reply, "header", &hdr))
    out->revision = etcd_json_int64(hdr, "revision");
  json_object *arr = NULL;
  if (!json_object_object_get_ex(reply, "responses", &arr)) /* omitted when no op ran */
    return 0;
  size_t n = json_object_is_type(arr, json_type_array) ? json_object_array_length(arr) : 0;
  out->results = calloc(n ? n : 1, sizeof *out->results);
  if (!out->results)
    return -1;
  for (size_t i = 0; i < n; i++) {
    json_object *one = json_object_array_get_idx(arr, i), *r = NULL;
    int kind = DMH_ETCD_RANGE;
    while (kind <= DMH_ETCD_DELETE && !json_object_object_get_ex(one, etcd_op_response[kind], &r))
      kind++;
    if (!r || etcd_result_parse(r, (dmh_etcd_op_kind)kind, &out->results[i]) < 0)
      return -1;
    out->n_results++;
  }
  return 0;
}

int dmh_etcd_txn(dmh_etcd *c, const dmh_etcd_cmp *cmps, size_t n_cmps, const dmh_etcd_op *success,
                 size_t n_success, const dmh_etcd_op *failure, size_t n_failure,
                 dmh_etcd_txn_result *out, dm_error *err) {
  memset(out, 0, sizeof *out);
  char what[160], key[64] = "";
  if (n_cmps)
    etcd_key_text(cmps[0].key, key, sizeof key);
  else if (n_success)
    etcd_key_text(success[0].key, key, sizeof key);
  snprintf(what, sizeof what, "txn (%zu compares, %zu+%zu ops, first key '%s')", n_cmps, n_success,
           n_failure, key);
  json_object *body = json_object_new_object(), *cmp_arr = json_object_new_array();
  int ok = body && cmp_arr;
  if (ok)
    json_object_object_add(body, "compare", cmp_arr);
  else
    json_object_put(cmp_arr);
  for (size_t i = 0; ok && i < n_cmps; i++) {
    json_object *one = etcd_cmp_json(&cmps[i]);
    ok = one != NULL;
    if (ok)
      json_object_array_add(cmp_arr, one);
  }
  ok = ok && etcd_ops_json(body, "success", success, n_success) == 0 &&
       etcd_ops_json(body, "failure", failure, n_failure) == 0;
  if (!ok) {
    json_object_put(body);
    dm_error_set(err, DM_ERR_INTERNAL, NULL,
                 "%s: a compare or op of an unknown kind, or out of memory", what);
    return -1;
  }
  json_object *reply = NULL;
  int rc = etcd_call(c, "kv/txn", body, ETCD_WRITE, what, &reply, err);
  if (rc == 0 && etcd_txn_parse(reply, out) < 0) {
    dmh_etcd_txn_result_free(out);
    etcd_bad_reply(err, what, c);
    rc = -1;
  }
  json_object_put(reply);
  return rc;
}

void dmh_etcd_txn_result_free(dmh_etcd_txn_result *r) {
  if (!r)
    return;
  for (size_t i = 0; i < r->n_results; i++)
    dmh_etcd_result_free(&r->results[i]);
  free(r->results);
  memset(r, 0, sizeof *r);
}
