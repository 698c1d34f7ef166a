/* The etcd client's leases: grant (also with an ID of the caller's), keepalive, revoke, TTL. */
#define DMH_ETCD_INTERNAL
#include "etcd.h"

#include <inttypes.h>
#include <stdio.h>

#include "dmhost/sdk.h"

int dmh_etcd_lease_grant(dmh_etcd *c, int64_t ttl_s, int64_t id, int64_t *id_out, int64_t *ttl_out,
                         dm_error *err) {
  char what[96];
  snprintf(what, sizeof what, "grant of lease %" PRId64 " (TTL %" PRId64 " s)", id, ttl_s);
  json_object *body = json_object_new_object(), *reply = NULL;
  if (body) {
    etcd_json_add_int64(body, "TTL", ttl_s);
    if (id)
      etcd_json_add_int64(body, "ID", id);
  }
  if (etcd_call(c, "lease/grant", body, ETCD_WRITE, what, &reply, err) < 0)
    return -1;
  int64_t got = etcd_json_int64(reply, "ID");
  if (id_out)
    *id_out = got;
  if (ttl_out)
    *ttl_out = etcd_json_int64(reply, "TTL");
  json_object_put(reply);
  if (!got) {
    dm_error_set(err, DM_ERR_ETCD_REPLY, NULL, "%s at etcd %s: the answer has no lease ID", what,
                 dmh_etcd_endpoint(c));
    return -1;
  }
  return 0;
}

int dmh_etcd_lease_keepalive(dmh_etcd *c, int64_t id, int64_t *ttl_out, dm_error *err) {
  char what[96];
  snprintf(what, sizeof what, "keepalive of lease %" PRId64, id);
  json_object *reply = NULL;
  /* A stream method: the gateway answers {"result": LeaseKeepAliveResponse} or {"error": ...}. */
  if (etcd_call_int64(c, "lease/keepalive", "ID", id, ETCD_READ, what, &reply, err) < 0)
    return -1;
  json_object *res = NULL, *e = NULL;
  int rc = 0;
  if (json_object_object_get_ex(reply, "error", &e) && json_object_is_type(e, json_type_object)) {
    etcd_error_from_reply(e, 200, dmh_etcd_endpoint(c), what, err);
    rc = -1;
  } else if (!json_object_object_get_ex(reply, "result", &res)) {
    dm_error_set(err, DM_ERR_ETCD_REPLY, NULL, "%s at etcd %s: the answer has no result", what,
                 dmh_etcd_endpoint(c));
    rc = -1;
  } else {
    int64_t ttl = etcd_json_int64(res, "TTL");
    if (ttl_out)
      *ttl_out = ttl;
    if (ttl <= 0) { /* etcd's answer for a lease it does not have: TTL 0, omitted */
      dm_error_set(err, DM_ERR_ETCD_LEASE_NOT_FOUND, "etcdserver: requested lease not found",
                   "%s at etcd %s: the lease expired or was revoked", what, dmh_etcd_endpoint(c));
      rc = -1;
    }
  }
  json_object_put(reply);
  return rc;
}

int dmh_etcd_lease_revoke(dmh_etcd *c, int64_t id, dm_error *err) {
  char what[96];
  snprintf(what, sizeof what, "revoke of lease %" PRId64, id);
  return etcd_call_int64(c, "lease/revoke", "ID", id, ETCD_WRITE, what, NULL, err);
}

int dmh_etcd_lease_ttl(dmh_etcd *c, int64_t id, int64_t *ttl_out, int64_t *granted_out,
                       dm_error *err) {
  char what[96];
  snprintf(what, sizeof what, "time-to-live of lease %" PRId64, id);
  json_object *reply = NULL;
  if (etcd_call_int64(c, "lease/timetolive", "ID", id, ETCD_READ, what, &reply, err) < 0)
    return -1;
  if (ttl_out)
    *ttl_out = etcd_json_int64(reply, "TTL"); /* -1: no such lease */
  if (granted_out)
    *granted_out = etcd_json_int64(reply, "grantedTTL");
  json_object_put(reply);
  return 0;
}
