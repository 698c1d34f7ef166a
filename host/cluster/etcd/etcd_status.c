/* The etcd client's view of a member: its ID and its leader (etcd's Maintenance.Status). */
#define DMH_ETCD_INTERNAL
#include "etcd.h"

int dmh_etcd_status(dmh_etcd *c, uint64_t *member_id, uint64_t *leader_id, dm_error *err) {
  json_object *reply = NULL, *hdr = NULL;
  if (etcd_call(c, "maintenance/status", json_object_new_object(), ETCD_READ, "status", &reply,
                err) < 0)
    return -1;
  if (member_id)
    *member_id =
        json_object_object_get_ex(reply, "header", &hdr) ? etcd_json_uint64(hdr, "member_id") : 0;
  if (leader_id)
    *leader_id = etcd_json_uint64(reply, "leader");
  json_object_put(reply);
  return 0;
}
