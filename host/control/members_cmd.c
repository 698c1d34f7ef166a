/*
 * DM's cluster commands answered by `dmhost serve` as a cluster of one (issue 23): the daemon is
 * the leader master and its only worker, so a DM script's list-member, transfer-source and
 * offline-member get DM's answers about it, and config master|worker NAME its own settings. The
 * arguments' rules (DM's flags) are shared with the master's handlers (host/cluster/master/).
 */
#include "control.h"

#include <string.h>

#include "dmhost/sdk.h"
#include "worker.h"

int dmh_control_member_args(const dmh_control_cmd *cmd, json_object *args, dmh_member_args *out,
                            dm_error *err) {
  memset(out, 0, sizeof *out);
  if (dmh_control_arg_bool(cmd, args, "master", &out->masters, err) < 0 ||
      dmh_control_arg_bool(cmd, args, "worker", &out->workers, err) < 0 ||
      dmh_control_arg_bool(cmd, args, "leader", &out->leader, err) < 0 ||
      dmh_control_arg_list(cmd, args, "name", out->names, DMH_CONTROL_MAX_LIST, &out->n_names,
                           err) < 0)
    return -1;
  if (!out->masters && !out->workers)
    out->masters = out->workers = true;
  return 0;
}

int dmh_control_offline_args(const dmh_control_cmd *cmd, json_object *args, bool *master,
                             const char **name, dm_error *err) {
  bool worker;
  if (dmh_control_arg_bool(cmd, args, "master", master, err) < 0 ||
      dmh_control_arg_bool(cmd, args, "worker", &worker, err) < 0 ||
      dmh_control_arg_string(cmd, args, "name", true, name, err) < 0)
    return -1;
  if (*master == worker) /* DM's words (dm/ctl/master/offline_member.go) */
    return dmh_control_bad(err, "%s: should specify either --master or --worker (usage: %s)",
                           cmd->name, cmd->usage);
  return 0;
}

/* Whether `name` is one of a's -n names (none given: every name is). */
static bool members_named(const dmh_member_args *a, const char *name) {
  for (size_t i = 0; i < a->n_names; i++)
    if (strcmp(a->names[i], name) == 0)
      return true;
  return a->n_names == 0;
}

/* A group of DM's list-member answer: {"<group>": {"msg": "", "<list>": list}}. */
static void members_group(json_object *members, const char *group, const char *list_name,
                          json_object *list) {
  json_object *in = json_object_new_object(), *g = json_object_new_object();
  json_object_object_add(in, "msg", json_object_new_string(""));
  json_object_object_add(in, list_name, list);
  json_object_object_add(g, group, in);
  json_object_array_add(members, g);
}

/* list-member: the master's answer's shape (master_members.c), the daemon as the leader master at
 * its --listen address and as the worker with its stage and source. */
int dmh_control_list_member(void *ud, const dmh_control_cmd *cmd, json_object *args,
                            json_object *resp, dm_error *err) {
  dmh_registry *r = ud;
  dmh_member_args a;
  if (dmh_control_member_args(cmd, args, &a, err) < 0)
    return -1;
  const char *self = dmh_registry_worker_name(r);
  char addr[DMH_REGISTRY_ADDR_MAX];
  dmh_registry_addr(r, addr, sizeof addr);
  json_object *members = json_object_new_array();
  json_object_object_add(resp, "members", members);
  if (a.masters || a.leader) {
    json_object *l = json_object_new_object(), *g = json_object_new_object();
    json_object_object_add(l, "msg", json_object_new_string(""));
    json_object_object_add(l, "name", json_object_new_string(self));
    json_object_object_add(l, "addr", json_object_new_string(addr));
    json_object_object_add(l, "token", json_object_new_int64(0)); /* no election: no token */
    json_object_object_add(g, "leader", l);
    json_object_array_add(members, g);
  }
  if (a.leader)
    return 0;
  if (a.masters) {
    json_object *list = json_object_new_array();
    if (members_named(&a, self)) {
      json_object *e = json_object_new_object();
      json_object_object_add(e, "name", json_object_new_string(self));
      json_object_object_add(e, "addr", json_object_new_string(addr));
      json_object_object_add(e, "alive", json_object_new_boolean(1));
      json_object_object_add(e, "leader", json_object_new_boolean(1));
      json_object_array_add(list, e);
    }
    members_group(members, "master", "masters", list);
  }
  if (a.workers) {
    json_object *list = json_object_new_array();
    if (members_named(&a, self)) {
      dmh_worker w = dmh_registry_worker(r);
      json_object *e = json_object_new_object();
      json_object_object_add(e, "name", json_object_new_string(self));
      json_object_object_add(e, "addr", json_object_new_string(addr));
      json_object_object_add(e, "stage", json_object_new_string(dmh_worker_stage_name(w.stage)));
      json_object_object_add(e, "source", json_object_new_string(w.source));
      json_object_array_add(list, e);
    }
    members_group(members, "worker", "workers", list);
  }
  return 0;
}

