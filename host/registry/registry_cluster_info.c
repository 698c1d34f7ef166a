/* DM's cluster info of a `dmhost serve` (registry.h, dmh_registry_cluster_info): the id DM's WebUI
 * names the cluster by, made once, and the topology a deployment tool (DM's tiup) stores, kept as
 * <state>/cluster-info.json {"cluster_id", "topology"} as DM keeps them in etcd. */
#include "registry_internal.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "config_openapi.h"
#include "dmhost/sdk.h"

#define CI_FILE "cluster-info.json"

json_object *dmh_cluster_info_new(dm_error *err) {
  uint64_t id = 0;
  /* DM's id is etcd's cluster id, a uint64; json-c's integers are signed: 63 bits, never 0 */
  if (getrandom(&id, sizeof id, 0) != (ssize_t)sizeof id) {
    dm_error_set(err, DM_ERR_STATE, strerror(errno), "cluster info: no random bytes for its id");
    return NULL;
  }
  id = (id >> 1) | 1;
  json_object *o = json_object_new_object();
  json_object_object_add(o, "cluster_id", json_object_new_int64((int64_t)id));
  return o;
}

/* The kept info, or a new one with a random id (not yet written): NULL with *err. */
static json_object *ci_read(const char *path, bool *fresh, dm_error *err) {
  char *text = dmh_state_read_all(path, NULL);
  int e = errno;
  *fresh = !text && e == ENOENT;
  if (*fresh)
    return dmh_cluster_info_new(err);
  json_object *o = text ? json_tokener_parse(text) : NULL, *id = NULL;
  bool read = text != NULL;
  free(text);
  if (!o || !json_object_object_get_ex(o, "cluster_id", &id) ||
      !json_object_is_type(id, json_type_int)) {
    json_object_put(o);
    dm_error_set(err, DM_ERR_STATE, read ? NULL : strerror(e),
                 "cluster info: %s is not the JSON the daemon wrote: remove it (a new id is made)",
                 path);
    return NULL;
  }
  return o;
}

int dmh_registry_cluster_info(dmh_registry *r, json_object *topology, json_object *resp,
                              dm_error *err) {
  char *path = reg_printf("%s/" CI_FILE, r->state_dir);
  if (!path)
    return reg_oom(err, "reading the cluster info");
  pthread_mutex_lock(&r->files_lock);
  bool fresh = false;
  json_object *info = ci_read(path, &fresh, err);
  int rc = info ? 0 : -1;
  if (info && topology)
    json_object_object_add(info, "topology", json_object_get(topology));
  if (info && (fresh || topology)) {
    const char *text = json_object_to_json_string_ext(info, JSON_C_TO_STRING_PRETTY |
                                                                JSON_C_TO_STRING_NOSLASHESCAPE);
    rc = dmh_state_write_file(path, text, strlen(text), err);
  }
  pthread_mutex_unlock(&r->files_lock);
  if (rc == 0) {
    json_object_object_foreach(info, key, val)
        json_object_object_add(resp, key, json_object_get(val));
  }
  json_object_put(info);
  free(path);
  return rc;
}
