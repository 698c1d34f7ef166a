/*
 * The relay's metrics (docs/metrics.md "Relay unit"), under DM's names where DM has them: where the
 * relay writes, the source's end, the size of the events written, the bytes, and the errors and
 * space DM's alert rules watch. Published through the host's metrics service, which adds the
 * task (""), source_id and worker labels.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "dmhost/sdk.h"
#include "relay_internal.h"

void relay_metrics_init(relay_unit *u) {
  static const char *const node[] = {"node"};
  /* DM's write_size buckets: 16 bytes to 8 MiB, doubling */
  double b[20];
  for (int i = 0; i < 20; i++)
    b[i] = 16.0 * (double)(1u << i);
  u->m_file = dm_host_metric_publish(u->host, u->ctx, "dm_relay_binlog_file", DM_METRIC_GAUGE,
                                     "current binlog file index", node, 1, NULL, 0);
  u->m_pos = dm_host_metric_publish(u->host, u->ctx, "dm_relay_binlog_pos", DM_METRIC_GAUGE,
                                    "current binlog pos in current binlog file", node, 1, NULL, 0);
  u->m_write_size =
      dm_host_metric_publish(u->host, u->ctx, "dm_relay_write_size", DM_METRIC_HISTOGRAM,
                             "write relay log size", NULL, 0, b, 20);
  static const char *const node_uuid[] = {"node", "uuid"};
  u->m_subdir = dm_host_metric_publish(u->host, u->ctx, "dm_relay_sub_dir_index", DM_METRIC_GAUGE,
                                       "current relay sub directory index", node_uuid, 2, NULL, 0);
  static const char *const type[] = {"type"};
  u->m_space = dm_host_metric_publish(u->host, u->ctx, "dm_relay_space", DM_METRIC_GAUGE,
                                      "the space of storage for relay component", type, 1, NULL, 0);
  /* counters at 0 from the start: DM's error counters are what its alert rules watch
   * (`changes(...[1m]) > 0`), so the first error must be a change */
  const struct {
    dm_metric **m;
    const char *name, *help;
  } counters[] = {
      {&u->m_bytes, "dmhost_relay_written_bytes_total", "bytes of binlog events the relay wrote"},
      {&u->m_read_err, "dm_relay_read_error_count", "read binlog from master error count"},
      {&u->m_write_err, "dm_relay_write_error_count", "write relay log error count"},
      {&u->m_corrupt, "dm_relay_data_corruption", "counter of relay log data corruption"},
  };
  for (size_t i = 0; i < sizeof counters / sizeof counters[0]; i++) {
    *counters[i].m = dm_host_metric_publish(u->host, u->ctx, counters[i].name, DM_METRIC_COUNTER,
                                            counters[i].help, NULL, 0, NULL, 0);
    dm_host_metric_add(u->host, u->ctx, *counters[i].m, NULL, 0);
  }
}

/* A read of the binlog stream failed (DM counts where its reader's GetEvent fails): a damaged
 * event (a checksum or length that does not hold) is dm_relay_data_corruption, anything else (the
 * connection lost, the source's error) dm_relay_read_error_count. */
void relay_metrics_read_error(relay_unit *u, const dm_error *err) {
  dm_host_metric_add(u->host, u->ctx,
                     err->code == DM_ERR_BINLOG_CORRUPT ? u->m_corrupt : u->m_read_err, NULL, 1);
}

/* Writing the relay log failed (an append, flush, open or relay.meta write: DM_ERR_IO, the code
 * relay_file.c and the relay folder give a failed write): dm_relay_write_error_count. Other
 * failures of the writer's path (what the source sent) are not writes. */
void relay_metrics_write_error(relay_unit *u, const dm_error *err) {
  if (err->code == DM_ERR_IO)
    dm_host_metric_add(u->host, u->ctx, u->m_write_err, NULL, 1);
}

/* dm_relay_sub_dir_index{node,uuid}: the sub-folder being written (uuid: its name, "<server
 * uuid>.<index>"), its index as value; node: the source's host:port, as DM labels it. Set when the
 * relay starts writing into a sub-folder; an earlier sub-folder's series stays, as in DM. */
void relay_metrics_subdir(relay_unit *u, const char *subdir) {
  const char *dot = strrchr(subdir, '.');
  const dm_db_endpoint *ep = u->host->source_db(u->ctx);
  char node[300];
  snprintf(node, sizeof node, "%s:%d", ep && ep->host ? ep->host : "", ep ? ep->port : 0);
  const char *v[] = {node, subdir};
  if (dot)
    dm_host_metric_set(u->host, u->ctx, u->m_subdir, v, strtod(dot + 1, NULL));
}

/* dm_relay_space{type="capacity"|"available"}: the relay folder's file system, bytes (DM's
 * capacity and available: blocks and blocks free to an unprivileged user). */
void relay_metrics_space(relay_unit *u) {
  struct statvfs vfs;
  if (statvfs(u->relay_dir, &vfs) != 0)
    return;
  static const char *const cap[] = {"capacity"}, *const avail[] = {"available"};
  dm_host_metric_set(u->host, u->ctx, u->m_space, cap, (double)vfs.f_blocks * vfs.f_frsize);
  dm_host_metric_set(u->host, u->ctx, u->m_space, avail, (double)vfs.f_bavail * vfs.f_frsize);
}

/* dm_relay_binlog_file / dm_relay_binlog_pos of `node` ("relay": written; "master": the
 * source's end). */
void relay_metrics_position(relay_unit *u, const char *node, const dm_position *p) {
  const char *v[] = {node};
  dm_host_metric_set(u->host, u->ctx, u->m_pos, v, (double)p->pos);
  dm_host_metric_set(u->host, u->ctx, u->m_file, v, (double)dm_binlog_file_index(p->name));
}