/* transfer-source SOURCE WORKER: the one worker keeps its one source, so only SOURCE being the
 * bound source and WORKER the daemon itself is a transfer, which changes nothing. */
int dmh_control_transfer_source(void *ud, const dmh_control_cmd *cmd, json_object *args,
                                json_object *resp, dm_error *err) {
  dmh_registry *r = ud;
  const char *source, *worker;
  if (dmh_control_arg_string(cmd, args, "source", true, &source, err) < 0 ||
      dmh_control_arg_string(cmd, args, "worker", true, &worker, err) < 0)
    return -1;
  const char *self = dmh_registry_worker_name(r);
  dmh_worker w = dmh_registry_worker(r);
  if (strcmp(worker, self) != 0) {
    dm_error_set(err, DM_ERR_NOT_FOUND, NULL,
                 "transfer-source %s %s: dm-worker with name %s not exists: this `dmhost serve` "
                 "is its cluster's only worker, %s (a cluster of `dmhost master` and `dmhost "
                 "worker` moves sources between workers)",
                 source, worker, worker, self);
    return -1;
  }
  if (strcmp(source, w.source) != 0) {
    dm_error_set(err, DM_ERR_NOT_FOUND, NULL,
                 "transfer-source %s %s: source %s is not bound to this worker (%s); "
                 "operate-source create binds a source",
                 source, worker, source, w.source[0] ? w.source : "no source bound");
    return -1;
  }
  json_object *list = json_object_new_array(), *e = dmh_control_response_new();
  json_object_object_add(e, "source", json_object_new_string(source));
  json_object_object_add(e, "worker", json_object_new_string(self));
  json_object_array_add(list, e);
  json_object_object_add(resp, "sources", list);
  return 0; /* already where it is asked to be: nothing changes */
}

/* offline-member: the daemon is its cluster's only master and worker, and it is running. */
int dmh_control_offline_member(void *ud, const dmh_control_cmd *cmd, json_object *args,
                               json_object *resp, dm_error *err) {
  (void)resp;
  dmh_registry *r = ud;
  bool master;
  const char *name;
  if (dmh_control_offline_args(cmd, args, &master, &name, err) < 0)
    return -1;
  const char *kind = master ? "dm-master" : "dm-worker";
  if (strcmp(name, dmh_registry_worker_name(r)) == 0)
    dm_error_set(err, DM_ERR_CLUSTER_MEMBER_ONLINE, NULL,
                 "%s with name %s is still online: it is this `dmhost serve`, its cluster's only "
                 "member",
                 kind, name);
  else
    dm_error_set(err, DM_ERR_NOT_FOUND, NULL,
                 "%s with name %s not exists: this `dmhost serve` is its cluster's only member, "
                 "%s",
                 kind, name, dmh_registry_worker_name(r));
  return -1;
}

/* ---- config master|worker NAME ---- */

/* config|get-config's arguments, the daemon's and the master's (config task|source is
 * registry_config.c's and master_config.c's) */
int dmh_control_config_args(const dmh_control_cmd *cmd, json_object *args, const char **what,
                            const char **name, dm_error *err) {
  if (dmh_control_arg_string(cmd, args, "op", true, what, err) < 0 ||
      dmh_control_arg_string(cmd, args, "name", true, name, err) < 0)
    return -1;
  static const char *const ops[] = {"task", "source", "master", "worker"};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (strcmp(*what, ops[i]) == 0)
      return 0;
  return dmh_control_bad(err, "%s: \"%s\" is not one of task, source, master, worker (usage: %s)",
                         cmd->name, *what, cmd->usage);
}

int dmh_control_member_unknown(const dmh_control_cmd *cmd, const char *what, const char *name,
                               dm_error *err) {
  /* DM's words (dm/master/server.go GetCfg): "master not found", "worker not found" */
  dm_error_set(err, DM_ERR_NOT_FOUND, NULL,
               "%s not found: %s %s %s: no %s %s in the cluster; list them with `dmctl "
               "list-member --%s`",
               what, cmd->name, what, name, what, name, what);
  return -1;
}

int dmh_control_member_settings(const dmh_control_cmd *cmd, const char *what, const char *name,
                                const char *self, const char *settings, json_object *resp,
                                dm_error *err) {
  if (!self || strcmp(name, self) != 0)
    return dmh_control_member_unknown(cmd, what, name, err);
  if (!settings) {
    dm_error_set(err, DM_ERR_NOT_FOUND, NULL,
                 "%s %s %s: this process keeps no settings to show (it was not started as "
                 "`dmhost serve|master|worker`)",
                 cmd->name, what, name);
    return -1;
  }
  json_object_object_add(resp, "cfg", json_object_new_string(settings));
  /* no settings file: the command line it runs with, one flag a line (docs/control.md) */
  json_object_object_add(resp, "format", json_object_new_string("flags"));
  return 0;
}
