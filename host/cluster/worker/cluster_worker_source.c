/* `dmhost worker`: operate-source update through a master (cluster_worker.h, cw_source_*). The
 * master stores the new text at <p>/source/<id> once no task on the source runs; the reconcile
 * (the worker watches <p>/source/) sees the key's mod_revision differ from the one applied and
 * hands the text to the registry's update, as `dmhost serve`'s operate-source update applies a
 * file. The revision applied is kept next to the registry's copy, so a restart takes up nothing
 * it already holds. */
#include "cluster_worker.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmhost/sdk.h"
#include "log.h"
#include "state.h"

/* <state>/sources/<source>/cluster.rev's path under the state dir. */
static void cws_rev_rel(char *rel, size_t size, const char *source) {
  snprintf(rel, size, "sources/%s/cluster.rev", source);
}

void cw_source_applied(cw *w, const char *source, int64_t rev) {
  char rel[DMH_CLUSTER_NAME_MAX + 32];
  cws_rev_rel(rel, sizeof rel, source);
  dm_error e;
  if (cw_rev_save(w, rel, rev, &e) < 0)
    dmh_log(DM_LOG_WARN, "worker", "source %s: cannot keep the revision of its text (%s)", source,
            e.message);
}

bool cw_source_changed(cw *w, const char *source, int64_t rev) {
  if (rev == w->source_rev_refused)
    return false;
  char rel[DMH_CLUSTER_NAME_MAX + 32];
  cws_rev_rel(rel, sizeof rel, source);
  bool present;
  int64_t had = cw_rev_load(w, rel, &present);
  if (!present) { /* bound before the revision was kept: what it holds is the text now */
    cw_source_applied(w, source, rev);
    return false;
  }
  return had != rev;
}

void cw_source_update(cw *w, const char *source, const char *text, int64_t rev) {
  dm_error e;
  char *path = cw_write_config(w, "sources", source, text, &e);
  json_object *resp = json_object_new_object();
  if (!path) {
    cw_log_error(DM_LOG_WARN, "writing the updated source file", &e);
    w->config_missing = true; /* again in a second */
  } else if (dmh_registry_source_update_as(w->reg, path, DMH_CFG_OPERATOR, source, false, resp,
                                           &e) < 0) {
    if (e.code == DM_ERR_SOURCE_UPDATE_BUSY) {
      dmh_log(DM_LOG_INFO, "worker", "source %s: the updated text waits: %s", source, e.message);
      w->config_missing = true; /* again in a second: the master saw its tasks paused */
    } else {
      cw_log_error(DM_LOG_ERROR, "taking the updated source file (not tried again)", &e);
      w->source_rev_refused = rev;
    }
  } else {
    cw_source_applied(w, source, rev);
    atomic_store(&w->dirty, 1);
    dmh_log(DM_LOG_INFO, "worker", "source %s: took the updated text (revision %" PRId64 ")",
            source, rev);
  }
  json_object_put(resp);
  free(path);
}
